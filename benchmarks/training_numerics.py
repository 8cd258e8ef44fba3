"""Does the fast CPU training path learn what the legacy path learns? (issue 37)

    .venv/bin/python benchmarks/training_numerics.py [--steps 2000] [--seeds 3] [--workers 1]

Trains chapter 1's En->De baseline (width 64, 2L-2L, its cpu parameters) for --steps updates under the
legacy path (chapter 1's `numerics`) and the fast path (`nmtscale.studies.numerics.FAST_PATH`), --seeds seeds
each, into the run and results stores of chapter 1 (recorded runs are read, not trained again), then prints
per test set both paths' mean final loss, the difference in pooled seed std against the gate of 1, and the
mean held-out loss curves.
`tests/test_numerics.py` checks the committed records against the same gate.
"""

from __future__ import annotations

import argparse

from nmtscale import book, record, runs
from nmtscale.studies import numerics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="updates per run")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per path")
    parser.add_argument("--workers", type=int, default=1, help="runs trained at once, one thread each")
    args = parser.parse_args()
    params = book.load_parameters("01_bivariate_laws", "cpu", root=record.REPOSITORY)
    runs.use_stores(params["runs_dir"], params["results_dir"])
    planned = numerics.plan(params, args.steps, range(args.seeds))
    configs = [cfg for path_configs in planned.values() for cfg in path_configs]
    summaries = runs.sweep(configs, workers=args.workers, threads_per_run=1)
    by_path, i = {}, 0
    for path, path_configs in planned.items():
        by_path[path], i = summaries[i : i + len(path_configs)], i + len(path_configs)
    print(f"\nchapter 1 baseline (2L-2L, width 64), {args.steps} updates, {args.seeds} seeds per path")
    print(f"fast path: {numerics.FAST_PATH}")
    for path, path_summaries in by_path.items():
        speeds = [s.tokens_per_s for s in path_summaries]
        print(f"  {path:8s} target tokens/s per run: {', '.join(f'{v:.0f}' for v in speeds)}")
    print("\nfinal loss (nats), gate: |fast - legacy| <= 1 pooled seed std")
    print(numerics.compare(numerics.final_losses(by_path)).to_string(index=False, float_format="%.4f"))
    curve = numerics.curves(by_path).groupby(["test_set", "step", "path"])["test_loss"].mean().unstack("path")
    print("\nmean held-out loss along training (nats)")
    print(curve.to_string(float_format="%.4f"))


if __name__ == "__main__":
    main()
