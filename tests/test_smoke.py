"""pufferlib.smoke, what scripts/smoke_envs.py (the container check's env smoke test) asks of every
family: a missing extra is "absent", but an import that breaks for any other reason is a failure (it
once reported a broken image as 9 absent families and passed)."""
import pytest

import pufferlib
from pufferlib.smoke import smoke


@pytest.mark.parametrize('error, status', [
    (ImportError('atari needs its packages. Install them with: pip install pufferlib[atari]'), 'absent'),
    (ImportError("cannot import name 'ocean' from 'pufferlib'"), 'FAILED'),
])
def test_only_a_missing_extra_counts_as_absent(monkeypatch, error, status):
    def make(name):
        raise error
    monkeypatch.setattr(pufferlib, 'make', make)
    assert smoke('atari_alien')[0] == status


def test_a_binding_whose_package_is_missing_is_absent(monkeypatch):
    # The error a binding really raises (its install hint reads `-e ".[atari]"`), not a made-up one.
    from pufferlib.environments._support import require

    def make(name):
        require('puffer_no_such_package', 'atari')
    monkeypatch.setattr(pufferlib, 'make', make)
    status, extra, detail = smoke('atari_alien')
    assert (status, extra) == ('absent', 'atari'), detail
    assert "need the 'puffer_no_such_package' package" in detail


def test_a_real_env_steps():
    status, _, detail = smoke('classic_cartpole')
    assert status == 'stepped', detail
