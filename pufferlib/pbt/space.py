"""The space a population searches and how its members move in it: the [pbt] settings and their checks,
the hyperparameters (the config's `[sweep]` tables, env options included), the metric, a member's
perturbation, and the first members (drawn, or seeded from a finished sweep).
"""
from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pufferlib import config as configuration
from pufferlib import invocation, registry
from pufferlib.config import ConfigError
from pufferlib.pufferenv import PufferError
from pufferlib.sweep.ledger import Ledger as SweepLedger
from pufferlib.sweep.ledger import trials_of
from pufferlib.sweep.space import BUDGET_KEY, Param, Space, check_option_limits, parse_space, short


Printer = Callable[[str], object]
Record = dict[str, Any]

SETTINGS: dict[str, tuple[type, Callable[[Any], bool], str]] = {  # [pbt] key: (type, check, what it must be)
    'population': (int, lambda v: v >= 2, 'at least 2 (one member has no one to copy)'),
    'interval': (int, lambda v: v >= 1, 'a positive number of agent steps'),
    'fraction': (float, lambda v: 0 < v <= 0.5, 'in (0, 0.5]: the bottom and the top fractions must not overlap'),
    'resample': (float, lambda v: 0 <= v <= 1, 'a probability in [0, 1]'),
    'metric': (str, lambda v: True, 'an env statistic such as env/score'),
    'goal': (str, lambda v: v in ('maximize', 'minimize'), 'maximize or minimize'),
    'parallel': (int, lambda v: v >= 0, 'a whole number >= 0 (0 = as many members as the cores allow)'),
    'backend': (str, lambda v: v in ('local', 'ray'), 'local or ray'),
    'seed': (int, lambda v: 0 <= v < 2 ** 31, f'a whole number from 0 to {2 ** 31 - 1}'),
    'seed_from': (str, lambda v: True, 'a sweep directory'),
}
FACTORS = (0.8, 1.2)
# Sections that set the shapes of the weights members copy from each other: no member may differ there.
SHAPE_SECTIONS = ('policy', 'rnn')


class PBTError(PufferError, RuntimeError):
    """A population directory, its ledger or its rounds went wrong in a way the user must act on."""



def check_settings(config: Mapping[str, Any]) -> None:
    """Each [pbt] setting against its range, and the rounds against the run: one ConfigError naming the flag."""
    settings = config['pbt']
    for key, (_, fits, what) in SETTINGS.items():
        value = settings[key]
        if not fits(value):
            raise ConfigError(f'--pbt.{key.replace("_", "-")} {value!r}: must be {what}')
    total = config['train']['total_timesteps']
    if settings['interval'] >= total:
        raise ConfigError(f'--pbt.interval {settings["interval"]:,}: a round must be shorter than the run '
                          f'(train.total_timesteps {total:,}), or no member is ever copied; lower pbt.interval or '
                          'raise --train.total-timesteps')
    if settings['backend'] == 'ray':
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError('--pbt.backend ray needs ray: pip install "pufferlib[ray]"') from None


def population_space(config: Mapping[str, Any]) -> tuple[Space, list[str]]:
    """The keys PBT perturbs: the [sweep] tables (sweep.only applies) less train.total_timesteps (the run's
    length is PBT's own) and [policy]/[rnn] keys (members copy each other's weights, whose shapes those set);
    returns (the space, the names left out)."""
    space = parse_space(config)
    kept = [p for p in space.params if p.name != BUDGET_KEY and p.section not in SHAPE_SECTIONS]
    left_out = [p.name for p in space.params if p not in kept]
    if not kept:
        raise ConfigError(f'the [sweep] section names no key PBT can perturb (it leaves out {", ".join(left_out)}: '
                          'the run length is PBT\'s, and members copy weights whose shapes must agree); add a table '
                          'such as\n  [sweep.train.learning_rate]\n  distribution = "log"\n  min = 1e-4\n  max = 1e-1')
    return Space(kept), left_out


def known_metrics(env_name: str) -> list[str] | None:
    """The env statistics an Ocean env logs (`env/<field>`), from its spec; None for other envs, whose infos
    say what they log only once they run."""
    spec = registry.lookup(env_name).spec
    if spec is None:
        return None
    from pufferlib.ocean.spec import LOG_RESERVED
    return [f'env/{name}' for name in (*LOG_RESERVED, *(field for field, _ in spec.log_fields))]


def check_metric(metric: str, env_name: str) -> None:
    """An unknown `pbt.metric` is one error listing what the env logs (Ocean envs say so up front)."""
    if not metric:
        return
    known = known_metrics(env_name)
    if not metric.startswith('env/'):
        listed = f' ({env_name} logs {", ".join(known)})' if known else ''
        raise ConfigError(f'--pbt.metric {metric!r}: PBT ranks members by an env statistic, env/<name>{listed}')
    if known is not None and metric not in known:
        raise ConfigError(f'--pbt.metric {metric!r}: {env_name} logs no such statistic; it logs {", ".join(known)}')


def resolve(env_name: str, flags: Sequence[str] = (), config_file: str | None = None) -> tuple[dict, Space]:
    """The config of a new population (files, then flags) and its space, both checked."""
    config = configuration.load(env_name, flags, config_file=config_file)
    check_settings(config)
    check_metric(config['pbt']['metric'], env_name)
    space, left_out = population_space(config)
    if left_out:
        print(f'puffer pbt: leaving out {", ".join(left_out)} of the [sweep] space: the run length is PBT\'s, and '
              'members copy weights whose shapes must agree', file=sys.stderr)
    check_option_limits(space, env_name, registry.lookup(env_name).option_specs(), config.get('env', {}))
    return config, space



def perturb(space: Space, values: Mapping[str, Any], rng: np.random.Generator,
            resample: float) -> tuple[dict[str, int | float], dict[str, str]]:
    """New values from `values`: each key multiplied by 0.8 or 1.2, or (probability `resample`) drawn uniformly
    over its normalised range; always inside the range. Returns (values, how each key moved: 'x0.8', 'x1.2',
    'resample').

    The factor applies where it means "a bit more or less": a logit key near 1 (gamma, lambda) scales its
    distance to 1, so 0.99 becomes 0.988 or 0.992, not 1.19 clipped; a power-of-two key halves or doubles
    (x0.8 of 64 rounds back to 64); an integer key moves at least one step."""
    out: dict[str, int | float] = {}
    how: dict[str, str] = {}
    for p in space.params:
        current = values.get(p.name, p.value(p.centre))
        if rng.random() < resample:
            out[p.name], how[p.name] = p.value(rng.uniform(-1, 1)), 'resample'
            continue
        factor = FACTORS[int(rng.integers(2))]
        out[p.name], how[p.name] = _scaled(p, float(current), factor), f'x{factor:g}'
    return out, how


def _scaled(p: Param, value: float, factor: float) -> int | float:
    if p.distribution == 'pow2':
        moved = value * 2 if factor > 1 else value / 2
    elif p.distribution == 'logit' and value > 0.5:
        moved = 1 - (1 - value) * factor
    else:
        moved = value * factor
    moved = min(max(moved, p.low), p.high)
    if not p.integer:
        return float(moved)
    step = round(moved)
    if step == round(value) and p.low <= value + (1 if factor > 1 else -1) <= p.high:
        step = round(value) + (1 if factor > 1 else -1)
    return int(min(max(step, math.ceil(p.low)), math.floor(p.high)))


def first_members(config: Mapping[str, Any], space: Space, env_name: str) -> list[tuple[dict, str]]:
    """The first values of each member and where they come from: member 0 the configured values, the others
    drawn around them (normal, sigma 0.5 of the normalised range, as the sweep's random method draws); or,
    with pbt.seed_from, the best points of that sweep (the best first; perturbed copies of them when the
    sweep has fewer points than the population)."""
    settings = config['pbt']
    size, rng = settings['population'], np.random.default_rng([settings['seed'], 1])
    if settings['seed_from']:
        best = seeds_from_sweep(settings['seed_from'], env_name, space)
        members = [(values, origin) for values, origin in best[:size]]
        while len(members) < size:
            values, origin = best[len(members) % len(best)]
            members.append((perturb(space, values, rng, settings['resample'])[0], f'{origin}, perturbed'))
        return members
    members = [(space.values(space.centre), 'the configured values')]
    for _ in range(size - 1):
        point = np.clip(space.centre + rng.normal(0, 0.5, len(space)), -1, 1)
        members.append((space.values(point), 'drawn around the configured values'))
    return members


def seeds_from_sweep(path: str, env_name: str, space: Space) -> list[tuple[dict, str]]:
    """The finished trials of a sweep directory, best first (by that sweep's goal), as values of `space` (a key
    the sweep did not sweep takes its configured value; one outside the range is brought inside)."""
    toml_path = os.path.join(path, 'sweep.toml')
    if not os.path.isfile(toml_path):
        raise ConfigError(f'--pbt.seed-from {path}: not a sweep directory (no sweep.toml); pass one of '
                          'experiments/sweeps/')
    saved = configuration.read(toml_path)
    trained = saved.get('_meta', {}).get('env')
    if trained != env_name:
        raise ConfigError(f'--pbt.seed-from {path}: that sweep is of {trained}, not {env_name}')
    ledger = SweepLedger(os.path.join(path, 'trials.jsonl'))
    sign = 1.0 if saved.get('sweep', {}).get('goal', 'maximize') == 'maximize' else -1.0
    done = [(k, t['starts'][-1]['values'], t['end']['score']) for k, t in trials_of(ledger.read()).items()
            if t['end'] is not None and t['end']['status'] == 'ok']
    if not done:
        raise ConfigError(f'--pbt.seed-from {path}: the sweep has no finished trial yet; run it longer '
                          f'(`{invocation.command("sweep", "--resume", Path(path))}`) or leave pbt.seed_from empty')
    done.sort(key=lambda item: (-sign * item[2], item[0]))
    return [(space.values(space.point(values)), f'sweep trial {k} ({short(score)})') for k, values, score in done]


