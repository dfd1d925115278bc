"""scripts/smoke_envs.py, the container check's env smoke test: a missing extra is "absent", but an
import that breaks for any other reason is a failure (it once reported a broken image as 9 absent
families and passed)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scripts'))
import smoke_envs  # noqa: E402


@pytest.mark.parametrize('error, status', [
    (ImportError('atari needs its packages. Install them with: pip install pufferlib[atari]'), 'absent'),
    (ImportError("cannot import name 'ocean' from 'pufferlib'"), 'FAILED'),
])
def test_only_a_missing_extra_counts_as_absent(monkeypatch, error, status):
    def make(name):
        raise error
    monkeypatch.setattr(smoke_envs.pufferlib, 'make', make)
    assert smoke_envs.smoke('atari_alien')[0] == status


def test_a_real_env_steps():
    status, _, detail = smoke_envs.smoke('classic_cartpole')
    assert status == 'stepped', detail
