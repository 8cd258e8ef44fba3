"""Chapter 3's runs, as configs built from the chapter's parameters."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nmtscale import corpus
from nmtscale.config import RunConfig, override
from nmtscale.engine.counting import lm_deep_config, lm_wide_config, parameter_counts
from nmtscale.engine.model import ModelConfig
from nmtscale.errors import ConfigurationError
from nmtscale.studies import bivariate

ARCH_NAMES = {
    "encdec": "EncDec",
    "prefixlm": "PrefixLM",
    "prefixlm_toponly": "PrefixLM + TopOnly",
    "causallm": "CausalLM",
    "causallm_tgtonly": "CausalLM + TgtOnly",
}


SCALINGS = ("deep", "wide")


@dataclass(frozen=True)
class PlannedModel:
    """One run of the comparison: its variant ('prefixlm+deep'), the EncDec size it is matched to (layers per
    side), a free-form group (e.g. the data setting) and the full run config."""

    variant: str
    size: int
    group: str
    config: RunConfig

    @property
    def arch(self) -> str:
        return self.config.model.arch

    @property
    def scaling(self) -> str:
        """'depth' for EncDec, else 'deep' or 'wide'."""
        return self.variant.partition("+")[2] or "depth"

    @property
    def layers(self) -> int:
        """All layers of the model: encoder plus decoder, or the single stack of a language model."""
        return self.config.model.enc_layers + self.config.model.dec_layers

    @property
    def label(self) -> str:
        """The paper's name: 'EncDec', 'PrefixLM + Deep', 'CausalLM + TgtOnly + Wide'."""
        return variant_label(self.variant)


def variant_label(variant: str) -> str:
    """'prefixlm+deep' -> 'PrefixLM + Deep', 'encdec' -> 'EncDec' (the paper's names)."""
    arch, scaling = parse_variant(variant)
    return ARCH_NAMES[arch] if scaling == "depth" else f"{ARCH_NAMES[arch]} + {scaling.capitalize()}"


def parse_variant(variant: str) -> tuple[str, str]:
    """'prefixlm+deep' -> ('prefixlm', 'deep'); 'encdec' -> ('encdec', 'depth'); ConfigurationError if
    the architecture or the scaling is unknown."""
    arch, _, scaling = variant.partition("+")
    if arch not in ARCH_NAMES:
        raise ConfigurationError(
            f"variant {variant!r}: unknown architecture {arch!r}; valid: {list(ARCH_NAMES)}"
        )
    if arch == "encdec":
        if scaling:
            raise ConfigurationError(f"variant {variant!r}: EncDec is scaled by depth only; write 'encdec'")
        return arch, "depth"
    if scaling not in SCALINGS:
        raise ConfigurationError(
            f"variant {variant!r}: a language model needs '+deep' or '+wide' (e.g. '{arch}+deep')"
        )
    return arch, scaling


def matched_model(encdec: ModelConfig, variant: str) -> ModelConfig:
    """The model of `variant` matched to the EncDec `encdec` (itself for 'encdec')."""
    arch, scaling = parse_variant(variant)
    if arch == "encdec":
        return encdec
    return (lm_deep_config if scaling == "deep" else lm_wide_config)(encdec, arch)


def architecture_plan(
    base: RunConfig, sizes: Sequence[int], variants: Sequence[str], group: str = ""
) -> list[PlannedModel]:
    """For each EncDec size k (k encoder and k decoder layers) the model of every variant matched to it.

    Width, data and training come from `base`, whose model must be an encdec. Sizes must be >= 1.
    """
    if base.model.arch != "encdec":
        raise ConfigurationError(f"architecture_plan: the base model must be encdec, not {base.model.arch!r}")
    if not sizes or min(sizes) < 1:
        raise ConfigurationError(f"architecture_plan: sizes must be EncDec depths >= 1, not {list(sizes)}")
    for variant in variants:
        parse_variant(variant)
    plan = []
    for variant in variants:
        for size in sizes:
            encdec = base.model.replace(enc_layers=size, dec_layers=size)
            model = matched_model(encdec, variant)
            changes = {
                f"model.{key}": getattr(model, key) for key in ("arch", "enc_layers", "dec_layers", "d_ff")
            }
            plan.append(PlannedModel(variant, size, group, override(base, changes)))
    return plan


def non_embedding_params(cfg: ModelConfig) -> int:
    counts = parameter_counts(cfg)
    return counts["encoder"] + counts["decoder"]


# Chapter 3's parameters (params/03_lm_vs_encdec/<scale>.yaml) that its plans read; "chapter1" holds chapter
# 1's, loaded by the chapter with its `chapter1_overrides`.
PARAMETER_NAMES = (
    "seed",
    "pairs",
    "chapter1",
    "eval_points",
    "variants",
    "pair_variants",
    "budget_check",
    "ml_budget_check",
    "noise_sizes",
    "noise_seeds",
    "ml_directions",
    "ml_eval_directions",
    "ml_test_sets",
    "ml_max_test_pairs",
    "ml_max_train_pairs",
    "ml_vocab_size",
    "ml_character_coverage",
    "ml_byte_fallback",
    "ml_temperature",
    "ml_steps",
    "ml_decode_sentences",
    "ml_variants",
    "transfer_helpers",
    "transfer_de_share",
    "transfer_max_train_tokens",
    "transfer_variants",
)


def chapter_base(params: Mapping[str, Any]) -> RunConfig:
    """Chapter 3's bilingual base run: chapter 1's recipe (`bivariate.base_config`) from chapter 1's
    parameters as chapter 3 takes them (``params["chapter1"]``: its own scale, changed by its
    ``chapter1_overrides``), at chapter 3's seed, so that its EncDec runs are chapter 1's runs where they
    match."""
    return bivariate.base_config({**params["chapter1"], "seed": params["seed"]})


LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "zh": "Chinese"}


def pair_name(pair: str) -> str:
    """'en-de' -> 'English→German'."""
    source, target = pair.split("-")
    return f"{LANGUAGE_NAMES[source]}→{LANGUAGE_NAMES[target]}"


def pair_test_sets(pairs: Sequence[str]) -> dict[str, list[str]]:
    """The test sets of chapter 1 (`bivariate.TEST_SETS`) the corpus has for each language pair."""
    return {
        pair: [name for name in bivariate.TEST_SETS if name in corpus.test_set_names(*pair.split("-"))]
        for pair in pairs
    }


def variants_by_pair(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """The variants trained on each pair of ``params["pairs"]``: every variant of ``params["variants"]``, or,
    on a pair that ``params["pair_variants"]`` names, the ones it lists, so that a new pair lands with its
    first variants before the others have trained. They must hold EncDec (the pair's seed repeats and every
    gap are EncDec's) and a language model to compare with it."""
    where = "params/03_lm_vs_encdec: pair_variants"
    chosen = params.get("pair_variants") or {}
    if not isinstance(chosen, Mapping):
        raise ConfigurationError(f"{where}: expected {{pair: [variant, ...]}}, got {chosen!r}")
    for pair, listed in chosen.items():
        if pair not in params["pairs"]:
            raise ConfigurationError(f"{where}: pair {pair!r} is not one of pairs {list(params['pairs'])}")
        if not isinstance(listed, list) or "encdec" not in listed or len(set(listed)) < 2:
            raise ConfigurationError(
                f"{where}: {pair}: expected a list of variants with 'encdec' and a language model, "
                f"got {listed!r}"
            )
        unknown = [v for v in listed if v not in params["variants"]]
        if unknown:
            raise ConfigurationError(f"{where}: {pair}: {unknown} not in variants {list(params['variants'])}")
    return {
        pair: [v for v in params["variants"] if v in chosen.get(pair, params["variants"])]
        for pair in params["pairs"]
    }


def listed(values: Sequence) -> str:
    """[1, 2, 4] -> '1, 2 and 4'; one value alone as itself."""
    texts = [str(v) for v in values]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


def partial_pairs_text(params: Mapping[str, Any]) -> str:
    """For the chapter's scale paragraph, the pairs that train only some variants (`variants_by_pair`), as a
    sentence: 'English→French trains EncDec, PrefixLM + Deep and CausalLM + Deep so far; its other language
    models land as they finish.', or 'Every pair trains every variant.'"""
    trained = variants_by_pair(params)
    partial = [pair for pair in params["pairs"] if len(trained[pair]) < len(params["variants"])]
    if not partial:
        return "Every pair trains every variant."
    return " ".join(
        f"{pair_name(pair)} trains {listed([variant_label(v) for v in trained[pair]])} so far; its other "
        "language models land as they finish."
        for pair in partial
    )


def bilingual_plans(params: Mapping[str, Any]) -> tuple[list[PlannedModel], list[PlannedModel]]:
    """Chapter 3's bilingual runs: on each pair every variant of `variants_by_pair` at its sizes of
    ``params["variants"]`` (language models evaluated ``eval_points`` times), and the EncDec sizes
    ``noise_sizes`` with every seed of ``noise_seeds``, whose spread is the seed noise."""
    base = chapter_base(params)
    interval = params["chapter1"]["steps"] // params["eval_points"]
    lm_schedule = {"train.checkpoint_interval": interval, "eval.interval": interval}
    test_sets = pair_test_sets(params["pairs"])
    trained = variants_by_pair(params)
    plan, noise_plan = [], []
    for pair in params["pairs"]:
        pair_base = override(base, {"data.directions": [pair], "data.test_sets": test_sets[pair]})
        for variant in trained[pair]:
            sizes = params["variants"][variant]
            variant_base = pair_base if variant == "encdec" else override(pair_base, lm_schedule)
            plan += architecture_plan(variant_base, sizes, [variant], group=pair)
        noise_plan += [
            PlannedModel(
                "encdec",
                size,
                pair,
                override(pair_base, {"model.enc_layers": size, "model.dec_layers": size, "train.seed": s}),
            )
            for size in params["noise_sizes"]
            for s in params["noise_seeds"]
        ]
    return plan, noise_plan


BUDGET_CHECK_KEYS = ("steps", "pairs", "variants")


def budget_check_plan(params: Mapping[str, Any]) -> list[PlannedModel]:
    """The budget check (``params["budget_check"]``: ``{steps, pairs, variants}``, or None for none): the
    models of `bilingual_plans` whose variant and size ``variants`` lists, on each of ``pairs``, trained for
    ``steps`` updates, each decaying to zero at its own end and evaluated as often as at the chapter's budget.
    A size effect that moves when the budget grows describes a step count, not the models (chapter 1's
    gates)."""
    check = params.get("budget_check")
    if not check:
        return []
    where = "params/03_lm_vs_encdec: budget_check"
    if not isinstance(check, Mapping) or set(check) != set(BUDGET_CHECK_KEYS):
        raise ConfigurationError(
            f"{where}: expected {{steps: <int>, pairs: [...], variants: {{variant: [sizes]}}}}, got {check!r}"
        )
    steps = check["steps"]
    if not isinstance(steps, int) or steps <= params["chapter1"]["steps"]:
        raise ConfigurationError(
            f"{where}: steps must be an integer above chapter 1's {params['chapter1']['steps']}: {steps!r}"
        )
    unknown_pairs = set(check["pairs"]) - set(params["pairs"])
    if unknown_pairs:
        raise ConfigurationError(
            f"{where}: pairs {sorted(unknown_pairs)} are not among pairs {params['pairs']}"
        )
    _check_models(where, check["variants"], params["variants"], "variants")
    interval = steps // params["eval_points"]
    at_budget = {"train.steps": steps, "train.checkpoint_interval": interval, "eval.interval": interval}
    plan, _ = bilingual_plans(params)
    return [
        dataclasses.replace(p, config=override(p.config, at_budget))
        for p in plan
        if p.group in check["pairs"] and p.size in check["variants"].get(p.variant, [])
    ]


def _check_models(
    where: str, listed: Mapping[str, Sequence[int]], planned: Mapping[str, Any], name: str
) -> None:
    """ConfigurationError naming `where` unless every variant and size `listed` is one of `planned` (the
    chapter's parameter `name`)."""
    for variant, sizes in listed.items():
        planned_sizes = planned.get(variant)
        if planned_sizes is None or not set(sizes) <= set(planned_sizes):
            raise ConfigurationError(
                f"{where}: {variant} {list(sizes)}: every model checked must be one of {name} "
                f"({variant}: {planned_sizes})"
            )


def multilingual_base(params: Mapping[str, Any]) -> RunConfig:
    """The many-to-many base run (Zhang Sec. 6): chapter 3's model on the ``ml_directions``, evaluated on the
    zero-shot ``ml_eval_directions``, with its own vocabulary, sampling temperature and budget, translating
    greedily at the end."""
    interval = params["ml_steps"] // params["eval_points"]
    return override(
        chapter_base(params),
        {
            "data.directions": params["ml_directions"],
            "data.eval_directions": params["ml_eval_directions"],
            "data.test_sets": params["ml_test_sets"],
            "data.max_test_pairs": params["ml_max_test_pairs"],
            "data.max_train_pairs": params["ml_max_train_pairs"],
            "data.vocab_size": params["ml_vocab_size"],
            "data.character_coverage": params["ml_character_coverage"],
            "data.byte_fallback": params["ml_byte_fallback"],
            "data.temperature": params["ml_temperature"],
            "train.steps": params["ml_steps"],
            "train.checkpoint_interval": interval,
            "eval.interval": interval,
            "eval.decode": "greedy",
            "eval.max_decode_sentences": params["ml_decode_sentences"],
        },
    )


def multilingual_budget_plan(params: Mapping[str, Any]) -> list[PlannedModel]:
    """How far the many-to-many models are from translating (``params["ml_budget_check"]``: ``{steps,
    variants}``, or None for none): the models of `multilingual_plans` whose variant and size ``variants``
    lists, trained again for each budget of ``steps`` (increasing, above ``ml_steps``), each decaying to zero
    at its own end, evaluated ``eval_points`` times and translating at the end, so that their BLEU can be
    followed with the budget."""
    check = params.get("ml_budget_check")
    if not check:
        return []
    where = "params/03_lm_vs_encdec: ml_budget_check"
    steps = check.get("steps") if isinstance(check, Mapping) else None
    if set(check) != {"steps", "variants"} or not isinstance(steps, list) or not steps:
        raise ConfigurationError(f"{where}: expected {{steps: [<int>, ...], variants: {{variant: [sizes]}}}}")
    budgets = [params["ml_steps"], *steps]
    if not all(isinstance(b, int) for b in steps) or any(a >= b for a, b in itertools.pairwise(budgets)):
        raise ConfigurationError(
            f"{where}: steps must be integers increasing from ml_steps {budgets[0]}: {steps}"
        )
    _check_models(where, check["variants"], params["ml_variants"], "ml_variants")
    many, _ = multilingual_plans(params)
    chosen = [p for p in many if p.size in check["variants"].get(p.variant, [])]
    planned = []
    for budget in steps:
        interval = budget // params["eval_points"]
        at_budget = {"train.steps": budget, "train.checkpoint_interval": interval, "eval.interval": interval}
        planned += [dataclasses.replace(p, config=override(p.config, at_budget)) for p in chosen]
    return planned


def multilingual_plans(params: Mapping[str, Any]) -> tuple[list[PlannedModel], list[PlannedModel]]:
    """The many-to-many runs of ``ml_variants`` and the transfer runs: De->En at a ``transfer_de_share`` of
    the updates beside X->En for each of ``transfer_helpers``, every variant of ``transfer_variants``, their
    training pairs over ``transfer_max_train_tokens`` (None: none) dropped."""
    ml_base = multilingual_base(params)
    many = [
        p
        for variant, sizes in params["ml_variants"].items()
        for p in architecture_plan(ml_base, sizes, [variant], "many-to-many")
    ]
    transfer = []
    share = params["transfer_de_share"]
    for helper in params["transfer_helpers"]:
        helper_base = override(
            ml_base,
            {
                "data.directions": ["de-en", f"{helper}-en"],
                "data.eval_directions": [],
                "data.test_sets": ["l10n"],
                "data.temperature": None,
                "data.weights": [share, 1 - share],
                "data.tokenizer_directions": [f"{lang}-en" for lang in ["de", *params["transfer_helpers"]]],
                "data.max_train_tokens": params.get("transfer_max_train_tokens"),
            },
        )
        for variant, sizes in params["transfer_variants"].items():
            transfer += architecture_plan(helper_base, sizes, [variant], f"De + {helper.capitalize()}")
    return many, transfer
