#!/usr/bin/env python
"""Vectorization benchmark: ours vs Gymnasium and SB3 vector envs, measured in the same run.

    scripts/bench_vector.py                 # full run (about 5 minutes on 2 cores), updates docs/benchmarks.md
    scripts/bench_vector.py --quick         # 0.3 s per measurement, no doc update
    scripts/bench_vector.py --no-write      # print only

Steps per second of random actions (pre-generated) through each library's step loop, median of
--repeats rounds of --seconds each, the implementations interleaved round-robin. Prints one table and checks the issue's targets.
"""
import argparse
import os
import platform
import statistics
import sys
import time

import gymnasium
import numpy as np

import pufferlib
import pufferlib.vector as pv
from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments.synthetic import BusyCartPole, NetHackLikeDict

from benchdoc import update_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cartpole():
    return gymnasium.make('CartPole-v1')


def busy_cartpole():
    return BusyCartPole(50, 150)


def time_loop(step, batch, seconds):
    """Run step() until `seconds` pass; return steps of `batch` agents per second."""
    step()  # warm-up: first-call checks and page faults are not what we measure
    calls, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        step()
        calls += 1
        if (calls & 7) == 0 and time.perf_counter() > deadline:
            return calls * batch / (time.perf_counter() - start)


def measure_ours(creator, num_envs, seconds, **options):
    with pv.make(creator, num_envs=num_envs, **options) as vecenv:
        actions = [np.random.randint(0, 2, vecenv.agents_per_batch).astype(np.int32) for _ in range(16)]
        vecenv.async_reset(0)
        vecenv.recv()
        counter = iter(range(1 << 62))

        def step():
            vecenv.send(actions[next(counter) & 15])
            vecenv.recv()
        return time_loop(step, vecenv.agents_per_batch, seconds)


def measure_gymnasium(creator, num_envs, seconds, asynchronous):
    if asynchronous:
        envs = gymnasium.vector.AsyncVectorEnv([creator] * num_envs, shared_memory=True)
    else:
        envs = gymnasium.vector.SyncVectorEnv([creator] * num_envs)
    try:
        envs.reset(seed=0)
        actions = [np.random.randint(0, 2, num_envs) for _ in range(16)]
        counter = iter(range(1 << 62))
        return time_loop(lambda: envs.step(actions[next(counter) & 15]), num_envs, seconds)
    finally:
        envs.close()


def measure_sb3(creator, num_envs, seconds, subprocess):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    envs = SubprocVecEnv([creator] * num_envs) if subprocess else DummyVecEnv([creator] * num_envs)
    try:
        envs.reset()
        actions = [np.random.randint(0, 2, num_envs) for _ in range(16)]
        counter = iter(range(1 << 62))
        return time_loop(lambda: envs.step(actions[next(counter) & 15]), num_envs, seconds)
    finally:
        envs.close()


def implementations(cores, num_envs):
    return [
        ('ours', 'Serial', dict(backend='Serial')),
        ('ours', 'Multiprocessing sync', dict(backend='Multiprocessing', num_workers=cores)),
        ('ours', 'Multiprocessing sync, local worker', dict(backend='Multiprocessing', num_workers=cores,
                                                           local_worker=True)),
        ('ours', 'Multiprocessing pool', dict(backend='Multiprocessing', num_workers=cores,
                                              batch_size=num_envs // 2)),
        ('peer', 'Gymnasium SyncVectorEnv', dict(gymnasium=False)),
        ('peer', 'Gymnasium AsyncVectorEnv(shm)', dict(gymnasium=True)),
        ('peer', 'SB3 DummyVecEnv', dict(sb3=False)),
        ('peer', 'SB3 SubprocVecEnv', dict(sb3=True)),
    ]


def measure(creator, num_envs, seconds, options):
    if 'gymnasium' in options:
        return measure_gymnasium(creator, num_envs, seconds, options['gymnasium'])
    if 'sb3' in options:
        return measure_sb3(creator, num_envs, seconds, options['sb3'])
    return measure_ours(creator, num_envs, seconds, **options)


SYNC_SINGLE_PROCESS = ('Serial', 'Gymnasium SyncVectorEnv', 'SB3 DummyVecEnv')


def vector_section(env_name, creator, sizes, args, cores, rows, checks, slow):
    for num_envs in sizes:
        # Round-robin over implementations, so a noisy stretch of this (virtual) machine hits ours
        # and the peers alike instead of whichever happened to be running.
        impls = implementations(cores, num_envs)
        runs = {name: [] for _, name, _ in impls}
        for _ in range(args.repeats):
            for owner, name, options in impls:
                runs[name].append(measure(creator, num_envs, args.seconds, options))
        results = {}
        for owner, name, _ in impls:
            results[name] = (owner, statistics.median(runs[name]))
            print(f'  {env_name:<22} {num_envs:>4} {name:<34} {results[name][1]:>12,.0f}', flush=True)
        best_peer = max(sps for owner, sps in results.values() if owner == 'peer')
        async_sps = results['Gymnasium AsyncVectorEnv(shm)'][1]
        best_sync = max(results[name][1] for name in SYNC_SINGLE_PROCESS)
        best_mp = max(sps for name, (owner, sps) in results.items() if name.startswith('Multiprocessing'))
        for name, (owner, sps) in results.items():
            rows.append((env_name, num_envs, name, sps, sps / best_peer, sps / async_sps, sps / best_sync))
        if slow:
            checks.append((f'{env_name} x{num_envs}: best Multiprocessing >= 1.7x best single-process sync',
                           best_mp / best_sync, 1.7))
        else:
            checks.append((f'{env_name} x{num_envs}: best Multiprocessing >= fastest peer', best_mp / best_peer, 1.0))
            checks.append((f'{env_name} x{num_envs}: best Multiprocessing >= 4x AsyncVectorEnv',
                           best_mp / async_sps, 4.0))


def emulation_overhead(seconds, repeats):
    """Microseconds per step that GymnasiumPufferEnv adds on a NetHack-shaped Dict observation."""
    raw = NetHackLikeDict()
    raw.reset(seed=0)
    wrapped = GymnasiumPufferEnv(env=NetHackLikeDict())
    wrapped.reset(seed=0)
    action = np.zeros(1, np.int32)
    raw_sps = statistics.median(time_loop(lambda: raw.step(0), 1, seconds) for _ in range(repeats))
    ours_sps = statistics.median(time_loop(lambda: wrapped.step(action), 1, seconds) for _ in range(repeats))
    return 1e6 / raw_sps, 1e6 / ours_sps


def render(rows, checks, overhead, args, cores):
    raw_us, ours_us = overhead
    lines = [
        f'Measured by `scripts/bench_vector.py` on {platform.machine()} with {cores} cores '
        f'({platform.processor() or platform.platform()}), Python {platform.python_version()}, '
        f'numpy {np.__version__}, gymnasium {gymnasium.__version__}, pufferlib {pufferlib.__version__}; '
        f'median of {args.repeats} runs of {args.seconds:g} s, random actions.',
        '',
        '| env | envs | implementation | steps/s | vs fastest peer | vs Gymnasium Async | vs best 1-process sync |',
        '|---|---:|---|---:|---:|---:|---:|',
    ]
    for env_name, num_envs, name, sps, vs_peer, vs_async, vs_sync in rows:
        lines.append(f'| {env_name} | {num_envs} | {name} | {sps:,.0f} | {vs_peer:.2f}x | {vs_async:.2f}x | '
                     f'{vs_sync:.2f}x |')
    lines += ['',
              f'Emulation overhead, NetHack-shaped Dict observation (13 keys, mixed dtypes): raw env step '
              f'{raw_us:.2f} us, through GymnasiumPufferEnv {ours_us:.2f} us: **{ours_us - raw_us:.2f} us per step** '
              '(target under 10 us).', '',
              '| target | measured | needed | met |', '|---|---:|---:|---|']
    for text, value, needed in checks:
        lines.append(f'| {text} | {value:.2f} | {needed:.2f} | {"yes" if value >= needed else "**no**"} |')
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--seconds', type=float, default=1.0)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--quick', action='store_true', help='0.3 s, 1 repeat, no doc update')
    parser.add_argument('--no-write', action='store_true', help='do not update docs/benchmarks.md')
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.repeats, args.no_write = 0.3, 1, True
    cores = pv.cpu_count()
    rows, checks = [], []
    print(f'{"env":<24} {"envs":>4} {"implementation":<34} {"steps/s":>12}')
    vector_section('CartPole-v1', cartpole, (8, 32), args, cores, rows, checks, slow=False)
    vector_section('CartPole busy 50-150us', busy_cartpole, (8, 32), args, cores, rows, checks, slow=True)
    overhead = emulation_overhead(args.seconds, args.repeats)
    checks.append(('emulation overhead per step (us), Dict obs: 10 / measured', 10 / max(overhead[1] - overhead[0], 1e-9), 1.0))
    table = render(rows, checks, overhead, args, cores)
    print('\n' + table)
    if not args.no_write:
        path = update_section('vector', 'Vectorization', table)
        print(f'\nwrote {os.path.relpath(path, ROOT)}')
    return 0 if all(value >= needed for _, value, needed in checks) else 1


if __name__ == '__main__':
    sys.exit(main())
