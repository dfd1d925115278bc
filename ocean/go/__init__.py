"""puffer_go: Go on 5x5 to 9x9 with area scoring, komi and legal-move masks (see go.h for the rules)."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

PLANES, SCALARS = 5, 5


class Go(OceanEnv):
    """Observation (float32), from the row's own colour: planes of size*size for its stones, the
    opponent's stones, its legal moves, the points where it captures, and its groups in atari; then
    [is black, is to move, opponent just passed, moves / max_moves, area margin incl. komi / points].
    Action: point r * size + c, or size * size to pass. +1 win, -1 loss; an illegal move is a pass
    that costs illegal_reward.

    Options: size 5..9; two_player (both colours are agent rows, row 0 black; only the row to move
    is live, see ocean/go/go.h) or one row against the scripted capture-greedy player with the
    agent's colour `seat` (0 black, 1 white, -1 alternating every game); max_moves 0..10000 plies
    (0 = 3 * size * size); komi; illegal_reward.
    """

    name = 'go'
    defaults = dict(size=7, two_player=False, seat=-1, max_moves=0, komi=7.5, illegal_reward=-0.1)

    def make_spaces(self, cfg):
        n = cfg['size'] * cfg['size']
        obs = spaces.Box(low=-2.0, high=2.0, shape=(PLANES * n + SCALARS,), dtype=np.float32)
        return obs, spaces.Discrete(n + 1), 2 if cfg['two_player'] else 1


def scripted_policy(env, obs, rng=None):
    """The one-ply capture-greedy player, from observations alone: capture if it can, else a random
    legal move that does not fill one of its own eyes, else pass. The C opponent plays the same
    rules but picks the capture that takes the most stones (the observation only marks captures)."""
    rng = rng if rng is not None else np.random.default_rng()
    size = env.config['size']
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
