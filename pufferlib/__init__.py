"""pufferlib: emulation, fast vectorization, first-party C environments and a PPO trainer.

The core (this module, emulation, vector) imports without torch.
"""
import difflib

from pufferlib.pufferenv import (APIUsageError, EnvError, PufferEnv, PufferError, SpaceError,
                                 make_buffers)

__version__ = '0.1.0'

__all__ = ['APIUsageError', 'EnvError', 'PufferEnv', 'PufferError', 'SpaceError', 'make',
           'make_buffers', 'env_names']


def env_names():
    """Every name `make` accepts: Ocean envs (puffer_*) and registered Gymnasium ids."""
    import gymnasium
    from pufferlib import environments
    names = []
    try:
        from pufferlib import ocean
        names.extend(ocean.env_names())
    except ImportError:
        pass
    names.extend(environments.env_names())
    names.extend(sorted(gymnasium.registry.keys()))
    return names


def make(name, buf=None, seed=None, **kwargs):
    """Create an emulated env by name: `puffer_<name>` for Ocean, else a registered Gymnasium id.

    Returns a PufferEnv ready for `pufferlib.vector.make` (which passes `buf` and `seed`).
    """
    if not isinstance(name, str):
        raise APIUsageError(f'env name must be a string, got {type(name).__name__}: {name!r}')
    if name.startswith('puffer_'):
        from pufferlib import ocean
        return ocean.make(name, buf=buf, seed=seed, **kwargs)
    from pufferlib import environments
    family = environments.family_of(name)
    if family is not None:  # a third-party binding (Atari, Procgen, NetHack, ...)
        return environments.make(name, buf=buf, seed=seed, **kwargs)
    import gymnasium
    if name in gymnasium.registry:
        from pufferlib import emulation
        return emulation.GymnasiumPufferEnv(env_creator=lambda: gymnasium.make(name, **kwargs), buf=buf, seed=seed)
    close = difflib.get_close_matches(name, env_names(), n=3, cutoff=0.6)
    hint = f' Did you mean {", ".join(close)}?' if close else ''
    raise APIUsageError(f'unknown environment {name!r}.{hint} Run `puffer envs` to list every name.')
