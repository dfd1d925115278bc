import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pufferlib
from pufferlib import emulation
from pufferlib.emulation import GymnasiumAdapter, GymnasiumPufferEnv, Nativizer, PettingZooPufferEnv

from pufferlib.environments.synthetic import NETHACK_LIKE

from envs import DyingAgentsEnv, OldGymCounter, SampleEnv

# --- random nested spaces ----------------------------------------------------------------------

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]


@st.composite
def leaf_spaces(draw):
    kind = draw(st.sampled_from(['box', 'discrete', 'multidiscrete', 'multibinary']))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=2)))
    if kind == 'box':
        dtype = draw(st.sampled_from(DTYPES))
        if np.issubdtype(dtype, np.floating):
            return spaces.Box(-3.0, 3.0, shape or (1,), dtype)
        info = np.iinfo(dtype)
        return spaces.Box(max(info.min, -100), min(info.max, 100), shape or (1,), dtype)
    if kind == 'discrete':
        return spaces.Discrete(draw(st.integers(1, 9)), start=draw(st.integers(-3, 3)))
    if kind == 'multidiscrete':
        return spaces.MultiDiscrete(np.array(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))))
    return spaces.MultiBinary(draw(st.integers(1, 5)))


def nested_spaces(max_depth=3):
    return st.recursive(
        leaf_spaces(),
        lambda children: st.one_of(
            st.dictionaries(st.text('abcdefgh', min_size=1, max_size=4), children, min_size=1, max_size=4)
            .map(spaces.Dict),
            st.lists(children, min_size=1, max_size=3).map(spaces.Tuple)),
        max_leaves=8)


def assert_same_structure(native, space, value, to_numpy=lambda x: x):
    if isinstance(space, spaces.Dict):
        assert isinstance(native, dict) and list(native) == list(space.spaces)
        for key, sub in space.spaces.items():
            assert_same_structure(native[key], sub, value[key], to_numpy)
    elif isinstance(space, spaces.Tuple):
        assert isinstance(native, tuple) and len(native) == len(space.spaces)
        for i, sub in enumerate(space.spaces):
            assert_same_structure(native[i], sub, value[i], to_numpy)
    else:
        got = to_numpy(native)
        expected = np.asarray(value)
        assert got.shape == expected.shape
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(space=nested_spaces(), seed=st.integers(0, 2**16))
def test_observation_round_trip(space, seed):
    env = GymnasiumPufferEnv(env=SampleEnv(space))
    obs, _ = env.reset(seed=seed)
    assert obs.shape == (1, *env.single_observation_space.shape)
    assert env.single_observation_space.contains(obs[0])
    for _ in range(3):
        sent = env.env.emitted[-1]
        if isinstance(space, spaces.Box):
            np.testing.assert_array_equal(obs[0], sent)
        else:
            nativizer = Nativizer(env.obs_dtype)
            assert_same_structure(_first(nativizer(obs)), space, sent)
            batch = torch.from_numpy(np.repeat(obs, 3, axis=0))
            native = nativizer(batch)
            assert_same_structure(_first(native), space, sent, lambda t: t.numpy())
        obs = env.step(np.zeros(1, np.int32))[0]


def _first(native):
    """Row 0 of a nativized batch, keeping the structure."""
    if isinstance(native, dict):
        return {k: _first(v) for k, v in native.items()}
    if isinstance(native, tuple):
        return tuple(_first(v) for v in native)
    return native[0]


def test_nativize_numpy_is_zero_copy_and_handles_leading_dims():
    env = GymnasiumPufferEnv(env=SampleEnv(spaces.Dict({'a': spaces.Box(0, 1, (2,)), 'b': spaces.Discrete(5)})))
    obs, _ = env.reset(seed=0)
    native = Nativizer(env.obs_dtype)(obs)
    assert np.shares_memory(native['a'], obs)
    rows = np.stack([obs, obs])  # [2, 1, row]: nativize keeps leading dims
    assert Nativizer(env.obs_dtype)(rows)['a'].shape == (2, 1, 2)


def test_torch_nativize_of_a_single_mixed_dtype_row():
    # An int64 leaf at an aligned offset in a 13-byte row: a batch of one keeps the row's stride.
    space = spaces.Dict({'a': spaces.Discrete(7), 'b': spaces.Box(0, 255, (5,), np.uint8)})
    env = GymnasiumPufferEnv(env=SampleEnv(space))
    obs, _ = env.reset(seed=3)
    native = Nativizer(env.obs_dtype)(torch.from_numpy(obs))
    assert_same_structure(_first(native), space, env.env.emitted[-1], lambda t: t.numpy())


def test_uniform_dtype_rows_keep_their_dtype():
    space = spaces.Dict({'x': spaces.Box(-1, 1, (3,), np.float32), 'y': spaces.Box(0, 2, (2, 2), np.float32)})
    flat, dtype = emulation.emulate_observation_space(space)
    assert flat.dtype == np.float32 and flat.shape == (7,)
    assert flat.low.tolist() == [-1, -1, -1, 0, 0, 0, 0]
    mixed, _ = emulation.emulate_observation_space(NETHACK_LIKE)
    assert mixed.dtype == np.uint8 and mixed.shape == (np.dtype(_).itemsize,)


@settings(max_examples=60, deadline=None)
@given(space=nested_spaces(), seed=st.integers(0, 2**16))
def test_structured_action_round_trip(space, seed):
    discrete = all(not isinstance(leaf, spaces.Box) for _, leaf in emulation._walk(space))
    if not discrete:
        if isinstance(space, (spaces.Dict, spaces.Tuple)):
            with pytest.raises(pufferlib.SpaceError, match='Box'):
                emulation.emulate_action_space(space)
        return
    flat, unflatten = emulation.emulate_action_space(space)
    rng = np.random.default_rng(seed)
    if isinstance(flat, spaces.Discrete):
        row = np.int32(rng.integers(flat.n))
    else:
        row = (rng.random(flat.nvec.shape) * flat.nvec).astype(np.int32)
    native = unflatten(row)
    assert space.contains(native), (space, native)
    # Leaves come back in layout order, shifted by their start.
    values = []
    for path, leaf in emulation._walk(space):
        value = native
        for key in path:
            value = value[key]
        start = getattr(leaf, 'start', 0)
        values.extend((np.asarray(value) - start).ravel().tolist())
    assert values == np.atleast_1d(row).tolist()


def test_actions_reach_the_env_unflattened():
    act = spaces.Dict({'move': spaces.Discrete(4, start=1), 'flags': spaces.MultiBinary(2)})
    env = GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (1,)), act))
    assert env.single_action_space == spaces.MultiDiscrete([2, 2, 4])  # Dict sorts its keys
    env.reset(seed=0)
    env.step(np.array([[1, 0, 1]]))
    assert env.env.last_action['flags'].tolist() == [1, 0]
    assert env.env.last_action['move'] == 1 + 1  # flat 1 -> Discrete(4, start=1) value 2


def test_box_actions_pass_through():
    env = GymnasiumPufferEnv(env=gymnasium.make('Pendulum-v1'))
    env.reset(seed=0)
    env.step(np.array([[0.5]], np.float32))
    assert env.single_action_space.shape == (1,)


# --- episode statistics and autoreset ---------------------------------------------------------

def test_infos_only_at_episode_end_with_stats():
    env = GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (2,)), length=4))
    env.reset(seed=0)
    seen = []
    for t in range(12):
        _, rewards, terminals, _, infos = env.step(np.zeros(1, np.int32))
        assert rewards[0] == 1.0
        if (t + 1) % 4:
            assert infos == [] and not terminals[0]
        else:
            assert terminals[0]
            seen.extend(infos)
    assert seen == [{'score': 4.0, 'episode_return': 4.0, 'episode_length': 4}] * 3


def test_same_step_autoreset_returns_next_episode_observation():
    env = GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (2,)), length=2))
    env.reset(seed=0)
    env.step(np.zeros(1, np.int32))
    obs, _, terminals, _, _ = env.step(np.zeros(1, np.int32))
    assert terminals[0]
    # The env emitted: reset, step, final step, reset: the row holds the new episode's first obs.
    np.testing.assert_array_equal(obs[0], env.env.emitted[-1])
    assert env.env.t == 0


def test_old_gym_api_is_converted():
    old = OldGymCounter(limit=3)
    env = GymnasiumPufferEnv(env=old)
    assert isinstance(env.single_observation_space, spaces.Box)
    env.reset(seed=7)
    assert old.seeded == 7
    results = [env.step(np.array([2])) for _ in range(3)]
    _, rewards, terminals, truncations, infos = results[-1]
    assert truncations[0] and not terminals[0]  # TimeLimit.truncated splits done into truncation
    assert infos[0]['episode_length'] == 3 and infos[0]['episode_return'] == 6.0


# --- Gymnasium's own checker on what we expose as Gymnasium envs ------------------------------

@pytest.mark.parametrize('make', [
    lambda: GymnasiumPufferEnv(env=gymnasium.make('CartPole-v1')),
    lambda: GymnasiumPufferEnv(env=SampleEnv(NETHACK_LIKE)),
    lambda: GymnasiumPufferEnv(env=SampleEnv(
        spaces.Tuple([spaces.Discrete(3), spaces.Box(0, 1, (2,))]),
        spaces.Dict({'a': spaces.Discrete(3), 'b': spaces.MultiDiscrete([2, 3])}))),
])
def test_gymnasium_check_env_passes(make):
    check_env(GymnasiumAdapter(make()), skip_render_check=True)


# --- multi-agent ------------------------------------------------------------------------------

def test_multiagent_padding_masks_and_done_handling():
    env = PettingZooPufferEnv(env=DyingAgentsEnv())
    obs, _ = env.reset(seed=0)
    assert env.num_agents == 3
    assert env.masks.tolist() == [True, True, False] and not obs[2].any()
    trace = []
    for _ in range(7):
        obs, rewards, terminals, _, infos = env.step(np.array([1, 2, 1]))
        trace.append((obs.copy(), rewards.copy(), terminals.copy(), env.masks.copy(), infos))
    # step 2: 'c' appears mid-episode
    assert trace[1][3].tolist() == [True, True, True] and trace[1][0][2].tolist() == [3, 2]
    # step 3: 'a' terminates; its final transition is valid (mask True)
    assert trace[2][2].tolist() == [True, False, False] and trace[2][3][0]
    # step 4: 'a' is gone: zero observation, zero reward, mask False
    assert not trace[3][0][0].any() and trace[3][1][0] == 0 and not trace[3][3][0]
    # step 6: everyone done -> same-step reset; episode stats once
    assert trace[5][2].tolist() == [False, True, True]
    assert trace[5][4] == [{'episode_return': pytest.approx((3 + 12 + 4) / 3), 'episode_length': 6}]
    assert trace[5][0][0].tolist() == [1, 0] and not trace[5][0][2].any()
    assert all(not t[4] for i, t in enumerate(trace) if i != 5)


def test_real_pettingzoo_env_with_deaths():
    from pettingzoo.butterfly import knights_archers_zombies_v11
    env = PettingZooPufferEnv(env=knights_archers_zombies_v11.parallel_env(max_cycles=300, line_death=True))
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(400):
        actions = rng.integers(0, env.single_action_space.n, size=env.num_agents).astype(np.int32)
        obs, _, terminals, _, infos = env.step(actions)
        assert not obs[~env.masks].any(), 'absent agents must have zero observations'
        episodes += len(infos)
    assert episodes >= 1


def test_aec_envs_are_converted_to_parallel():
    from pettingzoo.classic import rps_v2
    env = PettingZooPufferEnv(env=rps_v2.env())
    env.reset(seed=0)
    obs, rewards, *_ = env.step(np.array([0, 1]))
    assert rewards.tolist() == [-1, 1]


# --- errors ------------------------------------------------------------------------------------

def test_step_before_reset():
    env = pufferlib.make('CartPole-v1')
    with pytest.raises(pufferlib.APIUsageError, match='before reset'):
        env.step(np.zeros(1, np.int32))


@pytest.mark.parametrize('actions, match', [
    (np.zeros((2,), np.int32), r'shape \(1,\)'),
    (np.zeros(1, np.float32), 'integers'),
    (np.array([7]), 'outside Discrete'),
])
def test_bad_actions(actions, match):
    env = pufferlib.make('CartPole-v1')
    env.reset(seed=0)
    with pytest.raises(pufferlib.APIUsageError, match=match):
        env.step(actions)


def test_first_observation_mismatch_names_the_key():
    class Liar(SampleEnv):
        def reset(self, seed=None, options=None):
            ob, info = super().reset(seed=seed)
            ob['inner'] = {'x': np.zeros(4, np.float32)}
            return ob, info
    space = spaces.Dict({'inner': spaces.Dict({'x': spaces.Box(0, 1, (3,), np.float32)})})
    with pytest.raises(pufferlib.SpaceError, match=r'inner/x: expected shape \(3,\) dtype float32, got shape \(4,\)'):
        GymnasiumPufferEnv(env=Liar(space)).reset(seed=0)


@pytest.mark.parametrize('space', [spaces.Text(5), spaces.Dict({'seq': spaces.Sequence(spaces.Discrete(2))})])
def test_unsupported_observation_spaces(space):
    with pytest.raises(pufferlib.SpaceError, match='cannot emulate'):
        GymnasiumPufferEnv(env=SampleEnv(space))


def test_structured_action_with_box_is_rejected():
    act = spaces.Dict({'move': spaces.Discrete(2), 'force': spaces.Box(-1, 1, (1,))})
    with pytest.raises(pufferlib.SpaceError, match='Box at force'):
        GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (1,)), act))


def test_env_or_creator_but_not_both():
    with pytest.raises(pufferlib.APIUsageError, match='exactly one'):
        GymnasiumPufferEnv()
    with pytest.raises(pufferlib.APIUsageError, match='callable'):
        GymnasiumPufferEnv(env_creator='CartPole-v1')


def test_heterogeneous_agent_spaces_are_rejected():
    class Mixed(DyingAgentsEnv):
        def observation_space(self, agent):
            return spaces.Box(0, 1, (3 if agent == 'c' else 2,))
    with pytest.raises(pufferlib.SpaceError, match="agent 'c'"):
        PettingZooPufferEnv(env=Mixed())


def test_unknown_env_name_suggests():
    with pytest.raises(pufferlib.APIUsageError, match='Did you mean CartPole-v1'):
        pufferlib.make('CartPol-v1')
    with pytest.raises(pufferlib.APIUsageError, match='must be a string'):
        pufferlib.make(3)
