"""puffer_tripletriad's policy: each action scored from its own hints (pufferlib/config/puffer_tripletriad.toml).

The Default MLP has to carry 90 per-action inputs (gain and risk of every card on every cell) and
the legality of 45 actions through one hidden layer to 45 logits; with 128 units it levels off near
72-75% wins against the flip-greedy player within 10 minutes. Here every action's own inputs reach
its own logit: a few features of (gain, risk) per action, weighted by coefficients the MLP computes
from the whole position (how much a flip now or an exposed side matters depends on the rest of the
board), are added to the MLP's own logits. The weighting is one product per feature, so the policy
costs about what Default costs (an embedding per action was 10x slower on these CPUs). Actions the
observation shows to be illegal (a played card, an occupied cell) get a logit of ILLEGAL, so they are
not sampled; the env's action masks say the same, but the trainer does not read them. Imported only
through the config: it needs torch, the env module does not.
"""
from typing import cast

import torch
from torch import nn

from pufferlib import models

from . import CELLS, HAND, TO_MOVE

CELL_OBS, CARD_OBS = 6, 5  # spec.toml: per cell mine, theirs, 4 ranks; per card in hand, 4 ranks
HINTS_AT = TO_MOVE + 4     # gain [cell, slot] then risk [cell, slot]
ILLEGAL = -1e4             # far below any learned logit, finite so entropy and log-probs stay finite
FEATURES = 5              # gain, risk, gain^2, risk^2, gain * risk


class Policy(models.Default):
    """Default's MLP encoder; logits = actor(hidden) + features(gain, risk) . weights(hidden) per action."""

    # `puffer export --format native` holds this policy through its C twin, policy.h beside this file: Default's
    # encoder runs as usual, the twin adds the terms from the coefficients of `weights` (docs/export.md).
    NATIVE_TWIN = {'name': 'puffer_tripletriad', 'encoder': False, 'params': (), 'tensors': ('weights',)}

    def __init__(self, env: models.EnvSpaces, hidden_size: int = 128, num_layers: int = 1) -> None:
        super().__init__(env, hidden_size, num_layers)
        self.weights = models.layer_init(nn.Linear(hidden_size, FEATURES), models.POLICY_GAIN)

    def forward(self, obs: torch.Tensor, state: models.State | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        obs = obs.float()
        hidden = self.encode_observations(obs, state)
        decoded, value = self.decode_actions(hidden)
        logits = cast(torch.Tensor, decoded)  # one Discrete action: a single logits tensor
        n = obs.shape[0]
        # hints are cell-major, actions slot-major (slot * 9 + cell)
        hints = obs[:, HINTS_AT:HINTS_AT + 2 * CELLS * HAND].reshape(n, 2, CELLS, HAND).transpose(2, 3)
        gain, risk = hints[:, 0].reshape(n, HAND * CELLS), hints[:, 1].reshape(n, HAND * CELLS)
        features = torch.stack([gain, risk, gain * gain, risk * risk, gain * risk], dim=2)  # [n, 45, FEATURES]
        logits = logits + torch.einsum('naf,nf->na', features, self.weights(hidden))
        board = obs[:, :CELLS * CELL_OBS].reshape(n, CELLS, CELL_OBS)
        empty = 1.0 - board[:, :, 0] - board[:, :, 1]
        held = obs[:, CELLS * CELL_OBS:CELLS * CELL_OBS + HAND * CARD_OBS:CARD_OBS]
        legal = (held[:, :, None] * empty[:, None, :]).reshape(n, HAND * CELLS) > 0.5
        return logits.masked_fill(~legal, ILLEGAL), value
