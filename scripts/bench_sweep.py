"""Synthetic sweep benchmark: trials until the best config is within 5% of the optimum, per method.

    python scripts/bench_sweep.py                      # 20 repeats, prints the table and the overhead
    python scripts/bench_sweep.py --write-docs         # ... and puts them into docs/sweeps.md

The tasks (after the synthetic tasks of the public PufferLib sweep tests): one swept parameter, a
learning rate searched over [1e-5, 1e-1] on a log scale from the default 1e-3. Its quality is
s(lr) = exp(-(log10 lr - log10 lr*)^2), where the optimum lr* sits 0.5 to 1.5 decades from the
default (drawn per repeat, the same draws for every method). A trial trains for 100 units of cost
and reports a learning curve of 10 points at costs c = 10, 20, ..., 100:
    linear      score = s(lr) * c
    log         score = s(lr) * log10(c')                c' = c * (1 + 0.2 N(0, 1)), clipped to [1, 200]
    percentile  score = s(lr) / (1 + exp(-c' / 10))      the same 20% noise on the cost
A repeat is solved at the first trial whose noise-free final score is within 5% of the optimum's
(s(lr) >= 0.95, i.e. within 0.23 decades of lr*). Every method starts from the defaults (trial 1).
Methods: Protein, pareto_genetic and random (pufferlib.sweep), and Optuna's TPE (its default
settings, 10 random start-up trials), all through the same observe/suggest interface.
"""
import argparse
import os
import sys
import time

import numpy as np

from benchdoc import update_section
from pufferlib import sweep

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs', 'sweeps.md')

TASKS = ('linear', 'log', 'percentile')
METHODS = ('protein', 'pareto_genetic', 'random', 'optuna')
CURVE_COSTS = np.arange(10, 101, 10, dtype=float)


def space():
    return sweep.Space([sweep.Param('train.learning_rate', 'log', 1e-5, 1e-1, 1e-3, integer=False)])


def quality(lr, optimum):
    return np.exp(-(np.log10(lr) - np.log10(optimum)) ** 2)


def curve(task, lr, optimum, rng):
    s = quality(lr, optimum)
    noisy = np.clip(CURVE_COSTS * (1 + 0.2 * rng.standard_normal(len(CURVE_COSTS))), 1, 200)
    if task == 'linear':
        return s * CURVE_COSTS
    if task == 'log':
        return s * np.log10(noisy)
    return s / (1 + np.exp(-noisy / 10))


def trials_to_solve(method_name, task, optimum, seed, cap):
    sp = space()
    method = sweep.make_method(method_name, sp, seed=seed)
    rng = np.random.default_rng(10_000 + seed)
    for trial in range(1, cap + 1):
        x = sp.centre if trial == 1 else method.suggest()
        lr = sp.values(x)['train.learning_rate']
        if quality(lr, optimum) >= 0.95:
            return trial
        method.observe(sweep.Observation(sp.point({'train.learning_rate': lr}), CURVE_COSTS * 10, CURVE_COSTS,
                                         curve(task, lr, optimum, rng)))
    return None


def optima(repeats, seed=0):
    rng = np.random.default_rng(seed)
    offsets = rng.uniform(0.5, 1.5, repeats) * rng.choice([-1, 1], repeats)
    return 10.0 ** (-3 + offsets)


def overhead(dims=7, trials=200, rounds=10, seed=0):
    """Protein's suggestion time in `dims` dimensions after `trials` finished trials of 10 curve points:
    (the first suggestion, which fits the kernels from scratch as after a resume; the median and the
    slowest of the next `rounds`, each after one more finished trial, as in a running sweep)."""
    import sklearn.gaussian_process  # noqa: F401  (imported once by any sweep; not part of a suggestion)
    rng = np.random.default_rng(seed)
    params = [sweep.Param(f'train.k{i}', 'linear', -1.0, 1.0, 0.0, integer=False) for i in range(dims)]
    method = sweep.Protein(sweep.Space(params), seed=seed)

    def finish_trial():
        x = rng.uniform(-1, 1, dims)
        costs = CURVE_COSTS * (1 + rng.uniform(0, 2))
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


def summarize(counts, cap):
    solved = [c for c in counts if c is not None]
    values = np.array([c if c is not None else cap + 1 for c in counts], dtype=float)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return median, q1, q3, len(solved)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=20)
    parser.add_argument('--cap', type=int, default=60, help='trials before a repeat counts as unsolved')
    parser.add_argument('--methods', default=','.join(METHODS))
    parser.add_argument('--tasks', default=','.join(TASKS))
    parser.add_argument('--write-docs', action='store_true', help='write the table into docs/sweeps.md')
    args = parser.parse_args()
    methods, tasks = args.methods.split(','), args.tasks.split(',')
    targets = optima(args.repeats)
    results = {}
    start = time.time()
    for task in tasks:
        for repeat, optimum in enumerate(targets):
            for method in methods:  # interleaved: every method sees the same optimum in turn
                results.setdefault((task, method), []).append(
                    trials_to_solve(method, task, optimum, seed=repeat, cap=args.cap))
        print(f'  {task} done ({time.time() - start:.0f} s)', file=sys.stderr)

    lines = [f'Trials until a config within 5% of the optimum ({args.repeats} repeats; median [IQR]; '
             f'unsolved after {args.cap} trials count as {args.cap + 1}):', '',
             '| task | ' + ' | '.join(methods) + ' | Protein vs best peer (median) |',
             '|---|' + '---|' * len(methods) + '---|']
    for task in tasks:
        cells, medians = [], {}
        for method in methods:
            median, q1, q3, solved = summarize(results[(task, method)], args.cap)
            medians[method] = median
            unsolved = args.repeats - solved
            cells.append(f'{median:g} [{q1:g}-{q3:g}]' + (f', {unsolved} unsolved' if unsolved else ''))
        peers = [medians[m] for m in methods if m != 'protein']
        ratio = f'{min(peers) / medians["protein"]:.2f}x fewer' if 'protein' in medians and peers else ''
        lines.append(f'| {task} | ' + ' | '.join(cells) + f' | {ratio} |')
    first, median, slowest = overhead()
    lines += ['', f'Protein overhead after 200 finished trials (10 curve points each, 7 swept keys, '
                  f'{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} while measuring): '
                  f'{median:.2f} s to suggest the next trial (median of 10, slowest {slowest:.2f} s); '
                  f'{first:.2f} s for the first suggestion of a resumed sweep (kernels fitted from scratch).']
    text = '\n'.join(lines)
    print(text)
    if args.write_docs:
        write_docs(text, ' '.join(sys.argv[1:]))


def write_docs(text, argv):
    path = update_section('bench_sweep', 'Synthetic tasks', f'`python scripts/bench_sweep.py {argv}`\n\n{text}', path=DOC)
    print(f'wrote {path}')

if __name__ == '__main__':
    main()
