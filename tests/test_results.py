"""The results store: records written once per run and read instead of retraining, outputs of final models
kept beside them, every damaged record an error naming its file, the table export and the reproduction
check."""

from __future__ import annotations

import json
import shutil

import pytest
from toy import user_run

from nmtscale import record, results, runs
from nmtscale.cli import main
from nmtscale.config import from_dict, from_stored
from nmtscale.errors import DataError


def no_training(*args, **kwargs):
    pytest.fail("a recorded run was trained again")


def test_a_run_is_recorded_once_and_read_back_without_its_run_directory(store, monkeypatch):
    cfg = from_dict(user_run(store))
    summary = runs.run(cfg, threads=1)
    rec = record.read_record(record.record_path(summary.run_id, runs.results_root()))
    assert rec["summary"] == summary and rec["engine_version"] == record.ENGINE_VERSION
    assert rec["provenance"]["threads"] == 1 and rec["provenance"]["torch"] and rec["provenance"]["cpu"]
    assert summary.tokens_per_s > 0
    shutil.rmtree(runs.run_dir(cfg))  # a fresh clone has the record and no run directory
    monkeypatch.setattr(runs, "train", no_training)
    assert runs.run(cfg) == summary
    assert runs.sweep([cfg, cfg], workers=2) == [summary, summary]  # no pool is started for recorded runs


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda rec: rec.pop("provenance"), "not a readable run record .*expected the keys"),
        (lambda rec: rec.update(format=9), "record format 9"),
        (lambda rec: rec["summary"].update(run_id="0" * 16), "holds run"),
        (lambda rec: rec.update(engine_version=1), "written by engine version 1"),
        (lambda rec: rec["summary"]["config"]["train"].update(lr=1.0), "its config is not the config"),
        (
            lambda rec: rec["summary"]["final_loss"].update({"en-de/toy": 1.2345}),
            r"summary.final_loss.en-de/toy is 1.2345, but its curves give",
        ),
        (lambda rec: rec["summary"].update(status="finsihed"), r"summary.status is 'finsihed', not one of"),
        (lambda rec: rec["summary"].update(status="failed"), "summary.final_loss is set for a failed run"),
        (
            lambda rec: rec["summary"]["final_loss"].update({"en-de/toy": "4.2"}),
            r"summary.final_loss.en-de/toy is '4.2', not a number",
        ),
        (lambda rec: rec["summary"].update(n_params="many"), r"summary.n_params is 'many', not a count"),
    ],
)
def test_a_damaged_record_is_an_error_naming_its_file(store, damage, message):
    cfg = from_dict(user_run(store))
    run_id = runs.run(cfg).run_id
    path = record.record_path(run_id, runs.results_root())
    rec = json.loads(path.read_text())
    damage(rec)
    path.write_text(json.dumps(rec))
    with pytest.raises(DataError, match=rf"{run_id}.json: .*{message}"):
        runs.run(cfg)


def test_a_record_written_before_a_key_was_added_is_read_for_the_key_at_its_default(store, monkeypatch):
    """Chapters recorded before `train.schedule` existed keep reading their records: a record whose config
    lacks the key is the run of the config with the key at its default, and of no other."""
    cfg = from_dict(user_run(store))
    summary = runs.run(cfg)
    path = record.record_path(summary.run_id, runs.results_root())
    rec = json.loads(path.read_text())
    del rec["summary"]["config"]["train"]["schedule"]
    path.write_text(json.dumps(rec))
    monkeypatch.setattr(runs, "train", no_training)
    assert runs.run(from_dict(user_run(store, schedule="inverse_sqrt"))).final_loss == summary.final_loss
    cosine = from_dict(user_run(store, schedule="cosine"))
    assert runs.recorded_summary(cosine) is None, "another schedule is another run"


def test_a_truncated_or_renamed_record_is_an_error_naming_its_file(store):
    cfg = from_dict(user_run(store))
    run_id = runs.run(cfg).run_id
    path = record.record_path(run_id, runs.results_root())
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(DataError, match=rf"{run_id}.json: not a readable run record"):
        runs.run(cfg)
    copy = path.with_name(f"{'0' * 16}.json")
    copy.write_text(text)
    with pytest.raises(DataError, match=rf"{'0' * 16}.json: holds run '{run_id}'"):
        record.read_record(copy)


def test_an_interrupted_record_write_leaves_the_previous_record_whole(store, monkeypatch):
    summary = runs.run(from_dict(user_run(store)))
    path = record.record_path(summary.run_id, runs.results_root())
    before = path.read_text()

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(record.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        record.write_record(summary, 2, runs.results_root())
    assert path.read_text() == before
    assert [p.name for p in runs.results_root().glob("*.json")] == [path.name]


def test_outputs_are_kept_with_the_record_and_a_missing_model_is_trained_again(store, monkeypatch):
    cfg = from_dict(user_run(store))
    summary = runs.run(cfg)
    texts = ["the cat sees a dog", "a red house"]
    first = runs.translations(summary, texts, "en-de")
    assert len(first) == 2 and list((runs.results_root() / summary.run_id).glob("translations-*.json.gz"))
    shutil.rmtree(runs.run_dir(cfg))
    with monkeypatch.context() as patched:  # only this patch ends with the block, not the stores' variables
        patched.setattr(runs, "translate_texts", lambda *a: pytest.fail("a kept output was decoded again"))
        assert runs.translations(summary, texts, "en-de") == first  # no model needed
    assert len(runs.translations(summary, texts, "en-de", beam_size=2)) == 2  # a new output: trained again
    assert (runs.run_dir(cfg) / "model.pt").exists()
    output = next((runs.results_root() / summary.run_id).glob("translations-*.json.gz"))
    output.write_bytes(output.read_bytes()[:10])
    with pytest.raises(DataError, match=rf"{output.name}: not a readable output"):
        record.read_output(output)


def isolate_stores(monkeypatch) -> None:
    """Let `runs.use_stores` set the store variables for this test only (monkeypatch restores them)."""
    for variable in ("NMTSCALE_RUNS", "NMTSCALE_RESULTS"):
        monkeypatch.setenv(variable, "")
        monkeypatch.delenv(variable)


def test_retraining_moves_both_stores_under_retrain(monkeypatch):
    isolate_stores(monkeypatch)
    assert runs.results_root() == record.REPOSITORY / "results"
    monkeypatch.setenv("NMTSCALE_RETRAIN", "1")
    assert runs.runs_root() == record.REPOSITORY / "retrain" / "runs"
    runs.use_stores("_build/smoke/runs", "_build/smoke/results")
    assert runs.results_root() == record.REPOSITORY / "retrain" / "_build" / "smoke" / "results"


def test_table_and_compare_report_differences_in_seed_standard_deviations(
    store, tmp_path, monkeypatch, capsys
):
    seeds = [from_dict(user_run(store, seed=seed)) for seed in (0, 1, 2)]
    original = runs.results_root()
    runs.sweep(seeds)
    frame = results.table(original)
    assert len(frame) == 3 and results.loss_columns(frame) == ["loss.en-de/toy"]
    assert set(frame["config.train.seed"]) == {0, 1, 2} and (frame["N"] > 0).all()
    assert results.seed_std(frame)["en-de/toy"] > 0
    isolate_stores(monkeypatch)
    runs.use_stores(tmp_path / "again" / "runs", tmp_path / "again" / "results")  # a retraining of seed 0
    runs.run(seeds[0])
    comparison = results.compare(original, runs.results_root())
    assert len(comparison) == 1 and abs(comparison["seed_stds"].iloc[0]) < 0.01
    only_in_original = sorted(set(frame["run_id"]) - set(comparison["run_id"]))
    assert len(only_in_original) == 2 and comparison.attrs["only_in"][str(original)] == only_in_original
    assert main(["results", "compare", str(original), str(runs.results_root())]) == 0
    assert "1 runs compared" in capsys.readouterr().out
    assert main(["results", "table", "--store", str(original), "--output", str(tmp_path / "runs.csv")]) == 0
    assert (tmp_path / "runs.csv").read_text().count("\n") == 4
    assert main(["results", "compare", str(original), str(tmp_path / "empty")]) == 2


def test_every_committed_record_is_named_by_the_run_id_of_its_config():
    """A change to run identity (a key added, a default moved: `config.KEYS_ADDED_LATER`) that would rename a
    committed run, so that the chapters train it again, fails here first. Runs on user files (chapter 2's
    students read synthetic sets its notebook writes into the cache) hash those files' contents and are left
    out; every other record is checked."""
    root = record.REPOSITORY / "results"
    configs = {r["run_id"]: from_stored(r["summary"].config) for r in record.iter_records(root)}
    on_corpus = {run_id: cfg for run_id, cfg in configs.items() if not runs.user_data_files(cfg.data)}
    renamed = [run_id for run_id, cfg in on_corpus.items() if runs.config_hash(cfg) != run_id]
    assert not renamed, f"{len(renamed)} committed runs would be renamed, e.g. {renamed[:3]}"
    assert len(on_corpus) >= 0.9 * len(configs)


def test_every_committed_record_and_output_reads_at_this_engine_version():
    """The committed store is what `make all` reads: each record must be whole, named by its run id and of
    this engine version (bumping the version retires the old records: they are removed, and the chapters
    record their runs again), and each stored output must belong to a recorded run and read back."""
    root = record.REPOSITORY / "results"
    run_ids = {r["run_id"] for r in record.iter_records(root, record.ENGINE_VERSION)}
    for path in root.glob("*/*.json.gz"):
        assert path.parent.name in run_ids, f"{path}: an output of no recorded run"
        record.read_output(path)
