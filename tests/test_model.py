"""The five architectures: masks, padding, source logits, overfitting a tiny batch, config validation."""

from __future__ import annotations

import contextlib

import pytest
import torch

from nmtscale.engine.model import (
    ARCHITECTURES,
    Attention,
    Dropout,
    ModelConfig,
    bf16_matmuls,
    build_model,
    linear,
)
from nmtscale.engine.tokenizer import BOS, PAD
from nmtscale.predict import autocast

pytestmark = pytest.mark.usefixtures("one_thread")

VOCAB = 24


def tiny_config(arch: str, **changes) -> ModelConfig:
    settings = dict(
        arch=arch, vocab_size=VOCAB, d_model=32, n_heads=4, d_ff=48, enc_layers=0 if arch != "encdec" else 2,
        dec_layers=2, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    )  # fmt: skip
    return ModelConfig(**{**settings, **changes})


def tiny_model(arch: str, seed: int = 0, **changes):
    torch.manual_seed(seed)
    return build_model(tiny_config(arch, **changes)).eval()


def random_batch(batch: int, src_len: int, tgt_len: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (batch, src_len), generator=generator)
    tgt_in = torch.randint(4, VOCAB, (batch, tgt_len), generator=generator)
    tgt_in[:, 0] = BOS
    return src, tgt_in


ALL_VARIANTS = [
    (arch, options)
    for arch in ARCHITECTURES
    for options in (
        {},
        {"position": "relative", "norm": "rmsnorm", "activation": "gated-gelu"},
        {"position": "learned", "norm_position": "post", "activation": "gelu", "tie_softmax": True},
    )
]


@pytest.mark.parametrize(("arch", "options"), ALL_VARIANTS)
def test_later_target_tokens_do_not_change_earlier_logits(arch, options):
    model = tiny_model(arch, **options)
    src, tgt_in = random_batch(2, 6, 7)
    changed = tgt_in.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % (VOCAB - 4) + 4
    before, after = model(src, tgt_in).tgt_logits, model(src, changed).tgt_logits
    torch.testing.assert_close(before[:, :4], after[:, :4])
    assert not torch.allclose(before[:, 4:], after[:, 4:])


@pytest.mark.parametrize(("arch", "options"), ALL_VARIANTS)
def test_padding_a_source_does_not_change_its_outputs(arch, options):
    """A row padded to a longer batch gives the same logits as alone; padding is invisible to every query."""
    model = tiny_model(arch, **options)
    src, tgt_in = random_batch(2, 8, 5)
    short = src[:1, :5]
    padded = src.clone()
    padded[0, 5:] = PAD
    alone, batched = model(short, tgt_in[:1]), model(padded, tgt_in)
    torch.testing.assert_close(alone.tgt_logits[0], batched.tgt_logits[0], atol=1e-5, rtol=1e-5)
    if arch == "causallm":
        torch.testing.assert_close(alone.src_logits[0], batched.src_logits[0, :5], atol=1e-5, rtol=1e-5)
    # the other row is not affected by the first row's padding either
    torch.testing.assert_close(
        model(src[1:], tgt_in[1:]).tgt_logits[0], batched.tgt_logits[1], atol=1e-5, rtol=1e-5
    )


def top_states(model, src, tgt_in) -> torch.Tensor:
    """The language model's final states over [source; target], read from its final norm."""
    captured = []
    handle = model.decoder_norm.register_forward_hook(lambda module, args, out: captured.append(out))
    model(src, tgt_in)
    handle.remove()
    return captured[0]


def test_prefixlm_source_positions_see_all_source_tokens():
    model = tiny_model("prefixlm")
    src, tgt_in = random_batch(2, 6, 4)
    changed = src.clone()
    changed[:, -1] = (changed[:, -1] + 1 - 4) % (VOCAB - 4) + 4
    before, after = top_states(model, src, tgt_in), top_states(model, changed, tgt_in)
    assert not torch.allclose(before[:, 0], after[:, 0])  # the first source token sees the last one


@pytest.mark.parametrize("arch", ["causallm", "causallm_tgtonly"])
def test_causallm_is_causal_over_the_concatenation(arch):
    model = tiny_model(arch)
    src, tgt_in = random_batch(2, 6, 4)
    changed = src.clone()
    changed[:, 3] = (changed[:, 3] + 1 - 4) % (VOCAB - 4) + 4
    before, after = top_states(model, src, tgt_in), top_states(model, changed, tgt_in)
    torch.testing.assert_close(before[:, :3], after[:, :3])  # earlier source positions do not see it
    assert not torch.allclose(before[:, 3:], after[:, 3:])  # later source and all target positions do
    changed_tgt = tgt_in.clone()
    changed_tgt[:, 2] = (changed_tgt[:, 2] + 1 - 4) % (VOCAB - 4) + 4
    torch.testing.assert_close(
        before[:, :6], top_states(model, src, changed_tgt)[:, :6]
    )  # no source sees targets


def test_only_causallm_returns_source_logits():
    src, tgt_in = random_batch(3, 6, 4)
    for arch in ARCHITECTURES:
        out = tiny_model(arch)(src, tgt_in)
        assert out.tgt_logits.shape == (3, 4, VOCAB)
        assert (out.src_logits is not None) == (arch == "causallm")
    assert tiny_model("causallm")(src, tgt_in).src_logits.shape == (3, 6, VOCAB)


def test_toponly_target_layers_attend_to_top_source_states():
    """TopOnly and layer-wise PrefixLM share every weight shape but differ in what target layers attend to."""
    layerwise = tiny_model("prefixlm")
    toponly = build_model(tiny_config("prefixlm_toponly")).eval()
    toponly.load_state_dict(layerwise.state_dict())
    src, tgt_in = random_batch(2, 6, 4)
    assert not torch.allclose(layerwise(src, tgt_in).tgt_logits, toponly(src, tgt_in).tgt_logits)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_architecture_overfits_a_tiny_batch(arch, device):
    """On CUDA under the trainer's bf16 autocast."""
    model = tiny_model(arch).to(device).train()
    src, tgt_in = (t.to(device) for t in random_batch(4, 6, 6, seed=3))
    tgt_out = torch.cat([tgt_in[:, 1:], torch.full((4, 1), 3, device=device)], 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(40):
        with autocast(device):
            logits = model(src, tgt_in).tgt_logits
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0], losses[::8]


def test_bf16_autocast_runs_with_relative_bias():
    model = tiny_model("prefixlm", position="relative")
    src, tgt_in = random_batch(2, 5, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(src, tgt_in).tgt_logits
    assert torch.isfinite(logits.float()).all()


def test_bf16_products_give_fp32_outputs_and_gradients_close_to_fp32():
    """Within `bf16_matmuls`, a linear layer multiplies bf16 copies (8-bit mantissas: relative errors of
    ~2^-8 per operand) and returns fp32; outside it, it is F.linear exactly."""
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(*shape, generator=generator) for shape in ((3, 5, 16), (24, 16), (24,)))
    grad_out = torch.randn(3, 5, 24, generator=generator)
    results = []
    for context in (contextlib.nullcontext, bf16_matmuls):
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
        with context():
            out = linear(*leaves)
        out.backward(grad_out)
        results.append((out, *(t.grad for t in leaves)))
    (exact, *exact_grads), (product, *product_grads) = results
    assert torch.equal(exact, torch.nn.functional.linear(x, weight, bias))
    assert product.dtype == torch.float32 and all(g.dtype == torch.float32 for g in product_grads)
    assert not torch.equal(product, exact)  # it did multiply in bf16
    for got, want in zip([product, *product_grads], [exact, *exact_grads], strict=True):
        assert torch.allclose(got, want, rtol=0.05, atol=0.05 * want.abs().max().item())
    assert torch.equal(product_grads[2], grad_out.sum((0, 1)))  # the bias gradient stays exact fp32


def test_bf16_products_reach_every_linear_layer_and_the_tied_softmax():
    for tie in (False, True):
        model = tiny_model("encdec", tie_softmax=tie)
        src, tgt_in = random_batch(2, 5, 4)
        exact = model(src, tgt_in).tgt_logits
        with bf16_matmuls():
            product = model(src, tgt_in).tgt_logits
        assert product.dtype == torch.float32
        assert not torch.equal(product, exact)
        assert torch.allclose(product, exact, atol=0.05)
        assert torch.equal(model(src, tgt_in).tgt_logits, exact)  # the context ends with its block


def test_num_params_excludes_embeddings_and_softmax():
    model = tiny_model("encdec")
    counts = model.parameter_counts()
    assert model.get_num_params(non_embedding=False) == sum(p.numel() for p in model.parameters())
    assert model.get_num_params() == counts["encoder"] + counts["decoder"]
    assert counts["embedding"] == 2 * VOCAB * 32 and counts["softmax"] == VOCAB * 32 + VOCAB


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"arch": "gpt"}, "arch"),
        ({"arch": "prefixlm", "enc_layers": 2}, "enc_layers"),
        ({"d_model": 30, "n_heads": 4}, "head_dim"),
        ({"activation": "swish"}, "activation"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout_mask": "uniform"}, "dropout_mask"),
        ({"attention_dropout_mask": "flash"}, "attention_dropout_mask"),
        ({"enc_layers": 0}, "enc_layers"),
    ],
)
def test_bad_configs_name_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**{"arch": "encdec", **changes})


def test_random16_dropout_drops_at_the_rate_and_keeps_the_expectation():
    dropout = Dropout(0.1, "random16").train()
    x = torch.ones(201, 1001, requires_grad=True)  # not a multiple of 4 elements: the last draw is cut
    torch.manual_seed(0)
    out = dropout(x)
    dropped = (out == 0).float().mean().item()
    assert abs(dropped - 0.1) < 4 * (0.1 * 0.9 / x.numel()) ** 0.5  # four standard errors
    kept = out[out != 0]
    assert torch.allclose(kept, torch.full_like(kept, 2**16 / (2**16 - 6554)))
    out.sum().backward()
    assert torch.equal(x.grad, out.detach())  # the gradient passes through the same mask and scale
    torch.manual_seed(0)
    assert torch.equal(dropout(x), out)  # the mask comes from torch's generator: seeded, resumable
    assert dropout.eval()(x) is x


def test_dropout_masks_agree_on_rate_and_scale_but_draw_differently():
    x = torch.ones(100, 100)
    outputs = {}
    for mask in ("bernoulli", "random16"):
        torch.manual_seed(0)
        outputs[mask] = Dropout(0.25, mask).train()(x)
        assert abs((outputs[mask] == 0).float().mean().item() - 0.25) < 0.02
        assert outputs[mask].max().item() == pytest.approx(4 / 3, rel=1e-4)
    assert not torch.equal(outputs["bernoulli"], outputs["random16"])


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_own_attention_gives_sdpas_outputs_and_gradients(arch):
    """attention_dropout_mask random16 trains through the model's own attention arithmetic: with its dropout
    switched off it matches SDPA's outputs and gradients under every architecture's masks (source padding,
    causal, prefix, the relative-position bias)."""
    options = {"position": "relative"} if arch in ("encdec", "prefixlm") else {}
    sdpa = tiny_model(arch, attention_dropout=0.1, **options).train()
    own = tiny_model(arch, attention_dropout=0.1, attention_dropout_mask="random16", **options).train()
    for module in sdpa.modules():
        if isinstance(module, Attention):
            module.dropout = 0.0
    for module in own.modules():
        if isinstance(module, Attention):
            module.own_dropout.p = 0.0  # still the own path (module.dropout > 0), with nothing dropped
    src, tgt_in = random_batch(3, 7, 5)
    src[0, -3:] = PAD
    losses = {}
    for name, model in (("sdpa", sdpa), ("own", own)):
        output = model(src, tgt_in)
        losses[name] = output.tgt_logits.logsumexp(-1).sum()
        losses[name].backward()
    assert losses["own"].item() == pytest.approx(losses["sdpa"].item(), rel=1e-5)
    for (name, a), b in zip(own.named_parameters(), sdpa.parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, atol=1e-5), name


def test_own_attention_drops_probabilities_only_while_training():
    model = tiny_model("encdec", attention_dropout=0.3, attention_dropout_mask="random16")
    src, tgt_in = random_batch(2, 6, 4)
    evaluated = model(src, tgt_in).tgt_logits
    sdpa = tiny_model("encdec", attention_dropout=0.3)
    assert torch.allclose(evaluated, sdpa(src, tgt_in).tgt_logits, atol=1e-6)  # same weights, no dropout
    model.train()
    torch.manual_seed(1)
    first = model(src, tgt_in).tgt_logits
    torch.manual_seed(2)
    assert not torch.allclose(first, model(src, tgt_in).tgt_logits)
    torch.manual_seed(1)
    assert torch.equal(first, model(src, tgt_in).tgt_logits)  # masks from torch's seeded generator


def test_learned_positions_refuse_sequences_past_their_table():
    model = tiny_model("encdec", position="learned", max_positions=8)
    src, tgt_in = random_batch(1, 9, 3)
    with pytest.raises(ValueError, match="max_positions"):
        model(src, tgt_in)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_an_empty_source_gives_finite_logits(arch):
    model = tiny_model(arch)
    src, tgt_in = random_batch(2, 4, 3)
    src[0] = PAD
    out = model(src, tgt_in)
    assert torch.isfinite(out.tgt_logits).all()
    torch.testing.assert_close(
        out.tgt_logits[1], model(src[1:], tgt_in[1:]).tgt_logits[0], atol=1e-5, rtol=1e-5
    )
