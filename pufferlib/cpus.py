"""How many CPUs this process may use: the cores it may run on (its affinity), capped by the CPU quota of
its control group where one is set.

A container started with `docker run --cpus 2` on a 64-core host sees 64 cores in os.cpu_count() and in
its affinity, yet the kernel lets it run 2 cores' worth of time per period. Sizing worker counts, torch's
threads or BLAS's threads from the 64 then runs 64 busy threads in 2 cores' time: busy-waiting workers
starve each other and the learner (PufferLib's users met hangs and slowdowns there). The quota lives in
the cgroup's files: v2 `cpu.max` ("QUOTA PERIOD" or "max PERIOD"), v1 `cpu.cfs_quota_us` /
`cpu.cfs_period_us` (-1: none); a limit set on any ancestor cgroup applies too, so every level from the
process's cgroup up to the mount's root is read and the smallest quota wins.

Python 3.13's os.process_cpu_count() reads the affinity only, and no maintained package reads the quota
the same way on v1 and v2 (psutil does not), so this file does; it is short and tested on fake trees and,
where the machine lets a test make one, on a real cgroup.

Below that, the rules that size what a config leaves "auto" (envs, workers, the pool, the minibatch) from
those CPUs and from whether the learner has a GPU: size_vec and size_minibatch, which pufferlib.train applies
once when a run starts.
"""
from __future__ import annotations

import math
import os

PROC_CGROUP = '/proc/self/cgroup'
PROC_MOUNTINFO = '/proc/self/mountinfo'


def affinity_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _mounts(mountinfo: str) -> tuple[str | None, str | None, str | None]:
    """(the v2 mount point, the v1 cpu controller's mount point, that mount's root within the hierarchy)."""
    v2 = v1 = v1_root = None
    try:
        lines = open(mountinfo).read().splitlines()
    except OSError:
        return None, None, None
    for line in lines:
        fields = line.split()
        if ' - ' not in line or len(fields) < 5:
            continue
        fstype, _, options = line.split(' - ', 1)[1].split(' ')[:3]
        if fstype == 'cgroup2' and v2 is None:
            v2 = fields[4]
        elif fstype == 'cgroup' and 'cpu' in options.split(',') and v1 is None:
            v1, v1_root = fields[4], fields[3]
    return v2, v1, v1_root


def _levels(mount: str, path: str, root: str = '/') -> list[str]:
    """The cgroup folders from the process's own (`path` within its hierarchy) up to the mount point."""
    relative = os.path.relpath(path, root) if path.startswith(root) else path.lstrip('/')
    parts = [] if relative in ('.', '') else relative.strip('/').split('/')
    return [os.path.join(mount, *parts[:depth]) for depth in range(len(parts), -1, -1)]


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def cpu_quota(proc_cgroup: str = PROC_CGROUP, mountinfo: str = PROC_MOUNTINFO) -> float | None:
    """The CPUs' worth of time the process's cgroups allow per period (2.5 for `--cpus 2.5`), the smallest over
    every level that sets one; None when none does (or the files are not there: not Linux, no cgroups)."""
    text = _read(proc_cgroup)
    if text is None:
        return None
    v2_mount, v1_mount, v1_root = _mounts(mountinfo)
    quotas: list[float] = []
    for line in text.splitlines():
        number, _, rest = line.partition(':')
        controllers, _, path = rest.partition(':')
        if number == '0' and controllers == '' and v2_mount:
            for folder in _levels(v2_mount, path):
                fields = (_read(os.path.join(folder, 'cpu.max')) or '').split()
                if len(fields) == 2 and fields[0] != 'max' and float(fields[1]) > 0:
                    quotas.append(float(fields[0]) / float(fields[1]))
        elif 'cpu' in controllers.split(',') and v1_mount:
            for folder in _levels(v1_mount, path, v1_root or '/'):
                quota = _read(os.path.join(folder, 'cpu.cfs_quota_us'))
                period = _read(os.path.join(folder, 'cpu.cfs_period_us'))
                if quota and period and int(quota) > 0 and int(period) > 0:
                    quotas.append(int(quota) / int(period))
    return min(quotas) if quotas else None


def cpu_count() -> int:
    """The CPUs to size work for: the affinity, capped by the quota rounded down (busy-waiting workers on a
    fractional CPU spin through each other's slices), at least 1."""
    cores = affinity_count()
    quota = cpu_quota()
    return cores if quota is None else max(1, min(cores, math.floor(quota)))


def learner_threads(setting: int, workers: int) -> int:
    """The learner's threads (torch's and the BLAS/OpenMP pools'): `setting` when > 0 (train.torch_threads),
    else the CPUs that `workers` env worker processes leave free, at least 1. Envs that step in the
    learner's process (Serial, evaluation) count no worker: they run between the policy's calls."""
    return setting if setting > 0 else max(1, cpu_count() - workers)


def describe() -> str:
    """One line of what cpu_count decided from, for `puffer train` to print."""
    cores, quota = affinity_count(), cpu_quota()
    if quota is None:
        return f'{cores} cores'
    return f'{cpu_count()} of {cores} cores (the cgroup allows {quota:g} CPUs)'


# ---------------------------------------------------------------------------------------------
# Sizes a config leaves automatic (0, or "auto" in a file or a flag), from the machine
# ---------------------------------------------------------------------------------------------

# Envs per worker process when vec.num_envs is automatic: with the pool's two halves, each half a block of
# workers stepping several envs in a row, a worker's hand-over costs are shared by its envs and the
# learner's forward pass gets a batch of 2 x workers envs. 4 makes CleanRL's Atari shape (8 envs) on two cores.
ENVS_PER_WORKER = 4
# Minibatches per epoch when train.minibatch_size is automatic and the trainer samples single steps:
# CleanRL's num_minibatches. Whole segments (the default sampler) take the largest multiple of the horizon
# up to SEGMENT_MINIBATCH steps, default.toml's fixed value, or the whole rollout where that is less.
STEP_MINIBATCHES = 4
SEGMENT_MINIBATCH = 8192


def size_vec(vec: dict, cores: int, gpu: bool) -> dict[str, int]:
    """The [vec] sizes that `vec` leaves at 0 (automatic), for a machine of `cores` usable CPUs (cpu_count) with a
    GPU for the learner or not; the keys it fixes are not returned.

    Where num_envs is automatic the whole pool is sized. Env worker processes: every core on a CPU-only
    machine (the learner's threads take what they leave, see learner_threads), one core fewer with a GPU
    (the learner's process keeps it: it feeds the GPU and copies the batches); an even number where there
    are two or more, so that the pool splits into two halves of whole workers. num_envs: ENVS_PER_WORKER
    per worker. batch_size: half the envs (the learner acts on one half while the other steps), or all of
    them with one worker. Serial steps every env in the learner's process: one env per core, as before.
    Where the config fixes num_envs, the automatic workers are the most of them, up to the cores, that
    divide it, and the batch is every env (synchronous), as pufferlib.vector's own defaults are."""
    sized: dict[str, int] = {}
    if vec['backend'].lower() == 'serial':
        if not vec['num_envs']:
            sized['num_envs'] = cores
        return sized
    if vec['num_envs']:
        num_envs = vec['num_envs']
        if not vec['num_workers']:
            sized['num_workers'] = max(d for d in range(1, min(cores, num_envs) + 1) if num_envs % d == 0)
        if not vec['batch_size']:
            sized['batch_size'] = num_envs
        return sized
    workers = vec['num_workers'] or max(1, cores - 1 if gpu else cores)
    if not vec['num_workers'] and workers > 1:
        workers -= workers % 2
    num_envs = ENVS_PER_WORKER * workers
    sized['num_envs'] = num_envs
    if not vec['num_workers']:
        sized['num_workers'] = workers
    if not vec['batch_size']:
        sized['batch_size'] = num_envs // 2 if workers % 2 == 0 else num_envs
    return sized


def size_minibatch(rows: int, horizon: int, sampling: str) -> int:
    """train.minibatch_size when it is automatic, for a rollout of `rows` agent rows x `horizon` steps."""
    rollout = rows * horizon
    if sampling == 'steps':
        return max(1, rollout // STEP_MINIBATCHES)
    return max(1, min(SEGMENT_MINIBATCH, rollout) // horizon) * horizon
