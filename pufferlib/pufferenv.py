"""The one contract every environment in pufferlib satisfies, and the errors users can cause.

The errors are defined in pufferlib/errors.py and the saved-state bytes in pufferlib/saved_state.py;
this module re-exports both, so `from pufferlib.pufferenv import StateError` keeps working.

A PufferEnv owns `num_agents` rows in six preallocated arrays:

    observations  [num_agents, *single_observation_space.shape]  single_observation_space.dtype
    actions       [num_agents, *single_action_space.shape]       int32 (discrete) or float32 (Box, MixedSpace)
    rewards       [num_agents]                                    float32
    terminals     [num_agents]                                    bool
    truncations   [num_agents]                                    bool
    masks         [num_agents]                                    bool (False: padding, no agent there)

and, when the env publishes legal actions (`action_mask_width` set before `PufferEnv.__init__`), a
seventh:

    action_masks  [num_agents, action_mask_width]                  bool (True: the action is legal)

where the width is n for Discrete actions and the sum of nvec for MultiDiscrete ones (the sub-masks
side by side). A row that is not to act on a step (a waiting seat of a turn-based game, padding)
allows action 0 alone (of each sub-action), so a masked sampler is defined on every row.

`reset(seed)` fills observations and returns `(observations, infos)`; `step(actions)` copies the actions
in, steps, fills every array and returns `(observations, rewards, terminals, truncations, infos)`.
`infos` is a list of dicts that is empty on almost every step.

Autoreset is "same step": when an episode ends on a step, that step's rewards/terminals/truncations
describe the final transition and the observation already belongs to the next episode. No step is
spent on resetting, which is what a [segments, horizon] rollout buffer wants. Every backend in
`pufferlib.vector` keeps this behaviour because the envs themselves implement it.

The arrays are handed in through `buf` so a vector backend can place them in shared memory; with
`buf=None` the env allocates its own.

Saved states. An env that can snapshot itself sets `supports_state = True`. It holds `num_games`
games (an Ocean env object holds `num_envs` of them, an emulated env one), game g owning the rows
`[g * k, (g + 1) * k)` with `k = num_agents // num_games`. `get_state(game)` returns that game's whole
state as bytes; `set_state(game, state)` loads one into any game of an env with the same identity:
the game's observation rows (and masks, action masks) are the restored ones at once, its rewards,
terminals and truncations read 0/False (loading is not a transition), and the next step continues the
saved game exactly, RNG included. A state starts with an 80-byte header (`pack_state`): a magic, the
header format, the env's name, its state version, a hash of its option set, a hash of its memory
layout, the payload's length and a CRC-32 of it, so a state of another env, version, option set or
build, a truncated one and a corrupted one are each refused with a `StateError` before anything is
loaded. An env that cannot save (NetHack) raises `StateError` naming itself from both methods. A
subclass implements `state_identity()` and the hooks `_save_game(game) -> bytes` and
`_load_game(game, payload)`; the base class does the header, the checks and the row bookkeeping.

Progress and cells (what the trainer's `[swarm]` options read, docs/training.md). An env may name
per-game milestone counters in `progress_names` (Ocean: spec.toml's `[[progress]]`, e.g. `rooms`)
and return their current values from `game_progress()`, float64 [num_games, len(progress_names)];
swarming ranks games by one of them. An env with `has_cells = True` returns from `game_cells()` each
game's Go-Explore cell now, int64 [num_games]: a coarse summary of its state (position, items held)
under which alike states share one archive entry. Both are read between steps; an env without them
raises StateError naming itself.
"""
import functools
import math
import os
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, NoReturn, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces


# Re-exported (`X as X`): callers import the errors and the state helpers from here, the contract's module.
from pufferlib.errors import ActionMaskError, APITypeError, APIUsageError, SpaceError, StateError
from pufferlib.errors import EnvError as EnvError
from pufferlib.errors import IllegalActionError as IllegalActionError
from pufferlib.errors import MissingDependencyError as MissingDependencyError
from pufferlib.errors import PufferError as PufferError
from pufferlib.saved_state import STATE_FORMAT as STATE_FORMAT
from pufferlib.saved_state import STATE_HEADER_BYTES as STATE_HEADER_BYTES
from pufferlib.saved_state import STATE_MAGIC as STATE_MAGIC
from pufferlib.saved_state import StateIdentity, pack_state, unpack_state
from pufferlib.saved_state import pack_parts as pack_parts
from pufferlib.saved_state import read_state_header as read_state_header
from pufferlib.saved_state import rng_from_state as rng_from_state
from pufferlib.saved_state import rng_state as rng_state
from pufferlib.saved_state import state_hash as state_hash
from pufferlib.saved_state import unpack_parts as unpack_parts


def option_kind(value: object) -> str | None:
    """'bool', 'int' or 'float' for a plain option value (numpy scalars count as their Python kind), else None."""
    if isinstance(value, (bool, np.bool_)):
        return 'bool'
    if isinstance(value, (int, np.integer)):
        return 'int'
    if isinstance(value, (float, np.floating)):
        return 'float'
    return None


def typed_option(value: Any, kind: str) -> bool | int | float | None:
    """`value` as an option of `kind` ('bool', 'int' or 'float'), or None when it is not one.

    The one type rule for config files, flags and env keyword arguments: a bool is never a number,
    an int option takes ints and integral floats (1e6 in a TOML file), a float option ints and floats.
    """
    given = option_kind(value)
    if given == kind:
        return {'bool': bool, 'int': int, 'float': float}[kind](value)
    if given == 'int' and kind == 'float':
        return float(value)
    if given == 'float' and kind == 'int' and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


# Discrete indices ride in the float32 row of a mixed action; float32 holds every integer up to 2**24 exactly.
MIXED_MAX_N = 2 ** 24


class MixedSpace(spaces.Space):
    """The flat row of a mixed action: the discrete parts (`discrete`, a MultiDiscrete of sizes nvec) then the
    continuous parts (`box`, a 1-D float32 Box), side by side in one float32 row of len(nvec) + box size
    elements. The discrete columns hold action indices as floats, so one buffer carries both kinds; a model
    gives each kind its own head (pufferlib.models), and the distribution is the product of the parts'."""

    def __init__(self, nvec: npt.ArrayLike, low: npt.ArrayLike, high: npt.ArrayLike, seed: int | None = None) -> None:
        sizes = np.asarray(nvec, dtype=np.int64).ravel()
        low = np.asarray(low, dtype=np.float32).ravel()
        high = np.asarray(high, dtype=np.float32).ravel()
        if not len(sizes) or not low.size or low.shape != high.shape:
            raise SpaceError(f'a mixed action space needs at least one discrete size and one Box element, with low '
                             f'and high of one shape; got nvec {sizes.tolist()}, low {low.shape}, high {high.shape}')
        if (sizes < 1).any() or (sizes > MIXED_MAX_N).any():
            raise SpaceError(f'the discrete parts of a mixed action space must have between 1 and {MIXED_MAX_N:,} '
                             f'actions each (the row is float32), got {sizes.tolist()}')
        self.discrete = spaces.MultiDiscrete(sizes)
        self.box = spaces.Box(low=low, high=high, dtype=np.float32)
        self.split = len(sizes)  # the first continuous column
        self.width = len(sizes) + low.size
        super().__init__(shape=(self.width,), dtype=np.float32, seed=seed)

    @property
    def is_np_flattened(self) -> bool:
        return True

    @property
    def low(self) -> np.ndarray:
        """The row's lower bounds: 0 for a discrete column, the Box's low for a continuous one."""
        return np.concatenate([np.zeros(self.split, np.float32), self.box.low])

    @property
    def high(self) -> np.ndarray:
        """The row's upper bounds: n - 1 for a discrete column, the Box's high for a continuous one."""
        return np.concatenate([(self.discrete.nvec - 1).astype(np.float32), self.box.high])

    def seed(self, seed: int | None = None) -> list[int]:
        """Seeds this space and, from it, its two parts; returns the three seeds."""
        first = super().seed(seed)
        child = [int(c) for c in self.np_random.integers(2 ** 31, size=2)]
        self.discrete.seed(child[0])
        self.box.seed(child[1])
        return [int(cast(int, first)), *child]

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is not None or probability is not None:
            raise APIUsageError('MixedSpace.sample takes no mask or probability')
        return np.concatenate([self.discrete.sample().astype(np.float32), self.box.sample()])

    def contains(self, x: Any) -> bool:
        row = np.asarray(x)
        if row.shape != self.shape or row.dtype.kind not in 'iuf':
            return False
        return mixed_problem(self, row[None]) is None and self.box.contains(row[self.split:].astype(np.float32))

    def __repr__(self) -> str:
        return f'MixedSpace(nvec={self.discrete.nvec.tolist()}, box={self.box})'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MixedSpace) and self.discrete == other.discrete and self.box == other.box

    def __hash__(self) -> int:
        return hash((tuple(self.discrete.nvec.tolist()), self.box.shape))


def mixed_problem(space: MixedSpace, actions: np.ndarray) -> str | None:
    """Why rows of a mixed action [rows, columns] are not valid, or None: every value finite, and each discrete
    column an integer in [0, n). Box columns may lie past their bounds (envs clip them, as for a Box)."""
    if actions.dtype.kind not in 'iuf':
        return f'mixed actions must be numbers (float32 rows), got dtype {actions.dtype}'
    rows = actions.reshape(-1, space.width) if actions.size else actions.reshape(0, space.width)
    with np.errstate(invalid='ignore'):
        finite = np.isfinite(rows).all(1) if rows.dtype.kind == 'f' else np.ones(len(rows), bool)
        picks = rows[:, :space.split]
        good = (picks >= 0) & (picks < space.discrete.nvec) & (picks == np.floor(picks))
    bad = np.flatnonzero(~finite | ~good.all(1))
    if not len(bad):
        return None
    row = int(bad[0])
    if not finite[row]:
        return (f'actions contain NaN or inf at agent rows {bad[:10].tolist()}; a policy that outputs NaN has '
                'usually diverged (check the loss and the learning rate)')
    return (f'action {rows[row].tolist()} for agent row {row} is outside {space}: its first {space.split} columns '
            f'are discrete choices, integers in [0, n) for n in {space.discrete.nvec.tolist()}')


def action_dtype(space: spaces.Space) -> np.dtype:
    """Buffer dtype for a (flat) action space: int32 for discrete kinds, float32 for Box and MixedSpace."""
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return np.dtype(np.int32)
    if isinstance(space, (spaces.Box, MixedSpace)):
        return np.dtype(np.float32)
    raise SpaceError(f'flat action spaces are Discrete, MultiDiscrete, Box or MixedSpace, got {space}')


def space_shape(space: spaces.Space) -> tuple[int, ...]:
    """`space.shape`, which gymnasium allows to be None (Dict, Tuple, ...); the flat spaces of a
    PufferEnv always have one. A SpaceError is a TypeError, what using None as a shape raised."""
    if space.shape is None:
        raise SpaceError(f'flat spaces are Box, Discrete or MultiDiscrete and have a shape, got {space}')
    return space.shape


# Seeds are 64-bit everywhere: numpy's and Ocean's generators take them, and a vector env seeds
# env k with seed + k in an int64. One rule for every env and backend, instead of each folding or
# refusing a seed like 2**70 its own way.
MAX_SEED = 2**63 - 1


def check_seed(seed: object, describe: Callable[[], str], num_envs: int = 1) -> int | None:
    """Return `seed` as an int (or None), or raise one APIUsageError: seeds lie in [0, 2**63 - num_envs].

    `num_envs` > 1 is for a vector env, which seeds env k with seed + k. `describe()` names the
    caller and is only called to build an error message.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED - (num_envs - 1):
        bound, why = ('2**63 - 1', '') if num_envs == 1 else ('2**63 - num_envs', '; env k is seeded seed + k')
        raise APIUsageError(f'{describe()}: seed must be None or an integer in [0, {bound}] (seeds are 64-bit{why}), '
                            f'got {seed!r}. Fold a larger seed yourself, e.g. seed % 2**63, if you need one.')
    return int(seed)


# Integers viewed as unsigned of the same width: a negative value becomes huge, so one maximum
# checks both ends of the range.
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_max = np.maximum.reduce


class ActionCheck:
    """Checks one batch of caller-supplied actions for a flat action space; built once, called every step.

    Shape and kind, then values: discrete actions must lie in [0, n) (the buffers are int32, so an
    int64 2**32 would otherwise wrap to 0 and step as a valid action); Box actions must be finite.
    The value check is one vectorised reduction, about a microsecond. Returns the actions as an
    ndarray, or raises one APIUsageError that names the row. `describe()` names the caller and is
    only called to build an error message.
    """

    __slots__ = ('space', 'shape', 'describe', 'integer', 'high', 'scalar_high')

    def __init__(self, space: spaces.Space, shape: Sequence[int], describe: Callable[[], str]) -> None:
        self.space, self.shape, self.describe = space, tuple(shape), describe
        self.integer = isinstance(space, (spaces.Discrete, spaces.MultiDiscrete))
        self.high: int | np.ndarray | None = None
        self.scalar_high = True
        if isinstance(space, spaces.Discrete):
            self.high = int(space.n)
        elif isinstance(space, spaces.MultiDiscrete):
            nvec = np.asarray(space.nvec, np.int64)
            self.scalar_high = bool(nvec.size) and bool((nvec == nvec.flat[0]).all())
            self.high = int(nvec.flat[0]) if self.scalar_high else np.broadcast_to(nvec, self.shape)
        if int(np.prod(self.shape)) == 0:
            self.high = None  # nothing to check, and a reduction over nothing would raise

    def __call__(self, actions: npt.ArrayLike) -> np.ndarray:
        if not isinstance(actions, np.ndarray):
            actions = np.asarray(actions)
        if actions.shape != self.shape:
            raise APIUsageError(f'{self.describe()}: actions must have shape {self.shape}, got {actions.shape}')
        kind = actions.dtype.kind
        if isinstance(self.space, MixedSpace):
            problem = mixed_problem(self.space, actions)
            if problem:
                raise APIUsageError(f'{self.describe()}: {problem}')
        elif self.integer:
            if kind not in 'iub':
                raise APIUsageError(f'{self.describe()}: discrete actions must be integers, got dtype {actions.dtype}')
            if self.high is not None:
                unsigned = actions.view(_UNSIGNED[actions.dtype.itemsize])
                if (_max(unsigned, None) >= self.high) if self.scalar_high else (unsigned >= self.high).any():
                    self._out_of_range(actions)
        elif kind == 'f' and not np.isfinite(actions).all():
            finite = np.isfinite(actions.reshape(len(actions), -1)).all(1) if actions.ndim else np.ones(0, bool)
            rows = np.flatnonzero(~finite).tolist()
            raise APIUsageError(f'{self.describe()}: actions contain NaN or inf at agent rows {rows[:10]}; a '
                                'policy that outputs NaN has usually diverged (check the loss and the learning rate)')
        return actions

    def _out_of_range(self, actions: np.ndarray) -> NoReturn:
        high = np.broadcast_to(np.asarray(self.high, np.int64), self.shape)
        values = actions.astype(object)  # exact for every integer width, uint64 included
        index = tuple(int(i) for i in np.argwhere((values < 0) | (values >= high))[0])
        raise APIUsageError(f'{self.describe()}: action {actions[index].item()} for agent row {index[0]} is outside '
                            f'{self.space} (valid: 0 <= action < {high[index]}); discrete actions are never '
                            'wrapped or clipped')


def not_a_reward(where: str, reward: object) -> APITypeError:
    """The error for a reward that is not a number (a string, None, a list), from the env described by `where`
    (an agent's name appended where there are several)."""
    shown = repr(reward) if len(repr(reward)) <= 40 else repr(reward)[:37] + '...'
    return APITypeError(f'{where}: step() returned the reward {shown} of type {type(reward).__name__}; a reward is '
                        'a number (int, float or a NumPy scalar): convert it in the env, e.g. float(reward)')


def nonfinite_rows(observations: np.ndarray, rewards: np.ndarray, obs_dtype: npt.DTypeLike | None = None) -> np.ndarray:
    """Positions of the rows whose reward, or any floating-point observation value, is NaN or +-inf.

    For a batch as recv() or step() returns it: `observations` [rows, ...], `rewards` [rows]. An
    empty array means all is finite, the usual answer, which costs one sum per array (a NaN or
    inf anywhere makes the sum non-finite; only then are rows inspected). Integer observations are
    skipped. Rows of raw bytes (a structured observation with mixed dtypes) are checked field by
    field when `obs_dtype` (env.obs_dtype) is given; `VecEnv.nonfinite_rows` passes it for you.

    Public as `pufferlib.nonfinite_rows`, for the trainer to call on every batch before the values
    reach the policy or the loss:

        bad = pufferlib.nonfinite_rows(obs, rewards, vecenv.obs_dtype)
        if len(bad):  # env_ids[bad] are the env rows to name in the error
            ...
    """
    bad = None
    with np.errstate(over='ignore', invalid='ignore'):  # large finite values may overflow the sum: fine
        if not np.isfinite(_sum(rewards, None)):
            bad = ~np.isfinite(rewards)
        for values in _float_views(observations, obs_dtype):
            if not np.isfinite(_sum(values, None)):
                rows = ~np.isfinite(values.reshape(len(values), -1)).all(1)
                bad = rows if bad is None else bad | rows
    return np.empty(0, np.int64) if bad is None else np.flatnonzero(bad)


_sum = np.add.reduce


def _float_views(observations: np.ndarray, obs_dtype: npt.DTypeLike | None) -> Sequence[np.ndarray]:
    """The floating-point parts of a batch of observation rows, as arrays with rows first."""
    if observations.dtype.kind == 'f':
        return (observations,)
    if obs_dtype is None or observations.dtype != np.uint8 or not len(observations):
        return ()
    fields = _float_fields(np.dtype(obs_dtype))
    if not fields:
        return ()
    struct = np.ascontiguousarray(observations).reshape(len(observations), -1).view(obs_dtype)[:, 0]
    views = []
    for path in fields:
        view = struct
        for name in path:
            view = view[name]
        views.append(view)
    return views


@functools.lru_cache(maxsize=64)
def _float_fields(dtype: np.dtype) -> tuple[tuple[str, ...], ...]:
    """Field paths of the floating-point leaves of a structured dtype."""
    if dtype.names is None or dtype.fields is None:  # both are None for a plain dtype, neither otherwise
        base = dtype.subdtype[0] if dtype.subdtype else dtype
        return ((),) if base.kind == 'f' else ()
    return tuple((name, *path) for name in dtype.names for path in _float_fields(dtype.fields[name][0]))


def action_mask_width(space: spaces.Space) -> int:
    """Columns of one action-mask row for a flat action space: n (Discrete), the sum of nvec
    (MultiDiscrete, and the discrete parts of a MixedSpace); Box actions cannot be masked."""
    if isinstance(space, MixedSpace):
        return action_mask_width(space.discrete)
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.asarray(space.nvec).sum())
    raise ActionMaskError(f'action masks apply to Discrete and MultiDiscrete actions, not to {space}')


def idle_action_mask(space: spaces.Space) -> np.ndarray:
    """The mask of a row that is not to act: action 0 alone (of every sub-action) is legal."""
    if isinstance(space, MixedSpace):
        return idle_action_mask(space.discrete)
    mask = np.zeros(action_mask_width(space), dtype=bool)
    if isinstance(space, spaces.MultiDiscrete):
        mask[np.concatenate([[0], np.cumsum(np.asarray(space.nvec).ravel())[:-1]])] = True
    else:
        mask[0] = True
    return mask


def buffer_bytes(observation_space: spaces.Space, action_space: spaces.Space, num_agents: int,
                 mask_width: int | None = None) -> int:
    """The memory the arrays of `make_buffers` take."""
    row = (int(np.prod(space_shape(observation_space))) * np.dtype(observation_space.dtype).itemsize
           + int(np.prod(space_shape(action_space))) * np.dtype(action_dtype(action_space)).itemsize + 4 + 3
           + (mask_width or 0))
    return int(num_agents) * row


def check_buffer_size(observation_space: spaces.Space, action_space: spaces.Space, num_agents: int,
                      who: str = 'this env', mask_width: int | None = None) -> None:
    """Refuse buffers larger than this machine's memory before allocating them: numpy would raise a
    MemoryError from deep inside, or (allocating lazily) the system would kill the process later."""
    need = buffer_bytes(observation_space, action_space, num_agents, mask_width)
    try:
        have = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): let numpy decide
        return
    if need > have:
        raise APIUsageError(f'{who}: {num_agents:,} agent rows of {need // max(num_agents, 1):,} bytes need '
                            f'{need / 2**30:,.1f} GiB for the observation and action buffers alone, more than this '
                            f'machine\'s {have / 2**30:,.1f} GiB of memory; lower num_envs or the observation size')


def make_buffers(observation_space: spaces.Space, action_space: spaces.Space, num_agents: int,
                 who: str = 'this env', mask_width: int | None = None) -> SimpleNamespace:
    """Allocate the six arrays of one env (or of a whole vector, with num_agents summed), and the
    seventh, `action_masks` [num_agents, mask_width] (every action legal until the env writes it),
    when `mask_width` is given."""
    check_buffer_size(observation_space, action_space, num_agents, who, mask_width)
    buf = SimpleNamespace(
        observations=np.zeros((num_agents, *space_shape(observation_space)), dtype=observation_space.dtype),
        actions=np.zeros((num_agents, *space_shape(action_space)), dtype=action_dtype(action_space)),
        rewards=np.zeros(num_agents, dtype=np.float32),
        terminals=np.zeros(num_agents, dtype=bool),
        truncations=np.zeros(num_agents, dtype=bool),
        masks=np.ones(num_agents, dtype=bool),
    )
    if mask_width is not None:
        buf.action_masks = np.ones((num_agents, int(mask_width)), dtype=bool)
    return buf


BUFFER_NAMES = ('observations', 'actions', 'rewards', 'terminals', 'truncations', 'masks')
MASK_BUFFER = 'action_masks'  # the optional seventh array


class PufferEnv:
    """Base class: subclasses set the spaces and `num_agents`, then call `super().__init__(buf)`.

    Required attributes before `__init__`: `single_observation_space`, `single_action_space`
    (flat: Box observations; Discrete, MultiDiscrete or Box actions) and `num_agents`.
    """

    # Declared, not defined: a subclass that forgets one gets the APIUsageError of __init__.
    single_observation_space: spaces.Box
    single_action_space: spaces.Space
    num_agents = 1
    # Emulated envs set this to the structured dtype of one observation row (see emulation.nativize).
    obs_dtype: np.dtype | None = None
    # And this to the original action space, for models that want the structure.
    native_action_space: spaces.Space | None = None
    # Envs that publish legal actions set this (see the module docstring) before __init__, which then
    # binds `action_masks`; the env rewrites that array in place on every reset and step.
    action_mask_width: int | None = None
    action_masks: np.ndarray | None = None
    # The arrays of `buf`, bound by __init__ (BUFFER_NAMES).
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    masks: np.ndarray

    def __init__(self, buf: SimpleNamespace | None = None) -> None:
        for name in ('single_observation_space', 'single_action_space'):
            if getattr(self, name, None) is None:
                raise APIUsageError(f'{type(self).__name__} must set {name} before PufferEnv.__init__')
        if not isinstance(self.single_observation_space, spaces.Box):
            raise SpaceError(f'{type(self).__name__}.single_observation_space must be a Box '
                             f'(wrap structured spaces with pufferlib.emulation), got {self.single_observation_space}')
        action_dtype(self.single_action_space)  # validates the kind
        width = self.action_mask_width
        if width is not None and int(width) != action_mask_width(self.single_action_space):
            raise ActionMaskError(f'{type(self).__name__}: action_mask_width={width}, but the action space '
                                  f'{self.single_action_space} needs {action_mask_width(self.single_action_space)} '
                                  'columns (n, or the sum of nvec)')
        if buf is None:
            who = self.describe() if hasattr(self, 'describe') else type(self).__name__
            buf = make_buffers(self.single_observation_space, self.single_action_space, self.num_agents, who, width)
        else:
            check_buffers(buf, self.single_observation_space, self.single_action_space, self.num_agents,
                          owner=type(self).__name__, mask_width=width)
        for name in BUFFER_NAMES:
            setattr(self, name, getattr(buf, name))
        if width is not None:
            masks = getattr(buf, MASK_BUFFER, None)
            # A caller's buffers without the seventh array (written before masks existed): a private one.
            self.action_masks = masks if masks is not None else np.ones((self.num_agents, int(width)), dtype=bool)
        self._check_actions = ActionCheck(self.single_action_space, self.actions.shape, lambda: (
            f'{self.describe()} (num_agents={self.num_agents}, action space {self.single_action_space})'))

    @property
    def observation_space(self) -> spaces.Space:
        return batched_space(self.single_observation_space, self.num_agents)

    @property
    def action_space(self) -> spaces.Space:
        return batched_space(self.single_action_space, self.num_agents)

    def describe(self) -> str:
        """How errors name this env."""
        return type(self).__name__

    def copy_actions(self, actions: npt.ArrayLike) -> None:
        """Check caller-supplied actions (see ActionCheck) and copy them into `self.actions`.

        A no-op for that array itself: a vector backend has already checked what it wrote there.
        """
        if actions is self.actions:
            return
        if not isinstance(actions, np.ndarray):
            actions = np.asarray(actions)
        if self.num_agents == 1 and actions.size == self.actions.size:
            actions = actions.reshape(self.actions.shape)  # a lone agent may pass one unbatched action
        np.copyto(self.actions, self._check_actions(actions), casting='unsafe')

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        raise NotImplementedError

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        raise NotImplementedError

    def render(self) -> np.ndarray | None:
        """An RGB frame (uint8 [h, w, 3]), or None for an env that does not draw."""
        return None

    def close(self) -> None:
        pass

    # ---- saved states (see the module docstring) ----

    # Whether get_state/set_state work; and the games this object holds, whose ids are 0..num_games-1.
    supports_state: bool = False
    num_games: int = 1

    def state_identity(self) -> StateIdentity:
        """Name, version, options and layout a state must match (subclasses that save implement it)."""
        raise self._no_state()

    def _no_state(self) -> StateError:
        why = getattr(self, 'state_unsupported', None)
        return StateError(f'{self.describe()} cannot save or load its state'
                          + (f': {why}' if why else ' (it does not implement get_state/set_state)'))

    def _check_game(self, game: object) -> int:
        if not self.supports_state:
            raise self._no_state()
        if isinstance(game, bool) or not isinstance(game, (int, np.integer)) or not 0 <= game < self.num_games:
            raise StateError(f'{self.describe()}: game id must be an int in [0, {self.num_games}), got {game!r}')
        return int(game)

    def get_state(self, game: int = 0) -> bytes:
        """The whole state of game `game` as bytes, header included."""
        return pack_state(self.state_identity(), self._save_game(self._check_game(game)))

    def check_state(self, state: object) -> memoryview:
        """The payload of `state` if it loads into this env; StateError otherwise. Nothing changes."""
        if not self.supports_state:
            raise self._no_state()
        return unpack_state(state, self.state_identity(), self.describe())

    def set_state(self, game: int, state: object) -> None:
        """Load `state` into game `game`: its rows show the restored observation at once, with zero
        rewards and no terminal or truncation flag."""
        game = self._check_game(game)
        self.restore_checked(game, self.check_state(state))

    def restore_checked(self, game: int, payload: memoryview) -> None:
        """set_state's second half: load a payload `check_state` returned into game `game` (vector
        backends check every state of a call before loading any)."""
        self._load_game(game, payload)
        k = self.num_agents // self.num_games
        rows = slice(game * k, (game + 1) * k)
        self.rewards[rows] = 0
        self.terminals[rows] = False
        self.truncations[rows] = False

    # Per-game milestone counters and Go-Explore cells (see the module docstring).
    progress_names: tuple[str, ...] = ()
    has_cells: bool = False

    def game_progress(self) -> np.ndarray:
        """The counters of `progress_names` of every game now: float64 [num_games, len(progress_names)]."""
        raise StateError(f'{self.describe()} reports no per-game progress counters (progress_names is empty)')

    def game_cells(self) -> np.ndarray:
        """Every game's Go-Explore cell now: int64 [num_games]."""
        raise StateError(f'{self.describe()} has no Go-Explore cell function (has_cells is False)')

    def _save_game(self, game: int) -> bytes:
        raise self._no_state()

    def _load_game(self, game: int, payload: memoryview) -> None:
        raise self._no_state()


def check_buffers(buf: object, observation_space: spaces.Space, action_space: spaces.Space, num_agents: int,
                  owner: str = 'env', mask_width: int | None = None) -> None:
    shapes = {
        'observations': ((num_agents, *space_shape(observation_space)), observation_space.dtype),
        'actions': ((num_agents, *space_shape(action_space)), action_dtype(action_space)),
        'rewards': ((num_agents,), np.dtype(np.float32)),
        'terminals': ((num_agents,), np.dtype(bool)),
        'truncations': ((num_agents,), np.dtype(bool)),
        'masks': ((num_agents,), np.dtype(bool)),
    }
    for name, (shape, dtype) in shapes.items():
        arr = getattr(buf, name, None)
        if arr is None:
            raise APIUsageError(f'{owner}: buffer {name!r} is missing from buf')
        if arr.shape != shape or arr.dtype != dtype:
            raise APIUsageError(f'{owner}: buffer {name!r} must be {dtype}{list(shape)}, '
                                f'got {arr.dtype}{list(arr.shape)}')
    masks = getattr(buf, MASK_BUFFER, None)
    if mask_width is not None and masks is not None:
        shape = (num_agents, int(mask_width))
        if masks.shape != shape or masks.dtype != np.dtype(bool):
            raise ActionMaskError(f'{owner}: buffer {MASK_BUFFER!r} must be bool{list(shape)} (one row per agent, '
                                  f'one column per action), got {masks.dtype}{list(masks.shape)}')
        if not masks.flags.c_contiguous:
            raise ActionMaskError(f'{owner}: buffer {MASK_BUFFER!r} must be C-contiguous (a block of rows of one '
                                  'array)')


def batched_space(space: spaces.Space, n: int) -> spaces.Space:
    """The space of n stacked rows of `space`."""
    if isinstance(space, MixedSpace):  # n rows of discrete columns then continuous ones, as one float32 Box
        return spaces.Box(low=space.low[None].repeat(n, 0), high=space.high[None].repeat(n, 0), dtype=np.float32)
    if isinstance(space, spaces.Box):
        return spaces.Box(low=np.broadcast_to(space.low, space.shape)[None].repeat(n, 0),
                          high=np.broadcast_to(space.high, space.shape)[None].repeat(n, 0),
                          dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete(np.full(n, space.n), start=np.full(n, space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.MultiDiscrete(np.broadcast_to(space.nvec, (n, *space.nvec.shape)).copy(),
                                    start=np.broadcast_to(space.start, (n, *space.start.shape)).copy())
    raise SpaceError(f'cannot batch {space}')
