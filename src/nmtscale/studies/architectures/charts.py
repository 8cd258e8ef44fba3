"""Chapter 3's charts, drawn from the analysis's tables."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from nmtscale import charts


def flops_charts(compute: pd.DataFrame) -> list[alt.LayerChart]:
    """Training and inference FLOPs per target token (`compute_table`) against N, one chart each."""
    points = compute.melt(
        id_vars=["variant", "size", "N"],
        value_vars=["train_flops_per_token", "inference_flops_per_token"],
        var_name="kind",
        value_name="flops",
    )
    return metric_charts(
        points,
        "kind",
        "flops",
        lambda kind: kind.replace("_", " "),
        "FLOPs per target token",
        tooltip=("size",),
    )


# two panels a row (`charts.wrapped`), axes and legend fit the text column (`book.COLUMN_WIDTH_PX`)
PANEL_WIDTH = 210


def loss_chart(
    table: pd.DataFrame, curves: pd.DataFrame | None, pair: str, test_set: str, x: str = "N"
) -> alt.LayerChart:
    """Fig. 2: the final loss of every variant of one language pair on one test set against `x` (N, or
    "layers" with the points joined), with the fitted Eq. 7 `curves` (`law_curves`) where given."""

    def chosen(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[(frame["group"] == pair) & (frame["test_set"] == test_set)]

    return charts.scaling_chart(
        chosen(table),
        x=x,
        y="loss",
        series="variant",
        fit=None if curves is None else chosen(curves),
        connect=curves is None,
        tooltip=["size", "layers", "N"],
        title=f"{pair} {test_set}",
        x_title="non-embedding parameters N" if x == "N" else "layers",
        y_title="test loss (nats)",
        width=PANEL_WIDTH,
        height=240,
    )


def metric_charts(
    frame: pd.DataFrame,
    column: str,
    y: str,
    title,
    y_title: str,
    log_y: bool = True,
    tooltip=("size", "layers"),
) -> list[alt.LayerChart]:
    """One chart per value of `column` (in order of appearance): `y` against N per variant, points joined;
    `title(value)` names each."""
    return [
        charts.scaling_chart(
            frame[frame[column] == value],
            x="N",
            y=y,
            series="variant",
            connect=True,
            log_y=log_y,
            tooltip=list(tooltip),
            title=title(value),
            x_title="non-embedding parameters N",
            y_title=y_title,
            width=PANEL_WIDTH,
            height=240,
        )
        for value in frame[column].unique()
    ]


def exponent_chart(
    exponents: pd.DataFrame, pair: str, name: str, order: Sequence[str], colors: alt.Scale
) -> alt.LayerChart:
    """Fig. 3: Eq. 7 parameter `name` with its 95% interval per evaluation setting (in `order`) and variant,
    on one pair's models (`law_parameters` rows)."""
    chart = alt.Chart(exponents[exponents["group"] == pair]).encode(
        y=alt.Y("setting:N", sort=list(order), title=None),
        color=alt.Color("variant:N", scale=colors),
        yOffset="variant:N",
    )
    return alt.layer(
        chart.mark_rule().encode(x=alt.X(f"{name}_lower:Q", title=name), x2=f"{name}_upper:Q"),
        chart.mark_point(filled=True).encode(
            x=f"{name}:Q", tooltip=["variant", "setting", alt.Tooltip(f"{name}:Q", format=".3f")]
        ),
    ).properties(width=PANEL_WIDTH - 20, height=320, title=f"{pair}: Eq. 7 {name} with 95% intervals")


def zero_shot_chart(ml: pd.DataFrame) -> alt.ConcatChart:
    """Table 3's zero-shot columns as bars: mean BLEU, off-target rate and loss of the zero-shot directions
    (`translation_table` rows) per variant and size, two panels a row."""
    zero_shot = ml[ml["kind"] == "zero-shot"]
    return charts.wrapped(
        [
            alt.Chart(zero_shot, title=f"zero-shot {metric.replace('_', ' ')}")
            .mark_bar()
            .encode(
                x=alt.X("variant:N", title=None),
                xOffset="size:N",
                y=alt.Y(f"mean({metric}):Q", title=metric.replace("_", " ")),
                color=alt.Color("size:N"),
                tooltip=["variant", "size", alt.Tooltip(f"mean({metric}):Q", format=".3f")],
            )
            .properties(width=PANEL_WIDTH, height=220)
            for metric in ("bleu", "off_target_rate", "loss")
        ]
    )
