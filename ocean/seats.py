"""The Python side of ocean/seats.h for the turn-based envs that do not write `env.masks` from C yet
(go, tripletriad); kuhn, leduc and connect4 write it through the binding's masks slot.

On every step only the row whose player is to act is live. The C env says so through its action
masks (a waiting row's mask allows action 0 alone, a live row's at least two actions), and this
subclass turns that into `env.masks` after every reset and step: True for the row to act, False for
the waiting row, whose action the env ignores. In one-row mode (two_player=False) every row is live.
A game whose live row can have the single legal action 0 (Triple Triad's forced last placement)
cannot be read that way; it names the observation column that says whose turn it is instead
(`turn_column`). Moving these envs to the C slot would remove this pass.
"""
from typing import Any

import numpy as np
import numpy.typing as npt

from pufferlib.pufferenv import EnvError

from .env import OceanEnv


class TurnBasedEnv(OceanEnv):
    """An OceanEnv whose `masks` mark the rows to act (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._write_turns()

    def turn_column(self) -> int | None:
        """The observation column that is 1 for the row to act and 0 for the waiting row, or None to
        derive the turn from the action masks."""
        return None

    def _write_turns(self) -> None:
        column = self.turn_column()
        if column is not None:
            np.greater(self.observations[:, column], 0.5, out=self.masks)
            return
        # A row is live iff an action other than 0 is legal: a waiting row allows 0 alone, a live row two
        # actions or more. One strided pass per action column (a handful) is several times cheaper than a
        # reduction along axis 1.
        masks = self.action_masks
        if masks is None:
            raise EnvError(f'{self.describe()}: a turn-based env needs `[action] mask = true` in its spec.toml or a '
                           'turn_column()')
        np.copyto(self.masks, masks[:, 1])
        for column in range(2, masks.shape[1]):
            np.logical_or(self.masks, masks[:, column], out=self.masks)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list]:
        out = super().reset(seed)
        self._write_turns()
        return out

    def step(self, actions: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        out = super().step(actions)
        self._write_turns()
        return out
