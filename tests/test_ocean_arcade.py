"""The Atari-style Ocean envs: freeway, blastar, pacman, asteroids. Their rules, the terminal conditions, and the
scripted baselines (autopilot=True) against random play. tests/test_ocean.py covers the contract
(spaces, determinism, rendering, logs, wild actions) for them like for every env."""
import numpy as np
import pytest

import pufferlib
from pufferlib.ocean import tools

import ocean_play


def make(name, num_envs=4, seed=0, **kwargs):
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **kwargs)


def play(env, steps, policy=None, seed=0):
    """Mean of the episode logs over `steps` steps (random actions unless `policy(obs) -> actions`)."""
    pool = tools.random_actions(env.single_action_space, env.num_agents, 256, seed=seed)
    act = (lambda obs, t: pool[t % 256]) if policy is None else (lambda obs, t: policy(obs))
    return ocean_play.episode_means(ocean_play.episode_logs(env, act, steps, seed))


def constant(action):
    return lambda obs: np.full(len(obs), action, dtype=np.int32)


# ---------------------------------------------------------------------------------------------
# Freeway
# ---------------------------------------------------------------------------------------------

def test_freeway_game_lasts_game_frames_and_ends_terminal():
    env = make('freeway', num_envs=1, game_frames=400, frameskip=4)
    env.reset(seed=0)
    terminals = [env.step(np.zeros(1, np.int32))[2][0] for _ in range(250)]
    assert [i for i, t in enumerate(terminals) if t] == [99, 199]


def test_freeway_crossings_pay_one_and_lanes_pay_lane_reward():
    env = make('freeway', num_envs=8, lane_reward=0.0, hit_penalty=0.0, game_frames=2000)
    env.reset(seed=1)
    total = np.zeros(8)
    for _ in range(500):
        _, rewards, terminals, _, _ = env.step(np.ones(8, np.int32))
        assert set(np.unique(rewards)) <= {0.0, 1.0}
        total += rewards
    log = env.log()
    assert log['n'] == 8 and total.sum() == pytest.approx(log['score'] * 8) and log['score'] > 5
    # with lane rewards, every lane reached pays lane_reward once per crossing: 1 + 10 x 0.1 per crossing
    env = make('freeway', num_envs=8, lane_reward=0.1, hit_penalty=0.0, game_frames=2000)
    env.reset(seed=1)
    total = 0.0
    for _ in range(500):
        total += float(env.step(np.ones(8, np.int32))[1].sum())
    log = env.log()
    assert log['score'] * 8 * 2.0 <= total + 1e-3 <= (log['score'] + 1) * 8 * 2.0


def test_freeway_up_climbs_and_down_stays_on_the_curb():
    env = make('freeway', num_envs=1)
    obs, _ = env.reset(seed=0)
    assert obs[0, 0] == 0.0 and obs[0, 1] == 0.0
    obs = env.step(np.full(1, 2, np.int32))[0]
    assert obs[0, 0] == 0.0
    obs = env.step(np.ones(1, np.int32))[0]
    assert obs[0, 0] > 0.0


def test_freeway_hits_push_the_chicken_back():
    """Dense fast traffic: walking up without looking gets hit, and each hit costs hit_penalty."""
    env = make('freeway', num_envs=4, cars_per_lane=3, speed=3.0, lane_reward=0.0, hit_penalty=0.5)
    env.reset(seed=0)
    stunned, penalties = 0, 0
    for _ in range(300):
        obs, rewards, _, _, _ = env.step(np.ones(4, np.int32))
        stunned += int((obs[:, 2] > 0).sum())
        penalties += int(np.isclose(rewards, -0.5).sum())
    assert stunned > 0 and penalties > 0


def test_freeway_scripted_chicken_beats_walking_up_and_random():
    scripted = play(make('freeway', num_envs=8, autopilot=True), 2100)
    up = play(make('freeway', num_envs=8), 2100, constant(1))
    rand = play(make('freeway', num_envs=8), 2100)
    print(f'freeway crossings: scripted {scripted["score"]:.1f}, always up {up["score"]:.1f}, '
          f'random {rand["score"]:.1f}')
    assert scripted['score'] > up['score'] > rand['score']
    assert 0 < scripted['perf'] < 1


def test_freeway_two_chickens_are_two_rows_on_one_road():
    env = make('freeway', num_envs=2, two_chickens=True)
    assert env.num_agents == 4
    obs, _ = env.reset(seed=0)
    # the same road, different columns: the lanes' distances differ between the two rows of an env
    assert not np.array_equal(obs[0, 4:], obs[1, 4:])
    obs = env.step(np.array([1, 0, 1, 0], np.int32))[0]
    assert obs[0, 0] > 0 and obs[1, 0] == 0 and obs[2, 0] > 0 and obs[3, 0] == 0
    assert '2 chickens' not in env.render_text(index=0) and 'D' in env.render_text(index=0)
    result = play(make('freeway', num_envs=2, two_chickens=True, autopilot=True), 2100)
    assert result['n'] == 4 and result['score'] > 10


def test_freeway_autopilot_ignores_actions():
    a, b = make('freeway', autopilot=True, seed=3), make('freeway', autopilot=True, seed=3)
    a.reset(seed=3), b.reset(seed=3)
    for t in range(300):
        oa = a.step(np.zeros(4, np.int32))[0]
        ob = b.step(np.full(4, t % 3, np.int32))[0]
        assert np.array_equal(oa, ob)


# ---------------------------------------------------------------------------------------------
# Blastar
# ---------------------------------------------------------------------------------------------

def test_blastar_fire_launches_one_shot_at_a_time():
    env = make('blastar', num_envs=1, bomb_rate=0.0)
    obs, _ = env.reset(seed=0)
    assert obs[0, 5] == 0.0
    obs = env.step(np.full(1, 5, np.int32))[0]
    assert obs[0, 5] == 1.0 and obs[0, 3] == 0.0
    height = obs[0, 4]
    obs = env.step(np.full(1, 5, np.int32))[0]  # a second fire does nothing while the shot flies
    assert obs[0, 5] == 1.0 and obs[0, 4] < height


def test_blastar_kills_pay_one_and_ships_lost_cost_the_penalty():
    env = make('blastar', num_envs=8, bomb_rate=0.5, death_penalty=2.0, lives=2)
    env.reset(seed=0)
    pool = tools.random_actions(env.single_action_space, 8, 256, seed=0)
    ends, logged, perf = 0, 0, 0.0
    for t in range(3000):
        _, rewards, terminals, truncations, infos = env.step(pool[t % 256])
        assert set(np.unique(rewards)) <= {-2.0, 0.0, 1.0, -1.0}
        assert not truncations.any()
        ends += int(terminals.sum())
        logged += sum(int(log['n']) for log in infos)
        perf += sum(log['perf'] * log['n'] for log in infos)
    logged += int(env.log().get('n', 0))
    assert ends == logged > 0  # two ships against heavy bombing: every game ends by losing them
    assert perf / logged < 0.5


def test_blastar_observes_the_wave_and_bomb_slots_its_options_give():
    assert make('blastar').single_observation_space.shape == (6 + 5 * 4 + 3 * 3,)
    env = make('blastar', wave_size=1, bombs=1)  # Atari's game: one enemy, one bomb
    assert env.single_observation_space.shape == (14,)
    obs, _ = env.reset(seed=0)
    assert (obs[:, 10] == 1.0).all() and (obs[:, 13] == 0.0).all()  # the enemy is alive, no bomb falls yet


def test_blastar_observes_each_enemys_velocity_and_where_to_aim():
    """The first wave flies at enemy_speed, row 0 to the right: velocity / the shot's speed. The aim field
    is where the enemy will be when a shot fired now reaches its row: firing from there hits it."""
    env = make('blastar', num_envs=1, wave_size=1, bombs=1, bomb_rate=0.0, enemy_speed=1.5)
    obs, _ = env.reset(seed=3)
    assert obs[0, 8] == pytest.approx(1.5 / 6.0)
    dx, aim = obs[0, 6], obs[0, 9]
    assert aim > dx  # flying right: lead to the right
    for _ in range(400):  # fly to the aim point and fire: the first shot kills
        aim = obs[0, 9] * 160
        action = 5 if abs(aim) < 2 else (2 if aim > 0 else 1)
        obs, reward, *_ = env.step(np.array([action], np.int32))
        if reward[0] > 0:
            break
    assert reward[0] == 1.0


@pytest.mark.parametrize('bombs', [1, 2])
def test_blastar_bombs_caps_the_bombs_falling_at_once(bombs):
    """With an enemy bombing whenever it can, the cap is reached and never passed (the text view draws
    every live bomb, whether or not the observation has a slot for it)."""
    env = make('blastar', num_envs=4, wave_size=6, bombs=bombs, bomb_rate=1.0, lives=100)
    env.reset(seed=0)
    most = 0
    for _ in range(400):
        env.step(np.full(4, 0, np.int32))
        for i in range(4):
            most = max(most, env.render_text(index=i).count('*'))
    assert most == bombs


def test_blastar_clearing_max_waves_wins():
    env = make('blastar', num_envs=4, autopilot=True, max_waves=2, bomb_rate=0.0)
    result = play(env, 1500)
    assert result['perf'] == 1.0 and result['score'] == 2 * 4


def test_blastar_scripted_ship_outscores_random():
    scripted = play(make('blastar', num_envs=8, autopilot=True), 3000)
    rand = play(make('blastar', num_envs=8), 3000)
    print(f'blastar kills: scripted {scripted["score"]:.1f}, random {rand["score"]:.1f}')
    assert scripted['score'] > 5 * rand['score'] > 0


# ---------------------------------------------------------------------------------------------
# Pac-Man
# ---------------------------------------------------------------------------------------------

PELLETS = slice(47, 291)
NEAREST = slice(291, 295)


def ghost_tiles(obs):
    """(column, row) of every ghost from one observation row (offsets from Pac-Man)."""
    x, y = round(obs[0] * 27), round(obs[1] * 30)
    return [(x + round(obs[11 + 9 * i] * 27), y + round(obs[12 + 9 * i] * 30)) for i in range(4)]


def test_pacman_pellets_are_eaten_once_and_pay():
    env = make('pacman', num_envs=1, death_penalty=0.0)
    obs, _ = env.reset(seed=0)
    assert obs[0, PELLETS].sum() == 244 and obs[0, NEAREST].sum() == 1
    obs, rewards, _, _, _ = env.step(np.full(1, 1, np.int32))  # left from the start tile: a pellet
    assert rewards[0] == pytest.approx(0.1) and obs[0, PELLETS].sum() == 243
    obs, rewards, _, _, _ = env.step(np.full(1, 3, np.int32))  # back right: the tile is empty now
    assert rewards[0] == 0.0 and obs[0, PELLETS].sum() == 243


def test_pacman_nearest_pellet_points_along_an_open_way():
    env = make('pacman', num_envs=4)
    obs, _ = env.reset(seed=0)
    pool = tools.random_actions(env.single_action_space, 4, 256, seed=0)
    for t in range(2000):
        obs = env.step(pool[t % 256])[0]
        compass, open_ways = obs[:, NEAREST], obs[:, 6:10]
        assert (compass.sum(1) == 1).all()
        assert (open_ways[compass == 1] == 1).all()


def test_pacman_blinky_scatters_to_his_corner_first():
    """The first phase is scatter: Blinky, out of the house from the start, heads for the top right."""
    env = make('pacman', num_envs=1, ghost_speed=1.0)
    obs, _ = env.reset(seed=0)
    for _ in range(40):
        obs = env.step(np.full(1, 1, np.int32))[0]
    bx, by = ghost_tiles(obs[0])[0]
    assert bx >= 18 and by <= 8, (bx, by)


def test_pacman_power_pellet_frightens_the_ghosts():
    env = make('pacman', num_envs=1, frightened_steps=40, ghost_speed=0.1)
    obs, _ = env.reset(seed=0)
    # from the start (13, 23) to the power pellet at (1, 23): left 7, down 3, left 3, up 3, left 2
    saw = False
    for action in [1] * 7 + [2] * 3 + [1] * 3 + [0] * 3 + [1] * 2:
        obs, rewards, _, _, _ = env.step(np.full(1, action, np.int32))
        if rewards[0] == pytest.approx(0.5):
            saw = True
            assert obs[0, 10] == pytest.approx(1.0 - 0.0, abs=0.03)
            ghosts = obs[0, 11:47].reshape(4, 9)
            assert ghosts[0, 7] == 1.0  # Blinky, out of the house, is frightened
    assert saw


def test_pacman_losing_every_life_ends_the_game():
    env = make('pacman', num_envs=4, lives=2)
    result = play(env, 3000)
    assert result['perf'] == 0.0 and result['episode_length'] < 3000


def test_pacman_scripted_clears_the_maze_random_does_not():
    scripted = play(make('pacman', num_envs=8, autopilot=True), 3000)
    rand = play(make('pacman', num_envs=8), 3000)
    print(f'pacman: scripted clears {scripted["perf"]:.2f} ({scripted["score"]:.0f} points), random clears '
          f'{rand["perf"]:.2f} ({rand["score"]:.0f} points)')
    assert scripted['perf'] > 0.5 and rand['perf'] == 0.0
    assert scripted['score'] >= 2600 * scripted['perf']  # clearing eats 240 x 10 + 4 x 50 points


# ---------------------------------------------------------------------------------------------
# Asteroids
# ---------------------------------------------------------------------------------------------

def rocks_in_view(obs, observed=8):
    """The observed rocks' radii over 8 (1 large, 0.5 medium, 0.25 small; 0 an empty slot)."""
    return obs[:, 5:].reshape(len(obs), observed, 5)[:, :, 4]


def test_asteroids_start_with_the_first_wave_shielded_at_the_centre():
    env = make('asteroids', num_envs=2, first_wave=3)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(rocks_in_view(obs), [[1, 1, 1, 0, 0, 0, 0, 0]] * 2)
    assert (obs[:, 2] == 1).all() and (obs[:, 3] == 1).all() and (obs[:, 4] == 1).all()  # ready, shielded, 3/3
    assert 'heading 48/64' in env.render_text()
    env.step(np.full(2, 2, np.int32))  # turn left
    assert 'heading 47/64' in env.render_text()
    obs = env.step(np.full(2, 4, np.int32))[0]  # fire: reloading, one shot in flight
    assert (obs[:, 2] == 0).all() and '*' in env.render_text()


def test_asteroids_shots_split_rocks_and_every_hit_pays_one():
    """With no death penalty the rewards are the hits; the rocks seen grow smaller as they split."""
    env = make('asteroids', num_envs=8, autopilot=True, death_penalty=0.0, max_steps=600)
    obs, _ = env.reset(seed=1)
    total, radii = 0.0, set()
    for _ in range(600):
        obs, rewards, *_ = env.step(np.zeros(8, np.int32))
        assert set(np.unique(rewards)) <= {0.0, 1.0, 2.0}
        total += float(rewards.sum())
        radii.update(np.unique(rocks_in_view(obs)).tolist())
    log = env.log()
    assert log['n'] == 8 and total == pytest.approx(log['score'] * 8) and log['score'] > 10
    assert {1.0, 0.5, 0.25} <= radii


def test_asteroids_every_ship_lost_costs_the_penalty_and_the_last_ends_the_game():
    env = make('asteroids', num_envs=16, lives=2, death_penalty=2.5, rock_speed=4.0, first_wave=8)
    env.reset(seed=3)
    lost = np.zeros(16)
    ended = []
    for _ in range(3000):
        obs, rewards, terminals, truncations, _ = env.step(np.zeros(16, np.int32))  # sit still, never shoot
        assert not truncations.any()
        lost += rewards == -2.5
        for row in np.flatnonzero(terminals):
            ended.append(lost[row])
            lost[row] = 0
    assert len(ended) >= 16 and set(ended) == {2}


def test_asteroids_scripted_gunner_outscores_random_buttons():
    scripted = play(make('asteroids', num_envs=8, autopilot=True), 4000)
    rand = play(make('asteroids', num_envs=8), 4000)
    print(f'asteroids rocks hit: scripted {scripted["score"]:.1f}, random {rand["score"]:.1f}')
    assert scripted['score'] > 3 * rand['score'] and scripted['perf'] > rand['perf']


def test_asteroids_refuses_options_out_of_range_with_one_error():
    with pytest.raises(pufferlib.PufferError, match='observed=33 is outside \\[1, 32\\]'):
        make('asteroids', observed=33)
    with pytest.raises(pufferlib.PufferError, match='first_wave=9 is outside'):
        make('asteroids', first_wave=9)
    with pytest.raises(pufferlib.PufferError, match='lives=0 is outside'):
        make('asteroids', lives=0)
