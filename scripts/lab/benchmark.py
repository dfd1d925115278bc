"""What the benchmark programs (lab.bench_*) share: interleaved rounds, medians, spread, ratios,
markdown tables, the doc writer (pufferlib.ocean.docs.update_section, re-exported) and the peers measured
beside us; and the sections the programs write from their figures, here so that tests check them without measuring.

Import-light on purpose (no torch, nothing of the trainer at the top): the doc generators and the
tests import it without paying for a deep-learning stack they do not use.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, cast

# Re-exported: the programs write their sections of a page as bd.update_section.
from pufferlib.ocean.docs import update_section as update_section
from pufferlib.pufferenv import PufferError

from lab import SCRIPTS

if TYPE_CHECKING:
    import argparse

# Figures as the ratio of two medians takes them: the runs of one side (their median), or one figure.
Figure = list[float] | tuple[float, ...] | float | None


class PeerError(PufferError, RuntimeError):
    """A peer was named but cannot be used (wrong path, broken venv, it failed while measuring)."""


# ---------------------------------------------------------------------------------------------
# Interleaved rounds and what is printed of them
# ---------------------------------------------------------------------------------------------

def interleaved(contenders: Sequence[str], repeats: int, measure: Callable[[str], float],
                progress: Callable[[str], None] | None = None) -> dict[str, list[float]]:
    """{contender: [one figure per round]}: every round measures every contender once, in order."""
    runs: dict[str, list[float]] = {name: [] for name in contenders}
    for round_ in range(repeats):
        for name in contenders:
            value = measure(name)
            runs[name].append(value)
            if progress:
                progress(f'  round {round_ + 1}/{repeats}  {name}: {si(value)}')
    return runs


def median(runs: Sequence[float]) -> float:
    return statistics.median(runs) if runs else float('nan')


def spread(runs: Sequence[float]) -> float | None:
    """Run-to-run noise: (max - min) / median, or None with fewer than two runs."""
    if len(runs) < 2:
        return None
    mid = statistics.median(runs)
    return (max(runs) - min(runs)) / mid if mid else None


def si(value: float | None, digits: int = 3) -> str:
    """A rate in a few significant digits: 92.5M, 143k, 9.15k, 850."""
    if value is None or value != value:
        return '-'
    for scale, suffix in ((1e9, 'G'), (1e6, 'M'), (1e3, 'k')):
        if abs(value) >= scale:
            return f'{value / scale:.{digits}g}{suffix}'
    return f'{value:.{digits}g}'


def runs_cell(runs: Sequence[float], fmt: Callable[[float], str] = si) -> str:
    return ' / '.join(fmt(v) for v in runs) if runs else '-'


def spread_cell(runs: Sequence[float]) -> str:
    s = spread(runs)
    return '-' if s is None else f'{100 * s:.0f}%'


def ratio(numerator: Figure, denominator: Figure) -> float | None:
    """Ratio of two medians (lists) or figures; None when either side is missing."""
    a = median(numerator) if isinstance(numerator, (list, tuple)) else numerator
    b = median(denominator) if isinstance(denominator, (list, tuple)) else denominator
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b) or b == 0:
        return None
    return a / b


def ratio_cell(value: float | None, bold_below: float | None = None) -> str:
    if value is None:
        return '-'
    text = f'{value:.2f}x'
    return f'**{text}**' if bold_below is not None and value < bold_below else text


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """header: column titles; rows: lists of cells; align: one letter per column, 'l' or 'r'."""
    align = align or 'l' * len(header)
    if len(align) != len(header) or any(len(row) != len(header) for row in rows):
        raise ValueError('markdown_table: every row needs one cell per column')
    lines = ['| ' + ' | '.join(header) + ' |',
             '|' + '|'.join('---:' if a == 'r' else '---' for a in align) + '|']
    lines += ['| ' + ' | '.join(str(cell) for cell in row) + ' |' for row in rows]
    return '\n'.join(lines)


def cpu_name() -> str:
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(extra: Iterable[str] = ()) -> str:
    """One line on where and when: CPU, cores, versions."""
    import numpy
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    parts = [f'{datetime.date.today().isoformat()}', f'{cpu_name()}, {cores} cores visible',
             f'Python {platform.python_version()}', f'numpy {numpy.__version__}', *extra]
    return '; '.join(parts)


def read_results(path: str, empty: Any) -> Any:
    """A measuring script's results file (JSON: a dict for most, a list for some), or `empty` before its first
    run wrote one. Each script knows the shape it wrote, so the type is left to it."""
    if not os.path.exists(path):
        return empty
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as exc:  # a sweep would otherwise start over and overwrite what it held
        raise PufferError(f'{path} is not valid JSON ({exc}): restore it (`git checkout -- {path}` for the '
                          'committed one) or move it aside to start over; nothing was run or written') from None


def write_results(path: str, results: dict | list) -> None:
    """Replace the results file at once: a sweep killed while writing leaves the previous file whole."""
    folder = os.path.dirname(path) or '.'
    os.makedirs(folder, exist_ok=True)
    with tempfile.NamedTemporaryFile('w', dir=folder, prefix='.results-', suffix='.json', delete=False) as f:
        try:
            json.dump(results, f, indent=1)
        except BaseException:
            os.unlink(f.name)
            raise
    os.chmod(f.name, 0o644)  # a temporary file is private; the results file is read by others
    os.replace(f.name, path)


# ---------------------------------------------------------------------------------------------
# Time to a return target (the same rule for every trainer measured)
# ---------------------------------------------------------------------------------------------

WINDOW_S = 1.0   # episode returns are pooled in windows of this length (our trainer's log interval)
# Solved: the latest windows holding at least this many episodes average >= the target. Gymnasium's rule
# for CartPole-v1 pools 100 episodes; 20 keeps a slow trainer's wait for episodes (SB3's defaults end
# about 2 per second) inside a 120 s limit, while no lucky window of one or two episodes counts.
SOLVE_EPISODES = 20


def solved_at(windows: Sequence[tuple[float, float, float]], target: float,
              episodes: int = SOLVE_EPISODES) -> float | None:
    """The end of the first window at which the latest windows holding >= `episodes` episodes average >= target.

    windows: (end seconds, sum of the returns, number of episodes) in time order; None if never.
    The same rule for every side: our trainer's log rows are its windows, a peer's episodes are binned.
    """
    for i, (end, _, _) in enumerate(windows):
        total: float = 0
        count: float = 0
        for _, returns, n in reversed(windows[:i + 1]):
            total, count = total + returns, count + n
            if count >= episodes:
                break
        if count >= episodes and total / count >= target:
            return end
    return None


def time_to_target(events: Iterable[tuple[float, float]], target: float, window: float = WINDOW_S,
                   episodes: int = SOLVE_EPISODES) -> float | None:
    """solved_at over (seconds since the start, episode return) events binned into `window`-second windows."""
    bins: dict[int, tuple[float, int]] = {}
    for t, value in events:
        index = int(t // window)
        total, count = bins.get(index, (0.0, 0))
        bins[index] = (total + value, count + 1)
    return solved_at([((i + 1) * window, *bins[i]) for i in sorted(bins)], target, episodes)


def solve_table(times: Mapping[str, Sequence[float]], limit: float, ours: str, env: str) -> list[list[str]]:
    """Rows of a seconds-to-target table, `ours` first in the ratios; an unsolved run counts as infinitely
    slow (its median may be too), so its ratio is a lower bound from the time limit."""
    fmt = lambda v: f'{v:.1f}' if v != float('inf') else f'>{limit:g}'  # noqa: E731
    mine = median(times[ours])
    rows = []
    for name, t in times.items():
        theirs = median(t)
        if name == ours or mine == float('inf'):
            versus = '-'
        elif theirs == float('inf'):
            versus = f'>{limit / mine:.1f}x'
        else:
            versus = ratio_cell(theirs / mine, 1.0)
        rows.append([env, name, fmt(theirs), runs_cell(t, fmt), '-' if float('inf') in t else spread_cell(t), versus])
    return rows


# ---------------------------------------------------------------------------------------------
# Peers outside the repository
# ---------------------------------------------------------------------------------------------

def _python_in(path: str, what: str, variable: str) -> str:
    """The interpreter of a peer from a folder, its venv, or the interpreter itself."""
    path = os.path.abspath(os.path.expanduser(path))
    candidates = [path] if os.path.isfile(path) else [
        os.path.join(path, *parts) for parts in (('bin', 'python'), ('venv', 'bin', 'python'),
                                                 ('.venv', 'bin', 'python'))]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise PeerError(f'{what}: no Python interpreter at {path} (looked for {", ".join(candidates)}); '
                    f'point {variable} or the option at the folder that holds its venv, or unset it to '
                    'skip this peer')


def peer_environ(**extra: str) -> dict[str, str]:
    """This process's environment for a peer's interpreter, without what points Python at our venv or
    sources (a peer imports its own packages), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env.update(extra)
    return env


def find_anchor(option: str | None = None) -> tuple[str, None] | tuple[None, str]:
    """(python, None) for PufferLib 3.0 from `option` or $PUFFER_ANCHOR, else (None, why it is skipped)."""
    path = option or os.environ.get('PUFFER_ANCHOR')
    if not path:
        return None, ('PufferLib 3.0 not measured: no anchor given (--anchor DIR or PUFFER_ANCHOR=DIR; build it '
                      'with ../shared/tools/pufferlib-anchor/build.sh)')
    return _python_in(path, 'PufferLib 3.0 anchor', 'PUFFER_ANCHOR'), None


def find_envpool(option: str | None = None) -> tuple[str, None] | tuple[None, str]:
    """(python, None) for EnvPool's venv from `option` or $ENVPOOL_VENV, else (None, why it is skipped)."""
    path = option or os.environ.get('ENVPOOL_VENV')
    if not path:
        return None, ('EnvPool not measured: no venv given (--envpool DIR or ENVPOOL_VENV=DIR; make it with '
                      '`python3.11 -m venv DIR && DIR/bin/pip install envpool==1.2.5`)')
    return _python_in(path, 'EnvPool', 'ENVPOOL_VENV'), None


def find_cleanrl(option: str | None = None, program: str = 'ppo.py') -> tuple[tuple[str, str], None] | tuple[None, str]:
    """((python, cleanrl/<program>), None) for CleanRL from `option` or $CLEANRL_DIR, else (None, why it is
    skipped)."""
    path = option or os.environ.get('CLEANRL_DIR')
    if not path:
        return None, "CleanRL not measured: no checkout given (--cleanrl DIR or CLEANRL_DIR=DIR)"
    script = os.path.join(os.path.abspath(os.path.expanduser(path)), 'cleanrl', program)
    if not os.path.isfile(script):
        raise PeerError(f'CleanRL: {script} does not exist; CLEANRL_DIR (or --cleanrl) must be a checkout of '
                        'the CleanRL repository with its venv in .venv')
    return (_python_in(path, 'CleanRL', 'CLEANRL_DIR'), script), None


class PeerProcess:
    """A driver (lab.bench_anchor for PufferLib 3.0, lab.bench_envpool for EnvPool) running as `python -m MODULE`
    in a peer's interpreter, asked one JSON line at a time. The peer's path gets `path` (the folder that holds
    the lab) and nothing of our venv, so it imports its own packages and the one lab module it runs; `label`
    names the peer in its errors.

    One long-lived process per benchmark, so a round costs the peer what it costs us (no interpreter
    start-up inside the timing), and the rounds can alternate with ours.
    """

    def __init__(self, python: str, module: str, path: str = SCRIPTS, label: str = 'PufferLib 3.0') -> None:
        self.label = label
        # PufferLib 3.0 drops a `resources` symlink into its working folder: give it its own.
        self.scratch = tempfile.mkdtemp(prefix='puffer-anchor-')
        self.log_path = os.path.join(self.scratch, 'stderr.log')
        self.log = open(self.log_path, 'w')
        self.proc = subprocess.Popen([python, '-m', module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, cwd=self.scratch, text=True, bufsize=1,
                                     env=peer_environ(PYTHONPATH=path))
        try:
            self.about = self.ask('hello')
        except PeerError:
            self.close()
            raise

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        """The process's stdin and stdout: Popen opened both as pipes (typeshed allows None for other modes)."""
        return cast(IO[str], self.proc.stdin), cast(IO[str], self.proc.stdout)

    def ask(self, command: str, **request: Any) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        try:
            stdin.write(json.dumps({'command': command, **request}) + '\n')
            stdin.flush()
            line = stdout.readline()
        except (BrokenPipeError, OSError):
            line = ''
        if not line:
            self.proc.wait(10)
            raise PeerError(f'the {self.label} process exited while asked {command!r}; its stderr:\n'
                            f'{self._tail()}')
        answer = json.loads(line)
        if 'error' in answer:
            raise PeerError(f'{self.label} failed at {command!r} {request}: {answer["error"]}')
        return answer

    def _tail(self, lines: int = 20) -> str:
        self.log.flush()
        with open(self.log_path) as f:
            return ''.join(f.readlines()[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._pipes()[0].close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> PeerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def common_arguments(parser: argparse.ArgumentParser, seconds: float, repeats: int, quick_seconds: float) -> None:
    parser.add_argument('--seconds', type=float, default=seconds, help='length of one timed run')
    parser.add_argument('--repeats', type=int, default=repeats, help='interleaved rounds; medians are reported')
    parser.add_argument('--quick', action='store_const', const=quick_seconds,
                        help=f'a short check: one round of {quick_seconds:g} s, no doc update')
    parser.add_argument('--anchor', help='PufferLib 3.0 anchor folder or its python (default: $PUFFER_ANCHOR)')
    parser.add_argument('--no-write', action='store_true', help='print only; leave docs/benchmarks.md alone')


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.repeats, args.no_write = args.quick, 1, True
    if args.repeats < 1 or args.seconds <= 0:
        parser.error('--repeats must be at least 1 and --seconds above 0')
    return args


def run_main(main: Callable[[], int | None]) -> int | None:
    """Run a script's main(); a PufferError is one line on stderr and exit code 2."""
    try:
        return main()
    except PufferError as exc:
        print(f'{os.path.basename(sys.argv[0])}: {exc}', file=sys.stderr)
        return 2


# ---------------------------------------------------------------------------------------------
# Ocean throughput (scripts/lab/bench_ocean.py) and the peer's shape in training (scripts/lab/bench_train.py)
# ---------------------------------------------------------------------------------------------

# Our env -> (its PufferLib 3.0 counterpart, 3.0 settings that match ours or None where its
# defaults already do, what still differs). One line per env; envs without one have no peer.
OCEAN_PEERS: dict[str, tuple[str, dict[str, Any] | None, str]] = {
    'squared': ('puffer_squared', None, ''),
    'cartpole': ('puffer_cartpole', None, ''),
    'pong': ('puffer_pong', {'frameskip': 4}, ''),
    'breakout': ('puffer_breakout', None, ''),
    'snake': ('puffer_snake', {'width': 64, 'height': 64, 'num_snakes': 16, 'num_food': 64, 'vision': 5,
                               'max_snake_length': 64}, ''),
    'connect4': ('puffer_connect4', None, "3.0's opponent searches 3 plies (negamax), ours looks 1 ahead"),
    'enduro': ('puffer_enduro', None, "3.0 observes a list of up to 10 cars, ours per-lane summaries"),
    'tetris': ('puffer_tetris', {'deck_size': 2}, "3.0 plays one move per step, ours one placement (a whole "
               "piece) per step"),
    'rware': ('puffer_rware', None, "both the paper's tiny warehouse with 4 robots and 4 requests"),
    'go': ('puffer_go', None, 'both 7x7 against a built-in player; rules, observations and opponents differ'),
    'tripletriad': ('puffer_tripletriad', None, "both one agent row per env, 4096 envs, agent steps counted; "
                    "3.0 picks a card, then a cell (14 actions, half a move per step); ours a pair (45), the "
                    "scripted reply in the same step, and one-ply hints"),
    'trash_pickup': ('puffer_trash_pickup', None, ''),
    'drone': ('puffer_drone', None, 'both 16 observations, 4 rotor thrusts in [-1, 1], 5 targets in 1,000 steps; '
              '3.0 flies one drone per env, ours 4'),
    'freeway': ('puffer_freeway', None, "both frameskip 4, one car per lane, 34 observations; 3.0 tests every car "
                "for a collision each frame, ours only the lanes the chicken overlaps"),
    'blastar': ('puffer_blastar', None, "3.0 has one enemy, one bomb and 10 observations (no options to change "
                "that); ours a wave of 4 enemies, up to 3 bombs and 35 observations"),
    'pacman': ('puffer_pacman', {'frightened_time': 48}, "both the arcade maze, 4 actions, one tile per step; "
               "3.0 ends the game at the first catch and observes 291 values, ours has 3 lives and 295 (a "
               "search for the nearest pellet every step)"),
    'checkers': ('puffer_checkers', None, "3.0 observes 64 squares and picks one of 512 (square, move) actions, "
                 "an illegal one a no-op, against a random mover; ours 32 dark squares in six planes, 128 "
                 "(square, direction) actions, an illegal one played as the lowest legal one, and a one-ply greedy "
                 "reply in the same step"),
    'boids': ('puffer_boids', {'num_boids': 64}, "3.0's defaults fly one boid per env, alone; at its config's "
              "64 boids (the matched row) each observes all 64 (256 values) in a walled box, and its actions are "
              "MultiDiscrete steps that Python rescales; ours observes its 4 nearest (18 values) on a torus, Box "
              "actions"),
    'terraform': ('puffer_terraform', None, "both a 64x64 map, 8 dozers, an 11x11 view and 6x6 blocks; 3.0 drives "
                  "with speed and heading and its bucket works 4 cells, ours moves a cell a step and works one; "
                  "3.0 draws its map once per env, ours a new one per episode"),
    # no 'tactical': 3.0's is a stub (its step reads no action and writes no observation) whose built binding
    # cannot be loaded (undefined symbol c_close), so there is nothing to measure against
    'tower_climb': ('puffer_tower_climb', None, "both 6 actions and 60 steps; 3.0 plays 50 levels made at start on "
                    "a 10x10x10 grid (goal floors 5-8) and observes 228 values, ours a level per env generated "
                    "and solved every 128 episodes on 8x8x6 (goal floor 4) and 499 values"),
    'moba': ('puffer_moba', None, "both 5 hero rows per game against 5 scripted heroes; 3.0's map is 128x128 "
             "with 100 creep slots, 72 neutrals and 24 towers, and it observes an 11x11 crop of 4 channels plus 26 "
             "values (510 bytes) with MultiDiscrete [7, 7, 3, 2, 2, 2]; ours is 40x40, 3 creeps per lane per wave, "
             "12 towers, two 11x11 crops plus 16 values (258 bytes), MultiDiscrete [9, 6]"),
}
# Where 3.0 has no setting that matches ours, the matched row sets ours to 3.0's game instead: these
# options run our env against 3.0's defaults (the row `ours matched`).
OCEAN_OURS_MATCHED: dict[str, dict[str, Any]] = {
    'blastar': {'wave_size': 1, 'bombs': 1},  # one enemy and one bomb, as in 3.0 (and Atari's Blastar): 14 obs
    'boids': {'num_boids': 2, 'neighbors': 1},  # 3.0's defaults fly one boid alone; ours needs a neighbour at least
}
SANITY_TARGET, GAME_TARGET = 10e6, 2e6
# The single-core speed targets of the second-wave games (go at 7x7, the default), a little above the public
# suite's figures on this machine kind: go 563k, tripletriad 3.53M, trash_pickup 1.37M, enduro 1.54M,
# tetris 2.80M, rware 12.04M (agent steps/s).
OCEAN_TARGETS = {'go': 0.6e6, 'tripletriad': 3.6e6, 'trash_pickup': 1.4e6,
                 'enduro': 1.6e6, 'tetris': 3e6, 'rware': 12e6}
# The speed targets of the third-wave envs without a peer in 3.0's build.
OCEAN_TARGETS.update({'g2048': 5e6, 'slimevolley': 5e6})
# Crafter makes a 64x64 world at every reset and a random agent dies in ~170 steps: its target is 1M.
OCEAN_TARGETS.update({'craftax': 1e6})
# Python peers of Ocean envs (bench_ocean measures them in the same rounds): label -> the settings cell.
OCEAN_PYTHON_PEERS = {'Gymnasium CartPole-v1': 'Gymnasium, Python, one env',
                      'crafter.Env': 'the crafter package, Python, one env, one episode a round (reset included)'}


def ocean_target(name: str) -> tuple[str, float]:
    """(kind, agent steps/s the env should reach) for an Ocean env's bare name."""
    from pufferlib import ocean  # here, not at the top: it loads every spec
    if name in OCEAN_TARGETS:
        return 'game', OCEAN_TARGETS[name]
    if name in ocean.SANITY:
        return 'sanity', SANITY_TARGET
    return ('classic' if name == 'cartpole' else 'game'), GAME_TARGET


def ocean_section(results: Mapping[str, Mapping[str, list[float]]], repeats: int, seconds: float,
                  note: str | None, about: Mapping[str, str] | None) -> str:
    """The Ocean section of docs/benchmarks.md from {env: {contender: [steps/s per round]}}; `about` is the
    anchor's versions (None without one) and `note` why a peer was skipped."""
    from pufferlib.ocean import tools
    # a Python peer may run a few steps a second (crafter.Env makes its worlds in Python): two digits then
    mega = lambda v: f'{v / 1e6:.1f}' if v >= 1e6 else f'{v / 1e6:.3f}' if v >= 1e4 else f'{v / 1e6:.2g}'  # noqa: E731
    m = lambda runs: mega(median(runs))  # noqa: E731
    mruns = lambda runs: runs_cell(runs, mega)  # noqa: E731
    rows = []
    for name, runs in results.items():
        kind, goal = ocean_target(name)
        ours = runs['ours']
        rows.append([f'puffer_{name}', kind, m(ours), mruns(ours), spread_cell(ours), f'{goal / 1e6:g}',
                     'yes' if median(ours) >= goal else '**no**'])
    versions = [f'PufferLib 3.0 = pufferlib {about["pufferlib"]} (anchor build), numpy {about["numpy"]} there'] \
        if about else []
    text = [f'Measured by `scripts/lab/bench_ocean.py`: {machine(versions)}. One env object of about '
            f'{tools.BENCH_ROWS} agent rows in one process, random actions; median of {repeats} interleaved '
            f'rounds of {seconds:g} s. Spread = (max - min) / median over the rounds: the run-to-run noise. '
            'Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_ocean '
            '--anchor DIR`.', '',
            markdown_table(['env', 'kind', 'ours (M steps/s)', 'rounds', 'spread', 'target (M/s)', 'meets'], rows,
                           'llrrrrl')]
    head = []
    for name, runs in results.items():
        if len(runs) < 2:
            continue
        peer, matched, differs = OCEAN_PEERS.get(name, (None, None, ''))
        for label in [k for k in runs if k not in ('ours', 'ours matched')]:
            settings = (OCEAN_PYTHON_PEERS[label] if label in OCEAN_PYTHON_PEERS else
                        ', '.join(f'{k}={v}' for k, v in (matched or {}).items()) if label == '3.0 matched' else
                        'its defaults' + (f' ({differs})' if differs else ''))
            who = label if label in OCEAN_PYTHON_PEERS else f'PufferLib 3.0 `{peer}`'
            head.append([f'puffer_{name}', who, settings, m(runs['ours']), m(runs[label]), mruns(runs[label]),
                         spread_cell(runs[label]), ratio_cell(ratio(runs['ours'], runs[label]), 1.0)])
        if 'ours matched' in runs and '3.0 defaults' in runs:
            options = ', '.join(f'{k}={v}' for k, v in OCEAN_OURS_MATCHED.get(name, {}).items())
            peer_runs = runs['3.0 defaults']
            head.append([f'puffer_{name} ({options})', f'PufferLib 3.0 `{peer}`', 'its defaults',
                         m(runs['ours matched']), m(peer_runs), mruns(peer_runs), spread_cell(peer_runs),
                         ratio_cell(ratio(runs['ours matched'], peer_runs), 1.0)])
    text += ['', 'Head to head, measured in the same rounds as the table above (ours / peer: ratio of medians). '
             'Our envs are our own designs: where the defaults of 3.0 differ from ours in a setting both have '
             '(frameskip, arena, counts), a second row sets 3.0 to ours, or ours to 3.0 where 3.0 has no such '
             'setting (blastar). Observation sizes match (pong 8, '
             'breakout 114 vs 118, squared and '
             'snake 121 cells, connect4 42); rules and rendering code differ, so these compare like tasks, not '
             'identical code.', '']
    if head:
        text.append(markdown_table(['env', 'peer', 'peer settings', 'ours (M/s)', 'peer (M/s)', 'peer rounds',
                                    'peer spread', 'ours / peer'], head, 'lllrrrrr'))
    if note:
        text += ['', f'*{note}.*']
    return '\n'.join(text)


def our_shape(env: str) -> tuple[list[str], dict[str, Any]]:
    """3.0 flags (and [env] settings) that give its training run our rollout and update shape and our env
    sizes."""
    from pufferlib import config as configuration
    config = configuration.load(env)
    vec, train = config['vec'], config['train']
    workers = vec['num_workers'] or min(vec['num_envs'], os.cpu_count() or 1)
    flags = ['--vec.num-envs', vec['num_envs'], '--vec.num-workers', workers,
             '--vec.batch-size', vec['batch_size'] or vec['num_envs'], '--env.num-envs', config['env']['num_envs'],
             '--train.bptt-horizon', train['bptt_horizon'], '--train.minibatch-size', train['minibatch_size']]
    return [str(f) for f in flags], dict(OCEAN_PEERS.get(env.removeprefix('puffer_'), (None, None, ''))[1] or {})


# ---------------------------------------------------------------------------------------------
# Where an epoch's time goes (scripts/lab/bench_profile.py)
# ---------------------------------------------------------------------------------------------

PROFILE_ENV = 'puffer_breakout'
ROLLOUT = ('env', 'copy', 'rollout_forward')
UPDATE = ('advantage', 'update_forward', 'backward', 'optimizer')


def profile_command(threads: int | str, steps: int) -> list[str]:
    return ['puffer', 'train', PROFILE_ENV, '--profile', '--quiet', '--train.device', 'cpu', '--train.torch-threads',
            str(threads), '--train.total-timesteps', str(steps)]


def profile_epoch_steps() -> int:
    """Agent steps per epoch of breakout's config: rows (vec envs x C envs per object) x horizon."""
    from pufferlib import config as configuration
    config = configuration.load(PROFILE_ENV)
    rows = config['vec']['num_envs'] * config['env'].get('num_envs', 1)
    return rows * config['train']['bptt_horizon']


def profile_section(reports: Mapping[int, Sequence[Mapping[str, Any]]], repeats: int, steps: int,
                    where: str) -> str:
    """The profile section of docs/benchmarks.md from {threads: [profile.json of each round]}, `steps` per run
    and `where` (machine() at the start)."""
    import torch

    from pufferlib.profile import LABELS, PHASES
    default = torch.get_num_threads()  # what torch picks by itself: the benchmark never changes it
    counts = list(reports)
    sps = {t: [r['steps_per_s'] for r in reports[t]] for t in counts}
    epoch = profile_epoch_steps()
    head = (f'Measured by `scripts/lab/bench_profile.py`: {where}. Each run: '
            f'`{" ".join(profile_command("T", steps))}` ({steps:,} agent steps, {steps // epoch} epochs of '
            f'{epoch:,}; breakout\'s config: 2 worker processes, each half of the envs steps while the policy '
            f'acts on the other); median of {repeats} interleaved rounds; spread = (max - min) / median. '
            f'Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_profile`.')
    base = counts[-1]
    speed_rows = [[f'{t}' + (' (torch\'s default here)' if t == default else ''), f'{median(sps[t]):,.0f}',
                   runs_cell(sps[t]), spread_cell(sps[t]), ratio_cell(ratio(sps[t], sps[base]))]
                  for t in counts]
    phase_head = ['phase']
    for t in counts:
        phase_head += [f'{t} thr: ms / epoch', f'{t} thr: %', f'{t} thr: steps/s alone']
    phase_rows = []
    for name in PHASES:
        row = [LABELS[name]]
        for t in counts:
            ms = median([r['phases'][name]['per_epoch_ms'] for r in reports[t]])
            pct = median([r['phases'][name]['percent'] for r in reports[t]])
            alone = median([r['phases'][name]['steps_per_s'] or float('nan') for r in reports[t]])
            row += [f'{ms:,.1f}', f'{pct:.1f}', '-' if alone != alone or pct < 0.5 else f'{alone:,.0f}']
        phase_rows.append(row)
    total_row = ['total (measured)']
    for t in counts:
        total_row += [f'{median([1000 * r["total_s"] / r["epochs"] for r in reports[t]]):,.1f}', '100',
                      f'{median(sps[t]):,.0f}']
    phase_rows.append(total_row)

    def share(t: int, names: Sequence[str]) -> float:
        return median([sum(r['phases'][n]['percent'] for n in names) for r in reports[t]])
    best = max(counts, key=lambda t: median(sps[t]))
    # The rounds alternate, so the two runs of a round saw about the same machine: their ratio is
    # less noisy than the ratio of medians when the machine's speed swings between rounds.
    paired = [a / b for a, b in zip(sps[counts[0]], sps[base], strict=True)]
    ranked = sorted(PHASES, key=lambda n: -median([r['phases'][n]['percent'] for r in reports[best]]))
    lines = [head, '', markdown_table(['torch threads', 'steps/s', 'rounds', 'spread', f'vs {base} threads'],
                                      speed_rows, 'lrrrr'), '',
             f'{counts[0]} / {base} threads within each round: ' + ', '.join(f'{r:.2f}x' for r in paired)
             + f'; median {median(paired):.2f}x.', '',
             'Per phase, the median over the rounds (so a column need not add up to its total exactly); "steps/s '
             'alone" is the run\'s agent steps over that phase\'s seconds, the speed if it were the only cost '
             '("-" under 0.5% of the epoch).', '',
             markdown_table(phase_head, phase_rows, 'l' + 'rrr' * len(counts)), '',
             f'With {best} thread{"s" if best != 1 else ""} the rollout (env wait, copies, inference) takes '
             f'{share(best, ROLLOUT):.0f}% of an epoch and the update (advantage, forward, backward, optimizer) '
             f'{share(best, UPDATE):.0f}%; the largest phases are '
             + ', '.join(f'{LABELS[n]} {median([r["phases"][n]["percent"] for r in reports[best]]):.0f}%'
                         for n in ranked[:3]) + '.']
    env_wait = share(best, ('env',))
    if env_wait < 20:
        lines[-1] += (f' The trainer waits for the envs only {env_wait:.0f}% of the time: their stepping is hidden '
                      'behind the policy\'s work on the other half of the rows, so the trainer process\'s own compute '
                      '(inference, forward, backward, optimizer) bounds the speed.')
    else:
        lines[-1] += (f' The trainer waits for the envs {env_wait:.0f}% of the time: the env workers bound the '
                      'speed.')
    for t in (t for t in counts if t != best):
        epoch_ms = {n: median([r['phases'][n]['per_epoch_ms'] for r in reports[t]]) for n in PHASES}
        mine = {n: median([r['phases'][n]['per_epoch_ms'] for r in reports[best]]) for n in PHASES}
        grew = max(PHASES, key=lambda n: epoch_ms[n] - mine[n])
        lines.append(f'With {t} thread{"s" if t != 1 else ""}: rollout {share(t, ROLLOUT):.0f}%, update '
                     f'{share(t, UPDATE):.0f}%, env wait {share(t, ("env",)):.0f}%; {LABELS[grew]} grows most, from '
                     f'{mine[grew]:,.0f} to {epoch_ms[grew]:,.0f} ms per epoch.')
    return '\n'.join(lines)
