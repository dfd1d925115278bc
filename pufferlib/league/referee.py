"""OpenSpiel as the referee for puffer_kuhn and puffer_leduc: turn a policy of ours (a function of our
observation and legal-action mask) into an OpenSpiel TabularPolicy and measure its exploitability with
OpenSpiel's exact best response.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from pufferlib.league.solvers import require
from pufferlib.pufferenv import APIUsageError

if TYPE_CHECKING:  # open_spiel (the league extra) loads when a referee is first asked (solvers.require)
    import pyspiel
    from open_spiel.python.policy import TabularPolicy

# Our env -> OpenSpiel game. The observation of puffer_kuhn / puffer_leduc is, by construction,
# OpenSpiel's information_state_tensor of the observing player, and their action ids are OpenSpiel's
# (tests/test_poker.py checks the C envs against OpenSpiel at every decision of random playouts), so an
# information state maps to exactly one of our observations.
OPENSPIEL_GAMES = {'puffer_kuhn': 'kuhn_poker', 'puffer_leduc': 'leduc_poker'}

# A policy of ours for the referee: (observations [N, obs_size] float32, legal masks [N, actions] uint8)
# -> action probabilities [N, actions]. Probability put on illegal actions is dropped and the rest
# renormalised, as a masked sampler does.
PolicyFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def openspiel_game(env_name: str) -> pyspiel.Game:
    """The OpenSpiel game that `env_name` ('puffer_kuhn' or 'puffer_leduc') reproduces."""
    name = env_name if str(env_name).startswith('puffer_') else f'puffer_{env_name}'
    if name not in OPENSPIEL_GAMES:
        raise APIUsageError(f'no OpenSpiel referee for {env_name!r}; it exists for {", ".join(OPENSPIEL_GAMES)}')
    pyspiel = require('pyspiel')
    return pyspiel.load_game(OPENSPIEL_GAMES[name])


def information_states(game: pyspiel.Game) -> tuple[TabularPolicy, np.ndarray, np.ndarray]:
    """Every information state of `game` where a player acts, as OpenSpiel's TabularPolicy orders them:
    (an empty TabularPolicy, our observations [S, obs_size] float32, legal masks [S, actions] uint8)."""
    policy_lib = require('open_spiel.python.policy')
    table = policy_lib.TabularPolicy(game)
    obs = np.array([s.information_state_tensor(s.current_player()) for s in table.states], dtype=np.float32)
    legal = table.legal_actions_mask.astype(np.uint8)
    return table, obs, legal


def tabular_policy(env_name: str, policy: PolicyFn, game: pyspiel.Game | None = None) -> TabularPolicy:
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


def exploitability(env_name: str, policy: PolicyFn | TabularPolicy) -> float:
    """Exploitability (NashConv / 2) of `policy` played from both seats, by OpenSpiel's exact best
    response: 0 at a Nash equilibrium, the average gain of a best-responding opponent otherwise.
    `policy` is a PolicyFn or an OpenSpiel TabularPolicy of the env's game."""
    game = openspiel_game(env_name)
    policy_lib = require('open_spiel.python.policy')
    table = policy if isinstance(policy, policy_lib.TabularPolicy) else tabular_policy(env_name, policy, game)
    pyspiel = require('pyspiel')
    return float(pyspiel.exploitability(game, policy_lib.python_policy_to_pyspiel_policy(table)))


def mixture_exploitability(env_name: str, policies: Sequence[PolicyFn | TabularPolicy], weights: ArrayLike,
                           seat1_weights: ArrayLike | None = None) -> float:
    """Exploitability of a meta-strategy: at the start of each game draw policy k with probability
    weights[k] and play it throughout (what PSRO and fictitious self-play output); with `seat1_weights`,
    seat 0 draws by `weights` and seat 1 by those (a per-seat meta-strategy). The mixture becomes one
    behaviour policy by OpenSpiel's PolicyAggregator (reach-weighted per information state)."""
    seats = []
    for w in (weights, weights if seat1_weights is None else seat1_weights):
        w = np.asarray(w, dtype=np.float64)
        if len(policies) == 0 or w.shape != (len(policies),) or (w < 0).any() or w.sum() <= 0:
            raise APIUsageError(f'mixture_exploitability: need one non-negative weight per policy '
                                f'({len(policies)} policies, weights {w.tolist()})')
        seats.append((w / w.sum()).tolist())
    game = openspiel_game(env_name)
    policy_lib = require('open_spiel.python.policy')
    aggregator_lib = require('open_spiel.python.algorithms.policy_aggregator')
    tables = [p if isinstance(p, policy_lib.TabularPolicy) else tabular_policy(env_name, p, game) for p in policies]
    mixed = aggregator_lib.PolicyAggregator(game).aggregate([0, 1], [tables, tables], seats)
    return exploitability(env_name, mixed.to_tabular())


def uniform_policy(obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The uniformly random legal policy, as a PolicyFn."""
    return legal.astype(np.float64)


def policy_from_tabular(table: TabularPolicy) -> PolicyFn:
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
