"""Checkpoints: from what a user names to the file, the config it was trained with, and its env and policy.

    found = find_checkpoint('puffer_squared', 'latest')   # a RUN directory, its checkpoints/, a file, a run id
    with found.open(num_envs=1) as (env, policy):         # the env options it was trained with, the weights loaded
        ...
    state = load_checkpoint(path, policy)                 # one file, checked to fit `policy`

`puffer eval`, `puffer export` and `puffer web` name checkpoints alike and load them here; training's
resume finds its run itself (pufferlib/train.py) and reads the file with `load_checkpoint`. Whether saved
weights fit a policy (the [policy]/[rnn] settings a state dict carries) is the policy's own check, in
pufferlib/models.py, so that the trainer's load_state_dict makes it too.
"""
from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

import pufferlib
from pufferlib import config as configuration
from pufferlib import invocation, rundir
from pufferlib.models import make_policy, saved_settings, weights_misfit
from pufferlib.rundir import CheckpointError


def load_checkpoint(path: str, policy: nn.Module | None = None, data: bytes | None = None) -> dict:
    """A checkpoint file read with weights_only=True (`data`: its bytes, when the caller has read them, e.g.
    to hash them); checked to fit `policy` when one is given."""
    if data is None and not os.path.exists(path):
        raise CheckpointError(f'checkpoint {path} does not exist')
    try:
        state = torch.load(io.BytesIO(data) if data is not None else path, map_location='cpu', weights_only=True)
    except Exception as e:  # torch raises several types for truncated or foreign files
        raise CheckpointError(f'checkpoint {path} is corrupt or not a pufferlib checkpoint ({type(e).__name__}: '
                              f'{str(e).splitlines()[0] if str(e) else ""}); use an earlier one from its '
                              'checkpoints/ folder') from None
    if not isinstance(state, dict) or 'policy' not in state:
        raise CheckpointError(f'checkpoint {path} is not a pufferlib checkpoint (no policy weights)')
    if policy is not None:
        load_policy_weights(policy, state, path)
    return state


def load_policy_weights(policy: nn.Module, state: dict, path: str) -> None:
    """The checkpoint's policy weights into `policy`, or a CheckpointError that names the file and its env,
    and when the weights' names or shapes differ, those and the [policy]/[rnn] settings that changed."""
    misfit = weights_misfit(policy, state['policy'], saved_settings(state['policy']))
    if misfit:
        raise CheckpointError(f'checkpoint {path} does not fit this policy (env {state.get("env")!r}): {misfit}')
    try:
        policy.load_state_dict(state['policy'])
    except RuntimeError as e:
        raise CheckpointError(f'checkpoint {path} does not fit this policy (env {state.get("env")!r}): '
                              f'{str(e).splitlines()[0]}') from None


def resolve(env_name: str, checkpoint: str) -> tuple[str, str]:
    """(checkpoint file, its run directory) from a checkpoint file, a run directory, its checkpoints
    folder, a run id or `latest` (pufferlib.rundir.latest_run of this env)."""
    if checkpoint == 'latest':
        checkpoint = rundir.latest_run(env_name)
    if not os.path.exists(checkpoint) and os.sep not in checkpoint:
        in_experiments = os.path.join(rundir.experiments_dir(), checkpoint)  # a run id, as --resume takes
        if os.path.isdir(in_experiments):
            checkpoint = in_experiments
    if not os.path.isdir(checkpoint):
        return checkpoint, os.path.dirname(os.path.dirname(os.path.abspath(checkpoint)))
    if os.path.isdir(os.path.join(checkpoint, 'checkpoints')):
        path = rundir.latest_checkpoint(checkpoint)
        if path is None:
            raise CheckpointError(f'run directory {checkpoint} has no checkpoints yet (its checkpoints/ folder '
                                  'is empty): train it longer, or pass another run')
        return path, checkpoint
    names = sorted(n for n in os.listdir(checkpoint) if n.startswith('epoch-') and n.endswith('.pt'))
    if names:  # a run's checkpoints folder (the names sort by epoch): its newest, and the run above it
        return os.path.join(checkpoint, names[-1]), os.path.dirname(os.path.abspath(checkpoint))
    raise CheckpointError(f'{checkpoint} holds no checkpoints: pass a run directory (with checkpoints/ in it), '
                          'its checkpoints folder, an epoch-*.pt file, a run id or latest')


@dataclass
class Checkpoint:
    """A checkpoint file of env `env_name`, its saved state and the config to rebuild its policy with."""

    env_name: str
    path: str
    run_dir: str
    state: dict
    config: dict

    @property
    def global_step(self) -> int:
        return int(self.state.get('global_step', 0))

    def policy(self, env: Any) -> nn.Module:
        """The config's policy built on `env`, with the checkpoint's weights, in eval mode."""
        policy = make_policy(env, self.config)
        load_policy_weights(policy, self.state, self.path)
        return policy.eval()

    @contextlib.contextmanager
    def open(self, **env_options: Any) -> Iterator[tuple[Any, nn.Module]]:
        """(env, policy): the env made with the config's options overridden by `env_options`, closed on the
        way out, and `policy(env)`."""
        env = pufferlib.make(self.env_name, **{**self.config['env'], **env_options})
        try:
            yield env, self.policy(env)
        finally:
            env.close()


def find_checkpoint(env_name: str, checkpoint: str, config: dict | None = None, command: str = 'eval') -> Checkpoint:
    """The checkpoint a user names (see `resolve`), read and checked to be of `env_name`; its config is
    `saved_config`'s (the one the weights were trained with), unless `config` is given. `command`: the puffer
    command the user ran, which an error's hint repeats."""
    path, run_dir = resolve(env_name, checkpoint)
    state = load_checkpoint(path)
    trained = state.get('env')
    if isinstance(trained, str) and trained and trained != env_name:
        raise CheckpointError(f'checkpoint {path} was trained on {trained}, not {env_name}: use it with '
                              f'`{invocation.command(command, trained, "--checkpoint", checkpoint)}`, or pass a '
                              f'checkpoint of {env_name}')
    if config is None:
        config = saved_config(run_dir, env_name, state, path)
    return Checkpoint(env_name, path, run_dir, state, config)


def saved_config(run_dir: str, env_name: str, state: dict | None = None, path: str = 'checkpoint') -> dict:
    """The config a checkpoint was trained with, over today's defaults: the one the checkpoint carries
    (`state`, read from `path`), which wins over its run's config.toml, since it is what these weights were
    trained with (the two agree unless the file was edited); for checkpoints written before they carried
    one, the run's config.toml, or the env's config when the run has none (a checkpoint copied out of its
    run)."""
    carried = state.get('config') if state is not None else None
    if isinstance(carried, dict):
        carried = {section: values for section, values in carried.items() if section != '_meta'}
        return configuration.merge(configuration.defaults(), carried, f'the config in checkpoint {path}')
    config_path = os.path.join(run_dir, 'config.toml')
    if not os.path.exists(config_path):
        return configuration.load(env_name)
    saved = configuration.read(config_path)
    saved.pop('_meta', None)
    return configuration.merge(configuration.defaults(), saved, config_path)
