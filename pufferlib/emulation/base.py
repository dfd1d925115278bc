"""What both env wrappers share: creating the env, laying out its spaces and rows, writing observations
and checking the first actions (GymnasiumPufferEnv and PettingZooPufferEnv build on `_Emulated`)."""
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from pufferlib.emulation.checks import _compile_writer, _field_views, box_checker
from pufferlib.emulation.spaces import emulate_action_space, emulate_observation_space
from pufferlib.pufferenv import APIUsageError, MixedSpace, PufferEnv, mixed_problem


def _create(env: Any, env_creator: Callable | None, env_args: tuple, env_kwargs: dict | None, who: str) -> Any:
    if (env is None) == (env_creator is None):
        raise APIUsageError(f'{who} takes exactly one of env= (an env object) or env_creator= (a callable)')
    if env is None:
        if not callable(env_creator):
            raise APIUsageError(f'{who}: env_creator must be callable, got {type(env_creator).__name__}')
        env = env_creator(*env_args, **(env_kwargs or {}))
    return env


class _Emulated(PufferEnv):
    """Shared machinery: layouts, writers, action checks."""

    def _setup_spaces(self, obs_space: spaces.Space, act_space: spaces.Space) -> None:
        self.native_observation_space = obs_space
        self.native_action_space = act_space
        self.single_observation_space, self.obs_dtype = emulate_observation_space(obs_space)
        self.single_action_space, self._unflatten = emulate_action_space(act_space)
        self._write, self._field_paths = _compile_writer(obs_space, self.obs_dtype)
        if self._write is None:  # a Box: rows of its own dtype
            self._row_dtype = np.dtype(obs_space.dtype)
            self._check_box = box_checker(cast(spaces.Box, obs_space))
        self._discrete = isinstance(self.single_action_space, (spaces.Discrete, spaces.MultiDiscrete))
        self._action_high: np.int64 | np.ndarray
        if isinstance(self.single_action_space, spaces.Discrete):
            self._action_high = np.int64(self.single_action_space.n)
        elif isinstance(self.single_action_space, spaces.MultiDiscrete):
            self._action_high = self.single_action_space.nvec
        self._checked_first_action = False

    def _bind_rows(self) -> None:
        self._row_shape = self.observations.shape[1:]
        if self.obs_dtype is not None and self._field_paths is not None:  # exactly when there is a _write
            self._row_views = _field_views(self.observations, self.obs_dtype, self._field_paths)
        # Agent 0's native action, built once: a Discrete one is read straight from the buffer as a
        # Python int, without a numpy scalar in between (the single-agent step is hot in slow-env workers).
        if isinstance(self.native_action_space, spaces.Discrete):
            item, start = self.actions.item, int(self.native_action_space.start)
            self._first_action = lambda: item(0) + start
        else:
            unflatten, actions = self._unflatten, self.actions
            self._first_action = lambda: unflatten(actions[0])

    def _write_row(self, row: int, ob: Any) -> None:
        """Write one native observation into its row; ValueError if a shape differs from the space's,
        ObservationMismatch (a ValueError) if a value would not be stored as it is."""
        if self._write is None:
            shape = self._row_shape
            # Compared every step because numpy would broadcast a (1,) or scalar into every feature.
            if getattr(ob, 'shape', None) != shape and np.shape(ob) != shape:
                raise ValueError('the observation does not have the shape of its space')
            if ob.__class__ is not np.ndarray or ob.dtype is not self._row_dtype:
                self._check_box(ob)
            self.observations[row] = ob
        else:
            self._write(ob, self._row_views[row])

    def _take_actions(self, actions: npt.ArrayLike) -> None:
        self.copy_actions(actions)
        if not self._checked_first_action:
            self._check_action_values()
            self._checked_first_action = True

    def _check_action_values(self) -> None:
        if isinstance(self.single_action_space, MixedSpace):
            problem = mixed_problem(self.single_action_space, self.actions)
            if problem:
                raise APIUsageError(f'{self.describe()}: {problem}')
        elif self._discrete:
            bad = (self.actions < 0) | (self.actions >= self._action_high)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise APIUsageError(f'{self.describe()}: action {self.actions[row].tolist()} for agent row {row} is '
                                    f'outside {self.single_action_space}')
        elif not np.all(np.isfinite(self.actions)):
            raise APIUsageError(f'{self.describe()}: actions contain NaN or inf: {self.actions.tolist()}')

    def describe(self) -> str:
        return f'{type(self).__name__}({type(getattr(self, "env", None)).__name__})'
