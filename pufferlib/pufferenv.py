"""The one contract every environment in pufferlib satisfies, and the errors users can cause.

A PufferEnv owns `num_agents` rows in six preallocated arrays:

    observations  [num_agents, *single_observation_space.shape]  single_observation_space.dtype
    actions       [num_agents, *single_action_space.shape]       int32 (discrete) or float32 (Box)
    rewards       [num_agents]                                    float32
    terminals     [num_agents]                                    bool
    truncations   [num_agents]                                    bool
    masks         [num_agents]                                    bool (False: padding, no agent there)

`reset(seed)` fills observations and returns `(observations, infos)`; `step(actions)` copies the actions
in, steps, fills every array and returns `(observations, rewards, terminals, truncations, infos)`.
`infos` is a list of dicts that is empty on almost every step.

Autoreset is "same step": when an episode ends on a step, that step's rewards/terminals/truncations
describe the final transition and the observation already belongs to the next episode. No step is
spent on resetting, which is what a [segments, horizon] rollout buffer wants. Every backend in
`pufferlib.vector` keeps this behaviour because the envs themselves implement it.

The arrays are handed in through `buf` so a vector backend can place them in shared memory; with
`buf=None` the env allocates its own.
"""
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
from gymnasium import spaces


class PufferError(Exception):
    """Base class of every error pufferlib raises on purpose."""


class APIUsageError(PufferError, ValueError):
    """The caller used the API in a way it does not support (wrong shape, order of calls, ...)."""


class APITypeError(PufferError, TypeError):
    """An argument has the wrong type (a list where a tensor goes, a string where a number goes, ...)."""


class MissingDependencyError(PufferError, ImportError):
    """An optional package is not installed; the message says which pip extra installs it."""


class SpaceError(PufferError, TypeError):
    """An observation or action does not match its space, or a space cannot be emulated."""


class EnvError(PufferError, RuntimeError):
    """An environment, or the worker process running it, failed."""


def option_kind(value) -> str | None:
    """'bool', 'int' or 'float' for a plain option value (numpy scalars count as their Python kind), else None."""
    if isinstance(value, (bool, np.bool_)):
        return 'bool'
    if isinstance(value, (int, np.integer)):
        return 'int'
    if isinstance(value, (float, np.floating)):
        return 'float'
    return None


def typed_option(value, kind: str) -> bool | int | float | None:
    """`value` as an option of `kind` ('bool', 'int' or 'float'), or None when it is not one.

    The one type rule for config files, flags and env keyword arguments: a bool is never a number,
    an int option takes only ints, a float option takes ints and floats.
    """
    given = option_kind(value)
    if given == kind:
        return {'bool': bool, 'int': int, 'float': float}[kind](value)
    if given == 'int' and kind == 'float':
        return float(value)
    return None


def action_dtype(space: spaces.Space) -> np.dtype:
    """Buffer dtype for a (flat) action space: int32 for discrete kinds, float32 for Box."""
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return np.dtype(np.int32)
    if isinstance(space, spaces.Box):
        return np.dtype(np.float32)
    raise SpaceError(f'flat action spaces are Discrete, MultiDiscrete or Box, got {space}')


def check_actions(actions, expected_shape: tuple, integer: bool, describe: Callable[[], str]) -> np.ndarray:
    """Return `actions` as an ndarray of `expected_shape`, or raise one error that says what is wrong.

    Cheap enough (a tuple compare and a dtype look-up) to run on every step; `describe()` names the
    caller and is only called to build an error message.
    """
    if not isinstance(actions, np.ndarray):
        actions = np.asarray(actions)
    if actions.shape != expected_shape:
        raise APIUsageError(f'{describe()}: actions must have shape {expected_shape}, got {actions.shape}')
    if integer and actions.dtype.kind not in 'iub':
        raise APIUsageError(f'{describe()}: discrete actions must be integers, got dtype {actions.dtype}')
    return actions


def make_buffers(observation_space: spaces.Space, action_space: spaces.Space, num_agents: int) -> SimpleNamespace:
    """Allocate the six arrays of one env (or of a whole vector, with num_agents summed)."""
    return SimpleNamespace(
        observations=np.zeros((num_agents, *observation_space.shape), dtype=observation_space.dtype),
        actions=np.zeros((num_agents, *action_space.shape), dtype=action_dtype(action_space)),
        rewards=np.zeros(num_agents, dtype=np.float32),
        terminals=np.zeros(num_agents, dtype=bool),
        truncations=np.zeros(num_agents, dtype=bool),
        masks=np.ones(num_agents, dtype=bool),
    )


BUFFER_NAMES = ('observations', 'actions', 'rewards', 'terminals', 'truncations', 'masks')


class PufferEnv:
    """Base class: subclasses set the spaces and `num_agents`, then call `super().__init__(buf)`.

    Required attributes before `__init__`: `single_observation_space`, `single_action_space`
    (flat: Box observations; Discrete, MultiDiscrete or Box actions) and `num_agents`.
    """

    single_observation_space = None
    single_action_space = None
    num_agents = 1
    # Emulated envs set this to the structured dtype of one observation row (see emulation.nativize).
    obs_dtype = None
    # And this to the original action space, for models that want the structure.
    native_action_space = None

    def __init__(self, buf: SimpleNamespace | None = None):
        for name in ('single_observation_space', 'single_action_space'):
            if getattr(self, name) is None:
                raise APIUsageError(f'{type(self).__name__} must set {name} before PufferEnv.__init__')
        if not isinstance(self.single_observation_space, spaces.Box):
            raise SpaceError(f'{type(self).__name__}.single_observation_space must be a Box '
                             f'(wrap structured spaces with pufferlib.emulation), got {self.single_observation_space}')
        action_dtype(self.single_action_space)  # validates the kind
        if buf is None:
            buf = make_buffers(self.single_observation_space, self.single_action_space, self.num_agents)
        else:
            check_buffers(buf, self.single_observation_space, self.single_action_space, self.num_agents,
                          owner=type(self).__name__)
        for name in BUFFER_NAMES:
            setattr(self, name, getattr(buf, name))

    @property
    def observation_space(self) -> spaces.Space:
        return batched_space(self.single_observation_space, self.num_agents)

    @property
    def action_space(self) -> spaces.Space:
        return batched_space(self.single_action_space, self.num_agents)

    def describe(self) -> str:
        """How errors name this env."""
        return type(self).__name__

    def copy_actions(self, actions) -> np.ndarray:
        """Check caller-supplied actions and copy them into `self.actions` (a no-op for that array itself).

        Out-of-range values are the env's to reject or clamp; int64 values beyond int32 wrap here.
        """
        if actions is self.actions:
            return
        if not isinstance(actions, np.ndarray):
            actions = np.asarray(actions)
        if self.num_agents == 1 and actions.size == self.actions.size:
            actions = actions.reshape(self.actions.shape)  # a lone agent may pass one unbatched action
        actions = check_actions(actions, self.actions.shape, self.actions.dtype.kind == 'i', lambda: (
            f'{self.describe()} (num_agents={self.num_agents}, action space {self.single_action_space})'))
        np.copyto(self.actions, actions, casting='unsafe')

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        raise NotImplementedError

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        raise NotImplementedError

    def render(self):
        return None

    def close(self) -> None:
        pass


def check_buffers(buf, observation_space: spaces.Space, action_space: spaces.Space, num_agents: int,
                  owner: str = 'env') -> None:
    shapes = {
        'observations': ((num_agents, *observation_space.shape), observation_space.dtype),
        'actions': ((num_agents, *action_space.shape), action_dtype(action_space)),
        'rewards': ((num_agents,), np.dtype(np.float32)),
        'terminals': ((num_agents,), np.dtype(bool)),
        'truncations': ((num_agents,), np.dtype(bool)),
        'masks': ((num_agents,), np.dtype(bool)),
    }
    for name, (shape, dtype) in shapes.items():
        arr = getattr(buf, name, None)
        if arr is None:
            raise APIUsageError(f'{owner}: buffer {name!r} is missing from buf')
        if arr.shape != shape or arr.dtype != dtype:
            raise APIUsageError(f'{owner}: buffer {name!r} must be {dtype}{list(shape)}, '
                                f'got {arr.dtype}{list(arr.shape)}')


def batched_space(space: spaces.Space, n: int) -> spaces.Space:
    """The space of n stacked rows of `space`."""
    if isinstance(space, spaces.Box):
        return spaces.Box(low=np.broadcast_to(space.low, space.shape)[None].repeat(n, 0),
                          high=np.broadcast_to(space.high, space.shape)[None].repeat(n, 0),
                          dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete(np.full(n, space.n), start=np.full(n, space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.MultiDiscrete(np.broadcast_to(space.nvec, (n, *space.nvec.shape)).copy(),
                                    start=np.broadcast_to(space.start, (n, *space.start.shape)).copy())
    raise SpaceError(f'cannot batch {space}')
