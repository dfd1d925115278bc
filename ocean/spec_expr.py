"""The expression language of spec.toml: sizes, ranges and checks over option names and `[constants]`.

An expression is numbers, names, `+ - * / %`, parentheses, comparisons and `and`/`or`/`not`. It is
parsed once with `ast` (never eval'd); Python evaluates the tree (`Expr.__call__`) and the generator
prints the same tree as C (`Expr.c`), side by side in one class so that both compute the same thing.
Integer `/` and `%` follow C (truncate toward zero; a zero divisor gives 0, never a crash), integer
arithmetic is 64-bit on both sides, float arithmetic is double.

Standard library only, like every ocean/spec*.py module: setup.py loads them before pufferlib is installed.
"""
import ast
import math
from collections.abc import Mapping
from typing import NoReturn

INT64 = (-2 ** 63, 2 ** 63 - 1)

# An option's value, a constant, or what an expression evaluates to (a bool is an int to Python too).
Value = bool | int | float


class SpecError(Exception):
    """A spec.toml is malformed (a developer's error, reported with the file and the key)."""


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
