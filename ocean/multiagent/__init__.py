"""puffer_multiagent: agent 0 must pick action 0, agent 1 action 1."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Multiagent(OceanEnv):
    """Two agents (rows 2i and 2i+1 of env i). Observation: one-hot agent id. Each step pays
    1/horizon to an agent that picks its own id as action; episodes last `horizon` steps."""

    name = 'multiagent'
    defaults = dict(horizon=8)

    def make_spaces(self, cfg):
        return spaces.Box(low=0, high=1, shape=(2,), dtype=np.uint8), spaces.Discrete(2), 2
