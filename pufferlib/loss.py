"""PPO's loss, the one description of it: the clipped surrogate on normalised advantages, the clipped value
loss, the entropy bonus and the stats the trainer logs. Written over an array module (torch or NumPy), so
the autograd update (pufferlib/trainer.py) and the NumPy update (pufferlib/numpy_policy.py) compute it
through the same lines; below both, so neither imports the other for it."""
from collections.abc import Callable
from typing import Any, NamedTuple


class PPOLoss(NamedTuple):
    """ppo_loss's result: the loss; `stats` for the log (policy loss, value loss, entropy, approx_kl,
    clipfrac); and where asked (`derivatives`), the per-step derivatives of the policy loss's terms with
    respect to the ratio and of the value loss's terms with respect to the value (before the mean)."""
    loss: Any
    stats: tuple
    d_ratio: Any = None
    d_value: Any = None


def ppo_loss(xp: Any, log_ratio: Any, new_values: Any, entropy: Any, old_values: Any, advantages: Any,
             train: dict, mean: Callable[[Any], Any] | None = None, weights: Any = None,
             derivatives: bool = False) -> PPOLoss:
    """PPO's loss on one minibatch, from arrays of module `xp` (torch, or numpy for pufferlib/numpy_policy.py):
    the log-ratios of the actions' new and old probabilities, the new values, the entropies, the rollout's
    values and the advantages. `mean`: the mean over the minibatch's steps (the trainer's counts only live
    steps once a row was masked); `weights`: importance weights of prioritised sampling."""
    mean = mean or (lambda x: x.mean())
    c = train
    ratio = xp.exp(log_ratio)
    returns = advantages + old_values
    adv = advantages
    if c['norm_adv']:
        centre = mean(adv)
        adv = (adv - centre) / (xp.sqrt(mean((adv - centre) ** 2)) + 1e-8)
    if weights is not None:
        adv = weights * adv
    low, high = 1 - c['clip_coef'], 1 + c['clip_coef']
    unclipped, clipped = -adv * ratio, -adv * xp.clip(ratio, low, high)
    pg_loss = mean(xp.maximum(unclipped, clipped))
    vc = c['vf_clip_coef']
    moved = new_values - old_values
    error, error_clipped = new_values - returns, old_values + xp.clip(moved, -vc, vc) - returns
    v_loss = mean(0.5 * xp.maximum(error ** 2, error_clipped ** 2))
    entropy_mean = mean(entropy)
    loss = pg_loss + c['vf_coef'] * v_loss - c['ent_coef'] * entropy_mean
    r = getattr(ratio, 'detach', lambda: ratio)()  # the stats are logged, never differentiated
    lr = getattr(log_ratio, 'detach', lambda: log_ratio)()
    stats = (pg_loss, v_loss, entropy_mean, ((r - 1) - lr).mean(), ((abs(r - 1) > c['clip_coef']) * 1.0).mean())
    if not derivatives:
        return PPOLoss(loss, stats)
    # Each max's derivative is its larger term's: the unclipped one, or the clipped one where the clip is
    # inactive (the two terms are then one; autograd splits the tie and adds it back up).
    d_ratio = xp.where((unclipped > clipped) | ((ratio >= low) & (ratio <= high)), -adv, 0 * adv)
    d_value = xp.where((error ** 2 > error_clipped ** 2) | ((moved >= -vc) & (moved <= vc)), error, 0 * error)
    return PPOLoss(loss, stats, d_ratio, d_value)
