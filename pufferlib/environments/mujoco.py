"""MuJoCo continuous control through Gymnasium's v5 envs: `mujoco_halfcheetah`, `mujoco_hopper`,
`mujoco_walker2d`, `mujoco_ant`, `mujoco_humanoid`, `mujoco_inverted_pendulum`, `mujoco_reacher`, and
`mujoco` with `task=<any Gymnasium MuJoCo v5 id>` (Swimmer-v5, Pusher-v5, ...; the v4 ids also run).

Actions are a Box, sampled by the policy's Gaussian head and clipped to the Box inside the env (the
sample itself is what PPO scores). MuJoCo observations and rewards span very different scales from
task to task, so both are normalised, each where its statistics stay right without extra plumbing:

- Observations: by running mean and variance kept in the policy (`Policy` below, buffers in its
  state dict). Checkpoints carry them, so `puffer eval` and a resumed run see the very statistics
  training used; and one copy sees every worker's rows, so nothing has to be merged across the
  processes of a Multiprocessing vector env.
- Rewards: divided by the running standard deviation of the discounted return. The family config has
  the trainer do it (`train.normalize_rewards`, pufferlib/reward_scale.py): one statistic for every
  env, saved in checkpoints. The env can also do it itself (`normalize_reward`, on when this module
  is used outside the family config), with one statistic per env, re-estimated by a resumed run.
  Either way the episode's raw return is what `episode_return` reports (and `puffer eval` prints),
  because the emulation sums the rewards before they are scaled.

Rendering: `render()` returns an rgb_array frame. Headless machines (no DISPLAY) render offscreen
through EGL unless MUJOCO_GL says otherwise (`MUJOCO_GL=osmesa` for software rendering).
"""
import math
import os
from types import SimpleNamespace
from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt

from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments import absent, install_line
from pufferlib.environments._support import check_name, lazy_policy
from pufferlib.pufferenv import (APIUsageError, EnvError, MissingDependencyError, PufferEnv, StateError, StateIdentity,
                                 pack_parts, rng_from_state, rng_state, state_hash, unpack_parts)
from pufferlib.reward_scale import RewardScaler

TASKS = {
    'mujoco_halfcheetah': 'HalfCheetah-v5',
    'mujoco_hopper': 'Hopper-v5',
    'mujoco_walker2d': 'Walker2d-v5',
    'mujoco_ant': 'Ant-v5',
    'mujoco_humanoid': 'Humanoid-v5',
    'mujoco_inverted_pendulum': 'InvertedPendulum-v5',
    'mujoco_reacher': 'Reacher-v5',
}
EXTRA = 'mujoco'


def env_names() -> list[str]:
    return [*TASKS, 'mujoco']


def mujoco_ids() -> list[str]:
    """Every Gymnasium id whose env is a MuJoCo one (any version: v2 and v3 need the old mujoco-py)."""
    import gymnasium
    return [env_id for env_id, spec in gymnasium.registry.items()
            if isinstance(spec.entry_point, str) and spec.entry_point.startswith('gymnasium.envs.mujoco')]


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, task: str | None = None,
         normalize_reward: bool = True, reward_gamma: float = 0.99, reward_clip: float = 10.0,
         render_mode: str | None = 'rgb_array', max_episode_steps: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs go to gymnasium.make (e.g. ctrl_cost_weight, frame_skip, width, height).

    reward_gamma should be the run's train.gamma; reward_clip bounds the scaled reward (0: no clip).
    """
    check_name(name, env_names(), 'MuJoCo')
    if name == 'mujoco':
        if task is None:
            raise APIUsageError("make('mujoco') needs task=<Gymnasium MuJoCo id>, e.g. task='Swimmer-v5' "
                                "(--env.task Swimmer-v5)")
    elif task is not None:
        raise APIUsageError(f'{name} is {TASKS[name]}; task= is only for the bare name `mujoco`')
    else:
        task = TASKS[name]
    if not (0 < float(reward_gamma) <= 1) or float(reward_clip) < 0:
        raise APIUsageError(f'reward_gamma must lie in (0, 1] and reward_clip be >= 0, got {reward_gamma}, '
                            f'{reward_clip}')
    if 'DISPLAY' not in os.environ:
        os.environ.setdefault('MUJOCO_GL', 'egl')  # read when mujoco is imported: no window, no display
    if absent('mujoco'):
        raise MissingDependencyError(f'{name} needs mujoco: {install_line(EXTRA)}')
    # v4 runs on the same mujoco bindings as v5 (v2 and v3 need the retired mujoco-py); it stays allowed
    # for comparisons with tools pinned to a Gymnasium before v5 (scripts/lab/bench_mujoco.py: CleanRL's).
    if task not in mujoco_ids() or not task.endswith(('-v4', '-v5')):
        v5 = sorted(i for i in mujoco_ids() if i.endswith('-v5'))
        raise APIUsageError(f'{task!r} is not a Gymnasium MuJoCo v5 (or v4) id; pick one of {", ".join(v5)}')
    if max_episode_steps is not None:
        kwargs['max_episode_steps'] = int(max_episode_steps)
    creator = lambda: ClipToBox(gymnasium.make(task, render_mode=render_mode, **kwargs))  # noqa: E731
    env = MujocoPufferEnv(env_creator=creator, buf=buf, seed=seed, normalize_reward=bool(normalize_reward),
                          gamma=float(reward_gamma), clip=float(reward_clip))
    env.state_options = dict(task=task, normalize_reward=bool(normalize_reward), reward_gamma=float(reward_gamma),
                             reward_clip=float(reward_clip), **kwargs)
    return env


# MjData's arrays whose size depends on this step's constraints and islands: outputs of the last solve,
# rebuilt by the next step, so a saved state leaves them out.
_DYNAMIC_PREFIXES = ('efc_', 'iefc_', 'iacc', 'ifrc_', 'island_', 'map_', 'dof_island', 'tree_island')


_DERIVED: list[str] = []


def _derived_arrays(data: Any) -> list[str]:
    """Names of MjData's arrays of a size fixed by the model, in a fixed order (the same for every model)."""
    if not _DERIVED:
        _DERIVED.extend(name for name in dir(data) if not name.startswith(('_', *_DYNAMIC_PREFIXES))
                        and isinstance(getattr(data, name), np.ndarray))
    return _DERIVED


class ClipToBox(gymnasium.ActionWrapper):
    """Clips each action to the action space. Gymnasium's ClipAction does the same but widens the space
    it shows to (-inf, inf); this keeps the real bounds visible to policies, samplers and docs."""

    def action(self, action: np.ndarray) -> np.ndarray:
        space = self.env.action_space
        assert isinstance(space, gymnasium.spaces.Box)  # every MuJoCo env's actions are a Box
        return np.clip(action, space.low, space.high)


class MujocoPufferEnv(GymnasiumPufferEnv):
    """The emulated Gymnasium env, with its rendering failures made one clear error and, with
    `normalize_reward`, its rewards divided by the running standard deviation of the discounted return
    (the reward scaling of PPO's MuJoCo recipe) and clipped to [-clip, clip] before the trainer sees them.

    The scaling happens after the emulation has summed the raw reward into the episode's return, so
    `episode_return` stays in the task's own units.
    """

    def __init__(self, *args: Any, normalize_reward: bool = True, gamma: float = 0.99, clip: float = 10.0,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.supports_state = True
        self.normalize_reward = normalize_reward
        self.scaler = RewardScaler(1, gamma, clip)  # one row: this env's own statistic

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict]]:
        self.scaler.restart()
        return super().reset(seed)

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, terminals, truncations, infos = super().step(actions)
        if not self.normalize_reward:
            return obs, rewards, terminals, truncations, infos
        # The emulation starts the next episode after a done, so the discounted return restarts with it.
        rewards[:] = self.scaler(slice(0, 1), rewards, np.logical_or(terminals, truncations))
        return obs, rewards, terminals, truncations, infos

    # ---- saved states: MuJoCo's integration state, our counters, the reward scaler's statistic ----

    state_options: dict[str, Any] = {}

    def state_identity(self) -> StateIdentity:
        return StateIdentity(str(self.state_options.get('task', 'mujoco'))[:32], 1, state_hash(self.state_options), 0)

    def _time_limit(self) -> Any:
        env = self.env
        while isinstance(env, gymnasium.Wrapper):
            if isinstance(env, gymnasium.wrappers.TimeLimit):
                return env
            env = env.env
        return None

    def _save_game(self, game: int) -> bytes:
        """mj_getState's mjSTATE_INTEGRATION (time, qpos, qvel, act, warm start, controls, applied forces:
        everything the next mj_step integrates from), MjData's derived arrays of fixed size (positions,
        inertias, velocities, forces: they were computed before the last integration, and tasks read
        them at the start of a step, e.g. Humanoid's centre of mass, so a forward pass now would not
        reproduce them), the observation row, the TimeLimit's step count, the reward scaler's return
        and statistic, and the reset-noise RNG."""
        import mujoco  # type: ignore[import-untyped]
        if not self.initialized:
            raise StateError(f'{self.describe()}: get_state() before reset(); reset the env first')
        unwrapped: Any = self.env.unwrapped
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        physics = np.empty(mujoco.mj_stateSize(unwrapped.model, spec), np.float64)
        mujoco.mj_getState(unwrapped.model, unwrapped.data, physics, spec)
        derived = b''.join(getattr(unwrapped.data, name).tobytes() for name in _derived_arrays(unwrapped.data))
        limit = self._time_limit()
        scaler = self.scaler
        numbers = np.array([getattr(limit, '_elapsed_steps', None) or 0, scaler.returns[0], scaler.count, scaler.mean,
                            scaler.var], np.float64)
        return pack_parts(physics.tobytes(), derived, self.observations[0].tobytes(), numbers.tobytes(),
                          rng_state(unwrapped.np_random))

    def _load_game(self, game: int, payload: memoryview) -> None:
        import mujoco
        physics, derived, obs, numbers, rng = unpack_parts(payload, 5, self.describe())
        unwrapped: Any = self.env.unwrapped
        data = unwrapped.data
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        state = np.frombuffer(physics, np.float64)
        arrays = [getattr(data, name) for name in _derived_arrays(data)]
        if state.size != mujoco.mj_stateSize(unwrapped.model, spec) or len(derived) != sum(a.nbytes for a in arrays):
            raise StateError(f'{self.describe()}: the state was saved from another MuJoCo model')
        at = 0
        for array in arrays:
            array[...] = np.frombuffer(derived, array.dtype, array.size, at).reshape(array.shape)
            at += array.nbytes
        mujoco.mj_setState(unwrapped.model, data, state, spec)
        self.observations[0] = np.frombuffer(obs, self.observations.dtype).reshape(self.observations.shape[1:])
        elapsed, ret, count, mean, var = np.frombuffer(numbers, np.float64)
        limit = self._time_limit()
        if limit is not None:
            limit._elapsed_steps = int(elapsed)
        self.scaler.returns[0], self.scaler.count, self.scaler.mean, self.scaler.var = ret, count, mean, var
        unwrapped._np_random = rng_from_state(rng)
        env = self.env
        while isinstance(env, gymnasium.Wrapper):  # Gymnasium's order check: this env has been reset
            if hasattr(env, '_has_reset'):
                env._has_reset = True
            env = env.env
        self.masks[0] = True
        self.episode_return, self.episode_length = 0.0, 0
        self.initialized = self._steppable = True

    def render(self) -> Any:
        try:
            return super().render()
        except Exception as e:  # noqa: BLE001 - any GL failure: one line that says what to try
            raise render_error(e) from None


def render_error(e: Exception) -> EnvError:
    backend = os.environ.get('MUJOCO_GL', 'glfw')
    reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return EnvError(f'MuJoCo cannot render here (MUJOCO_GL={backend}: {reason}); install an offscreen GL '
                    '(apt install libegl1 for MUJOCO_GL=egl, or libosmesa6 with MUJOCO_GL=osmesa), or evaluate '
                    'without --video')


def _check_policy_options(log_std_init: float, num_layers: int, critic_hidden_size: int, obs_dtype: Any) -> None:
    if not math.isfinite(log_std_init):
        raise APIUsageError(f'log_std_init must be a finite number, got {log_std_init}')
    if num_layers < 1:
        raise APIUsageError(f'num_layers must be >= 1, got {num_layers}')
    if critic_hidden_size < 0:
        raise APIUsageError(f'critic_hidden_size must be >= 0 (0 = hidden_size), got {critic_hidden_size}')
    if obs_dtype is not None:
        raise APIUsageError('the MuJoCo policy reads flat Box observations, not structured ones')


def _merge_pending(policy: Any) -> None:
    """Fold the rollout's sums (`pending`, `pending_count`) into the running mean, variance and count (the
    parallel form of Welford's update), and clear them. In place, under no_grad (the caller's)."""
    n = policy.pending_count
    if float(n) == 0:
        return
    batch_mean = policy.pending[0] / n
    batch_var = (policy.pending[1] / n - batch_mean ** 2).clamp(min=0)
    count = policy.obs_count
    total = count + n
    delta = batch_mean - policy.obs_mean
    policy.obs_mean += delta * n / total
    policy.obs_var.copy_((policy.obs_var * count + batch_var * n + delta ** 2 * count * n / total) / total)
    policy.obs_count.copy_(total)
    policy.pending.zero_()
    policy.pending_count.zero_()


def _build_normalized() -> type:
    """The base of the family's policy: observations normalised by running statistics, the one place they
    are gathered, applied and used (for torch's forward and for NumPy's, pufferlib/numpy_policy.py)."""
    import torch

    from pufferlib import models

    class NormalizedPolicy(models.Policy):
        """Observations normalised by running statistics, clipped to +-obs_clip.

        The statistics are buffers (`obs_mean`, `obs_var`, `obs_count`): they travel with the weights in
        every checkpoint. They are gathered from the rollout's forward passes (training mode, no
        gradient) and take effect at the next rollout, so the update scores each action on the very
        input that chose it. Evaluation (`policy.eval()`) never changes them.
        """

        obs_mean: torch.Tensor
        obs_var: torch.Tensor
        obs_count: torch.Tensor
        pending: torch.Tensor
        pending_count: torch.Tensor

        def _init_statistics(self, size: int, normalize: bool, obs_clip: float) -> None:
            self.normalize, self.obs_clip = bool(normalize), float(obs_clip)
            self.register_buffer('obs_mean', torch.zeros(size, dtype=torch.float64))
            self.register_buffer('obs_var', torch.ones(size, dtype=torch.float64))
            self.register_buffer('obs_count', torch.zeros((), dtype=torch.float64))
            # This rollout's sums, applied when the next one starts; not saved (at most one epoch's worth).
            self.register_buffer('pending', torch.zeros(2, size, dtype=torch.float64), persistent=False)
            self.register_buffer('pending_count', torch.zeros((), dtype=torch.float64), persistent=False)
            self.updated_since_rollout = False
            self._float_key: tuple = ()
            self._float_cache: tuple[torch.Tensor, torch.Tensor] = (self.obs_mean, self.obs_var)

        def normalized(self, obs: torch.Tensor, update: bool) -> torch.Tensor:
            """The MLPs' float32 inputs [rows, features]. A rollout's (`update` False, training mode) join the
            statistics; an update's end the rollout, whose statistics then apply as the next rollout starts.
            Before any statistics (mean 0, variance 1) this is the identity, clipped."""
            x = obs.reshape(obs.shape[0], -1).float()
            if not self.normalize:
                return x
            if self.training and update:
                self.updated_since_rollout = True
            elif self.training:
                if self.updated_since_rollout:
                    self._apply_pending()
                    self.updated_since_rollout = False
                x64 = x.detach().double()
                self.pending[0] += x64.sum(0)
                self.pending[1] += (x64 * x64).sum(0)
                self.pending_count += x64.shape[0]
            mean, std = self._float_statistics()
            return ((x - mean) / std).clamp(-self.obs_clip, self.obs_clip)

        @torch.no_grad()
        def _apply_pending(self) -> None:
            _merge_pending(self)

        def _float_statistics(self) -> tuple[torch.Tensor, torch.Tensor]:
            """The float32 mean and std the inputs are normalised with. They change once a rollout, while the
            update asks for them 320 times an epoch (four tensor ops each, several percent of a MuJoCo run on
            one core), so they are kept until the statistics' tensors change: every in-place write
            (`_apply_pending`, `load_state_dict`) bumps a tensor's version, `.to()` makes new tensors.
            A tensor made under `torch.inference_mode()` keeps no version, and one made there could not
            serve outside it: there nothing is kept."""
            stats = (self.obs_mean, self.obs_var)
            if torch.compiler.is_compiling() or torch.is_inference_mode_enabled() or \
                    any(t.is_inference() for t in stats):
                return self.obs_mean.float(), (self.obs_var.float() + 1e-8).sqrt()
            key = tuple((t.data_ptr(), t._version) for t in stats)
            if key != self._float_key:
                self._float_cache, self._float_key = (self.obs_mean.float(), (self.obs_var.float() + 1e-8).sqrt()), key
            return self._float_cache

        def numpy_inputs(self, obs: np.ndarray, update: bool) -> np.ndarray:
            """`normalized` for NumPy's path (pufferlib/numpy_policy.py), through the very same code."""
            with torch.no_grad():
                return self.normalized(torch.from_numpy(obs), update).numpy()

    return NormalizedPolicy


def _build_policy() -> type:
    """The family's policy class, defined here because it needs torch (see lazy_policy)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from pufferlib import distributions, models
    from pufferlib.numpy_policy import GaussianMLP

    def linears(layers: nn.Sequential) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(layer.weight, layer.bias) for layer in layers if isinstance(layer, nn.Linear)]

    def tanh_mlp(layers: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
        """x through the Linear, Tanh, ... stack `mlp` builds, as functions rather than called as modules: the
        same arithmetic without nn.Module's call machinery, which at MuJoCo's minibatches of 64 on one core
        was 2% of a run (forward hooks on these layers would not fire; nothing here registers any)."""
        for weight, bias in linears(layers):
            x = torch.tanh(F.linear(x, weight, bias))
        return x

    class Policy(_build_normalized()):  # type: ignore[misc]
        """Separate actor and critic MLPs (tanh) over observations normalised by running statistics."""

        def __init__(self, env: Any, hidden_size: int = 64, num_layers: int = 2, normalize_observations: bool = True,
                     obs_clip: float = 10.0, log_std_init: float = 0.0, critic_hidden_size: int = 0) -> None:
            super().__init__(env, hidden_size)
            _check_policy_options(log_std_init, num_layers, critic_hidden_size, self.obs_dtype)
            # The exploration noise's starting log standard deviation (0: std 1, as CleanRL starts).
            with torch.no_grad():
                self.log_std.fill_(float(log_std_init))
            size = int(np.prod(self.obs_space.shape))

            def mlp(width: int) -> nn.Sequential:
                layers: list[nn.Module] = []
                for i in range(num_layers):
                    layers += [models.layer_init(nn.Linear(size if i == 0 else width, width)), nn.Tanh()]
                return nn.Sequential(*layers)

            # The critic may be wider than the actor (Andrychowicz et al. 2020 recommend a wide value MLP and
            # a policy tuned narrower); 0 keeps CleanRL's equal widths.
            self.critic_size = int(critic_hidden_size) or hidden_size
            self.encoding_width = hidden_size + self.critic_size  # encode_observations joins actor and critic
            self.actor_encoder, self.critic_encoder = mlp(hidden_size), mlp(self.critic_size)
            if self.critic_size != hidden_size:
                self.value = models.layer_init(nn.Linear(self.critic_size, 1), models.VALUE_GAIN)
            self._init_statistics(size, normalize_observations, obs_clip)

        def _features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            x = self.normalized(obs, update=torch.is_grad_enabled())  # gradients on: an update
            return tanh_mlp(self.actor_encoder, x), tanh_mlp(self.critic_encoder, x)

        def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
            return torch.cat(self._features(obs), dim=1)

        def decode_actions(self, hidden: torch.Tensor) -> tuple[distributions.Logits, torch.Tensor]:
            return self._heads(*hidden.split([self.hidden_size, self.critic_size], dim=-1))

        def _heads(self, actor: torch.Tensor, critic: torch.Tensor) -> tuple[distributions.Logits, torch.Tensor]:
            # The base class's action head on the actor's features; the value comes from the critic's.
            return self.action_logits(actor), F.linear(critic, self.value.weight, self.value.bias).squeeze(-1)

        def forward(self, obs: torch.Tensor,
                    state: models.State | None = None) -> tuple[distributions.Logits, torch.Tensor]:
            """encode_observations then decode_actions, without joining the features only to split them."""
            return self._heads(*self._features(obs))

        def numpy_model(self) -> GaussianMLP:
            """This policy's MLPs as pufferlib/numpy_policy.py computes them (the trainer's path on a CPU)."""
            return GaussianMLP(actor=linears(self.actor_encoder) + [(self.actor.weight, self.actor.bias)],
                               critic=linears(self.critic_encoder) + [(self.value.weight, self.value.bias)],
                               log_std=self.log_std)

    return Policy


__getattr__ = lazy_policy(__name__, _build_policy)
