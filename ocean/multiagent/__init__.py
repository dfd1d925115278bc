"""puffer_multiagent: agent 0 must pick action 0, agent 1 action 1.

Two agents (rows 2i and 2i+1 of env i). Each step pays 1/horizon to an agent that picks its own id
as action; episodes last `horizon` steps.
"""
import numpy as np

from ..env import OceanEnv


def own_id(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The optimum: each agent plays its own id (obs is the one-hot id, so agent 1 has obs[1] == 1)."""
    return obs[:, 1].astype(np.int32)


SCRIPTED = {'own_id': own_id}
