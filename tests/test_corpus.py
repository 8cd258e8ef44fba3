"""The committed corpus: targets met, no leakage between splits, manifest matches files; the loading API."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest

from nmtscale.corpus import (
    load_monolingual,
    load_multiway,
    load_pairs,
    load_test_set,
    originality,
    read_parallel,
)
from nmtscale.corpus import test_set_names as names_of_test_sets
from nmtscale.corpus.cleaning import normalise_english
from nmtscale.corpus.cli import corpus_files
from nmtscale.corpus.store import COLUMNS, LANGUAGES, MONO_COLUMNS, data_dir, read_rows, split_file
from nmtscale.errors import DataError


def english_keys(rows) -> set[str]:
    return {normalise_english(row["en"]) for row in rows}


@pytest.mark.parametrize("lang", ["de", "fr", "zh"])
def test_each_pair_has_at_least_100k_training_pairs(lang):
    pairs = load_pairs("en", lang, "train")
    assert len(pairs) >= 100_000
    assert load_pairs(lang, "en", "train")[0] == pairs[0][::-1]


def test_four_way_training_subset_reaches_80k():
    rows = load_multiway("train")
    assert len(rows) >= 80_000
    assert all(set(row) == set(LANGUAGES) and all(row.values()) for row in rows[:1000])


@pytest.mark.parametrize(
    ("name", "src", "tgt"), [("l10n", "en", "de"), ("story", "fr", "zh"), ("ding", "de", "en")]
)
def test_test_sets_have_at_least_1500_sentences(name, src, tgt):
    assert len(load_test_set(name, src, tgt)) >= 1500


def test_no_test_or_dev_english_occurs_in_train_or_in_another_split():
    files = corpus_files(data_dir())
    keys = {split: english_keys(read_rows(path)) for split, path in files.items()}
    splits = sorted(keys)
    for i, first in enumerate(splits):
        for second in splits[i + 1 :]:
            assert not keys[first] & keys[second], f"{first} and {second} share English sentences"


def test_splits_are_by_package():
    """Only the Ding dictionary, a single package, is split by sentence."""
    units = {
        split: {row["unit"] for row in read_rows(path)} for split, path in corpus_files(data_dir()).items()
    }
    for first, second in itertools.combinations(sorted(units), 2):
        assert units[first] & units[second] <= {"trans-de-en"}, (first, second)


def test_monolingual_text_is_held_out_from_all_parallel_data():
    parallel = set().union(*(english_keys(read_rows(path)) for path in corpus_files(data_dir()).values()))
    for lang in ("en", "de"):
        sentences = load_monolingual(lang)
        assert len(sentences) >= 5_000
        assert not {normalise_english(text) for text in sentences} & parallel
    german_parallel = {
        normalise_english(row["de"]) for path in corpus_files(data_dir()).values() for row in read_rows(path)
    }
    assert not {normalise_english(text) for text in load_monolingual("de")} & german_parallel


def test_manifest_counts_match_the_files():
    root = data_dir()
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    counted: Counter[tuple[str, str, str]] = Counter()
    for split, path in corpus_files(root).items():
        rows = read_rows(path)
        assert manifest["files"][path.relative_to(root).as_posix()]["rows"] == len(rows)
        for row in rows:
            assert tuple(row) == COLUMNS
            for lang in ("de", "fr", "zh"):
                if row["en"] and row[lang]:
                    counted[(row["unit"], split.replace(".", "-"), f"en-{lang}")] += 1
    for lang in ("en", "de"):
        rows = read_rows(split_file(root, f"mono.{lang}"))
        assert tuple(rows[0]) == MONO_COLUMNS
        counted.update((row["unit"], f"mono-{lang}", lang) for row in rows)
    recorded = Counter(
        {
            (unit, split, pair): n
            for unit, by_split in manifest["units"].items()
            for split, by_pair in by_split.items()
            for pair, n in by_pair.items()
        }
    )
    assert recorded == counted
    for package in manifest["packages"]:
        assert len(package["sha256"]) == 64 and package["version"] and package["licence"]


def test_originality_of_each_test_set():
    assert originality("l10n", "en", "de") == "source-original"
    assert originality("story", "zh", "en") == "target-original"
    assert originality("story", "de", "fr") == "third-original"
    assert originality("ding", "en", "de") == "target-original"
    assert names_of_test_sets("en", "zh") == ["l10n", "story"]
    assert names_of_test_sets("de", "en") == ["l10n", "story", "ding"]


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(DataError, match="valid: en-de, de-en, en-fr, fr-en, en-zh, zh-en"):
        load_pairs("en", "es", "train")
    with pytest.raises(DataError, match="did you mean 'train'"):
        load_pairs("en", "de", "trian")
    with pytest.raises(DataError, match="valid: l10n, story$"):
        load_test_set("ding", "en", "fr")
    with pytest.raises(DataError, match="valid: en, de"):
        load_monolingual("fr")


def test_read_parallel_tsv_and_aligned_files(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("Hello world\tHallo Welt\nGood morning\tGuten Morgen\n", encoding="utf-8")
    assert read_parallel(tsv) == [("Hello world", "Hallo Welt"), ("Good morning", "Guten Morgen")]
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("Hello world\nGood morning\n", encoding="utf-8")
    tgt.write_text("Hallo Welt\nGuten Morgen\n", encoding="utf-8")
    assert read_parallel((src, tgt)) == read_parallel(tsv)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"one\ttwo\nthree\n", r"bad\.tsv:2: expected 2 tab-separated columns, found 1"),
        (b"one\ttwo\tthree\n", r"bad\.tsv:1: expected 2 tab-separated columns, found 3"),
        (b"one\ttwo\nthree\t \n", r"bad\.tsv:2: empty target side"),
        (b"one\ttwo\n\tfour\n", r"bad\.tsv:2: empty source side"),
        (b"one\ttwo\nthr\xffee\tfour\n", r"bad\.tsv:2: not valid UTF-8"),
    ],
)
def test_malformed_user_files_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_parallel(path)


def test_misaligned_user_files_are_an_error(tmp_path):
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("one\ntwo\n", encoding="utf-8")
    tgt.write_text("eins\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"a\.en has 2 lines but .*a\.de has 1"):
        read_parallel((src, tgt))
    tgt.write_text("eins\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"a\.de:2: empty target side"):
        read_parallel((src, tgt))
