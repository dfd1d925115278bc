"""Ocean's 2048, checkers and slime volleyball: their rules, against small independent Python models
where the rules are discrete, and their scripted players.

The generic contract (spaces, determinism, garbage actions, rendering, logs) is tests/test_ocean.py's,
which parametrizes over every env; scripts/sanitize_ocean.sh also runs this file under ASan/UBSan.
"""
import os

import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import tools
from pufferlib.ocean.checkers import random_legal
from pufferlib.ocean.g2048 import corner
from pufferlib.ocean.slimevolley import follower

import ocean_play

SANITIZED = bool(os.environ.get('PUFFER_OCEAN_LIB'))


def episode_logs(env, policy, steps, seed=1):
    """The finished-episode logs of `policy(env, obs)` over `steps` steps."""
    return ocean_play.episode_logs(env, lambda obs, t: policy(env, obs), steps, seed)


def mean(logs, key):
    return ocean_play.episode_means(logs, (key,))[key]


def random_policy(env, obs):
    return tools.random_actions(env.single_action_space, env.num_agents, 1, int(np.random.randint(1 << 30)))[0]


# ---------------------------------------------------------------------------------------------
# 2048
# ---------------------------------------------------------------------------------------------

def g2048_board(obs_row):
    """Exponents [4, 4] from one observation row (one-hot planes per cell)."""
    return obs_row.reshape(16, 16).argmax(axis=1).reshape(4, 4)


def slide_left(board):
    """The reference move: every row slid and merged toward column 0; (board, merged exponents summed)."""
    out, gain = np.zeros_like(board), 0
    for r, row in enumerate(board):
        tiles = [v for v in row if v]
        merged, k = [], 0
        while k < len(tiles):
            if k + 1 < len(tiles) and tiles[k] == tiles[k + 1]:
                merged.append(tiles[k] + 1)
                gain += tiles[k] + 1
                k += 2
            else:
                merged.append(tiles[k])
                k += 1
        out[r, :len(merged)] = merged
    return out, gain


def reference_move(board, action):
    """Up, down, left, right as rotations of a left slide."""
    turns = {0: 1, 1: 3, 2: 0, 3: 2}[action]  # np.rot90 by k turns the side to slide toward into the left
    moved, gain = slide_left(np.rot90(board, turns))
    return np.rot90(moved, -turns), gain


def test_g2048_moves_merges_spawns_and_masks_match_a_reference_model():
    env = pufferlib.make('puffer_g2048', num_envs=4, seed=3)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    games = merges = 0
    for _ in range(3000):
        before = [g2048_board(o) for o in obs]
        legal = env.action_masks.copy()
        for i, board in enumerate(before):
            for a in range(4):
                assert legal[i, a] == (not np.array_equal(reference_move(board, a)[0], board)), (board, a)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in legal], dtype=np.int32)
        obs, rewards, terminals, truncations, _ = env.step(actions)
        assert not truncations.any()
        assert ((obs == 0) | (obs == 1)).all() and (obs.reshape(4, 16, 16).sum(axis=2) == 1).all()
        for i in range(4):
            moved, gain = reference_move(before[i], int(actions[i]))
            assert rewards[i] == pytest.approx(0.1 * gain)
            merges += gain > 0
            if terminals[i]:
                games += 1
                # the board that ended had no move left: the spawn filled the last gap
                assert (moved > 0).sum() == 15 and (g2048_board(obs[i]) > 0).sum() == 2
                continue
            after = g2048_board(obs[i])
            new = np.argwhere(after != moved)
            assert len(new) == 1, 'exactly one tile spawns after a move'
            r, c = new[0]
            assert moved[r, c] == 0 and after[r, c] in (1, 2)
    assert games > 0 and merges > 100


def test_g2048_masked_move_is_a_no_op_that_costs_illegal_reward():
    env = pufferlib.make('puffer_g2048', num_envs=64, seed=1, illegal_reward=-0.25)
    obs, _ = env.reset(seed=1)
    blocked = np.argwhere(~env.action_masks)
    assert len(blocked), 'some fresh board has a move that changes nothing'
    actions = np.zeros(64, dtype=np.int32)
    rows = []
    for row, a in blocked:
        if row not in rows:
            rows.append(row)
            actions[row] = a
    before = obs.copy()
    masks = env.action_masks.copy()
    obs, rewards, terminals, _, _ = env.step(actions)
    for row in rows:
        assert not masks[row, actions[row]]
        np.testing.assert_array_equal(obs[row], before[row])
        assert rewards[row] == pytest.approx(-0.25) and not terminals[row]


def test_g2048_corner_player_reaches_bigger_tiles_than_random():
    env = pufferlib.make('puffer_g2048', num_envs=64, seed=0)
    scripted = episode_logs(env, corner, 4000)
    random = episode_logs(env, random_policy, 4000)
    assert mean(scripted, 'score') > 1.5 * mean(random, 'score')
    for logs in (scripted, random):
        assert 4 <= mean(logs, 'score') <= 65536


def test_g2048_perf_is_reaching_the_goal_tile():
    env = pufferlib.make('puffer_g2048', num_envs=32, seed=0, goal=4)
    assert mean(episode_logs(env, corner, 2000), 'perf') == pytest.approx(1.0)
    env = pufferlib.make('puffer_g2048', num_envs=32, seed=0, goal=65536)
    assert mean(episode_logs(env, corner, 2000), 'perf') == 0.0


# ---------------------------------------------------------------------------------------------
# Checkers
# ---------------------------------------------------------------------------------------------

SQUARES = [(r, 2 * k + (r % 2 == 0)) for r in range(8) for k in range(4)]  # the dark squares, row-major
INDEX = {rc: i for i, rc in enumerate(SQUARES)}
DIRS = [(-1, -1), (-1, 1), (1, -1), (1, 1)]  # up-left, up-right, down-left, down-right (the row's view)


def checkers_view(obs_row):
    """{(r, c): piece} of the row's view: 'm' own man, 'k' own king, 'M' / 'K' the opponent's."""
    board = {}
    for plane, piece in enumerate('mkMK'):
        for i in np.flatnonzero(obs_row[plane * 32:(plane + 1) * 32] > 0.5):
            board[SQUARES[i]] = piece
    return board


def reference_legal(board, jumper=None):
    """The legal actions (square * 4 + direction) of the row to move, from its view: own men move up."""
    steps, jumps = [], []
    for (r, c), piece in board.items():
        if piece not in 'mk' or (jumper is not None and (r, c) != jumper):
            continue
        for d, (dr, dc) in enumerate(DIRS):
            if piece == 'm' and dr > 0:
                continue
            one, two = (r + dr, c + dc), (r + 2 * dr, c + 2 * dc)
            if not (0 <= two[0] < 8 and 0 <= two[1] < 8) or two in board or board.get(one, 'x') not in 'MK':
                pass
            else:
                jumps.append(INDEX[(r, c)] * 4 + d)
            if 0 <= one[0] < 8 and 0 <= one[1] < 8 and one not in board:
                steps.append(INDEX[(r, c)] * 4 + d)
    if jumper is not None:
        return set(jumps)
    return set(jumps) if jumps else set(steps)


def test_checkers_masks_jumps_and_turns_match_a_reference_model():
    """Both seats are rows driven by random legal moves; every live row's mask is the reference's, a
    jump takes one piece, a multi-jump keeps the same row to move, and the waiting row may play 0 only."""
    env = pufferlib.make('puffer_checkers', num_envs=8, seed=5, two_player=True)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(1)
    jumper = [None] * 8
    seen = {'jump': 0, 'multi': 0, 'king': 0, 'games': 0}
    for _ in range(3000):
        actions = np.zeros(16, dtype=np.int32)
        live_rows = []
        for g in range(8):
            live = [r for r in (2 * g, 2 * g + 1) if env.masks[r]]
            assert len(live) == 1, 'exactly one row of a game is to move'
            row = live[0]
            waiting = row ^ 1
            assert env.action_masks[waiting].sum() == 1 and env.action_masks[waiting, 0]
            assert obs[row, 192] == 1 and obs[waiting, 192] == 0  # to_move
            assert obs[row, 193] == (jumper[g] is not None)
            board = checkers_view(obs[row])
            expected = reference_legal(board, jumper[g])
            assert set(np.flatnonzero(env.action_masks[row])) == expected, (g, board, jumper[g])
            actions[row] = rng.choice(sorted(expected))
            live_rows.append((g, row, board))
        before = obs.copy()
        obs, rewards, terminals, _, _ = env.step(actions)
        assert rewards.reshape(8, 2).sum(axis=1) == pytest.approx(np.zeros(8), abs=1e-6)  # zero-sum
        for g, row, board in live_rows:
            assert terminals[2 * g] == terminals[2 * g + 1]
            if terminals[row]:
                seen['games'] += 1
                jumper[g] = None
                continue
            a = int(actions[row])
            (r, c), (dr, dc) = SQUARES[a // 4], DIRS[a % 4]
            jumped = (r + dr, c + dc) in board and board[(r + dr, c + dc)] in 'MK'
            theirs_before = before[row, 64:128].sum()
            theirs_after = obs[row, 64:128].sum()
            assert theirs_before - theirs_after == (1 if jumped else 0)
            seen['jump'] += jumped
            seen['king'] += obs[row, 32:64].sum() > before[row, 32:64].sum()
            if env.masks[row]:  # the same row moves again: a multi-jump
                assert jumped
                seen['multi'] += 1
                jumper[g] = (r + 2 * dr, c + 2 * dc)
            else:
                jumper[g] = None
    assert seen['games'] > 5 and seen['jump'] > 100 and seen['multi'] > 5 and seen['king'] > 5, seen


def test_checkers_seats_see_the_board_turned():
    env = pufferlib.make('puffer_checkers', num_envs=1, seed=0, two_player=True)
    obs, _ = env.reset(seed=0)
    for row in range(2):
        board = checkers_view(obs[row])
        assert sorted(rc for rc, p in board.items() if p == 'm') == sorted(SQUARES[20:])  # own men at the bottom
        assert sorted(rc for rc, p in board.items() if p == 'M') == sorted(SQUARES[:12])


def test_checkers_illegal_action_plays_the_first_legal_move_and_costs():
    a = pufferlib.make('puffer_checkers', num_envs=4, seed=2, illegal_reward=-0.5, piece_reward=0.0)
    b = pufferlib.make('puffer_checkers', num_envs=4, seed=2, illegal_reward=-0.5, piece_reward=0.0)
    a.reset(seed=2), b.reset(seed=2)
    for _ in range(40):
        illegal = np.array([np.flatnonzero(~m)[0] for m in a.action_masks], dtype=np.int32)
        first = np.array([np.flatnonzero(m)[0] for m in b.action_masks], dtype=np.int32)
        _, ra, ta, _, _ = a.step(illegal)
        _, rb, tb, _, _ = b.step(first)
        np.testing.assert_array_equal(ta, tb)
        np.testing.assert_allclose(ra, rb - 0.5)
        np.testing.assert_array_equal(a.observations, b.observations)


def test_checkers_scripted_player_beats_random_and_builtin_action_plays_it():
    env = pufferlib.make('puffer_checkers', num_envs=32, seed=0)
    random = episode_logs(env, random_legal, 3000)
    assert mean(random, 'perf') < 0.2
    env.reset(seed=4)
    for _ in range(3000):  # the scripted player on both sides: step() refuses -1, so write the buffer
        env.actions[...] = -1
        env.step(env.actions)
    builtin = [env.log()]
    assert 0.2 < mean(builtin, 'perf') < 0.8 and mean(builtin, 'perf') > mean(random, 'perf') + 0.15


def test_checkers_game_ends_are_paid():
    env = pufferlib.make('puffer_checkers', num_envs=16, seed=1, piece_reward=0.0, max_plies=60)
    obs, _ = env.reset(seed=1)
    results = set()
    for _ in range(2000):
        obs, rewards, terminals, truncations, _ = env.step(random_legal(env, obs))
        assert not truncations.any()
        assert np.all(rewards[~terminals] == 0)
        results.update(np.round(rewards[terminals], 3).tolist())
    assert results <= {-1.0, 0.0, 1.0} and {-1.0, 0.0} <= results  # losses and draws at max_plies


# ---------------------------------------------------------------------------------------------
# Slime volleyball
# ---------------------------------------------------------------------------------------------

def test_slimevolley_follower_beats_the_slower_builtin_slime_and_random_loses():
    """The built-in slime's rule at full speed with a steady aim wins most points: the learning target
    (70% of points) is within reach; random play wins few."""
    env = pufferlib.make('puffer_slimevolley', num_envs=32, seed=0)
    scripted = mean(episode_logs(env, follower, 6000), 'perf')
    random = mean(episode_logs(env, random_policy, 6000), 'perf')
    assert scripted > 0.8 and random < 0.3, (scripted, random)


def test_slimevolley_two_seats_mirror_and_pay_zero_sum():
    env = pufferlib.make('puffer_slimevolley', num_envs=8, seed=3, two_player=True)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    points = 0
    for _ in range(2000):
        a, b = obs[0::2], obs[1::2]
        mirror = np.array([-1, 1, -1, 1], np.float32)  # x and vx change sign, y and vy do not
        np.testing.assert_allclose(a[:, 0:4] * mirror, b[:, 8:12], atol=1e-6)  # row 0's self is row 1's opponent
        np.testing.assert_allclose(a[:, 4:8] * mirror, b[:, 4:8], atol=1e-6)
        assert (a[:, 0] >= 0).all() and (b[:, 0] >= 0).all()  # every row plays on the right of its view
        obs, rewards, terminals, _, _ = env.step(rng.integers(0, 6, 16).astype(np.int32))
        np.testing.assert_array_equal(rewards[0::2], -rewards[1::2])
        np.testing.assert_array_equal(terminals[0::2], terminals[1::2])
        points += int((rewards[0::2] != 0).sum())
    assert points > 20


def test_slimevolley_return_reward_pays_the_side_that_sends_the_ball_over():
    env = pufferlib.make('puffer_slimevolley', num_envs=8, seed=3, two_player=True, return_reward=0.25)
    env.reset(seed=3)
    returns = 0
    for _ in range(3000):
        env.actions[...] = -1  # the scripted slime on both sides: long rallies
        _, rewards, _, _, _ = env.step(env.actions)
        shaped = rewards - np.round(rewards)  # a point pays a whole +-1 on top
        assert np.isin(np.round(shaped, 4), [0.0, 0.25]).all()
        returns += int((np.round(shaped, 4) != 0).sum())
    assert returns > 50


def test_slimevolley_actions_move_in_the_rows_own_view():
    env = pufferlib.make('puffer_slimevolley', num_envs=1, seed=0, two_player=True)
    obs, _ = env.reset(seed=0)
    start = obs[:, 0].copy()
    for _ in range(5):
        obs, *_ = env.step(np.array([1, 1], np.int32))  # toward the net, for both
    assert (obs[:, 0] < start).all()
    obs, *_ = env.step(np.array([3, 0], np.int32))  # row 0 jumps
    assert obs[0, 1] > 0 and obs[1, 1] == 0 and obs[0, 3] > 0


def test_slimevolley_builtin_action_plays_the_scripted_slime():
    env = pufferlib.make('puffer_slimevolley', num_envs=16, seed=0, two_player=True)
    env.reset(seed=0)
    for _ in range(6000):
        env.actions[...] = -1  # step() refuses -1; the league's arena writes the buffer
        env.step(env.actions)
    log = env.log()
    assert log is not None and 0.3 < log['perf'] < 0.7


def test_slimevolley_continuous_is_a_box_and_the_builtin_player_stays_with_the_buttons():
    from gymnasium import spaces

    from pufferlib import arena
    box = pufferlib.make('puffer_slimevolley', num_envs=2, continuous=True)
    assert box.single_action_space == spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert box.actions.dtype == np.float32 and box.actions.shape == (2, 2)
    buttons = pufferlib.make('puffer_slimevolley', num_envs=2)
    assert buttons.single_action_space == spaces.Discrete(6)
    assert arena.supports_builtin(buttons) and not arena.supports_builtin(box)


def test_slimevolley_continuous_follower_plays_the_same_games_as_the_buttons():
    """Run -1 / 0 / 1 and a jump above 0 are the six buttons: the follower's Box actions replay its button
    games frame for frame (same seed), and win as often."""
    def games(**options):
        env = pufferlib.make('puffer_slimevolley', num_envs=8, seed=4, **options)
        obs, _ = env.reset(seed=4)
        seen, logs = [], []
        for _ in range(1500):
            obs, _, _, _, infos = env.step(follower(env, obs))
            seen.append(obs.copy())
            logs.extend(infos)
        return np.array(seen), logs

    buttons, button_logs = games()
    box, box_logs = games(continuous=True)
    np.testing.assert_array_equal(buttons, box)
    assert box_logs and box_logs == button_logs and mean(box_logs, 'perf') > 0.8


def test_slimevolley_continuous_runs_at_the_given_fraction_and_jumps_above_zero():
    env = pufferlib.make('puffer_slimevolley', num_envs=1, seed=0, two_player=True, continuous=True)
    obs, _ = env.reset(seed=0)
    start = obs[:, 0].copy()
    for _ in range(5):  # row 0 runs toward the net at full speed, row 1 at half speed
        obs, *_ = env.step(np.array([[-1.0, -1.0], [-0.5, -1.0]], np.float32))
    full, half = start - obs[:, 0]
    assert full > 0 and half == pytest.approx(full / 2, rel=1e-4)
    obs, *_ = env.step(np.array([[0.0, 0.0], [0.0, 0.01]], np.float32))  # 0 is no jump, anything above is
    assert obs[0, 1] == 0 and obs[1, 1] > 0 and obs[1, 3] > 0
