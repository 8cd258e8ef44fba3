"""Reading the committed corpus under `data/corpus/` and users' own parallel files.

The corpus is a handful of xz-compressed TSV files, one row per English sentence with its translations
(empty where a language is missing), so every language pair and the 4-way subset are views of the same rows.
Parsed files are cached in memory: experiments ask for the same split many times.
"""

from __future__ import annotations

import hashlib
import lzma
import os
from functools import cache
from pathlib import Path

from nmtscale.errors import DataError, closest, require_file
from nmtscale.record import REPOSITORY

LANGUAGES = ("en", "de", "fr", "zh")
FOREIGN = ("de", "fr", "zh")
COLUMNS = ("unit", "origin", *LANGUAGES)
MONO_COLUMNS = ("unit", "text")
SPLITS = ("train", "dev")
TRAIN_PAIRS = tuple(pair for lang in FOREIGN for pair in (("en", lang), (lang, "en")))
# Each test set and the language its text was originally written in.
TEST_SET_ORIGIN = {"l10n": "en", "story": "en", "ding": "de"}
TEST_SET_LANGUAGES = {"l10n": LANGUAGES, "story": LANGUAGES, "ding": ("en", "de")}
MONOLINGUAL = ("en", "de")
# Users' sentences longer than this are refused with the file and line: about twice the corpus's longest
# side, and far below what would make one batch's attention matrices exhaust memory.
MAX_SENTENCE_CHARACTERS = 10_000


def data_dir() -> Path:
    """The committed data folder (the repository's `data/`, or `$NMTSCALE_DATA`)."""
    return Path(os.environ.get("NMTSCALE_DATA", REPOSITORY / "data"))


def split_file(root: Path, name: str) -> Path:
    return root / "corpus" / f"{name}.tsv.xz"


def test_file(root: Path, name: str) -> Path:
    return split_file(root, f"test.{name}")


def corpus_fingerprint(root: Path | None = None) -> str:
    """SHA-256 over the committed corpus files.

    It is part of every run's identity, so a rebuilt corpus gives new runs.
    """
    files = sorted((root or data_dir()).joinpath("corpus").glob("*.tsv.xz"))
    return _fingerprint(tuple((path, *_stamp(path)) for path in files))


def files_fingerprint(paths) -> str:
    """SHA-256 over the names and contents of user data files, in the order given.

    Part of the identity of a run that trains or tests on them: replacing a file's text gives a new run
    instead of returning (or resuming) the run trained on the old text. A missing file is a DataError.
    """
    stamped = []
    for path in map(Path, paths):
        require_file(path)
        stamped.append((path.resolve(), *_stamp(path)))
    return _fingerprint(tuple(stamped))


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@cache
def _fingerprint(stamped_files: tuple[tuple[Path, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for path, _, _ in stamped_files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read_rows(path: Path) -> tuple[dict[str, str], ...]:
    """The rows of one corpus file as dicts keyed by its header; cached until the file changes."""
    return _read_rows(path, *_stamp(path))


@cache
def _read_rows(path: Path, mtime_ns: int, size: int) -> tuple[dict[str, str], ...]:
    with lzma.open(path, "rt", encoding="utf-8", newline="\n") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        rows = []
        for number, line in enumerate(handle, start=2):
            values = line.rstrip("\n").split("\t")
            if len(values) != len(header):
                raise DataError(f"{path}:{number}: expected {len(header)} columns, found {len(values)}")
            rows.append(dict(zip(header, values, strict=True)))
    return tuple(rows)


def _check_pair(src_lang: str, tgt_lang: str, valid: tuple[tuple[str, str], ...], what: str) -> None:
    if (src_lang, tgt_lang) not in valid:
        names = [f"{a}-{b}" for a, b in valid]
        asked = f"{src_lang}-{tgt_lang}"
        raise DataError(f"no {what} for {asked}{closest(asked, names)}; valid: {', '.join(names)}")


def _pairs(rows: tuple[dict[str, str], ...], src_lang: str, tgt_lang: str) -> list[tuple[str, str]]:
    return [(row[src_lang], row[tgt_lang]) for row in rows if row[src_lang] and row[tgt_lang]]


def load_pairs(src_lang: str, tgt_lang: str, split: str) -> list[tuple[str, str]]:
    """(source, target) sentence pairs of the train or dev split, for either direction of en-de/fr/zh."""
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}{closest(split, SPLITS)}; valid: {', '.join(SPLITS)}")
    _check_pair(src_lang, tgt_lang, TRAIN_PAIRS, f"{split} data")
    return _pairs(read_rows(split_file(data_dir(), split)), src_lang, tgt_lang)


def test_set_names(src_lang: str, tgt_lang: str) -> list[str]:
    """The test sets that hold the direction src_lang -> tgt_lang."""
    return [
        name
        for name, languages in TEST_SET_LANGUAGES.items()
        if src_lang != tgt_lang and src_lang in languages and tgt_lang in languages
    ]


def _check_test_set(name: str, src_lang: str, tgt_lang: str) -> None:
    valid = test_set_names(src_lang, tgt_lang)
    if name not in valid:
        raise DataError(
            f"no test set {name!r} for {src_lang}-{tgt_lang}{closest(name, valid)}; "
            f"valid: {', '.join(valid) or 'none'}"
        )


def load_test_set(name: str, src_lang: str, tgt_lang: str) -> list[tuple[str, str]]:
    """(source, target) pairs of test set `name` ("l10n", "story" or "ding") in the given direction."""
    _check_test_set(name, src_lang, tgt_lang)
    return _pairs(read_rows(test_file(data_dir(), name)), src_lang, tgt_lang)


def originality(name: str, src_lang: str, tgt_lang: str) -> str:
    """Whether test set `name` is "source-original", "target-original" or "third-original" for src->tgt."""
    _check_test_set(name, src_lang, tgt_lang)
    origin = TEST_SET_ORIGIN[name]
    if origin == src_lang:
        return "source-original"
    return "target-original" if origin == tgt_lang else "third-original"


def load_multiway(split: str) -> list[dict[str, str]]:
    """Rows of the train or dev split that have the English and all three translations."""
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}{closest(split, SPLITS)}; valid: {', '.join(SPLITS)}")
    return [
        {lang: row[lang] for lang in LANGUAGES}
        for row in read_rows(split_file(data_dir(), split))
        if all(row[lang] for lang in LANGUAGES)
    ]


def load_monolingual(lang: str) -> list[str]:
    """Natural sentences in `lang` ("en" or "de") that occur in no parallel split."""
    if lang not in MONOLINGUAL:
        raise DataError(f"no monolingual text for {lang!r}; valid: {', '.join(MONOLINGUAL)}")
    return [row["text"] for row in read_rows(split_file(data_dir(), f"mono.{lang}"))]


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; a missing file, or a line that is not UTF-8, is a DataError naming
    the file (and line)."""
    require_file(path)
    lines = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as err:
            raise DataError(f"{path}:{number}: not valid UTF-8 ({err.reason} at byte {err.start})") from err
    if lines and lines[-1] == "":  # the final newline ends the last line; it does not start another
        lines.pop()
    return lines


def read_parallel(path_or_paths: str | Path | tuple[str | Path, str | Path]) -> list[tuple[str, str]]:
    """(source, target) pairs from a two-column TSV file or from two line-aligned text files.

    Malformed input (a missing file, wrong column count, an empty side, a side longer than
    `MAX_SENTENCE_CHARACTERS`, bad encoding, unequal line counts) raises DataError naming the file and line.
    """
    if isinstance(path_or_paths, str | Path):
        path = Path(path_or_paths)
        pairs = []
        for number, line in enumerate(_read_lines(path), start=1):
            columns = line.split("\t")
            if len(columns) != 2:
                raise DataError(f"{path}:{number}: expected 2 tab-separated columns, found {len(columns)}")
            pairs.append(_non_empty(columns[0].strip(), columns[1].strip(), path, path, number))
        return pairs

    src_path, tgt_path = (Path(p) for p in path_or_paths)
    src_lines, tgt_lines = _read_lines(src_path), _read_lines(tgt_path)
    if len(src_lines) != len(tgt_lines):
        raise DataError(f"{src_path} has {len(src_lines)} lines but {tgt_path} has {len(tgt_lines)}")
    return [
        _non_empty(src.strip(), tgt.strip(), src_path, tgt_path, number)
        for number, (src, tgt) in enumerate(zip(src_lines, tgt_lines, strict=True), start=1)
    ]


def _non_empty(src: str, tgt: str, src_path: Path, tgt_path: Path, number: int) -> tuple[str, str]:
    for side, text, path in (("source", src, src_path), ("target", tgt, tgt_path)):
        if not text:
            raise DataError(f"{path}:{number}: empty {side} side")
        if len(text) > MAX_SENTENCE_CHARACTERS:
            raise DataError(
                f"{path}:{number}: the {side} side has {len(text):,} characters; a sentence may have at most "
                f"{MAX_SENTENCE_CHARACTERS:,} (the corpus's longest has about 5,400): split or drop the line"
            )
    return src, tgt
