"""puffer_pong: Pong against a scripted paddle.

Reward +1 / -1 per point; the game ends when a side reaches max_score. Each step runs `frameskip`
physics frames.
"""
import numpy as np

from ..env import OceanEnv
from ..tools import follow, pixel_centre

COURT_H = 128.0  # pixels: PONG_H in spec.toml


def tracker(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """Keep the paddle's centre on the ball's height."""
    return follow(pixel_centre(obs[:, 0], COURT_H, env.config['paddle_height']), pixel_centre(obs[:, 3], COURT_H, 2.0))


SCRIPTED = {'tracker': tracker}
