"""pufferlib.evaluate.episode_means (whole-episode stats of a checkpoint or a scripted player) and the
record of the learning-acceptance runs that scripts/lab/baselines.py draws and writes."""
import json
import os
import subprocess
import sys

import pytest
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import evaluate
from pufferlib import train as training
from pufferlib.evaluate import episode_means
from pufferlib.rundir import CheckpointError

from small_run import SMALL

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_BATCH = [*SMALL, '--train.total-timesteps', '1024']


def test_every_row_finishes_its_episodes_and_nothing_in_progress_counts():
    """rware's episodes all last 500 steps: with 2 warehouses and one episode each, exactly those two
    episodes count; asking for two each stops after the second, with four."""
    one = episode_means('puffer_rware', num_envs=2, per_env=1, autopilot=True)
    assert one['episodes'] == 2 and one['episode_length'] == 500
    two = episode_means('puffer_rware', num_envs=2, per_env=2, autopilot=True)
    assert two['episodes'] == 4 and two['episode_length'] == 500
    assert one['score'] > 0 and two['score'] > 0  # the scripted robots deliver


def test_a_trained_checkpoint_is_scored_over_whole_episodes(tmp_path, monkeypatch):
    """The trained bandit policy picks the best arm (perf > 0.9 over whole episodes); an untrained
    one, checked the same way, does not: the measure separates the two."""
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    flags = ['--train.log-interval', '0', '--train.seed', '1']
    untrained = training.train('puffer_bandit', config=configuration.load(
        'puffer_bandit', [*ONE_BATCH, *flags]), quiet=True)
    trained = training.train('puffer_bandit', config=configuration.load(
        'puffer_bandit', ['--train.total-timesteps', '2000000', *flags]), quiet=True)
    good = episode_means('puffer_bandit', trained['checkpoint'], num_envs=16, per_env=4)
    assert good['episodes'] >= 64 and good['perf'] > 0.9, good
    bad = episode_means('puffer_bandit', untrained['run_dir'], num_envs=16, per_env=4)
    assert bad['perf'] < good['perf'] - 0.2, (bad, good)


def test_bad_arguments_and_checkpoints_of_another_env_are_refused(tmp_path, monkeypatch):
    with pytest.raises(pufferlib.APIUsageError, match='per_env must be a positive whole number'):
        episode_means('puffer_rware', per_env=0, autopilot=True)
    with pytest.raises(pufferlib.APIUsageError, match='num_envs must be a positive whole number'):
        episode_means('puffer_rware', num_envs=2.5, autopilot=True)
    with pytest.raises(pufferlib.APIUsageError, match='finished fewer than 2 episodes in 10 steps'):
        episode_means('puffer_rware', num_envs=1, per_env=2, max_steps=10, autopilot=True)
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    summary = training.train('puffer_squared', config=configuration.load(
        'puffer_squared', ONE_BATCH), quiet=True)
    with pytest.raises(CheckpointError, match='was trained on puffer_squared, not puffer_bandit'):
        episode_means('puffer_bandit', summary['checkpoint'])


def record_acceptance(tmp_path, *runs):
    """`python -m lab.baselines --record-acceptance` of `runs` (as acceptance_train.py --results writes them),
    writing into tmp_path instead of docs/; the doc's path."""
    given = tmp_path / 'runs.json'
    given.write_text(json.dumps(runs))
    done = subprocess.run([sys.executable, '-m', 'lab.baselines', '--docs', str(tmp_path),
                           '--record-acceptance', str(given)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().removeprefix('wrote ')


def acceptance_run(seed, solved, value):
    # 1,200 rows, more than the 400 the results file keeps of a run
    curve = [[t / 12, t * 1000 // 12, value * t / 1200] for t in range(1, 1201)]
    return {'env': 'puffer_go', 'metric': 'env/perf', 'target': 0.9, 'seed': seed, 'solved': solved,
            **({'step': 100_000, 'seconds': 100.0, 'value': value} if solved else {}),
            'best_row': value, 'final': value, 'steps_run': 100_000, 'seconds_run': 100.0, 'budget_s': 1200,
            'budget_steps': 20_000_000, 'run_dir': '/nowhere', 'sps': 1000.0,
            'checks': [{'seconds': 100.0, 'step': 100_000, 'value': value}], 'curve': curve}


def test_acceptance_runs_are_kept_per_seed_drawn_and_written(tmp_path):
    doc_path = record_acceptance(tmp_path, acceptance_run(0, False, 0.5),
                                 acceptance_run(0, True, 0.95),   # seed 0 again: replaces the first
                                 acceptance_run(1, False, 0.85))
    assert doc_path == str(tmp_path / 'baselines.md')
    runs = json.load(open(tmp_path / 'baselines' / 'acceptance.json'))['puffer_go']
    assert sorted(runs) == ['0', '1'] and runs['0']['solved'] and not runs['1']['solved']
    assert len(runs['0']['curve']) <= 401 and runs['0']['curve'][-1][0] == 100.0  # thinned, the last row kept
    assert 'run_dir' not in runs['0']  # scratch space of the machine that ran it
    assert (tmp_path / 'baselines' / 'acceptance_puffer_go.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    doc = open(doc_path).read()
    row = next(line for line in doc.splitlines() if line.startswith('| puffer_go |'))
    assert '1 of 2' in row and '100 / missed (100 s run)' in row and '0.1M / missed' in row and '0.950 / 0.850' in row
    assert '![puffer_go acceptance curves](baselines/acceptance_puffer_go.png)' in doc
    pending = doc.split('### Not run yet', 1)[1]
    assert 'puffer_tetris' in pending and '-m lab.acceptance_train --only tetris --seed $S' in pending
    assert 'puffer_go' not in pending


def test_an_acceptance_run_stops_on_a_checked_policy(tmp_path):
    """scripts/lab/acceptance_train.py's run on the bandit: a row at the target stops training, the saved
    policy is checked over whole episodes, and the run is met only with a check at the target."""
    results = tmp_path / 'results.json'
    done = subprocess.run([sys.executable, '-m', 'lab.acceptance_train', '--only', 'bandit',
                           '--seed', '1', '--results', str(results)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, 'PUFFER_EXPERIMENTS': str(tmp_path / 'experiments')})
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads(results.read_text())
    assert result['env'] == 'puffer_bandit' and result['metric'] == 'env/perf' and result['target'] == 0.9
    assert result['solved'] and result['interrupted'] is None
    assert result['checks'] and result['checks'][-1]['value'] == result['value'] >= 0.9
    assert all(check['value'] < 0.9 for check in result['checks'][:-1])  # earlier checks fell short
    assert result['curve'][-1][1] == result['step'] < result['budget_steps']  # stopped at the check, not the budget


def test_acceptance_refuses_a_name_that_matches_no_task():
    done = subprocess.run([sys.executable, '-m', 'lab.acceptance_train', '--only', 'nope'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no task matches ['nope']; tasks: puffer_squared" in done.stderr, done.stderr


@pytest.fixture(scope='module')
def tiny_run(tmp_path_factory):
    """A real run of puffer_squared trained for one batch: its policy is still close to uniform, so its
    actions are sampled, not fixed."""
    experiments = tmp_path_factory.mktemp('experiments')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('PUFFER_EXPERIMENTS', str(experiments))
        summary = training.train('puffer_squared', config=configuration.load('puffer_squared', ONE_BATCH), quiet=True)
    return summary['run_dir'], summary['checkpoint']


def puffer_evals(*argvs):
    """`puffer eval` as subprocesses, run side by side: (exit status, stdout, stderr) of each."""
    environ = {**os.environ, 'OMP_NUM_THREADS': '1'}
    procs = [subprocess.Popen([sys.executable, '-m', 'pufferlib.cli', 'eval', 'puffer_squared', *argv], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ) for argv in argvs]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    return [(proc.returncode, out, err) for proc, (out, err) in zip(procs, outputs)]


def test_eval_takes_a_run_its_checkpoints_folder_or_a_checkpoint_file(tiny_run, tmp_path):
    run_dir, checkpoint = tiny_run
    empty_run = tmp_path / 'empty-run'
    (empty_run / 'checkpoints').mkdir(parents=True)
    flags = ['--episodes', '2', '--seed', '5']
    answers = puffer_evals(*([('--checkpoint', where, *flags) for where in
                              (run_dir, os.path.join(run_dir, 'checkpoints'), os.path.join(run_dir, 'checkpoints', ''),
                               checkpoint)]
                             + [('--checkpoint', str(empty_run), *flags), ('--checkpoint', str(tmp_path), *flags)]))
    *found, (empty_code, _, empty_err), (none_code, _, none_err) = answers
    for code, out, err in found:
        assert code == 0 and 'puffer_squared: mean episode return' in out, err
    assert len({out for _, out, _ in found}) == 1  # the same checkpoint, the same seed: the same line
    assert empty_code == 2 and f'run directory {empty_run} has no checkpoints yet' in empty_err, empty_err
    assert none_code == 2 and f'{tmp_path} holds no checkpoints: pass a run directory' in none_err, none_err


def test_eval_with_one_seed_gives_one_set_of_returns(tiny_run):
    """The policy samples its actions (it is barely trained): one seed must still give one result."""
    run_dir, _ = tiny_run
    # Twelve episodes and two other seeds: a return takes few values (0, 1/8, 1/4, ...), so six episodes of two
    # seeds matched by chance once in a few hundred runs; a seed that is ignored still makes all four match.
    answers = puffer_evals(*[('--checkpoint', run_dir, '--episodes', '12', '--seed', seed) for seed in '0012'])
    for code, _, err in answers:
        assert code == 0, err
    (_, first, _), (_, again, _), (_, one, _), (_, two, _) = answers
    assert first == again, (first, again)
    assert not first == one == two, 'seeds 1 and 2 played the episodes of seed 0: the policy may not be sampling'


def test_argmax_takes_every_heads_most_likely_action_and_the_box_mean():
    """`puffer eval --argmax`: Discrete and each MultiDiscrete head by argmax (it sampled MultiDiscrete heads
    before), Box by the Gaussian's mean: what ocean/puffernet.h picks without a generator."""
    discrete = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]])
    assert evaluate.greedy_action(discrete).tolist() == [1, 0]
    heads = (torch.tensor([[0.0, 5.0], [5.0, 0.0]]), torch.tensor([[1.0, 0.0, 9.0], [0.0, 7.0, 0.0]]))
    assert evaluate.greedy_action(heads).tolist() == [[1, 2], [0, 1]]
    mean = torch.tensor([[0.25, -0.5]])
    box = torch.distributions.Independent(torch.distributions.Normal(mean, torch.ones_like(mean)), 1)
    assert torch.equal(evaluate.greedy_action(box), mean)


def test_eval_prints_every_stat_the_env_logs_and_refuses_a_run_with_no_episode(tiny_run, tmp_path):
    """Beside the return, the env's score and perf; and a --max-steps too short for any episode is an error
    (it printed "nan over 0 episodes" and exit 0), the frames played kept in the video asked for."""
    run_dir, _ = tiny_run
    video = tmp_path / 'short.gif'
    (code, out, err), (short_code, _, short_err) = puffer_evals(
        ('--checkpoint', run_dir, '--episodes', '2'), ('--checkpoint', run_dir, '--max-steps', '10', '--video', video))
    assert code == 0, err
    stats = out.splitlines()[1]
    assert 'score ' in stats and 'perf ' in stats and 'episode_length ' in stats, out
    assert short_code == 2, short_err
    assert 'no episode of puffer_squared finished in its --max-steps 10 steps; the 10 frames played are in' in short_err
    assert video.stat().st_size > 0 and 'Traceback' not in short_err


MISSING = '''import sys
sys.modules[sys.argv[1]] = None  # as if the package were not installed
from pufferlib import cli
sys.exit(cli.main(sys.argv[2:]))
'''


@pytest.mark.parametrize('module, args, says', [
    ('torch', ['train', 'puffer_squared'], 'this command needs torch, which is not installed: pip install -c '
                                           'constraints.txt -e ".[train]"'),
    ('matplotlib', ['plot', '.'], 'this command needs matplotlib'),
    # Checked before the checkpoint is even looked for, so before any episode is played.
    ('PIL', ['eval', 'puffer_squared', '--checkpoint', '/nonexistent.pt', '--video', 'x.gif'],
     'writing .gif needs Pillow: pip install -c constraints.txt -e ".[train]" in this repository, or write a .mp4'),
])
def test_a_missing_package_is_the_install_line_not_a_traceback(module, args, says, tmp_path):
    done = subprocess.run([sys.executable, '-c', MISSING, module, *args], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, 'PUFFER_EXPERIMENTS': str(tmp_path)})
    assert done.returncode == 2 and 'Traceback' not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert says in line, line


@pytest.mark.parametrize('check', ['evaluate', 'episode_means'])
def test_evaluation_holds_torch_to_the_trainers_thread_rule_and_puts_it_back(tiny_run, monkeypatch, check):
    """In a container given one CPU of 16, a policy plays on one thread (torch would take 16), and the
    caller's thread count is back afterwards."""
    from pufferlib import cpus
    monkeypatch.setattr(cpus, 'cpu_quota', lambda: 1.0)
    monkeypatch.setattr(cpus, 'affinity_count', lambda: 16)
    run_dir, _ = tiny_run
    seen = []
    original = torch.set_num_threads
    monkeypatch.setattr(torch, 'set_num_threads', lambda n: (seen.append(n), original(n)))
    before = torch.get_num_threads()
    if check == 'evaluate':
        evaluate.evaluate('puffer_squared', run_dir, episodes=1)
    else:
        episode_means('puffer_squared', run_dir, num_envs=2, per_env=1)
    assert seen == [1, before] and torch.get_num_threads() == before
