"""The league loop (`puffer league`): a directory with a ledger; self-play, fictitious self-play or PSRO,
each iteration a PPO response (pufferlib/arena.py) then evaluation matches and ratings. `create` makes
the directory, `League` is the driver that alone reads and writes it; the work of an iteration runs as
tasks (tasks.py).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pufferlib import cluster, invocation, registry, rundir
from pufferlib import config as configuration
from pufferlib.arena import Arena, LeagueError, NetworkPlayer, no_builtin_player, two_seat_envs
from pufferlib.checkpoint import load_checkpoint
from pufferlib.league.gametree import GameTree, game_tree
from pufferlib.league.payoffs import PayoffTable, Ratings
from pufferlib.league.referee import OPENSPIEL_GAMES, mixture_exploitability
from pufferlib.league.solvers import META_SOLVERS, meta_strategy, nash
from pufferlib.league.tasks import (RAY_WHO, Config, Task, TaskRunner, distill_table, eval_envs, match_seed, match_task,
                                    open_backend, open_env, policy_state, response_task, scripted_task)
from pufferlib.models import make_policy
from pufferlib.rundir import CheckpointError

METHODS = ('self_play', 'fsp', 'psro')
FSP_SAMPLING = ('uniform', 'prioritized')
RESPONSE_INIT = ('fresh', 'features')
BACKENDS = ('local', 'ray')
OUTPUTS = ('meta', 'least_exploitable')
ORACLES = ('ppo', 'exact')
# With exact payoffs, the evaluation games only rate: a new policy plays this many of the meta-strategy's heaviest.
RATED_SUPPORT = 8
# What a resumed league may change: how far it goes and where its tasks run, nothing that changes results.
RESUME_FLAGS = ('--league.iterations', '--league.backend', '--league.ray-address', '--league.ray-cpus')


NUMBER = (int, float)
# Each kind of ledger line: the keys every such line has, then those that lines written by older versions
# may lack, each with the JSON types its value may take. Resume and --report read the lines back: one of
# the wrong shape must fail there, naming its line, not later as a KeyError deep in a plot.
LEDGER_RECORDS: dict[str, tuple[dict[str, tuple[type, ...]], dict[str, tuple[type, ...]]]] = {
    'session': ({'time': NUMBER, 'pid': (int,)}, {'backend': (str,)}),
    'iteration': ({'iteration': (int,), 'policy': (str,), 'population': (list,), 'method': (str,), 'meta': (list,),
                   'exploitability': (*NUMBER, type(None)), 'seconds': NUMBER, 'payoffs': (dict,),
                   'ratings': (dict,)},
                  {'policy_sha256': (str,), 'scripted_win_rate': (dict, type(None)), 'steps': NUMBER,
                   'meta_seat1': (list,)}),
}
JSON_NAMES = {int: 'an integer', float: 'a number', str: 'a string', list: 'a list', dict: 'an object',
              bool: 'true or false', type(None): 'null'}


def _typed(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))  # JSON true is no number


def _wrong(what: str, value: Any, types: tuple[type, ...]) -> str:
    names = [JSON_NAMES[t] for t in types if not (t is int and float in types)]
    return f'{what} is {json.dumps(value)[:40]}, not {" or ".join(names)}'


def ledger_problem(record: Any) -> str | None:
    """What is wrong with a ledger line's record (LEDGER_RECORDS, and the payoff table's and ratings'
    shapes that resume and --report read), or None."""
    if not isinstance(record, dict):
        return f'{JSON_NAMES.get(type(record), type(record).__name__)}, not an object'
    kind = record.get('type')
    if kind not in LEDGER_RECORDS:
        return f'its type is {json.dumps(kind)}, not one of {", ".join(LEDGER_RECORDS)}'
    required, optional = LEDGER_RECORDS[kind]
    for key, types in {**required, **optional}.items():
        if key not in record:
            if key in required:
                return f'no {key!r}'
        elif not _typed(record[key], types):
            return _wrong(repr(key), record[key], types)
    if kind != 'iteration':
        return None
    names = record['population']
    if not all(isinstance(name, str) for name in names) or record['policy'] not in names:
        return f"'population' is not a list of policy names with {record['policy']!r} in it"
    for key in ('meta', 'meta_seat1'):
        if key in record and (len(record[key]) != len(names) or not all(_typed(w, NUMBER) for w in record[key])):
            return f"{key!r} is not {len(names)} numbers, one per policy of the population"
    payoffs = record['payoffs']
    for key, types in (('names', (list,)), ('zero_sum', (bool,)), ('sums', (list,)), ('games', (list,))):
        if not _typed(payoffs.get(key), types):
            return _wrong(f"'payoffs' {key!r}", payoffs.get(key), types)
    n = len(payoffs['names'])
    for key in ('sums', 'games'):
        try:
            shape = np.array(payoffs[key], dtype=np.float64).shape
        except (TypeError, ValueError):
            shape = None
        if shape != (n, n):
            return f"'payoffs' {key!r} is not {n} x {n} numbers, one per pair of its names"
    for name, row in record['ratings'].items():
        if not isinstance(row, dict):
            return _wrong(f"'ratings' of {name}", row, (dict,))
        for key, types in (('mu', NUMBER), ('sigma', NUMBER), ('games', (int,)), ('baseline', (bool,))):
            if not _typed(row.get(key), types):
                return _wrong(f"'ratings' {key!r} of {name}", row.get(key), types)
    return None


def leagues_dir() -> str:
    return os.path.join(rundir.experiments_dir(), 'leagues')


def check_settings(settings: dict[str, Any], env_name: str) -> None:
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
    if settings['oracle'] not in ORACLES:
        raise LeagueError(f'league.oracle must be ppo (a PPO response) or exact (poker: the exact best response), got '
                          f'{settings["oracle"]!r}')
    if settings['oracle'] == 'exact':
        if env_name not in OPENSPIEL_GAMES:
            raise LeagueError(f'league.oracle = "exact" computes best responses over the whole game tree, which exists '
                              f'for {", ".join(OPENSPIEL_GAMES)}, not {env_name}; set --league.oracle ppo')
        # the oracle is PSRO's: self-play and FSP train their one learner whatever it says (the poker
        # configs default to exact, and --league.method fsp alone must still work there)
        if settings['method'] == 'psro' and settings['meta_solver'] != 'nash':
            raise LeagueError('league.oracle = "exact" is PSRO with the Nash meta-solver of the per-seat meta-game; '
                              'set --league.meta-solver nash, or --league.oracle ppo')


def check_seats(env_name: str, config: Config, rows: int) -> None:
    """An Ocean env is a game between seats when it has a `two_player` option. One whose `rows` agent rows
    play side by side (puffer_drone's drones, puffer_snake's snakes) has no opponent, and a league on it would
    report zero-sum payoffs of a game that is not one. Other families: the arena's count of seats stands."""
    if registry.family_of(env_name) != 'ocean' or 'two_player' in config['env']:
        return
    seated = ', '.join(two_seat_envs())
    raise LeagueError(f'{env_name} has {rows} agent rows per game that play side by side, not seats of one game, '
                      f'and population play needs two or more seats: use {seated} (two_player on, as a league sets '
                      f"it) or PettingZoo's turn-based games (pettingzoo_tictactoe, ...); "
                      f'`{invocation.command("envs")}` lists every env')


def create(env_name: str, flags: Sequence[str] = (), config_file: str | None = None, root: str | None = None) -> str:
    """A new league directory with its resolved config (league.toml); returns its path. An env that
    has a `two_player` option gets it on unless a flag says otherwise."""
    config = configuration.load(env_name, flags, config_file)
    if 'two_player' in config['env'] and not any(f.replace('_', '-').startswith('--env.two-player') for f in flags):
        config['env']['two_player'] = True
    check_settings(config['league'], env_name)
    games, horizon = config['league']['num_envs'], config['train']['bptt_horizon']
    rollout = games * horizon  # the learner has one row per game
    # Both would fail only after iteration 0 had written the directory, in the trainer's words
    # (train.total_timesteps) rather than the league flag the user set.
    if config['train']['minibatch_size'] > rollout:
        raise configuration.ConfigError(
            f'train.minibatch_size={config["train"]["minibatch_size"]} is larger than one rollout of the learner '
            f'(league.num_envs {games} x train.bptt_horizon {horizon} = {rollout}); lower it or raise league.num_envs')
    if config['league']['steps_per_iteration'] < rollout:
        raise LeagueError(
            f'league.steps_per_iteration={config["league"]["steps_per_iteration"]:,} is less than one rollout of the '
            f'learner (league.num_envs {games} x train.bptt_horizon {horizon} = {rollout:,} steps); raise it to at '
            f'least {rollout:,} or lower league.num_envs')
    arena = League.open_env(env_name, config, games=1)  # an env without two seats fails here, before any file
    arena.close()
    check_seats(env_name, config, arena.seats)
    if config['league']['baseline_share'] > 0 and not arena.supports_builtin:
        raise LeagueError(f'league.baseline_share={config["league"]["baseline_share"]}: '
                          f'{no_builtin_player(env_name)}; set --league.baseline-share 0')
    if config['league']['backend'] == 'ray':  # an unreachable cluster too
        cluster.check(config['league']['ray_address'] or None, config['league']['ray_cpus'] or None, RAY_WHO)
    path = rundir.new_directory(root or leagues_dir(), f'{env_name}-{config["league"]["method"]}', ['policies'])
    text = f'[_meta]\nenv = "{env_name}"\n\n' + configuration.to_toml(config)
    rundir.write_text(os.path.join(path, 'league.toml'), text)
    return path


class League:
    """A league directory: league.toml (the config), ledger.jsonl (one fsync'd line per finished
    iteration: the population, payoff table, ratings, meta-strategy, exploitability, seconds, the new
    policy's sha256, checked when it is loaded again; LEDGER_RECORDS is each kind of line's shape), policies/
    (every policy's weights, written before the ledger line that names it), payoffs.json and
    leaderboard.txt (views of the last line). The last ledger line is the league's state: a SIGKILL
    at any moment loses at most the iteration in progress, which is redone on resume.

    This object is the driver: it alone reads and writes the directory. The work of an iteration (the
    response's training, the evaluation matches) is a list of tasks (tasks.py) that a backend runs,
    here or as Ray tasks; policies go to them as state dicts and come back as state dicts."""

    # league.oracle = "exact": seat_payoff_matrix's cache, and seat_meta's last answer
    _seat_payoffs: np.ndarray
    _seat_meta: tuple[int, np.ndarray, np.ndarray] | None

    def __init__(self, path: str, flags: Sequence[str] = ()) -> None:
        self.path = path
        self.env, config = configuration.read_saved(
            path, 'league.toml', flags, RESUME_FLAGS, 'a resumed league keeps its config; only --league.iterations '
            'and where its tasks run (--league.backend, --league.ray-address, --league.ray-cpus) may change',
            LeagueError, leagues_dir())
        # a league made before a setting existed runs with its default (e.g. the Ray settings)
        config['league'] = {**configuration.defaults()['league'], **config.get('league', {})}
        self.config = configuration.parse_flags(list(flags), config) if flags else config
        self.settings = self.config['league']
        check_settings(self.settings, self.env)
        self.ledger = rundir.Ledger(os.path.join(path, 'ledger.jsonl'), LeagueError, ledger_problem)
        self.lock: rundir.DirLock | None = None
        self.digests: dict[str, str] = {}  # policy -> the sha256 its ledger line recorded (`state` fills it)

    @staticmethod
    def open_env(env_name: str, config: Config, games: int) -> Arena:
        """An arena of `games` games of the env; the tasks open theirs with the same function."""
        return open_env(env_name, config, games)

    # ---- policies ----

    def policy_path(self, name: str) -> str:
        return os.path.join(self.path, 'policies', f'{name}.pt')

    def new_network(self, arena: Arena) -> torch.nn.Module:
        return make_policy(arena, self.config)

    def save_policy(self, name: str, network: torch.nn.Module) -> str:
        """Write the policy's file; returns its sha256, which the ledger line that adds it records."""
        buffer = io.BytesIO()
        torch.save({'policy': network.state_dict(), 'name': name, 'env': self.env}, buffer)
        data = buffer.getvalue()
        rundir.atomic_write(self.policy_path(name), lambda f: f.write(data))
        return hashlib.sha256(data).hexdigest()

    def load_policy(self, name: str, arena: Arena) -> torch.nn.Module:
        """The pool policy's network, checked against the sha256 its ledger line recorded (when `state`
        found one): a file copied over another loads fine and would silently change the league."""
        path = self.policy_path(name)
        network = self.new_network(arena)
        try:
            with open(path, 'rb') as f:
                data = f.read()
            load_checkpoint(path, network, data)
        except (OSError, CheckpointError) as e:  # unreadable, truncated, not ours, or another architecture
            raise LeagueError(f'{path}: the pool policy {name} cannot be loaded ({type(e).__name__}: '
                              f'{str(e).splitlines()[0][:160]}). Restore that file (nothing in the league was '
                              f'changed) or start a new league') from None
        expected, actual = self.digests.get(name), hashlib.sha256(data).hexdigest()
        if expected is not None and actual != expected:
            raise LeagueError(f'{path}: the pool policy {name} is not the file the league wrote (sha256 '
                              f'{actual[:16]}..., the ledger recorded {expected[:16]}...): it was replaced or '
                              f'changed. Restore it from a backup, or cut the league back to before {name} (delete '
                              f'the line of ledger.jsonl that adds it and every line after), then resume; nothing '
                              f'in the league was changed')
        return network

    # ---- one iteration ----

    def opponent_weights(self, names: list[str], payoffs: PayoffTable, ratings: Ratings) -> np.ndarray:
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

    @property
    def exact_oracle(self) -> bool:
        """PSRO's responses computed (league.oracle = "exact"); other methods train their learner."""
        return self.settings['oracle'] == 'exact' and self.settings['method'] == 'psro'

    def response_start(self, iteration: int) -> Any:
        """What the iteration's response trains from, as its task receives it: a state dict made here, so
        that a Ray worker gets the same initial weights as the local backend (the driver alone reads the
        league directory). Self-play and FSP keep training one learner (the latest policy). A PSRO
        response starts with a fresh action head: a copy of the latest, nearly deterministic policy would
        barely explore and return a response close to itself, so the population would stop growing. With
        league.response_init = "features" the rest of the network (encoder and value head) is the latest
        response's: what it learned about the game carries over while the fresh head still starts near
        uniform play (Leduc: exploitability 0.5 in far fewer PPO steps, scripts/lab/results/league.md)."""
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

    def respond(self, name: str, weights: np.ndarray) -> tuple[torch.nn.Module, Mapping[str, float | None]]:
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

    def seat_meta(self, tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The per-seat meta-strategy (league.oracle = "exact"): the Nash equilibrium of the game in which
        seat 0 picks a policy of the population and seat 1 another, by the exact seat payoffs. The
        symmetric meta-game (one mixture for both seats) couples what a policy plays in one seat with
        what it plays in the other: with exact responses its Nash stayed near 0.2 on Leduc after 130
        responses where the per-seat one went below 0.1 (scripts/lab/results/league.md)."""
        n = len(tables)
        if self._seat_meta is not None and self._seat_meta[0] == n:  # asked again for the same population
            return self._seat_meta[1], self._seat_meta[2]
        seat0, seat1, _ = nash(self.seat_payoff_matrix(tables))
        self._seat_meta = (n, seat0, seat1)
        return seat0, seat1

    def seat_payoff_matrix(self, tables: np.ndarray) -> np.ndarray:
        """[K, K] exact seat-0 payoffs of the pool against itself (a seat 0, b seat 1), grown by the new
        rows and columns only: pool policies are frozen, and recomputing every entry made this matrix
        a growing share of an exact iteration's time past a hundred policies."""
        n, have = len(tables), len(self._seat_payoffs)
        if n > have:
            tree = game_tree(self.env)
            grown = np.zeros((n, n))
            grown[:have, :have] = self._seat_payoffs
            grown[have:, :] = tree.seat_payoffs(tables[have:], tables)
            if have:
                grown[:have, have:] = tree.seat_payoffs(tables[:have], tables[have:])
            self._seat_payoffs = grown
        return self._seat_payoffs[:n, :n]

    def exact_response(self, iteration: int) -> tuple[torch.nn.Module, dict[str, float]]:
        """PSRO's oracle computed, not trained (league.oracle = "exact", poker): each seat's exact best
        response to the other seat's meta-strategy (`GameTree.best_response`, an LP per seat), fitted
        into a fresh network (`distill_table`). It runs in the driver: milliseconds of
        LP and a fraction of a second of fitting, less than shipping a task. `response_gain` is what the
        response gains against the meta-strategy, which is the exploitability of that meta-strategy."""
        tables = self.policy_tables()
        seat0, seat1 = self.seat_meta(tables)
        table, gain = game_tree(self.env).best_response(tables, seat0, seat1)
        # A fresh network each time: fitting from the latest response carries its weights, which the fits
        # grow, from one response to the next, until the fit stalls (Leduc: stuck from the 12th response)
        torch.manual_seed(self.settings['seed'] + iteration)
        network = self.new_network(self.arena)
        return network, {'steps': 0, 'response_gain': gain, **distill_table(self.env, network, table)}

    def evaluate(self, new_name: str, payoffs: PayoffTable, ratings: Ratings) -> None:
        """One match (league.eval_games games, seats drawn per game) of the new policy against every
        policy, itself included, each its own task with its own seed, so a pair's result is the same on
        every backend: they fill the payoff table's new row and rate the games. The poker envs' payoffs
        are exact (GameTree) instead of sampled, so the meta-solver sees no noise."""
        names, networks, iteration = self.names, self.networks, len(self.names) - 1
        me = self.tasks.share(new_name, networks[-1])
        exact = None
        if self.env in OPENSPIEL_GAMES:
            tables = self.policy_tables()
            exact = game_tree(self.env).payoffs(tables[-1:], tables)[0]
        played_against = self.rated_opponents()
        tasks = [Task(f'match {new_name} vs {names[k]}', match_task,
                      (self.env, self.config, match_seed(self.settings['seed'], iteration, k), me,
                       self.tasks.share(names[k], networks[k])), eval_envs(self.settings))
                 for k in played_against]
        matches = dict(zip(played_against, self.tasks.run(iteration, tasks)))
        rng = np.random.default_rng(self.settings['seed'] + len(names))
        for k, name in enumerate(names):
            if exact is not None and k not in matches:  # an exact entry needs no games
                payoffs.record(new_name, name, float(exact[k]), games=1)
                continue
            result = matches[k]
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

    def rated_opponents(self) -> list[int]:
        """Whom the new policy plays evaluation games against: every policy, itself included; with
        league.oracle = "exact" (exact payoffs, games only for the ratings) itself and the RATED_SUPPORT
        heaviest policies of the current meta-strategy, so an iteration's cost stays flat as the
        population grows to the hundreds of responses that PSRO needs there."""
        n = len(self.names)
        if not self.exact_oracle or n <= RATED_SUPPORT + 1:
            return list(range(n))
        weights = self.output if self.output_seat1 is None else self.output + self.output_seat1
        heaviest = [int(k) for k in np.argsort(-weights, kind='stable')[:RATED_SUPPORT] if weights[k] > 0]
        return sorted(set(heaviest) | {n - 1})

    def policy_tables(self) -> np.ndarray:
        """[K, S, A]: every pool policy tabulated on the poker game's information states, each once (pool
        policies are frozen), for the exact payoffs and the least exploitable output."""
        tree = game_tree(self.env)
        self.tables += [tree.tabulate(NetworkPlayer(n).probabilities) for n in self.networks[len(self.tables):]]
        return np.stack(self.tables)

    def versus_scripted(self, name: str, network: torch.nn.Module, ratings: Ratings) -> dict[str, float] | None:
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

    def _tree(self) -> GameTree:
        return game_tree(self.env)

    def exploitability(self, names: list[str], networks: list[torch.nn.Module], weights: np.ndarray,
                       seat1: np.ndarray | None = None) -> float | None:
        """Of the league's output (the meta-strategy over the population; with `seat1`, seat 0 plays
        `weights` and seat 1 those), by the OpenSpiel referee."""
        if self.env not in OPENSPIEL_GAMES:
            return None
        keep = np.flatnonzero((weights > 0) | (seat1 > 0)) if seat1 is not None else np.flatnonzero(weights > 0)
        return mixture_exploitability(self.env, [NetworkPlayer(networks[k]).probabilities for k in keep],
                                      weights[keep], None if seat1 is None else seat1[keep])

    def output_weights(self, names: list[str], payoffs: PayoffTable) -> tuple[np.ndarray, np.ndarray | None]:
        """What the league plays: the latest policy (self-play), the average of the snapshots (FSP),
        the meta-strategy (PSRO), or with league.output = "least_exploitable" the population's least
        exploitable mixture in the whole game (poker; the responses still train against the meta-strategy).
        On Leduc the meta-strategy's Nash of the restricted game stayed near 0.2 while its population held
        mixtures near 0.1 (scripts/lab/results/league.md, "The population holds better mixtures than the
        meta-strategy").
        With league.oracle = "exact" the meta-strategy is per seat: (seat 0's weights, seat 1's);
        otherwise the second is None (both seats draw by the first)."""
        n = len(names)
        if self.settings['method'] == 'self_play':
            return np.eye(n)[-1], None
        if self.settings['method'] == 'fsp':
            return np.full(n, 1.0 / n), None
        if self.settings['output'] == 'least_exploitable':  # poker only (check_settings): the whole game's LP
            return game_tree(self.env).least_exploitable(self.policy_tables()[:n])[1], None
        if self.exact_oracle:
            return self.seat_meta(self.policy_tables()[:n])
        return meta_strategy(payoffs.matrix(fill=0.0), self.settings['meta_solver']), None

    # ---- the loop ----

    def state(self) -> tuple[list[dict[str, Any]], list[str], PayoffTable, Ratings]:
        """(records, names, payoffs, ratings) of the last finished iteration."""
        self.ledger.repair()
        records = [r for r in self.ledger.read() if r.get('type') == 'iteration']
        self.digests = {r['policy']: r['policy_sha256'] for r in records if 'policy_sha256' in r}
        if not records:
            return records, [], PayoffTable(), Ratings()
        last = records[-1]
        return records, list(last['population']), PayoffTable.from_dict(last['payoffs']), \
            Ratings.from_dict(last['ratings'])

    def open(self) -> None:
        """Load the last finished iteration's state and every pool policy (a corrupt one fails here,
        before anything is written), and connect the backend that runs the tasks. The league's lock is
        taken first: a second driver would append to the same ledger."""
        self.lock = rundir.claim(self.path, 'league', LeagueError)
        try:
            self._open()
        except BaseException:
            self.lock.release()
            raise

    def _open(self) -> None:
        records, self.names, self.payoffs, self.ratings = self.state()
        # The arena steps its games in this process, between the policies' calls, and the networks are
        # small: extra intra-op threads only wait on each other (two 200k-step Kuhn responses took 44-77 s
        # with torch's default of one per core, 7-9 s with one, on the shared 2-core box). Tasks set the
        # same in their Ray workers. train.torch_threads > 0 overrides.
        torch.set_num_threads(self.config['train']['torch_threads'] or 1)
        unchecked = [name for name in self.names if name not in self.digests]
        if unchecked:  # a ledger from before the digests were recorded still resumes
            shown = ', '.join(unchecked[:3]) + (', ...' if len(unchecked) > 3 else '')
            print(f'puffer league: {self.ledger.path} records no sha256 of {len(unchecked)} pool policies ({shown}; '
                  'written before they were recorded): those are loaded unchecked', file=sys.stderr)
        self.arena = self.open_env(self.env, self.config, 1)  # the spaces the networks are made for
        try:
            self.networks = [self.load_policy(name, self.arena) for name in self.names]
            self.tables: list[np.ndarray] = []  # their poker tables, made as they are needed (policy_tables)
            self._seat_payoffs, self._seat_meta = np.zeros((0, 0)), None
            self.tasks = TaskRunner(open_backend(self.settings), self.env, self.config, self.path)
            if self.exact_oracle:
                # The first torch optimizer made in a process imports torch's compiler stack (3-10 s here):
                # a cost of starting the league, paid here with the rest of it, not by the first response.
                torch.optim.LBFGS([torch.zeros(1, requires_grad=True)])
        except BaseException:
            self.arena.close()
            raise
        self.seconds = records[-1]['seconds'] if records else 0.0
        self.output = np.asarray(records[-1]['meta'] if records else [], dtype=np.float64)
        self.output_seat1 = np.asarray(records[-1]['meta_seat1']) if records and 'meta_seat1' in records[-1] else None
        self.ledger.append({'type': 'session', 'time': time.time(), 'pid': os.getpid(),
                            'backend': self.settings['backend']})

    def iterate(self, referee: bool = True) -> dict[str, Any]:
        """One iteration: a response trained against the method's opponents (none for the first,
        untrained policy), saved, evaluated against the population, the meta-game solved; then its
        ledger line. `referee=False` leaves the exploitability out (benchmarks measure it aside)."""
        start, iteration = time.time(), len(self.names)
        name, names, networks = f'p{iteration:03d}', self.names, self.networks
        stats: Mapping[str, float | None]
        if iteration == 0:
            torch.manual_seed(self.settings['seed'])
            network, stats = self.new_network(self.arena), {'steps': 0}
        elif self.exact_oracle:
            network, stats = self.exact_response(iteration)
        else:
            network, stats = self.respond(name, self.opponent_weights(names, self.payoffs, self.ratings))
        network.eval()
        digest = self.digests[name] = self.save_policy(name, network)
        names.append(name)
        networks.append(network)
        self.payoffs.add(name)
        self.ratings.add(name)
        self.evaluate(name, self.payoffs, self.ratings)
        scripted = self.versus_scripted(name, network, self.ratings)
        self.output, self.output_seat1 = self.output_weights(names, self.payoffs)
        self.seconds += time.time() - start  # training and evaluation; the referee is not timed
        exploit = self.exploitability(names, networks, self.output, self.output_seat1) if referee else None
        record = {'type': 'iteration', 'iteration': iteration, 'policy': name, 'policy_sha256': digest,
                  'population': list(names),
                  'method': self.settings['method'], 'meta': self.output.tolist(), 'exploitability': exploit,
                  'seconds': self.seconds, 'payoffs': self.payoffs.to_dict(), 'ratings': self.ratings.to_dict(),
                  'scripted_win_rate': scripted, **stats}
        if self.output_seat1 is not None:
            record['meta_seat1'] = self.output_seat1.tolist()
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

    def run(self, printer: Callable[[str], None] | None = print) -> dict[str, Any]:
        """Iterate until the population has league.iterations policies."""
        self.open()
        try:
            with rundir.sigterm_interrupts():
                return self._iterate_all(printer)
        except KeyboardInterrupt:
            # The ledger holds every finished iteration; the one in progress is redone on resume.
            print(f'\nleague interrupted after {len(self.names)} of {self.settings["iterations"]} policies (the '
                  f'iteration in progress reruns on resume). Resume with:\n  '
                  f'{invocation.command("league", "--resume", Path(self.path))}', file=sys.stderr)
            raise
        finally:
            self.close()

    def _iterate_all(self, printer: Callable[[str], None] | None) -> dict[str, Any]:
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
        return {'path': self.path, 'iterations': len(self.names), 'leaderboard': self.ratings.format_leaderboard()}

    def write_views(self, payoffs: PayoffTable, ratings: Ratings) -> None:
        rundir.write_text(os.path.join(self.path, 'payoffs.json'), json.dumps(payoffs.to_dict()))
        rundir.write_text(os.path.join(self.path, 'leaderboard.txt'), ratings.format_leaderboard() + '\n')
