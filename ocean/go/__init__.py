"""puffer_go: Go on 5x5 to 9x9 with area scoring, komi and legal-move masks.

Everything about the env is declared in spec.toml and go.h (the rules, the seats); this module
holds the env class (its turn flags, ocean/seats.py) and the scripted policy in Python, for `puffer
play --scripted` and the tests.
"""
import numpy as np

from ..env import OceanEnv
from ..seats import TurnBasedEnv

PLANES = 5  # mine, theirs, legal, captures, atari (spec.toml: GO_PLANES)


class Go(TurnBasedEnv):
    """puffer_go: in two-seat mode `env.masks` marks the row to move (the to_move field)."""

    def turn_column(self) -> int:
        return PLANES * int(self.config['size']) ** 2 + 1


def scripted_policy(env: OceanEnv, obs: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """The one-ply capture-greedy player, from observations alone: capture if it can, else a random
    legal move that does not fill one of its own eyes, else pass. The C opponent plays the same
    rules but picks the capture that takes the most stones (the observation only marks captures)."""
    rng = rng if rng is not None else np.random.default_rng()
    size = int(env.config['size'])
    n = size * size
    planes = obs[:, :PLANES * n].reshape(-1, PLANES, size, size) > 0.5
    mine, legal, capture = planes[:, 0], planes[:, 2], planes[:, 3]
    empty = ~(planes[:, 0] | planes[:, 1])
    # an own eye: every on-board neighbour is an own stone (off-board counts as own)
    padded = np.pad(mine, ((0, 0), (1, 1), (1, 1)), constant_values=True)
    surrounded = padded[:, :-2, 1:-1] & padded[:, 2:, 1:-1] & padded[:, 1:-1, :-2] & padded[:, 1:-1, 2:]
    choices = (legal & ~(empty & surrounded)).reshape(len(obs), n)
    captures = capture.reshape(len(obs), n)
    actions = np.full(len(obs), n, dtype=np.int32)  # pass
    for i in range(len(obs)):
        if obs[i, PLANES * n + 1] < 0.5:  # not this row's turn (two-player mode): ignored
            actions[i] = 0
        elif captures[i].any():
            actions[i] = int(np.flatnonzero(captures[i])[0])
        elif choices[i].any():
            actions[i] = int(rng.choice(np.flatnonzero(choices[i])))
    return actions


# name -> policy(env, observations) -> actions; the first is the default of `puffer play --scripted`
SCRIPTED = {'capture_greedy': scripted_policy}
