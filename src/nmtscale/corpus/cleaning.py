"""Cleaning rules for software-localisation text: one function per rule, composed by `clean_pair`.

The rules are those that matter for UI catalogues: accelerator marks (`_File`, `&File`, `~File`,
`文件(_F)`), placeholder-heavy strings, untranslated entries, implausible length ratios and markup.
Language identification is a separate, batched step (see `nmtscale.engine.langid`), as it is the slow one.
"""

from __future__ import annotations

import re
import unicodedata

# `文件(_F)` / `Datei (&F)`: a bracketed accelerator appended by CJK and some other translations.
BRACKETED_ACCELERATOR = re.compile(r"\s*[(（][_&~][A-Za-z0-9][)）]")
# `_File`, `&File`, `~File`: a marker before the mnemonic letter (`&&` is a literal ampersand in Qt).
# Only at the start of a word, so `snake_case` and `A&B` survive.
INLINE_ACCELERATOR = re.compile(r"(?<![&\w])&(?=\w)|(?<![\w_])_(?=\w)|~(?=\w)")
PLACEHOLDER = re.compile(
    # printf and GCC's diagnostics (%qs, %qD, %qT); no space flag, or "50% done" would count as "% d"
    r"%(?:\d+\$)?[-+#0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t|q)?[diouxXeEfgGcsSpnDTFV]"
    r"|%\([A-Za-z_]\w*\)[sd]"  # python %(name)s
    r"|%\d+|\$\{?[A-Za-z_]\w*\}?"  # %1 and $VAR / ${VAR}
    r"|\{[A-Za-z_0-9.:]*\}"  # {name}, {0}
)
MARKUP = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>|&[a-z]+;")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"\w+")

MAX_PLACEHOLDERS = 2
MIN_ENGLISH_WORDS = 4
MAX_ENGLISH_WORDS = 120
# Characters of translation per character of English, and how far a pair may stray from it.
EXPECTED_LENGTH_RATIO = {"de": 1.2, "fr": 1.2, "zh": 0.33, "en": 1.0}
LENGTH_RATIO_TOLERANCE = 2.5
MIN_CJK_SHARE = 0.3


def normalise_space(text: str) -> str:
    """NFC, every run of whitespace (newlines and tabs included) as one space, trimmed."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def strip_accelerators(text: str) -> str:
    """Remove keyboard-accelerator marks: `_Open`, `&Open`, `~Open`, `打开(_O)`; `&&` becomes `&`."""
    text = BRACKETED_ACCELERATOR.sub("", text)
    text = INLINE_ACCELERATOR.sub("", text)
    return text.replace("&&", "&")


def normalise_english(text: str) -> str:
    """The key under which English sentences count as the same: case-folded words, punctuation ignored."""
    return " ".join(WORD.findall(strip_accelerators(text).casefold()))


def count_placeholders(text: str) -> int:
    return len(PLACEHOLDER.findall(text))


def has_markup(text: str) -> bool:
    return MARKUP.search(text) is not None


def cjk_share(text: str) -> float:
    """Share of non-space characters that are CJK ideographs."""
    letters = [ch for ch in text if not ch.isspace()]
    return len(CJK.findall(text)) / len(letters) if letters else 0.0


def length_ratio_ok(english: str, translation: str, lang: str) -> bool:
    """Whether len(translation)/len(english) lies within a factor of the language's usual ratio."""
    ratio = len(translation) / max(1, len(english))
    expected = EXPECTED_LENGTH_RATIO[lang]
    return expected / LENGTH_RATIO_TOLERANCE <= ratio <= expected * LENGTH_RATIO_TOLERANCE


def clean_pair(english: str, translation: str, lang: str) -> tuple[str, str] | None:
    """The cleaned (English, translation) pair, or None when a rule rejects it.

    Rules, in order: whitespace and accelerators normalised; markup rejected; more than two placeholders on
    either side rejected; English of 4 to 120 words; translation not equal to the English (untranslated);
    Chinese must be mostly CJK; length ratio plausible for the language.
    """
    english = normalise_space(strip_accelerators(english))
    translation = normalise_space(strip_accelerators(translation))
    if not english or not translation:
        return None
    if has_markup(english) or has_markup(translation):
        return None
    if max(count_placeholders(english), count_placeholders(translation)) > MAX_PLACEHOLDERS:
        return None
    if not MIN_ENGLISH_WORDS <= len(english.split()) <= MAX_ENGLISH_WORDS:
        return None
    if normalise_english(translation) == normalise_english(english):
        return None
    if lang == "zh" and cjk_share(translation) < MIN_CJK_SHARE:
        return None
    if not length_ratio_ok(english, translation, lang):
        return None
    return english, translation
