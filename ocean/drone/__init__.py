"""puffer_drone: quadrotors with one Box action element per rotor.

Task 1 flies through random targets, task 0 holds a point. The scripted `pilot` is a cascaded
controller on the observation alone: a PD law on position gives the acceleration wanted, the body is
tilted towards it, and the rotor thrusts are mixed from the collective thrust and the three torques.
"""
import numpy as np

from ..env import OceanEnv

# The C env's constants (drone.h, spec.toml), needed to undo the observation's scaling and to mix.
ARENA, MAX_SPEED, MAX_SPIN = 10.0, 20.0, 30.0
GRAVITY, MASS, ARM, YAW = 9.81, 1.0, 0.12, 0.02
HOVER = MASS * GRAVITY / 4


def pilot(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """Fly each drone towards its target and hold it there."""
    to_target = obs[:, 0:3] * ARENA
    w, x, y, z = (obs[:, 6 + k].astype(np.float64) for k in range(4))
    vel = obs[:, 10:13] * MAX_SPEED
    spin = obs[:, 13:16] * MAX_SPIN
    # acceleration wanted: a PD law on position, capped sideways so the body never tilts far
    want = -1.2 * to_target - 1.6 * vel
    side = np.linalg.norm(want[:, :2], axis=1, keepdims=True)
    want[:, :2] *= np.minimum(1.0, 6.0 / np.maximum(side, 1e-6))
    want[:, 2] = np.clip(want[:, 2], -6.0, 8.0) + GRAVITY
    up = np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], 1)
    collective = MASS * np.einsum('ij,ij->i', want, up)
    # tilt error: the axis turning the body's up onto the wanted direction, in the body frame
    goal = want / np.linalg.norm(want, axis=1, keepdims=True)
    axis = np.cross(up, goal)
    rot = _rotation(w, x, y, z)
    axis_body = np.einsum('nji,nj->ni', rot, axis)  # R^T axis
    torque = 1.2 * axis_body - 0.12 * spin
    torque[:, 2] = -0.05 * spin[:, 2]
    t = collective[:, None] / 4 + np.stack([-torque[:, 1] / (2 * ARM) + torque[:, 2] / (4 * YAW),
                                            torque[:, 0] / (2 * ARM) - torque[:, 2] / (4 * YAW),
                                            torque[:, 1] / (2 * ARM) + torque[:, 2] / (4 * YAW),
                                            -torque[:, 0] / (2 * ARM) - torque[:, 2] / (4 * YAW)], 1)
    return np.clip(t / HOVER - 1, -1, 1).astype(np.float32)


def _rotation(w: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Body-to-world rotation matrices [n, 3, 3] of unit quaternions."""
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], 1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], 1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1)], 1)


SCRIPTED = {'pilot': pilot}
