#!/usr/bin/env python
"""Compare variants of our PSRO on a busy machine: exploitability against CPU seconds, and where they go.

Wall-clock seconds mean nothing while other jobs share the cores, so this measures each league
iteration's CPU time (process time; torch on one thread; the local backend, so that every task runs in
this process) and takes the OpenSpiel referee's exploitability every third iteration (not counted).
Run one variant per process, at any niceness, side by side, then tabulate:

    nice -n 19 .venv/bin/python -m lab.research.psro_variants run --game leduc --budget 200 \\
        --league.response-init fresh > fresh.jsonl
    nice -n 19 .venv/bin/python -m lab.research.psro_variants run --game leduc --budget 200 > features.jsonl
    .venv/bin/python -m lab.research.psro_variants table "features=features.jsonl" "fresh=fresh.jsonl"

Config flags after the options change the variant (the rest comes from pufferlib/config/puffer_<game>.toml).
`run` prints one JSON line per iteration: iteration, CPU seconds so far, PPO steps so far,
exploitability (NaN when not measured), the response's rounds and exact gain, the meta-strategy's
support, and the CPU seconds spent so far in each part of an iteration (PPO, the response's exact gain,
evaluation, meta-solver...). The wall-clock benchmark is scripts/lab/bench_league.py.
"""
import argparse
import contextlib
import json
import math
import sys
import tempfile
import time

MARKS = (15, 30, 60, 90, 120, 180, 240)
# Where an iteration's CPU time goes: functions of pufferlib.league.tasks (parts of the response task) and
# methods of League (the driver's work).
TASK_PARTS = ('train_response', 'response_gain')
DRIVER_PARTS = ('evaluate', 'output_weights', 'save_policy', 'write_views')
PARTS = TASK_PARTS + DRIVER_PARTS


@contextlib.contextmanager
def timed_parts(spent: dict):
    """Add each part's process time to spent[part] while inside; the originals are put back after."""
    from pufferlib import league
    from pufferlib.league import tasks
    originals = []
    for name in PARTS:
        owner = tasks if name in TASK_PARTS else league.League
        method = getattr(owner, name)

        def wrapper(*args, _method=method, _name=name, **kwargs):
            start = time.process_time()
            try:
                return _method(*args, **kwargs)
            finally:
                spent[_name] += time.process_time() - start
        originals.append((owner, name, method))
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for owner, name, method in originals:
            setattr(owner, name, method)


def run(game, budget, flags, out=sys.stdout):
    import numpy as np
    import torch

    from pufferlib import league
    torch.set_num_threads(1)
    spent = dict.fromkeys(PARTS, 0.0)
    with tempfile.TemporaryDirectory() as root, timed_parts(spent):
        lg = league.League(league.create(f'puffer_{game}', ['--league.method', 'psro', '--league.iterations',
                                                             '1000000', *flags, '--league.backend', 'local'],
                                         root=root))
        lg.open()
        try:
            lg.iterate(referee=False)  # the untrained start, as in bench_league.py (not timed there either)
            spent.update(dict.fromkeys(PARTS, 0.0))
            cpu, steps, count = 0.0, 0, 0
            while cpu < budget:
                start = time.process_time()
                record = lg.iterate(referee=False)
                cpu += time.process_time() - start
                steps += record['steps']
                count += 1
                exploit = lg.exploitability(lg.names, lg.networks, lg.output) if count % 3 == 0 else math.nan
                print(json.dumps({'it': record['iteration'], 'cpu': round(cpu, 1), 'steps': steps, 'expl': exploit,
                                  'rounds': record.get('response_rounds'), 'gain': record.get('response_gain'),
                                  'support': int((np.array(record['meta']) > 0).sum()),
                                  'spent': {k: round(v, 1) for k, v in spent.items()}}), file=out, flush=True)
        finally:
            lg.close()


def table(pairs):
    lines = ['| variant | ' + ' | '.join(f'{m} s' for m in MARKS) + ' | CPU s to 0.5 | iterations | PPO share |',
             '|---|' + '---:|' * (len(MARKS) + 3)]
    for pair in pairs:
        label, _, path = pair.partition('=')
        rows = []
        with open(path) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:  # a line cut by a killed run
                    pass
        if not rows:
            lines.append(f'| {label} | no iteration finished |' + ' |' * (len(MARKS) + 2))
            continue
        measured = [(r['cpu'], r['expl']) for r in rows if not math.isnan(r['expl'])]
        cells = []
        for mark in MARKS:
            before = [e for c, e in measured if c <= mark]
            cells.append(f'{before[-1]:.2f}' if before and rows[-1]['cpu'] >= mark else '')
        hit = [c for c, e in measured if e <= 0.5]
        last = rows[-1]
        share = last['spent']['train_response'] / max(last['cpu'], 1e-9)
        lines.append(f'| {label} | ' + ' | '.join(cells) + f' | {hit[0] if hit else "-"} | {last["it"]} '
                     f'({last["cpu"]:.0f} s) | {share:.0%} |')
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    one = sub.add_parser('run', help='one variant; config flags after the options')
    one.add_argument('--game', default='leduc', choices=['kuhn', 'leduc'])
    one.add_argument('--budget', type=float, default=200.0, help='CPU seconds of league iterations')
    many = sub.add_parser('table', help='tabulate LABEL=FILE outputs of `run`')
    many.add_argument('pairs', nargs='+')
    args, flags = parser.parse_known_args(argv)
    if args.command == 'run':
        run(args.game, args.budget, flags)
    else:
        if flags:
            parser.error(f'unrecognized arguments: {" ".join(flags)}')
        print(table(args.pairs))
    return 0


if __name__ == '__main__':
    sys.exit(main())
