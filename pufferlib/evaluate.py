"""`puffer eval` (play a checkpoint, write a video) and `puffer plot` (learning curves)."""
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import threadpoolctl
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import cpus
from pufferlib import registry
from pufferlib.checkpoint import find_checkpoint
from pufferlib.export import native_bytes
from pufferlib.distributions import Logits, MixedLogits, mask_logits, sample_logits
from pufferlib.native import NativeNet, seed_state, twin_header

if TYPE_CHECKING:
    from pufferlib.trainer import RecurrentPolicy


def _render_kwargs(env_name: str) -> dict[str, Any]:
    family = registry.lookup(env_name).family
    if family == 'ocean':
        return {'num_envs': 1}
    return {'render_mode': 'rgb_array'} if family == 'gymnasium' else {}


def greedy_action(logits: Logits) -> torch.Tensor:
    """The most likely action: the argmax of every head (Discrete, and each sub-action of a MultiDiscrete),
    the mean for Box actions, both side by side for a mixed action; what ocean/puffernet.h picks without a
    generator."""
    if isinstance(logits, MixedLogits):
        choices = greedy_action(logits.discrete)
        return torch.cat([choices.to(logits.continuous.mean.dtype), logits.continuous.mean], dim=-1)
    if isinstance(logits, torch.distributions.Distribution):
        return logits.mean
    if isinstance(logits, (tuple, list)):
        return torch.stack([head.argmax(-1) for head in logits], dim=-1)
    return logits.argmax(-1)


class _Player:
    """A checkpoint's policy choosing actions for every row of an env, as in training: illegal actions
    (where the env publishes masks) are never played, and an LSTM's state is cleared where an episode ended."""

    def __init__(self, env: Any, policy: torch.nn.Module, deterministic: bool = False) -> None:
        self.env, self.deterministic, self.policy = env, deterministic, policy
        self.recurrent = getattr(self.policy, 'is_recurrent', False)
        # nn.Module types the methods a recurrent policy adds as tensors or modules: the same object, seen
        # through them.
        self.rnn = cast('RecurrentPolicy', self.policy) if self.recurrent else None
        # The rows' memory; a feed-forward policy has none.
        self.state = self.rnn.initial_state(env.num_agents) if self.rnn is not None else {}

    def act(self, obs: np.ndarray) -> np.ndarray:
        env = self.env
        with torch.no_grad():
            tensor = torch.from_numpy(np.asarray(obs))
            logits, _ = self.rnn.forward_eval(tensor, self.state) if self.rnn is not None else self.policy(tensor)
            legal = getattr(env, 'action_masks', None)
            if legal is not None:
                logits = mask_logits(logits, torch.from_numpy(legal.copy()))
            action = greedy_action(logits) if self.deterministic else sample_logits(logits)[0]
        return action.numpy().reshape(env.actions.shape).astype(env.actions.dtype)

    def episodes_ended(self, terminals: np.ndarray, truncations: np.ndarray) -> None:
        if self.recurrent:
            keep = torch.from_numpy(~(terminals | truncations)).float().unsqueeze(1)
            for tensor in self.state.values():
                tensor *= keep


class NativePlayer:
    """`puffer eval --native`: the policy, exported in memory, choosing actions through ocean/puffernet.h
    for every row of an env; the same interface as the torch player."""

    def __init__(self, env: Any, policy: torch.nn.Module, deterministic: bool = False, seed: int = 0) -> None:
        self.env = env
        self.net = NativeNet(native_bytes(policy)[1], env.num_agents, twin_header(policy))
        self.rng = None if deterministic else seed_state(seed)

    def act(self, obs: np.ndarray) -> np.ndarray:
        env = self.env
        actions = self.net.act(obs, getattr(env, 'action_masks', None), self.rng)
        return actions.reshape(env.actions.shape).astype(env.actions.dtype)

    def episodes_ended(self, terminals: np.ndarray, truncations: np.ndarray) -> None:
        for row in np.flatnonzero(np.asarray(terminals | truncations).reshape(-1)):
            self.net.reset(int(row))


@contextlib.contextmanager
def learner_threads(config: dict) -> Iterator[int]:
    """torch's threads and the BLAS/OpenMP pools held to the trainer's rule (pufferlib.cpus.learner_threads:
    train.torch_threads, else the CPUs the cgroup allows; the env steps in this process, so no worker is
    counted) while a policy plays, and put back afterwards. Left alone, torch sizes itself from the host's
    cores: a 64-world check beside a training job took 20 minutes with torch's default, 96 s with one."""
    threads = cpus.learner_threads(config['train']['torch_threads'], 0)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpoolctl.threadpool_limits(threads):
            yield threads
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def _seeded_sampling(seed: int) -> Iterator[None]:
    """Torch's global generator, which samples the policy's actions, seeded from `seed` and put back as it
    was afterwards: with the env seeded too, one seed gives one set of returns (a stochastic policy drew
    its actions from the unseeded generator, so every run differed)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def evaluate(env_name: str, checkpoint: str, episodes: int = 3, video: str | None = None, fps: int = 30, seed: int = 0,
             max_steps: int = 100_000, deterministic: bool = False, native: bool = False) -> dict:
    """Play the checkpoint's policy for `episodes` episodes (or `max_steps` steps); the returns, the means of
    every stat the env logs (`stats`: episode_return, score, perf, ...), and the video's path when asked."""
    for name, value in (('episodes', episodes), ('max_steps', max_steps), ('fps', fps)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise pufferlib.APIUsageError(f'{name} must be a positive number, got {value!r}')
    if video:
        check_video_path(video)  # before any episode is played, not after all of them
    found = find_checkpoint(env_name, checkpoint)
    frames: list[np.ndarray] = []
    returns: list[float] = []
    totals: dict[str, float] = {}
    count = 0.0
    with found.open(**_render_kwargs(env_name)) as (env, policy), learner_threads(found.config):
        player: _Player | NativePlayer
        if native:  # the same policy, exported in memory and run by ocean/puffernet.h
            player = NativePlayer(env, policy, deterministic, seed)
        else:
            player = _Player(env, policy, deterministic)
        obs, _ = env.reset(seed=seed)
        with _seeded_sampling(seed):
            for _ in range(max_steps):
                if video:
                    frame = env.render()
                    if frame is not None:
                        frames.append(np.asarray(frame, dtype=np.uint8))
                obs, _, terminals, truncations, infos = env.step(player.act(obs))
                player.episodes_ended(terminals, truncations)
                for info in infos:
                    count += _accumulate(totals, info)
                    if 'episode_return' in info:
                        returns.append(info['episode_return'])
                if len(returns) >= episodes:
                    break
    written = write_video(frames, video, fps) if video and frames else None
    if not returns:
        kept = f'; the {len(frames)} frames played are in {written}' if written else ''
        raise pufferlib.APIUsageError(f'no episode of {env_name} finished in its --max-steps {max_steps:,} steps'
                                      f'{kept}: raise --max-steps')
    if video and written is None:
        raise pufferlib.APIUsageError(f'{env_name} rendered no frames, so there is no video to write')
    result = {'episodes': len(returns), 'mean_return': float(np.mean(returns)), 'returns': returns,
              'stats': {key: total / count for key, total in totals.items()}, 'checkpoint': found.path,
              'global_step': found.global_step}
    if written:
        result['video'] = written
    return result


def _accumulate(totals: dict[str, float], entry: dict) -> float:
    """Add an episode log to `totals`, weighted by the episodes it averages (`n`; an Ocean env logs the
    means of the episodes that ended since its last log); returns that weight."""
    n = float(entry.get('n', 1))
    for key, value in entry.items():
        if key != 'n' and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            totals[key] = totals.get(key, 0.0) + float(value) * n
    return n


def episode_means(env_name: str, checkpoint: str | None = None, config: dict | None = None, num_envs: int = 64,
                  per_env: int = 8, seed: int = 12345, max_steps: int = 1_000_000, **env_options: Any) -> dict:
    """The env's logged episode stats (score, perf, episode_return, ...) averaged over whole episodes,
    each counted once: `num_envs` envs start together and play until every agent row has finished
    `per_env` episodes; only the episodes still running then (at most one per row) are left out.

    Why not the training rows: a row averages the episodes that ended since the last row, and when
    every env starts at once the first to end are the short ones (in trash_pickup, the games where all
    the trash went in the bins early), so a row can read 100% while most episodes are still running.
    Here every env's episodes count, in the proportion they occur.

    With `checkpoint` (a file, a run directory or `latest`) its policy acts (config: the run's own,
    unless given); without one the env's actions stay as they are, for scripted play
    (e.g. `autopilot=True` in env_options). Returns the means plus `episodes`, the count."""
    for name, value in (('num_envs', num_envs), ('per_env', per_env), ('max_steps', max_steps)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise pufferlib.APIUsageError(f'{name} must be a positive whole number, got {value!r}')
    player = None
    found = find_checkpoint(env_name, checkpoint, config) if checkpoint is not None else None
    if found is not None:
        config = found.config
    elif config is None:
        config = configuration.load(env_name)
    env = pufferlib.make(env_name, seed=seed, **{**config['env'], 'num_envs': num_envs, **env_options})
    try:
        if found is not None:
            player = _Player(env, found.policy(env))
        obs, _ = env.reset(seed=seed)
        finished = np.zeros(env.num_agents, dtype=np.int64)
        totals: dict[str, float] = {}
        count = 0.0
        with _seeded_sampling(seed), learner_threads(config):
            for _ in range(max_steps):
                obs, _, terminals, truncations, infos = env.step(player.act(obs) if player else env.actions)
                done = np.asarray(terminals | truncations).reshape(-1)
                finished += done
                if player:
                    player.episodes_ended(terminals, truncations)
                log = env.log() if hasattr(env, 'log') else None
                for entry in list(infos) + [log]:
                    if entry:
                        count += _accumulate(totals, entry)
                if finished.min() >= per_env:
                    break
            else:
                raise pufferlib.APIUsageError(f'{env_name}: some agent rows finished fewer than {per_env} episodes in '
                                              f'{max_steps:,} steps; pass a larger max_steps or a smaller per_env')
    finally:
        env.close()
    return {**{key: total / count for key, total in totals.items()}, 'episodes': int(count)}


# What writes each kind of video: the modules, and the packages a user installs (both in the `train` extra).
VIDEO_WRITERS = {'.gif': (('PIL',), 'Pillow'), '.mp4': (('imageio', 'imageio_ffmpeg'), 'imageio and imageio-ffmpeg')}


def check_video_path(path: str) -> None:
    """A video path's kind and the packages that write it, checked before anything is played."""
    kind = os.path.splitext(path.lower())[1]
    if kind not in VIDEO_WRITERS:
        raise pufferlib.APIUsageError(f'video path {path!r} must end in .gif or .mp4')
    modules, packages = VIDEO_WRITERS[kind]
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        other = 'mp4' if kind == '.gif' else 'gif'
        raise pufferlib.MissingDependencyError(f'writing {kind} needs {packages}: {install_line("train")}, or '
                                               f'write a .{other}') from None


def install_line(extra: str) -> str:
    """How to install an extra: from this repository, whose pins are in constraints.txt (the public index's
    `pufferlib` is another project)."""
    return f'pip install -c constraints.txt -e ".[{extra}]" in this repository'


def write_video(frames: list[np.ndarray], path: str, fps: int = 30) -> str:
    """GIF through Pillow; MP4 through imageio and its bundled ffmpeg (imageio-ffmpeg)."""
    check_video_path(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.lower().endswith('.gif'):
        from PIL import Image
        images = [Image.fromarray(f) for f in frames]
        images[0].save(path, save_all=True, append_images=images[1:], duration=max(1, int(1000 / fps)), loop=0)
        return path
    import imageio.v3 as iio
    # H.264 wants sides divisible by 16: pad with black rather than let imageio resize (and warn).
    video = np.stack(frames)
    pad = [(0, 0), (0, -video.shape[1] % 16), (0, -video.shape[2] % 16)] + [(0, 0)] * (video.ndim - 3)
    iio.imwrite(path, np.pad(video, pad), fps=fps)
    return path


def read_metrics(run: str) -> list[dict]:
    """The rows of a run's metrics.jsonl; a line cut short (a run killed while writing it) is skipped
    with a warning on stderr."""
    path = run if run.endswith('.jsonl') else os.path.join(run, 'metrics.jsonl')
    if not os.path.exists(path):
        raise pufferlib.APIUsageError(f'{run} has no metrics.jsonl: pass a run directory from experiments/')
    rows = []
    with open(path, errors='replace') as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict) or 'global_step' not in row:
                print(f'puffer plot: warning: skipped line {number} of {path}, which is not a whole metrics row '
                      '(a run stopped while writing it?)', file=sys.stderr)
                continue
            rows.append(row)
    return rows


def plot(runs: list[str], metric: str = 'env/episode_return', out: str | None = None, title: str | None = None) -> str:
    """One learning curve per run (metric against global_step) in a PNG."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    curves = {run: [r for r in read_metrics(run) if metric in r] for run in runs}  # a missing run fails first
    out = out or os.path.join(runs[0] if os.path.isdir(runs[0]) else os.path.dirname(runs[0]), 'curve.png')
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise pufferlib.APIUsageError(f'cannot write {out}: the folder {folder} does not exist')
    extension = os.path.splitext(out)[1].lstrip('.').lower()
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close('all')
    if extension not in formats:
        raise pufferlib.APIUsageError(f'cannot write {out}: the file name must end in one of '
                                      f'{", ".join("." + f for f in sorted(formats))} (e.g. curve.png)')
    fig, ax = plt.subplots(figsize=(7, 4))
    plotted = 0
    for run, rows in curves.items():
        if not rows:
            continue
        ax.plot([r['global_step'] for r in rows], [r[metric] for r in rows], label=os.path.basename(run.rstrip('/')))
        plotted += 1
    if not plotted:
        raise pufferlib.APIUsageError(f'no run has metric {metric!r}; metrics are the keys of metrics.jsonl')
    ax.set_xlabel('agent steps')
    ax.set_ylabel(metric)
    ax.set_title(title or metric)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
