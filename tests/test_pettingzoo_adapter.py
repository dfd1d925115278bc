"""PettingZooAdapter: our multi-agent envs as PettingZoo envs, checked by PettingZoo's own API tests, and
trained by a MARL library that takes PettingZoo envs (SuperSuit's vector envs and Stable-Baselines3).

Which envs: every Ocean env of the catalogue with more than one agent row per game at its default
options (multiagent, drone, kuhn, leduc, mmo, rware, snake, trash_pickup, ...), plus each boolean
option, off by default, that changes the number of agent rows of a game when switched on (the
two-seat games' `two_player`: checkers, connect4, go, pong, slimevolley, tripletriad and mmo's teams;
freeway's `two_chickens`). The list is derived from the specs by building each env once, so a new
env or option joins by itself. The turn-based ones among them (some seat waits after reset:
`env.masks` not all True) also get PettingZoo's AEC `api_test` and `seed_test` on the AEC form.
"""
import warnings

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import pufferlib
from pufferlib import ocean
from pufferlib.emulation import PettingZooAdapter
from pufferlib.pufferenv import APIUsageError

CYCLES = 100  # steps per PettingZoo check: enough for whole games of the board games, a second or less each


def multi_agent_cases():
    """(short name, options) of every Ocean env game with two or more agent rows (the module docstring)."""
    cases = []
    for short in ocean.ENVS:
        spec = ocean.SPECS[short]
        defaults = spec.defaults()
        rows = ocean.make(ocean.PREFIX + short).num_agents
        if rows > 1:
            cases.append((short, {}))
        for key, option in spec.options.items():
            if option.kind != 'bool' or defaults[key] or spec.problem({**defaults, key: True}):
                continue
            if ocean.make(ocean.PREFIX + short, **{key: True}).num_agents not in (1, rows):
                cases.append((short, {key: True}))
    return cases


CASES = multi_agent_cases()
IDS = [short + ''.join(f'-{key}' for key in options) for short, options in CASES]


def adapter(short, options, seed=0):
    return PettingZooAdapter(pufferlib.make(ocean.PREFIX + short, seed=seed, **options))


def is_turn_based(short, options):
    env = pufferlib.make(ocean.PREFIX + short, **options)
    env.reset(seed=0)
    return not env.masks.all()


TURN_BASED = [(case, name) for case, name in zip(CASES, IDS) if is_turn_based(*case)]


def test_the_cases_cover_the_multi_agent_catalogue():
    names = set(IDS)
    assert {'multiagent', 'kuhn', 'leduc', 'mmo', 'connect4-two_player', 'go-two_player', 'pong-two_player',
            'freeway-two_chickens', 'mmo-two_player'} <= names
    assert {name for _, name in TURN_BASED} >= {'kuhn', 'leduc', 'connect4-two_player', 'go-two_player',
                                                 'checkers-two_player', 'tripletriad-two_player'}
    assert 'pong-two_player' not in {name for _, name in TURN_BASED}  # both paddles move on every step


# Advice, not a contract: an empty board (connect4's first observation) is all zeros.
ADVISORY = {'Observation numpy array is all zeros.'}


def no_pettingzoo_warnings(caught):
    """PettingZoo's checkers warn (rather than fail) on most contract breaches: those count as failures."""
    return sorted({str(w.message) for w in caught if 'pettingzoo' in w.filename} - ADVISORY)


@pytest.mark.parametrize('short,options', CASES, ids=IDS)
def test_parallel_api(short, options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        parallel_api_test(adapter(short, options), num_cycles=CYCLES)
    assert no_pettingzoo_warnings(caught) == []


@pytest.mark.parametrize('short,options', CASES, ids=IDS)
def test_parallel_seeds_replay(short, options):
    parallel_seed_test(lambda: adapter(short, options), num_cycles=CYCLES)
    # PettingZoo's parallel check stops after one step; play whole masked-random games as well: a seeded
    # reset replays, whatever the env was made with.
    assert play(adapter(short, options, seed=0), seed=7, reset_seed=1) == play(adapter(short, options, seed=5), seed=7,
                                                                               reset_seed=1)


@pytest.mark.parametrize('case', [case for case, _ in TURN_BASED], ids=[name for _, name in TURN_BASED])
def test_aec_api_of_turn_based_games(case):
    short, options = case
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        api_test(adapter(short, options).to_aec(), num_cycles=CYCLES)
    seed_test(lambda: adapter(short, options).to_aec(), num_cycles=CYCLES)
    assert no_pettingzoo_warnings(caught) == []


def play(env, seed, reset_seed=None, steps=60):
    """A trace of masked-random play, with a fresh episode whenever one ends."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=reset_seed)
    trace = []
    for _ in range(steps):
        if not env.agents:
            obs, infos = env.reset()
        actions = {}
        for agent in env.agents:
            space = env.action_space(agent)
            space.seed(int(rng.integers(2**31)))
            actions[agent] = space.sample(infos[agent].get('action_mask'))
        obs, rewards, terminations, truncations, infos = env.step(actions)
        trace.append((sorted(rewards.items()), [obs[a].tobytes() for a in sorted(obs)], sorted(terminations.items())))
    return trace


# --- conventions ----------------------------------------------------------------------------------

def test_turn_based_game_asks_only_the_seat_to_move_and_ends_for_both():
    env = adapter('connect4', {'two_player': True})
    obs, infos = env.reset(seed=0)
    assert env.agents == env.possible_agents == ['agent_0', 'agent_1']
    assert obs['agent_0'].shape == (42,) and not np.shares_memory(obs['agent_0'], env.puffer_env.observations)
    moves = 0
    while env.agents:
        mover = infos['agent_0']['active_agent']
        assert infos['agent_1']['active_agent'] == mover
        waiting = 'agent_1' if mover == 'agent_0' else 'agent_0'
        assert infos[waiting]['action_mask'].tolist() == [1, 0, 0, 0, 0, 0, 0]  # a waiting seat can only pass
        legal = np.flatnonzero(infos[mover]['action_mask'])
        obs, rewards, terminations, truncations, infos = env.step({mover: int(legal[0])})  # leftmost legal column
        moves += 1
        assert set(rewards) == {'agent_0', 'agent_1'}
        if any(terminations.values()):
            assert all(terminations.values()) and env.agents == []
            assert sorted(rewards.values()) == [-1.0, 1.0]
    assert 7 <= moves <= 42
    with pytest.raises(APIUsageError, match='call reset'):
        env.step({'agent_0': 0})


def test_agents_leave_as_they_finish_and_the_episode_ends_when_none_remain():
    env = adapter('multiagent', {'horizon': 3})
    env.reset(seed=0)
    for _ in range(3):
        assert env.agents == ['agent_0', 'agent_1']
        obs, rewards, terminations, truncations, infos = env.step({'agent_0': 0, 'agent_1': 1})
        assert rewards == {'agent_0': pytest.approx(1 / 3), 'agent_1': pytest.approx(1 / 3)}
    assert env.agents == [] and set(obs) == {'agent_0', 'agent_1'}
    assert all(terminations[a] or truncations[a] for a in obs)
    obs, _ = env.reset()
    assert env.agents == ['agent_0', 'agent_1'] and obs['agent_1'].tolist() == [0, 1]


def test_multidiscrete_masks_are_one_array_per_sub_action():
    env = adapter('mmo', {})
    _, infos = env.reset(seed=0)
    space = env.action_space('agent_0')
    assert isinstance(space, spaces.MultiDiscrete)
    mask = infos['agent_0']['action_mask']
    assert [len(m) for m in mask] == space.nvec.tolist() and all(m.dtype == np.int8 for m in mask)
    assert space.contains(space.sample(mask))


def test_native_spaces_of_a_structured_env():
    """puffer_spaces (one agent, Dict observation and actions) through the adapter: native both ways."""
    env = PettingZooAdapter(pufferlib.make('puffer_spaces'))
    assert env.observation_space('agent_0') == ocean.env_class('spaces').native_observation_space
    obs, _ = env.reset(seed=0)
    ob = obs['agent_0']
    assert env.observation_space('agent_0').contains(ob)
    right = {'image': int(ob['image'].sum() > 12), 'flat': int(ob['flat'].sum() > 0)}
    _, rewards, _, _, _ = env.step({'agent_0': right})
    assert rewards['agent_0'] == pytest.approx(1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        parallel_api_test(PettingZooAdapter(pufferlib.make('puffer_spaces')), num_cycles=10)
    assert no_pettingzoo_warnings(caught) == []


def test_an_emulated_env_keeps_its_final_observation():
    """A GymnasiumPufferEnv can stop at the end of an episode (autoreset off), so the episode-ending step
    shows the wrapped env's own final observation, not the next episode's first."""
    import gymnasium

    from pufferlib.emulation import GymnasiumPufferEnv
    env = PettingZooAdapter(GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=('CartPole-v1',)))
    assert env.puffer_env.autoreset is False
    obs, _ = env.reset(seed=0)
    steps = 0
    while env.agents:
        obs, _, terminations, _, _ = env.step({'agent_0': 1})  # always push right: falls within a few dozen steps
        steps += 1
    assert terminations['agent_0'] and steps < 100
    assert abs(obs['agent_0'][2]) > 0.2  # the pole's angle past the limit: the last state, not a fresh one


# --- errors a user can cause ---------------------------------------------------------------------

def test_an_env_of_several_games_is_refused_with_the_way_to_build_one():
    with pytest.raises(APIUsageError, match=r"num_envs=2 games.*pufferlib.make\('puffer_kuhn', num_envs=1\)"):
        PettingZooAdapter(pufferlib.make('puffer_kuhn', num_envs=2))


@pytest.mark.parametrize('actions,message', [
    ({'agent_0': 0, 'player_1': 0}, r"unknown agent 'player_1'; the agents are agent_0, agent_1"),
    ({'agent_0': 2, 'agent_1': 0}, r"action 2 for 'agent_0' is not in its action space Discrete\(2\)"),
    ({'agent_0': 1.0, 'agent_1': 0}, r"action 1.0 for 'agent_0' is not in its action space"),
    ({'agent_0': [0, 1], 'agent_1': 0}, r"action \[0, 1\] for 'agent_0' is not in its action space"),
    ({'agent_0': 'pass', 'agent_1': 0}, r"action 'pass' for 'agent_0'"),
    ({'agent_1': 0}, r"no action for 'agent_0'; every agent that is to act needs one"),
    ([0, 0], r'takes a dict of agent -> action, got list'),
])
def test_bad_actions_get_one_clear_error(actions, message):
    env = adapter('multiagent', {})
    env.reset(seed=0)
    with pytest.raises(APIUsageError, match=message):
        env.step(actions)
    env.step({'agent_0': 0, 'agent_1': 1})  # the env is still usable


def test_a_box_action_is_checked_for_shape_and_nan():
    env = adapter('drone', {})
    env.reset(seed=0)
    actions = {agent: np.zeros(env.action_space(agent).shape, np.float32) for agent in env.agents}
    env.step(actions)
    with pytest.raises(APIUsageError, match="for 'agent_1' is not in its action space Box"):
        env.step({**actions, 'agent_1': np.full(env.action_space('agent_1').shape, np.nan, np.float32)})
    with pytest.raises(APIUsageError, match="for 'agent_0' is not in its action space Box"):
        env.step({**actions, 'agent_0': np.zeros(1, np.float32)})


def test_actions_for_finished_agents_and_steps_before_reset_are_refused():
    env = adapter('multiagent', {'horizon': 1})
    with pytest.raises(APIUsageError, match='before the first reset'):
        env.step({'agent_0': 0, 'agent_1': 1})
    env.reset(seed=0)
    env.step({'agent_0': 0, 'agent_1': 1})
    with pytest.raises(APIUsageError, match='call reset'):
        env.step({'agent_0': 0})


def test_copies_come_from_the_creator():
    import pickle
    made = PettingZooAdapter(env_creator=pufferlib.make, env_args=('puffer_kuhn',), env_kwargs={'seed': 3})
    copy = pickle.loads(pickle.dumps(made))
    assert copy.puffer_env is not made.puffer_env and copy.possible_agents == made.possible_agents
    assert play(copy, seed=0) == play(made, seed=0)
    with pytest.raises(APIUsageError, match='cannot be copied; give it a creator'):
        pickle.dumps(adapter('kuhn', {}))


# --- a MARL library trains on one of ours --------------------------------------------------------

@pytest.mark.slow
def test_supersuit_and_stable_baselines3_learn_puffer_multiagent():
    """puffer_multiagent pays agent 0 for action 0 and agent 1 for action 1 (1 per episode when always
    right); a random policy earns 0.5. SuperSuit turns the PettingZoo env into a vector env with one
    entry per agent, and PPO learns one policy that tells the agents apart by their observation."""
    supersuit = pytest.importorskip('supersuit', reason='pip install -c constraints.txt -e ".[test]"')
    torch = pytest.importorskip('torch')
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import set_random_seed

    torch.set_num_threads(1)
    set_random_seed(0)  # not PPO(seed=): SB3 would call seed() on SuperSuit's vector env, which has none
    env = PettingZooAdapter(env_creator=pufferlib.make, env_args=('puffer_multiagent',))
    vec = supersuit.pettingzoo_env_to_vec_env_v1(env)
    vec = supersuit.concat_vec_envs_v1(vec, 4, num_cpus=0, base_class='stable_baselines3')  # copies by pickling
    assert vec.num_envs == 8
    model = PPO('MlpPolicy', vec, n_steps=32, batch_size=64, n_epochs=4, learning_rate=3e-3, verbose=0)

    def mean_return(episodes=10):
        game = PettingZooAdapter(pufferlib.make('puffer_multiagent'))
        total = 0.0
        for episode in range(episodes):
            obs, _ = game.reset(seed=episode)
            while game.agents:
                actions = {agent: int(model.predict(obs[agent])[0]) for agent in game.agents}  # sampled
                obs, rewards, _, _, _ = game.step(actions)
                total += sum(rewards.values())
        return total / (2 * episodes)

    before = mean_return()
    model.learn(total_timesteps=4096)
    after = mean_return()
    assert before < 0.75 and after > 0.95, (before, after)
