"""puffer_mixed: pick the asked target and aim at it, with one mixed action (Discrete + Box).

Targets sit on a line in [-1, 1]; the observation row is their positions, then a one-hot of the target
asked for. An action row is [pick, aim]: the pick a choice in [0, num_targets), the aim a point in
[-1, 1]. The reward is 1 - |aim - asked target| (at least 0) when the pick is the asked target, else 0,
and every step is a whole episode. The logged `perf` counts a step as solved when the pick is right and
the aim within `tolerance`; `picked` and `aimed` log each part alone.
"""
import numpy as np

from ..env import OceanEnv


def _asked(env: OceanEnv, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the asked target's index, its position) of every row."""
    n = int(env.config['num_targets'])
    rows = np.asarray(obs).reshape(env.num_agents, 2 * n)
    asked = rows[:, n:].argmax(1)
    return asked, rows[np.arange(len(rows)), asked]


def oracle(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The optimum: pick the asked target and aim at it."""
    asked, position = _asked(env, obs)
    return np.stack([asked, position], axis=1).astype(np.float32)


def pick_only(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The right pick with the aim left in the middle: the discrete part alone scores little."""
    asked, _ = _asked(env, obs)
    return np.stack([asked, np.zeros(len(asked))], axis=1).astype(np.float32)


def aim_only(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The right aim with always the first target picked: the Box part alone scores little."""
    _, position = _asked(env, obs)
    return np.stack([np.zeros(len(position)), position], axis=1).astype(np.float32)


SCRIPTED = {'oracle': oracle, 'pick_only': pick_only, 'aim_only': aim_only}
