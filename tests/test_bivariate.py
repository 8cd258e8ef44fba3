"""Chapter 1's analysis on synthetic depth-scaling families drawn from a known bivariate law."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from toy import summary_for

from nmtscale import book, laws, record, runs
from nmtscale.engine.counting import parameter_counts
from nmtscale.laws import fitting
from nmtscale.runs import config_hash
from nmtscale.studies import bivariate, claims, sweeps

NE_LAYER, ND_LAYER = 12_000, 16_000  # parameters per encoder / decoder layer
TRUTH = {"alpha": 0.8, "pe": 0.15, "pd": 0.45, "L_inf": 2.0}


def synthetic_table(
    truth=TRUTH, noise: float = 0.002, seed: int = 0, direction: str = "en-de"
) -> pd.DataFrame:
    """Rows like `sweeps.run_table`'s for a 2L-2L baseline, encoder/decoder scaling and symmetric models."""
    rng = np.random.default_rng(seed)
    models = (
        [("baseline", 2, 2)]
        + [("encoder", e, 2) for e in (1, 3, 4, 6, 8)]
        + [("decoder", 2, d) for d in (1, 3, 4, 6, 8)]
        + [("symmetric", k, k) for k in (1, 3, 5)]
    )
    law = laws.bivariate_law(2 * NE_LAYER, 2 * ND_LAYER)
    rows = []
    for approach, enc, dec in models:
        ne, nd = enc * NE_LAYER, dec * ND_LAYER
        loss = float(law(pd.DataFrame({"Ne": [ne], "Nd": [nd]}), truth)[0])
        for test_set, shift in (("l10n", 0.0), ("ding", 0.5)):
            rows.append(
                {
                    "direction": direction,
                    "approach": approach,
                    "model": f"{enc}L-{dec}L",
                    "enc_layers": enc,
                    "dec_layers": dec,
                    "d_model": 64,
                    "seed": 0,
                    "Ne": ne,
                    "Nd": nd,
                    "N": ne + nd,
                    "tokens_per_param": 30.0,
                    "slope": -0.001,
                    "test_set": test_set,
                    "loss": loss + shift + rng.normal(0, noise),
                    "run_id": f"{enc}-{dec}",
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def analyses():
    return bivariate.analyse_all(synthetic_table(), n_bootstrap=30)


def test_bivariate_fit_recovers_the_law_and_predicts_the_held_out_models(analyses):
    assert [(a.direction, a.test_set) for a in analyses] == [("en-de", "l10n"), ("en-de", "ding")]
    l10n = analyses[0]
    assert (l10n.ne_bar, l10n.nd_bar) == (2 * NE_LAYER, 2 * ND_LAYER)
    assert len(l10n.fit_points) == 11 and len(l10n.held_out_points) == 3
    assert l10n.bivariate.params["pe"] == pytest.approx(TRUTH["pe"], abs=0.05)
    assert l10n.bivariate.params["pd"] == pytest.approx(TRUTH["pd"], abs=0.05)
    assert analyses[1].bivariate.params["L_inf"] == pytest.approx(TRUTH["L_inf"] + 0.5, abs=0.1)
    quality = bivariate.fit_quality(analyses)
    assert (quality["eq2_r2"] > 99).all() and (quality["symmetric_r2"] > 95).all()
    assert (quality["symmetric_max_error"] < 0.02).all()


def test_rounding_sensitivity_gives_each_fits_coefficient_moves_beside_its_bootstrap_spread(analyses):
    rounding = bivariate.rounding_sensitivity(analyses)
    assert list(rounding[["direction", "test_set"]].itertuples(index=False, name=None)) == [
        ("en-de", "l10n"),
        ("en-de", "ding"),
    ]
    coefficients = list(analyses[0].bivariate.params)
    assert (rounding[coefficients] >= 0).all().all()
    assert (rounding["largest_in_std"] < 0.1).all()  # rounding decides far less than the runs


def test_univariate_law_fails_when_encoder_and_decoder_scale_differently(analyses):
    quality = bivariate.fit_quality(analyses)
    assert (quality["eq1_max_dev"] > 3 * quality["eq2_max_dev"]).all()
    assert (quality["eq1_r2"] < quality["eq2_r2"]).all()


def test_exponents_carry_bootstrap_intervals_and_the_pd_gt_pe_share(analyses):
    exps = bivariate.exponents(analyses)
    assert (exps["pe_lower"] <= exps["pe"]).all() and (exps["pe"] <= exps["pe_upper"]).all()
    assert (exps["share_pd_gt_pe"] == 1.0).all()


def test_recipe_and_multistart_agree_on_clean_data(analyses):
    recipe = bivariate.recipe_comparison(analyses)
    assert set(recipe["fit"]) == {"multi-start Huber (log)", "soft_l1 recipe"}
    assert (recipe["max_prediction_gap"] < 0.01).all()


def test_allocation_is_optimal_at_pd_over_pe_plus_pd(analyses):
    fractions = np.linspace(0.05, 0.95, 181)
    alloc = bivariate.allocation(analyses, fractions)
    l10n = alloc[alloc["test_set"] == "l10n"]
    pe, pd_ = analyses[0].bivariate.params["pe"], analyses[0].bivariate.params["pd"]
    best = l10n.loc[l10n["alpha_ratio"].idxmin()]
    assert best["decoder_fraction"] == pytest.approx(pd_ / (pe + pd_), abs=0.01)
    assert best["alpha_ratio"] == pytest.approx(1.0, abs=1e-3)
    assert (l10n["alpha_ratio"] >= 1 - 1e-9).all() and (l10n["penalty"] >= -1e-12).all()
    spec = json.dumps(bivariate.allocation_chart(alloc, 0.6).to_dict())
    assert '"decoder_fraction": 0.55' in spec and "Ghorbani et al. (Sec. 2.3)" in spec, "the paper's line too"


def test_fitted_curves_follow_each_family(analyses):
    a = analyses[0]
    curves = bivariate.fitted_curves(a, n_points=10)
    encoder = curves[(curves["approach"] == "encoder") & (curves["law"] == "Eq. 2")]
    assert (encoder["Nd"] == a.nd_bar).all()
    assert encoder["Ne"].min() == pytest.approx(NE_LAYER) and encoder["Ne"].max() == pytest.approx(
        8 * NE_LAYER
    )
    symmetric = curves[curves["approach"] == "symmetric"]
    assert np.allclose(symmetric["Nd"] / symmetric["Ne"], a.nd_bar / a.ne_bar)
    np.testing.assert_allclose(encoder["loss"], a.bivariate.predict(encoder[["Ne", "Nd"]]))
    assert np.allclose(encoder["reducible"], encoder["loss"] - a.bivariate.params["L_inf"])


def test_narrower_models_join_the_fit_but_not_the_depth_effect_or_the_family_curves():
    table = synthetic_table()
    law = laws.bivariate_law(2 * NE_LAYER, 2 * ND_LAYER)
    # a quarter-size copy of 1L-2L: smaller on both sides, on the same law
    ne, nd = NE_LAYER / 4, 2 * ND_LAYER / 4
    loss = float(law(pd.DataFrame({"Ne": [ne], "Nd": [nd]}), TRUTH)[0])
    narrow = table[(table["model"] == "1L-2L")].assign(
        model="1L-2L w32", d_model=32, Ne=ne, Nd=nd, N=ne + nd, run_id="narrow"
    )
    narrow = narrow.assign(loss=loss + np.where(narrow["test_set"] == "ding", 0.5, 0.0))
    wider = pd.concat([table, narrow], ignore_index=True)
    for approach in ("encoder", "decoder"):
        assert bivariate.family_effect(wider, "en-de", approach, "l10n", 0) == bivariate.family_effect(
            table, "en-de", approach, "l10n", 0
        )
    a = bivariate.analyse(wider, "en-de", "l10n", n_bootstrap=2)
    assert len(a.fit_points) == len(bivariate.analyse(table, "en-de", "l10n", n_bootstrap=2).fit_points) + 1
    encoder = bivariate.fitted_curves(a, n_points=10).query("approach == 'encoder'")
    assert encoder["Ne"].min() == pytest.approx(NE_LAYER)  # the curve holds Nd at the baseline's
    assert "encoder, narrower" in bivariate.law_chart(a, "Eq. 2").to_json()  # its own series, off the curves
    residuals = bivariate.narrower_residuals([a])
    assert (
        list(residuals["model"]) == ["1L-2L w32"] and abs(residuals["residual"].iloc[0]) < 0.02
    )  # on the law
    assert bivariate.narrower_residuals(bivariate.analyse_all(table, n_bootstrap=2)).empty


def test_claims_are_computed_from_the_numbers():
    spread = pd.DataFrame(
        {"direction": ["en-de"], "test_set": ["l10n"], "std": [0.002], "max_difference": [0.004]}
    )
    table = synthetic_table()
    verdicts = claims.table(bivariate.claims(bivariate.analyse_all(table, n_bootstrap=20), spread))
    verdicts = verdicts.set_index("claim")
    assert len(verdicts) == 7
    verdict = verdicts["verdict"]
    assert verdict.filter(like="training loss").iloc[0].startswith("not testable"), "no training analyses"
    assert verdict.filter(like="Seed-to-seed").iloc[0] == "reproduced", "0.002 nats: in the paper's range"
    noisy = spread.assign(std=0.008)
    noisy_verdicts = claims.table(bivariate.claims(bivariate.analyse_all(table, n_bootstrap=2), noisy))
    assert (
        noisy_verdicts.set_index("claim")["verdict"].filter(like="Seed-to-seed").iloc[0] == "not reproduced"
    )
    assert verdict.filter(like="pd > pe").iloc[0] == "reproduced"
    assert verdict.filter(like="never saw").iloc[0] == "reproduced"
    assert verdict.filter(like="Eq. 1").iloc[0] == "reproduced"
    # pe 0.15, pd 0.45: the symmetric split costs ~4%, Nd/N = 0.2 ~50%
    assert verdict.filter(like="nearly optimal").iloc[0] == "reproduced"
    # symmetric k-k models: Nd / N = 16,000 / 28,000 whatever k, beside the paper's 0.55
    assert (
        verdicts["measured"]
        .filter(like="nearly optimal")
        .iloc[0]
        .startswith("our symmetric models at Nd/N 0.57;")
    )
    # an encoder-heavy world: the decoder exponent is the smaller one, and the verdict must say so
    flipped = synthetic_table({**TRUTH, "pe": 0.45, "pd": 0.15})
    verdicts = claims.table(bivariate.claims(bivariate.analyse_all(flipped, n_bootstrap=20), spread))
    verdicts = verdicts.set_index("claim")
    assert verdicts["verdict"].filter(like="pd > pe").iloc[0] == "not reproduced"
    # pe 0.45, pd 0.15: the optimum moves to the encoder and the symmetric split costs more than 5%
    assert verdicts["verdict"].filter(like="nearly optimal").iloc[0] == "not reproduced"
    assert (
        "determined on 2 of 2 test sets; there pd > pe on 0"
        in verdicts["measured"].filter(like="pd > pe").iloc[0]
    )


def test_an_exponent_the_data_do_not_determine_makes_pd_gt_pe_untestable():
    """A world without an encoder effect: pe lands on its bound 0, so the fit says nothing about pd > pe or
    the allocation, and the verdicts must say that instead of reading a point estimate."""
    spread = pd.DataFrame(
        {"direction": ["en-de"], "test_set": ["l10n"], "std": [0.002], "max_difference": [0.004]}
    )
    analyses = bivariate.analyse_all(synthetic_table({**TRUTH, "pe": 0.0}), n_bootstrap=20)
    exps = bivariate.exponents(analyses)
    assert all("on its bound" in reason for reason in exps["pe_undetermined"])
    assert (exps["pd_undetermined"] == "").all()
    verdicts = claims.table(bivariate.claims(analyses, spread)).set_index("claim")["verdict"]
    for claim in ("pd > pe", "nearly optimal"):
        assert (
            verdicts.filter(like=claim).iloc[0].startswith("not testable at this scale: the data determine")
        )


def test_exponent_undetermined_names_a_bound_a_wide_or_missing_interval_and_few_determined_refits():
    assert bivariate.exponent_undetermined(0.3, 0.2, 0.4, (0.0, 10.0)) == ""
    assert "on its bound" in bivariate.exponent_undetermined(10.0, 9.0, 10.0, (0.0, 10.0))
    assert "spans over half" in bivariate.exponent_undetermined(0.3, 0.0, 9.0, (0.0, 10.0))
    assert "no bootstrap interval" in bivariate.exponent_undetermined(0.3, np.nan, np.nan, (0.0, 10.0))
    few = bivariate.exponent_undetermined(0.3, 0.2, 0.4, (0.0, 10.0), determined_share=0.3)
    assert "only 30% of the bootstrap refits" in few


def gate_table(
    decoder_gain: float, encoder_gain: float, steps: int = 4000, rise: float = 0.0, depths=(1, 6)
) -> pd.DataFrame:
    """Rows like `sweeps.run_table`'s: 2L-2L baseline, encoder and decoder families of `depths`, where each
    extra layer of the decoder (encoder) lowers the loss by `decoder_gain` (`encoder_gain`) nats, on one test
    set."""
    models = [("baseline", 2, 2)] + [("encoder", e, 2) for e in depths] + [("decoder", 2, d) for d in depths]
    return pd.DataFrame(
        [
            {
                "direction": "en-de",
                "approach": approach,
                "model": f"{enc}L-{dec}L",
                "enc_layers": enc,
                "dec_layers": dec,
                "d_model": 64,
                "seed": 0,
                "N": enc * NE_LAYER + dec * ND_LAYER,
                "steps": steps,
                "test_set": "l10n",
                "loss": 4.0 - decoder_gain * dec - encoder_gain * enc,
                "slope": -0.1,
                "above_minimum": rise,
            }
            for approach, enc, dec in models
        ]
    )


def test_scale_gates_measure_the_sizes_at_the_budget_the_claims_are_judged_at():
    spread = pd.DataFrame({"direction": ["en-de"], "test_set": ["l10n"], "std": [0.01]})
    table = gate_table(decoder_gain=0.05, encoder_gain=0.001)
    judged = gate_table(decoder_gain=0.05, encoder_gain=0.001, steps=32000, depths=(1, 3, 4, 6))
    gates = {g.gate: g for g in bivariate.scale_gates(table, spread, judged)}
    span = gates["N span at 32,000 updates, en-de decoder family (max / min)"]
    assert span.measured == pytest.approx((2 * NE_LAYER + 6 * ND_LAYER) / (2 * NE_LAYER + ND_LAYER))
    assert not gates["models with >= 3 seeds at 32,000 updates"].passed
    headline = bivariate.headline_numbers(list(gates.values()))
    assert headline["judged_decoder_span"] == pytest.approx(span.measured)
    assert math.isnan(bivariate.headline_numbers(bivariate.scale_gates(table, spread))["judged_encoder_span"])


def test_scale_gates_measure_effects_in_seed_std_and_the_budget_stability():
    spread = pd.DataFrame({"direction": ["en-de"], "test_set": ["l10n"], "std": [0.01]})
    table = gate_table(decoder_gain=0.05, encoder_gain=0.001)  # decoder: 0.25 nats = 25 std
    longer = gate_table(decoder_gain=0.07, encoder_gain=0.001, steps=8000, rise=0.02)
    longest = gate_table(decoder_gain=0.077, encoder_gain=0.001, steps=16000)
    gates = {
        g.gate: g
        for g in bivariate.scale_gates(table, spread, pd.concat([longer, longest], ignore_index=True))
    }
    decoder = gates["decoder effect, en-de l10n (seed std)"]
    assert decoder.measured == pytest.approx(25.0) and decoder.passed
    encoder = gates["encoder effect, en-de l10n (nats)"]
    assert encoder.measured == pytest.approx(0.005) and not encoder.passed, "0.005 nats is inside +-0.028"
    stability = gates["budget stability 4,000->8,000, decoder effect en-de l10n (relative change)"]
    assert stability.measured == pytest.approx(0.4) and not stability.passed
    settled = gates["budget stability 8,000->16,000, decoder effect en-de l10n (relative change)"]
    assert settled.measured == pytest.approx(0.1) and settled.passed, "each budget against the one before"
    assert not gates["N span, en-de decoder family (max / min)"].passed
    assert not gates["models with >= 3 seeds"].passed
    rise = gates["largest rise of a run's held-out loss above its minimum (seed std)"]
    assert rise.measured == pytest.approx(2.0) and not rise.passed
    only_decoder = longer[longer["approach"] != "encoder"]
    unmeasured = {g.gate: g for g in bivariate.scale_gates(table, spread, only_decoder)}
    encoder_stability = "budget stability 4,000->8,000, encoder effect en-de l10n (relative change)"
    assert unmeasured[encoder_stability].passed is None
    shown = claims.gates_table(list(gates.values()))
    assert set(shown["result"]) == {"passed", "FAILED", "reported"}
    headline = bivariate.headline_numbers(list(gates.values()))
    assert headline["decoder_effect_min"] == headline["decoder_effect_max"] == pytest.approx(25.0)
    assert headline["encoder_effect_max"] == pytest.approx(0.005)
    assert headline["budget_decoder_l10n"] == pytest.approx(0.4), "the first doubling"
    assert headline["budget_last_decoder_l10n"] == pytest.approx(0.1), "8,000 -> 16,000"
    assert headline["budget_encoder_l10n"] == pytest.approx(0.0)
    assert headline["models_with_3_seeds"] == 0 and headline["decoder_span"] == pytest.approx(
        gates["N span, en-de decoder family (max / min)"].measured
    )
    # a last budget that carries the encoder family only: the decoder's last change stays 8,000 -> 16,000
    encoder_only = gate_table(decoder_gain=0.077, encoder_gain=0.003, steps=32000)
    encoder_only = encoder_only[encoder_only["approach"] != "decoder"]
    further = bivariate.scale_gates(
        table, spread, pd.concat([longer, longest, encoder_only], ignore_index=True)
    )
    headline = bivariate.headline_numbers(further)
    assert headline["budget_last_decoder_l10n"] == pytest.approx(0.1)
    assert headline["budget_last_encoder_l10n"] == pytest.approx(2.0), "0.005 -> 0.015 nats at 32,000"


def test_effects_by_budget_give_each_family_its_effect_where_the_budget_carries_it():
    table = gate_table(decoder_gain=0.05, encoder_gain=0.001)
    longer = gate_table(decoder_gain=0.07, encoder_gain=0.002, steps=8000)
    encoder_only = gate_table(decoder_gain=0.07, encoder_gain=0.004, steps=16000)
    encoder_only = encoder_only[encoder_only["approach"] != "decoder"]
    effects = bivariate.effects_by_budget(table, pd.concat([longer, encoder_only], ignore_index=True))
    assert effects.loc[(4000, "decoder"), "l10n"] == pytest.approx(0.25)  # 5 layers x 0.05
    assert effects.loc[(8000, "encoder"), "l10n"] == pytest.approx(0.01)
    assert effects.loc[(16000, "encoder"), "l10n"] == pytest.approx(0.02)
    assert np.isnan(effects.loc[(16000, "decoder"), "l10n"])


def at_budget(table: pd.DataFrame, steps: int, models: set[str] | None = None) -> pd.DataFrame:
    """`table`'s runs (all, or those of `models`) as trained for `steps` updates."""
    rows = table if models is None else table[table["model"].isin(models)]
    return rows.assign(steps=steps)


def test_laws_by_budget_fit_eq2_to_the_same_models_at_every_budget_and_gate_the_exponents():
    """The chapter's budget fits all models; the longer budgets carry five. The law is refitted to those five
    at every budget, so a change of exponent is the budget's, not a change of models."""
    five = {"2L-2L", "1L-2L", "8L-2L", "2L-1L", "2L-8L"}
    table = at_budget(synthetic_table(noise=0.0), 4000)
    steeper = {**TRUTH, "pd": 0.6}  # the decoder's exponent grows by a third when the budget doubles
    long_table = pd.concat(
        [
            at_budget(synthetic_table(noise=0.0), 8000, five),
            at_budget(synthetic_table(steeper, noise=0.0), 16000, five),
            at_budget(synthetic_table(noise=0.0), 32000, {"1L-2L", "8L-2L"}),  # one family only: no law
            # one more model at a longer budget: the law is fitted there on the five all budgets share
            at_budget(synthetic_table(noise=0.0), 64000, five | {"3L-2L"}),
        ],
        ignore_index=True,
    )
    laws_at = bivariate.laws_by_budget(table, long_table)
    assert sorted(set(laws_at.index.get_level_values("steps"))) == [4000, 8000, 16000, 64000]
    assert (laws_at["runs"] == 5).all(), "the same five models at the chapter's budget too"
    assert laws_at.loc[(8000, "l10n"), "pd"] == pytest.approx(0.45, abs=0.02)
    assert laws_at.loc[(16000, "l10n"), "pd"] == pytest.approx(0.6, abs=0.02)
    gates = {g.gate: g for g in bivariate.law_stability_gates(laws_at)}
    stable = gates["law stability 4,000->8,000, Eq. 2 pd en-de l10n (relative change)"]
    assert stable.passed and abs(stable.measured) < 0.05
    moved = gates["law stability 8,000->16,000, Eq. 2 pd en-de l10n (relative change)"]
    assert not moved.passed and moved.measured == pytest.approx(1 / 3, abs=0.06)
    assert bivariate.laws_by_budget(table, long_table[long_table["steps"] == 32000]).empty
    assert bivariate.law_stability_gates(pd.DataFrame()) == []


def test_schedule_laws_fit_eq2_to_the_same_models_under_each_schedule():
    """The checked schedule's runs follow a law with a larger encoder exponent than the reference's: each
    schedule's fit recovers its own; a budget whose models make no law (one family) is not fitted."""
    five = {"2L-2L", "1L-2L", "8L-2L", "2L-1L", "2L-8L"}
    checked = at_budget(synthetic_table({**TRUTH, "pe": 0.3}, noise=0.0), 4000, five)
    reference = at_budget(synthetic_table(noise=0.0), 4000, five)
    keys = ["model", "approach", "enc_layers", "dec_layers", "Ne", "Nd", "steps", "test_set"]
    comparison = checked[keys + ["loss"]].merge(reference[keys + ["loss"]], on=keys, suffixes=("_c", "_r"))
    comparison = comparison.rename(columns={"loss_c": "checked_loss", "loss_r": "reference_loss"}).assign(
        schedule="constant_cooldown", reference="cosine"
    )
    one_family = comparison[comparison["approach"] != "decoder"].assign(steps=8000)
    fits = bivariate.schedule_laws(pd.concat([comparison, one_family], ignore_index=True))
    assert set(fits["steps"]) == {4000} and (fits["runs"] == 5).all()
    by = fits.set_index(["test_set", "schedule"])
    assert by.loc[("l10n", "constant_cooldown"), "pe"] == pytest.approx(0.3, abs=0.02)
    assert by.loc[("l10n", "cosine"), "pe"] == pytest.approx(0.15, abs=0.02)
    assert by.loc[("ding", "cosine"), "pd"] == pytest.approx(0.45, abs=0.02)
    assert bivariate.schedule_laws(one_family).empty
    numbers = bivariate.schedule_law_numbers(fits)
    assert numbers["schedule_law_steps"] == "4,000"
    assert numbers["schedule_law_pe_checked_l10n"] == pytest.approx(0.3, abs=0.02)
    assert math.isnan(numbers["schedule_law_pe_reference_story"])  # no story runs here
    assert bivariate.schedule_law_numbers(pd.DataFrame())["schedule_law_steps"] == "none"


def test_the_family_claims_are_judged_at_the_longest_budget_with_four_sizes_per_family():
    """Issue 47: the chapter's budget is training-limited (its encoder shows no size effect); at a longer
    budget with >= 4 sizes per family, Eq. 1, Eq. 2's fit, pd > pe and the allocation are judged there."""
    flat_encoder = {**TRUTH, "pe": 0.0}
    table = at_budget(synthetic_table(flat_encoder, noise=0.0), 4000)
    four = {"2L-2L", "1L-2L", "3L-2L", "4L-2L", "2L-1L", "2L-3L", "2L-4L"}
    long_table = pd.concat(
        [
            at_budget(synthetic_table(noise=0.0), 16000, four),
            at_budget(synthetic_table(noise=0.0), 32000, four - {"2L-4L"}),  # three decoder sizes: too few
        ],
        ignore_index=True,
    )
    judged_runs = bivariate.judging_runs(long_table)
    assert set(judged_runs["steps"]) == {16000} and set(judged_runs["model"]) == four
    assert bivariate.judging_runs(long_table[long_table["steps"] == 32000]).empty
    spread = pd.DataFrame(
        {"direction": ["en-de"], "test_set": ["l10n"], "std": [0.002], "max_difference": [0.004]}
    )
    analyses = bivariate.analyse_all(table, n_bootstrap=10)
    judged = bivariate.analyse_all(judged_runs, n_bootstrap=10)
    at_chapter = {c.claim: c for c in bivariate.claims(analyses, spread)}
    both = {c.claim: c for c in bivariate.claims(analyses, spread, judged=judged)}
    assert list(both) == list(at_chapter)

    def row(rows, part):
        (found,) = [c for text, c in rows.items() if part in text]
        return found

    assert row(at_chapter, "pd > pe").verdict != "reproduced"
    assert row(both, "pd > pe").verdict == "reproduced"
    assert row(both, "pd > pe").measured.startswith("at 16,000 updates: ")
    assert row(both, "pd > pe").measured.endswith(f"(at 4,000: {row(at_chapter, 'pd > pe').verdict})")
    # the symmetric models of the chapter's budget place the split for the longer budget's fit too
    assert "our symmetric models at Nd/N 0.57;" in row(both, "nearly optimal").measured
    for kept in ("never saw", "training loss", "Seed-to-seed"):
        assert row(both, kept) == row(at_chapter, kept), kept


def test_held_out_training_and_seed_claims_move_to_the_judging_budget_when_it_has_their_runs():
    """Symmetric models at the judging budget move the held-out claim there, its runs' training losses the
    training-loss claim, and a model with three seeds there the seed claim; two seeds are too few."""
    table = at_budget(synthetic_table(noise=0.0), 4000)
    four = {"2L-2L", "1L-2L", "3L-2L", "4L-2L", "2L-1L", "2L-3L", "2L-4L"}
    first = at_budget(synthetic_table(noise=0.0), 32000, four | {"1L-1L", "3L-3L"})
    repeats = [
        at_budget(synthetic_table(noise=0.0), 32000, {"2L-2L"}).assign(
            seed=s, loss=lambda t, s=s: t["loss"] + s / 100
        )
        for s in (1, 2)
    ]
    long_table = pd.concat([first, *repeats], ignore_index=True)
    judged_runs = bivariate.judging_runs(long_table)
    assert set(judged_runs["seed"]) == {0} and {"1L-1L", "3L-3L"} <= set(judged_runs["model"])
    judged = bivariate.analyse_all(judged_runs, n_bootstrap=10)
    numbers = bivariate.judged_numbers(
        judged_runs, bivariate.fit_quality(judged), bivariate.exponents(judged, None)
    )
    assert numbers["judged_models"] == 7 and numbers["judged_held_out_models"] == 2
    assert numbers["judged_held_out_r2_min"] > 99, "the law's own models are predicted exactly"
    three_seeds = bivariate.judged_spread(long_table, judged_runs)
    assert list(three_seeds["seeds"]) == [3, 3] and three_seeds["std"].iloc[0] == pytest.approx(0.01)
    two_seeds = bivariate.judged_spread(long_table[long_table["seed"] < 2], judged_runs)
    spread = pd.DataFrame(
        {
            "direction": ["en-de"],
            "test_set": ["l10n"],
            "std": [0.002],
            "max_difference": [0.004],
            "seeds": [3],
        }
    )
    analyses = bivariate.analyse_all(table, n_bootstrap=10)

    def rows(**judged_budget):
        return {c.claim: c for c in bivariate.claims(analyses, spread, analyses, judged, **judged_budget)}

    def row(found, part):
        (claim,) = [c for text, c in found.items() if part in text]
        return claim

    moved = rows(judged_training=judged, judged_spread=three_seeds)
    for part in ("never saw", "training loss", "Seed-to-seed"):
        assert row(moved, part).measured.startswith("at 32,000 updates: "), part
    assert "2 held-out models" in row(moved, "never saw").measured
    assert "std 0.0100-0.0100" in row(moved, "Seed-to-seed").measured
    kept = rows(judged_spread=two_seeds)
    assert row(kept, "never saw").measured.startswith("at 32,000 updates: ")
    at_chapter = {c.claim: c for c in bivariate.claims(analyses, spread, analyses)}
    for part in ("training loss", "Seed-to-seed"):
        assert row(kept, part) == row(at_chapter, part), part


def test_an_exponent_leaving_its_bound_zero_is_an_unbounded_change():
    index = pd.MultiIndex.from_tuples([(4000, "l10n"), (8000, "l10n")], names=["steps", "test_set"])
    laws_at = pd.DataFrame({"pe": [0.0, 0.05], "pd": [0.0, 0.0]}, index=index)
    gates = {g.gate.split(", ")[1]: g for g in bivariate.law_stability_gates(laws_at)}
    assert math.isinf(gates["Eq. 2 pe en-de l10n (relative change)"].measured)
    assert not gates["Eq. 2 pe en-de l10n (relative change)"].passed
    assert gates["Eq. 2 pd en-de l10n (relative change)"].passed, "still on the bound: no change"
    shown = claims.show_gates(bivariate.law_stability_gates(laws_at)).to_html()
    assert "unbounded" in shown and "inf" not in shown


def test_seed_differences_compare_the_seeds_of_one_model_at_one_rate():
    table = pd.DataFrame(
        {
            "model": ["2L-2L"] * 4 + ["1L-2L"],
            "lr": [0.004, 0.004, 0.003, 0.004, 0.004],
            "seed": [0, 1, 0, 2, 0],
            "test_set": ["l10n"] * 5,
            "loss": [3.45, 3.25, 3.3, 3.3, 3.2],
        }
    )
    differences = bivariate.seed_differences_at_values(table)
    assert list(differences.index) == [("2L-2L", 0.004)], "one seed per rate elsewhere"
    assert differences.loc[("2L-2L", 0.004), "l10n"] == pytest.approx(0.2)


def test_budget_plans_carry_each_longer_budget_with_its_own_models():
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    params = {
        **params,
        "long_steps": 40,
        "long_models": {"encoder": [1, 3], "decoder": [1, 3]},
        "longer_budgets": [
            {"steps": 80},
            {"steps": 160, "decoder": []},
            {"steps": 320, "baseline": False},
            {"steps": 640, "encoder": [], "decoder": [], "symmetric": [1], "repeated": [[2, 2]]},
            {"steps": 1280, "encoder": [], "decoder": [], "baseline": False, "narrower": {4: [[1, 2]]}},
        ],
    }
    plans = bivariate.budget_plans(params)
    assert [sorted(p.label for p in plan) for plan in plans] == [
        ["1L-2L", "2L-1L", "2L-2L", "2L-3L", "3L-2L"],
        ["1L-2L", "2L-1L", "2L-2L", "2L-3L", "3L-2L"],
        ["1L-2L", "2L-2L", "3L-2L"],  # the encoder family only, beside the baseline
        ["1L-2L", "2L-1L", "2L-3L", "3L-2L"],  # the families' extremes without the baseline
        ["1L-1L", *["2L-2L"] * params["n_seeds"]],  # a symmetric model and the baseline with n_seeds seeds
        ["1L-2L w4"],  # a narrower member of the encoder family
    ]
    assert [p.seed for p in plans[4] if p.label == "2L-2L"] == list(range(params["n_seeds"]))
    assert [{p.config.train.steps for p in plan} for plan in plans] == [
        {40},
        {80},
        {160},
        {320},
        {640},
        {1280},
    ]
    # the first budget is long_plan's, the same runs (ids) the chapter has always trained
    assert [config_hash(p.config) for p in plans[0]] == [
        config_hash(p.config) for p in bivariate.long_plan(params)
    ]
    for entry, message in [
        ({"steps": 30}, r"longer_budgets\[0\]: steps 30 must exceed the budget before it \(40\)"),
        ({"steps": 80, "encoders": [1]}, r"longer_budgets\[0\]: unknown keys \['encoders'\]"),
        ({"encoder": [1]}, r"longer_budgets\[0\]: expected \{steps"),
        ({"steps": 80, "baseline": "no"}, r"longer_budgets\[0\]: baseline must be true or false"),
    ]:
        with pytest.raises(ValueError, match=message):
            bivariate.budget_plans({**params, "longer_budgets": [entry]})


def test_analyse_names_what_is_missing():
    table = synthetic_table()
    with pytest.raises(ValueError, match="no finished runs for de-en"):
        bivariate.analyse(table, "de-en", "l10n")
    no_baseline = table[table["approach"] != "baseline"]
    with pytest.raises(ValueError, match="expected one baseline run, found 0"):
        bivariate.analyse(no_baseline, "en-de", "l10n")


def test_run_summary_has_one_row_per_run_with_its_worst_rise_above_the_minimum():
    table = pd.concat(
        [gate_table(0.05, 0.01), gate_table(0.05, 0.01, steps=8000, rise=0.01)], ignore_index=True
    )
    table = pd.concat([table, table.assign(test_set="ding", above_minimum=0.03)], ignore_index=True)
    table = table.assign(Ne=1, Nd=1, tokens=100, tokens_per_param=10.0, wall_time_s=5.0)
    summary = bivariate.run_summary(table)
    assert len(summary) == 10 and list(summary[["l10n", "ding"]].columns) == ["l10n", "ding"]
    assert (summary["above_minimum"] == 0.03).all(), "the largest over the test sets"
    assert summary["steps"].tolist() == [4000] * 5 + [8000] * 5
    assert "epochs" not in summary
    with_epochs = bivariate.run_summary(table, {"en-de": 40})
    assert (with_epochs["epochs"] == 2.5).all(), "100 target tokens trained on over 40 a pass"


def test_budget_curves_keep_the_first_seed_models_trained_at_every_budget():
    from types import SimpleNamespace

    from nmtscale.config import from_dict
    from nmtscale.studies.sweeps import PlannedRun

    def planned(enc, dec, seed=0):
        return PlannedRun("decoder", "en-de", enc, dec, seed, from_dict({}))

    def summary(steps, loss):
        curve = [
            {"step": s, "target_tokens": 10 * s, "test_loss": {"en-de/l10n": loss / s}} for s in (1, steps)
        ]
        return SimpleNamespace(config={"train": {"steps": steps}}, curves=curve)

    short = [planned(2, 1), planned(2, 6), planned(2, 6, seed=1)]
    longer = [planned(2, 6)]
    curves = bivariate.budget_curves(
        [short, longer], [[summary(4, 3.0), summary(4, 2.0), summary(4, 2.1)], [summary(8, 1.8)]], "l10n"
    )
    assert set(curves["model"]) == {"2L-6L"}, "2L-1L was not trained longer; seed 1 is no first seed"
    assert curves["budget"].tolist() == ["4 updates", "4 updates", "8 updates", "8 updates"]
    assert curves["target_tokens"].tolist() == [10, 40, 10, 80]


def test_law_charts_and_held_out_predictions_come_from_the_analyses(analyses):
    grid = bivariate.chart_grid(
        analyses, lambda a: bivariate.law_chart(a, "Eq. 2", noise=0.002, reducible=True)
    )
    spec = grid.to_dict()
    assert len(spec["vconcat"]) == 1 and len(spec["vconcat"][0]["hconcat"]) == 2  # en-de: l10n and ding
    assert "Eq. 1, R²" in bivariate.law_chart(analyses[0], "Eq. 1").to_dict()["title"]
    held = bivariate.held_out_predictions(analyses)
    assert set(held["series"]) == {"en-de l10n", "en-de ding"}
    assert (held["predicted"] - held["loss"]).abs().max() < 0.02, "the law the data came from predicts them"
    spread = pd.DataFrame({"direction": ["en-de"], "test_set": ["l10n"], "std": [0.004]})
    assert (
        bivariate.seed_std(spread, "de-en", "l10n") == 0.004 and bivariate.seed_std(spread, "en-de", "x") == 0
    )


@pytest.mark.slow  # chapter 1's fits and a 4,096-start search per test set: ~1 minute
def test_chapter_1s_fits_on_its_committed_records_are_at_the_optimum_of_a_denser_search(monkeypatch):
    """Issue 38's check on real data: no objective more than 0.1% below the Eq. 2 fit each test set prints
    (its own grid, then the 16x denser check) under an even denser, wider search (8 values per parameter over
    5x each grid's range, 4,096 starts). Measured at width 64: at most 0.04% lower (De->En ding); on these
    flat, L1-like objectives such a point can still move predictions by up to 0.005 nats (En->De ding), which
    is why the chapter judges no claim on exponents the data do not determine."""
    params = book.load_parameters("01_bivariate_laws", "cpu", root=record.REPOSITORY)
    monkeypatch.setenv("NMTSCALE_RESULTS", str(record.REPOSITORY / params["results_dir"]))
    plan = bivariate.chapter_plan(params)
    summaries = [runs.recorded_summary(p.config) for p in plan]
    assert all(summaries), "chapter 1's committed records must hold every run its cpu params plan"
    table = sweeps.run_table(plan, summaries, fraction=0.2)
    for analysis in bivariate.analyse_all(table, n_bootstrap=2):
        fit = analysis.bivariate
        denser = fitting.fit_multistart(
            fit.law, fit.x, fit.y, starts=fitting.denser_start_grid(fit.law, per_parameter=8, widen=5.0)
        )
        where = f"{analysis.direction}/{analysis.test_set}"
        assert denser.objective >= fit.objective * (1 - 1e-3), (
            f"{where}: denser search {denser.objective:.6g} < chapter {fit.objective:.6g}"
        )


def test_the_learning_rate_sweep_plans_each_model_at_its_rates_and_marks_the_best():
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    sweep = {"2L-2L": [0.001, 0.004, 0.004], "1L-2L": [0.001], "2L-3L": [0.001]}
    params = {**params, "long_models": {"encoder": [1], "decoder": [3]}, "lr": 0.002, "lr_sweep": sweep}
    plan = bivariate.hyperparameter_plan(params, "lr_sweep")
    assert [(p.label, p.approach, p.config.train.lr, p.seed) for p in plan] == [
        *[("2L-2L", "baseline", 0.002, 0), ("2L-2L", "baseline", 0.001, 0)],
        *[("2L-2L", "baseline", 0.004, 0), ("2L-2L", "baseline", 0.004, 1)],  # listed twice: a second seed
        *[("1L-2L", "encoder", 0.002, 0), ("1L-2L", "encoder", 0.001, 0)],
        *[("2L-3L", "decoder", 0.002, 0), ("2L-3L", "decoder", 0.001, 0)],
    ]
    # at the chapter's own rate the sweep reads the chapter's runs
    chapter_runs = {
        config_hash(p.config) for p in bivariate.long_plan({**params, "long_steps": params["steps"]})
    }
    assert {config_hash(p.config) for p in plan if p.config.train.lr == 0.002} == chapter_runs
    # the lower rate wins for the deeper model only
    losses = {("2L-3L", 0.001): 3.0, ("2L-3L", 0.002): 3.1}
    summaries = [
        summary_for(p, {"l10n": losses.get((p.label, p.config.train.lr), 4.0 - p.config.train.lr)})
        for p in plan
    ]
    table = bivariate.hyperparameter_table(plan, summaries, "lr_sweep")
    best = table[table["best_lr"]].set_index("model")["lr"].to_dict()
    assert best == {"2L-2L": 0.004, "1L-2L": 0.002, "2L-3L": 0.001}
    by_model = bivariate.best_values(table)
    assert by_model[("lr", "l10n")].to_dict() == best
    assert by_model.loc["2L-3L", ("loss", "l10n")] == 3.0
    assert bivariate.hyperparameter_chart(table).to_dict()["facet"]["column"]["field"] == "test_set"
    with pytest.raises(ValueError, match="lr_sweep: 'deep' is not a model such as '2L-6L'"):
        bivariate.hyperparameter_plan({**params, "lr_sweep": {"deep": [0.001]}}, "lr_sweep")
    with pytest.raises(ValueError, match="lr_sweep: 2L-2L: the values must be positive numbers"):
        bivariate.hyperparameter_plan({**params, "lr_sweep": {"2L-2L": [0.0]}}, "lr_sweep")


def test_the_beta2_sweep_changes_only_adams_second_beta_and_reports_the_gain_at_the_best():
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    params = {**params, "beta2_sweep": {"2L-2L": [0.95, 0.999, 0.999], "1L-2L": [0.99]}}
    plan = bivariate.hyperparameter_plan(params, "beta2_sweep")
    chapter = bivariate.base_config(params).train
    assert [(p.label, p.config.train.adam_betas, p.seed) for p in plan] == [
        ("2L-2L", chapter.adam_betas, 0),
        ("2L-2L", [chapter.adam_betas[0], 0.95], 0),
        ("2L-2L", [chapter.adam_betas[0], 0.999], 0),
        ("2L-2L", [chapter.adam_betas[0], 0.999], 1),
        ("1L-2L", chapter.adam_betas, 0),
        ("1L-2L", [chapter.adam_betas[0], 0.99], 0),
    ]
    assert {p.config.train.lr for p in plan} == {chapter.lr}
    # at the chapter's own beta2 the sweep reads the chapter's runs
    chapter_runs = {config_hash(p.config) for p in bivariate.chapter_plan(params)}
    assert config_hash(plan[0].config) in chapter_runs
    # 0.999 (mean of two seeds 3.1 and 3.3) beats 0.98 (3.25) for 2L-2L; 1L-2L is best at 0.98
    losses = {
        ("2L-2L", 0.98, 0): 3.25,
        ("2L-2L", 0.95, 0): 3.4,
        ("2L-2L", 0.999, 0): 3.1,
        ("2L-2L", 0.999, 1): 3.3,
        ("1L-2L", 0.98, 0): 3.0,
        ("1L-2L", 0.99, 0): 3.02,
    }
    summaries = [
        summary_for(p, {"l10n": losses[(p.label, p.config.train.adam_betas[1], p.seed)]}) for p in plan
    ]
    table = bivariate.hyperparameter_table(plan, summaries, "beta2_sweep")
    assert set(table["beta2"]) == {0.98, 0.95, 0.999, 0.99} and "best_beta2" in table
    gains = bivariate.gains_at_best(table, "beta2", 0.98).set_index("model")
    assert gains.loc["2L-2L", "best_beta2"] == 0.999 and gains.loc["2L-2L", "gain"] == pytest.approx(0.05)
    assert gains.loc["1L-2L", "best_beta2"] == 0.98 and gains.loc["1L-2L", "gain"] == 0
    assert gains.loc["1L-2L", "N"] < gains.loc["2L-2L", "N"], "each model's non-embedding parameters"
    assert gains.loc["2L-2L", "worst_beta2"] == 0.95 and gains.loc["2L-2L", "cost"] == pytest.approx(0.15)
    assert gains.loc["1L-2L", "worst_beta2"] == 0.99 and gains.loc["1L-2L", "cost"] == pytest.approx(0.02)
    assert "1 - AdamW beta2" in json.dumps(bivariate.hyperparameter_chart(table, "beta2").to_dict())
    with pytest.raises(ValueError, match="no run at the chapter's beta2 0.9"):
        bivariate.gains_at_best(table, "beta2", 0.9)
    with pytest.raises(ValueError, match=r"beta2_sweep: 1L-2L: the values must be in \(0, 1\)"):
        bivariate.hyperparameter_plan({**params, "beta2_sweep": {"1L-2L": [1.0]}}, "beta2_sweep")


def test_the_schedule_check_pairs_each_run_under_both_schedules_and_gates_in_seed_std():
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    check = {
        "schedule": "constant_cooldown",
        "runs": {20: {"2L-2L": 2, "2L-3L": 2, "1L-2L": 1}, 40: {"2L-2L": 1, "2L-3L": 1}},
    }
    params = {**params, "schedule": "cosine", "seed": 5, "schedule_check": check}
    plan = bivariate.schedule_check_plan(params)
    runs_of = [(p.label, p.approach, p.config.train.schedule, p.config.train.steps, p.seed) for p in plan]
    wanted = [
        *[("2L-2L", "baseline", 20, 5), ("2L-2L", "baseline", 20, 6)],
        *[("2L-3L", "decoder", 20, 5), ("2L-3L", "decoder", 20, 6), ("1L-2L", "encoder", 20, 5)],
        *[("2L-2L", "baseline", 40, 5), ("2L-3L", "decoder", 40, 5)],
    ]
    assert runs_of == [
        (label, approach, schedule, steps, seed)
        for schedule in ("constant_cooldown", "cosine")
        for label, approach, steps, seed in wanted
    ]
    # the reference runs are the chapter's own where it trains that model with that seed at that budget
    chapter_runs = {config_hash(p.config) for p in bivariate.chapter_plan(params)}
    chapter_runs |= {config_hash(p.config) for p in bivariate.long_plan(params, 40, {"decoder": [3]})}
    reference = [config_hash(p.config) for p in plan[7:]]
    assert set(reference[:3] + reference[4:]) <= chapter_runs and reference[3] not in chapter_runs  # seed 6
    # under constant_cooldown one model and seed is one trunk whatever its budget
    assert runs.trunk_key(plan[0].config) == runs.trunk_key(plan[5].config) != runs.trunk_key(plan[1].config)
    # at 20 updates 2L-2L ends 0.01 nats above, seed std 0.02 (0.5 std), 2L-3L 0.05 above (2.5 std), the
    # one-seed 1L-2L 0.10 above; at 40 updates (one seed) 2L-2L ends 0.03 above, 2L-3L where the cosine does
    half = 0.02 / 2**0.5
    losses = {
        ("2L-2L", "constant_cooldown"): {20: [3.01 - half, 3.01 + half], 40: [2.83]},
        ("2L-2L", "cosine"): {20: [3.00 - half, 3.00 + half], 40: [2.80]},
        ("2L-3L", "constant_cooldown"): {20: [2.95 - half, 2.95 + half], 40: [2.7]},
        ("2L-3L", "cosine"): {20: [2.90 - half, 2.90 + half], 40: [2.7]},
        ("1L-2L", "constant_cooldown"): {20: [3.2]},
        ("1L-2L", "cosine"): {20: [3.1]},
    }

    def summary(p):
        """A run whose last evaluation has these losses and whose final loss is 1 nat above them."""
        by_budget = losses[(p.label, p.config.train.schedule)][p.config.train.steps]
        last = {t: by_budget[p.seed - 5] for t in ("ding", "l10n")}
        end = summary_for(p, {t: loss + 1.0 for t, loss in last.items()})
        evaluations = [
            *end.curves[:-1],
            {"step": 40, "test_loss": {f"en-de/{t}": v for t, v in last.items()}},
        ]
        return dataclasses.replace(end, curves=evaluations, steps=p.config.train.steps)

    comparison = bivariate.schedule_comparison(plan, [summary(p) for p in plan], reference="cosine")
    assert list(comparison["test_set"]) == ["l10n", "ding"] * 5, "chapter order within a model and budget"
    assert list(zip(comparison["model"], comparison["steps"], strict=True))[::2] == [
        ("1L-2L", 20),
        ("2L-2L", 20),
        ("2L-2L", 40),
        ("2L-3L", 20),
        ("2L-3L", 40),
    ]
    rows = comparison.set_index(["model", "steps"])[comparison["test_set"].to_numpy() == "l10n"]
    first = rows.loc[("2L-2L", 20)]
    assert (first["schedule"], first["reference"], first["seeds"]) == ("constant_cooldown", "cosine", 2)
    assert first["difference"] == pytest.approx(0.01)
    assert first["seed_std"] == pytest.approx(0.02)
    assert first["difference_in_std"] == pytest.approx(0.5)
    longer = rows.loc[("2L-2L", 40)]
    assert longer["seeds"] == 1 and longer["seed_std"] == pytest.approx(0.02), "the model's seeded budget"
    assert longer["difference_in_std"] == pytest.approx(1.5)
    assert rows.loc[("1L-2L", 20), "seed_std"] == pytest.approx(0.02), "the test set's seeded rows"
    gate = bivariate.schedule_gate(comparison)
    assert (
        gate.measured == pytest.approx(2.5) and gate.passed is False and "2L-3L at 20 updates" in gate.detail
    )
    # the one-seed rows are reported, not gated
    assert bivariate.schedule_gate(comparison[comparison["model"] != "2L-3L"]).passed is True
    # what depth buys under each schedule: the decoder family's effect shrinks at 20 updates and grows at 40
    effects = bivariate.schedule_effects(comparison)
    effects = effects[effects["test_set"] == "l10n"].set_index(["family", "steps"])
    assert list(effects.index) == [("encoder", 20), ("decoder", 20), ("decoder", 40)]
    assert effects.loc[("decoder", 20), "models"] == "2L-2L - 2L-3L"
    assert effects.loc[("decoder", 20), ["checked_effect", "reference_effect", "change"]].tolist() == (
        pytest.approx([0.06, 0.10, -0.4])
    )
    assert effects.loc[("decoder", 40), "change"] == pytest.approx(0.3)
    # under the checked schedule the decoder effect grows from 0.06 to 0.13 nats when the budget doubles
    all_effects = bivariate.schedule_effects(comparison)
    changes = bivariate.schedule_budget_changes(all_effects)
    assert list(changes["test_set"]) == ["l10n", "ding"], (
        "the encoder family has one budget: nothing to compare"
    )
    first = changes.iloc[0]
    assert (first["family"], first["steps"], first["longer_steps"]) == ("decoder", 20, 40)
    assert first[["checked_before", "checked_after", "reference_before", "reference_after"]].tolist() == (
        pytest.approx([0.06, 0.13, 0.10, 0.10])
    )
    assert first[["checked_change", "reference_change"]].tolist() == pytest.approx([0.13 / 0.06 - 1, 0.0])
    stability = bivariate.schedule_budget_gates(changes)
    assert [g.gate for g in stability] == [
        f"schedule check: budget stability 20->40 under constant_cooldown, decoder effect en-de {t} "
        "(relative change)"
        for t in ("l10n", "ding")
    ]
    assert [g.measured for g in stability] == pytest.approx([0.13 / 0.06 - 1] * 2)
    assert {g.passed for g in stability} == {False}
    assert {g.passed for g in bivariate.schedule_budget_gates(changes, max_change=1.2)} == {True}
    other_models = all_effects.assign(models=np.where(all_effects["steps"] == 40, "2L-2L - 2L-6L", "x"))
    assert bivariate.schedule_budget_changes(other_models).empty, "effects of other models are not compared"
    assert bivariate.schedule_budget_changes(all_effects.iloc[:0]).empty
    assert bivariate.schedule_budget_gates(bivariate.schedule_budget_changes(all_effects.iloc[:0])) == []
    numbers = bivariate.schedule_numbers(comparison, all_effects, changes)
    assert numbers["schedule_longest_steps"] == "40"
    assert [numbers[f"schedule_difference_{end}"] for end in ("min", "max")] == pytest.approx([0.0, 0.10])
    assert [numbers[f"schedule_longest_difference_{end}"] for end in ("min", "max")] == pytest.approx(
        [0, 0.03]
    )
    assert [numbers[f"schedule_decoder_change_{end}"] for end in ("min", "max")] == pytest.approx([-0.4, 0.3])
    assert numbers["schedule_encoder_change_max"] == pytest.approx(0.9)
    assert numbers["schedule_encoder_effect_checked_min"] == pytest.approx(0.19)
    assert [numbers[f"schedule_decoder_effect_reference_{end}"] for end in ("min", "max")] == pytest.approx(
        [0.10, 0.10]
    )
    assert numbers["schedule_budget_decoder_checked_max"] == pytest.approx(0.13 / 0.06 - 1)
    assert numbers["schedule_budget_decoder_reference_min"] == pytest.approx(0.0)
    assert np.isnan(numbers["schedule_budget_encoder_checked_min"]), "the encoder family has one budget"
    assert (
        numbers["schedule_decoder_longest_steps"] == "40"
        and numbers["schedule_encoder_longest_steps"] == "20"
    )
    assert numbers["schedule_decoder_longest_checked_l10n"] == pytest.approx(0.13)
    assert numbers["schedule_encoder_longest_reference_ding"] == pytest.approx(0.10)
    assert np.isnan(numbers["schedule_encoder_longest_checked_story"]), "no story runs in this comparison"
    nothing = bivariate.schedule_numbers(
        pd.DataFrame({"steps": [], "difference": []}), pd.DataFrame(), pd.DataFrame()
    )
    assert set(nothing) == set(numbers) and all(np.isnan(v) for k, v in nothing.items() if k.endswith("_max"))
    spec = bivariate.schedule_effects_chart(all_effects).to_dict()
    assert spec["facet"]["row"]["field"] == "family" and spec["facet"]["column"]["field"] == "test_set"
    drawn = next(iter(spec["datasets"].values()))
    assert {row["schedule_name"] for row in drawn} == {"constant_cooldown", "cosine"}
    effect_gate = bivariate.schedule_effect_gate(bivariate.schedule_effects(comparison))
    assert (
        effect_gate.passed is False and "encoder family (1L-2L - 2L-2L) at 20 updates" in effect_gate.detail
    )
    assert effect_gate.measured == pytest.approx(0.9)  # 0.10 -> 0.19 nats
    within = bivariate.schedule_effects(comparison[comparison["steps"] == 40])
    assert bivariate.schedule_effect_gate(within, max_change=0.35).passed is True
    assert bivariate.schedule_effect_gate(within.iloc[:0]).passed is None
    assert effects.loc[("encoder", 20), ["checked_effect", "reference_effect"]].tolist() == pytest.approx(
        [0.19, 0.10]
    )
    # against the reference schedule at the best rate of a peak-rate sweep that has only 2L-2L
    best = pd.DataFrame(
        {
            ("loss", "l10n"): [2.99],
            ("loss", "ding"): [3.03],
            ("lr", "l10n"): [0.004],
            ("lr", "ding"): [0.003],
        },
        index=pd.Index(["2L-2L"], name="model"),
    )
    against = bivariate.schedule_against_best_rates(comparison, best).set_index("test_set")
    assert list(against["model"]) == ["2L-2L", "2L-2L"] and set(against["steps"]) == {20}
    assert against.loc["l10n", "best_lr"] == 0.004 and against.loc["ding", "best_lr"] == 0.003
    assert against["difference"].to_dict() == pytest.approx({"l10n": 0.02, "ding": -0.02})
    assert bivariate.schedule_check_plan({**params, "schedule_check": {}}) == []
    as_json = {**check, "runs": {str(steps): models for steps, models in check["runs"].items()}}
    assert bivariate.schedule_check_plan({**params, "schedule_check": as_json}) == plan, "papermill's keys"
    for bad, message in [
        ({**check, "schedule": "cosine"}, "is the chapter's own"),
        ({**check, "runs": {20: {"2L-2L": 1}}}, "no model has two seeds at a budget"),
        ({**check, "runs": {10: {"2L-2L": 2}}}, "budget 10 is not an integer >= the chapter's 20"),
        ({**check, "runs": {20: {"2L-2L": 0}}}, "20: 2L-2L: seeds must be an integer >= 1"),
        ({**check, "runs": {20: ["2L-2L"]}}, "20: expected {<model>: <seeds>}"),
        ({**check, "runs": [20]}, "runs must map budgets to models"),
        ({**check, "runs": {20: {"deep": 2}}}, "20: 'deep' is not a model such as '2L-6L'"),
        ({**check, "runs": {20: {"2L-2L": 2, "3L-4L": 1}}}, "20: '3L-4L' is neither the baseline 2L-2L"),
        ({**check, "seeds": 3}, "expected {schedule"),
        ({"schedule": "constant_cooldown"}, "expected {schedule"),
    ]:
        with pytest.raises(ValueError, match=f"schedule_check: .*{re.escape(message)}"):
            bivariate.schedule_check_plan({**params, "schedule_check": bad})


def test_schedule_judging_fits_both_schedules_on_the_models_both_trained_where_the_families_are_complete():
    """Every family and two symmetric models at 20 updates under both schedules, only the encoder family at
    40: the claims' fits run at 20, on each schedule's last evaluations (the final losses lie 1 nat above),
    the symmetric models held out; each schedule's exponents are its own law's."""
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    models = ["2L-2L", "1L-2L", "3L-2L", "4L-2L", "2L-1L", "2L-3L", "2L-4L", "1L-1L", "3L-3L"]
    check = {"schedule": "constant_cooldown", "runs": {20: {m: 1 for m in models} | {"2L-2L": 2}}}
    check["runs"][40] = {"2L-2L": 1, "1L-2L": 1, "3L-2L": 1, "4L-2L": 1}
    params = {**params, "schedule": "cosine", "schedule_check": check}
    plan = bivariate.schedule_check_plan(params)
    assert {p.approach for p in plan if p.label in ("1L-1L", "3L-3L")} == {"symmetric"}
    truth = {"constant_cooldown": {**TRUTH, "pe": 0.3}, "cosine": TRUTH}

    def summary(p):
        counts = parameter_counts(p.config.model)
        law = laws.bivariate_law(*(parameter_counts(plan[0].config.model)[k] for k in ("encoder", "decoder")))
        sizes = pd.DataFrame({"Ne": [counts["encoder"]], "Nd": [counts["decoder"]]})
        last = float(law(sizes, truth[p.config.train.schedule])[0]) + 0.01 * p.seed
        end = summary_for(p, {"l10n": last + 1.0})
        curves = [*end.curves[:-1], {"step": 40, "test_loss": {"en-de/l10n": last}}]
        return dataclasses.replace(end, curves=curves, steps=p.config.train.steps)

    summaries = [summary(p) for p in plan]
    tables = bivariate.schedule_judging(plan, summaries, reference="cosine")
    assert list(tables) == ["constant_cooldown", "cosine"]
    for schedule, table in tables.items():
        assert (
            set(table["steps"]) == {20} and set(table["seed"]) == {0} and set(table["schedule"]) == {schedule}
        )
        assert sorted(table["model"]) == sorted(models)
        assert (table["loss"] < 3.5).all(), "the last evaluation, not the final loss"
    fits = bivariate.schedule_fits(tables, n_bootstrap=20).set_index("schedule")
    assert fits.loc["constant_cooldown", "pe"] == pytest.approx(0.3, abs=0.02)
    assert fits.loc["cosine", "pe"] == pytest.approx(0.15, abs=0.02)
    assert (fits["held_out_runs"] == 2).all() and (fits["symmetric_r2"] > 99).all()
    assert (fits["share_pd_gt_pe"] == 1.0).all() and (fits["steps"] == 20).all()
    numbers = bivariate.schedule_fit_numbers(fits.reset_index())
    assert numbers["schedule_fits_steps"] == "20" and numbers["schedule_fits_held_out"] == 2
    assert numbers["schedule_fits_symmetric_max_error_checked_max"] < 0.01
    eq2_miss = numbers["schedule_fits_eq2_max_dev_reference_max"]
    assert eq2_miss < numbers["schedule_fits_eq1_max_dev_reference_min"], "Eq. 1 misses the two families more"
    assert (
        numbers["schedule_fits_eq2_r2_checked_min"] > 99
        and numbers["schedule_fits_eq2_r2_reference_max"] > 99
    )
    # without a third encoder depth no budget has the families: nothing is judged
    fewer = [(p, s) for p, s in zip(plan, summaries, strict=True) if p.label != "4L-2L"]
    assert bivariate.schedule_judging(*map(list, zip(*fewer, strict=True)), reference="cosine") == {}
    empty = bivariate.schedule_fit_numbers(bivariate.schedule_fits({}))
    assert (
        empty["schedule_fits_steps"] == "none"
        and empty["schedule_fits_held_out"] == 0
        and math.isnan(empty["schedule_fits_symmetric_r2_checked_max"])
    )


def test_budget_losses_pair_each_long_model_with_its_first_seed_run_at_the_short_budget():
    short = gate_table(decoder_gain=0.05, encoder_gain=0.01)
    short = pd.concat([short, short.assign(seed=1, loss=short["loss"] + 1.0)], ignore_index=True)
    longer = gate_table(decoder_gain=0.07, encoder_gain=0.01, steps=8000)
    longer = longer[longer["model"].isin(["2L-2L", "2L-6L"])]
    losses = bivariate.budget_losses(short, longer, seed=0)
    assert list(losses.index) == [(4000, "2L-2L"), (4000, "2L-6L"), (8000, "2L-2L"), (8000, "2L-6L")]
    assert losses.loc[(4000, "2L-6L"), "l10n"] == pytest.approx(4.0 - 0.05 * 6 - 0.01 * 2), "seed 0 only"
    assert list(losses.columns) == ["l10n"]
    steps, gain = bivariate.last_doubling_gain(losses, "2L-6L")
    assert steps == 8000 and gain["l10n"] == pytest.approx(0.02 * 6)  # decoder gain 0.05 -> 0.07 per layer
    steps, gain = bivariate.last_doubling_gain(losses.loc[[4000]], "2L-6L")
    assert steps == 4000 and gain.isna().all(), "one budget: nothing to compare"


def test_the_training_loss_is_its_objective_over_the_last_stretch_and_eq2_is_judged_on_it(analyses):
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    plan = bivariate.chapter_plan(params)[:3]
    summaries = []
    for i, p in enumerate(plan):
        summary = summary_for(p, {"l10n": 3.0})  # 40 steps, evaluations at 10, 20, 30 and 40
        for point, objective in zip(summary.curves, (5.0, 4.0, 3.0 + i, 2.0 + i), strict=True):
            point["train_objective"] = objective
        summaries.append(summary)
    table = sweeps.training_loss_table(plan, summaries, final_fraction=0.3)
    assert list(table["test_set"]) == [sweeps.TRAIN] * 3
    assert list(table["loss"]) == [2.5, 3.5, 4.5], "the median of the evaluations at steps 30 and 40"
    assert table["slope"].isna().all()
    # the synthetic analyses follow Eq. 2 exactly: judged as training losses, the claim holds
    claim = bivariate.training_claim(analyses[:1])
    assert claim.verdict == "reproduced" and claim.measured.startswith("en-de: R^2")
    assert bivariate.training_claim([]).verdict == "not testable at this scale"


def test_training_text_tokens_count_one_pass_as_the_trainer_counts_tokens():
    params = book.load_parameters("01_bivariate_laws", "smoke", root=record.REPOSITORY)
    counts = bivariate.training_text_tokens(params)
    assert set(counts) == set(params["families"])
    pairs = params["max_train_pairs"]
    # every target has at least one piece and its EOS, and no smoke sentence is hundreds of pieces long
    assert all(2 * pairs <= n <= 200 * pairs for n in counts.values()), counts
