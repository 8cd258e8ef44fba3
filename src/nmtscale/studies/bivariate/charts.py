"""Chapter 1's charts, drawn from the analysis's tables."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from nmtscale import charts
from nmtscale.studies.bivariate.analysis import Analysis, fitted_curves, narrower, reducible_band
from nmtscale.studies.bivariate.plan import TEST_SETS

# Ghorbani Sec. 2.3: symmetric scaling of their models puts N_d / N at 0.55 (drawn beside ours in Fig. 6)
PAPER_SYMMETRIC_FRACTION = 0.55


def law_chart(a: Analysis, law: str, noise: float = 0.0, reducible: bool = False, width: int = 140):
    """The fitted law `law` ("Eq. 1" or "Eq. 2") of one test set over its runs, drawn along each scaling
    family (Ghorbani Fig. 1, 2, 12, 13). Eq. 2 gets a band of +-2 `noise` (the seed std: Fig. 13's
    convention); `reducible` plots L - L_inf instead of L. The title gives R^2 of the plotted loss."""
    curves = fitted_curves(a)
    fit = a.univariate if law == "Eq. 1" else a.bivariate
    points = a.fit_points if law == "Eq. 1" else a.points
    curve, band = curves[curves["law"] == law], None
    if law == "Eq. 1":  # one curve in N: drawn once, whatever the family
        curve = curve[curve["approach"] == "encoder"].assign(approach="Eq. 1")
    else:
        band = reducible_band(a, curves, noise)
    y = "reducible" if reducible else "loss"
    narrow = narrower(points)
    points = points.assign(approach=points["approach"].where(~narrow, points["approach"] + ", narrower"))
    if reducible:
        points = points.assign(reducible=points["loss"] - fit.params["L_inf"])
        points = points[points["reducible"] > 0]
        band = band.assign(lower=band["reducible_lower"].clip(lower=1e-4), upper=band["reducible_upper"])
    return charts.scaling_chart(
        points,
        x="N",
        y=y,
        series="approach",
        fit=curve,
        band=band,
        tooltip=["model", "d_model", "Ne", "Nd"],
        title=f"{a.direction} {a.test_set}: {law}, R² {fit.diagnostics.r2:.1f}%",
        x_title="non-embedding parameters N",
        y_title="reducible loss L - L∞ (nats)" if reducible else "test loss (nats)",
        width=width,
        height=200,
    )


def chart_grid(analyses: Sequence[Analysis], make_chart) -> alt.VConcatChart:
    """`make_chart(analysis)` for every analysis: one row per direction, one column per test set."""
    directions = list(dict.fromkeys(a.direction for a in analyses))
    return alt.vconcat(
        *[
            alt.hconcat(*[make_chart(a) for a in analyses if a.direction == direction])
            for direction in directions
        ]
    )


def learning_curves_chart(curves: pd.DataFrame, test_set: str) -> alt.HConcatChart:
    """`learning_curves` side by side, one panel per direction, log-log."""
    return alt.hconcat(
        *[
            alt.Chart(curves[curves["direction"] == direction], title=f"{direction}, {test_set}")
            .mark_line(point=True)
            .encode(
                x=alt.X("step:Q", scale=alt.Scale(type="log")),
                y=alt.Y("loss:Q", scale=alt.Scale(type="log", nice=False), title="test loss (nats)"),
                color=alt.Color("model:N"),
                tooltip=["model", "approach", "step", alt.Tooltip("loss:Q", format=".4f")],
            )
            .properties(width=280, height=260)  # the legend names up to 20 models
            for direction in dict.fromkeys(curves["direction"])
        ]
    )


def held_out_chart(held_out: pd.DataFrame) -> alt.LayerChart:
    """Measured against predicted loss of the held-out symmetric models (`held_out_predictions`), with the
    diagonal of perfect predictions."""
    ends = [held_out[["loss", "predicted"]].min().min(), held_out[["loss", "predicted"]].max().max()]
    diagonal = pd.DataFrame({"predicted": ends, "loss": ends, "series": "y = x"})
    return charts.scaling_chart(
        held_out,
        x="predicted",
        y="loss",
        series="series",
        fit=diagonal,
        tooltip=["model"],
        log_x=False,
        log_y=False,
        title="Symmetric models: measured vs predicted by Eq. 2",
        x_title="predicted loss (nats)",
        y_title="measured loss (nats)",
    )


def exponents_chart(exps: pd.DataFrame) -> alt.LayerChart:
    """pe and pd of every direction and test set (`exponents`) with their 95% bootstrap intervals."""
    points = pd.concat(
        [
            exps.assign(
                exponent=name, value=exps[name], lower=exps[f"{name}_lower"], upper=exps[f"{name}_upper"]
            )
            for name in ("pe", "pd")
        ],
        ignore_index=True,
    )
    points["test set"] = points["direction"] + " " + points["test_set"]
    base = alt.Chart(points).encode(
        y=alt.Y("test set:N", title=None),
        color=alt.Color("exponent:N", scale=charts.color_scale(["pe", "pd"])),
        yOffset="exponent:N",
    )
    return alt.layer(
        base.mark_rule(strokeWidth=2).encode(x=alt.X("lower:Q", title="exponent"), x2="upper:Q"),
        base.mark_point(filled=True, size=70).encode(
            x="value:Q", tooltip=["test set", "exponent", alt.Tooltip("value:Q", format=".3f")]
        ),
    ).properties(title="Fitted exponents with 95% bootstrap intervals", width=480, height=260)


def allocation_chart(alloc: pd.DataFrame, symmetric_fraction: float) -> alt.HConcatChart:
    """Prop. 1 / Fig. 6 from `allocation`: alpha# / alpha* (left) and the additive penalty at the baseline's
    size (right) against the decoder fraction, vertical lines at our symmetric models' fraction and at the
    paper's (`PAPER_SYMMETRIC_FRACTION`)."""
    symmetric = pd.DataFrame(
        {
            "decoder_fraction": [symmetric_fraction, PAPER_SYMMETRIC_FRACTION],
            "symmetric models": ["ours", "Ghorbani et al. (Sec. 2.3)"],
        }
    )

    def panel(column: str, title: str) -> alt.LayerChart:
        marker = (
            alt.Chart(symmetric)
            .mark_rule(color="gray")
            .encode(
                strokeDash=alt.StrokeDash(
                    "symmetric models:N",
                    scale=alt.Scale(range=[[2, 2], [6, 3]]),
                    legend=alt.Legend(orient="bottom"),
                )
            )
        )
        curves = charts.scaling_chart(
            alloc.assign(series=alloc["direction"] + " " + alloc["test_set"]),
            x="decoder_fraction",
            y=column,
            series="series",
            connect=True,
            log_x=False,
            log_y=column == "alpha_ratio",
            x_title="decoder fraction Nd / N",
            y_title=title,
            width=260,
            height=240,
        )
        return alt.layer(curves, marker.encode(x="decoder_fraction:Q"))

    return alt.hconcat(
        panel("alpha_ratio", "α# / α*"), panel("penalty", "L - L_opt at the baseline size (nats)")
    )


def budget_chart(curves: pd.DataFrame, test_set: str) -> alt.Chart:
    """`budget_curves` against the target tokens trained on, one dash pattern per budget."""
    return (
        alt.Chart(curves, title=f"en-de {test_set}: test loss against training tokens at every budget")
        .mark_line(point=True)
        .encode(
            x=alt.X("target_tokens:Q", scale=alt.Scale(type="log"), title="target tokens trained on"),
            y=alt.Y("loss:Q", scale=alt.Scale(type="log", nice=False), title="test loss (nats)"),
            color=alt.Color("model:N"),
            strokeDash=alt.StrokeDash("budget:N", title="budget"),
            tooltip=["model", "budget", "step", alt.Tooltip("loss:Q", format=".4f")],
        )
        .properties(width=520, height=300)
    )


def hyperparameter_chart(table: pd.DataFrame, column: str = "lr") -> alt.FacetChart:
    """`hyperparameter_table` as final loss against the swept value (the peak rate on a log axis; beta2 as
    1 - beta2, the averaging horizon's inverse, on a log axis too), one line per model (the mean over its
    seeds, each seed a point), one panel per test set."""
    if column == "beta2":
        table = table.assign(one_minus_beta2=1 - table["beta2"])
        x = alt.X("one_minus_beta2:Q", scale=alt.Scale(type="log"), title="1 - AdamW beta2")
    else:
        x = alt.X("lr:Q", scale=alt.Scale(type="log"), title="peak learning rate")
    base = alt.Chart(table).encode(
        x=x,
        y=alt.Y("loss:Q", scale=alt.Scale(zero=False), title="final test loss (nats)"),
        color=alt.Color("model:N"),
    )
    points = base.mark_point(filled=True).encode(
        tooltip=[
            "model",
            "seed",
            alt.Tooltip(f"{column}:Q", format=".4g"),
            alt.Tooltip("loss:Q", format=".4f"),
        ]
    )
    return (
        alt.layer(base.mark_line().encode(y="mean(loss):Q"), points)
        .properties(width=170, height=200)
        .facet(column=alt.Column("test_set:N", title=None))
        .resolve_scale(y="independent")
    )


def schedule_effects_chart(effects: pd.DataFrame) -> alt.FacetChart:
    """`schedule_effects` as what depth buys (shallowest minus deepest model, nats) against the budget, one
    line per schedule, one panel per family and test set: where the two lines run apart, the schedule moves
    the exponents; where a line keeps climbing, that family is still training-limited under it."""
    long = pd.concat(
        [
            effects.assign(schedule_name=effects[name], effect=effects[column])
            for name, column in (("schedule", "checked_effect"), ("reference", "reference_effect"))
        ],
        ignore_index=True,
    )
    lines = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X("steps:Q", scale=alt.Scale(type="log"), title="budget (updates)"),
            y=alt.Y("effect:Q", title="shallowest minus deepest (nats)"),
            # below the panels: three of them beside a row header leave no room for a legend at the side
            color=alt.Color("schedule_name:N", title="schedule", legend=alt.Legend(orient="bottom")),
            tooltip=["models", "test_set", "steps", "schedule_name", alt.Tooltip("effect:Q", format=".4f")],
        )
    )
    zero = alt.Chart().mark_rule(color="gray").encode(y=alt.datum(0))
    return (
        alt.layer(lines, zero, data=long)
        .properties(width=140, height=150)
        .facet(
            row=alt.Row("family:N", title=None),
            column=alt.Column("test_set:N", title=None, sort=TEST_SETS),
        )
        .resolve_scale(y="independent")
    )
