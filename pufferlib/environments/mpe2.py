"""The multi-particle envs (`mpe2`, PettingZoo's MPE, maintained apart): `mpe2_simple_spread`,
`mpe2_simple_adversary`, `mpe2_simple_tag`, ... through the PettingZoo emulation, one row per agent.

All agents act at once (parallel API) with Discrete(5) moves (mpe2's `continuous_actions=False`
default). Where the roles observe different amounts (adversary and good agents), every observation is
padded with zeros to the longest, with a one-hot of the agent's role appended, because the emulation
lays every agent out as the same row; in the cooperative tasks (one role) rows are mpe2's own.
Episodes end at `max_cycles` (25) steps, as truncations.
"""
from types import SimpleNamespace
from typing import Any

import numpy as np

from pufferlib.environments import absent, install_line
from pufferlib.environments._support import check_name
from pufferlib.pufferenv import MissingDependencyError, PufferEnv

# name -> module under mpe2
TASKS = {
    'mpe2_simple': 'simple_v3',
    'mpe2_simple_spread': 'simple_spread_v3',
    'mpe2_simple_adversary': 'simple_adversary_v3',
    'mpe2_simple_tag': 'simple_tag_v3',
    'mpe2_simple_push': 'simple_push_v3',
    'mpe2_simple_reference': 'simple_reference_v3',
    'mpe2_simple_world_comm': 'simple_world_comm_v3',
}
EXTRA = 'mpe2'


def env_names() -> list[str]:
    return list(TASKS)


def requirements(name: str) -> tuple[str, ...]:
    return ('mpe2', 'pygame', 'scipy')


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs go to the task's parallel_env (N, num_good, num_adversaries, num_obstacles, max_cycles,
    local_ratio, render_mode, ...)."""
    check_name(name, env_names(), 'MPE2')
    lacking = [m for m in requirements(name) if absent(m)]
    if lacking:
        raise MissingDependencyError(f'{name} needs {", ".join(lacking)}: {install_line(EXTRA)}')
    import importlib

    from pufferlib.emulation import PettingZooPufferEnv
    module = importlib.import_module(f'mpe2.{TASKS[name]}')
    return PettingZooPufferEnv(env_creator=lambda: RolePadded(module.parallel_env(**kwargs)), buf=buf, seed=seed)


class RolePadded:
    """A PettingZoo ParallelEnv whose agents all observe one Box: zero-padded to the longest observation,
    plus a one-hot of the agent's role (its name before the `_<index>`) when there is more than one role.
    With one observation space and one role it passes mpe2's rows through unchanged."""

    def __init__(self, env: Any) -> None:
        from gymnasium import spaces
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = getattr(env, 'metadata', {})
        self.render_mode = getattr(env, 'render_mode', None)
        roles = sorted({agent.rsplit('_', 1)[0] for agent in self.possible_agents})
        self.role_of = {agent: roles.index(agent.rsplit('_', 1)[0]) for agent in self.possible_agents}
        sizes = {agent: int(np.prod(env.observation_space(agent).shape)) for agent in self.possible_agents}
        self.roles = len(roles) if len(set(sizes.values())) > 1 or len(roles) > 1 else 0
        self.width = max(sizes.values()) + self.roles
        self.space = spaces.Box(-np.inf, np.inf, (self.width,), np.float32)
        self.action_spaces = {agent: env.action_space(agent) for agent in self.possible_agents}

    @property
    def agents(self) -> list[str]:
        return list(self.env.agents)

    def observation_space(self, agent: str) -> Any:
        return self.space

    def action_space(self, agent: str) -> Any:
        return self.action_spaces[agent]

    def _pad(self, observations: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for agent, ob in observations.items():
            row = np.zeros(self.width, np.float32)
            flat = np.asarray(ob, np.float32).ravel()
            row[:flat.size] = flat
            if self.roles:
                row[self.width - self.roles + self.role_of[agent]] = 1.0
            out[agent] = row
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._pad(observations), infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._pad(observations), rewards, terminations, truncations, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
