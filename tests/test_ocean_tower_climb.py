"""puffer_tower_climb: its rules one by one against a reference written here from the rules as documented
(not from the C), the generated levels (solvable: the autopilot's plan is checked by an independent search
here), the scripted baseline and the options. tests/test_ocean.py covers the contract (spaces,
determinism, rendering, logs, wild actions) for it like for every env."""
from collections import deque

import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import tower_climb as tc

import ocean_play

SIDE = tc.SIDE


def make(num_envs=4, seed=0, **kwargs):
    return pufferlib.make('puffer_tower_climb', num_envs=num_envs, seed=seed, **kwargs)


def inside(z, x):
    return 0 <= z < SIDE and 0 <= x < SIDE


def held(blocks, y, z, x):
    """Whether a block at (y, z, x) rests: on the ground layer, on a block below or beside one below."""
    return y == 0 or any((y - 1, z + dz, x + dx) in blocks for dz, dx in ((0, 0), (0, 1), (0, -1), (1, 0), (-1, 0)))


def settle(blocks, goal, climber):
    """Unsupported blocks fall a floor at a time, each floor from the lowest up in turn (so a block falls
    as soon as the floor below is settled for that round), until every one rests: (blocks, crushed,
    whether any fell)."""
    fell, blocks = False, set(blocks)
    while True:
        moved = False
        for y in range(1, 1 + max(b[0] for b in blocks)):
            loose = {b for b in blocks if b[0] == y and b != goal and not held(blocks, *b)}
            blocks = (blocks - loose) | {(y - 1, z, x) for _, z, x in loose}
            moved = moved or bool(loose)
        fell = fell or moved
        if not moved:
            return frozenset(blocks), False, fell
        if climber in blocks:
            return frozenset(blocks), True, fell


def rule_step(s, a):
    """The reference rules: (next state or None when refused, what happened, died)."""
    y, z, x = s.climber
    f = s.facing
    dx, dz = tc.DIRECTIONS[f]
    top = s.floors - 1
    b = s.blocks
    if s.hanging:  # holding the top edge of (y, z + dz, x + dx)
        if a == tc.GRAB:
            return None, 'hang: grab refused', False
        if a == tc.DROP:
            for yy in range(y - 1, -1, -1):
                if (yy, z, x) in b:
                    return s._replace(climber=(yy + 1, z, x), hanging=False), 'let go and land', False
            return None, 'let go into the void', True
        if a == f:
            if y >= top or (y + 1, z, x) in b or (y + 1, z + dz, x + dx) in b:
                return None, 'climb up from hanging refused', False
            return s._replace(climber=(y + 1, z + dz, x + dx), hanging=False), 'climb up from hanging', False
        if a == (f + 2) % 4:
            return None, 'hang: away refused', False
        sx, sz = x + tc.DIRECTIONS[a][0], z + tc.DIRECTIONS[a][1]
        if not inside(sz, sx):
            return None, 'shimmy off the grid refused', False
        if (y, sz, sx) in b:
            if (y + 1, sz, sx) in b:
                return None, 'inside corner refused', False
            return s._replace(facing=a), 'inside corner', False
        wx, wz = sx + dx, sz + dz
        if (y, wz, wx) in b:
            if (y + 1, wz, wx) in b:
                return None, 'shimmy refused', False
            return s._replace(climber=(y, sz, sx)), 'shimmy', False
        if not inside(wz, wx):
            return None, 'outside corner off the grid refused', False
        return s._replace(climber=(y, wz, wx), facing=(a + 2) % 4), 'outside corner', False
    if a == tc.DROP:
        return None, 'drop while standing refused', False
    ahead = (y, z + dz, x + dx)
    if a == tc.GRAB:
        if s.holding:
            return s._replace(holding=False), 'let go of the block', False
        if not inside(ahead[1], ahead[2]) or ahead not in b or ahead == s.goal:
            return None, 'grab refused', False
        return s._replace(holding=True), 'grab', False
    if s.holding:
        if a == f:
            row, (cy, cz, cx) = [], ahead
            while inside(cz, cx) and (cy, cz, cx) in b:
                if (cy, cz, cx) == s.goal:
                    return None, 'push the goal refused', False
                row.append((cy, cz, cx))
                cz, cx = cz + dz, cx + dx
            if not inside(cz, cx):
                return None, 'push off the grid refused', False
            moved = (b - set(row)) | {(cy, r[1] + dz, r[2] + dx) for r in row}
            moved, crushed, fell = settle(moved, s.goal, s.climber)
            kind = 'push a row' if len(row) > 1 else 'push'
            return s._replace(blocks=moved, holding=False), kind + (' and blocks fall' if fell else ''), crushed
        if a == (f + 2) % 4:
            back = (y, z - dz, x - dx)
            if not inside(back[1], back[2]) or back in b or (y - 1, back[1], back[2]) not in b:
                return None, 'pull refused', False
            moved, crushed, fell = settle((b - {ahead}) | {s.climber}, s.goal, back)
            return s._replace(blocks=moved, climber=back), 'pull' + (' and blocks fall' if fell else ''), crushed
        return s._replace(facing=a, holding=False), 'turn lets go', False
    if a != f:
        return s._replace(facing=a), 'turn', False
    if not inside(ahead[1], ahead[2]):
        return None, 'walk off the grid refused', False
    if ahead in b:
        if y >= top or (y + 1, z, x) in b or (y + 1, ahead[1], ahead[2]) in b:
            return None, 'climb refused', False
        return s._replace(climber=(y + 1, ahead[1], ahead[2])), 'climb', False
    if (y - 1, ahead[1], ahead[2]) in b:
        return s._replace(climber=ahead), 'walk', False
    if (y - 2, ahead[1], ahead[2]) in b:
        return s._replace(climber=(y - 1, ahead[1], ahead[2])), 'step down', False
    return s._replace(climber=(y - 1, ahead[1], ahead[2]), facing=(f + 2) % 4, hanging=True), 'step off and hang', False


def at_goal(s):
    return not s.hanging and s.climber == (s.goal[0] + 1, s.goal[1], s.goal[2])


def biased_actions(rng, n):
    """Random play that grabs and pushes more often than uniform play, so every rule comes up."""
    return rng.choice(6, n, p=[0.17, 0.17, 0.17, 0.17, 0.22, 0.10]).astype(np.int32)


COMMON = ['turn', 'walk', 'climb', 'step off and hang', 'climb up from hanging', 'shimmy', 'grab', 'push',
          'pull', 'turn lets go', 'let go into the void', 'death', 'limit']
EVERY = COMMON + ['step down', 'inside corner', 'outside corner', 'let go and land', 'let go of the block',
                  'push a row', 'push and blocks fall', 'climb refused', 'grab refused', 'pull refused']


@pytest.mark.parametrize('num_envs,steps,must', [
    (8, 300, COMMON), pytest.param(16, 1000, EVERY, marks=pytest.mark.slow)])
def test_tower_climb_moves_follow_the_rules_one_by_one(num_envs, steps, must):
    rc, rb, ri, rd = 0.25, 0.2, -0.01, -0.5
    env = make(num_envs=num_envs, height=3, min_moves=1, reward_climb=rc, reward_block=rb, reward_illegal=ri,
               reward_death=rd, replays=4)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    seen = {}
    best = [tc.level(env, i).climber[0] for i in range(env.num_agents)]
    for _ in range(steps):
        before = [tc.level(env, i) for i in range(env.num_agents)]
        actions = biased_actions(rng, env.num_agents)
        _, rewards, terminals, truncations, _ = env.step(actions)
        for i, s in enumerate(before):
            nxt, kind, died = rule_step(s, int(actions[i]))
            seen[kind] = seen.get(kind, 0) + 1
            want = ri if nxt is None and not died else rb if kind.startswith(('push', 'pull')) and not died else 0.0
            want += rd if died else 0.0
            won = nxt is not None and not died and at_goal(nxt)
            if nxt is not None and not died and not nxt.hanging and nxt.climber[0] > best[i]:
                want += rc * (nxt.climber[0] - best[i])
                best[i] = nxt.climber[0]
            want += 1.0 if won else 0.0
            assert rewards[i] == pytest.approx(want), (kind, s)
            assert terminals[i] == (died or won), (kind, s)
            assert truncations[i] == (not (died or won) and s.step + 1 >= 60)
            seen['goal'] = seen.get('goal', 0) + won
            seen['death'] = seen.get('death', 0) + died
            seen['limit'] = seen.get('limit', 0) + int(truncations[i])
            if terminals[i] or truncations[i]:
                best[i] = tc.level(env, i).climber[0]
                continue
            after = tc.level(env, i)
            want_state = (nxt or s)._replace(step=s.step + 1)
            assert after == want_state, (kind, s, after)
    missing = [k for k in must if not seen.get(k)]
    assert not missing, (missing, seen)


def test_tower_climb_blocks_rest_on_an_edge_and_fall_without_one():
    # The support rule itself, on hand-made piles (the reference above is what the C is checked against).
    assert held({(0, 3, 3)}, 1, 3, 4)                       # edge support: the block diagonally below
    assert not held({(0, 3, 3)}, 1, 4, 4)                   # a corner is no support
    stairs = frozenset({(0, 3, 3), (1, 3, 4), (2, 3, 5), (3, 3, 6)})
    assert settle(stairs, None, (9, 9, 9)) == (stairs, False, False)  # each step rests on the last's edge
    blocks, crushed, fell = settle(stairs - {(1, 3, 4)}, None, (9, 9, 9))
    assert fell and not crushed and blocks == {(0, 3, 3), (0, 3, 5), (1, 3, 6)}
    _, crushed, _ = settle(frozenset({(0, 3, 3), (2, 5, 5)}), None, (1, 5, 5))
    assert crushed


def shortest_plan(s, limit):
    """Fewest actions from state `s` to the goal by the reference rules, deaths excluded (an independent
    breadth-first search); None when there is none within `limit`."""
    def key(st):
        return st.blocks, st.climber, st.facing, st.hanging, st.holding

    depth = {key(s): 0}
    queue = deque([s])
    while queue:
        st = queue.popleft()
        d = depth[key(st)]
        if d >= limit:
            continue
        for a in range(6):
            nxt, _, died = rule_step(st, a)
            if nxt is None or died:
                continue
            if at_goal(nxt):
                return d + 1
            if key(nxt) not in depth:
                depth[key(nxt)] = d + 1
                queue.append(nxt)
    return None


def test_tower_climb_autopilot_plans_are_as_short_as_an_independent_search():
    env = make(num_envs=6, height=3, min_moves=5, autopilot=True, replays=1)
    env.reset(seed=11)
    starts = [tc.level(env, i) for i in range(env.num_agents)]
    lengths = [None] * env.num_agents
    for t in range(60):
        _, _, terminals, _, _ = env.step(np.zeros(env.num_agents, np.int32))
        for i in np.flatnonzero(terminals):
            if lengths[i] is None:
                lengths[i] = t + 1
    for s, n in zip(starts, lengths):
        assert n is not None and n >= 5
        assert shortest_plan(s, 60) == n


@pytest.mark.parametrize('height,min_moves', [(2, 1), (4, 8), (5, 10)])
def test_tower_climb_autopilot_solves_every_level(height, min_moves):
    env = make(num_envs=16, height=height, min_moves=min_moves, autopilot=True, replays=2)
    means = ocean_play.episode_means(ocean_play.episode_logs(env, lambda obs, t: np.zeros(16, np.int32), 300))
    assert means['perf'] == 1.0 and means['n'] >= 50
    assert means['episode_length'] >= min_moves


def test_tower_climb_levels_are_settled_hills_with_the_goal_on_top():
    env = make(num_envs=24, height=4, replays=1)
    env.reset(seed=5)
    for i in range(env.num_agents):
        s = tc.level(env, i)
        assert s.floors == 6 and s.goal[0] == 4 and (3, s.goal[1], s.goal[2]) in s.blocks
        assert s.climber[0] == 1 and (0, s.climber[1], s.climber[2]) in s.blocks and not s.hanging
        assert settle(s.blocks, s.goal, s.climber)[2] is False  # nothing left to fall


def test_tower_climb_harder_options_need_longer_plans():
    short, long_ = (ocean_play.episode_means(ocean_play.episode_logs(
        make(num_envs=16, autopilot=True, replays=1, **o), lambda obs, t: np.zeros(16, np.int32), 200))
        ['episode_length'] for o in ({'height': 2, 'min_moves': 1}, {'height': 5, 'min_moves': 10}))
    assert long_ > short + 3


def test_tower_climb_observes_the_window_around_the_climber():
    env = make(num_envs=8, replays=1)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(4)
    for _ in range(40):
        for i in range(env.num_agents):
            s = tc.level(env, i)
            y, z, x = s.climber
            solid, goal = obs[i, :245].reshape(5, 7, 7), obs[i, 245:490].reshape(5, 7, 7)
            for dy in range(-2, 3):
                for dz in range(-3, 4):
                    for dx in range(-3, 4):
                        c = (y + dy, z + dz, x + dx)
                        want = (0 if not 0 <= c[0] < s.floors else 1 if not inside(c[1], c[2]) else
                                int(c in s.blocks))
                        assert solid[dy + 2, dz + 3, dx + 3] == want
                        assert goal[dy + 2, dz + 3, dx + 3] == (c == s.goal)
            tail = obs[i, 490:]
            assert list(tail[:4]) == [int(s.facing == d) for d in range(4)]
            assert (tail[4], tail[5]) == (s.hanging, s.holding)
            assert list(tail[6:]) == [s.goal[2] - x, s.goal[1] - z, s.goal[0] - y]
        obs = env.step(biased_actions(rng, env.num_agents))[0]


def test_tower_climb_a_level_is_replayed_then_replaced():
    env = make(num_envs=1, replays=3, autopilot=True)
    env.reset(seed=9)
    starts = []
    for _ in range(200):
        s = tc.level(env, 0)
        if s.step == 0 and (not starts or starts[-1] != s):
            starts.append(s)
        env.step(np.zeros(1, np.int32))
    firsts = [s.blocks for s in starts]
    assert len(firsts) >= 3 and firsts[0] != firsts[1]


def test_tower_climb_autopilot_beats_random_play():
    scripted = ocean_play.episode_means(ocean_play.episode_logs(
        make(num_envs=16, autopilot=True), lambda obs, t: np.zeros(16, np.int32), 400))
    rng = np.random.default_rng(0)
    rand = ocean_play.episode_means(ocean_play.episode_logs(
        make(num_envs=16), lambda obs, t: rng.integers(0, 6, 16, dtype=np.int32), 400))
    assert scripted['perf'] == 1.0 and rand['perf'] < 0.1


def test_tower_climb_refuses_options_out_of_range_with_one_error():
    with pytest.raises(pufferlib.PufferError, match=r'height=7 is outside \[2, 6\]'):
        make(height=7)
    with pytest.raises(pufferlib.PufferError, match='min_moves must leave the solution room within max_steps'):
        make(min_moves=20, max_steps=19)
    with pytest.raises(pufferlib.PufferError, match='max_steps=65 is outside'):
        make(max_steps=65)
    with pytest.raises(pufferlib.PufferError, match='replays=0 is outside'):
        make(replays=0)
    with pytest.raises(pufferlib.PufferError, match=r'reward_climb=11 is outside \[-10, 10\]'):
        make(reward_climb=11.0)
