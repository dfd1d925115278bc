"""puffer_rocket_lander: land a rocket on a pad with a throttle and side thrusters.

Box actions by default (throttle, turn); `discrete=True` gives the four buttons of the classic game.
The scripted `autopilot` tilts towards the pad, turns with a PD law on the tilt, and throttles to
descend at a speed that shrinks with height; in discrete mode it presses the most needed button.
"""
import numpy as np

from ..env import OceanEnv

# The C env's constants (rocket_lander.h, spec.toml), to undo the observation's scaling.
HALF_WIDTH, CEILING, MAX_SPEED, MAX_SPIN = 40.0, 80.0, 20.0, 4.0
GRAVITY, MAIN = 9.81, 2 * 9.81


def autopilot(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """Steer over the pad and come down slowly and upright."""
    x, height = obs[:, 0] * HALF_WIDTH, obs[:, 1] * CEILING
    vx, vy = obs[:, 2] * MAX_SPEED, obs[:, 3] * MAX_SPEED
    tilt, spin = obs[:, 4] * np.pi, obs[:, 5] * MAX_SPIN
    across = np.clip(-0.25 * x - 1.0 * vx, -3.0, 3.0)
    want_tilt = np.clip(across / GRAVITY, -0.3, 0.3) * (height > 2.0)  # stand up for the touchdown
    turn = np.clip(4.0 * (want_tilt - tilt) - 2.0 * spin, -1.0, 1.0)
    want_down = np.clip(0.3 * height, 1.0, 8.0)
    throttle = np.clip((GRAVITY + 2.0 * (-want_down - vy)) / (MAIN * np.maximum(np.cos(tilt), 0.5)), 0.0, 1.0)
    if env.actions.dtype.kind == 'f':
        return np.stack([2 * throttle - 1, turn], 1).astype(np.float32)
    buttons = np.where(throttle > 0.5, 1, 0)
    buttons = np.where(np.abs(turn) > 0.6, np.where(turn < 0, 2, 3), buttons)
    return buttons.astype(np.int32)


SCRIPTED = {'autopilot': autopilot}
