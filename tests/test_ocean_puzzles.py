"""The puzzle Ocean envs: boxoban. Their rules one by one against a reference written here, the generated
levels (solvable, checked by an independent search), and the scripted baselines (autopilot=True).
tests/test_ocean.py covers the contract (spaces, determinism, rendering, logs, wild actions) for them like
for every env."""
import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import boxoban

import ocean_play


def make(name, num_envs=4, seed=0, **kwargs):
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **kwargs)


def play(env, steps, policy=None, seed=0):
    """Mean of the episode logs over `steps` steps (random actions unless `policy(obs) -> actions`)."""
    rng = np.random.default_rng(seed)
    act = (lambda obs, t: rng.integers(0, 4, len(obs), dtype=np.int32)) if policy is None else (
        lambda obs, t: policy(obs))
    return ocean_play.episode_means(ocean_play.episode_logs(env, act, steps, seed))


# ---------------------------------------------------------------------------------------------
# Boxoban
# ---------------------------------------------------------------------------------------------

def sokoban_step(room, boxes, player, action):
    """The reference rules: (boxes, player, reward) after one move, gym-sokoban's rewards without the +10."""
    dr, dc = boxoban.MOVES[action]
    nxt = (player[0] + dr, player[1] + dc)
    if room[nxt[0]][nxt[1]] == '#':
        return boxes, player, -0.1
    if nxt not in boxes:
        return boxes, nxt, -0.1
    beyond = (nxt[0] + dr, nxt[1] + dc)
    if room[beyond[0]][beyond[1]] == '#' or beyond in boxes:
        return boxes, player, -0.1  # a box against a wall or another box does not move
    gain = (room[beyond[0]][beyond[1]] == '.') - (room[nxt[0]][nxt[1]] == '.')
    return (boxes - {nxt}) | {beyond}, nxt, -0.1 + gain


def test_boxoban_moves_pushes_and_rewards_follow_the_sokoban_rules():
    env = make('boxoban', num_envs=8, boxes=2, size=7, pulls=2)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    checked = {'wall': 0, 'walk': 0, 'push': 0, 'blocked push': 0, 'onto': 0, 'off': 0, 'solved': 0}
    for _ in range(1200):
        before = [boxoban.level(env, i) for i in range(env.num_agents)]
        actions = rng.integers(0, 4, env.num_agents, dtype=np.int32)
        _, rewards, terminals, truncations, _ = env.step(actions)
        for i, (room, boxes, player) in enumerate(before):
            want_boxes, want_player, want_reward = sokoban_step(room, boxes, player, actions[i])
            targets = {(r, c) for r, line in enumerate(room) for c, ch in enumerate(line) if ch == '.'}
            solved = want_boxes == targets
            assert terminals[i] == solved
            assert rewards[i] == pytest.approx(want_reward + 10 * solved)
            dr, dc = boxoban.MOVES[actions[i]]
            ahead = room[player[0] + dr][player[1] + dc]
            kind = ('wall' if ahead == '#' else 'walk' if want_boxes == boxes and want_player != player
                    else 'blocked push' if want_player == player else 'push')
            checked[kind] += 1
            checked['onto'] += want_reward > 0
            checked['off'] += want_reward < -0.5
            checked['solved'] += solved
            if not (solved or truncations[i]):  # else the next level is already in place
                room_after, boxes_after, player_after = boxoban.level(env, i)
                assert room_after == room and boxes_after == want_boxes and player_after == want_player
    assert min(checked.values()) > 0, checked


@pytest.mark.parametrize('size', [6, 9, 12])  # views narrower than, between and wider than the copied chunks
def test_boxoban_observes_the_room_around_the_player(size):
    radius = size - 3
    env = make('boxoban', num_envs=4, size=size)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(1)
    for _ in range(20):
        for i in range(env.num_agents):
            room, boxes, (pr, pc) = boxoban.level(env, i)
            walls, targets, box_plane = obs[i].reshape(3, 2 * radius + 1, 2 * radius + 1)
            for r in range(2 * radius + 1):
                for c in range(2 * radius + 1):
                    rr, cc = pr + r - radius, pc + c - radius
                    inside = 0 <= rr < size and 0 <= cc < size
                    assert walls[r, c] == (not inside or room[rr][cc] == '#')
                    assert targets[r, c] == (inside and room[rr][cc] == '.')
                    assert box_plane[r, c] == ((rr, cc) in boxes)
        obs, *_ = env.step(rng.integers(0, 4, 4, dtype=np.int32))


@pytest.mark.parametrize('boxes,size', [(1, 6), (4, 10), (6, 12)])
def test_boxoban_levels_start_with_every_box_off_its_target_inside_a_walled_room(boxes, size):
    env = make('boxoban', num_envs=32, boxes=boxes, size=size)
    for seed in range(4):
        env.reset(seed=seed)
        for i in range(env.num_agents):
            room, placed, player = boxoban.level(env, i)
            targets = {(r, c) for r, line in enumerate(room) for c, ch in enumerate(line) if ch == '.'}
            assert len(room) == size and all(len(line) == size for line in room)
            assert set(room[0] + room[-1] + ''.join(line[0] + line[-1] for line in room)) == {'#'}
            assert len(placed) == len(targets) == boxes and not placed & targets
            assert room[player[0]][player[1]] != '#' and player not in placed


def test_boxoban_generated_levels_are_solved_by_an_independent_search():
    env = make('boxoban', num_envs=24, boxes=2)
    for seed in range(2):
        env.reset(seed=seed)
        pushes = [boxoban.solve(env, i) for i in range(env.num_agents)]
        assert min(pushes) >= 1, pushes


def test_boxoban_autopilot_solves_every_level_within_max_steps():
    for options in ({}, {'boxes': 6, 'size': 12, 'pulls': 8}, {'boxes': 3, 'size': 7, 'max_steps': 24}):
        env = make('boxoban', num_envs=32, autopilot=True, **options)
        logs = ocean_play.episode_logs(env, lambda obs, t: np.zeros(len(obs), dtype=np.int32), 1500)
        means = ocean_play.episode_means(logs)
        assert means['n'] >= 100 and means['perf'] == 1.0, (options, means)
        assert means['score'] == options.get('boxes', 4)
        assert means['episode_length'] <= options.get('max_steps', 120)


def test_boxoban_autopilot_beats_random_moves():
    scripted = play(make('boxoban', num_envs=16, autopilot=True), 1000)
    rand = play(make('boxoban', num_envs=16), 1000)
    print(f'boxoban solved: scripted {scripted["perf"]:.2f}, random {rand["perf"]:.2f}')
    assert scripted['perf'] == 1.0 and rand['perf'] < 0.1
    assert scripted['episode_return'] > 5 > rand['episode_return']


def test_boxoban_more_pulls_put_the_boxes_farther_from_their_targets():
    near, far = (play(make('boxoban', num_envs=32, autopilot=True, pulls=p), 600)['episode_length'] for p in (1, 8))
    assert far > 1.5 * near


def test_boxoban_refuses_options_out_of_range_with_one_error():
    with pytest.raises(pufferlib.PufferError, match='boxes=7 is outside \\[1, 6\\]'):
        make('boxoban', boxes=7)
    with pytest.raises(pufferlib.PufferError, match='size=13 is outside'):
        make('boxoban', size=13)
    with pytest.raises(pufferlib.PufferError, match='max_steps=9 is outside'):
        make('boxoban', max_steps=9)
    with pytest.raises(pufferlib.PufferError, match='pulls=0 is outside'):
        make('boxoban', pulls=0)
