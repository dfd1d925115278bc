"""Our training loop's steps/s at two checkouts of this repository, interleaved in one sitting.

A restructure that moves code but should not change what runs (the trainer split from its job, the
vector and emulation packages) is checked with it: each checkout trains the same envs, alternately,
and the last metrics row's steps/s is compared. Each checkout needs its own venv (`PUFFER_VENV=DIR/.venv
bash scripts/test --co -q` in it makes one).

    .venv/bin/python -m lab.research.speed_before_after BEFORE_DIR AFTER_DIR [--rounds 3] [--write]

--write puts the table into scripts/lab/results/restructure.md.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import tempfile

from lab import RESULTS

RUNS = [('puffer_breakout', 3_000_000), ('puffer_squared', 3_000_000), ('CartPole-v1', 400_000)]
DOC = os.path.join(RESULTS, 'restructure.md')


def steps_per_second(tree: str, env: str, steps: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        environ = {**os.environ, 'PUFFER_EXPERIMENTS': tmp, 'WANDB_MODE': 'disabled'}
        subprocess.run([os.path.join(tree, '.venv', 'bin', 'python'), '-m', 'pufferlib.cli', 'train', env,
                        '--train.total-timesteps', str(steps), '--quiet'], cwd=tree, env=environ, check=True,
                       capture_output=True, timeout=900)
        [run] = os.listdir(tmp)
        with open(os.path.join(tmp, run, 'metrics.jsonl')) as f:
            return json.loads(f.readlines()[-1])['sps']


def revision(tree: str) -> str:
    return subprocess.run(['git', '-C', tree, 'rev-parse', '--short', 'HEAD'], capture_output=True,
                          text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('before')
    parser.add_argument('after')
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--write', action='store_true')
    args = parser.parse_args()
    trees = {f'before ({revision(args.before)})': args.before, f'after ({revision(args.after)})': args.after}
    results: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for env, steps in RUNS:
            for name, tree in trees.items():
                sps = steps_per_second(tree, env, steps)
                results.setdefault((env, name), []).append(sps)
                print(f'round {r} {env:16s} {name:20s} {sps:,.0f} steps/s', flush=True)
    before, after = trees
    lines = [f'| env | {before}: median steps/s | {after} | after / before | rounds (before; after) |',
             '|---|---:|---:|---:|---|']
    for env, _ in RUNS:
        b, a = results[(env, before)], results[(env, after)]
        rounds = f'{" ".join(f"{x / 1e3:.0f}k" for x in b)}; {" ".join(f"{x / 1e3:.0f}k" for x in a)}'
        lines.append(f'| {env} | {statistics.median(b):,.0f} | {statistics.median(a):,.0f} | '
                     f'{statistics.median(a) / statistics.median(b):.2f}x | {rounds} |')
    table = '\n'.join(lines)
    print('\n' + table)
    if args.write:
        with open(DOC, 'w') as f:
            f.write(f'# The restructure, before and after\n\nOur training loop (`puffer train ENV` with its '
                    f'defaults, the last metrics row\'s steps/s) at two checkouts, {args.rounds} interleaved rounds, '
                    f'{datetime.date.today()}, {os.cpu_count()} cores. Written by '
                    f'`python -m lab.research.speed_before_after BEFORE AFTER --write`.\n\n{table}\n')


if __name__ == '__main__':
    main()
