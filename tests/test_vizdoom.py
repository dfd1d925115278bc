"""ViZDoom (pufferlib/environments/vizdoom.py): the two observation fields, downsampling, episodes ending
as terminals or truncations, reward scaling, determinism in both backends, errors, a training smoke run.
Skips without the vizdoom extra."""
import numpy as np
import pytest

import pufferlib
import pufferlib.vector
from pufferlib.environments import vizdoom as binding

from small_run import assert_missing_extra_is_one_line, train_briefly

pytest.importorskip('vizdoom', reason='pip install -c constraints.txt -e ".[vizdoom]" (see docs/environments.md)')

# name -> (buttons, game variables in its .cfg)
SCENARIOS = {'vizdoom_basic': (3, 1), 'vizdoom_defend_the_center': (3, 2), 'vizdoom_health_gathering': (3, 1),
             'vizdoom_deadly_corridor': (7, 1)}


@pytest.mark.parametrize('name', list(SCENARIOS))
def test_screen_and_variables_fields(name):
    buttons, variables = SCENARIOS[name]
    env = pufferlib.make(name)
    try:
        env.reset(seed=0)
        assert env.single_action_space.n == buttons
        assert env.obs_dtype['screen'].shape == (60, 80, 1) and env.obs_dtype['variables'].shape == (variables,)
        for t in range(5):
            obs, rewards, _, _, _ = env.step(np.array([t % buttons]))
        row = obs[0].view(env.obs_dtype)[0]
        assert row['screen'].std() > 0  # a rendered view, not a blank buffer
        assert np.isfinite(rewards).all()
    finally:
        env.close()


def test_variables_are_the_game_state():
    """defend_the_center: AMMO2 and HEALTH, 26 rounds and 100 health at the start."""
    env = pufferlib.make('vizdoom_defend_the_center')
    obs, _ = env.reset(seed=0)
    assert obs[0].view(env.obs_dtype)[0]['variables'].tolist() == [26.0, 100.0]
    env.close()


def test_resolution_colour_and_render():
    env = pufferlib.make('vizdoom_basic', resolution='84x84', color=True)
    try:
        obs, _ = env.reset(seed=0)
        screen = obs[0].view(env.obs_dtype)[0]['screen']
        assert screen.shape == (84, 84, 3)
        assert np.abs(screen[..., 0].astype(int) - screen[..., 2]).max() > 0  # colour, not grey thrice
        frame = env.render()
        assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
    finally:
        env.close()


def test_grey_is_the_block_average_of_the_frame():
    """60x80 from 120x160: each pixel the mean luma of a 2x2 block of the colour frame render() shows."""
    env = pufferlib.make('vizdoom_basic')
    try:
        obs, _ = env.reset(seed=0)
        grey = obs[0].view(env.obs_dtype)[0]['screen'][..., 0].astype(np.float32)
        frame = env.render().astype(np.float32)
        expected = (frame.reshape(60, 2, 80, 2, 3).mean(axis=(1, 3)) @ binding.GREY)
        assert np.abs(grey - expected).max() <= 1.0
    finally:
        env.close()


def test_timeout_is_a_truncation_and_returns_stay_in_game_units():
    """basic: 300 tics, 4 a step; strafing never kills, so the episode times out at -1 a tic. The trainer
    sees the reward scaled, episode_return reports the game's own."""
    env = pufferlib.make('vizdoom_basic', reward_scale=0.01)
    try:
        env.reset(seed=0)
        episodes = []
        for t in range(75):
            _, rewards, terminals, truncations, infos = env.step(np.array([t % 2]))  # left, right: no shot
            episodes.extend(infos)
            if t < 74:
                assert not (terminals[0] or truncations[0])
        assert truncations[0] and not terminals[0]
        assert rewards[0] == pytest.approx(-0.04)
        assert episodes == [{'episode_return': -300.0, 'episode_length': 75}]
    finally:
        env.close()


def test_frame_skip_sets_tics_per_step():
    env = pufferlib.make('vizdoom_basic', frame_skip=1)
    try:
        env.reset(seed=0)
        _, rewards, _, _, _ = env.step(np.array([0]))
        assert rewards[0] == -1.0
    finally:
        env.close()


def test_serial_and_multiprocessing_agree_under_a_seed():
    runs = []
    for backend in ('Serial', 'Multiprocessing'):
        with pufferlib.vector.make('vizdoom_defend_the_center', backend=backend, num_envs=2, num_workers=2) as vecenv:
            obs, _ = vecenv.reset(seed=5)
            seen = [obs.copy()]
            rng = np.random.default_rng(2)
            for _ in range(30):
                obs, rewards, _, _, _ = vecenv.step(rng.integers(0, 3, vecenv.num_agents).astype(vecenv.action_dtype))
                seen.append(np.concatenate([obs.ravel().astype(np.float64), rewards.ravel()]))
            runs.append(seen)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('option, value, words', [
    ('resolution', '60by80', 'HxW'),
    ('resolution', '300x400', 'out of range'),
    ('frame_skip', 0, 'frame_skip must be >= 1'),
    ('reward_scale', 0, 'reward_scale must be > 0'),
    ('game_variables', 'HEALTH,MANA', 'MANA'),
])
def test_bad_options_are_one_clear_error(option, value, words):
    with pytest.raises(pufferlib.APIUsageError, match=words):
        pufferlib.make('vizdoom_basic', **{option: value})


def test_game_variables_option():
    env = pufferlib.make('vizdoom_basic', game_variables='HEALTH, AMMO2, KILLCOUNT')
    obs, _ = env.reset(seed=0)
    assert obs[0].view(env.obs_dtype)[0]['variables'].tolist() == [100.0, 50.0, 0.0]
    env.close()


def test_missing_package_is_one_line(monkeypatch):
    assert_missing_extra_is_one_line(monkeypatch, 'vizdoom', 'vizdoom', 'vizdoom_basic')


def test_training_smoke(tmp_path, monkeypatch):
    pytest.importorskip('torch')
    monkeypatch.chdir(tmp_path)
    train_briefly('vizdoom_basic', '--vec.num-envs', '2', '--vec.num-workers', '2', '--vec.batch-size', '2',
                  '--train.minibatch-size', '64', steps=256)


def test_names_are_the_four_scenarios():
    assert binding.env_names() == list(SCENARIOS)
