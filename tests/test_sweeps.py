"""Depth-scaling plans, the run table built from summaries, loss-curve slopes and seed spread."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from toy import summary_for

from nmtscale.config import from_dict
from nmtscale.engine.counting import parameter_counts
from nmtscale.engine.model import build_model
from nmtscale.runs import config_hash
from nmtscale.studies.sweeps import depth_scaling_plan, last_fraction_slope, run_table, seed_spread

BASE = from_dict(
    {
        "model": {"d_model": 16, "d_ff": 32, "n_heads": 2},
        "data": {"test_sets": ["l10n", "ding"], "vocab_size": 50},
        "train": {"steps": 40, "seed": 5},
        "eval": {"interval": 10},
    }
)


def plan(**kwargs):
    settings = dict(
        base=BASE,
        direction="de-en",
        baseline=(2, 2),
        encoder_depths=[1, 2, 4],
        decoder_depths=[1, 4],
        symmetric_depths=[2, 3],
    )
    return depth_scaling_plan(**(settings | kwargs))


def test_plan_lays_out_the_three_families_around_a_shared_baseline():
    runs = plan()
    by_label = {(r.label, r.seed): r for r in runs}
    assert [(r.approach, r.label) for r in runs] == [
        ("baseline", "2L-2L"),
        ("encoder", "1L-2L"),
        ("encoder", "4L-2L"),
        ("decoder", "2L-1L"),
        ("decoder", "2L-4L"),
        ("symmetric", "3L-3L"),
    ]
    assert {r.seed for r in runs} == {5}
    four_two = by_label[("4L-2L", 5)].config
    assert (four_two.model.enc_layers, four_two.model.dec_layers) == (4, 2)
    assert four_two.data.directions == ["de-en"]
    assert four_two.model.d_model == BASE.model.d_model and four_two.train.steps == BASE.train.steps
    assert len({config_hash(r.config) for r in runs}) == len(runs)


def test_repeated_models_get_consecutive_seeds_and_distinct_runs():
    runs = plan(repeated=[[2, 2], [3, 3]], n_seeds=3)
    seeds = {}
    for r in runs:
        seeds.setdefault(r.label, []).append(r.config.train.seed)
    assert seeds["2L-2L"] == [5, 6, 7] and seeds["3L-3L"] == [5, 6, 7] and seeds["1L-2L"] == [5]
    assert len({config_hash(r.config) for r in runs}) == len(runs)


def test_narrower_models_extend_the_family_that_shares_their_other_side():
    runs = plan(narrower={8: [[1, 2], [2, 1]]})
    narrow = [r for r in runs if r.off_width]
    assert [(r.approach, r.label) for r in narrow] == [("encoder", "1L-2L w8"), ("decoder", "2L-1L w8")]
    model = narrow[0].config.model
    assert (model.d_model, model.d_ff, model.n_heads, model.enc_layers, model.dec_layers) == (8, 16, 2, 1, 2)
    assert len({config_hash(r.config) for r in runs}) == len(runs)  # not the 16-wide 1L-2L's run
    as_json = plan(narrower={"8": [[1, 2], [2, 1]]})  # a chapter's parameters arrive through JSON
    assert [config_hash(r.config) for r in as_json] == [config_hash(r.config) for r in runs]
    table = run_table(narrow, [summary_for(r, {"l10n": 3.0, "ding": 3.5}) for r in narrow])
    assert set(table["d_model"]) == {8} and set(table["model"]) == {"1L-2L w8", "2L-1L w8"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"narrower": {16: [[1, 2]]}}, "multiples of n_heads"),
        ({"narrower": {7: [[1, 2]]}}, "multiples of n_heads"),
        ({"narrower": {8: [[2, 2]]}}, r"\[2, 2\] at width 8 must share exactly one depth"),
        ({"narrower": {8: [[1, 1]]}}, "must share exactly one depth"),
        ({"narrower": {8: [[1]]}}, r"narrower model \[1\] at width 8: expected \[encoder layers"),
        ({"baseline": (0, 2)}, "baseline must be"),
        ({"encoder_depths": [0, 2]}, "encoder_depths must all be >= 1"),
        ({"repeated": [[5, 5]]}, r"repeated models \[\[5, 5\]\] are not in the plan"),
        ({"n_seeds": 0}, "n_seeds must be >= 1"),
    ],
)
def test_bad_plans_are_refused_with_the_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plan(**kwargs)


def curve(steps, losses, key="de-en/l10n"):
    return [{"step": s, "test_loss": {key: loss}} for s, loss in zip(steps, losses, strict=True)]


def test_slope_is_nats_per_doubling_over_the_last_stretch():
    steps = [100, 200, 400, 800, 1000]
    # loss falls 0.1 per doubling early on and 0.02 per doubling at the end
    losses = [5.0, 4.9, 4.8, 4.78, 4.78 - 0.02 * math.log2(1000 / 800)]
    assert last_fraction_slope(curve(steps, losses), "de-en/l10n", 0.2) == pytest.approx(-0.02)
    assert last_fraction_slope(curve(steps, losses), "de-en/l10n", 1.0) < -0.02
    assert last_fraction_slope(curve([800, 1000], [3.0, 3.0]), "de-en/l10n") == pytest.approx(0.0)
    assert math.isnan(last_fraction_slope(curve([500, 1000], [3.0, 2.9]), "de-en/l10n", 0.2))
    assert math.isnan(last_fraction_slope([], "de-en/l10n"))
    with pytest.raises(ValueError, match="fraction"):
        last_fraction_slope(curve(steps, losses), "de-en/l10n", 0.0)


def test_run_table_counts_encoder_and_decoder_like_the_built_model():
    runs = plan()
    summaries = [summary_for(r, {"l10n": 3.0 + i, "ding": 4.0 + i}) for i, r in enumerate(runs)]
    summaries[-1] = summary_for(runs[-1], {"l10n": 9.0, "ding": 9.0}, status="failed")
    table = run_table(runs, summaries, fraction=0.3)
    assert len(table) == 2 * len(runs)
    row = table[(table["model"] == "4L-2L") & (table["test_set"] == "ding")].iloc[0]
    model_cfg = runs[2].config.model
    built = build_model(model_cfg.__class__(**{**model_cfg.__dict__, "vocab_size": 50})).parameter_counts()
    assert (row["Ne"], row["Nd"]) == (built["encoder"], built["decoder"])
    assert (
        row["N"]
        == row["Ne"] + row["Nd"]
        == sum(parameter_counts(model_cfg)[k] for k in ("encoder", "decoder"))
    )
    assert row["tokens_per_param"] == pytest.approx(4000 / row["N"])
    assert row["loss"] == 4.0 + 2 and row["approach"] == "encoder"
    # the last 30% holds the evaluations at steps 30 and 40: 0.1 nats down over log2(4/3) doublings
    assert row["slope"] == pytest.approx(-0.1 / math.log2(4 / 3))
    assert table[table["model"] == "3L-3L"]["loss"].isna().all()


def test_failed_runs_keep_their_rows_with_the_reason():
    runs = plan()
    summaries = [summary_for(r, {"l10n": 3.0, "ding": 4.0}) for r in runs]
    failed = summary_for(runs[1], {"l10n": 3.0, "ding": 4.0}, status="failed")
    # as the trainer writes a diverged run: no final loss, no curve, its test sets named by their sizes
    failed.final_loss, failed.curves, failed.reason = {}, [], "diverged at step 3: loss nan"
    failed.test_set_sizes = {f"{runs[1].direction}/l10n": 10, f"{runs[1].direction}/ding": 10}
    summaries[1] = failed
    table = run_table(runs, summaries)
    assert len(table) == 2 * len(runs)
    rows = table[table["run_id"] == failed.run_id]
    assert len(rows) == 2 and rows["loss"].isna().all() and (rows["status"] == "failed").all()
    assert (rows["reason"] == "diverged at step 3: loss nan").all()
    assert table.loc[table["run_id"] != failed.run_id, "reason"].isna().all()


def test_run_table_refuses_a_summary_of_another_run():
    runs = plan()
    summaries = [summary_for(r, {"l10n": 3.0, "ding": 4.0}) for r in runs]
    summaries[0], summaries[1] = summaries[1], summaries[0]
    with pytest.raises(ValueError, match="is not the run of 2L-2L"):
        run_table(runs, summaries)
    with pytest.raises(ValueError, match="6 planned runs but 5 summaries"):
        run_table(runs, summaries[:5])


def test_seed_spread_averages_the_per_model_std_and_keeps_the_largest_range():
    table = pd.DataFrame(
        {
            "direction": "en-de",
            "test_set": "l10n",
            "model": ["a", "a", "a", "b", "b", "c"],
            "loss": [1.0, 1.2, 1.1, 2.0, 2.4, 7.0],
        }
    )
    spread = seed_spread(table)
    assert len(spread) == 1
    row = spread.iloc[0]
    assert row["models"] == 2 and row["seeds"] == 2
    assert row["std"] == pytest.approx((np.std([1.0, 1.2, 1.1], ddof=1) + np.std([2.0, 2.4], ddof=1)) / 2)
    assert row["max_difference"] == pytest.approx(0.4), "the largest difference between two seeds of a model"
