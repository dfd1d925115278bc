"""The real sweep of scripts/lab/results/sweeps.md: Protein against random search on an Ocean env, same time budget.

    python -m lab.research.sweep_experiment --write-docs          # the full run (about 1h45 on 2 idle cores)
    python -m lab.research.sweep_experiment --budget-minutes 2 --steps 131072 --seeds 1  # a check of the pipeline

1. `puffer sweep ENV --sweep.method protein --sweep.max-hours BUDGET` over the default [sweep] keys plus
   train.total_timesteps (log, from STEPS/8 to STEPS): Protein may buy information with short runs.
2. The same with `--sweep.method random` (same space, same budget, same base config).
3. The defaults (STEPS steps) and each sweep's best.toml are trained on fresh seeds (not the sweeps'
   seed 0), interleaved seed by seed so a change in machine load touches every config alike.
4. A table of final scores (the sweep's own score: the metric's mean over the last tenth of training):
   per seed, the mean, and the margin over the defaults against the seed spread (SPREAD below).
   Printed, saved as results.json, and with --write-docs put in scripts/lab/results/sweeps.md.
Everything runs through the `puffer` command, as a user would; hold the benchmark lock while it runs:
    flock /tmp/puffer-bench.lock nice -n 5 python -m lab.research.sweep_experiment --write-docs
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

from pufferlib import sweep
from lab import RESULTS
from lab.benchmark import update_section

DOC = os.path.join(RESULTS, 'sweeps.md')

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')


def run(args, env, log):
    start = time.time()
    with open(log, 'a') as f:
        f.write(f'\n$ {" ".join(args)}\n')
        f.flush()
        out = subprocess.run(args, env=env, stdout=f, stderr=subprocess.STDOUT)
    if out.returncode != 0:
        raise SystemExit(f'{" ".join(args)} failed (exit {out.returncode}); see {log}')
    return time.time() - start


SPREAD = ('seed spread = the larger of the two configs\' max-min ranges over the fresh seeds (the defaults\' '
          'own range on their row); pooled std = sqrt of the mean of the two configs\' sample variances. With '
          '3 seeds a range is about 1.7 std, and the margin of two 3-seed means has a standard error of '
          'std * sqrt(2/3) = 0.82 std: a margin above the spread is above about 2 standard errors')


def spread(values, defaults):
    """(seed spread, pooled std) of a config's scores against the defaults' on the same seeds (SPREAD)."""
    values, defaults = np.asarray(values, dtype=float), np.asarray(defaults, dtype=float)
    pooled = (float(np.sqrt((np.var(values, ddof=1) + np.var(defaults, ddof=1)) / 2)) if len(values) > 1
              else float('nan'))
    return float(max(np.ptp(values), np.ptp(defaults))), pooled


def final_score(run_dir):
    rows = sweep.read_rows(run_dir)
    metric = sweep.pick_metric(rows)
    curve = sweep.downsample(rows, metric)
    return (curve[-1][2] if curve else float('nan')), metric


def newest(folder, prefix):
    runs = [os.path.join(folder, d) for d in os.listdir(folder) if d.startswith(prefix)]
    return max(runs, key=os.path.getmtime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--env', default='puffer_breakout')
    parser.add_argument('--steps', type=int, default=20_000_000,
                        help='the defaults\' training steps (STEPS; 20M is the Ocean default)')
    parser.add_argument('--budget-minutes', type=float, default=45.0, help='each sweep\'s wall-clock budget')
    parser.add_argument('--seeds', type=int, default=3, help='fresh seeds for the retraining')
    parser.add_argument('--parallel', type=int, default=1, help='--sweep.parallel for both sweeps')
    parser.add_argument('--out', default=None, help='folder for sweeps, runs and results (default experiments/...)')
    parser.add_argument('--write-docs', action='store_true', help='put the table into scripts/lab/results/sweeps.md')
    args = parser.parse_args()

    stamp = f'{datetime.datetime.now():%Y%m%d-%H%M%S}'
    out = os.path.abspath(args.out or os.path.join('experiments', f'sweep_experiment-{stamp}'))
    os.makedirs(out, exist_ok=True)
    env = {**os.environ, 'PUFFER_EXPERIMENTS': out}
    log = os.path.join(out, 'commands.log')
    space = os.path.join(out, 'space.toml')
    with open(space, 'w') as f:  # the default keys, plus the run length
        f.write(f'[sweep.train.total_timesteps]\ndistribution = "log"\nmin = {args.steps // 8}\nmax = {args.steps}\n')
    base = ['--train.total-timesteps', str(args.steps)]
    print(f'{args.env}: {args.steps:,} steps per default run, {args.budget_minutes:g}-minute sweeps, '
          f'{args.seeds} seeds; everything in {out}', flush=True)

    sweeps = {}
    for method in ('protein', 'random'):
        run([PUFFER, 'sweep', args.env, '--config', space, *base, '--sweep.method', method,
             '--sweep.max-hours', str(args.budget_minutes / 60), '--sweep.max-trials', '10000',
             '--sweep.parallel', str(args.parallel), '--quiet'], env, log)
        path = newest(os.path.join(out, 'sweeps'), f'{args.env}-')
        records = sweep.Ledger(os.path.join(path, 'trials.jsonl')).read()
        finished = [r for r in records if r['type'] == 'end']
        best = sweep.Sweep(path).best()
        seeds = sweep.seed_scores(sweep.trials_of(records)[best[0]])[0] if best else []
        sweeps[method] = {'path': path, 'trials': len(finished), 'failed': sum(r['status'] != 'ok' for r in finished),
                          'best_trial': best[0] if best else None,
                          'best_sweep_score': best[2]['score'] if best else None,
                          'best_sweep_seeds': seeds,
                          'best_values': best[1]['values'] if best else None}
        print(f'  {method}: {len(finished)} trials, best sweep score '
              f'{sweeps[method]["best_sweep_score"]}', flush=True)

    configs = {'defaults': base}
    for method, info in sweeps.items():
        if info['best_trial'] is not None:
            configs[f'{method} best'] = ['--config', os.path.join(info['path'], 'best.toml')]
    scores = {name: [] for name in configs}
    metric = None
    for seed in range(101, 101 + args.seeds):  # fresh seeds: the sweeps trained with seed 0
        for name, flags in configs.items():
            run([PUFFER, 'train', args.env, *flags, '--train.seed', str(seed), '--quiet'], env, log)
            score, metric = final_score(newest(out, f'{args.env}-'))
            scores[name].append(score)
            print(f'  seed {seed} {name}: {score:.4g}', flush=True)

    table = render(args, sweeps, scores, metric)
    print(table)
    with open(os.path.join(out, 'results.json'), 'w') as f:
        json.dump({'args': vars(args), 'sweeps': sweeps, 'scores': scores, 'metric': metric}, f, indent=1)
    if args.write_docs:
        write_docs(table, ' '.join(sys.argv[1:]))


def render(args, sweeps, scores, metric):
    defaults = np.array(scores['defaults'])
    lines = [f'{args.env}, {metric} at the end of training (the mean over its last tenth); '
             f'{args.budget_minutes:g}-minute sweeps on {os.cpu_count()} cores; retrained on seeds '
             f'{", ".join(str(s) for s in range(101, 101 + args.seeds))}:', '',
             '| config | trials in the budget | best in the sweep (mean over its seeds) | ' +
             ' | '.join(f'seed {s}' for s in range(101, 101 + args.seeds)) +
             ' | mean | margin over defaults | seed spread | pooled std |',
             '|---|---|---|' + '---|' * args.seeds + '---|---|---|---|']
    for name, values in scores.items():
        values = np.array(values)
        method = name.split()[0]
        info = sweeps.get(method, {})
        trials = f'{info["trials"]} ({info["failed"]} failed)' if info else '-'
        seeds = info.get('best_sweep_seeds') or []
        over = f' ({np.mean(seeds):.4g} over {len(seeds)})' if len(seeds) > 1 else ''
        best = (f'{info["best_sweep_score"]:.4g}' + over
                if info.get('best_sweep_score') is not None else '-')
        seed_spread, pooled = spread(values, defaults)
        margin = values.mean() - defaults.mean()
        verdict = ' (> spread)' if margin > seed_spread else ' (< spread)'
        margin_text = '-' if name == 'defaults' else f'{margin:+.4g}{verdict}'
        lines.append(f'| {name} | {trials} | {best} | ' + ' | '.join(f'{v:.4g}' for v in values) +
                     f' | {values.mean():.4g} | {margin_text} | {seed_spread:.4g} | {pooled:.4g} |')
    lines += ['', SPREAD + '.']
    for method, info in sweeps.items():
        if info['best_values']:
            lines.append('')
            lines.append(f'{method} best (trial {info["best_trial"]}): ' +
                         ', '.join(f'{k} = {v:.4g}' if isinstance(v, float) else f'{k} = {v}'
                                   for k, v in info['best_values'].items()))
    return '\n'.join(lines)


def write_docs(text, argv):
    body = f'`python -m lab.research.sweep_experiment {argv}`\n\n{text}'
    path = update_section('sweep_experiment', 'A real sweep', body, path=DOC)
    print(f'wrote {path}')

if __name__ == '__main__':
    main()
