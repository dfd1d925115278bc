"""The methods: one interface (`observe` a finished trial, `suggest` the next point, both in the
normalised space of pufferlib.sweep.space): `protein`, `random`, `pareto_genetic`, and `optuna` (TPE,
an optional extra).

Protein fits two Gaussian processes (scikit-learn) over the hyperparameters: one for the score, one for
the log cost. Every trial's learning curve is downsampled to about 10 points and each point is data for
both, so one run teaches the GPs what its config reaches at several costs. Candidates are sampled around
the score-vs-cost Pareto front and rated `GP_score(x) * (1 - |1.25 U - GP_cost(x)|)` with U ~ Uniform(0, 1).
"""
from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from pufferlib.config import ConfigError
from pufferlib.sweep.space import Space

ALPHA = 1.25         # the cost target alpha * U reaches 25% past the costliest trial seen
EPS = 1e-9


class Observation:
    """A finished trial as the methods see it: its point and its downsampled curve.

    `scores` are oriented so that higher is better (negated for goal = minimize); `costs` are seconds
    or steps; `steps` are the agent steps of each curve point. A failed trial has empty arrays.
    """

    def __init__(self, x: ArrayLike, steps: ArrayLike = (), costs: ArrayLike = (), scores: ArrayLike = (),
                 failed: bool = False):
        self.x = np.asarray(x, dtype=float)
        self.steps = np.asarray(steps, dtype=float)
        self.costs = np.asarray(costs, dtype=float)
        self.scores = np.asarray(scores, dtype=float)
        self.failed = failed or len(self.scores) == 0


class Method(Protocol):
    """What the driver asks of a method; `pending` are the points of trials still running."""

    def observe(self, obs: Observation) -> None: ...

    def suggest(self, pending: Sequence[np.ndarray] = (), max_cost: float | None = None) -> np.ndarray: ...


def pareto_front(scores: ArrayLike, costs: ArrayLike) -> np.ndarray:
    """Indices of the points no other point beats on both score (higher) and cost (lower), by cost."""
    scores = np.asarray(scores)
    order = np.lexsort((-scores, np.asarray(costs)))
    front, best = [], -np.inf
    for i in order:
        if scores[i] > best:
            front.append(i)
            best = scores[i]
    return np.array(front, dtype=int)


def _truncated_normal(rng: np.random.Generator, centres: np.ndarray, scale: float) -> np.ndarray:
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

    def __init__(self, space: Space, seed: int = 0, scale: float = 0.5):
        self.space, self.scale = space, scale
        self.rng = np.random.default_rng(seed)

    def observe(self, obs: Observation) -> None:
        pass

    def suggest(self, pending: Sequence[np.ndarray] = (), max_cost: float | None = None) -> np.ndarray:
        return _truncated_normal(self.rng, self.space.centre[None], self.scale)[0]


def _curve_points(space: Space, obs: Observation) -> np.ndarray:
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


def _full_run(space: Space, x: np.ndarray) -> np.ndarray:
    return x if space.budget_index is not None else np.append(x, 1.0)


class ParetoGenetic:
    """Mutations of a random point of the score-vs-cost Pareto front (curve points included); no GPs."""

    def __init__(self, space: Space, seed: int = 0, scale: float = 0.25):
        self.space, self.scale = space, scale
        self.rng = np.random.default_rng(seed)
        self.points: list[np.ndarray] = []
        self.scores: list[float] = []
        self.costs: list[float] = []

    def observe(self, obs: Observation) -> None:
        if obs.failed:
            return
        self.points.extend(_curve_points(self.space, obs)[:, :len(self.space)])
        self.scores.extend(obs.scores)
        self.costs.extend(obs.costs)

    def suggest(self, pending: Sequence[np.ndarray] = (), max_cost: float | None = None) -> np.ndarray:
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

    def __init__(self, space: Space, seed: int = 0, scale: float = 0.25, candidates: int = 512,
                 max_points: int = 150, thompson: bool = True):
        self.space, self.scale, self.candidates, self.max_points = space, scale, candidates, max_points
        self.thompson = thompson
        self.rng = np.random.default_rng(seed)
        self.X: list[np.ndarray] = []
        self.scores: list[float] = []
        self.costs: list[float] = []
        self.failed: list[np.ndarray] = []
        self.rates: list[float] = []          # log(cost / steps) at the end of each finished trial
        self.kernels: dict[str, Any] = {}     # last fitted kernel of each GP: warm start for the next fit
        self.last: dict[str, float] = {}      # what the latest suggestion predicted (for the ledger)

    def observe(self, obs: Observation) -> None:
        if obs.failed:
            self.failed.append(_full_run(self.space, obs.x))
            return
        self.X.extend(_curve_points(self.space, obs))
        self.scores.extend(obs.scores)
        self.costs.extend(obs.costs)
        self.rates.append(math.log(max(obs.costs[-1], EPS)) - math.log(max(obs.steps[-1], 1)))

    def _subset(self, n: int) -> np.ndarray:
        """Indices of at most max_points points: the Pareto front, the newest, a random sample of the rest."""
        if n <= self.max_points:
            return np.arange(n)
        keep = set(pareto_front(np.array(self.scores), np.array(self.costs)).tolist())
        keep.update(range(n - self.max_points // 2, n))
        rest = np.setdiff1d(np.arange(n), list(keep))
        room = max(0, self.max_points - len(keep))
        keep.update(self.rng.choice(rest, size=min(room, len(rest)), replace=False).tolist())
        return np.array(sorted(keep))

    def _fit(self, name: str, X: np.ndarray, y: np.ndarray) -> Any:
        """A GP on (X, y). Its kernel's hyperparameters are re-optimised (warm-started) when the data has
        grown by a fifth since they last were; in between only the posterior is recomputed (one Cholesky)."""
        # scikit-learn is the sweep extra: imported here so that the package (the trial subprocess, the
        # other methods, the report) loads without it
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
        with warnings.catch_warnings():  # hyperparameters at their bounds are expected with few points
            warnings.simplefilter('ignore')
            gp.fit(X, y)
        if optimise:
            self.kernels[name] = (gp.kernel_, len(self.scores) + len(self.failed))
        return gp

    def suggest(self, pending: Sequence[np.ndarray] = (), max_cost: float | None = None) -> np.ndarray:
        if not self.scores:
            return _truncated_normal(self.rng, self.space.centre[None], self.scale)[0]
        # These matrices are small (hundreds of rows): one BLAS thread is fastest, and threads that
        # spin-wait for a busy core made each Cholesky 200x slower on a loaded 2-core machine.
        from threadpoolctl import threadpool_limits  # installed with scikit-learn (see _fit)
        with threadpool_limits(limits=1):
            return self._suggest(pending, max_cost)

    def _suggest(self, pending: Sequence[np.ndarray], max_cost: float | None) -> np.ndarray:
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


def _latent(gp: Any) -> Any:
    """The fitted GP predicting the latent function, not a new noisy observation of it.

    scikit-learn's predict(return_cov=True) evaluates the whole kernel at the new points, so the
    WhiteKernel's noise lands on the diagonal: a draw from it adds independent noise to every candidate,
    and the argmax of 512 candidates then picks the luckiest noise, not the best point. The fit (its
    Cholesky factor and weights) keeps the noise; only the covariance of the new points drops it.
    """
    latent = copy.copy(gp)
    latent.kernel_ = gp.kernel_.k1  # (constant * Matern) + white -> constant * Matern
    return latent


def _lbfgs(objective: Callable[..., tuple[float, np.ndarray]], theta: np.ndarray,
           bounds: np.ndarray) -> tuple[np.ndarray, float]:
    """scikit-learn's own optimiser (L-BFGS-B), capped at 30 iterations: warm-started fits need few."""
    from scipy.optimize import minimize  # a dependency of scikit-learn, the sweep extra (see Protein._fit)
    result = minimize(objective, theta, bounds=bounds, jac=True, method='L-BFGS-B', options={'maxiter': 30})
    return result.x, result.fun


class Optuna:
    """Optuna's TPE sampler (the outside peer) on the same normalised space; needs pufferlib[optuna]."""

    def __init__(self, space: Space, seed: int = 0):
        try:
            import optuna  # an optional extra: only this method needs it
        except ImportError:
            raise ConfigError('sweep.method = "optuna" needs optuna: pip install "pufferlib[optuna]"') from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna, self.space = optuna, space
        self.study = optuna.create_study(direction='maximize', sampler=optuna.samplers.TPESampler(seed=seed))
        self.distributions: dict[str, Any] = {name: optuna.distributions.FloatDistribution(-1.0, 1.0)
                                              for name in space.names}
        self.asked: dict[tuple[str, ...], Any] = {}

    def _key(self, x: Iterable[float]) -> tuple[str, ...]:
        # the values a point runs with: a told point comes back rounded (ints, pow2)
        return tuple(f'{v:.10g}' for v in self.space.values(x).values())

    def observe(self, obs: Observation) -> None:
        trial = self.asked.pop(self._key(obs.x), None)
        state = self.optuna.trial.TrialState.FAIL if obs.failed else self.optuna.trial.TrialState.COMPLETE
        value = None if obs.failed else float(obs.scores[-1])
        if trial is not None:
            self.study.tell(trial, value, state=state)
        else:  # a trial it did not ask for: the defaults, or one from the ledger of a resumed sweep
            params = {name: float(z) for name, z in zip(self.space.names, obs.x)}
            self.study.add_trial(self.optuna.trial.create_trial(params=params, distributions=self.distributions,
                                                                value=value, state=state))

    def suggest(self, pending: Sequence[np.ndarray] = (), max_cost: float | None = None) -> np.ndarray:
        trial = self.study.ask(self.distributions)
        x = np.array([trial.params[name] for name in self.space.names])
        self.asked[self._key(x)] = trial
        return x


# `sweep.method` -> its class; the order is the one messages list them in
METHOD_CLASSES: dict[str, Callable[..., Method]] = {
    'protein': Protein, 'random': Random, 'pareto_genetic': ParetoGenetic, 'optuna': Optuna}
METHODS = tuple(METHOD_CLASSES)


def make_method(name: str, space: Space, seed: int = 0) -> Method:
    if name not in METHOD_CLASSES:
        raise ConfigError(f'sweep.method must be one of {", ".join(METHODS)}, got {name!r}')
    return METHOD_CLASSES[name](space, seed=seed)
