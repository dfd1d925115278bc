"""The memory a run needs, estimated before anything is allocated (pufferlib.train.check_memory): the env
buffers of the vector env (pufferlib.vector.footprint) and the trainer's rollout buffers
(pufferlib.trainer.rollout_bytes), each checked against what the real objects allocate."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import pufferlib.vector
from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.models import make_policy
from pufferlib.trainer import Trainer, rollout_bytes

from small_run import SMALL

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')

pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path


def _buffers_nbytes(vecenv):
    return sum(array.nbytes for array in vars(vecenv.buffers).values())


@pytest.mark.parametrize('env, flags', [
    ('puffer_squared', []),
    ('puffer_squared', ['--vec.backend', 'Serial']),
    ('puffer_connect4', ['--env.num-envs', '8']),            # two seats per game, action masks
    ('CartPole-v1', ['--vec.num-envs', '4', '--vec.backend', 'Serial']),  # an env without num_envs
])
def test_the_estimate_is_what_the_vector_env_and_the_trainer_allocate(env, flags):
    config = configuration.load(env, [*SMALL, *flags] if env.startswith('puffer_squared') else flags)
    footprint = pufferlib.vector.footprint(env, config['vec'], config['env'])
    with pufferlib.vector.from_config(env, config['vec'], env_kwargs=config['env']) as vecenv:
        assert footprint.rows == vecenv.num_agents
        assert footprint.mask_width == vecenv.action_mask_width
        assert footprint.buffer_bytes == _buffers_nbytes(vecenv)
        config['train']['minibatch_size'] = config['train']['bptt_horizon']
        config['train']['total_timesteps'] = vecenv.num_agents * config['train']['bptt_horizon']
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        tensors = [trainer.obs, trainer.actions, trainer.logprobs, trainer.values, trainer.rewards, trainer.dones,
                   trainer.masks, trainer.ratio, trainer.last_values, trainer.advantages()]
        tensors += [trainer.action_masks] if trainer.action_masks is not None else []
        allocated = sum(t.numel() * t.element_size() for t in tensors) + trainer.step_of_row.nbytes
        assert rollout_bytes(footprint.rows, trainer.horizon, footprint.observation_space, footprint.action_space,
                             footprint.mask_width) == allocated


def test_an_lstm_state_is_in_the_estimate():
    config = configuration.load('puffer_squared', [*SMALL, '--rnn.class', 'pufferlib.models:LSTMWrapper'])
    with pufferlib.vector.from_config('puffer_squared', config['vec'], env_kwargs=config['env']) as vecenv:
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        state = sum(t.numel() * t.element_size() for t in [*trainer.state.values(), *trainer.segment_start.values()])
        without = rollout_bytes(vecenv.num_agents, trainer.horizon, vecenv.single_observation_space,
                                vecenv.single_action_space)
        with_lstm = rollout_bytes(vecenv.num_agents, trainer.horizon, vecenv.single_observation_space,
                                  vecenv.single_action_space, rnn_hidden=config['rnn']['hidden_size'])
        assert with_lstm - without == state


def test_a_run_larger_than_memory_is_refused_at_once_without_allocating(experiments):
    """`--env.num-envs 100000000` grew to 19 GB and was killed by the kernel a minute later, silently.
    Now it is one line with the estimate, the memory available and the flags to lower, from a
    process whose peak memory stays that of Python and torch (measured by a parent of its own)."""
    measure = ('import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); '
               'sys.stdout.write(p.stderr); '
               'print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)')
    env = {**os.environ, 'PUFFER_EXPERIMENTS': str(experiments)}
    out = subprocess.run([sys.executable, '-c', measure, PUFFER, 'train', 'puffer_squared', '--env.num-envs',
                          '100000000', '--quiet'], env=env, capture_output=True, text=True, timeout=300)
    *err, last = out.stdout.strip().splitlines()
    returncode, peak_kib = (int(x) for x in last.split())
    assert returncode == 2, err
    assert len(err) == 1 and err[0].startswith('puffer train: error: this run needs at least '), err
    assert '200,000,000 agent rows' in err[0] and 'GiB of memory is available' in err[0]
    assert err[0].endswith('lower --env.num-envs, --vec.num-envs, --train.bptt-horizon'), err
    assert peak_kib < 2 * 2**20, f'peak memory {peak_kib / 2**20:.1f} GiB'  # the env alone would be 13 GiB
    assert not experiments.exists() or not list(experiments.iterdir())  # no run directory was made


def test_train_refuses_it_too(monkeypatch):
    """The library path (train() with a config) checks before it builds the vector env."""
    config = configuration.load('puffer_squared', SMALL)
    monkeypatch.setattr(training.psutil, 'virtual_memory', lambda: type('Memory', (), {'available': 1024})())
    built = []
    monkeypatch.setattr(training, 'make_vecenv', lambda *args, **kwargs: built.append(args))
    with pytest.raises(configuration.ConfigError, match=r'but 0\.0 GiB of memory is available; lower --env'):
        training.train('puffer_squared', config=config, quiet=True)
    assert built == []


def test_the_gpu_holds_the_rollout(monkeypatch):
    """With the train device a GPU, the rollout is compared with that GPU's free memory."""
    if not torch.cuda.is_available():
        pytest.skip('needs a CUDA device')
    config = configuration.load('puffer_squared', [*SMALL, '--train.device', 'cuda'])
    free = torch.cuda.mem_get_info()[0]
    config['train']['bptt_horizon'] = int(np.ceil(free / (64 * 121))) * 2  # rows x horizon x obs > free
    with pytest.raises(configuration.ConfigError, match=r'GiB of rollout buffers .* on cuda.* GiB on cuda'):
        training.check_memory('puffer_squared', config)
