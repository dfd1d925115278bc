"""puffer_leduc: Leduc poker, OpenSpiel's `leduc_poker` state for state (ocean/leduc/leduc.h, spec.toml).

Two seats by default (both players are agent rows, only the row to act live: `env.masks`, written by
the C env), or one row against a uniformly random legal player (two_player=False).
"""
