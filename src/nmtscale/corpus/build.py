"""The corpus builder: pinned .debs -> extracted text -> cleaned pairs -> package-level splits -> data/.

Splits are by package (a "unit"; the four LibreOffice help packages form one unit), never by sentence, so
near-identical UI strings cannot straddle train and test; on top of that, every sentence whose normalised
English occurs in an earlier split (train, then dev, then the test sets) is dropped from the later one.
Everything is sorted before it is written, so the same .debs give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from nmtscale.corpus.cleaning import (
    MAX_PLACEHOLDERS,
    MIN_ENGLISH_WORDS,
    clean_pair,
    count_placeholders,
    has_markup,
    normalise_english,
    normalise_space,
    strip_accelerators,
)
from nmtscale.corpus.debian import LockedPackage, extract, fetch, licence, read_lock
from nmtscale.corpus.extract import (
    HELP_DIRS,
    ding_sentence_pairs,
    fortunes,
    gettext_pairs,
    libreoffice_help_pairs,
)
from nmtscale.corpus.store import COLUMNS, FOREIGN, MONO_COLUMNS, split_file, test_file
from nmtscale.engine.langid import detect

HELP_UNIT = "libreoffice-help"
# Packages that ship one language each and only make sense together: one unit, so they pair up.
GROUPED_UNITS = (HELP_UNIT, "libreoffice-l10n")
DING_PACKAGE = "trans-de-en"
# Fortune packages: language and folder of their UTF-8 files.
FORTUNES = {
    "fortunes": ("en", "usr/share/games/fortunes"),
    "fortunes-de": ("de", "usr/share/games/fortunes/de"),
}
# Held-out units. l10n test: mid-sized English-original software catalogues; story test: whole campaigns.
TEST_UNITS = {
    "l10n": ("gnome-software-common", "gnucash-common", "seahorse", "simple-scan", "totem-common"),
    "story": ("wesnoth-1.16-dw", "wesnoth-1.16-sota", "wesnoth-1.16-utbs"),
}
DEV_UNITS = ("filezilla-common", "gnome-maps", "wesnoth-1.16-tsg")
# Ding sentences split by a hash of the German: test, dev, German monolingual only, the rest train.
DING_BUCKETS = (("test-ding", 0.12), ("dev", 0.03), ("mono-de", 0.25))
MAX_MONO_WORDS = 60


@dataclass
class Row:
    """One English-centred sentence group: the English and whichever translations survived cleaning."""

    unit: str
    origin: str
    texts: dict[str, str] = field(default_factory=dict)

    def values(self) -> list[str]:
        return [self.unit, self.origin, *(self.texts.get(lang, "") for lang in ("en", *FOREIGN))]


@dataclass
class RawText:
    """Everything extracted, before cleaning: parallel pairs per unit and language, monolingual lines."""

    pairs: dict[str, dict[str, list[tuple[str, str]]]] = field(default_factory=dict)  # unit -> lang -> pairs
    ding: list[tuple[str, str]] = field(default_factory=list)
    mono: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))  # lang -> lines
    units_of_package: dict[str, str] = field(default_factory=dict)


def unit_of(package: str) -> str:
    return next((unit for unit in GROUPED_UNITS if package.startswith(unit + "-")), package)


def source_of(unit: str) -> str:
    """The kind of text a unit holds, as `corpus stats` reports it."""
    if unit == HELP_UNIT:
        return "libreoffice-help"
    if unit == DING_PACKAGE:
        return "ding"
    return "wesnoth" if unit.startswith("wesnoth") else "l10n"


def extract_all(packages: list[LockedPackage], downloads: Path, extract_root: Path) -> tuple[RawText, dict]:
    """Fetch, verify and unpack every locked package and pull its text; also each package's licence."""
    raw = RawText()
    licences = {}
    help_roots = {}
    for package in packages:
        root = extract(fetch(package, downloads), extract_root)
        licences[package.name] = licence(root, package.name)
        raw.units_of_package[package.name] = unit_of(package.name)
        if package.name.startswith(HELP_UNIT + "-"):
            for directory, lang in HELP_DIRS.items():
                help_dir = root / "usr/share/libreoffice/help" / directory
                if help_dir.is_dir():
                    help_roots[lang] = help_dir
        elif package.name == DING_PACKAGE:
            raw.ding = ding_sentence_pairs(root / "usr/share/trans/de-en")
        elif package.name in FORTUNES:
            lang, directory = FORTUNES[package.name]
            raw.mono[lang].extend((package.name, text) for text in fortunes(root / directory))
        else:
            unit_pairs = raw.pairs.setdefault(raw.units_of_package[package.name], {})
            for lang, pairs in gettext_pairs(root).items():
                unit_pairs.setdefault(lang, []).extend(pairs)
    if help_roots:
        raw.pairs[HELP_UNIT] = libreoffice_help_pairs(help_roots)
    return raw, licences


def _languages_of(texts: Iterable[str]) -> dict[str, str]:
    unique = sorted(set(texts))
    return dict(zip(unique, detect(unique), strict=True))


def clean_rows(raw: RawText) -> list[Row]:
    """Cleaned rows: per unit, one row per normalised English with every translation that passed.

    Within a unit the first translation (catalogue order) of an English sentence wins. Pairs whose English
    is not identified as English, or whose translation is not in its language, are dropped.
    """
    candidates: dict[str, dict[str, dict[str, tuple[str, str]]]] = {}  # unit -> key -> lang -> pair
    for unit, by_lang in sorted(raw.pairs.items()):
        for lang, pairs in sorted(by_lang.items()):
            for english, translation in pairs:
                cleaned = clean_pair(english, translation, lang)
                if cleaned:
                    candidates.setdefault(unit, {}).setdefault(normalise_english(cleaned[0]), {}).setdefault(
                        lang, cleaned
                    )
    ding_pairs = [clean_pair(english, german, "de") for german, english in raw.ding]

    texts = [
        text
        for by_key in candidates.values()
        for by_lang in by_key.values()
        for pair in by_lang.values()
        for text in pair
    ]
    texts += [text for cleaned in ding_pairs if cleaned for text in cleaned]
    language = _languages_of(texts)

    rows = []
    for unit, by_key in sorted(candidates.items()):
        for _, by_lang in sorted(by_key.items()):
            row = Row(unit=unit, origin="en")
            for lang, (english, translation) in sorted(by_lang.items()):
                if language[english] == "en" and language[translation] == lang:
                    row.texts.setdefault("en", english)
                    row.texts[lang] = translation
            if len(row.texts) > 1:
                rows.append(row)
    for cleaned in ding_pairs:
        if cleaned and language[cleaned[0]] == "en" and language[cleaned[1]] == "de":
            rows.append(Row(unit=DING_PACKAGE, origin="de", texts={"en": cleaned[0], "de": cleaned[1]}))
    return rows


def _ding_bucket(german: str) -> str:
    fraction = int(hashlib.sha256(german.encode("utf-8")).hexdigest()[:8], 16) / 2**32
    for bucket, share in DING_BUCKETS:
        if fraction < share:
            return bucket
        fraction -= share
    return "train"


def assign_splits(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows per split (train, dev, test-l10n, test-story, test-ding, mono-de), by unit and leak-free.

    The same normalised English can come from several units of one split; the row with the most
    translations wins (ties: unit name). A later split drops every English key of an earlier one.
    """
    unit_split = {unit: "dev" for unit in DEV_UNITS}
    for name, units in TEST_UNITS.items():
        unit_split.update({unit: f"test-{name}" for unit in units})
    grouped: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        ding = row.unit == DING_PACKAGE
        grouped[_ding_bucket(row.texts["de"]) if ding else unit_split.get(row.unit, "train")].append(row)

    seen: set[str] = set()
    splits = {}
    for split in ("train", "dev", "test-l10n", "test-story", "test-ding", "mono-de"):
        best: dict[str, Row] = {}
        for row in sorted(grouped[split], key=lambda r: (-len(r.texts), r.unit, r.texts["en"])):
            best.setdefault(normalise_english(row.texts["en"]), row)
        kept = [row for key, row in best.items() if key not in seen]
        if split in ("test-l10n", "test-story"):  # the English-original test sets are 4-way by design
            kept = [row for row in kept if len(row.texts) == 4]
        seen.update(normalise_english(row.texts["en"]) for row in kept)
        splits[split] = sorted(kept, key=lambda r: (r.unit, normalise_english(r.texts["en"]), r.texts["en"]))
    return splits


def monolingual(raw: RawText, splits: dict[str, list[Row]]) -> dict[str, list[tuple[str, str]]]:
    """Natural monolingual lines (unit, text) held out from all parallel data.

    English: English fortunes, plus catalogue English in no parallel split (translations missing or cleaned
    away, or left out of a 4-way test set).
    German: German fortunes, plus the German side of the Ding sentences reserved for it.
    """
    parallel_keys = {
        lang: {
            normalise_english(row.texts[lang])
            for split, kept in splits.items()
            if not split.startswith("mono")
            for row in kept
            if lang in row.texts
        }
        for lang in ("en", "de")
    }
    english_lines = list(raw.mono["en"])
    for unit, by_lang in sorted(raw.pairs.items()):
        english_lines.extend(
            (unit, strip_accelerators(english)) for pairs in by_lang.values() for english, _ in pairs
        )
    german_lines = list(raw.mono["de"]) + [(row.unit, row.texts["de"]) for row in splits["mono-de"]]

    mono = {}
    for lang, lines in (("en", english_lines), ("de", german_lines)):
        candidates: dict[str, tuple[str, str]] = {}
        for unit, text in lines:
            text = normalise_space(text)
            key = normalise_english(text)
            words = len(text.split())
            if (
                key not in parallel_keys[lang]
                and MIN_ENGLISH_WORDS <= words <= MAX_MONO_WORDS
                and not has_markup(text)
                and count_placeholders(text) <= MAX_PLACEHOLDERS
            ):
                candidates.setdefault(key, (unit, text))
        language = _languages_of(text for _, text in candidates.values())
        mono[lang] = sorted(line for line in candidates.values() if language[line[1]] == lang)
    return mono


def _write_tsv(path: Path, header: tuple[str, ...], lines: Iterable[list[str]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    # Fixed preset and no timestamps in the xz container: identical input gives identical bytes.
    with lzma.open(path, "wt", encoding="utf-8", newline="\n", preset=9) as handle:
        handle.write("\t".join(header) + "\n")
        for values in lines:
            handle.write("\t".join(values) + "\n")
            count += 1
    return count


def write_corpus(
    data_dir: Path,
    splits: dict[str, list[Row]],
    mono: dict[str, list[tuple[str, str]]],
    packages: list[LockedPackage],
    licences: dict[str, str],
    units_of_package: dict[str, str],
) -> dict:
    """Write the split files, monolingual files and `manifest.json`; return the manifest."""
    files = {}
    unit_counts: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for split, rows in splits.items():
        if split == "mono-de":
            continue
        path = (
            test_file(data_dir, split.removeprefix("test-"))
            if split.startswith("test-")
            else split_file(data_dir, split)
        )
        files[path.relative_to(data_dir).as_posix()] = _write_tsv(
            path, COLUMNS, (row.values() for row in rows)
        )
        for row in rows:
            for lang in FOREIGN:
                if lang in row.texts:
                    counts = unit_counts[row.unit][split]
                    counts[f"en-{lang}"] = counts.get(f"en-{lang}", 0) + 1
    for lang, lines in sorted(mono.items()):
        path = split_file(data_dir, f"mono.{lang}")
        files[path.relative_to(data_dir).as_posix()] = _write_tsv(
            path, MONO_COLUMNS, (list(line) for line in lines)
        )
        for unit, _ in lines:
            counts = unit_counts[unit][f"mono-{lang}"]
            counts[lang] = counts.get(lang, 0) + 1

    manifest = {
        "packages": [
            {
                "name": p.name,
                "version": p.version,
                "sha256": p.sha256,
                "licence": licences[p.name],
                "unit": units_of_package[p.name],
                "source": source_of(units_of_package[p.name]),
            }
            for p in packages
        ],
        "units": {
            unit: {split: dict(sorted(c.items())) for split, c in sorted(by_split.items())}
            for unit, by_split in sorted(unit_counts.items())
        },
        "files": {
            name: {"rows": rows, "sha256": _sha256(data_dir / name)} for name, rows in sorted(files.items())
        },
    }
    (data_dir / "manifest.json").write_text(
        json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return manifest


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_corpus(data_dir: Path, downloads: Path, extract_root: Path) -> dict:
    """Rebuild `data_dir` from the packages pinned in `data_dir/packages.lock`; return the manifest."""
    packages = read_lock(data_dir / "packages.lock")
    raw, licences = extract_all(packages, downloads, extract_root)
    rows = clean_rows(raw)
    splits = assign_splits(rows)
    mono = monolingual(raw, splits)
    return write_corpus(data_dir, splits, mono, packages, licences, raw.units_of_package)
