"""The Gymnasium wrapper (GymnasiumPufferEnv), the old gym API it accepts, and the way back to a plain
Gymnasium env (GymnasiumAdapter)."""
import numbers
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.emulation.base import _create, _Emulated
from pufferlib.emulation.checks import ObservationMismatch, check_observation, mismatch_error
from pufferlib.pufferenv import (APIUsageError, PufferEnv, SpaceError, StateError, StateIdentity, check_seed,
                                 not_a_reward, state_hash)


# ---------------------------------------------------------------------------------------------
# Old gym API (0.2x): procgen and friends
# ---------------------------------------------------------------------------------------------

def convert_space(space: Any) -> spaces.Space:
    """Convert a gym (pre-Gymnasium) space to its Gymnasium twin, by class name."""
    if isinstance(space, spaces.Space):
        return space
    name = type(space).__name__
    if name == 'Box':
        return spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if name == 'Discrete':
        return spaces.Discrete(int(space.n), start=int(getattr(space, 'start', 0)))
    if name == 'MultiDiscrete':
        return spaces.MultiDiscrete(np.asarray(space.nvec))
    if name == 'MultiBinary':
        return spaces.MultiBinary(space.n)
    if name == 'Dict':
        return spaces.Dict({k: convert_space(v) for k, v in space.spaces.items()})
    if name == 'Tuple':
        return spaces.Tuple([convert_space(v) for v in space.spaces])
    raise SpaceError(f'cannot convert space {space!r} of type {type(space).__module__}.{name} to Gymnasium')


class OldGymEnv(gymnasium.Env):
    """Presents an env with the old gym API (reset -> obs, step -> 4-tuple, env.seed) as Gymnasium.

    `done` is split using the `TimeLimit.truncated` info key the old TimeLimit wrapper sets.
    Envs already on the 0.26 API (reset -> (obs, info), 5-tuple steps) pass through unchanged.
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self.observation_space = convert_space(env.observation_space)
        self.action_space = convert_space(env.action_space)
        self.render_mode = getattr(env, 'render_mode', None)
        self.metadata = getattr(env, 'metadata', {}) or {}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if seed is not None and hasattr(self.env, 'seed'):
            self.env.seed(seed)
            result = self.env.reset()
        elif seed is not None:
            result = self.env.reset(seed=seed)
        else:
            result = self.env.reset()
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            return result
        return result, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        result = self.env.step(action)
        if len(result) == 5:
            return result
        obs, reward, done, info = result
        truncated = bool(info.get('TimeLimit.truncated', False))
        return obs, reward, bool(done) and not truncated, truncated, info

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def ensure_gymnasium(env: Any) -> gymnasium.Env:
    if isinstance(env, gymnasium.Env):
        return env
    if all(hasattr(env, a) for a in ('reset', 'step', 'observation_space', 'action_space')):
        return OldGymEnv(env)
    raise APIUsageError(f'expected a Gymnasium (or old gym) env, got {type(env).__name__}: it needs reset, '
                        'step, observation_space and action_space')


# ---------------------------------------------------------------------------------------------
# The wrapper
# ---------------------------------------------------------------------------------------------

def _scalar_infos(info: dict) -> dict[str, float]:
    """Keep the numeric scalars of an env's final info: they are what is worth averaging."""
    out = {}
    for key, value in info.items():
        if isinstance(value, (numbers.Number, np.number, bool, np.bool_)):
            # numbers.Number declares no __float__; a complex value raises here, as it always has.
            out[key] = float(value)  # type: ignore[arg-type]
        elif isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in 'biuf':
            out[key] = float(value.reshape(()))
    return out


class GymnasiumPufferEnv(_Emulated):
    """Wrap one Gymnasium (or old gym) env as a single-agent PufferEnv.

        env = GymnasiumPufferEnv(env_creator=gymnasium.make, env_args=('CartPole-v1',))
        obs, infos = env.reset(seed=0)
        obs, rewards, terminals, truncations, infos = env.step(np.array([1]))

    `autoreset=False` gives Gymnasium's own episode semantics instead of same-step autoreset: the
    episode-ending step shows the final observation, and the next step needs a reset() first.
    GymnasiumAdapter turns it off; vector envs need it on.
    """

    def __init__(self, env: Any = None, env_creator: Callable | None = None, env_args: tuple = (),
                 env_kwargs: dict | None = None, buf: SimpleNamespace | None = None, seed: int | None = None,
                 autoreset: bool = True) -> None:
        self.env = ensure_gymnasium(_create(env, env_creator, env_args, env_kwargs, 'GymnasiumPufferEnv'))
        self.num_agents = 1
        self._setup_spaces(self.env.observation_space, self.env.action_space)
        super().__init__(buf)
        self._bind_rows()
        self._seed = check_seed(seed, self.describe)
        self.autoreset = bool(autoreset)
        self.initialized = False
        self._steppable = False  # reset, and (without autoreset) the episode has not ended since
        self.episode_return = 0.0
        self.episode_length = 0
        self.render_mode = getattr(self.env, 'render_mode', None)
        self.supports_state = all(callable(getattr(self.env, name, None))
                                  for name in ('state_identity', 'get_state', 'set_state'))
        self.state_unsupported = getattr(self.env, 'state_unsupported', None)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict]]:
        seed = check_seed(seed, self.describe)
        if seed is None and not self.initialized:
            seed = self._seed
        ob, _ = self.env.reset(seed=seed)
        if not self.initialized:
            check_observation(self.native_observation_space, ob, self.describe())
        self._write_checked(ob)
        self.rewards[0] = 0.0
        self.terminals[0] = False
        self.truncations[0] = False
        self.masks[0] = True
        self.episode_return, self.episode_length = 0.0, 0
        self.initialized = self._steppable = True
        return self.observations, []

    def _write_checked(self, ob: Any) -> None:
        try:
            self._write_row(0, ob)
        except ObservationMismatch as exc:
            raise mismatch_error(self.describe(), str(exc)) from None
        except (ValueError, TypeError, KeyError, IndexError):
            check_observation(self.native_observation_space, ob, self.describe())
            raise

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        if not self._steppable:
            if not self.initialized:
                raise APIUsageError(f'{self.describe()}: step() called before reset(); call reset(seed) first')
            raise APIUsageError(f'{self.describe()}: the episode ended and autoreset is off; call reset() before '
                                'step()')
        if actions is not self.actions or not self._checked_first_action:
            self._take_actions(actions)  # a vector env passes its own checked buffer: nothing to copy or check
        ob, reward, terminated, truncated, info = self.env.step(self._first_action())
        # Gymnasium types the reward as SupportsFloat; it is a number, and float() would change the sum
        # (NumPy 2 keeps a float32 reward's running sum in float32).
        try:
            self.episode_return += reward  # type: ignore[operator]
        except TypeError:  # a string, None, a list: free to ask only once it failed
            raise not_a_reward(self.describe(), reward) from None
        self.episode_length += 1
        self.rewards[0] = reward
        self.terminals[0] = terminated
        self.truncations[0] = truncated
        infos = []
        if terminated or truncated:
            stats = _scalar_infos(info)
            stats['episode_return'] = float(self.episode_return)
            stats['episode_length'] = self.episode_length
            infos.append(stats)
            if self.autoreset:
                ob, _ = self.env.reset()
                self.episode_return, self.episode_length = 0.0, 0
            else:
                self._steppable = False
        if (self._write is None and ob.__class__ is np.ndarray and ob.dtype is self._row_dtype
                and ob.shape == self._row_shape):
            self.observations[0] = ob  # a Box observation the row holds as it is: what _write_row does, inline
        else:
            self._write_checked(ob)
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    # ---- saved states: passed through to the wrapped env when it implements them ----
    # The wrapped env's side of it: `state_identity() -> (name, version, options)` (the options are
    # hashed), `get_state() -> bytes` and `set_state(payload) -> the restored observation`; an env that
    # cannot save may say why in `state_unsupported`. The episode's return and length (the stats this
    # wrapper reports) restart at a load.

    def state_identity(self) -> StateIdentity:
        if not self.supports_state:
            raise self._no_state()
        env: Any = self.env  # implements the state methods (supports_state)
        name, version, options = env.state_identity()
        return StateIdentity(name, int(version), state_hash(options), 0)

    def _save_game(self, game: int) -> bytes:
        if not self.initialized:
            raise StateError(f'{self.describe()}: get_state() before reset(); reset the env first')
        env: Any = self.env
        return bytes(env.get_state())

    def _load_game(self, game: int, payload: memoryview) -> None:
        env: Any = self.env
        ob = env.set_state(bytes(payload))
        self._write_checked(ob)
        self.masks[0] = True
        self.episode_return, self.episode_length = 0.0, 0
        self.initialized = self._steppable = True

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class GymnasiumAdapter(gymnasium.Env):
    """Expose a single-agent PufferEnv (emulated or Ocean) as a plain Gymnasium env with flat spaces.

    Observations are the flat rows. Episodes follow Gymnasium, not the vector envs' same-step
    autoreset: the episode-ending step returns the final observation, and step() after it raises
    until reset() is called. An emulated env (GymnasiumPufferEnv) gets its autoreset turned off for
    this, so its final observation is the wrapped env's own. An Ocean env resets inside C in the
    same step, so its final observation is gone: there the episode-ending step returns the next
    episode's first observation. Useful for Gymnasium tooling and SB3.
    """

    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, puffer_env: PufferEnv) -> None:
        if puffer_env.num_agents != 1:
            raise APIUsageError(f'GymnasiumAdapter needs a single-agent env, got num_agents={puffer_env.num_agents}')
        self.puffer_env = puffer_env
        if hasattr(puffer_env, 'autoreset'):
            puffer_env.autoreset = False
        self.observation_space = puffer_env.single_observation_space
        self.action_space = puffer_env.single_action_space
        self.render_mode = getattr(puffer_env, 'render_mode', None)
        self._episode_over = True  # nothing to step until reset()

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        obs, infos = self.puffer_env.reset(seed=seed)
        self._episode_over = False
        return obs[0].copy(), _merge(infos)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._episode_over:
            raise APIUsageError('GymnasiumAdapter: step() after the episode ended (or before the first reset()); '
                                'call reset() first')
        # Through the env's own action check: a NaN or out-of-range action is refused on every step.
        obs, rewards, terminals, truncations, infos = self.puffer_env.step(np.asarray(action))
        terminal, truncated = bool(terminals[0]), bool(truncations[0])
        self._episode_over = terminal or truncated
        return obs[0].copy(), float(rewards[0]), terminal, truncated, _merge(infos)

    def render(self) -> Any:
        return self.puffer_env.render()

    def close(self) -> None:
        self.puffer_env.close()


def _merge(infos: list[dict]) -> dict:
    out = {}
    for info in infos:
        out.update(info)
    return out
