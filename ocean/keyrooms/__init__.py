"""puffer_keyrooms: rooms behind locked doors on one fixed layout, the keys in dead ends.

The layout (a random spanning tree of `rooms_x * rooms_y` rooms, the goal in the deepest one, `num_keys`
locked doors on the way) depends on `layout_seed` and the sizes only, so every env and episode of a run
shares it. Entering a room for the first time in an episode pays `room_reward`, the goal pays 1 and ends
the episode. Its [[progress]] counters (`rooms`, `keys`) and its cell (room and keys held) are what the
trainer's `[swarm]` options rank and archive (docs/training.md).

`solve` is a breadth-first search over (cell, keys held) on the layout the env draws as text: the fewest
steps from a game's current state to the goal, which bounds what any policy can do; `shortest_path`
is the scripted agent that walks it.
"""
from collections import deque

import numpy as np

from ..env import OceanEnv

MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # the actions: up, down, left, right


def _layout(env: OceanEnv, index: int) -> tuple[list[str], tuple[int, int], int]:
    """(grid rows, agent (row, col), keys held) of game `index`, read from its text view."""
    lines = env.render_text(index).splitlines()
    status = lines[-1].split()
    rows = lines[:-1]
    agent = next((r, line.index('@')) for r, line in enumerate(rows) if '@' in line)
    return rows, agent, int(status[status.index('keys') + 1])


def _plan(env: OceanEnv, index: int) -> list[int]:
    """The shortest action sequence from game `index`'s state to the goal ([] when it is unreachable)."""
    rows, start, held = _layout(env, index)
    first = (start, held)
    came: dict[tuple[tuple[int, int], int], tuple[tuple[tuple[int, int], int], int] | None] = {first: None}
    queue = deque([first])
    while queue:
        state = queue.popleft()
        (r, c), keys = state
        if rows[r][c] == 'G':
            plan = []
            while came[state] is not None:
                state, action = came[state]  # type: ignore[misc]  # checked just above
                plan.append(action)
            return plan[::-1]
        for action, (dr, dc) in enumerate(MOVES):
            cell = rows[r + dr][c + dc]
            if cell == '#' or (cell.isupper() and cell != 'G' and not keys >> (ord(cell) - ord('A')) & 1):
                continue
            taken = keys | (1 << (ord(cell) - ord('a'))) if cell.islower() else keys
            nxt = ((r + dr, c + dc), taken)
            if nxt not in came:
                came[nxt] = (state, action)
                queue.append(nxt)
    return []


def solve(env: OceanEnv, index: int = 0) -> int:
    """The fewest steps from game `index`'s current state to the goal (-1: none reaches it; the agent
    never stands on the goal, which starts the next episode)."""
    return len(_plan(env, index)) or -1


def room_of(env: OceanEnv, index: int = 0) -> int:
    """The room game `index`'s agent stands in (row-major), or -1 in a doorway."""
    _, (r, c), _ = _layout(env, index)
    step = int(env.config['room_size']) + 1
    return -1 if r % step == 0 or c % step == 0 else (r // step) * int(env.config['rooms_x']) + c // step


def shortest_path(env: OceanEnv, obs: np.ndarray) -> np.ndarray:
    """The optimal policy: the first step of the shortest plan from each game's state."""
    actions = np.zeros(env.num_agents, dtype=np.int32)
    for i in range(env.num_agents):
        plan = _plan(env, i)
        actions[i] = plan[0] if plan else 0
    return actions


# name -> policy(env, observations) -> actions; the first one is the default.
SCRIPTED = {'shortest_path': shortest_path}
