"""What `puffer train` shows while it runs: a live rich dashboard on a terminal, one plain line per
update otherwise (CI logs, containers, pipes)."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import psutil

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.live import Live
    from rich.table import Table


class _Rows(Protocol):
    @property
    def num_agents(self) -> int: ...


class TrainerView(Protocol):
    """What the dashboard reads of the trainer (pufferlib.trainer.Trainer)."""

    @property
    def total_epochs(self) -> int: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def horizon(self) -> int: ...

    @property
    def device(self) -> object: ...

    @property
    def vecenv(self) -> _Rows: ...


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f'{value:.3g}'
        return f'{value:.4f}' if abs(value) < 10 else f'{value:,.1f}'
    if isinstance(value, int):
        return f'{value:,}'
    return str(value)


def remaining_seconds(row: dict[str, Any], total: int) -> float | None:
    """Seconds until `total` steps at the rate of this process (`sps`: the steps it trained over its own
    elapsed time). The share of steps done is no rate: after a resume most of them took no time here."""
    sps = row.get('sps', 0.0)
    return max(total - row.get('global_step', 0), 0) / sps if sps > 0 else None


def _eta(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float('inf'):
        return '?'
    seconds = int(seconds)
    if seconds >= 3600:
        return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'
    return f'{seconds // 60}m{seconds % 60:02d}s'


class Dashboard:
    """Context manager; `update(row)` with the metrics row written to metrics.jsonl."""

    def __init__(self, env_name: str, trainer: TrainerView, run_dir: str, printer: Callable[[str], None] | None = None,
                 quiet: bool = False, live: bool | None = None, notes: Sequence[str] = ()) -> None:
        self.env_name, self.trainer, self.run_dir = env_name, trainer, run_dir
        self.notes = list(notes)  # lines under the first one: what the run decided (e.g. its CPUs and threads)
        self.total = trainer.total_epochs * trainer.batch_size
        self.quiet = quiet
        self.printer = printer or (lambda line: print(line, flush=True))
        self.live_mode = (sys.stdout.isatty() and os.environ.get('TERM') != 'dumb') if live is None else live
        self.live: Live | None = None
        self.notice: str | None = None  # a line the live display keeps on top (`announce`)
        self.process = psutil.Process()
        self.process.cpu_percent()  # the first call only starts the measurement window

    def __enter__(self) -> Dashboard:
        if self.quiet:
            return self
        self.printer(f'puffer train {self.env_name}: {self.trainer.vecenv.num_agents} agent rows x '
                     f'{self.trainer.horizon} steps per epoch, {self.trainer.total_epochs} epochs on '
                     f'{self.trainer.device}; run directory {self.run_dir}')
        for note in self.notes:
            self.printer(note)
        if self.live_mode:
            from rich.live import Live
            self.live = Live(self._render({}), refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def announce(self, line: str) -> None:
        """Show `line` now; safe in a signal handler. A live display would draw over a line written below
        it (and redraw its last frame over it again when it stops), so it shows the line in its frame, from
        its next refresh on; otherwise it goes to stderr."""
        if self.live is not None and self.live.is_started:
            self.notice = line  # read by the refresh thread; the handler takes no lock a redraw may hold
            return
        # os.write, not print: a handler may run in the middle of a print to the same stream.
        os.write(2, f'\n{line}\n'.encode())

    def _usage(self) -> dict[str, float]:
        usage = {'cpu %': self.process.cpu_percent() + sum(c.cpu_percent() for c in self._children())}
        try:
            import torch
            if torch.cuda.is_available():
                usage['gpu mem GiB'] = torch.cuda.memory_allocated() / 2**30
                try:
                    usage['gpu %'] = float(torch.cuda.utilization())
                except Exception:  # pynvml (nvidia-ml-py, the train extra) missing or no NVML: memory alone
                    pass
        except ImportError:
            pass
        return usage

    def _children(self) -> list[psutil.Process]:
        try:
            return self.process.children(recursive=True)
        except psutil.Error:
            return []

    def update(self, row: dict[str, Any]) -> None:
        if self.quiet:
            return
        row = {**row, **self._usage()}
        if self.live is not None:
            self.live.update(self._render(row))
            return
        done = row['global_step'] / max(self.total, 1)
        eta = remaining_seconds(row, self.total)
        episode = ' '.join(f'{k[4:]} {_fmt(v)}' for k, v in row.items() if k.startswith('env/'))
        swarm = ' '.join(f'{k[6:]} {_fmt(v)}' for k, v in row.items() if k.startswith('swarm/'))  # [swarm]
        if swarm:
            episode = f'{episode or "no episodes yet"} | swarm {swarm}'
        self.printer(f'step {row["global_step"]:,}/{self.total:,} ({done:.0%}, eta {_eta(eta)}) '
                     f'sps {row["sps"]:,.0f} | pg {_fmt(row.get("policy_loss", 0.0))} '
                     f'v {_fmt(row.get("value_loss", 0.0))} ent {_fmt(row.get("entropy", 0.0))} '
                     f'kl {_fmt(row.get("approx_kl", 0.0))} | {episode or "no episodes yet"} | '
                     f'cpu {row["cpu %"]:.0f}%')

    def _render(self, row: dict[str, Any]) -> _View:
        return _View(self.env_name, self.total, row, lambda: self.notice)


# Metrics shown in the `system` panel; everything else that is not a step counter is a training stat.
SYSTEM_KEYS = ('cpu %', 'gpu %', 'gpu mem GiB', 'rollout_s', 'train_s')
MINIMUM = 24  # below this, tables cannot fit a key and a value: only the head line
NARROW = 90  # below this many columns one borderless list replaces the three boxed panels


def _table(**kwargs: Any) -> Table:
    from rich.table import Table
    # Columns declared up front: a table whose columns come only from rows has none while it is
    # empty, and rich cannot share out the width of an expanded table with no columns
    # ("Sum of ratios must be > 0"), which is what killed the dashboard before the first update.
    table = Table(show_header=False, expand=True, **kwargs)
    table.add_column('metric', ratio=3, overflow='fold')
    table.add_column('value', ratio=2, justify='right', no_wrap=True)
    return table


class _View:
    """One frame of the live dashboard. A rich renderable (not a prebuilt table) so that the layout is
    chosen from the width the terminal has at each refresh: a resize between refreshes is fine."""

    def __init__(self, env_name: str, total: int, row: dict[str, Any],
                 notice: Callable[[], str | None] = lambda: None) -> None:
        self.env_name, self.total, self.row, self.notice = env_name, total, row, notice

    def _sections(self) -> list[tuple[str, list[tuple[str, Any]], str]]:
        row = self.row
        losses = [(k, v) for k, v in row.items()
                  if not k.startswith('env/') and k not in SYSTEM_KEYS and k not in ('global_step', 'sps', 'elapsed_s')]
        episodes = [(k[4:], v) for k, v in row.items() if k.startswith('env/')]
        system = [(k, v) for k, v in row.items() if k in SYSTEM_KEYS]
        return [('training', losses, 'first update pending'), ('episodes', episodes, 'no episodes yet'),
                ('system', system, 'measuring')]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        from rich.padding import Padding
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text
        row = self.row
        steps = row.get('global_step', 0)
        elapsed = row.get('elapsed_s', 0.0)
        eta = remaining_seconds(row, self.total)
        # One line of text that wraps between fields on a narrow terminal (a grid would squeeze each cell).
        yield Text.from_markup('  '.join([
            f'[bold]{self.env_name}[/]', f'steps {steps:,} / {self.total:,}', f'sps [bold]{row.get("sps", 0):,.0f}[/]',
            f'elapsed {_eta(elapsed)}', f'eta {_eta(eta)}']))
        notice = self.notice()
        if notice:  # under the head line: a frame taller than the terminal loses its bottom lines, not this
            yield Text(notice, style='bold yellow')
        if options.max_width < MINIMUM:  # too narrow for tables: the head line (folded) is the dashboard
            return
        # A ProgressBar ends without a line break (it is made for table cells): give it a row of its own.
        bar = Table.grid(expand=True)
        bar.add_row(ProgressBar(total=max(self.total, 1), completed=min(steps, self.total)))
        yield bar
        if options.max_width < NARROW:
            # Stacked boxes would not fit a 24-line terminal: one list, a bold line per section.
            table = _table(box=None, padding=(0, 1))
            for title, items, placeholder in self._sections():
                table.add_row(f'[bold]{title}[/]', '')
                for key, value in items or [(f'[dim]{placeholder}[/]', '')]:
                    table.add_row(Padding(Text.from_markup(key, overflow='fold'), (0, 0, 0, 2)), _fmt(value))
            yield table
            return
        grid = Table.grid(expand=True)
        panels = []
        for title, items, placeholder in self._sections():
            panel = _table(title=title)
            for key, value in items or [(f'[dim]{placeholder}[/]', '')]:
                panel.add_row(key, _fmt(value))
            grid.add_column(ratio=1)
            panels.append(panel)
        grid.add_row(*panels)
        yield grid
