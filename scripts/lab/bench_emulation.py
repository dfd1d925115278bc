#!/usr/bin/env python
"""Emulation's cost per step: GymnasiumPufferEnv.step minus the wrapped env's own step, in CPU µs.

    .venv/bin/python -m lab.bench_emulation                     # this checkout, a table on stdout
    .venv/bin/python -m lab.bench_emulation --against REF --write
                      # this checkout and the emulation of git REF, interleaved; the table into
                      # scripts/lab/results/emulation.md

Three observation kinds: CartPole-v1 (float32 Box(4)), an Atari-like frame (uint8 Box(0, 255,
(210, 160, 3)), the same array every step) and a NetHack-shaped Dict (13 keys, mixed dtypes, several
integer Boxes narrower than their dtype, so every observation check has work to do). Each
measurement runs in a fresh process whose `pufferlib` is the tree measured (`--against` extracts
REF's package with `git archive`), so both sides time the same loop. A round measures every tree
once; the table gives the median over rounds of each round's fastest chunk (the least disturbed by
other load on the machine), the fastest round, and every round.
"""
import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from lab import RESULTS, ROOT, SCRIPTS

DOC = os.path.join(RESULTS, 'emulation.md')
ENVS = ('CartPole-v1', 'Atari-like frame', 'NetHack-like Dict')


def _make(name: str) -> Any:
    import gymnasium
    import numpy as np
    from gymnasium import spaces
    if name == 'CartPole-v1':
        return gymnasium.make('CartPole-v1')
    if name == 'NetHack-like Dict':
        from lab.synthetic_envs import NetHackLikeDict
        return NetHackLikeDict()

    class Frames(gymnasium.Env):
        observation_space = spaces.Box(0, 255, (210, 160, 3), np.uint8)
        action_space = spaces.Discrete(6)

        def __init__(self) -> None:
            self.frame = np.random.default_rng(0).integers(0, 256, (210, 160, 3), dtype=np.uint8)
            self.t = 0

        def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
            self.t = 0
            return self.frame, {}

        def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
            self.t += 1
            return self.frame, 0.0, False, self.t >= 1000, {}
    return Frames()


def _per_step(step: Callable[[], Any], steps: int, chunks: int) -> float:
    """CPU µs of this thread per call of step(), the fastest of `chunks` chunks. CPU time, not wall time:
    on a machine shared with other jobs, the time this process waits for a core is not the step's."""
    best = float('inf')
    for _ in range(chunks):
        start = time.thread_time()
        for _ in range(steps):
            step()
        best = min(best, (time.thread_time() - start) / steps)
    return best * 1e6


def worker(steps: int, chunks: int) -> None:
    """Print {env: [raw µs, emulated µs]} for the `pufferlib` this process imports."""
    import numpy as np
    from pufferlib.emulation import GymnasiumPufferEnv
    out = {}
    for name in ENVS:
        raw = _make(name)
        raw.reset(seed=0)

        def raw_step(env: Any = raw) -> None:
            # What the wrapper does around the env: reset when an episode ends.
            _, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                env.reset()
        emulated = GymnasiumPufferEnv(env=_make(name))
        emulated.reset(seed=0)
        emulated_step = functools.partial(emulated.step, np.zeros(1, np.int32))
        for fn in (raw_step, emulated_step):  # warm caches before timing
            _per_step(fn, steps // 10, 1)
        out[name] = [_per_step(raw_step, steps, chunks), _per_step(emulated_step, steps, chunks)]
    print(json.dumps(out))


def measure(tree: str, steps: int, chunks: int) -> dict[str, list[float]]:
    # The tree's `pufferlib` comes first on the path; the lab beside it, for this module.
    done = subprocess.run([sys.executable, '-m', 'lab.bench_emulation', '--worker', '--steps', str(steps),
                           '--chunks', str(chunks)], env={**os.environ, 'PYTHONPATH': tree + os.pathsep + SCRIPTS},
                          capture_output=True, text=True, timeout=600, cwd=tree)
    if done.returncode:
        sys.exit(f'bench_emulation: the measurement in {tree} failed:\n{done.stderr}')
    return json.loads(done.stdout.strip().splitlines()[-1])


def extract(ref: str, into: str) -> str:
    """The `pufferlib` package of git `ref`, unpacked under `into`; returns a short name for it."""
    name = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', ref], capture_output=True, text=True)
    if name.returncode:
        sys.exit(f'bench_emulation: {ref!r} is not a git revision of this repository')
    archive = subprocess.run(['git', '-C', ROOT, 'archive', ref, 'pufferlib'], capture_output=True, check=True)
    subprocess.run(['tar', '-x', '-C', into], input=archive.stdout, check=True)
    return name.stdout.strip()


def table(results: dict[str, dict[str, list[list[float]]]]) -> str:
    import statistics
    trees = list(results)
    header = ['observation', 'raw env step (µs)'] + [f'{tree}: emulation (µs)' for tree in trees]
    if len(trees) == 2:
        header.append('difference (µs)')
    header += [f'{tree}: fastest round (µs)' for tree in trees]  # the least disturbed by other load
    header.append('rounds: emulation (µs)')
    lines = ['| ' + ' | '.join(header) + ' |', '|---|' + '---:|' * (len(header) - 2) + '---|']
    for env in ENVS:
        raw = statistics.median(r[0] for tree in trees for r in results[tree][env])
        overheads = {tree: [r[1] - r[0] for r in results[tree][env]] for tree in trees}
        medians = {tree: statistics.median(values) for tree, values in overheads.items()}
        row = [env, f'{raw:.2f}'] + [f'{medians[tree]:.2f}' for tree in trees]
        if len(trees) == 2:
            row.append(f'{medians[trees[1]] - medians[trees[0]]:+.2f}')
        row += [f'{min(overheads[tree]):.2f}' for tree in trees]
        row.append('; '.join(f'{tree}: ' + ' '.join(f'{v:.2f}' for v in overheads[tree]) for tree in trees))
        lines.append('| ' + ' | '.join(row) + ' |')
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--against', metavar='REF', help='also measure the emulation of this git revision')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--steps', type=int, default=5000, help='steps per chunk (default 5000)')
    parser.add_argument('--chunks', type=int, default=5, help='chunks per measurement; the fastest counts')
    parser.add_argument('--write', action='store_true', help=f'write the table into {os.path.relpath(DOC, ROOT)}')
    parser.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.steps, args.chunks)
        return
    for name in ('rounds', 'steps', 'chunks'):
        if getattr(args, name) < 1:
            parser.error(f'--{name} must be at least 1')
    load = os.getloadavg()[0] if hasattr(os, 'getloadavg') else None
    with tempfile.TemporaryDirectory() as tmp:
        here = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True,
                              text=True).stdout.strip() or 'this checkout'
        dirty = subprocess.run(['git', '-C', ROOT, 'status', '--porcelain', 'pufferlib'], capture_output=True,
                               text=True).stdout.strip()
        trees = {}
        if args.against:
            trees[f'before ({extract(args.against, tmp)})'] = tmp
        trees[f'{"after " if args.against else ""}({here}{" + edits" if dirty else ""})'] = ROOT
        results: dict[str, dict[str, list[list[float]]]] = {name: {env: [] for env in ENVS} for name in trees}
        for r in range(args.rounds):
            for name, tree in trees.items():
                for env, figures in measure(tree, args.steps, args.chunks).items():
                    results[name][env].append(figures)
                print(f'round {r + 1}/{args.rounds} {name}: ' + ', '.join(
                    f'{env} {results[name][env][-1][1] - results[name][env][-1][0]:.2f} µs' for env in ENVS),
                    flush=True)
    text = table(results)
    print(text)
    if args.write:
        from lab import benchmark
        # Other jobs disturb even CPU-time figures (through the caches): the load says how busy the machine was.
        where = benchmark.machine([] if load is None else [f'load average {load:.1f} at the start'])
        body = f'Measured by `scripts/lab/bench_emulation.py {" ".join(sys.argv[1:])}` ({where}). '
        body += ('Emulation per step: GymnasiumPufferEnv.step minus the raw env\'s step (with its reset when an '
                 'episode ends), in CPU time of the stepping thread, the median over rounds of each round\'s '
                 'fastest chunk of '
                 f'{args.steps} steps; each tree measured in its own process, interleaved.\n\n{text}')
        path = benchmark.update_section('emulation', 'Emulation cost per step', body, DOC)
        print(f'wrote {os.path.relpath(path, ROOT)}')


if __name__ == '__main__':
    main()
