"""`puffer train --profile`: where an epoch's wall time goes (pufferlib/profile.py), on real training runs."""
import json
import os
import types

import pytest
import torch

import pufferlib.vector

from pufferlib import config as configuration
from pufferlib import profile as profiling
from pufferlib import train as training
from pufferlib.cli import main

from small_run import SMALL, train_small

# The phases that do real work in every epoch of a run (checkpoint and logging may be skipped).
WORKING = ('env', 'copy', 'rollout_forward', 'advantage', 'update_forward', 'backward', 'optimizer', 'stats')


pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path


def run_train(*flags, steps=6144):
    return train_small('puffer_squared', *flags, steps=steps)


def test_profile_phases_add_up_to_the_loop_time():
    summary = run_train('--train.profile', 'true', '--train.checkpoint-interval', '2')
    path = os.path.join(summary['run_dir'], 'profile.json')
    assert summary['profile'] == path
    with open(path) as f:
        report = json.load(f)
    phases = report['phases']
    assert list(phases) == list(profiling.PHASES)
    for name in WORKING:
        assert phases[name]['seconds'] > 0, name
    assert all(row['seconds'] >= 0 for row in phases.values())
    total = sum(row['seconds'] for row in phases.values())
    assert total == pytest.approx(report['total_s'], rel=1e-9)
    assert sum(row['percent'] for row in phases.values()) == pytest.approx(100, rel=1e-6)
    # The loop's own clock (time.time() around the whole loop) against the phases' sum: a phase
    # timed twice or a stretch left out would break this. The slack is for a busy machine.
    assert abs(total - report['loop_s']) <= 0.03 * report['loop_s'] + 0.1
    assert report['epochs'] == summary['epoch'] == 6
    assert report['steps'] == summary['global_step']
    assert report['steps_per_s'] == pytest.approx(report['steps'] / total)
    assert phases['env']['per_epoch_ms'] == pytest.approx(1000 * phases['env']['seconds'] / 6)
    # The metrics rows measure the same loop (up to the end of each update) with their own clock.
    with open(os.path.join(summary['run_dir'], 'metrics.jsonl')) as f:
        last = [json.loads(line) for line in f][-1]
    assert last['elapsed_s'] <= report['loop_s']
    assert report['env'] == 'puffer_squared' and report['device'] == ('cuda' if torch.cuda.is_available() else 'cpu')


def test_cli_profile_flag_prints_the_table_and_saves_the_setting(experiments, capsys):
    assert main(['train', 'puffer_squared', *SMALL, '--train.total-timesteps', '2048', '--profile']) == 0
    out = capsys.readouterr().out
    assert 'forward (rollout)' in out and 'profile written to' in out
    (run_dir,) = [experiments / name for name in os.listdir(experiments)]
    assert (run_dir / 'profile.json').exists()
    assert configuration.read(str(run_dir / 'config.toml'))['train']['profile'] is True


def test_no_profile_writes_nothing(experiments):
    summary = run_train(steps=2048)
    assert 'profile' not in summary
    assert not os.path.exists(os.path.join(summary['run_dir'], 'profile.json'))
    assert configuration.load('puffer_squared')['train']['profile'] is False


def test_laps_before_start_and_when_off_count_nothing(monkeypatch):
    clock = iter(range(0, 1000, 10))   # every reading of the clock is 10 s after the previous
    monkeypatch.setattr(profiling, 'time', types.SimpleNamespace(perf_counter=lambda: float(next(clock))))
    off = profiling.Profile(enabled=False)
    off.start(0)
    off.lap('env')
    off.end_epoch(100)
    assert off.epochs == 0 and not any(off.seconds.values())

    on = profiling.Profile(enabled=True)
    on.lap('env')                      # before the loop starts: ignored
    on.start(50)                       # t = 0
    on.lap('env')                      # 10
    on.lap('copy')                     # 20
    on.lap('env')                      # 30
    on.end_epoch(150)                  # 40: the remainder is other
    assert on.seconds['env'] == 20 and on.seconds['copy'] == 10 and on.seconds['other'] == 10
    summary = on.summary(loop_s=40)
    assert summary['epochs'] == 1 and summary['steps'] == 100 and summary['total_s'] == 40
    assert summary['phases']['env']['percent'] == 50 and summary['phases']['env']['steps_per_s'] == 5
    assert summary['phases']['backward']['steps_per_s'] is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_profile_on_cuda_synchronizes_and_adds_up():
    summary = run_train('--train.profile', 'true', '--train.device', 'cuda')
    with open(summary['profile']) as f:
        report = json.load(f)
    assert report['device'].startswith('cuda')
    assert abs(report['total_s'] - report['loop_s']) <= 0.03 * report['loop_s'] + 0.1


# --- train.torch_threads (what the profile of breakout showed: see docs/benchmarks.md) ----------

def test_torch_threads_auto_leaves_the_workers_their_cores():
    cores = pufferlib.vector.cpu_count()
    with pufferlib.vector.make('puffer_squared', backend='Serial', num_envs=2, env_kwargs={'num_envs': 4}) as serial:
        assert training.torch_threads(0, serial) == cores
        assert training.torch_threads(3, serial) == 3
    with pufferlib.vector.make('puffer_squared', backend='Multiprocessing', num_envs=2, num_workers=2,
                               env_kwargs={'num_envs': 4}) as workers:
        assert training.torch_threads(0, workers) == max(1, cores - 2)
    summary = run_train('--train.torch-threads', '1', steps=1024)
    assert summary['epoch'] == 1 and torch.get_num_threads() == 1


def test_negative_torch_threads_is_a_config_error():
    with pytest.raises(configuration.ConfigError, match='train.torch_threads must be >= 0'):
        configuration.load('puffer_squared', ['--train.torch-threads', '-1'])
