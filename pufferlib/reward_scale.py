"""Reward scaling for the trainer (`train.normalize_rewards`) and for an env that scales its own
(environments/mujoco.py, one row): every reward divided by the running standard
deviation of the discounted return, then clipped, as PPO's MuJoCo recipe scales them (Engstrom et al. 2020
list it among the code-level details PPO's results depend on).

One set of statistics serves every row of the rollout, whichever process or env the row lives in: a value
target then means the same on every row. Statistics kept per env (as a wrapper inside each env keeps them)
differ from env to env while they are young, and the critic, which cannot tell the envs apart, fits their
average. The trainer sees every row's rewards as they arrive, so this needs no merging across workers.

The statistics travel in the trainer's checkpoint; the discounted returns in flight do not (a resumed run's
envs start new episodes).

Hand-written rather than a library's (gymnasium.wrappers.NormalizeReward, SB3's VecNormalize): those wrap
an env or a vector env, while this runs on the trainer's rows, after the emulation has summed the raw rewards
into the episode returns the logs report.
"""
import math

import numpy as np
import numpy.typing as npt


class RewardScaler:
    """Running moments of the rows' discounted returns (Chan et al.'s parallel update, one batch of rows at a
    time), and the rewards divided by their standard deviation."""

    def __init__(self, rows: int, gamma: float, clip: float) -> None:
        self.gamma, self.clip = float(gamma), float(clip)
        self.returns = np.zeros(rows, dtype=np.float64)
        # The tiny prior count is the usual running-moments start: the first batch all but replaces it.
        self.count, self.mean, self.var = 1e-4, 0.0, 1.0

    def __call__(self, rows: slice, rewards: npt.NDArray[np.floating], dones: npt.NDArray[np.bool_],
                 live: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.float32]:
        """The rows' rewards scaled (a new array); `dones` ends their discounted returns after this step, and
        rows not `live` (dead agents' padding) leave the statistics alone."""
        returns = self.returns[rows] * self.gamma + rewards
        seen = returns if live is None else returns[live]
        if len(seen):
            n, batch_mean, batch_var = len(seen), float(seen.mean()), float(seen.var())
            total = self.count + n
            delta = batch_mean - self.mean
            self.mean += delta * n / total
            self.var = (self.var * self.count + batch_var * n + delta * delta * self.count * n / total) / total
            self.count = total
        self.returns[rows] = np.where(dones, 0.0, returns)
        scaled = np.asarray(rewards, dtype=np.float64) / self.std
        if self.clip > 0:
            scaled = np.clip(scaled, -self.clip, self.clip)
        return scaled.astype(np.float32)

    def restart(self, rows: slice | np.ndarray = slice(None)) -> None:
        """The rows' envs were reset outside a step: their discounted returns start again from 0, while the
        statistics, which describe the task rather than an episode, are kept."""
        self.returns[rows] = 0.0

    @property
    def std(self) -> float:
        return math.sqrt(self.var + 1e-8)

    def state_dict(self) -> dict[str, float]:
        return {'count': self.count, 'mean': self.mean, 'var': self.var}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.count, self.mean, self.var = float(state['count']), float(state['mean']), float(state['var'])
