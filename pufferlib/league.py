"""Population play: meta-game solvers, a payoff table, ratings, and OpenSpiel as the referee.

This part is the game-theory toolkit; the league loop (self-play, fictitious self-play, PSRO over
policies trained by our PPO) builds on it. Each section stands alone and is tested with known answers
in tests/test_league.py:

1. Meta-game solvers for a matrix game `payoffs[i, j]` (the row player's payoff when it plays i and the
   column player plays j): `nash` (exact, two-player zero-sum, by linear programming with scipy),
   `fictitious_play`, and `alpharank` (OpenSpiel's implementation).
2. `PayoffTable`: mean payoffs between the policies of a population that grows one policy at a time.
3. `Ratings`: OpenSkill ratings over the population and any scripted or frozen baselines, and a
   leaderboard.
4. The OpenSpiel referee for puffer_kuhn and puffer_leduc: turn a policy of ours (a function of our
   observation and legal-action mask) into an OpenSpiel TabularPolicy and measure its exploitability
   with OpenSpiel's exact best response.

scipy, openskill and open_spiel come with the `league` extra (`pip install "pufferlib[league]"`); they
are imported when first used, so `import pufferlib.league` works without them.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence

import numpy as np

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
