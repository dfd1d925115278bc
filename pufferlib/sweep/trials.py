"""Trials: one subprocess each (`python -m pufferlib.sweep RUN_DIR`, which runs `trial_main`), training
into an ordinary run directory, and the learning curve read back from its metrics.jsonl.

A crash, a NaN loss or an overrun time budget is a failed trial with its error: its config failed. A trial
killed from outside (the OOM killer, a SIGKILL or SIGTERM it was not sent by the driver), or one whose env
worker process was, is a killed trial: it says nothing about its config, and it reruns on resume. Neither
stops the sweep.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

from pufferlib import rundir
from pufferlib.vector import set_parent_death_signal

DOWNSAMPLE = 10      # points kept from each learning curve
LOSS_KEYS = ('policy_loss', 'value_loss', 'entropy', 'approx_kl')
AUTO_METRICS = ('env/score', 'env/perf', 'env/episode_return')
# Signals a process sends itself when its own code goes wrong (a C env's bad memory access, an abort):
# death by one of these is the trial's failure; death by any other signal came from outside.
FAULT_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT}
_running: dict[int, subprocess.Popen] = {}   # trial process pid -> Popen, so Ctrl-C can stop them
_running_lock = threading.Lock()


def read_rows(run_dir: str) -> list[dict[str, Any]]:
    """metrics.jsonl rows; a torn last line (a killed trial) is skipped."""
    rows = []
    try:
        with open(os.path.join(run_dir, 'metrics.jsonl')) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return rows


def pick_metric(rows: list[dict[str, Any]], metric: str = '') -> str:
    """The configured metric, or the env's own statistic: score, else perf, else episode return."""
    if metric:
        return metric
    keys = set().union(*rows) if rows else set()
    return next((m for m in AUTO_METRICS if m in keys), AUTO_METRICS[0])


def downsample(rows: list[dict[str, Any]], metric: str, cost: str = 'seconds',
               points: int = DOWNSAMPLE) -> list[list[float]]:
    """The learning curve as at most `points` [steps, cost, mean metric] triples, by equal step spans."""
    rows = [r for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
    if not rows:
        return []
    last = max(rows[-1]['global_step'], 1)
    bins: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        index = min(points - 1, max(0, math.ceil(points * row['global_step'] / last) - 1))
        bins.setdefault(index, []).append(row)
    curve = []
    for index in sorted(bins):
        group = bins[index]
        spent = group[-1]['elapsed_s'] if cost == 'seconds' else group[-1]['global_step']
        curve.append([group[-1]['global_step'], float(spent), float(np.mean([r[metric] for r in group]))])
    return curve


def _log_tail(path: str, lines: int = 12) -> str:
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:]).rstrip()
    except OSError:
        return ''


def run_trial(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one trial in a subprocess and read its curve back; never raises for a bad trial."""
    run_dir = spec['run_dir']
    os.makedirs(os.path.join(run_dir, 'checkpoints'), exist_ok=True)
    rundir.write_text(os.path.join(run_dir, 'trial.json'), json.dumps(spec, indent=1))
    start = time.time()
    rc, killed = _run_process(spec, os.path.join(run_dir, 'trial.log'))
    outcome = rundir.read_json(os.path.join(run_dir, 'result.json')) or {}
    rows = read_rows(run_dir)
    metric = pick_metric(rows, spec['metric'])
    curve = downsample(rows, metric, spec['cost'])
    status, error = _trial_error(spec, outcome, rc, killed, curve, metric)
    return {'status': status, 'error': error, 'metric': metric, 'curve': curve,
            'score': curve[-1][2] if curve and not error else None, 'cost': curve[-1][1] if curve else None,
            'steps': rows[-1]['global_step'] if rows else 0, 'seconds': time.time() - start,
            'cpus': outcome.get('cpus')}


def _run_process(spec: dict[str, Any], log_path: str) -> tuple[int, bool]:
    """The trial's process, pinned to the spec's cores and GPU, until it exits: (its exit code, whether it
    was killed for hanging past its limit)."""
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    if spec.get('cpus'):
        env['PUFFER_TRIAL_CPUS'] = ','.join(str(c) for c in spec['cpus'])
    if spec.get('gpu') is not None:
        env['CUDA_VISIBLE_DEVICES'] = str(spec['gpu'])
    limit = spec.get('limit_s') or None
    killed = False
    with open(log_path, 'ab') as log:
        # A session of its own: Ctrl-C in the terminal reaches the driver only, which stops trials itself.
        proc = subprocess.Popen([sys.executable, '-m', 'pufferlib.sweep', spec['run_dir']],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
        with _running_lock:
            _running[proc.pid] = proc
        try:
            # The trial stops itself at its limit; this kill is for one that hangs past it.
            rc = proc.wait(timeout=limit + max(60.0, 0.2 * limit) if limit else None)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            rc, killed = proc.wait(), True
        finally:
            with _running_lock:
                _running.pop(proc.pid, None)
    return rc, killed


def _trial_error(spec: dict[str, Any], outcome: dict[str, Any], rc: int, killed: bool, curve: list[list[float]],
                 metric: str) -> tuple[str, str | None]:
    """The trial's status ('ok', 'failed': its config failed, 'killed': stopped from outside) and its error."""
    if killed:  # the driver's own kill of a trial that overran its time budget: the config's doing
        return 'failed', f'hung past {spec.get("limit_what", "its time limit")} and was killed'
    if outcome.get('killed'):
        return 'killed', f'{outcome["error"]} (sent from outside the sweep; the trial reruns on --resume)'
    if outcome.get('error'):
        return 'failed', outcome['error']
    log = _log_tail(os.path.join(spec['run_dir'], 'trial.log'))
    if rc < 0 and signal.Signals(-rc) not in FAULT_SIGNALS:
        return 'killed', (f'the trial process was killed by {signal.Signals(-rc).name} from outside the sweep (the '
                          f'OOM killer, or a kill); the trial reruns on --resume:\n{log}')
    if rc != 0:
        how = f'was killed by {signal.Signals(-rc).name}' if rc < 0 else f'exited with code {rc}'
        return 'failed', f'the trial process {how}:\n{log}'
    if not curve:
        return 'failed', (f'no {metric} in its metrics.jsonl (no episode finished?): train longer or set '
                          f'{spec.get("metric_flag", "--sweep.metric")} to a key of metrics.jsonl')
    return 'ok', None


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_trials(grace: float = 20.0) -> None:
    """Stop every running local trial: SIGTERM to the trial (the trainer saves and closes its env workers
    at the end of the epoch), then SIGKILL to its whole process group after `grace` seconds."""
    with _running_lock:
        procs = list(_running.values())
    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)


def _die_with_parent() -> None:
    """SIGTERM this trial when the process that started it dies (a SIGKILLed sweep leaves no orphans)."""
    set_parent_death_signal()  # the Linux prctl the env workers use too
    if os.getppid() == 1:  # the parent died before the signal was set
        os.kill(os.getpid(), signal.SIGTERM)


def trial_main(run_dir: str) -> int:
    """The trial subprocess: train with the spec's config, stop on a NaN loss or the time limit."""
    _die_with_parent()
    spec = rundir.read_json(os.path.join(run_dir, 'trial.json'))
    cpus = os.environ.get('PUFFER_TRIAL_CPUS')
    # torch and the trainer only in the trial's own process: the driver and the report run without them
    import torch
    if cpus:
        cores = [int(c) for c in cpus.split(',')]
        os.sched_setaffinity(0, cores)  # env workers started by the trainer inherit it
        torch.set_num_threads(len(cores))
    from pufferlib import train
    limit, start = spec.get('limit_s') or None, time.time()
    cpus_used = sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else None
    outcome: dict[str, Any] = {'error': None, 'cpus': cpus_used}

    def on_log(row: dict[str, Any]) -> bool:
        diverged = [k for k in LOSS_KEYS if isinstance(row.get(k), float) and not math.isfinite(row[k])]
        if diverged:
            outcome['error'] = f'diverged: {diverged[0]} became {row[diverged[0]]} at step {row["global_step"]:,}'
            return True
        if limit and time.time() - start > limit:
            outcome['error'] = f'exceeded {spec.get("limit_what", "its time limit")} at step {row["global_step"]:,}'
            return True
        return False

    try:
        if spec.get('until_step') is not None:
            # A round of a population-based training member (pufferlib/pbt/): its run directory, whose
            # config.toml the driver wrote, goes on from its checkpoint to the round's last step.
            summary = train.train(None, resume=run_dir, quiet=True, on_log=on_log, until_step=spec['until_step'])
        else:
            summary = train.train(spec['env'], config=spec['config'], run_dir=run_dir, quiet=True, on_log=on_log)
        if summary.get('interrupted') not in (None, 'on_log') and outcome['error'] is None:
            # The driver stops its trials with SIGTERM only when it stops itself, and records no end then:
            # a trial that reports one was stopped by someone else.
            outcome['error'] = f'stopped by {summary["interrupted"]} before the end of training'
            outcome['killed'] = summary['interrupted']
    except Exception as e:  # any failure of a trial is data for the sweep, never the end of it
        traceback.print_exc()
        outcome['error'] = _error_message(e)
        killer = killed_by(e)
        if killer is not None:
            outcome['killed'] = killer
    rundir.write_text(os.path.join(run_dir, 'result.json'), json.dumps(outcome))
    return 0 if outcome['error'] is None else 1


def killed_by(e: Exception) -> str | None:
    """The signal's name when `e` is an env worker's death by a signal from outside (the OOM killer's
    SIGKILL): the trial was killed, as its own process would have been. An env that raised, or crashed its
    worker (SIGSEGV, ...), failed: None."""
    number = getattr(e, 'worker_signal', None)
    if number is None or signal.Signals(number) in FAULT_SIGNALS:
        return None
    return signal.Signals(number).name


def _error_message(e: Exception) -> str:
    """The first line of an exception, marked as a divergence where it names a non-finite number."""
    lines = str(e).strip().splitlines()
    message = f'{type(e).__name__}: {lines[0] if lines else ""}'
    if re.search(r'\b(nan|inf|non-finite|not finite)\b', message, re.IGNORECASE):  # e.g. NaN probabilities
        message = f'diverged ({message})'
    return message
