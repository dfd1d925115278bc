"""puffer_mmo: a Neural-MMO-like world (ocean/mmo/mmo.h holds the rules, docs/ocean.md the layout).

The scripted forager/fighter is built into the C env, like rware's: `autopilot=True` makes every
agent drink, eat, flee hostile NPCs when hurt, fight NPCs with the style that beats their stance and
pick up drops, reading only its own observation and action mask. `puffer play puffer_mmo
autopilot=True` shows it; its lives are scored by the same episode log as a trained policy's.

The observation is one flat uint8 row; `layout()` gives the slices of its parts, which the policy in
ocean/mmo/policy.py and the tests use.

`two_player=True` (which `puffer league` switches on) makes each world two rows, one per team: the
agents split into halves, a team row's observation, actions and action masks are its members' rows
side by side (the C rows of a team are contiguous, so these are the same bytes), its reward is its
members' summed reward minus the other team's (zero-sum: a positive return is a world won on
points), it is live while a member is, and its episode is the world (truncated at the horizon,
terminal when every agent died). pufferlib/arena.py seats one learner row per game, so it plays team
against team without knowing about teams. The episode log stays per life, as without teams.
"""
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.pufferenv import BUFFER_NAMES, PufferEnv

from ..env import OceanEnv
VIEW = 5             # spec.toml: MM_VIEW
SIDE = 2 * VIEW + 1
CROP = SIDE * SIDE
ENTS = 8             # MM_ENTS
EFEAT = 8            # MM_EFEAT
SELF = 18            # MM_SELF
NVEC = (5, 4, ENTS, 3)
TERRAINS = 7         # 0 off the map, grass, forest, harvested forest, water, stone, lava
THINGS = 6           # 0 nothing, agent, passive, neutral, hostile, item
RANGE = (0, 1, 3, 2)  # by style: none, melee, range, magic


def layout() -> dict[str, slice]:
    """The parts of an observation row: terrain and things crops, entity rows, own state."""
    at = 0
    out = {}
    for name, size in (('terrain', CROP), ('things', CROP), ('entities', ENTS * EFEAT), ('self', SELF)):
        out[name] = slice(at, at + size)
        at += size
    return out


class Mmo(OceanEnv):
    """puffer_mmo: one row per agent, or with two_player=True one row per team (module docstring)."""

    def __init__(self, num_envs: int = 1, buf: SimpleNamespace | None = None, seed: int | None = None,
                 **options: Any) -> None:
        self._agent: SimpleNamespace | None = None
        if not self.resolve_config(options)['two_player']:
            super().__init__(num_envs, buf, seed, **options)
            return
        # The C worlds step on private per-agent rows; the team rows (the vector's, when it passes buf)
        # are bound afterwards and filled from them after every reset and step.
        super().__init__(num_envs, None, seed, **options)
        self._agent = SimpleNamespace(**{name: getattr(self, name) for name in BUFFER_NAMES},
                                      action_masks=self.action_masks)
        self.members = self.agents_per_env // 2
        row = self.single_observation_space
        self.single_observation_space = spaces.Box(np.tile(row.low, self.members), np.tile(row.high, self.members),
                                                   dtype=row.dtype)
        self.single_action_space = spaces.MultiDiscrete(np.tile(NVEC, self.members))
        self.action_mask_width = self.members * sum(NVEC)
        self.agents_per_env = 2
        self.num_agents = 2 * self.num_envs
        PufferEnv.__init__(self, buf)
        self._fold()

    def _fold(self) -> None:
        """The team rows from the agent rows: observations and masks copied, the rest reduced."""
        agent, masks = self._agent, self.action_masks
        assert agent is not None and masks is not None  # two_player mode; the spec declares a mask
        np.copyto(self.observations, agent.observations.reshape(self.observations.shape))
        np.copyto(masks, agent.action_masks.reshape(masks.shape))
        team = agent.rewards.reshape(self.num_envs, 2, self.members).sum(2)
        self.rewards[:] = (team - team[:, ::-1]).reshape(-1)
        np.any(agent.masks.reshape(self.num_agents, self.members), axis=1, out=self.masks)
        # C marks every row of a world that ended (mmo.h), and no row at any other time.
        ended = agent.truncations.reshape(self.num_envs, -1).all(1)
        wiped = ended & agent.terminals.reshape(self.num_envs, -1).all(1)
        self.terminals[:] = np.repeat(wiped, 2)
        self.truncations[:] = np.repeat(ended & ~wiped, 2)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        out = super().reset(seed)
        if self._agent is None:
            return out
        self._fold()
        return self.observations, []

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        if self._agent is None:
            return super().step(actions)
        self.copy_actions(actions)
        np.copyto(self._agent.actions.reshape(self.actions.shape), self.actions)
        infos = self._advance()
        self._fold()
        return self.observations, self.rewards, self.terminals, self.truncations, infos
