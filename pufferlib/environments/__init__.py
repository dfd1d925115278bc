"""Third-party environment bindings, one module per family.

Each family module exposes `env_names()` and `make(name, buf=None, seed=None, **kwargs)`. Its names
carry the family's prefix (`atari_pong`, `nethack`), so `pufferlib.registry` resolves a name by
importing only the one module it belongs to. A family whose packages are missing still lists its
names; making one raises an ImportError with the pip extra.

Adding a family: write `pufferlib/environments/<family>.py`, add its line below, and give it a
default config `pufferlib/config/<family>.toml` (docs/contributing.md).
"""
import importlib
from types import ModuleType

# family (module under pufferlib.environments) -> the prefix of its env names
FAMILIES = {
    'classic_control': 'classic',
    'pettingzoo': 'pettingzoo',
    'atari': 'atari',
    'procgen': 'procgen',
    'nethack': 'nethack',
    'minihack': 'minihack',
    'pokemon': 'pokemon',
    'minigrid': 'minigrid',
    'crafter': 'crafter',
}


def module(family: str) -> ModuleType:
    """The family's module (imports only it)."""
    return importlib.import_module(f'pufferlib.environments.{family}')
