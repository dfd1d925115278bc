"""Ray: workers as Ray actors (`_RayEnvWorker`), on this machine or anywhere in a cluster."""
import time
from collections.abc import Callable, Sequence

import numpy as np
from gymnasium import spaces

from pufferlib.pufferenv import MASK_BUFFER, EnvError, make_buffers
from pufferlib.vector.base import (DEFAULT_STEP_TIMEOUT_S, NO_DEADLINE, SET_STATES, STEP, VecEnv, _check_agents,
                                   _check_step_timeout, _slice_buffers, create_env, state_work)


class _RayEnvWorker:
    """One Ray actor: a block of envs with its own local buffers."""

    def __init__(self, creators: Sequence[Callable], env_args: Sequence, env_kwargs: dict, first_env: int,
                 agents_per_env: int, obs_space: spaces.Space, act_space: spaces.Space,
                 mask_width: int | None = None) -> None:
        rows = len(creators) * agents_per_env
        self.buf = make_buffers(obs_space, act_space, rows, mask_width=mask_width)
        self.envs = []
        for k, creator in enumerate(creators):
            buf = _slice_buffers(self.buf, k * agents_per_env, (k + 1) * agents_per_env)
            env = create_env(creator, env_args, env_kwargs, buf=buf)
            _check_agents(env, agents_per_env, f'env {first_env + k}', buf)
            self.envs.append(env)

    def ready(self) -> bool:
        return True

    def _result(self, infos: list) -> tuple:
        b = self.buf
        return b.observations, b.rewards, b.terminals, b.truncations, b.masks, getattr(b, MASK_BUFFER, None), infos

    def reset(self, seed: int | None) -> tuple:
        infos = []
        for k, env in enumerate(self.envs):
            infos.extend(env.reset(None if seed is None else seed + k)[1])
        return self._result(infos)

    def step(self, actions: np.ndarray) -> tuple:
        self.buf.actions[...] = actions
        infos = []
        for env in self.envs:
            infos.extend(env.step(env.actions)[4])
        return self._result(infos)

    def states(self, first_game: int, command: int, games: list[int], states: list | None) -> tuple:
        """get_states / set_states on this actor's envs: the reply of state_work and, after a load, this
        actor's rows (the parent copies the restored games' rows from them)."""
        reply = state_work(self.envs, first_game, command, games, states)
        if command != SET_STATES or not reply[0]:
            return reply, None
        return reply, self._result([])

    def close(self) -> None:
        for env in self.envs:
            env.close()


class Ray(VecEnv):
    """Workers as Ray actors, waited on with `ray.wait`; the envs may run on any machine of the cluster.

    Connects by pufferlib.cluster.connect: the running Ray instance, else the cluster at `address`, else
    at RAY_ADDRESS, else a new local one; `address='auto'` joins the cluster this node belongs to.
    """

    def __init__(self, env_creators: Sequence[Callable], env_args: Sequence = (), env_kwargs: dict | None = None,
                 num_envs: int = 1, num_workers: int | None = None, batch_size: int | None = None,
                 zero_copy: bool = True, seed: int | None = None, address: str | None = None,
                 step_timeout: float | None = DEFAULT_STEP_TIMEOUT_S) -> None:
        from pufferlib import cluster
        self.step_timeout = _check_step_timeout(step_timeout)
        super().__init__(env_creators, env_args, env_kwargs, num_envs, num_workers, batch_size, zero_copy, seed)
        self._ray = ray = cluster.connect(address, who='the Ray vector backend')[0]
        self.buffers = make_buffers(self.single_observation_space, self.single_action_space, self.num_agents,
                                    mask_width=self.action_mask_width)
        cpus = ray.cluster_resources().get('CPU', 1)
        actor = ray.remote(num_cpus=min(1.0, cpus / self.num_workers), max_restarts=0)(_RayEnvWorker)
        e = self.envs_per_worker
        self.actors = [actor.remote(env_creators[w * e:(w + 1) * e], self.env_args, self.env_kwargs, w * e,
                                    self.agents_per_env, self.single_observation_space,
                                    self.single_action_space, self.action_mask_width)
                       for w in range(self.num_workers)]
        self._pending = {}
        self._closed = False
        # Wait for every actor to build its envs: a creation error surfaces here, and no batch is
        # served by the early actors alone while the others are still starting.
        for w, actor in enumerate(self.actors):
            self._pending[actor.ready.remote()] = w
            self._inflight[w] = NO_DEADLINE  # building envs has no time limit
        self._wait_all_idle()
        self._ready.clear()

    def _dispatch(self, workers: Sequence[int], command: int, seed: int | None = None) -> None:
        r = self.rows_per_worker
        deadline = time.monotonic() + self.step_timeout if self.step_timeout else NO_DEADLINE
        for w in workers:
            if command == STEP:
                ref = self.actors[w].step.remote(self.buffers.actions[w * r:(w + 1) * r].copy())
            else:
                ref = self.actors[w].reset.remote(None if seed is None else seed + w * self.envs_per_worker)
            self._pending[ref] = w
            self._inflight[w] = deadline

    def _run_state_work(self, command: int, work: dict[int, tuple[list[int], list | None]]
                        ) -> dict[int, tuple[bool, object]]:
        ray, per_worker = self._ray, self.envs_per_worker * self.games_per_env
        refs = {w: self.actors[w].states.remote(w * per_worker, command, games, states)
                for w, (games, states) in work.items()}
        replies: dict[int, tuple[bool, object]] = {}
        try:
            results = ray.get(list(refs.values()), timeout=self.step_timeout)
        except (ray.exceptions.RayTaskError, ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            self.close()
            raise EnvError('a Ray worker failed in get_states, set_states, game_progress or game_cells; the vector '
                           f'env is closed. Ray reported:\n{exc}') from None
        r, k = self.rows_per_worker, self.agents_per_game
        b = self.buffers
        for (w, (games, _)), (reply, rows) in zip(work.items(), results):
            replies[w] = reply
            if rows is None:
                continue
            obs, rewards, terminals, truncations, masks, legal, _ = rows
            for g in games:  # only the restored games' rows: the others are as the last recv left them
                local = slice(g * k - w * r, (g + 1) * k - w * r)
                mine = slice(g * k, (g + 1) * k)
                b.observations[mine] = obs[local]
                b.rewards[mine] = rewards[local]
                b.terminals[mine] = terminals[local]
                b.truncations[mine] = truncations[local]
                b.masks[mine] = masks[local]
                if legal is not None:
                    b.action_masks[mine] = legal[local]
        return replies

    def _collect(self) -> None:
        ray = self._ray
        first_deadline = min(self._inflight.values())
        timeout = None if first_deadline == NO_DEADLINE else max(0.0, first_deadline - time.monotonic())
        ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        if not ready:
            w = min(self._inflight, key=self._inflight.__getitem__)
            envs = f'{w * self.envs_per_worker}-{(w + 1) * self.envs_per_worker - 1}'
            self.close()
            raise EnvError(f'Ray worker {w} (envs {envs}) spent more than step_timeout={self.step_timeout:g} s in '
                           'one step or reset, so it was stopped and the vector env is closed. An env that blocks '
                           'hangs training: run it with backend="Serial" to see where it waits, or raise '
                           'step_timeout (vec.step_timeout in a config; 0 turns the limit off).')
        r = self.rows_per_worker
        for ref in ready:
            w = self._pending.pop(ref)
            try:
                result = ray.get(ref)
            except (ray.exceptions.RayTaskError, ray.exceptions.RayActorError) as exc:
                self.close()
                raise EnvError(f'Ray worker {w} (envs {w * self.envs_per_worker}-'
                               f'{(w + 1) * self.envs_per_worker - 1}) failed; the vector env is closed. '
                               f'Ray reported:\n{exc}') from None
            self._inflight.pop(w, None)
            self._ready.append(w)
            if result is True:  # the start-up handshake
                continue
            obs, rewards, terminals, truncations, masks, legal, infos = result
            rows = slice(w * r, (w + 1) * r)
            b = self.buffers
            b.observations[rows] = obs
            b.rewards[rows] = rewards
            b.terminals[rows] = terminals
            b.truncations[rows] = truncations
            b.masks[rows] = masks
            if legal is not None:
                b.action_masks[rows] = legal
            if infos:
                self._ready_infos[w] = infos

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for actor in self.actors:
            try:
                self._ray.kill(actor)
            except Exception:
                pass
