"""Reader for compiled gettext catalogues (`.mo`): the English msgid and its human translation.

The format (GNU gettext manual, "The Format of GNU MO Files") is a header, then two tables of
(length, offset) pairs for the original and translated strings. Plural entries hold NUL-separated forms;
a context is prefixed to the msgid with EOT (0x04). msgfmt leaves fuzzy entries out unless asked, and
empty translations carry no information, so neither reaches the caller.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from nmtscale.errors import DataError

MAGIC_LITTLE = 0x950412DE
MAGIC_BIG = 0xDE120495
CONTEXT_SEPARATOR = "\x04"
CHARSET = re.compile(r"charset=([\w.-]+)", re.IGNORECASE)


def read_mo(path: str | Path) -> list[tuple[str, str]]:
    """(English, translation) pairs of a `.mo` file in catalogue order, header and empty entries skipped.

    A plural entry gives the singular with the first form and, where the language has more than one form,
    the English plural with the second form.
    """
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 28:
        raise DataError(f"{path}: too short to be a .mo file")
    (magic,) = struct.unpack("<I", data[:4])
    if magic == MAGIC_LITTLE:
        order = "<"
    elif magic == MAGIC_BIG:
        order = ">"
    else:
        raise DataError(f"{path}: not a .mo file (bad magic number {magic:#x})")
    _, count, originals_at, translations_at = struct.unpack(order + "4I", data[4:20])

    def raw_string(table_at: int, i: int) -> bytes:
        length, offset = struct.unpack(order + "2I", data[table_at + 8 * i : table_at + 8 * i + 8])
        if offset + length > len(data):
            raise DataError(f"{path}: entry {i} points past the end of the file")
        return data[offset : offset + length]

    # The header (translation of the empty msgid) names the charset: most are UTF-8, a few Latin-1.
    charset = "utf-8"
    for i in range(count):
        if raw_string(originals_at, i) == b"":
            found = CHARSET.search(raw_string(translations_at, i).decode("latin-1"))
            charset = found.group(1) if found else charset
            break

    def string(table_at: int, i: int) -> str:
        try:
            return raw_string(table_at, i).decode(charset)
        except (UnicodeDecodeError, LookupError) as err:
            raise DataError(f"{path}: entry {i} cannot be decoded as {charset} ({err})") from err

    pairs = []
    for i in range(count):
        original = string(originals_at, i)
        if not original:  # the header entry: metadata, not a message
            continue
        original = original.split(CONTEXT_SEPARATOR, 1)[-1]
        english_forms = original.split("\0")
        translated_forms = string(translations_at, i).split("\0")
        for english, translation in zip(english_forms, translated_forms, strict=False):
            if english and translation:
                pairs.append((english, translation))
    return pairs
