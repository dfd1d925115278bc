"""Pokémon Red on the PyBoy Game Boy emulator: `pokemon_red`.

Bring your own ROM: pufferlib never ships or downloads one. Pass `rom_path=` (CLI: --env.rom_path)
or set PUFFER_POKEMON_ROM. The cartridge header must say POKEMON RED; `check_rom=False` skips that
check (the tests run small homebrew ROMs that way). docs/environments.md says all of this for users.

- Headless (no window, no sound), uncapped speed. One action = one button held for `press_frames`
  (8) frames, `ticks_per_action` (24) frames in all; then, while the game ignores the joypad
  (wJoyIgnore, 0xCD6B, nonzero: walking, scripted scenes), the step goes on in blocks of
  `ticks_per_action` frames, tapping A in each (`advance_text`: scripted text waits for it), until
  control is back or `max_wait_ticks` (2,400, 40 s of game time) frames were waited, so the next
  action is never pressed into frames that drop it.
- Actions: Discrete(7): down, left, right, up, A, B, start.
- Observation, a dict of uint8 arrays, 3,200 bytes a row:
    screen  [72, 20]  the screen at half resolution (72x80), 2 bits per pixel (the Game Boy's 4
                      shades), four pixels packed into each byte;
    visits  [72, 20]  the decaying visit counts of the tiles on screen, as the same 72x80 2-bit
                      image (one 16-pixel tile = 8x8 pixels here; the player's tile is row 4,
                      column 4 of the 9x10 grid), packed the same way;
    events  [320]     the event flag bytes 0xD747-0xD886 as they are, 8 flags a byte.
  `unpack_screen` and `unpack_events` undo the packing on numpy arrays or torch tensors; `Policy`
  does it on the policy's device.
- Visits: a visit is a step that ends on another tile (map 0xD35E, x 0xD362, y 0xD361) than the
  step before, and the episode's first tile. Every count is multiplied by `visit_decay` (0.9995) at
  every step; the map shows each tile's level: 0 below 0.1 (never or long ago), 1 below 0.5, 2
  below 2, 3 from 2 on (VISIT_LEVELS).
- Reward: the sum of these terms, each also an episode stat (`reward_<term>`):
    badges           5.0 x the change of the badge count (popcount of 0xD356)
    party_level      0.5 x the change of the party's level sum (count 0xD163, levels 0xD18C + 44 i)
    events           0.1 x the change of the number of set event flags
    explore_new      `explore_weight` (0.02) on arriving on a tile never visited this episode
    explore_revisit  `explore_weight` / (1 + c) on arriving on a visited tile, c its decayed count
  `reward_weights={'badges': ...}` changes the first three weights.
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

from pufferlib.environments import check_options
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
EVENT_BYTES = EVENT_FLAGS[1] - EVENT_FLAGS[0]
JOY_IGNORE = 0xCD6B  # wJoyIgnore: the buttons the game ignores; nonzero while it has not handed control back
REWARD_WEIGHTS = {'badges': 5.0, 'party_level': 0.5, 'events': 0.1}
TERMS = ('badges', 'party_level', 'events', 'explore_new', 'explore_revisit')

# The visit map: the screen shows 9x10 tiles of 16x16 pixels, the player on row 4, column 4 (pokered
# draws it at pixels 64-79 both ways); a tile is TILE x TILE pixels of the half-resolution image.
GRID = (9, 10)
PLAYER_CELL = (4, 4)
TILE = 8
VISIT_LEVELS = (0.1, 0.5, 2.0)  # a decayed count from each of these up shows one level (of 0-3) higher
_POPCOUNT = np.array([bin(i).count('1') for i in range(256)], np.int64)


def env_names() -> list[str]:
    return ['pokemon_red']


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs: rom_path, state_path, check_rom, ticks_per_action, press_frames, max_steps, reward_weights,
    explore_weight, visit_decay, max_wait_ticks, advance_text (the module's doc says what each does)."""
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


def pack_levels(levels: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """[72, 80] values 0-3 -> [72, 20] bytes: 2 bits each, 4 per byte, the leftmost pixel in the high bits."""
    out = np.empty(PACKED_SHAPE, np.uint8) if out is None else out
    levels = levels.astype(np.uint8, copy=False)
    np.bitwise_or(levels[:, 0::4] << 6, levels[:, 1::4] << 4, out=out)
    out |= levels[:, 2::4] << 2
    out |= levels[:, 3::4]
    return out


def pack_screen(gray: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """[144, 160] shades (0-255) -> [72, 20] bytes: every other pixel, 2 bits each, 4 per byte."""
    return pack_levels(gray[::2, ::2] >> 6, out)  # the 4 DMG shades (0x00, 0x55, 0x99/0xAA, 0xFF) -> 0..3


@overload
def unpack_screen(packed: np.ndarray) -> np.ndarray: ...


@overload
def unpack_screen(packed: torch.Tensor) -> torch.Tensor: ...


def unpack_screen(packed: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """[..., 72, 20] packed bytes -> [..., 72, 80] values 0-3 (the screen's shades, the visit levels);
    numpy arrays or torch tensors."""
    parts: list[Any] = [(packed >> shift) & 3 for shift in (6, 4, 2, 0)]
    shape = (*packed.shape[:-1], packed.shape[-1] * 4)
    if isinstance(packed, np.ndarray):
        return np.stack(parts, axis=-1).reshape(shape)
    import torch
    return torch.stack(parts, dim=-1).reshape(shape)


@overload
def unpack_events(packed: np.ndarray) -> np.ndarray: ...


@overload
def unpack_events(packed: torch.Tensor) -> torch.Tensor: ...


def unpack_events(packed: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """[..., n] flag bytes -> [..., 8 n] flags 0/1, each byte's high bit first (np.unpackbits' order);
    numpy arrays or torch uint8 tensors, on the tensor's device."""
    if isinstance(packed, np.ndarray):
        return np.unpackbits(packed, axis=-1)
    import torch
    shifts = torch.arange(7, -1, -1, dtype=torch.uint8, device=packed.device)
    bits = (packed.unsqueeze(-1) >> shifts) & 1
    return bits.reshape(*packed.shape[:-1], packed.shape[-1] * 8)


class VisitMap:
    """Visit counts per (map, x, y) tile that all decay by `decay` per step.

    Decaying every count at every step would touch every tile ever seen; instead a count is kept as
    stored x scale, where scale = decay ** steps, and a visit adds 1 / scale to its stored value. When
    scale gets tiny every stored value is multiplied by it once (and scale set to 1), before 1 / scale
    could overflow a double."""

    RESCALE_BELOW = 1e-150

    def __init__(self, decay: float) -> None:
        self.decay = float(decay)
        self.stored: dict[tuple[int, int, int], float] = {}
        self.scale = 1.0

    def __len__(self) -> int:
        return len(self.stored)

    def __contains__(self, tile: tuple[int, int, int]) -> bool:
        return tile in self.stored

    def clear(self) -> None:
        self.stored.clear()
        self.scale = 1.0

    def tick(self) -> None:
        """One step of decay."""
        self.scale *= self.decay
        if self.scale < self.RESCALE_BELOW:
            self.stored = {tile: value * self.scale for tile, value in self.stored.items()}
            self.scale = 1.0

    def count(self, tile: tuple[int, int, int]) -> float:
        return self.stored.get(tile, 0.0) * self.scale

    def visit(self, tile: tuple[int, int, int]) -> float:
        """Counts one visit to `tile`; returns its count before."""
        before = self.stored.get(tile, 0.0)
        self.stored[tile] = before + 1.0 / self.scale
        return before * self.scale

    def levels(self, map_id: int, x: int, y: int) -> np.ndarray:
        """[9, 10] levels 0-3 of the tiles on screen around the player at (x, y) of map `map_id`."""
        low, mid, high = (threshold / self.scale for threshold in VISIT_LEVELS)  # in stored units
        get = self.stored.get
        rows, cols = GRID
        grid = np.zeros(GRID, np.uint8)
        for r in range(rows):
            for c in range(cols):
                value = get((map_id, x + c - PLAYER_CELL[1], y + r - PLAYER_CELL[0]), 0.0)
                if value >= low:
                    grid[r, c] = 1 + (value >= mid) + (value >= high)
        return grid

    def render(self, map_id: int, x: int, y: int) -> np.ndarray:
        """The levels around the player as a packed [72, 20] image, one tile = TILE x TILE pixels."""
        grid = self.levels(map_id, x, y)
        return pack_levels(np.repeat(np.repeat(grid, TILE, axis=0), TILE, axis=1))

    def to_bytes(self) -> tuple[bytes, bytes]:
        tiles = np.array(list(self.stored), np.int64).reshape(-1, 3)
        values = np.array([*self.stored.values(), self.scale], np.float64)
        return tiles.tobytes(), values.tobytes()

    def load_bytes(self, tiles: bytes, values: bytes) -> None:
        keys = np.frombuffer(tiles, np.int64).reshape(-1, 3).tolist()
        numbers = np.frombuffer(values, np.float64).tolist()
        self.scale = numbers.pop()
        self.stored = {(a, b, c): value for (a, b, c), value in zip(keys, numbers)}


class PokemonRedEnv(gymnasium.Env):
    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, rom_path: str, state_path: str | None = None, check_rom: bool = True, ticks_per_action: int = 24,
                 press_frames: int = 8, max_steps: int = 20_480, reward_weights: dict[str, float] | None = None,
                 explore_weight: float = 0.02, visit_decay: float = 0.9995, max_wait_ticks: int = 2400,
                 advance_text: bool = True, render_mode: str | None = None) -> None:
        from gymnasium import spaces
        from pyboy import PyBoy
        # make() checks these too; here again for the class made directly
        check_options('pokemon', 'pokemon_red', dict(
            ticks_per_action=ticks_per_action, press_frames=press_frames, max_steps=max_steps,
            explore_weight=explore_weight, visit_decay=visit_decay, max_wait_ticks=max_wait_ticks,
            advance_text=advance_text))
        rom_path = resolve_rom(rom_path, check_rom)
        if not 1 <= press_frames <= ticks_per_action:
            raise APIUsageError(f'need 1 <= press_frames <= ticks_per_action, got {press_frames}, {ticks_per_action}')
        unknown = set(reward_weights or {}) - set(REWARD_WEIGHTS)
        if unknown:
            hint = (' (the exploration terms\' weight is the explore_weight option)'
                    if unknown & {'explored', 'explore', 'explore_new', 'explore_revisit'} else '')
            raise APIUsageError(f'unknown reward_weights keys {sorted(unknown)}; known: {sorted(REWARD_WEIGHTS)}{hint}')
        self.weights = {**REWARD_WEIGHTS, **(reward_weights or {})}
        self.ticks_per_action, self.press_frames = int(ticks_per_action), int(press_frames)
        self.max_steps, self.render_mode = int(max_steps), render_mode
        self.explore_weight, self.max_wait_ticks = float(explore_weight), int(max_wait_ticks)
        self.advance_text = bool(advance_text)
        self.visits = VisitMap(visit_decay)
        self.observation_space = spaces.Dict({
            'screen': spaces.Box(0, 255, PACKED_SHAPE, np.uint8),
            'visits': spaces.Box(0, 255, PACKED_SHAPE, np.uint8),
            'events': spaces.Box(0, 255, (EVENT_BYTES,), np.uint8),
        })
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
        self._position = (0, 0, 0)
        self._steps = 0
        self._progress = dict.fromkeys(REWARD_WEIGHTS, 0.0)
        self._episode = dict.fromkeys(TERMS, 0.0)
        self._waited = 0
        with open(rom_path, 'rb') as f:  # a state of another cartridge is refused
            self._state_options = dict(rom=hashlib.blake2b(f.read(), digest_size=8).hexdigest(),
                                       ticks_per_action=self.ticks_per_action, press_frames=self.press_frames,
                                       max_steps=self.max_steps, weights=sorted(self.weights.items()),
                                       explore_weight=self.explore_weight, visit_decay=self.visits.decay,
                                       max_wait_ticks=self.max_wait_ticks, advance_text=self.advance_text)

    # ---- reading the game ----

    def _event_bytes(self) -> np.ndarray:
        return np.asarray(self.memory[EVENT_FLAGS[0]:EVENT_FLAGS[1]], np.uint8)

    def _tile(self) -> tuple[int, int, int]:
        mem = self.memory
        return int(mem[MAP_ID]), int(mem[PLAYER_X]), int(mem[PLAYER_Y])

    def progress(self, events: np.ndarray | None = None) -> dict[str, float]:
        """The RAM-derived counts behind the weighted terms, right now."""
        mem = self.memory
        count = min(int(mem[PARTY_COUNT]), 6)
        events = self._event_bytes() if events is None else events
        return {
            'badges': float(_POPCOUNT[mem[BADGES]]),
            'party_level': float(sum(mem[addr] for addr in PARTY_LEVELS[:count])),
            'events': float(_POPCOUNT[events].sum()),
        }

    def _observe(self, events: np.ndarray) -> dict[str, np.ndarray]:
        return {'screen': self._screen.copy(), 'visits': self.visits.render(*self._position), 'events': events}

    def _render_screen(self) -> None:
        pack_screen(self.pyboy.screen.ndarray[:, :, 0], out=self._screen)

    # ---- the emulator ----

    def _press(self, button: str) -> None:
        """`button` held press_frames frames, ticks_per_action frames in all, the last one rendered."""
        held = self.press_frames
        self.pyboy.button_press(button)
        self.pyboy.tick(held, held == self.ticks_per_action)
        self.pyboy.button_release(button)  # takes effect at the next frame
        if self.ticks_per_action > held:
            self.pyboy.tick(self.ticks_per_action - held, True)

    def _wait_for_control(self) -> int:
        """Blocks of ticks_per_action frames while the game ignores the joypad, at most max_wait_ticks frames
        in all; returns the frames waited. Each block taps A (advance_text) but releases it before the
        block's last frame, so no button is held into the next action."""
        waited = 0
        while waited < self.max_wait_ticks and self.memory[JOY_IGNORE]:
            block = min(self.ticks_per_action, self.max_wait_ticks - waited)
            tap = min(self.press_frames, block - 1) if self.advance_text else 0
            if tap:
                self.pyboy.button_press('a')
                self.pyboy.tick(tap, False)
                self.pyboy.button_release('a')
            self.pyboy.tick(block - tap, True)
            waited += block
        return waited

    # ---- the Gymnasium API ----

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)  # the game itself is deterministic from the start state
        self._start_state.seek(0)
        self.pyboy.load_state(self._start_state)
        self.pyboy.tick(1, True)
        self._render_screen()
        self._steps = self._waited = 0
        self._episode = dict.fromkeys(TERMS, 0.0)
        self.visits.clear()
        self._position = self._tile()
        self.visits.visit(self._position)
        events = self._event_bytes()
        self._progress = self.progress(events)
        return self._observe(events), {}

    def _explore(self) -> tuple[float, float]:
        """(explore_new, explore_revisit) of this step; counts the visit."""
        self.visits.tick()
        tile = self._tile()
        if tile == self._position:
            return 0.0, 0.0
        self._position = tile
        if tile not in self.visits:
            self.visits.visit(tile)
            return self.explore_weight, 0.0
        return 0.0, self.explore_weight / (1.0 + self.visits.visit(tile))

    def step(self, action: SupportsInt) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, float]]:
        self._press(BUTTONS[int(action)])
        self._waited += self._wait_for_control()
        self._render_screen()
        self._steps += 1
        events = self._event_bytes()
        now = self.progress(events)
        terms = {key: self.weights[key] * (now[key] - self._progress[key]) for key in now}
        terms['explore_new'], terms['explore_revisit'] = self._explore()
        self._progress = now
        reward = 0.0
        for key, value in terms.items():
            self._episode[key] += value
            reward += value
        truncated = self._steps >= self.max_steps
        info = self.episode_stats() if truncated else {}
        return self._observe(events), reward, False, truncated, info

    def episode_stats(self) -> dict[str, float]:
        """The counts now, and each reward term's sum since the reset (or the last set_state)."""
        return {**self._progress, 'tiles_visited': float(len(self.visits)), 'wait_ticks': float(self._waited),
                **{f'reward_{key}': value for key, value in self._episode.items()}}

    # ---- saved states: PyBoy's save_state (the whole machine), the screen it showed, our counters ----
    # The reward terms' episode sums restart at a load, as the emulation's episode return does.

    def state_identity(self) -> tuple[str, int, dict]:
        return 'pokemon_red', 2, self._state_options

    def get_state(self) -> bytes:
        machine = io.BytesIO()
        self.pyboy.save_state(machine)
        tiles, values = self.visits.to_bytes()
        counters = np.array([self._steps, *self._position], np.int64)
        progress = np.array([self._progress[key] for key in REWARD_WEIGHTS], np.float64)
        return pack_parts(machine.getvalue(), self._screen.tobytes(), tiles, values, counters.tobytes(),
                          progress.tobytes())

    def set_state(self, payload: bytes) -> dict[str, np.ndarray]:
        machine, screen, tiles, values, counters, progress = unpack_parts(payload, 6, 'pokemon_red')
        self.pyboy.load_state(io.BytesIO(machine))
        self._screen[...] = np.frombuffer(screen, np.uint8).reshape(PACKED_SHAPE)  # the frame the state showed
        self.visits.load_bytes(tiles, values)
        steps, *position = np.frombuffer(counters, np.int64).tolist()
        self._steps, self._position = steps, (position[0], position[1], position[2])
        self._progress = dict(zip(REWARD_WEIGHTS, np.frombuffer(progress, np.float64).tolist()))
        self._episode = dict.fromkeys(TERMS, 0.0)
        self._waited = 0
        return self._observe(self._event_bytes())

    def render(self) -> np.ndarray:
        return self.pyboy.screen.ndarray[:, :, :3].copy()

    def close(self) -> None:
        self.pyboy.stop(save=False)


def _build_policy() -> type:
    """The family's policy class, defined here because it needs torch (see lazy_policy)."""
    import torch
    from torch import nn

    from pufferlib import models
    from pufferlib.emulation import Nativizer

    class Policy(models.Policy):
        """Unpacks the observation on the policy's device: the 2-bit screen and visit map as two channels
        of a Nature conv stack, the event flags as bits into a linear layer; both -> hidden.

        pufferlib.models.Policy adds the action and value heads.
        """

        def __init__(self, env: Any, hidden_size: int = 256, event_features: int = 64) -> None:
            super().__init__(env, hidden_size)
            self.nativize = Nativizer(env.obs_dtype)
            missing = {'screen', 'visits', 'events'} - set(env.obs_dtype.names or ())
            if missing:
                raise APIUsageError(f'the Pokémon policy needs the pokemon_red observation; it lacks {sorted(missing)}')
            self.cnn = nn.Sequential(
                models.layer_init(nn.Conv2d(2, 32, 8, stride=4)), nn.ReLU(),
                models.layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
                models.layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
                nn.Flatten())
            with torch.no_grad():
                features = self.cnn(torch.zeros(1, 2, *SCREEN_SHAPE)).shape[1]
            flags = env.obs_dtype['events'].shape[0] * 8
            self.events = nn.Sequential(models.layer_init(nn.Linear(flags, event_features)), nn.ReLU())
            self.encoder = nn.Sequential(models.layer_init(nn.Linear(features + event_features, hidden_size)),
                                         nn.ReLU())

        def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
            native = self.nativize(obs.reshape(-1, obs.shape[-1]))
            pixels = torch.stack([unpack_screen(native['screen']), unpack_screen(native['visits'])], dim=1)
            flags = unpack_events(native['events']).float()
            return self.encoder(torch.cat([self.cnn(pixels.float() / 3.0), self.events(flags)], dim=1))

    return Policy


__getattr__ = lazy_policy(__name__, _build_policy)
