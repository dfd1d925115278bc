"""Sweeps: the search space, the methods, the ledger, trials that fail, resume after SIGKILL, best.toml,
the report, parallel trials and the Ray backend. Trials are real `puffer sweep` subprocesses on
puffer_bandit with a few thousand steps."""
import functools
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib

import numpy as np
import psutil
import pytest

import pufferlib
import pufferlib.vector as pv
from pufferlib import config as configuration
from pufferlib import sweep
from pufferlib.sweep import methods
from pufferlib.cli import main

from envs import FaultyEnv

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')
# A trial in a few seconds: 64 bandit rows in one process, 20k steps, a metrics row every epoch. No
# confirmation runs unless a test asks for them (a later --sweep.confirm-seeds wins).
TINY = ['--vec.backend', 'Serial', '--vec.num-envs', '1', '--env.num-envs', '64', '--train.bptt-horizon', '16',
        '--train.minibatch-size', '1024', '--train.total-timesteps', '20000', '--train.log-interval', '0',
        '--sweep.only', 'train.learning_rate,train.ent_coef', '--sweep.confirm-seeds', '0']


pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path


def run_sweep(*flags, env='puffer_bandit', timeout=600, extra_env=None):
    """`puffer sweep` as a user runs it; returns (the completed process, the sweep directory)."""
    out = subprocess.run([PUFFER, 'sweep', env, *TINY, *flags, '--quiet'], capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, **(extra_env or {})})
    path = next((line.split('sweep directory ', 1)[1] for line in out.stdout.splitlines()
                 if line.startswith('sweep directory ')), None)
    return out, path


def ledger(path):
    return sweep.Ledger(os.path.join(path, 'trials.jsonl')).read()


def ends(path):
    return [r for r in ledger(path) if r['type'] == 'end']


# --- the search space -------------------------------------------------------------------------

@pytest.mark.parametrize('distribution, low, high, centre, values', [
    ('log', 1e-5, 1e-1, 1e-3, [1e-5, 3e-4, 1e-3, 0.02, 1e-1]),
    ('logit', 0.9, 0.9999, 0.99, [0.9, 0.95, 0.99, 0.999, 0.9999]),
    ('linear', -2.0, 3.0, 0.5, [-2.0, -0.3, 0.5, 2.9, 3.0]),
    ('int', 1, 9, 4, [1, 2, 4, 7, 9]),
    ('pow2', 8, 1024, 64, [8, 16, 64, 512, 1024]),
])
def test_normalisation_round_trips(distribution, low, high, centre, values):
    param = sweep.Param('train.key', distribution, low, high, centre, integer=isinstance(centre, int))
    assert param.normalize(low) == pytest.approx(-1) and param.normalize(high) == pytest.approx(1)
    for value in values:
        z = param.normalize(value)
        assert -1 <= z <= 1
        assert param.value(z) == pytest.approx(value, rel=1e-9)
        assert type(param.value(z)) is type(value)
    zs = np.linspace(-1, 1, 41)
    mapped = [param.value(z) for z in zs]
    assert all(low <= v <= high for v in mapped)
    assert mapped == sorted(mapped)  # monotonic
    assert param.value(-5) == low and param.value(5) == high  # clipped
    if distribution == 'log':  # equal steps in z are equal ratios
        assert param.value(0.5) / param.value(0.0) == pytest.approx(param.value(0.0) / param.value(-0.5))
    if distribution == 'pow2':
        assert all(v & (v - 1) == 0 for v in mapped)


def test_default_space_is_the_usual_ppo_keys_centred_on_the_config():
    config = configuration.load('puffer_squared', ['--train.learning-rate', '0.003'])
    space = sweep.parse_space(config)
    assert {'train.learning_rate', 'train.gamma', 'train.gae_lambda', 'train.ent_coef'} <= set(space.names)
    values = space.values(space.centre)
    assert values['train.learning_rate'] == pytest.approx(0.003)
    assert values['train.gamma'] == pytest.approx(config['train']['gamma'])


def test_sweep_tables_layer_key_by_key_and_round_trip_through_toml(tmp_path):
    extra = tmp_path / 'extra.toml'
    extra.write_text('[sweep.train.learning_rate]\nmax = 0.05\n\n[sweep.env.num_arms]\ndistribution = "int"\n'
                     'min = 2\nmax = 8\n')
    config = configuration.load('puffer_bandit', config_file=str(extra))
    assert config['sweep']['train']['learning_rate'] == {'distribution': 'log', 'min': 1e-4, 'max': 0.05}
    assert 'gamma' in config['sweep']['train']  # the other defaults stay
    assert sweep.parse_space(config).values(np.ones(8))['env.num_arms'] == 8
    assert tomllib.loads(configuration.to_toml(config)) == config


BAD_SECTIONS = [
    ('[sweep.train.learning_rat]\ndistribution = "log"\nmin = 1e-4\nmax = 0.1',
     'learning_rat.*did you mean learning_rate'),
    ('[sweep.train.gamma]\ndistribution = "logit"\nmin = 0.99\nmax = 0.9',
     r'sweep.train.gamma.*min 0.99 is greater than max 0.9'),
    ('[sweep.train.ent_coef]\ndistribution = "log"\nmin = 0.0\nmax = 0.1',
     r'sweep.train.ent_coef.*log distribution needs min > 0'),
    ('[sweep.train.gamma]\ndistribution = "logit"\nmin = 0.5\nmax = 1.0', r'sweep.train.gamma.*0 < min <= max < 1'),
    ('[sweep.train.clip_coef]\ndistribution = "normal"', r'sweep.train.clip_coef.*distribution must be one of'),
    ('[sweep.train.clip_coef]\nmean = 0.2', r"sweep.train.clip_coef.*unknown field 'mean'"),
    ('[sweep.train.vf_coef]\nmin = "a"', r'sweep.train.vf_coef.*min must be a finite number'),
    ('[sweep.train.learning_rate]\nmax = 0.001', r'sweep.train.learning_rate.*0.015.*outside'),
    ('[sweep.train.optimizer]\ndistribution = "linear"\nmin = 0\nmax = 1', r'sweep.train.optimizer.*not a number'),
    ('[sweep.env.no_such_key]\ndistribution = "linear"\nmin = 0\nmax = 1', r'sweep.env.no_such_key.*has no key'),
    ('[sweep.wandb.project]\ndistribution = "linear"\nmin = 0\nmax = 1', r'sweep.wandb'),
    ('[sweep]\nmethod = "bayes"', r'sweep.method \(--sweep.method\) must be one of protein'),
    ('[sweep]\nparallel = 0', r'sweep.parallel \(--sweep.parallel\) must be at least 1'),
    ('[sweep]\nonly = "train.gama"', r'sweep.only.*train.gama'),
    ('[sweep.env.best_prob]\ndistribution = "linear"\nmin = 0.5\nmax = 1.5',
     r"sweep.env.best_prob.*range \[0.5, 1.5\].*puffer_bandit's option best_prob, \[0, 1\].*spec.toml"),
    ('[sweep.env.best_arm]\ndistribution = "int"\nmin = 0\nmax = 9',
     r'sweep.env.best_arm.*\[0, 9\].*\[0, num_arms - 1 = 3\] with num_arms = 4'),
    ('[sweep.env.num_arms]\ndistribution = "int"\nmin = 2\nmax = 8\n[sweep.env.best_arm]\ndistribution = "int"\n'
     'min = 0\nmax = 9', r'sweep.env.best_arm.*\[0, 9\].*\[0, num_arms - 1 = 7\]'),
]


@pytest.mark.parametrize('text, message', BAD_SECTIONS)
def test_bad_sweep_sections_name_the_key(tmp_path, text, message):
    path = tmp_path / 'bad.toml'
    path.write_text(text + '\n')
    with pytest.raises(configuration.ConfigError, match=message):
        sweep.resolve('puffer_bandit', config_file=str(path))


def test_bad_sweep_section_is_one_line_from_the_cli(tmp_path, capsys):
    path = tmp_path / 'bad.toml'
    path.write_text('[sweep.train.ent_coef]\ndistribution = "log"\nmin = -1.0\nmax = 0.1\n')
    assert main(['sweep', 'puffer_bandit', '--config', str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'sweep.train.ent_coef' in err[0] and 'min > 0' in err[0]
    assert main(['sweep']) == 2
    assert main(['sweep', '--resume', str(tmp_path / 'nothing')]) == 2
    assert 'not a sweep directory' in capsys.readouterr().err


def test_an_env_range_past_the_options_limits_stops_before_anything_is_written(experiments, tmp_path, capsys):
    path = tmp_path / 'wide.toml'
    path.write_text('[sweep.env.other_prob]\ndistribution = "linear"\nmin = 0.0\nmax = 2.0\n')
    assert main(['sweep', 'puffer_bandit', '--config', str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'other_prob' in err[0] and '[0.0, 2.0]' in err[0] and '[0, 1]' in err[0]
    assert not (experiments / 'sweeps').exists() or not list((experiments / 'sweeps').iterdir())
    # within the limits (of the loosest swept num_arms) it is a sweep
    path.write_text('[sweep.env.num_arms]\ndistribution = "int"\nmin = 2\nmax = 8\n[sweep.env.best_arm]\n'
                    'distribution = "int"\nmin = 0\nmax = 7\n')
    sweep.resolve('puffer_bandit', config_file=str(path))


@pytest.mark.parametrize('flag, value, what', [
    ('--sweep.confirm-top', '-1', '>= 0'),
    ('--sweep.confirm-top', '1.5', 'must be int'),
    ('--sweep.confirm-seeds', 'two', 'must be int'),
    ('--sweep.seed', '-1', 'from 0 to'),  # once a ValueError from numpy, after the sweep folder was made
    ('--sweep.seed', str(2 ** 40), 'from 0 to'),
    ('--sweep.max-hours', 'inf', 'finite'),
    ('--sweep.trial-timeout', 'nan', 'finite'),
])
def test_bad_settings_are_one_error_naming_the_flag_before_anything_is_written(experiments, capsys, flag, value,
                                                                               what):
    assert main(['sweep', 'puffer_bandit', *TINY, flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0] and what in err[0] and value in err[0]
    assert not (experiments / 'sweeps').exists() or not list((experiments / 'sweeps').iterdir())
    path = sweep.create('puffer_bandit', TINY)  # the same check on resume, before anything is written
    assert main(['sweep', '--resume', path, flag, value]) == 2
    assert flag in capsys.readouterr().err and ledger(path) == []


@pytest.mark.parametrize('flags, says', [
    (['--env.num-arms', '0'], 'num_arms=0 is outside'),
    (['--train.total-timesteps', '100'], 'is less than one epoch'),
])
def test_a_base_config_every_trial_would_fail_on_is_refused_before_the_sweep(experiments, capsys, flags, says):
    """The env's options and the rollout's sizes are checked once, as a run's set-up checks them: a sweep on a
    broken base config ran its trials to the limit, every one failing the same way."""
    assert main(['sweep', 'puffer_bandit', *TINY, *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not (experiments / 'sweeps').exists() or not list((experiments / 'sweeps').iterdir())


@pytest.mark.parametrize('flags, package', [
    ([], 'scikit-learn.*pufferlib\\[sweep\\]'),
    (['--sweep.method', 'optuna'], 'optuna.*pufferlib\\[optuna\\]'),
    (['--sweep.method', 'random', '--sweep.backend', 'ray'], 'ray.*pufferlib\\[ray\\]'),
])
def test_a_setting_whose_package_is_missing_stops_before_anything_is_written(experiments, capsys, monkeypatch,
                                                                            flags, package):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec',
                        lambda name, *a: None if name in ('sklearn', 'optuna', 'ray') else find_spec(name, *a))
    assert main(['sweep', 'puffer_bandit', *TINY, *flags]) == 2
    assert re.search(package, capsys.readouterr().err)
    assert not (experiments / 'sweeps').exists() or not list((experiments / 'sweeps').iterdir())


# --- the methods --------------------------------------------------------------------------------

def toy_space():
    return sweep.Space([sweep.Param('train.learning_rate', 'log', 1e-5, 1e-1, 1e-3, False),
                        sweep.Param('train.gamma', 'logit', 0.8, 0.999, 0.95, False)])


def toy_trial(x):
    """A quality peaked at (0.6, -0.4) in normalised space, reached along a 10-point curve."""
    quality = math.exp(-4 * ((x[0] - 0.6) ** 2 + (x[1] + 0.4) ** 2))
    costs = np.arange(1, 11) * (1 + 0.5 * (x[0] + 1))
    return sweep.Observation(x, np.arange(1, 11) * 100, costs, quality * np.log1p(costs))


@pytest.mark.parametrize('method', ['protein', 'pareto_genetic', 'random', 'optuna'])
def test_each_method_improves_on_the_defaults_of_a_toy_problem(method):
    if method == 'optuna':
        pytest.importorskip('optuna')
    space = toy_space()
    searcher = sweep.make_method(method, space, seed=1)
    first = toy_trial(space.centre)
    searcher.observe(first)
    best = first.scores[-1]
    for _ in range(30):
        x = searcher.suggest(pending=[space.centre])
        assert x.shape == (2,) and np.all(np.abs(x) <= 1)
        obs = toy_trial(space.point(space.values(x)))
        searcher.observe(obs)
        best = max(best, obs.scores[-1])
    optimum = toy_trial(np.array([0.6, -0.4])).scores[-1]
    assert best > first.scores[-1] * 1.5  # the defaults score 0.14 of the optimum
    if method == 'protein':
        assert best > 0.9 * optimum
        assert set(searcher.last) == {'predicted_score', 'predicted_cost', 'cost_target'}


def test_protein_treats_failures_and_running_trials_as_bad_points():
    space = toy_space()
    protein = sweep.make_method('protein', space, seed=0)
    for x in ([0.0, 0.0], [0.3, -0.2], [-0.5, 0.5]):
        protein.observe(toy_trial(np.array(x)))
    protein.observe(sweep.Observation(np.array([0.6, -0.4]), failed=True))
    suggestions = np.array([protein.suggest() for _ in range(8)])
    assert np.all(np.abs(suggestions) <= 1)
    # a failure at the optimum pushes the search away from it
    assert np.min(np.linalg.norm(suggestions - [0.6, -0.4], axis=1)) > 0.02


def test_protein_caps_its_gp_data_and_stays_fast():
    space = toy_space()
    protein = sweep.Protein(space, seed=0, max_points=60)
    rng = np.random.default_rng(0)
    for _ in range(40):
        protein.observe(toy_trial(rng.uniform(-1, 1, 2)))
    assert len(protein._subset(len(protein.scores))) <= 60 + 10  # the cap, plus the Pareto points
    assert np.all(np.abs(protein.suggest()) <= 1)


def test_pareto_front():
    scores = np.array([1.0, 0.5, 2.0, 1.5, 3.0])
    costs = np.array([1.0, 2.0, 3.0, 3.0, 10.0])
    assert sweep.pareto_front(scores, costs).tolist() == [0, 2, 4]


def test_protein_uses_the_budget_coordinate_when_total_timesteps_is_swept():
    space = sweep.Space([sweep.Param('train.learning_rate', 'log', 1e-4, 1e-1, 1e-2, False),
                         sweep.Param('train.total_timesteps', 'log', 1_000, 100_000, 10_000, True)])
    obs = sweep.Observation(space.centre, [1_000, 5_000, 10_000], [1.0, 5.0, 10.0], [0.1, 0.5, 0.9])
    points = methods._curve_points(space, obs)
    assert points.shape == (3, 2)  # no extra progress coordinate
    assert [space.params[1].value(z) for z in points[:, 1]] == [1_000, 5_000, 10_000]
    plain = toy_space()
    points = methods._curve_points(plain, sweep.Observation(plain.centre, [10, 100, 1000], [1, 2, 3], [0, 0, 1]))
    assert points[:, 2].tolist() == [-1.0, 0.0, 1.0]  # progress: decades below the end


def test_protein_reaches_for_the_longest_run_the_budget_key_allows():
    """With train.total_timesteps swept, the top of the cost range is the longest allowed run (priced at
    the cost per step seen), not the one trial seen so far: after a short first trial the suggestions
    already aim at longer runs, instead of creeping up from it (their mean was -0.57 before)."""
    space = sweep.Space([sweep.Param('train.learning_rate', 'log', 1e-4, 1e-1, 1e-2, False),
                         sweep.Param('train.total_timesteps', 'log', 1_000, 1_000_000, 10_000, True)])
    budgets = []
    for seed in range(5):
        protein = sweep.Protein(space, seed=seed)
        steps = np.arange(1, 6) * 2_000
        protein.observe(sweep.Observation(space.centre, steps, steps / 100, np.log10(steps)))
        budgets += [protein.suggest()[1] for _ in range(10)]
        assert protein.last['predicted_cost'] > 100  # longer, costlier runs than the first one
    assert np.mean(budgets) > space.centre[1] + 0.1


def test_thompson_draws_come_from_the_latent_score_not_a_noisy_observation():
    space = toy_space()
    protein = sweep.Protein(space, seed=0)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (40, 2))
    y = np.sin(3 * X[:, 0]) + 0.3 * rng.standard_normal(40)  # noisy: the fitted noise is well above 0
    gp = protein._fit('score', X, y)
    noise = gp.kernel_.k2.noise_level
    assert noise > 0.01
    grid = rng.uniform(-1, 1, (20, 2))
    _, noisy = gp.predict(grid, return_cov=True)
    mean, latent = methods._latent(gp).predict(grid, return_cov=True)
    assert np.allclose(np.diag(noisy) - np.diag(latent), noise)  # only the noise term is gone
    assert np.allclose(noisy - np.diag(np.diag(noisy)), latent - np.diag(np.diag(latent)))
    assert np.allclose(mean, gp.predict(grid))
    assert type(gp.kernel_.k2).__name__ == 'WhiteKernel'  # the fit itself still has its noise


# --- the synthetic benchmark's tasks ------------------------------------------------------------

@pytest.fixture(scope='module')
def bench():
    from lab import synthetic_sweep  # what lab.bench_sweep runs
    return synthetic_sweep


def test_synthetic_tasks_score_a_factor_of_the_swept_key_times_a_function_of_cost(bench):
    sp = bench.space()
    assert sp.names == [bench.LR, bench.STEPS] and sp.budget_index == 1
    lr_opt = 3e-4
    best = {'train.learning_rate': lr_opt, 'train.total_timesteps': 10_000_000_000}
    for task in bench.TASKS:
        grid = [{bench.LR: lr, bench.STEPS: steps}
                for lr in np.logspace(-5, -1, 41) for steps in np.logspace(7.7, 10, 24)]
        scores = [bench.final_score(task, values, lr_opt) for values in grid]
        assert max(scores) <= bench.optimum(task) + 1e-12  # the optimum is the best over the ranges...
        assert bench.final_score(task, best, lr_opt) == pytest.approx(bench.optimum(task))  # ...and reached
        assert bench.final_score(task, {**best, bench.LR: lr_opt * 10}, lr_opt) == pytest.approx(
            bench.optimum(task) / math.e)  # a decade off the best learning rate: a factor exp(-1)
    assert bench.optimum('linear') == 200 and bench.optimum('log') == pytest.approx(math.log10(200))
    assert bench.optimum('percentile') == pytest.approx(1 / (1 + math.exp(-20)))
    with pytest.raises(ValueError, match='unknown task'):
        bench.cost_factor('quadratic', 1.0)


def test_synthetic_trials_report_a_noisy_five_point_curve(bench):
    sp = bench.space()
    values = {bench.LR: 1e-3, bench.STEPS: 1_000_000_000}
    rng = np.random.default_rng(0)
    for task in bench.TASKS:
        obs = bench.trial(task, sp, values, 1e-3, rng)
        assert obs.steps.tolist() == [2e8, 4e8, 6e8, 8e8, 1e9] and obs.costs.tolist() == [4, 8, 12, 16, 20]
        clean = bench.cost_factor(task, obs.costs)
        if task == 'linear':  # no noise on the linear task
            assert obs.scores.tolist() == clean.tolist()
        draws = np.array([bench.trial(task, sp, values, 1e-3, rng).scores for _ in range(200)])
        if task == 'log':  # 20% noise on the cost, both ways
            assert (draws > clean).any() and (draws < clean).any()
            assert np.std(draws[:, -1]) == pytest.approx(0.2 * 20 / (20 * math.log(10)), rel=0.3)
        if task == 'percentile':  # the noise only takes cost away
            assert (draws <= clean + 1e-12).all() and (draws < clean).any()
    assert bench.trial('log', sp, values, 1e-3, rng).x.tolist() == pytest.approx(sp.point(values).tolist())


def test_synthetic_search_counts_trials_and_cost_until_solved(bench, monkeypatch):
    class Scripted:  # suggests a fixed list of points
        def __init__(self, points):
            self.points, self.seen = list(points), 0

        def observe(self, obs):
            self.seen += 1

        def suggest(self, pending=(), max_cost=None):
            return self.points.pop(0)

    sp = bench.space()
    lr_opt = 1e-2
    miss = sp.point({bench.LR: 1e-4, bench.STEPS: 1e10})  # the longest run, the wrong learning rate
    hit = sp.point({bench.LR: lr_opt, bench.STEPS: 2e9})  # cost 40: percentile within 5%, log and linear not
    best = sp.point({bench.LR: lr_opt, bench.STEPS: 1e10})
    scripted = Scripted([miss, hit, miss, best])
    monkeypatch.setattr(sweep, 'make_method', lambda name, space, seed=0: scripted)
    # trial 1 is the defaults (cost 10, a decade off lr_opt), then the scripted points
    assert bench.search('scripted', 'percentile', lr_opt, seed=0, cap=10) == (3, 10 + 200 + 40)
    assert scripted.seen == 2  # the solving trial is counted, not observed
    scripted.points = [miss, hit, miss, best]
    assert bench.search('scripted', 'log', lr_opt, seed=0, cap=10) == (5, 10 + 200 + 40 + 200 + 200)
    scripted.points = [miss] * 3
    assert bench.search('scripted', 'linear', lr_opt, seed=0, cap=4) == (None, 10 + 3 * 200)


def test_synthetic_summary_ranks_unsolved_repeats_last(bench):
    assert bench.spread([3, 5, 7, 9]) == (6.0, 4.5, 7.5)
    median, q1, q3 = bench.spread([3, 5, None, None])
    assert math.isinf(median) and q1 == 4.5 and math.isinf(q3)
    assert bench.cell(*bench.spread([3, 5, 7, None]), 'g', '>100') == '6 [4.5, >100]'
    assert bench.cell(*bench.spread([None, None, 7]), 'g', '>100') == '>100'


@pytest.mark.slow
def test_protein_solves_every_synthetic_task_in_a_few_repeats(bench):
    for task in bench.TASKS:
        for repeat, lr_opt in enumerate(bench.optima(4)):
            trials, cost = bench.search('protein', task, lr_opt, seed=repeat, cap=40)
            assert trials is not None, (task, repeat)


# --- the ledger and the curve ---------------------------------------------------------------------

def start_record(k, attempt=1, **values):
    return {'type': 'start', 'trial': k, 'attempt': attempt, 'time': 1.0, 'run_dir': f'trials/trial-{k:04d}',
            'values': values}


def end_record(k, attempt=1, status='ok', score=1.0):
    return {'type': 'end', 'trial': k, 'attempt': attempt, 'time': 2.0, 'status': status, 'error': None,
            'metric': 'env/score', 'curve': [[20480, 1.0, score]], 'score': score, 'cost': 1.0, 'steps': 20480,
            'seconds': 3.0}


def test_ledger_drops_a_torn_last_record_and_rejects_a_damaged_one(tmp_path):
    book = sweep.Ledger(str(tmp_path / 'trials.jsonl'))
    book.append(start_record(0))
    book.append(end_record(0))
    with open(book.path, 'a') as f:
        f.write('{"type": "start", "tri')  # SIGKILL in the middle of a write
    assert [r['type'] for r in book.read()] == ['start', 'end']
    book.repair()
    book.append(start_record(1))
    assert [r.get('trial') for r in book.read()] == [0, 0, 1]
    trials = sweep.trials_of(book.read())
    assert trials[0]['end']['status'] == 'ok' and trials[1]['end'] is None
    lines = open(book.path).read().splitlines()
    lines[1] = 'garbage'
    open(book.path, 'w').write('\n'.join(lines) + '\n')
    with pytest.raises(sweep.SweepError, match='line 2'):
        book.read()


@pytest.mark.parametrize('line, problem', [
    ('{"type": "start", "trial": "1", "attempt": 1, "time": 1.0, "run_dir": "trials/x", "values": {}}',
     r"start record's 'trial' must be a whole number >= 0, got '1'"),
    ('{"type": "end", "trial": 0, "attempt": 1, "time": 2.0, "status": "ok"}', r"end record has no 'error'"),
    ('[1, 2]', r'list \[1, 2\] is not a record'),
    ('{"type": "stop", "time": 1.0}', r"type 'stop' is not one of session, start"),
    ('{"type": "session", "time": "noon"}', r"'time' must be a number"),
], ids=['string-trial', 'end-missing-keys', 'not-an-object', 'unknown-type', 'text-time'])
def test_a_ledger_record_of_the_wrong_shape_is_one_error_naming_its_line(experiments, line, problem):
    # valid JSON, the wrong shape: a record with a string trial number once gave a TypeError from sorted()
    path = sweep.create('puffer_bandit', TINY)
    book = sweep.Ledger(os.path.join(path, 'trials.jsonl'))
    book.append({'type': 'session', 'time': 0.0})
    book.append(start_record(0, **{'train.learning_rate': 0.01, 'train.ent_coef': 0.001}))
    book.append(end_record(0))
    with open(book.path, 'a') as f:
        f.write(line + '\n')
    saved = open(book.path, 'rb').read()
    out = subprocess.run([PUFFER, 'sweep', '--resume', path, '--quiet'], capture_output=True, text=True,
                         timeout=120)
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(err) == 1 and 'Traceback' not in out.stderr, out.stderr
    assert f'{book.path} line 4 is not a record of this ledger (' in err[0] and re.search(problem, err[0])
    assert 'Fix or delete that line' in err[0]
    assert open(book.path, 'rb').read() == saved  # nothing lost, nothing rewritten
    assert main(['sweep', '--report', path]) == 2  # the report reads it the same way


def test_a_ledger_end_without_its_start_is_an_error(tmp_path):
    book = sweep.Ledger(str(tmp_path / 'trials.jsonl'))
    book.append(start_record(0))
    book.append(end_record(1))
    with pytest.raises(sweep.SweepError,
                       match=r'line 2 is not a record of this ledger \(the end record of trial 1 follows no start'):
        book.read()


def test_downsample_keeps_about_ten_points_of_the_curve():
    rows = [{'global_step': 100 * i, 'elapsed_s': float(i), 'env/score': float(i)} for i in range(1, 101)]
    rows.insert(5, {'global_step': 550, 'elapsed_s': 5.5})  # a row without episodes
    curve = sweep.downsample(rows, 'env/score', 'seconds')
    assert len(curve) == 10
    assert curve[-1][0] == 10_000 and curve[-1][1] == 100.0
    assert curve[-1][2] == pytest.approx(np.mean(range(91, 101)))  # the last tenth's mean
    assert sweep.downsample(rows, 'env/score', 'steps')[-1][1] == 10_000
    assert sweep.pick_metric(rows) == 'env/score' and sweep.pick_metric([{'env/perf': 1}]) == 'env/perf'


def test_resume_keeps_the_trials_config_and_counts_time_over_sessions(experiments):
    path = sweep.create('puffer_bandit', TINY)
    assert os.path.basename(path).startswith('puffer_bandit-') and os.path.dirname(path) == sweep.sweeps_dir()
    with pytest.raises(configuration.ConfigError, match='only --sweep'):
        sweep.Sweep(path, ['--train.learning-rate', '0.1'])
    resumed = sweep.Sweep(path, ['--sweep.max-trials', '7', '--sweep.parallel', '2'])
    assert resumed.settings['max_trials'] == 7 and resumed.env == 'puffer_bandit'
    assert resumed.trial_config({'train.learning_rate': 0.002})['train']['learning_rate'] == 0.002
    assert 'sweep' not in resumed.trial_config({})
    records = [{'type': 'session', 'time': 100.0}, {'type': 'start', 'time': 110.0}, {'type': 'end', 'time': 130.0},
               {'type': 'session', 'time': 1000.0}, {'type': 'start', 'time': 1005.0}]
    assert resumed.time_used(records) == 35.0  # the gap between sessions (a reboot) is not counted
    assert sweep.create('puffer_bandit', TINY) != path  # two sweeps in one second get two directories


def test_a_running_sweep_cannot_be_resumed_twice(experiments):
    import fcntl
    path = sweep.create('puffer_bandit', TINY)
    with open(os.path.join(path, 'lock'), 'a+') as held:  # as a running driver holds it
        held.write('pid 12345 on box')
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(sweep.SweepError, match='already running.*pid 12345'):
            sweep.run(path, quiet=True)
    assert ledger(path) == []  # refused before writing anything


# --- confirmation: the top trials on more seeds ---------------------------------------------------

def confirmed_sweep(scores, confirmations, confirm_top=2, confirm_seeds=2):
    """A sweep directory whose ledger holds ordinary trials with `scores` (seconds = 10 * (k + 1)) and
    confirmation runs {trial: [scores]}, as the driver writes them."""
    path = sweep.create('puffer_bandit', [*TINY, '--sweep.confirm-top', str(confirm_top),
                                          '--sweep.confirm-seeds', str(confirm_seeds)])
    book = sweep.Ledger(os.path.join(path, 'trials.jsonl'))
    book.append({'type': 'session', 'time': 0.0})
    result = {'status': 'ok', 'error': None, 'metric': 'env/score', 'cost': 1.0, 'steps': 20480, 'curve': []}
    for k, score in enumerate(scores):
        values = {'train.learning_rate': 0.001 * (k + 1), 'train.ent_coef': 0.001}
        book.append({'type': 'start', 'trial': k, 'attempt': 1, 'time': 1.0, 'run_dir': f'trials/trial-{k:04d}',
                     'values': values})
        curve = [[20480, 1.0, score]] if score is not None else []
        status = {'status': 'ok'} if score is not None else {'status': 'failed', 'error': 'boom'}
        book.append({'type': 'end', 'trial': k, 'attempt': 1, 'time': 2.0, **result, 'curve': curve, 'score': score,
                     'seconds': 10.0 * (k + 1), **status})
    for k, repeats in confirmations.items():
        for repeat, score in enumerate(repeats, 1):
            book.append({'type': 'confirm_start', 'trial': k, 'repeat': repeat, 'seed': repeat, 'attempt': 1,
                         'time': 3.0, 'run_dir': f'trials/trial-{k:04d}-seed{repeat}', 'values': {}})
            status = {'status': 'ok', 'score': score} if score is not None else {'status': 'failed', 'score': None,
                                                                                 'error': 'diverged: nan'}
            book.append({'type': 'confirm_end', 'trial': k, 'repeat': repeat, 'seed': repeat, 'attempt': 1,
                         'time': 4.0, **result, 'seconds': 5.0, **status})
    return path


def test_confirmation_picks_the_best_mean_over_seeds_not_the_best_single_score(experiments, capsys):
    # trial 1 had the luckiest seed (9); on two more seeds it gives 2 and 3 (mean 4.67), while trial 2
    # gives 6, 7 and 8 (mean 7): best.toml is trial 2's config
    path = confirmed_sweep([5.0, 9.0, 8.0, None], {1: [2.0, 3.0], 2: [7.0, 6.0]})
    s = sweep.Sweep(path)
    trials = sweep.trials_of(s.ledger.read())
    assert s.to_confirm(trials) == [1, 2]  # the top 2 by their own score; the failed trial is never one
    assert sweep.seed_scores(trials[2]) == ([8.0, 7.0, 6.0], 0)
    assert s.best(trials)[0] == 2
    sweep.write_best(s, trials)
    best = tomllib.load(open(os.path.join(path, 'best.toml'), 'rb'))
    assert best['train']['learning_rate'] == pytest.approx(0.003)
    assert 'mean 7 over 3 seeds' in open(os.path.join(path, 'best.toml')).read()
    assert main(['sweep', '--report', path]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()
            if re.match(r'^│\s+\d', line)}
    assert re.search(r'│\s+2 \*\s+│ ok\s+│\s+8 │\s+3 │\s+7 │\s+2 │', rows['2'])  # mean 7, spread 8 - 6
    assert re.search(r'│\s+4.667 │\s+7 │', rows['1']) and re.search(r'│\s+1 │\s+│\s+│', rows['0'])
    # before any confirmation the best is the best single score, as without confirmation
    assert sweep.Sweep(confirmed_sweep([5.0, 9.0, 8.0], {})).best()[0] == 1


def test_a_failed_confirmation_ranks_a_trial_after_every_sound_one(experiments):
    path = confirmed_sweep([5.0, 9.0, 8.0], {1: [20.0, None], 2: [1.0, 1.0]})
    s = sweep.Sweep(path)
    trials = sweep.trials_of(s.ledger.read())
    assert sweep.seed_scores(trials[1]) == ([9.0, 20.0], 1)
    assert s.best(trials)[0] == 2  # trial 1 diverged on a seed: its 14.5 mean does not count


def test_the_time_budget_keeps_what_confirming_the_top_trials_takes(experiments):
    # the top 2 by score are trials 1 (20 s) and 2 (30 s); 2 seeds each
    path = confirmed_sweep([5.0, 9.0, 8.0], {}, confirm_top=2, confirm_seeds=2)
    s = sweep.Sweep(path)
    trials = sweep.trials_of(s.ledger.read())
    assert s.confirm_seconds(trials, parallel=1) == pytest.approx(100.0)
    assert s.confirm_seconds(trials, parallel=2) == pytest.approx(50.0)
    assert s.confirm_seconds(trials, parallel=8) == pytest.approx(30.0)  # no faster than its longest run
    assert sweep.Sweep(path, ['--sweep.confirm-seeds', '0']).confirm_seconds(trials, 1) == 0.0
    assert s.confirm_seed(trials[1]['starts'][-1], 2) == 2  # its own seed (0) + the repeat


def test_the_eta_counts_the_confirmation_runs_still_to_come(experiments):
    class Status:  # the terminal's status line
        def update(self, text):
            self.text = text

    # 3 of 3 trials done in 30 s; confirming the top 2 on 2 more seeds is 4 runs of about 10 s to come
    path = confirmed_sweep([5.0, 9.0, 8.0], {}, confirm_top=2, confirm_seeds=2)
    s = sweep.Sweep(path, ['--sweep.max-trials', '3'])
    trials = sweep.trials_of(s.ledger.read())
    progress = sweep.Progress(s, trials, quiet=True, printer=None)
    progress.status, progress.done_here, progress.started = Status(), 3, time.time() - 30
    progress.update(0, None)
    assert 'trial 3/3' in progress.status.text and progress.status.text.endswith('ETA 0:00:40')
    one_done = sweep.trials_of(ledger(confirmed_sweep([5.0, 9.0, 8.0], {1: [7.0]})))
    progress.trials, progress.done_here, progress.started = one_done, 4, time.time() - 40
    progress.update(1, None)
    assert progress.status.text.endswith('ETA 0:00:30')
    progress.update(1, 12.0)  # never past the time budget left
    assert progress.status.text.endswith('ETA 0:00:12')


def sweep_of_the_default_space(trials=12):
    """A sweep directory over the seven default keys whose ledger holds `trials` finished trials at random
    points (the first the defaults, the last failed), as the driver writes them."""
    path = sweep.create('puffer_bandit', ['--sweep.confirm-seeds', '0'])
    s = sweep.Sweep(path)
    rng = np.random.default_rng(0)
    s.ledger.append({'type': 'session', 'time': 0.0})
    for k in range(trials):
        values = s.space.values(rng.uniform(-1, 1, len(s.space)) if k else s.space.centre)
        s.ledger.append({'type': 'start', 'trial': k, 'attempt': 1, 'time': 1.0, 'run_dir': f'trials/trial-{k:04d}',
                         'values': values})
        score = float(rng.uniform(0, 1))
        failed = k == trials - 1
        s.ledger.append({'type': 'end', 'trial': k, 'attempt': 1, 'time': 2.0, 'status': 'failed' if failed else 'ok',
                         'error': 'diverged: policy_loss became nan at step 10,240' if failed else None,
                         'metric': 'env/score',
                         'curve': [] if failed else [[10240, 5.0, score / 2], [20480, 10.0, score]],
                         'score': None if failed else score, 'cost': None if failed else 10.0 + k, 'steps': 20480,
                         'seconds': 12.0})
    return path


def test_the_report_fits_a_120_column_terminal_and_params_png_has_a_key(experiments):
    import importlib

    import pexpect
    report_module = importlib.import_module('pufferlib.sweep.report')  # sweep.report is its function
    path = sweep_of_the_default_space()
    child = pexpect.spawn(PUFFER, ['sweep', '--report', path], dimensions=(60, 120), encoding='utf-8', timeout=120,
                          env={**os.environ, 'TERM': 'xterm-256color'})
    output = re.sub(r'\x1b\[[0-9;?]*[A-Za-z]', '', child.read())
    child.close()
    assert child.exitstatus == 0, output
    table = [line.rstrip('\r') for line in output.split('\n') if re.match(r'\s*[┏┃┡│└]', line)]
    assert table and all(len(line) <= 120 for line in table)
    assert not any('…' in line for line in table), '\n'.join(table)  # no name or number cut short
    header = ' '.join(' '.join(line.split('┃')) for line in table if line.lstrip().startswith('┃'))
    for word in ('learning', 'rate', 'gamma', 'gae', 'lambda', 'ent', 'clip', 'vf', 'coef', 'max', 'grad', 'norm'):
        assert re.search(rf'\b{word}\b', header), header
    assert 'train.' not in header and 'seeds' not in header  # no section prefix; no confirmation, no seed columns
    text = ' '.join(output.split())
    assert 'swept: train.learning_rate, train.gamma, train.gae_lambda' in text  # the full names below

    s = sweep.Sweep(path)
    trials = sweep.trials_of(s.ledger.read())
    ok = [(k, t['starts'][-1], t['end']) for k, t in trials.items() if t['end']['status'] == 'ok']
    fig = report_module.params_figure(report_module._pyplot(), s, ok)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_xlabel().startswith('train.')]
    assert len(panels) == 7
    for ax in panels:
        lo, hi = sorted(ax.get_xlim())
        ticks = [*zip(ax.xaxis.get_majorticklocs(), ax.xaxis.get_majorticklabels()),
                 *zip(ax.xaxis.get_minorticklocs(), ax.xaxis.get_minorticklabels())]
        shown = [label for loc, label in ticks if lo <= loc <= hi and label.get_visible() and label.get_text()]
        assert len(shown) >= 2, ax.get_xlabel()
        boxes = [label.get_window_extent(renderer) for label in shown]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), \
            (ax.get_xlabel(), [label.get_text() for label in shown])
    assert any('trial' in ax.get_ylabel() for ax in fig.axes if ax not in panels)  # the colour bar: the key
    for name in ('pareto.png', 'params.png'):
        assert open(os.path.join(path, name), 'rb').read(8) == b'\x89PNG\r\n\x1a\n'


# --- whole sweeps ---------------------------------------------------------------------------------

def test_sweep_end_to_end_best_toml_trains_and_the_report_plots(experiments, capsys):
    out, path = run_sweep('--sweep.max-trials', '2')
    assert out.returncode == 0, out.stderr
    records = ledger(path)
    assert [r['type'] for r in records] == ['session', 'start', 'end', 'start', 'end']
    first = records[1]
    assert first['values'] == {'train.learning_rate': pytest.approx(0.015), 'train.ent_coef': pytest.approx(0.001)}
    for end in ends(path):
        assert end['status'] == 'ok', end['error']
        assert end['metric'] == 'env/score' and 1 <= len(end['curve']) <= sweep.DOWNSAMPLE
        run_dir = os.path.join(path, 'trials', f'trial-{end["trial"]:04d}')
        assert os.path.exists(os.path.join(run_dir, 'metrics.jsonl'))
        assert os.path.exists(os.path.join(run_dir, 'config.toml'))  # an ordinary run directory
    saved = tomllib.load(open(os.path.join(path, 'sweep.toml'), 'rb'))
    assert saved['_meta']['env'] == 'puffer_bandit' and saved['sweep']['only'] == 'train.learning_rate,train.ent_coef'

    best = max(ends(path), key=lambda r: r['score'])
    best_values = next(r for r in records if r['type'] == 'start' and r['trial'] == best['trial'])['values']
    best_toml = os.path.join(path, 'best.toml')
    text = tomllib.load(open(best_toml, 'rb'))
    defaults = configuration.load('puffer_bandit')
    # a key at its default (the defaults trial won) is not listed
    assert text['train'].get('learning_rate', defaults['train']['learning_rate']) == best_values['train.learning_rate']
    assert text['train']['total_timesteps'] == 20000 and text['env']['num_envs'] == 64
    # the round trip: best.toml is a --config file for puffer train
    train = subprocess.run([PUFFER, 'train', 'puffer_bandit', '--config', best_toml, '--quiet'],
                           capture_output=True, text=True, timeout=300)
    assert train.returncode == 0, train.stderr
    runs = [d for d in experiments.iterdir() if d.name.startswith('puffer_bandit-')]
    trained = tomllib.load(open(runs[0] / 'config.toml', 'rb'))
    assert trained['train']['learning_rate'] == best_values['train.learning_rate']
    assert trained['train']['ent_coef'] == best_values['train.ent_coef']

    capsys.readouterr()
    assert main(['sweep', '--report', path]) == 0
    report = capsys.readouterr().out
    assert 'learning_rate' in report and ' ok ' in report and 'pareto.png' in report
    for name in ('pareto.png', 'params.png'):
        with open(os.path.join(path, name), 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_the_defaults_trial_runs_the_defaults_exactly_and_best_toml_lists_no_default(experiments):
    # the transform round trip once gave learning_rate = 0.015000000000000003, gae_lambda = 0.8999999999999999
    keys = 'train.learning_rate,train.gae_lambda,train.gamma,train.ent_coef'
    out, path = run_sweep('--sweep.max-trials', '1', '--sweep.only', keys)
    assert out.returncode == 0, out.stderr
    [start] = [r for r in ledger(path) if r['type'] == 'start']
    defaults = configuration.load('puffer_bandit')
    assert start['values'] == {key: defaults['train'][key.split('.')[1]] for key in keys.split(',')}
    best = tomllib.load(open(os.path.join(path, 'best.toml'), 'rb'))
    assert best['train'] and not {key.split('.')[1] for key in keys.split(',')} & set(best['train'])
    assert best['train']['total_timesteps'] == 20000  # what TINY changed is listed
    space = sweep.parse_space(defaults)
    for param in space.params:  # the ends of each range come back exactly too
        assert param.value(-1) == param.low and param.value(1) == param.high


def test_trials_that_raise_are_failed_trials_and_the_sweep_goes_on(experiments):
    # A policy class that does not exist: the base config's check (env, memory, rollout) passes, and every
    # trial raises when it builds its policy. (An env option out of range is refused before the sweep.)
    out, path = run_sweep('--sweep.max-trials', '2', '--policy.class', 'pufferlib.models:NoSuchPolicy')
    assert out.returncode == 0, out.stderr
    assert 'no trial succeeded' in out.stdout
    failed = ends(path)
    assert [r['trial'] for r in failed] == [0, 1]
    for record in failed:
        assert record['status'] == 'failed' and record['score'] is None
        assert 'NoSuchPolicy' in record['error']
    assert not os.path.exists(os.path.join(path, 'best.toml'))


def test_a_trial_whose_loss_diverges_is_a_failed_trial(experiments):
    out, path = run_sweep('--sweep.max-trials', '1', '--sweep.only', 'train.ent_coef', '--train.learning-rate', '1e30')
    assert out.returncode == 0, out.stderr
    [record] = ends(path)
    assert record['status'] == 'failed'
    assert record['error'].startswith('diverged')
    assert re.search(r'nan|inf|finite', record['error'], re.IGNORECASE)


@pytest.mark.slow
def test_a_trial_killed_from_outside_is_not_a_failure_and_reruns_on_resume(experiments, monkeypatch):
    proc = subprocess.Popen([PUFFER, 'sweep', 'puffer_bandit', *TINY, '--sweep.max-trials', '2', '--quiet'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        victim = next((p for p in psutil.Process(proc.pid).children(recursive=True)
                       if 'trial-0000' in ' '.join(p.cmdline())), None)
        time.sleep(0.05)
    assert victim is not None, proc.communicate()
    victim.send_signal(signal.SIGKILL)  # as the OOM killer does
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert 'done: 1 trials (0 failed)' in out  # the killed trial is neither a trial done nor a failure
    path = str(next((experiments / 'sweeps').iterdir()))
    killed, ok = ends(path)
    assert (killed['trial'], killed['status']) == (0, 'killed') and 'SIGKILL' in killed['error']
    assert (ok['trial'], ok['status']) == (1, 'ok')

    seen = []  # what a resumed driver's method learns, and what it reruns

    class Recorder:
        def observe(self, obs):
            seen.append(obs)

    monkeypatch.setattr(sweep.driver, 'make_method', lambda name, space, seed=0: Recorder())
    replay = sweep.Driver(sweep.Sweep(path), quiet=True)
    replay.close()
    assert replay.rerun == [0] and len(seen) == 1 and not seen[0].failed

    out = subprocess.run([PUFFER, 'sweep', '--resume', path, '--quiet'], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert 'done: 2 trials (0 failed)' in out.stdout
    records = ledger(path)
    starts = [r for r in records if r['type'] == 'start' and r['trial'] == 0]
    assert [r['attempt'] for r in starts] == [1, 2] and starts[0]['values'] == starts[1]['values']
    assert [(r['trial'], r['attempt'], r['status']) for r in ends(path)] == [(0, 1, 'killed'), (1, 1, 'ok'),
                                                                              (0, 2, 'ok')]


@pytest.mark.slow
def test_a_trial_past_its_time_budget_is_stopped_and_failed(experiments):
    out, path = run_sweep('--sweep.max-trials', '1', '--sweep.trial-timeout', '0.5',
                          '--train.total-timesteps', '2000000')
    assert out.returncode == 0, out.stderr
    [record] = ends(path)
    assert record['status'] == 'failed' and 'exceeded its time budget of 0.5 s' in record['error']
    assert 0 < record['steps'] < 2_000_000


def sigkill_sweep_when(experiments, flags, ready, timeout):
    """Start `puffer sweep`, SIGKILL it once ready(ledger records) holds; returns (its directory, the trial
    processes it was running)."""
    proc = subprocess.Popen([PUFFER, 'sweep', 'puffer_bandit', *TINY, *flags, '--quiet'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    path = None
    while time.monotonic() < deadline:
        roots = list((experiments / 'sweeps').glob('puffer_bandit-*')) if (experiments / 'sweeps').exists() else []
        if roots:
            path = str(roots[0])
            if ready(ledger(path)):
                break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    running = [p for p in psutil.Process(proc.pid).children(recursive=True)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=120)  # bounds a hang only: a killed process still needs the CPU to be torn down
    return path, running


def test_a_sweep_stopped_by_sigterm_says_how_to_resume(experiments):
    """`docker stop` sends SIGTERM: the running trial is stopped without an end record (it reruns on resume),
    the resume line is printed, and the exit status is the shell's 143."""
    proc = subprocess.Popen([PUFFER, 'sweep', 'puffer_bandit', *TINY, '--sweep.max-trials', '50', '--quiet'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        roots = list((experiments / 'sweeps').glob('puffer_bandit-*')) if (experiments / 'sweeps').exists() else []
        if roots and any(r['type'] == 'start' for r in ledger(str(roots[0]))):
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, err
    assert 'sweep interrupted' in err and f'--resume {roots[0]}' in err and 'Traceback' not in err


@pytest.mark.slow
def test_resume_after_sigkill_loses_and_duplicates_no_trial(experiments):
    def one_done_one_running(records):
        started = {r['trial'] for r in records if r['type'] == 'start'}
        finished = {r['trial'] for r in records if r['type'] == 'end'}
        return finished and started - finished

    path, running = sigkill_sweep_when(experiments, ['--sweep.max-trials', '4'], one_done_one_running, 300)
    before = ledger(path)
    finished_before = [r for r in before if r['type'] == 'end']
    cut_off = sorted({r['trial'] for r in before if r['type'] == 'start'} - {r['trial'] for r in finished_before})
    # the running trial dies with the sweep (its parent-death signal), leaving no orphan behind
    gone, alive = psutil.wait_procs(running, timeout=60)
    assert not alive, [p.cmdline() for p in alive]

    out = subprocess.run([PUFFER, 'sweep', '--resume', path, '--quiet'], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    after = ledger(path)
    assert after[:len(before)] == before  # append-only: nothing rewritten
    finished = [r for r in after if r['type'] == 'end']
    assert sorted(r['trial'] for r in finished) == [0, 1, 2, 3]  # none lost, none twice
    assert finished[:len(finished_before)] == finished_before
    for trial in cut_off:  # rerun with the same values, in a run directory of its own
        starts = [r for r in after if r['type'] == 'start' and r['trial'] == trial]
        assert len(starts) == 2 and starts[0]['values'] == starts[1]['values']
        assert starts[1]['attempt'] == 2 and starts[1]['run_dir'] != starts[0]['run_dir']
    assert sum(r['type'] == 'session' for r in after) == 2


def test_parallel_is_bounded_by_the_cores_and_the_memory_with_a_message_why(experiments):
    cores = len(os.sched_getaffinity(0))
    out, path = run_sweep('--sweep.max-trials', '1', '--sweep.parallel', '100000')
    assert out.returncode == 0, out.stderr
    said = re.search(r'sweep.parallel 100000: running (\d+) trials at a time.* (\d+) cores.* GB of memory', out.stderr)
    assert said and 1 <= int(said[1]) <= cores and int(said[2]) == cores, out.stderr
    assert [r['status'] for r in ends(path)] == ['ok']
    # the memory bound, at 0.5 GB a trial, and no message when the setting fits
    assert sweep.driver.parallel_limit(8, 16, 2.2)[0] == 4 and sweep.driver.parallel_limit(8, 16, 0.1)[0] == 1
    assert sweep.driver.parallel_limit(2, 16, 64.0) == (2, None)


@pytest.mark.slow
def test_parallel_trials_each_get_their_own_cores(experiments):
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip('needs 2 cores')
    out, path = run_sweep('--sweep.max-trials', '4', '--sweep.parallel', '2')
    assert out.returncode == 0, out.stderr
    records = ends(path)
    assert sorted(r['trial'] for r in records) == [0, 1, 2, 3]
    assert all(r['status'] == 'ok' for r in records), [r['error'] for r in records]
    shares = {tuple(r['cpus']) for r in records}
    half = len(cores) // 2
    assert shares <= {tuple(cores[:half]), tuple(cores[half:])}  # each trial on one slot's half


@pytest.mark.slow
def test_ray_backend_runs_trials_as_ray_tasks(experiments):
    pytest.importorskip('ray')
    out, path = run_sweep('--sweep.max-trials', '2', '--sweep.backend', 'ray',
                          extra_env={'RAY_ADDRESS': '', 'RAY_DISABLE_USAGE_STATS': '1'})
    assert out.returncode == 0, out.stderr
    records = ends(path)
    assert [r['status'] for r in records] == ['ok', 'ok'], [r['error'] for r in records]
    assert os.path.exists(os.path.join(path, 'best.toml'))


@pytest.mark.slow
def test_resume_after_sigkill_during_confirmation_keeps_and_repeats_no_confirmation(experiments):
    def one_done_one_running(records):
        started = {(r['trial'], r['repeat']) for r in records if r['type'] == 'confirm_start'}
        finished = {(r['trial'], r['repeat']) for r in records if r['type'] == 'confirm_end'}
        return finished and started - finished

    flags = ['--sweep.max-trials', '2', '--sweep.confirm-top', '2', '--sweep.confirm-seeds', '2']
    path, running = sigkill_sweep_when(experiments, flags, one_done_one_running, 600)
    psutil.wait_procs(running, timeout=60)
    before = ledger(path)
    done_before = [r for r in before if r['type'] == 'confirm_end']
    cut_off = {(r['trial'], r['repeat']) for r in before if r['type'] == 'confirm_start'} - \
        {(r['trial'], r['repeat']) for r in done_before}

    out = subprocess.run([PUFFER, 'sweep', '--resume', path, '--quiet'], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    after = ledger(path)
    assert after[:len(before)] == before  # append-only
    assert sorted(r['trial'] for r in after if r['type'] == 'end') == [0, 1]  # no ordinary trial rerun or added
    confirm_ends = [r for r in after if r['type'] == 'confirm_end']
    assert sorted((r['trial'], r['repeat']) for r in confirm_ends) == [(0, 1), (0, 2), (1, 1), (1, 2)]  # once each
    assert confirm_ends[:len(done_before)] == done_before  # kept, not rerun
    assert all(r['status'] == 'ok' for r in confirm_ends), [r['error'] for r in confirm_ends]
    for trial, repeat in cut_off:  # rerun in a run directory of its own
        starts = [r for r in after if r['type'] == 'confirm_start' and (r['trial'], r['repeat']) == (trial, repeat)]
        assert [r['attempt'] for r in starts] == [1, 2] and starts[0]['run_dir'] != starts[1]['run_dir']
    for r in confirm_ends:  # each ran its trial's values on its own seed
        start = next(s for s in after if s['type'] == 'confirm_start' and s['trial'] == r['trial']
                     and s['repeat'] == r['repeat'] and s['attempt'] == r['attempt'])
        config = tomllib.load(open(os.path.join(path, start['run_dir'], 'config.toml'), 'rb'))
        assert config['train']['seed'] == r['repeat'] == r['seed']
        values = next(s['values'] for s in after if s['type'] == 'start' and s['trial'] == r['trial'])
        assert config['train']['learning_rate'] == values['train.learning_rate']

    s = sweep.Sweep(path)
    trials = sweep.trials_of(after)
    means = {k: np.mean(sweep.seed_scores(trials[k])[0]) for k in (0, 1)}
    best = max(means, key=means.get)
    text = tomllib.load(open(os.path.join(path, 'best.toml'), 'rb'))
    default = configuration.load('puffer_bandit')['train']['learning_rate']  # not listed when the defaults won
    assert text['train'].get('learning_rate', default) == trials[best]['starts'][-1]['values']['train.learning_rate']
    assert s.best()[0] == best and f'best: trial {best}' in out.stdout and 'over 3 seeds' in out.stdout


# --- a resumed sweep with a wider --sweep.only -----------------------------------------------------

def test_a_wider_sweep_only_on_resume_grows_the_space_with_the_old_trials_at_the_configured_value(
        experiments, monkeypatch, capsys):
    path = sweep.create('puffer_bandit', [*TINY, '--sweep.only', 'train.learning_rate'])
    book = sweep.Ledger(os.path.join(path, 'trials.jsonl'))
    book.append({'type': 'session', 'time': 0.0})
    for k in (0, 1):  # trial 0 finished, trial 1 was cut off: both ran before ent_coef was swept
        book.append({'type': 'start', 'trial': k, 'attempt': 1, 'time': 1.0, 'run_dir': f'trials/trial-{k:04d}',
                     'values': {'train.learning_rate': 0.004}})
    book.append({'type': 'end', 'trial': 0, 'attempt': 1, 'time': 2.0, 'status': 'ok', 'error': None,
                 'metric': 'env/score', 'curve': [[20480, 1.0, 0.5]], 'score': 0.5, 'cost': 1.0, 'steps': 20480,
                 'seconds': 1.0})
    seen = []

    class Recorder:
        def observe(self, obs):
            seen.append(obs)

        def suggest(self, pending=(), max_cost=None):
            seen.append(pending)
            return np.zeros(len(pending[0]))

    monkeypatch.setattr(sweep.driver, 'make_method', lambda name, space, seed=0: Recorder())
    wider = sweep.Sweep(path, ['--sweep.only', 'train.learning_rate,train.ent_coef'])
    replay = sweep.Driver(wider, quiet=True)
    try:
        ent_coef = wider.space.params[1]
        assert wider.space.names == ['train.learning_rate', 'train.ent_coef']
        [observed] = seen
        assert observed.x[1] == ent_coef.centre and ent_coef.value(observed.x[1]) == wider.config['train']['ent_coef']
        assert 'sweep.only now sweeps train.ent_coef too' in capsys.readouterr().err
        rerun, _, _ = replay.ordinary_job()  # the cut-off trial reruns as it ran, ent_coef at its configured value
        assert rerun['trial'] == 1 and wider.trial_config(rerun['values'])['train']['ent_coef'] == ent_coef.value(
            ent_coef.centre)
        replay.running[object()] = (1, 0, rerun)
        replay.ordinary_job()  # the method is asked with the rerun pending: its point has both coordinates
        assert len(seen[-1][0]) == 2
    finally:
        replay.close()


@pytest.mark.slow
def test_a_sweep_resumed_with_a_wider_sweep_only_runs_its_new_trials_in_the_wider_space(experiments):
    out, path = run_sweep('--sweep.max-trials', '1', '--sweep.only', 'train.learning_rate')
    assert out.returncode == 0, out.stderr
    wider = 'train.learning_rate,train.ent_coef'
    resumed = subprocess.run([PUFFER, 'sweep', '--resume', path, '--sweep.only', wider, '--sweep.max-trials', '2',
                              '--quiet'], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert 'done: 2 trials (0 failed)' in resumed.stdout
    assert 'sweep.only now sweeps train.ent_coef too: 1 earlier trial' in resumed.stderr
    starts = [r for r in ledger(path) if r['type'] == 'start']
    assert [sorted(r['values']) for r in starts] == [['train.learning_rate'], sorted(wider.split(','))]


@pytest.mark.slow
def test_a_trial_whose_env_worker_is_sigkilled_is_killed_not_failed(experiments):
    """The OOM killer takes an env worker, not the trial: the trial lives on with an env error, and is
    still a trial killed from outside (rerun on resume, not a bad score for the method)."""
    workers = ['--vec.backend', 'Multiprocessing', '--vec.num-envs', '2', '--vec.num-workers', '2']
    proc = subprocess.Popen([PUFFER, 'sweep', 'puffer_bandit', *TINY, *workers, '--train.total-timesteps',
                             '100000000', '--sweep.max-trials', '1', '--quiet'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    trial = None
    while time.monotonic() < deadline and proc.poll() is None:
        trial = next((p for p in psutil.Process(proc.pid).children(recursive=True)
                      if 'trial-0000' in ' '.join(p.cmdline())), None)
        metrics = list(experiments.glob('sweeps/*/trials/trial-0000/metrics.jsonl'))
        if trial is not None and metrics and metrics[0].read_text():  # training, with its workers up
            break
        time.sleep(0.1)
    assert trial is not None and proc.poll() is None, proc.communicate()
    victim = trial.children()[0]  # an env worker (forked by the trial's vector env)
    victim.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert 'done: 0 trials (0 failed)' in out
    path = str(next((experiments / 'sweeps').iterdir()))
    [end] = ends(path)
    assert end['status'] == 'killed' and 'SIGKILL' in end['error'] and 'worker' in end['error'], end
    line = re.search(r'trial\(s\) were killed from outside; they rerun on: (.+)$', err, re.MULTILINE)
    assert line and shlex.split(line.group(1)) == [PUFFER, 'sweep', '--resume', path], err
    replay = sweep.Driver(sweep.Sweep(path), quiet=True)
    replay.close()
    assert replay.rerun == [0]
    # the trial's own hint names the user's program, not the trial's `python -m pufferlib.sweep`
    run_dir = os.path.join(path, 'trials', 'trial-0000')
    hint = re.search(r'resume with `([^`]+)`', open(os.path.join(run_dir, 'trial.log')).read())
    assert hint, open(os.path.join(run_dir, 'trial.log')).read()
    words = shlex.split(hint.group(1))
    assert words[0] in (PUFFER, 'puffer') and words[1:] == ['train', '--resume', run_dir], words


@pytest.mark.parametrize('mode, status', [('raise', 'failed'), ('segfault', 'failed'), ('kill', 'killed')])
def test_an_env_worker_killed_from_outside_kills_the_trial_one_that_crashes_fails_it(mode, status):
    """How a trial reads the env error that ended it: a worker dead of SIGKILL (the OOM killer) is a kill
    from outside; an env that raised, or crashed its worker (SIGSEGV), failed its config."""
    vecenv = pv.make(functools.partial(FaultyEnv, mode, 3), backend='Multiprocessing', num_envs=4, num_workers=2)
    vecenv.reset(0)
    with pytest.raises(pufferlib.EnvError) as error:
        for _ in range(10):
            vecenv.step(np.zeros(4, np.int32))
    assert (sweep.trials.killed_by(error.value) is not None) == (status == 'killed')
    if status == 'killed':
        assert sweep.trials.killed_by(error.value) == 'SIGKILL'
