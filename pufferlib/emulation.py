"""Emulation: make any Gymnasium or PettingZoo env look like a flat, single-array env.

Observations of any nesting (Dict, Tuple, Box, Discrete, MultiDiscrete, MultiBinary, mixed dtypes)
are laid out as a packed numpy structured dtype; each agent's observation is one flat row of that
layout. When every leaf shares a dtype the row has that dtype (floats stay floats); otherwise the
row is raw bytes (uint8). `Nativizer` turns a batch of rows back into the nested structure, for
numpy arrays (zero-copy field views) and torch tensors, looping over fields, never over the batch.

Structured action spaces of discrete kinds become one MultiDiscrete vector and are unflattened
before the env sees them; Discrete, MultiDiscrete and Box actions pass through.

Both wrappers implement `pufferlib.PufferEnv`: preallocated rows, same-step autoreset, and an
episode-statistics layer that emits `{'episode_return', 'episode_length', ...}` once per episode,
so `infos` is an empty list on every other step.
"""
import numbers
from collections.abc import Callable

import numpy as np
import gymnasium
from gymnasium import spaces

from pufferlib.pufferenv import (ActionMaskError, APIUsageError, EnvError, IllegalActionError, PufferEnv, SpaceError,
                                 action_mask_width, check_seed, idle_action_mask)

LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


# ---------------------------------------------------------------------------------------------
# Observation layout
# ---------------------------------------------------------------------------------------------

def _leaf_dtype_shape(space):
    if isinstance(space, spaces.Discrete):
        return np.dtype(space.dtype), ()
    if isinstance(space, spaces.MultiBinary):
        return np.dtype(space.dtype), tuple(np.atleast_1d(space.n))
    return np.dtype(space.dtype), tuple(space.shape)


def _leaf_bounds(space):
    """Flattened (low, high) of a leaf, as float64 so mixed kinds can be concatenated."""
    if isinstance(space, spaces.Box):
        return np.asarray(space.low, np.float64).ravel(), np.asarray(space.high, np.float64).ravel()
    if isinstance(space, spaces.Discrete):
        return np.array([space.start], np.float64), np.array([space.start + space.n - 1], np.float64)
    if isinstance(space, spaces.MultiDiscrete):
        return (np.asarray(space.start, np.float64).ravel(),
                np.asarray(space.start + space.nvec - 1, np.float64).ravel())
    size = int(np.prod(space.n))
    return np.zeros(size), np.ones(size)


def _walk(space, path=()):
    """Yield (path, leaf_space) in layout order; raise SpaceError for what cannot be emulated."""
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            if not isinstance(key, str):
                raise SpaceError(f'Dict observation keys must be strings, got {key!r} at {_fmt(path)}')
            yield from _walk(sub, path + (key,))
    elif isinstance(space, spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            yield from _walk(sub, path + (i,))
    elif isinstance(space, LEAF_SPACES):
        yield path, space
    else:
        raise SpaceError(f'cannot emulate {type(space).__name__} at {_fmt(path)}: supported are Box, Discrete, '
                         'MultiDiscrete, MultiBinary, and Dict/Tuple of those (pad variable-size spaces)')


def _fmt(path):
    return '/'.join(str(p) for p in path) if path else '<root>'


def _struct_dtype(space):
    if isinstance(space, spaces.Dict):
        return np.dtype([(key, _struct_dtype(sub)) for key, sub in space.spaces.items()])
    if isinstance(space, spaces.Tuple):
        return np.dtype([(f'f{i}', _struct_dtype(sub)) for i, sub in enumerate(space.spaces)])
    dtype, shape = _leaf_dtype_shape(space)
    return np.dtype((dtype, shape)) if shape else dtype


def _field_path(path):
    return tuple(f'f{p}' if isinstance(p, int) else p for p in path)


def emulate_observation_space(space: spaces.Space) -> tuple[spaces.Box, np.dtype | None]:
    """Return (flat Box space for one row, structured dtype of one row or None for Box)."""
    if isinstance(space, spaces.Box):
        return space, None
    leaves = list(_walk(space))
    if not leaves:
        raise SpaceError(f'observation space {space} holds no values (an empty Dict or Tuple): an env must '
                         'observe something; give it at least one entry, e.g. a Box of shape (1,)')
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        obs_dtype = _struct_dtype(space)
    else:  # a lone Discrete/MultiDiscrete/MultiBinary observation
        obs_dtype = np.dtype([('obs', _struct_dtype(space))])
    kinds = {_leaf_dtype_shape(leaf)[0] for _, leaf in leaves}
    if len(kinds) == 1 and next(iter(kinds)) != np.dtype(bool):
        row_dtype = next(iter(kinds))
        low = np.concatenate([_leaf_bounds(leaf)[0] for _, leaf in leaves]).astype(row_dtype)
        high = np.concatenate([_leaf_bounds(leaf)[1] for _, leaf in leaves]).astype(row_dtype)
        flat = spaces.Box(low=low, high=high, dtype=row_dtype)
    else:
        flat = spaces.Box(low=0, high=255, shape=(obs_dtype.itemsize,), dtype=np.uint8)
    return flat, obs_dtype


class _Leaf:
    __slots__ = ('path', 'dtype', 'shape', 'offset', 'nbytes')

    def __init__(self, path, dtype, shape, offset):
        self.path, self.dtype, self.shape, self.offset = path, dtype, shape, offset
        self.nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))


def _layout(dtype, offset=0, path=()):
    """Tree of ('dict', [(name, node)]) / ('tuple', [node]) / ('leaf', _Leaf) from a structured dtype."""
    if dtype.names is None:
        base, shape = (dtype.subdtype if dtype.subdtype else (dtype, ()))
        return ('leaf', _Leaf(path, base, shape, offset))
    children = [(name, _layout(dtype.fields[name][0], offset + dtype.fields[name][1], path + (name,)))
                for name in dtype.names]
    if all(name == f'f{i}' for i, (name, _) in enumerate(children)):
        return ('tuple', [node for _, node in children])
    return ('dict', children)


class Nativizer:
    """Turns a batch of flat rows [..., row] back into the nested observation structure.

    Build it once (e.g. in a model's __init__) from the env's `obs_dtype`, then call it on numpy
    arrays or torch tensors. Numpy results are zero-copy views; torch leaves are views when the row
    dtype matches the leaf dtype and one small copy per leaf otherwise.
    """

    def __init__(self, obs_dtype: np.dtype | None):
        if obs_dtype is None or np.dtype(obs_dtype).names is None:
            raise APIUsageError('Nativizer needs a structured obs_dtype (env.obs_dtype); Box observations '
                                'need no nativizing')
        self.dtype = np.dtype(obs_dtype)
        tree = _layout(self.dtype)
        # A lone non-Box observation was wrapped in one field named 'obs': unwrap it again.
        self.tree = tree[1][0][1] if self.dtype.names == ('obs',) else tree
        self._torch_dtypes = None

    def __call__(self, rows):
        if isinstance(rows, np.ndarray):
            return self._numpy(rows)
        return self._torch(rows)

    def _numpy(self, rows):
        lead = rows.shape[:-1]
        raw = np.ascontiguousarray(rows).reshape(-1, rows.shape[-1]).view(np.uint8)
        if raw.shape[1] != self.dtype.itemsize:
            raise SpaceError(f'rows hold {raw.shape[1]} bytes, obs_dtype needs {self.dtype.itemsize}')
        struct = raw.view(self.dtype)[:, 0]

        def build(node):
            kind, body = node
            if kind == 'leaf':
                view = struct
                for name in body.path:
                    view = view[name]
                return view.reshape(*lead, *body.shape)
            if kind == 'tuple':
                return tuple(build(child) for child in body)
            return {name: build(child) for name, child in body}
        return build(self.tree)

    def _torch(self, rows):
        import torch
        if self._torch_dtypes is None:
            self._torch_dtypes = {}
        lead = rows.shape[:-1]
        flat = rows.reshape(-1, rows.shape[-1])
        row_np = _numpy_dtype_of(flat.dtype)
        # Fast path: every leaf has the row's own dtype, so each leaf is a plain slice (a view).
        by_elements = row_np.itemsize == flat.element_size() and self._uniform_dtype() == row_np
        if not by_elements:
            flat = flat.contiguous().view(torch.uint8)

        def build(node):
            kind, body = node
            if kind == 'tuple':
                return tuple(build(child) for child in body)
            if kind == 'dict':
                return {name: build(child) for name, child in body}
            if by_elements:
                start = body.offset // row_np.itemsize
                count = body.nbytes // row_np.itemsize
                return flat[:, start:start + count].reshape(*lead, *body.shape)
            chunk = flat[:, body.offset:body.offset + body.nbytes]
            tdtype = _torch_dtype(body.dtype)
            if body.dtype.itemsize > 1:
                # Reinterpreting bytes as wider types needs an aligned block with aligned strides. A
                # one-row slice counts as contiguous yet keeps the full row's stride, so check both.
                size = body.dtype.itemsize
                chunk = chunk.contiguous()
                if chunk.storage_offset() % size or chunk.stride(0) % size:
                    chunk = chunk.clone(memory_format=torch.contiguous_format)
            return chunk.view(tdtype).reshape(*lead, *body.shape)
        return build(self.tree)

    def _uniform_dtype(self):
        kinds = set()

        def visit(node):
            kind, body = node
            if kind == 'leaf':
                kinds.add(body.dtype)
            else:
                for child in body:
                    visit(child[1] if kind == 'dict' else child)
        visit(self.tree)
        return next(iter(kinds)) if len(kinds) == 1 else None


def nativize(rows: np.ndarray, obs_dtype: np.dtype | None):
    """One-off form of `Nativizer(obs_dtype)(rows)`; build a Nativizer once in hot loops."""
    return Nativizer(obs_dtype)(rows)


def _torch_dtype(np_dtype):
    import torch
    table = {np.dtype(np.float16): torch.float16, np.dtype(np.float32): torch.float32,
             np.dtype(np.float64): torch.float64, np.dtype(np.int8): torch.int8,
             np.dtype(np.uint8): torch.uint8, np.dtype(np.int16): torch.int16,
             np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64,
             np.dtype(bool): torch.bool, np.dtype(np.uint16): torch.uint16,
             np.dtype(np.uint32): torch.uint32, np.dtype(np.uint64): torch.uint64}
    try:
        return table[np.dtype(np_dtype)]
    except KeyError:
        raise SpaceError(f'no torch dtype for {np_dtype}') from None


def _numpy_dtype_of(torch_dtype):
    import torch
    return np.dtype(torch.empty(0, dtype=torch_dtype).numpy().dtype) if torch_dtype != torch.bfloat16 \
        else np.dtype(np.uint16)


# ---------------------------------------------------------------------------------------------
# Observation writing and checking
# ---------------------------------------------------------------------------------------------

def _accessor(path):
    return ''.join(f'[{p!r}]' for p in path)


def _compile_writer(obs_space, obs_dtype):
    """A function write(ob, dsts) that copies each leaf of a native observation into its field view.

    Generated as straight-line code because a Python loop over leaves costs about as much as the
    copies themselves for NetHack-sized dicts. It first compares the shapes of the leaves that are
    not scalars with the space's, in one tuple comparison: numpy would otherwise broadcast a value
    of shape (1,) or () into every element of the field without a word. A mismatch raises
    ValueError, which the callers turn into a SpaceError that names the leaf.
    """
    if obs_dtype is None:
        return None, None
    if obs_dtype.names == ('obs',):
        paths = [((), ('obs',), obs_space)]
    else:
        paths = [(path, _field_path(path), leaf) for path, leaf in _walk(obs_space)]
    shaped = [(i, _leaf_dtype_shape(leaf)[1]) for i, (_, _, leaf) in enumerate(paths) if _leaf_dtype_shape(leaf)[1]]
    lines = ['def write(ob, d):']
    for i, (path, _, _) in enumerate(paths):
        lines.append(f'    v{i} = ob{_accessor(path)}')
    if shaped:
        actual = ', '.join(f"getattr(v{i}, 'shape', None)" for i, _ in shaped)
        values = ', '.join(f'v{i}' for i, _ in shaped)
        lines.append(f'    if ({actual},) != SHAPES:')
        lines.append(f'        check_shapes(({values},), SHAPES)')
    for i in range(len(paths)):
        lines.append(f'    d[{i}][...] = v{i}')
    namespace = {'SHAPES': tuple(shape for _, shape in shaped), 'check_shapes': _check_shapes}
    exec('\n'.join(lines), namespace)
    return namespace['write'], [fields for _, fields, _ in paths]


def _check_shapes(values, shapes):
    """The exact comparison behind the writer's fast one (a list has no .shape but may be right)."""
    if tuple(np.shape(v) for v in values) != shapes:
        raise ValueError('an observation leaf does not have the shape of its space')


def _field_views(obs_rows, obs_dtype, field_paths):
    """Per row, a tuple of writable views (one per leaf, shaped [1, *leaf_shape]) into that row."""
    struct = obs_rows.view(np.uint8).reshape(obs_rows.shape[0], -1).view(obs_dtype)[:, 0]
    views = []
    for row in range(obs_rows.shape[0]):
        per_leaf = []
        for fields in field_paths:
            view = struct[row:row + 1]
            for name in fields:
                view = view[name]
            per_leaf.append(view)
        views.append(tuple(per_leaf))
    return views


def describe_mismatch(space: spaces.Space, value, path: tuple = ()) -> str | None:
    """The first leaf of `value` that does not fit `space`, as a readable sentence, or None."""
    if isinstance(space, spaces.Dict):
        if not isinstance(value, dict):
            return f'{_fmt(path)}: expected a dict with keys {list(space.spaces)}, got {type(value).__name__}'
        missing = [k for k in space.spaces if k not in value]
        if missing:
            return f'{_fmt(path)}: missing keys {missing} (got {list(value)})'
        for key, sub in space.spaces.items():
            msg = describe_mismatch(sub, value[key], path + (key,))
            if msg:
                return msg
        return None
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
            return f'{_fmt(path)}: expected a tuple of {len(space.spaces)}, got {type(value).__name__}'
        for i, sub in enumerate(space.spaces):
            msg = describe_mismatch(sub, value[i], path + (i,))
            if msg:
                return msg
        return None
    arr = np.asarray(value)
    dtype, shape = _leaf_dtype_shape(space)
    if arr.shape != shape:
        return (f'{_fmt(path)}: expected shape {shape} dtype {dtype}, '
                f'got shape {arr.shape} dtype {arr.dtype}')
    if not np.can_cast(arr.dtype, dtype, casting='same_kind'):
        return f'{_fmt(path)}: expected dtype {dtype}, got {arr.dtype} (shape {arr.shape})'
    if not space.contains(arr.astype(dtype) if arr.shape else dtype.type(arr)):
        low, high = _leaf_bounds(space)
        return (f'{_fmt(path)}: value outside the space bounds [{low.min()}, {high.max()}] '
                f'(got min {arr.min()}, max {arr.max()})')
    return None


def check_observation(space: spaces.Space, value, who: str) -> None:
    msg = describe_mismatch(space, value)
    if msg:
        raise SpaceError(f'{who}: observation does not match its observation_space at {msg}')


# ---------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------

def emulate_action_space(space: spaces.Space) -> tuple[spaces.Space, Callable | None]:
    """Return (flat action space, unflatten(row) -> native action)."""
    if isinstance(space, spaces.Box):
        dtype = space.dtype
        return space, (lambda row: row.astype(dtype) if row.dtype != dtype else row)
    if isinstance(space, spaces.Discrete):
        start, py_int = int(space.start), int
        return spaces.Discrete(int(space.n)), (lambda row: py_int(row) + start)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        start, shape, dtype = np.asarray(space.start).ravel(), nvec.shape, space.dtype
        return spaces.MultiDiscrete(nvec.ravel()), (lambda row: (row + start).reshape(shape).astype(dtype))
    if isinstance(space, spaces.MultiBinary):
        shape = tuple(np.atleast_1d(space.n))
        size = int(np.prod(shape))
        return spaces.MultiDiscrete(np.full(size, 2)), (lambda row: row.reshape(shape).astype(np.int8))
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        return _emulate_structured_actions(space)
    raise SpaceError(f'cannot emulate action space {space}: supported are Discrete, MultiDiscrete, '
                     'MultiBinary, Box, and Dict/Tuple of the discrete kinds')


def _emulate_structured_actions(space):
    leaves = list(_walk(space))
    if not leaves:
        raise SpaceError(f'action space {space} holds no actions (an empty Dict or Tuple): give the env at least '
                         'one, e.g. Discrete(1) for an agent that only watches')
    for path, leaf in leaves:
        if isinstance(leaf, spaces.Box):
            raise SpaceError(f'action space {space} has a Box at {_fmt(path)}: structured action spaces '
                             'may only hold Discrete, MultiDiscrete and MultiBinary (use a flat Box instead)')
    nvecs, converters, offset = [], [], 0
    for path, leaf in leaves:
        flat, unflatten = emulate_action_space(leaf)
        size = 1 if isinstance(flat, spaces.Discrete) else len(flat.nvec)
        nvecs.append(np.atleast_1d(flat.n if isinstance(flat, spaces.Discrete) else flat.nvec))
        converters.append((path, offset, size, isinstance(flat, spaces.Discrete), unflatten))
        offset += size

    def unflatten(row):
        out = _empty_like_space(space)
        for path, start, size, scalar, leaf_unflatten in converters:
            target = out
            for key in path[:-1]:
                target = target[key]
            value = leaf_unflatten(row[start] if scalar else row[start:start + size])
            target[path[-1]] = value
        return _freeze_tuples(out, space)
    return spaces.MultiDiscrete(np.concatenate(nvecs)), unflatten


def _empty_like_space(space):
    if isinstance(space, spaces.Dict):
        return {k: _empty_like_space(v) for k, v in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return [_empty_like_space(v) for v in space.spaces]
    return None


def _freeze_tuples(value, space):
    if isinstance(space, spaces.Dict):
        return {k: _freeze_tuples(value[k], v) for k, v in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_freeze_tuples(value[i], v) for i, v in enumerate(space.spaces))
    return value


# ---------------------------------------------------------------------------------------------
# Old gym API (0.2x): procgen and friends
# ---------------------------------------------------------------------------------------------

def convert_space(space) -> spaces.Space:
    """Convert a gym (pre-Gymnasium) space to its Gymnasium twin, by class name."""
    if isinstance(space, spaces.Space):
        return space
    name = type(space).__name__
    if name == 'Box':
        return spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if name == 'Discrete':
        return spaces.Discrete(int(space.n), start=int(getattr(space, 'start', 0)))
    if name == 'MultiDiscrete':
        return spaces.MultiDiscrete(np.asarray(space.nvec))
    if name == 'MultiBinary':
        return spaces.MultiBinary(space.n)
    if name == 'Dict':
        return spaces.Dict({k: convert_space(v) for k, v in space.spaces.items()})
    if name == 'Tuple':
        return spaces.Tuple([convert_space(v) for v in space.spaces])
    raise SpaceError(f'cannot convert space {space!r} of type {type(space).__module__}.{name} to Gymnasium')


class OldGymEnv(gymnasium.Env):
    """Presents an env with the old gym API (reset -> obs, step -> 4-tuple, env.seed) as Gymnasium.

    `done` is split using the `TimeLimit.truncated` info key the old TimeLimit wrapper sets.
    Envs already on the 0.26 API (reset -> (obs, info), 5-tuple steps) pass through unchanged.
    """

    def __init__(self, env):
        self.env = env
        self.observation_space = convert_space(env.observation_space)
        self.action_space = convert_space(env.action_space)
        self.render_mode = getattr(env, 'render_mode', None)
        self.metadata = getattr(env, 'metadata', {}) or {}

    def reset(self, seed=None, options=None):
        if seed is not None and hasattr(self.env, 'seed'):
            self.env.seed(seed)
            result = self.env.reset()
        elif seed is not None:
            result = self.env.reset(seed=seed)
        else:
            result = self.env.reset()
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            return result
        return result, {}

    def step(self, action):
        result = self.env.step(action)
        if len(result) == 5:
            return result
        obs, reward, done, info = result
        truncated = bool(info.get('TimeLimit.truncated', False))
        return obs, reward, bool(done) and not truncated, truncated, info

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


def ensure_gymnasium(env) -> gymnasium.Env:
    if isinstance(env, gymnasium.Env):
        return env
    if all(hasattr(env, a) for a in ('reset', 'step', 'observation_space', 'action_space')):
        return OldGymEnv(env)
    raise APIUsageError(f'expected a Gymnasium (or old gym) env, got {type(env).__name__}: it needs reset, '
                        'step, observation_space and action_space')


# ---------------------------------------------------------------------------------------------
# The wrappers
# ---------------------------------------------------------------------------------------------

def _scalar_infos(info):
    """Keep the numeric scalars of an env's final info: they are what is worth averaging."""
    out = {}
    for key, value in info.items():
        if isinstance(value, (numbers.Number, np.number, bool, np.bool_)):
            out[key] = float(value)
        elif isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in 'biuf':
            out[key] = float(value.reshape(()))
    return out


def _create(env, env_creator, env_args, env_kwargs, who):
    if (env is None) == (env_creator is None):
        raise APIUsageError(f'{who} takes exactly one of env= (an env object) or env_creator= (a callable)')
    if env is None:
        if not callable(env_creator):
            raise APIUsageError(f'{who}: env_creator must be callable, got {type(env_creator).__name__}')
        env = env_creator(*env_args, **(env_kwargs or {}))
    return env


class _Emulated(PufferEnv):
    """Shared machinery: layouts, writers, action checks."""

    def _setup_spaces(self, obs_space, act_space):
        self.native_observation_space = obs_space
        self.native_action_space = act_space
        self.single_observation_space, self.obs_dtype = emulate_observation_space(obs_space)
        self.single_action_space, self._unflatten = emulate_action_space(act_space)
        self._write, self._field_paths = _compile_writer(obs_space, self.obs_dtype)
        self._discrete = isinstance(self.single_action_space, (spaces.Discrete, spaces.MultiDiscrete))
        if isinstance(self.single_action_space, spaces.Discrete):
            self._action_high = np.int64(self.single_action_space.n)
        elif self._discrete:
            self._action_high = self.single_action_space.nvec
        self._checked_first_action = False

    def _bind_rows(self):
        self._row_shape = self.observations.shape[1:]
        if self._write is not None:
            self._row_views = _field_views(self.observations, self.obs_dtype, self._field_paths)
        # Agent 0's native action, built once: a Discrete one is read straight from the buffer as a
        # Python int, without a numpy scalar in between (the single-agent step is hot in slow-env workers).
        if isinstance(self.native_action_space, spaces.Discrete):
            item, start = self.actions.item, int(self.native_action_space.start)
            self._first_action = lambda: item(0) + start
        else:
            unflatten, actions = self._unflatten, self.actions
            self._first_action = lambda: unflatten(actions[0])

    def _write_row(self, row, ob):
        """Write one native observation into its row; ValueError if a shape differs from the space's."""
        if self._write is None:
            shape = self._row_shape
            # Compared every step because numpy would broadcast a (1,) or scalar into every feature.
            if getattr(ob, 'shape', None) != shape and np.shape(ob) != shape:
                raise ValueError('the observation does not have the shape of its space')
            self.observations[row] = ob
        else:
            self._write(ob, self._row_views[row])

    def _take_actions(self, actions):
        self.copy_actions(actions)
        if not self._checked_first_action:
            self._check_action_values()
            self._checked_first_action = True

    def _check_action_values(self):
        if self._discrete:
            bad = (self.actions < 0) | (self.actions >= self._action_high)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise APIUsageError(f'{self.describe()}: action {self.actions[row].tolist()} for agent row {row} is '
                                    f'outside {self.single_action_space}')
        elif not np.all(np.isfinite(self.actions)):
            raise APIUsageError(f'{self.describe()}: actions contain NaN or inf: {self.actions.tolist()}')

    def describe(self):
        return f'{type(self).__name__}({type(getattr(self, "env", None)).__name__})'


class GymnasiumPufferEnv(_Emulated):
    """Wrap one Gymnasium (or old gym) env as a single-agent PufferEnv.

        env = GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=('CartPole-v1',))
        obs, infos = env.reset(seed=0)
        obs, rewards, terminals, truncations, infos = env.step(np.array([1]))

    `autoreset=False` gives Gymnasium's own episode semantics instead of same-step autoreset: the
    episode-ending step shows the final observation, and the next step needs a reset() first.
    GymnasiumAdapter turns it off; vector envs need it on.
    """

    def __init__(self, env=None, env_creator: Callable | None = None, env_args: tuple = (),
                 env_kwargs: dict | None = None, buf=None, seed: int | None = None, autoreset: bool = True):
        self.env = ensure_gymnasium(_create(env, env_creator, env_args, env_kwargs, 'GymnasiumPufferEnv'))
        self.num_agents = 1
        self._setup_spaces(self.env.observation_space, self.env.action_space)
        super().__init__(buf)
        self._bind_rows()
        self._seed = check_seed(seed, self.describe)
        self.autoreset = bool(autoreset)
        self.initialized = False
        self._steppable = False  # reset, and (without autoreset) the episode has not ended since
        self.episode_return = 0.0
        self.episode_length = 0
        self.render_mode = getattr(self.env, 'render_mode', None)

    def reset(self, seed=None):
        seed = check_seed(seed, self.describe)
        if seed is None and not self.initialized:
            seed = self._seed
        ob, _ = self.env.reset(seed=seed)
        if not self.initialized:
            check_observation(self.native_observation_space, ob, self.describe())
        self._write_checked(ob)
        self.rewards[0] = 0.0
        self.terminals[0] = False
        self.truncations[0] = False
        self.masks[0] = True
        self.episode_return, self.episode_length = 0.0, 0
        self.initialized = self._steppable = True
        return self.observations, []

    def _write_checked(self, ob):
        try:
            self._write_row(0, ob)
        except (ValueError, TypeError, KeyError, IndexError):
            check_observation(self.native_observation_space, ob, self.describe())
            raise

    def step(self, actions):
        if not self._steppable:
            if not self.initialized:
                raise APIUsageError(f'{self.describe()}: step() called before reset(); call reset(seed) first')
            raise APIUsageError(f'{self.describe()}: the episode ended and autoreset is off; call reset() before '
                                'step()')
        if actions is not self.actions or not self._checked_first_action:
            self._take_actions(actions)  # a vector env passes its own checked buffer: nothing to copy or check
        ob, reward, terminated, truncated, info = self.env.step(self._first_action())
        self.episode_return += reward
        self.episode_length += 1
        self.rewards[0] = reward
        self.terminals[0] = terminated
        self.truncations[0] = truncated
        infos = []
        if terminated or truncated:
            stats = _scalar_infos(info)
            stats['episode_return'] = float(self.episode_return)
            stats['episode_length'] = self.episode_length
            infos.append(stats)
            if self.autoreset:
                ob, _ = self.env.reset()
                self.episode_return, self.episode_length = 0.0, 0
            else:
                self._steppable = False
        if self._write is None and ob.__class__ is np.ndarray and ob.shape == self._row_shape:
            self.observations[0] = ob  # a Box observation of the right shape: what _write_row does, inline
        else:
            self._write_checked(ob)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


# ---------------------------------------------------------------------------------------------
# Action masks of emulated envs
# ---------------------------------------------------------------------------------------------

MASK_KEY = 'action_mask'  # where PettingZoo envs put legal actions: observation[MASK_KEY] or info[MASK_KEY]
MASK_SOURCES = ('auto', 'obs', 'info', 'none')


def _mask_source(choice, obs_space, act_space, describe):
    """Where the env's legal actions come from: 'obs', 'info' or None (see PettingZooPufferEnv)."""
    if choice is None:
        choice = 'none'
    if choice not in MASK_SOURCES:
        raise APIUsageError(f'{describe()}: action_mask must be one of {", ".join(MASK_SOURCES)}, got {choice!r}')
    in_obs = isinstance(obs_space, spaces.Dict) and MASK_KEY in obs_space.spaces
    if choice == 'none' or (choice == 'auto' and not in_obs):
        return None
    if choice == 'obs' and not in_obs:
        raise ActionMaskError(f'{describe()}: action_mask="obs", but the observation space has no {MASK_KEY!r} '
                              f'entry ({obs_space}); use action_mask="info" when the env puts it in infos')
    flat, _ = emulate_action_space(act_space)
    width = action_mask_width(flat)
    if choice == 'info':
        return 'info'
    leaf = obs_space[MASK_KEY]
    shape = tuple(np.atleast_1d(leaf.n)) if isinstance(leaf, spaces.MultiBinary) else getattr(leaf, 'shape', None)
    if not isinstance(leaf, (spaces.Box, spaces.MultiBinary)) or shape != (width,):
        raise ActionMaskError(f'{describe()}: observation[{MASK_KEY!r}] is {leaf}; the action space {act_space} '
                              f'needs a mask of shape ({width},) (one 0/1 per action; MultiDiscrete: the sub-masks '
                              'side by side)')
    if np.dtype(leaf.dtype).kind not in 'biu':
        raise ActionMaskError(f'{describe()}: observation[{MASK_KEY!r}] has dtype {leaf.dtype}; a mask holds 0/1 as '
                              'bool or integers')
    return 'obs'


class PettingZooPufferEnv(_Emulated):
    """Wrap one PettingZoo env (parallel, or AEC) as a multi-agent PufferEnv: one row per agent.

    Rows follow `possible_agents` order. An agent that is absent (dead, not yet spawned) has a zero
    observation, zero reward and mask False; the step an agent leaves still has mask True so its last
    transition trains. The episode ends when no agents remain; the env is then reset in the same step
    (same-step autoreset) and every row's mask reflects the new episode.

    Parallel envs (and AEC envs that say `is_parallelizable`, converted by PettingZoo) step all agents
    at once. Turn-based AEC envs (the classic games: connect_four_v3, tictactoe_v3, leduc_holdem_v4,
    texas_holdem_v4) keep their turns, with the convention of the turn-based Ocean envs (docs/league.md):

    - each step plays one move, the move of the agent to act (`agent_selection`): its row is the only
      live row (`masks` True); the other seats wait (`masks` False, so they stay out of the rollout) and
      their actions are ignored;
    - every seat present observes its own view (`observe(agent)`) on every step, not only on its turn;
    - a seat's reward is what PettingZoo's `last()` reports for it: everything it earned since its own
      last move, credited on the step where its turn comes round again or where it leaves the game.
      The step that ends a game therefore pays every seat its final reward and sets its terminal
      (truncation) flag, whichever seat moved; its observations already belong to the next game.

    Action masks (`action_mask`): 'auto' (default) reads `observation['action_mask']` when the
    observation space has that entry (as PettingZoo's classic games do), 'obs' insists on it, 'info'
    reads `infos[agent]['action_mask']`, 'none' ignores masks. The env then publishes `action_masks`
    (bool [agents, actions]): the legal actions of each live row; a waiting or absent row allows
    action 0 alone. The mask stays in the observation too, for policies that read it. step() refuses
    an action its mask forbids (IllegalActionError) before the PettingZoo env sees it.
    """

    def __init__(self, env=None, env_creator: Callable | None = None, env_args: tuple = (),
                 env_kwargs: dict | None = None, buf=None, seed: int | None = None, action_mask: str | None = 'auto'):
        env = _create(env, env_creator, env_args, env_kwargs, 'PettingZooPufferEnv')
        from pettingzoo import AECEnv
        self.turn_based = False
        if isinstance(env, AECEnv):
            if (getattr(env, 'metadata', None) or {}).get('is_parallelizable', False):
                from pettingzoo.utils.conversions import aec_to_parallel
                env = aec_to_parallel(env)
            else:
                self.turn_based = True
        if not hasattr(env, 'possible_agents') or not callable(getattr(env, 'observation_space', None)):
            raise APIUsageError(f'PettingZooPufferEnv: {type(env).__name__} is neither a PettingZoo ParallelEnv '
                                'nor an AECEnv')
        self.env = env
        self.possible_agents = list(env.possible_agents)
        if not self.possible_agents:
            raise APIUsageError(f'{self.describe()}: possible_agents is empty')
        self.agent_index = {agent: i for i, agent in enumerate(self.possible_agents)}
        first = self.possible_agents[0]
        obs_space, act_space = env.observation_space(first), env.action_space(first)
        for agent in self.possible_agents[1:]:
            if env.observation_space(agent) != obs_space or env.action_space(agent) != act_space:
                raise SpaceError(f'{self.describe()}: agent {agent!r} has spaces {env.observation_space(agent)}, '
                                 f'{env.action_space(agent)} but {first!r} has {obs_space}, {act_space}; '
                                 'every agent must share one observation and one action space '
                                 '(pad them to a common space first)')
        self.num_agents = len(self.possible_agents)
        self._mask_source = _mask_source(action_mask, obs_space, act_space, self.describe)
        self._setup_spaces(obs_space, act_space)
        if self._mask_source is not None:
            self.action_mask_width = action_mask_width(self.single_action_space)
        super().__init__(buf)
        self._bind_rows()
        self._bind_masks()
        self._seed = check_seed(seed, self.describe)
        self.initialized = False
        self.episode_returns = np.zeros(self.num_agents)
        self.episode_length = 0
        self._present = np.zeros(self.num_agents, dtype=bool)
        self._turn = -1  # turn-based: the row of the agent to move

    # ---- rows and masks ----

    def _row(self, agent):
        try:
            return self.agent_index[agent]
        except KeyError:
            raise APIUsageError(f'{self.describe()}: env returned agent {agent!r} which is not in '
                                f'possible_agents {self.possible_agents}') from None

    def _write_agent(self, row, ob, agent):
        try:
            self._write_row(row, ob)
        except (ValueError, TypeError, KeyError, IndexError):
            if self._mask_source == 'obs' and isinstance(ob, dict) and MASK_KEY not in ob:
                raise ActionMaskError(f'{self.describe()}: agent {agent!r} observed no {MASK_KEY!r} any more (keys '
                                      f'{list(ob)}); an env that publishes action masks must do so on every step '
                                      'of every episode') from None
            check_observation(self.native_observation_space, ob, f'{self.describe()} agent {agent!r}')
            raise

    def _write_all(self, obs):
        """Write every returned observation, zero the rows of agents that disappeared."""
        now = np.zeros(self.num_agents, dtype=bool)
        for agent, ob in obs.items():
            row = self._row(agent)
            self._write_agent(row, ob, agent)
            now[row] = True
        gone = self._present & ~now
        if gone.any():
            self.observations[gone] = 0
        self._present = now
        return now

    def _bind_masks(self):
        if self._mask_source is None:
            return
        self._idle_mask = idle_action_mask(self.single_action_space)
        space = self.single_action_space
        self._mask_offsets = (np.concatenate([[0], np.cumsum(space.nvec)[:-1]]).astype(np.int64)
                              if isinstance(space, spaces.MultiDiscrete) else None)
        self._mask_view = None
        if self._mask_source == 'obs':
            # The mask leaf of every row, read in one vectorised pass after the rows are written.
            struct = self.observations.view(np.uint8).reshape(self.num_agents, -1).view(self.obs_dtype)[:, 0]
            self._mask_view = struct[MASK_KEY]

    def _write_masks(self, live, infos=None):
        """Fill `action_masks` from the observations (or infos) just written; rows not in `live` wait."""
        if self._mask_source is None:
            return
        legal = self.action_masks
        if self._mask_view is not None:
            view = self._mask_view
            if view.dtype != np.bool_ and view.size and (view.min() < 0 or view.max() > 1):
                raise ActionMaskError(f'{self.describe()}: observation[{MASK_KEY!r}] holds values other than 0 and '
                                      f'1 ({np.unique(view).tolist()[:8]}); a mask marks each action legal (1) or '
                                      'not (0)')
            np.not_equal(view, 0, out=legal)
        else:
            for row in np.flatnonzero(live):  # one Python access per live agent: infos are dicts per agent
                agent = self.possible_agents[row]
                mask = (infos or {}).get(agent, {}).get(MASK_KEY)
                if mask is None:
                    raise ActionMaskError(f'{self.describe()}: agent {agent!r} must act but its info has no '
                                          f'{MASK_KEY!r}; with action_mask="info" the env must give one for every '
                                          'agent to act, on every step of every episode')
                mask = np.asarray(mask)
                if mask.shape != (legal.shape[1],) or mask.dtype.kind not in 'biu':
                    raise ActionMaskError(f'{self.describe()}: agent {agent!r}: info[{MASK_KEY!r}] is '
                                          f'{mask.dtype}{list(mask.shape)}; the action space '
                                          f'{self.single_action_space} needs bool or integer 0/1 of shape '
                                          f'({legal.shape[1]},)')
                legal[row] = mask != 0
        legal[~live] = self._idle_mask
        stuck = live & ~self._any_legal(legal)
        if stuck.any():
            agent = self.possible_agents[int(np.flatnonzero(stuck)[0])]
            raise ActionMaskError(f'{self.describe()}: agent {agent!r} must act but its action mask allows no action '
                                  '(of some sub-action); a mask must leave at least one legal action')

    def _any_legal(self, legal):
        if self._mask_offsets is None:
            return legal.any(1)
        return np.logical_or.reduceat(legal, self._mask_offsets, axis=1).all(1)

    def _check_legal(self, acting):
        """Refuse the actions of `acting` rows (bool) that their masks forbid, before the env sees them."""
        if self._mask_source is None:
            return
        acts = self.actions.astype(np.int64)
        if self._mask_offsets is None:
            ok = self.action_masks[np.arange(self.num_agents), acts]
        else:
            ok = np.take_along_axis(self.action_masks, acts + self._mask_offsets, axis=1).all(1)
        bad = acting & ~ok
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            legal = np.flatnonzero(self.action_masks[row]).tolist()
            raise IllegalActionError(f'{self.describe()}: agent {self.possible_agents[row]!r} (row {row}) was given '
                                     f'action {self.actions[row].tolist()}, which its action mask forbids (legal '
                                     f'columns: {legal}); sample under env.action_masks (pufferlib.models.'
                                     'sample_logits(logits, mask=...)), and give waiting rows action 0')

    # ---- episodes ----

    def reset(self, seed=None):
        seed = check_seed(seed, self.describe)
        if seed is None and not self.initialized:
            seed = self._seed
        self.observations[...] = 0
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
        self._present[:] = False
        if self.turn_based:
            self.env.reset(seed=seed)
            self._first_turn()
        else:
            obs, infos = self.env.reset(seed=seed)
            if not self.initialized:
                for agent, ob in obs.items():
                    check_observation(self.native_observation_space, ob, f'{self.describe()} agent {agent!r}')
            self.masks[...] = self._write_all(obs)
            self._write_masks(self._present, infos)
        self.episode_returns[...] = 0
        self.episode_length = 0
        self.initialized = True
        return self.observations, []

    def step(self, actions):
        if not self.initialized:
            raise APIUsageError(f'{self.describe()}: step() called before reset(); call reset(seed) first')
        self._take_actions(actions)
        if self.turn_based:
            return self._step_turn()
        unflatten, acts = self._unflatten, self.actions
        stepped = np.zeros(self.num_agents, dtype=bool)
        for agent in self.env.agents:
            stepped[self._row(agent)] = True
        self._check_legal(stepped)
        action_dict = {agent: unflatten(acts[self.agent_index[agent]]) for agent in self.env.agents}
        obs, rewards, terminations, truncations, infos = self.env.step(action_dict)
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
        for agent, reward in rewards.items():
            self.rewards[self._row(agent)] = reward
        for agent, value in terminations.items():
            self.terminals[self._row(agent)] = value
        for agent, value in truncations.items():
            self.truncations[self._row(agent)] = value
        present = self._write_all(obs)
        # A row is valid if its agent acted this step (its transition trains) or is there now.
        self.masks[...] = stepped | present
        self.episode_returns += self.rewards
        self.episode_length += 1
        out = []
        if not self.env.agents:
            out.append({'episode_return': float(self.episode_returns.mean()),
                        'episode_length': self.episode_length})
            obs, infos = self.env.reset()
            self.masks[...] |= self._write_all(obs)
            self.episode_returns[...] = 0
            self.episode_length = 0
        self._write_masks(self._present, infos)
        return self.observations, self.rewards, self.terminals, self.truncations, out

    # ---- turn-based (AEC) episodes ----

    def _settle(self):
        """Credit `last()` rewards and retire the agents whose episode ended, until an agent is to move.
        Returns that agent, or None when no agent remains (the episode is over)."""
        env = self.env
        while env.agents:
            agent = env.agent_selection
            row = self._row(agent)
            _, reward, terminated, truncated, _ = env.last(observe=False)
            self.rewards[row] += reward
            if not (terminated or truncated):
                return agent
            self.terminals[row] |= bool(terminated)
            self.truncations[row] |= bool(truncated)
            env.step(None)  # PettingZoo's way to retire an agent whose episode ended
        return None

    def _first_turn(self):
        agent = self._settle()
        if agent is None:
            raise EnvError(f'{self.describe()}: the episode ended in reset(), before any agent moved')
        self._write_turn(agent)

    def _write_turn(self, agent):
        """Every present seat's own view; the mover's row live, the others waiting."""
        env = self.env
        now = np.zeros(self.num_agents, dtype=bool)
        for other in env.agents:
            row = self._row(other)
            self._write_agent(row, env.observe(other), other)
            now[row] = True
        if not self.initialized:
            check_observation(self.native_observation_space, env.observe(agent), f'{self.describe()} agent {agent!r}')
        gone = self._present & ~now
        if gone.any():
            self.observations[gone] = 0
        self._present = now
        self._turn = self._row(agent)
        self.masks[...] = False
        self.masks[self._turn] = True
        self._write_masks(self.masks, {agent: env.infos.get(agent, {})} if self._mask_source == 'info' else None)

    def _step_turn(self):
        env, row = self.env, self._turn
        acting = np.zeros(self.num_agents, dtype=bool)
        acting[row] = True
        self._check_legal(acting)
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False
        env.step(self._unflatten(self.actions[row]))
        self.episode_length += 1
        agent = self._settle()
        self.episode_returns += self.rewards
        infos = []
        if agent is None:
            stats = {'episode_return': float(self.episode_returns.mean()), 'episode_length': self.episode_length}
            for k, name in enumerate(self.possible_agents[:8]):  # per seat: the mean of a zero-sum game is 0
                stats[f'{name}_return'] = float(self.episode_returns[k])
            infos.append(stats)
            env.reset()
            before = self.rewards.copy()
            agent = self._settle()
            if agent is None:
                raise EnvError(f'{self.describe()}: the episode ended in reset(), before any agent moved')
            self.episode_returns[...] = self.rewards - before
            self.episode_length = 0
        self._write_turn(agent)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


class GymnasiumAdapter(gymnasium.Env):
    """Expose a single-agent PufferEnv (emulated or Ocean) as a plain Gymnasium env with flat spaces.

    Observations are the flat rows. Episodes follow Gymnasium, not the vector envs' same-step
    autoreset: the episode-ending step returns the final observation, and step() after it raises
    until reset() is called. An emulated env (GymnasiumPufferEnv) gets its autoreset turned off for
    this, so its final observation is the wrapped env's own. An Ocean env resets inside C in the
    same step, so its final observation is gone: there the episode-ending step returns the next
    episode's first observation. Useful for Gymnasium tooling and SB3.
    """

    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, puffer_env):
        if puffer_env.num_agents != 1:
            raise APIUsageError(f'GymnasiumAdapter needs a single-agent env, got num_agents={puffer_env.num_agents}')
        self.puffer_env = puffer_env
        if hasattr(puffer_env, 'autoreset'):
            puffer_env.autoreset = False
        self.observation_space = puffer_env.single_observation_space
        self.action_space = puffer_env.single_action_space
        self.render_mode = getattr(puffer_env, 'render_mode', None)
        self._episode_over = True  # nothing to step until reset()

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        obs, infos = self.puffer_env.reset(seed=seed)
        self._episode_over = False
        return obs[0].copy(), _merge(infos)

    def step(self, action):
        if self._episode_over:
            raise APIUsageError('GymnasiumAdapter: step() after the episode ended (or before the first reset()); '
                                'call reset() first')
        # Through the env's own action check: a NaN or out-of-range action is refused on every step.
        obs, rewards, terminals, truncations, infos = self.puffer_env.step(np.asarray(action))
        terminal, truncated = bool(terminals[0]), bool(truncations[0])
        self._episode_over = terminal or truncated
        return obs[0].copy(), float(rewards[0]), terminal, truncated, _merge(infos)

    def render(self):
        return self.puffer_env.render()

    def close(self):
        self.puffer_env.close()


def _merge(infos):
    out = {}
    for info in infos:
        out.update(info)
    return out
