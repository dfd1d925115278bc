"""`puffer league --report DIR` (`report`): the leaderboard of a league, and plots of its ratings,
exploitability and payoff table written next to its ledger. The module is not called report.py because
importing a submodule binds its name in the package, which would hide the `report` function there.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from pufferlib import invocation
from pufferlib.arena import LeagueError
from pufferlib.league.loop import League
from pufferlib.league.payoffs import PayoffTable


def report(path: str, printer: Callable[[str], None] | None = print) -> list[str]:
    """Print the leaderboard; write ratings.png (each policy's OpenSkill ordinal over the iterations),
    exploitability.png (poker envs: against seconds of training and evaluation) and payoffs.png (the
    payoff table as a heatmap). Returns the paths written."""
    league = League(path)
    records, names, payoffs, ratings = league.state()
    if not records:
        raise LeagueError(f'the league {path} has no finished iteration yet; run it with '
                          f'`{invocation.command("league", "--resume", Path(path))}`')
    if printer is not None:
        printer(ratings.format_leaderboard())
    matplotlib.use('Agg')  # files only; chosen here, so that importing this module changes no one's backend
    title = f'{league.env} {league.settings["method"]}'
    written = [_save(_plot_ratings(records, names, title), path, 'ratings.png')]
    curve = [(r['seconds'], r['exploitability']) for r in records if r.get('exploitability') is not None]
    if curve:
        written.append(_save(_plot_exploitability(curve, title), path, 'exploitability.png'))
    written.append(_save(_plot_payoffs(payoffs, names, league.env), path, 'payoffs.png'))
    return written


def _save(fig: Figure, path: str, name: str) -> str:
    out = os.path.join(path, name)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _plot_ratings(records: list[dict[str, Any]], names: list[str], title: str) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in names:
        points = [(r['iteration'], r['ratings'][name]['mu'] - 3 * r['ratings'][name]['sigma'])
                  for r in records if name in r['ratings']]
        ax.plot(*zip(*points), marker='.', label=name if len(names) <= 12 else None)
    ax.set_xlabel('iteration')
    ax.set_ylabel('OpenSkill ordinal (mu - 3 sigma)')
    ax.set_title(f'{title}: ratings')
    ax.grid(alpha=0.3)
    if len(names) <= 12:
        ax.legend(fontsize=7)
    return fig


def _plot_exploitability(curve: list[tuple[float, float]], title: str) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(*zip(*curve), marker='.')
    ax.set_yscale('log')
    ax.set_xlabel('seconds (training and evaluation)')
    ax.set_ylabel('exploitability (OpenSpiel, NashConv / 2)')
    ax.set_title(f'{title}: exploitability')
    ax.grid(alpha=0.3)
    return fig


def _plot_payoffs(payoffs: PayoffTable, names: list[str], env_name: str) -> Figure:
    matrix = payoffs.matrix()
    fig, ax = plt.subplots(figsize=(6, 5))
    limit = float(np.nanmax(np.abs(matrix))) if np.isfinite(matrix).any() else 1.0
    image = ax.imshow(matrix, cmap='RdBu', vmin=-limit, vmax=limit)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel('opponent')
    ax.set_ylabel('policy')
    fig.colorbar(image, ax=ax, label='mean payoff')
    ax.set_title(f'{env_name}: payoff table')
    return fig
