"""Plain functions over Ocean envs: throughput (`bench`), a look in the terminal (`play`), random
actions, and small helpers the scripted policies share. The CLI's `puffer bench` and `puffer play`
call these; nothing here knows about the CLI.

bench: one process, one core, random actions drawn ahead of time (a pool of action rows cycled
through), so the figure is the env's own speed: agent steps per second over the whole vectorized
env. play: a random (or scripted) agent, drawn as text frame by frame.
"""
import sys
import time
from typing import Any, TextIO

import numpy as np
from gymnasium import spaces

from pufferlib.pufferenv import APIUsageError, MixedSpace

# Rows per vectorized env when benchmarking: enough that the one Python call per step is noise.
BENCH_ROWS = 4096
ACTION_POOL = 64


def random_actions(space: spaces.Space, num_agents: int, count: int, seed: int = 0) -> np.ndarray:
    """`count` rows of random actions for `num_agents` agents, of the action buffer's dtype (int32, or
    float32 uniform in a Box, or a mixed row of float32)."""
    rng = np.random.default_rng(seed)
    if isinstance(space, spaces.Discrete):
        return rng.integers(0, space.n, size=(count, num_agents), dtype=np.int32)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, size=(count, num_agents, *space.nvec.shape), dtype=np.int32)
    if isinstance(space, spaces.Box):
        return rng.uniform(space.low, space.high, size=(count, num_agents, *space.shape)).astype(np.float32)
    if isinstance(space, MixedSpace):  # the discrete choices as floats, then the Box's elements
        picks = rng.integers(0, space.discrete.nvec, size=(count, num_agents, space.split))
        box = rng.uniform(space.box.low, space.box.high, size=(count, num_agents, *space.box.shape))
        return np.concatenate([picks, box], axis=-1).astype(np.float32)
    raise APIUsageError(f'random_actions: unsupported action space {space}')


def bench(name: str, seconds: float = 2.0, num_envs: int | None = None, seed: int = 0, **config: Any) -> float:
    """Agent steps per second of Ocean env `name` with random actions, on this core."""
    from . import env_class
    cls = env_class(name)
    if num_envs is None:
        probe = cls(num_envs=1, seed=seed, **config)
        num_envs = max(1, BENCH_ROWS // probe.num_agents)
        probe.close()
    env = cls(num_envs=num_envs, seed=seed, **config)
    pool = random_actions(env.single_action_space, env.num_agents, ACTION_POOL, seed)
    env.reset(seed=seed)
    for i in range(ACTION_POOL):  # warm caches and branch predictors before timing
        env.step(pool[i])
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for i in range(ACTION_POOL):
            env.step(pool[i])
        steps += ACTION_POOL
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    rows = env.num_agents
    env.close()
    return steps * rows / elapsed


def play(name: str, steps: int = 200, fps: float = 15.0, seed: int = 0, scripted: bool | str = False,
         out: TextIO | None = None, clear: bool = True, **config: Any) -> dict[str, float] | None:
    """Show env instance 0 of `name` in the terminal for `steps` steps; returns the last episode log.

    `scripted`: False for random actions, True for the env's default scripted policy, or a policy's name.
    """
    from . import env_class, env_names, scripted_policies
    out = out or sys.stdout
    cls = env_class(name)
    policy, label = None, 'random'
    if scripted:
        policies = scripted_policies(name)
        if not policies:
            with_policies = [n for n in env_names() if scripted_policies(n)]
            raise APIUsageError(f'no scripted agent for {cls.spec.env_name}; scripted agents exist for '
                                f'{", ".join(with_policies)}')
        label = next(iter(policies)) if scripted is True else scripted
        if label not in policies:
            raise APIUsageError(f'{cls.spec.env_name} has no scripted agent {label!r}; it has {", ".join(policies)}')
        policy = policies[label]
    env = cls(num_envs=1, seed=seed, **config)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    total, last_log = 0.0, None
    try:
        for t in range(steps):
            if policy is not None:
                actions = policy(env, obs)
            else:
                actions = random_actions(env.single_action_space, env.num_agents, 1, int(rng.integers(1 << 31)))[0]
            obs, rewards, terminals, truncations, infos = env.step(actions)
            total += float(rewards.sum())
            log = env.log()
            if log is not None:
                last_log = log
            text = env.render_text()
            header = (f'{cls.spec.env_name}  step {t + 1}/{steps}  reward {float(rewards.sum()):+.2f}  '
                      f'total {total:+.2f}  agent: {label}\n')
            if clear:
                out.write('\x1b[H\x1b[2J')
            out.write(header + text + '\n')
            out.flush()
            if fps > 0:
                time.sleep(1.0 / fps)
    finally:
        env.close()
    if last_log is not None:
        out.write('last episodes: ' + ', '.join(f'{k} {v:.3g}' for k, v in last_log.items()) + '\n')
    return last_log


# ---- helpers for scripted policies ----

def pixel_centre(normalised: np.ndarray, extent: float, size: float) -> np.ndarray:
    """Pixel centre of an object of `size` whose position is given normalised to [0, 1]."""
    return normalised * (extent - size) + size / 2


def follow(paddle: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Move a paddle toward `target` (action 1 lowers the coordinate, 2 raises it), 2 px dead zone."""
    return np.where(target < paddle - 2, 1, np.where(target > paddle + 2, 2, 0)).astype(np.int32)
