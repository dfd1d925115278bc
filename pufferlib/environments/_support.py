"""Small helpers shared by the family modules: dependency checks and name errors."""
import difflib
import importlib
from collections.abc import Callable, Sequence
from types import ModuleType

from pufferlib.pufferenv import APIUsageError, MissingDependencyError


def require(module: str, extra: str, also: str | None = None) -> ModuleType:
    """Import `module` or raise a MissingDependencyError (an ImportError) that says which pip extra installs it.

    `also` is a second install line for packages whose metadata pins conflict with ours
    (procgen, nle), which are installed with --no-deps; see docs/environments.md.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        # From a checkout of this repository: "pufferlib" on the public index is another project.
        hint = f'pip install -c constraints.txt -e ".[{extra}]" (in your pufferlib checkout)'
        if also:
            hint = f'{hint} && {also}'
        raise MissingDependencyError(f'the {extra} environments need the {module!r} package ({e}). Install them with: '
                          f'{hint}') from e


def check_name(name: str, names: Sequence[str], family: str) -> None:
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f' Did you mean {", ".join(close)}?' if close else ''
        raise APIUsageError(f'unknown {family} environment {name!r}.{hint} Known: {", ".join(names)}')


def lazy_policy(module_name: str, build: Callable[[], type]) -> Callable[[str], type]:
    """A module-level __getattr__ that builds `Policy` (which needs torch) on first access and keeps
    it, so importing a binding stays torch-free."""
    cache: list[type] = []

    def __getattr__(attr: str) -> type:
        if attr == 'Policy':
            if not cache:
                cache.append(build())
            return cache[0]
        raise AttributeError(f'module {module_name!r} has no attribute {attr!r}')
    return __getattr__
