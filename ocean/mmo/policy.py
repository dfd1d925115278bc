"""puffer_mmo's policy: the tile crop, the entity list and the agent's own state, each embedded its own way.

The observation is one flat uint8 row (ocean/mmo/__init__.py `layout()`): two 11x11 crops of
categories (terrain, what stands there), MM_ENTS entity rows and the own state. Categories are
embedded rather than read as numbers (lava is not "more" than stone); the crop then goes through a
linear layer (`channels = 0`, the CPU config) or two convolutions (the GPU config); every entity row
through a shared MLP, pooled by a masked mean and max so the order and count of rows do not matter.
The target of an attack is chosen among the listed rows, so its logits are a pointer: each row's
embedding scored against a query from the whole state, added to the plain head's bias per slot.
Illegal choices are left to the env's action masks, which the trainer samples under.

Team rows (`two_player=True`, the league's seats) are several agent rows side by side: each member
goes through the same network as a lone agent, its heads become the team's heads in member order, and
the team's value is the sum of its members' (its reward is their summed reward, less the other
team's). Feed-forward only, as the league's frozen opponents are.

Sizes: `pufferlib/config/puffer_mmo.toml` (about 0.1M parameters, for CPUs) and
`pufferlib/config/puffer_mmo_large.toml` (about 1.6M, for a GPU). Imported only through the config:
it needs torch, the env module does not.
"""
import math
from types import SimpleNamespace
from typing import cast

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from pufferlib import distributions, models

from . import CROP, EFEAT, ENTS, NVEC, SELF, SIDE, THINGS

ROW = 2 * CROP + ENTS * EFEAT + SELF  # one agent's observation bytes

TERRAINS_ALL = 7
KINDS = 6    # entity kind 0 (padding) .. 5 (hostile)
STANCES = 4


class Policy(models.Policy):
    """Crop, entities, self -> hidden; heads: move, style, use from hidden, target by pointer."""

    # `puffer export --format native` holds this policy through its C twin, policy.h beside this file, which
    # encodes the row itself and adds the pointer: the sizes it reads (attributes of the policy, or the
    # observation layout's constants) and the modules whose parameters it reads, in this order.
    NATIVE_TWIN = {
        'name': 'puffer_mmo', 'encoder': True,
        'params': ('hidden_size', 'terrain.embedding_dim', 'channels', 'query.out_features',
                   SIDE, ENTS, EFEAT, SELF, TERRAINS_ALL, THINGS, KINDS, STANCES),
        'tensors': ('terrain', 'things', 'crop', 'kind', 'stance', 'entity', 'own', 'mix', 'query'),
    }

    def __init__(self, env: models.EnvSpaces, hidden_size: int = 128, embed: int = 4, channels: int = 0,
                 entity_size: int = 32) -> None:
        shape = tuple(env.single_observation_space.shape or ())
        members = shape[0] // ROW if len(shape) == 1 else 0
        team = spaces.MultiDiscrete(np.tile(NVEC, max(members, 1)))
        if members < 1 or shape != (members * ROW,) or env.single_action_space != team:
            raise ValueError(f'puffer_mmo policy needs observation rows of {ROW} bytes (or a team\'s, a multiple of '
                             f'them) with their actions, got {shape} and {env.single_action_space}')
        # the heads and the value are a lone agent's; a team's are assembled from them in decode_actions
        agent = SimpleNamespace(single_observation_space=spaces.Box(0, 255, (ROW,), np.uint8),
                                single_action_space=spaces.MultiDiscrete(np.array(NVEC)))
        super().__init__(agent if members > 1 else env, hidden_size)
        self.members = members
        self.terrain = nn.Embedding(TERRAINS_ALL, embed)
        self.things = nn.Embedding(THINGS, embed)
        self.channels = channels
        if channels:
            half = (SIDE + 1) // 2
            self.crop = nn.Sequential(
                models.layer_init(nn.Conv2d(embed, channels, 3, padding=1)), nn.GELU(),
                models.layer_init(nn.Conv2d(channels, channels, 3, stride=2, padding=1)), nn.GELU(),
                nn.Flatten(), models.layer_init(nn.Linear(channels * half * half, hidden_size)), nn.GELU())
        else:
            self.crop = nn.Sequential(models.layer_init(nn.Linear(CROP * embed, hidden_size)), nn.GELU())
        self.kind = nn.Embedding(KINDS, 8)
        self.stance = nn.Embedding(STANCES, 4)
        self.entity = nn.Sequential(models.layer_init(nn.Linear(8 + 4 + 5, entity_size)), nn.GELU(),
                                    models.layer_init(nn.Linear(entity_size, entity_size)), nn.GELU())
        self.own = nn.Sequential(models.layer_init(nn.Linear(SELF, entity_size)), nn.GELU())
        self.mix = nn.Sequential(models.layer_init(nn.Linear(hidden_size + 3 * entity_size, hidden_size)), nn.GELU())
        self.query = models.layer_init(nn.Linear(hidden_size, entity_size), models.POLICY_GAIN)
        self.scale = 1.0 / math.sqrt(entity_size)
        self._rows: torch.Tensor | None = None

    def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
        """[n, members * ROW] -> [n * members, hidden_size]: one row per agent, team members in order."""
        obs = obs.reshape(-1, ROW)
        n = obs.shape[0]
        crops = obs[:, :2 * CROP].long()
        tiles = self.terrain(crops[:, :CROP].clamp(0, TERRAINS_ALL - 1)) + self.things(
            crops[:, CROP:].clamp(0, THINGS - 1))  # [n, CROP, embed]
        if self.channels:
            tiles = tiles.transpose(1, 2).reshape(n, -1, SIDE, SIDE)
        crop = self.crop(tiles.reshape(n, -1) if not self.channels else tiles)

        ents = obs[:, 2 * CROP:2 * CROP + ENTS * EFEAT].reshape(n, ENTS, EFEAT).float()
        valid = ents[:, :, 0:1]
        numeric = torch.stack([(ents[:, :, 2] - 5) / 5, (ents[:, :, 3] - 5) / 5, ents[:, :, 4] / 100,
                               ents[:, :, 5] / 10, ents[:, :, 7] / 5], dim=2)
        rows = self.entity(torch.cat([self.kind(ents[:, :, 1].long().clamp(0, KINDS - 1)),
                                      self.stance(ents[:, :, 6].long().clamp(0, STANCES - 1)), numeric], dim=2))
        rows = rows * valid
        count = valid.sum(1).clamp(min=1)
        pooled = torch.cat([rows.sum(1) / count, (rows - 1e4 * (1 - valid)).amax(1).clamp(min=0)], dim=1)
        self._rows = rows

        own = self.own(obs[:, 2 * CROP + ENTS * EFEAT:].float() / 100)
        return self.mix(torch.cat([crop, pooled, own], dim=1))

    def decode_actions(self, hidden: torch.Tensor) -> tuple[distributions.Logits, torch.Tensor]:
        """The plain heads, plus the pointer over the entity rows of the observations just encoded (also
        when an LSTM sits between encode and decode, as the [rnn] wrapper puts it)."""
        logits, value = super().decode_actions(hidden)
        move, style, target, use = cast(tuple[torch.Tensor, ...], logits)  # MultiDiscrete: one per part
        rows, self._rows = self._rows, None
        if rows is not None and rows.shape[0] == hidden.shape[0]:
            target = target + torch.einsum('nkd,nd->nk', rows, self.query(hidden)) * self.scale
        if self.members == 1:
            return (move, style, target, use), value
        m = self.members
        heads = [head.reshape(-1, m, head.shape[-1]) for head in (move, style, target, use)]
        return tuple(head[:, j] for j in range(m) for head in heads), value.reshape(-1, m).sum(1)
