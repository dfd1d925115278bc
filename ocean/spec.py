"""The one declaration of an Ocean env: `ocean/<name>/spec.toml`, read here by setup.py and by Python.

A spec gives every option (default, type, range, help), the observation and action spaces, the
agents per env instance and a few extras (action mask, catalogue group, the env's own episode-log
fields). This module is the schema: `load` and `discover` read spec.toml files into `Spec`s, and a
Spec gives Python what it needs: the env's spaces, option validation (names, types, ranges, checks)
and the options packed into the C struct's bytes (`Spec.pack`). Beside it, by job:

- ocean/spec_expr.py: the expression language of sizes, ranges and checks (`Expr`), evaluated in
  Python and printed as C from one parsed tree;
- ocean/spec_c.py: what setup.py generates per env from a Spec: `spec.h` (the `<Name>Config` struct,
  the same range checks in C, and the row sizes) and a three-line binding source that instantiates
  ocean/binding.h. Both go into the build's temp folder, never into the tree.

These modules import only the standard library and each other (relatively): setup.py loads them by
path before pufferlib is installed. The format is documented in docs/writing_envs.md.
"""
import math
import os
import re
import struct
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Expr, SpecError and Value belong to the schema's vocabulary too: callers import them from here.
from .spec_expr import Expr, SpecError, Value, fmt

PREFIX = 'puffer_'  # env 'pong' is 'puffer_pong' everywhere outside its folder
# Catalogue groups, in catalogue order. 'template' envs are built and tested but not listed.
GROUPS = ('sanity', 'classic', 'game', 'template')
# Observation element types: numpy dtype name -> (C type, buffer-protocol format).
OBS_DTYPES = {'uint8': ('unsigned char', 'B'), 'int8': ('signed char', 'b'), 'float32': ('float', 'f')}
# Option kinds -> (C type of the struct field, struct-module format). All fields are 4 bytes, so the
# C struct has no padding and Python's packing ('=' standard sizes) matches it byte for byte.
OPTION_TYPES = {'int': ('int32_t', 'i'), 'float': ('float', 'f'), 'bool': ('int32_t', 'i')}
INT32 = (-2 ** 31, 2 ** 31 - 1)
C_KEYWORDS = frozenset(['auto', 'break', 'case', 'char', 'const', 'continue', 'default', 'do', 'double', 'else',
                        'enum', 'extern', 'float', 'for', 'goto', 'if', 'inline', 'int', 'long', 'register',
                        'restrict', 'return', 'short', 'signed', 'sizeof', 'static', 'struct', 'switch', 'typedef',
                        'union', 'unsigned', 'void', 'volatile', 'while', 'cfg', 'env'])

TOP_KEYS = {'summary', 'group', 'agents', 'constants', 'options', 'checks', 'observation', 'action', 'keys', 'log',
            'progress', 'cell'}
OPTION_KEYS = {'default', 'min', 'max', 'help'}
OBSERVATION_KEYS = {'dtype', 'size', 'shape', 'low', 'high', 'fields', 'help'}
FIELD_KEYS = {'name', 'size', 'low', 'high', 'help'}
ACTION_KEYS = {'n', 'nvec', 'box', 'low', 'high', 'mixed', 'mask', 'builtin', 'help'}
CHECK_KEYS = {'require', 'message'}
LOG_KEYS = {'name', 'help'}  # and of [[progress]]
# The fields every env logs (ocean.h's Log) and the count the trainer adds to them: an env's own [[log]]
# fields sit beside these in one dict, so they cannot take these names.
LOG_RESERVED = ('episode_return', 'episode_length', 'score', 'perf', 'n', 'episodes')

# Where the Box is the only action form, a size below 1 leaves the env no action at all.
BOX_MESSAGE = '[action] box must be >= 1 (the Box is this env\'s only action form)'
# A mixed action always has its Box part.
MIXED_BOX_MESSAGE = '[action] box must be >= 1 (a mixed action always has its Box part)'


def camel(name: str) -> str:
    """'trash_pickup' -> 'TrashPickup': the C struct and Python class name of an env."""
    return ''.join(part[:1].upper() + part[1:] for part in name.split('_'))


# ---------------------------------------------------------------------------------------------
# The spec
# ---------------------------------------------------------------------------------------------

# One stretch of the observation row: (field name or '', size, low, high, help).
Segment = tuple[str, Expr, int | float, int | float, str]


@dataclass
class Option:
    name: str
    kind: str           # 'int', 'float' or 'bool'
    default: Value
    help: str
    min: Expr | None = None    # inclusive bounds; None only for bools
    max: Expr | None = None

    def bounds(self) -> tuple[Expr, Expr]:
        """(min, max) of an int or float option."""
        if self.min is None or self.max is None:
            raise SpecError(f'option {self.name} is a {self.kind}: it has no range')
        return self.min, self.max


@dataclass
class Spec:
    """A parsed spec.toml. `load(folder)` makes one; see docs/writing_envs.md for the format."""

    name: str
    folder: str
    summary: str
    group: str
    agents: Expr
    constants: dict[str, Value]
    options: dict[str, Option]          # in file order (= struct field order)
    checks: list[tuple[Expr, str]]      # (Expr, message)
    obs_dtype: str
    obs_shape: list[Expr]               # the row's shape (one entry unless `shape` is given)
    obs_segments: list[Segment]         # low/high along the row
    obs_help: str
    action_n: Expr | None = None        # Discrete(n) ...
    action_nvec: list[Expr] | None = None  # ... or MultiDiscrete(nvec) ...
    action_box: Expr | None = None      # ... or Box(low, high, (box,), float32), where box > 0
    action_low: float = -1.0
    action_high: float = 1.0
    action_mixed: bool = False          # both forms on every step: the discrete columns, then the Box's
    action_mask: bool = False
    action_builtin: bool = False        # a live row's action -1 hands its move to the built-in player (seats.h)
    action_help: str = ''
    struct_format: str = field(init=False, default='')
    # [keys], the web page's keyboard (docs/web.md): KeyboardEvent.key -> action (a number, or a list
    # for MultiDiscrete and Box rows); 'idle' and 'fps' are settings, not keys.
    keys: dict[str, Any] = field(default_factory=dict)
    # [[log]], the env's own per-episode statistics: (name, help), logged beside the standard fields.
    log_fields: list[tuple[str, str]] = field(default_factory=list)
    # [[progress]], the per-game milestone counters the trainer's [swarm] ranks games by (c_progress in C),
    # and `cell`, what the Go-Explore cell of a game's state means ('' = the env has no c_cell).
    progress_fields: list[tuple[str, str]] = field(default_factory=list)
    cell_help: str = ''

    def __post_init__(self) -> None:
        formats = [OPTION_TYPES[o.kind][1] for o in self.options.values()] or ['i']  # C has no empty struct
        self.struct_format = '=' + ''.join(formats)

    @property
    def env_name(self) -> str:
        return PREFIX + self.name

    @property
    def c_struct(self) -> str:
        return camel(self.name)

    # ---- values ----

    def defaults(self) -> dict[str, Value]:
        return {name: option.default for name, option in self.options.items()}

    def problem(self, values: Mapping[str, Value]) -> str | None:
        """The first broken range or check for a complete, typed `values`, as a message; None if all hold.

        The generated C function `ocean_spec_check` walks the same list in the same order and
        formats the same messages.
        """
        for option in self.options.values():
            if option.kind == 'bool':
                continue
            value = values[option.name]
            low, high = option.bounds()
            try:
                lo, hi = low(values), high(values)
            except OverflowError as e:
                return f'{option.name}: {e}'
            if not lo <= value <= hi:
                return _range_message(option, value, lo, hi)
        for expr, message in self.checks:
            try:
                ok = expr(values)
            except OverflowError as e:
                return f'{message} ({e})'
            if not ok:
                return _check_message(self, expr, message, values)
        if self.action_box is not None and self.box_only_or_mixed() and self.box_size(values) < 1:
            return _check_message(self, self.action_box, self.box_message(), values)
        return None

    def box_only_or_mixed(self) -> bool:
        """Whether the Box part must exist for every option set: a Box-only env's, or a mixed one's."""
        return not self.action_exprs() or self.action_mixed

    def box_message(self) -> str:
        return MIXED_BOX_MESSAGE if self.action_mixed else BOX_MESSAGE

    def pack(self, values: Mapping[str, Value]) -> bytes:
        """The option values as the bytes of the C `<Name>Config` struct."""
        if not self.options:
            return struct.pack(self.struct_format, 0)
        return struct.pack(self.struct_format, *(values[name] for name in self.options))

    def num_agents(self, values: Mapping[str, Value]) -> int:
        return int(self.agents(values))

    def obs_shape_of(self, values: Mapping[str, Value]) -> tuple[int, ...]:
        return tuple(int(size(values)) for size in self.obs_shape)

    def action_exprs(self) -> list[Expr]:
        """The discrete form's sizes as expressions: Discrete [n], MultiDiscrete nvec; [] for Box only."""
        if self.action_n is not None:
            return [self.action_n]
        return self.action_nvec or []

    def box_size(self, values: Mapping[str, Value]) -> int:
        """Elements of the Box action for `values`; 0 when the discrete form applies."""
        return max(0, int(self.action_box(values))) if self.action_box is not None else 0

    def action_dims(self, values: Mapping[str, Value]) -> list[int]:
        """Discrete: [n]; MultiDiscrete: nvec; Box: [] (see box_size); mixed: the discrete part's."""
        if self.box_size(values) and not self.action_mixed:
            return []
        return [int(n(values)) for n in self.action_exprs()]

    def discrete_size(self) -> int:
        """Columns of a mixed row's discrete part, which come before the Box's elements; 0 unless mixed."""
        return len(self.action_exprs()) if self.action_mixed else 0

    def action_size(self, values: Mapping[str, Value]) -> int:
        """Elements of one action row: the Box's size, 1 for Discrete, len(nvec) for MultiDiscrete, the
        discrete columns plus the Box's for mixed."""
        return self.discrete_size() + self.box_size(values) or len(self.action_exprs())

    def num_actions(self, values: Mapping[str, Value]) -> int:
        """Width of one action-mask row: n, or the sum of nvec (0 for Box actions, which have no mask)."""
        return sum(self.action_dims(values))


def range_why(option: Option) -> str:
    """Where a bound is an expression, say which: 'num_targets=50 is outside [1, 40] (max is 4 * (size - 1))'."""
    bounds = [f'{which} is {expr.text}' for which, expr in zip(('min', 'max'), option.bounds())
              if not expr.is_literal]
    return f' ({"; ".join(bounds)})' if bounds else ''


def _range_message(option: Option, value: Value, lo: Value, hi: Value) -> str:
    k = option.kind
    return f'{option.name}={fmt(value, k)} is outside [{fmt(lo, k)}, {fmt(hi, k)}]{range_why(option)}'


def _check_message(spec: Spec, expr: Expr, message: str, values: Mapping[str, Value]) -> str:
    got = ', '.join(f'{name}={fmt(values[name], spec.options[name].kind)}' for name in expr.names)
    return f'{message} (got {got})' if got else message


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------

def _expect_keys(table: object, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise SpecError(f'{where} must be a table, got {table!r}')
    unknown = set(table) - allowed
    if unknown:
        raise SpecError(f'{where}: unknown key(s) {", ".join(sorted(unknown))}; allowed: {", ".join(sorted(allowed))}')


def _identifier(name: str, where: str) -> None:
    if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name) or name in C_KEYWORDS:
        raise SpecError(f'{where}: {name!r} is not usable as a C identifier')


def _number(value: object, where: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(f'{where} must be a finite number, got {value!r}')
    return value


def load(folder: str) -> Spec:
    """Parse `folder/spec.toml` (the env's name is the folder's name)."""
    name = os.path.basename(os.path.normpath(folder))
    where = f'ocean/{name}/spec.toml'
    data = _read(folder, name, where)
    constants = _load_constants(data.get('constants', {}), where)
    kinds, options = _load_options(data.get('options', {}), constants, where)
    checks = _load_checks(data.get('checks', []), kinds, constants, where)
    obs = data['observation']
    dtype, shape, segments = _load_observation(obs, kinds, constants, where)
    action = data['action']
    action_fields = _load_action(action, kinds, constants, where)
    spec = Spec(name=name, folder=folder, summary=str(data['summary']), group=data['group'],
                agents=_int_expr(data['agents'], kinds, constants, f'{where} agents'), constants=constants,
                options=options, checks=checks, obs_dtype=dtype, obs_shape=shape, obs_segments=segments,
                obs_help=str(obs.get('help', '')), action_help=str(action.get('help', '')), **action_fields)
    spec.keys = _load_keys(data.get('keys', {}), f'{where} [keys]')
    spec.log_fields = _load_log(data.get('log', []), constants, f'{where} [[log]]')
    spec.progress_fields = _load_progress(data.get('progress', []), constants, f'{where} [[progress]]')
    cell = data.get('cell', '')
    if not isinstance(cell, str):
        raise SpecError(f'{where}: cell must be a string saying what a game\'s cell is (its c_cell), got {cell!r}')
    spec.cell_help = cell
    defaults = spec.defaults()
    problem = spec.problem(defaults)
    if problem:
        raise SpecError(f'{where}: the defaults break the spec\'s own rules: {problem}')
    if (spec.num_agents(defaults) < 1 or min(spec.obs_shape_of(defaults)) < 1
            or min((int(n(defaults)) for n in spec.action_exprs()), default=1) < 1):
        raise SpecError(f'{where}: with the defaults, agents, observation sizes and action counts must be >= 1')
    return spec


def _load_keys(raw: Any, where: str) -> dict[str, Any]:
    """[keys]: key name -> an action (number or list of numbers); `fps` a positive number."""
    if not isinstance(raw, dict):
        raise SpecError(f'{where} must be a table of key = action')
    for key, value in raw.items():
        if key == 'fps':
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 240:
                raise SpecError(f'{where}: fps must be a number in (0, 240], got {value!r}')
            continue
        parts = value if isinstance(value, list) else [value]
        if not parts or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in parts):
            raise SpecError(f'{where}: {key} must be an action (a number, or a list of numbers for MultiDiscrete '
                            f'and Box actions), got {value!r}')
    return dict(raw)


def _load_log(raw: Any, constants: Mapping[str, Value], where: str) -> list[tuple[str, str]]:
    """[[log]]: the env's extra per-episode fields, each a name (a C identifier, new among the log's
    fields) and a help text."""
    if not isinstance(raw, list):
        raise SpecError(f'{where} must be a list of tables {{name = "...", help = "..."}} (write [[log]] blocks)')
    fields: list[tuple[str, str]] = []
    for i, entry in enumerate(raw):
        here = f'{where} #{i + 1}'
        _expect_keys(entry, LOG_KEYS, here)
        if set(entry) != LOG_KEYS:
            raise SpecError(f'{here}: needs `name` (the key it is logged under) and `help` (what it measures)')
        name = entry['name']
        if not isinstance(name, str):
            raise SpecError(f'{here}: name must be a string, got {name!r}')
        _identifier(name, f'{here} name')
        if name in LOG_RESERVED:
            raise SpecError(f'{here}: {name!r} is a standard log field ({", ".join(LOG_RESERVED)}); '
                            'give the extra field a name of its own')
        if name in constants:  # a #define in spec.h: it would rewrite the Log member's name
            raise SpecError(f'{here}: {name!r} is also a [constants] name; rename one of them')
        if any(name == other for other, _ in fields):
            raise SpecError(f'{here}: {name!r} is declared twice; every log field needs its own name')
        fields.append((name, str(entry['help'])))
    return fields


def _load_progress(raw: Any, constants: Mapping[str, Value], where: str) -> list[tuple[str, str]]:
    """[[progress]]: the env's per-game milestone counters, each a name (a C identifier) and a help text."""
    if not isinstance(raw, list):
        raise SpecError(f'{where} must be a list of tables {{name = "...", help = "..."}} (write [[progress]] blocks)')
    fields: list[tuple[str, str]] = []
    for i, entry in enumerate(raw):
        here = f'{where} #{i + 1}'
        _expect_keys(entry, LOG_KEYS, here)
        if set(entry) != LOG_KEYS or not isinstance(entry['name'], str):
            raise SpecError(f'{here}: needs `name` (a string: what [swarm] stat names) and `help` (what it counts)')
        _identifier(entry['name'], f'{here} name')
        if any(entry['name'] == other for other, _ in fields):
            raise SpecError(f'{here}: {entry["name"]!r} is declared twice; every progress counter needs its own name')
        fields.append((entry['name'], str(entry['help'])))
    return fields


def _read(folder: str, name: str, where: str) -> dict[str, Any]:
    """The spec.toml's top-level table, with the required keys present and a known group."""
    path = os.path.join(folder, 'spec.toml')
    _identifier(name, where)
    try:
        with open(path, 'rb') as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise SpecError(f'{where} does not exist') from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f'{where} is not valid TOML: {e}') from None
    _expect_keys(data, TOP_KEYS, where)
    for key in ('summary', 'group', 'agents', 'observation', 'action'):
        if key not in data:
            raise SpecError(f'{where}: missing required key {key!r}')
    if data['group'] not in GROUPS:
        raise SpecError(f'{where}: group must be one of {", ".join(GROUPS)}, got {data["group"]!r}')
    return data


def _load_constants(raw: Any, where: str) -> dict[str, Value]:
    constants = {}
    for key, value in raw.items():
        _identifier(key, f'{where} [constants]')
        constants[key] = _number(value, f'{where} [constants] {key}')
    return constants


def _load_options(raw_options: Any, constants: Mapping[str, Value],
                  where: str) -> tuple[dict[str, str], dict[str, Option]]:
    """(name -> kind, name -> Option): every kind is known before any bound is parsed, since a bound may
    name any option."""
    _expect_keys(raw_options, set(raw_options), f'{where} [options]')
    kinds: dict[str, str] = {}
    for key, spec in raw_options.items():
        here = f'{where} [options] {key}'
        _identifier(key, here)
        if key in constants:
            raise SpecError(f'{here}: the name is also a constant')
        _expect_keys(spec, OPTION_KEYS, here)
        if 'default' not in spec or 'help' not in spec:
            raise SpecError(f'{here}: every option needs a default and a help text')
        default = spec['default']
        kind = ('bool' if isinstance(default, bool) else 'int' if isinstance(default, int)
                else 'float' if isinstance(default, float) else None)
        if kind is None:
            raise SpecError(f'{here}: default must be an int, a float (with a dot: 1.0) or a bool, got {default!r}')
        kinds[key] = kind
        if kind == 'int' and not INT32[0] <= default <= INT32[1]:
            raise SpecError(f'{here}: default {default} does not fit a 32-bit int')
    options = {}
    for key, spec in raw_options.items():
        here = f'{where} [options] {key}'
        kind = kinds[key]
        bounds = {}
        for which in ('min', 'max'):
            if kind == 'bool':
                if which in spec:
                    raise SpecError(f'{here}: a bool option has no {which}')
                continue
            if which not in spec:
                raise SpecError(f'{here}: every int or float option needs min and max (inclusive)')
            expr = Expr(spec[which], kinds, constants, f'{here} {which}')
            if kind == 'int' and expr.kind == 'float':
                raise SpecError(f'{here}: the {which} of an int option must be an int expression')
            bounds[which] = expr
        option = Option(key, kind, spec['default'], str(spec['help']), bounds.get('min'), bounds.get('max'))
        if kind == 'int':
            low, high = option.bounds()
            if low.is_literal and high.is_literal:
                lo, hi = low({}), high({})
                if lo < INT32[0] or hi > INT32[1]:
                    raise SpecError(f'{here}: the range [{lo}, {hi}] does not fit a 32-bit int')
        options[key] = option
    return kinds, options


def _load_checks(raw: Any, kinds: Mapping[str, str], constants: Mapping[str, Value],
                 where: str) -> list[tuple[Expr, str]]:
    checks = []
    for i, check in enumerate(raw):
        here = f'{where} [[checks]] #{i + 1}'
        _expect_keys(check, CHECK_KEYS, here)
        if set(check) != CHECK_KEYS:
            raise SpecError(f'{here}: needs `require` (an expression that must hold) and `message`')
        checks.append((Expr(check['require'], kinds, constants, here), str(check['message'])))
    return checks


def _int_expr(value: object, kinds: Mapping[str, str], constants: Mapping[str, Value], here: str) -> Expr:
    expr = Expr(value, kinds, constants, here)
    if expr.kind != 'int':
        raise SpecError(f'{here}: must be an int expression, got {value!r}')
    return expr


def _load_observation(obs: Any, kinds: Mapping[str, str], constants: Mapping[str, Value],
                      where: str) -> tuple[str, list[Expr], list[Segment]]:
    """(dtype, row shape, segments) of the [observation] table."""
    _expect_keys(obs, OBSERVATION_KEYS, f'{where} [observation]')
    dtype = obs.get('dtype')
    if dtype not in OBS_DTYPES:
        raise SpecError(f'{where} [observation] dtype must be one of {", ".join(OBS_DTYPES)}, got {dtype!r}')
    given = [key for key in ('size', 'shape', 'fields') if key in obs]
    if len(given) != 1:
        raise SpecError(f'{where} [observation]: give exactly one of size, shape or fields')
    segments: list[Segment] = []
    if 'fields' in obs:
        if 'low' in obs or 'high' in obs:
            raise SpecError(f'{where} [observation]: with fields, low and high belong to each field')
        for i, f in enumerate(obs['fields']):
            here = f'{where} [observation] fields[{i}]'
            _expect_keys(f, FIELD_KEYS, here)
            if not {'name', 'low', 'high'} <= set(f):
                raise SpecError(f'{here}: a field needs name, low and high (size defaults to 1)')
            segments.append((str(f['name']), _int_expr(f.get('size', 1), kinds, constants, here),
                             _number(f['low'], f'{here} low'), _number(f['high'], f'{here} high'),
                             str(f.get('help', ''))))
        shape = [_sum_expr([s[1] for s in segments], kinds, constants, f'{where} [observation] fields')]
    else:
        for key in ('low', 'high'):
            if key not in obs:
                raise SpecError(f'{where} [observation]: missing {key}')
        sizes = [obs['size']] if 'size' in obs else list(obs['shape'])
        if not sizes:
            raise SpecError(f'{where} [observation] shape must not be empty')
        shape = [_int_expr(s, kinds, constants, f'{where} [observation] shape') for s in sizes]
        total = _product_expr(shape, kinds, constants, f'{where} [observation]')
        segments.append(('', total, _number(obs['low'], f'{where} [observation] low'),
                         _number(obs['high'], f'{where} [observation] high'), ''))
    return dtype, shape, segments


def _load_action(action: Any, kinds: Mapping[str, str], constants: Mapping[str, Value],
                 where: str) -> dict[str, Any]:
    """The [action] table as Spec fields: n or nvec (the discrete form), box with low and high (the
    continuous form), or both, when an option picks one: the Box applies where `box` is > 0. With
    `mixed = true`, both forms make up every action (the discrete columns, then the Box's elements)."""
    here = f'{where} [action]'
    _expect_keys(action, ACTION_KEYS, here)
    if 'n' in action and 'nvec' in action:
        raise SpecError(f'{here}: give n (Discrete) or nvec (MultiDiscrete), not both')
    if not {'n', 'nvec', 'box'} & set(action):
        raise SpecError(f'{here}: give n (Discrete), nvec (MultiDiscrete) or box (a float Box of that many '
                        'elements, with low and high)')
    out: dict[str, Any] = {}
    if 'n' in action:
        out['action_n'] = _int_expr(action['n'], kinds, constants, f'{here} n')
    if 'nvec' in action:
        out['action_nvec'] = [_int_expr(n, kinds, constants, f'{here} nvec') for n in action['nvec']]
        if not out['action_nvec']:
            raise SpecError(f'{here} nvec must not be empty')
    if 'box' in action:
        out['action_box'] = _int_expr(action['box'], kinds, constants, f'{here} box')
        if 'low' not in action or 'high' not in action:
            raise SpecError(f'{here}: a box needs low and high (the bounds of every element, e.g. -1.0 and 1.0)')
        low, high = _number(action['low'], f'{here} low'), _number(action['high'], f'{here} high')
        if not low < high:
            raise SpecError(f'{here}: low must be below high, got low={low} high={high}')
        out['action_low'], out['action_high'] = float(low), float(high)
    elif 'low' in action or 'high' in action:
        raise SpecError(f'{here}: low and high bound a box; they mean nothing for n or nvec')
    mixed = action.get('mixed', False)
    if not isinstance(mixed, bool):
        raise SpecError(f'{here} mixed must be true or false')
    if mixed and not ({'n', 'nvec'} & set(action) and 'box' in action):
        raise SpecError(f'{here}: mixed = true joins a discrete part (n or nvec) and a box (with low and high) in '
                        'every action; give both')
    if mixed and (action.get('mask') or action.get('builtin')):
        raise SpecError(f'{here}: mask and builtin are not available with mixed = true; drop them, or make the '
                        'action discrete')
    out['action_mixed'] = mixed
    for key in ('mask', 'builtin'):
        value = action.get(key, False)
        if not isinstance(value, bool):
            raise SpecError(f'{here} {key} must be true or false')
        # with both forms, a built-in player moves in the discrete form only (where box is 0); a mask would
        # need a second layout of the mask buffer, so it stays discrete-only envs' feature
        if value and 'box' in action and (key == 'mask' or not {'n', 'nvec'} & set(action)):
            raise SpecError(f'{here}: {key} applies to discrete actions only; an env with a box has neither'
                            + (' (builtin is allowed where n or nvec gives a discrete form too)'
                               if key == 'builtin' else ''))
        out[f'action_{key}'] = value
    return out


def _sum_expr(parts: list[Expr], kinds: Mapping[str, str], constants: Mapping[str, Value], where: str) -> Expr:
    """The fields' sizes added up, literal ones folded: '6 + BO_ROWS * BO_COLS' rather than '(1) + ...'."""
    literal = sum(p({}) for p in parts if p.is_literal)
    others = [p.text if len(parts) == 1 else f'({p.text})' for p in parts if not p.is_literal]
    return Expr(' + '.join(([str(literal)] if literal or not others else []) + others), kinds, constants, where)


def _product_expr(parts: list[Expr], kinds: Mapping[str, str], constants: Mapping[str, Value], where: str) -> Expr:
    if len(parts) == 1:
        return parts[0]
    return Expr(' * '.join(f'({p.text})' for p in parts), kinds, constants, where)


def discover(root: str) -> dict[str, Spec]:
    """Every env under `root` (a folder holding one sub-folder per env, each with a spec.toml):
    name -> Spec, in catalogue order (group, then name)."""
    specs = [load(os.path.join(root, entry)) for entry in sorted(os.listdir(root))
             if os.path.isfile(os.path.join(root, entry, 'spec.toml'))]
    specs.sort(key=lambda s: (GROUPS.index(s.group), s.name))
    return {s.name: s for s in specs}
