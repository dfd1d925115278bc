"""puffer_squared: reach targets on the perimeter of a grid; each pays 1/num_targets once."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Squared(OceanEnv):
    """Observation: the grid, uint8 (0 empty, 1 agent, 2 target). Actions: noop, up, down, left, right.

    An episode ends when every target is collected (terminal) or after max_steps (truncation);
    the best return is 1.
    """

    name = 'squared'
    defaults = dict(size=11, num_targets=4, max_steps=64)

    def make_spaces(self, cfg):
        obs = spaces.Box(low=0, high=2, shape=(cfg['size'] * cfg['size'],), dtype=np.uint8)
        return obs, spaces.Discrete(5), 1
