"""Third-party environment bindings, one module per family.

Each family module exposes `env_names()` and `make(name, buf=None, seed=None, **kwargs)`. Its names
carry the family's prefix (`atari_pong`, `nethack`), so `pufferlib.registry` resolves a name by
importing only the one module it belongs to. A family whose packages are missing still lists its
names; making one raises an ImportError with the pip extra.

Adding a family: write `pufferlib/environments/<family>.py`, add its line below, and give it a
default config `pufferlib/config/<family>.toml` (docs/contributing.md).
"""
import importlib
import importlib.util
import math
from collections.abc import Mapping
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from pufferlib.pufferenv import APIUsageError

# family (module under pufferlib.environments) -> the prefix of its env names
FAMILIES = {
    'classic_control': 'classic',
    'pettingzoo': 'pettingzoo',
    'atari': 'atari',
    'procgen': 'procgen',
    'nethack': 'nethack',
    'minihack': 'minihack',
    'pokemon': 'pokemon',
    'minigrid': 'minigrid',
    'crafter': 'crafter',
    'mujoco': 'mujoco',
    'mpe2': 'mpe2',
    'vizdoom': 'vizdoom',
    'magent2': 'magent2',
}

# The packages installed with --no-deps beside an extra (their metadata pins numpy<2; see
# docs/environments.md), as docker/envs/requirements-nodeps.txt lists them.
NO_DEPS = 'pip install -c constraints.txt --no-deps -r docker/envs/requirements-nodeps.txt'

# family -> (the pip extra that installs it, the modules its envs import, an install step beside the
# extra). `puffer envs` reads this to say what runs here without importing those packages. A family
# module whose envs need different packages defines `requirements(name)` -> modules instead.
REQUIREMENTS: dict[str, tuple[str | None, tuple[str, ...], str | None]] = {
    'classic_control': (None, (), None),
    'pettingzoo': ('pettingzoo', ('pygame',), None),  # and per game: pettingzoo.requirements
    'atari': ('atari', ('ale_py', 'cv2'), None),
    'procgen': ('procgen', ('procgen', 'gym3'), NO_DEPS),
    'nethack': ('nethack', ('nle',), NO_DEPS),
    'minihack': ('minihack', ('nle', 'minihack'), NO_DEPS),
    'pokemon': ('pokemon', ('pyboy',), None),
    'minigrid': ('minigrid', ('minigrid',), None),
    'crafter': ('crafter', ('crafter',), None),
    'mujoco': ('mujoco', ('mujoco',), None),
    'mpe2': ('mpe2', ('mpe2',), None),  # and per task: mpe2.requirements
    'vizdoom': ('vizdoom', ('vizdoom',), None),
    'magent2': ('magent2', ('magent2',), None),
}


def module(family: str) -> ModuleType:
    """The family's module (imports only it)."""
    return importlib.import_module(f'pufferlib.environments.{family}')


def install_line(extra: str, also: str | None = None) -> str:
    """What to run for a missing extra, in the words every "cannot run here" message uses."""
    line = f'install the {extra} extra: pip install -c constraints.txt -e ".[{extra}]" (in your pufferlib checkout)'
    return f'{line} && {also}' if also else line


def missing(family: str, name: str) -> str | None:
    """None when env `name` of `family` has its packages here; else one line that says what to install.
    Looks the packages up without importing them."""
    extra, modules, also = REQUIREMENTS.get(family, (family, (), None))
    needs = getattr(module(family), 'requirements', None)
    if needs is not None:
        modules = tuple(needs(name))
    lacking = [m for m in modules if absent(m)]
    if not lacking:
        return None
    return f'{name} needs {", ".join(lacking)}: {install_line(extra or family, also)}'


def absent(name: str) -> bool:
    """Whether module `name` is missing here, found without importing it."""
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a parent package missing, or sys.modules[name] set to None
        return True


class Range(NamedTuple):
    """What one option of a family means, and which values have that meaning: kind 'int', 'float' or 'bool';
    low and high inclusive (None: no bound), low_open makes low exclusive."""
    kind: str
    low: float | None
    high: float | None
    meaning: str
    low_open: bool = False

    def describe(self) -> str:
        if self.kind == 'bool':
            return 'true or false'
        if self.low is not None and self.high is not None:
            return f'in {"(" if self.low_open else "["}{_number(self.low)}, {_number(self.high)}]'
        if self.low is not None:
            return f'{">" if self.low_open else ">="} {_number(self.low)}'
        return f'<= {_number(self.high)}' if self.high is not None else 'any number'

    def holds(self, value: Any) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high


def _number(bound: float) -> str:
    return f'{bound:g}' if isinstance(bound, float) else str(bound)


STEPS = Range('int', 1, None, 'the steps before an episode is cut off')
PLAYERS_STEPS = Range('int', 1, None, 'the steps (cycles) before an episode ends')

# family -> option -> its Range: the options the family's make() and its env classes take that have a
# meaning only in a range (a frame skip below 1 freezes the simulation, a probability lies in [0, 1]).
# registry.Entry.make checks them here, in one place for every family, before any env is built; an option
# not listed goes to the package, which checks it or not. docs/environments.md lists the options.
OPTIONS: dict[str, dict[str, Range]] = {
    'classic_control': {'max_episode_steps': STEPS},
    'pettingzoo': {
        'max_cycles': PLAYERS_STEPS,
        'n_pistons': Range('int', 1, None, 'the pistons of pistonball'),
        'num_players': Range('int', 2, None, 'the players at the table'),
    },
    'atari': {
        'frameskip': Range('int', 1, None, 'the emulator frames per action'),
        'repeat_action_probability': Range('float', 0.0, 1.0, 'the chance the last action repeats (sticky actions)'),
        'noop_max': Range('int', 0, None, 'the most no-op actions at the start of an episode'),
        'episodic_life': Range('bool', None, None, 'a lost life ends the episode for learning'),
        'frame_stack': Range('int', 1, None, 'the frames stacked into one observation'),
        'screen_size': Range('int', 1, None, 'the width and height of the resized screen, in pixels'),
        'max_episode_frames': Range('int', 1, None, 'the emulator frames before an episode is cut off'),
        'full_action_space': Range('bool', None, None, 'all 18 Atari actions instead of the game\'s own'),
        'clip_rewards': Range('bool', None, None, 'rewards clipped to their sign'),
    },
    'procgen': {
        'num_levels': Range('int', 0, 2**31 - 1, 'the levels to draw from (0: unlimited)'),
        'start_level': Range('int', 0, 2**31 - 1, 'the first level\'s seed'),
        'max_episode_steps': STEPS,
    },
    'nethack': {'max_episode_steps': STEPS},
    'minihack': {'max_episode_steps': STEPS},
    'pokemon': {
        'ticks_per_action': Range('int', 1, None, 'the emulator ticks per action'),
        'press_frames': Range('int', 1, None, 'the frames a button is held (at most ticks_per_action)'),
        'max_steps': STEPS,
        'check_rom': Range('bool', None, None, 'the ROM\'s header title is checked'),
        'explore_weight': Range('float', 0.0, None, 'the reward for arriving on a tile never visited'),
        'visit_decay': Range('float', 0.0, 1.0, 'the factor on every visit count per step (1: no decay)',
                             low_open=True),
        'max_wait_ticks': Range('int', 0, None, 'the most ticks a step waits for the game to hand control back'),
        'advance_text': Range('bool', None, None, 'A is tapped while waiting for control'),
    },
    'minigrid': {'max_episode_steps': STEPS},
    'crafter': {'length': Range('int', 1, None, 'the steps before an episode is cut off')},
    'mujoco': {
        'frame_skip': Range('int', 1, None, 'the physics steps per action'),
        'max_episode_steps': STEPS,
        'normalize_reward': Range('bool', None, None, 'the env scales its rewards itself'),
        'reward_gamma': Range('float', 0.0, 1.0, 'the discount of the return whose std scales rewards', low_open=True),
        'reward_clip': Range('float', 0.0, None, 'the bound of the scaled reward (0: no clip)'),
        'ctrl_cost_weight': Range('float', 0.0, None, 'the weight of the control cost'),
        'reset_noise_scale': Range('float', 0.0, None, 'the scale of the noise added to the initial state'),
        'width': Range('int', 1, None, 'the rendered frame\'s width, in pixels'),
        'height': Range('int', 1, None, 'the rendered frame\'s height, in pixels'),
    },
    'mpe2': {
        'N': Range('int', 1, None, 'the agents (or landmarks) of the task'),
        'num_good': Range('int', 1, None, 'the good agents'),
        'num_adversaries': Range('int', 1, None, 'the adversaries'),
        'num_obstacles': Range('int', 0, None, 'the obstacles'),
        'max_cycles': PLAYERS_STEPS,
        'local_ratio': Range('float', 0.0, 1.0, 'the share of the reward that is the agent\'s own'),
    },
    'vizdoom': {
        'frame_skip': Range('int', 1, None, 'tics per action'),
        'reward_scale': Range('float', 0.0, None, 'the factor on every reward', low_open=True),
        'color': Range('bool', None, None, 'RGB frames instead of grey'),
    },
    'magent2': {
        'map_size': Range('int', 1, None, 'the width and height of the map'),
        'max_cycles': PLAYERS_STEPS,
        'minimap_mode': Range('bool', None, None, 'the observation carries a minimap'),
        'two_player': Range('bool', None, None, 'team against team, for the league'),
        'random_opponent': Range('bool', None, None, 'one team against a random one'),
    },
}


def check_options(family: str, name: str, options: Mapping[str, Any]) -> None:
    """Refuse an option of `family`'s env `name` whose value has no meaning, with one APIUsageError naming the
    option, the value and what it must be; options without a declared Range pass (the package checks them).
    None passes (the make()'s own default)."""
    declared = OPTIONS.get(family, {})
    for key, value in options.items():
        spec = declared.get(key)
        if spec is None or value is None:
            continue
        if spec.kind == 'bool':
            ok = isinstance(value, (bool, np.bool_))
        elif spec.kind == 'int':
            ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        else:
            ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
            ok = ok and not math.isnan(value)
        if not ok:
            kind = {'int': 'an int', 'float': 'a number', 'bool': 'true or false'}[spec.kind]
            raise APIUsageError(f'{name}: {key} must be {kind} ({spec.meaning}), got {type(value).__name__} '
                                f'{value!r}')
        if not spec.holds(value):
            raise APIUsageError(f'{name}: {key} must be {spec.describe()} ({spec.meaning}), got {value!r}')
