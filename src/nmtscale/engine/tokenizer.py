"""SentencePiece subword tokenizer with fixed special ids, trained once per (texts, settings) and cached.

Every model in the project shares the same special ids (PAD=0, UNK=1, BOS=2, EOS=3), so batches and models
never need to ask the tokenizer which id is padding. Target-language tags such as `<2de>` are SentencePiece
user-defined symbols: they always encode to one piece and are never split or merged with neighbouring text.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import sentencepiece as spm

from nmtscale.errors import DataError

PAD, UNK, BOS, EOS = 0, 1, 2, 3
DEFAULT_CACHE_DIR = Path("cache/tokenizers")
# SentencePiece's usual coverage; lowered automatically when the characters it needs would crowd out subwords.
MAX_CHARACTER_COVERAGE = 0.9995
MIN_CHARACTER_COVERAGE = 0.98  # SentencePiece refuses anything lower


class Tokenizer:
    """A trained SentencePiece model; `encode` adds no BOS/EOS, `decode` stops at EOS."""

    def __init__(self, model_path: str | Path):
        self.model_path = Path(model_path)
        try:
            self._sp = spm.SentencePieceProcessor(model_file=str(self.model_path))
        except (OSError, RuntimeError) as err:
            raise DataError(f"{self.model_path}: not a readable SentencePiece model ({err})") from None

    @property
    def vocab_size(self) -> int:
        return self._sp.get_piece_size()

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, without BOS or EOS."""
        return self._sp.encode(list(texts), out_type=int)

    def decode(self, ids: list[list[int]]) -> list[str]:
        """Texts from id sequences; each sequence is cut at its first EOS, PAD and BOS are skipped."""
        texts = []
        for sequence in ids:
            kept = []
            for token in sequence:
                if token == EOS:
                    break
                if token not in (PAD, BOS):
                    kept.append(int(token))
            texts.append(self._sp.decode(kept))
        return texts

    def token_id(self, piece: str) -> int:
        """The id of one vocabulary piece; ValueError if the piece is not in the vocabulary."""
        token = self._sp.piece_to_id(piece)
        if token == UNK and piece != self._sp.id_to_piece(UNK):
            raise ValueError(f"piece {piece!r} is not in the vocabulary of {self.model_path}")
        return token

    def is_byte(self, token: int) -> bool:
        """Whether the id is one of the byte pieces of a byte-fallback vocabulary."""
        return self._sp.is_byte(int(token))

    def piece(self, token: int) -> str:
        """The vocabulary piece of one id."""
        return self._sp.id_to_piece(int(token))

    @staticmethod
    def language_tag(lang: str) -> str:
        """The target-language tag piece, e.g. `<2de>` for German."""
        return f"<2{lang}>"


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int,
    user_symbols: Iterable[str] = (),
    cache_dir: str | Path = DEFAULT_CACHE_DIR,
    model_type: str = "unigram",
    character_coverage: float | None = None,
    byte_fallback: bool = False,
) -> Tokenizer:
    """Train (or load from `cache_dir`) a SentencePiece model on `texts`.

    The cache key is a SHA-256 of the texts in order and of every setting, so the same inputs reuse the
    stored model and any change trains a new one. Chinese has thousands of characters (En-Zh train needs
    about 2,100 for 99.95% coverage): with `character_coverage=None` the coverage is lowered so that single
    characters take at most half of the vocabulary (never below 0.98, SentencePiece's floor), and the
    rarest characters map to UNK. Even at 0.98, En-Zh train needs about 680 characters. With `byte_fallback`
    a character outside the vocabulary becomes its UTF-8 bytes (256 of the pieces are bytes) instead of UNK,
    so a model can still read and write it.
    """
    if vocab_size < 8:
        raise ValueError(f"vocab_size must be at least 8, got {vocab_size}")
    texts = [text for text in texts if text]
    if not texts:
        raise ValueError("train_tokenizer needs at least one non-empty text")
    user_symbols = list(user_symbols)
    if character_coverage is None:
        character_coverage = fitting_character_coverage(texts, (vocab_size - 4 - len(user_symbols)) // 2)
    settings = {
        "vocab_size": vocab_size,
        "user_symbols": user_symbols,
        "model_type": model_type,
        "character_coverage": character_coverage,
        "sentencepiece": spm.__version__,
    }
    if byte_fallback:  # only when set, so tokenizers trained before the option keep their cache names
        settings["byte_fallback"] = True
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\n")
    cache_dir = Path(cache_dir)
    model_path = cache_dir / f"{digest.hexdigest()[:20]}.model"
    if model_path.exists():
        return Tokenizer(model_path)

    cache_dir.mkdir(parents=True, exist_ok=True)
    # Train under a private name and rename, so a concurrent run never loads a half-written model.
    tmp_prefix = cache_dir / f"{model_path.stem}.tmp{os.getpid()}"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(tmp_prefix),
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        pad_id=PAD,
        unk_id=UNK,
        bos_id=BOS,
        eos_id=EOS,
        user_defined_symbols=settings["user_symbols"],
        byte_fallback=byte_fallback,
        # Single-threaded and unsampled: the same texts give the same model on every machine.
        num_threads=1,
        input_sentence_size=0,
        max_sentence_length=16384,
        minloglevel=2,
    )
    os.replace(f"{tmp_prefix}.model", model_path)
    os.replace(f"{tmp_prefix}.vocab", model_path.with_suffix(".vocab"))
    return Tokenizer(model_path)


def fitting_character_coverage(texts: list[str], max_characters: int) -> float:
    """The coverage reached by the `max_characters` most frequent characters, within [0.98, 0.9995]."""
    counts = Counter(char for text in texts for char in text if not char.isspace())
    total = sum(counts.values())
    covered = sum(n for _, n in counts.most_common(max(1, max_characters)))
    coverage = covered / total if total else MAX_CHARACTER_COVERAGE
    return min(MAX_CHARACTER_COVERAGE, max(MIN_CHARACTER_COVERAGE, coverage))
