"""Synthetic Gymnasium envs that stress one property each, for benchmarks and tests."""
import os
import time
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces


class BusyCartPole(gymnasium.Wrapper):
    """CartPole that busy-waits a random `low_us`-`high_us` microseconds per step.

    Stands in for a slow simulator with variable step time: the case where asynchronous pools pay.
    `clock='wall'` waits on the wall clock, like a simulator that also waits on something;
    `clock='cpu'` burns that much CPU time of this thread, the same whatever else takes the core, so
    CPU-time measurements on a shared machine stay comparable.
    """

    def __init__(self, low_us: float = 50, high_us: float = 150, clock: str = 'wall') -> None:
        super().__init__(gymnasium.make('CartPole-v1'))
        if clock not in ('wall', 'cpu'):
            raise ValueError(f"BusyCartPole clock must be 'wall' or 'cpu', got {clock!r}")
        self.low, self.high = low_us * 1e-6, high_us * 1e-6
        self.clock = time.perf_counter if clock == 'wall' else time.thread_time
        self.rng = np.random.default_rng(os.getpid())

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        clock = self.clock
        end = clock() + self.rng.uniform(self.low, self.high)
        while clock() < end:
            pass
        return self.env.step(action)


NETHACK_LIKE = spaces.Dict({
    'glyphs': spaces.Box(0, 5976, (21, 79), np.int16),
    'chars': spaces.Box(0, 255, (21, 79), np.uint8),
    'colors': spaces.Box(0, 15, (21, 79), np.uint8),
    'specials': spaces.Box(0, 255, (21, 79), np.uint8),
    'blstats': spaces.Box(-2**31, 2**31 - 1, (27,), np.int64),
    'message': spaces.Box(0, 255, (256,), np.uint8),
    'inv_glyphs': spaces.Box(0, 5976, (55,), np.int16),
    'inv_letters': spaces.Box(0, 127, (55,), np.uint8),
    'inv_oclasses': spaces.Box(0, 18, (55,), np.uint8),
    'inv_strs': spaces.Box(0, 255, (55, 80), np.uint8),
    'tty_chars': spaces.Box(0, 255, (24, 80), np.uint8),
    'tty_colors': spaces.Box(0, 31, (24, 80), np.int8),
    'tty_cursor': spaces.Box(0, 255, (2,), np.uint8),
})


class NetHackLikeDict(gymnasium.Env):
    """NetHack's observation dict (13 keys, mixed dtypes) with a step that costs almost nothing,
    so timing it through emulation measures the emulation itself."""

    observation_space = NETHACK_LIKE
    action_space = spaces.Discrete(8)

    def __init__(self) -> None:
        self.obs = NETHACK_LIKE.sample()

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        return self.obs, {}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        return self.obs, 0.0, False, False, {}
