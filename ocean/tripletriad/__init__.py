"""puffer_tripletriad: Triple Triad (basic rules, open hands) with legal-move masks.

Everything about the env is declared in spec.toml and tripletriad.h (the rules, the seats); this
module holds the env class (its turn flags, ocean/seats.py) and the scripted policy in Python, for
`puffer play --scripted` and the tests.
"""
import numpy as np

from ..env import OceanEnv
from ..seats import TurnBasedEnv

CELLS, HAND = 9, 5  # spec.toml: TT_CELLS, TT_HAND
TO_MOVE = CELLS * 6 + 2 * HAND * 5  # index of the to_move field

# Side d of a cell faces side (d + 2) % 4 of its neighbour; neighbours of each cell on N, E, S, W.
NEIGHBORS = [[(r - 1) * 3 + c if r > 0 else -1, r * 3 + c + 1 if c < 2 else -1,
              (r + 1) * 3 + c if r < 2 else -1, r * 3 + c - 1 if c > 0 else -1]
             for r in range(3) for c in range(3)]


class Tripletriad(TurnBasedEnv):
    """puffer_tripletriad: in two-seat mode `env.masks` marks the row to move (the to_move field; player
    0's last placement may have action 0 as its only legal action, so the action masks cannot say)."""

    def turn_column(self) -> int:
        return TO_MOVE


def scripted_policy(env: OceanEnv, obs: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Greedy on immediate flips, from observations alone (the rule the C opponent plays): the
    (card, cell) that turns the most opposing cards now, ties broken uniformly at random."""
    rng = rng if rng is not None else np.random.default_rng()
    board = obs[:, :CELLS * 6].reshape(-1, CELLS, 6)
    hand = obs[:, CELLS * 6:CELLS * 6 + HAND * 5].reshape(-1, HAND, 5)
    actions = np.zeros(len(obs), dtype=np.int32)
    for i in range(len(obs)):
        if obs[i, TO_MOVE] < 0.5:  # not this row's turn (two-player mode): ignored
            continue
        empty = (board[i, :, 0] + board[i, :, 1]) < 0.5
        best = -1
        ties: list[np.integer] = []
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


# name -> policy(env, observations) -> actions; the first is the default of `puffer play --scripted`
SCRIPTED = {'flip_greedy': scripted_policy}
