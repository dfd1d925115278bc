"""puffer_leduc: Leduc poker, OpenSpiel's `leduc_poker` state for state, two seats or one against a random player."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Leduc(OceanEnv):
    """Observation: OpenSpiel's information-state tensor (float32, 30). Actions: fold, call, raise.
    two_player: both seats are agent rows (only the row to act is live); else one row against a
    uniformly random opponent in seat `seat` (-1 alternates). See ocean/leduc/leduc.h."""

    name = 'leduc'
    defaults = dict(two_player=True, seat=-1)
    num_actions = 3

    def make_spaces(self, cfg):
        obs = spaces.Box(low=0, high=1, shape=(30,), dtype=np.float32)
        return obs, spaces.Discrete(self.num_actions), 2 if cfg['two_player'] else 1
