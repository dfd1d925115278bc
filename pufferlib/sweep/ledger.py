"""The ledger: `trials.jsonl` in the sweep directory, append-only and fsync'd, and what its records say.

One `start` and one `end` record per trial (`confirm_start` and `confirm_end` for a confirmation run: a
top trial on another seed). Resuming replays it: finished trials are kept, unfinished ones rerun, and so
do killed ones (an `end` with status `killed`: stopped from outside, which says nothing of their config).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import pufferlib
from pufferlib import rundir

Record = dict[str, Any]
# {trial: {'starts': [start records], 'end': record or None, 'killed': [end records of killed attempts],
#          'confirm': {repeat: {'starts', 'end', 'killed'}}}}
Trials = dict[int, dict[str, Any]]


class SweepError(pufferlib.PufferError, RuntimeError):
    """A sweep directory is missing or damaged, or a sweep cannot go on."""


class Ledger(rundir.Ledger):
    """trials.jsonl: one JSON record a line, appended and fsync'd, written by the driver only.

    Records: `session` (a run of the driver began), `start` (trial k, attempt a, its values and run
    directory), `end` (its status, score, cost, curve, error). A trial with an `end` is finished; a
    trial with only a `start` was cut off and is rerun. A kill during a write leaves at most a torn
    last line, which never counted and is dropped on resume.
    """

    def __init__(self, path: str):
        super().__init__(path, SweepError, check=self._problem)
        self._started: set[tuple[Any, ...]] = set()

    def read(self) -> list[Record]:
        """The records, each checked against its type's schema (RECORDS) as it is read: a record of the wrong
        shape raises one SweepError naming its line, before anything uses it; the file is never changed."""
        self._started = set()  # an end must follow its start, within this reading
        return super().read()

    def _problem(self, record: Any) -> str | None:
        return record_problem(record, self._started)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


Check = tuple[Callable[[Any], bool], str]  # (does the value fit, what it must be)
TRIAL: Check = (lambda v: _whole(v) and v >= 0, 'a whole number >= 0')
COUNT: Check = (lambda v: _whole(v) and v >= 1, 'a whole number >= 1')
TIME: Check = (_number, 'a number (seconds since 1970)')
VALUES: Check = (lambda v: isinstance(v, dict) and all(_number(x) for x in v.values()),
                 'a table of swept key -> number')
RESULT: dict[str, Check] = {
    'status': (lambda v: v in ('ok', 'failed', 'killed'), '"ok", "failed" or "killed"'),
    'error': (lambda v: v is None or isinstance(v, str), 'a string or null'),
    'metric': (lambda v: isinstance(v, str), 'a string'),
    'curve': (lambda v: isinstance(v, list) and all(isinstance(p, list) and len(p) == 3 and all(map(_number, p))
                                                    for p in v), 'a list of [steps, cost, score] numbers'),
    'score': (lambda v: v is None or _number(v), 'a number or null'),
    'cost': (lambda v: v is None or _number(v), 'a number or null'),
    'steps': (lambda v: _whole(v) and v >= 0, 'a whole number >= 0'),
    'seconds': (_number, 'a number'),
}
# The keys each record type must have (more may follow: `predicted`, `cpus`, `pid`) and what they must be.
RECORDS: dict[str, dict[str, Check]] = {
    'session': {'time': TIME},
    'start': {'trial': TRIAL, 'attempt': COUNT, 'time': TIME, 'run_dir': (lambda v: isinstance(v, str), 'a path'),
              'values': VALUES},
    'end': {'trial': TRIAL, 'attempt': COUNT, 'time': TIME, **RESULT},
    'confirm_start': {'trial': TRIAL, 'repeat': COUNT, 'seed': (_whole, 'a whole number'), 'attempt': COUNT,
                      'time': TIME, 'run_dir': (lambda v: isinstance(v, str), 'a path'), 'values': VALUES},
    'confirm_end': {'trial': TRIAL, 'repeat': COUNT, 'seed': (_whole, 'a whole number'), 'attempt': COUNT,
                    'time': TIME, **RESULT},
}


def record_problem(record: Any, started: set[tuple[Any, ...]]) -> str | None:
    """What is wrong with one ledger record, or None. `started` holds the runs started by the records before
    it (updated here): an end must follow its start."""
    if not isinstance(record, dict):
        return f'{type(record).__name__} {record!r} is not a record (a JSON object with a "type")'
    kind = record.get('type')
    if kind not in RECORDS:
        return f'type {kind!r} is not one of {", ".join(RECORDS)}'
    for key, (fits, what) in RECORDS[kind].items():
        if key not in record:
            return f'the {kind} record has no {key!r} ({what})'
        if not fits(record[key]):
            return f'the {kind} record\'s {key!r} must be {what}, got {record[key]!r}'
    if kind.endswith('end') and record['status'] == 'ok' and (record['score'] is None or record['cost'] is None):
        return f'the {kind} record of trial {record["trial"]} says ok but has no score or cost'
    run = (kind.startswith('confirm_'), record.get('trial'), record.get('repeat'))
    if kind.endswith('start'):
        started.add(run)
    elif kind.endswith('end') and run not in started:
        return f'the {kind} record of trial {record["trial"]} follows no start record of that run'
    return None


def trials_of(records: Iterable[Record]) -> Trials:
    """{trial: {'starts': [start records], 'end': the end record or None, 'killed': [...], 'confirm': {repeat:
    {'starts': [...], 'end': ..., 'killed': [...]}}}} in trial order. `confirm` holds the trial's confirmation
    runs (its config on another seed). A killed attempt's end goes to `killed`, not `end`: the run is as
    unfinished as a cut-off one, and reruns on resume."""
    trials: Trials = {}
    for record in records:
        kind = record.get('type')
        if kind not in ('start', 'end', 'confirm_start', 'confirm_end'):
            continue
        entry = trials.setdefault(record['trial'], new_entry(confirm=True))
        if kind.startswith('confirm_'):
            entry = entry['confirm'].setdefault(record['repeat'], new_entry())
        if kind.endswith('start'):
            entry['starts'].append(record)
        elif record['status'] == 'killed':
            entry['killed'].append(record)
        elif entry['end'] is None:
            entry['end'] = record
    return dict(sorted(trials.items()))


def new_entry(confirm: bool = False) -> dict[str, Any]:
    """What trials_of holds for a trial (`confirm`: with its confirmation runs) or a confirmation run."""
    return {'starts': [], 'end': None, 'killed': [], **({'confirm': {}} if confirm else {})}


def seed_scores(trial: dict[str, Any]) -> tuple[list[float], int]:
    """A trial's scores over every seed it ran on (its own run first, then its confirmations that finished
    ok), and how many of its confirmations failed."""
    scores = [trial['end']['score']] if trial['end'] is not None and trial['end']['status'] == 'ok' else []
    ends = [c['end'] for _, c in sorted(trial.get('confirm', {}).items()) if c['end'] is not None]
    scores += [end['score'] for end in ends if end['status'] == 'ok']
    return scores, sum(end['status'] != 'ok' for end in ends)


def seeds_text(trial: dict[str, Any]) -> str:
    """'mean 25.3 over 3 seeds (35.5 20.1 20.3), spread 15.4' for a confirmed trial, else ''. The spread is
    the max-min range across its seeds (docs/sweeps.md)."""
    scores, failed = seed_scores(trial)
    if len(scores) + failed < 2:
        return ''
    text = f'mean {np.mean(scores):.4g} over {len(scores)} seeds ({" ".join(f"{v:.4g}" for v in scores)}), ' \
           f'spread {np.ptp(scores):.4g}' if scores else 'no seed finished'
    return text + (f', {failed} failed' if failed else '')
