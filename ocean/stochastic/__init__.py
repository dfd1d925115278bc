"""puffer_stochastic: the optimal policy plays action 0 with probability p, action 1 otherwise."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Stochastic(OceanEnv):
    """Observation: a constant 0. Reward at the end of each `horizon`-step episode: 1 - |q - p|,
    q being the fraction of action 0 played; a deterministic policy earns at most max(p, 1 - p)."""

    name = 'stochastic'
    defaults = dict(p=0.75, horizon=64)

    def make_spaces(self, cfg):
        return spaces.Box(low=0, high=1, shape=(1,), dtype=np.uint8), spaces.Discrete(2), 1
