"""Third-party environment bindings, one module per family.

Each family module exposes `env_names()` and `make(name, buf=None, seed=None, **kwargs)`; the
registry below maps names to families so `pufferlib.make` and the CLI resolve them. A family whose
packages are missing still lists its names; making one raises an ImportError with the pip extra.
"""
import importlib

# family -> module under pufferlib.environments. Filled in as bindings are added.
FAMILIES = {
    'classic_control': 'classic_control',
    'pettingzoo': 'pettingzoo',
    'atari': 'atari',
    'procgen': 'procgen',
    'nethack': 'nethack',
    'minihack': 'minihack',
    'pokemon': 'pokemon',
    'minigrid': 'minigrid',
    'crafter': 'crafter',
}


def _module(family):
    return importlib.import_module(f'pufferlib.environments.{FAMILIES[family]}')


def env_names():
    names = []
    for family in FAMILIES:
        names.extend(_module(family).env_names())
    return names


def family_of(name):
    """The family that provides env `name`, or None when no binding does."""
    for family in FAMILIES:
        if name in _module(family).env_names():
            return family
    return None


def make(name, buf=None, seed=None, **kwargs):
    family = family_of(name)
    if family is None:
        raise KeyError(name)
    return _module(family).make(name, buf=buf, seed=seed, **kwargs)
