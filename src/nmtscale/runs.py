"""The run store, the results store and sweeps: every run is trained at most once, and its record is kept.

`run(config)` returns the run's summary from its record in the results store (`results/<run id>.json`,
committed: see `nmtscale.record`) when there is one, never training it again; otherwise it trains the run in
its directory `runs/<run id>/` (resuming from its checkpoint) and writes its record. Outputs of a run's final
model (`translations`, `stored_output`) are kept beside its record, so a reader with the results store needs
no model; when one is needed and missing, the run is trained again first.

A run directory holds `config.yaml`, `metrics.jsonl`, `checkpoint.pt` (while training), `model.pt` and
`tokenizer.model` (the final model and its vocabulary) and `summary.json`, written last and atomically: a run
with a summary is done (finished or failed) and asking for it again returns the summary at once; a run
without one resumes from its checkpoint. A lock file keeps two processes from training the same run at once.

The run store's root is `<repository>/runs`, or `$NMTSCALE_RUNS`; caches (tokenizers) live under
`<repository>/cache`, or `$NMTSCALE_CACHE`. With `NMTSCALE_RETRAIN=1` (`--retrain`) both stores default to a
scratch folder, `<repository>/retrain/{runs,results}`: every run is trained again there, and
`nmtscale results compare results retrain/results` checks the reproduction.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import yaml
from tqdm import tqdm

from nmtscale import cluster, pool, record
from nmtscale.config import (
    KEYS_ADDED_LATER,
    DataConfig,
    EvalConfig,
    RunConfig,
    from_dict,
    from_stored,
    load_config,
    read_yaml,
    set_keys,
    to_dict,
)
from nmtscale.corpus.store import corpus_fingerprint, files_fingerprint
from nmtscale.engine.data import check_lengths, encode_sources, prepare_data, uses_target_tags
from nmtscale.engine.tokenizer import Tokenizer
from nmtscale.errors import ConfigurationError, DataError, SweepError, closest, positive_int, require_file
from nmtscale.predict import load_trained_model, pick_device, translate_ids
from nmtscale.record import (
    CHECKPOINT,
    CONFIG,
    ENGINE_VERSION,
    MODEL,
    REPOSITORY,
    SUMMARY,
    TOKENIZER,
    RunSummary,
    atomic_write_text,
    results_root,
    retrain_store,
    retraining,
    runs_root,
    store_directory,
)
from nmtscale.train import train

SWEEP_KEYS = ("base", "set", "grid", "runs", "workers", "threads_per_run")
ENGINES = ("local", "ray")


def use_stores(runs_dir: str | Path, results_dir: str | Path) -> None:
    """Point this process, and the workers it starts, at a run store and a results store (what a chapter's
    `runs_dir` and `results_dir` parameters name). When retraining, both move under `retrain/`, so the
    committed records are neither read nor overwritten."""
    for variable, key, path in (
        ("NMTSCALE_RUNS", "runs_dir", runs_dir),
        ("NMTSCALE_RESULTS", "results_dir", results_dir),
    ):
        os.environ[variable] = str(retrain_store(path) if retraining() else store_directory(path, key))


def cache_root() -> Path:
    """Where caches live: `$NMTSCALE_CACHE`, else `<repository>/cache`."""
    return Path(os.environ.get("NMTSCALE_CACHE", REPOSITORY / "cache"))


def config_hash(cfg: RunConfig) -> str:
    """The run id: a short content hash of the canonical config and the engine version; equal configs, and
    only those, share a run directory and a record.

    A run that reads the committed corpus also hashes the corpus files, and a run that reads user files
    (`data.train_files`, `data.test_files`) hashes their contents, so changed data gives a new run instead of
    silently returning, or resuming, one trained on other text.
    """
    identity = {**to_dict(cfg), "engine_version": ENGINE_VERSION}
    for dotted, legacy in KEYS_ADDED_LATER.items():
        section, key = dotted.split(".")
        if identity[section][key] == legacy:
            del identity[section][key]
    if cfg.data.train_files is None or cfg.data.test_sets:
        identity["corpus_sha256"] = corpus_fingerprint()
    user_files = user_data_files(cfg.data)
    if user_files:
        try:
            identity["user_data_sha256"] = files_fingerprint(path for _, path in user_files)
        except DataError as err:
            keys = sorted({key for key, path in user_files if str(path) in str(err)})
            raise DataError(f"{', '.join(keys)}: {err}") from None
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def user_data_files(cfg: DataConfig) -> list[tuple[str, Path]]:
    """(config key, path) of every user data file of a run, in a fixed order (training files by direction,
    then test files by direction and name)."""
    entries = [(f"data.train_files.{d}", paths) for d, paths in sorted((cfg.train_files or {}).items())]
    for direction, sets in sorted((cfg.test_files or {}).items()):
        entries += [(f"data.test_files.{direction}.{name}", paths) for name, paths in sorted(sets.items())]
    return [(key, Path(p)) for key, paths in entries for p in ([paths] if isinstance(paths, str) else paths)]


# The folder of a run store holding the trunk snapshots of "constant_cooldown" runs, one folder per trunk_key.
TRUNKS = "_trunks"


def trunk_key(cfg: RunConfig) -> str | None:
    """For a "constant_cooldown" run: the id of its trunk, the runs that differ from it only in their budget
    (`train.steps`, `train.cooldown_fraction`), in when they checkpoint or in how they are evaluated (the
    `eval` section), and so follow the same path until their cool-downs begin. None for other schedules, and
    for runs averaging checkpoints (`train.average_last`), whose averages would reach into the trunk.

    A run starts from the snapshots saved when it starts. A local sweep trains the runs of one trunk one after
    another, shortest budget first (`trunk_chains`), so each pays only for its stretch past the previous one
    and its cool-down; on Ray they train side by side, each from the latest snapshot there is then.
    """
    train = cfg.train
    if train.schedule != "constant_cooldown" or train.average_last:
        return None
    shared = dataclasses.replace(train, steps=1, cooldown_fraction=1.0, checkpoint_interval=1)
    return config_hash(dataclasses.replace(cfg, train=shared, eval=EvalConfig()))


def run_dir(cfg: RunConfig, root: str | Path | None = None) -> Path:
    """The directory of the run described by `cfg` in the store at `root` (default: `runs_root()`)."""
    return (Path(root) if root else runs_root()) / config_hash(cfg)


def load_summary(directory: Path) -> RunSummary | None:
    """The summary of a done run, or None when the run has not finished.

    A summary that cannot be read, or that names another run than its directory (a copied or edited file),
    is a DataError naming the file: it is never returned as this run's result.
    """
    path = directory / SUMMARY
    if not path.exists():
        return None
    try:
        summary = RunSummary.from_json(path.read_text(encoding="utf-8"))
    except (ValueError, TypeError, UnicodeDecodeError) as err:
        raise DataError(
            f"{path}: not a readable run summary ({type(err).__name__}: {err}); delete it to train the run "
            "again"
        ) from None
    if summary.run_id != directory.name:
        raise DataError(
            f"{path}: holds run {summary.run_id!r}, not {directory.name!r} (copied or edited?); delete it to "
            "train the run again"
        )
    return summary


def run(
    cfg: RunConfig, root: str | Path | None = None, threads: int | None = None, progress: bool | None = None
) -> RunSummary:
    """The summary of the run `cfg`: from its record when the results store has one, else trained in the run
    store at `root` (resuming if interrupted; a run done there before is read) and recorded."""
    if threads is not None and threads < 1:
        raise ConfigurationError(f"threads must be a positive number of CPU threads, not {threads}")
    summary = recorded_summary(cfg)
    if summary is None:
        summary = _trained(cfg, run_dir(cfg, root), threads, progress)
        record.write_record(summary, threads, results_root())
    return summary


def recorded_summary(cfg: RunConfig) -> RunSummary | None:
    """The summary in the record of run `cfg`, or None when the results store has none. A record that is
    damaged, of another engine version, or whose config is not `cfg` is a DataError naming the file."""
    path = record.record_path(config_hash(cfg), results_root())
    if not path.exists():
        return None
    summary = record.read_record(path)["summary"]
    # a record written before a key was added (`config.KEYS_ADDED_LATER`) reads with the value it trained with
    try:
        stored = to_dict(from_stored(summary.config, str(path)))
    except ConfigurationError as err:
        raise DataError(f"{path}: its config does not load: {err}") from None
    if json.loads(json.dumps(stored)) != json.loads(json.dumps(to_dict(cfg))):
        raise DataError(
            f"{path}: its config is not the config of run {path.stem} (edited?); restore it from git or "
            "delete it to train the run again"
        )
    return summary


def _trained(cfg: RunConfig, directory: Path, threads: int | None, progress: bool | None) -> RunSummary:
    """The summary of the run in `directory`: read when the run is done, else trained (resuming)."""
    summary = load_summary(directory)
    if summary is not None:
        if summary.finished:  # a kill between the summary's write and the checkpoint's removal left it
            (directory / CHECKPOINT).unlink(missing_ok=True)
        return summary
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"run {directory.name}: another process is training it; waiting for it", file=sys.stderr)
            fcntl.flock(lock, fcntl.LOCK_EX)  # released by the kernel even on kill -9
        summary = load_summary(directory)  # another process may have finished it while we waited
        if summary is not None:
            return summary
        for stale in directory.glob(".*.tmp"):  # half-written by a process killed mid-write; we hold the lock
            stale.unlink()
        if threads is not None:
            torch.set_num_threads(threads)
        atomic_write_text(directory / CONFIG, yaml.safe_dump(to_dict(cfg), sort_keys=False))
        try:
            data = prepare_data(cfg.data, cache_root())
            check_lengths(data, cfg.data, cfg.train.max_tokens)
        except Exception:
            if {p.name for p in directory.iterdir()} <= {CONFIG, ".lock"}:
                shutil.rmtree(directory)  # nothing trained yet: leave no empty run behind
            raise
        shutil.copyfile(data.tokenizer.model_path, directory / TOKENIZER)
        key = trunk_key(cfg)
        trunk = None if key is None else directory.parent / TRUNKS / key
        summary = train(cfg, directory, data, progress, trunk)
        atomic_write_text(directory / SUMMARY, summary.to_json())
        if summary.finished:
            (directory / CHECKPOINT).unlink(missing_ok=True)
        return summary


def model_directory(summary: RunSummary) -> Path:
    """The run directory holding the final model of the finished run `summary`. A run known only from its
    record (a fresh clone) is trained again first, and how far it ends from its record is printed: training
    is deterministic on one machine, but another CPU's kernels round differently, so the model is that
    config's trained here, not the record's bit for bit."""
    if not summary.finished:
        raise ConfigurationError(f"run {summary.run_id} {summary.status}: {summary.reason}; it has no model")
    directory = runs_root() / summary.run_id
    if not (directory / MODEL).exists():
        print(
            f"run {summary.run_id}: its model is not in {runs_root()} (the results store keeps none); "
            "training it again",
            file=sys.stderr,
        )
        again = _trained(from_stored(summary.config), directory, None, None)
        print(retrained_report(summary, again), file=sys.stderr)
    return directory


def retrained_report(recorded: RunSummary, again: RunSummary) -> str:
    """How far a run trained again for its model ends from its record: the largest difference of final
    losses (nats) and the test set it is on."""
    gaps = {key: again.final_loss[key] - loss for key, loss in recorded.final_loss.items()}
    key = max(gaps, key=lambda k: abs(gaps[k]))
    return (
        f"run {recorded.run_id}: trained again, it ends within {abs(gaps[key]):.4f} nats of its record "
        f"(largest on {key}: {again.final_loss[key]:.4f} against {recorded.final_loss[key]:.4f}); "
        "outputs computed from its model come from this one"
    )


def tokenizer(summary: RunSummary) -> Tokenizer:
    """The tokenizer of a run: its run directory's copy, else the same one rebuilt (cached) from its data."""
    path = runs_root() / summary.run_id / TOKENIZER
    if path.exists():
        return Tokenizer(path)
    return prepare_data(from_stored(summary.config).data, cache_root()).tokenizer


def target_tagged(summary: RunSummary) -> bool:
    """Whether a run's sources begin with the target-language tag (`DataConfig.target_tags`; a record from
    before that key has its default)."""
    data = summary.config["data"]
    return uses_target_tags(data["directions"], data.get("target_tags"))


def stored_output(summary: RunSummary, name: str, compute: Callable[[Path], Any]) -> Any:
    """An output of the final model of run `summary`, kept beside its record as `<run id>/<name>.json.gz`:
    read when stored, else `compute(model_directory)` once and stored (JSON values)."""
    path = record.output_path(summary.run_id, name, results_root())
    if not path.exists():
        record.write_output(path, compute(model_directory(summary)))
    return record.read_output(path)


def translations(
    summary: RunSummary,
    texts: Sequence[str],
    direction: str | None = None,
    beam_size: int = 1,
    length_penalty: float = 1.0,
) -> list[str]:
    """`translate_texts` with the final model of run `summary`, kept in the results store by the texts'
    content and the search settings (so equal requests never decode twice, and a reader needs no model)."""
    request = json.dumps([list(texts), direction, beam_size, length_penalty])
    name = f"translations-{hashlib.sha256(request.encode()).hexdigest()[:16]}"
    return stored_output(
        summary, name, lambda d: translate_texts(d, texts, direction, beam_size, length_penalty)
    )


def _run_job(cfg: RunConfig, root: str | Path | None, threads: int) -> RunSummary:
    """One sweep job; a separate function so that any executor can ship it to a worker."""
    return run(cfg, root, threads, progress=False)


def sweep(
    configs: Sequence[RunConfig],
    workers: int = 1,
    threads_per_run: int = 1,
    root: str | Path | None = None,
    engine: str = "local",
    address: str | None = None,
) -> list[RunSummary]:
    """Summaries of every run in `configs`, in input order, training the missing ones on `engine`.

    Identical configs are trained once; recorded runs are read at once. A progress bar counts the runs to
    train (with the time left) and a line reports each run as it ends. `engine` is "local" (a pool of
    `workers` processes on this machine, see `_train_locally`) or "ray" (Ray tasks on the cluster at
    `address`, else `$RAY_ADDRESS`, else one started here; see `nmtscale.cluster`).
    """
    if engine not in ENGINES:
        raise ConfigurationError(
            f"engine must be one of {list(ENGINES)}, not {engine!r}" + closest(engine, ENGINES)
        )
    unique = {config_hash(cfg): cfg for cfg in configs}
    done: dict[str, RunSummary] = {}
    for key, cfg in unique.items():
        summary = recorded_summary(cfg)
        if summary is not None:
            done[key] = summary
    pending = {key: cfg for key, cfg in unique.items() if key not in done}
    warn_of_mixed_devices(done.values(), len(pending))
    # a bar on a terminal; in a log or a notebook, one line per run with the time left
    bar = tqdm(total=len(pending), desc="runs to train", unit="run", disable=None if pending else True)
    start = time.perf_counter()

    def finished(key: str, summary: RunSummary) -> None:
        done[key] = summary
        bar.update()
        trained = len(done) - (len(unique) - len(pending))
        left = (time.perf_counter() - start) / trained * (len(pending) - trained)
        bar.write(
            f"[{trained}/{len(pending)} trained, ~{left / 60:.0f} min left] {_summary_line(summary)}",
            sys.stderr,
        )

    try:
        if pending and engine == "ray":
            cluster.train_on_ray(
                _run_job, pending, root, threads_per_run, workers, cache_root(), finished, address
            )
        elif pending:
            _train_locally(pending, workers, threads_per_run, root, finished)
    finally:
        bar.close()
    return [done[config_hash(cfg)] for cfg in configs]


def warn_of_mixed_devices(recorded: Iterable[RunSummary], pending: int) -> None:
    """Warn when `pending` runs are to train on this machine's kind of device beside `recorded` runs of the
    same sweep that another kind trained. A run id names a config, not a device, but the two do not train the
    same run: chapter 3's runs trained again on an H100 ended 0.002-0.055 nats above their fp32 CPU-trained
    records, up to 11 seed std (`benchmarks/device_numerics.py`), so a comparison across the two measures the
    device too."""
    device = pick_device().type
    others = sorted({summary.device for summary in recorded} - {device})
    if pending and others:
        warnings.warn(
            f"{pending} runs train on {device} beside runs of this sweep recorded on {', '.join(others)}: "
            "runs of one config trained on cuda and on cpu differ by up to 11 seed std "
            "(benchmarks/device_numerics.py); compare runs trained on one kind of device",
            stacklevel=3,
        )


def trunk_chains(configs: dict[str, RunConfig]) -> list[list[str]]:
    """The run ids of `configs` (keyed by run id) in the order they are to be trained: each run alone, in
    input order, but the runs of one trunk (`trunk_key`) as one chain, shortest budget first, so that each
    starts from the snapshot the one before it saved."""
    chains: dict[str, list[str]] = {}
    for key, cfg in configs.items():
        chains.setdefault(trunk_key(cfg) or key, []).append(key)
    return [sorted(chain, key=lambda key: configs[key].train.steps) for chain in chains.values()]


def _hand_out(
    workers_pool: Any,
    futures: dict[Future, list[str]],
    chain: list[str],
    configs: dict[str, RunConfig],
    root: str | Path | None,
    threads_per_run: int,
) -> bool:
    """Submit the first run of `chain` to the pool, its future keyed to the chain in `futures`; False when the
    pool is broken (a worker died while runs were being handed out)."""
    try:
        futures[workers_pool.submit(_run_job, configs[chain[0]], root, threads_per_run)] = chain
    except BrokenProcessPool:
        return False
    return True


def _train_locally(
    configs: dict[str, RunConfig],
    workers: int,
    threads_per_run: int,
    root: str | Path | None,
    finished: Callable[[str, RunSummary], None],
) -> None:
    """Train `configs` (keyed by run id) in this process, or in a pool of `workers` spawned processes.

    Each run is a job of its own, but the runs of one trunk (`trunk_chains`) are handed out one after
    another. A worker process that dies (killed, out of memory) breaks the pool, so a new pool is started for
    the runs not finished, which resume from their checkpoints; a SweepError names them only when pools die
    twice in a row before any run finishes. Workers end themselves when this process is gone.
    """
    if workers <= 1:
        for chain in trunk_chains(configs):
            for key in chain:
                finished(key, _run_job(configs[key], root, threads_per_run))
        return
    left = dict(configs)
    fruitless = 0  # pools in a row that died before finishing any run
    while left:
        left_before = len(left)
        broken = False
        with pool.spawn_pool(workers, threads_per_run) as workers_pool:
            futures: dict[Future, list[str]] = {}
            job = (left, root, threads_per_run)
            for chain in trunk_chains(left):
                if not _hand_out(workers_pool, futures, chain, *job):
                    broken = True
                    break
            while futures:
                for future in wait(futures, return_when=FIRST_COMPLETED).done:
                    chain = futures.pop(future)
                    try:
                        summary = future.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    finished(chain[0], summary)
                    del left[chain[0]]
                    if len(chain) > 1 and not broken:
                        broken = not _hand_out(workers_pool, futures, chain[1:], *job)
        if broken:
            fruitless = fruitless + 1 if len(left) == left_before else 0
            if fruitless == 2:
                raise SweepError(
                    f"sweep stopped: worker processes died (killed, or out of memory?) twice in a row before "
                    f"any run finished; not finished: {list(left)}. The {len(configs) - len(left)} runs "
                    "finished here are stored, and running the sweep again resumes the others from their "
                    "checkpoints"
                )
            tqdm.write(
                f"sweep: a worker process died; restarting the pool for the {len(left)} runs not finished "
                "(they resume from their checkpoints)",
                file=sys.stderr,
            )


def failed_runs(table: pd.DataFrame, label: str) -> pd.DataFrame:
    """The failed runs of a run table (one row per run and test set, with `status` and `reason`): one row
    each, with its `label` column, run id and reason. Their losses are NaN, so every fit leaves them out."""
    failed = table[table["status"] != "finished"]
    return failed[[label, "run_id", "reason"]].drop_duplicates("run_id").reset_index(drop=True)


def load_sweep(path: str | Path) -> tuple[list[RunConfig], dict[str, int]]:
    """The run configs of a sweep file and its pool settings ({'workers', 'threads_per_run'}).

    A sweep file names a `base` run config (relative to the sweep file), common overrides in `set`, and
    either a `grid` (every combination of the listed values) or `runs` (a list of override mappings).
    """
    path = Path(path)
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{path}: a sweep file is a mapping with keys {list(SWEEP_KEYS)}")
    for key in raw:
        if key not in SWEEP_KEYS:
            raise ConfigurationError(f"{path}: unknown sweep key {key!r}" + closest(str(key), SWEEP_KEYS))
    if "grid" in raw and "runs" in raw:
        raise ConfigurationError(f"{path}: give either 'grid' or 'runs', not both")
    base_raw = (read_yaml(path.parent / str(raw["base"])) or {}) if "base" in raw else {}
    common = _mapping(raw.get("set") or {}, path, "set")
    if "grid" in raw:
        grid = raw["grid"]
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise ConfigurationError(f"{path}: grid must map keys to non-empty lists of values")
        variants = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    else:
        variants = raw.get("runs", [{}])
        if variants == []:
            raise ConfigurationError(f"{path}: runs is empty; list at least one run, or leave the key out")
        if not isinstance(variants, list):
            raise ConfigurationError(f"{path}: runs must be a list of mappings of section.key: value")
    configs = []
    for i, variant in enumerate(variants):
        changes = {**common, **_mapping(variant, path, f"runs[{i}]")}
        configs.append(from_dict(set_keys(base_raw, changes, str(path)), str(path)))
    pool = {key: raw.get(key, 1) for key in ("workers", "threads_per_run")}
    for key, value in pool.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigurationError(f"{path}: {key} must be a positive integer, not {value!r}")
    return configs, pool


def _mapping(value: Any, path: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{path}: {where} must be a mapping of section.key: value")
    return value


def find_run(name: str) -> Path:
    """The directory holding the final model of a run, from a run id (of the run or results store), a run
    directory path, or a run config file; a run known only from its record is trained again first."""
    candidate = Path(name)
    if candidate.is_dir():
        return candidate
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        cfg = load_config(candidate)
        return model_directory(run(cfg))
    if (runs_root() / name).is_dir():
        return runs_root() / name
    path = record.record_path(name, results_root())
    if path.exists():
        return model_directory(record.read_record(path)["summary"])
    raise ConfigurationError(
        f"{name}: not a run id in {runs_root()} or {results_root()}, a run directory or a run config file"
    )


def translate_texts(
    directory: Path,
    texts: Sequence[str],
    direction: str | None = None,
    beam_size: int = 1,
    length_penalty: float = 1.0,
) -> list[str]:
    """Translate `texts` with the final model of the finished run in `directory`."""
    summary = load_summary(directory)
    if summary is None or not summary.finished:
        raise ConfigurationError(f"{directory}: the run has not finished; train it first")
    directions = summary.config["data"]["directions"]
    translatable = directions + summary.config["data"]["eval_directions"]
    direction = direction or directions[0]
    if direction not in translatable:
        raise ConfigurationError(
            f"{directory}: the run was not trained or evaluated on direction {direction!r}: {translatable}"
            + closest(direction, translatable)
        )
    tokenizer = Tokenizer(directory / TOKENIZER)
    model = load_trained_model(directory)
    sources = encode_sources(tokenizer, texts, direction, target_tagged(summary))
    method = "beam" if beam_size > 1 else "greedy"
    return tokenizer.decode(translate_ids(model, sources, method, beam_size, length_penalty))


def _train_command(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.set)
    summary = run(cfg, threads=args.threads)
    print(_summary_line(summary))
    return 0 if summary.finished else 1


def _sweep_command(args: argparse.Namespace) -> int:
    configs, pool = load_sweep(args.sweep)
    workers = args.workers if args.workers is not None else pool["workers"]
    threads = args.threads if args.threads is not None else pool["threads_per_run"]
    summaries = sweep(configs, workers, threads, engine=args.engine, address=args.address)
    for summary in summaries:
        print(_summary_line(summary))
    return 0 if all(s.finished for s in summaries) else 1


def _translate_command(args: argparse.Namespace) -> int:
    directory = find_run(args.run)
    if args.input:
        require_file(Path(args.input), ConfigurationError)
    texts = (Path(args.input).read_text() if args.input else sys.stdin.read()).splitlines()
    for line in translate_texts(directory, texts, args.direction, args.beam, args.length_penalty):
        print(line)
    return 0


def _summary_line(summary: RunSummary) -> str:
    losses = ", ".join(f"{name} {loss:.4f}" for name, loss in summary.final_loss.items())
    status = summary.status if summary.finished else f"{summary.status}: {summary.reason}"
    return (
        f"{summary.run_id}  {status}  steps {summary.steps}  "
        f"non-embedding params {summary.n_params_non_embedding:,}  final loss: {losses or '-'}  "
        f"({summary.wall_time_s:.0f} s on {summary.device})"
    )


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """The `train`, `sweep` and `translate` commands."""
    parser = subparsers.add_parser("train", help="train one run (or return its stored summary)")
    parser.add_argument("config", help="run config YAML (see params/example_run.yaml)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key"
    )
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads")
    parser.set_defaults(func=_train_command)

    parser = subparsers.add_parser("sweep", help="train every run of a sweep file in a pool of workers")
    parser.add_argument("sweep", help="sweep YAML: base, set, grid or runs, workers, threads_per_run")
    parser.add_argument("--workers", type=positive_int, help="worker processes (overrides the sweep file)")
    parser.add_argument(
        "--threads", type=positive_int, help="torch threads per run (overrides the sweep file)"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: a process pool on this machine; ray: Ray tasks on a cluster (see nmtscale.cluster)",
    )
    parser.add_argument(
        "--address", help="the Ray cluster's HOST:PORT (default: $RAY_ADDRESS, else a cluster started here)"
    )
    parser.set_defaults(func=_sweep_command)

    parser = subparsers.add_parser("translate", help="translate stdin or a file with a finished run's model")
    parser.add_argument("run", help="run id, run directory or run config YAML")
    parser.add_argument("--input", help="file with one source sentence per line (default: stdin)")
    parser.add_argument("--direction", help="e.g. en-de (default: the run's first direction)")
    parser.add_argument("--beam", type=positive_int, default=1, help="beam size; 1 is greedy search")
    parser.add_argument(
        "--length-penalty", type=float, default=1.0, help="beam length normalisation exponent"
    )
    parser.set_defaults(func=_translate_command)
