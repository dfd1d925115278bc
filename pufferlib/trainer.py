"""PPO with the puffer advantage, prioritized segment replay and Muon. Reads top to bottom.

    run = pufferlib.trainer.train('puffer_squared')            # or: puffer train puffer_squared

One epoch = one rollout + one update:
1. Rollout. Every agent row of the vector env fills one segment of `bptt_horizon` steps of the
   buffers [segments = rows, horizon]. Batches come from `vecenv.recv()`. When a batch comes back
   after its rows' segments are full, its observation is the one that follows the segment: the
   policy's value of it bootstraps the segment's last step (no step is wasted), and the batch is
   held (not answered) until the update is done. Its action, from the updated policy, is the
   first step of the next segment. With `vec.batch_size = vec.num_envs / 2` the envs simulate one
   half while the policy works on the other.
2. Update. Advantages come from `pufferlib.advantage.compute_advantage` (GAE generalised with
   V-trace importance clipping), recomputed before every minibatch with the latest importance
   ratios. Minibatches are whole segments, sampled with probability proportional to
   (sum |A|)^alpha with importance weights (N P)^-beta, beta annealed to 1. Clipped policy and
   value losses, entropy bonus, gradient-norm clipping, advantage normalisation. Muon for 2-D
   weights with AdamW for the rest (or Adam alone), cosine learning-rate annealing.

Runs live in `experiments/<run_id>/`: config.toml, metrics.jsonl and checkpoints/ (atomic writes, one
process at a time: see pufferlib.rundir).
"""
import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

import pufferlib.vector
from pufferlib import config as configuration
from pufferlib import rundir
from pufferlib.advantage import compute_advantage
from pufferlib.models import load_checkpoint, make_policy, sample_logits
from pufferlib.profile import Profile
from pufferlib.pufferenv import EnvError, PufferError, nonfinite_rows
from pufferlib.rundir import CheckpointError, RunDirError, atomic_write, latest_checkpoint, write_failure


class NonFiniteError(PufferError, ArithmeticError):
    """An env returned a NaN or infinite reward or observation, or the loss, a gradient, the policy's
    outputs or its weights became one. `weights_ok`: the weights are still good (the bad numbers came
    from the env and never reached them), so the state at the epoch boundary may be saved."""

    def __init__(self, message: str, weights_ok: bool = False):
        super().__init__(message)
        self.weights_ok = weights_ok


# ---------------------------------------------------------------------------------------------
# Building the pieces
# ---------------------------------------------------------------------------------------------

def resolve_device(name: str) -> torch.device:
    if name == 'auto':
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    device = torch.device(name)
    if device.type == 'cuda' and not torch.cuda.is_available():
        raise configuration.ConfigError(f'train.device={name!r} but no CUDA device is available; use cpu or auto')
    return device


def torch_threads(setting: int, vecenv: pufferlib.vector.VecEnv) -> int:
    """train.torch_threads, where 0 means the cores that the env worker processes leave free (at least 1).

    torch's own default is one thread per core, but here the trainer shares the cores with the env
    workers: while one half of the envs steps, the policy acts on the other, and each of torch's
    parallel regions may wait for a thread whose core a worker holds. It is a guard against the bad
    case, not the fastest setting everywhere: on 2 quiet cores with 2 workers breakout trains ~1.4x
    faster with two threads than with one, but under other load two threads ran 3-30x slower than
    one (docs/benchmarks.md, "Where the time goes", and its first sitting in 13c1a24;
    scripts/bench_profile.py). Serial envs step in this process, between the policy's calls, so
    they leave every core to torch."""
    if setting > 0:
        return setting
    # Multiprocessing's num_processes leaves out a local worker, which steps in this process.
    workers = 0 if isinstance(vecenv, pufferlib.vector.Serial) else getattr(vecenv, 'num_processes',
                                                                               vecenv.num_workers)
    return max(1, pufferlib.vector.cpu_count() - workers)


def make_vecenv(env: str | Callable, config: dict, seed_offset: int = 0) -> pufferlib.vector.VecEnv:
    """The vector env of an experiment; `env` is a name or an env creator."""
    vec = config['vec']
    cores = pufferlib.vector.cpu_count()
    num_envs = vec['num_envs'] or cores
    num_workers = vec['num_workers'] or None
    if vec['backend'].lower() == 'serial':
        num_workers = None
    options = {'local_worker': True} if vec['local_worker'] else {}
    if vec['num_processes']:
        options['num_processes'] = vec['num_processes']
    if vec['backend'].lower() != 'serial':  # Serial has no workers to time out
        options['step_timeout'] = vec['step_timeout']
    return pufferlib.vector.make(env, backend=vec['backend'], num_envs=num_envs, num_workers=num_workers,
                                 batch_size=vec['batch_size'] or None, zero_copy=vec['zero_copy'],
                                 seed=config['train']['seed'] + seed_offset, env_kwargs=dict(config['env']),
                                 **options)


def make_optimizers(policy: torch.nn.Module, train: dict) -> list[torch.optim.Optimizer]:
    """Muon for the 2-D weight matrices, AdamW for everything else; or Adam for all."""
    params = [p for p in policy.parameters() if p.requires_grad]
    betas, eps = (train['adam_beta1'], train['adam_beta2']), train['adam_eps']
    if train['optimizer'] == 'adam':
        return [torch.optim.Adam(params, lr=train['learning_rate'], betas=betas, eps=eps)]
    matrices = [p for p in params if p.ndim == 2]
    others = [p for p in params if p.ndim != 2]
    # match_rms_adamw scales Muon's step to AdamW's update size, so one learning rate serves both.
    optimizers = [torch.optim.Muon(matrices, lr=train['learning_rate'], weight_decay=train['weight_decay'],
                                   adjust_lr_fn='match_rms_adamw')]
    if others:
        optimizers.append(torch.optim.AdamW(others, lr=train['learning_rate'], betas=betas, eps=eps,
                                            weight_decay=train['weight_decay']))
    return optimizers


# ---------------------------------------------------------------------------------------------
# Metrics and checkpoints (the run directory itself: pufferlib.rundir)
# ---------------------------------------------------------------------------------------------

class Metrics:
    """metrics.jsonl in the run directory, plus wandb when enabled."""

    def __init__(self, run_dir, config, resume):
        self.path = os.path.join(run_dir, 'metrics.jsonl')
        try:
            self.file = open(self.path, 'a')
        except OSError as e:
            raise write_failure('the metrics file', self.path, e) from None
        self.wandb = None
        if config['wandb']['enabled']:
            self.wandb = start_wandb(run_dir, config, resume)

    def write(self, row):
        try:
            self.file.write(json.dumps(row) + '\n')
            self.file.flush()
        except OSError as e:
            raise write_failure('the metrics file', self.path, e) from None
        if self.wandb is not None:
            self.wandb.log(row, step=row['global_step'])

    def close(self):
        with contextlib.suppress(OSError):  # a full disk already raised at write(); closing must not mask it
            self.file.close()
        if self.wandb is not None:
            self.wandb.finish()


def start_wandb(run_dir, config, resume):
    try:
        import wandb
    except ImportError:
        raise configuration.ConfigError('wandb.enabled needs wandb: pip install -e ".[wandb]" in this '
                                        'repository') from None
    # Offline unless a key is configured: a missing login must never prompt or crash a run.
    mode = 'online' if os.environ.get('WANDB_API_KEY') else 'offline'
    mode = os.environ.get('WANDB_MODE', mode)
    return wandb.init(project=config['wandb']['project'], group=config['wandb']['group'] or None,
                      config=config, dir=run_dir, name=os.path.basename(run_dir), mode=mode,
                      id=os.path.basename(run_dir), resume='allow' if resume else None)

# ---------------------------------------------------------------------------------------------
# The trainer
# ---------------------------------------------------------------------------------------------

class Trainer:
    def __init__(self, config: dict, vecenv: pufferlib.vector.VecEnv, policy: torch.nn.Module, device: str = 'cpu',
                 distributed: bool = False, env_name: str = ''):
        self.config, self.vecenv, self.device = config, vecenv, torch.device(device)
        self.env_name = env_name  # recorded in checkpoints
        train = config['train']
        self.train_config = train
        self.policy = policy.to(self.device)
        self.recurrent = getattr(policy, 'is_recurrent', False)
        self.ddp = None
        if distributed:
            self.ddp = torch.nn.parallel.DistributedDataParallel(self.policy)
        self.model = self.ddp or self.policy
        if train['compile']:
            self.model = torch.compile(self.model)

        S, H = vecenv.num_agents, train['bptt_horizon']
        self.segments, self.horizon = S, H
        self.batch_size = S * H
        if train['minibatch_size'] > self.batch_size:
            raise configuration.ConfigError(
                f'train.minibatch_size={train["minibatch_size"]} is larger than one rollout (vec rows {S} x '
                f'train.bptt_horizon {H} = {self.batch_size}); lower it or raise vec.num_envs / env.num_envs')
        self.minibatch_segments = train['minibatch_size'] // H
        if train['total_timesteps'] < self.batch_size:
            raise configuration.ConfigError(
                f'train.total_timesteps={train["total_timesteps"]:,} is less than one epoch (vec rows {S} x '
                f'train.bptt_horizon {H} = {self.batch_size:,} steps); raise it to at least {self.batch_size:,} '
                'or lower vec.num_envs / env.num_envs / train.bptt_horizon')
        self.total_epochs = math.ceil(train['total_timesteps'] / self.batch_size)

        obs_space, act_space = vecenv.single_observation_space, vecenv.single_action_space
        obs_dtype = torch.from_numpy(np.zeros(0, obs_space.dtype)).dtype
        self.discrete = vecenv.action_dtype.kind == 'i'
        d = self.device
        self.obs = torch.zeros(S, H, *obs_space.shape, dtype=obs_dtype, device=d)
        self.actions = torch.zeros(S, H, *act_space.shape, dtype=torch.int64 if self.discrete else torch.float32,
                                   device=d)
        self.logprobs = torch.zeros(S, H, device=d)
        self.values = torch.zeros(S, H, device=d)
        self.rewards = torch.zeros(S, H, device=d)
        self.dones = torch.zeros(S, H, device=d)
        self.masks = torch.ones(S, H, device=d)
        self.ratio = torch.ones(S, H, device=d)
        # Action masks (turn-based games, league.Arena): sampled under them in the rollout and scored
        # under the same masks in the update, so logprob ratios compare one distribution.
        legal = getattr(vecenv, 'action_masks', None)
        self.action_masks = (torch.ones(S, H, legal.shape[1], dtype=torch.bool, device=d)
                             if legal is not None and self.discrete else None)
        self.last_values = torch.zeros(S, device=d)
        self.step_of_row = np.zeros(S, dtype=np.int64)   # next write index of each row's segment
        self.state = {}
        if self.recurrent:
            self.state = policy.initial_state(S, device=d)
            self.segment_start = {k: torch.zeros_like(v) for k, v in self.state.items()}

        self.optimizers = make_optimizers(self.policy, train)
        self.schedulers = [torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=self.total_epochs, eta_min=0.0)
                           for o in self.optimizers] if train['anneal_lr'] else []
        # bf16 autocast on the device in use: tensor cores on a GPU; on a CPU it runs (slower on most
        # CPUs without AMX), which lets the same config be checked anywhere.
        self.autocast = (torch.autocast(self.device.type, dtype=torch.bfloat16)
                         if train['precision'] == 'bfloat16' else contextlib.nullcontext())
        self.global_step, self.epoch = 0, 0
        # The state at the end of the last update: what a checkpoint holds, even one written in the middle
        # of a rollout (an env failed, the workers got a SIGTERM), so that the half-finished rollout's
        # steps are not counted and a resumed run ends on the same step as one never interrupted.
        self.boundary_step, self.boundary_rng = 0, torch.get_rng_state()
        self.held = []          # batches whose segments were full: (obs, env_ids), answered next epoch
        self.episode_infos = []
        self.started = False
        self.losses = {}
        self.profile = Profile(train.get('profile', False), self.device)  # see pufferlib/profile.py

    # --- rollout ------------------------------------------------------------------------------

    def rollout(self) -> None:
        """Fill every row's segment; leave each block's next observation held for the next epoch."""
        vecenv = self.vecenv
        if not self.started:
            vecenv.async_reset(self.train_config['seed'])
            self.started = True
        held, self.held = self.held, []
        for obs, ids, masks, legal in held:
            self._act(obs, ids, masks, legal)
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
                done = torch.from_numpy(np.logical_or(terminals, truncations)).to(self.device, torch.float32)
                self.rewards[rows, t - 1] = torch.from_numpy(rewards).to(self.device)
                self.dones[rows, t - 1] = done
                if self.recurrent:
                    keep = (1 - done).unsqueeze(1)
                    for tensor in self.state.values():
                        tensor[rows] *= keep  # a new episode starts with a blank memory
            obs = torch.from_numpy(obs)
            legal = None
            if self.action_masks is not None:  # a copy: the env rewrites its masks on the next step
                legal = torch.from_numpy(np.array(vecenv.action_masks[rows], dtype=bool))
            self.profile.lap('copy')
            if t == self.horizon:
                self.last_values[rows] = self._value(obs, rows)
                self.profile.lap('rollout_forward')
                self.held.append((obs, ids, masks, legal))
                self.step_of_row[rows] = 0  # its next action starts the next segment
                continue
            self._act(obs, ids, masks, legal)

    def _check_finite(self, obs, rewards, ids):
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

    def _sample(self, logits, actions=None, mask=None):
        """sample_logits, with torch's "invalid multinomial distribution" for non-finite logits made clear."""
        try:
            return sample_logits(logits, actions, mask=mask)
        except (RuntimeError, ValueError) as e:
            tensors = list(logits) if isinstance(logits, (tuple, list)) else \
                [logits.mean] if isinstance(logits, torch.distributions.Distribution) else [logits]
            if all(bool(torch.isfinite(t).all()) for t in tensors):
                raise
            raise NonFiniteError(f'the policy\'s outputs became non-finite at global step {self.global_step:,}, '
                                 f'epoch {self.epoch + 1} (the weights diverged: lower train.learning_rate or '
                                 f'train.max_grad_norm): {str(e).splitlines()[0]}') from None

    def _policy_step(self, obs, state):
        obs = obs.to(self.device, non_blocking=True)
        self.profile.lap('copy')
        with torch.no_grad(), self.autocast:
            if self.recurrent:
                logits, value = self.policy.forward_eval(obs, state)
            else:
                logits, value = self.policy(obs)
        return obs, logits, value

    def _value(self, obs, rows):
        # The bootstrap value must not advance the memory: the next epoch acts on this same observation.
        state = {k: v[rows].clone() for k, v in self.state.items()}
        return self._policy_step(obs, state)[2].float().flatten()

    def _act(self, obs, ids, masks=None, legal=None):
        rows = slice(int(ids[0]), int(ids[-1]) + 1)
        t = int(self.step_of_row[rows.start])
        if self.recurrent:
            if t == 0:
                for key, tensor in self.state.items():
                    self.segment_start[key][rows] = tensor[rows]
            state = {k: v[rows] for k, v in self.state.items()}
        else:
            state = None
        obs, logits, value = self._policy_step(obs, state)
        if legal is not None:
            legal = legal.to(self.device)
            self.action_masks[rows, t] = legal
        action, logprob, _ = self._sample(logits, mask=legal)
        self.profile.lap('rollout_forward')
        if self.recurrent:
            for key, tensor in state.items():
                self.state[key][rows] = tensor
        self.obs[rows, t] = obs
        self.actions[rows, t] = action.reshape(self.actions[rows, t].shape)
        self.logprobs[rows, t] = logprob.float()
        self.values[rows, t] = value.float().flatten()
        if masks is not None:
            self.masks[rows, t] = torch.from_numpy(np.asarray(masks)).to(self.device, torch.float32)
        self.step_of_row[rows] = t + 1
        self.global_step += len(ids)
        action = action.cpu().numpy().astype(self.vecenv.action_dtype, copy=False)
        self.profile.lap('copy')
        self.vecenv.send(action, ids)
        self.profile.lap('env')

    # --- update -------------------------------------------------------------------------------

    def advantages(self) -> torch.Tensor:
        c = self.train_config
        return compute_advantage(self.values, self.rewards, self.dones, self.last_values, importance=self.ratio,
                                 gamma=c['gamma'], lam=c['gae_lambda'], rho_clip=c['vtrace_rho_clip'],
                                 c_clip=c['vtrace_c_clip'])

    def update(self) -> dict:
        c = self.train_config
        self.ratio.fill_(1.0)
        progress = self.epoch / self.total_epochs
        beta = c['prio_beta0'] + (1 - c['prio_beta0']) * progress
        minibatches = c['update_epochs'] * (self.batch_size // c['minibatch_size'])
        totals = {}
        params = [p for p in self.policy.parameters() if p.requires_grad]
        for _ in range(max(1, minibatches)):
            advantages = self.advantages()
            # Segments with more to learn (larger summed |A|) are drawn more often.
            priority = advantages.abs().sum(1).pow(c['prio_alpha']) + 1e-8 if c['prio_alpha'] > 0 \
                else torch.ones(self.segments, device=self.device)
            probs = priority / priority.sum()
            idx = torch.multinomial(probs, self.minibatch_segments, replacement=True)
            weights = (self.segments * probs[idx]).pow(-beta)
            weights = (weights / weights.max()).unsqueeze(1)
            self.profile.lap('advantage')

            mb_adv = advantages[idx]
            returns = mb_adv + self.values[idx]
            with self.autocast:
                if self.recurrent:
                    state = {key: self.segment_start[key][idx] for key in self.segment_start}
                    state['dones'] = self.dones[idx]
                    logits, new_values = self.model(self.obs[idx], state)
                else:
                    logits, new_values = self.model(self.obs[idx].flatten(0, 1))
            actions = self.actions[idx].flatten(0, 1)
            legal = None if self.action_masks is None else self.action_masks[idx].flatten(0, 1)
            _, new_logprob, entropy = self._sample(logits, actions, mask=legal)
            new_logprob = new_logprob.float().reshape(self.minibatch_segments, self.horizon)
            entropy = entropy.float().reshape(self.minibatch_segments, self.horizon)
            new_values = new_values.float().reshape(self.minibatch_segments, self.horizon)

            log_ratio = new_logprob - self.logprobs[idx]
            ratio = log_ratio.exp()
            self.ratio[idx] = ratio.detach()
            mask = self.masks[idx]
            count = mask.sum().clamp(min=1)
            if c['norm_adv']:
                mean = (mb_adv * mask).sum() / count
                std = (((mb_adv - mean) ** 2 * mask).sum() / count).sqrt()
                mb_adv = (mb_adv - mean) / (std + 1e-8)
            mb_adv = weights * mb_adv

            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - c['clip_coef'], 1 + c['clip_coef']))
            old_values = self.values[idx]
            clipped = old_values + (new_values - old_values).clamp(-c['vf_clip_coef'], c['vf_clip_coef'])
            v_loss = 0.5 * torch.max((new_values - returns) ** 2, (clipped - returns) ** 2)
            pg_loss = (pg_loss * mask).sum() / count
            v_loss = (v_loss * mask).sum() / count
            entropy_mean = (entropy * mask).sum() / count
            loss = pg_loss + c['vf_coef'] * v_loss - c['ent_coef'] * entropy_mean
            self.profile.lap('update_forward')

            for optimizer in self.optimizers:
                optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.profile.lap('backward')
            grad_norm = torch.nn.utils.clip_grad_norm_(params, c['max_grad_norm'])
            # One check (one device sync) per minibatch, before the step: the weights stay finite.
            if not bool(torch.isfinite(torch.stack([loss.detach().float(), grad_norm.float()])).all()):
                raise NonFiniteError(
                    f'the loss became non-finite in the update of epoch {self.epoch + 1} (global step '
                    f'{self.global_step:,}): policy_loss {pg_loss.item():.4g}, value_loss {v_loss.item():.4g}, '
                    f'entropy {entropy_mean.item():.4g}, gradient norm {grad_norm.item():.4g}. The weights were '
                    'not stepped; lower train.learning_rate or train.max_grad_norm')
            for optimizer in self.optimizers:
                optimizer.step()
            self.profile.lap('optimizer')

            with torch.no_grad():
                stats = {'policy_loss': pg_loss.item(), 'value_loss': v_loss.item(), 'entropy': entropy_mean.item(),
                         'approx_kl': ((ratio - 1) - log_ratio).mean().item(),
                         'clipfrac': ((ratio - 1).abs() > c['clip_coef']).float().mean().item()}
            for key, value in stats.items():
                totals[key] = totals.get(key, 0.0) + value
            self.profile.lap('stats')
        for scheduler in self.schedulers:
            scheduler.step()
        self.profile.lap('optimizer')
        self.epoch += 1
        self.boundary_step, self.boundary_rng = self.global_step, torch.get_rng_state()
        n = max(1, minibatches)
        self.losses = {key: value / n for key, value in totals.items()}
        self.losses['learning_rate'] = self.optimizers[0].param_groups[0]['lr']
        return self.losses

    # --- checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        return {'policy': self.policy.state_dict(), 'optimizers': [o.state_dict() for o in self.optimizers],
                'schedulers': [s.state_dict() for s in self.schedulers], 'global_step': self.boundary_step,
                'epoch': self.epoch, 'env': self.env_name, 'torch_rng': self.boundary_rng}

    def load_state_dict(self, state: dict, path: str = 'checkpoint') -> None:
        try:
            self.policy.load_state_dict(state['policy'])
            for optimizer, saved in zip(self.optimizers, state['optimizers'], strict=True):
                optimizer.load_state_dict(saved)
            for scheduler, saved in zip(self.schedulers, state['schedulers'], strict=True):
                scheduler.load_state_dict(saved)
        except (RuntimeError, ValueError, KeyError) as e:
            raise CheckpointError(f'{path} does not fit this run (env {state.get("env")!r}): '
                                  f'{str(e).splitlines()[0]}') from None
        self.global_step, self.epoch = int(state['global_step']), int(state['epoch'])
        self.boundary_step = self.global_step
        if 'torch_rng' in state:
            torch.set_rng_state(state['torch_rng'])
        self.boundary_rng = torch.get_rng_state()

    def save(self, run_dir: str) -> str:
        folder = os.path.join(run_dir, 'checkpoints')
        path = os.path.join(folder, f'epoch-{self.epoch:07d}.pt')
        if not all(bool(torch.isfinite(p).all()) for p in self.policy.parameters()):
            raise NonFiniteError(f'the weights became non-finite by the end of epoch {self.epoch}, so they were not '
                                 'saved (lower train.learning_rate or train.max_grad_norm)')
        state = self.state_dict()
        try:
            atomic_write(path, lambda f: torch.save(state, f))
            old = sorted(n for n in os.listdir(folder) if n.startswith('epoch-') and n.endswith('.pt'))
            for name in old[:-self.train_config['keep_checkpoints']]:  # only once the new one is safe
                os.remove(os.path.join(folder, name))
        except OSError as e:
            raise write_failure('the checkpoint', path, e) from None
        return path

    def episode_stats(self) -> dict:
        """Means of the numeric episode statistics since the last call, and `episodes`: how many ended.

        The count lets a reader weigh a row's means (a mean of 2 episodes is not one of 200) and pool
        rows into "the last N episodes". Each info is one episode (emulation) or, where it carries
        `n`, the summary of n episodes (Ocean's logs).
        """
        infos, self.episode_infos = self.episode_infos, []
        sums, counts = {}, {}
        for info in infos:
            for key, value in info.items():
                if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                    sums[key] = sums.get(key, 0.0) + float(value)
                    counts[key] = counts.get(key, 0) + 1
        stats = {key: sums[key] / counts[key] for key in sums}
        if infos:
            stats['episodes'] = int(round(sum(float(info.get('n', 1)) for info in infos)))
        return stats

    def close(self):
        self.vecenv.close()


def _listing(values, limit=8):
    shown = ', '.join(str(v) for v in values[:limit])
    return shown + (f' and {len(values) - limit} more' if len(values) > limit else '')


# ---------------------------------------------------------------------------------------------
# The whole job: set up, resume, loop, shut down
# ---------------------------------------------------------------------------------------------

class Distributed:
    """torchrun's data parallelism as seen by one process; one process alone when WORLD_SIZE is unset.

    Only the leader (rank 0) writes the run directory, the metrics and the checkpoints."""

    def __init__(self):
        self.world_size = int(os.environ.get('WORLD_SIZE', '1'))
        self.rank = int(os.environ.get('RANK', '0'))
        self.enabled = self.world_size > 1
        self.leader = self.rank == 0
        if self.enabled:
            torch.distributed.init_process_group('nccl' if torch.cuda.is_available() else 'gloo')

    def device(self, device):
        if self.enabled and device.type == 'cuda':
            device = torch.device('cuda', int(os.environ.get('LOCAL_RANK', '0')))
            torch.cuda.set_device(device)
        return device

    def close(self):
        if self.enabled:
            torch.distributed.destroy_process_group()


class Job:
    """What one training run holds between its steps (see `train`)."""

    def __init__(self, env_name, config, trainer, run_dir, checkpoint, resumed, dist, lock):
        self.env_name, self.config, self.trainer, self.run_dir = env_name, config, trainer, run_dir
        self.checkpoint, self.resumed, self.dist, self.lock = checkpoint, resumed, dist, lock
        self.summary = {'run_dir': run_dir, 'env': env_name}
        self.interrupted = None  # 'SIGINT', 'SIGTERM' or 'on_log' once something asked the run to stop


# The signals that stop a run at the end of its epoch, and the exit status of `puffer train` then.
STOP_SIGNALS = {'SIGINT': 128 + signal.SIGINT, 'SIGTERM': 128 + signal.SIGTERM}


class StoppedAtOnce(KeyboardInterrupt):
    """A second Ctrl-C (or SIGTERM) stopped training in the middle of an epoch, without a checkpoint."""

    def __init__(self, message: str, exit_code: int = STOP_SIGNALS['SIGINT']):
        super().__init__(message)
        self.exit_code = exit_code


def train(env: str | Callable | None, config: dict | None = None, flags: Sequence[str] = (), resume: str | None = None,
          run_dir: str | None = None, printer: Callable | None = None, quiet: bool = False,
          on_log: Callable[[dict], bool | None] | None = None) -> dict:
    """Train on `env` (a name, or a creator with `config` given); return a summary dict.

    `on_log(row)` sees every metrics row; returning True stops training after that epoch (with a
    checkpoint), e.g. once a target score or a time budget is reached. Ctrl-C and SIGTERM do the same
    (summary['interrupted'] names the signal); a second one raises StoppedAtOnce.

    With `resume` (latest, a run id or a run directory; see pufferlib.rundir for "latest"), the run
    directory's saved config is used (flags may still override it) and training continues from its
    latest checkpoint: same step count, optimizer and scheduler state.
    """
    dist = Distributed()
    job = None
    try:
        job = set_up(env, config, flags, resume, run_dir, dist)
        resume_from_checkpoint(job)
        loop(job, printer=printer, quiet=quiet, on_log=on_log)
        save_if_stopped_early(job)
    finally:
        shut_down(job, dist)
    job.summary.update(global_step=job.trainer.boundary_step, epoch=job.trainer.epoch, interrupted=job.interrupted)
    return job.summary


def set_up(env, config, flags, resume, run_dir, dist):
    """The run directory (claimed, see `rundir.claim`), the config (saved, given or loaded), seeds,
    device, vector env, policy and trainer."""
    if resume:
        run_dir = rundir.find_run(resume, env if isinstance(env, str) else None)
    elif run_dir is None:
        rundir.experiments_dir()  # a PUFFER_EXPERIMENTS that names a file fails before any worker starts
    # An existing run directory is claimed before anything else: a second `--resume` fails at once.
    lock = rundir.claim(run_dir) if dist.leader and run_dir is not None else None
    try:
        env, env_name, config = resolve_config(env, config, flags, run_dir if resume else None)
        trainer = make_trainer(env, env_name, config, dist)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    try:
        if dist.leader and run_dir is None:
            run_dir = rundir.new_run_dir(env_name)
            lock = rundir.claim(run_dir)
        if dist.leader and not resume:
            text = f'[_meta]\nenv = "{env_name}"\n\n' + configuration.to_toml(config)
            path = os.path.join(run_dir, 'config.toml')
            try:
                atomic_write(path, lambda f: f.write(text.encode()))
            except OSError as e:
                raise write_failure('the config', path, e) from None
    except BaseException:
        trainer.close()
        if lock is not None:
            lock.release()
        raise
    checkpoint = latest_checkpoint(run_dir) if resume else None
    return Job(env_name, config, trainer, run_dir, checkpoint, bool(resume), dist, lock)


def resolve_config(env, config, flags, resume_dir):
    """(env, env name, validated config): the run's saved config when resuming, else the given or loaded one."""
    env_name = env if isinstance(env, str) else getattr(env, '__name__', 'custom')
    if resume_dir:
        saved = configuration.read(os.path.join(resume_dir, 'config.toml'))
        env_name = saved.pop('_meta', {}).get('env', env_name)
        if env is None or isinstance(env, str):
            env = env_name
        config = configuration.parse_flags(list(flags), configuration.merge(configuration.defaults(), saved,
                                                                            'saved config'))
    elif config is None:
        config = configuration.load(env_name if isinstance(env, str) else None, flags)
    configuration.validate(config)
    return env, env_name, config


def make_trainer(env, env_name, config, dist):
    train_config = config['train']
    torch.manual_seed(train_config['seed'] + dist.rank)
    np.random.seed(train_config['seed'] + dist.rank)
    device = dist.device(resolve_device(train_config['device']))
    vecenv = make_vecenv(env, config, seed_offset=1000 * dist.rank)
    torch.set_num_threads(torch_threads(train_config['torch_threads'], vecenv))
    try:
        policy = make_policy(vecenv, config)
        return Trainer(config, vecenv, policy, device=device, distributed=dist.enabled, env_name=env_name)
    except BaseException:
        vecenv.close()
        raise


def resume_from_checkpoint(job):
    """The checkpoint's state, and metrics.jsonl cut back to its step (the rows after it are trained again)."""
    if job.checkpoint is not None:
        job.trainer.load_state_dict(load_checkpoint(job.checkpoint), job.checkpoint)
    if job.dist.leader:
        rundir.trim_metrics(job.run_dir, job.trainer.global_step)


@contextlib.contextmanager
def stop_signals(job):
    """Ctrl-C and SIGTERM ask the run to stop at the end of the epoch (`job.interrupted`); a second one
    raises StoppedAtOnce wherever the run is. Signal handlers belong to the main thread: elsewhere
    this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum, frame):
        name = signal.Signals(signum).name
        if job.interrupted in STOP_SIGNALS:
            raise StoppedAtOnce(name, STOP_SIGNALS[name])
        job.interrupted = name
        what = 'Ctrl-C' if name == 'SIGINT' else name
        # os.write, not print: a handler may run in the middle of a print to the same stream.
        os.write(2, f'\npuffer train: {what}: stopping at the end of this epoch with a checkpoint '
                    '(Ctrl-C again stops at once)\n'.encode())
    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def loop(job, printer=None, quiet=False, on_log=None):
    """Rollout and update until the step budget, a signal or `on_log` stops it; checkpoints and metrics
    rows as configured. Every way it can fail says where the last good checkpoint is."""
    from pufferlib.dashboard import Dashboard
    trainer, train_config, leader = job.trainer, job.config['train'], job.dist.leader
    dashboard = Dashboard(job.env_name, trainer, job.run_dir, printer=printer, quiet=quiet or not leader)
    metrics = None
    last_log, start_step, start = 0.0, trainer.global_step, time.time()
    trainer.profile.start(trainer.global_step)
    try:
        with stop_signals(job) if leader else contextlib.nullcontext(), dashboard:
            metrics = Metrics(job.run_dir, job.config, job.resumed) if leader else None
            while trainer.epoch < trainer.total_epochs and job.interrupted is None:
                rollout_start = time.time()
                trainer.rollout()
                update_start = time.time()
                losses = trainer.update()
                done = time.time()
                is_last = trainer.epoch >= trainer.total_epochs
                if leader and (trainer.epoch % train_config['checkpoint_interval'] == 0 or is_last):
                    job.summary['checkpoint'] = trainer.save(job.run_dir)
                trainer.profile.lap('checkpoint')
                if leader and (done - last_log >= train_config['log_interval'] or is_last):
                    last_log = done
                    episodes = {f'env/{k}': v for k, v in trainer.episode_stats().items()}
                    trainer.profile.lap('stats')
                    if episodes:
                        job.summary['episodes'] = episodes  # the latest; some log rows have none
                    row = {'global_step': trainer.global_step, 'epoch': trainer.epoch,
                           'sps': (trainer.global_step - start_step) / max(done - start, 1e-9),
                           'rollout_s': update_start - rollout_start, 'train_s': done - update_start,
                           'elapsed_s': done - start, **losses, **episodes}
                    metrics.write(row)
                    dashboard.update(row)
                    job.summary['last'] = row
                    if on_log is not None and on_log(row):
                        job.interrupted = 'on_log'
                trainer.profile.lap('logging')
                trainer.profile.end_epoch(trainer.global_step)
        if leader and trainer.profile.enabled:
            job.summary['profile'] = trainer.profile.report(job.run_dir, time.time() - start, job.env_name, quiet)
    except EnvError as e:
        if job.interrupted in STOP_SIGNALS:
            return  # the signal reached the env workers too (`kill -TERM -PGID`): a stop, not an env crash
        if leader:
            print(f'\npuffer train: an environment failed, so training stopped.\n{e}\n\n'
                  f'{last_checkpoint(job, save=True)} once the env is fixed.', file=sys.stderr)
        raise
    except NonFiniteError as e:
        if not leader:
            raise
        # From the env, the weights never saw the bad numbers: the epoch boundary is a good checkpoint.
        # Otherwise (the loss, the weights), the newest checkpoint on disk is the last good one.
        raise NonFiniteError(f'{e}. {last_checkpoint(job, save=e.weights_ok)}') from None
    except RunDirError as e:
        if not leader:
            raise
        # A last checkpoint where space allows, unless writing the checkpoint is what just failed.
        retry = getattr(e, 'what', None) != 'the checkpoint'
        raise RunDirError(f'{e}. {last_checkpoint(job, save=retry)}') from None
    except KeyboardInterrupt as e:  # a second Ctrl-C or SIGTERM (StoppedAtOnce), or one in set-up
        name = str(e) if str(e) in STOP_SIGNALS else 'SIGINT'
        what = 'a second Ctrl-C' if name == 'SIGINT' else f'a second {name}'
        raise StoppedAtOnce(f'stopped at once by {what}, in the middle of epoch {trainer.epoch + 1}. '
                            f'{last_checkpoint(job, save=False)}', STOP_SIGNALS[name]) from None
    finally:
        if metrics is not None:
            metrics.close()


def last_checkpoint(job, save):
    """A sentence for error messages: the checkpoint of the last finished epoch, saved now when `save`
    (and the disk allows), else the newest one on disk; and how to resume from it."""
    failed, resume = '', f'resume with `puffer train --resume {job.run_dir}`'
    if save and job.trainer.epoch > 0:
        try:
            path = job.trainer.save(job.run_dir)
            job.summary['checkpoint'] = path
            return f'The last checkpoint is {path}, saved now at the end of epoch {job.trainer.epoch}; {resume}'
        except (RunDirError, NonFiniteError) as e:
            failed = f'A last checkpoint could not be saved ({e}). '
    path = latest_checkpoint(job.run_dir) if job.run_dir else None
    if path is None:
        return (f'{failed}No checkpoint was written yet in {job.run_dir} (one every train.checkpoint_interval '
                'epochs)')
    return f'{failed}The last checkpoint is {path}; {resume}'


def save_if_stopped_early(job):
    """A run stopped by a signal or by `on_log` keeps the epoch it finished."""
    if job.interrupted and job.dist.leader:
        try:
            job.summary['checkpoint'] = job.trainer.save(job.run_dir)
        except RunDirError as e:
            raise RunDirError(f'{e}; training was stopping ({job.interrupted}). '
                              f'{last_checkpoint(job, save=False)}') from None


def shut_down(job, dist):
    """Close the vector env (its workers), release the run directory and leave the process group,
    whatever happened before."""
    try:
        if job is not None:
            job.trainer.close()
    finally:
        if job is not None and job.lock is not None:
            job.lock.release()
        dist.close()
