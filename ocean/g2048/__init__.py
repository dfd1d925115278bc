"""puffer_g2048: the 2048 sliding puzzle with masks for the moves that change nothing.

Everything about the env is declared in spec.toml and g2048.h; this module holds the scripted
policy, for `puffer play --scripted` and the tests.
"""
import numpy as np

from ..env import OceanEnv

UP, DOWN, LEFT, RIGHT = range(4)
# The corner strategy: keep the big tiles in the bottom-left corner, moving up only when nothing else
# changes the board.
CORNER_ORDER = (DOWN, LEFT, RIGHT, UP)


def corner(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The first legal move of down, left, right, up (the legal moves: the env's action masks)."""
    legal = env.action_masks
    if legal is None:  # only an env built without its spec's mask lacks them
        return np.full(len(obs), DOWN, dtype=np.int32)
    order = np.array(CORNER_ORDER)
    first = np.argmax(legal[:, order], axis=1)  # every live board has a legal move
    return order[first].astype(np.int32)


# name -> policy(env, observations) -> actions; the first is the default of `puffer play --scripted`
SCRIPTED = {'corner': corner}
