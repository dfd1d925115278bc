"""puffer_tripletriad: Triple Triad (basic rules, open hands) with legal-move masks (see tripletriad.h)."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

CELLS, HAND = 9, 5
OBS = CELLS * 6 + 2 * HAND * 5 + 4


class TripleTriad(OceanEnv):
    """Observation (float32), from the row's own side: per board cell [mine, theirs, 4 ranks /
    max_rank]; per card of its hand, then the opponent's, [in hand, 4 ranks / max_rank]; then [is to
    move, moved first, (my cards - their cards) / 10, placements / 9]. Action: hand slot * 9 + cell.
    +1 win, -1 loss, 0 draw; an illegal action plays the first legal one and costs illegal_reward.

    Options: two_player (row r is player r, player 0 moves first; only the row to move is live, see
    ocean/tripletriad/tripletriad.h) or one row against the flip-greedy player as player `seat` (0,
    1, or -1 alternating every game); max_rank 1..10 (ranks are uniform in 1..max_rank);
    illegal_reward.
    """

    name = 'tripletriad'
    defaults = dict(two_player=False, seat=-1, max_rank=10, illegal_reward=-0.1)

    def make_spaces(self, cfg):
        obs = spaces.Box(low=-1.0, high=1.0, shape=(OBS,), dtype=np.float32)
        return obs, spaces.Discrete(CELLS * HAND), 2 if cfg['two_player'] else 1


# Side d of a cell faces side (d + 2) % 4 of its neighbour; neighbours of each cell on N, E, S, W.
NEIGHBORS = [[(r - 1) * 3 + c if r > 0 else -1, r * 3 + c + 1 if c < 2 else -1,
              (r + 1) * 3 + c if r < 2 else -1, r * 3 + c - 1 if c > 0 else -1]
             for r in range(3) for c in range(3)]


def scripted_policy(env, obs, rng=None):
    """Greedy on immediate flips, from observations alone (the rule the C opponent plays): the
    (card, cell) that turns the most opposing cards now, ties broken uniformly at random."""
    rng = rng if rng is not None else np.random.default_rng()
    board = obs[:, :CELLS * 6].reshape(-1, CELLS, 6)
    hand = obs[:, CELLS * 6:CELLS * 6 + HAND * 5].reshape(-1, HAND, 5)
    actions = np.zeros(len(obs), dtype=np.int32)
    for i in range(len(obs)):
        if obs[i, -4] < 0.5:  # not this row's turn (two-player mode): ignored
            continue
        empty = (board[i, :, 0] + board[i, :, 1]) < 0.5
        best, ties = -1, []
        for slot in np.flatnonzero(hand[i, :, 0] > 0.5):
            ranks = hand[i, slot, 1:]
            for cell in np.flatnonzero(empty):
                flips = sum(1 for d, j in enumerate(NEIGHBORS[cell])
                            if j >= 0 and board[i, j, 1] > 0.5 and ranks[d] > board[i, j, 2 + (d + 2) % 4] + 1e-6)
                if flips > best:
                    best, ties = flips, []
                if flips == best:
                    ties.append(slot * CELLS + cell)
        actions[i] = ties[rng.integers(len(ties))]
    return actions
