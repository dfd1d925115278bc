"""puffer_trash_pickup: agents pick up trash on a grid and carry it to bins (see trash_pickup.h)."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

KINDS = 4  # planes of the window: wall, trash, bin, agent


class TrashPickup(OceanEnv):
    """Observation (uint8): a (2 * sight + 1)^2 window around the agent, one 0/1 plane each for
    wall, trash, bin and agent, then 1 if the agent carries trash. Actions: stay, up, down, left,
    right. Rewards per agent: pickup_reward, deposit_reward, and step_reward every step.
    `perf` is the fraction of the trash in bins when the episode ends.

    Options: size 3..64 (grid side); agents 1..64 (rows per env); trash 1..4096; bins 1..64
    (agents + trash + bins <= size * size); max_steps; sight 1..16; the three rewards.
    """

    name = 'trash_pickup'
    defaults = dict(size=10, agents=3, trash=15, bins=2, max_steps=300, sight=5,
                    pickup_reward=0.5, deposit_reward=0.5, step_reward=-0.01)

    def make_spaces(self, cfg):
        view = 2 * cfg['sight'] + 1
        obs = spaces.Box(low=0, high=1, shape=(KINDS * view * view + 1,), dtype=np.uint8)
        return obs, spaces.Discrete(5), cfg['agents']


def scripted_policy(env, obs, rng=None):
    """A collector that sees only its window: walk to the nearest visible trash (or, carrying, the
    nearest visible bin), along the longer axis first, stepping aside at random when both useful
    moves are blocked; wander at random when nothing is in sight. Moves: 1 up, 2 down, 3 left, 4 right."""
    rng = rng if rng is not None else np.random.default_rng()
    sight = env.config['sight']
    view = 2 * sight + 1
    planes = obs[:, :KINDS * view * view].reshape(-1, KINDS, view, view)
    actions = np.zeros(len(obs), dtype=np.int32)
    steps = {1: (-1, 0), 2: (1, 0), 3: (0, -1), 4: (0, 1)}
    for i in range(len(obs)):
        wall, trash, bins, agents = planes[i]
        carrying = obs[i, -1] > 0

        def blocked(a):
            r, c = sight + steps[a][0], sight + steps[a][1]
            return bool(wall[r, c] or agents[r, c] or (trash[r, c] if carrying else bins[r, c]))

        targets = np.argwhere(bins if carrying else trash) - sight
        if len(targets):
            dr, dc = targets[np.abs(targets).sum(1).argmin()]
            vertical = [2 if dr > 0 else 1] if dr else []
            horizontal = [4 if dc > 0 else 3] if dc else []
            useful = vertical + horizontal if abs(dr) >= abs(dc) else horizontal + vertical
            moves = [a for a in useful if not blocked(a)]
            if moves:
                actions[i] = moves[0]
                continue
        free = [a for a in steps if not blocked(a)]
        actions[i] = rng.choice(free) if free else 0
    return actions
