"""The 16 Procgen games: `procgen_bigfish`, `procgen_coinrun`, ...

Upstream `procgen` has no wheels for Python 3.11; `procgen-mirror` 0.10.7 (the same code, rebuilt)
has them, and runs on numpy 2 although its metadata (and gym3's) still say numpy<2, so both are
installed with --no-deps (see docs/environments.md). `gym` 0.26 is needed only because
`import procgen` registers its ids there; we drive the gym3 env directly, because gym 0.26's
checker wrapper calls np.bool8, which numpy 2 removed.

Observations: uint8 [64, 64, 3] RGB; actions: Discrete(15). Procgen resets itself when an episode
ends (the returned observation is already the next level's); `max_episode_steps` adds a cap of
ours (a truncation), which the game's own limits (e.g. 1000 steps for coinrun) come before.

Closing: gym3 closes an env in `__del__`, through the env's cffi library object. That object's
first lookup of a C function takes a lock of the FFI that all gym3 envs share, and the lock is not
reentrant; a garbage-collector pass that runs inside such a lookup (while the next env is being
built) and frees an unclosed env then deadlocks the process. So every gym3 env we start looks up
its close function at once (a later close then takes no lock), and is closed by `close()`, by a
finalizer when our env is dropped, and on the error paths.

Freeing: gym3 hands its numpy buffers to C through cffi objects that hold exports of the arrays'
memoryviews. Left to the collector (at interpreter exit, or in a cycle), a memoryview may be cleared
before the cffi object that exports it ("BufferError: memoryview has 1 exported buffer"), and the
process then segfaults. So closing also drops those cffi objects first, in that order, by reference
count, and nothing of the kind is left for the collector.
"""
import weakref
from types import SimpleNamespace
from typing import Any, SupportsInt

import gymnasium
import numpy as np

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import (APIUsageError, PufferEnv, StateError, pack_parts, rng_from_state, rng_state,
                                 unpack_parts)

GAMES = ('bigfish', 'bossfight', 'caveflyer', 'chaser', 'climber', 'coinrun', 'dodgeball', 'fruitbot',
         'heist', 'jumper', 'leaper', 'maze', 'miner', 'ninja', 'plunder', 'starpilot')
DISTRIBUTION_MODES = ('easy', 'hard', 'extreme', 'memory', 'exploration')
INSTALL = 'pip install --no-deps procgen-mirror==0.10.7 gym3==0.3.3'


def env_names() -> list[str]:
    return [f'procgen_{game}' for game in GAMES]


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs: distribution_mode ('easy'), num_levels (0 = unlimited), start_level, max_episode_steps,
    and any other ProcgenGym3Env option (use_backgrounds, restrict_themes, ...)."""
    check_name(name, env_names(), 'Procgen')
    require('gym3', 'procgen', also=INSTALL)
    require('procgen', 'procgen', also=INSTALL)
    from pufferlib.emulation import GymnasiumPufferEnv
    env = ProcgenEnv(name[len('procgen_'):], **kwargs)
    try:
        return GymnasiumPufferEnv(env=env, buf=buf, seed=seed)
    except BaseException:
        env.close()
        raise


# gym3's cffi views of its numpy buffers (gym3.libenv.CEnv), dropped before the arrays they export.
_GYM3_C_BUFFERS = ('_c_buffers', '_c_ob_buffers', '_c_ac_buffers', '_c_info_buffers', '_c_rew_buffer',
                   '_c_first_buffer')


def close_gym3(env: Any) -> None:
    """Close a gym3 env and free its buffers in a safe order (see the module docstring)."""
    env.close()
    for name in _GYM3_C_BUFFERS:
        if hasattr(env, name):
            setattr(env, name, None)


def start_gym3(**options: Any) -> Any:
    """A procgen.ProcgenGym3Env that can be closed from a garbage-collector pass (see the module docstring)."""
    from procgen import ProcgenGym3Env
    env = ProcgenGym3Env(**options)
    # cffi caches a function on the library object at its first lookup, the one that takes the lock.
    _ = env._c_lib.libenv_close
    return env


class ProcgenEnv(gymnasium.Env):
    """One Procgen game as a Gymnasium env (procgen's own gym adapter needs gym's checker, see above)."""

    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, game: str, distribution_mode: str = 'easy', num_levels: int = 0, start_level: int = 0,
                 max_episode_steps: int | None = None, render_mode: str | None = None, **options: Any) -> None:
        from gymnasium import spaces
        if game not in GAMES:
            raise APIUsageError(f'unknown procgen game {game!r}; games: {", ".join(GAMES)}')
        if distribution_mode not in DISTRIBUTION_MODES:
            raise APIUsageError(f'distribution_mode must be one of {DISTRIBUTION_MODES}, got {distribution_mode!r}')
        self.game, self.distribution_mode = game, distribution_mode
        self.num_levels, self.start_level, self.options = int(num_levels), int(start_level), options
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, (64, 64, 3), np.uint8)
        self.action_space = spaces.Discrete(15)
        self._env: Any = None  # procgen.ProcgenGym3Env once started
        self._closer: weakref.finalize | None = None  # closes self._env if this env is dropped unclosed
        # the first observation of the next episode, already produced by procgen
        self._pending: np.ndarray | None = None
        self._steps = 0
        self._action = np.zeros(1, np.int32)
        self._last_obs = np.zeros((64, 64, 3), np.uint8)  # what reset or step returned last (for saved states)

    def _start(self, seed: int | None) -> None:
        self.close()
        # rand_seed drives level sampling; procgen's own seeding when none is given is random.
        env = start_gym3(num=1, env_name=self.game, distribution_mode=self.distribution_mode,
                         num_levels=self.num_levels, start_level=self.start_level,
                         rand_seed=int(seed) if seed is not None else None, num_threads=0, **self.options)
        # The finalizer holds the gym3 env, not this one, so it can run when this env is collected.
        self._env, self._closer = env, weakref.finalize(self, close_gym3, env)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None or self._env is None:
            self._start(seed if seed is not None else int(self.np_random.integers(2**31 - 1)))
            self._pending = None
        if self._pending is None:
            _, ob, _ = self._env.observe()
            self._pending = ob['rgb'][0].copy()
        ob, self._pending = self._pending, None
        self._steps = 0
        self._last_obs = ob
        return ob, {}

    def step(self, action: SupportsInt) -> tuple[np.ndarray, float, bool, bool, dict[str, float]]:
        if self._pending is not None:
            raise APIUsageError('ProcgenEnv: the episode ended; call reset()')
        self._action[0] = action
        self._env.act(self._action)
        reward, ob, first = self._env.observe()
        self._steps += 1
        ob = ob['rgb'][0].copy()
        terminated = bool(first[0])
        truncated = not terminated and self.max_episode_steps is not None and self._steps >= self.max_episode_steps
        info: dict[str, float] = {}
        if terminated:
            self._pending = ob  # procgen already started the next level
            info['level_complete'] = float(self._env.get_info()[0].get('prev_level_complete', 0))
        elif truncated:
            self._start(int(self.np_random.integers(2**31 - 1)))  # a fresh level: no mid-episode resume
        self._last_obs = ob
        return ob, float(reward[0]), terminated, truncated, info

    # ---- saved states: gym3's get_state / set_state (procgen serialises the game, its RNG included) ----

    def state_identity(self) -> tuple[str, int, dict]:
        return f'procgen_{self.game}', 1, dict(distribution_mode=self.distribution_mode, num_levels=self.num_levels,
                                               start_level=self.start_level, max_episode_steps=self.max_episode_steps,
                                               **self.options)

    def get_state(self) -> bytes:
        if self._env is None:
            raise StateError(f'procgen_{self.game}: get_state() before reset(); reset the env first')
        [game] = self._env.callmethod('get_state')
        pending = b'' if self._pending is None else self._pending.tobytes()
        return pack_parts(game, self._last_obs.tobytes(), pending, np.array([self._steps], np.int64).tobytes(),
                          rng_state(self.np_random))

    def set_state(self, payload: bytes) -> np.ndarray:
        game, last, pending, steps, rng = unpack_parts(payload, 5, f'procgen_{self.game}')
        if self._env is None:
            self._start(0)
        self._env.callmethod('set_state', [game])
        self._last_obs = np.frombuffer(last, np.uint8).reshape(64, 64, 3).copy()
        self._pending = np.frombuffer(pending, np.uint8).reshape(64, 64, 3).copy() if pending else None
        self._steps = int(np.frombuffer(steps, np.int64)[0])
        self._np_random = rng_from_state(rng)
        return self._last_obs

    def render(self) -> np.ndarray:
        _, ob, _ = self._env.observe()
        return ob['rgb'][0]

    def close(self) -> None:
        if self._closer is not None:
            self._closer()  # closes the gym3 env once, and unregisters itself
        self._env, self._closer = None, None
