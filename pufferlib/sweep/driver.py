"""The driver: a sweep directory (sweep.toml, its ledger), and the loop that hands trials to a backend.

`run` claims the directory, replays the ledger (finished trials teach the method, cut-off ones rerun),
then keeps `parallel` trials going, ordinary ones first and then the confirmation runs of the best,
until max_trials or max_hours; the driver alone writes the ledger and best.toml. Locally each trial is
pinned to its share of the cores (and GPUs); with `--sweep.backend ray` each trial is a Ray task.
"""
from __future__ import annotations

import concurrent.futures
import datetime
import importlib.util
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from rich.console import Console

from pufferlib import config as configuration
from pufferlib import invocation, registry, rundir
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib.config import ConfigError
from pufferlib.sweep.ledger import Ledger, Record, SweepError, Trials, new_entry, seed_scores, seeds_text, trials_of
from pufferlib.sweep.methods import EPS, METHODS, Method, Observation, make_method
from pufferlib.sweep.space import Space, check_option_limits, parse_space, short
from pufferlib.sweep.trials import run_trial, stop_trials

Printer = Callable[[str], object]
# The memory a local trial is taken to need when bounding sweep.parallel: a Python process with torch, the
# env and its rollout buffers. Small Ocean trials took about 250 MB each (24 at once, 6 GB); this leaves
# room for bigger envs and policies.
TRIAL_MEMORY_GB = 0.5
Job = tuple[Record, float | None, str | None]  # a start record, its time limit and what sets that limit

SETTINGS: dict[str, tuple[type, Callable[[Any], bool], str]] = {  # [sweep] key: (type, check, what it must be)
    'method': (str, lambda v: v in METHODS, f'one of {", ".join(METHODS)}'),
    'metric': (str, lambda v: True, 'a metrics key'),
    'goal': (str, lambda v: v in ('maximize', 'minimize'), 'maximize or minimize'),
    'cost': (str, lambda v: v in ('seconds', 'steps'), 'seconds or steps'),
    'max_trials': (int, lambda v: v >= 1, 'at least 1'),
    'max_hours': (float, lambda v: 0 <= v < math.inf, 'a finite number >= 0 (0 = no limit)'),
    'trial_timeout': (float, lambda v: 0 <= v < math.inf, 'a finite number >= 0 of seconds (0 = no limit)'),
    'parallel': (int, lambda v: v >= 1, 'at least 1'),
    'backend': (str, lambda v: v in ('local', 'ray'), 'local or ray'),
    # numpy's and Optuna's generators take seeds in [0, 2**32); each session adds the trials so far
    'seed': (int, lambda v: 0 <= v < 2 ** 31, f'a whole number from 0 to {2 ** 31 - 1}'),
    'only': (str, lambda v: True, 'comma-separated swept keys'),
    'confirm_top': (int, lambda v: v >= 0, 'a whole number >= 0: how many of the best trials to rerun on '
                    'more seeds at the end (0 = none)'),
    'confirm_seeds': (int, lambda v: v >= 0, 'a whole number >= 0: extra seeds for each confirmed trial '
                      '(0 = no confirmation)'),
}


# A setting's value that needs an optional package: (setting, value) -> (module, what it is, pip extra)
NEEDS = {('method', 'protein'): ('sklearn', 'scikit-learn', 'sweep'),
         ('method', 'optuna'): ('optuna', 'optuna', 'optuna'),
         ('backend', 'ray'): ('ray', 'ray', 'ray')}


def check_settings(sweep: dict[str, Any]) -> None:
    """Every [sweep] setting, its range and the packages it needs: a new sweep calls this before it writes
    anything, a resumed one before it claims its directory."""
    for key, (kind, ok, what) in SETTINGS.items():
        value = sweep.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) or not ok(value):
            raise ConfigError(f'sweep.{key} (--sweep.{key.replace("_", "-")}) must be {what}, got {value!r}')
    for (key, value), (module, name, extra) in NEEDS.items():
        if sweep[key] == value and importlib.util.find_spec(module) is None:
            raise ConfigError(f'sweep.{key} = "{value}" needs {name}: pip install "pufferlib[{extra}]"')


def resolve(env_name: str, flags: Sequence[str] = (), config_file: str | None = None) -> tuple[dict[str, Any], Space]:
    """The config of a new sweep (files, then flags) and its search space, both checked: the settings, each
    swept key's table, and each swept env option's range against the option's limits in the env's spec."""
    config = configuration.load(env_name, flags, config_file=config_file)
    check_settings(config['sweep'])
    space = parse_space(config)
    check_option_limits(space, env_name, registry.lookup(env_name).option_specs(), config.get('env', {}))
    return config, space


def sweeps_dir() -> str:
    return os.path.join(rundir.experiments_dir(), 'sweeps')


def create(env_name: str, flags: Sequence[str] = (), config_file: str | None = None, root: str | None = None) -> str:
    """A new sweep directory with its resolved config and space in sweep.toml; returns its path. The base
    config is checked as a run's set-up checks it (the env's options on a probe env, memory, the rollout's
    sizes) before the directory exists: a mistake there would fail every trial the same way."""
    config, _ = resolve(env_name, flags, config_file)
    from pufferlib import train  # imports torch: only a new sweep pays for it, not the driver's module
    train.check_memory(env_name, {key: value for key, value in config.items() if key != 'sweep'})
    path = rundir.new_directory(root or sweeps_dir(), env_name)
    meta = {'_meta': {'env': env_name, 'created': datetime.datetime.now().isoformat(timespec='seconds')}}
    rundir.write_text(os.path.join(path, 'sweep.toml'), configuration.to_toml({**meta, **config}))
    return path


class Sweep:
    """A sweep directory: its config (sweep.toml), space, ledger and method."""

    def __init__(self, path: str, flags: Sequence[str] = ()):
        self.path = path
        self.env, config = configuration.read_saved(
            path, 'sweep.toml', flags, ('--sweep.',), "a resumed sweep keeps its trials' config; only --sweep.* "
            'settings (max-trials, max-hours, parallel, ...) may change', ConfigError, sweeps_dir())
        self.config = configuration.parse_flags(list(flags), config) if flags else config
        self.settings = self.config['sweep']
        check_settings(self.settings)
        self.space = parse_space(self.config)
        self.ledger = Ledger(os.path.join(path, 'trials.jsonl'))
        self.sign = 1.0 if self.settings['goal'] == 'maximize' else -1.0

    def trial_config(self, values: dict[str, Any]) -> dict[str, Any]:
        base = {k: v for k, v in self.config.items() if k != 'sweep' and not k.startswith('_')}
        return self.space.apply(base, values)

    def observation(self, start: Record, end: Record) -> Observation:
        x = self.space.point(start['values'])
        if end['status'] != 'ok':
            return Observation(x, failed=True)
        curve = np.array(end['curve'], dtype=float)
        return Observation(x, curve[:, 0], np.maximum(curve[:, 1], EPS), self.sign * curve[:, 2])

    def _done(self, trials: Trials) -> list[tuple[int, Record, Record]]:
        return [(k, t['starts'][-1], t['end']) for k, t in trials.items()
                if t['end'] is not None and t['end']['status'] == 'ok']

    def best(self, trials: Trials | None = None) -> tuple[int, Record, Record] | None:
        """(trial, start, end) of the best finished trial, or None.

        Once trials have been confirmed on more seeds, the best is the confirmed trial with the best mean
        over all its seeds (one with a failed confirmation ranks after every one without); before that, the
        trial with the best score of its one run. The best of many single-seed scores is partly the
        luckiest seed: the mean is what a retrain of the config gives.
        """
        trials = trials_of(self.ledger.read()) if trials is None else trials
        done = self._done(trials)
        confirmed = [item for item in done
                     if any(c['end'] is not None for c in trials[item[0]].get('confirm', {}).values())]
        if confirmed:
            def rank(item: tuple[int, Record, Record]) -> tuple[bool, float]:
                scores, failed = seed_scores(trials[item[0]])
                return failed == 0, self.sign * float(np.mean(scores))
            return max(confirmed, key=rank)
        return max(done, key=lambda item: self.sign * item[2]['score']) if done else None

    def to_confirm(self, trials: Trials) -> list[int]:
        """The trials to rerun on more seeds: the `confirm_top` best by their own score."""
        if not self.settings['confirm_seeds']:
            return []
        done = sorted(self._done(trials), key=lambda item: (-self.sign * item[2]['score'], item[0]))
        return [k for k, _, _ in done[:self.settings['confirm_top']]]

    def confirm_seconds(self, trials: Trials, parallel: int) -> float:
        """Wall-clock seconds the confirmation of the current top trials takes, from what each of them took:
        confirm_seeds reruns of each, `parallel` at a time. The time budget keeps this much for them."""
        runs = [trials[k]['end']['seconds'] for k in self.to_confirm(trials)] * self.settings['confirm_seeds']
        return max(max(runs), sum(runs) / parallel) if runs else 0.0

    def confirm_seed(self, start: Record, repeat: int) -> int:
        """The seed of a trial's repeat-th confirmation: its own training seed plus `repeat`."""
        return self.trial_config(start['values'])['train']['seed'] + repeat

    def time_used(self, records: Sequence[Record]) -> float:
        """Seconds the driver has run in earlier sessions (from each session's first to last record)."""
        used, session, last = 0.0, None, None
        for record in records:
            if record.get('type') == 'session':
                if session is not None:
                    used += last - session
                session = last = record['time']
            elif session is not None and 'time' in record:
                last = record['time']
        return used + (last - session if session is not None else 0.0)


def _cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else list(range(os.cpu_count() or 1))


def parallel_limit(requested: int, cores: int, available_gb: float) -> tuple[int, str | None]:
    """How many local trials run at once: `requested` (sweep.parallel), at most one per core this process may
    use and as many as the available memory holds at TRIAL_MEMORY_GB each (at least one); and, when that is
    fewer than requested, the message that says so and why."""
    by_memory = max(1, int(available_gb / TRIAL_MEMORY_GB))
    allowed = max(1, min(cores, by_memory))
    if requested <= allowed:
        return requested, None
    return allowed, (f'sweep.parallel {requested}: running {allowed} trials at a time, as many as this machine '
                     f'allows: this process may use {cores} cores (one trial each at most) and {available_gb:.1f} '
                     f'GB of memory is available (room for {by_memory} trials at an estimated '
                     f'{TRIAL_MEMORY_GB:g} GB each)')


def _slots(parallel: int) -> list[dict[str, Any]]:
    """The cores (and GPU) of each parallel slot: an even share of this process's cores."""
    cores = _cores()
    gpus = 0
    if parallel > 1:
        try:
            import torch  # the train extra; without it the trials run on CPUs
            gpus = torch.cuda.device_count()
        except ImportError:
            pass
    slots = []
    for i in range(parallel):
        share = cores[i * len(cores) // parallel:(i + 1) * len(cores) // parallel] or [cores[i % len(cores)]]
        slots.append({'cpus': share if parallel > 1 else None, 'gpu': i % gpus if gpus > 1 else None})
    return slots


class Driver:
    """One session of a sweep's driver: the trials of its ledger, the method that suggests new ones, the
    backend that runs them in `parallel` slots, and the time left of the sweep's budget."""

    def __init__(self, sweep: Sweep, quiet: bool = False, printer: Printer | None = None):
        self.sweep, self.settings, self.space = sweep, sweep.settings, sweep.space
        self.restore()
        self.session_start = time.time()
        sweep.ledger.append({'type': 'session', 'time': self.session_start, 'pid': os.getpid()})
        self.budget = self.settings['max_hours'] * 3600 or None
        self.parallel = self.settings['parallel']
        self.ray = self.settings['backend'] == 'ray'
        if not self.ray:  # Ray places its tasks by the cluster's resources
            self.parallel, why = parallel_limit(self.parallel, len(_cores()),
                                                psutil.virtual_memory().available / 1e9)
            if why:
                print(why, file=sys.stderr)
        self.backend = (RayBackend(who='sweep.backend = "ray"', gpus=True) if self.ray
                        else LocalBackend(threads=self.parallel))
        self.slots = _slots(self.parallel)
        self.free = list(range(self.parallel))
        self.running: dict[concurrent.futures.Future, tuple[int, int, Record]] = {}  # -> (trial, slot, start)
        self.confirming = False  # once confirmation has begun in this session, no new ordinary trial starts
        self.killed_here: set[tuple[int, int]] = set()  # (trial, repeat) killed in this session: rerun on resume
        self.progress = Progress(sweep, self.trials, quiet, printer)

    def restore(self) -> None:
        """Replay the ledger: finished trials teach the method, cut-off ones are queued to rerun."""
        self.sweep.ledger.repair()
        records = self.sweep.ledger.read()
        self.used_before = self.sweep.time_used(records)
        self.trials = trials_of(records)
        self.method: Method = make_method(self.settings['method'], self.space,
                                          seed=self.settings['seed'] + len(self.trials))
        for trial in self.trials.values():
            if trial['end'] is not None:
                self.method.observe(self.sweep.observation(trial['starts'][-1], trial['end']))
        self.rerun = [k for k, t in self.trials.items() if t['end'] is None]
        self.next_trial = max(self.trials, default=-1) + 1
        earlier = [t for t in self.trials.values() if self.space.unswept(t['starts'][-1]['values'])]
        if earlier:  # a wider --sweep.only than before: the space grows, the earlier trials keep their runs
            added = sorted({name for t in earlier for name in self.space.unswept(t['starts'][-1]['values'])})
            configured = ', '.join(f'{name} = {self.config_value(name)!r}' for name in added)
            print(f'sweep.only now sweeps {", ".join(added)} too: {len(earlier)} earlier trial(s) ran with the '
                  f'configured value ({configured}), and the search counts them there', file=sys.stderr)

    def config_value(self, name: str) -> Any:
        section, key = name.split('.', 1)
        return self.sweep.config[section][key]

    def remaining(self) -> float | None:
        """Seconds left of the sweep's time budget over all its sessions, or None without a budget."""
        return None if self.budget is None else self.budget - self.used_before - (time.time() - self.session_start)

    def out_of_time(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def loop(self) -> None:
        """Keep the slots busy until no job is left, recording each trial as it ends."""
        while True:
            self.start_jobs()
            if not self.running:
                break
            done, _ = concurrent.futures.wait(list(self.running), timeout=1.0,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                self.take(future)
            self.progress.update(len(self.running), self.remaining())

    def start_jobs(self) -> None:
        while self.free and not self.out_of_time():
            job = self.ordinary_job() or self.confirm_job()
            if job is None:
                break
            self.start(*job)

    def ordinary_job(self) -> Job | None:
        """The next ordinary trial (a cut-off one to rerun, else a new suggestion), or None."""
        if self.confirming or not (self.rerun or self.next_trial < self.settings['max_trials']):
            return None
        # The budget keeps the time the confirmation of the current top trials takes (confirm_seconds).
        reserve = self.sweep.confirm_seconds(self.trials, self.parallel) if self.budget is not None else 0.0
        left = self.remaining()
        if left is not None and left <= reserve:
            return None
        predicted: dict[str, float] | None
        if self.rerun:
            k = self.rerun.pop(0)
            values, attempt = self.trials[k]['starts'][-1]['values'], len(self.trials[k]['starts']) + 1
            predicted = None
        else:
            k, attempt = self.next_trial, 1
            self.next_trial += 1
            values = self.space.values(self.suggest(left, reserve))
            predicted = getattr(self.method, 'last', None) or None
        start = sweep_start_record(self.sweep, k, attempt, values, predicted)
        self.trials.setdefault(k, new_entry(confirm=True))['starts'].append(start)
        if left is None:
            return start, None, None
        return start, left - reserve, ("the sweep's time budget (sweep.max_hours) less the time kept for "
                                       "confirming the best trials" if reserve else None)

    def suggest(self, left: float | None, reserve: float) -> np.ndarray:
        """The point of a new trial: the defaults first, then the method's suggestion away from the running
        trials, among runs predicted to end within the time left."""
        if not self.trials and not self.running:
            return self.space.centre
        pending = [self.space.point(start['values']) for _, _, start in self.running.values()
                   if start['type'] == 'start']
        max_cost = left - reserve if left is not None and self.settings['cost'] == 'seconds' else None
        return self.method.suggest(pending=pending, max_cost=max_cost)

    def confirm_job(self) -> Job | None:
        """The next confirmation run (a top trial on another seed), once every ordinary trial has ended."""
        if any(start['type'] == 'start' for _, _, start in self.running.values()):
            return None  # the top trials are known when the running ones end
        busy = {(start['trial'], start['repeat']) for _, _, start in self.running.values()}
        for k in self.sweep.to_confirm(self.trials):
            for repeat in range(1, self.settings['confirm_seeds'] + 1):
                entry = self.trials[k]['confirm'].setdefault(repeat, new_entry())
                if entry['end'] is not None or (k, repeat) in busy or (k, repeat) in self.killed_here:
                    continue
                self.confirming = True
                start = confirm_start_record(self.sweep, self.trials[k]['starts'][-1], repeat,
                                             len(entry['starts']) + 1)
                entry['starts'].append(start)
                return start, self.remaining(), None
        return None

    def start(self, start: Record, limit: float | None, limit_what: str | None) -> None:
        """Record a job's start in the ledger, then hand it to the backend in a free slot."""
        slot = self.free.pop(0)
        self.sweep.ledger.append(start)
        spec = trial_spec(self.sweep, start, self.slots[slot], limit, limit_what)
        if self.ray:  # Ray places the task and sets CUDA_VISIBLE_DEVICES
            spec.update(cpus=None, gpu=None)
        self.running[self.backend.submit(run_trial, spec)] = (start['trial'], slot, start)

    def take(self, future: concurrent.futures.Future) -> None:
        """Record a finished job: its end in the ledger, the method's data, best.toml, a progress line."""
        k, slot, start = self.running.pop(future)
        self.free.append(slot)
        try:
            result = future.result()
        except Exception as e:  # a Ray worker that died (Ray's OOM killer), a task that could not start
            result = {'status': 'killed', 'error': f'{type(e).__name__}: {e}', 'metric': self.settings['metric'],
                      'curve': [], 'score': None, 'cost': None, 'steps': 0, 'seconds': 0.0}
        killed = result['status'] == 'killed'
        if start['type'] == 'confirm_start':
            # Confirmation runs only rank the top trials: the methods (Protein's GPs) learn from the
            # ordinary trials alone, so a config rerun on more seeds does not weigh more in them.
            end = {'type': 'confirm_end', 'trial': k, 'repeat': start['repeat'], 'seed': start['seed'],
                   'attempt': start['attempt'], 'time': time.time(), **result}
            entry = self.trials[k]['confirm'][start['repeat']]
        else:
            end = {'type': 'end', 'trial': k, 'attempt': start['attempt'], 'time': time.time(), **result}
            entry = self.trials[k]
            if not killed:
                self.method.observe(self.sweep.observation(start, end))
        self.sweep.ledger.append(end)
        if killed:
            # Killed from outside (the OOM killer, a kill): not the config's failure, so the method does
            # not learn it as one; it reruns on resume, not now, when what killed it may still be there.
            entry['killed'].append(end)
            self.killed_here.add((k, start.get('repeat', 0)))
        else:
            entry['end'] = end
        write_best(self.sweep, self.trials)
        self.progress.finished(k, start, end)

    def stop(self) -> None:
        """Ctrl-C or SIGTERM: stop the running trials (no `end` record: they rerun on resume), say how to resume."""
        self.progress.close()
        stop_trials()  # this machine's trial processes (none when they run as Ray tasks)
        self.backend.cancel(list(self.running))
        print(f'\nsweep interrupted: {sum(t["end"] is not None for t in self.trials.values())} trials finished, '
              f'{len(self.running)} stopped (they rerun on resume). Resume with:\n  '
              f'{invocation.command("sweep", "--resume", Path(self.sweep.path))}', file=sys.stderr)

    def close(self) -> None:
        self.progress.close()
        self.backend.close()

    def summary(self) -> dict[str, Any]:
        best = self.sweep.best(self.trials)
        finished = [t for t in self.trials.values() if t['end'] is not None]
        failed = sum(t['end']['status'] != 'ok' for t in finished)
        killed = len(self.killed_here)
        path = self.sweep.path
        return {'path': path, 'env': self.sweep.env, 'trials': len(finished), 'failed': failed, 'killed': killed,
                'best': None if best is None else {'trial': best[0], 'score': best[2]['score'],
                                                   'values': best[1]['values'],
                                                   'seeds': seeds_text(self.trials[best[0]])},
                'best_toml': os.path.join(path, 'best.toml') if best else None}


def run(path: str, flags: Sequence[str] = (), quiet: bool = False, printer: Printer | None = None) -> dict[str, Any]:
    """Run (or resume) the sweep in `path` until max_trials or max_hours; returns a summary dict.

    Ctrl-C or SIGTERM stops the running trials (no `end` record: they rerun on resume) and raises
    KeyboardInterrupt after printing how to resume.
    """
    sweep = Sweep(path, flags)
    # One driver per sweep (a second `--resume` would run its trials twice); the kernel drops the lock
    # when the holder dies, so a SIGKILLed sweep resumes.
    lock = rundir.claim(path, 'sweep', SweepError)
    driver = Driver(sweep, quiet, printer)
    try:
        with rundir.sigterm_interrupts():
            driver.loop()
    except KeyboardInterrupt:
        driver.stop()
        raise
    finally:
        driver.close()
        lock.release()
    return driver.summary()


def sweep_start_record(sweep: Sweep, k: int, attempt: int, values: dict[str, Any],
                       predicted: dict[str, float] | None) -> Record:
    name = f'trial-{k:04d}' if attempt == 1 else f'trial-{k:04d}-{attempt}'
    record = {'type': 'start', 'trial': k, 'attempt': attempt, 'time': time.time(),
              'run_dir': os.path.join('trials', name), 'values': values}
    if predicted:
        record['predicted'] = predicted
    return record


def confirm_start_record(sweep: Sweep, trial_start: Record, repeat: int, attempt: int) -> Record:
    """A confirmation run: the trial's values on the seed of its repeat-th confirmation, linked by `trial`."""
    k = trial_start['trial']
    name = f'trial-{k:04d}-seed{repeat}' if attempt == 1 else f'trial-{k:04d}-seed{repeat}-{attempt}'
    return {'type': 'confirm_start', 'trial': k, 'repeat': repeat, 'seed': sweep.confirm_seed(trial_start, repeat),
            'attempt': attempt, 'time': time.time(), 'run_dir': os.path.join('trials', name),
            'values': trial_start['values']}


def trial_spec(sweep: Sweep, start: Record, slot: dict[str, Any], remaining: float | None,
               remaining_what: str | None = None) -> dict[str, Any]:
    timeout = sweep.settings['trial_timeout'] or None
    limit, what = timeout, f'its time budget of {timeout:g} s (sweep.trial_timeout)' if timeout else None
    if remaining is not None and (limit is None or remaining < limit):
        limit, what = max(remaining, 1.0), remaining_what or 'the sweep\'s time budget (sweep.max_hours)'
    config = sweep.trial_config(start['values'])
    if 'seed' in start:  # a confirmation run
        config['train']['seed'] = start['seed']
    return {'env': sweep.env, 'config': config, 'trial': start['trial'],
            'run_dir': os.path.abspath(os.path.join(sweep.path, start['run_dir'])),
            'metric': sweep.settings['metric'], 'cost': sweep.settings['cost'], 'limit_s': limit,
            'limit_what': what, **slot}


def write_best(sweep: Sweep, trials: Trials) -> str | None:
    """best.toml: every key of the best trial's config that differs from the env's defaults."""
    best = sweep.best(trials)
    if best is None:
        return None
    k, start, end = best
    config = sweep.trial_config(start['values'])
    defaults = configuration.load(sweep.env)
    changed = {}
    for section, values in config.items():
        diff = {key: value for key, value in values.items() if not _same(defaults.get(section, {}).get(key), value)}
        if diff:
            changed[section] = diff
    path = os.path.join(sweep.path, 'best.toml')
    # A line in a file is read from any folder later: absolute paths, and no newline that ends the comment.
    train_line = invocation.command('train', sweep.env, '--config', Path(path), anywhere=True).replace('\n', ' ')
    header = (f'# The best of {sum(t["end"] is not None for t in trials.values())} trials of the sweep {sweep.path}\n'
              f'# trial {k}: {end["metric"]} = {end["score"]:.6g} after {end["steps"]:,} steps '
              f'({end["seconds"]:.0f} s)' + (f'; {seeds_text(trials[k])}' if seeds_text(trials[k]) else '') + '\n'
              f'# Train with it: {train_line}\n\n')
    rundir.write_text(path, header + configuration.to_toml(changed))
    return path


def _same(default: Any, value: Any) -> bool:
    """A config value equals its default; numbers within float noise (a value that went through a transform
    and back, or a ledger written before the centre mapped back exactly)."""
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) for v in (default, value)]
    if all(numbers) and isinstance(default, float) == isinstance(value, float):
        return math.isclose(default, value, rel_tol=1e-12, abs_tol=0.0)
    return default == value


class Progress:
    """One rich status line while the sweep runs (trial k/N, best so far, ETA) and a line per trial."""

    def __init__(self, sweep: Sweep, trials: Trials, quiet: bool, printer: Printer | None):
        self.sweep, self.trials, self.quiet = sweep, trials, quiet
        self.printer = printer or print
        self.started = time.time()
        self.done_here = 0
        self.status: Any = None
        if not quiet:
            console = Console(stderr=True)
            if console.is_terminal:
                self.status = console.status('')
                self.status.start()
        self.update(0, None)

    def finished(self, k: int, start: Record, end: Record) -> None:
        self.done_here += 1
        if self.quiet:
            return
        if end['status'] == 'ok':
            text = f'{end["metric"]} {end["score"]:.4g}  cost {end["cost"]:.4g}'
        elif end['status'] == 'killed':
            text = f'KILLED, reruns on --resume: {end["error"].splitlines()[0][:120]}'
        else:
            text = f'FAILED {end["error"].splitlines()[0][:120]}'
        if start['type'] == 'confirm_start':
            self.printer(f'trial {k:>3} on seed {start["seed"]}: {text}  ({end["seconds"]:.0f} s; '
                         f'{seeds_text(self.trials[k])})')
            return
        values = ', '.join(f'{name.split(".", 1)[1]}={short(v)}' for name, v in start['values'].items())
        self.printer(f'trial {k:>3}: {text}  ({end["seconds"]:.0f} s; {values})')

    def update(self, running: int, remaining: float | None) -> None:
        if self.status is None:
            return
        settings = self.sweep.settings
        finished = sum(t['end'] is not None for t in self.trials.values())
        best = self.sweep.best(self.trials)
        best_text = f'best {best[2]["score"]:.4g} (trial {best[0]})' if best else 'best -'
        eta = None
        if self.done_here:
            # every run so far, trials and confirmation runs alike, took this long on average (wall clock,
            # with `parallel` of them at a time); the runs left include the confirmation of the top trials
            per_run = (time.time() - self.started) / self.done_here
            eta = per_run * (max(0, settings['max_trials'] - finished) + self.confirmations_left())
        if remaining is not None:
            eta = max(0.0, remaining) if eta is None else min(eta, max(0.0, remaining))
        eta_text = str(datetime.timedelta(seconds=int(eta))) if eta is not None else '?'
        self.status.update(f'sweep {self.sweep.env} ({settings["method"]})  trial {finished}/{settings["max_trials"]}'
                           f'  running {running}  {best_text}  ETA {eta_text}')

    def confirmations_left(self) -> int:
        """Confirmation runs still to come: confirm_seeds for each of the confirm_top best trials, less those
        finished."""
        settings = self.sweep.settings
        planned = min(settings['confirm_top'], settings['max_trials']) * settings['confirm_seeds']
        done = sum(c['end'] is not None for t in self.trials.values() for c in t.get('confirm', {}).values())
        return max(0, planned - done)

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
