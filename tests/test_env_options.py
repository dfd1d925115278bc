"""Every declared option of every third-party family (pufferlib.environments.OPTIONS) is checked against
its meaning before any env is built: a value outside its range, or of the wrong kind, is one APIUsageError
naming the option, the value and what it must be. The check runs before the family's packages are looked
for, so it holds for every family, installed here or not."""
import math
import os
import subprocess
import sys

import pytest

import pufferlib
from pufferlib import environments, registry

CASES = [(family, key, spec) for family, options in environments.OPTIONS.items() for key, spec in options.items()]


def bad_values(spec):
    """Values with no meaning for `spec`: past each bound, and one of the wrong kind."""
    if spec.kind == 'bool':
        return ['yes']
    values = ['many']
    step = 1 if spec.kind == 'int' else 0.5
    if spec.low is not None:
        values.append(spec.low if spec.low_open else spec.low - step)
    if spec.high is not None:
        values.append(spec.high + step)
    if spec.kind == 'float':
        values.append(math.nan)
    return values


def test_every_family_declares_its_options():
    assert set(environments.OPTIONS) == set(environments.FAMILIES)
    assert registry.lookup('mujoco_hopper').option_ranges()['frame_skip'].low == 1


@pytest.mark.parametrize('family, key, spec', CASES, ids=[f'{f}.{k}' for f, k, _ in CASES])
def test_out_of_range_option_is_refused_naming_it(family, key, spec):
    name = environments.module(family).env_names()[0]
    for value in bad_values(spec):
        with pytest.raises(pufferlib.APIUsageError) as info:
            registry.make(name, **{key: value})
        message = str(info.value)
        assert f'{name}: {key} must be' in message and repr(value) in message, message
        wrong_kind = isinstance(value, str) or value != value  # a word, or nan
        expected = {'int': 'an int', 'float': 'a number', 'bool': 'true or false'}[spec.kind] if wrong_kind \
            else spec.describe()
        assert f'must be {expected} (' in message, message


def test_values_in_range_pass_the_check():
    for family, key, spec in CASES:
        good = True if spec.kind == 'bool' else spec.low + (1 if spec.low_open else 0) if spec.low is not None \
            else spec.high
        environments.check_options(family, 'x', {key: good})
    environments.check_options('mujoco', 'x', {'max_episode_steps': None, 'xml_file': 'a.xml'})  # not declared


@pytest.mark.parametrize('value, exit_line', [
    ('-1', 'mujoco_hopper: frame_skip must be >= 1 (the physics steps per action), got -1'),
    ('0', 'mujoco_hopper: frame_skip must be >= 1 (the physics steps per action), got 0'),
])
def test_mujoco_frame_skip_through_the_cli(value, exit_line, tmp_path):
    """frame_skip -1 trained a frozen simulation and 0 was a ZeroDivisionError; now both are one line."""
    if environments.missing('mujoco', 'mujoco_hopper'):
        pytest.skip(environments.missing('mujoco', 'mujoco_hopper'))
    proc = subprocess.run([sys.executable, '-m', 'pufferlib.cli', 'train', 'mujoco_hopper', '--env.frame_skip', value],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, 'OMP_NUM_THREADS': '1'}, cwd=tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].endswith(exit_line), lines[0]
    assert not any(tmp_path.iterdir()), 'refused before any run directory is made'
