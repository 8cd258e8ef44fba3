"""Chapter 2's charts, drawn from the analysis's tables."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from nmtscale import charts
from nmtscale.studies.composition.analysis import reducible_curves

PANEL_WIDTH = 220


METRIC_TITLES = {"bleu": "BLEU", "chrf": "chrF"}


def reducible_chart(frame: pd.DataFrame, multipliers, threshold: float, title: str) -> alt.LayerChart:
    """Fig. 7: each fitted law's reducible loss (`reducible_curves` of `composition_table` rows) against the
    baseline's scale-up, with the `threshold` as a dotted rule."""
    curves = reducible_curves(frame, multipliers)
    curves = curves[curves["reducible"] > 1e-4]
    rule = alt.Chart(pd.DataFrame({"y": [threshold]})).mark_rule(strokeDash=[2, 2]).encode(y="y:Q")
    lines = (
        alt.Chart(curves, title=title)
        .mark_line()
        .encode(
            x=alt.X("multiplier:Q", scale=alt.Scale(type="log"), title="baseline scaled by k"),
            y=alt.Y("reducible:Q", scale=alt.Scale(type="log"), title="reducible loss (nats)"),
            color=alt.Color("series:N"),
            strokeDash=alt.StrokeDash("originality:N"),
            tooltip=["series", "multiplier", "reducible"],
        )
    )
    return (lines + rule).properties(width=2 * PANEL_WIDTH, height=260)


def student_chart(frame: pd.DataFrame, title: str) -> alt.LayerChart:
    """Fig. 8: the students' loss (nats per character) against N, one series per training set."""
    return charts.scaling_chart(
        frame,
        x="N",
        y="loss",
        series="series",
        connect=True,
        tooltip=["width"],
        title=title,
        x_title="non-embedding parameters N",
        y_title="loss (nats per character)",
        width=PANEL_WIDTH,
        height=220,
    )


def drawable(cell: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The points of `cell` a log axis can show; a placeholder point where every score is 0 keeps the grid."""
    panel = cell[cell[metric] > 0]
    if panel.empty:
        panel = pd.DataFrame(
            {"loss": [cell["loss"].mean()], metric: [1e-2], "approach": ["all scores 0"]}
            | {column: ["-"] for column in ("model", "step")}
        )
    return panel


# Losses (a few nats) and scores (0-100) need three significant digits; a panel of one point would otherwise
# label its tick with all of them.
TICK_FORMAT = ".3~g"


def metric_chart(points: pd.DataFrame, fits: pd.DataFrame, direction: str, test_set: str, metric: str):
    """Fig. 9: `metric` (BLEU or chrF) against the loss of one direction and test set, one series per scaling
    approach, with Eq. 5 from `fits` (`bleu_fits` rows per direction and test set) where it was fitted."""
    cell = points[(points["direction"] == direction) & (points["test_set"] == test_set)]
    panel = drawable(cell, metric)
    fit_row = fits[(fits["direction"] == direction) & (fits["test_set"] == test_set)]
    fit = None
    if len(fit_row) and np.isfinite(fit_row["p_B"].iloc[0]):
        losses = np.linspace(panel["loss"].min(), panel["loss"].max(), 30)
        curve = fit_row["c_B"].iloc[0] * losses ** -fit_row["p_B"].iloc[0]
        fit = pd.DataFrame({"loss": losses, metric: curve, "approach": "Eq. 5"})
    return charts.scaling_chart(
        panel,
        x="loss",
        y=metric,
        series="approach",
        fit=fit,
        tooltip=["model", "step"],
        title=f"{direction} {test_set} ({cell['originality'].iloc[0]})",
        x_title="test loss (nats per token)",
        y_title=METRIC_TITLES[metric],
        width=PANEL_WIDTH,
        height=200,
        tick_format=TICK_FORMAT,
    )


def student_quality_chart(frame: pd.DataFrame, title: str) -> alt.LayerChart:
    """The students' BLEU against their loss (nats per character), one series per training set."""
    return charts.scaling_chart(
        drawable(frame, "bleu").rename(columns={"approach": "training set"}),
        x="loss",
        y="bleu",
        series="training set",
        tooltip=["model", "step"],
        title=f"{title} ({(frame['bleu'] == 0).sum()} zero scores not drawn)",
        x_title="test loss (nats per character)",
        y_title="BLEU",
        width=PANEL_WIDTH,
        height=200,
        tick_format=TICK_FORMAT,
    )
