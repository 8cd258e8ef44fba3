"""Chapter 2's synthetic training data: the teachers' translations of monolingual text (forward and back),
made once in a process pool and cached as TSV files beside the runs.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from nmtscale import corpus, pool, runs
from nmtscale.errors import ConfigurationError, DataError
from nmtscale.record import RunSummary, atomic_write
from nmtscale.studies.composition.plan import KINDS, MONO_SEED, SyntheticSet


def synthetic_set(
    name: str,
    kind: str,
    teacher: RunSummary,
    n_train: int,
    n_heldout: int,
    root: Path,
    max_length_ratio: float | None = None,
) -> SyntheticSet:
    """The synthetic set of `kind` that the finished run `teacher` makes from the corpus's natural
    monolingual text: `n_train` + `n_heldout` sentences, translated greedily (the translations are kept in
    the results store), written as TSV files under `root` in a folder named by the teacher's run id, the
    sizes and `max_length_ratio` (`synthetic_pair`'s filter; None keeps every non-empty pair)."""
    if kind not in KINDS:
        raise ConfigurationError(f"synthetic set {name!r}: kind {kind!r} is not one of {sorted(KINDS)}")
    if max_length_ratio is not None and not max_length_ratio >= 1:
        raise ConfigurationError(
            f"synthetic set {name!r}: a length ratio of {max_length_ratio} would drop every pair whose sides "
            "differ in length; use a ratio of at least 1, or None to keep every pair"
        )
    direction, mono_lang = KINDS[kind]
    if not teacher.finished:
        raise ConfigurationError(f"synthetic set {name!r}: teacher run {teacher.run_id} {teacher.status}")
    if teacher.config["data"]["directions"] != [direction]:
        raise ConfigurationError(
            f"synthetic set {name!r}: a {kind} set needs a {direction} teacher; run {teacher.run_id} "
            f"translates {teacher.config['data']['directions']}"
        )
    ratio = "" if max_length_ratio is None else f"-ratio{max_length_ratio:g}"
    folder = Path(root) / f"{teacher.run_id}-{kind}-{n_train}-{n_heldout}-greedy{ratio}"
    train_path, heldout_path, meta_path = folder / "train.tsv", folder / "heldout.tsv", folder / "meta.json"
    if not meta_path.exists():
        sentences = mono_sample(mono_lang, n_train + n_heldout)
        translations = runs.translations(teacher, sentences, direction)
        pairs = [
            synthetic_pair(kind, natural, model, max_length_ratio)
            for natural, model in zip(sentences, translations, strict=True)
        ]
        train = [pair for pair in pairs[:n_train] if pair is not None]
        heldout = [pair for pair in pairs[n_train:] if pair is not None]
        folder.mkdir(parents=True, exist_ok=True)
        for path, rows in ((train_path, train), (heldout_path, heldout)):
            atomic_write(path, functools.partial(_write_tsv, rows))
        meta = {
            "train_pairs": len(train),
            "heldout_pairs": len(heldout),
            "dropped": len(pairs) - len(train) - len(heldout),
        }
        atomic_write(meta_path, lambda tmp: Path(tmp).write_text(json.dumps(meta)))
    meta = json.loads(meta_path.read_text())
    return SyntheticSet(name, kind, teacher.run_id, train_path, heldout_path, **meta)


def synthetic_sets(
    requests: Sequence[tuple[str, str, RunSummary]],
    n_train: int,
    n_heldout: int,
    root: Path,
    workers: int = 1,
    max_length_ratio: float | None = None,
) -> list[SyntheticSet]:
    """`synthetic_set` for every (name, kind, teacher run), `workers` teachers decoding at a time in separate
    processes with one torch thread each (as the training sweep runs)."""
    arguments = [
        (name, kind, teacher, n_train, n_heldout, Path(root), max_length_ratio)
        for name, kind, teacher in requests
    ]
    return pool.parallel_map(synthetic_set, arguments, workers)


def synthetic_overview(sets: Sequence[SyntheticSet], examples: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two tables of `synthetic_sets`: one row per set (name, kind, teacher, pairs kept for training and held
    out, pairs dropped), and the first `examples` held-out pairs of each set, English beside German."""
    fields = ("name", "kind", "teacher", "train_pairs", "heldout_pairs", "dropped")
    overview = pd.DataFrame([{k: getattr(x, k) for k in fields} for x in sets])
    samples = pd.concat(
        [
            pd.read_csv(
                x.heldout_path, sep="\t", names=["English", "German"], nrows=examples, quoting=3
            ).assign(set=x.name)
            for x in sets
        ]
    )
    return overview, samples


def mono_sample(lang: str, n: int) -> list[str]:
    """The first `n` natural monolingual sentences of `lang` in a fixed shuffled order."""
    sentences = corpus.load_monolingual(lang)
    if n > len(sentences):
        raise DataError(f"asked for {n} monolingual {lang} sentences; the corpus has {len(sentences)}")
    random.Random(MONO_SEED).shuffle(sentences)
    return sentences[:n]


def synthetic_pair(
    kind: str, natural: str, model: str, max_length_ratio: float | None = None
) -> tuple[str, str] | None:
    """The En->De training pair of one monolingual sentence and its translation, or None when either side
    is empty once tabs and line breaks (which would break the TSV) are made spaces, or when one side is more
    than `max_length_ratio` times as long as the other in characters (None: no limit). The ratio filter is
    the bitext cleaning of Moses' clean-corpus-n: a teacher whose greedy search loops writes thousands of
    characters for one sentence, a pair longer than a student's training batch."""
    natural, model = (" ".join(text.split()) for text in (natural, model))
    if not natural or not model:
        return None
    if max_length_ratio is not None and max(len(natural), len(model)) > max_length_ratio * min(
        len(natural), len(model)
    ):
        return None
    return (natural, model) if kind == "forward" else (model, natural)


def _write_tsv(rows: Sequence[tuple[str, str]], path: Path) -> None:
    Path(path).write_text("".join(f"{src}\t{tgt}\n" for src, tgt in rows), encoding="utf-8")
