"""The multi-particle envs (pufferlib/environments/mpe2.py) through the PettingZoo emulation: rows per
agent, role padding, determinism in both backends, a short training run. Skips without the mpe2 extra."""
import numpy as np
import pytest

import pufferlib
import pufferlib.vector
from pufferlib.environments import mpe2 as binding

from small_run import assert_missing_extra_is_one_line, train_briefly

pytest.importorskip('mpe2', reason='pip install -c constraints.txt -e ".[mpe2]" (see docs/environments.md)')

# name -> (agent rows, observation width: the longest role's + a role one-hot where roles differ)
SHAPES = {'mpe2_simple_spread': (3, 18), 'mpe2_simple_adversary': (3, 10 + 2), 'mpe2_simple_tag': (4, 16 + 2)}


@pytest.mark.parametrize('name', list(SHAPES))
def test_rows_per_agent_and_a_whole_episode(name):
    agents, width = SHAPES[name]
    env = pufferlib.make(name)
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (agents, width) and env.single_action_space.n == 5
        episodes = []
        for t in range(25):
            obs, rewards, terminals, truncations, infos = env.step(np.full(agents, t % 5))
            assert np.isfinite(obs).all() and np.isfinite(rewards).all()
            episodes.extend(infos)
        assert truncations.all() and len(episodes) == 1 and episodes[0]['episode_length'] == 25  # max_cycles
    finally:
        env.close()


def test_roles_are_padded_and_marked():
    """simple_adversary: the adversary sees 8 numbers, the good agents 10; each row says its role."""
    from mpe2 import simple_adversary_v3
    raw = simple_adversary_v3.parallel_env()
    raw_obs, _ = raw.reset(seed=3)
    env = pufferlib.make('mpe2_simple_adversary')
    obs, _ = env.reset(seed=3)
    for row, agent in enumerate(raw.possible_agents):
        native = raw_obs[agent]
        np.testing.assert_allclose(obs[row, :native.size], native, rtol=1e-6)
        assert (obs[row, native.size:10] == 0).all()
    assert obs[0, 10:].tolist() == [1, 0] and obs[1, 10:].tolist() == [0, 1] and obs[2, 10:].tolist() == [0, 1]
    env.close()
    raw.close()


def test_serial_and_multiprocessing_agree_under_a_seed():
    runs = []
    for backend in ('Serial', 'Multiprocessing'):
        with pufferlib.vector.make('mpe2_simple_tag', backend=backend, num_envs=2, num_workers=2) as vecenv:
            obs, _ = vecenv.reset(seed=9)
            seen = [obs.copy()]
            rng = np.random.default_rng(1)
            for _ in range(40):  # across the 25-step episode end
                obs, rewards, _, _, _ = vecenv.step(rng.integers(0, 5, vecenv.num_agents).astype(vecenv.action_dtype))
                seen.append(np.concatenate([obs.ravel(), rewards.ravel()]))
            runs.append(seen)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_missing_package_is_one_line(monkeypatch):
    assert_missing_extra_is_one_line(monkeypatch, 'mpe2', 'mpe2', 'mpe2_simple_spread')


def test_training_smoke(tmp_path, monkeypatch):
    pytest.importorskip('torch')
    monkeypatch.chdir(tmp_path)
    train_briefly('mpe2_simple_spread', '--vec.num-envs', '2', '--vec.num-workers', '2',
                  '--train.minibatch-size', '50', steps=600)


def test_names_are_the_bound_tasks():
    assert set(SHAPES) <= set(binding.env_names())
