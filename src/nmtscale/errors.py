"""The project's error types: each names the file, key or line at fault."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable
from pathlib import Path


class ConfigurationError(ValueError):
    """A config or params file asks for something invalid; the message names the file and key."""


class DataError(ValueError):
    """Input data is malformed; the message names the file and line."""


class SweepError(RuntimeError):
    """A sweep could not finish every run; the message says which, and that running it again resumes them."""


def closest(name: str, valid: Iterable[str]) -> str:
    """A ' (did you mean ...?)' hint for a misspelt key, or '' when nothing is close."""
    match = difflib.get_close_matches(name, list(valid), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def require_file(path: Path, error: type[ValueError] = DataError) -> None:
    """Raise `error` naming `path` unless it is a readable file's path (a directory is named as one)."""
    if not path.is_file():
        raise error(f"{path}: no such file" + (" (it is a directory)" if path.is_dir() else ""))


def positive_int(text: str) -> int:
    """An argparse type for counts (workers, threads, beam size): a whole number >= 1, else argparse's named
    error ("argument --workers: ...")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value
