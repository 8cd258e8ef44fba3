"""Chapter 3's evaluations of trained models beyond their training loss (BLEU, off-target rate, zero-shot
directions, length buckets), each cached beside its run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from nmtscale import pool, runs
from nmtscale.engine.data import (
    encode_pairs,
    split_direction,
)
from nmtscale.engine.metrics import bleu, chrf, off_target_rate
from nmtscale.errors import ConfigurationError
from nmtscale.predict import evaluate_loss, load_trained_model, translate_ids
from nmtscale.record import RunSummary
from nmtscale.studies.architectures.plan import PlannedModel, non_embedding_params

LENGTH_BUCKETS = ("short", "medium", "long")


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
    tagged = runs.target_tagged(summary)
    tokenizer = runs.tokenizer(summary)
    model = load_trained_model(run_directory, torch.device("cpu"))
    logit_cap = summary.config["train"]["logit_cap"]
    result: dict[str, list] = {"buckets": [], "translation": []}
    for name, pairs in request.test_sets.items():
        direction = name.split("/")[0]
        examples = encode_pairs(tokenizer, pairs, direction, tagged)
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
