"""Stable-Baselines3 on our vector envs: `SB3VecEnv(pufferlib.vector.make(...))` is an SB3 `VecEnv`.

SB3 is the trainer most people already use; this lets them keep it and gain our envs and backends
(Ocean in C, shared-memory Multiprocessing, every binding):

    import pufferlib.vector
    from pufferlib.sb3 import SB3VecEnv
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    env = VecMonitor(SB3VecEnv(pufferlib.vector.make('CartPole-v1', backend='Multiprocessing', num_envs=8)))
    PPO('MlpPolicy', env).learn(100_000)

Each agent row is one SB3 env, so a multi-agent env's rows are SB3 envs side by side. Observations
are the flat rows (a structured space arrives as its flat bytes, as everywhere in pufferlib).

Episode ends: our envs reset in the same step that ends an episode (docs/vector.md), so the final
observation is gone by the time SB3 sees the step. SB3 wants it in `infos[i]['terminal_observation']`
to bootstrap the value of a truncated episode; it gets the next episode's first observation there, the
only one that exists. For time limits that approximation bootstraps from a start state's value; pass
envs without truncation, or accept it, as SB3's own auto-reset wrappers cannot do better either without
the env's help. `TimeLimit.truncated` is set only for a truncation that is not also a termination.

Needs the `sb3` extra: pip install -c constraints.txt -e ".[sb3]".
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from pufferlib.environments._support import require
from pufferlib.pufferenv import APIUsageError

require('stable_baselines3', 'sb3')
from stable_baselines3.common.vec_env.base_vec_env import VecEnv  # noqa: E402  (after the clear error above)


class SB3VecEnv(VecEnv):
    """An SB3 VecEnv over a synchronous pufferlib vector env (batch_size == num_envs)."""

    def __init__(self, vecenv: Any):
        if not getattr(vecenv, 'synchronous', True):
            raise APIUsageError(f'SB3VecEnv needs every row in every step: make the vector env without batch_size '
                                f'(it has batch_size={vecenv.batch_size} of num_envs={vecenv.num_envs})')
        self.vecenv = vecenv  # before VecEnv.__init__, which asks get_attr for the render mode
        self._actions: np.ndarray | None = None
        super().__init__(vecenv.num_agents, vecenv.single_observation_space, vecenv.single_action_space)

    def reset(self) -> np.ndarray:
        # SB3 keeps one seed per env (VecEnv.seed gives seed + index); ours seeds every row from one.
        seed = self._seeds[0]
        obs, _ = self.vecenv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        if self._actions is None:
            raise APIUsageError('SB3VecEnv.step_wait() without step_async(actions)')
        actions = self._actions.reshape(self.num_envs, *(self.action_space.shape or ()))
        self._actions = None
        obs, rewards, terminals, truncations, _ = self.vecenv.step(actions)
        dones = np.logical_or(terminals, truncations)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i]['terminal_observation'] = obs[i].copy()  # the next episode's first: see the module docstring
            infos[i]['TimeLimit.truncated'] = bool(truncations[i] and not terminals[i])
        return obs.copy(), rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.vecenv.close()

    def get_attr(self, attr_name: str, indices: None | int | Iterable[int] = None) -> list[Any]:
        """An attribute of the vector env, the same for every row; the rows' envs live in worker processes."""
        n = len(list(self._get_indices(indices)))
        if hasattr(self.vecenv, attr_name):
            return [getattr(self.vecenv, attr_name)] * n
        if attr_name == 'render_mode':  # SB3 asks for it; vector envs render through `puffer eval --video`
            return [None] * n
        raise AttributeError(f'the pufferlib vector env has no attribute {attr_name!r}')

    def set_attr(self, attr_name: str, value: Any, indices: None | int | Iterable[int] = None) -> None:
        raise APIUsageError('SB3VecEnv cannot set attributes of single envs: they live in worker processes; pass '
                            'env options to pufferlib.vector.make(..., env_kwargs={...}) instead')

    def env_method(self, method_name: str, *method_args: Any, indices: None | int | Iterable[int] = None,
                   **method_kwargs: Any) -> list[Any]:
        raise APIUsageError(f'SB3VecEnv cannot call {method_name}() on single envs: they live in worker processes')

    def env_is_wrapped(self, wrapper_class: type, indices: None | int | Iterable[int] = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))  # no gymnasium wrappers are visible from here

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs
