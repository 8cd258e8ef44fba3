"""`corpus build` rebuilds data/ from the pinned Debian packages; `corpus stats` describes what is there."""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from nmtscale.corpus.build import build_corpus, source_of
from nmtscale.corpus.debian import write_lock
from nmtscale.corpus.store import (
    FOREIGN,
    LANGUAGES,
    TEST_SET_ORIGIN,
    data_dir,
    read_rows,
    split_file,
    test_file,
)


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    corpus = subparsers.add_parser("corpus", help="build or describe the parallel corpus")
    commands = corpus.add_subparsers(dest="corpus_command", required=True, metavar="SUBCOMMAND")

    build = commands.add_parser("build", help="rebuild data/ from the packages pinned in data/packages.lock")
    build.add_argument(
        "--data", type=Path, default=None, help="corpus folder (default: the repository's data/)"
    )
    build.add_argument("--downloads", type=Path, default=Path("downloads"), help="where the .deb files live")
    build.add_argument(
        "--extract", type=Path, default=Path("build/extract"), help="where packages are unpacked"
    )
    build.add_argument(
        "--relock", action="store_true", help="first rewrite packages.lock from the .deb files in --downloads"
    )
    build.set_defaults(func=run_build)

    stats = commands.add_parser("stats", help="pairs, tokens and lengths per source, split and pair")
    stats.set_defaults(func=run_stats)


def run_build(args: argparse.Namespace) -> int:
    root = args.data or data_dir()
    if args.relock:
        write_lock(sorted(args.downloads.glob("*.deb")), root / "packages.lock")
    manifest = build_corpus(root, args.downloads, args.extract)
    for name, info in manifest["files"].items():
        print(f"{name}: {info['rows']} rows")
    return 0


def _tokens(text: str, lang: str) -> int:
    """Words, or characters for Chinese (which does not separate words by spaces)."""
    return len(text.replace(" ", "")) if lang == "zh" else len(text.split())


def corpus_files(root: Path) -> dict[str, Path]:
    files = {split: split_file(root, split) for split in ("train", "dev")}
    files.update({f"test.{name}": test_file(root, name) for name in TEST_SET_ORIGIN})
    return files


def run_stats(args: argparse.Namespace) -> int:
    root = data_dir()
    header = (
        f"{'source':<17}{'split':<11}{'pair':<7}{'pairs':>8}{'en tok':>10}{'x tok':>10}"
        "  en words p10/p50/p90/max"
    )
    print(header)
    print("-" * len(header))
    totals: dict[tuple[str, str], list[int]] = defaultdict(list)
    four_way = {}
    for split, path in corpus_files(root).items():
        rows = read_rows(path)
        four_way[split] = sum(all(row[lang] for lang in LANGUAGES) for row in rows)
        by_source: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
        for row in rows:
            for lang in FOREIGN:
                if row["en"] and row[lang]:
                    by_source[(source_of(row["unit"]), lang)].append(row)
        for (source, lang), pair_rows in sorted(by_source.items()):
            lengths = np.array([_tokens(row["en"], "en") for row in pair_rows])
            foreign_tokens = sum(_tokens(row[lang], lang) for row in pair_rows)
            p10, p50, p90 = np.percentile(lengths, [10, 50, 90])
            print(
                f"{source:<17}{split:<11}{'en-' + lang:<7}{len(pair_rows):>8}"
                f"{lengths.sum():>10}{foreign_tokens:>10}"
                f"  {p10:.0f}/{p50:.0f}/{p90:.0f}/{lengths.max()}"
            )
            totals[(split, lang)].append(len(pair_rows))
    print()
    for (split, lang), counts in sorted(totals.items()):
        print(f"total {split:<11} en-{lang}: {sum(counts)}")
    for split, count in four_way.items():
        print(f"4-way {split:<11}: {count}")
    for lang in ("en", "de"):
        rows = read_rows(split_file(root, f"mono.{lang}"))
        words = sum(len(row["text"].split()) for row in rows)
        print(f"monolingual {lang}: {len(rows)} sentences, {words} words")
    return 0
