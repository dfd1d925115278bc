"""Population-based training: perturbation inside the space, exploits that copy a top member's weights,
optimizer state and values, members without a checkpoint, the ledger, the report, the errors a user can
make; and (slow) whole populations through `puffer pbt`: end to end, resumed after SIGKILL, on Ray.

The fast tests train their members in this process (`train.train`, a few hundred steps of puffer_bandit)
and write the round results the selection reads straight into the ledger; the slow ones run the driver as
a user does."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from pufferlib import config as configuration
from pufferlib import pbt, rundir
from pufferlib import train as training
from pufferlib.cli import main
from pufferlib.config import ConfigError
from pufferlib.sweep.space import Param, Space

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')
# A member's round in an epoch or two: 16 bandit rows in this process, 16-step segments (256 steps an epoch);
# the Ocean env reports episodes every 128 ticks, so a 2,048-step round logs its score.
TINY = ['--vec.backend', 'Serial', '--vec.num-envs', '1', '--env.num-envs', '16', '--train.bptt-horizon', '16',
        '--train.minibatch-size', '256', '--train.log-interval', '0',
        '--sweep.only', 'train.learning_rate,train.ent_coef,train.gamma']

pytestmark = pytest.mark.usefixtures('experiments')


def records(path, kind=None):
    found = rundir.Ledger(os.path.join(path, 'ledger.jsonl'), pbt.PBTError, pbt.record_problem).read()
    return [r for r in found if kind is None or r['type'] == kind]


def member_values(path, m):
    """The swept values in a member's config.toml (what its next round trains with)."""
    config = configuration.read(os.path.join(path, 'members', f'member-{m:02d}', 'config.toml'))
    return {name: config[name.split('.')[0]][name.split('.')[1]]
            for name in ('train.learning_rate', 'train.ent_coef', 'train.gamma')}


# --- perturbation -------------------------------------------------------------------------------

SPACE = Space([Param('train.learning_rate', 'log', 1e-4, 1e-1, 0.015, False),
               Param('train.gamma', 'logit', 0.9, 0.9999, 0.995, False),
               Param('train.clip_coef', 'linear', 0.05, 0.5, 0.2, False),
               Param('train.update_epochs', 'int', 1, 4, 1, True),
               Param('train.minibatch_size', 'pow2', 256, 8192, 1024, True)])


@pytest.mark.parametrize('resample', [0.0, 0.25, 1.0])
def test_perturbations_stay_inside_the_space_whatever_they_start_from(resample):
    rng = np.random.default_rng(0)
    for start in [SPACE.values(rng.uniform(-1, 1, len(SPACE))) for _ in range(200)] + \
            [SPACE.values(np.full(len(SPACE), edge)) for edge in (-1.0, 1.0)]:
        values = start
        for _ in range(5):  # a member copied round after round
            values, how = pbt.perturb(SPACE, values, rng, resample)
            for p in SPACE.params:
                v = values[p.name]
                assert p.low <= v <= p.high, (p.name, v)
                assert isinstance(v, int) == p.integer, (p.name, v)
                assert how[p.name] in ('x0.8', 'x1.2', 'resample')
            assert values['train.minibatch_size'] & (values['train.minibatch_size'] - 1) == 0  # a power of two


def test_a_perturbation_multiplies_by_0_8_or_1_2_where_that_means_a_bit_more_or_less():
    rng = np.random.default_rng(1)
    start = {'train.learning_rate': 0.01, 'train.gamma': 0.99, 'train.clip_coef': 0.2, 'train.update_epochs': 2,
             'train.minibatch_size': 1024}
    seen = set()
    for _ in range(50):
        values, how = pbt.perturb(SPACE, start, rng, resample=0.0)
        factor = float(how['train.learning_rate'][1:])
        seen.add(factor)
        assert values['train.learning_rate'] == pytest.approx(0.01 * factor)
        # gamma near 1 scales its distance to 1 (its horizon), not its value
        assert 1 - values['train.gamma'] == pytest.approx(0.01 * float(how['train.gamma'][1:]))
        assert values['train.update_epochs'] in (1, 3)  # an integer moves at least one step
        assert values['train.minibatch_size'] in (512, 2048)  # a power of two halves or doubles
    assert seen == {0.8, 1.2}


# --- a small trained population (members trained in this process) --------------------------------

def trained_population(tmp_path, size=4, *flags):
    """A population of `size` members after their first round (one epoch each, trained in this process),
    with the round's scores (member m scores m) written to its ledger as the driver would."""
    path = pbt.create('puffer_bandit', [*TINY, '--train.total-timesteps', '2048', '--pbt.interval', '256',
                                        '--pbt.population', str(size), *flags], root=str(tmp_path / 'pbt'))
    driver = pbt.Driver(pbt.Population(path), quiet=True)
    for m in range(size):
        training.train(None, resume=driver.prepare(m), quiet=True, until_step=256)
        record = {'type': 'trained', 'round': 0, 'member': m, 'status': 'ok', 'score': float(m),
                  'metric': 'env/score', 'steps': 256, 'seconds': 1.0, 'error': None, 'time': time.time()}
        driver.pop.ledger.append(record)
        driver.state.trained[(0, m)] = record
    driver.close()
    return path


@pytest.fixture(scope='module')
def population(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path_factory.mktemp('experiments')))
    path = trained_population(tmp_path_factory.mktemp('population'))
    monkeypatch.undo()
    return path


@pytest.fixture
def fresh(population, tmp_path):
    """A copy of the trained population for one test to change."""
    path = str(tmp_path / 'copy')
    shutil.copytree(population, path)
    return path


def selected(path):
    driver = pbt.Driver(pbt.Population(path), quiet=True)
    driver.select(0)
    driver.apply(driver.state.exploits[0])
    driver.close()
    return records(path, 'exploit')[-1]


def test_the_bottom_member_copies_weights_optimizer_and_values_of_a_top_member(fresh):
    before = {m: member_values(fresh, m) for m in range(4)}
    exploit = selected(fresh)
    (e,) = exploit['exploits']  # 4 members, fraction 0.25: the worst one copies the best one
    assert (e['member'], e['source']) == (0, 3)
    source = rundir.latest_checkpoint(os.path.join(fresh, 'members', 'member-03'))
    target = rundir.latest_checkpoint(os.path.join(fresh, 'members', 'member-00'))
    assert os.path.basename(target) == os.path.basename(source)
    assert open(target, 'rb').read() == open(source, 'rb').read()  # weights, optimizer moments, step
    assert len(os.listdir(os.path.dirname(target))) == 1  # its own older checkpoints are gone
    now = member_values(fresh, 0)
    assert now == e['values'] != before[0]
    for name, how in e['perturbed'].items():
        if how != 'resample':
            assert now[name] != before[3][name]
    for m in (1, 2, 3):
        assert member_values(fresh, m) == before[m]  # the others keep theirs

    # The copied member's next round trains from the copy with its own perturbed values: the optimizer's
    # moments are the source's, its learning rate the new one at the same point of the schedule.
    state = torch.load(target, weights_only=True)
    member = os.path.join(fresh, 'members', 'member-00')
    best = os.path.join(fresh, 'members', 'member-03')
    for run in (member, best):
        pbt.Driver(pbt.Population(fresh), quiet=True).prepare(3 if run == best else 0)
        training.train(None, resume=run, quiet=True, until_step=512)
    rates = [json.loads(open(os.path.join(run, 'metrics.jsonl')).readlines()[-1])['learning_rate']
             for run in (member, best)]
    assert rates[0] / rates[1] == pytest.approx(now['train.learning_rate'] / before[3]['train.learning_rate'])
    assert state['global_step'] == 256 and 'exp_avg' in str(state['optimizers'])


def test_a_member_without_a_checkpoint_is_never_copied(fresh):
    shutil.rmtree(os.path.join(fresh, 'members', 'member-03', 'checkpoints'))  # the best member: none on disk
    exploit = selected(fresh)
    assert [e['source'] for e in exploit['exploits']] == [2]  # the next best takes its place
    copied = rundir.latest_checkpoint(os.path.join(fresh, 'members', 'member-00'))
    source = rundir.latest_checkpoint(os.path.join(fresh, 'members', 'member-02'))
    assert open(copied, 'rb').read() == open(source, 'rb').read()


def test_failed_members_are_copied_over_and_never_copied(fresh):
    with open(os.path.join(fresh, 'ledger.jsonl')) as f:
        lines = f.readlines()
    with open(os.path.join(fresh, 'ledger.jsonl'), 'w') as f:  # the two best members failed their round instead
        for line in lines:
            record = json.loads(line)
            if record['type'] == 'trained' and record['member'] in (2, 3):
                record.update(status='failed', score=None, error='diverged: value_loss became nan')
            f.write(json.dumps(record) + '\n')
    exploit = selected(fresh)
    # Failed members rank last and are all copied over, beyond the bottom fraction (one member of four here);
    # the best member that did not fail is the source.
    pairs = sorted((e['member'], e['source']) for e in exploit['exploits'])
    assert pairs == [(2, 1), (3, 1)]


def test_the_ledger_holds_each_exploit_with_how_every_key_moved(fresh):
    exploit = selected(fresh)
    assert exploit['round'] == 0 and exploit['scores'] == [0.0, 1.0, 2.0, 3.0]
    (e,) = exploit['exploits']
    assert set(e) >= {'member', 'source', 'checkpoint', 'values', 'perturbed', 'source_values'}
    assert set(e['perturbed']) == set(e['values']) == {'train.learning_rate', 'train.ent_coef', 'train.gamma'}
    with open(os.path.join(fresh, 'ledger.jsonl'), 'rb') as f:
        assert f.read().endswith(b'\n')  # whole lines, each appended and fsync'd
    kinds = [r['type'] for r in records(fresh)]
    assert kinds.count('member') == 4 and kinds.count('trained') == 4 and kinds[-1] == 'exploit'


def test_a_damaged_ledger_line_is_one_error_naming_it(fresh):
    with open(os.path.join(fresh, 'ledger.jsonl'), 'a') as f:
        f.write('{"type": "trained", "round": 0, "member": "two"}\n')
    with pytest.raises(pbt.PBTError, match=r'ledger.jsonl line 10 .*member'):
        pbt.run(fresh)


def test_an_exploit_applied_twice_leaves_the_same_population(fresh):
    """A resume after a kill in the middle of copying applies the recorded exploit again."""
    selected(fresh)
    first = {m: member_values(fresh, m) for m in range(4)}
    driver = pbt.Driver(pbt.Population(fresh), quiet=True)
    driver.apply(driver.state.exploits[0])
    driver.close()
    assert {m: member_values(fresh, m) for m in range(4)} == first


def test_the_report_prints_a_table_and_draws_the_schedules(fresh, capsys):
    selected(fresh)
    (png,) = pbt.report(fresh)
    assert png.endswith('pbt.png') and os.path.getsize(png) > 10_000
    lines = capsys.readouterr().out.splitlines()
    assert 'learning_rate' in lines[1] and 'copied' in lines[1]
    assert lines[2].split()[:3] == ['0', '0*', '1']  # member 0 scored 0 and was copied over once


def test_a_metric_no_member_logged_lists_what_the_env_logs(fresh):
    driver = pbt.Driver(pbt.Population(fresh), quiet=True)
    driver.keys_seen = {0: {'env/episode_return', 'env/episode_length'}}
    for m in range(4):
        driver.state.trained[(0, m)].update(metric='env/scroe', score=None, status='failed')
    with pytest.raises(pbt.PBTError, match='no member logged env/scroe.*env/episode_length, env/episode_return'):
        driver.select(0)
    driver.close()


def test_first_members_can_come_from_the_best_trials_of_a_sweep(tmp_path):
    sweep_dir = tmp_path / 'sweep'
    sweep_dir.mkdir()
    (sweep_dir / 'sweep.toml').write_text('[_meta]\nenv = "puffer_bandit"\n\n[sweep]\ngoal = "maximize"\n')
    with open(sweep_dir / 'trials.jsonl', 'w') as f:
        for k, (lr, score) in enumerate([(0.001, 0.5), (0.03, 0.9), (0.004, 0.7)]):
            f.write(json.dumps({'type': 'start', 'trial': k, 'attempt': 1, 'time': 1.0, 'run_dir': 'x',
                                'values': {'train.learning_rate': lr}}) + '\n')
            f.write(json.dumps({'type': 'end', 'trial': k, 'attempt': 1, 'time': 2.0, 'status': 'ok', 'error': None,
                                'metric': 'env/score', 'curve': [], 'score': score, 'cost': 1.0, 'steps': 10,
                                'seconds': 1.0}) + '\n')
    config = configuration.load('puffer_bandit', [*TINY, '--pbt.population', '4', '--pbt.seed-from', str(sweep_dir)])
    space, _ = pbt.population_space(config)
    members = pbt.first_members(config, space, 'puffer_bandit')
    assert [values['train.learning_rate'] for values, _ in members[:3]] == pytest.approx([0.03, 0.004, 0.001])
    assert members[0][1].startswith('sweep trial 1') and 'perturbed' in members[3][1]
    assert members[0][0]['train.gamma'] == config['train']['gamma']  # not swept there: the configured value
    with pytest.raises(ConfigError, match='that sweep is of puffer_bandit, not puffer_squared'):
        pbt.seeds_from_sweep(str(sweep_dir), 'puffer_squared', space)


# --- user errors --------------------------------------------------------------------------------

@pytest.mark.parametrize('flags, message', [
    (['--pbt.population', '1'], r'--pbt.population 1: must be at least 2'),
    (['--pbt.fraction', '0.6'], r'--pbt.fraction 0.6: must be in \(0, 0.5\]'),
    (['--pbt.fraction', '0'], r'--pbt.fraction 0.0: must be in \(0, 0.5\]'),
    (['--pbt.resample', '1.5'], r'--pbt.resample 1.5: must be a probability'),
    (['--pbt.metric', 'env/scroe'], r"puffer_bandit logs no such statistic; it logs env/episode_return, .*env/score"),
    (['--pbt.metric', 'policy_loss'], r'an env statistic, env/<name> \(puffer_bandit logs env/episode_return'),
    (['--pbt.interval', '4096'], r'a round must be shorter than the run'),
    (['--sweep.only', 'train.total_timesteps'], r'names no key PBT can perturb'),
])
def test_a_bad_setting_is_one_error_before_anything_is_written(experiments, tmp_path, capsys, flags, message):
    space = tmp_path / 'space.toml'
    space.write_text('[sweep.train.total_timesteps]\ndistribution = "log"\nmin = 1024\nmax = 8192\n')
    code = main(['pbt', 'puffer_bandit', '--config', str(space), *TINY, '--train.total-timesteps', '4096',
                 '--pbt.interval', '1024', *flags])
    err = capsys.readouterr().err
    assert code == 2 and 'Traceback' not in err
    assert any(line.startswith('puffer pbt: error:') for line in err.splitlines()), err
    assert re.search(message, err), err
    assert not os.path.exists(experiments / 'pbt')


def test_a_resumed_population_keeps_its_settings(fresh):
    with pytest.raises(ConfigError, match='only --pbt.parallel and --pbt.backend may change'):
        pbt.Population(fresh, ['--pbt.fraction', '0.5'])


# --- whole populations through `puffer pbt` (slow) -----------------------------------------------

def start_pbt(*flags, env=None):
    return subprocess.Popen([PUFFER, 'pbt', 'puffer_bandit', *TINY, *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
                            start_new_session=True)


def population_dir(experiments):
    (name,) = os.listdir(experiments / 'pbt')
    return str(experiments / 'pbt' / name)


def check_finished(path, size, rounds, interval):
    """Every round once, every member trained once a round to the round's end, the values in each member's
    config.toml those its last ledger record gave it."""
    found = records(path)
    assert [r['round'] for r in found if r['type'] == 'round'] == list(range(rounds))
    trained = [(r['round'], r['member']) for r in found if r['type'] == 'trained']
    assert sorted(trained) == [(r, m) for r in range(rounds) for m in range(size)]  # none lost, none twice
    for r in found:
        if r['type'] == 'trained':
            assert r['steps'] == (r['round'] + 1) * interval and r['status'] == 'ok', r
    state = pbt.State(found)
    for m in range(size):
        assert member_values(path, m) == state.values[m]
        checkpoint = torch.load(rundir.latest_checkpoint(os.path.join(path, 'members', f'member-{m:02d}')),
                                weights_only=True)
        assert checkpoint['global_step'] == rounds * interval
        # its last round trained with the values the ledger gave it (the checkpoint carries its config)
        assert {name: checkpoint['config'][name.split('.')[0]][name.split('.')[1]] for name in state.values[m]} \
            == state.values[m]
    return found


@pytest.mark.slow
def test_a_population_trains_end_to_end_and_the_report_plots(experiments):
    proc = start_pbt('--train.total-timesteps', '6144', '--pbt.interval', '2048', '--pbt.population', '3')
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    path = population_dir(experiments)
    found = check_finished(path, 3, 3, 2048)
    assert len([r for r in found if r['type'] == 'exploit']) == 2  # after every round but the last
    assert 'best: member' in out and 'eval puffer_bandit --checkpoint' in out
    report = subprocess.run([PUFFER, 'pbt', '--report', path], capture_output=True, text=True, timeout=300)
    assert report.returncode == 0 and os.path.exists(os.path.join(path, 'pbt.png')), report.stderr


@pytest.mark.slow
def test_resume_after_sigkill_loses_and_repeats_no_round_and_keeps_every_members_values(experiments):
    flags = ['--train.total-timesteps', '8192', '--pbt.interval', '2048', '--pbt.population', '3']
    proc = start_pbt(*flags)
    deadline = time.time() + 900
    path = None
    while time.time() < deadline:  # kill it once round 1 is selected and round 2 is under way
        if os.path.isdir(experiments / 'pbt') and os.listdir(experiments / 'pbt'):
            path = population_dir(experiments)
            if any(r['type'] == 'trained' and r['round'] == 1 for r in records(path)):
                break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)  # the driver only: its members stop by their parent-death signal
    proc.communicate()
    before = records(path)
    resumed = subprocess.run([PUFFER, 'pbt', '--resume', path, '--quiet'], capture_output=True, text=True,
                             timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    after = check_finished(path, 3, 4, 2048)
    assert after[:len(before)] == before  # the first session's records stand as written


@pytest.mark.slow
def test_ray_backend_trains_members_as_ray_tasks(experiments):
    pytest.importorskip('ray')
    proc = start_pbt('--train.total-timesteps', '4096', '--pbt.interval', '2048', '--pbt.population', '2',
                     '--pbt.backend', 'ray', env={'RAY_ADDRESS': '', 'RAY_DISABLE_USAGE_STATS': '1'})
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    check_finished(population_dir(experiments), 2, 2, 2048)


@pytest.mark.slow
def test_a_round_trained_away_from_the_members_directory_comes_back_whole(experiments, tmp_path):
    """A Ray worker on another node without a shared filesystem: the task gets the member's config and
    checkpoint with it, trains in a scratch directory and sends the new checkpoint and rows back."""
    path = pbt.create('puffer_bandit', [*TINY, '--train.total-timesteps', '4096', '--pbt.interval', '2048',
                                        '--pbt.population', '2'], root=str(tmp_path / 'pbt'))
    driver = pbt.Driver(pbt.Population(path), quiet=True)
    driver.ray = True  # what the Ray driver sends with each task
    spec = driver.spec(0, 0, 0)
    spec['run_dir'] = str(tmp_path / 'elsewhere' / 'member-00')  # not on "this node"
    result = pbt.member_round(spec)
    assert result['status'] == 'ok' and result['score'] is not None, result['error']
    shipped = result['shipped']
    assert shipped['checkpoint'][0].startswith('epoch-') and shipped['rows'][-1]['global_step'] == 2048
    driver.receive(0, shipped, 0)
    member = os.path.join(path, 'members', 'member-00')
    assert torch.load(rundir.latest_checkpoint(member), weights_only=True)['global_step'] == 2048
    assert json.loads(open(os.path.join(member, 'metrics.jsonl')).readlines()[-1])['global_step'] == 2048
    # the next round goes away with the checkpoint and resumes from it there
    spec = driver.spec(1, 0, 0)
    assert spec['bundle']['checkpoint'][0] == os.path.basename(rundir.latest_checkpoint(member))
    spec['run_dir'] = str(tmp_path / 'elsewhere-again' / 'member-00')
    result = pbt.member_round(spec)
    assert result['status'] == 'ok', result['error']
    assert result['shipped']['rows'][0]['global_step'] > 2048  # it went on from the checkpoint, not from 0
    driver.receive(0, result['shipped'], 2048)
    driver.close()
    assert torch.load(rundir.latest_checkpoint(member), weights_only=True)['global_step'] == 4096
    steps = [json.loads(line)['global_step'] for line in open(os.path.join(member, 'metrics.jsonl'))]
    assert steps == sorted(set(steps)) and steps[-1] == 4096  # each step once, in order
