"""Chapter 3's gates: whether its scale lets size trends show, per architecture family.

A family is one variant ('PrefixLM + Deep') on one language pair, its sizes the EncDec sizes it is matched to;
the seed noise is that of the pair's EncDec repeats (`nmtscale.studies.scale_gates` holds the gates)."""

from __future__ import annotations

import pandas as pd

from nmtscale.studies import scale_gates as shared
from nmtscale.studies.claims import Gate


def scale_gates(
    table: pd.DataFrame, noise_table: pd.DataFrame, long_table: pd.DataFrame | None = None
) -> list[Gate]:
    """`scale_gates.scale_gates` on chapter 3's `run_table`s (plain test-set names): its runs, its EncDec seed
    repeats and, when given, the budget check's runs."""
    return shared.scale_gates(table, noise_table, "EncDec", long_table)
