"""Analytic FLOPs against torch's FLOP counter, for every architecture."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from nmtscale.engine.flops import forward_flops, training_flops_per_target_token
from nmtscale.engine.model import ARCHITECTURES, ModelConfig, build_model
from nmtscale.predict import autocast

pytestmark = pytest.mark.usefixtures("one_thread")


def counted_forward_flops(
    cfg: ModelConfig, batch: int, src_len: int, tgt_len: int, device: torch.device | str = "cpu"
) -> int:
    """torch's count of one forward pass; on CUDA under bf16 autocast, where attention runs other kernels."""
    torch.manual_seed(0)
    model = build_model(cfg).to(device)
    src = torch.randint(4, cfg.vocab_size, (batch, src_len), device=device)
    tgt_in = torch.randint(4, cfg.vocab_size, (batch, tgt_len), device=device)
    with FlopCounterMode(display=False) as counter, autocast(device):
        model(src, tgt_in)
    return counter.get_total_flops()


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize(
    "options",
    [
        {"activation": "relu", "position": "sinusoidal"},
        {"activation": "gated-gelu", "position": "relative", "tie_softmax": True},
    ],
)
def test_forward_flops_equal_the_flop_counter(arch, options, device):
    # Heads narrower than d_model / n_heads catch a count that confuses the two. CUDA's flash kernel pads
    # heads to a multiple of 8 and the counter charges the padding (x8/5 for width 5), so CUDA gets width 8.
    head_dim = 5 if device.type == "cpu" else 8
    cfg = ModelConfig(
        arch=arch, vocab_size=40, d_model=24, n_heads=3, head_dim=head_dim, d_ff=56,
        enc_layers=0 if arch != "encdec" else 3, dec_layers=2, **options,
    )  # fmt: skip
    src_len, tgt_len = 9, 6
    assert counted_forward_flops(cfg, 2, src_len, tgt_len, device) == 2 * forward_flops(cfg, src_len, tgt_len)


def test_training_flops_are_three_forward_passes_per_target_token():
    cfg = ModelConfig(d_model=64, n_heads=4, d_ff=256, vocab_size=1000)
    assert training_flops_per_target_token(cfg, 12, 10) == 3 * forward_flops(cfg, 12, 10) / 10


def test_language_models_cost_more_than_encdec_with_the_same_layers():
    """Zhang et al.: an LM attends over the concatenation; CausalLM's source logits cost extra on top."""
    encdec = ModelConfig(vocab_size=8000, d_model=256, n_heads=4, d_ff=1024, enc_layers=3, dec_layers=3)
    flops = {
        arch: training_flops_per_target_token(encdec.replace(arch=arch, enc_layers=0, dec_layers=6), 20, 20)
        for arch in ARCHITECTURES[1:]
    }
    assert flops["causallm"] > flops["causallm_tgtonly"] == flops["prefixlm"]
    assert flops["prefixlm"] > training_flops_per_target_token(encdec, 20, 20)
