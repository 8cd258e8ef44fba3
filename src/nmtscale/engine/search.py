"""Batched greedy and beam search on `NMTModel`'s key/value-cached decoding steps, for every architecture."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from nmtscale.engine.model import DecodingState, NMTModel
from nmtscale.engine.tokenizer import BOS, EOS, PAD


def default_max_len(src: Tensor) -> int:
    """Output length limit when none is given: twice the padded source length plus 10 tokens."""
    return 2 * src.shape[1] + 10


@contextmanager
def _evaluating(model: NMTModel) -> Iterator[None]:
    """Eval mode (no dropout) and no autograd for the duration, then the model's previous mode."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def _strip(rows: Tensor) -> list[list[int]]:
    """Token ids up to (without) the first EOS, without padding."""
    out = []
    for row in rows.tolist():
        row = row[: row.index(EOS)] if EOS in row else row
        out.append([t for t in row if t != PAD])
    return out


def _next_token_logits(model: NMTModel, state: DecodingState, tokens: Tensor) -> Tensor:
    """Logits for the next token, with PAD and BOS ruled out (they are never outputs)."""
    logits = model.decode_step(state, tokens).float()
    logits[:, [PAD, BOS]] = float("-inf")
    return logits


def greedy(model: NMTModel, src: Tensor, max_len: int | None = None) -> list[list[int]]:
    """The most likely next token at every step, for sources [B, S]; returns token ids without BOS/EOS."""
    max_len = default_max_len(src) if max_len is None else max_len
    with _evaluating(model):
        state = model.start_decoding(src)
        tokens = torch.full((len(src),), BOS, dtype=torch.long, device=src.device)
        finished = torch.zeros(len(src), dtype=torch.bool, device=src.device)
        steps = []
        for _ in range(max_len):
            tokens = _next_token_logits(model, state, tokens).argmax(-1).masked_fill(finished, PAD)
            steps.append(tokens)
            finished |= tokens == EOS
            if finished.all():
                break
    return _strip(torch.stack(steps, 1)) if steps else [[] for _ in range(len(src))]


def beam_search(
    model: NMTModel, src: Tensor, beam_size: int = 4, length_penalty: float = 1.0, max_len: int | None = None
) -> list[list[int]]:
    """Beam search with length normalisation: hypotheses, finished and unfinished alike, are ranked by
    log-probability / length**length_penalty (the length counts the EOS); a finished hypothesis keeps its
    place until better ones push it out. Returns the best hypothesis per source, ids without BOS/EOS."""
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    max_len = default_max_len(src) if max_len is None else max_len
    batch, device = len(src), src.device
    with _evaluating(model):
        state = model.start_decoding(src)
        state.reorder(torch.arange(batch, device=device).repeat_interleave(beam_size))
        # Only beam 0 is live at the start, so the first step does not pick the same token beam_size times.
        log_prob = torch.full((batch, beam_size), float("-inf"), device=device)
        log_prob[:, 0] = 0.0
        length = torch.zeros(batch, beam_size, device=device)
        finished = torch.zeros(batch, beam_size, dtype=torch.bool, device=device)
        tokens = torch.full((batch * beam_size,), BOS, dtype=torch.long, device=device)
        history = torch.zeros(batch, beam_size, 0, dtype=torch.long, device=device)
        for _ in range(max_len):
            step_log_probs = torch.log_softmax(_next_token_logits(model, state, tokens), -1)
            vocab = step_log_probs.shape[-1]
            step_log_probs = step_log_probs.view(batch, beam_size, vocab)
            # A finished hypothesis has one continuation, PAD, which leaves its score and length unchanged.
            stay = torch.full_like(step_log_probs, float("-inf"))
            stay[..., PAD] = 0.0
            step_log_probs = torch.where(finished[..., None], stay, step_log_probs)
            candidate_log_prob = log_prob[..., None] + step_log_probs
            candidate_length = (length + (~finished).float())[..., None]
            normalized = candidate_log_prob / candidate_length.clamp(min=1) ** length_penalty
            best = normalized.flatten(1).topk(beam_size, dim=1).indices  # [B, beam]
            beam, tokens_2d = best // vocab, best % vocab
            log_prob = candidate_log_prob.flatten(1).gather(1, best)
            length = candidate_length.squeeze(-1).gather(1, beam)
            finished = finished.gather(1, beam) | (tokens_2d == EOS)
            history = torch.cat(
                [history.gather(1, beam[..., None].expand_as(history)), tokens_2d[..., None]], 2
            )
            state.reorder((beam + torch.arange(batch, device=device)[:, None] * beam_size).flatten(), True)
            tokens = tokens_2d.flatten()
            if finished.all():
                break
        final = log_prob / length.clamp(min=1) ** length_penalty
        best_beam = final.argmax(1)
    return _strip(history[torch.arange(batch, device=device), best_beam])
