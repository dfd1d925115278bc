"""The `puffer` command line answers every user mistake with one line, exit status 2, no traceback.

Each row runs the real entry point (`python -m pufferlib.cli`) in a subprocess; the rows run
concurrently so the table stays quick.
"""
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
    (['envs', 'a', 'b'], 'unrecognized arguments'),
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
