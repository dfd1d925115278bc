"""Atari 2600 games through ale-py (its wheel ships the ROMs): `atari_breakout`, `atari_pong`, ...

Preprocessing is one wrapper (no wrapper stack), the standard DQN/PPO recipe, step for step the one
of CleanRL's ppo_atari.py (its NoFrameskip-v4 env and SB3's wrappers), but for the episode cap:
- 1 to `noop_max` random single-frame no-ops after each new game (start-state diversity);
- the action repeated `frameskip`=4 frames, the observation the pixel-wise max of the last two
  (Atari sprites flicker between frames);
- grayscale, resized to 84x84 with area interpolation, the last 4 frames stacked channels-last:
  uint8 [84, 84, 4] (the layout pufferlib.models.NatureCNN reads);
- episodic life (training): losing a life ends the episode for the learner, the game goes on at
  the next reset, which first steps a no-op (through the frame skip); the full-game score arrives as
  info `score` when the game is really over;
- fire reset (`fire_reset`, in games whose action 1 is FIRE): every reset then steps FIRE and action 2,
  so that games that wait for FIRE after a lost life (Breakout) go on without the agent learning to press
  it first;
- sticky actions (`repeat_action_probability`, ALE's default 0.25) and an episode cap of
  `max_episode_frames` emulator frames (108,000 = 30 minutes, 27,000 agent steps, as in the literature).

gymnasium's AtariPreprocessing restarts the whole game on a life loss when its episodic-life flag
is on, and the frame stack would be a second wrapper, so this module drives the ALE directly.
"""
from types import SimpleNamespace
from typing import Any, SupportsInt

import gymnasium
import numpy as np

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import (APIUsageError, PufferEnv, StateError, pack_parts, rng_from_state, rng_state,
                                 unpack_parts)

# The 57 games of the standard Atari benchmark; any other ROM in ale-py works through
# `make('atari', game=<rom id>)`.
GAMES = (
    'alien', 'amidar', 'assault', 'asterix', 'asteroids', 'atlantis', 'bank_heist', 'battle_zone',
    'beam_rider', 'berzerk', 'bowling', 'boxing', 'breakout', 'centipede', 'chopper_command',
    'crazy_climber', 'defender', 'demon_attack', 'double_dunk', 'enduro', 'fishing_derby', 'freeway',
    'frostbite', 'gopher', 'gravitar', 'hero', 'ice_hockey', 'jamesbond', 'kangaroo', 'krull',
    'kung_fu_master', 'montezuma_revenge', 'ms_pacman', 'name_this_game', 'phoenix', 'pitfall', 'pong',
    'private_eye', 'qbert', 'riverraid', 'road_runner', 'robotank', 'seaquest', 'skiing', 'solaris',
    'space_invaders', 'star_gunner', 'surround', 'tennis', 'time_pilot', 'tutankham', 'up_n_down',
    'venture', 'video_pinball', 'wizard_of_wor', 'yars_revenge', 'zaxxon',
)


def env_names() -> list[str]:
    return [f'atari_{game}' for game in GAMES] + ['atari']


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, game: str | None = None,
         **kwargs: Any) -> PufferEnv:
    """kwargs: see AtariEnv (frameskip, repeat_action_probability, noop_max, episodic_life, ...)."""
    check_name(name, env_names(), 'Atari')
    if name == 'atari':
        if game is None:
            raise APIUsageError("make('atari') needs game=<ALE rom id>, e.g. game='breakout'")
    else:
        game = name[len('atari_'):]
    require('ale_py', 'atari')
    require('cv2', 'atari')
    from pufferlib.emulation import GymnasiumPufferEnv
    return GymnasiumPufferEnv(env=AtariEnv(game, **kwargs), buf=buf, seed=seed)


class AtariEnv(gymnasium.Env):
    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, game: str, frameskip: int = 4, repeat_action_probability: float = 0.25, noop_max: int = 30,
                 episodic_life: bool = True, frame_stack: int = 4, screen_size: int = 84,
                 max_episode_frames: int = 108_000, full_action_space: bool = False, clip_rewards: bool = False,
                 fire_reset: bool = True, render_mode: str | None = None) -> None:
        import ale_py
        from gymnasium import spaces
        if game not in ale_py.roms.get_all_rom_ids():
            raise APIUsageError(f'ale-py has no ROM {game!r}; see ale_py.roms.get_all_rom_ids()')
        if frameskip < 1 or frame_stack < 1:
            raise APIUsageError(f'frameskip and frame_stack must be >= 1, got {frameskip}, {frame_stack}')
        # ale_py's own env loads the ROM and applies the frame cap; we drive its ALE. Sticky actions are ours
        # (`_act`, ALE's rule): ALE keeps the previous frame's action outside the state it clones, so with its
        # own stickiness a loaded game could repeat another action than the saved one would have.
        self._ale_env = ale_py.AtariEnv(game, obs_type='grayscale', frameskip=1, repeat_action_probability=0.0,
                                        full_action_space=full_action_space,
                                        max_num_frames_per_episode=max_episode_frames, render_mode=render_mode)
        self.ale = self._ale_env.ale
        self.game = game
        self.frameskip, self.noop_max, self.episodic_life = int(frameskip), int(noop_max), bool(episodic_life)
        self.clip_rewards, self.screen_size, self.render_mode = bool(clip_rewards), int(screen_size), render_mode
        self._action_set = (self.ale.getLegalActionSet() if full_action_space else self.ale.getMinimalActionSet())
        self.sticky = float(repeat_action_probability)
        self._last_action = ale_py.Action.NOOP  # what a sticky frame repeats; ALE starts a game with NOOP
        # As SB3's FireResetEnv decides it: the game's action 1 is FIRE (and it has a third action to press).
        self.fire_reset = bool(fire_reset) and len(self._action_set) >= 3 and \
            self._action_set[1] == ale_py.Action.FIRE
        self.action_space = spaces.Discrete(len(self._action_set))
        self.observation_space = spaces.Box(0, 255, (self.screen_size, self.screen_size, int(frame_stack)), np.uint8)
        height, width = self.ale.getScreenDims()
        self._screens = np.zeros((2, height, width), np.uint8)
        self._stack = np.zeros((int(frame_stack), self.screen_size, self.screen_size), np.uint8)  # oldest first
        self._lives = 0
        self._score = 0.0
        self._game_over = True
        self._options = dict(game=game, frameskip=self.frameskip, repeat_action_probability=repeat_action_probability,
                             noop_max=self.noop_max, episodic_life=self.episodic_life, frame_stack=frame_stack,
                             screen_size=self.screen_size, max_episode_frames=max_episode_frames,
                             full_action_space=full_action_space, clip_rewards=self.clip_rewards,
                             fire_reset=bool(fire_reset))

    def _grab(self, slot: int) -> None:
        self.ale.getScreenGrayscale(self._screens[slot])

    def _observe(self, fill: bool = False) -> np.ndarray:
        import cv2
        frame = np.maximum(self._screens[0], self._screens[1])
        frame = cv2.resize(frame, (self.screen_size, self.screen_size), interpolation=cv2.INTER_AREA)
        if fill:
            self._stack[...] = frame
        else:
            self._stack[:-1] = self._stack[1:]
            self._stack[-1] = frame
        return self._channels_last()

    def _channels_last(self) -> np.ndarray:
        """The stack as a fresh [H, W, frames] array (callers may keep it). cv2.merge interleaves the frames in
        one pass; numpy's copy of the transposed view walks memory with a 7 KB stride and takes ~25x longer,
        a tenth of a whole step's CPU time."""
        import cv2
        if len(self._stack) == 1:  # merge returns one channel as a 2-D image
            return self._stack[0][..., None].copy()
        return cv2.merge(list(self._stack))

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._ale_env.reset(seed=seed)  # reseeds the ALE and restarts the game
            self._game_over = True
        if self._game_over:
            self._new_game()
        else:  # a life was lost: one no-op step (frame skip and all) so that the new episode starts fresh
            self._score += self._repeat(self._action_set[0])
            self._restart_if_over()
        if self.fire_reset:
            for action in (self._action_set[1], self._action_set[2]):
                self._score += self._repeat(action)
                self._restart_if_over()
        self._game_over = False
        self._lives = self.ale.lives()
        return self._observe(fill=True), {'lives': self._lives}

    def _new_game(self) -> None:
        """A new game, then 1 to noop_max single-frame no-ops."""
        self.ale.reset_game()
        self._last_action = type(self._last_action).NOOP
        self._score = 0.0
        noops = int(self.np_random.integers(1, self.noop_max + 1)) if self.noop_max > 0 else 0
        for _ in range(noops):
            self._score += self._act(self._action_set[0])
            if self.ale.game_over() or self.ale.game_truncated():
                self.ale.reset_game()
                self._last_action = type(self._last_action).NOOP
                self._score = 0.0
        self._grab(0)
        self._screens[1] = self._screens[0]

    def _restart_if_over(self) -> None:
        """A reset's own steps ended the game: start a new one (the no-ops again)."""
        if self.ale.game_over() or self.ale.game_truncated():
            self._new_game()

    def _act(self, ale_action: Any) -> float:
        """One emulator frame; with probability `sticky` it repeats the previous frame's action instead (ALE's
        sticky actions, drawn from this env's generator so that a saved state carries them)."""
        if self.sticky > 0.0 and self.np_random.random() < self.sticky:
            ale_action = self._last_action
        self._last_action = ale_action
        return float(self.ale.act(ale_action))

    def _repeat(self, ale_action: int) -> float:
        """The action for `frameskip` frames (fewer if the game ends), the last two grabbed for the max pool;
        the summed reward."""
        reward = 0.0
        for i in range(self.frameskip):
            reward += self._act(ale_action)
            if i == self.frameskip - 2:
                self._grab(0)
            if self.ale.game_over() or self.ale.game_truncated():
                break
        self._grab(1)
        if self.frameskip == 1 or i < self.frameskip - 2:
            self._screens[0] = self._screens[1]  # ended before the pool's first frame: no pooling
        return reward

    def step(self, action: SupportsInt) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        reward = self._repeat(self._action_set[int(action)])
        self._score += reward
        game_over, truncated = self.ale.game_over(), self.ale.game_truncated()
        lives = self.ale.lives()
        life_lost = lives < self._lives
        self._lives = lives
        terminated = game_over or (self.episodic_life and life_lost)
        info = {'lives': lives}
        if game_over or truncated:
            self._game_over = True
            info['score'] = self._score  # the whole game's unclipped score, across lives
        if self.clip_rewards:
            reward = float(np.sign(reward))
        return self._observe(), reward, terminated, truncated and not terminated, info

    # ---- saved states (through GymnasiumPufferEnv.get_state / set_state) ----

    def state_identity(self) -> tuple[str, int, dict]:
        return f'atari_{self.game}', 1, self._options

    def get_state(self) -> bytes:
        """The emulator (ALE cloneState with its RNG, the frame counters included), the two pooled screens,
        the frame stack, lives, score, the last action (what a sticky frame repeats) and the generator of
        the no-ops and sticky frames."""
        ale = self.ale.cloneState(include_rng=True).serialize()
        numbers = np.array([self._lives, self._score, self._game_over, self._last_action.value], np.float64).tobytes()
        return pack_parts(ale, self._screens.tobytes(), self._stack.tobytes(), numbers, rng_state(self.np_random))

    def set_state(self, payload: bytes) -> np.ndarray:
        import ale_py
        ale, screens, stack, numbers, rng = unpack_parts(payload, 5, f'atari_{self.game}')
        self.ale.restoreState(ale_py.ALEState(ale))
        self._screens[...] = np.frombuffer(screens, np.uint8).reshape(self._screens.shape)
        self._stack[...] = np.frombuffer(stack, np.uint8).reshape(self._stack.shape)
        values = np.frombuffer(numbers, np.float64)
        if len(values) != 4:
            raise StateError(f'atari_{self.game}: this state was saved by an older version of the binding (no sticky '
                             'action in it); save it again with this version')
        lives, score, game_over, last = values
        self._lives, self._score, self._game_over = int(lives), float(score), bool(game_over)
        self._last_action = ale_py.Action(int(last))
        self._np_random = rng_from_state(rng)
        return self._channels_last()

    def render(self) -> np.ndarray:
        return self.ale.getScreenRGB()

    def close(self) -> None:
        self._ale_env.close()
