"""The training job (pufferlib.train): config and CLI, run directories, resume, metrics, torchrun, signals
and a disk that refuses writes, on real Ocean and Gymnasium envs. The PPO core: tests/test_trainer.py."""
import functools
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.cli import main
from pufferlib.checkpoint import load_checkpoint
from pufferlib.models import make_policy
from pufferlib.rundir import latest_checkpoint

from envs import FaultyEnv
from small_run import SMALL, train_small

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')


pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path


run_train = train_small


# --- config and flags ------------------------------------------------------------------------

@pytest.mark.parametrize('flags, match', [
    (['--train.learnin-rate', '0.1'], r'unknown key train.learnin_rate \(did you mean learning_rate'),
    (['--train.gamma', 'high'], 'train.gamma must be float'),
    (['--vec.num-envs', '2.5'], 'vec.num_envs must be int'),
    (['--train.minibatch-size', '100'], 'multiple of train.bptt_horizon'),
    (['--trian.gamma', '0.9'], r'unknown section \[trian\]'),
    (['--train.optimizer', 'sgd'], 'train.optimizer must be muon or adam'),
    (['--train.minibatch-sampling', 'episodes'], 'train.minibatch_sampling must be segments or steps'),
    (['--train.lr-schedule', 'step'], 'train.lr_schedule must be cosine or linear'),
    (['--train.minibatch-sampling', 'steps'], r'set train.prio_alpha=0 \(got 0.8\)'),
    (['--train.reward-clip', '-1'], r'train.reward_clip must be >= 0 \(0: no clip\)'),
    (['--train.recompute-advantages', 'true'], 'recompute_advantages needs train.minibatch_sampling="steps"'),
    (['train.gamma'], 'unexpected argument'),
    (['--vec.backend', 'Serial', '--vec.local-worker', 'true'],
     'vec.local_worker=true needs vec.backend=Multiprocessing'),
    (['--vec.backend', 'Serial', '--vec.num-processes', '1'], 'vec.num_processes=1 needs vec.backend=Multiprocessing'),
    (['--vec.num-processes', '-1'], r'vec.num_processes must be >= 0'),
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
    proc.wait(timeout=120)  # bounds a hang only: a killed process still needs the CPU to be torn down
    assert run_dir is not None
    before = torch.load(latest_checkpoint(str(run_dir)), weights_only=True)['global_step']
    assert before < steps
    out = subprocess.run([PUFFER, 'train', '--resume', 'latest', '--quiet'], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    state = torch.load(latest_checkpoint(str(run_dir)), weights_only=True)
    assert state['global_step'] == steps  # the same as a run never interrupted
    assert state['epoch'] == 12


@pytest.mark.parametrize('backend, flag, expected', [('Multiprocessing', [], 120.0),
                                                     ('Multiprocessing', ['--vec.step-timeout', '7.5'], 7.5),
                                                     ('Multiprocessing', ['--vec.step-timeout', '0'], None),
                                                     ('Serial', ['--vec.step-timeout', '7.5'], None)])
def test_vec_step_timeout_reaches_the_vector_env(backend, flag, expected):
    config = configuration.load('CartPole-v1', ['--vec.backend', backend, '--vec.num-envs', '2', *flag])
    with training.make_vecenv('CartPole-v1', config) as vecenv:
        assert getattr(vecenv, 'step_timeout', None) == expected


def test_worker_crash_ends_the_run_with_a_message_and_a_usable_checkpoint(capsys):
    """Each env fails at its 100th step, in the middle of epoch 13 (8 steps per row per epoch): the
    checkpoint holds the end of epoch 12, not the half-finished rollout, so the resumed run ends on the
    same step as one never interrupted."""
    config = configuration.load('CartPole-v1', ['--vec.num-envs', '2', '--vec.num-workers', '2',
                                                '--train.bptt-horizon', '8', '--train.minibatch-size', '16',
                                                '--train.total-timesteps', str(20 * 16),
                                                '--train.checkpoint-interval', '1000'])
    with pytest.raises(pufferlib.EnvError, match='boom'):
        training.train(functools.partial(FaultyEnv, 'raise', 100), config=config, quiet=True)
    err = capsys.readouterr().err
    assert 'an environment failed' in err and 'The last checkpoint is' in err
    path = re.search(r"The last checkpoint is (\S+\.pt)", err).group(1)
    env = pufferlib.emulation.GymnasiumPufferEnv(env=FaultyEnv())
    state = load_checkpoint(path, make_policy(env, config))
    assert state['epoch'] == 12 and state['global_step'] == 12 * 16
    run_dir = os.path.dirname(os.path.dirname(path))
    resumed = training.train(functools.partial(FaultyEnv, 'raise', 10**9), resume=run_dir, quiet=True)
    assert resumed['global_step'] == 20 * 16 and resumed['epoch'] == 20


def test_trainer_runs_with_a_local_worker():
    summary = run_train('puffer_squared', '--vec.batch-size', '2', '--vec.local-worker', 'true', steps=2048)
    assert summary['global_step'] == 2048


def test_trainer_runs_double_buffered():
    """vec.num_processes reaches the vector env: 4 workers in 2 processes, a batch from each."""
    config = configuration.load('puffer_squared', [*SMALL, '--vec.num-envs', '4', '--vec.num-workers', '4',
                                                   '--vec.batch-size', '2', '--vec.num-processes', '2'])
    vecenv = training.make_vecenv('puffer_squared', config)
    try:
        assert vecenv.num_processes == len(vecenv.processes) == 2 and vecenv.num_workers == 4
    finally:
        vecenv.close()
    summary = run_train('puffer_squared', '--vec.num-envs', '4', '--vec.num-workers', '4', '--vec.batch-size', '2',
                        '--vec.num-processes', '2', steps=2048)
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


def test_runs_and_checkpoints_of_another_env_are_refused(experiments, capsys):
    """`puffer train puffer_pong --resume latest` resumes only a puffer_pong run; eval compares the
    env stored in the checkpoint; and a config flag's value after --resume is not an env name."""
    summary = run_train('puffer_squared', steps=1024)
    assert main(['train', 'puffer_pong', '--resume', 'latest']) == 2
    assert '"latest": no runs of puffer_pong' in capsys.readouterr().err
    assert main(['train', 'puffer_pong', '--resume', summary['run_dir']]) == 2
    assert 'is a run of puffer_squared, not puffer_pong' in capsys.readouterr().err
    assert main(['eval', 'puffer_pong', '--checkpoint', summary['checkpoint'], '--episodes', '1']) == 2
    assert 'was trained on puffer_squared, not puffer_pong' in capsys.readouterr().err
    assert main(['train', '--resume', 'latest', '--train.total-timesteps', '2048', '--quiet']) == 0
    assert 'done: 2,048 steps in 2 epochs' in capsys.readouterr().out


def test_wandb_runs_offline_without_a_key(experiments):
    summary = run_train('puffer_squared', '--wandb.enabled', 'true', steps=1024)
    assert list((experiments / os.path.basename(summary['run_dir']) / 'wandb').glob('offline-run-*'))


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
    state = torch.load(latest_checkpoint(str(runs[0])), weights_only=True)
    assert state['global_step'] == 2048 and state['epoch'] == 2


# --- run directories: names, locks, resume ---------------------------------------------------

def test_run_directory_names_are_unique_when_many_runs_start_at_once(experiments):
    """Eight processes each create ten run directories for one env, all in the same second."""
    code = ('import sys, time; from pufferlib.rundir import new_run_dir; start = float(sys.argv[1]); '
            'time.sleep(max(0.0, start - time.time())); print("\\n".join(new_run_dir("same") for _ in range(10)))')
    start = time.time() + 2  # after every process has started (pufferlib.rundir does not import torch)
    procs = [subprocess.Popen([sys.executable, '-c', code, str(start)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    paths = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        paths += out.split()
    assert len(paths) == 80 and len(set(paths)) == 80
    assert all(os.path.isdir(os.path.join(p, 'checkpoints')) for p in paths)


def hold_lock(run_dir):
    """Another process that holds the run directory's lock until its stdin closes."""
    code = ('import sys; from pufferlib.rundir import DirLock; lock = DirLock(sys.argv[1]); lock.acquire(); '
            'print("locked", flush=True); sys.stdin.read()')
    proc = subprocess.Popen([sys.executable, '-c', code, str(run_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == 'locked'
    return proc


def test_a_second_process_on_a_run_directory_is_refused(experiments):
    summary = run_train('puffer_squared', steps=1024)
    holder = hold_lock(summary['run_dir'])
    try:
        env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments)}
        out = subprocess.run([PUFFER, 'train', '--resume', 'latest', '--quiet'], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2, out.stderr
        assert f'is in use by pid {holder.pid} on host' in out.stderr and 'Traceback' not in out.stderr
    finally:
        holder.communicate('', timeout=120)
    # The holder is gone: its lock went with it, and the run resumes.
    resumed = training.train(None, resume='latest', flags=['--train.total-timesteps', '2048'], quiet=True)
    assert resumed['global_step'] == 2048


def test_a_stale_lock_is_taken_over_with_a_message(experiments, capsys):
    summary = run_train('puffer_squared', steps=1024)
    dead = subprocess.Popen([sys.executable, '-c', 'pass'])
    dead.wait()
    with open(os.path.join(summary['run_dir'], 'lock'), 'w') as f:
        f.write(f'pid {dead.pid} on host elsewhere since 2020-01-01 00:00:00')  # killed: text, but no flock
    resumed = training.train(None, resume=summary['run_dir'], flags=['--train.total-timesteps', '2048'], quiet=True)
    assert resumed['global_step'] == 2048
    assert f'had a stale lock (pid {dead.pid} on host elsewhere' in capsys.readouterr().err
    assert not os.path.exists(os.path.join(summary['run_dir'], 'lock'))  # released at the end


def test_resume_drops_metrics_rows_past_the_checkpoint(experiments):
    """A run killed after epoch 6 whose last checkpoint is epoch 4: epochs 5 and 6 are trained again,
    and metrics.jsonl keeps each step once, in order (a torn last line is dropped too)."""
    summary = run_train('puffer_squared', '--train.checkpoint-interval', '4', steps=6 * 1024)
    run_dir = summary['run_dir']
    os.remove(os.path.join(run_dir, 'checkpoints', 'epoch-0000006.pt'))  # as if killed before that save
    with open(os.path.join(run_dir, 'metrics.jsonl'), 'a') as f:
        f.write('{"global_step": 7168, "epo')
    training.train(None, resume=run_dir, flags=['--train.total-timesteps', str(8 * 1024)], quiet=True)
    steps = [json.loads(line)['global_step'] for line in open(os.path.join(run_dir, 'metrics.jsonl'))]
    assert steps == [1024 * k for k in range(1, 9)]


def test_resume_with_another_hidden_size_names_the_shapes_and_the_flag(experiments):
    """torch's "Error(s) in loading state_dict for Default" told neither what differs nor why. The flag
    is refused before the model is built (a resume keeps the run's [policy]); a config.toml edited by
    hand reaches the checkpoint, whose error names the shapes and the setting."""
    summary = run_train('puffer_squared', steps=1024)
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments)}
    args = [PUFFER, 'train', '--resume', summary['run_dir'], '--train.total-timesteps', '2048', '--quiet']
    out = subprocess.run([*args, '--policy.hidden-size', '64'], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert 'Error(s) in loading state_dict' not in out.stderr
    assert 'policy.hidden_size 128 -> 64' in out.stderr and 'Start a new run' in out.stderr
    path = os.path.join(summary['run_dir'], 'config.toml')
    with open(path) as f:
        text = f.read()
    with open(path, 'w') as f:
        f.write(text.replace('[policy]\nclass = "pufferlib.models:Default"\nhidden_size = 128',
                             '[policy]\nclass = "pufferlib.models:Default"\nhidden_size = 64'))
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert 'Error(s) in loading state_dict' not in out.stderr
    assert 'encoder.0.weight [128, 121] saved, [64, 121] now' in out.stderr
    assert 'policy.hidden_size (--policy.hidden-size) was 128, now 64' in out.stderr


def test_resume_ends_a_metrics_row_whose_newline_was_lost(experiments):
    summary = run_train('puffer_squared', steps=1024)
    path = os.path.join(summary['run_dir'], 'metrics.jsonl')
    text = open(path).read()
    open(path, 'w').write(text.rstrip('\n'))
    training.train(None, resume=summary['run_dir'], flags=['--train.total-timesteps', '2048'], quiet=True)
    assert [json.loads(line)['global_step'] for line in open(path)] == [1024, 2048]


def test_temporary_files_of_an_interrupted_write_are_removed_on_the_next_start(experiments, capsys):
    summary = run_train('puffer_squared', steps=1024)
    run_dir = summary['run_dir']
    left = [os.path.join(run_dir, 'checkpoints', 'epoch-0000002.pt.tmp-4242'), os.path.join(run_dir,
                                                                                            'config.toml.tmp-4242')]
    for path in left:
        open(path, 'wb').write(b'half a file')
    training.train(None, resume=run_dir, flags=['--train.total-timesteps', '2048'], quiet=True)
    assert not any(os.path.exists(p) for p in left)
    assert 'removed 2 temporary file(s)' in capsys.readouterr().err


# --- Ctrl-C and SIGTERM: a real `puffer train` process ---------------------------------------

# `puffer train` on CartPole slowed to 20 ms a step (Serial, 2 envs, 16-step segments: about 0.7 s an
# epoch), so that a second signal surely lands in the middle of an epoch.
SLOW_PUFFER = '''
import sys, time, gymnasium
from pufferlib.cli import main
class Slow(gymnasium.Wrapper):
    def step(self, action):
        time.sleep(0.02)
        return self.env.step(action)
gymnasium.register('SlowCartPole-v0', entry_point=lambda **kwargs: Slow(gymnasium.make('CartPole-v1')))
sys.exit(main(sys.argv[1:]))
'''
SLOW_FLAGS = ['--vec.backend', 'Serial', '--vec.num-envs', '2', '--train.bptt-horizon', '16',
              '--train.minibatch-size', '32', '--train.checkpoint-interval', '1000', '--train.log-interval', '0']


def start_training(experiments, args, **popen):
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments), 'OMP_NUM_THREADS': '1'}
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def wait_for_metrics(proc, experiments, rows=1):
    """The run directory once its metrics.jsonl has `rows` rows (the run is in its loop)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        for path in experiments.glob('*/metrics.jsonl'):
            if len(path.read_text().splitlines()) >= rows:
                return path.parent
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError('no metrics row within 180 s')


def test_ctrl_c_stops_at_the_end_of_the_epoch_with_a_checkpoint_and_exit_130(experiments):
    proc = start_training(experiments, [sys.executable, '-c', SLOW_PUFFER, 'train', 'SlowCartPole-v0',
                                        *SLOW_FLAGS, '--train.total-timesteps', '100000', '--quiet'])
    run_dir = wait_for_metrics(proc, experiments)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    # the program is the one that started the CLI (tests/test_invocation.py pastes the whole line)
    assert 'Traceback' not in err and re.search(rf'resume with: .+ train --resume {re.escape(str(run_dir))}$', err,
                                                re.MULTILINE), err
    state = torch.load(latest_checkpoint(str(run_dir)), weights_only=True)
    assert state['epoch'] >= 1 and state['global_step'] == state['epoch'] * 32  # an epoch boundary
    # Resumed, it ends on the same step as a run never interrupted.
    total = (state['epoch'] + 2) * 32
    proc = start_training(experiments, [sys.executable, '-c', SLOW_PUFFER, 'train', '--resume', str(run_dir),
                                        '--train.total-timesteps', str(total), '--quiet'])
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert torch.load(latest_checkpoint(str(run_dir)), weights_only=True)['global_step'] == total


def test_a_second_ctrl_c_stops_at_once(experiments):
    proc = start_training(experiments, [sys.executable, '-c', SLOW_PUFFER, 'train', 'SlowCartPole-v0',
                                        *SLOW_FLAGS, '--train.total-timesteps', '100000', '--quiet'])
    wait_for_metrics(proc, experiments)
    proc.send_signal(signal.SIGINT)
    while 'stopping at the end of this epoch' not in proc.stderr.readline():
        assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert 'stopped at once by a second Ctrl-C' in err and 'Traceback' not in err, err


def test_sigterm_to_the_process_group_stops_with_a_checkpoint_not_an_env_crash(experiments):
    """`kill -TERM -PGID` reaches the env workers too: they die, and that is a stop (exit 143), not an
    environment failure; the checkpoint is at an epoch boundary and no process of the group is left."""
    proc = start_training(experiments, [PUFFER, 'train', 'puffer_squared', *SMALL, '--train.total-timesteps',
                                        str(10**9), '--train.checkpoint-interval', '1000', '--quiet'],
                          start_new_session=True)
    run_dir = wait_for_metrics(proc, experiments)
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert 'stopped by SIGTERM' in err and 'environment failed' not in err and 'Traceback' not in err, err
    state = torch.load(latest_checkpoint(str(run_dir)), weights_only=True)
    assert state['epoch'] >= 1 and state['global_step'] == state['epoch'] * 1024
    deadline = time.monotonic() + 120  # bounds a hang only; on a busy machine the workers exit late
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError('processes of the training group are still running')


# --- a run directory that refuses writes -----------------------------------------------------
# Real file systems, not a failing mock: a private mount namespace (`unshare -m`, as root) holds a
# small tmpfs that a filler file makes full, or a read-only bind mount of the experiments folder.

def can_mount():
    try:
        return subprocess.run(['unshare', '-m', 'true'], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_mount = pytest.mark.skipif(not can_mount(), reason='needs unshare -m (root) to mount a tmpfs')


def in_mount_namespace(script, experiments, timeout=300):
    env = {**os.environ, 'EXP': str(experiments), 'PUFFER': PUFFER, 'OMP_NUM_THREADS': '1',
           'PUFFER_EXPERIMENTS': str(experiments)}
    return subprocess.run(['unshare', '-m', 'bash', '-c', script], env=env, capture_output=True, text=True,
                          timeout=timeout)


@needs_mount
def test_a_full_disk_is_one_error_and_leaves_no_temporary_files(experiments):
    experiments.mkdir()
    small = ' '.join(SMALL)
    script = f'''
        mount -t tmpfs -o size=64m tmpfs "$EXP"
        # Where this process may use one core only, the 2 worker processes also warn that they share it.
        PYTHONWARNINGS='ignore:workers in:RuntimeWarning' \\
        "$PUFFER" train puffer_squared {small} --train.total-timesteps {10**9} --train.checkpoint-interval 1 \\
            --quiet 2> /dev/fd/3 &
        pid=$!
        until [ -s "$(ls "$EXP"/*/metrics.jsonl 2>/dev/null | head -1)" ]; do sleep 0.05; done
        dd if=/dev/zero of="$EXP/filler" bs=1M 2> /dev/null  # until the disk is full
        wait $pid
        echo "exit $?"
        echo "temporary files: $(find "$EXP" -name '*.tmp-*' | wc -l)"
        echo "lock files: $(find "$EXP" -name lock | wc -l)"
    '''
    out = in_mount_namespace(f'exec 3>&2; {script}', experiments)
    err = [line for line in out.stderr.splitlines() if line.strip()]
    assert 'exit 2' in out.stdout, (out.stdout, out.stderr)
    assert 'temporary files: 0' in out.stdout and 'lock files: 0' in out.stdout, out.stdout
    assert len(err) == 1 and 'Traceback' not in out.stderr, out.stderr
    assert re.search(r'cannot write the (checkpoint|metrics file) .*No space left on device', err[0]), err[0]
    assert re.search(r'(The last checkpoint is|A last checkpoint could not be saved)', err[0]), err[0]


@needs_mount
def test_a_read_only_run_directory_is_one_error(experiments):
    summary = run_train('puffer_squared', steps=1024)
    script = '''
        mount --bind "$EXP" "$EXP" && mount -o remount,bind,ro "$EXP"
        "$PUFFER" train --resume latest --train.total-timesteps 2048 --quiet
    '''
    out = in_mount_namespace(script, experiments)
    assert out.returncode == 2 and 'Traceback' not in out.stderr, out.stderr
    assert f'cannot write the lock file {summary["run_dir"]}/lock: Read-only file system' in out.stderr
