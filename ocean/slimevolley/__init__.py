"""puffer_slimevolley: Slime Volleyball against a scripted slime, or two seats for self-play.

Everything about the env is declared in spec.toml and slimevolley.h (the physics, the sides, the
scripted slime that plays the other side inside the step); this module holds the same scripted slime
in Python, from observations alone, for `puffer play --scripted` and the tests. Unlike the built-in
slime it runs at full speed and keeps one aim, so it wins most points against it.
"""
import numpy as np
from gymnasium import spaces

from ..env import OceanEnv

SIDE, SPEED = 24.0, 22.5  # spec.toml: SV_SIDE, SV_SPEED (observation scales)
GRAVITY, SLIME_R, NET_HALF = 29.4, 1.5, 0.25  # slimevolley.h
NONE, IN, OUT, JUMP, JUMP_IN, JUMP_OUT = range(6)


def follower(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """Stand just behind where the ball will come down on the own side (so it bounces toward the net),
    jump when it falls close above, wait in the middle of the own half otherwise (slimevolley.h's rule,
    at full speed and with a steady aim)."""
    me, my_y = obs[:, 0] * SIDE, obs[:, 1] * SIDE
    bx, by, bvx, bvy = obs[:, 4] * SIDE, obs[:, 5] * SIDE, obs[:, 6] * SPEED, obs[:, 7] * SPEED
    fall = np.maximum(by - SLIME_R, 0.0)
    t = (bvy + np.sqrt(bvy * bvy + 2 * GRAVITY * fall)) / GRAVITY
    land = bx + bvx * t
    target = np.where((land > 0) | (bx > 0), land + 0.35 * SLIME_R, 0.5 * SIDE)
    target = np.clip(target, NET_HALF + SLIME_R, SIDE - SLIME_R)
    gap = target - me
    run = np.where(gap > 0.2, 1, np.where(gap < -0.2, -1, 0))
    dx, dy = bx - me, by - my_y
    jump = (bx > 0) & (bvy < 0) & (dx * dx + dy * dy < 16.0) & (dy > 0.5)
    if isinstance(env.single_action_space, spaces.Box):  # continuous=True: (run, jump above 0)
        return np.stack([run, np.where(jump, 1, -1)], axis=1).astype(np.float32)
    table = np.array([[IN, NONE, OUT], [JUMP_IN, JUMP, JUMP_OUT]], dtype=np.int32)
    return table[jump.astype(int), run + 1]


# name -> policy(env, observations) -> actions; the first is the default of `puffer play --scripted`
SCRIPTED = {'follower': follower}
