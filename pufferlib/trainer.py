"""PPO with the puffer advantage, prioritized segment replay and Muon. Reads top to bottom.

    trainer = Trainer(config, vecenv, pufferlib.models.make_policy(vecenv, config))   # any vector env
    while trainer.epoch < trainer.total_epochs:
        trainer.rollout()
        losses = trainer.update()
    trainer.save(run_dir)

The file, in order:
- (PPO's loss itself, the one description of it, is pufferlib/loss.py's `ppo_loss`: the autograd update
  here and the NumPy update of pufferlib/numpy_policy.py both compute it through the same lines.)
- optimizers and schedules (`make_optimizers`, the one flat gradient buffer).
- the minibatch samplers, one chosen in `Trainer.__init__` by `train.minibatch_sampling`:
  `SegmentSampler` ('segments', the default): whole segments, advantages (GAE generalised with V-trace
  importance clipping, pufferlib.advantage) recomputed before every minibatch with the latest ratios,
  drawn with probability proportional to (sum |A|)^alpha with importance weights (N P)^-beta, beta
  annealed to 1. `StepSampler` ('steps', feed-forward policies): PPO's original recipe, as in CleanRL:
  plain GAE once (or before every epoch with `train.recompute_advantages`), every epoch a shuffle of all
  single steps cut into minibatches.
- `Trainer`: a pufferlib.rollout.Rollout (the buffers [segments, horizon] and `rollout()`, which fills
  them; also `check_rollout` and `rollout_bytes`) that learns from it: set-up (`__init__`, `_make_optimization`),
  the update (`update`, `_gradients`, `_minibatch_loss`, `_evaluate`), checkpoints (`state_dict`, `save`, ...).

One epoch = one rollout + one update. For each minibatch of the sampler the update computes the policy's
log-probabilities, entropy and values, `ppo_loss`, its gradients (autograd, or `torch.compile` of the forward
and loss with `train.compile`), gradient-norm clipping and the optimizer's step. Muon for 2-D weights with
AdamW for the rest (or Adam alone), cosine (or linear) learning-rate annealing. On a CPU, a policy that
offers `numpy_model()` (MuJoCo's MLPs) takes its rollout steps and its gradients from
pufferlib/numpy_policy.py (`train.numpy_policy`): NumPy measured 1.5x as fast as compiled torch on that
update (scripts/lab/results/numpy.md).

A Trainer holds no run directory of its own: `save(run_dir)` writes a checkpoint into the one it is
given. The job around it (validation, run directory, resume, signals, torchrun, metrics, wandb):
pufferlib.train.
"""
import functools
import io
import math
import os
import tomllib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import threadpoolctl
import torch

from pufferlib import config as configuration
from pufferlib import cpus
from pufferlib.advantage import compute_advantage
from pufferlib.explore import Explorer, make_explorer
# The rollout's names stay importable from here, where the run job and the league import them.
from pufferlib.rollout import (NonFiniteError, RecurrentPolicy, Rollout, TrainerEnv,  # noqa: F401
                               check_rollout, rollout_bytes)
from pufferlib.rundir import CheckpointError, atomic_write, write_failure

from pufferlib.loss import ppo_loss

if TYPE_CHECKING:  # imported where a trainer takes the NumPy path
    from pufferlib.numpy_policy import NumpyPolicy, NumpyUpdate


def flat_gradients(params: list[torch.nn.Parameter]) -> torch.Tensor | None:
    """One zeroed buffer for the parameters' gradients (see attach_gradients), so that the update zeroes and
    clips them with one op each (torch's clip_grad_norm_ and zero_grad are a twentieth of MuJoCo's update on
    one core). None where the parameters differ in device or dtype. A parameter the loss does not reach
    now has a zero gradient rather than None; Adam (no weight decay, the only optimizer given this buffer)
    leaves such a parameter where it is."""
    if not params or len({(p.device, p.dtype) for p in params}) > 1:
        return None
    return torch.zeros(sum(p.numel() for p in params), device=params[0].device, dtype=params[0].dtype)


def attach_gradients(params: list[torch.nn.Parameter], flat: torch.Tensor) -> None:
    """Make each parameter's .grad its view of `flat` again (backward adds into a .grad in place), where
    something set it to None or replaced it (a zero_grad outside the trainer)."""
    offset = 0
    for p in params:
        if p.grad is None or p.grad.data_ptr() != flat[offset:].data_ptr():
            p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()


def make_optimizers(params: list[torch.nn.Parameter], train: dict) -> list[torch.optim.Optimizer]:
    """Muon for the 2-D weight matrices, AdamW for everything else; or Adam for all."""
    betas, eps = (train['adam_beta1'], train['adam_beta2']), train['adam_eps']
    # The fused kernel does a whole Adam step in one call: on a CPU a tiny MLP's step falls from about
    # 350 to 85 us, which is a fifth of an update at minibatch 64 (MuJoCo's recipe).
    fused = all(p.device.type in ('cpu', 'cuda') and p.dtype in (torch.float32, torch.float64) for p in params)
    if train['optimizer'] == 'adam':
        return [torch.optim.Adam(params, lr=train['learning_rate'], betas=betas, eps=eps, fused=fused)]
    matrices = [p for p in params if p.ndim == 2]
    others = [p for p in params if p.ndim != 2]
    # match_rms_adamw scales Muon's step to AdamW's update size, so one learning rate serves both.
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.Muon(matrices, lr=train['learning_rate'], weight_decay=train['weight_decay'],
                         adjust_lr_fn='match_rms_adamw')]
    if others:
        optimizers.append(torch.optim.AdamW(others, lr=train['learning_rate'], betas=betas, eps=eps,
                                            weight_decay=train['weight_decay'], fused=fused))
    return optimizers


def make_scheduler(optimizer: torch.optim.Optimizer, shape: str, epochs: int) -> torch.optim.lr_scheduler.LRScheduler:
    """The learning rate from train.learning_rate to 0 over the run's epochs: a cosine (the default), or a
    straight line (epoch k trains at (1 - k / epochs) of it, as CleanRL's PPO anneals)."""
    if shape == 'linear':
        return torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=epochs)
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=0.0)


def scheduler_length(scheduler: torch.optim.lr_scheduler.LRScheduler) -> int:
    """The number of epochs a schedule of make_scheduler spans."""
    if isinstance(scheduler, torch.optim.lr_scheduler.LinearLR):
        return scheduler.total_iters
    assert isinstance(scheduler, torch.optim.lr_scheduler.CosineAnnealingLR)
    return scheduler.T_max


# ---------------------------------------------------------------------------------------------
# Minibatch samplers: one is chosen in Trainer.__init__ (train.minibatch_sampling)
# ---------------------------------------------------------------------------------------------

class Minibatch(NamedTuple):
    idx: torch.Tensor  # the sampler's indices: segments, or flat steps
    advantages: torch.Tensor  # over the whole rollout, indexed by the sampler's `take`
    weights: torch.Tensor | None  # importance weights of prioritised sampling, [m, 1]


class SegmentSampler:
    """'segments': minibatches of whole segments, advantages recomputed before each with the latest
    importance ratios (V-trace), segments with more to learn (larger summed |A|) drawn more often; the
    importance weights (N P)^-beta undo that bias, wholly once beta reaches 1 at the end of training."""

    records_ratio = True  # the next minibatches' advantages clip with the ratios of this one

    def __init__(self, trainer: 'Trainer') -> None:
        self.trainer = trainer
        self.per_minibatch = trainer.train_config['minibatch_size'] // trainer.horizon

    def take(self, buffer: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return buffer[idx]  # [m, horizon, ...]

    def lead(self, idx: torch.Tensor) -> tuple[int, ...]:
        return (len(idx), self.trainer.horizon)

    def minibatches(self, count: int, per_epoch: int) -> Iterator[Minibatch]:
        t, c = self.trainer, self.trainer.train_config
        beta = c['prio_beta0'] + (1 - c['prio_beta0']) * t.epoch / t.total_epochs
        for _ in range(count):
            advantages = t.advantages()
            priority = advantages.abs().sum(1).pow(c['prio_alpha']) + 1e-8 if c['prio_alpha'] > 0 \
                else torch.ones(t.segments, device=t.device)
            probs = priority / priority.sum()
            idx = torch.multinomial(probs, self.per_minibatch, replacement=True)
            weights = (t.segments * probs[idx]).pow(-beta)
            yield Minibatch(idx, advantages, (weights / weights.max()).unsqueeze(1))


class StepSampler:
    """'steps' (feed-forward policies): PPO's original recipe, as in CleanRL. GAE once a rollout (every
    ratio is 1), then every epoch a fresh shuffle of all steps cut into minibatches (steps past the last
    whole minibatch wait). Small minibatches of single steps are far less correlated than a few segments
    of consecutive ones, which is what MuJoCo's minibatches of 64 need."""

    records_ratio = False

    def __init__(self, trainer: 'Trainer') -> None:
        if trainer.recurrent:
            raise configuration.ConfigError(
                'train.minibatch_sampling="steps" needs a feed-forward policy: a recurrent one replays whole '
                'segments from their first memory; use "segments" or leave rnn.class empty')
        self.trainer = trainer

    def take(self, buffer: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return buffer.flatten(0, 1)[idx]  # [m, ...]

    def lead(self, idx: torch.Tensor) -> tuple[int, ...]:
        return tuple(idx.shape)

    def minibatches(self, count: int, per_epoch: int) -> Iterator[Minibatch]:
        t, size = self.trainer, self.trainer.train_config['minibatch_size']
        advantages = t.advantages().flatten()
        for epoch in range(count // per_epoch):
            if epoch > 0 and t.train_config['recompute_advantages']:
                t._refresh_values()
                advantages = t.advantages().flatten()
            order = torch.randperm(t.batch_size, device=t.device)
            for i in range(per_epoch):
                yield Minibatch(order[i * size:(i + 1) * size], advantages, None)


SAMPLERS: dict[str, type[SegmentSampler] | type[StepSampler]] = {'segments': SegmentSampler, 'steps': StepSampler}


# ---------------------------------------------------------------------------------------------
# The trainer
# ---------------------------------------------------------------------------------------------

class Trainer(Rollout):
    """PPO on one vector env: `rollout()` (pufferlib.rollout) fills the buffers, `update()` learns from them.
    The config is the caller's to validate: pufferlib.train checks it (check_rollout, the memory) once,
    before it builds the env."""

    def __init__(self, config: dict, vecenv: TrainerEnv, policy: torch.nn.Module,
                 device: str | torch.device = 'cpu', distributed: bool = False, env_name: str = '') -> None:
        super().__init__(config, vecenv, policy, device)
        self.env_name = env_name  # recorded in checkpoints
        train = config['train']
        if not train['minibatch_size']:  # "auto", where no pufferlib.train.size_for_machine sized the config
            train['minibatch_size'] = cpus.size_minibatch(self.segments, self.horizon, train['minibatch_sampling'])
        self.ddp: torch.nn.parallel.DistributedDataParallel | None = None
        if distributed:
            self.ddp = torch.nn.parallel.DistributedDataParallel(self.policy)
        self.model: Any = self.ddp or self.policy  # what the update calls: wrapped by DDP where distributed
        self.total_epochs = math.ceil(train['total_timesteps'] / self.batch_size)
        self.sampler: SegmentSampler | StepSampler = SAMPLERS[train['minibatch_sampling']](self)
        self._make_optimization(train)
        # The state at the end of the last update: what a checkpoint holds, even one written in the middle
        # of a rollout (an env failed, the workers got a SIGTERM), so that the half-finished rollout's
        # steps are not counted and a resumed run ends on the same step as one never interrupted.
        self.boundary_step, self.boundary_rng = 0, torch.get_rng_state()
        self.losses: dict[str, float] = {}
        # [swarm]: swarming or Go-Explore between rollouts (pufferlib/explore.py); None when off.
        self.explorer: Explorer | None = make_explorer(config, vecenv, env_name or 'this env')
        self.explore_stats: dict[str, float] = {}  # the last check's, for the metrics rows

    def _make_optimization(self, train: dict) -> None:
        """Optimizers, schedules, the one gradient buffer, and what computes the gradients: autograd (compiled
        with train.compile), or NumPy for a small MLP on a CPU."""
        self.params = [p for p in self.policy.parameters() if p.requires_grad]
        self.optimizers = make_optimizers(self.params, train)
        self.schedulers = [make_scheduler(o, train['lr_schedule'], self.total_epochs)
                           for o in self.optimizers] if train['anneal_lr'] else []
        self.flat_grad = flat_gradients(self.params) if self.ddp is None and train['optimizer'] == 'adam' else None
        # train.compile: the policy's forward and the loss as one graph, whose backward AOTAutograd compiles too.
        self.minibatch_loss = torch.compile(self._minibatch_loss) if train['compile'] else self._minibatch_loss
        # On a CPU, a small MLP's forward and backward cost more in torch's per-op overhead than in arithmetic:
        # a policy that offers numpy_model() (the MuJoCo family's) takes its rollout steps and the same loss's
        # gradients from NumPy there (pufferlib/numpy_policy.py; scripts/lab/results/numpy.md has it against eager and
        # compiled torch), with NumPy's BLAS held to torch's threads.
        self.numpy_update: NumpyUpdate | None = None  # and Rollout's numpy_actor
        if (train['numpy_policy'] and hasattr(self.policy, 'numpy_model') and self.device.type == 'cpu'
                and self.flat_grad is not None and self.flat_grad.dtype == torch.float32
                and isinstance(self.sampler, StepSampler) and train['precision'] == 'float32'
                and not train['compile']):
            from pufferlib import numpy_policy
            self.numpy_update = numpy_policy.NumpyUpdate(self.params, self.flat_grad, train)
            self.numpy_actor = numpy_policy.Actor(cast('NumpyPolicy', self.policy))
            threadpoolctl.threadpool_limits(torch.get_num_threads(), user_api='blas')

    def rollout(self) -> None:
        """Rollout's rollout, then, every swarm.interval steps, the explorer's moves: at a rollout's end every
        row's next observation is held and no env command is in flight."""
        super().rollout()
        if self.explorer is not None:
            self.explore_stats = self.explorer.maybe_move(self) or self.explore_stats
            self.profile.lap('explore')

    # --- update -------------------------------------------------------------------------------

    def advantages(self) -> torch.Tensor:
        c = self.train_config
        rewards = self.rewards
        if c['bootstrap_truncations']:
            # An episode cut by its time limit would have gone on: its last step's target keeps the discounted
            # value of what follows (Pardo et al. 2018, partial-episode bootstrapping) instead of counting it as
            # a terminal step. The state after it was replaced by the next episode's first, so the value of the
            # state the last action was taken in stands for it (in steady locomotion the two are alike).
            rewards = rewards + c['gamma'] * self.values * self.truncations
        return compute_advantage(self.values, rewards, self.dones, self.last_values, importance=self.ratio,
                                 gamma=c['gamma'], lam=c['gae_lambda'], rho_clip=c['vtrace_rho_clip'],
                                 c_clip=c['vtrace_c_clip'])

    def update(self) -> dict[str, float]:
        """PPO on the rollout: `update_epochs` passes of the sampler's minibatches; the mean losses."""
        c = self.train_config
        self.ratio.fill_(1.0)
        per_epoch = max(1, self.batch_size // c['minibatch_size'])
        count = c['update_epochs'] * per_epoch
        totals = torch.zeros(5, device=self.device)  # the losses' sums, read once at the end (one sync)
        if self.flat_grad is not None:
            attach_gradients(self.params, self.flat_grad)
        for minibatch in self.sampler.minibatches(count, per_epoch):
            self.profile.lap('advantage')
            loss, losses, grad_norm = self._gradients(minibatch)
            self._check_finite_loss(loss, grad_norm, losses)
            for optimizer in self.optimizers:
                optimizer.step()
            self.profile.lap('optimizer')
            with torch.no_grad():
                totals += torch.as_tensor(losses, dtype=totals.dtype, device=self.device)
            self.profile.lap('stats')
        for scheduler in self.schedulers:
            scheduler.step()
        self.profile.lap('optimizer')
        self.epoch += 1
        self.boundary_step, self.boundary_rng = self.global_step, torch.get_rng_state()
        names = ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clipfrac')
        self.losses = {key: value / count for key, value in zip(names, totals.tolist(), strict=True)}
        self.losses['learning_rate'] = self.optimizers[0].param_groups[0]['lr']
        return self.losses

    def _gradients(self, mb: Minibatch) -> tuple[torch.Tensor | float, torch.Tensor | np.ndarray, torch.Tensor | float]:
        """The minibatch's gradients, clipped, in the parameters' .grad: (loss, the logged losses, the norm
        before clipping). Through NumPy where this trainer has that path and no row was ever masked (its
        means over live steps are autograd's alone), else through autograd."""
        max_norm = self.train_config['max_grad_norm']
        if self.numpy_update is not None and not self.masked:
            if self.numpy_update.bound is not mb.advantages:  # a new rollout, or recomputed advantages
                self.numpy_update.bind(cast('NumpyPolicy', self.policy), self.obs, self.actions, self.logprobs,
                                       self.values, mb.advantages)
            numpy_stats = self.numpy_update.forward(mb.idx.numpy())
            self.profile.lap('update_forward')
            self.numpy_update.backward()
            self.profile.lap('backward')
            return float(numpy_stats[0]), numpy_stats[1:], self.numpy_update.clip_gradients(max_norm)
        loss, losses = self.minibatch_loss(mb.idx, mb.advantages, mb.weights)
        self.profile.lap('update_forward')
        if self.flat_grad is not None:
            self.flat_grad.zero_()
        else:
            for optimizer in self.optimizers:
                optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.profile.lap('backward')
        return loss, losses, self._clip_gradients(max_norm)

    def _minibatch_loss(self, idx: torch.Tensor, advantages: torch.Tensor,
                        weights: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """ppo_loss on the minibatch `idx` through autograd, and its logged parts (no graph): policy loss,
        value loss, entropy, approx_kl, clipfrac."""
        take = self.sampler.take
        new_logprob, entropy, new_values = self._evaluate(idx)
        log_ratio = new_logprob - take(self.logprobs, idx)
        # Steps of rows that were not live count in no mean. Until a row is masked the masks are all ones
        # and are left out: the same means, a dozen tensor ops fewer a minibatch (MuJoCo's 64-step ones).
        mean = None
        if self.masked:
            mask = take(self.masks, idx)
            count = mask.sum().clamp(min=1)
            mean = lambda x: (x * mask).sum() / count  # noqa: E731
        out = ppo_loss(torch, log_ratio, new_values, entropy, take(self.values, idx), advantages[idx],
                       self.train_config, mean=mean, weights=weights)
        if self.sampler.records_ratio:
            self.ratio[idx] = log_ratio.detach().exp()  # the next minibatches' advantages clip with it (V-trace)
        return out.loss, torch.stack(out.stats).detach()

    def _refresh_values(self) -> None:
        """The critic's values of the rollout's states and of the observations that follow its segments,
        from the weights as they are now (train.recompute_advantages: Andrychowicz et al. 2020 recommend
        recomputing the advantages once per pass over the data). They replace the rollout's values, so the
        next epoch's targets are GAE's returns from them and its value clipping is measured from them.
        Evaluation mode, so no statistics a policy gathers from its rollout (MuJoCo's observation
        normalisation) count these states twice."""
        training = self.policy.training
        self.policy.eval()
        try:
            with torch.no_grad(), self.autocast:
                flat = self.obs.flatten(0, 1)
                chunk = max(self.train_config['minibatch_size'], 4096)  # bounded memory on large rollouts
                values = [self.policy(flat[i:i + chunk])[1].float().flatten() for i in range(0, len(flat), chunk)]
                self.values.copy_(torch.cat(values).reshape(self.values.shape))
                for batch, ids, _, _ in self.held:
                    rows = slice(int(ids[0]), int(ids[-1]) + 1)
                    self.last_values[rows] = self.policy(batch.to(self.device))[1].float().flatten()
        finally:
            self.policy.train(training)

    def _clip_gradients(self, max_norm: float) -> torch.Tensor:
        """clip_grad_norm_ (the same formula); on the one gradient buffer where there is one, in two tensor ops."""
        if self.flat_grad is None:
            return torch.nn.utils.clip_grad_norm_(self.params, max_norm)
        norm = torch.linalg.vector_norm(self.flat_grad)
        self.flat_grad.mul_((max_norm / (norm + 1e-6)).clamp(max=1.0))
        return norm

    def _evaluate(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The current policy on the minibatch `idx`: the log-probability and entropy of the actions it took
        (under the masks they were sampled with) and the values, each shaped as the sampler's take of values."""
        take, lead = self.sampler.take, self.sampler.lead(idx)
        with self.autocast:
            if self.recurrent:
                # Each segment replays from the memory it started with; its dones reset it within.
                state = {key: self.segment_start[key][idx] for key in self.segment_start}
                state['dones'] = self.dones[idx]
                logits, new_values = self.model(self.obs[idx], state)
            else:
                logits, new_values = self.model(take(self.obs, idx).flatten(0, len(lead) - 1))
        actions = take(self.actions, idx).flatten(0, len(lead) - 1)
        legal = None if self.action_masks is None else take(self.action_masks, idx).flatten(0, len(lead) - 1)
        _, new_logprob, entropy = self._sample(logits, actions, mask=legal)
        return new_logprob.float().reshape(lead), entropy.float().reshape(lead), new_values.float().reshape(lead)

    def _check_finite_loss(self, loss: torch.Tensor | float, grad_norm: torch.Tensor | float,
                           losses: torch.Tensor | np.ndarray) -> None:
        """Before the optimizer steps, so the weights stay finite; one check (one device sync) per minibatch.
        `losses` starts with the policy loss, the value loss and the entropy (as ppo_loss's stats)."""
        total = loss + grad_norm  # a sum is finite iff both are
        if math.isfinite(total) if isinstance(total, float) else bool(torch.isfinite(total.detach().float())):
            return
        pg_loss, v_loss, entropy = (float(x) for x in losses[:3])
        raise NonFiniteError(
            f'the loss became non-finite in the update of epoch {self.epoch + 1} (global step '
            f'{self.global_step:,}): policy_loss {pg_loss:.4g}, value_loss {v_loss:.4g}, '
            f'entropy {entropy:.4g}, gradient norm {float(grad_norm):.4g}. The weights were '
            'not stepped; lower train.learning_rate or train.max_grad_norm')

    # --- checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        return {'policy': self.policy.state_dict(), 'optimizers': [o.state_dict() for o in self.optimizers],
                'schedulers': [s.state_dict() for s in self.schedulers], 'global_step': self.boundary_step,
                'epoch': self.epoch, 'env': self.env_name, 'torch_rng': self.boundary_rng,
                **({'reward_scale': self.reward_scale.state_dict()} if self.reward_scale is not None else {}),
                **({'explore': self.explorer.state_dict()} if self.explorer is not None else {}),
                **({'config': self.saved_config} if self.saved_config is not None else {})}

    @functools.cached_property
    def saved_config(self) -> dict | None:
        """The config this run trains with, as plain TOML values: a checkpoint carries it, so that a file copied
        out of its run still plays, exports and loads with the env options its weights were trained on. None
        for a config TOML cannot hold (a caller's own objects in it): such checkpoints carry none, as before."""
        try:
            return tomllib.loads(configuration.to_toml(self.config))
        except (configuration.ConfigError, tomllib.TOMLDecodeError):
            return None

    def load_state_dict(self, state: dict, path: str = 'checkpoint') -> None:
        # What the config sets of each optimizer group (learning rate, betas, eps, weight decay), before the
        # checkpoint's groups replace it: a checkpoint gives the optimizer's moments, the config its settings.
        # They agree on a plain resume; population-based training (pufferlib/pbt/) resumes a member with
        # the settings it perturbed over a checkpoint saved with the old ones.
        configured = [[{k: v for k, v in group.items() if k != 'params'} for group in optimizer.param_groups]
                      for optimizer in self.optimizers]
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
        changed = self._apply_configured(configured)
        for scheduler in self.schedulers:
            if changed or scheduler_length(scheduler) != self.total_epochs:
                self._replan(scheduler)
        if 'torch_rng' in state:
            torch.set_rng_state(state['torch_rng'])
        if self.reward_scale is not None and 'reward_scale' in state:  # else: estimated afresh, within episodes
            self.reward_scale.load_state_dict(state['reward_scale'])
        if self.explorer is not None and 'explore' in state:  # else: the archive starts empty
            self.explorer.load_state_dict(state['explore'])
            self.explore_stats = dict(self.explorer.stats)
        self.boundary_rng = torch.get_rng_state()

    def _apply_configured(self, configured: list[list[dict]]) -> bool:
        """Set the configured optimizer settings where the loaded groups differ from them; whether any did.
        With a schedule, the learning rate set is its base (`initial_lr`): `_replan` puts the current rate
        at the same point of the schedule."""
        changed = False
        for optimizer, groups in zip(self.optimizers, configured, strict=True):
            for group, wanted in zip(optimizer.param_groups, groups, strict=True):
                settings = {k: v for k, v in wanted.items() if not (self.schedulers and k == 'lr')}
                if any(group.get(k) != v for k, v in settings.items()):
                    group.update(settings)
                    changed = True
        for scheduler in self.schedulers:
            bases = [group['initial_lr'] for group in scheduler.optimizer.param_groups]
            if bases != scheduler.base_lrs:
                scheduler.base_lrs = bases
                changed = True
        return changed

    def _replan(self, scheduler: torch.optim.lr_scheduler.LRScheduler) -> None:
        """A run resumed with another train.total_timesteps: the schedule spans the new total from here,
        at the rate a run started with that total would have now. Kept as saved, the schedule of a finished
        run would stay at the 0 it ended on, and a cosine made longer would rise again past its old end."""
        progress = min(scheduler.last_epoch / self.total_epochs, 1.0)
        if isinstance(scheduler, torch.optim.lr_scheduler.LinearLR):
            scheduler.total_iters = self.total_epochs
            factor = 1.0 - progress
        else:
            assert isinstance(scheduler, torch.optim.lr_scheduler.CosineAnnealingLR)
            scheduler.T_max = self.total_epochs
            factor = (1 + math.cos(math.pi * progress)) / 2
        for group, base in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, strict=True):
            group['lr'] = base * factor
        scheduler._last_lr = [group['lr'] for group in scheduler.optimizer.param_groups]

    def save(self, run_dir: str) -> str:
        folder = os.path.join(run_dir, 'checkpoints')
        path = os.path.join(folder, f'epoch-{self.epoch:07d}.pt')
        if not all(bool(torch.isfinite(p).all()) for p in self.policy.parameters()):
            raise NonFiniteError(f'the weights became non-finite by the end of epoch {self.epoch}, so they were not '
                                 'saved (lower train.learning_rate or train.max_grad_norm)')
        # Serialized in memory first: torch.save into a file that the disk refuses raises its own RuntimeError
        # ("unexpected pos"), where a plain write raises the OSError that says the disk is full.
        buffer = io.BytesIO()
        torch.save(self.state_dict(), buffer)
        data = buffer.getbuffer()
        try:
            atomic_write(path, lambda f: f.write(data))
            old = sorted(n for n in os.listdir(folder) if n.startswith('epoch-') and n.endswith('.pt'))
            for name in old[:-self.train_config['keep_checkpoints']]:  # only once the new one is safe
                os.remove(os.path.join(folder, name))
        except OSError as e:
            raise write_failure('the checkpoint', path, e, len(data)) from None
        return path



