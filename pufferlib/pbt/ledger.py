"""A population's directory and its ledger: where populations live, `ledger.jsonl`'s records and their
checks, and what replaying the ledger says (each member's values, the rounds done, the exploits recorded).
"""
from __future__ import annotations

import datetime
import math
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any


from pufferlib import config as configuration
from pufferlib import rundir
from pufferlib.config import ConfigError
from pufferlib.rundir import Ledger
from pufferlib.pbt.space import PBTError, Record, check_settings, first_members, population_space, resolve


# What a resumed population may change: where and how many at once its members train, nothing that changes
# what they learn.
RESUME_FLAGS = ('--pbt.parallel', '--pbt.backend')


def pbt_dir() -> str:
    return os.path.join(rundir.experiments_dir(), 'pbt')


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


