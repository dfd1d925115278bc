"""The actions' distributions, from what a model's decoder returns (`Logits`, see pufferlib.models): a
tensor [N, n] for Discrete, a tuple of [N, n_i] for MultiDiscrete, a DiagonalGaussian for Box, a
MixedLogits (both of the last two) for a MixedSpace.
`sample_logits` samples (or scores given actions) and gives their log-probabilities and entropies;
`mask_logits` takes illegal actions out. The rollout, the update, evaluation and the league all sample
through here."""
import math
from collections.abc import Sequence
from typing import cast, overload

import torch

from pufferlib.pufferenv import ActionMaskError, APITypeError, SpaceError




class DiagonalGaussian(torch.distributions.Distribution):
    """The Box head's distribution: independent Normals over the action dims with one learned log std per
    dim, the same numbers as torch's Independent(Normal). log_prob and entropy are written out from
    log_std rather than composed by torch.distributions (which squares the std and takes its log back):
    fewer tensor ops, a quarter off the head's forward and backward, which at MuJoCo's minibatches of 64
    on a CPU is about 2% of a run. What depends on log_std is computed here, under the grad mode of the
    forward that made the distribution, as torch's Normal does (a rollout's no_grad covers it)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor) -> None:
        """mean [..., *action_shape]; log_std [*action_shape], shared by every row."""
        event = mean.ndim - log_std.ndim
        if event < 1 or tuple(mean.shape[event:]) != tuple(log_std.shape):
            raise SpaceError(f'DiagonalGaussian takes one log std per action dim, shared by every row: log_std has '
                             f'shape {list(log_std.shape)}, the means {list(mean.shape)} (rows first)')
        super().__init__(mean.shape[:event], mean.shape[event:], validate_args=False)
        self.loc, self.log_std = mean, log_std
        self.std = log_std.exp()
        # log of the density's normaliser: the sum over dims of log(std) + log(2 pi) / 2
        self.log_norm = log_std.sum() + 0.5 * math.log(2 * math.pi) * log_std.numel()

    @property
    def mean(self) -> torch.Tensor:
        return self.loc

    @property
    def stddev(self) -> torch.Tensor:
        return self.std.expand_as(self.loc)

    def sample(self, sample_shape: torch.Size | Sequence[int] = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        with torch.no_grad():
            return torch.normal(self.loc.expand(shape), self.stddev.expand(shape))

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        z = (value - self.loc) / self.std
        return -0.5 * z.square().sum(tuple(range(-len(self.event_shape), 0))) - self.log_norm

    def entropy(self) -> torch.Tensor:
        return (self.log_norm + 0.5 * self.log_std.numel()).expand(self.batch_shape)


class MixedLogits:
    """A mixed action's heads (pufferenv.MixedSpace): `discrete`, the logits [N, n_i] of each discrete part,
    and `continuous`, the DiagonalGaussian of the Box part. Its actions are rows [N, len(discrete) + Box size],
    the discrete choices (as floats) then the continuous elements; the parts are independent, so an action's
    log-probability and the entropy are the sums of the parts'."""

    __slots__ = ('discrete', 'continuous')

    def __init__(self, discrete: Sequence[torch.Tensor], continuous: DiagonalGaussian) -> None:
        if not discrete or continuous.event_shape.numel() < 1 or len(continuous.event_shape) != 1:
            raise SpaceError('MixedLogits takes the logits of at least one discrete part and a Gaussian over a 1-D '
                             f'Box, got {len(discrete)} discrete parts and event shape {list(continuous.event_shape)}')
        self.discrete = tuple(discrete)
        self.continuous = continuous

    def __repr__(self) -> str:
        return (f'MixedLogits(discrete={[list(d.shape) for d in self.discrete]}, '
                f'continuous={list(self.continuous.mean.shape)})')


# What a model's decoder returns for the action space.
Logits = (torch.Tensor | tuple[torch.Tensor, ...] | list[torch.Tensor] | torch.distributions.Distribution
          | MixedLogits)


def sample_logits(logits: Logits, action: torch.Tensor | None = None,
                  mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(action, logprob, entropy) for any model's logits; samples when `action` is None.

    Discrete: logits [N, n] -> action int64 [N]. MultiDiscrete: tuple of [N, n_i] -> action int64
    [N, k], logprob and entropy summed over sub-actions. Box: an Independent Normal -> action float
    [N, *shape], logprob and entropy summed over the action dims; samples are not clipped to the
    Box's bounds (clip a copy before stepping the env, keep the sample for the logprob). MixedLogits ->
    action float [N, k + d] (k discrete choices as floats, then d Box elements), logprob and entropy
    the sums of the parts'. Leading dims other than N work too.
    logprob and entropy have the leading shape ([N]).

    `mask` (bool, True = legal; [N, n] for Discrete, [N, sum(n_i)] for MultiDiscrete and for the
    discrete parts of a MixedLogits) restricts the distribution to the legal actions: they are never
    sampled, and logprob and entropy are those of the masked distribution. Every row needs at least
    one legal action (per sub-action).
    """
    if mask is not None:
        logits = mask_logits(logits, mask)
    if isinstance(logits, MixedLogits):
        return _sample_mixed(logits, action)
    if isinstance(logits, torch.distributions.Distribution):
        if action is None:
            action = logits.sample()
        else:
            action = action.to(logits.mean.dtype).reshape(logits.mean.shape)
        return action, logits.log_prob(action), logits.entropy()
    if isinstance(logits, (tuple, list)):
        if action is not None:
            action = action.reshape(*logits[0].shape[:-1], len(logits))
        parts = [_categorical(sub, None if action is None else action[..., i]) for i, sub in enumerate(logits)]
        actions, logprobs, entropies = zip(*parts)
        # sum() over tensors is a tensor; typeshed's sum allows the int 0 of an empty sequence.
        return torch.stack(actions, dim=-1), cast(torch.Tensor, sum(logprobs)), cast(torch.Tensor, sum(entropies))
    if isinstance(logits, torch.Tensor):
        if action is not None:
            action = action.reshape(logits.shape[:-1])
        return _categorical(logits, action)
    raise APITypeError(f'logits must be a tensor (Discrete), a tuple of tensors (MultiDiscrete), a torch '
                       f'distribution (Box) or a MixedLogits (MixedSpace), got {type(logits).__name__}')


def _sample_mixed(logits: MixedLogits,
                  action: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gaussian, k = logits.continuous, len(logits.discrete)
    lead = gaussian.mean.shape[:-1]
    picks: torch.Tensor | None = None
    box: torch.Tensor | None = None
    if action is not None:
        action = action.reshape(*lead, k + gaussian.mean.shape[-1])
        picks, box = action[..., :k], action[..., k:].to(gaussian.mean.dtype)
    chosen, logprob, entropy = sample_logits(logits.discrete, picks)
    box, box_logprob, box_entropy = sample_logits(gaussian, box)
    # The choices travel as floats beside the Box elements: exact, as every n is below 2**24 (MixedSpace).
    joined = torch.cat([chosen.to(box.dtype), box], dim=-1)
    return joined, logprob + box_logprob, entropy + box_entropy


@overload
def mask_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...


@overload
def mask_logits(logits: Logits, mask: torch.Tensor) -> Logits: ...


def mask_logits(logits: Logits, mask: torch.Tensor) -> Logits:
    """Logits with the illegal actions (mask False) pushed to the lowest finite value, so they get
    probability 0 (exp underflows) without the NaNs that -inf brings into 0 * log 0. A MixedLogits' mask
    covers its discrete parts."""
    if isinstance(logits, MixedLogits):
        return MixedLogits(cast(tuple, mask_logits(logits.discrete, mask)), logits.continuous)
    if isinstance(logits, torch.distributions.Distribution):
        raise ActionMaskError('action masks apply to Discrete and MultiDiscrete actions, not to Box actions')
    if isinstance(logits, (tuple, list)):
        sizes = [sub.shape[-1] for sub in logits]
        if mask.shape[-1] != sum(sizes):
            raise ActionMaskError(f'the action mask has {mask.shape[-1]} columns; this MultiDiscrete space needs '
                                  f'{sum(sizes)} (the sum of its sizes {sizes})')
        return tuple(mask_logits(sub, part) for sub, part in zip(logits, mask.split(sizes, dim=-1)))
    if tuple(mask.shape) != tuple(logits.shape):
        raise ActionMaskError(f'the action mask has shape {list(mask.shape)}; the logits have {list(logits.shape)} '
                              '(one row per agent, one column per action)')
    return logits.masked_fill(~mask.to(device=logits.device, dtype=torch.bool), torch.finfo(logits.dtype).min)


def _categorical(logits: torch.Tensor,
                 action: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    log_probs = logits.log_softmax(dim=-1)
    if action is None:
        flat = log_probs.exp().reshape(-1, log_probs.shape[-1])
        action = torch.multinomial(flat, 1).reshape(log_probs.shape[:-1])
    action = action.long()
    logprob = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    # Clamp so masked (-inf) logits contribute 0 * finite instead of 0 * -inf = nan.
    safe = log_probs.clamp(min=torch.finfo(log_probs.dtype).min)
    entropy = -(safe.exp() * safe).sum(-1)
    return action, logprob, entropy
