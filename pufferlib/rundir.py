"""Run directories: `experiments/<env>-<date>[-n]/`, owned by one process at a time.

A run directory holds config.toml, metrics.jsonl, checkpoints/ and, while a process trains in it,
`lock`. Everything here is about not losing what is already in it: names that never collide, a lock
that ends with its owner, writes that are whole or absent, errors that say which write the disk
refused, and a metrics file cut back to the checkpoint a run resumes from.
"""
import contextlib
import datetime
import fcntl
import json
import os
import socket
import sys
from collections.abc import Callable

from pufferlib import registry
from pufferlib.pufferenv import PufferError


class RunDirError(PufferError, OSError):
    """The run directory refused a write (disk full, read-only, removed) or another process holds it."""


def write_failure(what: str, path: str, error: OSError) -> RunDirError:
    reason = error.strerror or str(error)
    failure = RunDirError(f'cannot write {what} {path}: {reason}. Free some disk space or make the folder writable')
    failure.what = what
    return failure


def new_run_dir(env_name: str) -> str:
    """experiments/<env>-<date>[-n]/ with its checkpoints/ folder; unique when many runs start at once."""
    root = registry.experiments_dir()
    base = os.path.join(root, f'{env_name}-{datetime.datetime.now():%Y%m%d-%H%M%S}')
    path, n = base, 1
    try:
        os.makedirs(root, exist_ok=True)
        while True:
            try:
                os.mkdir(path)  # atomic: of several processes choosing this name, one gets it
                break
            except FileExistsError:
                n += 1
                path = f'{base}-{n}'
        os.mkdir(os.path.join(path, 'checkpoints'))
    except OSError as e:
        raise write_failure('the run directory', path, e) from None
    return path


TMP_MARK = '.tmp-'


def atomic_write(path: str, write: Callable) -> None:
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


def remove_temporary_files(run_dir: str) -> list[str]:
    """Temporary files of writes cut short by a SIGKILL or a power cut; only the lock holder calls this."""
    removed = []
    for folder in (run_dir, os.path.join(run_dir, 'checkpoints')):
        names = os.listdir(folder) if os.path.isdir(folder) else []
        for name in names:
            if TMP_MARK in name:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))
                    removed.append(name)
    return removed


class RunLock:
    """An exclusive claim on a run directory, held from set-up to shut-down.

    The claim is a kernel lock (flock) on `run_dir/lock`, so it ends with its process however that
    ends; the file's text (pid, host, start time) names the owner in the error a second process gets.
    Text in a file nobody locks is a stale lock: taken over with a message."""

    def __init__(self, run_dir: str):
        self.run_dir, self.path, self.fd = run_dir, os.path.join(run_dir, 'lock'), None

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
                raise RunDirError(f'run directory {self.run_dir} is in use by {owner}; wait for that run to end '
                                  '(or stop it), or start a new run') from None
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
            print(f'puffer train: {self.run_dir} had a stale lock ({previous}, no longer running); taking it over',
                  file=sys.stderr)
        text = f'pid {os.getpid()} on host {socket.gethostname()} since {datetime.datetime.now():%Y-%m-%d %H:%M:%S}'
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, text.encode(), 0)
        except OSError as e:
            self.release()
            raise write_failure('the lock file', self.path, e) from None

    @staticmethod
    def _read(fd):
        return os.pread(fd, 4096, 0).decode(errors='replace').strip()

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.remove(self.path)  # while still locked: a waiting process then sees a new file (see acquire)
        os.close(self.fd)
        self.fd = None


def claim(run_dir: str) -> RunLock:
    """Lock the run directory for this process, then clear what interrupted writes left in it."""
    lock = RunLock(run_dir)
    lock.acquire()
    removed = remove_temporary_files(run_dir)
    if removed:
        print(f'puffer train: removed {len(removed)} temporary file(s) of an interrupted write from {run_dir}',
              file=sys.stderr)
    return lock


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
