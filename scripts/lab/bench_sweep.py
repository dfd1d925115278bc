"""Synthetic sweep benchmark: trials (and cost) until a config within 5% of the optimum, per method.

    python -m lab.bench_sweep                      # 20 repeats, prints the table and the overhead
    python -m lab.bench_sweep --write-docs         # ... and puts them into docs/sweeps.md

The tasks (after the synthetic tasks of the public PufferLib sweep tests). Two swept keys:
- the score key, a learning rate over [1e-5, 1e-1] (log), default 1e-3. It sets a score factor with
  one optimum, s(lr) = exp(-(log10 lr - log10 lr*)^2); lr* sits 0.5 to 1.5 decades from the default,
  drawn per repeat (the same draws for every method);
- the cost key, train.total_timesteps over [5e7, 1e10] (log), default 5e8. A run's cost is its
  length, c = steps / 5e7, from 1 to 200.
A trial's score is s(lr) times a function of its cost:
    linear      s * c
    log         s * log10(c')            c' = c * (1 + 0.2 N(0, 1)), clipped to [1, 200]
    percentile  s / (1 + exp(-c' / 10))  c' = c - 0.2 |N(0, 1)| c, clipped to [1, 200]
Each trial reports its curve at 1/5, 2/5, ..., 5/5 of its length (fresh noise at each point), and every
point is an observation for the methods that use curves (Protein, pareto_genetic); Optuna is told the
final point. The optimum is the best noise-free score over the ranges, s = 1 at c = 200. A repeat is
solved at the first trial whose final point, without noise (what running that config gives, not a
lucky draw), is within 5% of the optimum; its cost is the summed cost of the trials run until then.
Every method runs the defaults first. Methods: Protein, pareto_genetic and random (pufferlib.sweep),
and Optuna's TPE (its default settings), all through the same observe/suggest interface. The tasks,
the search and the table are in scripts/lab/synthetic_sweep.py; this script runs them and times Protein.
"""
import argparse
import os
import sys
import time

import numpy as np

from pufferlib import sweep
from lab.benchmark import update_section
from lab.synthetic_sweep import METHODS, TASKS, cost_factor, optima, search, table

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs', 'sweeps.md')


def overhead(dims=7, trials=200, rounds=10, seed=0):
    """Protein's suggestion time in `dims` dimensions after `trials` finished trials of 10 curve points:
    (the first suggestion, which fits the kernels from scratch as after a resume; the median and the
    slowest of the next `rounds`, each after one more finished trial, as in a running sweep)."""
    import sklearn.gaussian_process  # noqa: F401  (imported once by any sweep; not part of a suggestion)
    rng = np.random.default_rng(seed)
    params = [sweep.Param(f'train.k{i}', 'linear', -1.0, 1.0, 0.0, integer=False) for i in range(dims)]
    method = sweep.Protein(sweep.Space(params), seed=seed)
    curve = np.arange(1, 11, dtype=float)

    def finish_trial():
        x = rng.uniform(-1, 1, dims)
        costs = curve * (1 + rng.uniform(0, 2))
        method.observe(sweep.Observation(x, costs * 10, costs, np.exp(-np.sum((x - 0.3) ** 2)) * np.log10(costs)))

    def timed_suggest():
        start = time.perf_counter()
        method.suggest()
        return time.perf_counter() - start

    for _ in range(trials):
        finish_trial()
    first = timed_suggest()
    times = []
    for _ in range(rounds):
        finish_trial()
        times.append(timed_suggest())
    return first, float(np.median(times)), max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=20)
    parser.add_argument('--cap', type=int, default=100, help='trials before a repeat counts as unsolved')
    parser.add_argument('--methods', default=','.join(METHODS))
    parser.add_argument('--tasks', default=','.join(TASKS))
    parser.add_argument('--no-overhead', action='store_true', help='skip the overhead measurement')
    parser.add_argument('--write-docs', action='store_true', help='write the table into docs/sweeps.md')
    args = parser.parse_args()
    methods, tasks = args.methods.split(','), args.tasks.split(',')
    for task in tasks:
        cost_factor(task, 1.0)  # an unknown task name fails here, before any work
    targets = optima(args.repeats)
    results = {}
    start = time.time()
    for task in tasks:
        for repeat, lr_opt in enumerate(targets):
            for method in methods:  # interleaved: every method sees the same optimum and noise in turn
                results.setdefault((task, method), []).append(search(method, task, lr_opt, seed=repeat, cap=args.cap))
        print(f'  {task} done ({time.time() - start:.0f} s)', file=sys.stderr)

    lines = table(results, methods, tasks, args.repeats, args.cap)
    if not args.no_overhead:
        first, median, slowest = overhead()
        lines += ['', f'Protein overhead after 200 finished trials (10 curve points each, 7 swept keys, '
                      f'{os.cpu_count()} CPU cores): '
                      f'{median:.2f} s to suggest the next trial (median of 10, slowest {slowest:.2f} s); '
                      f'{first:.2f} s for the first suggestion of a resumed sweep (kernels fitted from scratch).']
    text = '\n'.join(lines)
    print(text)
    if args.write_docs:
        path = update_section('bench_sweep', 'Synthetic tasks',
                              f'`python -m lab.bench_sweep {" ".join(sys.argv[1:])}`\n\n{text}', path=DOC)
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
