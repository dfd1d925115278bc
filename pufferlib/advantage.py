"""The puffer advantage: GAE and V-trace as one recursion, on CPU (C kernel) and CUDA (nvcc kernel).

    from pufferlib.advantage import compute_advantage
    adv = compute_advantage(values, rewards, dones, last_values)              # GAE(0.995, 0.90)
    adv = compute_advantage(values, rewards, dones, last_values, importance)  # off-policy (V-trace-like)
    returns = adv + values                                                    # value targets

Every tensor is laid out [segments, horizon]: row s is one env slot's consecutive steps. See
`compute_advantage` for the exact conventions and docs/advantage.md for the derivation.
"""
import ctypes
import glob
import importlib.machinery
import math
import os
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from pufferlib.pufferenv import APITypeError, APIUsageError

__all__ = ['compute_advantage', 'reference_advantage', 'cpu_kernel_available', 'cuda_kernel_available',
           'cuda_library_path']

try:
    import pufferlib._advantage as _cpu_kernel
except ImportError:  # running from a source tree that was never built
    _cpu_kernel = None

_HERE = os.path.dirname(os.path.abspath(__file__))
_DONE_DTYPES = (torch.bool, torch.uint8, torch.float32, torch.float16, torch.bfloat16, torch.float64)
_warned: set[str] = set()
_cuda_lib: ctypes.CDLL | None = None
_cuda_lib_error: str | None = None


def cpu_kernel_available() -> bool:
    """True when the compiled CPU kernel (pufferlib._advantage) is importable."""
    return _cpu_kernel is not None


def cuda_library_path() -> str | None:
    """Path of the compiled CUDA kernel library inside the package, or None when it was not built."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        matches = glob.glob(os.path.join(_HERE, '_advantage_cuda' + suffix))
        if matches:
            return matches[0]
    return None


def _load_cuda_library() -> ctypes.CDLL | None:
    """The ctypes handle of the CUDA kernel, or None (the reason kept in _cuda_lib_error)."""
    global _cuda_lib, _cuda_lib_error
    if _cuda_lib is not None or _cuda_lib_error is not None:
        return _cuda_lib
    path = cuda_library_path()
    if path is None:
        _cuda_lib_error = 'the CUDA kernel was not built (no nvcc at install time, or PUFFER_CUDA=0)'
        return None
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        _cuda_lib_error = f'could not load {path}: {e}'
        return None
    ptr = ctypes.c_void_p
    lib.puffer_advantage_cuda.argtypes = [ptr, ptr, ptr, ptr, ptr, ptr, ctypes.c_int, ctypes.c_int,
                                          ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_float, ptr]
    lib.puffer_advantage_cuda.restype = ctypes.c_int
    lib.puffer_advantage_cuda_error.argtypes = [ctypes.c_int]
    lib.puffer_advantage_cuda_error.restype = ctypes.c_char_p
    _cuda_lib = lib
    return lib


def cuda_kernel_available() -> bool:
    """True when the CUDA kernel library was built and loads (it does not need a GPU to load)."""
    return _load_cuda_library() is not None


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _check_float(name: str, tensor: object, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor):
        raise APITypeError(f'{name} must be a torch.Tensor, got {type(tensor).__name__}')
    if tuple(tensor.shape) != shape:
        raise APIUsageError(f'{name} must have shape {list(shape)}, got {list(tensor.shape)}')
    if not tensor.dtype.is_floating_point:
        raise APITypeError(f'{name} must be a floating-point tensor, got {tensor.dtype}')
    if tensor.device != device:
        raise APIUsageError(f'{name} is on {tensor.device} but values is on {device}: put every input on one device')
    # One copy at most: the kernels read contiguous float32.
    return tensor.detach().to(torch.float32).contiguous()


def _check_number(name: str, value: Any, low: float, high: float, low_open: bool = False) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise APITypeError(f'{name} must be a number, got {type(value).__name__}') from None
    too_low = value <= low if low_open else value < low
    if math.isnan(value) or too_low or value > high:
        interval = f'{"(" if low_open else "["}{low}, {high}]'
        raise APIUsageError(f'{name} must lie in {interval}, got {value}')
    return value


def _validate(values: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor, last_values: torch.Tensor,
              importance: torch.Tensor | None, gamma: float, lam: float, rho_clip: float, c_clip: float
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None,
                         float, float, float, float]:
    if not isinstance(values, torch.Tensor):
        raise APITypeError(f'values must be a torch.Tensor, got {type(values).__name__}')
    if values.dim() != 2:
        raise APIUsageError(f'values must have shape [segments, horizon], got {list(values.shape)}')
    shape, device = tuple(values.shape), values.device
    values = _check_float('values', values, shape, device)
    rewards = _check_float('rewards', rewards, shape, device)
    last_values = _check_float('last_values', last_values, shape[:1], device)
    if importance is not None:
        importance = _check_float('importance', importance, shape, device)
    if not isinstance(dones, torch.Tensor):
        raise APITypeError(f'dones must be a torch.Tensor, got {type(dones).__name__}')
    if tuple(dones.shape) != shape:
        raise APIUsageError(f'dones must have shape {list(shape)}, got {list(dones.shape)}')
    if dones.dtype not in _DONE_DTYPES:
        raise APITypeError(f'dones must be bool, uint8 or floating point, got {dones.dtype}')
    if dones.device != device:
        raise APIUsageError(f'dones is on {dones.device} but values is on {device}: put every input on one device')
    dones = dones.detach().to(torch.float32).contiguous()
    gamma = _check_number('gamma', gamma, 0.0, 1.0)
    lam = _check_number('lam', lam, 0.0, 1.0)
    rho_clip = _check_number('rho_clip', rho_clip, 0.0, math.inf, low_open=True)
    c_clip = _check_number('c_clip', c_clip, 0.0, math.inf, low_open=True)
    return values, rewards, dones, last_values, importance, gamma, lam, rho_clip, c_clip


def compute_advantage(values: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor, last_values: torch.Tensor,
                      importance: torch.Tensor | None = None, gamma: float = 0.995, lam: float = 0.90,
                      rho_clip: float = 1.0, c_clip: float = 1.0) -> torch.Tensor:
    """The puffer advantage of every step of every segment, as a float32 tensor [S, H].

    Layout: all step tensors are [S, H] (S segments, each H consecutive steps of one env slot).
    For segment s and step t:
      values[s, t]      V(o_t), the critic's value of the observation the action at t was taken in.
      rewards[s, t]     the reward received after the action taken at t.
      dones[s, t]       1 if the episode ended after the action at t (terminal or truncated), else 0;
                        bool, uint8 or float. o_{t+1} then belongs to a new episode, so nothing
                        bootstraps across it.
      last_values[s]    [S]: V of the observation that follows the segment's last step (o_H), so
                        every step of a segment gets an advantage; no step is spent on bootstrapping.
                        Ignored for a row whose last step is done.
      importance[s, t]  w_t = pi(a_t|o_t) / mu(a_t|o_t), the ratio of the current policy to the one
                        that acted; None means all ones (on-policy).

    Backwards in t, with V_H = last_values[s] and A_H = 0:
        rho_t   = min(w_t, rho_clip),   c_t = min(w_t, c_clip)
        delta_t = rho_t * (r_t + gamma * V_{t+1} * (1 - d_t) - V_t)
        A_t     = delta_t + gamma * lam * c_t * (1 - d_t) * A_{t+1}
    With w = 1 this is GAE(gamma, lam) exactly. With lam = 1 it is the V-trace target minus V
    (v_t - V_t of IMPALA, with rho_clip and c_clip as rho-bar and c-bar). Truncated episodes are
    treated like terminal ones (no bootstrap), as most PPO implementations do.

    Inputs may be any floating dtype (converted to float32 once) on one device. CPU tensors use the
    compiled C kernel, CUDA tensors the nvcc kernel launched on torch's current stream; without a
    compiled kernel a vectorised torch loop over the horizon runs instead (with a one-time warning).
    Gradients do not flow through the result (advantages are targets).

    Raises APITypeError/APIUsageError (TypeError/ValueError) naming the argument for a wrong type, shape,
    dtype, device or range (gamma and lam in [0, 1]; rho_clip and c_clip > 0, inf allowed).
    """
    values, rewards, dones, last_values, importance, gamma, lam, rho_clip, c_clip = _validate(
        values, rewards, dones, last_values, importance, gamma, lam, rho_clip, c_clip)
    segments, horizon = values.shape
    out = torch.empty_like(values)
    if values.numel() == 0:
        return out
    args = (gamma, lam, rho_clip, c_clip)
    if values.device.type == 'cpu' and _cpu_kernel is not None:
        # .numpy() on a contiguous CPU tensor is a view: the kernel writes straight into `out`.
        _cpu_kernel.compute(values.numpy(), rewards.numpy(), dones.numpy(), last_values.numpy(), out.numpy(),
                            None if importance is None else importance.numpy(), segments, horizon, *args)
        return out
    if values.device.type == 'cuda':
        lib = _load_cuda_library()
        if lib is not None:
            _launch_cuda(lib, values, rewards, dones, last_values, importance, out, *args)
            return out
    reason = (_cuda_lib_error if values.device.type == 'cuda' else
              'the CPU kernel pufferlib._advantage was not built (run `python setup.py build_ext --inplace`)')
    _warn_once(values.device.type, f'compute_advantage on {values.device.type}: {reason}; '
                                   'using the slower torch loop over the horizon')
    return _torch_advantage(values, rewards, dones, last_values, importance, *args)


def _launch_cuda(lib: ctypes.CDLL, values: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor,
                 last_values: torch.Tensor, importance: torch.Tensor | None, out: torch.Tensor, gamma: float,
                 lam: float, rho_clip: float, c_clip: float) -> None:
    if values.shape[0] >= 2**31 or values.shape[1] >= 2**31:
        raise APIUsageError(f'values shape {list(values.shape)} exceeds the CUDA kernel\'s int32 dimensions')
    # The kernel runs on whatever device is current; make that the tensors' device.
    with torch.cuda.device(values.device):
        stream = torch.cuda.current_stream(values.device).cuda_stream
        code = lib.puffer_advantage_cuda(
            values.data_ptr(), rewards.data_ptr(), dones.data_ptr(),
            None if importance is None else importance.data_ptr(), last_values.data_ptr(), out.data_ptr(),
            values.shape[0], values.shape[1], gamma, lam, rho_clip, c_clip, stream)
    if code != 0:
        message = lib.puffer_advantage_cuda_error(code).decode(errors='replace')
        raise RuntimeError(f'CUDA advantage kernel launch failed: {message} (cudaError {code})')


def _torch_advantage(values: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor, last_values: torch.Tensor,
                     importance: torch.Tensor | None, gamma: float, lam: float, rho_clip: float,
                     c_clip: float) -> torch.Tensor:
    """Fallback for any device: the recursion vectorised over segments, looped over the horizon."""
    not_done = 1.0 - dones
    rho: float | torch.Tensor
    c: float | torch.Tensor
    if importance is None:  # ratios of 1, still clipped
        rho, c = min(1.0, rho_clip), min(1.0, c_clip)
    else:
        rho, c = importance.clamp(max=rho_clip), importance.clamp(max=c_clip)
    next_values = torch.cat([values[:, 1:], last_values[:, None]], dim=1)
    deltas = rho * (rewards + gamma * next_values * not_done - values)
    decay = gamma * lam * c * not_done
    out = torch.empty_like(values)
    adv = torch.zeros_like(last_values)
    for t in range(values.shape[1] - 1, -1, -1):
        adv = deltas[:, t] + decay[:, t] * adv
        out[:, t] = adv
    return out


def reference_advantage(values: torch.Tensor | npt.ArrayLike, rewards: torch.Tensor | npt.ArrayLike,
                        dones: torch.Tensor | npt.ArrayLike, last_values: torch.Tensor | npt.ArrayLike,
                        importance: torch.Tensor | npt.ArrayLike | None = None, gamma: float = 0.995,
                        lam: float = 0.90, rho_clip: float = 1.0, c_clip: float = 1.0) -> torch.Tensor:
    """The same recursion as `compute_advantage`, as a plain Python loop in float64 (for tests).

    Accepts tensors or arrays; returns a float32 CPU tensor [S, H]. No validation beyond numpy's.
    """
    def as_array(x: torch.Tensor | npt.ArrayLike) -> np.ndarray:
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().to(torch.float64)
        return np.asarray(x, dtype=np.float64)
    values, rewards, dones, last_values = map(as_array, (values, rewards, dones, last_values))
    importance = np.ones_like(values) if importance is None else as_array(importance)
    segments, horizon = values.shape
    out = np.zeros((segments, horizon))
    for s in range(segments):
        next_value, next_adv = last_values[s], 0.0
        for t in reversed(range(horizon)):
            rho = min(importance[s, t], rho_clip)
            c = min(importance[s, t], c_clip)
            not_done = 1.0 - dones[s, t]
            delta = rho * (rewards[s, t] + gamma * next_value * not_done - values[s, t])
            next_adv = delta + gamma * lam * c * not_done * next_adv
            out[s, t] = next_adv
            next_value = values[s, t]
    return torch.from_numpy(out.astype(np.float32))
