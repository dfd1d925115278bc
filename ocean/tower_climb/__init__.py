"""puffer_tower_climb: PufferLib 3.0's block-pushing climbing puzzle on a level generated every `replays`
episodes.

The world is a grid of 8 x 8 cells and `height` + 2 floors. Floor 0 is the ground layer under the middle
6 x 6 cells; a pile of blocks stands on it, and the goal block sits on floor `height`. The climber walks,
climbs one block up, steps down one, or steps off an edge to hang from it; hanging, it shimmies along the
face and round corners, climbs back up, or lets go and falls to the first block below (into the void when
there is none: death). Gripping the block ahead (grab), it pushes the row of blocks in front one cell, or
pulls the gripped block one cell while stepping back onto floor behind it. A block rests on the block
below or on the edge of one diagonally below; the others fall, and one that falls on the climber kills it.

Each level is a random hill drawn from the env's seed, settled, and solved in C by a breadth-first search
over whole states; levels whose shortest solution is under `min_moves` are redrawn, and the shortest plan
is the scripted baseline (`autopilot=True`), which solves every level. Rewards (3.0's): `reward_climb` per
floor above the highest reached, `reward_block` per push or pull, `reward_illegal` per refused move, +1 at
the goal, -1 for a death. Log: score = floors climbed above the start, perf = the share of levels solved.

`level` reads a game's state back from its text rendering (the tests check the rules with it).
"""
from typing import NamedTuple

from ..env import OceanEnv

SIDE = 8  # cells along x and z (TC_SIDE)
DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # actions 0-3 as (dx, dz): +x, +z, -x, -z
GRAB, DROP = 4, 5


class State(NamedTuple):
    blocks: frozenset   # (y, z, x) of every block, the goal's included
    goal: tuple         # (y, z, x)
    climber: tuple      # (y, z, x)
    facing: int         # 0-3, as the actions
    hanging: bool
    holding: bool
    floors: int         # floors of the grid: height + 2
    step: int


def level(env: OceanEnv, index: int = 0) -> State:
    """Game `index`'s state now, from its text: a status line, then each floor from the top down."""
    lines = env.render_text(index).splitlines()
    words = lines[0].split()
    status = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    blocks, goal, climber = set(), (0, 0, 0), (0, 0, 0)
    floors = (len(lines) - 1) // (SIDE + 1)
    for k in range(floors):
        y = int(lines[1 + k * (SIDE + 1)].split()[1])
        for z in range(SIDE):
            for x, ch in enumerate(lines[2 + k * (SIDE + 1) + z]):
                if ch in '#G':
                    blocks.add((y, z, x))
                if ch == 'G':
                    goal = (y, z, x)
                if ch == '@':
                    climber = (y, z, x)
    return State(frozenset(blocks), goal, climber, status['facing'], bool(status['hanging']),
                 bool(status['holding']), floors, status['step'])
