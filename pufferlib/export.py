"""`puffer export`: a trained policy out of Python, as ONNX for other tools.

    paths = export('puffer_squared', 'latest', format='onnx')     # RUN/export/policy.onnx
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import torch
from torch import nn

import pufferlib
from pufferlib import registry
from pufferlib.models import LSTMWrapper, load_policy_weights, make_policy
from pufferlib.pufferenv import PufferError

ONNX = 'policy.onnx'
FORMATS = ('onnx',)


class ExportError(PufferError):
    """A policy that a format cannot hold."""



# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------

class _OnnxGraph(nn.Module):
    """The policy as ONNX sees it: plain tensors in (obs, and h, c for an LSTM), plain tensors out (every
    action head's logits, or the Box mean and log-std; the value; the new h, c)."""

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        self.policy = policy
        self.wrapper = policy if isinstance(policy, LSTMWrapper) else None

    def forward(self, obs: torch.Tensor, lstm_h: torch.Tensor | None = None,
                lstm_c: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        new_state: tuple[torch.Tensor, ...] = ()
        wrapper = self.wrapper
        if wrapper is not None and lstm_h is not None and lstm_c is not None:
            hidden = wrapper.policy.encode_observations(obs)
            out, (h, c) = wrapper.lstm(hidden.unsqueeze(0), (lstm_h.unsqueeze(0), lstm_c.unsqueeze(0)))
            logits, value = wrapper.policy.decode_actions(out[0])
            new_state = (h[0], c[0])
        else:
            logits, value = self.policy(obs)
        if isinstance(logits, torch.distributions.Distribution):
            base = getattr(logits, 'base_dist', logits)
            heads: tuple[torch.Tensor, ...] = (base.mean, base.stddev.log())
        elif isinstance(logits, (tuple, list)):
            heads = tuple(logits)
        else:
            heads = (logits,)
        return (*heads, value, *new_state)


def onnx_names(policy: nn.Module) -> tuple[list[str], list[str]]:
    """(input names, output names) of the ONNX graph of `policy`."""
    core = policy.policy if isinstance(policy, LSTMWrapper) else policy
    kind = getattr(core, 'action_kind', 'discrete')
    splits: list[int] = getattr(core, 'action_splits', [])
    if kind == 'multidiscrete':
        heads = [f'logits_{i}' for i in range(len(splits))]
    elif kind == 'continuous':
        heads = ['mean', 'log_std']
    else:
        heads = ['logits']
    if isinstance(policy, LSTMWrapper):
        return ['obs', 'lstm_h', 'lstm_c'], [*heads, 'value', 'lstm_h_out', 'lstm_c_out']
    return ['obs'], [*heads, 'value']


def write_onnx(policy: nn.Module, env: Any, path: str) -> str:
    """`policy` as an ONNX file with a dynamic batch axis; returns the path."""
    try:
        import onnx  # noqa: F401  (torch.onnx writes through it)
    except ImportError:
        raise pufferlib.MissingDependencyError('ONNX export needs the onnx package: pip install -e ".[export]" in '
                                               'this repository (or pip install onnx onnxruntime)') from None
    if getattr(env, 'obs_dtype', None) is not None:
        raise ExportError('ONNX cannot read structured observation rows (a Dict or Tuple space laid out as bytes: '
                          'the policy reinterprets those bytes, which has no ONNX operator)')
    obs_space = env.single_observation_space
    example = torch.from_numpy(np.zeros((2, *obs_space.shape), dtype=obs_space.dtype))
    inputs: tuple[torch.Tensor, ...] = (example,)
    if isinstance(policy, LSTMWrapper):
        inputs += (torch.zeros(2, policy.hidden_size), torch.zeros(2, policy.hidden_size))
    input_names, output_names = onnx_names(policy)
    graph = _OnnxGraph(policy).eval()
    axes = {name: {0: 'batch'} for name in [*input_names, *output_names]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # The TorchScript exporter, deprecated in torch 2.9 yet present in the pinned torch: it needs only onnx and
    # takes a fraction of a second, where the dynamo exporter needs onnxscript and took 10-12 s per policy
    # (torch 2.13) for the same graph. Its deprecation notice and tracer remarks (nn.LSTM's shape checks) are
    # for torch's developers, not for someone exporting a policy.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(graph, inputs, path, input_names=input_names, output_names=output_names,
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    return path


# ---------------------------------------------------------------------------------------------
# `puffer export`
# ---------------------------------------------------------------------------------------------

def export(env_name: str, checkpoint: str, format: str = 'onnx', out: str | None = None) -> list[str]:
    """Export a checkpoint (a file, a run directory or `latest`, as `puffer eval` finds it) of `env_name`
    to folder `out` (default: the run's export/ folder); returns the paths written."""
    from pufferlib import evaluate  # its checkpoint lookup: the same RUN|latest as `puffer eval`
    if format not in FORMATS:
        raise pufferlib.APIUsageError(f'--format must be one of {", ".join(FORMATS)}, got {format!r}')
    path, state_dict, config = evaluate._load(env_name, checkpoint)
    run_dir = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    out = out or os.path.join(run_dir, 'export')
    one = {'num_envs': 1} if registry.lookup(env_name).family == 'ocean' else {}  # one instance shows the spaces
    env = pufferlib.make(env_name, **{**config['env'], **one})
    try:
        policy = make_policy(env, config)
        load_policy_weights(policy, state_dict, path)
        policy.eval()
        written = [write_onnx(policy, env, os.path.join(out, ONNX))]
    finally:
        env.close()
    return written
