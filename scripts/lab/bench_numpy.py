#!/usr/bin/env python
"""The policy's paths on MuJoCo's recipe, one core: a training run through NumPy against the same run through
torch (`train.numpy_policy`, pufferlib/numpy_policy.py), and the update alone three ways: eager torch, torch
with `train.compile` (the policy's forward and the loss one compiled graph, its backward compiled with it)
and NumPy, each with the trainer's fused Adam step.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_numpy
    .venv/bin/python -m lab.bench_numpy --quick          # one short round, no doc update

Each run is the command users run, `puffer train mujoco_walker2d --profile --quiet --vec.backend Serial
--train.torch-threads 1 --train.numpy-policy true|false --train.total-timesteps N` (the family's recipe
otherwise: 8 envs x 256 steps, 10 epochs of minibatches of 64), pinned to one core, in a scratch
experiments folder; the figures are read from the profile.json it writes. The update's three ways are Trainers
built in this process on the same recipe and core (one torch thread), each timing `Trainer.update()` (320
minibatches of 64) after a rollout of its own; compiling happens in a warm-up update before the first round.
Every round measures every contender once, in order (NumPy run, torch run, then the three updates), so a slow
stretch of this shared machine hits all alike. It prints the medians and every round, and writes
scripts/lab/results/numpy.md. Needs the mujoco extra.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, cast

from lab import RESULTS, ROOT
from lab import benchmark as bd

LOG = os.path.join(RESULTS, 'numpy.md')
ENV = 'mujoco_walker2d'
PATHS = {'NumPy': 'true', 'torch': 'false'}
UPDATE = ('update_forward', 'backward', 'optimizer')  # the profile's phases of the update
# The update's three ways: flags over the recipe (the NumPy path is the recipe's default on a CPU).
UPDATES = {'torch': ['--train.numpy-policy', 'false'],
           'torch.compile': ['--train.numpy-policy', 'false', '--train.compile', 'true'],
           'NumPy': []}
COMMAND = 'flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_numpy'


def one_core() -> int:
    """The last core this process may use (the first is where the shell and other jobs tend to run)."""
    return sorted(os.sched_getaffinity(0))[-1]


def train(path: str, steps: int, core: int) -> dict:
    """One training run through `path`; its profile.json."""
    command = [sys.executable, '-m', 'pufferlib.cli', 'train', ENV, '--profile', '--quiet', '--train.seed', '1',
               '--vec.backend', 'Serial', '--train.torch-threads', '1', '--train.numpy-policy', PATHS[path],
               '--train.total-timesteps', str(steps), '--train.checkpoint-interval', '1000000']
    scratch = tempfile.mkdtemp(prefix='puffer-bench-update-')
    env = {**os.environ, 'PUFFER_EXPERIMENTS': scratch, 'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1',
           'OPENBLAS_NUM_THREADS': '1'}
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT,
                              preexec_fn=lambda: os.sched_setaffinity(0, {core}))
        if done.returncode != 0:
            raise bd.PeerError(f'`{" ".join(command[1:])}` failed (exit {done.returncode}):\n{done.stdout[-1500:]}'
                               f'{done.stderr[-1500:]}')
        (run,) = os.listdir(scratch)
        with open(os.path.join(scratch, run, 'profile.json')) as f:
            report = json.load(f)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    minibatches = report['epochs'] * 320  # 2048 steps / 64 a minibatch x 10 epochs
    report['update_ms'] = 1e3 * sum(report['phases'][p]['seconds'] for p in UPDATE) / minibatches
    report['act_us'] = 1e6 * report['phases']['rollout_forward']['seconds'] / (report['steps'] / 8)  # 8 envs
    print(f'  {path}: {report["steps_per_s"]:,.0f} steps/s, rollout step {report["act_us"]:.0f} us, update '
          f'{report["update_ms"]:.2f} ms a minibatch', file=sys.stderr, flush=True)
    return report


class UpdateTimer:
    """The update three ways (UPDATES), on Trainers built once in this process, pinned to `core`."""

    def __init__(self, core: int, updates: int) -> None:
        self.core, self.updates = core, updates
        self.trainers: dict[str, Any] = {}

    def trainer(self, way: str) -> Any:
        import torch

        from pufferlib import config as configuration
        from pufferlib import vector
        from pufferlib.models import make_policy
        from pufferlib.trainer import Trainer
        if way not in self.trainers:
            config = configuration.load(ENV, ['--vec.backend', 'Serial', '--train.torch-threads', '1',
                                              '--train.seed', '1', '--train.total-timesteps', '100_000_000',
                                              *UPDATES[way]])
            torch.manual_seed(1)
            vecenv = vector.from_config(ENV, config['vec'], seed=1, env_kwargs=config['env'])
            self.trainers[way] = trainer = Trainer(config, vecenv, make_policy(vecenv, config))
            trainer.rollout()
            trainer.update()  # warm-up: torch.compile compiles here
        return self.trainers[way]

    def __call__(self, way: str) -> float:
        """ms a minibatch of `updates` updates, each after a rollout (not timed)."""
        import torch
        os.sched_setaffinity(0, {self.core})
        torch.set_num_threads(1)
        trainer, seconds = self.trainer(way), 0.0
        for _ in range(self.updates):
            trainer.rollout()
            start = time.perf_counter()
            trainer.update()
            seconds += time.perf_counter() - start
        ms = 1e3 * seconds / (self.updates * 320)
        print(f'  update {way}: {ms:.2f} ms a minibatch', file=sys.stderr, flush=True)
        return ms

    def close(self) -> None:
        for trainer in self.trainers.values():
            trainer.close()


def update_table(runs: dict[str, list[float]]) -> str:
    numpy_ms = bd.median(runs['NumPy'])
    rows = [[way, f'{bd.median(runs[way]):.2f}', bd.runs_cell(runs[way], lambda v: f'{v:.2f}'),
             bd.ratio_cell(bd.ratio(bd.median(runs[way]), numpy_ms))] for way in UPDATES]
    return bd.markdown_table(['update', 'ms a minibatch', 'rounds', 'its time / NumPy\'s'], rows)


def section(reports: dict[str, list[dict]], updates: dict[str, list[float]], steps: int, where: str) -> str:
    def med(path: str, key: str) -> float:
        return bd.median([r[key] for r in reports[path]])

    def cells(path: str, key: str, fmt: Any) -> list[str]:
        return [fmt(med(path, key)), bd.runs_cell([r[key] for r in reports[path]], fmt)]

    def ms(v: float) -> str:
        return f'{v:.2f}'

    def us(v: float) -> str:
        return f'{v:.0f}'

    rows = [[path, *cells(path, 'steps_per_s', bd.si), *cells(path, 'act_us', us), *cells(path, 'update_ms', ms)]
            for path in PATHS]
    ratios = [bd.ratio(med('NumPy', key), med('torch', key)) for key in ('steps_per_s', 'act_us', 'update_ms')]
    rows.append(['NumPy / torch', *[cell for r in ratios for cell in (bd.ratio_cell(r), '')]])
    table = bd.markdown_table(['path', 'steps/s', 'rounds', 'rollout step (us, 8 rows)', 'rounds',
                               'update (ms a minibatch)', 'rounds'], rows)
    return '\n'.join([
        f'Written by `scripts/lab/bench_numpy.py` (do not edit by hand). Reproduce: `{COMMAND}`.', '',
        f'Measured: {where}. {len(reports["NumPy"])} interleaved rounds of {steps:,} steps each way; medians.',
        f'`puffer train {ENV}` (the MuJoCo recipe: 8 envs x 256 steps, 10 epochs of minibatches of 64; actor 64 '
        'wide, critic 256) on one core, the envs stepped in the trainer\'s process. "Rollout step" is the profile\'s '
        'rollout forward phase over the run\'s 256 steps of 8 rows an epoch; "update" its update forward, backward '
        'and optimizer phases over the 320 minibatches an epoch.', '',
        table, '',
        'The update alone (`Trainer.update()` on the same recipe, one torch thread; each way times its own updates, '
        'one after each of its rollouts; `torch.compile` after a warm-up update that compiled it):', '',
        update_table(updates), ''])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--epochs', type=int, default=20, help='epochs per training run (2,048 steps each)')
    parser.add_argument('--repeats', type=int, default=5, help='interleaved rounds; medians are reported')
    parser.add_argument('--updates', type=int, default=3, help='updates timed per way and round (320 minibatches each)')
    parser.add_argument('--quick', action='store_true', help='one round of 3 epochs, no doc update')
    parser.add_argument('--no-write', action='store_true', help='print only; leave scripts/lab/results/numpy.md alone')
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs, args.repeats, args.updates, args.no_write = 3, 1, 1, True
    if args.repeats < 1 or args.epochs < 1 or args.updates < 1:
        parser.error('--repeats, --epochs and --updates must be at least 1')
    try:
        import mujoco  # noqa: F401
    except ImportError:
        raise bd.PeerError('needs the mujoco extra: pip install -c constraints.txt -e ".[mujoco]"') from None
    import torch
    core, steps = one_core(), args.epochs * 2048
    where = bd.machine([f'torch {torch.__version__}', f'one core (#{core}) a run'])
    timer = UpdateTimer(core, args.updates)
    ways = {f'update {way}': way for way in UPDATES}
    try:
        # A training run's figure is its profile (a dict), an update's its ms a minibatch.
        runs: dict[str, list[Any]] = bd.interleaved(
            [*PATHS, *ways], args.repeats,
            lambda name: timer(ways[name]) if name in ways else cast(float, train(name, steps, core)))
    finally:
        timer.close()
    reports = {path: runs[path] for path in PATHS}
    text = section(reports, {way: runs[name] for name, way in ways.items()}, steps, where)
    print(text)
    if not args.no_write:
        path = bd.update_section('numpy', 'The NumPy path against torch (MuJoCo, one core)', text, LOG)
        print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
