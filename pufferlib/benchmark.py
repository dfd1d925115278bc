"""What the benchmark scripts (scripts/bench_*.py) share: interleaved rounds, medians, spread, ratios,
markdown tables, the writer of a doc's generated section, and the peers measured beside us.

Import-light on purpose (no torch, nothing of the trainer at the top): the doc generators and the
tests import it without paying for a deep-learning stack they do not use.
"""
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

from pufferlib.pufferenv import PufferError


class PeerError(PufferError, RuntimeError):
    """A peer was named but cannot be used (wrong path, broken venv, it failed while measuring)."""


# ---------------------------------------------------------------------------------------------
# Interleaved rounds and what is printed of them
# ---------------------------------------------------------------------------------------------

def interleaved(contenders, repeats, measure, progress=None):
    """{contender: [one figure per round]}: every round measures every contender once, in order."""
    runs = {name: [] for name in contenders}
    for round_ in range(repeats):
        for name in contenders:
            value = measure(name)
            runs[name].append(value)
            if progress:
                progress(f'  round {round_ + 1}/{repeats}  {name}: {si(value)}')
    return runs


def median(runs):
    return statistics.median(runs) if runs else float('nan')


def spread(runs):
    """Run-to-run noise: (max - min) / median, or None with fewer than two runs."""
    if len(runs) < 2:
        return None
    mid = statistics.median(runs)
    return (max(runs) - min(runs)) / mid if mid else None


def si(value, digits=3):
    """A rate in a few significant digits: 92.5M, 143k, 9.15k, 850."""
    if value is None or value != value:
        return '-'
    for scale, suffix in ((1e9, 'G'), (1e6, 'M'), (1e3, 'k')):
        if abs(value) >= scale:
            return f'{value / scale:.{digits}g}{suffix}'
    return f'{value:.{digits}g}'


def runs_cell(runs, fmt=si):
    return ' / '.join(fmt(v) for v in runs) if runs else '-'


def spread_cell(runs):
    s = spread(runs)
    return '-' if s is None else f'{100 * s:.0f}%'


def ratio(numerator, denominator):
    """Ratio of two medians (lists) or figures; None when either side is missing."""
    a = median(numerator) if isinstance(numerator, (list, tuple)) else numerator
    b = median(denominator) if isinstance(denominator, (list, tuple)) else denominator
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b) or b == 0:
        return None
    return a / b


def ratio_cell(value, bold_below=None):
    if value is None:
        return '-'
    text = f'{value:.2f}x'
    return f'**{text}**' if bold_below is not None and value < bold_below else text


def markdown_table(header, rows, align=None):
    """header: column titles; rows: lists of cells; align: one letter per column, 'l' or 'r'."""
    align = align or 'l' * len(header)
    if len(align) != len(header) or any(len(row) != len(header) for row in rows):
        raise ValueError('markdown_table: every row needs one cell per column')
    lines = ['| ' + ' | '.join(header) + ' |',
             '|' + '|'.join('---:' if a == 'r' else '---' for a in align) + '|']
    lines += ['| ' + ' | '.join(str(cell) for cell in row) + ' |' for row in rows]
    return '\n'.join(lines)


def cpu_name():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(extra=()):
    """One line on where and when: CPU, cores, versions."""
    import numpy
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    parts = [f'{datetime.date.today().isoformat()}', f'{cpu_name()}, {cores} cores visible',
             f'Python {platform.python_version()}', f'numpy {numpy.__version__}', *extra]
    return '; '.join(parts)


def update_section(name, heading, text, path):
    """Replace the text between <!-- {name}:start --> and <!-- {name}:end --> of the doc at `path`, or append
    the section."""
    start, end = f'<!-- {name}:start -->', f'<!-- {name}:end -->'
    doc = open(path).read() if os.path.exists(path) else '# Benchmarks\n'
    if start in doc and end in doc:
        head, rest = doc.split(start, 1)
        doc = head + start + '\n' + text + '\n' + end + rest.split(end, 1)[1]
    else:
        doc = doc.rstrip('\n') + f'\n\n## {heading}\n\n{start}\n{text}\n{end}\n'
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(doc)
    return path


# ---------------------------------------------------------------------------------------------
# Time to a return target (the same rule for every trainer measured)
# ---------------------------------------------------------------------------------------------

WINDOW_S = 1.0   # episode returns are pooled in windows of this length (our trainer's log interval)
# Solved: the latest windows holding at least this many episodes average >= the target. Gymnasium's rule
# for CartPole-v1 pools 100 episodes; 20 keeps a slow trainer's wait for episodes (SB3's defaults end
# about 2 per second) inside a 120 s limit, while no lucky window of one or two episodes counts.
SOLVE_EPISODES = 20


def solved_at(windows, target, episodes=SOLVE_EPISODES):
    """The end of the first window at which the latest windows holding >= `episodes` episodes average >= target.

    windows: (end seconds, sum of the returns, number of episodes) in time order; None if never.
    The same rule for every side: our trainer's log rows are its windows, a peer's episodes are binned.
    """
    for i, (end, _, _) in enumerate(windows):
        total = count = 0
        for _, returns, n in reversed(windows[:i + 1]):
            total, count = total + returns, count + n
            if count >= episodes:
                break
        if count >= episodes and total / count >= target:
            return end
    return None


def time_to_target(events, target, window=WINDOW_S, episodes=SOLVE_EPISODES):
    """solved_at over (seconds since the start, episode return) events binned into `window`-second windows."""
    bins = {}
    for t, value in events:
        index = int(t // window)
        total, count = bins.get(index, (0.0, 0))
        bins[index] = (total + value, count + 1)
    return solved_at([((i + 1) * window, *bins[i]) for i in sorted(bins)], target, episodes)


def solve_table(times, limit, ours, env):
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

def _python_in(path, what, variable):
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


def find_anchor(option=None):
    """(python, None) for PufferLib 3.0 from `option` or $PUFFER_ANCHOR, else (None, why it is skipped)."""
    path = option or os.environ.get('PUFFER_ANCHOR')
    if not path:
        return None, ('PufferLib 3.0 not measured: no anchor given (--anchor DIR or PUFFER_ANCHOR=DIR; build it '
                      'with ../shared/tools/pufferlib-anchor/build.sh)')
    return _python_in(path, 'PufferLib 3.0 anchor', 'PUFFER_ANCHOR'), None


def find_cleanrl(option=None):
    """((python, ppo.py), None) for CleanRL from `option` or $CLEANRL_DIR, else (None, why it is skipped)."""
    path = option or os.environ.get('CLEANRL_DIR')
    if not path:
        return None, "CleanRL not measured: no checkout given (--cleanrl DIR or CLEANRL_DIR=DIR)"
    script = os.path.join(os.path.abspath(os.path.expanduser(path)), 'cleanrl', 'ppo.py')
    if not os.path.isfile(script):
        raise PeerError(f'CleanRL: {script} does not exist; CLEANRL_DIR (or --cleanrl) must be a checkout of '
                        'the CleanRL repository with its venv in .venv')
    return (_python_in(path, 'CleanRL', 'CLEANRL_DIR'), script), None


class PeerProcess:
    """A driver script (the benchmarks' scripts/bench_anchor.py) running in a peer's interpreter, asked one
    JSON line at a time.

    One long-lived process per benchmark, so a round costs the peer what it costs us (no interpreter
    start-up inside the timing), and the rounds can alternate with ours.
    """

    def __init__(self, python, script):
        # PufferLib 3.0 drops a `resources` symlink into its working folder: give it its own.
        self.scratch = tempfile.mkdtemp(prefix='puffer-anchor-')
        self.log_path = os.path.join(self.scratch, 'stderr.log')
        self.log = open(self.log_path, 'w')
        env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
        self.proc = subprocess.Popen([python, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, cwd=self.scratch, text=True, bufsize=1, env=env)
        try:
            self.about = self.ask('hello')
        except PeerError:
            self.close()
            raise

    def ask(self, command, **request):
        try:
            self.proc.stdin.write(json.dumps({'command': command, **request}) + '\n')
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ''
        if not line:
            self.proc.wait(10)
            raise PeerError(f'the PufferLib 3.0 process exited while asked {command!r}; its stderr:\n'
                            f'{self._tail()}')
        answer = json.loads(line)
        if 'error' in answer:
            raise PeerError(f'PufferLib 3.0 failed at {command!r} {request}: {answer["error"]}')
        return answer

    def _tail(self, lines=20):
        self.log.flush()
        with open(self.log_path) as f:
            return ''.join(f.readlines()[-lines:])

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def common_arguments(parser, seconds, repeats, quick_seconds):
    parser.add_argument('--seconds', type=float, default=seconds, help='length of one timed run')
    parser.add_argument('--repeats', type=int, default=repeats, help='interleaved rounds; medians are reported')
    parser.add_argument('--quick', action='store_const', const=quick_seconds,
                        help=f'a short check: one round of {quick_seconds:g} s, no doc update')
    parser.add_argument('--anchor', help='PufferLib 3.0 anchor folder or its python (default: $PUFFER_ANCHOR)')
    parser.add_argument('--no-write', action='store_true', help='print only; leave docs/benchmarks.md alone')


def parse(parser, argv=None):
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.repeats, args.no_write = args.quick, 1, True
    if args.repeats < 1 or args.seconds <= 0:
        parser.error('--repeats must be at least 1 and --seconds above 0')
    return args


def run_main(main):
    """Run a script's main(); a PufferError is one line on stderr and exit code 2."""
    try:
        return main()
    except PufferError as exc:
        print(f'{os.path.basename(sys.argv[0])}: {exc}', file=sys.stderr)
        return 2
