"""The front door as a person uses it: `puffer` at a real terminal (a pseudo-terminal, through
pexpect), at several widths. Everything else runs `puffer` with its output in a pipe, where the
live dashboard is off; a rich layout bug there once killed every training run started by hand."""
import io
import os
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pexpect
import pytest
from rich.console import Console

from pufferlib.dashboard import Dashboard

PUFFER = shutil.which('puffer', path=os.path.dirname(sys.executable)) or 'puffer'
WIDTHS = (40, 80, 200)
# The README's main job, shrunk: the Serial backend and 64 envs keep it to seconds, and 256 steps per
# env cross the Ocean episode-report interval (128) twice, so the dashboard shows episode rows too.
TRAIN = ['train', 'puffer_squared', '--vec.backend', 'Serial', '--vec.num-envs', '1', '--vec.num-workers', '1',
         '--env.num-envs', '64', '--train.bptt-horizon', '32', '--train.minibatch-size', '1024',
         '--train.total-timesteps', '16384', '--train.log-interval', '0']
ANSI = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')


def run_in_terminal(args, columns, experiments, rows=30, timeout=240):
    """Run `puffer ARGS` on a pseudo-terminal COLUMNS wide; return (exit status, screen text)."""
    env = {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES', 'NO_COLOR', 'TERM')}
    env.update(TERM='xterm-256color', PUFFER_EXPERIMENTS=str(experiments))
    child = pexpect.spawn(PUFFER, list(args), dimensions=(rows, columns), env=env, cwd=str(experiments),
                          encoding='utf-8', codec_errors='replace', timeout=timeout)
    output = child.read()  # until the program exits (EOF)
    child.close()
    return child.exitstatus, output


def visible_lines(output):
    """The text of each line as it stays on screen: a carriage return starts the line over."""
    return [ANSI.sub('', line.rstrip('\r')).split('\r')[-1] for line in output.split('\n')]


def assert_clean(status, output, command):
    assert 'Traceback' not in output and 'Sum of ratios' not in output, f'{command} crashed:\n{output}'
    assert status == 0, f'{command} exited {status}:\n{output}'


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """One short training run at each width, all into one experiments folder."""
    experiments = tmp_path_factory.mktemp('experiments')
    return experiments, {width: run_in_terminal(TRAIN, width, experiments) for width in WIDTHS}


@pytest.mark.parametrize('width', WIDTHS)
def test_train_dashboard_renders_at_terminal_width(trained, width):
    experiments, runs = trained
    status, output = runs[width]
    assert_clean(status, output, f'puffer train at {width} columns')
    lines = visible_lines(output)
    # The live dashboard (not the one-line-per-update log of a pipe) drew its panels and its bar.
    assert any('━' in line for line in lines), output
    for title in ('training', 'episodes', 'system'):
        assert any(line.strip() == title or f' {title} ' in line for line in lines), f'no {title!r} panel:\n{output}'
    assert any('episode_return' in line for line in lines), f'no episode statistics shown:\n{output}'
    assert not any(line.startswith('step ') for line in lines), 'the plain log was printed at a terminal'
    # Lines the dashboard drew (not the plain lines around it, which the terminal wraps: the run's first line,
    # what it decided of CPUs and threads, and the last) fit the width.
    drawn = [line for line in lines if not line.startswith(('puffer train ', 'cpus: ', 'done: '))]
    assert max(len(line) for line in drawn) <= width, f'the dashboard overflows {width} columns:\n{output}'
    done = re.search(r'done: 16,384 steps in \d+ epochs; run directory (\S+);', ''.join(lines))
    assert done, output
    assert list((experiments / os.path.basename(done.group(1)) / 'checkpoints').glob('*.pt'))


@pytest.mark.parametrize('width, video', [(40, 'squared.gif'), (200, 'squared.mp4')])
def test_eval_writes_a_video_at_a_terminal(trained, width, video):
    experiments, _ = trained
    status, output = run_in_terminal(['eval', 'puffer_squared', '--checkpoint', 'latest', '--episodes', '1',
                                      '--video', video], width, experiments)
    assert_clean(status, output, 'puffer eval')
    assert 'mean episode return' in output
    import imageio.v3 as iio
    frames = iio.imread(experiments / video, index=None)
    assert frames.ndim == 4 and frames.shape[0] > 1 and frames.shape[-1] == 3, frames.shape


def test_plot_at_a_terminal(trained):
    experiments, _ = trained
    runs = sorted(str(p) for p in experiments.glob('puffer_squared-*'))
    status, output = run_in_terminal(['plot', *runs, '--out', 'curve.png'], 80, experiments)
    assert_clean(status, output, 'puffer plot')
    assert (experiments / 'curve.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


@pytest.mark.parametrize('width', WIDTHS)
@pytest.mark.parametrize('args, expect', [(['envs'], 'puffer_squared'), (['--help'], 'train'),
                                          (['train', 'puffer_squared', '--help'], '--train.total-timesteps')])
def test_listing_and_help_at_a_terminal(tmp_path, width, args, expect):
    status, output = run_in_terminal(args, width, tmp_path)
    assert_clean(status, output, f'puffer {" ".join(args)}')
    assert expect in output


# The layout itself at every width from 1 to 220 columns, with and without rows in each panel
# (cheap: no process). The empty first frame is the one that used to crash.
ROWS = [{}, {'global_step': 4096, 'epoch': 2, 'sps': 1234.5, 'elapsed_s': 3.0, 'policy_loss': -0.01,
             'env/episode_return': 0.5, 'env/a_rather_long_statistic_name': 1e7, 'cpu %': 99.0, 'gpu %': 40.0}]


@pytest.mark.parametrize('row', ROWS, ids=['first-frame', 'with-rows'])
def test_dashboard_layout_fits_every_width(row):
    trainer = SimpleNamespace(total_epochs=4, batch_size=2048, horizon=32, device='cpu',
                              vecenv=SimpleNamespace(num_agents=64))
    dashboard = Dashboard('puffer_squared', trainer, '/nonexistent', live=False)
    for width in range(1, 221):
        console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
        console.print(dashboard._render(row))
        text = console.file.getvalue()
        assert 'puffer' in text.replace('\n', '')
        assert max(map(len, text.splitlines())) <= width, f'{width} columns:\n{text}'


def test_first_run_setup_is_one_line_per_step_with_a_log(tmp_path):
    """scripts/puffer on a fresh machine: each set-up step is one line; a failure shows the log's end.
    (The real first run takes minutes; a Python whose venv module fails stands in for a broken step.)"""
    python = tmp_path / 'python3'
    python.write_text('#!/bin/sh\ncase "$*" in *"-m venv"*) echo "venv: no ensurepip here" >&2; exit 1 ;; esac\n'
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    venv = tmp_path / 'venv'
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, 'PYTHON': str(python), 'PUFFER_VENV': str(venv)}
    result = subprocess.run(['bash', os.path.join(root, 'scripts', 'puffer'), '--help'], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stdout.splitlines() == [f'setup: creating {venv} ... FAILED']
    assert 'no ensurepip here' in result.stderr and str(venv / 'setup.log') in result.stderr
    assert 'no ensurepip here' in (venv / 'setup.log').read_text()


def screen(output):
    """The lines a terminal shows after `output`: enough of a VT100 for the live dashboard, which redraws
    by moving the cursor up (ESC[1A) and erasing lines (ESC[2K); other escapes (colours) draw nothing."""
    lines, row, col = [''], 0, 0
    for token in re.split(r'(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)', output):
        if token == '\n':
            row, col = row + 1, 0
            lines += [''] * (row + 1 - len(lines))
        elif token == '\r':
            col = 0
        elif token.startswith('\x1b['):
            if token.endswith('A'):
                row = max(0, row - int(token[2:-1] or 1))
            elif token == '\x1b[2K':
                lines[row] = ''
        elif token:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token):]
            col += len(token)
    return lines


@pytest.mark.slow
@pytest.mark.parametrize('width', (40, 120))
def test_ctrl_c_under_the_live_dashboard_stays_on_screen(tmp_path, width):
    """Ctrl-C at the terminal while the dashboard is live: the acknowledgement is on the final screen (the
    dashboard used to draw its last frame over it, twice), and that frame shows the step training stopped at."""
    env = {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES', 'NO_COLOR', 'TERM')}
    env.update(TERM='xterm-256color', PUFFER_EXPERIMENTS=str(tmp_path))
    args = [*TRAIN[:-4], '--train.total-timesteps', '100000000', '--train.log-interval', '0']
    child = pexpect.spawn(PUFFER, args, dimensions=(40, width), env=env, cwd=str(tmp_path), encoding='utf-8',
                          codec_errors='replace', timeout=240)
    child.expect(r'steps\s+[1-9][\d,]*\s+/')  # the first epoch is on the dashboard
    child.sendintr()  # the terminal's Ctrl-C: SIGINT to the foreground process group
    output = child.before + child.after + child.read()
    child.close()
    assert child.exitstatus == 130, output
    shown = ' '.join(' '.join(screen(output)).split())  # the dashboard folds its lines at the width
    assert 'Ctrl-C: stopping at the end of this epoch with a checkpoint' in shown, '\n'.join(screen(output))
    stopped = re.search(r'stopped by Ctrl-C after ([\d,]+) steps', shown)
    assert stopped, shown
    frames = re.findall(r'steps ([\d,]+) / [\d,]+', shown)
    assert frames == [stopped.group(1)], f'the last frame is not where training stopped:\n{shown}'


def test_the_eta_of_a_resumed_run_counts_only_the_steps_still_to_train():
    """Resumed at 3/4 of its steps, 1 s ago, at 10 steps/s: 2,048 steps (204 s) remain, not the 0.3 s that
    the fraction done over the time spent here gave."""
    trainer = SimpleNamespace(total_epochs=4, batch_size=2048, horizon=32, device='cpu',
                              vecenv=SimpleNamespace(num_agents=64))
    lines = []
    dashboard = Dashboard('puffer_squared', trainer, '/nonexistent', printer=lines.append, live=False)
    row = {'global_step': 6144, 'epoch': 3, 'sps': 10.0, 'elapsed_s': 1.0}
    dashboard.update(row)
    assert 'eta 3m24s' in lines[-1], lines
    console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system=None)
    console.print(dashboard._render(row))
    assert 'eta 3m24s' in console.file.getvalue()
