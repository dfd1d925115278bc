"""How close one PPO response comes to an exact best response as it trains (scripts/lab/results/league.md, "What limits
our PSRO"). A population is made by `--population` iterations of our PSRO with the env's settings (kept
in --cache for the next run), then one response trains against its meta-strategy for --steps PPO steps in
one run (one learning-rate schedule) while its exact gain against the meta-strategy, and its argmax
version's, is measured every --every epochs, next to what an exact best response gains (the
meta-strategy's exploitability in the symmetric meta-game). Config flags after the options change the
response's settings (not the population's):

    .venv/bin/python -m lab.research.psro_response_curve --game leduc --population 8 --steps 2000000 \\
        [--train.ent-coef 0 ...]
"""
import argparse
import copy
import os
import tempfile
import time

import numpy as np
import torch

from pufferlib import league
from pufferlib.arena import NetworkPlayer
from pufferlib.trainer import Trainer


def population(env, size, cache, root):
    """(state dicts, meta-strategy) after `size` iterations of our PSRO with the env's settings."""
    if cache and os.path.exists(cache):
        saved = torch.load(cache, weights_only=False)
        return saved['states'], np.asarray(saved['weights'])
    run = league.League(league.create(env, ['--league.iterations', str(size + 1)], root=root))
    run.run(printer=None)
    states, weights = [league.policy_state(n) for n in run.networks], np.asarray(run.output)
    if cache:
        torch.save({'states': states, 'weights': weights}, cache)
    return states, weights


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--game', default='leduc', choices=['kuhn', 'leduc'])
    parser.add_argument('--population', type=int, default=8, help='PSRO iterations that make the population')
    parser.add_argument('--cache', default='', help='file keeping the population between runs (default: none)')
    parser.add_argument('--steps', type=int, default=2_000_000)
    parser.add_argument('--every', type=int, default=8, help='epochs between measurements')
    args, flags = parser.parse_known_args()
    torch.set_num_threads(1)
    env = f'puffer_{args.game}'
    with tempfile.TemporaryDirectory() as root:
        states, weights = population(env, args.population, args.cache, root)
        run = league.League(league.create(env, ['--league.iterations', '1000000', *flags], root=root))
        run.open()
        run.names = [f'p{k:03d}' for k in range(len(states))]
        run.networks = [league.network_from_state(run.config, run.arena, s) for s in states]
        tree = league.game_tree(env)
        tables = np.stack([tree.tabulate(NetworkPlayer(n).probabilities) for n in run.networks])
        exact = run.exploitability(run.names, run.networks, weights)
        config = {section: dict(values) for section, values in run.config.items()}
        config['train']['total_timesteps'] = args.steps
        config['train']['seed'] = config['league']['seed'] + len(states)
        arena = league.League.open_env(env, config, config['league']['num_envs'])
        network = league.network_from_state(config, arena, run.response_start(len(states)))
        torch.manual_seed(config['train']['seed'])
        keep = np.flatnonzero(weights > 0)
        arena.set_opponents([NetworkPlayer(copy.deepcopy(run.networks[k]), name=str(k)) for k in keep],
                            weights[keep] / weights[keep].sum())
        network.train()
        trainer = Trainer(config, arena, network, env_name=env)
        print(f'exact best response gains {exact:.4f} against the meta-strategy of {len(states)} policies')
        print('| PPO steps | CPU s | response gains | of the exact | greedy response gains | mean entropy |')
        print('|---:|---:|---:|---:|---:|---:|')
        cpu = 0.0
        while trainer.epoch < trainer.total_epochs:
            start = time.process_time()
            trainer.rollout()
            trainer.update()
            cpu += time.process_time() - start
            if trainer.epoch % args.every and trainer.epoch < trainer.total_epochs:
                continue
            table = tree.tabulate(NetworkPlayer(copy.deepcopy(network)).probabilities)
            greedy = (table == table.max(1, keepdims=True)).astype(np.float64)
            greedy /= greedy.sum(1, keepdims=True)
            gain, greedy_gain = (float(tree.payoffs(t[None], tables)[0] @ weights) for t in (table, greedy))
            entropy = float(-(table * np.log(np.where(table > 0, table, 1.0))).sum(1).mean())
            print(f'| {trainer.global_step:,} | {cpu:.1f} | {gain:.4f} | {gain / exact:.0%} | {greedy_gain:.4f} '
                  f'| {entropy:.3f} |', flush=True)
        arena.close()
        run.close()


if __name__ == '__main__':
    main()
