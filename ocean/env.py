"""OceanEnv: the Python side shared by every Ocean env.

An env folder supplies a subclass with its name, config defaults and spaces; the compiled binding
(ocean/binding.h instantiated by ocean/<name>/binding.c) does the rest. One OceanEnv holds
`num_envs` C env instances, so it has `num_envs * agents_per_env` rows, and `step` is one call into C
with no per-env Python. The C code writes straight into the arrays bound by PufferEnv, which are
shared memory under the Multiprocessing backend.
"""
import difflib
import importlib
import importlib.machinery
import importlib.util
import os
import sys

import numpy as np
from gymnasium import spaces

from pufferlib.pufferenv import APIUsageError, EnvError, PufferEnv

SEED_MASK = (1 << 64) - 1
# Steps between polls of the C episode logs: infos stay empty on almost every step and the poll
# (a sum over envs) costs nothing measurable.
REPORT_INTERVAL = 128


def load_binding(name):
    """Import the compiled binding of env `name`.

    PUFFER_OCEAN_LIB points at an alternative build tree (the sanitizer build of
    scripts/sanitize_ocean.sh) so sanitized and optimised builds can coexist in one checkout.
    """
    lib = os.environ.get('PUFFER_OCEAN_LIB')
    module_name = f'pufferlib.ocean.{name}.binding'
    if lib:
        folder = os.path.join(lib, 'pufferlib', 'ocean', name)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, 'binding' + suffix)
            if os.path.exists(path):
                if module_name in sys.modules:
                    return sys.modules[module_name]
                spec = importlib.util.spec_from_file_location(module_name, path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[module_name] = module
                return module
        raise EnvError(f'PUFFER_OCEAN_LIB={lib} has no compiled binding for {name!r} (looked in {folder})')
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise EnvError(f'the C extension of Ocean env {name!r} is not built ({e}). Build it with '
                       '`pip install -e . --no-build-isolation` or `python setup.py build_ext --inplace` '
                       'from the repository root') from None


class OceanEnv(PufferEnv):
    """Base class of the Ocean envs. Subclasses set `name`, `defaults` and `make_spaces`.

    Every key of `defaults` is a keyword argument (and, through the CLI, a flag). Values are checked
    here for name and type; the C side checks the ranges it relies on.
    """

    name = None
    defaults = {}

    def __init__(self, num_envs=1, buf=None, seed=None, **config):
        who = f'puffer_{self.name}'
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise APIUsageError(f'{who}: num_envs must be an int >= 1, got {num_envs!r}')
        self.num_envs = int(num_envs)
        self.config = self.resolve_config(config)
        obs_space, act_space, agents_per_env = self.make_spaces(self.config)
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.agents_per_env = agents_per_env
        self.num_agents = self.num_envs * agents_per_env
        self._binding = load_binding(self.name)
        super().__init__(buf)
        self.masks[...] = True  # Ocean envs never pad: every row is a live agent
        try:
            self._handle = self._binding.vec_init(self.observations, self.actions, self.rewards, self.terminals,
                                                  self.truncations, self.num_envs, dict(self.config))
        except (ValueError, KeyError, TypeError) as e:
            raise APIUsageError(f'{who}: {e}') from None
        self._check_layout()
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise APIUsageError(f'{who}: seed must be an int or None, got {seed!r}')
        self._seed = int(seed) if seed is not None else int(np.random.SeedSequence().entropy)
        self._resets = 0
        self._tick = 0
        self._discrete = isinstance(act_space, (spaces.Discrete, spaces.MultiDiscrete))
        self._frame = None
        self._binding.vec_reset(self._handle, self._seed & SEED_MASK)

    # ---- config and spaces ----

    def describe(self):
        return f'puffer_{self.name}'

    def resolve_config(self, config):
        who = f'puffer_{self.name}'
        out = dict(self.defaults)
        for key, value in config.items():
            if key not in self.defaults:
                close = difflib.get_close_matches(key, list(self.defaults), n=3)
                hint = f' Did you mean {", ".join(close)}?' if close else ''
                raise APIUsageError(f'{who}: unknown option {key!r}.{hint} Options: '
                                    f'{", ".join(f"{k}={v!r}" for k, v in self.defaults.items()) or "none"}')
            default = self.defaults[key]
            if isinstance(default, bool):
                ok = isinstance(value, (bool, np.bool_))
            elif isinstance(default, int):
                ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            else:
                ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            if not ok:
                raise APIUsageError(f'{who}: option {key} must be {type(default).__name__}, '
                                    f'got {type(value).__name__} {value!r}')
            out[key] = type(default)(value)
        return out

    def make_spaces(self, config):
        """Return (single observation Box, single flat action space, agents per env instance)."""
        raise NotImplementedError

    def _check_layout(self):
        """The C side computed its own row sizes; disagreeing with the Python spaces is a bug."""
        agents, obs_size, act_size, itemsize = self._binding.vec_layout(self._handle)
        obs = self.single_observation_space
        act = self.single_action_space
        expected = (self.agents_per_env, int(np.prod(obs.shape)), int(np.prod(act.shape)) or 1, obs.dtype.itemsize)
        if (agents, obs_size, act_size, itemsize) != expected:
            raise EnvError(f'puffer_{self.name}: C layout (agents, obs elements, action elements, obs itemsize) = '
                           f'{(agents, obs_size, act_size, itemsize)} but the Python spaces say {expected}')

    # ---- the PufferEnv API ----

    def reset(self, seed=None):
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
                raise APIUsageError(f'puffer_{self.name}: seed must be an int or None, got {seed!r}')
            self._seed, self._resets = int(seed), 0
        else:
            # An unseeded reset starts new episodes that still follow from the last seed.
            self._resets += 1
        self._binding.vec_reset(self._handle, (self._seed + self._resets * 0x9E3779B97F4A7C15) & SEED_MASK)
        self._binding.vec_log(self._handle)  # episodes cut short by a reset are not statistics
        self._tick = 0
        return self.observations, []

    def step(self, actions):
        # Values outside the space are clamped by the C env, never used as an index.
        self.copy_actions(actions)
        self._binding.vec_step(self._handle)
        self._tick += 1
        infos = []
        if self._tick % REPORT_INTERVAL == 0:
            log = self._binding.vec_log(self._handle)
            if log is not None:
                infos.append(log)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def log(self):
        """Episode means since the last report (or None), without waiting for the report interval."""
        return self._binding.vec_log(self._handle)

    def render(self, index=0):
        """RGB frame (uint8 [h, w, 3]) of env instance `index`."""
        h, w = self._binding.vec_frame_shape(self._handle)
        frame = np.zeros((h, w, 3), dtype=np.uint8)
        self._binding.vec_render(self._handle, int(index), frame)
        return frame

    def render_text(self, index=0):
        """Text view of env instance `index`, for terminals."""
        return self._binding.vec_text(self._handle, int(index))

    def close(self):
        # The capsule stays: using a closed env raises "this Ocean env is closed" from C.
        handle = getattr(self, '_handle', None)
        if handle is not None:
            self._binding.vec_close(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
