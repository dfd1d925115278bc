"""puffer_boxoban: Sokoban on a new Boxoban-style room every episode.

Each level is generated in C the way the Boxoban levels were (gym-sokoban's generator): a random walk
carves a `size` x `size` room, `boxes` targets are drawn on its floor with the boxes on them, and the
level is played backwards from that solved state, `pulls` pulls per box. Every backward pull is a forward
push, so every level is solvable; the backward play reversed is a solution within `max_steps`, and the
scripted baseline (`autopilot=True`) follows it, solving every level. Rewards are gym-sokoban's: -0.1
per step, +1 per box pushed onto a target, -1 per box pushed off one, +10 when all are on targets. Log:
score = boxes on targets at the end, perf = the share of levels solved.

`solve` is an independent check: a breadth-first search over box positions (pushes) on the level a game
draws as text, returning the fewest pushes that solve it.
"""
from collections import deque

from ..env import OceanEnv

MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # the actions: up, down, left, right


def level(env: OceanEnv, index: int = 0) -> tuple[list[str], frozenset[tuple[int, int]], tuple[int, int]]:
    """(room rows: '#' wall, '.' target, ' ' floor; the boxes; the player) of game `index`, from its text."""
    rows = env.render_text(index).splitlines()[:-1]
    room, boxes, player = [], set(), (0, 0)
    for r, line in enumerate(rows):
        room.append(''.join('.' if ch in '.*+' else '#' if ch == '#' else ' ' for ch in line))
        for c, ch in enumerate(line):
            if ch in '$*':
                boxes.add((r, c))
            if ch in '@+':
                player = (r, c)
    return room, frozenset(boxes), player


def solve(env: OceanEnv, index: int = 0, max_states: int = 200_000) -> int:
    """The fewest pushes that put every box of game `index` on a target from its current state: -1 when no
    sequence does, -2 when the search gave up after `max_states` states."""
    room, boxes, player = level(env, index)
    targets = frozenset((r, c) for r, line in enumerate(room) for c, ch in enumerate(line) if ch == '.')

    def region(boxes: frozenset, start: tuple[int, int]) -> set[tuple[int, int]]:
        seen, stack = {start}, [start]
        while stack:
            r, c = stack.pop()
            for dr, dc in MOVES:
                cell = (r + dr, c + dc)
                if cell not in seen and room[cell[0]][cell[1]] != '#' and cell not in boxes:
                    seen.add(cell)
                    stack.append(cell)
        return seen

    first = (boxes, min(region(boxes, player)))
    depth = {first: 0}
    queue = deque([first])
    while queue:
        state = queue.popleft()
        boxes, player = state
        if boxes == targets:
            return depth[state]
        reach = region(boxes, player)
        for r, c in boxes:
            for dr, dc in MOVES:
                beyond = (r + dr, c + dc)
                if (r - dr, c - dc) not in reach or room[beyond[0]][beyond[1]] == '#' or beyond in boxes:
                    continue
                moved = (boxes - {(r, c)}) | {beyond}
                nxt = (moved, min(region(moved, (r, c))))
                if nxt not in depth:
                    if len(depth) >= max_states:
                        return -2
                    depth[nxt] = depth[state] + 1
                    queue.append(nxt)
    return -1
