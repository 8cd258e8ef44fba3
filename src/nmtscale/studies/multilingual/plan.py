"""Chapter 4's runs, as configs built from the chapter's parameters."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nmtscale.config import RunConfig, from_dict, override, with_numerics
from nmtscale.errors import ConfigurationError
from nmtscale.studies.architectures.plan import listed
from nmtscale.studies.bivariate.plan import at_steps


@dataclass(frozen=True)
class CohortRun:
    """One model of a cohort: the directions it trains and their sampling weights, its size and full config.

    `p` is the weight of the cohort's first direction. At p = 0 and p = 1 the model trains one direction
    alone (the single-direction model that f_i(p) is measured against): on all of that direction's pairs,
    a run that cohorts sharing the direction share, or on the share of them its direction gets in the
    cohort's mixtures (the chapter's `single_direction_share`), a run of its cohort.
    """

    cohort: str
    cohort_directions: tuple[str, ...]
    directions: tuple[str, ...]
    weights: tuple[float, ...]
    p: float
    d_model: int
    layers: int
    config: RunConfig

    @property
    def size(self) -> str:
        """'d16-2L': width 16, two encoder and two decoder layers."""
        return f"d{self.d_model}-{self.layers}L"


def cohort_name(directions: Sequence[str]) -> str:
    """['en-de', 'en-zh'] -> 'en-{de,zh}'; ['de-en', 'zh-en'] -> '{de,zh}-en'."""
    return _cohort_label(directions, str, "-", ",", "+")


def cohort_title(directions: Sequence[str]) -> str:
    """A cohort as the chapter's prose writes it: ['en-de', 'en-zh'] -> 'En→{De, Zh}', ['de-en', 'zh-en'] ->
    '{De, Zh}→En'."""
    return _cohort_label(directions, str.capitalize, "→", ", ", " + ")


def _cohort_label(directions: Sequence[str], language, arrow: str, sep: str, between: str) -> str:
    """A cohort's shared source or target outside braces around the others (each written by `language`),
    or, where its directions share neither, the directions joined by `between`."""
    sources = [language(d.split("-")[0]) for d in directions]
    targets = [language(d.split("-")[1]) for d in directions]
    if len(set(sources)) == 1:
        return f"{sources[0]}{arrow}{{{sep.join(targets)}}}"
    if len(set(targets)) == 1:
        return f"{{{sep.join(sources)}}}{arrow}{targets[0]}"
    return between.join(f"{s}{arrow}{t}" for s, t in zip(sources, targets, strict=True))


def cohorts_text(cohorts: Sequence[Mapping[str, Any]]) -> str:
    """The `cohorts` parameter as the chapter's summary names it: 'the En→{De, Zh} and {De, Zh}→En
    cohorts'."""
    titles = [cohort_title(c["directions"]) for c in cohorts]
    return f"the {listed(titles)} cohort{'s' if len(titles) > 1 else ''}"


def base_config(params: Mapping[str, Any]) -> RunConfig:
    """The settings every run of the chapter shares, from its parameters (params/04_multilingual_laws): its
    data, dropout and decoding, and chapter 1's training recipe as the chapter takes it
    (``params["chapter1"]``: chapter 1's parameters at the chapter's scale, changed by its
    ``chapter1_overrides``; steps, tokens per update, warm-up, schedule, optimizer, peak rate, evaluations,
    final fraction and ``numerics``, which pins how each step runs, as in `bivariate.base_config`)."""
    recipe = params["chapter1"]
    steps = recipe["steps"]
    interval = steps // recipe["eval_points"]
    source = "params/04_multilingual_laws"
    raw = {
        "model": {"dropout": params["dropout"], "attention_dropout": params["dropout"]},
        "data": {
            "test_sets": list(params["test_sets"]),
            "vocab_size": params["vocab_size"],
            "character_coverage": params["character_coverage"],
            "max_train_pairs": params["max_train_pairs"],
            "max_test_pairs": params["max_test_pairs"],
            "disjoint_sources": True,
            "tokenizer_directions": list(params["tokenizer_directions"]),
        },
        "train": {
            "steps": steps,
            "max_tokens": recipe["max_tokens"],
            "warmup_steps": recipe["warmup_steps"],
            "schedule": recipe.get("schedule", "inverse_sqrt"),
            "optimizer": recipe["optimizer"],
            "lr": recipe["lr"],
            "checkpoint_interval": interval,
            "seed": params["seed"],
        },
        "eval": {
            "interval": interval,
            "final_fraction": recipe["final_fraction"],
            "decode": params["decode"],
            "max_decode_sentences": params["max_decode_sentences"],
        },
    }
    return from_dict(with_numerics(raw, recipe["numerics"], source), source)


def sized(base: RunConfig, d_model: int, layers: int, head_dim: int, ff_ratio: int) -> RunConfig:
    """`base` with width and depth set together (Fernandes App. A: heads of a fixed width, MLP ff_ratio x)."""
    if d_model % head_dim:
        raise ValueError(f"d_model {d_model} is not a multiple of the head width {head_dim}")
    return override(
        base,
        {
            "model.d_model": d_model,
            "model.n_heads": d_model // head_dim,
            "model.d_ff": ff_ratio * d_model,
            "model.enc_layers": layers,
            "model.dec_layers": layers,
        },
    )


def mixture_runs(
    base: RunConfig,
    directions: Sequence[str],
    weight_vectors: Sequence[Sequence[float]],
    sizes: Sequence[Sequence[int]],
    head_dim: int,
    ff_ratio: int,
    single_direction_share: bool = False,
) -> list[CohortRun]:
    """One run per weight vector (one weight per direction, summing to 1) and size (d_model, layers).

    Directions of weight 0 are left out of the run; a run with one direction left trains it alone, on all
    of its pairs, or with `single_direction_share` on the English sentences its direction gets in a mixture
    of `directions` (`data.disjoint_with` the others): a mixture's direction sees only its share of a
    multi-way corpus, and a single-direction model that saw all of it would differ in data as well as in
    the weight.
    """
    runs = []
    for weights in weight_vectors:
        if len(weights) != len(directions) or min(weights) < 0 or not math.isclose(sum(weights), 1.0):
            raise ValueError(
                f"weights {list(weights)} must give each of {list(directions)} a share >= 0, summing to 1"
            )
        trained = [(d, float(w)) for d, w in zip(directions, weights, strict=True) if w > 0]
        changes = {
            "data.directions": [d for d, _ in trained],
            "data.weights": [w for _, w in trained] if len(trained) > 1 else None,
        }
        if single_direction_share and len(trained) == 1:
            changes["data.disjoint_with"] = [d for d in directions if d != trained[0][0]]
        for d_model, layers in sizes:
            runs.append(
                CohortRun(
                    cohort=cohort_name(directions),
                    cohort_directions=tuple(directions),
                    directions=tuple(d for d, _ in trained),
                    weights=tuple(w for _, w in trained),
                    p=float(weights[0]),
                    d_model=d_model,
                    layers=layers,
                    config=override(sized(base, d_model, layers, head_dim, ff_ratio), changes),
                )
            )
    return runs


def cohort_weights(first_weights: Sequence[float]) -> list[tuple[float, float]]:
    """A two-direction cohort's weight vectors: (p, 1 - p) for each weight p of its first direction, 1 - p
    rounded so that 1 - 0.1 is 0.9, not 0.09999999999999998."""
    return [(p, round(1 - p, 10)) for p in first_weights]


def chapter_plan(params: Mapping[str, Any]) -> list[CohortRun]:
    """Every run of the chapter: the two-direction cohorts over weights and sizes, then the three-direction
    models of App. H."""
    base = base_config(params)
    shape = {"head_dim": params["head_dim"], "ff_ratio": params["ff_ratio"]}
    share = params["single_direction_share"]
    plan = []
    for cohort in params["cohorts"]:
        plan += mixture_runs(
            base,
            cohort["directions"],
            cohort_weights(cohort["weights"]),
            params["sizes"],
            **shape,
            single_direction_share=share,
        )
    if params["three_pair_weights"]:
        plan += mixture_runs(
            base,
            params["three_pair_directions"],
            params["three_pair_weights"],
            params["three_pair_sizes"],
            **shape,
        )
    return plan


def _cohort_subset(
    params: Mapping[str, Any], name: str, keys: Sequence[str], spec: Mapping[str, Any] | None = None
) -> dict:
    """``params[name]`` (or `spec`, one entry of it, named `name` in errors), a choice of first-direction
    weights and sizes with further `keys` and, optionally, `cohorts` (the directions of the cohorts it
    covers; absent, every cohort: a cohort lands before its checks have trained), checked: {} when empty or
    absent; the error names the key, and any cohort, weight or size the chapter does not train. The result
    always holds `cohorts`, the covered cohorts' entries."""
    spec = (params.get(name) if spec is None else spec) or {}
    if not spec:
        return {}
    where = f"params {name}"
    if not isinstance(spec, Mapping):
        raise ConfigurationError(
            f"{where}: expected {{{', '.join(['weights', 'sizes', *keys])}[, cohorts]}}, got {spec!r}"
        )
    expected = ["weights", "sizes", *keys]
    if not set(expected) <= set(spec) <= {*expected, "cohorts"}:
        raise ConfigurationError(f"{where}: expected {{{', '.join(expected)}[, cohorts]}}, got {spec!r}")
    sizes = [list(size) for size in params["sizes"]]
    unknown_sizes = [size for size in spec["sizes"] if list(size) not in sizes]
    if unknown_sizes:
        raise ConfigurationError(f"{where}: sizes {unknown_sizes} are not among the chapter's sizes {sizes}")
    known = [list(cohort["directions"]) for cohort in params["cohorts"]]
    chosen = [list(directions) for directions in spec["cohorts"]] if "cohorts" in spec else known
    unknown_cohorts = [directions for directions in chosen if directions not in known]
    if unknown_cohorts:
        raise ConfigurationError(
            f"{where}: cohorts {unknown_cohorts} are not among the chapter's cohorts {known}"
        )
    cohorts = [cohort for cohort in params["cohorts"] if list(cohort["directions"]) in chosen]
    for cohort in cohorts:
        unknown_weights = [p for p in spec["weights"] if p not in cohort["weights"]]
        if unknown_weights:
            raise ConfigurationError(
                f"{where}: weights {unknown_weights} are not among cohort {cohort['directions']}'s weights "
                f"{list(cohort['weights'])}"
            )
    return {**spec, "cohorts": cohorts}


def _cohort_subset_runs(
    params: Mapping[str, Any], base: RunConfig, spec: Mapping[str, Any]
) -> list[CohortRun]:
    """The models of `spec`'s cohorts (a checked `_cohort_subset`) at its first-direction weights and sizes,
    from `base`."""
    weights = cohort_weights(spec["weights"])
    return [
        run
        for cohort in spec["cohorts"]
        for run in mixture_runs(
            base,
            cohort["directions"],
            weights,
            spec["sizes"],
            params["head_dim"],
            params["ff_ratio"],
            params["single_direction_share"],
        )
    ]


def seed_repeat_plan(params: Mapping[str, Any]) -> list[CohortRun]:
    """The runs whose spread is the chapter's seed noise (``params["seed_repeats"]``: {weights, sizes,
    seeds[, cohorts]}, or a list of such entries, each its own choice; empty or absent, none): every (or each
    listed) two-direction cohort's models at those first-direction weights and sizes with the chapter's own
    seed (the runs of `chapter_plan`) and again with each of those seeds, once each where entries overlap.
    Cohorts, weights and sizes must be the chapter's, seeds other than its own, or the error names the entry
    (`seed_repeats[i]` in a list)."""
    entries = params.get("seed_repeats") or []
    named = (
        [("seed_repeats", entries)]
        if isinstance(entries, Mapping)
        else list(_numbered("seed_repeats", entries))
    )
    base = base_config(params)
    plan = []
    for name, entry in named:
        repeats = _cohort_subset(params, name, ["seeds"], entry)
        if not repeats:
            continue
        if params["seed"] in repeats["seeds"] or len(set(repeats["seeds"])) != len(repeats["seeds"]):
            raise ConfigurationError(
                f"params {name}: seeds {list(repeats['seeds'])} must differ from each other and from the "
                f"chapter's seed {params['seed']}"
            )
        for seed in [params["seed"], *repeats["seeds"]]:
            for run in _cohort_subset_runs(params, override(base, {"train.seed": seed}), repeats):
                if run not in plan:
                    plan.append(run)
    return plan


def _numbered(name: str, entries: Any) -> Iterator[tuple[str, Any]]:
    """A list parameter's entries with their names in errors (`name[i]`); anything else is a named error."""
    if not isinstance(entries, list):
        raise ConfigurationError(f"params {name}: expected a mapping or a list of mappings, got {entries!r}")
    for index, entry in enumerate(entries):
        yield f"{name}[{index}]", entry


def budget_check_plan(params: Mapping[str, Any]) -> list[CohortRun]:
    """The budget check (``params["budget_check"]``: {weights, sizes, steps[, cohorts]}; empty or absent,
    none): every (or each listed) two-direction cohort's models at those first-direction weights and sizes
    trained for `steps` updates, more than the chapter's, evaluated as often, each decaying to zero at its own
    end; the gates' budget stability compares their size effects with the chapter's. The error names a bad
    entry."""
    check = _cohort_subset(params, "budget_check", ["steps"])
    if not check:
        return []
    steps, chapter_steps = check["steps"], params["chapter1"]["steps"]
    if not isinstance(steps, int) or steps <= chapter_steps:
        raise ConfigurationError(
            f"params budget_check: steps must be an integer above the chapter's {chapter_steps}, "
            f"not {steps!r}"
        )
    longer = at_steps(base_config(params), steps, params["chapter1"]["eval_points"])
    return _cohort_subset_runs(params, longer, check)


def all_pairs_plan(params: Mapping[str, Any]) -> list[CohortRun]:
    """The single-direction models of the directions in ``params["all_pairs_singles"]`` (empty or absent:
    none) trained again on all of their direction's pairs, at every size, one per cohort whose
    single-direction model they stand beside: what the share of `single_direction_share` costs a model is
    the difference. A direction that is no cohort's single-direction model, or a list without
    `single_direction_share`, is a ConfigurationError naming the parameter."""
    if params.get("all_pairs_singles") and not params["single_direction_share"]:
        raise ConfigurationError(
            "params all_pairs_singles: the single-direction models already train on all of their pairs "
            "(single_direction_share is false); set it to [] or single_direction_share to true"
        )
    return _singles_again(params, "all_pairs_singles", base_config(params), single_direction_share=False)


def tagged_singles_plan(params: Mapping[str, Any]) -> list[CohortRun]:
    """The single-direction models of the directions in ``params["tagged_singles"]`` (empty or absent: none)
    trained again with the target-language tag on their sources (`data.target_tags`), on the same sentences
    and at every size: the tag is the one input in which a mixture's direction differs from its
    single-direction model, and the difference in loss is what it costs. A direction that is no cohort's
    single-direction model is a ConfigurationError naming the parameter."""
    tagged = override(base_config(params), {"data.target_tags": True})
    return _singles_again(params, "tagged_singles", tagged, params["single_direction_share"])


def _singles_again(
    params: Mapping[str, Any], name: str, base: RunConfig, single_direction_share: bool
) -> list[CohortRun]:
    """The single-direction models of the directions in ``params[name]``, from `base`, at every size, one per
    cohort whose single-direction model they stand beside; an unknown direction names `name`."""
    directions = list(params.get(name) or [])
    if not directions:
        return []
    plan, singles = [], set()
    for cohort in params["cohorts"]:
        first, second = cohort["directions"]
        for p, direction in ((1, first), (0, second)):
            if p not in cohort["weights"]:
                continue
            singles.add(direction)
            if direction in directions:
                plan += mixture_runs(
                    base,
                    cohort["directions"],
                    cohort_weights([p]),
                    params["sizes"],
                    params["head_dim"],
                    params["ff_ratio"],
                    single_direction_share=single_direction_share,
                )
    unknown = [d for d in directions if d not in singles]
    if unknown:
        raise ConfigurationError(
            f"params {name}: {unknown} are not single-direction models of any cohort "
            f"(those are {sorted(singles)})"
        )
    return plan
