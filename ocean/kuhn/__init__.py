"""puffer_kuhn: Kuhn poker, OpenSpiel's `kuhn_poker` state for state (ocean/kuhn/kuhn.h, spec.toml).

Two seats by default (both players are agent rows, only the row to act live), or one row against a
uniformly random player (two_player=False).
"""
from pufferlib.ocean.seats import TurnBasedEnv


class Kuhn(TurnBasedEnv):
    """puffer_kuhn: `env.masks` marks the row to act; `env.action_masks` its legal actions."""
