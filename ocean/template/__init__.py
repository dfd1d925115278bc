"""puffer_template: the smallest complete Ocean env; copy this folder to start a new one."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Template(OceanEnv):
    """Observation: the line, uint8 (0 empty, 1 agent, 2 goal). Actions: left, right.
    Reward 1 at the goal (terminal); truncated after max_steps."""

    name = 'template'                          # folder name; the env is 'puffer_template'
    defaults = dict(length=8, max_steps=32)    # every key is a kwarg, checked for name and type

    def make_spaces(self, cfg):
        """(observation Box of one row, flat action space, agents per env instance)."""
        obs = spaces.Box(low=0, high=2, shape=(cfg['length'],), dtype=np.uint8)
        return obs, spaces.Discrete(2), 1
