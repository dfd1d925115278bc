"""puffer_mmo's two-team mode (two_player=True): each world's two teams as two rows, the seats that
`puffer league` plays, and a tiny league on it."""
import json
import os

import numpy as np
import pytest
import torch

import pufferlib
from pufferlib.ocean import mmo

ROW = 2 * mmo.CROP + mmo.ENTS * mmo.EFEAT + mmo.SELF
STAY = np.zeros(4 * 8, np.int32)  # 16 agents: two teams of 8


def make(num_envs=4, seed=0, **kwargs):
    return pufferlib.make('puffer_mmo', num_envs=num_envs, seed=seed, two_player=True, **kwargs)


def test_each_world_is_two_team_rows_of_its_agents():
    env = make(num_envs=3, horizon=40)
    assert env.num_agents == 6 and env.agents_per_env == 2
    assert env.single_observation_space.shape == (8 * ROW,) and env.single_action_space.shape == (32,)
    assert env.action_masks.shape == (6, 8 * sum(mmo.NVEC))
    rng = np.random.default_rng(0)
    ends = []
    for t in range(100):
        obs, rewards, terminals, truncations, _ = env.step(rng.integers(0, 3, env.actions.shape))
        agent = env._agent
        np.testing.assert_array_equal(obs, agent.observations.reshape(6, -1))
        np.testing.assert_array_equal(env.action_masks, agent.action_masks.reshape(6, -1))
        team = agent.rewards.reshape(3, 2, 8).sum(2)
        np.testing.assert_allclose(rewards.reshape(3, 2), team - team[:, ::-1], atol=1e-6)
        np.testing.assert_array_equal(env.masks, agent.masks.reshape(6, 8).any(1))
        assert not terminals.any()  # agents respawn: a world ends only at the horizon
        if truncations.any():
            ends.append(t)
            assert truncations.all()
    assert ends == [39, 79]


def test_a_world_where_every_agent_died_ends_both_rows_as_terminal():
    env = make(num_envs=8, respawn=False, horizon=1000, npcs=64)
    stay = np.zeros(env.actions.shape, np.int32)
    wiped = 0
    for _ in range(250):  # standing still, most die of hunger and thirst after about 100 ticks
        before = env._agent.masks.reshape(8, 16).copy()
        _, _, terminals, truncations, _ = env.step(stay)
        pairs = terminals.reshape(8, 2)
        assert not truncations.any() and (pairs[:, 0] == pairs[:, 1]).all()
        for world in np.flatnonzero(pairs[:, 0]):
            wiped += 1
            assert before[world].any() and env._agent.masks.reshape(8, 16)[world].all()  # a new world
    assert wiped >= 2


def test_the_team_policy_is_the_agent_policy_per_member():
    from pufferlib import config as configuration
    from pufferlib.models import make_policy
    from pufferlib.distributions import sample_logits
    teams, single = make(num_envs=2), pufferlib.make('puffer_mmo', num_envs=1, seed=0)
    config = configuration.load('puffer_mmo')
    policy, agent_policy = make_policy(teams, config), make_policy(single, config)
    agent_policy.load_state_dict(policy.state_dict())
    obs = torch.from_numpy(teams.observations.copy())
    with torch.no_grad():
        logits, value = policy(obs)
        agent_logits, agent_value = agent_policy(obs.reshape(-1, ROW))
    assert len(logits) == 32 and value.shape == (4,)
    for member in range(8):
        for part in range(4):
            torch.testing.assert_close(logits[4 * member + part], agent_logits[part][member::8])
    torch.testing.assert_close(value, agent_value.reshape(4, 8).sum(1))
    action, _, _ = sample_logits(logits, mask=torch.from_numpy(teams.action_masks))
    assert action.shape == (4, 32)
    teams.step(action.numpy())


def test_team_options_are_checked():
    with pytest.raises(pufferlib.APIUsageError, match='agents must be even'):
        make(agents=17, team_size=1)
    assert make(agents=18, team_size=4).single_action_space.shape == (36,)  # team_size is ignored


def test_a_tiny_league_on_mmo_writes_ratings(tmp_path):
    pytest.importorskip('scipy')
    pytest.importorskip('openskill')
    from pufferlib import league
    path = league.create('puffer_mmo', ['--league.method', 'fsp', '--league.iterations', '3',
                                        '--league.steps-per-iteration', '1024', '--league.num-envs', '4',
                                        '--league.eval-games', '4', '--train.bptt-horizon', '16',
                                        '--train.minibatch-size', '64', '--env.horizon', '32'], root=str(tmp_path))
    summary = league.League(path).run(printer=None)
    assert summary['iterations'] == 3
    with open(os.path.join(path, 'ledger.jsonl')) as f:
        rows = [r for r in map(json.loads, f) if r['type'] == 'iteration']
    assert rows[-1]['population'] == ['p000', 'p001', 'p002']
    payoffs = league.PayoffTable.from_dict(json.load(open(os.path.join(path, 'payoffs.json')))).matrix()
    assert payoffs.shape == (3, 3) and np.isfinite(payoffs).all()
    np.testing.assert_allclose(payoffs, -payoffs.T, atol=1e-6)  # the team rows' rewards are zero-sum
    board = open(os.path.join(path, 'leaderboard.txt')).read()
    assert all(name in board for name in ('p000', 'p001', 'p002'))
