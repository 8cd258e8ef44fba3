"""Chapter 4's gates: whether its scale lets size trends show (`nmtscale.studies.scale_gates`, chapter 1's
gates), per family: one direction at one sampling weight beside one other direction, over the model sizes.
The direction trained alone is one family, shared by the cohorts that hold it."""

from __future__ import annotations

import pandas as pd

from nmtscale.studies import scale_gates as shared
from nmtscale.studies.claims import Gate


def family_table(table: pd.DataFrame) -> pd.DataFrame:
    """The two-direction cohorts' rows of a `run_table` as the gates read them: group the direction, variant
    its weight and the direction beside it ('0.5 beside en-zh', 'alone' at weight 1; one row per run where
    two cohorts share it), size its non-embedding parameter count; the run table of no runs gives no rows."""
    if table.empty:
        columns = ["group", "variant", "size", "N", "test_set", "loss", "run_id"]
        return pd.DataFrame(columns=columns).astype({"size": int, "N": int, "loss": float})
    rows = table[table["pairs"] == 2]
    beside = rows["second"].where(rows["direction"] == rows["first"], rows["first"])
    variant = [
        "alone" if weight == 1 else f"{weight:g} beside {other}"
        for weight, other in zip(rows["weight"], beside, strict=True)
    ]
    families = rows.assign(group=rows["direction"], variant=variant, size=rows["N"])
    return families.drop_duplicates(["run_id", "direction", "test_set"]).reset_index(drop=True)


def scale_gates(
    table: pd.DataFrame, noise_table: pd.DataFrame, long_table: pd.DataFrame | None = None
) -> list[Gate]:
    """`scale_gates.scale_gates` on chapter 4's `run_table`s: its runs, its seed repeats (`noise_table`; with
    none the seed std is unknown and every gate that divides by it fails) and, when given, a budget check's
    runs."""
    longer = None if long_table is None else family_table(long_table)
    return shared.scale_gates(family_table(table), family_table(noise_table), "repeated", longer)
