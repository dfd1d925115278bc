"""A run's metrics: one JSON row per log interval in the run directory's metrics.jsonl, and the same rows
to wandb when `wandb.enabled` (offline unless an API key is set). The run directory itself is
pufferlib.rundir; what goes into a row, pufferlib.train."""
import contextlib
import json
import os
from typing import Any, Literal, cast

from pufferlib import config as configuration
from pufferlib.rundir import write_failure


class Metrics:
    """metrics.jsonl in the run directory, plus wandb when enabled."""

    def __init__(self, run_dir: str, config: dict, resume: bool) -> None:
        self.path = os.path.join(run_dir, 'metrics.jsonl')
        try:
            self.file = open(self.path, 'a')
        except OSError as e:
            raise write_failure('the metrics file', self.path, e) from None
        self.wandb: Any = None  # a wandb run; wandb is an optional dependency, imported only when enabled
        if config['wandb']['enabled']:
            self.wandb = start_wandb(run_dir, config, resume)

    def write(self, row: dict) -> None:
        try:
            self.file.write(json.dumps(row) + '\n')
            self.file.flush()
        except OSError as e:
            raise write_failure('the metrics file', self.path, e) from None
        if self.wandb is not None:
            self.wandb.log(row, step=row['global_step'])

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a full disk already raised at write(); closing must not mask it
            self.file.close()
        if self.wandb is not None:
            self.wandb.finish()


WandbMode = Literal['online', 'offline', 'disabled', 'shared']


def start_wandb(run_dir: str, config: dict, resume: bool) -> Any:
    try:
        import wandb
    except ImportError:
        raise configuration.ConfigError('wandb.enabled needs wandb: pip install -e ".[wandb]" in this '
                                        'repository') from None
    # Offline unless a key is configured: a missing login must never prompt or crash a run.
    mode: WandbMode = 'online' if os.environ.get('WANDB_API_KEY') else 'offline'
    # WANDB_MODE goes to wandb as the user set it: wandb checks it (and still takes its older names).
    mode = cast(WandbMode, os.environ.get('WANDB_MODE', mode))
    return wandb.init(project=config['wandb']['project'], group=config['wandb']['group'] or None,
                      config=config, dir=run_dir, name=os.path.basename(run_dir), mode=mode,
                      id=os.path.basename(run_dir), resume='allow' if resume else None)
