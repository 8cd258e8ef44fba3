"""The run store, sweeps and the train/sweep/translate commands, on user files written by the tests."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from types import SimpleNamespace

import pytest
import torch
import yaml
from toy import interrupted_at, user_run

from nmtscale import cli, runs
from nmtscale import train as trainer
from nmtscale.config import from_dict
from nmtscale.errors import ConfigurationError

# AdamW at this learning rate overflows within two updates: a real divergence, not a simulated one.
DIVERGING = {"optimizer": "adamw", "lr": 1e9, "clip_norm": None, "warmup_steps": 0}


def test_a_finished_run_returns_its_summary_without_training(store, monkeypatch):
    cfg = from_dict(user_run(store))
    first = runs.run(cfg)
    assert first.finished and first.final_loss.keys() == {"en-de/toy"}
    directory = runs.run_dir(cfg)
    assert directory.parent == store / "runs"
    assert {p.name for p in directory.iterdir()} >= {
        "config.yaml",
        "metrics.jsonl",
        "summary.json",
        "model.pt",
    }
    assert not (directory / trainer.CHECKPOINT).exists()
    assert from_dict(yaml.safe_load((directory / "config.yaml").read_text())) == cfg

    monkeypatch.setattr(runs, "train", lambda *args: pytest.fail("a finished run was trained again"))
    assert runs.run(cfg) == first


def test_a_run_known_only_from_its_record_is_trained_again_for_its_model_and_says_how_far_it_ends(
    store, monkeypatch, capsys
):
    monkeypatch.setenv("NMTSCALE_RESULTS", str(store / "results"))
    cfg = from_dict(user_run(store))
    first = runs.run(cfg)
    recorded = runs.recorded_summary(cfg)
    assert recorded is not None and recorded.final_loss == first.final_loss
    shutil.rmtree(runs.run_dir(cfg))  # a fresh clone: the record, no model
    # the record as another CPU wrote it: its losses a little off those this machine trains to
    elsewhere = dataclasses.replace(
        recorded, final_loss={k: v + 0.0123 for k, v in recorded.final_loss.items()}
    )
    directory = runs.model_directory(elsewhere)
    assert (directory / "model.pt").exists()
    message = capsys.readouterr().err
    assert "training it again" in message
    assert "trained again, it ends within 0.0123 nats of its record (largest on en-de/toy" in message


def test_an_interrupted_run_has_no_summary_and_resumes_to_the_same_result(store, monkeypatch):
    cfg = from_dict(user_run(store))
    with interrupted_at(monkeypatch, 8):
        runs.run(cfg)
    directory = runs.run_dir(cfg)
    assert runs.load_summary(directory) is None
    assert (directory / trainer.CHECKPOINT).exists()
    half_written = directory / ".checkpoint.pt.999999.tmp"  # what kill -9 during a save leaves behind
    half_written.write_bytes(b"\x80")

    resumed = runs.run(cfg)
    assert not half_written.exists()
    uninterrupted = runs.run(cfg, root=store / "other")
    assert resumed.curves == uninterrupted.curves
    assert resumed.final_loss == uninterrupted.final_loss


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    runs.atomic_write_text(path, "old")

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        runs.atomic_write_text(path, "new")
    assert path.read_text() == "old"


@pytest.mark.slow  # starts a Python process
def test_kill_9_during_training_loses_nothing(store):
    config = store / "run.yaml"
    config.write_text(yaml.safe_dump(user_run(store, steps=100, checkpoint_interval=2)))
    cfg = runs.load_config(config)
    directory = runs.run_dir(cfg)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, "-m", "nmtscale", "train", str(config)], env=env)
    deadline = time.monotonic() + 120
    while (
        process.poll() is None
        and not (directory / trainer.CHECKPOINT).exists()
        and time.monotonic() < deadline
    ):
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL

    assert runs.load_summary(directory) is None
    checkpoint = torch.load(
        directory / trainer.CHECKPOINT, weights_only=False
    )  # complete, never half-written
    assert 2 <= checkpoint["state"]["step"] < 100
    summary = runs.run(cfg)
    assert summary.finished and summary.steps == 100
    assert not list(directory.glob(".*.tmp"))


@pytest.mark.slow  # starts two worker processes
def test_sweep_keeps_input_order_and_records_a_diverged_run(store):
    good, diverging = from_dict(user_run(store)), from_dict(user_run(store, **DIVERGING))
    summaries = runs.sweep([diverging, good, diverging], workers=2, threads_per_run=1)
    assert [s.status for s in summaries] == ["failed", "finished", "failed"]
    assert "diverged at step" in summaries[0].reason
    assert runs.load_summary(runs.run_dir(diverging)).status == "failed"
    assert summaries[1] == runs.run(good)


def test_sweep_file_grid_and_runs(store):
    (store / "base.yaml").write_text(yaml.safe_dump(user_run(store)))
    sweep_file = store / "sweep.yaml"
    sweep_file.write_text(
        yaml.safe_dump(
            {
                "base": "base.yaml",
                "set": {"train.steps": 10},
                "grid": {"model.d_model": [8, 16], "train.seed": [0, 1, 2]},
                "workers": 2,
            }
        )
    )
    configs, pool = runs.load_sweep(sweep_file)
    assert len(configs) == 6 and pool == {"workers": 2, "threads_per_run": 1}
    assert {(c.model.d_model, c.train.seed, c.train.steps) for c in configs} == {
        (d, s, 10) for d in (8, 16) for s in (0, 1, 2)
    }

    sweep_file.write_text(
        yaml.safe_dump({"base": "base.yaml", "runs": [{"train.lr": 0.1}, {"train.lr": 0.2}]})
    )
    assert [c.train.lr for c in runs.load_sweep(sweep_file)[0]] == [0.1, 0.2]

    sweep_file.write_text(yaml.safe_dump({"base": "base.yaml", "gird": {}}))
    with pytest.raises(
        ConfigurationError, match=r"sweep.yaml: unknown sweep key 'gird' \(did you mean 'grid'\?\)"
    ):
        runs.load_sweep(sweep_file)
    sweep_file.write_text(yaml.safe_dump({"base": "base.yaml", "grid": {"train.stepz": [1]}}))
    with pytest.raises(
        ConfigurationError, match=r"train.stepz: unknown key \(did you mean 'train.steps'\?\)"
    ):
        runs.load_sweep(sweep_file)


def test_train_sweep_and_translate_commands(store, capsys):
    config = store / "run.yaml"
    config.write_text(yaml.safe_dump(user_run(store)))
    assert cli.main(["train", str(config), "--set", "train.steps=30"]) == 0
    assert "finished" in capsys.readouterr().out

    directory = runs.run_dir(runs.load_config(config, ["train.steps=30"]))
    (store / "input.txt").write_text("the cat sees the dog\na big red house\n")
    assert cli.main(["translate", str(directory), "--input", str(store / "input.txt"), "--beam", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2

    (store / "sweep.yaml").write_text(yaml.safe_dump({"base": "run.yaml", "grid": {"train.steps": [10, 30]}}))
    assert cli.main(["sweep", str(store / "sweep.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and directory.name in lines[1]  # the 30-step run was already done

    assert cli.main(["train", str(config), "--set", "train.setps=3"]) == 2
    assert "did you mean 'train.steps'" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="has not finished"):
        runs.translate_texts(runs.run_dir(runs.load_config(config)), ["the cat"])


def test_cooldown_runs_that_differ_in_budget_share_one_trunk(store):
    def cooldown(**train):
        return from_dict(user_run(store, optimizer="adamw", schedule="constant_cooldown", **train))

    short, long = cooldown(steps=20), cooldown(steps=40, checkpoint_interval=10, cooldown_fraction=0.1)
    assert runs.trunk_key(short) == runs.trunk_key(long) is not None
    assert runs.trunk_key(cooldown(steps=40, lr=0.02)) != runs.trunk_key(long)
    assert runs.trunk_key(cooldown(average_last=2)) is None
    assert runs.trunk_key(from_dict(user_run(store, schedule="cosine"))) is None
    other = from_dict(user_run(store, seed=1))
    ids = [runs.config_hash(cfg) for cfg in (long, other, short)]
    chains = runs.trunk_chains(dict(zip(ids, (long, other, short), strict=True)))
    assert chains == [[ids[2], ids[0]], [ids[1]]], "one chain per trunk, shortest budget first"
    # two workers: the longer budget still waits for the shorter one's snapshot
    second, _, first = runs.sweep([long, other, short], workers=2)
    assert first.branched_from is None
    assert second.branched_from == {"run_id": first.run_id, "step": 16}
    trunk = store / "runs" / runs.TRUNKS / runs.trunk_key(short)
    assert sorted(p.name for p in trunk.iterdir()) == ["step-16.pt", "step-36.pt"]


def test_an_unknown_engine_is_a_clear_error(store):
    with pytest.raises(ConfigurationError, match="engine must be one of \\['local', 'ray'\\], not 'rya'"):
        runs.sweep([from_dict(user_run(store))], engine="rya")


def test_a_sweep_warns_when_its_runs_would_mix_devices(monkeypatch):
    """A run id names a config, not a device; CUDA- and CPU-trained runs of one config differ beyond the seed
    noise (benchmarks/device_numerics.py), so training beside records of the other device is flagged."""
    on_cpu, on_cuda = SimpleNamespace(device="cpu"), SimpleNamespace(device="cuda")
    monkeypatch.setattr(runs, "pick_device", lambda: torch.device("cpu"))
    with pytest.warns(UserWarning, match=r"2 runs train on cpu beside runs of this sweep recorded on cuda"):
        runs.warn_of_mixed_devices([on_cpu, on_cuda], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs.warn_of_mixed_devices([on_cpu], 2)  # one device
        runs.warn_of_mixed_devices([on_cuda], 0)  # nothing to train
