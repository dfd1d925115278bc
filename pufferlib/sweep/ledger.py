"""The ledger: `trials.jsonl` in the sweep directory, append-only and fsync'd, and what its records say.

One `start` and one `end` record per trial (`confirm_start` and `confirm_end` for a confirmation run: a
top trial on another seed). Resuming replays it: finished trials are kept, unfinished ones rerun.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

import pufferlib
from pufferlib import rundir

Record = dict[str, Any]
# {trial: {'starts': [start records], 'end': record or None, 'confirm': {repeat: {'starts', 'end'}}}}
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
        super().__init__(path, SweepError)


def trials_of(records: Iterable[Record]) -> Trials:
    """{trial: {'starts': [start records], 'end': the end record or None, 'confirm': {repeat: {'starts': [...],
    'end': ...}}}} in trial order. `confirm` holds the trial's confirmation runs (its config on another seed)."""
    trials: Trials = {}
    for record in records:
        kind = record.get('type')
        if kind not in ('start', 'end', 'confirm_start', 'confirm_end'):
            continue
        entry = trials.setdefault(record['trial'], {'starts': [], 'end': None, 'confirm': {}})
        if kind.startswith('confirm_'):
            entry = entry['confirm'].setdefault(record['repeat'], {'starts': [], 'end': None})
        if kind.endswith('start'):
            entry['starts'].append(record)
        elif entry['end'] is None:
            entry['end'] = record
    return dict(sorted(trials.items()))


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
