"""Inference with a trained model: the device and precision of a forward pass, the final model of a finished
run read back safely, its exact loss on a set of examples and its translations of token-id sources.

The trainer evaluates with these during training and the studies after it, so a model is scored and decoded
the same way wherever it is. Translating texts with a run from the store (`runs.translate_texts`) builds on
them; it lives with the store, which knows a run's files and whether it finished.
"""

from __future__ import annotations

import contextlib
import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmtscale.engine import search
from nmtscale.engine.batching import Example, collate, eval_batches
from nmtscale.engine.loss import token_loss_sum
from nmtscale.engine.model import ModelConfig, NMTModel, bf16_matmuls, build_model
from nmtscale.errors import DataError
from nmtscale.record import MODEL, SUMMARY, cpu_has_native_bf16

DECODE_BATCH_SENTENCES = 64


def pick_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast(device: torch.device, cpu_precision: str = "fp32") -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA; on CPU only with cpu_precision "bf16" and a processor that multiplies bf16
    natively (emulated bf16 is slower than fp32 for these model sizes), and then only the linear layers'
    products (`model.bf16_matmuls`): CPU autocast's bf16 elementwise operations and casts cost more than its
    products save at the chapters' sizes."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if cpu_precision == "bf16" and cpu_has_native_bf16():
        return bf16_matmuls()
    return contextlib.nullcontext()


CHECKPOINT_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]


def load_weights(path: Path, device: torch.device) -> Any:
    """A checkpoint or model file read with torch.load's weights_only unpickler (tensors, containers,
    numbers, strings and `CHECKPOINT_GLOBALS` only)."""
    try:
        with torch.serialization.safe_globals(CHECKPOINT_GLOBALS):
            return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as err:
        unsupported = re.search(r"Unsupported global: GLOBAL (\S+)", str(err))
        what = (
            f"a {unsupported.group(1)} object" if unsupported else "an object the weights-only loader refuses"
        )
        raise DataError(
            f"{path}: holds {what}, not tensors and plain values; refused unread, since unpickling it "
            "could run code. Delete it if you did not write it"
        ) from None


def load_trained_model(run_dir: Path, device: torch.device | None = None) -> NMTModel:
    """The final model of a finished run (the averaged checkpoints when the run averaged them); an
    unreadable file is a DataError naming it."""
    path = Path(run_dir) / MODEL
    try:
        payload = load_weights(path, device or pick_device())
        model = build_model(ModelConfig(**payload["model_config"]))
        model.load_state_dict(payload["state_dict"])
    except Exception as err:  # a truncated zip, a pickle error, a missing key or a shape mismatch
        raise DataError(
            f"{path}: not a readable model ({type(err).__name__}: {err}); delete "
            f"{path.parent.name}/{SUMMARY} and run the config again to retrain it"
        ) from None
    return model.to(device or pick_device()).eval()


@torch.no_grad()
def evaluate_loss(
    model: NMTModel, examples: Sequence[Example], max_tokens: int, logit_cap: float | None
) -> float:
    """Exact per-token cross-entropy of the whole set (sum of token losses / token count), no smoothing."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    # Sorted by length, batches carry little padding; a sum does not depend on the order.
    by_length = sorted(examples, key=lambda e: (len(e.tgt), len(e.src)))
    for batch in eval_batches(by_length, max_tokens):
        batch = batch.to(device)
        with autocast(device):
            output = model(batch.src, batch.tgt_in)
        total += token_loss_sum(output.tgt_logits, batch.tgt_out, logit_cap).item()
        count += batch.n_tgt_tokens
    model.train(was_training)
    return total / count


@torch.no_grad()
def translate_ids(
    model: NMTModel,
    sources: Sequence[list[int]],
    method: str = "greedy",
    beam_size: int = 4,
    length_penalty: float = 1.0,
) -> list[list[int]]:
    """Decode token-id sources in length-sorted batches; returns target ids in input order."""
    device = next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    outputs: list[list[int]] = [[] for _ in sources]
    for start in range(0, len(order), DECODE_BATCH_SENTENCES):
        chunk = order[start : start + DECODE_BATCH_SENTENCES]
        src = collate([Example(sources[i], []) for i in chunk]).src.to(device)
        with autocast(device):
            if method == "beam":
                hyps = search.beam_search(model, src, beam_size=beam_size, length_penalty=length_penalty)
            else:
                hyps = search.greedy(model, src)
        for i, hyp in zip(chunk, hyps, strict=True):
            outputs[i] = hyp
    return outputs
