"""Ocean: the C env API, its binding, and every first-party env.

Nothing here times anything (speed lives in scripts/lab/bench_ocean.py). The same file runs against the
sanitizer build: scripts/sanitize_ocean.sh builds AddressSanitizer + UBSan extensions into
build/sanitize and runs this file with PUFFER_OCEAN_LIB pointing there; the `sanitize` tests run
only then.
"""
import os
import re

import numpy as np
import pytest
from gymnasium import spaces

import pufferlib
from pufferlib import ocean
from pufferlib.ocean import tools
from pufferlib.ocean.breakout import tracker as breakout_tracker
from pufferlib.ocean.multiagent import own_id as multiagent_own_id
from pufferlib.ocean.pong import tracker as pong_tracker
from pufferlib.ocean.squared import greedy as squared_greedy
from pufferlib.pufferenv import APIUsageError, EnvError, MixedSpace

ALL = list(ocean.ENVS) + list(ocean.TEMPLATES)
# Envs following ocean/seats.h: with two_player on, only the row to move is live on each step.
TURN_BASED = ('kuhn', 'leduc', 'connect4')
SANITIZED = bool(os.environ.get('PUFFER_OCEAN_LIB'))

# Small but non-trivial configs where the defaults would make a test slow.
SMALL = {'snake': dict(width=24, height=16, num_snakes=4, num_food=8, max_length=12, max_steps=300),
         'maze': dict(width=11, height=9, max_steps=200),
         'pong': dict(max_score=3),
         'breakout': dict(lives=2)}


def make(name, num_envs=2, seed=0, **kwargs):
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **{**SMALL.get(name, {}), **kwargs})


def rollout(env, actions):
    """Step through a [T, rows, ...] array of actions; return copies of everything observed."""
    obs, rew, term, trunc = [env.observations.copy()], [], [], []
    for a in actions:
        o, r, t, tr, _ = env.step(a)
        obs.append(o.copy()), rew.append(r.copy()), term.append(t.copy()), trunc.append(tr.copy())
    return np.array(obs), np.array(rew), np.array(term), np.array(trunc)


def run_policy(env, policy, steps):
    """Total reward and the list of finished-episode logs under `policy(env, obs)`."""
    obs, _ = env.reset(seed=1)
    total, logs = 0.0, []
    for _ in range(steps):
        obs, rewards, _, _, infos = env.step(policy(env, obs))
        total += float(rewards.sum())
        logs.extend(infos)
    log = env.log()
    if log:
        logs.append(log)
    return total, logs


def episode_mean(logs, key):
    n = sum(log['n'] for log in logs)
    return sum(log[key] * log['n'] for log in logs) / n


# ---------------------------------------------------------------------------------------------
# Names, construction and errors
# ---------------------------------------------------------------------------------------------

def test_env_names_are_listed_and_dispatched():
    names = ocean.env_names()
    assert names == [f'puffer_{n}' for n in ocean.ENVS]
    for required in ('squared', 'password', 'stochastic', 'memory', 'multiagent', 'spaces', 'bandit',
                     'pong', 'breakout', 'snake', 'connect4', 'maze'):
        assert f'puffer_{required}' in names
    assert set(names) <= set(pufferlib.env_names())
    env = pufferlib.make('puffer_pong', seed=0)
    assert isinstance(env, pufferlib.PufferEnv) and env.num_agents == 1
    env.close()


def test_unknown_name_lists_close_matches():
    with pytest.raises(APIUsageError, match='puffer_pong'):
        pufferlib.make('puffer_pongg')
    with pytest.raises(APIUsageError, match='Ocean envs'):
        ocean.make('puffer_zzzzzz')


def test_bad_kwargs_name_the_key():
    with pytest.raises(APIUsageError, match="unknown option 'max_scor'.*max_score"):
        make('pong', max_scor=3)
    with pytest.raises(APIUsageError, match='max_score must be int'):
        make('pong', max_score=2.5)
    with pytest.raises(APIUsageError, match='size=1 is outside'):
        make('squared', size=1)
    with pytest.raises(APIUsageError, match='must be odd'):
        make('maze', width=10)
    with pytest.raises(APIUsageError, match='half the arena'):
        make('snake', width=8, height=8, num_snakes=8, max_length=8)
    with pytest.raises(APIUsageError, match='num_envs'):
        make('squared', num_envs=0)
    with pytest.raises(APIUsageError, match='seed'):
        make('squared', seed='abc')


@pytest.mark.parametrize('name', ALL)
def test_c_and_python_layouts_agree(name):
    env = make(name, num_envs=3)
    agents, obs_size, act_size, itemsize = env._binding.vec_layout(env._handle)
    assert agents == env.agents_per_env and env.num_agents == 3 * agents
    assert obs_size == int(np.prod(env.single_observation_space.shape))
    assert itemsize == env.single_observation_space.dtype.itemsize
    assert env.observations.shape == (env.num_agents, *env.single_observation_space.shape)
    assert env.actions.shape == (env.num_agents, *env.single_action_space.shape)
    box = isinstance(env.single_action_space, (spaces.Box, MixedSpace))  # float32 rows, mixed ones included
    assert env.actions.dtype == (np.float32 if box else np.int32) and env.rewards.dtype == np.float32
    assert act_size == int(np.prod(env.single_action_space.shape, dtype=int))
    # every row is a live agent, except in turn-based envs, where only the row to act is (ocean/seats.h)
    live = 1 if env.config.get('two_player') and name in TURN_BASED else agents
    assert (env.masks.reshape(3, agents).sum(1) == live).all()
    env.close()


def test_wrong_buffer_is_rejected_before_any_write():
    buf = pufferlib.make_buffers(spaces.Box(0, 2, (5,), np.uint8), spaces.Discrete(5), 1)  # squared needs 121
    with pytest.raises(APIUsageError):
        pufferlib.make('puffer_squared', buf=buf)


@pytest.mark.parametrize('name', ALL)
def test_wrong_action_shape_or_dtype_raises(name):
    env = make(name, num_envs=2)
    with pytest.raises(APIUsageError, match='shape'):
        env.step(np.zeros((env.num_agents + 1, *env.actions.shape[1:]), dtype=np.int32))
    if isinstance(env.single_action_space, (spaces.Box, MixedSpace)):
        with pytest.raises(APIUsageError, match='NaN or inf at agent rows \\[1\\]'):
            env.step(np.where(np.arange(env.num_agents)[:, None] == 1, np.nan, np.zeros(env.actions.shape, np.float32)))
    else:
        with pytest.raises(APIUsageError, match='integers'):
            env.step(np.zeros(env.actions.shape, dtype=np.float32))
    env.step(np.zeros(env.actions.shape, dtype=np.int64))  # any integer dtype is fine (a Box casts it)
    env.close()


def test_closed_env_raises_clearly():
    env = make('squared')
    env.close()
    env.close()  # idempotent
    for use in (lambda: env.step(env.actions), env.reset, env.render, env.log):
        with pytest.raises(EnvError, match='puffer_squared is closed'):
            use()


# ---------------------------------------------------------------------------------------------
# Contract properties of every env
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ALL)
def test_deterministic_under_a_seed(name):
    assert_deterministic(lambda seed: make(name, num_envs=3, seed=seed), 3000, other_seed_differs=False)


def assert_deterministic(make_env, steps, other_seed_differs=True):
    """`make_env(seed)` builds an env. Two envs of seed 7 follow one rollout; reset(seed=7) replays it
    from scratch; an env of seed 8 (when `other_seed_differs`) departs from it somewhere. Byte for byte:
    -0.0 and +0.0 compare equal as numbers, yet a replay that flips a sign bit carried state across the
    reset (and a hash of the rows, as a replay check would take, differs)."""
    a, b = make_env(7), make_env(7)
    actions = tools.random_actions(a.single_action_space, a.num_agents, steps, seed=3)
    first = rollout(a, actions)
    for i, (x, y) in enumerate(zip(first, rollout(b, actions))):
        assert x.tobytes() == y.tobytes(), f'two envs of one seed differ at output {i}'
    a.reset(seed=7)
    for i, (x, y) in enumerate(zip(first, rollout(a, actions))):
        assert x.tobytes() == y.tobytes(), f'reset(seed=7) did not replay the rollout byte for byte (output {i})'
    if other_seed_differs:
        c = make_env(8)
        assert any(not np.array_equal(x, y) for x, y in zip(first, rollout(c, actions)))
        c.close()
    a.close(), b.close()


@pytest.mark.parametrize('name', ['squared', 'memory', 'spaces', 'bandit', 'cartpole', 'pong', 'breakout',
                                  'snake', 'connect4', 'maze', 'kuhn', 'leduc'])
def test_different_seeds_differ(name):
    a, b = make(name, num_envs=2, seed=1), make(name, num_envs=2, seed=2)
    actions = tools.random_actions(a.single_action_space, a.num_agents, 500, seed=3)
    assert any(not np.array_equal(x, y) for x, y in zip(rollout(a, actions), rollout(b, actions)))


@pytest.mark.parametrize('name', ALL)
def test_observations_stay_in_space_for_100k_random_steps(name):
    num_envs = 8
    env = make(name, num_envs=num_envs, seed=11)
    space = env.single_observation_space
    low, high = space.low, space.high
    rows = env.num_agents
    calls = 100_000 // num_envs
    pool = tools.random_actions(env.single_action_space, rows, 256, seed=5)
    obs, _ = env.reset(seed=11)
    assert (obs >= low).all() and (obs <= high).all()
    episodes = 0
    for t in range(calls):
        obs, rewards, terminals, truncations, _ = env.step(pool[t % 256])
        if not ((obs >= low).all() and (obs <= high).all()):
            bad = np.argwhere((obs < low) | (obs > high))[0]
            pytest.fail(f'step {t}: obs{list(bad)} = {obs[tuple(bad)]} outside [{low[tuple(bad[1:])]}, '
                        f'{high[tuple(bad[1:])]}]')
        assert np.isfinite(rewards).all()
        assert not (terminals & truncations).any()
        episodes += int(terminals.sum() + truncations.sum())
    assert episodes > 0, 'no episode ended in 100k steps'
    env.close()


def _clip(actions, space):
    if isinstance(space, MixedSpace):  # ocean_choice: the integer part of a choice in [0, n), NaN as 0
        picks = actions[..., :space.split]
        picks = np.where(picks >= 0, np.minimum(np.trunc(np.nan_to_num(picks, nan=0.0)), space.discrete.nvec - 1), 0)
        box = _clip(actions[..., space.split:], space.box)
        return np.concatenate([picks.astype(np.float32), box], axis=-1)
    if isinstance(space, spaces.Box):  # the C env reads NaN as the middle of the range (ocean_clampf)
        middle = ((space.low + space.high) / 2).astype(np.float32)
        return np.where(np.isnan(actions), middle, np.clip(actions, space.low, space.high)).astype(np.float32)
    high = (space.n if isinstance(space, spaces.Discrete) else space.nvec) - 1
    return np.clip(actions, 0, high).astype(np.int32)


def rollout_raw(env, actions):
    """Like rollout, but each action array is written straight into the env's buffer, unchecked, as
    anything sharing that memory could do; step() then takes it as it is."""
    obs, rew, term, trunc = [env.observations.copy()], [], [], []
    for a in actions:
        env.actions[...] = a
        o, r, t, tr, _ = env.step(env.actions)
        obs.append(o.copy()), rew.append(r.copy()), term.append(t.copy()), trunc.append(tr.copy())
    return np.array(obs), np.array(rew), np.array(term), np.array(trunc)


@pytest.mark.parametrize('name', ALL)
def test_out_of_range_actions_are_clamped(name):
    """Garbage in the action buffer behaves exactly like the nearest valid action: clamped by the C
    env, never an index. (step() itself refuses such actions: see the next test.) The one exception is -1 on
    an env whose spec says `builtin = true`: its built-in player moves for the row (test_connect4_builtin_...)."""
    wild, tame = make(name, num_envs=2, seed=5), make(name, num_envs=2, seed=5)
    rng = np.random.default_rng(0)
    shape = (2000, *wild.actions.shape)
    if isinstance(wild.single_action_space, (spaces.Box, MixedSpace)):
        extremes = np.array([-np.inf, -3e38, -1e6, -1.0001, np.nan, 0, 1.0001, 7, 3e38, np.inf])
        actions = np.where(rng.random(shape) < 0.5, rng.choice(extremes, size=shape),
                           rng.uniform(-2, 2, size=shape)).astype(np.float32)
        for x, y in zip(rollout_raw(wild, actions), rollout(tame, _clip(actions, tame.single_action_space))):
            np.testing.assert_array_equal(x, y)
        return
    extremes = np.array([np.iinfo(np.int32).min, -1_000_000, -1, 0, 1, 2, 3, 7, 64, np.iinfo(np.int32).max])
    actions = np.where(rng.random(shape) < 0.5, rng.choice(extremes, size=shape),
                       rng.integers(-5, 12, size=shape)).astype(np.int32)
    if wild.spec.action_builtin:
        actions[actions == -1] = -2
    for x, y in zip(rollout_raw(wild, actions), rollout(tame, _clip(actions, tame.single_action_space))):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize('bad', [-1, 2**32, 2**31])
def test_step_refuses_out_of_range_actions(bad):
    env = make('cartpole', num_envs=2, seed=5)
    with pytest.raises(APIUsageError, match=f'action {bad} for agent row 1 is outside Discrete'):
        env.step(np.array([0, bad], np.int64))
    assert (env.actions == 0).all()  # nothing reached the buffer, let alone wrapped to 0 and stepped


@pytest.mark.parametrize('name', ALL)
def test_render_frame_and_text(name):
    env = make(name, num_envs=2)
    h, w = env._binding.vec_frame_shape(env._handle)
    for _ in range(5):
        env.step(tools.random_actions(env.single_action_space, env.num_agents, 1)[0])
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (h, w, 3) and h > 0 and w > 0
    assert frame.any(), 'frame is all black'
    assert env.render(index=1).shape == frame.shape
    text = env.render_text()
    assert isinstance(text, str) and text.strip()
    with pytest.raises(APIUsageError, match=r'index must be an int in \[0, 2\)'):
        env.render(index=2)
    env.close()


@pytest.mark.parametrize('name', ALL)
def test_logs_reach_infos(name):
    env = make(name, num_envs=4)
    pool = tools.random_actions(env.single_action_space, env.num_agents, 64)
    infos = []
    for t in range(4096):
        infos.extend(env.step(pool[t % 64])[4])
    assert infos, 'no episode statistics in 4096 steps'
    own = [field for field, _ in ocean.spec_of(name).log_fields]  # the spec's [[log]] fields, before n
    for info in infos:
        assert list(info) == ['episode_return', 'episode_length', 'score', 'perf', *own, 'n']
        assert info['n'] >= 1 and info['episode_length'] >= 1 and 0 <= info['perf'] <= 1
    env.close()


def test_same_step_autoreset():
    """The step that ends an episode reports its reward and the next episode's first observation."""
    env = make('template', num_envs=1, length=4, max_steps=50)
    env.reset(seed=0)
    for _ in range(10):
        obs, rewards, terminals, _, _ = env.step(np.array([1]))
        if terminals[0]:
            assert rewards[0] == 1.0
            assert obs[0, 3] == 2 and (obs[0, :3] == 1).sum() == 1  # fresh start, goal not reached
            return
    pytest.fail('never reached the goal walking right')


def test_buffers_are_written_in_place():
    """The C side writes into exactly the arrays it was given (as with shared memory)."""
    buf = pufferlib.make_buffers(spaces.Box(0, 2, (121,), np.uint8), spaces.Discrete(5), 4)
    env = pufferlib.make('puffer_squared', buf=buf, num_envs=4, seed=0)
    assert env.observations is buf.observations
    buf.observations[...] = 9
    env.reset(seed=0)
    assert (buf.observations <= 2).all()
    buf.actions[...] = 2
    env.step(buf.actions)
    assert (buf.observations[:, 6 * 11 + 5] == 1).all()  # every agent moved down from the centre


# ---------------------------------------------------------------------------------------------
# Vector backends
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
@pytest.mark.parametrize('name', ['squared', 'snake', 'spaces'])
def test_vector_backends_match_a_single_env(backend, name):
    vector = pytest.importorskip('pufferlib.vector')
    kwargs = {'num_envs': 2, **SMALL.get(name, {})}
    vecenv = vector.make(f'puffer_{name}', backend=backend, num_envs=2, num_workers=2, seed=3, env_kwargs=kwargs)
    try:
        obs, _ = vecenv.reset(seed=3)
        rows = obs.shape[0]
        probe = make(name, num_envs=2)
        assert rows == 2 * probe.num_agents
        actions = tools.random_actions(probe.single_action_space, rows, 200, seed=1)
        # env k of the vector is seeded seed + k, so two lone envs seeded 3 and 4 must agree with it
        singles = [make(name, num_envs=2, seed=3 + k) for k in range(2)]
        half = probe.num_agents
        for s in singles:
            s.reset(seed=singles.index(s) + 3)
        for t in range(200):
            o, r, term, trunc, _ = vecenv.step(actions[t])
            for k, s in enumerate(singles):
                so, sr, st, _, _ = s.step(actions[t, k * half:(k + 1) * half])
                np.testing.assert_array_equal(o[k * half:(k + 1) * half], so)
                np.testing.assert_array_equal(r[k * half:(k + 1) * half], sr)
                np.testing.assert_array_equal(term[k * half:(k + 1) * half], st)
    finally:
        vecenv.close()


# ---------------------------------------------------------------------------------------------
# Each sanity env's reward means what it says
# ---------------------------------------------------------------------------------------------

def test_squared_greedy_collects_every_target_random_does_not():
    env = make('squared', num_envs=8)
    _, logs = run_policy(env, squared_greedy, 64 * 8)
    assert episode_mean(logs, 'episode_return') == pytest.approx(1.0, abs=1e-5)
    assert episode_mean(logs, 'perf') == pytest.approx(1.0)
    _, logs = run_policy(env, lambda e, o: tools.random_actions(e.single_action_space, e.num_agents, 1)[0], 64 * 8)
    assert episode_mean(logs, 'episode_return') < 0.5


def test_squared_pays_each_target_once():
    env = make('squared', num_envs=1, size=5, num_targets=1, max_steps=100)
    obs, _ = env.reset(seed=0)
    total = 0.0
    for _ in range(100):
        obs, rewards, terminals, truncations, _ = env.step(squared_greedy(env, obs))
        total += rewards.sum()
        if terminals[0]:
            break
    assert total == pytest.approx(1.0) and terminals[0]


def test_password_exactly_one_sequence_pays():
    length = 4
    env = make('password', num_envs=1, length=length, password_seed=123)
    paid = []
    for code in range(2 ** length):
        env.reset(seed=0)
        bits = [(code >> (length - 1 - i)) & 1 for i in range(length)]
        total = 0.0
        for i, bit in enumerate(bits):
            _, rewards, terminals, _, _ = env.step(np.array([bit]))
            total += rewards[0]
            assert terminals[0] == (i == length - 1)
        paid.append(total)
    assert sorted(paid) == [0.0] * (2 ** length - 1) + [1.0]
    # the password is a function of the config only: other envs and seeds share it
    winner = int(np.argmax(paid))
    other = make('password', num_envs=3, seed=99, length=length, password_seed=123)
    bits = [(winner >> (length - 1 - i)) & 1 for i in range(length)]
    for bit in bits:
        _, rewards, _, _, _ = other.step(np.full(3, bit))
    assert (rewards == 1.0).all()


def test_stochastic_optimum_is_mixed():
    p, horizon, episodes = 0.75, 64, 400
    env = make('stochastic', num_envs=episodes, p=p, horizon=horizon)
    rng = np.random.default_rng(0)

    def mean_reward(prob_zero):
        env.reset(seed=0)
        total = 0.0
        for _ in range(horizon):
            actions = (rng.random(episodes) >= prob_zero).astype(np.int32)  # 0 with prob_zero
            total += env.step(actions)[1].sum()
        return total / episodes

    mixed = mean_reward(p)
    for deterministic in (1.0, 0.0, 0.5):
        assert mixed > mean_reward(deterministic) + 0.05
    assert mixed > 0.9


def test_memory_rewards_recall_not_guessing():
    length, delay, symbols = 5, 3, 3
    env = make('memory', num_envs=16, length=length, delay=delay, num_symbols=symbols)
    obs, _ = env.reset(seed=0)
    for policy_kind in ('memory', 'constant'):
        env.reset(seed=0)
        obs = env.observations
        seen = [[] for _ in range(env.num_agents)]
        total = 0.0
        for _ in range(2 * length + delay):
            actions = np.zeros(env.num_agents, dtype=np.int32)
            for i, row in enumerate(obs):
                if row[:symbols].any():
                    seen[i].append(int(row[:symbols].argmax()))
                elif row[symbols] and policy_kind == 'memory':
                    actions[i] = seen[i].pop(0)
            obs, rewards, terminals, _, _ = env.step(actions)
            total += rewards.sum()
        assert terminals.all()
        per_episode = total / env.num_agents
        if policy_kind == 'memory':
            assert per_episode == pytest.approx(1.0, abs=1e-5)
        else:
            assert per_episode < 0.7


def test_multiagent_rewards_follow_agent_rows():
    env = make('multiagent', num_envs=4, horizon=8)
    right, _ = run_policy(env, multiagent_own_id, 8)
    swapped, _ = run_policy(env, lambda e, o: 1 - multiagent_own_id(e, o), 8)
    assert right == pytest.approx(env.num_agents * 1.0) and swapped == 0.0
    # agent 0 alone right: only even rows are paid
    env.reset(seed=0)
    _, rewards, *_ = env.step(np.zeros(env.num_agents, dtype=np.int32))
    assert (rewards[0::2] > 0).all() and (rewards[1::2] == 0).all()


def test_spaces_structure_and_full_score_needs_both_subspaces():
    from pufferlib.emulation import Nativizer
    env = make('spaces', num_envs=64)
    assert env.obs_dtype is not None and env.native_action_space is not None
    nativize = Nativizer(env.obs_dtype)
    obs, _ = env.reset(seed=0)
    native = nativize(obs)
    assert native['image'].shape == (64, 5, 5) and native['image'].dtype == np.float32
    assert native['flat'].shape == (64, 5) and native['flat'].dtype == np.int8
    assert set(np.unique(native['image'])) <= {0.0, 1.0} and set(np.unique(native['flat'])) <= {-1, 0, 1}
    for space, value in (('image', native['image'][0]), ('flat', native['flat'][0])):
        assert env.native_observation_space[space].contains(value)

    def oracle(mask_flat=False, mask_image=False):
        native = nativize(env.observations)
        flat = (native['flat'].astype(int).sum(1) > 0).astype(np.int32)
        image = (native['image'].reshape(64, -1).sum(1) > 12).astype(np.int32)
        if mask_flat:
            flat = 1 - flat
        if mask_image:
            image = 1 - image
        return np.stack([flat, image], 1)  # MultiDiscrete order = Dict key order: flat, image

    for kwargs, expected in (({}, 1.0), ({'mask_flat': True}, 0.5), ({'mask_image': True}, 0.5),
                             ({'mask_flat': True, 'mask_image': True}, 0.0)):
        env.reset(seed=1)
        rewards = [env.step(oracle(**kwargs))[1].mean() for _ in range(20)]
        assert np.mean(rewards) == pytest.approx(expected)


def test_bandit_best_arm_earns_most():
    env = make('bandit', num_envs=2000, num_arms=5, best_arm=3, best_prob=0.6, other_prob=0.4)
    means = []
    for arm in range(5):
        env.reset(seed=arm)
        means.append(np.mean([env.step(np.full(2000, arm))[1].mean() for _ in range(10)]))
    assert int(np.argmax(means)) == 3
    assert means[3] == pytest.approx(0.6, abs=0.02)
    assert max(means[:3] + means[4:]) == pytest.approx(0.4, abs=0.02)


# ---------------------------------------------------------------------------------------------
# Games
# ---------------------------------------------------------------------------------------------

def test_cartpole_matches_gymnasium_dynamics():
    import gymnasium
    env = make('cartpole', num_envs=1)
    gym_env = gymnasium.make('CartPole-v1').unwrapped
    obs, _ = env.reset(seed=4)
    gym_env.reset(seed=0)
    gym_env.state = obs[0].astype(np.float64)
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = int(rng.integers(2))
        ours, reward, terminal, _, _ = env.step(np.array([action]))
        theirs, gym_reward, gym_terminal, _, _ = gym_env.step(action)
        assert reward[0] == gym_reward and bool(terminal[0]) == gym_terminal
        if gym_terminal:
            break
        np.testing.assert_allclose(ours[0], theirs, rtol=1e-4, atol=1e-4)
    assert gym_terminal, 'random actions should drop the pole within 200 steps'


def test_pong_tracking_paddle_beats_the_scripted_opponent():
    env = make('pong', num_envs=4, max_score=5)
    _, logs = run_policy(env, pong_tracker, 6000)
    assert logs and episode_mean(logs, 'perf') > 0.5 and episode_mean(logs, 'episode_return') > 0
    _, logs = run_policy(env, lambda e, o: tools.random_actions(e.single_action_space, e.num_agents, 1)[0], 6000)
    assert episode_mean(logs, 'episode_return') < 0


def test_breakout_tracking_paddle_scores_more_than_random():
    env = make('breakout', num_envs=4, lives=3)
    tracked, _ = run_policy(env, breakout_tracker, 3000)
    rand, _ = run_policy(env, lambda e, o: tools.random_actions(e.single_action_space, e.num_agents, 1)[0], 3000)
    assert tracked > 2 * rand > 0


def test_snake_rewards_and_respawns():
    env = make('snake', num_envs=2)
    pool = tools.random_actions(env.single_action_space, env.num_agents, 64)
    saw_food = saw_death = False
    for t in range(3000):
        obs, rewards, terminals, truncations, _ = env.step(pool[t % 64])
        assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
        np.testing.assert_array_equal(terminals, rewards == -1.0)  # dying is the only terminal
        side = 2 * SMALL['snake'].get('vision', 5) + 1
        assert (obs[:, side * side // 2] == 3).all()  # the centre of every view is that snake's head
        saw_food |= (rewards == 1).any()
        saw_death |= terminals.any()
    assert saw_food and saw_death


def test_connect4_rules():
    env = make('connect4', num_envs=1)
    env.reset(seed=0)
    # stacking one column: the opponent blocks a vertical four, so column 0 fills up and the 4th
    # agent piece in it (7th piece overall) is illegal -> loss
    results = []
    for _ in range(10):
        _, rewards, terminals, _, _ = env.step(np.array([0]))
        results.append((rewards[0], terminals[0]))
        if terminals[0]:
            break
    assert results[-1] == (-1.0, True)
    # random play: rewards only at the end, only -1/0/+1; the blocking opponent wins most games
    env = make('connect4', num_envs=64)
    pool = tools.random_actions(env.single_action_space, 64, 64)
    wins = losses = 0
    for t in range(2000):
        _, rewards, terminals, _, _ = env.step(pool[t % 64])
        assert (rewards[~terminals] == 0).all() and set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
        wins += int((rewards == 1).sum())
        losses += int((rewards == -1).sum())
    assert losses > wins > 0


def c4_board(obs_row):
    """An observation row as the 6 x 7 board, top row first."""
    return obs_row.reshape(6, 7)


def test_connect4_two_player_turns_views_and_results():
    """Two seats (ocean/seats.h): only the row to move is live; each row sees the board from its own side;
    the waiting row's action is ignored; a win pays +1 / -1 on both rows on the same step."""
    env = make('connect4', num_envs=1, two_player=True)
    obs, _ = env.reset(seed=0)
    assert env.num_agents == 2 and not obs.any()
    # player 0 stacks column 3, player 1 column 4: player 0 completes a vertical four on its 4th move
    for move in range(7):
        player = move % 2
        np.testing.assert_array_equal(env.masks, [player == 0, player == 1])
        np.testing.assert_array_equal(env.action_masks[player], np.ones(7, dtype=bool))
        np.testing.assert_array_equal(env.action_masks[1 - player], np.eye(7, dtype=bool)[0])
        actions = np.array([3, 4], dtype=np.int32) if player == 0 else np.array([6, 4], dtype=np.int32)
        obs, rewards, terminals, _, _ = env.step(actions)  # the waiting row's column (6 or 4) is ignored
        if move < 6:
            assert not terminals.any() and not rewards.any()
            np.testing.assert_array_equal(obs[0], -obs[1])  # one board, two sides
            board = c4_board(obs[0])
            assert board[:, 3].sum() == (move + 2) // 2 and board[:, 4].sum() == -((move + 1) // 2)
            assert board[:, 6].sum() == 0
    np.testing.assert_array_equal(terminals, [True, True])
    np.testing.assert_array_equal(rewards, [1.0, -1.0])
    assert not obs.any() and env.masks[0] and not env.masks[1]  # a new game, player 0 to move
    env.close()


def test_connect4_full_columns_are_masked_and_an_illegal_move_loses():
    env = make('connect4', num_envs=1, two_player=True)
    env.reset(seed=0)
    for _ in range(6):  # fill column 0 alternately: nobody gets four in it
        env.step(np.array([0, 0], dtype=np.int32))
    player = 0
    assert env.masks[player] and not env.action_masks[player, 0] and env.action_masks[player, 1:].all()
    _, rewards, terminals, _, _ = env.step(np.array([0, 5], dtype=np.int32))  # player 0 drops into the full column
    np.testing.assert_array_equal(terminals, [True, True])
    np.testing.assert_array_equal(rewards, [-1.0, 1.0])
    env.close()


def test_connect4_builtin_action_hands_a_rows_move_to_the_scripted_player():
    """A live row's action SEATS_BUILTIN (-1, ocean/seats.h) has the scripted player move for it in C:
    block, and win before blocking. step() refuses -1 (outside the space); the league's arena writes it
    into the action buffer itself."""
    env = make('connect4', num_envs=1, two_player=True)
    env.reset(seed=0)
    assert env.spec.action_builtin

    def play(column):
        env.actions[:] = 0
        env.actions[int(np.flatnonzero(env.masks)[0])] = column
        return env.step(env.actions)

    for column in (0, 6, 1, 6, 2):  # X on 0, 1, 2 of the bottom row; O stacks two in column 6
        play(column)
    play(-1)  # O: no win yet, so it blocks X's four at column 3
    assert c4_board(env.observations[1])[5, 3] == 1
    for column in (5, 6, 5, 4, 5):  # O's third in column 6, X's third in column 5
        play(column)
    _, rewards, terminals, _, _ = play(-1)  # O could block column 5 or win at column 6: it wins
    np.testing.assert_array_equal(terminals, [True, True])
    np.testing.assert_array_equal(rewards, [-1.0, 1.0])
    with pytest.raises(APIUsageError, match='outside'):
        env.step(np.array([-1, 0], dtype=np.int32))
    env.close()


def test_connect4_one_row_seats_and_scripted_opponent():
    """seat=1: the scripted opponent opens; seat=-1 alternates; random play loses to it from both seats."""
    env = make('connect4', num_envs=1, seat=1)
    obs, _ = env.reset(seed=0)
    assert obs.sum() == -1 and env.masks.all()  # its first piece is already on the board
    assert 'scripted X, agent O' in env.render_text()
    env.close()
    env = make('connect4', num_envs=64, seat=-1)
    obs, _ = env.reset(seed=0)
    first_pieces = obs.sum(1)
    assert (first_pieces == 0).all()  # every env's first game: the agent opens
    pool = tools.random_actions(env.single_action_space, 64, 64)
    results = {0: [], 1: []}
    games = np.zeros(64, dtype=int)
    for t in range(3000):
        seat_now = games % 2
        _, rewards, terminals, _, _ = env.step(pool[t % 64])
        for k in np.flatnonzero(terminals):
            results[int(seat_now[k])].append(rewards[k])
        games += terminals
    for seat in (0, 1):
        assert len(results[seat]) > 100 and np.mean(results[seat]) < -0.5  # the blocker beats random play
    env.close()


def test_pong_two_player_mirrored_views_and_zero_sum_points():
    env = make('pong', num_envs=2, two_player=True, max_score=2)
    obs, _ = env.reset(seed=0)
    assert env.num_agents == 4 and env.masks.all()
    mirror = np.array([1, 0, 2, 3, 4, 5, 7, 6])
    sign = np.array([1, 1, -1, 1, -1, 1, 1, 1], dtype=np.float32)
    shift = np.array([0, 0, 1, 0, 0, 0, 0, 0], dtype=np.float32)
    saw_point = saw_end = False
    since_start = np.zeros(2, dtype=int)  # steps into each env's game: paddles start in the middle
    for t in range(3000):
        actions = np.array([t % 3, 1, 0, 2], dtype=np.int32)  # row 1 climbs, row 3 sinks
        obs, rewards, terminals, truncations, _ = env.step(actions)
        for e in range(2):
            np.testing.assert_allclose(obs[2 * e + 1], shift + sign * obs[2 * e][mirror], atol=1e-6)
            assert rewards[2 * e] == -rewards[2 * e + 1]
            assert terminals[2 * e] == terminals[2 * e + 1]
        saw_point |= bool(rewards.any())
        saw_end |= bool(terminals.any())
        since_start = np.where(terminals[::2], 0, since_start + 1)
        assert obs[1, 0] == 0.0 or since_start[0] < 20  # env 0's left paddle climbed to the top and stays
        assert obs[3, 0] == 1.0 or since_start[1] < 20  # env 1's sank to the bottom
    assert saw_point and saw_end
    env.close()


def test_masks_slot_is_live_after_reset_for_envs_that_never_write_it():
    """The binding sets every row live before c_reset; turn-based envs rewrite it from C."""
    env = make('snake', num_envs=2)
    env.masks[...] = False
    env.reset(seed=0)
    assert env.masks.all()
    env.close()
    env = make('kuhn', num_envs=3)
    env.masks[...] = True
    env.reset(seed=0)
    np.testing.assert_array_equal(env.masks, [True, False] * 3)  # player 0 opens every hand
    env.close()


def test_maze_wall_follower_always_reaches_the_goal():
    """A perfect maze is simply connected, so keeping a hand on the right wall finds the goal."""
    env = make('maze', num_envs=1, width=15, height=11, max_steps=10_000)
    obs, _ = env.reset(seed=0)
    moves = {0: (-1, 0), 1: (1, 0), 2: (0, -1), 3: (0, 1)}
    right_of = {0: 3, 3: 1, 1: 2, 2: 0}
    left_of = {v: k for k, v in right_of.items()}
    heading, goals = 0, 0
    for _ in range(20_000):
        view = obs[0].reshape(11, 11)
        for d in (right_of[heading], heading, left_of[heading], right_of[right_of[heading]]):
            if view[5 + moves[d][0], 5 + moves[d][1]] != 1:  # free
                heading = d
                break
        obs, rewards, terminals, truncations, _ = env.step(np.array([heading]))
        assert not truncations[0], 'the wall follower ran out of steps'
        assert rewards[0] == float(terminals[0])  # reward only (and always) at the goal
        goals += int(terminals[0])
        if goals == 5:
            return
    pytest.fail(f'reached the goal only {goals} times')


def test_maze_any_size():
    for width, height in ((5, 3), (7, 31), (101, 61)):
        env = make('maze', num_envs=1, width=width, height=height)
        assert env.render().shape == (8 * height, 8 * width, 3)
        assert env.render_text().count('\n') == height + 1
        env.close()


# ---------------------------------------------------------------------------------------------
# CLI helpers
# ---------------------------------------------------------------------------------------------

def test_play_runs_without_a_terminal():
    import io
    out = io.StringIO()
    tools.play('puffer_squared', steps=70, fps=0, scripted=True, out=out, clear=False)
    assert 'puffer_squared' in out.getvalue() and 'targets left' in out.getvalue()
    with pytest.raises(APIUsageError, match='no scripted agent'):
        tools.play('puffer_maze', steps=1, fps=0, scripted=True, out=io.StringIO())


def test_bench_returns_a_rate():
    assert tools.bench('puffer_bandit', seconds=0.01, num_envs=8) > 0  # a smoke test, not a timing


def test_unbuilt_binding_error_is_clear(monkeypatch, tmp_path):
    from pufferlib.ocean import env as ocean_env
    monkeypatch.setenv('PUFFER_OCEAN_LIB', str(tmp_path))
    with pytest.raises(EnvError, match='no compiled binding'):
        ocean_env.load_binding('no_such_env')


# ---------------------------------------------------------------------------------------------
# Sanitizer build (scripts/sanitize_ocean.sh)
# ---------------------------------------------------------------------------------------------

# Every env with its defaults, plus options that switch on other code paths (the poker envs' built-in
# opponent in one-row mode, the two-player modes of connect4 and pong, the scripted connect4 opening).
SANITIZE_RUNS = [(name, {}) for name in ALL] + [
    ('kuhn', {'two_player': False}), ('leduc', {'two_player': False}), ('connect4', {'two_player': True}),
    ('connect4', {'seat': -1}), ('pong', {'two_player': True}),
    ('drone', {'task': 0}), ('rocket_lander', {'discrete': True}), ('slimevolley', {'continuous': True}),
    ('checkers', {'two_player': True}), ('checkers', {'seat': 1}), ('slimevolley', {'two_player': True}),
    ('slimevolley', {'frameskip': 4}), ('slimevolley', {'two_player': True, 'continuous': True}),
    ('mmo', {'two_player': True})]


@pytest.mark.sanitize
@pytest.mark.skipif(not SANITIZED, reason='needs the sanitizer build: run scripts/sanitize_ocean.sh')
@pytest.mark.parametrize('name, options', SANITIZE_RUNS,
                         ids=[name + ''.join(f'-{k}={v}' for k, v in o.items()) for name, o in SANITIZE_RUNS])
def test_sanitized_100k_random_steps(name, options):
    """ASan/UBSan abort the process on the first bad access or undefined operation, so getting to the
    end is the assertion. Random actions are mixed with wild ones; render paths are exercised too."""
    env = make(name, num_envs=4, seed=2, **options)
    rows = env.num_agents
    steps = 100_000 // 4
    pool = tools.random_actions(env.single_action_space, rows, 256, seed=2)
    if isinstance(env.single_action_space, (spaces.Box, MixedSpace)):  # huge, infinite and NaN floats
        wild = np.random.default_rng(2).choice(np.array([-np.inf, -3e38, np.nan, 3e38, np.inf], np.float32),
                                               size=pool.shape)
    else:
        wild = np.random.default_rng(2).integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max,
                                                 size=pool.shape, dtype=np.int64).astype(np.int32)
    for t in range(steps):
        if t % 7 == 0:  # wild actions go straight into the buffer (step() refuses them; the C env must cope)
            env.actions[...] = wild[t % 256]
            env.step(env.actions)
        else:
            env.step(pool[t % 256])
        if t % 5000 == 0:
            env.render(index=t % 4)
            env.render_text(index=t % 4)
    env.reset(seed=3)
    env.log()
    env.close()


# Options that each break one rule of their env's spec: a range, a range bound by another option, a
# float range, a check, a check with %, a check over five options.
BROKEN = [
    ('memory', {'length': 10**6}),
    ('squared', {'size': 5, 'num_targets': 17}),
    ('bandit', {'best_arm': 4}),
    ('bandit', {'best_prob': 1.5}),
    ('pong', {'paddle_speed': 0.0}),
    ('maze', {'width': 10}),
    ('snake', {'width': 8, 'height': 8, 'num_snakes': 8, 'max_length': 8}),
]


@pytest.mark.parametrize('name, change', BROKEN)
def test_c_checks_packed_options_and_reports_what_python_reports(name, change):
    """Python validates options first; the binding re-checks the packed struct with code generated from
    the same spec, so a caller that skips Python gets the same message."""
    env = make(name, num_envs=1)
    try:
        values = {**env.config, **change}
        problem = env.spec.problem(values)
        assert problem and any(key in problem for key in change)
        with pytest.raises(ValueError) as info:
            env._binding.vec_init(env.observations, env.actions, env.rewards, env.terminals, env.truncations,
                                  env.masks, env.action_masks, 1, env.spec.pack(values))
        assert str(info.value) == problem
        with pytest.raises(APIUsageError, match=re.escape(problem)):
            make(name, num_envs=1, **{**SMALL.get(name, {}), **change})
    finally:
        env.close()


def test_binding_rejects_config_bytes_of_the_wrong_size_and_a_missing_mask():
    env = make('template', num_envs=1)
    args = (env.observations, env.actions, env.rewards, env.terminals, env.truncations, env.masks)
    packed = env.spec.pack(env.config)
    with pytest.raises(ValueError, match=f'config must be {len(packed)} bytes'):
        env._binding.vec_init(*args, env.action_masks, 1, packed + b'\0')
    with pytest.raises(ValueError, match='declares an action mask'):
        env._binding.vec_init(*args, None, 1, packed)
    with pytest.raises(ValueError, match='action_masks must hold'):
        env._binding.vec_init(*args, np.ones((1, 3), dtype=bool), 1, packed)
    env.close()


def test_action_masks_are_written_by_the_env():
    """The template masks `left` at the left end: the mask must follow the agent's position."""
    env = make('template', num_envs=3, length=5, max_steps=50)
    assert env.action_masks.shape == (env.num_agents, 2) and env.action_masks.dtype == np.bool_
    obs, _ = env.reset(seed=0)
    saw_masked = False
    for _ in range(40):
        at_left_end = obs[:, 0] == 1
        np.testing.assert_array_equal(env.action_masks[:, 0], ~at_left_end)
        assert env.action_masks[:, 1].all()
        saw_masked |= at_left_end.any()
        obs, *_ = env.step(np.zeros(env.num_agents, dtype=np.int32))  # always left
    assert saw_masked
    env.close()
    plain = make('pong', num_envs=1)
    assert plain.action_masks is None
    plain.close()
