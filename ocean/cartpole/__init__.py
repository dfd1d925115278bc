"""puffer_cartpole: Gymnasium CartPole-v1 dynamics in C (the "cartpole-like" benchmark row)."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Cartpole(OceanEnv):
    """Observation: x, x_dot, theta, theta_dot (float32). Actions: push left, push right.
    Same constants and termination as CartPole-v1; reward 1 per step, truncated at max_steps."""

    name = 'cartpole'
    defaults = dict(max_steps=500)

    def make_spaces(self, cfg):
        # Velocities are unbounded in principle; within an episode (|theta| < 12 degrees, |x| < 2.4,
        # at most max_steps) they stay far inside these bounds.
        high = np.array([4.8, 1e6, 0.42, 1e6], dtype=np.float32)
        return spaces.Box(low=-high, high=high, dtype=np.float32), spaces.Discrete(2), 1
