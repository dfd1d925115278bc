"""puffer_kuhn: Kuhn poker, OpenSpiel's `kuhn_poker` state for state, two seats or one against a random player."""
import numpy as np
from gymnasium import spaces

from pufferlib.ocean.env import OceanEnv


class Kuhn(OceanEnv):
    """Observation: OpenSpiel's information-state tensor (float32, 11). Actions: pass, bet.
    two_player: both seats are agent rows (only the row to act is live); else one row against a
    uniformly random opponent in seat `seat` (-1 alternates). See ocean/kuhn/kuhn.h."""

    name = 'kuhn'
    defaults = dict(two_player=True, seat=-1)
    num_actions = 2

    def make_spaces(self, cfg):
        obs = spaces.Box(low=0, high=1, shape=(11,), dtype=np.float32)
        return obs, spaces.Discrete(self.num_actions), 2 if cfg['two_player'] else 1
