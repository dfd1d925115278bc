"""Flags for the smallest real training run the tests use: 2 x 32 rows, 16-step segments, so one epoch
is 1,024 steps in 4 minibatches of 256; no log rows."""
SMALL = ['--env.num-envs', '32', '--vec.num-envs', '2', '--vec.num-workers', '2', '--vec.batch-size', '1',
         '--train.bptt-horizon', '16', '--train.minibatch-size', '256', '--train.log-interval', '0']


def train_small(env, *flags, steps=4096):
    """A SMALL run of `env` for `steps` steps through the training job; returns its summary."""
    from pufferlib import config as configuration
    from pufferlib import train as training
    config = configuration.load(env, [*SMALL, '--train.total-timesteps', str(steps), *flags])
    return training.train(env, config=config, quiet=True)


def train_briefly(env, *flags, steps):
    """A short run of a third-party env through the training job (its vec settings in `flags`: no Ocean env
    count); asserts it trained and saved a checkpoint, returns its summary."""
    from pufferlib import config as configuration
    from pufferlib import train as training
    config = configuration.load(env, ['--train.total-timesteps', str(steps), '--train.log-interval', '0', *flags])
    summary = training.train(env, config=config, quiet=True)
    assert summary['global_step'] >= steps and summary['checkpoint']
    return summary


def assert_missing_extra_is_one_line(monkeypatch, module, extra, env):
    """Making `env` without its package (`module` hidden) raises one ImportError naming the extra to install."""
    import re
    import sys

    import pytest

    import pufferlib
    monkeypatch.setitem(sys.modules, module, None)
    expected = f'install the {extra} extra: pip install -c constraints.txt -e ".[{extra}'
    with pytest.raises(ImportError, match=re.escape(expected)):
        pufferlib.make(env)
