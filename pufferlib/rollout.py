"""The rollout: the buffers [segments = agent rows, horizon] and how one epoch's experience fills them.
pufferlib.trainer's Trainer is a Rollout that also learns from it (the update) and saves it (checkpoints).

Every agent row of the vector env fills one segment of `bptt_horizon` steps. Batches come from
`vecenv.recv()`. When a batch comes back after its rows' segments are full, its observation is the one
that follows the segment: the policy's value of it bootstraps the segment's last step (no step is wasted),
and the batch is held (not answered) until the update is done. Its action, from the updated policy, is
the first step of the next segment. With `vec.batch_size = vec.num_envs / 2` the envs simulate one half
while the policy works on the other.

Also here, because they are the rollout's sizes: `check_rollout` (a minibatch fits in one rollout, the run
holds one) and `rollout_bytes` (the buffers' size), which pufferlib.train checks before it builds the env.
"""
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import torch
from gymnasium import spaces

from pufferlib import config as configuration
from pufferlib.distributions import Logits, MixedLogits, sample_logits
from pufferlib.profile import Profile
from pufferlib.pufferenv import MixedSpace, PufferError, action_dtype, nonfinite_rows, space_shape
from pufferlib.reward_scale import RewardScaler

if TYPE_CHECKING:
    from pufferlib.numpy_policy import Actor


class NonFiniteError(PufferError, ArithmeticError):
    """An env returned a NaN or infinite reward or observation, or the loss, a gradient, the policy's
    outputs or its weights became one. `weights_ok`: the weights are still good (the bad numbers came
    from the env and never reached them), so the state at the epoch boundary may be saved."""

    def __init__(self, message: str, weights_ok: bool = False) -> None:
        super().__init__(message)
        self.weights_ok = weights_ok


class TrainerEnv(Protocol):
    """What the trainer reads of its env: a pufferlib.vector env, or a league's arena.Arena (the learner's
    rows of a vector env). `obs_dtype` and `agents_per_env` are read where the env has them."""

    @property
    def num_agents(self) -> int: ...

    @property
    def agents_per_batch(self) -> int: ...

    @property
    def single_observation_space(self) -> spaces.Space: ...

    @property
    def single_action_space(self) -> spaces.Space: ...

    @property
    def action_dtype(self) -> np.dtype: ...

    @property
    def action_masks(self) -> np.ndarray | None: ...

    def async_reset(self, seed: int | None = None) -> None: ...

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Sequence[dict[str, Any]], np.ndarray,
                            np.ndarray | None]: ...

    def send(self, actions: np.ndarray, env_ids: np.ndarray | None = None) -> None: ...

    def close(self) -> None: ...


class RecurrentPolicy(Protocol):
    """What a recurrent policy (`is_recurrent`, e.g. models.LSTMWrapper) adds to nn.Module for the rollout."""

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> dict[str, torch.Tensor]: ...

    def forward_eval(self, obs: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[Logits, torch.Tensor]: ...


def check_rollout(rows: int, train: dict) -> None:
    """One rollout (`rows` agent rows x bptt_horizon steps) must hold a minibatch, and the run at least one
    rollout. pufferlib.train also asks before it builds the envs, so the error comes before any worker."""
    H = train['bptt_horizon']
    batch = rows * H
    if train['minibatch_size'] > batch:
        raise configuration.ConfigError(
            f'train.minibatch_size={train["minibatch_size"]} is larger than one rollout (vec rows {rows} x '
            f'train.bptt_horizon {H} = {batch}); lower it or raise vec.num_envs / env.num_envs')
    if train['total_timesteps'] < batch:
        raise configuration.ConfigError(
            f'train.total_timesteps={train["total_timesteps"]:,} is less than one epoch (vec rows {rows} x '
            f'train.bptt_horizon {H} = {batch:,} steps); raise it to at least {batch:,} '
            'or lower vec.num_envs / env.num_envs / train.bptt_horizon')


def rollout_bytes(rows: int, horizon: int, observation_space: spaces.Space, action_space: spaces.Space,
                  mask_width: int | None = None, rnn_hidden: int = 0) -> int:
    """The bytes of the buffers a Trainer allocates for `rows` agent rows and `horizon`-step segments (the
    tensors of Trainer.__init__, plus the advantages each minibatch computes over all of them), for
    checking a run fits in memory before anything is allocated. `rnn_hidden`: an LSTM's hidden size."""
    steps = int(rows) * int(horizon)
    obs = int(np.prod(space_shape(observation_space))) * np.dtype(observation_space.dtype).itemsize
    discrete = action_dtype(action_space).kind == 'i'  # as Trainer.__init__ decides it
    actions = int(np.prod(space_shape(action_space))) * (8 if discrete else 4)
    masked = not isinstance(action_space, spaces.Box)  # as Rollout decides it
    # logprobs, values, rewards, dones, masks, ratio and the advantages: float32 [rows, horizon] each
    per_step = obs + actions + 7 * 4 + (int(mask_width) if mask_width and masked else 0)
    # last_values (float32), step_of_row (int64), and an LSTM's (h, c) now and at each segment's start
    per_row = 4 + 8 + 4 * int(rnn_hidden) * 4
    return steps * per_step + int(rows) * per_row


class Rollout:
    """The rollout's buffers and state for one vector env, and `rollout()`, which fills them."""

    def __init__(self, config: dict, vecenv: TrainerEnv, policy: torch.nn.Module,
                 device: str | torch.device = 'cpu') -> None:
        self.config, self.vecenv, self.device = config, vecenv, torch.device(device)
        train = config['train']
        self.train_config = train
        self.policy = policy.to(self.device)
        self.recurrent = getattr(policy, 'is_recurrent', False)
        # nn.Module types the methods a recurrent policy adds as tensors or modules: the same object, seen
        # through them.
        self.rnn = cast(RecurrentPolicy, self.policy) if self.recurrent else None
        self.segments, self.horizon = vecenv.num_agents, train['bptt_horizon']
        self.batch_size = self.segments * self.horizon
        self.numpy_actor: Actor | None = None  # the rollout's step through NumPy, where the Trainer takes it
        # bf16 autocast on the device in use: tensor cores on a GPU; on a CPU it runs (slower on most
        # CPUs without AMX), which lets the same config be checked anywhere.
        self.autocast = (torch.autocast(self.device.type, dtype=torch.bfloat16)
                         if train['precision'] == 'bfloat16' else contextlib.nullcontext())
        self.global_step, self.epoch = 0, 0
        # Batches whose segments were full, answered next epoch: (obs, env_ids, masks, legal actions).
        self.held: list[tuple[torch.Tensor, np.ndarray, np.ndarray | None, torch.Tensor | None]] = []
        self.episode_infos: list[dict] = []
        self.started = False
        self.profile = Profile(train.get('profile', False), self.device)  # see pufferlib/profile.py
        self._make_buffers(vecenv, train)

    def _make_buffers(self, vecenv: TrainerEnv, train: dict) -> None:
        """The rollout buffers [segments, horizon, ...] (rollout_bytes counts them) and the rows' state."""
        S, H, d = self.segments, self.horizon, self.device
        obs_space, act_space = vecenv.single_observation_space, vecenv.single_action_space
        obs_dtype = torch.from_numpy(np.zeros(0, obs_space.dtype)).dtype
        self.discrete = vecenv.action_dtype.kind == 'i'
        # Gaussian samples are unbounded: the env gets them clipped to the Box (a mixed row's Box columns), the
        # rollout keeps the sample itself, whose logprob the update recomputes.
        self.action_bounds = (act_space.low, act_space.high) if isinstance(act_space, (spaces.Box, MixedSpace)) \
            else None
        self.obs = torch.zeros(S, H, *space_shape(obs_space), dtype=obs_dtype, device=d)
        self.actions = torch.zeros(S, H, *space_shape(act_space),
                                   dtype=torch.int64 if self.discrete else torch.float32, device=d)
        self.logprobs = torch.zeros(S, H, device=d)
        self.values = torch.zeros(S, H, device=d)
        self.rewards = torch.zeros(S, H, device=d)
        self.dones = torch.zeros(S, H, device=d)
        self.truncations = torch.zeros(S, H, device=d)  # 1: a time limit alone ended it (bootstrap_truncations)
        self.masks = torch.ones(S, H, device=d)
        self.masked = False  # whether a row was ever reported not live (until then the masks are all ones)
        self.ratio = torch.ones(S, H, device=d)
        # Action masks (turn-based games, league.Arena): sampled under them in the rollout and scored
        # under the same masks in the update, so logprob ratios compare one distribution.
        legal = getattr(vecenv, 'action_masks', None)
        self.action_masks = (torch.ones(S, H, legal.shape[1], dtype=torch.bool, device=d)
                             if legal is not None and not isinstance(act_space, spaces.Box) else None)
        self.last_values = torch.zeros(S, device=d)
        self.reward_scale = RewardScaler(S, train['gamma'], train['reward_clip']) if train['normalize_rewards'] \
            else None
        self.step_of_row = np.zeros(S, dtype=np.int64)   # next write index of each row's segment
        self.state: dict[str, torch.Tensor] = {}
        if self.rnn is not None:
            self.state = self.rnn.initial_state(S, device=d)
            self.segment_start = {k: torch.zeros_like(v) for k, v in self.state.items()}

    def rollout(self) -> None:
        """Fill every row's segment; leave each block's next observation held for the next epoch."""
        vecenv = self.vecenv
        if not self.started:
            vecenv.async_reset(self.train_config['seed'])
            self.started = True
        if self.numpy_actor is not None:
            self.numpy_actor.refresh()  # the update (or a checkpoint) moved the weights
        held, self.held = self.held, []
        for batch, ids, masks, legal in held:
            self._act(batch, ids, masks, legal)
        blocks = vecenv.num_agents // vecenv.agents_per_batch
        while len(self.held) < blocks:
            obs, rewards, terminals, truncations, infos, ids, masks = vecenv.recv()
            self.profile.lap('env')
            self._check_finite(obs, rewards, ids)  # in the profile's copy phase: trainer-side work
            if infos:
                self.episode_infos.extend(infos)
            rows = slice(int(ids[0]), int(ids[-1]) + 1)
            t = int(self.step_of_row[rows.start])
            if t > 0:  # these arrays describe the action this block took at step t - 1
                ended = np.logical_or(terminals, truncations)
                if self.reward_scale is not None:
                    live = None if masks is None else np.asarray(masks, dtype=bool)
                    rewards = self.reward_scale(rows, rewards, ended, live)
                done = torch.from_numpy(ended).to(self.device, torch.float32)
                self.rewards[rows, t - 1] = torch.from_numpy(rewards).to(self.device)
                self.dones[rows, t - 1] = done
                if self.train_config['bootstrap_truncations']:  # read only by advantages() with the option on
                    self.truncations[rows, t - 1] = torch.from_numpy(
                        np.logical_and(truncations, np.logical_not(terminals))).to(self.device, torch.float32)
                if self.recurrent:
                    keep = (1 - done).unsqueeze(1)
                    for tensor in self.state.values():
                        tensor[rows] *= keep  # a new episode starts with a blank memory
            batch = torch.from_numpy(obs)
            legal = None
            if self.action_masks is not None:  # a copy: the env rewrites its masks on the next step
                # The env has masks: self.action_masks was made because it had them.
                env_masks = cast(np.ndarray, vecenv.action_masks)
                legal = torch.from_numpy(np.array(env_masks[rows], dtype=bool))
            self.profile.lap('copy')
            if t == self.horizon:
                self.last_values[rows] = self._value(batch, rows)
                self.profile.lap('rollout_forward')
                self.held.append((batch, ids, masks, legal))
                self.step_of_row[rows] = 0  # its next action starts the next segment
                continue
            self._act(batch, ids, masks, legal)

    def restart_rows(self, rows: np.ndarray, obs: np.ndarray) -> None:
        """Agent rows whose games were loaded from saved states between rollouts (pufferlib.explore), with
        `obs` their restored observations: their held observations (and legal actions) are replaced, their
        recurrent memory is blanked and their discounted return restarts, as at an episode's start. The
        segments they filled keep their bootstrap values, from the states they were in before the move."""
        legal_now = getattr(self.vecenv, 'action_masks', None)
        where = {int(row): i for i, row in enumerate(rows)}
        for h, (batch, ids, masks, legal) in enumerate(self.held):
            hit = [(pos, where[int(row)]) for pos, row in enumerate(ids) if int(row) in where]
            if not hit:
                continue
            pos, src = (list(x) for x in zip(*hit, strict=True))
            batch = batch.clone()  # it may view the env's buffers, which the caller must not write
            batch[pos] = torch.from_numpy(np.ascontiguousarray(obs[src])).to(batch.dtype)
            if legal is not None and legal_now is not None:
                legal = legal.clone()
                legal[pos] = torch.from_numpy(np.array(legal_now[ids[pos]], dtype=bool))
            self.held[h] = (batch, ids, masks, legal)
        index = torch.as_tensor(rows, device=self.device)
        for tensor in self.state.values():
            tensor[index] = 0
        if self.reward_scale is not None:
            self.reward_scale.restart(rows)

    def _check_finite(self, obs: np.ndarray, rewards: np.ndarray, ids: np.ndarray) -> None:
        """One sum per array when all is finite (pufferlib.nonfinite_rows, which also reads the float
        fields of structured observations); the rows are only looked for when something is wrong."""
        bad = nonfinite_rows(obs, rewards, getattr(self.vecenv, 'obs_dtype', None))
        if not len(bad):
            return
        rows = (int(ids[0]) + bad).tolist()
        in_rewards = not np.isfinite(rewards[bad]).all()
        what, array = ('rewards', rewards) if in_rewards else ('observations', obs)
        values = sorted({str(v) for v in array[bad].ravel() if not np.isfinite(v)}) if array.dtype.kind == 'f' \
            else ['in a float field of the structured observation']
        per_env = getattr(self.vecenv, 'agents_per_env', 1)
        envs = sorted({row // per_env for row in rows})
        raise NonFiniteError(f'non-finite {what} ({", ".join(values)}) from env rows {_listing(rows)} (envs '
                             f'{_listing(envs)}) at global step {self.global_step:,}, epoch {self.epoch + 1}; '
                             'training stopped before they reached the loss. Fix the env (its rewards and '
                             'observations must be finite numbers)', weights_ok=True)

    def _sample(self, logits: Logits, actions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """sample_logits, with torch's "invalid multinomial distribution" for non-finite logits made clear."""
        try:
            return sample_logits(logits, actions, mask=mask)
        except (RuntimeError, ValueError) as e:
            tensors = list(logits) if isinstance(logits, (tuple, list)) else \
                [*logits.discrete, logits.continuous.mean] if isinstance(logits, MixedLogits) else \
                [logits.mean] if isinstance(logits, torch.distributions.Distribution) else [logits]
            if all(bool(torch.isfinite(t).all()) for t in tensors):
                raise
            raise self._diverged(str(e).splitlines()[0]) from None

    def _diverged(self, detail: str = '') -> NonFiniteError:
        """The one error for a policy whose outputs became non-finite in the rollout, on either path."""
        return NonFiniteError(f'the policy\'s outputs became non-finite at global step {self.global_step:,}, '
                              f'epoch {self.epoch + 1} (the weights diverged: lower train.learning_rate or '
                              f'train.max_grad_norm)' + (f': {detail}' if detail else ''))

    def _policy_step(self, obs: torch.Tensor,
                     state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Logits, torch.Tensor]:
        """(obs on the device, logits, value); `state` is the rows' memory, empty for a feed-forward policy."""
        obs = obs.to(self.device, non_blocking=True)
        self.profile.lap('copy')
        with torch.no_grad(), self.autocast:
            if self.rnn is not None:
                logits, value = self.rnn.forward_eval(obs, state)
            else:
                logits, value = self.policy(obs)
        return obs, logits, value

    def _value(self, obs: torch.Tensor, rows: slice) -> torch.Tensor:
        # The bootstrap value must not advance the memory: the next epoch acts on this same observation.
        state = {k: v[rows].clone() for k, v in self.state.items()}
        return self._policy_step(obs, state)[2].float().flatten()

    def _act(self, obs: torch.Tensor, ids: np.ndarray, masks: np.ndarray | None = None,
             legal: torch.Tensor | None = None) -> None:
        rows = slice(int(ids[0]), int(ids[-1]) + 1)
        t = int(self.step_of_row[rows.start])
        state: dict[str, torch.Tensor] = {}
        if self.recurrent:
            if t == 0:
                for key, tensor in self.state.items():
                    self.segment_start[key][rows] = tensor[rows]
            state = {k: v[rows] for k, v in self.state.items()}
        if self.numpy_actor is not None:  # the policy's NumPy step (no masks, no memory: see __init__)
            action, logprob, value = (torch.from_numpy(a) for a in self.numpy_actor(obs.numpy()))
        else:
            obs, logits, value = self._policy_step(obs, state)
            if legal is not None:
                legal = legal.to(self.device)
                # Legal actions come only from an env with masks, for which self.action_masks was made.
                cast(torch.Tensor, self.action_masks)[rows, t] = legal
            with torch.no_grad():  # whatever the logits hold (a learned std), the rollout records no graph
                action, logprob, _ = self._sample(logits, mask=legal)
        self.profile.lap('rollout_forward')
        sent = action.cpu().numpy()
        # A Gaussian's sample from a NaN mean is NaN, with no error of torch's: stopped here, before any buffer
        # takes this step, as the divergence it is (the sweep reads "non-finite" as a diverged trial).
        if sent.dtype.kind == 'f' and not np.isfinite(sent).all():
            raise self._diverged()
        if self.recurrent:
            for key, tensor in state.items():
                self.state[key][rows] = tensor
        self.obs[rows, t] = obs
        self.actions[rows, t] = action.reshape(self.actions[rows, t].shape)
        self.logprobs[rows, t] = logprob.float()
        self.values[rows, t] = value.float().flatten()
        if masks is not None:
            self.masks[rows, t] = torch.from_numpy(np.asarray(masks)).to(self.device, torch.float32)
            self.masked = self.masked or not bool(np.all(masks))
        self.step_of_row[rows] = t + 1
        self.global_step += len(ids)
        sent = sent.astype(self.vecenv.action_dtype, copy=False)
        if self.action_bounds is not None:
            sent = np.clip(sent, *self.action_bounds).astype(self.vecenv.action_dtype, copy=False)
        self.profile.lap('copy')
        self.vecenv.send(sent, ids)
        self.profile.lap('env')

    def episode_stats(self) -> dict[str, float]:
        """Means of the numeric episode statistics since the last call, and `episodes`: how many ended.

        The count lets a reader weigh a row's means (a mean of 2 episodes is not one of 200) and pool
        rows into "the last N episodes". Each info is one episode (emulation) or, where it carries
        `n`, the summary of n episodes (Ocean's logs).
        """
        infos, self.episode_infos = self.episode_infos, []
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for info in infos:
            for key, value in info.items():
                if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                    sums[key] = sums.get(key, 0.0) + float(value)
                    counts[key] = counts.get(key, 0) + 1
        stats = {key: sums[key] / counts[key] for key in sums}
        if infos:
            stats['episodes'] = int(round(sum(float(info.get('n', 1)) for info in infos)))
        return stats

    def close(self) -> None:
        self.vecenv.close()


def _listing(values: list, limit: int = 8) -> str:
    shown = ', '.join(str(v) for v in values[:limit])
    return shown + (f' and {len(values) - limit} more' if len(values) > limit else '')
