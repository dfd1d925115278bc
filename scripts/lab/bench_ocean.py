#!/usr/bin/env python
"""Ocean throughput: agent steps per second of every Ocean env on one core, ours and PufferLib 3.0's.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_ocean [--anchor DIR]
    .venv/bin/python -m lab.bench_ocean --quick            # one short round, no doc update
    .venv/bin/python -m lab.bench_ocean --only snake pong  # some envs, no doc update

Each env runs as one vectorized object of about 4096 agent rows in one process, stepped with random
actions drawn ahead of time (pufferlib.ocean.tools.bench), so the figure is the env's own speed.
PufferLib 3.0's counterpart (OCEAN_PEERS in scripts/lab/benchmark.py) runs the same loop over the same
number of rows in the anchor's venv (scripts/lab/bench_anchor.py), at its own defaults and, where they
differ, at settings that match ours (or, where 3.0 has no such setting, ours at 3.0's:
OCEAN_OURS_MATCHED). Gymnasium's CartPole-v1 (Python, one env) is cartpole's third peer, and the crafter
package's crafter.Env (Python, one env) craftax's.
Rounds are interleaved (ours, 3.0 defaults, 3.0 matched, ours, ...); medians, every round and the
spread are printed. The table goes into docs/benchmarks.md under this machine's CPU model (section()), beside
the tables other machines wrote.
"""
import argparse
import os
import re
import sys
import time

import gymnasium
import numpy as np

from pufferlib import ocean
from pufferlib.ocean import tools

from lab import benchdoc
from lab import benchmark as bd


def gymnasium_cartpole(seconds):
    """Gymnasium's Python CartPole-v1, one env on one core, the same pre-drawn actions."""
    env = gymnasium.make('CartPole-v1')
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, 256).tolist()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        steps += len(actions)
    return steps / (time.perf_counter() - start)


def crafter_python(seconds):
    """The crafter package's crafter.Env, one env on one core, random actions: one whole episode a round,
    its reset included (a reset makes a world, most of crafter's time as it is of ours), or its reset and
    `seconds` of steps where the episode runs longer."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # crafter imports gym, which warns on import
        import crafter
    actions = np.random.default_rng(0).integers(0, 17, 256).tolist()
    env = crafter.Env(seed=0)
    steps, start = 0, time.perf_counter()
    env.reset()
    stepping, done = time.perf_counter(), False
    while not done and time.perf_counter() - stepping < seconds:
        _, _, done, _ = env.step(actions[steps % len(actions)])
        steps += 1
    return steps / (time.perf_counter() - start)


def contenders(name, anchor):
    """(label, measure(seconds)) for one env: ours first, then its peers."""
    out = [('ours', lambda s: tools.bench(name, seconds=s))]
    if anchor and name in bd.OCEAN_PEERS:
        peer, matched, _ = bd.OCEAN_PEERS[name]
        out.append(('3.0 defaults', lambda s: anchor.ask('ocean', env=peer, kwargs={}, rows=tools.BENCH_ROWS,
                                                          seconds=s)['sps']))
        if matched:
            out.append(('3.0 matched', lambda s: anchor.ask('ocean', env=peer, kwargs=matched,
                                                             rows=tools.BENCH_ROWS, seconds=s)['sps']))
        if name in bd.OCEAN_OURS_MATCHED:  # 3.0 cannot be set to our game, so ours is set to 3.0's
            out.insert(1, ('ours matched', lambda s: tools.bench(name, seconds=s, **bd.OCEAN_OURS_MATCHED[name])))
    if name == 'cartpole':
        out.append(('Gymnasium CartPole-v1', gymnasium_cartpole))
    if name == 'craftax':
        out.append(('crafter.Env', crafter_python))
    return out


def measure(names, args, anchor):
    results = {}
    for name in names:
        table = dict(contenders(name, anchor))
        results[name] = bd.interleaved(list(table), args.repeats, lambda label, table=table: table[label](args.seconds))
        line = '  '.join(f'{label} {bd.si(bd.median(runs))}' for label, runs in results[name].items())
        print(f'  {name:<12} {line}', file=sys.stderr, flush=True)
    return results


def section():
    """The doc section this machine writes: one per CPU model. The targets are steps per second on one core,
    and the same loops (3.0's too) run up to 3.5x slower on some machines CI lends than on others, so a run
    on one machine must not overwrite the table another measured."""
    cpu = bd.cpu_name()
    slug = re.sub(r'[^a-z0-9]+', '-', cpu.lower().replace('(r)', '').replace('(tm)', '')).strip('-')
    return f'ocean-{slug}', f'Ocean environments on {cpu}'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.common_arguments(parser, seconds=1.0, repeats=5, quick_seconds=0.3)
    parser.add_argument('--only', nargs='*', help='measure only these envs (bare names); implies --no-write')
    args = bd.parse(parser, argv)
    names = [n for n in ocean.ENVS if not args.only or n in args.only]
    if args.only and len(names) != len(args.only):
        parser.error(f'unknown env in --only {args.only}; Ocean envs: {", ".join(ocean.ENVS)}')
    python, note = bd.find_anchor(args.anchor)
    anchor = bd.PeerProcess(python, benchdoc.ANCHOR) if python else None
    try:
        results = measure(names, args, anchor)
    finally:
        if anchor:
            anchor.close()
    text = bd.ocean_section(results, args.repeats, args.seconds, note, anchor.about if anchor else None)
    print(text)
    if not args.no_write and not args.only:
        name, heading = section()
        path = bd.update_section(name, heading, text, benchdoc.DOC)
        print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
