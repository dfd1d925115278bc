"""puffer_moba: a small MOBA (ocean/moba/moba.h holds the rules, docs/ocean.md the layout).

Each hero is one row. With two_player off (the default) the rows are team 0's heroes and the env plays
team 1 itself: `opponent` 0 the scripted heroes, 1 random actions, 2 heroes that stand at their base.
The scripted hero is built into the C env: `autopilot=True` makes it play every row (`puffer play
puffer_moba autopilot=True` shows it); its games are scored by the same episode log as a trained
policy's (score: 1 for a won game; perf: the share of the enemy's 7 structures destroyed).

The observation is one flat uint8 row; `layout()` gives the slices of its parts. Team 1 sees its
crops turned half a turn and moves in that frame, so the two sides are the same game.

`two_player=True` (which `puffer league` switches on) makes each game two rows, one per team: a team
row's observation and actions are its heroes' rows side by side (the C rows of a team are
contiguous, so these are the same bytes), its reward is its heroes' summed reward minus the other
team's (zero-sum: the win reward decides the sign of a decided game), it is live while one of its
heroes is, and its episode is the game. pufferlib/arena.py seats one learner row per game, so it
plays team against team without knowing about teams.
"""
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.pufferenv import BUFFER_NAMES, PufferEnv

from ..env import OceanEnv

VIEW = 5             # spec.toml: MB_VIEW
SIDE = 2 * VIEW + 1
CROP = SIDE * SIDE
SELF = 16            # MB_SELF
SIZE = 40            # MB_SIZE
NVEC = (9, 6)
# codes of the `units` crop: ground, the most common tile, is 0, so that a policy reading the bytes as numbers
# sees a mostly zero crop
GROUND, LANE, OFF, ALLY_CREEP, ENEMY_CREEP, ALLY_TOWER, ENEMY_TOWER, ALLY_ANCIENT, ENEMY_ANCIENT, \
    ALLY_HERO, ENEMY_HERO, SELF_CODE = range(12)
# the `self` features, by name
HP, MANA, LEVEL, XP, ATTACK_CD, Q_CD, W_CD, E_CD, RESPAWN, X, Y, ALLY_TOWERS, ENEMY_TOWERS, ALLY_ANCIENT_HP, \
    ENEMY_ANCIENT_HP, ELAPSED = range(SELF)


def layout() -> dict[str, slice]:
    """The parts of an observation row: the units and health crops, the own state."""
    return {'units': slice(0, CROP), 'health': slice(CROP, 2 * CROP), 'self': slice(2 * CROP, 2 * CROP + SELF)}


class Moba(OceanEnv):
    """puffer_moba: one row per hero, or with two_player=True one row per team (module docstring)."""

    def __init__(self, num_envs: int = 1, buf: SimpleNamespace | None = None, seed: int | None = None,
                 **options: Any) -> None:
        self._hero: SimpleNamespace | None = None
        if not self.resolve_config(options)['two_player']:
            super().__init__(num_envs, buf, seed, **options)
            return
        # The C games step on private per-hero rows; the team rows (the vector's, when it passes buf)
        # are bound afterwards and filled from them after every reset and step.
        super().__init__(num_envs, None, seed, **options)
        self._hero = SimpleNamespace(**{name: getattr(self, name) for name in BUFFER_NAMES})
        self.members = self.agents_per_env // 2
        row = self.single_observation_space
        self.single_observation_space = spaces.Box(np.tile(row.low, self.members), np.tile(row.high, self.members),
                                                   dtype=row.dtype)
        self.single_action_space = spaces.MultiDiscrete(np.tile(NVEC, self.members))
        self.agents_per_env = 2
        self.num_agents = 2 * self.num_envs
        PufferEnv.__init__(self, buf)
        self._fold()

    def _fold(self) -> None:
        """The team rows from the hero rows: observations copied, the rest reduced."""
        hero = self._hero
        assert hero is not None  # two_player mode
        np.copyto(self.observations, hero.observations.reshape(self.observations.shape))
        team = hero.rewards.reshape(self.num_envs, 2, self.members).sum(2)
        self.rewards[:] = (team - team[:, ::-1]).reshape(-1)
        np.any(hero.masks.reshape(self.num_agents, self.members), axis=1, out=self.masks)
        # C ends every row of a game together (moba.h), so the team rows take its first hero's flags.
        first = hero.terminals.reshape(self.num_agents, self.members)[:, 0]
        np.copyto(self.terminals, first)
        np.copyto(self.truncations, hero.truncations.reshape(self.num_agents, self.members)[:, 0])

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        out = super().reset(seed)
        if self._hero is None:
            return out
        self._fold()
        return self.observations, []

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        if self._hero is None:
            return super().step(actions)
        self.copy_actions(actions)
        np.copyto(self._hero.actions.reshape(self.actions.shape), self.actions)
        infos = self._advance()
        self._fold()
        return self.observations, self.rewards, self.terminals, self.truncations, infos
