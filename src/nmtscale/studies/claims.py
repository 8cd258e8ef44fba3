"""One way to grade a paper's claim, shared by every chapter, and the scorecard built from the chapters.

A `Claim` row holds the paper's claim, what the paper reports, what this run of the chapter measured, the
verdict, the rule that turns the measurement into the verdict and the noise level it was judged against.
Verdicts come from one vocabulary (`VERDICTS`); "not testable at this scale" always carries its reason. What a
chapter says about its own scale next to the paper's (sizes, tokens) is a `ScaleStatement`, not a claim, and
is never counted.

Chapters show their claims with `show`, which also writes them into the executed notebook as JSON
(`CLAIMS_MIME`); the scorecard page reads every chapter's executed notebook back with `notebook_claims`, so
its counts are the chapters' tables, never typed by hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nmtscale.record import REPOSITORY

REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTABLE = "not testable at this scale"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)
# An inventoried claim of a paper that no chapter tests (the inventory gives the reason).
NOT_TESTED_HERE = "not tested here"
# The MIME type under which `show` stores a chapter's claims in its notebook's output, for the scorecard.
CLAIMS_MIME = "application/vnd.nmtscale.claims+json"


@dataclass(frozen=True)
class Claim:
    """One of a paper's claims and how this chapter's measurement grades it.

    `noise` says which noise level the rule compared against ("" when the rule needs none, for example a
    count of fits above an R^2); `reason` is required for, and only allowed with, "not testable at this
    scale".
    """

    claim: str
    paper: str
    measured: str
    verdict: str
    rule: str
    noise: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.claim!r}: verdict {self.verdict!r} is not one of {VERDICTS}")
        if (self.verdict == NOT_TESTABLE) != bool(self.reason):
            raise ValueError(
                f"claim {self.claim!r}: a reason goes with {NOT_TESTABLE!r} and only with it "
                f"(verdict {self.verdict!r}, reason {self.reason!r})"
            )

    @property
    def shown_verdict(self) -> str:
        return f"{self.verdict}: {self.reason}" if self.reason else self.verdict


@dataclass(frozen=True)
class ScaleStatement:
    """Where a chapter's models stand next to the paper's (sizes, data, convergence): context, not a test."""

    topic: str
    paper: str
    measured: str


@dataclass(frozen=True)
class Gate:
    """A condition the chapter's scale must meet before its verdicts mean something (an effect above the
    noise, a budget the fits are stable under), with the measured value printed beside the threshold."""

    gate: str
    measured: float
    threshold: str  # "" for a measurement the chapter reports beside its gates without judging it
    passed: bool | None  # None with no threshold
    detail: str = ""


def gates_table(gates: Sequence[Gate]) -> pd.DataFrame:
    """The gates as the book shows them, a failed one marked so that no reader misses it."""
    return pd.DataFrame(
        [
            {
                "gate": g.gate,
                "measured": g.measured,
                "threshold": g.threshold,
                "result": {True: "passed", False: "FAILED", None: "reported"}[g.passed],
                "detail": g.detail,
            }
            for g in gates
        ]
    )


def overfitting_gate(runs: pd.DataFrame, noise: float, name_run) -> Gate:
    """Whether any run has begun to overfit: the largest `above_minimum` of `runs` (one row per run and test
    set: its last held-out loss above its lowest, `steps` its budget) in units of the seed std `noise`, passed
    within one; `name_run(row)` names the run in the detail."""
    worst = runs.loc[runs["above_minimum"].idxmax()]
    return Gate(
        "largest rise of a run's held-out loss above its minimum (seed std)",
        float(worst["above_minimum"] / noise),
        "<= 1",
        bool(worst["above_minimum"] <= noise),
        f"{name_run(worst)} {worst['test_set']} after {int(worst['steps'])} updates: "
        f"{worst['above_minimum']:.4f} nats; 0 means no run has begun to overfit",
    )


def _gate_value(value: float) -> str:
    # NaN: nothing to measure (say, a family not trained at a budget); inf: a change from an exponent of 0
    if math.isnan(value):
        return "n/a"
    return "unbounded" if math.isinf(value) else f"{value:.3g}"


# The kinds of `scale_gates` gate an opening summary quotes, by the prefix of the gate's name.
GATE_KINDS = {
    "size_effect": "size effect",
    "budget_change": "budget stability",
    "n_span": "N span",
    "family_sizes": "sizes per family",
}


def gate_ranges(gates: Sequence[Gate]) -> dict[str, float]:
    """The smallest and largest measured value of each kind of gate in `GATE_KINDS`: `<kind>_min` and
    `<kind>_max` (the families' size effects in seed std, the budget check's relative changes, the narrowest
    N span, the fewest sizes per family); NaN for a kind no gate measures (no budget check, say)."""
    ranges = {}
    for name, prefix in GATE_KINDS.items():
        values = [gate.measured for gate in gates if gate.gate.startswith(prefix)]
        ranges[f"{name}_min"] = min(values, default=math.nan)
        ranges[f"{name}_max"] = max(values, default=math.nan)
    return ranges


def gate_tally(gates: Sequence[Gate], name: str) -> dict[str, float | int | str]:
    """How a set of gates came out, for a summary to quote without restating the table: `<name>_passed` and
    `<name>_gates` (how many of those with a threshold passed, of how many), `<name>_max` (the largest
    measured value; NaN without gates) and `<name>_failed` (each failed gate with its value, or "none")."""
    judged = [gate for gate in gates if gate.passed is not None]
    failed = [f"{gate.gate} {_gate_value(gate.measured)}" for gate in judged if not gate.passed]
    return {
        f"{name}_passed": sum(bool(gate.passed) for gate in judged),
        f"{name}_gates": len(judged),
        f"{name}_max": max((gate.measured for gate in gates), default=math.nan),
        f"{name}_failed": "; ".join(failed) or "none",
    }


def show_gates(gates: Sequence[Gate]):
    """The gates table styled for the book: failed gates in red."""
    frame = gates_table(gates)
    return (
        frame.style.hide(axis="index")
        .format({"measured": _gate_value})
        .apply(
            lambda row: ["color: #b00020; font-weight: bold" if row["result"] == "FAILED" else ""] * len(row),
            axis=1,
        )
    )


def untestable(claim: str, paper: str, measured: str, rule: str, reason: str, noise: str = "") -> Claim:
    """A claim this scale cannot test, with the reason."""
    return Claim(claim, paper, measured, NOT_TESTABLE, rule, noise, reason)


def by_count(
    passed: int, total: int, none_reason: str = "nothing to measure at this scale"
) -> tuple[str, str]:
    """(verdict, reason) for a rule that must hold in each of `total` cases: reproduced if it holds in all,
    partly if in some, not reproduced if in none; not testable (with `none_reason`) if there are no cases."""
    if total == 0:
        return NOT_TESTABLE, none_reason
    if passed == total:
        return REPRODUCED, ""
    return (PARTLY if passed > 0 else NOT_REPRODUCED), ""


def by_differences(differences: Iterable[float], noise: float) -> tuple[str, str]:
    """(verdict, reason) for "the first is better", from differences (worse - better) in several cases:
    reproduced when every difference exceeds the noise, partly when some do and none goes the other way
    beyond it, not reproduced when any does; not testable when all lie within the noise."""
    differences = list(differences)
    if not differences:
        return NOT_TESTABLE, "nothing to compare at this scale"
    if any(d < -noise for d in differences):
        return NOT_REPRODUCED, ""
    beyond = sum(d > noise for d in differences)
    if beyond == len(differences):
        return REPRODUCED, ""
    if beyond:
        return PARTLY, ""
    return NOT_TESTABLE, f"every difference lies within the noise (±{noise:.3f})"


def floored_percent(value: float) -> float:
    """A percentage cut (not rounded) to two decimals, so that a value just under a threshold never prints
    as the threshold: 98.999 reads 98.99, not 99.00, beside a rule that asks for 99."""
    return math.floor(value * 100) / 100 if math.isfinite(value) else value


def graded(
    claim: str, paper: str, measured: str, verdict: tuple[str, str], rule: str, noise: str = ""
) -> Claim:
    """A claim whose (verdict, reason) comes from `by_count` or `by_differences`."""
    return Claim(claim, paper, measured, verdict[0], rule, noise, verdict[1])


def table(claims: Sequence[Claim]) -> pd.DataFrame:
    """The chapter's claims as the book shows them: one row per claim, the reason inside the verdict."""
    return pd.DataFrame(
        [
            {
                "claim": c.claim,
                "paper": c.paper,
                "measured": c.measured,
                "verdict": c.shown_verdict,
                "rule": c.rule,
                "noise": c.noise,
            }
            for c in claims
        ]
    )


def scale_table(statements: Sequence[ScaleStatement]) -> pd.DataFrame:
    return pd.DataFrame([dataclasses.asdict(s) for s in statements])


class ClaimsDisplay:
    """What `show` displays: the claims table as HTML, and the claims as JSON for the scorecard."""

    def __init__(self, claims: Sequence[Claim]):
        self.claims = list(claims)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        frame = table(self.claims)
        return {
            "text/html": frame.style.hide(axis="index").to_html(),
            "text/plain": frame.to_string(index=False),
            CLAIMS_MIME: [dataclasses.asdict(c) for c in self.claims],
        }


def show(claims: Sequence[Claim]) -> ClaimsDisplay:
    """Display a chapter's claims (the last expression of a cell); the scorecard reads them back."""
    return ClaimsDisplay(claims)


def notebook_claims(notebook: Path) -> list[Claim]:
    """Every claim an executed notebook showed with `show`, in order. A notebook without any is an error
    naming it: the scorecard must not count a chapter as having no claims because its table went missing."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = [
        Claim(**row)
        for cell in cells
        for output in cell.get("outputs", [])
        for row in output.get("data", {}).get(CLAIMS_MIME, [])
    ]
    if not found:
        raise ValueError(f"{notebook}: no claims table (a cell ending in nmtscale.studies.claims.show)")
    return found


def scorecard(chapters: dict[str, Sequence[Claim]]) -> pd.DataFrame:
    """One row per claim of every chapter (chapter, claim, measured, verdict, reason), in the chapters'
    order: what the chapter measured beside its verdict, so that the reader sees why without opening it."""
    return pd.DataFrame(
        [
            {"chapter": chapter, "claim": c.claim, "measured": c.measured, "verdict": c.verdict}
            | {"reason": c.reason}
            for chapter, claims in chapters.items()
            for c in claims
        ],
        columns=["chapter", "claim", "measured", "verdict", "reason"],
    )


def counts(card: pd.DataFrame) -> pd.DataFrame:
    """Claims per chapter and verdict (every verdict a column, in `VERDICTS` order, with a total)."""
    grid = pd.crosstab(card["chapter"], card["verdict"]).reindex(
        index=list(dict.fromkeys(card["chapter"])), columns=list(VERDICTS), fill_value=0
    )
    grid["claims"] = grid.sum(axis=1)
    return grid


# ----------------------------------------------------------------------------------------------------------
# The papers' claims, inventoried from the papers (data/claims/<paper>.yaml)

# the papers' claim inventories, one <paper>.yaml each
INVENTORIES = REPOSITORY / "data" / "claims"
INVENTORY_KEYS = ("id", "where", "quote", "criterion", "chapter", "tested_by", "reason", "published")


@dataclass(frozen=True)
class PaperClaim:
    """One main claim of a paper as the inventory records it: where the paper makes it, its words, its own
    criterion, and either the chapter and verdict row that test it or the reason it is not tested here."""

    id: str
    where: str
    quote: str
    criterion: str
    chapter: str | None = None
    # the `Claim.claim` texts of the chapter's verdict rows: one, or one per language pair it is judged on
    tested_by: tuple[str, ...] = ()
    reason: str | None = None
    # the number(s) the paper prints for the claim, as printed (with the quantity and its unit), where the
    # text we cite has them: the chapters show them beside their own measurement (`paper_beside_book`)
    published: str | None = None


def load_inventory(path: Path) -> tuple[str, list[PaperClaim]]:
    """(paper, claims) from an inventory file; a malformed entry is a ValueError naming the file and entry."""
    from nmtscale.config import read_yaml

    raw = read_yaml(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("paper"), str) or not raw.get("claims"):
        raise ValueError(f"{path}: an inventory is a mapping with 'paper' (its citation) and a list 'claims'")
    found, seen = [], set()
    for i, entry in enumerate(raw["claims"]):
        where = f"{path}: claims[{i}]" + (f" ({entry.get('id')})" if isinstance(entry, dict) else "")
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: an entry is a mapping with keys {list(INVENTORY_KEYS)}")
        unknown = sorted(set(entry) - set(INVENTORY_KEYS))
        missing = [k for k in ("id", "where", "quote", "criterion") if not entry.get(k)]
        if unknown or missing:
            raise ValueError(f"{where}: unknown keys {unknown}, missing {missing}")
        tested = bool(entry.get("chapter")) and bool(entry.get("tested_by"))
        if tested == bool(entry.get("reason")) or bool(entry.get("chapter")) != bool(entry.get("tested_by")):
            raise ValueError(
                f"{where}: give either 'chapter' and 'tested_by', or 'reason' (why it is not tested)"
            )
        if entry["id"] in seen:
            raise ValueError(f"{where}: id {entry['id']!r} appears twice")
        seen.add(entry["id"])
        rows = entry.get("tested_by") or ()
        rows = (rows,) if isinstance(rows, str) else tuple(rows)
        if not all(isinstance(row, str) for row in rows):
            raise ValueError(f"{where}: tested_by is a verdict row's text or a list of them")
        texts = {k: str(v) for k, v in entry.items() if k != "tested_by"}
        found.append(PaperClaim(**texts, tested_by=rows))
    return raw["paper"], found


def combined_verdict(verdicts: Sequence[str]) -> str:
    """One verdict for a claim judged once per language pair: the shared one when they agree; "partly
    reproduced" when some reproduce it; else "not reproduced" when any test fails it."""
    if len(set(verdicts)) == 1:
        return verdicts[0]
    if REPRODUCED in verdicts or PARTLY in verdicts:
        return PARTLY
    return NOT_REPRODUCED if NOT_REPRODUCED in verdicts else NOT_TESTABLE


def inventory_verdicts(
    inventory: Sequence[PaperClaim], chapters: dict[str, Sequence[Claim]], strict: bool = True
) -> pd.DataFrame:
    """One row per inventoried claim: id, where, chapter, verdict, per_pair and reason. The verdict is its
    chapter rows' `combined_verdict`, or "not tested here" (also where its chapter is not among the executed
    `chapters`); per_pair lists each row's verdict for a claim judged per language pair. With `strict`, a
    `tested_by` that names no verdict row of an executed chapter is a ValueError (the inventory and the
    committed chapters must not drift apart); without, the claim is "not tested here" with that reason (a
    chapter executed at a smaller scale may show fewer rows)."""

    def row(claim: PaperClaim, verdict: str, reason: str, per_pair: str = "") -> dict[str, str]:
        return {"id": claim.id, "where": claim.where, "chapter": claim.chapter or "", "verdict": verdict,
                "per_pair": per_pair, "reason": reason}  # fmt: skip

    rows = []
    for claim in inventory:
        if claim.chapter is None or claim.chapter not in chapters:
            rows.append(
                row(claim, NOT_TESTED_HERE, claim.reason or f"{claim.chapter} is not executed at this scale")
            )
            continue
        shown = {c.claim: c for c in chapters[claim.chapter]}
        missing = [text for text in claim.tested_by if text not in shown]
        if missing and strict:
            raise ValueError(
                f"inventory claim {claim.id!r}: chapter {claim.chapter} has no verdict row {missing}"
            )
        if missing:
            rows.append(row(claim, NOT_TESTED_HERE, f"{claim.chapter} shows no row {missing} at this scale"))
            continue
        judged = [shown[text] for text in claim.tested_by]
        per_pair = "; ".join(f"{c.claim}: {c.verdict}" for c in judged) if len(judged) > 1 else ""
        reason = "; ".join(sorted({c.reason for c in judged if c.reason}))
        rows.append(row(claim, combined_verdict([c.verdict for c in judged]), reason, per_pair))
    return pd.DataFrame(rows, columns=["id", "where", "chapter", "verdict", "per_pair", "reason"])


def load_inventories(folder: Path) -> dict[str, list[PaperClaim]]:
    """Every paper's inventory in `folder` (``data/claims/*.yaml``), by the paper's citation."""
    inventories = dict(load_inventory(path) for path in sorted(folder.glob("*.yaml")))
    if not inventories:
        raise ValueError(f"{folder}: no claims inventory (<paper>.yaml)")
    return inventories


def paper_scorecard(inventories: dict[str, Sequence[PaperClaim]], chapters: dict[str, Sequence[Claim]]):
    """One row per claim of every paper's inventory (`inventory_verdicts` with a `paper` column first; not
    strict, since a chapter executed at a smaller scale may show fewer rows)."""
    return pd.concat(
        [
            inventory_verdicts(claims, chapters, strict=False).assign(paper=paper)
            for paper, claims in inventories.items()
        ],
        ignore_index=True,
    )[["paper", "id", "where", "chapter", "verdict", "per_pair", "reason"]]


def paper_counts(card: pd.DataFrame) -> pd.DataFrame:
    """Claims per paper and verdict, "not tested here" included, with the inventory's total."""
    grid = pd.crosstab(card["paper"], card["verdict"]).reindex(
        index=list(dict.fromkeys(card["paper"])), columns=[*VERDICTS, NOT_TESTED_HERE], fill_value=0
    )
    grid["claims"] = grid.sum(axis=1)
    return grid


def paper_beside_book(
    chapter: str, rows: Sequence[Claim], inventories: dict[str, Sequence[PaperClaim]] | None = None
) -> pd.DataFrame:
    """The papers' published numbers beside a chapter's measurements: one row per inventoried claim of
    `chapter` (`inventories`, by default those in `INVENTORIES`) that has a `published` value, with where the
    paper prints it, the `measured` text of each of the chapter's verdict `rows` that tests it (joined per
    language pair) and the verdict."""
    inventories = load_inventories(INVENTORIES) if inventories is None else inventories
    by_text = {row.claim: row for row in rows}
    found = []
    for paper, claims in inventories.items():
        for claim in claims:
            if claim.chapter != chapter or not claim.published:
                continue
            tested = [by_text[text] for text in claim.tested_by if text in by_text]
            found.append(
                {
                    "paper": paper.split(",")[0],
                    "where": claim.where,
                    "paper's number": claim.published,
                    "this book": " | ".join(row.measured for row in tested) or "not shown at this scale",
                    "verdict": combined_verdict([row.verdict for row in tested])
                    if tested
                    else NOT_TESTED_HERE,
                }
            )
    return pd.DataFrame(found, columns=["paper", "where", "paper's number", "this book", "verdict"])


def unclaimed_rows(inventories: dict[str, Sequence[PaperClaim]], chapters: dict[str, Sequence[Claim]]):
    """The chapters' verdict rows that no inventoried claim names (our own method checks, or rows still to be
    tied to a paper's claim): chapter, claim, verdict. They are shown apart and never added to the papers'
    counts."""
    named = {(c.chapter, text) for claims in inventories.values() for c in claims for text in c.tested_by}
    return pd.DataFrame(
        [
            {"chapter": chapter, "claim": row.claim, "verdict": row.verdict}
            for chapter, rows in chapters.items()
            for row in rows
            if (chapter, row.claim) not in named
        ],
        columns=["chapter", "claim", "verdict"],
    )
