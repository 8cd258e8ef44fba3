"""Sweeps on a Ray cluster: the same runs, records and progress as the local process pool, on many machines.

Each run is one Ray task asking for `threads_per_run` CPUs and, on a cluster with GPUs, `1 / workers` of a
GPU (so `workers` runs share a GPU, as they share one machine with the local engine; `workers=1` gives each
run a whole GPU). A task whose worker process or node dies is started again by Ray, up to `RETRIES` times,
on any node with the resources free; it resumes from the run's last checkpoint. An error raised by a run
itself (a bad config, unreadable data) is not retried: it would fail again.

Shared storage is assumed: the run store, the results store and the cache are passed to every task as the
absolute paths they have on the machine that starts the sweep, and must mean the same folders on every node
(one network filesystem mounted at the same path, with the repository and its `data/` on it too). A run's
record is written by the task that finishes it, atomically and under the run's id, so a run retried after
its record was written reads that record instead of training again: each finished run is recorded once,
whichever node trained it. Every node needs this package installed in the same Python environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nmtscale.config import RunConfig
from nmtscale.errors import ConfigurationError, SweepError
from nmtscale.record import RunSummary, results_root, runs_root

RETRIES = 3  # restarts of a run whose worker or node died, each resuming from the run's checkpoint
STORE_VARIABLES = ("NMTSCALE_RUNS", "NMTSCALE_RESULTS", "NMTSCALE_CACHE")


def import_ray() -> Any:
    """The `ray` module, or a ConfigurationError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigurationError(
            "engine 'ray' needs Ray on every machine of the sweep: pip install -r requirements.txt"
        ) from None
    return ray


def connect(address: str | None) -> Any:
    """Ray, connected to the cluster at `address` (else `$RAY_ADDRESS`, else a cluster started on this
    machine), unless this process is connected already."""
    ray = import_ray()
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address)
        else:  # a one-machine cluster for this process only: no dashboard to serve
            ray.init(include_dashboard=False)
    return ray


def store_environment(cache: Path) -> dict[str, str]:
    """The environment a task needs to use this process's stores: their absolute paths."""
    paths = (runs_root(), results_root(), cache)
    return {variable: str(path.resolve()) for variable, path in zip(STORE_VARIABLES, paths, strict=True)}


def _run_with_stores(
    job: Callable[[RunConfig, str | None, int], RunSummary],
    environment: dict[str, str],
    cfg: RunConfig,
    root: str | None,
    threads: int,
) -> RunSummary:
    """`job(cfg, root, threads)` in a Ray worker, with the sweep's stores. Set here rather than as a Ray
    runtime environment, which would start a new worker process for every sweep instead of reusing those
    Ray keeps ready."""
    os.environ.update(environment)
    return job(cfg, root, threads)


def train_on_ray(
    job: Callable[[RunConfig, str | None, int], RunSummary],
    configs: Mapping[str, RunConfig],
    root: str | Path | None,
    threads_per_run: int,
    workers: int,
    cache: Path,
    finished: Callable[[str, RunSummary], None],
    address: str | None = None,
) -> None:
    """`job(config, root, threads_per_run)` for every config of `configs` (keyed by run id) as Ray tasks,
    calling `finished(key, summary)` in this process as each ends, in the order they end.

    An error raised by a run is raised again once every other run has ended. Runs that lost their worker or
    node more than `RETRIES` times are named in a SweepError, after the others have ended.
    """
    ray = connect(address)
    gpus = 1 / max(workers, 1) if ray.cluster_resources().get("GPU", 0) > 0 else 0
    task = ray.remote(_run_with_stores).options(
        num_cpus=threads_per_run, num_gpus=gpus, max_retries=RETRIES, retry_exceptions=False
    )
    environment = store_environment(cache)
    run_root = str(Path(root).resolve()) if root else None
    keys = {
        task.remote(job, environment, cfg, run_root, threads_per_run): key for key, cfg in configs.items()
    }
    pending, error, lost = list(keys), None, []
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        key = keys[ready[0]]
        try:
            summary = ray.get(ready[0])
        except ray.exceptions.RayTaskError as err:  # raised by the run itself: the same class as the cause
            error = error or err
        except ray.exceptions.RayError:  # its worker or node died on every try
            lost.append(key)
        else:
            finished(key, summary)
    if error is not None:
        raise error
    if lost:
        raise SweepError(
            f"sweep on Ray stopped: the workers or nodes of {len(lost)} runs died {RETRIES + 1} times "
            f"(killed, or out of memory?); not finished: {lost}. The finished runs are stored, and running "
            "the sweep again resumes the others from their checkpoints"
        )
