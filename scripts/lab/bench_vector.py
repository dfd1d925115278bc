#!/usr/bin/env python
"""Vectorization: ours vs Gymnasium, SB3 and PufferLib 3.0 vector envs, measured in the same run.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_vector [--anchor DIR]
    .venv/bin/python -m lab.bench_vector --quick        # one short round, no doc update
    nice -n 19 .venv/bin/python -m lab.bench_vector --envs busy --sizes 8 --only pool --cpu-clock
                                       # a few rows, CPU figures that mean something on a busy machine

Steps per second of random actions (drawn ahead of time) through each library's step loop. Every
round measures every implementation once (interleaved); the table gives the median, every round
and the spread. For the slow env it also gives the CPU time each implementation spends per env
step (this process and its workers, from the kernel's accounting), and from it the ceiling a
2-process backend can reach on 2 cores: 2 x (CPU per step of the leanest single process) / (its own
CPU per step). What separates a measured ratio from 2x is in those columns, and in one more row:
one Serial vector per core in independent processes that never wait for each other, what the cores
deliver with no coordination at all.

Atari (`--envs atari`, its own section): Breakout with the same preprocessing in every library (our atari_*
binding's NoFrameskip-v4 recipe, set through each one's options), through our Multiprocessing vector env,
Gymnasium's AsyncVectorEnv and SB3's SubprocVecEnv (Gymnasium's AtariPreprocessing + FrameStackObservation
over ale-py's env) and EnvPool, every library with as many workers as cores; and the bound: one bare env
per core in independent processes, summed.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_vector --envs atari --envpool DIR

EnvPool runs in a venv of its own, driven by lab.bench_envpool (--envpool DIR or ENVPOOL_VENV=DIR; without it
its rows are skipped and the section says so): it brings its own pins (and the 0.x releases numpy < 2 and an old
gym), which must not move ours. Make it with our Python:

    python3.11 -m venv DIR && DIR/bin/pip install envpool==1.2.5

(0.8.4, the last 0.x, works with the same driver: `DIR/bin/pip install envpool==0.8.4 "numpy<2"`.)
"""
import argparse
import multiprocessing
import os
import platform
import sys
import time

import gymnasium
import numpy as np

import pufferlib
import pufferlib.vector as pv
from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments._support import require
from lab.synthetic_envs import BusyCartPole, NetHackLikeDict

from lab import benchdoc
from lab import benchmark as bd

SLOW_TARGET = 1.8
CLOCK_TICK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


def cartpole():
    return gymnasium.make('CartPole-v1')


def busy_cartpole():
    return BusyCartPole(50, 150)


def busy_cartpole_cpu():
    return BusyCartPole(50, 150, clock='cpu')


def _cpu_seconds(pid):
    """CPU time of one process: the scheduler's exact figure where the kernel shows it, else clock ticks."""
    try:
        with open(f'/proc/{pid}/sched') as f:
            for line in f:
                if line.startswith('se.sum_exec_runtime'):
                    return float(line.split(':')[1]) / 1e3  # milliseconds
    except OSError:
        pass
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def process_cpu(pids):
    """CPU seconds used so far by this process and the processes `pids`, or None without /proc."""
    try:
        return sum(_cpu_seconds(pid) for pid in (os.getpid(), *pids))
    except (OSError, IndexError, ValueError):
        return None


def time_loop(step, batch, seconds, pids=()):
    """Run step() until `seconds` pass: (agent steps per second, CPU microseconds per agent step)."""
    step()  # warm-up: first-call checks and page faults are not what we measure
    calls, cpu, start = 0, process_cpu(pids), time.perf_counter()
    deadline = start + seconds
    while True:
        step()
        calls += 1
        if (calls & 7) == 0 and time.perf_counter() > deadline:
            elapsed, used = time.perf_counter() - start, process_cpu(pids)
            cpu_us = None if cpu is None or used is None else 1e6 * (used - cpu) / (calls * batch)
            return calls * batch / elapsed, cpu_us


def measure_ours(creator, num_envs, seconds, ready=None, actions=2, **options):
    """(steps per second, CPU us per step) of our vector env, random actions in [0, actions); `ready()` is
    called just before timing."""
    with pv.make(creator, num_envs=num_envs, **options) as vecenv:
        count = actions
        actions = [np.random.randint(0, count, vecenv.agents_per_batch).astype(np.int32) for _ in range(16)]
        vecenv.async_reset(0)
        vecenv.recv()
        counter = iter(range(1 << 62))

        def step():
            vecenv.send(actions[next(counter) & 15])
            vecenv.recv()
        pids = [p.pid for p in getattr(vecenv, 'processes', ())]
        if ready:
            ready()
        return time_loop(step, vecenv.agents_per_batch, seconds, pids)


def _independent_serial(creator, num_envs, seconds, barrier, conn):
    conn.send(measure_ours(creator, num_envs, seconds, ready=barrier.wait, backend='Serial'))
    conn.close()


def _independent_bare(creator, num_envs, seconds, barrier, conn):
    """One bare env (no vector env, no emulation) stepped in a loop: `num_envs` is 1 here."""
    env = creator()
    env.reset(seed=os.getpid())
    actions = np.random.randint(0, env.action_space.n, 16)
    counter = iter(range(1 << 62))

    def step():
        _, _, terminated, truncated, _ = env.step(actions[next(counter) & 15])
        if terminated or truncated:
            env.reset()
    barrier.wait()
    conn.send(time_loop(step, 1, seconds))
    env.close()
    conn.close()


def measure_independent(creator, num_envs, seconds, cores, runner=_independent_serial):
    """`cores` processes, each timing its own Serial vector of num_envs / cores envs, started together
    and never waiting for one another: (their summed steps per second, CPU us per step). The most
    any parallel backend could get from these cores, short of their full count when running side
    by side slows each one down (shared caches, memory, a hypervisor's scheduling)."""
    ctx = multiprocessing.get_context('fork')
    barrier = ctx.Barrier(cores + 1)
    procs, conns = [], []
    for _ in range(cores):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=runner, args=(creator, num_envs // cores, seconds, barrier, send),
                           daemon=True)
        proc.start()
        send.close()
        procs.append(proc)
        conns.append(receive)
    try:
        barrier.wait(timeout=60)
        results = [conn.recv() for conn in conns]
    finally:
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
    total = sum(sps for sps, _ in results)
    cpu = None if any(c is None for _, c in results) else sum(sps * c for sps, c in results) / total
    return total, cpu


def episode_length(creator, steps=4000):
    """Mean episode length under uniformly random actions (what the step loops send)."""
    with pv.make(creator, num_envs=8, backend='Serial', seed=0) as vecenv:
        vecenv.reset()
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(steps // 8):
            _, _, terminals, truncations, _ = vecenv.step(rng.integers(0, 2, 8).astype(np.int32))
            ends += int((terminals | truncations).sum())
    return steps / max(ends, 1)


def _busy_core(sem, stamp, stop, post):
    """Keep one core busy; the posting one also posts `sem` about every 200 us, stamping the time."""
    while not stop.value:
        end = time.perf_counter() + 200e-6
        while time.perf_counter() < end:
            pass
        if post and sem.get_value() == 0:
            stamp.value = time.perf_counter()
            sem.release()


def wakeup_latency(seconds, cores):
    """Mean microseconds from a semaphore post to the blocked waiter running, while `cores` busy
    processes hold every core: what a blocked vector env parent pays each time a worker finishes."""
    ctx = multiprocessing.get_context('fork')
    sem, stamp, stop = ctx.Semaphore(0), ctx.Value('d', 0.0, lock=False), ctx.Value('i', 0, lock=False)
    procs = [ctx.Process(target=_busy_core, args=(sem, stamp, stop, k == 0), daemon=True) for k in range(cores)]
    for proc in procs:
        proc.start()
    latencies = []
    try:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if sem.acquire(timeout=1.0):
                latencies.append(time.perf_counter() - stamp.value)
    finally:
        stop.value = 1
        for proc in procs:
            proc.join(5)
    return 1e6 * float(np.mean(latencies)) if latencies else float('nan')


def measure_gymnasium(creator, num_envs, seconds, asynchronous, actions=2):
    if asynchronous:
        envs = gymnasium.vector.AsyncVectorEnv([creator] * num_envs, shared_memory=True)
    else:
        envs = gymnasium.vector.SyncVectorEnv([creator] * num_envs)
    try:
        envs.reset(seed=0)
        count = actions
        actions = [np.random.randint(0, count, num_envs) for _ in range(16)]
        counter = iter(range(1 << 62))
        pids = [p.pid for p in getattr(envs, 'processes', ())]
        return time_loop(lambda: envs.step(actions[next(counter) & 15]), num_envs, seconds, pids)
    finally:
        envs.close()


def measure_sb3(creator, num_envs, seconds, subprocess, actions=2):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    envs = SubprocVecEnv([creator] * num_envs) if subprocess else DummyVecEnv([creator] * num_envs)
    try:
        envs.reset()
        count = actions
        actions = [np.random.randint(0, count, num_envs) for _ in range(16)]
        counter = iter(range(1 << 62))
        pids = [p.pid for p in getattr(envs, 'processes', ())]
        return time_loop(lambda: envs.step(actions[next(counter) & 15]), num_envs, seconds, pids)
    finally:
        envs.close()


def implementations(cores, num_envs, anchor, slow):
    """name -> (owner, options). One line per implementation, ours first."""
    pool = dict(num_workers=cores, batch_size=num_envs // 2)
    double = dict(num_workers=2 * cores, num_processes=cores, batch_size=num_envs // 2)
    impls = {
        'Serial': ('ours', dict(backend='Serial')),
        'Multiprocessing sync': ('ours', dict(backend='Multiprocessing', num_workers=cores)),
        'Multiprocessing sync, local worker': ('ours', dict(backend='Multiprocessing', num_workers=cores,
                                                            local_worker=True)),
        'Multiprocessing pool': ('ours', dict(backend='Multiprocessing', **pool)),
        DOUBLE_BUFFERED: ('ours', dict(backend='Multiprocessing', **double)),
        DOUBLE_BUFFERED + ', copies': ('ours', dict(backend='Multiprocessing', zero_copy=False, **double)),
        DOUBLE_BUFFERED + ', no spinning': ('ours', dict(backend='Multiprocessing', spin_us=0, **double)),
        'Gymnasium SyncVectorEnv': ('peer', dict(gymnasium=False)),
        'Gymnasium AsyncVectorEnv(shm)': ('peer', dict(gymnasium=True)),
        'SB3 DummyVecEnv': ('peer', dict(sb3=False)),
        'SB3 SubprocVecEnv': ('peer', dict(sb3=True)),
    }
    if anchor:
        impls['PufferLib 3.0 Serial'] = ('peer', dict(anchor=anchor, backend='Serial'))
        impls['PufferLib 3.0 Multiprocessing sync'] = ('peer', dict(anchor=anchor, backend='Multiprocessing',
                                                                    num_workers=cores))
        impls['PufferLib 3.0 Multiprocessing pool'] = ('peer', dict(anchor=anchor, backend='Multiprocessing', **pool))
    if slow:
        impls[INDEPENDENT] = ('bound', dict(independent=cores))
    return impls


DOUBLE_BUFFERED = 'Multiprocessing pool, 2 workers per process'
INDEPENDENT = 'bound: 1 Serial per core, independent processes'
# Peers that reset an env on the step after its episode ended, without stepping it (Gymnasium 1.x's
# default autoreset mode; PufferLib 3.0's vector envs). Ours and SB3's reset in the ending step.
NEXT_STEP_RESET = ('Gymnasium SyncVectorEnv', 'Gymnasium AsyncVectorEnv(shm)', 'PufferLib 3.0 Serial',
                   'PufferLib 3.0 Multiprocessing sync', 'PufferLib 3.0 Multiprocessing pool')


def measure(env_key, creator, num_envs, seconds, options):
    """(steps per second, CPU microseconds per step or None)."""
    if 'independent' in options:
        return measure_independent(creator, num_envs, seconds, options['independent'])
    if 'gymnasium' in options:
        return measure_gymnasium(creator, num_envs, seconds, options['gymnasium'])
    if 'sb3' in options:
        return measure_sb3(creator, num_envs, seconds, options['sb3'])
    if 'anchor' in options:
        options = dict(options)
        answer = options.pop('anchor').ask('vector', env=env_key, num_envs=num_envs, seconds=seconds, **options)
        return answer['sps'], None
    return measure_ours(creator, num_envs, seconds, **options)


# Single-process synchronous stepping: the baseline a parallel backend has to beat.
SYNC_SINGLE_PROCESS = ('Serial', 'Gymnasium SyncVectorEnv', 'SB3 DummyVecEnv', 'PufferLib 3.0 Serial')
ENVS = {'cartpole': ('CartPole-v1', cartpole, False), 'busy': ('CartPole busy 50-150us', busy_cartpole, True)}


def vector_section(env_key, num_envs, args, cores, anchor):
    """Measure every implementation on one env and size; return (table rows, checks, notes)."""
    env_name, creator, slow = ENVS[env_key]
    if args.cpu_clock and slow:
        creator = busy_cartpole_cpu
    impls = implementations(cores, num_envs, anchor, slow)
    if args.only:  # Serial stays: every ratio and the CPU ceiling are taken against it
        impls = {name: spec for name, spec in impls.items()
                 if name == 'Serial' or any(part.lower() in name.lower() for part in args.only)}
    cpu = {name: [] for name in impls}

    def one(name):
        sps, cpu_us = measure(env_key, creator, num_envs, args.seconds, impls[name][1])
        if cpu_us is not None:
            cpu[name].append(cpu_us)
        return sps
    runs = bd.interleaved(list(impls), args.repeats, one)
    med = {name: bd.median(r) for name, r in runs.items()}
    for name in impls:
        print(f'  {env_name:<22} {num_envs:>4} {name:<36} {med[name]:>10,.0f}  rounds {bd.runs_cell(runs[name])}',
              file=sys.stderr, flush=True)
    best_peer = max((med[name] for name, (owner, _) in impls.items() if owner == 'peer'), default=None)
    best_sync_name = max((name for name in SYNC_SINGLE_PROCESS if name in med), key=med.get)
    best_sync = med[best_sync_name]
    best_mp = max((sps for name, sps in med.items() if name.startswith('Multiprocessing')), default=None)
    # The ceiling on 2 cores if both were always busy: the leanest single process's CPU per step,
    # twice over, against what this implementation spends per step in all its processes. (The peer
    # processes of PufferLib 3.0 are not accounted, so they are left out of both.)
    single = [bd.median(cpu[name]) for name in SYNC_SINGLE_PROCESS if cpu.get(name)]
    base_cpu = min(single) if single else None
    own_cpu = {name: bd.median(cpu[name]) if cpu[name] else None for name in impls}
    rows = []
    for name, (owner, _) in impls.items():
        row = [env_name, num_envs, name, f'{med[name]:,.0f}', bd.runs_cell(runs[name]), bd.spread_cell(runs[name]),
               bd.ratio_cell(med[name] / best_peer) if best_peer else '-', bd.ratio_cell(med[name] / best_sync)]
        if slow:
            own = own_cpu[name]
            multi = name.startswith('Multiprocessing') or 'Async' in name or 'Subproc' in name or name == INDEPENDENT
            row += [f'{own:.1f}' if own else '-',
                    bd.ratio_cell(cores * base_cpu / own) if multi and own and base_cpu else '-']
        rows.append(row)
    notes, checks = [], []
    if best_mp is None or (not slow and best_peer is None) or (slow and INDEPENDENT not in med):
        return rows, checks, notes  # a partial run (--only): the rows, without the checks that need others
    if slow:
        checks = [(f'{env_name} x{num_envs}: best Multiprocessing >= {SLOW_TARGET}x best single-process sync '
                   f'({best_sync_name})', best_mp / best_sync, SLOW_TARGET)]
        # Like for like: a next-step reset is a counted step on which the env is not stepped.
        length = episode_length(creator)
        stepped = {name: med[name] * (length / (length + 1) if name in NEXT_STEP_RESET else 1.0) for name in med}
        best_stepped = max((name for name in SYNC_SINGLE_PROCESS if name in med), key=stepped.get)
        checks.append((f'{env_name} x{num_envs}: the same, counting only the steps that step the env '
                       f'({best_stepped})', best_mp / stepped[best_stepped], SLOW_TARGET))
        notes.append(f'x{num_envs}: episodes of random actions last {length:.1f} steps, so a next-step reset '
                     f'skips the env on 1 step in {length + 1:.1f}; counting only the steps that step the env, '
                     f'the best single process ({best_stepped}) makes {stepped[best_stepped]:,.0f}/s and the best '
                     f'Multiprocessing {best_mp / stepped[best_stepped]:.2f}x that. The independent processes '
                     f'reach {med[INDEPENDENT] / best_sync:.2f}x the best single process '
                     f'({med[INDEPENDENT] / stepped[best_stepped]:.2f}x counting env steps); the best '
                     f'Multiprocessing gets {best_mp / med[INDEPENDENT]:.0%} of their throughput.')
        # Why a size falls short, in CPU terms: even with both cores busy all the time, the target caps
        # what coordination may cost per env step, and a worker command pays it once for all its envs.
        best_mp_name = max((name for name in med if name.startswith('Multiprocessing')), key=med.get)
        own = own_cpu[best_mp_name]
        if own and base_cpu:
            budget = cores * base_cpu / SLOW_TARGET
            batch = num_envs // impls[best_mp_name][1].get('num_workers', 1)  # the envs of one worker command
            notes.append(f'x{num_envs}: to reach {SLOW_TARGET}x with both cores busy all the time, a backend may spend '
                         f'at most {budget:.1f} CPU us per env step ({cores} x {base_cpu:.1f} / {SLOW_TARGET}), '
                         f'{budget - base_cpu:.1f} us over the single process; {best_mp_name} spends {own:.1f}, '
                         f'{own - base_cpu:.1f} us of coordination per env step, {(own - base_cpu) * batch:.0f} us per '
                         f'worker command of {batch} envs (the parent\'s send and recv, two wake-ups, the worker\'s '
                         'loop). That cost is per command, so more envs per worker dilute it.')
    else:
        checks = [(f'{env_name} x{num_envs}: best Multiprocessing >= fastest peer', best_mp / best_peer, 1.0)]
        async_sps = med.get('Gymnasium AsyncVectorEnv(shm)')
        if async_sps:
            checks.append((f'{env_name} x{num_envs}: best Multiprocessing >= 4x AsyncVectorEnv', best_mp / async_sps,
                           4.0))
    return rows, checks, notes


# ---------------------------------------------------------------------------------------------
# Atari: ours vs Gymnasium, SB3 and EnvPool on the same cores, and what the cores give with no coordination
# ---------------------------------------------------------------------------------------------

ATARI_GAME = 'breakout'
ATARI_NAME = 'Breakout'
ATARI_ACTIONS = 4  # Breakout's minimal action set, in every library
# The preprocessing every library gets, under its own names: the NoFrameskip-v4 recipe of our atari_* binding
# (4 frames per step, the max of the last two, 84x84 gray, 4 stacked, 1-30 no-ops at a new game) with its
# sticky actions (0.25). Episodes end with the game: Gymnasium's life-loss flag restarts the whole game,
# where ours and EnvPool's go on, so none of them ends an episode at a lost life; and no FIRE at a reset,
# which Gymnasium's wrappers do not have.
ATARI_OURS = dict(frameskip=4, screen_size=84, frame_stack=4, noop_max=30, repeat_action_probability=0.25,
                  episodic_life=False, fire_reset=False, max_episode_frames=108_000)
ENVPOOL_GAME = 'Breakout-v5'
ENVPOOL_OPTIONS = dict(frame_skip=4, img_height=84, img_width=84, stack_num=4, gray_scale=True, noop_max=30,
                       repeat_action_probability=0.25, episodic_life=False, use_fire_reset=False,
                       max_episode_steps=27_000, reward_clip=False)
ATARI_SIZES = [8, 16]
ATARI_TARGET = 0.9  # of the bound
ATARI_BOUND = 'bound: 1 ALE per core, independent processes'
ENVPOOL_MODULE = 'lab.bench_envpool'  # the EnvPool side, run in its venv's interpreter (benchmark.PeerProcess)


def atari_ours(buf=None, seed=None):
    from pufferlib.environments import atari
    return atari.make(f'atari_{ATARI_GAME}', buf=buf, seed=seed, **ATARI_OURS)


def atari_bare():
    """The env of atari_ours without the emulation layer: one ALE and its preprocessing, nothing else."""
    from pufferlib.environments.atari import AtariEnv
    return AtariEnv(ATARI_GAME, **ATARI_OURS)


def atari_gymnasium():
    """Gymnasium's own recipe over ale-py's env: AtariPreprocessing (frame skip, max pool, no-ops, resize)
    and FrameStackObservation, what Gymnasium's and SB3's vector envs step."""
    import ale_py
    gymnasium.register_envs(ale_py)
    env = gymnasium.make(f'ALE/{ATARI_NAME}-v5', frameskip=1, repeat_action_probability=0.25,
                         max_num_frames_per_episode=108_000)
    env = gymnasium.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84,
                                                terminal_on_life_loss=False, grayscale_obs=True)
    return gymnasium.wrappers.FrameStackObservation(env, 4)


def atari_implementations(cores, sizes, envpool):
    """Rows of the Atari table: (label, owner, envs, batch, workers, options). Every library gets `cores`
    workers: our processes, EnvPool's threads; Gymnasium's and SB3's vector envs run one process per env,
    so they step `cores` envs."""
    rows = [('Serial', 'ours', sizes[0], sizes[0], '1 process (this one)', dict(backend='Serial'))]
    procs = f'{cores} processes'
    for n in sizes:
        half = n // 2
        rows += [
            ('Multiprocessing sync', 'ours', n, n, procs, dict(backend='Multiprocessing', num_workers=cores)),
            # Worker 0's envs step in this process while it waits for the others: cores processes in all,
            # not cores + 1, which is what a machine with no spare core needs.
            ('Multiprocessing sync, local worker', 'ours', n, n, f'{procs} (this one and {cores - 1} more)',
             dict(backend='Multiprocessing', num_workers=cores, local_worker=True)),
            (DOUBLE_BUFFERED, 'ours', n, half, procs,
             dict(backend='Multiprocessing', num_workers=2 * cores, num_processes=cores, batch_size=half)),
        ]
        if envpool:
            threads = f'{cores} threads'
            rows += [('EnvPool sync', 'peer', n, n, threads, dict(envpool=n)),
                     ('EnvPool async', 'peer', n, half, threads, dict(envpool=half))]
    rows += [('Gymnasium AsyncVectorEnv(shm)', 'peer', cores, cores, procs, dict(gymnasium=True)),
             ('SB3 SubprocVecEnv', 'peer', cores, cores, procs, dict(sb3=True)),
             (ATARI_BOUND, 'bound', cores, 1, procs, dict(independent=cores))]
    return rows


def measure_atari(row, seconds, cores, envpool):
    """(steps per second, CPU microseconds per step or None) of one row of atari_implementations."""
    _, _, envs, batch, _, options = row
    if 'independent' in options:
        return measure_independent(atari_bare, envs, seconds, cores, runner=_independent_bare)
    if 'gymnasium' in options:
        return measure_gymnasium(atari_gymnasium, envs, seconds, True, actions=ATARI_ACTIONS)
    if 'sb3' in options:
        return measure_sb3(atari_gymnasium, envs, seconds, True, actions=ATARI_ACTIONS)
    if 'envpool' in options:
        answer = envpool.ask('atari', game=ENVPOOL_GAME, num_envs=envs, batch_size=batch, num_threads=cores,
                             seconds=seconds, options=ENVPOOL_OPTIONS)
        return answer['sps'], answer['cpu_us']
    return measure_ours(atari_ours, envs, seconds, actions=ATARI_ACTIONS, **options)


def atari_key(row):
    return f'{row[0]} x{row[2]}'


def atari_table(rows, runs, cpu):
    """(table rows, checks, notes) from the Atari rows and their {key: [steps/s per round]}, {key: [CPU us]}."""
    med = {atari_key(row): bd.median(runs[atari_key(row)]) for row in rows}
    owner = {atari_key(row): row[1] for row in rows}
    bound = next((med[k] for k in med if owner[k] == 'bound'), None)
    peers = {k: v for k, v in med.items() if owner[k] == 'peer'}
    best_peer = max(peers.values(), default=None)
    own_cpu = {key: bd.median(cpu[key]) if cpu.get(key) else None for key in med}
    bound_cpu = next((own_cpu[k] for k in med if owner[k] == 'bound'), None)
    table = []
    for row in rows:
        key = atari_key(row)
        own = own_cpu[key]
        table.append([row[0], row[2], row[3], row[4], f'{med[key]:,.0f}', bd.runs_cell(runs[key]),
                      bd.spread_cell(runs[key]), bd.ratio_cell(bd.ratio(med[key], bound)),
                      bd.ratio_cell(bd.ratio(med[key], best_peer)), f'{own:.0f}' if own else '-',
                      bd.ratio_cell(bd.ratio(bound_cpu, own))])
    checks, notes = [], []
    ours = {k: v for k, v in med.items() if owner[k] == 'ours' and k.startswith('Multiprocessing')}
    if not ours:
        return table, checks, notes
    best = max(ours, key=ours.get)
    if bound:
        checks.append((f'{ATARI_NAME}: best Multiprocessing ({best}) >= {ATARI_TARGET:.0%} of the bound',
                       ours[best] / bound, ATARI_TARGET))
    if best_peer:
        best_peer_key = max(peers, key=peers.get)
        checks.append((f'{ATARI_NAME}: best Multiprocessing ({best}) >= fastest peer ({best_peer_key})',
                       ours[best] / best_peer, 1.0))
    return table, checks, notes


def atari_section(args, cores, envpool):
    """Measure every Atari row in interleaved rounds: (table rows, checks, notes)."""
    rows = atari_implementations(cores, args.atari_sizes, envpool)
    if args.only:  # the bound stays: the target is taken against it
        rows = [row for row in rows if row[1] == 'bound' or any(part.lower() in row[0].lower() for part in args.only)]
    keys = {atari_key(row): row for row in rows}
    cpu = {key: [] for key in keys}

    def one(key):
        sps, cpu_us = measure_atari(keys[key], args.seconds, cores, envpool)
        if cpu_us is not None:
            cpu[key].append(cpu_us)
        return sps
    runs = bd.interleaved(list(keys), args.repeats, one,
                          progress=lambda line: print(line, file=sys.stderr, flush=True))
    return atari_table(rows, runs, cpu)


def render_atari(table, checks, notes, args, versions, loads, envpool_note):
    """The Atari section of docs/benchmarks.md."""
    lines = [f'Measured by `scripts/lab/bench_vector.py --envs atari`: {bd.machine(versions)}. {ATARI_NAME}, '
             f'random actions, agent steps per second; median of {args.repeats} interleaved rounds of '
             f'{args.seconds:g} s (every row once per round); spread = (max - min) / median. Load average (1 min) '
             f'{loads[0]:.1f} at the start, {loads[1]:.1f} at the end, on {cores_note()} (other programs share '
             'this machine: read the ratios, not the absolute figures). Reproduce: `flock /tmp/puffer-bench.lock '
             f'nice -n 5 .venv/bin/python -m lab.bench_vector --envs atari --envpool DIR --seconds {args.seconds:g}`.', '',
             'Every library steps the same game with the same preprocessing, set through its own options: 4 frames '
             'per step (the max of the last two), 84x84 gray, 4 frames stacked, 1 to 30 no-ops at a new game, '
             'sticky actions 0.25, 108,000 frames at most; an episode ends with the game (no episodic life: '
             'Gymnasium\'s life-loss flag restarts the whole game where ours and EnvPool\'s go on) and no FIRE at a '
             f'reset (Gymnasium\'s wrappers have none). Ours: `atari_{ATARI_GAME}` (pufferlib/environments/atari.py). '
             f'Gymnasium and SB3: `ALE/{ATARI_NAME}-v5` with frameskip=1 under Gymnasium\'s `AtariPreprocessing` and '
             f'`FrameStackObservation`. EnvPool: `envpool.make("{ENVPOOL_GAME}", env_type="gymnasium", ...)` with the '
             'matching options, its own C++ preprocessing (the same area resize). Every library gets as many '
             'workers as cores: our worker processes, EnvPool\'s threads (num_threads), and Gymnasium\'s and SB3\'s '
             'one process per env, so those step as many envs as cores. "batch" is the envs one step call returns; '
             'below num_envs, the first to finish (our pool, EnvPool\'s async send/recv). '
             f'"{ATARI_BOUND}" runs one bare env of ours (the ALE and its preprocessing, no vector env, no '
             'emulation layer) in a loop in each of as many processes as cores, started together and never waiting '
             'for each other, and sums them: what these cores give with no coordination at all. "CPU us/step" is '
             'the CPU time of every process (and thread) of a row per agent step, and "CPU: bound / this" the '
             'bound\'s CPU per step over the row\'s: the share of the bound the row would reach with every core its '
             'own, the figure to read when other programs take the cores (then steps/s measures how much of the '
             'machine each row got, and a single process gets as much as two).', '',
             bd.markdown_table(['implementation', 'envs', 'batch', 'workers', 'steps/s', 'rounds', 'spread',
                                'vs bound', 'vs fastest peer', 'CPU us/step', 'CPU: bound / this'], table,
                               'lrrlrrrrrrr')]
    if checks:
        lines += ['', bd.markdown_table(['target', 'measured', 'needed', 'met'],
                                        [[text, f'{value:.2f}', f'{needed:.2f}', 'yes' if value >= needed else '**no**']
                                         for text, value, needed in checks], 'lrrl')]
    lines += [''] + [f'- {note}' for note in notes] if notes else []
    if envpool_note:
        lines += ['', f'*{envpool_note}.*']
    return '\n'.join(lines)


def emulation_overhead(seconds, repeats):
    """Microseconds per step that GymnasiumPufferEnv adds on a NetHack-shaped Dict observation."""
    raw = NetHackLikeDict()
    raw.reset(seed=0)
    wrapped = GymnasiumPufferEnv(env=NetHackLikeDict())
    wrapped.reset(seed=0)
    action = np.zeros(1, np.int32)
    steps = {'raw': lambda: raw.step(0), 'wrapped': lambda: wrapped.step(action)}
    runs = bd.interleaved(list(steps), repeats, lambda name: time_loop(steps[name], 1, seconds)[0])
    return 1e6 / bd.median(runs['raw']), 1e6 / bd.median(runs['wrapped'])


def cores_note():
    n = pv.cpu_count()
    return f'{n} core' if n == 1 else f'{n} cores'


def render(tables, checks, overhead, wakeups, args, note, about):
    raw_us, ours_us = overhead
    versions = [f'kernel {platform.system()} {platform.release()}', f'gymnasium {gymnasium.__version__}',
                f'pufferlib {pufferlib.__version__}']
    if about:
        versions.append(f'PufferLib 3.0 = pufferlib {about["pufferlib"]} (anchor build, gymnasium {about["gymnasium"]})')
    header = ['env', 'envs', 'implementation', 'steps/s', 'rounds', 'spread', 'vs fastest peer',
              'vs best 1-process sync']
    lines = [f'Measured by `scripts/lab/bench_vector.py`: {bd.machine(versions)}. Random actions; median of '
             f'{args.repeats} interleaved rounds of {args.seconds:g} s (every implementation once per round). '
             'Spread = (max - min) / median over the rounds. Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 '
             '.venv/bin/python -m lab.bench_vector --anchor DIR`.']
    for slow, rows, notes in tables:
        lines.append('')
        if slow:
            lines += ['The slow env: CartPole that busy-waits 50-150 us per step, so the env, not the vector machinery, '
                      'is most of the work: the row asks how close a parallel backend gets to using every core. The '
                      f'target is the best Multiprocessing row at {SLOW_TARGET}x the best single-process sync row; '
                      f'{cores_note()} cannot give more than {pv.cpu_count()}x, and less whenever the cores do not '
                      'run side by side at full speed. "CPU us/step" is the CPU time of the '
                      'whole implementation (this process and its workers) per env step; "2-core ceiling" is '
                      '2 x the leanest single process\'s CPU per step / this one\'s: the ratio it would reach if both '
                      'cores were busy all the time. The gap between it and 2x is the coordination cost (the parent\'s '
                      'recv/send, semaphores, infos, emulation); the gap between it and the measured '
                      'ratio is idle time (waiting for the slower worker, wake-ups, other load). '
                      f'"{INDEPENDENT}" runs one Serial vector of num_envs / cores envs per core in processes that '
                      'never wait for each other: what these cores deliver with no coordination at all, the real '
                      f'ceiling here. "{DOUBLE_BUFFERED}" is num_workers=2 x cores, num_processes=cores: each batch '
                      'has one worker in each process, and a process steps its other worker while the caller '
                      'acts ("copies": zero_copy=False, so a batch is any 2 finished workers, gathered into a '
                      'buffer; "no spinning": spin_us=0, every wait blocks at once: a spinning parent is runnable, so a post '
                      'does not wake it, and once it has yielded to a busy worker it may wait for the next tick).',
                      '']
            lines.append(bd.markdown_table(header + ['CPU us/step', '2-core ceiling'], rows, 'lrlrrrrrrr'))
            lines += [''] + [f'- {note}' for note in notes] if notes else []
        else:
            lines.append(bd.markdown_table(header, rows, 'lrlrrrrr'))
    if wakeups:
        lines += ['', 'Wake-up latency of a blocked process (a vector env\'s parent waiting for its workers) while '
                  f'{pv.cpu_count()} busy processes hold every core: microseconds from the semaphore post to the '
                  'waiter running, mean per round (median of the rounds, each round listed). A parent that blocked for a '
                  'batch pays it before it can send that batch its next actions.', '',
                  bd.markdown_table(['waiter', 'mean latency (us)', 'rounds'],
                                    [[name, f'{bd.median(runs):.1f}', bd.runs_cell(runs)]
                                     for name, runs in wakeups.items()], 'lrr')]
    lines += ['', f'Emulation overhead, NetHack-shaped Dict observation (13 keys, mixed dtypes): raw env step '
              f'{raw_us:.2f} us, through GymnasiumPufferEnv {ours_us:.2f} us: **{ours_us - raw_us:.2f} us per step** '
              '(target under 10 us).', '']
    lines.append(bd.markdown_table(['target', 'measured', 'needed', 'met'],
                                   [[text, f'{value:.2f}', f'{needed:.2f}', 'yes' if value >= needed else '**no**']
                                    for text, value, needed in checks], 'lrrl'))
    if note:
        lines += ['', f'*{note}.*']
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.common_arguments(parser, seconds=1.0, repeats=5, quick_seconds=0.3)
    parser.add_argument('--sizes', type=int, nargs='+', default=[8, 32], help='numbers of envs (CartPole)')
    parser.add_argument('--envs', nargs='+', choices=[*ENVS, 'atari'], default=list(ENVS),
                        help='cartpole and busy write the Vectorization section; atari (ale-py) writes its own')
    parser.add_argument('--atari-sizes', type=int, nargs='+', default=ATARI_SIZES,
                        help='numbers of envs of our pool and EnvPool in the atari rows (even numbers)')
    parser.add_argument('--envpool', help="EnvPool's venv, or its python (default: $ENVPOOL_VENV); see "
                                          'lab.bench_envpool')
    parser.add_argument('--only', nargs='+', metavar='TEXT',
                        help='only the implementations whose name contains one of these (case-insensitive), '
                             'and Serial (atari: the bound); e.g. --only pool bound')
    parser.add_argument('--cpu-clock', action='store_true',
                        help='the slow env burns CPU time instead of wall-clock time, so its CPU per step stays '
                             'the same when other processes take the cores (then CPU us/step and the 2-core '
                             'ceiling are the figures to read, not steps/s); leaves PufferLib 3.0 out, whose '
                             'copy of the env burns wall-clock time')
    args = bd.parse(parser, argv)
    if any(n < 2 or n % 2 for n in args.atari_sizes):
        parser.error('--atari-sizes must be even numbers of envs (a pool returns half of them)')
    cartpole_envs = [env for env in args.envs if env in ENVS]
    # A partial run does not replace a whole section: each section is written only from all of its rows.
    write_vector = not args.no_write and cartpole_envs == list(ENVS) and args.sizes == [8, 32] \
        and not args.only and not args.cpu_clock
    write_atari = not args.no_write and not args.only and args.atari_sizes == ATARI_SIZES
    envpool_python, envpool_note = bd.find_envpool(args.envpool)  # a wrong path fails now, before any round
    cores = pv.cpu_count()
    status = 0
    if cartpole_envs:
        status = max(status, cartpole_part(args, cartpole_envs, cores, write_vector))
    if 'atari' in args.envs:
        require('ale_py', 'atari')
        require('cv2', 'atari')
        envpool = bd.PeerProcess(envpool_python, ENVPOOL_MODULE, label='EnvPool') if envpool_python else None
        loads = [os.getloadavg()[0]]
        try:
            table, checks, notes = atari_section(args, cores, envpool)
        finally:
            if envpool:
                envpool.close()
        loads.append(os.getloadavg()[0])
        import ale_py
        import stable_baselines3
        versions = [f'ale-py {ale_py.__version__}', f'gymnasium {gymnasium.__version__}',
                    f'stable-baselines3 {stable_baselines3.__version__}', f'pufferlib {pufferlib.__version__}']
        if envpool:
            versions.append(f'envpool {envpool.about["envpool"]} (its own venv: numpy {envpool.about["numpy"]}, '
                            f'gymnasium {envpool.about["gymnasium"]})')
        text = render_atari(table, checks, notes, args, versions, loads, envpool_note)
        print(text)
        if write_atari:
            path = bd.update_section('vector_atari', 'Vectorization: Atari', text, benchdoc.DOC)
            print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
        status = max(status, 0 if all(value >= needed for _, value, needed in checks) else 1)
    return status


def cartpole_part(args, envs, cores, write):
    """The CartPole rows, the emulation overhead and the wake-up latency: the Vectorization section."""
    if args.cpu_clock:
        python, note = None, ('the slow env burns CPU time (--cpu-clock); PufferLib 3.0 not measured: its copy '
                              'burns wall-clock time')
    else:
        python, note = bd.find_anchor(args.anchor)
    anchor = bd.PeerProcess(python, benchdoc.ANCHOR) if python else None
    tables, checks = [], []
    try:
        for env_key in envs:
            rows, notes = [], []
            for num_envs in args.sizes:
                section_rows, section_checks, section_notes = vector_section(env_key, num_envs, args, cores, anchor)
                rows += section_rows
                checks += section_checks
                notes += section_notes
            tables.append((ENVS[env_key][2], rows, notes))
    finally:
        if anchor:
            anchor.close()
    overhead = emulation_overhead(args.seconds, args.repeats)
    wakeups = None
    if 'busy' in envs:  # what the slow-env row's parent pays per wake-up
        wakeups = bd.interleaved(['blocked on a semaphore'], args.repeats,
                                 lambda name: wakeup_latency(args.seconds, cores))
    checks.append(('emulation overhead per step (us), Dict obs: 10 / measured',
                   10 / max(overhead[1] - overhead[0], 1e-9), 1.0))
    text = render(tables, checks, overhead, wakeups, args, note, anchor.about if anchor else None)
    print(text)
    if write:
        path = bd.update_section('vector', 'Vectorization', text, benchdoc.DOC)
        print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
    return 0 if all(value >= needed for _, value, needed in checks) else 1

if __name__ == '__main__':
    sys.exit(bd.run_main(main))
