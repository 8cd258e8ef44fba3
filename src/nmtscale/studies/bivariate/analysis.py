"""Chapter 1's analysis: the laws fitted to each direction and test set, their exponents and intervals,
held-out predictions, allocations, learning curves and the scale gates.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nmtscale import laws, runs
from nmtscale.config import override
from nmtscale.engine.batching import target_positions
from nmtscale.engine.data import prepare_data
from nmtscale.laws import fitting, uncertainty
from nmtscale.laws.fitting import Diagnostics, Fit
from nmtscale.laws.uncertainty import Uncertainty
from nmtscale.record import RunSummary
from nmtscale.studies import sweeps
from nmtscale.studies.bivariate.plan import SWEEPS, TEST_SETS, base_config, sweep_value
from nmtscale.studies.claims import Gate, overfitting_gate

FIT_APPROACHES = ("baseline", "encoder", "decoder")


HELD_OUT_APPROACH = "symmetric"


# Issue 47: a law is judged only on a family of at least this many sizes (the baseline included)
MIN_LAW_SIZES = 4


def hyperparameter_table(
    plan: Sequence[sweeps.PlannedRun], summaries: Sequence[RunSummary], sweep: str
) -> pd.DataFrame:
    """`sweeps.run_table` of a `hyperparameter_plan` with the swept value's column (`SWEEPS`: `lr` or
    `beta2`) and `best_<column>`: whether the value gives the model its lowest loss on that test set."""
    column = SWEEPS[sweep]
    table = sweeps.run_table(plan, summaries)
    table[column] = table["run_id"].map(
        {s.run_id: sweep_value(p.config, column) for p, s in zip(plan, summaries, strict=True)}
    )
    lowest = table.groupby(["model", "test_set"])["loss"].transform("min")
    return table.assign(**{f"best_{column}": table["loss"] == lowest})


@dataclass
class Analysis:
    """The fits of one direction and test set."""

    direction: str
    test_set: str
    ne_bar: float  # encoder / decoder parameters of the baseline model (the law's normalisers)
    nd_bar: float
    points: pd.DataFrame  # the runs of the first seed: Ne, Nd, N, loss, approach, model
    univariate: Fit  # Eq. 1 in N = Ne + Nd, on the encoder- and decoder-scaling runs
    bivariate: Fit  # Eq. 2, robust multi-start fit on the same runs
    recipe: Fit  # Eq. 2, Ghorbani App. E soft_l1 recipe on the same runs
    held_out: Diagnostics | None  # Eq. 2 evaluated on the symmetric runs (None when there are none)
    spread: Uncertainty  # bootstrap of the multi-start fit
    # how much lower (relative) a 16x denser start grid took Eq. 2's objective than the default grid
    optimum_gap: float = 0.0

    @property
    def fit_points(self) -> pd.DataFrame:
        return self.points[self.points["approach"].isin(FIT_APPROACHES)]

    @property
    def held_out_points(self) -> pd.DataFrame:
        return self.points[self.points["approach"] == HELD_OUT_APPROACH]


def analyse(
    table: pd.DataFrame, direction: str, test_set: str, seed: int = 0, n_bootstrap: int = 200
) -> Analysis:
    """Fit Eq. 1 and Eq. 2 to one direction and test set of a `run_table` (runs of its first seed only)."""
    return _bootstrapped([_fitted(table, direction, test_set, seed)], seed, n_bootstrap, workers=1)[0]


def analyse_all(
    table: pd.DataFrame, seed: int = 0, n_bootstrap: int = 200, workers: int = 1
) -> list[Analysis]:
    """`analyse` for every direction and test set of the table, in the table's order; the bootstraps run in
    `workers` processes."""
    groups = table[["direction", "test_set"]].drop_duplicates().itertuples(index=False)
    return _bootstrapped(
        [_fitted(table, g.direction, g.test_set, seed) for g in groups], seed, n_bootstrap, workers
    )


def _bootstrapped(fitted: list[dict[str, Any]], seed: int, n_bootstrap: int, workers: int) -> list[Analysis]:
    # Each refit restarts from the law's start grid: refits warm-started at the estimate stop there at once
    # on these flat objectives and understate the spread about tenfold.
    spreads = uncertainty.restarted_in_workers(
        [f["bivariate"] for f in fitted],
        [(laws.bivariate_law, (f["ne_bar"], f["nd_bar"])) for f in fitted],
        "bootstrap",
        n_bootstrap,
        seed,
        workers=workers,
    )
    return [Analysis(**f, spread=spread) for f, spread in zip(fitted, spreads, strict=True)]


def _fitted(table: pd.DataFrame, direction: str, test_set: str, seed: int) -> dict[str, Any]:
    """The fields of the `Analysis` of one direction and test set, all but its bootstrap `spread`."""
    rows = table[(table["direction"] == direction) & (table["test_set"] == test_set)].dropna(subset=["loss"])
    if rows.empty:
        raise ValueError(f"no finished runs for {direction} on test set {test_set!r}")
    points = rows[rows["seed"] == rows["seed"].min()].reset_index(drop=True)
    baseline = points[points["approach"] == "baseline"]
    if len(baseline) != 1:
        raise ValueError(f"{direction}/{test_set}: expected one baseline run, found {len(baseline)}")
    ne_bar, nd_bar = float(baseline["Ne"].iloc[0]), float(baseline["Nd"].iloc[0])
    fit_rows = points[points["approach"].isin(FIT_APPROACHES)]
    held_out_rows = points[points["approach"] == HELD_OUT_APPROACH]
    # Eq. 1 is normalised by the baseline's size so that its alpha has the same meaning as Eq. 2's.
    univariate = fitting.fit_multistart(laws.power_law(n0=ne_bar + nd_bar), fit_rows[["N"]], fit_rows["loss"])
    law = laws.bivariate_law(ne_bar, nd_bar)
    # The default 81-start grid can stop in a local optimum of these flat objectives: a 16x denser search
    # checks it, and the lower of the two is the fit (its gap is shown beside the fit quality).
    gap, bivariate = fitting.optimum_gap(
        fitting.fit_multistart(law, fit_rows[["Ne", "Nd"]], fit_rows["loss"])
    )
    recipe = fitting.fit_soft_l1_recipe(law, fit_rows[["Ne", "Nd"]], fit_rows["loss"], seed=seed)
    held_out = (
        bivariate.evaluate(held_out_rows[["Ne", "Nd"]], held_out_rows["loss"]) if len(held_out_rows) else None
    )
    return {
        "direction": direction,
        "test_set": test_set,
        "ne_bar": ne_bar,
        "nd_bar": nd_bar,
        "points": points,
        "univariate": univariate,
        "bivariate": bivariate,
        "optimum_gap": gap,
        "recipe": recipe,
        "held_out": held_out,
    }


def fit_quality(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """Per direction and test set: R^2 (%) and max |deviation| of Eq. 1 and Eq. 2 on the runs they were
    fitted to, and of Eq. 2 on the held-out symmetric runs (Ghorbani Fig. 1-3).

    R^2 is 100 (1 - SS_res / SS_tot) of the plotted final loss: the share of its variance across the runs
    that the law explains. The laws are fitted robustly on log residuals, not by least squares on the loss,
    so R^2 can be negative: the law then predicts worse than the runs' mean loss. `eq2_rmse` is in nats;
    `eq2_denser_search_gap` is how much lower a 16x denser start grid took the objective (0: the default
    grid found the optimum; the fit shown is the lower one)."""
    rows = []
    for a in analyses:
        held = a.held_out
        rows.append(
            {
                "direction": a.direction,
                "test_set": a.test_set,
                "fitted_runs": len(a.fit_points),
                "eq1_r2": a.univariate.diagnostics.r2,
                "eq1_max_dev": a.univariate.diagnostics.max_abs_deviation,
                "eq2_r2": a.bivariate.diagnostics.r2,
                "eq2_max_dev": a.bivariate.diagnostics.max_abs_deviation,
                "eq2_rmse": a.bivariate.diagnostics.rmse,
                "eq2_denser_search_gap": a.optimum_gap,
                "held_out_runs": len(a.held_out_points),
                "symmetric_r2": held.r2 if held else np.nan,
                "symmetric_max_error": held.max_abs_deviation if held else np.nan,
            }
        )
    return pd.DataFrame(rows)


def rounding_sensitivity(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """Per direction and test set: how far each coefficient of Eq. 2 (the robust fit) moves when every loss
    changes by a few units in its 13th digit, the rounding by which two CPUs' executions differ, and the
    largest of those moves in bootstrap standard deviations of its coefficient
    (`uncertainty.rounding_summary`): how much of the fit, and of its interval, the machine decides."""
    return pd.DataFrame(
        [
            {
                "direction": a.direction,
                "test_set": a.test_set,
                "fitted_runs": len(a.fit_points),
                **uncertainty.rounding_summary(a.bivariate, a.spread),
            }
            for a in analyses
        ]
    )


# An exponent closer than this to a bound of its range sits on the bound: the fit pushed it there, so the data
# set no value for it (the lower optimum a denser search finds is often such a corner: alpha -> 0, p -> 10).
ON_BOUND = 1e-3


# A 95% bootstrap interval wider than this share of the exponent's range: the refits spread over the range.
SPREAD_OVER_RANGE = 0.5


# Fewer bootstrap refits than this share determine the law: most resamples of the runs leave it free.
MIN_DETERMINED_SHARE = 0.5


def exponent_undetermined(
    estimate: float,
    lower: float,
    upper: float,
    bounds: tuple[float, float],
    determined_share: float = 1.0,
    flat: str = "",
) -> str:
    """ "" when the data determine an exponent, else why not: its estimate on a bound of `bounds`, a flat
    profile (`flat`, the reason `fitting.flat_profile` gives), fewer than `MIN_DETERMINED_SHARE` of the
    bootstrap refits determining the law (`determined_share`), or its bootstrap interval (`lower`, `upper`)
    missing or spread over most of the range."""
    low, high = bounds
    if estimate <= low + ON_BOUND or estimate >= high - ON_BOUND:
        return f"on its bound ({estimate:.3g} in [{low:g}, {high:g}])"
    if flat:
        return flat
    if determined_share < MIN_DETERMINED_SHARE:
        return f"only {determined_share:.0%} of the bootstrap refits determine the law"
    if not np.isfinite(upper - lower):
        return "no bootstrap interval"
    if upper - lower > SPREAD_OVER_RANGE * (high - low):
        return f"bootstrap interval [{lower:.3g}, {upper:.3g}] spans over half of [{low:g}, {high:g}]"
    return ""


def exponents(
    analyses: Sequence[Analysis], spread: pd.DataFrame | None = None, level: float = 0.95
) -> pd.DataFrame:
    """Per direction and test set: pe and pd with bootstrap intervals, whether the data determine each
    (`pe_undetermined`, `pd_undetermined`: "" or the reason, see `exponent_undetermined`; a profile counts as
    flat against the test set's seed std from `spread`, `sweeps.seed_spread`, or without repeated seeds
    against the fit's RMSE) and the share of bootstrap refits in which pd > pe (Ghorbani Fig. 5)."""
    rows = []
    for a in analyses:
        noise = seed_std(spread, a.direction, a.test_set) if spread is not None else 0.0
        coefficients = a.spread.coefficients(level).set_index("parameter")
        samples = a.spread.samples
        determined_share = len(samples) / (len(samples) + a.spread.left_out)
        law_bounds = dict(zip(a.bivariate.law.names, zip(*a.bivariate.law.bounds, strict=True), strict=True))
        row = {"direction": a.direction, "test_set": a.test_set, "refits_left_out": a.spread.left_out}
        for name in ("pe", "pd"):
            estimate, lower, upper = (coefficients.loc[name, k] for k in ("estimate", "lower", "upper"))
            row |= {
                name: estimate,
                f"{name}_lower": lower,
                f"{name}_upper": upper,
                f"{name}_undetermined": exponent_undetermined(
                    estimate,
                    lower,
                    upper,
                    law_bounds[name],
                    determined_share,
                    fitting.flat_profile(a.bivariate, name, noise or None),
                ),
            }
        row |= {
            "alpha": a.bivariate.params["alpha"],
            "L_inf": a.bivariate.params["L_inf"],
            "share_pd_gt_pe": float((samples["pd"] > samples["pe"]).mean()),
        }
        rows.append(row)
    return pd.DataFrame(rows)


def recipe_comparison(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """The paper's soft_l1 recipe next to the multi-start fit: both parameter sets, and the largest gap
    between their predictions over the fitted runs (do they agree where it matters?)."""
    rows = []
    for a in analyses:
        x = a.fit_points[["Ne", "Nd"]]
        gap = np.max(np.abs(a.recipe.predict(x) - a.bivariate.predict(x)))
        for fit, name in ((a.bivariate, "multi-start Huber (log)"), (a.recipe, "soft_l1 recipe")):
            rows.append(
                {
                    "direction": a.direction,
                    "test_set": a.test_set,
                    "fit": name,
                    **fit.params,
                    "r2": fit.diagnostics.r2,
                    "max_dev": fit.diagnostics.max_abs_deviation,
                    "max_prediction_gap": gap,
                    "method": fit.method,
                }
            )
    return pd.DataFrame(rows)


def narrower(rows: pd.DataFrame) -> pd.Series:
    """Which of `rows` (a `sweeps.run_table` or an analysis's points) are narrower models: narrower than the
    widest model among them, the families' width."""
    return rows["d_model"] < rows["d_model"].max()


def fitted_curves(a: Analysis, n_points: int = 60) -> pd.DataFrame:
    """Eq. 1 and Eq. 2 on a grid of total sizes N, for charts: one curve per approach.

    Encoder scaling moves Ne with Nd = Nd_bar, decoder scaling the reverse, symmetric scaling both by the same
    factor, each over its models at the families' width (a narrower model is off its family's curve: both its
    sides are smaller). Columns: approach, law ('Eq. 1' or 'Eq. 2'), Ne, Nd, N, loss, reducible (loss - L_inf
    of that law).
    """
    frames = []
    full_width = a.points[~narrower(a.points)]
    for approach in ("encoder", "decoder", HELD_OUT_APPROACH):
        members = full_width[full_width["approach"].isin([approach, "baseline"])]
        grows = "Nd" if approach == "decoder" else "Ne"
        sizes = np.geomspace(members[grows].min(), members[grows].max(), n_points)
        if approach == "encoder":
            ne, nd = sizes, np.full(n_points, a.nd_bar)
        elif approach == "decoder":
            ne, nd = np.full(n_points, a.ne_bar), sizes
        else:  # k encoder and k decoder layers: both grow by the same factor
            ne, nd = sizes, sizes * a.nd_bar / a.ne_bar
        grid = pd.DataFrame({"Ne": ne, "Nd": nd, "N": ne + nd})
        for law_name, fit, x in (
            ("Eq. 2", a.bivariate, grid[["Ne", "Nd"]]),
            ("Eq. 1", a.univariate, grid[["N"]]),
        ):
            loss = fit.predict(x)
            frames.append(
                grid.assign(approach=approach, law=law_name, loss=loss, reducible=loss - fit.params["L_inf"])
            )
    return pd.concat(frames, ignore_index=True)


def allocation(analyses: Sequence[Analysis], fractions, total_params: float | None = None) -> pd.DataFrame:
    """alpha#/alpha* and the additive penalty L - L_opt across decoder fractions Nd/N (Ghorbani Fig. 6).

    The penalty is evaluated at `total_params` (default: each analysis's baseline size). Columns: direction,
    test_set, decoder_fraction, alpha_ratio, penalty, optimal_fraction (pd / (pe + pd)).
    """
    fractions = np.asarray(fractions, dtype=float)
    frames = []
    for a in analyses:
        alpha, pe, pd_ = (a.bivariate.params[k] for k in ("alpha", "pe", "pd"))
        if pe <= 0 or pd_ <= 0:
            continue  # a zero exponent has no interior optimum; the exponents table shows it
        budget = total_params or a.ne_bar + a.nd_bar
        ratio = laws.alpha_sharp(alpha, pe, pd_, a.ne_bar, a.nd_bar, fractions) / laws.alpha_star(
            alpha, pe, pd_, a.ne_bar, a.nd_bar
        )
        penalty = laws.allocation_penalty(alpha, pe, pd_, a.ne_bar, a.nd_bar, fractions, budget)
        frames.append(
            pd.DataFrame(
                {
                    "direction": a.direction,
                    "test_set": a.test_set,
                    "decoder_fraction": fractions,
                    "alpha_ratio": ratio,
                    "penalty": penalty,
                    "optimal_fraction": laws.optimal_allocation(budget, pe, pd_)[1] / budget,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def reducible_band(a: Analysis, curves: pd.DataFrame, seed_std: float, width: float = 2.0) -> pd.DataFrame:
    """The Eq. 2 curves +- `width` seed standard deviations (Ghorbani Fig. 13: +-2 std of Table 4), in loss
    and in reducible loss. Columns of `curves` plus lower, upper, reducible_lower, reducible_upper."""
    band = curves[curves["law"] == "Eq. 2"].copy()
    band["lower"] = band["loss"] - width * seed_std
    band["upper"] = band["loss"] + width * seed_std
    band["reducible_lower"] = band["lower"] - a.bivariate.params["L_inf"]
    band["reducible_upper"] = band["upper"] - a.bivariate.params["L_inf"]
    return band


def seed_std(spread: pd.DataFrame, direction: str, test_set: str) -> float:
    """The seed standard deviation of one test set (`sweeps.seed_spread`): its own where the direction has
    repeated models, else the mean over the directions that have them, else 0."""
    match = spread[(spread["direction"] == direction) & (spread["test_set"] == test_set)]
    if len(match):
        return float(match["std"].iloc[0])
    same_set = spread[spread["test_set"] == test_set]["std"]
    return float(same_set.mean()) if len(same_set) else 0.0


def narrower_residuals(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """How far each narrower model's loss lies from Eq. 2 fitted with it (measured minus fitted, nats; above
    0: worse than the law): one row per model and test set, with the family it extends (`approach`), empty
    without narrower models."""
    frames = []
    for a in analyses:
        points = a.fit_points[narrower(a.fit_points)]
        if len(points):
            fitted = a.bivariate.predict(points[["Ne", "Nd"]])
            frames.append(
                points[["model", "approach", "d_model", "N"]].assign(
                    test_set=a.test_set, residual=points["loss"] - fitted
                )
            )
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["model", "approach", "residual"])
    )


def held_out_predictions(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """The held-out symmetric models with Eq. 2's prediction (`predicted`) beside their loss, `series` naming
    the direction and test set (Ghorbani Fig. 3, 14); empty without held-out runs."""
    frames = [
        a.held_out_points.assign(
            predicted=a.bivariate.predict(a.held_out_points[["Ne", "Nd"]]),
            series=f"{a.direction} {a.test_set}",
        )
        for a in analyses
        if len(a.held_out_points)
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def run_summary(table: pd.DataFrame, text_tokens: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per run of a `sweeps.run_table`: its family, depths, seed, updates, sizes, tokens and wall
    time, the final loss per test set, `slope_last20` (nats per doubling of the steps over the last 20% of
    training, mean over the test sets) and `above_minimum` (how far its last evaluation lies above its lowest,
    the largest over the test sets: above 0 once a model begins to overfit). With `text_tokens` (target
    tokens in one pass over each direction's training text, `training_text_tokens`), `epochs`: the passes
    over it the run trained for."""
    index = ["direction", "approach", "model", "seed", "steps", "Ne", "Nd", "N", "tokens", "tokens_per_param"]
    index.append("wall_time_s")
    test_sets = [t for t in TEST_SETS if t in set(table["test_set"])]
    losses = table.pivot_table(index=index, columns="test_set", values="loss")[test_sets].reset_index()
    keys = ["direction", "model", "seed", "steps"]
    per_run = table.groupby(keys).agg(slope_last20=("slope", "mean"), above_minimum=("above_minimum", "max"))
    summary = losses.merge(per_run.reset_index(), on=keys)
    if text_tokens is not None:
        summary.insert(
            summary.columns.get_loc("tokens_per_param") + 1,
            "epochs",
            summary["tokens"] / summary["direction"].map(text_tokens),
        )
    return summary.sort_values(["direction", "steps", "approach", "N", "seed"]).reset_index(drop=True)


def training_text_tokens(params: Mapping[str, Any]) -> dict[str, int]:
    """Target tokens (with EOS, as the trainer counts them) in one pass over the training text of every
    direction of ``params["families"]``, at the chapter's vocabulary (the tokenizer comes from the cache)."""
    base = base_config(params)
    counts = {}
    for direction in params["families"]:
        data = prepare_data(override(base, {"data.directions": [direction]}).data, runs.cache_root())
        counts[direction] = sum(map(target_positions, data.tasks[0]))
    return counts


def budget_curves(
    plans: Sequence[Sequence[sweeps.PlannedRun]],
    summaries: Sequence[Sequence[RunSummary]],
    test_set: str,
    direction: str = "en-de",
) -> pd.DataFrame:
    """The test-loss curves of the models trained at every budget, for the loss-against-tokens chart: one row
    per evaluation with model, budget (the run's updates), step, target_tokens and loss. `plans` and
    `summaries` are matching lists, one pair per budget; first-seed models trained at the first two budgets
    (at every budget they were trained at: a later budget may carry fewer models)."""
    label_sets = [{p.label for p in plan if p.seed == plan[0].seed} for plan in plans]
    shared = set.intersection(*label_sets[:2])
    rows = [
        {
            "model": p.label,
            "budget": f"{summary.config['train']['steps']:,} updates",
            "step": point["step"],
            "target_tokens": point["target_tokens"],
            "loss": point["test_loss"][f"{direction}/{test_set}"],
        }
        for plan, runs_of_plan in zip(plans, summaries, strict=True)
        for p, summary in zip(plan, runs_of_plan, strict=True)
        if p.label in shared and p.seed == plan[0].seed and p.direction == direction
        for point in summary.curves
    ]
    return pd.DataFrame(rows)


def learning_curves(
    plan: Sequence[sweeps.PlannedRun], summaries: Sequence[RunSummary], test_set: str, seed: int
) -> pd.DataFrame:
    """The test-loss curve on `test_set` of every model of the first seed (`seed`): one row per evaluation
    with direction, model, approach, step and loss."""
    return pd.DataFrame(
        [
            {
                "direction": p.direction,
                "model": p.label,
                "approach": p.approach,
                "step": point["step"],
                "loss": point["test_loss"][f"{p.direction}/{test_set}"],
            }
            for p, s in zip(plan, summaries, strict=True)
            if p.seed == seed
            for point in s.curves
        ],
        columns=["direction", "model", "approach", "step", "loss"],
    )


def symmetric_decoder_fraction(table: pd.DataFrame) -> float:
    """The mean Nd / N of the symmetric models (the paper's symmetric scaling sits at about 0.55)."""
    return float((table["Nd"] / table["N"])[table["approach"] == "symmetric"].mean())


def budget_losses(table: pd.DataFrame, long_table: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The final losses of the models trained at every budget (`table` at the chapter's, `long_table` at one
    or more longer ones): one row per (steps_trained, model) and a column per test set, En->De, first seed."""
    longer = long_table[long_table["seed"] == seed]
    short = table[
        (table["direction"] == "en-de") & (table["seed"] == seed) & table["model"].isin(longer["model"])
    ]
    both = pd.concat([short, longer], ignore_index=True).rename(columns={"steps": "steps_trained"})
    columns = [t for t in TEST_SETS if t in set(both["test_set"])]
    return both.pivot_table(index=["steps_trained", "model"], columns="test_set", values="loss")[columns]


def last_doubling_gain(losses: pd.DataFrame, model: str) -> tuple[int, pd.Series]:
    """What `model` still gains from the last budget it was trained at (`budget_losses`): its loss at the
    budget before minus its loss at the last one, per test set (NaN with one budget), and that last budget."""
    of_model = losses.xs(model, level="model")
    if len(of_model) < 2:
        return int(of_model.index[-1]), of_model.iloc[-1] * math.nan
    return int(of_model.index[-1]), of_model.iloc[-2] - of_model.iloc[-1]


def best_values(table: pd.DataFrame, column: str = "lr") -> pd.DataFrame:
    """Each model's best value of `column` per test set in a `hyperparameter_table` (the mean over seeds at
    each value): one row per model, columns (loss, test set) and (`column`, test set)."""
    means = table.groupby(["model", "test_set", column], as_index=False)["loss"].mean()
    best = means.loc[means.groupby(["model", "test_set"])["loss"].idxmin()]
    return best.pivot_table(index="model", columns="test_set", values=["loss", column])


def gains_at_best(table: pd.DataFrame, column: str, chapter_value: float) -> pd.DataFrame:
    """What each model's best value of `column` gains over the chapter's own (`chapter_value`) in a
    `hyperparameter_table`, per test set (means over seeds): one row per model and test set with its
    non-embedding parameters N, both values, their losses and the gain (nats, >= 0; 0 where the chapter's
    value is the best), and the worst value with its cost over the chapter's (nats, >= 0)."""
    means = table.groupby(["model", "test_set", column], as_index=False, sort=False)["loss"].mean()
    rows = []
    for (model, test_set), at in means.groupby(["model", "test_set"], sort=False):
        best, worst = at.loc[at["loss"].idxmin()], at.loc[at["loss"].idxmax()]
        chapter = at.loc[at[column] == chapter_value, "loss"]
        if chapter.empty:
            raise ValueError(f"{model} on {test_set}: no run at the chapter's {column} {chapter_value}")
        rows.append(
            {
                "model": model,
                "N": int(table.loc[table["model"] == model, "N"].iloc[0]),
                "test_set": test_set,
                f"chapter_{column}": chapter_value,
                "chapter_loss": float(chapter.iloc[0]),
                f"best_{column}": best[column],
                "best_loss": best["loss"],
                "gain": float(chapter.iloc[0]) - best["loss"],
                f"worst_{column}": worst[column],
                "cost": worst["loss"] - float(chapter.iloc[0]),
            }
        )
    frame = pd.DataFrame(rows)
    order = {name: i for i, name in enumerate([*dict.fromkeys(frame["model"]), *TEST_SETS])}
    return frame.sort_values(["model", "test_set"], key=lambda c: c.map(order), ignore_index=True)


def seed_differences_at_values(table: pd.DataFrame, column: str = "lr") -> pd.DataFrame:
    """For every model and value of `column` in a `hyperparameter_table` trained with two or more seeds: the
    largest difference between its seeds' final losses (nats) per test set, one row per (model, value)."""
    losses = table.groupby(["model", column, "test_set"])["loss"]
    repeated = losses.count() >= 2
    spread = (losses.max() - losses.min())[repeated]
    return spread.unstack("test_set")[[t for t in TEST_SETS if t in set(table["test_set"])]]


def schedule_comparison(
    plan: Sequence[sweeps.PlannedRun], summaries: Sequence[RunSummary], reference: str
) -> pd.DataFrame:
    """The schedule check (`schedule_check_plan`): one row per model, budget (`steps`) and test set with the
    model's family (`approach`), its encoder and decoder parameters (`Ne`, `Nd`), the checked schedule and the
    `reference` one, the seeds, each schedule's mean over seeds of the loss at the run's last evaluation (its
    end, where both schedules have decayed to zero; the chapter's final loss, a median over the last
    evaluations, would take in one made half-way down a cool-down), the checked minus the reference (nats),
    the seed std pooled over both schedules and that difference in seed std. A row of one seed borrows the
    seed std of its model at its most-seeded budget, else the median over the seeded rows of its test set. A
    schedule that ends where the reference ends is within about one seed std: with three seeds each, the two
    means differ by 0.8 seed std on average by chance alone."""
    table = sweeps.run_table(plan, summaries, last_evaluation=True).dropna(subset=["loss"])
    (checked,) = {p.config.train.schedule for p in plan} - {reference}
    by = table.groupby(
        ["model", "approach", "enc_layers", "dec_layers", "Ne", "Nd", "steps", "test_set", "schedule"]
    )["loss"]
    stats = pd.DataFrame({"mean": by.mean(), "var": by.var(), "seeds": by.count()}).unstack("schedule")
    rows = pd.DataFrame(
        {
            "schedule": checked,
            "reference": reference,
            "seeds": stats[("seeds", checked)].astype(int),
            "checked_loss": stats[("mean", checked)],
            "reference_loss": stats[("mean", reference)],
            "difference": stats[("mean", checked)] - stats[("mean", reference)],
            "seed_std": np.sqrt((stats[("var", checked)] + stats[("var", reference)]) / 2),
        }
    ).reset_index()
    seeded = rows.dropna(subset=["seed_std"])
    of_model = seeded.sort_values("seeds").groupby(["model", "test_set"])["seed_std"].last()
    of_test_set = seeded.groupby("test_set")["seed_std"].median()
    keys = pd.Series(list(zip(rows["model"], rows["test_set"], strict=True)))
    rows["seed_std"] = rows["seed_std"].fillna(keys.map(of_model)).fillna(rows["test_set"].map(of_test_set))
    rows["difference_in_std"] = rows["difference"] / rows["seed_std"]
    rows["test_set"] = pd.Categorical(rows["test_set"], [t for t in TEST_SETS if t in set(rows["test_set"])])
    return rows.sort_values(["model", "steps", "test_set"], ignore_index=True)


def schedule_effects(comparison: pd.DataFrame) -> pd.DataFrame:
    """What depth buys under each schedule of a `schedule_comparison`: for every budget, family ("encoder",
    "decoder") and test set with two depths or more under both schedules, the mean loss of the shallowest
    model minus that of the deepest (nats, the baseline included) under the checked schedule and under the
    reference, and the checked effect's change from the reference's (a fraction). A schedule that trains
    small and large models alike leaves the effect where it was; a change says the exponents would move."""
    rows = []
    for family in ("encoder", "decoder"):
        depth = "dec_layers" if family == "decoder" else "enc_layers"
        members = comparison[comparison["approach"].isin([family, "baseline"])]
        for (steps, test_set), at in members.groupby(["steps", "test_set"], observed=True):
            if at[depth].nunique() < 2:
                continue
            at = at.sort_values(depth)
            checked = at["checked_loss"].iloc[0] - at["checked_loss"].iloc[-1]
            reference = at["reference_loss"].iloc[0] - at["reference_loss"].iloc[-1]
            rows.append(
                {
                    "steps": steps,
                    "family": family,
                    "models": f"{at['model'].iloc[0]} - {at['model'].iloc[-1]}",
                    "test_set": test_set,
                    "schedule": at["schedule"].iloc[0],
                    "reference": at["reference"].iloc[0],
                    "checked_effect": checked,
                    "reference_effect": reference,
                    "change": checked / reference - 1,
                }
            )
    return pd.DataFrame(rows)


def schedule_gate(comparison: pd.DataFrame, max_std: float = 1.0) -> Gate:
    """Whether the checked schedule of a `schedule_comparison` ends where the reference does: its largest
    |difference| in seed std over the budgets with two seeds or more, passed within `max_std`."""
    seeded = comparison[comparison["seeds"] >= 2]
    worst = seeded.loc[seeded["difference_in_std"].abs().idxmax()]
    return Gate(
        f"schedule check: {worst['schedule']} vs {worst['reference']}",
        float(abs(worst["difference_in_std"])),
        f"<= {max_std:g} seed std",
        bool(abs(worst["difference_in_std"]) <= max_std),
        f"{worst['model']} at {worst['steps']:,} updates on {worst['test_set']}: {worst['difference']:+.4f} "
        f"nats, {worst['seeds']} seeds each",
    )


def schedule_effect_gate(effects: pd.DataFrame, max_change: float = 0.15) -> Gate:
    """Whether what depth buys is the same under both schedules of a `schedule_effects` table: its largest
    relative change, passed within `max_change` (chapter 1's budget-stability threshold). Where it holds, a
    schedule that lowers every loss leaves the exponents where they were; NaN where no family is compared."""
    if effects.empty:
        return Gate("schedule check: what depth buys", math.nan, f"within +-{max_change:.0%}", None)
    worst = effects.loc[effects["change"].abs().idxmax()]
    return Gate(
        f"schedule check: what depth buys, {worst['schedule']} vs {worst['reference']}",
        float(worst["change"]),
        f"within +-{max_change:.0%}",
        bool((effects["change"].abs() <= max_change).all()),
        f"{worst['family']} family ({worst['models']}) at {worst['steps']:,} updates on {worst['test_set']}: "
        f"{worst['reference_effect']:.3f} -> {worst['checked_effect']:.3f} nats",
    )


def schedule_budget_changes(effects: pd.DataFrame) -> pd.DataFrame:
    """How what depth buys changes with the budget under each schedule of a `schedule_effects` table: for
    each family's effect (the same two models) from each budget to the next one that has them, per test set
    in the chapter's order, the effect before and after and its relative change under the checked schedule
    and under the reference."""
    rows = []
    if effects.empty:
        return pd.DataFrame(rows)
    order = {t: i for i, t in enumerate(TEST_SETS)}
    for _, at in effects.groupby(["family", "models", effects["test_set"].map(order)], sort=False):
        for before, after in itertools.pairwise(at.sort_values("steps").itertuples()):
            rows.append(
                {
                    "family": before.family,
                    "models": before.models,
                    "test_set": before.test_set,
                    "steps": before.steps,
                    "longer_steps": after.steps,
                    "schedule": before.schedule,
                    "reference": before.reference,
                    "checked_before": before.checked_effect,
                    "checked_after": after.checked_effect,
                    "checked_change": after.checked_effect / before.checked_effect - 1,
                    "reference_before": before.reference_effect,
                    "reference_after": after.reference_effect,
                    "reference_change": after.reference_effect / before.reference_effect - 1,
                }
            )
    return pd.DataFrame(rows)


def schedule_budget_gates(changes: pd.DataFrame, max_change: float = 0.15) -> list[Gate]:
    """The budget stability of what depth buys under the checked schedule, one gate per row of
    `schedule_budget_changes`: its relative change within `max_change` (the reference schedule's own budget
    stability is `scale_gates`')."""
    return [
        _effect_change_gate(
            f"schedule check: budget stability {row.steps:,}->{row.longer_steps:,} under {row.schedule}, "
            f"{row.family} effect en-de {row.test_set} (relative change)",
            row.checked_before,
            row.checked_after,
            row.steps,
            row.longer_steps,
            max_change,
        )
        for row in changes.itertuples()
    ]


def schedule_laws(comparison: pd.DataFrame) -> pd.DataFrame:
    """Eq. 2 under each schedule of a `schedule_comparison`: at every budget and test set whose models make a
    law (`law_models`: the baseline and two depths of each family), fitted to the same models' mean losses
    at the end of training under the checked schedule and under the reference. One row per (steps, test set,
    schedule, `which`: "checked" or "reference"): alpha, pe, pd, L_inf, R^2 (%), the models fitted and
    whether they determine the law; empty where no budget has such models. If a schedule changed only how far
    every model gets, the exponents would agree; where they differ, the schedule changes what size buys."""
    fits = []
    families = comparison[comparison["approach"].isin(FIT_APPROACHES)]
    for (steps, test_set), at in families.groupby(["steps", "test_set"], observed=True, sort=True):
        if not law_models(at):
            continue
        baseline = at[at["approach"] == "baseline"].iloc[0]
        law = laws.bivariate_law(float(baseline["Ne"]), float(baseline["Nd"]))
        for which, schedule in (("checked", at["schedule"].iloc[0]), ("reference", at["reference"].iloc[0])):
            fit = _law_fit(law, at, at[f"{which}_loss"])
            fits.append({"steps": steps, "test_set": test_set, "schedule": schedule, "which": which, **fit})
    return pd.DataFrame(fits)


def _law_fit(law: laws.Law, points: pd.DataFrame, losses: pd.Series) -> dict[str, Any]:
    """Eq. 2 fitted to `losses` at the (Ne, Nd) of `points` (the robust multi-start fit at its optimum): its
    coefficients, R^2 (%), how many runs it was fitted to and whether they determine it."""
    _, fit = fitting.optimum_gap(fitting.fit_multistart(law, points[["Ne", "Nd"]], losses))
    return {**fit.params, "r2": fit.diagnostics.r2, "runs": len(points), "determined": fit.determined}


def schedule_judging(
    plan: Sequence[sweeps.PlannedRun], summaries: Sequence[RunSummary], reference: str, seed: int = 0
) -> dict[str, pd.DataFrame]:
    """Where the schedule check (`schedule_check_plan`) can judge the claims under both schedules: each
    schedule's `sweeps.run_table` (the loss at each run's last evaluation, as `schedule_comparison` reads it)
    at the longest budget at which the models both schedules trained with `seed` reach `judging_runs`' sizes,
    keyed by schedule, the checked one first; empty where no budget has them. `analyse_all` fits each as the
    claims are judged, so that the two schedules' fits compare on the same models."""
    table = sweeps.run_table(plan, summaries, last_evaluation=True).dropna(subset=["loss"])
    table = table[table["seed"] == seed]
    (checked,) = {p.config.train.schedule for p in plan} - {reference}
    in_both = table.groupby(["model", "steps"])["schedule"].transform("nunique") == 2
    judged = judging_runs(table[in_both & (table["schedule"] == checked)], seed)
    if judged.empty:
        return {}
    at = table[in_both & (table["steps"] == judged["steps"].iloc[0])]
    return {s: at[at["schedule"] == s].reset_index(drop=True) for s in (checked, reference)}


def schedule_fits(
    tables: Mapping[str, pd.DataFrame],
    spread: pd.DataFrame | None = None,
    seed: int = 0,
    n_bootstrap: int = 200,
    workers: int = 1,
) -> pd.DataFrame:
    """The claims' fits under each schedule of `schedule_judging`'s `tables` (`analyse_all` of each, with
    `n_bootstrap` refits in `workers` processes): per schedule, direction and test set, the budget (`steps`),
    `fit_quality`'s columns beside `exponents`' pe, pd and share of bootstrap refits with pd > pe (noise: the
    chapter's seed `spread`); empty without tables."""
    frames = []
    for schedule, runs_at in tables.items():
        fitted = analyse_all(runs_at, seed=seed, n_bootstrap=n_bootstrap, workers=workers)
        exps = exponents(fitted, spread)[["direction", "test_set", "pe", "pd", "share_pd_gt_pe"]]
        quality = fit_quality(fitted).merge(exps, on=["direction", "test_set"])
        frames.append(quality.assign(schedule=schedule, steps=[int(a.points["steps"].max()) for a in fitted]))
    if not frames:
        return pd.DataFrame()
    fits = pd.concat(frames, ignore_index=True)
    order = {name: i for i, name in enumerate([*tables, *TEST_SETS])}
    fits = fits.sort_values(["schedule", "test_set"], key=lambda c: c.map(order), ignore_index=True)
    return fits[["schedule", "steps", *[c for c in fits.columns if c not in ("schedule", "steps")]]]


def schedule_fit_numbers(fits: pd.DataFrame) -> dict[str, float | str]:
    """The numbers the prose quotes from `schedule_fits`: the budget (`schedule_fits_steps`, "none" where
    nothing was fitted), the symmetric models held out (`schedule_fits_held_out`, 0 without) and per schedule,
    `checked` (the first) or `reference` (the last), the range over the test sets of Eq. 2's R^2, of Eq. 1's
    and Eq. 2's largest deviation (nats), of the held-out models' R^2 and largest error (nats) and of the
    share of refits with pd > pe (`schedule_fits_<column>_<checked|reference>_<min|max>`), NaN where not
    measured."""
    columns = (
        "eq2_r2",
        "eq1_max_dev",
        "eq2_max_dev",
        "symmetric_r2",
        "symmetric_max_error",
        "share_pd_gt_pe",
    )
    numbers: dict[str, float | str] = {"schedule_fits_steps": "none", "schedule_fits_held_out": 0}
    numbers |= {
        f"schedule_fits_{column}_{which}_{end}": math.nan
        for column in columns
        for which in ("checked", "reference")
        for end in ("min", "max")
    }
    if fits.empty:
        return numbers
    numbers["schedule_fits_steps"] = f"{int(fits['steps'].max()):,}"
    numbers["schedule_fits_held_out"] = int(fits["held_out_runs"].max())
    schedules = list(dict.fromkeys(fits["schedule"]))
    for which, schedule in (("checked", schedules[0]), ("reference", schedules[-1])):
        rows = fits[fits["schedule"] == schedule]
        for column in columns:
            low, high = _span(rows[column].dropna())
            numbers[f"schedule_fits_{column}_{which}_min"] = low
            numbers[f"schedule_fits_{column}_{which}_max"] = high
    return numbers


def _span(values: pd.Series) -> tuple[float, float]:
    """The smallest and largest of `values`, NaN for both when there are none."""
    return (float(values.min()), float(values.max())) if len(values) else (math.nan, math.nan)


def schedule_law_numbers(fits: pd.DataFrame) -> dict[str, float | str]:
    """The numbers the schedule check's prose quotes from `schedule_laws`: the longest budget fitted
    (`schedule_law_steps`, "none" without one) and there each test set's exponents under the checked schedule
    and under the reference (`schedule_law_<pe|pd>_<checked|reference>_<test set>`, NaN where not fitted)."""
    numbers: dict[str, float | str] = {
        f"schedule_law_{name}_{which}_{test_set}": math.nan
        for name in ("pe", "pd")
        for which in ("checked", "reference")
        for test_set in TEST_SETS
    }
    if fits.empty:
        return {"schedule_law_steps": "none", **numbers}
    steps = int(fits["steps"].max())
    for row in fits[fits["steps"] == steps].itertuples():
        for name in ("pe", "pd"):
            numbers[f"schedule_law_{name}_{row.which}_{row.test_set}"] = float(getattr(row, name))
    return {"schedule_law_steps": f"{steps:,}", **numbers}


def schedule_numbers(
    comparison: pd.DataFrame, effects: pd.DataFrame, changes: pd.DataFrame
) -> dict[str, float | str]:
    """The schedule check's numbers chapter 1's prose quotes (through glue), NaN where a table has none: the
    range of checked minus reference (`schedule_difference_*`) and at the longest budget
    (`schedule_longest_*`), of what depth buys under each schedule (`schedule_<family>_effect_<checked|
    reference>_*`, nats) and its change between the schedules (`schedule_effect_change_*`, per family
    `schedule_<family>_change_*`), of each family's change per budget step under each schedule
    (`schedule_budget_<family>_<checked|reference>_*`), and each family's effect at the longest budget that
    compares it (`schedule_<family>_longest_steps`, `schedule_<family>_longest_<checked|reference>_<test
    set>`)."""
    # an empty table (nothing compared yet) reads as one with no rows
    if effects.empty:
        effects = pd.DataFrame(
            columns=["steps", "family", "test_set", "change", "checked_effect", "reference_effect"]
        )
    if changes.empty:
        changes = pd.DataFrame(columns=["family", "checked_change", "reference_change"])
    families = {family: effects[effects["family"] == family] for family in ("encoder", "decoder")}
    numbers: dict[str, float | str] = {}
    longest = comparison[comparison["steps"] == comparison["steps"].max()]
    numbers["schedule_longest_steps"] = f"{longest['steps'].max():,.0f}"
    ranges = {
        "schedule_difference": comparison["difference"],
        "schedule_longest_difference": longest["difference"],
        "schedule_effect_change": effects["change"],
    }
    for family, of_family in families.items():
        ranges[f"schedule_{family}_change"] = of_family["change"]
        for side in ("checked", "reference"):
            ranges[f"schedule_{family}_effect_{side}"] = of_family[f"{side}_effect"]
        steps = changes[changes["family"] == family]
        for side in ("checked", "reference"):
            ranges[f"schedule_budget_{family}_{side}"] = steps[f"{side}_change"]
    for name, values in ranges.items():
        numbers[f"{name}_min"], numbers[f"{name}_max"] = _span(values)
    for family, of_family in families.items():
        # the family's effect at the longest budget compared, per test set, under each schedule
        at = of_family[of_family["steps"] == of_family["steps"].max()]
        numbers[f"schedule_{family}_longest_steps"] = f"{at['steps'].max():,}" if len(at) else "none"
        for test_set in TEST_SETS:
            row = at[at["test_set"] == test_set]
            for side in ("checked", "reference"):
                value = float(row[f"{side}_effect"].iloc[0]) if len(row) else math.nan
                numbers[f"schedule_{family}_longest_{side}_{test_set}"] = value
    return numbers


def schedule_against_best_rates(comparison: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """The checked schedule of a `schedule_comparison` against the reference schedule at each model's best
    peak rate in the sweep (`best_values`, at the chapter's budget, the comparison's shortest): one row per
    model the sweep has and test set, with that rate, its loss, the checked schedule's and the difference
    (nats)."""
    at_budget = comparison["steps"] == comparison["steps"].min()
    rows = comparison[comparison["model"].isin(best.index) & at_budget].copy()
    rows["best_lr"] = [best.loc[m, ("lr", t)] for m, t in zip(rows["model"], rows["test_set"], strict=True)]
    rows["best_rate_loss"] = [
        best.loc[m, ("loss", t)] for m, t in zip(rows["model"], rows["test_set"], strict=True)
    ]
    rows["difference"] = rows["checked_loss"] - rows["best_rate_loss"]
    return rows[
        [
            "model",
            "steps",
            "test_set",
            "schedule",
            "checked_loss",
            "reference",
            "best_lr",
            "best_rate_loss",
            "difference",
        ]
    ]


def family_effect(table: pd.DataFrame, direction: str, approach: str, test_set: str, seed: int) -> float:
    """What depth buys within one scaling family: the final loss of its shallowest model minus that of its
    deepest (nats, first seed; "decoder" compares 2L-1L with 2L-6L around a 2L-2L baseline), at the
    family's width (its narrower models are not deeper or shallower). NaN with fewer than two finished
    models."""
    rows = table[
        (table["direction"] == direction)
        & (table["approach"] == approach)
        & (table["test_set"] == test_set)
        & (table["seed"] == seed)
    ].dropna(subset=["loss"])
    rows = rows[~narrower(rows)]
    if len(rows) < 2:
        return math.nan
    rows = rows.sort_values("dec_layers" if approach == "decoder" else "enc_layers")
    return float(rows["loss"].iloc[0] - rows["loss"].iloc[-1])


def difference_interval(std: float) -> float:
    """Half-width of the 95% interval of the difference of two single runs whose final loss has seed
    standard deviation `std`."""
    return 1.96 * math.sqrt(2) * std


def effects_by_budget(
    table: pd.DataFrame, long_table: pd.DataFrame, seed: int = 0, direction: str = "en-de"
) -> pd.DataFrame:
    """Each family's `family_effect` (nats) at every budget: one row per (steps, family), a column per test
    set; NaN where a budget does not carry both of a family's extremes. `table` holds the chapter's runs,
    `long_table` those of the longer budgets."""
    budgets = [(int(table["steps"].max()), table), *((int(b), g) for b, g in long_table.groupby("steps"))]
    test_sets = [t for t in TEST_SETS if t in set(table["test_set"])]
    rows = [
        {
            "steps": steps,
            "family": approach,
            **{t: family_effect(runs_at, direction, approach, t, seed) for t in test_sets},
        }
        for steps, runs_at in budgets
        for approach in ("decoder", "encoder")
    ]
    return pd.DataFrame(rows).set_index(["steps", "family"])


def law_models(runs_at: pd.DataFrame) -> set[str]:
    """The models of one budget's runs if Eq. 2 can be fitted to them (the baseline and at least two depths
    of each family: three sizes along each of the law's two axes), else the empty set."""
    models = runs_at.drop_duplicates("model").groupby("approach")["model"].apply(set)
    enough = "baseline" in models and all(len(models.get(a, ())) >= 2 for a in ("encoder", "decoder"))
    return set(runs_at["model"]) if enough else set()


def judging_runs(long_table: pd.DataFrame, seed: int = 0, direction: str = "en-de") -> pd.DataFrame:
    """The runs of the longest budget in `long_table` at which the baseline and each family reach
    `MIN_LAW_SIZES` sizes (baseline included), first seed, `direction`: where chapter 1 judges the claims
    that need only the encoder and decoder families (`claims`' `judged`). Empty when no budget has them."""
    rows = long_table[(long_table["direction"] == direction) & (long_table["seed"] == seed)]
    for _, runs_at in sorted(rows.dropna(subset=["loss"]).groupby("steps"), key=lambda item: -item[0]):
        models = runs_at.drop_duplicates("model").groupby("approach")["model"].nunique()
        if "baseline" in models and all(
            models.get(a, 0) + 1 >= MIN_LAW_SIZES for a in ("encoder", "decoder")
        ):
            return runs_at.reset_index(drop=True)
    return rows.iloc[0:0]


def judged_training(
    long_plan: Sequence[sweeps.PlannedRun],
    long_summaries: Sequence[RunSummary],
    judged_runs: pd.DataFrame,
    final_fraction: float,
    seed: int = 0,
    workers: int = 1,
) -> list[Analysis]:
    """Eq. 1 and Eq. 2 fitted to the training loss (`sweeps.training_loss_table`) of the runs `judging_runs`
    picked from the longer budgets (`long_plan` and its `long_summaries`); empty when it picked none. Only the
    fits are read, so two bootstrap refits keep it cheap."""
    if judged_runs.empty:
        return []
    table = sweeps.training_loss_table(long_plan, long_summaries, final_fraction)
    picked = table[table["run_id"].isin(judged_runs["run_id"])]
    return analyse_all(picked, seed, n_bootstrap=2, workers=workers)


def judged_spread(
    long_table: pd.DataFrame, judged_runs: pd.DataFrame, direction: str = "en-de"
) -> pd.DataFrame:
    """`sweeps.seed_spread` of every seed trained at the budget `judging_runs` picked (empty when it picked
    none, or no model was repeated there)."""
    at_budget = long_table[
        (long_table["steps"] == judged_runs["steps"].max()) & (long_table["direction"] == direction)
    ]
    return sweeps.seed_spread(at_budget)


def laws_by_budget(
    table: pd.DataFrame, long_table: pd.DataFrame, seed: int = 0, direction: str = "en-de"
) -> pd.DataFrame:
    """Eq. 2 fitted at every budget to one set of models, so that its coefficients can be compared across
    budgets: the models that every longer budget in `long_table` carrying a law (the baseline and two depths
    of each family, `law_models`) trained, fitted at the chapter's budget (`table`) and at each of those.
    One row per (steps, test_set): alpha, pe, pd, L_inf, R^2 (%), the number of runs and whether the runs
    determine the law. Empty when no longer budget carries a law."""
    rows = table[(table["direction"] == direction) & (table["seed"] == seed)].dropna(subset=["loss"])
    longer = long_table[(long_table["direction"] == direction) & (long_table["seed"] == seed)]
    longer = longer.dropna(subset=["loss"])
    candidates = [m for m in (law_models(group) for _, group in longer.groupby("steps")) if m]
    models = set.intersection(*candidates) if candidates else set()
    if not law_models(longer[longer["model"].isin(models)]):
        return pd.DataFrame()
    baseline = rows[rows["approach"] == "baseline"].iloc[0]
    law = laws.bivariate_law(float(baseline["Ne"]), float(baseline["Nd"]))
    budgets = [(int(rows["steps"].max()), rows), *((int(b), g) for b, g in longer.groupby("steps"))]
    fits = []
    for steps, runs_at in budgets:
        for test_set, points in runs_at[runs_at["model"].isin(models)].groupby("test_set", sort=False):
            if set(points["model"]) != models:
                continue
            fits.append({"steps": steps, "test_set": test_set, **_law_fit(law, points, points["loss"])})
    order = {t: i for i, t in enumerate(TEST_SETS)}
    return (
        pd.DataFrame(fits)
        .sort_values(["steps", "test_set"], key=lambda c: c.map(order) if c.name == "test_set" else c)
        .set_index(["steps", "test_set"])
    )


def law_stability_gates(laws_at: pd.DataFrame, max_change: float = 0.15) -> list[Gate]:
    """Issue 47's budget stability of the fitted exponents: pe and pd of `laws_by_budget` at each budget
    within `max_change` (relative) of their values at the budget before, per test set. An exponent on its
    lower bound 0 at the shorter budget has no relative change: stable if it stays there, else infinite."""
    gates = []
    if laws_at.empty:
        return gates
    budgets = sorted(set(laws_at.index.get_level_values("steps")))
    for test_set in [t for t in TEST_SETS if t in set(laws_at.index.get_level_values("test_set"))]:
        for b, b_long in itertools.pairwise(budgets):
            if (b, test_set) not in laws_at.index or (b_long, test_set) not in laws_at.index:
                continue
            for exponent in ("pe", "pd"):
                before = laws_at.loc[(b, test_set), exponent]
                after = laws_at.loc[(b_long, test_set), exponent]
                from_bound = 0.0 if after < ON_BOUND else math.inf
                change = from_bound if before < ON_BOUND else after / before - 1
                gates.append(
                    Gate(
                        f"law stability {b:,}->{b_long:,}, Eq. 2 {exponent} en-de {test_set} "
                        "(relative change)",
                        change,
                        f"within +-{max_change:.0%}",
                        bool(abs(change) <= max_change),
                        f"{before:.3f} at {b:,} updates, {after:.3f} at {b_long:,}"
                        + (" (on its lower bound 0 at the shorter budget)" if before < ON_BOUND else ""),
                    )
                )
    return gates


def scale_gates(
    table: pd.DataFrame,
    spread: pd.DataFrame,
    long_table: pd.DataFrame | None = None,
    seed: int = 0,
    direction: str = "en-de",
    min_effect: float = 10.0,
    max_budget_change: float = 0.15,
    min_span: float = 8.0,
) -> list[Gate]:
    """The conditions under which chapter 1's verdicts mean something, measured on its runs (`table`, from
    `sweeps.run_table`), its seed spread and, when given, the same runs at longer budgets (`long_table`):

    - the decoder effect (`family_effect`) at least `min_effect` seed standard deviations on every test set;
    - the encoder effect outside its 95% interval around zero (two single runs: +-1.96 sqrt(2) seed std);
    - budget stability: each family's effect at each budget within `max_budget_change` of it at the budget
      before (the chapter's, then each of `long_table`'s in turn);
    - N spanning at least `min_span` in each fitted family, and at least 3 models with 3 or more seeds;
    - no run data-limited: its last held-out loss within one seed std of its lowest (`above_minimum`);
    - the last-20% slope, reported: under a cosine schedule the anneal lowers it, so it is no flatness test.
    """
    rows = table[table["direction"] == direction]
    # each budget's runs, shortest first: the chapter's, then every budget in `long_table`
    budgets = [(rows, int(rows["steps"].max()))]
    if long_table is not None:
        budgets += [(group, int(b)) for b, group in long_table.groupby("steps")]
    gates = []
    for test_set in [t for t in TEST_SETS if t in set(rows["test_set"])]:
        std = seed_std(spread, direction, test_set) or math.nan  # no repeated seeds: no noise to judge by
        gates += _effect_gates(rows, direction, test_set, std, seed, min_effect)
        gates += _budget_stability_gates(budgets, direction, test_set, seed, max_budget_change)
    gates += _coverage_gates(rows, direction, min_span)
    judged = judging_runs(long_table, seed, direction) if long_table is not None else pd.DataFrame()
    if len(judged):  # the budget the claims are judged at: its sizes and seeds
        steps = int(judged["steps"].max())
        at_budget = long_table[(long_table["steps"] == steps) & (long_table["direction"] == direction)]
        gates += _coverage_gates(at_budget, direction, min_span, f" at {steps:,} updates")
    everything = pd.concat([table] if long_table is None else [table, long_table], ignore_index=True)
    return [*gates, *_convergence_gates(everything, float(spread["std"].mean()))]


def _effect_gates(
    rows: pd.DataFrame, direction: str, test_set: str, std: float, seed: int, min_effect: float
) -> list[Gate]:
    """`scale_gates`' decoder effect in seed std and encoder effect against its two-run interval."""
    decoder = family_effect(rows, direction, "decoder", test_set, seed)
    encoder = family_effect(rows, direction, "encoder", test_set, seed)
    half = difference_interval(std)
    return [
        Gate(
            f"decoder effect, {direction} {test_set} (seed std)",
            decoder / std,
            f">= {min_effect:g}",
            bool(decoder / std >= min_effect),
            f"shallowest minus deepest decoder {decoder:.3f} nats; seed std {std:.4f} nats",
        ),
        Gate(
            f"encoder effect, {direction} {test_set} (nats)",
            encoder,
            "95% interval excludes 0",
            bool(abs(encoder) > half),
            f"shallowest minus deepest encoder; 95% interval [{encoder - half:.3f}, {encoder + half:.3f}]",
        ),
    ]


def _budget_stability_gates(
    budgets: Sequence[tuple[pd.DataFrame, int]], direction: str, test_set: str, seed: int, max_change: float
) -> list[Gate]:
    """`scale_gates`' budget stability: each family's effect from each budget to the next (`budgets`: runs
    and steps, shortest first); not judged where a budget does not carry the family's extremes."""
    gates = []
    for (shorter, b), (longer, b_long) in itertools.pairwise(budgets):
        for approach in ("decoder", "encoder"):
            before = family_effect(shorter, direction, approach, test_set, seed)
            after = family_effect(longer, direction, approach, test_set, seed)
            name = (
                f"budget stability {b:,}->{b_long:,}, {approach} effect {direction} {test_set} "
                "(relative change)"
            )
            if math.isnan(after):
                gates.append(
                    Gate(name, math.nan, "", None, "the family's extremes are not both trained longer")
                )
                continue
            gates.append(_effect_change_gate(name, before, after, b, b_long, max_change))
    return gates


def _effect_change_gate(
    name: str, before: float, after: float, b: int, b_long: int, max_change: float
) -> Gate:
    """An effect of `before` nats at `b` updates and `after` at `b_long`, passed if its relative change is
    within `max_change`."""
    change = after / before - 1
    return Gate(
        name,
        change,
        f"within +-{max_change:.0%}",
        bool(abs(change) <= max_change),
        f"{before:.3f} nats at {b:,} updates, {after:.3f} at {b_long:,}",
    )


def _coverage_gates(rows: pd.DataFrame, direction: str, min_span: float, where: str = "") -> list[Gate]:
    """`scale_gates`' range of sizes per fitted family and the models repeated with 3 or more seeds, of the
    runs `rows` (`where` says which budget, when not the chapter's)."""
    gates = []
    for approach in ("encoder", "decoder"):
        family = rows[rows["approach"].isin(["baseline", approach])]
        span = family["N"].max() / family["N"].min()
        gates.append(
            Gate(
                f"N span{where}, {direction} {approach} family (max / min)",
                float(span),
                f">= {min_span:g}",
                bool(span >= min_span),
                f"{family['N'].min():,}-{family['N'].max():,} non-embedding parameters",
            )
        )
    seeds = rows.drop_duplicates(["model", "seed"]).groupby("model")["seed"].count()
    gates.append(
        Gate(
            f"models with >= 3 seeds{where}",
            float((seeds >= 3).sum()),
            ">= 3",
            bool((seeds >= 3).sum() >= 3),
            ", ".join(f"{model} x{n}" for model, n in seeds[seeds >= 2].items()),
        )
    )
    return gates


def _convergence_gates(everything: pd.DataFrame, noise: float) -> list[Gate]:
    """`scale_gates`' check that no run (at any budget) has begun to overfit, in units of the mean seed std
    `noise`, and the steepest last-20% slope, reported."""
    return [
        overfitting_gate(everything, noise, lambda run: f"{run['direction']} {run['model']}"),
        Gate(
            "steepest last-20% slope (nats per doubling of steps)",
            float(everything["slope"].min()),
            "",
            None,
            "under a cosine schedule the anneal lowers the loss at the end; budget stability is the test",
        ),
    ]
