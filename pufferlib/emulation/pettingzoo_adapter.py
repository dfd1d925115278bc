"""The way back to PettingZoo: one game of a multi-agent PufferEnv as a PettingZoo `ParallelEnv`
(PettingZooAdapter), the counterpart of GymnasiumAdapter, for MARL libraries that take PettingZoo envs.

    env = PettingZooAdapter(pufferlib.make('puffer_connect4', two_player=True))
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {agent: env.action_space(agent).sample(infos[agent]['action_mask']) for agent in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
    aec = env.to_aec()          # PettingZoo's own parallel_to_aec converter

The conventions, where PettingZoo leaves a choice:

- Agents are the env's rows, named `agent_0`, `agent_1`, ... in row order; `possible_agents` never
  changes. Spaces are the env's native ones where it has structured ones (an emulated env's, or an
  Ocean env that declares `native_observation_space`), else its flat ones; observations are copies.
- An agent leaves `agents` on the step its row is terminal or truncated, and every dict of that step
  still names it; the episode is over when `agents` is empty, and step() then raises until reset().
  A row the env keeps running after its agent left (a respawn) is stepped with action 0, unseen.
- Turn-based games (the two-seat Ocean games; `env.masks` says which rows are to act) follow
  PettingZoo's own turn-based parallel envs (`turn_based_aec_to_parallel`): every seat stays in
  `agents` and gets an observation and a reward on every step, each info names the seat to move as
  `active_agent`, and an action is needed only from the seat to move. A waiting seat's action may be
  omitted; if given, it is checked and ignored. (Leaving waiting seats out of `agents` would make
  them finish and revive, which PettingZoo's `parallel_api_test` forbids.) The AEC form asks every
  seat in turn; a waiting seat's mask allows action 0 alone.
- Action masks, where the env publishes them, are `infos[agent]['action_mask']`, int8 as Gymnasium's
  `space.sample(mask)` takes them: one array for Discrete actions, a tuple of one array per
  sub-action for MultiDiscrete ones. An action the mask forbids is played by the env's own rule (a
  pass, the first legal move, a loss, each env's docs say which), as the C env does for any policy.
- The env's same-step autoreset is not undone where it cannot be: an Ocean env's C code starts the next
  game in the step that ends one (so does PettingZooPufferEnv), so the observations of the
  episode-ending step already belong to it, as in GymnasiumAdapter; nothing after that step is shown.
  The env's episode-statistics infos are not forwarded (an Ocean env's `log()` has them).
- An adapter made from a creator, `PettingZooAdapter(env_creator=pufferlib.make, env_args=(name,),
  env_kwargs={...})`, can be pickled, which is how libraries copy an env into their vector envs and
  workers (SuperSuit's `concat_vec_envs_v1`): a copy is a new game of a new env from the creator,
  seeded as the creator seeds it. One made from an env object refuses to be copied.
"""
import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from pufferlib.emulation.base import _create
from pufferlib.emulation.spaces import Nativizer, _walk
from pufferlib.pufferenv import APIUsageError, PufferEnv

MASK_KEY = 'action_mask'
ACTIVE_KEY = 'active_agent'  # PettingZoo's turn_based_aec_to_parallel names the seat to move so


class PettingZooAdapter(ParallelEnv):
    """One game of a PufferEnv (`num_envs=1`) as a PettingZoo ParallelEnv; the module docstring has
    the conventions."""

    def __init__(self, env: PufferEnv | None = None, env_creator: Callable[..., PufferEnv] | None = None,
                 env_args: tuple = (), env_kwargs: dict | None = None, agent_name: str = 'agent') -> None:
        puffer_env = _create(env, env_creator, env_args, env_kwargs, 'PettingZooAdapter')
        if not isinstance(puffer_env, PufferEnv):
            raise APIUsageError(f'PettingZooAdapter takes a PufferEnv (pufferlib.make(name, num_envs=1)), got '
                                f'{type(puffer_env).__name__}; a PettingZoo env needs no adapter')
        self._recipe = (env_creator, env_args, env_kwargs, agent_name)
        who = puffer_env.describe()
        games = getattr(puffer_env, 'num_envs', 1)
        if games != 1:
            raise APIUsageError(f'PettingZooAdapter holds one game, but {who} runs num_envs={games} games; build the '
                                f'env with num_envs=1, e.g. pufferlib.make({who!r}, num_envs=1), and make one adapter '
                                'per game (PettingZoo-based libraries vectorize them themselves)')
        self.puffer_env = puffer_env
        if hasattr(puffer_env, 'autoreset'):
            puffer_env.autoreset = False  # an emulated Gymnasium env keeps its final observation (GymnasiumAdapter)
        self.possible_agents = [f'{agent_name}_{row}' for row in range(puffer_env.num_agents)]
        self.agents: list[str] = []  # nothing to step until reset()
        self._row = {agent: row for row, agent in enumerate(self.possible_agents)}
        self.metadata = {'name': who, 'render_modes': ['rgb_array'], 'is_parallelizable': True}
        self.render_mode = getattr(puffer_env, 'render_mode', None)

        native_obs = getattr(puffer_env, 'native_observation_space', None)
        self._nativize = None
        obs_space: spaces.Space = puffer_env.single_observation_space
        if native_obs is not None and puffer_env.obs_dtype is not None:
            obs_space, self._nativize = native_obs, Nativizer(puffer_env.obs_dtype)
        native_act = getattr(puffer_env, 'native_action_space', None)
        act_space = native_act if native_act is not None else puffer_env.single_action_space
        self._act_space = act_space
        # One space object per agent, so that seeding one agent's space leaves the others' draws alone.
        self.observation_spaces = {agent: copy.deepcopy(obs_space) for agent in self.possible_agents}
        self.action_spaces = {agent: copy.deepcopy(act_space) for agent in self.possible_agents}
        self._mask_splits: list[int] | None = None
        if puffer_env.action_masks is not None and isinstance(puffer_env.single_action_space, spaces.MultiDiscrete):
            self._mask_splits = np.cumsum(puffer_env.single_action_space.nvec)[:-1].tolist()

    # ---- spaces ----

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self._known(agent)]

    def _known(self, agent: Any) -> str:
        if agent not in self._row:
            raise APIUsageError(f'{self.puffer_env.describe()}: unknown agent {agent!r}; the agents are '
                                f'{", ".join(self.possible_agents)}')
        return agent

    # ---- the ParallelEnv API ----

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start a new game; `options` is accepted, as PettingZoo requires, and unused (an env's options
        are fixed when it is made)."""
        self.puffer_env.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return {agent: self._observe(agent) for agent in self.agents}, self._infos(self.agents)

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        env = self.puffer_env
        if not self.agents:
            raise APIUsageError(f'PettingZooAdapter({env.describe()}): step() after the episode ended (or before the '
                                'first reset()); call reset() first')
        if not isinstance(actions, Mapping):
            raise APIUsageError(f'{env.describe()}: step() takes a dict of agent -> action, got '
                                f'{type(actions).__name__}')
        batch = np.zeros_like(env.actions)  # action 0 for waiting seats and for rows whose agent left
        for agent, action in actions.items():
            if self._known(agent) not in self.agents:
                raise APIUsageError(f'{env.describe()}: {agent!r} finished earlier in this episode; send actions only '
                                    f'for env.agents ({", ".join(self.agents)})')
            batch[self._row[agent]] = self._flat_action(agent, action).reshape(batch.shape[1:])
        missing = [agent for agent in self.agents if env.masks[self._row[agent]] and agent not in actions]
        if missing:
            raise APIUsageError(f'{env.describe()}: no action for {", ".join(map(repr, missing))}; every agent that is '
                                f'to act needs one (agents: {", ".join(self.agents)})')
        _, rewards, terminals, truncations, _ = env.step(batch)
        stepped = self.agents
        observations = {agent: self._observe(agent) for agent in stepped}
        reward = {agent: float(rewards[self._row[agent]]) for agent in stepped}
        terminated = {agent: bool(terminals[self._row[agent]]) for agent in stepped}
        truncated = {agent: bool(truncations[self._row[agent]]) for agent in stepped}
        self.agents = [agent for agent in stepped if not (terminated[agent] or truncated[agent])]
        return observations, reward, terminated, truncated, self._infos(stepped)

    def render(self) -> Any:
        return self.puffer_env.render()

    def close(self) -> None:
        self.puffer_env.close()

    def __reduce__(self) -> tuple:
        # How libraries copy an env into workers (SuperSuit's concat_vec_envs_v1 pickles it): a copy is a
        # new game of an env made again by the creator; a C env's state cannot be pickled.
        creator, args, kwargs, agent_name = self._recipe
        if creator is None:
            raise APIUsageError(f'PettingZooAdapter({self.puffer_env.describe()}) was given an env object, which '
                                'cannot be copied; give it a creator to make copies from instead: '
                                f'PettingZooAdapter(env_creator=pufferlib.make, env_args=({self.metadata["name"]!r},))')
        return (type(self), (None, creator, args, kwargs, agent_name))

    def to_aec(self) -> AECEnv:
        """This env in PettingZoo's AEC form, through PettingZoo's own converter (parallel_to_aec)."""
        return parallel_to_aec(self)

    # ---- rows to agents ----

    def _observe(self, agent: str) -> Any:
        row = self.puffer_env.observations[self._row[agent]]
        if self._nativize is None:
            return row.copy()
        return copy.deepcopy(self._nativize(row))

    def _infos(self, agents: list[str]) -> dict[str, dict]:
        env = self.puffer_env
        infos: dict[str, dict] = {agent: {} for agent in agents}
        masks = env.action_masks
        if masks is not None:
            for agent in agents:
                mask = masks[self._row[agent]].astype(np.int8)
                infos[agent][MASK_KEY] = tuple(np.split(mask, self._mask_splits)) if self._mask_splits else mask
        # The seat to move, where some seats wait (masks False): PettingZoo's turn-based convention.
        live = [agent for agent in self.agents if env.masks[self._row[agent]]]
        if len(live) == 1 and len(self.agents) > 1:
            for agent in agents:
                infos[agent][ACTIVE_KEY] = live[0]
        return infos

    def _flat_action(self, agent: str, action: Any) -> np.ndarray:
        """The env's flat action row for `agent`'s native action, or one APIUsageError naming the agent."""
        space = self._act_space
        try:
            if isinstance(space, spaces.Box):
                value = np.asarray(action)
                # Bounds are the env's to clamp (a Gaussian policy samples past them); NaN is no action.
                if value.shape == space.shape and value.dtype.kind in 'iuf' and np.isfinite(value).all():
                    return value
            elif space.contains(action):
                parts = []
                for path, leaf in _walk(space):
                    value = action
                    for key in path:
                        value = value[key]
                    value = np.asarray(value)
                    if value.dtype.kind not in 'iub':
                        break  # 1.0 is in a Discrete space to Gymnasium, but no category
                    parts.append(np.ravel(value - getattr(leaf, 'start', 0)))
                else:
                    return np.concatenate(parts)
        except (TypeError, ValueError, KeyError, IndexError):
            pass
        raise APIUsageError(f'{self.puffer_env.describe()}: action {action!r} for {agent!r} is not in its action '
                            f'space {space}; see env.action_space({agent!r})')
