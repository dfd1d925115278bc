#!/usr/bin/env python
"""puffer_craftax's Crafter score after Crafter's 1M-step budget, beside the Crafter paper's figures.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_craftax run --seed 0   # one seed
    .venv/bin/python -m lab.bench_craftax run --seed 0 --steps 100000000 --train.device cuda   # the long budget
    .venv/bin/python -m lab.bench_craftax write                                                # the section

`run` trains puffer_craftax with its config (pufferlib/config/puffer_craftax.toml: 1,000,000 agent steps),
then plays the final policy over whole episodes (pufferlib.evaluate.episode_means: 64 envs, two episodes
each, other worlds than training's) and stores each achievement's unlock rate in docs/baselines/craftax.json;
the first `run` also measures uniformly random actions over whole episodes. `write` puts the Crafter score
(Hafner 2021: S = exp(mean(ln(1 + s_i))) - 1 over the 22 success rates s_i in percent) of every stored seed,
a per-achievement table and the paper's figures into docs/baselines.md. `--steps` trains another budget (the
paper's long one is 100M: 7.5-21 hours of a 2-core CPU, minutes of a GPU); further flags go to the trainer, and
each (seed, budget) is stored and shown apart.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from pufferlib import config as configuration
from pufferlib import evaluate
from pufferlib import ocean
from pufferlib import train as training
from pufferlib.ocean.craftax import ACHIEVEMENTS, crafter_score

from lab import ROOT
from lab import benchmark as bd

ENV = 'puffer_craftax'
RESULTS = os.path.join(ROOT, 'docs', 'baselines', 'craftax.json')
DOC = os.path.join(ROOT, 'docs', 'baselines.md')
# The Crafter paper's scores at 1M steps (Hafner 2021, table of scores), in percent.
PAPER = {'DreamerV2': 10.0, 'PPO': 4.6, 'Rainbow': 4.3, 'Random': 1.6}
CHECK_ENVS, CHECK_EPISODES = 64, 2
BUDGET = 1_000_000  # Crafter's benchmark budget; the config trains it, and the mean row is over these runs


def check_seed(seed):
    """Checks play other worlds than training's."""
    return 10_000 + seed


def random_rates(episodes, seed=0):
    """Each achievement's unlock rate under uniformly random actions, over at least `episodes` whole
    episodes of 256 envs (every finished episode counted: runs of many episodes a row, so the short ones
    do not crowd out the long)."""
    env = ocean.make(ENV, num_envs=256)
    env.reset(seed=check_seed(seed))
    rng = np.random.default_rng(seed)
    sums, count, steps = dict.fromkeys(ACHIEVEMENTS, 0.0), 0.0, 0
    while count < episodes or steps < 4000:
        _, _, _, _, infos = env.step(rng.integers(0, 17, env.num_agents).astype(np.int32))
        steps += 1
        for info in infos:
            n = info.get('n', 0)
            count += n
            for name in ACHIEVEMENTS:
                sums[name] += info.get(name, 0.0) * n
    env.close()
    return {name: sums[name] / count for name in ACHIEVEMENTS}, int(count)


def run_key(seed, steps):
    """Where a run is stored: the seed alone at Crafter's budget (as the first runs were), else seed@steps."""
    return str(seed) if steps == BUDGET else f'{seed}@{steps}'


def run_seed(seed, steps=None, flags=()):
    """Train one seed (for the config's budget, or `steps`) and check its final policy; the stored record."""
    start = time.time()
    budget = ['--train.total-timesteps', str(steps)] if steps else []
    config = configuration.load(ENV, ['--train.seed', str(seed), *budget, *flags])
    summary = training.train(ENV, config=config, quiet=True)
    seconds = time.time() - start
    means = evaluate.episode_means(ENV, summary['run_dir'], num_envs=CHECK_ENVS, per_env=CHECK_EPISODES,
                                   seed=check_seed(seed))
    rates = {name: float(means[name]) for name in ACHIEVEMENTS}
    return {'seed': seed, 'steps': config['train']['total_timesteps'], 'seconds': round(seconds, 1),
            'episodes': int(means['episodes']), 'episode_length': float(means['episode_length']),
            'score': crafter_score(rates), 'rates': rates}


def load():
    if not os.path.exists(RESULTS):
        return {'seeds': {}, 'random': None}
    with open(RESULTS) as f:
        return json.load(f)


def save(results):
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, 'w') as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write('\n')


def section(results):
    """The docs/baselines.md section from the stored results."""
    seeds = sorted(results['seeds'].values(), key=lambda s: (s['steps'], s['seed']))
    rand = results['random']
    pct = lambda v: f'{100.0 * v:.1f}'  # noqa: E731
    scores = [s['score'] for s in seeds if s['steps'] == BUDGET]
    label = lambda s: f'seed {s["seed"]}' + ('' if s['steps'] == BUDGET else f', {s["steps"]:,} steps')  # noqa: E731
    text = ['Crafter\'s benchmark (Hafner 2021): the Crafter score after 1M agent steps, '
            'S = exp(mean(ln(1 + s_i))) - 1 over the success rates s_i (percent of episodes) of the 22 '
            'achievements. Ours: `puffer_craftax` '
            '(Crafter\'s rules in C, a symbolic 9x7 view rather than the paper\'s 64x64 image) trained by '
            '`pufferlib/config/puffer_craftax.toml` (the default MLP, 256 rows, 1,000,000 steps), each final policy '
            f'played over {CHECK_ENVS} x {CHECK_EPISODES} whole episodes on other worlds than training\'s. '
            'The paper\'s agents see pixels; ours see the symbols, an easier input, so the comparison places '
            'the run rather than ranks the methods. Train s: wall seconds of the training run on a 2-core machine '
            'shared with other work (they vary with its load, not with the seed). Random actions: 256 envs, every '
            'episode finished in 4,000 or more steps.', '',
            'Reproduce: `for S in 0 1 2; do flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m '
            'lab.bench_craftax run --seed $S; done; .venv/bin/python -m lab.bench_craftax write`. The paper\'s long '
            'budget, 100M steps, adds `--steps 100000000` (7.5-21 hours of these two cores at the 1M runs\' rates; '
            'add `--train.device cuda` on a GPU)' + ('.' if any(s['steps'] > BUDGET for s in seeds) else
                                                    ': not run yet.'), '']
    rows = [[f'ours, {label(s)}', f'{s["score"]:.1f}', f'{s["episodes"]}', f'{s["episode_length"]:.0f}',
             f'{s["seconds"]:.0f}'] for s in seeds]
    if scores:
        rows.append(['ours, mean of seeds', f'{np.mean(scores):.1f} ± {np.std(scores):.1f}', '', '', ''])
    if rand:
        rows.append(['uniformly random actions, here', f'{rand["score"]:.1f}', f'{rand["episodes"]}', '', ''])
    rows += [[f'{name} (paper, 1M steps)', f'{value:.1f}', '', '', ''] for name, value in PAPER.items()]
    text.append(bd.markdown_table(['agent', 'Crafter score (%)', 'episodes', 'mean length', 'train s'], rows,
                                  'lrrrr'))
    text += ['', 'Success rates (% of episodes) per achievement:', '']
    header = ['achievement'] + [label(s) for s in seeds] + (['random'] if rand else [])
    table = [[name] + [pct(s['rates'][name]) for s in seeds] + ([pct(rand['rates'][name])] if rand else [])
             for name in ACHIEVEMENTS]
    text.append(bd.markdown_table(header, table, 'l' + 'r' * (len(header) - 1)))
    return '\n'.join(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    run = sub.add_parser('run', help='train and check one seed (and measure random actions once)')
    run.add_argument('--seed', type=int, required=True)
    run.add_argument('--steps', type=int, help=f'agent steps to train (default: the config\'s, {BUDGET:,})')
    sub.add_parser('write', help='write the section of docs/baselines.md from the stored results')
    args, flags = parser.parse_known_args(argv)
    if flags and args.command != 'run':
        parser.error(f'unrecognized arguments: {" ".join(flags)}')
    if args.command == 'run' and args.steps is not None and args.steps < 1:
        parser.error(f'--steps must be a positive number of agent steps, got {args.steps}')
    results = load()
    if args.command == 'run':
        record = run_seed(args.seed, args.steps, flags)
        key = run_key(args.seed, record['steps'])
        results['seeds'][key] = record
        if results['random'] is None:
            rates, episodes = random_rates(5000)
            results['random'] = {'rates': rates, 'episodes': episodes, 'score': crafter_score(rates)}
        save(results)
        print(json.dumps(results['seeds'][key]))
        return 0
    if not results['seeds']:
        parser.error(f'no stored runs in {os.path.relpath(RESULTS, ROOT)}: run `python -m lab.bench_craftax run '
                     '--seed S` first')
    text = section(results)
    print(text)
    bd.update_section('craftax', 'Crafter score: puffer_craftax after 1M steps', text, DOC)
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
