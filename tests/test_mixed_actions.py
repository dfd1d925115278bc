"""Mixed action spaces (a Dict or Tuple of discrete parts and Box parts), layer by layer: emulation's flat row
and the way back, the spec of an Ocean env, the distribution (its log-probability and entropy are the sums of
the parts'), training, checkpoints and eval, the native format's sampling, and puffer_mixed's reward.
Export parity runs with every Ocean env in tests/test_export.py, puffer_mixed included."""
import math
import os

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferlib
from pufferlib import config as configuration
from pufferlib import export, native, ocean, vector
from pufferlib import train as training
from pufferlib.distributions import DiagonalGaussian, MixedLogits, mask_logits, sample_logits
from pufferlib.emulation import GymnasiumPufferEnv, emulate_action_space
from pufferlib.evaluate import episode_means, evaluate, greedy_action
from pufferlib.models import Default, make_policy
from pufferlib.native import NativeNet
from pufferlib.ocean import spec as ocean_spec
from pufferlib.ocean import spec_c
from pufferlib.ocean.mixed import SCRIPTED
from pufferlib.pufferenv import ActionMaskError, APIUsageError, MixedSpace, SpaceError
from pufferlib.trainer import Trainer

from small_run import train_small

ACTIONS = spaces.Dict({'pick': spaces.Discrete(3, start=1), 'aim': spaces.Box(-1, 1, (2,), np.float32),
                       'buttons': spaces.MultiDiscrete([2, 4]), 'power': spaces.Box(0, 5, (), np.float64)})


class Aiming(gymnasium.Env):
    """Shows a target point and a wanted pick; pays for picking it and for aiming near the point. Every
    action it gets must be in its Dict space (the assert is the round trip's check)."""

    observation_space = spaces.Box(-1, 1, (3,), np.float32)
    action_space = ACTIONS

    def __init__(self):
        self.received = []

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self._observe(), {}

    def _observe(self):
        self.target = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.wanted = int(self.np_random.integers(1, 4))
        return np.array([*self.target, self.wanted / 3], np.float32)

    def step(self, action):
        assert ACTIONS.contains(action), action
        self.received.append(action)
        reward = float(action['pick'] == self.wanted) - 0.1 * float(np.abs(action['aim'] - self.target).sum())
        return self._observe(), reward, True, False, {}


@pytest.fixture(autouse=True, scope='module')
def one_torch_thread():
    """Small batches on a shared machine: torch's threads would only wait for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------------------
# Emulation
# ---------------------------------------------------------------------------------------------

def test_a_dict_action_round_trips_through_its_flat_row():
    """The row holds the discrete leaves first (in the Dict's key order: Gymnasium sorts a plain dict's keys),
    then the Box leaves flattened; the env gets back exactly the Dict the row encodes."""
    env = GymnasiumPufferEnv(env_creator=Aiming)
    space = env.single_action_space
    assert isinstance(space, MixedSpace) and env.actions.dtype == np.float32
    assert space.discrete.nvec.tolist() == [2, 4, 3]   # buttons, pick: the keys in sorted order
    assert space.box.shape == (3,) and space.box.low.tolist() == [-1, -1, 0] and space.box.high.tolist() == [1, 1, 5]
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        row = np.concatenate([rng.integers(0, space.discrete.nvec), rng.uniform(space.box.low, space.box.high)])
        row = row.astype(np.float32)
        env.step(row[None])
        got = env.env.received[-1]
        assert got['buttons'].tolist() == row[:2].tolist() and got['pick'] == int(row[2]) + 1
        np.testing.assert_array_equal(got['aim'], row[3:5])
        assert got['power'].dtype == np.float64 and got['power'].shape == () and got['power'] == row[5]
    env.close()


def test_tuples_nested_dicts_and_boxes_alone_flatten_too():
    nested = spaces.Tuple((spaces.Box(-2, 2, (1,), np.float32), spaces.Dict({'a': spaces.Discrete(5)})))
    flat, unflatten = emulate_action_space(nested)
    assert isinstance(flat, MixedSpace) and flat.discrete.nvec.tolist() == [5] and flat.box.shape == (1,)
    value = unflatten(np.array([4, -1.5], np.float32))
    assert nested.contains(value) and value[1]['a'] == 4 and value[0].tolist() == [-1.5]
    boxes, unflatten = emulate_action_space(spaces.Dict({'x': spaces.Box(-1, 1, (2,)), 'y': spaces.Box(0, 1, ())}))
    assert isinstance(boxes, spaces.Box) and boxes.shape == (3,) and boxes.dtype == np.float32
    assert unflatten(np.array([0.5, -0.5, 0.25], np.float32))['y'] == 0.25


def test_wrong_mixed_actions_and_spaces_are_one_clear_error():
    env = GymnasiumPufferEnv(env_creator=Aiming)
    env.reset(seed=0)
    good = np.array([[1, 3, 2, 0.5, -0.5, 1.0]], np.float32)
    for bad, match in ((good[:, :5], r'actions must have shape \(1, 6\)'),
                       (np.array([[1, 3, 2.5, 0, 0, 0]], np.float32), 'its first 3 columns are discrete choices'),
                       (np.array([[2, 0, 0, 0, 0, 0]], np.float32), r'integers in \[0, n\) for n in \[2, 4, 3\]'),
                       (np.array([[0, 0, -1, 0, 0, 0]], np.float32), 'outside MixedSpace'),
                       (np.array([[0, 0, 0, np.nan, 0, 0]], np.float32), 'NaN or inf'),
                       (np.array([['a'] * 6]), 'must be numbers')):
        with pytest.raises(APIUsageError, match=match):
            env.step(bad)
    env.step(good)  # past its Box bounds, an aim is still an action (envs clip it)
    env.close()
    with pytest.raises(SpaceError, match='integer Box.*must be float'):
        emulate_action_space(spaces.Dict({'a': spaces.Discrete(2), 'b': spaces.Box(0, 3, (1,), np.int64)}))
    with pytest.raises(SpaceError, match='between 1 and 16,777,216'):
        MixedSpace([2 ** 25], [-1.0], [1.0])
    with pytest.raises(SpaceError, match='at least one discrete size and one Box element'):
        MixedSpace([2], [], [])


def test_vector_envs_carry_mixed_rows():
    vecenv = vector.make(Aiming, num_envs=4, backend='Serial')
    try:
        assert isinstance(vecenv.single_action_space, MixedSpace) and vecenv.action_dtype == np.float32
        vecenv.async_reset(0)
        vecenv.recv()
        vecenv.send(np.stack([vecenv.single_action_space.sample() for _ in range(4)]))
        vecenv.recv()
        with pytest.raises(APIUsageError, match='discrete choices'):
            vecenv.send(np.full((4, 6), 0.5, np.float32))
    finally:
        vecenv.close()


# ---------------------------------------------------------------------------------------------
# The distribution
# ---------------------------------------------------------------------------------------------

def mixed_logits(rows=64, seed=0):
    generator = torch.Generator().manual_seed(seed)
    discrete = (torch.randn(rows, 3, generator=generator), torch.randn(rows, 4, generator=generator))
    gaussian = DiagonalGaussian(torch.randn(rows, 2, generator=generator), torch.tensor([-0.5, 0.3]))
    return MixedLogits(discrete, gaussian)


def test_log_prob_and_entropy_are_the_sums_over_the_parts():
    logits = mixed_logits()
    action, logprob, entropy = sample_logits(logits)
    assert action.shape == (64, 4) and action.dtype == torch.float32
    parts = [torch.distributions.Categorical(logits=head) for head in logits.discrete]
    normal = torch.distributions.Independent(torch.distributions.Normal(logits.continuous.mean,
                                                                        logits.continuous.stddev), 1)
    expected = sum(part.log_prob(action[:, i].long()) for i, part in enumerate(parts)) + normal.log_prob(action[:, 2:])
    torch.testing.assert_close(logprob, expected)
    torch.testing.assert_close(entropy, sum(part.entropy() for part in parts) + normal.entropy())
    again = sample_logits(logits, action)  # scoring a given action: the update's path
    torch.testing.assert_close(again[0], action)
    torch.testing.assert_close(again[1], logprob)
    assert (action[:, 0] == action[:, 0].round()).all() and action[:, 0].max() <= 2 and action[:, 1].max() <= 3


def test_masks_apply_to_the_discrete_parts():
    logits = mixed_logits(rows=2000)
    mask = torch.ones(2000, 7, dtype=torch.bool)
    mask[:, 0] = mask[:, 4] = False  # the first choice of each discrete part
    action, logprob, _ = sample_logits(logits, mask=mask)
    assert (action[:, 0] != 0).all() and (action[:, 1] != 1).all() and torch.isfinite(logprob).all()
    masked = mask_logits(logits, mask)
    assert isinstance(masked, MixedLogits) and masked.continuous is logits.continuous
    with pytest.raises(ActionMaskError, match='this MultiDiscrete space needs 7'):
        sample_logits(logits, mask=torch.ones(2000, 9, dtype=torch.bool))
    greedy = greedy_action(logits)
    assert greedy[:, 0].tolist() == logits.discrete[0].argmax(-1).float().tolist()
    torch.testing.assert_close(greedy[:, 2:], logits.continuous.mean)


def test_the_default_policy_has_one_head_per_kind():
    env = GymnasiumPufferEnv(env_creator=Aiming)
    policy = Default(env)
    assert policy.action_kind == 'mixed' and policy.actor.out_features == 2 + 4 + 3 + 3
    logits, value = policy(torch.zeros(5, 3))
    assert [list(head.shape) for head in logits.discrete] == [[5, 2], [5, 4], [5, 3]]
    assert list(logits.continuous.mean.shape) == [5, 3] and list(value.shape) == [5]
    env.close()


# ---------------------------------------------------------------------------------------------
# Training, checkpoints, eval
# ---------------------------------------------------------------------------------------------

def test_the_trainer_trains_a_gymnasium_env_with_dict_actions():
    config = configuration.load('puffer_squared', ['--train.bptt-horizon', '16', '--train.minibatch-size', '64',
                                                   '--policy.hidden-size', '32', '--train.torch-threads', '1'])
    vecenv = vector.make(Aiming, num_envs=8, backend='Serial')
    try:
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        for _ in range(2):
            trainer.rollout()
            trainer.update()
        assert trainer.actions.dtype == torch.float32 and trainer.actions.shape == (8, 16, 6)
        assert (trainer.actions[..., :3] == trainer.actions[..., :3].round()).all()
        assert any(not torch.equal(v, before[k]) for k, v in trainer.policy.state_dict().items())
    finally:
        vecenv.close()


@pytest.fixture(scope='module')
def mixed_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp('experiments')
    old = os.environ.get('PUFFER_EXPERIMENTS')
    os.environ['PUFFER_EXPERIMENTS'] = str(folder)
    try:
        # one torch thread: on a busy machine, two threads wait on each other for longer than a step takes
        yield train_small('puffer_mixed', '--train.seed', '1', '--train.torch-threads', '1', steps=4096)
    finally:
        if old is None:
            del os.environ['PUFFER_EXPERIMENTS']
        else:
            os.environ['PUFFER_EXPERIMENTS'] = old


def test_a_mixed_checkpoint_saves_loads_and_plays(mixed_run):
    assert mixed_run['global_step'] >= 4096 and mixed_run['checkpoint']
    torch_result = evaluate('puffer_mixed', mixed_run['checkpoint'], episodes=4, deterministic=True)
    native_result = evaluate('puffer_mixed', mixed_run['checkpoint'], episodes=4, deterministic=True, native=True)
    for result in (torch_result, native_result):
        assert result['episodes'] >= 4 and 0.0 <= result['mean_return'] <= 1.0, result
    # the same policy under argmax, in torch and in C: the same games, to float32 rounding of the aims
    assert abs(torch_result['mean_return'] - native_result['mean_return']) < 1e-4, (torch_result, native_result)


def test_native_mixed_actions_are_choices_then_box_elements():
    """Argmax: the discrete argmax and the Box mean; masks keep their choices out; draws have the std."""
    env = pufferlib.make('puffer_mixed', num_targets=4)
    torch.manual_seed(0)
    policy = Default(env)
    with torch.no_grad():
        policy.log_std.fill_(-1.0)
        policy.actor.weight.normal_()
    net = NativeNet(export.native_bytes(policy)[1], 1000)
    obs = np.random.default_rng(0).uniform(-1, 1, (1000, 8)).astype(np.float32)
    with torch.no_grad():
        logits, _ = policy(torch.from_numpy(obs))
    chosen = net.act(obs)
    assert chosen.dtype == np.float32 and chosen.shape == (1000, 2)
    assert (chosen[:, 0] == logits.discrete[0].argmax(-1).numpy()).all()
    np.testing.assert_allclose(chosen[:, 1], logits.continuous.mean[:, 0].numpy(), atol=1e-5)
    masks = np.ones((1000, 4), dtype=bool)
    masks[:, 1] = False
    for rng in (None, native.seed_state(3)):
        assert (net.act(obs, masks, rng)[:, 0] != 1).all()
    draws = net.act(np.repeat(obs[:1], 1000, 0), rng=native.seed_state(1))
    assert abs(draws[:, 1].std() - math.exp(-1.0)) < 0.03
    env.step(draws[:1])  # a row the env takes as it is
    env.close()


# ---------------------------------------------------------------------------------------------
# The Ocean spec and puffer_mixed
# ---------------------------------------------------------------------------------------------

def write_spec(folder, action):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'spec.toml'), 'w') as f:
        f.write('summary = "x"\ngroup = "template"\nagents = 1\n'
                '[options]\nbox = {default = 2, min = 0, max = 4, help = "b"}\n'
                '[observation]\ndtype = "float32"\nsize = 2\nlow = 0\nhigh = 1\n'
                f'[action]\n{action}\n')
    return str(folder)


def test_the_spec_declares_both_parts_of_a_mixed_action(tmp_path):
    spec = ocean_spec.load(write_spec(tmp_path / 'aim', 'nvec = [3, 2]\nbox = "box"\nlow = -1.0\nhigh = 1.0\n'
                                                         'mixed = true'))
    values = spec.defaults()
    assert spec.action_dims(values) == [3, 2] and spec.box_size(values) == 2 and spec.action_size(values) == 4
    header = spec_c.c_header(spec)
    assert '#define OCEAN_ACTION_MIXED 1' in header
    assert 'ocean_spec_discrete_size(const AimConfig *c) { (void)c; return 2; }' in header
    assert spec.problem({'box': 0}) == '[action] box must be >= 1 (a mixed action always has its Box part) (got box=0)'
    for action, match in (('n = 2\nmixed = true', 'give both'),
                          ('n = 2\nbox = 1\nlow = -1.0\nhigh = 1.0\nmixed = true\nmask = true', 'not available'),
                          ('n = 2\nbox = 1\nlow = -1.0\nhigh = 1.0\nmixed = 1', 'mixed must be true or false')):
        with pytest.raises(ocean_spec.SpecError, match=match):
            ocean_spec.load(write_spec(tmp_path / 'bad', action))


def test_puffer_mixed_pays_only_for_both_parts():
    """The oracle picks and aims right: perf 1. The right pick with a centred aim, or the right aim with a
    fixed pick, solve a fraction of the steps: the score needs both parts."""
    perf = {}
    for name, policy in SCRIPTED.items():
        env = pufferlib.make('puffer_mixed', num_envs=64, seed=3)
        obs, _ = env.reset(seed=3)
        for _ in range(50):
            obs, rewards, terminals, _, _ = env.step(policy(env, obs))
            assert terminals.all()
        perf[name] = env.log()
        env.close()
    assert perf['oracle']['perf'] == 1.0 and perf['oracle']['episode_return'] == 1.0
    assert perf['pick_only']['picked'] == 1.0 and perf['pick_only']['perf'] < 0.4
    assert perf['aim_only']['aimed'] == 1.0 and perf['aim_only']['perf'] < 0.5
    assert ocean.spec_of('puffer_mixed').action_mixed


@pytest.mark.slow
def test_default_hyperparameters_solve_puffer_mixed():
    """`puffer train puffer_mixed` as it is, stopped at 3M steps (scripts/lab/acceptance_train.py times it):
    over whole episodes, the policy picks right and aims within the tolerance in 90% of them."""
    config = configuration.load('puffer_mixed', ['--train.total-timesteps', '3000000', '--train.log-interval', '0'])
    summary = training.train('puffer_mixed', config=config, quiet=True)
    means = episode_means('puffer_mixed', summary['checkpoint'], num_envs=64, seed=10_000)
    assert means['perf'] >= 0.9, means
