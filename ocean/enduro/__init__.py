"""puffer_enduro: an Atari Enduro-like racer: pass cars through day, snow, night and fog."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv

LANES = 3


class Enduro(OceanEnv):
    """Observation (float32 [24]): lateral position, speed, road curve, crash cooldown, sight and
    grip of the current phase, day progress, share of the day's quota still to pass, off-road flag;
    then per lane (left to right) the nearest and second-nearest car ahead within sight (distance
    and closing speed) and the nearest car behind.
    Actions (Atari's set): nothing, accelerate, right, left, brake, brake+right, brake+left,
    accelerate+right, accelerate+left. Reward: +1 per car passed, -1 per car that passes back.
    A day is day_length steps; missing cars_per_day ends the race (terminal); max_days truncates.
    Log: score = cars passed (net) per episode, perf = days completed / max_days.
    autopilot=1 makes the env ignore actions and drive its scripted driver (the baseline)."""

    name = 'enduro'
    defaults = dict(day_length=2000, cars_per_day=60, max_days=3, max_cars=10, crash_steps=20, traffic=1.0,
                    weather=1, autopilot=0)

    def make_spaces(self, cfg):
        low = np.zeros(9 + 5 * LANES, dtype=np.float32)
        high = np.ones(9 + 5 * LANES, dtype=np.float32)
        low[0] = low[2] = -1
        low[9 + 1::5] = low[9 + 4::5] = -1
        return spaces.Box(low=low, high=high, dtype=np.float32), spaces.Discrete(9), 1
