"""Offline language identification restricted to the project's languages (en, de, fr, zh).

Lingua's models are compiled into its wheel, so this works without a network. Restricting the candidate
set to four languages makes it both faster and more accurate on the short UI strings of the corpus. Lingua is
imported on first use: the trainer imports this module, and a machine without lingua (a GPU image without
its 96 MB wheel, say) can still train and decode; only off-target rates need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lingua import LanguageDetector

LANGUAGES = ("en", "de", "fr", "zh")
UNKNOWN = "unknown"


@cache
def _detector() -> LanguageDetector:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    languages = [Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper())) for code in LANGUAGES]
    return LanguageDetectorBuilder.from_languages(*languages).build()


def detect(texts: Sequence[str]) -> list[str]:
    """The language code ("en", "de", "fr" or "zh") of each text, or "unknown" when none is likely."""
    found = _detector().detect_languages_in_parallel_of(list(texts))
    return [UNKNOWN if language is None else language.iso_code_639_1.name.lower() for language in found]
