"""The benchmarks' logic: lab.benchmark (rounds, medians, spread, ratios, tables, the doc writer,
peers, the sections the programs write), and the programs run as real processes.

Nothing here times anything or asserts a speed: the figures live in docs/benchmarks.md, written by
the scripts themselves.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

import lab
from lab import benchdoc
from lab import benchmark as bd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_interleaved_measures_every_contender_once_per_round_in_order():
    calls = []
    runs = bd.interleaved(['ours', 'peer'], 3, lambda name: calls.append(name) or len(calls))
    assert calls == ['ours', 'peer'] * 3
    assert runs == {'ours': [1, 3, 5], 'peer': [2, 4, 6]}


def test_median_spread_and_ratio():
    assert bd.median([3, 1, 2]) == 2
    assert bd.spread([90, 100, 110]) == pytest.approx(0.2)
    assert bd.spread([100]) is None and bd.spread_cell([100]) == '-'
    assert bd.spread_cell([90, 100, 110]) == '20%'
    assert bd.ratio([4, 6, 5], [2, 2, 3]) == pytest.approx(2.5)   # ratio of medians
    assert bd.ratio(10.0, 4.0) == pytest.approx(2.5)
    assert bd.ratio([1.0], []) is None and bd.ratio(None, 2.0) is None and bd.ratio(1.0, 0) is None
    assert bd.ratio([float('inf')], [float('inf')]) is None and bd.ratio(5.0, float('inf')) is None


def test_cells():
    assert bd.si(92_512_345) == '92.5M' and bd.si(143_200) == '143k' and bd.si(850) == '850'
    assert bd.si(None) == '-' and bd.si(float('nan')) == '-'
    assert bd.runs_cell([1.5e6, 2e6]) == '1.5M / 2M' and bd.runs_cell([]) == '-'
    assert bd.ratio_cell(1.234) == '1.23x' and bd.ratio_cell(None) == '-'
    assert bd.ratio_cell(0.5, bold_below=1.0) == '**0.50x**' and bd.ratio_cell(1.5, bold_below=1.0) == '1.50x'


def test_markdown_table_aligns_and_rejects_ragged_rows():
    text = bd.markdown_table(['env', 'steps/s'], [['a', '1'], ['b', '2']], 'lr')
    assert text.splitlines() == ['| env | steps/s |', '|---|---:|', '| a | 1 |', '| b | 2 |']
    with pytest.raises(ValueError):
        bd.markdown_table(['env', 'steps/s'], [['a']])


def test_update_section_replaces_only_its_own_section(tmp_path):
    path = str(tmp_path / 'benchmarks.md')
    bd.update_section('ocean', 'Ocean', 'first', path)
    bd.update_section('vector', 'Vectorization', 'vec', path)
    bd.update_section('ocean', 'Ocean', 'second', path)
    doc = open(path).read()
    assert 'first' not in doc and doc.count('second') == 1 and 'vec' in doc
    assert doc.index('<!-- ocean:start -->') < doc.index('<!-- vector:start -->')  # replaced in place
    assert doc.count('## Ocean') == 1
    before = doc
    bd.update_section('ocean', 'Ocean', 'second', path)
    assert open(path).read() == before


def _fake_python(folder):
    os.makedirs(folder)
    python = os.path.join(folder, 'python')
    with open(python, 'w') as f:
        f.write('#!/bin/sh\n')
    os.chmod(python, 0o755)
    return python


def test_find_anchor(tmp_path, monkeypatch):
    monkeypatch.delenv('PUFFER_ANCHOR', raising=False)
    python, note = bd.find_anchor()
    assert python is None and 'PufferLib 3.0 not measured' in note
    python = _fake_python(str(tmp_path / 'anchor' / 'venv' / 'bin'))
    assert bd.find_anchor(str(tmp_path / 'anchor')) == (python, None)           # the anchor folder
    assert bd.find_anchor(str(tmp_path / 'anchor' / 'venv')) == (python, None)  # its venv
    monkeypatch.setenv('PUFFER_ANCHOR', python)                                  # the interpreter itself
    assert bd.find_anchor() == (python, None)
    with pytest.raises(bd.PeerError, match='PUFFER_ANCHOR'):
        bd.find_anchor(str(tmp_path / 'nowhere'))


def test_find_cleanrl(tmp_path, monkeypatch):
    monkeypatch.delenv('CLEANRL_DIR', raising=False)
    assert bd.find_cleanrl()[0] is None
    checkout = tmp_path / 'cleanrl'
    with pytest.raises(bd.PeerError, match='ppo.py'):
        bd.find_cleanrl(str(checkout))
    (checkout / 'cleanrl').mkdir(parents=True)
    (checkout / 'cleanrl' / 'ppo.py').write_text('')
    with pytest.raises(bd.PeerError, match='no Python interpreter'):
        bd.find_cleanrl(str(checkout))
    python = _fake_python(str(checkout / '.venv' / 'bin'))
    monkeypatch.setenv('CLEANRL_DIR', str(checkout))
    assert bd.find_cleanrl() == ((python, str(checkout / 'cleanrl' / 'ppo.py')), None)


def test_peer_process_speaks_to_the_real_driver_and_reports_its_errors():
    # Our own interpreter runs the 3.0 driver: `hello` works (it only reads versions), `ocean`
    # fails (our package has no pufferlib.ocean.environment) and must come back as one PeerError.
    with bd.PeerProcess(sys.executable, benchdoc.ANCHOR) as peer:
        assert set(peer.about) == {'pufferlib', 'torch', 'numpy', 'gymnasium'}
        with pytest.raises(bd.PeerError, match="(?s)failed at 'ocean'.*ModuleNotFoundError"):
            peer.ask('ocean', env='puffer_squared', kwargs={}, rows=16, seconds=0.01)
        assert peer.ask('hello') == peer.about  # still answering after an error


def test_peer_process_that_dies_is_one_clear_error(tmp_path):
    script = tmp_path / 'dies.py'
    script.write_text('import sys\nprint("cannot import torch", file=sys.stderr)\nsys.exit(3)\n')
    with pytest.raises(bd.PeerError, match="(?s)exited while asked 'hello'.*cannot import torch"):
        bd.PeerProcess(sys.executable, 'dies', path=str(tmp_path))


def test_a_wrong_anchor_path_is_one_line_and_exit_2(tmp_path):
    result = subprocess.run([sys.executable, '-m', 'lab.bench_ocean', '--quick', '--anchor',
                             str(tmp_path / 'missing')], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count('\n') == 0 and 'no Python interpreter' in result.stderr
    assert 'Traceback' not in result.stderr


def test_ocean_render_puts_ratios_of_medians_in_the_head_to_head_table():
    results = {'squared': {'ours': [20e6, 30e6, 25e6], '3.0 defaults': [10e6, 12e6, 8e6]},
               'snake': {'ours': [4e6], '3.0 defaults': [8e6], '3.0 matched': [2e6]},
               'cartpole': {'ours': [20e6], 'Gymnasium CartPole-v1': [0.2e6]},
               'craftax': {'ours': [0.5e6], 'crafter.Env': [30.0]},
               'memory': {'ours': [5e6]}}
    text = bd.ocean_section(results, 3, 1.0, None, {'pufferlib': 3.0, 'numpy': '2'})
    lines = text.splitlines()
    squared = next(line for line in lines if line.startswith('| puffer_squared | PufferLib'))
    assert '| 25.0 | 10.0 | 10.0 / 12.0 / 8.0 | 40% | 2.50x |' in squared
    snake = [line for line in lines if line.startswith('| puffer_snake | PufferLib')]
    assert len(snake) == 2 and '**0.50x**' in snake[0] and 'width=64' in snake[1] and '2.00x' in snake[1]
    gym = next(line for line in lines if line.startswith('| puffer_cartpole | Gymnasium'))
    assert '| 20.0 | 0.200 | 0.200 | - | 100.00x |' in gym  # small rates keep their digits
    crafter = next(line for line in lines if line.startswith('| puffer_craftax | crafter.Env'))
    assert '| the crafter package, Python' in crafter and '| 0.500 | 3e-05 |' in crafter and '16666.67x' in crafter
    memory = next(line for line in lines if line.startswith('| puffer_memory |'))
    assert '| 5.0 | 5.0 | - | 10 | **no** |' in memory  # below the 10M sanity target; one round: no spread


def test_ocean_peers_name_real_settings_of_our_envs():
    from pufferlib import ocean
    for name, (peer, matched, differs) in bd.OCEAN_PEERS.items():
        assert name in ocean.ENVS and peer == f'puffer_{name}'
        assert matched is None or isinstance(matched, dict)
        assert isinstance(differs, str)


def test_ocean_ours_matched_row_sets_our_env_to_the_peers_game():
    """Where 3.0 has no option that matches our game (blastar), a row runs ours at 3.0's settings against
    3.0's defaults; the options it names are real options of our env."""
    from pufferlib import ocean
    results = {'blastar': {'ours': [3e6], 'ours matched': [12e6], '3.0 defaults': [4e6]}}
    lines = bd.ocean_section(results, 1, 1.0, None, {'pufferlib': 3.0, 'numpy': '2'}).splitlines()
    rows = [line for line in lines if line.startswith('| puffer_blastar') and 'PufferLib 3.0' in line]
    assert len(rows) == 2 and '**0.75x**' in rows[0] and '(wave_size=1, bombs=1)' in rows[1] and '3.00x' in rows[1]
    for name, options in bd.OCEAN_OURS_MATCHED.items():
        assert name in bd.OCEAN_PEERS
        assert set(options) <= set(ocean.SPECS[name].options)


@pytest.mark.parametrize('events, expected', [
    ([], None),
    ([(0.1, 400.0), (0.5, 480.0), (1.2, 480.0), (1.9, 470.0), (2.1, 500.0)], 2.0),  # [1, 2) averages 475
    ([(0.2, 500.0)], 1.0),                # the last, still open window counts
    ([(0.2, 500.0), (0.9, 100.0)], None),
    ([(3.5, 475.0)], 4.0),                # empty windows are skipped
])
def test_time_to_target_with_one_episode_pools_whole_windows(events, expected):
    assert bd.time_to_target(events, 475.0, window=1.0, episodes=1) == expected


def test_time_to_target_waits_for_enough_episodes():
    # One lucky 500 in the first second is not a solve: 20 episodes must average 475.
    lucky = [(0.5, 500.0)] + [(1.0 + 0.1 * k, 300.0) for k in range(10)]
    assert bd.time_to_target(lucky, 475.0) is None
    # 10 per second at 480 from t=5: the latest windows reach 20 episodes at the end of [6, 7).
    steady = lucky + [(5.0 + 0.1 * k, 480.0) for k in range(30)]
    assert bd.time_to_target(steady, 475.0) == 7.0
    # The pooled windows go back as far as needed, older bad episodes included: 10 x 480 + 10 x 300 fail.
    assert bd.time_to_target(lucky + [(5.0 + 0.1 * k, 480.0) for k in range(10)], 475.0) is None


def test_solved_at_weighs_each_window_by_its_episodes():
    # A window of 1 episode at 500 after a window of 19 at 474: 20 episodes averaging 475.25, solved.
    assert bd.solved_at([(1.0, 474.0 * 19, 19), (2.0, 500.0, 1)], 475.0) == 2.0
    assert bd.solved_at([(1.0, 470.0 * 19, 19), (2.0, 500.0, 1)], 475.0) is None


def test_our_shape_gives_the_peer_our_rollout_and_env_sizes():
    flags, sizes = bd.our_shape('puffer_snake')
    pairs = dict(zip(flags[::2], flags[1::2]))
    assert pairs['--train.bptt-horizon'] == '64' and pairs['--train.minibatch-size'] == '8192'
    assert int(pairs['--vec.num-envs']) % int(pairs['--vec.num-workers']) == 0
    assert sizes == bd.OCEAN_PEERS['snake'][1] and sizes['width'] == 64
    assert bd.our_shape('puffer_squared')[1] == {}


# What the sitting runs (lab.benchdoc PROGRAMS and SHORT) and the section each program writes.
SITTING = {'bench_ocean': 'ocean', 'bench_vector': 'vector', 'bench_train': 'training', 'bench_profile': 'profile'}


def test_the_sitting_runs_every_benchmark_program():
    assert tuple(SITTING) == benchdoc.PROGRAMS
    for program in SITTING:
        assert 'bd.update_section(' in open(os.path.join(lab.HERE, f'{program}.py')).read()
    doc = open(os.path.join(ROOT, 'docs', 'benchmarks.md')).read()
    assert 'flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.benchdoc' in doc, \
        'docs/benchmarks.md must name the one-sitting command'
    for section in SITTING.values():
        assert f'<!-- {section}:start -->' in doc or f'<!-- {section}-' in doc  # ocean: one table per CPU


def test_each_cpu_model_keeps_its_own_ocean_table(monkeypatch, tmp_path):
    from lab import bench_ocean
    path = str(tmp_path / 'benchmarks.md')
    for cpu, table in (('Intel(R) Xeon(R) Processor', 'xeon figures'), ('AMD EPYC 7B13', 'epyc figures'),
                       ('Intel(R) Xeon(R) Processor', 'xeon again')):
        monkeypatch.setattr(bd, 'cpu_name', lambda cpu=cpu: cpu)
        bd.update_section(*bench_ocean.section(), table, path)
    doc = open(path).read()
    assert '<!-- ocean-intel-xeon-processor:start -->' in doc and '<!-- ocean-amd-epyc-7b13:start -->' in doc
    assert 'xeon again' in doc and 'epyc figures' in doc and 'xeon figures' not in doc
    assert doc.count('## Ocean environments on') == 2


def _sitting(tmp_path, *args):
    """lab.benchdoc in a scratch tree whose stand-in programs (real processes) record that they ran and with
    which options; it writes tmp_path/docs/benchmarks.md, never the real page. The scratch `lab` package (the
    real benchdoc and its helpers, stand-ins for the rest) comes first on the path."""
    scratch = tmp_path / 'scripts' / 'lab'
    scratch.mkdir(parents=True, exist_ok=True)
    for name in ('__init__.py', 'benchdoc.py', 'benchmark.py'):
        shutil.copy(os.path.join(lab.HERE, name), scratch)
    ran = tmp_path / 'ran.txt'
    for program in SITTING:
        (scratch / f'{program}.py').write_text(
            f'import sys\nopen({str(ran)!r}, "a").write({program!r} + " " + " ".join(sys.argv[1:]) + "\\n")\n')
    env = {k: v for k, v in os.environ.items() if k not in ('PUFFER_ANCHOR', 'CLEANRL_DIR')}
    env['PYTHONPATH'] = os.pathsep.join([str(tmp_path / 'scripts'), *filter(None, [env.get('PYTHONPATH')])])
    done = subprocess.run([sys.executable, '-m', 'lab.benchdoc', *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = ran.read_text().splitlines()
    ran.unlink()
    return lines, done.stdout


def test_only_runs_the_named_scripts_and_leaves_the_sitting_section(tmp_path):
    doc = tmp_path / 'docs' / 'benchmarks.md'
    ran, out = _sitting(tmp_path, '--short', '--only', 'vector')
    assert ran == ['bench_vector --repeats 1 --seconds 0.3']
    assert not doc.exists() and 'sitting section' in out and '--only vector` ran' in out
    ran, out = _sitting(tmp_path, '--short')
    assert [line.split()[0] for line in ran] == list(SITTING)
    written = doc.read_text()
    assert written.count('<!-- sitting:start -->') == 1 and 'lab.benchdoc --short` ran' in written


def test_solve_table_marks_unsolved_runs_and_bounds_their_ratio():
    inf = float('inf')
    times = {'ours (its CartPole-v1 config)': [10.0, 14.0, 12.0], 'SB3 PPO defaults': [30.0, 36.0, 24.0],
             'CleanRL ppo.py defaults': [inf, 90.0, inf]}
    rows = {row[1]: row for row in bd.solve_table(times, 120.0, 'ours (its CartPole-v1 config)', 'CartPole-v1')}
    assert rows['ours (its CartPole-v1 config)'][2:] == ['12.0', '10.0 / 14.0 / 12.0', '33%', '-']
    assert rows['SB3 PPO defaults'][2:] == ['30.0', '30.0 / 36.0 / 24.0', '40%', '2.50x']
    assert rows['CleanRL ppo.py defaults'][2:] == ['>120', '>120 / 90.0 / >120', '-', '>10.0x']
    times['ours (its CartPole-v1 config)'] = [inf]
    assert {row[5] for row in bd.solve_table(times, 120.0, 'ours (its CartPole-v1 config)', 'CartPole-v1')} == {'-'}


def _profile_report(steps_per_s, env_ms):
    """A profile.json as the trainer writes it: 10 epochs, env_ms of each 100 ms epoch in env."""
    from pufferlib.profile import PHASES
    phases = {name: {'seconds': 0.0, 'percent': 0.0, 'per_epoch_ms': 0.0, 'steps_per_s': None} for name in PHASES}
    steps = steps_per_s * 1.0
    for name, ms in (('env', env_ms), ('backward', 100 - env_ms)):
        phases[name] = {'seconds': ms / 100, 'percent': float(ms), 'per_epoch_ms': float(ms),
                        'steps_per_s': steps / (ms / 100)}
    return {'epochs': 10, 'steps': steps, 'total_s': 1.0, 'steps_per_s': steps_per_s, 'phases': phases}


def test_profile_render_reports_medians_ratios_and_shares():
    reports = {1: [_profile_report(20_000, 60), _profile_report(22_000, 70), _profile_report(18_000, 50)],
               2: [_profile_report(10_000, 30), _profile_report(11_000, 30), _profile_report(12_000, 30)]}
    text = bd.profile_section(reports, 3, 30 * bd.profile_epoch_steps(), "2026-11-23; a test")
    # first cell (up to a note in brackets) -> the row
    rows = {line.split(' | ')[0].lstrip('| ').split(' (')[0]: line for line in text.splitlines()
            if line.startswith('| ')}
    assert '| 20,000 | 20k / 22k / 18k | 20% | 1.82x |' in rows['1']     # median 20k vs median 11k
    assert rows['2'].endswith('| 1.00x |')
    assert '| 60.0 | 60.0 | 33,333 | 30.0 | 30.0 |' in rows['env']      # medians of ms, % and steps/s alone
    assert rows['other'].endswith('| 0.0 | 0.0 | - | 0.0 | 0.0 | - |')   # under 0.5%: no steps/s alone
    assert 'With 1 thread the rollout (env wait, copies, inference) takes 60%' in text
    assert 'puffer train puffer_breakout --profile --quiet --train.device cpu --train.torch-threads T' in text
    assert '1 / 2 threads within each round: 2.00x, 2.00x, 1.50x; median 2.00x.' in text
    assert 'load average' not in text and '(load' not in text  # the machine's load is no figure of the page
    assert 'waits for the envs' in text and 'grows most' in text


def test_busy_cartpole_cpu_clock_burns_cpu_time_and_rejects_other_clocks():
    import time
    from lab.synthetic_envs import BusyCartPole
    env = BusyCartPole(300, 300, clock='cpu')
    env.reset(seed=0)
    start = time.thread_time()
    env.step(0)
    assert time.thread_time() - start >= 300e-6
    with pytest.raises(ValueError, match="'wall' or 'cpu'"):
        BusyCartPole(clock='process')


@pytest.mark.slow
def test_bench_vector_only_keeps_the_named_rows_and_serial():
    """A partial run (--only, --cpu-clock) prints just those rows and writes no doc."""
    done = subprocess.run([sys.executable, '-m', 'lab.bench_vector', '--envs', 'busy', '--sizes', '4',
                           '--only', 'pool', '--cpu-clock', '--seconds', '0.05', '--repeats', '1'],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr  # 1: targets not met, which a 0.05 s run says nothing about
    out = done.stdout
    rows = [line.split(' | ')[2] for line in out.splitlines() if line.startswith('| CartPole busy')]
    assert rows[0] == 'Serial' and len(rows) > 1 and all('pool' in name for name in rows[1:])
    assert '--cpu-clock' in out and 'wrote' not in out


def test_a_results_file_is_replaced_whole_or_not_at_all(tmp_path):
    path = str(tmp_path / 'results' / 'runs.json')
    bd.write_results(path, {'hopper': {'1': 2500.0}})
    assert bd.read_results(path, {}) == {'hopper': {'1': 2500.0}}
    with pytest.raises(TypeError):  # fails half-way through the dump: the file before it stays as it was
        bd.write_results(path, {'hopper': {'1': 2500.0}, 'walker': object()})
    assert bd.read_results(path, {}) == {'hopper': {'1': 2500.0}}
    assert os.listdir(tmp_path / 'results') == ['runs.json']  # no temporary file left behind
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)


def test_a_results_file_may_be_a_list_named_relative_to_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # acceptance_train.py --results go.json
    bd.write_results('go.json', [{'env': 'go', 'solved': True}])
    assert bd.read_results(str(tmp_path / 'go.json'), {}) == [{'env': 'go', 'solved': True}]


def test_a_damaged_results_file_is_one_clear_error_and_stays_as_it_is(tmp_path, capsys):
    path = tmp_path / 'runs.json'
    path.write_text('{"hopper": {"1": 25')  # cut off mid-write by an older writer
    with pytest.raises(bd.PufferError, match='not valid JSON .*git checkout -- .*move it aside'):
        bd.read_results(str(path), {})
    assert bd.run_main(lambda: bd.read_results(str(path), {}) and 0) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and 'runs.json is not valid JSON' in err
    assert path.read_text() == '{"hopper": {"1": 25'


def test_atari_render_puts_the_defaults_ratio_to_each_contender_and_the_former_flags_parse():
    import argparse

    from pufferlib import config as configuration

    from lab import bench_atari
    runs = {'default': [300.0, 200.0, 250.0], 'former': [50.0, 60.0, 40.0], 'cleanrl': [100.0, 125.0, 150.0]}
    text = bench_atari.render(runs, argparse.Namespace(seconds=60.0, repeats=3), [])
    rows = {line.split(' | ')[0].lstrip('| '): line for line in text.splitlines() if line.startswith('| ')}
    assert rows['ours, former default (LSTM, Muon)'].endswith('| 5.00x |')
    assert rows['CleanRL ppo_atari.py'].endswith('| 2.00x |')
    assert '| 250 |' in rows['ours, default (CleanRL recipe, auto sizes)']
    former = configuration.load('atari_pong', bench_atari.FORMER)  # the former default is still a valid config
    assert former['rnn']['hidden_size'] == 512 and former['train']['optimizer'] == 'muon'


# ---- the Atari rows of lab.bench_vector and the EnvPool peer ----

def test_atari_rows_give_every_library_as_many_workers_as_cores_and_check_the_best_pool():
    from lab import bench_vector as bv
    rows = bv.atari_implementations(2, [8, 16], envpool=object())
    labels = [(row[0], row[2]) for row in rows]
    assert ('EnvPool sync', 16) in labels and ('EnvPool async', 8) in labels and labels[-1] == (bv.ATARI_BOUND, 2)
    for label, _owner, envs, batch, workers, options in rows:
        if label.startswith('Multiprocessing'):
            assert options.get('num_processes', options['num_workers']) == 2 and batch in (envs, envs // 2)
        if label.startswith(('Gymnasium', 'SB3')):  # one process per env: as many envs as cores
            assert envs == 2
        if label.startswith('EnvPool'):
            assert workers == '2 threads' and options['envpool'] == batch
    assert not any(row[0].startswith('EnvPool') for row in bv.atari_implementations(2, [8], envpool=None))
    # Our pool at 3.6k, the bound at 4k, the fastest peer at 3k: 0.9x the bound and 1.2x the peer.
    rows = bv.atari_implementations(2, [8], envpool=None)
    figures = {'Serial': 2000.0, 'Multiprocessing sync': 3000.0, bv.DOUBLE_BUFFERED: 3600.0,
               'Gymnasium AsyncVectorEnv(shm)': 1000.0, 'SB3 SubprocVecEnv': 3000.0, bv.ATARI_BOUND: 4000.0}
    runs = {bv.atari_key(row): [figures.get(row[0], 100.0)] * 3 for row in rows}
    table, checks, _ = bv.atari_table(rows, runs, {bv.atari_key(rows[0]): [500.0], bv.atari_key(rows[-1]): [400.0]})
    assert [value for _, value, _ in checks] == pytest.approx([0.9, 1.2])
    assert 'fastest peer (SB3 SubprocVecEnv x2)' in checks[1][0] and bv.DOUBLE_BUFFERED in checks[0][0]
    bound_row = next(row for row in table if row[0] == bv.ATARI_BOUND)
    assert bound_row[7] == '1.00x' and table[0][9] == '500' and table[1][9] == '-'
    assert table[0][10] == '0.80x' and bound_row[10] == '1.00x' and table[1][10] == '-'
    args = SimpleNamespace(repeats=3, seconds=2.0)
    text = bv.render_atari(table, checks, [], args, ['ale-py 0'], (3.5, 4.25), 'EnvPool not measured: why')
    assert 'Load average (1 min) 3.5 at the start, 4.2 at the end' in text and '--envs atari --envpool DIR' in text
    assert '| 0.90 | 0.90 | yes |' in text and text.endswith('*EnvPool not measured: why.*')


def test_atari_peers_step_the_same_game_with_the_same_preprocessing():
    pytest.importorskip('ale_py', reason='pip install "pufferlib[atari]"')
    from lab import bench_vector as bv
    ours, theirs = bv.atari_bare(), bv.atari_gymnasium()
    try:
        assert ours.observation_space.shape == (84, 84, 4) and theirs.observation_space.shape == (4, 84, 84)
        assert ours.action_space.n == theirs.action_space.n == bv.ATARI_ACTIONS
        preprocessing = theirs.env  # FrameStackObservation over AtariPreprocessing
        assert (preprocessing.frame_skip, preprocessing.noop_max, preprocessing.terminal_on_life_loss) == \
            (ours.frameskip, ours.noop_max, ours.episodic_life) == (4, 30, False)
        assert preprocessing.unwrapped.ale.getFloat('repeat_action_probability') == ours.sticky == \
            bv.ENVPOOL_OPTIONS['repeat_action_probability']
    finally:
        ours.close()
        theirs.close()


def test_find_envpool(tmp_path, monkeypatch):
    monkeypatch.delenv('ENVPOOL_VENV', raising=False)
    python, note = bd.find_envpool()
    assert python is None and 'EnvPool not measured' in note and 'pip install envpool' in note
    python = _fake_python(str(tmp_path / 'envpool' / 'bin'))
    assert bd.find_envpool(str(tmp_path / 'envpool')) == (python, None)
    with pytest.raises(bd.PeerError, match='EnvPool: no Python interpreter.*ENVPOOL_VENV'):
        bd.find_envpool(str(tmp_path / 'nowhere'))


def test_a_wrong_envpool_path_is_one_line_and_exit_2_before_any_round(tmp_path):
    result = subprocess.run([sys.executable, '-m', 'lab.bench_vector', '--envs', 'atari', '--quick', '--envpool',
                             str(tmp_path / 'missing')], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count('\n') == 0 and 'EnvPool: no Python interpreter' in result.stderr
    assert 'Traceback' not in result.stderr and 'round' not in result.stderr


def test_envpool_driver_without_envpool_is_one_clear_error():
    # Our venv has no EnvPool: the driver still answers, and its failure comes back as one PeerError.
    if importlib.util.find_spec('envpool'):
        pytest.skip('envpool is importable here')
    with pytest.raises(bd.PeerError, match="(?s)EnvPool failed at 'hello'.*No module named 'envpool'"):
        bd.PeerProcess(sys.executable, 'lab.bench_envpool', label='EnvPool')


def test_envpool_driver_speaks_the_protocol_in_its_venv():
    """Needs EnvPool's venv (ENVPOOL_VENV=DIR; the recipe is in lab.bench_envpool's docstring)."""
    python, note = bd.find_envpool()
    if python is None:
        pytest.skip(note)
    from lab import bench_vector as bv
    with bd.PeerProcess(python, bv.ENVPOOL_MODULE, label='EnvPool') as peer:
        assert set(peer.about) == {'envpool', 'numpy', 'gymnasium'}
        for batch in (2, 1):  # step() and the asynchronous send/recv
            answer = peer.ask('atari', game=bv.ENVPOOL_GAME, num_envs=2, batch_size=batch, num_threads=1,
                              seconds=0.05, options=bv.ENVPOOL_OPTIONS)
            assert answer['sps'] > 0 and answer['cpu_us'] > 0
            assert answer['observation'] == [4, 84, 84] and answer['actions'] == bv.ATARI_ACTIONS
        with pytest.raises(bd.PeerError, match="EnvPool failed at 'atari'"):
            peer.ask('atari', game='NoSuchGame-v5', num_envs=2, batch_size=2, num_threads=1, seconds=0.05,
                     options={})


@pytest.mark.slow
def test_bench_vector_atari_rows_run_and_a_partial_run_writes_nothing():
    pytest.importorskip('ale_py', reason='pip install "pufferlib[atari]"')
    done = subprocess.run([sys.executable, '-m', 'lab.bench_vector', '--envs', 'atari', '--atari-sizes', '2',
                           '--only', 'sync', 'gymnasium', '--seconds', '0.05', '--repeats', '1'],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    rows = [line.split(' | ')[0].lstrip('| ') for line in done.stdout.splitlines() if line.startswith('| ')]
    assert {'Multiprocessing sync', 'Gymnasium AsyncVectorEnv(shm)', 'bound: 1 ALE per core, independent processes'} \
        <= set(rows)
    assert 'SB3 SubprocVecEnv' not in rows and 'wrote' not in done.stderr and 'CartPole' not in done.stdout
