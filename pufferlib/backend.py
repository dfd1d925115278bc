"""Where a research loop's work runs: in this process, or as Ray tasks on a cluster.

Sweeps (trials) and leagues (responses and matches) hand their work to a backend as plain
functions of plain data, and read the results back in the driver, which alone writes the ledger.
Both backends have one interface:

    backend.put(value)                  -> a handle to pass to tasks (Ray's object store, or the value)
    backend.submit(fn, *args, **kwargs) -> concurrent.futures.Future of fn's result
    backend.remote_failure(error)       -> why the machinery failed a task (a dead Ray worker), or None
    backend.cancel(futures), backend.describe(), backend.close()

`LocalBackend(threads=0)` runs each task at once in the calling thread (a league's tasks share arenas
it keeps open); `threads=N` runs up to N at a time on threads (a sweep's trials, which wait on their
own subprocesses). `RayBackend` connects through pufferlib/cluster.py, so the address rules and
errors are those of every Ray path.
"""
from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any

from pufferlib import cluster


class LocalBackend:
    """Tasks on this machine: inline (threads=0) or on a pool of `threads` threads."""

    def __init__(self, threads: int = 0):
        self.pool = (concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix='task')
                     if threads > 0 else None)

    def put(self, value: Any) -> Any:
        return value

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        if self.pool is not None:
            return self.pool.submit(fn, *args, **kwargs)
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as e:  # kept for .result(), like a pool's; Ctrl-C (BaseException) stops at once
            future.set_exception(e)
        return future

    def remote_failure(self, error: BaseException) -> str | None:
        return None  # a task's exception here is the task's own

    def cancel(self, futures: Sequence[concurrent.futures.Future]) -> None:
        for future in futures:  # those not started yet; a running thread stops when its work does
            future.cancel()

    def describe(self) -> str:
        return 'this machine'

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


class RayBackend:
    """Tasks as Ray tasks (one CPU each, and one GPU each where the cluster has GPUs and `gpus` is set;
    never retried: the driver decides what a failed task means) on the cluster at `address`,
    RAY_ADDRESS or a new local Ray of `cpus` CPUs. `who` names the setting in errors."""

    def __init__(self, address: str | None = None, cpus: int | None = None, who: str = 'Ray', gpus: bool = False):
        self.ray, self.started = cluster.connect(address, cpus, who)
        self.gpus = 1 if gpus and self.ray.cluster_resources().get('GPU', 0) >= 1 else 0
        self.remote: dict[Callable, Any] = {}
        self.refs: dict[concurrent.futures.Future, Any] = {}

    def put(self, value: Any) -> Any:
        return self.ray.put(value)

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        if fn not in self.remote:
            self.remote[fn] = self.ray.remote(num_cpus=1, num_gpus=self.gpus, max_retries=0)(fn)
        ref = self.remote[fn].remote(*args, **kwargs)
        future = ref.future()
        self.refs[future] = ref  # to cancel it; dropped once it is done, so results do not pile up
        future.add_done_callback(lambda done: self.refs.pop(done, None))
        return future

    def remote_failure(self, error: BaseException) -> str | None:
        if not isinstance(error, self.ray.exceptions.RayError):
            return None
        cause = getattr(error, 'cause', None) or error
        return f'{type(cause).__name__}: {(str(cause).strip().splitlines() or [""])[-1][:300]}'

    def cancel(self, futures: Sequence[concurrent.futures.Future]) -> None:
        cluster.cancel_unfinished(self.ray, [self.refs.pop(f) for f in futures if f in self.refs])

    def describe(self) -> str:
        resources = self.ray.cluster_resources()
        nodes = sum(1 for node in self.ray.nodes() if node.get('Alive'))
        return f'{nodes} node(s), {resources.get("CPU", 0):g} CPUs'

    def close(self) -> None:
        self.refs.clear()
        if self.started:  # shut down only a Ray this backend started, never the caller's
            self.ray.shutdown()
