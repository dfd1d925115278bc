"""Small real environments for the tests: Gymnasium and PettingZoo subclasses, no mocks."""
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
        self.action_space = spaces.Discrete(2) if action_space is None else action_space  # Dict({}) is falsy
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
                import faulthandler
                faulthandler.disable()  # the crash is the point; keep its dump out of the test log
                ctypes.string_at(0)
            if self.mode == 'kill':
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == 'hang':
                time.sleep(3600)
            if self.mode == 'slow':
                time.sleep(0.2)
        return np.zeros(3, np.float32), 0.0, False, False, {}


class NonFiniteEnv(gymnasium.Env):
    """Finite everywhere, except from step `at` on: a NaN reward ('reward') or an inf observation
    value ('obs'). `structured`: a Dict observation of a float leaf beside uint8 ones, laid out as
    bytes by emulation; the ints are 0xFF bytes, which would read as NaN if taken for floats."""

    action_space = spaces.Discrete(2)

    def __init__(self, what=None, at=3, structured=False):
        self.what, self.at, self.structured, self.t = what, at, structured, 0
        pos = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.observation_space = spaces.Dict({'count': spaces.Box(0, 255, (4,), np.uint8), 'pos': pos}) \
            if structured else pos

    def _ob(self):
        bad = self.what == 'obs' and self.t >= self.at
        pos = np.array([0.5, np.inf if bad else 1.0, self.t], np.float32)
        return {'count': np.full(4, 255, np.uint8), 'pos': pos} if self.structured else pos

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._ob(), {}

    def step(self, action):
        self.t += 1
        reward = float('nan') if self.what == 'reward' and self.t >= self.at else 1.0
        return self._ob(), reward, False, False, {}


class NonFiniteRowEnv(gymnasium.Env):
    """Returns `value` (NaN by default) as its reward or in its observation from step `after` on, but
    only the copy whose first reset seed is `bad_seed` (vector envs seed env k with `seed + k`)."""

    observation_space = spaces.Box(-1, 1, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, what='reward', after=20, bad_seed=2, value=float('nan')):
        self.what, self.after, self.bad_seed, self.value = what, after, bad_seed, value
        self.first_seed, self.t = None, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if self.first_seed is None:
            self.first_seed = seed
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        broken = self.first_seed == self.bad_seed and self.t >= self.after
        obs = np.zeros(3, np.float32)
        reward = 0.0
        if broken and self.what == 'reward':
            reward = self.value
        if broken and self.what == 'observation':
            obs[1] = self.value
        return obs, reward, self.t % 10 == 0, False, {}


class MaskedParallelEnv(ParallelEnv):
    """Two agents, Discrete(4) actions, a fresh seeded set of legal actions for each agent on every step,
    published as observation['action_mask'] (`where='obs'`) or info['action_mask'] (`where='info'`).
    Raises on an illegal action, like an env that trusts its masks. `vanish_at`: from that step on the
    mask is no longer published. `mask_space`/`mask_dtype` make a badly declared mask."""

    metadata = {'name': 'masked_parallel_v0'}

    def __init__(self, where='obs', length=6, vanish_at=None, mask_space=None):
        self.possible_agents = ['a', 'b']
        self.where, self.length, self.vanish_at = where, length, vanish_at
        self._act = spaces.Discrete(4)
        entries = {'observation': spaces.Box(0, 1, (4,), np.float32)}
        if where == 'obs':
            entries['action_mask'] = mask_space or spaces.Box(0, 1, (4,), np.int8)
        self._obs = spaces.Dict(entries)
        self.taken = []

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._act

    def _publish(self):
        self.legal = {}
        obs, infos = {}, {}
        for agent in self.agents:
            mask = (self.rng.random(4) < 0.5).astype(np.int8)
            mask[self.rng.integers(4)] = 1
            self.legal[agent] = mask
            vanished = self.vanish_at is not None and self.t >= self.vanish_at
            ob = {'observation': mask.astype(np.float32)}
            info = {}
            if not vanished:
                if self.where == 'obs':
                    ob['action_mask'] = mask
                else:
                    info['action_mask'] = mask
            obs[agent], infos[agent] = ob, info
        return obs, infos

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        return self._publish()

    def step(self, actions):
        for agent, action in actions.items():
            if not self.legal[agent][action]:
                raise AssertionError(f'illegal action {action} for {agent}')
            self.taken.append((agent, action))
        self.t += 1
        done = self.t >= self.length
        rewards = {agent: 1.0 for agent in self.agents}
        terminations = {agent: done for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        if done:
            self.agents = []
            return {}, rewards, terminations, truncations, {}
        obs, infos = self._publish()
        return obs, rewards, terminations, truncations, infos


# The issue's example: a uint8 Box whose env later returns floats that numpy would wrap into [44, 255, 0, 255].
FRAME = spaces.Box(0, 255, (4,), np.uint8)
ISSUE_VALUE = np.array([300.7, -1, .5, 255.9])


class LaterObservation(gymnasium.Env):
    """A valid first observation (reset and `good_steps` steps), then `bad` on every step."""

    action_space = spaces.Discrete(2)

    def __init__(self, space=FRAME, bad=ISSUE_VALUE, good_steps=1):
        self.observation_space, self.bad, self.good_steps, self.t = space, bad, good_steps, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(0)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        ob = self.bad if self.t > self.good_steps else self.observation_space.sample()
        return ob, 0.0, False, False, {}


class Countdown(gymnasium.Env):
    """Reward 1 a step; the episode ends after `length` steps, as a terminal end or (terminal=False) as a
    time-limit truncation. Observation: the steps left."""

    observation_space = gymnasium.spaces.Box(0, 100, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, length=5, terminal=False):
        self.length, self.terminal = length, terminal

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.full(1, self.length, np.float32), {}

    def step(self, action):
        self.t += 1
        end = self.t >= self.length
        return (np.full(1, self.length - self.t, np.float32), 1.0, end and self.terminal, end and not self.terminal,
                {})
