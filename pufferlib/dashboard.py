"""What `puffer train` shows while it runs: a live rich dashboard on a terminal, one plain line per
update otherwise (CI logs, containers, pipes)."""
import os
import sys

import psutil


def _fmt(value):
    if isinstance(value, float):
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f'{value:.3g}'
        return f'{value:.4f}' if abs(value) < 10 else f'{value:,.1f}'
    if isinstance(value, int):
        return f'{value:,}'
    return str(value)


def _eta(seconds):
    if seconds is None or seconds != seconds or seconds == float('inf'):
        return '?'
    seconds = int(seconds)
    if seconds >= 3600:
        return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'
    return f'{seconds // 60}m{seconds % 60:02d}s'


class Dashboard:
    """Context manager; `update(row)` with the metrics row written to metrics.jsonl."""

    def __init__(self, env_name, trainer, run_dir, printer=None, quiet=False, live=None):
        self.env_name, self.trainer, self.run_dir = env_name, trainer, run_dir
        self.total = trainer.total_epochs * trainer.batch_size
        self.quiet = quiet
        self.printer = printer or (lambda line: print(line, flush=True))
        self.live_mode = (sys.stdout.isatty() and os.environ.get('TERM') != 'dumb') if live is None else live
        self.live = None
        self.process = psutil.Process()
        self.process.cpu_percent()  # the first call only starts the measurement window

    def __enter__(self):
        if self.quiet:
            return self
        self.printer(f'puffer train {self.env_name}: {self.trainer.vecenv.num_agents} agent rows x '
                     f'{self.trainer.horizon} steps per epoch, {self.trainer.total_epochs} epochs on '
                     f'{self.trainer.device}; run directory {self.run_dir}')
        if self.live_mode:
            from rich.live import Live
            self.live = Live(self._render({}), refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)

    def _usage(self):
        usage = {'cpu %': self.process.cpu_percent() + sum(c.cpu_percent() for c in self._children())}
        try:
            import torch
            if torch.cuda.is_available():
                usage['gpu mem GiB'] = torch.cuda.memory_allocated() / 2**30
                try:
                    usage['gpu %'] = float(torch.cuda.utilization())
                except Exception:  # needs pynvml; memory alone is still useful
                    pass
        except ImportError:
            pass
        return usage

    def _children(self):
        try:
            return self.process.children(recursive=True)
        except psutil.Error:
            return []

    def update(self, row):
        if self.quiet:
            return
        row = {**row, **self._usage()}
        if self.live is not None:
            self.live.update(self._render(row))
            return
        done = row['global_step'] / max(self.total, 1)
        eta = (row['elapsed_s'] / done - row['elapsed_s']) if done > 0 else None
        episode = ' '.join(f'{k[4:]} {_fmt(v)}' for k, v in row.items() if k.startswith('env/'))
        self.printer(f'step {row["global_step"]:,}/{self.total:,} ({done:.0%}, eta {_eta(eta)}) '
                     f'sps {row["sps"]:,.0f} | pg {_fmt(row.get("policy_loss", 0.0))} '
                     f'v {_fmt(row.get("value_loss", 0.0))} ent {_fmt(row.get("entropy", 0.0))} '
                     f'kl {_fmt(row.get("approx_kl", 0.0))} | {episode or "no episodes yet"} | '
                     f'cpu {row["cpu %"]:.0f}%')

    def _render(self, row):
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        steps = row.get('global_step', 0)
        done = steps / max(self.total, 1)
        elapsed = row.get('elapsed_s', 0.0)
        eta = (elapsed / done - elapsed) if done > 0 else None
        head = Table.grid(padding=(0, 2))
        head.add_row(f'[bold]{self.env_name}[/]', f'steps {steps:,} / {self.total:,}',
                     f'sps [bold]{row.get("sps", 0):,.0f}[/]', f'elapsed {_eta(elapsed)}', f'eta {_eta(eta)}')
        losses = Table(title='training', show_header=False, expand=True)
        episodes = Table(title='episodes', show_header=False, expand=True)
        system = Table(title='system', show_header=False, expand=True)
        for key, value in row.items():
            if key.startswith('env/'):
                episodes.add_row(key[4:], _fmt(value))
            elif key in ('cpu %', 'gpu %', 'gpu mem GiB', 'rollout_s', 'train_s'):
                system.add_row(key, _fmt(value))
            elif key not in ('global_step', 'sps', 'elapsed_s'):
                losses.add_row(key, _fmt(value))
        grid = Table.grid(expand=True)
        grid.add_row(losses, episodes, system)
        return Group(head, ProgressBar(total=max(self.total, 1), completed=steps), grid)

