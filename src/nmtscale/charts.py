"""Charts with one look for every chapter, drawn offline and still interactive in the built book.

Altair's stock renderers either fetch vega from a CDN (nothing draws offline) or inline a full copy of vega in
every chart (a second chart on a page breaks). The book therefore uses its own renderer: a chart becomes a
``<div>`` plus a ``vegaEmbed(...)`` call, and every page loads ONE vega bundle, written by `write_vega_bundle`
into the book's ``_static/`` folder and listed in ``html_js_files``.

Typical use in a chapter::

    from nmtscale import charts
    charts.enable_book_renderer()
    charts.scaling_chart(runs, x="params", y="loss", series="approach", fit=curves, tooltip=["run"])
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import altair as alt
import pandas as pd

RENDERER_NAME = "nmtscale"
CHART_CLASS = "nmtscale-chart"
VEGA_BUNDLE_NAME = "nmtscale-vega.js"

# Tableau 10: distinct for the few series a chart holds, readable on white, kind to colour-blind readers.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)

# Series that recur across chapters keep their colour everywhere, so a reader can match them at a glance.
SERIES_COLORS = {
    # test sets
    "l10n": PALETTE[0],
    "story": PALETTE[1],
    "ding": PALETTE[2],
    # scaling approaches (Ghorbani et al.)
    "encoder": PALETTE[0],
    "decoder": PALETTE[2],
    "symmetric": PALETTE[4],
    # architectures (Zhang et al.)
    "encdec": PALETTE[0],
    "prefixlm": PALETTE[1],
    "prefixlm_toponly": PALETTE[3],
    "causallm": PALETTE[2],
    "causallm_tgtonly": PALETTE[6],
}

# vega-embed draws SVG (crisp when zoomed); its menu keeps only what works offline (export to SVG/PNG).
_EMBED_OPTIONS = {
    "renderer": "svg",
    "actions": {"export": True, "source": False, "compiled": False, "editor": False},
}
_chart_counter = itertools.count()


def chart_html(spec: dict) -> str:
    """HTML for one chart: a container ``<div>`` and a script that draws `spec` into it with vegaEmbed.

    The id is derived from the spec, so re-executing a notebook gives the same output; a per-process counter
    keeps two identical charts on one page apart.
    """
    spec_json = json.dumps(spec, sort_keys=True)
    digest = hashlib.sha1(f"{spec_json}{next(_chart_counter)}".encode()).hexdigest()[:12]
    div_id = f"{CHART_CLASS}-{digest}"
    # "</" inside a <script> would end it early; "<\/" is the same string to JavaScript.
    safe_spec = spec_json.replace("</", "<\\/")
    options = json.dumps(_EMBED_OPTIONS)
    return (
        f'<div class="{CHART_CLASS}" id="{div_id}"></div>\n'
        '<script type="text/javascript">\n'
        "(function () {\n"
        f"  var spec = {safe_spec};\n"
        f'  function draw() {{ vegaEmbed("#{div_id}", spec, {options}).catch(console.error); }}\n'
        # The bundle is normally loaded in <head>; if a theme defers it, draw once the page has loaded.
        '  if (window.vegaEmbed) { draw(); } else { window.addEventListener("load", draw); }\n'
        "})();\n"
        "</script>"
    )


def _book_renderer(spec: dict, **metadata) -> dict:
    return {"text/html": chart_html(spec), "text/plain": "<chart: drawn in the built book>"}


def enable_book_renderer() -> None:
    """Make Altair display charts as `chart_html` output, which draws in the built book without a network."""
    alt.renderers.register(RENDERER_NAME, _book_renderer)
    alt.renderers.enable(RENDERER_NAME)


def write_vega_bundle(static_dir: Path) -> Path:
    """Write the vega + vega-lite + vega-embed bundle that `chart_html` needs into `static_dir`.

    The bundle is wrapped in a function scope: its top-level names would otherwise collide with Sphinx's own
    scripts (``Identifier '_' has already been declared``); it still publishes ``window.vegaEmbed``.
    """
    import vl_convert

    static_dir.mkdir(parents=True, exist_ok=True)
    path = static_dir / VEGA_BUNDLE_NAME
    path.write_text("(function(){\n" + vl_convert.javascript_bundle() + "\n})();\n", encoding="utf-8")
    return path


def color_scale(names: Iterable[str]) -> alt.Scale:
    """A colour scale for these series: recurring names get their `SERIES_COLORS` colour, others the unused
    palette colours in the order given (sort `names` the same way in every chart that shares them)."""
    domain = list(dict.fromkeys(names))
    if len(domain) > len(PALETTE):
        raise ValueError(
            f"{len(domain)} series ({', '.join(domain)}) but {len(PALETTE)} distinguishable colours: colour "
            "by a coarser grouping and name the series in the tooltip"
        )
    used = {SERIES_COLORS[name] for name in domain if name in SERIES_COLORS}
    spare = iter([c for c in PALETTE if c not in used] + [c for c in PALETTE if c in used])
    colors = [SERIES_COLORS.get(name) or next(spare) for name in domain]
    return alt.Scale(domain=domain, range=colors)


def scaling_chart(
    points: pd.DataFrame,
    x: str,
    y: str,
    *,
    series: str | None = None,
    fit: pd.DataFrame | None = None,
    band: pd.DataFrame | None = None,
    tooltip: Sequence[str] = (),
    log_x: bool = True,
    log_y: bool = True,
    connect: bool = False,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    width: int = 520,
    height: int = 320,
    tick_format: str | None = None,
) -> alt.LayerChart:
    """Measured points with fitted curves dashed over them, on log-log axes by default.

    points: one row per measurement, with columns `x`, `y`, `series` (if given) and the `tooltip` columns.
    fit: the fitted law evaluated on a grid: columns `x`, `y` (and `series`); drawn dashed.
    band: an uncertainty band around the fit: columns `x`, ``lower``, ``upper`` (and `series`).
    connect: also join the measured points by solid lines (learning curves, sweeps).
    tick_format: a d3 format for both axes' tick labels; without it a panel whose points share one value
    labels its single tick with every digit, which can widen the chart past the page.
    """
    keys = [series] if series else []
    _check_columns(points, "points", [x, y, *keys, *tooltip])
    checks = [(points, "points", y)]
    if fit is not None:
        _check_columns(fit, "fit", [x, y, *keys])
        checks.append((fit, "fit", y))
    if band is not None:
        _check_columns(band, "band", [x, "lower", "upper", *keys])
        checks.append((band, "band", "lower"))
    for frame, name, y_column in checks:
        for column, log in ((x, log_x), (y_column, log_y)):
            if log and (frame[column] <= 0).any():
                raise ValueError(f"{name}[{column!r}] has values <= 0, which a log axis cannot show")

    axis = alt.Axis(format=tick_format) if tick_format else alt.Undefined
    x_enc = alt.X(x, type="quantitative", title=x_title or x, scale=_axis_scale(log_x), axis=axis)
    y_axis = {"title": y_title or y, "scale": _axis_scale(log_y), "axis": axis}
    y_enc = alt.Y(y, type="quantitative", **y_axis)
    frames = [frame for frame, _, _ in checks]
    names = sorted(set(pd.concat([frame[series] for frame in frames]))) if series else []
    # One legend for all layers; its symbols look like the measured points, not like the faint band.
    legend = alt.Legend(symbolType="circle", symbolOpacity=1)
    color = (
        alt.Color(series, type="nominal", scale=color_scale(names), legend=legend)
        if series
        else alt.Undefined
    )

    layers = []
    if band is not None:
        layers.append(
            alt.Chart(band)
            .mark_area(opacity=0.18)
            .encode(
                x=x_enc,
                y=alt.Y("lower", type="quantitative", **y_axis),
                y2="upper",
                color=color,
            )
        )
    measured = alt.Chart(points).encode(
        x=x_enc, y=y_enc, color=color, tooltip=_tooltips(points, [*keys, x, y, *tooltip])
    )
    if connect:
        layers.append(measured.mark_line(strokeWidth=1.5))
    layers.append(measured.mark_point(filled=True, size=60, opacity=0.9))
    if fit is not None:
        layers.append(
            alt.Chart(fit).mark_line(strokeDash=[6, 4], strokeWidth=2).encode(x=x_enc, y=y_enc, color=color)
        )
    return alt.layer(*layers).properties(title=title, width=width, height=height)


def _axis_scale(log: bool) -> alt.Scale:
    return alt.Scale(type="log", nice=False) if log else alt.Scale(zero=False)


def _tooltips(frame: pd.DataFrame, columns: Sequence[str]) -> list[alt.Tooltip]:
    tips = []
    for column in dict.fromkeys(columns):
        if pd.api.types.is_numeric_dtype(frame[column]):
            tips.append(alt.Tooltip(column, type="quantitative", format=".4~g"))
        else:
            tips.append(alt.Tooltip(column, type="nominal"))
    return tips


def _check_columns(frame: pd.DataFrame, name: str, columns: Iterable[str]) -> None:
    missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(frame.columns)}")


# The scorecard's colours: green to red from reproduced to not reproduced, grey for not testable.
# reproduced, partly, not reproduced, not testable at this scale, not tested here
VERDICT_COLOURS = ("#59a14f", "#edc948", "#e15759", "#bab0ac", "#79706e")


def verdict_bars(counts: pd.DataFrame, verdicts: Sequence[str]) -> alt.Chart:
    """One horizontal bar per chapter, split by verdict (`counts`: one row per chapter, a column per
    verdict, as `studies.claims.counts` makes)."""
    _check_columns(counts, "counts", verdicts)
    long = (
        counts[list(verdicts)]
        .reset_index(names="chapter")
        .melt("chapter", var_name="verdict", value_name="claims")
    )
    long["order"] = long["verdict"].map({v: i for i, v in enumerate(verdicts)})
    return (
        alt.Chart(long[long["claims"] > 0], title="Claims by verdict")
        .mark_bar()
        .encode(
            y=alt.Y("chapter:N", sort=list(counts.index), title=None, axis=alt.Axis(labelLimit=260)),
            x=alt.X("claims:Q", title="claims", axis=alt.Axis(tickMinStep=1)),
            color=alt.Color(
                "verdict:N",
                scale=alt.Scale(domain=list(verdicts), range=list(VERDICT_COLOURS[: len(verdicts)])),
                sort=list(verdicts),
            ),
            order=alt.Order("order:Q"),
            tooltip=["chapter", "verdict", "claims"],
        )
        # 260 px of labels, the bars and the legend fit the text column (`book.COLUMN_WIDTH_PX`)
        .properties(width=340)
    )


def wrapped(charts: Sequence[alt.TopLevelMixin], columns: int = 2) -> alt.ConcatChart:
    """Charts laid out `columns` to a row, so that a grid of panels fits the book's text column."""
    return alt.concat(*charts, columns=columns)
