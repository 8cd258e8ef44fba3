"""Extractors and split assignment on tiny fixtures written by the tests."""

from __future__ import annotations

from nmtscale.corpus.build import DING_PACKAGE, Row, assign_splits
from nmtscale.corpus.extract import ding_sentence_pairs, fortunes, libreoffice_help_pairs

PAGE = '<html><body><div id="DisplayArea">{}</div></body></html>'
SWITCH = (
    '<span class="switchinline"><span hidden="true" id="MAC1">{}</span>'
    '<span hidden="true" id="default1">{}</span></span>'
)
ENGLISH_PAGE = PAGE.format(
    '<h1 id="hd_id1">Find Toolbar</h1>'
    f'<p id="par_id2">Press {SWITCH.format("Command", "Ctrl")} + F to open the <b>Find</b> bar.<br/></p>'
    '<p id="par_id3">Only in English.</p>'
)
GERMAN_PAGE = PAGE.format(
    '<h1 id="hd_id1">Suchleiste</h1>'
    f'<p id="par_id2">Drücken Sie {SWITCH.format("Befehl", "Strg")} + F, '
    "um die <b>Suchleiste</b> zu öffnen.</p>"
)


def test_help_paragraphs_pair_by_par_id_and_keep_the_linux_variant(tmp_path):
    for lang, page in (("en", ENGLISH_PAGE), ("de", GERMAN_PAGE)):
        path = tmp_path / lang / "text/shared/find.html"
        path.parent.mkdir(parents=True)
        path.write_text(page, encoding="utf-8")
    assert libreoffice_help_pairs({"en": tmp_path / "en", "de": tmp_path / "de"}) == {
        "de": [
            ("Find Toolbar", "Suchleiste"),
            ("Press Ctrl + F to open the Find bar.", "Drücken Sie Strg + F, um die Suchleiste zu öffnen."),
        ]
    }


def test_ding_keeps_aligned_whole_sentences_only(tmp_path):
    path = tmp_path / "de-en"
    path.write_text(
        "# Version :: test\n"
        "Abendessen {n} | Das Abendessen hat mir geschmeckt. :: supper | I enjoyed my supper.\n"
        "Abfall {m} | Bitte nicht werfen! [ugs.] | Extra :: waste | Please do not throw! [coll.]\n"
        "Haus {n} | Er ist zu Hause.; Er ist daheim. :: house | He is at home.; He is home.\n",
        encoding="utf-8",
    )
    assert ding_sentence_pairs(path) == [("Das Abendessen hat mir geschmeckt.", "I enjoyed my supper.")]


def test_fortunes_are_split_on_percent_lines(tmp_path):
    (tmp_path / "zitate.u8").write_text(
        "Erste Zeile\nzweite Zeile.\n%\nNoch ein Spruch.\n%\n", encoding="utf-8"
    )
    (tmp_path / "zitate").write_text("ignored: not UTF-8 twin\n", encoding="utf-8")
    assert fortunes(tmp_path) == ["Erste Zeile zweite Zeile.", "Noch ein Spruch."]


def row(unit: str, english: str, **translations: str) -> Row:
    return Row(unit=unit, origin="en", texts={"en": english, **translations})


def test_splits_drop_test_sentences_seen_in_train_and_keep_the_fullest_row(monkeypatch):
    monkeypatch.setattr("nmtscale.corpus.build.TEST_UNITS", {"l10n": ("held-out",), "story": ()})
    monkeypatch.setattr("nmtscale.corpus.build.DEV_UNITS", ("dev-pkg",))
    four = dict(de="Datei öffnen jetzt", fr="Ouvrir le fichier", zh="打开文件")
    rows = [
        row("app-a", "Open the file now", de="Datei jetzt öffnen"),
        row("app-b", "Open the file now!", **four),  # same normalised English, more translations: wins
        row("held-out", "open the FILE now", **four),  # leaks from train: dropped from test
        row("held-out", "Close the window please", **four),
        row("held-out", "Only German here today", de="Nur Deutsch heute hier"),  # test sets are 4-way
        row("dev-pkg", "Save the document first", de="Zuerst das Dokument speichern"),
    ]
    splits = assign_splits(rows)
    assert [r.unit for r in splits["train"]] == ["app-b"]
    assert [r.texts["en"] for r in splits["test-l10n"]] == ["Close the window please"]
    assert [r.texts["en"] for r in splits["dev"]] == ["Save the document first"]
    assert splits["test-ding"] == [] and splits["mono-de"] == []


def test_ding_rows_are_split_by_a_hash_of_the_german():
    rows = [
        Row(
            unit=DING_PACKAGE,
            origin="de",
            texts={"en": f"Sentence number {i} here.", "de": f"Satz Nummer {i}."},
        )
        for i in range(2000)
    ]
    splits = assign_splits(rows)
    sizes = {name: len(split) for name, split in splits.items()}
    assert sum(sizes.values()) == 2000
    assert 150 < sizes["test-ding"] < 330 and 20 < sizes["dev"] < 110 and 400 < sizes["mono-de"] < 600
    assert assign_splits(list(reversed(rows))) == splits
