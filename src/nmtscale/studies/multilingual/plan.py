"""Chapter 4's runs, as configs built from the chapter's parameters."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nmtscale.config import RunConfig, from_dict, override, with_numerics


@dataclass(frozen=True)
class CohortRun:
    """One model of a cohort: the directions it trains and their sampling weights, its size and full config.

    `p` is the weight of the cohort's first direction. At p = 0 and p = 1 the model trains one direction
    alone (the single-direction model that f_i(p) is measured against), so cohorts that share a direction
    share that run.
    """

    cohort: str
    cohort_directions: tuple[str, ...]
    directions: tuple[str, ...]
    weights: tuple[float, ...]
    p: float
    d_model: int
    layers: int
    config: RunConfig

    @property
    def size(self) -> str:
        """'d16-2L': width 16, two encoder and two decoder layers."""
        return f"d{self.d_model}-{self.layers}L"


def cohort_name(directions: Sequence[str]) -> str:
    """['en-de', 'en-zh'] -> 'en-{de,zh}'; ['de-en', 'zh-en'] -> '{de,zh}-en'."""
    sources = [d.split("-")[0] for d in directions]
    targets = [d.split("-")[1] for d in directions]
    if len(set(sources)) == 1:
        return f"{sources[0]}-{{{','.join(targets)}}}"
    if len(set(targets)) == 1:
        return f"{{{','.join(sources)}}}-{targets[0]}"
    return "+".join(directions)


def base_config(params: Mapping[str, Any]) -> RunConfig:
    """The settings every run of the chapter shares, from its parameters (params/04_multilingual_laws): its
    data, dropout and decoding, and chapter 1's training recipe as the chapter takes it
    (``params["chapter1"]``: chapter 1's parameters at the chapter's scale, changed by its
    ``chapter1_overrides``; steps, tokens per update, warm-up, schedule, optimizer, peak rate, evaluations,
    final fraction and ``numerics``, which pins how each step runs, as in `bivariate.base_config`)."""
    recipe = params["chapter1"]
    steps = recipe["steps"]
    interval = steps // recipe["eval_points"]
    source = "params/04_multilingual_laws"
    raw = {
        "model": {"dropout": params["dropout"], "attention_dropout": params["dropout"]},
        "data": {
            "test_sets": list(params["test_sets"]),
            "vocab_size": params["vocab_size"],
            "character_coverage": params["character_coverage"],
            "max_train_pairs": params["max_train_pairs"],
            "max_test_pairs": params["max_test_pairs"],
            "disjoint_sources": True,
            "tokenizer_directions": list(params["tokenizer_directions"]),
        },
        "train": {
            "steps": steps,
            "max_tokens": recipe["max_tokens"],
            "warmup_steps": recipe["warmup_steps"],
            "schedule": recipe.get("schedule", "inverse_sqrt"),
            "optimizer": recipe["optimizer"],
            "lr": recipe["lr"],
            "checkpoint_interval": interval,
            "seed": params["seed"],
        },
        "eval": {
            "interval": interval,
            "final_fraction": recipe["final_fraction"],
            "decode": params["decode"],
            "max_decode_sentences": params["max_decode_sentences"],
        },
    }
    return from_dict(with_numerics(raw, recipe["numerics"], source), source)


def sized(base: RunConfig, d_model: int, layers: int, head_dim: int, ff_ratio: int) -> RunConfig:
    """`base` with width and depth set together (Fernandes App. A: heads of a fixed width, MLP ff_ratio x)."""
    if d_model % head_dim:
        raise ValueError(f"d_model {d_model} is not a multiple of the head width {head_dim}")
    return override(
        base,
        {
            "model.d_model": d_model,
            "model.n_heads": d_model // head_dim,
            "model.d_ff": ff_ratio * d_model,
            "model.enc_layers": layers,
            "model.dec_layers": layers,
        },
    )


def mixture_runs(
    base: RunConfig,
    directions: Sequence[str],
    weight_vectors: Sequence[Sequence[float]],
    sizes: Sequence[Sequence[int]],
    head_dim: int,
    ff_ratio: int,
) -> list[CohortRun]:
    """One run per weight vector (one weight per direction, summing to 1) and size (d_model, layers).

    Directions of weight 0 are left out of the run; a run with one direction left trains it alone.
    """
    runs = []
    for weights in weight_vectors:
        if len(weights) != len(directions) or min(weights) < 0 or not math.isclose(sum(weights), 1.0):
            raise ValueError(
                f"weights {list(weights)} must give each of {list(directions)} a share >= 0, summing to 1"
            )
        trained = [(d, float(w)) for d, w in zip(directions, weights, strict=True) if w > 0]
        changes = {
            "data.directions": [d for d, _ in trained],
            "data.weights": [w for _, w in trained] if len(trained) > 1 else None,
        }
        for d_model, layers in sizes:
            runs.append(
                CohortRun(
                    cohort=cohort_name(directions),
                    cohort_directions=tuple(directions),
                    directions=tuple(d for d, _ in trained),
                    weights=tuple(w for _, w in trained),
                    p=float(weights[0]),
                    d_model=d_model,
                    layers=layers,
                    config=override(sized(base, d_model, layers, head_dim, ff_ratio), changes),
                )
            )
    return runs


def chapter_plan(params: Mapping[str, Any]) -> list[CohortRun]:
    """Every run of the chapter: the two-direction cohorts over weights and sizes, then the three-direction
    models of App. H."""
    base = base_config(params)
    shape = {"head_dim": params["head_dim"], "ff_ratio": params["ff_ratio"]}
    plan = []
    for cohort in params["cohorts"]:
        weights = [(p, round(1 - p, 10)) for p in cohort["weights"]]  # 0.9, not 1 - 0.1 = 0.09999999999999998
        plan += mixture_runs(base, cohort["directions"], weights, params["sizes"], **shape)
    if params["three_pair_weights"]:
        plan += mixture_runs(
            base,
            params["three_pair_directions"],
            params["three_pair_weights"],
            params["three_pair_sizes"],
            **shape,
        )
    return plan
