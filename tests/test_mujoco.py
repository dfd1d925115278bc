"""MuJoCo continuous control (pufferlib/environments/mujoco.py): the binding, its reward scaling, the
policy's observation statistics, training, checkpoints and rendering. Skips without the mujoco extra."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pufferlib
import pufferlib.vector
from pufferlib.environments import mujoco as binding
from pufferlib.pufferenv import APIUsageError

pytest.importorskip('mujoco', reason='pip install -c constraints.txt -e ".[mujoco]" (see docs/environments.md)')

ROOT = Path(__file__).resolve().parent.parent


def random_actions(space, rows, count, seed):
    space.seed(seed)
    return [np.stack([space.sample() for _ in range(rows)]) for _ in range(count)]


@pytest.mark.parametrize('name', list(binding.TASKS))
def test_binding_steps_with_box_actions(name):
    env = pufferlib.make(name, max_episode_steps=30)
    try:
        obs, _ = env.reset(seed=0)
        assert env.single_action_space.__class__.__name__ == 'Box'
        assert env.single_observation_space.contains(obs[0])
        assert env.actions.dtype == np.float32
        episodes = []
        for actions in random_actions(env.single_action_space, 1, 70, seed=1):
            obs, rewards, terminals, truncations, infos = env.step(actions)
            assert np.isfinite(obs).all() and np.isfinite(rewards).all()
            episodes.extend(infos)
        assert len(episodes) >= 2, f'{name}: 30-step episodes, 70 steps'
        assert all({'episode_return', 'episode_length'} <= set(info) for info in episodes)
    finally:
        env.close()


def test_bare_name_takes_any_v5_or_v4_task_and_refuses_others():
    env = pufferlib.make('mujoco', task='Swimmer-v5')
    assert env.single_action_space.shape == (2,)
    env.close()
    env = pufferlib.make('mujoco', task='Hopper-v4')  # CleanRL's pinned Gymnasium has v4 only
    assert env.single_observation_space.shape == (11,)
    env.close()
    with pytest.raises(APIUsageError, match='needs task='):
        pufferlib.make('mujoco')
    with pytest.raises(APIUsageError, match=r'not a Gymnasium MuJoCo v5 \(or v4\) id.*HalfCheetah-v5'):
        pufferlib.make('mujoco', task='CartPole-v1')
    with pytest.raises(APIUsageError, match='not a Gymnasium MuJoCo'):
        pufferlib.make('mujoco', task='Hopper-v3')  # needs mujoco-py
    with pytest.raises(APIUsageError, match='only for the bare name'):
        pufferlib.make('mujoco_hopper', task='Ant-v5')
    with pytest.raises(APIUsageError, match='reward_gamma'):
        pufferlib.make('mujoco_hopper', reward_gamma=1.5)


def test_actions_are_clipped_to_the_box_inside_the_env():
    """The Gaussian's samples are unbounded; MuJoCo's control cost must see the clipped action."""
    rewards = []
    for scale in (1.0, 100.0):
        env = pufferlib.make('mujoco_halfcheetah', normalize_reward=False)
        env.reset(seed=3)
        _, reward, _, _, _ = env.step(np.full(env.single_action_space.shape, scale, np.float32))
        rewards.append(float(reward[0]))
        env.close()
    assert rewards[0] == rewards[1]


def test_reward_scaling_leaves_the_episode_return_raw():
    runs = []
    for normalize in (False, True):
        env = pufferlib.make('mujoco_hopper', normalize_reward=normalize, max_episode_steps=40, reward_clip=3.0)
        env.reset(seed=5)
        rewards, returns = [], []
        for actions in random_actions(env.single_action_space, 1, 100, seed=2):
            _, reward, _, _, infos = env.step(actions)
            rewards.append(float(reward[0]))
            returns.extend(info['episode_return'] for info in infos)
        env.close()
        runs.append((np.array(rewards), returns))
    (raw, raw_returns), (scaled, scaled_returns) = runs
    assert raw_returns and raw_returns == scaled_returns  # the same episodes, in the task's own units
    assert not np.allclose(raw, scaled)
    assert np.abs(scaled).max() <= 3.0
    # A positive scale: the sign of every reward is kept.
    assert (np.sign(raw) == np.sign(scaled)).all()


def test_serial_and_multiprocessing_agree_under_a_seed():
    kwargs = {'max_episode_steps': 15}
    runs = []
    for backend in ('Serial', 'Multiprocessing'):
        with pufferlib.vector.make('mujoco_walker2d', backend=backend, num_envs=2, num_workers=2,
                                   env_kwargs=kwargs) as vecenv:
            obs, _ = vecenv.reset(seed=11)
            seen, ends = [obs.copy()], 0
            for actions in random_actions(vecenv.single_action_space, 2, 40, seed=4):
                obs, rewards, terminals, truncations, _ = vecenv.step(actions.astype(vecenv.action_dtype))
                seen.append(np.concatenate([obs.ravel(), rewards.ravel()]))
                ends += int((terminals | truncations).sum())
            runs.append((seen, ends))
    (serial, serial_ends), (multi, multi_ends) = runs
    assert serial_ends >= 4 and serial_ends == multi_ends
    for a, b in zip(serial, multi):
        np.testing.assert_array_equal(a, b)
    with pufferlib.vector.make('mujoco_walker2d', backend='Serial', num_envs=2, env_kwargs=kwargs) as vecenv:
        other = vecenv.reset(seed=12)[0]
    assert not np.array_equal(other, serial[0])


# --- the policy's observation statistics ------------------------------------------------------

def make_policy(name='mujoco_hopper'):
    torch = pytest.importorskip('torch')
    env = pufferlib.make(name)
    policy = binding.Policy(env)
    return torch, env, policy


def test_statistics_from_a_rollout_take_effect_at_the_next_one():
    torch, env, policy = make_policy()
    obs = torch.randn(32, env.single_observation_space.shape[0]) * 5 + 3
    with torch.no_grad():
        first = policy(obs)[1]
        assert float(policy.obs_count) == 0  # gathered, not applied: the update sees the rollout's inputs
        np.testing.assert_array_equal(policy(obs)[1].numpy(), first.numpy())
    policy(obs)  # the update (gradients on)
    assert float(policy.obs_count) == 0
    with torch.no_grad():
        policy(obs[:4])  # the next rollout starts: the last one's 64 rows are applied
    assert float(policy.obs_count) == 64
    np.testing.assert_allclose(policy.obs_mean.numpy(), obs.mean(0).double().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(policy.obs_var.numpy(), obs.var(0, unbiased=False).double().numpy(), rtol=1e-5)
    policy.eval()
    count = float(policy.obs_count)
    with torch.no_grad():
        policy(obs * 100)
    policy(obs * 100)
    with torch.no_grad():
        policy(obs * 100)
    assert float(policy.obs_count) == count  # evaluation never changes them
    env.close()


def test_normalised_inputs_follow_every_change_of_the_statistics():
    """The policy keeps its float32 mean and std between changes of the statistics: after load_state_dict,
    after a rollout's statistics are applied, and under inference mode it gives exactly what a policy fresh
    from the same state gives."""
    torch, env, policy = make_policy()
    obs = torch.randn(16, env.single_observation_space.shape[0]) * 5 + 3

    def values(model):
        model.eval()
        with torch.no_grad():
            return model(obs)[1]

    def fresh():
        other = binding.Policy(env)
        other.load_state_dict(policy.state_dict())
        return values(other)

    before = values(policy)
    state = policy.state_dict()
    state['obs_mean'], state['obs_var'] = state['obs_mean'] + 1, state['obs_var'] * 4
    policy.load_state_dict(state)
    loaded = values(policy)
    assert not torch.equal(loaded, before) and torch.equal(loaded, fresh())
    policy.train()
    with torch.no_grad():
        policy(obs)  # a rollout gathers
    policy(obs)  # an update
    with torch.no_grad():
        policy(obs[:1])  # the next rollout applies them
    applied = values(policy)
    assert not torch.equal(applied, loaded) and torch.equal(applied, fresh())
    with torch.inference_mode():
        assert torch.equal(policy(obs)[1], applied)
    assert torch.equal(values(policy), applied)
    env.close()


def test_the_noise_starts_at_log_std_init_and_refuses_nan():
    torch, env, policy = make_policy()
    assert policy.log_std.detach().abs().max() == 0  # std 1 by default
    narrow = binding.Policy(env, log_std_init=-0.5)
    obs = torch.zeros(3, env.single_observation_space.shape[0])
    with torch.no_grad():
        dist, _ = narrow(obs)
    np.testing.assert_allclose(dist.stddev.numpy(), np.exp(-0.5), rtol=1e-6)
    with pytest.raises(APIUsageError, match='log_std_init must be a finite number'):
        binding.Policy(env, log_std_init=float('nan'))
    env.close()


def test_the_critic_may_be_wider_than_the_actor():
    torch, env, policy = make_policy()
    wide = binding.Policy(env, critic_hidden_size=256)
    assert wide.critic_encoder[0].out_features == 256 and wide.value.in_features == 256
    assert wide.actor_encoder[0].out_features == 64 and wide.actor.in_features == 64
    obs = torch.randn(5, env.single_observation_space.shape[0])
    dist, value = wide(obs)
    assert dist.mean.shape == (5, env.single_action_space.shape[0]) and value.shape == (5,)
    value.sum().backward()  # the value reaches the critic alone
    actor_grad = wide.actor_encoder[0].weight.grad
    assert wide.critic_encoder[0].weight.grad.abs().sum() > 0 and (actor_grad is None or not actor_grad.any())
    assert sum(p.numel() for p in wide.parameters()) > sum(p.numel() for p in policy.parameters())
    # forward skips joining the features; the two halves (an LSTM goes between them) give the same numbers
    with torch.no_grad():
        halves = wide.decode_actions(wide.encode_observations(obs))
        assert torch.equal(halves[0].mean, dist.mean) and torch.equal(halves[1], value)
    with pytest.raises(APIUsageError, match='critic_hidden_size must be >= 0'):
        binding.Policy(env, critic_hidden_size=-1)
    env.close()


def test_an_lstm_runs_over_the_joined_actor_and_critic_features():
    """The encoding is the actor's and the critic's features side by side; an LSTM between the halves takes
    that width, and any other width is refused with the one to set."""
    from pufferlib.models import LSTMWrapper
    torch, env, _ = make_policy()
    wide = binding.Policy(env, critic_hidden_size=256)
    assert wide.encoding_width == 64 + 256
    with pytest.raises(APIUsageError, match='set both rnn.input_size and rnn.hidden_size to 320'):
        LSTMWrapper(env, wide, 128, 128)
    recurrent = LSTMWrapper(env, wide, 320, 320)
    obs = torch.randn(3, env.single_observation_space.shape[0])
    dist, value = recurrent.forward_eval(obs, recurrent.initial_state(3))
    assert dist.mean.shape == (3, env.single_action_space.shape[0]) and value.shape == (3,)
    segments = torch.randn(2, 4, env.single_observation_space.shape[0])
    dist, value = recurrent(segments, recurrent.initial_state(2))
    value.sum().backward()
    assert value.shape == (8,) and recurrent.lstm.weight_ih_l0.grad.abs().sum() > 0
    env.close()


def test_statistics_merge_like_one_pass_over_all_rows():
    torch, env, policy = make_policy()
    batches = [torch.randn(n, env.single_observation_space.shape[0]) * (i + 1) + i for i, n in enumerate((7, 50, 3))]
    for batch in batches:
        with torch.no_grad():
            policy(batch)
        policy(batch)  # an update between rollouts
    with torch.no_grad():
        policy(batches[0][:1])
    every = torch.cat(batches).double()
    np.testing.assert_allclose(policy.obs_mean.numpy(), every.mean(0).numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(policy.obs_var.numpy(), every.var(0, unbiased=False).numpy(), rtol=1e-6)
    env.close()


# --- training, checkpoints, evaluation ----------------------------------------------------------

SMALL = ['--vec.backend', 'Multiprocessing', '--vec.num-envs', '4', '--vec.num-workers', '2',
         '--train.bptt-horizon', '16', '--train.minibatch-size', '32', '--train.update-epochs', '2',
         '--train.log-interval', '0', '--train.checkpoint-interval', '2', '--env.max-episode-steps', '50']


def train_small(tmp_path, monkeypatch, steps=512, *flags):
    pytest.importorskip('torch')
    from pufferlib import config as configuration
    from pufferlib import train as training
    monkeypatch.chdir(tmp_path)
    config = configuration.load('mujoco_inverted_pendulum', [*SMALL, '--train.total-timesteps', str(steps), *flags])
    return training.train('mujoco_inverted_pendulum', config=config, quiet=True)


def test_training_smoke_saves_the_statistics_and_eval_uses_them(tmp_path, monkeypatch):
    import torch

    from pufferlib import evaluate
    from pufferlib.checkpoint import load_checkpoint, load_policy_weights
    summary = train_small(tmp_path, monkeypatch)
    assert summary['global_step'] >= 512
    state = load_checkpoint(summary['checkpoint'])
    saved = state['policy']
    # Every rollout but the last has been applied: 7 of 8 epochs of 4 rows x 16 steps (+ bootstrap rows).
    assert float(saved['obs_count']) >= 7 * 64
    assert float(saved['obs_var'].min()) > 0 and float(saved['obs_mean'].abs().max()) > 0
    env = pufferlib.make('mujoco_inverted_pendulum')
    from pufferlib import config as configuration
    from pufferlib import models
    policy = models.make_policy(env, configuration.load('mujoco_inverted_pendulum'))  # the run's widths
    load_policy_weights(policy, state, summary['checkpoint'])
    for key in ('obs_mean', 'obs_var', 'obs_count'):
        assert torch.equal(getattr(policy, key), saved[key])
    env.close()
    result = evaluate.evaluate('mujoco_inverted_pendulum', summary['run_dir'], episodes=2)
    assert result['episodes'] == 2 and np.isfinite(result['mean_return'])


def test_resume_continues_from_the_saved_statistics(tmp_path, monkeypatch):
    from pufferlib import train as training
    from pufferlib.checkpoint import load_checkpoint
    first = train_small(tmp_path, monkeypatch, 256)
    count = float(load_checkpoint(first['checkpoint'])['policy']['obs_count'])
    resumed = training.train('mujoco_inverted_pendulum', resume=first['run_dir'],
                             flags=['--train.total-timesteps', '512'], quiet=True)
    assert resumed['global_step'] >= 512
    assert float(load_checkpoint(resumed['checkpoint'])['policy']['obs_count']) > count


def test_eval_writes_a_video_or_says_why_not(tmp_path, monkeypatch):
    """As a user runs it, in its own process: a GL context is process-wide state that other tests' packages
    (SDL, PyOpenGL) may already have claimed in this one."""
    summary = train_small(tmp_path, monkeypatch, 128, '--train.checkpoint-interval', '1')
    video = tmp_path / 'pendulum.gif'
    out = subprocess.run([sys.executable, '-m', 'pufferlib.cli', 'eval', 'mujoco_inverted_pendulum', '--checkpoint',
                          summary['run_dir'], '--episodes', '1', '--max-steps', '20', '--video', str(video)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    if out.returncode == 2 and 'MuJoCo cannot render here' in out.stderr:  # no offscreen GL on this machine
        assert 'Traceback' not in out.stderr and 'MUJOCO_GL' in out.stderr
        pytest.skip(out.stderr.strip())
    assert out.returncode == 0, out.stderr
    assert video.read_bytes()[:4] == b'GIF8'
    assert 'mean episode return' in out.stdout
