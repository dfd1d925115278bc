"""Models: shapes for every head kind, nativization inside the model, sampling, LSTM state handling."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferlib
from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.models import IMPALA, LSTMWrapper, Default, NatureCNN
from pufferlib.distributions import DiagonalGaussian, sample_logits
from pufferlib.pufferenv import APIUsageError, SpaceError

from envs import SampleEnv

ACTION_SPACES = {
    'discrete': spaces.Discrete(5),
    'multidiscrete': spaces.MultiDiscrete([3, 2, 4]),
    'box': spaces.Box(-1, 1, (3,), np.float32),
    'box2d': spaces.Box(-1, 1, (2, 2), np.float32),
}


def fake_env(action_space, obs_shape=(7,), obs_dtype=np.float32):
    low, high = (0, 255) if np.dtype(obs_dtype) == np.uint8 else (-1, 1)
    return SimpleNamespace(single_observation_space=spaces.Box(low, high, obs_shape, obs_dtype),
                           single_action_space=action_space, obs_dtype=None)


def check_logits(logits, space, lead):
    if isinstance(space, spaces.Discrete):
        assert logits.shape == (*lead, space.n)
    elif isinstance(space, spaces.MultiDiscrete):
        assert [tuple(part.shape) for part in logits] == [(*lead, int(n)) for n in space.nvec]
    else:
        assert logits.batch_shape == lead and logits.event_shape == space.shape


def loss_of(logits, value):
    _, logprob, entropy = sample_logits(logits)
    return logprob.sum() + entropy.sum() + value.sum()


def assert_all_grads(model):
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing, f'no gradient reached {missing}'


@pytest.mark.parametrize('kind', list(ACTION_SPACES))
def test_default_shapes_and_gradients(kind):
    space = ACTION_SPACES[kind]
    torch.manual_seed(0)
    model = Default(fake_env(space), hidden_size=32)
    obs = torch.randn(6, 7)
    assert model.encode_observations(obs).shape == (6, 32)
    logits, value = model(obs)
    assert value.shape == (6,)
    check_logits(logits, space, (6,))
    action, logprob, entropy = sample_logits(logits)
    assert action.shape == (6, *space.shape) and logprob.shape == (6,) and entropy.shape == (6,)
    if not isinstance(space, spaces.Box):  # Normal samples are unbounded: the caller clips them to the Box
        assert space.contains(action[0].numpy().astype(space.dtype))
    loss_of(logits, value).backward()
    assert_all_grads(model)


def test_default_flattens_multidimensional_box_observations():
    model = Default(fake_env(spaces.Discrete(2), obs_shape=(3, 4, 2), obs_dtype=np.uint8), hidden_size=16)
    logits, value = model(torch.randint(0, 255, (5, 3, 4, 2), dtype=torch.uint8))
    assert logits.shape == (5, 2) and value.shape == (5,)


def test_structured_observation_is_nativized_inside_the_model():
    native = spaces.Dict({
        'position': spaces.Box(-5, 5, (3,), np.float32),
        'kind': spaces.Discrete(4),
        'grid': spaces.Box(0, 9, (2, 2), np.int8),
        'pair': spaces.Tuple((spaces.MultiBinary(3), spaces.Box(0, 1, (1,), np.float64))),
    })
    env = GymnasiumPufferEnv(env=SampleEnv(native, spaces.MultiDiscrete([2, 3])))
    assert env.obs_dtype is not None and env.single_observation_space.dtype == np.uint8  # raw byte rows
    model = Default(env, hidden_size=16)
    seen = {}
    model.encoder[0].register_forward_pre_hook(lambda module, args: seen.update(x=args[0]))
    rows, natives = [], []
    obs, _ = env.reset(seed=3)
    for _ in range(3):
        rows.append(obs[0].copy())
        natives.append(env.env.emitted[-1])
        obs = env.step(np.array([[1, 2]]))[0]
    logits, value = model(torch.from_numpy(np.stack(rows)))
    assert value.shape == (3,) and [part.shape for part in logits] == [(3, 2), (3, 3)]
    for i, ob in enumerate(natives):
        expected = []
        for key in env.env.observation_space.spaces:  # the Dict's (sorted) layout order
            leaves = ob[key] if key == 'pair' else (ob[key],)
            expected += [np.asarray(leaf, np.float64).ravel() for leaf in leaves]
        np.testing.assert_allclose(seen['x'][i].numpy(), np.concatenate(expected), rtol=1e-6)
    assert model.encoder[0].in_features == 3 + 1 + 4 + 3 + 1


def test_ocean_spaces_env_runs_through_default_and_lstm():
    env = pufferlib.make('puffer_spaces', num_envs=4)
    try:
        obs, _ = env.reset(seed=0)
        policy = LSTMWrapper(env, Default(env, hidden_size=32), 32, 32)
        state = policy.initial_state(obs.shape[0])
        logits, value = policy.forward_eval(torch.from_numpy(obs), state)
        action, _, _ = sample_logits(logits)
        assert action.shape == (obs.shape[0], 2) and value.shape == (obs.shape[0],)
        env.step(action.numpy().astype(env.single_action_space.dtype))
    finally:
        env.close()


def test_sample_logits_matches_torch_distributions():
    torch.manual_seed(1)
    logits = torch.randn(20, 6)
    action, logprob, entropy = sample_logits(logits)
    dist = torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(logprob, dist.log_prob(action))
    torch.testing.assert_close(entropy, dist.entropy())

    multi = (torch.randn(20, 3), torch.randn(20, 5))
    action, logprob, entropy = sample_logits(multi)
    dists = [torch.distributions.Categorical(logits=part) for part in multi]
    torch.testing.assert_close(logprob, sum(d.log_prob(action[:, i]) for i, d in enumerate(dists)))
    torch.testing.assert_close(entropy, sum(d.entropy() for d in dists))

    model = Default(fake_env(ACTION_SPACES['box2d']), hidden_size=8)
    with torch.no_grad():
        model.log_std.copy_(torch.tensor([[0.1, -0.3], [0.5, 0.0]]))
        normal, _ = model(torch.randn(20, 7))
    action, logprob, entropy = sample_logits(normal)
    ref = torch.distributions.Normal(normal.mean, model.log_std.exp())
    torch.testing.assert_close(logprob, ref.log_prob(action).sum((-2, -1)))
    torch.testing.assert_close(entropy, ref.entropy().sum((-2, -1)))


def test_gaussian_head_gradients_match_torch_distributions():
    """The Box head's DiagonalGaussian writes log_prob and entropy out by hand: its gradients, to the mean and
    to log_std, are those of torch's Independent(Normal); made under no_grad it records no graph."""
    torch.manual_seed(0)
    model = Default(fake_env(ACTION_SPACES['box2d']), hidden_size=8)
    with torch.no_grad():
        model.log_std.copy_(torch.tensor([[0.1, -0.3], [0.5, 0.0]]))
    obs, action = torch.randn(20, 7), torch.randn(20, 2, 2) * 2

    def gradients(dist_of):
        model.zero_grad()
        dist, _ = model(obs)
        dist = dist_of(dist)
        (dist.log_prob(action).pow(2).sum() + 3 * dist.entropy().sum()).backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    ours = gradients(lambda d: d)
    torch_ = gradients(lambda d: torch.distributions.Independent(torch.distributions.Normal(d.mean, d.stddev), 2))
    assert len(ours) == len(torch_) and model.log_std.grad.abs().sum() > 0
    for mine, reference in zip(ours, torch_):
        # float32 sums in another order: a few ulps of the largest gradient (300 seeds: at most 1e-6 of it)
        assert (mine - reference).abs().max() <= 1e-5 * reference.abs().max()
    with torch.no_grad():
        dist, _ = model(obs)
    assert not dist.log_prob(action).requires_grad and not dist.entropy().requires_grad
    with pytest.raises(SpaceError, match=r'one log std per action dim, shared by every row: log_std has shape '
                                         r'\[20, 2, 2\], the means \[20, 2, 2\]'):
        DiagonalGaussian(dist.mean, torch.zeros(20, 2, 2))


@pytest.mark.parametrize('kind', list(ACTION_SPACES))
def test_sample_logits_scores_given_actions(kind):
    model = Default(fake_env(ACTION_SPACES[kind]), hidden_size=8)
    logits, _ = model(torch.randn(10, 7))
    action, logprob, entropy = sample_logits(logits)
    again, logprob2, entropy2 = sample_logits(logits, action)
    assert torch.equal(again, action)
    torch.testing.assert_close(logprob2, logprob)
    torch.testing.assert_close(entropy2, entropy)


def test_sample_logits_handles_masked_logits_and_bad_input():
    logits = torch.tensor([[0.0, -float('inf'), 0.0]])
    action, logprob, entropy = sample_logits(logits)
    assert action.item() in (0, 2) and torch.isfinite(entropy).all()
    torch.testing.assert_close(entropy, torch.tensor([np.log(2.0)], dtype=torch.float32))
    with pytest.raises(TypeError, match='logits must be'):
        sample_logits(np.zeros((2, 3)))


def test_action_masks_restrict_sampling_logprob_and_entropy():
    """Illegal actions are never sampled; logprob and entropy are those of the renormalised legal part."""
    torch.manual_seed(0)
    logits = torch.randn(512, 4)
    mask = torch.rand(512, 4) < 0.5
    mask[torch.arange(512), torch.randint(0, 4, (512,))] = True  # at least one legal action per row
    action, logprob, entropy = sample_logits(logits, mask=mask)
    assert mask[torch.arange(512), action].all()
    legal = torch.distributions.Categorical(logits=logits.masked_fill(~mask, -float('inf')))
    torch.testing.assert_close(logprob, legal.log_prob(action))
    torch.testing.assert_close(entropy, legal.entropy())
    one = torch.zeros(512, 4, dtype=torch.bool)
    one[:, 2] = True  # a waiting row (ocean/seats.h): one choice, log-probability 0, entropy 0
    action, logprob, entropy = sample_logits(logits, mask=one)
    assert (action == 2).all() and (logprob == 0).all() and (entropy == 0).all()
    # MultiDiscrete: the mask is the sub-masks side by side
    multi = (torch.randn(8, 2), torch.randn(8, 3))
    sub = torch.tensor([[True, False, False, True, False]]).expand(8, 5)
    action, _, entropy = sample_logits(multi, mask=sub)
    assert (action[:, 0] == 0).all() and (action[:, 1] == 1).all() and (entropy == 0).all()


def test_action_mask_of_the_wrong_shape_is_one_clear_error():
    with pytest.raises(APIUsageError, match=r'action mask has shape \[4, 3\]; the logits have \[4, 5\]'):
        sample_logits(torch.zeros(4, 5), mask=torch.ones(4, 3, dtype=torch.bool))
    with pytest.raises(APIUsageError, match='needs 5'):
        sample_logits((torch.zeros(4, 2), torch.zeros(4, 3)), mask=torch.ones(4, 4, dtype=torch.bool))


def lstm_policy(space=ACTION_SPACES['discrete'], hidden=16):
    env = fake_env(space)
    return LSTMWrapper(env, Default(env, hidden_size=hidden), hidden, hidden)


def test_lstm_state_is_per_row_updated_in_place_and_zeroed_on_done():
    torch.manual_seed(2)
    policy = lstm_policy()
    big = policy.initial_state(6)
    # The caller owns a state for 6 env rows; this batch is rows 2..4, passed as views.
    state = {'lstm_h': big['lstm_h'][2:5], 'lstm_c': big['lstm_c'][2:5]}
    obs = torch.randn(3, 7)
    with torch.no_grad():
        policy.forward_eval(obs, state)
        assert big['lstm_h'][2:5].abs().sum() > 0 and big['lstm_h'][[0, 1, 5]].abs().sum() == 0
        after_one = {k: v.clone() for k, v in state.items()}
        fresh_logits, fresh_value = policy.forward_eval(obs, policy.initial_state(3))
        state['dones'] = torch.tensor([True, False, False])
        logits, value = policy.forward_eval(obs, state)
    # Row 0 restarted from zeros, exactly as a fresh state does; rows 1-2 kept their memory.
    torch.testing.assert_close(logits[0], fresh_logits[0])
    torch.testing.assert_close(value[0], fresh_value[0])
    assert not torch.allclose(value[1:], fresh_value[1:])
    assert not torch.equal(big['lstm_h'][2:5], after_one['lstm_h'])
    assert not big['lstm_h'].requires_grad


@pytest.mark.parametrize('kind', ['discrete', 'multidiscrete', 'box'])
@pytest.mark.parametrize('with_dones', ['none', 'some', 'uneven'])
def test_lstm_training_forward_equals_stepwise_inference(kind, with_dones):
    torch.manual_seed(3)
    policy = lstm_policy(ACTION_SPACES[kind])
    segments, horizon = 3, 7
    obs = torch.randn(segments, horizon, 7)
    dones = torch.zeros(segments, horizon, dtype=torch.bool)
    if with_dones == 'some':  # episode fragments, run as one padded LSTM call
        dones[0, 2] = dones[1, 0] = dones[1, 5] = dones[2, 6] = True  # the last one only affects the next segment
    elif with_dones == 'uneven':  # one-step episodes beside a long one: padding would cost more than the step loop
        dones[0, :] = True
    h0, c0 = torch.randn(segments, 16), torch.randn(segments, 16)
    logits, value = policy(obs, {'lstm_h': h0, 'lstm_c': c0, 'dones': dones})
    assert value.shape == (segments * horizon,)

    state = {'lstm_h': h0.clone(), 'lstm_c': c0.clone()}
    step_logits, step_values = [], []
    with torch.no_grad():
        for t in range(horizon):
            # Inference marks the row whose observation starts an episode: the done of step t-1.
            state['dones'] = dones[:, t - 1] if t > 0 else torch.zeros(segments, dtype=torch.bool)
            step_logit, step_value = policy.forward_eval(obs[:, t], state)
            step_logits.append(step_logit)
            step_values.append(step_value)
    expected_values = torch.stack(step_values, dim=1).reshape(-1)  # row-major: s * H + t
    torch.testing.assert_close(value, expected_values, rtol=1e-5, atol=1e-5)
    if kind == 'discrete':
        torch.testing.assert_close(logits, torch.stack(step_logits, 1).reshape(segments * horizon, -1),
                                   rtol=1e-5, atol=1e-5)
    elif kind == 'multidiscrete':
        for i, sub in enumerate(logits):
            expected = torch.stack([step[i] for step in step_logits], 1).reshape(segments * horizon, -1)
            torch.testing.assert_close(sub, expected, rtol=1e-5, atol=1e-5)
    else:
        expected = torch.stack([step.mean for step in step_logits], 1).reshape(segments * horizon, -1)
        torch.testing.assert_close(logits.mean, expected, rtol=1e-5, atol=1e-5)


def test_lstm_episode_fragments_backpropagate_like_the_step_loop():
    torch.manual_seed(5)
    policy = lstm_policy(ACTION_SPACES['discrete'])
    segments, horizon = 4, 9
    obs = torch.randn(segments, horizon, 7)
    dones = torch.zeros(segments, horizon, dtype=torch.bool)
    dones[0, 1] = dones[0, 4] = dones[2, 3] = dones[3, 0] = True
    h0, c0 = torch.randn(segments, 16), torch.randn(segments, 16)
    def loss(logits, value):  # deterministic, unlike loss_of, which samples actions
        return (logits * torch.arange(logits.shape[1])).sum() + (value ** 2).sum()
    loss(*policy(obs, {'lstm_h': h0, 'lstm_c': c0, 'dones': dones})).backward()
    fragments = {name: p.grad.clone() for name, p in policy.named_parameters()}

    policy.zero_grad()
    hidden = policy.policy.encode_observations(obs.reshape(segments * horizon, 7)).reshape(segments, horizon, -1)
    h, c, outputs = h0[None], c0[None], []
    for t in range(horizon):  # the reference: zero the state after each done, one LSTM step at a time
        if t > 0:
            keep = (~dones[:, t - 1]).float()[None, :, None]
            h, c = h * keep, c * keep
        out, (h, c) = policy.lstm(hidden[:, t][None], (h, c))
        outputs.append(out[0])
    loss(*policy.policy.decode_actions(torch.stack(outputs, 1).reshape(segments * horizon, -1))).backward()
    for name, p in policy.named_parameters():
        torch.testing.assert_close(fragments[name], p.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_lstm_gradients_reach_every_parameter():
    policy = lstm_policy(ACTION_SPACES['box'])
    dones = torch.zeros(4, 5, dtype=torch.bool)
    dones[1, 2] = True
    state = {**policy.initial_state(4), 'dones': dones}
    state['lstm_h'] += 0.1  # a zero initial state starves nothing, but a non-zero one exercises more paths
    loss_of(*policy(torch.randn(4, 5, 7), state)).backward()
    assert_all_grads(policy)


def test_lstm_rejects_bad_sizes_and_state():
    env = fake_env(ACTION_SPACES['discrete'])
    with pytest.raises(ValueError, match='input_size=64 must equal'):
        LSTMWrapper(env, Default(env, hidden_size=32), 64, 32)
    with pytest.raises(ValueError, match='hidden_size=64 must equal'):
        LSTMWrapper(env, Default(env, hidden_size=32), 32, 64)
    policy = lstm_policy()
    with pytest.raises(ValueError, match=r"state\['lstm_h'\] must have shape \[3, 16\]"):
        policy.forward_eval(torch.randn(3, 7), policy.initial_state(4))
    with pytest.raises(ValueError, match="state must be a dict with 'lstm_h'"):
        policy.forward_eval(torch.randn(3, 7), None)
    with pytest.raises(ValueError, match=r"state\['dones'\] must have shape \[2, 4\]"):
        policy(torch.randn(2, 4, 7), {**policy.initial_state(2), 'dones': torch.zeros(2, 3)})


def image_env(shape, action_space=None):
    return fake_env(action_space or spaces.Discrete(4), obs_shape=shape, obs_dtype=np.uint8)


@pytest.mark.parametrize('model_cls,shape,hidden', [(NatureCNN, (84, 84, 4), 512), (IMPALA, (64, 64, 3), 256)])
def test_cnns_shapes_gradients_and_lstm(model_cls, shape, hidden):
    torch.manual_seed(4)
    env = image_env(shape)
    model = model_cls(env)
    assert model.hidden_size == hidden
    frames = torch.randint(0, 256, (3, *shape), dtype=torch.uint8)
    logits, value = model(frames)
    assert logits.shape == (3, 4) and value.shape == (3,)
    loss_of(logits, value).backward()
    assert_all_grads(model)

    policy = LSTMWrapper(env, model_cls(env), hidden, hidden)
    logits, value = policy(frames.reshape(1, 3, *shape), policy.initial_state(1))
    assert logits.shape == (3, 4) and value.shape == (3,)
    logits, value = policy.forward_eval(frames, policy.initial_state(3))
    assert logits.shape == (3, 4)


def test_cnn_scales_frames():
    env = image_env((64, 64, 3))
    model = IMPALA(env)
    seen = {}
    model.conv[0].register_forward_pre_hook(lambda module, args: seen.update(x=args[0]))
    model(torch.full((1, 64, 64, 3), 255, dtype=torch.uint8))
    assert seen['x'].shape == (1, 3, 64, 64) and torch.all(seen['x'] == 1.0)


def test_models_are_deterministic_under_manual_seed():
    def build_and_sample():
        torch.manual_seed(7)
        env = fake_env(ACTION_SPACES['multidiscrete'])
        model = LSTMWrapper(env, Default(env, hidden_size=16), 16, 16)
        logits, _ = model.forward_eval(torch.ones(5, 7), model.initial_state(5))
        return model.state_dict(), sample_logits(logits)[0]
    (first, a1), (second, a2) = build_and_sample(), build_and_sample()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert torch.equal(a1, a2)


def test_bad_spaces_are_clear_errors():
    with pytest.raises(SpaceError, match='single_action_space must be Discrete, MultiDiscrete, Box or MixedSpace'):
        Default(fake_env(spaces.Dict({'a': spaces.Discrete(2)})))
    with pytest.raises(SpaceError, match='single_observation_space must be a flat gymnasium Box'):
        Default(SimpleNamespace(single_observation_space=spaces.Discrete(3),
                                single_action_space=spaces.Discrete(2), obs_dtype=None))
    with pytest.raises(SpaceError, match='NatureCNN needs channels-last image observations'):
        NatureCNN(fake_env(spaces.Discrete(2)))
    with pytest.raises(SpaceError, match='must have single_observation_space'):
        Default(object())


# --- checkpoints that no longer fit --------------------------------------------------------------

def test_weights_that_do_not_fit_name_the_shapes_and_the_changed_setting(tmp_path):
    """A policy made with another [policy] setting: one CheckpointError with each differing shape
    (name, saved, now) and the setting, read from the settings the saved state dict carries."""
    from pufferlib import config as configuration
    from pufferlib.checkpoint import load_checkpoint, load_policy_weights
    from pufferlib.models import make_policy
    from pufferlib.rundir import CheckpointError
    env = fake_env(ACTION_SPACES['discrete'])
    saved = make_policy(env, configuration.load(None, []))
    path = tmp_path / 'epoch-0000001.pt'
    torch.save({'policy': saved.state_dict(), 'env': 'fake'}, path)
    state = load_checkpoint(str(path))
    smaller = make_policy(env, configuration.load(None, ['--policy.hidden-size', '64']))
    with pytest.raises(CheckpointError) as caught:
        load_policy_weights(smaller, state, str(path))
    message = str(caught.value)
    assert '\n' not in message and 'does not fit this policy' in message
    assert 'encoder.0.weight [128, 7] saved, [64, 7] now' in message
    assert 'policy.hidden_size (--policy.hidden-size) was 128, now 64' in message
    # The module's own load_state_dict, which the trainer calls on resume, says the same.
    with pytest.raises(CheckpointError, match=r'policy.hidden_size \(--policy.hidden-size\) was 128, now 64'):
        smaller.load_state_dict(state['policy'])
    # Weights saved without their settings: the shapes, and which sections to look at.
    bare = {'policy': dict(state['policy']), 'env': 'fake'}
    with pytest.raises(CheckpointError, match=r'\[64, 7\] now.*the \[policy\] or \[rnn\] settings changed'):
        load_policy_weights(smaller, bare, str(path))
    load_policy_weights(make_policy(env, configuration.load(None, [])), state, str(path))  # still fits
