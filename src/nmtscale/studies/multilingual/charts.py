"""Chapter 4's charts, drawn from the analysis's tables."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from nmtscale import charts
from nmtscale.studies.multilingual.analysis import SMALL_WEIGHT, SMALL_WEIGHT_GAIN, JointFit, rows_where


def per_weight_chart(
    points: pd.DataFrame, curves: pd.DataFrame, cohort: str, test_set: str
) -> alt.HConcatChart:
    """Fig. 2: the measured losses (`points`, column y) of one cohort and test set against N, one series per
    own weight, with the `per_weight_fits` curves; a panel per direction."""
    panels = []
    for direction in rows_where(points, cohort=cohort)["direction"].unique():
        key = {"cohort": cohort, "direction": direction, "test_set": test_set}
        pts, fit = rows_where(points, **key), rows_where(curves, **key)
        panels.append(
            charts.scaling_chart(
                pts.assign(weight=pts["weight"].astype(str)),
                x="N",
                y="y",
                series="weight",
                fit=fit.assign(weight=fit["weight"].astype(str)),
                tooltip=["size", "p"],
                title=f"{direction} ({cohort}), {test_set}",
                x_title="non-embedding parameters N",
                y_title="test loss (nats)",
                width=260,
                height=220,
            )
        )
    return alt.hconcat(*panels)


def coefficients_chart(coefficients: pd.DataFrame) -> alt.FacetChart:
    """Fig. 4: each `per_weight_fits` coefficient against the own weight, +-1 perturbation std, one line per
    direction and cohort; a row per coefficient, a column per test set."""
    frame = coefficients.assign(
        lower=coefficients["estimate"] - coefficients["std_error"],
        upper=coefficients["estimate"] + coefficients["std_error"],
        group=coefficients["direction"] + " (" + coefficients["cohort"] + ")",
    )
    base = alt.Chart(frame).encode(
        x=alt.X("weight:Q", title="own weight"), color=alt.Color("group:N", title="direction (cohort)")
    )
    return (
        alt.layer(
            base.mark_line(point=True).encode(y=alt.Y("estimate:Q", title=None)),
            base.mark_errorbar().encode(y=alt.Y("lower:Q", title=None), y2="upper:Q"),
        )
        .properties(width=220, height=180)
        .facet(row=alt.Row("parameter:N"), column=alt.Column("test_set:N"))
        .resolve_scale(y="independent")
    )


def joint_chart(
    joints: Sequence[JointFit], lines: pd.DataFrame, cohort: str, test_set: str, reducible: bool
) -> alt.HConcatChart:
    """Fig. 3 / 5: each direction's points and its Eq. 7 lines (`joint_curves`), as the loss or, with
    `reducible`, as L - L_inf on log axes (where the lines of one direction are parallel)."""
    panels = []
    for joint in [j for j in joints if j.cohort == cohort and j.test_set == test_set]:
        pts = joint.points.assign(weight=joint.points["weight"].astype(str))
        fit = rows_where(lines, cohort=cohort, direction=joint.direction, test_set=test_set)
        column = "y"
        if reducible:
            pts = pts.assign(reducible=pts["y"] - joint.fit.params["L_inf"])
            pts, column = pts[pts["reducible"] > 0], "reducible"
        panels.append(
            charts.scaling_chart(
                pts,
                x="N",
                y=column,
                series="weight",
                fit=fit.assign(weight=fit["weight"].astype(str)),
                title=f"{joint.direction} ({cohort}), {test_set}: Eq. 7, R² {joint.fit.diagnostics.r2:.1f}%",
                x_title="non-embedding parameters N",
                y_title="L - L∞ (nats)" if reducible else "test loss (nats)",
                width=260,
                height=220,
            )
        )
    return alt.hconcat(*panels)


def fraction_chart(frame: pd.DataFrame, color: str, title: str) -> alt.LayerChart:
    """Fig. 6: effective fractions f(p) (`effective_fractions` rows with a `label`) against the own weight,
    one line per `color` value, with their intervals, and the paper's published values in gray: the diagonal
    f = p it reports for En->XX pairs and the lower bounds it reports at 5% weight (`SMALL_WEIGHT_GAIN`,
    triangles)."""
    diagonal = alt.Chart(pd.DataFrame({"p": [0, 1], "f": [0, 1]})).mark_line(strokeDash=[2, 2], color="gray")
    bounds = pd.DataFrame(
        {
            "p": SMALL_WEIGHT,
            "f": [gain * SMALL_WEIGHT for gain in SMALL_WEIGHT_GAIN.values()],
            "paper": [
                f"Fernandes et al. Sec. 3.3: f(0.05) > {g:g} x 0.05, {side}"
                for side, g in SMALL_WEIGHT_GAIN.items()
            ],
        }
    )
    paper_labels = pd.DataFrame(
        {
            "p": [0.62, SMALL_WEIGHT + 0.03],
            "f": [0.52, bounds["f"].max() + 0.04],
            "text": ["paper: f = p", "paper, 5% weight"],
        }
    )
    # one legend title for every panel: the panels colour by different columns but share one legend
    base = alt.Chart(frame).encode(
        x=alt.X("p:Q", title="own weight p"), color=alt.Color(f"{color}:N", title="direction")
    )
    return alt.layer(
        diagonal.encode(x="p:Q", y="f:Q"),
        alt.Chart(bounds)
        .mark_point(shape="triangle-up", filled=True, color="gray", size=60)
        .encode(x="p:Q", y="f:Q", tooltip=["paper"]),
        alt.Chart(paper_labels)
        .mark_text(align="left", color="gray", fontSize=10)
        .encode(x="p:Q", y="f:Q", text="text:N"),
        base.mark_line(point=True).encode(
            y=alt.Y("f:Q", title="effective fraction f(p)"),
            tooltip=["label", "test_set", "p", alt.Tooltip("f:Q", format=".3f")],
        ),
        base.mark_errorbar().encode(y=alt.Y("lower:Q", title="effective fraction f(p)"), y2="upper:Q"),
    ).properties(title=title, width=230, height=220)


def frontier_chart(
    predicted: pd.DataFrame,
    measured: pd.DataFrame,
    pairs: pd.DataFrame,
    fit_weights: Sequence[float],
    cohort: str,
    test_set: str,
    form: str,
    metric: str = "loss",
) -> alt.LayerChart | None:
    """Fig. 7: the trade-off frontier one f_hat `form` predicts for a cohort and test set (dashed, one line
    per model size, from `frontiers`) and the measured points, marked held out where their weight is not in
    `fit_weights`; None where nothing was predicted. `metric` names what the axes measure (the test loss, or
    chrF for the frontier of Fig. 8)."""
    pred = rows_where(predicted, cohort=cohort, test_set=test_set, form=form)
    if pred.empty:
        return None
    meas = rows_where(measured, cohort=cohort, test_set=test_set)
    meas = meas.assign(held_out=~meas["p"].round(6).isin(np.round(fit_weights, 6)))
    first, second = rows_where(pairs, cohort=cohort)[["first", "second"]].iloc[0]
    lines = (
        alt.Chart(pred)
        .mark_line(strokeDash=[5, 3])
        .encode(
            x=alt.X("first:Q", scale=alt.Scale(zero=False), title=f"{first} {metric}"),
            y=alt.Y("second:Q", scale=alt.Scale(zero=False), title=f"{second} {metric}"),
            color=alt.Color("size:N", sort=list(pred.sort_values("N")["size"].unique())),
            order=alt.Order("p:Q"),
        )
    )
    dots = (
        alt.Chart(meas)
        .mark_point(filled=True, size=60)
        .encode(
            x="first:Q",
            y="second:Q",
            color="size:N",
            shape=alt.Shape("held_out:N", title="held out"),
            tooltip=[
                "size",
                "p",
                alt.Tooltip("first:Q", format=".3f"),
                alt.Tooltip("second:Q", format=".3f"),
            ],
        )
    )
    return alt.layer(lines, dots).properties(
        title=f"{cohort} {test_set}, f_hat {form}" + ("" if metric == "loss" else f" ({metric})"),
        width=260,
        height=240,
    )


def fraction_panels(fractions: pd.DataFrame, first_cohort: str) -> alt.VConcatChart:
    """Fig. 6 in three panels (`fraction_chart`), two a row: `first_cohort`'s directions on both test sets,
    the En->XX cohorts on l10n, and every cohort on l10n."""
    labelled = fractions.assign(label=fractions["direction"] + " (" + fractions["cohort"] + ")")
    first = rows_where(labelled, cohort=first_cohort)
    out_of_english = labelled[labelled["cohort"].str.startswith("en-")]
    return alt.vconcat(
        alt.hconcat(
            fraction_chart(
                first.assign(series=first["direction"] + " " + first["test_set"]),
                "series",
                f"{first_cohort}: l10n vs story",
            ),
            fraction_chart(rows_where(out_of_english, test_set="l10n"), "label", "En->XX cohorts (l10n)"),
        ),
        fraction_chart(rows_where(labelled, test_set="l10n"), "label", "all cohorts (l10n)"),
    )


def frontier_grid(
    predicted: pd.DataFrame,
    measured: pd.DataFrame,
    pairs: pd.DataFrame,
    fit_weights: Sequence[float],
    forms: Sequence[str],
    metric: str = "loss",
) -> alt.VConcatChart | None:
    """Every predicted frontier (`frontier_chart`) of `frontiers`' output: with several f_hat `forms`, a row
    per cohort and test set with a panel per form; with one, a row per cohort with a panel per test set.
    None where nothing was predicted."""
    keys = predicted[["cohort", "test_set"]].drop_duplicates().itertuples(index=False)
    panels: dict[tuple[str, ...], list[alt.LayerChart]] = {}
    for cohort, test_set in keys:
        row = (cohort, test_set) if len(forms) > 1 else (cohort,)
        for form in forms:
            panel = frontier_chart(predicted, measured, pairs, fit_weights, cohort, test_set, form, metric)
            if panel is not None:
                panels.setdefault(row, []).append(panel)
    return alt.vconcat(*[alt.hconcat(*row) for row in panels.values()]) if panels else None


def three_pair_chart(three_pairs: pd.DataFrame) -> alt.LayerChart:
    """App. H, Fig. 20: each three-direction model's measured loss against the loss a two-direction fit
    predicts for it (`three_pair_predictions`), one colour per direction and source cohort; on the dotted
    diagonal the prediction is exact."""
    ends = [
        three_pairs[["measured", "predicted"]].min().min(),
        three_pairs[["measured", "predicted"]].max().max(),
    ]
    return alt.layer(
        alt.Chart(pd.DataFrame({"predicted": ends, "measured": ends}))
        .mark_line(strokeDash=[2, 2], color="gray")
        .encode(x="predicted:Q", y="measured:Q"),
        alt.Chart(three_pairs.assign(series=three_pairs["direction"] + " from " + three_pairs["source"]))
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X("predicted:Q", scale=alt.Scale(zero=False), title="predicted loss (nats)"),
            y=alt.Y("measured:Q", scale=alt.Scale(zero=False), title="measured loss (nats)"),
            color="series:N",
            shape="test_set:N",
            tooltip=["size", "mixture", "direction", "source", alt.Tooltip("error:Q", format=".3f")],
        ),
    ).properties(title="Three-direction models: measured vs predicted", width=320, height=280)


def f_hat_chart(curves: pd.DataFrame, fractions: pd.DataFrame, test_set: str) -> alt.HConcatChart:
    """Fig. 5 against Eq. 12 and 13: one panel per cohort, the fitted f_hat curves (`f_hat_curves`, a dash
    per form) over the effective fractions the joint law measured (`effective_fractions`), on `test_set`."""
    lines = rows_where(curves, test_set=test_set)
    points = rows_where(fractions, test_set=test_set)
    return alt.hconcat(
        *[
            alt.layer(
                alt.Chart(rows_where(lines, cohort=cohort))
                .mark_line()
                .encode(
                    x=alt.X("p:Q", title="own weight p"),
                    y=alt.Y("f:Q", title="f"),
                    color="direction:N",
                    strokeDash="form:N",
                ),
                alt.Chart(rows_where(points, cohort=cohort))
                .mark_point(filled=True)
                .encode(x="p:Q", y="f:Q", color="direction:N"),
            ).properties(title=f"{cohort}, {test_set}", width=230, height=220)
            for cohort in lines["cohort"].unique()
        ]
    )


def learning_curve_chart(curves: pd.DataFrame, cohort: str, test_set: str) -> alt.FacetChart:
    """The test loss of every run of one cohort against its updates (`learning_curves`), one panel per
    direction, coloured by the direction's own weight, a dash per model size; log-log, as App. G fits it."""
    shown = rows_where(curves, cohort=cohort, test_set=test_set)
    return (
        alt.Chart(shown[shown["step"] > 0])
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", scale=alt.Scale(type="log")),
            y=alt.Y("loss:Q", scale=alt.Scale(type="log", nice=False), title="test loss (nats)"),
            color=alt.Color("weight:O", title="own weight"),
            detail="size:N",
            strokeDash=alt.StrokeDash("size:N"),
            tooltip=["direction", "size", "weight", "step", alt.Tooltip("loss:Q", format=".3f")],
        )
        .properties(width=300, height=240)
        .facet(column="direction:N")
    )


def chrf_loss_chart(table: pd.DataFrame) -> alt.FacetChart:
    """chrF against the test loss of every run and direction that was decoded, one panel per test set (the
    relation `chrf_loss_correlation` measures)."""
    quality = table.dropna(subset=["chrf"]).drop_duplicates(["run_id", "direction", "test_set"])
    return (
        alt.Chart(quality)
        .mark_point(filled=True)
        .encode(
            x=alt.X("loss:Q", scale=alt.Scale(zero=False), title="test loss (nats)"),
            y=alt.Y("chrf:Q", title="chrF"),
            color="direction:N",
            tooltip=["cohort", "size", "weight", alt.Tooltip("chrf:Q", format=".1f")],
        )
        .properties(width=260, height=220)
        .facet(column="test_set:N")
    )
