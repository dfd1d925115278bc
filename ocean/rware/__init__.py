"""puffer_rware: the multi-robot warehouse (RWARE): lift requested shelves, deliver, put them back."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

FLAGS, SELF, JOB_CLIP = 8, 9, 8


class Rware(OceanEnv):
    """num_agents robots per warehouse (shelf_cols x shelf_rows blocks of 2 x column_height shelves;
    the defaults are the paper's tiny 10x11 warehouse with 4 robots and 4 open requests).
    Observation (int8): 8 flags for each cell of the (2*sight+1)^2 view (wall, highway, goal, shelf,
    requested shelf, robot, loaded robot, empty shelf cell), heading one-hot, load one-hot (none,
    requested, other), and the current job's offset in the robot's frame (forward, right; +-8).
    Actions: nothing, forward, turn left, turn right, lift/put down. Reward to the acting robot: +1 per
    delivery, +0.5 for lifting a requested shelf, +0.5 for putting a delivered shelf back.
    Log (one entry per warehouse episode): score = deliveries per robot, perf = score / (max_steps/50).
    autopilot=1 makes the env ignore actions and run its scripted policy (the baseline)."""

    name = 'rware'
    defaults = dict(num_agents=4, requests=4, shelf_cols=3, shelf_rows=1, column_height=8, sight=1, max_steps=500,
                    autopilot=0)

    def make_spaces(self, cfg):
        side = 2 * cfg['sight'] + 1
        view = side * side * FLAGS
        low = np.zeros(view + SELF, dtype=np.int8)
        high = np.ones(view + SELF, dtype=np.int8)
        low[-2:], high[-2:] = -JOB_CLIP, JOB_CLIP
        return spaces.Box(low=low, high=high, dtype=np.int8), spaces.Discrete(5), cfg['num_agents']
