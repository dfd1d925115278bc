#!/usr/bin/env python
"""Where the time of a training epoch goes: puffer_breakout on the CPU, from `puffer train --profile`.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_profile
    .venv/bin/python -m lab.bench_profile --quick          # one short round, no doc update

Each run is the command users run, `puffer train puffer_breakout --profile --quiet --train.device cpu
--train.torch-threads T --train.total-timesteps N` (breakout's own config otherwise), in a scratch
experiments folder; the figures are read from the profile.json it writes. The runs alternate
between torch thread counts (round 1: 1 thread, 2 threads; round 2: again; ...), so a slow stretch
of this shared machine hits both alike. It prints, per thread count, the median steps/s over the
rounds, every round and the spread, then the median of each phase, and writes the "profile" section
of docs/benchmarks.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

from lab import benchdoc
from lab import benchmark as bd

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')


def profile_run(threads, steps):
    """One training run by the CLI; the profile.json it wrote."""
    command = bd.profile_command(threads, steps)
    scratch = tempfile.mkdtemp(prefix='puffer-bench-profile-')
    try:
        env = {**os.environ, 'PUFFER_EXPERIMENTS': scratch}
        done = subprocess.run([PUFFER, *command[1:]], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise bd.PeerError(f'`{" ".join(command)}` failed (exit {done.returncode}):\n{done.stderr[-2000:]}')
        (run,) = os.listdir(scratch)
        with open(os.path.join(scratch, run, 'profile.json')) as f:
            report = json.load(f)
        print(f'  {threads} torch threads: {report["steps_per_s"]:,.0f} steps/s over {report["epochs"]} epochs',
              file=sys.stderr, flush=True)
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--epochs', type=int, default=30, help='epochs per training run (65,536 steps each)')
    parser.add_argument('--repeats', type=int, default=3, help='interleaved rounds; medians are reported')
    parser.add_argument('--threads', default='1,2', help='torch thread counts to compare (default 1,2)')
    parser.add_argument('--quick', action='store_true', help='one round of 3 epochs, no doc update')
    parser.add_argument('--no-write', action='store_true', help='print only; leave docs/benchmarks.md alone')
    parser.add_argument('--raw', help='also save every run\'s profile.json here (one JSON file)')
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs, args.repeats, args.no_write = 3, 1, True
    if args.repeats < 1 or args.epochs < 1:
        parser.error('--repeats and --epochs must be at least 1')
    counts = [int(t) for t in args.threads.split(',')]
    steps = args.epochs * bd.profile_epoch_steps()
    where = bd.machine([f'torch {torch.__version__}'])
    reports = bd.interleaved(counts, args.repeats, lambda t: profile_run(t, steps))
    if args.raw:
        with open(args.raw, 'w') as f:
            json.dump({str(t): r for t, r in reports.items()}, f)
    text = bd.profile_section(reports, args.repeats, steps, where)
    print(text)
    if not args.no_write:
        path = bd.update_section('profile', f'Where the time goes ({bd.PROFILE_ENV}, CPU)', text, benchdoc.DOC)
        print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
