"""Fitting `nmtscale.laws.Law`s to measurements: the papers' recipe, a robust multi-start fit, diagnostics.

Two fitters with one result type, `Fit`, and helpers built on them:

- `fit_least_squares`: ordinary least squares on the loss (scipy `curve_fit`), as most NMT scaling papers
  fit, or a robust loss; `fit_soft_l1` / `fit_soft_l1_recipe`: Ghorbani et al. App. E,
  `least_squares(loss="soft_l1", f_scale=...)` on the loss itself, over their f_scale grid
  `geomspace(0.001, 0.025, 25)`.
- `fit_multistart`: Besiroglu et al.'s refit of Chinchilla, Huber(delta) on log residuals, L-BFGS-B with the
  law's analytic gradient from every point of a start grid (all starts at once by `nmtscale.laws.lbfgs` where
  the law allows). The objective is SUMMED over points: with the mean, gradients are n times smaller and
  L-BFGS-B's gradient tolerance stops it early (their explanation of Hoffmann et al.'s different fit), which
  `reduction="mean"` reproduces. `loss="linear"` makes it a multi-start ordinary least-squares fit and
  `loss="soft_l1"` a multi-start Ghorbani fit, with the same starts, optimiser and `Fit.table`.
- `fit_each`: one fit per group of rows (Fernandes Eq. 6, a law per sampling weight); `fit_bleu_vs_loss`
  (Ghorbani Eq. 5, statsmodels OLS in log-log space); `extrapolate_learning_curve` (Fernandes App. G).

`nmtscale.laws.uncertainty` refits a `Fit` on perturbed or resampled data for standard errors and bands.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.optimize import curve_fit, least_squares, minimize
from threadpoolctl import ThreadpoolController

from nmtscale.laws import Law, power_law
from nmtscale.laws.lbfgs import minimize_batched

GHORBANI_F_SCALES = np.geomspace(0.001, 0.025, 25)
BESIROGLU_HUBER_DELTA = 1e-3


@functools.cache
def _blas_threads() -> ThreadpoolController:
    return ThreadpoolController()


def single_threaded_blas():
    """Context with one BLAS thread: L-BFGS-B and least_squares make many tiny LAPACK calls, and a threaded
    OpenBLAS spends longer waking its threads than computing (25x slower on a busy 2-core machine)."""
    return _blas_threads().limit(limits=1, user_api="blas")


# refit(x, y, starts) -> Fit: the same procedure again on new data, from one start [P] or, for a multi-start
# fit, from several [S, P].
Refit = Callable[[np.ndarray, np.ndarray, np.ndarray], "Fit"]


@dataclass(frozen=True)
class Diagnostics:
    """How well predictions match observations, in Ghorbani's terms (Fig. 1: R^2, max absolute deviation)."""

    r2: float  # 100 x explained variance / total variance, i.e. 100 (1 - SS_res / SS_tot)
    max_abs_deviation: float
    rmse: float
    residuals: np.ndarray = field(repr=False)  # observed - predicted

    def as_dict(self) -> dict[str, float]:
        return {"r2": self.r2, "max_abs_deviation": self.max_abs_deviation, "rmse": self.rmse}


def diagnose(observed, predicted) -> Diagnostics:
    """R^2 (percent), max absolute deviation, RMSE and residuals of predictions against observations."""
    observed, predicted = np.asarray(observed, dtype=float), np.asarray(predicted, dtype=float)
    residuals = observed - predicted
    total = np.sum((observed - observed.mean()) ** 2)
    r2 = 100 * (1 - np.sum(residuals**2) / total) if total > 0 else float("nan")
    return Diagnostics(
        r2=float(r2),
        max_abs_deviation=float(np.max(np.abs(residuals))),
        rmse=float(np.sqrt(np.mean(residuals**2))),
        residuals=residuals,
    )


@dataclass
class Fit:
    """A fitted law: parameters, the optimiser's verdict, in-sample diagnostics, and how to redo the fit."""

    law: Law
    params: dict[str, float]
    objective: float
    converged: bool
    message: str
    method: str
    diagnostics: Diagnostics
    x: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    refit: Refit = field(repr=False)
    # Multi-start: one row per start (start values, objective, converged, final parameters); soft_l1 recipe:
    # one row per f_scale with its cross-validation error. None for a single fit.
    table: pd.DataFrame | None = field(default=None, repr=False)
    # False when the data leave a combination of parameters free at the estimate (see `determined`).
    determined: bool = True
    # Multi-start fits: holding(values, starts=None) is the same fit with some parameters held at given values
    # (`fit_multistart`'s `fixed`), from the fit's own starts unless given others; `profile` uses it. None for
    # the other fitters.
    holding: Callable[..., Fit] | None = field(default=None, repr=False)

    @property
    def theta(self) -> np.ndarray:
        return self.law.vector(self.params)

    def predict(self, x) -> np.ndarray:
        return self.law(x, self.params)

    def evaluate(self, x, y) -> Diagnostics:
        """Out-of-sample diagnostics on other runs (Ghorbani Fig. 3: enc/dec fit, symmetric test)."""
        matrix, observed = check_data(self.law, x, y, min_points=1)
        return diagnose(observed, self.law.predict(matrix, self.theta))


def check_data(
    law: Law, x, y, positive: bool = False, min_points: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs as an [n, k] array and targets as [n], or a ValueError naming what is wrong and where.

    Rows are named 0-based. Inputs must be finite (and positive for a law with `positive_inputs`); targets
    must be finite and not negative (losses and quality scores), positive with `positive` (log-space fits),
    and not all equal, since a constant target determines no exponent.
    """
    matrix = law.inputs_matrix(x)
    target = np.asarray(y, dtype=float)
    if target.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {target.shape}")
    if len(target) != len(matrix):
        raise ValueError(f"x has {len(matrix)} rows but y has {len(target)} values")
    for column, values in zip(law.inputs, matrix.T, strict=True):
        _check_rows(f"input {column!r}", ~np.isfinite(values), "NaN or inf")
        if law.positive_inputs:
            _check_rows(f"input {column!r}", values <= 0, f"not positive (law {law.name!r} takes sizes > 0)")
    _check_rows("y", ~np.isfinite(target), "NaN or inf")
    if positive:
        _check_rows("y", target <= 0, "not positive (a log-space fit needs positive y)")
    else:
        _check_rows("y", target < 0, "negative (a loss or a quality score is not)")
    needed = len(law.parameters) if min_points is None else min_points
    if len(target) < needed:
        raise ValueError(
            f"{len(target)} points cannot determine the {len(law.parameters)} parameters {list(law.names)} "
            f"of {law.name}"
        )
    if min_points is None and np.ptp(target) == 0:
        raise ValueError(
            f"all {len(target)} values of y equal {target[0]:g}: they determine none of the parameters "
            f"{list(law.names)} of {law.name}"
        )
    return matrix, target


def _check_rows(what: str, bad: np.ndarray, problem: str) -> None:
    if bad.any():
        raise ValueError(f"{what}, rows {np.flatnonzero(bad).tolist()} (0-based): {problem}")


def determined(law: Law, matrix: np.ndarray, theta: np.ndarray, rtol: float = 1e-10) -> tuple[bool, str]:
    """Whether the data pin every parameter down at `theta`: (ok, why not).

    The Jacobian of the predictions, each column scaled to unit length, must have full column rank. It does
    not when an input never varies (a power law's scale and asymptote trade off exactly), when two inputs
    vary together (Ne proportional to Nd leaves pe and pd free along a line), or when a parameter moves no
    prediction at all (an exponent with a zero coefficient).
    """
    jacobian = np.asarray(law.jacobian(matrix, theta), dtype=float)
    norms = np.linalg.norm(jacobian, axis=0)
    idle = [name for name, norm in zip(law.names, norms, strict=True) if not norm > 0]
    if idle:
        return False, f"parameters {idle} change no prediction at the fit"
    singular = np.linalg.svd(jacobian / norms, compute_uv=False)
    rank = int(np.sum(singular > rtol * singular[0]))
    if rank < len(law.names):
        return False, (
            f"the Jacobian has rank {rank} < {len(law.names)} parameters: the data leave a combination of "
            f"{list(law.names)} free (an input that never varies, or two inputs that vary together?)"
        )
    return True, ""


def _fit(law: Law, matrix, target, theta, objective, converged, message, method, refit, table=None) -> Fit:
    """A `Fit`; one the data do not determine is marked not converged, with the reason in its message."""
    ok, why = determined(law, matrix, np.asarray(theta, dtype=float))
    return Fit(
        law=law,
        params=dict(zip(law.names, map(float, theta), strict=True)),
        objective=float(objective),
        converged=bool(converged) and ok,
        message=str(message) if ok else f"undetermined: {why}",
        method=method,
        diagnostics=diagnose(target, law.predict(matrix, theta)),
        x=matrix,
        y=target,
        refit=refit,
        table=table,
        determined=ok,
    )


# ----------------------------------------------------------------------------------------------------------
# Besiroglu et al.: Huber on log residuals, L-BFGS-B from every grid point


MULTISTART_LOSSES = ("huber_log", "linear", "soft_l1")


def multistart_objective(
    law: Law,
    matrix: np.ndarray,
    target: np.ndarray,
    loss: str = "huber_log",
    delta: float = BESIROGLU_HUBER_DELTA,
    reduction: str = "sum",
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """theta -> (objective, gradient) of sum_i rho(r_i), or its mean, for one of `MULTISTART_LOSSES`:

    - "huber_log": Huber_delta on log residuals r_i = log y_i - log f(x_i; theta) (Besiroglu et al.);
    - "linear": rho = r^2 / 2 on the loss itself, r_i = f(x_i; theta) - y_i (ordinary least squares, the
      objective scipy's `least_squares` calls cost);
    - "soft_l1": rho = delta^2 (sqrt(1 + (r / delta)^2) - 1) on the loss itself (scipy's soft_l1 cost with
      f_scale = delta, Ghorbani et al.).

    The gradient is analytic: sum_i rho'(r_i) dr_i/dtheta, with dr/dtheta = J (or -J / f for log residuals),
    J the law's Jacobian. theta is one parameter vector [P], or for a `batched` law a stack [S, P]
    (objectives [S], gradients [S, P]).
    """
    if loss not in MULTISTART_LOSSES:
        raise ValueError(f"loss must be one of {MULTISTART_LOSSES}, got {loss!r}")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")
    log_target = np.log(target) if loss == "huber_log" else None
    scale = 1.0 if reduction == "sum" else 1.0 / len(target)
    # A non-positive prediction has no log, and an infinite objective stops L-BFGS-B dead: floor predictions
    # far below the data instead, which keeps the objective finite and the gradient pointing back up.
    floor = 1e-6 * target.min()

    def one_block(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        params = theta.T[..., None] if theta.ndim == 2 else theta
        prediction = law.predict(matrix, params)  # NaN stays NaN: that start is dropped
        if loss == "huber_log":
            prediction = np.maximum(prediction, floor)
            residual = log_target - np.log(prediction)
            absolute = np.abs(residual)
            value = np.where(absolute <= delta, 0.5 * residual**2, delta * (absolute - 0.5 * delta))
            weight = -np.clip(residual, -delta, delta) / prediction
        elif loss == "linear":
            residual = prediction - target
            value, weight = 0.5 * residual**2, residual
        else:
            residual = prediction - target
            root = np.sqrt(1 + (residual / delta) ** 2)
            value, weight = delta**2 * (root - 1), residual / root
        gradient = np.einsum("...n,...np->...p", weight, law.jacobian(matrix, params))
        return scale * value.sum(axis=-1), scale * gradient

    def objective(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Blocks of starts keep the [starts, points, params] Jacobian small enough for the cache (~1.4x).
        if theta.ndim == 1 or len(theta) <= block:
            return one_block(theta)
        parts = [one_block(theta[i : i + block]) for i in range(0, len(theta), block)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    block = max(1, 2**16 // len(target))
    return objective


def fit_multistart(
    law: Law,
    x,
    y,
    delta: float = BESIROGLU_HUBER_DELTA,
    starts: np.ndarray | None = None,
    reduction: str = "sum",
    batched: bool | None = None,
    loss: str = "huber_log",
    fixed: Mapping[str, float] | None = None,
) -> Fit:
    """Fit `law` by `loss` (default: Huber(delta) on log residuals), minimised from every start; keep the
    lowest objective. `loss` is one of `MULTISTART_LOSSES` (see `multistart_objective`): "linear" is a
    multi-start ordinary least-squares fit, "soft_l1" a multi-start Ghorbani fit with f_scale `delta`.

    `starts` ([n_starts, n_params]) defaults to the law's full start grid. Each start runs scipy's L-BFGS-B,
    or, with `batched` (default: when the law supports it), `nmtscale.laws.lbfgs.minimize_batched` runs all
    starts at once and scipy's L-BFGS-B polishes the best. Besiroglu et al. 2024 (delta = 1e-3, sum
    reduction) on Chinchilla; fits any positive target. `fixed` holds some parameters at given values inside
    their bounds (a profile: see `profile`); the others are fitted.

    `Fit.table` has one row per start: the start, `objective` and parameters where it ended, `converged`,
    `iterations`, `dropped` (the objective is NaN or infinite at the start, e.g. a 0/0 in the law: such a
    start is not run, and `table.attrs["dropped_starts"]` counts them), and `chosen`, the one row that is the
    `Fit`. In the batched path the chosen row holds the polished end (`polished` True) and
    `unpolished_objective` where the batched optimiser left it, so `Fit.objective` equals the chosen row's
    objective and is the table's minimum. A ValueError is raised when every start is dropped.
    """
    if not delta > 0:
        raise ValueError(
            f"delta must be > 0 (where the robust loss bends: the Huber loss's quadratic zone in log "
            f"residuals, soft_l1's f_scale in loss units), not {delta}"
        )
    batched = law.batched if batched is None else batched
    if batched and not law.batched:
        raise ValueError(f"law {law.name} does not evaluate batches of parameters (Law.batched is False)")
    matrix, target = check_data(law, x, y, positive=loss == "huber_log")
    grid = law.start_grid() if starts is None else np.atleast_2d(np.asarray(starts, dtype=float))
    if grid.shape[1] != len(law.parameters):
        raise ValueError(f"starts have {grid.shape[1]} columns; {law.name} has parameters {list(law.names)}")
    objective = multistart_objective(law, matrix, target, loss, delta, reduction)
    fixed = dict(fixed or {})
    lower, upper, starts = _held(law, fixed, grid)
    with single_threaded_blas(), np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        runs = _minimised_from_each_start(law, objective, starts, lower, upper, batched)
    if not np.isfinite(runs.value):
        raise ValueError(f"no start of {law.name} ended at a finite objective; the law is not defined there")

    def refit(new_x, new_y, starts):
        # One warm start is cheapest with scipy alone; many starts go through the batched optimiser.
        many = law.batched and np.atleast_2d(starts).shape[0] > 1
        return fit_multistart(
            law, new_x, new_y, delta, starts, reduction, batched=many, loss=loss, fixed=fixed
        )

    def holding(values: Mapping[str, float], starts: np.ndarray | None = None) -> Fit:
        # A few warm starts are cheapest with scipy alone (the batched optimiser can crawl on a held fit).
        many = starts is None and batched
        starts = grid if starts is None else np.atleast_2d(starts)
        return fit_multistart(law, matrix, target, delta, starts, reduction, many, loss, {**fixed, **values})

    optimiser = "batched L-BFGS, best polished by L-BFGS-B" if batched else "L-BFGS-B"
    bend = "" if loss == "linear" else f"delta={delta:g}, "
    n_dropped = runs.table.attrs["dropped_starts"]
    method = f"{loss}({bend}reduction={reduction}, starts={len(starts) - n_dropped}, {optimiser})"
    if n_dropped:
        method += f", {n_dropped} starts dropped (objective not finite)"
    if fixed:
        method += ", held: " + ", ".join(f"{name}={value:g}" for name, value in fixed.items())
    fit = _fit(
        law, matrix, target, runs.theta, runs.value, runs.success, runs.message, method, refit, runs.table
    )
    return dataclasses.replace(fit, holding=holding)


def _held(
    law: Law, fixed: Mapping[str, float], grid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The law's bounds with each `fixed` parameter's collapsed onto its value, and the starts of `grid` with
    those parameters set to their values (duplicates removed)."""
    lower, upper = law.bounds
    for name, value in fixed.items():
        if name not in law.names:
            raise ValueError(f"fixed: {law.name} has no parameter {name!r}; it has {list(law.names)}")
        i = law.names.index(name)
        if not lower[i] <= value <= upper[i]:
            raise ValueError(f"fixed: {name}={value} lies outside its bounds [{lower[i]:g}, {upper[i]:g}]")
        lower[i] = upper[i] = value
    if not fixed:
        return lower, upper, grid
    starts = grid.copy()
    starts[:, [law.names.index(name) for name in fixed]] = list(fixed.values())
    return lower, upper, np.unique(starts, axis=0)


@dataclass
class _StartRuns:
    """`_minimised_from_each_start`'s result: the best end (polished in the batched path) and the per-start
    table of `fit_multistart`."""

    theta: np.ndarray
    value: float
    success: bool
    message: str
    table: pd.DataFrame


def _minimised_from_each_start(
    law: Law, objective, starts: np.ndarray, lower: np.ndarray, upper: np.ndarray, batched: bool
) -> _StartRuns:
    """Minimise `objective` from every start whose objective is finite (all at once with `batched`, the best
    then polished by scipy's L-BFGS-B; else one scipy L-BFGS-B run per start)."""
    bounds = list(zip(lower, upper, strict=True))
    ends = np.full_like(starts, np.nan)
    values = np.full(len(starts), np.nan)
    converged = np.zeros(len(starts), bool)
    iterations = np.zeros(len(starts), int)
    messages = {}  # scipy's word on each start it ran alone
    at_start = objective(starts)[0] if batched else np.array([objective(s)[0] for s in starts])
    kept = np.flatnonzero(np.isfinite(at_start))
    if not len(kept):
        raise ValueError(
            f"the objective of {law.name} is NaN or infinite at every one of the {len(starts)} starts "
            f"(e.g. 0/0 or log of 0 in the law): give starts where the law is defined"
        )
    if batched:
        runs = minimize_batched(objective, starts[kept], lower, upper)
        ends[kept], values[kept] = runs.x, runs.fun
        converged[kept], iterations[kept] = runs.converged, runs.iterations
    else:
        for i in kept:
            result = minimize(objective, starts[i], jac=True, method="L-BFGS-B", bounds=bounds)
            ends[i], values[i] = result.x, result.fun
            converged[i], iterations[i], messages[i] = result.success, result.nit, result.message
    best_index = int(np.argmin(np.where(np.isfinite(values), values, np.inf)))
    theta, value = ends[best_index], values[best_index]
    success, message = bool(converged[best_index]), messages.get(best_index, "best of the starts")
    unpolished = values.copy()
    if batched:
        polished = minimize(objective, theta, jac=True, method="L-BFGS-B", bounds=bounds)
        if np.isfinite(polished.fun) and polished.fun <= value:
            theta, value, success, message = polished.x, polished.fun, polished.success, polished.message
        ends[best_index], values[best_index], converged[best_index] = theta, value, success
    chosen = np.arange(len(starts)) == best_index
    dropped = ~np.isin(np.arange(len(starts)), kept)
    columns = {"objective": values, "converged": converged, "iterations": iterations, "dropped": dropped}
    if batched:
        columns |= {"unpolished_objective": unpolished, "polished": chosen}
    table = pd.concat(
        [
            pd.DataFrame(starts, columns=[f"start_{n}" for n in law.names]),
            pd.DataFrame(columns | {"chosen": chosen}),
            pd.DataFrame(ends, columns=list(law.names)),
        ],
        axis=1,
    )
    table.attrs["dropped_starts"] = int(dropped.sum())
    return _StartRuns(theta, value, success, message, table)


# ----------------------------------------------------------------------------------------------------------
# Ghorbani et al. App. E: soft_l1 least squares


LEAST_SQUARES_LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


def denser_start_grid(law: Law, per_parameter: int = 6, widen: float = 3.0) -> np.ndarray:
    """A much denser grid than `law.start_grid()`, to check that a multi-start fit found the lowest objective:
    `per_parameter` values per parameter from its grid's smallest / `widen` to its largest x `widen`, spaced
    geometrically (linearly for a grid that reaches zero or below), inside the parameter's bounds. With the
    default 6 values and 4 parameters: 1,296 starts, 16 times Ghorbani's 81."""
    axes = []
    for p in law.parameters:
        low, high = min(p.grid), max(p.grid)
        if low > 0:
            values = np.geomspace(low / widen, high * widen, per_parameter)
        else:
            values = np.linspace(
                low - (high - low) * (widen - 1) / 2, high + (high - low) * (widen - 1) / 2, per_parameter
            )
        axes.append(np.clip(values, p.lower, p.upper))
    return np.array(list(itertools.product(*axes)), dtype=float)


def optimum_gap(fit: Fit, delta: float = BESIROGLU_HUBER_DELTA, atol: float = 1e-9) -> tuple[float, Fit]:
    """(relative gap, better fit): how much lower `fit_multistart` from `denser_start_grid` gets than `fit`
    (a Huber-on-log-residuals fit with `delta`), as (fit.objective - denser.objective) / fit.objective, and
    the fit with the lower objective. The gap is 0 when the fit's own grid found the optimum, up to `atol` (a
    sum of squared log residuals of ~1e-9 is a perfect fit: below it, relative gaps are rounding)."""
    denser = fit_multistart(fit.law, fit.x, fit.y, delta, starts=denser_start_grid(fit.law))
    if denser.objective >= fit.objective - atol:
        return 0.0, fit
    return (fit.objective - denser.objective) / fit.objective, denser


def profile_span(law: Law, name: str, points: int = 13) -> np.ndarray:
    """`points` values of parameter `name` to profile it at, evenly from its lower bound (or, unbounded, its
    smallest start less the grid's width) to twice its largest start value, within its upper bound."""
    parameter = law.parameters[law.names.index(name)]
    low, high = min(parameter.grid), max(parameter.grid)
    start = parameter.lower if np.isfinite(parameter.lower) else low - (high - low or 1.0)
    end = min(parameter.upper, 2 * high if high > 0 else high + (high - low or 1.0))
    return np.linspace(start, end, points)


def profile(fit: Fit, name: str, values=None) -> pd.DataFrame:
    """The profile of parameter `name` of a multi-start fit: at each of `values` (default `profile_span`), the
    fit with `name` held there and the other parameters refitted. Each point starts from the estimate and from
    the point before it (a continuation along the profile, far cheaper than the full start grid). Columns:
    value, objective, rmse (of the held fit, in the target's units) and rmse_rise (that minus the fit's own
    RMSE)."""
    if fit.holding is None:
        raise ValueError(f"profile needs a fit_multistart fit; this one was made by {fit.method}")
    values = profile_span(fit.law, name) if values is None else np.asarray(values, dtype=float)
    held, previous = [], fit.theta
    for value in values:
        held.append(fit.holding({name: float(value)}, starts=np.stack([fit.theta, previous])))
        previous = held[-1].theta
    rmse = np.array([h.diagnostics.rmse for h in held])
    return pd.DataFrame(
        {
            "value": values,
            "objective": [h.objective for h in held],
            "rmse": rmse,
            "rmse_rise": rmse - fit.diagnostics.rmse,
        }
    )


# A parameter that can be held anywhere over more than this share of its profile span and still fit the points
# within the noise is one the data leave free.
FLAT_PROFILE_SHARE = 0.5


def flat_profile(fit: Fit, name: str, noise: float | None = None, values=None) -> str:
    """ "" when the data determine parameter `name`, else why not: its profile is flat, i.e. held at more than
    `FLAT_PROFILE_SHARE` of the values of its span (`profile`), the law still fits the points with an RMSE
    less than `noise` above the fit's own. `noise` is the smallest difference the data can tell apart, in the
    target's units (a chapter passes its seed standard deviation); by default the fit's own RMSE."""
    noise = fit.diagnostics.rmse if noise is None else noise
    table = profile(fit, name, values)
    within = table["rmse_rise"] < noise
    if within.mean() <= FLAT_PROFILE_SHARE:
        return ""
    admitted = table.loc[within, "value"]
    return (
        f"flat profile: held anywhere from {admitted.min():.3g} to {admitted.max():.3g} ({within.sum()} of "
        f"{len(table)} values in [{table['value'].min():.3g}, {table['value'].max():.3g}]), the law fits "
        f"within {noise:.2g} of its own RMSE"
    )


def fit_least_squares(
    law: Law, x, y, loss: str = "linear", f_scale: float = 1.0, start: np.ndarray | None = None
) -> Fit:
    """Least squares on the loss itself (residuals predicted - observed), plain or robust.

    `loss="linear"` is ordinary least squares by scipy's `curve_fit`, as most NMT scaling papers fit (Gordon
    et al. 2021, Fernandes et al. 2023); `Fit.table` then lists each parameter's standard error from
    `curve_fit`'s covariance (meaningful only where the law holds and the noise is Gaussian). Any other loss
    is scipy's `least_squares(loss=..., f_scale=...)`; `fit_soft_l1` is Ghorbani et al.'s choice. The start
    defaults to the law's default start; bounds are the law's; the Jacobian is the law's (analytic, or finite
    differences for a law written without one).
    """
    if loss not in LEAST_SQUARES_LOSSES:
        raise ValueError(f"loss must be one of {LEAST_SQUARES_LOSSES}, got {loss!r}")
    if not f_scale > 0:
        raise ValueError(
            f"f_scale must be > 0 (the residual size where the robust loss bends), not {f_scale}"
        )
    matrix, target = check_data(law, x, y)
    start = law.default_start() if start is None else np.asarray(start, dtype=float)
    if start.shape != (len(law.parameters),):
        raise ValueError(
            f"fit_least_squares takes one start of {len(law.parameters)} values, got shape {start.shape}"
        )
    table = None
    with single_threaded_blas():
        if loss == "linear":
            theta, covariance, info, message, status = curve_fit(
                lambda _, *theta: law.predict(matrix, np.array(theta)),
                None,
                target,
                p0=start,
                jac=lambda _, *theta: law.jacobian(matrix, np.array(theta)),
                bounds=law.bounds,
                # curve_fit picks "lm" for a law without bounds, which takes no max_nfev: trf takes both
                method="trf",
                max_nfev=10000,
                full_output=True,
            )
            objective = 0.5 * float(np.sum(info["fvec"] ** 2))
            errors = np.sqrt(np.clip(np.diag(covariance), 0, None))
            table = pd.DataFrame({"parameter": list(law.names), "estimate": theta, "std_error": errors})
        else:
            result = least_squares(
                lambda theta: law.predict(matrix, theta) - target,
                start,
                jac=lambda theta: law.jacobian(matrix, theta),
                loss=loss,
                f_scale=f_scale,
                bounds=law.bounds,
                max_nfev=10000,
            )
            theta, objective, status, message = result.x, result.cost, result.status, result.message

    def refit(new_x, new_y, new_start):
        return fit_least_squares(law, new_x, new_y, loss, f_scale, new_start)

    method = "least_squares(linear, curve_fit)" if loss == "linear" else f"{loss}(f_scale={f_scale:.4g})"
    return _fit(law, matrix, target, theta, objective, status > 0, message, method, refit, table)


def fit_soft_l1(law: Law, x, y, f_scale: float, start: np.ndarray | None = None) -> Fit:
    """Ghorbani App. E: `least_squares(loss="soft_l1", f_scale=f_scale)` on the loss itself, within the law's
    bounds, from the law's default start (for `bivariate_law`, their p0). See `fit_least_squares`."""
    return fit_least_squares(law, x, y, "soft_l1", f_scale, start)


def fit_soft_l1_recipe(law: Law, x, y, f_scales=GHORBANI_F_SCALES, folds: int = 10, seed: int = 0) -> Fit:
    """Ghorbani App. E: `fit_soft_l1` for every f_scale in their grid, keeping one.

    The paper names the grid (geomspace(0.001, 0.025, 25)) but not the rule for choosing in it. We keep the
    f_scale with the lowest k-fold cross-validated mean absolute error (k = min(folds, n), a seeded split),
    which rewards robustness to outliers without favouring the fit closest to plain least squares; ties go to
    the larger f_scale.
    `Fit.table` lists every f_scale with its cross-validation error and parameters.
    `Fit.refit` keeps the chosen f_scale.
    """
    matrix, target = check_data(law, x, y)
    fold_of = np.random.default_rng(seed).permutation(len(target)) % min(folds, len(target))
    smallest_training_fold = len(target) - np.bincount(fold_of).max()
    if smallest_training_fold < len(law.parameters):
        raise ValueError(
            f"the soft_l1 recipe chooses f_scale by {min(folds, len(target))}-fold cross-validation: on "
            f"{len(target)} points a fold trains on {smallest_training_fold}, fewer than the "
            f"{len(law.parameters)} parameters {list(law.names)} of {law.name}; give more points or "
            "folds, or fit one f_scale with fit_soft_l1"
        )
    rows = []
    for f_scale in f_scales:
        full = fit_soft_l1(law, matrix, target, f_scale)
        errors = np.empty_like(target)
        for fold in np.unique(fold_of):
            held_out = fold_of == fold
            train = fit_soft_l1(law, matrix[~held_out], target[~held_out], f_scale, full.theta)
            errors[held_out] = np.abs(train.predict(matrix[held_out]) - target[held_out])
        rows.append({"f_scale": f_scale, "cv_mae": errors.mean(), "objective": full.objective, **full.params})
    table = pd.DataFrame(rows)
    best = table["cv_mae"].to_numpy()
    chosen = int(np.flatnonzero(best <= best.min() * (1 + 1e-9))[-1])
    fit = fit_soft_l1(law, matrix, target, float(table["f_scale"][chosen]))
    fit.table = table.assign(chosen=table.index == chosen)
    return fit


def fit_each(
    law: Law, frame: pd.DataFrame, y, by: str, fit: Callable[..., Fit] = fit_multistart
) -> pd.DataFrame:
    """Fit `law` separately to each group of rows sharing a value of column `by`, e.g. Fernandes Eq. 6: one
    power law in N per language-pair weight p. Returns a tidy frame with one row per group and parameter
    (columns `by`, parameter, estimate, converged); `fit` is any fitter taking (law, x, y).
    """
    if by not in frame:
        raise ValueError(f"no column {by!r} to group by; columns are {list(frame.columns)}")
    y = np.asarray(y, dtype=float)
    if len(y) != len(frame):
        raise ValueError(f"frame has {len(frame)} rows but y has {len(y)} values")
    rows = []
    for value, group in frame.groupby(by, sort=True):
        result = fit(law, group, y[frame.index.get_indexer(group.index)])
        rows += [
            {by: value, "parameter": name, "estimate": estimate, "converged": result.converged}
            for name, estimate in result.params.items()
        ]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------------------
# Ghorbani Eq. 5: BLEU = c_B L^-p_B in log-log space


@dataclass
class BleuFit:
    """OLS fit of log BLEU = log c_B - p_B log L (Ghorbani Eq. 5) with statsmodels' confidence intervals."""

    c_b: float
    p_b: float
    result: object = field(repr=False)  # statsmodels RegressionResults

    def coefficients(self, level: float = 0.95) -> pd.DataFrame:
        """c_B and p_B with standard errors (of log c_B and p_B) and confidence intervals, one row each."""
        low, high = np.asarray(self.result.conf_int(alpha=1 - level)).T
        se = np.asarray(self.result.bse)
        with np.errstate(over="ignore"):  # an interval of log c_B reaching past ~709 has an infinite bound
            c_b_interval = np.exp(low[0]), np.exp(high[0])
        return pd.DataFrame(
            {
                "parameter": ["c_B", "p_B"],
                "estimate": [self.c_b, self.p_b],
                "std_error": [se[0], se[1]],  # c_B's is on the log scale
                "lower": [c_b_interval[0], -high[1]],
                "upper": [c_b_interval[1], -low[1]],
            }
        )

    def predict(self, loss, level: float = 0.95) -> pd.DataFrame:
        """Predicted BLEU at `loss` with a confidence band for the mean, as a tidy frame."""
        loss = np.atleast_1d(np.asarray(loss, dtype=float))
        frame = self.result.get_prediction(sm.add_constant(np.log(loss), has_constant="add")).summary_frame(
            alpha=1 - level
        )
        return pd.DataFrame(
            {
                "loss": loss,
                "bleu": np.exp(frame["mean"].to_numpy()),
                "lower": np.exp(frame["mean_ci_lower"].to_numpy()),
                "upper": np.exp(frame["mean_ci_upper"].to_numpy()),
            }
        )


def fit_bleu_vs_loss(loss, bleu) -> BleuFit:
    """Fit Ghorbani Eq. 5, BLEU = c_B L^-p_B, by least squares in log-log space (statsmodels OLS)."""
    loss, bleu = np.asarray(loss, dtype=float), np.asarray(bleu, dtype=float)
    if loss.shape != bleu.shape or loss.ndim != 1:
        raise ValueError(f"loss and bleu must be 1-D of one length, got shapes {loss.shape} and {bleu.shape}")
    bad = ~np.isfinite(loss) | ~np.isfinite(bleu) | (loss <= 0) | (bleu <= 0)
    if bad.any():
        raise ValueError(
            f"rows {np.flatnonzero(bad).tolist()} have a non-positive or non-finite loss or BLEU"
        )
    if len(loss) < 3:
        raise ValueError(f"{len(loss)} points cannot fit c_B and p_B with an error estimate (need 3 or more)")
    if np.ptp(loss) == 0:
        raise ValueError(f"all {len(loss)} losses equal {loss[0]:g}: they cannot determine the exponent p_B")
    result = sm.OLS(np.log(bleu), sm.add_constant(np.log(loss), has_constant="add")).fit()
    log_c, slope = result.params
    return BleuFit(c_b=float(np.exp(log_c)), p_b=float(-slope), result=result)


# ----------------------------------------------------------------------------------------------------------
# Fernandes App. G: learning-curve extrapolation


def extrapolate_learning_curve(
    steps, losses, target_step: float, start_step: float = 0.0
) -> tuple[float, Fit]:
    """Fernandes App. G (after Hutter 2021): fit L(step) = alpha (step / last)^-p + L_inf to an eval curve
    from `start_step` on (skip warm-up), and predict the loss at `target_step`. Returns (prediction, fit).

    Steps are normalised by the last observed step: alpha is the loss above L_inf at the end of training.
    """
    steps, losses = np.asarray(steps, dtype=float), np.asarray(losses, dtype=float)
    if steps.shape != losses.shape or steps.ndim != 1:
        raise ValueError(f"steps and losses must be 1-D of one length, got {steps.shape} and {losses.shape}")
    if not target_step > 0:
        raise ValueError(f"target_step must be a positive step, not {target_step}")
    keep = steps >= start_step
    if (steps[keep] <= 0).any():
        raise ValueError(
            f"steps must be positive; rows {np.flatnonzero(keep & (steps <= 0)).tolist()} are not"
        )
    law = power_law(n0=float(steps[keep].max()), input_name="step")
    fit = fit_multistart(law, steps[keep], losses[keep])
    return float(fit.predict(np.array([target_step]))[0]), fit
