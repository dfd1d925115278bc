"""puffer_pong: Pong against a scripted paddle."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Pong(OceanEnv):
    """Observation (float32, normalised): agent paddle y, opponent paddle y, ball x, ball y, ball vx,
    ball vy, agent score, opponent score. Actions: stay, up, down. Reward +1 / -1 per point; the game
    ends when a side reaches max_score. Each step runs `frameskip` physics frames."""

    name = 'pong'
    defaults = dict(max_score=21, frameskip=4, max_steps=100000, paddle_height=20.0, paddle_speed=3.0,
                    opponent_speed=1.5)

    def make_spaces(self, cfg):
        low = np.array([0, 0, 0, 0, -1, -1, 0, 0], dtype=np.float32)
        high = np.ones(8, dtype=np.float32)
        return spaces.Box(low=low, high=high, dtype=np.float32), spaces.Discrete(3), 1
