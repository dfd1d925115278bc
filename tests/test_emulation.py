import functools

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pettingzoo
import pettingzoo.utils

import pufferlib
import pufferlib.vector
from pufferlib import emulation
from pufferlib.emulation import GymnasiumAdapter, GymnasiumPufferEnv, Nativizer, PettingZooPufferEnv

from lab.synthetic_envs import NETHACK_LIKE

from envs import DyingAgentsEnv, LaterObservation, OldGymCounter, SampleEnv

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
    """Any space's flat row (MultiDiscrete, Box or, for both kinds, a mixed row) unflattens to a value of the
    space whose leaves are the row's values: the discrete leaves first (less their start), then the Box ones."""
    leaves = list(emulation.spaces._walk(space))
    if isinstance(space, (spaces.Dict, spaces.Tuple)) and any(
            isinstance(leaf, spaces.Box) and not np.issubdtype(leaf.dtype, np.floating) for _, leaf in leaves):
        with pytest.raises(pufferlib.SpaceError, match='integer Box'):
            emulation.emulate_action_space(space)
        return
    flat, unflatten = emulation.emulate_action_space(space)
    flat.seed(seed)
    row = flat.sample()
    if isinstance(flat, (spaces.Discrete, spaces.MultiDiscrete)):
        row = np.asarray(row).astype(np.int32)  # the buffer's dtype
    native = unflatten(row)
    assert space.contains(native), (space, native)
    discrete, boxes = [], []
    for path, leaf in leaves:
        value = native
        for key in path:
            value = value[key]
        if isinstance(leaf, spaces.Box):
            boxes.extend(np.asarray(value, np.float64).ravel().tolist())
        else:
            discrete.extend((np.asarray(value) - getattr(leaf, 'start', 0)).ravel().tolist())
    assert discrete + boxes == np.atleast_1d(row).astype(np.float64).ravel().tolist()


def test_actions_reach_the_env_unflattened():
    act = spaces.Dict({'move': spaces.Discrete(4, start=1), 'flags': spaces.MultiBinary(2)})
    env = GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (1,)), act))
    assert env.single_action_space == spaces.MultiDiscrete([2, 2, 4])  # Dict sorts its keys
    env.reset(seed=0)
    env.step(np.array([[1, 0, 1]]))
    assert env.env.last_action['flags'].tolist() == [1, 0]
    assert env.env.last_action['move'] == 1 + 1  # flat 1 -> Discrete(4, start=1) value 2


class ListObservations(gymnasium.ObservationWrapper):
    """Observations as lists: no .shape, so they take the checked writer instead of the one-copy path."""

    def observation(self, observation):
        return observation.tolist()


@pytest.mark.parametrize('start', [0, -2])
def test_fast_step_path_matches_the_general_one(start):
    """What a vector worker does (step with the env's own action buffer, a Box observation array) and
    the general path (a caller's actions array, checked and copied; an observation without a shape)
    fill the same buffers and infos, step after step, across episode ends and autoresets."""
    def make(wrap):
        env = gymnasium.make('CartPole-v1')
        if start:  # the same dynamics behind a Discrete(2, start=-2) action
            env = gymnasium.wrappers.TransformAction(env, lambda a: a - start, spaces.Discrete(2, start=start))
        return GymnasiumPufferEnv(env=wrap(env), seed=3)
    fast, general = make(lambda env: env), make(ListObservations)
    np.testing.assert_array_equal(fast.reset()[0], general.reset()[0])
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(800):
        action = rng.integers(0, 2)
        fast.actions[0] = action
        got, expected = fast.step(fast.actions), general.step(np.array([action], np.int64))
        for a, b in zip(got[:4], expected[:4]):
            np.testing.assert_array_equal(a, b)
        assert got[4] == expected[4]
        episodes += len(got[4])
    assert episodes >= 20


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


def test_adapter_follows_gymnasium_episode_semantics():
    """Through GymnasiumAdapter an emulated env behaves as the env itself: the final observation on the
    episode-ending step, no step until reset(), and an unseeded reset() continuing the same RNG."""
    adapter = GymnasiumAdapter(GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (2,)), length=3)))
    twin = SampleEnv(spaces.Box(0, 1, (2,)), length=3)  # its own space: SampleEnv samples from it
    for seed in (5, None):
        np.testing.assert_array_equal(adapter.reset(seed=seed)[0], twin.reset(seed=seed)[0])
        for _ in range(3):
            ob, reward, terminated, truncated, _ = adapter.step(1)
            ob2, reward2, terminated2, truncated2, _ = twin.step(1)
            np.testing.assert_array_equal(ob, ob2)
            assert (reward, terminated, truncated) == (reward2, terminated2, truncated2)
        assert terminated
        with pytest.raises(pufferlib.APIUsageError, match=r'step\(\) after the episode ended.*call reset'):
            adapter.step(1)


def test_adapter_over_an_ocean_env_waits_for_reset():
    adapter = GymnasiumAdapter(pufferlib.make('puffer_cartpole'))
    adapter.reset(seed=1)
    for _ in range(10_000):
        _, _, terminated, truncated, _ = adapter.step(0)
        if terminated or truncated:
            break
    assert terminated or truncated
    with pytest.raises(pufferlib.APIUsageError, match='call reset'):
        adapter.step(0)
    adapter.reset()
    adapter.step(1)


def test_adapter_checks_every_action():
    adapter = GymnasiumAdapter(GymnasiumPufferEnv(env=gymnasium.make('Pendulum-v1')))
    adapter.reset(seed=0)
    adapter.step(np.array([0.5], np.float32))
    with pytest.raises(pufferlib.APIUsageError, match='NaN or inf'):
        adapter.step(np.array([np.nan], np.float32))


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


@pytest.mark.parametrize('action', [np.array([2**32], np.int64), np.array([-1]), np.array([2], np.int8),
                                    np.array([2**64 - 1], np.uint64)])
def test_out_of_range_discrete_actions_are_refused_on_every_step(action):
    env = pufferlib.make('CartPole-v1')
    env.reset(seed=0)
    env.step(np.zeros(1, np.int32))
    with pytest.raises(pufferlib.APIUsageError, match=rf'action {action[0]} for agent row 0 is outside Discrete\(2\)'):
        env.step(action)


def test_multidiscrete_actions_are_checked_per_dimension():
    env = GymnasiumPufferEnv(env=SampleEnv(spaces.Box(0, 1, (1,)), spaces.MultiDiscrete([2, 5])))
    env.reset(seed=0)
    env.step(np.array([1, 4]))
    with pytest.raises(pufferlib.APIUsageError, match=r'action 2 for agent row 0 is outside.*action < 2\)'):
        env.step(np.array([2, 4]))


def test_nan_box_actions_are_refused_on_every_step():
    env = GymnasiumPufferEnv(env=gymnasium.make('Pendulum-v1'))
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.array([[0.5]], np.float32))
    for bad in (np.nan, -np.inf):
        with pytest.raises(pufferlib.APIUsageError, match=r'NaN or inf at agent rows \[0\]'):
            env.step(np.array([[bad]], np.float32))


BOX4 = spaces.Box(-1, 1, (4,), np.float32)


@pytest.mark.parametrize('space, bad, match', [
    (BOX4, np.full(1, 0.5, np.float32), r'<root>: expected shape \(4,\) dtype float32, got shape \(1,\)'),
    (BOX4, np.float32(0.5), r'<root>: expected shape \(4,\) dtype float32, got shape \(\)'),
    (BOX4, 0.5, r'got shape \(\)'),
    (spaces.Dict({'id': spaces.Discrete(5), 'pos': spaces.Box(-1, 1, (3,), np.float32)}),
     {'id': 2, 'pos': np.zeros(1, np.float32)}, r'pos: expected shape \(3,\) dtype float32, got shape \(1,\)'),
    (spaces.Tuple([spaces.MultiDiscrete([3, 3]), spaces.Discrete(2)]), (np.int64(1), 0), r'0: expected shape \(2,\)'),
])
def test_observation_of_another_shape_is_refused_on_every_step(space, bad, match):
    """numpy would broadcast a (1,)-shaped or scalar observation into every feature of the row."""
    env = GymnasiumPufferEnv(env=LaterObservation(space, bad))
    env.reset(seed=0)
    env.step(np.zeros(1, np.int32))
    with pytest.raises(pufferlib.SpaceError, match=match):
        env.step(np.zeros(1, np.int32))


def test_observations_without_a_shape_attribute_still_work():
    """The per-step shape check is a fast comparison backed by an exact one: lists of the right
    shape pass."""
    env = GymnasiumPufferEnv(env=LaterObservation(BOX4, [0.1, 0.2, 0.3, 0.4]))
    env.reset(seed=0)
    for _ in range(3):
        obs = env.step(np.zeros(1, np.int32))[0]
    np.testing.assert_allclose(obs[0], [0.1, 0.2, 0.3, 0.4])
    space = spaces.Dict({'pos': spaces.Box(-1, 1, (2,), np.float32)})
    env = GymnasiumPufferEnv(env=LaterObservation(space, {'pos': [0.25, 0.5]}))
    env.reset(seed=0)
    for _ in range(3):
        obs = env.step(np.zeros(1, np.int32))[0]
    np.testing.assert_allclose(obs[0], [0.25, 0.5])


def test_multiagent_observation_of_another_shape_is_refused():
    class Shrinks(DyingAgentsEnv):
        def _ob(self, agent):
            return np.ones(1, np.float32) if self.t == 2 else super()._ob(agent)
    env = PettingZooPufferEnv(env=Shrinks())
    env.reset(seed=0)
    env.step(np.zeros(3, np.int32))
    with pytest.raises(pufferlib.SpaceError, match=r"agent 'a'.*expected shape \(2,\)"):
        env.step(np.zeros(3, np.int32))


@pytest.mark.parametrize('obs_space, act_space, match', [
    (spaces.Dict({}), spaces.Discrete(2), r'observation space Dict\(\) holds no values'),
    (spaces.Tuple([]), spaces.Discrete(2), r'observation space Tuple\(\) holds no values'),
    (spaces.Box(0, 1, (1,)), spaces.Dict({}), r'action space Dict\(\) holds no actions'),
])
def test_empty_spaces_give_one_clear_error(obs_space, act_space, match):
    with pytest.raises(pufferlib.SpaceError, match=match):
        GymnasiumPufferEnv(env=SampleEnv(obs_space, act_space))
    with pytest.raises(pufferlib.SpaceError, match=match):
        pufferlib.vector.make(lambda: SampleEnv(obs_space, act_space), backend='Multiprocessing', num_envs=2)


SINGLE_ENVS = {
    'gymnasium': lambda seed=None: pufferlib.make('CartPole-v1', seed=seed),
    'pettingzoo': lambda seed=None: PettingZooPufferEnv(env=DyingAgentsEnv(), seed=seed),
    'ocean': lambda seed=None: pufferlib.make('puffer_cartpole', seed=seed),
}


@pytest.mark.parametrize('kind', list(SINGLE_ENVS))
def test_seed_rule_is_the_vector_envs_one(kind):
    """Seeds are 64-bit: 2**70 is refused as in every vector backend (see test_vector), not passed on
    to be folded or accepted differently by each env, and the largest seed works."""
    for bad in (2**70, 2**63, -1, 1.5, True):
        with pytest.raises(pufferlib.APIUsageError, match=r'seed must be None or an integer in \[0, 2\*\*63 - 1\]'):
            SINGLE_ENVS[kind](seed=bad)
    env = SINGLE_ENVS[kind]()
    with pytest.raises(pufferlib.APIUsageError, match=r'seed must be None or an integer in \[0, 2\*\*63 - 1\]'):
        env.reset(seed=2**70)
    first = env.reset(seed=2**63 - 1)[0].copy()
    np.testing.assert_array_equal(env.reset(seed=2**63 - 1)[0], first)


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


def test_structured_action_with_an_integer_box_is_rejected():
    """A float Box part makes a mixed action (tests/test_mixed_actions.py); an integer one is refused, naming it."""
    act = spaces.Dict({'move': spaces.Discrete(2), 'force': spaces.Box(-1, 1, (1,), np.int32)})
    with pytest.raises(pufferlib.SpaceError, match=r'integer Box \(Box\(-1, 1, \(1,\), int32\)\) at force'):
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


def test_gymnasium_warnings_reach_the_pytest_summary_as_plain_text():
    import gymnasium.logger
    with pytest.warns(UserWarning) as caught:
        gymnasium.logger.warn('a Box observation space minimum value is -infinity')
    assert str(caught[0].message) == 'WARN: a Box observation space minimum value is -infinity'  # no ANSI codes


class RewardOf(gymnasium.Env):
    """Pays `reward` on every step, whatever it is."""
    observation_space, action_space = spaces.Box(-1, 1, (2,), np.float32), spaces.Discrete(2)

    def __init__(self, reward='1.0'):
        self.reward = reward

    def reset(self, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), self.reward, False, False, {}


class RewardOfAgents(pettingzoo.ParallelEnv):
    """Two agents; agent 'b' is paid `reward`, whatever it is."""
    metadata = {'name': 'reward_of_agents_v0'}

    def __init__(self, reward='1.0'):
        self.possible_agents, self.reward = ['a', 'b'], reward

    def observation_space(self, agent):
        return spaces.Box(-1, 1, (2,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        return {a: np.zeros(2, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        no = {a: False for a in self.agents}
        rewards = {'a': 0.0, 'b': self.reward}
        return {a: np.zeros(2, np.float32) for a in self.agents}, rewards, no, dict(no), {a: {} for a in self.agents}


@pytest.mark.parametrize('reward', ['1.0', None, [1.0], b'1'])
@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
def test_a_reward_that_is_not_a_number_is_one_error_naming_the_env(reward, backend):
    vecenv = pufferlib.vector.make(functools.partial(RewardOf, reward), backend=backend, num_envs=2)
    vecenv.reset(seed=0)
    with pytest.raises(Exception) as caught:
        vecenv.step(np.zeros(2, np.int32))
    message = str(caught.value)
    assert f'step() returned the reward {reward!r} of type {type(reward).__name__}' in message
    assert 'RewardOf' in message and 'float(reward)' in message
    vecenv.close()


@pytest.mark.parametrize('reward', ['1.0', 'one', None])
@pytest.mark.parametrize('turn_based', [False, True])
def test_a_pettingzoo_reward_that_is_not_a_number_names_the_agent(reward, turn_based):
    game = RewardOfAgents(reward)
    env = PettingZooPufferEnv(env=pettingzoo.utils.parallel_to_aec(game) if turn_based else game)
    env.reset(seed=0)
    with pytest.raises(pufferlib.APITypeError, match=r"agent 'b': step\(\) returned the reward"):
        for _ in range(3):  # a turn-based game credits b's reward on b's turn
            env.step(np.zeros(2, np.int32))
