#!/usr/bin/env python
"""Where the time of a training epoch goes: puffer_breakout on the CPU, from `puffer train --profile`.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python scripts/bench_profile.py
    .venv/bin/python scripts/bench_profile.py --quick          # one short round, no doc update

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

from pufferlib import config as configuration
from pufferlib.profile import LABELS, PHASES

import benchdoc
from pufferlib import benchmark as bd

ENV = 'puffer_breakout'
PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')
ROLLOUT = ('env', 'copy', 'rollout_forward')
UPDATE = ('advantage', 'update_forward', 'backward', 'optimizer')


def command(threads, steps):
    return ['puffer', 'train', ENV, '--profile', '--quiet', '--train.device', 'cpu', '--train.torch-threads',
            str(threads), '--train.total-timesteps', str(steps)]


def profile_run(threads, steps):
    """One training run by the CLI; the profile.json it wrote."""
    scratch = tempfile.mkdtemp(prefix='puffer-bench-profile-')
    try:
        env = {**os.environ, 'PUFFER_EXPERIMENTS': scratch}
        done = subprocess.run([PUFFER, *command(threads, steps)[1:]], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise bd.PeerError(f'`{" ".join(command(threads, steps))}` failed (exit {done.returncode}):\n'
                               f'{done.stderr[-2000:]}')
        (run,) = os.listdir(scratch)
        with open(os.path.join(scratch, run, 'profile.json')) as f:
            report = json.load(f)
        print(f'  {threads} torch threads: {report["steps_per_s"]:,.0f} steps/s over {report["epochs"]} epochs',
              file=sys.stderr, flush=True)
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def epoch_steps():
    """Agent steps per epoch of breakout's config: rows (vec envs x C envs per object) x horizon."""
    config = configuration.load(ENV)
    rows = config['vec']['num_envs'] * config['env'].get('num_envs', 1)
    return rows * config['train']['bptt_horizon']


def render(reports, args, steps, where):
    """reports: {threads: [profile.json of each round]}; where: bd.machine() at the start -> markdown."""
    default = torch.get_num_threads()  # what torch picks by itself: this script never changes it
    counts = list(reports)
    sps = {t: [r['steps_per_s'] for r in reports[t]] for t in counts}
    head = (f'Measured by `scripts/bench_profile.py`: {where}. Each run: '
            f'`{" ".join(command("T", steps))}` ({steps:,} agent steps, {steps // epoch_steps()} epochs of '
            f'{epoch_steps():,}; breakout\'s config: 2 worker processes, each half of the envs steps while the policy '
            f'acts on the other); median of {args.repeats} interleaved rounds; spread = (max - min) / median. '
            f'Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python scripts/bench_profile.py`.')
    base = counts[-1]
    speed_rows = [[f'{t}' + (' (torch\'s default here)' if t == default else ''), f'{bd.median(sps[t]):,.0f}',
                   bd.runs_cell(sps[t]), bd.spread_cell(sps[t]), bd.ratio_cell(bd.ratio(sps[t], sps[base]))]
                  for t in counts]
    phase_head = ['phase']
    for t in counts:
        phase_head += [f'{t} thr: ms / epoch', f'{t} thr: %', f'{t} thr: steps/s alone']
    phase_rows = []
    for name in PHASES:
        row = [LABELS[name]]
        for t in counts:
            ms = bd.median([r['phases'][name]['per_epoch_ms'] for r in reports[t]])
            pct = bd.median([r['phases'][name]['percent'] for r in reports[t]])
            alone = bd.median([r['phases'][name]['steps_per_s'] or float('nan') for r in reports[t]])
            row += [f'{ms:,.1f}', f'{pct:.1f}', '-' if alone != alone or pct < 0.5 else f'{alone:,.0f}']
        phase_rows.append(row)
    total_row = ['total (measured)']
    for t in counts:
        total_row += [f'{bd.median([1000 * r["total_s"] / r["epochs"] for r in reports[t]]):,.1f}', '100',
                      f'{bd.median(sps[t]):,.0f}']
    phase_rows.append(total_row)

    def share(t, names):
        return bd.median([sum(r['phases'][n]['percent'] for n in names) for r in reports[t]])
    best = max(counts, key=lambda t: bd.median(sps[t]))
    # The rounds alternate, so the two runs of a round saw about the same machine: their ratio is
    # less noisy than the ratio of medians when the machine's speed swings between rounds.
    paired = [a / b for a, b in zip(sps[counts[0]], sps[base], strict=True)]
    ranked = sorted(PHASES, key=lambda n: -bd.median([r['phases'][n]['percent'] for r in reports[best]]))
    lines = [head, '', bd.markdown_table(['torch threads', 'steps/s', 'rounds', 'spread', f'vs {base} threads'],
                                         speed_rows, 'lrrrr'), '',
             f'{counts[0]} / {base} threads within each round: ' + ', '.join(f'{r:.2f}x' for r in paired)
             + f'; median {bd.median(paired):.2f}x.', '',
             'Per phase, the median over the rounds (so a column need not add up to its total exactly); "steps/s '
             'alone" is the run\'s agent steps over that phase\'s seconds, the speed if it were the only cost '
             '("-" under 0.5% of the epoch).', '',
             bd.markdown_table(phase_head, phase_rows, 'l' + 'rrr' * len(counts)), '',
             f'With {best} thread{"s" if best != 1 else ""} the rollout (env wait, copies, inference) takes '
             f'{share(best, ROLLOUT):.0f}% of an epoch and the update (advantage, forward, backward, optimizer) '
             f'{share(best, UPDATE):.0f}%; the largest phases are '
             + ', '.join(f'{LABELS[n]} {bd.median([r["phases"][n]["percent"] for r in reports[best]]):.0f}%'
                         for n in ranked[:3]) + '.']
    env_wait = share(best, ('env',))
    if env_wait < 20:
        lines[-1] += (f' The trainer waits for the envs only {env_wait:.0f}% of the time: their stepping is hidden '
                      'behind the policy\'s work on the other half of the rows, so the trainer process\'s own compute '
                      '(inference, forward, backward, optimizer) bounds the speed.')
    else:
        lines[-1] += (f' The trainer waits for the envs {env_wait:.0f}% of the time: the env workers bound the '
                      'speed.')
    for t in (t for t in counts if t != best):
        ms = {n: bd.median([r['phases'][n]['per_epoch_ms'] for r in reports[t]]) for n in PHASES}
        mine = {n: bd.median([r['phases'][n]['per_epoch_ms'] for r in reports[best]]) for n in PHASES}
        grew = max(PHASES, key=lambda n: ms[n] - mine[n])
        lines.append(f'With {t} thread{"s" if t != 1 else ""}: rollout {share(t, ROLLOUT):.0f}%, update '
                     f'{share(t, UPDATE):.0f}%, env wait {share(t, ("env",)):.0f}%; {LABELS[grew]} grows most, from '
                     f'{mine[grew]:,.0f} to {ms[grew]:,.0f} ms per epoch.')
    return '\n'.join(lines)


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
    steps = args.epochs * epoch_steps()
    where = bd.machine([f'torch {torch.__version__}'])
    reports = bd.interleaved(counts, args.repeats, lambda t: profile_run(t, steps))
    if args.raw:
        with open(args.raw, 'w') as f:
            json.dump({str(t): r for t, r in reports.items()}, f)
    text = render(reports, args, steps, where)
    print(text)
    if not args.no_write:
        print(f'wrote {bd.update_section("profile", f"Where the time goes ({ENV}, CPU)", text, benchdoc.DOC)}')
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
