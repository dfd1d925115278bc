"""MAgent2 (pufferlib/environments/magent2.py) through the PettingZoo emulation: rows per agent, padded
views and masked actions where roles differ, dead agents masked, determinism in both backends, teams as
two seats for the league's arena, errors, a training smoke run. Skips without the magent2 extra."""
import numpy as np
import pytest

import pufferlib
import pufferlib.vector
from pufferlib.environments import magent2 as binding

from small_run import assert_missing_extra_is_one_line, train_briefly

pytest.importorskip('magent2', reason='pip install -c constraints.txt -e ".[magent2]" (see docs/environments.md)')

# name -> (agent rows at the default map size, observation shape, actions)
SHAPES = {
    'magent2_battle': (162, (13, 13, 5), 21),
    'magent2_battlefield': (24, (13, 13, 5), 21),
    'magent2_adversarial_pursuit': (75, (10, 10, 5 + 2), 13),  # two role channels
    'magent2_gather': (495, (15, 15, 5), 33),
}


@pytest.mark.parametrize('name', list(SHAPES))
def test_rows_per_agent(name):
    agents, shape, actions = SHAPES[name]
    env = pufferlib.make(name)
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (agents, *shape) and env.single_action_space.n == actions
        rng = np.random.default_rng(0)
        for _ in range(3):
            legal = np.ones((agents, actions), bool) if env.action_masks is None else env.action_masks
            obs, rewards, _, _, _ = env.step(np.array([rng.choice(np.flatnonzero(row)) for row in legal]))
            assert np.isfinite(obs).all() and np.isfinite(rewards).all()
    finally:
        env.close()


def test_roles_are_padded_marked_and_masked():
    """adversarial_pursuit: predators see 10x10 and have 13 actions, prey 9x9 and 9."""
    from magent2.environments import adversarial_pursuit_v4
    raw = adversarial_pursuit_v4.parallel_env()
    raw_obs, _ = raw.reset(seed=3)
    env = pufferlib.make('magent2_adversarial_pursuit')
    try:
        obs, _ = env.reset(seed=3)
        view = obs.reshape(env.num_agents, 10, 10, 7)
        predator, prey = 0, raw.possible_agents.index('prey_0')
        np.testing.assert_array_equal(view[predator, :, :, :5], raw_obs['predator_0'])
        np.testing.assert_array_equal(view[prey, :9, :9, :5], raw_obs['prey_0'])  # centred: (10 - 9) // 2 = 0
        assert (view[prey, 9, :, :5] == 0).all() and (view[prey, :, 9, :5] == 0).all()
        assert (view[predator, :, :, 5] == 1).all() and (view[predator, :, :, 6] == 0).all()
        assert (view[prey, :, :, 6] == 1).all() and (view[prey, :, :, 5] == 0).all()
        assert env.action_masks[predator].sum() == 13 and env.action_masks[prey].tolist() == [True] * 9 + [False] * 4
        actions = np.zeros(env.num_agents, np.int64)
        actions[prey] = 12  # a predator's action
        with pytest.raises(pufferlib.IllegalActionError):
            env.step(actions)
    finally:
        env.close()
        raw.close()


def test_dead_agents_are_masked_out():
    """Red only attacks, blue wanders: blue agents die, and from the next step their rows are zero and
    masked; the step they die they still count (terminal, mask True) so their last transition trains."""
    env = pufferlib.make('magent2_battle', map_size=20)
    try:
        env.reset(seed=1)
        rng = np.random.default_rng(1)
        half = env.num_agents // 2
        died = None
        for _ in range(1000):
            actions = np.concatenate([rng.integers(13, 21, half), rng.integers(0, 13, env.num_agents - half)])
            obs, rewards, terminals, _, infos = env.step(actions)
            assert not infos, 'no battle should end before the first death'
            gone = ~env.masks
            if died is not None:
                assert gone[died].all() and (obs[gone] == 0).all() and (rewards[gone] == 0).all()
                break
            if terminals.any():
                died = np.flatnonzero(terminals)
                assert env.masks[died].all()
        assert died is not None
    finally:
        env.close()


def test_serial_and_multiprocessing_agree_under_a_seed():
    runs = []
    for backend in ('Serial', 'Multiprocessing'):
        with pufferlib.vector.make('magent2_battle', backend=backend, num_envs=2, num_workers=2,
                                   env_kwargs={'map_size': 15}) as vecenv:
            obs, _ = vecenv.reset(seed=9)
            seen = [obs.copy()]
            rng = np.random.default_rng(1)
            for _ in range(40):
                obs, rewards, _, _, _ = vecenv.step(rng.integers(0, 21, vecenv.num_agents).astype(vecenv.action_dtype))
                seen.append(np.concatenate([obs.ravel(), rewards.ravel(), vecenv.buffers.masks.ravel()]))
            runs.append(seen)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_teams_as_two_seats():
    env = pufferlib.make('magent2_battle', two_player=True, map_size=20)
    try:
        obs, _ = env.reset(seed=0)
        assert env.num_agents == 2 and env.single_action_space.nvec.tolist() == [21] * 12
        assert obs.shape == (2, 12, 13, 13, 5)
        rng = np.random.default_rng(0)
        for _ in range(20):
            _, rewards, _, _, _ = env.step(rng.integers(0, 21, (2, 12)))
            assert rewards[0] == pytest.approx(-rewards[1])  # zero-sum
    finally:
        env.close()


def test_a_league_arena_plays_team_against_team():
    pytest.importorskip('torch')
    from pufferlib.arena import Arena, NetworkPlayer, play_games
    vecenv = pufferlib.vector.make('magent2_battle', backend='Serial', num_envs=2,
                                   env_kwargs={'two_player': True, 'map_size': 12, 'max_cycles': 20})
    arena = Arena(vecenv, seed=0, name='magent2_battle')
    try:
        assert arena.seats == 2 and arena.games == 2
        policy = binding.Policy(arena)
        arena.set_opponents([NetworkPlayer(binding.Policy(arena))])
        results = play_games(arena, NetworkPlayer(policy), games=2, seed=0)
        assert results['games'].sum() == 2
    finally:
        arena.close()


def test_two_player_needs_two_mirror_teams():
    with pytest.raises(pufferlib.APIUsageError, match='magent2_battle, magent2_battlefield'):
        pufferlib.make('magent2_gather', two_player=True)


def test_missing_package_is_one_line(monkeypatch):
    assert_missing_extra_is_one_line(monkeypatch, 'magent2', 'magent2', 'magent2_battle')


def test_training_smoke(tmp_path, monkeypatch):
    pytest.importorskip('torch')
    monkeypatch.chdir(tmp_path)
    train_briefly('magent2_battle', '--vec.num-envs', '2', '--vec.num-workers', '2', '--train.minibatch-size', '256',
                  '--env.map-size', '15', steps=1024)


def test_names_are_the_bound_tasks():
    assert set(SHAPES) <= set(binding.env_names())


def test_against_a_random_team_the_rows_are_red():
    env = pufferlib.make('magent2_battle', random_opponent=True, map_size=20, max_cycles=12)
    try:
        obs, _ = env.reset(seed=0)
        assert env.num_agents == 12 and obs.shape == (12, 13, 13, 5)
        assert env.env.possible_agents == [f'red_{i}' for i in range(12)]
        rng = np.random.default_rng(0)
        episodes = []
        for _ in range(30):
            _, _, _, truncations, infos = env.step(rng.integers(0, 21, 12))
            if infos:  # a battle of random teams ends at max_cycles: the red agents left are truncated
                assert truncations.sum() == infos[0]['survivors'] > 0
            episodes += infos
        assert len(episodes) == 2
        for stats in episodes:
            assert stats['episode_length'] == 12 and stats['perf'] in (0.0, 0.5, 1.0)
            assert stats['survivors'] == 12 - stats['deaths'] and stats['opponent_survivors'] == 12 - stats['kills']
            assert stats['perf'] == (np.sign(stats['survivors'] - stats['opponent_survivors']) + 1) / 2
    finally:
        env.close()


def test_the_random_team_is_seeded():
    """Blue's moves come from a generator seeded by reset(seed): one seed, one battle; another seed, another."""
    def battle(seed):
        env = pufferlib.make('magent2_battle', random_opponent=True, map_size=20)
        try:
            seen = [env.reset(seed=seed)[0].copy()]
            for _ in range(20):
                seen.append(env.step(np.zeros(12, np.int64))[0].copy())  # red stands still: only blue moves
            return np.stack(seen)
        finally:
            env.close()
    np.testing.assert_array_equal(battle(4), battle(4))
    assert not np.array_equal(battle(4), battle(5))


class _Battle:
    """A stand-in for a MAgent2 battle whose blue side dies at `wipe_at` while the env plays on, as an
    engine may: the wrapper must end the battle there, a win."""

    def __init__(self, wipe_at):
        from gymnasium import spaces
        self.possible_agents = ['red_0', 'red_1', 'blue_0', 'blue_1']
        self.wipe_at, self.t, self.agents = wipe_at, 0, []
        self.handles = [0, 1]
        self.env = self  # what the wrapper reads the team counts from: raw.env.get_num(handle)
        self._obs = spaces.Box(0.0, 1.0, (3, 3, 1), np.float32)
        self._act = spaces.Discrete(4)

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._act

    def get_num(self, handle):
        return sum(a.startswith(('red', 'blue')[handle]) for a in self.agents)

    def reset(self, seed=None, options=None):
        self.t, self.agents = 0, list(self.possible_agents)
        return {a: np.zeros((3, 3, 1), np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), 'every live agent moves, blue too'
        self.t += 1
        before = list(self.agents)
        if self.t == self.wipe_at:
            self.agents = ['red_0', 'red_1']
        done = {a: a not in self.agents for a in before}
        return ({a: np.zeros((3, 3, 1), np.float32) for a in before}, {a: 0.0 for a in before}, done,
                {a: False for a in before}, {a: {} for a in before})

    def close(self):
        pass


def test_a_battle_ends_when_blue_is_wiped_out():
    wrapper = binding.RandomOpponent(_Battle(wipe_at=3))
    wrapper.reset(seed=0)
    assert wrapper.agents == ['red_0', 'red_1']
    for _ in range(2):
        wrapper.step({'red_0': 0, 'red_1': 0})
        assert wrapper.agents == ['red_0', 'red_1'] and not wrapper.outcome
    _, _, terminations, _, _ = wrapper.step({'red_0': 0, 'red_1': 0})
    assert terminations == {'red_0': True, 'red_1': True} and wrapper.agents == []
    assert wrapper.outcome['perf'] == 1.0 and wrapper.outcome['kills'] == 2 and wrapper.outcome['deaths'] == 0


@pytest.mark.parametrize('options, match', [
    ({'name': 'magent2_gather', 'random_opponent': True}, 'magent2_battle, magent2_battlefield'),
    ({'name': 'magent2_battle', 'random_opponent': True, 'two_player': True}, 'exclude each other'),
    ({'name': 'magent2_battle', 'random_opponent': 'yes'}, 'random_opponent must be true or false'),
])
def test_random_opponent_errors(options, match):
    with pytest.raises(pufferlib.APIUsageError, match=match):
        pufferlib.make(**options)


def test_training_against_the_random_team_logs_who_won(tmp_path, monkeypatch):
    pytest.importorskip('torch')
    monkeypatch.chdir(tmp_path)
    summary = train_briefly('magent2_battle', '--env.random-opponent', 'true', '--env.max-cycles', '16',
                            '--vec.num-envs', '2', '--vec.num-workers', '2', '--train.minibatch-size', '256',
                            steps=1024)
    assert 0.0 <= summary['episodes']['env/perf'] <= 1.0 and 'env/kills' in summary['episodes']
