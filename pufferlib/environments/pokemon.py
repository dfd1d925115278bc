"""Pokémon Red on the PyBoy Game Boy emulator: `pokemon_red`.

Bring your own ROM: pufferlib never ships or downloads one. Pass `rom_path=` (CLI: --env.rom_path)
or set PUFFER_POKEMON_ROM. The cartridge header must say POKEMON RED; `check_rom=False` skips that
check (the tests run a tiny homebrew ROM that way, and the reward components then read zeros).

- Headless (no window, no sound), uncapped speed. One action = one button held for `press_frames`
  (8) frames, then `ticks_per_action` (24) frames emulated in all, only the last one rendered.
- Actions: Discrete(7): down, left, right, up, A, B, start.
- Observation: the screen, one channel, half resolution (72x80), 2 bits per pixel (the Game Boy
  has 4 shades), four pixels packed into each byte: uint8 [72, 20], 1,440 bytes instead of the
  69,120 of an RGBA frame. `unpack_screen` undoes the packing with shifts and masks, on numpy or
  on torch tensors (do it on the GPU, inside the policy, as `Policy` does).
- Reward: the weighted per-step change of RAM-derived progress (addresses from the pokered
  disassembly), each reported in the episode stats:
    badges       popcount of the badge byte (0xD356), weight 5.0
    party_level  sum of the party's levels (count at 0xD163, levels at 0xD18C + 44 * i), weight 0.5
    explored     distinct (map 0xD35E, x 0xD362, y 0xD361) tiles visited, weight 0.02
    events       popcount of the event flags (0xD747-0xD886), weight 0.1
  Change the weights with `reward_weights={'badges': ...}`.
- Episodes: a reset restores the start state (`state_path`, a PyBoy save state, e.g. one saved after
  the intro; without it the game boots from power-on), and are truncated after `max_steps` actions.
"""
from __future__ import annotations

import hashlib
import io
import os
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, SupportsInt, overload

import gymnasium
import numpy as np

from pufferlib.environments._support import check_name, lazy_policy, require
from pufferlib.pufferenv import APIUsageError, PufferEnv, pack_parts, unpack_parts

if TYPE_CHECKING:
    import torch

ROM_ENV_VAR = 'PUFFER_POKEMON_ROM'
TITLE = b'POKEMON RED'
BUTTONS = ('down', 'left', 'right', 'up', 'a', 'b', 'start')
SCREEN_SHAPE = (72, 80)  # half of the Game Boy's 144x160
PACKED_SHAPE = (72, 20)

BADGES = 0xD356
PARTY_COUNT = 0xD163
PARTY_LEVELS = tuple(0xD18C + 44 * i for i in range(6))
MAP_ID, PLAYER_X, PLAYER_Y = 0xD35E, 0xD362, 0xD361
EVENT_FLAGS = (0xD747, 0xD887)  # [start, end)
REWARD_WEIGHTS = {'badges': 5.0, 'party_level': 0.5, 'explored': 0.02, 'events': 0.1}
_POPCOUNT = np.array([bin(i).count('1') for i in range(256)], np.int64)


def env_names() -> list[str]:
    return ['pokemon_red']


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs: rom_path, state_path, check_rom, ticks_per_action, press_frames, max_steps, reward_weights."""
    check_name(name, env_names(), 'Pokémon')
    rom_path = resolve_rom(kwargs.pop('rom_path', None), kwargs.get('check_rom', True))
    require('pyboy', 'pokemon')
    from pufferlib.emulation import GymnasiumPufferEnv
    return GymnasiumPufferEnv(env=PokemonRedEnv(rom_path, **kwargs), buf=buf, seed=seed)


def rom_title(data: bytes) -> bytes:
    """The cartridge title in a Game Boy ROM header (0x134-0x143), without padding."""
    return bytes(data[0x134:0x144]).split(b'\x00')[0].rstrip()


def header_checksum(data: bytes) -> int:
    """The Game Boy header checksum over 0x134-0x14C: x = x - byte - 1, modulo 256."""
    x = 0
    for byte in data[0x134:0x14D]:
        x = (x - byte - 1) & 0xFF
    return x


def resolve_rom(rom_path: str | os.PathLike[str] | None = None, check_rom: bool = True) -> str:
    """The ROM path from the argument or PUFFER_POKEMON_ROM, checked; raises one clear error otherwise."""
    rom_path = rom_path or os.environ.get(ROM_ENV_VAR)
    if not rom_path:
        raise APIUsageError(f'Pokémon Red needs your own ROM file: pass rom_path=/path/to/pokemon_red.gb '
                            f'(CLI: --env.rom_path) or set {ROM_ENV_VAR}. pufferlib does not ship or download ROMs.')
    rom_path = os.path.expanduser(str(rom_path))
    if not os.path.isfile(rom_path):
        raise APIUsageError(f'Pokémon Red ROM not found at {rom_path!r} (from rom_path or {ROM_ENV_VAR}); '
                            'point it at your own dump of the cartridge')
    with open(rom_path, 'rb') as f:
        header = f.read(0x150)
    if len(header) < 0x150:
        raise APIUsageError(f'{rom_path!r} is not a Game Boy ROM: {len(header)} bytes, too short for a header')
    if header_checksum(header) != header[0x14D]:
        # PyBoy (like the console's boot ROM) refuses such a cartridge, with a traceback; say it here.
        raise APIUsageError(f'{rom_path!r} is not a valid Game Boy ROM: its header checksum (byte 0x14D) is '
                            f'{header[0x14D]:#04x}, but the header bytes 0x134-0x14C give '
                            f'{header_checksum(header):#04x}. The file is corrupt or not a cartridge dump; '
                            'dump the cartridge again. (check_rom=False does not skip this: the emulator '
                            'cannot start such a ROM.)')
    title = rom_title(header)
    if check_rom and title != TITLE:
        found = title.decode('ascii', 'replace')
        raise APIUsageError(f'{rom_path!r} is not Pokémon Red: its cartridge header says {found!r}, '
                            f'expected {TITLE.decode()!r}. (Blue, Yellow and hacks use other RAM addresses; '
                            'check_rom=False skips this check at your own risk.)')
    return rom_path


def pack_screen(gray: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """[144, 160] shades (0-255) -> [72, 20] bytes: every other pixel, 2 bits each, 4 per byte."""
    q = gray[::2, ::2] >> 6  # the 4 DMG shades (0x00, 0x55, 0x99/0xAA, 0xFF) -> 0..3
    out = np.empty(PACKED_SHAPE, np.uint8) if out is None else out
    np.bitwise_or(q[:, 0::4] << 6, q[:, 1::4] << 4, out=out)
    out |= q[:, 2::4] << 2
    out |= q[:, 3::4]
    return out


@overload
def unpack_screen(packed: np.ndarray) -> np.ndarray: ...


@overload
def unpack_screen(packed: torch.Tensor) -> torch.Tensor: ...


def unpack_screen(packed: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """[..., 72, 20] packed bytes -> [..., 72, 80] shades 0-3; numpy arrays or torch tensors."""
    parts: list[Any] = [(packed >> shift) & 3 for shift in (6, 4, 2, 0)]
    shape = (*packed.shape[:-1], packed.shape[-1] * 4)
    if isinstance(packed, np.ndarray):
        return np.stack(parts, axis=-1).reshape(shape)
    import torch
    return torch.stack(parts, dim=-1).reshape(shape)


class PokemonRedEnv(gymnasium.Env):
    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, rom_path: str, state_path: str | None = None, check_rom: bool = True, ticks_per_action: int = 24,
                 press_frames: int = 8, max_steps: int = 20_480, reward_weights: dict[str, float] | None = None,
                 render_mode: str | None = None) -> None:
        from gymnasium import spaces
        from pyboy import PyBoy
        rom_path = resolve_rom(rom_path, check_rom)
        if not 1 <= press_frames <= ticks_per_action:
            raise APIUsageError(f'need 1 <= press_frames <= ticks_per_action, got {press_frames}, {ticks_per_action}')
        unknown = set(reward_weights or {}) - set(REWARD_WEIGHTS)
        if unknown:
            raise APIUsageError(f'unknown reward_weights keys {sorted(unknown)}; known: {sorted(REWARD_WEIGHTS)}')
        self.weights = {**REWARD_WEIGHTS, **(reward_weights or {})}
        self.ticks_per_action, self.press_frames = int(ticks_per_action), int(press_frames)
        self.max_steps, self.render_mode = int(max_steps), render_mode
        self.observation_space = spaces.Box(0, 255, PACKED_SHAPE, np.uint8)
        self.action_space = spaces.Discrete(len(BUTTONS))
        # A battery save next to the ROM (<rom>.ram) is read, never written: close() stops with save=False.
        try:
            self.pyboy = PyBoy(rom_path, window='null', sound_emulated=False, log_level='ERROR')
        except Exception as e:  # PyBoy's checks beyond ours (its errors are plain Exceptions)
            raise APIUsageError(f'PyBoy cannot load the ROM {rom_path!r}: {e}. Check that it is an unmodified '
                                'dump of the cartridge.') from e
        self.pyboy.set_emulation_speed(0)
        if state_path is not None:
            with open(os.path.expanduser(state_path), 'rb') as f:
                self.pyboy.load_state(f)
        self._start_state = io.BytesIO()
        self.pyboy.save_state(self._start_state)
        self.memory = self.pyboy.memory
        self._screen = np.empty(PACKED_SHAPE, np.uint8)
        self._seen: set[tuple[int, int, int]] = set()
        self._steps = 0
        with open(rom_path, 'rb') as f:  # a state of another cartridge is refused
            self._state_options = dict(rom=hashlib.blake2b(f.read(), digest_size=8).hexdigest(),
                                       ticks_per_action=self.ticks_per_action, press_frames=self.press_frames,
                                       max_steps=self.max_steps, weights=sorted(self.weights.items()))

    def _observe(self) -> np.ndarray:
        pack_screen(self.pyboy.screen.ndarray[:, :, 0], out=self._screen)
        return self._screen.copy()

    def progress(self) -> dict[str, float]:
        """The RAM-derived reward components right now."""
        mem = self.memory
        count = min(int(mem[PARTY_COUNT]), 6)
        self._seen.add((mem[MAP_ID], mem[PLAYER_X], mem[PLAYER_Y]))
        return {
            'badges': float(_POPCOUNT[mem[BADGES]]),
            'party_level': float(sum(mem[addr] for addr in PARTY_LEVELS[:count])),
            'explored': float(len(self._seen)),
            'events': float(_POPCOUNT[np.asarray(mem[EVENT_FLAGS[0]:EVENT_FLAGS[1]], np.uint8)].sum()),
        }

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)  # the game itself is deterministic from the start state
        self._start_state.seek(0)
        self.pyboy.load_state(self._start_state)
        self.pyboy.tick(1, True)
        self._seen = set()
        self._steps = 0
        self._progress = self.progress()
        return self._observe(), {}

    def step(self, action: SupportsInt) -> tuple[np.ndarray, float, bool, bool, dict[str, float]]:
        self.pyboy.button(BUTTONS[int(action)], self.press_frames)
        self.pyboy.tick(self.ticks_per_action, True)  # renders only the last frame
        self._steps += 1
        now = self.progress()
        reward = sum(self.weights[key] * (now[key] - self._progress[key]) for key in now)
        self._progress = now
        truncated = self._steps >= self.max_steps
        return self._observe(), float(reward), False, truncated, (dict(now) if truncated else {})

    # ---- saved states: PyBoy's save_state (the whole machine) and our counters ----

    def state_identity(self) -> tuple[str, int, dict]:
        return 'pokemon_red', 1, self._state_options

    def get_state(self) -> bytes:
        machine = io.BytesIO()
        self.pyboy.save_state(machine)
        seen = np.array(sorted(self._seen), np.int64).reshape(-1, 3)
        progress = np.array([self._progress[key] for key in sorted(self._progress)], np.float64)
        return pack_parts(machine.getvalue(), self._screen.tobytes(), seen.tobytes(),
                          np.array([self._steps], np.int64).tobytes(), progress.tobytes())

    def set_state(self, payload: bytes) -> np.ndarray:
        machine, screen, seen, steps, progress = unpack_parts(payload, 5, 'pokemon_red')
        self.pyboy.load_state(io.BytesIO(machine))
        self._screen[...] = np.frombuffer(screen, np.uint8).reshape(PACKED_SHAPE)  # the frame the state showed
        self._seen = {(int(a), int(b), int(c)) for a, b, c in np.frombuffer(seen, np.int64).reshape(-1, 3)}
        self._steps = int(np.frombuffer(steps, np.int64)[0])
        self._progress = dict(zip(sorted(REWARD_WEIGHTS), np.frombuffer(progress, np.float64).tolist()))
        return self._screen.copy()

    def render(self) -> np.ndarray:
        return self.pyboy.screen.ndarray[:, :, :3].copy()

    def close(self) -> None:
        self.pyboy.stop(save=False)


def _build_policy() -> type:
    """The family's policy class, defined here because it needs torch (see lazy_policy)."""
    import torch
    from torch import nn

    from pufferlib import models

    class Policy(models.Policy):
        """Unpacks the 2-bit screen on the policy's device, then the Nature conv stack -> hidden.

        pufferlib.models.Policy adds the action and value heads.
        """

        def __init__(self, env: models.EnvSpaces, hidden_size: int = 256) -> None:
            super().__init__(env, hidden_size)
            self.cnn = nn.Sequential(
                models.layer_init(nn.Conv2d(1, 32, 8, stride=4)), nn.ReLU(),
                models.layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
                models.layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
                nn.Flatten())
            with torch.no_grad():
                features = self.cnn(torch.zeros(1, 1, *SCREEN_SHAPE)).shape[1]
            self.encoder = nn.Sequential(models.layer_init(nn.Linear(features, hidden_size)), nn.ReLU())

        def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
            packed = obs.reshape(-1, *PACKED_SHAPE).to(torch.uint8)
            screen = unpack_screen(packed).unsqueeze(1).float() / 3.0
            return self.encoder(self.cnn(screen))

    return Policy


__getattr__ = lazy_policy(__name__, _build_policy)
