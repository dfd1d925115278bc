#!/usr/bin/env python
"""Trainer acceptance: default hyperparameters on this machine, results into docs/training.md.

    scripts/acceptance_train.py                  # everything (about 15 minutes on 2 cores)
    scripts/acceptance_train.py --only squared   # some envs (sanity names, cartpole, pong); no doc update
    scripts/acceptance_train.py --only tetris --seconds 240   # a probe: the same run, cut short

- Every Ocean sanity env is trained with the defaults (per-env files only set architecture, e.g. an
  LSTM for memory) until its `perf` reaches the target, within 2 minutes of wall time.
- Gymnasium CartPole-v1 must reach a mean episode return of 475 within 300k agent steps.
- Ocean pong must beat its built-in opponent (mean perf = fraction of points won > 0.5).
- Ocean enduro, tetris and rware must beat their scripted baselines within 20 minutes: more cars
  passed, more lines cleared, more deliveries per robot per episode (`env/score`). The baseline is
  the env's own scripted policy (`autopilot=True`), scored here on the same config before training.
- Second-wave games (issue 16): go 7x7 wins >= 90% of games against the capture-greedy player within
  20 minutes, tripletriad >= 80% against the flip-greedy player within 10 minutes (perf = fraction of
  games won, seats alternating), trash_pickup puts >= 90% of the trash in bins within 10 minutes.
The table lists steps and seconds to the target, or the best value reached when it was missed.
"""
import argparse
import platform
import sys
import time

import numpy as np
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import trainer as training

sys.path.insert(0, __file__.rsplit('/', 1)[0])
from benchdoc import update_section  # noqa: E402


def scripted_baseline(env, config, num_envs=64, per_env=8, seed=12345):
    """Mean `score` over episodes of the env's scripted policy (autopilot=True) on the env config that
    training uses. Steps until every instance has finished `per_env` episodes, so the episodes
    still running at the end (more often long ones) bias the mean little."""
    vec = pufferlib.make(env, seed=seed, **{**config['env'], 'num_envs': num_envs, 'autopilot': True})
    finished = np.zeros(num_envs, dtype=np.int64)
    total = count = 0.0
    while finished.min() < per_env:
        _, _, terminals, truncations, infos = vec.step(vec.actions)  # autopilot ignores the actions
        finished += (terminals | truncations).reshape(num_envs, -1).any(1)
        for log in infos + [vec.log()]:
            if log is not None:
                total += log['score'] * log['n']
                count += log['n']
    vec.close()
    return total / count


# env -> (metric, target, wall-clock budget in seconds, step budget or None); a callable target is
# computed from the env's config when the run starts
TASKS = {
    'puffer_squared': ('env/perf', 0.95, 120, None),
    'puffer_password': ('env/perf', 0.95, 120, None),
    'puffer_stochastic': ('env/perf', 0.90, 120, None),
    'puffer_memory': ('env/perf', 0.95, 120, None),
    'puffer_multiagent': ('env/perf', 0.95, 120, None),
    'puffer_spaces': ('env/perf', 0.95, 120, None),
    'puffer_bandit': ('env/perf', 0.90, 120, None),
    'CartPole-v1': ('env/episode_return', 475.0, 600, 300_000),
    'puffer_pong': ('env/perf', 0.5, 600, None),
    # the step budget only keeps the 20M-step default (and its learning-rate schedule) from ending a
    # run long before the 20 minutes do
    'puffer_enduro': ('env/score', scripted_baseline, 1200, 300_000_000),
    'puffer_tetris': ('env/score', scripted_baseline, 1200, 300_000_000),
    'puffer_rware': ('env/score', scripted_baseline, 1200, 300_000_000),
    'puffer_go': ('env/perf', 0.90, 1200, None),
    'puffer_tripletriad': ('env/perf', 0.80, 600, None),
    'puffer_trash_pickup': ('env/perf', 0.90, 600, None),
}


def run(env, metric, target, budget_s, budget_steps, seed):
    flags = ['--train.seed', str(seed), '--train.log-interval', '1']
    if budget_steps:
        flags += ['--train.total-timesteps', str(budget_steps)]
    config = configuration.load(env, flags)
    if callable(target):
        target = target(env, config)
        print(f'{env}: scripted baseline {metric} = {target:.3f} (the target to beat)', flush=True)
    best = {'value': float('-inf'), 'step': 0, 'seconds': 0.0}
    solved = {}
    start = time.time()

    def on_log(row):
        value = row.get(metric)
        if value is not None and value > best['value']:
            best.update(value=value, step=row['global_step'], seconds=time.time() - start)
        if value is not None and value >= target and not solved:
            solved.update(step=row['global_step'], seconds=time.time() - start, value=value)
            return True
        return time.time() - start > budget_s
    summary = training.train(env, config=config, quiet=True, on_log=on_log)
    return {'env': env, 'metric': metric, 'target': target, 'solved': bool(solved), **(solved or {}),
            'best': best['value'], 'steps_run': summary['global_step'], 'seconds_run': time.time() - start,
            'budget_s': budget_s, 'budget_steps': budget_steps, 'run_dir': summary['run_dir']}


def table(results, seed):
    lines = [f'Default hyperparameters (`pufferlib/config/default.toml` + family/env files), seed {seed}, '
             f'CPU only: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, '
             f'torch {torch.__version__}. Reproduce: `.venv/bin/python scripts/acceptance_train.py`.', '',
             '| env | metric | target | budget | met | steps to target | seconds to target | best reached |',
             '|---|---|---:|---|---|---:|---:|---:|']
    for r in results:
        budget = f'{r["budget_s"]} s' + (f', {r["budget_steps"]:,} steps' if r['budget_steps'] else '')
        solved = 'yes' if r['solved'] else '**no**'
        lines.append(f'| {r["env"]} | {r["metric"]} | {r["target"]} | {budget} | {solved} | '
                     f'{r.get("step", 0):,} | {r.get("seconds", float("nan")):.0f} | {r["best"]:.3f} |')
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--only', nargs='*', help='env names (or suffixes like squared, cartpole, pong)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--seconds', type=float, default=None,
                        help='a probe: stop every run after this many seconds (the step budget and schedule stay '
                             "the task's); no doc update")
    args = parser.parse_args()
    tasks = TASKS
    if args.only:
        tasks = {k: v for k, v in TASKS.items() if any(k.lower().endswith(o.lower()) or k == o for o in args.only)}
    results = []
    for env, (metric, target, budget_s, budget_steps) in tasks.items():
        if args.seconds:
            budget_s = min(budget_s, args.seconds)
        result = run(env, metric, target, budget_s, budget_steps, args.seed)
        results.append(result)
        steps, seconds = result.get('step', result['steps_run']), result.get('seconds', result['seconds_run'])
        print(f'{env:<20} {"solved" if result["solved"] else "MISSED":<7} best {result["best"]:.3f} '
              f'steps {steps:,} in {seconds:.0f} s; curve in {result["run_dir"]}/metrics.jsonl', flush=True)
    text = table(results, args.seed)
    print('\n' + text)
    if not args.only and not args.seconds:
        update_section('acceptance', 'Acceptance: default hyperparameters', text,
                       path=__file__.rsplit('/', 2)[0] + '/docs/training.md')
    return 0 if all(r['solved'] for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
