"""Box actions in Ocean and the trainer's Gaussian path: puffer_drone, puffer_rocket_lander and puffer_boids, what their
rewards and terminals mean, their scripted pilots against random actions, and the Gaussian head pinned
against torch.distributions with the trainer clipping what it sends to the Box. The contract tests every
env passes (spaces, determinism, garbage actions, rendering, logs) are in tests/test_ocean.py."""
import itertools

import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferlib
from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.models import Default, make_policy
from pufferlib.distributions import sample_logits
from pufferlib.ocean import scripted_policies, tools
from pufferlib.pufferenv import APIUsageError
from pufferlib.trainer import Trainer

import ocean_play
from small_run import SMALL


def make(name, num_envs=4, seed=0, **options):
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **options)


def run(env, policy, steps, seed=1):
    """Episode-weighted means of perf and score, and the episodes counted, under policy(env, obs)."""
    logs = ocean_play.episode_logs(env, lambda obs, t: policy(env, obs), steps, seed)
    return ocean_play.episode_means(logs, ('perf', 'score'))


def random_policy(env, obs):
    return tools.random_actions(env.single_action_space, env.num_agents, 1, seed=next(SEEDS))[0]


SEEDS = itertools.count()


# ---------------------------------------------------------------------------------------------
# The Box form of the spec, through a real env
# ---------------------------------------------------------------------------------------------

def test_box_spaces_buffers_and_the_discrete_option():
    drone = make('drone', num_envs=2, num_drones=3)
    assert drone.single_action_space == spaces.Box(-1, 1, (4,), np.float32)
    assert drone.actions.dtype == np.float32 and drone.actions.shape == (6, 4)
    assert drone.single_observation_space.shape == (16,) and drone.num_agents == 6
    lander = make('rocket_lander')
    assert lander.single_action_space == spaces.Box(-1, 1, (2,), np.float32) and lander.actions.dtype == np.float32
    buttons = make('rocket_lander', discrete=True)
    assert buttons.single_action_space == spaces.Discrete(4) and buttons.actions.dtype == np.int32
    assert buttons._binding.vec_layout(buttons._handle)[2] == 1 and lander._binding.vec_layout(lander._handle)[2] == 2


def test_box_actions_past_the_bounds_step_like_the_bounds_and_nan_is_refused():
    """What step() takes past the bounds the C env clamps (a Gaussian policy's samples are unbounded); NaN
    means a diverged policy and gets one clear error, with nothing written to the buffer."""
    a, b = make('drone', seed=3), make('drone', seed=3)
    rng = np.random.default_rng(0)
    for _ in range(50):
        wild = rng.normal(0, 3, a.actions.shape).astype(np.float32)
        for x, y in zip(a.step(wild)[:4], b.step(np.clip(wild, -1, 1))[:4]):
            np.testing.assert_array_equal(x, y)
    before = a.actions.copy()
    with pytest.raises(APIUsageError, match='NaN or inf at agent rows \\[2\\]'):
        a.step(np.where(np.arange(a.num_agents)[:, None] == 2, np.inf, np.zeros(a.actions.shape)))
    np.testing.assert_array_equal(a.actions, before)


# ---------------------------------------------------------------------------------------------
# puffer_drone
# ---------------------------------------------------------------------------------------------

def test_drone_zero_action_hovers_full_thrust_climbs_and_rotors_roll_the_body():
    env = make('drone', num_envs=1, num_drones=3, max_steps=1000)
    obs, _ = env.reset(seed=0)
    start = obs[:, 3:6].copy()
    actions = np.zeros((3, 4), np.float32)
    actions[1] = 1.0              # every rotor at full thrust: twice the weight
    actions[2] = [0, 0.2, 0, -0.2]  # rotor +y above rotor -y: a roll about +x
    for _ in range(25):
        obs, rewards, terminals, _, _ = env.step(actions)
    assert not terminals.any()
    np.testing.assert_allclose(obs[0, 3:6], start[0], atol=1e-4)   # hovering: it has not moved
    np.testing.assert_allclose(obs[0, 10:13], 0, atol=1e-4)
    assert obs[1, 12] > 0.2 and obs[1, 5] > start[1, 2]             # climbing
    assert obs[2, 13] > 0.05 and abs(obs[2, 14]) < 1e-3             # spinning about x only


def test_drone_leaving_the_cube_costs_one_and_ends_the_episode():
    env = make('drone', num_envs=1, num_drones=2)
    env.reset(seed=0)
    off = np.full((2, 4), -1.0, np.float32)  # rotors off: each falls through the floor
    ended = np.zeros(2, bool)
    for _ in range(200):
        _, rewards, terminals, truncations, _ = env.step(off)
        assert (rewards[terminals] == -1).all() and not truncations.any()
        assert (rewards[~terminals] < 1).all()  # progress while falling past a target at best, never a target
        ended |= terminals
    assert ended.all(), 'a falling drone never left the cube'
    assert env.log()['perf'] == 0


def test_drone_pilot_reaches_targets_random_does_not():
    pilot = scripted_policies('puffer_drone')['pilot']
    flown = run(make('drone', num_envs=8), pilot, 3000)
    assert flown['perf'] >= 0.9, flown
    randomly = run(make('drone', num_envs=8), random_policy, 1000)
    assert randomly['perf'] < 0.1 and flown['score'] > 4 * max(randomly['score'], 0.1)


def test_drone_hover_task_holds_the_point():
    held = run(make('drone', num_envs=8, task=0, max_steps=500), scripted_policies('puffer_drone')['pilot'], 1500)
    assert held['perf'] > 0.6, held


# ---------------------------------------------------------------------------------------------
# puffer_rocket_lander
# ---------------------------------------------------------------------------------------------

def test_rocket_lander_free_fall_crashes_and_half_throttle_hovers():
    env = make('rocket_lander', num_envs=2)
    obs, _ = env.reset(seed=0)
    height = obs[:, 1].copy()
    actions = np.array([[-1.0, 0.0], [0.0, 0.0]], np.float32)  # engine off; half throttle
    for _ in range(200):
        obs, rewards, terminals, _, _ = env.step(actions)
        if terminals[0]:
            assert rewards[0] < 0  # a crash, not a landing
            break
    else:
        pytest.fail('a falling rocket never hit the ground')
    assert not terminals[1] and obs[1, 1] < height[1]  # half throttle cancels gravity, not the fall it started with
    assert obs[1, 6] < 1.0  # and burns fuel


def test_rocket_lander_out_of_fuel_means_no_thrust():
    env = make('rocket_lander', num_envs=1, fuel=0.1, max_steps=1000)
    env.reset(seed=0)
    full = np.array([[1.0, 0.0]], np.float32)
    fuel = []
    for _ in range(40):  # 0.1 tanks last 1.5 s = 30 steps at full throttle
        obs, *_ = env.step(full)
        fuel.append(obs[0, 6])
    assert fuel[-1] == 0.0 and np.all(np.diff(fuel[:25]) < 0)
    before = obs[0, 3]
    obs, *_ = env.step(full)
    assert obs[0, 3] < before  # falling again: the engine is dry


@pytest.mark.parametrize('discrete', [False, True])
def test_rocket_lander_autopilot_lands_random_does_not(discrete):
    autopilot = scripted_policies('puffer_rocket_lander')['autopilot']
    flown = run(make('rocket_lander', num_envs=32, discrete=discrete), autopilot, 1500)
    assert flown['perf'] >= (0.9 if not discrete else 0.5), flown
    randomly = run(make('rocket_lander', num_envs=32, discrete=discrete), random_policy, 1500)
    assert randomly['perf'] < 0.1, randomly


# ---------------------------------------------------------------------------------------------
# The Gaussian head and the trainer's continuous path
# ---------------------------------------------------------------------------------------------

def test_gaussian_head_logprob_and_entropy_match_torch_distributions():
    env = make('drone', num_envs=1, num_drones=2)
    torch.manual_seed(0)
    model = Default(env, hidden_size=16)
    with torch.no_grad():
        model.log_std.copy_(torch.tensor([-0.5, 0.0, 0.3, 1.0]))
    obs = torch.randn(5, 16)
    dist, _ = model(obs)
    mean = model.actor(model.encode_observations(obs))
    reference = torch.distributions.Independent(torch.distributions.Normal(mean, model.log_std.exp()), 1)
    action = torch.randn(5, 4) * 3  # well past the Box: the logprob is the sample's, never the clipped value's
    _, logprob, entropy = sample_logits(dist, action)
    torch.testing.assert_close(logprob, reference.log_prob(action))
    torch.testing.assert_close(entropy, reference.entropy())
    # by hand: sum over the 4 dims of log N(a; mu, sigma) and of 0.5 + 0.5 log(2 pi e sigma^2) - 0.5
    sigma = model.log_std.exp()
    by_hand = (-((action - mean) ** 2) / (2 * sigma ** 2) - torch.log(sigma) - 0.5 * np.log(2 * np.pi)).sum(-1)
    torch.testing.assert_close(logprob, by_hand)
    torch.testing.assert_close(entropy, (0.5 + 0.5 * np.log(2 * np.pi) + torch.log(sigma)).sum().expand(5))


def test_trainer_clips_what_it_sends_and_keeps_the_sample():
    config = configuration.load('puffer_drone', [*SMALL, '--env.num-drones', '1', '--vec.backend', 'Serial',
                                                 '--train.total-timesteps', '1024',
                                                 '--train.device', 'cpu'])
    vecenv = training.make_vecenv('puffer_drone', config)
    try:
        policy = make_policy(vecenv, config)
        with torch.no_grad():
            policy.log_std.fill_(1.5)  # std 4.5: most samples fall outside [-1, 1]
        trainer = Trainer(config, vecenv, policy)
        sent = []
        send = vecenv.send

        def spy(actions, *args, **kwargs):
            sent.append(np.array(actions))
            return send(actions, *args, **kwargs)

        vecenv.send = spy
        trainer.rollout()
        sent_all = np.concatenate(sent)
        assert sent_all.dtype == np.float32 and sent_all.min() == -1 and sent_all.max() == 1
        kept = trainer.actions.flatten(0, 1)
        assert kept.abs().max() > 3  # the rollout holds the raw samples, whose logprobs the update needs
        trainer.update()
    finally:
        vecenv.close()


# ---------------------------------------------------------------------------------------------
# puffer_boids
# ---------------------------------------------------------------------------------------------

def boids_reward_from_obs(obs, visual=8.0, guard=2.0, cohesion=1.0, alignment=1.0, separation=1.0):
    """The reward each boid should get, from the observation the same step returns: the neighbours' offsets
    are over visual_range (unshortened inside it) and their relative velocities over 2 max_speed, so the
    three penalties are plain norms of means over the neighbours in sight; a boid alone pays for the distance
    to its nearest (observed shortened to 3 visual ranges, as the reward caps it)."""
    k = (obs.shape[1] - 6) // 4
    near = obs[:, 6:].reshape(-1, k, 4).astype(np.float64)
    dist = np.linalg.norm(near[:, :, :2], axis=2) * visual
    seen = dist < visual
    count = np.maximum(seen.sum(1), 1)[:, None]
    centre = np.linalg.norm((near[:, :, :2] * seen[:, :, None]).sum(1) / count, axis=1)
    mismatch = np.linalg.norm((near[:, :, 2:] * seen[:, :, None]).sum(1) / count, axis=1)
    crowding = np.where(dist[:, 0] < guard, 1 - dist[:, 0] / guard, 0.0)
    reward = -(cohesion * centre + alignment * mismatch + separation * crowding)
    # the flock fields hold the same two means
    np.testing.assert_allclose(np.linalg.norm(obs[:, 2:4], axis=1), np.where(seen[:, 0], centre, 0), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(obs[:, 4:6], axis=1), np.where(seen[:, 0], mismatch, 0), atol=1e-5)
    alone = -(cohesion * np.minimum(dist[:, 0] / visual, 3.0) + alignment)
    return np.where(seen[:, 0], reward, alone)


@pytest.mark.parametrize('weights', [{}, {'cohesion': 0.5, 'alignment': 2.0, 'separation': 3.0}])
def test_boids_reward_is_the_three_rules_over_the_neighbours_in_sight(weights):
    env = make('boids', num_envs=2, seed=5, num_boids=24, world_size=64.0, max_steps=1000, **weights)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(200):
        obs, reward, terminals, truncations, _ = env.step(rng.uniform(-1, 1, env.actions.shape).astype(np.float32))
        np.testing.assert_allclose(reward, boids_reward_from_obs(obs, **weights), atol=1e-4)
        rewards.append(reward)
        assert not terminals.any() and not truncations.any()
    rewards = np.concatenate(rewards)
    # every case shows up: boids alone (paying more than the cohesion and alignment weights), and boids in
    # sight of others
    assert (rewards < -(weights.get('cohesion', 1.0) + weights.get('alignment', 1.0))).any()
    assert (rewards > -0.5).any()


def test_boids_speed_stays_between_the_limits_and_the_world_wraps():
    env = make('boids', num_envs=1, seed=2, num_boids=8, min_speed=0.5, max_speed=1.5, max_accel=1.0)
    env.reset(seed=2)
    for action in (1.0, -1.0, 0.0):  # full thrust one way, then braking through zero, then coasting
        for _ in range(30):
            obs = env.step(np.full(env.actions.shape, action, np.float32))[0]
            speed = np.linalg.norm(obs[:, :2], axis=1) * 1.5
            assert np.all(speed <= 1.5 + 1e-5) and np.all(speed >= 0.5 - 1e-5)
    # offsets take the short way round the torus, so none is past the observation's bound
    near = obs[:, 6:].reshape(8, -1, 4)
    assert np.abs(near[:, :, :2]).max() <= 3.0


def test_boids_episodes_end_together_at_max_steps_and_log_every_boid():
    env = make('boids', num_envs=3, num_boids=5, neighbors=2, max_steps=40)
    env.reset(seed=0)
    zeros = np.zeros(env.actions.shape, np.float32)
    for t in range(1, 81):
        _, _, terminals, truncations, _ = env.step(zeros)
        assert not terminals.any()
        assert truncations.all() == (t % 40 == 0) and truncations.any() == (t % 40 == 0)
        if t % 40 == 0:
            log = env.log()
            assert log['n'] == 15 and log['episode_length'] == 40


def test_boids_scripted_flock_holds_together_and_random_steering_does_not():
    flock = run(make('boids', num_envs=4, autopilot=True), random_policy, 1100)
    scattered = run(make('boids', num_envs=4), random_policy, 1100)
    print(f'boids perf: scripted {flock["perf"]:.3f}, random {scattered["perf"]:.3f}')
    assert flock['perf'] > 0.9 and scattered['perf'] < 0.3


def test_boids_refuses_nan_steering_and_bad_options_with_one_error():
    env = make('boids', num_envs=1, num_boids=4, neighbors=3)
    assert env.single_action_space == spaces.Box(-1, 1, (2,), np.float32)
    assert env.single_observation_space.shape == (6 + 4 * 3,) and env.num_agents == 4
    actions = np.zeros(env.actions.shape, np.float32)
    actions[1, 0] = np.nan
    with pytest.raises(APIUsageError, match='NaN or inf at agent rows \\[1\\]'):
        env.step(actions)
    with pytest.raises(pufferlib.PufferError, match='neighbors must leave that many other boids'):
        make('boids', num_boids=4, neighbors=4)
    with pytest.raises(pufferlib.PufferError, match='protected_range must be below visual_range'):
        make('boids', protected_range=9.0)
    with pytest.raises(pufferlib.PufferError, match='min_speed must not exceed max_speed'):
        make('boids', min_speed=2.0)
    with pytest.raises(pufferlib.PufferError, match='num_boids=1 is outside'):
        make('boids', num_boids=1)
