"""MiniGrid gridworlds: `minigrid_empty`, `minigrid_doorkey`, ...

Saved states (get_state / set_state) are a pickle of the MiniGrid env's attributes (its grid of
objects, the agent, the step count, the RNG): MiniGrid's game is a graph of Python objects, and
task-specific attributes vary by task, so pickling them is the honest complete snapshot. Loading a
pickle runs code from it: load only states you saved.

Observations: the agent's 7x7x3 egocentric view (`image`, uint8) and its `direction` (0-3), a
dict that emulation lays out as bytes. The text `mission` is dropped: emulation has no string
space, and in the tasks bound here the mission never changes. Actions: Discrete(7).
"""
import pickle
from types import SimpleNamespace
from typing import Any

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import PufferEnv, StateError

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

    class MiniGridTask(FilterObservation):
        """The task with its observation filtered, and its state saved (see module docstring)."""

        def state_identity(self) -> tuple[str, int, dict]:
            return name, 1, kwargs

        def get_state(self) -> bytes:
            unwrapped = self.env.unwrapped
            return pickle.dumps({k: v for k, v in unwrapped.__dict__.items() if k not in NOT_STATE},
                                protocol=pickle.HIGHEST_PROTOCOL)

        def set_state(self, payload: bytes) -> Any:
            unwrapped: Any = self.env.unwrapped
            try:
                unwrapped.__dict__.update(pickle.loads(payload))
            except Exception as e:  # the header matched, so this is a corrupt or hand-made payload
                raise StateError(f'{name}: the state payload does not unpickle ({e})') from None
            env = self.env
            while isinstance(env, gymnasium.Wrapper):  # Gymnasium's order check: this env has been reset
                if hasattr(env, '_has_reset'):
                    env._has_reset = True
                env = env.env
            return self.observation(unwrapped.gen_obs())

    def create() -> gymnasium.Env:
        return MiniGridTask(gymnasium.make(TASKS[name], **kwargs), ['image', 'direction'])

    return GymnasiumPufferEnv(env_creator=create, buf=buf, seed=seed)


# Attributes of a MiniGrid env that are not its game: the renderer, the spaces, the registry entry.
NOT_STATE = frozenset({'window', 'clock', 'spec', 'observation_space', 'action_space', 'render_mode', 'actions',
                       'metadata'})
