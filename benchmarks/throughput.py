"""Training and decoding speed on this machine: nmtscale's encoder-decoder next to torch.nn.Transformer.

    .venv/bin/python benchmarks/throughput.py [--steps 8] [--threads 2] [--device cuda] [--max-tokens 2048]
                                              [--dropout-mask random16]

For three reference encoder-decoders (d_model 64, 128, 256; 4+4 layers, d_ff = 4 d_model, head dim 32,
vocabulary 8000, pre-norm, dropout 0.1) it trains on the same length-bucketed batches of random token data
(lengths drawn log-normally: median 12 tokens, a long tail to 120) and prints training target tokens/s, the
real-token fraction of the batches, achieved FLOP/s (analytic matmul FLOPs of the padded batches,
`nmtscale.engine.flops`) and that as a fraction of the fp32 matmul peak measured at the start of the same
run; the same for `torch.nn.Transformer` at equal dimensions, the two taking turns batch by batch. Then
beam-4 decoding sentences/s for the d=128 model. Other jobs on the machine compete for its cores: compare the
rows of one run rather than across runs, and on a busy machine use --threads 1 (two threads that wait for
each other at every operation lose most of their time when the cores are oversubscribed).

On a GPU (`--device cuda`, the default where torch sees one) both models train under the trainer's bf16
autocast and the peak is that of bf16 matrix products; batches of 2k tokens leave an H100 waiting on kernel
launches, so pass a larger --max-tokens there to see what the GPU itself can do.

--dropout-mask picks how nmtscale's models draw their dropout masks (`ModelConfig.dropout_mask`; default
torch's Bernoulli masks, as torch.nn.Transformer always does).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nmtscale.engine.batching import BatchStream, Example, eval_batches
from nmtscale.engine.flops import forward_flops
from nmtscale.engine.model import DROPOUT_MASKS, ModelConfig, attention_kernels, build_model
from nmtscale.engine.search import beam_search
from nmtscale.engine.tokenizer import PAD
from nmtscale.predict import autocast, pick_device

VOCAB = 8000


def reference_config(d_model: int, dropout_mask: str = "bernoulli") -> ModelConfig:
    return ModelConfig(
        vocab_size=VOCAB,
        d_model=d_model,
        n_heads=d_model // 32,
        d_ff=4 * d_model,
        enc_layers=4,
        dec_layers=4,
        dropout_mask=dropout_mask,
    )


def random_examples(n: int, seed: int, vocab: int = VOCAB) -> list[Example]:
    """Random token pairs whose lengths look like sentence lengths: log-normal, median 12, tail to 120."""
    rng = np.random.default_rng(seed)
    src_lengths = np.clip(np.round(rng.lognormal(math.log(12), 0.6, n)), 1, 120).astype(int)
    tgt_lengths = np.clip(np.round(src_lengths * rng.uniform(0.8, 1.25, n)), 1, 120).astype(int)
    return [
        Example(rng.integers(4, vocab, s).tolist(), rng.integers(4, vocab, t).tolist())
        for s, t in zip(src_lengths, tgt_lengths, strict=True)
    ]


def synchronize(device: torch.device) -> None:
    """Wait for the GPU's queued work, so that a wall-clock timer measures it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, seconds: float = 4.0) -> float:
    """Best FLOP/s of square matrix products (the denominator of utilisation): fp32 on the CPU, bf16 on a
    GPU, the precision the trainer computes its matrix products in there."""
    sizes, dtype = ((1024, 2048), torch.float32) if device.type == "cpu" else ((4096, 8192), torch.bfloat16)
    best = 0.0
    for n in sizes:
        a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
        a @ b  # warm-up
        deadline = time.perf_counter() + seconds / 2
        while time.perf_counter() < deadline:
            synchronize(device)
            start = time.perf_counter()
            a @ b
            synchronize(device)
            best = max(best, 2 * n**3 / (time.perf_counter() - start))
    return best


class TorchTransformer(nn.Module):
    """torch.nn.Transformer with the reference's embeddings, sinusoidal positions, embedding dropout and
    output layer, so that the two models do the same work."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.src_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.tgt_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.transformer = nn.Transformer(
            d_model=cfg.d_model, nhead=cfg.n_heads, num_encoder_layers=cfg.enc_layers,
            num_decoder_layers=cfg.dec_layers, dim_feedforward=cfg.d_ff, dropout=cfg.dropout,
            batch_first=True, norm_first=True,
        )  # fmt: skip
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size)
        self.scale = math.sqrt(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        inv_freq = torch.exp(torch.arange(0, cfg.d_model, 2).float() * (-math.log(10000.0) / cfg.d_model))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def _embed(self, embedding: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        angles = torch.arange(ids.shape[1], device=ids.device).float()[:, None] * self.inv_freq[None, :]
        return self.dropout(
            embedding(ids) * self.scale + torch.stack([angles.sin(), angles.cos()], -1).flatten(1)
        )

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        src_pad = src.eq(PAD)
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
        with attention_kernels(src):  # the attention kernels nmtscale's model runs on, for a fair race
            h = self.transformer(
                self._embed(self.src_embed, src), self._embed(self.tgt_embed, tgt_in), tgt_mask=causal,
                src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad, tgt_is_causal=True,
            )  # fmt: skip
        return self.lm_head(h)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch, device: torch.device) -> float:
    """One optimizer step (forward, label-smoothed loss, backward, AdamW); returns its wall time."""
    synchronize(device)
    start = time.perf_counter()
    with autocast(device):
        logits = model(batch.src, batch.tgt_in)
    logits = logits.tgt_logits if hasattr(logits, "tgt_logits") else logits
    loss = F.cross_entropy(
        logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD, label_smoothing=0.1
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    synchronize(device)
    return time.perf_counter() - start


def compare_training(
    models: dict[str, nn.Module], cfg: ModelConfig, batches, warmup: int, device: torch.device
) -> dict[str, dict]:
    """Training speed of each model on the same batches; the models take turns batch by batch, so that the
    load from other jobs on the machine falls on all of them alike. Untimed warm-up steps come first."""
    optimizers = {name: torch.optim.AdamW(model.parameters(), lr=1e-4) for name, model in models.items()}
    seconds = dict.fromkeys(models, 0.0)
    for i, batch in enumerate(batches):
        for name, model in models.items():
            elapsed = train_step(model.train(), optimizers[name], batch, device)
            seconds[name] += elapsed if i >= warmup else 0.0
    timed = batches[warmup:]
    tokens = sum(batch.n_tgt_tokens for batch in timed)
    real = sum(batch.n_src_tokens + batch.n_tgt_tokens for batch in timed)
    positions = sum(batch.src.numel() + batch.tgt_out.numel() for batch in timed)
    # Both models do the same matmuls: the analytic count of the padded batches holds for either.
    flops = sum(3 * len(b) * forward_flops(cfg, b.src.shape[1], b.tgt_in.shape[1]) for b in timed)
    return {
        name: {"tokens_per_s": tokens / t, "real_fraction": real / positions, "flops_per_s": flops / t}
        for name, t in seconds.items()
    }


def decode_speed(
    cfg: ModelConfig, examples: list[Example], device: torch.device, beam_size: int = 4
) -> tuple[float, int]:
    """Beam-search sentences/s over sources sorted by length, in batches of ~1000 target tokens. The model is
    untrained and rarely emits EOS, so each batch runs to max_len = its longest source (about the length of a
    real translation)."""
    torch.manual_seed(0)
    model = build_model(cfg).to(device).eval()
    synchronize(device)
    start = time.perf_counter()
    for batch in eval_batches(sorted(examples, key=lambda e: len(e.src)), 1000):
        with autocast(device):
            beam_search(model, batch.src.to(device), beam_size, max_len=batch.src.shape[1])
    synchronize(device)
    return len(examples) / (time.perf_counter() - start), len(examples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="timed training steps per model")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--decode-sentences", type=int, default=200)
    parser.add_argument("--device", default=str(pick_device()), help="cpu or cuda (default: cuda if present)")
    parser.add_argument("--max-tokens", type=int, default=2048, help="target tokens per training batch")
    parser.add_argument("--dropout-mask", choices=DROPOUT_MASKS, default="bernoulli")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    peak_before = matmul_peak(device)
    stream = BatchStream([random_examples(20000, seed=0)], max_tokens=args.max_tokens, seed=0)
    batches = [next(stream).to(device) for _ in range(args.warmup + args.steps)]
    rows = []
    for d_model in (64, 128, 256):
        cfg = reference_config(d_model, args.dropout_mask)
        torch.manual_seed(0)
        models = {"nmtscale": build_model(cfg), "torch.nn.Transformer": TorchTransformer(cfg)}
        models = {name: model.to(device) for name, model in models.items()}
        for name, speed in compare_training(models, cfg, batches, args.warmup, device).items():
            n_params = sum(
                p.numel()
                for n, p in models[name].named_parameters()
                if "embed" not in n and "lm_head" not in n
            )
            rows.append((f"{name} d={d_model}", n_params, speed))
    examples = random_examples(args.decode_sentences, seed=1)
    sentences_per_s, n = decode_speed(reference_config(128), examples, device)
    # Other jobs only ever slow a matrix product down: the higher of two measurements is the better estimate.
    peak = max(peak_before, matmul_peak(device))

    where = f"{args.threads} threads" if device.type == "cpu" else torch.cuda.get_device_name(device)
    precision = "fp32" if device.type == "cpu" else "bf16"
    print(
        f"torch {torch.__version__}, {where}, {args.max_tokens}-token batches, "
        f"{precision} matmul peak {peak / 1e9:.1f} GFLOP/s, nmtscale dropout masks: {args.dropout_mask}"
    )
    print(
        f"{'model':<24}{'non-emb params':>15}{'tgt tok/s':>11}{'real frac':>10}{'GFLOP/s':>9}{'of peak':>9}"
    )
    for name, n_params, speed in rows:
        print(
            f"{name:<24}{n_params:>15,}{speed['tokens_per_s']:>11,.0f}{speed['real_fraction']:>10.2f}"
            f"{speed['flops_per_s'] / 1e9:>9.1f}{speed['flops_per_s'] / peak:>9.0%}"
        )
    print(f"beam-4 decoding, nmtscale d=128, {n} sentences: {sentences_per_s:.1f} sentences/s")


if __name__ == "__main__":
    main()
