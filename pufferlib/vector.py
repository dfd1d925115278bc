"""Vectorization: Serial, Multiprocessing and Ray backends behind one send/recv API.

    vecenv = pufferlib.vector.make('CartPole-v1', backend='Multiprocessing', num_envs=8)
    obs, infos = vecenv.reset(seed=0)
    obs, rewards, terminals, truncations, infos = vecenv.step(actions)

    vecenv.async_reset(seed=0)
    obs, rewards, terminals, truncations, infos, env_ids, masks = vecenv.recv()
    legal = vecenv.action_masks[env_ids]   # when the envs publish action masks (else None)
    vecenv.send(actions)            # actions for exactly the rows recv() returned

Terms: an *env* is one PufferEnv object with `num_agents` rows; a *worker* holds `num_envs //
num_workers` envs; a *batch* is `batch_size` envs. With `batch_size == num_envs` every recv returns
every row (synchronous). With `batch_size < num_envs` recv returns the first workers to finish
(EnvPool-style), so the caller can compute actions for one batch while the others simulate. With
`zero_copy=True` batches are fixed contiguous blocks of workers and recv returns views into the
shared buffers; otherwise the first ready workers are gathered into a batch buffer. `env_ids` are
the row indices of what recv returned.

Autoreset happens inside the envs, in the same step (see pufferlib.pufferenv), so every backend
behaves identically: the episode-ending step carries the final reward and terminal/truncation
flag together with the first observation of the next episode. Env k is seeded `seed + k`.

Action masks: when the envs publish legal actions (`env.action_mask_width`, see pufferlib.pufferenv)
every backend owns a seventh array, `vecenv.action_masks` (bool [num_agents, width], indexed by row
like `env_ids`), which the envs write in place: shared memory under Multiprocessing, copied back
with the other arrays under Ray. Rows of a batch recv() returned are not written until send().
"""
import atexit
import ctypes
import inspect
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
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from pufferlib import registry
from pufferlib.pufferenv import (APIUsageError, BUFFER_NAMES, MASK_BUFFER, ActionCheck, ActionMaskError,
                                 EnvError, PufferEnv, action_dtype, batched_space, check_seed,
                                 make_buffers, nonfinite_rows)

# Worker commands and states, kept in shared int32 arrays.
IDLE, STEP, RESET, CLOSE = 0, 1, 2, 3
BUSY, DONE, ERROR, CLOSED = 1, 2, 3, 4

# How often the parent checks that its workers are alive and within their step timeout, whether it
# is blocked waiting or busy serving the workers that still answer; and how long a blocked worker
# sleeps before checking its parent. It bounds how quickly a dead worker (or parent) is noticed:
# well inside the 2 s promised to users.
LIVENESS_CHECK_S = 0.2
# Longest a worker may spend in one step or reset before the parent gives up on it (seconds).
# Generous: it exists to turn a hang into an error, not to police slow envs.
DEFAULT_STEP_TIMEOUT_S = 120.0


# Between spins, hand the core to any other runnable process: on machines with fewer cores than
# processes the one we are waiting for may be exactly that process.
yield_cpu = getattr(os, 'sched_yield', lambda: None)


class BatchViews(NamedTuple):
    """One zero-copy batch's rows of the shared buffers (VecEnv._block_views)."""
    observations: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    ids: np.ndarray
    masks: np.ndarray
    actions: np.ndarray


class Waiter:
    """Spin-then-block wait on a semaphore, adaptive to how long waits usually take.

    Spinning (yielding the core on every try) catches a fast partner without paying a wake-up,
    which costs tens of microseconds; but on a machine with fewer cores than processes a spinner
    steals time from the very process it waits for, and one sched_yield can hand the core away for
    a whole time slice. So it spins for at most `spin_s`, and only while recent waits have all been
    shorter than that: `typical` jumps to any longer wait and decays by 10% per wait, so a pattern
    of short and long waits (a pool of slow envs) never spins. Blocked waits wake every
    LIVENESS_CHECK_S to run `check`, which raises or returns False to stop.
    """

    __slots__ = ('sem', 'spin_s', 'typical')

    def __init__(self, sem, spin_s):
        self.sem, self.spin_s, self.typical = sem, spin_s, 0.0

    def wait(self, check):
        sem = self.sem
        if sem.acquire(False):
            self.typical *= 0.9
            return True
        clock = time.perf_counter
        start = clock()
        if self.typical < self.spin_s:
            end = start + self.spin_s
            while True:
                yield_cpu()
                if sem.acquire(False):
                    self.typical = max(0.9 * self.typical, clock() - start)
                    return True
                if clock() > end:
                    break
        while not sem.acquire(True, LIVENESS_CHECK_S):
            if not check():
                return False
        self.typical = max(0.9 * self.typical, clock() - start)
        return True


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------
# Creating envs
# ---------------------------------------------------------------------------------------------

def _accepts(fn, name):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def create_env(creator: Callable, env_args: Sequence = (), env_kwargs: dict | None = None, buf=None,
               seed: int | None = None) -> PufferEnv:
    """Call a creator and return a PufferEnv bound to `buf`.

    The creator may build a PufferEnv itself (then it must accept `buf=` and `seed=`), or return a
    plain Gymnasium, old gym, or PettingZoo env, which is wrapped here.
    """
    env_kwargs = env_kwargs or {}
    takes_buf = _accepts(creator, 'buf')
    if takes_buf:
        extra = {'buf': buf}
        if _accepts(creator, 'seed'):
            extra['seed'] = seed
        env = creator(*env_args, **extra, **env_kwargs)
    else:
        env = creator(*env_args, **env_kwargs)
    if isinstance(env, PufferEnv):
        if not takes_buf and buf is not None:
            raise APIUsageError(f'env_creator {_name(creator)} returns a PufferEnv but takes no buf= argument, so '
                                'its arrays cannot live in the vector buffers; give it a signature like '
                                '`def creator(buf=None, seed=None): return MyEnv(buf=buf, seed=seed)`')
        return env
    from pufferlib import emulation
    if hasattr(env, 'possible_agents'):
        return emulation.PettingZooPufferEnv(env=env, buf=buf, seed=seed)
    if hasattr(env, 'step') and hasattr(env, 'observation_space'):
        return emulation.GymnasiumPufferEnv(env=env, buf=buf, seed=seed)
    raise APIUsageError(f'env_creator {_name(creator)} returned {type(env).__name__}, which is not an env: '
                        'return a gymnasium.Env, a PettingZoo env or a pufferlib.PufferEnv')


def _name(fn):
    return getattr(fn, '__qualname__', None) or repr(fn)


def _slice_buffers(buf, start, stop):
    names = BUFFER_NAMES + ((MASK_BUFFER,) if getattr(buf, MASK_BUFFER, None) is not None else ())
    return SimpleNamespace(**{name: getattr(buf, name)[start:stop] for name in names})


# ---------------------------------------------------------------------------------------------
# The common part: configuration, batching, the send/recv state machine
# ---------------------------------------------------------------------------------------------

class VecEnv:
    """Base class of the backends. Subclasses implement `_start`, `_dispatch`, `_collect`, `close`."""

    def __init__(self, env_creators, env_args=(), env_kwargs=None, num_envs=1, num_workers=None,
                 batch_size=None, zero_copy=True, seed=None):
        self._closed = True  # until started, so a failing __init__ leaves nothing for close() to do
        self.env_creators = env_creators
        self.env_args, self.env_kwargs = tuple(env_args), dict(env_kwargs or {})
        self._configure(num_envs, num_workers, batch_size, zero_copy)
        self.seed = self._check_seed(seed)

        # One probe env tells the spaces and agents per env before any buffer is allocated.
        probe = create_env(env_creators[0], self.env_args, self.env_kwargs, buf=None, seed=None)
        self.driver_env = probe
        self.single_observation_space = probe.single_observation_space
        self.single_action_space = probe.single_action_space
        self.obs_dtype = getattr(probe, 'obs_dtype', None)
        self.native_observation_space = getattr(probe, 'native_observation_space', self.single_observation_space)
        self.native_action_space = getattr(probe, 'native_action_space', self.single_action_space)
        self.agents_per_env = int(probe.num_agents)
        self.action_mask_width = _mask_width(probe)
        probe.close()

        self.num_agents = self.num_envs * self.agents_per_env
        self.rows_per_worker = self.envs_per_worker * self.agents_per_env
        self.agents_per_batch = self.batch_size * self.agents_per_env
        self.observation_space = batched_space(self.single_observation_space, self.agents_per_batch)
        self.action_space = batched_space(self.single_action_space, self.agents_per_batch)
        self.action_dtype = action_dtype(self.single_action_space)
        self._check_actions = ActionCheck(self.single_action_space,
                                          (self.agents_per_batch, *self.single_action_space.shape),
                                          self._describe_batch)

        self._ready = []          # workers whose last command finished, in completion order
        self._ready_infos = {}    # worker -> infos from its last command
        self._inflight = {}       # workers with a command running, oldest command first (a dict as ordered set)
        self._batches = []        # batches recv() handed to the caller and send() has not answered, oldest first
        self._worker_rows = [np.arange(w * self.rows_per_worker, (w + 1) * self.rows_per_worker)
                             for w in range(self.num_workers)]
        self._full_ids = np.arange(self.num_agents)
        self._views = {}  # first worker of a zero-copy batch -> its views (see _block_views)
        self._first_reset = True
        # Non-zero-copy pools copy each batch into a buffer of its own (see _gather).
        self._free_bufs, self._held_bufs = [], []

    def _configure(self, num_envs, num_workers, batch_size, zero_copy):
        for key, value in (('num_envs', num_envs), ('num_workers', num_workers), ('batch_size', batch_size)):
            if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1):
                raise APIUsageError(f'{key} must be a positive integer, got {value!r}')
        self.num_envs = int(num_envs)
        self.num_workers = self._default_workers() if num_workers is None else int(num_workers)
        self.batch_size = self.num_envs if batch_size is None else int(batch_size)
        self.zero_copy = bool(zero_copy)
        if self.num_envs % self.num_workers:
            raise APIUsageError(f'num_envs={self.num_envs} must be divisible by num_workers={self.num_workers}')
        self.envs_per_worker = self.num_envs // self.num_workers
        if self.batch_size > self.num_envs or self.num_envs % self.batch_size:
            raise APIUsageError(f'batch_size={self.batch_size} must divide num_envs={self.num_envs}')
        if self.batch_size % self.envs_per_worker:
            raise APIUsageError(f'batch_size={self.batch_size} must be a multiple of the envs per worker '
                                f'({self.envs_per_worker} = num_envs {self.num_envs} / num_workers {self.num_workers})')
        self.workers_per_batch = self.batch_size // self.envs_per_worker
        self.synchronous = self.workers_per_batch == self.num_workers

    def _default_workers(self):
        """As many workers as this machine's cores that divide num_envs (Serial passes num_envs itself)."""
        return max(d for d in range(1, min(cpu_count(), self.num_envs) + 1) if self.num_envs % d == 0)

    # --- the public API ---------------------------------------------------------------------

    def async_reset(self, seed: int | None = None) -> None:
        self._check_open()
        if seed is None and self._first_reset:
            seed = self.seed
        seed = self._check_seed(seed)
        self._first_reset = False
        self._wait_all_idle()
        self._ready.clear()
        self._ready_infos.clear()
        self._batches.clear()
        self._free_bufs.extend(self._held_bufs)
        self._held_bufs.clear()
        self._dispatch(range(self.num_workers), RESET, seed)

    def recv(self) -> tuple:
        self._check_open()
        self._heartbeat()
        if not self._inflight and not self._ready:
            if self._batches:
                raise APIUsageError('recv() has nothing to wait for: every batch is with the caller; send() '
                                    'actions for the oldest one first')
            raise APIUsageError('recv() called before async_reset() or send()')
        workers = self._choose_batch()
        self._batches.append(workers)
        infos = self._take_infos(workers)
        if not (self.synchronous or self.zero_copy):
            return self._gather(workers, infos)
        if self.synchronous:
            b = self.buffers
            return (b.observations, b.rewards, b.terminals, b.truncations, infos, self._full_ids, b.masks)
        v = self._block_views(workers[0])
        return v.observations, v.rewards, v.terminals, v.truncations, infos, v.ids, v.masks

    def _block_views(self, first):
        """The views of a zero-copy batch starting at worker `first` (observations, rewards, terminals,
        truncations, ids, masks, actions), made once: slicing six arrays on every recv and send is a
        measurable part of a pool's per-batch cost."""
        views = self._views.get(first)
        if views is None:
            b = self.buffers
            start = first * self.rows_per_worker
            rows = slice(start, start + self.agents_per_batch)
            views = self._views[first] = BatchViews(b.observations[rows], b.rewards[rows], b.terminals[rows],
                                                    b.truncations[rows], self._full_ids[rows], b.masks[rows],
                                                    b.actions[rows])
        return views

    def send(self, actions: np.ndarray, env_ids: np.ndarray | None = None) -> None:
        """Actions for a batch recv() returned: the one whose `env_ids` are given, else the oldest
        batch not answered yet.

        Usually there is just one outstanding batch. A caller may also hold a batch (e.g. a trainer
        whose rollout segments for those rows are full), receive and answer others, and answer it
        later; it then passes each batch's env_ids so actions reach the right rows.
        """
        self._check_open()
        if not self._batches:
            raise APIUsageError('send() called without a batch from recv(): call reset()/async_reset() and '
                                'recv() first')
        index = 0
        if env_ids is not None:
            first = int(env_ids[0])
            index = next((i for i, workers in enumerate(self._batches)
                          if self._worker_rows[workers[0]][0] == first), None)
            if index is None:
                raise APIUsageError(f'send(env_ids=...): no outstanding batch starts at row {first}; pass the '
                                    'env_ids that recv() returned with the batch')
        actions = self._check_actions(actions)
        workers = self._batches.pop(index)
        if not (self.synchronous or self.zero_copy):
            self._free_bufs.append(self._held_bufs.pop(index))
        b = self.buffers
        if self.synchronous:
            b.actions[...] = actions
        elif self.zero_copy:
            self._block_views(workers[0]).actions[...] = actions
        else:
            r = self.rows_per_worker
            for i, w in enumerate(workers):
                b.actions[w * r:(w + 1) * r] = actions[i * r:(i + 1) * r]
        self._dispatch(workers, STEP)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        self.async_reset(seed)
        obs, _, _, _, infos, _, _ = self.recv()
        return obs, infos

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        self.send(actions)
        obs, rewards, terminals, truncations, infos, _, _ = self.recv()
        return obs, rewards, terminals, truncations, infos

    @property
    def action_masks(self) -> np.ndarray | None:
        """Legal actions of every row (bool [num_agents, width]; index it with recv()'s env_ids), or None
        when the envs publish none. The envs rewrite it in place on every step."""
        return getattr(self.buffers, MASK_BUFFER, None)

    def nonfinite_rows(self, observations: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Positions (into the batch arrays, so `env_ids[positions]` are the rows) whose reward or any
        floating-point observation value is NaN or +-inf; empty when all is finite, which costs one sum
        per array. See pufferlib.pufferenv.nonfinite_rows."""
        return nonfinite_rows(observations, rewards, self.obs_dtype)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # --- helpers shared by the backends -------------------------------------------------------

    def _check_open(self):
        if self._closed:
            raise APIUsageError(f'{type(self).__name__} is closed')

    def _heartbeat(self):
        """Called on every recv(); backends with workers check their health here (see Multiprocessing)."""

    def _check_seed(self, seed):
        return check_seed(seed, lambda: type(self).__name__, self.num_envs)

    def _describe_batch(self):
        return (f'{type(self).__name__} (one action row per agent in the batch: {self.batch_size} envs x '
                f'{self.agents_per_env} agents, action space {self.single_action_space})')

    def _choose_batch(self):
        need = self.workers_per_batch
        if self.synchronous:
            while len(self._ready) < self.num_workers:
                self._collect()
            batch, self._ready = sorted(self._ready), []
            return batch
        if need == 1:  # a batch is one worker: the earliest finisher, with or without zero copy
            while not self._ready:
                self._collect()
            return [self._ready.pop(0)]
        if self.zero_copy:
            while True:
                ready = set(self._ready)
                for w in self._ready:  # the block of the earliest finisher that is complete
                    first = w - w % need
                    block = list(range(first, first + need))
                    if ready.issuperset(block):
                        self._ready = [x for x in self._ready if x not in block]
                        return block
                self._collect()
        while len(self._ready) < need:
            self._collect()
        batch, self._ready = self._ready[:need], self._ready[need:]
        return batch

    def _take_infos(self, workers):
        infos = []
        if self._ready_infos:
            for w in workers:
                infos.extend(self._ready_infos.pop(w, ()))
        return infos

    def _gather(self, workers, infos):
        """Copy the rows of the chosen workers into a batch buffer (non-zero-copy pools).

        Each batch the caller holds keeps its own buffer, so holding one never lets the next recv
        overwrite it; send() returns the buffer to the free list.
        """
        if not self._free_bufs:
            self._free_bufs.append(make_buffers(self.single_observation_space, self.single_action_space,
                                                self.agents_per_batch))
        out = self._free_bufs.pop()
        self._held_bufs.append(out)
        b, r = self.buffers, self.rows_per_worker
        ids = np.empty(self.agents_per_batch, dtype=np.int64)
        for i, w in enumerate(workers):
            src, dst = slice(w * r, (w + 1) * r), slice(i * r, (i + 1) * r)
            for name in ('observations', 'rewards', 'terminals', 'truncations', 'masks'):
                getattr(out, name)[dst] = getattr(b, name)[src]
            ids[dst] = self._worker_rows[w]
        return out.observations, out.rewards, out.terminals, out.truncations, infos, ids, out.masks

    def _wait_all_idle(self):
        while self._inflight:
            self._collect()

    def _env_seed(self, seed, env_index):
        return None if seed is None else seed + env_index


def _check_agents(env, expected, where, buf=None):
    if int(env.num_agents) != expected:
        raise APIUsageError(f'{where}: env has num_agents={env.num_agents} but the first env had {expected}; '
                            'every env in a vector must have the same number of agents')
    shared = getattr(buf, MASK_BUFFER, None)
    if buf is not None and (shared is None) != (getattr(env, 'action_masks', None) is None):
        raise ActionMaskError(f'{where}: this env {"publishes" if shared is None else "does not publish"} action masks '
                              f'but the first env {"does not" if shared is None else "does"}; every env in a vector '
                              'must publish them alike')
    if shared is not None and not np.shares_memory(env.action_masks, shared):
        raise ActionMaskError(f'{where}: {type(env).__name__}.action_masks is not the array the vector gave it: set '
                              '`action_mask_width` before PufferEnv.__init__ (which binds `action_masks` to the '
                              'buffers) and write into that array in place instead of replacing it')


def _mask_width(probe):
    """Columns of the envs' action masks (from the probe env), or None when they publish none."""
    if getattr(probe, 'action_masks', None) is None:
        return None
    width = getattr(probe, 'action_mask_width', None)
    if width is None:
        raise ActionMaskError(f'{type(probe).__name__} has action_masks but no action_mask_width: set '
                              '`action_mask_width` before PufferEnv.__init__, which then binds `action_masks` '
                              'so that a vector env can place it in shared memory')
    return int(width)


# ---------------------------------------------------------------------------------------------
# Serial
# ---------------------------------------------------------------------------------------------

class Serial(VecEnv):
    """Every env in this process. Workers are single envs; the batch logic is the same as elsewhere."""

    def __init__(self, env_creators, env_args=(), env_kwargs=None, num_envs=1, num_workers=None,
                 batch_size=None, zero_copy=True, seed=None):
        super().__init__(env_creators, env_args, env_kwargs, num_envs, num_envs, batch_size, zero_copy, seed)
        self.buffers = make_buffers(self.single_observation_space, self.single_action_space, self.num_agents,
                                    mask_width=self.action_mask_width)
        a = self.agents_per_env
        self.envs = []
        for k in range(self.num_envs):
            buf = _slice_buffers(self.buffers, k * a, (k + 1) * a)
            env = create_env(env_creators[k], self.env_args, self.env_kwargs, buf=buf, seed=self._env_seed(seed, k))
            _check_agents(env, a, f'env {k}', buf)
            self.envs.append(env)
        self._closed = False

    def _dispatch(self, workers, command, seed=None):
        envs, ready, ready_infos = self.envs, self._ready, self._ready_infos
        if command == STEP:  # each worker is one env: step it directly (this loop is per env step)
            for w in workers:
                env = envs[w]
                infos = env.step(env.actions)[4]
                if infos:
                    ready_infos[w] = infos
                ready.append(w)
            return
        for w in workers:
            infos = _run_command(envs[w:w + 1], command, -1 if seed is None else seed + w)
            if infos:
                ready_infos[w] = infos
            ready.append(w)

    def _collect(self):
        raise AssertionError('Serial never has work in flight')

    def close(self):
        if self._closed:
            return
        self._closed = True
        for env in self.envs:
            env.close()


# ---------------------------------------------------------------------------------------------
# Multiprocessing
# ---------------------------------------------------------------------------------------------

_OPEN = weakref.WeakSet()


@atexit.register
def _close_all_at_exit():
    for vecenv in list(_OPEN):
        try:
            vecenv.close()
        except Exception:
            pass


def _allocate_shared(specs):
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


NO_DEADLINE = float('inf')


def _check_step_timeout(step_timeout):
    if step_timeout is None:
        return None
    if isinstance(step_timeout, bool) or not isinstance(step_timeout, (int, float)) or not (
            0 <= step_timeout < float('inf')):
        raise APIUsageError('step_timeout must be a number of seconds >= 0 (0 or None: no limit), got '
                            f'{step_timeout!r}')
    return float(step_timeout) or None


def set_parent_death_signal():
    """Ask Linux to SIGTERM this process when its parent dies, so a killed trainer leaves no orphans.

    Call it first thing in a child process (env workers, sweep trials). A no-op where prctl is
    missing (not Linux): there, children must be closed by their parent.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_command(envs, command, seed):
    """Step or reset one worker's envs; return their infos (a list, usually empty)."""
    infos = []
    if command == STEP:
        for env in envs:
            info = env.step(env.actions)[4]
            if info:
                infos.extend(info)
    else:
        for k, env in enumerate(envs):
            info = env.reset(None if seed < 0 else seed + k)[1]
            if info:
                infos.extend(info)
    return infos


# Bytes of pickled infos a worker leaves in its slot of shared memory for the parent to read; larger
# infos (rare: most are a few numbers at an episode's end) go through the worker's pipe. The slot
# spares both sides the pipe's system calls (a write here, a poll and reads there) on every
# episode end, which measured about as much parent CPU as the rest of a pool's recv.
INFO_SLOT = 4096
# shared.has_info[w]: no infos, or (when positive) that many bytes in the slot, or this: in the pipe.
INFO_IN_PIPE = -1


def _build_worker_envs(w, creators, env_args, env_kwargs, envs_per_worker, agents_per_env, shared):
    a = agents_per_env
    envs = []
    for k in range(envs_per_worker):
        e = w * envs_per_worker + k
        buf = _slice_buffers(shared, e * a, (e + 1) * a)
        env = create_env(creators[e], env_args, env_kwargs, buf=buf, seed=None)
        _check_agents(env, a, f'env {e}', buf)
        envs.append(env)
    return envs


def _mp_worker(workers, creators, env_args, env_kwargs, envs_per_worker, agents_per_env, shared, go, wake, done,
               conns, parent_pid, spin_s):
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

    def fail():
        status[w] = ERROR
        done.release()
        try:
            conns[w].send_bytes(pickle.dumps(traceback.format_exc()))
        except Exception:
            pass

    envs = {}
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
    waiter = Waiter(go[w] if single else wake, spin_s)
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
        if in_pipe:
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

    def __init__(self, env_creators, env_args=(), env_kwargs=None, num_envs=1, num_workers=None,
                 batch_size=None, zero_copy=True, seed=None, spin_us=200, local_worker=False,
                 step_timeout=DEFAULT_STEP_TIMEOUT_S, num_processes=None):
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
        self._local_envs, self._local_command = [], None
        self.spin_s = spin_us * 1e-6
        obs, act = self.single_observation_space, self.single_action_space
        n, W = self.num_agents, self.num_workers
        legal = [(MASK_BUFFER, (n, self.action_mask_width), bool)] if self.action_mask_width is not None else []
        self._region, arrays = _allocate_shared([
            ('observations', (n, *obs.shape), obs.dtype), ('actions', (n, *act.shape), self.action_dtype),
            ('rewards', (n,), np.float32), ('terminals', (n,), bool), ('truncations', (n,), bool),
            ('masks', (n,), bool), *legal, ('status', (W,), np.int32), ('commands', (W,), np.int32),
            ('has_info', (W,), np.int32), ('seeds', (W,), np.int64), ('tickets', (W,), np.int64),
            ('info_slots', (W, INFO_SLOT), np.uint8)])
        if legal:
            arrays[MASK_BUFFER][...] = True  # every action legal until the envs write their masks
        self.shared = SimpleNamespace(**arrays)
        self.buffers = SimpleNamespace(**{name: arrays[name] for name in BUFFER_NAMES + tuple(x[0] for x in legal)})

        ctx = multiprocessing.get_context('fork')
        self._done = ctx.Semaphore(0)
        self._waiter = Waiter(self._done, self.spin_s)
        self._go = [ctx.Semaphore(0) for _ in range(W)]
        # Per worker, the wake semaphore of its process when that process runs several workers.
        self._wake = [None] * W
        self._ticket = 0  # orders the commands of a process with several workers
        # Child processes, the workers each runs, and the workers' result pipes (none for a local worker).
        self.processes, self._proc_workers, self._conns = [], [], {}
        # Semaphore posts acquired minus finished workers consumed; never negative, so a positive
        # value guarantees a finished worker is there to be found.
        self._credits = 0
        self.shared.status[:] = BUSY
        remote = range(1 if local_worker else 0, W)
        for group in groups:
            wake = ctx.Semaphore(0) if len(group) > 1 else None
            pipes = {w: ctx.Pipe(duplex=False) for w in group}
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

    def _process_groups(self, num_processes, local_worker):
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

    def _dispatch(self, workers, command, seed=None):
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

    def _run_local(self):
        command, self._local_command = self._local_command, None
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

    def _acquire_done(self):
        self._waiter.wait(self._check_health)

    def _heartbeat(self):
        # A pool can be served for ever by the workers that still answer, so a dead or hung one is
        # looked for here too, not only while blocked: one clock read per recv, a check every 0.2 s.
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + LIVENESS_CHECK_S
            self._check_health()

    def _collect(self):
        """Wait until at least one in-flight worker finishes and move it to the ready list."""
        if self._local_command is not None:
            # A remote worker that has already finished goes first: otherwise the local worker,
            # always "done" soonest, would starve the others in a pool.
            if self._credits == 0 and self._done.acquire(False):
                self._credits += 1
            if self._credits == 0:
                self._run_local()
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

    def _recv_bytes(self, w):
        conn = self._conns[w]
        while not conn.poll(LIVENESS_CHECK_S):
            self._check_health()
        try:
            return conn.recv_bytes()
        except EOFError:
            self._check_health()
            raise

    def _check_health(self):
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
                raise EnvError(f'Multiprocessing {who} {how}. The vector env is closed and '
                               'its other workers stopped. If this was a crash in the env, run it with '
                               'backend="Serial" to debug it in this process.')
        now = time.monotonic()
        for w, deadline in self._inflight.items():
            if now > deadline and status[w] == BUSY:
                self._raise_timeout(w)
        return True

    def _raise_timeout(self, w):
        what = 'reset' if self.shared.commands[w] == RESET else 'step'
        envs = self._env_range(w)
        process = next(i for i, group in enumerate(self._proc_workers) if w in group)
        self.processes[process].kill()  # it would not answer close()
        self.close()
        raise EnvError(f'Multiprocessing worker {w} (envs {envs}) spent more than step_timeout={self.step_timeout:g} s '
                       f'in one {what}, so it was stopped and the vector env is closed. An env that blocks (on a '
                       'socket, a lock, a child process, input()) hangs training: run it with backend="Serial" to '
                       'see where it waits, or, if its steps are legitimately this slow, raise step_timeout '
                       '(vec.step_timeout in a config; 0 turns the limit off).')

    def _env_range(self, w):
        return f'{w * self.envs_per_worker}-{(w + 1) * self.envs_per_worker - 1}'

    def _describe_process(self, group):
        if len(group) == 1:
            return f'worker {group[0]} (envs {self._env_range(group[0])})'
        return (f'process of workers {", ".join(map(str, group))} '
                f'(envs {", ".join(self._env_range(w) for w in group)})')

    def _raise_worker_error(self, w):
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

    def close(self):
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
                if self._wake[w] is not None:
                    self._wake[w].release()
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


# ---------------------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------------------

class _RayEnvWorker:
    """One Ray actor: a block of envs with its own local buffers."""

    def __init__(self, creators, env_args, env_kwargs, first_env, agents_per_env, obs_space, act_space,
                 mask_width=None):
        rows = len(creators) * agents_per_env
        self.buf = make_buffers(obs_space, act_space, rows, mask_width=mask_width)
        self.envs = []
        for k, creator in enumerate(creators):
            buf = _slice_buffers(self.buf, k * agents_per_env, (k + 1) * agents_per_env)
            env = create_env(creator, env_args, env_kwargs, buf=buf)
            _check_agents(env, agents_per_env, f'env {first_env + k}', buf)
            self.envs.append(env)

    def ready(self):
        return True

    def _result(self, infos):
        b = self.buf
        return b.observations, b.rewards, b.terminals, b.truncations, b.masks, getattr(b, MASK_BUFFER, None), infos

    def reset(self, seed):
        infos = []
        for k, env in enumerate(self.envs):
            infos.extend(env.reset(None if seed is None else seed + k)[1])
        return self._result(infos)

    def step(self, actions):
        self.buf.actions[...] = actions
        infos = []
        for env in self.envs:
            infos.extend(env.step(env.actions)[4])
        return self._result(infos)

    def close(self):
        for env in self.envs:
            env.close()


class Ray(VecEnv):
    """Workers as Ray actors, waited on with `ray.wait`; the envs may run on any machine of the cluster.

    Connects by pufferlib.cluster.connect: the running Ray instance, else the cluster at `address`, else
    at RAY_ADDRESS, else a new local one; `address='auto'` joins the cluster this node belongs to.
    """

    def __init__(self, env_creators, env_args=(), env_kwargs=None, num_envs=1, num_workers=None,
                 batch_size=None, zero_copy=True, seed=None, address=None, step_timeout=DEFAULT_STEP_TIMEOUT_S):
        from pufferlib import cluster
        self.step_timeout = _check_step_timeout(step_timeout)
        super().__init__(env_creators, env_args, env_kwargs, num_envs, num_workers, batch_size, zero_copy, seed)
        self._ray = ray = cluster.connect(address, who='the Ray vector backend')[0]
        self.buffers = make_buffers(self.single_observation_space, self.single_action_space, self.num_agents,
                                    mask_width=self.action_mask_width)
        cpus = ray.cluster_resources().get('CPU', 1)
        actor = ray.remote(num_cpus=min(1.0, cpus / self.num_workers), max_restarts=0)(_RayEnvWorker)
        e = self.envs_per_worker
        self.actors = [actor.remote(env_creators[w * e:(w + 1) * e], self.env_args, self.env_kwargs, w * e,
                                    self.agents_per_env, self.single_observation_space,
                                    self.single_action_space, self.action_mask_width)
                       for w in range(self.num_workers)]
        self._pending = {}
        self._closed = False
        # Wait for every actor to build its envs: a creation error surfaces here, and no batch is
        # served by the early actors alone while the others are still starting.
        for w, actor in enumerate(self.actors):
            self._pending[actor.ready.remote()] = w
            self._inflight[w] = NO_DEADLINE  # building envs has no time limit
        self._wait_all_idle()
        self._ready.clear()

    def _dispatch(self, workers, command, seed=None):
        r = self.rows_per_worker
        deadline = time.monotonic() + self.step_timeout if self.step_timeout else NO_DEADLINE
        for w in workers:
            if command == STEP:
                ref = self.actors[w].step.remote(self.buffers.actions[w * r:(w + 1) * r].copy())
            else:
                ref = self.actors[w].reset.remote(None if seed is None else seed + w * self.envs_per_worker)
            self._pending[ref] = w
            self._inflight[w] = deadline

    def _collect(self):
        ray = self._ray
        first_deadline = min(self._inflight.values())
        timeout = None if first_deadline == NO_DEADLINE else max(0.0, first_deadline - time.monotonic())
        ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        if not ready:
            w = min(self._inflight, key=self._inflight.get)
            envs = f'{w * self.envs_per_worker}-{(w + 1) * self.envs_per_worker - 1}'
            self.close()
            raise EnvError(f'Ray worker {w} (envs {envs}) spent more than step_timeout={self.step_timeout:g} s in '
                           'one step or reset, so it was stopped and the vector env is closed. An env that blocks '
                           'hangs training: run it with backend="Serial" to see where it waits, or raise '
                           'step_timeout (vec.step_timeout in a config; 0 turns the limit off).')
        r = self.rows_per_worker
        for ref in ready:
            w = self._pending.pop(ref)
            try:
                result = ray.get(ref)
            except (ray.exceptions.RayTaskError, ray.exceptions.RayActorError) as exc:
                self.close()
                raise EnvError(f'Ray worker {w} (envs {w * self.envs_per_worker}-'
                               f'{(w + 1) * self.envs_per_worker - 1}) failed; the vector env is closed. '
                               f'Ray reported:\n{exc}') from None
            self._inflight.pop(w, None)
            self._ready.append(w)
            if result is True:  # the start-up handshake
                continue
            obs, rewards, terminals, truncations, masks, legal, infos = result
            rows = slice(w * r, (w + 1) * r)
            b = self.buffers
            b.observations[rows] = obs
            b.rewards[rows] = rewards
            b.terminals[rows] = terminals
            b.truncations[rows] = truncations
            b.masks[rows] = masks
            if legal is not None:
                b.action_masks[rows] = legal
            if infos:
                self._ready_infos[w] = infos

    def close(self):
        if self._closed:
            return
        self._closed = True
        for actor in self.actors:
            try:
                self._ray.kill(actor)
            except Exception:
                pass


# ---------------------------------------------------------------------------------------------
# make
# ---------------------------------------------------------------------------------------------

BACKENDS = {'serial': Serial, 'multiprocessing': Multiprocessing, 'ray': Ray}


def resolve_backend(backend: str | type) -> type:
    if isinstance(backend, type) and issubclass(backend, VecEnv):
        return backend
    if isinstance(backend, str) and backend.lower() in BACKENDS:
        return BACKENDS[backend.lower()]
    raise APIUsageError(f'unknown backend {backend!r}: use one of Serial, Multiprocessing, Ray '
                        '(a name or pufferlib.vector.<Backend>)')


def make(env_creator: str | Callable | Sequence[Callable], backend: str | type = Serial, num_envs: int = 1,
         num_workers: int | None = None, batch_size: int | None = None, zero_copy: bool = True, seed: int | None = None,
         env_args: Sequence = (), env_kwargs: dict | None = None, **backend_options) -> 'VecEnv':
    """Build a vector env.

    env_creator: an env name (resolved by pufferlib.registry), a callable returning an env (a PufferEnv that
        accepts `buf=`/`seed=`, or a plain Gymnasium / gym / PettingZoo env, wrapped for you), or a
        list of `num_envs` such callables.
    backend: Serial, Multiprocessing or Ray (class or name).
    num_workers: blocks of num_envs / num_workers envs, each a process (Multiprocessing, unless
        num_processes says fewer) or an actor (Ray). Multiprocessing default: as many as this
        machine's cores that divide num_envs; Serial ignores it.
    batch_size: envs per recv (default num_envs: synchronous).
    backend_options: Multiprocessing `spin_us=` (longest spin before blocking, default 200),
        `local_worker=` (run worker 0's envs in this process) and `num_processes=` (run the workers in
        fewer processes: double buffering for pools; see Multiprocessing); Ray `address=`;
        both `step_timeout=` (seconds a worker may spend in one step or reset before the vector env
        raises EnvError naming it; default 120, 0 or None for no limit; Serial has none).
    """
    cls = resolve_backend(backend)
    common = inspect.signature(VecEnv.__init__).parameters
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in common]
    unknown = sorted(set(backend_options) - set(accepted))
    if unknown:
        raise APIUsageError(f'{cls.__name__} has no option {", ".join(unknown)}; its options are '
                            f'{", ".join(accepted) or "none"}')
    if isinstance(env_creator, str):
        env_creator = registry.lookup(env_creator).make  # an unknown name fails here, with suggestions
    if isinstance(env_creator, (list, tuple)):
        creators = list(env_creator)
        if len(creators) != num_envs:
            raise APIUsageError(f'got {len(creators)} env creators for num_envs={num_envs}; pass one callable '
                                'or exactly num_envs of them')
    else:
        creators = [env_creator] * (num_envs if isinstance(num_envs, int) and num_envs > 0 else 1)
    for creator in creators:
        if not callable(creator):
            raise APIUsageError(f'env_creator must be an env name or a callable, got {type(creator).__name__}')
    return cls(creators, env_args=env_args, env_kwargs=env_kwargs, num_envs=num_envs, num_workers=num_workers,
               batch_size=batch_size, zero_copy=zero_copy, seed=seed, **backend_options)


# ---------------------------------------------------------------------------------------------
# autotune
# ---------------------------------------------------------------------------------------------

def measure(vecenv: 'VecEnv', seconds: float = 1.0, seed: int = 0) -> float:
    """Agent steps per second of random actions through the full send/recv loop."""
    space = vecenv.single_action_space
    space.seed(seed)
    pool = np.stack([np.stack([space.sample() for _ in range(vecenv.agents_per_batch)]) for _ in range(16)])
    pool = pool.astype(vecenv.action_dtype)
    vecenv.async_reset(seed)
    vecenv.recv()
    steps, i = 0, 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        vecenv.send(pool[i % 16])
        vecenv.recv()
        steps += vecenv.agents_per_batch
        i += 1
        if (i & 15) == 0 and time.perf_counter() > deadline:
            break
    return steps / (time.perf_counter() - start)


def autotune(env_creator: str | Callable, max_envs: int | None = None, seconds: float = 1.0,
             env_kwargs: dict | None = None, printer: Callable = print) -> tuple[dict, float]:
    """Try backend / worker / batch settings on this machine and return the fastest as make() kwargs."""
    cores = cpu_count()
    max_envs = max_envs or 16 * cores
    candidates = []
    num_envs = cores
    while num_envs <= max_envs:
        candidates.append(dict(backend='Serial', num_envs=num_envs))
        for workers in sorted({cores, max(1, cores // 2)}):
            if num_envs % workers:
                continue
            candidates.append(dict(backend='Multiprocessing', num_envs=num_envs, num_workers=workers))
            if workers > 1:
                candidates.append(dict(backend='Multiprocessing', num_envs=num_envs, num_workers=workers,
                                       local_worker=True))
            if (num_envs // 2) % (num_envs // workers) == 0 and workers > 1:
                candidates.append(dict(backend='Multiprocessing', num_envs=num_envs, num_workers=workers,
                                       batch_size=num_envs // 2))
            if num_envs % (2 * workers) == 0 and workers > 1:  # the same pool, double-buffered
                candidates.append(dict(backend='Multiprocessing', num_envs=num_envs, num_workers=2 * workers,
                                       num_processes=workers, batch_size=num_envs // 2))
        num_envs *= 2
    results = []
    printer(f'{"backend":<16} {"num_envs":>8} {"workers":>7} {"procs":>5} {"batch":>6} {"local":>5} {"steps/s":>12}')
    for config in candidates:
        with make(env_creator, env_kwargs=env_kwargs, **config) as vecenv:
            sps = measure(vecenv, seconds)
        results.append((sps, config))
        workers = config.get('num_workers', 1)
        procs = 0 if config['backend'] == 'Serial' else config.get('num_processes',
                                                                   workers - bool(config.get('local_worker')))
        printer(f'{config["backend"]:<16} {config["num_envs"]:>8} {workers:>7} {procs:>5} '
                f'{config.get("batch_size", config["num_envs"]):>6} {"yes" if config.get("local_worker") else "":>5} '
                f'{sps:>12,.0f}')
    best_sps, best = max(results, key=lambda item: item[0])
    printer(f'best: {best} at {best_sps:,.0f} steps/s')
    return best, best_sps
