"""Hyperparameter sweeps: `puffer sweep ENV`. Protein (cost-aware Bayesian search) and its peers.

    puffer sweep puffer_breakout --sweep.max-hours 0.75          # Protein, trials one after another
    puffer sweep --resume experiments/sweeps/puffer_breakout-...  # after Ctrl-C, SIGKILL or a reboot
    puffer sweep --report experiments/sweeps/puffer_breakout-...  # the trial table and PNGs

A sweep reads in the order of its modules:
1. `space`: the search space, the `[sweep.<section>.<key>]` tables of the config files. Each swept key
   has a distribution, min and max; its configured value is the search centre. Values are normalised to
   [-1, 1] in their own space: log (learning rates), logit (gamma, lambda), linear, int, pow2 (sizes).
2. `methods`: one interface (`observe` a finished trial, `suggest` the next point, both in the
   normalised space): `protein`, `random`, `pareto_genetic`, and `optuna` (TPE, an optional extra).
   Protein fits two Gaussian processes (scikit-learn) over the hyperparameters: one for the score,
   one for the log cost. Every trial's learning curve is downsampled to about 10 points and each
   point is data for both, so one run teaches the GPs what its config reaches at several costs.
   Candidates are sampled around the score-vs-cost Pareto front and rated
   `GP_score(x) * (1 - |1.25 U - GP_cost(x)|)` with U ~ Uniform(0, 1): each suggestion aims at a
   random cost level, up to 25% past the top of the cost range, and takes the best predicted score
   there (GP_score is one draw from the score GP's posterior: Thompson sampling). The top of the cost
   range is the costliest trial so far or, with train.total_timesteps swept, the predicted cost of the
   longest run it allows; it is also the cost GP's prior mean: where unsure, it predicts an expensive run.
3. `ledger`: `trials.jsonl` in the sweep directory, append-only and fsync'd, one `start` and one
   `end` record per trial. Resuming replays it: finished trials are kept, unfinished ones rerun.
4. `trials`: one subprocess each (`python -m pufferlib.sweep RUN_DIR`) running `pufferlib.train.train`
   into an ordinary run directory. A crash, a NaN loss or an overrun time budget is a failed trial
   with its error; it never stops the sweep.
5. `driver`: the sweep directory and the loop that runs trials. Locally K trials run at once, each
   pinned to its share of the cores (and GPUs); with `--sweep.backend ray` each trial is a Ray task and
   the ledger stays here. It writes `best.toml` (usable as `puffer train ENV --config best.toml`).
6. `report`: `--report`, a table and PNGs: score against cost with the Pareto front, score against
   each swept key.
"""
from __future__ import annotations

from pufferlib.sweep.driver import (SETTINGS, Driver, Progress, Sweep, check_settings, confirm_start_record, create,
                                    resolve, run, sweep_start_record, sweeps_dir, trial_spec, write_best)
from pufferlib.sweep.ledger import Ledger, SweepError, seed_scores, seeds_text, trials_of
from pufferlib.sweep.methods import (ALPHA, EPS, METHOD_CLASSES, METHODS, Method, Observation, Optuna,
                                     ParetoGenetic, Protein, Random, make_method, pareto_front)
from pufferlib.sweep.report import plot_sweep, report
from pufferlib.sweep.space import BUDGET_KEY, DISTRIBUTIONS, SPEC_FIELDS, SWEPT_SECTIONS, Param, Space, parse_space
from pufferlib.sweep.trials import (AUTO_METRICS, DOWNSAMPLE, LOSS_KEYS, downsample, pick_metric, read_rows,
                                    run_trial, stop_trials, trial_main)

__all__ = [
    'ALPHA', 'AUTO_METRICS', 'BUDGET_KEY', 'DISTRIBUTIONS', 'DOWNSAMPLE', 'EPS', 'LOSS_KEYS', 'METHODS',
    'METHOD_CLASSES', 'SETTINGS', 'SPEC_FIELDS', 'SWEPT_SECTIONS',
    'Driver', 'Ledger', 'Method', 'Observation', 'Optuna', 'Param', 'ParetoGenetic', 'Progress', 'Protein',
    'Random', 'Space', 'Sweep', 'SweepError',
    'check_settings', 'confirm_start_record', 'create', 'downsample', 'make_method', 'pareto_front',
    'parse_space', 'pick_metric', 'plot_sweep', 'read_rows', 'report', 'resolve', 'run', 'run_trial',
    'seed_scores', 'seeds_text', 'stop_trials', 'sweep_start_record', 'sweeps_dir', 'trial_main', 'trial_spec',
    'trials_of', 'write_best',
]
