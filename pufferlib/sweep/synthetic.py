"""The synthetic sweep benchmark's tasks (scripts/bench_sweep.py describes them), the search that counts
trials and cost until a method gets within 5% of the optimum, and the table of the results.

The script runs the methods and times Protein; what its numbers mean lives here, where it is checked
without running the benchmark.
"""
import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pufferlib import sweep

TASKS = ('linear', 'log', 'percentile')
METHODS = ('protein', 'pareto_genetic', 'random', 'optuna')
LR, STEPS = 'train.learning_rate', 'train.total_timesteps'
STEPS_PER_COST = 50_000_000
MAX_COST = 200.0
POINTS = 5         # curve points a trial reports
TOLERANCE = 0.05   # solved: within 5% of the optimum

# A method's repeats of a task, (trials until solved or None, cost spent), by (task, method).
Results = Mapping[tuple[str, str], Sequence[tuple[int | None, float]]]


def space() -> sweep.Space:
    return sweep.Space([sweep.Param(LR, 'log', 1e-5, 1e-1, 1e-3, integer=False),
                        sweep.Param(STEPS, 'log', 5e7, 1e10, 500_000_000, integer=True)])


def quality(lr: float, lr_opt: float) -> float:
    """The score factor of the swept key: 1 at lr_opt, falling off with the decades away from it."""
    return float(np.exp(-(np.log10(lr) - np.log10(lr_opt)) ** 2))


def cost_factor(task: str, cost: npt.ArrayLike, rng: np.random.Generator | None = None) -> np.ndarray:
    """The task's function of cost (an array); with `rng`, under the task's 20% cost noise."""
    costs = np.asarray(cost, dtype=float)
    if task == 'linear':
        return costs
    if rng is not None:
        noise = rng.standard_normal(costs.shape)
        costs = costs * (1 + 0.2 * noise) if task == 'log' else costs - 0.2 * np.abs(noise) * costs
    costs = np.clip(costs, 1, MAX_COST)
    if task == 'log':
        return np.log10(costs)
    if task == 'percentile':
        return 1 / (1 + np.exp(-costs / 10))
    raise ValueError(f'unknown task {task!r}: one of {", ".join(TASKS)}')


def optimum(task: str) -> float:
    return float(cost_factor(task, MAX_COST))


def final_score(task: str, values: Mapping[str, float], lr_opt: float) -> float:
    """What running this config gives at its end, without noise."""
    return quality(values[LR], lr_opt) * float(cost_factor(task, values[STEPS] / STEPS_PER_COST))


def trial(task: str, sp: sweep.Space, values: Mapping[str, float], lr_opt: float,
          rng: np.random.Generator) -> sweep.Observation:
    """The observation of one run of `values`: POINTS curve points, each with its own noise."""
    steps = values[STEPS] * np.arange(1, POINTS + 1) / POINTS
    costs = steps / STEPS_PER_COST
    scores = quality(values[LR], lr_opt) * cost_factor(task, costs, rng)
    return sweep.Observation(sp.point(values), steps, costs, scores)


def search(method_name: str, task: str, lr_opt: float, seed: int, cap: int) -> tuple[int | None, float]:
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


def optima(repeats: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    offsets = rng.uniform(0.5, 1.5, repeats) * rng.choice([-1, 1], repeats)
    return 10.0 ** (-3 + offsets)


def spread(values: Sequence[float | None]) -> tuple[float, float, float]:
    """(median, first quartile, third quartile); None stands for an unsolved repeat, above every number,
    and a quartile that lands on (or between) unsolved repeats is infinite."""
    unsolved = 1e18  # a stand-in that linear interpolation keeps far above any real value
    q1, median, q3 = np.percentile([unsolved if v is None else v for v in values], [25, 50, 75])
    median, q1, q3 = (math.inf if q >= unsolved / 10 else float(q) for q in (median, q1, q3))
    return median, q1, q3


def cell(median: float, q1: float, q3: float, fmt: str, unsolved: str) -> str:
    """'median [q1, q3]', with `unsolved` for a quantile that is an unsolved repeat."""
    if math.isinf(median):
        return unsolved
    show = lambda v: unsolved if math.isinf(v) else format(v, fmt)  # noqa: E731
    return f'{show(median)} [{show(q1)}, {show(q3)}]'


def ratio(peer: float, protein: float) -> str:
    return 'unsolved' if math.isinf(peer) else f'{peer / protein:.2f}x'


def table(results: Results, methods: Sequence[str], tasks: Sequence[str], repeats: int,
          cap: int) -> list[str]:
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
        lines += ['', 'Target: Protein solves every repeat of every task, with a lower median of trials '
                      'than each peer. ' + verdict(results, methods, tasks)]
    return lines


def verdict(results: Results, methods: Sequence[str], tasks: Sequence[str]) -> str:
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
