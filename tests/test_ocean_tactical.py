"""puffer_tactical: the moves, ranges, line of sight, damage and rewards checked step by step against the map
the env prints, the ends of a battle, the scripted squads against random play, and the option errors.
tests/test_ocean.py covers the contract (spaces, determinism, rendering, logs, wild actions) like for every
env."""
import numpy as np
import pytest

import pufferlib

import ocean_play

SOLDIER_HP, ARCHER_HP, SOLDIER_DAMAGE, ARCHER_DAMAGE, ARCHER_RANGE = 12, 8, 4, 3, 4
MOVES = [(0, 0), (0, -1), (0, 1), (-1, 0), (1, 0)]


def make(num_envs=1, seed=0, **kwargs):
    return pufferlib.make('puffer_tactical', num_envs=num_envs, seed=seed, **kwargs)


def board(env):
    """The printed map as rows of characters: . ground, ~ water, # wall, s a ours, S A theirs."""
    return env.render_text(index=0).splitlines()[1:]


def units(obs, n, width, height):
    """(x, y, hp, archer, alive) of our units and theirs, in order, from one observation row."""
    side = max(width, height)
    x0, y0 = round(obs[2] * width), round(obs[3] * height)
    ours, theirs, at = [], [], 5
    for group, size in ((ours, 5), (theirs, 6)):
        for _ in range(n):
            alive, dx, dy, hp, archer = obs[at:at + 5]
            maxhp = ARCHER_HP if archer else SOLDIER_HP
            group.append((x0 + round(dx * side), y0 + round(dy * side), round(hp * maxhp), int(archer), int(alive)))
            at += size
    return (x0, y0), ours, theirs


def sight(rows, x0, y0, x1, y1):
    """No wall strictly between the two cells on the Bresenham line."""
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err, x, y = dx + dy, x0, y0
    while (x, y) != (x1, y1):
        if (x, y) != (x0, y0) and rows[y][x] == '#':
            return False
        e2 = 2 * err
        if e2 >= dy:
            err, x = err + dy, x + sx
        if e2 <= dx:
            err, y = err + dx, y + sy
    return True


def expected_mask(rows, me, archer, theirs):
    mask = np.zeros(5 * (1 + len(theirs)), bool)
    for m, (dx, dy) in enumerate(MOVES):
        x, y = me[0] + dx, me[1] + dy
        if m and not (0 <= y < len(rows) and 0 <= x < len(rows[0]) and rows[y][x] == '.'):
            continue
        mask[m] = True
        for j, (tx, ty, _, _, alive) in enumerate(theirs):
            d = abs(tx - x) + abs(ty - y)
            hit = d == 1 if not archer else d <= ARCHER_RANGE and sight(rows, x, y, tx, ty)
            mask[(1 + j) * 5 + m] = bool(alive and hit)
    return mask


@pytest.mark.parametrize('seed', [0, 1])
def test_moves_ranges_sight_damage_and_rewards_step_by_step(seed):
    """Random legal play: every mask matches the rules worked out from the printed map, every attack takes
    the attacker's damage off its target, and every reward is the damage balance plus the end's +-1."""
    width, height, n, shaping = 8, 9, 3, 0.5
    env = make(width=width, height=height, units=n, walls=0.25, water=0.1, damage_reward=shaping)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    hp_total = SOLDIER_HP * ((n + 1) // 2) + ARCHER_HP * (n // 2)
    counts = {'attacks': 0, 'sight_blocked': 0, 'wins': 0, 'losses': 0}
    for _ in range(700):
        rows = board(env)
        me, ours, theirs = units(obs[0], n, width, height)
        archer = int(obs[0, 0])
        mask = env.action_masks[0]
        np.testing.assert_array_equal(mask, expected_mask(rows, me, archer, theirs))
        for tx, ty, _, _, alive in theirs:
            d = abs(tx - me[0]) + abs(ty - me[1])
            counts['sight_blocked'] += bool(archer and alive and d <= ARCHER_RANGE and not sight(rows, *me, tx, ty))
        legal = np.flatnonzero(mask)
        attacks = legal[legal >= 5]
        action = int(rng.choice(attacks if len(attacks) and rng.random() < 0.8 else legal))
        obs, rewards, terminals, truncations, _ = env.step(np.array([action], np.int32))
        target = action // 5 - 1
        dealt = 0
        if target >= 0:
            dealt = min(ARCHER_DAMAGE if archer else SOLDIER_DAMAGE, theirs[target][2])
            counts['attacks'] += 1
        if terminals[0] or truncations[0]:
            won = rewards[0] > 0.5
            counts['wins' if won else 'losses'] += bool(terminals[0])
            if won:  # the battle ended on our hit: the balance is the hit alone
                assert rewards[0] == pytest.approx(1 + shaping * dealt / hp_total)
            continue
        _, ours_after, theirs_after = units(obs[0], n, width, height)
        if target >= 0:
            assert theirs_after[target][2] == theirs[target][2] - dealt
            assert theirs_after[target][4] == int(theirs_after[target][2] > 0)
        taken = sum(a[2] - b[2] for a, b in zip(ours, ours_after, strict=True))
        assert taken >= 0 and rewards[0] == pytest.approx(shaping * (dealt - taken) / hp_total)
    assert min(counts.values()) > 0, counts


def test_battles_start_on_opposite_rows_of_a_symmetric_map():
    starts = set()
    for seed in range(20):
        env = make(width=10, height=9, units=4, walls=0.3, water=0.3)
        obs, _ = env.reset(seed=seed)
        rows = board(env)
        terrain = ['.' if c in 'sSaA' else c for c in ''.join(rows)]
        assert terrain == terrain[::-1]  # point-symmetric through the centre
        _, ours, theirs = units(obs[0], 4, 10, 9)
        assert [u[4] for u in ours + theirs] == [1] * 8 and [u[3] for u in ours] == [0, 1, 0, 1]
        assert {u[1] for u in ours} == {8}
        # theirs start mirrored through the centre; when they move first they have taken a step already
        moved = [abs(u[0] - (9 - o[0])) + abs(u[1] - (8 - o[1])) for u, o in zip(theirs, ours, strict=True)]
        assert set(moved) <= {0, 1}
        starts.add(max(moved))
    assert starts == {0, 1}  # who moves first varies


def test_a_battle_ends_when_a_squad_is_gone():
    """Wins pay +1 and end the episode terminal with perf 1; the scripted squads win about half of their
    battles against the same rules (they are mirror images), and random legal play almost none."""
    env = make(num_envs=32, autopilot=True)
    logs = ocean_play.episode_logs(env, lambda obs, t: np.zeros(32, np.int32), 2000)
    scripted = ocean_play.episode_means(logs)
    rng = np.random.default_rng(0)
    env = make(num_envs=16)

    def random_legal(obs, t):  # a uniform draw among each row's legal actions
        scores = rng.random(env.action_masks.shape) * env.action_masks
        return scores.argmax(1).astype(np.int32)
    rand = ocean_play.episode_means(ocean_play.episode_logs(env, random_legal, 1500))
    print(f"tactical wins: scripted {scripted['perf']:.3f}, random legal {rand['perf']:.3f}")
    assert 0.35 < scripted['perf'] < 0.65 and scripted['n'] > 1000
    assert rand['perf'] < 0.05 and rand['score'] < scripted['score']


def test_a_battle_nobody_wins_is_a_draw_at_max_rounds():
    env = make(max_rounds=3, damage_reward=0.0)
    env.reset(seed=0)
    for step in range(12):  # 4 units stay put and never attack: 3 rounds of 4 steps
        _, rewards, terminals, truncations, _ = env.step(np.zeros(1, np.int32))
        assert rewards[0] == 0 and not terminals[0]
        assert truncations[0] == (step == 11)
    log = env.log()
    assert log['n'] == 1 and log['perf'] == 0 and log['episode_length'] == 12


def test_refuses_options_out_of_range_with_one_error():
    with pytest.raises(pufferlib.PufferError, match='units=7 is outside \\[1, 6\\]'):
        make(units=7)
    with pytest.raises(pufferlib.PufferError, match='width=5 is outside'):
        make(width=5)
    with pytest.raises(pufferlib.PufferError, match='walls=0.75 is outside'):
        make(walls=0.75)
