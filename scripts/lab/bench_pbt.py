"""PBT against the same budget spent three other ways: the defaults, a Protein sweep, and Ray Tune's PBT.

    python -m lab.bench_pbt                                   # puffer_squared, seeds 0 1 2, prints the table
    python -m lab.bench_pbt --write-docs                      # ... and writes docs/baselines.md's PBT section

Every method gets the same budget of agent steps (`--budget`, over all of its runs) and the same space (the
env's [sweep] tables):
- defaults: one `puffer train` run of the whole budget with the configured values;
- sweep: `puffer sweep` (Protein), `--population` trials of budget / population steps, two at a time;
- pbt: `puffer pbt`, `--population` members of budget / population steps in `--rounds` rounds;
- tune: Ray Tune's PopulationBasedTraining over the same trainer: each trial trains its run directory with
  `pufferlib.train.train(resume=..., until_step=...)` a round at a time, Tune's checkpoints are the run's
  checkpoint files, and its mutations are the same keys and ranges (Tune resamples or multiplies by 0.8 / 1.2,
  as ours does); on a local Ray of 2 CPUs.
A method's score is that of its best run: the mean of the metric over the rows of the last tenth of its steps
(a population picks its best member after the fact, as a user would; the defaults have one run).
Wall time is the method's own, start to end, on this machine. Ray Tune needs `pip install "ray[tune]"`
(pandas, pyarrow, tensorboardX; pinned in constraints.txt).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from lab.benchmark import machine, update_section

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'docs',
                   'baselines.md')
METHODS = ('defaults', 'sweep', 'pbt', 'tune')
TAIL = 0.1  # the last tenth of a run's steps: its final score


def tail_score(run_dir: str, metric: str) -> float | None:
    """The mean metric over the rows of the last tenth of the run's steps (None without any)."""
    try:
        rows = [json.loads(line) for line in open(os.path.join(run_dir, 'metrics.jsonl'))]
    except OSError:
        return None
    rows = [r for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
    if not rows:
        return None
    last = rows[-1]['global_step']
    tail = [r[metric] for r in rows if r['global_step'] >= (1 - TAIL) * last]
    return float(np.mean(tail))


def runs_under(folder: str) -> list[str]:
    return [root for root, _, files in os.walk(folder) if 'metrics.jsonl' in files]


def puffer(*args: str, env: dict[str, str] | None = None) -> None:
    out = subprocess.run([sys.executable, '-m', 'pufferlib.cli', *args], capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f'puffer {" ".join(args[:2])} failed:\n{out.stderr[-2000:]}')


def common(args: argparse.Namespace, seed: int, steps: int) -> list[str]:
    return ['--train.total-timesteps', str(steps), '--train.seed', str(seed), '--train.log-interval', '0.5',
            *args.flags]


def run_defaults(args: argparse.Namespace, seed: int, folder: str) -> None:
    puffer('train', args.env, *common(args, seed, args.budget), '--quiet', env={'PUFFER_EXPERIMENTS': folder})


def run_sweep(args: argparse.Namespace, seed: int, folder: str) -> None:
    puffer('sweep', args.env, *common(args, seed, args.budget // args.population), '--sweep.max-trials',
           str(args.population), '--sweep.parallel', '2', '--sweep.seed', str(seed), '--sweep.confirm-seeds', '0',
           '--sweep.metric', args.metric, '--quiet', env={'PUFFER_EXPERIMENTS': folder})


def run_pbt(args: argparse.Namespace, seed: int, folder: str) -> None:
    steps = args.budget // args.population
    puffer('pbt', args.env, *common(args, seed, steps), '--pbt.population', str(args.population),
           '--pbt.interval', str(steps // args.rounds), '--pbt.seed', str(seed), '--pbt.metric', args.metric,
           '--quiet', env={'PUFFER_EXPERIMENTS': folder})


def run_tune(args: argparse.Namespace, seed: int, folder: str) -> None:
    """Ray Tune's PopulationBasedTraining driving pufferlib.train in rounds (see the module docstring)."""
    import ray
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining

    from pufferlib import config as configuration
    from pufferlib import pbt as ours

    steps = args.budget // args.population
    interval = steps // args.rounds
    base = configuration.load(args.env, common(args, seed, steps))
    space, _ = ours.population_space(base)
    rng = np.random.default_rng(seed)

    def draw(p: Any) -> Any:
        return lambda: p.value(rng.uniform(-1, 1))

    env_name, metric = args.env, args.metric
    runs = os.path.join(folder, 'tune-runs')

    class Member(tune.Trainable):  # type: ignore[misc]
        def setup(self, config: dict) -> None:
            self.run_dir = os.path.join(runs, f'{self.trial_id}-{time.time_ns()}')
            os.makedirs(os.path.join(self.run_dir, 'checkpoints'))
            self.round = 0
            self.write(config)

        def write(self, config: dict) -> None:
            # Tune multiplies a callable mutation's value by 0.8 or 1.2 without bounds (gamma 0.995 x 1.2 = 1.19,
            # which no run can train with): brought back into the key's range, as ours keeps it.
            values = {p.name: p.value(p.normalize(config[p.name])) for p in space.params}
            member = space.apply({k: v for k, v in base.items() if k not in ('sweep', 'pbt')}, values)
            text = f'[_meta]\nenv = "{env_name}"\n\n' + configuration.to_toml(member)
            with open(os.path.join(self.run_dir, 'config.toml'), 'w') as f:
                f.write(text)

        def step(self) -> dict:
            from pufferlib import train
            start = self.round * interval
            self.round += 1
            train.train(None, resume=self.run_dir, quiet=True, until_step=self.round * interval)
            rows = [json.loads(line) for line in open(os.path.join(self.run_dir, 'metrics.jsonl'))]
            middle = start + interval / 2
            late = [r[metric] for r in rows if r['global_step'] > middle and metric in r]
            return {'score': float(np.mean(late)) if late else -1e9, 'done': self.round >= args.rounds}

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            # None: Tune then hands load_checkpoint this folder (a dict returned would be all it kept)
            newest = sorted(os.listdir(os.path.join(self.run_dir, 'checkpoints')))[-1]
            shutil.copy(os.path.join(self.run_dir, 'checkpoints', newest), checkpoint_dir)

        def load_checkpoint(self, checkpoint: Any) -> None:
            folder_ = checkpoint if isinstance(checkpoint, str) else checkpoint.path
            names = [n for n in os.listdir(folder_) if n.startswith('epoch-')]
            target = os.path.join(self.run_dir, 'checkpoints')
            for old in os.listdir(target):
                os.remove(os.path.join(target, old))
            shutil.copy(os.path.join(folder_, names[0]), target)
            import torch
            step = torch.load(os.path.join(target, names[0]), weights_only=True)['global_step']
            self.round = int(np.ceil(step / interval))

        def reset_config(self, new_config: dict) -> bool:
            self.write(new_config)
            return True

    scheduler = PopulationBasedTraining(
        time_attr='training_iteration', perturbation_interval=1, quantile_fraction=0.25, resample_probability=0.25,
        hyperparam_mutations={p.name: draw(p) for p in space.params})
    random.seed(seed)  # Tune's PBT draws who copies whom and its factors from Python's generator
    ray.init(address='local', num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={'env_vars': {'PYTHONPATH': os.environ.get('PYTHONPATH', '')}})
    try:
        tuner = tune.Tuner(
            tune.with_resources(Member, {'cpu': 1}),
            # the first members drawn around the configured values, as ours are
            param_space={p.name: tune.sample_from(lambda _, p=p: p.value(p.centre + rng.normal(0, 0.5)))
                         for p in space.params},
            tune_config=tune.TuneConfig(scheduler=scheduler, metric='score', mode='max', num_samples=args.population,
                                        reuse_actors=False),
            run_config=tune.RunConfig(storage_path=os.path.join(folder, 'tune'), verbose=0,
                                      checkpoint_config=tune.CheckpointConfig(num_to_keep=4)))
        tuner.fit()
    finally:
        ray.shutdown()


RUNNERS = {'defaults': run_defaults, 'sweep': run_sweep, 'pbt': run_pbt, 'tune': run_tune}


def measure(args: argparse.Namespace, method: str, seed: int) -> dict[str, Any]:
    folder = tempfile.mkdtemp(prefix=f'bench-pbt-{method}-')
    start = time.time()
    RUNNERS[method](args, seed, folder)
    seconds = time.time() - start
    scores = [s for s in (tail_score(d, args.metric) for d in runs_under(folder)) if s is not None]
    shutil.rmtree(folder, ignore_errors=True)
    return {'method': method, 'seed': seed, 'score': max(scores) if scores else None, 'seconds': seconds,
            'runs': len(scores)}


def table(args: argparse.Namespace, results: list[dict[str, Any]]) -> str:
    lines = [f'| method | final {args.metric} per seed | mean | wall time (s), mean | score / defaults\' | '
             'time / defaults\' |', '|---|---|---:|---:|---:|---:|']
    means: dict[str, tuple[float, float]] = {}
    for method in args.methods:
        rows = [r for r in results if r['method'] == method]
        scores = [r['score'] for r in rows if r['score'] is not None]
        mean = float(np.mean(scores)) if scores else float('nan')
        seconds = float(np.mean([r['seconds'] for r in rows]))
        means[method] = (mean, seconds)
        per = ' / '.join('n/a' if r['score'] is None else f'{r["score"]:.3f}' for r in rows)
        ref = means.get('defaults')
        ratio = f'{mean / ref[0]:.2f}x' if ref and ref[0] and method != 'defaults' else ''
        time_ratio = f'{seconds / ref[1]:.2f}x' if ref and method != 'defaults' else ''
        lines.append(f'| {method} | {per} | {mean:.3f} | {seconds:.0f} | {ratio} | {time_ratio} |')
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env', default='puffer_squared')
    parser.add_argument('--metric', default='env/perf')
    parser.add_argument('--budget', type=int, default=4_000_000, help='agent steps per method, all runs together')
    parser.add_argument('--population', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=4)
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--methods', default=','.join(METHODS))
    parser.add_argument('--flags', default='', help='more config flags for every run, one string: '
                        '--flags="--env.num-envs 128"')
    parser.add_argument('--write-docs', action='store_true')
    args = parser.parse_args()
    args.methods = args.methods.split(',')
    args.flags = args.flags.split()
    results = []
    for seed in [int(s) for s in args.seeds.split(',')]:
        for method in args.methods:  # interleaved: a slower stretch of the shared machine hits every method
            result = measure(args, method, seed)
            results.append(result)
            print(f'seed {seed} {method}: {result["score"]} in {result["seconds"]:.0f} s ({result["runs"]} runs)',
                  flush=True)
    text = table(args, results)
    command = (f'nice -n 5 python -m lab.bench_pbt --env {args.env} --metric {args.metric} --budget {args.budget} '
               f'--population {args.population} --rounds {args.rounds} --seeds {args.seeds}'
               + (f' --flags="{" ".join(args.flags)}"' if args.flags else ''))
    section = (f'`{command}`\n\n{machine()}\n\nBudget: {args.budget:,} agent steps per method; population '
               f'{args.population}, {args.rounds} rounds for the two PBTs. Final score: the best run\'s mean '
               f'{args.metric} over the last tenth of its steps.\n\n{text}')
    print(section)
    if args.write_docs:
        update_section(f'bench_pbt {args.env}', f'PBT against the defaults, a sweep and Ray Tune: {args.env}',
                       section, DOC)


if __name__ == '__main__':
    main()
