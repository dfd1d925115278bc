"""puffer_password: guess a fixed bit string; reward 1 only when all of it is right."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Password(OceanEnv):
    """Observation: one value per bit (0 not yet guessed, 1 guessed 0, 2 guessed 1). Action: the next bit.

    Episodes last `length` steps; exactly one of the 2**length action sequences earns 1. The password
    is a function of `password_seed` only, so every env in a run shares it.
    """

    name = 'password'
    defaults = dict(length=5, password_seed=0)

    def make_spaces(self, cfg):
        return spaces.Box(low=0, high=2, shape=(cfg['length'],), dtype=np.uint8), spaces.Discrete(2), 1
