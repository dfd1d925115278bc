"""Swarming and Go-Explore: the trainer moves games onto saved states of other games (the `[swarm]` options).

Both read what an env reports per game (pufferlib.pufferenv: `game_progress()`, a milestone counter such as
the rooms reached this episode, and `game_cells()`, a coarse summary of the game's state) and move games
with `vecenv.get_states` / `set_states`, at the end of a rollout, once every `swarm.interval` agent steps:

- `swarm.mode = "swarm"`: rank the games by the counter `swarm.stat`; the lowest `swarm.fraction` of them
  take the states of the top `swarm.top_fraction` (each a copy of one of them, round robin), as the
  Pokemon Red teams moved lagging emulators onto the frontier. A game is only moved onto a state that is
  strictly ahead of its own.
- `swarm.mode = "go_explore"`: an archive keeps one state per cell (Ecoffet et al., "First return, then
  explore", Nature 2021): the first state found in a cell, replaced by one with a higher `swarm.stat` (where
  the env has counters). Every check adds the games' current cells, counting how often each cell was seen;
  then `swarm.fraction` of the games, drawn at random, restart from states of cells drawn with weight
  1 / sqrt(seen + 1), the paper's count-based weight, so rarely seen cells (the frontier) are returned to
  most. The archive holds at most `swarm.archive_size` cells; past that the most seen cells leave first.

A moved game continues the saved game (its episode's step count and counters included): for the trainer its
row starts afresh, with a blank recurrent memory and a fresh discounted return (pufferlib.rollout's
`restart_rows`); the segment it was filling keeps its bootstrap value, taken from its own next observation
before the move. The archive, the counters and the random generator are part of a checkpoint, so a resumed
run draws from the same archive.
"""
import math
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from pufferlib import config as configuration

if TYPE_CHECKING:
    from pufferlib.rollout import Rollout

class StateEnv(Protocol):
    """What the explorer needs of a vector env (pufferlib.vector's backends have it)."""

    num_games: int
    agents_per_game: int
    supports_state: bool
    progress_names: tuple[str, ...]
    has_cells: bool

    def get_states(self, game_ids: Any) -> list[bytes]: ...

    def set_states(self, game_ids: Any, states: Any) -> np.ndarray: ...

    def game_progress(self) -> np.ndarray: ...

    def game_cells(self) -> np.ndarray: ...


def make_explorer(config: dict, vecenv: object, who: str = 'this env') -> 'Explorer | None':
    """The explorer of `config['swarm']` for `vecenv`, or None with swarm.mode = "off". ConfigError, naming the
    env and the option, where the env cannot do what the mode needs."""
    swarm = config.get('swarm')
    if not swarm or swarm['mode'] == 'off':
        return None
    mode = swarm['mode']
    option = f'swarm.mode={mode!r}'
    if not getattr(vecenv, 'supports_state', False) or not hasattr(vecenv, 'set_states'):
        why = getattr(vecenv, '_no_state', None) or 'it cannot save and load its games\' states'
        raise configuration.ConfigError(f'{option} moves games by saving and loading their states, and {who} '
                                        f'cannot: {why}. Set swarm.mode="off" for this env')
    names = tuple(getattr(vecenv, 'progress_names', ()))
    stat = swarm['stat'] or (names[0] if names else '')
    if mode == 'swarm' and not names:
        raise configuration.ConfigError(f'{option} ranks games by a per-game progress counter, and {who} reports '
                                        'none; use swarm.mode="go_explore" if it has cells, or "off"')
    if stat and stat not in names:
        raise configuration.ConfigError(f'swarm.stat={stat!r} is not a progress counter of {who}; it has: '
                                        f'{", ".join(names) or "none"}')
    if mode == 'go_explore' and not getattr(vecenv, 'has_cells', False):
        raise configuration.ConfigError(f'{option} archives states by cell, and {who} has no cell function; use '
                                        'swarm.mode="swarm" if it has progress counters, or "off"')
    return Explorer(swarm, vecenv, stat, config['train']['seed'])  # type: ignore[arg-type]  # checked above


class Cell(NamedTuple):
    state: bytes
    score: float   # swarm.stat of the saved state (0 where the env has no counters)
    seen: int      # checks that found a game in this cell
    chosen: int    # games restarted from it


class Archive:
    """Go-Explore's archive: cell -> its best state so far and its counts, at most `limit` cells."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.cells: dict[int, Cell] = {}
        self.found = 0  # distinct cells ever added (evicted ones included)

    def __len__(self) -> int:
        return len(self.cells)

    def wanted(self, cells: np.ndarray, scores: np.ndarray) -> dict[int, int]:
        """{cell: game index} of the games whose state would enter the archive: a new cell, or a higher score
        than the cell's saved state (the best game per cell)."""
        best: dict[int, int] = {}
        for game, (cell, score) in enumerate(zip(cells.tolist(), scores.tolist(), strict=True)):
            have = self.cells.get(cell)
            if (have is None or score > have.score) and (cell not in best or score > scores[best[cell]]):
                best[cell] = game
        return best

    def add(self, cells: np.ndarray, scores: np.ndarray, states: dict[int, bytes]) -> None:
        """Count every game's cell as seen and store `states` ({cell: state} of `wanted`'s games); then bound
        the archive, the most seen cells leaving first (the lowest selection weight)."""
        seen = np.unique(cells, return_counts=True)
        new = set()
        for cell, count in zip(seen[0].tolist(), seen[1].tolist(), strict=True):
            have = self.cells.get(cell)
            if cell in states:
                score = float(scores[cells == cell].max())
                if have is None:
                    self.found += 1
                    new.add(cell)
                    self.cells[cell] = Cell(states[cell], score, count, 0)
                else:
                    self.cells[cell] = Cell(states[cell], score, have.seen + count, have.chosen)
            elif have is not None:
                self.cells[cell] = have._replace(seen=have.seen + count)
        if len(self.cells) > self.limit:
            # Cells found in this check stay: they are the frontier the archive exists to keep.
            old = sorted((c for c in self.cells if c not in new), key=lambda c: (-self.cells[c].seen, c))
            for cell in old[:len(self.cells) - self.limit]:
                del self.cells[cell]
            for cell in sorted(new, key=lambda c: (-self.cells[c].seen, c))[:len(self.cells) - self.limit]:
                del self.cells[cell]

    def weights(self) -> tuple[list[int], np.ndarray]:
        """(cells, their probabilities of being chosen): 1 / sqrt(seen + 1), normalised."""
        cells = list(self.cells)
        w = np.array([1.0 / math.sqrt(self.cells[c].seen + 1) for c in cells])
        return cells, w / w.sum()

    def choose(self, count: int, rng: np.random.Generator) -> list[int]:
        """`count` cells drawn (with replacement) by weight; each counted as chosen."""
        cells, p = self.weights()
        picked = [cells[i] for i in rng.choice(len(cells), size=count, p=p)]
        for cell in picked:
            self.cells[cell] = self.cells[cell]._replace(chosen=self.cells[cell].chosen + 1)
        return picked

    def state_dict(self) -> dict:
        return {'limit': self.limit, 'found': self.found,
                'cells': {cell: tuple(entry) for cell, entry in self.cells.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.found = int(state['found'])
        self.cells = {int(cell): Cell(bytes(s), float(score), int(seen), int(chosen))
                      for cell, (s, score, seen, chosen) in state['cells'].items()}
        while len(self.cells) > self.limit:  # resumed with a smaller swarm.archive_size
            del self.cells[max(self.cells, key=lambda c: (self.cells[c].seen, -c))]


class Explorer:
    """Moves games between rollouts (see the module docstring); `maybe_move(rollout)` at each rollout's end."""

    def __init__(self, swarm: dict, vecenv: StateEnv, stat: str, seed: int) -> None:
        self.mode, self.vecenv, self.stat = swarm['mode'], vecenv, stat
        self.interval = int(swarm['interval'])
        n = vecenv.num_games
        self.moved_per_check = max(1, round(swarm['fraction'] * n))
        self.sources_per_check = max(1, round(swarm['top_fraction'] * n))
        self.column = vecenv.progress_names.index(stat) if stat else -1
        self.archive = Archive(int(swarm['archive_size'])) if self.mode == 'go_explore' else None
        self.rng = np.random.default_rng([seed, 0x5A4D])
        self.next_step = self.interval
        self.moves = 0          # games moved over the run
        self.stats: dict[str, float] = {}  # the last check's, for the metrics rows (swarm/...)

    def maybe_move(self, rollout: 'Rollout') -> dict[str, float]:
        """At a rollout's end (no env command in flight, every row's next observation held): move games if
        swarm.interval steps have passed since the last check. The check's stats (empty when none ran)."""
        if rollout.global_step < self.next_step:
            return {}
        self.next_step = (rollout.global_step // self.interval + 1) * self.interval
        scores = self._scores()
        games, states = self._swarm(scores) if self.mode == 'swarm' else self._go_explore(scores)
        if len(games):
            restored = self.vecenv.set_states(games, states)
            k = self.vecenv.agents_per_game
            rows = (np.asarray(games)[:, None] * k + np.arange(k)).ravel()
            rollout.restart_rows(rows, restored)
        self.moves += len(games)
        self.stats = {'moved': float(len(games)), 'moves': float(self.moves)}
        if self.column >= 0:
            self.stats.update({f'{self.stat}_max': float(scores.max()), f'{self.stat}_mean': float(scores.mean())})
        if self.archive is not None:
            self.stats.update({'cells': float(len(self.archive)), 'cells_found': float(self.archive.found)})
        return self.stats

    def _scores(self) -> np.ndarray:
        if self.column < 0:
            return np.zeros(self.vecenv.num_games)
        return self.vecenv.game_progress()[:, self.column]

    def _swarm(self, scores: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
        """The lowest games by score and the top games' states, paired round robin; pairs whose game is not
        behind its source are left out."""
        # A random order first, then a stable sort: ties are broken afresh at every check, so the same
        # games are not always the ones moved among equals.
        order = self.rng.permutation(len(scores))
        order = order[np.argsort(scores[order], kind='stable')]
        top = order[::-1][:self.sources_per_check]
        low = order[:self.moved_per_check]
        sources = top[np.arange(len(low)) % len(top)]
        keep = scores[low] < scores[sources]
        low, sources = low[keep], sources[keep]
        if not len(low):
            return low, []
        unique, inverse = np.unique(sources, return_inverse=True)
        saved = self.vecenv.get_states(unique)
        return low, [saved[i] for i in inverse]

    def _go_explore(self, scores: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
        """Archive the games' cells, then restart a random `fraction` of the games from chosen cells."""
        assert self.archive is not None
        cells = self.vecenv.game_cells()
        wanted = self.archive.wanted(cells, scores)
        games = sorted(wanted.values())
        saved = dict(zip((int(cells[g]) for g in games), self.vecenv.get_states(games))) if games else {}
        self.archive.add(cells, scores, saved)
        movers = np.sort(self.rng.choice(len(scores), size=self.moved_per_check, replace=False))
        chosen = self.archive.choose(len(movers), self.rng)
        return movers, [self.archive.cells[cell].state for cell in chosen]

    def state_dict(self) -> dict:
        return {'mode': self.mode, 'next_step': self.next_step, 'moves': self.moves,
                'rng': self.rng.bit_generator.state, 'stats': dict(self.stats),
                **({'archive': self.archive.state_dict()} if self.archive is not None else {})}

    def load_state_dict(self, state: dict) -> None:
        """A checkpoint's explorer state. One saved under another mode is left out: this run starts its own."""
        if state.get('mode') != self.mode:
            return
        self.next_step, self.moves = int(state['next_step']), int(state['moves'])
        self.rng.bit_generator.state = state['rng']
        self.stats = dict(state.get('stats', {}))
        if self.archive is not None and 'archive' in state:
            self.archive.load_state_dict(state['archive'])
