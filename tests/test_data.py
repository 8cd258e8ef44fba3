"""The experiment data pipeline on user files, and its use of the corpus API (stood in for by a fake)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from toy import toy_experiment, toy_pairs

from nmtscale.config import DataConfig
from nmtscale.engine import data
from nmtscale.errors import ConfigurationError, DataError


def write_tsv(path: Path, pairs) -> str:
    path.write_text("".join(f"{src}\t{tgt}\n" for src, tgt in pairs))
    return str(path)


def test_user_files_become_tokenized_tasks_and_test_sets(tmp_path):
    test_pairs = toy_pairs(20, seed=2)
    (tmp_path / "test.en").write_text("".join(src + "\n" for src, _ in test_pairs))
    (tmp_path / "test.de").write_text("".join(tgt + "\n" for _, tgt in test_pairs))
    cfg = DataConfig(
        vocab_size=48,
        test_sets=[],
        train_files={"en-de": write_tsv(tmp_path / "train.tsv", toy_pairs(200, seed=1))},
        test_files={"en-de": {"toy": [str(tmp_path / "test.en"), str(tmp_path / "test.de")]}},
    )
    prepared = data.prepare_data(cfg, tmp_path)
    assert not prepared.tagged
    assert prepared.tokenizer.vocab_size == 48
    assert [len(task) for task in prepared.tasks] == [200]
    (test_set,) = prepared.test_sets
    assert (test_set.name, test_set.direction, test_set.target_lang) == ("toy", "en-de", "de")
    assert test_set.references == [tgt for _, tgt in test_pairs]
    # the ids decode back to the text: nothing was lost or added on the way
    decoded_sources = prepared.tokenizer.decode([e.src for e in test_set.examples])
    assert decoded_sources == [src for src, _ in test_pairs]
    assert prepared.tokenizer.decode([e.tgt for e in test_set.examples]) == test_set.references


def test_more_than_one_target_language_tags_every_source(tmp_path):
    pairs = toy_pairs(100, seed=1)
    cfg = DataConfig(
        directions=["en-de", "en-fr"],
        vocab_size=60,
        test_sets=[],
        train_files={
            "en-de": write_tsv(tmp_path / "de.tsv", pairs),
            "en-fr": write_tsv(tmp_path / "fr.tsv", pairs),
        },
        test_files={"en-fr": {"toy": write_tsv(tmp_path / "test.tsv", pairs[:5])}},
    )
    prepared = data.prepare_data(cfg, tmp_path)
    assert prepared.tagged
    for task, lang in enumerate(["de", "fr"]):
        tag = prepared.tokenizer.token_id(prepared.tokenizer.language_tag(lang))
        assert all(e.src[0] == tag and e.task == task for e in prepared.tasks[task])
    fr_tag = prepared.tokenizer.token_id("<2fr>")
    assert all(e.src[0] == fr_tag and e.task == 1 for e in prepared.test_sets[0].examples)
    assert data.encode_sources(prepared.tokenizer, ["the cat"], "en-de", True)[0][0] != fr_tag


def test_target_tags_true_tags_a_single_direction_run(tmp_path):
    pairs = toy_pairs(100, seed=1)
    files = {"en-de": write_tsv(tmp_path / "de.tsv", pairs)}
    tests = {"en-de": {"toy": write_tsv(tmp_path / "test.tsv", pairs[:5])}}
    plain = data.prepare_data(
        DataConfig(vocab_size=60, test_sets=[], train_files=files, test_files=tests), tmp_path
    )
    cfg = DataConfig(vocab_size=60, test_sets=[], train_files=files, test_files=tests, target_tags=True)
    prepared = data.prepare_data(cfg, tmp_path / "tagged")
    assert prepared.tagged and not plain.tagged
    de_tag = prepared.tokenizer.token_id("<2de>")
    assert all(e.src[0] == de_tag for e in prepared.tasks[0] + prepared.test_sets[0].examples)
    behind_tag = prepared.tokenizer.decode([e.src[1:] for e in prepared.test_sets[0].examples])
    assert behind_tag == [src for src, _ in pairs[:5]]


def test_capped_training_sets_are_nested_fixed_subsets(tmp_path):
    train_file = write_tsv(tmp_path / "train.tsv", toy_pairs(200, seed=1))

    def capped(n):
        cfg = DataConfig(test_sets=["dev"], max_train_pairs=n, train_files={"en-de": train_file})
        return data._training_pairs(cfg, "en-de")

    small, large = capped(50), capped(120)
    assert len(small) == 50 and len(large) == 120
    assert set(small) <= set(large)
    assert capped(50) == small
    assert small != toy_pairs(200, seed=1)[:50]  # a random subset, not the head of the file


def test_malformed_user_data_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("one\tein\ntwo without a tab\n")
    cfg = DataConfig(test_sets=[], train_files={"en-de": str(bad)}, test_files={"en-de": {"t": str(bad)}})
    with pytest.raises(DataError, match="bad.tsv:2"):
        data.prepare_data(cfg, tmp_path)


class FakeCorpus:
    """The corpus API with a dev split for every direction and a test set 'news' into German only."""

    def load_pairs(self, src_lang, tgt_lang, split):
        return [(f"{split} {src_lang}", f"{split} {tgt_lang}")]

    def test_set_names(self, src_lang, tgt_lang):
        return ["news"] if tgt_lang == "de" else []

    def load_test_set(self, name, src_lang, tgt_lang):
        return [(f"{name} {src_lang}", f"{name} {tgt_lang}")]


def test_corpus_test_sets_are_evaluated_in_every_direction_that_has_them(monkeypatch):
    monkeypatch.setattr(data, "corpus", FakeCorpus())
    cfg = DataConfig(directions=["en-de", "de-en"], eval_directions=["fr-de"], test_sets=["dev", "news"])
    assert data._test_pairs(cfg) == [
        ("dev", "en-de", [("dev en", "dev de")]),
        ("dev", "de-en", [("dev de", "dev en")]),  # no dev split for the zero-shot direction fr-de
        ("news", "en-de", [("news en", "news de")]),
        ("news", "fr-de", [("news fr", "news de")]),
    ]
    cfg = DataConfig(directions=["de-en"], test_sets=["news"])
    with pytest.raises(
        ConfigurationError, match=r"data.test_sets: 'news' exists in none .* valid: \['dev'\]"
    ):
        data._test_pairs(cfg)


def test_the_corpus_pipeline_for_a_multilingual_run(tmp_path):
    cfg = DataConfig(
        directions=["en-de", "en-zh"],
        eval_directions=["de-zh"],
        test_sets=["dev", "ding", "story"],
        vocab_size=400,
        character_coverage=0.98,
        max_train_pairs=300,
    )
    prepared = data.prepare_data(cfg, tmp_path)
    assert [len(task) for task in prepared.tasks] == [300, 300]
    assert [f"{t.direction}/{t.name}" for t in prepared.test_sets] == [
        "en-de/dev", "en-zh/dev", "en-de/ding", "en-de/story", "en-zh/story", "de-zh/story",
    ]  # fmt: skip
    zh_tag = prepared.tokenizer.token_id("<2zh>")
    zero_shot = prepared.test_sets[-1]
    assert all(e.src[0] == zh_tag for e in zero_shot.examples)
    assert len(zero_shot.examples) == len(zero_shot.references) > 100


def test_disjoint_sources_give_each_english_sentence_to_one_direction():
    english = [f"sentence {i}" for i in range(300)]
    en_de = [(e, f"de {e}") for e in english[:250]]
    fr_en = [(f"fr {e}", e) for e in english[50:]]  # English on the target side
    de_part, fr_part = data.disjoint_sources([en_de, fr_en], ["en-de", "fr-en"])
    de_english, fr_english = {src for src, _ in de_part}, {tgt for _, tgt in fr_part}
    assert not de_english & fr_english
    assert de_english | fr_english == set(
        english
    )  # nothing lost: every sentence goes to a direction that has it
    assert set(english[:50]) <= de_english and set(english[250:]) <= fr_english
    assert 50 < len(de_english & set(english[50:250])) < 150  # the shared ones are split about evenly
    assert data.disjoint_sources([fr_en, en_de], ["fr-en", "en-de"]) == [fr_part, de_part]  # order-free
    with pytest.raises(ConfigurationError, match="'de-fr' has none"):
        data.disjoint_sources([en_de, en_de], ["en-de", "de-fr"])


def english_to_german_and_french(tmp_path: Path) -> dict:
    """DataConfig keys of a run on user files: En->De and En->Fr translations of the same 100 English
    sentences, one vocabulary over both, no test sets."""
    files = {
        "en-de": write_tsv(tmp_path / "de.tsv", toy_pairs(100, seed=1)),
        "en-fr": write_tsv(tmp_path / "fr.tsv", [(en, tgt.upper()) for en, tgt in toy_pairs(100, seed=1)]),
    }
    return {
        "vocab_size": 60,
        "test_sets": [],
        "train_files": files,
        "tokenizer_directions": ["en-de", "en-fr"],
    }


def test_a_run_disjoint_with_a_direction_trains_on_its_share_of_their_mixture(tmp_path):
    shared = {**english_to_german_and_french(tmp_path), "disjoint_sources": True}
    mixture = data.prepare_data(DataConfig(directions=["en-de", "en-fr"], **shared), tmp_path)
    share = data.prepare_data(DataConfig(directions=["en-de"], disjoint_with=["en-fr"], **shared), tmp_path)
    alone = data.prepare_data(DataConfig(directions=["en-de"], **shared), tmp_path)
    targets = [
        [example.tgt for example in task] for task in (mixture.tasks[0], share.tasks[0], alone.tasks[0])
    ]
    assert targets[0] == targets[1]  # the same German sentences the mixture gave En->De
    assert 20 < len(targets[1]) < 80 and len(targets[2]) == 100  # alone, it keeps every pair


def test_a_shared_vocabulary_is_the_same_tokenizer_whatever_the_run_trains(tmp_path):
    shared = english_to_german_and_french(tmp_path)
    files = shared["train_files"]
    one = data.prepare_data(DataConfig(directions=["en-de"], **shared), tmp_path)
    both = data.prepare_data(
        DataConfig(directions=["en-de", "en-fr"], disjoint_sources=True, **shared), tmp_path
    )
    assert one.tokenizer.model_path.read_bytes() == both.tokenizer.model_path.read_bytes()
    assert not one.tagged and both.tagged
    into_english = {
        **shared,
        "train_files": {
            **files,
            "de-en": write_tsv(tmp_path / "x.tsv", [(de, en) for en, de in toy_pairs(50, 5)]),
        },
    }
    untagged = data.prepare_data(DataConfig(directions=["de-en"], **into_english), tmp_path)
    assert untagged.tokenizer.model_path.read_bytes() == one.tokenizer.model_path.read_bytes()
    assert sum(len(t) for t in both.tasks) < 200  # the disjoint split dropped shared English from one side
    own = data.prepare_data(
        DataConfig(directions=["en-de"], vocab_size=60, test_sets=[], train_files=files), tmp_path
    )
    assert own.tokenizer.model_path.read_bytes() != one.tokenizer.model_path.read_bytes()


def test_capped_test_sets_are_fixed_random_subsets(tmp_path):
    pairs = toy_pairs(200, seed=4)
    files = {"en-de": {"toy": write_tsv(tmp_path / "test.tsv", pairs)}}
    train = {"en-de": write_tsv(tmp_path / "train.tsv", toy_pairs(100, seed=1))}
    cfg = DataConfig(vocab_size=48, test_sets=[], train_files=train, test_files=files, max_test_pairs=30)
    ((_, _, capped),) = data._test_pairs(cfg)
    assert len(capped) == 30 and set(capped) <= set(pairs) and capped != pairs[:30]
    assert data._test_pairs(cfg)[0][2] == capped
    cfg.max_test_pairs = None
    assert data._test_pairs(cfg)[0][2] == pairs


def test_a_direction_the_corpus_lacks_names_the_config_key(tmp_path):
    with pytest.raises(DataError, match=r"data.directions: no train data for en-xx .*valid: en-de"):
        data.prepare_data(DataConfig(directions=["en-xx"]), tmp_path)


def test_corpus_pairs_longer_than_one_batch_are_counted_in_a_warning(tmp_path):
    """The corpus cannot be edited like a user file, so a pair over train.max_tokens is batched alone; the
    warning says how many there are and the budget that would hold them."""
    experiment = toy_experiment(tmp_path)
    longest = max(max(len(e.src), len(e.tgt) + 1) for e in experiment.tasks[0])
    corpus_run = DataConfig(directions=["en-de"])
    with pytest.warns(
        UserWarning, match=rf"train.max_tokens=4: [\d,]+ of the 300 en-de corpus .*>= {longest}"
    ):
        data.check_lengths(experiment, corpus_run, max_tokens=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data.check_lengths(experiment, corpus_run, max_tokens=longest)


def test_training_pairs_over_max_train_tokens_are_dropped_counted_and_leave_the_vocabulary(tmp_path):
    """data.max_train_tokens drops the long training pairs after the tokenizer is trained: the vocabulary
    is that of the whole text, the test sets keep every pair, and `dropped` holds the lengths of what went."""
    pairs = toy_pairs(200, seed=1)
    pairs[7] = (" ".join([pairs[7][0]] * 30), " ".join([pairs[7][1]] * 30))  # one very long pair
    train_file = write_tsv(tmp_path / "train.tsv", pairs)
    (tmp_path / "test.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs[:20]))
    common = {"vocab_size": 48, "test_sets": [], "train_files": {"en-de": train_file}}
    common["test_files"] = {"en-de": {"toy": str(tmp_path / "test.tsv")}}
    whole = data.prepare_data(DataConfig(**common), tmp_path)
    lengths = sorted(data._tokens(e) for e in whole.tasks[0])
    limit = lengths[-2]  # every pair but the long one
    assert lengths[-1] > limit and whole.dropped == {"en-de": []}
    filtered = data.prepare_data(DataConfig(**common, max_train_tokens=limit), tmp_path)
    assert filtered.dropped == {"en-de": [lengths[-1]]}
    assert len(filtered.tasks[0]) == 199 and max(data._tokens(e) for e in filtered.tasks[0]) <= limit
    assert filtered.tokenizer.model_path == whole.tokenizer.model_path
    assert len(filtered.test_sets[0].examples) == len(whole.test_sets[0].examples) == 20
    with pytest.raises(ConfigurationError, match=r"data.max_train_tokens=1: no en-de training pair"):
        data.prepare_data(DataConfig(**common, max_train_tokens=1), tmp_path)
