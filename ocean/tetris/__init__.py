"""puffer_tetris: Tetris with a 7-bag, a preview of upcoming pieces, hold and gravity."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

PIECES = 7


class Tetris(OceanEnv):
    """Observation (uint8): the n_rows x n_cols board, row-major from the top (0 empty, 1 block,
    2 falling piece, 3 where it would land), then one-hots of the current piece and the `preview`
    next ones, the held piece, a can-hold flag and a gravity-pulls-next-step flag.
    Actions (placement=0, the arcade game): nothing, left, right, rotate, soft drop, hard drop, hold.
    Actions (placement=1, one piece per step): r * n_cols + c drops the piece turned r times with its
    leftmost cell in column c; 4 * n_cols is hold. The board then shows no falling piece.
    Reward: +1 per cleared line, -hole_penalty per hole a placement makes (+ per hole it reopens),
    -1 for topping out. Log: score = lines cleared in the episode, perf = fraction of max_ticks
    survived. autopilot=1 makes the env ignore actions and play the scripted placer (the baseline)."""

    name = 'tetris'
    defaults = dict(n_rows=20, n_cols=10, preview=2, placement=0, ticks_per_fall=6, max_ticks=10000, garbage_interval=0,
                    hole_penalty=0.1, autopilot=0)

    def make_spaces(self, cfg):
        board = cfg['n_rows'] * cfg['n_cols']
        side = PIECES * (cfg['preview'] + 2) + 2
        high = np.ones(board + side, dtype=np.uint8)
        high[:board] = 3
        actions = 4 * cfg['n_cols'] + 1 if cfg['placement'] else 7
        return spaces.Box(low=0, high=high, dtype=np.uint8), spaces.Discrete(actions), 1
