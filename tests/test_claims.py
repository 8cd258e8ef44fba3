"""The one Claim type, its graders, and the scorecard read back from executed notebooks."""

import json
import math
from pathlib import Path

import nbformat
import pytest

from nmtscale import book, record
from nmtscale.studies import claims

ROOT = Path(__file__).resolve().parents[1]


def claim(verdict: str, reason: str = "", name: str = "c") -> claims.Claim:
    return claims.Claim(name, "paper", "measured", verdict, "rule", "noise", reason)


def test_a_claim_takes_only_the_books_verdicts_and_a_reason_only_when_untestable():
    with pytest.raises(ValueError, match="'supported' is not one of"):
        claim("supported")
    with pytest.raises(ValueError, match="a reason goes with"):
        claim(claims.NOT_TESTABLE)
    with pytest.raises(ValueError, match="a reason goes with"):
        claim(claims.REPRODUCED, "why")
    assert claim(claims.NOT_TESTABLE, "too small").shown_verdict == "not testable at this scale: too small"


def test_a_percent_just_under_a_threshold_never_prints_as_the_threshold():
    assert f"{claims.floored_percent(98.9991):.2f}" == "98.99"
    assert f"{claims.floored_percent(99.004):.2f}" == "99.00"
    assert math.isnan(claims.floored_percent(math.nan))


def test_by_count_grades_all_some_none_and_nothing():
    assert claims.by_count(3, 3) == (claims.REPRODUCED, "")
    assert claims.by_count(1, 3) == (claims.PARTLY, "")
    assert claims.by_count(0, 3) == (claims.NOT_REPRODUCED, "")
    assert claims.by_count(0, 0, "no runs") == (claims.NOT_TESTABLE, "no runs")


def test_by_differences_weighs_each_difference_against_the_noise():
    assert claims.by_differences([0.2, 0.3], 0.1) == (claims.REPRODUCED, "")
    assert claims.by_differences([0.2, 0.05], 0.1) == (claims.PARTLY, "")
    assert claims.by_differences([0.2, -0.15], 0.1) == (claims.NOT_REPRODUCED, "")
    verdict, reason = claims.by_differences([0.05, -0.05], 0.1)
    assert verdict == claims.NOT_TESTABLE and "within the noise (±0.100)" in reason


def executed(tmp_path, name: str, shown: list[claims.Claim]):
    """A notebook whose one cell displayed `shown` with `claims.show`, as papermill would save it."""
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("claims.show(found)")
    bundle = claims.show(shown)._repr_mimebundle_()
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    notebook.cells = [cell]
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


def test_gate_ranges_give_each_kind_of_gates_smallest_and_largest_measurement():
    gates = [
        claims.Gate("size effect, en-de alone (seed std, smallest over test sets)", 24.0, ">= 10", True),
        claims.Gate("size effect, en-zh 0.9 beside en-de (seed std, ...)", 6.9, ">= 10", False),
        claims.Gate("N span, en-de families (max / min, narrowest family)", 10.4, ">= 8", True),
        claims.Gate("largest rise of a run's held-out loss above its minimum (seed std)", 0.1, "", None),
    ]
    ranges = claims.gate_ranges(gates)
    assert (ranges["size_effect_min"], ranges["size_effect_max"]) == (6.9, 24.0)
    assert ranges["n_span_min"] == ranges["n_span_max"] == 10.4
    assert math.isnan(ranges["budget_change_min"]) and math.isnan(ranges["family_sizes_max"]), "not gated"
    assert set(ranges) == {f"{kind}_{end}" for kind in claims.GATE_KINDS for end in ("min", "max")}


def test_gate_tally_counts_the_judged_gates_and_names_the_failed_ones():
    gates = [
        claims.Gate("size effect: natural on l10n (seed std)", 105.0, ">= 10", True),
        claims.Gate("size effect: forward on story (seed std)", 5.39, ">= 10", False),
        claims.Gate("largest rise above the minimum (seed std)", 200.0, "", None),
    ]
    tally = claims.gate_tally(gates, "size")
    assert (tally["size_passed"], tally["size_gates"], tally["size_max"]) == (1, 2, 200.0)
    assert tally["size_failed"] == "size effect: forward on story (seed std) 5.39"
    assert claims.gate_tally(gates[:1], "size")["size_failed"] == "none"
    assert math.isnan(claims.gate_tally([], "size")["size_max"])


def test_the_scorecard_reads_back_what_the_chapters_showed(tmp_path):
    first = [claim(claims.REPRODUCED, name="a"), claim(claims.NOT_TESTABLE, "small", name="b")]
    second = [claim(claims.PARTLY, name="c")]
    found = {
        "one": claims.notebook_claims(executed(tmp_path, "one", first)),
        "two": claims.notebook_claims(executed(tmp_path, "two", second)),
    }
    assert found == {"one": first, "two": second}
    card = claims.scorecard(found)
    assert list(card.columns) == ["chapter", "claim", "measured", "verdict", "reason"]
    assert card["measured"].tolist() == [row.measured for rows in found.values() for row in rows]
    counts = claims.counts(card)
    assert list(counts.columns) == [*claims.VERDICTS, "claims"]
    assert counts.loc["one"].to_dict() == {
        "reproduced": 1,
        "partly reproduced": 0,
        "not reproduced": 0,
        "not testable at this scale": 1,
        "claims": 2,
    }
    assert counts.loc["two", "partly reproduced"] == 1


def test_a_notebook_without_its_claims_table_is_an_error_naming_it(tmp_path):
    path = executed(tmp_path, "empty", [])
    with pytest.raises(ValueError, match="empty.ipynb: no claims table"):
        claims.notebook_claims(path)


def test_the_committed_scorecard_counts_exactly_the_committed_chapters_claims():
    """The scorecard page shows the counts of the chapters' claims tables as committed: a chapter re-run
    without the scorecard (or a hand edit of either) fails here."""
    found = book.chapter_claims("cpu", ROOT)
    counts = claims.counts(claims.scorecard({book.chapter_title(c, ROOT): rows for c, rows in found.items()}))
    notebook = json.loads(book.executed_notebook(book.SCORECARD, "cpu", ROOT).read_text(encoding="utf-8"))
    shown = [
        "".join(output["data"]["text/html"])
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if "display(counts)" in "".join(cell["source"]) and output["output_type"] == "display_data"
    ]
    assert shown == [counts._repr_html_()], "re-run it: python -m nmtscale book run --chapter scorecard"
    assert set(counts.index) == {book.chapter_title(c, ROOT) for c in book.CLAIM_CHAPTERS}


INVENTORIES = sorted((record.REPOSITORY / "data" / "claims").glob("*.yaml"))


def test_there_is_an_inventory_for_each_paper_behind_the_book():
    assert [p.stem for p in INVENTORIES] == ["fernandes2023", "ghorbani2022", "zhang2022"]


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_every_inventoried_claim_is_judged_by_chapter_rows_or_says_why_not(path):
    """The inventory was read from the paper; each entry must point at verdict rows the committed chapter
    shows (so the two cannot drift apart) or give the reason it is not tested here."""
    paper, inventory = claims.load_inventory(path)
    assert paper.split()[0] in ("Ghorbani", "Zhang", "Fernandes") and len(inventory) >= 15
    verdicts = claims.inventory_verdicts(inventory, book.chapter_claims("cpu", record.REPOSITORY))
    assert len(verdicts) == len(inventory)
    assert set(verdicts["verdict"]) <= {*claims.VERDICTS, claims.NOT_TESTED_HERE}
    untested = verdicts[verdicts["verdict"] == claims.NOT_TESTED_HERE]
    assert untested["reason"].str.len().gt(20).all()


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            {"id": "a", "where": "Fig. 1", "quote": "q", "criterion": "c"},
            "give either 'chapter' and 'tested_by'",
        ),
        (
            {"id": "a", "where": "Fig. 1", "quote": "q", "criterion": "c", "chapter": "01", "reason": "r"},
            "give either",
        ),
        ({"id": "a", "where": "Fig. 1", "quote": "q", "reason": "r"}, r"missing \['criterion'\]"),
        (
            {"id": "a", "where": "Fig. 1", "quote": "q", "criterion": "c", "reason": "r", "url": "x"},
            "unknown",
        ),
    ],
)
def test_a_malformed_inventory_entry_is_named(tmp_path, entry, message):
    path = tmp_path / "paper.yaml"
    path.write_text(json.dumps({"paper": "P", "claims": [entry]}))
    with pytest.raises(ValueError, match=rf"paper.yaml: claims\[0\] \(a\): .*{message}"):
        claims.load_inventory(path)


def test_a_claim_judged_per_language_pair_combines_the_pairs_verdicts():
    both = [claims.REPRODUCED, claims.REPRODUCED]
    assert claims.combined_verdict(both) == claims.REPRODUCED
    assert claims.combined_verdict([claims.REPRODUCED, claims.NOT_REPRODUCED]) == claims.PARTLY
    assert claims.combined_verdict([claims.NOT_TESTABLE, claims.NOT_REPRODUCED]) == claims.NOT_REPRODUCED


def test_an_inventory_row_that_names_no_chapter_row_is_an_error():
    inventory = [claims.PaperClaim("a", "Fig. 1", "q", "c", chapter="01", tested_by=("no such row",))]
    with pytest.raises(ValueError, match=r"chapter 01 has no verdict row \[.no such row.\]"):
        claims.inventory_verdicts(inventory, {"01": []})
    fewer_rows = claims.inventory_verdicts(inventory, {"01": []}, strict=False)
    assert fewer_rows["verdict"].item() == claims.NOT_TESTED_HERE
    assert "01 shows no row ['no such row'] at this scale" in fewer_rows["reason"].item()
    not_run = claims.inventory_verdicts(inventory, {})
    assert not_run["verdict"].item() == claims.NOT_TESTED_HERE
    assert not_run["reason"].item() == "01 is not executed at this scale"


def test_the_papers_scorecard_counts_each_inventoried_claim_once_and_keeps_our_checks_apart():
    inventories = {
        "P": [
            claims.PaperClaim("a", "Fig. 1", "q", "c", chapter="01", tested_by=("x (en-de)", "x (en-fr)")),
            claims.PaperClaim("b", "Fig. 2", "q", "c", reason="needs models that translate"),
        ]
    }
    rows = [
        claims.Claim("x (en-de)", "p", "m", claims.REPRODUCED, "rule"),
        claims.Claim("x (en-fr)", "p", "m", claims.NOT_REPRODUCED, "rule"),
        claims.Claim("our own check", "p", "m", claims.REPRODUCED, "rule"),
    ]
    card = claims.paper_scorecard(inventories, {"01": rows})
    counts = claims.paper_counts(card)
    assert counts.loc["P", "claims"] == 2, "two inventoried claims, whatever the number of rows"
    assert counts.loc["P", claims.PARTLY] == 1 and counts.loc["P", claims.NOT_TESTED_HERE] == 1
    assert card.loc[card["id"] == "a", "per_pair"].item().count(";") == 1
    assert claims.unclaimed_rows(inventories, {"01": rows})["claim"].tolist() == ["our own check"]


def test_the_papers_numbers_stand_beside_the_measurements_of_the_rows_that_test_them():
    inventories = {
        "P et al. 2022, A Title": [
            claims.PaperClaim(
                "a",
                "Table 4",
                "q",
                "c",
                chapter="01",
                tested_by=("x (en-de)", "x (en-fr)"),
                published="0.003",
            ),
            claims.PaperClaim("b", "Fig. 2", "q", "c", chapter="01", tested_by=("y",)),  # prints no number
            claims.PaperClaim("c", "Sec. 3", "q", "c", chapter="01", tested_by=("z",), published="11x"),
            claims.PaperClaim("d", "Sec. 4", "q", "c", chapter="02", tested_by=("x (en-de)",), published="2"),
        ]
    }
    rows = [
        claims.Claim("x (en-de)", "p", "0.008 nats", claims.REPRODUCED, "rule"),
        claims.Claim("x (en-fr)", "p", "0.009 nats", claims.NOT_REPRODUCED, "rule"),
        claims.Claim("y", "p", "m", claims.REPRODUCED, "rule"),
    ]
    beside = claims.paper_beside_book("01", rows, inventories)
    assert list(beside["where"]) == ["Table 4", "Sec. 3"], "claims of this chapter with a published number"
    first = beside.iloc[0]
    assert first["paper"] == "P et al. 2022" and first["paper's number"] == "0.003"
    assert first["this book"] == "0.008 nats | 0.009 nats" and first["verdict"] == claims.PARTLY
    assert beside.iloc[1]["verdict"] == claims.NOT_TESTED_HERE, "a row the chapter did not show"


def test_the_committed_inventories_publish_numbers_for_every_chapter():
    chapters = {
        claim.chapter
        for _, inventory in map(claims.load_inventory, INVENTORIES)
        for claim in inventory
        if claim.published
    }
    # None: a claim no chapter tests yet (Zhang's zero-shot BLEU) may still carry the paper's number
    assert chapters == {None, *book.CLAIM_CHAPTERS[:4]}  # the fitting appendix checks our code, not a paper
