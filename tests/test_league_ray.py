"""`puffer league --league.backend ray`: responses and evaluation matches as tasks on a real local Ray
(the ray_cluster fixture, tests/conftest.py), the league directory written by the driver as with the
local backend, the same match results on both backends, and one clear error for a task that raises,
a worker that dies and an address where no cluster answers, with nothing in the league lost."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import psutil
import pytest

import pufferlib
from pufferlib import cli, cluster, league
from pufferlib.arena import LeagueError

pytest.importorskip('ray')
pytest.importorskip('scipy')
pytest.importorskip('openskill')
pytest.importorskip('pyspiel')

# A league small enough for a unit test (as in test_league_loop.py), with PPO responses: those are the
# tasks Ray runs (the poker configs' exact oracle computes its responses in the driver).
TINY = ['--league.steps-per-iteration', '2048', '--league.num-envs', '64', '--league.eval-games', '20',
        '--train.bptt-horizon', '16', '--train.minibatch-size', '512', '--policy.hidden-size', '16',
        '--league.oracle', 'ppo']
RAY = ['--league.backend', 'ray']


def iterations(path):
    with open(os.path.join(path, 'ledger.jsonl')) as f:
        return [r for r in map(json.loads, f) if r['type'] == 'iteration']


def files(path):
    return sorted(os.path.relpath(os.path.join(root, name), path)
                  for root, _, names in os.walk(path) for name in names)


def our_ray_workers(title):
    """(raylet, process) for each Ray worker titled `title` (a task's name) of the Ray this process is
    connected to (the fixture's): its raylet is the one started with this node's id, and the raylet
    starts the workers. Ray workers of other programs on the machine, even of a Ray our own child
    process started, are never listed."""
    import ray
    node = f'--node_id={ray.get_runtime_context().get_node_id()}'
    found = []
    for raylet in psutil.Process().children(recursive=True):
        try:
            if raylet.name() != 'raylet' or node not in raylet.cmdline():
                continue
            for proc in raylet.children(recursive=True):
                if (proc.cmdline() or [''])[0].startswith(title):
                    found.append((raylet, proc))
        except psutil.NoSuchProcess:  # ended while we looked
            continue
    return found


# First in this file: the address is only checked while no Ray runs in this process (the fixture's
# instance would be used as it is).
def test_an_unreachable_ray_address_is_one_clear_error(tmp_path, monkeypatch, capsys):
    import ray
    if ray.is_initialized():
        pytest.skip('a Ray instance is already running in this process')
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    started = time.monotonic()
    assert cli.main(['league', 'puffer_kuhn', *RAY, '--league.ray-address', '127.0.0.1:1', *TINY]) == 2
    err = capsys.readouterr().err
    assert 'no Ray cluster answers at 127.0.0.1:1' in err and 'Traceback' not in err
    monkeypatch.setenv('RAY_ADDRESS', '127.0.0.1:1')
    assert cli.main(['league', 'puffer_kuhn', *RAY, *TINY]) == 2
    assert 'league.backend = "ray": no Ray cluster answers at 127.0.0.1:1' in capsys.readouterr().err
    assert time.monotonic() - started < 60  # not Ray's own minute of retries per attempt
    assert not os.path.exists(os.path.join(tmp_path, 'leagues')) or not os.listdir(os.path.join(tmp_path, 'leagues'))
    with pytest.raises(cluster.ClusterError, match='not a Ray address'):
        cluster.check('head:port')
    with pytest.raises(pufferlib.APIUsageError, match='local Ray only'):
        cluster.check('127.0.0.1:1', num_cpus=2)
    assert not ray.is_initialized()


@pytest.mark.slow
def test_a_local_ray_is_our_own_even_where_ray_start_recorded_another_cluster():
    """`ray start --head` anywhere on the machine records its cluster in <ray temp dir>/ray_current_cluster,
    and Ray's ray.init() with no address joins it: another user's or another test suite's cluster,
    stopped under us when they stop it. With no address given, cluster.connect starts a Ray of its own."""
    short = tempfile.mkdtemp(prefix='puffer-ray-', dir='/tmp')  # Ray's socket paths must stay short
    try:
        os.makedirs(os.path.join(short, 'ray'))
        with open(os.path.join(short, 'ray', 'ray_current_cluster'), 'w') as f:
            f.write('127.0.0.1:1')  # the cluster a `ray start` left recorded, gone since
        code = ('import ray; from pufferlib import cluster; _, started = cluster.connect(num_cpus=1); '
                'print(started, ray.get_runtime_context().gcs_address, flush=True); ray.shutdown()')
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300,
                             env={**os.environ, 'RAY_TMPDIR': short, 'RAY_ADDRESS': ''})
        assert out.returncode == 0, out.stderr
        started, gcs_address = out.stdout.split()
        assert started == 'True' and gcs_address != '127.0.0.1:1'
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_a_psro_league_on_ray_writes_what_the_local_one_writes(ray_cluster, tmp_path):
    """Two PSRO iterations on Kuhn through Ray tasks: the same files, ledger fields and payoff table as
    the local backend with the same seed, to the last bit (every task reseeds what it draws from)."""
    flags = ['--league.iterations', '2', *TINY]
    local = league.create('puffer_kuhn', flags, root=str(tmp_path / 'local'))
    league.League(local).run(printer=None)
    remote = league.create('puffer_kuhn', [*flags, *RAY], root=str(tmp_path / 'ray'))
    league.League(remote).run(printer=None)
    assert files(remote) == files(local) == sorted(['league.toml', 'ledger.jsonl', 'payoffs.json', 'leaderboard.txt',
                                                    'policies/p000.pt', 'policies/p001.pt'])
    ours, theirs = iterations(remote), iterations(local)
    assert [r['iteration'] for r in ours] == [0, 1]
    assert [sorted(r) for r in ours] == [sorted(r) for r in theirs]
    table = league.PayoffTable.from_dict(json.load(open(os.path.join(remote, 'payoffs.json'))))
    assert table.names == ['p000', 'p001'] and table.matrix().shape == (2, 2) and np.isfinite(table.matrix()).all()
    assert (table.games() >= 20).all()
    reference = league.PayoffTable.from_dict(json.load(open(os.path.join(local, 'payoffs.json'))))
    np.testing.assert_array_equal(table.games(), reference.games())
    np.testing.assert_array_equal(table.matrix(), reference.matrix())
    assert ours[1]['steps'] == theirs[1]['steps'] and ours[1]['meta'] == theirs[1]['meta']
    assert ours[1]['ratings'] == theirs[1]['ratings']


def test_a_warm_started_response_gets_the_same_initial_weights_on_ray(ray_cluster, tmp_path):
    """league.response_init = "features" on Ray: the driver makes the start (the latest response's features,
    a fresh action head) and it travels with the task. With a learning rate that leaves every weight where
    it started, the Ray worker's p002 is p001's encoder and value head with a new head, and bit for bit the
    local backend's p002."""
    import torch
    flags = ['--league.iterations', '3', '--league.response-init', 'features', '--train.learning-rate', '1e-30',
             '--league.response-rounds', '1', *TINY]
    local = league.create('puffer_kuhn', flags, root=str(tmp_path / 'local'))
    league.League(local).run(printer=None)
    remote = league.create('puffer_kuhn', [*flags, *RAY], root=str(tmp_path / 'ray'))
    league.League(remote).run(printer=None)

    def saved(path, name):
        return torch.load(os.path.join(path, 'policies', f'{name}.pt'), weights_only=True)['policy']
    there, here, latest = saved(remote, 'p002'), saved(local, 'p002'), saved(remote, 'p001')
    assert sorted(there) == sorted(latest) and any(key.startswith('actor.') for key in there)
    for key, value in there.items():
        assert torch.equal(value, here[key]), key
        kept = torch.allclose(value, latest[key], rtol=0, atol=1e-20)
        assert kept == (not key.startswith('actor.') or key.endswith('bias')), key  # biases start at 0 in both


@pytest.mark.slow  # the test above checks the same on Kuhn's league; this one adds sampled payoffs (Connect4)
@pytest.mark.parametrize('env', ['puffer_kuhn', 'puffer_connect4'])
def test_a_match_between_two_fixed_policies_gives_the_same_results_on_both_backends(ray_cluster, tmp_path, env):
    """Sampled match results (connect4 has no exact payoffs) of the same pair and seed: the local backend's
    arena, already used by another match, and a Ray worker's fresh arena agree game for game."""
    import torch
    path = league.create(env, ['--league.iterations', '2', *TINY], root=str(tmp_path))
    driver = league.League(path)
    arena = driver.open_env(env, driver.config, 1)
    networks = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        networks.append(driver.new_network(arena))
    arena.close()

    def matches(backend):
        a, b = backend.share('a', networks[0]), backend.share('b', networks[1])
        tasks = [league.Task(f'match {x} vs {y}', league.match_task, (env, driver.config, seed, p, q),
                             league.eval_envs(driver.settings))
                 for seed, (x, p, y, q) in [(7, ('b', b, 'a', a)), (5, ('a', a, 'b', b)), (6, ('a', a, 'a', a))]]
        return backend.run(1, tasks)

    local = league.TaskRunner(league.LocalBackend(), env, driver.config, path)
    try:
        here = matches(local)
    finally:
        local.close()
    remote = league.TaskRunner(league.open_backend({**driver.settings, 'backend': 'ray'}), env, driver.config, path)
    there = matches(remote)
    remote.close()
    assert ray_cluster.is_initialized()  # the fixture's Ray is used, not shut down
    for ours, theirs in zip(here, there):
        assert set(ours) == {'games', 'score', 'wins', 'draws'}
        for key in ours:
            np.testing.assert_array_equal(ours[key], theirs[key])
    assert all(result['games'][0] >= 20 for result in here)


def test_a_ray_task_that_raises_is_one_clear_error_and_loses_nothing(ray_cluster, tmp_path, capsys):
    """A response whose training diverges (a learning rate of 1e30) raises in its Ray worker: the driver
    reports the task and the iteration; the first iteration and its policy stay as they were."""
    path = league.create('puffer_kuhn', ['--league.iterations', '3', '--train.learning-rate', '1e30', *TINY, *RAY],
                         root=str(tmp_path))
    with pytest.raises(LeagueError, match=r"league iteration 1: the Ray task 'response p001' failed "
                                          r"\(NonFiniteError: .*Nothing in .* was lost.*--resume"):
        league.League(path).run(printer=None)
    assert [r['iteration'] for r in iterations(path)] == [0]
    ledger = open(os.path.join(path, 'ledger.jsonl'), 'rb').read()
    assert os.listdir(os.path.join(path, 'policies')) == ['p000.pt']
    assert cli.main(['league', '--resume', path, '--quiet']) == 2
    err = capsys.readouterr().err
    assert "the Ray task 'response p001' failed" in err and 'Traceback' not in err
    assert open(os.path.join(path, 'ledger.jsonl'), 'rb').read().startswith(ledger)
    assert [r['iteration'] for r in iterations(path)] == [0]
    # where the tasks run may change on resume; what they compute may not
    assert league.League(path, ['--league.backend', 'local']).settings['backend'] == 'local'
    with pytest.raises(LeagueError, match='keeps its config'):
        league.League(path, ['--train.learning-rate', '0.01'])


# Another program's Ray on the same machine (another test suite, another user), running a task that
# has the same name as the league's: the killed-worker test must leave it alone.
BYSTANDER = textwrap.dedent('''
    import os, sys, time, ray
    ray.init(address='local', num_cpus=1, include_dashboard=False, log_to_driver=False)

    @ray.remote
    def response_task(path):
        with open(path + '.tmp', 'w') as f:
            f.write(str(os.getpid()))
        os.replace(path + '.tmp', path)
        time.sleep(3600)

    task = response_task.remote(sys.argv[1])
    sys.stdin.read()
    ray.shutdown()
''')


@pytest.mark.slow
def test_a_killed_ray_worker_is_one_clear_error_and_resume_continues(ray_cluster, tmp_path):
    """SIGKILL the Ray worker while it trains a response: the driver names the task and iteration, keeps
    the finished iterations, and `--resume` (on Ray again) completes the league. A worker of the same
    name in another program's Ray is not touched."""
    pid_file = tmp_path / 'bystander.pid'
    bystander = subprocess.Popen([sys.executable, '-c', BYSTANDER, str(pid_file)], stdin=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not pid_file.exists():
            assert bystander.poll() is None and time.monotonic() < deadline, 'the bystander Ray did not start'
            time.sleep(0.1)
        other = psutil.Process(int(pid_file.read_text()))
        assert other.cmdline()[0].startswith('ray::response_task')
        kill_a_response_worker_and_resume(tmp_path)
        assert other.is_running() and other.status() != psutil.STATUS_ZOMBIE
    finally:
        bystander.communicate('', timeout=120)


def kill_a_response_worker_and_resume(tmp_path):
    flags = ['--league.iterations', '3', '--league.steps-per-iteration', '30000', '--league.response-rounds', '1',
             *TINY[2:], *RAY]
    path = league.create('puffer_kuhn', flags, root=str(tmp_path))
    errors = []

    def drive():
        try:
            league.League(path).run(printer=None)
        except Exception as e:  # the error is checked below, in the test's thread
            errors.append(e)

    driver = threading.Thread(target=drive)
    driver.start()
    killed, deadline = None, time.monotonic() + 300
    while killed is None and driver.is_alive() and time.monotonic() < deadline:
        for raylet, proc in our_ray_workers('ray::response_task'):
            try:
                ancestors = [p.pid for p in proc.parents()]
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:  # the task ended first: wait for the next one
                continue
            killed, owner = proc.pid, raylet
            break
        time.sleep(0.05)
    driver.join(300)
    assert killed is not None and not driver.is_alive()
    # the worker killed belonged to the Ray this test process started (the fixture's), nobody else's
    assert os.getpid() in ancestors and owner.pid in ancestors
    assert len(errors) == 1 and isinstance(errors[0], LeagueError), errors
    assert "the Ray task 'response p001' failed" in str(errors[0]) and 'league iteration 1' in str(errors[0])
    assert [r['iteration'] for r in iterations(path)] == [0]
    summary = league.League(path).run(printer=None)
    assert summary['iterations'] == 3
    rows = iterations(path)
    assert [r['iteration'] for r in rows] == [0, 1, 2] and rows[-1]['population'] == ['p000', 'p001', 'p002']
    assert league.PayoffTable.from_dict(rows[-1]['payoffs']).matrix().shape == (3, 3)


def fails():
    raise ValueError('this task fails at once')


def naps(seconds, started=None):
    if started:  # a file that says the task is running (not still being dispatched to a worker)
        open(started, 'w').close()
    time.sleep(seconds)
    return seconds


def test_a_failed_task_leaves_the_queued_ones_running_and_the_driver_alive(ray_cluster, tmp_path):
    """One task of a batch fails while others wait for a CPU: one LeagueError, and the others are left to
    finish. Cancelling them, as the league once did, meets the dispatch of the next one (the failed task
    has just freed its CPU) and aborted this test process now and then (Ray 2.60: "Tried to complete task
    that was not pending", the driver gone with status 1 and nothing printed). Repeated to give that
    race its chances."""
    path = league.create('puffer_kuhn', [*TINY, *RAY], root=str(tmp_path))
    backend = league.TaskRunner(league.open_backend(league.League(path).settings), 'puffer_kuhn', {}, path)
    queued = [league.Task(f'naps {k}', naps, (0.05,), None) for k in range(3)]
    for _ in range(10):
        with pytest.raises(LeagueError, match=r"the Ray task 'fails' failed \(ValueError: this task fails at once"):
            backend.run(1, [league.Task('fails', fails, (), None), *queued])
    assert backend.run(1, queued) == [0.05] * 3
    backend.close()
    assert ray_cluster.is_initialized()  # the fixture's Ray, not the backend's to shut down


def test_cancel_unfinished_stops_running_tasks_and_keeps_finished_results(ray_cluster, tmp_path):
    """cluster.cancel_unfinished (the sweep's stop): a running task is cancelled; a finished one keeps its
    result and is never cancelled, which can also abort Ray 2.60's driver."""
    ray = ray_cluster
    started = tmp_path / 'started'
    done = ray.remote(max_retries=0)(fails).remote()
    running = ray.remote(max_retries=0)(naps).remote(600, str(started))
    with pytest.raises(ray.exceptions.RayTaskError, match='this task fails at once'):
        ray.get(done)
    # Cancelled only once it runs: on a busy machine a worker can take many seconds to start, and a cancel
    # that crosses the task's dispatch to it is lost (cluster.cancel_unfinished's docstring), as the sweep
    # avoids by cancelling only trials that have run a while.
    deadline = time.monotonic() + 300
    while not started.exists():
        assert time.monotonic() < deadline, 'the napping task did not start within 300 s'
        time.sleep(0.1)
    cluster.cancel_unfinished(ray, [done, running])
    with pytest.raises(ray.exceptions.RayTaskError, match='this task fails at once'):
        ray.get(done)  # still its own error, not a cancellation
    with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
        ray.get(running, timeout=120)
    cluster.cancel_unfinished(ray, [])
