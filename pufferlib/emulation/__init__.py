"""Emulation: make any Gymnasium or PettingZoo env look like a flat, single-array env.

Observations of any nesting (Dict, Tuple, Box, Discrete, MultiDiscrete, MultiBinary, mixed dtypes)
are laid out as a packed numpy structured dtype; each agent's observation is one flat row of that
layout. When every leaf shares a dtype the row has that dtype (floats stay floats); otherwise the
row is raw bytes (uint8). `Nativizer` turns a batch of rows back into the nested structure, for
numpy arrays (zero-copy field views) and torch tensors, looping over fields, never over the batch.

Structured action spaces (Dict, Tuple) become one flat row and are unflattened before the env sees them:
discrete leaves only a MultiDiscrete, Box leaves only a Box, both a `pufferlib.pufferenv.MixedSpace` (the
discrete columns, then the Box elements, in one float32 row); Discrete, MultiDiscrete and Box actions pass
through.

Both wrappers implement `pufferlib.PufferEnv`: preallocated rows, same-step autoreset, and an
episode-statistics layer that emits `{'episode_return', 'episode_length', ...}` once per episode,
so `infos` is an empty list on every other step.

Layout: `spaces` (row layouts, Nativizer, flat actions), `checks` (writing observations into rows
and checking them), `base` (what both wrappers share), `gymnasium_env` (GymnasiumPufferEnv, the old
gym API, GymnasiumAdapter), `pettingzoo_env` (PettingZooPufferEnv) and `pettingzoo_adapter` (the way
back: PettingZooAdapter); every public name is importable from here.
"""
from typing import TYPE_CHECKING, Any

from pufferlib.emulation.gymnasium_env import (GymnasiumAdapter, GymnasiumPufferEnv, OldGymEnv, convert_space,
                                               ensure_gymnasium)
from pufferlib.emulation.pettingzoo_env import MASK_KEY, MASK_SOURCES, PettingZooPufferEnv
from pufferlib.emulation.checks import check_observation, describe_mismatch
from pufferlib.emulation.spaces import LEAF_SPACES, Nativizer, emulate_action_space, emulate_observation_space, nativize

if TYPE_CHECKING:
    from pufferlib.emulation.pettingzoo_adapter import PettingZooAdapter

__all__ = ['LEAF_SPACES', 'MASK_KEY', 'MASK_SOURCES', 'GymnasiumAdapter', 'GymnasiumPufferEnv', 'Nativizer',
           'OldGymEnv', 'PettingZooAdapter', 'PettingZooPufferEnv', 'check_observation', 'convert_space',
           'describe_mismatch', 'emulate_action_space', 'emulate_observation_space', 'ensure_gymnasium', 'nativize']


def __getattr__(name: str) -> Any:
    # PettingZooAdapter subclasses PettingZoo's ParallelEnv: imported on first use, so that importing
    # emulation does not import PettingZoo (PettingZooPufferEnv imports it lazily too).
    if name == 'PettingZooAdapter':
        from pufferlib.emulation.pettingzoo_adapter import PettingZooAdapter
        return PettingZooAdapter
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
