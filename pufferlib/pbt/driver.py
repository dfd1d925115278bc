"""The driver: a population's rounds, each member's round as a task (on this machine or a Ray worker),
selection and exploits after each round, recorded in the ledger before they take effect, and `run`.
"""
from __future__ import annotations

import concurrent.futures
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pufferlib import invocation, rundir
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib.sweep.driver import _cores, _slots, parallel_limit
from pufferlib.sweep.space import short
from pufferlib.sweep.trials import pick_metric, read_rows, run_trial, stop_trials
from pufferlib.pbt.ledger import Population, State
from pufferlib.pbt.space import PBTError, Printer, Record, perturb



RAY_WHO = 'pbt.backend = "ray"'


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


