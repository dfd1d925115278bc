#!/usr/bin/env python
"""puffer_mmo: does a short run with the CPU config learn to live longer than random play, and how far is
it from the scripted forager/fighter? Trains, then scores all three the same way, and writes the
"learning" section of scripts/lab/results/mmo.md.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.research.mmo_learning --steps 3000000
    .venv/bin/python -m lab.research.mmo_learning --run experiments/puffer_mmo-...   # score a finished run

Scoring (pufferlib.evaluate.episode_means): 16 worlds of the trained config start together and play
until every agent row has finished 3 lives; every life counts once, in the proportion lives occur
(the training rows' means favour short lives, which end first). Random play samples uniformly among
the actions each row's mask allows, as an untrained masked policy starts.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from lab import RESULTS, ROOT
from lab import benchmark as bd
from pufferlib import config as configuration
from pufferlib.evaluate import episode_means

LOG = os.path.join(RESULTS, 'mmo.md')
ENV = 'puffer_mmo'
WORLDS, LIVES, SEED = 16, 3, 12345
KEYS = ('episode_length', 'episode_return', 'score', 'perf')


def random_legal(env_options):
    """episode_means' rule for a policy sampling uniformly among the legal actions of every part."""
    import pufferlib
    env = pufferlib.make(ENV, seed=SEED, **{**env_options, 'num_envs': WORLDS})
    rng = np.random.default_rng(SEED)
    env.reset(seed=SEED)
    finished = np.zeros(env.num_agents, np.int64)
    totals, count = dict.fromkeys(KEYS, 0.0), 0.0
    nvec = env.single_action_space.nvec
    while finished.min() < LIVES:
        masks, at = env.action_masks, 0
        actions = np.zeros((env.num_agents, len(nvec)), np.int32)
        for part, n in enumerate(nvec):
            legal = masks[:, at:at + n].astype(float)
            p = legal / legal.sum(1, keepdims=True)
            actions[:, part] = (p.cumsum(1) < rng.random((env.num_agents, 1))).sum(1).clip(0, n - 1)
            at += n
        _, _, term, trunc, _ = env.step(actions)
        finished += term | trunc
        log = env.log()
        if log:
            count += log['n']
            for key in KEYS:
                totals[key] += log[key] * log['n']
    env.close()
    return {**{k: v / count for k, v in totals.items()}, 'episodes': int(count)}


def train(seed, steps):
    """A run of the CPU config; its run directory."""
    command = [os.path.join(os.path.dirname(sys.executable), 'puffer'), 'train', ENV, '--train.seed', str(seed),
               '--train.total-timesteps', str(steps), '--quiet']
    start = time.time()
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith('done:'))
    run = line.split('run directory ', 1)[1].split(';', 1)[0]
    print(f'seed {seed}: {steps:,} steps in {time.time() - start:.0f} s, {run}')
    return run


def curve(run):
    """(elapsed s, global step, mean life in the rows of that line) of the run's metrics."""
    points = []
    with open(os.path.join(run, 'metrics.jsonl')) as f:
        for line in f:
            m = json.loads(line)
            if 'env/episode_length' in m:
                points.append((m['elapsed_s'], m['global_step'], m['env/episode_length']))
    return points


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0])
    parser.add_argument('--steps', type=int, default=3_000_000)
    parser.add_argument('--run', nargs='+', help='score these finished runs instead of training')
    parser.add_argument('--no-write', action='store_true')
    args = parser.parse_args()
    runs = args.run or [train(seed, args.steps) for seed in args.seeds]
    env_options = dict(configuration.load(ENV)['env'])
    env_options.pop('num_envs', None)
    scores = {'random (masked)': random_legal(env_options),
              'scripted (autopilot=True)': episode_means(ENV, num_envs=WORLDS, per_env=LIVES, seed=SEED,
                                                         autopilot=True)}
    for run in runs:
        scores[f'trained: {os.path.basename(run)}'] = episode_means(ENV, checkpoint=run, num_envs=WORLDS,
                                                                    per_env=LIVES, seed=SEED)
    rows = [[name, bd.si(s['episode_length']), bd.si(s['episode_return']), bd.si(s['score']), s['episodes']]
            for name, s in scores.items()]
    table = bd.markdown_table(['policy', 'mean life (ticks)', 'return per life', 'levels gained per life',
                               'lives scored'], rows)
    curves = []
    for run in runs:
        points = curve(run)
        thin = points[::max(1, len(points) // 8)] + points[-1:]
        curves.append(f'- `{os.path.basename(run)}`: ' + ', '.join(
            f'{elapsed:.0f} s / {step / 1e6:.1f}M: {life:.0f}' for elapsed, step, life in thin))
    text = '\n'.join([
        f'Measured: {bd.machine()}; load average {os.getloadavg()[0]:.1f} at the end.',
        'Written by `python -m lab.research.mmo_learning` (CPU config pufferlib/config/puffer_mmo.toml, default',
        f'world: 64x64, 16 agents in teams of 4, 32 NPCs). {WORLDS} worlds played until every row finished',
        f'{LIVES} lives (pufferlib.evaluate.episode_means); every life counts once.',
        '',
        table,
        '',
        'Training rows (elapsed, steps: mean life of the lives that ended in that log line; noisy, since long',
        'lives end together at the horizon):',
        '',
        *curves,
    ])
    print(text)
    if not args.no_write:
        if not os.path.exists(LOG):
            with open(LOG, 'w') as f:
                f.write('# puffer_mmo: measurements\n')
        bd.update_section('mmo-learning', 'Learning: a short CPU run against random and scripted play', text, LOG)
        print(f'wrote {os.path.relpath(LOG, ROOT)}')


if __name__ == '__main__':
    main()
