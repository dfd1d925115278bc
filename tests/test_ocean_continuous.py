"""Box actions in Ocean and the trainer's Gaussian path: puffer_drone and puffer_rocket_lander, what their
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
