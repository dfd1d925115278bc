"""puffer_checkers: English draughts with forced captures and multi-jumps as action masks.

Everything about the env is declared in spec.toml and checkers.h (the rules, the seats, the one-ply
greedy player that moves inside the step); this module holds a scripted policy in Python, for
`puffer play --scripted` and the tests.
"""
import numpy as np

from ..env import OceanEnv


def random_legal(env: OceanEnv, obs: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """A uniformly random legal move (the env's action masks; a waiting row's mask allows 0 alone)."""
    rng = rng if rng is not None else np.random.default_rng()
    legal = env.action_masks
    if legal is None:  # only an env built without its spec's mask lacks them
        return np.zeros(len(obs), dtype=np.int32)
    scores = np.where(legal, rng.random(legal.shape), -1.0)
    return np.argmax(scores, axis=1).astype(np.int32)


# name -> policy(env, observations) -> actions; the first is the default of `puffer play --scripted`
SCRIPTED = {'random_legal': random_legal}
