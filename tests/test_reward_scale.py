"""train.normalize_rewards (pufferlib/reward_scale.py): one running statistic of the discounted return for every
row, the rewards divided by its standard deviation and clipped, in the trainer's rollout and its checkpoints."""
import functools

import numpy as np
import pytest

torch = pytest.importorskip('torch')

import pufferlib  # noqa: E402
from pufferlib import config as configuration  # noqa: E402
from pufferlib import vector  # noqa: E402
from pufferlib.models import make_policy  # noqa: E402
from pufferlib.reward_scale import RewardScaler  # noqa: E402
from pufferlib.trainer import Trainer  # noqa: E402


def test_the_statistics_are_those_of_every_live_rows_discounted_return():
    """4 rows, 300 steps, episodes of random lengths: the running mean and variance are those of all the
    discounted returns of live rows (one pooled statistic, rows ended by `dones` start again from 0), and each
    reward comes back over the standard deviation as it stood after its step, clipped."""
    rng = np.random.default_rng(0)
    scaler = RewardScaler(4, gamma=0.9, clip=3.0)
    returns, seen = np.zeros(4), []
    for step in range(300):
        rewards = rng.normal(2.0, 5.0, 4).astype(np.float32)
        dones = rng.random(4) < 0.05
        live = np.array([True, True, True, step % 2 == 0])  # row 3 is padding every other step
        scaled = scaler(slice(0, 4), rewards, dones, live)
        returns = returns * 0.9 + rewards
        seen.extend(returns[live])
        returns[dones] = 0.0
        assert scaled.dtype == np.float32
        np.testing.assert_allclose(scaled, np.clip(rewards / np.std(seen), -3, 3), rtol=1e-4)
    assert scaler.mean == pytest.approx(np.mean(seen), rel=1e-6)
    assert scaler.var == pytest.approx(np.var(seen), rel=1e-6)
    assert (np.abs(scaled) <= 3).all() and scaler.std > 1


def test_a_block_of_rows_moves_only_its_own_returns():
    scaler = RewardScaler(4, gamma=0.5, clip=0)
    scaler(slice(0, 2), np.array([1.0, 2.0], np.float32), np.array([False, True]))
    scaler(slice(2, 4), np.array([4.0, 8.0], np.float32), np.array([False, False]))
    np.testing.assert_array_equal(scaler.returns, [1.0, 0.0, 4.0, 8.0])


def test_a_restart_ends_the_returns_in_flight_and_keeps_the_statistics():
    scaler = RewardScaler(3, gamma=0.5, clip=0)
    scaler(slice(0, 3), np.array([1.0, 2.0, 3.0], np.float32), np.array([False, False, False]))
    state = scaler.state_dict()
    scaler.restart(slice(1, 3))
    np.testing.assert_array_equal(scaler.returns, [1.0, 0.0, 0.0])
    scaler.restart()
    np.testing.assert_array_equal(scaler.returns, [0.0, 0.0, 0.0])
    assert scaler.state_dict() == state


@pytest.fixture
def pendulum_rollout():
    """Two trainers after one 4-env x 32-step rollout on Pendulum from one seed, with normalize_rewards and
    without it (the first rollout's actions do not depend on the rewards, so the steps are the same)."""
    def run(normalize):
        config = configuration.load('Pendulum-v1', [
            '--train.bptt-horizon', '32', '--train.minibatch-size', '128', '--train.total-timesteps', '4096',
            '--train.normalize-rewards', normalize, '--train.seed', '3'])
        vecenv = vector.make(functools.partial(pufferlib.make, 'Pendulum-v1'), num_envs=4, backend='Serial', seed=3)
        torch.manual_seed(3)
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        trainer.rollout()
        vecenv.close()
        return trainer
    return run('true'), run('false')


def test_the_rollout_stores_the_scaled_rewards_and_the_checkpoint_the_statistics(pendulum_rollout):
    scaled, raw = pendulum_rollout
    assert torch.equal(scaled.actions, raw.actions) and torch.equal(scaled.dones, raw.dones)
    replay = RewardScaler(4, gamma=scaled.train_config['gamma'], clip=10.0)
    expected = np.stack([replay(slice(0, 4), raw.rewards[:, t].numpy(), raw.dones[:, t].numpy() > 0)
                         for t in range(32)], axis=1)
    np.testing.assert_allclose(scaled.rewards.numpy(), expected, rtol=1e-6)
    assert not np.allclose(scaled.rewards.numpy(), raw.rewards.numpy())  # Pendulum's rewards reach -16
    assert scaled.reward_scale.state_dict() == replay.state_dict()
    assert raw.reward_scale is None and 'reward_scale' not in raw.state_dict()

    config = configuration.load('Pendulum-v1', ['--train.normalize-rewards', 'true'])
    vecenv = vector.make(functools.partial(pufferlib.make, 'Pendulum-v1'), num_envs=4, backend='Serial')
    try:
        resumed = Trainer(config, vecenv, make_policy(vecenv, config))
        resumed.load_state_dict(scaled.state_dict())
        assert resumed.reward_scale.state_dict() == replay.state_dict()
        resumed.load_state_dict(raw.state_dict())  # a checkpoint from a run without it: kept as it was
        assert resumed.reward_scale.state_dict() == replay.state_dict()
    finally:
        vecenv.close()
