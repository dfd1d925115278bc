"""Hyperparameter sweeps: `puffer sweep ENV`. Protein (cost-aware Bayesian search) and its peers.

    puffer sweep puffer_breakout --sweep.max-hours 0.75          # Protein, trials one after another
    puffer sweep --resume experiments/sweeps/puffer_breakout-...  # after Ctrl-C, SIGKILL or a reboot
    puffer sweep --report experiments/sweeps/puffer_breakout-...  # the trial table and PNGs

A sweep reads top to bottom in this file:
1. The search space: the `[sweep.<section>.<key>]` tables of the config files. Each swept key has a
   distribution, min and max; its configured value is the search centre. Values are normalised to
   [-1, 1] in their own space: log (learning rates), logit (gamma, lambda), linear, int, pow2 (sizes).
2. The methods, one interface (`observe` a finished trial, `suggest` the next point, both in the
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
3. The ledger: `trials.jsonl` in the sweep directory, append-only and fsync'd, one `start` and one
   `end` record per trial. Resuming replays it: finished trials are kept, unfinished ones rerun.
4. Trials: one subprocess each (`python -m pufferlib.sweep RUN_DIR`) running `pufferlib.train.train`
   into an ordinary run directory. A crash, a NaN loss or an overrun time budget is a failed trial
   with its error; it never stops the sweep. Locally K trials run at once, each pinned to its share of
   the cores (and GPUs); with `--sweep.backend ray` each trial is a Ray task and the ledger stays here.
5. Outputs: `best.toml` (usable as `puffer train ENV --config best.toml`) and `--report` (a table and
   PNGs: score against cost with the Pareto front, score against each swept key).
"""
import concurrent.futures
import datetime
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

import numpy as np

import pufferlib
from pufferlib.backend import LocalBackend, RayBackend
from pufferlib import config as configuration
from pufferlib import rundir
from pufferlib.config import ConfigError

METHODS = ('protein', 'random', 'pareto_genetic', 'optuna')
DISTRIBUTIONS = ('log', 'logit', 'linear', 'int', 'pow2')
SWEPT_SECTIONS = ('train', 'env', 'policy', 'rnn', 'vec')
SPEC_FIELDS = ('distribution', 'min', 'max')
BUDGET_KEY = 'train.total_timesteps'
DOWNSAMPLE = 10      # points kept from each learning curve
ALPHA = 1.25         # the cost target alpha * U reaches 25% past the costliest trial seen
EPS = 1e-9


class SweepError(pufferlib.PufferError, RuntimeError):
    """A sweep directory is missing or damaged, or a sweep cannot go on."""


# ---------------------------------------------------------------------------------------------
# 1. The search space
# ---------------------------------------------------------------------------------------------

class Param:
    """One swept key: its distribution, bounds and centre; maps values to [-1, 1] and back."""

    def __init__(self, name, distribution, low, high, centre, integer):
        self.name, self.distribution, self.low, self.high = name, distribution, low, high
        self.integer = integer or distribution in ('int', 'pow2')
        self.section, self.key = name.split('.', 1)
        self._lo, self._hi = self._forward(low), self._forward(high)
        self.centre = self.normalize(centre)

    def _forward(self, value):
        if self.distribution in ('log', 'pow2'):
            return math.log2(value)
        if self.distribution == 'logit':
            return math.log(value / (1 - value))
        return float(value)

    def _inverse(self, u):
        if self.distribution == 'pow2':
            return 2 ** round(u)
        if self.distribution == 'log':
            return 2 ** u
        if self.distribution == 'logit':
            return 1 / (1 + math.exp(-u))
        return u

    def normalize(self, value):
        if self._hi == self._lo:
            return 0.0
        value = min(max(value, self.low), self.high)
        return 2 * (self._forward(value) - self._lo) / (self._hi - self._lo) - 1

    def value(self, z):
        """The config value at normalised coordinate z (clipped to [-1, 1])."""
        t = (min(max(float(z), -1.0), 1.0) + 1) / 2
        value = self._inverse(self._lo + t * (self._hi - self._lo))
        value = min(max(value, self.low), self.high)  # rounding and exp never leave the bounds
        return int(round(value)) if self.integer else float(value)


class Space:
    """The swept keys, in a fixed order; points are arrays of normalised coordinates."""

    def __init__(self, params):
        self.params = list(params)
        self.names = [p.name for p in self.params]
        self.centre = np.array([p.centre for p in self.params])
        self.budget_index = self.names.index(BUDGET_KEY) if BUDGET_KEY in self.names else None

    def __len__(self):
        return len(self.params)

    def values(self, x):
        """{'train.learning_rate': 0.003, ...} at point x."""
        return {p.name: p.value(z) for p, z in zip(self.params, x)}

    def point(self, values):
        return np.array([p.normalize(values[p.name]) for p in self.params])

    def apply(self, config, values):
        """A copy of `config` with the swept values set."""
        out = {section: dict(table) if isinstance(table, dict) else table for section, table in config.items()}
        for name, value in values.items():
            section, key = name.split('.', 1)
            out[section][key] = value
        return out


def parse_space(config):
    """The search space of a resolved config; a bad [sweep] table raises one ConfigError naming the key."""
    sweep = config['sweep']
    only = [name.strip() for name in sweep.get('only', '').split(',') if name.strip()]
    params = []
    for section, table in sweep.items():
        if not isinstance(table, dict):
            continue
        if section not in SWEPT_SECTIONS:
            raise ConfigError(f'[sweep.{section}]: only {", ".join(SWEPT_SECTIONS)} keys can be swept')
        for key, spec in table.items():
            name = f'{section}.{key}'
            if only and name not in only:
                continue
            params.append(_parse_param(name, spec, config[section]))
    for name in only:
        if name not in [p.name for p in params]:
            raise ConfigError(f'sweep.only names {name!r}, which has no [sweep.{name}] table; '
                              f'swept keys: {", ".join(_spec_names(sweep)) or "none"}')
    if not params:
        raise ConfigError('the [sweep] section has no keys to sweep: add a table such as\n'
                          '  [sweep.train.learning_rate]\n  distribution = "log"\n  min = 1e-4\n  max = 1e-1')
    return Space(params)


def _spec_names(sweep):
    return [f'{section}.{key}' for section, table in sweep.items() if isinstance(table, dict) for key in table]


def _parse_param(name, spec, section_values):
    where = f'[sweep.{name}]'
    section, key = name.split('.', 1)
    if not isinstance(spec, dict):
        raise ConfigError(f'{where} must be a table with distribution, min and max, got {spec!r}')
    if key not in section_values:
        import difflib
        close = difflib.get_close_matches(key, list(section_values), n=3, cutoff=0.6)
        hint = f' (did you mean {", ".join(close)}?)' if close else ''
        raise ConfigError(f'{where}: [{section}] has no key {key!r}{hint}; a swept key needs a configured '
                          'value, which is the centre of its search')
    unknown = [field for field in spec if field not in SPEC_FIELDS]
    if unknown:
        raise ConfigError(f'{where}: unknown field {unknown[0]!r}; a swept key has distribution, min and max '
                          f'(its centre is the configured value {section}.{key} = {section_values[key]!r})')
    missing = [field for field in SPEC_FIELDS if field not in spec]
    if missing:
        raise ConfigError(f'{where} needs {", ".join(missing)} (distribution is one of {", ".join(DISTRIBUTIONS)})')
    distribution, low, high = spec['distribution'], spec['min'], spec['max']
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(f'{where}: distribution must be one of {", ".join(DISTRIBUTIONS)}, got {distribution!r}')
    for field, bound in (('min', low), ('max', high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
            raise ConfigError(f'{where}: {field} must be a finite number, got {bound!r}')
    if low > high:
        raise ConfigError(f'{where}: min {low!r} is greater than max {high!r}')
    if distribution in ('log', 'pow2') and low <= 0:
        raise ConfigError(f'{where}: a {distribution} distribution needs min > 0, got {low!r}')
    if distribution == 'logit' and not (low > 0 and high < 1):
        raise ConfigError(f'{where}: a logit distribution needs 0 < min <= max < 1, got [{low!r}, {high!r}]')
    centre = section_values[key]
    if isinstance(centre, bool) or not isinstance(centre, (int, float)):
        raise ConfigError(f'{where}: {section}.{key} = {centre!r} is not a number, so it cannot be swept')
    if not low <= centre <= high:
        raise ConfigError(f'{where}: the configured value {section}.{key} = {centre!r} (the search centre) lies '
                          f'outside [{low!r}, {high!r}]; widen the range or change the value')
    return Param(name, distribution, low, high, centre, isinstance(centre, int))


SETTINGS = {  # [sweep] key: (type, check, what it must be)
    'method': (str, lambda v: v in METHODS, f'one of {", ".join(METHODS)}'),
    'metric': (str, lambda v: True, 'a metrics key'),
    'goal': (str, lambda v: v in ('maximize', 'minimize'), 'maximize or minimize'),
    'cost': (str, lambda v: v in ('seconds', 'steps'), 'seconds or steps'),
    'max_trials': (int, lambda v: v >= 1, 'at least 1'),
    'max_hours': (float, lambda v: v >= 0, '>= 0 (0 = no limit)'),
    'trial_timeout': (float, lambda v: v >= 0, '>= 0 seconds (0 = no limit)'),
    'parallel': (int, lambda v: v >= 1, 'at least 1'),
    'backend': (str, lambda v: v in ('local', 'ray'), 'local or ray'),
    'seed': (int, lambda v: True, 'an integer'),
    'only': (str, lambda v: True, 'comma-separated swept keys'),
    'confirm_top': (int, lambda v: v >= 0, 'a whole number >= 0: how many of the best trials to rerun on '
                    'more seeds at the end (0 = none)'),
    'confirm_seeds': (int, lambda v: v >= 0, 'a whole number >= 0: extra seeds for each confirmed trial '
                      '(0 = no confirmation)'),
}


def check_settings(sweep):
    for key, (kind, ok, what) in SETTINGS.items():
        value = sweep.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) or not ok(value):
            raise ConfigError(f'sweep.{key} (--sweep.{key.replace("_", "-")}) must be {what}, got {value!r}')


def resolve(env_name, flags=(), config_file=None):
    """The config of a new sweep (files, then flags) and its search space, both checked."""
    config = configuration.load(env_name, flags, config_file=config_file)
    check_settings(config['sweep'])
    return config, parse_space(config)


# ---------------------------------------------------------------------------------------------
# 2. The methods
# ---------------------------------------------------------------------------------------------

class Observation:
    """A finished trial as the methods see it: its point and its downsampled curve.

    `scores` are oriented so that higher is better (negated for goal = minimize); `costs` are seconds
    or steps; `steps` are the agent steps of each curve point. A failed trial has empty arrays.
    """

    def __init__(self, x, steps=(), costs=(), scores=(), failed=False):
        self.x = np.asarray(x, dtype=float)
        self.steps = np.asarray(steps, dtype=float)
        self.costs = np.asarray(costs, dtype=float)
        self.scores = np.asarray(scores, dtype=float)
        self.failed = failed or len(self.scores) == 0


def pareto_front(scores, costs):
    """Indices of the points no other point beats on both score (higher) and cost (lower), by cost."""
    order = np.lexsort((-np.asarray(scores), np.asarray(costs)))
    front, best = [], -np.inf
    for i in order:
        if scores[i] > best:
            front.append(i)
            best = scores[i]
    return np.array(front, dtype=int)


def _truncated_normal(rng, centres, scale):
    """Normal samples around each centre, redrawn (then clipped) where they leave [-1, 1]."""
    samples = centres + scale * rng.standard_normal(centres.shape)
    for _ in range(4):
        outside = np.abs(samples) > 1
        if not outside.any():
            break
        samples[outside] = (centres + scale * rng.standard_normal(centres.shape))[outside]
    return np.clip(samples, -1, 1)


class Random:
    """Normal samples around the defaults (sigma = half the normalised range); no learning."""

    def __init__(self, space, seed=0, scale=0.5):
        self.space, self.scale = space, scale
        self.rng = np.random.default_rng(seed)

    def observe(self, obs):
        pass

    def suggest(self, pending=(), max_cost=None):
        return _truncated_normal(self.rng, self.space.centre[None], self.scale)[0]


def _curve_points(space, obs):
    """The point of each curve sample: the trial's x, its budget coordinate set to the steps so far.

    With train.total_timesteps swept, that is its own coordinate (so a curve point at 1M steps of a 4M
    run is the point of a 1M run). Otherwise the GPs get one extra coordinate, the run's progress in
    decades below its end (1 at the end, 0 at a tenth, -1 at a hundredth); suggestions always run to
    the end, so they sit at 1.
    """
    X = np.repeat(obs.x[None], len(obs.steps), axis=0)
    if space.budget_index is not None:
        param = space.params[space.budget_index]
        X[:, space.budget_index] = [param.normalize(s) for s in obs.steps]
        return X
    progress = 1 + np.log10(np.maximum(obs.steps, 1) / max(obs.steps[-1], 1))
    return np.concatenate([X, np.clip(progress, -1, 1)[:, None]], axis=1)


def _full_run(space, x):
    return x if space.budget_index is not None else np.append(x, 1.0)


class ParetoGenetic:
    """Mutations of a random point of the score-vs-cost Pareto front (curve points included); no GPs."""

    def __init__(self, space, seed=0, scale=0.25):
        self.space, self.scale = space, scale
        self.rng = np.random.default_rng(seed)
        self.points, self.scores, self.costs = [], [], []

    def observe(self, obs):
        if obs.failed:
            return
        self.points.extend(_curve_points(self.space, obs)[:, :len(self.space)])
        self.scores.extend(obs.scores)
        self.costs.extend(obs.costs)

    def suggest(self, pending=(), max_cost=None):
        if not self.points:
            return _truncated_normal(self.rng, self.space.centre[None], self.scale)[0]
        front = pareto_front(np.array(self.scores), np.array(self.costs))
        parent = self.points[self.rng.choice(front)]
        return _truncated_normal(self.rng, parent[None], self.scale)[0]


class Protein:
    """Cost-aware Bayesian search: two GPs (score, log cost), candidates around the Pareto front.

    `candidates` points are sampled around the front (normal, sigma `scale`) and the best by
    `GP_score * (1 - |ALPHA * U - GP_cost|)` is suggested, GP_score being one joint draw from the
    score GP's posterior over the candidates (`thompson`; its mean alone crept from the best trial by
    hundredths, see docs/sweeps.md). Scores are min-max normalised to [0, 1] and log costs to [0, 1],
    from the cheapest point seen to the costliest trial or, with the budget key swept, to the longest
    run it allows at the highest cost per step seen; the cost GP models (cost - 1), so its prior mean
    is 1, the top of that range: an unexplored region is assumed expensive. Pending trials (running
    in parallel) and failed ones enter the score GP at the worst score, which steers the next
    suggestion away from them. At most `max_points` curve points are fitted (the front, the newest,
    then a random sample) so a suggestion stays well under a second after hundreds of trials.
    """

    def __init__(self, space, seed=0, scale=0.25, candidates=512, max_points=150, thompson=True):
        self.space, self.scale, self.candidates, self.max_points = space, scale, candidates, max_points
        self.thompson = thompson
        self.rng = np.random.default_rng(seed)
        self.X, self.scores, self.costs, self.failed = [], [], [], []
        self.rates = []    # log(cost / steps) at the end of each finished trial
        self.kernels = {}  # last fitted kernel of each GP: warm start for the next fit
        self.last = {}     # what the latest suggestion predicted (for the ledger)

    def observe(self, obs):
        if obs.failed:
            self.failed.append(_full_run(self.space, obs.x))
            return
        self.X.extend(_curve_points(self.space, obs))
        self.scores.extend(obs.scores)
        self.costs.extend(obs.costs)
        self.rates.append(math.log(max(obs.costs[-1], EPS)) - math.log(max(obs.steps[-1], 1)))

    def _subset(self, n):
        """Indices of at most max_points points: the Pareto front, the newest, a random sample of the rest."""
        if n <= self.max_points:
            return np.arange(n)
        keep = set(pareto_front(np.array(self.scores), np.array(self.costs)).tolist())
        keep.update(range(n - self.max_points // 2, n))
        rest = np.setdiff1d(np.arange(n), list(keep))
        room = max(0, self.max_points - len(keep))
        keep.update(self.rng.choice(rest, size=min(room, len(rest)), replace=False).tolist())
        return np.array(sorted(keep))

    def _fit(self, name, X, y):
        """A GP on (X, y). Its kernel's hyperparameters are re-optimised (warm-started) when the data has
        grown by a fifth since they last were; in between only the posterior is recomputed (one Cholesky)."""
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
        kernel, fitted_at = self.kernels.get(name, (None, 0))
        optimise = kernel is None or len(self.scores) + len(self.failed) >= 1.2 * fitted_at
        if kernel is None:
            # Matern 3/2 with one length scale per coordinate, plus observation noise. The floors matter:
            # with noise allowed down to 1e-6 and length scales to 0.03, the likelihood's best fit of noisy
            # curves was an interpolation of the noise (noise at its floor, length scales of 0.05), whose
            # predictions fell back to the prior one step past the data (docs/sweeps.md).
            kernel = (ConstantKernel(0.3, (1e-3, 10.0))
                      * Matern(length_scale=np.full(X.shape[1], 0.5), length_scale_bounds=(0.1, 30.0), nu=1.5)
                      + WhiteKernel(0.01, (1e-3, 0.5)))
        gp = GaussianProcessRegressor(kernel, optimizer=_lbfgs if optimise else None, normalize_y=False)
        import warnings
        with warnings.catch_warnings():  # hyperparameters at their bounds are expected with few points
            warnings.simplefilter('ignore')
            gp.fit(X, y)
        if optimise:
            self.kernels[name] = (gp.kernel_, len(self.scores) + len(self.failed))
        return gp

    def suggest(self, pending=(), max_cost=None):
        if not self.scores:
            return _truncated_normal(self.rng, self.space.centre[None], self.scale)[0]
        # These matrices are small (hundreds of rows): one BLAS thread is fastest, and threads that
        # spin-wait for a busy core made each Cholesky 200x slower on a loaded 2-core machine.
        from threadpoolctl import threadpool_limits
        with threadpool_limits(limits=1):
            return self._suggest(pending, max_cost)

    def _suggest(self, pending, max_cost):
        keep = self._subset(len(self.scores))
        X = np.array(self.X)[keep]
        scores, costs = np.array(self.scores)[keep], np.array(self.costs)[keep]
        lo, hi = scores.min(), scores.max()
        y = (scores - lo) / (hi - lo + EPS)
        log_cost = np.log(np.maximum(costs, EPS))
        c_lo, c_hi = log_cost.min(), log_cost.max()
        if self.space.budget_index is not None:
            # The top of the cost range is the longest run the budget key allows, priced at the highest
            # cost per step seen: cost targets span every run length from the first suggestion on, and
            # the cost GP's prior mean (1) is that run's cost, an over-estimate wherever it is unsure.
            longest = self.space.params[self.space.budget_index].high
            c_hi = max(c_hi, math.log(longest) + max(self.rates))
        c = (log_cost - c_lo) / (c_hi - c_lo + EPS)

        worst = [_full_run(self.space, np.asarray(x)) for x in pending] + self.failed
        X_score = np.vstack([X] + [np.array(worst)] if worst else [X])
        y_score = np.concatenate([y, np.zeros(len(worst))])
        # Prior means: the middle of the score range, and the top of the cost range.
        gp_score = self._fit('score', X_score, y_score - 0.5)
        gp_cost = self._fit('cost', X, c - 1.0)

        front = pareto_front(scores, costs)
        centres = X[self.rng.choice(front, size=self.candidates)]
        candidates = _truncated_normal(self.rng, centres, self.scale)
        if self.space.budget_index is None:
            candidates[:, -1] = 1.0
        if self.thompson:  # one draw from the score GP's posterior over the candidates, not its mean
            mean, cov = _latent(gp_score).predict(candidates, return_cov=True)
            predicted_score = self.rng.multivariate_normal(mean, cov, method='eigh') + 0.5
        else:
            predicted_score = gp_score.predict(candidates) + 0.5
        predicted_cost = gp_cost.predict(candidates) + 1.0
        target = ALPHA * self.rng.random()
        rating = np.maximum(predicted_score, 0) * np.maximum(1 - np.abs(target - predicted_cost), 0)
        if max_cost is not None:  # runs predicted not to finish in the time left are not worth starting
            rating[np.exp(c_lo + predicted_cost * (c_hi - c_lo)) > max_cost] = -1
        best = int(np.argmax(rating))
        self.last = {'predicted_score': float(lo + predicted_score[best] * (hi - lo)),
                     'predicted_cost': float(np.exp(c_lo + predicted_cost[best] * (c_hi - c_lo))),
                     'cost_target': float(target)}
        return candidates[best, :len(self.space)]


def _latent(gp):
    """The fitted GP predicting the latent function, not a new noisy observation of it.

    scikit-learn's predict(return_cov=True) evaluates the whole kernel at the new points, so the
    WhiteKernel's noise lands on the diagonal: a draw from it adds independent noise to every candidate,
    and the argmax of 512 candidates then picks the luckiest noise, not the best point. The fit (its
    Cholesky factor and weights) keeps the noise; only the covariance of the new points drops it.
    """
    import copy
    latent = copy.copy(gp)
    latent.kernel_ = gp.kernel_.k1  # (constant * Matern) + white -> constant * Matern
    return latent


def _lbfgs(objective, theta, bounds):
    """scikit-learn's own optimiser (L-BFGS-B), capped at 30 iterations: warm-started fits need few."""
    from scipy.optimize import minimize
    result = minimize(objective, theta, bounds=bounds, jac=True, method='L-BFGS-B', options={'maxiter': 30})
    return result.x, result.fun


class Optuna:
    """Optuna's TPE sampler (the outside peer) on the same normalised space; needs pufferlib[optuna]."""

    def __init__(self, space, seed=0):
        try:
            import optuna
        except ImportError:
            raise ConfigError('sweep.method = "optuna" needs optuna: pip install "pufferlib[optuna]"') from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna, self.space = optuna, space
        self.study = optuna.create_study(direction='maximize', sampler=optuna.samplers.TPESampler(seed=seed))
        self.distributions = {name: optuna.distributions.FloatDistribution(-1.0, 1.0) for name in space.names}
        self.asked = {}

    def _key(self, x):  # the values a point runs with: a told point comes back rounded (ints, pow2)
        return tuple(f'{v:.10g}' for v in self.space.values(x).values())

    def observe(self, obs):
        trial = self.asked.pop(self._key(obs.x), None)
        state = self.optuna.trial.TrialState.FAIL if obs.failed else self.optuna.trial.TrialState.COMPLETE
        value = None if obs.failed else float(obs.scores[-1])
        if trial is not None:
            self.study.tell(trial, value, state=state)
        else:  # a trial it did not ask for: the defaults, or one from the ledger of a resumed sweep
            params = {name: float(z) for name, z in zip(self.space.names, obs.x)}
            self.study.add_trial(self.optuna.trial.create_trial(params=params, distributions=self.distributions,
                                                                value=value, state=state))

    def suggest(self, pending=(), max_cost=None):
        trial = self.study.ask(self.distributions)
        x = np.array([trial.params[name] for name in self.space.names])
        self.asked[self._key(x)] = trial
        return x


def make_method(name, space, seed=0):
    classes = {'protein': Protein, 'random': Random, 'pareto_genetic': ParetoGenetic, 'optuna': Optuna}
    if name not in classes:
        raise ConfigError(f'sweep.method must be one of {", ".join(METHODS)}, got {name!r}')
    return classes[name](space, seed=seed)


# ---------------------------------------------------------------------------------------------
# 3. The ledger
# ---------------------------------------------------------------------------------------------

class Ledger(rundir.Ledger):
    """trials.jsonl: one JSON record a line, appended and fsync'd, written by the driver only.

    Records: `session` (a run of the driver began), `start` (trial k, attempt a, its values and run
    directory), `end` (its status, score, cost, curve, error). A trial with an `end` is finished; a
    trial with only a `start` was cut off and is rerun. A kill during a write leaves at most a torn
    last line, which never counted and is dropped on resume.
    """

    def __init__(self, path):
        super().__init__(path, SweepError)


def trials_of(records):
    """{trial: {'starts': [start records], 'end': the end record or None, 'confirm': {repeat: {'starts': [...],
    'end': ...}}}} in trial order. `confirm` holds the trial's confirmation runs (its config on another seed)."""
    trials = {}
    for record in records:
        kind = record.get('type')
        if kind not in ('start', 'end', 'confirm_start', 'confirm_end'):
            continue
        entry = trials.setdefault(record['trial'], {'starts': [], 'end': None, 'confirm': {}})
        if kind.startswith('confirm_'):
            entry = entry['confirm'].setdefault(record['repeat'], {'starts': [], 'end': None})
        if kind.endswith('start'):
            entry['starts'].append(record)
        elif entry['end'] is None:
            entry['end'] = record
    return dict(sorted(trials.items()))


def seed_scores(trial):
    """A trial's scores over every seed it ran on (its own run first, then its confirmations that finished
    ok), and how many of its confirmations failed."""
    scores = [trial['end']['score']] if trial['end'] is not None and trial['end']['status'] == 'ok' else []
    ends = [c['end'] for _, c in sorted(trial.get('confirm', {}).items()) if c['end'] is not None]
    scores += [end['score'] for end in ends if end['status'] == 'ok']
    return scores, sum(end['status'] != 'ok' for end in ends)


def seeds_text(trial):
    """'mean 25.3 over 3 seeds (35.5 20.1 20.3), spread 15.4' for a confirmed trial, else ''. The spread is
    the max-min range across its seeds (docs/sweeps.md)."""
    scores, failed = seed_scores(trial)
    if len(scores) + failed < 2:
        return ''
    text = f'mean {np.mean(scores):.4g} over {len(scores)} seeds ({" ".join(f"{v:.4g}" for v in scores)}), ' \
           f'spread {np.ptp(scores):.4g}' if scores else 'no seed finished'
    return text + (f', {failed} failed' if failed else '')


# ---------------------------------------------------------------------------------------------
# 4. Trials: a subprocess each, an ordinary run directory each
# ---------------------------------------------------------------------------------------------

LOSS_KEYS = ('policy_loss', 'value_loss', 'entropy', 'approx_kl')
AUTO_METRICS = ('env/score', 'env/perf', 'env/episode_return')
_running = {}                 # trial process pid -> Popen, so Ctrl-C can stop them
_running_lock = threading.Lock()


def read_rows(run_dir):
    """metrics.jsonl rows; a torn last line (a killed trial) is skipped."""
    rows = []
    try:
        with open(os.path.join(run_dir, 'metrics.jsonl')) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return rows


def pick_metric(rows, metric=''):
    """The configured metric, or the env's own statistic: score, else perf, else episode return."""
    if metric:
        return metric
    keys = set().union(*rows) if rows else set()
    return next((m for m in AUTO_METRICS if m in keys), AUTO_METRICS[0])


def downsample(rows, metric, cost='seconds', points=DOWNSAMPLE):
    """The learning curve as at most `points` [steps, cost, mean metric] triples, by equal step spans."""
    rows = [r for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
    if not rows:
        return []
    last = max(rows[-1]['global_step'], 1)
    bins = {}
    for row in rows:
        index = min(points - 1, max(0, math.ceil(points * row['global_step'] / last) - 1))
        bins.setdefault(index, []).append(row)
    curve = []
    for index in sorted(bins):
        group = bins[index]
        spent = group[-1]['elapsed_s'] if cost == 'seconds' else group[-1]['global_step']
        curve.append([group[-1]['global_step'], float(spent), float(np.mean([r[metric] for r in group]))])
    return curve


def _log_tail(path, lines=12):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:]).rstrip()
    except OSError:
        return ''


def run_trial(spec):
    """Run one trial in a subprocess and read its curve back; never raises for a bad trial."""
    run_dir = spec['run_dir']
    os.makedirs(os.path.join(run_dir, 'checkpoints'), exist_ok=True)
    rundir.write_text(os.path.join(run_dir, 'trial.json'), json.dumps(spec, indent=1))
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    if spec.get('cpus'):
        env['PUFFER_TRIAL_CPUS'] = ','.join(str(c) for c in spec['cpus'])
    if spec.get('gpu') is not None:
        env['CUDA_VISIBLE_DEVICES'] = str(spec['gpu'])
    limit = spec.get('limit_s') or None
    log_path = os.path.join(run_dir, 'trial.log')
    start, killed = time.time(), False
    with open(log_path, 'ab') as log:
        # A session of its own: Ctrl-C in the terminal reaches the driver only, which stops trials itself.
        proc = subprocess.Popen([sys.executable, '-m', 'pufferlib.sweep', run_dir], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        with _running_lock:
            _running[proc.pid] = proc
        try:
            # The trial stops itself at its limit; this kill is for one that hangs past it.
            rc = proc.wait(timeout=limit + max(60.0, 0.2 * limit) if limit else None)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            rc, killed = proc.wait(), True
        finally:
            with _running_lock:
                _running.pop(proc.pid, None)
    outcome = rundir.read_json(os.path.join(run_dir, 'result.json')) or {}
    rows = read_rows(run_dir)
    metric = pick_metric(rows, spec['metric'])
    curve = downsample(rows, metric, spec['cost'])
    if killed:
        error = f'hung past {spec.get("limit_what", "its time limit")} and was killed'
    elif outcome.get('error'):
        error = outcome['error']
    elif rc != 0:
        how = f'was killed by {signal.Signals(-rc).name}' if rc < 0 else f'exited with code {rc}'
        error = f'the trial process {how}:\n{_log_tail(log_path)}'
    elif not curve:
        error = (f'no {metric} in its metrics.jsonl (no episode finished?): train longer or set --sweep.metric '
                 'to a key of metrics.jsonl')
    else:
        error = None
    return {'status': 'failed' if error else 'ok', 'error': error, 'metric': metric, 'curve': curve,
            'score': curve[-1][2] if curve and not error else None, 'cost': curve[-1][1] if curve else None,
            'steps': rows[-1]['global_step'] if rows else 0, 'seconds': time.time() - start,
            'cpus': outcome.get('cpus')}


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_trials(grace=20.0):
    """Stop every running local trial: SIGTERM to the trial (the trainer saves and closes its env workers
    at the end of the epoch), then SIGKILL to its whole process group after `grace` seconds."""
    with _running_lock:
        procs = list(_running.values())
    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)


def _die_with_parent():
    """SIGTERM this trial when the process that started it dies (a SIGKILLed sweep leaves no orphans)."""
    from pufferlib.vector import set_parent_death_signal  # the Linux prctl the env workers use too
    set_parent_death_signal()
    if os.getppid() == 1:  # the parent died before the signal was set
        os.kill(os.getpid(), signal.SIGTERM)


def _trial_main(run_dir: str) -> int:
    """The trial subprocess: train with the spec's config, stop on a NaN loss or the time limit."""
    _die_with_parent()
    spec = rundir.read_json(os.path.join(run_dir, 'trial.json'))
    cpus = os.environ.get('PUFFER_TRIAL_CPUS')
    import torch
    if cpus:
        cores = [int(c) for c in cpus.split(',')]
        os.sched_setaffinity(0, cores)  # env workers started by the trainer inherit it
        torch.set_num_threads(len(cores))
    from pufferlib import train
    limit, start = spec.get('limit_s') or None, time.time()
    outcome = {'error': None, 'cpus': sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else None}

    def on_log(row):
        diverged = [k for k in LOSS_KEYS if isinstance(row.get(k), float) and not math.isfinite(row[k])]
        if diverged:
            outcome['error'] = f'diverged: {diverged[0]} became {row[diverged[0]]} at step {row["global_step"]:,}'
            return True
        if limit and time.time() - start > limit:
            outcome['error'] = f'exceeded {spec.get("limit_what", "its time limit")} at step {row["global_step"]:,}'
            return True
        return False

    try:
        summary = train.train(spec['env'], config=spec['config'], run_dir=run_dir, quiet=True, on_log=on_log)
        if summary.get('interrupted') not in (None, 'on_log') and outcome['error'] is None:
            outcome['error'] = f'stopped by {summary["interrupted"]} before the end of training'
    except Exception as e:  # any failure of a trial is data for the sweep, never the end of it
        traceback.print_exc()
        message = str(e).strip().splitlines()
        message = f'{type(e).__name__}: {message[0] if message else ""}'
        if re.search(r'\b(nan|inf|non-finite|not finite)\b', message, re.IGNORECASE):  # e.g. NaN probabilities
            message = f'diverged ({message})'
        outcome['error'] = message
    rundir.write_text(os.path.join(run_dir, 'result.json'), json.dumps(outcome))
    return 0 if outcome['error'] is None else 1


# ---------------------------------------------------------------------------------------------
# 5. The driver: a sweep directory, its ledger, and the loop that runs trials
# ---------------------------------------------------------------------------------------------

def sweeps_dir():
    return os.path.join(rundir.experiments_dir(), 'sweeps')


def create(env_name, flags=(), config_file=None, root=None):
    """A new sweep directory with its resolved config and space in sweep.toml; returns its path."""
    config, _ = resolve(env_name, flags, config_file)
    path = rundir.new_directory(root or sweeps_dir(), env_name)
    meta = {'_meta': {'env': env_name, 'created': datetime.datetime.now().isoformat(timespec='seconds')}}
    rundir.write_text(os.path.join(path, 'sweep.toml'), configuration.to_toml({**meta, **config}))
    return path


class Sweep:
    """A sweep directory: its config (sweep.toml), space, ledger and method."""

    def __init__(self, path, flags=()):
        toml_path = os.path.join(path, 'sweep.toml')
        if not os.path.exists(toml_path):
            raise SweepError(f'{path} is not a sweep directory (no sweep.toml); sweeps live in {sweeps_dir()}')
        self.path = path
        config = configuration.read(toml_path)
        self.env = config.pop('_meta', {}).get('env')
        bad = [f for f in flags if f.startswith('--') and not f.startswith('--sweep.')]
        if bad:
            raise ConfigError(f'{bad[0]}: a resumed sweep keeps its trials\' config; only --sweep.* settings '
                              '(max-trials, max-hours, parallel, ...) may change')
        self.config = configuration.parse_flags(list(flags), config) if flags else config
        self.settings = self.config['sweep']
        check_settings(self.settings)
        self.space = parse_space(self.config)
        self.ledger = Ledger(os.path.join(path, 'trials.jsonl'))
        self.sign = 1.0 if self.settings['goal'] == 'maximize' else -1.0

    def trial_config(self, values):
        base = {k: v for k, v in self.config.items() if k != 'sweep' and not k.startswith('_')}
        return self.space.apply(base, values)

    def observation(self, start, end):
        x = self.space.point(start['values'])
        if end['status'] != 'ok':
            return Observation(x, failed=True)
        curve = np.array(end['curve'], dtype=float)
        return Observation(x, curve[:, 0], np.maximum(curve[:, 1], EPS), self.sign * curve[:, 2])

    def _done(self, trials):
        return [(k, t['starts'][-1], t['end']) for k, t in trials.items()
                if t['end'] is not None and t['end']['status'] == 'ok']

    def best(self, trials=None):
        """(trial, start, end) of the best finished trial, or None.

        Once trials have been confirmed on more seeds, the best is the confirmed trial with the best mean
        over all its seeds (one with a failed confirmation ranks after every one without); before that, the
        trial with the best score of its one run. The best of many single-seed scores is partly the
        luckiest seed: the mean is what a retrain of the config gives.
        """
        trials = trials_of(self.ledger.read()) if trials is None else trials
        done = self._done(trials)
        confirmed = [item for item in done
                     if any(c['end'] is not None for c in trials[item[0]].get('confirm', {}).values())]
        if confirmed:
            def rank(item):
                scores, failed = seed_scores(trials[item[0]])
                return failed == 0, self.sign * float(np.mean(scores))
            return max(confirmed, key=rank)
        return max(done, key=lambda item: self.sign * item[2]['score']) if done else None

    def to_confirm(self, trials):
        """The trials to rerun on more seeds: the `confirm_top` best by their own score."""
        if not self.settings['confirm_seeds']:
            return []
        done = sorted(self._done(trials), key=lambda item: (-self.sign * item[2]['score'], item[0]))
        return [k for k, _, _ in done[:self.settings['confirm_top']]]

    def confirm_seconds(self, trials, parallel):
        """Wall-clock seconds the confirmation of the current top trials takes, from what each of them took:
        confirm_seeds reruns of each, `parallel` at a time. The time budget keeps this much for them."""
        runs = [trials[k]['end']['seconds'] for k in self.to_confirm(trials)] * self.settings['confirm_seeds']
        return max(max(runs), sum(runs) / parallel) if runs else 0.0

    def confirm_seed(self, start, repeat):
        """The seed of a trial's repeat-th confirmation: its own training seed plus `repeat`."""
        return self.trial_config(start['values'])['train']['seed'] + repeat

    def time_used(self, records):
        """Seconds the driver has run in earlier sessions (from each session's first to last record)."""
        used, session, last = 0.0, None, None
        for record in records:
            if record.get('type') == 'session':
                if session is not None:
                    used += last - session
                session = last = record['time']
            elif session is not None and 'time' in record:
                last = record['time']
        return used + (last - session if session is not None else 0.0)


def _slots(parallel):
    """The cores (and GPU) of each parallel slot: an even share of this process's cores."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else list(range(os.cpu_count()))
    gpus = 0
    if parallel > 1:
        try:
            import torch
            gpus = torch.cuda.device_count()
        except ImportError:
            pass
    slots = []
    for i in range(parallel):
        share = cores[i * len(cores) // parallel:(i + 1) * len(cores) // parallel] or [cores[i % len(cores)]]
        slots.append({'cpus': share if parallel > 1 else None, 'gpu': i % gpus if gpus > 1 else None})
    return slots


def run(path, flags=(), quiet=False, printer=None):
    """Run (or resume) the sweep in `path` until max_trials or max_hours; returns a summary dict.

    Ctrl-C or SIGTERM stops the running trials (no `end` record: they rerun on resume) and raises
    KeyboardInterrupt after printing how to resume.
    """
    sweep = Sweep(path, flags)
    settings, space = sweep.settings, sweep.space
    # One driver per sweep (a second `--resume` would run its trials twice); the kernel drops the lock
    # when the holder dies, so a SIGKILLed sweep resumes.
    lock = rundir.claim(path, 'sweep', SweepError)
    sweep.ledger.repair()
    records = sweep.ledger.read()
    used_before = sweep.time_used(records)
    trials = trials_of(records)
    method = make_method(settings['method'], space, seed=settings['seed'] + len(trials))
    for trial in trials.values():
        if trial['end'] is not None:
            method.observe(sweep.observation(trial['starts'][-1], trial['end']))
    rerun = [k for k, t in trials.items() if t['end'] is None]
    next_trial = max(trials, default=-1) + 1
    session_start = time.time()
    sweep.ledger.append({'type': 'session', 'time': session_start, 'pid': os.getpid()})
    budget = settings['max_hours'] * 3600 or None
    parallel = settings['parallel']
    ray = settings['backend'] == 'ray'
    backend = RayBackend(who='sweep.backend = "ray"', gpus=True) if ray else LocalBackend(threads=parallel)
    slots = _slots(parallel)
    free = list(range(parallel))
    running = {}   # future -> (trial, slot, start record)
    progress = Progress(sweep, trials, quiet, printer)
    previous_handler = None
    if threading.current_thread() is threading.main_thread():
        previous_handler = signal.signal(signal.SIGTERM, _raise_interrupt)

    def remaining():
        return None if budget is None else budget - used_before - (time.time() - session_start)

    confirming = False  # once confirmation has begun in this session, no new ordinary trial starts

    def ordinary_job():
        """The next ordinary trial (a cut-off one to rerun, else a new suggestion), or None."""
        nonlocal next_trial
        if confirming or not (rerun or next_trial < settings['max_trials']):
            return None
        # The budget keeps the time the confirmation of the current top trials takes (confirm_seconds).
        reserve = sweep.confirm_seconds(trials, parallel) if budget is not None else 0.0
        left = remaining()
        if left is not None and left <= reserve:
            return None
        if rerun:
            k = rerun.pop(0)
            values, attempt = trials[k]['starts'][-1]['values'], len(trials[k]['starts']) + 1
            predicted = None
        else:
            k, attempt = next_trial, 1
            next_trial += 1
            if not trials and not running:
                x = space.centre  # the first trial runs the defaults
            else:
                pending = [space.point(start['values']) for _, _, start in running.values()
                           if start['type'] == 'start']
                max_cost = left - reserve if left is not None and settings['cost'] == 'seconds' else None
                x = method.suggest(pending=pending, max_cost=max_cost)
            values = space.values(x)
            predicted = getattr(method, 'last', None) or None
        start = sweep_start_record(sweep, k, attempt, values, predicted)
        trials.setdefault(k, {'starts': [], 'end': None, 'confirm': {}})['starts'].append(start)
        if left is None:
            return start, None, None
        return start, left - reserve, ("the sweep's time budget (sweep.max_hours) less the time kept for "
                                       "confirming the best trials" if reserve else None)

    def confirm_job():
        """The next confirmation run (a top trial on another seed), once every ordinary trial has ended."""
        nonlocal confirming
        if any(start['type'] == 'start' for _, _, start in running.values()):
            return None  # the top trials are known when the running ones end
        busy = {(start['trial'], start['repeat']) for _, _, start in running.values()}
        for k in sweep.to_confirm(trials):
            for repeat in range(1, settings['confirm_seeds'] + 1):
                entry = trials[k]['confirm'].setdefault(repeat, {'starts': [], 'end': None})
                if entry['end'] is not None or (k, repeat) in busy:
                    continue
                confirming = True
                start = confirm_start_record(sweep, trials[k]['starts'][-1], repeat, len(entry['starts']) + 1)
                entry['starts'].append(start)
                return start, remaining(), None
        return None

    try:
        while True:
            while free and (remaining() is None or remaining() > 0):
                job = ordinary_job() or confirm_job()
                if job is None:
                    break
                start, limit, limit_what = job
                slot = free.pop(0)
                sweep.ledger.append(start)
                spec = trial_spec(sweep, start, slots[slot], limit, limit_what)
                if ray:  # Ray places the task and sets CUDA_VISIBLE_DEVICES
                    spec.update(cpus=None, gpu=None)
                running[backend.submit(run_trial, spec)] = (start['trial'], slot, start)
            if not running:
                break
            done, _ = concurrent.futures.wait(list(running), timeout=1.0,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                k, slot, start = running.pop(future)
                free.append(slot)
                try:
                    result = future.result()
                except Exception as e:  # a Ray worker that died, a task that could not start
                    result = {'status': 'failed', 'error': f'{type(e).__name__}: {e}', 'metric': settings['metric'],
                              'curve': [], 'score': None, 'cost': None, 'steps': 0, 'seconds': 0.0}
                if start['type'] == 'confirm_start':
                    # Confirmation runs only rank the top trials: the methods (Protein's GPs) learn from the
                    # ordinary trials alone, so a config rerun on more seeds does not weigh more in them.
                    end = {'type': 'confirm_end', 'trial': k, 'repeat': start['repeat'], 'seed': start['seed'],
                           'attempt': start['attempt'], 'time': time.time(), **result}
                    sweep.ledger.append(end)
                    trials[k]['confirm'][start['repeat']]['end'] = end
                else:
                    end = {'type': 'end', 'trial': k, 'attempt': start['attempt'], 'time': time.time(), **result}
                    sweep.ledger.append(end)
                    trials[k]['end'] = end
                    method.observe(sweep.observation(start, end))
                write_best(sweep, trials)
                progress.finished(k, start, end)
            progress.update(len(running), remaining())
    except KeyboardInterrupt:
        progress.close()
        stop_trials()  # this machine's trial processes (none when they run as Ray tasks)
        backend.cancel(list(running))
        print(f'\nsweep interrupted: {sum(t["end"] is not None for t in trials.values())} trials finished, '
              f'{len(running)} stopped (they rerun on resume). Resume with:\n  puffer sweep --resume {path}',
              file=sys.stderr)
        raise
    finally:
        progress.close()
        backend.close()
        lock.release()
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    best = sweep.best(trials)
    finished = [t for t in trials.values() if t['end'] is not None]
    failed = sum(t['end']['status'] != 'ok' for t in finished)
    return {'path': path, 'env': sweep.env, 'trials': len(finished), 'failed': failed,
            'best': None if best is None else {'trial': best[0], 'score': best[2]['score'],
                                               'values': best[1]['values'], 'seeds': seeds_text(trials[best[0]])},
            'best_toml': os.path.join(path, 'best.toml') if best else None}


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def sweep_start_record(sweep, k, attempt, values, predicted):
    name = f'trial-{k:04d}' if attempt == 1 else f'trial-{k:04d}-{attempt}'
    record = {'type': 'start', 'trial': k, 'attempt': attempt, 'time': time.time(),
              'run_dir': os.path.join('trials', name), 'values': values}
    if predicted:
        record['predicted'] = predicted
    return record


def confirm_start_record(sweep, trial_start, repeat, attempt):
    """A confirmation run: the trial's values on the seed of its repeat-th confirmation, linked by `trial`."""
    k = trial_start['trial']
    name = f'trial-{k:04d}-seed{repeat}' if attempt == 1 else f'trial-{k:04d}-seed{repeat}-{attempt}'
    return {'type': 'confirm_start', 'trial': k, 'repeat': repeat, 'seed': sweep.confirm_seed(trial_start, repeat),
            'attempt': attempt, 'time': time.time(), 'run_dir': os.path.join('trials', name),
            'values': trial_start['values']}


def trial_spec(sweep, start, slot, remaining, remaining_what=None):
    timeout = sweep.settings['trial_timeout'] or None
    limit, what = timeout, f'its time budget of {timeout:g} s (sweep.trial_timeout)' if timeout else None
    if remaining is not None and (limit is None or remaining < limit):
        limit, what = max(remaining, 1.0), remaining_what or 'the sweep\'s time budget (sweep.max_hours)'
    config = sweep.trial_config(start['values'])
    if 'seed' in start:  # a confirmation run
        config['train']['seed'] = start['seed']
    return {'env': sweep.env, 'config': config, 'trial': start['trial'],
            'run_dir': os.path.abspath(os.path.join(sweep.path, start['run_dir'])),
            'metric': sweep.settings['metric'], 'cost': sweep.settings['cost'], 'limit_s': limit,
            'limit_what': what, **slot}


def write_best(sweep, trials):
    """best.toml: every key of the best trial's config that differs from the env's defaults."""
    best = sweep.best(trials)
    if best is None:
        return None
    k, start, end = best
    config = sweep.trial_config(start['values'])
    defaults = configuration.load(sweep.env)
    changed = {}
    for section, values in config.items():
        diff = {key: value for key, value in values.items() if defaults.get(section, {}).get(key) != value}
        if diff:
            changed[section] = diff
    header = (f'# The best of {sum(t["end"] is not None for t in trials.values())} trials of the sweep {sweep.path}\n'
              f'# trial {k}: {end["metric"]} = {end["score"]:.6g} after {end["steps"]:,} steps '
              f'({end["seconds"]:.0f} s)' + (f'; {seeds_text(trials[k])}' if seeds_text(trials[k]) else '') + '\n'
              f'# Train with it: puffer train {sweep.env} --config {os.path.join(sweep.path, "best.toml")}\n\n')
    path = os.path.join(sweep.path, 'best.toml')
    rundir.write_text(path, header + configuration.to_toml(changed))
    return path


class Progress:
    """One rich status line while the sweep runs (trial k/N, best so far, ETA) and a line per trial."""

    def __init__(self, sweep, trials, quiet, printer):
        self.sweep, self.trials, self.quiet = sweep, trials, quiet
        self.printer = printer or print
        self.started = time.time()
        self.done_here = 0
        self.status = None
        if not quiet:
            from rich.console import Console
            console = Console(stderr=True)
            if console.is_terminal:
                self.status = console.status('')
                self.status.start()
        self.update(0, None)

    def finished(self, k, start, end):
        self.done_here += 1
        if self.quiet:
            return
        if end['status'] == 'ok':
            text = f'{end["metric"]} {end["score"]:.4g}  cost {end["cost"]:.4g}'
        else:
            text = f'FAILED {end["error"].splitlines()[0][:120]}'
        if start['type'] == 'confirm_start':
            self.printer(f'trial {k:>3} on seed {start["seed"]}: {text}  ({end["seconds"]:.0f} s; '
                         f'{seeds_text(self.trials[k])})')
            return
        values = ', '.join(f'{name.split(".", 1)[1]}={_short(v)}' for name, v in start['values'].items())
        self.printer(f'trial {k:>3}: {text}  ({end["seconds"]:.0f} s; {values})')

    def update(self, running, remaining):
        if self.status is None:
            return
        settings = self.sweep.settings
        finished = sum(t['end'] is not None for t in self.trials.values())
        best = self.sweep.best(self.trials)
        best_text = f'best {best[2]["score"]:.4g} (trial {best[0]})' if best else 'best -'
        eta = None
        if self.done_here:
            per_trial = (time.time() - self.started) / self.done_here
            eta = per_trial * max(0, settings['max_trials'] - finished)
        if remaining is not None:
            eta = max(0.0, remaining) if eta is None else min(eta, max(0.0, remaining))
        eta_text = str(datetime.timedelta(seconds=int(eta))) if eta is not None else '?'
        self.status.update(f'sweep {self.sweep.env} ({settings["method"]})  trial {finished}/{settings["max_trials"]}'
                           f'  running {running}  {best_text}  ETA {eta_text}')

    def close(self):
        if self.status is not None:
            self.status.stop()
            self.status = None


def _short(value):
    return f'{value:.4g}' if isinstance(value, float) else str(value)


# ---------------------------------------------------------------------------------------------
# 6. The report: a table and PNGs
# ---------------------------------------------------------------------------------------------

def report(path, printer=None):
    """Print the trial table; write pareto.png (score vs cost, Pareto front) and params.png; return their paths."""
    sweep = Sweep(path)
    trials = trials_of(sweep.ledger.read())
    if not trials:
        raise SweepError(f'the sweep {path} has no trials yet; run it with `puffer sweep --resume {path}`')
    from rich.console import Console
    from rich.table import Table
    best = sweep.best(trials)
    table = Table(title=f'sweep {sweep.env} ({sweep.settings["method"]}, goal: {sweep.settings["goal"]})',
                  caption='score: the trial\'s own run; seeds, mean, spread: over its run and its confirmation runs '
                          '(other seeds), spread = max - min; * = best.toml')
    for column in ('trial', 'status', 'score', 'seeds', 'mean', 'spread', 'cost (' + sweep.settings['cost'] + ')',
                   'steps', *sweep.space.names):
        table.add_column(column, justify='right' if column != 'status' else 'left')
    for k, t in trials.items():
        start, end = t['starts'][-1], t['end']
        scores, failed = seed_scores(t)
        confirmed = len(scores) + failed > 1
        seeds = ([f'{len(scores)}' + (f' ({failed} failed)' if failed else ''),
                  f'{np.mean(scores):.4g}' if scores else '', f'{np.ptp(scores):.4g}' if scores else '']
                 if confirmed else ['1', '', ''])
        if end is None:
            row = [str(k), 'unfinished', '', '', '', '', '', '']
        elif end['status'] == 'ok':
            row = [str(k) + (' *' if best and best[0] == k else ''), 'ok', f'{end["score"]:.4g}', *seeds,
                   f'{end["cost"]:.4g}', f'{end["steps"]:,}']
        else:
            row = [str(k), 'failed: ' + end['error'].splitlines()[0][:60], '', '', '', '', '', f'{end["steps"]:,}']
        table.add_row(*row, *[_short(start['values'][name]) for name in sweep.space.names])
    console = Console()
    if not console.is_terminal:  # a file or a pipe: wide enough for every column, not rich's 80
        console = Console(width=max(120, 16 * (8 + len(sweep.space))))
    if printer is None:
        console.print(table)
    else:
        with console.capture() as capture:
            console.print(table)
        printer(capture.get())
    return plot_sweep(sweep, trials)


def plot_sweep(sweep, trials):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    ok = [(k, t['starts'][-1], t['end']) for k, t in trials.items() if t['end'] and t['end']['status'] == 'ok']
    if not ok:
        raise SweepError(f'the sweep {sweep.path} has no successful trial to plot yet')
    label = ok[0][2]['metric']
    points = np.array([p for _, _, end in ok for p in end['curve']])
    finals = np.array([[end['cost'], end['score']] for _, _, end in ok])
    front = pareto_front(sweep.sign * points[:, 2], points[:, 1])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(points[:, 1], points[:, 2], s=8, color='0.75', label='curve points')
    ax.scatter(finals[:, 0], finals[:, 1], s=24, c=[k for k, _, _ in ok], cmap='viridis', label='trials (by number)')
    ax.step(points[front, 1], points[front, 2], where='post', color='tab:red', label='Pareto front')
    ax.set_xscale('log')
    ax.set_xlabel(f'cost ({sweep.settings["cost"]})')
    ax.set_ylabel(label)
    ax.set_title(f'{sweep.env}: score against cost')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    pareto_png = os.path.join(sweep.path, 'pareto.png')
    fig.savefig(pareto_png, dpi=110)
    plt.close(fig)

    n = len(sweep.space)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, param in zip(axes.flat, sweep.space.params):
        ax.scatter([start['values'][param.name] for _, start, _ in ok], finals[:, 1], s=16,
                   c=[k for k, _, _ in ok], cmap='viridis')
        if param.distribution in ('log', 'pow2'):
            ax.set_xscale('log')
        elif param.distribution == 'logit':
            ax.set_xscale('logit')
        ax.set_xlabel(param.name)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis('off')
    fig.tight_layout()
    params_png = os.path.join(sweep.path, 'params.png')
    fig.savefig(params_png, dpi=110)
    plt.close(fig)
    return [pareto_png, params_png]


if __name__ == '__main__':  # a trial subprocess: python -m pufferlib.sweep RUN_DIR
    sys.exit(_trial_main(sys.argv[1]))
