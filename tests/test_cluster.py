"""Sweeps on a real Ray cluster on loopback: a head without CPUs and two one-CPU nodes, started once."""

from __future__ import annotations

import json
import threading
import time

import pytest
import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from test_runs import DIVERGING
from toy import user_run

from nmtscale import record, runs
from nmtscale.config import from_dict

pytestmark = pytest.mark.slow  # starts Ray processes; a minute or two on two busy cores

NODE = {"num_cpus": 1, "object_store_memory": 80 * 1024**2}


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "object_store_memory": 80 * 1024**2, "include_dashboard": False},
    )
    for _ in range(2):
        cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_a_sweep_on_ray_records_what_the_local_engine_records(cluster, store, monkeypatch):
    good = [from_dict(user_run(store, seed=seed)) for seed in (0, 1)]
    configs = [good[0], from_dict(user_run(store, **DIVERGING)), good[1], good[0]]
    on_ray = runs.sweep(configs, workers=2, engine="ray")
    assert [s.status for s in on_ray] == ["finished", "failed", "finished", "finished"]
    assert "diverged at step" in on_ray[1].reason  # recorded as failed, and the sweep carried on
    assert on_ray[3] == on_ray[0]  # identical configs are trained once
    for summary in on_ray:
        path = record.record_path(summary.run_id, record.results_root())
        assert record.read_record(path)["summary"] == summary

    monkeypatch.setenv("NMTSCALE_RUNS", str(store / "local-runs"))
    monkeypatch.setenv("NMTSCALE_RESULTS", str(store / "local-results"))
    local = runs.sweep(configs, workers=1)
    for remote, here in zip(on_ray, local, strict=True):
        assert (remote.run_id, remote.status, remote.steps, remote.config) == (
            here.run_id,
            here.status,
            here.steps,
            here.config,
        )
        assert remote.final_loss == pytest.approx(here.final_loss, rel=1e-5)


def test_a_node_killed_mid_sweep_loses_no_finished_run_and_its_runs_finish_elsewhere(cluster, store):
    doomed = cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    # the node is registered before the scheduler counts its CPU; a sweep started in between would see two
    # CPUs and never train three runs at once
    deadline = time.monotonic() + 60
    while ray.cluster_resources().get("CPU", 0) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.cluster_resources().get("CPU", 0) >= 3, ray.cluster_resources()
    # a short run and four long ones of distinct lengths on three one-run nodes. Ray may start them in any
    # order, so each order must reach a moment with a run finished and every node training a long run: the
    # long runs finish 300 updates apart, and when the first has finished at least one long run is still
    # queued (if the short one was queued too, it ends within its 20 updates and the long one starts next)
    steps = [20, 400, 700, 1000, 1300]
    configs = []
    for seed, n in enumerate(steps):
        raw = user_run(store, steps=n, checkpoint_interval=20, seed=seed)
        configs.append(from_dict({**raw, "eval": {**raw["eval"], "interval": min(n, 100)}}))
    directories = [runs.run_dir(cfg) for cfg in configs]
    # a new node's first task waits seconds for a worker process that imports torch; on a fast machine the
    # other two nodes would train all five runs in that time. A task pinned to each node before the sweep
    # leaves a worker there with the package imported, which Ray reuses for the sweep's tasks
    warm = ray.remote(runs.run_dir)
    for node in ray.nodes():
        if node["Alive"] and node["Resources"].get("CPU"):
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            ray.get(warm.options(num_cpus=1, scheduling_strategy=strategy).remote(configs[0]))
    outcome: dict = {}

    def sweep_and_keep_the_outcome() -> None:
        try:
            outcome["summaries"] = runs.sweep(configs, engine="ray")
        except Exception as err:  # raised again below, in the test's own thread
            outcome["error"] = err

    sweeper = threading.Thread(target=sweep_and_keep_the_outcome)
    sweeper.start()

    def finished_and_training() -> tuple[list, list]:
        finished = [d for d in directories if (d / runs.SUMMARY).exists()]
        training = [d for d in directories if (d / "checkpoint.pt").exists() and d not in finished]
        return finished, training

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        finished, training = finished_and_training()
        if finished and len(training) == 3:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"no moment with a finished run and three training: {finished_and_training()}")
    first = record.record_path(finished[0].name, record.results_root())
    written = first.stat().st_mtime_ns
    cluster.remove_node(doomed, allow_graceful=False)
    # on two cores busy with other jobs the two nodes left take minutes over the four long runs
    sweeper.join(timeout=1800)
    assert not sweeper.is_alive(), "the sweep had not ended 30 minutes after the node was killed"
    if "error" in outcome:
        raise outcome["error"]
    assert [s.status for s in outcome["summaries"]] == ["finished"] * len(steps)
    assert [s.steps for s in outcome["summaries"]] == steps
    assert first.stat().st_mtime_ns == written  # the run finished before the kill was not trained again
    events = [
        [json.loads(line).get("event") for line in (d / "metrics.jsonl").read_text().splitlines()]
        for d in directories
    ]
    resumed = [d for d, run_events in zip(directories, events, strict=True) if "resume" in run_events]
    assert len(resumed) == 1  # the killed node's run resumed from its checkpoint on another node
    summary = outcome["summaries"][directories.index(resumed[0])]
    uninterrupted = runs.run(configs[directories.index(resumed[0])], root=store / "uninterrupted")
    assert summary.final_loss == pytest.approx(uninterrupted.final_loss, rel=1e-5)
