"""MiniGrid gridworlds: `minigrid_empty`, `minigrid_doorkey`, ...

Observations: the agent's 7x7x3 egocentric view (`image`, uint8) and its `direction` (0-3), a
dict that emulation lays out as bytes. The text `mission` is dropped: emulation has no string
space, and in the tasks bound here the mission never changes. Actions: Discrete(7).
"""
from types import SimpleNamespace
from typing import Any

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import PufferEnv

TASKS = {
    'minigrid_empty': 'MiniGrid-Empty-8x8-v0',
    'minigrid_empty_random': 'MiniGrid-Empty-Random-6x6-v0',
    'minigrid_doorkey': 'MiniGrid-DoorKey-5x5-v0',
    'minigrid_doorkey_8x8': 'MiniGrid-DoorKey-8x8-v0',
    'minigrid_fourrooms': 'MiniGrid-FourRooms-v0',
    'minigrid_lavagap': 'MiniGrid-LavaGapS5-v0',
    'minigrid_multiroom': 'MiniGrid-MultiRoom-N2-S4-v0',
    'minigrid_memory': 'MiniGrid-MemoryS7-v0',
}


def env_names() -> list[str]:
    return list(TASKS)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, max_episode_steps: int | None = None,
         **kwargs: Any) -> PufferEnv:
    """kwargs go to gymnasium.make (e.g. max_steps); max_episode_steps is MiniGrid's max_steps."""
    check_name(name, env_names(), 'MiniGrid')
    require('minigrid', 'minigrid')
    import gymnasium
    from gymnasium.wrappers import FilterObservation
    from pufferlib.emulation import GymnasiumPufferEnv
    if max_episode_steps is not None:
        kwargs['max_steps'] = int(max_episode_steps)

    def create() -> gymnasium.Env:
        return FilterObservation(gymnasium.make(TASKS[name], **kwargs), ['image', 'direction'])

    return GymnasiumPufferEnv(env_creator=create, buf=buf, seed=seed)
