"""Resuming a run (pufferlib.train.plan_resume): a finished run is left untouched, flags may change only
the keys a resume may change, keys missing from a saved config are filled in aloud or refused, the
learning-rate schedule of a run made longer, and the dashboard's time left after a resume."""
import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch

from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.dashboard import remaining_seconds
from pufferlib.rundir import latest_checkpoint

from small_run import train_small

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')

pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path


def snapshot(run_dir):
    """Every file of a run directory: its bytes and modification time, by path."""
    files = {}
    for folder, _, names in os.walk(run_dir):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, 'rb') as f:
                files[os.path.relpath(path, run_dir)] = (f.read(), os.stat(path).st_mtime_ns)
    return files


def puffer(experiments, *args):
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments)}
    return subprocess.run([PUFFER, *args], env=env, capture_output=True, text=True, timeout=300)


def test_a_finished_run_is_left_untouched_and_says_how_to_train_longer(experiments):
    """It printed `checkpoint None` and wrote a profile.json of zeros; now one line, exit 0, no write."""
    summary = train_small('puffer_squared', '--train.profile', 'true', steps=2048)
    run_dir = summary['run_dir']
    before = snapshot(run_dir)
    assert 'profile.json' in before and 'metrics.jsonl' in before
    out = puffer(experiments, 'train', '--resume', run_dir, '--quiet')
    assert out.returncode == 0, out.stderr
    head, example = out.stdout.strip().split(', e.g. ')
    assert head == (f'puffer train: {run_dir} is finished: 2,048 of 2,048 steps done. To train it '
                    'longer, resume it with a larger --train.total-timesteps')
    assert out.stderr == ''
    assert snapshot(run_dir) == before
    # The example is a command to paste: it trains the same run on to twice its total.
    pasted = subprocess.run(['bash', '-c', example + ' --quiet'], capture_output=True, text=True, timeout=300,
                            env={**os.environ, 'PUFFER_EXPERIMENTS': str(experiments)})
    assert pasted.returncode == 0, pasted.stderr
    assert torch.load(latest_checkpoint(run_dir), weights_only=True)['global_step'] == 4096
    before = snapshot(run_dir)
    # A total it already reached is no longer run either.
    out = puffer(experiments, 'train', '--resume', run_dir, '--train.total-timesteps', '1024', '--quiet')
    assert out.returncode == 0 and 'is finished: 4,096 of 1,024 steps done' in out.stdout, out.stderr
    assert snapshot(run_dir) == before


def test_a_finished_run_resumed_with_a_larger_total_trains_on_with_its_schedule_replanned(experiments):
    """The cosine schedule had reached 0; kept as saved it would also rise again past its old end. It
    spans the new total instead: the learning rate of epoch 3 of 4 is that of a run planned for 4."""
    summary = train_small('puffer_squared', steps=2048)
    run_dir = summary['run_dir']
    resumed = training.train(None, resume=run_dir, flags=['--train.total-timesteps', '4096'], quiet=True)
    assert resumed['global_step'] == 4096 and resumed['epoch'] == 4 and not resumed.get('finished')
    assert torch.load(latest_checkpoint(run_dir), weights_only=True)['global_step'] == 4096
    rows = [json.loads(line) for line in open(os.path.join(run_dir, 'metrics.jsonl'))]
    assert [row['global_step'] for row in rows] == [1024, 2048, 3072, 4096]
    base = configuration.defaults()['train']['learning_rate']
    assert rows[2]['learning_rate'] == pytest.approx(base * (1 + math.cos(math.pi * 3 / 4)) / 2)
    assert configuration.read(os.path.join(run_dir, 'config.toml'))['train']['total_timesteps'] == 4096


def test_a_linear_schedule_falls_in_a_straight_line_and_is_replanned_as_one(experiments):
    """train.lr_schedule = "linear" (CleanRL's annealing): the rate after epoch k of E is (1 - k / E) of the
    base. Resumed to twice the total, it goes on from half the base on the line of the longer run."""
    base = 0.01
    summary = train_small('puffer_squared', '--train.lr-schedule', 'linear', '--train.learning-rate', str(base),
                          steps=2048)
    resumed = training.train(None, resume=summary['run_dir'], flags=['--train.total-timesteps', '4096'], quiet=True)
    assert resumed['global_step'] == 4096
    rows = [json.loads(line) for line in open(os.path.join(summary['run_dir'], 'metrics.jsonl'))]
    assert [row['learning_rate'] for row in rows] == pytest.approx([base / 2, 0.0, base / 4, 0.0])


def test_a_flag_a_resume_may_not_change_is_refused_before_anything_is_written(experiments):
    summary = train_small('puffer_squared', steps=1024)
    run_dir = summary['run_dir']
    before = snapshot(run_dir)
    out = puffer(experiments, 'train', '--resume', run_dir, '--train.total-timesteps', '2048',
                 '--train.learning-rate', '0.001', '--policy.hidden-size', '64', '--quiet')
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and 'Traceback' not in out.stderr
    assert 'train.learning_rate 0.015 -> 0.001, policy.hidden_size 128 -> 64' in out.stderr
    assert 'Start a new run' in out.stderr and 'train.total_timesteps 1,024 -> 2,048' not in out.stderr
    assert snapshot(run_dir) == before


def test_flags_a_resume_may_change_are_applied_said_and_saved(experiments, capsys):
    """A flag equal to the saved value is no change; the others are listed old -> new, and saved in
    config.toml so that the next resume starts from them."""
    summary = train_small('puffer_squared', steps=1024)
    run_dir = summary['run_dir']
    capsys.readouterr()
    resumed = training.train(None, resume=run_dir, quiet=True, flags=[
        '--train.learning-rate', '0.015', '--train.total-timesteps', '2048', '--train.checkpoint-interval', '1'])
    assert resumed['global_step'] == 2048
    err = capsys.readouterr().err
    assert f'puffer train: resuming {run_dir} with train.total_timesteps 1,024 -> 2,048, ' \
           'train.checkpoint_interval 50 -> 1\n' in err
    assert 'learning_rate' not in err
    saved = configuration.read(os.path.join(run_dir, 'config.toml'))
    assert saved['train']['total_timesteps'] == 2048 and saved['train']['checkpoint_interval'] == 1
    assert saved['_meta']['env'] == 'puffer_squared'
    training.train(None, resume=run_dir, quiet=True, flags=['--train.total-timesteps', '3072'])
    err = capsys.readouterr().err
    assert 'train.total_timesteps 2,048 -> 3,072\n' in err and 'checkpoint_interval' not in err


def _remove_line(path, pattern):
    with open(path) as f:
        text = f.read()
    edited = re.sub(pattern, '', text, count=1, flags=re.MULTILINE)
    assert edited != text
    with open(path, 'w') as f:
        f.write(edited)


def test_keys_missing_from_a_saved_config_are_filled_in_aloud(experiments, capsys):
    """A run saved by an older version (or a hand-edited config.toml): the keys it lacks take today's
    defaults, and one line says which and what they became."""
    summary = train_small('puffer_squared', steps=1024)
    run_dir = summary['run_dir']
    path = os.path.join(run_dir, 'config.toml')
    _remove_line(path, r'^gamma = .*\n')
    _remove_line(path, r'^step_timeout = .*\n')
    _remove_line(path, r'^max_steps = .*\n')  # an option of the env
    capsys.readouterr()
    training.train(None, resume=run_dir, flags=['--train.total-timesteps', '2048'], quiet=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if 'has no' in line]
    assert lines == [f'puffer train: {path} has no env.max_steps, vec.step_timeout, train.gamma (saved by an older '
                     'version, or edited); using today\'s defaults: env.max_steps = 64, vec.step_timeout = 120.0, '
                     'train.gamma = 0.995']
    saved = configuration.read(path)  # written back: the next resume has nothing to fill in
    assert saved['train']['gamma'] == 0.995 and saved['env']['max_steps'] == 64


def test_a_policy_key_missing_from_a_saved_config_is_refused(experiments):
    """[policy] sets the shapes of the saved weights: today's default may not be what the run had."""
    summary = train_small('puffer_squared', steps=1024)
    run_dir = summary['run_dir']
    path = os.path.join(run_dir, 'config.toml')
    _remove_line(path, r'^hidden_size = 128\n')  # the first: [policy]'s
    before = snapshot(run_dir)
    out = puffer(experiments, 'train', '--resume', run_dir, '--train.total-timesteps', '2048', '--quiet')
    assert out.returncode == 2, out.stderr
    assert f'{path} has no policy.hidden_size: [policy] sets the shapes of the model' in out.stderr
    assert 'add `hidden_size = <its value>` under [policy] in that file, or start a new run' in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert snapshot(run_dir) == before


def test_the_time_left_after_a_resume_is_at_this_process_rate():
    """9,000 of 10,000 steps were done before the resume; this process trained 1,000 in 10 s (100 per
    second): 10 s remain. The share done (90% in 10 s) said 1 s."""
    row = {'global_step': 9000, 'sps': 100.0, 'elapsed_s': 10.0}
    assert remaining_seconds(row, 10_000) == pytest.approx(10.0)
    assert remaining_seconds({'global_step': 0, 'sps': 0.0, 'elapsed_s': 0.0}, 10_000) is None
    assert remaining_seconds({'global_step': 10_240, 'sps': 100.0, 'elapsed_s': 5.0}, 10_000) == 0
