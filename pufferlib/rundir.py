"""The run layer: the directories that training runs, sweeps and leagues write, and how to find them.

A run directory (`experiments/<env>-<date>[-n]/`: config.toml, metrics.jsonl, checkpoints/), a sweep
directory (`experiments/sweeps/<env>-<date>/`: sweep.toml, trials.jsonl) and a league directory
(`experiments/leagues/<env>-<method>-<date>/`: league.toml, ledger.jsonl, policies/) are one kind of
thing, owned by one process at a time. Everything here is about not losing what is already in them:

- names that never collide, however many start in the same second (`new_directory`);
- a lock that ends with its owner, names that owner to a second process, and is taken over with a
  message when its owner is gone (`claim`);
- writes that are whole or absent (`atomic_write`, `write_text`), and errors that say which write
  the disk refused (`write_failure`);
- an append-only, fsync'd ledger whose torn last line (a kill during a write) is cut on resume and
  whose other lines are checked against its owner's schema as they are read (`Ledger`), and a metrics
  file cut back to the checkpoint a run resumes from (`trim_metrics`);
- one meaning of "latest" (`latest_run`, `find_run`): the run directory under the experiments folder
  (`$PUFFER_EXPERIMENTS`, default `./experiments`) written to most recently (its newest checkpoint,
  else its config.toml), among the runs of the named env when an env is named.
- a run's newest checkpoint (`latest_checkpoint`), and the error a missing or bad one raises
  (`CheckpointError`); reading one needs torch, so that lives in pufferlib.models.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import shutil
import signal
import socket
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import IO, Any

from pufferlib import invocation
from pufferlib.pufferenv import APIUsageError, PufferError


class RunDirError(PufferError, OSError):
    """The run directory refused a write (disk full, read-only, removed) or another process holds it."""


class RunNotFoundError(PufferError, FileNotFoundError):
    """`latest` or a run id names no run directory."""


class CheckpointError(PufferError, RuntimeError):
    """A checkpoint is missing, corrupt, or belongs to another env or policy."""


def write_failure(what: str, path: str, error: OSError, size: int | None = None) -> RunDirError:
    """The one-line error of a refused write of `what` (`size` bytes, when known) to `path`; a full disk's
    says how much was needed and how much its folder's disk has free."""
    reason = error.strerror or str(error)
    needed = ''
    if error.errno == errno.ENOSPC:
        parts = [f'{size:,} bytes to write'] if size is not None else []
        with contextlib.suppress(OSError):
            parts.append(f'{shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free:,} bytes free there')
        needed = f' ({", ".join(parts)})' if parts else ''
    failure = RunDirError(f'cannot write {what} {path}{needed}: {reason}. Free some disk space or make the folder '
                          'writable')
    failure.what = what  # type: ignore[attr-defined]  # which write failed, for the trainer's recovery
    return failure


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------

def experiments_dir() -> str:
    """$PUFFER_EXPERIMENTS, default ./experiments; a folder (made on first use), never a file."""
    path = os.environ.get('PUFFER_EXPERIMENTS', os.path.join(os.getcwd(), 'experiments'))
    if os.path.exists(path) and not os.path.isdir(path):
        where = 'PUFFER_EXPERIMENTS' if 'PUFFER_EXPERIMENTS' in os.environ else 'the experiments folder'
        raise APIUsageError(f'{where} is {path}, which is a file, not a folder: point PUFFER_EXPERIMENTS at a '
                            'folder (it is created if missing)')
    return path


def new_directory(root: str, name: str, subfolders: Sequence[str] = ()) -> str:
    """Create and return root/<name>-<date>-<time> with its subfolders; several started in the same
    second get -2, -3, ... (mkdir is atomic: of several processes choosing one name, one gets it)."""
    base = os.path.join(root, f'{name}-{datetime.datetime.now():%Y%m%d-%H%M%S}')
    path, n = base, 1
    try:
        os.makedirs(root, exist_ok=True)
        while True:
            try:
                os.mkdir(path)
                break
            except FileExistsError:
                n += 1
                path = f'{base}-{n}'
        for folder in subfolders:
            os.mkdir(os.path.join(path, folder))
    except OSError as e:
        raise write_failure('the directory', path, e) from None
    return path


def new_run_dir(env_name: str) -> str:
    """experiments/<env>-<date>[-n]/ with its checkpoints/ folder."""
    return new_directory(experiments_dir(), env_name, ['checkpoints'])


# ---------------------------------------------------------------------------------------------
# Whole writes
# ---------------------------------------------------------------------------------------------

TMP_MARK = '.tmp-'


def atomic_write(path: str, write: Callable[[IO[bytes]], object]) -> None:
    """Write through a temporary file and rename it over `path`: a crash never leaves half a file, and
    a failed write (disk full, Ctrl-C) leaves no temporary file either."""
    tmp = f'{path}{TMP_MARK}{os.getpid()}'
    try:
        with open(tmp, 'wb') as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def write_text(path: str, text: str) -> None:
    """`atomic_write` of a text file (UTF-8)."""
    atomic_write(path, lambda f: f.write(text.encode()))


def read_json(path: str) -> Any:
    """The JSON in `path`, or None when it is missing or not whole JSON (a writer that died before it)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def remove_temporary_files(directory: str, subfolders: Sequence[str] = ('checkpoints', 'policies')) -> list[str]:
    """Temporary files of writes cut short by a SIGKILL or a power cut; only the lock holder calls this."""
    removed = []
    for folder in (directory, *(os.path.join(directory, sub) for sub in subfolders)):
        names = os.listdir(folder) if os.path.isdir(folder) else []
        for name in names:
            if TMP_MARK in name:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))
                    removed.append(name)
    return removed


# ---------------------------------------------------------------------------------------------
# One owner at a time
# ---------------------------------------------------------------------------------------------

# What a second process is told, per kind of directory: {path} and {owner} are filled in.
IN_USE = {
    'train': 'run directory {path} is in use by {owner}; wait for that run to end (or stop it), or start a new run',
    'sweep': 'the sweep {path} is already running ({owner}); wait for it, or stop it and resume',
    'league': 'the league {path} is already running ({owner}); wait for it, or stop it and resume',
    'pbt': 'the population {path} is already training ({owner}); wait for it, or stop it and resume',
}


class DirLock:
    """An exclusive claim on a run, sweep or league directory, held from set-up to shut-down.

    The claim is a kernel lock (flock) on `directory/lock`, so it ends with its process however that
    ends; the file's text (pid, host, start time) names the owner in the error a second process gets.
    Text in a file nobody locks is a stale lock: taken over with a message."""

    def __init__(self, directory: str, kind: str = 'train', error: type[PufferError] = RunDirError):
        self.directory, self.kind, self.error = directory, kind, error
        self.path = os.path.join(directory, 'lock')
        self.fd: int | None = None

    def acquire(self) -> None:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise write_failure('the lock file', self.path, e) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = self._read(fd) or 'another process'
                os.close(fd)
                raise self.error(IN_USE[self.kind].format(path=self.directory, owner=owner)) from None
            try:  # the holder may have released and removed the file between our open and flock
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd = fd
        previous = self._read(fd)
        if previous:
            print(f'puffer {self.kind}: {self.directory} had a stale lock ({previous}, no longer running); '
                  'taking it over', file=sys.stderr)
        text = f'pid {os.getpid()} on host {socket.gethostname()} since {datetime.datetime.now():%Y-%m-%d %H:%M:%S}'
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, text.encode(), 0)
        except OSError as e:
            self.release()
            raise write_failure('the lock file', self.path, e) from None

    @staticmethod
    def _read(fd: int) -> str:
        return os.pread(fd, 4096, 0).decode(errors='replace').strip()

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.remove(self.path)  # while still locked: a waiting process then sees a new file (see acquire)
        os.close(self.fd)
        self.fd = None


def held(directory: str) -> bool:
    """Whether a process holds the directory's lock (DirLock), asked without writing anything: a shared flock
    on the file opened read-only, released at once."""
    try:
        fd = os.open(os.path.join(directory, 'lock'), os.O_RDONLY)
    except OSError:  # no lock file: nobody ever held it, or its last holder ended cleanly
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def claim(directory: str, kind: str = 'train', error: type[PufferError] = RunDirError) -> DirLock:
    """Lock the directory for this process (`kind`: train, sweep or league, for the messages; `error`:
    what a second process raises), then clear what interrupted writes left in it."""
    lock = DirLock(directory, kind, error)
    lock.acquire()
    removed = remove_temporary_files(directory)
    if removed:
        print(f'puffer {kind}: removed {len(removed)} temporary file(s) of an interrupted write from {directory}',
              file=sys.stderr)
    return lock


# ---------------------------------------------------------------------------------------------
# Append-only records
# ---------------------------------------------------------------------------------------------

class Ledger:
    """A JSON-lines file, one record a line, appended and fsync'd by the directory's lock holder only.

    A kill during a write leaves at most a torn last line, which never counted: `read` ignores it and
    `repair` (called on resume, before the first append) cuts it, so the next record starts on a line
    of its own. A bad line anywhere else was edited or damaged: an `error` that names the line. So is a
    whole JSON line that `check` (the owner's schema: a record -> what is wrong with it, or None) refuses,
    which would otherwise fail later, far from the line, as a KeyError."""

    def __init__(self, path: str, error: type[PufferError] = RunDirError,
                 check: Callable[[Any], str | None] | None = None):
        self.path, self.error, self.check = path, error, check

    def read(self) -> list[dict]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, 'rb') as f:
            lines = f.read().split(b'\n')
        records = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines):  # the torn last line of a killed write
                    break
                raise self.error(f'{self.path} line {number} is not a JSON record; the ledger was edited or '
                                 'damaged. Fix or delete that line, then resume') from None
            problem = self.check(record) if self.check is not None else None
            if problem is not None:
                raise self.error(f'{self.path} line {number} is not a record of this ledger ({problem}); the ledger '
                                 'was edited, damaged or written by another version of pufferlib. Fix or delete that '
                                 'line, then resume; nothing was changed')
            records.append(record)
        return records

    def repair(self) -> None:
        """Cut a torn last line, so the next record starts on a line of its own."""
        if not os.path.exists(self.path):
            return
        with open(self.path, 'rb+') as f:
            data = f.read()
            if data and not data.endswith(b'\n'):
                f.truncate(data.rfind(b'\n') + 1)
                f.flush()
                os.fsync(f.fileno())

    def append(self, record: dict) -> None:
        with open(self.path, 'a') as f:
            f.write(json.dumps(record) + '\n')
            f.flush()
            os.fsync(f.fileno())


def trim_metrics(run_dir: str, step: int) -> int:
    """Drop metrics rows past `step` (and torn lines) so a resumed run's rows stay in step order, each
    step once: rows written after the checkpoint it resumes from are trained again. Returns rows dropped."""
    path = os.path.join(run_dir, 'metrics.jsonl')
    if not os.path.exists(path):
        return 0
    kept, dropped, unended = [], 0, False
    with open(path, 'rb') as f:
        for line in f:
            try:
                keep = json.loads(line)['global_step'] <= step
            except (ValueError, KeyError, TypeError):
                keep = False
            if keep and not line.endswith(b'\n'):  # a whole row whose newline was lost: the next row
                line, unended = line + b'\n', True  # appended must not join it
            kept.extend([line] if keep else [])
            dropped += not keep
    if dropped or unended:
        try:
            atomic_write(path, lambda f: f.writelines(kept))
        except OSError as e:
            raise write_failure('the metrics file', path, e) from None
    return dropped


# ---------------------------------------------------------------------------------------------
# Finding runs: "latest", a run id, a path
# ---------------------------------------------------------------------------------------------

def run_env(run_dir: str) -> str | None:
    """The env a run directory trained on (from its config.toml), or None if it has no readable config."""
    try:
        with open(os.path.join(run_dir, 'config.toml'), 'rb') as f:
            return tomllib.load(f).get('_meta', {}).get('env')
    except (OSError, tomllib.TOMLDecodeError):
        return None


def last_written(run_dir: str) -> float:
    """When a run last wrote something that matters: its newest checkpoint, else its config.toml."""
    folder = os.path.join(run_dir, 'checkpoints')
    times = [os.path.getmtime(os.path.join(run_dir, 'config.toml'))]
    if os.path.isdir(folder):
        times += [os.path.getmtime(os.path.join(folder, n)) for n in os.listdir(folder) if n.endswith('.pt')]
    return max(times)


def latest_checkpoint(run_dir: str) -> str | None:
    """The newest `checkpoints/epoch-*.pt` of a run (the names sort by epoch), or None before the first."""
    folder = os.path.join(run_dir, 'checkpoints')
    names = sorted(n for n in os.listdir(folder) if n.startswith('epoch-') and n.endswith('.pt')) \
        if os.path.isdir(folder) else []
    return os.path.join(folder, names[-1]) if names else None


def latest_run(env: str | None = None, root: str | None = None) -> str:
    """The run that "latest" names (see the module docstring), or a RunNotFoundError that says what to do."""
    root = root or experiments_dir()
    runs = [os.path.join(root, d) for d in sorted(os.listdir(root))] if os.path.isdir(root) else []
    runs = [r for r in runs if os.path.isfile(os.path.join(r, 'config.toml'))]
    if env is not None:
        runs = [r for r in runs if run_env(r) == env]
    if not runs:
        what = f'runs of {env}' if env else 'runs'
        raise RunNotFoundError(f'"latest": no {what} in {root}; start one with '
                               f'`{invocation.command("train", env or "ENV")}`')
    return max(runs, key=last_written)


def find_run(run: str, env: str | None = None) -> str:
    """A run directory from `latest`, a run id (a folder name under the experiments folder) or a path."""
    if run == 'latest':
        return latest_run(env)
    for path in (run, os.path.join(experiments_dir(), run)):
        if os.path.isfile(os.path.join(path, 'config.toml')):
            trained = run_env(path)
            if env is not None and trained is not None and trained != env:
                raise RunNotFoundError(f'{path} is a run of {trained}, not {env}: resume it with '
                                       f'`{invocation.command("train", "--resume", run)}` (no env name), or name a '
                                       f'run of {env}')
            return path
    raise RunNotFoundError(f'{run!r} is not a run directory (no config.toml there or in {experiments_dir()}); '
                           'pass latest, a run id from experiments/, or a run directory')


class Terminated(KeyboardInterrupt):
    """SIGTERM (`docker stop`, a scheduler, `kill`) raised as the KeyboardInterrupt that Ctrl-C raises, so one
    path stops a sweep or a league either way (it prints how to resume); the exit status is the shell's 143."""
    exit_code = 128 + signal.SIGTERM


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated in the main thread (elsewhere a handler cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated('stopped by SIGTERM')

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
