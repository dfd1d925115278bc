"""pufferlib: emulation, fast vectorization, first-party C environments and a PPO trainer.

The core (this module, emulation, vector) imports without torch.
"""
from pufferlib.pufferenv import (ActionMaskError, APITypeError, APIUsageError, EnvError, IllegalActionError,
                                 MissingDependencyError, PufferEnv, PufferError, SpaceError, make_buffers,
                                 nonfinite_rows)
from pufferlib.registry import make

__version__ = '0.1.0'

__all__ = ['ActionMaskError', 'APITypeError', 'APIUsageError', 'EnvError', 'IllegalActionError',
           'MissingDependencyError', 'PufferEnv', 'PufferError', 'SpaceError', 'make', 'make_buffers', 'env_names',
           'nonfinite_rows']


def env_names() -> list[str]:
    """Every name `make` accepts: Ocean envs (puffer_*), the third-party families, Gymnasium ids."""
    from pufferlib import registry
    return registry.names()
