"""Run configuration: one dataclass per section, loaded from YAML with `--set key=value` overrides.

A run is fully described by its `RunConfig`; the hash of its canonical form (`runs.config_hash`) names the
run's directory.
Every key is documented in `params/example_run.yaml`. Loading checks every key and type and the combinations
that cannot work, and raises `ConfigurationError` naming the file, the dotted key and the closest valid key.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from nmtscale.engine.model import ModelConfig
from nmtscale.errors import ConfigurationError, closest, require_file

# The model section is engine.model.ModelConfig minus the vocabulary size, which the run's tokenizer sets.
MODEL_KEYS_SET_BY_RUN = ("vocab_size",)
PLACEHOLDER_VOCAB_SIZE = 1


@dataclass
class DataConfig:
    """What the run trains and evaluates on (see `nmtscale.engine.data`)."""

    directions: list[str] = field(default_factory=lambda: ["en-de"])
    eval_directions: list[str] = field(default_factory=list)
    test_sets: list[str] = field(default_factory=lambda: ["dev"])
    vocab_size: int = 2000
    character_coverage: float = 0.9995
    weights: list[float] | None = None
    temperature: float | None = None
    max_train_pairs: int | None = None
    # Training pairs whose longer side is over this many tokens are dropped (after the tokenizer is trained,
    # so the vocabulary is the unfiltered text's), their lengths kept in `ExperimentData.dropped`: a pair of
    # thousands of tokens, batched alone, can take a language model's attention over the machine's memory.
    max_train_tokens: int | None = None
    train_files: dict[str, str | list[str]] | None = None
    test_files: dict[str, dict[str, str | list[str]]] | None = None
    disjoint_sources: bool = False
    # Directions the run does not train on but splits the English sentences with, as `disjoint_sources` would
    # if it trained them too: a single-direction model on exactly the sentences its direction gets in a
    # mixture with these, so that the two have seen the same text.
    disjoint_with: list[str] | None = None
    tokenizer_directions: list[str] | None = None
    max_test_pairs: int | None = None
    byte_fallback: bool = False
    # Whether sources begin with the target-language tag (`<2zh>`): null, exactly when the run translates into
    # more than one language; true, always, so that a single-direction model sees its sources as a mixture's
    # direction does (the tag is then the only difference left between the two); false, never.
    target_tags: bool | None = None

    def validate(self, source: str) -> None:
        self._validate_directions(source)
        self._validate_sampling(source)
        self._validate_sizes(source)
        self._validate_files(source)

    def _validate_directions(self, source: str) -> None:
        """Directions like 'en-de', none twice, evaluation only into languages the run learns to produce."""
        if not self.directions:
            raise ConfigurationError(f"{source}: data.directions is empty; give at least one, e.g. ['en-de']")
        for key in ("directions", "eval_directions", "tokenizer_directions", "disjoint_with"):
            for direction in getattr(self, key) or []:
                parts = direction.split("-")
                if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
                    raise ConfigurationError(
                        f"{source}: data.{key}: {direction!r} is not a direction like 'en-de'"
                    )
        all_directions = self.directions + self.eval_directions
        if len(set(all_directions)) != len(all_directions):
            raise ConfigurationError(
                f"{source}: data.directions and data.eval_directions list a direction twice: {all_directions}"
            )
        targets = {direction.split("-")[1] for direction in self.directions}
        for direction in self.eval_directions:
            if direction.split("-")[1] not in targets:
                raise ConfigurationError(
                    f"{source}: data.eval_directions: {direction!r} translates into a language the run never "
                    f"learns to produce (its targets: {sorted(targets)})"
                )
        if self.target_tags is False and len(targets) > 1:
            raise ConfigurationError(
                f"{source}: data.target_tags is false, but the run translates into {sorted(targets)}: "
                "only the tag tells the model which language to produce"
            )

    def _validate_sampling(self, source: str) -> None:
        """Task weights or a temperature, not both, each in range."""
        if self.weights is not None and self.temperature is not None:
            raise ConfigurationError(
                f"{source}: data.weights and data.temperature both set; task sampling uses one or the other"
            )
        if self.weights is not None and (
            len(self.weights) != len(self.directions) or min(self.weights) < 0 or sum(self.weights) <= 0
        ):
            raise ConfigurationError(
                f"{source}: data.weights needs one non-negative weight per direction "
                f"({len(self.directions)}), not {self.weights}"
            )
        if self.temperature is not None and self.temperature <= 0:
            raise ConfigurationError(f"{source}: data.temperature must be > 0, not {self.temperature}")

    def _validate_sizes(self, source: str) -> None:
        """Vocabulary, character coverage and the caps on sentence pairs."""
        if self.vocab_size < 8:
            raise ConfigurationError(f"{source}: data.vocab_size must be at least 8, not {self.vocab_size}")
        if not 0 < self.character_coverage <= 1:
            raise ConfigurationError(
                f"{source}: data.character_coverage must be in (0, 1], not {self.character_coverage}"
            )
        if self.max_test_pairs is not None and self.max_test_pairs < 1:
            raise ConfigurationError(f"{source}: data.max_test_pairs must be >= 1, not {self.max_test_pairs}")
        if self.max_train_pairs is not None and self.max_train_pairs < 1:
            raise ConfigurationError(
                f"{source}: data.max_train_pairs must be >= 1, not {self.max_train_pairs}"
            )
        if self.max_train_tokens is not None and self.max_train_tokens < 1:
            raise ConfigurationError(
                f"{source}: data.max_train_tokens must be >= 1, not {self.max_train_tokens}"
            )

    def _validate_files(self, source: str) -> None:
        """User training, tokenizer and test files agree with the directions and the corpus test sets;
        disjoint sources need an English side in every direction."""
        all_directions = self.directions + self.eval_directions
        read = self.directions + (self.disjoint_with or [])
        if self.train_files is not None and sorted(self.train_files) != sorted(read):
            raise ConfigurationError(
                f"{source}: data.train_files has directions {sorted(self.train_files)} but data.directions "
                f"and data.disjoint_with are {read}; user training files need one entry per direction"
            )
        if self.disjoint_with is not None and not self.disjoint_sources:
            raise ConfigurationError(
                f"{source}: data.disjoint_with names directions to split the English sentences with, which "
                "only data.disjoint_sources: true does"
            )
        shared = sorted(set(self.disjoint_with or []) & set(self.directions))
        if shared:
            raise ConfigurationError(
                f"{source}: data.disjoint_with: {shared} are trained directions (data.directions); name only "
                "the directions the run does not train"
            )
        if self.disjoint_sources:
            without_english = [
                d for d in self.directions + (self.disjoint_with or []) if "en" not in d.split("-")
            ]
            if without_english:
                raise ConfigurationError(
                    f"{source}: data.disjoint_sources splits the English sentences between the directions; "
                    f"{without_english} have no English side"
                )
        if self.tokenizer_directions is not None:
            if not self.tokenizer_directions:
                raise ConfigurationError(
                    f"{source}: data.tokenizer_directions is empty; give null or directions"
                )
            missing = [d for d in self.tokenizer_directions if d not in (self.train_files or {})]
            if self.train_files is not None and missing:
                raise ConfigurationError(
                    f"{source}: data.tokenizer_directions {missing} have no entry in data.train_files"
                )
        for direction, sets in (self.test_files or {}).items():
            clash = sorted(set(sets or {}) & set(self.test_sets))
            if clash:
                raise ConfigurationError(
                    f"{source}: data.test_files.{direction}: {clash} also named in data.test_sets, whose "
                    "corpus set of that name it would replace; give your file another name"
                )
            if direction not in all_directions:
                raise ConfigurationError(
                    f"{source}: data.test_files.{direction}: not one of the run's directions "
                    f"{all_directions}" + closest(direction, all_directions)
                )
        if not self.test_sets and not self.test_files:
            raise ConfigurationError(f"{source}: data.test_sets is empty and there are no data.test_files")


def cooldown_start(steps: int, cooldown_fraction: float) -> int:
    """The update after which a "constant_cooldown" schedule leaves the peak rate: the last
    `cooldown_fraction` of `steps` cool down."""
    return steps - round(cooldown_fraction * steps)


@dataclass
class TrainConfig:
    """How the model is optimised (see `nmtscale.train`)."""

    steps: int = 1000
    max_tokens: int = 4096
    accumulate: int = 1
    optimizer: Literal["adafactor", "adamw"] = "adafactor"
    lr: float = 0.03  # suits Adafactor, whose step is relative to each parameter's scale; AdamW wants ~1e-3
    warmup_steps: int = 100
    # After the warm-up: "inverse_sqrt" decays as 1/sqrt(update) and never anneals; "cosine" decays to zero at
    # `steps`, so the final loss is that of an annealed model rather than of a curve still falling;
    # "constant_cooldown" holds the peak rate, then cools down to zero over the last `cooldown_fraction` of
    # `steps` as 1 - sqrt(progress) (Hägele et al. 2024). Runs of this schedule that differ only in `steps`
    # share their constant stretch: a run starts from the snapshot another one saved where it began its
    # cool-down (`runs.trunk_key`), so each budget costs its cool-down, not a run from scratch.
    schedule: Literal["inverse_sqrt", "cosine", "constant_cooldown"] = "inverse_sqrt"
    cooldown_fraction: float = 0.2
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.98])
    # The next three keys (and the model's dropout masks) choose how a step runs; their defaults are the fast
    # CPU path (issue 37: about 1.2x at d_model 64 and 1.7x at 128 on one core of an avx512_bf16 CPU,
    # benchmarks/training_paths.py), which learns what the fp32 path learns to within a seed std
    # (benchmarks/training_numerics.py). Runs recorded before it trained on `LEGACY_NUMERICS`.
    # How AdamW's update runs: "default" is torch's own choice (on CPU a loop over the parameters, many small
    # ops; foreach on CUDA), "fused" one kernel over all parameters (the same arithmetic, 3-5% faster at the
    # chapters' sizes); "auto" is fused for AdamW, and Adafactor's own update (it has no fused one).
    optimizer_kernel: Literal["default", "fused", "auto"] = "auto"
    # How the label-smoothed cross-entropy runs: "default" is F.cross_entropy (log-softmax, NLL and the
    # smoothing sum, each with its own backward pass over the logits), "fused" one log-softmax whose backward
    # writes softmax minus the smoothed target at once: the same loss, about half its time.
    loss_kernel: Literal["default", "fused"] = "fused"
    # Matrix products on CPU: "fp32", or "bf16": the linear layers multiply bf16 copies of their inputs and
    # weights and return fp32 (`model.bf16_matmuls`; fp32 weights, optimiser, norms, attention, loss), where
    # the processor multiplies bf16 natively (avx512_bf16 or AMX; elsewhere the run stays fp32, and its
    # record's provenance says which it got). CUDA always trains under bf16 autocast.
    cpu_precision: Literal["fp32", "bf16"] = "bf16"
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    logit_cap: float | None = None
    clip_norm: float | None = 1.0
    source_lm_weight: float = 1.0
    checkpoint_interval: int = 100
    average_last: int = 0
    seed: int = 0

    def validate(self, source: str) -> None:
        positive = ("steps", "max_tokens", "accumulate", "checkpoint_interval")
        for key in positive:
            if getattr(self, key) < 1:
                raise ConfigurationError(f"{source}: train.{key} must be >= 1, not {getattr(self, key)}")
        if self.lr <= 0:
            raise ConfigurationError(f"{source}: train.lr must be > 0, not {self.lr}")
        if self.optimizer == "adafactor" and self.lr > 1:
            raise ConfigurationError(
                f"{source}: train.lr={self.lr} with train.optimizer adafactor: torch's Adafactor steps by "
                "min(lr, 1/sqrt(step)) relative to each weight's scale, so any lr above 1 acts as 1 (and a "
                "diverging rate could not be told apart); give lr <= 1"
            )
        if self.optimizer_kernel == "fused" and self.optimizer != "adamw":
            raise ConfigurationError(
                f"{source}: train.optimizer_kernel fused needs train.optimizer adamw, not {self.optimizer}"
            )
        if self.weight_decay < 0:
            raise ConfigurationError(f"{source}: train.weight_decay must be >= 0, not {self.weight_decay}")
        if self.warmup_steps < 0:
            raise ConfigurationError(f"{source}: train.warmup_steps must be >= 0, not {self.warmup_steps}")
        if not 0 < self.cooldown_fraction <= 1:
            raise ConfigurationError(
                f"{source}: train.cooldown_fraction must be in (0, 1], not {self.cooldown_fraction}"
            )
        start = cooldown_start(self.steps, self.cooldown_fraction)
        if self.schedule == "constant_cooldown" and self.warmup_steps > start:
            raise ConfigurationError(
                f"{source}: train.warmup_steps={self.warmup_steps} runs past the cool-down's start at update "
                f"{start} (train.steps={self.steps}, train.cooldown_fraction={self.cooldown_fraction}); "
                "shorten the warm-up or the cool-down"
            )
        if len(self.adam_betas) != 2 or not all(0 <= b < 1 for b in self.adam_betas):
            raise ConfigurationError(
                f"{source}: train.adam_betas must be two numbers in [0, 1), not {self.adam_betas}"
            )
        if not 0 <= self.label_smoothing < 1:
            raise ConfigurationError(
                f"{source}: train.label_smoothing must be in [0, 1), not {self.label_smoothing}"
            )
        for key in ("logit_cap", "clip_norm"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise ConfigurationError(
                    f"{source}: train.{key} must be > 0 or null, not {getattr(self, key)}"
                )
        if self.source_lm_weight < 0:
            raise ConfigurationError(
                f"{source}: train.source_lm_weight must be >= 0, not {self.source_lm_weight}"
            )
        if self.average_last < 0:
            raise ConfigurationError(f"{source}: train.average_last must be >= 0, not {self.average_last}")
        if self.average_last * self.checkpoint_interval > self.steps:
            raise ConfigurationError(
                f"{source}: train.average_last={self.average_last} checkpoints every "
                f"train.checkpoint_interval={self.checkpoint_interval} steps need more than "
                f"train.steps={self.steps}"
            )


@dataclass
class EvalConfig:
    """When and how the run is evaluated."""

    interval: int = 100
    final_fraction: float = 0.1
    decode: Literal["none", "greedy", "beam"] = "none"
    decode_interval: int | None = None
    beam_size: int = 4
    length_penalty: float = 1.0
    max_decode_sentences: int | None = 500

    def validate(self, source: str) -> None:
        if self.interval < 1:
            raise ConfigurationError(f"{source}: eval.interval must be >= 1, not {self.interval}")
        if not 0 < self.final_fraction <= 1:
            raise ConfigurationError(
                f"{source}: eval.final_fraction must be in (0, 1], not {self.final_fraction}"
            )
        if self.decode_interval is not None and (
            self.decode == "none" or self.decode_interval < 1 or self.decode_interval % self.interval
        ):
            raise ConfigurationError(
                f"{source}: eval.decode_interval={self.decode_interval} needs eval.decode greedy or beam and "
                f"must be a positive multiple of eval.interval={self.interval}"
            )
        if self.beam_size < 1:
            raise ConfigurationError(f"{source}: eval.beam_size must be >= 1, not {self.beam_size}")
        if self.max_decode_sentences is not None and self.max_decode_sentences < 1:
            raise ConfigurationError(
                f"{source}: eval.max_decode_sentences must be >= 1 or null, not {self.max_decode_sentences}"
            )


@dataclass
class RunConfig:
    """Everything that determines a run's result."""

    model: ModelConfig = field(default_factory=lambda: ModelConfig(vocab_size=PLACEHOLDER_VOCAB_SIZE))
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def validate(self, source: str) -> None:
        self.data.validate(source)
        self.train.validate(source)
        self.eval.validate(source)


SECTIONS = {"model": ModelConfig, "data": DataConfig, "train": TrainConfig, "eval": EvalConfig}


def to_dict(cfg: RunConfig) -> dict[str, Any]:
    """The config as plain YAML-able data, without the keys the run sets itself."""
    raw = dataclasses.asdict(cfg)
    for key in MODEL_KEYS_SET_BY_RUN:
        raw["model"].pop(key)
    # ModelConfig fills in head_dim = d_model / n_heads; store that default as null again, so that a changed
    # d_model or n_heads derives it anew and the same model always has the same hash.
    model = raw["model"]
    if model["head_dim"] * model["n_heads"] == model["d_model"]:
        model["head_dim"] = None
    return raw


# The numerics every run recorded before the fast CPU path became the engine's default (issue 37): torch's
# Bernoulli dropout, SDPA's attention, torch's own AdamW loop, F.cross_entropy and fp32 products. A chapter
# recorded on it pins these keys (its `numerics` parameter) until it moves to the fast path, which trains
# every one of its runs again.
LEGACY_NUMERICS: dict[str, str] = {
    "model.dropout_mask": "bernoulli",
    "model.attention_dropout_mask": "bernoulli",
    "train.optimizer_kernel": "default",
    "train.loss_kernel": "default",
    "train.cpu_precision": "fp32",
}

# Keys added after runs of this engine version were stored, as "section.key", each with the value every run
# recorded before the key existed trained with: left out of the hash at that value (and filled in with it when
# a stored config lacks the key, `from_stored`), so that adding a key, or moving its default, never renames
# (and so orphans) the runs recorded before. Bumping `record.ENGINE_VERSION` renames every run: empty it then.
# Every numerics key but `model.dropout_mask`, which the first runs of this version already stored.
KEYS_ADDED_LATER: dict[str, Any] = {
    "train.schedule": "inverse_sqrt",
    "data.max_train_tokens": None,
    "data.disjoint_with": None,
    "data.target_tags": None,
    "train.cooldown_fraction": 0.2,
    **{key: value for key, value in LEGACY_NUMERICS.items() if key != "model.dropout_mask"},
}


def with_numerics(raw: dict[str, Any], numerics: typing.Mapping[str, Any], source: str) -> dict[str, Any]:
    """A copy of the raw config `raw` with a chapter's `numerics` parameter set: keys of `LEGACY_NUMERICS`
    only (any other key is an error naming `source`), so that it chooses how a step runs and nothing else."""
    if not isinstance(numerics, typing.Mapping):
        raise ConfigurationError(f"{source}: numerics must be a mapping of engine keys to values")
    for key in numerics:
        if key not in LEGACY_NUMERICS:
            raise ConfigurationError(
                f"{source}: numerics: {key!r} is not a numerics key; expected some of {list(LEGACY_NUMERICS)}"
            )
    return set_keys(raw, numerics, f"{source}: numerics")


def from_stored(raw: Any, source: str = "<stored config>") -> RunConfig:
    """`from_dict` for a config a run stored (its record, summary or run directory): a key it lacks because
    it was added later (`KEYS_ADDED_LATER`) reads as the value the run trained with, not today's default."""
    if isinstance(raw, dict):
        raw = {name: dict(value) if isinstance(value, dict) else value for name, value in raw.items()}
        for dotted, legacy in KEYS_ADDED_LATER.items():
            section, key = dotted.split(".")
            if isinstance(raw.get(section), dict):
                raw[section].setdefault(key, legacy)
    return from_dict(raw, source)


def from_dict(raw: Any, source: str = "<config>") -> RunConfig:
    """Build and validate a RunConfig from parsed YAML; `source` names the file in error messages."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{source}: expected a mapping of sections, got {type(raw).__name__}")
    sections = {}
    for name, value in raw.items():
        if name not in SECTIONS:
            raise ConfigurationError(f"{source}: unknown section {name!r}" + closest(str(name), SECTIONS))
        sections[name] = value
    for name, value in sections.items():
        if value is not None and not isinstance(value, dict):
            raise ConfigurationError(
                f"{source}: section {name!r} must be a mapping of keys to values, got {type(value).__name__}"
            )
    model_raw = dict(sections.get("model") or {})
    for key in MODEL_KEYS_SET_BY_RUN:
        if key in model_raw:
            raise ConfigurationError(
                f"{source}: model.{key} is set from the run's tokenizer; set data.vocab_size instead"
            )
        model_raw[key] = PLACEHOLDER_VOCAB_SIZE
    sections["model"] = model_raw
    cfg = RunConfig(**{name: _build(cls, sections.get(name), source, name) for name, cls in SECTIONS.items()})
    cfg.validate(source)
    return cfg


def load_config(path: str | Path, overrides: typing.Sequence[str] = ()) -> RunConfig:
    """Read a run config from YAML and apply `key=value` overrides (dotted keys, YAML values)."""
    raw = set_keys(read_yaml(path) or {}, parse_overrides(overrides, str(path)), str(path))
    return from_dict(raw, str(path))


class StrictYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader with two fixes for config files: a key given twice in one mapping is an error
    (PyYAML keeps the last silently), and `3e-4` is a number, as in YAML 1.2 (PyYAML 1.1 reads a string)."""


def _mapping_without_duplicates(loader: StrictYamlLoader, node: yaml.MappingNode, deep: bool = False):
    first_line = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in first_line:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first on line {first_line[key]})", key_node.start_mark
            )
        first_line[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


StrictYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)
EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+$")
StrictYamlLoader.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, list("-+0123456789"))


def parse_yaml(text: str, source: str) -> Any:
    """YAML text parsed by `StrictYamlLoader`; an error is a ConfigurationError naming `source` and line."""
    try:
        return yaml.load(text, Loader=StrictYamlLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise ConfigurationError(f"{source}: not valid YAML: {err}") from None


def read_yaml(path: str | Path) -> Any:
    """Parsed YAML of a file; a missing file or a syntax error is a ConfigurationError naming the file."""
    path = Path(path)
    require_file(path, ConfigurationError)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConfigurationError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    return parse_yaml(text, str(path))


def override(cfg: RunConfig, changes: typing.Mapping[str, Any]) -> RunConfig:
    """A validated copy of `cfg` with dotted keys changed, e.g. `override(cfg, {"model.d_model": 128})`."""
    return from_dict(set_keys(to_dict(cfg), changes, "<override>"), "<override>")


def parse_overrides(overrides: typing.Sequence[str], source: str) -> dict[str, Any]:
    """{'section.key': value} from 'section.key=value' strings; the value is parsed as YAML."""
    parsed = {}
    for text in overrides:
        key, sep, value = text.partition("=")
        if not sep:
            raise ConfigurationError(f"{source}: override {text!r} is not of the form section.key=value")
        parsed[key.strip()] = parse_yaml(value, f"{source}: override {text!r}")
    return parsed


def set_keys(raw: dict[str, Any], changes: typing.Mapping[str, Any], source: str) -> dict[str, Any]:
    """A copy of the raw config `raw` with each dotted key of `changes` set; unknown keys are errors."""
    raw = json.loads(json.dumps(raw))
    valid = dotted_keys()
    for key, value in changes.items():
        if key not in valid:
            raise ConfigurationError(f"{source}: {key}: unknown key" + closest(str(key), valid))
        section, name = key.split(".", 1)
        raw.setdefault(section, {})
        if not isinstance(raw[section], dict):
            raise ConfigurationError(f"{source}: section {section!r} is not a mapping")
        raw[section][name] = value
    return raw


def dotted_keys() -> list[str]:
    """Every settable key as 'section.key'."""
    keys = []
    for section, cls in SECTIONS.items():
        keys += [
            f"{section}.{f.name}" for f in dataclasses.fields(cls) if f.name not in _run_set_keys(section)
        ]
    return keys


def _run_set_keys(section: str) -> tuple[str, ...]:
    return MODEL_KEYS_SET_BY_RUN if section == "model" else ()


def _build(cls: type, raw: Any, source: str, section: str) -> Any:
    """Instantiate dataclass `cls` from a mapping, checking each key's name and type."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{source}: section {section!r} must be a mapping, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    values = {}
    for key, value in raw.items():
        if key not in names:
            shown = [n for n in names if n not in _run_set_keys(section)]
            raise ConfigurationError(f"{source}: unknown key {section}.{key}" + closest(str(key), shown))
        values[key] = _check_type(value, hints[key], source, f"{section}.{key}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"{source}: section {section!r}: {err}") from None


def _check_type(value: Any, hint: Any, source: str, key: str) -> Any:
    """`value` if it matches the annotation `hint` (an int passes as a float), else ConfigurationError."""
    checked = _coerce(value, hint)
    if checked is _MISMATCH:
        raise ConfigurationError(f"{source}: {key} must be {_describe(hint)}, not {value!r}")
    return checked


_MISMATCH = object()


def _coerce(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for option in args:
            checked = _coerce(value, option)
            if checked is not _MISMATCH:
                return checked
        return _MISMATCH
    if origin is Literal:
        return value if value in args else _MISMATCH
    if hint is type(None):
        return None if value is None else _MISMATCH
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            return _MISMATCH
        item_hint = args[0] if args else Any
        items = [_coerce(item, item_hint) for item in value]
        return _MISMATCH if any(i is _MISMATCH for i in items) else origin(items)
    if origin is dict:
        if not isinstance(value, dict):
            return _MISMATCH
        pairs = {_coerce(k, args[0]): _coerce(v, args[1]) for k, v in value.items()}
        bad = any(k is _MISMATCH or v is _MISMATCH for k, v in pairs.items())
        return _MISMATCH if bad else pairs
    if hint is float:
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if number else _MISMATCH
    if hint is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _MISMATCH
    if isinstance(hint, type):
        return value if isinstance(value, hint) else _MISMATCH
    return value


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if hint is type(None):
        return "null"
    if origin in (list, tuple):
        return f"a list of {_describe(args[0])}" if args else "a list"
    if origin is dict:
        return f"a mapping of {_describe(args[0])} to {_describe(args[1])}"
    return _TYPE_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


_TYPE_NAMES = {int: "an integer", float: "a finite number", str: "a string", bool: "true or false"}
