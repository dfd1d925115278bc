"""puffer_bandit: a multi-armed bandit; one arm pays more often than the others.

One-step episodes, constant observation. Arm `best_arm` pays 1 with probability best_prob, the others
with other_prob. The logged `perf` is the fraction of pulls of the best arm.
"""
import numpy as np

from ..env import OceanEnv


def best_arm(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The optimum: always pull the best arm."""
    return np.full(env.num_agents, env.config['best_arm'], dtype=np.int32)


SCRIPTED = {'best_arm': best_arm}
