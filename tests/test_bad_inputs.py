"""Bad input, tried as a hostile but realistic user would: each case gets a clear error naming the file, key
or line, or is handled without losing anything. Grouped by what is wrong: config, data files, the run store,
training, the book's command line."""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import yaml
from toy import user_run

from nmtscale import book, cli, predict, record, runs
from nmtscale import train as trainer
from nmtscale.config import from_dict, load_config, parse_yaml
from nmtscale.errors import ConfigurationError, DataError, SweepError

# ----------------------------------------------------------------------------------------------------------
# Config files and keys


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("model:\n  n_heads: 0\n", r"n_heads=0 must be at least 1"),
        ("model: [1, 2]\n", r"section 'model' must be a mapping of keys to values, got list"),
        ("train:\n  lr: .nan\n", r"train.lr must be a finite number, not nan"),
        ("train:\n  lr: .inf\n", r"train.lr must be a finite number"),
        ("train:\n  weight_decay: -0.1\n", r"train.weight_decay must be >= 0, not -0.1"),
        ("train:\n  weight_decay: .nan\n", r"train.weight_decay must be a finite number"),
        ("train:\n  clip_norm: .nan\n", r"train.clip_norm must be a finite number or null"),
        ("train:\n  logit_cap: .nan\n", r"train.logit_cap must be a finite number or null"),
        ("train:\n  cooldown_fraction: 0\n", r"train.cooldown_fraction must be in \(0, 1\], not 0"),
        (
            "train:\n  schedule: constant_cooldown\n  steps: 100\n  warmup_steps: 90\n",
            r"train.warmup_steps=90 runs past the cool-down's start at update 80",
        ),
        ("model:\n  d_model: 32\nmodel:\n  d_model: 64\n", r"key 'model' given twice \(first on line 1\)"),
        ("train:\n  steps: 10\n  lr: 0.1\n  steps: 20\n", r"key 'steps' given twice \(first on line 2\)"),
    ],
)
def test_bad_config_files_name_the_file_and_key(tmp_path, yaml_text, message):
    path = tmp_path / "run.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigurationError, match=rf"run.yaml: .*{message}"):
        load_config(path)


def test_exponent_notation_is_a_number(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("train:\n  lr: 3e-4\n  weight_decay: 1E-2\n")
    cfg = load_config(path, ["train.warmup_steps=10", "train.label_smoothing=5e-2"])
    assert (cfg.train.lr, cfg.train.weight_decay, cfg.train.label_smoothing) == (3e-4, 1e-2, 5e-2)
    assert parse_yaml("-2.5e+3", "<test>") == -2500.0 and parse_yaml("1e3x", "<test>") == "1e3x"


def test_threads_must_be_positive(store, capsys):
    cfg = from_dict(user_run(store))
    with pytest.raises(ConfigurationError, match="threads must be a positive number of CPU threads, not 0"):
        runs.run(cfg, threads=0)
    config = store / "run.yaml"
    config.write_text(yaml.safe_dump(user_run(store)))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", str(config), "--threads", "0"])
    assert exit_info.value.code == 2 and "argument --threads: must be >= 1, not 0" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------------------
# User data files


def with_data(store: Path, **data) -> dict:
    raw = user_run(store)
    raw["data"] = {**raw["data"], **data}
    return raw


@pytest.mark.parametrize(
    "setup, message",
    [
        (
            lambda s: {"train_files": {"en-de": str(s / "absent.tsv")}},
            r"data.train_files.en-de: .*absent.tsv: no such file",
        ),
        (
            lambda s: {"train_files": {"en-de": str(s)}},
            r"data.train_files.en-de: .*: no such file \(it is a directory\)",
        ),
        (
            lambda s: {"train_files": {"en-de": str(empty(s))}},
            r"data.train_files.en-de: .*empty.tsv: no sentence pairs",
        ),
        (
            lambda s: {"test_files": {"en-de": {"toy": str(empty(s))}}},
            r"data.test_files.en-de.toy: .*empty.tsv: no sentence pairs",
        ),
        (
            lambda s: {"vocab_size": 100000},
            r"data.vocab_size=100000: the training text .* allows at most [\d,]+ pieces",
        ),
        (
            lambda s: {"train_files": {"en-de": str(one_long_line(s, 1_000_000))}},
            r"long.tsv:3: the source side has 1,000,000 characters; a sentence may have at most 10,000",
        ),
        (
            lambda s: {"train_files": {"en-de": str(one_long_line(s, 600))}},
            r"data.train_files.en-de: .*long.tsv:3: the pair is \d+ tokens long, more than one batch of "
            r"train.max_tokens=96",
        ),
    ],
)
def test_bad_user_data_is_named_before_training_and_leaves_no_run_behind(store, setup, message):
    cfg = from_dict(with_data(store, **setup(store)))
    with pytest.raises((DataError, ConfigurationError), match=message):
        runs.run(cfg)
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())


def empty(store: Path) -> Path:
    (store / "empty.tsv").write_text("")
    return store / "empty.tsv"


def one_long_line(store: Path, characters: int) -> Path:
    """The store's training pairs with a source of `characters` characters on line 3."""
    lines = (store / "train.tsv").read_text().splitlines()
    long_source = ("the cat sees " * (characters // 13 + 1))[:characters].strip()
    lines[2] = f"{long_source}\tder hund"
    (store / "long.tsv").write_text("\n".join(lines) + "\n")
    return store / "long.tsv"


# ----------------------------------------------------------------------------------------------------------
# The run store: damaged or copied files


@pytest.fixture
def finished(store):
    """A finished run in the run store, without a record (as one trained elsewhere, or before the results
    store existed): asking for it reads the run directory."""
    cfg = from_dict(user_run(store))
    summary = runs.run(cfg)
    record.record_path(summary.run_id, runs.results_root()).unlink()
    return cfg, runs.run_dir(cfg)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda text: text[: len(text) // 2], "not a readable run summary"),
        (lambda text: "", "not a readable run summary"),
        (lambda text: "\x00\xff binary", "not a readable run summary"),
        (
            lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "curves"}),
            "not a readable",
        ),
        (
            lambda text: text.replace(json.loads(text)["run_id"], "0123456789abcdef"),
            "holds run '0123456789abcdef'",
        ),
    ],
)
def test_a_damaged_or_copied_summary_is_never_returned(finished, damage, message):
    cfg, directory = finished
    summary = directory / "summary.json"
    summary.write_text(damage(summary.read_text()), encoding="utf-8", errors="surrogateescape")
    with pytest.raises(DataError, match=rf"{directory.name}/summary.json: {message}"):
        runs.run(cfg)


def test_damaged_model_and_tokenizer_files_are_named(finished):
    _, directory = finished
    (directory / "model.pt").write_bytes((directory / "model.pt").read_bytes()[:500])
    with pytest.raises(DataError, match="model.pt: not a readable model"):
        runs.translate_texts(directory, ["the cat"])
    (directory / "tokenizer.model").write_bytes(b"garbage")
    with pytest.raises(DataError, match="tokenizer.model: not a readable SentencePiece model"):
        runs.translate_texts(directory, ["the cat"])


@pytest.mark.parametrize("damage", [lambda b: b[: len(b) // 2], lambda b: b""], ids=["truncated", "empty"])
def test_an_unreadable_checkpoint_is_moved_aside_and_the_run_restarts(store, monkeypatch, damage):
    from toy import interrupted_at

    cfg = from_dict(user_run(store))
    with interrupted_at(monkeypatch, 8):
        runs.run(cfg)
    directory = runs.run_dir(cfg)
    checkpoint = directory / trainer.CHECKPOINT
    checkpoint.write_bytes(damage(checkpoint.read_bytes()))
    with pytest.warns(UserWarning, match="unreadable checkpoint .* training this run again from step 0"):
        summary = runs.run(cfg)
    assert summary.finished and summary.steps == 20
    assert len(list(directory.glob("checkpoint.pt.unreadable-*"))) == 1
    assert summary.final_loss == runs.run(cfg, root=store / "clean").final_loss  # same as never interrupted


def test_each_update_is_logged_once_across_a_resume(store, monkeypatch):
    from toy import interrupted_at

    cfg = from_dict(user_run(store))
    with interrupted_at(monkeypatch, 8):  # checkpoint at step 5, steps 6 and 7 logged, then killed
        runs.run(cfg)
    directory = runs.run_dir(cfg)
    with (directory / "metrics.jsonl").open("a") as log:
        log.write('{"event": "train", "ste')  # a line cut by the kill
    runs.run(cfg)
    records = trainer.read_metrics(directory / "metrics.jsonl")
    steps = [r["step"] for r in records if r["event"] == "train"]
    assert steps == list(range(1, 21))


def test_a_truncated_last_metrics_line_is_skipped_and_a_bad_middle_line_named(finished):
    _, directory = finished
    log = directory / "metrics.jsonl"
    log.write_text(log.read_text() + '{"event": "tr')
    assert trainer.median_tokens_per_second(trainer.read_metrics(log)) > 0
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    with pytest.raises(DataError, match=r"metrics.jsonl:2: not a JSON record"):
        trainer.read_metrics(log)


def test_a_checkpoint_left_by_a_kill_after_the_summary_is_removed(finished):
    cfg, directory = finished
    (directory / trainer.CHECKPOINT).write_bytes(b"left over")
    assert runs.run(cfg).finished
    assert not (directory / trainer.CHECKPOINT).exists()


def test_a_process_waiting_for_the_run_lock_says_so(store, capsys):
    cfg = from_dict(user_run(store))
    directory = runs.run_dir(cfg)
    directory.mkdir(parents=True)
    with (directory / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiter = threading.Thread(target=runs.run, args=(cfg,))
        waiter.start()
        deadline = time.monotonic() + 30
        while "waiting" not in capsys.readouterr().err and time.monotonic() < deadline:
            time.sleep(0.05)
        assert time.monotonic() < deadline, "no message while waiting for the lock"
        assert waiter.is_alive()
    waiter.join(timeout=120)
    assert runs.load_summary(directory).finished


def test_a_store_path_through_a_file_names_its_key(store, monkeypatch):
    (store / "afile").write_text("not a store")
    monkeypatch.setenv("NMTSCALE_RUNS", str(store / "afile" / "runs"))
    with pytest.raises(DataError, match=r"\$NMTSCALE_RUNS=.*afile/runs: .*afile is a file, not a directory"):
        runs.run(from_dict(user_run(store)))
    with pytest.raises(DataError, match=r"results_dir=.*afile: .*afile is a file, not a directory"):
        runs.use_stores(store / "runs", store / "afile")


# ----------------------------------------------------------------------------------------------------------
# Training that goes wrong


def test_a_loss_that_explodes_without_nan_fails_the_run(store):
    summary = runs.run(from_dict(user_run(store, optimizer="adamw", lr=1000.0, warmup_steps=0)))
    assert summary.status == "failed" and summary.final_loss == {}
    assert "diverged" in summary.reason and "uniform guess" in summary.reason


# ----------------------------------------------------------------------------------------------------------
# Sweeps whose processes die


def children(pid: int) -> list[int]:
    """Process ids whose parent is `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.slow  # trains four tiny runs in worker processes, one of them killed
def test_a_sweep_carries_on_when_a_worker_is_killed(store):
    configs = [from_dict(user_run(store, steps=60, seed=seed)) for seed in range(4)]
    result = {}
    sweeper = threading.Thread(target=lambda: result.update(summaries=runs.sweep(configs, workers=2)))
    sweeper.start()
    deadline = time.monotonic() + 120
    while not list((store / "runs").glob("*/checkpoint.pt")) and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = [p.pid for p in multiprocessing.active_children()]
    assert workers, "no worker process to kill"
    os.kill(workers[0], signal.SIGKILL)
    sweeper.join(timeout=300)
    assert [s.status for s in result["summaries"]] == ["finished"] * 4


@pytest.mark.slow  # starts worker processes and kills them
def test_a_sweep_whose_workers_keep_dying_stops_with_one_clear_error(store):
    configs = [from_dict(user_run(store, seed=seed)) for seed in range(2)]
    stop = threading.Event()

    def kill_every_worker():
        while not stop.is_set():
            for child in multiprocessing.active_children():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
            time.sleep(0.02)

    threading.Thread(target=kill_every_worker, daemon=True).start()
    try:
        with pytest.raises(SweepError, match="twice in a row before any run finished; not finished: "):
            runs.sweep(configs, workers=2)
    finally:
        stop.set()
    assert not list((store / "runs").glob("*/summary.json"))


@pytest.mark.slow  # starts a sweep in a subprocess and kills it
def test_killing_a_sweep_ends_its_workers(store):
    config = store / "run.yaml"
    config.write_text(yaml.safe_dump(user_run(store, steps=5000)))
    sweep_file = store / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump({"base": "run.yaml", "grid": {"train.seed": [0, 1]}, "workers": 2}))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-m", "nmtscale", "sweep", str(sweep_file)], env=env)
    deadline = time.monotonic() + 120
    while not list((store / "runs").glob("*/metrics.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = children(parent.pid)
    assert workers
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "workers trained on after the sweep was killed"


# ----------------------------------------------------------------------------------------------------------
# The book's command line


def test_a_chapter_parameter_of_the_wrong_kind_is_refused_before_running():
    root = Path(__file__).resolve().parents[1]
    with pytest.raises(ConfigurationError, match=r"-p steps 'abc': .*cpu.yaml sets it to \d+"):
        book.load_parameters("01_bivariate_laws", "cpu", {"steps": "abc"}, root)
    assert book.load_parameters("01_bivariate_laws", "cpu", {"steps": 10}, root)["steps"] == 10


def test_a_params_file_with_a_key_twice_is_refused(tmp_path):
    root = Path(__file__).resolve().parents[1]
    for path in ("book", "params/01_bivariate_laws"):
        (tmp_path / path).mkdir(parents=True)
    (tmp_path / "book/01_bivariate_laws.py").write_text((root / "book/01_bivariate_laws.py").read_text())
    text = (root / "params/01_bivariate_laws/cpu.yaml").read_text()
    (tmp_path / "params/01_bivariate_laws/cpu.yaml").write_text(text + "\nscale: cpu\n")
    with pytest.raises(ConfigurationError, match=r"cpu.yaml: not valid YAML: .*key 'scale' given twice"):
        book.load_parameters("01_bivariate_laws", "cpu", None, tmp_path)


# ----------------------------------------------------------------------------------------------------------
# Command-line counts, empty sweeps, missing files, clashing names and undetermined fits: each a named error


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sweep", "s.yaml", "--workers", "-3"], "argument --workers: must be >= 1, not -3"),
        (["sweep", "s.yaml", "--workers", "0"], "argument --workers: must be >= 1, not 0"),
        (["sweep", "s.yaml", "--threads", "-1"], "argument --threads: must be >= 1, not -1"),
        (["train", "r.yaml", "--threads", "two"], "argument --threads: 'two' is not a whole number"),
        (["translate", "0123", "--beam", "-2"], "argument --beam: must be >= 1, not -2"),
    ],
)
def test_a_count_below_one_is_refused_by_name(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_an_empty_sweep_and_missing_inputs_are_named(tmp_path, store, capsys):
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text("runs: []\n")
    with pytest.raises(ConfigurationError, match=r"sweep.yaml: runs is empty"):
        runs.load_sweep(sweep_file)
    assert cli.main(["results", "table", "--store", str(tmp_path / "no_such_dir")]) == 2
    assert "no_such_dir: no such results store" in capsys.readouterr().err
    assert cli.main(["results", "table", "--output", str(tmp_path / "missing" / "runs.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["results", "table", "--output", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    summary = runs.run(from_dict(user_run(store)))
    assert cli.main(["translate", summary.run_id, "--input", str(tmp_path / "nothing.txt")]) == 2
    assert "nothing.txt: no such file" in capsys.readouterr().err


def test_a_user_test_file_may_not_take_a_corpus_test_sets_name(store):
    raw = user_run(store)
    raw["data"] = {
        **raw["data"],
        "test_sets": ["dev"],
        "test_files": {"en-de": {"dev": str(store / "test.tsv")}},
    }
    with pytest.raises(
        ConfigurationError, match=r"data.test_files.en-de: \['dev'\] also named in data.test_sets"
    ):
        from_dict(raw)


@pytest.mark.parametrize("lr", [10, 1000, 1e9])
def test_adafactor_refuses_a_rate_it_would_ignore(lr):
    with pytest.raises(
        ConfigurationError, match=r"train.lr=\S+ with train.optimizer adafactor.*give lr <= 1"
    ):
        from_dict({"train": {"optimizer": "adafactor", "lr": lr}})


def test_a_vocabulary_sentencepiece_cannot_build_names_the_key(store):
    """Vocabulary 8 is allowed by the config (SentencePiece's own minimum) but smaller than the characters
    the text needs: the error names the key and says why, instead of SentencePiece's traceback."""
    with pytest.raises(ConfigurationError, match=r"data.vocab_size=8: SentencePiece cannot build .*required"):
        runs.run(from_dict(user_run(store) | {"data": {**user_run(store)["data"], "vocab_size": 8}}))


def test_fitting_arguments_outside_their_range_are_named():
    import numpy as np

    from nmtscale import laws
    from nmtscale.laws import fitting

    law = laws.power_law()
    x, y = np.array([1.0, 2.0, 4.0, 8.0]), np.array([3.0, 2.6, 2.4, 2.3])
    with pytest.raises(ValueError, match=r"delta must be > 0"):
        fitting.fit_multistart(law, x, y, delta=0.0)
    with pytest.raises(ValueError, match=r"delta must be > 0 .*not -1"):
        fitting.fit_multistart(law, x, y, delta=-1)
    with pytest.raises(ValueError, match=r"f_scale must be > 0"):
        fitting.fit_soft_l1(law, x, y, f_scale=0)
    with pytest.raises(ValueError, match=r"n0 must be a positive size"):
        laws.power_law(n0=0)
    with pytest.raises(ValueError, match=r"target_step must be a positive step, not -100"):
        fitting.extrapolate_learning_curve([100, 200, 300, 400], [3.0, 2.6, 2.4, 2.3], target_step=-100)


def test_an_unbounded_law_fits_by_ordinary_least_squares():
    import numpy as np

    from nmtscale import laws
    from nmtscale.laws import fitting

    bounded = laws.power_law()
    free = laws.Law(
        "free_power_law",
        bounded.inputs,
        tuple(laws.Parameter(p.name, -np.inf, np.inf, p.grid, p.start) for p in bounded.parameters),
        bounded.predict,
        bounded.jacobian,
    )
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 0.8 * x**-0.5 + 2.0
    fit = fitting.fit_least_squares(free, x, y, loss="linear")
    assert fit.params["p"] == pytest.approx(0.5, rel=1e-3)


def test_ctrl_c_on_train_is_one_line_saying_the_run_resumes(tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    config = tmp_path / "run.yaml"
    config.write_text("train:\n  steps: 3\n")
    monkeypatch.setattr(runs, "run", interrupted)
    assert cli.main(["train", str(config)]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run the same command again to resume" in err and "Traceback" not in err


def test_training_without_a_terminal_prints_progress_lines(tmp_path, store, monkeypatch, capsys):
    monkeypatch.setattr(trainer, "PROGRESS_LINE_S", 0.0)  # every update, so a tiny run shows some
    runs.run(from_dict(user_run(store, steps=3)))  # pytest's captured stderr is no terminal
    lines = [line for line in capsys.readouterr().err.splitlines() if ": update " in line]
    assert len(lines) == 3 and lines[-1].split(": update ")[1].startswith("3/3, training loss")


def test_count_params_of_a_run_config_uses_its_vocabulary(tmp_path):
    from nmtscale.engine.counting import load_preset, parameter_counts, summarize_counts

    config = tmp_path / "run.yaml"
    config.write_text("model:\n  d_model: 16\n  d_ff: 64\n  n_heads: 2\ndata:\n  vocab_size: 300\n")
    _, rows = load_preset(config)
    assert rows[0].config.vocab_size == 300
    small = summarize_counts(parameter_counts(rows[0].config))["total"]
    config.write_text("model:\n  d_model: 16\n  d_ff: 64\n  n_heads: 2\ndata:\n  vocab_size: 3000\n")
    assert summarize_counts(parameter_counts(load_preset(config)[1][0].config))["total"] > small


def test_swapped_columns_in_a_user_file_are_warned_about_by_key():
    from nmtscale.engine import data

    pairs = [
        ("Die Datei konnte nicht geöffnet werden.", "The file could not be opened."),
        ("Bitte geben Sie Ihr Passwort ein.", "Please enter your password."),
        ("Das Fenster wird jetzt geschlossen.", "The window will now be closed."),
        ("Keine Verbindung zum Server möglich.", "Unable to connect to the server."),
        ("Möchten Sie die Änderungen speichern?", "Do you want to save the changes?"),
    ]
    with pytest.warns(
        UserWarning, match=r"data.train_files.en-de: the columns look swapped: 100% of the first 5"
    ):
        data.warn_if_swapped(pairs, "en-de", "data.train_files.en-de")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data.warn_if_swapped([(b, a) for a, b in pairs], "en-de", "data.train_files.en-de")


def test_a_full_disk_is_named_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "record.json"
    target.write_text("previous")

    def disk_full(tmp):
        tmp.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(DataError, match=r"record.json: no space left on the device.*previous version"):
        record.atomic_write(target, disk_full)
    assert target.read_text() == "previous" and [p.name for p in tmp_path.iterdir()] == ["record.json"]

    def torch_full(tmp):  # torch.save on a full disk: a RuntimeError that does not say why
        tmp.write_text("half")
        raise RuntimeError("unexpected pos 350784 vs 350672")

    monkeypatch.setattr(record.shutil, "disk_usage", lambda path: shutil_usage(free=0))
    with pytest.raises(DataError, match="no space left on the device"):
        record.atomic_write(target, torch_full)
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_run_store_on_a_full_disk_names_it_keeps_the_last_checkpoint_and_resumes(store, monkeypatch):
    """End to end: the disk fills while a run writes its second checkpoint (torch.save's bare "unexpected
    pos" error). The run stops with the full disk named, no temporary file anywhere in the store, the first
    checkpoint intact; with space again the same command resumes and finishes the run."""
    cfg = from_dict(user_run(store))
    real_save, saves = trainer.torch.save, []

    def save_until_full(obj, path, *args, **kwargs):
        saves.append(path)
        if len(saves) == 2:
            Path(path).write_bytes(b"half a checkpoint")
            raise RuntimeError("unexpected pos 350784 vs 350672")
        return real_save(obj, path, *args, **kwargs)

    with monkeypatch.context() as full_disk, pytest.raises(DataError, match=r"checkpoint.*: no space left"):
        full_disk.setattr(trainer.torch, "save", save_until_full)
        full_disk.setattr(record.shutil, "disk_usage", lambda path: shutil_usage(free=0))
        runs.run(cfg)
    assert not list((store / "runs").rglob("*.tmp"))
    (checkpoint,) = (store / "runs").rglob("checkpoint.pt")  # the first one, whole
    assert (
        predict.load_weights(checkpoint, trainer.torch.device("cpu"))["state"]["step"]
        == cfg.train.checkpoint_interval
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy columns are not real German and English
        summary = runs.run(cfg)
    assert summary.status == "finished" and summary.steps == cfg.train.steps
    assert len(list((store / "runs").iterdir())) == 1


def shutil_usage(free: int):
    import collections

    return collections.namedtuple("usage", "total used free")(10**9, 10**9 - free, free)
