"""pufferlib.vector.make refuses, before any worker starts, a vector env whose buffers and env objects need
more memory than is available: num_envs=10**7 CartPoles ran 8 minutes before the out-of-memory killer took
a 12 GB worker. When it fits, the check costs one small probe env."""
import time
from types import SimpleNamespace

import psutil
import pytest

import pufferlib
import pufferlib.vector
from pufferlib.vector import multiprocessing as mp_backend


def test_huge_num_envs_is_one_fast_error_before_any_worker(monkeypatch):
    def no_workers(*args, **kwargs):
        raise AssertionError('a worker was started')
    monkeypatch.setattr(mp_backend.Multiprocessing, '__init__', no_workers)
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    start = time.perf_counter()
    with pytest.raises(pufferlib.APIUsageError) as info:
        pufferlib.vector.make('CartPole-v1', backend='Multiprocessing', num_envs=10**7)
    assert time.perf_counter() - start < 30
    message = str(info.value)
    assert '10,000,000 envs need at least' in message and 'of memory is available; lower num_envs' in message
    assert 'env objects' in message, message  # CartPole's buffers alone fit: its env objects do not
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children


def test_buffers_that_do_not_fit_are_refused(monkeypatch):
    monkeypatch.setattr(pufferlib.vector.psutil, 'virtual_memory', lambda: SimpleNamespace(available=10_000))
    with pytest.raises(pufferlib.APIUsageError, match=r'env buffers \(8,192 agent rows') as info:
        pufferlib.vector.make('puffer_squared', backend='Serial', num_envs=8, env_kwargs={'num_envs': 1024})
    assert 'lower num_envs or env_kwargs["num_envs"]' in str(info.value)


def test_a_vector_that_fits_builds_no_second_probe(monkeypatch):
    def measured(*args):
        raise AssertionError('an env object was measured for a small vector env')
    monkeypatch.setattr(pufferlib.vector, '_env_object_bytes', measured)
    with pufferlib.vector.make('CartPole-v1', backend='Serial', num_envs=16) as vecenv:
        assert vecenv.num_envs == 16
