"""`puffer export`: ONNX files give the torch policy's outputs."""
import os

import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferlib
from pufferlib import config as configuration
from pufferlib import export
from pufferlib.export import ExportError
from pufferlib.models import Default, LSTMWrapper, layer_init, make_policy


PARITY = 1e-5            # max abs difference allowed between torch and ONNX / C outputs
ROWS = 100               # agent rows stepped together while collecting them


def make_env(name, config, rows=ROWS):
    """The env of `config` with about `rows` agent rows (Ocean) or a single one (Gymnasium)."""
    if not name.startswith('puffer_'):
        return pufferlib.make(name, **config['env'])
    one = pufferlib.make(name, **{**config['env'], 'num_envs': 1})
    per_env = one.num_agents
    one.close()
    return pufferlib.make(name, **{**config['env'], 'num_envs': max(1, rows // per_env)})


def random_actions(env, rng):
    """Uniform random actions for every row; legal ones where the env publishes masks (so games last)."""
    space = env.single_action_space
    legal = getattr(env, 'action_masks', None)
    if isinstance(space, spaces.Discrete):
        scores = rng.random((env.num_agents, int(space.n)))
        if legal is not None:
            scores = np.where(legal, scores + 1, scores)
        return scores.argmax(1).reshape(env.actions.shape).astype(env.actions.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, size=(env.num_agents, len(space.nvec))).astype(env.actions.dtype)
    return rng.uniform(space.low, space.high, size=(env.num_agents, *space.shape)).astype(env.actions.dtype)


def play(env, steps, seed=0):
    """(observation batch, rows whose episode ended with it) for `steps` steps of random play."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        batch = obs.copy()
        obs, _, terminals, truncations, _ = env.step(random_actions(env, rng))
        yield batch, np.flatnonzero(np.asarray(terminals | truncations).reshape(-1))


def unit_scale_heads(policy):
    """Give the action head gain 1 instead of 0.01, so logits are O(1) and 1e-5 is a real bound."""
    core = policy.policy if isinstance(policy, LSTMWrapper) else policy
    layer_init(core.actor, 1.0)
    return policy


# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------

class MultiDiscreteSpaces:
    """No Ocean env has a MultiDiscrete action with plain (unstructured) rows: its spaces, for the model."""
    single_observation_space = spaces.Box(-1, 1, (12,), np.float32)
    single_action_space = spaces.MultiDiscrete([3, 4, 2])


@pytest.mark.parametrize('name', ['puffer_squared', 'puffer_memory', 'multidiscrete', 'Pendulum-v1'])
def test_onnx_gives_the_torch_outputs(tmp_path, name):
    """Default MLP (uint8 rows), the LSTM config (state in and out over 30 steps), a MultiDiscrete action
    (every head) and a Box action (mean, log-std): onnxruntime's outputs are torch's within 1e-5."""
    ort = pytest.importorskip('onnxruntime', reason='pip install -e ".[export]"')
    torch.manual_seed(0)
    if name == 'multidiscrete':
        env = MultiDiscreteSpaces()
        policy = unit_scale_heads(Default(env))
        rng = np.random.default_rng(0)
        batches = [rng.uniform(-1, 1, (33, 12)).astype(np.float32) for _ in range(5)]
    else:
        config = configuration.load(name)
        env = make_env(name, config, rows=33)
        policy = unit_scale_heads(make_policy(env, config))
        if name == 'Pendulum-v1':  # one row per step: batch a few steps' rows together
            batches = [np.stack([obs[0] for obs, _ in play(env, 40, seed)]) for seed in range(3)]
        else:
            batches = [obs for obs, _ in play(env, 30)]
    policy.eval()
    path = export.write_onnx(policy, env, str(tmp_path / 'policy.onnx'))
    session = ort.InferenceSession(path)
    inputs, outputs = export.onnx_names(policy)
    assert [i.name for i in session.get_inputs()] == inputs
    assert [o.name for o in session.get_outputs()] == outputs
    recurrent = isinstance(policy, LSTMWrapper)
    state = policy.initial_state(len(batches[0])) if recurrent else None
    h = c = np.zeros((len(batches[0]), getattr(policy, 'hidden_size', 0)), np.float32)
    worst = 0.0
    for obs in batches:
        feed = {'obs': obs, **({'lstm_h': h, 'lstm_c': c} if recurrent else {})}
        got = session.run(None, feed)
        with torch.no_grad():
            logits, value = policy.forward_eval(torch.from_numpy(obs), state) if recurrent else policy(
                torch.from_numpy(obs))
        if isinstance(logits, torch.distributions.Distribution):
            expected = [logits.mean, logits.base_dist.scale.log()]
        elif isinstance(logits, (tuple, list)):
            expected = list(logits)
        else:
            expected = [logits]
        expected.append(value)
        if recurrent:
            expected += [state['lstm_h'], state['lstm_c']]
            h, c = got[-2], got[-1]
        assert len(got) == len(expected) == len(outputs)
        for mine, theirs in zip(got, expected):
            assert mine.shape == tuple(theirs.shape)
            worst = max(worst, float(np.abs(mine - theirs.numpy()).max()))
    assert worst <= PARITY, worst


def test_onnx_refuses_structured_rows(tmp_path):
    config = configuration.load('puffer_spaces')
    env = make_env('puffer_spaces', config, rows=1)
    with pytest.raises(ExportError, match='ONNX cannot read structured observation rows'):
        export.write_onnx(make_policy(env, config), env, str(tmp_path / 'policy.onnx'))
    assert not os.path.exists(tmp_path / 'policy.onnx')
