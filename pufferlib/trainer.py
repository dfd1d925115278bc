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

Runs live in `experiments/<run_id>/`: config.toml, metrics.jsonl and checkpoints/ (atomic writes).
"""
import contextlib
import datetime
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

import pufferlib.vector
from pufferlib import config as configuration
from pufferlib import registry
from pufferlib.advantage import compute_advantage
from pufferlib.models import sample_logits
from pufferlib.profile import Profile
from pufferlib.pufferenv import EnvError, PufferError


class CheckpointError(PufferError, RuntimeError):
    """A checkpoint is missing, corrupt, or belongs to another env or policy."""


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
    parallel regions then waits for a thread whose core a worker holds. On 2 shared cores with 2
    workers, breakout trained 3-30x faster with one thread than with two, in every round, and the
    gap grew with the machine's load (docs/benchmarks.md, "Where the time goes";
    scripts/bench_profile.py). Serial envs step in this process, between the policy's calls, so
    they leave every core to torch."""
    if setting > 0:
        return setting
    workers = 0 if isinstance(vecenv, pufferlib.vector.Serial) else \
        vecenv.num_workers - (1 if getattr(vecenv, 'local_worker', False) else 0)
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
    return pufferlib.vector.make(env, backend=vec['backend'], num_envs=num_envs, num_workers=num_workers,
                                 batch_size=vec['batch_size'] or None, zero_copy=vec['zero_copy'],
                                 seed=config['train']['seed'] + seed_offset, env_kwargs=dict(config['env']),
                                 **options)


def make_policy(vecenv, config: dict) -> torch.nn.Module:
    policy_config = dict(config['policy'])
    cls = configuration.import_class(policy_config.pop('class'), 'policy.class')
    try:
        policy = cls(vecenv, **policy_config)
    except TypeError as e:
        raise configuration.ConfigError(f'policy {cls.__name__} rejected its [policy] options: {e}') from None
    rnn = dict(config['rnn'])
    rnn_path = rnn.pop('class')
    if rnn_path:
        wrapper = configuration.import_class(rnn_path, 'rnn.class')
        policy = wrapper(vecenv, policy, **rnn)
    return policy


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
# Run directories, metrics and checkpoints
# ---------------------------------------------------------------------------------------------

def new_run_dir(env_name: str) -> str:
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    base = os.path.join(registry.experiments_dir(), f'{env_name}-{stamp}')
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = f'{base}-{n}'
    os.makedirs(os.path.join(path, 'checkpoints'))
    return path


def atomic_write(path: str, write: Callable) -> None:
    """Write through a temporary file and rename it over `path`: a crash never leaves half a file."""
    tmp = f'{path}.tmp-{os.getpid()}'
    with open(tmp, 'wb') as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def latest_checkpoint(run_dir: str) -> str | None:
    folder = os.path.join(run_dir, 'checkpoints')
    names = sorted(n for n in os.listdir(folder) if n.startswith('epoch-') and n.endswith('.pt')) \
        if os.path.isdir(folder) else []
    return os.path.join(folder, names[-1]) if names else None


def load_checkpoint(path: str, policy: torch.nn.Module | None = None) -> dict:
    """Load a checkpoint with weights_only=True; check it fits `policy` when one is given."""
    if not os.path.exists(path):
        raise CheckpointError(f'checkpoint {path} does not exist')
    try:
        state = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as e:  # torch raises several types for truncated or foreign files
        raise CheckpointError(f'checkpoint {path} is corrupt or not a pufferlib checkpoint ({type(e).__name__}: '
                              f'{str(e).splitlines()[0] if str(e) else ""}); use an earlier one from its '
                              'checkpoints/ folder') from None
    if not isinstance(state, dict) or 'policy' not in state:
        raise CheckpointError(f'checkpoint {path} is not a pufferlib checkpoint (no policy weights)')
    if policy is not None:
        try:
            policy.load_state_dict(state['policy'])
        except RuntimeError as e:
            raise CheckpointError(f'checkpoint {path} does not fit this policy (env {state.get("env")!r}): '
                                  f'{str(e).splitlines()[0]}') from None
    return state


class Metrics:
    """metrics.jsonl in the run directory, plus wandb when enabled."""

    def __init__(self, run_dir, config, resume):
        self.path = os.path.join(run_dir, 'metrics.jsonl')
        self.file = open(self.path, 'a')
        self.wandb = None
        if config['wandb']['enabled']:
            self.wandb = start_wandb(run_dir, config, resume)

    def write(self, row):
        self.file.write(json.dumps(row) + '\n')
        self.file.flush()
        if self.wandb is not None:
            self.wandb.log(row, step=row['global_step'])

    def close(self):
        self.file.close()
        if self.wandb is not None:
            self.wandb.finish()


def start_wandb(run_dir, config, resume):
    try:
        import wandb
    except ImportError:
        raise configuration.ConfigError('wandb.enabled needs wandb: pip install "pufferlib[wandb]"') from None
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
        self.total_epochs = max(1, math.ceil(train['total_timesteps'] / self.batch_size))

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
        for obs, ids, masks in held:
            self._act(obs, ids, masks)
        blocks = vecenv.num_agents // vecenv.agents_per_batch
        while len(self.held) < blocks:
            obs, rewards, terminals, truncations, infos, ids, masks = vecenv.recv()
            self.profile.lap('env')
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
            self.profile.lap('copy')
            if t == self.horizon:
                self.last_values[rows] = self._value(obs, rows)
                self.profile.lap('rollout_forward')
                self.held.append((obs, ids, masks))
                self.step_of_row[rows] = 0  # its next action starts the next segment
                continue
            self._act(obs, ids, masks)

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

    def _act(self, obs, ids, masks=None):
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
        action, logprob, _ = sample_logits(logits)
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
            _, new_logprob, entropy = sample_logits(logits, actions)
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
            torch.nn.utils.clip_grad_norm_(params, c['max_grad_norm'])
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
        n = max(1, minibatches)
        self.losses = {key: value / n for key, value in totals.items()}
        self.losses['learning_rate'] = self.optimizers[0].param_groups[0]['lr']
        return self.losses

    # --- checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        return {'policy': self.policy.state_dict(), 'optimizers': [o.state_dict() for o in self.optimizers],
                'schedulers': [s.state_dict() for s in self.schedulers], 'global_step': self.global_step,
                'epoch': self.epoch, 'env': self.env_name,
                'torch_rng': torch.get_rng_state()}

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
        if 'torch_rng' in state:
            torch.set_rng_state(state['torch_rng'])

    def save(self, run_dir: str) -> str:
        folder = os.path.join(run_dir, 'checkpoints')
        path = os.path.join(folder, f'epoch-{self.epoch:07d}.pt')
        state = self.state_dict()
        atomic_write(path, lambda f: torch.save(state, f))
        old = sorted(n for n in os.listdir(folder) if n.startswith('epoch-') and n.endswith('.pt'))
        for name in old[:-self.train_config['keep_checkpoints']]:
            os.remove(os.path.join(folder, name))
        return path

    def episode_stats(self) -> dict:
        """Means of the numeric episode statistics since the last call."""
        infos, self.episode_infos = self.episode_infos, []
        sums, counts = {}, {}
        for info in infos:
            for key, value in info.items():
                if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                    sums[key] = sums.get(key, 0.0) + float(value)
                    counts[key] = counts.get(key, 0) + 1
        return {key: sums[key] / counts[key] for key in sums}

    def close(self):
        self.vecenv.close()


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

    def __init__(self, env_name, config, trainer, run_dir, checkpoint, resumed, dist):
        self.env_name, self.config, self.trainer, self.run_dir = env_name, config, trainer, run_dir
        self.checkpoint, self.resumed, self.dist = checkpoint, resumed, dist
        self.summary = {'run_dir': run_dir, 'env': env_name}
        self.interrupted = None


def train(env: str | Callable | None, config: dict | None = None, flags: Sequence[str] = (), resume: str | None = None,
          run_dir: str | None = None, printer: Callable | None = None, quiet: bool = False,
          on_log: Callable[[dict], bool | None] | None = None) -> dict:
    """Train on `env` (a name, or a creator with `config` given); return a summary dict.

    `on_log(row)` sees every metrics row; returning True stops training after that epoch (with a
    checkpoint), e.g. once a target score or a time budget is reached.

    With `resume` (latest, a run id or a run directory; see pufferlib.registry for "latest"), the run
    directory's saved config is used (flags may still override it) and training continues from its
    latest checkpoint: same step count, optimizer and scheduler state.
    """
    dist = Distributed()
    job = None
    try:
        job = set_up(env, config, flags, resume, run_dir, dist)
        resume_from_checkpoint(job)
        loop(job, printer=printer, quiet=quiet, on_log=on_log)
    finally:
        shut_down(job, dist)
    if job.interrupted and dist.leader:
        job.summary['checkpoint'] = job.trainer.save(job.run_dir)
    job.summary.update(global_step=job.trainer.global_step, epoch=job.trainer.epoch, interrupted=job.interrupted)
    return job.summary


def set_up(env, config, flags, resume, run_dir, dist):
    """The config (saved, given or loaded), seeds, device, vector env, policy, trainer and run directory."""
    env_name = env if isinstance(env, str) else getattr(env, '__name__', 'custom')
    checkpoint = None
    if resume:
        run_dir = registry.find_run(resume, env if isinstance(env, str) else None)
        saved = configuration.read(os.path.join(run_dir, 'config.toml'))
        env_name = saved.pop('_meta', {}).get('env', env_name)
        if env is None or isinstance(env, str):
            env = env_name
        config = configuration.parse_flags(list(flags), configuration.merge(configuration.defaults(), saved,
                                                                            'saved config'))
        checkpoint = latest_checkpoint(run_dir)
    elif config is None:
        config = configuration.load(env_name if isinstance(env, str) else None, flags)
    configuration.validate(config)

    train_config = config['train']
    torch.manual_seed(train_config['seed'] + dist.rank)
    np.random.seed(train_config['seed'] + dist.rank)
    device = dist.device(resolve_device(train_config['device']))
    vecenv = make_vecenv(env, config, seed_offset=1000 * dist.rank)
    torch.set_num_threads(torch_threads(train_config['torch_threads'], vecenv))
    try:
        policy = make_policy(vecenv, config)
        trainer = Trainer(config, vecenv, policy, device=device, distributed=dist.enabled, env_name=env_name)
    except BaseException:
        vecenv.close()
        raise
    try:
        if dist.leader and run_dir is None:
            run_dir = new_run_dir(env_name)
        if dist.leader and not resume:
            text = f'[_meta]\nenv = "{env_name}"\n\n' + configuration.to_toml(config)
            atomic_write(os.path.join(run_dir, 'config.toml'), lambda f: f.write(text.encode()))
    except BaseException:
        trainer.close()
        raise
    return Job(env_name, config, trainer, run_dir, checkpoint, bool(resume), dist)


def resume_from_checkpoint(job):
    if job.checkpoint is not None:
        job.trainer.load_state_dict(load_checkpoint(job.checkpoint), job.checkpoint)


def loop(job, printer=None, quiet=False, on_log=None):
    """Rollout and update until the step budget, a SIGTERM or `on_log` stops it; checkpoints and
    metrics rows as configured. An env failure saves a checkpoint and says how to resume."""
    from pufferlib.dashboard import Dashboard
    trainer, train_config, leader = job.trainer, job.config['train'], job.dist.leader
    dashboard = Dashboard(job.env_name, trainer, job.run_dir, printer=printer, quiet=quiet or not leader)
    metrics = Metrics(job.run_dir, job.config, job.resumed) if leader else None
    last_log, start_step, start = 0.0, trainer.global_step, time.time()
    trainer.profile.start(trainer.global_step)

    def stop(signum, frame):
        job.interrupted = signal.Signals(signum).name
    previous = signal.signal(signal.SIGTERM, stop) if leader else None
    try:
        with dashboard:
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
        if leader:
            path = trainer.save(job.run_dir)
            job.summary['checkpoint'] = path
            print(f'\npuffer train: an environment failed, so training stopped.\n{e}\n\nThe last checkpoint '
                  f'is {path}; resume with `puffer train --resume {job.run_dir}` once the env is fixed.',
                  file=sys.stderr)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if metrics is not None:
            metrics.close()


def shut_down(job, dist):
    """Close the vector env (its workers) and leave the process group, whatever happened before."""
    try:
        if job is not None:
            job.trainer.close()
    finally:
        dist.close()
