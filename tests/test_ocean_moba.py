"""puffer_moba: its rules one by one, the scripted heroes against a random team, the two-team rows that
`puffer league` seats, and a tiny league on it."""
import json
import os

import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import moba

ROW = 2 * moba.CROP + moba.SELF
SELF = moba.layout()['self']
LANE_LO, LANE_HI = 2, moba.SIZE - 3


def make(num_envs=4, seed=0, **kwargs):
    return pufferlib.make('puffer_moba', num_envs=num_envs, seed=seed, **kwargs)


def terrain(x, y):
    """The map, written again from the docs: ground 0, the three lanes 1, off the map 2."""
    if not (0 <= x < moba.SIZE and 0 <= y < moba.SIZE):
        return moba.OFF
    inside = LANE_LO <= x <= LANE_HI and LANE_LO <= y <= LANE_HI
    on_lane = x in (LANE_LO, LANE_HI) or y in (LANE_LO, LANE_HI) or x + y == LANE_LO + LANE_HI
    return moba.LANE if inside and on_lane else moba.GROUND


def run(env, steps, actions=None, seed=0):
    """Step with random actions (or `actions`); return the logs and every step's arrays."""
    rng = np.random.default_rng(seed)
    logs, trace = [], []
    for _ in range(steps):
        act = actions if actions is not None else rng.integers(0, env.single_action_space.nvec, env.actions.shape)
        obs, rewards, terminals, truncations, infos = env.step(act)
        logs += infos
        trace.append((obs.copy(), rewards.copy(), terminals.copy(), truncations.copy(), env.masks.copy()))
    return logs, trace


def mean(logs, key):
    return float(np.mean([log[key] for log in logs if key in log]))


def test_rows_are_the_heroes_of_one_team_and_see_the_map_around_them():
    env = make(num_envs=2, heroes=3)
    assert env.num_agents == 6 and env.single_observation_space.shape == (ROW,)
    assert list(env.single_action_space.nvec) == [9, 6]
    obs, _ = env.reset(seed=1)
    crop = obs[0, :moba.CROP].reshape(moba.SIDE, moba.SIDE)
    x, y = LANE_LO, LANE_HI  # every hero starts on its ancient
    want = np.array([[terrain(x + c - moba.VIEW, y + r - moba.VIEW) for c in range(moba.SIDE)]
                     for r in range(moba.SIDE)])
    want[moba.VIEW, moba.VIEW] = moba.SELF_CODE  # over the ancient and the other heroes
    want[0, 10] = moba.ALLY_TOWER  # the inner mid tower, 5 tiles up the diagonal
    np.testing.assert_array_equal(crop, want)
    health = obs[0, moba.CROP:2 * moba.CROP].reshape(moba.SIDE, moba.SIDE)
    assert health[0, 10] == 10 and health[moba.VIEW, moba.VIEW] == 10 and health.sum() == 20
    assert obs[0, SELF][moba.HP] == 10 and obs[0, SELF][moba.LEVEL] == 1
    assert (obs[0, SELF][moba.X], obs[0, SELF][moba.Y]) == (x // 4, y // 4)
    assert obs[0, SELF][moba.ALLY_TOWERS] == 6 and obs[0, SELF][moba.ENEMY_TOWERS] == 6


def test_the_second_team_sees_the_same_game_turned_half_a_turn():
    env = make(num_envs=1, two_player=True)
    hero_obs = env._hero.observations
    env.reset(seed=3)
    np.testing.assert_array_equal(hero_obs[0], hero_obs[5])  # the start is symmetric: the same view
    # moving "up" in its own frame takes each hero towards its top lane, away from its base
    env.step(np.tile([1, 0], 10).reshape(2, 10))
    np.testing.assert_array_equal(hero_obs[0], hero_obs[5])
    units = hero_obs[0, :moba.CROP].reshape(moba.SIDE, moba.SIDE)
    assert units[moba.VIEW + 1, moba.VIEW] == moba.ALLY_ANCIENT  # one tile below the hero now


def test_the_scripted_team_beats_a_random_team_and_a_random_team_loses_to_it():
    logs, _ = run(make(num_envs=8, autopilot=True, opponent=1), 1500)
    assert mean(logs, 'score') >= 0.9 and mean(logs, 'perf') >= 0.85
    logs, _ = run(make(num_envs=8, opponent=0), 1500)
    assert mean(logs, 'score') == 0.0 and mean(logs, 'perf') < 0.2


def test_a_fallen_ancient_ends_the_game_for_every_row_and_pays_the_win_reward():
    env = make(num_envs=4, autopilot=True, opponent=2, reward_win=7.0, reward_tower=0.0, reward_kill=0.0,
               reward_death=0.0, reward_xp=0.0)
    logs, trace = run(env, 700)
    ends = 0
    for _, rewards, terminals, truncations, _ in trace:
        assert not truncations.any()
        games = terminals.reshape(4, 5)
        assert (games.all(1) | ~games.any(1)).all()  # a game ends on all its rows at once
        np.testing.assert_array_equal(rewards, np.where(terminals, 7.0, 0.0))
        ends += games.all(1).sum()
    assert ends >= 4 and mean(logs, 'score') == 1.0 and mean(logs, 'episode_return') == 7.0


def test_every_fallen_enemy_tower_pays_each_hero_and_the_ancient_waits_for_a_lane():
    env = make(num_envs=4, autopilot=True, opponent=2, reward_win=0.0, reward_tower=1.0, reward_kill=0.0,
               reward_death=0.0, reward_xp=0.0)
    logs, trace = run(env, 700)
    for obs, _, _, _, _ in trace:
        hit = obs[:, SELF][:, moba.ENEMY_ANCIENT_HP] < 10
        assert (obs[hit, SELF][:, moba.ENEMY_TOWERS] <= 4).all()  # a lane lost both its towers first
    assert mean(logs, 'episode_return') == mean(logs, 'towers') >= 2


def test_the_game_is_truncated_at_max_ticks_as_a_draw():
    logs, trace = run(make(num_envs=2, opponent=2, max_ticks=64), 128, actions=np.zeros((10, 2), np.int32))
    assert [t for t, step in enumerate(trace) if step[3].any()] == [63, 127]
    assert all(step[3].all() for step in trace if step[3].any())
    assert mean(logs, 'score') == 0.0 and mean(logs, 'episode_length') == 64


def test_a_dead_hero_is_masked_and_sees_only_its_respawn_timer():
    env = make(num_envs=8, opponent=0)
    _, trace = run(env, 600)
    dead = 0
    for obs, _, _, _, masks in trace:
        for row in np.flatnonzero(~masks.astype(bool)):
            dead += 1
            assert obs[row, SELF][moba.RESPAWN] > 0
            assert not obs[row, :2 * moba.CROP].any()
        assert (obs[masks.astype(bool), SELF][:, moba.RESPAWN] == 0).all()
    assert dead > 0


def test_abilities_cost_mana_and_wait_for_their_cooldown():
    env = make(num_envs=1, heroes=1, opponent=2)
    env.reset(seed=0)
    heal = np.array([[0, 5]], np.int32)  # E heals the hero itself: always a legal cast, every 30 ticks
    cooldowns, mana = [], []
    for _ in range(40):
        obs, *_ = env.step(heal)
        cooldowns.append(int(obs[0, SELF][moba.E_CD]))
        mana.append(int(obs[0, SELF][moba.MANA]))
    # cast on the first tick and again when the cooldown is over: 29 ticks left (10 thirds), then 0 at tick 30
    assert cooldowns[0] == 10 and cooldowns[29] == 0 and cooldowns[30] == 10
    assert [t for t in range(1, 40) if cooldowns[t] > cooldowns[t - 1]] == [30]
    assert mana[0] == 7 and mana[29] == 9 and mana[30] == 6  # tenths, up: 100 - 40 + 1 = 61; 90; 90 - 40 + 1 = 51


def test_moba_options_out_of_range_are_refused_with_one_error():
    with pytest.raises(pufferlib.APIUsageError, match='heroes'):
        make(heroes=6)
    with pytest.raises(pufferlib.APIUsageError, match='opponent'):
        make(opponent=3)
    with pytest.raises(pufferlib.APIUsageError, match='wave_size'):
        make(wave_size=0)


def test_each_game_is_two_team_rows_of_its_heroes():
    env = make(num_envs=3, two_player=True, max_ticks=100)
    assert env.num_agents == 6 and env.agents_per_env == 2
    assert env.single_observation_space.shape == (5 * ROW,) and env.single_action_space.shape == (10,)
    rng = np.random.default_rng(0)
    ends = []
    for t in range(250):
        obs, rewards, terminals, truncations, _ = env.step(rng.integers(0, 6, env.actions.shape))
        hero = env._hero
        np.testing.assert_array_equal(obs, hero.observations.reshape(6, -1))
        team = hero.rewards.reshape(3, 2, 5).sum(2)
        np.testing.assert_allclose(rewards.reshape(3, 2), team - team[:, ::-1], atol=1e-5)
        np.testing.assert_array_equal(env.masks, hero.masks.reshape(6, 5).any(1))
        assert not terminals.any()  # random teams never take an ancient in 100 ticks
        if truncations.any():
            ends.append(t)
            assert truncations.all()
    assert ends == [99, 199]


@pytest.mark.slow
def test_a_tiny_league_on_moba_writes_ratings(tmp_path):
    pytest.importorskip('scipy')
    pytest.importorskip('openskill')
    from pufferlib import league
    path = league.create('puffer_moba', ['--league.method', 'fsp', '--league.iterations', '2',
                                         '--league.steps-per-iteration', '512', '--league.num-envs', '4',
                                         '--league.eval-games', '2', '--train.bptt-horizon', '16',
                                         '--train.minibatch-size', '64', '--env.max-ticks', '64'], root=str(tmp_path))
    summary = league.League(path).run(printer=None)
    assert summary['iterations'] == 2
    payoffs = league.PayoffTable.from_dict(json.load(open(os.path.join(path, 'payoffs.json')))).matrix()
    assert payoffs.shape == (2, 2) and np.isfinite(payoffs).all()
    np.testing.assert_allclose(payoffs, -payoffs.T, atol=1e-5)  # the team rows' rewards are zero-sum
