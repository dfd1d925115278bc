"""Writing observations into their rows and checking them against their space: a writer compiled once
per space checks and copies each leaf, and `describe_mismatch` says in a sentence which value does not
fit and why (the rule is in `_leaf_mismatch`)."""
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from pufferlib.emulation.spaces import _field_path, _fmt, _leaf_dtype_shape, _walk
from pufferlib.pufferenv import SpaceError


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
    return _leaf_mismatch(space, value, path)


def _leaf_mismatch(space: spaces.Space, value: Any, path: tuple) -> str | None:
    """describe_mismatch for a leaf space (Box, Discrete, MultiDiscrete, MultiBinary)."""
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
        return (f'{_fmt(path)}: {arr.dtype} values cannot be stored in {space} without being cast to '
                f'{dtype}{_cast_example(arr, dtype)}; return {dtype} values, e.g. '
                f'np.clip(x, low, high).astype(np.{dtype})')
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


def _cast_example(arr: np.ndarray, dtype: np.dtype) -> str:
    """' (e.g. 2.5 at index (1,))': the first value the cast to `dtype` would change (the first value where
    none would), or '' for an empty array."""
    if not arr.size:
        return ''
    with np.errstate(all='ignore'), warnings.catch_warnings():
        warnings.simplefilter('ignore')  # numpy's ComplexWarning: the cast is only to find a changed value
        changed = arr.astype(dtype).astype(arr.dtype) != arr
    index = () if not arr.ndim else \
        tuple(int(i) for i in np.argwhere(changed)[0]) if changed.any() else (0,) * arr.ndim
    return f' (e.g. {arr[index].item()!r}' + (f' at index {index})' if index else ')')


def check_observation(space: spaces.Space, value: Any, who: str) -> None:
    msg = describe_mismatch(space, value)
    if msg:
        raise mismatch_error(who, msg)


def mismatch_error(who: str, msg: str) -> SpaceError:
    return SpaceError(f'{who}: observation does not match its observation_space at {msg}')
