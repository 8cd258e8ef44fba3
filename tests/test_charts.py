"""The chart helpers and the offline renderer: what the built book's pages receive must draw."""

import json
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest
import vl_convert

from nmtscale import charts


@pytest.fixture
def runs():
    return pd.DataFrame(
        {
            "params": [1e5, 3e5, 1e6, 1e5, 3e5, 1e6],
            "loss": [3.0, 2.6, 2.3, 3.2, 2.8, 2.5],
            "approach": ["encoder"] * 3 + ["decoder"] * 3,
            "run": [f"run-{i}" for i in range(6)],
        }
    )


@pytest.fixture
def fit():
    grid = np.geomspace(1e5, 1e6, 10)
    return pd.DataFrame(
        {
            "params": np.r_[grid, grid],
            "loss": np.r_[1.5 + 40 * grid**-0.3, 1.7 + 40 * grid**-0.3],
            "approach": ["encoder"] * 10 + ["decoder"] * 10,
        }
    )


def embedded_spec(html: str) -> tuple[str, dict]:
    """(container id, spec) from a chart's HTML, checking the div and the vegaEmbed call agree."""
    div = re.fullmatch(r'<div class="nmtscale-chart" id="([\w-]+)"></div>\n<script .*</script>', html, re.S)
    assert div, html[:200]
    chart_id = div.group(1)
    assert f'vegaEmbed("#{chart_id}", spec' in html
    spec_json = re.search(r"var spec = (.*);\n", html).group(1)
    return chart_id, json.loads(spec_json)


def test_renderer_emits_a_div_and_an_embed_call_whose_spec_draws(runs, fit):
    charts.enable_book_renderer()
    chart = charts.scaling_chart(runs, "params", "loss", series="approach", fit=fit, tooltip=["run"])
    bundle = chart._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    _, spec = embedded_spec(bundle["text/html"])
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    svg = vl_convert.vegalite_to_svg(spec)
    symbols = re.search(r'class="mark-symbol role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S).group(1)
    assert symbols.count("<path") == len(runs), "every measured point is drawn"
    alt.Chart.from_dict(spec)  # validates against the Vega-Lite schema


def test_identical_charts_get_distinct_ids_and_script_text_cannot_close_the_tag(runs):
    runs = runs.assign(run="</script><b>x</b>")
    spec = charts.scaling_chart(runs, "params", "loss", tooltip=["run"]).to_dict()
    first, second = charts.chart_html(spec), charts.chart_html(spec)
    assert embedded_spec(first)[0] != embedded_spec(second)[0]
    assert first.count("</script>") == 1
    assert embedded_spec(first)[1]["datasets"] == spec["datasets"]


def layers_by_mark(spec: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for layer in spec["layer"]:
        mark = layer["mark"] if isinstance(layer["mark"], dict) else {"type": layer["mark"]}
        found.setdefault(mark["type"], []).append({**layer, "mark": mark})
    return found


def test_scaling_chart_has_log_axes_dashed_fit_over_points_and_tooltips(runs, fit):
    band = fit.rename(columns={"loss": "lower"}).assign(upper=lambda d: d["lower"] * 1.05)
    spec = charts.scaling_chart(
        runs, "params", "loss", series="approach", fit=fit, band=band, tooltip=["run"]
    ).to_dict()
    layers = layers_by_mark(spec)
    assert set(layers) == {"area", "point", "line"}
    (points,) = layers["point"]
    (line,) = layers["line"]
    assert points["encoding"]["x"]["scale"]["type"] == "log"
    assert points["encoding"]["y"]["scale"]["type"] == "log"
    assert line["mark"]["strokeDash"] == [6, 4]
    assert [layer["mark"]["type"] for layer in spec["layer"]].index("line") > [
        layer["mark"]["type"] for layer in spec["layer"]
    ].index("point"), "the fitted curve is drawn over the measured points"
    assert {t["field"] for t in points["encoding"]["tooltip"]} == {"approach", "params", "loss", "run"}
    assert layers["area"][0]["encoding"]["y2"]["field"] == "upper"
    # Every layer shares one colour scale, so a series has the same colour in points, fit and band.
    scales = {json.dumps(layer["encoding"]["color"]["scale"]) for layer in spec["layer"]}
    assert len(scales) == 1


def test_linear_axes_and_connected_points_on_request(runs):
    spec = charts.scaling_chart(
        runs, "params", "loss", series="approach", log_x=False, log_y=False, connect=True
    )
    layers = layers_by_mark(spec.to_dict())
    assert set(layers) == {"line", "point"}
    assert "type" not in layers["point"][0]["encoding"]["x"]["scale"]
    assert "strokeDash" not in layers["line"][0]["mark"]


def test_recurring_series_keep_their_colour_and_others_do_not_collide():
    first = charts.color_scale(["decoder", "encoder", "my-run"]).to_dict()
    second = charts.color_scale(["encoder", "symmetric"]).to_dict()
    colours = dict(zip(first["domain"], first["range"], strict=True))
    assert colours["encoder"] == dict(zip(second["domain"], second["range"], strict=True))["encoder"]
    assert len(set(first["range"])) == 3
    with pytest.raises(ValueError, match="11 series .* but 10 distinguishable colours"):
        charts.color_scale([f"model {i}" for i in range(11)])


def test_bad_input_names_the_frame_and_column(runs, fit):
    with pytest.raises(ValueError, match=r"points lacks column\(s\) \['runs'\]"):
        charts.scaling_chart(runs, "params", "loss", tooltip=["runs"])
    with pytest.raises(ValueError, match=r"fit\['loss'\] has values <= 0"):
        charts.scaling_chart(runs, "params", "loss", fit=fit.assign(loss=fit["loss"] - 10))
    with pytest.raises(ValueError, match="band lacks column"):
        charts.scaling_chart(runs, "params", "loss", band=fit)


def test_vega_bundle_is_wrapped_and_publishes_vega_embed(tmp_path):
    path = charts.write_vega_bundle(tmp_path / "_static")
    text = path.read_text()
    assert path.name == charts.VEGA_BUNDLE_NAME
    assert text.startswith("(function(){\n") and text.rstrip().endswith("})();")
    assert "window.vegaEmbed=" in text
