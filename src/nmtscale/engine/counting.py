"""Parameter counts from a config alone, the papers' published counts, and the `count-params` command.

`parameter_counts(cfg)` counts analytically (tests check it against the built modules); presets in
`params/presets/` record the configurations of the papers' model tables next to the numbers the papers print,
so `python -m nmtscale count-params params/presets/<file>.yaml` shows both side by side. The helpers
`lm_deep_config` and `lm_wide_config` build Zhang et al.'s language-model counterparts of an encoder-decoder.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from nmtscale.config import DataConfig, read_yaml
from nmtscale.engine.model import ModelConfig
from nmtscale.errors import ConfigurationError, closest

COMPONENTS = ("embedding", "softmax", "encoder", "decoder")
PUBLISHED_KEYS = ("total", "non_embedding", *COMPONENTS)


def parameter_counts(cfg: ModelConfig) -> dict[str, int]:
    """Parameters per component (embedding, softmax, encoder, decoder), as `NMTModel.parameter_counts`."""
    d, ff, attention_dim = cfg.d_model, cfg.d_ff, cfg.attention_dim

    def linear(n_in: int, n_out: int) -> int:
        return n_in * n_out + (n_out if cfg.bias else 0)

    norm = d * (2 if cfg.norm == "layernorm" else 1)
    attention = linear(d, attention_dim) + linear(d, 2 * attention_dim) + linear(attention_dim, d) + norm
    feed_forward = linear(d, ff * (2 if cfg.activation == "gated-gelu" else 1)) + linear(ff, d) + norm
    stack_extras = (norm if cfg.norm_position == "pre" else 0) + (
        cfg.relative_buckets * cfg.n_heads if cfg.position == "relative" else 0
    )
    if cfg.is_lm:
        encoder, decoder = 0, cfg.dec_layers * (attention + feed_forward) + stack_extras
    else:
        encoder = cfg.enc_layers * (attention + feed_forward) + stack_extras
        decoder = cfg.dec_layers * (2 * attention + feed_forward) + stack_extras
    embedding = cfg.vocab_size * d * (1 if cfg.share_embeddings else 2)
    if cfg.position == "learned":
        embedding += 2 * cfg.max_positions * d
    softmax = 0 if cfg.tie_softmax else linear(d, cfg.vocab_size)
    return {"embedding": embedding, "softmax": softmax, "encoder": encoder, "decoder": decoder}


def summarize_counts(counts: dict[str, int]) -> dict[str, int]:
    """Adds total and non_embedding (encoder + decoder: the papers' model size N) to per-component counts."""
    non_embedding = counts["encoder"] + counts["decoder"]
    return {
        "total": non_embedding + counts["embedding"] + counts["softmax"],
        "non_embedding": non_embedding,
        **counts,
    }


def lm_deep_config(encdec: ModelConfig, arch: str) -> ModelConfig:
    """Zhang et al.'s "LM + Deep": a language model as deep as the encoder and decoder together."""
    _check_lm_counterpart(encdec, arch)
    return encdec.replace(arch=arch, enc_layers=0, dec_layers=encdec.enc_layers + encdec.dec_layers)


def lm_wide_config(encdec: ModelConfig, arch: str) -> ModelConfig:
    """Zhang et al.'s "LM + Wide": the EncDec's depth, with the feed-forward width that matches its
    non-embedding parameter count as closely as an integer d_ff can."""
    _check_lm_counterpart(encdec, arch)
    if encdec.enc_layers != encdec.dec_layers:
        raise ValueError(
            f"lm_wide_config: enc_layers={encdec.enc_layers} != dec_layers={encdec.dec_layers}; "
            "Zhang et al. match wide LMs to symmetric encoder-decoders only"
        )
    target = summarize_counts(parameter_counts(encdec))["non_embedding"]
    lm = encdec.replace(arch=arch, enc_layers=0, dec_layers=encdec.dec_layers, d_ff=1)
    base = summarize_counts(parameter_counts(lm))["non_embedding"]
    per_unit = (
        summarize_counts(parameter_counts(lm.replace(d_ff=2)))["non_embedding"] - base
    )  # N is affine in d_ff
    return lm.replace(d_ff=1 + round((target - base) / per_unit))


def _check_lm_counterpart(encdec: ModelConfig, arch: str) -> None:
    if encdec.is_lm:
        raise ValueError(f"expected an encdec config to match, got arch {encdec.arch!r}")
    if arch == "encdec":
        raise ValueError("the counterpart's arch must be one of the language models, not 'encdec'")
    encdec.replace(arch=arch, enc_layers=0)  # validates the architecture name


@dataclass
class PresetRow:
    """One model of a paper's table: its config and the counts the paper prints (rounded to `rounding`)."""

    name: str
    config: ModelConfig
    published: dict[str, int] = field(default_factory=dict)
    rounding: int = 1

    def matches(self, key: str, count: int) -> bool:
        return round(count / self.rounding) == round(self.published[key] / self.rounding)


def load_preset(path: str | Path) -> tuple[str, list[PresetRow]]:
    """Reads a preset file: `paper`, `rounding`, a shared `model` section and `rows` (each with its own
    `model` overrides and `published` counts). A file with only a `model` section gives one row."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("model", {}), dict):
        raise ConfigurationError(f"{path}: expected a mapping with a 'model' section")
    rounding = data.get("rounding", 1)
    if not isinstance(rounding, int) or rounding < 1:
        raise ConfigurationError(f"{path}: rounding must be a positive integer, got {rounding!r}")
    shared = dict(data.get("model", {}))
    if any(section in data for section in ("data", "train", "eval")) and "vocab_size" not in shared:
        # a run config: its tokenizer, sized by data.vocab_size, sets the model's vocabulary
        run_data = data.get("data") or {}
        shared["vocab_size"] = run_data.get("vocab_size", DataConfig().vocab_size)
    rows = data.get("rows", [{"name": path.stem}])
    if not isinstance(rows, list):
        raise ConfigurationError(f"{path}: rows must be a list")
    return data.get("paper", path.stem), [
        _preset_row(path, i, row, shared, rounding) for i, row in enumerate(rows)
    ]


def _preset_row(path: Path, index: int, row: dict, shared: dict, rounding: int) -> PresetRow:
    where = f"{path}: rows[{index}]"
    if not isinstance(row, dict):
        raise ConfigurationError(f"{where}: expected a mapping")
    for key in row:
        if key not in ("name", "model", "published"):
            raise ConfigurationError(
                f"{where}: unknown key {key!r}{closest(key, ('name', 'model', 'published'))}"
            )
    settings = {**shared, **row.get("model", {})}
    fields = [f.name for f in dataclasses.fields(ModelConfig)]
    for key in settings:
        if key not in fields:
            raise ConfigurationError(f"{where}: unknown model key {key!r}{closest(key, fields)}")
    try:
        config = ModelConfig(**settings)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"{where}: {err}") from err
    published = row.get("published", {})
    for key, value in published.items():
        if key not in PUBLISHED_KEYS:
            raise ConfigurationError(
                f"{where}: unknown published count {key!r}{closest(key, PUBLISHED_KEYS)}"
            )
        if not isinstance(value, int):
            raise ConfigurationError(f"{where}: published.{key} must be an integer, got {value!r}")
    return PresetRow(row.get("name", f"row {index}"), config, published, rounding)


def format_preset(paper: str, rows: list[PresetRow], lm_counterparts: bool = False) -> str:
    """A table of counted parameters with the published number under each one the paper prints."""
    columns = ("total", "non_embedding", "encoder", "decoder", "embedding", "softmax")
    lines = [paper, f"{'model':<28}" + "".join(f"{c:>16}" for c in columns)]
    for row in rows:
        counts = summarize_counts(parameter_counts(row.config))
        lines.append(f"{row.name:<28}" + "".join(f"{counts[c]:>16,}" for c in columns))
        if row.published:
            cells = (
                f"{row.published[c]:>14,} {'=' if row.matches(c, counts[c]) else 'X'}"
                if c in row.published
                else ""
                for c in columns
            )
            lines.append(f"{'  published':<28}" + "".join(f"{cell:>16}" for cell in cells))
        if lm_counterparts and not row.config.is_lm:
            for label, build in (("LM+Deep", lm_deep_config), ("LM+Wide", lm_wide_config)):
                if build is lm_wide_config and row.config.enc_layers != row.config.dec_layers:
                    continue
                lm = build(row.config, "prefixlm")
                lm_counts = summarize_counts(parameter_counts(lm))
                shape = f"{lm.dec_layers}L d_ff={lm.d_ff}"
                lines.append(
                    f"{'  ' + label + ' ' + shape:<28}" + "".join(f"{lm_counts[c]:>16,}" for c in columns)
                )
    if any(row.published for row in rows):
        unit = "exact" if rows[0].rounding == 1 else f"rounded to {rows[0].rounding:,}"
        lines.append(f"published counts are {unit}; '=' matches, 'X' does not")
    return "\n".join(lines)


def _count_params_command(args: argparse.Namespace) -> int:
    paper, rows = load_preset(args.preset)
    print(format_preset(paper, rows, lm_counterparts=args.lm_counterparts))
    mismatches = [row.name for row in rows for key in row.published if not row.matches(key, _count(row, key))]
    return 1 if mismatches and args.check else 0


def _count(row: PresetRow, key: str) -> int:
    return summarize_counts(parameter_counts(row.config))[key]


def add_commands(subparsers) -> None:
    """Adds `count-params PRESET.yaml [--lm-counterparts] [--check]`."""
    parser = subparsers.add_parser(
        "count-params", help="count a config's parameters next to the paper's published numbers"
    )
    parser.add_argument("preset", help="a preset from params/presets/ or a YAML file with a 'model' section")
    parser.add_argument(
        "--lm-counterparts", action="store_true", help="also count the LM+Deep / LM+Wide of each encdec row"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit with status 1 if a published count differs"
    )
    parser.set_defaults(func=_count_params_command)
