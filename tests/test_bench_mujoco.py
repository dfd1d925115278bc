"""lab.bench_mujoco, MuJoCo against CleanRL: its real runs (tiny), its arithmetic and its refusals."""
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(importlib.util.find_spec('mujoco') is None, reason='needs the mujoco extra')


@pytest.fixture(scope='module')
def bench():
    from lab import bench_mujoco
    return bench_mujoco


def _run(*args, env=None):
    return subprocess.run([sys.executable, '-m', 'lab.bench_mujoco', *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def _recorded():
    path = os.path.join(ROOT, 'docs', 'baselines', 'mujoco.json')
    return open(path, 'rb').read() if os.path.exists(path) else None


def test_a_probe_trains_ours_on_the_v4_task_and_records_nothing():
    before = _recorded()
    done = _run('run', '--side', 'ours', '--env', 'hopper', '--seed', '1', '--steps', '4096', '--no-write')
    assert done.returncode == 0, done.stderr
    assert 'done  ours Hopper-v4 seed 1: return' in done.stderr and 'steps/s' in done.stderr
    assert _recorded() == before


def test_a_probe_passes_flags_after_the_double_dash_to_puffer_train():
    bad = _run('run', '--side', 'ours', '--env', 'hopper', '--seed', '1', '--steps', '4096', '--no-write',
               '--', '--policy.log-std-init', 'nan')
    assert bad.returncode == 1 and 'log_std_init must be a finite number' in bad.stderr
    unrecorded = _run('run', '--side', 'ours', '--', '--policy.log-std-init', '-0.5')
    assert unrecorded.returncode == 2 and 'add --no-write to a probe of other flags' in unrecorded.stderr
    peer_only = _run('run', '--side', 'cleanrl', '--no-write', '--', '--policy.log-std-init', '-0.5')
    assert peer_only.returncode == 2 and 'add --side ours' in peer_only.stderr


def test_refusals_are_one_line_each():
    short = _run('run', '--side', 'ours', '--steps', '4096')
    assert short.returncode == 2 and 'add --no-write to a probe' in short.stderr
    no_peer = _run('run', '--side', 'cleanrl', '--no-write', env={'CLEANRL_DIR': ''})
    assert no_peer.returncode == 2 and '--cleanrl DIR' in no_peer.stderr and '--side ours' in no_peer.stderr
    wrong = _run('run', '--cleanrl', os.path.join(ROOT, 'docs'), '--no-write')
    assert wrong.returncode == 2 and 'ppo_continuous_action.py does not exist' in wrong.stderr
    assert 'Traceback' not in short.stderr + no_peer.stderr + wrong.stderr


def test_cleanrl_output_is_read_for_episodes_and_its_last_sps(bench):
    lines = ['global_step=1000, episodic_return=[12.5]', 'SPS: 850', 'noise episodic_return=3',
             'global_step=2048, episodic_return=[-3.25]', 'SPS: 901']
    assert bench.parse_cleanrl(lines) == ([(1000, 12.5), (2048, -3.25)], 901.0)


def test_our_final_return_weights_the_last_rows_by_their_episodes(bench):
    rows = [{'env/episodes': 50, 'env/episode_return': 0.0},
            {'env/episodes': 4, 'env/episode_return': 100.0},
            {'sps': 1.0},  # a row in which no episode ended
            {'env/episodes': 8, 'env/episode_return': 10.0}]
    assert bench.final_return_of_rows(rows) == (pytest.approx((400 + 80) / 12), 12)
    with pytest.raises(bench.bd.PeerError, match='no finished episode'):
        bench.final_return_of_rows([{'sps': 1.0}])


def test_curves_are_binned_by_steps_and_weighted(bench):
    curve = bench.binned([(10, 1.0, 1), (20, 3.0, 3), (999_999, 7.0, 1)], 1_000_000)
    assert curve == [[10_000, 2.5], [1_000_000, 7.0]]


def test_the_table_says_met_only_for_a_higher_return_in_half_the_time(bench):
    def runs(ret, seconds):
        return {str(s): {'return': ret, 'seconds': seconds, 'sps': 1000.0, 'curve': [], 'hardware': 'cpu'}
                for s in bench.SEEDS}
    results = {'Hopper-v4': {'ours': runs(2500.0, 400.0), 'cleanrl': runs(2000.0, 1000.0)},
               'HalfCheetah-v4': {'ours': runs(2500.0, 600.0), 'cleanrl': runs(2000.0, 1000.0)},
               'Walker2d-v4': {'ours': {'1': runs(2500.0, 100.0)['1']}, 'cleanrl': runs(3000.0, 1000.0)}}
    table = {line.split(' | ')[0][2:]: line for line in bench.section(results).splitlines()
             if line.startswith('| ') and '-v4' in line}
    assert table['Hopper-v4'].endswith('| met |')
    assert table['HalfCheetah-v4'].endswith('| **missed** |')  # 0.6x the wall time
    n = len(bench.SEEDS)
    assert table['Walker2d-v4'].endswith(f'| **missed** (1 / {n} of {n} seeds) |')
    assert 'Not run yet' in bench.section({})


def test_walls_from_two_machines_are_named_in_the_target_and_the_hardware_line(bench):
    def runs(hardware, seconds):
        return {str(s): {'return': 3000.0, 'seconds': seconds, 'sps': 1000.0, 'curve': [], 'hardware': hardware}
                for s in bench.SEEDS}
    mixed = {'Hopper-v4': {'ours': runs('AMD', 400.0), 'cleanrl': runs('Intel', 1000.0)}}
    text = bench.section(mixed)
    assert 'Hardware: ours: AMD; CleanRL: Intel.' in text
    assert '| met (walls from two machines) |' in text
    same = bench.section({'Hopper-v4': {'ours': runs('AMD', 400.0), 'cleanrl': runs('AMD', 1000.0)}})
    assert 'Hardware: AMD.' in same and '| met |' in same and 'walls from two machines)' not in same


def test_the_hardware_line_names_the_days_the_runs_ended(bench):
    def runs(date):
        return {str(s): {'return': 3000.0, 'seconds': 500.0, 'sps': 1000.0, 'curve': [], 'hardware': 'AMD',
                         'date': date} for s in bench.SEEDS}
    one_day = bench.section({'Hopper-v4': {'ours': runs('2026-11-28'), 'cleanrl': runs('2026-11-28')}})
    assert 'Hardware: AMD. Runs of 2026-11-28.' in one_day
    two = bench.section({'Hopper-v4': {'ours': runs('2026-11-29'), 'cleanrl': runs('2026-11-28')}})
    assert 'Hardware: AMD. Runs of 2026-11-28 to 2026-11-29.' in two


def test_halfcheetah_trains_with_its_own_file_as_puffer_train_mujoco_halfcheetah_does(bench):
    from pufferlib import config as configuration
    flags = bench.task_config('HalfCheetah-v4')
    assert flags[0] == '--config' and flags[1].endswith('mujoco_halfcheetah.toml')
    assert bench.task_config('Hopper-v4') == bench.task_config('Walker2d-v4') == []
    v4 = configuration.load('mujoco', ['--env.task', 'HalfCheetah-v4'], config_file=flags[1])
    assert v4['policy'] == configuration.load('mujoco_halfcheetah')['policy']
    assert v4['policy']['log_std_init'] < 0
    assert configuration.load('mujoco_hopper')['policy']['log_std_init'] == 0


def test_the_p_value_is_welchs_on_the_per_seed_returns(bench):
    stats = pytest.importorskip('scipy.stats')
    ours, peer = [4902.0, 2838.0, 3315.0], [1467.0, 3684.0, 3655.0]
    expected = stats.ttest_ind(ours, peer, equal_var=False).pvalue
    assert bench.welch_p({'n': 3, 'values': ours}, {'n': 3, 'values': peer}) == f'{expected:.2f}'
    assert bench.welch_p({'n': 1, 'values': [1.0]}, {'n': 3, 'values': peer}) == '-'
    assert bench.welch_p(None, {'n': 3, 'values': peer}) == '-'
    assert bench.welch_p({'n': 2, 'values': [5.0, 5.0]}, {'n': 2, 'values': [3.0, 3.0]}) == '-'  # no spread


def test_pending_runs_skip_what_the_results_hold(bench):
    results = {'Hopper-v4': {'ours': {'1': {}}}}
    jobs = bench.pending(results, ['hopper'], [1, 2], ['ours', 'cleanrl'])
    assert jobs == [('hopper', 1, 'cleanrl'), ('hopper', 2, 'ours'), ('hopper', 2, 'cleanrl')]


@pytest.mark.skipif(not os.environ.get('CLEANRL_DIR'), reason='CleanRL runs where CLEANRL_DIR names its checkout')
def test_a_probe_runs_cleanrl_from_its_own_venv():
    done = _run('run', '--side', 'cleanrl', '--env', 'hopper', '--seed', '1', '--steps', '4096', '--no-write')
    assert done.returncode == 0, done.stderr
    assert 'done  cleanrl Hopper-v4 seed 1: return' in done.stderr


def test_a_damaged_results_file_stops_the_sweep_before_it_runs_or_writes(bench, tmp_path, monkeypatch, capsys):
    results, doc = tmp_path / 'mujoco.json', tmp_path / 'baselines.md'
    results.write_text('{"Hopper-v4": {"ours": {"1": {"return": 25')
    monkeypatch.setattr(bench, 'RESULTS', str(results))
    monkeypatch.setattr(bench, 'DOC', str(doc))
    assert bench.bd.run_main(lambda: bench.main(['render'])) == 2
    assert 'mujoco.json is not valid JSON' in capsys.readouterr().err
    assert results.read_text().endswith('25') and not doc.exists()
