"""puffer_mmo's rules, checked from what an agent observes (tests/test_ocean.py covers the contract)."""
import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import mmo
from pufferlib.ocean import tools
from pufferlib.pufferenv import APIUsageError

L = mmo.layout()
TER, THI, ENT, SELF = L['terrain'], L['things'], L['entities'], L['self']
HP, FOOD, WATER, LVL, WSTYLE, WTIER, POTIONS, ITEM, STANCE, DEALT, TAKEN = 0, 1, 2, 3, 7, 8, 9, 10, 12, 13, 14
CENTRE = mmo.VIEW * mmo.SIDE + mmo.VIEW
NEIGHBOURS = (-mmo.SIDE, mmo.SIDE, -1, 1)  # up, down, left, right: moves 1..4
WALKABLE = (1, 2, 3, 6)
STAY = np.zeros(4, np.int32)


def make(num_envs=2, seed=0, **kwargs):
    return pufferlib.make('puffer_mmo', num_envs=num_envs, seed=seed, **kwargs)


def sample_legal(env, rng):
    """Actions drawn uniformly among what each row's action mask allows, part by part."""
    masks = env.action_masks
    actions = np.zeros((env.num_agents, 4), np.int32)
    at = 0
    for part, n in enumerate(mmo.NVEC):
        legal = masks[:, at:at + n].astype(float) + 1e-9 * (np.arange(n) == 0)
        p = legal / legal.sum(1, keepdims=True)
        actions[:, part] = (p.cumsum(1) < rng.random((env.num_agents, 1))).sum(1).clip(0, n - 1)
        at += n
    return actions


def entity_rows(obs):
    return obs[:, ENT].reshape(len(obs), mmo.ENTS, mmo.EFEAT)


def test_spec_checks_name_the_options():
    with pytest.raises(APIUsageError, match='multiple of team_size'):
        make(agents=18, team_size=4)
    with pytest.raises(APIUsageError, match='eighth of the map'):
        make(map_size=64, agents=1024, team_size=4, npcs=0)


def test_hunger_and_thirst_cost_health_and_kill():
    """Standing still, food and water fall by one a tick except where the agent eats or drinks; at 0
    each costs 5 health a tick; without respawn every agent dies and the episode starts over (even
    beside water on a forest: at the top foraging level a harvest gives 60 food, 64 ticks apart)."""
    env = make(num_envs=1, seed=3, npcs=0, respawn=False, horizon=4096)
    prev = env.observations.copy()
    dead = np.zeros(env.num_agents, bool)
    checked_hunger = checked_starving = 0
    for _ in range(4000):
        obs, _, term, trunc, _ = env.step(np.tile(STAY, (env.num_agents, 1)))
        assert not trunc.any()
        live = ~dead & ~term
        for i in np.flatnonzero(live):
            p, o = prev[i], obs[i]
            ate = p[TER][CENTRE] == 2
            drank = any(p[TER][CENTRE + d] == 4 for d in NEIGHBOURS)
            if not ate:
                assert o[SELF][FOOD] == max(int(p[SELF][FOOD]) - 1, 0)
                checked_hunger += 1
            if not drank:
                assert o[SELF][WATER] == max(int(p[SELF][WATER]) - 1, 0)
            food, water = int(o[SELF][FOOD]), int(o[SELF][WATER])
            hp = int(p[SELF][HP]) - 5 * (food == 0) - 5 * (water == 0) + (food > 50 and water > 50)
            assert int(o[SELF][HP]) == min(hp, 100)
            checked_starving += food == 0 or water == 0
        dead |= term
        if dead.all():
            break
        assert not obs[dead].any() and not env.masks[dead].any(), 'dead rows are zero and masked'
        prev = obs.copy()
    assert dead.all(), 'agents that never move must die of hunger or thirst'
    assert env.masks.all() and env.observations[:, SELF][:, HP].min() == 100, 'a fresh world after the last death'
    assert checked_hunger > 1000 and checked_starving > 10


def test_action_masks_match_the_observation():
    env = make(num_envs=4, seed=1, agents=32, team_size=4, npcs=64)
    rng = np.random.default_rng(0)
    seen = np.zeros(20, int)
    for _ in range(300):
        obs, *_ = env.step(sample_legal(env, rng))
        m = env.action_masks
        live = env.masks
        for i in np.flatnonzero(live):
            o, mi = obs[i], m[i]
            ter, thi = o[TER], o[THI]
            moves = [1] + [int(ter[CENTRE + d] in WALKABLE and thi[CENTRE + d] in (0, 5)) for d in NEIGHBOURS]
            assert list(mi[:5]) == moves
            rows = entity_rows(obs[i:i + 1])[0]
            foes = rows[(rows[:, 0] == 1) & (rows[:, 1] != 1)]
            styles = [1] + [int((foes[:, 7] <= mmo.RANGE[s]).any()) for s in (1, 2, 3)]
            assert list(mi[5:9]) == styles
            targets = (rows[:, 0] == 1) & (rows[:, 1] != 1) & (rows[:, 7] <= 3)
            expect = targets if targets.any() else np.arange(mmo.ENTS) == 0
            assert list(mi[9:9 + mmo.ENTS]) == list(expect.astype(int))
            assert list(mi[9 + mmo.ENTS:]) == [1, int(o[SELF][ITEM] > 0), int(o[SELF][POTIONS] > 0)]
        for i in np.flatnonzero(~live):
            assert not obs[i].any()
            assert list(np.flatnonzero(m[i])) == [0, 5, 9, 9 + mmo.ENTS]
        seen += m[live].sum(0)
    assert (seen > 0).all(), 'every action is legal somewhere'


def expected_damage(me, row, style):
    """The rule of mmo.h: (8 + 2 (level - 1) + 3 tier of a weapon of that style) * 3/2 against the
    stance the style beats, 1/2 against the stance that beats it (melee > range > magic > melee)."""
    base = 8 + 2 * (int(me[LVL + style - 1]) - 1) + (3 * int(me[WTIER]) if me[WSTYLE] == style else 0)
    stance = int(row[6])
    beats = lambda a, b: a != 0 and b == a % 3 + 1  # noqa: E731
    mult = 3 if beats(style, stance) else 1 if beats(stance, style) else 2
    return base * mult // 2, mult


def test_combat_follows_the_rock_paper_scissors_rule():
    """Only the first agent of each world attacks (its teammates stand still), so its damage dealt
    is exactly the rule's, capped by what the NPC had left."""
    env = make(num_envs=48, seed=2, agents=16, team_size=16, npcs=120, hostile=False, npc_max_level=10)
    rng = np.random.default_rng(1)
    first = np.arange(0, env.num_agents, 16)
    prev = env.observations.copy()
    mults, capped = set(), 0
    checked = 0
    for _ in range(400):
        actions = sample_legal(env, rng)
        others = np.setdiff1d(np.arange(env.num_agents), first)
        actions[others, 1] = 0
        actions[first, 3] = 0  # no weapon swap before the blow
        live = env.masks.copy()
        obs, _, term, _, _ = env.step(actions)
        for i in first[live[first] & ~term[first]]:
            style, slot = actions[i, 1], actions[i, 2]
            row = entity_rows(prev[i:i + 1])[0][slot]
            dealt = int(obs[i][SELF][DEALT])
            if style == 0 or row[0] == 0 or row[7] > mmo.RANGE[style]:
                assert dealt == 0
                continue
            assert row[1] in (3, 4, 5), 'the world has one team, so only NPCs are targets'
            expect, mult = expected_damage(prev[i][SELF], row, style)
            level = int(row[5])
            hp_left = int(row[4]) * (10 + 10 * level) // 100  # at least this much: percentages round down
            if expect <= hp_left:
                assert dealt == expect, (style, row, prev[i][SELF])
                mults.add(mult)
                checked += 1
            else:
                assert 0 < dealt <= expect + 1
                capped += 1
        prev = obs.copy()
    assert mults == {1, 2, 3} and checked > 200


def test_dead_rows_are_masked_then_respawn():
    delay = 5
    env = make(num_envs=4, seed=4, npcs=0, respawn_delay=delay)
    waiting = {}
    respawned = 0
    for _ in range(700):
        _, _, term, _, _ = env.step(np.tile(STAY, (env.num_agents, 1)))
        for i in list(waiting):
            waiting[i] -= 1
            if waiting[i] > 0:
                assert not env.masks[i] and not env.observations[i].any()
            else:
                assert env.masks[i], 'back after respawn_delay ticks'
                me = env.observations[i][SELF]
                assert me[HP] == 100 and me[FOOD] == 100 and me[WATER] == 100
                del waiting[i]
                respawned += 1
        for i in np.flatnonzero(term):
            assert not env.masks[i], 'masked from the step it dies on'
            waiting[i] = delay
    assert respawned > 10


def test_same_step_respawn_with_no_delay():
    env = make(num_envs=2, seed=4, npcs=0, respawn_delay=0)
    deaths = 0
    for _ in range(400):
        _, _, term, _, _ = env.step(np.tile(STAY, (env.num_agents, 1)))
        deaths += int(term.sum())
        assert env.masks.all()
        assert (env.observations[term][:, SELF][:, HP] == 100).all()
    assert deaths > 0


def test_horizon_truncates_live_agents_and_draws_a_new_world():
    env = make(num_envs=2, seed=5, horizon=50, autopilot=True)
    before = env.render_text()
    for t in range(1, 51):
        _, _, term, trunc, _ = env.step(np.tile(STAY, (env.num_agents, 1)))
        if t < 50:
            assert not trunc.any()
    assert trunc.sum() == (~term).sum() > 0
    assert env.render_text() != before
    log = env.log()
    assert log is not None and log['episode_length'] <= 50 and 0 < log['perf'] <= 1


def test_reward_terms_are_shaped_by_options():
    """Survival alone pays one per tick alive; death alone pays -1 per death and nothing else."""
    env = make(num_envs=4, seed=6, reward_survival=1.0, reward_explore=0.0, reward_combat=0.0, reward_skill=0.0,
               reward_death=0.0)
    pool = tools.random_actions(env.single_action_space, env.num_agents, 64, seed=0)
    for t in range(1500):
        env.step(pool[t % 64])
    log = env.log()
    assert log is not None and log['n'] > 20
    assert log['episode_return'] == pytest.approx(log['episode_length'], rel=1e-5)
    env = make(num_envs=4, seed=6, reward_survival=0.0, reward_explore=0.0, reward_combat=0.0, reward_skill=0.0,
               reward_death=-1.0, horizon=300)
    total, deaths = 0.0, 0
    for t in range(1500):
        _, rewards, term, _, _ = env.step(pool[t % 64])
        total += float(rewards.sum())
        deaths += int(term.sum())
        assert set(np.unique(rewards)) <= {0.0, -1.0}
    assert deaths > 0 and total == -deaths


TERMS = ('reward_survival', 'reward_explore', 'reward_combat', 'reward_skill', 'reward_death')


def test_reward_terms_are_logged_and_sum_to_the_return():
    """Every life's reward, split by term in the episode log: the terms' means add up to the mean return,
    report after report, and each term is there with its sign (deaths cost, the rest pay)."""
    env = make(num_envs=4, seed=12, horizon=200)
    rng = np.random.default_rng(0)
    reports = []
    for _ in range(1200):
        env.step(sample_legal(env, rng))
        log = env.log()
        if log is not None:
            reports.append(log)
    assert len(reports) > 20 and sum(log['n'] for log in reports) > 100
    for log in reports:
        assert list(log) == ['episode_return', 'episode_length', 'score', 'perf', *TERMS, 'n']
        assert sum(log[k] for k in TERMS) == pytest.approx(log['episode_return'], rel=1e-4, abs=1e-4)
    assert all(log['reward_death'] <= 0 <= log['reward_survival'] for log in reports)
    for term in TERMS:
        assert any(log[term] != 0 for log in reports), term


def test_reward_terms_reach_the_training_stats(experiments):
    """A tiny training run through workers: each term is an episode statistic of the run (env/<term>)
    in its summary and in every metrics row that has episodes."""
    from small_run import train_small

    from pufferlib import evaluate
    summary = train_small('puffer_mmo', '--env.num-envs', '1', '--env.horizon', '64', steps=8192)
    assert set(f'env/{k}' for k in TERMS) <= set(summary['episodes'])
    rows = [row for row in evaluate.read_metrics(summary['run_dir']) if 'env/episodes' in row]
    assert rows and all(f'env/{k}' in row for row in rows for k in TERMS)
    last = summary['episodes']
    assert sum(last[f'env/{k}'] for k in TERMS) == pytest.approx(last['env/episode_return'], rel=1e-3, abs=1e-3)


def lifetime(env, steps, policy=None):
    pool = tools.random_actions(env.single_action_space, env.num_agents, 64, seed=0)
    logs = []
    for t in range(steps):
        logs.extend(env.step(pool[t % 64] if policy is None else policy(env))[4])
    n = sum(log['n'] for log in logs)
    return sum(log['episode_length'] * log['n'] for log in logs) / n


def test_scripted_forager_outlives_random_play():
    scripted = lifetime(make(num_envs=8, seed=7, autopilot=True), 2048)
    random = lifetime(make(num_envs=8, seed=7), 2048)
    assert scripted > 2 * random, (scripted, random)


def test_worlds_follow_the_seed():
    a, b, c = make(seed=9), make(seed=9), make(seed=10)
    assert np.array_equal(a.render(), b.render()) and not np.array_equal(a.render(), c.render())
    for _ in range(3):
        a.reset(seed=11)
        b.reset(seed=11)
        assert np.array_equal(a.render(), b.render())


@pytest.mark.parametrize('size,agents', [(128, 128), (512, 1024)])
def test_large_worlds_run(size, agents):
    env = make(num_envs=1, seed=0, map_size=size, agents=agents, team_size=8, npcs=agents)
    pool = tools.random_actions(env.single_action_space, env.num_agents, 8, seed=0)
    for t in range(20):
        obs, *_ = env.step(pool[t % 8])
    assert env.masks.sum() > agents // 2 and (obs[:, SELF][:, HP] <= 100).all()
    assert env.render().shape[0] >= size and len(env.render_text()) > 96 * 96



def test_policy_configs_build_and_point_at_entity_rows():
    """Both configs build the env's policy at the advertised sizes. The target logits are a pointer over
    the entity rows: swapping two rows swaps their pointer scores and changes nothing else."""
    import os

    import torch

    from pufferlib import config as configuration
    from pufferlib.models import make_policy
    env = make(num_envs=2, seed=0)
    large = os.path.join(os.path.dirname(configuration.__file__), 'puffer_mmo_large.toml')
    sizes = {}
    for name, config in (('small', configuration.load('puffer_mmo')),
                         ('large', configuration.load('puffer_mmo', config_file=large))):
        policy = make_policy(env, config)
        sizes[name] = sum(p.numel() for p in policy.parameters())
        rows = torch.zeros(2, env.single_observation_space.shape[0], dtype=torch.uint8)
        a = torch.tensor([1, 3, 6, 5, 100, 2, 1, 1], dtype=torch.uint8)
        b = torch.tensor([1, 5, 3, 5, 50, 4, 2, 2], dtype=torch.uint8)
        at = ENT.start
        rows[0, at:at + 8], rows[0, at + 8:at + 16] = a, b
        rows[1, at:at + 8], rows[1, at + 8:at + 16] = b, a
        with torch.no_grad():
            (move, style, target, use), value = policy(rows)
        assert move.shape == (2, 5) and target.shape == (2, mmo.ENTS) and use.shape == (2, 3)
        torch.testing.assert_close(move[0], move[1])
        torch.testing.assert_close(value[0], value[1])
        torch.testing.assert_close(target[0, 2:], target[1, 2:])
        torch.testing.assert_close(target[0, :2].sum(), target[1, :2].sum())
        assert abs(float((target[0, 0] - target[0, 1]) - (target[1, 0] - target[1, 1]))) > 1e-7
    assert sizes['small'] < 200_000 and 1_000_000 < sizes['large'] < 3_000_000
