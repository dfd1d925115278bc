"""Spaces: the flat row layout of any observation space and the way back (Nativizer), writing and
checking observations, flat action spaces, and the row machinery both env wrappers share."""
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.pufferenv import APIUsageError, PufferEnv, SpaceError, space_shape

if TYPE_CHECKING:
    import torch

LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


# ---------------------------------------------------------------------------------------------
# Observation layout
# ---------------------------------------------------------------------------------------------

def _leaf_dtype_shape(space: spaces.Space) -> tuple[np.dtype, tuple]:
    if isinstance(space, spaces.Discrete):
        return np.dtype(space.dtype), ()
    if isinstance(space, spaces.MultiBinary):
        return np.dtype(space.dtype), tuple(np.atleast_1d(space.n))
    return np.dtype(space.dtype), space_shape(space)


def _leaf_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Flattened (low, high) of a leaf, as float64 so mixed kinds can be concatenated."""
    if isinstance(space, spaces.Box):
        return np.asarray(space.low, np.float64).ravel(), np.asarray(space.high, np.float64).ravel()
    if isinstance(space, spaces.Discrete):
        return np.array([space.start], np.float64), np.array([space.start + space.n - 1], np.float64)
    if isinstance(space, spaces.MultiDiscrete):
        return (np.asarray(space.start, np.float64).ravel(),
                np.asarray(space.start + space.nvec - 1, np.float64).ravel())
    if isinstance(space, spaces.MultiBinary):
        size = int(np.prod(space.n))
        return np.zeros(size), np.ones(size)
    raise SpaceError(f'{space} is not one of the leaf spaces {", ".join(s.__name__ for s in LEAF_SPACES)}')


def _walk(space: spaces.Space, path: tuple = ()) -> Iterator[tuple[tuple, spaces.Space]]:
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


def _fmt(path: tuple) -> str:
    return '/'.join(str(p) for p in path) if path else '<root>'


def _struct_dtype(space: spaces.Space) -> np.dtype:
    if isinstance(space, spaces.Dict):
        return np.dtype([(key, _struct_dtype(sub)) for key, sub in space.spaces.items()])
    if isinstance(space, spaces.Tuple):
        return np.dtype([(f'f{i}', _struct_dtype(sub)) for i, sub in enumerate(space.spaces)])
    dtype, shape = _leaf_dtype_shape(space)
    return np.dtype((dtype, shape)) if shape else dtype


def _field_path(path: tuple) -> tuple[str, ...]:
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

    def __init__(self, path: tuple, dtype: np.dtype, shape: tuple, offset: int) -> None:
        self.path, self.dtype, self.shape, self.offset = path, dtype, shape, offset
        self.nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))


def _layout(dtype: np.dtype, offset: int = 0, path: tuple = ()) -> tuple:
    """Tree of ('dict', [(name, node)]) / ('tuple', [node]) / ('leaf', _Leaf) from a structured dtype."""
    fields = dtype.fields  # None exactly when names is
    if dtype.names is None or fields is None:
        base, shape = (dtype.subdtype if dtype.subdtype else (dtype, ()))
        return ('leaf', _Leaf(path, base, shape, offset))
    children = [(name, _layout(fields[name][0], offset + fields[name][1], path + (name,)))
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

    def __init__(self, obs_dtype: np.dtype | None) -> None:
        if obs_dtype is None or np.dtype(obs_dtype).names is None:
            raise APIUsageError('Nativizer needs a structured obs_dtype (env.obs_dtype); Box observations '
                                'need no nativizing')
        self.dtype = np.dtype(obs_dtype)
        tree = _layout(self.dtype)
        # A lone non-Box observation was wrapped in one field named 'obs': unwrap it again.
        self.tree = tree[1][0][1] if self.dtype.names == ('obs',) else tree

    def __call__(self, rows: 'np.ndarray | torch.Tensor') -> Any:
        if isinstance(rows, np.ndarray):
            return self._numpy(rows)
        return self._torch(rows)

    def _numpy(self, rows: np.ndarray) -> Any:
        lead = rows.shape[:-1]
        raw = np.ascontiguousarray(rows).reshape(-1, rows.shape[-1]).view(np.uint8)
        if raw.shape[1] != self.dtype.itemsize:
            raise SpaceError(f'rows hold {raw.shape[1]} bytes, obs_dtype needs {self.dtype.itemsize}')
        struct = raw.view(self.dtype)[:, 0]

        def build(node: tuple) -> Any:
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

    def _torch(self, rows: 'torch.Tensor') -> Any:
        import torch
        lead = rows.shape[:-1]
        flat = rows.reshape(-1, rows.shape[-1])
        row_np = _numpy_dtype_of(flat.dtype)
        # Fast path: every leaf has the row's own dtype, so each leaf is a plain slice (a view).
        by_elements = row_np.itemsize == flat.element_size() and self._uniform_dtype() == row_np
        if not by_elements:
            flat = flat.contiguous().view(torch.uint8)

        def build(node: tuple) -> Any:
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

    def _uniform_dtype(self) -> np.dtype | None:
        kinds: set[np.dtype] = set()

        def visit(node: tuple) -> None:
            kind, body = node
            if kind == 'leaf':
                kinds.add(body.dtype)
            else:
                for child in body:
                    visit(child[1] if kind == 'dict' else child)
        visit(self.tree)
        return next(iter(kinds)) if len(kinds) == 1 else None


def nativize(rows: 'np.ndarray | torch.Tensor', obs_dtype: np.dtype | None) -> Any:
    """One-off form of `Nativizer(obs_dtype)(rows)`; build a Nativizer once in hot loops."""
    return Nativizer(obs_dtype)(rows)


def _torch_dtype(np_dtype: np.dtype) -> 'torch.dtype':
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


def _numpy_dtype_of(torch_dtype: 'torch.dtype') -> np.dtype:
    import torch
    return np.dtype(torch.empty(0, dtype=torch_dtype).numpy().dtype) if torch_dtype != torch.bfloat16 \
        else np.dtype(np.uint16)


# ---------------------------------------------------------------------------------------------
# Observation writing and checking
# ---------------------------------------------------------------------------------------------

def _accessor(path: tuple) -> str:
    return ''.join(f'[{p!r}]' for p in path)


class ObservationMismatch(ValueError):
    """A leaf of an observation breaks the rules of its space; the message names the leaf and the value.
    The wrappers add the env's name and raise it as a SpaceError."""


def _int_limits(space: spaces.Space, dtype: np.dtype) -> tuple[Any, Any] | None:
    """(low, high) an integer or bool leaf's values must lie in, scalars when every element shares them;
    None for a floating-point leaf. Discrete, MultiDiscrete and MultiBinary: the space itself. A Box:
    its dtype's range, not its declared bounds (see describe_mismatch)."""
    if dtype.kind not in 'biu':
        return None
    if isinstance(space, spaces.Discrete):
        return int(space.start), int(space.start) + int(space.n) - 1
    if dtype.kind == 'b' or isinstance(space, spaces.MultiBinary):
        return 0, 1
    if not isinstance(space, spaces.MultiDiscrete):
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    low, high = np.asarray(space.start), np.asarray(space.start) + np.asarray(space.nvec) - 1
    if low.size and (low == low.flat[0]).all() and (high == high.flat[0]).all():
        return int(low.flat[0]), int(high.flat[0])
    return low, high


def _narrower_than_dtype(limits: tuple[Any, Any], dtype: np.dtype) -> bool:
    """Whether values of the leaf's own dtype can still fall outside its space (Discrete(3) in int64)."""
    if dtype.kind == 'b':
        return False
    info = np.iinfo(dtype)
    return bool(np.any(np.asarray(limits[0]) > info.min) or np.any(np.asarray(limits[1]) < info.max))


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT_SCALARS = (int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
_FLOAT_SCALARS = (float, int, np.float16, np.float32, np.float64)


def _compile_writer(obs_space: spaces.Space, obs_dtype: np.dtype | None) -> tuple[Callable | None, list | None]:
    """A function write(ob, dsts) that checks each leaf of a native observation and copies it into its
    field view.

    Generated as straight-line code because a Python loop over leaves costs about as much as the
    copies themselves for NetHack-sized dicts. It first compares the shapes and dtypes of the leaves
    that are not scalars with the space's, in one tuple comparison: numpy would otherwise broadcast
    a value of shape (1,) or () into every element of the field without a word, and cast a value of
    another dtype with wrap-around (300 as uint8 is 44). Only on a difference are the leaves checked
    one by one (a shape mismatch raises ValueError, which the callers turn into a SpaceError that
    names the leaf; a value that would not be stored as it is raises ObservationMismatch, see
    describe_mismatch for the rule). MultiDiscrete and MultiBinary leaves, whose values must be
    categories, then cost one or two reductions each, and a scalar leaf (a Python int or float) one
    type test and one comparison.
    """
    if obs_dtype is None:
        return None, None
    paths: list[tuple[tuple, tuple[str, ...], spaces.Space]]
    if obs_dtype.names == ('obs',):
        paths = [((), ('obs',), obs_space)]
    else:
        paths = [(path, _field_path(path), leaf) for path, leaf in _walk(obs_space)]
    shaped = [(i, _leaf_dtype_shape(leaf)) for i, (_, _, leaf) in enumerate(paths) if _leaf_dtype_shape(leaf)[1]]
    slow = _slow_leaf_check([(path, leaf) for path, _, leaf in paths])
    indices, shapes = tuple(i for i, _ in shaped), tuple(shape for _, (_, shape) in shaped)

    def careful(values: tuple) -> None:
        _check_shapes(values, shapes)
        for i, value in zip(indices, values):
            slow(i, value)
    namespace: dict[str, Any] = {'EXPECTED': tuple(x for _, (dtype, shape) in shaped for x in (shape, dtype)),
                                 'careful': careful, 'slow': slow, 'vmin': np.minimum.reduce,
                                 'vmax': np.maximum.reduce}
    lines = ['def write(ob, d):']
    for i, (path, _, _) in enumerate(paths):
        lines.append(f'    v{i} = ob{_accessor(path)}')
    if shaped:
        actual = ', '.join(f'v{i}.shape, v{i}.dtype' for i, _ in shaped)
        values = ', '.join(f'v{i}' for i, _ in shaped)
        ranges = [line for i, _ in shaped for line in _range_lines(i, paths[i][2], namespace)]
        lines += ['    try:', f'        key = ({actual},)', '    except AttributeError:', '        key = None',
                  '    if key != EXPECTED:', f'        careful(({values},))']
        if ranges:
            lines += ['    else:', *ranges]
    for i, (_, _, leaf) in enumerate(paths):
        lines.extend(_scalar_lines(i, leaf, namespace))
    for i in range(len(paths)):
        lines.append(f'    d[{i}][...] = v{i}')
    exec('\n'.join(lines), namespace)
    return namespace['write'], [fields for _, fields, _ in paths]


def _scalar_lines(i: int, leaf: spaces.Space, namespace: dict[str, Any]) -> list[str]:
    """The lines that check a scalar leaf `i` (usually a Python int or float) and call slow(i, v{i}) when
    in doubt; none for a leaf with a shape."""
    dtype, shape = _leaf_dtype_shape(leaf)
    if shape:
        return []
    limits = _int_limits(leaf, dtype)
    if limits is None:
        namespace[f'S{i}'] = _FLOAT_SCALARS
        return [f'    if v{i}.__class__ not in S{i}:', f'        slow({i}, v{i})']
    namespace[f'S{i}'] = _INT_SCALARS
    namespace[f'LO{i}'], namespace[f'HI{i}'] = limits
    return [f'    if v{i}.__class__ not in S{i} or not LO{i} <= v{i} <= HI{i}:', f'        slow({i}, v{i})']


def _range_lines(i: int, leaf: spaces.Space, namespace: dict[str, Any]) -> list[str]:
    """For a leaf with a shape whose value has the leaf's dtype: the lines that call slow(i, v{i}) when a
    value lies outside its space (MultiDiscrete, MultiBinary); none where the dtype holds only valid values."""
    dtype, _ = _leaf_dtype_shape(leaf)
    limits = _int_limits(leaf, dtype)
    if limits is None or not _narrower_than_dtype(limits, dtype):
        return []
    namespace[f'LO{i}'], namespace[f'HI{i}'] = limits
    if isinstance(limits[0], int) and limits[0] == 0:  # one reduction: negatives viewed unsigned are huge
        namespace[f'U{i}'] = _UNSIGNED[dtype.itemsize]
        test = f'vmax(v{i}.view(U{i}), None) > HI{i}'
    elif isinstance(limits[0], int):
        test = f'vmin(v{i}, None) < LO{i} or vmax(v{i}, None) > HI{i}'
    else:
        test = f'(v{i} < LO{i}).any() or (v{i} > HI{i}).any()'
    return [f'        if {test}:', f'            slow({i}, v{i})']


def _slow_leaf_check(leaves: list[tuple[tuple, spaces.Space]]) -> Callable[[int, Any], None]:
    def slow(i: int, value: Any) -> None:
        path, leaf = leaves[i]
        msg = describe_mismatch(leaf, value, path)
        if msg:
            raise ObservationMismatch(msg)
    return slow


def box_checker(space: spaces.Box) -> Callable[[Any], None]:
    """check(ob) for a Box observation (its rows have the Box's dtype, so an ndarray of that dtype is
    stored as it is and needs no check): raises ObservationMismatch for a value the row cannot hold as
    it is."""
    def check(ob: Any) -> None:
        msg = describe_mismatch(space, ob)
        if msg:
            raise ObservationMismatch(msg)
    return check


def _check_shapes(values: tuple, shapes: tuple) -> None:
    """The exact comparison behind the writer's fast one (a list has no .shape but may be right)."""
    if tuple(np.shape(v) for v in values) != shapes:
        raise ValueError('an observation leaf does not have the shape of its space')


def _field_views(obs_rows: np.ndarray, obs_dtype: np.dtype, field_paths: list) -> list[tuple[np.ndarray, ...]]:
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


def describe_mismatch(space: spaces.Space, value: Any, path: tuple = ()) -> str | None:
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
    # The rule: a value is stored only as it is, and a category only if it is one. Integers (and bools)
    # of any dtype must fit an integer Box's dtype: 300 or -1 as uint8 would wrap around. Floats may not
    # go into an integer leaf (truncated, and wrapped when large), nor any dtype into one of another
    # kind that numpy would not cast to within its kind. Discrete, MultiDiscrete and MultiBinary values
    # must lie in the space: 5 is no category of Discrete(3), and a model's one-hot or embedding of it
    # would fail or read a neighbour. A Box's declared bounds, float or integer, are not enforced: many
    # real envs exceed them slightly (Gymnasium's check_env only warns), the value is stored exactly,
    # and checking them would cost a reduction per leaf on every step (twice emulation's own cost on a
    # NetHack-shaped Dict; scripts/lab/results/emulation.md). NaN and inf are the trainer's check
    # (pufferlib.nonfinite_rows), which names the env row.
    integers = arr.dtype.kind in 'biu' and dtype.kind in 'iu'
    if arr.dtype != dtype and not integers and not np.can_cast(arr.dtype, dtype, casting='same_kind'):
        example = ''
        if arr.size:
            with np.errstate(all='ignore'), warnings.catch_warnings():
                warnings.simplefilter('ignore')  # numpy's ComplexWarning: the cast is only to find a changed value
                changed = arr.astype(dtype).astype(arr.dtype) != arr
            index = () if not arr.ndim else \
                tuple(int(i) for i in np.argwhere(changed)[0]) if changed.any() else (0,) * arr.ndim
            example = f' (e.g. {arr[index].item()!r}' + (f' at index {index})' if index else ')')
        return (f'{_fmt(path)}: {arr.dtype} values cannot be stored in {space} without being cast to '
                f'{dtype}{example}; return {dtype} values, e.g. np.clip(x, low, high).astype(np.{dtype})')
    limits = _int_limits(space, dtype)
    if limits is not None and arr.size:
        low, high = limits
        outside = (arr < low) | (arr > high)
        if outside.any():
            index = tuple(int(i) for i in np.argwhere(outside)[0]) if arr.shape else ()
            bad, lo, hi = arr[index].item(), np.broadcast_to(low, shape)[index], np.broadcast_to(high, shape)[index]
            where = f' at index {index}' if index else ''
            if isinstance(space, spaces.Box):
                return (f'{_fmt(path)}: value {bad!r}{where} does not fit {dtype} ({lo} to {hi}), the dtype of '
                        f'{space}: stored, it would wrap around')
            return f'{_fmt(path)}: value {bad!r}{where} is outside {space} (valid: {lo} to {hi})'
    return None


def check_observation(space: spaces.Space, value: Any, who: str) -> None:
    msg = describe_mismatch(space, value)
    if msg:
        raise mismatch_error(who, msg)


def mismatch_error(who: str, msg: str) -> SpaceError:
    return SpaceError(f'{who}: observation does not match its observation_space at {msg}')


# ---------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------

def emulate_action_space(space: spaces.Space) -> tuple[spaces.Space, Callable]:
    """Return (flat action space, unflatten(row) -> native action)."""
    if isinstance(space, spaces.Box):
        dtype = space.dtype
        return space, (lambda row: row.astype(dtype) if row.dtype != dtype else row)
    if isinstance(space, spaces.Discrete):
        start, py_int = int(space.start), int
        return spaces.Discrete(int(space.n)), (lambda row: py_int(row) + start)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        starts, shape, dtype = np.asarray(space.start).ravel(), nvec.shape, space.dtype
        return spaces.MultiDiscrete(nvec.ravel()), (lambda row: (row + starts).reshape(shape).astype(dtype))
    if isinstance(space, spaces.MultiBinary):
        shape = tuple(np.atleast_1d(space.n))
        size = int(np.prod(shape))
        return spaces.MultiDiscrete(np.full(size, 2)), (lambda row: row.reshape(shape).astype(np.int8))
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        return _emulate_structured_actions(space)
    raise SpaceError(f'cannot emulate action space {space}: supported are Discrete, MultiDiscrete, '
                     'MultiBinary, Box, and Dict/Tuple of the discrete kinds')


def _emulate_structured_actions(space: spaces.Dict | spaces.Tuple) -> tuple[spaces.MultiDiscrete, Callable]:
    leaves = list(_walk(space))
    if not leaves:
        raise SpaceError(f'action space {space} holds no actions (an empty Dict or Tuple): give the env at least '
                         'one, e.g. Discrete(1) for an agent that only watches')
    for path, leaf in leaves:
        if isinstance(leaf, spaces.Box):
            raise SpaceError(f'action space {space} has a Box at {_fmt(path)}: structured action spaces '
                             'may only hold Discrete, MultiDiscrete and MultiBinary (use a flat Box instead)')
    nvecs: list[np.ndarray] = []
    converters: list[tuple[tuple, int, int, bool, Callable]] = []
    offset = 0
    for path, leaf in leaves:
        flat, leaf_unflatten = emulate_action_space(leaf)
        if isinstance(flat, spaces.Discrete):
            size, nvec = 1, flat.n
        else:  # no Box (refused above): Discrete stays Discrete, the other leaves flatten to MultiDiscrete
            nvec = cast(spaces.MultiDiscrete, flat).nvec
            size = len(nvec)
        nvecs.append(np.atleast_1d(nvec))
        converters.append((path, offset, size, isinstance(flat, spaces.Discrete), leaf_unflatten))
        offset += size

    def unflatten(row: np.ndarray) -> Any:
        out = _empty_like_space(space)
        for path, start, size, scalar, leaf_unflatten in converters:
            target = out
            for key in path[:-1]:
                target = target[key]
            value = leaf_unflatten(row[start] if scalar else row[start:start + size])
            target[path[-1]] = value
        return _freeze_tuples(out, space)
    return spaces.MultiDiscrete(np.concatenate(nvecs)), unflatten


def _empty_like_space(space: spaces.Space) -> Any:
    if isinstance(space, spaces.Dict):
        return {k: _empty_like_space(v) for k, v in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return [_empty_like_space(v) for v in space.spaces]
    return None


def _freeze_tuples(value: Any, space: spaces.Space) -> Any:
    if isinstance(space, spaces.Dict):
        return {k: _freeze_tuples(value[k], v) for k, v in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_freeze_tuples(value[i], v) for i, v in enumerate(space.spaces))
    return value


# ---------------------------------------------------------------------------------------------
# What both wrappers share
# ---------------------------------------------------------------------------------------------

def _create(env: Any, env_creator: Callable | None, env_args: tuple, env_kwargs: dict | None, who: str) -> Any:
    if (env is None) == (env_creator is None):
        raise APIUsageError(f'{who} takes exactly one of env= (an env object) or env_creator= (a callable)')
    if env is None:
        if not callable(env_creator):
            raise APIUsageError(f'{who}: env_creator must be callable, got {type(env_creator).__name__}')
        env = env_creator(*env_args, **(env_kwargs or {}))
    return env


class _Emulated(PufferEnv):
    """Shared machinery: layouts, writers, action checks."""

    def _setup_spaces(self, obs_space: spaces.Space, act_space: spaces.Space) -> None:
        self.native_observation_space = obs_space
        self.native_action_space = act_space
        self.single_observation_space, self.obs_dtype = emulate_observation_space(obs_space)
        self.single_action_space, self._unflatten = emulate_action_space(act_space)
        self._write, self._field_paths = _compile_writer(obs_space, self.obs_dtype)
        if self._write is None:  # a Box: rows of its own dtype
            self._row_dtype = np.dtype(obs_space.dtype)
            self._check_box = box_checker(cast(spaces.Box, obs_space))
        self._discrete = isinstance(self.single_action_space, (spaces.Discrete, spaces.MultiDiscrete))
        self._action_high: np.int64 | np.ndarray
        if isinstance(self.single_action_space, spaces.Discrete):
            self._action_high = np.int64(self.single_action_space.n)
        elif isinstance(self.single_action_space, spaces.MultiDiscrete):
            self._action_high = self.single_action_space.nvec
        self._checked_first_action = False

    def _bind_rows(self) -> None:
        self._row_shape = self.observations.shape[1:]
        if self.obs_dtype is not None and self._field_paths is not None:  # exactly when there is a _write
            self._row_views = _field_views(self.observations, self.obs_dtype, self._field_paths)
        # Agent 0's native action, built once: a Discrete one is read straight from the buffer as a
        # Python int, without a numpy scalar in between (the single-agent step is hot in slow-env workers).
        if isinstance(self.native_action_space, spaces.Discrete):
            item, start = self.actions.item, int(self.native_action_space.start)
            self._first_action = lambda: item(0) + start
        else:
            unflatten, actions = self._unflatten, self.actions
            self._first_action = lambda: unflatten(actions[0])

    def _write_row(self, row: int, ob: Any) -> None:
        """Write one native observation into its row; ValueError if a shape differs from the space's,
        ObservationMismatch (a ValueError) if a value would not be stored as it is."""
        if self._write is None:
            shape = self._row_shape
            # Compared every step because numpy would broadcast a (1,) or scalar into every feature.
            if getattr(ob, 'shape', None) != shape and np.shape(ob) != shape:
                raise ValueError('the observation does not have the shape of its space')
            if ob.__class__ is not np.ndarray or ob.dtype is not self._row_dtype:
                self._check_box(ob)
            self.observations[row] = ob
        else:
            self._write(ob, self._row_views[row])

    def _take_actions(self, actions: npt.ArrayLike) -> None:
        self.copy_actions(actions)
        if not self._checked_first_action:
            self._check_action_values()
            self._checked_first_action = True

    def _check_action_values(self) -> None:
        if self._discrete:
            bad = (self.actions < 0) | (self.actions >= self._action_high)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise APIUsageError(f'{self.describe()}: action {self.actions[row].tolist()} for agent row {row} is '
                                    f'outside {self.single_action_space}')
        elif not np.all(np.isfinite(self.actions)):
            raise APIUsageError(f'{self.describe()}: actions contain NaN or inf: {self.actions.tolist()}')

    def describe(self) -> str:
        return f'{type(self).__name__}({type(getattr(self, "env", None)).__name__})'
