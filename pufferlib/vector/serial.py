"""Serial: every env in the calling process."""
from collections.abc import Callable, Sequence

from pufferlib.pufferenv import make_buffers
from pufferlib.vector.base import STEP, VecEnv, _check_agents, _run_command, _slice_buffers, create_env, state_work


class Serial(VecEnv):
    """Every env in this process. Workers are single envs; the batch logic is the same as elsewhere."""

    def __init__(self, env_creators: Sequence[Callable], env_args: Sequence = (), env_kwargs: dict | None = None,
                 num_envs: int = 1, num_workers: int | None = None, batch_size: int | None = None,
                 zero_copy: bool = True, seed: int | None = None) -> None:
        super().__init__(env_creators, env_args, env_kwargs, num_envs, num_envs, batch_size, zero_copy, seed)
        self.buffers = make_buffers(self.single_observation_space, self.single_action_space, self.num_agents,
                                    mask_width=self.action_mask_width)
        a = self.agents_per_env
        self.envs = []
        for k in range(self.num_envs):
            buf = _slice_buffers(self.buffers, k * a, (k + 1) * a)
            env = create_env(env_creators[k], self.env_args, self.env_kwargs, buf=buf, seed=self._env_seed(seed, k))
            _check_agents(env, a, f'env {k}', buf)
            self.envs.append(env)
        self._closed = False

    def _dispatch(self, workers: Sequence[int], command: int, seed: int | None = None) -> None:
        envs, ready, ready_infos = self.envs, self._ready, self._ready_infos
        if command == STEP:  # each worker is one env: step it directly (this loop is per env step)
            for w in workers:
                env = envs[w]
                infos = env.step(env.actions)[4]
                if infos:
                    ready_infos[w] = infos
                ready.append(w)
            return
        for w in workers:
            infos = _run_command(envs[w:w + 1], command, -1 if seed is None else seed + w)
            if infos:
                ready_infos[w] = infos
            ready.append(w)

    def _run_state_work(self, command: int, work: dict[int, tuple[list[int], list | None]]
                        ) -> dict[int, tuple[bool, object]]:
        return {w: state_work(self.envs[w:w + 1], w * self.games_per_env, command, games, states)
                for w, (games, states) in work.items()}

    def _collect(self) -> None:
        raise AssertionError('Serial never has work in flight')

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for env in self.envs:
            env.close()
