"""PettingZoo parallel games through the multi-agent emulation (one row per agent).

Butterfly games need pygame and pymunk: the `pettingzoo` extra (`pip install -e ".[pettingzoo]"` in
a checkout). Classic board games (connect four, chess, go) are turn-based AEC envs that cannot be
converted to the parallel API, so they are not bound here; Ocean has C versions of several.
"""
from pufferlib.environments._support import check_name, require

# name -> (module under pettingzoo, defaults that differ from PettingZoo's)
GAMES = {
    # 20 pistons push a ball left; image observations (457x120x3) per piston. Discrete actions
    # (down, stay, up) instead of PettingZoo's continuous default, to fit the discrete policies.
    'pettingzoo_pistonball': ('pettingzoo.butterfly.pistonball_v6', {'continuous': False}),
    # 2 archers + 2 knights against zombies; vector observations (27x5 floats) per agent.
    'pettingzoo_kaz': ('pettingzoo.butterfly.knights_archers_zombies_v11', {}),
    # 2 paddles keep one ball in play; image observations per paddle.
    'pettingzoo_cooperative_pong': ('pettingzoo.butterfly.cooperative_pong_v6', {}),
}


def env_names():
    return list(GAMES)


def make(name, buf=None, seed=None, **kwargs):
    """kwargs go to the game's `parallel_env` (e.g. n_pistons, max_cycles, render_mode)."""
    check_name(name, env_names(), 'PettingZoo')
    module_name, defaults = GAMES[name]
    require('pygame', 'pettingzoo')
    require('pymunk', 'pettingzoo')
    module = require(module_name, 'pettingzoo')
    from pufferlib.emulation import PettingZooPufferEnv
    return PettingZooPufferEnv(env_creator=module.parallel_env, env_kwargs={**defaults, **kwargs}, buf=buf, seed=seed)
