"""puffer_memory: see a random sequence, wait, recite it; needs a recurrent policy."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Memory(OceanEnv):
    """Observation: one-hot of the symbol shown (all zero while waiting), then a recall flag.

    Episodes last 2 * length + delay steps. In the recall phase each correct symbol pays 1/length;
    actions outside it are ignored. Chance level is 1/num_symbols, perfect memory earns 1.
    """

    name = 'memory'
    defaults = dict(length=4, delay=2, num_symbols=2)

    def make_spaces(self, cfg):
        obs = spaces.Box(low=0, high=1, shape=(cfg['num_symbols'] + 1,), dtype=np.uint8)
        return obs, spaces.Discrete(cfg['num_symbols']), 1
