#!/usr/bin/env python
"""The one command that regenerates docs/benchmarks.md, and where the benchmark programs write.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.benchdoc   # one sitting: every program
    .venv/bin/python -m lab.benchdoc --quick                                  # a short check, no doc update
    .venv/bin/python -m lab.benchdoc --short                                  # one round of short runs, written
    .venv/bin/python -m lab.benchdoc --only vector --quick                    # some programs only

A sitting with both peers takes about 55 minutes on 2 quiet cores (ocean ~3, vector ~10, training
~30, of which up to 13 are the CartPole runs to 475, each stopped at 120 s, profile ~10); the time
it took is written at the top of docs/benchmarks.md.

Every program measures its peers in the same run, interleaved: round 1 runs ours, then each peer,
round 2 again, and so on, so a slow stretch of this shared machine hits every side alike. It prints
the median of the rounds, every round's figure, the spread ((max - min) / median: the run-to-run
noise) and the ratio of medians, and writes its section of docs/benchmarks.md from that output.

Peers built outside the repository (nothing of them is committed):
- PufferLib 3.0: `ANCHOR_DIR=DIR bash ../shared/tools/pufferlib-anchor/build.sh`, then
  `--anchor DIR` or PUFFER_ANCHOR=DIR (the folder, its venv, or the venv's python).
- CleanRL: a checkout of its repository with its own venv at `.venv` (see docs/benchmarks.md), then
  `--cleanrl DIR` or CLEANRL_DIR=DIR.
A peer that is not given is skipped, and the section says so.
"""
import argparse
import os
import subprocess
import sys
import time

from lab import ROOT
from lab.benchmark import find_anchor, find_cleanrl, machine, markdown_table, run_main, update_section

DOC = os.path.join(ROOT, 'docs', 'benchmarks.md')
LOCK = '/tmp/puffer-bench.lock'
SITTING = 'flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.benchdoc'
ANCHOR = 'lab.bench_anchor'  # the PufferLib 3.0 side, run in the anchor's interpreter (benchmark.PeerProcess)


# ---------------------------------------------------------------------------------------------
# One sitting: every program, one after the other
# ---------------------------------------------------------------------------------------------

PROGRAMS = ('bench_ocean', 'bench_vector', 'bench_train', 'bench_profile')  # modules of the lab


def _part(program):
    return program[len('bench_'):]


PARTS = tuple(_part(program) for program in PROGRAMS)  # what --only takes: lab.bench_PART
# --short: one round of short runs per program, written to the doc (each section states its rounds
# and seconds): a check of the whole path, not figures to quote.
SHORT = {'bench_ocean': ['--repeats', '1', '--seconds', '0.3'],
         'bench_vector': ['--repeats', '1', '--seconds', '0.3'],
         'bench_train': ['--repeats', '1', '--seconds', '5', '--solve-seconds', '30'],
         'bench_profile': ['--repeats', '1', '--epochs', '5']}


def sitting(args):
    started, times, failed, where = time.time(), [], [], machine()
    if args.anchor:
        os.environ['PUFFER_ANCHOR'] = args.anchor
    if args.cleanrl:
        os.environ['CLEANRL_DIR'] = args.cleanrl
    # A wrong peer path fails now, not half an hour in; a missing peer is said now and in its sections.
    for _found, note in (find_anchor(), find_cleanrl()):
        if note:
            print(f'note: {note}', flush=True)
    programs = [p for p in PROGRAMS if not args.only or _part(p) in args.only]
    for program in programs:
        extra = ['--quick'] if args.quick else SHORT[program] if args.short else []
        command = [sys.executable, '-m', f'lab.{program}', *extra]
        print(f'== lab.{program}', flush=True)
        t = time.time()
        rc = subprocess.call(command)
        times.append((program, time.time() - t, rc))
        if rc not in (0, 1):  # 1: ran, but a target was missed; the table says which
            failed.append(program)
    total = time.time() - started
    rows = [[f'`lab.{p}`', f'{t / 60:.1f} min', 'ok' if rc == 0 else f'exit {rc}'] for p, t, rc in times]
    how = (' --short' if args.short else '') + (f' --only {" ".join(args.only)}' if args.only else '')
    what = 'its section' if len(programs) == 1 else 'their sections' if args.only else 'every section of this page'
    text = (f'One sitting on {where}: `{SITTING}{how}` ran the programs below one after the other and wrote '
            f'{what}; it took **{total / 60:.0f} minutes**. Each program runs alone too '
            '(its command is in its section).'
            + (' This was a short check (one round of short runs): the figures below are not for quoting.'
               if args.short else '') + '\n\n'
            + markdown_table(['program', 'wall time', 'result'], rows, 'lrl'))
    print('\n' + text)
    if args.only:  # each program wrote its own section; the sitting's section describes a whole sitting
        print('(--only: the sitting section of docs/benchmarks.md is left as it was)')
    elif not args.quick and not failed:
        update_section('sitting', 'How these figures were made', text, DOC)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='one short round of every program; no doc update')
    parser.add_argument('--short', action='store_true', help='one round of short runs, written to the doc')
    parser.add_argument('--anchor', help='PufferLib 3.0 anchor folder (default: $PUFFER_ANCHOR)')
    parser.add_argument('--cleanrl', help='CleanRL checkout with its venv (default: $CLEANRL_DIR)')
    parser.add_argument('--only', nargs='+', choices=PARTS, metavar='PART',
                        help=f'run only these programs ({", ".join(PARTS)}: lab.bench_PART); each writes '
                             'its own section, the sitting section is left alone')
    return sitting(parser.parse_args())


if __name__ == '__main__':
    sys.exit(run_main(main))
