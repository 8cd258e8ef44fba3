"""Uncertainty of a `nmtscale.laws.fitting.Fit` by refitting on perturbed or resampled data.

- `perturbation`: Fernandes et al. 2023 footnote 5, refit with y + N(0, (0.01 y)^2) noise on every point.
- `bootstrap`: nonparametric, refit on points drawn with replacement (Besiroglu et al. 2024 for Chinchilla).

Each refit repeats the fit's own procedure, by default started from the original estimate (a warm start).
For a multi-start fit, `starts` restarts every refit from those starts plus the estimate instead, as
Besiroglu et al. did: slower, and safer where the objective has kinks or flat valleys a warm start may stop
at. Prefer it whenever the fit is not sharply determined: on Chinchilla warm-started bootstrap errors are
orders of magnitude too small (Appendix A), and on a 9-point bivariate fit about tenfold too small.
Results are tidy DataFrames for Altair: coefficients with standard errors and intervals, and prediction bands.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nmtscale.laws.fitting import Fit


@dataclass
class Uncertainty:
    """Refitted parameter samples around a fit."""

    fit: Fit
    method: str
    samples: pd.DataFrame  # one row per refit, one column per parameter

    def coefficients(self, level: float = 0.95) -> pd.DataFrame:
        """One row per parameter: estimate (the original fit), std_error, and a percentile interval."""
        tail = (1 - level) / 2
        return pd.DataFrame(
            {
                "parameter": list(self.fit.law.names),
                "estimate": [self.fit.params[n] for n in self.fit.law.names],
                "std_error": self.samples.std(ddof=1).to_numpy(),
                "lower": self.samples.quantile(tail).to_numpy(),
                "upper": self.samples.quantile(1 - tail).to_numpy(),
                "method": self.method,
            }
        )

    def band(self, x, level: float = 0.95) -> pd.DataFrame:
        """Prediction band at inputs x: input columns, prediction (original fit), std_error, lower, upper."""
        law = self.fit.law
        matrix = law.inputs_matrix(x)
        draws = np.array([law.predict(matrix, theta) for theta in self.samples.to_numpy()])
        tail = (1 - level) / 2
        frame = pd.DataFrame(matrix, columns=list(law.inputs))
        frame["prediction"] = self.fit.predict(matrix)
        frame["std_error"] = draws.std(axis=0, ddof=1)
        frame["lower"] = np.quantile(draws, tail, axis=0)
        frame["upper"] = np.quantile(draws, 1 - tail, axis=0)
        return frame


def perturbation(
    fit: Fit,
    n_samples: int = 100,
    relative_sigma: float = 0.01,
    seed: int = 0,
    starts: np.ndarray | None = None,
) -> Uncertainty:
    """Refit on y_i + eps_i, eps_i ~ N(0, (relative_sigma y_i)^2) (Fernandes et al. footnote 5: 1% of y)."""
    _check_samples(n_samples)
    rng = np.random.default_rng(seed)
    refit_starts = _refit_starts(fit, starts)
    refits = [
        fit.refit(fit.x, fit.y + rng.normal(0.0, relative_sigma * np.abs(fit.y)), refit_starts)
        for _ in range(n_samples)
    ]
    return _uncertainty(fit, f"perturbation(sigma={relative_sigma:g} y, n={n_samples})", refits)


def bootstrap(fit: Fit, n_samples: int = 200, seed: int = 0, starts: np.ndarray | None = None) -> Uncertainty:
    """Nonparametric bootstrap: refit on n points drawn with replacement from the fit's n points."""
    _check_samples(n_samples)
    rng = np.random.default_rng(seed)
    refit_starts = _refit_starts(fit, starts)
    n = len(fit.y)
    refits = []
    for _ in range(n_samples):
        rows = rng.integers(0, n, size=n)
        refits.append(fit.refit(fit.x[rows], fit.y[rows], refit_starts))
    return _uncertainty(fit, f"bootstrap(n={n_samples})", refits)


def _refit_starts(fit: Fit, starts: np.ndarray | None) -> np.ndarray:
    """The estimate alone (warm start), or the given starts [S, P] with the estimate added."""
    if starts is None:
        return fit.theta
    return np.vstack([np.atleast_2d(np.asarray(starts, dtype=float)), fit.theta])


def _uncertainty(fit: Fit, method: str, refits: list[Fit]) -> Uncertainty:
    samples = pd.DataFrame([r.params for r in refits], columns=list(fit.law.names))
    return Uncertainty(fit=fit, method=method, samples=samples)


def _check_samples(n_samples: int) -> None:
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 to estimate a spread, got {n_samples}")
