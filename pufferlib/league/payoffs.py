"""What the league knows about its population: `PayoffTable`, mean payoffs between the policies of a
population that grows one policy at a time, and `Ratings`, OpenSkill ratings over the population and any
scripted or frozen baselines, with a leaderboard.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pufferlib.league.solvers import require
from pufferlib.pufferenv import APIUsageError

if TYPE_CHECKING:  # openskill (the league extra) loads when the first Ratings is made (solvers.require)
    from openskill.models import PlackettLuceRating


class PayoffTable:
    """Mean payoff of each policy against each other one, from the games recorded so far.

    The population grows one policy at a time (`add`); `record(i, j, payoff, games)` folds in `games`
    games whose mean payoff to i against j was `payoff`. In a symmetric zero-sum game (`zero_sum=True`,
    the default; both seats played equally often) a game between i and j also tells j's payoff, so
    entry (j, i) receives the negated games.
    """

    def __init__(self, names: Sequence[str] = (), zero_sum: bool = True) -> None:
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

    def to_dict(self) -> dict[str, Any]:
        return {'names': list(self.names), 'zero_sum': self.zero_sum,
                'sums': self._sums.tolist(), 'games': self._games.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PayoffTable:
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


class Ratings:
    """OpenSkill ratings (Weng-Lin Bayesian ratings, Plackett-Luce model, from the `openskill` package) of
    a population and of baselines (scripted or frozen policies that are rated but not trained).

    `record(a, b, score)` rates one game: score > 0 means a won, < 0 b won, 0 a draw. The leaderboard
    sorts by the conservative estimate mu - 3 sigma (openskill's `ordinal`), so a policy with few games
    does not top it by luck.
    """

    def __init__(self) -> None:
        models = require('openskill.models')
        self.model = models.PlackettLuce()
        self._ratings: dict[str, PlackettLuceRating] = {}
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

    def _get(self, name: str) -> PlackettLuceRating:
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

    def record_results(self, a: str, b: str, scores: Iterable[float]) -> None:
        """Rate a series of games between a and b, in order."""
        for score in scores:
            self.record(a, b, float(score))

    def rating(self, name: str) -> tuple[float, float]:
        r = self._get(name)
        return float(r.mu), float(r.sigma)

    def win_probability(self, a: str, b: str) -> float:
        """The model's probability that a beats b."""
        return float(self.model.predict_win([[self._get(a)], [self._get(b)]])[0])

    def leaderboard(self) -> list[dict[str, Any]]:
        """Rows {rank, name, mu, sigma, ordinal, games, baseline}, best first."""
        rows: list[dict[str, Any]] = [
            {'name': name, 'mu': float(r.mu), 'sigma': float(r.sigma), 'ordinal': float(r.ordinal()),
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

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: {'mu': float(r.mu), 'sigma': float(r.sigma), 'games': self.games[name],
                       'baseline': name in self.baselines} for name, r in self._ratings.items()}

    @classmethod
    def from_dict(cls, data: dict[str, dict[str, Any]]) -> Ratings:
        ratings = cls()
        try:
            for name, row in data.items():
                ratings.add(name, baseline=bool(row['baseline']))
                ratings._ratings[name] = ratings.model.rating(mu=float(row['mu']), sigma=float(row['sigma']), name=name)
                ratings.games[name] = int(row['games'])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise APIUsageError(f'Ratings.from_dict: not saved ratings ({e!r})') from None
        return ratings
