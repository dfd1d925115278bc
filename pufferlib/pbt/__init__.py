"""Population-based training (`puffer pbt ENV`): a population of runs trained side by side in rounds; after
each round the worst copy the best and perturb their hyperparameters.

    puffer pbt puffer_breakout --pbt.population 8 --pbt.interval 2000000    # rounds of 2M steps per member
    puffer pbt --resume experiments/pbt/puffer_breakout-20261130-101500      # after Ctrl-C, SIGKILL, reboot
    puffer pbt --report experiments/pbt/puffer_breakout-20261130-101500      # table + pbt.png

Each member is an ordinary run directory (`members/member-03/`), trained `pbt.interval` agent steps a round
by `pufferlib.train` in a process of its own, the way a sweep's trials are (pufferlib/sweep/trials.py), on
this machine or as Ray tasks (pufferlib/backend.py). The next round resumes it from its checkpoint, so the
learning-rate schedule spans the whole run (train.total_timesteps), as in `puffer train`.

After a round, truncation selection on `pbt.metric` (the member's mean over the second half of the round):
the bottom `pbt.fraction` (and any member whose round failed) take the checkpoint of a top member chosen
uniformly (weights, optimizer moments, step) and its hyperparameters, each key then multiplied by 0.8 or
1.2, or with probability `pbt.resample` drawn afresh from the key's range. The keys and ranges are the
config's `[sweep]` tables (pufferlib/sweep/space.py), env options included. A member without a checkpoint
is never copied.

The driver alone writes `ledger.jsonl` (one fsync'd record a line): `member` (a member's first values),
`trained` (its round's result), `exploit` (the round's selection: who copies whom, the new values and how
each key moved), `round` (the exploits are in place). A member's values are those of its last record, and
the driver writes its config.toml from them before every round, so they survive any restart; a resume
replays the ledger and goes on exactly where it stopped: rounds with a `round` record are done, a
recorded exploit is applied again (copying is idempotent), a member's round without a `trained` record is
trained again from its newest checkpoint.

The package, by job: space.py (the [pbt] settings, the hyperparameter space, the metric, perturbation,
the first members), ledger.py (the population directory, its ledger records and their replay),
driver.py (the rounds, each member's round as a task, selection and exploits, `run`) and report.py
(`--report`). The names callers use are imported here.
"""

from pufferlib.pbt.driver import Driver, member_round, run
from pufferlib.pbt.ledger import Population, State, create, pbt_dir, record_problem
from pufferlib.pbt.report import report
from pufferlib.pbt.space import (PBTError, check_metric, check_settings, first_members, known_metrics, perturb,
                                 population_space, resolve, seeds_from_sweep)

__all__ = ['Driver', 'PBTError', 'Population', 'State', 'check_metric', 'check_settings', 'create', 'first_members',
           'known_metrics', 'member_round', 'pbt_dir', 'perturb', 'population_space', 'record_problem', 'report',
           'resolve', 'run', 'seeds_from_sweep']
