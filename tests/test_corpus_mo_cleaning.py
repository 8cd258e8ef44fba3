"""The .mo reader and the cleaning rules, on tiny catalogues the tests write themselves."""

from __future__ import annotations

import struct

import pytest

from nmtscale.corpus.cleaning import (
    clean_pair,
    count_placeholders,
    normalise_english,
    strip_accelerators,
)
from nmtscale.corpus.mo import read_mo
from nmtscale.errors import DataError


def write_mo(path, entries: list[tuple[str, str]], charset: str = "UTF-8") -> None:
    """A minimal .mo writer (little-endian, no hash table): entries are (msgid, msgstr), NULs for plurals."""
    header = f"Content-Type: text/plain; charset={charset}\n"
    entries = sorted([("", header), *entries])
    originals = [key.encode(charset) for key, _ in entries]
    translations = [value.encode(charset) for _, value in entries]
    count = len(entries)
    originals_at = 28
    translations_at = originals_at + 8 * count
    data_at = translations_at + 8 * count
    tables, blob = [b"", b""], b""
    for table, strings in enumerate((originals, translations)):
        for string in strings:
            tables[table] += struct.pack("<2I", len(string), data_at + len(blob))
            blob += string + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, count, originals_at, translations_at, 0, data_at)
    path.write_bytes(head + tables[0] + tables[1] + blob)


def test_read_mo_pairs_plurals_context_and_skips_empty(tmp_path):
    path = tmp_path / "de.mo"
    write_mo(
        path,
        [
            ("Open the selected file", "Ausgewählte Datei öffnen"),
            ("menu\x04Save the document now", "Dokument jetzt speichern"),
            (
                "%d file was deleted\0%d files were deleted",
                "%d Datei wurde gelöscht\0%d Dateien wurden gelöscht",
            ),
            ("Untranslated entry here", ""),
        ],
    )
    assert sorted(read_mo(path)) == sorted(
        [
            ("Open the selected file", "Ausgewählte Datei öffnen"),
            ("Save the document now", "Dokument jetzt speichern"),
            ("%d file was deleted", "%d Datei wurde gelöscht"),
            ("%d files were deleted", "%d Dateien wurden gelöscht"),
        ]
    )


def test_read_mo_single_plural_form_pairs_only_the_singular(tmp_path):
    path = tmp_path / "zh.mo"
    write_mo(path, [("%d file was deleted\0%d files were deleted", "已删除 %d 个文件")])
    assert read_mo(path) == [("%d file was deleted", "已删除 %d 个文件")]


def test_read_mo_honours_the_declared_charset(tmp_path):
    path = tmp_path / "fr.mo"
    write_mo(
        path, [("Could not open the file", "Impossible d'ouvrir le fichier spécifié")], charset="ISO-8859-1"
    )
    assert read_mo(path) == [("Could not open the file", "Impossible d'ouvrir le fichier spécifié")]


def test_read_mo_rejects_a_file_that_is_not_a_catalogue(tmp_path):
    path = tmp_path / "bad.mo"
    path.write_bytes(b"\x00" * 40)
    with pytest.raises(DataError, match="bad.mo.*magic"):
        read_mo(path)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("_Open File", "Open File"),
        ("&Save As...", "Save As..."),
        ("~Edit the text", "Edit the text"),
        ("打开文件(_O)", "打开文件"),
        ("Datei öffnen (&F)", "Datei öffnen"),
        ("Rock && Roll", "Rock & Roll"),
        ("keep snake_case and A&B", "keep snake_case and A&B"),
        ("Step (1) stays", "Step (1) stays"),
    ],
)
def test_strip_accelerators(raw, clean):
    assert strip_accelerators(raw) == clean


def test_placeholders_are_counted_in_every_common_syntax():
    assert count_placeholders("%s of %1$d in {name} at %(x)s and $HOME, 50% done") == 5
    assert count_placeholders("conversion from %qT to %qT changes %qE") == 3
    assert count_placeholders("No placeholders here at all.") == 0


def test_normalised_english_ignores_case_punctuation_spacing_and_accelerators():
    assert normalise_english("  _Open the  File… ") == normalise_english("open the file") == "open the file"


@pytest.mark.parametrize(
    ("english", "translation", "lang", "kept"),
    [
        ("_Open the selected file", "Ausgewählte Datei ö_ffnen", "de", True),
        ("Open the selected file", "Open the selected file", "de", False),  # untranslated
        ("Copy %s to %s as %d of %d", "Kopiere %s nach %s als %d von %d", "de", False),  # placeholder-heavy
        ("Open file", "Datei öffnen", "de", False),  # fewer than four English words
        ("Open the selected file now", "Öffnen", "de", False),  # length ratio
        ("Open the selected file now", "打开所选文件", "zh", True),
        (
            "Open the selected file now",
            "Open the selected 文件 now please",
            "zh",
            False,
        ),  # mostly untranslated
        ("Click <b>here</b> to open it", "Klicken Sie <b>hier</b>, um es zu öffnen", "de", False),  # markup
    ],
)
def test_clean_pair_rules(english, translation, lang, kept):
    assert (clean_pair(english, translation, lang) is not None) == kept


def test_clean_pair_normalises_whitespace_and_accelerators():
    assert clean_pair("Save the\n_document  now", "Dokument\tjetzt _speichern", "de") == (
        "Save the document now",
        "Dokument jetzt speichern",
    )
