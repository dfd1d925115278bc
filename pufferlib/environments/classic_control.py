"""Gymnasium classic control under short names (classic_cartpole, ...).

The Gymnasium ids (CartPole-v1, ...) also work with `pufferlib.make`; these names exist so the
family has a default config (pufferlib/config/classic_control.toml) and a place in the catalogue.
"""
from types import SimpleNamespace
from typing import Any

from pufferlib.environments._support import check_name
from pufferlib.pufferenv import PufferEnv

GYMNASIUM_IDS = {
    'classic_cartpole': 'CartPole-v1',
    'classic_acrobot': 'Acrobot-v1',
    'classic_mountaincar': 'MountainCar-v0',
    'classic_mountaincar_continuous': 'MountainCarContinuous-v0',
    'classic_pendulum': 'Pendulum-v1',
}


def env_names() -> list[str]:
    return list(GYMNASIUM_IDS)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, max_episode_steps: int | None = None,
         **kwargs: Any) -> PufferEnv:
    """kwargs go to gymnasium.make (e.g. render_mode); max_episode_steps overrides the time limit."""
    check_name(name, env_names(), 'classic control')
    import gymnasium
    from pufferlib.emulation import GymnasiumPufferEnv
    if max_episode_steps is not None:
        kwargs['max_episode_steps'] = int(max_episode_steps)
    return GymnasiumPufferEnv(env_creator=lambda: gymnasium.make(GYMNASIUM_IDS[name], **kwargs), buf=buf, seed=seed)
