"""Chapter 3's analysis: language-model architectures against the encoder-decoder (Zhang et al. 2022).

- `architecture_plan` lays out EncDec models scaled by depth (equal encoder and decoder layers) and, for each,
  the language-model counterparts matched to it: "LM + Deep" (twice the layers, `counting.lm_deep_config`)
  and "LM + Wide" (same depth, wider feed-forward, `counting.lm_wide_config`).
- `run_table` turns their run summaries into one row per run and test set, with the model's size, layers,
  analytic FLOPs per target token for training and inference (`nmtscale.engine.flops`) and measured tokens/s.
- `evaluate_stored` re-evaluates a finished run's final model on test sets split by source length, and
  translates a prefix of each test set for BLEU, chrF and the off-target rate; results are kept beside the
  run's record in the results store, so a re-executed chapter does not decode again.
- `fit_power_laws` fits Zhang Eq. 7, L(N) = beta (N / N0)^-alpha + L_inf, per architecture and evaluation
  setting, with perturbation intervals (`nmtscale.laws.uncertainty`).
- `translation_table` and `table3` summarise multilingual runs as the paper's Table 3: supervised En->XX and
  XX->En BLEU, zero-shot BLEU, loss and translation-language accuracy, as deltas against EncDec.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import torch

from nmtscale import charts, corpus, laws, pool, runs
from nmtscale.config import DataConfig, RunConfig, override
from nmtscale.engine.counting import lm_deep_config, lm_wide_config, parameter_counts
from nmtscale.engine.data import (
    ExperimentData,
    encode_pairs,
    prepare_data,
    split_direction,
    uses_target_tags,
)
from nmtscale.engine.flops import forward_flops, training_flops_per_target_token
from nmtscale.engine.metrics import bleu, chrf, off_target_rate
from nmtscale.engine.model import ModelConfig
from nmtscale.engine.tokenizer import UNK
from nmtscale.errors import ConfigurationError
from nmtscale.laws import fitting, uncertainty
from nmtscale.predict import evaluate_loss, load_trained_model, translate_ids
from nmtscale.record import RunSummary
from nmtscale.runs import config_hash
from nmtscale.studies import bivariate
from nmtscale.studies.claims import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Claim,
    by_count,
    by_differences,
    graded,
    untestable,
)
from nmtscale.studies.sweeps import last_fraction_slope

ARCH_NAMES = {
    "encdec": "EncDec",
    "prefixlm": "PrefixLM",
    "prefixlm_toponly": "PrefixLM + TopOnly",
    "causallm": "CausalLM",
    "causallm_tgtonly": "CausalLM + TgtOnly",
}
SCALINGS = ("deep", "wide")
LENGTH_BUCKETS = ("short", "medium", "long")


@dataclass(frozen=True)
class PlannedModel:
    """One run of the comparison: its variant ('prefixlm+deep'), the EncDec size it is matched to (layers per
    side), a free-form group (e.g. the data setting) and the full run config."""

    variant: str
    size: int
    group: str
    config: RunConfig

    @property
    def arch(self) -> str:
        return self.config.model.arch

    @property
    def scaling(self) -> str:
        """'depth' for EncDec, else 'deep' or 'wide'."""
        return self.variant.partition("+")[2] or "depth"

    @property
    def layers(self) -> int:
        """All layers of the model: encoder plus decoder, or the single stack of a language model."""
        return self.config.model.enc_layers + self.config.model.dec_layers

    @property
    def label(self) -> str:
        """The paper's name: 'EncDec', 'PrefixLM + Deep', 'CausalLM + TgtOnly + Wide'."""
        name = ARCH_NAMES[self.arch]
        return name if self.scaling == "depth" else f"{name} + {self.scaling.capitalize()}"


def parse_variant(variant: str) -> tuple[str, str]:
    """'prefixlm+deep' -> ('prefixlm', 'deep'); 'encdec' -> ('encdec', 'depth'); ConfigurationError if
    the architecture or the scaling is unknown."""
    arch, _, scaling = variant.partition("+")
    if arch not in ARCH_NAMES:
        raise ConfigurationError(
            f"variant {variant!r}: unknown architecture {arch!r}; valid: {list(ARCH_NAMES)}"
        )
    if arch == "encdec":
        if scaling:
            raise ConfigurationError(f"variant {variant!r}: EncDec is scaled by depth only; write 'encdec'")
        return arch, "depth"
    if scaling not in SCALINGS:
        raise ConfigurationError(
            f"variant {variant!r}: a language model needs '+deep' or '+wide' (e.g. '{arch}+deep')"
        )
    return arch, scaling


def matched_model(encdec: ModelConfig, variant: str) -> ModelConfig:
    """The model of `variant` matched to the EncDec `encdec` (itself for 'encdec')."""
    arch, scaling = parse_variant(variant)
    if arch == "encdec":
        return encdec
    return (lm_deep_config if scaling == "deep" else lm_wide_config)(encdec, arch)


def architecture_plan(
    base: RunConfig, sizes: Sequence[int], variants: Sequence[str], group: str = ""
) -> list[PlannedModel]:
    """For each EncDec size k (k encoder and k decoder layers) the model of every variant matched to it.

    Width, data and training come from `base`, whose model must be an encdec. Sizes must be >= 1.
    """
    if base.model.arch != "encdec":
        raise ConfigurationError(f"architecture_plan: the base model must be encdec, not {base.model.arch!r}")
    if not sizes or min(sizes) < 1:
        raise ConfigurationError(f"architecture_plan: sizes must be EncDec depths >= 1, not {list(sizes)}")
    for variant in variants:
        parse_variant(variant)
    plan = []
    for variant in variants:
        for size in sizes:
            encdec = base.model.replace(enc_layers=size, dec_layers=size)
            model = matched_model(encdec, variant)
            changes = {
                f"model.{key}": getattr(model, key) for key in ("arch", "enc_layers", "dec_layers", "d_ff")
            }
            plan.append(PlannedModel(variant, size, group, override(base, changes)))
    return plan


def non_embedding_params(cfg: ModelConfig) -> int:
    counts = parameter_counts(cfg)
    return counts["encoder"] + counts["decoder"]


def inference_flops_per_target_token(cfg: ModelConfig, src_len: int, tgt_len: int) -> float:
    """Forward FLOPs per target token of translating one sentence pair: the source once, then the target.

    Cached decoding does the matmuls of one teacher-forced forward pass (up to the causal half of the
    attention products, which `flops.forward_flops` counts dense, as training kernels do), except that a
    CausalLM predicts no source tokens at inference, so its source logits are not counted.
    """
    if cfg.arch == "causallm":
        cfg = cfg.replace(arch="causallm_tgtonly")
    return forward_flops(cfg, src_len, tgt_len) / tgt_len


# Chapter 3's parameters (params/03_lm_vs_encdec/<scale>.yaml) that its plans read.
PARAMETER_NAMES = (
    "seed",
    "pairs",
    "d_model",
    "d_ff",
    "n_heads",
    "vocab_size",
    "max_train_pairs",
    "steps",
    "max_tokens",
    "warmup_steps",
    "optimizer",
    "lr",
    "eval_points",
    "encdec_eval_points",
    "final_fraction",
    "variants",
    "noise_sizes",
    "noise_seeds",
    "ml_directions",
    "ml_eval_directions",
    "ml_test_sets",
    "ml_max_test_pairs",
    "ml_max_train_pairs",
    "ml_vocab_size",
    "ml_character_coverage",
    "ml_byte_fallback",
    "ml_temperature",
    "ml_steps",
    "ml_decode_sentences",
    "ml_variants",
    "transfer_helpers",
    "transfer_de_share",
    "transfer_variants",
)


def chapter_base(params: Mapping[str, Any]) -> RunConfig:
    """Chapter 3's bilingual base run: chapter 1's recipe (`bivariate.base_config`) at chapter 3's width and
    budget, evaluated on chapter 1's schedule, so that its EncDec runs are chapter 1's runs where they
    match."""
    keys = ["d_model", "d_ff", "n_heads", "vocab_size", "max_train_pairs", "steps", "max_tokens"]
    keys += ["warmup_steps", "optimizer", "lr", "seed", "final_fraction"]
    return bivariate.base_config(
        {**{key: params[key] for key in keys}, "eval_points": params["encdec_eval_points"]}
    )


def pair_test_sets(pairs: Sequence[str]) -> dict[str, list[str]]:
    """The test sets of chapter 1 (`bivariate.TEST_SETS`) the corpus has for each language pair."""
    return {
        pair: [name for name in bivariate.TEST_SETS if name in corpus.test_set_names(*pair.split("-"))]
        for pair in pairs
    }


def bilingual_plans(params: Mapping[str, Any]) -> tuple[list[PlannedModel], list[PlannedModel]]:
    """Chapter 3's bilingual runs: every variant of ``params["variants"]`` at its sizes on each pair (language
    models evaluated ``eval_points`` times), and the EncDec sizes ``noise_sizes`` with every seed of
    ``noise_seeds``, whose spread is the seed noise."""
    base = chapter_base(params)
    interval = params["steps"] // params["eval_points"]
    lm_schedule = {"train.checkpoint_interval": interval, "eval.interval": interval}
    test_sets = pair_test_sets(params["pairs"])
    plan, noise_plan = [], []
    for pair in params["pairs"]:
        pair_base = override(base, {"data.directions": [pair], "data.test_sets": test_sets[pair]})
        for variant, sizes in params["variants"].items():
            variant_base = pair_base if variant == "encdec" else override(pair_base, lm_schedule)
            plan += architecture_plan(variant_base, sizes, [variant], group=pair)
        noise_plan += [
            PlannedModel(
                "encdec",
                size,
                pair,
                override(pair_base, {"model.enc_layers": size, "model.dec_layers": size, "train.seed": s}),
            )
            for size in params["noise_sizes"]
            for s in params["noise_seeds"]
        ]
    return plan, noise_plan


def multilingual_base(params: Mapping[str, Any]) -> RunConfig:
    """The many-to-many base run (Zhang Sec. 6): chapter 3's model on the ``ml_directions``, evaluated on the
    zero-shot ``ml_eval_directions``, with its own vocabulary, sampling temperature and budget, translating
    greedily at the end."""
    interval = params["ml_steps"] // params["eval_points"]
    return override(
        chapter_base(params),
        {
            "data.directions": params["ml_directions"],
            "data.eval_directions": params["ml_eval_directions"],
            "data.test_sets": params["ml_test_sets"],
            "data.max_test_pairs": params["ml_max_test_pairs"],
            "data.max_train_pairs": params["ml_max_train_pairs"],
            "data.vocab_size": params["ml_vocab_size"],
            "data.character_coverage": params["ml_character_coverage"],
            "data.byte_fallback": params["ml_byte_fallback"],
            "data.temperature": params["ml_temperature"],
            "train.steps": params["ml_steps"],
            "train.checkpoint_interval": interval,
            "eval.interval": interval,
            "eval.decode": "greedy",
            "eval.max_decode_sentences": params["ml_decode_sentences"],
        },
    )


def multilingual_plans(params: Mapping[str, Any]) -> tuple[list[PlannedModel], list[PlannedModel]]:
    """The many-to-many runs of ``ml_variants`` and the transfer runs: De->En at a ``transfer_de_share`` of
    the updates beside X->En for each of ``transfer_helpers``, every variant of ``transfer_variants``."""
    ml_base = multilingual_base(params)
    many = [
        p
        for variant, sizes in params["ml_variants"].items()
        for p in architecture_plan(ml_base, sizes, [variant], "many-to-many")
    ]
    transfer = []
    share = params["transfer_de_share"]
    for helper in params["transfer_helpers"]:
        helper_base = override(
            ml_base,
            {
                "data.directions": ["de-en", f"{helper}-en"],
                "data.eval_directions": [],
                "data.test_sets": ["l10n"],
                "data.temperature": None,
                "data.weights": [share, 1 - share],
                "data.tokenizer_directions": [f"{lang}-en" for lang in ["de", *params["transfer_helpers"]]],
            },
        )
        for variant, sizes in params["transfer_variants"].items():
            transfer += architecture_plan(helper_base, sizes, [variant], f"De + {helper.capitalize()}")
    return many, transfer


def encdec_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """Each language model's final loss minus that of the EncDec it is matched to (same group, size and test
    set): one row per group, variant and test set, a column per size; above 0, the LM is behind."""
    encdec_loss = table[table["variant"] == "EncDec"].set_index(["group", "size", "test_set"])["loss"]
    gaps = table[table["variant"] != "EncDec"].copy()
    matched = list(zip(gaps["group"], gaps["size"], gaps["test_set"], strict=True))
    gaps["gap"] = gaps["loss"].to_numpy() - encdec_loss.reindex(matched).to_numpy()
    return gaps.pivot_table(index=["group", "variant", "test_set"], columns="size", values="gap")


def compute_table(
    plan: Sequence[PlannedModel],
    summaries: Sequence[RunSummary],
    table: pd.DataFrame,
    translations: pd.DataFrame,
    group: str,
) -> tuple[pd.DataFrame, tuple[int, int]]:
    """The cost of every model of one `group` (a language pair, Zhang Sec. 4.3): `flops_table` at the mean
    source and target lengths of the pair's training text in its runs' vocabulary, beside the measured
    training speed (`table`'s tokens_per_s) and greedy decoding speed (`translations`). Returns the table and
    the (source, target) lengths, target with its EOS."""
    members = [(p, s) for p, s in zip(plan, summaries, strict=True) if p.group == group]
    tokenizer = runs.tokenizer(members[0][1])
    train_pairs = corpus.load_pairs(*group.split("-"), "train")
    src_len = round(np.mean([len(ids) for ids in tokenizer.encode([s for s, _ in train_pairs])]))
    tgt_len = round(np.mean([len(ids) + 1 for ids in tokenizer.encode([t for _, t in train_pairs])]))
    flops = flops_table([p for p, _ in members], tokenizer.vocab_size, src_len, tgt_len)
    speed = table[table["group"] == group].drop_duplicates("run_id")[["variant", "size", "tokens_per_s"]]
    decoded = translations[translations["group"] == group].groupby(["variant", "size"])
    decoded = decoded[["target_tokens", "seconds"]].sum()
    decode_speed = (decoded["target_tokens"] / decoded["seconds"]).rename("decode_tokens_per_s")
    compute = flops.merge(speed, on=["variant", "size"]).merge(
        decode_speed.reset_index(), on=["variant", "size"]
    )
    return compute, (src_len, tgt_len)


def flops_charts(compute: pd.DataFrame) -> list[alt.LayerChart]:
    """Training and inference FLOPs per target token (`compute_table`) against N, one chart each."""
    points = compute.melt(
        id_vars=["variant", "size", "N"],
        value_vars=["train_flops_per_token", "inference_flops_per_token"],
        var_name="kind",
        value_name="flops",
    )
    return metric_charts(
        points,
        "kind",
        "flops",
        lambda kind: kind.replace("_", " "),
        "FLOPs per target token",
        tooltip=("size",),
    )


def flops_table(plan: Sequence[PlannedModel], vocab_size: int, src_len: int, tgt_len: int) -> pd.DataFrame:
    """Per model: N, layers, and training / inference FLOPs per target token at these sentence lengths, with
    the run's vocabulary (a run config leaves the model's vocabulary size to its tokenizer)."""
    rows = []
    for p in plan:
        model = p.config.model.replace(vocab_size=vocab_size)
        rows.append(
            {
                "variant": p.label,
                "size": p.size,
                "layers": p.layers,
                "N": non_embedding_params(model),
                "train_flops_per_token": training_flops_per_target_token(model, src_len, tgt_len),
                "inference_flops_per_token": inference_flops_per_target_token(model, src_len, tgt_len),
            }
        )
    return pd.DataFrame(rows)


def run_table(plan: Sequence[PlannedModel], summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per run and test set: variant, size, layers, N, test_set (as 'en-de/l10n'), loss (final),
    slope (of the test loss over the second half of training, nats per doubling of the steps: about 0 once
    the curve has flattened), tokens, wall_time_s, tokens_per_s (measured), train_flops_per_token (analytic,
    at the run's mean training lengths), status, reason (why a failed run failed). Failed runs keep their rows
    with a NaN loss."""
    if len(plan) != len(summaries):
        raise ValueError(f"{len(plan)} planned runs but {len(summaries)} summaries")
    rows = []
    for p, s in zip(plan, summaries, strict=True):
        if s.run_id != config_hash(p.config):
            raise ValueError(f"summary {s.run_id} is not the run of {p.label} size {p.size}")
        for key in s.test_set_keys():
            rows.append(
                {
                    "run_id": s.run_id,
                    "group": p.group,
                    "variant": p.label,
                    "arch": p.arch,
                    "scaling": p.scaling,
                    "size": p.size,
                    "layers": p.layers,
                    "N": non_embedding_params(p.config.model),
                    "test_set": key,
                    "loss": s.final_loss.get(key, math.nan) if s.finished else math.nan,
                    "slope": last_fraction_slope(s.curves, key, fraction=0.5),
                    "tokens": sum(s.tokens_seen.values()),
                    "wall_time_s": s.wall_time_s,
                    "tokens_per_s": math.nan if s.tokens_per_s is None else s.tokens_per_s,
                    "train_flops_per_token": s.flops_per_target_token,
                    "status": s.status,
                    "reason": s.reason,
                }
            )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------------------
# Re-evaluating stored models: loss by source length, and translation


def length_edges(sources: Sequence[str]) -> tuple[int, int]:
    """Word-count boundaries that split sentences into thirds: short < a <= medium < b <= long."""
    if len(sources) < 3:
        raise ValueError(f"need at least 3 sentences to split into length terciles, got {len(sources)}")
    words = np.array([len(s.split()) for s in sources])
    low, high = (int(np.quantile(words, q, method="higher")) for q in (1 / 3, 2 / 3))
    return low, max(high, low + 1)


def length_bucket(source: str, edges: tuple[int, int]) -> str:
    """'short', 'medium' or 'long' for a source sentence, by its word count against `edges`."""
    n = len(source.split())
    return LENGTH_BUCKETS[0] if n < edges[0] else LENGTH_BUCKETS[1] if n < edges[1] else LENGTH_BUCKETS[2]


@dataclass(frozen=True)
class EvalRequest:
    """What `evaluate_stored` measures: the test sets {'en-de/l10n': [(source, reference), ...]}, the length
    edges, how many sentences of each set to translate greedily (0: none), and the loss batch size."""

    test_sets: dict[str, list[tuple[str, str]]]
    edges: tuple[int, int]
    decode_sentences: int
    max_tokens: int = 4096

    @property
    def key(self) -> str:
        """A content hash, naming the cached result."""
        payload = json.dumps(
            [sorted(self.test_sets.items()), list(self.edges), self.decode_sentences, self.max_tokens]
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def evaluate_stored(summary: RunSummary, request: EvalRequest) -> dict[str, Any]:
    """Loss of a finished run's final model on every test set split by source length, and greedy
    translations of each set's first `decode_sentences` sentences (BLEU, chrF, off-target rate, speed).

    Returns {'buckets': [{test_set, bucket, sentences, tokens, loss}], 'translation': [{test_set, bleu, chrf,
    off_target_rate, sentences, target_tokens, seconds}]}; kept in the results store by the request's key.
    """
    if not summary.finished:
        raise ConfigurationError(f"run {summary.run_id} {summary.status}: {summary.reason}")
    directions = summary.config["data"]["directions"]
    known = directions + summary.config["data"]["eval_directions"]
    for name in request.test_sets:
        if name.split("/")[0] not in known:
            raise ConfigurationError(
                f"run {summary.run_id}: test set {name!r}: the run knows directions {known}"
            )
    return runs.stored_output(
        summary, f"evaluation-{request.key}", lambda directory: _evaluate_model(directory, summary, request)
    )


def _evaluate_model(run_directory: Path, summary: RunSummary, request: EvalRequest) -> dict[str, Any]:
    directions = summary.config["data"]["directions"]
    tokenizer = runs.tokenizer(summary)
    model = load_trained_model(run_directory, torch.device("cpu"))
    logit_cap = summary.config["train"]["logit_cap"]
    result: dict[str, list] = {"buckets": [], "translation": []}
    for name, pairs in request.test_sets.items():
        direction = name.split("/")[0]
        examples = encode_pairs(tokenizer, pairs, direction, uses_target_tags(directions))
        for bucket in LENGTH_BUCKETS:
            chosen = [
                e
                for e, (src, _) in zip(examples, pairs, strict=True)
                if length_bucket(src, request.edges) == bucket
            ]
            if chosen:
                result["buckets"].append(
                    {
                        "test_set": name,
                        "bucket": bucket,
                        "sentences": len(chosen),
                        "tokens": sum(len(e.tgt) + 1 for e in chosen),
                        "loss": evaluate_loss(model, chosen, request.max_tokens, logit_cap),
                    }
                )
        n = min(request.decode_sentences, len(pairs))
        if n:
            start = time.perf_counter()
            ids = translate_ids(model, [e.src for e in examples[:n]])
            seconds = time.perf_counter() - start
            hypotheses = tokenizer.decode(ids)
            references = [tgt for _, tgt in pairs[:n]]
            target_lang = split_direction(direction)[1]
            result["translation"].append(
                {
                    "test_set": name,
                    "sentences": n,
                    "bleu": bleu(hypotheses, references, target_lang).score,
                    "chrf": chrf(hypotheses, references).score,
                    "off_target_rate": off_target_rate(hypotheses, target_lang),
                    "target_tokens": sum(len(h) + 1 for h in ids),
                    "seconds": seconds,
                }
            )
    return result


def evaluate_runs(
    summaries: Sequence[RunSummary], request: EvalRequest, workers: int = 1, threads: int = 1
) -> list[dict[str, Any]]:
    """`evaluate_stored` for every run, in `workers` processes of `threads` torch threads; in input order."""
    return pool.parallel_map(evaluate_stored, [(s, request) for s in summaries], workers, threads)


def stored_table(
    plan: Sequence[PlannedModel], results: Sequence[dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `evaluate_stored` results as two tidy frames, each row keyed by variant, size, layers and N:
    losses per test set and length bucket, and translation scores per test set."""
    if len(plan) != len(results):
        raise ValueError(f"{len(plan)} planned runs but {len(results)} results")
    buckets, translation = [], []
    for p, result in zip(plan, results, strict=True):
        keys = {
            "variant": p.label,
            "size": p.size,
            "layers": p.layers,
            "N": non_embedding_params(p.config.model),
            "group": p.group,
        }
        buckets += [{**keys, **row} for row in result["buckets"]]
        translation += [{**keys, **row} for row in result["translation"]]
    return pd.DataFrame(buckets), pd.DataFrame(translation)


def evaluation_settings(
    buckets: pd.DataFrame, source_original: Sequence[str], target_original: Sequence[str]
) -> pd.DataFrame:
    """Per model, the loss in each of Zhang's Fig. 3 settings, pooled over the `stored_table` bucket rows
    (token-weighted, so it is the per-token cross-entropy of the union): 'source-original' and
    'target-original' (all lengths of the named test sets), and 'short', 'medium', 'long' (all test sets).
    A setting none of a group's test sets falls in (no target-original set for En->Fr) has no rows there."""
    evaluated = set(buckets["test_set"])
    unknown = sorted((set(source_original) | set(target_original)) - evaluated)
    if unknown:
        raise ValueError(f"test sets {unknown} are not among the evaluated ones {sorted(evaluated)}")
    keys = ["group", "variant", "size", "layers", "N"]
    selections = {
        "source-original": buckets["test_set"].isin(source_original),
        "target-original": buckets["test_set"].isin(target_original),
        **{bucket: buckets["bucket"] == bucket for bucket in LENGTH_BUCKETS},
    }
    frames = []
    for setting, rows in selections.items():
        chosen = buckets[rows].assign(weighted=lambda f: f["loss"] * f["tokens"])
        pooled = chosen.groupby(keys, sort=False)[["weighted", "tokens"]].sum().reset_index()
        pooled["loss"] = pooled["weighted"] / pooled["tokens"]
        frames.append(pooled.drop(columns="weighted").assign(setting=setting))
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------------------
# Zhang Eq. 7 per architecture


@dataclass
class LawFit:
    """Eq. 7 fitted to one series: its fit (law parameters alpha=beta, p=alpha, L_inf) and its uncertainty."""

    keys: dict[str, Any]
    fit: fitting.Fit
    spread: uncertainty.Uncertainty | None  # None when fitted without uncertainty


def fit_power_laws(
    points: pd.DataFrame,
    by: Sequence[str],
    n0: float,
    relative_sigma: float,
    n_samples: int = 0,
    seed: int = 0,
    workers: int = 1,
) -> list[LawFit]:
    """Zhang Eq. 7, L(N) = beta (N / N0)^-alpha + L_inf, fitted to the rows (columns N, loss) of each group of
    `by` by the robust multi-start fit from the law's start grid. With `n_samples` > 1 the uncertainty
    refits on losses perturbed by Gaussian noise of `relative_sigma` x loss, each refit restarted from the
    whole grid: with as few points as parameters a warm-started refit stays in the first fit's valley and
    understates the spread tenfold or more. The groups' refits run in `workers` processes. Groups need >= 3
    points."""
    groups = list(points.dropna(subset=["loss"]).groupby(list(by), sort=False))
    for values, group in groups:
        if len(group) < 3:
            raise ValueError(f"group {values}: {len(group)} points; Eq. 7 has 3 parameters")
    law = _eq7(n0)
    fits = [fitting.fit_multistart(law, group[["N"]], group["loss"].to_numpy()) for _, group in groups]
    spreads: list[uncertainty.Uncertainty | None] = [None] * len(fits)
    if n_samples > 1:
        spreads = uncertainty.restarted_in_workers(
            fits, [(_eq7, (n0,))] * len(fits), "perturbation", n_samples, seed, relative_sigma, workers
        )
    return [
        LawFit(dict(zip(by, values if isinstance(values, tuple) else (values,), strict=True)), fit, spread)
        for (values, _), fit, spread in zip(groups, fits, spreads, strict=True)
    ]


def _eq7(n0: float) -> laws.Law:
    # scipy's L-BFGS-B per start: on 3-6 points about 4x faster than the batched optimiser
    return dataclasses.replace(laws.power_law(n0), batched=False)


def law_parameters(fits: Sequence[LawFit], level: float = 0.95) -> pd.DataFrame:
    """One row per fit in the paper's names: alpha (exponent), beta, L_inf, each with an interval, and the
    number of points; `alpha_gt_0` is the share of perturbed refits whose exponent exceeds 0.001. Intervals
    are NaN for fits without uncertainty."""
    rows = []
    paper_names = {"alpha": "beta", "p": "alpha", "L_inf": "L_inf"}
    for f in fits:
        row = {**f.keys, "points": len(f.fit.y), "r2": f.fit.evaluate(f.fit.x, f.fit.y).r2}
        coefficients = None if f.spread is None else f.spread.coefficients(level).set_index("parameter")
        for name, paper in paper_names.items():
            row[paper] = f.fit.params[name]
            for side in ("lower", "upper"):
                row[f"{paper}_{side}"] = math.nan if coefficients is None else coefficients.loc[name, side]
        row["alpha_gt_0"] = math.nan if f.spread is None else float((f.spread.samples["p"] > 1e-3).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def law_curves(fits: Sequence[LawFit], n_points: int = 40) -> pd.DataFrame:
    """Each fitted law on a log grid over its points' range of N: columns of the fit's keys, N, loss."""
    frames = []
    for f in fits:
        n = np.geomspace(f.fit.x[:, 0].min(), f.fit.x[:, 0].max(), n_points)
        frames.append(pd.DataFrame({**f.keys, "N": n, "loss": f.fit.predict(n[:, None])}))
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------------------
# Multilingual and zero-shot (Sec. 6, Table 3)


def piece_shares(data: ExperimentData, lang: str) -> dict[str, float]:
    """Among the reference tokens of the run's test sets into `lang`: the share of unknown pieces ("unknown")
    and of byte pieces ("byte", a byte-fallback vocabulary spelling a character it lacks)."""
    targets = [token for t in data.test_sets if t.target_lang == lang for e in t.examples for token in e.tgt]
    if not targets:
        raise ValueError(f"no test set translates into {lang!r}")
    return {
        "unknown": sum(token == UNK for token in targets) / len(targets),
        "byte": sum(map(data.tokenizer.is_byte, targets)) / len(targets),
    }


def vocabulary_check(data: DataConfig, cache_dir: Path, lang: str, workers: int = 1) -> pd.DataFrame:
    """`piece_shares` of `lang`'s references under the vocabulary of `data` without and with byte fallback
    (columns byte_fallback, unknown, byte), the two vocabularies trained side by side over `workers`."""
    fallbacks = (False, True)
    jobs = [(dataclasses.replace(data, byte_fallback=fallback), cache_dir, lang) for fallback in fallbacks]
    shares = pool.parallel_map(_prepared_piece_shares, jobs, workers)
    return pd.DataFrame([{"byte_fallback": f} | s for f, s in zip(fallbacks, shares, strict=True)])


def _prepared_piece_shares(data: DataConfig, cache_dir: Path, lang: str) -> dict[str, float]:
    return piece_shares(prepare_data(data, cache_dir), lang)


def direction_kind(direction: str, trained: Sequence[str]) -> str:
    """'en-xx' or 'xx-en' for a trained direction, 'zero-shot' for one the run never trained on."""
    if direction not in trained:
        return "zero-shot"
    src_lang, _ = split_direction(direction)
    return "xx-en" if src_lang != "en" else "en-xx"


def translation_table(plan: Sequence[PlannedModel], summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per run and test set of runs that translated at the end of training: variant, size, group,
    direction, kind (en-xx, xx-en, zero-shot), test_set, loss, bleu, chrf, off_target_rate."""
    if len(plan) != len(summaries):
        raise ValueError(f"{len(plan)} planned runs but {len(summaries)} summaries")
    rows = []
    for p, s in zip(plan, summaries, strict=True):
        if not s.finished or s.translation is None:
            raise ValueError(
                f"run {s.run_id} ({p.label}): status {s.status}, translation {s.translation is not None}"
            )
        trained = s.config["data"]["directions"]
        for key, scores in s.translation.items():
            direction, test_set = key.split("/")
            rows.append(
                {
                    "variant": p.label,
                    "size": p.size,
                    "N": non_embedding_params(p.config.model),
                    "group": p.group,
                    "direction": direction,
                    "kind": direction_kind(direction, trained),
                    "test_set": test_set,
                    "loss": s.final_loss[key],
                    "bleu": scores["bleu"],
                    "chrf": scores["chrf"],
                    "off_target_rate": scores["off_target_rate"],
                }
            )
    return pd.DataFrame(rows)


def table3(translations: pd.DataFrame, reference: str = "EncDec") -> pd.DataFrame:
    """The paper's Table 3 from `translation_table` rows: per variant and size, mean BLEU over En->XX,
    XX->En and zero-shot test sets, zero-shot loss and translation-language accuracy (ACC, % on target);
    the reference variant keeps its scores, the others show the difference to it at the same size, except
    the zero-shot columns, which the paper prints as scores for every model."""
    if reference not in set(translations["variant"]):
        raise ValueError(f"no {reference!r} rows to take differences against")
    grouped = translations.groupby(["size", "variant", "kind"], sort=False)
    means = grouped[["bleu", "loss", "off_target_rate"]].mean().reset_index()
    wide = means.pivot_table(
        index=["size", "variant"], columns="kind", values=["bleu", "loss", "off_target_rate"], sort=False
    )
    table = pd.DataFrame(
        {
            "En->XX BLEU": wide[("bleu", "en-xx")],
            "XX->En BLEU": wide[("bleu", "xx-en")],
            "zero-shot BLEU": wide[("bleu", "zero-shot")],
            "zero-shot loss": wide[("loss", "zero-shot")],
            "zero-shot ACC": 100 * (1 - wide[("off_target_rate", "zero-shot")]),
        }
    )
    supervised = ["En->XX BLEU", "XX->En BLEU"]
    rows = []
    for size, block in table.groupby(level="size", sort=False):
        ref = block.xs(reference, level="variant")[supervised].iloc[0]
        for (_, variant), row in block.iterrows():
            out = row.copy()
            if variant != reference:
                out[supervised] = row[supervised] - ref
            rows.append({"size": size, "variant": variant, **out.to_dict()})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------------------
# Claims, measurements, verdicts

ENCDEC = "EncDec"
PREFIX_DEEP, PREFIX_WIDE = "PrefixLM + Deep", "PrefixLM + Wide"
TOPONLY_DEEP = "PrefixLM + TopOnly + Deep"
CAUSAL_DEEP, TGTONLY_DEEP = "CausalLM + Deep", "CausalLM + TgtOnly + Deep"
EXPONENT_STABILITY = 0.05  # Zhang et al.: exponents change "often less than 0.05" across settings
# Below this zero-shot BLEU for every model the outputs are not translations (a repeated piece, a run of
# byte pieces), and the language they are identified as says nothing about zero-shot translation.
TRANSLATING_BLEU = 1.0


def mean_loss(table: pd.DataFrame) -> pd.DataFrame:
    """Loss averaged over test sets: one row per variant and size (columns variant, size, loss)."""
    return table.groupby(["variant", "size"], sort=False)["loss"].mean().reset_index()


def gaps_to_encdec(table: pd.DataFrame) -> pd.DataFrame:
    """Per language-model variant and size: mean loss over test sets minus that of the EncDec of the size."""
    means = mean_loss(table)
    encdec = means[means["variant"] == ENCDEC].set_index("size")["loss"]
    lms = means[(means["variant"] != ENCDEC) & means["size"].isin(encdec.index)].copy()
    lms["gap"] = lms["loss"].to_numpy() - encdec.reindex(lms["size"]).to_numpy()
    return lms


def wide_minus_deep(table: pd.DataFrame) -> pd.Series:
    """Mean loss over test sets of LM + Wide minus that of LM + Deep (`run_table` rows), per language pair
    where the table has a `group` column, architecture and size, wherever both were trained (an empty series
    where none was)."""
    keys = [key for key in ("group", "arch", "size") if key in table]
    scaled = table[table["scaling"].isin(SCALINGS)]
    means = scaled.groupby([*keys, "scaling"])["loss"].mean().unstack("scaling")
    if not set(SCALINGS) <= set(means.columns):
        return pd.Series(dtype=float, name="wide_minus_deep")
    both = means.dropna(subset=list(SCALINGS))
    return (both["wide"] - both["deep"]).rename("wide_minus_deep")


@dataclass(frozen=True)
class Noise:
    """A noise level in nats and how it was derived (the Claim rows show the words)."""

    nats: float
    meaning: str

    @property
    def text(self) -> str:
        return f"{self.nats:.3f} nats: {self.meaning}"


def claims(
    table: pd.DataFrame,
    seed_std: float,
    exponents: pd.DataFrame,
    settings: pd.DataFrame,
    compute: pd.DataFrame,
    multilingual: pd.DataFrame,
    transfer: pd.DataFrame,
) -> list[Claim]:
    """The chapter's claims, each graded by the rule it states.

    table: `run_table` rows of the bilingual runs (variant, size, test_set, loss); with a `group` column (the
    language pair) the bilingual claims are judged per pair, each claim named with its pair. seed_std: the
    seed-to-seed standard deviation of a run's final loss. A difference between two runs counts when it
    exceeds twice its standard deviation, 2 sqrt(2) seed_std; a change of a gap between sizes (four runs)
    when it exceeds 4 seed_std. exponents: `law_parameters` of the Fig. 3 settings; settings:
    `evaluation_settings` (both split by `group` when the table is); compute: `flops_table` joined with
    measured tokens_per_s; multilingual, transfer: `translation_table` rows (transfer: the low-resource
    direction's).
    """
    noise = Noise(difference_noise(seed_std), f"2 std of a difference of two runs (seed std {seed_std:.4f})")
    change_noise = Noise(4 * seed_std, f"2 std of a change between two differences (seed std {seed_std:.4f})")
    found: list[Claim] = []
    if "group" in table:
        for pair in table["group"].unique():
            found += [
                dataclasses.replace(claim, claim=f"{claim.claim} ({pair})")
                for claim in _bilingual_claims(
                    table[table["group"] == pair],
                    exponents[exponents["group"] == pair],
                    settings[settings["group"] == pair],
                    noise,
                    change_noise,
                )
            ]
    else:
        found += _bilingual_claims(table, exponents, settings, noise, change_noise)
    return [
        *found,
        _compute_claim(compute),
        *_multilingual_claims(multilingual, noise),
        _transfer_claim(transfer, noise),
    ]


def difference_noise(seed_std: float) -> float:
    """When a difference between two single runs counts: twice its standard deviation, 2 sqrt(2) seed_std."""
    return 2 * math.sqrt(2) * seed_std


def verdict_numbers(
    table: pd.DataFrame,
    n_models: int,
    steps: int,
    max_tokens: int,
    per_run: pd.DataFrame,
    seed_std: float,
    exponents: pd.DataFrame,
    translations: pd.DataFrame,
    decode_sentences: int,
    ml: pd.DataFrame,
    ml_steps: int,
) -> str:
    """The chapter's "numbers behind the verdicts" as Markdown bullets, from its tables: the bilingual runs
    (`table`, with a `group` per language pair; `n_models` planned, trained for `steps` updates of about
    `max_tokens` target tokens; `per_run` with `slope_2nd_half`), the seed noise, the gaps to EncDec, LM +
    Wide against LM + Deep, the Eq. 7 exponents, the BLEU of the bilingual `translations` and of the
    multilingual runs (`ml`, `translation_table` rows, trained for `ml_steps`)."""
    finished = table.drop_duplicates("run_id")
    pairs = list(table["group"].unique())
    noise_threshold = difference_noise(seed_std)
    supervised_bleu = ml.loc[ml["kind"] != "zero-shot", "bleu"]
    zero_shot = ml[ml["kind"] == "zero-shot"]
    lines = [
        f"- {len(finished)} bilingual runs on {', '.join(pairs)} ({n_models} models), "
        f"{finished['N'].min():,}-{finished['N'].max():,} non-embedding parameters, {steps} updates of "
        f"~{max_tokens} target tokens; over the second half of training the loss still fell "
        f"{-per_run['slope_2nd_half'].max():.3f}-{-per_run['slope_2nd_half'].min():.3f} nats per doubling of "
        "the steps.",
        f"- Seed noise: {seed_std:.4f} nats standard deviation of the final loss; a difference between two "
        f"runs counts above {noise_threshold:.3f} nats.",
    ]
    for pair in pairs:
        gap_summary = gaps_to_encdec(table[table["group"] == pair])
        lines.append(
            f"- {pair}, mean loss over test sets, gap to EncDec at equal size: "
            + "; ".join(
                f"{v} " + ", ".join(f"{g:+.3f}" for g in group.sort_values("size")["gap"])
                for v, group in gap_summary.groupby("variant")
            )
            + f" (sizes {', '.join(str(int(x)) for x in sorted(gap_summary['size'].unique()))})."
        )
    wide_gaps = wide_minus_deep(table)
    lines += [
        f"- LM + Wide minus LM + Deep: behind in {int((wide_gaps > 0).sum())} of {len(wide_gaps)} "
        f"comparisons, beyond {noise_threshold:.3f} nats in {int((wide_gaps > noise_threshold).sum())}.",
        f"- Eq. 7 exponent alpha over the Fig. 3 settings: {exponents['alpha'].min():.3f}-"
        f"{exponents['alpha'].max():.3f}; median 95% interval width "
        f"{(exponents['alpha_upper'] - exponents['alpha_lower']).median():.3f}.",
        f"- BLEU of the bilingual models ({decode_sentences} sentences per set): "
        f"{translations['bleu'].min():.1f}-{translations['bleu'].max():.1f}.",
        f"- Multilingual ({ml_steps} updates): supervised BLEU {supervised_bleu.min():.1f}-"
        f"{supervised_bleu.max():.1f}, zero-shot BLEU {zero_shot['bleu'].min():.1f}-"
        f"{zero_shot['bleu'].max():.1f}, zero-shot off-target rate {zero_shot['off_target_rate'].min():.2f}-"
        f"{zero_shot['off_target_rate'].max():.2f}.",
    ]
    return "\n".join(lines)


def _compute_claim(compute: pd.DataFrame) -> Claim:
    per_size = compute.set_index(["variant", "size"])
    lm_rows = per_size.drop(index=ENCDEC, level="variant")
    enc_flops = per_size.xs(ENCDEC, level="variant")
    fewer = all(
        row[kind] > enc_flops.loc[size, kind]
        for (_, size), row in lm_rows.iterrows()
        for kind in ("train_flops_per_token", "inference_flops_per_token")
    )
    sizes = lm_rows.index.get_level_values("size")
    ratio = lm_rows["train_flops_per_token"] / enc_flops["train_flops_per_token"].reindex(sizes).to_numpy()
    speed = lm_rows["tokens_per_s"] / enc_flops["tokens_per_s"].reindex(sizes).to_numpy()
    return Claim(
        "EncDec needs fewer FLOPs per token than the LMs (Fig. 7)",
        "EncDec demands less computation than every LM, the gap narrowing at scale (Sec. 5.1, Fig. 7)",
        f"LM / EncDec training FLOPs at equal size: {ratio.min():.2f}-{ratio.max():.2f}x; measured training "
        f"speed LM / EncDec {speed.min():.2f}-{speed.max():.2f}x",
        REPRODUCED if fewer else NOT_REPRODUCED,
        "analytic training and inference FLOPs of every LM above its EncDec's",
    )


@dataclass(frozen=True)
class _PairRuns:
    """One language pair's runs as the Sec. 5 claims read them: mean loss over test sets per (variant,
    size), each LM's gap to EncDec, the variants and sizes run, the Deep-Wide differences and the noise."""

    means: pd.Series  # mean loss by (variant, size)
    gap_at: pd.Series  # loss minus EncDec's by (variant, size)
    variants: set[str]  # the LM variants run (EncDec not among them)
    sizes: list[int]
    wide_deep: pd.DataFrame  # `wide_minus_deep`
    noise: Noise
    change_noise: Noise

    @property
    def small(self) -> int:
        return self.sizes[0]

    @property
    def large(self) -> int:
        return self.sizes[-1]


def _bilingual_claims(
    table: pd.DataFrame, exponents: pd.DataFrame, settings: pd.DataFrame, noise: Noise, change_noise: Noise
) -> list[Claim]:
    """The claims of Sec. 5 (Fig. 2, 3, 9) on one language pair's runs; see `claims` for the rules."""
    gaps = gaps_to_encdec(table)
    pair = _PairRuns(
        means=mean_loss(table).set_index(["variant", "size"])["loss"],
        gap_at=gaps.set_index(["variant", "size"])["gap"],
        variants=set(gaps["variant"]),
        sizes=[int(s) for s in sorted(gaps["size"].unique())],
        wide_deep=wide_minus_deep(table.drop(columns="group", errors="ignore")),
        noise=noise,
        change_noise=change_noise,
    )
    prefix_close = [_prefix_close_claim(pair)] if PREFIX_DEEP in pair.variants else []
    return [
        _gap_narrows_claim(pair),
        *prefix_close,
        _loss_order_claim(
            pair,
            "CausalLM is behind EncDec",
            "CausalLM retains a clear gap against the others (Fig. 2)",
            ENCDEC,
            CAUSAL_DEEP,
            pair.sizes,
        ),
        # causal masking alone: both without a source-side loss, so only the mask differs
        _loss_order_claim(
            pair,
            "CausalLM + TgtOnly is behind PrefixLM (causal masking alone)",
            "full visibility of the source (PrefixLM) beats causal masking (Fig. 2)",
            PREFIX_DEEP,
            TGTONLY_DEEP,
            pair.sizes,
        ),
        _tgtonly_claim(pair),
        _deep_vs_wide_claim(pair),
        _deep_wide_gap_claim(pair),
        _ordering_claim(pair),
        _loss_order_claim(
            pair,
            "TopOnly is ahead at small sizes",
            "topmost-layer source encodings (TopOnly) help when there are fewer parameters (Fig. 2)",
            TOPONLY_DEEP,
            PREFIX_DEEP,
            [pair.small],
        ),
        _exponent_stability_claim(exponents),
        *_setting_claims(settings, noise),
        _ranking_claim(settings, noise),
    ]


def _gap_narrows_claim(pair: _PairRuns) -> Claim:
    """Fig. 2: the LMs behind EncDec at the smallest size close the gap as they grow."""
    small, large, gap_at, noise = pair.small, pair.large, pair.gap_at, pair.noise
    behind = sorted(v for v in pair.variants if gap_at[(v, small)] > noise.nats)
    shrink = [gap_at[(v, small)] - gap_at[(v, large)] for v in behind]
    return graded(
        "The gap to EncDec narrows as models grow (Fig. 2)",
        "LMs that are poor at small scale gain more from parameters; the gap narrows at scale",
        "; ".join(
            f"{v}: {gap_at[(v, small)]:+.3f} -> {gap_at[(v, large)]:+.3f}" for v in sorted(pair.variants)
        ),
        by_differences(shrink, pair.change_noise.nats)
        if behind
        else (NOT_TESTABLE, f"no LM behind EncDec by more than {noise.nats:.3f} nats at size {small}"),
        f"for the LMs behind EncDec at size {small} by more than the difference noise "
        f"({', '.join(behind) or 'none'}): the gap at size {large} smaller by more than the change noise "
        "(mean loss over test sets)",
        f"differences {noise.text}; changes {pair.change_noise.text}",
    )


def _prefix_close_claim(pair: _PairRuns) -> Claim:
    """Fig. 2: PrefixLM never falls behind EncDec by more than the noise."""
    gap = [pair.gap_at[(PREFIX_DEEP, s)] for s in pair.sizes]
    return Claim(
        "PrefixLM is close to EncDec",
        "PrefixLM and EncDec converge to similar quality bands (Fig. 2)",
        "PrefixLM + Deep - EncDec: " + ", ".join(f"{g:+.3f}" for g in gap),
        REPRODUCED if all(g <= pair.noise.nats for g in gap) else NOT_REPRODUCED,
        "PrefixLM never behind EncDec by more than the noise",
        pair.noise.text,
    )


def _loss_order_claim(
    pair: _PairRuns, claim: str, paper: str, better: str, worse: str, which: Sequence[int]
) -> Claim:
    """`worse` behind `better` by more than the noise at every size in `which`."""
    rule = f"loss({worse}) - loss({better}) above the noise at every size"
    run = pair.variants | {ENCDEC}
    if better not in run or worse not in run:
        return untestable(claim, paper, f"{better} or {worse} not run", rule, "not run at this scale")
    diffs = [pair.means[(worse, s)] - pair.means[(better, s)] for s in which]
    sizes_text = ", ".join(f"size {s}: {d:+.3f}" for s, d in zip(which, diffs, strict=True))
    measured = f"loss({worse}) - loss({better}): {sizes_text}"
    return graded(claim, paper, measured, by_differences(diffs, pair.noise.nats), rule, pair.noise.text)


def _deep_vs_wide_claim(pair: _PairRuns) -> Claim:
    """Zhang: with fewer parameters, LM + Deep beats LM + Wide; judged at the smallest size."""
    claim = "LM + Deep is ahead of LM + Wide at the smallest size"
    paper = "LM + Deep outperforms LM + Wide when there are fewer parameters (Sec. 5.1, Fig. 2)"
    rule = f"loss(Wide) - loss(Deep) above the noise for every architecture at size {pair.small}"
    wide_deep = pair.wide_deep
    if wide_deep.empty:
        return untestable(claim, paper, "no architecture trained both ways", rule, "not run at this scale")
    at_small = wide_deep[wide_deep.index.get_level_values("size") == pair.small]
    measured = "loss(Wide) - loss(Deep): " + "; ".join(
        f"{ARCH_NAMES[arch_name]}: " + ", ".join(f"size {size}: {d:+.3f}" for (_, size), d in per.items())
        for arch_name, per in wide_deep.groupby(level="arch")
    )
    return graded(
        claim, paper, measured, by_differences(list(at_small), pair.noise.nats), rule, pair.noise.text
    )


def _deep_wide_gap_claim(pair: _PairRuns) -> Claim:
    """Zhang: "the difference between LM + Deep and LM + Wide almost disappears at the end"."""
    small, large, noise, change_noise = pair.small, pair.large, pair.noise, pair.change_noise
    claim = "The Deep-Wide gap almost disappears at the largest size"
    paper = "the difference between LM + Deep and LM + Wide almost disappears at the end (Sec. 5.1)"
    rule = (
        f"for every architecture where Deep leads Wide at size {small} by more than the noise: at size "
        f"{large} the gap within the noise, or smaller than at size {small} by more than the change noise"
    )
    if pair.wide_deep.empty:
        return untestable(claim, paper, "no architecture trained both ways", rule, "not run at this scale")
    gaps = pair.wide_deep.unstack("size")
    led = gaps[gaps[small] > noise.nats] if small in gaps and large in gaps else gaps.iloc[:0]
    measured = "; ".join(
        f"{ARCH_NAMES[arch_name]}: {row[small]:+.3f} -> {row[large]:+.3f}"
        for arch_name, row in gaps.iterrows()
        if small in row and large in row
    )
    if led.empty:
        reason = f"Deep leads Wide by more than {noise.nats:.3f} nats at size {small} in no architecture"
        return untestable(claim, paper, measured, rule, reason, noise.text)
    closed = (led[large].abs() <= noise.nats) | (led[small] - led[large] > change_noise.nats)
    return graded(
        claim,
        paper,
        measured,
        by_count(int(closed.sum()), len(led)),
        rule,
        f"differences {noise.text}; changes {change_noise.text}",
    )


def _ordering_claim(pair: _PairRuns) -> Claim:
    """Zhang: "PrefixLM and EncDec converge to a similar quality bands followed by CausalLM + TgtOnly while
    CausalLM still retains a clear gap against the others"."""
    large, noise = pair.large, pair.noise
    claim = "At the largest size: EncDec ~ PrefixLM, then CausalLM + TgtOnly, then CausalLM"
    paper = (
        "PrefixLM and EncDec converge to similar quality bands followed by CausalLM + TgtOnly while "
        "CausalLM retains a clear gap (Sec. 5.1, Fig. 2)"
    )
    order = [ENCDEC, PREFIX_DEEP, TGTONLY_DEEP, CAUSAL_DEEP]
    rule = (
        f"at size {large}: |PrefixLM - EncDec| within the noise; CausalLM + TgtOnly behind both and "
        "CausalLM behind CausalLM + TgtOnly, each by more than the noise"
    )
    if any(v not in pair.variants | {ENCDEC} for v in order):
        return untestable(claim, paper, "not every variant was run", rule, "not run at this scale")
    loss = {v: pair.means[(v, large)] for v in order}
    measured = f"size {large}: " + ", ".join(f"{v} {loss[v]:.3f}" for v in order)
    holds = [
        abs(loss[PREFIX_DEEP] - loss[ENCDEC]) <= noise.nats,
        loss[TGTONLY_DEEP] - max(loss[PREFIX_DEEP], loss[ENCDEC]) > noise.nats,
        loss[CAUSAL_DEEP] - loss[TGTONLY_DEEP] > noise.nats,
    ]
    return graded(claim, paper, measured, by_count(sum(holds), len(holds)), rule, noise.text)


def _tgtonly_claim(pair: _PairRuns) -> Claim:
    """Zhang: the source-side LM loss brings CausalLM no significant gain; TgtOnly is one of the inductive
    biases that help "when there are fewer parameters"."""
    noise = pair.noise
    claim = "Dropping the source LM loss helps CausalLM at small sizes (TgtOnly ahead)"
    paper = "the source-side LM objective brings no significant gain; TgtOnly helps small models (Sec. 5.1)"
    rule = (
        f"loss(CausalLM) - loss(CausalLM + TgtOnly) above the noise at size {pair.small} and not below minus "
        "the noise at any size"
    )
    if TGTONLY_DEEP not in pair.variants or CAUSAL_DEEP not in pair.variants:
        return untestable(claim, paper, "TgtOnly or CausalLM not run", rule, "not run at this scale")
    diffs = [pair.means[(CAUSAL_DEEP, s)] - pair.means[(TGTONLY_DEEP, s)] for s in pair.sizes]
    measured = "loss(CausalLM) - loss(CausalLM + TgtOnly): " + ", ".join(
        f"size {s}: {d:+.3f}" for s, d in zip(pair.sizes, diffs, strict=True)
    )
    contrary = min(diffs) < -noise.nats
    verdict = (NOT_REPRODUCED, "") if contrary else by_differences([diffs[0]], noise.nats)
    return graded(claim, paper, measured, verdict, rule, noise.text)


def _exponent_stability_claim(exponents: pd.DataFrame) -> Claim:
    """Fig. 3: the fitted exponent changes marginally across evaluation settings."""
    spread = exponents.groupby("variant")["alpha"].agg(lambda a: a.max() - a.min())
    width = (exponents["alpha_upper"] - exponents["alpha_lower"]).median()
    stable = bool((spread < EXPONENT_STABILITY).all())
    claim, paper = (
        "Exponents are stable across evaluation settings (Fig. 3)",
        f"the exponent changes marginally across settings, often less than {EXPONENT_STABILITY}",
    )
    measured = (
        f"alpha range across settings per variant: {spread.min():.3f}-{spread.max():.3f}; "
        f"median 95% interval width {width:.3f}"
    )
    rule = f"range < {EXPONENT_STABILITY} for every variant"
    interval = f"the exponents' 95% intervals (median width {width:.3f})"
    if width > EXPONENT_STABILITY:
        reason = f"the exponents are undetermined: intervals wider than {EXPONENT_STABILITY}"
        return untestable(claim, paper, measured, rule, reason, interval)
    return Claim(claim, paper, measured, REPRODUCED if stable else NOT_REPRODUCED, rule, interval)


def _setting_claims(settings: pd.DataFrame, noise: Noise) -> list[Claim]:
    """Fig. 3: target-original sentences are harder (when both originalities were evaluated), and
    medium-length sources the easiest."""
    by_setting = settings.pivot_table(index=["variant", "size"], columns="setting", values="loss")
    found = []
    if {"source-original", "target-original"} <= set(by_setting.columns):
        harder = by_setting["target-original"] - by_setting["source-original"]
        found.append(
            graded(
                "Target-original sentences are harder to model",
                "the irreducible loss of target-original sentences is higher (Fig. 3)",
                f"target- minus source-original loss: {harder.min():+.3f} to {harder.max():+.3f} "
                f"over {len(harder)} models",
                by_differences(harder, noise.nats),
                "target-original loss above source-original beyond the noise in every model (the test sets "
                "also differ in domain)",
                noise.text,
            )
        )
    lengths = by_setting[list(LENGTH_BUCKETS)]
    medium_best = int((lengths.idxmin(axis=1) == "medium").sum())
    found.append(
        Claim(
            "Medium-length sources are the easiest",
            "translating medium-length sequences is much easier (Fig. 3)",
            f"medium has the lowest loss in {medium_best} of {len(lengths)} models; lowest bucket counts: "
            + ", ".join(f"{b} {n}" for b, n in lengths.idxmin(axis=1).value_counts().items()),
            REPRODUCED if medium_best > len(lengths) / 2 else NOT_REPRODUCED,
            "medium lowest in most models",
        )
    )
    return found


def _ranking_claim(settings: pd.DataFrame, noise: Noise) -> Claim:
    """Zhang Sec. 5.1: the loss ranking of the architectures changes little over the Fig. 3 settings. At each
    size, a pair of architectures *reverses* when one is ahead by more than the noise in one setting and
    behind by more than the noise in another; an order that changes only within the noise is no change."""
    compared, firm, reversed_pairs = 0, 0, []
    for size, rows in settings.groupby("size"):
        by_setting = rows.pivot_table(index="variant", columns="setting", values="loss")
        for a, b in itertools.combinations(sorted(by_setting.index), 2):
            difference = (by_setting.loc[a] - by_setting.loc[b]).dropna()
            if len(difference) < 2:
                continue
            compared += 1
            firm += bool(
                (difference.abs() > noise.nats).all() and abs(np.sign(difference).sum()) == len(difference)
            )
            if difference.max() > noise.nats and difference.min() < -noise.nats:
                reversed_pairs.append(f"{a} / {b} at size {size}")
    if not compared:
        verdict = (NOT_TESTABLE, "fewer than two settings per model")
    elif not reversed_pairs and not firm:
        # every pair within the noise somewhere: no order to keep or to lose
        verdict = (NOT_TESTABLE, "no pair of architectures is apart beyond the noise in every setting")
    elif not reversed_pairs:
        verdict = (REPRODUCED, "")
    else:
        verdict = (PARTLY if len(reversed_pairs) <= compared / 4 else NOT_REPRODUCED, "")
    settings_seen = ", ".join(sorted(settings["setting"].unique()))
    return graded(
        "The loss ranking of the architectures changes little across evaluation settings (Fig. 3)",
        "the loss ranking of different models changes little over these settings",
        f"{len(reversed_pairs)} of {compared} architecture pairs (per size) reverse their order beyond the "
        f"noise between two of the settings ({settings_seen}); {firm} keep one order beyond the noise in "
        "every setting"
        + (
            f": {'; '.join(reversed_pairs[:4])}{' ...' if len(reversed_pairs) > 4 else ''}"
            if reversed_pairs
            else ""
        ),
        verdict,
        "reproduced if no pair of architectures reverses its order beyond the noise between two settings at "
        "any size, partly if at most a quarter of the pairs do",
        noise.text,
    )


def _multilingual_claims(ml: pd.DataFrame, noise: Noise) -> list[Claim]:
    supervised = ml[ml["kind"] != "zero-shot"].groupby(["variant", "size"])[["loss", "bleu"]].mean()
    zero = (
        ml[ml["kind"] == "zero-shot"].groupby(["variant", "size"])[["loss", "bleu", "off_target_rate"]].mean()
    )
    sizes = [int(s) for s in sorted(ml["size"].unique())]
    others = sorted(set(ml["variant"]) - {ENCDEC})

    def deltas(frame: pd.DataFrame, column: str, variant: str) -> list[float]:
        return [frame.loc[(variant, s), column] - frame.loc[(ENCDEC, s), column] for s in sizes]

    found = [
        graded(
            "Multilingual: EncDec leads on supervised directions (Table 3)",
            "EncDec almost always dominates the quality frontier on supervised directions",
            "; ".join(
                f"{v}: loss {', '.join(f'{d:+.3f}' for d in deltas(supervised, 'loss', v))}, "
                f"BLEU {', '.join(f'{d:+.2f}' for d in deltas(supervised, 'bleu', v))}"
                for v in others
            ),
            by_differences([d for v in others for d in deltas(supervised, "loss", v)], noise.nats),
            "mean supervised loss of every LM above EncDec's by more than the noise at every size (BLEU "
            "shown, too low to decide)",
            noise.text,
        )
    ]
    best_bleu = float(zero["bleu"].max())
    no_translation = (
        f"zero-shot BLEU at most {best_bleu:.2f} < {TRANSLATING_BLEU:g}: no model translates"
        if best_bleu < TRANSLATING_BLEU
        else ""
    )
    translating_rule = f"once some model reaches zero-shot BLEU {TRANSLATING_BLEU:g}"

    def off_target(claim: str, paper: str, variant: str, holds, rule: str, extra: str = "") -> Claim:
        off = deltas(zero, "off_target_rate", variant)
        measured = (
            f"off-target rate {variant} - EncDec: {', '.join(f'{d:+.2f}' for d in off)} (sizes {sizes})"
        )
        if no_translation:
            return untestable(claim, paper, measured + extra, rule, no_translation)
        return Claim(claim, paper, measured + extra, REPRODUCED if holds(off) else NOT_REPRODUCED, rule)

    if PREFIX_DEEP in others:
        found.append(
            off_target(
                "PrefixLM has fewer off-target zero-shot translations than EncDec",
                "PrefixLM drastically reduces off-target translation (Fig. 5)",
                PREFIX_DEEP,
                lambda off: all(d < 0 for d in off),
                f"lower off-target rate at every size, {translating_rule}",
                "; zero-shot BLEU " + ", ".join(f"{d:+.2f}" for d in deltas(zero, "bleu", PREFIX_DEEP)),
            )
        )
        loss = deltas(zero, "loss", PREFIX_DEEP)
        found.append(
            graded(
                "EncDec still fits zero-shot directions best (lower loss than PrefixLM)",
                "PrefixLM usually underperforms EncDec in perplexity on zero-shot pairs (Sec. 6)",
                f"zero-shot loss PrefixLM - EncDec: {', '.join(f'{d:+.3f}' for d in loss)}",
                by_differences(loss, noise.nats),
                "PrefixLM's zero-shot loss above EncDec's by more than the noise at every size",
                noise.text,
            )
        )
    found.append(_zero_shot_scaling_claim(zero, sizes, no_translation, translating_rule))
    if CAUSAL_DEEP in others:
        found.append(
            off_target(
                "CausalLM brings no zero-shot benefit",
                "the zero-shot benefit is PrefixLM's (Fig. 5)",
                CAUSAL_DEEP,
                lambda off: all(d >= 0 for d in off),
                f"CausalLM's off-target rate not below EncDec's at any size, {translating_rule}",
            )
        )
    return found


def _zero_shot_scaling_claim(
    zero: pd.DataFrame, sizes: list[int], no_translation: str, translating_rule: str
) -> Claim:
    """Zhang et al.'s "scaling improves knowledge transfer for almost all models" (Fig. 5), judged on its own
    quantity, zero-shot BLEU, from the smallest to the largest size of each architecture (`zero`: mean
    zero-shot loss, BLEU, off-target rate per variant and size); the loss is shown beside it."""
    claim = "Scaling improves zero-shot translation for almost every architecture (Fig. 5)"
    paper = "scaling improves knowledge transfer for almost all models (Sec. 6)"
    rule = (
        "zero-shot BLEU higher at the largest size than at the smallest for all architectures but at most "
        f"one, {translating_rule}"
    )
    variants = sorted({v for v, _ in zero.index})
    if len(sizes) < 2:
        return untestable(claim, paper, f"one size ({sizes})", rule, "needs two sizes per architecture")
    smallest, largest = sizes[0], sizes[-1]
    change = {v: zero.loc[(v, largest)] - zero.loc[(v, smallest)] for v in variants}
    measured = f"size {smallest} -> {largest}: " + "; ".join(
        f"{v} BLEU {d['bleu']:+.2f}, loss {d['loss']:+.3f}" for v, d in change.items()
    )
    if no_translation:
        return untestable(claim, paper, measured, rule, no_translation)
    rising = sum(d["bleu"] > 0 for d in change.values())
    return Claim(claim, paper, measured, REPRODUCED if rising >= len(variants) - 1 else NOT_REPRODUCED, rule)


def _transfer_claim(transfer: pd.DataFrame, noise: Noise) -> Claim:
    """Each LM against the EncDec of its size and helper language (transfer: `translation_table` rows)."""
    losses = transfer.groupby(["group", "size", "variant"])["loss"].mean()
    ahead, texts = [], []
    for group, size in sorted({(g, s) for g, s, _ in losses.index}):
        block = losses.loc[(group, size)]
        ahead += [v for v, x in block.items() if x < block[ENCDEC] - noise.nats]
        texts.append(
            f"{group}, size {size}: "
            + ", ".join(f"{v} {x - block[ENCDEC]:+.3f}" for v, x in block.items() if v != ENCDEC)
        )
    return Claim(
        "Low-resource transfer to De: LMs transfer no better than EncDec, from Fr or Zh (Fig. 6)",
        "no LM transfers better than EncDec to the low-resource pair (Fig. 6)",
        "loss on the German direction minus EncDec's: " + "; ".join(texts),
        REPRODUCED if not ahead else NOT_REPRODUCED,
        "no LM below EncDec's loss by more than the noise with either helper language",
        noise.text,
    )


# ----------------------------------------------------------------------------------------------------------
# Charts (two 220 px panels and a legend fit the book's column)

# two panels a row (`charts.wrapped`), axes and legend fit the text column (`book.COLUMN_WIDTH_PX`)
PANEL_WIDTH = 210


def loss_chart(
    table: pd.DataFrame, curves: pd.DataFrame | None, pair: str, test_set: str, x: str = "N"
) -> alt.LayerChart:
    """Fig. 2: the final loss of every variant of one language pair on one test set against `x` (N, or
    "layers" with the points joined), with the fitted Eq. 7 `curves` (`law_curves`) where given."""

    def chosen(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[(frame["group"] == pair) & (frame["test_set"] == test_set)]

    return charts.scaling_chart(
        chosen(table),
        x=x,
        y="loss",
        series="variant",
        fit=None if curves is None else chosen(curves),
        connect=curves is None,
        tooltip=["size", "layers", "N"],
        title=f"{pair} {test_set}",
        x_title="non-embedding parameters N" if x == "N" else "layers",
        y_title="test loss (nats)",
        width=PANEL_WIDTH,
        height=240,
    )


def metric_charts(
    frame: pd.DataFrame,
    column: str,
    y: str,
    title,
    y_title: str,
    log_y: bool = True,
    tooltip=("size", "layers"),
) -> list[alt.LayerChart]:
    """One chart per value of `column` (in order of appearance): `y` against N per variant, points joined;
    `title(value)` names each."""
    return [
        charts.scaling_chart(
            frame[frame[column] == value],
            x="N",
            y=y,
            series="variant",
            connect=True,
            log_y=log_y,
            tooltip=list(tooltip),
            title=title(value),
            x_title="non-embedding parameters N",
            y_title=y_title,
            width=PANEL_WIDTH,
            height=240,
        )
        for value in frame[column].unique()
    ]


def exponent_chart(
    exponents: pd.DataFrame, pair: str, name: str, order: Sequence[str], colors: alt.Scale
) -> alt.LayerChart:
    """Fig. 3: Eq. 7 parameter `name` with its 95% interval per evaluation setting (in `order`) and variant,
    on one pair's models (`law_parameters` rows)."""
    chart = alt.Chart(exponents[exponents["group"] == pair]).encode(
        y=alt.Y("setting:N", sort=list(order), title=None),
        color=alt.Color("variant:N", scale=colors),
        yOffset="variant:N",
    )
    return alt.layer(
        chart.mark_rule().encode(x=alt.X(f"{name}_lower:Q", title=name), x2=f"{name}_upper:Q"),
        chart.mark_point(filled=True).encode(
            x=f"{name}:Q", tooltip=["variant", "setting", alt.Tooltip(f"{name}:Q", format=".3f")]
        ),
    ).properties(width=PANEL_WIDTH - 20, height=320, title=f"{pair}: Eq. 7 {name} with 95% intervals")


def zero_shot_chart(ml: pd.DataFrame) -> alt.ConcatChart:
    """Table 3's zero-shot columns as bars: mean BLEU, off-target rate and loss of the zero-shot directions
    (`translation_table` rows) per variant and size, two panels a row."""
    zero_shot = ml[ml["kind"] == "zero-shot"]
    return charts.wrapped(
        [
            alt.Chart(zero_shot, title=f"zero-shot {metric.replace('_', ' ')}")
            .mark_bar()
            .encode(
                x=alt.X("variant:N", title=None),
                xOffset="size:N",
                y=alt.Y(f"mean({metric}):Q", title=metric.replace("_", " ")),
                color=alt.Color("size:N"),
                tooltip=["variant", "size", alt.Tooltip(f"mean({metric}):Q", format=".3f")],
            )
            .properties(width=PANEL_WIDTH, height=220)
            for metric in ("bleu", "off_target_rate", "loss")
        ]
    )
