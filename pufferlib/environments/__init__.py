"""Third-party environment bindings, one module per family.

Each family module exposes `env_names()` and `make(name, buf=None, seed=None, **kwargs)`. Its names
carry the family's prefix (`atari_pong`, `nethack`), so `pufferlib.registry` resolves a name by
importing only the one module it belongs to. A family whose packages are missing still lists its
names; making one raises an ImportError with the pip extra.

Adding a family: write `pufferlib/environments/<family>.py`, add its line below, and give it a
default config `pufferlib/config/<family>.toml` (docs/contributing.md).
"""
import importlib
import importlib.util
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
    'mujoco': 'mujoco',
}


def module(family: str) -> ModuleType:
    """The family's module (imports only it)."""
    return importlib.import_module(f'pufferlib.environments.{family}')


def install_line(extra: str, also: str | None = None) -> str:
    """What to run for a missing extra, in the words every "cannot run here" message uses."""
    line = f'install the {extra} extra: pip install -c constraints.txt -e ".[{extra}]" (in your pufferlib checkout)'
    return f'{line} && {also}' if also else line


def absent(name: str) -> bool:
    """Whether module `name` is missing here, found without importing it."""
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a parent package missing, or sys.modules[name] set to None
        return True
