"""puffer_leduc: Leduc poker, OpenSpiel's `leduc_poker` state for state (ocean/leduc/leduc.h, spec.toml).

Two seats by default (both players are agent rows, only the row to act live), or one row against a
uniformly random legal player (two_player=False).
"""
from pufferlib.ocean.seats import TurnBasedEnv


class Leduc(TurnBasedEnv):
    """puffer_leduc: `env.masks` marks the row to act; `env.action_masks` its legal actions."""
