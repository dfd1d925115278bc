"""puffer_connect4: Connect Four against a scripted opponent (win, else block, else random)."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Connect4(OceanEnv):
    """Observation: the 6x7 board, row-major from the top, float32 (+1 agent, -1 opponent, 0 empty).
    Action: a column. +1 win, -1 loss or illegal move (full column), 0 draw; the agent moves first."""

    name = 'connect4'
    defaults = {}

    def make_spaces(self, cfg):
        return spaces.Box(low=-1, high=1, shape=(42,), dtype=np.float32), spaces.Discrete(7), 1
