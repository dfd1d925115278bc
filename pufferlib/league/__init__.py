"""Population play: meta-game solvers, a payoff table, ratings, and OpenSpiel as the referee.

Sections 1-5 are the game-theory toolkit, each a module of this package (solvers, payoffs, referee,
gametree), standing alone and tested with known answers in tests/test_league.py; sections 6 and 7, still
here, are the league loop built on it and on pufferlib/arena.py:

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
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from pufferlib import rundir
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib.league.gametree import FORBIDDEN_PLAYS_AS, GameTree, game_tree  # noqa: F401
from pufferlib.league.payoffs import PayoffTable, Ratings
from pufferlib.league.referee import (OPENSPIEL_GAMES, PolicyFn, exploitability, information_states,  # noqa: F401
                                      mixture_exploitability, openspiel_game, policy_from_tabular, tabular_policy,
                                      uniform_policy)
from pufferlib.league.solvers import (LEAGUE_INSTALL, META_SOLVERS, SOLVERS, alpharank, fictitious_play,  # noqa: F401
                                      meta_strategy, nash, uniform)

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
