"""The NumPy policy path (pufferlib/numpy_policy.py): the update's losses and gradients are autograd's on the
trainer's own loss (`trainer.ppo_loss` through autograd), on every branch of the clips; the rollout's step gives the
torch policy's values and log-probabilities; the trainer takes the path only where it applies; a run through
it lands where one through torch does. On Pendulum (Gymnasium's classic control, Box
actions) with the MuJoCo family's policy and recipe, so no MuJoCo install is needed."""
import contextlib
import functools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip('torch')

import pufferlib  # noqa: E402
from pufferlib import config as configuration  # noqa: E402
from pufferlib import vector  # noqa: E402
from pufferlib.models import make_policy  # noqa: E402
from pufferlib.trainer import NonFiniteError, Trainer, attach_gradients  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SMALL = ['--train.bptt-horizon', '32', '--train.minibatch-size', '32', '--train.update-epochs', '2',
         '--train.total-timesteps', '4096', '--vec.num-envs', '4']


@contextlib.contextmanager
def pendulum_trainer(*flags, seed=1, env='Pendulum-v1'):
    """A Trainer with the MuJoCo recipe and policy (mujoco.toml) on 4 Pendulums (or `env`), 128 steps a
    rollout."""
    config = configuration.load('mujoco_hopper', [*SMALL, '--train.seed', str(seed), *flags])
    torch.manual_seed(seed)
    vecenv = vector.make(functools.partial(pufferlib.make, env), num_envs=4, backend='Serial', seed=seed)
    try:
        yield Trainer(config, vecenv, make_policy(vecenv, config))
    finally:
        vecenv.close()


def both_gradients(trainer, advantages, idx):
    """(NumPy's stats, NumPy's gradients, autograd's stats, autograd's gradients) of one minibatch."""
    numpy_update = trainer.numpy_update
    numpy_update.bind(trainer.policy, trainer.obs, trainer.actions, trainer.logprobs, trainer.values, advantages)
    attach_gradients(trainer.params, trainer.flat_grad)
    stats = numpy_update.forward(idx.numpy())
    numpy_update.backward()
    numpy_grads = trainer.flat_grad.clone()
    trainer.flat_grad.zero_()
    loss, losses = trainer._minibatch_loss(idx, advantages, None)
    loss.backward()
    return stats, numpy_grads, np.concatenate([[loss.item()], losses.numpy()]), trainer.flat_grad.clone()


@pytest.mark.parametrize('env, flags', [
    ('Pendulum-v1', ()),
    # an entropy bonus, raw inputs, one hidden layer and actor and critic of one width
    ('Pendulum-v1', ('--train.ent-coef', '0.01', '--policy.normalize-observations', 'false',
                     '--policy.num-layers', '1', '--policy.critic-hidden-size', '64')),
    ('mujoco_hopper', ()),  # several action dims (where the mujoco extra is installed)
])
def test_gradients_are_autograds_on_every_branch_of_the_clips(env, flags):
    if env.startswith('mujoco'):
        pytest.importorskip('mujoco', reason='pip install -c constraints.txt -e ".[mujoco]"')
    with pendulum_trainer(*flags, env=env) as trainer:
        assert trainer.numpy_update is not None
        trainer.rollout()
        trainer.update()
        trainer.rollout()  # with statistics, where the policy normalises
        # Moved weights make ratios leave [0.8, 1.2] on both sides and values leave their clip range.
        gen = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in trainer.policy.parameters():
                p.add_(torch.randn(p.shape, generator=gen) * 0.3)
        advantages = trainer.advantages().flatten()
        seen = set()
        for _ in range(4):
            idx = torch.randperm(trainer.batch_size, generator=gen)[:32]
            stats, numpy_grads, expected_stats, expected = both_gradients(trainer, advantages, idx)
            np.testing.assert_allclose(stats, expected_stats, rtol=1e-5, atol=1e-6)
            scale = float(expected.abs().max())
            torch.testing.assert_close(numpy_grads, expected, rtol=1e-4, atol=1e-5 * scale)
            with torch.no_grad():
                logits, values = trainer.policy(trainer.sampler.take(trainer.obs, idx))
                logprob = logits.log_prob(trainer.sampler.take(trainer.actions, idx))
                ratio = (logprob - trainer.sampler.take(trainer.logprobs, idx)).exp()
                moved = values - trainer.sampler.take(trainer.values, idx)
            seen |= {'ratio low' if r < 0.8 else 'ratio high' if r > 1.2 else 'ratio inside' for r in ratio.tolist()}
            seen |= {'value low' if m < -0.2 else 'value high' if m > 0.2 else 'value inside' for m in moved.tolist()}
        assert seen == {'ratio low', 'ratio high', 'ratio inside', 'value low', 'value high', 'value inside'}
        assert trainer.flat_grad.abs().sum() > 0


def test_the_rollout_step_is_the_torch_policys():
    """Actor: the torch forward's values, the Gaussian's log-probabilities of the actions it returns, and those
    actions the means plus std times torch's next normal draws; evaluation mode gathers no statistics."""
    from pufferlib.environments.mujoco import Policy
    from pufferlib.numpy_policy import Actor
    env = pufferlib.make('Pendulum-v1')
    policy = Policy(env, hidden_size=16, critic_hidden_size=32, log_std_init=-0.5)
    env.close()
    with torch.no_grad():
        policy.obs_mean.copy_(torch.tensor([0.5, -0.5, 1.0], dtype=torch.float64))
        policy.obs_var.copy_(torch.tensor([4.0, 0.25, 9.0], dtype=torch.float64))
        policy.obs_count.fill_(100)
    policy.eval()
    obs = np.random.default_rng(0).normal(0, 3, (8, 3)).astype(np.float32)
    torch.manual_seed(7)
    actions, logprob, value = Actor(policy)(obs)
    torch.manual_seed(7)
    noise = torch.randn(8, 1)
    with torch.no_grad():
        logits, expected_value = policy(torch.from_numpy(obs))
    np.testing.assert_allclose(value, expected_value.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(actions, (logits.mean + logits.stddev * noise).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logprob, logits.log_prob(torch.from_numpy(actions)).numpy(), rtol=1e-5, atol=1e-5)
    assert float(policy.obs_count) == 100 and float(policy.pending_count) == 0


def test_the_trainer_takes_it_only_where_it_applies():
    with pendulum_trainer() as trainer:
        assert trainer.numpy_update is not None
    for flags in (('--train.numpy-policy', 'false'), ('--train.minibatch-sampling', 'segments'),
                  ('--train.optimizer', 'muon'), ('--train.precision', 'bfloat16')):
        with pendulum_trainer(*flags) as trainer:
            assert trainer.numpy_update is None, flags
    # The default policy offers no numpy_model(): autograd, whatever the recipe.
    config = configuration.load('Pendulum-v1', [*SMALL, '--train.minibatch-sampling', 'steps',
                                                '--train.prio-alpha', '0', '--train.optimizer', 'adam'])
    vecenv = vector.make(functools.partial(pufferlib.make, 'Pendulum-v1'), num_envs=4, backend='Serial')
    try:
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        assert trainer.flat_grad is not None and trainer.numpy_update is None
    finally:
        vecenv.close()


@pytest.mark.parametrize('flags', [(), ('--train.recompute-advantages', 'true')])
def test_a_run_through_it_lands_where_one_through_autograd_does(flags):
    """Three epochs each way from one seed: the same rollouts (the same actions sampled from nearly the same
    weights), the same observation statistics applied, weights within float rounding (also with the
    advantages recomputed before every epoch)."""
    states = []
    for flag in ('true', 'false'):
        with pendulum_trainer('--train.numpy-policy', flag, *flags) as trainer:
            assert (trainer.numpy_update is not None) == (flag == 'true')
            for _ in range(3):
                trainer.rollout()
                losses = trainer.update()
            states.append(({k: v.clone() for k, v in trainer.policy.state_dict().items()}, losses))
    (ours, our_losses), (theirs, their_losses) = states
    # two rollouts' statistics applied (and the rows that bootstrapped them), the third's pending
    assert float(ours['obs_count']) == float(theirs['obs_count']) >= 2 * 128
    for key in theirs:
        torch.testing.assert_close(ours[key], theirs[key], rtol=1e-3, atol=1e-4, msg=key)
    assert our_losses.keys() == their_losses.keys()
    for key in their_losses:
        assert our_losses[key] == pytest.approx(their_losses[key], rel=1e-2, abs=1e-4), key


def test_recomputed_advantages_come_from_the_critic_as_it_stands_before_each_epoch():
    """train.recompute_advantages: the first epoch's GAE from the rollout's values, each later one's from the
    critic's values (rollout states and bootstrap observations) under the weights of that moment, bound into the
    NumPy update too; the observation statistics are not fed the states a second time."""
    with pendulum_trainer('--train.recompute-advantages', 'true', '--train.update-epochs', '3') as trainer:
        trainer.rollout()
        rollout_values = trainer.values.clone()
        pending = float(trainer.policy.pending_count)
        held_obs = [(batch.clone(), slice(int(ids[0]), int(ids[-1]) + 1)) for batch, ids, _, _ in trainer.held]
        calls = []
        advantages = trainer.advantages

        def spy():
            calls.append(({k: v.clone() for k, v in trainer.policy.state_dict().items()}, trainer.values.clone(),
                          trainer.last_values.clone()))
            out = advantages()
            calls[-1] += (out.clone(),)
            return out
        trainer.advantages = spy
        trainer.update()
        assert len(calls) == 3
        assert torch.equal(calls[0][1], rollout_values)
        critic = make_policy(trainer.vecenv, trainer.config).eval()
        for state, values, last_values, _ in calls[1:]:
            critic.load_state_dict(state)
            with torch.no_grad():
                expected = critic(trainer.obs.flatten(0, 1))[1].reshape(values.shape)
                torch.testing.assert_close(values, expected)
                for obs, rows in held_obs:
                    torch.testing.assert_close(last_values[rows], critic(obs)[1].flatten())
        assert not torch.equal(calls[1][1], calls[2][1])  # the critic moved between the epochs
        assert np.array_equal(trainer.numpy_update.advantages, calls[2][3].flatten().numpy())
        assert float(trainer.policy.pending_count) == pending


@pytest.mark.parametrize('numpy_policy', ['true', 'false'])
def test_non_finite_actions_stop_the_rollout_with_one_error_on_either_path(numpy_policy):
    with pendulum_trainer('--train.numpy-policy', numpy_policy) as trainer:
        with torch.no_grad():
            trainer.policy.actor.bias.fill_(float('nan'))
        with pytest.raises(NonFiniteError, match=r"the policy's outputs became non-finite at global step 0, epoch 1 "
                                                 r'\(the weights diverged: lower train.learning_rate'):
            trainer.rollout()


def test_a_non_finite_loss_stops_before_the_weights_step():
    with pendulum_trainer() as trainer:
        trainer.rollout()
        with torch.no_grad():
            trainer.policy.value.weight[0, 0] = float('nan')
        before = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        with pytest.raises(NonFiniteError, match='loss became non-finite.*lower train.learning_rate'):
            trainer.update()
        after = trainer.policy.state_dict()
        for key in before:
            torch.testing.assert_close(after[key], before[key], equal_nan=True, msg=key)


def test_the_benchmark_script_prints_both_paths_and_their_ratio():
    """lab.bench_numpy --quick: one short training run each way (real runs of `puffer train`), a table
    with both paths and the ratio, a table of the update through eager torch, torch.compile and NumPy with
    each one's time over NumPy's, and no doc written."""
    pytest.importorskip('mujoco', reason='pip install -c constraints.txt -e ".[mujoco]"')
    doc = ROOT / 'scripts' / 'lab' / 'results' / 'numpy.md'
    before = doc.read_text()
    done = subprocess.run([sys.executable, '-m', 'lab.bench_numpy', '--quick'],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith('| ')]
    runs, updates = rows[:4], rows[4:]
    assert [row.split('|')[1].strip() for row in runs[1:]] == ['NumPy', 'torch', 'NumPy / torch']
    assert runs[-1].split('|')[2].strip().endswith('x')
    assert [row.split('|')[1].strip() for row in updates[1:]] == ['torch', 'torch.compile', 'NumPy']
    assert all(row.split('|')[4].strip().endswith('x') for row in updates[1:])
    assert doc.read_text() == before
