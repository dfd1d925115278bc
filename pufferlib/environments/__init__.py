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
    'mpe2': 'mpe2',
    'vizdoom': 'vizdoom',
    'magent2': 'magent2',
}

# The packages installed with --no-deps beside an extra (their metadata pins numpy<2; see
# docs/environments.md), as docker/envs/requirements-nodeps.txt lists them.
NO_DEPS = 'pip install -c constraints.txt --no-deps -r docker/envs/requirements-nodeps.txt'

# family -> (the pip extra that installs it, the modules its envs import, an install step beside the
# extra). `puffer envs` reads this to say what runs here without importing those packages. A family
# module whose envs need different packages defines `requirements(name)` -> modules instead.
REQUIREMENTS: dict[str, tuple[str | None, tuple[str, ...], str | None]] = {
    'classic_control': (None, (), None),
    'pettingzoo': ('pettingzoo', ('pygame',), None),  # and per game: pettingzoo.requirements
    'atari': ('atari', ('ale_py', 'cv2'), None),
    'procgen': ('procgen', ('procgen', 'gym3'), NO_DEPS),
    'nethack': ('nethack', ('nle',), NO_DEPS),
    'minihack': ('minihack', ('nle', 'minihack'), NO_DEPS),
    'pokemon': ('pokemon', ('pyboy',), None),
    'minigrid': ('minigrid', ('minigrid',), None),
    'crafter': ('crafter', ('crafter',), None),
    'mujoco': ('mujoco', ('mujoco',), None),
    'mpe2': ('mpe2', ('mpe2',), None),  # and per task: mpe2.requirements
    'vizdoom': ('vizdoom', ('vizdoom',), None),
    'magent2': ('magent2', ('magent2',), None),
}


def module(family: str) -> ModuleType:
    """The family's module (imports only it)."""
    return importlib.import_module(f'pufferlib.environments.{family}')


def install_line(extra: str, also: str | None = None) -> str:
    """What to run for a missing extra, in the words every "cannot run here" message uses."""
    line = f'install the {extra} extra: pip install -c constraints.txt -e ".[{extra}]" (in your pufferlib checkout)'
    return f'{line} && {also}' if also else line


def missing(family: str, name: str) -> str | None:
    """None when env `name` of `family` has its packages here; else one line that says what to install.
    Looks the packages up without importing them."""
    extra, modules, also = REQUIREMENTS.get(family, (family, (), None))
    needs = getattr(module(family), 'requirements', None)
    if needs is not None:
        modules = tuple(needs(name))
    lacking = [m for m in modules if absent(m)]
    if not lacking:
        return None
    return f'{name} needs {", ".join(lacking)}: {install_line(extra or family, also)}'


def absent(name: str) -> bool:
    """Whether module `name` is missing here, found without importing it."""
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a parent package missing, or sys.modules[name] set to None
        return True
