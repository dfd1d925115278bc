"""Crafter (open-world survival, 22 achievements): `crafter`.

Observations: uint8 [64, 64, 3] (local view plus inventory); actions: Discrete(17). Crafter speaks
the old gym API; this adapter gives it Gymnasium's, seeds each episode from `reset(seed)`, splits
`done` into terminated (the player died) and truncated (the `length` step cap, 10,000 by default),
and turns the final achievement counts into episode stats `achievement_<name>` (0/1 unlocked).

Saved states (get_state / set_state) are a pickle of crafter's env (its world of Python objects, the
player, the counters and the world's RNG, without the textures and views, which are rebuilt from
assets) and the last observation (rendering draws noise from the world's RNG, so it is not redrawn).
Loading a pickle runs code from it: load only states you saved.
"""
from types import SimpleNamespace
import collections
import pickle
from typing import Any, SupportsInt

import gymnasium
import numpy as np

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import PufferEnv, StateError

# crafter.Env attributes that are rendering machinery, not the game (the views hold the world: rebound)
_NOT_STATE = frozenset({'_textures', '_local_view', '_item_view', '_sem_view'})


def env_names() -> list[str]:
    return ['crafter']


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs go to crafter.Env (area, view, size, reward, length)."""
    check_name(name, env_names(), 'Crafter')
    require('crafter', 'crafter')
    from pufferlib.emulation import GymnasiumPufferEnv
    return GymnasiumPufferEnv(env=CrafterEnv(**kwargs), buf=buf, seed=seed)


class _OrderedSet(dict):
    """A set that iterates in insertion order. Crafter keeps each chunk's objects in a set, whose order
    follows memory addresses, and picks creatures to despawn by position in it: two copies of one world
    (a saved state and its original) would then step differently."""

    @classmethod
    def of(cls, items: Any) -> '_OrderedSet':
        out = cls()
        for item in items:
            out[item] = None
        return out

    def add(self, item: Any) -> None:
        self[item] = None

    def remove(self, item: Any) -> None:
        del self[item]


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
        self._last_obs: np.ndarray | None = None

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # crafter derives each world from (its seed, its episode counter)
            import crafter
            self._env = crafter.Env(**{**self._kwargs, 'seed': int(seed)})
        self._last_obs = self._env.reset()
        world = self._env._world
        # Objects occupy distinct cells, so their positions order a fresh world's chunks the same in every copy.
        world._chunks = collections.defaultdict(_OrderedSet, {
            k: _OrderedSet.of(sorted(v, key=lambda obj: tuple(obj.pos))) for k, v in world._chunks.items()})
        return self._last_obs, {}

    def step(self, action: SupportsInt) -> tuple[np.ndarray, float, bool, bool, dict[str, float]]:
        ob, reward, done, info = self._env.step(int(action))
        self._last_obs = ob
        dead = info['discount'] == 0
        out = {}
        if done:
            out = {f'achievement_{name}': float(count > 0) for name, count in info['achievements'].items()}
        return ob, float(reward), bool(done and dead), bool(done and not dead), out

    def state_identity(self) -> tuple[str, int, dict]:
        return 'crafter', 1, self._kwargs

    def get_state(self) -> bytes:
        game = {k: v for k, v in self._env.__dict__.items() if k not in _NOT_STATE}
        return pickle.dumps((game, self._last_obs), protocol=pickle.HIGHEST_PROTOCOL)

    def set_state(self, payload: bytes) -> np.ndarray:
        try:
            game, obs = pickle.loads(payload)
        except Exception as e:  # the header matched, so this is a corrupt or hand-made payload
            raise StateError(f'crafter: the state payload does not unpickle ({e})') from None
        self._env.__dict__.update(game)
        self._env._local_view._world = self._env._world
        self._env._sem_view._world = self._env._world
        self._last_obs = obs
        return obs

    def render(self) -> np.ndarray:
        return self._env.render()
