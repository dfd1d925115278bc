"""Where the wall time of a training epoch goes: `puffer train ENV --profile` (train.profile = true).

The trainer marks the end of each stretch of work with `profile.lap(phase)`: the time since the
previous mark was spent in `phase`. At the end of every epoch the time since the last mark is
counted as `other`, so the phases of an epoch add up to its wall time exactly, and the epochs add
up to the training loop's. A phase holds the Python bookkeeping that leads up to its work (slicing
row ids counts as `copy`, building the loss as `update_forward`).

On CUDA the work is asynchronous: a lap synchronizes the device first, so the time lands in the
phase that queued it (which also makes a profiled run a little slower than an unprofiled one).
Turned off, `lap` is one attribute test and returns: nothing is synchronized, nothing is timed.
"""
import json
import os
import time
from typing import TYPE_CHECKING

import torch

from pufferlib import rundir

if TYPE_CHECKING:
    from rich.table import Table

# In the order an epoch runs them; `other` is the remainder.
PHASES = ('env', 'copy', 'rollout_forward', 'advantage', 'update_forward', 'backward', 'optimizer', 'stats',
          'checkpoint', 'logging', 'other')
LABELS = {
    'env': 'env (step, recv, send)',
    'copy': 'copy (to device, buffers)',
    'rollout_forward': 'forward (rollout)',
    'advantage': 'advantage (+ sampling)',
    'update_forward': 'forward (update, loss)',
    'backward': 'backward',
    'optimizer': 'optimizer (clip, step)',
    'stats': 'stats (losses, infos)',
    'checkpoint': 'checkpoint',
    'logging': 'logging (metrics, dash)',
    'other': 'other',
}


class Profile:
    """Wall seconds per phase of the training loop; `enabled=False` makes every call a no-op."""

    def __init__(self, enabled: bool = False, device: torch.device | str = 'cpu') -> None:
        self.enabled = bool(enabled)
        self.device = torch.device(device)
        self.sync = self.enabled and self.device.type == 'cuda'
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.epochs = 0
        self.steps = 0
        self._mark: float | None = None  # perf_counter of the last lap; None outside the timed loop
        self._start_step = 0

    def _now(self) -> float:
        if self.sync:
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def start(self, global_step: int) -> None:
        """The training loop begins: laps count from here (laps before are ignored)."""
        if self.enabled:
            self._start_step = global_step
            self._mark = self._now()

    def lap(self, phase: str) -> None:
        if not self.enabled or self._mark is None:
            return
        now = self._now()
        self.seconds[phase] += now - self._mark
        self._mark = now

    def end_epoch(self, global_step: int) -> None:
        if not self.enabled or self._mark is None:
            return
        self.lap('other')
        self.epochs += 1
        self.steps = global_step - self._start_step

    # --- the report ---------------------------------------------------------------------------

    def summary(self, loop_s: float | None = None, about: dict | None = None) -> dict:
        """What profile.json holds: per phase seconds, share, ms per epoch and steps/s alone."""
        total = sum(self.seconds.values())
        epochs = max(self.epochs, 1)
        phases = {}
        for name in PHASES:
            s = self.seconds[name]
            phases[name] = {'seconds': s, 'percent': 100 * s / total if total else 0.0,
                            'per_epoch_ms': 1000 * s / epochs,
                            # steps/s if this phase were the only cost: what bounds the whole
                            'steps_per_s': self.steps / s if s > 0 else None}
        return {'epochs': self.epochs, 'steps': self.steps, 'total_s': total,
                'steps_per_s': self.steps / total if total else None,
                'loop_s': loop_s, 'device': str(self.device), 'torch_threads': torch.get_num_threads(),
                **(about or {}), 'phases': phases}

    def report(self, run_dir: str, loop_s: float, env_name: str = '', quiet: bool = False) -> str:
        """Write profile.json into the run directory, print the table unless quiet; return the path.

        loop_s: the training loop's wall time by its own clock, which the phases should add up to."""
        summary = self.summary(loop_s, {'env': env_name})
        path = os.path.join(run_dir, 'profile.json')
        rundir.write_text(path, json.dumps(summary, indent=1))
        if not quiet:
            from rich.console import Console
            Console().print(table(summary))
            print(f'profile written to {path}', flush=True)
        return path


def table(summary: dict, title: str = 'Where the time of an epoch went') -> 'Table':
    """A rich Table of a profile summary (profile.json): phase, seconds, %, ms per epoch, steps/s."""
    from rich.table import Table
    out = Table(title=f'{title} ({summary["epochs"]} epochs, {summary["steps"]:,} steps, {summary["device"]}, '
                      f'{summary["torch_threads"]} torch threads)')
    out.add_column('phase', no_wrap=True)
    for column in ('seconds', '% epoch', 'ms/epoch', 'steps/s'):
        out.add_column(column, justify='right', no_wrap=True)
    for name, row in summary['phases'].items():
        out.add_row(LABELS.get(name, name), f'{row["seconds"]:.2f}', f'{row["percent"]:.1f}',
                    f'{row["per_epoch_ms"]:.1f}', _rate(row['steps_per_s']))
    epochs = max(summary['epochs'], 1)
    out.add_row('total', f'{summary["total_s"]:.2f}', '100.0', f'{1000 * summary["total_s"] / epochs:.1f}',
                _rate(summary['steps_per_s']), style='bold')
    out.caption = ('steps/s: the run\'s agent steps / that phase\'s seconds (the speed if it were the only '
                   'cost); total: the measured speed')
    return out


def _rate(value: float | None) -> str:
    return '-' if value is None else f'{value:,.0f}'
