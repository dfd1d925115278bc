"""The one declaration of an Ocean env: `ocean/<name>/spec.toml`, read here by setup.py and by Python.

A spec gives every option (default, type, range, help), the observation and action spaces, the
agents per env instance and a few extras (action mask, catalogue group, the env's own episode-log
fields). From it:

- Python builds the env's spaces, validates options (names, types, ranges, checks) and packs them
  into the C struct's bytes (`Spec.pack`);
- setup.py generates, per env, `spec.h` (the `<Name>Config` struct, the same range checks in C, and
  the row sizes) and a three-line binding source that instantiates ocean/binding.h. Both go into the
  build's temp folder, never into the tree.

Sizes, ranges and checks may be expressions over option names and `[constants]`: numbers, names,
`+ - * / %`, parentheses, comparisons, `and`/`or`/`not`. They are parsed once with `ast` (never
eval'd); Python evaluates the tree and the generator prints the same tree as C, so both sides compute
the same thing. Integer `/` and `%` follow C (truncate toward zero; a zero divisor gives 0, never a
crash), integer arithmetic is 64-bit on both sides, float arithmetic is double.

This file imports only the standard library: setup.py loads it by path before pufferlib is installed.
The format is documented in docs/writing_envs.md.
"""
import ast
import math
import os
import re
import struct
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

PREFIX = 'puffer_'  # env 'pong' is 'puffer_pong' everywhere outside its folder
# Catalogue groups, in catalogue order. 'template' envs are built and tested but not listed.
GROUPS = ('sanity', 'classic', 'game', 'template')
# Observation element types: numpy dtype name -> (C type, buffer-protocol format).
OBS_DTYPES = {'uint8': ('unsigned char', 'B'), 'int8': ('signed char', 'b'), 'float32': ('float', 'f')}
# Option kinds -> (C type of the struct field, struct-module format). All fields are 4 bytes, so the
# C struct has no padding and Python's packing ('=' standard sizes) matches it byte for byte.
OPTION_TYPES = {'int': ('int32_t', 'i'), 'float': ('float', 'f'), 'bool': ('int32_t', 'i')}
INT32 = (-2 ** 31, 2 ** 31 - 1)
INT64 = (-2 ** 63, 2 ** 63 - 1)
C_KEYWORDS = frozenset(['auto', 'break', 'case', 'char', 'const', 'continue', 'default', 'do', 'double', 'else',
                        'enum', 'extern', 'float', 'for', 'goto', 'if', 'inline', 'int', 'long', 'register',
                        'restrict', 'return', 'short', 'signed', 'sizeof', 'static', 'struct', 'switch', 'typedef',
                        'union', 'unsigned', 'void', 'volatile', 'while', 'cfg', 'env'])

TOP_KEYS = {'summary', 'group', 'agents', 'constants', 'options', 'checks', 'observation', 'action', 'keys', 'log'}
OPTION_KEYS = {'default', 'min', 'max', 'help'}
OBSERVATION_KEYS = {'dtype', 'size', 'shape', 'low', 'high', 'fields', 'help'}
FIELD_KEYS = {'name', 'size', 'low', 'high', 'help'}
ACTION_KEYS = {'n', 'nvec', 'box', 'low', 'high', 'mask', 'builtin', 'help'}
CHECK_KEYS = {'require', 'message'}
LOG_KEYS = {'name', 'help'}
# The fields every env logs (ocean.h's Log) and the count the trainer adds to them: an env's own [[log]]
# fields sit beside these in one dict, so they cannot take these names.
LOG_RESERVED = ('episode_return', 'episode_length', 'score', 'perf', 'n', 'episodes')

# Where the Box is the only action form, a size below 1 leaves the env no action at all.
BOX_MESSAGE = '[action] box must be >= 1 (the Box is this env\'s only action form)'

# An option's value, a constant, or what an expression evaluates to (a bool is an int to Python too).
Value = bool | int | float


class SpecError(Exception):
    """A spec.toml is malformed (a developer's error, reported with the file and the key)."""


def camel(name: str) -> str:
    """'trash_pickup' -> 'TrashPickup': the C struct and Python class name of an env."""
    return ''.join(part[:1].upper() + part[1:] for part in name.split('_'))


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------

_ARITH = {ast.Add: '+', ast.Sub: '-', ast.Mult: '*', ast.Div: '/', ast.Mod: '%'}
_COMPARE = {ast.Lt: '<', ast.LtE: '<=', ast.Gt: '>', ast.GtE: '>=', ast.Eq: '==', ast.NotEq: '!='}


def _c_div(a: Value, b: Value) -> Value:
    if isinstance(a, float) or isinstance(b, float):
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_mod(a: Value, b: Value) -> Value:
    return 0 if b == 0 else a - b * _c_div(a, b)


class Expr:
    """An expression over option names and constants: evaluated in Python, printed as C.

    `kind` is 'int', 'float' or 'bool' (the type C gives the result); `names` are the option names
    it reads, in order of first use (error messages show their values).
    """

    def __init__(self, text: object, kinds: Mapping[str, str], constants: Mapping[str, Value], where: str) -> None:
        self.text = str(text)
        self.where = where
        self._kinds = kinds          # option name -> kind
        self._constants = constants  # constant name -> value
        try:
            tree = ast.parse(self.text.strip(), mode='eval').body
        except SyntaxError as e:
            raise SpecError(f'{where}: cannot parse expression {self.text!r}: {e.msg}') from None
        self._tree = tree
        self.kind = self._infer(tree)
        names = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in kinds),
                       key=lambda n: n.col_offset)
        self.names = list(dict.fromkeys(n.id for n in names))

    @property
    def is_literal(self) -> bool:
        return isinstance(self._tree, ast.Constant) or (
            isinstance(self._tree, ast.UnaryOp) and isinstance(self._tree.operand, ast.Constant))

    def describe(self) -> str:
        """The text, with the value where it uses only constants: 'MEM_MAX = 64'."""
        if self.is_literal or self.names:
            return self.text
        return f'{self.text} = {fmt(self({}), self.kind)}'

    def _fail(self, what: str) -> NoReturn:
        raise SpecError(f'{self.where}: {what} in expression {self.text!r} (allowed: numbers, option and '
                        'constant names, + - * / %, parentheses, comparisons, and/or/not)')

    def _infer(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return 'bool'
            if isinstance(node.value, int):
                return 'int'
            if isinstance(node.value, float) and math.isfinite(node.value):
                return 'float'
            self._fail(f'the value {node.value!r}')
        if isinstance(node, ast.Name):
            if node.id in self._kinds:
                return self._kinds[node.id]
            if node.id in self._constants:
                return 'float' if isinstance(self._constants[node.id], float) else 'int'
            self._fail(f'unknown name {node.id!r}')
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            kind = self._infer(node.operand)
            return 'int' if kind == 'bool' else kind
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self._infer(node.operand)
            return 'bool'
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            kinds = {self._infer(node.left), self._infer(node.right)}
            if isinstance(node.op, ast.Mod) and 'float' in kinds:
                self._fail('% on a float')
            return 'float' if 'float' in kinds else 'int'
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            for operand in [node.left, *node.comparators]:
                self._infer(operand)
            return 'bool'
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                self._infer(value)
            return 'bool'
        self._fail(f'{type(node).__name__}')

    # ---- Python ----

    def __call__(self, values: Mapping[str, Value]) -> Value:
        """The value for `values` (option name -> value); an int result outside 64 bits raises OverflowError."""
        return self._eval(self._tree, values)

    def _eval(self, node: ast.expr, values: Mapping[str, Value]) -> Value:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):  # bools are ints
            return node.value
        if isinstance(node, ast.Name):
            value = values[node.id] if node.id in self._kinds else self._constants[node.id]
            return float(value) if isinstance(value, float) else int(value)
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, values)
            if isinstance(node.op, ast.Not):
                return not value
            return self._int64(-value if isinstance(node.op, ast.USub) else +value)
        if isinstance(node, ast.BinOp):
            a, b = self._eval(node.left, values), self._eval(node.right, values)
            if isinstance(a, float) or isinstance(b, float):
                a, b = float(a), float(b)
            op = type(node.op)
            result = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                      ast.Div: lambda: _c_div(a, b), ast.Mod: lambda: _c_mod(a, b)}[op]()
            return self._int64(result)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, values)
            for cmp, comparator in zip(node.ops, node.comparators):
                right = self._eval(comparator, values)
                ok = {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right,
                      ast.GtE: left >= right, ast.Eq: left == right, ast.NotEq: left != right}[type(cmp)]
                if not ok:
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            results = (bool(self._eval(v, values)) for v in node.values)
            return all(results) if isinstance(node.op, ast.And) else any(results)
        raise AssertionError(node)  # _infer admitted only the nodes above

    def _int64(self, value: Value) -> Value:
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            raise OverflowError(f'{self.text} overflows 64 bits')
        return value

    # ---- C ----

    def c(self, config: str = 'c') -> str:
        """The expression as C, reading options from the struct pointer `config`."""
        return self._c(self._tree, config)

    def _c(self, node: ast.expr, config: str) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            if isinstance(node.value, bool):
                return '1LL' if node.value else '0LL'
            return f'{node.value}LL' if isinstance(node.value, int) else repr(float(node.value))
        if isinstance(node, ast.Name):
            if node.id in self._kinds:
                cast = 'double' if self._kinds[node.id] == 'float' else 'long long'
                return f'(({cast}){config}->{node.id})'
            return f'(({"double" if isinstance(self._constants[node.id], float) else "long long"}){node.id})'
        if isinstance(node, ast.UnaryOp):
            op = {ast.USub: '-', ast.UAdd: '+', ast.Not: '!'}[type(node.op)]
            return f'({op}{self._c(node.operand, config)})'
        if isinstance(node, ast.BinOp):
            a, b = self._c(node.left, config), self._c(node.right, config)
            if isinstance(node.op, ast.Div):
                return f'ocean_spec_div({a}, {b})' if self._infer(node) == 'int' else f'({a} / {b})'
            if isinstance(node.op, ast.Mod):
                return f'ocean_spec_mod({a}, {b})'
            return f'({a} {_ARITH[type(node.op)]} {b})'
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            parts = [f'({self._c(operands[i], config)} {_COMPARE[type(op)]} {self._c(operands[i + 1], config)})'
                     for i, op in enumerate(node.ops)]
            return '(' + ' && '.join(parts) + ')'
        if isinstance(node, ast.BoolOp):
            joiner = ' && ' if isinstance(node.op, ast.And) else ' || '
            return '(' + joiner.join(f'({self._c(v, config)} != 0)' for v in node.values) + ')'
        raise AssertionError(node)



def fmt(value: Value, kind: str) -> str:
    """A value as both sides print it in messages: int and bool options as %lld, floats as %g."""
    return f'{float(value):g}' if kind == 'float' else str(int(value))


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
    action_mask: bool = False
    action_builtin: bool = False        # a live row's action -1 hands its move to the built-in player (seats.h)
    action_help: str = ''
    struct_format: str = field(init=False, default='')
    # [keys], the web page's keyboard (docs/web.md): KeyboardEvent.key -> action (a number, or a list
    # for MultiDiscrete and Box rows); 'idle' and 'fps' are settings, not keys.
    keys: dict[str, Any] = field(default_factory=dict)
    # [[log]], the env's own per-episode statistics: (name, help), logged beside the standard fields.
    log_fields: list[tuple[str, str]] = field(default_factory=list)

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
        if self.action_box is not None and not self.action_exprs() and self.box_size(values) < 1:
            return _check_message(self, self.action_box, BOX_MESSAGE, values)
        return None

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
        """Discrete: [n]; MultiDiscrete: nvec; Box: [] (see box_size)."""
        if self.box_size(values):
            return []
        return [int(n(values)) for n in self.action_exprs()]

    def action_size(self, values: Mapping[str, Value]) -> int:
        """Elements of one action row: the Box's size, 1 for Discrete, len(nvec) for MultiDiscrete."""
        return self.box_size(values) or len(self.action_exprs())

    def num_actions(self, values: Mapping[str, Value]) -> int:
        """Width of one action-mask row: n, or the sum of nvec (0 for Box actions, which have no mask)."""
        return sum(self.action_dims(values))

    # ---- C ----

    def c_header(self) -> str:
        return _c_header(self)

    def c_binding(self) -> str:
        """The per-env translation unit: the generic binding instantiated for this env."""
        return (f'/* Generated by setup.py: the generic Ocean binding (ocean/binding.h) for '
                f'ocean/{self.name}. Do not edit. */\n'
                f'#include "spec.h"\n#include "{self.name}.h"\n#include "binding.h"\n')


def _range_why(option: Option) -> str:
    """Where a bound is an expression, say which: 'num_targets=50 is outside [1, 40] (max is 4 * (size - 1))'."""
    bounds = [f'{which} is {expr.text}' for which, expr in zip(('min', 'max'), option.bounds())
              if not expr.is_literal]
    return f' ({"; ".join(bounds)})' if bounds else ''


def _range_message(option: Option, value: Value, lo: Value, hi: Value) -> str:
    k = option.kind
    return f'{option.name}={fmt(value, k)} is outside [{fmt(lo, k)}, {fmt(hi, k)}]{_range_why(option)}'


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
    continuous form), or both, when an option picks one: the Box applies where `box` is > 0."""
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


# ---------------------------------------------------------------------------------------------
# The generated C header
# ---------------------------------------------------------------------------------------------

def _c_string(text: str) -> str:
    return '"' + text.replace('\\', '\\\\').replace('"', '\\"').replace('%', '%%') + '"'


def _c_value_format(kind: str) -> tuple[str, str]:
    return ('%lld', '(long long)') if kind in ('int', 'bool') else ('%g', '(double)')


def _c_header(spec: Spec) -> str:
    config = f'{spec.c_struct}Config'
    ctype, fmt_char = OBS_DTYPES[spec.obs_dtype]
    out = [f'/* Generated by setup.py from ocean/{spec.name}/spec.toml: edit the spec, not this file. */',
           '#ifndef OCEAN_SPEC_H', '#define OCEAN_SPEC_H', '', '#include <stdint.h>', '#include <stdio.h>', '',
           f'#define OCEAN_ENV_NAME "{spec.name}"',
           f'#define OCEAN_ENV {spec.c_struct}',
           f'#define OCEAN_CONFIG {config}',
           f'#define OCEAN_OBS_T {ctype}',
           f'#define OCEAN_OBS_FORMAT "{fmt_char}"',
           f'#define OCEAN_ACTION_MASK {int(spec.action_mask)}',
           '/* the bounds of every element of a Box action (unused by envs with discrete actions only) */',
           f'#define OCEAN_ACTION_LOW ({spec.action_low!r}f)',
           f'#define OCEAN_ACTION_HIGH ({spec.action_high!r}f)', '']
    if spec.log_fields:
        out.append('/* [[log]]: the env\'s own per-episode fields, which ocean.h puts into Log between perf and n.')
        out.append(' * Log is declared by ocean.h, so this file must come first (the generated sources include it')
        out.append(' * first; an env header includes it after ocean.h only for its own readers). */')
        out.append('#ifdef OCEAN_H')
        out.append(f'#error "spec.h of {spec.name} declares [[log]] fields: include it before ocean.h"')
        out.append('#endif')
        fields = ' '.join(f'float {name};' for name, _ in spec.log_fields)
        out.append(f'#define OCEAN_LOG_EXTRA {fields}')
        out.append(f'#define OCEAN_LOG_EXTRA_NAMES {" ".join(_c_string(name) + "," for name, _ in spec.log_fields)}')
        out.append('')
    for key, constant in spec.constants.items():
        out.append(f'#define {key} {repr(float(constant)) + "f" if isinstance(constant, float) else constant}')
    if spec.constants:
        out.append('')
    out.append(f'/* The options of puffer_{spec.name}; Python packs them (ocean.spec.Spec.pack), the binding copies')
    out.append(' * them into every env instance\'s `cfg` field. */')
    out.append(f'typedef struct {config} {{')
    for option in spec.options.values():
        rng = ''
        if option.kind != 'bool':
            low, high = option.bounds()
            rng = f' [{low.describe()}, {high.describe()}]'
        help_text = option.help.replace('*/', '* /')
        out.append(f'    {OPTION_TYPES[option.kind][0]} {option.name};  /* {option.kind}{rng}: {help_text} */')
    if not spec.options:
        out.append('    int32_t unused;  /* no options: C has no empty struct */')
    out.append(f'}} {config};')
    out.append(f'_Static_assert(sizeof({config}) == {struct.calcsize(spec.struct_format)}, '
               '"options are 4-byte fields with no padding");')
    out.append('')
    out.append('static inline long long ocean_spec_div(long long a, long long b) { return b ? a / b : 0; }')
    out.append('static inline long long ocean_spec_mod(long long a, long long b) { return b ? a % b : 0; }')
    out.append('')
    obs_total = ' * '.join(f'({s.c()})' for s in spec.obs_shape)
    dims = spec.action_exprs()
    box = '0' if spec.action_box is None else f'({spec.action_box.c()}) > 0 ? ({spec.action_box.c()}) : 0'
    lines = [('num_agents', 'agents (rows) per env instance', spec.agents.c()),
             ('obs_size', 'observation elements per row', obs_total),
             ('box_size', 'elements of a Box action row (float32); 0 when the actions are discrete (int32)', box),
             ('act_size', 'action elements per row',
              f'ocean_spec_box_size(c) > 0 ? ocean_spec_box_size(c) : {len(dims)}'),
             ('num_actions', 'width of one action-mask row (n, or the sum of nvec; 0 for a Box)',
              f'ocean_spec_box_size(c) > 0 ? 0 : {" + ".join(f"({d.c()})" for d in dims) or "0"}')]
    for name, doc, body in lines:
        out.append(f'/* {doc} */')
        out.append(f'static inline long long ocean_spec_{name}(const {config} *c) {{ (void)c; return {body}; }}')
    out.append('')
    out.append('/* 0 when every range and check of the spec holds, else -1 with the first problem in msg (the same')
    out.append(' * text Python reports): the binding runs it on whatever bytes it is handed. */')
    out.append(f'static int ocean_spec_check(const {config} *c, char *msg, size_t cap) {{')
    out.append('    (void)c; (void)msg; (void)cap;')
    for option in spec.options.values():
        if option.kind == 'bool':
            continue
        vfmt, cast = _c_value_format(option.kind)
        lo, hi = (bound.c() for bound in option.bounds())
        value = f'({cast}c->{option.name})'
        message = (_c_string(f'{option.name}=') + f' "{vfmt} is outside [{vfmt}, {vfmt}]" '
                   + _c_string(_range_why(option)))
        out.append(f'    if (!({lo} <= {value} && {value} <= {hi})) {{')
        out.append(f'        snprintf(msg, cap, {message}, {value}, {cast}({lo}), {cast}({hi}));')
        out.append('        return -1;')
        out.append('    }')
    for expr, message in spec.checks:
        names = expr.names
        text = _c_string(message)
        if names:
            parts = ', '.join(f'{n}={_c_value_format(spec.options[n].kind)[0]}' for n in names)
            text += f' " (got {parts})"'
            args = ''.join(f', {_c_value_format(spec.options[n].kind)[1]}c->{n}' for n in names)
        else:
            args = ''
        out.append(f'    if (!({expr.c()})) {{')
        out.append(f'        snprintf(msg, cap, {text}{args});')
        out.append('        return -1;')
        out.append('    }')
    if spec.action_box is not None and not dims:
        names = spec.action_box.names
        text = _c_string(BOX_MESSAGE)
        if names:
            text += ' " (got ' + ', '.join(f'{n}={_c_value_format(spec.options[n].kind)[0]}' for n in names) + ')"'
        args = ''.join(f', {_c_value_format(spec.options[n].kind)[1]}c->{n}' for n in names)
        out.append('    if (ocean_spec_box_size(c) < 1) {')
        out.append(f'        snprintf(msg, cap, {text}{args});')
        out.append('        return -1;')
        out.append('    }')
    out.append('    return 0;')
    out.append('}')
    out.append('')
    out.append('#endif')
    return '\n'.join(out) + '\n'
