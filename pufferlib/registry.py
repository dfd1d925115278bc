"""The one registry: every environment name `puffer` accepts -> its family, maker, config layers,
scripted policies and option specs. (Finding runs, "latest" included, is the run layer's:
pufferlib/rundir.py.)

Names, tried in this order:
- Ocean: `puffer_<name>` for every folder `ocean/<name>/` with a spec.toml (found by scanning);
- third-party families (`pufferlib/environments/<family>.py`): a name equal to the family's prefix
  or starting with it and `_` (`nethack`, `atari_pong`); resolving it imports that family's module
  and no other;
- Gymnasium: every id in gymnasium's registry (`CartPole-v1`).

    entry = pufferlib.registry.lookup('puffer_pong')   # unknown names raise, with close matches
    entry.family, entry.config_layers(), entry.option_defaults(), entry.scripted_policies()
    env = entry.make(num_envs=8, seed=0)               # what pufferlib.make(name, ...) does
"""
import difflib
import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from pufferlib import invocation
from pufferlib.pufferenv import APIUsageError, MissingDependencyError, PufferEnv, PufferError

if TYPE_CHECKING:
    import gymnasium

    from pufferlib.ocean.spec import Option, Spec
    from pufferlib.environments import Range

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'config')


def _gymnasium_make(name: str, kwargs: dict[str, Any]) -> 'gymnasium.Env':
    """gymnasium.make, with a missing package (MuJoCo for Walker2d-v4, Box2D for LunarLander-v3) or a retired
    version (Walker2d-v2) as one line instead of a traceback from inside Gymnasium."""
    import gymnasium
    absent = _gymnasium_missing(name)  # before gymnasium.make, whose version warnings would bury the line
    if absent is not None:
        raise MissingDependencyError(absent)
    try:
        return gymnasium.make(name, **kwargs)
    except gymnasium.error.DependencyNotInstalled as e:
        raise MissingDependencyError(f'{name} needs a package that is not installed ({_first_line(e)}); install '
                                     'it, or pick another env from `puffer envs`') from None
    except gymnasium.error.Error as e:
        raise APIUsageError(f'{name} cannot run: {_first_line(e)}; pick another env from `puffer envs`') from None


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


# Gymnasium env module -> None if it imports here, else why not (one line); filled as names are asked about.
_GYMNASIUM_MODULES: dict[str, str | None] = {}


def _gymnasium_missing(name: str) -> str | None:
    """None when Gymnasium id `name` can run here; else one line that says why not and what to install.
    Tried by importing the env's module: the one test that Gymnasium's own checks agree with."""
    import gymnasium
    entry_point = gymnasium.registry[name].entry_point
    if callable(entry_point):
        # Retired ids (v2/v3 MuJoCo, the shimmy ones) point at a function that raises the reason.
        if not getattr(entry_point, '__name__', '').startswith('_raise'):
            return None
        try:
            entry_point()
        except Exception as e:  # noqa: BLE001 - whatever it raises is the reason
            return f'{name} cannot run: {_first_line(e)}'
        return None
    module_name = str(entry_point).partition(':')[0]
    if module_name not in _GYMNASIUM_MODULES:
        try:
            importlib.import_module(module_name)
            _GYMNASIUM_MODULES[module_name] = None
        except Exception as e:  # noqa: BLE001 - DependencyNotInstalled, ImportError, a broken native library
            _GYMNASIUM_MODULES[module_name] = _first_line(e)
    reason = _GYMNASIUM_MODULES[module_name]
    if reason is None:
        return None
    if module_name.startswith('gymnasium.envs.mujoco.'):
        from pufferlib import environments
        return f'{name} needs mujoco: {environments.install_line("mujoco")}'
    return f'{name} needs a package that is not installed, which no pufferlib extra installs ({reason})'


def missing(name: str) -> str | None:
    """None when env `name` can run here; else one line that says what to install (what `puffer envs`
    shows). Unknown names raise as in `lookup`."""
    entry = lookup(name)
    if entry.family == 'ocean':
        return None
    if entry.family == 'gymnasium':
        return _gymnasium_missing(name)
    from pufferlib import environments
    return environments.missing(entry.family, name)


@dataclass(frozen=True)
class Entry:
    """One environment name and what the platform knows about it."""

    name: str
    family: str  # 'ocean', a module of pufferlib.environments, or 'gymnasium'

    def make(self, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
        """The emulated env, ready for `pufferlib.vector` (which passes `buf` and `seed`)."""
        try:
            return self._make(buf, seed, kwargs)
        except TypeError as e:  # a keyword the env does not take, from --env.KEY or a caller
            unexpected = re.search(r"unexpected keyword argument '(\w+)'", str(e))
            if unexpected is None or isinstance(e, PufferError):
                raise
            raise APIUsageError(f'{self.name} takes no option {unexpected.group(1)!r} (--env.{unexpected.group(1)} '
                                'or a keyword argument); see docs/environments.md for its options') from None

    def _make(self, buf: SimpleNamespace | None, seed: int | None, kwargs: dict[str, Any]) -> PufferEnv:
        if self.family == 'ocean':
            import pufferlib.ocean as ocean
            return ocean.make(self.name, buf=buf, seed=seed, **kwargs)
        if self.family == 'gymnasium':
            from pufferlib import emulation
            return emulation.GymnasiumPufferEnv(env_creator=lambda: _gymnasium_make(self.name, kwargs), buf=buf,
                                                seed=seed)
        from pufferlib import environments
        environments.check_options(self.family, self.name, kwargs)  # before the packages: no env is built
        absent = environments.missing(self.family, self.name)  # the line `puffer envs` shows, before any import
        if absent is not None:
            raise MissingDependencyError(absent)
        return _family_module(self.family).make(self.name, buf=buf, seed=seed, **kwargs)

    def config_layers(self) -> list[str]:
        """The config files that apply, lowest priority first: the family's, then the env's own."""
        paths = [os.path.join(CONFIG_DIR, f'{self.family}.toml'), os.path.join(CONFIG_DIR, f'{self.name}.toml')]
        return [p for i, p in enumerate(paths) if os.path.exists(p) and p not in paths[:i]]  # nethack: family = env

    @property
    def spec(self) -> 'Spec | None':
        """The Ocean spec (pufferlib.ocean.spec.Spec), or None for other families."""
        if self.family != 'ocean':
            return None
        import pufferlib.ocean as ocean
        return ocean.spec_of(self.name)

    def option_specs(self) -> 'dict[str, Option]':
        """The env's declared options, name -> pufferlib.ocean.spec.Option (Ocean envs; {} elsewhere)."""
        return dict(self.spec.options) if self.spec else {}

    def option_ranges(self) -> 'dict[str, Range]':
        """A third-party family's options that have a meaning only in a range, name ->
        pufferlib.environments.Range (checked by make); {} for Ocean (see option_specs) and Gymnasium ids."""
        from pufferlib import environments
        return dict(environments.OPTIONS.get(self.family, {}))

    def option_defaults(self) -> dict[str, bool | int | float]:
        """The env's keyword arguments and their defaults, where it declares them (Ocean envs)."""
        return self.spec.defaults() if self.spec else {}

    def scripted_policies(self) -> dict[str, Callable]:
        """name -> policy(env, observations) -> actions; the first is the default. May be empty."""
        if self.family != 'ocean':
            return {}
        import pufferlib.ocean as ocean
        return ocean.scripted_policies(self.name)


# ---------------------------------------------------------------------------------------------
# Looking names up
# ---------------------------------------------------------------------------------------------

def _family_module(family: str) -> ModuleType:
    from pufferlib import environments
    return environments.module(family)


def _third_party_family(name: str) -> str | None:
    """The family whose prefix the name carries and which lists it, importing only that family."""
    from pufferlib import environments
    for family, prefix in environments.FAMILIES.items():
        if (name == prefix or name.startswith(prefix + '_')) and name in _family_module(family).env_names():
            return family
    return None


def family_of(name: str) -> str | None:
    """'ocean', a third-party family, 'gymnasium', or None for an unknown name."""
    if not isinstance(name, str):
        return None
    import pufferlib.ocean as ocean
    if name.startswith(ocean.PREFIX):
        return 'ocean' if name[len(ocean.PREFIX):] in ocean.SPECS else None
    family = _third_party_family(name)
    if family is not None:
        return family
    import gymnasium
    return 'gymnasium' if name in gymnasium.registry else None


def lookup(name: str) -> Entry:
    """The entry of env `name`; an unknown name raises an APIUsageError with close matches."""
    if not isinstance(name, str):
        raise APIUsageError(f'env name must be a string, got {type(name).__name__}: {name!r}')
    family = family_of(name)
    if family is None:
        close = difflib.get_close_matches(name, names(), n=3, cutoff=0.6)
        hint = f' Did you mean {", ".join(close)}?' if close else ''
        raise APIUsageError(f'unknown environment {name!r}.{hint} Run `{invocation.command("envs")}` to list '
                            'every name.')
    return Entry(name, family)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """Create an emulated env by name (see the module docstring for which names exist)."""
    return lookup(name).make(buf=buf, seed=seed, **kwargs)


def names(family: str | None = None) -> list[str]:
    """Every name `make` accepts (Ocean, then the families, then Gymnasium ids), or one family's.

    Listing imports every family module (each is cheap: packages load only when an env is made)."""
    from pufferlib import environments
    out: list[str] = []
    if family in (None, 'ocean'):
        try:
            import pufferlib.ocean as ocean
            out.extend(ocean.env_names())
        except ImportError:
            pass
    for fam in environments.FAMILIES:
        if family in (None, fam):
            out.extend(_family_module(fam).env_names())
    if family in (None, 'gymnasium'):
        import gymnasium
        out.extend(sorted(gymnasium.registry.keys()))
    return out


def families() -> list[str]:
    from pufferlib import environments
    return ['ocean', *environments.FAMILIES, 'gymnasium']
