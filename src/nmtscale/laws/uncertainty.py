"""Uncertainty of a `nmtscale.laws.fitting.Fit` by refitting on perturbed or resampled data.

- `perturbation`: Fernandes et al. 2023 footnote 5, refit with y + N(0, (0.01 y)^2) noise on every point.
- `bootstrap`: nonparametric, refit on points drawn with replacement (Besiroglu et al. 2024 for Chinchilla).

Each refit repeats the fit's own procedure, by default started from the original estimate (a warm start).
For a multi-start fit, `starts` restarts every refit from those starts plus the estimate instead, as
Besiroglu et al. did: slower, and safer where the objective has kinks or flat valleys a warm start may stop
at. Prefer it whenever the fit is not sharply determined: on Chinchilla warm-started bootstrap errors are
orders of magnitude too small (Appendix A), and on a 9-point bivariate fit about tenfold too small.
Results are tidy DataFrames for Altair: coefficients with standard errors and intervals, and prediction bands.

A refit whose data do not determine the law (a resample that drew too few distinct points, or one whose
parameters trade off exactly) has no meaningful estimate: it is left out of the samples and counted in
`Uncertainty.left_out`, which the method text and every coefficient row report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from nmtscale import pool
from nmtscale.laws import Law
from nmtscale.laws.fitting import BESIROGLU_HUBER_DELTA, Fit, fit_multistart


@dataclass
class Uncertainty:
    """Refitted parameter samples around a fit."""

    fit: Fit
    method: str
    samples: pd.DataFrame  # one row per determined refit, one column per parameter
    left_out: int = 0  # refits the perturbed or resampled data did not determine

    def coefficients(self, level: float = 0.95) -> pd.DataFrame:
        """One row per parameter: estimate (the original fit), std_error, a percentile interval, and how many
        refits they rest on (`refits`) and left out as undetermined (`left_out`). With fewer than 2
        determined refits the spread is NaN: the data give no interval."""
        tail = (1 - level) / 2
        return pd.DataFrame(
            {
                "parameter": list(self.fit.law.names),
                "estimate": [self.fit.params[n] for n in self.fit.law.names],
                "std_error": self.samples.std(ddof=1).to_numpy(),
                "lower": self.samples.quantile(tail).to_numpy(),
                "upper": self.samples.quantile(1 - tail).to_numpy(),
                "refits": len(self.samples),
                "left_out": self.left_out,
                "method": self.method,
            }
        )

    def band(self, x, level: float = 0.95) -> pd.DataFrame:
        """Prediction band at inputs x: input columns, prediction (original fit), std_error, lower, upper
        (NaN with fewer than 2 determined refits: the data give no band)."""
        law = self.fit.law
        matrix = law.inputs_matrix(x)
        tail = (1 - level) / 2
        frame = pd.DataFrame(matrix, columns=list(law.inputs))
        frame["prediction"] = self.fit.predict(matrix)
        if len(self.samples) < 2:
            return frame.assign(std_error=np.nan, lower=np.nan, upper=np.nan)
        draws = np.array([law.predict(matrix, theta) for theta in self.samples.to_numpy()])
        frame["std_error"] = draws.std(axis=0, ddof=1)
        frame["lower"] = np.quantile(draws, tail, axis=0)
        frame["upper"] = np.quantile(draws, 1 - tail, axis=0)
        return frame


# Fernandes et al. footnote 5: the losses perturbed by 1%.
PERTURBATION_SIGMA = 0.01


def perturbation(
    fit: Fit,
    n_samples: int = 100,
    relative_sigma: float = PERTURBATION_SIGMA,
    seed: int = 0,
    starts: np.ndarray | None = None,
) -> Uncertainty:
    """Refit on y_i + eps_i, eps_i ~ N(0, (relative_sigma y_i)^2) (Fernandes et al. footnote 5: 1% of y)."""
    _check_samples(n_samples)
    rng = np.random.default_rng(seed)
    refit_starts = _refit_starts(fit, starts)
    refits = [
        _refit(fit, fit.x, fit.y + rng.normal(0.0, relative_sigma * np.abs(fit.y)), refit_starts)
        for _ in range(n_samples)
    ]
    return _uncertainty(fit, "perturbation", refits, f"sigma={relative_sigma:g} y, ")


def bootstrap(fit: Fit, n_samples: int = 200, seed: int = 0, starts: np.ndarray | None = None) -> Uncertainty:
    """Nonparametric bootstrap: refit on n points drawn with replacement from the fit's n points."""
    _check_samples(n_samples)
    rng = np.random.default_rng(seed)
    refit_starts = _refit_starts(fit, starts)
    n = len(fit.y)
    refits = []
    for _ in range(n_samples):
        rows = rng.integers(0, n, size=n)
        refits.append(_refit(fit, fit.x[rows], fit.y[rows], refit_starts))
    return _uncertainty(fit, "bootstrap", refits)


# Relative changes of every y about the size of the rounding by which two CPUs' executions of the same code
# differ (a few units in the 13th digit of a loss).
ROUNDING_CHANGES = (-1e-13, 1e-13, 3e-13)


def rounding_moves(fit: Fit, relative_changes: Sequence[float] = ROUNDING_CHANGES) -> dict[str, float]:
    """The largest |change| of each coefficient of `fit` over its refits on y (1 + c) for c in
    `relative_changes`, each from the fit's own starts (its `table`): how much of the fit a CPU's rounding
    decides. At a well-defined optimum a coefficient moves by about c of itself; where the objective is flat
    along some direction (a Huber loss whose residuals all lie in its linear zone, an exponent traded against
    an asymptote) it moves far more."""
    if fit.table is None:
        raise ValueError(f"{fit.method}: rounding_moves needs a multi-start fit (its table holds the starts)")
    starts = fit.table[[f"start_{name}" for name in fit.law.names]].to_numpy()
    refits = [fit.refit(fit.x, fit.y * (1 + change), starts) for change in relative_changes]
    return {
        name: max(abs(refit.params[name] - value) for refit in refits) for name, value in fit.params.items()
    }


def rounding_summary(fit: Fit, spread: Uncertainty | None) -> dict[str, float]:
    """`rounding_moves` of every coefficient of `fit`, and under "largest_in_std" the largest of them in
    standard deviations of its coefficient over `spread`'s refits (a bootstrap or perturbation of the same
    fit; nan without two refits): far below 1, rounding decides only what the data leave open anyway."""
    moves = rounding_moves(fit)
    samples = spread.samples if spread is not None else pd.DataFrame()
    std = samples.std(ddof=1) if len(samples) > 1 else pd.Series(dtype=float)
    in_std = [move / std[name] for name, move in moves.items() if std.get(name, 0) > 0]
    return {**moves, "largest_in_std": max(in_std) if in_std else np.nan}


def restarted_in_workers(
    fits: Sequence[Fit],
    law_factories: Sequence[tuple[Callable[..., Law], tuple[Any, ...]]],
    kind: str,
    n_samples: int,
    seed: int = 0,
    relative_sigma: float | Sequence[float] = PERTURBATION_SIGMA,
    workers: int = 1,
    start_stride: int = 1,
    batched_refits: bool | None = None,
    delta: float = BESIROGLU_HUBER_DELTA,
) -> list[Uncertainty]:
    """`bootstrap` or `perturbation` (`kind`) of every fit, each refit restarted from its law's start grid
    (every `start_stride`-th start), the fits shared out over `workers` processes: the same samples as
    `workers=1` gives.

    A fit holds its law's functions, which do not pickle, so each law travels as a module-level factory and
    its arguments, e.g. ``(laws.bivariate_law, (ne_bar, nd_bar))``; the fits must come from
    `fitting.fit_multistart` with its defaults but `delta` (where its Huber loss bends), which each worker
    repeats before refitting. `batched_refits` overrides the refits' `batched` choice (None: the law's
    default). `relative_sigma` (perturbation): one for every fit, or one per fit (fits whose data are noisier
    than others')."""
    if kind not in ("bootstrap", "perturbation"):
        raise ValueError(f"kind must be 'bootstrap' or 'perturbation', not {kind!r}")
    if len(fits) != len(law_factories):
        raise ValueError(f"{len(fits)} fits but {len(law_factories)} law factories")
    _check_samples(n_samples)
    if start_stride < 1:
        raise ValueError(f"start_stride must be at least 1, got {start_stride}")
    sigmas = list(relative_sigma) if isinstance(relative_sigma, Sequence) else [relative_sigma] * len(fits)
    if len(sigmas) != len(fits):
        raise ValueError(f"{len(fits)} fits but {len(sigmas)} relative sigmas")
    jobs = [
        (factory, args, fit.x, fit.y, kind, n_samples, seed, sigma, start_stride, batched_refits, delta)
        for fit, (factory, args), sigma in zip(fits, law_factories, sigmas, strict=True)
    ]
    refits = pool.parallel_map(_restarted_refits, jobs, workers)
    return [Uncertainty(fit, *refit) for fit, refit in zip(fits, refits, strict=True)]


def _restarted_refits(
    factory: Callable[..., Law],
    args: tuple[Any, ...],
    x: np.ndarray,
    y: np.ndarray,
    kind: str,
    n_samples: int,
    seed: int,
    relative_sigma: float,
    start_stride: int,
    batched_refits: bool | None,
    delta: float,
) -> tuple[str, pd.DataFrame, int]:
    law = factory(*args)
    fit = fit_multistart(law, x, y, delta)
    if batched_refits is not None:
        fit = replace(
            fit,
            refit=lambda new_x, new_y, starts: fit_multistart(
                law, new_x, new_y, delta, starts=starts, batched=batched_refits
            ),
        )
    starts = law.start_grid()[::start_stride]
    if kind == "bootstrap":
        spread = bootstrap(fit, n_samples, seed, starts=starts)
    else:
        spread = perturbation(fit, n_samples, relative_sigma, seed, starts=starts)
    return spread.method, spread.samples, spread.left_out


def _refit_starts(fit: Fit, starts: np.ndarray | None) -> np.ndarray:
    """The estimate alone (warm start), or the given starts [S, P] with the estimate added."""
    if starts is None:
        return fit.theta
    return np.vstack([np.atleast_2d(np.asarray(starts, dtype=float)), fit.theta])


def _refit(fit: Fit, x: np.ndarray, y: np.ndarray, starts: np.ndarray) -> Fit | None:
    """The refit on (x, y), or None where those data cannot determine the law: fewer distinct points than
    parameters (a resample may draw one run n times), or an estimate that leaves parameters free."""
    if len(np.unique(x, axis=0)) < len(fit.law.names) or np.ptp(y) == 0:
        return None
    refit = fit.refit(x, y, starts)
    return refit if refit.determined else None


def _uncertainty(fit: Fit, kind: str, refits: list[Fit | None], settings: str = "") -> Uncertainty:
    """The determined refits' parameters; `method` names `kind`, its `settings` and the refits left out."""
    kept = [r.params for r in refits if r is not None]
    left_out = len(refits) - len(kept)
    dropped = f", {left_out} undetermined refits left out" if left_out else ""
    method = f"{kind}({settings}n={len(refits)}{dropped})"
    samples = pd.DataFrame(kept, columns=list(fit.law.names))
    return Uncertainty(fit=fit, method=method, samples=samples, left_out=left_out)


def _check_samples(n_samples: int) -> None:
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 to estimate a spread, got {n_samples}")
