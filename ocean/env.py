"""OceanEnv: the Python side shared by every Ocean env.

`pufferlib.ocean.env_class(name)` gives each env a subclass carrying its spec (ocean/<name>/spec.toml,
parsed by ocean/spec.py): options, spaces and agents per env come from there, so nothing here is
per-env. The compiled binding (ocean/binding.h, instantiated per env by setup.py) does the rest. One
OceanEnv holds `num_envs` C env instances, so it has `num_envs * agents_per_env` rows, and `step` is
one call into C with no per-env Python. The C code writes straight into the arrays bound by
PufferEnv, which are shared memory under the Multiprocessing backend.
"""
import difflib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.pufferenv import (APIUsageError, EnvError, MixedSpace, PufferEnv, StateError, StateIdentity,
                                 check_buffer_size, check_seed, state_hash, typed_option)

from .spec import Spec, Value

SEED_MASK = (1 << 64) - 1
# Steps between polls of the C episode logs: infos stay empty on almost every step and the poll
# (a sum over envs) costs nothing measurable.
REPORT_INTERVAL = 128


def load_binding(name: str) -> ModuleType:
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
                if spec is None or spec.loader is None:  # not for a path with an extension suffix
                    raise EnvError(f'PUFFER_OCEAN_LIB={lib}: cannot load {path} as a Python extension')
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


def make_spaces(spec: Spec, config: dict[str, Value]) -> tuple[spaces.Box, spaces.Space]:
    """The (observation Box of one row, flat action space) that `spec` declares for `config`."""
    shape = spec.obs_shape_of(config)
    low = np.empty(int(np.prod(shape)), dtype=np.float64)
    high = np.empty_like(low)
    at = 0
    for _, size, lo, hi, _ in spec.obs_segments:
        n = int(size(config))
        low[at:at + n], high[at:at + n] = lo, hi
        at += n
    dtype = np.dtype(spec.obs_dtype)
    if len(spec.obs_segments) == 1:  # scalar bounds, like Box(0, 2, (121,), uint8)
        obs = spaces.Box(low=spec.obs_segments[0][2], high=spec.obs_segments[0][3], shape=shape, dtype=dtype)
    else:
        obs = spaces.Box(low=low.reshape(shape).astype(dtype), high=high.reshape(shape).astype(dtype), dtype=dtype)
    box = spec.box_size(config)
    if box and spec.action_mixed:
        return obs, MixedSpace(spec.action_dims(config), np.full(box, spec.action_low), np.full(box, spec.action_high))
    if box:
        return obs, spaces.Box(low=spec.action_low, high=spec.action_high, shape=(box,), dtype=np.float32)
    dims = spec.action_dims(config)
    act = spaces.Discrete(dims[0]) if spec.action_n is not None else spaces.MultiDiscrete(dims)
    return obs, act


class OceanEnv(PufferEnv):
    """Base class of the Ocean envs; `pufferlib.ocean.env_class` sets `spec` and `name` per env.

    Every option of the spec is a keyword argument (and, through the CLI, a flag); names, types,
    ranges and checks are validated here, and the C side re-checks the packed struct with code
    generated from the same spec. With `[action] mask = true` in the spec, `action_masks` is a bool
    array [num_agents, n_actions] (True = legal) that the C env rewrites on every reset and step.
    """

    # Declared, not defined: env_class sets both on each env's subclass.
    spec: Spec
    name: str

    def __init__(self, num_envs: int = 1, buf: SimpleNamespace | None = None, seed: int | None = None,
                 **options: Any) -> None:
        who = self.describe()
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise APIUsageError(f'{who}: num_envs must be an int >= 1, got {num_envs!r}')
        seed = check_seed(seed, lambda: who)
        self.num_envs = int(num_envs)
        self.config = self.resolve_config(options)
        obs_space, act_space = self.make_spaces(self.config)
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.agents_per_env = self.spec.num_agents(self.config)
        self.num_agents = self.num_envs * self.agents_per_env
        if self.spec.action_mask:  # PufferEnv binds action_masks: the vector's shared rows when it passes buf
            self.action_mask_width = self.spec.num_actions(self.config)
        check_buffer_size(obs_space, act_space, self.num_agents, who, self.action_mask_width)  # before C allocates
        self._binding = load_binding(self.name)
        super().__init__(buf)
        self.masks[...] = True  # Ocean envs never pad; turn-based ones (ocean/seats.h) rewrite it from C
        try:
            self._handle = self._binding.vec_init(self.observations, self.actions, self.rewards, self.terminals,
                                                  self.truncations, self.masks, self.action_masks, self.num_envs,
                                                  self.spec.pack(self.config))
        except ValueError as e:
            raise APIUsageError(f'{who}: {e}') from None
        except RuntimeError as e:
            raise EnvError(f'{who}: the C env could not start: {e}') from None
        # A SeedSequence made without entropy draws an int of its own.
        self._seed = seed if seed is not None else int(cast(int, np.random.SeedSequence().entropy))
        self._resets = 0
        self._tick = 0
        self._binding.vec_reset(self._handle, self._seed & SEED_MASK)

    # ---- config and spaces ----

    def describe(self) -> str:
        return self.spec.env_name

    def resolve_config(self, options: dict[str, Any]) -> dict[str, Value]:
        """The defaults overridden by `options`, checked for names, types, ranges and the spec's checks."""
        who = self.describe()
        spec = self.spec
        out = spec.defaults()
        for key, value in options.items():
            if key not in spec.options:
                close = difflib.get_close_matches(key, list(spec.options), n=3)
                hint = f' Did you mean {", ".join(close)}?' if close else ''
                raise APIUsageError(f'{who}: unknown option {key!r}.{hint} Options: '
                                    f'{", ".join(f"{k}={v!r}" for k, v in out.items()) or "none"}')
            kind = spec.options[key].kind
            typed = typed_option(value, kind)
            if typed is None:
                raise APIUsageError(f'{who}: option {key} must be {kind}, got {type(value).__name__} {value!r}')
            out[key] = typed
        problem = spec.problem(out)
        if problem:
            raise APIUsageError(f'{who}: {problem}. Every option\'s range: `puffer train {who} --help`')
        return out

    def make_spaces(self, config: dict[str, Value]) -> tuple[spaces.Box, spaces.Space]:
        """The spaces the spec declares; an env's subclass may extend this (see ocean/spaces)."""
        return make_spaces(self.spec, config)

    # ---- saved states (pufferlib.pufferenv; the C side is in ocean/binding.h) ----

    supports_state = True

    @property
    def num_games(self) -> int:  # type: ignore[override]
        return self.num_envs

    def state_identity(self) -> StateIdentity:
        identity = getattr(self, '_state_identity', None)
        if identity is None:
            self._check_open()
            payload_bytes, version, env_bytes, blocks = self._binding.vec_state_info(self._handle)
            identity = self._state_identity = StateIdentity(
                self.spec.env_name, version, state_hash(self.spec.pack(self.config)),
                state_hash((payload_bytes, env_bytes, blocks)))
        return identity

    def _save_game(self, game: int) -> bytes:
        self._check_open()
        return self._binding.vec_get_state(self._handle, game)

    def _load_game(self, game: int, payload: memoryview) -> None:
        self._check_open()
        try:
            self._binding.vec_set_state(self._handle, game, payload)
        except ValueError as e:  # the length, which the header already vouched for: a mismatched build
            raise StateError(f'{self.describe()}: {e}') from None

    # ---- progress counters and cells (spec.toml's [[progress]] and cell; ocean/binding.h) ----

    @property
    def progress_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(name for name, _ in self.spec.progress_fields)

    @property
    def has_cells(self) -> bool:  # type: ignore[override]
        return bool(self.spec.cell_help)

    def game_progress(self) -> np.ndarray:
        if not self.spec.progress_fields:
            return super().game_progress()
        self._check_open()
        out = np.zeros((self.num_envs, len(self.spec.progress_fields)), dtype=np.float64)
        self._binding.vec_progress(self._handle, out)
        return out

    def game_cells(self) -> np.ndarray:
        if not self.spec.cell_help:
            return super().game_cells()
        self._check_open()
        out = np.zeros(self.num_envs, dtype=np.int64)
        self._binding.vec_cells(self._handle, out)
        return out

    # ---- the PufferEnv API ----

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        checked = check_seed(seed, self.describe)  # None exactly when seed is
        if checked is not None:
            self._seed, self._resets = checked, 0
        else:
            # An unseeded reset starts new episodes that still follow from the last seed.
            self._resets += 1
        self._check_open()
        self._binding.vec_reset(self._handle, (self._seed + self._resets * 0x9E3779B97F4A7C15) & SEED_MASK)
        self._binding.vec_log(self._handle)  # episodes cut short by a reset are not statistics
        self._tick = 0
        return self.observations, []

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        # Values outside the space are clamped by the C env, never used as an index. Box actions past
        # the bounds are taken (a Gaussian policy's samples are) and clamped there too; NaN is refused.
        self.copy_actions(actions)
        infos = self._advance()
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def _advance(self) -> list[dict]:
        """One C step of every env with the actions already in the buffer; the episode log every
        REPORT_INTERVAL steps, as step()'s infos."""
        try:
            self._binding.vec_step(self._handle)
        except RuntimeError:  # the binding's only error here: the env was closed
            self._check_open()
            raise
        self._tick += 1
        infos: list[dict] = []
        if self._tick % REPORT_INTERVAL == 0:
            log = self._binding.vec_log(self._handle)
            if log is not None:
                infos.append(log)
        return infos

    def log(self) -> dict[str, float] | None:
        """Episode means since the last report (or None), without waiting for the report interval."""
        self._check_open()
        return self._binding.vec_log(self._handle)

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame (uint8 [h, w, 3]) of env instance `index`."""
        index = self._check_index(index)
        h, w = self._binding.vec_frame_shape(self._handle)
        frame = np.zeros((h, w, 3), dtype=np.uint8)
        self._binding.vec_render(self._handle, index, frame)
        return frame

    def render_text(self, index: int = 0) -> str:
        """Text view of env instance `index`, for terminals."""
        return self._binding.vec_text(self._handle, self._check_index(index))

    def close(self) -> None:
        self._closed = True
        handle = getattr(self, '_handle', None)
        if handle is not None:
            self._binding.vec_close(handle)

    def _check_open(self) -> None:
        if getattr(self, '_closed', False):
            raise EnvError(f'{self.describe()} is closed; make a new env')

    def _check_index(self, index: int) -> int:
        self._check_open()
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < self.num_envs:
            raise APIUsageError(f'{self.describe()}: env index must be an int in [0, {self.num_envs}), got {index!r}')
        return int(index)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


# A scripted policy (an env folder's SCRIPTED): policy(env, observations) -> one action row per agent.
ScriptedPolicy = Callable[[OceanEnv, np.ndarray], np.ndarray]
