"""Does the fast CPU training path learn what the legacy path learns? (issue 37's numerics check)

The fast path (`FAST_PATH`: fused AdamW, random16 attention dropout, the fused label-smoothed loss and bf16
linear products where the CPU multiplies bf16 natively) draws other dropout masks and rounds differently, so
its runs are not the runs of the legacy path (`config.LEGACY_NUMERICS`, on which chapter 1 is recorded). What
must hold is that it learns the same: chapter 1's baseline trained to the same budget under each path, with
several seeds, ends at final losses whose path means differ by no more than one seed standard deviation on
every test set. `plan` lays the runs out from chapter 1's parameters, `final_losses` and `compare` read and
judge them; `benchmarks/training_numerics.py` trains them.

The same question between devices (issue 43): a run id names a config, not the machine that trained it, yet
the devices need not train the same run. `paired` sets the runs of one config trained on two devices side by
side (`benchmarks/device_numerics.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from nmtscale.config import RunConfig, override
from nmtscale.record import RunSummary
from nmtscale.studies import bivariate

# The keys that make the fast path from chapter 1's (its `numerics` pin the legacy path, with random16
# residual dropout masks): the engine's defaults since issue 37 ("auto" fuses AdamW's update as "fused" does).
FAST_PATH = {
    "train.optimizer_kernel": "fused",
    "model.attention_dropout_mask": "random16",
    "train.loss_kernel": "fused",
    "train.cpu_precision": "bf16",
}
PATHS = {"legacy": {}, "fast": FAST_PATH}


def plan(params: Mapping[str, Any], steps: int, seeds: Sequence[int]) -> dict[str, list[RunConfig]]:
    """Per path, chapter 1's En->De baseline at `steps` updates (`bivariate.long_plan`: its cosine schedule
    reaching zero there), once per seed."""
    (baseline,) = bivariate.long_plan(params, steps, {"encoder": [], "decoder": []})
    return {
        path: [override(baseline.config, {**keys, "train.seed": seed}) for seed in seeds]
        for path, keys in PATHS.items()
    }


def final_losses(summaries: Mapping[str, Sequence[RunSummary]]) -> pd.DataFrame:
    """One row per path, seed and test set: the run's final loss."""
    return pd.DataFrame(
        [
            {"path": path, "seed": s.config["train"]["seed"], "test_set": key, "final_loss": loss}
            for path, runs in summaries.items()
            for s in runs
            for key, loss in s.final_loss.items()
        ]
    )


def compare(losses: pd.DataFrame, reference: str = "legacy") -> pd.DataFrame:
    """Per path other than `reference` and test set: both paths' mean final loss and seed std (ddof 1), the
    difference of means, the pooled seed std, that difference in seed std, and the gate: |difference| <= 1
    pooled seed std."""
    stats = losses.groupby(["path", "test_set"])["final_loss"].agg(["mean", "std", "count"])
    rows = []
    for path in sorted(set(losses["path"]) - {reference}):
        for test_set in sorted(losses["test_set"].unique()):
            ref, other = stats.loc[(reference, test_set)], stats.loc[(path, test_set)]
            pooled = (
                ((ref["count"] - 1) * ref["std"] ** 2 + (other["count"] - 1) * other["std"] ** 2)
                / (ref["count"] + other["count"] - 2)
            ) ** 0.5
            difference = other["mean"] - ref["mean"]
            rows.append(
                {
                    "path": path,
                    "test_set": test_set,
                    f"{reference} mean": ref["mean"],
                    f"{path} mean": other["mean"],
                    "difference": difference,
                    "seed std": pooled,
                    "difference / seed std": difference / pooled,
                    "within 1 seed std": abs(difference) <= pooled,
                }
            )
    return pd.DataFrame(rows)


def paired(
    reference: Sequence[RunSummary], other: Sequence[RunSummary], seed_std: Mapping[str, float]
) -> pd.DataFrame:
    """One row per run of `other` and test set: its final loss beside that of the run of `reference` with
    the same id (its config trained elsewhere), the difference, and that difference in `seed_std` (per test
    set). Every run of `other` must have its counterpart."""
    by_id = {s.run_id: s for s in reference}
    missing = sorted({s.run_id for s in other} - set(by_id))
    if missing:
        raise ValueError(f"runs without a reference run of the same id: {', '.join(missing)}")
    rows = []
    for run in other:
        base = by_id[run.run_id]
        for test_set, loss in run.final_loss.items():
            difference = loss - base.final_loss[test_set]
            rows.append(
                {
                    "run": run.run_id,
                    "test_set": test_set,
                    f"{base.device} loss": base.final_loss[test_set],
                    f"{run.device} loss": loss,
                    "difference": difference,
                    "difference / seed std": difference / seed_std[test_set],
                }
            )
    return pd.DataFrame(rows)


def curves(summaries: Mapping[str, Sequence[RunSummary]]) -> pd.DataFrame:
    """One row per path, seed, evaluation and test set: the held-out loss along training."""
    return pd.DataFrame(
        [
            {"path": path, "seed": s.config["train"]["seed"], "step": point["step"], "test_set": key}
            | {"test_loss": loss}
            for path, runs in summaries.items()
            for s in runs
            for point in s.curves
            for key, loss in point["test_loss"].items()
        ]
    )
