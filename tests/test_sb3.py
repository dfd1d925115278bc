"""pufferlib.sb3.SB3VecEnv: our vector envs as an SB3 VecEnv, checked against SB3's own wrappers and
by a short SB3 PPO run on CartPole through Multiprocessing workers."""
import numpy as np
import pytest

import pufferlib.vector
from pufferlib.pufferenv import APIUsageError

pytest.importorskip('stable_baselines3')
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import VecCheckNan, VecMonitor  # noqa: E402

from pufferlib.sb3 import SB3VecEnv  # noqa: E402


def cartpole(num_envs=4, **kwargs):
    return SB3VecEnv(pufferlib.vector.make('CartPole-v1', backend='Multiprocessing', num_envs=num_envs,
                                           num_workers=2, **kwargs))


def test_the_vecenv_contract_through_sb3_wrappers():
    env = VecMonitor(VecCheckNan(cartpole(), raise_exception=True))
    try:
        assert env.num_envs == 4 and env.render_mode is None
        env.seed(3)
        first = env.reset()
        assert first.shape == (4, 4) and first.dtype == np.float32
        assert all(env.observation_space.contains(row) for row in first)
        ended, episodes = 0, []
        for _ in range(300):
            obs, rewards, dones, infos = env.step(np.array([env.action_space.sample() for _ in range(4)]))
            assert obs.shape == (4, 4) and rewards.shape == (4,) and dones.dtype == bool and len(infos) == 4
            for done, info in zip(dones, infos):
                assert done == ('terminal_observation' in info)
                if done:
                    ended += 1
                    assert info['terminal_observation'].shape == (4,)
                    episodes.append(info['episode'])  # VecMonitor's record, from our rewards and dones
        assert ended > 4 and all(e['l'] >= 8 and e['r'] == e['l'] for e in episodes)  # CartPole: +1 a step
        env.seed(3)
        np.testing.assert_array_equal(env.reset(), first)  # SB3's seed reaches our envs on the next reset
        assert env.get_attr('num_agents') == [4] * 4
        assert env.env_is_wrapped(object) == [False] * 4
        with pytest.raises(AttributeError, match='no attribute'):
            env.get_attr('nope')
        with pytest.raises(APIUsageError, match='worker processes'):
            env.env_method('render')
    finally:
        env.close()


def test_a_batched_pool_is_refused_with_what_to_do():
    vecenv = pufferlib.vector.make('CartPole-v1', backend='Multiprocessing', num_envs=4, num_workers=2, batch_size=2)
    with pytest.raises(APIUsageError, match='without batch_size'):
        SB3VecEnv(vecenv)
    vecenv.close()


def test_sb3_ppo_runs_and_logs_episodes():
    env = VecMonitor(cartpole())
    model = PPO('MlpPolicy', env, n_steps=64, batch_size=128, n_epochs=1, seed=0, device='cpu')
    model.learn(512)
    assert model.num_timesteps == 512 and len(model.ep_info_buffer) > 0
    env.close()


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_sb3_ppo_learns_cartpole():
    """SB3's tuned CartPole settings (rl-baselines3-zoo), 60k steps: far above a random policy's ~22."""
    import torch
    torch.set_num_threads(1)  # the network is tiny; more threads only wait on the env workers' cores
    env = VecMonitor(cartpole(num_envs=8))
    model = PPO('MlpPolicy', env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                ent_coef=0.0, learning_rate=1e-3, clip_range=0.2, seed=0, device='cpu')
    model.learn(60_000)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=16, warn=False)
    env.close()
    assert mean > 150
