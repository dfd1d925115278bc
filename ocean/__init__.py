"""Ocean: first-party environments written in C, installed as `pufferlib.ocean`.

Each env lives in `ocean/<name>/`: `<name>.h` (the simulation, see ocean/ocean.h for the contract),
`binding.c` (a few lines reusing ocean/binding.h) and `__init__.py` (spaces and config defaults).
`make('puffer_<name>', num_envs=N, ...)` returns one PufferEnv that runs N instances in C.
"""
import difflib
import importlib

from pufferlib.pufferenv import APIUsageError

# name -> class in pufferlib.ocean.<name>; the order is the catalogue order (sanity suite, then games)
ENVS = {
    'squared': 'Squared',
    'password': 'Password',
    'stochastic': 'Stochastic',
    'memory': 'Memory',
    'multiagent': 'Multiagent',
    'spaces': 'Spaces',
    'bandit': 'Bandit',
    'cartpole': 'Cartpole',
    'pong': 'Pong',
    'breakout': 'Breakout',
    'snake': 'Snake',
    'connect4': 'Connect4',
    'maze': 'Maze',
}
# Built and tested like the others, but kept out of the catalogue and the benchmark.
TEMPLATES = {'template': 'Template'}
SANITY = ('squared', 'password', 'stochastic', 'memory', 'multiagent', 'spaces', 'bandit')
PREFIX = 'puffer_'


def env_names():
    """Every Ocean env name `make` accepts, e.g. 'puffer_pong'."""
    return [PREFIX + name for name in ENVS]


def env_class(name):
    """The OceanEnv subclass for 'puffer_<name>' (the bare '<name>' is accepted too)."""
    if not isinstance(name, str):
        raise APIUsageError(f'env name must be a string, got {type(name).__name__}: {name!r}')
    short = name[len(PREFIX):] if name.startswith(PREFIX) else name
    known = {**ENVS, **TEMPLATES}
    if short not in known:
        close = difflib.get_close_matches(name, env_names() + list(ENVS), n=3, cutoff=0.5)
        hint = f' Did you mean {", ".join(close)}?' if close else ''
        raise APIUsageError(f'unknown Ocean environment {name!r}.{hint} Ocean envs: {", ".join(env_names())}')
    module = importlib.import_module(f'pufferlib.ocean.{short}')
    return getattr(module, known[short])


def make(name, buf=None, seed=None, **kwargs):
    """Create Ocean env `name` ('puffer_pong'); kwargs are `num_envs` and the env's config options."""
    return env_class(name)(buf=buf, seed=seed, **kwargs)
