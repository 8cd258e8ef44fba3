"""Projected L-BFGS over many independent starts at once, for multi-start fits of small laws.

scipy's L-BFGS-B costs ~5-20 ms per start on a 240-point law, most of it Python overhead per iteration;
Besiroglu et al.'s 4,500-start grid then takes about a minute. Here every start keeps its own L-BFGS memory,
step and stopping state, but the objective is evaluated for all live starts in one vectorised call. Bounds are
handled by projection (variables held at a bound by their gradient are frozen for the step), a simpler scheme
than L-BFGS-B's Cauchy point; `fitting.fit_multistart` polishes the best start with scipy's L-BFGS-B.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# theta [S, P] -> (objective [S], gradient [S, P])
BatchedObjective = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class BatchResult:
    x: np.ndarray  # [S, P]
    fun: np.ndarray  # [S]
    converged: np.ndarray  # [S] bool: gradient or objective-change criterion met
    iterations: np.ndarray  # [S]


def minimize_batched(
    fun: BatchedObjective,
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    memory: int = 10,
    gtol: float = 1e-5,
    ftol: float = 2.220446049250313e-09,
    max_iter: int = 1000,
    max_halvings: int = 40,
) -> BatchResult:
    """Minimise each row of x0 independently within [lower, upper] by projected L-BFGS.

    Stopping rules are scipy L-BFGS-B's defaults: projected-gradient inf-norm <= gtol, or relative objective
    decrease <= ftol. A step is the largest of 1, 1/2, 1/4, ... along the projected L-BFGS direction that
    meets the Armijo condition; a start whose line search fails is stopped where it is, not counted as
    converged.
    """
    x = np.clip(np.array(x0, dtype=float), lower, upper)
    n_starts, n_params = x.shape
    f, g = fun(x)
    s_mem = np.zeros((memory, n_starts, n_params))
    y_mem = np.zeros((memory, n_starts, n_params))
    rho = np.zeros((memory, n_starts))  # 0 marks an empty or rejected memory slot
    gamma = np.ones(n_starts)  # initial inverse-Hessian scale, s.y / y.y of the latest pair
    live = np.ones(n_starts, bool)
    converged = _projected_gradient_small(x, g, lower, upper, gtol)
    live &= ~converged
    iterations = np.zeros(n_starts, int)

    for step in range(max_iter):
        if not live.any():
            break
        idx = np.flatnonzero(live)
        xi, gi = x[idx], g[idx]
        free = ~(((xi <= lower) & (gi > 0)) | ((xi >= upper) & (gi < 0)))
        direction = -_two_loop(gi * free, s_mem[:, idx], y_mem[:, idx], rho[:, idx], gamma[idx], step) * free
        uphill = np.einsum("sp,sp->s", direction, gi) >= 0
        direction[uphill] = -(gi * free)[uphill]
        # First step of a start (or after an uphill direction): scale to unit length, as scipy does.
        fresh = uphill | (iterations[idx] == 0)
        direction[fresh] /= np.maximum(np.linalg.norm(direction[fresh], axis=1, keepdims=True), 1.0)

        t = np.ones(len(idx))
        pending = np.ones(len(idx), bool)
        x_new, f_new, g_new = xi.copy(), f[idx].copy(), gi.copy()
        for _ in range(max_halvings):
            trial = np.clip(xi[pending] + t[pending, None] * direction[pending], lower, upper)
            f_trial, g_trial = fun(trial)
            decrease = np.einsum("sp,sp->s", gi[pending], trial - xi[pending])
            accept = np.isfinite(f_trial) & (f_trial <= f[idx][pending] + 1e-4 * decrease)
            rows = np.flatnonzero(pending)[accept]
            x_new[rows], f_new[rows], g_new[rows] = trial[accept], f_trial[accept], g_trial[accept]
            pending[rows] = False
            t[pending] *= 0.5
            if not pending.any():
                break
        stuck = idx[pending]  # no acceptable step: stop there

        s_vec, y_vec = x_new - xi, g_new - gi
        curvature = np.einsum("sp,sp->s", s_vec, y_vec)
        slot = step % memory
        good = curvature > 1e-10 * np.einsum("sp,sp->s", y_vec, y_vec)
        s_mem[slot, idx], y_mem[slot, idx] = s_vec, y_vec
        rho[slot, idx] = np.where(good, 1.0 / np.where(good, curvature, 1.0), 0.0)
        gamma[idx[good]] = curvature[good] / np.einsum("sp,sp->s", y_vec, y_vec)[good]

        relative_change = (f[idx] - f_new) / np.maximum.reduce(
            [np.abs(f[idx]), np.abs(f_new), np.ones(len(idx))]
        )
        x[idx], f[idx], g[idx] = x_new, f_new, g_new
        iterations[idx] += 1
        done = (relative_change <= ftol) | _projected_gradient_small(x_new, g_new, lower, upper, gtol)
        converged[idx[done]] = True
        live[idx[done]] = False
        live[stuck] = False
    return BatchResult(x=x, fun=f, converged=converged, iterations=iterations)


def _two_loop(q, s_mem, y_mem, rho, gamma, step):
    """L-BFGS two-loop recursion for every start at once: returns H q with H the inverse-Hessian estimate."""
    memory = len(rho)
    order = [(step - 1 - i) % memory for i in range(min(step, memory))]  # newest first
    q = q.copy()
    alphas = {}
    for i in order:
        alphas[i] = rho[i] * np.einsum("sp,sp->s", s_mem[i], q)
        q -= alphas[i][:, None] * y_mem[i]
    r = gamma[:, None] * q
    for i in reversed(order):
        beta = rho[i] * np.einsum("sp,sp->s", y_mem[i], r)
        r += (alphas[i] - beta)[:, None] * s_mem[i]
    return r


def projected_gradient_norm(x, g, lower, upper) -> np.ndarray:
    """Inf-norm of the projected gradient, |clip(x - g, lower, upper) - x|, per row of x [S, P] (or for one
    vector [P]): zero exactly at a point that satisfies the box-constrained first-order optimality conditions.
    L-BFGS-B's `pgtol` test uses the same quantity."""
    return np.abs(np.clip(x - g, lower, upper) - x).max(axis=-1)


def _projected_gradient_small(x, g, lower, upper, gtol) -> np.ndarray:
    return projected_gradient_norm(x, g, lower, upper) <= gtol
