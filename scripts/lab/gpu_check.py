#!/usr/bin/env python
"""The GPU check: every CUDA-path measurement in one command that fits 8 minutes, results into one folder.

    bash scripts/lab/gpu_check.sh OUT                 # on a GPU machine: wheels from .whl/, build, then this script
    python -m lab.gpu_check --out OUT                # the steps alone, where pufferlib is already installed
    python -m lab.gpu_check --rehearse --out OUT     # the same steps, tiny, on a CPU (tests/test_gpu_check.py)
    python -m lab.gpu_check --write-docs OUT [OUT2]  # afterwards, here: OUT's sections into docs/ (OUT2: a rerun)

Steps, each in its own process with its own time cap (a hang or a crash costs that step, not the rest):
1. correctness: the CUDA advantage kernel against the CPU kernel (random shapes, episode ends inside
   segments, float32 and bfloat16 inputs), the GPU tests of the test suite, one bfloat16-autocast and one
   torch.compile training run (finite losses, steps/s);
2. throughput: puffer_breakout and puffer_pong, default policy and LSTM, agent steps/s after a warm-up at
   two env counts, with the --profile table of each;
3. time to solve: puffer_pong and puffer_breakout from scratch to their targets, in seconds;
4. third-party baselines (Atari Pong, Breakout) with what time is left, with curves.
It writes OUT/results.json (everything), OUT/gpu.md (the markdown sections) and OUT/curves.png; the log of
each step goes to OUT/steps.log. The rehearsal runs the same code on the CPU with tiny sizes and caps, so that
the script is known to work before it meets a GPU; its figures mean nothing.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from lab import RESULTS, ROOT

LSTM = ['--rnn.class', 'pufferlib.models:LSTMWrapper']
# Targets of step 3: pong's is the acceptance target of docs/training.md (beat the built-in paddle); breakout
# clears half the bricks on average (the public suite reports breakout solved in minutes on one GPU).
SOLVE = {'puffer_pong': ('env/perf', 0.5), 'puffer_breakout': ('env/perf', 0.5)}
THIRD_PARTY = {'atari_pong': 'env/score', 'atari_breakout': 'env/score'}


def sizes(rehearse: bool) -> dict[str, Any]:
    """Every size and cap of the check. The GPU figures fit 8 minutes with the set-up of gpu_check.sh."""
    if rehearse:  # start-up (imports, env, policy) is most of a rehearsal step: one env count, short runs
        return dict(device='cpu', budget_s=420, vec=['--vec.num-envs', '1', '--vec.backend', 'Serial'],
                    counts=[16], warm_s=0.5, measure_s=1.0, run_cap_s=90, tests_cap_s=120, kernel_cap_s=60,
                    solve_s=3.0, third_party_s=3.0, minibatch=512, shapes=[(3, 8), (17, 16), (64, 32)],
                    tests=['tests/test_advantage.py', '-k', 'cuda'])
    # 16 env objects in 16 workers, 8 a batch: half simulate while the policy acts on the other half. The flags
    # must fit the Ocean config's vector layout (tests/test_gpu_check.py builds it).
    vec = ['--vec.num-envs', '16', '--vec.num-workers', '16', '--vec.batch-size', '8']
    return dict(device='cuda', budget_s=480, vec=vec, counts=[512, 2048], warm_s=8.0,
                measure_s=10.0, run_cap_s=60, tests_cap_s=120, kernel_cap_s=60, solve_s=90.0, third_party_s=60.0,
                minibatch=32768, shapes=[(1, 1), (3, 8), (257, 64), (4096, 128), (16384, 64)],
                tests=['tests/test_advantage.py', 'tests/test_profile.py'])


# ---------------------------------------------------------------------------------------------
# What the child processes do (python -m lab.gpu_check --child KIND JSON)
# ---------------------------------------------------------------------------------------------

def child_kernel(device: str, shapes: list[list[int]]) -> dict[str, Any]:
    """The advantage kernel on `device` against the CPU kernel; on a CPU, the torch loop against the C kernel."""
    import torch

    from pufferlib import advantage
    result: dict[str, Any] = {'cases': []}
    generator = torch.Generator().manual_seed(0)
    for segments, horizon in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            for done_prob in (0.0, 0.05, 0.5):
                values, rewards = (torch.randn(segments, horizon, generator=generator).to(dtype) for _ in range(2))
                dones = torch.rand(segments, horizon, generator=generator) < done_prob
                last = torch.randn(segments, generator=generator).to(dtype)
                importance = torch.exp(torch.randn(segments, horizon, generator=generator) * 0.7).to(dtype)
                args = dict(gamma=0.99, lam=0.9, rho_clip=1.2, c_clip=0.8)
                expected = advantage.compute_advantage(values, rewards, dones, last, importance, **args)
                if device == 'cpu':
                    got = advantage._torch_advantage(values.float(), rewards.float(), dones.float(), last.float(),
                                                     importance.float(), *args.values())
                else:
                    moved = (t.to(device) for t in (values, rewards, dones, last, importance))
                    got = advantage.compute_advantage(*moved, **args).cpu()
                error = float((got - expected).abs().max()) if got.numel() else 0.0
                result['cases'].append({'shape': [segments, horizon], 'dtype': str(dtype).split('.')[-1],
                                        'done_prob': done_prob, 'max_abs_error': error})
    result['max_abs_error'] = max(case['max_abs_error'] for case in result['cases'])
    result['kernel'] = 'cuda' if device != 'cpu' and advantage.cuda_kernel_available() else 'cpu/torch loop'
    result['ok'] = result['max_abs_error'] <= 1e-5 and (device == 'cpu' or advantage.cuda_kernel_available())
    return result


def child_train(env: str, flags: list[str], warm_s: float, measure_s: float, target: list | None,
                cap_s: float) -> dict[str, Any]:
    """One training run: steps/s between warm_s and warm_s + measure_s after its start (start-up excluded),
    or the seconds to `target` (metric, value: two log rows in a row at or above it), losses finite."""
    from pufferlib import config as configuration
    from pufferlib import train as training
    config = configuration.load(env, ['--train.log-interval', '0.5', '--train.checkpoint-interval', '1000000',
                                      '--train.total-timesteps', '100000000000', *flags])
    rows: list[dict] = []

    def on_log(row: dict) -> bool:
        rows.append({k: v for k, v in row.items() if isinstance(v, (int, float))})
        if target is not None:
            metric, value = target
            hits = [r.get(metric, -math.inf) >= value for r in rows[-2:]]
            if len(hits) == 2 and all(hits):
                return True
            return row['elapsed_s'] >= cap_s
        return row['elapsed_s'] >= warm_s + measure_s
    summary = training.train(env, config=config, quiet=True, on_log=on_log)
    result: dict[str, Any] = {'env': env, 'flags': flags, 'rows': rows, 'run_dir': summary['run_dir']}
    losses = [v for r in rows for k, v in r.items() if k.startswith('losses/') or k.endswith('_loss')]
    result['finite'] = all(math.isfinite(v) for v in losses)
    warm = [r for r in rows if r['elapsed_s'] >= warm_s]
    if len(warm) >= 2:
        first, last = warm[0], warm[-1]
        result['sps'] = (last['global_step'] - first['global_step']) / max(last['elapsed_s'] - first['elapsed_s'],
                                                                          1e-9)
    elif rows:
        result['sps'] = rows[-1]['sps']
    if target is not None:
        result['solved_s'] = rows[-1]['elapsed_s'] if rows and summary.get('interrupted') == 'on_log' and \
            rows[-1].get(target[0], -math.inf) >= target[1] else None
        result['solved_steps'] = rows[-1]['global_step'] if result['solved_s'] is not None else None
        result['final'] = next((r[target[0]] for r in reversed(rows) if target[0] in r), None)
    profile = os.path.join(summary['run_dir'], 'profile.json')
    if os.path.exists(profile):
        with open(profile) as f:
            result['profile'] = json.load(f)
    import torch
    result['device_name'] = torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'
    return result


# ---------------------------------------------------------------------------------------------
# The parent: steps with caps, results, markdown
# ---------------------------------------------------------------------------------------------

class Check:
    def __init__(self, out: str, rehearse: bool, budget_s: float | None):
        self.out, self.rehearse = out, rehearse
        self.size = sizes(rehearse)
        self.deadline = time.time() + (budget_s or self.size['budget_s'])
        self.results: dict[str, Any] = {'rehearsal': rehearse, 'steps': {}}
        self.log = open(os.path.join(out, 'steps.log'), 'a')
        self.runs = tempfile.mkdtemp(prefix='puffer-gpu-check-')

    def left(self) -> float:
        return self.deadline - time.time()

    def child(self, name: str, kind: str, limit_s: float, **kwargs: Any) -> dict[str, Any]:
        """Run one child with min(cap, time left); its result, or {'error': why} when it failed or ran over."""
        cap = min(limit_s, self.left())
        if cap < 5:
            return self.record(name, {'skipped': 'no time left in the budget'})
        result_path = os.path.join(self.runs, f'{name}.json')
        command = [sys.executable, '-m', 'lab.gpu_check', '--child', kind, json.dumps(kwargs), result_path]
        env = dict(os.environ, PUFFER_EXPERIMENTS=self.runs, PYTHONUNBUFFERED='1')
        start = time.time()
        print(f'gpu_check: {name} (cap {cap:.0f} s) ...', flush=True)
        self.log.write(f'\n==== {name}: {" ".join(command[:4])}\n')
        self.log.flush()
        try:
            subprocess.run(command, stdout=self.log, stderr=subprocess.STDOUT, timeout=cap, env=env, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return self.record(name, {'error': f'ran over its cap of {cap:.0f} s', 'seconds': time.time() - start})
        if not os.path.exists(result_path):
            return self.record(name, {'error': 'the step failed (see steps.log)', 'seconds': time.time() - start})
        with open(result_path) as f:
            result = json.load(f)
        result['seconds'] = time.time() - start
        return self.record(name, result)

    def record(self, name: str, result: dict[str, Any]) -> dict[str, Any]:
        if 'solved_s' not in result:  # a speed run's rows are noise in results.json; curves need the others'
            result.pop('rows', None)
        self.results['steps'][name] = result
        status = ('skipped: ' + result['skipped'] if 'skipped' in result else 'FAILED: ' + result['error']
                  if 'error' in result else 'WRONG' if step_failed(result) else 'ok')
        print(f'gpu_check: {name}: {status} ({result.get("seconds", 0):.0f} s)', flush=True)
        self.save()
        return result

    def save(self) -> None:
        from lab import benchmark as bd  # import-light; whole or not at all if the time limit kills us here
        bd.write_results(os.path.join(self.out, 'results.json'), self.results)

    def pytest(self) -> None:
        """The test files that hold GPU tests, whole on the GPU (a CPU regression shows there too); rehearsing,
        only the GPU tests, which skip on a CPU but must still be collected."""
        cap = min(self.size['tests_cap_s'], self.left())
        command = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:randomly', '-p', 'no:cacheprovider',
                   *self.size['tests']]
        start = time.time()
        print(f'gpu_check: tests (cap {cap:.0f} s) ...', flush=True)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=cap, cwd=ROOT)
            tail = done.stdout.strip().splitlines()[-1:] or ['no output']
            result = {'ok': done.returncode == 0, 'summary': tail[0], 'returncode': done.returncode}
            self.log.write(f'\n==== tests\n{done.stdout}{done.stderr}')
        except subprocess.TimeoutExpired:
            result = {'error': f'ran over its cap of {cap:.0f} s'}
        result['seconds'] = time.time() - start
        self.record('tests', result)

    def run(self) -> dict[str, Any]:
        s = self.size
        device = ['--train.device', s['device']]
        self.results['machine'] = machine()
        self.child('kernel', 'kernel', s['kernel_cap_s'], device=s['device'], shapes=s['shapes'])
        self.pytest()
        small = [*s['vec'], '--env.num-envs', str(s['counts'][0]), '--train.minibatch-size', str(s['minibatch'])]
        for name, flags in (('bf16', ['--train.precision', 'bfloat16']), ('compile', ['--train.compile', 'true'])):
            self.child(name, 'train', s['run_cap_s'], env='puffer_breakout', flags=[*device, *small, *flags],
                       warm_s=s['warm_s'], measure_s=s['measure_s'], target=None, cap_s=s['run_cap_s'])
        for env in ('puffer_breakout', 'puffer_pong'):
            for policy, policy_flags in (('default', []), ('lstm', LSTM)):
                for count in s['counts']:
                    flags = [*device, *s['vec'], '--env.num-envs', str(count), '--train.minibatch-size',
                             str(s['minibatch']), '--train.profile', 'true', *policy_flags]
                    self.child(f'speed-{env}-{policy}-{count}', 'train', s['run_cap_s'], env=env, flags=flags,
                               warm_s=s['warm_s'], measure_s=s['measure_s'], target=None, cap_s=s['run_cap_s'])
        for env, target in SOLVE.items():
            flags = [*device, *s['vec'], '--env.num-envs', str(s['counts'][0]), '--train.minibatch-size',
                     str(s['minibatch'])]
            self.child(f'solve-{env}', 'train', s['solve_s'] + 30, env=env, flags=flags, warm_s=0, measure_s=0,
                       target=list(target), cap_s=s['solve_s'])
        for env, metric in THIRD_PARTY.items():
            self.child(f'baseline-{env}', 'train', s['third_party_s'] + 30, env=env, flags=device, warm_s=0,
                       measure_s=0, target=[metric, math.inf], cap_s=s['third_party_s'])
        self.save()
        write_markdown(self.results, self.out)
        plot_curves(self.results, os.path.join(self.out, 'curves.png'))
        return self.results


def machine() -> str:
    import platform

    import torch
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'
    return (f'{gpu}; {os.cpu_count()} CPU cores; Python {platform.python_version()}; torch {torch.__version__}; '
            f'{time.strftime("%Y-%m-%d")}')


def _si(value: float | None) -> str:
    if value is None:
        return '-'
    return f'{value / 1e6:.2f}M' if value >= 1e6 else f'{value / 1e3:.0f}k' if value >= 1e3 else f'{value:.0f}'


def _share(phases: dict[str, Any], keys: list[str]) -> str:
    """The percent of an epoch that these --profile phases took, together."""
    return f'{sum(phases.get(k, {}).get("percent", 0) for k in keys):.0f}%' if phases else '-'


def _train_note(name: str, result: dict[str, Any] | None) -> str:
    if result is None:
        return f'{name} run: not run'
    if 'sps' not in result:
        return f'{name} run: {_status(result)}'
    return f'{name} run: {_si(result["sps"])} steps/s, losses {"finite" if result.get("finite") else "NOT finite"}'


def _status(result: dict[str, Any]) -> str:
    return result.get('skipped') or result.get('error') or ''


def write_markdown(results: dict[str, Any], out: str) -> str:
    """OUT/gpu.md: one section for docs/benchmarks.md (throughput) and one for docs/baselines.md (solving)."""
    steps = results['steps']
    head = (f'Measured by `bash scripts/lab/gpu_check.sh OUT` on: {results.get("machine", "?")}.'
            + (' **Rehearsal on a CPU: the figures mean nothing.**' if results['rehearsal'] else ''))
    kernel, tests = steps.get('kernel', {}), steps.get('tests', {})
    error = f'{kernel["max_abs_error"]:.2g}' if 'max_abs_error' in kernel else '-'
    lines = ['<!-- gpu-throughput -->', head, '',
             f'Correctness: advantage kernel ({kernel.get("kernel", "-")}) max abs error vs the CPU kernel '
             f'{error} over {len(kernel.get("cases", []))} cases (float32 and bfloat16 inputs)'
             f'{" " + _status(kernel) if _status(kernel) else ""}; tests: {tests.get("summary", _status(tests))}; '
             + '; '.join(_train_note(n, steps.get(n)) for n in ('bf16', 'compile')), '',
             '| env | policy | agent rows | steps/s after warm-up | env | rollout forward | update | note |',
             '|---|---|---:|---:|---:|---:|---:|---|']
    for name, result in steps.items():
        if not name.startswith('speed-'):
            continue
        _, env, policy, count = name.rsplit('-', 3) if name.count('-') >= 3 else (None, name, '', '')
        phases = result.get('profile', {}).get('phases', {})
        flags = result.get('flags', [])
        rows = int(count) * int(flags[flags.index('--vec.num-envs') + 1]) if '--vec.num-envs' in flags else count
        lines.append(f'| {env} | {policy} | {rows} | {_si(result.get("sps"))} | {_share(phases, ["env", "copy"])} | '
                     f'{_share(phases, ["rollout_forward"])} | '
                     f'{_share(phases, ["advantage", "update_forward", "backward", "optimizer"])} | '
                     f'{_status(result)} |')
    lines += ['', '<!-- gpu-solve -->', head, '',
              '| env | target | seconds to target | agent steps | final value | note |', '|---|---|---:|---:|---:|---|']
    for name, result in steps.items():
        if name.startswith(('solve-', 'baseline-')):
            env = name.split('-', 1)[1]
            target = SOLVE.get(env, (THIRD_PARTY.get(env, '?'), None))
            solved, final, rows = result.get('solved_s'), result.get('final'), result.get('rows') or [{}]
            # A curve-only run (or one that missed its target) says how far it got, so its value can be read.
            reached = '' if solved is not None or 'global_step' not in rows[-1] else \
                f'{_si(rows[-1]["global_step"])} steps in {rows[-1]["elapsed_s"]:.0f} s at {_si(result.get("sps"))}/s'
            lines.append(f'| {env} | {target[0]} >= {target[1] if target[1] is not None else "(curve only)"} | '
                         f'{f"{solved:.0f}" if solved is not None else "-"} | {_si(result.get("solved_steps"))} | '
                         f'{f"{final:.3g}" if final is not None else "-"} | '
                         f'{"; ".join(x for x in (reached, _status(result)) if x)} |')
    path = os.path.join(out, 'gpu.md')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def plot_curves(results: dict[str, Any], path: str) -> str | None:
    """The metric of every solve and third-party run against seconds (one panel each)."""
    runs = {n: r for n, r in results['steps'].items() if n.startswith(('solve-', 'baseline-')) and r.get('rows')}
    if not runs:
        return None
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 3), squeeze=False)
    for ax, (name, result) in zip(axes[0], runs.items()):
        env = name.split('-', 1)[1]
        metric = SOLVE.get(env, (THIRD_PARTY.get(env, 'env/episode_return'), None))[0]
        points = [(r['elapsed_s'], r[metric]) for r in result['rows'] if metric in r]
        ax.plot([p[0] for p in points], [p[1] for p in points])
        if env in SOLVE:
            ax.axhline(SOLVE[env][1], color='k', ls='--', lw=1)
        ax.set(title=env, xlabel='seconds', ylabel=metric)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return path


def step_failed(result: dict[str, Any]) -> bool:
    """A step that broke or whose check came out wrong (one skipped for lack of time has not failed)."""
    return 'error' in result or result.get('ok') is False or result.get('finite') is False


def passed(result: dict[str, Any]) -> bool:
    return 'skipped' not in result and not step_failed(result)


class NotAnOut(ValueError):
    """A folder given to --write-docs that is not a GPU check's output."""


def read_out(out: str) -> dict[str, Any]:
    """OUT's results.json, checked before anything in docs/ is touched: a wrong folder or a damaged copy is
    one clear error (NotAnOut), not a traceback halfway through writing the docs."""
    path = os.path.join(out, 'results.json')
    if not os.path.isdir(out):
        raise NotAnOut(f'{out} is not a folder: pass the OUT folder the GPU check wrote (with results.json)')
    if not os.path.exists(path):
        raise NotAnOut(f'{out} has no results.json: pass the OUT folder the GPU check wrote, not a parent '
                       'or a step folder; a run cut off before its first step wrote nothing to put in docs')
    try:
        with open(path) as f:
            run = json.load(f)
    except json.JSONDecodeError as exc:
        raise NotAnOut(f'{path} is not valid JSON ({exc}): copy it again from the GPU machine\'s output') from None
    if not isinstance(run, dict) or not isinstance(run.get('steps'), dict) or 'rehearsal' not in run:
        raise NotAnOut(f'{path} is not a GPU check\'s results (no "steps" and "rehearsal"): pass the OUT '
                       'folder of scripts/lab/gpu_check.sh')
    return run


def merge(runs: list[dict[str, Any]], into: str) -> str:
    """Several runs' results (read_out) as one OUT folder in `into` (results.json, gpu.md, curves.png): each
    step from the last run where it passed, else from the last run that has it. A rerun after a fix, or with the
    minutes the first run lacked, fills in what the first could not; a step that passed twice keeps its latest
    figures."""
    from lab import benchmark as bd
    steps: dict[str, Any] = {}
    for run in runs:
        for name, result in run['steps'].items():
            if passed(result) or not passed(steps.get(name, {'error': ''})):
                steps[name] = {k: v for k, v in result.items() if k != 'run_dir'}  # a folder of that machine
    machines = sorted({run.get('machine', '?') for run in runs})
    merged = {'rehearsal': any(run['rehearsal'] for run in runs), 'steps': steps,
              'machine': '; '.join(machines) + (f' ({len(runs)} runs of the check, each step from the last run '
                                                'where it passed)' if len(runs) > 1 else '')}
    bd.write_results(os.path.join(into, 'results.json'), merged)
    write_markdown(merged, into)
    plot_curves(merged, os.path.join(into, 'curves.png'))
    return into


def write_docs(outs: list[str], docs: str, results: str) -> None:
    """OUT/gpu.md's two sections into docs/benchmarks.md and docs/baselines.md (curves beside them); with
    several OUT folders, their merge (see merge). The results.json behind the sections is kept in
    `results`/gpu_check.json (the lab's results/). Every folder is read (read_out) before anything in `docs`
    or `results` is written."""
    import shutil

    from lab import benchmark as bd
    runs = [read_out(out) for out in outs]
    out = outs[0]
    # A run cut off by its time limit saved results.json after each step but never wrote gpu.md: the merge
    # of that one run writes it from the steps it finished.
    if len(outs) > 1 or not os.path.exists(os.path.join(out, 'gpu.md')):
        out = merge(runs, tempfile.mkdtemp(prefix='puffer-gpu-merge-'))
    os.makedirs(results, exist_ok=True)
    shutil.copy(os.path.join(out, 'results.json'), os.path.join(results, 'gpu_check.json'))
    with open(os.path.join(out, 'gpu.md')) as f:
        text = f.read()
    throughput, solve = text.split('<!-- gpu-solve -->')
    throughput = throughput.replace('<!-- gpu-throughput -->', '').strip()
    solve = solve.strip()
    bd.update_section('gpu-throughput', 'On a GPU (scripts/lab/gpu_check.sh)', throughput,
                      os.path.join(docs, 'benchmarks.md'))
    if os.path.exists(os.path.join(out, 'curves.png')):
        os.makedirs(os.path.join(docs, 'baselines'), exist_ok=True)
        shutil.copy(os.path.join(out, 'curves.png'), os.path.join(docs, 'baselines', 'gpu_curves.png'))
        solve += '\n\n![GPU curves](baselines/gpu_curves.png)'
    bd.update_section('gpu-solve', 'On a GPU: time to solve (scripts/lab/gpu_check.sh)', solve,
                      os.path.join(docs, 'baselines.md'))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', help='folder for results.json, gpu.md, curves.png and steps.log')
    parser.add_argument('--rehearse', action='store_true', help='tiny sizes on the CPU: the script works')
    parser.add_argument('--budget-s', type=float, help='seconds for every step together (default 480; 240 '
                        'when rehearsing)')
    parser.add_argument('--write-docs', metavar='OUT', nargs='+',
                        help="put OUT/gpu.md's sections into docs/; several OUT folders (a first run and its "
                             "rerun): each step from the last run where it passed")
    parser.add_argument('--docs', default=os.path.join(ROOT, 'docs'), help=argparse.SUPPRESS)  # tests: a copy
    parser.add_argument('--results', default=RESULTS, help=argparse.SUPPRESS)  # tests: a copy
    parser.add_argument('--child', nargs=3, metavar=('KIND', 'JSON', 'RESULT'), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, kwargs, result_path = args.child
        result = (child_kernel if kind == 'kernel' else child_train)(**json.loads(kwargs))
        with open(result_path, 'w') as f:
            json.dump(result, f)
        return 0
    if args.write_docs:
        try:
            write_docs(args.write_docs, args.docs, args.results)
        except NotAnOut as exc:
            print(f'gpu_check: {exc}; nothing in docs/ was changed', file=sys.stderr)
            return 2
        return 0
    if not args.out:
        parser.error('--out OUT is needed (or --write-docs OUT)')
    if not args.rehearse:
        import torch
        if not torch.cuda.is_available():
            print('gpu_check: no CUDA device here; use --rehearse for the CPU rehearsal', file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)
    results = Check(args.out, args.rehearse, args.budget_s).run()
    failed = [n for n, r in results['steps'].items() if step_failed(r)]
    print(f'gpu_check: {len(results["steps"])} steps, {len(failed)} failed{": " + ", ".join(failed) if failed else ""}'
          f'; results in {args.out}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
