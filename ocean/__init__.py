"""Ocean: first-party environments written in C, installed as `pufferlib.ocean`.

Each env is one folder `ocean/<name>/`: `spec.toml` (its one declaration: options, spaces, agents),
`<name>.h` (the simulation, see ocean/ocean.h for the contract) and an optional `__init__.py`
(scripted policies, special cases). Envs are found by scanning these folders; there is no list to
keep. `make('puffer_<name>', num_envs=N, ...)` returns one PufferEnv that runs N instances in C.
"""
import difflib
import importlib
import os
from types import ModuleType, SimpleNamespace
from typing import Any, cast

from pufferlib.pufferenv import APIUsageError, EnvError

# Relative imports inside ocean/: mypy checks this folder as the package `ocean` (it cannot see the
# install's mapping to pufferlib.ocean) and resolves them there as Python does here.
from . import spec as ocean_spec
from .env import OceanEnv, ScriptedPolicy

ROOT = os.path.dirname(os.path.abspath(__file__))
PREFIX = ocean_spec.PREFIX

try:
    SPECS = ocean_spec.discover(ROOT)  # name -> Spec, in catalogue order
except ocean_spec.SpecError as e:
    raise EnvError(f'an Ocean spec is broken: {e}') from None
# Derived from the specs, never edited by hand: the catalogue (what `puffer envs` lists and the
# benchmark runs), the sanity suite, and the templates (built and tested, not listed).
ENVS = tuple(name for name, s in SPECS.items() if s.group != 'template')
SANITY = tuple(name for name, s in SPECS.items() if s.group == 'sanity')
TEMPLATES = tuple(name for name, s in SPECS.items() if s.group == 'template')
_classes: dict[str, type[OceanEnv]] = {}


def env_names() -> list[str]:
    """Every Ocean env name in the catalogue, e.g. 'puffer_pong'."""
    return [PREFIX + name for name in ENVS]


def short_name(name: str) -> str:
    """'puffer_pong' (or 'pong') -> 'pong'; an unknown name raises with close matches."""
    if not isinstance(name, str):
        raise APIUsageError(f'env name must be a string, got {type(name).__name__}: {name!r}')
    short = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if short not in SPECS:
        close = difflib.get_close_matches(name, env_names() + list(ENVS), n=3, cutoff=0.5)
        hint = f' Did you mean {", ".join(close)}?' if close else ''
        raise APIUsageError(f'unknown Ocean environment {name!r}.{hint} Ocean envs: {", ".join(env_names())}')
    return short


def spec_of(name: str) -> ocean_spec.Spec:
    """The parsed spec.toml of 'puffer_<name>'."""
    return SPECS[short_name(name)]


def _module(short: str) -> ModuleType | None:
    """The env folder's Python module, or None when the folder has none."""
    if not os.path.exists(os.path.join(ROOT, short, '__init__.py')):
        return None
    return importlib.import_module(f'pufferlib.ocean.{short}')


def env_class(name: str) -> type[OceanEnv]:
    """The OceanEnv subclass of 'puffer_<name>': the one its folder defines (named like the C struct),
    else a plain one made from the spec."""
    short = short_name(name)
    if short not in _classes:
        s = SPECS[short]
        module = _module(short)
        found = getattr(module, s.c_struct, None) if module else None
        if found is None:
            cls = cast(type[OceanEnv], type(s.c_struct, (OceanEnv,), {'__doc__': f'{s.env_name}: {s.summary}',
                                                                      '__module__': f'pufferlib.ocean.{short}'}))
        elif not (isinstance(found, type) and issubclass(found, OceanEnv)):
            raise EnvError(f'pufferlib.ocean.{short}.{s.c_struct} must be a subclass of OceanEnv')
        else:
            cls = found
        cls.spec, cls.name = s, short
        _classes[short] = cls
    return _classes[short]


def scripted_policies(name: str) -> dict[str, ScriptedPolicy]:
    """The env's scripted policies, name -> policy(env, observations) -> actions (may be empty);
    the first one is the default. They live in the env folder's `SCRIPTED` dict."""
    module = _module(short_name(name))
    return dict(getattr(module, 'SCRIPTED', {})) if module else {}


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> OceanEnv:
    """Create Ocean env `name` ('puffer_pong'); kwargs are `num_envs` and the env's options."""
    return env_class(name)(buf=buf, seed=seed, **kwargs)
