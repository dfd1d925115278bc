"""puffer_breakout: break a 6x18 wall of bricks with a ball and a paddle."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

ROWS, COLS = 6, 18


class Breakout(OceanEnv):
    """Observation (float32): paddle x, ball x, ball y (normalised to [0, 1]), ball vx, ball vy
    (in [-1, 1]), lives left / lives, then one 0/1 flag per brick (row-major, top row first).
    Actions: stay, left, right. Reward 1 per brick; the episode ends with no lives or no bricks."""

    name = 'breakout'
    defaults = dict(lives=5, frameskip=4, max_steps=100000, paddle_width=16.0, paddle_speed=3.0)

    def make_spaces(self, cfg):
        low = np.zeros(6 + ROWS * COLS, dtype=np.float32)
        low[3:5] = -1
        high = np.ones(6 + ROWS * COLS, dtype=np.float32)
        return spaces.Box(low=low, high=high, dtype=np.float32), spaces.Discrete(3), 1
