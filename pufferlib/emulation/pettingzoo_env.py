"""The PettingZoo wrapper (PettingZooPufferEnv): parallel and turn-based AEC envs, and their action masks."""
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.emulation.base import _create, _Emulated
from pufferlib.emulation.checks import ObservationMismatch, check_observation, mismatch_error
from pufferlib.emulation.spaces import emulate_action_space
from pufferlib.pufferenv import (ActionMaskError, APIUsageError, EnvError, IllegalActionError, SpaceError,
                                 action_mask_width, check_seed, idle_action_mask, not_a_reward)

MASK_KEY = 'action_mask'  # where PettingZoo envs put legal actions: observation[MASK_KEY] or info[MASK_KEY]
MASK_SOURCES = ('auto', 'obs', 'info', 'none')


def _mask_source(choice: str | None, obs_space: spaces.Space, act_space: spaces.Space,
                 describe: Callable[[], str]) -> str | None:
    """Where the env's legal actions come from: 'obs', 'info' or None (see PettingZooPufferEnv)."""
    if choice is None:
        choice = 'none'
    if choice not in MASK_SOURCES:
        raise APIUsageError(f'{describe()}: action_mask must be one of {", ".join(MASK_SOURCES)}, got {choice!r}')
    in_obs = isinstance(obs_space, spaces.Dict) and MASK_KEY in obs_space.spaces
    if choice == 'none' or (choice == 'auto' and not in_obs):
        return None
    if choice == 'obs' and not in_obs:
        raise ActionMaskError(f'{describe()}: action_mask="obs", but the observation space has no {MASK_KEY!r} '
                              f'entry ({obs_space}); use action_mask="info" when the env puts it in infos')
    flat, _ = emulate_action_space(act_space)
    width = action_mask_width(flat)
    if choice == 'info':
        return 'info'
    leaf = cast(spaces.Dict, obs_space)[MASK_KEY]  # in_obs: a Dict with that entry
    shape = tuple(np.atleast_1d(leaf.n)) if isinstance(leaf, spaces.MultiBinary) else getattr(leaf, 'shape', None)
    if not isinstance(leaf, (spaces.Box, spaces.MultiBinary)) or shape != (width,):
        raise ActionMaskError(f'{describe()}: observation[{MASK_KEY!r}] is {leaf}; the action space {act_space} '
                              f'needs a mask of shape ({width},) (one 0/1 per action; MultiDiscrete: the sub-masks '
                              'side by side)')
    if np.dtype(leaf.dtype).kind not in 'biu':
        raise ActionMaskError(f'{describe()}: observation[{MASK_KEY!r}] has dtype {leaf.dtype}; a mask holds 0/1 as '
                              'bool or integers')
    return 'obs'


class PettingZooPufferEnv(_Emulated):
    """Wrap one PettingZoo env (parallel, or AEC) as a multi-agent PufferEnv: one row per agent.

    Rows follow `possible_agents` order. An agent that is absent (dead, not yet spawned) has a zero
    observation, zero reward and mask False; the step an agent leaves still has mask True so its last
    transition trains. The episode ends when no agents remain; the env is then reset in the same step
    (same-step autoreset) and every row's mask reflects the new episode.

    Parallel envs (and AEC envs that say `is_parallelizable`, converted by PettingZoo) step all agents
    at once. Turn-based AEC envs (the classic games: connect_four_v3, tictactoe_v3, leduc_holdem_v4,
    texas_holdem_v4) keep their turns, with the convention of the turn-based Ocean envs (docs/league.md):

    - each step plays one move, the move of the agent to act (`agent_selection`): its row is the only
      live row (`masks` True); the other seats wait (`masks` False, so they stay out of the rollout) and
      their actions are ignored;
    - every seat present observes its own view (`observe(agent)`) on every step, not only on its turn;
    - a seat's reward is what PettingZoo's `last()` reports for it: everything it earned since its own
      last move, credited on the step where its turn comes round again or where it leaves the game.
      The step that ends a game therefore pays every seat its final reward and sets its terminal
      (truncation) flag, whichever seat moved; its observations already belong to the next game.

    Action masks (`action_mask`): 'auto' (default) reads `observation['action_mask']` when the
    observation space has that entry (as PettingZoo's classic games do), 'obs' insists on it, 'info'
    reads `infos[agent]['action_mask']`, 'none' ignores masks. The env then publishes `action_masks`
    (bool [agents, actions]): the legal actions of each live row; a waiting or absent row allows
    action 0 alone. The mask stays in the observation too, for policies that read it. step() refuses
    an action its mask forbids (IllegalActionError) before the PettingZoo env sees it.
    """

    def __init__(self, env: Any = None, env_creator: Callable | None = None, env_args: tuple = (),
                 env_kwargs: dict | None = None, buf: SimpleNamespace | None = None, seed: int | None = None,
                 action_mask: str | None = 'auto') -> None:
        env = _create(env, env_creator, env_args, env_kwargs, 'PettingZooPufferEnv')
        from pettingzoo import AECEnv
        self.turn_based = False
        if isinstance(env, AECEnv):
            if (getattr(env, 'metadata', None) or {}).get('is_parallelizable', False):
                from pettingzoo.utils.conversions import aec_to_parallel
                env = aec_to_parallel(env)
            else:
                self.turn_based = True
        if not hasattr(env, 'possible_agents') or not callable(getattr(env, 'observation_space', None)):
            raise APIUsageError(f'PettingZooPufferEnv: {type(env).__name__} is neither a PettingZoo ParallelEnv '
                                'nor an AECEnv')
        self.env = env
        self.possible_agents = list(env.possible_agents)
        if not self.possible_agents:
            raise APIUsageError(f'{self.describe()}: possible_agents is empty')
        self.agent_index = {agent: i for i, agent in enumerate(self.possible_agents)}
        first = self.possible_agents[0]
        obs_space, act_space = env.observation_space(first), env.action_space(first)
        for agent in self.possible_agents[1:]:
            if env.observation_space(agent) != obs_space or env.action_space(agent) != act_space:
                raise SpaceError(f'{self.describe()}: agent {agent!r} has spaces {env.observation_space(agent)}, '
                                 f'{env.action_space(agent)} but {first!r} has {obs_space}, {act_space}; '
                                 'every agent must share one observation and one action space '
                                 '(pad them to a common space first)')
        self.num_agents = len(self.possible_agents)
        self._mask_source = _mask_source(action_mask, obs_space, act_space, self.describe)
        self._setup_spaces(obs_space, act_space)
        if self._mask_source is not None:
            self.action_mask_width = action_mask_width(self.single_action_space)
        super().__init__(buf)
        self._bind_rows()
        self._bind_masks()
        self._seed = check_seed(seed, self.describe)
        self.initialized = False
        self.episode_returns = np.zeros(self.num_agents)
        self.episode_length = 0
        self._present = np.zeros(self.num_agents, dtype=bool)
        self._turn = -1  # turn-based: the row of the agent to move

    # ---- rows and masks ----

    def _row(self, agent: Any) -> int:
        try:
            return self.agent_index[agent]
        except KeyError:
            raise APIUsageError(f'{self.describe()}: env returned agent {agent!r} which is not in '
                                f'possible_agents {self.possible_agents}') from None

    def _write_agent(self, row: int, ob: Any, agent: Any) -> None:
        try:
            self._write_row(row, ob)
        except ObservationMismatch as exc:
            raise mismatch_error(f'{self.describe()} agent {agent!r}', str(exc)) from None
        except (ValueError, TypeError, KeyError, IndexError):
            if self._mask_source == 'obs' and isinstance(ob, dict) and MASK_KEY not in ob:
                raise ActionMaskError(f'{self.describe()}: agent {agent!r} observed no {MASK_KEY!r} any more (keys '
                                      f'{list(ob)}); an env that publishes action masks must do so on every step '
                                      'of every episode') from None
            check_observation(self.native_observation_space, ob, f'{self.describe()} agent {agent!r}')
            raise

    def _write_all(self, obs: dict) -> np.ndarray:
        """Write every returned observation, zero the rows of agents that disappeared."""
        now = np.zeros(self.num_agents, dtype=bool)
        for agent, ob in obs.items():
            row = self._row(agent)
            self._write_agent(row, ob, agent)
            now[row] = True
        gone = self._present & ~now
        if gone.any():
            self.observations[gone] = 0
        self._present = now
        return now

    def _bind_masks(self) -> None:
        if self._mask_source is None:
            return
        self._idle_mask = idle_action_mask(self.single_action_space)
        space = self.single_action_space
        self._mask_offsets = (np.concatenate([[0], np.cumsum(space.nvec)[:-1]]).astype(np.int64)
                              if isinstance(space, spaces.MultiDiscrete) else None)
        self._mask_view = None
        if self._mask_source == 'obs' and self.obs_dtype is not None:  # a Dict observation: always structured
            # The mask leaf of every row, read in one vectorised pass after the rows are written.
            struct = self.observations.view(np.uint8).reshape(self.num_agents, -1).view(self.obs_dtype)[:, 0]
            self._mask_view = struct[MASK_KEY]

    def _write_masks(self, live: np.ndarray, infos: dict | None = None) -> None:
        """Fill `action_masks` from the observations (or infos) just written; rows not in `live` wait."""
        legal = self.action_masks
        if self._mask_source is None or legal is None:  # both or neither: __init__ sets the width from the source
            return
        if self._mask_view is not None:
            view = self._mask_view
            if view.dtype != np.bool_ and view.size and (view.min() < 0 or view.max() > 1):
                raise ActionMaskError(f'{self.describe()}: observation[{MASK_KEY!r}] holds values other than 0 and '
                                      f'1 ({np.unique(view).tolist()[:8]}); a mask marks each action legal (1) or '
                                      'not (0)')
            np.not_equal(view, 0, out=legal)
        else:
            for row in np.flatnonzero(live):  # one Python access per live agent: infos are dicts per agent
                agent = self.possible_agents[row]
                mask = (infos or {}).get(agent, {}).get(MASK_KEY)
                if mask is None:
                    raise ActionMaskError(f'{self.describe()}: agent {agent!r} must act but its info has no '
                                          f'{MASK_KEY!r}; with action_mask="info" the env must give one for every '
                                          'agent to act, on every step of every episode')
                mask = np.asarray(mask)
                if mask.shape != (legal.shape[1],) or mask.dtype.kind not in 'biu':
                    raise ActionMaskError(f'{self.describe()}: agent {agent!r}: info[{MASK_KEY!r}] is '
                                          f'{mask.dtype}{list(mask.shape)}; the action space '
                                          f'{self.single_action_space} needs bool or integer 0/1 of shape '
                                          f'({legal.shape[1]},)')
                legal[row] = mask != 0
        legal[~live] = self._idle_mask
        stuck = live & ~self._any_legal(legal)
        if stuck.any():
            agent = self.possible_agents[int(np.flatnonzero(stuck)[0])]
            raise ActionMaskError(f'{self.describe()}: agent {agent!r} must act but its action mask allows no action '
                                  '(of some sub-action); a mask must leave at least one legal action')

    def _any_legal(self, legal: np.ndarray) -> np.ndarray | np.bool_:
        if self._mask_offsets is None:
            return legal.any(1)
        return np.logical_or.reduceat(legal, self._mask_offsets, axis=1).all(1)

    def _check_legal(self, acting: np.ndarray) -> None:
        """Refuse the actions of `acting` rows (bool) that their masks forbid, before the env sees them."""
        legal = self.action_masks
        if self._mask_source is None or legal is None:
            return
        acts = self.actions.astype(np.int64)
        ok: np.ndarray | np.bool_
        if self._mask_offsets is None:
            ok = legal[np.arange(self.num_agents), acts]
        else:
            ok = np.take_along_axis(legal, acts + self._mask_offsets, axis=1).all(1)
        bad = acting & ~ok
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            columns = np.flatnonzero(legal[row]).tolist()
            raise IllegalActionError(f'{self.describe()}: agent {self.possible_agents[row]!r} (row {row}) was given '
                                     f'action {self.actions[row].tolist()}, which its action mask forbids (legal '
                                     f'columns: {columns}); sample under env.action_masks (pufferlib.models.'
                                     'sample_logits(logits, mask=...)), and give waiting rows action 0')

    # ---- episodes ----

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict]]:
        seed = check_seed(seed, self.describe)
        if seed is None and not self.initialized:
            seed = self._seed
        self.observations[...] = 0
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
        self._present[:] = False
        if self.turn_based:
            self.env.reset(seed=seed)
            self._first_turn()
        else:
            obs, infos = self.env.reset(seed=seed)
            if not self.initialized:
                for agent, ob in obs.items():
                    check_observation(self.native_observation_space, ob, f'{self.describe()} agent {agent!r}')
            self.masks[...] = self._write_all(obs)
            self._write_masks(self._present, infos)
        self.episode_returns[...] = 0
        self.episode_length = 0
        self.initialized = True
        return self.observations, []

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        if not self.initialized:
            raise APIUsageError(f'{self.describe()}: step() called before reset(); call reset(seed) first')
        self._take_actions(actions)
        if self.turn_based:
            return self._step_turn()
        unflatten, acts = self._unflatten, self.actions
        stepped = np.zeros(self.num_agents, dtype=bool)
        for agent in self.env.agents:
            stepped[self._row(agent)] = True
        self._check_legal(stepped)
        action_dict = {agent: unflatten(acts[self.agent_index[agent]]) for agent in self.env.agents}
        obs, rewards, terminations, truncations, infos = self.env.step(action_dict)
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
        for agent, reward in rewards.items():
            # NumPy would store a string reward ('1.0') parsed and None as NaN: bugs in the env, refused.
            if reward is None or isinstance(reward, (str, bytes)):
                raise not_a_reward(f'{self.describe()}, agent {agent!r}', reward)
            try:
                self.rewards[self._row(agent)] = reward
            except (TypeError, ValueError):
                raise not_a_reward(f'{self.describe()}, agent {agent!r}', reward) from None
        for agent, value in terminations.items():
            self.terminals[self._row(agent)] = value
        for agent, value in truncations.items():
            self.truncations[self._row(agent)] = value
        present = self._write_all(obs)
        # A row is valid if its agent acted this step (its transition trains) or is there now.
        self.masks[...] = stepped | present
        self.episode_returns += self.rewards
        self.episode_length += 1
        out = []
        if not self.env.agents:
            out.append({'episode_return': float(self.episode_returns.mean()),
                        'episode_length': self.episode_length})
            obs, infos = self.env.reset()
            self.masks[...] |= self._write_all(obs)
            self.episode_returns[...] = 0
            self.episode_length = 0
        self._write_masks(self._present, infos)
        return self.observations, self.rewards, self.terminals, self.truncations, out

    # ---- turn-based (AEC) episodes ----

    def _settle(self) -> Any:
        """Credit `last()` rewards and retire the agents whose episode ended, until an agent is to move.
        Returns that agent, or None when no agent remains (the episode is over)."""
        env = self.env
        while env.agents:
            agent = env.agent_selection
            row = self._row(agent)
            _, reward, terminated, truncated, _ = env.last(observe=False)
            if reward is None or isinstance(reward, (str, bytes)):
                raise not_a_reward(f'{self.describe()}, agent {agent!r}', reward)
            try:
                self.rewards[row] += reward
            except (TypeError, ValueError):
                raise not_a_reward(f'{self.describe()}, agent {agent!r}', reward) from None
            if not (terminated or truncated):
                return agent
            self.terminals[row] |= bool(terminated)
            self.truncations[row] |= bool(truncated)
            env.step(None)  # PettingZoo's way to retire an agent whose episode ended
        return None

    def _first_turn(self) -> None:
        agent = self._settle()
        if agent is None:
            raise EnvError(f'{self.describe()}: the episode ended in reset(), before any agent moved')
        self._write_turn(agent)

    def _write_turn(self, agent: Any) -> None:
        """Every present seat's own view; the mover's row live, the others waiting."""
        env = self.env
        now = np.zeros(self.num_agents, dtype=bool)
        for other in env.agents:
            row = self._row(other)
            self._write_agent(row, env.observe(other), other)
            now[row] = True
        if not self.initialized:
            check_observation(self.native_observation_space, env.observe(agent), f'{self.describe()} agent {agent!r}')
        gone = self._present & ~now
        if gone.any():
            self.observations[gone] = 0
        self._present = now
        self._turn = self._row(agent)
        self.masks[...] = False
        self.masks[self._turn] = True
        self._write_masks(self.masks, {agent: env.infos.get(agent, {})} if self._mask_source == 'info' else None)

    def _step_turn(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        env, row = self.env, self._turn
        acting = np.zeros(self.num_agents, dtype=bool)
        acting[row] = True
        self._check_legal(acting)
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
        env.step(self._unflatten(self.actions[row]))
        self.episode_length += 1
        agent = self._settle()
        self.episode_returns += self.rewards
        infos = []
        if agent is None:
            stats = {'episode_return': float(self.episode_returns.mean()), 'episode_length': self.episode_length}
            for k, name in enumerate(self.possible_agents[:8]):  # per seat: the mean of a zero-sum game is 0
                stats[f'{name}_return'] = float(self.episode_returns[k])
            infos.append(stats)
            env.reset()
            before = self.rewards.copy()
            agent = self._settle()
            if agent is None:
                raise EnvError(f'{self.describe()}: the episode ended in reset(), before any agent moved')
            self.episode_returns[...] = self.rewards - before
            self.episode_length = 0
        self._write_turn(agent)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
