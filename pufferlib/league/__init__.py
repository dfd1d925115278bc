"""Population play: meta-game solvers, a payoff table, ratings, OpenSpiel as the referee, and the league
loop built on them and on pufferlib/arena.py. One module per role:

- `solvers`: meta-game solvers for a matrix game `payoffs[i, j]` (the row player's payoff when it plays i
  and the column player plays j): `nash` (exact, two-player zero-sum, by linear programming with scipy),
  `fictitious_play`, `alpharank` (OpenSpiel's implementation) and `uniform`; `meta_strategy` picks one
  by name.
- `payoffs`: `PayoffTable`, mean payoffs between the policies of a population that grows one policy at a
  time, and `Ratings`, OpenSkill ratings over the population and any scripted or frozen baselines, and a
  leaderboard.
- `referee`: OpenSpiel as the referee for puffer_kuhn and puffer_leduc: turn a policy of ours (a function
  of our observation and legal-action mask) into an OpenSpiel TabularPolicy and measure its
  exploitability with OpenSpiel's exact best response.
- `gametree`: `GameTree`, exact expected payoffs between tabular poker policies, by matrix products, and
  the least exploitable mixture of a population.
- `loop`: the league (`puffer league`): a directory with a ledger; self-play, fictitious self-play or
  PSRO, each iteration a PPO response (pufferlib/arena.py) then evaluation matches and ratings.
- `tasks`: where the work runs: an iteration's response and matches are tasks of plain data, run in this
  process (`--league.backend local`) or as Ray tasks on a cluster (`ray`); the ledger, payoff table,
  ratings and policies stay with the driver, this process.
- `plots`: `report`, a league's leaderboard and plots.

The first four are the game-theory toolkit, each standing alone and tested with known answers in
tests/test_league.py. scipy, openskill and open_spiel come with the `league` extra (`pip install
"pufferlib[league]"`); they are imported when first used, so `import pufferlib.league` works without
them. Every name below is also `pufferlib.league.<name>`.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pufferlib.league.gametree import FORBIDDEN_PLAYS_AS, GameTree, game_tree
from pufferlib.league.payoffs import PayoffTable, Ratings
from pufferlib.league.referee import (OPENSPIEL_GAMES, PolicyFn, exploitability, information_states,
                                      mixture_exploitability, openspiel_game, policy_from_tabular, tabular_policy,
                                      uniform_policy)
from pufferlib.league.solvers import (LEAGUE_INSTALL, META_SOLVERS, SOLVERS, alpharank, fictitious_play, meta_strategy,
                                      nash, uniform)

if TYPE_CHECKING:
    from pufferlib.backend import LocalBackend, RayBackend
    from pufferlib.league.loop import (BACKENDS, FSP_SAMPLING, METHODS, OUTPUTS, RESPONSE_INIT, RESUME_FLAGS, League,
                                       check_settings, create, leagues_dir)
    from pufferlib.league.plots import report
    from pufferlib.league.tasks import (RAY_WHO, Task, TaskRunner, eval_envs, finish_response, match_seed, match_task,
                                        network_from_state, open_backend, policy_state, response_gain, response_task,
                                        scripted_task, train_response)

# The loop, its tasks and the report train or load networks, so they import torch (and matplotlib), which
# the toolkit above does without: they load when one of their names is first asked for, which keeps
# `import pufferlib.league` (and `puffer league --help`) as light as the toolkit.
_LAZY = {
    'loop': ('BACKENDS', 'FSP_SAMPLING', 'METHODS', 'OUTPUTS', 'RESPONSE_INIT', 'RESUME_FLAGS', 'League',
             'check_settings', 'create', 'leagues_dir'),
    'tasks': ('RAY_WHO', 'Task', 'TaskRunner', 'eval_envs', 'finish_response', 'match_seed', 'match_task',
              'network_from_state', 'open_backend', 'policy_state', 'response_gain', 'response_task', 'scripted_task',
              'train_response', 'LocalBackend', 'RayBackend'),
    'plots': ('report',),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'{__name__}.{_HOME[name]}'), name)


__all__ = [
    'BACKENDS', 'FORBIDDEN_PLAYS_AS', 'FSP_SAMPLING', 'LEAGUE_INSTALL', 'META_SOLVERS', 'METHODS', 'OPENSPIEL_GAMES',
    'OUTPUTS', 'RAY_WHO', 'RESPONSE_INIT', 'RESUME_FLAGS', 'SOLVERS', 'GameTree', 'League', 'LocalBackend',
    'PayoffTable', 'PolicyFn', 'Ratings', 'RayBackend', 'Task', 'TaskRunner', 'alpharank', 'check_settings', 'create',
    'eval_envs',
    'exploitability', 'fictitious_play', 'finish_response', 'game_tree', 'information_states', 'leagues_dir',
    'match_seed', 'match_task', 'meta_strategy', 'mixture_exploitability', 'nash', 'network_from_state',
    'open_backend', 'openspiel_game', 'policy_from_tabular', 'policy_state', 'report', 'response_gain',
    'response_task', 'scripted_task', 'tabular_policy', 'train_response', 'uniform', 'uniform_policy',
]
