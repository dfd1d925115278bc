"""A small tanh-MLP Gaussian policy on a CPU, computed in NumPy: the rollout's step (`Actor`) and PPO's
minibatch gradients (`NumpyUpdate`).

Why: at MuJoCo's recipe (8 rows a rollout step; minibatches of 64 rows, an actor 64 wide, a critic 256
wide) each torch op costs more in dispatch and autograd bookkeeping than in arithmetic, and a rollout is
256 forward passes and its update 320 minibatches. Written out in NumPy, the matmuls of the backward pass
straight into the gradient buffer, an update's minibatch takes about two thirds of the time of the best
torch measured (`torch.compile` of the forward and loss, its backward compiled with it, fused Adam: 1.53x
over five rounds) and a third of eager torch's; a MuJoCo run on one core goes 1.45-1.6x as fast as through
eager torch (scripts/lab/results/numpy.md, `python -m lab.bench_numpy`, all three in the same interleaved rounds).
The path stays while it is at least 1.3x as fast as the best torch.

What is PPO and what is the MLP are kept apart, so nothing of PPO is written twice:
- the loss is the trainer's one `pufferlib.trainer.ppo_loss`, called here over NumPy arrays (the same
  lines autograd differentiates on the torch path). Asked for its `derivatives`, it also gives the
  derivative of each step's clipped surrogate with respect to the ratio and of its clipped value loss
  with respect to the value: which side of each max is taken, the one thing autograd decides for itself.
  From those on, this module only differentiates the Gaussian's log-density and the tanh MLPs;
- the inputs are the policy's own normalisation (`numpy_inputs`, the MuJoCo policy's torch function);
- the gradients land in the trainer's flat gradient buffer, which it clips and torch's Adam steps as on
  the torch path, so checkpoints and resumes are unchanged; the rollout's noise comes from torch's
  generator, as on the torch path.
tests/test_numpy_policy.py checks the losses and gradients against autograd's on every branch of the clips
and the step against the torch policy. The arithmetic is float32 as on the torch path, but summed in
another order: a run takes other (equally good) numbers than with `train.numpy_policy = false`, as a run
on another CPU does.

A policy offers this path with `numpy_model()` and `numpy_inputs()` (NumpyPolicy; the MuJoCo family's
Policy does); the trainer takes it on a CPU with step minibatches, Adam and float32, unless train.compile
is on (Trainer._make_optimization).
"""
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import torch

from pufferlib.loss import ppo_loss

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

Linear = tuple[torch.Tensor, torch.Tensor]  # (weight [out, in], bias [out]): x @ weight.T + bias


@dataclass
class GaussianMLP:
    """A policy as this module computes it: `actor` and `critic` are stacks of linear layers with tanh
    between them (none after the last); the actor's last layer gives the action means, the critic's the
    value. Both read the policy's inputs (NumpyPolicy.numpy_inputs)."""
    actor: list[Linear]
    critic: list[Linear]
    log_std: torch.Tensor  # one per action dim, shared by every row


class NumpyPolicy(Protocol):
    """What a policy offers to be computed here."""

    def numpy_model(self) -> GaussianMLP:
        """Its parameters (the tensors themselves: this module reads and writes their memory)."""

    def numpy_inputs(self, obs: np.ndarray, update: bool) -> np.ndarray:
        """The MLPs' float32 inputs [rows, features] for observations [rows, ...]: normalised, where the
        policy normalises. As its torch forward does: in the rollout (`update` False) it gathers statistics
        from them; an update (True) ends the rollout, whose statistics then apply at the next."""


def _array(t: torch.Tensor) -> np.ndarray:
    """A NumPy view of a CPU tensor (shares its memory: the optimizer's steps show through)."""
    return t.detach().numpy()


def _arrays(layers: list[Linear]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(_array(w), _array(b)) for w, b in layers]


def _log_norm(log_std: np.ndarray) -> float:
    """log of the Gaussian density's normaliser: sum(log_std) + log(2 pi) / 2 per dim."""
    return float(log_std.sum()) + LOG_SQRT_2PI * log_std.size


def _forward(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The stack's output and each layer's input (what the backward pass needs)."""
    inputs = []
    for k, (weight, bias) in enumerate(layers):
        inputs.append(x)
        x = x @ weight.T + bias
        if k < len(layers) - 1:
            np.tanh(x, out=x)
    return x, inputs


def _backward(layers: list[tuple[np.ndarray, np.ndarray]], grads: list[tuple[np.ndarray, np.ndarray]],
              inputs: list[np.ndarray], d: np.ndarray) -> None:
    """Write each layer's gradients, given d = the loss's gradient at the stack's output [rows, out]."""
    for k in range(len(layers) - 1, -1, -1):
        grad_weight, grad_bias = grads[k]
        np.matmul(d.T, inputs[k], out=grad_weight)
        d.sum(0, out=grad_bias)
        if k:
            h = inputs[k]  # the tanh output of the layer below
            d = (d @ layers[k][0]) * (1 - h * h)


class NumpyUpdate:
    """The minibatch gradients of one update: `bind` it to the rollout, then per minibatch `forward(idx)`
    (the losses) and `backward()` (the gradients into the flat buffer)."""

    STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clipfrac')

    def __init__(self, params: list[torch.nn.Parameter], flat_grad: torch.Tensor, train: dict) -> None:
        if flat_grad.device.type != 'cpu' or flat_grad.dtype != torch.float32:
            raise ValueError('the NumPy update works on a float32 gradient buffer in CPU memory')
        self.train = train
        flat = _array(flat_grad)
        self.flat = flat
        # Each parameter's gradient: its view of the flat buffer, in the order flat_gradients laid them out.
        self.grad_of: dict[int, np.ndarray] = {}
        offset = 0
        for p in params:
            self.grad_of[id(p)] = flat[offset:offset + p.numel()].reshape(p.shape)
            offset += p.numel()
        self.saved: tuple = ()
        self.bound: torch.Tensor | None = None  # the advantages bind() was given

    def _grads(self, layers: list[Linear]) -> list[tuple[np.ndarray, np.ndarray]]:
        try:
            return [(self.grad_of[id(w)], self.grad_of[id(b)]) for w, b in layers]
        except KeyError:
            raise ValueError('numpy_model() returned a tensor that is not one of the trained parameters') from None

    def bind(self, policy: NumpyPolicy, obs: torch.Tensor, actions: torch.Tensor, logprobs: torch.Tensor,
             values: torch.Tensor, advantages: torch.Tensor) -> None:
        """The rollout's buffers (flattened to one row per step) and the policy's arrays, for this update.
        The inputs are made once here: the policy's statistics stay put through an update."""
        self.flat.fill(0)  # a parameter the model does not list keeps a zero gradient, as under autograd
        model = policy.numpy_model()
        self.actor, self.critic = _arrays(model.actor), _arrays(model.critic)
        self.actor_grads, self.critic_grads = self._grads(model.actor), self._grads(model.critic)
        self.log_std = _array(model.log_std).reshape(-1)
        self.log_std_grad = self.grad_of[id(model.log_std)].reshape(-1)
        steps = actions.shape[0] * actions.shape[1]
        self.x = policy.numpy_inputs(_array(obs).reshape(steps, *obs.shape[2:]), update=True)
        self.actions = _array(actions).reshape(steps, -1)
        self.logprobs, self.values = _array(logprobs).reshape(-1), _array(values).reshape(-1)
        self.advantages = _array(advantages).reshape(-1)
        self.bound = advantages

    def forward(self, idx: npt.NDArray[np.int64]) -> np.ndarray:
        """The losses of the minibatch `idx` (flat step indices), in STATS order (float64); keeps what
        backward() needs. The loss is the trainer's own (`trainer.ppo_loss`, over NumPy arrays)."""
        x = self.x[idx]
        mean, actor_inputs = _forward(self.actor, x)
        value, critic_inputs = _forward(self.critic, x)
        value = value[:, 0]
        log_std = self.log_std
        inv_std = np.exp(-log_std)
        z = (self.actions[idx] - mean) * inv_std
        log_norm = _log_norm(log_std)
        log_ratio = -0.5 * (z * z).sum(1) - log_norm - self.logprobs[idx]
        entropy = np.asarray(log_norm + 0.5 * log_std.size)  # a Gaussian's: the same for every row
        out = ppo_loss(np, log_ratio, value, entropy, self.values[idx], self.advantages[idx], self.train,
                       derivatives=True)
        self.saved = (len(idx), z, inv_std, np.exp(log_ratio) * out.d_ratio, out.d_value, actor_inputs, critic_inputs)
        return np.array([out.loss, *out.stats], dtype=np.float64)

    def backward(self) -> None:
        """The gradients of the last forward's loss, written into the flat gradient buffer."""
        c = self.train
        rows, z, inv_std, d_logprob, v_grad, actor_inputs, critic_inputs = self.saved
        d_logprob = (d_logprob / rows).astype(np.float32, copy=False)[:, None]
        # log p = -sum(z^2) / 2 - sum(log_std) - const, z = (action - mean) / std
        _backward(self.actor, self.actor_grads, actor_inputs, d_logprob * z * inv_std)
        np.sum(d_logprob * (z * z - 1), axis=0, out=self.log_std_grad)
        self.log_std_grad -= c['ent_coef']  # the entropy's gradient is 1 per dim
        d_value = (v_grad * (c['vf_coef'] / rows)).astype(np.float32, copy=False)[:, None]
        _backward(self.critic, self.critic_grads, critic_inputs, d_value)

    def clip_gradients(self, max_norm: float) -> float:
        """clip_grad_norm_ on the flat buffer (as Trainer._clip_gradients); the norm before clipping."""
        norm = math.sqrt(float(np.dot(self.flat, self.flat)))
        self.flat *= min(max_norm / (norm + 1e-6), 1.0)
        return norm


class Actor:
    """The rollout's step through NumPy. The arrays are views of the parameters, so the optimizer's steps show
    through; what is derived from log_std is computed by `refresh()`, which the trainer calls as each rollout
    starts (the parameters do not change within one)."""

    def __init__(self, policy: NumpyPolicy) -> None:
        self.policy = policy
        self.refresh()

    def refresh(self) -> None:
        model = self.policy.numpy_model()
        self.actor, self.critic = _arrays(model.actor), _arrays(model.critic)
        log_std = _array(model.log_std).reshape(-1)
        self.std, self.inv_std = np.exp(log_std), np.exp(-log_std)
        self.log_norm = _log_norm(log_std)

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(actions [rows, action dims] sampled from the Gaussian, their log-probabilities, the values), all
        float32. The noise comes from torch's generator, the run's one random stream (its state is what
        checkpoints keep)."""
        x = self.policy.numpy_inputs(obs, update=False)
        mean, _ = _forward(self.actor, x)
        value, _ = _forward(self.critic, x)
        actions = mean + self.std * torch.randn(mean.shape).numpy()
        z = (actions - mean) * self.inv_std  # as the update computes it, so that its first ratios are 1
        logprob = -0.5 * (z * z).sum(1) - self.log_norm
        return actions, logprob, value[:, 0]
