"""puffer_bandit: a multi-armed bandit; one arm pays more often than the others."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Bandit(OceanEnv):
    """One-step episodes, constant observation. Arm `best_arm` pays 1 with probability best_prob,
    the others with other_prob. The logged `perf` is the fraction of pulls of the best arm."""

    name = 'bandit'
    defaults = dict(num_arms=4, best_arm=2, best_prob=0.7, other_prob=0.3)

    def make_spaces(self, cfg):
        return spaces.Box(low=0, high=1, shape=(1,), dtype=np.uint8), spaces.Discrete(cfg['num_arms']), 1
