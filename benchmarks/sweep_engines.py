"""What Ray costs a sweep: chapter 1's smoke sweep on the local process pool and on a two-node Ray cluster.

    .venv/bin/python benchmarks/sweep_engines.py [--params params/01_bivariate_laws/smoke.yaml]

Trains the sweep twice into fresh scratch stores, with the same data cache (warmed first, so neither pays
for tokenizers): on the local engine (two single-thread worker processes) and on a local Ray cluster on
loopback (a head without CPUs and two one-CPU nodes, the same two workers' worth). Prints the cluster's start
time, both sweep times and Ray's overhead per run, and checks the two engines recorded the same losses.
Run it on an idle machine: the overhead is a difference of two timings.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from nmtscale import runs
from nmtscale.config import read_yaml
from nmtscale.engine.data import prepare_data
from nmtscale.studies import bivariate


def timed_sweep(configs, store: Path, engine: str) -> tuple[float, list]:
    os.environ["NMTSCALE_RUNS"] = str(store / "runs")
    os.environ["NMTSCALE_RESULTS"] = str(store / "results")
    start = time.perf_counter()
    summaries = runs.sweep(configs, workers=2, threads_per_run=1, engine=engine)
    return time.perf_counter() - start, summaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="params/01_bivariate_laws/smoke.yaml")
    args = parser.parse_args()
    configs = [planned.config for planned in bivariate.chapter_plan(read_yaml(Path(args.params)))]
    for data in {repr(cfg.data): cfg.data for cfg in configs}.values():
        prepare_data(data, runs.cache_root())
    print(f"{len(configs)} runs of {args.params}, two at a time, one thread each")

    with tempfile.TemporaryDirectory() as scratch:
        local_s, local = timed_sweep(configs, Path(scratch) / "local", "local")
        start = time.perf_counter()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address)
        start_s = time.perf_counter() - start
        try:
            ray_s, on_ray = timed_sweep(configs, Path(scratch) / "ray", "ray")
        finally:
            ray.shutdown()
            cluster.shutdown()

    worst = max(
        abs(a.final_loss[key] - b.final_loss[key])
        for a, b in zip(local, on_ray, strict=True)
        for key in a.final_loss
    )
    print(f"Ray cluster start (3 nodes on loopback): {start_s:6.1f} s")
    print(f"sweep on the local process pool:         {local_s:6.1f} s")
    print(f"sweep on Ray (2 one-CPU nodes):          {ray_s:6.1f} s")
    print(
        f"Ray's overhead: {ray_s - local_s:+.1f} s ({(ray_s / local_s - 1) * 100:+.0f}%), "
        f"{(ray_s - local_s) / len(configs):+.2f} s per run"
    )
    print(f"largest final-loss difference between the engines' records: {worst:.2e} nats")


if __name__ == "__main__":
    main()
