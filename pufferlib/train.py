"""The training job around pufferlib.trainer's PPO: what `puffer train` runs.

    run = pufferlib.train.train('puffer_squared')              # or: puffer train puffer_squared

`train` sets up a run (a run directory claimed for this process, the config, seeds, device, vector env,
policy and Trainer), resumes it from its latest checkpoint when asked, then loops rollout and update
until the step budget, a signal or `on_log` stops it, writing checkpoints and metrics rows (and wandb)
on the way. Ctrl-C and SIGTERM stop at the end of an epoch, with a checkpoint; every way a run can fail
names the last good checkpoint and how to resume from it. Under torchrun each process trains on its
own envs and only rank 0 writes the run.

Runs live in `experiments/<run_id>/`: config.toml, metrics.jsonl and checkpoints/ (atomic writes, one
process at a time: see pufferlib.rundir).
"""
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import psutil
import threadpoolctl
import torch

import pufferlib.vector
from pufferlib import config as configuration
from pufferlib import cpus, invocation, registry, rundir
from pufferlib.checkpoint import load_checkpoint
from pufferlib.metrics import Metrics
from pufferlib.models import make_policy
from pufferlib.pufferenv import APIUsageError, EnvError
from pufferlib.rundir import RunDirError, atomic_write, latest_checkpoint, write_failure
from pufferlib.trainer import NonFiniteError, Trainer, TrainerEnv, check_rollout, rollout_bytes


# ---------------------------------------------------------------------------------------------
# Building the pieces
# ---------------------------------------------------------------------------------------------

def resolve_device(name: str) -> torch.device:
    """train.device: `auto` is CUDA when there is one, else the CPU; a CUDA device without CUDA is a ConfigError."""
    if name == 'auto':
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    device = torch.device(name)
    if device.type == 'cuda' and not torch.cuda.is_available():
        raise configuration.ConfigError(f'train.device={name!r} but no CUDA device is available; use cpu or auto')
    return device


def torch_threads(setting: int, vecenv: pufferlib.vector.VecEnv) -> int:
    """train.torch_threads, where 0 means the cores that the env worker processes leave free (at least 1).

    torch's own default is one thread per core, but here the trainer shares the cores with the env
    workers: while one half of the envs steps, the policy acts on the other, and each of torch's
    parallel regions may wait for a thread whose core a worker holds. It is a guard against the bad
    case, not the fastest setting everywhere: on 2 quiet cores with 2 workers breakout trains ~1.4x
    faster with two threads than with one, but under other load two threads ran 3-30x slower than
    one (docs/benchmarks.md, "Where the time goes", and its first sitting in 13c1a24;
    scripts/lab/bench_profile.py). Serial envs step in this process, between the policy's calls, so
    they leave every core to torch."""
    return cpus.learner_threads(setting, worker_processes(vecenv))


def worker_processes(vecenv: pufferlib.vector.VecEnv) -> int:
    """The processes that step envs beside the learner's: none for Serial; Multiprocessing's num_processes
    leaves out a local worker, which steps in this process."""
    if isinstance(vecenv, pufferlib.vector.Serial):
        return 0
    return getattr(vecenv, 'num_processes', vecenv.num_workers)


GiB = 2**30


def check_memory(env: str | Callable, config: dict) -> None:
    """The run's validation, once (make_trainer), from one small probe env, before the env is built at its full
    size: refuse a run whose env and rollout buffers (pufferlib.vector.footprint, pufferlib.trainer.rollout_bytes)
    need more memory than is available, before any of it is allocated (else the kernel's out-of-memory killer
    ends the process minutes later without a word). The rollout lives on the train device: on a GPU it is
    compared with that GPU's free memory. Then the rollout's own size checks (pufferlib.trainer.check_rollout)
    on the same row count: a run shorter than one epoch is one line, before any env worker starts."""
    H = config['train']['bptt_horizon']
    fp = pufferlib.vector.footprint(env, config['vec'], config['env'])
    rnn_hidden = config['rnn']['hidden_size'] if config['rnn']['class'] else 0
    rollout = rollout_bytes(fp.rows, H, fp.observation_space, fp.action_space, fp.mask_width, rnn_hidden)
    # psutil reads MemAvailable on Linux: free memory plus the page cache the kernel can drop, which is what
    # a new allocation can get; "free" alone would refuse runs that fit.
    host = psutil.virtual_memory().available
    device = resolve_device(config['train']['device'])
    gpu_free = torch.cuda.mem_get_info(device)[0] if device.type == 'cuda' else None
    if fp.buffer_bytes + (rollout if gpu_free is None else 0) <= host and (gpu_free is None or rollout <= gpu_free):
        check_rollout(fp.rows, config['train'])
        return
    lower = ['--env.num-envs'] * ('num_envs' in config['env']) + ['--vec.num-envs', '--train.bptt-horizon']
    env_part = (f'{fp.buffer_bytes / GiB:,.1f} GiB of env buffers ({fp.rows:,} agent rows of '
                f'{fp.buffer_bytes // max(fp.rows, 1):,} bytes)')
    rollout_part = f'{rollout / GiB:,.1f} GiB of rollout buffers ({fp.rows:,} rows x {H} steps)'
    need = f'{(fp.buffer_bytes + rollout) / GiB:,.1f} GiB: {env_part} and {rollout_part}'
    have = f'{host / GiB:,.1f} GiB of memory is available'
    if gpu_free is not None:
        need = f'{env_part} in memory and {rollout_part} on {device}'
        have = f'{host / GiB:,.1f} GiB of memory and {gpu_free / GiB:,.1f} GiB on {device} are available'
    raise configuration.ConfigError(f'this run needs at least {need}, but {have}; lower {", ".join(lower)}')


def size_for_machine(env: str | Callable, config: dict) -> str:
    """Fill in the sizes `config` leaves automatic (0 or "auto": vec.num_envs, vec.num_workers, vec.batch_size,
    train.minibatch_size) for this machine, in place: pufferlib.cpus's rules, from its usable cores and whether
    the learner trains on a GPU. Returns what was chosen, for the `cpus:` line (empty when nothing was
    automatic); the run's saved config holds the numbers, so a resumed run keeps them on any machine."""
    cores, gpu = cpus.cpu_count(), resolve_device(config['train']['device']).type == 'cuda'
    chosen = [(f'vec.{key}', value) for key, value in cpus.size_vec(config['vec'], cores, gpu).items()]
    config['vec'].update({key[len('vec.'):]: value for key, value in chosen})
    train = config['train']
    if not train['minibatch_size']:
        rows = pufferlib.vector.footprint(env, config['vec'], config['env']).rows
        train['minibatch_size'] = cpus.size_minibatch(rows, train['bptt_horizon'], train['minibatch_sampling'])
        chosen.append(('train.minibatch_size', train['minibatch_size']))
    if not chosen:
        return ''
    machine = f'{cores} core{"s" * (cores != 1)}, {"a GPU" if gpu else "no GPU"}'
    return f'auto for {machine}: {", ".join(f"{key} {value}" for key, value in chosen)}'


def make_vecenv(env: str | Callable, config: dict, seed_offset: int = 0) -> pufferlib.vector.VecEnv:
    """The vector env of an experiment; `env` is a name or an env creator."""
    return pufferlib.vector.from_config(env, config['vec'], seed=config['train']['seed'] + seed_offset,
                                        env_kwargs=config['env'])


# ---------------------------------------------------------------------------------------------
# The whole job: set up, resume, loop, shut down
# ---------------------------------------------------------------------------------------------

class Distributed:
    """torchrun's data parallelism as seen by one process; one process alone when WORLD_SIZE is unset.

    Only the leader (rank 0) writes the run directory, the metrics and the checkpoints."""

    def __init__(self) -> None:
        self.world_size = int(os.environ.get('WORLD_SIZE', '1'))
        self.rank = int(os.environ.get('RANK', '0'))
        self.enabled = self.world_size > 1
        self.leader = self.rank == 0
        if self.enabled:
            torch.distributed.init_process_group('nccl' if torch.cuda.is_available() else 'gloo')

    def device(self, device: torch.device) -> torch.device:
        if self.enabled and device.type == 'cuda':
            device = torch.device('cuda', int(os.environ.get('LOCAL_RANK', '0')))
            torch.cuda.set_device(device)
        return device

    def close(self) -> None:
        if self.enabled:
            torch.distributed.destroy_process_group()


class Job:
    """What one training run holds between its steps (see `train`)."""

    def __init__(self, env_name: str, config: dict, trainer: Trainer, run_dir: str | None, checkpoint: str | None,
                 resumed: bool, dist: Distributed, lock: rundir.DirLock | None) -> None:
        self.env_name, self.config, self.trainer, self.run_dir = env_name, config, trainer, run_dir
        self.checkpoint, self.resumed, self.dist, self.lock = checkpoint, resumed, dist, lock
        self.summary: dict[str, Any] = {'run_dir': run_dir, 'env': env_name}
        self.interrupted: str | None = None  # 'SIGINT', 'SIGTERM' or 'on_log' once something asked the run to stop
        self.state: dict | None = None  # the checkpoint's contents when the resume plan already loaded them
        self.sized = ''  # the sizes chosen for this machine (size_for_machine), shown in the cpus line

    def leader_dir(self) -> str:
        """The run directory, for what only the leader writes (checkpoints, metrics, the profile): rank 0
        always has one, the other ranks none."""
        if self.run_dir is None:
            raise RuntimeError(f'rank {self.dist.rank} has no run directory: only rank 0 writes the run')
        return self.run_dir


# The signals that stop a run at the end of its epoch, and the exit status of `puffer train` then.
STOP_SIGNALS = {'SIGINT': 128 + signal.SIGINT, 'SIGTERM': 128 + signal.SIGTERM}


class StoppedAtOnce(KeyboardInterrupt):
    """A second Ctrl-C (or SIGTERM) stopped training in the middle of an epoch, without a checkpoint."""

    def __init__(self, message: str, exit_code: int = STOP_SIGNALS['SIGINT']) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def train(env: str | Callable | None, config: dict | None = None, flags: Sequence[str] = (), resume: str | None = None,
          run_dir: str | None = None, printer: Callable | None = None, quiet: bool = False,
          on_log: Callable[[dict], bool | None] | None = None, until_step: int | None = None) -> dict:
    """Train on `env` (a name, or a creator with `config` given); return a summary dict.

    `until_step` ends this call at the first epoch boundary at or past that step, with a checkpoint and a
    metrics row, as if the run ended there; resuming goes on to train.total_timesteps (so the learning-rate
    schedule spans the whole run). Population-based training trains its members in such rounds.

    `on_log(row)` sees every metrics row; returning True stops training after that epoch (with a
    checkpoint), e.g. once a target score or a time budget is reached. Ctrl-C and SIGTERM do the same
    (summary['interrupted'] names the signal); a second one raises StoppedAtOnce.

    With `resume` (latest, a run id or a run directory; see pufferlib.rundir for "latest"), the run
    directory's saved config is used and training continues from its latest checkpoint: same step
    count, optimizer and scheduler state. Flags may change only the RESUMABLE keys (see
    `plan_resume`); a run that already reached its train.total_timesteps is left as it is
    (summary['finished']).
    """
    plan = plan_resume(env, flags, resume) if resume else None  # reads the run; writes nothing
    # A finished run that another process holds may be one it is training on (resumed with a larger
    # total): set_up's claim then says who holds it.
    if plan is not None and plan.finished and not held_by_another(plan.run_dir):
        return plan.finished_summary()
    dist = Distributed()
    job = None
    try:
        job = set_up(env, config, flags, plan, run_dir, dist)
        resume_from_checkpoint(job)
        loop(job, printer=printer, quiet=quiet, on_log=on_log, until_step=until_step)
        save_if_stopped_early(job)
    finally:
        shut_down(job, dist)
    job.summary.update(global_step=job.trainer.boundary_step, epoch=job.trainer.epoch, interrupted=job.interrupted)
    return job.summary


def set_up(env: str | Callable | None, config: dict | None, flags: Sequence[str], plan: 'ResumePlan | None',
           run_dir: str | None, dist: Distributed) -> Job:
    """The run directory (claimed, see `rundir.claim`), the config (the resumed run's, given or loaded),
    seeds, device, vector env, policy and trainer."""
    if plan is not None:
        run_dir = plan.run_dir
    elif run_dir is None:
        rundir.experiments_dir()  # a PUFFER_EXPERIMENTS that names a file fails before any worker starts
    # An existing run directory is claimed before the env and the policy: a second `--resume` fails at once.
    lock = rundir.claim(run_dir) if dist.leader and run_dir is not None else None
    try:
        if plan is not None:
            env, env_name, config = plan.env, plan.env_name, plan.config
            if dist.leader:
                plan.announce()
        else:
            env, env_name, config = resolve_config(env, config, flags)
        sized = size_for_machine(env, config)
        trainer = make_trainer(env, env_name, config, dist)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    try:
        if dist.leader:
            if run_dir is None:
                run_dir = rundir.new_run_dir(env_name)
                lock = rundir.claim(run_dir)
            # A resumed run's config changes only by what the plan applied or filled in, saved so that the
            # next resume starts from it.
            if plan is None or plan.changes or plan.filled:
                write_config(run_dir, env_name, config)
    except BaseException:
        trainer.close()
        if lock is not None:
            lock.release()
        raise
    checkpoint, state = None, None
    if plan is not None:  # the newest checkpoint now that the run is ours: another process may have saved one
        checkpoint = latest_checkpoint(plan.run_dir)
        state = plan.state if checkpoint == plan.checkpoint else None
    job = Job(env_name, config, trainer, run_dir, checkpoint, plan is not None, dist, lock)
    job.state, job.sized = state, sized
    return job


def write_config(run_dir: str, env_name: str, config: dict) -> None:
    text = f'[_meta]\nenv = "{env_name}"\n\n' + configuration.to_toml(config)
    path = os.path.join(run_dir, 'config.toml')
    try:
        atomic_write(path, lambda f: f.write(text.encode()))
    except OSError as e:
        raise write_failure('the config', path, e) from None


def resolve_config(env: str | Callable | None, config: dict | None,
                   flags: Sequence[str]) -> tuple[str | Callable, str, dict]:
    """(env, env name, validated config) of a new run: the given config, else the env's loaded with flags."""
    env_name = env if isinstance(env, str) else getattr(env, '__name__', 'custom')
    if env is None:
        raise APIUsageError('train needs an env (a name or an env creator) unless it resumes a run')
    if config is None:
        config = configuration.load(env_name if isinstance(env, str) else None, flags)
    configuration.validate(config)
    return env, env_name, config


# ---------------------------------------------------------------------------------------------
# Resuming: what a resume may change, what a saved config lacks, a finished run
# ---------------------------------------------------------------------------------------------

# The keys a resume may change. Everything else is what the run was trained with: changing the
# learning rate, the model or the env in the middle of a run would leave a run that is neither
# the old one nor a new one, so those flags are refused (start a new run instead).
RESUMABLE = (
    # How long to train: resuming a finished run with a larger total is how a run is extended.
    'train.total_timesteps',
    # What is written and shown, not what is learned.
    'train.checkpoint_interval', 'train.keep_checkpoints', 'train.log_interval', 'train.profile',
    'wandb.enabled', 'wandb.project', 'wandb.group',
    # Where it runs: a run may be resumed on another machine. None of these changes the agent rows,
    # their seeds or the update, only which processes and device compute them.
    'train.device', 'train.torch_threads', 'vec.backend', 'vec.num_workers', 'vec.num_processes',
    'vec.local_worker', 'vec.step_timeout',
)
# Sections whose missing keys are filled in with a message; the others ([league], [sweep]) do not
# affect a training run and are filled in silently.
TRAINING_SECTIONS = ('env', 'vec', 'train', 'policy', 'rnn', 'wandb')
# Sections that set the shapes of the model a checkpoint holds: a default cannot stand in for them.
SHAPE_SECTIONS = ('policy', 'rnn')


def _value(value: Any) -> str:
    return f'{value:,}' if isinstance(value, int) and not isinstance(value, bool) else repr(value)


class ResumePlan:
    """What resuming `run_dir` will do, worked out before anything is written: the config (the saved one,
    with keys it lacks `filled` in and the RESUMABLE `changes` of the flags applied), the latest
    checkpoint and its state, and whether the run is already `finished`."""

    def __init__(self, run_dir: str, env: str | Callable, env_name: str, config: dict, filled: list[tuple[str, Any]],
                 changes: list[tuple[str, Any, Any]], checkpoint: str | None, state: dict | None) -> None:
        self.run_dir, self.env, self.env_name, self.config = run_dir, env, env_name, config
        self.filled, self.changes, self.checkpoint, self.state = filled, changes, checkpoint, state
        self.step = int(state['global_step']) if state is not None else 0
        self.finished = self.step >= config['train']['total_timesteps']

    def announce(self) -> None:
        """One line for the keys filled in with defaults and one for the flags applied, on stderr."""
        if self.filled:
            print(f'puffer train: {os.path.join(self.run_dir, "config.toml")} has no '
                  f'{", ".join(key for key, _ in self.filled)} (saved by an older version, or edited); using '
                  f'today\'s defaults: {", ".join(f"{key} = {_value(value)}" for key, value in self.filled)}',
                  file=sys.stderr)
        if self.changes:
            print(f'puffer train: resuming {self.run_dir} with '
                  f'{", ".join(f"{key} {_value(old)} -> {_value(new)}" for key, old, new in self.changes)}',
                  file=sys.stderr)

    def finished_summary(self) -> dict:
        """Say that the run is finished and how to train it longer; the run directory is left untouched."""
        total = self.config['train']['total_timesteps']
        if os.environ.get('RANK', '0') == '0':
            longer = invocation.command('train', '--resume', Path(self.run_dir), '--train.total-timesteps',
                                        str(2 * max(total, self.step)))
            print(f'puffer train: {self.run_dir} is finished: {self.step:,} of {total:,} steps done. To train it '
                  f'longer, resume it with a larger --train.total-timesteps, e.g. {longer}')
        epoch = int(self.state['epoch']) if self.state is not None else 0
        return {'run_dir': self.run_dir, 'env': self.env_name, 'finished': True, 'global_step': self.step,
                'epoch': epoch, 'interrupted': None, 'checkpoint': self.checkpoint}


def plan_resume(env: str | Callable | None, flags: Sequence[str], resume: str) -> ResumePlan:
    """The ResumePlan of `resume` (latest, a run id or a run directory) with `flags`: a ConfigError for a
    flag that changes a key outside RESUMABLE, or a saved config that lacks a [policy] or [rnn] key."""
    run_dir = rundir.find_run(resume, env if isinstance(env, str) else None)
    path = os.path.join(run_dir, 'config.toml')
    saved = configuration.read(path)
    env_name = saved.pop('_meta', {}).get('env', env if isinstance(env, str) else 'custom')
    if env is None or isinstance(env, str):
        env = env_name
    # Today's defaults for this env (its family and env files, its options), where the registry knows it.
    known = isinstance(env, str) and registry.family_of(env_name) is not None
    today = configuration.load(env_name) if known else configuration.defaults()
    filled = [(f'{section}.{key}', value) for section in TRAINING_SECTIONS for key, value in today[section].items()
              if key not in saved.get(section, {}) and not isinstance(value, dict)]
    shaping = [key for key, _ in filled if key.split('.')[0] in SHAPE_SECTIONS and not _unused_rnn_key(key, saved)]
    if shaping:
        section, key = shaping[0].split('.', 1)
        raise configuration.ConfigError(
            f'{path} has no {", ".join(shaping)}: [{section}] sets the shapes of the model the checkpoints hold, '
            f'so today\'s default ({_value(today[section][key])}) may not be what the run was trained with; add '
            f'`{key} = <its value>` under [{section}] in that file, or start a new run')
    base = configuration.merge(today, saved, path)
    config = configuration.parse_flags(list(flags), base)
    changes = [(f'{section}.{key}', base[section].get(key), value) for section, values in config.items()
               for key, value in values.items() if not isinstance(value, dict) and base[section].get(key) != value]
    refused = [change for change in changes if change[0] not in RESUMABLE]
    if refused:
        raise configuration.ConfigError(
            f'{run_dir} was trained with other settings than the flags give: '
            f'{", ".join(f"{key} {_value(old)} -> {_value(new)}" for key, old, new in refused)}; a resume may '
            f'change only {", ".join(RESUMABLE)}. Start a new run to train with these settings')
    configuration.validate(config)
    checkpoint = latest_checkpoint(run_dir)
    state = load_checkpoint(checkpoint) if checkpoint is not None else None
    filled = [(key, value) for key, value in filled if key.split('.')[0] not in SHAPE_SECTIONS]
    return ResumePlan(run_dir, env, env_name, config, filled, changes, checkpoint, state)


def held_by_another(run_dir: str) -> bool:
    """Whether a process holds the run's lock (pufferlib.rundir.held)."""
    return rundir.held(run_dir)


def _unused_rnn_key(key: str, saved: dict) -> bool:
    """An [rnn] size of a run saved without an rnn class: no LSTM, so the size shapes nothing."""
    return key.startswith('rnn.') and key != 'rnn.class' and saved.get('rnn', {}).get('class') == ''


def make_trainer(env: str | Callable, env_name: str, config: dict, dist: Distributed) -> Trainer:
    train_config = config['train']
    torch.manual_seed(train_config['seed'] + dist.rank)
    np.random.seed(train_config['seed'] + dist.rank)
    device = dist.device(resolve_device(train_config['device']))
    check_memory(env, config)
    vector = make_vecenv(env, config, seed_offset=1000 * dist.rank)
    threads = torch_threads(train_config['torch_threads'], vector)
    torch.set_num_threads(threads)
    # NumPy's BLAS and any OpenMP pool too: left alone they size themselves from the host's cores, not
    # the cgroup's quota (pufferlib.cpus).
    threadpoolctl.threadpool_limits(threads)
    vecenv: TrainerEnv = vector
    try:
        policy = make_policy(vecenv, config)
        return Trainer(config, vecenv, policy, device=device, distributed=dist.enabled, env_name=env_name)
    except BaseException:
        vecenv.close()
        raise


def resume_from_checkpoint(job: Job) -> None:
    """The checkpoint's state, and metrics.jsonl cut back to its step (the rows after it are trained again)."""
    if job.checkpoint is not None:
        state = job.state if job.state is not None else load_checkpoint(job.checkpoint)
        job.trainer.load_state_dict(state, job.checkpoint)
        job.state = None  # the checkpoint's tensors are not needed past here
    if job.dist.leader:
        rundir.trim_metrics(job.leader_dir(), job.trainer.global_step)


def _to_stderr(line: str) -> None:
    os.write(2, f'\n{line}\n'.encode())  # not print: a handler may run in the middle of a print to stderr


@contextlib.contextmanager
def stop_signals(job: Job, announce: Callable[[str], None] = _to_stderr) -> Iterator[None]:
    """Ctrl-C and SIGTERM ask the run to stop at the end of the epoch (`job.interrupted`), which
    `announce` tells the user (the live dashboard shows it in its frame); a second one raises
    StoppedAtOnce wherever the run is. Signal handlers belong to the main thread: elsewhere this
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if job.interrupted in STOP_SIGNALS:
            raise StoppedAtOnce(name, STOP_SIGNALS[name])
        job.interrupted = name
        what = 'Ctrl-C' if name == 'SIGINT' else name
        announce(f'puffer train: {what}: stopping at the end of this epoch with a checkpoint '
                 '(Ctrl-C again stops at once)')
    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def loop(job: Job, printer: Callable | None = None, quiet: bool = False,
         on_log: Callable[[dict], bool | None] | None = None, until_step: int | None = None) -> None:
    """Rollout and update until the step budget, a signal or `on_log` stops it; checkpoints and metrics
    rows as configured. Every way it can fail says where the last good checkpoint is."""
    from pufferlib.dashboard import Dashboard
    trainer, train_config, leader = job.trainer, job.config['train'], job.dist.leader
    # Off rank 0 the dashboard is quiet: it never shows the run directory that rank does not have.
    workers = worker_processes(trainer.vecenv)  # type: ignore[arg-type]  # the VecEnv make_trainer built
    cpu_line = (f'cpus: {cpus.describe()}: {workers} env worker process{"es" * (workers != 1)}, '
                f'{torch.get_num_threads()} torch thread{"s" * (torch.get_num_threads() != 1)}'
                + (f'; {job.sized}' if job.sized else ''))
    dashboard = Dashboard(job.env_name, trainer, job.run_dir or '', printer=printer, quiet=quiet or not leader,
                          notes=[cpu_line])
    metrics = None

    def reached_end() -> bool:
        return trainer.epoch >= trainer.total_epochs or (until_step is not None and trainer.global_step >= until_step)
    last_log, start_step, start = 0.0, trainer.global_step, time.time()
    trainer.profile.start(trainer.global_step)
    try:
        with stop_signals(job, dashboard.announce) if leader else contextlib.nullcontext(), dashboard:
            metrics = Metrics(job.leader_dir(), job.config, job.resumed) if leader else None
            while not reached_end() and job.interrupted is None:
                rollout_start = time.time()
                trainer.rollout()
                update_start = time.time()
                losses = trainer.update()
                done = time.time()
                is_last = reached_end()
                if leader and (trainer.epoch % train_config['checkpoint_interval'] == 0 or is_last):
                    job.summary['checkpoint'] = trainer.save(job.leader_dir())
                trainer.profile.lap('checkpoint')
                # Only the leader has metrics: the other ranks write no rows.
                # A stopping run logs the epoch it ends on: the dashboard's last frame shows where it stopped.
                if metrics is not None and (done - last_log >= train_config['log_interval'] or is_last
                                            or job.interrupted is not None):
                    last_log = done
                    episodes = {f'env/{k}': v for k, v in trainer.episode_stats().items()}
                    trainer.profile.lap('stats')
                    if episodes:
                        job.summary['episodes'] = episodes  # the latest; some log rows have none
                    row = {'global_step': trainer.global_step, 'epoch': trainer.epoch,
                           'sps': (trainer.global_step - start_step) / max(done - start, 1e-9),
                           'rollout_s': update_start - rollout_start, 'train_s': done - update_start,
                           'elapsed_s': done - start, **losses, **episodes,
                           **{f'swarm/{k}': v for k, v in trainer.explore_stats.items()}}
                    metrics.write(row)
                    dashboard.update(row)
                    job.summary['last'] = row
                    if on_log is not None and on_log(row):
                        job.interrupted = 'on_log'
                trainer.profile.lap('logging')
                trainer.profile.end_epoch(trainer.global_step)
        if leader and trainer.profile.enabled:
            job.summary['profile'] = trainer.profile.report(job.leader_dir(), time.time() - start, job.env_name,
                                                            quiet)
    except EnvError as e:
        if job.interrupted in STOP_SIGNALS:
            return  # the signal reached the env workers too (`kill -TERM -PGID`): a stop, not an env crash
        if leader:
            print(f'\npuffer train: an environment failed, so training stopped.\n{e}\n\n'
                  f'{last_checkpoint(job, save=True)} once the env is fixed.', file=sys.stderr)
        raise
    except NonFiniteError as e:
        if not leader:
            raise
        # From the env, the weights never saw the bad numbers: the epoch boundary is a good checkpoint.
        # Otherwise (the loss, the weights), the newest checkpoint on disk is the last good one.
        raise NonFiniteError(f'{e}. {last_checkpoint(job, save=e.weights_ok)}') from None
    except RunDirError as e:
        if not leader:
            raise
        # A last checkpoint where space allows, unless writing the checkpoint is what just failed.
        retry = getattr(e, 'what', None) != 'the checkpoint'
        raise RunDirError(f'{e}. {last_checkpoint(job, save=retry)}') from None
    except KeyboardInterrupt as e:  # a second Ctrl-C or SIGTERM (StoppedAtOnce), or one in set-up
        name = str(e) if str(e) in STOP_SIGNALS else 'SIGINT'
        what = 'a second Ctrl-C' if name == 'SIGINT' else f'a second {name}'
        raise StoppedAtOnce(f'stopped at once by {what}, in the middle of epoch {trainer.epoch + 1}. '
                            f'{last_checkpoint(job, save=False)}', STOP_SIGNALS[name]) from None
    finally:
        if metrics is not None:
            metrics.close()


def last_checkpoint(job: Job, save: bool) -> str:
    """A sentence for error messages: the checkpoint of the last finished epoch, saved now when `save`
    (and the disk allows), else the newest one on disk; and how to resume from it."""
    failed, resume = '', f'resume with `{invocation.command("train", "--resume", Path(job.run_dir or ""))}`'
    if save and job.trainer.epoch > 0:
        try:
            saved = job.trainer.save(job.leader_dir())  # only the leader is asked to save
            job.summary['checkpoint'] = saved
            return f'The last checkpoint is {saved}, saved now at the end of epoch {job.trainer.epoch}; {resume}'
        except (RunDirError, NonFiniteError) as e:
            failed = f'A last checkpoint could not be saved ({e}). '
    path = latest_checkpoint(job.run_dir) if job.run_dir else None
    if path is None:
        return (f'{failed}No checkpoint was written yet in {job.run_dir} (one every train.checkpoint_interval '
                'epochs)')
    return f'{failed}The last checkpoint is {path}; {resume}'


def save_if_stopped_early(job: Job) -> None:
    """A run stopped by a signal or by `on_log` keeps the epoch it finished."""
    if job.interrupted and job.dist.leader:
        try:
            job.summary['checkpoint'] = job.trainer.save(job.leader_dir())
        except RunDirError as e:
            raise RunDirError(f'{e}; training was stopping ({job.interrupted}). '
                              f'{last_checkpoint(job, save=False)}') from None


def shut_down(job: Job | None, dist: Distributed) -> None:
    """Close the vector env (its workers), release the run directory and leave the process group,
    whatever happened before."""
    try:
        if job is not None:
            job.trainer.close()
    finally:
        if job is not None and job.lock is not None:
            job.lock.release()
        dist.close()
