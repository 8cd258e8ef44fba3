"""Extractors: raw (English, translation) pairs and monolingual text from unpacked Debian packages.

Each extractor takes directories produced by `dpkg -x` and returns text as found, in a deterministic order
(sorted paths, file order within a file); cleaning happens later, in one place.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from nmtscale.corpus.cleaning import normalise_space
from nmtscale.corpus.mo import read_mo

# gettext locale directory -> project language code.
LOCALE_DIRS = {"de": "de", "fr": "fr", "zh_CN": "zh"}
# LibreOffice help directory under usr/share/libreoffice/help -> project language code.
HELP_DIRS = {"en-US": "en", "de": "de", "fr": "fr", "zh-CN": "zh"}
HELP_PARAGRAPH_ID = re.compile(r"^(?:par|hd)_id\w+$")
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


def gettext_pairs(root: Path) -> dict[str, list[tuple[str, str]]]:
    """Per language, the (English, translation) pairs of every `.mo` catalogue under `root`."""
    pairs: dict[str, list[tuple[str, str]]] = {lang: [] for lang in LOCALE_DIRS.values()}
    for path in sorted(root.rglob("*.mo")):
        if path.parent.name == "LC_MESSAGES" and path.parent.parent.name in LOCALE_DIRS:
            pairs[LOCALE_DIRS[path.parent.parent.name]].extend(read_mo(path))
    return pairs


class _HelpParagraphs(HTMLParser):
    """Collects the visible text of LibreOffice help elements whose id is a `par_id…`/`hd_id…`.

    Platform variants (`<span class="switchinline">`) carry every variant hidden; the `default…` one is
    what the help shows on Linux, so it is kept and the other hidden spans are skipped.
    """

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: dict[str, str] = {}
        self._id: str | None = None
        self._open: list[bool] = []  # one entry per open element inside the paragraph: is it hidden?
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            return
        attributes = dict(attrs)
        if self._id is None:
            element_id = attributes.get("id") or ""
            if HELP_PARAGRAPH_ID.match(element_id):
                self._id, self._open, self._text = element_id, [False], []
            return
        hidden = "hidden" in attributes and not (attributes.get("id") or "").startswith("default")
        self._open.append(hidden)

    def handle_endtag(self, tag):
        if self._id is None or tag in VOID_TAGS:
            return
        self._open.pop()
        if not self._open:
            text = normalise_space("".join(self._text))
            if text:
                self.paragraphs.setdefault(self._id, text)
            self._id = None

    def handle_data(self, data):
        if self._id is not None and not any(self._open):
            self._text.append(data)


def help_paragraphs(help_root: Path) -> dict[str, str]:
    """`relative/path.html#par_id` -> paragraph text for one language's LibreOffice help tree."""
    paragraphs = {}
    for path in sorted(help_root.rglob("*.html")):
        parser = _HelpParagraphs()
        parser.feed(path.read_text(encoding="utf-8"))
        relative = path.relative_to(help_root).as_posix()
        paragraphs.update({f"{relative}#{pid}": text for pid, text in sorted(parser.paragraphs.items())})
    return paragraphs


def libreoffice_help_pairs(help_roots: dict[str, Path]) -> dict[str, list[tuple[str, str]]]:
    """Per language, English help paragraphs paired with the translation carrying the same `par_id`.

    `help_roots` maps a language code (with "en") to its `usr/share/libreoffice/help/<dir>` folder.
    """
    english = help_paragraphs(help_roots["en"])
    pairs = {}
    for lang, root in sorted(help_roots.items()):
        if lang == "en":
            continue
        translated = help_paragraphs(root)
        pairs[lang] = [(text, translated[key]) for key, text in english.items() if key in translated]
    return pairs


DING_ANNOTATION = re.compile(r"\s*(?:\[[^\]]*\]|\{[^}]*\})")


def ding_sentence_pairs(path: Path) -> list[tuple[str, str]]:
    """(German, English) example sentences of the Ding dictionary (`de :: en`, senses split by `|`).

    Only aligned senses that are whole sentences on both sides count: capitalised, ending in . ! or ?,
    without `;`-separated alternatives or `/` variants; usage labels like `[coll.]` are dropped.
    """
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or " :: " not in line:
            continue
        german_side, english_side = line.split(" :: ", 1)
        german_senses, english_senses = german_side.split(" | "), english_side.split(" | ")
        if len(german_senses) != len(english_senses):
            continue
        for german, english in zip(german_senses, english_senses, strict=True):
            german = normalise_space(DING_ANNOTATION.sub("", german))
            english = normalise_space(DING_ANNOTATION.sub("", english))
            if _is_sentence(german) and _is_sentence(english):
                pairs.append((german, english))
    return pairs


def _is_sentence(text: str) -> bool:
    return (
        len(text.split()) >= 3
        and text[0].isupper()
        and text[-1] in ".!?"
        and not any(mark in text for mark in (";", "/", "..."))
    )


def fortunes(directory: Path) -> list[str]:
    """Every fortune (`%`-separated, UTF-8 `*.u8` files) as one line of text, in sorted file order."""
    texts = []
    for path in sorted(directory.glob("*.u8")):
        for fortune in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            text = normalise_space(fortune.strip("%\n"))
            if text:
                texts.append(text)
    return texts
