"""Small real environments for the tests: Gymnasium and PettingZoo subclasses, no mocks."""
import functools
import os
import signal
import time

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class SampleEnv(gymnasium.Env):
    """Emits seeded samples of any observation space; episodes last `length` steps."""

    def __init__(self, observation_space, action_space=None, length=5):
        self.observation_space = observation_space
        self.action_space = action_space or spaces.Discrete(2)
        self.length = length
        self.emitted = []

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        ob = self.observation_space.sample()
        self.emitted.append(ob)
        return ob, {}

    def step(self, action):
        assert self.action_space.contains(action), action
        self.last_action = action
        self.t += 1
        ob = self.observation_space.sample()
        self.emitted.append(ob)
        return ob, 1.0, self.t >= self.length, False, {'score': float(self.t), 'text': 'dropped'}


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


class FixedDictEnv(gymnasium.Env):
    """A NetHack-shaped Dict observation env whose own step is nearly free: for overhead timing."""

    observation_space = NETHACK_LIKE
    action_space = spaces.Discrete(8)

    def __init__(self):
        self.obs = NETHACK_LIKE.sample()

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self.obs, {}

    def step(self, action):
        return self.obs, 0.0, False, False, {}


class OldGymCounter:
    """The old gym API: reset() -> obs, step -> (obs, reward, done, info), seed(). No gym import needed."""

    class Box:  # duck-typed like gym.spaces.Box: conversion goes by class name
        def __init__(self):
            self.low, self.high, self.shape, self.dtype = np.zeros(1), np.full(1, 100.0), (1,), np.float64

    class Discrete:
        n = 3

    def __init__(self, limit=4):
        self.observation_space, self.action_space = self.Box(), self.Discrete()
        self.limit = limit
        self.seeded = None

    def seed(self, seed):
        self.seeded = seed

    def reset(self):
        self.t = 0
        return np.zeros(1)

    def step(self, action):
        self.t += 1
        truncated = self.t >= self.limit
        return np.full(1, float(self.t)), float(action), truncated, {'TimeLimit.truncated': truncated}


class DyingAgentsEnv(ParallelEnv):
    """Agent 'a' lives 3 steps, 'b' lives the whole 6-step episode, 'c' spawns at step 2."""

    metadata = {'name': 'dying_agents_v0'}

    def __init__(self):
        self.possible_agents = ['a', 'b', 'c']
        self._obs = spaces.Box(-10, 10, (2,), np.float32)
        self._act = spaces.Discrete(3)

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._act

    def _ob(self, agent):
        return np.array([self.possible_agents.index(agent) + 1, self.t], dtype=np.float32)

    def reset(self, seed=None, options=None):
        self.t = 0
        self.agents = ['a', 'b']
        return {a: self._ob(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (actions, self.agents)
        self.t += 1
        rewards = {a: float(actions[a]) for a in self.agents}
        terms = {a: (a == 'a' and self.t == 3) or self.t == 6 for a in self.agents}
        truncs = {a: False for a in self.agents}
        obs = {a: self._ob(a) for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not terms[a]]
        if self.t == 2:  # a newcomer gets an observation and neutral entries everywhere else
            self.agents.append('c')
            obs['c'], rewards['c'], terms['c'], truncs['c'], infos['c'] = self._ob('c'), 0.0, False, False, {}
        return obs, rewards, terms, truncs, infos


class FaultyEnv(gymnasium.Env):
    """CartPole-like env that fails on purpose after `after` steps: raise, segfault, or exit."""

    observation_space = spaces.Box(-1, 1, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, mode='raise', after=3):
        self.mode, self.after, self.t = mode, after, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t >= self.after:
            if self.mode == 'raise':
                raise RuntimeError('boom: the env broke on purpose')
            if self.mode == 'segfault':
                import ctypes
                ctypes.string_at(0)
            if self.mode == 'kill':
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == 'hang':
                time.sleep(3600)
        return np.zeros(3, np.float32), 0.0, False, False, {}


class BusyCartPole(gymnasium.Wrapper):
    """CartPole that busy-waits a random 50-150 us per step: a slow env with variable step time."""

    def __init__(self, low_us=50, high_us=150):
        super().__init__(gymnasium.make('CartPole-v1'))
        self.low, self.high = low_us * 1e-6, high_us * 1e-6
        self.rng = np.random.default_rng(os.getpid())

    def step(self, action):
        end = time.perf_counter() + self.rng.uniform(self.low, self.high)
        while time.perf_counter() < end:
            pass
        return self.env.step(action)


def faulty(mode, after=3, only_env=None):
    return functools.partial(FaultyEnv, mode, after)
