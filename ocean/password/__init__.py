"""puffer_password: guess a fixed bit string; reward 1 only when all of it is right.

Episodes last `length` steps; exactly one of the 2**length action sequences earns 1. The password
is a function of `password_seed` only, so every env in a run shares it.
"""
