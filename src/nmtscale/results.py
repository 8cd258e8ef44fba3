"""The results store as data: one table row per run for your own analyses, and the reproduction check.

    python -m nmtscale results table [--store DIR] [--format csv|parquet] [--output FILE]
    python -m nmtscale results compare A B [--seed-std NATS]

`compare` is what a skeptical reader runs after retraining (`make reproduce`, which trains into
`retrain/results`): for every run recorded in both stores, the difference of the final losses per test set, in
units of the seed standard deviation (the spread of final losses between runs that differ only in their seed,
pooled over the store's repeated runs, or `--seed-std`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nmtscale.errors import ConfigurationError
from nmtscale.record import iter_records, results_root

SEED_KEY = "config.train.seed"


def flatten(mapping: dict[str, Any], prefix: str) -> dict[str, Any]:
    """{'a': {'b': 1, 'c': [2]}} -> {'<prefix>.a.b': 1, '<prefix>.a.c': '[2]'}: nested keys dotted, lists as
    JSON text (one cell each)."""
    flat = {}
    for key, value in mapping.items():
        name = f"{prefix}.{key}"
        if isinstance(value, dict):
            flat |= flatten(value, name)
        else:
            flat[name] = json.dumps(value) if isinstance(value, list) else value
    return flat


def table(root: str | Path | None = None) -> pd.DataFrame:
    """One row per recorded run: run_id, status, reason, engine_version, the config flattened
    (`config.model.d_model`, ...), `loss.<test set>` (final loss, nats per target token; NaN for a failed
    run), N (non-embedding parameters), n_params, steps, tokens (target tokens trained on), training_flops,
    flops_per_target_token, wall_time_s, tokens_per_s, device and the provenance (`provenance.cpu`, ...)."""
    rows = []
    for rec in iter_records(root or results_root()):
        s = rec["summary"]
        row = {
            "run_id": s.run_id,
            "status": s.status,
            "reason": s.reason,
            "engine_version": rec["engine_version"],
            "N": s.n_params_non_embedding,
            "n_params": s.n_params,
            "steps": s.steps,
            "tokens": sum(s.tokens_seen.values()),
            "training_flops": s.training_flops,
            "flops_per_target_token": s.flops_per_target_token,
            "wall_time_s": s.wall_time_s,
            "tokens_per_s": s.tokens_per_s,
            "device": s.device,
        }
        row |= {f"loss.{key}": s.final_loss.get(key, math.nan) for key in s.test_set_keys()}
        row |= flatten(s.config, "config") | flatten(rec["provenance"], "provenance")
        rows.append(row)
    return pd.DataFrame(rows)


def loss_columns(frame: pd.DataFrame) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith("loss."))


def seed_std(runs: pd.DataFrame) -> pd.Series:
    """Per test set, the seed standard deviation of the final loss: runs whose configs differ only in
    `train.seed` form a group; the within-group variances (ddof 1) are pooled over every group of 2+ finished
    runs. NaN for a test set without such a group."""
    finished = runs[runs["status"] == "finished"]
    config = [c for c in finished.columns if c.startswith("config.") and c != SEED_KEY]
    pooled = {}
    for column in loss_columns(finished):
        squares, dof = 0.0, 0
        for _, group in finished.dropna(subset=[column]).groupby(config, dropna=False):
            if len(group) >= 2:
                squares += float(((group[column] - group[column].mean()) ** 2).sum())
                dof += len(group) - 1
        pooled[column.removeprefix("loss.")] = math.sqrt(squares / dof) if dof else math.nan
    return pd.Series(pooled, name="seed_std", dtype=float)


def compare(a: str | Path, b: str | Path, noise: float | None = None) -> pd.DataFrame:
    """Run by run and test set, the final losses of the runs recorded in both stores: loss_a, loss_b,
    difference (b - a) and that difference in seed standard deviations (`noise` nats, else `seed_std` of
    store `a`, per test set). Runs recorded in only one store are left out (`only_in` says which)."""
    left, right = table(a), table(b)
    if left.empty or right.empty:
        raise ConfigurationError(f"nothing to compare: {a if left.empty else b} holds no run records")
    stds = seed_std(left) if noise is None else None
    rows = []
    right = right.set_index("run_id")
    columns = loss_columns(left.dropna(axis=1, how="all"))
    for _, run in left.iterrows():
        if run["run_id"] not in right.index:
            continue
        other = right.loc[run["run_id"]]
        for column in columns:
            test_set = column.removeprefix("loss.")
            std = noise if noise is not None else stds.get(test_set, math.nan)
            loss_b = other.get(column, math.nan)
            difference = loss_b - run[column]
            rows.append(
                {
                    "run_id": run["run_id"],
                    "test_set": test_set,
                    "loss_a": run[column],
                    "loss_b": loss_b,
                    "difference": difference,
                    "seed_std": std,
                    "seed_stds": difference / std if std and np.isfinite(std) else math.nan,
                }
            )
    frame = pd.DataFrame(rows)
    frame.attrs["only_in"] = {
        str(a): sorted(set(left["run_id"]) - set(right.index)),
        str(b): sorted(set(right.index) - set(left["run_id"])),
    }
    return frame


def _table_command(args: argparse.Namespace) -> int:
    if args.store is not None and not Path(args.store).is_dir():
        raise ConfigurationError(f"--store {args.store}: no such results store (a directory of run records)")
    output = args.output or f"runs.{args.format}"
    if Path(output).is_dir():
        raise ConfigurationError(f"--output {output}: is a directory; give a file name")
    if not Path(output).resolve().parent.is_dir():
        raise ConfigurationError(f"--output {output}: its directory {Path(output).parent} does not exist")
    frame = table(args.store)
    if args.format == "parquet":
        try:
            frame.to_parquet(output, index=False)
        except ImportError as err:
            raise ConfigurationError(
                f"--format parquet needs pyarrow, which nmtscale does not install ({err}); "
                "`pip install pyarrow`, or use --format csv"
            ) from None
    else:
        frame.to_csv(output, index=False)
    print(f"{len(frame)} runs, {frame.shape[1]} columns -> {output}")
    return 0


def _compare_command(args: argparse.Namespace) -> int:
    return print_comparison(compare(args.a, args.b, args.seed_std))


def print_comparison(frame: pd.DataFrame) -> int:
    """Print a `compare` frame and its largest difference; 1 when no run was in both stores, else 0."""
    for store, ids in frame.attrs["only_in"].items():
        if ids:
            print(f"{len(ids)} runs recorded only in {store} (not compared)", file=sys.stderr)
    if frame.empty:
        print("no run is recorded in both stores")
        return 1
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    worst = frame["seed_stds"].abs().max()
    print(
        f"{frame['run_id'].nunique()} runs compared; largest |difference| "
        f"{frame['difference'].abs().max():.4f} nats = {worst:.2f} seed std"
    )
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """The `results table` and `results compare` commands."""
    parser = subparsers.add_parser("results", help="the results store: export it, compare two stores")
    commands = parser.add_subparsers(dest="results_command", required=True, metavar="COMMAND")
    table_parser = commands.add_parser("table", help="one row per recorded run, as CSV or Parquet")
    table_parser.add_argument("--store", help="results store (default: results/)")
    table_parser.add_argument("--format", choices=("csv", "parquet"), default="csv")
    table_parser.add_argument("--output", help="file to write (default: runs.csv or runs.parquet)")
    table_parser.set_defaults(func=_table_command)
    compare_parser = commands.add_parser(
        "compare", help="final losses of the runs two stores share, in seed standard deviations"
    )
    compare_parser.add_argument("a", help="a results store, e.g. results")
    compare_parser.add_argument("b", help="another, e.g. retrain/results")
    compare_parser.add_argument(
        "--seed-std", type=float, help="the seed standard deviation in nats (default: estimated from A)"
    )
    compare_parser.set_defaults(func=_compare_command)
