"""ViZDoom (Doom from pixels, the `vizdoom` wheel with its own scenarios and the free Freedoom WADs):
`vizdoom_basic`, `vizdoom_defend_the_center`, `vizdoom_health_gathering`, `vizdoom_deadly_corridor`.

Each observation is two fields, so the emulation lays it out as a structured row:
- `screen`: uint8 [H, W, C], the first-person view downsampled from ViZDoom's smallest resolution that
  covers it (60x80 by default; `resolution='84x84'`, any HxW up to 240x320), grey (C=1) or colour (C=3,
  `color=True`). Integer factors are averaged over blocks, others sampled at the nearest pixel.
- `variables`: float32 [k], the scenario's game variables (HEALTH, AMMO2, ... as its .cfg lists them),
  or the ones named in `game_variables` (e.g. 'HEALTH,AMMO2,KILLCOUNT').

Actions: Discrete(buttons), one of the scenario's buttons held for `frame_skip` tics (4 by default; the
rewards of those tics are summed). Episodes end as terminals when the player dies or the scenario's
goal ends them (basic: the monster is killed), as truncations at the scenario's timeout.

`reward_scale` multiplies the rewards the trainer sees (basic pays +101 for a kill, -1 a tic), after the
emulation has summed them into `episode_return`, which stays in the scenario's own units.

The game runs headless (no window, no sound); `render()` returns the last frame in colour at the
source resolution, whatever `color` says, for `puffer eval --video`.
"""
import os
import re
import tempfile
from types import SimpleNamespace
from typing import Any, SupportsInt

import gymnasium
import numpy as np
import numpy.typing as npt

from pufferlib.emulation import GymnasiumPufferEnv
from pufferlib.environments import absent, check_options, install_line
from pufferlib.environments._support import check_name, lazy_policy
from pufferlib.pufferenv import APIUsageError, MissingDependencyError, PufferEnv

# name -> the scenario's config file in vizdoom.scenarios_path
SCENARIOS = {
    'vizdoom_basic': 'basic.cfg',
    'vizdoom_defend_the_center': 'defend_the_center.cfg',
    'vizdoom_health_gathering': 'health_gathering.cfg',
    'vizdoom_deadly_corridor': 'deadly_corridor.cfg',
}
EXTRA = 'vizdoom'
# ViZDoom's 4:3 resolutions we render at: the smallest one that covers the requested size.
SOURCES = ((120, 160, 'RES_160X120'), (240, 320, 'RES_320X240'))
GREY = np.array([0.299, 0.587, 0.114], np.float32)  # ITU-R BT.601 luma, as most Atari/Doom pipelines use


def env_names() -> list[str]:
    return list(SCENARIOS)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, resolution: str = '60x80',
         color: bool = False, frame_skip: int = 4, game_variables: str | None = None, reward_scale: float = 1.0,
         render_mode: str | None = None) -> PufferEnv:
    check_name(name, env_names(), 'ViZDoom')
    height, width = parse_resolution(resolution)
    check_options('vizdoom', name, {'frame_skip': frame_skip, 'reward_scale': reward_scale, 'color': color})
    if absent('vizdoom'):
        raise MissingDependencyError(f'{name} needs vizdoom: {install_line(EXTRA)}')
    variables = None if game_variables is None else [v.strip().upper() for v in str(game_variables).split(',')
                                                     if v.strip()]
    scenario = SCENARIOS[name]

    def creator() -> gymnasium.Env:
        return DoomEnv(scenario, height, width, bool(color), int(frame_skip), variables, render_mode)
    return DoomPufferEnv(env_creator=creator, buf=buf, seed=seed, reward_scale=float(reward_scale))


def parse_resolution(resolution: str) -> tuple[int, int]:
    match = re.fullmatch(r'\s*(\d+)\s*[xX]\s*(\d+)\s*', str(resolution))
    if match is None:
        raise APIUsageError(f"resolution must be 'HxW' (height x width, e.g. '60x80' or '84x84'), got {resolution!r}")
    height, width = int(match.group(1)), int(match.group(2))
    if not (8 <= height <= SOURCES[-1][0] and 8 <= width <= SOURCES[-1][1]):
        raise APIUsageError(f'resolution {height}x{width} is out of range: height 8..{SOURCES[-1][0]}, width '
                            f'8..{SOURCES[-1][1]}')
    return height, width


def downsample_index(source: int, target: int) -> np.ndarray:
    """The source pixel nearest to each target pixel's centre, along one axis."""
    return np.minimum(((np.arange(target) + 0.5) * source / target).astype(np.int64), source - 1)


class DoomEnv(gymnasium.Env):
    """One ViZDoom game as a Gymnasium env (see the module docstring for spaces and episodes)."""

    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, scenario: str, height: int, width: int, color: bool, frame_skip: int,
                 variables: list[str] | None, render_mode: str | None = None) -> None:
        import vizdoom
        from gymnasium import spaces
        self.render_mode = render_mode
        self.height, self.width, self.color, self.frame_skip = height, width, color, frame_skip
        self.source = next((h, w, res) for h, w, res in SOURCES if h >= height and w >= width)
        game = vizdoom.DoomGame()
        game.load_config(os.path.join(vizdoom.scenarios_path, scenario))
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        game.set_console_enabled(False)
        # The engine writes its settings file (_vizdoom.ini) into the working directory unless told where.
        self._ini = os.path.join(tempfile.gettempdir(), f'pufferlib-vizdoom-{os.getpid()}-{id(self)}.ini')
        game.set_doom_config_path(self._ini)
        game.set_mode(vizdoom.Mode.PLAYER)
        game.set_screen_format(vizdoom.ScreenFormat.RGB24)
        game.set_screen_resolution(getattr(vizdoom.ScreenResolution, self.source[2]))
        if variables is not None:
            known = [v for v in dir(vizdoom.GameVariable) if v.isupper()]
            unknown = [v for v in variables if v not in known]
            if unknown or not variables:
                raise APIUsageError(f'game_variables: {", ".join(unknown) or "none given"} not ViZDoom game '
                                    'variables; name them comma-separated, e.g. "HEALTH,AMMO2,KILLCOUNT" (vizdoom.'
                                    'GameVariable lists all)')
            game.set_available_game_variables([getattr(vizdoom.GameVariable, v) for v in variables])
        game.init()
        self.game = game
        self.buttons = len(game.get_available_buttons())
        self.num_variables = max(1, game.get_available_game_variables_size())
        self.timeout = game.get_episode_timeout()
        self._actions = np.eye(self.buttons, dtype=np.int32).tolist()
        src_h, src_w = self.source[0], self.source[1]
        self._block = (src_h // height, src_w // width) if src_h % height == 0 and src_w % width == 0 else None
        self._rows, self._cols = downsample_index(src_h, height), downsample_index(src_w, width)
        self._frame = np.zeros((src_h, src_w, 3), np.uint8)
        self._screen = np.zeros((height, width, 3 if color else 1), np.uint8)
        self._variables = np.zeros(self.num_variables, np.float32)
        self.observation_space = spaces.Dict({
            'screen': spaces.Box(0, 255, self._screen.shape, np.uint8),
            'variables': spaces.Box(-np.inf, np.inf, (self.num_variables,), np.float32),
        })
        self.action_space = spaces.Discrete(self.buttons)

    def _observe(self) -> dict[str, np.ndarray]:
        state = self.game.get_state()
        if state is not None:  # None once the episode is over: the last frame stands
            self._frame = state.screen_buffer
            if state.game_variables is not None and len(state.game_variables):
                self._variables[:] = state.game_variables
        if self._block is not None:
            bh, bw = self._block
            small = self._frame.reshape(self.height, bh, self.width, bw, 3).mean(axis=(1, 3), dtype=np.float32)
        else:
            small = self._frame[self._rows][:, self._cols].astype(np.float32)
        if self.color:
            self._screen[...] = small + 0.5
        else:
            self._screen[..., 0] = small @ GREY + 0.5
        return {'screen': self._screen.copy(), 'variables': self._variables.copy()}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # the engine's own generator: monster placement, damage rolls
            self.game.set_seed(int(seed) % 2**31)
        self.game.new_episode()
        self._variables[:] = 0
        return self._observe(), {}

    def step(self, action: SupportsInt) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, float]]:
        reward = self.game.make_action(self._actions[int(action)], self.frame_skip)
        done = self.game.is_episode_finished()
        ob = self._observe()
        timed_out = done and self.timeout > 0 and self.game.get_episode_time() >= self.timeout
        return ob, float(reward), bool(done and not timed_out), bool(timed_out), {}

    def render(self) -> np.ndarray:
        return self._frame.copy()

    def close(self) -> None:
        self.game.close()
        if os.path.exists(self._ini):
            os.remove(self._ini)


class DoomPufferEnv(GymnasiumPufferEnv):
    """The emulated Doom env, its rewards scaled by `reward_scale` after the emulation has summed the
    raw ones into `episode_return`."""

    def __init__(self, *args: Any, reward_scale: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reward_scale = reward_scale

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, terminals, truncations, infos = super().step(actions)
        if self.reward_scale != 1.0:
            rewards *= self.reward_scale
        return obs, rewards, terminals, truncations, infos


def _build_policy() -> type:
    """The family's policy class, defined here because it needs torch (see lazy_policy)."""
    import torch
    from torch import nn

    from pufferlib import models
    from pufferlib.emulation import Nativizer

    class Policy(models.Policy):
        """Screen through a small conv stack (the Nature DQN's, sized for 60x80), game variables through
        a linear layer (scaled by 1/100: health and ammo run to about 100), joined into `hidden_size`."""

        def __init__(self, env: Any, hidden_size: int = 256, channels: tuple[int, ...] = (32, 64, 64)) -> None:
            super().__init__(env, hidden_size)
            dtype = env.obs_dtype
            if dtype is None or 'screen' not in (dtype.names or ()) or 'variables' not in (dtype.names or ()):
                raise APIUsageError('the ViZDoom policy reads observations with screen and variables fields '
                                    '(pufferlib.environments.vizdoom); use another policy class for this env')
            self.nativize = Nativizer(dtype)
            h, w, c = dtype['screen'].shape
            c1, c2, c3 = channels
            self.conv = nn.Sequential(
                models.layer_init(nn.Conv2d(c, c1, 8, stride=4)), nn.ReLU(),
                models.layer_init(nn.Conv2d(c1, c2, 4, stride=2)), nn.ReLU(),
                models.layer_init(nn.Conv2d(c2, c3, 3, stride=1)), nn.ReLU(), nn.Flatten())
            with torch.no_grad():
                features = int(self.conv(torch.zeros(1, c, h, w)).shape[1])
            variables = dtype['variables'].shape[0]
            self.variables_fc = nn.Sequential(models.layer_init(nn.Linear(variables, 32)), nn.ReLU())
            self.encoder = nn.Sequential(models.layer_init(nn.Linear(features + 32, hidden_size)), nn.ReLU())

        def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
            native = self.nativize(obs.reshape(-1, obs.shape[-1]))
            screen = native['screen'].permute(0, 3, 1, 2).float() / 255.0
            variables = native['variables'].float() / 100.0
            return self.encoder(torch.cat([self.conv(screen), self.variables_fc(variables)], dim=1))

    return Policy


__getattr__ = lazy_policy(__name__, _build_policy)
