"""The search space: the `[sweep.<section>.<key>]` tables of a config, as points in [-1, 1]^n.

Each swept key has a distribution, min and max; its configured value is the search centre. Values are
normalised to [-1, 1] in their own space: log (learning rates), logit (gamma, lambda), linear, int, pow2
(sizes). A bad table raises one ConfigError naming the key.
"""
from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from pufferlib.config import ConfigError

DISTRIBUTIONS = ('log', 'logit', 'linear', 'int', 'pow2')
SWEPT_SECTIONS = ('train', 'env', 'policy', 'rnn', 'vec')
SPEC_FIELDS = ('distribution', 'min', 'max')
BUDGET_KEY = 'train.total_timesteps'


class Param:
    """One swept key: its distribution, bounds and centre; maps values to [-1, 1] and back."""

    def __init__(self, name: str, distribution: str, low: float, high: float, centre: float, integer: bool):
        self.name, self.distribution, self.low, self.high = name, distribution, low, high
        self.integer = integer or distribution in ('int', 'pow2')
        self.section, self.key = name.split('.', 1)
        self._lo, self._hi = self._forward(low), self._forward(high)
        self.centre = self.normalize(centre)
        # The transform's round trip leaves float noise (0.015 came back as 0.015000000000000003): the
        # centre and the ends map back to the configured numbers exactly, so the defaults trial runs the
        # defaults and best.toml does not list a default as changed.
        self._exact = {self.centre: centre, -1.0: low, 1.0: high}

    def _forward(self, value: float) -> float:
        if self.distribution in ('log', 'pow2'):
            return math.log2(value)
        if self.distribution == 'logit':
            return math.log(value / (1 - value))
        return float(value)

    def _inverse(self, u: float) -> float:
        if self.distribution == 'pow2':
            return 2 ** round(u)
        if self.distribution == 'log':
            return 2 ** u
        if self.distribution == 'logit':
            return 1 / (1 + math.exp(-u))
        return u

    def normalize(self, value: float) -> float:
        if self._hi == self._lo:
            return 0.0
        value = min(max(value, self.low), self.high)
        return 2 * (self._forward(value) - self._lo) / (self._hi - self._lo) - 1

    def value(self, z: float) -> int | float:
        """The config value at normalised coordinate z (clipped to [-1, 1])."""
        z = min(max(float(z), -1.0), 1.0)
        if z in self._exact:
            value = self._exact[z]
            return int(round(value)) if self.integer else float(value)
        t = (z + 1) / 2
        value = self._inverse(self._lo + t * (self._hi - self._lo))
        value = min(max(value, self.low), self.high)  # rounding and exp never leave the bounds
        return int(round(value)) if self.integer else float(value)


class Space:
    """The swept keys, in a fixed order; points are arrays of normalised coordinates."""

    def __init__(self, params: Iterable[Param]):
        self.params = list(params)
        self.names = [p.name for p in self.params]
        self.centre = np.array([p.centre for p in self.params])
        self.budget_index = self.names.index(BUDGET_KEY) if BUDGET_KEY in self.names else None

    def __len__(self) -> int:
        return len(self.params)

    def values(self, x: Iterable[float]) -> dict[str, int | float]:
        """{'train.learning_rate': 0.003, ...} at point x."""
        return {p.name: p.value(z) for p, z in zip(self.params, x)}

    def point(self, values: Mapping[str, float]) -> np.ndarray:
        """The point of a trial's values. A key it lacks was not swept when it ran (a sweep resumed with a
        wider sweep.only): it ran at the configured value, the centre."""
        return np.array([p.normalize(values[p.name]) if p.name in values else p.centre for p in self.params])

    def unswept(self, values: Mapping[str, float]) -> list[str]:
        """The swept keys a trial's values lack (see `point`)."""
        return [name for name in self.names if name not in values]

    def apply(self, config: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of `config` with the swept values set."""
        out = {section: dict(table) if isinstance(table, dict) else table for section, table in config.items()}
        for name, value in values.items():
            section, key = name.split('.', 1)
            out[section][key] = value
        return out


def parse_space(config: Mapping[str, Any]) -> Space:
    """The search space of a resolved config; a bad [sweep] table raises one ConfigError naming the key."""
    sweep = config['sweep']
    only = [name.strip() for name in sweep.get('only', '').split(',') if name.strip()]
    params = []
    for section, table in sweep.items():
        if not isinstance(table, dict):
            continue
        if section not in SWEPT_SECTIONS:
            raise ConfigError(f'[sweep.{section}]: only {", ".join(SWEPT_SECTIONS)} keys can be swept')
        for key, spec in table.items():
            name = f'{section}.{key}'
            if only and name not in only:
                continue
            params.append(_parse_param(name, spec, config[section]))
    for name in only:
        if name not in [p.name for p in params]:
            raise ConfigError(f'sweep.only names {name!r}, which has no [sweep.{name}] table; '
                              f'swept keys: {", ".join(_spec_names(sweep)) or "none"}')
    if not params:
        raise ConfigError('the [sweep] section has no keys to sweep: add a table such as\n'
                          '  [sweep.train.learning_rate]\n  distribution = "log"\n  min = 1e-4\n  max = 1e-1')
    return Space(params)


def check_option_limits(space: Space, env_name: str, options: Mapping[str, Any], env: Mapping[str, Any]) -> None:
    """A swept env option's range must lie within the option's own limits (`options`: name -> the Option of
    the env's spec.toml, with min and max expressions; `env`: the configured [env] values), or one
    ConfigError naming the option, the range and the limits. A limit that reads other options is taken at
    their configured values, or, where they are swept too, at the loosest corner of their ranges: only a
    range that no trial could run is refused."""
    swept = {p.key: p for p in space.params if p.section == 'env'}
    base = {name: env.get(name, option.default) for name, option in options.items()}
    for key, param in swept.items():
        option = options.get(key)
        if option is None or option.min is None or option.max is None:  # not declared, or a bool
            continue
        reads = [n for n in dict.fromkeys([*option.min.names, *option.max.names]) if n != key]
        moving = [n for n in reads if n in swept]
        lows, highs = [], []
        for corner in itertools.product(*[(swept[n].low, swept[n].high) for n in moving]):
            values = {**base, **dict(zip(moving, corner))}
            lows.append(option.min(values))
            highs.append(option.max(values))
        lo, hi = min(lows), max(highs)
        if lo <= param.low and param.high <= hi:
            continue
        limits = f'[{_limit(option.min, lo)}, {_limit(option.max, hi)}]'
        at = ', '.join(f'{n} = {base[n]!r}' for n in reads if n not in swept)
        raise ConfigError(f'[sweep.env.{key}]: the range [{param.low!r}, {param.high!r}] lies outside the limits '
                          f'of {env_name}\'s option {key}, {limits}' + (f' with {at}' if at else '')
                          + ' (its spec.toml); narrow the range to fit them')


def _limit(expr: Any, value: float) -> str:
    return f'{value:g}' if expr.is_literal else f'{expr.text} = {value:g}'


def _spec_names(sweep: Mapping[str, Any]) -> list[str]:
    return [f'{section}.{key}' for section, table in sweep.items() if isinstance(table, dict) for key in table]


def _parse_param(name: str, spec: Any, section_values: Mapping[str, Any]) -> Param:
    where = f'[sweep.{name}]'
    section, key = name.split('.', 1)
    if not isinstance(spec, dict):
        raise ConfigError(f'{where} must be a table with distribution, min and max, got {spec!r}')
    if key not in section_values:
        close = difflib.get_close_matches(key, list(section_values), n=3, cutoff=0.6)
        hint = f' (did you mean {", ".join(close)}?)' if close else ''
        raise ConfigError(f'{where}: [{section}] has no key {key!r}{hint}; a swept key needs a configured '
                          'value, which is the centre of its search')
    unknown = [field for field in spec if field not in SPEC_FIELDS]
    if unknown:
        raise ConfigError(f'{where}: unknown field {unknown[0]!r}; a swept key has distribution, min and max '
                          f'(its centre is the configured value {section}.{key} = {section_values[key]!r})')
    missing = [field for field in SPEC_FIELDS if field not in spec]
    if missing:
        raise ConfigError(f'{where} needs {", ".join(missing)} (distribution is one of {", ".join(DISTRIBUTIONS)})')
    distribution, low, high = spec['distribution'], spec['min'], spec['max']
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(f'{where}: distribution must be one of {", ".join(DISTRIBUTIONS)}, got {distribution!r}')
    for field, bound in (('min', low), ('max', high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
            raise ConfigError(f'{where}: {field} must be a finite number, got {bound!r}')
    if low > high:
        raise ConfigError(f'{where}: min {low!r} is greater than max {high!r}')
    if distribution in ('log', 'pow2') and low <= 0:
        raise ConfigError(f'{where}: a {distribution} distribution needs min > 0, got {low!r}')
    if distribution == 'logit' and not (low > 0 and high < 1):
        raise ConfigError(f'{where}: a logit distribution needs 0 < min <= max < 1, got [{low!r}, {high!r}]')
    centre = section_values[key]
    if isinstance(centre, bool) or not isinstance(centre, (int, float)):
        raise ConfigError(f'{where}: {section}.{key} = {centre!r} is not a number, so it cannot be swept')
    if not low <= centre <= high:
        raise ConfigError(f'{where}: the configured value {section}.{key} = {centre!r} (the search centre) lies '
                          f'outside [{low!r}, {high!r}]; widen the range or change the value')
    return Param(name, distribution, low, high, centre, isinstance(centre, int))


def short(value: Any) -> str:
    """A swept value as the trial lines and the report table show it: floats to four digits."""
    return f'{value:.4g}' if isinstance(value, float) else str(value)
