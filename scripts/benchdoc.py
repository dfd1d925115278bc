#!/usr/bin/env python
"""What the benchmark scripts share, and the one command that regenerates docs/benchmarks.md.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python scripts/benchdoc.py   # one sitting: every script
    .venv/bin/python scripts/benchdoc.py --quick                                  # a short check, no doc update
    .venv/bin/python scripts/benchdoc.py --short                                  # one round of short runs, written
    .venv/bin/python scripts/benchdoc.py --only vector --quick                    # some scripts only

A sitting with both peers takes about 55 minutes on 2 quiet cores (ocean ~3, vector ~10, training
~30, of which up to 13 are the CartPole runs to 475, each stopped at 120 s, profile ~10); the time
it took is written at the top of docs/benchmarks.md.

Every script measures its peers in the same run, interleaved: round 1 runs ours, then each peer,
round 2 again, and so on, so a slow stretch of this shared machine hits every side alike. It prints
the median of the rounds, every round's figure, the spread ((max - min) / median: the run-to-run
noise) and the ratio of medians, and writes its section of docs/benchmarks.md from that output.

Peers built outside the repository (nothing of them is committed):
- PufferLib 3.0: `ANCHOR_DIR=DIR bash ../shared/tools/pufferlib-anchor/build.sh`, then
  `--anchor DIR` or PUFFER_ANCHOR=DIR (the folder, its venv, or the venv's python).
- CleanRL: a checkout of its repository with its own venv at `.venv` (see docs/benchmarks.md), then
  `--cleanrl DIR` or CLEANRL_DIR=DIR.
A peer that is not given is skipped, and the section says so.
"""
import argparse
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
import time

from pufferlib.pufferenv import PufferError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'benchmarks.md')
LOCK = '/tmp/puffer-bench.lock'
SITTING = 'flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python scripts/benchdoc.py'
ANCHOR_SCRIPT = os.path.join(ROOT, 'scripts', 'bench_anchor.py')


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
    """One line on where and when: CPU, cores, load at the start, versions."""
    import numpy
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    load = f', load average {os.getloadavg()[0]:.1f} at the start' if hasattr(os, 'getloadavg') else ''
    parts = [f'{datetime.date.today().isoformat()}', f'{cpu_name()}, {cores} cores visible{load}',
             f'Python {platform.python_version()}', f'numpy {numpy.__version__}', *extra]
    return '; '.join(parts)


def update_section(name, heading, text, path=DOC):
    """Replace the text between <!-- {name}:start --> and <!-- {name}:end -->, or append the section."""
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
    """scripts/bench_anchor.py running in a peer's interpreter, asked one JSON line at a time.

    One long-lived process per benchmark, so a round costs the peer what it costs us (no interpreter
    start-up inside the timing), and the rounds can alternate with ours.
    """

    def __init__(self, python, script=ANCHOR_SCRIPT):
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


# ---------------------------------------------------------------------------------------------
# One sitting: every script, one after the other
# ---------------------------------------------------------------------------------------------

SCRIPTS = ('bench_ocean.py', 'bench_vector.py', 'bench_train.py', 'bench_profile.py')


def _part(script):
    return script[len('bench_'):-len('.py')]


PARTS = tuple(_part(script) for script in SCRIPTS)  # what --only takes: scripts/bench_PART.py
# --short: one round of short runs per script, written to the doc (each section states its rounds
# and seconds): a check of the whole path, not figures to quote.
SHORT = {'bench_ocean.py': ['--repeats', '1', '--seconds', '0.3'],
         'bench_vector.py': ['--repeats', '1', '--seconds', '0.3'],
         'bench_train.py': ['--repeats', '1', '--seconds', '5', '--solve-seconds', '30'],
         'bench_profile.py': ['--repeats', '1', '--epochs', '5']}


def sitting(args):
    started, times, failed, where = time.time(), [], [], machine()
    if args.anchor:
        os.environ['PUFFER_ANCHOR'] = args.anchor
    if args.cleanrl:
        os.environ['CLEANRL_DIR'] = args.cleanrl
    # A wrong peer path fails now, not half an hour in; a missing peer is said now and in its sections.
    for _found, note in (find_anchor(), find_cleanrl()):
        if note:
            print(f'note: {note}', flush=True)
    scripts = [s for s in SCRIPTS if not args.only or _part(s) in args.only]
    for script in scripts:
        extra = ['--quick'] if args.quick else SHORT[script] if args.short else []
        command = [sys.executable, os.path.join(ROOT, 'scripts', script), *extra]
        print(f'== {script}', flush=True)
        t = time.time()
        rc = subprocess.call(command)
        times.append((script, time.time() - t, rc))
        if rc not in (0, 1):  # 1: ran, but a target was missed; the table says which
            failed.append(script)
    total = time.time() - started
    rows = [[f'`scripts/{s}`', f'{t / 60:.1f} min', 'ok' if rc == 0 else f'exit {rc}'] for s, t, rc in times]
    how = (' --short' if args.short else '') + (f' --only {" ".join(args.only)}' if args.only else '')
    what = 'its section' if len(scripts) == 1 else 'their sections' if args.only else 'every section of this page'
    text = (f'One sitting on {where}: `{SITTING}{how}` ran the scripts below one after the other and wrote '
            f'{what}; it took **{total / 60:.0f} minutes**. Each script runs alone too '
            '(its command is in its section).'
            + (' This was a short check (one round of short runs): the figures below are not for quoting.'
               if args.short else '') + '\n\n'
            + markdown_table(['script', 'wall time', 'result'], rows, 'lrl'))
    print('\n' + text)
    if args.only:  # each script wrote its own section; the sitting's section describes a whole sitting
        print('(--only: the sitting section of docs/benchmarks.md is left as it was)')
    elif not args.quick and not failed:
        update_section('sitting', 'How these figures were made', text)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='one short round of every script; no doc update')
    parser.add_argument('--short', action='store_true', help='one round of short runs, written to the doc')
    parser.add_argument('--anchor', help='PufferLib 3.0 anchor folder (default: $PUFFER_ANCHOR)')
    parser.add_argument('--cleanrl', help='CleanRL checkout with its venv (default: $CLEANRL_DIR)')
    parser.add_argument('--only', nargs='+', choices=PARTS, metavar='PART',
                        help=f'run only these scripts ({", ".join(PARTS)}: scripts/bench_PART.py); each writes '
                             'its own section, the sitting section is left alone')
    return sitting(parser.parse_args())


if __name__ == '__main__':
    sys.exit(run_main(main))
