"""What a finished run leaves behind for the analyses: its `RunSummary`, its record in the results store, and
the outputs later computed from its final model.

The results store (`<repository>/results`, committed; `nmtscale.runs.results_root`) holds one record per
done run, `<run id>.json`: the summary (canonical config, final losses, curves, parameter and FLOP counts,
tokens seen, wall time), the engine version and the provenance of the machine that trained it. Outputs
computed from a run's final model (translations, re-evaluations) live beside it, gzip-compressed, in
`<run id>/<name>.json.gz`. `results/README.md` documents every field.

`ENGINE_VERSION` enters every run id: a record is only valid for the training code that produced it. Bump it
whenever a change to the model, trainer, batching or data code moves training numerics (the golden-run test,
`tests/test_golden_run.py`, fails until you do).
"""

from __future__ import annotations

import dataclasses
import datetime
import errno
import gzip
import json
import math
import os
import platform
import shutil
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmtscale.errors import DataError

ENGINE_VERSION = 2  # 1: every run trained before the results store (its run ids did not hold a version)
RECORD_FORMAT = 1
REPOSITORY = Path(__file__).resolve().parents[2]
RETRAIN_DIR = "retrain"  # the scratch stores of NMTSCALE_RETRAIN=1
RECORD_KEYS = ("engine_version", "format", "provenance", "run_id", "summary")
STATUSES = ("finished", "failed")
# the files of a run directory (see `runs`): its config, the resumable checkpoint, the log, the final model,
# its vocabulary and the summary, written last
CONFIG = "config.yaml"
CHECKPOINT = "checkpoint.pt"
METRICS_LOG = "metrics.jsonl"
MODEL = "model.pt"
TOKENIZER = "tokenizer.model"
SUMMARY = "summary.json"


@dataclass
class RunSummary:
    """What a run measured; stored as `summary.json` in its run directory. Test sets are keyed 'en-de/dev'."""

    run_id: str  # the config hash, also the run directory's name
    status: str  # "finished" or "failed"
    reason: str | None  # why a failed run failed
    config: dict[str, Any]  # the canonical config (`nmtscale.config.to_dict`)
    steps: int  # updates done
    final_loss: dict[str, float]  # median test loss over the last eval.final_fraction of training
    averaged_loss: dict[str, float] | None  # test loss of the averaged checkpoints (train.average_last > 0)
    # one point per evaluation: step, target_tokens, train_objective (mean since the previous point),
    # test_loss per test set and, every eval.decode_interval updates, translation scores
    curves: list[dict[str, Any]]
    n_params: int
    n_params_non_embedding: int  # the papers' N
    flops_per_target_token: float  # training FLOPs at the mean training sentence lengths
    training_flops: float
    tokens_seen: dict[str, int]  # target tokens (with EOS) trained on, per direction
    wall_time_s: float  # time in the training loop, summed over resumptions
    device: str
    translation: dict[str, dict[str, Any]] | None = None  # BLEU, chrF, off-target rate of the final model
    test_set_sizes: dict[str, int] = field(default_factory=dict)  # sentences per test set
    # median training throughput (target tokens/s) after the first 10% of the updates; None before any update
    tokens_per_s: float | None = None
    # {"run_id", "step"}: the run whose trunk snapshot this "constant_cooldown" run started from (its curves
    # and wall time up to that step are that run's); None for a run trained from step 0
    branched_from: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def test_set_keys(self) -> list[str]:
        """Every test set the run evaluates ('en-de/dev'), also for a failed run that has no final loss."""
        keys = list(self.final_loss) or list(self.test_set_sizes)
        return keys or sorted({key for point in self.curves for key in point["test_loss"]})

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> RunSummary:
        return cls(**json.loads(text))


# Free bytes below which a failed write is put down to a full disk (torch.save says only "unexpected pos").
FULL_DISK_BYTES = 1 << 20


def atomic_write(path: Path, write: Callable[[Path], Any]) -> None:
    """`write(tmp)` a temporary file beside `path`, then rename: a crash never leaves a half-written file.
    A write that fails (a full disk included, named as such) removes its temporary file and leaves `path`
    as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        tmp.unlink(missing_ok=True)
        full = (
            getattr(err, "errno", None) == errno.ENOSPC
            or shutil.disk_usage(path.parent).free < FULL_DISK_BYTES
        )
        if full:
            raise DataError(
                f"{path}: no space left on the device; the file was not written and its previous version, if "
                "any, is intact. Free some space and run again: finished work is kept, unfinished runs resume"
            ) from None
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to a temporary file in the same directory, then rename it over `path`."""
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


# ----------------------------------------------------------------------------------------------------------
# The results store


def retraining() -> bool:
    """True when `NMTSCALE_RETRAIN` asks to train every run again, into the scratch stores."""
    return os.environ.get("NMTSCALE_RETRAIN", "").lower() not in ("", "0", "false")


def runs_root() -> Path:
    """Where run directories live: `$NMTSCALE_RUNS`, else `<repository>/runs` (`retrain/runs` when
    retraining)."""
    return _store_root("NMTSCALE_RUNS", "runs")


def results_root() -> Path:
    """Where run records live: `$NMTSCALE_RESULTS`, else `<repository>/results` (`retrain/results` when
    retraining)."""
    return _store_root("NMTSCALE_RESULTS", "results")


def _store_root(variable: str, name: str) -> Path:
    default = retrain_store(name) if retraining() else REPOSITORY / name
    return store_directory(os.environ.get(variable, default), f"${variable}")


def store_directory(path: str | Path, key: str) -> Path:
    """`path` as a store's directory (it may not exist yet), or a DataError naming `key` (the parameter or
    environment variable that gave it) when something that is not a directory stands in its way."""
    path = Path(path)
    blocking = next((p for p in (path, *path.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise DataError(
            f"{key}={path}: {blocking} is a file, not a directory; name a directory for the store"
        )
    return path


def retrain_store(path: str | Path) -> Path:
    """Where a retraining keeps the store that is `path` otherwise: `retrain/<path>` for a store in the
    repository (or a relative path), `<path>-retrain` beside a store elsewhere."""
    path = Path(path)
    if not path.is_absolute():
        return REPOSITORY / RETRAIN_DIR / path
    if path.is_relative_to(REPOSITORY):
        return REPOSITORY / RETRAIN_DIR / path.relative_to(REPOSITORY)
    return path.with_name(f"{path.name}-retrain")


def record_path(run_id: str, root: str | Path) -> Path:
    return Path(root) / f"{run_id}.json"


def provenance(threads: int | None) -> dict[str, Any]:
    """The machine and software that trained a run (written when its record is)."""
    import torch  # only here: reading records must not need torch's import time

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "cpu": cpu_model(),
        "cpu_native_bf16": cpu_has_native_bf16(),  # train.cpu_precision bf16 ran in bf16 only where True
        "gpu": gpu,
        "threads": threads,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_has_native_bf16() -> bool:
    """Whether the CPU multiplies bf16 natively: avx512_bf16 or AMX among /proc/cpuinfo's flags (False
    where there is no such file)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return bool({"avx512_bf16", "amx_bf16"} & set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return False


def write_record(summary: RunSummary, threads: int | None, root: str | Path) -> Path:
    """Write the record of a done run (atomically; an existing record of the same run is replaced)."""
    path = record_path(summary.run_id, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "format": RECORD_FORMAT,
        "run_id": summary.run_id,
        "engine_version": ENGINE_VERSION,
        "provenance": provenance(threads),
        "summary": dataclasses.asdict(summary),
    }
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def read_record(path: Path, engine_version: int | None = ENGINE_VERSION) -> dict[str, Any]:
    """The record at `path`, checked: readable JSON of the record format, its run id the file's name and its
    summary's, and (unless `engine_version` is None) written by this engine version. Anything else is a
    DataError naming the file: a damaged record is never used."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or sorted(record) != sorted(RECORD_KEYS):
            keys = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise ValueError(f"expected the keys {list(RECORD_KEYS)}, found {keys}")
        if record["format"] != RECORD_FORMAT:
            raise ValueError(f"record format {record['format']!r}; this code reads format {RECORD_FORMAT}")
        summary = RunSummary(**record["summary"])
    except (ValueError, TypeError, UnicodeDecodeError) as err:
        raise DataError(
            f"{path}: not a readable run record ({type(err).__name__}: {err}); restore it from git "
            "(`git checkout -- <file>`) or delete it to train the run again"
        ) from None
    if not (record["run_id"] == summary.run_id == path.stem):
        raise DataError(
            f"{path}: holds run {record['run_id']!r} (summary: {summary.run_id!r}), not {path.stem!r} "
            "(copied or renamed?); delete it to train the run again"
        )
    if engine_version is not None and record["engine_version"] != engine_version:
        raise DataError(
            f"{path}: written by engine version {record['engine_version']}, and this code is engine version "
            f"{engine_version}; its numbers are not this code's. Delete it to train the run again"
        )
    problem = summary_problem(summary)
    if problem:
        raise DataError(
            f"{path}: {problem} (edited by hand?); restore it from git (`git checkout -- <file>`) or "
            "delete it to train the run again"
        )
    record["summary"] = summary
    return record


def last_stretch(
    curves: Sequence[dict[str, Any]], total_steps: int, final_fraction: float
) -> list[dict[str, Any]]:
    """The evaluations of a run's curve in the last `final_fraction` of its `total_steps`."""
    start = total_steps * (1 - final_fraction)
    return [point for point in curves if point["step"] >= start]


def final_loss(curves: Sequence[dict[str, Any]], key: str, total_steps: int, final_fraction: float) -> float:
    """Median of a test set's evaluations over the last `final_fraction` of training."""
    losses = [point["test_loss"][key] for point in last_stretch(curves, total_steps, final_fraction)]
    if not losses:
        raise ValueError(f"no evaluation of {key} in the last {final_fraction:.0%} of {total_steps} steps")
    return statistics.median(losses)


def summary_problem(summary: RunSummary) -> str:
    """What makes a stored summary inconsistent ("" when nothing does): a status other than finished or
    failed, a field of the wrong type, or final losses other than those its own curves give."""
    if summary.status not in STATUSES:
        return f"summary.status is {summary.status!r}, not one of {list(STATUSES)}"
    counts = ("steps", "n_params", "n_params_non_embedding")
    for name in counts:
        value = getattr(summary, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"summary.{name} is {value!r}, not a count"
    for name, losses in (("final_loss", summary.final_loss), ("averaged_loss", summary.averaged_loss or {})):
        for key, value in losses.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                return f"summary.{name}.{key} is {value!r}, not a number"
    if not summary.finished:
        return "summary.final_loss is set for a failed run" if summary.final_loss else ""
    try:
        steps, fraction = summary.config["train"]["steps"], summary.config["eval"]["final_fraction"]
        expected = {key: final_loss(summary.curves, key, steps, fraction) for key in summary.final_loss}
    except (KeyError, TypeError, ValueError) as err:
        return f"summary.curves do not give its final losses ({type(err).__name__}: {err})"
    for key, value in summary.final_loss.items():
        if not math.isclose(value, expected[key], rel_tol=1e-12, abs_tol=0.0):
            return f"summary.final_loss.{key} is {value!r}, but its curves give {expected[key]!r}"
    return ""


def iter_records(root: str | Path, engine_version: int | None = None) -> Iterator[dict]:
    """Every record of the store at `root`, in run id order (each checked by `read_record`)."""
    for path in sorted(Path(root).glob("*.json")):
        yield read_record(path, engine_version)


# ----------------------------------------------------------------------------------------------------------
# Outputs of a run's final model, stored beside its record


def output_path(run_id: str, name: str, root: str | Path) -> Path:
    return Path(root) / run_id / f"{name}.json.gz"


def read_output(path: Path) -> Any:
    """A stored output; a damaged file is a DataError naming it."""
    try:
        return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as err:
        raise DataError(
            f"{path}: not a readable output ({type(err).__name__}: {err}); delete it to compute it again"
        ) from None


def write_output(path: Path, value: Any) -> None:
    """Store `value` (JSON) gzip-compressed with a fixed timestamp, so equal outputs are equal files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = gzip.compress(json.dumps(value, sort_keys=True).encode("utf-8"), mtime=0)
    atomic_write(path, lambda tmp: tmp.write_bytes(payload))
