"""The `puffer` command line answers every user mistake with one line, exit status 2, no traceback.

Each row runs the real entry point (`python -m pufferlib.cli`) in a subprocess; the rows run
concurrently so the table stays quick.
"""
import json
import os
import subprocess
import sys

import pytest

BAD_INPUTS = [
    (['trian'], 'invalid choice'),
    (['train'], 'needs an environment name'),
    (['train', 'puffer_pongg'], 'unknown environment'),
    (['train', 'puffer_pong', '--train.learning-rate', 'abc'], 'learning_rate must be float'),
    (['train', 'puffer_pong', '--train.lerning-rate', '0.1'], 'unknown key train.lerning_rate'),
    (['train', 'puffer_pong', 'extra'], 'unexpected argument'),
    (['train', 'puffer_pong', '--env.max-score', '0'], r'max_score=0 is outside \[1, 1000\]'),
    (['train', 'puffer_pong', '--env.max-score', '2.5'], 'max_score must be int'),
    (['train', 'puffer_pong', '--env.max-scor', '3'], "unknown option 'max_scor'"),
    (['train', 'puffer_rware', '--env.robots', '200'], 'robots must fit on the highway cells.*use fewer robots'),
    (['train', 'CartPole-v1', '--env.foo', '3', '--vec.backend', 'Serial'], "takes no option 'foo'"),
    # Gymnasium lists envs whose package is missing here (Box2D): one line naming it, not Gymnasium's traceback.
    (['train', 'LunarLander-v3', '--vec.backend', 'Serial'], 'LunarLander-v3 needs a package that is not installed'),
    (['train', 'puffer_pong', '--vec.num-envs', '3', '--vec.num-workers', '2'], 'must be divisible'),
    (['train', 'puffer_pong', '--config', '/nonexistent/x.toml'], 'does not exist'),
    (['train', '--resume', 'no-such-run'], 'is not a run directory'),
    (['eval', 'puffer_pong', '--checkpoint', '/nonexistent/epoch.pt'], 'does not exist'),
    (['eval', 'puffer_pong', '--checkpoint', 'latest'], 'no runs of puffer_pong'),
    (['plot', '/nonexistent/run'], 'has no metrics.jsonl'),
    (['bench', 'puffer_pong', 'max_score=0'], 'max_score=0 is outside'),
    (['bench', 'puffer_pong', 'max_score'], 'options are KEY=VALUE'),
    (['play', 'puffer_maze', '--scripted'], 'no scripted agent for puffer_maze'),
    (['play', 'puffer_pong', '--scripted', 'nope'], "no scripted agent 'nope'"),
    (['autotune', 'nosuchenv'], 'unknown environment'),
    (['pbt', 'puffer_bandit', '--pbt.population', '1'], r'--pbt.population 1: must be at least 2'),
    (['pbt', 'puffer_bandit', '--pbt.fraction', '0.75'], r'--pbt.fraction 0.75: must be in \(0, 0.5\]'),
    (['pbt', 'puffer_bandit', '--pbt.metric', 'env/scroe'], 'puffer_bandit logs no such statistic; it logs env/'),
    (['envs', 'a', 'b'], 'unrecognized arguments'),
    # Numbers no run can train with: refused before any env starts.
    (['train', 'puffer_pong', '--train.learning-rate', 'nan'], 'train.learning_rate must be a finite number'),
    (['train', 'puffer_pong', '--train.learning-rate', 'inf'], 'train.learning_rate must be a finite number'),
    (['train', 'puffer_pong', '--train.learning-rate', '1e400'], 'train.learning_rate must be a finite number'),
    (['train', 'puffer_pong', '--train.seed', '-1'], r'train.seed must be in \[0, 2\*\*32\)'),
    (['train', 'puffer_pong', '--policy.hidden-size', '-5'], 'policy.hidden_size must be positive'),
    (['train', 'puffer_pong', '--rnn.hidden-size', '0'], 'rnn.hidden_size must be positive'),
    (['train', 'puffer_pong', '--train.vtrace-rho-clip', '-1'], 'train.vtrace_rho_clip must be positive'),
    (['train', 'puffer_pong', '--train.clip-coef', '-0.1'], r'train.clip_coef must be >= 0'),
    (['train', 'puffer_pong', '--train.max-grad-norm', '-1'], 'train.max_grad_norm must be positive'),
    (['train', 'puffer_pong', '--train.ent-coef', '-0.01'], r'train.ent_coef must be >= 0'),
    (['train', 'puffer_pong', '--train.prio-alpha', '-1'], r'train.prio_alpha must be >= 0'),
    (['train', 'puffer_pong', '--train.total-timesteps', '100'], 'is less than one epoch'),
    # A config flag's value is never taken as the env name.
    (['train', '--resume', 'latest', '--train.total-timesteps', '819200'], '"latest": no runs in'),
    (['eval', 'puffer_pong', '--checkpoint', '/nonexistent/e.pt', '--episodes', '0'], 'episodes must be a positive'),
    (['eval', 'puffer_pong', '--checkpoint', '/nonexistent/e.pt', '--max-steps', '0'], 'max_steps must be a positive'),
    (['eval', 'puffer_pong', '--checkpoint', '/nonexistent/e.pt', '--fps', '0'], 'fps must be a positive'),
    # Numbers the Ocean commands cannot use: argparse's line, not a traceback or a silent no-op.
    (['web', 'puffer_pong', '--serve', '99999'], '--serve: 99999 is not between 0 and 65535'),
    (['play', 'puffer_pong', '--steps', '0'], '--steps: 0 is not at least 1'),
    (['play', 'puffer_pong', '--fps', '-1'], '--fps: -1 is not at least 0'),
    (['play', 'puffer_pong', '--fps', 'nan'], '--fps: nan is not at least 0'),
    (['bench', 'puffer_pong', '--seconds', '0'], '--seconds: 0 is not at least 0.01'),
    (['autotune', 'puffer_pong', '--max-envs', '0'], '--max-envs: 0 is not at least 1'),
]


@pytest.fixture(scope='module')
def answers(tmp_path_factory):
    experiments = tmp_path_factory.mktemp('experiments')
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments), 'OMP_NUM_THREADS': '1'}
    procs = [subprocess.Popen([sys.executable, '-m', 'pufferlib.cli', *args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for args, _ in BAD_INPUTS]
    out = {}
    for (args, _), proc in zip(BAD_INPUTS, procs):
        stdout, stderr = proc.communicate(timeout=240)
        out[' '.join(args)] = (proc.returncode, stdout, stderr)
    return out


@pytest.mark.parametrize('args, match', BAD_INPUTS, ids=[' '.join(a) for a, _ in BAD_INPUTS])
def test_bad_input_gives_one_line_and_exit_2(answers, args, match):
    import re
    code, stdout, stderr = answers[' '.join(args)]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert 'Traceback' not in stderr, stderr
    assert code == 2, (code, stderr)
    assert len(lines) == 1, stderr
    assert lines[0].startswith('puffer'), lines[0]
    assert re.search(match, lines[0]), lines[0]


def puffer(*args, **env):
    return subprocess.run([sys.executable, '-m', 'pufferlib.cli', *args], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=240)


def test_experiments_folder_that_is_a_file_is_one_error(tmp_path):
    path = tmp_path / 'not-a-folder'
    path.write_text('')
    out = puffer('train', 'puffer_squared', '--train.total-timesteps', '100000000', PUFFER_EXPERIMENTS=str(path))
    assert out.returncode == 2 and 'Traceback' not in out.stderr, out.stderr
    assert f'PUFFER_EXPERIMENTS is {path}, which is a file' in out.stderr


def test_env_precheck_reads_env_flags(tmp_path):
    """The check that an env can be made before training sees --env.* flags: a given ROM is read
    (here it is too short, so the error is about its contents, not a missing file)."""
    rom = tmp_path / 'red.gb'
    rom.write_bytes(b'not a rom')
    out = puffer('train', 'pokemon_red', '--env.rom-path', str(rom), PUFFER_EXPERIMENTS=str(tmp_path))
    assert out.returncode == 2 and 'Traceback' not in out.stderr, out.stderr
    assert f"'{rom}' is not a Game Boy ROM" in out.stderr and 'missing' not in out.stderr


def test_plot_skips_a_cut_last_line_and_refuses_a_missing_out_folder(tmp_path):
    run = tmp_path / 'run'
    run.mkdir()
    rows = [{'global_step': 1024 * k, 'env/episode_return': float(k)} for k in range(1, 4)]
    (run / 'metrics.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows) + '{"global_step": 40')
    out = puffer('plot', str(run), '--out', str(tmp_path / 'curve.png'))
    assert out.returncode == 0, out.stderr
    assert 'skipped line 4' in out.stderr and (tmp_path / 'curve.png').stat().st_size > 0
    out = puffer('plot', str(run), '--out', str(tmp_path / 'missing' / 'curve.png'))
    assert out.returncode == 2 and 'Traceback' not in out.stderr, out.stderr
    assert f'the folder {tmp_path / "missing"} does not exist' in out.stderr


def test_huge_env_buffers_are_refused_before_allocating():
    import pufferlib
    with pytest.raises(pufferlib.APIUsageError, match=r'GiB for the observation and action buffers'):
        pufferlib.make('puffer_squared', num_envs=10**9)
