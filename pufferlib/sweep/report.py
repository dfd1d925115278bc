"""The report (`puffer sweep --report DIR`): the trial table, and PNGs of score against cost with the
Pareto front and of score against each swept key."""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pufferlib.sweep.driver import Printer, Sweep
from pufferlib.sweep.ledger import Record, SweepError, Trials, seed_scores, trials_of
from pufferlib.sweep.methods import pareto_front
from pufferlib.sweep.space import short


def report(path: str, printer: Printer | None = None) -> list[str]:
    """Print the trial table; write pareto.png (score vs cost, Pareto front) and params.png; return their paths."""
    sweep = Sweep(path)
    trials = trials_of(sweep.ledger.read())
    if not trials:
        raise SweepError(f'the sweep {path} has no trials yet; run it with `puffer sweep --resume {path}`')
    table = _table(sweep, trials)
    console = Console()
    if not console.is_terminal:  # a file or a pipe: wide enough for every column, not rich's 80
        console = Console(width=max(120, 16 * (8 + len(sweep.space))))
    if printer is None:
        console.print(table)
    else:
        with console.capture() as capture:
            console.print(table)
        printer(capture.get())
    return plot_sweep(sweep, trials)


def _table(sweep: Sweep, trials: Trials) -> Table:
    """One row a trial: its status, score, the mean and spread over its seeds, cost, steps and values."""
    best = sweep.best(trials)
    table = Table(title=f'sweep {sweep.env} ({sweep.settings["method"]}, goal: {sweep.settings["goal"]})',
                  caption='score: the trial\'s own run; seeds, mean, spread: over its run and its confirmation runs '
                          '(other seeds), spread = max - min; * = best.toml')
    for column in ('trial', 'status', 'score', 'seeds', 'mean', 'spread', 'cost (' + sweep.settings['cost'] + ')',
                   'steps', *sweep.space.names):
        table.add_column(column, justify='right' if column != 'status' else 'left')
    for k, t in trials.items():
        start, end = t['starts'][-1], t['end']
        scores, failed = seed_scores(t)
        confirmed = len(scores) + failed > 1
        seeds = ([f'{len(scores)}' + (f' ({failed} failed)' if failed else ''),
                  f'{np.mean(scores):.4g}' if scores else '', f'{np.ptp(scores):.4g}' if scores else '']
                 if confirmed else ['1', '', ''])
        if end is None:
            row = [str(k), 'killed: reruns on resume' if t.get('killed') else 'unfinished', '', '', '', '', '', '']
        elif end['status'] == 'ok':
            row = [str(k) + (' *' if best and best[0] == k else ''), 'ok', f'{end["score"]:.4g}', *seeds,
                   f'{end["cost"]:.4g}', f'{end["steps"]:,}']
        else:
            row = [str(k), 'failed: ' + end['error'].splitlines()[0][:60], '', '', '', '', '', f'{end["steps"]:,}']
        table.add_row(*row, *[short(start['values'][name]) for name in sweep.space.names])
    return table


def plot_sweep(sweep: Sweep, trials: Trials) -> list[str]:
    """pareto.png and params.png in the sweep directory; returns their paths."""
    plt = _pyplot()
    ok = [(k, t['starts'][-1], t['end']) for k, t in trials.items() if t['end'] and t['end']['status'] == 'ok']
    if not ok:
        raise SweepError(f'the sweep {sweep.path} has no successful trial to plot yet')
    pareto_png = _plot_pareto(plt, sweep, ok)
    params_png = _plot_params(plt, sweep, ok)
    return [pareto_png, params_png]


def _pyplot() -> Any:
    # matplotlib is the train extra: imported here so that the package (the trial subprocess, the
    # driver) loads without it
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _plot_pareto(plt: Any, sweep: Sweep, ok: list[tuple[int, Record, Record]]) -> str:
    label = ok[0][2]['metric']
    points = np.array([p for _, _, end in ok for p in end['curve']])
    finals = np.array([[end['cost'], end['score']] for _, _, end in ok])
    front = pareto_front(sweep.sign * points[:, 2], points[:, 1])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(points[:, 1], points[:, 2], s=8, color='0.75', label='curve points')
    ax.scatter(finals[:, 0], finals[:, 1], s=24, c=[k for k, _, _ in ok], cmap='viridis', label='trials (by number)')
    ax.step(points[front, 1], points[front, 2], where='post', color='tab:red', label='Pareto front')
    ax.set_xscale('log')
    ax.set_xlabel(f'cost ({sweep.settings["cost"]})')
    ax.set_ylabel(label)
    ax.set_title(f'{sweep.env}: score against cost')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    pareto_png = os.path.join(sweep.path, 'pareto.png')
    fig.savefig(pareto_png, dpi=110)
    plt.close(fig)
    return pareto_png


def _plot_params(plt: Any, sweep: Sweep, ok: list[tuple[int, Record, Record]]) -> str:
    label = ok[0][2]['metric']
    finals = np.array([[end['cost'], end['score']] for _, _, end in ok])
    n = len(sweep.space)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, param in zip(axes.flat, sweep.space.params):
        ax.scatter([start['values'][param.name] for _, start, _ in ok], finals[:, 1], s=16,
                   c=[k for k, _, _ in ok], cmap='viridis')
        if param.distribution in ('log', 'pow2'):
            ax.set_xscale('log')
        elif param.distribution == 'logit':
            ax.set_xscale('logit')
        ax.set_xlabel(param.name)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis('off')
    fig.tight_layout()
    params_png = os.path.join(sweep.path, 'params.png')
    fig.savefig(params_png, dpi=110)
    plt.close(fig)
    return params_png
