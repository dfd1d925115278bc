"""The puffer advantage: GAE and V-trace equivalences, kernels vs the reference, input validation."""
import math
import os
import shutil

import numpy as np
import pytest
import torch

from pufferlib import advantage
from pufferlib.advantage import compute_advantage, reference_advantage


def random_batch(segments, horizon, done_prob=0.1, seed=0, importance=False):
    gen = torch.Generator().manual_seed(seed)
    batch = dict(
        values=torch.randn(segments, horizon, generator=gen),
        rewards=torch.randn(segments, horizon, generator=gen),
        dones=torch.rand(segments, horizon, generator=gen) < done_prob,
        last_values=torch.randn(segments, generator=gen),
    )
    if importance:
        # Ratios spread around 1 (0.05 .. ~3) so that both clips are active on some steps.
        batch['importance'] = torch.exp(torch.randn(segments, horizon, generator=gen) * 0.7).clamp(min=0.05)
    return batch


# Independent implementations, written from the definitions rather than from the recursion.

def gae_by_sums(values, rewards, dones, last_values, gamma, lam):
    """GAE as the explicit sum A_t = sum_k (gamma*lam)^k delta_{t+k}, stopping after the episode ends."""
    values, rewards, dones, last_values = (np.asarray(x, np.float64) for x in (values, rewards, dones, last_values))
    segments, horizon = values.shape
    out = np.zeros((segments, horizon))
    for s in range(segments):
        next_v = np.append(values[s, 1:], last_values[s])
        deltas = rewards[s] + gamma * next_v * (1 - dones[s]) - values[s]
        for t in range(horizon):
            total, weight = 0.0, 1.0
            for k in range(t, horizon):
                total += weight * deltas[k]
                if dones[s, k]:
                    break
                weight *= gamma * lam
            out[s, t] = total
    return out


def vtrace_targets(values, rewards, dones, last_values, ratios, gamma, rho_bar, c_bar):
    """IMPALA's n-step V-trace target (Espeholt et al. 2018, eq. 1) over the rest of the segment:
    v_s = V(x_s) + sum_{t>=s} gamma^(t-s) (prod_{i=s}^{t-1} c_i) rho_t (r_t + gamma V(x_{t+1}) - V(x_t)),
    with episode ends cutting both the discount and the bootstrap."""
    values, rewards, dones, last_values, ratios = (
        np.asarray(x, np.float64) for x in (values, rewards, dones, last_values, ratios))
    segments, horizon = values.shape
    targets = np.zeros((segments, horizon))
    for s in range(segments):
        next_v = np.append(values[s, 1:], last_values[s])
        discounts = gamma * (1 - dones[s])
        rho = np.minimum(ratios[s], rho_bar)
        c = np.minimum(ratios[s], c_bar)
        deltas = rho * (rewards[s] + discounts * next_v - values[s])
        for start in range(horizon):
            total, trace = 0.0, 1.0
            for t in range(start, horizon):
                total += trace * deltas[t]
                trace *= discounts[t] * c[t]
            targets[s, start] = values[s, start] + total
    return targets


def test_gae_equivalence_with_unit_importance():
    b = random_batch(16, 33, done_prob=0.15, seed=1)
    expected = gae_by_sums(b['values'], b['rewards'], b['dones'], b['last_values'], 0.99, 0.95)
    got = compute_advantage(**b, gamma=0.99, lam=0.95)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)
    # Explicit ratios of one, whatever the clips, are the same computation.
    ones = compute_advantage(**b, importance=torch.ones(16, 33), gamma=0.99, lam=0.95, rho_clip=5.0, c_clip=3.0)
    assert torch.equal(ones, got)


@pytest.mark.parametrize('rho_clip,c_clip', [(1.0, 1.0), (2.0, 0.5), (0.7, 1.5), (math.inf, math.inf)])
def test_vtrace_equivalence_with_lambda_one(rho_clip, c_clip):
    b = random_batch(12, 25, done_prob=0.1, seed=2, importance=True)
    targets = vtrace_targets(b['values'], b['rewards'], b['dones'], b['last_values'], b['importance'],
                             0.97, rho_clip, c_clip)
    got = compute_advantage(**b, gamma=0.97, lam=1.0, rho_clip=rho_clip, c_clip=c_clip)
    np.testing.assert_allclose(got.numpy(), targets - b['values'].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('shape', [(1, 1), (3, 1), (1, 64), (37, 64), (128, 17)])
@pytest.mark.parametrize('use_importance', [False, True])
def test_cpu_kernel_matches_reference(shape, use_importance):
    assert advantage.cpu_kernel_available(), 'pufferlib._advantage was not built'
    b = random_batch(*shape, done_prob=0.2, seed=shape[0] * 100 + shape[1], importance=use_importance)
    kwargs = dict(gamma=0.995, lam=0.9, rho_clip=1.3, c_clip=0.9)
    got = compute_advantage(**b, **kwargs)
    assert got.dtype == torch.float32 and got.shape == shape
    torch.testing.assert_close(got, reference_advantage(**b, **kwargs), rtol=1e-5, atol=1e-5)


def test_all_done_is_one_step_advantage():
    b = random_batch(4, 9, seed=3, importance=True)
    b['dones'] = torch.ones(4, 9, dtype=torch.bool)
    got = compute_advantage(**b, rho_clip=1.0)
    # Every step is its own episode: A_t = rho_t (r_t - V_t), and last_values is never read.
    expected = b['importance'].clamp(max=1.0) * (b['rewards'] - b['values'])
    torch.testing.assert_close(got, expected)
    b['last_values'] = torch.full((4,), 1e6)
    torch.testing.assert_close(compute_advantage(**b, rho_clip=1.0), expected)


def test_clipping_is_active():
    b = random_batch(8, 20, seed=4, importance=True)
    b['importance'] = torch.full((8, 20), 3.0)
    clipped = compute_advantage(**b, rho_clip=1.0, c_clip=1.0)
    # Ratios above both clips behave exactly like ratios equal to the clips.
    assert torch.equal(clipped, compute_advantage(**{**b, 'importance': torch.ones(8, 20)}))
    unclipped = compute_advantage(**b, rho_clip=10.0, c_clip=10.0)
    torch.testing.assert_close(unclipped, reference_advantage(**b, rho_clip=10.0, c_clip=10.0))
    assert not torch.allclose(clipped, unclipped)


def test_last_value_bootstraps_the_final_step():
    values = torch.zeros(1, 3)
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    dones = torch.zeros(1, 3)
    got = compute_advantage(values, rewards, dones, torch.tensor([10.0]), gamma=0.5, lam=1.0)
    # A_2 = 1 + 0.5 * 10 = 6, then discounted by 0.5 per step back.
    torch.testing.assert_close(got, torch.tensor([[1.5, 3.0, 6.0]]))


@pytest.mark.parametrize('dtype', [torch.bool, torch.uint8, torch.float32, torch.float64])
def test_dones_dtypes_agree(dtype):
    b = random_batch(5, 11, done_prob=0.3, seed=5)
    expected = compute_advantage(**b)
    assert torch.equal(compute_advantage(**{**b, 'dones': b['dones'].to(dtype)}), expected)


def test_float64_inputs_and_noncontiguous_views():
    b = random_batch(6, 10, seed=6, importance=True)
    expected = compute_advantage(**b)
    wide = {k: v.double() if v.dtype.is_floating_point else v for k, v in b.items()}
    torch.testing.assert_close(compute_advantage(**wide), expected)
    transposed = {k: (v.T.contiguous().T if v.dim() == 2 else v) for k, v in b.items()}
    assert not transposed['values'].is_contiguous()
    torch.testing.assert_close(compute_advantage(**transposed), expected)


def test_result_is_detached_and_inputs_untouched():
    b = random_batch(3, 5, seed=7)
    b['values'].requires_grad_(True)
    before = {k: v.detach().clone() for k, v in b.items()}
    out = compute_advantage(**b)
    assert not out.requires_grad
    for k, v in b.items():
        assert torch.equal(v.detach(), before[k]), k


def test_empty_batch():
    out = compute_advantage(torch.zeros(0, 4), torch.zeros(0, 4), torch.zeros(0, 4), torch.zeros(0))
    assert out.shape == (0, 4)


def test_torch_fallback_matches_reference():
    b = random_batch(9, 13, done_prob=0.2, seed=8, importance=True)
    kwargs = dict(gamma=0.9, lam=0.8, rho_clip=1.1, c_clip=0.9)
    got = advantage._torch_advantage(b['values'], b['rewards'], b['dones'].float(), b['last_values'],
                                     b['importance'], kwargs['gamma'], kwargs['lam'], kwargs['rho_clip'],
                                     kwargs['c_clip'])
    torch.testing.assert_close(got, reference_advantage(**b, **kwargs), rtol=1e-5, atol=1e-5)


def test_missing_cpu_kernel_warns_and_falls_back(monkeypatch):
    monkeypatch.setattr(advantage, '_cpu_kernel', None)
    monkeypatch.setattr(advantage, '_warned', set())
    b = random_batch(4, 6, seed=9)
    with pytest.warns(RuntimeWarning, match='torch loop'):
        got = compute_advantage(**b)
    torch.testing.assert_close(got, reference_advantage(**b))


@pytest.mark.parametrize('field,value,error,match', [
    ('values', np.zeros((2, 3), np.float32), TypeError, 'values must be a torch.Tensor'),
    ('values', torch.zeros(6), ValueError, r'values must have shape \[segments, horizon\]'),
    ('rewards', torch.zeros(2, 4), ValueError, r'rewards must have shape \[2, 3\]'),
    ('rewards', torch.zeros(2, 3, dtype=torch.int64), TypeError, 'rewards must be a floating-point'),
    ('dones', torch.zeros(3, 2), ValueError, r'dones must have shape \[2, 3\]'),
    ('dones', torch.zeros(2, 3, dtype=torch.int32), TypeError, 'dones must be bool, uint8'),
    ('dones', [[0, 0, 0], [0, 0, 0]], TypeError, 'dones must be a torch.Tensor'),
    ('last_values', torch.zeros(2, 1), ValueError, r'last_values must have shape \[2\]'),
    ('last_values', torch.zeros(3), ValueError, r'last_values must have shape \[2\]'),
    ('importance', torch.zeros(2, 2), ValueError, r'importance must have shape \[2, 3\]'),
    ('importance', torch.zeros(2, 3, dtype=torch.int64), TypeError, 'importance must be a floating-point'),
    ('gamma', 1.5, ValueError, r'gamma must lie in \[0.0, 1.0\]'),
    ('lam', -0.1, ValueError, 'lam must lie in'),
    ('lam', 'high', TypeError, 'lam must be a number'),
    ('rho_clip', 0.0, ValueError, r'rho_clip must lie in \(0.0, inf\]'),
    ('c_clip', float('nan'), ValueError, 'c_clip must lie in'),
])
def test_validation_names_the_argument(field, value, error, match):
    kwargs = dict(values=torch.zeros(2, 3), rewards=torch.zeros(2, 3), dones=torch.zeros(2, 3),
                  last_values=torch.zeros(2))
    kwargs[field] = value
    with pytest.raises(error, match=match):
        compute_advantage(**kwargs)


def test_validation_names_the_device():
    kwargs = dict(values=torch.zeros(2, 3), rewards=torch.zeros(2, 3), dones=torch.zeros(2, 3),
                  last_values=torch.zeros(2, device='meta'))
    with pytest.raises(ValueError, match='last_values is on meta but values is on cpu'):
        compute_advantage(**kwargs)


def test_cpu_kernel_rejects_bad_buffers_directly():
    kernel = advantage._cpu_kernel
    f = np.zeros((2, 3), np.float32)
    last, out = np.zeros(2, np.float32), np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match='rewards must hold float32'):
        kernel.compute(f, f.astype(np.float64), f, last, out, None, 2, 3, 0.9, 0.9, 1.0, 1.0)
    with pytest.raises(ValueError, match='last_values holds 2 float32 values, expected 3'):
        kernel.compute(f, f, f, last, out, None, 3, 2, 0.9, 0.9, 1.0, 1.0)
    with pytest.raises(TypeError, match='values must be a C-contiguous'):
        kernel.compute(np.zeros((3, 2), np.float32).T, f, f, last, out, None, 2, 3, 0.9, 0.9, 1.0, 1.0)
    out.setflags(write=False)
    with pytest.raises(TypeError, match='out must be a C-contiguous, writable'):
        kernel.compute(f, f, f, last, out, None, 2, 3, 0.9, 0.9, 1.0, 1.0)


@pytest.mark.skipif(shutil.which('nvcc') is None, reason='nvcc not found: the CUDA kernel is not built here')
@pytest.mark.skipif(os.environ.get('PUFFER_CUDA') == '0', reason='PUFFER_CUDA=0 skips the CUDA kernel build')
def test_cuda_library_was_built_and_loads():
    path = advantage.cuda_library_path()
    assert path is not None, 'nvcc exists but pufferlib/_advantage_cuda*.so is missing (was PUFFER_CUDA=0?)'
    assert advantage.cuda_kernel_available(), advantage._cuda_lib_error
    lib = advantage._load_cuda_library()
    # Empty work launches nothing; the error strings come back through the ctypes signature.
    assert lib.puffer_advantage_cuda(None, None, None, None, None, None, 0, 8, 0.9, 0.9, 1.0, 1.0, None) == 0
    assert b'no error' in lib.puffer_advantage_cuda_error(0)
    if not torch.cuda.is_available():  # a launch without a GPU fails with a code, never a crash
        code = lib.puffer_advantage_cuda(None, None, None, None, None, None, 1, 1, 0.9, 0.9, 1.0, 1.0, None)
        assert code != 0 and lib.puffer_advantage_cuda_error(code)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')
@pytest.mark.parametrize('use_importance', [False, True])
def test_cuda_kernel_matches_cpu(use_importance):
    assert advantage.cuda_kernel_available(), advantage._cuda_lib_error
    b = random_batch(1000, 64, done_prob=0.05, seed=10, importance=use_importance)
    kwargs = dict(gamma=0.99, lam=0.9, rho_clip=1.2, c_clip=0.8)
    cpu = compute_advantage(**b, **kwargs)
    gpu = compute_advantage(**{k: v.cuda() for k, v in b.items()}, **kwargs)
    assert gpu.device.type == 'cuda' and gpu.dtype == torch.float32
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-5, atol=1e-5)
    # A side stream: the kernel must run on torch's current stream, not the default one.
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        side = compute_advantage(**{k: v.cuda() for k, v in b.items()}, **kwargs)
    stream.synchronize()
    torch.testing.assert_close(side.cpu(), cpu, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')
def test_cuda_torch_fallback_matches_cpu(monkeypatch):
    monkeypatch.setattr(advantage, '_cuda_lib', None)
    monkeypatch.setattr(advantage, '_cuda_lib_error', 'disabled by the test')
    monkeypatch.setattr(advantage, '_warned', set())
    b = random_batch(50, 16, seed=11, importance=True)
    with pytest.warns(RuntimeWarning, match='disabled by the test'):
        gpu = compute_advantage(**{k: v.cuda() for k, v in b.items()})
    torch.testing.assert_close(gpu.cpu(), compute_advantage(**b), rtol=1e-5, atol=1e-5)
