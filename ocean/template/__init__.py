"""puffer_template: the smallest complete Ocean env; copy this folder to start a new one.

Everything about the env is declared in spec.toml; this module is optional and holds what only Python
can say: scripted policies (used by `puffer play --scripted` and the tests), and, where an env needs
one, a subclass of OceanEnv named like the C struct (see ocean/spaces/__init__.py).
"""
import numpy as np

from ..env import OceanEnv


def walk_right(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The optimal policy: always step toward the goal."""
    return np.ones(env.num_agents, dtype=np.int32)


# name -> policy(env, observations) -> actions; the first one is the default.
SCRIPTED = {'walk_right': walk_right}
