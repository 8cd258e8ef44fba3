"""What dropout costs the d=256 reference model on this CPU, and why: the diagnosis behind its share of peak.

    .venv/bin/python benchmarks/dropout_cost.py [--steps 8] [--threads 2]

Trains throughput.py's d=256 reference encoder-decoder four ways on the same batches, taking turns batch by
batch: as configured (dropout 0.1 everywhere), with the cheaper "random16" masks for residual, embedding and
activation dropout (`ModelConfig.dropout_mask`), without attention dropout, and without any dropout; prints
target tokens/s and the share of the fp32 matmul peak. Without attention dropout PyTorch can run its fused
CPU attention kernel, which takes no dropout; with it every attention runs the unfused path, which
materialises the attention matrix and draws a mask over it. Then it times, at one and at two threads,
torch's Bernoulli mask generator (`Tensor.bernoulli_`, which `F.dropout` calls: where it is as slow at two
threads as at one, it runs serially, as on CPUs where PyTorch does not use MKL's generator), the random16
mask and softmax, per element. The rows of one run compare; runs differ by several points of the share of
peak.
"""

from __future__ import annotations

import argparse
import time

import torch
from throughput import compare_training, matmul_peak, random_examples, reference_config

from nmtscale.engine.batching import BatchStream
from nmtscale.engine.model import Dropout, build_model


def nanoseconds_per_element(operation, tensor: torch.Tensor, repeats: int = 5) -> float:
    operation(tensor)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        operation(tensor)
    return (time.perf_counter() - start) / repeats / tensor.numel() * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="timed training steps per model")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cpu")

    peak = matmul_peak(device)
    cfg = reference_config(256)
    variants = {
        "dropout 0.1 (reference)": cfg,
        "random16 masks": cfg.replace(dropout_mask="random16"),
        "no attention dropout": cfg.replace(attention_dropout=0.0),
        "no dropout": cfg.replace(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0),
    }
    models = {}
    for name, variant in variants.items():
        torch.manual_seed(0)
        models[name] = build_model(variant)
    stream = BatchStream([random_examples(20000, seed=0)], max_tokens=2048, seed=0)
    batches = [next(stream) for _ in range(args.warmup + args.steps)]
    speeds = compare_training(models, cfg, batches, args.warmup, device)

    print(f"torch {torch.__version__}, {args.threads} threads, fp32 matmul peak {peak / 1e9:.1f} GFLOP/s")
    print(f"{'nmtscale d=256':<26}{'tgt tok/s':>11}{'of peak':>9}")
    for name, speed in speeds.items():
        print(f"{name:<26}{speed['tokens_per_s']:>11,.0f}{speed['flops_per_s'] / peak:>9.0%}")
    values = torch.empty(8000, 1000)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        mask = nanoseconds_per_element(lambda x: x.bernoulli_(0.9), values)
        random16 = nanoseconds_per_element(Dropout(0.1, "random16").train(), values)
        softmax = nanoseconds_per_element(lambda x: torch.softmax(x, -1), values)
        print(
            f"{threads} thread(s): bernoulli_ {mask:.2f} ns/element, random16 dropout (mask and product) "
            f"{random16:.2f}, softmax {softmax:.2f}"
        )


if __name__ == "__main__":
    main()
