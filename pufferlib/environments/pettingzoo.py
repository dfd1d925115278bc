"""PettingZoo games through the multi-agent emulation (one row per agent).

Butterfly games are parallel (every agent acts on every step); they need pygame and pymunk. The
classic board and card games are turn-based AEC envs: they keep their turns (one live row per step,
the others waiting) and publish their legal moves as action masks (pufferlib.emulation,
PettingZooPufferEnv). The two poker games also need rlcard. All of it is the `pettingzoo` extra
(`pip install -c constraints.txt -e ".[pettingzoo]"` in a checkout).
"""
from types import SimpleNamespace
from typing import Any

from pufferlib.environments._support import check_name, require
from pufferlib.pufferenv import PufferEnv

# name -> (module under pettingzoo, its constructor, defaults that differ from PettingZoo's, packages)
GAMES = {
    # 20 pistons push a ball left; image observations (457x120x3) per piston. Discrete actions
    # (down, stay, up) instead of PettingZoo's continuous default, to fit the discrete policies.
    'pettingzoo_pistonball': ('pettingzoo.butterfly.pistonball_v6', 'parallel_env', {'continuous': False},
                              ('pygame', 'pymunk')),
    # 2 archers + 2 knights against zombies; vector observations (27x5 floats) per agent.
    'pettingzoo_kaz': ('pettingzoo.butterfly.knights_archers_zombies_v11', 'parallel_env', {}, ('pygame', 'pymunk')),
    # 2 paddles keep one ball in play; image observations per paddle.
    'pettingzoo_cooperative_pong': ('pettingzoo.butterfly.cooperative_pong_v6', 'parallel_env', {},
                                    ('pygame', 'pymunk')),
    # Turn-based (AEC), two seats, observation {'observation', 'action_mask'}. The module paths are the
    # ones PettingZoo's own registry uses (the *_v3 shims only add a deprecation warning).
    'pettingzoo_connect_four': ('pettingzoo.classic.connect_four.connect_four', 'env', {}, ('pygame',)),  # v3
    'pettingzoo_tictactoe': ('pettingzoo.classic.tictactoe.tictactoe', 'env', {}, ('pygame',)),  # v3
    'pettingzoo_leduc_holdem': ('pettingzoo.classic.rlcard_envs.leduc_holdem', 'env', {}, ('pygame', 'rlcard')),  # v4
    'pettingzoo_texas_holdem': ('pettingzoo.classic.rlcard_envs.texas_holdem', 'env', {}, ('pygame', 'rlcard')),  # v4
}

# The turn-based games, for docs and tests.
TURN_BASED = tuple(name for name, (_, constructor, _, _) in GAMES.items() if constructor == 'env')


def env_names() -> list[str]:
    return list(GAMES)


def requirements(name: str) -> tuple[str, ...]:
    """The packages game `name` imports (`puffer envs` checks them)."""
    return GAMES[name][3]


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, **kwargs: Any) -> PufferEnv:
    """kwargs go to the game's constructor (e.g. n_pistons, max_cycles, render_mode; num_players for
    texas_holdem)."""
    check_name(name, env_names(), 'PettingZoo')
    module_name, constructor, defaults, packages = GAMES[name]
    for package in packages:
        require(package, 'pettingzoo')
    module = require(module_name, 'pettingzoo')
    from pufferlib.emulation import PettingZooPufferEnv
    return PettingZooPufferEnv(env_creator=getattr(module, constructor), env_kwargs={**defaults, **kwargs}, buf=buf,
                               seed=seed)
