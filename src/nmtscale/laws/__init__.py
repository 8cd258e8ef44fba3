"""Scaling laws as plain objects, and the quantities the papers derive from them.

A `Law` is a prediction function of named inputs (columns of `x`) and named parameters, with its analytic
Jacobian, box bounds and a grid of starting points, so `nmtscale.laws.fitting` can fit any of them,
including a law a user writes (see `chinchilla_law` for an L(N, D) example). The package's submodules fit
them (`fitting`, `lbfgs`), put intervals on the fits (`uncertainty`) and hold the papers' published
coefficients (`reference`). Papers:

- Ghorbani et al. 2022, "Scaling Laws for Neural Machine Translation" (Eq. 1-5, Prop. 1, Fig. 6, Sec. 3).
- Zhang et al. 2022, "Examining Scaling and Transfer of Language Model Architectures for MT" (Eq. 7).
- Fernandes et al. 2023, "Scaling Laws for Multilingual Neural Machine Translation" (Eq. 6-13, App. G).
- Hoffmann et al. 2022 / Besiroglu et al. 2024 for the Chinchilla L(N, D) form.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

# predict(x [n, k], theta [P]) -> [n]; jacobian(x, theta) -> [n, P] (d prediction / d theta). A law marked
# `batched` also takes theta [P, S, 1], S parameter vectors at once, and returns [S, n] and [S, n, P]:
# unpacking theta along its first axis and stacking Jacobian columns on the last axis gives both for free.
PredictFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Parameter:
    """One fitted coefficient: box bounds, the values a multi-start fit starts from, and one default start."""

    name: str
    lower: float
    upper: float
    grid: tuple[float, ...]
    start: float

    def __post_init__(self):
        if not self.lower < self.upper:
            raise ValueError(f"parameter {self.name!r}: lower bound {self.lower} is not below {self.upper}")
        outside = [v for v in (*self.grid, self.start) if not self.lower <= v <= self.upper]
        if outside:
            raise ValueError(f"parameter {self.name!r}: start values {outside} lie outside its bounds")


@dataclass(frozen=True)
class Law:
    """A scaling law y = predict(x, theta) with named inputs (columns of x) and named parameters.

    A law written without `jacobian` gets a finite-difference one (central differences, one-sided at a
    bound): 2P predictions per Jacobian instead of one, so fits are slower and a little less precise. Its
    `predict` alone decides whether it can be `batched`: the differences are taken for all starts at once.
    `positive_inputs` makes the fitters reject inputs <= 0 by row (model sizes,
    token counts and steps are positive, and power laws in them are undefined at 0).
    """

    name: str
    inputs: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    predict: PredictFn
    jacobian: PredictFn | None = None
    batched: bool = False  # predict/jacobian accept theta [P, S, 1] (see PredictFn)
    positive_inputs: bool = True

    def __post_init__(self):
        if self.jacobian is None:
            object.__setattr__(self, "jacobian", finite_difference_jacobian(self.predict, *self.bounds))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) arrays in parameter order, as scipy's least_squares takes them."""
        return (np.array([p.lower for p in self.parameters]), np.array([p.upper for p in self.parameters]))

    def default_start(self) -> np.ndarray:
        return np.array([p.start for p in self.parameters])

    def start_grid(self) -> np.ndarray:
        """Every combination of the parameters' grid values: [n_starts, n_params]."""
        return np.array(list(itertools.product(*(p.grid for p in self.parameters))), dtype=float)

    def vector(self, params: Mapping[str, float]) -> np.ndarray:
        """Parameter dict -> vector in this law's order; a missing or unknown name is a ValueError."""
        unknown = sorted(set(params) - set(self.names))
        missing = [n for n in self.names if n not in params]
        if unknown or missing:
            raise ValueError(f"law {self.name!r}: missing parameters {missing}, unknown parameters {unknown}")
        return np.array([params[n] for n in self.names], dtype=float)

    def inputs_matrix(self, x) -> np.ndarray:
        """Inputs as an [n, k] float array: from a DataFrame or mapping (by column name) or an array."""
        if isinstance(x, pd.DataFrame | Mapping):
            missing = [c for c in self.inputs if c not in x]
            if missing:
                raise ValueError(
                    f"law {self.name!r} needs input columns {list(self.inputs)}; missing {missing}"
                )
            return np.column_stack([np.asarray(x[c], dtype=float) for c in self.inputs])
        matrix = np.asarray(x, dtype=float)
        if matrix.ndim == 1 and len(self.inputs) == 1:
            matrix = matrix[:, None]
        if matrix.ndim != 2 or matrix.shape[1] != len(self.inputs):
            raise ValueError(
                f"law {self.name!r} takes {len(self.inputs)} input columns {list(self.inputs)}; "
                f"got an array of shape {matrix.shape}"
            )
        return matrix

    def __call__(self, x, params: Mapping[str, float]) -> np.ndarray:
        """Evaluate the law at inputs x for a parameter dict."""
        return self.predict(self.inputs_matrix(x), self.vector(params))


def finite_difference_jacobian(predict: PredictFn, lower: np.ndarray, upper: np.ndarray) -> PredictFn:
    """jacobian(x, theta) of `predict` by central differences, kept inside [lower, upper]: [n, P] for theta
    [P], or [S, n, P] for a batch theta [P, S, 1] (see `PredictFn`), all S starts differenced at once."""

    def jacobian(x, theta):
        theta = np.asarray(theta, dtype=float)
        step = np.cbrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(theta))
        columns = []
        for i in range(len(theta)):
            up, down = theta.copy(), theta.copy()
            up[i] = np.minimum(theta[i] + step[i], upper[i])
            down[i] = np.maximum(theta[i] - step[i], lower[i])
            # a batch's differences [S, 1] divide its predictions [S, n] row by row
            columns.append((predict(x, up) - predict(x, down)) / (up[i] - down[i]))
        return np.stack(columns, axis=-1)

    return jacobian


# ----------------------------------------------------------------------------------------------------------
# Univariate and bivariate laws (Ghorbani Eq. 1-2, Zhang Eq. 7, Fernandes Eq. 6)


# The papers' names for `power_law`'s coefficients (Ghorbani Eq. 1, Zhang Eq. 7, Fernandes Eq. 6 all write
# beta (N / N0)^-alpha + L_inf), by the law's names.
POWER_LAW_PAPER_NAMES = {"alpha": "beta", "p": "alpha", "L_inf": "L_inf"}


def power_law(n0: float = 1.0, input_name: str = "N") -> Law:
    """L(N) = alpha (N / n0)^-p + L_inf.

    With n0 = 1 this is Ghorbani Eq. 1 and Fernandes Eq. 6 (their beta = alpha, their alpha = p); with n0 the
    size of a reference model it is Zhang Eq. 7, beta (N / N0)^-alpha + L_inf (their beta = alpha, their
    alpha = p). `input_name="step"` gives the learning-curve law of Fernandes App. G. A normaliser keeps alpha
    of order one, which the default grid assumes.
    """
    if not n0 > 0:
        raise ValueError(f"power_law: n0 must be a positive size (the normaliser of N), not {n0}")

    def predict(x, theta):
        alpha, p, l_inf = theta
        return alpha * (x[:, 0] / n0) ** -p + l_inf

    def jacobian(x, theta):
        alpha, p, _ = theta
        ratio = x[:, 0] / n0
        term = ratio**-p
        return np.stack([term, -alpha * term * np.log(ratio), np.ones_like(term)], axis=-1)

    return Law(
        name=f"power_law(n0={n0:g})",
        inputs=(input_name,),
        parameters=(
            Parameter("alpha", 0.0, np.inf, (0.1, 1.0, 10.0), 1.0),
            Parameter("p", 0.0, 10.0, (0.1, 0.3, 1.0), 0.3),
            Parameter("L_inf", 0.0, np.inf, (0.0, 1.0, 3.0), 1.0),
        ),
        predict=predict,
        jacobian=jacobian,
        batched=True,
    )


def bivariate_law(ne_bar: float, nd_bar: float) -> Law:
    """Ghorbani Eq. 2: L(Ne, Nd) = alpha (Ne_bar / Ne)^pe (Nd_bar / Nd)^pd + L_inf.

    Ne_bar, Nd_bar are the encoder / decoder sizes of the baseline model (their 6L-6L); bounds (0, 10) and the
    default start (0.2, 0.4, 0.6, 1.0) are those of Ghorbani App. E.
    """

    def predict(x, theta):
        alpha, pe, pd, l_inf = theta
        return alpha * (ne_bar / x[:, 0]) ** pe * (nd_bar / x[:, 1]) ** pd + l_inf

    def jacobian(x, theta):
        alpha, pe, pd, _ = theta
        log_e, log_d = np.log(ne_bar / x[:, 0]), np.log(nd_bar / x[:, 1])
        term = np.exp(pe * log_e + pd * log_d)
        return np.stack([term, alpha * term * log_e, alpha * term * log_d, np.ones_like(term)], axis=-1)

    return Law(
        name="ghorbani_bivariate",
        inputs=("Ne", "Nd"),
        parameters=(
            Parameter("alpha", 0.0, 10.0, (0.05, 0.2, 1.0), 0.2),
            Parameter("pe", 0.0, 10.0, (0.1, 0.4, 1.0), 0.4),
            Parameter("pd", 0.0, 10.0, (0.1, 0.6, 1.0), 0.6),
            Parameter("L_inf", 0.0, 10.0, (0.5, 1.0, 2.0), 1.0),
        ),
        predict=predict,
        jacobian=jacobian,
        batched=True,
    )


def bivariate_learning_curve_law(ne_bar: float, nd_bar: float, s0: float) -> Law:
    """Ghorbani Eq. 2 plus a learning-curve term in the training step S, after Kaplan et al. 2020's L(N, S):

        L(Ne, Nd, S) = alpha (Ne_bar / Ne)^pe (Nd_bar / Nd)^pd + beta (S / s0)^-q + L_inf.

    Fitted to every evaluation point of runs that are still learning, its S -> infinity limit is the
    bivariate law itself (`bivariate_law` with the same alpha, pe, pd, L_inf), so capacity is judged apart
    from how far training got. s0 (e.g. the last evaluated step) keeps beta of order one.
    """

    def predict(x, theta):
        alpha, pe, pd, beta, q, l_inf = theta
        capacity = alpha * (ne_bar / x[:, 0]) ** pe * (nd_bar / x[:, 1]) ** pd
        return capacity + beta * (x[:, 2] / s0) ** -q + l_inf

    def jacobian(x, theta):
        alpha, pe, pd, beta, q, _ = theta
        log_e, log_d, log_s = np.log(ne_bar / x[:, 0]), np.log(nd_bar / x[:, 1]), np.log(x[:, 2] / s0)
        capacity = np.exp(pe * log_e + pd * log_d)
        training = np.exp(-q * log_s)
        return np.stack(
            [
                capacity,
                alpha * capacity * log_e,
                alpha * capacity * log_d,
                training,
                -beta * training * log_s,
                np.ones_like(capacity),
            ],
            axis=-1,
        )

    return Law(
        name="bivariate_learning_curve",
        inputs=("Ne", "Nd", "S"),
        parameters=(
            Parameter("alpha", 0.0, 10.0, (0.05, 0.2, 1.0), 0.2),
            Parameter("pe", 0.0, 10.0, (0.1, 0.4, 1.0), 0.4),
            Parameter("pd", 0.0, 10.0, (0.1, 0.6, 1.0), 0.6),
            Parameter("beta", 0.0, 10.0, (0.05, 0.3, 1.0), 0.3),
            Parameter("q", 0.0, 10.0, (0.2, 0.5, 1.0), 0.5),
            Parameter("L_inf", 0.0, 10.0, (0.5, 1.0, 2.0, 3.0), 1.0),
        ),
        predict=predict,
        jacobian=jacobian,
        batched=True,
    )


def chinchilla_law() -> Law:
    """Hoffmann et al.'s L(N, D) = E + A / N^alpha + B / D^beta in Besiroglu et al.'s parameterisation.

    Parameters a, b, e are log A, log B, log E; the grid is Besiroglu et al.'s 4,500-point grid. Bounds are
    generous (none is active at their optimum) and only keep exp() finite. An example of a user-defined law:
    nothing in `nmtscale.laws.fitting` knows about it.
    """

    def predict(x, theta):
        a, b, e, alpha, beta = theta
        return np.exp(a - alpha * np.log(x[:, 0])) + np.exp(b - beta * np.log(x[:, 1])) + np.exp(e)

    def jacobian(x, theta):
        a, b, e, alpha, beta = theta
        log_n, log_d = np.log(x[:, 0]), np.log(x[:, 1])
        model_term, data_term = np.exp(a - alpha * log_n), np.exp(b - beta * log_d)
        constant_term = np.broadcast_to(np.exp(e), model_term.shape)
        return np.stack(
            [model_term, data_term, constant_term, -model_term * log_n, -data_term * log_d], axis=-1
        )

    return Law(
        name="chinchilla",
        inputs=("N", "D"),
        parameters=(
            Parameter("a", -20.0, 60.0, (0.0, 5.0, 10.0, 15.0, 20.0, 25.0), 5.0),
            Parameter("b", -20.0, 60.0, (0.0, 5.0, 10.0, 15.0, 20.0, 25.0), 5.0),
            Parameter("e", -10.0, 10.0, (-1.0, -0.5, 0.0, 0.5, 1.0), 0.5),
            Parameter("alpha", 0.0, 10.0, (0.0, 0.5, 1.0, 1.5, 2.0), 0.5),
            Parameter("beta", 0.0, 10.0, (0.0, 0.5, 1.0, 1.5, 2.0), 0.5),
        ),
        predict=predict,
        jacobian=jacobian,
        batched=True,
    )


def chinchilla_coefficients(params: Mapping[str, float]) -> dict[str, float]:
    """Besiroglu's (a, b, e, alpha, beta) -> Hoffmann's (A, B, E, alpha, beta)."""
    return {
        "A": float(np.exp(params["a"])),
        "B": float(np.exp(params["b"])),
        "E": float(np.exp(params["e"])),
        "alpha": float(params["alpha"]),
        "beta": float(params["beta"]),
    }


# ----------------------------------------------------------------------------------------------------------
# Encoder / decoder allocation (Ghorbani Prop. 1, Fig. 6, Sec. 3)


def optimal_allocation(budget: float, pe: float, pd: float) -> tuple[float, float]:
    """Ghorbani Prop. 1, Eq. 3: (Ne*, Nd*) = (pe, pd) / (pe + pd) * B for a total parameter budget B."""
    _check_exponents(pe, pd)
    return pe / (pe + pd) * budget, pd / (pe + pd) * budget


def alpha_star(alpha: float, pe: float, pd: float, ne_bar: float, nd_bar: float) -> float:
    """Ghorbani Eq. 4: the constant of L_opt(B) = alpha* B^-(pe+pd) + L_inf under optimal allocation."""
    _check_exponents(pe, pd)
    return alpha * (ne_bar * (pe + pd) / pe) ** pe * (nd_bar * (pe + pd) / pd) ** pd


def alpha_sharp(
    alpha: float, pe: float, pd: float, ne_bar: float, nd_bar: float, decoder_fraction
) -> np.ndarray:
    """The constant alpha# of L(B) = alpha# B^-(pe+pd) + L_inf when a fixed fraction Nd/N goes to the decoder.

    Substituting Ne = (1 - r) B, Nd = r B into Eq. 2 gives alpha# = alpha (Ne_bar/(1-r))^pe (Nd_bar/r)^pd
    (Ghorbani Sec. 2.3, Fig. 6 left plots alpha#/alpha*). r = pd / (pe + pd) gives alpha* back.
    """
    r = _fraction(decoder_fraction)
    return alpha * (ne_bar / (1 - r)) ** pe * (nd_bar / r) ** pd


def allocation_penalty(
    alpha: float, pe: float, pd: float, ne_bar: float, nd_bar: float, decoder_fraction, total_params: float
) -> np.ndarray:
    """Ghorbani Fig. 6 right: the additive penalty L - L_opt = (alpha# - alpha*) B^-(pe+pd) at B params."""
    optimum = alpha_star(alpha, pe, pd, ne_bar, nd_bar)
    sharp = alpha_sharp(alpha, pe, pd, ne_bar, nd_bar, decoder_fraction)
    return (sharp - optimum) * total_params ** -(pe + pd)


def scale_factor_for_reducible_loss(
    alpha: float, pe: float, pd: float, ne_bar: float, nd_bar: float, threshold: float, ne: float, nd: float
) -> float:
    """Ghorbani Sec. 3: the factor k by which to scale encoder and decoder of an (ne, nd) model together so
    that the reducible loss alpha (Ne_bar/(k ne))^pe (Nd_bar/(k nd))^pd falls to `threshold`.

    Reducible loss scales as k^-(pe+pd), so k = (R(ne, nd) / threshold)^(1/(pe+pd)); k < 1 means the model is
    already below the threshold. With (ne, nd) = (Ne_bar, Nd_bar) this is the paper's "scale the 6L-6L
    baseline by 2.5 (source-original) or 11 (target-original) to get below 0.05".
    """
    if threshold <= 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    if pe + pd <= 0:
        raise ValueError(f"the exponents must not both be zero (pe={pe}, pd={pd})")
    reducible = alpha * (ne_bar / ne) ** pe * (nd_bar / nd) ** pd
    return float((reducible / threshold) ** (1 / (pe + pd)))


def _check_exponents(pe: float, pd: float) -> None:
    if pe <= 0 or pd <= 0:
        raise ValueError(f"optimal allocation needs positive exponents, got pe={pe}, pd={pd}")


def _fraction(values) -> np.ndarray:
    r = np.asarray(values, dtype=float)
    if np.any((r <= 0) | (r >= 1)):
        raise ValueError(f"decoder fractions Nd/N must lie strictly between 0 and 1, got {values}")
    return r


# ----------------------------------------------------------------------------------------------------------
# Multilingual laws (Fernandes Eq. 7-13)


def joint_law(weights: Sequence[float], n0: float = 1.0, higher_is_better: bool = False) -> Law:
    """Fernandes Eq. 7: L_i(N; p) = beta_p (N/n0)^-alpha + L_inf, one beta per weight, alpha and L_inf shared.

    Inputs are N and p (the task's sampling weight, one of `weights`); parameters are alpha, L_inf and
    "beta[p]" for each weight. A normaliser n0 keeps beta of order one; it cancels in f_i(p).
    With `higher_is_better` (ChrF, BLEURT) the law is Q = Q_inf - beta_p (N/n0)^-alpha, rising to a ceiling.
    """
    weights = tuple(float(w) for w in weights)
    if not weights or len(set(weights)) != len(weights) or not all(0 < w <= 1 for w in weights):
        raise ValueError(f"joint_law needs distinct weights in (0, 1], got {weights}")
    sign = -1.0 if higher_is_better else 1.0
    levels = _level_grid(higher_is_better)
    order = np.argsort(weights)
    sorted_weights = np.asarray(weights)[order]

    def beta_index(p: np.ndarray) -> np.ndarray:
        """Row -> index of its beta parameter (0-based among the betas)."""
        index = np.clip(np.searchsorted(sorted_weights, p), 0, len(weights) - 1)
        unknown = ~np.isclose(sorted_weights[index], p)
        if unknown.any():
            raise ValueError(
                f"joint_law was built for weights {weights}; rows {np.flatnonzero(unknown)} have others"
            )
        return order[index]

    def predict(x, theta):
        alpha, l_inf, betas = theta[0], theta[1], theta[2:]
        return sign * betas[beta_index(x[:, 1])] * (x[:, 0] / n0) ** -alpha + l_inf

    def jacobian(x, theta):
        alpha, betas = theta[0], theta[2:]
        index = beta_index(x[:, 1])
        ratio = x[:, 0] / n0
        term = ratio**-alpha
        jac = np.zeros((len(x), len(theta)))
        jac[:, 0] = -sign * betas[index] * term * np.log(ratio)
        jac[:, 1] = 1.0
        jac[np.arange(len(x)), 2 + index] = sign * term
        return jac

    return Law(
        name="fernandes_joint" + ("_quality" if higher_is_better else ""),
        inputs=("N", "p"),
        parameters=(
            Parameter("alpha", 0.0, 10.0, (0.1, 0.3, 1.0), 0.3),
            Parameter("L_inf", 0.0, np.inf, levels, levels[1]),
            *(Parameter(f"beta[{w:g}]", 0.0, np.inf, (1.0,), 1.0) for w in weights),
        ),
        predict=predict,
        jacobian=jacobian,
    )


def effective_fraction(params: Mapping[str, float]) -> pd.DataFrame:
    """Fernandes Eq. 10, f_i(p) = (beta_1 / beta_p)^(1/alpha), from a `joint_law` fit that includes p = 1.

    Returns a tidy frame with columns p and f. The effective parameter count (Eq. 9) is f * N.
    """
    betas = {float(k[5:-1]): v for k, v in params.items() if k.startswith("beta[")}
    if 1.0 not in betas:
        raise ValueError(
            f"effective fractions need beta[1] (a single-task fit); have weights {sorted(betas)}"
        )
    ps = np.array(sorted(betas))
    f = (betas[1.0] / np.array([betas[p] for p in ps])) ** (1 / params["alpha"])
    return pd.DataFrame({"p": ps, "f": f})


def f_hat(p, c1: float, c2: float, c3: float) -> np.ndarray:
    """Fernandes Eq. 12: f_hat(p) = p + c1 p^c2 (1 - p)^c3, equal to 1 at p = 1 and 0 at p = 0."""
    p = np.asarray(p, dtype=float)
    return p + c1 * p**c2 * (1 - p) ** c3


def f_hat_linear(p, c1: float) -> np.ndarray:
    """Fernandes Eq. 13: f_hat(p) = c1 (p - 1) + 1."""
    return c1 * (np.asarray(p, dtype=float) - 1) + 1


def weighted_law(
    form: str = "eq12",
    n0: float = 1.0,
    higher_is_better: bool = False,
    asymptote_starts: Sequence[float] = (),
) -> Law:
    """Fernandes Eq. 11: L_i(N; p) = beta_1 (f_hat(p) N / n0)^-alpha + L_inf, for any weight p in (0, 1].

    `form` picks f_hat: "eq12" (p + c1 p^c2 (1-p)^c3) or "linear" (Eq. 13, c1 (p-1) + 1). Fitted on runs with
    a few weights, it predicts unseen weights and, with `tradeoff_frontier`, the whole frontier for a size.
    `higher_is_better` gives the quality form Q_inf - beta_1 (f_hat N / n0)^-alpha (ChrF, Fernandes Fig. 8).
    `asymptote_starts` adds start values of L_inf to the fixed grid's, e.g. at the scale of the data: from a
    ceiling of tens of points every start can end in a poor minimum when the scores are a few points.
    """
    if form not in ("eq12", "linear"):
        raise ValueError(f"weighted_law form must be 'eq12' or 'linear', got {form!r}")
    sign = -1.0 if higher_is_better else 1.0
    levels = _level_grid(higher_is_better)
    asymptote_levels = tuple(sorted({*levels[1:], *(float(a) for a in asymptote_starts)}))

    def fraction_and_grads(p, c):
        if form == "linear":
            return f_hat_linear(p, c[0]), (p - 1)[:, None]
        c1, c2, c3 = c
        bump = p**c2 * (1 - p) ** c3
        with np.errstate(divide="ignore", invalid="ignore"):
            grads = np.column_stack([bump, c1 * bump * np.log(p), c1 * bump * np.log1p(-p)])
        return p + c1 * bump, np.nan_to_num(grads)  # at p = 1 the bump and its gradients vanish

    def predict(x, theta):
        beta_1, alpha, l_inf = theta[:3]
        f, _ = fraction_and_grads(x[:, 1], theta[3:])
        return sign * beta_1 * (f * x[:, 0] / n0) ** -alpha + l_inf

    def jacobian(x, theta):
        beta_1, alpha, _ = theta[:3]
        f, f_grads = fraction_and_grads(x[:, 1], theta[3:])
        scaled = f * x[:, 0] / n0
        term = scaled**-alpha
        d_f = sign * beta_1 * -alpha * term / f
        return np.column_stack(
            [sign * term, -sign * beta_1 * term * np.log(scaled), np.ones_like(term), d_f[:, None] * f_grads]
        )

    # c1 >= 0 keeps f_hat >= p > 0 (no negative transfer, as in every fit of Fernandes et al.); a law that
    # must allow interference needs another f_hat, not a negative one that leaves (f_hat N)^-alpha undefined.
    c_params = (
        (Parameter("c1", 0.0, 1.0, (0.2, 0.8), 0.5),)
        if form == "linear"
        else (
            Parameter("c1", 0.0, 10.0, (0.1, 1.0), 0.5),
            Parameter("c2", 0.01, 10.0, (1.0,), 1.0),
            Parameter("c3", 0.01, 10.0, (1.0,), 1.0),
        )
    )
    return Law(
        name=f"fernandes_weighted_{form}" + ("_quality" if higher_is_better else ""),
        inputs=("N", "p"),
        parameters=(
            Parameter("beta_1", 0.0, np.inf, (0.3, 3.0), 1.0),
            Parameter("alpha", 0.0, 10.0, (0.1, 0.5), 0.3),
            Parameter("L_inf", 0.0, np.inf, asymptote_levels, levels[1]),
            *c_params,
        ),
        predict=predict,
        jacobian=jacobian,
    )


def tradeoff_frontier(
    first: tuple[Law, Mapping[str, float]],
    second: tuple[Law, Mapping[str, float]],
    n_params,
    weights=None,
) -> pd.DataFrame:
    """The two-task performance trade-off frontier (Fernandes Fig. 7 right, Fig. 8 right) at model sizes N.

    `first` and `second` are (law, params) for each task, each law taking (N, own weight): a `weighted_law`
    fit, or a `joint_law` fit evaluated at its own weights. Task one gets weight p, task two 1 - p. Returns a
    tidy frame with columns N, p, first, second.
    """
    ps = np.linspace(0.05, 0.95, 19) if weights is None else np.asarray(weights, dtype=float)
    grid = pd.DataFrame({"N": np.atleast_1d(np.asarray(n_params, dtype=float))}).merge(
        pd.DataFrame({"p": ps}), how="cross"
    )
    law_1, params_1 = first
    law_2, params_2 = second
    grid["first"] = law_1(np.column_stack([grid["N"], grid["p"]]), params_1)
    grid["second"] = law_2(np.column_stack([grid["N"], 1 - grid["p"]]), params_2)
    return grid


def _level_grid(higher_is_better: bool) -> tuple[float, ...]:
    """Start values for the asymptote: a loss floor of a few nats, or a quality ceiling of tens of points."""
    return (30.0, 60.0, 100.0) if higher_is_better else (0.0, 1.0, 3.0)
