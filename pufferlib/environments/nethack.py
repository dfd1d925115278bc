"""NetHack through the NetHack Learning Environment (nle): `nethack` (NetHackScore) and the other
NLE tasks, plus the glyph policy that the MiniHack family shares.

Observations stay NLE's dict (by default glyphs [21, 79] int16, blstats [27] int64, message [256]
uint8); emulation lays them out as one byte row and the policy nativizes them in its first line.

nle pins an exact gymnasium (1.3.0 wants gymnasium==1.2.0) but runs on ours, so it is installed
with --no-deps; see docs/environments.md.

Seeding: NLE's reset(seed=...) seeds only the Python-side RNG; the game draws from NetHack's own
RNGs (core and disp, and optionally a level generator), which NLE seeds from the clock unless
told otherwise. `SeededNLE` derives those seeds from reset(seed), so an env and a vector of envs
are reproducible under a seed, in every backend. `nethack_challenge` is the exception: the NetHack
Challenge forbids choosing NetHack's seeds (NLE raises if asked), so there reset(seed) seeds only
NLE's Python-side RNG and the games, their character included, differ from run to run.
"""
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import gymnasium
import numpy as np

from pufferlib.environments._support import check_name, lazy_policy, require
from pufferlib.pufferenv import APIUsageError, PufferEnv

TASKS = {
    'nethack': 'NetHackScore-v0',
    'nethack_staircase': 'NetHackStaircase-v0',
    'nethack_staircase_pet': 'NetHackStaircasePet-v0',
    'nethack_oracle': 'NetHackOracle-v0',
    'nethack_gold': 'NetHackGold-v0',
    'nethack_eat': 'NetHackEat-v0',
    'nethack_scout': 'NetHackScout-v0',
    'nethack_challenge': 'NetHackChallenge-v0',
}
OBSERVATION_KEYS = ('glyphs', 'blstats', 'message')
NLE_INSTALL = 'pip install --no-deps nle==1.3.0'
# The challenge's rules fix the seeds (NLE refuses seed()); these tasks are seeded on the Python side only.
UNSEEDABLE = ('nethack_challenge',)
NUM_GLYPHS = 5977  # nle.nethack.MAX_GLYPH + 1 in nle 1.x; read from the env when it is there


def env_names() -> list[str]:
    return list(TASKS)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None,
         observation_keys: Sequence[str] = OBSERVATION_KEYS, max_episode_steps: int | None = None,
         **kwargs: Any) -> PufferEnv:
    """kwargs go to the NLE task (character, penalty_step, savedir, ...)."""
    check_name(name, env_names(), 'NetHack')
    require('nle', 'nethack', also=NLE_INSTALL)
    import gymnasium
    from pufferlib.emulation import GymnasiumPufferEnv
    kwargs['observation_keys'] = tuple(observation_keys)
    if max_episode_steps is not None:
        kwargs['max_episode_steps'] = int(max_episode_steps)  # NLE's own step cap (it truncates)
    kwargs.setdefault('fix_moon_phase', True)  # see SeededNLE
    seed_game = name not in UNSEEDABLE
    return GymnasiumPufferEnv(env_creator=lambda: SeededNLE(gymnasium.make(TASKS[name], **kwargs), seed_game),
                              buf=buf, seed=seed)


class SeededNLE(gymnasium.Wrapper):
    """Seeds NetHack's own RNGs on reset, so that reset(seed=s) always starts the same game.

    reset(seed=s) starts a generator from s; every reset from then on (an unseeded one too) takes
    NetHack's core and disp seeds from it, so the episodes that follow a seeded reset are
    reproducible and differ from one another. Reseeding, NetHack's anti-automation habit of mixing
    in true randomness, is turned off. Until the first seeded reset, NLE's own seeding applies. Make
    the env with fix_moon_phase=True (the bindings do) or the game still reads the calendar: the
    moon phase, Friday the 13th and night time change luck and monsters. With MiniHack's own
    `seeds=` option (a list of level seeds), MiniHack picks the level seed itself, from Python's
    global random module.

    With seed_game=False (the NetHack Challenge, which refuses seeding) NetHack's RNGs are left to
    NLE: reset(seed=s) seeds only NLE's Python-side RNG, and the games are not reproducible.
    """

    # Read by GymnasiumPufferEnv: get_state / set_state refuse with this reason.
    state_unsupported = ('NLE keeps the game in the C globals of libnethack and offers no way to save or restore '
                         'it in memory (its save files end the game)')

    def __init__(self, env: gymnasium.Env, seed_game: bool = True) -> None:
        super().__init__(env)
        self.seed_game = seed_game
        self._seeds: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None and self.seed_game:
            self._seeds = np.random.default_rng(seed)
        if self._seeds is not None:
            core, disp = (int(x) for x in self._seeds.integers(1, 2**63 - 1, size=2))
            nle: Any = self.env.unwrapped  # NLE's own env: its seed() takes NetHack's two seeds
            nle.seed(core, disp, reseed=False)
        return self.env.reset(seed=seed, options=options)


def _build_policy() -> type:
    """The family's policy class, defined here because it needs torch (see lazy_policy)."""
    import numpy as np
    import torch
    from torch import nn

    from pufferlib import models
    from pufferlib.emulation import Nativizer

    class Policy(models.Policy):
        """Glyph map + bottom-line stats + message -> hidden; pufferlib.models.Policy adds the heads.

        glyphs: an embedding per glyph id, two strided convolutions over the 21x79 map.
        blstats: signed log scaling (HP, gold, the turn counter span orders of magnitude), a linear layer.
        message: a byte embedding over its 256 characters, a linear layer. Absent keys are skipped.
        """

        def __init__(self, env: Any, hidden_size: int = 256, glyph_dim: int = 32, conv_channels: int = 32) -> None:
            super().__init__(env, hidden_size)
            self.nativize = Nativizer(env.obs_dtype)
            names = env.obs_dtype.names
            if 'glyphs' not in names:
                raise APIUsageError(f'the NetHack policy needs a glyphs observation, got keys {names}')
            native = getattr(env, 'native_observation_space', None)
            num_glyphs = NUM_GLYPHS
            if native is not None and 'glyphs' in getattr(native, 'spaces', {}):
                num_glyphs = int(np.max(native['glyphs'].high)) + 1
            self.glyph_embed = nn.Embedding(num_glyphs, glyph_dim)
            self.glyph_conv = nn.Sequential(
                models.layer_init(nn.Conv2d(glyph_dim, conv_channels, 3, stride=2, padding=1)), nn.ReLU(),
                models.layer_init(nn.Conv2d(conv_channels, conv_channels, 3, stride=2, padding=1)), nn.ReLU(),
                nn.Flatten())
            with torch.no_grad():
                features = self.glyph_conv(torch.zeros(1, glyph_dim, *env.obs_dtype['glyphs'].shape)).shape[1]
            self.use_blstats = 'blstats' in names
            self.use_message = 'message' in names
            if self.use_blstats:
                blstats_size = env.obs_dtype['blstats'].shape[0]
                self.blstats_fc = nn.Sequential(models.layer_init(nn.Linear(blstats_size, 64)), nn.ReLU())
                features += 64
            if self.use_message:
                self.message_embed = nn.Embedding(256, 8)
                self.message_fc = nn.Sequential(
                    models.layer_init(nn.Linear(env.obs_dtype['message'].shape[0] * 8, 64)), nn.ReLU())
                features += 64
            self.encoder = nn.Sequential(models.layer_init(nn.Linear(features, hidden_size)), nn.ReLU())

        def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
            native = self.nativize(obs.reshape(-1, obs.shape[-1]))
            glyphs = self.glyph_embed(native['glyphs'].long()).permute(0, 3, 1, 2)
            parts = [self.glyph_conv(glyphs)]
            if self.use_blstats:
                stats = native['blstats'].float()
                parts.append(self.blstats_fc(torch.sign(stats) * torch.log1p(stats.abs())))
            if self.use_message:
                message = self.message_embed(native['message'].long())
                parts.append(self.message_fc(message.flatten(1)))
            return self.encoder(torch.cat(parts, dim=1))

    return Policy


__getattr__ = lazy_policy(__name__, _build_policy)
