"""Spaces: the flat row layout of any observation space and the way back (Nativizer), and flat action
spaces with the way back to a native action. Writing and checking observations is checks.py; the row
machinery both env wrappers share is base.py."""
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from gymnasium import spaces

from pufferlib.pufferenv import APIUsageError, MixedSpace, SpaceError, space_shape

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
# Actions
# ---------------------------------------------------------------------------------------------

def emulate_action_space(space: spaces.Space) -> tuple[spaces.Space, Callable]:
    """Return (flat action space, unflatten(row) -> native action).

    A Dict or Tuple (nested any depth) flattens by its leaves in the space's own order (a Gymnasium Dict
    built from a plain dict sorts its keys; from an OrderedDict, keeps them): discrete leaves only become
    one MultiDiscrete, Box leaves only one float32 Box, and both a MixedSpace whose row holds every
    discrete leaf's columns first, then every Box leaf's elements (each flattened)."""
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
                     'MultiBinary, Box, and Dict/Tuple of those (a mixed action space)')


# One leaf of a structured action: (path, first column, columns, Discrete (one column read as a scalar),
# Box, unflatten of the leaf's own columns).
_Converter = tuple[tuple, int, int, bool, bool, Callable]


def _emulate_structured_actions(space: spaces.Dict | spaces.Tuple) -> tuple[spaces.Space, Callable]:
    leaves = list(_walk(space))
    if not leaves:
        raise SpaceError(f'action space {space} holds no actions (an empty Dict or Tuple): give the env at least '
                         'one, e.g. Discrete(1) for an agent that only watches')
    boxes = [(path, leaf) for path, leaf in leaves if isinstance(leaf, spaces.Box)]
    for path, part in boxes:
        if not np.issubdtype(part.dtype, np.floating):
            raise SpaceError(f'action space {space} has an integer Box ({part}) at {_fmt(path)}: the Box parts of a '
                             'structured action space must be float (policies sample them from a Gaussian); '
                             'use Discrete or MultiDiscrete for integer choices')
    discrete = [(path, leaf) for path, leaf in leaves if not isinstance(leaf, spaces.Box)]
    nvecs: list[np.ndarray] = []
    converters: list[_Converter] = []
    offset = 0
    for path, leaf in discrete:  # the discrete columns come first, then the Box elements
        flat, leaf_unflatten = emulate_action_space(leaf)
        if isinstance(flat, spaces.Discrete):
            size, nvec = 1, flat.n
        else:  # Discrete stays Discrete, the other discrete leaves flatten to MultiDiscrete
            nvec = cast(spaces.MultiDiscrete, flat).nvec
            size = len(nvec)
        nvecs.append(np.atleast_1d(nvec))
        converters.append((path, offset, size, isinstance(flat, spaces.Discrete), False, leaf_unflatten))
        offset += size
    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    for path, part in boxes:
        size = int(np.prod(part.shape, dtype=np.int64))
        lows.append(np.broadcast_to(part.low, part.shape).ravel())
        highs.append(np.broadcast_to(part.high, part.shape).ravel())
        shape, dtype = part.shape, part.dtype
        converters.append((path, offset, size, False, True,
                           lambda cols, shape=shape, dtype=dtype: cols.reshape(shape).astype(dtype)))
        offset += size
    if not boxes:
        flat_space: spaces.Space = spaces.MultiDiscrete(np.concatenate(nvecs))
    elif not discrete:
        flat_space = spaces.Box(low=np.concatenate(lows).astype(np.float32),
                                high=np.concatenate(highs).astype(np.float32), dtype=np.float32)
    else:
        flat_space = MixedSpace(np.concatenate(nvecs), np.concatenate(lows), np.concatenate(highs))
    # A mixed row is float32: its discrete columns go back to integers before the leaves read them.
    floats = isinstance(flat_space, MixedSpace)

    def unflatten(row: np.ndarray) -> Any:
        out = _empty_like_space(space)
        for path, start, size, scalar, box, leaf_unflatten in converters:
            target = out
            for key in path[:-1]:
                target = target[key]
            cols = row[start:start + size]
            if floats and not box:
                cols = cols.astype(np.int64)
            target[path[-1]] = leaf_unflatten(cols[0] if scalar else cols)
        return _freeze_tuples(out, space)
    return flat_space, unflatten


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
