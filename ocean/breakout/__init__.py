"""puffer_breakout: break a 6x18 wall of bricks with a ball and a paddle.

Reward 1 per brick; the episode ends with no lives or no bricks.
"""
import numpy as np

from ..env import OceanEnv
from ..tools import follow, pixel_centre

COURT_W = 144.0  # pixels: BO_COLS * BO_BRICK_W in spec.toml


def tracker(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """Keep the paddle's centre under the ball."""
    return follow(pixel_centre(obs[:, 0], COURT_W, env.config['paddle_width']), pixel_centre(obs[:, 1], COURT_W, 2.0))


SCRIPTED = {'tracker': tracker}
