"""Ray clusters: join the one at an address, or start a local Ray on this machine.

`puffer sweep --sweep.backend ray` and `puffer league --league.backend ray` run their work as Ray
tasks and keep their ledgers in the driver (this process), and the Ray vector backend runs envs in
Ray actors; all of them connect through `connect`, so the address rules and the errors are the same:

1. a Ray already started in this process (`ray.init` by the caller, a test fixture) is used as it is;
2. else the address given (`--league.ray-address`), else the RAY_ADDRESS environment variable:
   `HOST:PORT` of a cluster's head node (`ray start --head` prints it), `ray://HOST:PORT` for Ray
   Client, or `auto` for the cluster this machine has joined;
3. else a new local Ray on this machine, with `num_cpus` CPUs (None: all of them).

An address where nothing answers is one `ClusterError` within seconds, instead of Ray's own retries.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING

from pufferlib.pufferenv import APIUsageError, MissingDependencyError, PufferError

if TYPE_CHECKING:
    from ray import ObjectRef

RAY_INSTALL = 'pip install "pufferlib[ray]"'
DEFAULT_PORT = 6379  # what `ray start --head` listens on unless told otherwise
CONNECT_TIMEOUT_S = 5.0


class ClusterError(PufferError, ConnectionError):
    """No Ray cluster answers at the address given, or a local one cannot start."""


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of 'HOST:PORT' or 'ray://HOST:PORT'; None for Ray's keywords (auto, local)."""
    if address in ('auto', 'local'):
        return None
    rest = address.split('://', 1)[1] if '://' in address else address
    host, _, port = rest.rpartition(':') if ':' in rest else (rest, '', str(DEFAULT_PORT))
    try:
        return host.strip('[]'), int(port)
    except ValueError:
        raise ClusterError(f'{address!r} is not a Ray address: use HOST:PORT (the head node `ray start --head` '
                           'printed), ray://HOST:PORT or auto') from None


def _unreachable(address: str, who: str, why: str) -> ClusterError:
    return ClusterError(f'{who}: no Ray cluster answers at {address} ({why}). Start one there (`ray start --head` '
                        'on the head node) or fix the address; leave the address and RAY_ADDRESS empty to start '
                        'a local Ray on this machine')


def _ray(who: str) -> ModuleType:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(f'{who} needs Ray: {RAY_INSTALL}') from None
    return ray


def check(address: str | None = None, num_cpus: int | None = None, who: str = 'Ray') -> str | None:
    """What `connect` would fail on, found without starting anything: Ray missing, CPUs given for a
    cluster, nothing answering at the address. Returns the address that applies (None: a local Ray)."""
    ray = _ray(who)
    if ray.is_initialized():
        return None
    address = address or os.environ.get('RAY_ADDRESS') or None
    if address is not None and num_cpus:
        raise APIUsageError(f'{who}: a number of CPUs applies to a local Ray only; a cluster at {address} has '
                            'its own (leave it 0, or leave the address and RAY_ADDRESS empty)')
    target = None if address is None else _host_port(address)
    if address is not None and target is not None:  # Ray itself retries an absent head node for a minute or more
        try:
            socket.create_connection(target, timeout=CONNECT_TIMEOUT_S).close()
        except OSError as e:
            raise _unreachable(address, who, e.strerror or type(e).__name__) from None
    return address


def connect(address: str | None = None, num_cpus: int | None = None, who: str = 'Ray') -> tuple[ModuleType, bool]:
    """Ray, connected as the module docstring says; returns (the ray module, whether this call started
    it: the caller shuts down only what it started). `who` names the setting in errors."""
    ray = _ray(who)
    if ray.is_initialized():
        return ray, False
    address = check(address, num_cpus, who)
    options: dict[str, object] = {'log_to_driver': False, 'configure_logging': False}
    if address is None:
        # 'local', not Ray's default None: None joins the cluster that the last `ray start` on this
        # machine recorded in /tmp/ray/ray_current_cluster, which may be another user's or another
        # test suite's (and refuses num_cpus); rule 3 above promises a Ray of our own.
        address = 'local'
        options.update(num_cpus=num_cpus or None, include_dashboard=False)
    try:
        ray.init(address=address, **options)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as e:
        why = f'{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ""}'
        if address == 'local':
            raise ClusterError(f'{who}: a local Ray could not start ({why}); `ray status` and /tmp/ray/session_latest'
                               '/logs tell why, or point RAY_ADDRESS at a running cluster') from None
        raise _unreachable(address, who, why) from None
    return ray, True


def cancel_unfinished(ray: ModuleType, refs: Iterable[ObjectRef]) -> None:
    """Force-cancel the tasks of `refs` whose results have not arrived; leave the finished ones alone.

    Ray 2.60's driver aborts the whole process (a failed internal check, "Tried to complete task that
    was not pending": exit status 1, nothing on stderr) when a cancel crosses the task's own completion
    or its dispatch to a worker. Cancelling only what has not finished removes the first case; the
    second is likely only for a task queued behind one that just ended, so callers that can simply
    drop such tasks do (the league); the sweep cancels trials that have been running for a while.
    """
    refs = list(refs)
    if not refs:
        return
    _, pending = ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
    for ref in pending:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001 - best effort: the task may have ended meanwhile
            pass
