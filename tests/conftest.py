import os

import psutil
import pytest

# How often the ray_cluster fixture tries to start its Ray.
START_ATTEMPTS = 3


def pytest_configure(config):
    # Gymnasium colours its warnings with ANSI codes for a terminal; pytest's warnings summary is text
    # (and often a CI log), where they print as raw escapes. Its logger looks `colorize` up at call time.
    import gymnasium.logger
    gymnasium.logger.colorize = lambda string, *args, **kwargs: string


def pytest_addoption(parser):
    parser.addoption('--runslow', action='store_true', default=False, help='also run tests marked slow')


def pytest_collection_modifyitems(config, items):
    if config.getoption('--runslow') or os.environ.get('PUFFER_SLOW') == '1':
        return
    skip = pytest.mark.skip(reason='slow: run with --runslow or PUFFER_SLOW=1')
    for item in items:
        if 'slow' in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def experiments(tmp_path, monkeypatch):
    """A fresh experiments folder for the test's runs, and wandb offline (it never reaches a server)."""
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path / 'experiments'))
    monkeypatch.setenv('WANDB_MODE', 'offline')
    monkeypatch.delenv('WANDB_API_KEY', raising=False)
    return tmp_path / 'experiments'


@pytest.fixture(scope='module')
def ray_cluster():
    """A real local Ray of 2 CPUs, shared by the tests of one module (the Ray vector backend in
    test_vector.py, the league's Ray tasks in test_league_ray.py) and shut down after them."""
    ray = pytest.importorskip('ray', reason='pip install -c constraints.txt -e ".[ray]"')
    # Ray's worker processes import the test envs by module name, so they need this folder on their path.
    path = os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), os.environ.get('PYTHONPATH', '')])
    # address='local': a Ray of this test run's own, never the cluster another program's `ray start` left
    # recorded in /tmp/ray/ray_current_cluster (Ray's default for no address).
    for attempt in range(1, START_ATTEMPTS + 1):
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        try:
            # A small object store: the tests pass kilobytes, and Ray's default (30% of the machine's
            # memory, in /dev/shm) is more than a sandboxed CI runner may have to spare.
            ray.init(address='local', num_cpus=2, include_dashboard=False, log_to_driver=False,
                     object_store_memory=200 * 2**20, runtime_env={'env_vars': {'PYTHONPATH': path}})
            break
        except Exception as e:
            # Ray waits a fixed 30 s for its raylet to register, which a busy machine can exceed:
            # stop what this attempt started (our own processes only) and try again.
            if 'timed out during startup' not in str(e) or attempt == START_ATTEMPTS:
                raise
            ray.shutdown()
            started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
            for proc in started:
                proc.kill()
            psutil.wait_procs(started, timeout=60)
    yield ray
    ray.shutdown()
