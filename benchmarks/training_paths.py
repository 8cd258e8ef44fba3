"""Training speed of the chapters' small models on CPU, one path against another (issue 37).

    .venv/bin/python benchmarks/training_paths.py [--rounds 8] [--threads 1] [--max-tokens 1024]
                                                  [--models 64:2:2,64:2:6,64:6:2,128:3:3] [--vocab 1000]
                                                  [--profile]

Each model (width:encoder layers:decoder layers; d_ff = 4 width, 4 heads, random16 dropout masks, the
chapters' recipe) trains under every path on the same length-bucketed batches of random token data, the
paths taking turns round by round so that drift in the machine's speed falls on all of them alike; the first
round is not timed. A step is the trainer's: forward, label-smoothed loss (`token_loss_sum`), backward,
gradient clipping, AdamW built by `train.build_optimizer`. Each path adds one change to the one before:

- legacy: what chapter runs recorded before issue 37 do (`config.LEGACY_NUMERICS`: AdamW's for-loop,
  attention dropout 0.1 drawn by torch's attention kernel, F.cross_entropy, fp32);
- fused AdamW: `train.optimizer_kernel: fused`, one AdamW kernel over all parameters (same arithmetic);
- + random16 attention dropout: `model.attention_dropout_mask: random16`, the model's own attention
  arithmetic with random16 masks, instead of SDPA's unfused math path with a Bernoulli mask;
- + fused loss: `train.loss_kernel: fused`, one log-softmax whose backward writes the gradient at once;
- + bf16: `train.cpu_precision: bf16`, the linear layers' products in bf16 (`model.bf16_matmuls`) where the
  CPU multiplies bf16 natively (avx512_bf16, AMX);
- for reference, fused AdamW without attention dropout (a change of recipe: SDPA's flash kernel).

Printed per model and path: target tokens/s, its ratio to the legacy path, achieved GFLOP/s (the analytic
matmul FLOPs of the padded batches) and that as a share of the fp32 matmul rate measured at the start.
--profile adds the top operators of each model's fastest path that keeps the recipe (attention dropout). Run
it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import time

import torch
from throughput import matmul_peak, random_examples
from torch.profiler import ProfilerActivity, profile

from nmtscale.config import TrainConfig
from nmtscale.engine.batching import BatchStream
from nmtscale.engine.flops import forward_flops
from nmtscale.engine.loss import token_loss_sum
from nmtscale.engine.model import ModelConfig, build_model
from nmtscale.predict import autocast
from nmtscale.record import cpu_has_native_bf16
from nmtscale.train import build_optimizer

# name: (optimizer_kernel, attention dropout, attention_dropout_mask, loss_kernel, cpu_precision)
PATHS = {
    "legacy": ("default", 0.1, "bernoulli", "default", "fp32"),
    "fused AdamW": ("fused", 0.1, "bernoulli", "default", "fp32"),
    "+ random16 attention dropout": ("fused", 0.1, "random16", "default", "fp32"),
    "+ fused loss": ("fused", 0.1, "random16", "fused", "fp32"),
    "+ bf16": ("fused", 0.1, "random16", "fused", "bf16"),
    "fused AdamW, no attention dropout": ("fused", 0.0, "bernoulli", "default", "fp32"),
}


def model_config(spec: str, vocab: int, attention_dropout: float, attention_mask: str) -> ModelConfig:
    width, enc, dec = (int(part) for part in spec.split(":"))
    return ModelConfig(
        vocab_size=vocab, d_model=width, n_heads=4, d_ff=4 * width, enc_layers=enc, dec_layers=dec,
        attention_dropout=attention_dropout, dropout_mask="random16", attention_dropout_mask=attention_mask,
    )  # fmt: skip


def train_step(model, optimizer, batch, loss_kernel: str, precision: str) -> None:
    with autocast(torch.device("cpu"), precision):
        output = model(batch.src, batch.tgt_in)
    loss = token_loss_sum(output.tgt_logits, batch.tgt_out, None, 0.1, loss_kernel) / batch.n_tgt_tokens
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def race(spec: str, args, peak: float) -> None:
    stream = BatchStream([random_examples(20_000, seed=0, vocab=args.vocab)], args.max_tokens, seed=0)
    rounds = [[next(stream) for _ in range(args.steps_per_round)] for _ in range(args.rounds)]
    trainees = {}
    for name, (kernel, attention_dropout, attention_mask, loss_kernel, precision) in PATHS.items():
        torch.manual_seed(0)
        model = build_model(model_config(spec, args.vocab, attention_dropout, attention_mask)).train()
        optimizer = build_optimizer(model, TrainConfig(optimizer="adamw", lr=1e-3, optimizer_kernel=kernel))
        trainees[name] = (model, optimizer, loss_kernel, precision)
    seconds = dict.fromkeys(PATHS, 0.0)
    for i, batches in enumerate(rounds):
        for name, (model, optimizer, loss_kernel, precision) in trainees.items():
            start = time.perf_counter()
            for batch in batches:
                train_step(model, optimizer, batch, loss_kernel, precision)
            seconds[name] += (time.perf_counter() - start) if i > 0 else 0.0
    timed = [batch for batches in rounds[1:] for batch in batches]
    tokens = sum(batch.n_tgt_tokens for batch in timed)
    cfg = model_config(spec, args.vocab, 0.1, "bernoulli")
    flops = sum(3 * len(b) * forward_flops(cfg, b.src.shape[1], b.tgt_in.shape[1]) for b in timed)
    print(f"\nd={cfg.d_model} {cfg.enc_layers}L-{cfg.dec_layers}L, {args.max_tokens} tokens/update")
    print(f"  {'path':34s} {'tok/s':>8s} {'x legacy':>9s} {'GFLOP/s':>8s} {'of fp32 peak':>12s}")
    for name, t in seconds.items():
        share = flops / t / peak
        ratio = seconds["legacy"] / t
        print(f"  {name:34s} {tokens / t:8.0f} {ratio:9.2f} {flops / t / 1e9:8.2f} {share:12.1%}")
    if args.profile:
        fastest = min((name for name in seconds if PATHS[name][1] > 0), key=seconds.get)
        model, optimizer, loss_kernel, precision = trainees[fastest]
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in rounds[-1]:
                train_step(model, optimizer, batch, loss_kernel, precision)
        print(f"  top operators of '{fastest}':")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="rounds of turns (the first is not timed)")
    parser.add_argument("--steps-per-round", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=1024, help="target tokens per update")
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--models", default="64:2:2,64:2:6,64:6:2,128:3:3", help="width:enc:dec,...")
    parser.add_argument(
        "--profile", action="store_true", help="top operators of the fastest path with the recipe"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    peak = matmul_peak(torch.device("cpu"))
    native = "native bf16" if cpu_has_native_bf16() else "no native bf16: the bf16 path runs fp32"
    print(f"{args.threads} thread(s); fp32 matmul peak {peak / 1e9:.1f} GFLOP/s; {native}")
    for spec in args.models.split(","):
        race(spec, args, peak)


if __name__ == "__main__":
    main()
