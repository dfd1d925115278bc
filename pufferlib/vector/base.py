"""What every backend shares: env creation, the VecEnv send/recv state machine and its batching,
the worker commands and states, and the spin-then-block Waiter."""
import inspect
import os
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np

from pufferlib.cpus import cpu_count
from pufferlib.pufferenv import (APIUsageError, BUFFER_NAMES, MASK_BUFFER, ActionCheck, ActionMaskError,
                                 PufferEnv, PufferError, StateError, action_dtype, batched_space, check_seed,
                                 make_buffers, nonfinite_rows, read_state_header, space_shape)

if TYPE_CHECKING:
    from multiprocessing.synchronize import Semaphore

# Worker commands and states, kept in shared int32 arrays.
IDLE, STEP, RESET, CLOSE, GET_STATES, SET_STATES, GET_PROGRESS, GET_CELLS = 0, 1, 2, 3, 4, 5, 6, 7
# The commands that cross the pipe with a reply (state_work), rather than stepping the shared rows.
STATE_COMMANDS = (GET_STATES, SET_STATES, GET_PROGRESS, GET_CELLS)
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

    def __init__(self, sem: 'Semaphore', spin_s: float) -> None:
        self.sem, self.spin_s, self.typical = sem, spin_s, 0.0

    def wait(self, check: Callable[[], bool]) -> bool:
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


# ---------------------------------------------------------------------------------------------
# Creating envs
# ---------------------------------------------------------------------------------------------

def _accepts(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def create_env(creator: Callable, env_args: Sequence = (), env_kwargs: dict | None = None,
               buf: SimpleNamespace | None = None, seed: int | None = None) -> PufferEnv:
    """Call a creator and return a PufferEnv bound to `buf`.

    The creator may build a PufferEnv itself (then it must accept `buf=` and `seed=`), or return a
    plain Gymnasium, old gym, or PettingZoo env, which is wrapped here.
    """
    env_kwargs = env_kwargs or {}
    takes_buf = _accepts(creator, 'buf')
    if takes_buf:
        extra: dict[str, SimpleNamespace | int | None] = {'buf': buf}
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


def _name(fn: Callable) -> str:
    return getattr(fn, '__qualname__', None) or repr(fn)


def _slice_buffers(buf: SimpleNamespace, start: int, stop: int) -> SimpleNamespace:
    names = BUFFER_NAMES + ((MASK_BUFFER,) if getattr(buf, MASK_BUFFER, None) is not None else ())
    return SimpleNamespace(**{name: getattr(buf, name)[start:stop] for name in names})


# ---------------------------------------------------------------------------------------------
# The common part: configuration, batching, the send/recv state machine
# ---------------------------------------------------------------------------------------------

class VecEnv:
    """Base class of the backends. Subclasses implement `_dispatch`, `_collect`, `close` and set `buffers`."""

    # The rows of every env (pufferlib.pufferenv.BUFFER_NAMES, plus action_masks when the envs publish
    # them), allocated by each backend where its workers can reach them.
    buffers: SimpleNamespace

    def __init__(self, env_creators: Sequence[Callable], env_args: Sequence = (), env_kwargs: dict | None = None,
                 num_envs: int = 1, num_workers: int | None = None, batch_size: int | None = None,
                 zero_copy: bool = True, seed: int | None = None) -> None:
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
        # Saved states (get_states / set_states): each env object holds games_per_env games.
        self.supports_state = bool(getattr(probe, 'supports_state', False))
        self.games_per_env = int(getattr(probe, 'num_games', 1))
        self._no_state = None if self.supports_state else str(probe._no_state())
        # Per-game progress counters and Go-Explore cells (game_progress / game_cells).
        self.progress_names = tuple(getattr(probe, 'progress_names', ()))
        self.has_cells = bool(getattr(probe, 'has_cells', False))
        probe.close()

        self.num_agents = self.num_envs * self.agents_per_env
        self.num_games = self.num_envs * self.games_per_env
        self.agents_per_game = self.agents_per_env // self.games_per_env
        self.rows_per_worker = self.envs_per_worker * self.agents_per_env
        self.agents_per_batch = self.batch_size * self.agents_per_env
        self.observation_space = batched_space(self.single_observation_space, self.agents_per_batch)
        self.action_space = batched_space(self.single_action_space, self.agents_per_batch)
        self.action_dtype = action_dtype(self.single_action_space)
        self._check_actions = ActionCheck(self.single_action_space,
                                          (self.agents_per_batch, *space_shape(self.single_action_space)),
                                          self._describe_batch)

        self._ready: list[int] = []               # workers whose last command finished, in completion order
        self._ready_infos: dict[int, list] = {}   # worker -> infos from its last command
        # Workers with a command running -> the monotonic deadline of that command, oldest command first
        # (a dict as ordered set).
        self._inflight: dict[int, float] = {}
        # Batches (their workers) recv() handed to the caller and send() has not answered, oldest first.
        self._batches: list[list[int]] = []
        self._worker_rows = [np.arange(w * self.rows_per_worker, (w + 1) * self.rows_per_worker)
                             for w in range(self.num_workers)]
        self._full_ids = np.arange(self.num_agents)
        self._views: dict[int, BatchViews] = {}  # first worker of a zero-copy batch -> its views (see _block_views)
        self._first_reset = True
        # Non-zero-copy pools copy each batch into a buffer of its own (see _gather).
        self._free_bufs: list[SimpleNamespace] = []
        self._held_bufs: list[SimpleNamespace] = []

    def _configure(self, num_envs: int, num_workers: int | None, batch_size: int | None, zero_copy: bool) -> None:
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

    def _default_workers(self) -> int:
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

    def _block_views(self, first: int) -> BatchViews:
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
            found = next((i for i, workers in enumerate(self._batches)
                          if self._worker_rows[workers[0]][0] == first), None)
            if found is None:
                raise APIUsageError(f'send(env_ids=...): no outstanding batch starts at row {first}; pass the '
                                    'env_ids that recv() returned with the batch')
            index = found
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

    # --- saved states ---------------------------------------------------------------------------

    def get_states(self, game_ids: Sequence[int] | np.ndarray) -> list[bytes]:
        """The states of the games `game_ids` (ids 0..num_games-1: env object e holds the games
        e * games_per_env onwards, in row order), as bytes for set_states on any vector of the same
        env and options. Commands in flight finish first; their results wait for the next recv()."""
        ids = self._check_game_ids(game_ids, 'get_states')
        results = self._state_command(GET_STATES, ids, None)
        return [cast(bytes, results[i]) for i in range(len(ids))]

    def set_states(self, game_ids: Sequence[int] | np.ndarray, states: Sequence[bytes]) -> np.ndarray:
        """Load `states[i]` into game `game_ids[i]`; return the restored observation rows (a copy,
        agents_per_game rows per game, in the order of `game_ids`).

        The restored rows of the vector's buffers hold the restored observations (and masks) at once,
        with zero rewards and no terminal or truncation flag: a zero-copy batch the caller holds shows
        them, and the next recv() that returns those rows returns them. A refused state (another env,
        version or options, truncated, corrupt, an id out of range) raises StateError naming the game
        id and loads nothing on that game's worker; the vector env stays usable.
        """
        ids = self._check_game_ids(game_ids, 'set_states')
        if isinstance(states, (bytes, bytearray, memoryview)) or len(states) != len(ids):
            raise StateError(f'set_states: {len(ids)} game ids need a list of {len(ids)} states, got '
                             f'{type(states).__name__}' + ('' if isinstance(states, (bytes, bytearray, memoryview))
                                                           else f' of {len(states)}'))
        if len(set(ids.tolist())) != len(ids):
            raise StateError(f'set_states: game ids repeat ({ids.tolist()}); load one state per game')
        for g, state in zip(ids, states):
            read_state_header(state, f'set_states, game id {g}')  # the cheap checks, before any worker runs
        self._state_command(SET_STATES, ids, list(states))
        k = self.agents_per_game
        rows = (ids[:, None] * k + np.arange(k)).ravel()
        return self.buffers.observations[rows].copy()

    def game_progress(self) -> np.ndarray:
        """Every game's progress counters now (the env's `progress_names`, e.g. rooms reached this
        episode): float64 [num_games, len(progress_names)], games in the order of get_states' ids.
        Commands in flight finish first, as for get_states."""
        self._check_open()
        if not self.progress_names:
            raise StateError(f'game_progress: {self.driver_env.describe()} reports no per-game progress counters '
                             '(its progress_names is empty)')
        rows = self._state_command(GET_PROGRESS, np.arange(self.num_games), None)
        return np.array([rows[i] for i in range(self.num_games)], dtype=np.float64).reshape(
            self.num_games, len(self.progress_names))

    def game_cells(self) -> np.ndarray:
        """Every game's Go-Explore cell now (int64 [num_games]), where the env has a cell function."""
        self._check_open()
        if not self.has_cells:
            raise StateError(f'game_cells: {self.driver_env.describe()} has no Go-Explore cell function '
                             '(its has_cells is False)')
        cells = self._state_command(GET_CELLS, np.arange(self.num_games), None)
        return np.array([cells[i] for i in range(self.num_games)], dtype=np.int64)

    def _check_game_ids(self, game_ids: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
        self._check_open()
        if not self.supports_state:
            raise StateError(f'{what}: {self._no_state}')
        ids = np.asarray(game_ids)
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in 'iu'):
            raise StateError(f'{what}: game ids are a list of ints, got {game_ids!r}')
        ids = ids.astype(np.int64)
        bad = ids[(ids < 0) | (ids >= self.num_games)]
        if bad.size:
            raise StateError(f'{what}: game id {int(bad[0])} is outside [0, {self.num_games}) ({self.num_envs} '
                             f'envs x {self.games_per_env} games each)')
        return ids

    def _state_command(self, command: int, ids: np.ndarray, states: list | None) -> dict[int, object]:
        """Run GET_STATES or SET_STATES for `ids` on their workers; {position in ids: result}."""
        self._wait_all_idle()  # finished commands stay in _ready for the next recv()
        games_per_worker = self.envs_per_worker * self.games_per_env
        work: dict[int, tuple[list[int], list[int], list | None]] = {}
        for i, g in enumerate(ids.tolist()):
            positions, games, worker_states = work.setdefault(g // games_per_worker, ([], [], None if states is None
                                                                                       else []))
            positions.append(i)
            games.append(g)
            if worker_states is not None and states is not None:
                worker_states.append(states[i])
        replies = self._run_state_work(command, {w: (games, worker_states) for w, (_, games, worker_states)
                                                 in work.items()})
        out: dict[int, object] = {}
        error: BaseException | None = None
        for w, (positions, _, _) in work.items():
            ok, value = replies[w]
            if not ok:
                error = error or cast(BaseException, value)
            elif command != SET_STATES:
                out.update(zip(positions, cast(list, value)))
        if error is not None:
            raise error
        return out

    def _run_state_work(self, command: int, work: dict[int, tuple[list[int], list | None]]
                        ) -> dict[int, tuple[bool, object]]:
        """Per worker, (True, result) or (False, the StateError): each backend runs `state_work` where
        the worker's envs live."""
        raise NotImplementedError

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

    def __enter__(self) -> 'VecEnv':
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # --- what each backend implements ----------------------------------------------------------

    def _dispatch(self, workers: Sequence[int], command: int, seed: int | None = None) -> None:
        """Start `command` (STEP or RESET, the latter seeding env k of the vector with seed + k) on `workers`."""
        raise NotImplementedError

    def _collect(self) -> None:
        """Wait until at least one in-flight worker finishes and move it to `_ready`."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # --- helpers shared by the backends -------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise APIUsageError(f'{type(self).__name__} is closed')

    def _heartbeat(self) -> None:
        """Called on every recv(); backends with workers check their health here (see Multiprocessing)."""

    def _check_seed(self, seed: int | None) -> int | None:
        return check_seed(seed, lambda: type(self).__name__, self.num_envs)

    def _describe_batch(self) -> str:
        return (f'{type(self).__name__} (one action row per agent in the batch: {self.batch_size} envs x '
                f'{self.agents_per_env} agents, action space {self.single_action_space})')

    def _choose_batch(self) -> list[int]:
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

    def _take_infos(self, workers: Sequence[int]) -> list:
        infos: list[dict] = []
        if self._ready_infos:
            for w in workers:
                infos.extend(self._ready_infos.pop(w, ()))
        return infos

    def _gather(self, workers: Sequence[int], infos: list) -> tuple:
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

    def _wait_all_idle(self) -> None:
        while self._inflight:
            self._collect()

    def _env_seed(self, seed: int | None, env_index: int) -> int | None:
        return None if seed is None else seed + env_index


def _check_agents(env: PufferEnv, expected: int, where: str, buf: SimpleNamespace | None = None) -> None:
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


def _mask_width(probe: PufferEnv) -> int | None:
    """Columns of the envs' action masks (from the probe env), or None when they publish none."""
    if getattr(probe, 'action_masks', None) is None:
        return None
    width = getattr(probe, 'action_mask_width', None)
    if width is None:
        raise ActionMaskError(f'{type(probe).__name__} has action_masks but no action_mask_width: set '
                              '`action_mask_width` before PufferEnv.__init__, which then binds `action_masks` '
                              'so that a vector env can place it in shared memory')
    return int(width)


NO_DEADLINE = float('inf')


def _check_step_timeout(step_timeout: float | None) -> float | None:
    if step_timeout is None:
        return None
    if isinstance(step_timeout, bool) or not isinstance(step_timeout, (int, float)) or not (
            0 <= step_timeout < float('inf')):
        raise APIUsageError('step_timeout must be a number of seconds >= 0 (0 or None: no limit), got '
                            f'{step_timeout!r}')
    return float(step_timeout) or None


def _run_command(envs: Sequence[PufferEnv], command: int, seed: int) -> list:
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


def state_work(envs: Sequence[PufferEnv], first_game: int, command: int, games: Sequence[int],
               states: Sequence | None) -> tuple[bool, object]:
    """Run one worker's part of get_states / set_states: `games` are vector game ids, the worker's first
    being `first_game`. (True, list of states) for GET_STATES, (True, None) for SET_STATES, or (False,
    a StateError naming the game id). Every state is checked before any is loaded, so a refused one
    leaves this worker's games as they were."""
    per_env = envs[0].num_games
    try:
        if command in (GET_PROGRESS, GET_CELLS):
            tables: dict[int, np.ndarray] = {}  # one call per env object, not per game
            rows = []
            for g in games:
                local = g - first_game
                env = local // per_env
                if env not in tables:
                    try:
                        tables[env] = envs[env].game_progress() if command == GET_PROGRESS else envs[env].game_cells()
                    except PufferError as e:
                        raise StateError(f'game id {g}: {e}') from None
                rows.append(tables[env][local % per_env])
            return True, rows
        if command == GET_STATES:
            out = []
            for g in games:
                local = g - first_game
                try:
                    out.append(envs[local // per_env].get_state(local % per_env))
                except PufferError as e:
                    raise StateError(f'game id {g}: {e}') from None
            return True, out
        assert states is not None
        payloads = []
        for g, state in zip(games, states):
            local = g - first_game
            try:
                payloads.append(envs[local // per_env].check_state(state))
            except PufferError as e:
                raise StateError(f'set_states, game id {g}: {e}') from None
        for g, payload in zip(games, payloads):
            local = g - first_game
            envs[local // per_env].restore_checked(local % per_env, payload)
        return True, None
    except StateError as e:
        return False, e
