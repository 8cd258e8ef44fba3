"""`python -m nmtscale COMMAND ...`: one entry point, each command defined beside the code it drives.

Every module listed in COMMAND_MODULES exposes `add_commands(subparsers)`, which adds its subcommands and
sets `func` on each.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from nmtscale.errors import ConfigurationError, DataError, SweepError

COMMAND_MODULES = (
    "nmtscale.corpus.cli",
    "nmtscale.runs",
    "nmtscale.results",
    "nmtscale.engine.counting",
    "nmtscale.book",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nmtscale", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_commands(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ConfigurationError, DataError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except SweepError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "interrupted: nothing is lost; run the same command again to resume every unfinished run from "
            "its last checkpoint",
            file=sys.stderr,
        )
        return 130
