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

Layout: `base` (VecEnv, the send/recv state machine, env creation, Waiter), one module per backend
(`serial`, `multiprocessing`, `ray`), and here make, from_config (a config's `[vec]` section),
measure and autotune; every public name is importable from here.
"""
import inspect
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import psutil
from gymnasium import spaces

from pufferlib import config as configuration
from pufferlib import registry
from pufferlib.pufferenv import APIUsageError, buffer_bytes
from pufferlib.vector.base import (BUSY, CLOSE, CLOSED, DEFAULT_STEP_TIMEOUT_S, DONE, ERROR, IDLE, LIVENESS_CHECK_S,
                                   NO_DEADLINE, RESET, STEP, BatchViews, VecEnv, Waiter, _mask_width, cpu_count,
                                   create_env, yield_cpu)
from pufferlib.vector.multiprocessing import INFO_IN_PIPE, INFO_SLOT, Multiprocessing, set_parent_death_signal
from pufferlib.vector.ray import Ray
from pufferlib.vector.serial import Serial

__all__ = ['BACKENDS', 'BUSY', 'CLOSE', 'CLOSED', 'DEFAULT_STEP_TIMEOUT_S', 'DONE', 'ERROR', 'IDLE', 'INFO_IN_PIPE',
           'INFO_SLOT', 'LIVENESS_CHECK_S', 'NO_DEADLINE', 'RESET', 'STEP', 'BatchViews', 'Multiprocessing', 'Ray',
           'Serial', 'VecEnv', 'Waiter', 'Footprint', 'autotune', 'cpu_count', 'create_env', 'footprint', 'from_config',
           'make', 'measure',
           'resolve_backend', 'set_parent_death_signal', 'yield_cpu']

BACKENDS: dict[str, type[VecEnv]] = {'serial': Serial, 'multiprocessing': Multiprocessing, 'ray': Ray}


def resolve_backend(backend: str | type) -> type[VecEnv]:
    if isinstance(backend, type) and issubclass(backend, VecEnv):
        return backend
    if isinstance(backend, str) and backend.lower() in BACKENDS:
        return BACKENDS[backend.lower()]
    raise APIUsageError(f'unknown backend {backend!r}: use one of Serial, Multiprocessing, Ray '
                        '(a name or pufferlib.vector.<Backend>)')


def make(env_creator: str | Callable | Sequence[Callable], backend: str | type = Serial, num_envs: int = 1,
         num_workers: int | None = None, batch_size: int | None = None, zero_copy: bool = True, seed: int | None = None,
         env_args: Sequence = (), env_kwargs: dict | None = None, **backend_options: Any) -> VecEnv:
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
        if not callable(env_creator):
            raise APIUsageError(f'env_creator must be an env name or a callable, got {type(env_creator).__name__}')
        if isinstance(num_envs, int) and num_envs > 0:
            check_fits(env_creator, cls.__name__, num_envs, batch_size, zero_copy, env_args, env_kwargs)
        creators = [env_creator] * (num_envs if isinstance(num_envs, int) and num_envs > 0 else 1)
    for creator in creators:
        if not callable(creator):
            raise APIUsageError(f'env_creator must be an env name or a callable, got {type(creator).__name__}')
    return cls(creators, env_args=env_args, env_kwargs=env_kwargs, num_envs=num_envs, num_workers=num_workers,
               batch_size=batch_size, zero_copy=zero_copy, seed=seed, **backend_options)


def from_config(env: str | Callable, vec: Mapping[str, Any], seed: int | None = None,
                env_kwargs: Mapping[str, Any] | None = None) -> VecEnv:
    """Build the vector env a config's `[vec]` section describes (pufferlib/config/default.toml).

    The one place that turns those keys into make() arguments, so a trainer, a league and a script
    building from the same section get the same vector env. A key left out takes default.toml's
    value; 0 means automatic: num_envs one env per core, num_workers as make() chooses, batch_size
    num_envs (synchronous), num_processes one per worker. Options a backend lacks are not passed to
    it (Serial has no workers, so it ignores num_workers and step_timeout). A key that is not a
    `[vec]` key raises ConfigError. `seed` seeds env k with `seed + k`; `env_kwargs` go to every env.
    """
    defaults = configuration.defaults()['vec']
    unknown = sorted(set(vec) - set(defaults))
    if unknown:
        raise configuration.ConfigError(f'unknown [vec] key {", ".join(unknown)}; the keys are '
                                        f'{", ".join(defaults)}')
    vec = {**defaults, **vec}
    serial = vec['backend'].lower() == 'serial'
    options: dict[str, Any] = {'local_worker': True} if vec['local_worker'] else {}
    if vec['num_processes']:
        options['num_processes'] = vec['num_processes']
    if not serial:
        options['step_timeout'] = vec['step_timeout']
    return make(env, backend=vec['backend'], num_envs=vec['num_envs'] or cpu_count(),
                num_workers=None if serial else vec['num_workers'] or None, batch_size=vec['batch_size'] or None,
                zero_copy=vec['zero_copy'], seed=seed, env_kwargs=dict(env_kwargs or {}), **options)


class Footprint(NamedTuple):
    """What the vector env of a [vec] section will hold (see `footprint`)."""
    rows: int                        # agent rows of all its envs
    observation_space: spaces.Space  # of one row
    action_space: spaces.Space
    mask_width: int | None           # action masks' width, when the envs publish them
    buffer_bytes: int                # its arrays of rows, in every copy the backend makes


def _one_instance(env_kwargs: Mapping[str, Any] | None) -> tuple[dict, int]:
    """(env_kwargs for an env object of one instance, the instances each real one holds): an env option
    `num_envs` is the number of instances one env object holds (Ocean's), and its rows scale with it."""
    kwargs = dict(env_kwargs or {})
    instances = kwargs.get('num_envs', 1)
    scale = int(instances) if isinstance(instances, (int, np.integer)) and not isinstance(instances, bool) \
        and instances > 1 else 1
    if scale > 1:
        kwargs['num_envs'] = 1
    return kwargs, scale


def footprint(env: str | Callable, vec: Mapping[str, Any], env_kwargs: Mapping[str, Any] | None = None,
              env_args: Sequence = ()) -> Footprint:
    """The rows and buffer bytes of `from_config(env, vec, env_kwargs=...)`, known before it allocates them,
    from one env of a single instance (see _one_instance), whose rows are multiplied."""
    defaults = configuration.defaults()['vec']
    vec = {**defaults, **vec}
    kwargs, scale = _one_instance(env_kwargs)
    creator = registry.lookup(env).make if isinstance(env, str) else env
    probe = create_env(creator, env_args, env_kwargs=kwargs)
    try:
        obs_space, act_space = probe.single_observation_space, probe.single_action_space
        rows = int(probe.num_agents) * scale * (vec['num_envs'] or cpu_count())
        width = _mask_width(probe)
    finally:
        probe.close()
    # Serial and Multiprocessing hold every row once (Multiprocessing in shared memory, which its workers'
    # envs write in place); Ray once here and once in its actors; a pool that is not zero-copy gathers each
    # batch into a buffer of its own, and a trainer may hold every batch at once.
    copies = 1 + (vec['backend'].lower() == 'ray')
    batch = vec['batch_size'] or vec['num_envs'] or cpu_count()
    copies += not vec['zero_copy'] and batch < (vec['num_envs'] or cpu_count())
    return Footprint(rows, obs_space, act_space, width, copies * buffer_bytes(obs_space, act_space, rows, width))


# An env object's own memory is measured (a second, traced probe of one instance) only when num_envs objects
# of this size could take more than a tenth of the available memory: make() stays one small probe otherwise.
LARGE_ENV_BYTES = 1 << 20


def _env_object_bytes(creator: Callable, env_args: Sequence, kwargs: dict) -> int:
    """The memory one more env object of one instance keeps (Python objects and arrays, as tracemalloc sees
    them; a probe has already been built, so one-time imports are not counted)."""
    if tracemalloc.is_tracing():  # someone else's trace: do not stop it; assume a small env
        return 0
    tracemalloc.start()
    try:
        probe = create_env(creator, env_args, env_kwargs=kwargs)
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    probe.close()
    return kept


def check_fits(creator: Callable, backend: str, num_envs: int, batch_size: int | None, zero_copy: bool,
               env_args: Sequence = (), env_kwargs: Mapping[str, Any] | None = None) -> None:
    """Refuse, before any worker starts, a vector env whose buffers and env objects need more memory than is
    available (psutil: MemAvailable), with one APIUsageError that says what it needs, what is available and
    which argument to lower; else the kernel's out-of-memory killer ends a worker minutes later."""
    vec = {'backend': backend, 'num_envs': num_envs, 'batch_size': batch_size or 0, 'zero_copy': zero_copy}
    fp = footprint(creator, vec, env_kwargs, env_args)
    host = psutil.virtual_memory().available
    kwargs, scale = _one_instance(env_kwargs)
    per_env = 0
    if num_envs * scale * LARGE_ENV_BYTES > host // 10:
        per_env = _env_object_bytes(creator, env_args, kwargs) * scale
    objects = per_env * num_envs
    if fp.buffer_bytes + objects <= host:
        return
    lower = 'num_envs' + (' or env_kwargs["num_envs"]' if scale > 1 else '')
    objects_part = f' and {objects / 2**30:,.1f} GiB of env objects ({per_env:,} bytes each, measured on one)' \
        if objects else ''
    need = (fp.buffer_bytes + objects) / 2**30
    raise APIUsageError(f'pufferlib.vector.make: {num_envs:,} envs need at least {need:,.1f} GiB: '
                        f'{fp.buffer_bytes / 2**30:,.1f} GiB of env buffers ({fp.rows:,} agent rows of '
                        f'{fp.buffer_bytes // max(fp.rows, 1):,} bytes){objects_part}, but '
                        f'{host / 2**30:,.1f} GiB of memory is available; lower {lower}')


# ---------------------------------------------------------------------------------------------
# autotune
# ---------------------------------------------------------------------------------------------

def measure(vecenv: VecEnv, seconds: float = 1.0, seed: int = 0) -> float:
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
    candidates: list[dict[str, Any]] = []
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
