"""The compose baseline services run exactly the commands that scripts/baselines.py measured."""
import importlib.util
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = '${BASELINE_SEED:-0}'


@pytest.fixture(scope='module')
def baselines():
    spec = importlib.util.spec_from_file_location('baselines', os.path.join(ROOT, 'scripts', 'baselines.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def services():
    with open(os.path.join(ROOT, 'compose.yaml')) as f:
        return yaml.safe_load(f)['services']


def test_every_cpu_baseline_has_a_service_running_its_command(baselines, services):
    for env, (_metric, steps, flags, service) in baselines.BASELINES.items():
        assert service in services, f'{env}: no service {service!r} in compose.yaml'
        assert services[service].get('profiles') == ['baselines']
        command = services[service]['command']
        if env.startswith('puffer_'):  # the Ocean suite is one loop over `name:steps`
            script = command[-1].replace('$$', '$')
            name = env.removeprefix('puffer_')
            assert re.search(rf'(^|\s){name}:{steps}(;|\s|$)', script), f'{env}: budget {steps} not in {script}'
            assert f'--train.seed "{SEED}"' in script and '--train.log-interval 0.25' in script
        else:
            assert command == baselines.command(env, steps, flags, SEED), f'{service} differs from scripts/baselines.py'


def test_every_gpu_baseline_has_a_service(baselines, services):
    for env, (_metric, steps, flags, service, _) in baselines.GPU_BASELINES.items():
        assert services[service]['command'] == baselines.command(env, steps, flags, SEED, log_interval='5')


def test_cpu_override_covers_every_gpu_service():
    with open(os.path.join(ROOT, 'compose.yaml')) as f:
        gpu = re.findall(r'^  ([a-z0-9-]+):\n    <<: \[\*puffer, (?:\*build, )?\*gpu\]', f.read(), re.M)
    with open(os.path.join(ROOT, 'compose.cpu.yaml')) as f:
        reset = re.findall(r'^  ([a-z0-9-]+):\n    deploy: !reset \{\}', f.read(), re.M)
    assert gpu and set(gpu) == set(reset)
