"""puffer_kuhn: Kuhn poker, OpenSpiel's `kuhn_poker` state for state (ocean/kuhn/kuhn.h, spec.toml).

Two seats by default (both players are agent rows, only the row to act live: `env.masks`, written by
the C env), or one row against a uniformly random player (two_player=False).
"""
