#!/usr/bin/env python
"""Arena throughput: rows split among 8 frozen opponent policies against the same env with one.

    nice -n 5 flock /tmp/puffer-bench.lock .venv/bin/python -m lab.bench_arena [--games 4096] [--rounds 5]

The learner's rows are played by a network too (the inference a trainer's rollout does), the other
rows by the pool. Configurations, measured interleaved (one run of each per round, --seconds each):
  1 policy          one opponent network
  8 stacked         eight networks of one architecture, one vmapped forward pass (the default)
  8 per-policy      the same eight, one forward pass per policy (stack=False)
Env steps per second are games stepped per second (each step moves every game by one row's turn);
the table gives medians over the rounds and the ratio to `1 policy` of the same env (target >= 0.8).
torch runs on one thread so the two cores of the shared box are not fought over.
"""
import argparse
import statistics
import sys
import time

import torch

from pufferlib import registry
from pufferlib.arena import Arena, NetworkPlayer
from pufferlib.models import Default

ENVS = {'puffer_connect4': {'two_player': True}, 'puffer_leduc': {}}


def measure(arena, learner, seconds):
    arena.async_reset(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        obs, _, _, _, _, _, _ = arena.recv()
        arena.send(learner.act(obs, arena.action_masks))
        steps += 1
    return steps * arena.games / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--games', type=int, default=4096)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--seconds', type=float, default=2.0)
    parser.add_argument('--hidden', type=int, default=128, help='hidden size of every network (the default policy)')
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lines = [f'Arena steps/s (games x steps per second), {args.games} games, hidden {args.hidden}, median of '
             f'{args.rounds} interleaved rounds of {args.seconds:g} s:', '',
             '| env | opponents | steps/s | ratio to 1 policy | rounds |', '|---|---|---:|---:|---|']
    for env_name, options in ENVS.items():
        arena = Arena(registry.make(env_name, num_envs=args.games, **options), seed=0)
        learner = NetworkPlayer(Default(arena, hidden_size=args.hidden), name='learner')
        pool = [NetworkPlayer(Default(arena, hidden_size=args.hidden), name=f'p{i}') for i in range(8)]
        configs = {'1 policy': (pool[:1], True), '8 stacked': (pool, True), '8 per-policy': (pool, False)}
        rates = {name: [] for name in configs}
        for _ in range(args.rounds):
            for name, (players, stack) in configs.items():
                arena.set_opponents(players, stack=stack)
                rates[name].append(measure(arena, learner, args.seconds))
        base = statistics.median(rates['1 policy'])
        for name, values in rates.items():
            median = statistics.median(values)
            lines.append(f'| {env_name} | {name} | {median / 1e3:,.0f} k | {median / base:.2f} | '
                         + ', '.join(f'{v / 1e3:.0f}k' for v in values) + ' |')
        arena.close()
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
