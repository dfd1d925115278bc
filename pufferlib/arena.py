"""Rows to policies: the learner plays some rows of a vector env, frozen opponents play the others.

    arena = Arena(pufferlib.make('puffer_connect4', num_envs=1024, two_player=True), seed=0)
    arena.set_opponents([past_a, past_b], weights=[0.25, 0.75])      # Players (below)
    trainer = pufferlib.trainer.Trainer(config, arena, policy)       # it sees only the learner's rows

The wrapped env is a PufferEnv (an Ocean env holding many games) or a synchronous vector env whose env
instances have two or more agent rows each (two seats of a game). Per game the arena draws which row is
the learner's (`learner_seat`: a fixed seat, or None to draw it uniformly, so the learner plays every
side) and which opponent plays the game's other rows (by the pool's weights), and draws both again when
the learner's row ends its episode. To the trainer the arena is a synchronous vector env with one row
per game: the learner's observation, reward, terminal, truncation and liveness (`masks`: in turn-based
games, ocean/seats.h, a row is live only on its turn); only these rows enter its rollout buffer.

The opponents' rows are stepped here. On each step the live opponent rows are grouped by policy with
index arrays (no loop over rows); a pool of networks with one architecture runs all groups in one
vmapped forward pass over the stacked weights, any other pool one pass per distinct policy; actions are
sampled from the action-masked distribution. `infos` carry the learner's own episode statistics (its
return, win rate `perf`), not the opponents'.

`Player`s are what plays: `NetworkPlayer` (a frozen torch policy), `RandomPlayer` (uniform over legal
actions), `BuiltinPlayer` (the env's own scripted player, moving in C; `league.baseline_share`).
`play_games` pits one player against the pool without training, for evaluation matches.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Protocol, TypeGuard, cast

import numpy as np
import numpy.typing as npt
import torch
from gymnasium import spaces

from pufferlib import invocation
from pufferlib.distributions import Logits, mask_logits, sample_logits
from pufferlib.pufferenv import ActionCheck, APIUsageError, PufferError, action_dtype, space_shape

# ocean/seats.h SEATS_BUILTIN: the action that hands a live row's move to the env's built-in player.
BUILTIN_ACTION = -1

# Steps between reports of the learner's episode statistics in `infos`, like Ocean's logs.
REPORT_INTERVAL = 128


class LeagueError(PufferError, RuntimeError):
    """A league cannot run as asked: an env without two seats, an unknown method, a corrupt policy."""


# ---------------------------------------------------------------------------------------------
# Players
# ---------------------------------------------------------------------------------------------

class Player:
    """Picks actions for a batch of rows. `act(obs [n, ...], action_masks [n, actions] bool or None)`
    returns int actions [n, ...]."""

    name = 'player'
    network: torch.nn.Module | None = None  # a network player's (the arena may stack their weights)

    def act(self, obs: np.ndarray, action_masks: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError


class NetworkPlayer(Player):
    """A frozen policy network: samples from its (masked) action distribution. Feed-forward policies
    only: an opponent's rows change owner at every episode, so there is no memory to carry."""

    network: torch.nn.Module

    def __init__(self, network: torch.nn.Module, name: str = 'network') -> None:
        if getattr(network, 'is_recurrent', False):
            raise LeagueError(f'{name}: recurrent policies cannot be frozen opponents yet; use a feed-forward '
                              'policy for population play (no [rnn] class)')
        self.network = network.eval()
        for p in self.network.parameters():
            p.requires_grad_(False)
        self.name = name

    def logits(self, obs: torch.Tensor) -> Logits:
        with torch.no_grad():
            return self.network(obs)[0]

    def act(self, obs: np.ndarray, action_masks: np.ndarray | None) -> np.ndarray:
        mask = None if action_masks is None else torch.from_numpy(np.ascontiguousarray(action_masks))
        with torch.no_grad():
            action, _, _ = sample_logits(self.logits(torch.from_numpy(np.ascontiguousarray(obs))), mask=mask)
        return action.numpy()

    def probabilities(self, obs: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Action probabilities [n, actions] (masked), for exact evaluation and the referee."""
        with torch.no_grad():
            logits = self.logits(torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)))
            logits = mask_logits(logits, torch.from_numpy(np.ascontiguousarray(action_masks, dtype=bool)))
            # The referee's games have Discrete actions: their logits are one tensor.
            return torch.softmax(cast(torch.Tensor, logits).float(), dim=-1).numpy().astype(np.float64)


class RandomPlayer(Player):
    """Uniform over the legal actions (Discrete spaces)."""

    def __init__(self, num_actions: int, name: str = 'random', seed: int = 0) -> None:
        self.num_actions, self.name = int(num_actions), name
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_masks: np.ndarray | None) -> np.ndarray:
        n = len(obs)
        legal = np.ones((n, self.num_actions), dtype=bool) if action_masks is None else action_masks
        # the argmax of uniform noise over the legal entries is a uniform legal action
        return np.where(legal, self.rng.random(legal.shape), -1.0).argmax(1)

    def probabilities(self, obs: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return action_masks.astype(np.float64) / action_masks.sum(1, keepdims=True)


class BuiltinPlayer(Player):
    """The env's built-in player: the C code that plays the other seat in one-row mode (puffer_connect4:
    win, else block, else random), moving for the rows it owns. It sends the action BUILTIN_ACTION and
    the env makes the move inside its step, so the league trains against exactly the player it is
    measured against, at the cost of one C move per row. Only for Ocean envs whose spec.toml says
    `builtin = true` under [action] (`supports_builtin`)."""

    def __init__(self, name: str = 'scripted') -> None:
        self.name = name

    def act(self, obs: np.ndarray, action_masks: np.ndarray | None) -> np.ndarray:
        return np.full(len(obs), BUILTIN_ACTION, dtype=np.int32)


def supports_builtin(env: object) -> bool:
    """Whether `env`'s live rows can hand their move to its built-in player (BuiltinPlayer)."""
    # a spec with both action forms (slimevolley's continuous option) has that player in the discrete one only
    box = isinstance(getattr(env, 'single_action_space', None), spaces.Box)
    return bool(getattr(getattr(env, 'spec', None), 'action_builtin', False)) and not box


def no_builtin_player(name: str) -> str:
    """The one sentence saying `name` has no built-in player; callers add what to do about it."""
    return (f'{name} has no built-in player that can move for a row (its spec.toml does not say `builtin = true` '
            'under [action]; puffer_connect4 has one)')


class StackedNetworks:
    """Same-architecture networks run as one: their weights stacked, the forward pass vmapped over them.

    `logits(obs [P, M, ...])` -> logits [P, M, actions], network p applied to obs[p]."""

    def __init__(self, networks: list[torch.nn.Module]) -> None:
        from torch.func import functional_call, stack_module_state
        self.size = len(networks)
        self.params, self.buffers = stack_module_state(networks)
        self.params = {k: v.detach() for k, v in self.params.items()}
        base = copy.deepcopy(networks[0]).to('meta')

        def one(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], obs: torch.Tensor) -> Logits:
            return functional_call(base, (params, buffers), (obs,))[0]
        self._forward = torch.vmap(one)

    @staticmethod
    def stackable(networks: Sequence[torch.nn.Module | None]) -> TypeGuard[list[torch.nn.Module]]:
        modules = [n for n in networks if n is not None]
        if len(networks) < 2 or len(modules) < len(networks):
            return False
        kind, shapes = type(modules[0]), {k: v.shape for k, v in modules[0].state_dict().items()}
        return all(type(n) is kind and {k: v.shape for k, v in n.state_dict().items()} == shapes
                   for n in modules)

    def logits(self, obs: torch.Tensor) -> Logits:
        with torch.no_grad():
            return self._forward(self.params, self.buffers, obs)


# ---------------------------------------------------------------------------------------------
# The arena
# ---------------------------------------------------------------------------------------------

class ArenaEnv(Protocol):
    """What the arena needs of the env it wraps: a PufferEnv or a synchronous pufferlib.vector env."""

    @property
    def num_agents(self) -> int: ...

    @property
    def single_observation_space(self) -> spaces.Space: ...

    @property
    def single_action_space(self) -> spaces.Space: ...

    def reset(self, seed: int | None = None) -> object: ...

    def step(self, actions: np.ndarray) -> object: ...

    def close(self) -> None: ...


def _arrays(env: ArenaEnv) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(observations, rewards, terminals, truncations, masks, action_masks or None) of a PufferEnv or a
    vector env: the arrays the env writes in place on every step."""
    buf: Any = getattr(env, 'buffers', env)  # a vector env's arrays, or the PufferEnv's own
    action_masks = getattr(buf, 'action_masks', None)
    if action_masks is None:
        action_masks = getattr(env, 'action_masks', None)
    return buf.observations, buf.rewards, buf.terminals, buf.truncations, buf.masks, action_masks


def two_seat_envs() -> list[str]:
    """The Ocean envs that seat two players in a game: those with a `two_player` option, which a league
    switches on (kuhn and leduc have it on by default)."""
    from pufferlib import registry  # only for the error below: the arena itself needs no registry
    try:
        return [name for name in registry.names('ocean') if 'two_player' in registry.lookup(name).option_specs()]
    except Exception:  # an Ocean build missing or broken: the error still names the env and `puffer envs`
        return []


def agents_per_env(env: ArenaEnv, name: str | None = None) -> int:
    """Rows per game of `env` (`name`: the env's name, for the error a league gives for an env that has no
    two seats)."""
    count = getattr(env, 'agents_per_env', None)
    if count is None:
        count = env.num_agents if not hasattr(env, 'num_envs') else env.num_agents // max(1, env.num_envs)
    count = int(count)
    if count < 2:
        name = name or getattr(env, 'describe', lambda: type(env).__name__)()
        seats = 'one seat (one agent)' if count == 1 else f'{count} agent rows'
        two = two_seat_envs()
        if name in two:
            raise LeagueError(f'{name} has {seats} per game with two_player off, and population play needs two '
                              'or more: turn its two_player option on (a league does unless told otherwise)')
        envs = f'{", ".join(two)} (two_player on, as a league sets it) or ' if two else ''
        raise LeagueError(f'{name} has {seats} per game, and population play needs two or more: use {envs}'
                          "PettingZoo's turn-based games (pettingzoo_tictactoe, ...); "
                          f'`{invocation.command("envs")}` lists every env')
    return count


class Arena:
    """A vector env seen through the learner's rows, the other rows played by a pool of frozen players.

    The vector-env API the trainer uses: `async_reset(seed)`, `recv()` -> (obs, rewards, terminals,
    truncations, infos, env_ids, masks) for the learner's rows, `send(actions)`, `close()`, and the spaces.
    """

    def __init__(self, env: ArenaEnv, learner_seat: int | None = None, seed: int = 0, name: str | None = None) -> None:
        self.env = env
        self.seats = agents_per_env(env, name)
        self.games = env.num_agents // self.seats
        if learner_seat is not None and not 0 <= int(learner_seat) < self.seats:
            raise APIUsageError(f'learner_seat must be None (drawn every game) or a seat in [0, {self.seats}), '
                                f'got {learner_seat!r}')
        self.learner_seat = learner_seat
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.obs_dtype = getattr(env, 'obs_dtype', None)
        self.native_action_space = getattr(env, 'native_action_space', env.single_action_space)
        self.action_dtype = action_dtype(env.single_action_space)
        self.num_agents = self.agents_per_batch = self.games
        self.agents_per_env = 1
        self.num_envs = self.games
        self.rng = np.random.default_rng(seed)
        self._seed = seed

        obs, _, _, _, _, action_masks = _arrays(env)
        self._rows = np.arange(env.num_agents).reshape(self.games, self.seats)
        self._actions = np.zeros((env.num_agents, *space_shape(env.single_action_space)), dtype=self.action_dtype)
        self._obs = np.zeros((self.games, *obs.shape[1:]), dtype=obs.dtype)
        self._rewards = np.zeros(self.games, dtype=np.float32)
        self._terminals = np.zeros(self.games, dtype=bool)
        self._truncations = np.zeros(self.games, dtype=bool)
        self._live = np.ones(self.games, dtype=bool)
        self._action_masks: np.ndarray | None = (None if action_masks is None else
                                                 np.zeros((self.games, action_masks.shape[1]), bool))
        self._ids = np.arange(self.games)
        self.seat = np.zeros(self.games, dtype=np.int64)
        self.opponent = np.zeros(self.games, dtype=np.int64)
        self.learner_rows = self._rows[:, 0].copy()
        self.players: list[Player] = []
        self.weights = np.ones(0)
        self._stacked: StackedNetworks | None = None
        self._builtin = np.zeros(0, dtype=bool)  # which pool players are BuiltinPlayers
        # BUILTIN_ACTION lies outside the action space, so the env's step() would refuse it: an env that
        # takes it is stepped on its own action buffer, which step() takes unchecked; the learner's actions
        # are checked here instead.
        self.supports_builtin = supports_builtin(env)
        self._check = ActionCheck(env.single_action_space, (self.games, *space_shape(env.single_action_space)),
                                  lambda: 'the arena')
        self._pending = False
        self._infos: list[dict[str, float]] = []
        self._reset_stats()

    # ---- the pool ----

    def set_opponents(self, players: list[Player], weights: npt.ArrayLike | None = None, stack: bool = True) -> None:
        """The pool the opponents of every game are drawn from, with probability `weights` (default
        uniform); every game redraws its opponent and seat now. `stack=False` runs one forward pass per
        policy even when their networks could be stacked (to measure what stacking saves)."""
        if not players:
            raise APIUsageError('set_opponents needs at least one player')
        given = np.ones(len(players)) if weights is None else np.asarray(weights, dtype=np.float64)
        if given.shape != (len(players),) or (given < 0).any() or not given.sum() > 0:
            raise APIUsageError(f'set_opponents: need one non-negative weight per player ({len(players)} players, '
                                f'weights {given.tolist()})')
        self._builtin = np.array([isinstance(p, BuiltinPlayer) for p in players], dtype=bool)
        if self._builtin.any() and not self.supports_builtin:
            name = getattr(self.env, 'describe', lambda: type(self.env).__name__)()
            raise LeagueError(f'{no_builtin_player(name)}: a BuiltinPlayer needs one')
        self.players = list(players)
        self.weights = given / given.sum()
        # the built-in player's rows never reach a network: stack the others, indexed among themselves
        networks = [p.network for p, builtin in zip(self.players, self._builtin) if not builtin]
        self._stack_index = np.cumsum(~self._builtin) - 1
        self._stacked = StackedNetworks(networks) if stack and StackedNetworks.stackable(networks) else None
        self._reset_stats()
        self._draw(np.arange(self.games))
        if self._pending:
            self._gather()

    def _reset_stats(self, quota: int | None = None) -> None:
        n = len(self.players)
        self.results = {'games': np.zeros(n), 'score': np.zeros(n), 'wins': np.zeros(n), 'draws': np.zeros(n)}
        # play_games counts at most `quota` games per game slot (see _record); None counts every game
        self._quota = quota
        self._slot_games = np.zeros(self.games, dtype=np.int64)
        self._episode_return = np.zeros(self.games)
        self._episode_length = np.zeros(self.games)
        self._report = np.zeros(4)  # episodes, return, length, wins since the last report
        self._steps = 0

    def _draw(self, games: np.ndarray) -> None:
        if len(games) == 0 or not self.players:
            return
        self.opponent[games] = self.rng.choice(len(self.players), size=len(games), p=self.weights)
        self.seat[games] = (self.rng.integers(0, self.seats, size=len(games)) if self.learner_seat is None
                            else self.learner_seat)
        self.learner_rows[games] = self._rows[games, self.seat[games]]

    # ---- the vector-env API ----

    def async_reset(self, seed: int | None = None) -> None:
        """Reset every game; a seed also restarts the draws of seats and opponents, so what follows
        depends on the seed alone, not on what this arena played before (a league's matches and
        responses give the same results in a fresh arena on a Ray worker as in one kept open here)."""
        if not self.players:
            raise APIUsageError('the arena has no opponents: call set_opponents first')
        self.env.reset(seed)
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._draw(np.arange(self.games))
        self._rewards[:] = 0
        self._terminals[:] = False
        self._truncations[:] = False
        self._episode_return[:] = 0
        self._episode_length[:] = 0
        self._gather()
        self._pending = True

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict[str, float]]]:
        self.async_reset(seed)
        return self._obs, []

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, float]], np.ndarray,
                            np.ndarray]:
        if not self._pending:
            raise APIUsageError('recv() called before async_reset() or send()')
        infos, self._infos = self._infos, []
        return (self._obs, self._rewards, self._terminals, self._truncations, infos, self._ids, self._live)

    def send(self, actions: npt.ArrayLike, env_ids: np.ndarray | None = None) -> None:
        actions = np.asarray(actions)
        if actions.shape != (self.games, *space_shape(self.single_action_space)):
            raise APIUsageError(f'the arena takes one action row per game ({self.games}), got shape {actions.shape}')
        if self.supports_builtin:
            self._check(actions)
        self._actions[self.learner_rows] = actions
        self._opponents_act()
        if self.supports_builtin:
            buf: Any = getattr(self.env, 'buffers', self.env)
            env_actions = buf.actions
            np.copyto(env_actions, self._actions)
            self.env.step(env_actions)
        else:
            self.env.step(self._actions)
        _, rewards, terminals, truncations, _, _ = _arrays(self.env)
        rows = self.learner_rows
        np.take(rewards, rows, out=self._rewards)
        np.take(terminals, rows, out=self._terminals)
        np.take(truncations, rows, out=self._truncations)
        self._episode_return += self._rewards
        self._episode_length += 1
        ended = np.flatnonzero(self._terminals | self._truncations)
        if len(ended):
            self._record(ended)
            self._draw(ended)
        self._gather()
        self._steps += 1
        if self._steps % REPORT_INTERVAL == 0 and self._report[0] > 0:
            n, ret, length, wins = self._report
            self._infos.append({'episode_return': ret / n, 'episode_length': length / n, 'perf': wins / n, 'n': n})
            self._report[:] = 0

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                     list[dict[str, float]]]:
        self.send(actions)
        obs, rewards, terminals, truncations, infos, _, _ = self.recv()
        return obs, rewards, terminals, truncations, infos

    def close(self) -> None:
        self.env.close()

    # ---- internals ----

    def _gather(self) -> None:
        obs, _, _, _, live, action_masks = _arrays(self.env)
        np.take(obs, self.learner_rows, axis=0, out=self._obs)
        np.take(live, self.learner_rows, out=self._live)
        if action_masks is not None:
            np.take(action_masks, self.learner_rows, axis=0, out=self._action_masks)

    @property
    def action_masks(self) -> np.ndarray | None:
        """The learner rows' action masks (bool [games, actions]), or None when the env has none."""
        return self._action_masks

    def _record(self, ended: np.ndarray) -> None:
        counted = ended
        if self._quota is not None:
            # Only a slot's first `quota` games count. Counting the first N games to end anywhere would
            # favour short games (a slot whose games end fast ends twice while a long game ends once),
            # and short games are the lopsided ones: connect4's wins against its scripted player read
            # 2-3 points high that way.
            counted = first_games(ended, self._slot_games, self._quota)
        score = self._episode_return[counted]
        opponent = self.opponent[counted]
        win, draw = score > 0, score == 0
        for key, value in (('games', 1.0), ('score', score), ('wins', win), ('draws', draw)):
            np.add.at(self.results[key], opponent, value)
        self._report += (len(counted), score.sum(), self._episode_length[counted].sum(), win.sum())
        self._episode_return[ended] = 0
        self._episode_length[ended] = 0

    def _opponents_act(self) -> None:
        """Actions for every live opponent row, one batched pass per policy (or one for a stacked pool)."""
        obs, _, _, _, live, action_masks = _arrays(self.env)
        is_opponent = np.ones((self.games, self.seats), dtype=bool)
        is_opponent[self._ids, self.seat] = False
        rows = self._rows[is_opponent]
        owner = np.repeat(self.opponent, self.seats - 1)
        keep = live[rows]  # a waiting row's action is ignored: no forward pass for it
        rows, owner = rows[keep], owner[keep]
        if len(rows) == 0:
            return
        if self._builtin.any():
            builtin = self._builtin[owner]
            self._actions[rows[builtin]] = BUILTIN_ACTION
            rows, owner = rows[~builtin], owner[~builtin]
            if len(rows) == 0:
                return
        order = np.argsort(owner, kind='stable')
        rows, owner = rows[order], owner[order]
        counts = np.bincount(owner, minlength=len(self.players))
        if self._stacked is not None:
            stacked = self._stack_index[owner]  # the network players' order is kept: still sorted
            self._stacked_act(self._stacked, obs, action_masks, rows, stacked,
                              np.bincount(stacked, minlength=self._stacked.size))
            return
        start = 0
        for p in np.flatnonzero(counts):
            group = rows[start:start + counts[p]]
            start += counts[p]
            masks = None if action_masks is None else action_masks[group]
            self._actions[group] = self.players[p].act(obs[group], masks).reshape(self._actions[group].shape)

    def _stacked_act(self, networks: StackedNetworks, obs: np.ndarray, action_masks: np.ndarray | None,
                     rows: np.ndarray, owner: np.ndarray, counts: np.ndarray) -> None:
        """All groups in one vmapped pass: obs padded to [players, largest group, ...]."""
        width = int(counts.max())
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(rows)) - starts[owner]
        index = np.zeros((len(counts), width), dtype=np.int64)  # padding repeats row 0, dropped below
        index[owner, slot] = rows
        batch = torch.from_numpy(obs[index])
        logits = networks.logits(batch)
        take = torch.from_numpy(owner * width + slot)
        if isinstance(logits, tuple):
            logits = tuple(sub.reshape(-1, sub.shape[-1])[take] for sub in logits)
        else:  # masks, and so the pool's sampling here, are for Discrete or MultiDiscrete actions
            flat = cast(torch.Tensor, logits)
            logits = flat.reshape(-1, flat.shape[-1])[take]
        mask = None if action_masks is None else torch.from_numpy(action_masks[rows])
        with torch.no_grad():
            action, _, _ = sample_logits(logits, mask=mask)
        self._actions[rows] = action.numpy().reshape(self._actions[rows].shape)


def first_games(ended: np.ndarray, played: np.ndarray, quota: int) -> np.ndarray:
    """The game slots in `ended` (whose games just ended) whose game is among that slot's first `quota`;
    counts the ended games into `played` (games ended per slot). Counting each slot's first games, not
    the first games to end anywhere, keeps short games from being over-counted (Arena._record)."""
    counted = ended[played[ended] < quota]
    played[ended] += 1
    return counted


def play_games(arena: Arena, player: Player, games: int, seed: int | None = None) -> dict[str, np.ndarray]:
    """Let `player` take the learner's rows of `arena` (against its pool, seats drawn as the arena draws
    them) for ceil(games / arena.games) games in every game slot, so at least `games` games, each slot's
    first ones (an unbiased sample: see Arena._record); returns the results per pool player: arrays of
    games, summed score (the player's return), wins and draws. With a seed the results depend on the
    seed and the players alone: the env, the draws and the networks' sampling (torch's generator,
    restored afterwards) all start from it."""
    quota = -(-int(games) // arena.games)
    arena._reset_stats(quota)
    try:
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            arena.async_reset(seed)
            while (arena._slot_games < quota).any():
                obs, _, _, _, _, _, _ = arena.recv()
                arena.send(player.act(obs, arena.action_masks))
        return {k: v.copy() for k, v in arena.results.items()}
    finally:
        arena._quota = None  # training after this counts every game again
