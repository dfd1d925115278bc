#!/usr/bin/env python
"""Training throughput: agent steps per second of the whole loop (rollout + update), this machine.

    scripts/bench_train.py              # Ocean envs + CartPole vs SB3 PPO, updates docs/benchmarks.md
    scripts/bench_train.py --no-write

Ocean envs use their default configs. The peer, measured in the same run, is Stable-Baselines3
PPO on CartPole-v1 with the same rollout and update shape as ours (8 envs, 64-step rollouts,
4 epochs of 128-sample minibatches, MLP 64x64 vs our default 128-wide encoder).
"""
import argparse
import os
import platform
import sys
import time

import torch

from pufferlib import config as configuration
from pufferlib import trainer as training

from benchdoc import update_section

OCEAN = ['puffer_squared', 'puffer_pong', 'puffer_breakout', 'puffer_snake']


def ours(env, steps, flags=()):
    config = configuration.load(env, ['--train.total-timesteps', str(steps), '--train.log-interval', '1e9',
                                      '--train.checkpoint-interval', '1000000', *flags])
    start = time.time()
    summary = training.train(env, config=config, quiet=True)
    return summary['global_step'] / (time.time() - start)


def sb3_cartpole(steps):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    envs = make_vec_env('CartPole-v1', n_envs=8)
    model = PPO('MlpPolicy', envs, n_steps=64, batch_size=128, n_epochs=4, device='cpu', verbose=0)
    start = time.time()
    model.learn(total_timesteps=steps)
    sps = model.num_timesteps / (time.time() - start)
    envs.close()
    return sps


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--ocean-steps', type=int, default=4_000_000)
    parser.add_argument('--cartpole-steps', type=int, default=100_000)
    parser.add_argument('--no-write', action='store_true')
    args = parser.parse_args()
    os.environ.setdefault('PUFFER_EXPERIMENTS', '/tmp/puffer-bench-train')
    rows = []
    for env in OCEAN:
        sps = ours(env, args.ocean_steps)
        rows.append((env, 'pufferlib (default config)', sps, None))
        print(f'  {env:<16} {sps:>12,.0f}', flush=True)
    ours_cartpole = ours('CartPole-v1', args.cartpole_steps)
    sb3 = sb3_cartpole(args.cartpole_steps)
    rows.append(('CartPole-v1', 'pufferlib (gymnasium config)', ours_cartpole, ours_cartpole / sb3))
    rows.append(('CartPole-v1', 'SB3 PPO, same shape', sb3, 1.0))
    print(f'  CartPole-v1 ours {ours_cartpole:,.0f} vs SB3 {sb3:,.0f}', flush=True)

    lines = [f'Whole training loop (rollout + PPO update), CPU only: {platform.processor() or platform.machine()}, '
             f'{os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads). Ocean envs run '
             f'{args.ocean_steps:,} steps with their default config; CartPole {args.cartpole_steps:,} steps. '
             'Reproduce: `.venv/bin/python scripts/bench_train.py`.', '',
             '| env | trainer | steps/s | vs SB3 PPO |', '|---|---|---:|---:|']
    for env, who, sps, ratio in rows:
        lines.append(f'| {env} | {who} | {sps:,.0f} | {f"{ratio:.1f}x" if ratio else "-"} |')
    lines.append('\nGPU figures (breakout and pong on an H100, target 1M steps/s) need a GPU machine; none '
                 'was lent to the session that wrote this table.')
    text = '\n'.join(lines)
    print('\n' + text)
    if not args.no_write:
        update_section('training', 'Training throughput', text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
