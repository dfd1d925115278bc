"""puffer_terraform: the bucket, the moves and the climbing limit checked step by step from the observations,
the reward as the map's error removed, the exact soil budget (the greedy dozers finish maps), and the option
errors. tests/test_ocean.py covers the contract (spaces, determinism, rendering, logs, wild actions) like for
every env."""
import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import tools

import ocean_play

MAX_HEIGHT = 32
REGIONS = 6


def make(num_envs=1, seed=0, **kwargs):
    return pufferlib.make('puffer_terraform', num_envs=num_envs, seed=seed, **kwargs)


def parts(obs, vision=5):
    """One dozer's row as (heights view, to-target view, load, column, row, block one-hot), in soil units."""
    w = 2 * vision + 1
    heights = np.rint(obs[:w * w] * MAX_HEIGHT).reshape(w, w)
    to_target = np.rint(obs[w * w:2 * w * w] * MAX_HEIGHT).reshape(w, w)
    load, col, row = obs[2 * w * w:2 * w * w + 3]
    block = obs[2 * w * w + 3 + 2 * REGIONS * REGIONS:]
    return heights, to_target, load, col, row, block


MOVES = {1: (0, -1), 2: (0, 1), 3: (-1, 0), 4: (1, 0)}


def test_bucket_moves_and_climbing_follow_the_rules_step_by_step():
    """A lone dozer under random actions: every scoop, dump and move, predicted from the row before the step."""
    size, vision, capacity, climb, unit = 24, 3, 6, 2, 0.5
    env = make(size=size, num_dozers=1, vision=vision, capacity=capacity, max_climb=climb,
               reward_per_unit=unit, max_steps=100000)
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(0)
    c = vision
    seen = {'scoop': 0, 'dump': 0, 'moved': 0, 'blocked': 0, 'scoop_wrong': 0}
    for _ in range(6000):
        heights, to_target, load, col, row, block = parts(obs[0], vision)
        load = round(load * capacity)
        x, y = round(col * size), round(row * size)
        assert block[(y * REGIONS // size) * REGIONS + x * REGIONS // size] == 1 and block.sum() == 1
        move, bucket = int(rng.integers(0, 5)), int(rng.choice(3, p=[0.2, 0.4, 0.4]))
        obs, rewards, terminals, truncations, _ = env.step(np.array([[move, bucket]], np.int32))
        assert not terminals[0] and not truncations[0]
        h, t = heights[c, c], heights[c, c] + to_target[c, c]
        reward = 0.0
        if bucket == 1 and h > 0 and load < capacity:
            h, load = h - 1, load + 1
            reward = unit if h >= t else -unit
            seen['scoop'] += 1
            seen['scoop_wrong'] += reward < 0
        elif bucket == 2 and load > 0 and h < MAX_HEIGHT:
            h, load = h + 1, load - 1
            reward = unit if h <= t else -unit
            seen['dump'] += 1
        assert rewards[0] == pytest.approx(reward)
        if move:
            dx, dy = MOVES[move]
            target = heights[c + dy, c + dx]
            if target >= 0 and abs(target - h) <= climb:
                x, y = x + dx, y + dy
                seen['moved'] += 1
            elif target >= 0:
                seen['blocked'] += 1
        n_heights, n_target, n_load, n_col, n_row, _ = parts(obs[0], vision)
        assert (round(n_col * size), round(n_row * size), round(n_load * capacity)) == (x, y, load)
        if (x, y) == (round(col * size), round(row * size)):  # stayed: the cell under it shows the bucket's work
            assert n_heights[c, c] == h and n_heights[c, c] + n_target[c, c] == t
    assert min(seen.values()) > 10, seen


def test_off_map_cells_read_minus_one_and_nothing_to_do():
    env = make(size=24, num_dozers=4, vision=8)
    obs, _ = env.reset(seed=0)
    for row in obs:
        heights, to_target, _, col, rw, _ = parts(row, 8)
        x, y = round(col * 24), round(rw * 24)
        xs, ys = np.arange(17) - 8 + x, np.arange(17) - 8 + y
        off = (xs[None, :] < 0) | (xs[None, :] >= 24) | (ys[:, None] < 0) | (ys[:, None] >= 24)
        assert (heights[off] == -MAX_HEIGHT).all() and (to_target[off] == 0).all()
        assert (heights[~off] >= 0).all() and heights[8, 8] == 0  # dozers start on flat ground


def test_rewards_add_up_to_the_error_removed():
    """Every unit of error put right or wrong is paid to exactly one dozer: the dozers' returns over an
    episode add up to reward_per_unit times the score (the error removed), here for the greedy dozers."""
    dozers, unit = 4, 0.25
    env = make(num_dozers=dozers, size=32, autopilot=True, reward_per_unit=unit, solve_bonus=0.0, max_steps=300)
    env.reset(seed=2)
    total = 0.0
    for _ in range(300):
        _, rewards, terminals, truncations, infos = env.step(np.zeros((dozers, 2), np.int32))
        total += float(rewards.sum())
    assert truncations.all() and not terminals.any()
    log = infos[0] if infos else env.log()
    assert log['n'] == dozers and log['score'] > 20
    assert total == pytest.approx(unit * log['score'], rel=1e-5)
    assert log['episode_return'] * dozers == pytest.approx(total, rel=1e-5)


def test_greedy_dozers_finish_the_map_and_random_ones_do_not():
    """The hills hold exactly the soil the plateaus need, so a map can be finished: the greedy dozers
    finish every map (perf 1: the error is 0, each dozer paid solve_bonus, the episode terminal) well
    before max_steps; random dozers barely change it."""
    env = make(num_envs=4, autopilot=True, solve_bonus=2.0)
    env.reset(seed=5)
    ends, logs = 0, []
    for _ in range(3071):
        _, rewards, terminals, truncations, infos = env.step(np.zeros((32, 2), np.int32))
        assert not truncations.any()
        logs += infos
        if terminals.any():
            assert (rewards[terminals] >= 2.0 - 0.11).all()
            ends += int(terminals.sum())
    last = env.log()
    log = ocean_play.episode_means(logs + ([last] if last else []))
    assert ends >= 32 and log['perf'] == 1.0 and log['episode_length'] < 2500
    pool = tools.random_actions(env.single_action_space, 32, 256, seed=0)
    random_play = ocean_play.episode_logs(make(num_envs=4, max_steps=1000), lambda obs, t: pool[t % 256], 2100)
    rand = ocean_play.episode_means(random_play)
    print(f"terraform perf: greedy 1.0 in {log['episode_length']:.0f} steps, random {rand['perf']:.3f}")
    assert rand['perf'] < 0.05


def test_refuses_options_out_of_range_with_one_error():
    with pytest.raises(pufferlib.PufferError, match='size=23 is outside \\[24, 256\\]'):
        make(size=23)
    with pytest.raises(pufferlib.PufferError, match='vision=9 is outside \\[1, 8\\]'):
        make(vision=9)
    with pytest.raises(pufferlib.PufferError, match='num_dozers=0 is outside'):
        make(num_dozers=0)
    with pytest.raises(pufferlib.PufferError, match='max_climb=33 is outside'):
        make(max_climb=33)
