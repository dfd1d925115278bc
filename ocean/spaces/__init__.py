"""puffer_spaces: structured (Dict) observations and actions; full score needs every subspace.

One-step episodes. Observation (native): image float32[5, 5] of 0/1 and flat int8[5] of -1/0/1.
Actions (native): image = 1 iff more than 12 pixels are on, flat = 1 iff sum(flat) > 0; 0.5 each.

Rows are laid out exactly as pufferlib.emulation lays out the native Dict, so
`pufferlib.emulation.Nativizer(env.obs_dtype)` recovers the dict, and the flat action row is
MultiDiscrete([2, 2]) in the Dict's (sorted) key order: [flat, image]. The spec declares that row;
this subclass adds the native spaces and checks that emulation still lays the Dict out the way the
C code writes it.
"""
import numpy as np
from gymnasium import spaces

from pufferlib.emulation import emulate_action_space, emulate_observation_space

from ..env import OceanEnv
from ..spec import Value

NATIVE_OBSERVATION_SPACE = spaces.Dict({
    'image': spaces.Box(low=0, high=1, shape=(5, 5), dtype=np.float32),
    'flat': spaces.Box(low=-1, high=1, shape=(5,), dtype=np.int8),
})
NATIVE_ACTION_SPACE = spaces.Dict({'image': spaces.Discrete(2), 'flat': spaces.Discrete(2)})


class Spaces(OceanEnv):
    native_observation_space = NATIVE_OBSERVATION_SPACE
    native_action_space = NATIVE_ACTION_SPACE

    def make_spaces(self, config: dict[str, Value]) -> tuple[spaces.Box, spaces.Space]:
        obs, act = super().make_spaces(config)
        emulated_obs, self.obs_dtype = emulate_observation_space(NATIVE_OBSERVATION_SPACE)
        emulated_act, _ = emulate_action_space(NATIVE_ACTION_SPACE)
        # The C code hard-codes this layout; fail loudly if emulation ever lays the Dict out differently.
        fields = self.obs_dtype.fields if self.obs_dtype is not None else None
        assert emulated_obs == obs and emulated_act == act, (emulated_obs, obs, emulated_act, act)
        assert fields is not None and fields['flat'][1] == 0 and fields['image'][1] == 5, fields
        return obs, act
