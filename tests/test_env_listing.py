"""`puffer envs` tells the truth: every name with its family and whether it runs on this install, and a
name whose extra is missing fails `puffer train` with one line that says what to install. Run as
processes, with a package hidden (as if its extra were not installed) where a test needs one missing."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUJOCO_LINE = 'install the mujoco extra: pip install -c constraints.txt -e ".[mujoco]"'


def puffer(*args, hide=()):
    """`puffer ARGS` in a fresh interpreter, with the packages in `hide` made unimportable."""
    code = ('import sys\n'
            f'for name in {list(hide)!r}: sys.modules[name] = None\n'
            'from pufferlib.cli import main\n'
            f'sys.exit(main({list(args)!r}))\n')
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300, cwd=ROOT)


def rows(out):
    """name -> (family, runs here) from `puffer envs` output."""
    table = {}
    for line in out.stdout.splitlines():
        name, family, runs = line.split(maxsplit=2)
        table[name] = (family, runs)
    return table


def test_every_row_names_its_family_and_whether_it_runs():
    out = puffer('envs')
    assert out.returncode == 0, out.stderr
    table = rows(out)
    assert table['CartPole-v1'] == ('gymnasium', 'yes')
    assert table['classic_cartpole'] == ('classic_control', 'yes')
    assert table['puffer_squared'] == ('ocean', 'yes')
    assert table['atari_pong'][0] == 'atari' and table['mujoco_hopper'][0] == 'mujoco'
    # Retired Gymnasium ids are listed (Gymnasium registers them) and say why they cannot run.
    assert table['Walker2d-v2'][1].startswith('no: cannot run:') and 'gymnasium-robotics' in table['Walker2d-v2'][1]
    for runs in (runs for _, runs in table.values()):
        assert runs == 'yes' or runs.startswith('no: ')


def test_a_missing_extra_is_listed_with_its_install_line():
    out = puffer('envs', 'alker2d', hide=['mujoco'])
    assert out.returncode == 0, out.stderr
    table = rows(out)
    assert set(table) == {'mujoco_walker2d', 'Walker2d-v2', 'Walker2d-v3', 'Walker2d-v4', 'Walker2d-v5'}
    for name in ('mujoco_walker2d', 'Walker2d-v4', 'Walker2d-v5'):
        assert table[name][1] == f'no: needs mujoco: {MUJOCO_LINE} (in your pufferlib checkout)'
    out = puffer('envs', 'atari_pong', hide=['ale_py'])
    assert rows(out)['atari_pong'][1].startswith('no: needs ale_py: install the atari extra: pip install -c '
                                                 'constraints.txt -e ".[atari]"')
    out = puffer('envs', 'procgen_bigfish', hide=['procgen'])
    assert 'docker/envs/requirements-nodeps.txt' in rows(out)['procgen_bigfish'][1]  # the --no-deps step too


def test_runnable_lists_only_what_runs():
    out = puffer('envs', '--runnable', 'alker2d', hide=['mujoco'])
    assert out.returncode == 0 and out.stdout == '', out.stdout + out.stderr
    if importlib.util.find_spec('mujoco') is not None:
        out = puffer('envs', '--runnable', 'alker2d')
        assert set(rows(out)) == {'mujoco_walker2d', 'Walker2d-v4', 'Walker2d-v5'}
    everything, runnable = rows(puffer('envs')), rows(puffer('envs', '--runnable'))
    assert set(runnable) == {name for name, (_, runs) in everything.items() if runs == 'yes'}
    assert 'LunarLander-v3' not in runnable or importlib.util.find_spec('Box2D') is not None


@pytest.mark.parametrize('name, hidden, expect', [
    ('mujoco_hopper', 'mujoco', MUJOCO_LINE),
    ('Walker2d-v4', 'mujoco', MUJOCO_LINE),
    ('Walker2d-v2', None, 'Walker2d-v2 cannot run: The mujoco v2 and v3 based environments have been moved'),
    ('atari_pong', 'ale_py', 'atari_pong needs ale_py: install the atari extra: pip install -c constraints.txt -e '
                             '".[atari]"'),
    ('pettingzoo_leduc_holdem', 'rlcard', 'install the pettingzoo extra: pip install -c constraints.txt -e '
                                          '".[pettingzoo]"'),
    ('nethack', 'nle', 'install the nethack extra: pip install -c constraints.txt -e ".[nethack]" (in your pufferlib '
                       'checkout) && pip install -c constraints.txt --no-deps -r docker/envs/requirements-nodeps.txt'),
])
def test_train_on_an_env_that_cannot_run_is_one_line(name, hidden, expect):
    out = puffer('train', name, hide=[hidden] if hidden else [])
    assert out.returncode == 2, out.stdout + out.stderr
    assert 'Traceback' not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert expect in out.stderr


def test_per_game_requirements_are_checked():
    """A PettingZoo game needs only its own packages: the board games run without rlcard."""
    table = rows(puffer('envs', 'pettingzoo_', hide=['rlcard']))
    assert table['pettingzoo_tictactoe'][1] == 'yes' and table['pettingzoo_connect_four'][1] == 'yes'
    assert table['pettingzoo_leduc_holdem'][1].startswith('no: needs rlcard: install the pettingzoo extra')
