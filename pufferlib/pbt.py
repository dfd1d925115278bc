"""Population-based training (`puffer pbt ENV`): a population of runs trained side by side in rounds; after
each round the worst copy the best and perturb their hyperparameters.

    puffer pbt puffer_breakout --pbt.population 8 --pbt.interval 2000000    # rounds of 2M steps per member
    puffer pbt --resume experiments/pbt/puffer_breakout-20261130-101500      # after Ctrl-C, SIGKILL, reboot
    puffer pbt --report experiments/pbt/puffer_breakout-20261130-101500      # table + pbt.png

Each member is an ordinary run directory (`members/member-03/`), trained `pbt.interval` agent steps a round
by `pufferlib.train` in a process of its own, the way a sweep's trials are (pufferlib/sweep/trials.py), on
this machine or as Ray tasks (pufferlib/backend.py). The next round resumes it from its checkpoint, so the
learning-rate schedule spans the whole run (train.total_timesteps), as in `puffer train`.

After a round, truncation selection on `pbt.metric` (the member's mean over the second half of the round):
the bottom `pbt.fraction` (and any member whose round failed) take the checkpoint of a top member chosen
uniformly (weights, optimizer moments, step) and its hyperparameters, each key then multiplied by 0.8 or
1.2, or with probability `pbt.resample` drawn afresh from the key's range. The keys and ranges are the
config's `[sweep]` tables (pufferlib/sweep/space.py), env options included. A member without a checkpoint
is never copied.

The driver alone writes `ledger.jsonl` (one fsync'd record a line): `member` (a member's first values),
`trained` (its round's result), `exploit` (the round's selection: who copies whom, the new values and how
each key moved), `round` (the exploits are in place). A member's values are those of its last record, and
the driver writes its config.toml from them before every round, so they survive any restart; a resume
replays the ledger and goes on exactly where it stopped: rounds with a `round` record are done, a
recorded exploit is applied again (copying is idempotent), a member's round without a `trained` record is
trained again from its newest checkpoint.

(One file of about 770 lines while the loop is young: its ledger records, driver and report change
together; `pufferlib/sweep/` shows the package it should become once they settle.)
"""
from __future__ import annotations

import concurrent.futures
import datetime
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pufferlib import config as configuration
from pufferlib import invocation, registry, rundir
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib.config import ConfigError
from pufferlib.pufferenv import PufferError
from pufferlib.sweep.driver import _cores, _slots, parallel_limit
from pufferlib.rundir import Ledger
from pufferlib.sweep.ledger import Ledger as SweepLedger
from pufferlib.sweep.ledger import trials_of
from pufferlib.sweep.space import BUDGET_KEY, Param, Space, check_option_limits, parse_space, short
from pufferlib.sweep.trials import AUTO_METRICS, pick_metric, read_rows, run_trial, stop_trials

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
# What a resumed population may change: where and how many at once its members train, nothing that changes
# what they learn.
RESUME_FLAGS = ('--pbt.parallel', '--pbt.backend')
FACTORS = (0.8, 1.2)
# Sections that set the shapes of the weights members copy from each other: no member may differ there.
SHAPE_SECTIONS = ('policy', 'rnn')
RAY_WHO = 'pbt.backend = "ray"'


class PBTError(PufferError, RuntimeError):
    """A population directory, its ledger or its rounds went wrong in a way the user must act on."""


def pbt_dir() -> str:
    return os.path.join(rundir.experiments_dir(), 'pbt')


# ---------------------------------------------------------------------------------------------
# Settings, the space, the metric
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Perturbation and the first members
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# The population directory and its ledger
# ---------------------------------------------------------------------------------------------

def _member(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


RECORDS: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    'session': {'time': (_number_or_none, 'a time'), 'pid': (_member, 'a process id')},
    'member': {'member': (_member, 'a member number'), 'values': (lambda v: isinstance(v, dict), 'an object'),
               'seed': (_member, 'a seed'), 'origin': (lambda v: isinstance(v, str), 'a string'),
               'token': (lambda v: isinstance(v, str), 'a string')},
    'trained': {'round': (_member, 'a round number'), 'member': (_member, 'a member number'),
                'status': (lambda v: v in ('ok', 'failed'), 'ok or failed'), 'score': (_number_or_none, 'a number'),
                'steps': (_member, 'a step count'), 'seconds': (_number_or_none, 'seconds')},
    'exploit': {'round': (_member, 'a round number'), 'scores': (lambda v: isinstance(v, list), 'a list'),
                'exploits': (lambda v: isinstance(v, list) and all(
                    isinstance(e, dict) and _member(e.get('member')) and _member(e.get('source'))
                    and isinstance(e.get('values'), dict) and isinstance(e.get('checkpoint'), str) for e in v),
                    'a list of {member, source, checkpoint, values, perturbed}')},
    'round': {'round': (_member, 'a round number')},
}


def record_problem(record: Any) -> str | None:
    """What is wrong with one ledger record, or None."""
    if not isinstance(record, dict):
        return f'{record!r} is not a record (a JSON object with a "type")'
    kind = record.get('type')
    if kind not in RECORDS:
        return f'type {kind!r} is not one of {", ".join(RECORDS)}'
    for key, (fits, what) in RECORDS[kind].items():
        if key not in record or not fits(record[key]):
            return f'the {kind} record\'s {key!r} must be {what}, got {record.get(key)!r}'
    return None


def create(env_name: str, flags: Sequence[str] = (), config_file: str | None = None, root: str | None = None) -> str:
    """A new population directory: its resolved config (pbt.toml), its members' run directories and their
    first values in the ledger; returns its path. The base config is checked as a run's set-up checks it
    before anything is written."""
    config, space = resolve(env_name, flags, config_file)
    members = first_members(config, space, env_name)
    from pufferlib import train  # imports torch: only a new population pays for it, not the driver's module
    train.check_memory(env_name, {k: v for k, v in config.items() if k not in ('sweep', 'pbt')})
    path = rundir.new_directory(root or pbt_dir(), env_name, ['members'])
    meta = {'_meta': {'env': env_name, 'created': datetime.datetime.now().isoformat(timespec='seconds')}}
    rundir.write_text(os.path.join(path, 'pbt.toml'), configuration.to_toml({**meta, **config}))
    ledger = Ledger(os.path.join(path, 'ledger.jsonl'), PBTError, record_problem)
    for i, (values, origin) in enumerate(members):
        ledger.append({'type': 'member', 'member': i, 'values': values, 'seed': config['train']['seed'] + i,
                       'origin': origin, 'token': uuid.uuid4().hex})
    return path


class Population:
    """A population directory: its config (pbt.toml), space and ledger."""

    def __init__(self, path: str, flags: Sequence[str] = ()):
        self.path = path
        self.env, config = configuration.read_saved(
            path, 'pbt.toml', flags, RESUME_FLAGS, 'a resumed population keeps its settings and its members\' '
            'config; only --pbt.parallel and --pbt.backend may change', ConfigError, pbt_dir())
        self.config = configuration.parse_flags(list(flags), config) if flags else config
        self.settings = self.config['pbt']
        check_settings(self.config)
        self.space, _ = population_space(self.config)
        self.ledger = Ledger(os.path.join(path, 'ledger.jsonl'), PBTError, record_problem)
        self.sign = 1.0 if self.settings['goal'] == 'maximize' else -1.0
        self.size = self.settings['population']
        self.total = self.config['train']['total_timesteps']
        self.rounds = math.ceil(self.total / self.settings['interval'])

    def member_dir(self, m: int) -> str:
        return os.path.join(self.path, 'members', f'member-{m:02d}')

    def round_end(self, r: int) -> int:
        return min((r + 1) * self.settings['interval'], self.total)

    def member_config(self, values: Mapping[str, Any], seed: int) -> dict:
        base = {k: v for k, v in self.config.items() if k not in ('sweep', 'pbt') and not k.startswith('_')}
        config = self.space.apply(base, values)
        config['train']['seed'] = seed
        return config

    def config_text(self, values: Mapping[str, Any], seed: int) -> str:
        """A member's config.toml, as `puffer train` writes one (its env in [_meta])."""
        return f'[_meta]\nenv = "{self.env}"\n\n' + configuration.to_toml(self.member_config(values, seed))


class State:
    """What the ledger says: each member's values, seed and token; the rounds' results and exploits."""

    def __init__(self, records: Sequence[Record]):
        self.members: dict[int, Record] = {}
        self.values: dict[int, dict] = {}
        self.trained: dict[tuple[int, int], Record] = {}
        self.exploits: dict[int, Record] = {}
        self.done: set[int] = set()
        for record in records:
            kind = record['type']
            if kind == 'member':
                self.members[record['member']] = record
                self.values[record['member']] = dict(record['values'])
            elif kind == 'trained':
                self.trained[(record['round'], record['member'])] = record
            elif kind == 'exploit':
                self.exploits[record['round']] = record
                for e in record['exploits']:
                    self.values[e['member']] = dict(e['values'])
            elif kind == 'round':
                self.done.add(record['round'])

    def schedule(self, m: int, rounds: int) -> list[dict]:
        """The values member m trained each round with (for the report)."""
        values, out = dict(self.members[m]['values']), []
        for r in range(rounds):
            out.append(dict(values))
            for e in self.exploits.get(r, {}).get('exploits', []):
                if e['member'] == m:
                    values = dict(e['values'])
        return out


# ---------------------------------------------------------------------------------------------
# A member's round (a task: on this machine, or a Ray worker)
# ---------------------------------------------------------------------------------------------

def member_round(spec: dict[str, Any]) -> dict[str, Any]:
    """Train one member for one round in a subprocess (pufferlib.sweep.trials.run_trial) and score it.

    Where the member's run directory is not on this machine (a Ray worker on another node without a shared
    filesystem), `spec['bundle']` carries its config.toml and checkpoint: the round trains in a scratch run
    directory, and its new checkpoint and metrics rows travel back to the driver in `shipped`."""
    token = rundir.read_json(os.path.join(spec['run_dir'], 'member.json')) or {}
    if token.get('token') == spec['token'] or spec.get('bundle') is None:
        return _train_and_score(spec)
    with tempfile.TemporaryDirectory(prefix='puffer-pbt-') as scratch:
        bundle = spec['bundle']
        os.makedirs(os.path.join(scratch, 'checkpoints'))
        rundir.write_text(os.path.join(scratch, 'config.toml'), bundle['config'])
        if bundle['checkpoint'] is not None:
            name, data = bundle['checkpoint']
            rundir.atomic_write(os.path.join(scratch, 'checkpoints', name), lambda f: f.write(data))
        result = _train_and_score({**spec, 'run_dir': scratch})
        newest = rundir.latest_checkpoint(scratch)
        with open(newest, 'rb') if newest else open(os.devnull, 'rb') as f:
            data = f.read()
        log = os.path.join(scratch, 'trial.log')
        result['shipped'] = {'checkpoint': [os.path.basename(newest), data] if newest else None,
                             'rows': read_rows(scratch),
                             'log': open(log, errors='replace').read() if os.path.exists(log) else ''}
        return result


def _train_and_score(spec: dict[str, Any]) -> dict[str, Any]:
    # run_trial writes its spec as trial.json: the bundle's checkpoint bytes stay out of it
    result = run_trial({key: value for key, value in spec.items() if key != 'bundle'})
    rows = [r for r in read_rows(spec['run_dir']) if r.get('global_step', 0) > spec['round_start']]
    metric = pick_metric(rows, spec['metric'])
    middle = (spec['round_start'] + spec['until_step']) / 2
    values = [(r['global_step'], r[metric]) for r in rows
              if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
    late = [v for step, v in values if step > middle] or [v for _, v in values[-1:]]
    result.update(metric=metric, keys=sorted({k for r in rows for k in r if k.startswith('env/')}),
                  score=float(np.mean(late)) if late and result['status'] == 'ok' else None)
    result.pop('curve', None)
    return result


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------

class Driver:
    """One session of a population's driver: replays the ledger, then trains and selects round by round."""

    def __init__(self, pop: Population, quiet: bool = False, printer: Printer | None = None):
        self.pop, self.settings = pop, pop.settings
        pop.ledger.repair()
        self.state = State(pop.ledger.read())
        if sorted(self.state.members) != list(range(pop.size)):
            raise PBTError(f'{pop.ledger.path} holds members {sorted(self.state.members)}, not 0 to {pop.size - 1}; '
                           'the ledger was edited or damaged')
        pop.ledger.append({'type': 'session', 'time': time.time(), 'pid': os.getpid()})
        self.quiet, self.printer = quiet, printer or print
        self.ray = self.settings['backend'] == 'ray'
        wanted = self.settings['parallel'] or pop.size
        self.parallel = min(wanted, pop.size)
        if not self.ray:
            import psutil
            self.parallel, why = parallel_limit(self.parallel, len(_cores()), psutil.virtual_memory().available / 1e9)
            if why and self.settings['parallel']:
                print(why.replace('sweep.parallel', 'pbt.parallel').replace('trials', 'members'), file=sys.stderr)
        self.backend = RayBackend(who=RAY_WHO, gpus=True) if self.ray else LocalBackend(threads=self.parallel)
        self.slots = _slots(self.parallel)
        self.running: dict[concurrent.futures.Future, tuple[int, int, int]] = {}  # -> (round, member, slot)
        self.keys_seen: dict[int, set[str]] = {}

    def say(self, line: str) -> None:
        if not self.quiet:
            self.printer(line)

    def loop(self) -> None:
        for r in range(self.pop.rounds):
            if r in self.state.done:
                continue
            if r not in self.state.exploits:
                self.train_round(r)
                if r == self.pop.rounds - 1:
                    self.pop.ledger.append({'type': 'round', 'round': r, 'time': time.time()})
                    self.state.done.add(r)
                    continue
                self.select(r)
            self.apply(self.state.exploits[r])
            self.pop.ledger.append({'type': 'round', 'round': r, 'time': time.time()})
            self.state.done.add(r)

    # --- training ----------------------------------------------------------------------------

    def prepare(self, m: int) -> str:
        """The member's run directory with its config.toml written from its values in the ledger."""
        run_dir = self.pop.member_dir(m)
        os.makedirs(os.path.join(run_dir, 'checkpoints'), exist_ok=True)
        self.wait_for(m, run_dir)
        token = self.state.members[m]['token']
        if (rundir.read_json(os.path.join(run_dir, 'member.json')) or {}).get('token') != token:
            rundir.write_text(os.path.join(run_dir, 'member.json'), f'{{"member": {m}, "token": "{token}"}}')
        rundir.write_text(os.path.join(run_dir, 'config.toml'),
                          self.pop.config_text(self.state.values[m], self.state.members[m]['seed']))
        return run_dir

    def wait_for(self, m: int, run_dir: str, patience: float = 600.0) -> None:
        """After a driver was killed, its member processes stop at the end of their epoch (a parent-death
        signal) and save a checkpoint: the member's next round waits for that one to let go of its run."""
        deadline = time.time() + patience
        if rundir.held(run_dir):
            print(f'puffer pbt: waiting for member {m}\'s previous process to stop ({run_dir})', file=sys.stderr)
        while rundir.held(run_dir):
            if time.time() > deadline:
                raise PBTError(f'member {m}\'s run {run_dir} is still held by another process after {patience:.0f} s '
                               '(its lock file names it); stop it, then resume')
            time.sleep(0.5)

    def spec(self, r: int, m: int, slot: int) -> dict[str, Any]:
        run_dir = self.prepare(m)
        start = r * self.settings['interval']
        spec = {'env': self.pop.env, 'config': None, 'trial': m, 'run_dir': os.path.abspath(run_dir),
                'metric': self.settings['metric'], 'metric_flag': '--pbt.metric', 'cost': 'steps',
                'limit_s': None, 'limit_what': None, 'until_step': self.pop.round_end(r), 'round_start': start,
                'token': self.state.members[m]['token'], 'bundle': None, **self.slots[slot]}
        if self.ray:
            spec.update(cpus=None, gpu=None)
            newest = rundir.latest_checkpoint(run_dir)
            checkpoint = None
            if newest is not None:
                with open(newest, 'rb') as f:
                    checkpoint = [os.path.basename(newest), f.read()]
            with open(os.path.join(run_dir, 'config.toml')) as f:
                spec['bundle'] = {'config': f.read(), 'checkpoint': checkpoint}
        return spec

    def train_round(self, r: int) -> None:
        todo = [m for m in range(self.pop.size) if (r, m) not in self.state.trained]
        free = list(range(self.parallel))
        killed: list[str] = []
        while todo or self.running:
            while todo and free:
                m, slot = todo.pop(0), free.pop(0)
                self.running[self.backend.submit(member_round, self.spec(r, m, slot))] = (r, m, slot)
            done, _ = concurrent.futures.wait(list(self.running), timeout=1.0,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                _, m, slot = self.running.pop(future)
                free.append(slot)
                why = self.take(r, m, future)
                if why:
                    killed.append(why)
        if killed:
            raise PBTError(f'round {r + 1}: {"; ".join(killed)}. The other members\' rounds are kept; resume with '
                           f'`{invocation.command("pbt", "--resume", Path(self.pop.path))}`')

    def take(self, r: int, m: int, future: concurrent.futures.Future) -> str | None:
        """Record a member's round; a round killed from outside is not recorded (it reruns on resume): returns
        why, or None."""
        try:
            result = future.result()
        except Exception as e:  # a Ray worker that died, a task that could not start
            return f'member {m} was lost ({self.backend.remote_failure(e) or f"{type(e).__name__}: {e}"})'
        if result['status'] == 'killed':
            return f'member {m} was killed from outside ({result["error"].splitlines()[0][:200]})'
        if 'shipped' in result:
            self.receive(m, result['shipped'], r * self.settings['interval'])
        self.keys_seen[m] = set(result.get('keys', []))
        record = {'type': 'trained', 'round': r, 'member': m, 'status': result['status'], 'score': result['score'],
                  'metric': result['metric'], 'steps': int(result['steps']), 'seconds': result['seconds'],
                  'error': result['error'], 'time': time.time()}
        self.pop.ledger.append(record)
        self.state.trained[(r, m)] = record
        text = (f'{record["metric"]} {record["score"]:.4g}' if record['score'] is not None else
                f'FAILED {(result["error"] or "no score this round").splitlines()[0][:120]}')
        self.say(f'round {r + 1}/{self.pop.rounds} member {m:>2}: {text}  ({result["seconds"]:.0f} s, '
                 f'{record["steps"]:,} steps)')
        return None

    def receive(self, m: int, shipped: dict[str, Any], start: int) -> None:
        """A round trained away from the member's directory: its checkpoint, metrics rows and log, written here."""
        run_dir = self.pop.member_dir(m)
        if shipped['checkpoint'] is not None:
            name, data = shipped['checkpoint']
            folder = os.path.join(run_dir, 'checkpoints')
            rundir.atomic_write(os.path.join(folder, name), lambda f: f.write(data))
            for old in os.listdir(folder):
                if old != name and old.startswith('epoch-'):
                    os.remove(os.path.join(folder, old))
        rundir.trim_metrics(run_dir, start)
        rows = [row for row in shipped['rows'] if row.get('global_step', 0) > start]
        with open(os.path.join(run_dir, 'metrics.jsonl'), 'a') as f:
            f.writelines(json_line(row) for row in rows)
        with open(os.path.join(run_dir, 'trial.log'), 'a') as f:
            f.write(shipped['log'])

    # --- selection ---------------------------------------------------------------------------

    def select(self, r: int) -> None:
        """Truncation selection after round r: the exploit record (written before anything is copied)."""
        results = [self.state.trained[(r, m)] for m in range(self.pop.size)]
        metric = next((t['metric'] for t in results if t['score'] is not None), results[0]['metric'])
        seen = set().union(*self.keys_seen.values()) if self.keys_seen else set()
        if seen and metric not in seen:
            raise PBTError(f'no member logged {metric} in round {r + 1}: {self.pop.env} logs '
                           f'{", ".join(sorted(seen)) or "no env statistics"}; start again with --pbt.metric set to '
                           'one of them')
        if all(t['score'] is None for t in results):
            errors = '; '.join(f'member {t["member"]}: {(t.get("error") or "no score").splitlines()[0][:100]}'
                               for t in results)
            raise PBTError(f'every member failed round {r + 1} ({errors}); fix the config and start again')
        ranked = sorted(range(self.pop.size), key=lambda m: (results[m]['score'] is None,
                                                             -self.pop.sign * (results[m]['score'] or 0.0), m))
        count = max(1, round(self.settings['fraction'] * self.pop.size))
        failed = [m for m in ranked if results[m]['score'] is None]
        bottom = list(dict.fromkeys([*ranked[-count:], *failed]))
        sources = [m for m in ranked[:count] if m not in bottom and self.has_checkpoint(m)]
        if not sources:  # the top members have no checkpoint: the best members that do
            sources = [m for m in ranked if m not in bottom and self.has_checkpoint(m)][:count]
        rng = np.random.default_rng([self.settings['seed'], 2, r])
        exploits: list[dict[str, Any]] = []
        for m in bottom if sources else []:
            source = sources[int(rng.integers(len(sources)))]
            values, how = perturb(self.pop.space, self.state.values[source], rng, self.settings['resample'])
            checkpoint = os.path.relpath(rundir.latest_checkpoint(self.pop.member_dir(source)) or '', self.pop.path)
            exploits.append({'member': m, 'source': source, 'checkpoint': checkpoint, 'values': values,
                             'perturbed': how, 'source_values': self.state.values[source]})
        if not sources:
            print(f'puffer pbt: round {r + 1}: no member outside the bottom has a checkpoint, so none is copied',
                  file=sys.stderr)
        record = {'type': 'exploit', 'round': r, 'metric': metric, 'scores': [t['score'] for t in results],
                  'exploits': exploits, 'time': time.time()}
        self.pop.ledger.append(record)
        self.state.exploits[r] = record
        for e in exploits:
            self.state.values[e['member']] = dict(e['values'])
            moved = ', '.join(f'{name.split(".", 1)[1]} {short(e["source_values"].get(name))}->{short(v)} '
                              f'({e["perturbed"][name]})' for name, v in e['values'].items())
            self.say(f'round {r + 1}: member {e["member"]} copies member {e["source"]}: {moved}')

    def has_checkpoint(self, m: int) -> bool:
        """Whether member m has a checkpoint to copy (a member whose round died before one has none)."""
        return rundir.latest_checkpoint(self.pop.member_dir(m)) is not None

    def apply(self, record: Record) -> None:
        """Copy each exploit's checkpoint over its member's and write its config.toml; idempotent, so a resume
        after a kill in the middle applies the record again."""
        for e in record['exploits']:
            run_dir = self.pop.member_dir(e['member'])
            folder = os.path.join(run_dir, 'checkpoints')
            source = os.path.join(self.pop.path, e['checkpoint'])
            name = os.path.basename(source)
            _copy(source, os.path.join(folder, name))
            for old in os.listdir(folder):
                if old != name and old.startswith('epoch-'):
                    os.remove(os.path.join(folder, old))
            self.state.values[e['member']] = dict(e['values'])
            self.prepare(e['member'])

    def stop(self) -> None:
        stop_trials()  # this machine's member processes (none when they run as Ray tasks)
        self.backend.cancel(list(self.running))
        print(f'\npbt interrupted: {len(self.running)} member round(s) stopped (they go on from their checkpoints '
              f'on resume). Resume with:\n  {invocation.command("pbt", "--resume", Path(self.pop.path))}',
              file=sys.stderr)

    def close(self) -> None:
        self.backend.close()

    def summary(self) -> dict[str, Any]:
        last = self.pop.rounds - 1
        scores = {m: self.state.trained[(last, m)]['score'] for m in range(self.pop.size)
                  if (last, m) in self.state.trained}
        scored = {m: s for m, s in scores.items() if s is not None}
        best = max(scored, key=lambda m: (self.pop.sign * scored[m], -m)) if scored else None
        return {'path': self.pop.path, 'env': self.pop.env, 'rounds': len(self.state.done), 'best': best,
                'score': scored.get(best) if best is not None else None,
                'best_dir': self.pop.member_dir(best) if best is not None else None,
                'values': self.state.values.get(best) if best is not None else None}


def _copy(source: str, target: str) -> None:
    with open(source, 'rb') as f:
        data = f.read()
    rundir.atomic_write(target, lambda out: out.write(data))


def json_line(row: Mapping[str, Any]) -> str:
    return json.dumps(row) + '\n'


def run(path: str, flags: Sequence[str] = (), quiet: bool = False, printer: Printer | None = None) -> dict[str, Any]:
    """Train (or go on training) the population in `path` to its last round; returns a summary. Ctrl-C or
    SIGTERM stops the running members at the end of their epoch (with a checkpoint) and raises
    KeyboardInterrupt after printing how to resume."""
    pop = Population(path, flags)
    lock = rundir.claim(path, 'pbt', PBTError)
    driver = None
    try:
        driver = Driver(pop, quiet, printer)
        with rundir.sigterm_interrupts():
            driver.loop()
    except KeyboardInterrupt:
        if driver is not None:
            driver.stop()
        raise
    finally:
        if driver is not None:
            driver.close()
        lock.release()
    return driver.summary()


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------

def report(path: str, printer: Printer | None = None) -> list[str]:
    """Print each member's score per round and its values now; write pbt.png (score and each key over the
    rounds, per member, exploits marked); return the PNG's path."""
    pop = Population(path)
    state = State(pop.ledger.read())
    rounds = sorted({r for r, _ in state.trained})
    if not rounds:
        raise PBTError(f'the population {path} has trained no round yet; run it with '
                       f'`{invocation.command("pbt", "--resume", Path(path))}`')
    (printer or print)(table(pop, state, rounds))
    return [plot(pop, state, rounds)]


def table(pop: Population, state: State, rounds: list[int]) -> str:
    """A plain-text table: member, its score in each round ('*' where it was copied over after the round),
    times copied, and its values now."""
    names = [name.split('.', 1)[1] if [n.split('.', 1)[1] for n in pop.space.names].count(name.split('.', 1)[1]) == 1
             else name for name in pop.space.names]
    shown = rounds[-8:]  # the last rounds fit a terminal; pbt.png has them all
    header = ['member', *[f'r{r + 1}' for r in shown], 'copied', *names]
    rows = []
    for m in range(pop.size):
        copied = [r for r, rec in state.exploits.items() for e in rec['exploits'] if e['member'] == m]
        cells = [str(m)]
        for r in shown:
            t = state.trained.get((r, m))
            score = '-' if t is None else ('failed' if t['score'] is None else f'{t["score"]:.4g}')
            cells.append(score + ('*' if r in copied else ''))
        cells.append(str(len(copied)))
        cells += [short(state.values[m].get(name)) for name in pop.space.names]
        rows.append(cells)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    metric = next((t['metric'] for t in state.trained.values()), pop.settings['metric'] or AUTO_METRICS[0])
    lines = [f'pbt {pop.env}: {pop.size} members, round {len(state.done)}/{pop.rounds} done, {metric} '
             f'({pop.settings["goal"]}); * = copied from a better member after that round']
    lines += ['  '.join(cell.rjust(w) for cell, w in zip(row, widths)) for row in [header, *rows]]
    return '\n'.join(lines)


def plot(pop: Population, state: State, rounds: list[int]) -> str:
    """pbt.png: the score of each member per round (top), then each perturbed key's value per round; a dot marks
    the round after which a member was copied over."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    keys = pop.space.params
    fig, axes = plt.subplots(1 + len(keys), 1, figsize=(9, 2.2 * (1 + len(keys))), sharex=True, squeeze=False)
    colours = plt.get_cmap('tab10' if pop.size <= 10 else 'tab20')
    steps = [pop.round_end(r) for r in range(pop.rounds)]
    for m in range(pop.size):
        colour = colours(m % colours.N)
        copied = {r for r, rec in state.exploits.items() for e in rec['exploits'] if e['member'] == m}
        xs = [steps[r] for r in rounds if (r, m) in state.trained and state.trained[(r, m)]['score'] is not None]
        ys = [state.trained[(r, m)]['score'] for r in rounds
              if (r, m) in state.trained and state.trained[(r, m)]['score'] is not None]
        axes[0][0].plot(xs, ys, '-', color=colour, label=f'member {m}')
        marks = [(steps[r], state.trained[(r, m)]['score']) for r in copied
                 if (r, m) in state.trained and state.trained[(r, m)]['score'] is not None]
        if marks:
            axes[0][0].plot(*zip(*marks), 'o', color=colour, markersize=4)
        schedule = state.schedule(m, max(rounds) + 1)
        starts = [r * pop.settings['interval'] for r in range(len(schedule))]
        for ax, p in zip(axes[1:], keys):
            ax[0].step([*starts, steps[len(schedule) - 1]], [*(v.get(p.name) for v in schedule),
                                                             schedule[-1].get(p.name)], where='post', color=colour)
    metric = next((t['metric'] for t in state.trained.values()), pop.settings['metric'])
    axes[0][0].set_ylabel(metric)
    axes[0][0].set_title(f'pbt {pop.env}: {pop.size} members, dots: copied over after that round')
    axes[0][0].legend(fontsize='x-small', ncol=max(1, pop.size // 8), loc='best')
    for ax, p in zip(axes[1:], keys):
        ax[0].set_ylabel(p.name.split('.', 1)[1], fontsize='small')
        if p.distribution in ('log', 'pow2'):
            ax[0].set_yscale('log')
    axes[-1][0].set_xlabel('agent steps per member')
    fig.tight_layout()
    out = os.path.join(pop.path, 'pbt.png')
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
