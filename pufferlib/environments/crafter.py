"""Crafter (open-world survival, 22 achievements): `crafter`.

Observations: uint8 [64, 64, 3] (local view plus inventory); actions: Discrete(17). Crafter speaks
the old gym API; this adapter gives it Gymnasium's, seeds each episode from `reset(seed)`, splits
`done` into terminated (the player died) and truncated (the `length` step cap, 10,000 by default),
and turns the final achievement counts into episode stats `achievement_<name>` (0/1 unlocked).
"""
from types import SimpleNamespace
from typing import Any, SupportsInt

import gymnasium
import numpy as np

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import PufferEnv


def env_names() -> list[str]:
    return ['crafter']


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs go to crafter.Env (area, view, size, reward, length)."""
    check_name(name, env_names(), 'Crafter')
    require('crafter', 'crafter')
    from pufferlib.emulation import GymnasiumPufferEnv
    return GymnasiumPufferEnv(env=CrafterEnv(**kwargs), buf=buf, seed=seed)


class CrafterEnv(gymnasium.Env):
    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        import crafter
        from gymnasium import spaces
        self._kwargs = kwargs
        self._env = crafter.Env(**kwargs)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, tuple(self._env.observation_space.shape), np.uint8)
        self.action_space = spaces.Discrete(self._env.action_space.n)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # crafter derives each world from (its seed, its episode counter)
            import crafter
            self._env = crafter.Env(**{**self._kwargs, 'seed': int(seed)})
        return self._env.reset(), {}

    def step(self, action: SupportsInt) -> tuple[np.ndarray, float, bool, bool, dict[str, float]]:
        ob, reward, done, info = self._env.step(int(action))
        dead = info['discount'] == 0
        out = {}
        if done:
            out = {f'achievement_{name}': float(count > 0) for name, count in info['achievements'].items()}
        return ob, float(reward), bool(done and dead), bool(done and not dead), out

    def render(self) -> np.ndarray:
        return self._env.render()
