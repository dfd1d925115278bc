"""Our training loop's steps/s, and Ocean envs' raw steps/s, at two checkouts of this repository,
interleaved in one sitting.

A restructure that moves code but should not change what runs (the trainer split from its job, the
vector and emulation packages, the lab out of the package) is checked with it: each checkout trains the
same envs, alternately, and the last metrics row's steps/s is compared; each checkout's `puffer bench`
times the same Ocean envs on one core. Each checkout needs its own venv (`PUFFER_VENV=DIR/.venv
bash scripts/test --co -q` in it makes one).

    .venv/bin/python -m lab.research.speed_before_after BEFORE_DIR AFTER_DIR [--rounds 3] [--write]

--write puts the table into scripts/lab/results/restructure.md, as a section of its own per pair of
revisions (earlier comparisons stay).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import tempfile

from lab import RESULTS
from lab.benchmark import update_section

RUNS = [('puffer_breakout', 3_000_000), ('puffer_squared', 3_000_000), ('CartPole-v1', 400_000)]
BENCH = ['puffer_breakout', 'puffer_snake', 'puffer_go']  # `puffer bench`: the C step alone, random actions
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


def bench_steps_per_second(tree: str, env: str) -> float:
    """`puffer bench ENV`: the env's agent steps/s on one core with random actions."""
    done = subprocess.run([os.path.join(tree, '.venv', 'bin', 'python'), '-m', 'pufferlib.cli', 'bench', env,
                           '--seconds', '2'], cwd=tree, capture_output=True, text=True, check=True, timeout=300)
    return float(done.stdout.splitlines()[-1].split()[1]) * 1e6  # "puffer_go   17.30 M steps/s  (1 core, ...)"


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
    measures = [(env, f'train {env}', lambda tree, env=env, steps=steps: steps_per_second(tree, env, steps))
                for env, steps in RUNS]
    measures += [(env, f'bench {env}', lambda tree, env=env: bench_steps_per_second(tree, env)) for env in BENCH]
    for r in range(args.rounds):
        for _, label, measure in measures:
            for name, tree in trees.items():
                sps = measure(tree)
                results.setdefault((label, name), []).append(sps)
                print(f'round {r} {label:22s} {name:20s} {sps:,.0f} steps/s', flush=True)
    before, after = trees
    lines = [f'| what | {before}: median steps/s | {after} | after / before | rounds (before; after) |',
             '|---|---:|---:|---:|---|']
    for _, label, _ in measures:
        b, a = results[(label, before)], results[(label, after)]
        rounds = f'{" ".join(f"{x / 1e3:,.0f}k" for x in b)}; {" ".join(f"{x / 1e3:,.0f}k" for x in a)}'
        lines.append(f'| {label} | {statistics.median(b):,.0f} | {statistics.median(a):,.0f} | '
                     f'{statistics.median(a) / statistics.median(b):.2f}x | {rounds} |')
    table = '\n'.join(lines)
    print('\n' + table)
    if args.write:
        revisions = [revision(args.before), revision(args.after)]
        text = (f'`train ENV`: our training loop (`puffer train ENV` with its defaults, the last metrics row\'s '
                f'steps/s); `bench ENV`: `puffer bench ENV`, the C step alone on one core. {args.rounds} interleaved '
                f'rounds, {datetime.date.today()}, {os.cpu_count()} cores. Written by '
                f'`python -m lab.research.speed_before_after BEFORE AFTER --write`.\n\n{table}')
        update_section(f'restructure-{revisions[0]}-{revisions[1]}', f'{revisions[0]} against {revisions[1]}', text,
                       DOC)


if __name__ == '__main__':
    main()
