"""MiniHack tasks (small NetHack levels built on nle): `minihack_room`, `minihack_corridor`, ...

Same observation layout and policy as the NetHack family (`pufferlib.environments.nethack:Policy`).
Episode stats add `success` (1.0 when the task was solved) to NLE's scalars.
"""
import os
import sys
import types
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import gymnasium

from pufferlib.environments._support import check_name, require
from pufferlib.environments.nethack import OBSERVATION_KEYS, SeededNLE
from pufferlib.pufferenv import PufferEnv

TASKS = {
    'minihack_room': 'MiniHack-Room-5x5-v0',
    'minihack_room_random': 'MiniHack-Room-Random-5x5-v0',
    'minihack_room_monster': 'MiniHack-Room-Monster-5x5-v0',
    'minihack_room_15x15': 'MiniHack-Room-15x15-v0',
    'minihack_corridor': 'MiniHack-Corridor-R2-v0',
    'minihack_corridor_r3': 'MiniHack-Corridor-R3-v0',
    'minihack_keyroom': 'MiniHack-KeyRoom-S5-v0',
    'minihack_mazewalk': 'MiniHack-MazeWalk-9x9-v0',
    'minihack_river': 'MiniHack-River-v0',
    'minihack_eat': 'MiniHack-Eat-v0',
}
INSTALL = 'pip install --no-deps nle==1.3.0 minihack==1.0.2'


def env_names() -> list[str]:
    return list(TASKS)


def _import_minihack() -> types.ModuleType:
    # minihack 1.0.2 calls pkg_resources.resource_filename at import, and setuptools >= 81 no longer
    # ships pkg_resources. That one function is all it uses, so stand in for it when it is missing.
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        import importlib.util
        shim = types.ModuleType('pkg_resources')

        def resource_filename(package: str, path: str) -> str:
            spec: Any = importlib.util.find_spec(package)  # minihack asks for its own files: it is found
            return os.path.join(os.path.dirname(spec.origin), path)
        shim.resource_filename = resource_filename  # type: ignore[attr-defined]  # a module made here
        sys.modules['pkg_resources'] = shim
    require('nle', 'minihack', also=INSTALL)
    return require('minihack', 'minihack', also=INSTALL)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None,
         observation_keys: Sequence[str] = OBSERVATION_KEYS, max_episode_steps: int | None = None,
         **kwargs: Any) -> PufferEnv:
    """kwargs go to the MiniHack task (reward_win, penalty_step, ...)."""
    check_name(name, env_names(), 'MiniHack')
    _import_minihack()
    from pufferlib.emulation import GymnasiumPufferEnv
    kwargs['observation_keys'] = tuple(observation_keys)
    if max_episode_steps is not None:
        kwargs['max_episode_steps'] = int(max_episode_steps)
    kwargs.setdefault('fix_moon_phase', True)  # see nethack.SeededNLE

    def create() -> gymnasium.Env:
        return _Success(SeededNLE(gymnasium.make(TASKS[name], **kwargs)))

    return GymnasiumPufferEnv(env_creator=create, buf=buf, seed=seed)


def __getattr__(attr: str) -> type:
    if attr == 'Policy':
        from pufferlib.environments import nethack
        return nethack.Policy
    raise AttributeError(f'module {__name__!r} has no attribute {attr!r}')


class _Success(gymnasium.Wrapper):
    """Adds info['success'] on the last step: MiniHack's metric, which the return alone hides."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        ob, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            status = info.get('end_status')
            info = {key: value for key, value in info.items() if key != 'end_status'}
            info['success'] = float(getattr(status, 'name', None) == 'TASK_SUCCESSFUL')
        return ob, reward, terminated, truncated, info
