"""Exact expected payoffs between tabular policies of the poker envs (puffer_kuhn, puffer_leduc): a
`GameTree` of every terminal history of the env's OpenSpiel game, payoffs by matrix products, and the
least exploitable mixture of a population by one linear program.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from pufferlib.league.referee import PolicyFn, information_states, openspiel_game
from pufferlib.league.solvers import require
from pufferlib.pufferenv import APIUsageError

if TYPE_CHECKING:  # open_spiel and scipy (the league extra) load when a tree is built or solved
    import pyspiel
    from open_spiel.python.policy import TabularPolicy

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

    def __init__(self, env_name: str) -> None:
        game = openspiel_game(env_name)
        self.env_name = env_name if env_name.startswith('puffer_') else f'puffer_{env_name}'
        table, self.obs, self.legal = information_states(game)
        self.states, self.actions = self.legal.shape
        lookup = table.state_lookup
        sentinel = self.states * self.actions  # points at a probability of 1: pads short histories
        weights: list[float] = []
        decisions: tuple[list[list[int]], list[list[int]]] = ([], [])

        def walk(state: pyspiel.State, chance: float, path: list[list[int]]) -> None:
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
        self.index: list[np.ndarray] = []
        for player in (0, 1):
            depth = max(len(d) for d in decisions[player])
            padded = np.full((len(weights), depth), sentinel, dtype=np.int64)
            for h, d in enumerate(decisions[player]):
                padded[h, :len(d)] = d
            self.index.append(padded)
        self._sequences: dict[int, tuple[Any, Any]] = {}  # player -> its sequence form, made when first needed
        self._decisions: dict[int, np.ndarray] = {}  # player -> the decision of each sequence (-1: the empty one)

    def _reach(self, probs: np.ndarray, player: int) -> np.ndarray:
        flat = np.concatenate([probs.reshape(len(probs), -1), np.ones((len(probs), 1))], axis=1)
        return flat[:, self.index[player]].prod(axis=2)  # [K, histories]

    def check(self, probs: ArrayLike) -> np.ndarray:
        probs = np.asarray(probs, dtype=np.float64)
        if probs.ndim == 2:
            probs = probs[None]
        if probs.shape[1:] != (self.states, self.actions):
            raise APIUsageError(f'{self.env_name}: a policy table must be [{self.states}, {self.actions}] (information '
                                f'states x actions), got {list(probs.shape[1:])}')
        return probs

    def seat_payoffs(self, seat0: ArrayLike, seat1: ArrayLike) -> np.ndarray:
        """[Ka, Kb]: the expected payoff to seat 0 when table a plays seat 0 and table b seat 1."""
        a, b = self.check(seat0), self.check(seat1)
        return (self._reach(a, 0) * self.weights) @ self._reach(b, 1).T

    def payoffs(self, tables_a: ArrayLike, tables_b: ArrayLike | None = None) -> np.ndarray:
        """[Ka, Kb]: the expected payoff to a against b, each playing both seats equally often (the
        symmetric meta-game PSRO solves)."""
        tables_b = tables_a if tables_b is None else tables_b
        return 0.5 * (self.seat_payoffs(tables_a, tables_b) - self.seat_payoffs(tables_b, tables_a).T)

    def _sequence_form(self, player: int) -> tuple[Any, Any]:
        """The sequence form of `player`'s strategies, for `least_exploitable`: (E^T [sequences, 1 +
        information states], M [sequences, histories]). A sequence is the empty one (column 0) or a
        decision (information state, action); a realization plan y satisfies y(empty) = 1 and, at each of
        the player's information states I, sum_a y(I, a) = y(parent sequence of I). M maps a history to
        the player's last sequence on it, so that a realization plan plays history h with weight
        y(last sequence of h)."""
        import scipy.sparse as sparse
        if player in self._sequences:
            return self._sequences[player]
        sentinel = self.states * self.actions
        columns: dict[int, int] = {-1: 0}
        parent: dict[int, int] = {}
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
            rows.append(sequence)
            cols.append(row_of[state])
            values.append(1.0)
        for decision, sequence in columns.items():  # -y(I, a) in the row of I
            if decision >= 0:
                rows.append(sequence)
                cols.append(row_of[decision // self.actions])
                values.append(-1.0)
        et = sparse.csr_matrix((values, (rows, cols)), shape=(len(columns), 1 + len(parent)))
        m = sparse.csr_matrix((np.ones(len(last)), (last, np.arange(len(last)))), shape=(len(columns), len(last)))
        self._sequences[player] = (et, m)
        decisions = np.full(len(columns), -1, dtype=np.int64)
        for decision, sequence in columns.items():
            decisions[sequence] = decision
        self._decisions[player] = decisions
        return et, m

    def _seat_gains(self, tables: np.ndarray, weights: np.ndarray, seat: int) -> np.ndarray:
        """[sequences of `seat`]: what each of seat's terminal sequences earns it against the mixture
        `weights` of `tables` in the other seat (chance and the mixture's reach folded in)."""
        _, m = self._sequence_form(seat)
        sign = 1.0 if seat == 0 else -1.0  # self.weights are seat 0's payoffs
        reach = weights @ self._reach(tables, 1 - seat)  # the mixture is drawn per game: its reach is linear
        return np.asarray(m @ (sign * self.weights * reach))

    def best_response(self, tables: ArrayLike, weights: ArrayLike,
                      seat1_weights: ArrayLike | None = None) -> tuple[np.ndarray, float]:
        """The exact best response to the mixture `weights` of `tables` [K, S, A], as a deterministic table
        [S, A], and its expected payoff against the mixture (the mean over the two seats). With
        `seat1_weights` the opponent draws by `weights` when it sits in seat 0 and by those in seat 1
        (a per-seat meta-strategy); each information state belongs to one seat, so one table holds the
        response of both seats. Per seat, one LP over that seat's sequence form (max gains . y, y a
        realization plan); HiGHS returns a vertex, a pure strategy. Information states the response
        never reaches (its own earlier choices avoid them) play uniformly: they cannot change a payoff.
        Why an LP and not OpenSpiel's best response: the payoffs are already in matrix form here, and one
        HiGHS solve per seat takes milliseconds on Leduc where OpenSpiel walks the tree in Python."""
        from scipy.optimize import linprog
        tables = self.check(tables)
        mixtures = []
        for w in (weights, weights if seat1_weights is None else seat1_weights):
            w = np.asarray(w, dtype=np.float64)
            if w.shape != (len(tables),) or (w < 0).any() or w.sum() <= 0:
                raise APIUsageError(f'best_response: need one non-negative weight per table ({len(tables)}), got '
                                    f'{w.tolist()}')
            mixtures.append(w / w.sum())
        table = np.zeros((self.states, self.actions))
        value = 0.0
        for seat in (0, 1):
            et, _ = self._sequence_form(seat)
            gains = self._seat_gains(tables, mixtures[1 - seat], seat)  # the opponent sits in the other seat
            target = np.zeros(et.shape[1])
            target[0] = 1.0
            result = linprog(-gains, A_eq=et.T, b_eq=target, bounds=(0.0, None), method='highs')
            if result.status != 0:
                raise RuntimeError(f'best_response: the LP failed ({result.message})')
            value += 0.5 * float(-result.fun)
            decisions = self._decisions[seat]
            chosen = decisions >= 0
            np.add.at(table.reshape(-1), decisions[chosen], result.x[chosen])
        reached = table.sum(1, keepdims=True) > 1e-9
        # a vertex is pure: its argmax drops the solver's tolerance, so the table is exactly deterministic
        pure = np.eye(self.actions)[table.argmax(1)]
        return np.where(reached, pure, self.legal / self.legal.sum(1, keepdims=True)), value

    def least_exploitable(self, tables: ArrayLike, weights: ArrayLike | None = None) -> tuple[float, np.ndarray]:
        """The mixture of `tables` [K, S, A] (each drawn for a whole game, as a meta-strategy is played)
        that is least exploitable in the whole game, and its exploitability (NashConv / 2); with
        `weights`, the exploitability of that mixture instead. One linear program: the mixture's reach
        of every history is linear in its weights, so the best-responding opponent of each seat is an
        LP over that seat's sequence form (`_sequence_form`), and its dual joins the weights in one
        minimisation. No meta-solver that mixes these policies can do better than this; PSRO's Nash of
        the restricted game can be far from it (scripts/lab/results/league.md)."""
        import scipy.sparse as sparse
        from scipy.optimize import linprog
        tables = self.check(tables)
        k = len(tables)
        blocks: list[tuple[Any, Any]] = []
        sizes: list[int] = []
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

    def to_openspiel(self, probs: np.ndarray) -> TabularPolicy:
        """The OpenSpiel TabularPolicy of a table (for the referee: `exploitability`)."""
        policy_lib = require('open_spiel.python.policy')
        table = policy_lib.TabularPolicy(openspiel_game(self.env_name))
        table.action_probability_array[...] = self.check(probs)[0]
        return table


@functools.lru_cache(maxsize=2)
def game_tree(env_name: str) -> GameTree:
    """The poker env's GameTree, built once per process (a Ray worker keeps it between tasks)."""
    return GameTree(env_name)
