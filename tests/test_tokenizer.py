"""Tokenizer: fixed special ids, single-piece language tags, EOS-aware decoding, content-hash cache."""

from __future__ import annotations

import random

import pytest

from nmtscale.engine.tokenizer import (
    BOS,
    EOS,
    PAD,
    UNK,
    Tokenizer,
    fitting_character_coverage,
    train_tokenizer,
)

# The tiny fixtures have a tiny alphabet: keep every character rather than letting coverage be tuned.
ALL_CHARACTERS = {"character_coverage": 1.0}
TEXTS = [
    f"{subject} {verb} the {thing} number {i}."
    for i in range(40)
    for subject, verb, thing in [("The user", "opens", "file"), ("Das Programm", "speichert", "Datei")]
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Tokenizer:
    return train_tokenizer(
        TEXTS,
        vocab_size=40,
        user_symbols=["<2de>", "<2en>"],
        cache_dir=tmp_path_factory.mktemp("tok"),
        **ALL_CHARACTERS,
    )


def test_special_ids_are_fixed(tokenizer):
    assert [tokenizer.piece(i) for i in (PAD, UNK, BOS, EOS)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tokenizer.vocab_size == 40


def test_language_tags_are_single_pieces(tokenizer):
    tag = Tokenizer.language_tag("de")
    assert tag == "<2de>"
    tag_id = tokenizer.token_id(tag)
    for text in (tag, f"{tag} The user opens the file.", f"file{tag}Datei"):
        pieces = [tokenizer.piece(i) for i in tokenizer.encode([text])[0]]
        assert pieces.count(tag) == 1 and tag_id in tokenizer.encode([text])[0]


def test_encode_adds_no_specials_and_decode_round_trips(tokenizer):
    text = "The user opens the file number 7."
    (ids,) = tokenizer.encode([text])
    assert BOS not in ids and EOS not in ids and PAD not in ids
    assert tokenizer.decode([ids]) == [text]


def test_decode_stops_at_eos_and_skips_pad_and_bos(tokenizer):
    ids = tokenizer.encode(["The user opens the file.", "Das Programm"])
    assert tokenizer.decode([[BOS, *ids[0], EOS, *ids[1]], [*ids[1], PAD, PAD]]) == [
        "The user opens the file.",
        "Das Programm",
    ]


def test_unknown_piece_is_an_error(tokenizer):
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tokenizer.token_id("<2xx>")


def test_cache_hit_on_same_inputs_and_miss_on_changed_ones(tmp_path):
    first = train_tokenizer(TEXTS, vocab_size=42, cache_dir=tmp_path, **ALL_CHARACTERS)
    model_time = first.model_path.stat().st_mtime_ns
    again = train_tokenizer(iter(TEXTS), vocab_size=42, cache_dir=tmp_path, **ALL_CHARACTERS)
    assert again.model_path == first.model_path
    assert again.model_path.stat().st_mtime_ns == model_time
    other_size = train_tokenizer(TEXTS, vocab_size=43, cache_dir=tmp_path, **ALL_CHARACTERS)
    other_text = train_tokenizer(
        [*TEXTS[:-1], "Something else entirely."], vocab_size=42, cache_dir=tmp_path, **ALL_CHARACTERS
    )
    assert len({first.model_path, other_size.model_path, other_text.model_path}) == 3
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".model") == sorted(
        p.model_path.name for p in (first, other_size, other_text)
    )


IDEOGRAPHS = [chr(0x4E00 + i) for i in range(400)]


def ideograph_texts() -> list[str]:
    """1200 texts of 30 ideographs each, the character of rank r drawn with frequency ~ 1/r^2."""
    rng = random.Random(0)
    weights = [1 / rank**2 for rank in range(1, len(IDEOGRAPHS) + 1)]
    return ["".join(rng.choices(IDEOGRAPHS, weights, k=30)) for _ in range(1200)]


def test_coverage_is_lowered_for_scripts_with_many_characters(tmp_path):
    # 400 ideographs, frequency ~ 1/rank^2: 99.95% coverage needs far more than 150 pieces.
    texts = ideograph_texts()
    with pytest.raises(RuntimeError, match="required_chars"):
        train_tokenizer(texts, vocab_size=150, cache_dir=tmp_path, character_coverage=0.9995)
    assert 0.98 <= fitting_character_coverage(texts, (150 - 4) // 2) < 0.9995
    assert fitting_character_coverage(TEXTS, 1000) == 0.9995  # small alphabets keep the usual coverage
    tokenizer = train_tokenizer(texts, vocab_size=150, cache_dir=tmp_path)
    assert tokenizer.vocab_size == 150
    assert tokenizer.decode(tokenizer.encode([IDEOGRAPHS[0] * 3])) == [IDEOGRAPHS[0] * 3]


def test_byte_fallback_spells_rare_characters_as_bytes(tmp_path):
    texts = ideograph_texts()
    rare = IDEOGRAPHS[-1] + IDEOGRAPHS[-2]  # far beyond the 0.98 coverage
    plain = train_tokenizer(texts, vocab_size=400, cache_dir=tmp_path, character_coverage=0.98)
    with_bytes = train_tokenizer(
        texts, vocab_size=400, cache_dir=tmp_path, character_coverage=0.98, byte_fallback=True
    )
    assert with_bytes.model_path != plain.model_path
    assert UNK in plain.encode([rare])[0]
    (ids,) = with_bytes.encode([rare])
    assert UNK not in ids
    assert sum(with_bytes.is_byte(i) for i in ids) == len(rare.encode("utf-8"))  # three bytes each
    assert with_bytes.decode([ids]) == [rare]
    assert not any(plain.is_byte(i) for i in range(plain.vocab_size))
