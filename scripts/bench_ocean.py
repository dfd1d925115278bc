#!/usr/bin/env python
"""Ocean throughput: one table, single core, random actions, agent steps per second.

    flock -x /tmp/puffer-cpu.lock .venv/bin/python scripts/bench_ocean.py [--seconds 1] [--repeats 3] [--no-write]

Each env runs as one vectorized object of about 4096 agent rows in this process (pufferlib.ocean
.tools.bench): random actions come from a pre-drawn pool, so the figure is the env's own speed.
The median of `repeats` runs is reported. "bar" is what the public PufferLib 3.0 build measured on
one of our 2-core machines for the comparable env (from issue 3); "target" is our requirement:
sanity envs >= 10M, games >= 2M, and pong/breakout/snake at least their bar.

The table replaces the part of docs/benchmarks.md between <!-- ocean:start --> and <!-- ocean:end -->
(the file and markers are created if missing; the rest of the file is left alone).
"""
import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import gymnasium
import numpy as np

from pufferlib import ocean
from pufferlib.ocean import tools

from benchdoc import update_section

BARS = {'squared': 50e6, 'cartpole': 20e6, 'pong': 4.4e6, 'breakout': 2.9e6, 'snake': 2.8e6}
# issue 16: the public suite's figure on our machine kind (bar) and our target, per env
BARS.update(enduro=1.54e6, tetris=2.80e6, rware=12.04e6)
WAVE2_TARGETS = {'enduro': 1.6e6, 'tetris': 3e6, 'rware': 12e6}
SANITY_TARGET, GAME_TARGET = 10e6, 2e6


def target(name):
    if name in ocean.SANITY:
        return 'sanity', SANITY_TARGET
    if name in ('pong', 'breakout', 'snake'):
        return 'game', max(GAME_TARGET, BARS[name])
    if name in WAVE2_TARGETS:
        return 'game', WAVE2_TARGETS[name]
    return ('classic' if name == 'cartpole' else 'game'), GAME_TARGET


def cpu_name():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown CPU'


def measure(seconds, repeats, only=None):
    rows = []
    for name in ocean.ENVS:
        if only and name not in only:
            continue
        runs = [tools.bench(name, seconds=seconds) for _ in range(repeats)]
        kind, goal = target(name)
        rows.append((name, kind, statistics.median(runs), BARS.get(name), goal))
        print(f'  {name:<12} {rows[-1][2] / 1e6:8.1f} M/s', file=sys.stderr, flush=True)
    return rows


def gymnasium_cartpole(seconds):
    """The peer measured in the same run: Gymnasium's Python CartPole-v1, one env on one core."""
    env = gymnasium.make('CartPole-v1')
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, 4096).tolist()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in actions[:256]:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        steps += 256
    return steps / (time.perf_counter() - start)


def table(rows, seconds, repeats, peer=None):
    m = lambda v: f'{v / 1e6:.1f}'  # noqa: E731
    lines = ['| env | kind | ours (M steps/s) | bar: PufferLib 3.0 (M/s) | ours / bar | target (M/s) | '
             'ours / target | meets target |',
             '|---|---|---:|---:|---:|---:|---:|:---:|']
    for name, kind, sps, bar, goal in rows:
        lines.append(f'| puffer_{name} | {kind} | {m(sps)} | {m(bar) if bar else "-"} | '
                     f'{f"{sps / bar:.2f}x" if bar else "-"} | {m(goal)} | {sps / goal:.2f}x | '
                     f'{"yes" if sps >= goal else "**no**"} |')
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    header = (f'Single core, random actions, agent steps per second over one vectorized env of about '
              f'{tools.BENCH_ROWS} agent rows; median of {repeats} runs of {seconds:g} s. '
              f'Measured {datetime.date.today().isoformat()} on {cpu_name()} ({cores} cores visible), '
              f'Python {platform.python_version()}, numpy {np.__version__}, -O3 build. '
              f'Reproduce: `flock -x /tmp/puffer-cpu.lock python scripts/bench_ocean.py`. '
              f'The bars come from issue 3; our envs are our own designs (observation sizes, frameskip and '
              f'arena sizes differ from PufferLib\'s), so "ours / bar" compares like-for-like tasks, not '
              f'identical code.')
    text = header + '\n\n' + '\n'.join(lines)
    ours = dict((name, sps) for name, _, sps, _, _ in rows).get('cartpole')
    if peer and ours:
        text += (f'\n\nPeer measured in the same run: Gymnasium `CartPole-v1` (Python, one env, one core) '
                 f'{peer / 1e6:.2f} M steps/s; `puffer_cartpole` (same physics, checked step by step in '
                 f'tests/test_ocean.py) {ours / 1e6:.1f} M steps/s: **{ours / peer:.0f}x**.')
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=1.0, help='length of one timed run per env')
    parser.add_argument('--repeats', type=int, default=3, help='runs per env; the median is reported')
    parser.add_argument('--only', nargs='*', help='measure only these envs (bare names); implies --no-write')
    parser.add_argument('--no-write', action='store_true', help='print the table without updating docs/benchmarks.md')
    args = parser.parse_args(argv)
    rows = measure(args.seconds, args.repeats, args.only)
    peer = statistics.median(gymnasium_cartpole(args.seconds) for _ in range(args.repeats))
    text = table(rows, args.seconds, args.repeats, peer)
    print(text)
    if not args.no_write and not args.only:
        path = update_section('ocean', 'Ocean environments', text)
        print(f'\nwrote {os.path.normpath(path)}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
