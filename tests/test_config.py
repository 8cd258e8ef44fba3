"""Run config loading: defaults, overrides, hashing, and errors that name the file, key and closest key."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from nmtscale import runs
from nmtscale.config import (
    LEGACY_NUMERICS,
    RunConfig,
    dotted_keys,
    from_dict,
    from_stored,
    load_config,
    override,
    set_keys,
    to_dict,
    with_numerics,
)
from nmtscale.errors import ConfigurationError, DataError
from nmtscale.runs import config_hash
from nmtscale.train import build_optimizer

EXAMPLE = Path(__file__).resolve().parents[1] / "params" / "example_run.yaml"


def write(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_example_config_documents_every_key_with_a_comment():
    raw = yaml.safe_load(EXAMPLE.read_text())
    documented = [f"{section}.{key}" for section, keys in raw.items() for key in keys]
    assert sorted(documented) == sorted(dotted_keys())
    for line in EXAMPLE.read_text().splitlines():
        if re.match(r"^\s*\w+:", line):
            assert "#" in line, f"key without a comment: {line!r}"


def test_example_config_loads_and_overrides_apply():
    cfg = load_config(
        EXAMPLE, ["train.steps=7", "model.arch=causallm", "model.enc_layers=0", "data.weights=null"]
    )
    assert cfg.train.steps == 7
    assert cfg.model.arch == "causallm"
    assert cfg.data.directions == ["en-de"]


def test_hash_is_a_function_of_the_content():
    assert config_hash(load_config(EXAMPLE)) == config_hash(load_config(EXAMPLE))
    # spelling out a default does not change the run; changing a value does
    assert config_hash(from_dict({})) == config_hash(from_dict({"train": {"seed": 0}}))
    assert config_hash(from_dict({})) != config_hash(from_dict({"train": {"seed": 1}}))


def legacy_config(**sections) -> RunConfig:
    """A config on the numerics every run recorded before issue 37 trained with, `sections` set on top."""
    raw = set_keys({}, LEGACY_NUMERICS, "<test>")
    for section, keys in sections.items():
        raw.setdefault(section, {}).update(keys)
    return from_dict(raw)


LEGACY_DEFAULT_ID = "96f2728055d0d4e3"  # the default config's run id before issue 37 moved the defaults


def test_stored_runs_keep_their_names():
    """The run id of the default config of engine version 2 on the committed corpus (with the numerics it had
    then), pinned: a new config key that is not listed in KEYS_ADDED_LATER changes it, and every recorded run
    would be trained again."""
    assert config_hash(legacy_config()) == LEGACY_DEFAULT_ID


def test_the_engine_default_is_the_fast_cpu_path_and_a_new_run():
    default = from_dict({})
    fast = {"model.dropout_mask": "random16", "model.attention_dropout_mask": "random16"}
    fast |= {"train.optimizer_kernel": "auto", "train.loss_kernel": "fused", "train.cpu_precision": "bf16"}
    assert {key: getattr(getattr(default, key.split(".")[0]), key.split(".")[1]) for key in fast} == fast
    assert set(fast) == set(LEGACY_NUMERICS)
    assert config_hash(default) != LEGACY_DEFAULT_ID


def test_a_key_added_later_keeps_old_ids_at_its_legacy_value_and_names_new_runs_otherwise():
    """`train.schedule` came after runs were recorded: spelt out at the value those runs had it keeps the
    pinned id, so chapters recorded before it keep reading their runs; any other value is a new run."""
    assert config_hash(legacy_config(train={"schedule": "inverse_sqrt"})) == LEGACY_DEFAULT_ID
    assert config_hash(legacy_config(train={"schedule": "cosine"})) != LEGACY_DEFAULT_ID


def test_the_optimizer_kernel_fused_needs_adamw_and_auto_fuses_adamw_only():
    fused = from_dict({"train": {"optimizer": "adamw", "optimizer_kernel": "fused"}})
    assert config_hash(fused) != config_hash(from_dict({"train": {"optimizer": "adamw"}}))
    with pytest.raises(ConfigurationError, match="train.optimizer_kernel fused needs train.optimizer adamw"):
        from_dict({"train": {"optimizer_kernel": "fused"}})
    assert from_dict({}).train.optimizer == "adafactor"  # "auto" is valid with it: Adafactor's own update
    model = torch.nn.Linear(2, 2)
    assert build_optimizer(model, from_dict({"train": {"optimizer": "adamw"}}).train).defaults["fused"]
    assert isinstance(build_optimizer(model, from_dict({}).train), torch.optim.Adafactor)


@pytest.mark.parametrize(
    ("section", "key", "fast"),
    [
        ("train", "optimizer_kernel", "auto"),
        ("model", "attention_dropout_mask", "random16"),
        ("train", "loss_kernel", "fused"),
        ("train", "cpu_precision", "bf16"),
    ],
)
def test_the_fast_cpu_paths_keep_old_ids_at_their_legacy_values_and_name_new_runs(section, key, fast):
    assert config_hash(legacy_config(**{section: {key: LEGACY_NUMERICS[f"{section}.{key}"]}})) == (
        LEGACY_DEFAULT_ID
    )
    assert config_hash(legacy_config(**{section: {key: fast}})) != LEGACY_DEFAULT_ID


def test_a_stored_config_without_a_key_added_later_reads_as_the_run_trained_it():
    """A record written before `train.loss_kernel` existed trained with F.cross_entropy: from_stored fills in
    that legacy value, where from_dict would fill in today's default, the fused kernel (another run)."""
    stored = to_dict(legacy_config())
    del stored["train"]["loss_kernel"]
    assert from_stored(stored).train.loss_kernel == "default"
    assert config_hash(from_stored(stored)) == LEGACY_DEFAULT_ID
    assert from_dict(stored).train.loss_kernel == "fused"


def test_a_chapters_numerics_sets_only_numerics_keys():
    raw = with_numerics({}, {"train.cpu_precision": "fp32"}, "params/x")
    assert from_dict(raw).train.cpu_precision == "fp32"
    with pytest.raises(ConfigurationError, match=r"params/x: numerics: 'train.lr' is not a numerics key"):
        with_numerics({}, {"train.lr": 0.1}, "params/x")
    with pytest.raises(
        ConfigurationError, match=r"params/x: numerics: .*dropout_mask=.random61.: expected one of"
    ):
        from_dict(with_numerics({}, {"model.dropout_mask": "random61"}, "params/x"), "params/x: numerics")


def test_the_engine_version_is_part_of_the_run_id(monkeypatch):
    before = config_hash(from_dict({}))
    monkeypatch.setattr(runs, "ENGINE_VERSION", 99)
    assert config_hash(from_dict({})) != before


def test_override_changes_a_copy_and_validates():
    base = load_config(EXAMPLE)
    wider = override(base, {"model.d_model": 128, "train.steps": 5})
    assert (wider.model.d_model, wider.train.steps, base.model.d_model) == (128, 5, 64)
    assert wider.model.head_dim == 32  # derived again from the new width
    with pytest.raises(
        ConfigurationError, match=r"model.d_mdoel: unknown key \(did you mean 'model.d_model'\?\)"
    ):
        override(base, {"model.d_mdoel": 128})


def test_ints_are_accepted_where_numbers_are_expected():
    assert from_dict({"train": {"lr": 1}}).train.lr == 1.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"trian": {}}, r"unknown section 'trian' \(did you mean 'train'\?\)"),
        ({"train": {"stpes": 3}}, r"unknown key train.stpes \(did you mean 'steps'\?\)"),
        ({"model": {"d_modle": 3}}, r"unknown key model.d_modle \(did you mean 'd_model'\?\)"),
        ({"train": {"steps": "many"}}, r"train.steps must be an integer, not 'many'"),
        ({"train": {"steps": 2.5}}, r"train.steps must be an integer"),
        ({"train": {"optimizer": "sgd"}}, r"train.optimizer must be one of 'adafactor', 'adamw'"),
        ({"data": {"directions": "en-de"}}, r"data.directions must be a list of a string"),
        ({"data": {"directions": ["ende"]}}, r"data.directions: 'ende' is not a direction"),
        ({"data": {"weights": [1], "temperature": 5}}, r"data.weights and data.temperature both set"),
        (
            {"data": {"directions": ["en-de", "en-fr"], "weights": [1]}},
            r"one non-negative weight per direction",
        ),
        ({"data": {"train_files": {"en-fr": "x.tsv"}}}, r"data.train_files has directions \['en-fr'\]"),
        ({"model": {"vocab_size": 100}}, r"model.vocab_size is set from the run's tokenizer"),
        ({"model": {"arch": "causallm", "enc_layers": 2}}, r"section 'model'.*enc_layers"),
        ({"train": {"steps": 10, "average_last": 5, "checkpoint_interval": 5}}, r"train.average_last=5"),
        ({"train": {"label_smoothing": 1}}, r"train.label_smoothing must be in \[0, 1\)"),
        ({"eval": {"final_fraction": 0}}, r"eval.final_fraction must be in \(0, 1\]"),
        (
            {"data": {"eval_directions": ["de-fr"]}},
            r"data.eval_directions: 'de-fr' translates into a language",
        ),
        ({"data": {"eval_directions": ["en-de"]}}, r"list a direction twice"),
        ({"data": {"disjoint_with": ["en-fr"]}}, r"only data.disjoint_sources: true does"),
        (
            {"data": {"directions": ["en-de", "en-fr"], "target_tags": False}},
            r"data.target_tags is false, but the run translates into \['de', 'fr'\]",
        ),
        (
            {"data": {"directions": ["en-de"], "disjoint_sources": True, "disjoint_with": ["en-de"]}},
            r"data.disjoint_with: \['en-de'\] are trained directions",
        ),
        (
            {"data": {"disjoint_sources": True, "disjoint_with": ["de-fr"]}},
            r"\['de-fr'\] have no English side",
        ),
        ({"eval": {"decode": "beam", "decode_interval": 150}}, r"multiple of eval.interval=100"),
        ({"eval": {"decode_interval": 100}}, r"eval.decode_interval=100 needs eval.decode greedy or beam"),
    ],
)
def test_bad_configs_name_file_key_and_suggestion(tmp_path, raw, expected):
    path = write(tmp_path, raw)
    with pytest.raises(ConfigurationError, match=expected) as err:
        load_config(path)
    assert str(path) in str(err.value)


def test_bad_override_names_key_and_suggestion():
    with pytest.raises(
        ConfigurationError, match=r"train.stesp: unknown key \(did you mean 'train.steps'\?\)"
    ):
        load_config(EXAMPLE, ["train.stesp=3"])
    with pytest.raises(ConfigurationError, match="not of the form section.key=value"):
        load_config(EXAMPLE, ["train.steps"])


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigurationError, match="absent.yaml: no such file"):
        load_config(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("train: [unclosed\n")
    with pytest.raises(ConfigurationError, match="bad.yaml: not valid YAML"):
        load_config(bad)


def test_a_rebuilt_corpus_changes_the_hash_of_corpus_runs_only(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.tsv.xz").write_bytes(b"one build")
    (tmp_path / "pairs.tsv").write_text("Hello\tHallo\n")
    monkeypatch.setenv("NMTSCALE_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    on_corpus = from_dict({})
    own_test = {"test_sets": [], "test_files": {"en-de": {"mine": "pairs.tsv"}}}
    on_user_files = from_dict({"data": {"train_files": {"en-de": "pairs.tsv"}, **own_test}})
    user_train_corpus_dev = from_dict({"data": {"train_files": {"en-de": "pairs.tsv"}, "test_sets": ["dev"]}})
    configs = (on_corpus, on_user_files, user_train_corpus_dev)
    before = [config_hash(c) for c in configs]
    (corpus / "train.tsv.xz").write_bytes(b"another build")
    after = [config_hash(c) for c in configs]
    assert [b != a for b, a in zip(before, after, strict=True)] == [True, False, True]


def test_user_data_contents_are_part_of_the_run_identity(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.tsv").write_text("Hello\tHallo\n")
    (tmp_path / "test.tsv").write_text("Yes\tJa\n")
    cfg = from_dict(
        {
            "data": {
                "train_files": {"en-de": "train.tsv"},
                "test_sets": [],
                "test_files": {"en-de": {"t": "test.tsv"}},
            }
        }
    )
    first = config_hash(cfg)
    (tmp_path / "train.tsv").write_text("Goodbye\tTschuess\n")  # same path, other text
    second = config_hash(cfg)
    (tmp_path / "test.tsv").write_text("No\tNein\n")
    third = config_hash(cfg)
    assert len({first, second, third}) == 3
    (tmp_path / "train.tsv").write_text("Hello\tHallo\n")
    (tmp_path / "test.tsv").write_text("Yes\tJa\n")
    assert config_hash(cfg) == first  # the identity is the content, not the file's date
    (tmp_path / "test.tsv").unlink()
    with pytest.raises(DataError, match=r"data.test_files.en-de.t: test.tsv: no such file"):
        config_hash(cfg)


def test_a_config_imports_neither_the_corpus_nor_the_trainer():
    """The layering: `config` describes a run; the run store (`runs.config_hash`) hashes the corpus."""
    code = (
        "import sys, nmtscale.config; "
        "print(sorted(m for m in sys.modules if m.startswith(('nmtscale.corpus', 'nmtscale.train'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
