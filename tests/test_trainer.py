"""The trainer, its config, CLI, run directories and checkpoints, on real Ocean and Gymnasium envs."""
import functools
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import trainer as training
from pufferlib.cli import main

from envs import FaultyEnv

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')
# A small, quick experiment: 2 x 32 rows of squared, 16-step segments.
SMALL = ['--env.num-envs', '32', '--vec.num-envs', '2', '--vec.num-workers', '2', '--vec.batch-size', '1',
         '--train.bptt-horizon', '16', '--train.minibatch-size', '256', '--train.log-interval', '0']


@pytest.fixture(autouse=True)
def experiments(tmp_path, monkeypatch):
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path / 'experiments'))
    monkeypatch.setenv('WANDB_MODE', 'offline')
    monkeypatch.delenv('WANDB_API_KEY', raising=False)
    return tmp_path / 'experiments'


def run_train(env, *flags, steps=4096):
    config = configuration.load(env, [*SMALL, '--train.total-timesteps', str(steps), *flags])
    return training.train(env, config=config, quiet=True)


# --- config and flags ------------------------------------------------------------------------

@pytest.mark.parametrize('flags, match', [
    (['--train.learnin-rate', '0.1'], r'unknown key train.learnin_rate \(did you mean learning_rate'),
    (['--train.gamma', 'high'], 'train.gamma must be float'),
    (['--vec.num-envs', '2.5'], 'vec.num_envs must be int'),
    (['--train.minibatch-size', '100'], 'multiple of train.bptt_horizon'),
    (['--trian.gamma', '0.9'], r'unknown section \[trian\]'),
    (['--train.optimizer', 'sgd'], 'train.optimizer must be muon or adam'),
    (['train.gamma'], 'unexpected argument'),
    (['--vec.backend', 'Serial', '--vec.local-worker', 'true'],
     'vec.local_worker=true needs vec.backend=Multiprocessing'),
])
def test_bad_flags_name_the_key(flags, match):
    with pytest.raises(configuration.ConfigError, match=match):
        configuration.load('puffer_squared', flags)


def test_bad_config_file(tmp_path):
    path = tmp_path / 'bad.toml'
    path.write_text('[train]\nlearning_rate = "fast"\n')
    with pytest.raises(configuration.ConfigError, match='bad.toml: train.learning_rate must be float'):
        configuration.load('puffer_squared', config_file=str(path))
    path.write_text('[train\n')
    with pytest.raises(configuration.ConfigError, match='not valid TOML'):
        configuration.load('puffer_squared', config_file=str(path))


def test_minibatch_larger_than_rollout_is_an_error():
    with pytest.raises(configuration.ConfigError, match='train.minibatch_size=8192 is larger than one rollout'):
        run_train('puffer_squared', '--train.minibatch-size', '8192')


def test_cli_errors_exit_2_with_one_line(capsys):
    assert main(['train', 'puffer_squared', '--train.gama', '0.9']) == 2
    err = capsys.readouterr().err
    assert 'did you mean gamma' in err and 'Traceback' not in err
    assert main(['train', 'puffer_squaredd']) == 2
    assert 'Did you mean puffer_squared' in capsys.readouterr().err


def test_cli_help_lists_options_and_envs(capsys):
    assert main(['train', 'puffer_squared', '--help']) == 0
    out = capsys.readouterr().out
    assert '--train.learning-rate' in out and '--env.size' in out and 'puffer envs' in out


# --- a real run -------------------------------------------------------------------------------

def test_run_directory_metrics_and_checkpoint(experiments):
    summary = run_train('puffer_squared', steps=8192)
    run_dir = summary['run_dir']
    assert run_dir.startswith(str(experiments))
    assert summary['global_step'] == 8192 and summary['epoch'] == 8
    saved = configuration.read(os.path.join(run_dir, 'config.toml'))
    assert saved['_meta']['env'] == 'puffer_squared' and saved['train']['bptt_horizon'] == 16
    rows = [json.loads(line) for line in open(os.path.join(run_dir, 'metrics.jsonl'))]
    assert rows[-1]['global_step'] == 8192 and np.isfinite(rows[-1]['policy_loss'])
    state = torch.load(summary['checkpoint'], weights_only=True)
    assert state['global_step'] == 8192 and state['epoch'] == 8


def test_every_transition_trains_and_bootstraps_from_the_next_observation():
    """The rollout fills all horizon steps of every row, and last_values is the value of the
    observation after the segment (held for the next epoch), not a wasted step."""
    config = configuration.load('puffer_squared', [*SMALL, '--train.total-timesteps', '1024'])
    vecenv = training.make_vecenv('puffer_squared', config)
    try:
        policy = training.make_policy(vecenv, config)
        trainer = training.Trainer(config, vecenv, policy)
        trainer.rollout()
        assert trainer.global_step == vecenv.num_agents * trainer.horizon
        assert len(trainer.held) == 2  # both blocks wait with their next observation
        for obs, ids, _ in trainer.held:
            with torch.no_grad():
                _, value = policy(obs)
            rows = slice(int(ids[0]), int(ids[-1]) + 1)
            torch.testing.assert_close(trainer.last_values[rows], value.flatten())
        trainer.update()
        trainer.rollout()  # the held batches start the next segments
        assert trainer.global_step == 2 * vecenv.num_agents * trainer.horizon
    finally:
        vecenv.close()


def test_resume_after_sigkill_reaches_the_same_step_count(experiments):
    steps = 64 * 16 * 12
    args = [PUFFER, 'train', 'puffer_squared', *SMALL, '--train.total-timesteps', str(steps),
            '--train.checkpoint-interval', '1', '--quiet']
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments)}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    run_dir = None
    while time.monotonic() < deadline:
        runs = list(experiments.glob('puffer_squared-*')) if experiments.exists() else []
        if runs and len(list((runs[0] / 'checkpoints').glob('epoch-*.pt'))) >= 2:
            run_dir = runs[0]
            break
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert run_dir is not None
    before = torch.load(training.latest_checkpoint(str(run_dir)), weights_only=True)['global_step']
    assert before < steps
    out = subprocess.run([PUFFER, 'train', '--resume', 'latest', '--quiet'], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    state = torch.load(training.latest_checkpoint(str(run_dir)), weights_only=True)
    assert state['global_step'] == steps  # the same as a run never interrupted
    assert state['epoch'] == 12


def test_corrupt_and_mismatched_checkpoints_are_clear_errors(tmp_path):
    summary = run_train('puffer_squared', steps=1024)
    env = pufferlib.make('puffer_squared')
    config = configuration.load('puffer_squared', ['--policy.hidden-size', '64'])
    policy = training.make_policy(env, config)
    with pytest.raises(training.CheckpointError, match='does not fit this policy'):
        training.load_checkpoint(summary['checkpoint'], policy)
    corrupt = tmp_path / 'corrupt.pt'
    corrupt.write_bytes(open(summary['checkpoint'], 'rb').read()[:100])
    with pytest.raises(training.CheckpointError, match='corrupt or not a pufferlib checkpoint'):
        training.load_checkpoint(str(corrupt))
    with pytest.raises(training.CheckpointError, match='does not exist'):
        training.load_checkpoint(str(tmp_path / 'missing.pt'))


def test_worker_crash_ends_the_run_with_a_message_and_a_usable_checkpoint(capsys):
    config = configuration.load('CartPole-v1', ['--vec.num-envs', '2', '--vec.num-workers', '2',
                                                '--train.bptt-horizon', '8', '--train.minibatch-size', '16',
                                                '--train.total-timesteps', '100000',
                                                '--train.checkpoint-interval', '1000'])
    with pytest.raises(pufferlib.EnvError, match='boom'):
        training.train(functools.partial(FaultyEnv, 'raise', 100), config=config, quiet=True)
    err = capsys.readouterr().err
    assert 'an environment failed' in err and 'The last checkpoint is' in err
    path = err.split('The last checkpoint is ')[1].split(';')[0]
    env = pufferlib.emulation.GymnasiumPufferEnv(env=FaultyEnv())
    state = training.load_checkpoint(path, training.make_policy(env, config))
    assert state['epoch'] >= 1


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


@pytest.mark.slow
def test_compiled_policy_trains_and_checkpoints_the_plain_weights(experiments):
    """torch.compile on CPU (inductor builds C++ with the system compiler): about a minute."""
    summary = run_train('puffer_squared', '--train.compile', 'true', '--policy.hidden-size', '32', steps=2048)
    assert summary['global_step'] == 2048
    state = torch.load(summary['checkpoint'], weights_only=True)
    assert not any('_orig_mod' in key for key in state['policy']), 'checkpoint holds the compiled wrapper'


def test_trainer_runs_with_a_local_worker():
    summary = run_train('puffer_squared', '--vec.batch-size', '2', '--vec.local-worker', 'true', steps=2048)
    assert summary['global_step'] == 2048


def test_eval_writes_a_video_and_plot_writes_a_png(experiments, tmp_path, capsys):
    summary = run_train('puffer_squared', steps=2048)
    video = tmp_path / 'squared.gif'
    assert main(['eval', 'puffer_squared', '--checkpoint', 'latest', '--episodes', '2',
                 '--video', str(video)]) == 0
    assert 'mean episode return' in capsys.readouterr().out
    assert video.read_bytes()[:6] == b'GIF89a'
    png = tmp_path / 'curve.png'
    assert main(['plot', summary['run_dir'], '--metric', 'policy_loss', '--out', str(png)]) == 0
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_wandb_runs_offline_without_a_key(experiments):
    summary = run_train('puffer_squared', '--wandb.enabled', 'true', steps=1024)
    assert list((experiments / os.path.basename(summary['run_dir']) / 'wandb').glob('offline-run-*'))


def test_default_hyperparameters_solve_bandit_quickly():
    """A fast learning check for CI; the full sanity suite runs in scripts/acceptance_train.py."""
    config = configuration.load('puffer_bandit', ['--train.total-timesteps', '2000000', '--train.log-interval', '0'])
    summary = training.train('puffer_bandit', config=config, quiet=True)
    assert summary['episodes']['env/perf'] > 0.9, summary['episodes']


def test_data_parallel_two_processes_with_gloo(experiments):
    """torchrun with 2 CPU processes: DDP averages gradients (gloo), rank 0 writes the run."""
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments), 'OMP_NUM_THREADS': '1'}
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '2',
           '-m', 'pufferlib.cli', 'train', 'puffer_squared', *SMALL, '--vec.backend', 'Serial',
           '--train.total-timesteps', '2048', '--quiet']
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = list(experiments.glob('puffer_squared-*'))
    assert len(runs) == 1  # only rank 0 writes
    state = torch.load(training.latest_checkpoint(str(runs[0])), weights_only=True)
    assert state['global_step'] == 2048 and state['epoch'] == 2
