"""Small helpers shared by the family modules: dependency checks and name errors."""
import difflib
import importlib

from pufferlib.pufferenv import APIUsageError


def require(module, extra, also=None):
    """Import `module` or raise an ImportError that says which pip extra installs it.

    `also` is a second install line for packages whose metadata pins conflict with ours
    (procgen, nle), which are installed with --no-deps; see docs/environments.md.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        hint = f'pip install "pufferlib[{extra}]"'
        if also:
            hint = f'{hint} && {also}'
        raise ImportError(f'the {extra} environments need the {module!r} package ({e}). Install them with: '
                          f'{hint}') from e


def check_name(name, names, family):
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f' Did you mean {", ".join(close)}?' if close else ''
        raise APIUsageError(f'unknown {family} environment {name!r}.{hint} Known: {", ".join(names)}')
