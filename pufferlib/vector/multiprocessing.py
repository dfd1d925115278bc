"""Multiprocessing: workers in forked processes, every array in shared memory.

`_mp_worker` is the entry point of each child process.
"""
import atexit
import ctypes
import mmap
import multiprocessing
import os
import pickle
import signal
import time
import traceback
import warnings
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, ForkProcess
from multiprocessing.synchronize import Semaphore
from types import SimpleNamespace

import numpy as np

from pufferlib.pufferenv import BUFFER_NAMES, MASK_BUFFER, APIUsageError, EnvError, PufferEnv, space_shape
from pufferlib.vector.base import (BUSY, CLOSE, CLOSED, DEFAULT_STEP_TIMEOUT_S, DONE, ERROR, GET_CELLS,
                                   GET_PROGRESS, GET_STATES, LIVENESS_CHECK_S, NO_DEADLINE, RESET, SET_STATES,
                                   STATE_COMMANDS, VecEnv, Waiter, _check_agents,
                                   _check_step_timeout, _run_command, _slice_buffers, cpu_count, create_env,
                                   state_work)

_OPEN: 'weakref.WeakSet[Multiprocessing]' = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    for vecenv in list(_OPEN):
        try:
            vecenv.close()
        except Exception:
            pass


def _allocate_shared(specs: Sequence[tuple[str, tuple, np.dtype | type]]) -> tuple[mmap.mmap, dict[str, np.ndarray]]:
    """Arrays in one anonymous shared mapping: children inherit it at fork, nothing lands in /dev/shm,
    so no segment can outlive the processes, whatever kills them."""
    offsets, total = [], 0
    for _, shape, dtype in specs:
        total = (total + 63) // 64 * 64
        offsets.append(total)
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    region = mmap.mmap(-1, max(total, 1))
    arrays = {}
    for (name, shape, dtype), offset in zip(specs, offsets):
        count = int(np.prod(shape, dtype=np.int64))
        arrays[name] = np.frombuffer(region, dtype=dtype, count=count, offset=offset).reshape(shape)
    return region, arrays


def set_parent_death_signal() -> None:
    """Ask Linux to SIGTERM this process when its parent dies, so a killed trainer leaves no orphans.

    Call it first thing in a child process (env workers, sweep trials). A no-op where prctl is
    missing (not Linux): there, children must be closed by their parent.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# Bytes of pickled infos a worker leaves in its slot of shared memory for the parent to read; larger
# infos (rare: most are a few numbers at an episode's end) go through the worker's pipe. The slot
# spares both sides the pipe's system calls (a write here, a poll and reads there) on every
# episode end, which measured about as much parent CPU as the rest of a pool's recv.
INFO_SLOT = 4096
# shared.has_info[w]: no infos, or (when positive) that many bytes in the slot, or this: in the pipe.
INFO_IN_PIPE = -1


def _build_worker_envs(w: int, creators: Sequence[Callable], env_args: Sequence, env_kwargs: dict,
                       envs_per_worker: int, agents_per_env: int, shared: SimpleNamespace) -> list[PufferEnv]:
    a = agents_per_env
    envs = []
    for k in range(envs_per_worker):
        e = w * envs_per_worker + k
        buf = _slice_buffers(shared, e * a, (e + 1) * a)
        env = create_env(creators[e], env_args, env_kwargs, buf=buf, seed=None)
        _check_agents(env, a, f'env {e}', buf)
        envs.append(env)
    return envs


def _mp_worker(workers: list[int], creators: Sequence[Callable], env_args: Sequence, env_kwargs: dict,
               envs_per_worker: int, agents_per_env: int, shared: SimpleNamespace, go: dict[int, Semaphore],
               wake: Semaphore | None, done: Semaphore, conns: dict[int, Connection], parent_pid: int,
               spin_s: float) -> None:
    """One process running the envs of `workers` (worker indices; usually one).

    `go[w]` is posted once per command for worker w. A process with several workers is also posted
    `wake` once per command, so it can block on one semaphore; it then runs the oldest posted
    command first (by the parent's ticket), taking that worker's `go` post.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes us
    set_parent_death_signal()
    status, commands, has_info, seeds, tickets = (shared.status, shared.commands, shared.has_info, shared.seeds,
                                                  shared.tickets)
    slots = {w: memoryview(shared.info_slots[w]) for w in workers}
    w = workers[0]

    def fail() -> None:
        status[w] = ERROR
        done.release()
        try:
            conns[w].send_bytes(pickle.dumps(traceback.format_exc()))
        except Exception:
            pass

    envs: dict[int, list[PufferEnv]] = {}
    try:
        for w in workers:
            envs[w] = _build_worker_envs(w, creators, env_args, env_kwargs, envs_per_worker, agents_per_env, shared)
    except BaseException:
        fail()
        return
    for w in workers:
        status[w] = DONE
        done.release()

    single = len(workers) == 1
    # A process of several workers blocks on its wake semaphore (the parent passes one exactly then).
    waiter = Waiter(go[w] if wake is None else wake, spin_s)
    parent_alive = lambda: os.getppid() == parent_pid  # noqa: E731
    while True:
        if not waiter.wait(parent_alive):
            return
        try:
            if not single:
                # Every go post comes before its wake post, so one of them is there to take.
                for w in sorted(workers, key=tickets.__getitem__):
                    if go[w].acquire(False):
                        break
                else:
                    raise AssertionError('woken without a command posted')
            command = commands[w]
            if command == CLOSE:
                for worker_envs in envs.values():
                    for env in worker_envs:
                        env.close()
                for x in workers:
                    status[x] = CLOSED
                done.release()
                return
            if command in STATE_COMMANDS:
                # The request comes through the pipe after the go post (a large one fills the pipe,
                # which only this side empties); the reply goes back the same way after the done post.
                games, states = pickle.loads(conns[w].recv_bytes())
                first_game = w * envs_per_worker * envs[w][0].num_games
                reply = pickle.dumps(state_work(envs[w], first_game, command, games, states))
                status[w] = DONE
                done.release()
                conns[w].send_bytes(reply)
                continue
            infos = _run_command(envs[w], command, int(seeds[w]))
            payload = pickle.dumps(infos) if infos else None
        except BaseException:
            fail()
            return
        # Infos that fit the slot are there before the done post, so the parent finds them at once.
        # Larger ones go through the pipe after it: written first they could fill the pipe and
        # block this process before it posts done, while the parent waits for that post to read.
        in_pipe = payload is not None and len(payload) > INFO_SLOT
        if payload is None:
            has_info[w] = 0
        elif in_pipe:
            has_info[w] = INFO_IN_PIPE
        else:
            slots[w][:len(payload)] = payload
            has_info[w] = len(payload)
        status[w] = DONE
        done.release()
        if in_pipe and payload is not None:
            conns[w].send_bytes(payload)


class Multiprocessing(VecEnv):
    """Workers in forked processes; every array in shared memory; no per-step pickling.

    The parent posts one semaphore per worker to start a command; workers post one shared
    semaphore when they finish. Both sides spin for at most `spin_us` and then block, so waiting
    costs no CPU on machines with fewer cores than processes. Non-empty infos cross in a 4 KB slot
    per worker in the same shared memory; larger ones through a pipe.

    `local_worker=True` runs worker 0's envs in this process, while it would otherwise wait for the
    others: with cheap envs on a small machine one process fewer competes for the cores (2 workers on
    2 cores are 2 processes, not 3). The price is isolation: a crash in those envs is a crash here.
    In a pool (batch_size < num_envs) recv() steps worker 0 when it has to wait, so the policy no
    longer overlaps with those envs; it pays off mainly in synchronous mode.

    `num_processes` (default: one per worker) runs the workers in fewer processes: process p runs
    workers p, p + num_processes, ..., oldest command first. In a pool this is double buffering:
    with num_workers=4, num_processes=2, batch_size=num_envs/2, each batch has one worker in each
    process, and while the caller acts on one batch each process steps its worker of the other, so
    no core waits for the caller's round trip (with one worker per process it waits every batch).
    A worker stays a block of consecutive envs; a process holds several such blocks.
    """

    def __init__(self, env_creators: Sequence[Callable], env_args: Sequence = (), env_kwargs: dict | None = None,
                 num_envs: int = 1, num_workers: int | None = None, batch_size: int | None = None,
                 zero_copy: bool = True, seed: int | None = None, spin_us: float = 200, local_worker: bool = False,
                 step_timeout: float | None = DEFAULT_STEP_TIMEOUT_S, num_processes: int | None = None) -> None:
        self.step_timeout = _check_step_timeout(step_timeout)
        super().__init__(env_creators, env_args, env_kwargs, num_envs, num_workers, batch_size, zero_copy, seed)
        if not isinstance(spin_us, (int, float)) or isinstance(spin_us, bool) or spin_us < 0:
            raise APIUsageError(f'spin_us must be a number >= 0, got {spin_us!r}')
        if not isinstance(local_worker, bool):
            raise APIUsageError(f'local_worker must be True or False, got {local_worker!r}')
        groups = self._process_groups(num_processes, local_worker)
        self.num_processes = len(groups)
        cores, stepping = cpu_count(), self.num_processes + local_worker  # a local worker steps in this process
        if stepping > cores:
            warnings.warn(f'workers in {stepping} processes are more than the {cores} cores this process may use; '
                          'they will share cores, which works but is usually slower', RuntimeWarning, stacklevel=3)
        self.local_worker = local_worker
        self._local_envs: list[PufferEnv] = []
        self._local_command: int | None = None  # worker 0's command when it runs here, until _collect runs it
        self.spin_s = spin_us * 1e-6
        self._allocate_buffers()

        ctx = multiprocessing.get_context('fork')
        W = self.num_workers
        self._done = ctx.Semaphore(0)
        self._waiter = Waiter(self._done, self.spin_s)
        self._go = [ctx.Semaphore(0) for _ in range(W)]
        # Per worker, the wake semaphore of its process when that process runs several workers.
        self._wake: list[Semaphore | None] = [None] * W
        self._ticket = 0  # orders the commands of a process with several workers
        # Child processes, the workers each runs, and the workers' result pipes (none for a local worker).
        self.processes: list[ForkProcess] = []
        self._proc_workers: list[list[int]] = []
        self._conns: dict[int, Connection] = {}
        # Semaphore posts acquired minus finished workers consumed; never negative, so a positive
        # value guarantees a finished worker is there to be found.
        self._credits = 0
        self.shared.status[:] = BUSY
        remote = range(1 if local_worker else 0, W)
        self._start_processes(ctx, groups, env_creators)
        self._closed = False
        _OPEN.add(self)
        self._next_check = 0.0
        self._inflight = dict.fromkeys(remote, NO_DEADLINE)  # building envs has no time limit
        try:
            if local_worker:  # after the fork, so children do not inherit these envs
                self._local_envs = _build_worker_envs(0, env_creators, self.env_args, self.env_kwargs,
                                                      self.envs_per_worker, self.agents_per_env, self.shared)
                self.shared.status[0] = DONE
            self._wait_all_idle()  # every worker built its envs (or one failed: raise its traceback)
        except BaseException:
            self.close()
            raise
        self._ready.clear()
        self._ready_infos.clear()

    def _allocate_buffers(self) -> None:
        """The env rows, the worker states and the info slots, all in one shared mapping."""
        obs, act = self.single_observation_space, self.single_action_space
        n, W = self.num_agents, self.num_workers
        legal = [(MASK_BUFFER, (n, self.action_mask_width), bool)] if self.action_mask_width is not None else []
        self._region, arrays = _allocate_shared([
            ('observations', (n, *obs.shape), obs.dtype), ('actions', (n, *space_shape(act)), self.action_dtype),
            ('rewards', (n,), np.float32), ('terminals', (n,), bool), ('truncations', (n,), bool),
            ('masks', (n,), bool), *legal, ('status', (W,), np.int32), ('commands', (W,), np.int32),
            ('has_info', (W,), np.int32), ('seeds', (W,), np.int64), ('tickets', (W,), np.int64),
            ('info_slots', (W, INFO_SLOT), np.uint8)])
        if legal:
            arrays[MASK_BUFFER][...] = True  # every action legal until the envs write their masks
        self.shared = SimpleNamespace(**arrays)
        self.buffers = SimpleNamespace(**{name: arrays[name] for name in BUFFER_NAMES + tuple(x[0] for x in legal)})

    def _start_processes(self, ctx: ForkContext, groups: list[list[int]], env_creators: Sequence[Callable]) -> None:
        """Fork one child per group of workers, each with its semaphores and result pipes."""
        for group in groups:
            wake = ctx.Semaphore(0) if len(group) > 1 else None
            pipes = {w: ctx.Pipe(duplex=True) for w in group}  # duplex: state requests go to the worker
            proc = ctx.Process(target=_mp_worker, name=f'puffer-worker-{group[0]}', daemon=True, args=(
                group, env_creators, self.env_args, self.env_kwargs, self.envs_per_worker, self.agents_per_env,
                self.shared, {w: self._go[w] for w in group}, wake, self._done,
                {w: child for w, (_, child) in pipes.items()}, os.getpid(), self.spin_s))
            proc.start()
            for w, (parent_conn, child_conn) in pipes.items():
                child_conn.close()
                self._conns[w] = parent_conn
                self._wake[w] = wake
            self.processes.append(proc)
            self._proc_workers.append(group)

    def _process_groups(self, num_processes: int | None, local_worker: bool) -> list[list[int]]:
        """The workers each child process runs: one each by default, else worker w in process w % P."""
        W = self.num_workers
        if num_processes is None:
            return [[w] for w in range(1 if local_worker else 0, W)]
        if isinstance(num_processes, bool) or not isinstance(num_processes, (int, np.integer)) or num_processes < 1:
            raise APIUsageError(f'num_processes must be a positive integer, got {num_processes!r}')
        if local_worker:
            raise APIUsageError('num_processes and local_worker=True cannot be combined: the local worker runs '
                                'worker 0 in this process; leave num_processes out or set local_worker=False')
        if W % num_processes:
            raise APIUsageError(f'num_processes={num_processes} must divide num_workers={W} (each process runs '
                                'the same number of workers)')
        return [list(range(p, W, int(num_processes))) for p in range(int(num_processes))]

    def _dispatch(self, workers: Sequence[int], command: int, seed: int | None = None) -> None:
        shared = self.shared
        deadline = time.monotonic() + self.step_timeout if self.step_timeout else NO_DEADLINE
        for w in workers:
            if command == RESET:
                shared.seeds[w] = -1 if seed is None else seed + w * self.envs_per_worker
            shared.commands[w] = command
            shared.status[w] = BUSY
            if w == 0 and self.local_worker:
                self._inflight[w] = NO_DEADLINE  # it runs in this process, when _collect gets to it
                self._local_command = command
                continue
            self._inflight[w] = deadline
            wake = self._wake[w]
            if wake is None:
                self._go[w].release()
            else:
                shared.tickets[w] = self._ticket
                self._ticket += 1
                self._go[w].release()
                wake.release()

    def _run_state_work(self, command: int, work: dict[int, tuple[list[int], list | None]]
                        ) -> dict[int, tuple[bool, object]]:
        replies: dict[int, tuple[bool, object]] = {}
        remote = [w for w in work if not (w == 0 and self.local_worker)]
        if remote:
            self._dispatch(remote, command)
            for w in remote:
                try:
                    self._conns[w].send_bytes(pickle.dumps(work[w]))
                except OSError:  # the worker died: say which
                    self._check_health()
                    raise
            pending = set(remote)
            status = self.shared.status
            while pending:
                if self._credits > 0:
                    for w in list(pending):
                        if status[w] == ERROR:
                            self._raise_worker_error(w)
                        if status[w] != BUSY:
                            pending.discard(w)
                            self._inflight.pop(w, None)
                            self._credits -= 1
                            if self._credits == 0:
                                break
                if pending:
                    self._acquire_done()
                    self._credits += 1
            for w in remote:
                replies[w] = pickle.loads(self._recv_bytes(w))
        if 0 in work and self.local_worker:
            replies[0] = state_work(self._local_envs, 0, command, *work[0])
        return replies

    def _run_local(self, command: int) -> None:
        self._local_command = None
        try:
            infos = _run_command(self._local_envs, command, int(self.shared.seeds[0]))
        except Exception as exc:
            tb = traceback.format_exc()
            self.close()
            raise EnvError(f'an env of the local worker (envs {self._env_range(0)}) raised; the vector env is '
                           f'closed. The env\'s traceback:\n{tb}') from exc
        self.shared.status[0] = DONE
        self._inflight.pop(0, None)
        if infos:
            self._ready_infos[0] = infos
        self._ready.append(0)

    def _acquire_done(self) -> None:
        self._waiter.wait(self._check_health)

    def _heartbeat(self) -> None:
        # A pool can be served for ever by the workers that still answer, so a dead or hung one is
        # looked for here too, not only while blocked: one clock read per recv, a check every 0.2 s.
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + LIVENESS_CHECK_S
            self._check_health()

    def _collect(self) -> None:
        """Wait until at least one in-flight worker finishes and move it to the ready list."""
        local_command = self._local_command
        if local_command is not None:
            # A remote worker that has already finished goes first: otherwise the local worker,
            # always "done" soonest, would starve the others in a pool.
            if self._credits == 0 and self._done.acquire(False):
                self._credits += 1
            if self._credits == 0:
                self._run_local(local_command)
                return
        while True:
            if self._credits > 0:
                status, found = self.shared.status, False
                for w in list(self._inflight):  # oldest command first, so no worker starves
                    state = status[w]
                    if state == BUSY:
                        continue
                    if state == ERROR:
                        self._raise_worker_error(w)
                    self._inflight.pop(w, None)
                    self._credits -= 1
                    size = int(self.shared.has_info[w])
                    if size:
                        self._ready_infos[w] = pickle.loads(self.shared.info_slots[w, :size] if size > 0
                                                            else self._recv_bytes(w))
                    self._ready.append(w)
                    found = True
                    if self._credits == 0:
                        break
                if found:
                    return
            self._acquire_done()
            self._credits += 1

    def _recv_bytes(self, w: int) -> bytes:
        conn = self._conns[w]
        while not conn.poll(LIVENESS_CHECK_S):
            self._check_health()
        try:
            return conn.recv_bytes()
        except EOFError:
            self._check_health()
            raise

    def _check_health(self) -> bool:
        """Raise if a worker died or overran its step timeout; True otherwise (the Waiter's check)."""
        status = self.shared.status
        for group, proc in zip(self._proc_workers, self.processes):
            if proc.exitcode is not None and any(status[w] != CLOSED for w in group):
                for w in group:
                    if status[w] == ERROR:
                        self._raise_worker_error(w)
                code = proc.exitcode
                how = (f'was killed by signal {signal.Signals(-code).name}' if code < 0
                       else f'exited with code {code}')
                if code == -signal.SIGKILL:
                    how += (' (SIGKILL usually comes from outside the env: the kernel\'s out-of-memory killer, '
                            'see `dmesg`, or a job scheduler)')
                who = self._describe_process(group)
                self.close()
                error = EnvError(f'Multiprocessing {who} {how}. The vector env is closed and '
                                 'its other workers stopped. If this was a crash in the env, run it with '
                                 'backend="Serial" to debug it in this process.')
                error.worker_signal = -code if code < 0 else None
                raise error
        now = time.monotonic()
        for w, deadline in self._inflight.items():
            if now > deadline and status[w] == BUSY:
                self._raise_timeout(w)
        return True

    def _raise_timeout(self, w: int) -> None:
        what = {RESET: 'reset', GET_STATES: 'get_states', SET_STATES: 'set_states', GET_PROGRESS: 'game_progress',
                GET_CELLS: 'game_cells'}.get(int(self.shared.commands[w]), 'step')
        envs = self._env_range(w)
        process = next(i for i, group in enumerate(self._proc_workers) if w in group)
        self.processes[process].kill()  # it would not answer close()
        self.close()
        raise EnvError(f'Multiprocessing worker {w} (envs {envs}) spent more than step_timeout={self.step_timeout:g} s '
                       f'in one {what}, so it was stopped and the vector env is closed. An env that blocks (on a '
                       'socket, a lock, a child process, input()) hangs training: run it with backend="Serial" to '
                       'see where it waits, or, if its steps are legitimately this slow, raise step_timeout '
                       '(vec.step_timeout in a config; 0 turns the limit off).')

    def _env_range(self, w: int) -> str:
        return f'{w * self.envs_per_worker}-{(w + 1) * self.envs_per_worker - 1}'

    def _describe_process(self, group: list[int]) -> str:
        if len(group) == 1:
            return f'worker {group[0]} (envs {self._env_range(group[0])})'
        return (f'process of workers {", ".join(map(str, group))} '
                f'(envs {", ".join(self._env_range(w) for w in group)})')

    def _raise_worker_error(self, w: int) -> None:
        conn = self._conns[w]
        tb = '(no traceback received)'
        if conn.poll(2.0):
            try:
                tb = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError, pickle.UnpicklingError):
                pass
        envs = self._env_range(w)
        self.close()
        raise EnvError(f'an env in Multiprocessing worker {w} (envs {envs}) raised; the vector env is closed. '
                       f'The env\'s traceback:\n{tb}')

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        self._local_command = None
        for env in self._local_envs:
            try:
                env.close()
            except Exception:
                pass
        for group, proc in zip(self._proc_workers, self.processes):
            if proc.is_alive():
                self.shared.commands[group] = CLOSE  # whichever posted command it takes next
                w = group[0]
                self._go[w].release()
                wake = self._wake[w]
                if wake is not None:
                    wake.release()
        deadline = time.monotonic() + 1.0
        for proc in self.processes:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.processes:
            if proc.is_alive():
                proc.terminate()
                proc.join(1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self._conns.values():
            conn.close()
