"""puffer_snake: many snakes, one arena; each snake is an agent."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Snake(OceanEnv):
    """num_snakes agents per env. Observation: the (2*vision+1)^2 cells around the head, uint8
    (0 empty, 1 food, 2 wall, 3 snake). Actions: up, down, left, right. +1 per food (the snake grows
    up to max_length), -1 for hitting a wall or a snake, which ends that snake's episode and respawns
    it; a life is truncated after max_steps."""

    name = 'snake'
    defaults = dict(width=64, height=64, num_snakes=16, num_food=64, vision=5, max_length=64, max_steps=2000)

    def make_spaces(self, cfg):
        side = 2 * cfg['vision'] + 1
        return (spaces.Box(low=0, high=3, shape=(side * side,), dtype=np.uint8), spaces.Discrete(4),
                cfg['num_snakes'])
