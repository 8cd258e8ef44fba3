"""Chapter 4's analysis: the tables and fits the chapter reads."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nmtscale import laws
from nmtscale.laws import fitting, uncertainty
from nmtscale.laws.fitting import Fit
from nmtscale.record import RunSummary
from nmtscale.studies import sweeps
from nmtscale.studies.multilingual.plan import CohortRun

# A prediction within this share of the measured loss is one the paper calls captured: its perturbation size
# (footnote 5), the tolerance of every "predicts within 1%" claim (held-out weights, three-pair models, chrF).
RELATIVE_TOLERANCE = 0.01

F_HAT_FORMS = ("eq12", "linear")

# The value of c1 at which each f_hat form is p itself: the bound of c1 in `laws.weighted_law` that keeps
# f_hat >= p, a mixture's direction worth at least its weight's share of a single-direction model.
F_HAT_FLOOR_C1 = {"eq12": 0.0, "linear": 1.0}

# Where the Huber loss on log residuals bends for every fit of this chapter: the 1% loss noise of footnote 5.
# At the project's default (Besiroglu's 1e-3) every residual of these fits lies in the linear zone, so the fit
# is a least-absolute-deviations fit, and a beta fitted to an even number of points is free between the
# median pair of its residuals: a change of the losses in the 13th digit moves f(p) by up to a tenth
# (`rounding_sensitivity`, which the chapter prints), which is how the same records gave different f on two
# CPUs. Residuals within the noise weigh quadratically here, and every coefficient has one best value.
HUBER_DELTA = uncertainty.PERTURBATION_SIGMA


# The chapter parameters (params/04_multilingual_laws/<scale>.yaml) that decide which runs it trains;
# "chapter1" holds chapter 1's, loaded by the chapter with its `chapter1_overrides` (the training recipe).
PARAMETER_NAMES = (
    "seed",
    "cohorts",
    "single_direction_share",
    "all_pairs_singles",
    "tagged_singles",
    "sizes",
    "head_dim",
    "ff_ratio",
    "three_pair_directions",
    "three_pair_weights",
    "three_pair_sizes",
    "tokenizer_directions",
    "vocab_size",
    "character_coverage",
    "max_train_pairs",
    "max_test_pairs",
    "test_sets",
    "chapter1",
    "dropout",
    "decode",
    "max_decode_sentences",
    "seed_repeats",
    "budget_check",
)


def corrected_loss(
    curve: Sequence[tuple[float, float]], steps: int, factor: float, start_fraction: float
) -> float:
    """Fernandes App. G: the loss a run would reach after `factor` x `steps` updates, by a power law in the
    step fitted to its evaluations from `start_fraction` x `steps` on (`fitting.extrapolate_learning_curve`).
    NaN when fewer than four evaluations remain, too few for the three coefficients and a residual."""
    points = [(s, loss) for s, loss in curve if s >= start_fraction * steps and s > 0]
    if len(points) < 4:
        return math.nan
    step_values, losses = np.array(points, dtype=float).T
    prediction, _ = fitting.extrapolate_learning_curve(step_values, losses, factor * steps)
    return prediction


def run_table(
    plan: Sequence[CohortRun],
    summaries: Sequence[RunSummary],
    correct_below: float = 0.1,
    correction_factor: float = 2.5,
    correction_start: float = 0.25,
) -> pd.DataFrame:
    """One row per run, trained direction and test set.

    Columns: run_id, cohort, pairs (directions in the cohort), first and second (its first two directions),
    p (the first direction's weight), mixture (the trained directions' weights, '0.1/0.9'), size, d_model,
    layers, N (non-embedding parameters, the paper's corrected count), direction, weight (this direction's own
    weight), tokens (its target tokens trained on), test_set, loss (final), chrf (when decoded), status,
    reason (why a failed run failed; its loss is NaN), corrected (whether App. G's correction applies:
    0 < weight <= `correct_below`), loss_corrected (the extrapolated loss at `correction_factor` x the steps
    where it applies, else the loss), steps (the run's budget), above_minimum (its last held-out loss above
    its lowest, `sweeps.above_minimum`: > 0 once it overfits), wall_time_s. A run shared by two cohorts (a
    single-direction model) has a row in each.
    """
    rows = []
    for planned, summary in sweeps.planned_summaries(plan, summaries, lambda p: f"{p.cohort} {p.size}"):
        translation = summary.translation or {}
        for direction, weight in zip(planned.directions, planned.weights, strict=True):
            for key in summary.test_set_keys():
                if not key.startswith(f"{direction}/"):
                    continue
                loss = summary.final_loss.get(key, math.nan)
                corrected = 0 < weight <= correct_below
                curve = [(point["step"], point["test_loss"][key]) for point in summary.curves]
                rows.append(
                    {
                        "run_id": summary.run_id,
                        "cohort": planned.cohort,
                        "pairs": len(planned.cohort_directions),
                        "first": planned.cohort_directions[0],
                        "second": planned.cohort_directions[1],
                        "p": planned.p,
                        "mixture": "/".join(f"{w:g}" for w in planned.weights),
                        "size": planned.size,
                        "d_model": planned.d_model,
                        "layers": planned.layers,
                        "N": summary.n_params_non_embedding,
                        "direction": direction,
                        "weight": weight,
                        "tokens": summary.tokens_seen.get(direction, 0),
                        "test_set": key.split("/", 1)[1],
                        "loss": loss if summary.finished else math.nan,
                        "chrf": translation.get(key, {}).get("chrf", math.nan),
                        "status": summary.status,
                        "reason": summary.reason,
                        "corrected": corrected,
                        "loss_corrected": (
                            corrected_loss(curve, summary.steps, correction_factor, correction_start)
                            if corrected and summary.finished
                            else (loss if summary.finished else math.nan)
                        ),
                        "steps": summary.steps,
                        "above_minimum": sweeps.above_minimum(summary.curves, key),
                        "wall_time_s": summary.wall_time_s,
                    }
                )
    return pd.DataFrame(rows)


def share_costs(table: pd.DataFrame, all_pairs: pd.DataFrame) -> pd.DataFrame:
    """What training on its share of the cohort's English sentences costs a single-direction model: one row
    per cohort, direction, size and test set that both `table` (the chapter's `run_table`, its
    single-direction rows) and `all_pairs` (the `run_table` of `all_pairs_plan`) have, with the target
    tokens and final loss of each and `cost`, the loss on the share minus the loss on all pairs (> 0: the
    share is worse)."""
    merged = _beside_twins(table, all_pairs, "share", "all_pairs")
    return merged.assign(cost=merged["loss_share"] - merged["loss_all_pairs"])


def tag_costs(table: pd.DataFrame, tagged: pd.DataFrame) -> pd.DataFrame:
    """What the target-language tag on its sources costs a single-direction model: one row per cohort,
    direction, size and test set that both `table` (the chapter's `run_table`, its single-direction rows,
    untagged) and `tagged` (the `run_table` of `tagged_singles_plan`) have, with the target tokens and final
    loss of each and `cost`, the loss with the tag minus the loss without (> 0: the tag is worse)."""
    merged = _beside_twins(table, tagged, "untagged", "tagged")
    return merged.assign(cost=merged["loss_tagged"] - merged["loss_untagged"])


def mixture_gaps(table: pd.DataFrame, weight: float) -> pd.DataFrame:
    """How far a direction trained at own weight `weight` in a mixture trails its single-direction model:
    one row per cohort, direction, size and test set that has both, with N, the target tokens and final loss
    of each (suffixed `_mixture` and `_single`) and `gap`, the mixture's loss minus the single model's (> 0:
    the mixture is worse). Set beside `tag_costs`, it says how much of a gap the tag could explain."""
    keys = ["cohort", "direction", "size", "test_set"]
    columns = [*keys, "N", "tokens", "loss"]
    mixture = table[np.isclose(table["weight"], weight)][columns]
    singles = table[table["weight"] == 1.0][[*keys, "tokens", "loss"]]
    merged = mixture.merge(singles, on=keys, suffixes=("_mixture", "_single"))
    merged = merged.assign(gap=merged["loss_mixture"] - merged["loss_single"])
    return merged.sort_values(["cohort", "direction", "test_set", "N"]).reset_index(drop=True)


def seed_spreads(noise_table: pd.DataFrame) -> pd.DataFrame:
    """How far a model's final loss moves with the seed: one row per cohort, direction, own weight, size and
    test set of the seed repeats' `run_table` (`noise_table`, the chapter's seed included), with N, the number
    of seeds, the lowest and highest loss and `spread`, their difference (nats)."""
    keys = ["cohort", "direction", "weight", "size", "test_set"]
    spreads = (
        noise_table.dropna(subset=["loss"])
        .groupby(keys, sort=False)
        .agg(
            N=("N", "first"), seeds=("run_id", "nunique"), loss_min=("loss", "min"), loss_max=("loss", "max")
        )
        .reset_index()
    )
    return spreads.assign(spread=spreads["loss_max"] - spreads["loss_min"])


def _beside_twins(table: pd.DataFrame, twins: pd.DataFrame, own: str, twin: str) -> pd.DataFrame:
    """The single-direction rows of `table` beside their `twins` (the same models trained again one way
    differently), matched by cohort, direction, size and test set: N, and tokens and loss of each, suffixed
    `_<own>` and `_<twin>`."""
    keys = ["cohort", "direction", "size", "test_set"]
    columns = [*keys, "N", "tokens", "loss"]
    if not len(twins):
        return pd.DataFrame(
            columns=[*keys, "N", *(f"{m}_{s}" for m in ("tokens", "loss") for s in (own, twin))]
        )
    singles = table[table["weight"] == 1.0][columns]
    merged = singles.merge(twins[columns].drop(columns="N"), on=keys, suffixes=(f"_{own}", f"_{twin}"))
    return merged.sort_values(["cohort", "direction", "test_set", "N"]).reset_index(drop=True)


def learning_curves(plan: Sequence[CohortRun], summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """Tidy learning curves: cohort, p, size, direction, weight, test_set, step, loss (trained directions)."""
    rows = []
    for planned, summary in zip(plan, summaries, strict=True):
        for direction, weight in zip(planned.directions, planned.weights, strict=True):
            for point in summary.curves:
                for key, loss in point["test_loss"].items():
                    if key.startswith(f"{direction}/"):
                        rows.append(
                            {
                                "cohort": planned.cohort,
                                "p": planned.p,
                                "size": planned.size,
                                "direction": direction,
                                "weight": weight,
                                "test_set": key.split("/", 1)[1],
                                "step": point["step"],
                                "loss": loss,
                            }
                        )
    return pd.DataFrame(rows)


def correction_check(
    table: pd.DataFrame, curves: pd.DataFrame, long_table: pd.DataFrame, start_fraction: float
) -> pd.DataFrame:
    """App. G's extrapolation against training: for every model the budget check trained for longer
    (`long_table`, its `run_table`), the chapter's run of that model (`table`, its learning curve in
    `curves` from `learning_curves`) extrapolated by App. G's power law in the step (`corrected_loss`, fitted
    from `start_fraction` of training) to the longer budget, beside the loss the longer run measured.
    Columns: cohort, direction, test_set, p, weight, size, steps, long_steps, loss (at the chapter's
    budget), extrapolated, measured, error (extrapolated - measured: > 0 where the extrapolation promises
    less than training gave)."""
    keys = ["cohort", "p", "size", "direction", "test_set"]
    columns = ["cohort", "direction", "test_set", "p", "weight", "size", "steps", "long_steps", "loss"]
    if long_table.empty:  # no budget check (its run table then has no columns either)
        return pd.DataFrame(columns=[*columns, "extrapolated", "measured", "error"])
    chapter = table[[*keys, "weight", "steps", "loss"]].drop_duplicates(keys)
    longer = long_table[[*keys, "steps", "loss"]].rename(columns={"steps": "long_steps", "loss": "measured"})
    rows = chapter.merge(longer.drop_duplicates(keys), on=keys)
    by_run = dict(list(curves.groupby(keys)))
    extrapolated = [
        corrected_loss(
            list(zip(by_run[key]["step"], by_run[key]["loss"], strict=True)),
            steps,
            long_steps / steps,
            start_fraction,
        )
        if key in by_run
        else math.nan
        for key, steps, long_steps in zip(
            rows[keys].itertuples(index=False, name=None), rows["steps"], rows["long_steps"], strict=True
        )
    ]
    rows = rows.assign(extrapolated=extrapolated)
    return rows.assign(error=rows["extrapolated"] - rows["measured"])[
        [*columns, "extrapolated", "measured", "error"]
    ].reset_index(drop=True)


GROUP = ["cohort", "direction", "test_set"]


def two_pair_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the two-direction cohorts (App. H's three-direction models are predicted, never fitted)."""
    return table[table["pairs"] == 2]


def own_weight_inputs(rows: pd.DataFrame) -> pd.DataFrame:
    """The inputs (N, p) of the multilingual laws, p being each row's own weight (not the cohort's p)."""
    return pd.DataFrame({"N": rows["N"].to_numpy(), "p": rows["weight"].to_numpy()})


def per_weight_fits(
    table: pd.DataFrame,
    y: str = "loss",
    n0: float = 1.0,
    n_samples: int = 50,
    seed: int = 0,
    workers: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fernandes Eq. 6: a power law in N for every cohort, direction, test set and own weight, with the
    perturbation uncertainty of footnote 5 (refits on y + 1% Gaussian noise, each restarted from the law's
    start grid), the refits shared out over `workers` processes.

    Returns (coefficients, curves). coefficients: one row per fit and coefficient in the paper's names (beta,
    alpha, L_inf) with estimate, std_error, the fit's r2, rmse and number of points, and `undetermined`: ""
    when the data determine the coefficient, else why not (the fit's Jacobian is singular, or its profile is
    flat against the perturbation noise, 1% of the mean loss: `fitting.flat_profile`). curves: each fit
    evaluated on a grid of N (columns cohort, direction, test_set, weight, N, y).
    """
    law = laws.power_law(n0=n0)
    keys, fits = [], []
    for (cohort, direction, test_set, weight), group in table.dropna(subset=[y]).groupby([*GROUP, "weight"]):
        if len(group) >= len(law.parameters):
            keys.append({"cohort": cohort, "direction": direction, "test_set": test_set, "weight": weight})
            fits.append(fitting.fit_multistart(law, group["N"], group[y], HUBER_DELTA))
    # Each refit restarts from a third of the start grid, one start at a time: on four points the batched
    # optimiser's fixed cost is ten times that of scipy's L-BFGS-B, and warm-started refits stay in the
    # estimate's valley and understate the spread about thirtyfold (measured on a 4-size fit).
    spreads = uncertainty.restarted_in_workers(
        fits,
        [(laws.power_law, (n0,))] * len(fits),
        "perturbation",
        n_samples,
        seed,
        workers=workers,
        start_stride=3,
        batched_refits=False,
        delta=HUBER_DELTA,
    )
    rows, curves = [], []
    for key, fit, spread in zip(keys, fits, spreads, strict=True):
        noise = uncertainty.PERTURBATION_SIGMA * float(np.mean(fit.y))
        for coefficient in spread.coefficients().itertuples():
            undetermined = (
                fit.message if not fit.determined else fitting.flat_profile(fit, coefficient.parameter, noise)
            )
            rows.append(
                {
                    **key,
                    "parameter": laws.POWER_LAW_PAPER_NAMES[coefficient.parameter],
                    "estimate": coefficient.estimate,
                    "std_error": coefficient.std_error,
                    "r2": fit.diagnostics.r2,
                    "rmse": fit.diagnostics.rmse,
                    "points": len(fit.y),
                    "undetermined": undetermined,
                }
            )
        grid = size_grid(fit.x[:, 0])
        curves.append(pd.DataFrame({**key, "N": grid, "y": fit.predict(grid)}))
    return pd.DataFrame(rows), pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()


def size_grid(n_params, n_points: int = 40) -> np.ndarray:
    """A log-spaced grid over the range of model sizes, for drawing fitted laws."""
    n_params = np.asarray(n_params, dtype=float)
    return np.geomspace(n_params.min(), n_params.max(), n_points)


def max_pairwise_z(values: np.ndarray, errors: np.ndarray) -> float:
    """The largest difference between two of `values` in units of their combined standard error
    (sqrt(e_i^2 + e_j^2)); 0 for equal values, inf for different values without error."""
    gaps = np.abs(values[:, None] - values[None, :])
    scale = np.sqrt(errors[:, None] ** 2 + errors[None, :] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(gaps > 0, gaps / scale, 0.0)
    return float(np.nanmax(z))


def flatness(coefficients: pd.DataFrame) -> pd.DataFrame:
    """How much each coefficient of the per-weight fits moves with the weight, against its uncertainty.

    Per cohort, direction, test set and coefficient: the largest pairwise difference between weights divided
    by the combined standard error of the pair (`max_z`; the paper: alpha and L_inf "within two standard
    deviations of each other", beta not), the max / min ratio of the estimates, and `undetermined`, the
    number of weights whose data leave the coefficient free (`per_weight_fits`): a coefficient free at some
    weight can sit "within two standard deviations" of anything, so such a group tests no flatness.
    """
    rows = []
    for key, group in coefficients.groupby([*GROUP, "parameter"]):
        estimate = group["estimate"].to_numpy()
        low, high = estimate.min(), estimate.max()
        rows.append(
            {
                **dict(zip([*GROUP, "parameter"], key, strict=True)),
                "weights": len(group),
                "max_z": max_pairwise_z(estimate, group["std_error"].to_numpy())
                if len(group) > 1
                else math.nan,
                "ratio": float(high / low) if low > 0 else math.inf,
                "undetermined": int((group["undetermined"] != "").sum()),
            }
        )
    return pd.DataFrame(rows)


@dataclass
class JointFit:
    """Fernandes Eq. 7 fitted to one cohort, direction and test set, and its effective fractions."""

    cohort: str
    direction: str
    test_set: str
    fit: Fit
    points: pd.DataFrame  # the fitted rows (N, weight, y)
    fractions: pd.DataFrame  # p, f, std_error, lower, upper (Eq. 10 from perturbed refits)


def joint_fits(
    table: pd.DataFrame,
    y: str = "loss",
    n0: float = 1.0,
    n_samples: int = 50,
    seed: int = 0,
    workers: int = 1,
    delta: float = HUBER_DELTA,
) -> list[JointFit]:
    """Fernandes Eq. 7 (one beta per weight, alpha and L_inf shared) per cohort, direction and test set, with
    f_i(p) (Eq. 10) and its perturbation spread (none with `n_samples` 0), the refits shared out over
    `workers` processes; `delta`: where the fits' Huber loss bends. Groups without the single-direction model
    (weight 1) are skipped: f is defined against it."""
    keys, groups, factories, fits = [], [], [], []
    for key, group in table.dropna(subset=[y]).groupby(GROUP):
        weights = [float(w) for w in sorted(group["weight"].unique())]
        if 1.0 not in weights or len(group) < len(weights) + 2:
            continue
        keys.append(key)
        groups.append(group)
        factories.append((laws.joint_law, (weights, n0)))
        fits.append(
            fitting.fit_multistart(laws.joint_law(weights, n0), own_weight_inputs(group), group[y], delta)
        )
    spreads = (
        uncertainty.restarted_in_workers(
            fits, factories, "perturbation", n_samples, seed, workers=workers, delta=delta
        )
        if n_samples
        else [None] * len(fits)
    )
    joints = []
    for key, group, fit, spread in zip(keys, groups, fits, spreads, strict=True):
        fractions = laws.effective_fraction(fit.params)
        if spread is None:
            fractions = fractions.assign(std_error=math.nan, lower=math.nan, upper=math.nan)
        else:
            draws = pd.concat(
                [laws.effective_fraction(sample).assign(draw=d) for d, sample in spread.samples.iterrows()]
            )
            stats = draws.groupby("p")["f"].agg(
                std_error="std", lower=lambda f: f.quantile(0.025), upper=lambda f: f.quantile(0.975)
            )
            fractions = fractions.merge(stats.reset_index(), on="p")
        points = group[["N", "weight", y]].rename(columns={y: "y"}).reset_index(drop=True)
        joints.append(JointFit(*key, fit, points, fractions))
    return joints


def rounding_sensitivity(
    table: pd.DataFrame,
    y: str = "loss",
    n0: float = 1.0,
    deltas: Sequence[float] = (fitting.BESIROGLU_HUBER_DELTA, HUBER_DELTA),
    relative_changes: Sequence[float] = (-1e-13, 1e-13, 3e-13),
) -> pd.DataFrame:
    """How far the effective fractions of `joint_fits` move when every loss changes by one of
    `relative_changes`, about the rounding in which two CPUs' executions differ, for each Huber bend in
    `deltas`: one row per delta with the largest |change of f| over the changes, cohorts, directions, test
    sets and weights, and where it is."""
    rows = []
    for delta in deltas:
        fractions = [
            effective_fractions(
                joint_fits(table.assign(**{y: table[y] * (1 + change)}), y, n0, 0, delta=delta)
            )
            for change in (0.0, *relative_changes)
        ]
        change = pd.concat([(f["f"] - fractions[0]["f"]).abs() for f in fractions[1:]], axis=1).max(axis=1)
        worst = fractions[0].loc[change.idxmax()].to_dict()
        rows.append(
            {
                "delta": delta,
                "max_f_change": float(change.max()),
                "where": "{direction} at p = {p:g} on {test_set} ({cohort})".format(**worst),
            }
        )
    return pd.DataFrame(rows)


def joint_curves(joints: Sequence[JointFit]) -> pd.DataFrame:
    """Every joint fit evaluated on a grid of N at each of its weights, with the reducible part y - L_inf
    (Fig. 3's log-log view): columns cohort, direction, test_set, weight, N, y, reducible."""
    frames = []
    for joint in joints:
        grid = size_grid(joint.points["N"])
        for weight in sorted(joint.points["weight"].unique()):
            y = joint.fit.predict(pd.DataFrame({"N": grid, "p": weight}))
            frames.append(
                pd.DataFrame(
                    {
                        "cohort": joint.cohort,
                        "direction": joint.direction,
                        "test_set": joint.test_set,
                        "weight": weight,
                        "N": grid,
                        "y": y,
                        "reducible": y - joint.fit.params["L_inf"],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def joint_vs_per_weight(joints: Sequence[JointFit], n0: float = 1.0) -> pd.DataFrame:
    """Eq. 7 against the per-weight fits of Eq. 6 on the same points: coefficients, R^2, RMSE, max dev."""
    law = laws.power_law(n0=n0)
    rows = []
    for joint in joints:
        per_weight = np.empty(len(joint.points))
        n_fits = 0
        for _, group in joint.points.groupby("weight"):
            if len(group) >= len(law.parameters):
                fit = fitting.fit_multistart(law, group["N"], group["y"], HUBER_DELTA)
                per_weight[group.index] = fit.predict(group["N"])
            else:  # too few sizes for Eq. 6: count the points as fitted exactly, which flatters Eq. 6
                per_weight[group.index] = group["y"]
            n_fits += 1
        separate = fitting.diagnose(joint.points["y"], per_weight)
        together = joint.fit.diagnostics
        rows.append(
            {
                "cohort": joint.cohort,
                "direction": joint.direction,
                "test_set": joint.test_set,
                "points": len(joint.points),
                "eq6_coefficients": n_fits * len(law.parameters),
                "eq7_coefficients": len(joint.fit.params),
                "eq6_r2": separate.r2,
                "eq7_r2": together.r2,
                "eq6_rmse": separate.rmse,
                "eq7_rmse": together.rmse,
                "eq7_max_dev": together.max_abs_deviation,
                "alpha": joint.fit.params["alpha"],
                "L_inf": joint.fit.params["L_inf"],
            }
        )
    return pd.DataFrame(rows)


def effective_fractions(joints: Sequence[JointFit]) -> pd.DataFrame:
    """f_i(p) of every joint fit as one tidy frame (cohort, direction, test_set, p, f, std_error, lower,
    upper)."""
    return pd.concat(
        [j.fractions.assign(cohort=j.cohort, direction=j.direction, test_set=j.test_set) for j in joints],
        ignore_index=True,
    )


def size_fractions(coefficients: pd.DataFrame, table: pd.DataFrame, y: str, n0: float) -> pd.DataFrame:
    """f_i(p) measured at each model size, without assuming it is size-independent (Fernandes Eq. 10 does):
    the size N_eff at which the single-direction law (the weight-1 fit of `per_weight_fits`,
    ``beta (N / n0)^-alpha + L_inf``) reaches a mixture model's loss, over that model's N.

    One row per cohort, direction, test set, own weight below 1 and size: N, loss, f and std_error, the
    spread of f from a 1% perturbation of the loss (footnote 5: df / f = 0.01 L / (alpha (L - L_inf))).
    Groups whose weight-1 fit leaves alpha or L_inf undetermined, and losses at or below L_inf (no finite
    N_eff), are left out."""
    single = coefficients[np.isclose(coefficients["weight"], 1.0)]
    rows = []
    for key, law in single.groupby(GROUP):
        if (law["undetermined"] != "").any():
            continue
        c = law.set_index("parameter")["estimate"]
        where = dict(zip(GROUP, key, strict=True))
        mixed = rows_where(table.dropna(subset=[y]), **where)
        mixed = mixed[(mixed["weight"] > 0) & (mixed["weight"] < 1) & (mixed[y] > c["L_inf"])]
        for row in mixed.itertuples():
            loss = getattr(row, y)
            reducible = loss - c["L_inf"]
            f = n0 * (reducible / c["beta"]) ** (-1 / c["alpha"]) / row.N
            error = f * uncertainty.PERTURBATION_SIGMA * loss / (c["alpha"] * reducible)
            rows.append(
                {
                    **where,
                    "weight": row.weight,
                    "size": row.size,
                    "N": row.N,
                    "loss": loss,
                    "f": f,
                    "std_error": error,
                }
            )
    columns = [*GROUP, "weight", "size", "N", "loss", "f", "std_error"]
    return pd.DataFrame(rows, columns=columns)


@dataclass
class WeightedFit:
    """Fernandes Eq. 11 with f_hat of Eq. 12 or 13, fitted on some weights and tested on the others."""

    cohort: str
    direction: str
    test_set: str
    form: str
    fit: Fit
    predictions: pd.DataFrame  # every row of the group: N, weight, y, predicted, held_out


def weighted_fits(
    table: pd.DataFrame,
    fit_weights: Sequence[float],
    y: str = "loss",
    n0: float = 1.0,
    forms: Sequence[str] = F_HAT_FORMS,
    higher_is_better: bool = False,
) -> list[WeightedFit]:
    """Eq. 11 per cohort, direction, test set and f_hat form, fitted on the rows whose own weight is in
    `fit_weights` (which must include 1, the single-direction model) and predicting every row. A quality
    (`higher_is_better`) fit also starts its ceiling at 1.5 and 3 times the best fitted score, so that
    scores of a few points are not fitted only from ceilings of tens."""
    if not any(math.isclose(w, 1.0) for w in fit_weights):
        raise ValueError(f"fit_weights {list(fit_weights)} must include 1, the single-direction model")
    fits = []
    for (cohort, direction, test_set), group in table.dropna(subset=[y]).groupby(GROUP):
        in_fit = np.isin(np.round(group["weight"].to_numpy(), 9), np.round(np.asarray(fit_weights, float), 9))
        x = own_weight_inputs(group)
        top = float(group[y][in_fit].max())
        ceilings = (1.5 * top, 3.0 * top) if higher_is_better and top > 0 else ()
        for form in forms:
            law = laws.weighted_law(form, n0=n0, higher_is_better=higher_is_better, asymptote_starts=ceilings)
            if in_fit.sum() < len(law.parameters) or group["weight"][in_fit].nunique() < 2:
                continue  # f_hat needs the single-direction model and at least one mixture weight
            fit = fitting.fit_multistart(law, x[in_fit], group[y][in_fit], HUBER_DELTA)
            predictions = pd.DataFrame(
                {
                    "N": group["N"].to_numpy(),
                    "size": group["size"].to_numpy(),
                    "weight": group["weight"].to_numpy(),
                    "y": group[y].to_numpy(),
                    "predicted": fit.predict(x),
                    "held_out": ~in_fit,
                }
            )
            fits.append(WeightedFit(cohort, direction, test_set, form, fit, predictions))
    return fits


def held_out_errors(fits: Sequence[WeightedFit]) -> pd.DataFrame:
    """Per weighted fit: in-sample RMSE and the errors on the held-out weights (mean predicted minus measured,
    mean and largest absolute, largest relative)."""
    rows = []
    for wf in fits:
        frame = wf.predictions
        error = frame["predicted"] - frame["y"]
        held = frame["held_out"]
        rows.append(
            {
                "cohort": wf.cohort,
                "direction": wf.direction,
                "test_set": wf.test_set,
                "form": wf.form,
                **{k: v for k, v in wf.fit.params.items() if k.startswith("c")},
                "fit_rmse": float(np.sqrt(np.mean(error[~held] ** 2))),
                "held_out_points": int(held.sum()),
                "held_out_mean_error": float(error[held].mean()) if held.any() else math.nan,
                "held_out_mae": float(np.abs(error[held]).mean()) if held.any() else math.nan,
                "held_out_max_error": float(np.abs(error[held]).max()) if held.any() else math.nan,
                "held_out_max_rel_error": float((np.abs(error) / frame["y"])[held].max())
                if held.any()
                else math.nan,
            }
        )
    return pd.DataFrame(rows)


def at_weight_floor(held_out: pd.DataFrame, tol: float = 1e-6) -> pd.Series:
    """Per row of `held_out_errors`: whether its f_hat sits at its floor f_hat(p) = p (c1 within `tol` of
    `F_HAT_FLOOR_C1`). Such a fit cannot follow a direction whose measured f(p) lies below p: it predicts a
    held-out weight's loss as that of a single-direction model p times as large, too low wherever f < p."""
    floor = held_out["form"].map(F_HAT_FLOOR_C1)
    if floor.isna().any():
        unknown = sorted(set(held_out["form"][floor.isna()]))
        raise ValueError(f"held_out: f_hat form(s) {unknown} have no floor; known: {sorted(F_HAT_FLOOR_C1)}")
    return (held_out["c1"] - floor).abs() <= tol


def floor_summary(held_out: pd.DataFrame) -> dict[str, float]:
    """How many weighted fits sit at their f_hat floor (`at_weight_floor`), how many of those predict their
    held-out weights too low on average, and the worst held-out relative error of those at the floor and of
    the others (nan where a group is empty)."""
    at_floor = at_weight_floor(held_out)
    errors = held_out["held_out_max_rel_error"]
    return {
        "fits": len(held_out),
        "floor_fits": int(at_floor.sum()),
        "floor_too_low": int((held_out["held_out_mean_error"][at_floor] < 0).sum()),
        "floor_rel_max": float(errors[at_floor].max()) if at_floor.any() else math.nan,
        "free_rel_max": float(errors[~at_floor].max()) if (~at_floor).any() else math.nan,
    }


def three_pair_summary(three_pairs: pd.DataFrame, tolerance: float = RELATIVE_TOLERANCE) -> pd.DataFrame:
    """Per model size of `three_pair_predictions`: predictions, how many are within `tolerance` of the
    measured loss (relative), how many predict too low a loss, the mean error and the worst relative error."""
    if three_pairs.empty:
        return pd.DataFrame(columns=["size", "N", "predictions", "within", "too_low", "mean_error", "worst"])
    grouped = three_pairs.assign(
        within=three_pairs["rel_error"] <= tolerance, too_low=three_pairs["error"] < 0
    ).groupby(["size", "N"], as_index=False)
    return grouped.agg(
        predictions=("error", "size"),
        within=("within", "sum"),
        too_low=("too_low", "sum"),
        mean_error=("error", "mean"),
        worst=("rel_error", "max"),
    ).sort_values("N", ignore_index=True)


def frontiers(
    fits: Sequence[WeightedFit], table: pd.DataFrame, y: str = "loss", weights=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predicted trade-off frontiers (`laws.tradeoff_frontier`) of every cohort, test set and f_hat form at
    the sizes of the runs, and the measured points they should pass through (both directions trained).

    Returns (predicted, measured): predicted has cohort, test_set, form, size, N, p, first, second; measured
    has cohort, test_set, size, N, p, first, second (the losses of the cohort's first and second direction).
    """
    ps = np.linspace(0.02, 0.98, 49) if weights is None else weights
    by_key = {(f.cohort, f.direction, f.test_set, f.form): f for f in fits}
    predicted, measured = [], []
    for (cohort, test_set), group in table.dropna(subset=[y]).groupby(["cohort", "test_set"]):
        first, second = group["first"].iloc[0], group["second"].iloc[0]
        sizes = group.drop_duplicates("size")[["size", "N"]]
        for form in F_HAT_FORMS:
            one, two = (
                by_key.get((cohort, first, test_set, form)),
                by_key.get((cohort, second, test_set, form)),
            )
            if one is None or two is None:
                continue
            grid = laws.tradeoff_frontier(
                (one.fit.law, one.fit.params), (two.fit.law, two.fit.params), sizes["N"], ps
            )
            predicted.append(grid.merge(sizes, on="N").assign(cohort=cohort, test_set=test_set, form=form))
        both = group[(group["p"] > 0) & (group["p"] < 1)]
        wide = both.pivot_table(index=["size", "N", "p"], columns="direction", values=y).reset_index()
        if first in wide and second in wide:
            measured.append(
                wide.rename(columns={first: "first", second: "second"})[
                    ["size", "N", "p", "first", "second"]
                ].assign(cohort=cohort, test_set=test_set)
            )
    return (
        pd.concat(predicted, ignore_index=True) if predicted else pd.DataFrame(),
        pd.concat(measured, ignore_index=True) if measured else pd.DataFrame(),
    )


def three_pair_predictions(
    table: pd.DataFrame, fits: Sequence[WeightedFit], form: str = "eq12"
) -> pd.DataFrame:
    """App. H: the loss of every direction of the three-direction models, predicted by Eq. 11 from each
    two-direction cohort that trained that direction (its f_hat depends only on the direction's own weight).

    Returns one row per three-direction row and source cohort: size, N, mixture, direction, weight, test_set,
    measured, source (the cohort whose fit predicts), predicted, error.
    """
    three = table[table["pairs"] == 3].dropna(subset=["loss"])
    rows = []
    for fit in fits:
        if fit.form != form:
            continue
        mine = three[(three["direction"] == fit.direction) & (three["test_set"] == fit.test_set)]
        if mine.empty:
            continue
        predicted = fit.fit.predict(own_weight_inputs(mine))
        rows.append(
            pd.DataFrame(
                {
                    "size": mine["size"].to_numpy(),
                    "N": mine["N"].to_numpy(),
                    "mixture": mine["mixture"].to_numpy(),
                    "direction": fit.direction,
                    "weight": mine["weight"].to_numpy(),
                    "test_set": fit.test_set,
                    "measured": mine["loss"].to_numpy(),
                    "source": fit.cohort,
                    "predicted": predicted,
                }
            )
        )
    if not rows:
        return pd.DataFrame()
    frame = pd.concat(rows, ignore_index=True)
    frame["error"] = frame["predicted"] - frame["measured"]
    frame["rel_error"] = frame["error"].abs() / frame["measured"]
    return frame


def fraction_gaps(fractions: pd.DataFrame, left: Mapping[str, str], right: Mapping[str, str]) -> pd.DataFrame:
    """f_i(p) of two selections (e.g. test set l10n vs story, or en-de in two cohorts) side by side at the
    weights both have below 1, with the gap and its z-score against the combined perturbation errors.

    `left` and `right` map columns of `effective_fractions` to values; the columns not named in both are
    matched (the weight p always).
    """
    keys = ["p"] + [c for c in ("cohort", "direction", "test_set") if c not in left and c not in right]
    pick = [fractions[(fractions[list(sel)] == pd.Series(sel)).all(axis=1)] for sel in (left, right)]
    merged = pick[0].merge(pick[1], on=keys, suffixes=("_left", "_right"))
    merged = merged[merged["p"] < 1]
    merged["gap"] = merged["f_left"] - merged["f_right"]
    merged["z"] = merged["gap"].abs() / np.sqrt(
        merged["std_error_left"] ** 2 + merged["std_error_right"] ** 2
    )
    return merged[[*keys, "f_left", "f_right", "gap", "z"]].reset_index(drop=True)


# The cohorts Fig. 6's comparisons name: En->De next to Chinese and next to French, and into English.
NEXT_TO_ZH, NEXT_TO_FR, INTO_ENGLISH = "en-{de,zh}", "en-{de,fr}", "{de,zh}-en"


def fraction_comparisons(fractions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The comparisons of f_i(p) (`effective_fractions`) behind Fig. 6's claims, each a `fraction_gaps`
    frame: (a) test set l10n against story for every direction, (b) En->De next to Chinese against next to
    French, (c) De and Zh into English against out of English at the same weight (column `language`). A
    cohort the chapter did not train leaves its comparison empty."""
    domain = fraction_gaps(fractions, {"test_set": "l10n"}, {"test_set": "story"})
    similarity = fraction_gaps(
        fractions, {"cohort": NEXT_TO_ZH, "direction": "en-de"}, {"cohort": NEXT_TO_FR, "direction": "en-de"}
    )
    direction = pd.concat(
        [
            fraction_gaps(
                fractions,
                {"cohort": INTO_ENGLISH, "direction": f"{language}-en"},
                {"cohort": NEXT_TO_ZH, "direction": f"en-{language}"},
            ).assign(language=language)
            for language in ("de", "zh")
        ],
        ignore_index=True,
    )
    return domain, similarity, direction


def corrections(pairs: pd.DataFrame) -> pd.DataFrame:
    """The two-direction rows (`two_pair_rows`) whose loss App. G's correction extrapolated, with the
    corrected loss's change over the measured one (`change`, nats)."""
    rows = pairs[pairs["corrected"]][
        ["cohort", "direction", "test_set", "weight", "size", "tokens", "loss", "loss_corrected"]
    ]
    return rows.assign(change=rows["loss_corrected"] - rows["loss"]).sort_values(
        ["cohort", "direction", "test_set", "size"]
    )


def correction_effect(pairs: pd.DataFrame, fractions: pd.DataFrame, n0: float) -> pd.DataFrame:
    """What App. G's correction does to f: the `effective_fractions` of the corrected losses (`fractions`)
    beside those of the same joint fits on the measured final losses (`f_uncorrected`), below weight 1."""
    uncorrected = effective_fractions(joint_fits(pairs, "loss", n0, 0))
    keys = ["cohort", "direction", "test_set", "p"]
    effect = fractions.merge(uncorrected, on=keys, suffixes=("", "_uncorrected"))
    effect = effect[effect["p"] < 1][[*keys, "f_uncorrected", "f"]]
    return effect.assign(change=effect["f"] - effect["f_uncorrected"]).reset_index(drop=True)


def run_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run of a `run_table`: cohort, first direction's weight p, mixture, size, N, training
    time, and the target tokens each trained direction saw (a column per direction)."""
    return (
        table.drop_duplicates(["run_id", "cohort", "direction"])
        .pivot_table(
            index=["cohort", "p", "mixture", "size", "N", "wall_time_s"], columns="direction", values="tokens"
        )
        .reset_index()
        .sort_values(["cohort", "p", "N"])
        .round({"wall_time_s": 0})
    )


def chrf_loss_correlation(table: pd.DataFrame) -> pd.DataFrame:
    """Pearson correlation between chrF and loss over the runs of every direction and test set (Fig. 8)."""
    rows = []
    for (direction, test_set), group in table.dropna(subset=["chrf", "loss"]).groupby(
        ["direction", "test_set"]
    ):
        unique = group.drop_duplicates("run_id")
        r = unique["chrf"].corr(unique["loss"]) if len(unique) > 2 else math.nan
        rows.append(
            {
                "direction": direction,
                "test_set": test_set,
                "runs": len(unique),
                "pearson_r": r,
                "chrf_min": unique["chrf"].min(),
                "chrf_max": unique["chrf"].max(),
            }
        )
    return pd.DataFrame(rows)


# Fernandes Sec. 3.3: the effective capacity at 5% weight is "more than 3x" 5% of the model for En->{De, Zh},
# "more than 6x" for XX->En.
SMALL_WEIGHT = 0.05


SMALL_WEIGHT_GAIN = {"out of English": 3.0, "into English": 6.0}


def rows_where(frame: pd.DataFrame, **values: Any) -> pd.DataFrame:
    """The rows of `frame` whose columns equal `values` (cohort=..., test_set=...)."""
    keep = np.ones(len(frame), bool)
    for column, value in values.items():
        keep &= (frame[column] == value).to_numpy()
    return frame[keep]


def f_hat_curves(fits: Sequence[WeightedFit], n_points: int = 100) -> pd.DataFrame:
    """Each fitted f_hat (Eq. 12 or 13) of `weighted_fits` over own weights p in (0, 1]: columns p, f, form,
    direction, cohort, test_set."""
    grid = np.linspace(0.01, 1, n_points)
    frames = []
    for wf in fits:
        c = wf.fit.params
        values = (
            laws.f_hat(grid, c["c1"], c["c2"], c["c3"])
            if wf.form == "eq12"
            else laws.f_hat_linear(grid, c["c1"])
        )
        frames.append(
            pd.DataFrame({"p": grid, "f": values, "form": wf.form, "direction": wf.direction}).assign(
                cohort=wf.cohort, test_set=wf.test_set
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
