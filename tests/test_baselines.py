"""The compose baseline services run exactly the commands that scripts/lab/baselines.py measured."""
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = '${BASELINE_SEED:-0}'


@pytest.fixture(scope='module')
def baselines():
    """What `python -m lab.baselines --print-commands` says each baseline runs: {'cpu'/'gpu': [baseline]}."""
    done = subprocess.run([sys.executable, '-m', 'lab.baselines', '--print-commands'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = {'cpu': [], 'gpu': []}
    for line in done.stdout.splitlines():
        baseline = json.loads(line)
        printed['gpu' if baseline['gpu'] else 'cpu'].append(baseline)
    assert printed['cpu'] and printed['gpu']
    return printed


def _flag(command, name):
    return command[command.index(name) + 1]


@pytest.fixture(scope='module')
def services():
    with open(os.path.join(ROOT, 'compose.yaml')) as f:
        return yaml.safe_load(f)['services']


def test_every_cpu_baseline_has_a_service_running_its_command(baselines, services):
    for baseline in baselines['cpu']:
        env, steps, service = baseline['env'], baseline['steps'], baseline['service']
        assert service in services, f'{env}: no service {service!r} in compose.yaml'
        assert services[service].get('profiles') == ['baselines']
        command = services[service]['command']
        if env.startswith('puffer_'):  # the Ocean suite is one loop over `name:steps`
            script = command[-1].replace('$$', '$')
            name = env.removeprefix('puffer_')
            assert re.search(rf'(^|\s){name}:{steps}(;|\s|$)', script), f'{env}: budget {steps} not in {script}'
            assert f'--train.seed "{SEED}"' in script and '--train.log-interval 0.25' in script
        else:
            assert command == baseline['command'], f'{service} differs from scripts/lab/baselines.py'
            assert _flag(command, '--train.seed') == SEED


def test_every_gpu_baseline_has_a_service(baselines, services):
    for baseline in baselines['gpu']:
        assert _flag(baseline['command'], '--train.seed') == SEED
        assert _flag(baseline['command'], '--train.log-interval') == '5'
        assert services[baseline['service']]['command'] == baseline['command']


def test_cpu_override_covers_every_gpu_service():
    with open(os.path.join(ROOT, 'compose.yaml')) as f:
        gpu = re.findall(r'^  ([a-z0-9-]+):\n    <<: \[\*puffer, (?:\*build, )?\*gpu\]', f.read(), re.M)
    with open(os.path.join(ROOT, 'compose.cpu.yaml')) as f:
        reset = re.findall(r'^  ([a-z0-9-]+):\n    deploy: !reset \{\}', f.read(), re.M)
    assert gpu and set(gpu) == set(reset)


def test_rewriting_the_page_keeps_sections_other_scripts_wrote(tmp_path):
    """scripts/lab/baselines.py rewrites docs/baselines.md from its results files; a section another script keeps
    there between markers (scripts/lab/bench_magent2.py's) survives, once, where a fresh page would lose it."""
    (tmp_path / 'baselines').mkdir()
    kept = '## Someone else\n\n<!-- other:start -->\ntheir table\n<!-- other:end -->\n'
    spaced = ('## PBT\n\n<!-- bench_pbt puffer_squared:start -->\nits table\n<!-- bench_pbt puffer_squared:end -->\n'
              '\nWhat it says, written by hand.\n')
    (tmp_path / 'baselines.md').write_text('# old page\n\n' + kept + '\n' + spaced)
    for _ in range(2):
        done = subprocess.run([sys.executable, '-m', 'lab.baselines', '--replot', '--docs',
                               str(tmp_path)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    page = (tmp_path / 'baselines.md').read_text()
    assert '# old page' not in page and '## GPU baselines' in page
    assert page.count(kept) == 1 and page.count(spaced) == 1
