"""Ocean: the rules of puffer_enduro, puffer_tetris and puffer_rware.

tests/test_ocean.py runs the contract checks (determinism, spaces, clamping, rendering, logs,
sanitizers) on every env with its default options; here the same checks run on the option variants
that take other code paths (tetris moves, a larger warehouse with a wider view), then each
env's rules, and the scripted baselines (autopilot=True) that the acceptance targets of docs/ocean.md
compare against. Nothing here times anything; speed lives in scripts/lab/bench_ocean.py.
"""
import os

import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import tools
from pufferlib.pufferenv import APIUsageError
from test_ocean import assert_deterministic, rollout, rollout_raw
from test_ocean import test_sanitized_100k_random_steps as sanitized_run  # one body for both files

SANITIZED = bool(os.environ.get('PUFFER_OCEAN_LIB'))

# case -> (env, options): the defaults, and variants whose code paths the defaults do not take
CASES = {
    'enduro': ('enduro', {}),
    'tetris': ('tetris', {}),
    'rware': ('rware', {}),
    'tetris_moves': ('tetris', {'placement': False}),
    'rware_wide': ('rware', {'robots': 12, 'requests': 6, 'shelf_rows': 2, 'sight': 2, 'max_steps': 300}),
}
VARIANTS = ['tetris_moves', 'rware_wide']


def make(case, num_envs=2, seed=0, **kwargs):
    name, config = CASES.get(case, (case, {}))
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **{**config, **kwargs})


def episode_means(env, steps, actions=None, seed=1):
    """Means over the episodes finished in `steps` steps (random actions unless `actions` given)."""
    env.reset(seed=seed)
    pool = actions if actions is not None else tools.random_actions(env.single_action_space, env.num_agents, 64, seed)
    logs = []
    for t in range(steps):
        logs.extend(env.step(pool[t % len(pool)])[4])
    last = env.log()
    if last:
        logs.append(last)
    n = sum(log['n'] for log in logs)
    assert n > 0, f'no episode finished in {steps} steps'
    return {key: sum(log[key] * log['n'] for log in logs) / n for key in logs[0] if key != 'n'} | {'n': n}


# ---------------------------------------------------------------------------------------------
# The contract, on the variants
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('case', VARIANTS)
def test_variant_deterministic_under_a_seed_and_seeds_differ(case):
    assert_deterministic(lambda seed: make(case, num_envs=3, seed=seed), 2000)


@pytest.mark.parametrize('case', VARIANTS)
def test_variant_observations_stay_in_space_for_100k_random_steps(case):
    env = make(case, num_envs=8, seed=11)
    low, high = env.single_observation_space.low, env.single_observation_space.high
    pool = tools.random_actions(env.single_action_space, env.num_agents, 256, seed=5)
    obs, _ = env.reset(seed=11)
    assert (obs >= low).all() and (obs <= high).all()
    episodes = 0
    for t in range(100_000 // env.num_agents):
        obs, rewards, terminals, truncations, _ = env.step(pool[t % 256])
        if not ((obs >= low).all() and (obs <= high).all()):
            bad = tuple(np.argwhere((obs < low) | (obs > high))[0])
            pytest.fail(f'step {t}: obs{list(bad)} = {obs[bad]} outside [{low[bad[1:]]}, {high[bad[1:]]}]')
        assert np.isfinite(rewards).all()
        assert not (terminals & truncations).any()
        episodes += int(terminals.sum() + truncations.sum())
    assert episodes > 0


@pytest.mark.parametrize('case', VARIANTS)
def test_variant_out_of_range_actions_are_clamped(case):
    wild, tame = make(case, seed=5), make(case, seed=5)
    n = wild.single_action_space.n
    rng = np.random.default_rng(0)
    shape = (1500, *wild.actions.shape)
    extremes = np.array([np.iinfo(np.int32).min, -1_000_000, -1, 0, 1, n - 1, n, 1000, np.iinfo(np.int32).max])
    actions = np.where(rng.random(shape) < 0.5, rng.choice(extremes, size=shape),
                       rng.integers(-5, n + 5, size=shape)).astype(np.int32)
    # straight into the buffer: step() refuses such actions, but anything sharing the memory could write them
    for x, y in zip(rollout_raw(wild, actions), rollout(tame, np.clip(actions, 0, n - 1).astype(np.int32))):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize('case', list(CASES))
def test_render_frame_and_text(case):
    env = make(case)
    for _ in range(20):
        env.step(tools.random_actions(env.single_action_space, env.num_agents, 1)[0])
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.any()
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) >= 4, 'a frame should show several things'
    assert env.render_text().strip()


@pytest.mark.parametrize('case, change, match', [
    ('tetris', {'n_cols': 40}, r'n_cols=40 is outside \[4, 16\]'),
    ('tetris', {'hole_penalty': -1.0}, r'hole_penalty=-1 is outside'),
    ('tetris', {'preview': 7}, r'preview=7 is outside'),
    ('enduro', {'traffic': 0.0}, r'traffic=0 is outside'),
    ('enduro', {'max_cars': 17}, r'max_cars=17 is outside'),
    ('rware', {'robots': 200}, 'robots must fit on the highway cells.*use fewer robots or a larger warehouse'),
    ('rware', {'robots': 0}, r'robots=0 is outside \[1, 1024\]'),
    ('rware', {'robots': 1025}, r'robots=1025 is outside \[1, 1024\]'),
    ('rware', {'robots': 2.5}, 'option robots must be int, got float'),
    ('rware', {'robots': True}, 'option robots must be int, got bool'),
    ('rware', {'robot': 4}, "unknown option 'robot'. Did you mean robots"),
    ('rware', {'requests': 45}, 'must be below the number of shelves.*lower requests or robots'),
    ('rware', {'robots': 40, 'requests': 8}, 'must be below the number of shelves'),
])
def test_bad_options_name_the_key(case, change, match):
    with pytest.raises(APIUsageError, match=match):
        make(case, **change)


# ---------------------------------------------------------------------------------------------
# Scripted baselines: autopilot=True plays the env's own scripted policy. These are the values the
# acceptance targets compare a trained policy with (scripts/lab/acceptance_train.py prints them too).
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('case, steps, floor', [
    ('enduro', 6001, 40.0),            # cars passed per episode (short episodes only: a low estimate)
    ('tetris', 800, 20.0),             # lines per episode (placements)
    ('tetris_moves', 3000, 20.0),      # lines per episode (moves)
    ('rware', 1500, 5.0),              # deliveries per robot per episode
    ('rware_wide', 900, 1.0),
])
def test_scripted_baseline_beats_random(case, steps, floor):
    scripted = episode_means(make(case, num_envs=16, autopilot=True), steps)
    random = episode_means(make(case, num_envs=16), steps)
    print(f'{case}: scripted score {scripted["score"]:.2f} over {scripted["n"]:.0f} episodes, '
          f'random {random["score"]:.2f}')
    assert scripted['score'] > floor > random['score']


def test_autopilot_ignores_actions():
    for case in CASES:
        a, b = make(case, autopilot=True, seed=3), make(case, autopilot=True, seed=3)
        pool = tools.random_actions(a.single_action_space, a.num_agents, 300, seed=1)
        zeros = np.zeros_like(pool)
        for x, y in zip(rollout(a, pool), rollout(b, zeros)):
            np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

BOARD_CHARS = {'.': 0, '#': 1, '@': 2, '+': 3}


def tetris_board_from_text(text, rows, cols):
    lines = [line[1:-1] for line in text.splitlines()[1:rows + 1]]
    assert all(len(line) == cols for line in lines)
    return np.array([[BOARD_CHARS[ch] for ch in line] for line in lines], dtype=np.uint8)


@pytest.mark.parametrize('placement', [False, True])
def test_tetris_board_observation_matches_the_game(placement):
    """The patched observation equals the board drawn from the game state at every step (blocks,
    falling piece, its landing cells), through line clears, holds and new episodes."""
    env = make('tetris', num_envs=1, seed=2, placement=placement, n_rows=12, n_cols=6)
    scripted = make('tetris', num_envs=1, seed=2, placement=placement, n_rows=12, n_cols=6, autopilot=True)
    pool = tools.random_actions(env.single_action_space, 1, 500, seed=4)
    for e, actions in ((env, pool), (scripted, np.zeros_like(pool))):
        lines = 0.0
        for t in range(500):
            obs, _, _, _, infos = e.step(actions[t])
            lines += sum(info['score'] * info['n'] for info in infos)
            board = tetris_board_from_text(e.render_text(), 12, 6)
            if placement:
                board[board >= 2] = 0  # placing, only locked blocks are observed
            np.testing.assert_array_equal(obs[0, :72].reshape(12, 6), board, err_msg=f'step {t}')
            blocks = board == 1
            top = np.where(blocks.any(0), blocks.argmax(0), 12)  # first block from the top, per column
            below = np.arange(12)[:, None] > top[None, :]
            np.testing.assert_array_equal(obs[0, -12:-6], 12 - top, err_msg=f'heights, step {t}')
            np.testing.assert_array_equal(obs[0, -6:], (below & ~blocks).sum(0), err_msg=f'holes, step {t}')
    assert lines > 0, 'the scripted placer should clear lines on a 6-wide board'


def test_tetris_shapes_are_the_seven_tetrominoes_turned_clockwise():
    """The C shape table, seen through the board: each piece placed alone on an empty board in each
    rotation; rotation 0 is the standard spawn shape and each next rotation is the last one turned
    clockwise."""
    spawn = {0: ['XXXX'], 1: ['XX', 'XX'], 2: ['.X.', 'XXX'], 3: ['.XX', 'XX.'], 4: ['XX.', '.XX'],
             5: ['X..', 'XXX'], 6: ['..X', 'XXX']}  # I O T S Z J L
    env = make('tetris', num_envs=1, placement=True)
    seen = {}
    for seed in range(200):
        for rot in range(4):
            obs, _ = env.reset(seed=seed)
            piece = int(obs[0, 200:207].argmax())
            obs, *_ = env.step(np.array([rot * 10 + 3]))
            board = obs[0, :200].reshape(20, 10) == 1
            rows, cols = np.nonzero(board)
            seen[piece, rot] = board[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
        if len(seen) == 28:
            break
    assert len(seen) == 28, 'every piece should come first in some episode'
    for piece, rows in spawn.items():
        np.testing.assert_array_equal(seen[piece, 0], np.array([[ch == 'X' for ch in row] for row in rows]))
        for rot in range(3):
            np.testing.assert_array_equal(seen[piece, rot + 1], np.rot90(seen[piece, rot], -1),
                                          err_msg=f'piece {piece} rotation {rot + 1}')


def test_tetris_pieces_come_in_bags_and_the_preview_is_right():
    env = make('tetris', num_envs=1, seed=0, placement=True, preview=3, max_ticks=70)
    obs, _ = env.reset(seed=0)
    pieces, previews = [], []
    for t in range(70):  # one episode: never hold (the last action), place somewhere sensible
        side = obs[0, 200:]
        pieces.append(int(side[:7].argmax()))
        previews.append([int(side[7 * (k + 1):7 * (k + 2)].argmax()) for k in range(3)])
        obs, _, terminals, truncations, _ = env.step(np.array([t % 40]))
        if terminals[0]:
            break
    assert len(pieces) >= 14
    for k in range(len(pieces) // 7):
        assert sorted(pieces[7 * k:7 * k + 7]) == list(range(7)), 'a 7-bag holds every piece once'
    for t in range(len(pieces) - 3):
        assert previews[t] == pieces[t + 1:t + 4]


def test_tetris_reward_is_lines_and_topping_out_costs_one():
    env = make('tetris', num_envs=4, seed=1, placement=True, autopilot=True, hole_penalty=0.0, piece_reward=0.0)
    total, lines, over = np.zeros(4), 0.0, 0
    for _ in range(2000):
        _, rewards, terminals, truncations, infos = env.step(env.actions)
        total += rewards
        over += int(terminals.sum())
        for info in infos:
            lines += info['score'] * info['n']
    log = env.log()
    lines += log['score'] * log['n'] if log else 0
    assert over > 0 and lines > 0
    # rewards still pending in unfinished episodes are lines too
    pending = sum(int(line.split()[1]) for line in (env.render_text(i).splitlines()[0] for i in range(4)))
    assert total.sum() == pytest.approx(lines + pending - over)


def test_tetris_hold_swaps_once_per_piece():
    env = make('tetris', num_envs=1, seed=0, placement=False)
    obs, _ = env.reset(seed=0)
    current = int(obs[0, 200:207].argmax())
    obs, *_ = env.step(np.array([6]))  # hold: the held piece is the one we had
    held = obs[0, 200 + 7 * 3:200 + 7 * 4]
    assert int(held.argmax()) == current and held.sum() == 1 and obs[0, 200 + 7 * 4] == 0  # can-hold off
    after = int(obs[0, 200:207].argmax())
    obs, *_ = env.step(np.array([6]))  # a second hold before placing does nothing
    assert int(obs[0, 200:207].argmax()) == after


ENDURO_AHEAD = [9 + 5 * lane for lane in range(3)]


def test_enduro_throttle_brake_and_crashes():
    env = make('enduro', num_envs=1, seed=0, weather=False)
    obs, _ = env.reset(seed=0)
    for _ in range(50):
        obs, *_ = env.step(np.array([1]))  # accelerate
    assert obs[0, 1] > 0.9, 'full throttle should reach top speed'
    for _ in range(30):
        obs, *_ = env.step(np.array([4]))  # brake
    assert obs[0, 1] == 0.0
    # full throttle without steering runs into the cars of its lane: each crash takes control away
    crashes, speeds = 0, []
    for _ in range(1000):
        obs, rewards, *_ = env.step(np.array([1]))
        assert rewards[0] == int(rewards[0])  # whole cars, passed (+) or passing back (-)
        crashes += obs[0, 3] == 1.0  # the cooldown starts full
        speeds.append(obs[0, 1])
    assert crashes > 3 and min(speeds[100:]) < 0.5


def test_enduro_sees_only_within_sight_and_reports_the_phase():
    env = make('enduro', num_envs=16, seed=0, day_length=400, cars_per_day=1)
    obs, _ = env.reset(seed=0)
    sights = set()
    for _ in range(400):
        obs, *_ = env.step(np.full(16, 1))
        sight = obs[:, 4]
        sights.update(np.round(sight.astype(np.float64), 2).tolist())
        ahead = obs[:, ENDURO_AHEAD]
        visible = ahead < 1.0
        assert (ahead[visible] <= np.repeat(sight[:, None], 3, 1)[visible] + 1e-6).all()
    assert {1.0, 0.4, 0.2} <= sights, 'day, night and fog should all come round in a day'


def test_enduro_snow_reduces_grip():
    env = make('enduro', num_envs=1, seed=0, day_length=1000, cars_per_day=1)
    env.reset(seed=0)
    grips = set()
    for _ in range(1000):
        obs, *_ = env.step(np.array([0]))
        grips.add(round(float(obs[0, 5]), 2))
    assert grips == {1.0, 0.45}
    dry = make('enduro', num_envs=1, seed=0, day_length=1000, cars_per_day=1, weather=False)
    for _ in range(1000):
        obs, *_ = dry.step(np.array([0]))
        assert obs[0, 5] == 1.0


def test_enduro_missing_the_quota_ends_the_race_and_meeting_it_goes_on():
    env = make('enduro', num_envs=1, seed=0, day_length=300, cars_per_day=1000)
    ends = []
    for t in range(300):
        _, _, terminals, truncations, _ = env.step(np.array([1]))
        if terminals[0] or truncations[0]:
            ends.append((t, bool(terminals[0])))
    assert ends == [(299, True)], 'the race ends when the first day does, unfinished quota: terminal'
    env = make('enduro', num_envs=1, seed=0, day_length=300, cars_per_day=1, max_days=2, autopilot=True)
    ends = []
    for t in range(600):
        _, _, terminals, truncations, _ = env.step(np.array([0]))
        if terminals[0] or truncations[0]:
            ends.append((t, bool(terminals[0])))
    assert ends == [(599, False)]
    assert env.log()['perf'] == 1.0


RWARE_AGENT_CHARS = set('^>v<abcd')
CENTRE = 4 * 8  # flags of the centre cell of a 3x3 view


def test_rware_robots_never_share_a_cell_and_shelves_are_conserved():
    env = make('rware', num_envs=1, seed=0, robots=8, requests=4)
    pool = tools.random_actions(env.single_action_space, 8, 2000, seed=0)
    for t in range(2000):
        env.step(pool[t])
        grid = env.render_text().splitlines()[1:]
        robots = sum(ch in RWARE_AGENT_CHARS for line in grid for ch in line)
        assert robots == 8, f'step {t}: {robots} robots drawn'
        obs = env.observations
        assert (obs[:, CENTRE + 5] == 1).all(), 'every robot sees itself in the centre of its view'
        carried = sum(ch in 'abcd' for line in grid for ch in line)
        drawn = sum(ch in '#R' for line in grid for ch in line)
        hidden = int(((obs[:, CENTRE + 3] == 1) & (obs[:, CENTRE + 6] == 0)).sum())  # empty robot under a shelf
        assert drawn + carried + hidden == 48, 'shelves are never created or lost'


def test_rware_job_offset_points_at_the_nearest_request_in_the_robots_frame():
    env = make('rware', num_envs=1, seed=3, robots=1, requests=3)
    pool = tools.random_actions(env.single_action_space, 1, 3000, seed=3)
    heading = {'^': (0, -1), '>': (1, 0), 'v': (0, 1), '<': (-1, 0)}
    checked = 0
    for t in range(3000):
        obs, *_ = env.step(pool[t])
        grid = env.render_text().splitlines()[1:]
        cells = {(x, y): ch for y, line in enumerate(grid) for x, ch in enumerate(line)}
        (x, y), ch = next((pos, ch) for pos, ch in cells.items() if ch in RWARE_AGENT_CHARS)
        if ch not in heading:
            continue  # carrying: the job is a goal or an empty shelf cell
        if obs[0, CENTRE + 4]:
            assert tuple(obs[0, -2:]) == (0, 0)  # standing under a request: the job is here
            continue
        fx, fy = heading[ch]
        rx, ry = -fy, fx  # right of the heading, y pointing down
        best = min(abs(px - x) + abs(py - y) for (px, py), c in cells.items() if c == 'R')
        offsets = {(max(-8, min(8, (px - x) * fx + (py - y) * fy)), max(-8, min(8, (px - x) * rx + (py - y) * ry)))
                   for (px, py), c in cells.items() if c == 'R' and abs(px - x) + abs(py - y) == best}
        assert tuple(int(v) for v in obs[0, -2:]) in offsets, f'step {t}'
        checked += 1
    assert checked > 500


def test_rware_scripted_delivers_and_rewards_add_up():
    env = make('rware', num_envs=8, seed=0, autopilot=True, max_steps=500)
    total = np.zeros(env.num_agents)
    for _ in range(500):
        _, rewards, _, truncations, _ = env.step(env.actions)
        total += rewards
        assert set(np.unique(rewards)) <= {0.0, 0.5, 1.0, 1.5}
    assert truncations.all()
    log = env.log()
    assert log['n'] == 8
    deliveries = round(log['score'] * env.agents_per_env * log['n'])
    assert deliveries > 8
    # each delivery is paid 1; a lift of a requested shelf and a put-back of a delivered one 0.5
    # each, so at most one of each per delivery, plus lifts still on the way to a goal
    assert deliveries <= total.sum() <= 2 * deliveries + 0.5 * env.num_agents


# ---------------------------------------------------------------------------------------------
# Sanitizer build (scripts/sanitize_ocean.sh)
# ---------------------------------------------------------------------------------------------

@pytest.mark.sanitize
@pytest.mark.skipif(not SANITIZED, reason='needs the sanitizer build: run scripts/sanitize_ocean.sh')
@pytest.mark.parametrize('case', list(CASES))
@pytest.mark.parametrize('autopilot', [False, True])
def test_sanitized_100k_random_steps(case, autopilot):
    """The run of tests/test_ocean.py (wild and random actions, rendering), on the variants and the
    scripted policies, whose code paths the default options do not take."""
    name, config = CASES[case]
    sanitized_run(name, {**config, 'autopilot': autopilot})
