"""`puffer bench` and `puffer play` take env options as `puffer train` does (--env.KEY VALUE), with the
same checks and one-line errors, and still take the older KEY=VALUE form the docs show. Each case runs
the real entry point in a subprocess; they run side by side."""
import os
import subprocess
import sys

import pytest

PLAY = ['play', 'puffer_squared', '--steps', '2', '--fps', '0']
BENCH = ['bench', 'puffer_squared', '--seconds', '0.1']
GOOD = {
    'play --env.size 5': [*PLAY, '--env.size', '5'],
    'play --env.size=7': [*PLAY, '--env.size=7'],
    'play size=9 (older form)': [*PLAY, 'size=9'],
    'bench --env.size 5': [*BENCH, '--env.size', '5'],
    'bench size=5 (older form)': [*BENCH, 'size=5'],
    'bench --env.num-envs 2': [*BENCH, '--env.num-envs', '2'],
}
BAD = {
    'play out of range': ([*PLAY, '--env.size', '0'], r'puffer_squared: size=0 is outside \['),
    'play unknown key': ([*PLAY, '--env.sise', '5'], "unknown option 'sise'. Did you mean size?"),
    'play wrong type': ([*PLAY, '--env.size', '2.5'], r'env.size must be int \(like \d+\), got float 2.5'),
    'play another section': ([*PLAY, '--train.seed', '1'], 'takes env options .* not --train.seed'),
    'play num_envs': ([*PLAY, '--env.num-envs', '2'], 'shows one env instance'),
    'bench out of range': ([*BENCH, '--env.size', '0'], r'size=0 is outside \['),
    'bench unknown key': ([*BENCH, '--env.sise', '5'], "unknown option 'sise'"),
    'bench wrong type': ([*BENCH, '--env.size', 'big'], 'env.size must be int'),
    'bench missing value': ([*BENCH, '--env.size'], 'flag --env.size needs a value'),
    'bench two counts': ([*BENCH, '--env.num-envs', '2', '--num-envs', '3'], 'disagree; give one'),
}


@pytest.fixture(scope='module')
def answers():
    environ = {**os.environ, 'OMP_NUM_THREADS': '1'}
    cases = {**GOOD, **{name: argv for name, (argv, _) in BAD.items()}}
    procs = {name: subprocess.Popen([sys.executable, '-m', 'pufferlib.cli', *argv], env=environ, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name, argv in cases.items()}
    outputs = {name: proc.communicate(timeout=300) for name, proc in procs.items()}
    return {name: (procs[name].returncode, *outputs[name]) for name in cases}


def grid_width(stdout):
    """The width of the last frame `puffer play puffer_squared` drew (rows of . * @)."""
    rows = [line for line in stdout.splitlines() if line and set(line) <= set('.*@#')]
    return len(rows[-1])


@pytest.mark.parametrize('name', GOOD)
def test_env_options_reach_the_env(answers, name):
    code, out, err = answers[name]
    assert code == 0 and 'Traceback' not in err, err
    if name.startswith('play'):
        assert grid_width(out) == int(name.split('size')[1].strip(' =(').split()[0])
    else:
        assert 'M steps/s' in out


@pytest.mark.parametrize('name', BAD)
def test_bad_env_options_give_one_line_and_exit_2(answers, name):
    import re
    code, _, err = answers[name]
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and 'Traceback' not in err, err
    assert re.search(BAD[name][1], lines[0]), lines[0]
