"""`puffer league`: self-play, fictitious self-play and PSRO end to end on Kuhn poker, the league
directory, resuming after a real SIGKILL, reports, and one clear error for each bad input."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pufferlib import cli, league, rundir
from pufferlib.arena import LeagueError

pytest.importorskip('scipy')
pytest.importorskip('openskill')
pytest.importorskip('pyspiel')

# A league small enough for a unit test: a few thousand PPO steps per response.
# PPO responses (the poker configs default to the exact oracle, tested on its own below)
TINY = ['--league.steps-per-iteration', '2048', '--league.num-envs', '64', '--league.eval-games', '20',
        '--train.bptt-horizon', '16', '--train.minibatch-size', '512', '--policy.hidden-size', '16',
        '--league.oracle', 'ppo']


def iterations(path):
    with open(os.path.join(path, 'ledger.jsonl')) as f:
        return [r for r in map(json.loads, f) if r['type'] == 'iteration']


@pytest.mark.parametrize('method', ['self_play', 'fsp', 'psro'])
def test_each_method_fills_a_league_directory(tmp_path, method):
    extra = ['--league.fsp-sampling', 'prioritized'] if method == 'fsp' else []
    path = league.create('puffer_kuhn', ['--league.method', method, '--league.iterations', '3', *TINY, *extra],
                         root=str(tmp_path))
    summary = league.League(path).run(printer=None)
    assert summary['iterations'] == 3
    rows = iterations(path)
    assert [r['iteration'] for r in rows] == [0, 1, 2]
    assert rows[-1]['population'] == ['p000', 'p001', 'p002']
    assert rows[0]['steps'] == 0 and rows[1]['steps'] >= 2048  # p000 is the untrained start
    for row in rows:
        assert 0 <= row['exploitability'] <= 2.5  # Kuhn: at most what a fully exploited policy loses
        assert np.isclose(sum(row['meta']), 1) and len(row['meta']) == len(row['population'])
    if method == 'self_play':
        assert rows[-1]['meta'] == [0, 0, 1]
    if method == 'fsp':
        np.testing.assert_allclose(rows[-1]['meta'], [1 / 3] * 3)
    payoffs = league.PayoffTable.from_dict(json.load(open(os.path.join(path, 'payoffs.json'))))
    matrix = payoffs.matrix()
    assert matrix.shape == (3, 3) and np.isfinite(matrix).all()
    np.testing.assert_allclose(matrix, -matrix.T, atol=1e-9)  # symmetric zero-sum
    assert sorted(os.listdir(os.path.join(path, 'policies'))) == ['p000.pt', 'p001.pt', 'p002.pt']
    written = league.report(path, printer=None)
    assert sorted(os.path.basename(p) for p in written) == ['exploitability.png', 'payoffs.png', 'ratings.png']
    assert all(os.path.getsize(p) > 1000 for p in written)
    assert 'p002' in open(os.path.join(path, 'leaderboard.txt')).read()


@pytest.mark.parametrize('threads', [0, 3])
def test_a_league_sets_torch_threads_like_the_trainer(tmp_path, threads):
    """train.torch_threads > 0 is obeyed; 0 means one thread: the arena steps in-process and the
    networks are small (torch's default of one thread per core ran a Kuhn league ~7x slower here)."""
    import torch
    before = torch.get_num_threads()
    path = league.create('puffer_kuhn', ['--train.torch-threads', str(threads), *TINY], root=str(tmp_path))
    opened = league.League(path)
    try:
        torch.set_num_threads(2)
        opened.open()
        assert torch.get_num_threads() == (threads or 1)
        opened.close()
    finally:
        torch.set_num_threads(before)


def test_a_psro_response_that_does_not_beat_the_meta_strategy_keeps_training(tmp_path):
    """Tiny responses rarely beat the meta-strategy at once: each gets up to league.response_rounds rounds,
    stopping early only once its exact gain against the meta-strategy is positive."""
    path = league.create('puffer_kuhn', ['--league.iterations', '4', '--league.response-rounds', '3', *TINY],
                         root=str(tmp_path))
    league.League(path).run(printer=None)
    rows = iterations(path)[1:]
    for row in rows:
        assert 1 <= row['response_rounds'] <= 3
        assert row['steps'] >= 2048 * row['response_rounds']
        if row['response_rounds'] < 3:
            assert row['response_gain'] > 1e-3
    assert any(row['response_rounds'] > 1 for row in rows) or all(row['response_gain'] > 1e-3 for row in rows)


# A learning rate so small that PPO leaves every weight where it started (within 1e-20): a response's
# saved weights are then the weights its task started from.
FROZEN = ['--train.learning-rate', '1e-30', '--league.response-rounds', '1']


def saved(path, name):
    import torch
    return torch.load(os.path.join(path, 'policies', f'{name}.pt'), weights_only=True)['policy']


def assert_started_from(path, response, latest, fresh, kept):
    """The saved policy `response` is `latest`'s network but for its action head (`actor.*`) when `kept`,
    and the fresh network `fresh` (a state dict) otherwise; what comes from `fresh` differs from `latest`."""
    import torch
    mine, theirs = saved(path, response), saved(path, latest)
    for key, value in mine.items():
        source = theirs if kept and not key.startswith('actor.') else fresh
        assert torch.allclose(value, source[key], rtol=0, atol=1e-20), key
        if source is fresh and key.endswith('weight'):  # (biases start at 0 in both)
            assert not torch.allclose(value, theirs[key], rtol=0, atol=1e-3), key


@pytest.mark.parametrize('init', ['fresh', 'features'])
def test_a_warm_started_psro_response_starts_from_the_latest_responses_features(tmp_path, init):
    """league.response_init = "features": p002 starts as p001's encoder and value head with a fresh action
    head (the one a fresh network of its seed has); "fresh" keeps nothing of p001. p001 never keeps
    anything of the untrained p000."""
    import torch
    path = league.create('puffer_kuhn', ['--league.iterations', '3', '--league.response-init', init, *FROZEN,
                                         *TINY], root=str(tmp_path))
    league.League(path).run(printer=None)
    run = league.League(path)
    run.open()
    try:
        torch.manual_seed(run.settings['seed'] + 2)
        fresh = league.policy_state(run.new_network(run.arena))
        assert_started_from(path, 'p002', 'p001', fresh, kept=init == 'features')
        torch.manual_seed(run.settings['seed'] + 1)
        assert_started_from(path, 'p001', 'p000', league.policy_state(run.new_network(run.arena)), kept=False)
        if init == 'features':  # a policy class without an `actor` head cannot keep "all but the head"
            run.networks[-1] = torch.nn.Sequential(torch.nn.Linear(2, 2))
            with pytest.raises(LeagueError, match='has none; set --league.response-init fresh'):
                run.response_start(3)
    finally:
        run.close()


def test_poker_payoffs_are_exact_expected_values():
    """GameTree's matrix products agree with OpenSpiel's own expected game value."""
    from open_spiel.python.algorithms import expected_game_score
    tree = league.GameTree('puffer_leduc')
    rng = np.random.default_rng(0)
    tables = [tree.tabulate(lambda obs, legal: rng.random(legal.shape) + 0.05) for _ in range(2)]
    game = league.openspiel_game('puffer_leduc')
    policies = [tree.to_openspiel(t) for t in tables]
    expected = expected_game_score.policy_value(game.new_initial_state(), policies)[0]
    assert tree.seat_payoffs(tables[0], tables[1])[0, 0] == pytest.approx(expected, abs=1e-9)
    both = tree.payoffs(np.stack(tables))
    np.testing.assert_allclose(both, -both.T, atol=1e-12)
    assert both[0, 0] == pytest.approx(0, abs=1e-12)


def test_psro_can_output_the_least_exploitable_mixture_of_its_population(tmp_path):
    """league.output = "least_exploitable": each ledger line's meta-strategy is the population's least
    exploitable mixture (GameTree's LP), never more exploitable than the Nash of the same payoff table,
    while the responses still train against that Nash."""
    path = league.create('puffer_kuhn', ['--league.iterations', '4', '--league.output', 'least_exploitable',
                                         *TINY], root=str(tmp_path))
    run = league.League(path)
    run.run(printer=None)
    rows = iterations(path)
    tree = league.game_tree('puffer_kuhn')
    from pufferlib.arena import NetworkPlayer
    tables = np.stack([tree.tabulate(NetworkPlayer(n).probabilities) for n in run.networks])
    payoffs = league.PayoffTable.from_dict(rows[-1]['payoffs'])
    nash = league.meta_strategy(payoffs.matrix(fill=0.0), 'nash')
    best, _ = tree.least_exploitable(tables)
    assert rows[-1]['exploitability'] == pytest.approx(best, abs=1e-6)  # the referee agrees with the LP
    assert best <= tree.least_exploitable(tables, nash)[0] + 1e-9
    np.testing.assert_allclose(run.opponent_weights(run.names, payoffs, run.ratings), nash)


def start_league(path, until):
    """`puffer league --resume` of `path` as a process, returned once its ledger exists and `until()` holds."""
    proc = subprocess.Popen([sys.executable, '-m', 'pufferlib.cli', 'league', '--resume', path, '--quiet'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline and not (os.path.exists(os.path.join(path, 'ledger.jsonl')) and until()):
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        time.sleep(0.2)
    return proc


def test_a_league_killed_mid_iteration_resumes_without_losing_or_repeating_one(tmp_path):
    path = league.create('puffer_kuhn', ['--league.iterations', '8', *TINY], root=str(tmp_path))
    proc = start_league(path, until=lambda: len(iterations(path)) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(iterations(path))
    assert 2 <= done < 8
    summary = league.League(path, ['--league.iterations', str(done + 2)]).run(printer=None)
    rows = iterations(path)
    assert [r['iteration'] for r in rows] == list(range(done + 2))
    assert summary['iterations'] == done + 2
    assert rows[-1]['seconds'] >= rows[done - 1]['seconds']  # the clock carries over sessions
    arena = league.League.open_env('puffer_kuhn', league.League(path).config, games=2)
    for name in rows[-1]['population']:
        league.League(path).load_policy(name, arena)
    arena.close()


def test_a_league_stopped_by_sigterm_says_how_to_resume_and_resumes(tmp_path):
    """`docker stop` sends SIGTERM: the league stops with the shell's 143, prints the resume line, and that
    resume carries on from the finished iterations."""
    path = league.create('puffer_kuhn', ['--league.iterations', '50', *TINY], root=str(tmp_path))
    proc = start_league(path, until=lambda: len(iterations(path)) >= 1)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=300)[1].decode()
    assert proc.returncode == 143, err
    assert 'league interrupted after' in err and f'--resume {path}' in err and 'Traceback' not in err
    done = len(iterations(path))
    summary = league.League(path, ['--league.iterations', str(done + 1)]).run(printer=None)
    assert summary['iterations'] == done + 1
    assert [r['iteration'] for r in iterations(path)] == list(range(done + 1))


def test_a_running_league_cannot_be_resumed_twice(tmp_path):
    """Two drivers of one league would both append to its ledger: the second is refused, naming the first."""
    path = league.create('puffer_kuhn', ['--league.iterations', '50', *TINY], root=str(tmp_path))
    first = start_league(path, until=lambda: True)  # its ledger exists: it holds the lock
    try:
        second = subprocess.run([sys.executable, '-m', 'pufferlib.cli', 'league', '--resume', path, '--quiet'],
                                capture_output=True, text=True, timeout=300)
        assert first.poll() is None  # still running: the refusal came from its lock
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert second.returncode == 2, second.stderr
    assert f'the league {path} is already running (pid {first.pid} on host' in second.stderr
    assert 'Traceback' not in second.stderr
    records = rundir.Ledger(os.path.join(path, 'ledger.jsonl')).read()  # the kill may tear its last line
    sessions = [r for r in records if r['type'] == 'session']
    assert [r['pid'] for r in sessions] == [first.pid]  # the refused driver wrote nothing


def test_bad_input_is_one_clear_error_and_loses_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    assert cli.main(['league', 'puffer_kuhn', '--league.method', 'population']) == 2
    assert 'league.method must be one of self_play, fsp, psro' in capsys.readouterr().err
    assert cli.main(['league', 'puffer_cartpole']) == 2
    assert 'population play needs two or more' in capsys.readouterr().err
    assert cli.main(['league', 'puffer_leduc', '--league.response-init', 'latest']) == 2
    err = capsys.readouterr().err
    assert "league.response_init must be one of fresh, features" in err and "got 'latest'" in err
    assert 'Traceback' not in err
    assert cli.main(['league', 'puffer_kuhn', '--league.num-envs', '8', '--train.minibatch-size', '4096']) == 2
    assert 'raise league.num_envs' in capsys.readouterr().err
    for share in ('1.5', '-0.1', 'nan'):
        assert cli.main(['league', 'puffer_connect4', '--league.baseline-share', share]) == 2
        assert 'league.baseline_share is the fraction' in capsys.readouterr().err
    assert cli.main(['league', 'puffer_kuhn', '--league.baseline-share', '0.2']) == 2
    err = capsys.readouterr().err
    assert 'league.baseline_share=0.2: puffer_kuhn has no built-in player' in err and 'Traceback' not in err
    assert cli.main(['league', 'puffer_kuhn', '--league.output', 'best']) == 2
    assert "league.output must be one of meta, least_exploitable, got 'best'" in capsys.readouterr().err
    assert cli.main(['league', 'puffer_connect4', '--league.output', 'least_exploitable']) == 2
    err = capsys.readouterr().err
    assert 'not puffer_connect4; set --league.output meta' in err and 'Traceback' not in err
    assert not os.path.exists(os.path.join(tmp_path, 'leagues')) or not os.listdir(os.path.join(tmp_path, 'leagues'))

    path = league.create('puffer_kuhn', ['--league.iterations', '2', *TINY], root=str(tmp_path))
    league.League(path).run(printer=None)
    ledger = open(os.path.join(path, 'ledger.jsonl'), 'rb').read()
    policy = os.path.join(path, 'policies', 'p001.pt')
    with open(policy, 'r+b') as f:  # a damaged pool member
        f.truncate(100)
    with pytest.raises(LeagueError, match='p001 cannot be loaded'):
        league.League(path, ['--league.iterations', '3']).run(printer=None)
    assert cli.main(['league', '--resume', path, '--league.iterations', '3']) == 2
    assert 'Restore that file' in capsys.readouterr().err
    assert open(os.path.join(path, 'ledger.jsonl'), 'rb').read().startswith(ledger)
    assert os.path.getsize(policy) == 100 and os.path.exists(os.path.join(path, 'policies', 'p000.pt'))
    with pytest.raises(LeagueError, match='keeps its config'):
        league.League(path, ['--train.learning-rate', '0.1'])
    with pytest.raises(LeagueError, match='not a league directory'):
        league.League(str(tmp_path))


def test_a_policy_file_replaced_after_its_iteration_is_refused_on_resume(tmp_path, capsys):
    """Each iteration's ledger line records its policy file's sha256: `cp p000.pt p001.pt` loads fine (one
    architecture) but is not the league's p001, so resuming refuses it, naming the file; a ledger written
    before the digests resumes unchecked, saying so once."""
    import shutil
    path = league.create('puffer_kuhn', ['--league.iterations', '2', *TINY], root=str(tmp_path))
    league.League(path).run(printer=None)
    policies = os.path.join(path, 'policies')
    ledger = open(os.path.join(path, 'ledger.jsonl'), 'rb').read()
    shutil.copy(os.path.join(policies, 'p001.pt'), tmp_path / 'backup.pt')
    shutil.copy(os.path.join(policies, 'p000.pt'), os.path.join(policies, 'p001.pt'))
    resumed = subprocess.run([sys.executable, '-m', 'pufferlib.cli', 'league', '--resume', path,
                              '--league.iterations', '3', '--quiet'], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 2, resumed.stderr
    assert f'{os.path.join(policies, "p001.pt")}: the pool policy p001 is not the file the league wrote' \
        in resumed.stderr
    assert 'Restore it from a backup, or cut the league back' in resumed.stderr and 'Traceback' not in resumed.stderr
    assert open(os.path.join(path, 'ledger.jsonl'), 'rb').read() == ledger  # nothing written
    assert sorted(os.listdir(policies)) == ['p000.pt', 'p001.pt']
    assert all(len(row['policy_sha256']) == 64 for row in iterations(path))

    shutil.copy(tmp_path / 'backup.pt', os.path.join(policies, 'p001.pt'))  # restored from the backup
    with open(os.path.join(path, 'ledger.jsonl'), 'w') as f:  # as a league made before the digests wrote it
        for record in map(json.loads, ledger.splitlines()):
            record.pop('policy_sha256', None)
            f.write(json.dumps(record) + '\n')
    capsys.readouterr()
    league.League(path, ['--league.iterations', '3']).run(printer=None)
    err = capsys.readouterr().err
    assert err.count('loaded unchecked') == 1 and 'no sha256 of 2 pool policies (p000, p001;' in err
    assert 'policy_sha256' not in iterations(path)[1] and len(iterations(path)[2]['policy_sha256']) == 64
    shutil.copy(os.path.join(policies, 'p000.pt'), os.path.join(policies, 'p002.pt'))  # checked from here on
    with pytest.raises(LeagueError, match='p002 is not the file the league wrote'):
        league.League(path, ['--league.iterations', '4']).run(printer=None)


def test_a_one_seat_env_is_refused_in_one_line_that_names_the_env_and_the_two_seat_ones(tmp_path):
    """A Gymnasium env runs in a Serial vector: the error names the env as typed, not the vector, says it
    has one seat, and names the envs that have two."""
    done = subprocess.run([sys.executable, '-m', 'pufferlib.cli', 'league', 'CartPole-v1'], capture_output=True,
                          text=True, timeout=300, env={**os.environ, 'PUFFER_EXPERIMENTS': str(tmp_path)})
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert 'CartPole-v1 has one seat (one agent) per game, and population play needs two or more' in line
    assert 'puffer_kuhn' in line and 'pettingzoo_tictactoe' in line
    assert re.search(r'`[^`]*(puffer|pufferlib\.cli) envs` lists every env', line), line  # the program as invoked
    assert 'Serial' not in line and 'agent row' not in line
    assert not os.path.exists(tmp_path / 'leagues') or not os.listdir(tmp_path / 'leagues')


def rewrite_line(path, number, change):
    """ledger.jsonl with its line `number` (from 1) replaced by change(record), as a hand edit would."""
    ledger = os.path.join(path, 'ledger.jsonl')
    lines = open(ledger).read().splitlines()
    lines[number - 1] = change(json.loads(lines[number - 1]))
    open(ledger, 'w').write('\n'.join(lines) + '\n')


def test_a_ledger_line_of_the_wrong_shape_is_one_error_naming_it_on_resume_and_report(tmp_path, capsys):
    """A whole JSON line that is not a record the league writes (a key missing, a value of another type)
    fails where the ledger is read, naming the file and line, for --resume and --report alike."""
    path = league.create('puffer_kuhn', ['--league.iterations', '2', *TINY], root=str(tmp_path))
    league.League(path).run(printer=None)
    ledger = os.path.join(path, 'ledger.jsonl')
    original = open(ledger).read()
    last = len(original.splitlines())  # session, p000, p001
    assert json.loads(original.splitlines()[-1])['policy'] == 'p001'

    def drop_ratings(record):
        del record['ratings']
        return json.dumps(record)
    rewrite_line(path, last, drop_ratings)
    edited = open(ledger).read()
    report = subprocess.run([sys.executable, '-m', 'pufferlib.cli', 'league', '--report', path], capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 2, report.stderr
    assert f"{ledger} line {last} is not a record of this ledger (no 'ratings')" in report.stderr
    assert 'Fix or delete that line, then resume' in report.stderr and 'Traceback' not in report.stderr
    assert cli.main(['league', '--resume', path, '--league.iterations', '3']) == 2
    err = capsys.readouterr().err
    assert f"{ledger} line {last} is not a record of this ledger (no 'ratings')" in err and 'Traceback' not in err
    assert open(ledger).read() == edited  # the refused resume wrote nothing

    wrong = {  # what a line holds -> what the error says of it
        '[1, 2]': 'a list, not an object',
        '{"type": "iteration_v2"}': 'its type is "iteration_v2", not one of session, iteration',
        '{"type": "session", "time": "noon", "pid": 1}': "'time' is \"noon\", not a number",
        '{"type": "session", "time": 1.5, "pid": true}': "'pid' is true, not an integer",
    }
    for line, problem in wrong.items():
        rewrite_line(path, 1, lambda record, line=line: line)
        with pytest.raises(LeagueError, match=f'line 1 is not a record of this ledger \\({re.escape(problem)}\\)'):
            league.report(path, printer=None)
    open(ledger, 'w').write(original)
    record = json.loads(original.splitlines()[-1])
    broken = {  # the last iteration record, changed: what the error says
        'ratings': ([1, 2], "'ratings' is [1, 2], not an object"),
        'population': (['p000'], "'population' is not a list of policy names with 'p001' in it"),
        'meta': ([1.0], "'meta' is not 2 numbers"),
        'payoffs': ({**record['payoffs'], 'sums': [[0.0]]}, "'payoffs' 'sums' is not 2 x 2 numbers"),
        'exploitability': ('low', "'exploitability' is \"low\", not a number or null"),
    }
    for key, (value, problem) in broken.items():
        rewrite_line(path, last, lambda record, key=key, value=value: json.dumps({**record, key: value}))
        with pytest.raises(LeagueError, match=re.escape(f'line {last} is not a record of this ledger ({problem}')):
            league.League(path, ['--league.iterations', '3']).run(printer=None)
        open(ledger, 'w').write(original)
    rewrite_line(path, last, lambda record: json.dumps(
        {**record, 'ratings': {**record['ratings'], 'p001': {**record['ratings']['p001'], 'mu': None}}}))
    with pytest.raises(LeagueError, match=re.escape("('ratings' 'mu' of p001 is null, not a number)")):
        league.report(path, printer=None)
    open(ledger, 'w').write(original.replace(', "backend": "local"', ''))  # a session line of an older version
    assert len(league.report(path, printer=None)) == 3


def test_connect4_policies_are_measured_against_the_scripted_opponent_from_both_seats(tmp_path):
    path = league.create('puffer_connect4', ['--league.method', 'fsp', '--league.iterations', '2',
                                             '--league.scripted-games', '50', *TINY], root=str(tmp_path))
    assert league.League(path).config['env']['two_player'] is True  # switched on for a league
    league.League(path).run(printer=None)
    rows = iterations(path)
    for row in rows:
        assert set(row['scripted_win_rate']) == {'seat0', 'seat1'}
        assert all(0 <= rate <= 1 for rate in row['scripted_win_rate'].values())
        assert row['exploitability'] is None  # no referee outside poker
    board = league.Ratings.from_dict(rows[-1]['ratings'])
    # an untrained policy loses to win/block/random play: the baseline tops the board
    assert board.leaderboard()[0]['name'] == 'scripted'
    assert 'exploitability.png' not in [os.path.basename(p) for p in league.report(path, printer=None)]


def test_scripted_games_are_whole_rounds_of_every_env_in_round_order(tmp_path):
    """scripted_task plays every env the same number of games and counts those (the first games to end
    anywhere are the short ones, more often won): 1,500 games are 2 rounds of 1,024 envs, the first
    1,500 in round order, from each seat."""
    from pufferlib.models import make_policy
    path = league.create('puffer_connect4', ['--league.method', 'fsp', *TINY], root=str(tmp_path))
    config = league.League(path).config
    config['league']['scripted_games'] = 1500
    arena = league.League.open_env('puffer_connect4', config, 1)
    try:
        state = league.policy_state(make_policy(arena, config))
    finally:
        arena.close()
    outcomes = league.scripted_task('puffer_connect4', config, 0, state)
    assert set(outcomes) == {'seat0', 'seat1'}
    for results in outcomes.values():
        assert len(results) == 1500 and set(results) <= {-1.0, 0.0, 1.0}
        assert results.count(-1.0) > 1000  # an untrained network loses to win/block/random play
    assert league.scripted_task('puffer_connect4', config, 0, state) == outcomes  # the seed decides


@pytest.mark.parametrize('method', ['self_play', 'fsp'])
def test_the_baseline_share_of_the_learners_games_goes_to_the_scripted_player_and_survives_resume(tmp_path, method):
    """league.baseline_share: that fraction of the learner's games in each response is against the env's
    scripted player (arena.BuiltinPlayer), whatever the method's pool; it is part of the league's config,
    so a resumed league keeps it and cannot change it."""
    path = league.create('puffer_connect4', ['--league.method', method, '--league.iterations', '2',
                                             '--league.baseline-share', '0.3', *TINY], root=str(tmp_path))
    assert league.League(path).settings['baseline_share'] == 0.3
    league.League(path).run(printer=None)
    league.League(path, ['--league.iterations', '3']).run(printer=None)  # a second session
    rows = iterations(path)
    assert [r['iteration'] for r in rows] == [0, 1, 2]
    assert 'baseline_games' not in rows[0]  # p000 is not trained
    for row in rows[1:]:
        assert 0.15 < row['baseline_games'] < 0.45, row  # a few hundred games per tiny response
        assert 0 <= row['baseline_win_rate'] <= 1
    with pytest.raises(LeagueError, match='keeps its config'):
        league.League(path, ['--league.baseline-share', '0'])


def test_the_baseline_share_defaults_to_a_half_for_connect4_and_off_elsewhere(tmp_path):
    c4 = league.create('puffer_connect4', ['--league.iterations', '1'], root=str(tmp_path))
    assert league.League(c4).settings['baseline_share'] == 0.5  # pufferlib/config/puffer_connect4.toml
    kuhn = league.create('puffer_kuhn', [], root=str(tmp_path))
    assert league.League(kuhn).settings['baseline_share'] == 0
    # a league made before the setting existed resumes as it ran: without the scripted player
    toml = os.path.join(c4, 'league.toml')
    text = open(toml).read()
    assert 'baseline_share = 0.5' in text
    open(toml, 'w').write(text.replace('baseline_share = 0.5\n', ''))
    assert league.League(c4).settings['baseline_share'] == 0


def bench_league(*args):
    """lab.bench_league as a user runs it."""
    return subprocess.run([sys.executable, '-m', 'lab.bench_league', *args], capture_output=True, text=True,
                          timeout=600)


def test_bench_league_steps_our_psro_beside_the_peers(tmp_path):
    """lab.bench_league runs our league one iteration per step and reports its curve; with
    --keep-league its league directory stays."""
    ours = ['--ours-steps', '2048', '--ours-envs', '64', '--ours-eval-games', '10',
            '--ours-flags', '--train.minibatch-size 512']
    kept = str(tmp_path / 'kept')
    done = bench_league('--game', 'kuhn', '--methods', 'cfr+,psro', '--budget', '2', *ours, '--keep-league', kept)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    progress = [line for line in done.stderr.splitlines() if line.startswith('psro: ')]
    assert progress and 'exploitability' in progress[-1]  # a long run says how far it is, on stderr
    rows = {line.split('|')[1].strip(): line for line in out.splitlines() if line.startswith('| psro |')
            or line.startswith('| cfr+ |')}
    assert set(rows) == {'psro', 'cfr+'}
    iterations = int(rows['psro'].split('|')[2])
    assert iterations >= 1  # responses trained (the untrained start is not counted)
    assert 0 <= float(rows['psro'].split('|')[3]) <= 2.5  # the referee's value, in Kuhn's range
    assert os.path.exists(os.path.join(kept, 'ledger.jsonl'))
    again = bench_league('--game', 'kuhn', '--methods', 'cfr+', '--keep-league', kept)
    assert again.returncode == 2 and 'exists already' in again.stderr  # never overwritten


def test_bench_league_takes_per_method_budgets_a_cpu_clock_and_writes_its_doc_block(tmp_path):
    doc = tmp_path / 'league.md'
    doc.write_text('intro\n<!-- bench_league kuhn:start -->\nold table\n<!-- bench_league kuhn:end -->\noutro\n')
    done = bench_league('--game', 'kuhn', '--methods', 'cfr+', '--budget', '0.6', '--budgets', 'cfr+=0.3',
                        '--clock', 'cpu', '--first-eval', '0.05', '--write-doc', str(doc), '--keep-league',
                        str(tmp_path / 'kept'))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'CPU seconds' in out and 'Shorter budgets' not in out  # one method: its budget is the longest
    written = doc.read_text()
    assert written.startswith('intro\n<!-- bench_league kuhn:start -->\nWritten by the command below')
    assert written.endswith('\n<!-- bench_league kuhn:end -->\noutro\n') and 'old table' not in written
    assert '--budgets cfr+=0.3' in written and out.strip().splitlines()[-1] in written
    assert '--keep-league' not in written and 'load average' not in written  # nothing only this machine knew
    missing = bench_league('--game', 'leduc', '--methods', 'cfr+', '--write-doc', str(doc))
    assert missing.returncode != 0 and 'needs one' in missing.stderr  # before any run: no block for leduc
    wrong = bench_league('--game', 'kuhn', '--methods', 'cfr+', '--budgets', 'psro=3')
    assert wrong.returncode == 2 and "'psro' is not one of the --methods" in wrong.stderr


def test_an_env_whose_rows_play_side_by_side_is_refused_before_any_file(tmp_path, capsys, monkeypatch):
    """puffer_drone has four agent rows per game, but they fly together: no seats, no opponent."""
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    assert cli.main(['league', 'puffer_drone']) == 2
    err = capsys.readouterr().err
    assert 'puffer_drone has 4 agent rows per game that play side by side, not seats' in err
    assert 'puffer_kuhn' in err and 'puffer_slimevolley' in err and 'Traceback' not in err
    assert not os.path.exists(tmp_path / 'leagues') or not os.listdir(tmp_path / 'leagues')


def test_steps_per_iteration_below_one_rollout_names_the_league_flag_before_any_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    assert cli.main(['league', 'puffer_slimevolley', '--league.steps-per-iteration', '20000']) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith('puffer league: error: league.steps_per_iteration=20,000 is less than one rollout')
    assert 'raise it to at least' in line and 'total_timesteps' not in line
    assert not os.path.exists(tmp_path / 'leagues') or not os.listdir(tmp_path / 'leagues')


def test_exact_oracle_converges_on_kuhn_with_a_per_seat_meta_strategy(tmp_path):
    """league.oracle = "exact": each response is the exact best response of each seat to the other seat's
    meta-strategy, fitted into the network; the ledger carries both seats' weights, each response's gain
    is the exploitability of the output before it, and on Kuhn the output gets near the equilibrium."""
    path = league.create('puffer_kuhn', ['--league.iterations', '8', '--league.oracle', 'exact',
                                         '--league.eval-games', '10'], root=str(tmp_path))
    league.League(path).run(printer=None)
    rows = [r for r in map(json.loads, open(os.path.join(path, 'ledger.jsonl'))) if r['type'] == 'iteration']
    assert [r['steps'] for r in rows] == [0] * 8  # no PPO
    for before, row in zip(rows, rows[1:]):
        assert len(row['meta_seat1']) == len(row['meta']) == len(row['population'])
        assert row['response_gain'] == pytest.approx(before['exploitability'], abs=0.01)
        assert row['distill_gap'] <= 0.01
    assert rows[-1]['exploitability'] < 0.05 < rows[1]['exploitability']


def test_exact_oracle_grows_the_seat_payoffs_it_already_has(tmp_path):
    """The per-seat meta-game's payoff matrix is kept and grown by the new policies' rows and columns: grown in
    steps it equals the matrix computed whole, and asking twice for one population solves it once."""
    from pufferlib.league.gametree import game_tree
    path = league.create('puffer_kuhn', ['--league.iterations', '5', '--league.oracle', 'exact',
                                         '--league.eval-games', '10'], root=str(tmp_path))
    league.League(path).run(printer=None)
    lg = league.League(path)
    lg.open()
    try:
        tables = lg.policy_tables()
        whole = game_tree('puffer_kuhn').seat_payoffs(tables, tables)
        lg.seat_payoff_matrix(tables[:2])
        np.testing.assert_allclose(lg.seat_payoff_matrix(tables[:3]), whole[:3, :3], atol=1e-12)
        np.testing.assert_allclose(lg.seat_payoff_matrix(tables), whole, atol=1e-12)
        first = lg.seat_meta(tables)
        assert lg.seat_meta(tables)[0] is first[0]
    finally:
        lg.close()


def test_exact_oracle_is_refused_where_there_is_no_game_tree(capsys):
    assert cli.main(['league', 'puffer_connect4', '--league.oracle', 'exact']) == 2
    err = capsys.readouterr().err
    assert 'exists for puffer_kuhn, puffer_leduc, not puffer_connect4; set --league.oracle ppo' in err
    assert cli.main(['league', 'puffer_kuhn', '--league.oracle', 'exact', '--league.meta-solver', 'alpharank']) == 2
    assert 'set --league.meta-solver nash, or --league.oracle ppo' in capsys.readouterr().err
    assert cli.main(['league', 'puffer_kuhn', '--league.oracle', 'best']) == 2
    assert "league.oracle must be ppo" in capsys.readouterr().err
