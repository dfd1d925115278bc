"""scripts/lab/gpu_check.sh, the one command that measures the CUDA path on a GPU machine, rehearsed on this CPU.

The rehearsal runs every step of the real script (its own processes, caps and outputs) at tiny sizes: what
it proves is that the script works, so that a GPU machine's few minutes are not spent finding out. Nothing
here asserts a speed. On a busy machine a step may run over its cap; the script must then record that and
go on, which is asserted too.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(ROOT, 'scripts', 'lab')  # the shell scripts beside lab.gpu_check


def _write_docs(*outs, docs):
    """`--write-docs OUT...` into a copy of docs/ and a scratch results folder beside it."""
    return subprocess.run([sys.executable, '-m', 'lab.gpu_check', '--write-docs', *map(str, outs),
                           '--docs', str(docs), '--results', str(docs.parent / 'results')], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _docs(tmp_path):
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'benchmarks.md').write_text('# Benchmarks\n')
    (docs / 'baselines.md').write_text('# Baselines\n')
    return docs


@pytest.mark.timeout(900)  # about 3 minutes on 2 quiet cores; the script's own budget is 420 s
def test_the_rehearsal_runs_every_step_and_writes_what_the_docs_take(tmp_path):
    out = tmp_path / 'gpu out'   # a space: the folder is quoted everywhere it is passed on
    env = dict(os.environ, PUFFER_VENV=sys.prefix)
    done = subprocess.run(['bash', os.path.join(LAB, 'gpu_check.sh'), str(out), '--rehearse'], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    assert 'gpu_check: kernel: ok' in done.stdout, done.stdout + done.stderr
    results = json.loads((out / 'results.json').read_text())
    steps = results['steps']
    assert results['rehearsal'] is True
    expected = {'kernel', 'tests', 'bf16', 'compile', 'solve-puffer_pong', 'solve-puffer_breakout',
                'baseline-atari_pong', 'baseline-atari_breakout'}
    expected |= {f'speed-{env}-{policy}-16' for env in ('puffer_breakout', 'puffer_pong')
                 for policy in ('default', 'lstm')}
    assert set(steps) == expected
    # The kernel check compared float32 and bfloat16 inputs, episode ends inside segments, and agreed.
    kernel = steps['kernel']
    assert kernel['ok'] and kernel['max_abs_error'] <= 1e-5
    assert {case['dtype'] for case in kernel['cases']} == {'float32', 'bfloat16'}
    assert steps['tests']['ok'], steps['tests']
    # Every step either has its figures or says why not (over its cap, failed, no time left).
    for name, result in steps.items():
        assert result.get('skipped') or result.get('error') or result.get('ok') or 'sps' in result \
            or 'solved_s' in result, (name, result)
    trained = [r for n, r in steps.items() if n.startswith('speed-') and 'sps' in r]
    assert trained and all(r['sps'] > 0 and r['finite'] for r in trained), steps
    assert any(r.get('profile', {}).get('phases') for r in trained), 'no --profile table came back'
    markdown = (out / 'gpu.md').read_text()
    assert 'Rehearsal on a CPU' in markdown and '| puffer_breakout | default | 16 |' in markdown
    assert '| puffer_pong | env/perf >= 0.5 |' in markdown
    assert (out / 'steps.log').stat().st_size > 0
    # The exit status says whether every step passed; on this busy machine it may not have.
    failed = [n for n, r in steps.items() if 'error' in r or r.get('ok') is False or r.get('finite') is False]
    assert done.returncode == (1 if failed else 0), (failed, done.stdout[-2000:])
    # What comes back goes into the docs by one command: both sections, replaced in place on a rerun.
    docs = _docs(tmp_path)
    for _ in range(2):
        assert _write_docs(out, docs=docs).returncode == 0
    benchmarks, baselines = (docs / 'benchmarks.md').read_text(), (docs / 'baselines.md').read_text()
    assert benchmarks.count('## On a GPU (scripts/lab/gpu_check.sh)') == 1 and '| puffer_pong | lstm |' in benchmarks
    assert baselines.count('<!-- gpu-solve:start -->') == 1 and '| atari_pong |' in baselines
    # A rerun fills in what the first run could not: each step from the last run where it passed.
    runs = []
    for name, broken in (('first', 'kernel'), ('rerun', 'tests')):
        copy = json.loads(json.dumps(results))
        copy['steps'][broken] = {'error': 'ran over its cap of 60 s', 'seconds': 60.0}
        (tmp_path / name).mkdir()
        (tmp_path / name / 'results.json').write_text(json.dumps(copy))
        runs.append(str(tmp_path / name))
    assert _write_docs(*runs, docs=docs).returncode == 0
    merged = json.loads((tmp_path / 'results' / 'gpu_check.json').read_text())
    assert merged['steps']['kernel'] == steps['kernel'] and merged['steps']['tests'] == steps['tests']
    assert set(merged['steps']) == expected
    benchmarks = (docs / 'benchmarks.md').read_text()
    assert benchmarks.count('## On a GPU (scripts/lab/gpu_check.sh)') == 1 and '2 runs of the check' in benchmarks


@pytest.mark.filterwarnings('ignore:workers in 16 processes')  # 16 workers on these 2 cores
def test_the_gpu_sizes_give_a_vector_layout_the_trained_envs_accept():
    """The real check's vector flags over each trained env's config build a vector env: a layout that does
    not fit (more env objects than ocean.toml's workers can batch) would fail every GPU training step."""
    from lab import gpu_check
    from pufferlib import config as configuration
    from pufferlib import train as training
    flags = gpu_check.sizes(rehearse=False)['vec']
    for env in ('puffer_breakout', 'puffer_pong'):
        config = configuration.load(env, [*flags, '--env.num-envs', '1'])
        vector = training.make_vecenv(env, config)
        try:
            assert vector.num_envs == 16 and vector.batch_size == 8 and vector.num_workers == 16
            vector.async_reset(0)
            assert len(vector.recv()[0]) == 8  # one C instance per object: 8 agent rows a batch
        finally:
            vector.close()


@pytest.mark.skipif(torch.cuda.is_available(), reason='a GPU is here: the real check would run')
def test_without_a_gpu_the_real_check_refuses_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, '-m', 'lab.gpu_check', '--out', str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == 'gpu_check: no CUDA device here; use --rehearse for the CPU rehearsal'


def test_the_wheel_list_comes_from_constraints():
    done = subprocess.run(['bash', os.path.join(LAB, 'gpu_wheels.sh'), '--list'], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pins = dict(line.split('==') for line in done.stdout.split())
    constraints = open(os.path.join(ROOT, 'constraints.txt')).read()
    for name, version in pins.items():
        assert f'{name}=={version}' in constraints
    assert {'gymnasium', 'pettingzoo', 'setuptools'} <= {name.lower() for name in pins}


def test_a_run_cut_off_by_its_time_limit_still_goes_into_the_docs(tmp_path):
    """results.json is saved after every step, gpu.md only at the end: the steps a killed run finished are
    written into the docs, and the ones it never reached are simply absent."""
    out = tmp_path / 'out'
    out.mkdir()
    steps = {'kernel': {'ok': True, 'kernel': 'cuda', 'max_abs_error': 2e-7, 'cases': [{'dtype': 'float32'}]},
             'tests': {'ok': True, 'summary': '12 passed in 3.1s'},
             'speed-puffer_breakout-default-512': {'sps': 1.5e6, 'finite': True,
                                                   'flags': ['--vec.num-envs', '16']}}
    (out / 'results.json').write_text(json.dumps({'rehearsal': False, 'machine': 'NVIDIA H200', 'steps': steps}))
    docs = _docs(tmp_path)
    done = _write_docs(out, docs=docs)
    assert done.returncode == 0, done.stderr
    benchmarks = (docs / 'benchmarks.md').read_text()
    assert 'NVIDIA H200' in benchmarks and '| puffer_breakout | default | 8192 | 1.50M |' in benchmarks
    assert '12 passed' in benchmarks and 'puffer_pong' not in benchmarks
    assert '<!-- gpu-solve:start -->' in (docs / 'baselines.md').read_text()
    assert not (out / 'gpu.md').exists()  # what came back from the GPU machine is read, never written
    kept = json.loads((tmp_path / 'results' / 'gpu_check.json').read_text())
    assert kept['steps'] == steps and kept['machine'] == 'NVIDIA H200'


@pytest.mark.parametrize('case', ['missing', 'parent', 'damaged', 'not-ours'])
def test_a_wrong_folder_for_write_docs_is_one_error_and_leaves_the_docs_alone(tmp_path, case):
    good = tmp_path / 'good'
    good.mkdir()
    (good / 'results.json').write_text(json.dumps({'rehearsal': True, 'steps': {}}))
    bad = tmp_path / 'bad'
    if case != 'missing':
        bad.mkdir()
    if case == 'damaged':
        (bad / 'results.json').write_text('{"rehearsal": true, "steps": {')   # cut off while copying
    elif case == 'not-ours':
        (bad / 'results.json').write_text(json.dumps([{'env': 'puffer_pong'}]))  # another script's results
    docs = _docs(tmp_path)
    before = {p.name: p.read_text() for p in docs.iterdir()}
    done = _write_docs(good, bad, docs=docs)
    assert done.returncode == 2 and 'Traceback' not in done.stderr, done.stderr
    message = done.stderr.strip()
    assert message.startswith('gpu_check: ') and message.endswith('nothing in docs/ was changed')
    assert str(bad) in message and {'missing': 'not a folder', 'parent': 'no results.json',
                                    'damaged': 'not valid JSON', 'not-ours': 'not a GPU check'}[case] in message
    assert {p.name: p.read_text() for p in docs.iterdir()} == before
