"""Depth-scaling families (Ghorbani et al. 2022, Sec. 2.1) and the tidy table of what their runs measured.

`depth_scaling_plan` lays out, for one translation direction, the run configs of encoder scaling (decoder
depth fixed), decoder scaling (encoder depth fixed) and symmetric scaling around a baseline model, plus
repeats with other seeds; `run_table` turns the runs' summaries into one row per run and test set, with the
model's encoder and decoder sizes, tokens per parameter and the slope of the loss curve at the end of
training; `seed_spread` measures the seed-to-seed variability of the final loss (Ghorbani App. C, Table 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nmtscale.config import RunConfig, override
from nmtscale.engine.counting import parameter_counts
from nmtscale.record import RunSummary, last_stretch
from nmtscale.runs import config_hash

# A model that belongs to several families is labelled by the first of these that contains it: the baseline
# is part of encoder and decoder scaling, and a symmetric model equal to one of those is not out-of-sample.
APPROACHES = ("baseline", "encoder", "decoder", "symmetric")


@dataclass(frozen=True)
class PlannedRun:
    """One run of a depth-scaling family: which approach it belongs to, its depths, seed and full config;
    `off_width` marks a model trained at a width other than the family's (`depth_scaling_plan`'s narrower
    models, chapter 2's wider candidate teachers), which its label names."""

    approach: str
    direction: str
    enc_layers: int
    dec_layers: int
    seed: int
    config: RunConfig
    off_width: bool = False

    @property
    def label(self) -> str:
        """The paper's name for the model: '6L-2L' is a 6-layer encoder with a 2-layer decoder; a model at
        another width than its family's adds its width: '1L-2L w32'."""
        depths = f"{self.enc_layers}L-{self.dec_layers}L"
        return f"{depths} w{self.config.model.d_model}" if self.off_width else depths


def depth_scaling_plan(
    base: RunConfig,
    direction: str,
    baseline: Sequence[int],
    encoder_depths: Sequence[int] = (),
    decoder_depths: Sequence[int] = (),
    symmetric_depths: Sequence[int] = (),
    repeated: Sequence[Sequence[int]] = (),
    n_seeds: int = 1,
    narrower: Mapping[int, Sequence[Sequence[int]]] | None = None,
) -> list[PlannedRun]:
    """The runs of encoder, decoder and symmetric depth scaling around `baseline` = (enc, dec) layers.

    Encoder scaling varies the encoder over `encoder_depths` with the baseline's decoder, decoder scaling the
    reverse, symmetric scaling uses k encoder and k decoder layers for k in `symmetric_depths`. Every model is
    trained with `base.train.seed`; the (enc, dec) models listed in `repeated` are trained again with the
    next `n_seeds - 1` seeds. Everything else (width, data, training) comes from `base`.

    `narrower` maps a width to (enc, dec) models trained at that width (`d_ff` scaled with it, the same
    heads), below the smallest model depth alone reaches: with the other side fixed, depth spans only a few
    times in N. A model with the baseline's decoder depth extends encoder scaling, one with its encoder depth
    decoder scaling; in N, not in depth (`label` names its width).
    """
    if len(baseline) != 2 or min(baseline) < 1:
        raise ValueError(f"baseline must be (encoder layers, decoder layers), both >= 1, not {baseline}")
    for name, depths in (
        ("encoder", encoder_depths),
        ("decoder", decoder_depths),
        ("symmetric", symmetric_depths),
    ):
        if any(d < 1 for d in depths):
            raise ValueError(f"{name}_depths must all be >= 1, not {list(depths)}")
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1, not {n_seeds}")
    enc_bar, dec_bar = baseline
    families = {
        "baseline": [(enc_bar, dec_bar)],
        "encoder": [(e, dec_bar) for e in encoder_depths],
        "decoder": [(enc_bar, d) for d in decoder_depths],
        "symmetric": [(k, k) for k in symmetric_depths],
    }
    approach_of: dict[tuple[int, int], str] = {}
    for approach in APPROACHES:
        for depths in families[approach]:
            approach_of.setdefault(depths, approach)
    unknown = [list(depths) for depths in repeated if tuple(depths) not in approach_of]
    if unknown:
        raise ValueError(f"repeated models {unknown} are not in the plan {[list(k) for k in approach_of]}")
    first_seed = base.train.seed
    seeds_of = {depths: [first_seed] for depths in approach_of}
    for depths in repeated:
        seeds_of[tuple(depths)] = list(range(first_seed, first_seed + n_seeds))
    base = override(base, {"data.directions": [direction]})
    return [
        PlannedRun(
            approach=approach,
            direction=direction,
            enc_layers=enc,
            dec_layers=dec,
            seed=seed,
            config=override(base, {"model.enc_layers": enc, "model.dec_layers": dec, "train.seed": seed}),
        )
        for (enc, dec), approach in approach_of.items()
        for seed in seeds_of[(enc, dec)]
    ] + _narrower_runs(base, direction, (enc_bar, dec_bar), narrower or {})


def at_width(base: RunConfig, width: int) -> RunConfig:
    """`base` at model width `width` with the same heads and the feed-forward scaled in proportion: how a
    family's model is trained narrower or wider than the family. A width that is not a positive multiple of
    the heads raises ValueError."""
    heads = base.model.n_heads
    if not isinstance(width, int) or width < 1 or width % heads:
        raise ValueError(f"width must be a positive multiple of n_heads ({heads}), not {width!r}")
    return override(
        base, {"model.d_model": width, "model.d_ff": base.model.d_ff * width // base.model.d_model}
    )


def _narrower_runs(
    base: RunConfig,
    direction: str,
    baseline: tuple[int, int],
    narrower: Mapping[int, Sequence[Sequence[int]]],
) -> list[PlannedRun]:
    """`depth_scaling_plan`'s narrower models, first seed only."""
    planned = []
    for key, models in narrower.items():
        # papermill passes a chapter's parameters as JSON, whose object keys are strings
        width = int(key) if isinstance(key, str) and key.isdigit() else key
        if not isinstance(width, int) or not 0 < width < base.model.d_model or width % base.model.n_heads:
            raise ValueError(
                f"narrower widths must be multiples of n_heads ({base.model.n_heads}) below d_model "
                f"({base.model.d_model}), not {width!r}"
            )
        for depths in models:
            if len(depths) != 2 or min(depths) < 1:
                raise ValueError(
                    f"narrower model {list(depths)} at width {width}: expected [encoder layers, decoder "
                    "layers], both >= 1"
                )
            enc, dec = depths
            if (enc == baseline[0]) == (dec == baseline[1]):
                raise ValueError(
                    f"narrower model {list(depths)} at width {width} must share exactly one depth with the "
                    f"baseline {list(baseline)}: which family it extends is that side's"
                )
            changes = {"model.enc_layers": enc, "model.dec_layers": dec}
            planned.append(
                PlannedRun(
                    approach="encoder" if dec == baseline[1] else "decoder",
                    direction=direction,
                    enc_layers=enc,
                    dec_layers=dec,
                    seed=base.train.seed,
                    config=override(at_width(base, width), changes),
                    off_width=True,
                )
            )
    return planned


def last_fraction_slope(curves: Sequence[dict], key: str, fraction: float = 0.2) -> float:
    """Slope of the test loss `key` over the last `fraction` of training, in nats per doubling of steps.

    A least-squares line through the evaluations at steps >= (1 - fraction) x the last step, against log2 of
    the step: a flattened curve gives about 0; -0.05 means the loss was still falling 0.05 nats each time
    training doubled. NaN when fewer than two evaluations fall in that stretch.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], not {fraction}")
    if not curves:
        return math.nan
    start = (1 - fraction) * curves[-1]["step"]
    points = [(c["step"], c["test_loss"][key]) for c in curves if c["step"] >= start and c["step"] > 0]
    if len(points) < 2:
        return math.nan
    steps, losses = np.array(points, dtype=float).T
    return float(np.polyfit(np.log2(steps), losses, 1)[0])


def above_minimum(curves: Sequence[dict], key: str) -> float:
    """How far the last evaluation of test loss `key` lies above the lowest one of the run (nats): about 0
    for a model still improving or annealed at its end, positive for one that has begun to overfit."""
    losses = [c["test_loss"][key] for c in curves]
    return float(losses[-1] - min(losses)) if losses else math.nan


def planned_summaries(
    plan: Sequence[Any], summaries: Sequence[RunSummary], describe: Callable[[Any], str]
) -> list[tuple[Any, RunSummary]]:
    """The planned runs (each with a `config`) paired with their summaries, checked: as many summaries as
    planned runs, each the run of its plan entry (its run id the hash of the planned config); `describe`
    names an entry in the error."""
    if len(plan) != len(summaries):
        raise ValueError(f"{len(plan)} planned runs but {len(summaries)} summaries")
    for planned, summary in zip(plan, summaries, strict=True):
        if summary.run_id != config_hash(planned.config):
            raise ValueError(f"summary {summary.run_id} is not the run of {describe(planned)}")
    return list(zip(plan, summaries, strict=True))


def run_table(
    plan: Sequence[PlannedRun],
    summaries: Sequence[RunSummary],
    fraction: float = 0.2,
    last_evaluation: bool = False,
) -> pd.DataFrame:
    """One row per run and test set: the run's family, depths, seed, sizes, tokens and final loss.

    Columns: run_id, direction, approach, model ('4L-2L'), enc_layers, dec_layers, d_model, seed, Ne, Nd
    (encoder and decoder parameters, the paper's model sizes), N = Ne + Nd, total_params, tokens (target
    tokens trained on), tokens_per_param (tokens / N), steps, schedule (the learning-rate schedule),
    wall_time_s, status, reason (why a failed run failed), test_set, loss (the run's final loss, or with
    `last_evaluation` its loss at its last evaluation: where a run ends with a cool-down, the final loss, a
    median over the last evaluations, takes in some made part-way down it), slope (`last_fraction_slope` over
    the last `fraction` of training) and above_minimum (`above_minimum`). Failed runs keep their rows with a
    NaN loss, so a table shows what did not train.
    """
    rows = []
    for planned, summary in planned_summaries(plan, summaries, lambda p: f"{p.label} (seed {p.seed})"):
        counts = parameter_counts(planned.config.model)
        n_params = counts["encoder"] + counts["decoder"]
        tokens = sum(summary.tokens_seen.values())
        prefix = f"{planned.direction}/"
        for key in summary.test_set_keys():
            if not key.startswith(prefix):
                continue
            rows.append(
                {
                    "run_id": summary.run_id,
                    "direction": planned.direction,
                    "approach": planned.approach,
                    "model": planned.label,
                    "enc_layers": planned.enc_layers,
                    "dec_layers": planned.dec_layers,
                    "d_model": planned.config.model.d_model,
                    "seed": planned.seed,
                    "Ne": counts["encoder"],
                    "Nd": counts["decoder"],
                    "N": n_params,
                    "total_params": summary.n_params,
                    "tokens": tokens,
                    "tokens_per_param": tokens / n_params,
                    "steps": summary.steps,
                    "schedule": planned.config.train.schedule,
                    "wall_time_s": summary.wall_time_s,
                    "status": summary.status,
                    "reason": summary.reason,
                    "test_set": key.removeprefix(prefix),
                    "loss": _end_loss(summary, key, last_evaluation),
                    "slope": last_fraction_slope(summary.curves, key, fraction),
                    "above_minimum": above_minimum(summary.curves, key),
                }
            )
    return pd.DataFrame(rows)


def _end_loss(summary: RunSummary, key: str, last_evaluation: bool) -> float:
    """A finished run's loss on test set `key`: its final loss, or at its last evaluation (NaN if failed)."""
    if not summary.finished:
        return math.nan
    return summary.curves[-1]["test_loss"][key] if last_evaluation else summary.final_loss.get(key, math.nan)


TRAIN = "train"  # the test_set name of the training loss in `training_loss_table`


def training_loss_table(
    plan: Sequence[PlannedRun], summaries: Sequence[RunSummary], final_fraction: float = 0.1
) -> pd.DataFrame:
    """`run_table`'s columns with one row per run for the training loss (Ghorbani App. B): test_set `TRAIN`,
    loss the median of the training objective (label-smoothed, with dropout, each the mean since the
    evaluation before) over the evaluations in the last `final_fraction` of training, as the test sets' final
    losses are taken; slope and above_minimum are not measured (NaN)."""
    table = run_table(plan, summaries).drop_duplicates("run_id").reset_index(drop=True)
    objective = {}
    for summary in summaries:
        stretch = last_stretch(summary.curves, summary.steps, final_fraction)
        values = [point["train_objective"] for point in stretch if "train_objective" in point]
        objective[summary.run_id] = float(np.median(values)) if values and summary.finished else math.nan
    return table.assign(
        test_set=TRAIN, loss=table["run_id"].map(objective), slope=math.nan, above_minimum=math.nan
    )


def seed_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Seed-to-seed variability of the final loss, as Ghorbani Table 4: per direction and test set, over the
    repeated models, the standard deviation over the seeds of one model (the mean over the models) and the
    largest max - min difference between the seeds of one model (the largest over the models).

    Columns: direction, test_set, models (how many repeated models), seeds (runs per model, the smallest),
    std, max_difference.
    """
    grouped = table.dropna(subset=["loss"]).groupby(["direction", "test_set", "model"])["loss"]
    per_model = grouped.agg(
        std="std", max_difference=lambda s: s.max() - s.min(), seeds="count"
    ).reset_index()
    per_model = per_model[per_model["seeds"] >= 2]
    return (
        per_model.groupby(["direction", "test_set"], sort=False)
        .agg(
            models=("model", "size"),
            seeds=("seeds", "min"),
            std=("std", "mean"),
            max_difference=("max_difference", "max"),
        )
        .reset_index()
    )
