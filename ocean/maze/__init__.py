"""puffer_maze: a procedurally generated maze per episode, an 11x11 view, reward only at the goal."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Maze(OceanEnv):
    """Observation: the 11x11 cells centred on the agent, uint8 (0 floor, 1 wall, 2 goal).
    Actions: up, down, left, right (bumping a wall does nothing). Reward 1 at the goal, which ends
    the episode; truncated after max_steps. width and height are odd and include the outer wall."""

    name = 'maze'
    defaults = dict(width=21, height=21, max_steps=1000)

    def make_spaces(self, cfg):
        return spaces.Box(low=0, high=2, shape=(121,), dtype=np.uint8), spaces.Discrete(4), 1
