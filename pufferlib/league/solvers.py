"""Meta-game solvers for a matrix game `payoffs[i, j]` (the row player's payoff when it plays i and the
column player plays j): `nash` (exact, two-player zero-sum, by linear programming with scipy),
`fictitious_play`, `alpharank` (OpenSpiel's implementation) and `uniform`; `meta_strategy` picks one
by name from `SOLVERS`.
"""
from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from types import ModuleType

import numpy as np
from numpy.typing import ArrayLike

from pufferlib.pufferenv import APIUsageError

LEAGUE_INSTALL = 'pip install "pufferlib[league]"'


def require(module: str) -> ModuleType:
    """Import a package of the league extra, or raise one error that says how to install it. The
    toolkit imports its scipy, openskill and open_spiel modules through this when first used, so that
    `import pufferlib.league` works with numpy alone."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise APIUsageError(f'population play needs {module.split(".")[0]!r} ({e}); install it with: '
                            f'{LEAGUE_INSTALL}') from None


def _payoff_matrix(payoffs: ArrayLike, who: str) -> np.ndarray:
    try:
        matrix = np.array(payoffs, dtype=np.float64)
    except (TypeError, ValueError):
        raise APIUsageError(f'{who}: payoffs must be a 2-D array of numbers, got {type(payoffs).__name__}') from None
    if matrix.ndim != 2 or 0 in matrix.shape:
        raise APIUsageError(f'{who}: payoffs must be a non-empty 2-D array, got shape {matrix.shape}')
    if not np.isfinite(matrix).all():
        raise APIUsageError(f'{who}: payoffs contain NaN or infinity (an entry not evaluated yet?)')
    return matrix


def _clean(p: np.ndarray) -> np.ndarray:
    """Clip the LP solver's round-off (tiny negatives) and renormalise."""
    p = np.clip(p, 0.0, None)
    return p / p.sum()


def _maximin(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """The row player's maximin mixed strategy and the game value: max_x min_j (x^T A)_j."""
    optimize = require('scipy.optimize')
    m, n = matrix.shape
    # variables [x_1..x_m, v]: maximise v subject to v <= (x^T A)_j for every column j, x a distribution
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-matrix.T, np.ones((n, 1))])
    a_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    result = optimize.linprog(cost, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0],
                              bounds=[(0, None)] * m + [(None, None)], method='highs')
    if result.status != 0:  # a bounded feasible LP always solves; anything else is a solver failure
        raise RuntimeError(f'linprog failed on a {m}x{n} matrix game: {result.message}')
    return _clean(result.x[:m]), float(result.x[-1])


def nash(payoffs: ArrayLike) -> tuple[np.ndarray, np.ndarray, float]:
    """An exact Nash equilibrium of the two-player zero-sum matrix game `payoffs` (the row player's payoff;
    the column player gets its negative). Returns (row strategy, column strategy, value of the game to
    the row player). Each strategy is a maximin solution of one linear program (scipy's HiGHS)."""
    matrix = _payoff_matrix(payoffs, 'nash')
    row, value = _maximin(matrix)
    col, _ = _maximin(-matrix.T)
    return row, col, value


def fictitious_play(payoffs: ArrayLike, iterations: int = 10_000,
                    col_payoffs: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Simultaneous fictitious play: each round both players best-respond to the other's empirical mixture;
    returns the empirical mixtures (row, column). `col_payoffs[i, j]` is the column player's payoff
    (default: zero-sum, `-payoffs`). In two-player zero-sum games the mixtures converge to a Nash
    equilibrium (Robinson 1951), slowly: the gap shrinks roughly like 1/sqrt(iterations)."""
    matrix = _payoff_matrix(payoffs, 'fictitious_play')
    other = -matrix if col_payoffs is None else _payoff_matrix(col_payoffs, 'fictitious_play')
    if other.shape != matrix.shape:
        raise APIUsageError(f'fictitious_play: col_payoffs has shape {other.shape}, payoffs {matrix.shape}')
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise APIUsageError(f'fictitious_play: iterations must be an int >= 1, got {iterations!r}')
    m, n = matrix.shape
    row_counts, col_counts = np.zeros(m), np.zeros(n)
    row_values, col_values = np.zeros(m), np.zeros(n)  # payoff of each pure strategy vs the other's history
    row_counts[0] += 1
    col_counts[0] += 1
    row_values += matrix[:, 0]
    col_values += other[0, :]
    for _ in range(iterations - 1):
        i, j = int(row_values.argmax()), int(col_values.argmax())
        row_counts[i] += 1
        col_counts[j] += 1
        row_values += matrix[:, j]
        col_values += other[i, :]
    return row_counts / row_counts.sum(), col_counts / col_counts.sum()


def alpharank(payoffs: ArrayLike, alpha: float | None = None, population_size: int = 50,
              epsilon: float = 0.01) -> np.ndarray:
    """Alpha-rank stationary distribution of a symmetric game (one population; `payoffs[i, j]` is what
    strategy i earns against j), computed by OpenSpiel's `open_spiel.python.egt.alpharank`.

    alpha=None uses the infinite-alpha limit (each strategy's mass follows strict improvement, with
    `epsilon` noise keeping the Markov chain irreducible), which is what PSRO uses and is free of the
    overflow that large finite alphas hit; a number uses that selection intensity."""
    matrix = _payoff_matrix(payoffs, 'alpharank')
    if matrix.shape[0] != matrix.shape[1]:
        raise APIUsageError(f'alpharank: a one-population game needs a square payoff matrix, got {matrix.shape}')
    if matrix.shape[0] == 1:
        return np.ones(1)
    egt = require('open_spiel.python.egt.alpharank')
    with np.errstate(over='ignore', invalid='ignore'):
        if alpha is None:
            result = egt.compute([matrix], m=population_size, use_inf_alpha=True, inf_alpha_eps=epsilon)
        else:
            try:
                result = egt.compute([matrix], m=population_size, alpha=float(alpha))
            except ValueError:  # scipy's eigen-solver refuses the NaNs an overflow produced
                result = (None, None, np.full(matrix.shape[0], np.nan))
    pi = np.asarray(result[2], dtype=np.float64)
    if not np.isfinite(pi).all():
        raise APIUsageError(f'alpharank: alpha={alpha} overflows for payoffs of this size '
                            f'(max |payoff| {np.abs(matrix).max():.3g}); use a smaller alpha or alpha=None')
    return _clean(pi)


def uniform(payoffs: ArrayLike) -> np.ndarray:
    """Every policy with the same weight, whatever the payoffs."""
    matrix = _payoff_matrix(payoffs, 'uniform')
    return np.full(matrix.shape[0], 1.0 / matrix.shape[0])


# The meta-solvers by name (league.meta_solver): each gives the row strategy of a symmetric meta-game.
SOLVERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    'nash': lambda matrix: nash(matrix)[0],
    'fictitious_play': lambda matrix: fictitious_play(matrix)[0],
    'alpharank': alpharank,
    'uniform': uniform,
}
META_SOLVERS = tuple(SOLVERS)


def meta_strategy(payoffs: ArrayLike, method: str = 'nash') -> np.ndarray:
    """The distribution over a symmetric population's policies that `method` prescribes: the row
    strategy of the meta-game `payoffs[i, j]` (payoff of policy i against policy j)."""
    if method not in META_SOLVERS:
        close = difflib.get_close_matches(str(method), META_SOLVERS, n=1)
        hint = f' Did you mean {close[0]!r}?' if close else ''
        raise APIUsageError(f'unknown meta-solver {method!r}.{hint} Choose one of {", ".join(META_SOLVERS)}')
    return SOLVERS[method](_payoff_matrix(payoffs, method))
