"""The experiment data pipeline: from a run's data section to a tokenizer, training examples and test sets.

Training text comes from the built-in corpus (`nmtscale.corpus`) or from user files (TSV, or two aligned
files). When the run translates into more than one target language, every source begins with the target
language's tag (`<2de>`), as in Fernandes et al.'s one-to-many models.
"""

from __future__ import annotations

import hashlib
import random
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nmtscale import corpus
from nmtscale.config import DataConfig
from nmtscale.engine import langid
from nmtscale.engine.batching import Example
from nmtscale.engine.tokenizer import Tokenizer, train_tokenizer
from nmtscale.errors import ConfigurationError, DataError

DEV_SPLIT = "dev"
# A fixed seed for capping training pairs: smaller caps give nested subsets, whatever the run's seed.
SUBSAMPLE_SEED = 0


@dataclass
class TestSet:
    """One test set in one direction, tokenized, with its raw text for BLEU."""

    name: str
    direction: str
    examples: list[Example]
    sources: list[str]
    references: list[str]

    @property
    def target_lang(self) -> str:
        return self.direction.split("-")[1]


@dataclass
class ExperimentData:
    """Everything a run trains and evaluates on."""

    tokenizer: Tokenizer
    directions: list[str]
    tasks: list[list[Example]]
    test_sets: list[TestSet]
    tagged: bool
    # per direction, the lengths (longer side, tokens) of the training pairs over data.max_train_tokens
    dropped: dict[str, list[int]] = field(default_factory=dict)


def split_direction(direction: str) -> tuple[str, str]:
    """'en-de' -> ('en', 'de')."""
    src_lang, tgt_lang = direction.split("-")
    return src_lang, tgt_lang


def uses_target_tags(directions: Sequence[str], target_tags: bool | None = None) -> bool:
    """Whether sources carry a target-language tag: as `target_tags` says (`DataConfig.target_tags`), and when
    it is None exactly when the run translates into more than one language."""
    if target_tags is not None:
        return target_tags
    return len({split_direction(d)[1] for d in directions}) > 1


def prepare_data(cfg: DataConfig, cache_dir: Path) -> ExperimentData:
    """Load the training pairs and test sets of `cfg`, train (or reuse) the tokenizer, and encode them."""
    tagged = uses_target_tags(cfg.directions, cfg.target_tags)
    evaluated = cfg.directions + cfg.eval_directions
    train_pairs = [_training_pairs(cfg, direction) for direction in cfg.directions]
    if cfg.disjoint_sources:
        partners = cfg.disjoint_with or []
        split = disjoint_sources(
            train_pairs + [_training_pairs(cfg, direction) for direction in partners],
            cfg.directions + partners,
        )
        train_pairs = split[: len(cfg.directions)]
    raw_test_sets = _test_pairs(cfg)
    if cfg.tokenizer_directions is None:
        vocabulary_pairs = train_pairs
        tagged_targets = cfg.directions if tagged else []
    else:
        # A vocabulary shared by runs of different directions: the same text and the same tags in every run
        # (a run without tags adds none), so that all of them share one tokenizer and their losses compare.
        vocabulary_pairs = [_training_pairs(cfg, direction) for direction in cfg.tokenizer_directions]
        tagged_targets = cfg.tokenizer_directions + (cfg.directions if tagged else [])
    tags = sorted({Tokenizer.language_tag(split_direction(d)[1]) for d in tagged_targets})
    texts = [text for pairs in vocabulary_pairs for pair in pairs for text in pair]
    try:
        tokenizer = train_tokenizer(
            texts,
            cfg.vocab_size,
            user_symbols=tags,
            cache_dir=cache_dir / "tokenizers",
            character_coverage=cfg.character_coverage,
            byte_fallback=cfg.byte_fallback,
        )
    except RuntimeError as err:
        limit = re.search(r"value <= (\d+)", str(err))
        if limit is None:  # another of SentencePiece's checks, e.g. fewer pieces than the text's characters
            raise ConfigurationError(
                f"data.vocab_size={cfg.vocab_size}: SentencePiece cannot build this vocabulary from the "
                f"training text ({str(err).strip().splitlines()[-1]})"
            ) from None
        raise ConfigurationError(
            f"data.vocab_size={cfg.vocab_size}: the training text ({len(texts):,} sentences) allows at most "
            f"{int(limit.group(1)):,} pieces; lower data.vocab_size"
        ) from None
    tasks = [
        encode_pairs(tokenizer, pairs, direction, tagged, task)
        for task, (pairs, direction) in enumerate(zip(train_pairs, cfg.directions, strict=True))
    ]
    tasks, dropped = _within_length(tasks, cfg)
    test_sets = [
        TestSet(
            name=name,
            direction=direction,
            examples=encode_pairs(tokenizer, pairs, direction, tagged, evaluated.index(direction)),
            sources=[src for src, _ in pairs],
            references=[tgt for _, tgt in pairs],
        )
        for name, direction, pairs in raw_test_sets
    ]
    return ExperimentData(tokenizer, list(cfg.directions), tasks, test_sets, tagged, dropped)


def _within_length(
    tasks: list[list[Example]], cfg: DataConfig
) -> tuple[list[list[Example]], dict[str, list[int]]]:
    """Each direction's training examples without those longer than `data.max_train_tokens` (on their longer
    side), and the lengths of those that went; a direction left with none is a ConfigurationError."""
    if cfg.max_train_tokens is None:
        return tasks, {d: [] for d in cfg.directions}
    kept = [[e for e in examples if _tokens(e) <= cfg.max_train_tokens] for examples in tasks]
    dropped = {
        d: sorted(_tokens(e) for e in examples if _tokens(e) > cfg.max_train_tokens)
        for d, examples in zip(cfg.directions, tasks, strict=True)
    }
    emptied = [d for d, examples in zip(cfg.directions, kept, strict=True) if not examples]
    if emptied:
        raise ConfigurationError(
            f"data.max_train_tokens={cfg.max_train_tokens}: no {', '.join(emptied)} training pair is that "
            "short; raise it"
        )
    return kept, dropped


def encode_sources(
    tokenizer: Tokenizer, texts: Sequence[str], direction: str, tagged: bool
) -> list[list[int]]:
    """Token ids of source sentences, behind the target-language tag when the run uses tags."""
    prefix = [tokenizer.token_id(tokenizer.language_tag(split_direction(direction)[1]))] if tagged else []
    return [prefix + ids for ids in tokenizer.encode(list(texts))]


def encode_pairs(
    tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], direction: str, tagged: bool, task: int = 0
) -> list[Example]:
    """`Example`s of task `task` from (source, target) text pairs in one direction."""
    sources = encode_sources(tokenizer, [src for src, _ in pairs], direction, tagged)
    targets = tokenizer.encode([tgt for _, tgt in pairs])
    return [Example(src, tgt, task) for src, tgt in zip(sources, targets, strict=True)]


def disjoint_sources(
    pairs_per_direction: Sequence[Sequence[tuple[str, str]]], directions: Sequence[str]
) -> list[list[tuple[str, str]]]:
    """Each direction's pairs, keeping every English sentence in only one direction.

    On a multi-way parallel corpus two directions would otherwise train on translations of the same English
    sentences, a shared signal that looks like transfer (Fernandes et al. draw each pair from disjoint
    sources). An English sentence goes to one of the directions that have it, chosen by a hash of the
    sentence: the choice depends neither on the run's seed nor on the order of the data or the directions.
    """
    english_side = []
    for direction in directions:
        src_lang, tgt_lang = split_direction(direction)
        if "en" not in (src_lang, tgt_lang):
            raise ConfigurationError(f"disjoint sources need English on one side; {direction!r} has none")
        english_side.append(0 if src_lang == "en" else 1)
    holders: dict[str, list[int]] = {}
    for index, (pairs, side) in enumerate(zip(pairs_per_direction, english_side, strict=True)):
        for pair in pairs:
            owners = holders.setdefault(pair[side], [])
            if not owners or owners[-1] != index:
                owners.append(index)
    owner = {}
    for english, owners in holders.items():
        owners.sort(
            key=lambda index: directions[index]
        )  # by name: the listed order of directions is no matter
        owner[english] = owners[
            int.from_bytes(hashlib.sha256(english.encode()).digest()[:8], "big") % len(owners)
        ]
    return [
        [pair for pair in pairs if owner[pair[side]] == index]
        for index, (pairs, side) in enumerate(zip(pairs_per_direction, english_side, strict=True))
    ]


# Share of a user file's sampled sentences read as the other language, in each column, that makes the columns
# look swapped; and how many sentences are sampled (the first ones: the check costs about a second).
SWAPPED_SHARE = 0.6
SWAP_SAMPLE = 200


def warn_if_swapped(pairs: Sequence[tuple[str, str]], direction: str, key: str) -> None:
    """A warning naming `key` when the source column of a user file reads mostly as the target language and
    the target column as the source language: German in the English column trains a model, silently, in the
    wrong direction. Directions with a language `langid` does not know are not checked."""
    source, target = split_direction(direction)
    if source not in langid.LANGUAGES or target not in langid.LANGUAGES or not pairs:
        return
    sample = pairs[:SWAP_SAMPLE]
    try:
        found = langid.detect([text for pair in sample for text in pair])
    except ImportError:  # no lingua on this machine (see `langid`): training needs none
        return
    sources, targets = found[0::2], found[1::2]
    source_as_target = sum(language == target for language in sources) / len(sample)
    target_as_source = sum(language == source for language in targets) / len(sample)
    if source_as_target >= SWAPPED_SHARE and target_as_source >= SWAPPED_SHARE:
        warnings.warn(
            f"{key}: the columns look swapped: {source_as_target:.0%} of the first {len(sample)} source "
            f"sentences read as {target!r} and {target_as_source:.0%} of the targets as {source!r}; the file "
            f"should hold {source} first, then {target}",
            stacklevel=2,
        )


def _training_pairs(cfg: DataConfig, direction: str) -> list[tuple[str, str]]:
    if cfg.train_files is not None:
        key = f"data.train_files.{direction}"
        pairs = read_user_file(cfg.train_files[direction], key)
        warn_if_swapped(pairs, direction, key)
    else:
        try:
            pairs = corpus.load_pairs(*split_direction(direction), "train")
        except DataError as err:
            raise DataError(f"data.directions: {err}") from None
    return _subsample(pairs, cfg.max_train_pairs)


def read_user_file(paths: str | list[str], key: str) -> list[tuple[str, str]]:
    """The pairs of one user data entry; a bad or empty file is a DataError naming the config key too."""
    try:
        pairs = corpus.read_parallel(paths if isinstance(paths, str) else tuple(paths))
    except DataError as err:
        raise DataError(f"{key}: {err}") from None
    if not pairs:
        raise DataError(f"{key}: {paths}: no sentence pairs (the file is empty)")
    return pairs


def check_lengths(data: ExperimentData, cfg: DataConfig, max_tokens: int) -> None:
    """No pair of user data may be longer than one batch (`train.max_tokens` target tokens): a DataError
    names the file and line. Corpus pairs longer than that (its cleaning keeps up to 120 English words) are
    batched alone, over the budget: a warning says how many, and the train.max_tokens that holds them."""
    for direction, examples in zip(data.directions, data.tasks, strict=True):
        over = [_tokens(e) for e in examples if _tokens(e) > max_tokens]
        if over and direction not in (cfg.train_files or {}):
            warnings.warn(
                f"train.max_tokens={max_tokens}: {len(over):,} of the {len(examples):,} {direction} corpus "
                f"training pairs are longer (up to {max(over)} tokens); each is batched alone, over the "
                f"budget. train.max_tokens >= {max(over)} batches every pair within it",
                stacklevel=2,
            )
    entries = [
        (f"data.train_files.{d}", paths, data.tasks[data.directions.index(d)], d)
        for d, paths in (cfg.train_files or {}).items()
    ]
    by_name = {(t.direction, t.name): t.examples for t in data.test_sets}
    entries += [
        (f"data.test_files.{d}.{name}", paths, by_name[d, name], d)
        for d, sets in (cfg.test_files or {}).items()
        for name, paths in sets.items()
    ]
    for key, paths, examples, direction in entries:
        longest = max(examples, key=_tokens)
        if _tokens(longest) > max_tokens:
            # The examples may be a subsample: find the pair's line in the file by its encoding.
            encoded = encode_pairs(data.tokenizer, read_user_file(paths, key), direction, data.tagged)
            line = 1 + next(i for i, e in enumerate(encoded) if (e.src, e.tgt) == (longest.src, longest.tgt))
            raise DataError(
                f"{key}: {paths}:{line}: the pair is {_tokens(longest)} tokens long, more than one batch of "
                f"train.max_tokens={max_tokens}: shorten or drop the line, or raise train.max_tokens"
            )


def _tokens(example: Example) -> int:
    """The longer side of an example in tokens, the target with its EOS."""
    return max(len(example.src), len(example.tgt) + 1)


def _test_pairs(cfg: DataConfig) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(name, direction, pairs) of every test set of the run: corpus test sets, then user test files.

    The dev split exists for the training directions; named test sets are evaluated in every training and
    evaluation-only direction that they hold.
    """
    found = []
    evaluated = cfg.directions + cfg.eval_directions
    for name in cfg.test_sets:
        available_somewhere = False
        for direction in evaluated:
            src_lang, tgt_lang = split_direction(direction)
            if name == DEV_SPLIT:
                if direction not in cfg.directions:
                    continue
                found.append((name, direction, corpus.load_pairs(src_lang, tgt_lang, DEV_SPLIT)))
            elif name in corpus.test_set_names(src_lang, tgt_lang):
                found.append((name, direction, corpus.load_test_set(name, src_lang, tgt_lang)))
            else:
                continue
            available_somewhere = True
        if not available_somewhere:
            valid = sorted(
                {DEV_SPLIT, *(n for d in evaluated for n in corpus.test_set_names(*split_direction(d)))}
            )
            raise ConfigurationError(
                f"data.test_sets: {name!r} exists in none of the directions {cfg.directions}; valid: {valid}"
            )
    for direction, files in (cfg.test_files or {}).items():
        for name, paths in files.items():
            found.append((name, direction, read_user_file(paths, f"data.test_files.{direction}.{name}")))
    return [(name, direction, _subsample(pairs, cfg.max_test_pairs)) for name, direction, pairs in found]


def _subsample(pairs: Sequence[tuple[str, str]], cap: int | None) -> list[tuple[str, str]]:
    """A fixed random subset of at most `cap` pairs (corpus files are sorted, so a prefix would be one
    package); smaller caps give nested subsets."""
    if cap is None or len(pairs) <= cap:
        return list(pairs)
    pairs = list(pairs)
    random.Random(SUBSAMPLE_SEED).shuffle(pairs)
    return pairs[:cap]
