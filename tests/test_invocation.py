"""Every command `puffer` prints for the user to paste runs when pasted: the program as they started it
(scripts/puffer, the `puffer` console script, `python -m pufferlib.cli`), paths with spaces quoted and
relative only where their shell resolves them the same way. The slow tests paste the printed lines into
`bash -c` from folders whose names hold a space, as a user would."""
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pufferlib import invocation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
BANDIT = ['puffer_bandit', '--vec.backend', 'Serial', '--vec.num-envs', '1', '--env.num-envs', '64',
          '--train.bptt-horizon', '16', '--train.minibatch-size', '1024', '--train.log-interval', '0']


@pytest.fixture
def clean_env(monkeypatch):
    """No recorded invocation from the test runner's own environment; whatever a test records is undone."""
    for name in (invocation.PROG, invocation.CWD, invocation.LAUNCHER, invocation.LAUNCHED_IN):
        monkeypatch.setenv(name, '')
        monkeypatch.delenv(name)
    return monkeypatch


def test_the_program_is_the_one_the_user_ran(tmp_path, clean_env):
    clean_env.setenv('PATH', str(tmp_path / 'empty'))
    console = ['/venv/bin/python', '/venv/bin/puffer', 'train', 'x']
    assert invocation.program(['/venv/bin/puffer', 'train', 'x'], console) == ['/venv/bin/puffer']
    module = ['python3', '-X', 'dev', '-m', 'pufferlib.cli', 'train', '-m', 'x']
    assert invocation.program(['/src/pufferlib/cli.py', 'train'], module) == ['python3', '-X', 'dev', '-m',
                                                                               'pufferlib.cli']
    assert invocation.program(['/src/pufferlib/cli.py'], ['python', '-mpufferlib.cli']) == ['python',
                                                                                          '-mpufferlib.cli']
    script = ['python', 'pufferlib/cli.py', 'sweep']
    assert invocation.program(['pufferlib/cli.py', 'sweep'], script) == ['python', 'pufferlib/cli.py']
    # a console script that PATH finds under its bare name is shown by that name
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'puffer').write_text('#!/bin/sh\n')
    (tmp_path / 'bin' / 'puffer').chmod(0o755)
    clean_env.setenv('PATH', str(tmp_path / 'bin'))
    found = str(tmp_path / 'bin' / 'puffer')
    assert invocation.program([found, 'train'], ['/venv/bin/python', found, 'train']) == ['puffer']


def test_paths_are_quoted_and_relative_only_where_the_user_typed_the_command(tmp_path, clean_env):
    here = tmp_path / 'my runs'
    (here / 'experiments' / 'a run').mkdir(parents=True)
    clean_env.chdir(here)
    clean_env.setattr(sys, 'argv', [str(tmp_path / 'bin dir' / 'puffer'), 'train'])
    clean_env.setattr(sys, 'orig_argv', [sys.executable, str(tmp_path / 'bin dir' / 'puffer'), 'train'])
    invocation.record()
    line = invocation.command('train', '--resume', Path('experiments/a run'))
    assert shlex.split(line) == [str(tmp_path / 'bin dir' / 'puffer'), 'train', '--resume', 'experiments/a run']
    outside = invocation.command('sweep', '--resume', Path(tmp_path / 'other place'))
    assert shlex.split(outside)[-1] == str(tmp_path / 'other place')
    anywhere = invocation.command('train', 'puffer_bandit', '--config', Path('experiments/a run/best.toml'),
                                  anywhere=True)
    assert shlex.split(anywhere)[-1] == str(here / 'experiments' / 'a run' / 'best.toml')


def test_a_launcher_that_changes_folder_gets_absolute_paths(tmp_path, clean_env):
    """scripts/puffer runs the CLI from the repository: a relative path would be read from the wrong folder."""
    repo, typed_in = tmp_path / 'repo', tmp_path / 'my folder'
    (repo / 'experiments').mkdir(parents=True)
    typed_in.mkdir()
    clean_env.chdir(repo)
    clean_env.setenv(invocation.LAUNCHER, '../repo/scripts/puffer')
    clean_env.setenv(invocation.LAUNCHED_IN, str(typed_in))
    invocation.record()
    assert invocation.LAUNCHER not in os.environ  # the CLI's own children are not launched by the script
    line = invocation.command('train', '--resume', Path('experiments/run'))
    assert shlex.split(line) == ['../repo/scripts/puffer', 'train', '--resume', str(repo / 'experiments' / 'run')]
    anywhere = invocation.command('train', '--config', Path('best.toml'), anywhere=True)
    assert shlex.split(anywhere)[0] == str(typed_in / '../repo/scripts/puffer')


def test_without_the_cli_the_hint_names_a_program_that_exists(clean_env, tmp_path):
    clean_env.setenv('PATH', str(tmp_path))  # no `puffer` on it
    words = shlex.split(invocation.command('train', 'puffer_bandit'))
    assert words == [sys.executable, '-m', 'pufferlib.cli', 'train', 'puffer_bandit']


# --- pasted into a shell ------------------------------------------------------------------------

def user_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in (invocation.PROG, invocation.CWD, invocation.LAUNCHER, invocation.LAUNCHED_IN)}
    env.pop('PUFFER_EXPERIMENTS', None)
    env.update(PATH=BIN + os.pathsep + env.get('PATH', ''), WANDB_MODE='offline', **extra)
    return env


def wait_for(predicate, what, proc, timeout=300):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f'exited before {what}: {proc.communicate()}'
        assert time.monotonic() < deadline, f'no {what} after {timeout} s'
        time.sleep(0.2)


def metric_steps(run_dir):
    path = run_dir / 'metrics.jsonl'
    return [int(m) for m in re.findall(r'"global_step": (\d+)', path.read_text())] if path.exists() else []


def interrupt(proc):
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


@pytest.mark.slow
def test_the_resume_line_of_a_stopped_run_resumes_it_when_pasted(tmp_path):
    """scripts/puffer, typed as a relative path from a folder with a space; runs in another such folder."""
    cwd = tmp_path / 'my work'
    cwd.mkdir()
    experiments = tmp_path / 'runs here'
    env = user_env(PUFFER_EXPERIMENTS=str(experiments))
    script = os.path.relpath(os.path.join(ROOT, 'scripts', 'puffer'), cwd)
    proc = subprocess.Popen([script, 'train', *BANDIT, '--train.total-timesteps', '100000000', '--quiet'], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: any(metric_steps(d) for d in experiments.glob('*')), 'metrics row', proc)
    status, out, err = interrupt(proc)
    assert status == 130, err
    line = re.search(r'^resume with: (.+)$', err, re.MULTILINE)
    assert line, err
    [run_dir] = list(experiments.iterdir())
    assert shlex.split(line.group(1)) == [script, 'train', '--resume', str(run_dir)]
    stopped_at = max(metric_steps(run_dir))

    resumed = subprocess.Popen(['bash', '-c', line.group(1)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    wait_for(lambda: max(metric_steps(run_dir), default=0) > stopped_at, 'resumed metrics row', resumed)
    status, out, err = interrupt(resumed)
    assert status == 130, err
    assert list(experiments.iterdir()) == [run_dir]  # the same run went on, no new one began


@pytest.mark.slow
def test_the_sweep_resume_and_best_toml_lines_run_when_pasted(tmp_path):
    """`python -m pufferlib.cli sweep` from a folder with a space: the resume line after Ctrl-C, the line to
    train with best.toml at the end, and the one in best.toml's header, read from another folder."""
    cwd = tmp_path / 'my sweeps'
    cwd.mkdir()
    env = user_env()
    sweep = ['python', '-m', 'pufferlib.cli', 'sweep', *BANDIT, '--train.total-timesteps', '20000',
             '--sweep.only', 'train.learning_rate', '--sweep.max-trials', '2', '--sweep.confirm-seeds', '0', '--quiet']
    proc = subprocess.Popen(sweep, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: any(cwd.glob('experiments/sweeps/*/trials/trial-0000')), 'first trial', proc)
    status, out, err = interrupt(proc)
    assert status != 0, (out, err)
    line = re.search(r'Resume with:\n  (.+)$', err, re.MULTILINE)
    assert line, err
    [path] = list((cwd / 'experiments' / 'sweeps').iterdir())
    assert shlex.split(line.group(1)) == ['python', '-m', 'pufferlib.cli', 'sweep', '--resume',
                                          os.path.relpath(path, cwd)]

    resumed = subprocess.run(['bash', '-c', line.group(1)], cwd=cwd, env=env, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert 'done: 2 trials (0 failed)' in resumed.stdout, resumed.stdout
    train = resumed.stdout.strip().splitlines()[-1].strip()
    assert shlex.split(train)[:4] == ['python', '-m', 'pufferlib.cli', 'train'], resumed.stdout
    trained = subprocess.run(['bash', '-c', train], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert trained.returncode == 0 and re.search(r'^done: [\d,]+ steps', trained.stdout, re.MULTILINE), trained.stderr

    header = re.search(r'^# Train with it: (.+)$', (path / 'best.toml').read_text(), re.MULTILINE)
    assert header and shlex.split(header.group(1))[-1] == str(path / 'best.toml')
    elsewhere = tmp_path / 'some other folder'
    elsewhere.mkdir()
    trained = subprocess.run(['bash', '-c', header.group(1)], cwd=elsewhere, env=env, capture_output=True, text=True,
                             timeout=600)
    assert trained.returncode == 0 and re.search(r'^done: [\d,]+ steps', trained.stdout, re.MULTILINE), trained.stderr
