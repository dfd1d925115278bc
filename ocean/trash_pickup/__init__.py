"""puffer_trash_pickup: agents pick up trash on a grid and carry it to bins.

Everything about the env is declared in spec.toml and trash_pickup.h; this module holds the scripted
collector, for `puffer play --scripted` and the tests.
"""
import numpy as np

from ..env import OceanEnv

KINDS = 4  # planes of the window: wall, trash, bin, agent (spec.toml: TP_KINDS)


def scripted_policy(env: OceanEnv, obs: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """A collector that sees only its window: walk to the nearest visible trash (or, carrying, the
    nearest visible bin), along the longer axis first, stepping aside at random when both useful
    moves are blocked; wander at random when nothing is in sight. Moves: 1 up, 2 down, 3 left, 4 right."""
    rng = rng if rng is not None else np.random.default_rng()
    sight = int(env.config['sight'])
    view = 2 * sight + 1
    planes = obs[:, :KINDS * view * view].reshape(-1, KINDS, view, view)
    actions = np.zeros(len(obs), dtype=np.int32)
    steps = {1: (-1, 0), 2: (1, 0), 3: (0, -1), 4: (0, 1)}
    for i in range(len(obs)):
        wall, trash, bins, agents = planes[i]
        carrying = obs[i, -1] > 0

        # Empty-handed, a bin blocks; carrying, a second piece of trash does.
        obstacle = (wall > 0) | (agents > 0) | ((trash if carrying else bins) > 0)
        blocked = {a: bool(obstacle[sight + dr, sight + dc]) for a, (dr, dc) in steps.items()}

        targets = np.argwhere(bins if carrying else trash) - sight
        if len(targets):
            dr, dc = targets[np.abs(targets).sum(1).argmin()]
            vertical = [2 if dr > 0 else 1] if dr else []
            horizontal = [4 if dc > 0 else 3] if dc else []
            useful = vertical + horizontal if abs(dr) >= abs(dc) else horizontal + vertical
            moves = [a for a in useful if not blocked[a]]
            if moves:
                actions[i] = moves[0]
                continue
        free = [a for a in steps if not blocked[a]]
        actions[i] = rng.choice(free) if free else 0
    return actions


# name -> policy(env, observations) -> actions; the first is the default of `puffer play --scripted`
SCRIPTED = {'collector': scripted_policy}
