"""Does a run trained on a GPU learn what the CPU-trained run of the same config learns? (issue 43)

    .venv/bin/python benchmarks/device_numerics.py [--train]

A run id names a config and the engine version, not the machine that trained it, so a record trained on a GPU
would stand in for the CPU-trained one. Chapter 3's cpu-scale En->De runs chosen here (EncDec size 2 seed 0,
PrefixLM + Deep size 4, CausalLM + Deep size 1), recorded in results/ by fp32 CPU training (chapter 1's
numerics), are trained again with --train on this machine's device (CUDA when present, always under bf16
autocast) into benchmarks/device_records/<device>/.
Without --train the script reads the records there. It prints, per run and test set, both final losses, their
difference, and that difference in the seed std of chapter 3's EncDec size 2 (three CPU seeds).
`tests/test_numerics.py` checks that the committed device records are these configs.
"""

from __future__ import annotations

import argparse
import os

import pandas as pd

from nmtscale import book, predict, record, runs
from nmtscale.studies import architectures as arch
from nmtscale.studies import numerics

CHOSEN = {("EncDec", 2), ("PrefixLM + Deep", 4), ("CausalLM + Deep", 1)}
RECORDS = record.REPOSITORY / "benchmarks" / "device_records"


def chapter3_params() -> dict:
    names = (*arch.PARAMETER_NAMES, "runs_dir", "results_dir")
    return book.study_parameters("03_lm_vs_encdec", "cpu", names, root=record.REPOSITORY)


def chosen_configs(params: dict) -> tuple[list, list]:
    """The configs trained again (seed 0) and chapter 3's EncDec size 2 seed repeats (the noise)."""
    plan, noise = arch.bilingual_plans(params)
    chosen = [p.config for p in plan if p.group == "en-de" and (p.label, p.size) in CHOSEN]
    seeds = {
        runs.config_hash(p.config): p.config
        for p in plan + noise
        if p.group == "en-de" and (p.label, p.size) == ("EncDec", 2)
    }
    return chosen, list(seeds.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", action="store_true", help="train the chosen runs on this machine's device")
    parser.add_argument("--workers", type=int, default=3, help="runs trained at once")
    args = parser.parse_args()
    params = chapter3_params()
    runs.use_stores(params["runs_dir"], params["results_dir"])
    chosen, seeds = chosen_configs(params)
    if args.train:
        device = predict.pick_device().type
        os.environ["NMTSCALE_RUNS"] = str(record.REPOSITORY / "runs" / f"device-{device}")
        os.environ["NMTSCALE_RESULTS"] = str(RECORDS / device)
        runs.sweep(chosen, workers=args.workers, threads_per_run=1)
        os.environ["NMTSCALE_RESULTS"] = str(record.REPOSITORY / params["results_dir"])
    cpu = [runs.recorded_summary(cfg) for cfg in chosen]
    noise = pd.DataFrame([s.final_loss for s in (runs.recorded_summary(cfg) for cfg in seeds)])
    seed_std = noise.std(ddof=1).to_dict()
    for directory in sorted(p for p in RECORDS.iterdir() if p.is_dir()):
        other = [record.read_record(path)["summary"] for path in sorted(directory.glob("*.json"))]
        table = numerics.paired(cpu, other, seed_std)
        print(f"\n{directory.name} against cpu, seed std (EncDec size 2, {len(noise)} cpu seeds):")
        print("  " + ", ".join(f"{k} {v:.4f}" for k, v in seed_std.items()))
        print(table.to_string(index=False, float_format="%.4f"))
        print(f"mean difference {table['difference'].mean():+.4f} nats")


if __name__ == "__main__":
    main()
