"""The report (`puffer sweep --report DIR`): the trial table, and PNGs of score against cost with the
Pareto front and of score against each swept key."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pufferlib import invocation
from pufferlib.sweep.driver import Printer, Sweep
from pufferlib.sweep.ledger import Record, SweepError, Trials, seed_scores, trials_of
from pufferlib.sweep.methods import pareto_front
from pufferlib.sweep.space import Param, short


def report(path: str, printer: Printer | None = None) -> list[str]:
    """Print the trial table; write pareto.png (score vs cost, Pareto front) and params.png; return their paths."""
    sweep = Sweep(path)
    trials = trials_of(sweep.ledger.read())
    if not trials:
        raise SweepError(f'the sweep {path} has no trials yet; run it with '
                         f'`{invocation.command("sweep", "--resume", Path(path))}`')
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
    """One row a trial: its status, score, the mean and spread over its seeds (once any trial has been rerun
    on more seeds), cost, steps and values. Swept keys are named without their section where that is
    unambiguous, with spaces for underscores so that a header wraps instead of being cut ('trai...' was
    all of seven keys showed at 120 columns); the caption lists their full names."""
    best = sweep.best(trials)
    confirming = any(t.get('confirm') for t in trials.values())
    names = column_names(sweep.space.names)
    caption = ("score: the trial's own run; seeds, mean, spread: over its run and its confirmation runs (other "
               'seeds), spread = max - min; ' if confirming else '') + '* = best.toml; swept: ' + \
        ', '.join(sweep.space.names)
    table = Table(title=f'sweep {sweep.env} ({sweep.settings["method"]}, goal: {sweep.settings["goal"]})',
                  caption=caption)
    unit = {'seconds': 's'}.get(sweep.settings['cost'], sweep.settings['cost'])
    columns = ('trial', 'status', 'score', *(('seeds', 'mean', 'spread') if confirming else ()), f'cost ({unit})',
               'steps', *names)
    rows = []
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
        if not confirming:
            del row[3:6]
        rows.append([*row, *[short(start['values'][name]) for name in sweep.space.names]])
    for i, column in enumerate(columns):
        if column == 'status':  # the one column that wraps (an error) when the terminal is narrow
            table.add_column(column)
            continue
        # a number is never cut: its column is as wide as its widest cell, its header wraps to fit that
        cells = max((len(row[i]) for row in rows), default=0)
        table.add_column(column, justify='right', min_width=cells,
                         max_width=max(cells, *(len(word) for word in column.split())))
    for row in rows:
        table.add_row(*row)
    return table


def column_names(names: list[str]) -> list[str]:
    """Column headers of swept keys: 'learning rate' for train.learning_rate, unless another section sweeps
    a key of that name too ('env.size', 'policy.size')."""
    keys = [name.split('.', 1)[1] for name in names]
    return [(key if keys.count(key) == 1 else name).replace('_', ' ') for name, key in zip(names, keys)]


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
    fig = params_figure(plt, sweep, ok)
    params_png = os.path.join(sweep.path, 'params.png')
    fig.savefig(params_png, dpi=110)
    plt.close(fig)
    return params_png


def params_figure(plt: Any, sweep: Sweep, ok: list[tuple[int, Record, Record]]) -> Any:
    """Score against each swept key, one panel a key over its whole range, coloured by trial number (the
    colour bar is the key)."""
    from matplotlib.colors import Normalize
    from matplotlib.ticker import MaxNLocator
    label = ok[0][2]['metric']
    scores = [end['score'] for _, _, end in ok]
    numbers = [k for k, _, _ in ok]
    norm = Normalize(vmin=0, vmax=max(max(numbers), 1))
    n = len(sweep.space)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    # constrained layout leaves room for the shared colour bar, which tight_layout cannot
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols + 1, 3.2 * rows), squeeze=False, layout='constrained')
    points = None
    for ax, param in zip(axes.flat, sweep.space.params):
        points = ax.scatter([start['values'][param.name] for _, start, _ in ok], scores, s=16, c=numbers,
                            cmap='viridis', norm=norm)
        _param_axis(ax, param)
        ax.set_xlabel(param.name)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis('off')
    bar = fig.colorbar(points, ax=axes.ravel().tolist(), label='trial number (0 = the defaults)')
    bar.locator = MaxNLocator(integer=True)
    bar.update_ticks()
    return fig


def _param_axis(ax: Any, param: Param) -> None:
    """The x axis of a key's panel: its range in its own scale, with a few plain tick labels that never
    overlap (matplotlib's log axis labelled every 2, 3, 4 and 6 of a decade as 2x10^-1, side by side)."""
    from matplotlib.ticker import FixedLocator, FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter
    low, high = param.low, param.high
    if param.distribution in ('log', 'pow2'):
        ax.set_xscale('log', base=2 if param.distribution == 'pow2' else 10)
        if param.distribution == 'pow2':
            ax.xaxis.set_major_locator(LogLocator(base=2, numticks=6))
        else:  # 1-2-5 steps within two decades, decades beyond
            decades = math.log10(high / low)
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 2 else (1.0,),
                                                  numticks=7))
        ax.set_xlim(low / (high / low) ** 0.05, high * (high / low) ** 0.05)
    elif param.distribution == 'logit':
        ax.set_xscale('logit')
        marks = [m for m in (1e-4, 1e-3, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999) if low <= m <= high]
        ax.xaxis.set_major_locator(FixedLocator(marks or [low, high]))
        lo, hi = math.log(low / (1 - low)), math.log(high / (1 - high))
        pad = 0.05 * (hi - lo)
        ax.set_xlim(1 / (1 + math.exp(pad - lo)), 1 / (1 + math.exp(-hi - pad)))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(5, integer=param.integer))
        pad = 0.05 * (high - low) or 0.5
        ax.set_xlim(low - pad, high + pad)
    ax.xaxis.set_major_formatter(FormatStrFormatter('%g'))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis='x', labelrotation=30)
