"""Saved env states (pufferlib.pufferenv: get_state / set_state; VecEnv.get_states / set_states).

The property every test checks: a game's state loaded into another game (of the same env object, of
another env object, of another vector, on another worker) continues exactly like the original under
the same actions, for 1,000 steps: the same observations, rewards, terminals and truncations.
"""
import numpy as np
import pytest

import pufferlib.ocean
import pufferlib.vector
from pufferlib.ocean.tools import random_actions
from pufferlib.pufferenv import STATE_HEADER_BYTES, StateError

STEPS = 1000


def _vec(name, backend, seed, env_kwargs=None, **options):
    """A vector of 2 env objects; Ocean objects hold 2 games each."""
    kwargs = dict(env_kwargs or {})
    if name.startswith('puffer_'):
        kwargs.setdefault('num_envs', 2)
    # Ray: one actor per vector, so the two vectors of a test fit the 2 CPUs of the test cluster.
    workers = {'Serial': {}, 'Multiprocessing': {'num_workers': 2}, 'Ray': {'num_workers': 1}}[backend]
    vec = pufferlib.vector.make(name, backend=backend, num_envs=2, seed=seed, env_kwargs=kwargs, **workers, **options)
    vec.reset(seed=seed)
    return vec


def _rows(vec, game):
    k = vec.agents_per_game
    return slice(game * k, (game + 1) * k)


def check_round_trip(name, backend, steps=STEPS, env_kwargs=None):
    """Save game 0 of vector A after some steps; load it into A's game 1 (the same env object for
    Ocean, the other env object otherwise) and into B's last game (another vector, another worker);
    step all three with the same actions and compare them every step."""
    a = _vec(name, backend, 1, env_kwargs)
    b = _vec(name, backend, 2, env_kwargs)
    try:
        assert a.supports_state and a.num_games == b.num_games
        last = b.num_games - 1
        space = a.single_action_space
        actions = random_actions(space, a.num_agents, steps + 21, seed=3)
        for t in range(20):
            a.step(actions[t])
        [state] = a.get_states([0])
        obs_a1 = a.set_states([1], [state])
        obs_b = b.set_states([last], [state])
        np.testing.assert_array_equal(obs_a1, a.buffers.observations[_rows(a, 0)])
        np.testing.assert_array_equal(obs_b, a.buffers.observations[_rows(a, 0)])
        assert not a.buffers.rewards[_rows(a, 1)].any() and not b.buffers.terminals[_rows(b, last)].any()
        for t in range(20, steps + 20):
            act_a = actions[t].copy()
            act_a[_rows(a, 1)] = act_a[_rows(a, 0)]
            act_b = actions[t + 1].copy()
            act_b[_rows(b, last)] = act_a[_rows(a, 0)]
            a.step(act_a)
            b.step(act_b)
            for buf in ('observations', 'rewards', 'terminals', 'truncations'):
                want = getattr(a.buffers, buf)[_rows(a, 0)]
                for vec, game in ((a, 1), (b, last)):
                    got = getattr(vec.buffers, buf)[_rows(vec, game)]
                    if not np.array_equal(want, got):
                        raise AssertionError(f'{name} on {backend}: {buf} of game {game} diverged from the saved '
                                             f'game at step {t - 20} after the load')
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize('name', pufferlib.ocean.env_names())
def test_ocean_serial(name):
    check_round_trip(name, 'Serial')


@pytest.mark.parametrize('name', pufferlib.ocean.env_names())
def test_ocean_multiprocessing(name):
    check_round_trip(name, 'Multiprocessing')


# ---- bindings: (name, module it needs, env kwargs); the ROMs: ale-py ships Atari's, Pokemon's is built ----
# (tests/gb_rom.py's walker; tests/test_pokemon.py adds a round trip through its busy frames)

BINDINGS = [
    ('atari_pong', 'ale_py', {}),
    ('mujoco_halfcheetah', 'mujoco', {}),
    ('mujoco_humanoid', 'mujoco', {}),
    ('minigrid_doorkey', 'minigrid', {}),
    ('crafter', 'crafter', {}),
    ('procgen_coinrun', 'procgen', {}),
    ('pokemon_red', 'pyboy', {'check_rom': False, 'max_steps': 100}),
]


@pytest.fixture(scope='module')
def gb_rom(tmp_path_factory):
    from gb_rom import build_gb_rom
    path = tmp_path_factory.mktemp('rom') / 'puffer_test.gb'
    path.write_bytes(build_gb_rom(walker=True))
    return str(path)


# Crafter steps about a hundred times slower than the rest: 200 steps by default, 1,000 under --runslow.
SHORT = {'crafter': 200}


@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
@pytest.mark.parametrize('name, module, kwargs', BINDINGS, ids=[b[0] for b in BINDINGS])
def test_binding(name, module, kwargs, backend, gb_rom):
    pytest.importorskip(module)
    if name == 'pokemon_red':
        kwargs = {**kwargs, 'rom_path': gb_rom}
    check_round_trip(name, backend, steps=SHORT.get(name, STEPS), env_kwargs=kwargs)


@pytest.mark.slow
@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
@pytest.mark.parametrize('name', sorted(SHORT))
def test_binding_long(name, backend):
    pytest.importorskip(name)
    check_round_trip(name, backend)


def test_nethack_refuses():
    pytest.importorskip('nle')
    vec = pufferlib.vector.make('nethack', num_envs=1)
    try:
        vec.reset(seed=0)
        assert not vec.supports_state
        with pytest.raises(StateError, match='cannot save or load its state: NLE keeps the game'):
            vec.get_states([0])
    finally:
        vec.close()


def test_ocean_env_level():
    """The env-level API: a loaded game does not share memory with the one that saved it (its steps leave
    the source's state unchanged), and the Log of a game is its own."""
    a = pufferlib.ocean.make('puffer_snake', num_envs=2, seed=0)
    b = pufferlib.ocean.make('puffer_snake', num_envs=1, seed=5)
    acts = random_actions(a.single_action_space, a.num_agents, 50, seed=1)
    for t in range(50):
        a.step(acts[t])
    before = a.get_state(0)
    b.set_state(0, before)
    for t in range(50):
        b.step(acts[t][:b.num_agents])
    assert a.get_state(0) == before
    assert a.get_state(0) == a.get_state(0)  # saving changes nothing
    assert len(before) > STATE_HEADER_BYTES


# ---- bad input: one clear error each, and the vector env still usable ----

@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
def test_bad_states(backend):
    vec = _vec('puffer_pong', backend, 0)
    other = pufferlib.ocean.make('puffer_snake', seed=0)
    options = pufferlib.ocean.make('puffer_pong', seed=0, max_score=3)
    try:
        [state] = vec.get_states([0])
        cases = [
            ([vec.num_games], [state], 'outside'),
            ([-1], [state], 'outside'),
            ([0], [state[:-5]], 'truncated'),
            ([0], [state[:40]], 'not a saved env state'),
            ([0], [b'hello' * 30], 'not a saved env state'),
            ([0], [state[:-1] + bytes([state[-1] ^ 1])], 'corrupt'),
            ([0], [other.get_state(0)], 'state of puffer_snake'),
            ([0], [options.get_state(0)], 'other options'),
            ([0, 1], [state], 'need a list of 2'),
            ([1, 1], [state, state], 'repeat'),
            ([0], ['text'], 'a state is bytes'),
        ]
        for ids, states, match in cases:
            with pytest.raises(StateError, match=match):
                vec.set_states(ids, states)
        with pytest.raises(StateError, match='outside'):
            vec.get_states([0, vec.num_games])
        # a refused state in a call loads nothing on that worker
        before = vec.get_states([2, 3])
        with pytest.raises(StateError, match='game id 3'):
            vec.set_states([2, 3], [state, other.get_state(0)])
        assert vec.get_states([2, 3]) == before
        # still usable
        vec.step(np.zeros(vec.num_agents, np.int32))
        vec.set_states([3], [state])
        vec.step(np.zeros(vec.num_agents, np.int32))
    finally:
        vec.close()
        other.close()
        options.close()


def test_version_and_layout_refused():
    from pufferlib.pufferenv import StateIdentity, pack_state, read_state_header
    env = pufferlib.ocean.make('puffer_pong', seed=0)
    state = env.get_state(0)
    identity, _, _ = read_state_header(state)
    payload = state[STATE_HEADER_BYTES:]
    with pytest.raises(StateError, match='version 7'):
        env.set_state(0, pack_state(identity._replace(version=7), payload))
    with pytest.raises(StateError, match='memory layout'):
        env.set_state(0, pack_state(identity._replace(layout=identity.layout ^ 1), payload))
    assert isinstance(identity, StateIdentity)
    env.close()


def test_unsupported_env_refuses():
    """An env without state support names itself in one StateError, at the env and through a vector."""
    import gymnasium

    class NoState(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(0, 1, (2,), np.float32)
        action_space = gymnasium.spaces.Discrete(2)
        state_unsupported = 'its engine keeps its state in C globals'

        def reset(self, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), 0.0, False, False, {}

    vec = pufferlib.vector.make(NoState, num_envs=2)
    vec.reset()
    with pytest.raises(StateError, match=r'NoState\) cannot save or load its state: its engine keeps'):
        vec.get_states([0])
    with pytest.raises(StateError, match=r'NoState\) cannot save'):
        vec.driver_env.get_state(0)
    vec.close()


def test_states_between_async_batches():
    """get/set_states between recv and send: in-flight results are kept for recv, the held batch shows the
    restored rows (zero copy), and send/recv go on."""
    vec = pufferlib.vector.make('puffer_pong', backend='Multiprocessing', num_envs=4, num_workers=4, batch_size=2,
                                seed=0, env_kwargs={'num_envs': 1})
    try:
        vec.async_reset(0)
        obs, _, _, _, _, ids, _ = vec.recv()
        games = ids  # one agent per game here
        [state] = vec.get_states([int(games[0])])
        vec.set_states([int(games[1])], [state])
        np.testing.assert_array_equal(obs[1], obs[0])
        vec.send(np.zeros(len(ids), np.int32))
        for _ in range(6):
            obs, _, _, _, _, ids, _ = vec.recv()
            vec.send(np.zeros(len(ids), np.int32))
    finally:
        vec.close()


def test_ray(ray_cluster):
    check_round_trip('puffer_snake', 'Ray', steps=200)
