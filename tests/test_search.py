"""Greedy and beam search: cached decoding equals full forward passes, beam 1 is greedy, length penalty."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nmtscale.engine.model import ARCHITECTURES, ModelConfig, build_model
from nmtscale.engine.search import beam_search, greedy
from nmtscale.engine.tokenizer import BOS, EOS, PAD, UNK

pytestmark = pytest.mark.usefixtures("one_thread")

VOCAB = 20


def tiny_model(arch: str, **changes):
    torch.manual_seed(0)
    cfg = ModelConfig(
        arch=arch, vocab_size=VOCAB, d_model=32, n_heads=4, d_ff=48, enc_layers=0 if arch != "encdec" else 2,
        dec_layers=2, **changes,
    )  # fmt: skip
    return build_model(cfg)


def padded_sources() -> torch.Tensor:
    src = torch.randint(4, VOCAB, (4, 7), generator=torch.Generator().manual_seed(5))
    src[1, 3:] = PAD
    src[3, 5:] = PAD
    return src


def uncached_greedy(model, src: torch.Tensor, max_len: int) -> list[list[int]]:
    """Greedy decoding by re-running the full teacher-forced forward pass on the whole prefix every step."""
    model.eval()
    tgt_in = torch.full((len(src), 1), BOS)
    with torch.no_grad():
        for _ in range(max_len):
            logits = model(src, tgt_in).tgt_logits[:, -1]
            logits[:, [PAD, BOS]] = float("-inf")
            tgt_in = torch.cat([tgt_in, logits.argmax(-1, keepdim=True)], 1)
    outputs = []
    for row in tgt_in[:, 1:].tolist():
        outputs.append(row[: row.index(EOS)] if EOS in row else row)
    return outputs


OPTIONS = (
    {},
    {"position": "relative", "norm_position": "post"},
    {"position": "learned", "share_embeddings": True},
)


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("options", OPTIONS)
def test_cached_greedy_equals_uncached_argmax(arch, options):
    model = tiny_model(arch, **options)
    src = padded_sources()
    assert greedy(model, src, max_len=9) == uncached_greedy(model, src, max_len=9)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_beam_of_one_equals_greedy(arch):
    model = tiny_model(arch, position="relative")
    src = padded_sources()
    assert beam_search(model, src, beam_size=1, max_len=9) == greedy(model, src, max_len=9)


def test_search_respects_max_len_and_restores_training_mode():
    model = tiny_model("encdec").train()
    outputs = beam_search(model, padded_sources(), beam_size=3, max_len=5)
    assert model.training
    assert len(outputs) == 4
    assert all(len(o) <= 5 and not {PAD, BOS, EOS} & set(o) for o in outputs)


class _Stateless:
    def reorder(self, index, within_sentences=False):
        pass


class FirstOrderModel(nn.Module):
    """A stand-in model whose next-token distribution depends only on the previous token."""

    A, B, C = 4, 5, 6

    def __init__(self):
        super().__init__()
        probs = torch.full((7, 7), 1e-6)
        probs[BOS, [self.A, self.B, self.C]] = torch.tensor([0.5, 0.4, 0.1])
        probs[self.A, [self.C, EOS]] = torch.tensor([0.55, 0.45])
        probs[self.B, [EOS, UNK]] = torch.tensor([0.9, 0.1])
        probs[self.C, EOS] = 1.0
        probs[PAD, PAD] = 1.0
        self.table = probs.log()

    def start_decoding(self, src):
        return _Stateless()

    def decode_step(self, state, tokens):
        return self.table[tokens]


def test_length_penalty_decides_between_short_and_long_hypotheses():
    """P(A C EOS) = 0.275 over 3 tokens, P(B EOS) = 0.36 over 2: raw log-probability prefers the short one,
    per-token log-probability (length_penalty 1) the long one; greedy takes A first and ends with A C."""
    model, src = FirstOrderModel(), torch.ones(1, 3, dtype=torch.long)
    A, B, C = FirstOrderModel.A, FirstOrderModel.B, FirstOrderModel.C
    assert greedy(model, src, max_len=5) == [[A, C]]
    assert beam_search(model, src, beam_size=2, length_penalty=0.0, max_len=5) == [[B]]
    assert beam_search(model, src, beam_size=2, length_penalty=1.0, max_len=5) == [[A, C]]
    assert math.log(0.275) / 3 > math.log(0.36) / 2 and math.log(0.275) < math.log(0.36)


def test_beam_search_rejects_an_empty_beam():
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(tiny_model("encdec"), padded_sources(), beam_size=0)
