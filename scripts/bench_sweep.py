"""Synthetic sweep benchmark: trials (and cost) until a config within 5% of the optimum, per method.

    python scripts/bench_sweep.py                      # 20 repeats, prints the table and the overhead
    python scripts/bench_sweep.py --write-docs         # ... and puts them into docs/sweeps.md

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
and Optuna's TPE (its default settings), all through the same observe/suggest interface.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

from pufferlib.benchmark import update_section
from pufferlib import sweep

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs', 'sweeps.md')

TASKS = ('linear', 'log', 'percentile')
METHODS = ('protein', 'pareto_genetic', 'random', 'optuna')
LR, STEPS = 'train.learning_rate', 'train.total_timesteps'
STEPS_PER_COST = 50_000_000
MAX_COST = 200.0
POINTS = 5         # curve points a trial reports
TOLERANCE = 0.05   # solved: within 5% of the optimum


def space():
    return sweep.Space([sweep.Param(LR, 'log', 1e-5, 1e-1, 1e-3, integer=False),
                        sweep.Param(STEPS, 'log', 5e7, 1e10, 500_000_000, integer=True)])


def quality(lr, lr_opt):
    """The score factor of the swept key: 1 at lr_opt, falling off with the decades away from it."""
    return float(np.exp(-(np.log10(lr) - np.log10(lr_opt)) ** 2))


def cost_factor(task, cost, rng=None):
    """The task's function of cost (an array); with `rng`, under the task's 20% cost noise."""
    cost = np.asarray(cost, dtype=float)
    if task == 'linear':
        return cost
    if rng is not None:
        noise = rng.standard_normal(cost.shape)
        cost = cost * (1 + 0.2 * noise) if task == 'log' else cost - 0.2 * np.abs(noise) * cost
    cost = np.clip(cost, 1, MAX_COST)
    if task == 'log':
        return np.log10(cost)
    if task == 'percentile':
        return 1 / (1 + np.exp(-cost / 10))
    raise ValueError(f'unknown task {task!r}: one of {", ".join(TASKS)}')


def optimum(task):
    return float(cost_factor(task, MAX_COST))


def final_score(task, values, lr_opt):
    """What running this config gives at its end, without noise."""
    return quality(values[LR], lr_opt) * float(cost_factor(task, values[STEPS] / STEPS_PER_COST))


def trial(task, sp, values, lr_opt, rng):
    """The observation of one run of `values`: POINTS curve points, each with its own noise."""
    steps = values[STEPS] * np.arange(1, POINTS + 1) / POINTS
    costs = steps / STEPS_PER_COST
    scores = quality(values[LR], lr_opt) * cost_factor(task, costs, rng)
    return sweep.Observation(sp.point(values), steps, costs, scores)


def search(method_name, task, lr_opt, seed, cap):
    """(trials until solved or None, the cost spent until then or until the cap)."""
    sp = space()
    method = sweep.make_method(method_name, sp, seed=seed)
    rng = np.random.default_rng([seed, TASKS.index(task)])  # the noise; the same stream for every method
    target = (1 - TOLERANCE) * optimum(task)
    spent = 0.0
    for k in range(1, cap + 1):
        x = sp.centre if k == 1 else method.suggest()
        values = sp.values(x)
        spent += values[STEPS] / STEPS_PER_COST
        if final_score(task, values, lr_opt) >= target:
            return k, spent
        method.observe(trial(task, sp, values, lr_opt, rng))
    return None, spent


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


def spread(values):
    """(median, first quartile, third quartile); None stands for an unsolved repeat, above every number,
    and a quartile that lands on (or between) unsolved repeats is infinite."""
    unsolved = 1e18  # a stand-in that linear interpolation keeps far above any real value
    q1, median, q3 = np.percentile([unsolved if v is None else v for v in values], [25, 50, 75])
    return tuple(math.inf if q >= unsolved / 10 else float(q) for q in (median, q1, q3))


def cell(median, q1, q3, fmt, unsolved):
    """'median [q1, q3]', with `unsolved` for a quantile that is an unsolved repeat."""
    if math.isinf(median):
        return unsolved
    show = lambda v: unsolved if math.isinf(v) else format(v, fmt)  # noqa: E731
    return f'{show(median)} [{show(q1)}, {show(q3)}]'


def ratio(peer, protein):
    return 'unsolved' if math.isinf(peer) else f'{peer / protein:.2f}x'


def table(results, methods, tasks, repeats, cap):
    """The markdown table: per task and method, repeats solved, trials and cost until solved, and the
    peers' medians over Protein's."""
    lines = [f'Trials until a config within 5% of the optimum, and the cost spent until then ({repeats} repeats '
             f'per task, seeds shared by the methods, at most {cap} trials; median [IQR], a quantile that falls on an '
             f'unsolved repeat shows as such; cost unit: the shortest run, the longest costs {MAX_COST:.0f}):', '',
             '| task | method | solved | trials | cost | trials / Protein\'s | cost / Protein\'s |',
             '|---|---|---|---|---|---|---|']
    for task in tasks:
        trials = {m: spread([k for k, _ in results[(task, m)]]) for m in methods}
        costs = {m: spread([c if k is not None else None for k, c in results[(task, m)]]) for m in methods}
        for method in methods:
            solved = sum(k is not None for k, _ in results[(task, method)])
            if method == 'protein' or 'protein' not in methods:
                ratios = ['', '']
            else:
                ratios = [ratio(trials[method][0], trials['protein'][0]), ratio(costs[method][0], costs['protein'][0])]
            lines.append(f'| {task} | {method} | {solved}/{repeats} | {cell(*trials[method], "g", f">{cap}")} | '
                         f'{cell(*costs[method], ".0f", "unsolved")} | ' + ' | '.join(ratios) + ' |')
    if 'protein' in methods and len(methods) > 1:
        lines += ['', 'Target (issue 14): Protein solves every repeat of every task, with a lower median of trials '
                      'than each peer. ' + verdict(results, methods, tasks)]
    return lines


def verdict(results, methods, tasks):
    misses = []
    for task in tasks:
        runs = results[(task, 'protein')]
        if any(k is None for k, _ in runs):
            misses.append(f'{task}: {sum(k is None for k, _ in runs)} unsolved')
        mine = spread([k for k, _ in runs])[0]
        for peer in methods:
            if peer != 'protein' and spread([k for k, _ in results[(task, peer)]])[0] <= mine:
                misses.append(f'{task}: {peer} needs no more trials')
    return 'Met.' if not misses else 'Missed: ' + '; '.join(misses) + '.'


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
                              f'`python scripts/bench_sweep.py {" ".join(sys.argv[1:])}`\n\n{text}', path=DOC)
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
