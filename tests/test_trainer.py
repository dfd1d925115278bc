"""The PPO core (pufferlib.trainer.Trainer): rollout, update, the numbers it guards and the checkpoints it
writes, on real Ocean and Gymnasium envs. The job around it (runs, resume, signals): tests/test_train.py."""
import contextlib
import functools
import glob
import math
import os
import re

import pytest
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.checkpoint import load_checkpoint
from pufferlib.models import make_policy
from pufferlib.rundir import CheckpointError
from pufferlib.trainer import NonFiniteError, Trainer

from envs import Countdown, NonFiniteEnv, NonFiniteRowEnv
from small_run import SMALL, train_small


pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path


run_train = train_small


# --- rollout and update ----------------------------------------------------------------------

def test_minibatch_larger_than_rollout_is_an_error():
    with pytest.raises(configuration.ConfigError, match='train.minibatch_size=8192 is larger than one rollout'):
        run_train('puffer_squared', '--train.minibatch-size', '8192')


def test_every_transition_trains_and_bootstraps_from_the_next_observation():
    """The rollout fills all horizon steps of every row, and last_values is the value of the
    observation after the segment (held for the next epoch), not a wasted step."""
    with small_trainer(1024) as trainer:
        rows_total = trainer.vecenv.num_agents
        trainer.rollout()
        assert trainer.global_step == rows_total * trainer.horizon
        assert len(trainer.held) == 2  # both blocks wait with their next observation
        for obs, ids, _, _ in trainer.held:
            with torch.no_grad():
                _, value = trainer.policy(obs)
            rows = slice(int(ids[0]), int(ids[-1]) + 1)
            torch.testing.assert_close(trainer.last_values[rows], value.flatten())
        trainer.update()
        trainer.rollout()  # the held batches start the next segments
        assert trainer.global_step == 2 * rows_total * trainer.horizon


def test_bootstrap_truncations_credits_time_limit_ends_only():
    """Row 0 ends its episodes by a time limit, row 1 by terminal steps, both after 5 steps. Only row 0's ends
    are truncations, and with train.bootstrap_truncations their targets keep gamma * V of the state acted in."""
    from pufferlib import vector
    from pufferlib.advantage import compute_advantage
    config = configuration.load('puffer_squared', ['--train.bptt-horizon', '16', '--train.minibatch-size', '32',
                                                   '--train.bootstrap-truncations', 'true'])
    vecenv = vector.make([functools.partial(Countdown, 5, False), functools.partial(Countdown, 5, True)],
                         num_envs=2)
    try:
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        trainer.rollout()
        ends = [4, 9, 14]
        assert trainer.truncations[0].nonzero().flatten().tolist() == ends
        assert trainer.truncations[1].sum() == 0 and trainer.dones[1].nonzero().flatten().tolist() == ends
        bootstrapped = trainer.advantages()
        credit = config['train']['gamma'] * trainer.values * trainer.truncations
        expected = compute_advantage(trainer.values, trainer.rewards + credit, trainer.dones, trainer.last_values,
                                     gamma=config['train']['gamma'], lam=config['train']['gae_lambda'])
        torch.testing.assert_close(bootstrapped, expected)
        trainer.train_config['bootstrap_truncations'] = False
        plain = trainer.advantages()
        torch.testing.assert_close(plain[1], bootstrapped[1])  # terminal ends are untouched
        assert not torch.allclose(plain[0], bootstrapped[0])
    finally:
        vecenv.close()


STEPS = ['--train.minibatch-sampling', 'steps', '--train.prio-alpha', '0']


def test_step_minibatches_use_every_step_once_an_epoch_and_gae_once():
    """minibatch_sampling = "steps": each epoch is a fresh shuffle of all the rollout's steps (here 1,024 in 8
    minibatches of 128, not a multiple of the 16-step segments), the advantages are computed once."""
    with small_trainer(2048, *STEPS, '--train.minibatch-size', '128', '--train.update-epochs', '3') as trainer:
        seen, calls = [], []
        evaluate, advantages = trainer._evaluate, trainer.advantages
        trainer._evaluate = lambda idx: (seen.append(idx.clone()), evaluate(idx))[1]
        trainer.advantages = lambda: (calls.append(1), advantages())[1]
        trainer.rollout()
        trainer.update()
        assert len(calls) == 1 and len(seen) == 24 and all(idx.shape == (128,) for idx in seen)
        epochs = [torch.cat(seen[i:i + 8]) for i in range(0, 24, 8)]
        for order in epochs:
            assert torch.equal(order.sort().values, torch.arange(1024))
        assert not torch.equal(epochs[0], epochs[1])  # shuffled anew
        trainer.rollout()  # the next rollout and update run on
        assert math.isfinite(trainer.update()['policy_loss'])


def test_step_minibatches_train_and_refuse_a_recurrent_policy():
    summary = run_train('puffer_squared', *STEPS, '--train.minibatch-size', '64', steps=4096)
    assert summary['global_step'] == 4096
    with pytest.raises(configuration.ConfigError, match='"steps" needs a feed-forward policy'):
        run_train('puffer_memory', *STEPS, '--rnn.class', 'pufferlib.models:LSTMWrapper', '--rnn.input-size', '32',
                  '--rnn.hidden-size', '32', '--policy.hidden-size', '32', steps=2048)


def test_gradients_live_in_one_buffer_and_clip_as_torch_clips_them():
    """With Adam the update zeroes and clips one gradient buffer the parameters' .grad are views of: the
    clipped gradients and the norm are torch's clip_grad_norm_'s, and a zero_grad from outside (grads set to
    None) does not cut the parameters off from it."""
    with small_trainer(2048, '--train.optimizer', 'adam', '--train.max-grad-norm', '0.01') as trainer:
        params, flat = trainer.params, trainer.flat_grad
        assert flat is not None and flat.numel() == sum(p.numel() for p in params)
        trainer.rollout()
        trainer.update()
        assert flat.abs().sum() > 0  # backward added into the buffer
        assert all(p.grad.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr() for p in params)
        torch.manual_seed(0)
        flat.copy_(torch.randn_like(flat))
        reference = [p.grad.clone().requires_grad_(False) for p in params]
        copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
        for copy, grad in zip(copies, reference):
            copy.grad = grad
        expected = torch.nn.utils.clip_grad_norm_(copies, 0.01)
        torch.testing.assert_close(trainer._clip_gradients(0.01), expected)
        for p, copy in zip(params, copies):
            torch.testing.assert_close(p.grad, copy.grad)
        trainer.policy.zero_grad(set_to_none=True)
        before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        trainer.rollout()
        trainer.update()
        assert all(p.grad.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr() for p in params)
        assert any(not torch.equal(v, before[k]) for k, v in trainer.policy.state_dict().items())


@contextlib.contextmanager
def small_trainer(steps, *flags):
    """A Trainer on the SMALL puffer_squared setup, its env workers closed afterwards."""
    config = configuration.load('puffer_squared', [*SMALL, '--train.total-timesteps', str(steps), *flags])
    vecenv = training.make_vecenv('puffer_squared', config)
    try:
        yield Trainer(config, vecenv, make_policy(vecenv, config))
    finally:
        vecenv.close()


def test_recurrent_policy_and_pool_paths_train():
    summary = run_train('puffer_memory', '--rnn.class', 'pufferlib.models:LSTMWrapper', '--rnn.input-size', '64',
                        '--rnn.hidden-size', '64', '--policy.hidden-size', '64', steps=2048)
    assert summary['global_step'] == 2048


def test_bfloat16_autocast_trains_with_finite_losses(monkeypatch):
    casts = []
    original = torch.autocast.__init__

    def spy(self, device_type, *args, **kwargs):
        casts.append((device_type, kwargs.get('dtype')))
        original(self, device_type, *args, **kwargs)
    monkeypatch.setattr(torch.autocast, '__init__', spy)
    summary = run_train('puffer_memory', '--train.precision', 'bfloat16', '--rnn.class',
                        'pufferlib.models:LSTMWrapper', '--rnn.input-size', '32', '--rnn.hidden-size', '32',
                        '--policy.hidden-size', '32', steps=2048)
    assert ('cpu', torch.bfloat16) in casts
    assert summary['global_step'] == 2048
    losses = {k: v for k, v in summary['last'].items() if k.endswith('loss')}
    assert losses and all(math.isfinite(v) for v in losses.values()), summary['last']


def test_default_hyperparameters_solve_bandit_quickly():
    """A fast learning check for CI; the full sanity suite runs in scripts/lab/acceptance_train.py."""
    config = configuration.load('puffer_bandit', ['--train.total-timesteps', '2000000', '--train.log-interval', '0'])
    summary = training.train('puffer_bandit', config=config, quiet=True)
    assert summary['episodes']['env/perf'] > 0.9, summary['episodes']


def test_episode_stats_count_the_episodes_behind_their_means():
    """A log row says how many episodes its means pool (Ocean's infos summarize `n` episodes each)."""
    import types
    holder = types.SimpleNamespace(episode_infos=[{'episode_return': 1.0}, {'episode_return': 3.0},
                                                  {'episode_return': 2.0, 'score': 2.0, 'n': 5.0}])
    stats = Trainer.episode_stats(holder)
    assert stats['episodes'] == 7 and stats['episode_return'] == 2.0 and stats['score'] == 2.0
    assert holder.episode_infos == [] and Trainer.episode_stats(holder) == {}


# --- checkpoints -----------------------------------------------------------------------------

def test_corrupt_and_mismatched_checkpoints_are_clear_errors(tmp_path):
    summary = run_train('puffer_squared', steps=1024)
    env = pufferlib.make('puffer_squared')
    config = configuration.load('puffer_squared', ['--policy.hidden-size', '64'])
    policy = make_policy(env, config)
    with pytest.raises(CheckpointError, match='does not fit this policy'):
        load_checkpoint(summary['checkpoint'], policy)
    corrupt = tmp_path / 'corrupt.pt'
    corrupt.write_bytes(open(summary['checkpoint'], 'rb').read()[:100])
    with pytest.raises(CheckpointError, match='corrupt or not a pufferlib checkpoint'):
        load_checkpoint(str(corrupt))
    with pytest.raises(CheckpointError, match='does not exist'):
        load_checkpoint(str(tmp_path / 'missing.pt'))


@pytest.mark.slow
def test_compiled_policy_trains_and_checkpoints_the_plain_weights(experiments):
    """torch.compile on CPU (inductor builds C++ with the system compiler): about a minute."""
    summary = run_train('puffer_squared', '--train.compile', 'true', '--policy.hidden-size', '32', steps=2048)
    assert summary['global_step'] == 2048
    state = torch.load(summary['checkpoint'], weights_only=True)
    assert not any('_orig_mod' in key for key in state['policy']), 'checkpoint holds the compiled wrapper'


# --- non-finite numbers ----------------------------------------------------------------------

def nonfinite_config(steps=100_000):
    return configuration.load('CartPole-v1', ['--vec.backend', 'Serial', '--vec.num-envs', '4',
                                              '--train.bptt-horizon', '8', '--train.minibatch-size', '32',
                                              '--train.total-timesteps', str(steps), '--train.checkpoint-interval',
                                              '1'])


@pytest.mark.parametrize('what, value', [('reward', float('nan')), ('observation', float('inf'))])
def test_non_finite_env_output_stops_with_its_rows_and_step_and_a_checkpoint(experiments, what, value):
    """Env 2 of 4 goes bad at its 20th step, in the third epoch (8 steps per row per epoch): the error
    names row 2 and the step, before the value reaches the loss, and the last epoch is saved."""
    env = functools.partial(NonFiniteRowEnv, what, 20, 2, value)
    with pytest.raises(NonFiniteError) as error:
        training.train(env, config=nonfinite_config(), quiet=True)
    message = str(error.value)
    assert f'non-finite {what}s ({value})' in message and 'env rows 2 (envs 2)' in message, message
    assert re.search(r'at global step \d+, epoch 3', message), message
    assert re.search(r'\bnon-finite\b', message)  # what pufferlib.sweep reads as a diverged trial
    path = re.search(r'The last checkpoint is (\S+\.pt)', message).group(1)
    state = load_checkpoint(path)
    assert state['epoch'] == 2 and state['global_step'] == 2 * 4 * 8  # the two good epochs, nothing after
    assert all(torch.isfinite(t).all() for t in state['policy'].values())


def test_non_finite_float_field_of_a_structured_observation_stops_the_run(experiments):
    """A Dict observation travels as bytes; its float field going inf is still caught (the uint8 field
    is all 0xFF bytes, which would read as NaN if the bytes were taken for floats)."""
    env = functools.partial(NonFiniteEnv, 'obs', 20, True)
    with pytest.raises(NonFiniteError, match=r'non-finite observations \(in a float field'):
        training.train(env, config=nonfinite_config(), quiet=True)


def test_a_loss_that_becomes_non_finite_stops_before_the_weights_step():
    with small_trainer(4096) as trainer:
        policy = trainer.policy
        trainer.rollout()
        value_head = [m for m in policy.modules() if isinstance(m, torch.nn.Linear)][-1]
        with torch.no_grad():
            value_head.bias.fill_(float('inf'))  # every value estimate, so the value loss, is inf
        before = {k: v.clone() for k, v in policy.state_dict().items()}
        with pytest.raises(NonFiniteError, match=r'the loss became non-finite in the update of epoch 1 '
                                                 r'\(global step 1,024\): .*value_loss (inf|nan)'):
            trainer.update()
        for key, tensor in policy.state_dict().items():
            torch.testing.assert_close(tensor, before[key], equal_nan=True)  # nothing stepped


def test_a_diverging_run_keeps_its_last_good_checkpoint(experiments, monkeypatch):
    """Two good epochs, then a learning rate of 1e30 blows the weights up: the run stops with one
    error (the sweep's "diverged") that points at a checkpoint whose weights are all finite."""
    update = Trainer.update

    def update_with_a_huge_rate_from_epoch_3(self):
        for group in (g for o in self.optimizers for g in o.param_groups if self.epoch >= 2):
            group['lr'] = 1e30
        return update(self)
    monkeypatch.setattr(Trainer, 'update', update_with_a_huge_rate_from_epoch_3)
    with pytest.raises(NonFiniteError, match=r'non-finite') as error:
        run_train('puffer_squared', '--train.checkpoint-interval', '1', steps=1024 * 50)
    named = re.search(r'The last checkpoint is (\S+\.pt)', str(error.value)).group(1)
    assert os.path.basename(named) in ('epoch-0000002.pt', 'epoch-0000003.pt')  # 3 if its weights stayed finite
    for path in glob.glob(os.path.join(os.path.dirname(named), '*.pt')):
        state = torch.load(path, weights_only=True)
        assert all(torch.isfinite(t).all() for t in state['policy'].values()), path
