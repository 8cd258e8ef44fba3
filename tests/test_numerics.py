"""The fast CPU training path against the legacy one (issue 37): the plan, the gate, the committed runs."""

from __future__ import annotations

import pandas as pd
import pytest

from nmtscale import book, record, runs
from nmtscale.config import from_stored, override, to_dict
from nmtscale.runs import config_hash
from nmtscale.studies import bivariate, numerics

STEPS, SEEDS = 2000, range(3)  # what benchmarks/training_numerics.py trained and results/ records


@pytest.fixture
def params():
    return book.load_parameters("01_bivariate_laws", "cpu", root=record.REPOSITORY)


def test_both_paths_train_chapter_1s_baseline_and_differ_only_in_the_fast_keys_and_seed(params):
    planned = numerics.plan(params, STEPS, SEEDS)
    (baseline,) = bivariate.long_plan(params, STEPS, {"encoder": [], "decoder": []})
    assert config_hash(planned["legacy"][0]) == config_hash(baseline.config)
    for seed, legacy, fast in zip(SEEDS, planned["legacy"], planned["fast"], strict=True):
        assert legacy.train.seed == fast.train.seed == seed
        assert config_hash(override(legacy, numerics.FAST_PATH)) == config_hash(fast)
    ids = [config_hash(cfg) for configs in planned.values() for cfg in configs]
    assert len(set(ids)) == len(ids) == 2 * len(SEEDS)


def losses(legacy: list[float], fast: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"path": "legacy", "seed": i, "test_set": "t", "final_loss": v} for i, v in enumerate(legacy)]
        + [{"path": "fast", "seed": i, "test_set": "t", "final_loss": v} for i, v in enumerate(fast)]
    )


def test_the_gate_fails_a_path_that_drifts_by_more_than_one_seed_std():
    same = numerics.compare(losses([3.00, 3.01, 3.02], [3.005, 3.015, 3.025])).iloc[0]
    assert same["seed std"] == pytest.approx(0.01)
    assert same["difference / seed std"] == pytest.approx(0.5)
    assert bool(same["within 1 seed std"])
    drifted = numerics.compare(losses([3.00, 3.01, 3.02], [3.03, 3.04, 3.05])).iloc[0]
    assert drifted["difference / seed std"] == pytest.approx(3.0)
    assert not bool(drifted["within 1 seed std"])


def test_the_committed_fast_path_runs_learn_like_the_legacy_path(params, monkeypatch):
    """The records of benchmarks/training_numerics.py: chapter 1's baseline at 2,000 updates, 3 seeds per
    path; on every En->De test set the path means differ by at most one pooled seed std."""
    monkeypatch.setenv("NMTSCALE_RESULTS", str(record.REPOSITORY / params["results_dir"]))
    planned = numerics.plan(params, STEPS, SEEDS)
    summaries = {path: [runs.recorded_summary(cfg) for cfg in configs] for path, configs in planned.items()}
    missing = [
        config_hash(cfg)
        for path, configs in planned.items()
        for cfg, summary in zip(configs, summaries[path], strict=True)
        if summary is None
    ]
    assert not missing, f"no record for {missing}: run benchmarks/training_numerics.py"
    table = numerics.compare(numerics.final_losses(summaries))
    assert len(table) == 3
    assert table["within 1 seed std"].all(), table.to_string()


def test_the_committed_device_records_are_cpu_recorded_configs_trained_on_that_device():
    """benchmarks/device_numerics.py's records: each is a config whose CPU-trained record is in results/,
    trained again on the device its folder names; `paired` sets them side by side."""
    folders = [p for p in (record.REPOSITORY / "benchmarks" / "device_records").iterdir() if p.is_dir()]
    assert folders
    for folder in folders:
        others = [record.read_record(path)["summary"] for path in sorted(folder.glob("*.json"))]
        cpu = [
            record.read_record(record.REPOSITORY / "results" / f"{s.run_id}.json")["summary"] for s in others
        ]
        assert len(others) >= 3
        for other, base in zip(others, cpu, strict=True):
            assert other.device == folder.name and base.device == "cpu"
            # a record written before a key existed reads with its legacy value (config.KEYS_ADDED_LATER)
            assert to_dict(from_stored(other.config)) == to_dict(from_stored(base.config))
        seed_std = dict.fromkeys(others[0].final_loss, 0.01)
        table = numerics.paired(cpu, others, seed_std)
        assert len(table) == sum(len(s.final_loss) for s in others)
        assert table["difference / seed std"].tolist() == pytest.approx((table["difference"] / 0.01).tolist())
    with pytest.raises(ValueError, match="without a reference run"):
        numerics.paired(cpu[:1], others, seed_std)
