"""Whether a chapter's scale lets size trends show: chapter 1's gates, per model family, shared by the
chapters that judge families of sizes (chapter 3: one architecture on one pair; chapter 4: one direction at
one sampling weight).

A family's size effect is the final loss of its smallest model minus that of its largest, judged against the
seed noise of the models the chapter repeats with several seeds; a budget check trains some models again for
longer, and the effect must not move when it does, or the laws describe a step count rather than the models.
Tables are one row per run and test set with columns group, variant (the family within the group), size
(orderable: chapter 3's matched EncDec size, chapter 4's parameter count), N, test_set, loss, steps,
above_minimum and run_id.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from nmtscale.studies.claims import Gate, overfitting_gate


def seed_noise(noise_table: pd.DataFrame) -> pd.Series:
    """The seed standard deviation of the final loss per (group, test_set): the models repeated with several
    seeds (`noise_table`; a model is a variant at a size), pooled as the root of their mean variance."""
    variances = noise_table.groupby(["group", "variant", "size", "test_set"])["loss"].var()
    return np.sqrt(variances.groupby(level=["group", "test_set"]).mean())


def size_effects(table: pd.DataFrame) -> pd.DataFrame:
    """Per group, variant and test set: the smallest and largest size trained and the final loss of the first
    minus that of the second (nats; positive when the larger model is better)."""
    rows = []
    for (group, variant, test_set), runs in table.dropna(subset=["loss"]).groupby(
        ["group", "variant", "test_set"], sort=False
    ):
        by_size = runs.groupby("size")["loss"].mean()
        rows.append(
            {
                "group": group,
                "variant": variant,
                "test_set": test_set,
                "smallest": int(by_size.index.min()),
                "largest": int(by_size.index.max()),
                "effect": float(by_size.iloc[0] - by_size.iloc[-1]) if len(by_size) > 1 else math.nan,
            }
        )
    return pd.DataFrame(rows)


def scale_gates(
    table: pd.DataFrame,
    noise_table: pd.DataFrame,
    noise_name: str,
    long_table: pd.DataFrame | None = None,
    min_effect: float = 10.0,
    max_budget_change: float = 0.15,
    min_span: float = 8.0,
    min_sizes: int = 4,
) -> list[Gate]:
    """The conditions under which a chapter's size trends mean something, on its runs (`table`), its seed
    repeats (`noise_table`, which the gates call `noise_name`: "EncDec" in chapter 3) and, when given, the
    budget check's runs (`long_table`); all three tables as the module describes, plain test-set names:

    - each family's size effect at least `min_effect` seed std on every test set of its group (the smallest
      ratio is the gate's value);
    - budget stability: each checked family's effect at the longer budget within `max_budget_change` of it at
      the chapter's, on every test set (the largest change is the gate's value);
    - per group, every family spanning at least `min_span` in N with at least `min_sizes` sizes, and at least
      3 sizes repeated with 3 or more seeds;
    - no run data-limited: its last held-out loss within one seed std of its lowest (`above_minimum`).
    """
    noise = seed_noise(noise_table)
    effects = size_effects(table)
    gates = []
    for (group, variant), family in effects.groupby(["group", "variant"], sort=False):
        std = noise.reindex(list(zip(family["group"], family["test_set"], strict=True))).to_numpy()
        ratios = family["effect"].to_numpy() / std
        sizes = f"sizes {family['smallest'].iloc[0]:,} and {family['largest'].iloc[0]:,}"
        smallest = math.nan if np.isnan(ratios).all() else float(np.nanmin(ratios))
        gates.append(
            Gate(
                f"size effect, {group} {variant} (seed std, smallest over test sets)",
                smallest,
                f">= {min_effect:g}",
                bool(smallest >= min_effect),
                f"{sizes}: "
                + "; ".join(
                    f"{t} {e:.3f} nats ({'seed std unknown' if math.isnan(r) else f'{r:.1f} std'})"
                    for t, e, r in zip(family["test_set"], family["effect"], ratios, strict=True)
                ),
            )
        )
    if long_table is not None and len(long_table):
        gates += _budget_stability_gates(table, long_table, max_budget_change)
    for group, rows in table.groupby("group", sort=False):
        repeats = noise_table[noise_table["group"] == group]
        gates += _coverage_gates(group, rows, repeats, noise_name, min_span, min_sizes)
    everything = pd.concat(
        [table, noise_table] + ([long_table] if long_table is not None else []), ignore_index=True
    )
    gates.append(
        overfitting_gate(
            everything,
            float(noise.mean()),
            lambda run: f"{run['group']} {run['variant']} size {run['size']:,}",
        )
    )
    return gates


def _budget_stability_gates(table: pd.DataFrame, long_table: pd.DataFrame, max_change: float) -> list[Gate]:
    """`scale_gates`' budget stability, for every family the budget check trained again: its effect between
    the smallest and largest size the check trained, at both budgets; the gate's detail says when the family
    reaches past those sizes at the chapter's budget."""
    steps = int(long_table["steps"].max())
    gates = []
    for (group, variant), checked in size_effects(long_table).groupby(["group", "variant"], sort=False):
        small, large = int(checked["smallest"].iloc[0]), int(checked["largest"].iloc[0])
        family = table[(table["group"] == group) & (table["variant"] == variant)]
        largest = int(family["size"].max())
        at_sizes = size_effects(family[family["size"].isin([small, large])])
        family_effects = at_sizes.merge(checked, on=["group", "variant", "test_set"], suffixes=("", "_long"))
        if (family_effects[["smallest", "largest"]].to_numpy() != [small, large]).any():
            continue  # the chapter's budget lacks one of the checked sizes
        changes = family_effects["effect_long"] / family_effects["effect"] - 1
        worst = changes.abs().idxmax()
        beyond = f" (the family reaches size {largest:,}, not checked)" if largest > large else ""
        gates.append(
            Gate(
                f"budget stability ->{steps:,}, {group} {variant} (relative change, largest over test sets)",
                float(changes[worst]),
                f"within +-{max_change:.0%}",
                bool((changes.abs() <= max_change).all()),
                f"sizes {small:,} and {large:,}{beyond}: "
                + "; ".join(
                    f"{t} {e:.3f} -> {e_long:.3f} nats"
                    for t, e, e_long in zip(
                        family_effects["test_set"],
                        family_effects["effect"],
                        family_effects["effect_long"],
                        strict=True,
                    )
                ),
            )
        )
    return gates


def _coverage_gates(
    group: str, rows: pd.DataFrame, noise_rows: pd.DataFrame, noise_name: str, min_span: float, min_sizes: int
) -> list[Gate]:
    """`scale_gates`' range of sizes of the group's families (the narrowest is the gate's value) and its
    sizes repeated with 3 or more seeds."""
    per_family = rows.groupby("variant")["N"].agg(["min", "max", "nunique"])
    spans = per_family["max"] / per_family["min"]
    narrowest, fewest = spans.idxmin(), per_family["nunique"].idxmin()
    runs = noise_rows.drop_duplicates("run_id")
    seeds = runs.groupby(["variant", "size"])["run_id"].count().groupby("size").max()  # per model, by size
    return [
        Gate(
            f"N span, {group} families (max / min, narrowest family)",
            float(spans.min()),
            f">= {min_span:g}",
            bool(spans.min() >= min_span),
            f"{narrowest}: {per_family.loc[narrowest, 'min']:,}-{per_family.loc[narrowest, 'max']:,} "
            "non-embedding parameters",
        ),
        Gate(
            f"sizes per family, {group} (fewest)",
            float(per_family["nunique"].min()),
            f">= {min_sizes}",
            bool(per_family["nunique"].min() >= min_sizes),
            f"{fewest}",
        ),
        Gate(
            f"{noise_name} sizes with >= 3 seeds, {group}",
            float((seeds >= 3).sum()),
            ">= 3",
            bool((seeds >= 3).sum() >= 3),
            ", ".join(f"size {size:,} x{n}" for size, n in seeds.items()),
        ),
    ]
