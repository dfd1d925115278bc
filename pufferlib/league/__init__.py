"""Population play: meta-game solvers, a payoff table, ratings, and OpenSpiel as the referee.

Sections 1-5 are the game-theory toolkit, each standing alone and tested with known answers in
tests/test_league.py; sections 6 and 7 are the league loop built on it and on pufferlib/arena.py:

1. Meta-game solvers for a matrix game `payoffs[i, j]` (the row player's payoff when it plays i and the
   column player plays j): `nash` (exact, two-player zero-sum, by linear programming with scipy),
   `fictitious_play`, and `alpharank` (OpenSpiel's implementation).
2. `PayoffTable`: mean payoffs between the policies of a population that grows one policy at a time.
3. `Ratings`: OpenSkill ratings over the population and any scripted or frozen baselines, and a
   leaderboard.
4. The OpenSpiel referee for puffer_kuhn and puffer_leduc: turn a policy of ours (a function of our
   observation and legal-action mask) into an OpenSpiel TabularPolicy and measure its exploitability
   with OpenSpiel's exact best response.
5. `GameTree`: exact expected payoffs between tabular poker policies, by matrix products.
6. The league (`puffer league`): a directory with a ledger; self-play, fictitious self-play or PSRO,
   each iteration a PPO response (pufferlib/arena.py) then evaluation matches and ratings; `report`.
7. Where the work runs: an iteration's response and matches are tasks of plain data, run in this
   process (`--league.backend local`) or as Ray tasks on a cluster (`ray`); the ledger, payoff table,
   ratings and policies stay with the driver, this process.

scipy, openskill and open_spiel come with the `league` extra (`pip install "pufferlib[league]"`); they
are imported when first used, so `import pufferlib.league` works without them.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from pufferlib import rundir
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib.pufferenv import APIUsageError

LEAGUE_INSTALL = 'pip install "pufferlib[league]"'


def _require(module: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise APIUsageError(f'population play needs {module.split(".")[0]!r} ({e}); install it with: '
                            f'{LEAGUE_INSTALL}') from None


# ---------------------------------------------------------------------------------------------
# 1. Meta-game solvers
# ---------------------------------------------------------------------------------------------

def _payoff_matrix(payoffs, who: str) -> np.ndarray:
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
    optimize = _require('scipy.optimize')
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


def nash(payoffs) -> tuple[np.ndarray, np.ndarray, float]:
    """An exact Nash equilibrium of the two-player zero-sum matrix game `payoffs` (the row player's payoff;
    the column player gets its negative). Returns (row strategy, column strategy, value of the game to
    the row player). Each strategy is a maximin solution of one linear program (scipy's HiGHS)."""
    matrix = _payoff_matrix(payoffs, 'nash')
    row, value = _maximin(matrix)
    col, _ = _maximin(-matrix.T)
    return row, col, value


def fictitious_play(payoffs, iterations: int = 10_000, col_payoffs=None) -> tuple[np.ndarray, np.ndarray]:
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


def alpharank(payoffs, alpha: float | None = None, population_size: int = 50, epsilon: float = 0.01) -> np.ndarray:
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
    egt = _require('open_spiel.python.egt.alpharank')
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


META_SOLVERS = ('nash', 'fictitious_play', 'alpharank', 'uniform')


def meta_strategy(payoffs, method: str = 'nash') -> np.ndarray:
    """The distribution over a symmetric population's policies that `method` prescribes: the row
    strategy of the meta-game `payoffs[i, j]` (payoff of policy i against policy j)."""
    if method not in META_SOLVERS:
        import difflib
        close = difflib.get_close_matches(str(method), META_SOLVERS, n=1)
        hint = f' Did you mean {close[0]!r}?' if close else ''
        raise APIUsageError(f'unknown meta-solver {method!r}.{hint} Choose one of {", ".join(META_SOLVERS)}')
    matrix = _payoff_matrix(payoffs, method)
    if method == 'nash':
        return nash(matrix)[0]
    if method == 'fictitious_play':
        return fictitious_play(matrix)[0]
    if method == 'alpharank':
        return alpharank(matrix)
    return np.full(matrix.shape[0], 1.0 / matrix.shape[0])


# ---------------------------------------------------------------------------------------------
# 2. Payoff table
# ---------------------------------------------------------------------------------------------

class PayoffTable:
    """Mean payoff of each policy against each other one, from the games recorded so far.

    The population grows one policy at a time (`add`); `record(i, j, payoff, games)` folds in `games`
    games whose mean payoff to i against j was `payoff`. In a symmetric zero-sum game (`zero_sum=True`,
    the default; both seats played equally often) a game between i and j also tells j's payoff, so
    entry (j, i) receives the negated games.
    """

    def __init__(self, names: Sequence[str] = (), zero_sum: bool = True):
        self.zero_sum = bool(zero_sum)
        self.names: list[str] = []
        self._sums = np.zeros((0, 0))
        self._games = np.zeros((0, 0))
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self.names)

    def add(self, name: str) -> int:
        """Add a policy (no games yet); returns its index."""
        if not isinstance(name, str) or not name:
            raise APIUsageError(f'PayoffTable.add: a policy name must be a non-empty string, got {name!r}')
        if name in self.names:
            raise APIUsageError(f'PayoffTable.add: policy {name!r} is already in the table')
        n = len(self.names)
        for attr in ('_sums', '_games'):
            grown = np.zeros((n + 1, n + 1))
            grown[:n, :n] = getattr(self, attr)
            setattr(self, attr, grown)
        self.names.append(name)
        return n

    def index(self, policy: int | str) -> int:
        if isinstance(policy, str):
            if policy not in self.names:
                raise APIUsageError(f'PayoffTable: unknown policy {policy!r}; known: {", ".join(self.names) or "none"}')
            return self.names.index(policy)
        if isinstance(policy, bool) or not isinstance(policy, (int, np.integer)) or not 0 <= policy < len(self.names):
            raise APIUsageError(f'PayoffTable: policy index {policy!r} is outside [0, {len(self.names)})')
        return int(policy)

    def record(self, a: int | str, b: int | str, payoff: float, games: int = 1) -> None:
        """Fold in `games` games of a against b whose mean payoff to a was `payoff`."""
        i, j = self.index(a), self.index(b)
        if not math.isfinite(payoff):
            raise APIUsageError(f'PayoffTable.record: payoff must be finite, got {payoff!r}')
        if isinstance(games, bool) or not isinstance(games, (int, np.integer)) or games < 1:
            raise APIUsageError(f'PayoffTable.record: games must be an int >= 1, got {games!r}')
        self._sums[i, j] += payoff * games
        self._games[i, j] += games
        if self.zero_sum:
            self._sums[j, i] -= payoff * games
            self._games[j, i] += games

    def games(self) -> np.ndarray:
        """Games recorded for each ordered pair."""
        return self._games.copy()

    def matrix(self, fill: float = np.nan) -> np.ndarray:
        """Mean payoffs [n, n]; pairs with no games hold `fill`."""
        with np.errstate(invalid='ignore', divide='ignore'):
            means = self._sums / self._games
        means[self._games == 0] = fill
        return means

    def missing(self) -> list[tuple[int, int]]:
        """Ordered pairs (i, j) with no games yet, the ones a new policy adds first; with zero_sum only
        i <= j is listed, since one game fills both entries."""
        n = len(self.names)
        return [(i, j) for i in range(n) for j in range(n)
                if self._games[i, j] == 0 and (not self.zero_sum or i <= j)]

    def to_dict(self) -> dict:
        return {'names': list(self.names), 'zero_sum': self.zero_sum,
                'sums': self._sums.tolist(), 'games': self._games.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> PayoffTable:
        try:
            table = cls(data['names'], zero_sum=data['zero_sum'])
            sums, games = np.array(data['sums'], dtype=np.float64), np.array(data['games'], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as e:
            raise APIUsageError(f'PayoffTable.from_dict: not a saved payoff table ({e!r})') from None
        n = len(table.names)
        if sums.shape != (n, n) or games.shape != (n, n):
            raise APIUsageError(f'PayoffTable.from_dict: {n} names but tables of shape {sums.shape}, {games.shape}')
        table._sums, table._games = sums, games
        return table


# ---------------------------------------------------------------------------------------------
# 3. Ratings
# ---------------------------------------------------------------------------------------------

class Ratings:
    """OpenSkill ratings (Weng-Lin Bayesian ratings, Plackett-Luce model, from the `openskill` package) of
    a population and of baselines (scripted or frozen policies that are rated but not trained).

    `record(a, b, score)` rates one game: score > 0 means a won, < 0 b won, 0 a draw. The leaderboard
    sorts by the conservative estimate mu - 3 sigma (openskill's `ordinal`), so a policy with few games
    does not top it by luck.
    """

    def __init__(self):
        models = _require('openskill.models')
        self.model = models.PlackettLuce()
        self._ratings: dict = {}
        self.baselines: set[str] = set()
        self.games: dict[str, int] = {}

    def add(self, name: str, baseline: bool = False) -> None:
        if not isinstance(name, str) or not name:
            raise APIUsageError(f'Ratings.add: a name must be a non-empty string, got {name!r}')
        if name in self._ratings:
            raise APIUsageError(f'Ratings.add: {name!r} is already rated')
        self._ratings[name] = self.model.rating(name=name)
        self.games[name] = 0
        if baseline:
            self.baselines.add(name)

    def __contains__(self, name: str) -> bool:
        return name in self._ratings

    def _get(self, name: str):
        if name not in self._ratings:
            raise APIUsageError(f'Ratings: unknown player {name!r}; add it first (known: '
                                f'{", ".join(self._ratings) or "none"})')
        return self._ratings[name]

    def record(self, a: str, b: str, score: float) -> None:
        """Rate one game between a and b; score > 0: a won, < 0: b won, 0: a draw."""
        if a == b:
            raise APIUsageError(f'Ratings.record: {a!r} cannot play itself in a rated game')
        ra, rb = self._get(a), self._get(b)
        ranks = [0, 1] if score > 0 else ([1, 0] if score < 0 else [0, 0])
        [[ra], [rb]] = self.model.rate([[ra], [rb]], ranks=ranks)
        self._ratings[a], self._ratings[b] = ra, rb
        self.games[a] += 1
        self.games[b] += 1

    def record_results(self, a: str, b: str, scores: Sequence[float]) -> None:
        """Rate a series of games between a and b, in order."""
        for score in scores:
            self.record(a, b, float(score))

    def rating(self, name: str) -> tuple[float, float]:
        r = self._get(name)
        return float(r.mu), float(r.sigma)

    def win_probability(self, a: str, b: str) -> float:
        """The model's probability that a beats b."""
        return float(self.model.predict_win([[self._get(a)], [self._get(b)]])[0])

    def leaderboard(self) -> list[dict]:
        """Rows {rank, name, mu, sigma, ordinal, games, baseline}, best first."""
        rows = [{'name': name, 'mu': float(r.mu), 'sigma': float(r.sigma), 'ordinal': float(r.ordinal()),
                 'games': self.games[name], 'baseline': name in self.baselines}
                for name, r in self._ratings.items()]
        rows.sort(key=lambda row: row['ordinal'], reverse=True)
        for rank, row in enumerate(rows, 1):
            row['rank'] = rank
        return rows

    def format_leaderboard(self) -> str:
        lines = [f'{"rank":>4}  {"policy":<24} {"ordinal":>8} {"mu":>7} {"sigma":>6} {"games":>6}']
        for row in self.leaderboard():
            tag = ' (baseline)' if row['baseline'] else ''
            lines.append(f'{row["rank"]:>4}  {row["name"] + tag:<24} {row["ordinal"]:>8.2f} {row["mu"]:>7.2f} '
                         f'{row["sigma"]:>6.2f} {row["games"]:>6}')
        return '\n'.join(lines)

    def to_dict(self) -> dict:
        return {name: {'mu': float(r.mu), 'sigma': float(r.sigma), 'games': self.games[name],
                       'baseline': name in self.baselines} for name, r in self._ratings.items()}

    @classmethod
    def from_dict(cls, data: dict) -> Ratings:
        ratings = cls()
        try:
            for name, row in data.items():
                ratings.add(name, baseline=bool(row['baseline']))
                ratings._ratings[name] = ratings.model.rating(mu=float(row['mu']), sigma=float(row['sigma']), name=name)
                ratings.games[name] = int(row['games'])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise APIUsageError(f'Ratings.from_dict: not saved ratings ({e!r})') from None
        return ratings


# ---------------------------------------------------------------------------------------------
# 4. OpenSpiel as the referee for the poker envs
# ---------------------------------------------------------------------------------------------

# Our env -> OpenSpiel game. The observation of puffer_kuhn / puffer_leduc is, by construction,
# OpenSpiel's information_state_tensor of the observing player, and their action ids are OpenSpiel's
# (tests/test_poker.py checks the C envs against OpenSpiel at every decision of random playouts), so an
# information state maps to exactly one of our observations.
OPENSPIEL_GAMES = {'puffer_kuhn': 'kuhn_poker', 'puffer_leduc': 'leduc_poker'}

# A policy of ours for the referee: (observations [N, obs_size] float32, legal masks [N, actions] uint8)
# -> action probabilities [N, actions]. Probability put on illegal actions is dropped and the rest
# renormalised, as a masked sampler does.
PolicyFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def openspiel_game(env_name: str):
    """The OpenSpiel game that `env_name` ('puffer_kuhn' or 'puffer_leduc') reproduces."""
    name = env_name if str(env_name).startswith('puffer_') else f'puffer_{env_name}'
    if name not in OPENSPIEL_GAMES:
        raise APIUsageError(f'no OpenSpiel referee for {env_name!r}; it exists for {", ".join(OPENSPIEL_GAMES)}')
    pyspiel = _require('pyspiel')
    return pyspiel.load_game(OPENSPIEL_GAMES[name])


def information_states(game) -> tuple[object, np.ndarray, np.ndarray]:
    """Every information state of `game` where a player acts, as OpenSpiel's TabularPolicy orders them:
    (an empty TabularPolicy, our observations [S, obs_size] float32, legal masks [S, actions] uint8)."""
    policy_lib = _require('open_spiel.python.policy')
    table = policy_lib.TabularPolicy(game)
    obs = np.array([s.information_state_tensor(s.current_player()) for s in table.states], dtype=np.float32)
    legal = table.legal_actions_mask.astype(np.uint8)
    return table, obs, legal


def tabular_policy(env_name: str, policy: PolicyFn, game=None):
    """Query `policy` once on every information state of the env's OpenSpiel game and return the
    equivalent OpenSpiel TabularPolicy (both seats play it)."""
    game = game or openspiel_game(env_name)
    table, obs, legal = information_states(game)
    probs = np.array(policy(obs, legal), dtype=np.float64)
    if probs.shape != legal.shape:
        raise APIUsageError(f'the policy returned probabilities of shape {probs.shape} for {len(obs)} information '
                            f'states; expected {legal.shape} (one row per state, one column per action)')
    if not np.isfinite(probs).all() or (probs < 0).any():
        raise APIUsageError('the policy returned negative or non-finite probabilities')
    probs *= legal
    mass = probs.sum(1, keepdims=True)
    if (mass <= 0).any():
        bad = int(np.flatnonzero(mass[:, 0] <= 0)[0])
        raise APIUsageError(f'the policy puts no probability on a legal action at information state '
                            f'{table.states[bad].information_state_string()!r}')
    table.action_probability_array[...] = probs / mass
    return table


def exploitability(env_name: str, policy: PolicyFn | object) -> float:
    """Exploitability (NashConv / 2) of `policy` played from both seats, by OpenSpiel's exact best
    response: 0 at a Nash equilibrium, the average gain of a best-responding opponent otherwise.
    `policy` is a PolicyFn or an OpenSpiel TabularPolicy of the env's game."""
    game = openspiel_game(env_name)
    policy_lib = _require('open_spiel.python.policy')
    table = policy if isinstance(policy, policy_lib.TabularPolicy) else tabular_policy(env_name, policy, game)
    pyspiel = _require('pyspiel')
    return float(pyspiel.exploitability(game, policy_lib.python_policy_to_pyspiel_policy(table)))


def mixture_exploitability(env_name: str, policies: Sequence[PolicyFn | object], weights: Sequence[float]) -> float:
    """Exploitability of a meta-strategy: at the start of each game draw policy k with probability
    weights[k] and play it throughout (what PSRO and fictitious self-play output). The mixture becomes
    one behaviour policy by OpenSpiel's PolicyAggregator (reach-weighted per information state)."""
    weights = np.asarray(weights, dtype=np.float64)
    if len(policies) == 0 or weights.shape != (len(policies),) or (weights < 0).any() or weights.sum() <= 0:
        raise APIUsageError(f'mixture_exploitability: need one non-negative weight per policy '
                            f'({len(policies)} policies, weights {weights.tolist()})')
    game = openspiel_game(env_name)
    policy_lib = _require('open_spiel.python.policy')
    aggregator_lib = _require('open_spiel.python.algorithms.policy_aggregator')
    tables = [p if isinstance(p, policy_lib.TabularPolicy) else tabular_policy(env_name, p, game) for p in policies]
    weights = (weights / weights.sum()).tolist()
    mixed = aggregator_lib.PolicyAggregator(game).aggregate([0, 1], [tables, tables], [weights, weights])
    return exploitability(env_name, mixed.to_tabular())


def uniform_policy(obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The uniformly random legal policy, as a PolicyFn."""
    return legal.astype(np.float64)


def policy_from_tabular(table) -> PolicyFn:
    """A PolicyFn that plays an OpenSpiel TabularPolicy, looked up by our observation (used to check the
    observation mapping round trip, and to make OpenSpiel's solutions league baselines)."""
    by_obs = {np.asarray(s.information_state_tensor(s.current_player()), dtype=np.float32).tobytes(): row
              for s, row in zip(table.states, table.action_probability_array)}

    def play(obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        out = np.empty(legal.shape, dtype=np.float64)
        for k, row in enumerate(np.asarray(obs, dtype=np.float32)):
            try:
                out[k] = by_obs[row.tobytes()]
            except KeyError:
                raise APIUsageError('policy_from_tabular: an observation that is no information state of '
                                    'this game') from None
        return out
    return play


# ---------------------------------------------------------------------------------------------
# 5. Exact payoffs between tabular policies (the poker envs)
# ---------------------------------------------------------------------------------------------

# What the env plays when a row picks an action its mask forbids (docs/ocean.md): Leduc plays a call.
# A policy sampled without masks is tabulated with that action's probability moved there.
FORBIDDEN_PLAYS_AS = {'puffer_leduc': 1}


class GameTree:
    """Every terminal history of a poker env's OpenSpiel game, for exact expected payoffs by matrix
    products instead of sampled matches.

    A policy is a table `probs [S, A]` over the game's information states (OpenSpiel's TabularPolicy
    order: `obs` and `legal` give our observation and legal mask of each). A history h is reached by
    seat 0 playing table x and seat 1 table y with probability chance(h) * reach0_x(h) * reach1_y(h),
    where reach_p is the product of p's action probabilities along h; so for K tables at once the
    expected payoff to seat 0 is `(R0 * chance * payoff) @ R1.T`, a [K, K] matrix in one product
    (Leduc: 5,520 histories, at most four decisions per player)."""

    def __init__(self, env_name: str):
        game = openspiel_game(env_name)
        self.env_name = env_name if env_name.startswith('puffer_') else f'puffer_{env_name}'
        table, self.obs, self.legal = information_states(game)
        self.states, self.actions = self.legal.shape
        lookup = table.state_lookup
        sentinel = self.states * self.actions  # points at a probability of 1: pads short histories
        weights, decisions = [], ([], [])

        def walk(state, chance, path):
            if state.is_terminal():
                weights.append(chance * state.returns()[0])
                for player in (0, 1):
                    decisions[player].append(path[player])
                return
            if state.is_chance_node():
                for action, p in state.chance_outcomes():
                    walk(state.child(action), chance * p, path)
                return
            player = state.current_player()
            index = lookup[state.information_state_string(player)]
            for action in state.legal_actions():
                step = [list(path[0]), list(path[1])]
                step[player].append(index * self.actions + action)
                walk(state.child(action), chance, step)

        walk(game.new_initial_state(), 1.0, [[], []])
        self.weights = np.array(weights)
        self.index = []
        for player in (0, 1):
            depth = max(len(d) for d in decisions[player])
            padded = np.full((len(weights), depth), sentinel, dtype=np.int64)
            for h, d in enumerate(decisions[player]):
                padded[h, :len(d)] = d
            self.index.append(padded)

    def _reach(self, probs: np.ndarray, player: int) -> np.ndarray:
        flat = np.concatenate([probs.reshape(len(probs), -1), np.ones((len(probs), 1))], axis=1)
        return flat[:, self.index[player]].prod(axis=2)  # [K, histories]

    def check(self, probs) -> np.ndarray:
        probs = np.asarray(probs, dtype=np.float64)
        if probs.ndim == 2:
            probs = probs[None]
        if probs.shape[1:] != (self.states, self.actions):
            raise APIUsageError(f'{self.env_name}: a policy table must be [{self.states}, {self.actions}] (information '
                                f'states x actions), got {list(probs.shape[1:])}')
        return probs

    def seat_payoffs(self, seat0, seat1) -> np.ndarray:
        """[Ka, Kb]: the expected payoff to seat 0 when table a plays seat 0 and table b seat 1."""
        a, b = self.check(seat0), self.check(seat1)
        return (self._reach(a, 0) * self.weights) @ self._reach(b, 1).T

    def payoffs(self, tables_a, tables_b=None) -> np.ndarray:
        """[Ka, Kb]: the expected payoff to a against b, each playing both seats equally often (the
        symmetric meta-game PSRO solves)."""
        tables_b = tables_a if tables_b is None else tables_b
        return 0.5 * (self.seat_payoffs(tables_a, tables_b) - self.seat_payoffs(tables_b, tables_a).T)

    def _sequence_form(self, player: int):
        """The sequence form of `player`'s strategies, for `least_exploitable`: (E^T [sequences, 1 +
        information states], M [sequences, histories]). A sequence is the empty one (column 0) or a
        decision (information state, action); a realization plan y satisfies y(empty) = 1 and, at each of
        the player's information states I, sum_a y(I, a) = y(parent sequence of I). M maps a history to
        the player's last sequence on it, so that a realization plan plays history h with weight
        y(last sequence of h)."""
        import scipy.sparse as sparse
        cached = getattr(self, '_sequences', {})
        if player in cached:
            return cached[player]
        sentinel = self.states * self.actions
        columns, parent = {-1: 0}, {}
        last = np.zeros(len(self.weights), dtype=np.int64)
        for h, row in enumerate(self.index[player]):
            previous = -1
            for decision in row[row != sentinel].tolist():
                columns.setdefault(decision, len(columns))
                parent.setdefault(decision // self.actions, columns[previous])  # perfect recall: one parent
                previous = decision
            last[h] = columns[previous]
        row_of = {state: 1 + k for k, state in enumerate(sorted(parent))}  # row 0: y(empty) = 1
        rows, cols, values = [0], [0], [1.0]
        for state, sequence in parent.items():  # +y(parent) in the row of each state
            rows.append(sequence), cols.append(row_of[state]), values.append(1.0)
        for decision, sequence in columns.items():  # -y(I, a) in the row of I
            if decision >= 0:
                rows.append(sequence), cols.append(row_of[decision // self.actions]), values.append(-1.0)
        et = sparse.csr_matrix((values, (rows, cols)), shape=(len(columns), 1 + len(parent)))
        m = sparse.csr_matrix((np.ones(len(last)), (last, np.arange(len(last)))), shape=(len(columns), len(last)))
        cached[player] = (et, m)
        self._sequences = cached
        return et, m

    def least_exploitable(self, tables, weights=None) -> tuple[float, np.ndarray]:
        """The mixture of `tables` [K, S, A] (each drawn for a whole game, as a meta-strategy is played)
        that is least exploitable in the whole game, and its exploitability (NashConv / 2); with
        `weights`, the exploitability of that mixture instead. One linear program: the mixture's reach
        of every history is linear in its weights, so the best-responding opponent of each seat is an
        LP over that seat's sequence form (`_sequence_form`), and its dual joins the weights in one
        minimisation. No meta-solver that mixes these policies can do better than this; PSRO's Nash of
        the restricted game can be far from it (docs/league.md)."""
        import scipy.sparse as sparse
        from scipy.optimize import linprog
        tables = self.check(tables)
        k = len(tables)
        blocks, sizes = [], []
        for seat in (0, 1):  # the exploiter sits in `seat`, the mixture in the other
            et, m = self._sequence_form(seat)
            sign = 1.0 if seat == 0 else -1.0  # self.weights are seat 0's payoffs
            gains = m @ (sign * self.weights[:, None] * self._reach(tables, 1 - seat).T)  # [sequences, K]
            blocks.append((sparse.csr_matrix(gains), -et))
            sizes.append(et.shape[1])
        # variables: the weights (K), then each exploiter's dual values (one per row of its sequence form)
        a_ub = sparse.bmat([[blocks[0][0], blocks[0][1], None], [blocks[1][0], None, blocks[1][1]]], format='csr')
        cost = np.zeros(k + sum(sizes))
        cost[k] = cost[k + sizes[0]] = 1.0  # each exploiter's value: the dual of y(empty) = 1
        a_eq = sparse.csr_matrix(np.concatenate([np.ones(k), np.zeros(sum(sizes))])[None])
        bounds = [(0.0, None)] * k + [(None, None)] * sum(sizes)
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != (k,) or (weights < 0).any() or weights.sum() <= 0:
                raise APIUsageError(f'least_exploitable: need one non-negative weight per table ({k}), got '
                                    f'{weights.tolist()}')
            bounds[:k] = [(w, w) for w in weights / weights.sum()]
        result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=[1.0], bounds=bounds,
                         method='highs')
        if result.status != 0:
            raise RuntimeError(f'least_exploitable: the LP failed ({result.message})')
        mixture = np.clip(result.x[:k], 0.0, None)
        return float(result.fun) / 2.0, mixture / mixture.sum()

    def tabulate(self, probabilities: PolicyFn, masked: bool = True) -> np.ndarray:
        """The table [S, A] of a policy: `probabilities(obs, legal)` on every information state. A policy
        sampled with action masks (`masked`) plays its legal probabilities renormalised; one sampled
        without plays what the env makes of a forbidden action (FORBIDDEN_PLAYS_AS) instead."""
        probs = np.array(probabilities(self.obs, np.ones_like(self.legal) if not masked else self.legal),
                         dtype=np.float64)
        if probs.shape != self.legal.shape or not np.isfinite(probs).all() or (probs < 0).any():
            raise APIUsageError(f'{self.env_name}: the policy must return finite probabilities of shape '
                                f'{self.legal.shape}, got {probs.shape}')
        if not masked and self.env_name in FORBIDDEN_PLAYS_AS:
            fallback = FORBIDDEN_PLAYS_AS[self.env_name]
            probs[:, fallback] += (probs * (self.legal == 0)).sum(1)
        probs *= self.legal
        return probs / probs.sum(1, keepdims=True)

    def to_openspiel(self, probs: np.ndarray):
        """The OpenSpiel TabularPolicy of a table (for the referee: `exploitability`)."""
        policy_lib = _require('open_spiel.python.policy')
        table = policy_lib.TabularPolicy(openspiel_game(self.env_name))
        table.action_probability_array[...] = self.check(probs)[0]
        return table


# ---------------------------------------------------------------------------------------------
# 6. The league: self-play, fictitious self-play and PSRO over policies trained by our PPO
# ---------------------------------------------------------------------------------------------

METHODS = ('self_play', 'fsp', 'psro')
FSP_SAMPLING = ('uniform', 'prioritized')
RESPONSE_INIT = ('fresh', 'features')
BACKENDS = ('local', 'ray')
OUTPUTS = ('meta', 'least_exploitable')
# What a resumed league may change: how far it goes and where its tasks run, nothing that changes results.
RESUME_FLAGS = ('--league.iterations', '--league.backend', '--league.ray-address', '--league.ray-cpus')


def leagues_dir() -> str:
    return os.path.join(rundir.experiments_dir(), 'leagues')


def check_settings(settings: dict, env_name: str) -> None:
    from pufferlib.arena import LeagueError
    if settings['method'] not in METHODS:
        raise LeagueError(f'league.method must be one of {", ".join(METHODS)}, got {settings["method"]!r}')
    if settings['meta_solver'] not in META_SOLVERS:
        raise LeagueError(f'league.meta_solver must be one of {", ".join(META_SOLVERS)}, got '
                          f'{settings["meta_solver"]!r}')
    if settings['response_init'] not in RESPONSE_INIT:
        raise LeagueError(f'league.response_init must be one of {", ".join(RESPONSE_INIT)} (fresh: each PSRO response '
                          f'starts from a new network; features: from the latest response\'s, a new action head), '
                          f'got {settings["response_init"]!r}')
    if settings['fsp_sampling'] not in FSP_SAMPLING:
        raise LeagueError(f'league.fsp_sampling must be uniform or prioritized, got {settings["fsp_sampling"]!r}')
    if settings['backend'] not in BACKENDS:
        raise LeagueError(f'league.backend must be local (this machine) or ray (Ray tasks; docs/league.md, "Ray"), '
                          f'got {settings["backend"]!r}')
    for key in ('iterations', 'steps_per_iteration', 'num_envs', 'eval_games', 'response_rounds'):
        if settings[key] <= 0:
            raise LeagueError(f'league.{key} must be positive, got {settings[key]}')
    if settings['scripted_games'] < 0:
        raise LeagueError(f'league.scripted_games must be >= 0 (0: off), got {settings["scripted_games"]}')
    share = settings['baseline_share']
    if not 0.0 <= share <= 1.0:  # also NaN
        raise LeagueError(f'league.baseline_share is the fraction of the learner\'s games against the env\'s built-in '
                          f'player, in [0, 1] (0: off), got {share}')
    if settings['ray_cpus'] < 0:
        raise LeagueError(f'league.ray_cpus must be >= 0 (0: every core, for a local Ray), got {settings["ray_cpus"]}')
    if settings['output'] not in OUTPUTS:
        raise LeagueError(f'league.output must be one of {", ".join(OUTPUTS)}, got {settings["output"]!r}')
    if settings['output'] == 'least_exploitable' and env_name not in OPENSPIEL_GAMES:
        raise LeagueError(f'league.output = "least_exploitable" solves an LP over the whole game, which exists for '
                          f'{", ".join(OPENSPIEL_GAMES)}, not {env_name}; set --league.output meta')


def create(env_name: str, flags: Sequence[str] = (), config_file: str | None = None, root: str | None = None) -> str:
    """A new league directory with its resolved config (league.toml); returns its path. An env that
    has a `two_player` option gets it on unless a flag says otherwise."""
    from pufferlib import config as configuration
    config = configuration.load(env_name, flags, config_file)
    if 'two_player' in config['env'] and not any(f.replace('_', '-').startswith('--env.two-player') for f in flags):
        config['env']['two_player'] = True
    check_settings(config['league'], env_name)
    rollout = config['league']['num_envs'] * config['train']['bptt_horizon']
    if config['train']['minibatch_size'] > rollout:  # else the first response would fail after iteration 0
        raise configuration.ConfigError(
            f'train.minibatch_size={config["train"]["minibatch_size"]} is larger than one rollout of the learner '
            f'(league.num_envs {config["league"]["num_envs"]} x train.bptt_horizon {config["train"]["bptt_horizon"]}'
            f' = {rollout}); lower it or raise league.num_envs')
    arena = League.open_env(env_name, config, games=1)  # an env without two seats fails here, before any file
    arena.close()
    if config['league']['baseline_share'] > 0 and not arena.supports_builtin:
        from pufferlib.arena import LeagueError, no_builtin_player
        raise LeagueError(f'league.baseline_share={config["league"]["baseline_share"]}: '
                          f'{no_builtin_player(env_name)}; set --league.baseline-share 0')
    if config['league']['backend'] == 'ray':  # an unreachable cluster too
        from pufferlib import cluster
        cluster.check(config['league']['ray_address'] or None, config['league']['ray_cpus'] or None, RAY_WHO)
    path = rundir.new_directory(root or leagues_dir(), f'{env_name}-{config["league"]["method"]}', ['policies'])
    text = f'[_meta]\nenv = "{env_name}"\n\n' + configuration.to_toml(config)
    rundir.write_text(os.path.join(path, 'league.toml'), text)
    return path


class League:
    """A league directory: league.toml (the config), ledger.jsonl (one fsync'd line per finished
    iteration: the population, payoff table, ratings, meta-strategy, exploitability, seconds), policies/
    (every policy's weights, written before the ledger line that names it), payoffs.json and
    leaderboard.txt (views of the last line). The last ledger line is the league's state: a SIGKILL
    at any moment loses at most the iteration in progress, which is redone on resume.

    This object is the driver: it alone reads and writes the directory. The work of an iteration (the
    response's training, the evaluation matches) is a list of tasks (section 7) that a backend runs,
    here or as Ray tasks; policies go to them as state dicts and come back as state dicts."""

    def __init__(self, path: str, flags: Sequence[str] = ()):
        from pufferlib import config as configuration
        from pufferlib.arena import LeagueError
        toml_path = os.path.join(path, 'league.toml')
        if not os.path.exists(toml_path):
            raise LeagueError(f'{path} is not a league directory (no league.toml); leagues live in {leagues_dir()}')
        self.path = path
        config = configuration.read(toml_path)
        self.env = config.pop('_meta', {}).get('env')
        # a league made before a setting existed runs with its default (e.g. the Ray settings)
        config['league'] = {**configuration.defaults()['league'], **config.get('league', {})}
        bad = [f for f in flags if f.startswith('--') and not f.replace('_', '-').startswith(RESUME_FLAGS)]
        if bad:
            raise LeagueError(f'{bad[0]}: a resumed league keeps its config; only --league.iterations and where '
                              'its tasks run (--league.backend, --league.ray-address, --league.ray-cpus) may change')
        self.config = configuration.parse_flags(list(flags), config) if flags else config
        self.settings = self.config['league']
        check_settings(self.settings, self.env)
        self.ledger = rundir.Ledger(os.path.join(path, 'ledger.jsonl'), LeagueError)
        self.lock: rundir.DirLock | None = None

    @staticmethod
    def open_env(env_name: str, config: dict, games: int):
        from pufferlib import registry
        from pufferlib.arena import Arena
        if registry.lookup(env_name).family == 'ocean':  # one env object runs every game in C
            env = registry.make(env_name, **{**config['env'], 'num_envs': games})
        else:  # one Python env per game (PettingZoo's turn-based games), their rows and masks in one Serial vector
            import pufferlib.vector
            env = pufferlib.vector.make(env_name, backend='Serial', num_envs=games, env_kwargs=dict(config['env']),
                                        seed=config['league']['seed'])
        try:
            return Arena(env, learner_seat=None if config['league']['learner_seat'] < 0
                         else config['league']['learner_seat'], seed=config['league']['seed'])
        except BaseException:
            env.close()
            raise

    # ---- policies ----

    def policy_path(self, name: str) -> str:
        return os.path.join(self.path, 'policies', f'{name}.pt')

    def new_network(self, arena):
        from pufferlib.trainer import make_policy
        return make_policy(arena, self.config)

    def save_policy(self, name: str, network) -> None:
        import torch

        state = {'policy': network.state_dict(), 'name': name, 'env': self.env}
        rundir.atomic_write(self.policy_path(name), lambda f: torch.save(state, f))

    def load_policy(self, name: str, arena):
        import torch

        from pufferlib.arena import LeagueError
        path = self.policy_path(name)
        network = self.new_network(arena)
        try:
            network.load_state_dict(torch.load(path, map_location='cpu', weights_only=True)['policy'])
        except Exception as e:  # unreadable, truncated, not ours, or another architecture
            raise LeagueError(f'{path}: the pool policy {name} cannot be loaded ({type(e).__name__}: '
                              f'{str(e).splitlines()[0][:160]}). Restore that file (nothing in the league was '
                              f'changed) or start a new league') from None
        return network

    # ---- one iteration ----

    def opponent_weights(self, names, payoffs: PayoffTable, ratings: Ratings) -> np.ndarray:
        """Who the learner trains against, as weights over the population."""
        method, n = self.settings['method'], len(names)
        if method == 'self_play':
            return np.eye(n)[-1]
        if method == 'psro':
            return meta_strategy(payoffs.matrix(fill=0.0), self.settings['meta_solver'])
        if self.settings['fsp_sampling'] == 'uniform':
            return np.full(n, 1.0 / n)
        # prioritized: the snapshots the latest policy is least sure to beat, by their OpenSkill ratings
        doubt = np.array([(1.0 - ratings.win_probability(names[-1], name)) ** 2 if name != names[-1] else 0.25
                          for name in names])
        return doubt / doubt.sum()

    def response_start(self, iteration: int):
        """What the iteration's response trains from, as its task receives it: a state dict made here, so
        that a Ray worker gets the same initial weights as the local backend (the driver alone reads the
        league directory). Self-play and FSP keep training one learner (the latest policy). A PSRO
        response starts with a fresh action head: a copy of the latest, nearly deterministic policy would
        barely explore and return a response close to itself, so the population would stop growing. With
        league.response_init = "features" the rest of the network (encoder and value head) is the latest
        response's: what it learned about the game carries over while the fresh head still starts near
        uniform play (Leduc: exploitability 0.5 in far fewer PPO steps, docs/league.md)."""
        import torch

        from pufferlib.arena import LeagueError
        if self.settings['method'] != 'psro':
            return self.tasks.share(self.names[-1], self.networks[-1])
        torch.manual_seed(self.settings['seed'] + iteration)
        start = policy_state(self.new_network(self.arena))
        if self.settings['response_init'] == 'features' and iteration > 1:  # p000 is untrained: nothing to keep
            latest = policy_state(self.networks[-1])
            head = [k for k in latest if 'actor' in k.split('.')[:-1]]
            if not head:
                raise LeagueError(f'league.response_init = "features" keeps all but the action head (`actor`), and '
                                  f'{type(self.networks[-1]).__name__} has none; set --league.response-init fresh')
            start.update({k: v for k, v in latest.items() if k not in head})
        return start

    def respond(self, name: str, weights: np.ndarray) -> tuple[object, dict]:
        """The iteration's response, trained by one task against the pool members with weight from
        `response_start`. Returns (network, stats)."""
        iteration = len(self.names)
        start = self.response_start(iteration)
        keep = np.flatnonzero(weights > 0)
        pool = [self.tasks.share(self.names[k], self.networks[k]) for k in keep]
        task = Task(f'response {name}', response_task,
                    (self.env, self.config, iteration, weights[keep].tolist(), start, *pool), self.settings['num_envs'])
        [(state, stats)] = self.tasks.run(iteration, [task])
        network = self.new_network(self.arena)
        network.load_state_dict(state)
        return network, stats

    def evaluate(self, new_name: str, payoffs: PayoffTable, ratings: Ratings) -> None:
        """One match (league.eval_games games, seats drawn per game) of the new policy against every
        policy, itself included, each its own task with its own seed, so a pair's result is the same on
        every backend: they fill the payoff table's new row and rate the games. The poker envs' payoffs
        are exact (GameTree) instead of sampled, so the meta-solver sees no noise."""
        names, networks, iteration = self.names, self.networks, len(self.names) - 1
        me = self.tasks.share(new_name, networks[-1])
        tasks = [Task(f'match {new_name} vs {name}', match_task,
                      (self.env, self.config, match_seed(self.settings['seed'], iteration, k), me,
                       self.tasks.share(name, network)), eval_envs(self.settings))
                 for k, (name, network) in enumerate(zip(names, networks))]
        matches = self.tasks.run(iteration, tasks)
        exact = None
        if self.env in OPENSPIEL_GAMES:
            tables = self.policy_tables()
            exact = game_tree(self.env).payoffs(tables[-1:], tables)[0]
        rng = np.random.default_rng(self.settings['seed'] + len(names))
        for k, (name, result) in enumerate(zip(names, matches)):
            played = int(result['games'][0])
            if played == 0:
                continue
            mean = float(result['score'][0]) / played if exact is None else float(exact[k])
            payoffs.record(new_name, name, mean, games=played)
            if name == new_name:
                continue
            # rate a bounded, shuffled sample of the match's outcomes (win +1, draw 0, loss -1)
            wins, draws = int(result['wins'][0]), int(result['draws'][0])
            outcomes = np.array([1.0] * wins + [0.0] * draws + [-1.0] * (played - wins - draws))
            ratings.record_results(new_name, name, rng.permutation(outcomes)[:64])

    def policy_tables(self) -> np.ndarray:
        """[K, S, A]: every pool policy tabulated on the poker game's information states, each once (pool
        policies are frozen), for the exact payoffs and the least exploitable output."""
        from pufferlib.arena import NetworkPlayer
        tree = game_tree(self.env)
        self.tables += [tree.tabulate(NetworkPlayer(n).probabilities) for n in self.networks[len(self.tables):]]
        return np.stack(self.tables)

    def versus_scripted(self, name, network, ratings: Ratings) -> dict | None:
        """Win rate from each seat against the env's built-in scripted opponent (its one-row mode,
        `two_player=False`), when league.scripted_games > 0 and the env has one; the games (one task)
        are rated against the baseline `scripted`."""
        if self.settings['scripted_games'] <= 0 or 'two_player' not in self.config['env'] \
                or 'seat' not in self.config['env']:
            return None
        task = Task(f'scripted games of {name}', scripted_task,
                    (self.env, self.config, self.settings['seed'], self.tasks.share(name, network)), 1)
        [outcomes] = self.tasks.run(len(self.names) - 1, [task])
        if 'scripted' not in ratings:
            ratings.add('scripted', baseline=True)
        rates = {}
        for seat, results in outcomes.items():
            results = np.asarray(results, dtype=np.float64)
            rates[seat] = float((results > 0).mean())
            ratings.record_results(name, 'scripted', results[:32])
        return rates

    def _tree(self):
        return game_tree(self.env)

    def exploitability(self, names, networks, weights) -> float | None:
        """Of the league's output (the meta-strategy over the population), by the OpenSpiel referee."""
        if self.env not in OPENSPIEL_GAMES:
            return None
        from pufferlib.arena import NetworkPlayer
        keep = np.flatnonzero(weights > 0)
        return mixture_exploitability(self.env, [NetworkPlayer(networks[k]).probabilities for k in keep],
                                      weights[keep])

    def output_weights(self, names, payoffs: PayoffTable) -> np.ndarray:
        """What the league plays: the latest policy (self-play), the average of the snapshots (FSP),
        the meta-strategy (PSRO), or with league.output = "least_exploitable" the population's least
        exploitable mixture in the whole game (poker; the responses still train against the meta-strategy).
        On Leduc the meta-strategy's Nash of the restricted game stayed near 0.2 while its population held
        mixtures near 0.1 (docs/league.md, "The population holds better mixtures than the meta-strategy")."""
        n = len(names)
        if self.settings['method'] == 'self_play':
            return np.eye(n)[-1]
        if self.settings['method'] == 'fsp':
            return np.full(n, 1.0 / n)
        if self.settings['output'] == 'least_exploitable':  # poker only (check_settings): the whole game's LP
            return game_tree(self.env).least_exploitable(self.policy_tables()[:n])[1]
        return meta_strategy(payoffs.matrix(fill=0.0), self.settings['meta_solver'])

    # ---- the loop ----

    def state(self):
        """(records, names, payoffs, ratings) of the last finished iteration."""
        self.ledger.repair()
        records = [r for r in self.ledger.read() if r.get('type') == 'iteration']
        if not records:
            return records, [], PayoffTable(), Ratings()
        last = records[-1]
        return records, list(last['population']), PayoffTable.from_dict(last['payoffs']), \
            Ratings.from_dict(last['ratings'])

    def open(self) -> None:
        """Load the last finished iteration's state and every pool policy (a corrupt one fails here,
        before anything is written), and connect the backend that runs the tasks. The league's lock is
        taken first: a second driver would append to the same ledger."""
        from pufferlib.arena import LeagueError
        self.lock = rundir.claim(self.path, 'league', LeagueError)
        try:
            self._open()
        except BaseException:
            self.lock.release()
            raise

    def _open(self) -> None:
        import torch
        records, self.names, self.payoffs, self.ratings = self.state()
        # The arena steps its games in this process, between the policies' calls, and the networks are
        # small: extra intra-op threads only wait on each other (two 200k-step Kuhn responses took 44-77 s
        # with torch's default of one per core, 7-9 s with one, on the shared 2-core box). Tasks set the
        # same in their Ray workers. train.torch_threads > 0 overrides.
        torch.set_num_threads(self.config['train']['torch_threads'] or 1)
        self.arena = self.open_env(self.env, self.config, 1)  # the spaces the networks are made for
        try:
            self.networks = [self.load_policy(name, self.arena) for name in self.names]
            self.tables = []  # their poker tables, made as they are needed (policy_tables)
            self.tasks = TaskRunner(open_backend(self.settings), self.env, self.config, self.path)
        except BaseException:
            self.arena.close()
            raise
        self.seconds = records[-1]['seconds'] if records else 0.0
        self.ledger.append({'type': 'session', 'time': time.time(), 'pid': os.getpid(),
                            'backend': self.settings['backend']})

    def iterate(self, referee: bool = True) -> dict:
        """One iteration: a response trained against the method's opponents (none for the first,
        untrained policy), saved, evaluated against the population, the meta-game solved; then its
        ledger line. `referee=False` leaves the exploitability out (benchmarks measure it aside)."""
        import torch
        start, iteration = time.time(), len(self.names)
        name, names, networks = f'p{iteration:03d}', self.names, self.networks
        if iteration == 0:
            torch.manual_seed(self.settings['seed'])
            network, stats = self.new_network(self.arena), {'steps': 0}
        else:
            network, stats = self.respond(name, self.opponent_weights(names, self.payoffs, self.ratings))
        network.eval()
        self.save_policy(name, network)
        names.append(name)
        networks.append(network)
        self.payoffs.add(name)
        self.ratings.add(name)
        self.evaluate(name, self.payoffs, self.ratings)
        scripted = self.versus_scripted(name, network, self.ratings)
        self.output = self.output_weights(names, self.payoffs)
        self.seconds += time.time() - start  # training and evaluation; the referee is not timed
        exploit = self.exploitability(names, networks, self.output) if referee else None
        record = {'type': 'iteration', 'iteration': iteration, 'policy': name, 'population': list(names),
                  'method': self.settings['method'], 'meta': self.output.tolist(), 'exploitability': exploit,
                  'seconds': self.seconds, 'payoffs': self.payoffs.to_dict(), 'ratings': self.ratings.to_dict(),
                  'scripted_win_rate': scripted, **stats}
        self.write_views(self.payoffs, self.ratings)
        self.ledger.append(record)
        return record

    def close(self) -> None:
        try:
            self.arena.close()
            self.tasks.close()
        finally:
            if self.lock is not None:
                self.lock.release()

    def run(self, printer: Callable[[str], None] | None = print) -> dict:
        """Iterate until the population has league.iterations policies."""
        self.open()
        try:
            if printer is not None and self.settings['backend'] == 'ray':
                printer(f'tasks run on Ray: {self.tasks.backend.describe()}')
            while len(self.names) < self.settings['iterations']:
                record = self.iterate()
                if printer is not None:
                    exploit = record['exploitability']
                    exploit = '' if exploit is None else f', exploitability {exploit:.4f}'
                    scripted = record['scripted_win_rate']
                    scripted = '' if scripted is None else ', wins vs scripted ' + ' '.join(
                        f'{seat} {rate:.0%}' for seat, rate in scripted.items())
                    baseline = '' if 'baseline_games' not in record else (
                        f', in training {record["baseline_games"]:.0%} of games vs scripted, '
                        f'{record["baseline_win_rate"]:.0%} won')
                    printer(f'iteration {record["iteration"]}: {record["policy"]} ({record["steps"]:,} steps), '
                            f'{record["seconds"]:.0f} s{exploit}{scripted}{baseline}')
        finally:
            self.close()
        return {'path': self.path, 'iterations': len(self.names), 'leaderboard': self.ratings.format_leaderboard()}

    def write_views(self, payoffs: PayoffTable, ratings: Ratings) -> None:
        rundir.write_text(os.path.join(self.path, 'payoffs.json'), json.dumps(payoffs.to_dict()))
        rundir.write_text(os.path.join(self.path, 'leaderboard.txt'), ratings.format_leaderboard() + '\n')


# ---------------------------------------------------------------------------------------------
# 7. Where the work runs: tasks, and the local and Ray backends
# ---------------------------------------------------------------------------------------------
# A task is a module-level function of plain data (the env's name, the config, seeds, policies as
# state dicts), so a Ray worker anywhere can import and run it; it opens its own arena unless the
# local backend lends it one kept open between iterations. With a seed a task's result depends on
# its arguments alone (Arena.async_reset and play_games reseed everything they draw from), so the
# two backends give the same matches.

RAY_WHO = 'league.backend = "ray"'


class Task(NamedTuple):
    label: str          # names the task in errors: 'response p003', 'match p003 vs p001'
    fn: Callable
    args: tuple
    games: int | None   # the size of the arena it plays in (the local backend lends one of that size)


def policy_state(network) -> dict:
    """A network's weights as plain CPU tensors: what travels to and from tasks."""
    return {k: v.detach().cpu().clone() for k, v in network.state_dict().items()}


def eval_envs(settings: dict) -> int:
    """Games in an evaluation arena: enough for one match in one wave of games."""
    return min(settings['num_envs'], settings['eval_games'])


def match_seed(seed: int, iteration: int, opponent: int) -> int:
    """The seed of the match of iteration's policy against population member `opponent`."""
    return int(np.random.SeedSequence([seed % 2**64, iteration, opponent]).generate_state(1)[0])


@functools.lru_cache(maxsize=2)
def game_tree(env_name: str) -> GameTree:
    """The poker env's GameTree, built once per process (a Ray worker keeps it between tasks)."""
    return GameTree(env_name)


@contextlib.contextmanager
def _task_arena(env_name: str, config: dict, games: int, arena=None):
    if arena is not None:
        yield arena
        return
    import torch
    torch.set_num_threads(config['train']['torch_threads'] or 1)  # as the driver does (League.open)
    arena = League.open_env(env_name, config, games)
    try:
        yield arena
    finally:
        arena.close()


def _network(config: dict, arena, state: dict):
    from pufferlib.trainer import make_policy
    network = make_policy(arena, config)
    network.load_state_dict(state)
    return network


def train_response(env_name: str, config: dict, arena, network, opponents, weights, iteration: int) -> dict:
    """PPO for league.steps_per_iteration steps of the learner's rows against the weighted pool, and
    against the env's built-in player in league.baseline_share of the games (`baseline_games` in the
    stats: the share of the learner's finished games it played; `baseline_win_rate`: its wins in them)."""
    from pufferlib.arena import BuiltinPlayer, NetworkPlayer
    from pufferlib.trainer import Trainer
    import torch
    config = {section: dict(values) for section, values in config.items()}
    config['train']['total_timesteps'] = config['league']['steps_per_iteration']
    config['train']['seed'] = config['league']['seed'] + iteration
    torch.manual_seed(config['train']['seed'])
    keep = np.flatnonzero(weights > 0)
    players = [NetworkPlayer(opponents[k], name=str(k)) for k in keep]
    pool_weights = weights[keep] / weights[keep].sum()
    share = config['league']['baseline_share']
    if share > 0:
        players.append(BuiltinPlayer())
        pool_weights = np.append(pool_weights * (1.0 - share), share)
    arena.set_opponents(players, pool_weights)
    network.train()
    for p in network.parameters():  # a copy of a frozen pool member
        p.requires_grad_(True)
    trainer = Trainer(config, arena, network, env_name=env_name)
    while trainer.epoch < trainer.total_epochs:
        trainer.rollout()
        trainer.update()
    stats = {'steps': trainer.global_step, **{k: float(v) for k, v in trainer.losses.items()}}
    if share > 0:
        games, wins = arena.results['games'], arena.results['wins']
        stats['baseline_games'] = float(games[-1] / max(games.sum(), 1))
        stats['baseline_win_rate'] = float(wins[-1] / max(games[-1], 1))
    return stats


def response_gain(env_name: str, network, networks, weights) -> float | None:
    """Exact payoff of `network` against the meta-strategy `weights` (poker envs; None elsewhere)."""
    if env_name not in OPENSPIEL_GAMES:
        return None
    from pufferlib.arena import NetworkPlayer
    tree = game_tree(env_name)
    tables = np.stack([tree.tabulate(NetworkPlayer(n).probabilities) for n in networks])
    mine = tree.tabulate(NetworkPlayer(copy.deepcopy(network)).probabilities)
    return float(tree.payoffs(mine[None], tables)[0] @ weights)


def finish_response(env_name: str, config: dict, arena, network, networks, weights, iteration: int,
                    stats: dict) -> dict:
    """Keep training a PSRO response that does not yet beat the meta-strategy (its payoff against it is
    at most the meta-game's value, 0), up to league.response_rounds rounds in all. A response that
    fails adds nothing: the meta-strategy stays, and a fresh response against it fails the same way
    (Kuhn stalled at 0.072); continuing the same one, with a fresh optimizer and learning-rate
    schedule each round, got from -0.004 to 0.057 of a possible 0.072 in three more rounds
    (scripts/psro_oracle_gap.py, docs/league.md)."""
    gain = response_gain(env_name, network, networks, weights)
    rounds = 1
    while gain is not None and gain <= 1e-3 and rounds < config['league']['response_rounds']:
        network.train()
        more = train_response(env_name, config, arena, network, networks, weights, iteration + 1000 * rounds)
        stats = {**more, 'steps': stats['steps'] + more['steps']}
        gain, rounds = response_gain(env_name, network, networks, weights), rounds + 1
    return {**stats, 'response_rounds': rounds, 'response_gain': gain}


def response_task(env_name: str, config: dict, iteration: int, weights: list, start: dict, *pool: dict,
                  arena=None) -> tuple[dict, dict]:
    """The response of `iteration`: the network `start` trained against the pool (state dicts, one
    weight each), on until it beats them for PSRO on poker. Returns (its state dict, stats)."""
    weights = np.asarray(weights, dtype=np.float64)
    with _task_arena(env_name, config, config['league']['num_envs'], arena) as arena:
        network = _network(config, arena, start)
        opponents = [_network(config, arena, state) for state in pool]
        stats = train_response(env_name, config, arena, network, opponents, weights, iteration)
        if config['league']['method'] == 'psro':
            stats = finish_response(env_name, config, arena, network, opponents, weights, iteration, stats)
        return policy_state(network), stats


def match_task(env_name: str, config: dict, seed: int, player: dict, opponent: dict, arena=None) -> dict:
    """league.eval_games games of the policy `player` against `opponent` (state dicts), seats drawn per
    game; the results (arrays of one entry: games, score, wins, draws) depend on the seed alone."""
    from pufferlib.arena import NetworkPlayer, play_games
    with _task_arena(env_name, config, eval_envs(config['league']), arena) as arena:
        arena.set_opponents([NetworkPlayer(_network(config, arena, opponent), name='opponent')])
        return play_games(arena, NetworkPlayer(_network(config, arena, player), name='player'),
                          config['league']['eval_games'], seed=seed)


def scripted_task(env_name: str, config: dict, seed: int, player: dict, arena=None) -> dict:
    """league.scripted_games games of the policy `player` from each seat against the env's scripted
    opponent (its one-row mode): the outcomes, +1 win, 0 draw, -1 loss, by seat. Each of the env's
    games plays the same number of games and only those count (arena.first_games), in order of round
    then game: the first games to end anywhere would be the short ones, and those are more often wins."""
    import torch

    from pufferlib import registry
    from pufferlib.arena import NetworkPlayer, first_games
    games, outcomes = config['league']['scripted_games'], {}
    slots = min(games, 1024)
    rounds = -(-games // slots)
    with _task_arena(env_name, config, 1, arena) as arena, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        network = NetworkPlayer(_network(config, arena, player))
        for seat in (0, 1):
            options = {**config['env'], 'two_player': False, 'seat': seat, 'num_envs': slots}
            env = registry.make(env_name, **options)
            try:
                env.reset(seed)
                results, played = np.zeros((rounds, slots)), np.zeros(slots, dtype=np.int64)
                while (played < rounds).any():
                    env.step(network.act(env.observations, env.action_masks))
                    ended = np.flatnonzero(env.terminals | env.truncations)
                    keep = first_games(ended, played, rounds)
                    results[played[keep] - 1, keep] = np.sign(env.rewards[keep])
            finally:
                env.close()
            outcomes[f'seat{seat}'] = results.ravel()[:games].tolist()
    return outcomes


def open_backend(settings: dict) -> LocalBackend | RayBackend:
    """Where the league's tasks run (league.backend): here, or Ray tasks at league.ray_address."""
    if settings['backend'] == 'ray':
        return RayBackend(settings['ray_address'] or None, settings['ray_cpus'] or None, RAY_WHO)
    return LocalBackend()


class TaskRunner:
    """A league's tasks on a backend (pufferlib/backend.py). Local tasks borrow arenas kept open between
    iterations; pool policies go to tasks once each (into Ray's object store on Ray)."""

    def __init__(self, backend: LocalBackend | RayBackend, env_name: str, config: dict, path: str):
        self.backend, self.env, self.config, self.path = backend, env_name, config, path
        self.shared: dict[str, object] = {}  # policy name -> its state as tasks receive it
        self.arenas: dict[int, object] = {}  # games -> an arena lent to local tasks

    def share(self, name: str, network) -> object:
        if name not in self.shared:
            self.shared[name] = self.backend.put(policy_state(network))
        return self.shared[name]

    def run(self, iteration: int, tasks: list[Task]) -> list:
        """The tasks' results in order. A task the backend failed (its Ray worker died, it raised there)
        is one LeagueError naming it: the iteration is not written, so nothing finished is lost."""
        from pufferlib.arena import LeagueError
        futures = []
        for task in tasks:
            lend = {}
            if isinstance(self.backend, LocalBackend):
                if task.games not in self.arenas:
                    self.arenas[task.games] = League.open_env(self.env, self.config, task.games)
                lend = {'arena': self.arenas[task.games]}
            futures.append(self.backend.submit(task.fn, *task.args, **lend))
            if futures[-1].done() and futures[-1].exception() is not None:
                break  # a local task failed: the ones after it would be wasted work
        # When a Ray task fails, the iteration's other tasks are left to finish and their results dropped,
        # not cancelled: the failed task frees its CPU, Ray dispatches the next queued one at that very
        # moment, and a cancel crossing that dispatch aborts Ray 2.60's driver (cluster.cancel_unfinished
        # says how). Ray stops them when the driver exits; close() shuts down a Ray we started.
        results = []
        for task, future in zip(tasks, futures):
            try:
                results.append(future.result())
            except Exception as e:
                reason = self.backend.remote_failure(e)
                if reason is None:
                    raise
                raise LeagueError(
                    f'league iteration {iteration}: the Ray task {task.label!r} failed ({reason}). Nothing in '
                    f'{self.path} was lost: the ledger keeps the {iteration} finished iteration(s) and their '
                    f'policies. Fix the cause and continue with `puffer league --resume {self.path}`') from None
        return results

    def close(self) -> None:
        for arena in self.arenas.values():
            arena.close()
        self.arenas.clear()
        self.backend.close()


def report(path: str, printer: Callable[[str], None] | None = print) -> list[str]:
    """Print the leaderboard; write ratings.png (each policy's OpenSkill ordinal over the iterations),
    exploitability.png (poker envs: against seconds of training and evaluation) and payoffs.png (the
    payoff table as a heatmap). Returns the paths written."""
    from pufferlib.arena import LeagueError
    league = League(path)
    records, names, payoffs, ratings = league.state()
    if not records:
        raise LeagueError(f'the league {path} has no finished iteration yet; run it with '
                          f'`puffer league --resume {path}`')
    if printer is not None:
        printer(ratings.format_leaderboard())
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    written = []

    def save(fig, name):
        out = os.path.join(path, name)
        fig.tight_layout()
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in names:
        points = [(r['iteration'], r['ratings'][name]['mu'] - 3 * r['ratings'][name]['sigma'])
                  for r in records if name in r['ratings']]
        ax.plot(*zip(*points), marker='.', label=name if len(names) <= 12 else None)
    ax.set_xlabel('iteration')
    ax.set_ylabel('OpenSkill ordinal (mu - 3 sigma)')
    ax.set_title(f'{league.env} {league.settings["method"]}: ratings')
    ax.grid(alpha=0.3)
    if len(names) <= 12:
        ax.legend(fontsize=7)
    save(fig, 'ratings.png')

    curve = [(r['seconds'], r['exploitability']) for r in records if r.get('exploitability') is not None]
    if curve:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(*zip(*curve), marker='.')
        ax.set_yscale('log')
        ax.set_xlabel('seconds (training and evaluation)')
        ax.set_ylabel('exploitability (OpenSpiel, NashConv / 2)')
        ax.set_title(f'{league.env} {league.settings["method"]}: exploitability')
        ax.grid(alpha=0.3)
        save(fig, 'exploitability.png')

    matrix = payoffs.matrix()
    fig, ax = plt.subplots(figsize=(6, 5))
    limit = float(np.nanmax(np.abs(matrix))) if np.isfinite(matrix).any() else 1.0
    image = ax.imshow(matrix, cmap='RdBu', vmin=-limit, vmax=limit)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel('opponent')
    ax.set_ylabel('policy')
    fig.colorbar(image, ax=ax, label='mean payoff')
    ax.set_title(f'{league.env}: payoff table')
    save(fig, 'payoffs.png')
    return written
