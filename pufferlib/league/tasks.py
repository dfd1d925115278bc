"""Where the league's work runs. An iteration's response and matches are tasks of plain data, run in the
driver's process (`--league.backend local`) or as Ray tasks on a cluster (`ray`); the ledger, payoff
table, ratings and policies stay with the driver.

A task is a module-level function of plain data (the env's name, the config, seeds, policies as state
dicts), so a Ray worker anywhere can import and run it; it opens its own arena unless the local backend
lends it one kept open between iterations. With a seed a task's result depends on its arguments alone
(Arena.async_reset and play_games reseed everything they draw from), so the two backends give the same
matches.
"""
from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import torch

import pufferlib.vector
from pufferlib import invocation, registry
from pufferlib.arena import (Arena, ArenaEnv, BuiltinPlayer, LeagueError, NetworkPlayer, Player, first_games,
                             play_games)
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib.league.gametree import game_tree
from pufferlib.league.referee import OPENSPIEL_GAMES
from pufferlib.models import make_policy
from pufferlib.trainer import Trainer

RAY_WHO = 'league.backend = "ray"'
# A resolved config: its sections ([train], [env], [league], ...) by name, each a dict of settings.
Config = dict[str, dict[str, Any]]
# A network's weights as tasks send and receive them (policy_state); on Ray, a handle to them instead.
State = dict[str, torch.Tensor]


class Task(NamedTuple):
    label: str          # names the task in errors: 'response p003', 'match p003 vs p001'
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    games: int | None   # the size of the arena it plays in (the local backend lends one of that size); None: none


def policy_state(network: torch.nn.Module) -> State:
    """A network's weights as plain CPU tensors: what travels to and from tasks."""
    return {k: v.detach().cpu().clone() for k, v in network.state_dict().items()}


def eval_envs(settings: dict[str, Any]) -> int:
    """Games in an evaluation arena: enough for one match in one wave of games."""
    return min(settings['num_envs'], settings['eval_games'])


def match_seed(seed: int, iteration: int, opponent: int) -> int:
    """The seed of the match of iteration's policy against population member `opponent`."""
    return int(np.random.SeedSequence([seed % 2**64, iteration, opponent]).generate_state(1)[0])


def open_env(env_name: str, config: Config, games: int) -> Arena:
    """An arena of `games` games of the env (League.open_env): the driver's and every task's."""
    env: ArenaEnv
    if registry.lookup(env_name).family == 'ocean':  # one env object runs every game in C
        env = registry.make(env_name, **{**config['env'], 'num_envs': games})
    else:  # one Python env per game (PettingZoo's turn-based games), their rows and masks in one Serial vector
        env = pufferlib.vector.from_config(env_name, {'backend': 'Serial', 'num_envs': games},
                                           seed=config['league']['seed'], env_kwargs=config['env'])
    try:
        return Arena(env, learner_seat=None if config['league']['learner_seat'] < 0
                     else config['league']['learner_seat'], seed=config['league']['seed'], name=env_name)
    except BaseException:
        env.close()
        raise


@contextlib.contextmanager
def _task_arena(env_name: str, config: Config, games: int, arena: Arena | None = None) -> Iterator[Arena]:
    if arena is not None:
        yield arena
        return
    torch.set_num_threads(config['train']['torch_threads'] or 1)  # as the driver does (League.open)
    arena = open_env(env_name, config, games)
    try:
        yield arena
    finally:
        arena.close()


def network_from_state(config: Config, arena: Arena, state: State) -> torch.nn.Module:
    """A network of the config's policy for the arena's spaces, with the weights `state`."""
    network = make_policy(arena, config)
    network.load_state_dict(state)
    return network


def train_response(env_name: str, config: Config, arena: Arena, network: torch.nn.Module,
                   opponents: list[torch.nn.Module], weights: np.ndarray, iteration: int) -> dict[str, float]:
    """PPO for league.steps_per_iteration steps of the learner's rows against the weighted pool, and
    against the env's built-in player in league.baseline_share of the games (`baseline_games` in the
    stats: the share of the learner's finished games it played; `baseline_win_rate`: its wins in them)."""
    config = {section: dict(values) for section, values in config.items()}
    config['train']['total_timesteps'] = config['league']['steps_per_iteration']
    config['train']['seed'] = config['league']['seed'] + iteration
    torch.manual_seed(config['train']['seed'])
    keep = np.flatnonzero(weights > 0)
    players: list[Player] = [NetworkPlayer(opponents[k], name=str(k)) for k in keep]
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


def distill_table(env_name: str, network: torch.nn.Module, table: np.ndarray, max_steps: int = 50,
                  tolerance: float = 0.01) -> dict[str, float]:
    """Fit `network` to play the poker table [S, A] (the exact oracle's best response) on every
    information state it reaches, by cross-entropy on its masked action distribution, until each such
    state's probability of the table's action is within `tolerance` of 1. Why the response becomes a network
    rather than staying a table: the rest of the league (matches, ratings, the pool, export) plays
    networks. The game's few hundred states make this a fraction of a second."""
    tree = game_tree(env_name)
    # Only the states the response reaches matter (and the oracle's are deterministic): elsewhere its
    # own earlier choices keep it away, whatever it would play.
    rows = torch.as_tensor(table.max(1) > 1.0 - 1e-9)
    obs = torch.as_tensor(tree.obs, dtype=torch.float32)[rows]
    legal = torch.as_tensor(tree.legal, dtype=torch.bool)[rows]
    target = torch.as_tensor(table, dtype=torch.float32)[rows]
    network.train()
    for p in network.parameters():
        p.requires_grad_(True)
    # One small full batch: L-BFGS with a line search. Adam (lr 0.1) needed 476 steps from the latest
    # response and did not reach the tolerance in 2,000 from a fresh head (Leduc, 45 policies, 360 rows);
    # L-BFGS reached it in 4-5 steps of up to 20 evaluations, 0.44-0.56 CPU s against 1.1-5.1.
    optimizer = torch.optim.LBFGS(network.parameters(), lr=1, max_iter=20, line_search_fn='strong_wolfe')

    def loss_and_log_probs() -> tuple[torch.Tensor, torch.Tensor]:
        logits = cast(torch.Tensor, network(obs)[0]).masked_fill(~legal, -1e9)
        log_probs = torch.log_softmax(logits, dim=-1)
        return -(target * log_probs.masked_fill(~legal, 0.0)).sum(1).mean(), log_probs

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = loss_and_log_probs()[0]
        loss.backward()
        return loss

    gap, steps = float('inf'), 0
    while True:
        with torch.no_grad():
            gap = float((target - loss_and_log_probs()[1].exp()).abs().max())
        if gap <= tolerance or steps >= max_steps:
            break
        optimizer.step(closure)
        steps += 1
    network.eval()
    return {'distill_steps': float(steps), 'distill_gap': gap}


def response_gain(env_name: str, network: torch.nn.Module, networks: list[torch.nn.Module],
                  weights: np.ndarray) -> float | None:
    """Exact payoff of `network` against the meta-strategy `weights` (poker envs; None elsewhere)."""
    if env_name not in OPENSPIEL_GAMES:
        return None
    tree = game_tree(env_name)
    tables = np.stack([tree.tabulate(NetworkPlayer(n).probabilities) for n in networks])
    mine = tree.tabulate(NetworkPlayer(copy.deepcopy(network)).probabilities)
    return float(tree.payoffs(mine[None], tables)[0] @ weights)


def finish_response(env_name: str, config: Config, arena: Arena, network: torch.nn.Module,
                    networks: list[torch.nn.Module], weights: np.ndarray, iteration: int,
                    stats: dict[str, float]) -> dict[str, float | None]:
    """Keep training a PSRO response that does not yet beat the meta-strategy (its payoff against it is
    at most the meta-game's value, 0), up to league.response_rounds rounds in all. A response that
    fails adds nothing: the meta-strategy stays, and a fresh response against it fails the same way
    (Kuhn stalled at 0.072); continuing the same one, with a fresh optimizer and learning-rate
    schedule each round, got from -0.004 to 0.057 of a possible 0.072 in three more rounds
    (scripts/lab/research/psro_oracle_gap.py, scripts/lab/results/league.md)."""
    gain = response_gain(env_name, network, networks, weights)
    rounds = 1
    while gain is not None and gain <= 1e-3 and rounds < config['league']['response_rounds']:
        network.train()
        more = train_response(env_name, config, arena, network, networks, weights, iteration + 1000 * rounds)
        stats = {**more, 'steps': stats['steps'] + more['steps']}
        gain, rounds = response_gain(env_name, network, networks, weights), rounds + 1
    return {**stats, 'response_rounds': rounds, 'response_gain': gain}


def response_task(env_name: str, config: Config, iteration: int, weights: list[float], start: State, *pool: State,
                  arena: Arena | None = None) -> tuple[State, Mapping[str, float | None]]:
    """The response of `iteration`: the network `start` trained against the pool (state dicts, one
    weight each), on until it beats them for PSRO on poker. Returns (its state dict, stats)."""
    mixture = np.asarray(weights, dtype=np.float64)
    with _task_arena(env_name, config, config['league']['num_envs'], arena) as arena:
        network = network_from_state(config, arena, start)
        opponents = [network_from_state(config, arena, state) for state in pool]
        stats = train_response(env_name, config, arena, network, opponents, mixture, iteration)
        if config['league']['method'] == 'psro':
            return policy_state(network), finish_response(env_name, config, arena, network, opponents, mixture,
                                                          iteration, stats)
        return policy_state(network), stats


def match_task(env_name: str, config: Config, seed: int, player: State, opponent: State,
               arena: Arena | None = None) -> dict[str, np.ndarray]:
    """league.eval_games games of the policy `player` against `opponent` (state dicts), seats drawn per
    game; the results (arrays of one entry: games, score, wins, draws) depend on the seed alone."""
    with _task_arena(env_name, config, eval_envs(config['league']), arena) as arena:
        arena.set_opponents([NetworkPlayer(network_from_state(config, arena, opponent), name='opponent')])
        return play_games(arena, NetworkPlayer(network_from_state(config, arena, player), name='player'),
                          config['league']['eval_games'], seed=seed)


def scripted_task(env_name: str, config: Config, seed: int, player: State,
                  arena: Arena | None = None) -> dict[str, list[float]]:
    """league.scripted_games games of the policy `player` from each seat against the env's scripted
    opponent (its one-row mode): the outcomes, +1 win, 0 draw, -1 loss, by seat. Each of the env's
    games plays the same number of games and only those count (arena.first_games), in order of round
    then game: the first games to end anywhere would be the short ones, and those are more often wins."""
    games, outcomes = config['league']['scripted_games'], {}
    slots = min(games, 1024)
    rounds = -(-games // slots)
    with _task_arena(env_name, config, 1, arena) as arena, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        network = NetworkPlayer(network_from_state(config, arena, player))
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


def open_backend(settings: dict[str, Any]) -> LocalBackend | RayBackend:
    """Where the league's tasks run (league.backend): here, or Ray tasks at league.ray_address."""
    if settings['backend'] == 'ray':
        return RayBackend(settings['ray_address'] or None, settings['ray_cpus'] or None, RAY_WHO)
    return LocalBackend()


class TaskRunner:
    """A league's tasks on a backend (pufferlib/backend.py). Local tasks borrow arenas kept open between
    iterations; pool policies go to tasks once each (into Ray's object store on Ray)."""

    def __init__(self, backend: LocalBackend | RayBackend, env_name: str, config: Config, path: str) -> None:
        self.backend, self.env, self.config, self.path = backend, env_name, config, path
        self.shared: dict[str, Any] = {}  # policy name -> its state as tasks receive it
        self.arenas: dict[int, Arena] = {}  # games -> an arena lent to local tasks

    def share(self, name: str, network: torch.nn.Module) -> Any:
        if name not in self.shared:
            self.shared[name] = self.backend.put(policy_state(network))
        return self.shared[name]

    def run(self, iteration: int, tasks: list[Task]) -> list[Any]:
        """The tasks' results in order. A task the backend failed (its Ray worker died, it raised there)
        is one LeagueError naming it: the iteration is not written, so nothing finished is lost."""
        futures = []
        for task in tasks:
            lend = {}
            if isinstance(self.backend, LocalBackend) and task.games is not None:
                if task.games not in self.arenas:
                    self.arenas[task.games] = open_env(self.env, self.config, task.games)
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
                    f'policies. Fix the cause and continue with '
                    f'`{invocation.command("league", "--resume", Path(self.path))}`') from None
        return results

    def close(self) -> None:
        for arena in self.arenas.values():
            arena.close()
        self.arenas.clear()
        self.backend.close()
