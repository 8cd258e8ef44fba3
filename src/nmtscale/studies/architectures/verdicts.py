"""Chapter 3's verdicts: each of the paper's claims graded on the analysis, with the numbers behind them."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nmtscale.studies.architectures.analysis import (
    ENCDEC,
    alpha_interval_width,
    gaps_to_encdec,
    mean_loss,
    wide_minus_deep,
    worker_minutes,
)
from nmtscale.studies.architectures.evaluation import LENGTH_BUCKETS
from nmtscale.studies.architectures.plan import ARCH_NAMES, listed, pair_name
from nmtscale.studies.claims import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Claim,
    Gate,
    by_count,
    by_differences,
    gate_ranges,
    graded,
    untestable,
)

PREFIX_DEEP, PREFIX_WIDE = "PrefixLM + Deep", "PrefixLM + Wide"
TOPONLY_DEEP = "PrefixLM + TopOnly + Deep"
CAUSAL_DEEP, TGTONLY_DEEP = "CausalLM + Deep", "CausalLM + TgtOnly + Deep"

EXPONENT_STABILITY = 0.05  # Zhang et al.: exponents change "often less than 0.05" across settings
# An Eq. 7 fit whose L_inf interval ends below this (nats) puts the irreducible loss at its bound 0: the
# losses fall as a pure power law over the sizes fitted, with no floor to compare between settings.
L_INF_AT_BOUND = 0.01

# Below this zero-shot BLEU for every model the outputs are not translations (a repeated piece, a run of
# byte pieces), and the language they are identified as says nothing about zero-shot translation.
TRANSLATING_BLEU = 1.0


@dataclass(frozen=True)
class Noise:
    """A noise level in nats and how it was derived (the Claim rows show the words)."""

    nats: float
    meaning: str

    @property
    def text(self) -> str:
        return f"{self.nats:.3f} nats: {self.meaning}"


def claims(
    table: pd.DataFrame,
    seed_std: float,
    exponents: pd.DataFrame,
    settings: pd.DataFrame,
    compute: pd.DataFrame,
    multilingual: pd.DataFrame,
    transfer: pd.DataFrame,
    longer: pd.DataFrame | None = None,
    pair_seed_std: Mapping[str, float] | None = None,
) -> list[Claim]:
    """The chapter's claims, each graded by the rule it states.

    table: `run_table` rows of the bilingual runs (variant, size, test_set, loss); with a `group` column (the
    language pair) the bilingual claims are judged per pair, each claim named with its pair. seed_std: the
    seed-to-seed standard deviation of a run's final loss. A difference between two runs counts when it
    exceeds twice its standard deviation, 2 sqrt(2) seed_std; a change of a gap between sizes (four runs)
    when it exceeds 4 seed_std. exponents: `law_parameters` of the Fig. 3 settings; settings:
    `evaluation_settings` (both split by `group` when the table is); compute: `flops_table` joined with
    measured tokens_per_s; multilingual, transfer: `translation_table` rows (transfer: the low-resource
    direction's); longer: the budget check's `run_table` rows, where some pair has EncDec and a language
    model at two sizes there: "the gap narrows" judged again at that budget, as a claim of its own.
    pair_seed_std: each pair's own seed std (its EncDec repeats'), against which that pair's bilingual claims
    are judged, so that adding a pair leaves the others' verdicts alone; a pair it does not name, and the
    multilingual and transfer claims, take `seed_std`.
    """
    noises = {pair: _noises(std) for pair, std in (pair_seed_std or {}).items()}
    pooled = _noises(seed_std)
    found: list[Claim] = []
    if "group" in table:
        for pair in table["group"].unique():
            found += [
                dataclasses.replace(claim, claim=f"{claim.claim} ({pair})")
                for claim in _bilingual_claims(
                    table[table["group"] == pair],
                    exponents[exponents["group"] == pair],
                    settings[settings["group"] == pair],
                    *noises.get(pair, pooled),
                )
            ]
    else:
        found += _bilingual_claims(table, exponents, settings, *pooled)
    for pair, rows in [] if longer is None else longer.groupby("group", sort=False):
        if (
            rows["size"].nunique() > 1
            and (rows["variant"] == ENCDEC).any()
            and (rows["variant"] != ENCDEC).any()
        ):
            claim = _gap_narrows_claim(_pair_runs(rows, *noises.get(pair, pooled)))
            steps = f"{int(rows['steps'].max()):,} updates"
            found.append(dataclasses.replace(claim, claim=f"{claim.claim} ({pair}, at {steps})"))
    return [
        *found,
        _compute_claim(compute),
        *_multilingual_claims(multilingual, pooled[0]),
        _transfer_claim(transfer, pooled[0]),
    ]


def _noises(seed_std: float) -> tuple[Noise, Noise]:
    """The noise of a difference between two runs and of a change between two differences, at `seed_std`."""
    return (
        Noise(difference_noise(seed_std), f"2 std of a difference of two runs (seed std {seed_std:.4f})"),
        Noise(4 * seed_std, f"2 std of a change between two differences (seed std {seed_std:.4f})"),
    )


def difference_noise(seed_std: float) -> float:
    """When a difference between two single runs counts: twice its standard deviation, 2 sqrt(2) seed_std."""
    return 2 * math.sqrt(2) * seed_std


def verdict_numbers(
    table: pd.DataFrame,
    n_models: int,
    steps: int,
    max_tokens: int,
    per_run: pd.DataFrame,
    seed_std: float,
    exponents: pd.DataFrame,
    translations: pd.DataFrame,
    decode_sentences: int,
    ml: pd.DataFrame,
    ml_steps: int,
) -> str:
    """The chapter's "numbers behind the verdicts" as Markdown bullets, from its tables: the bilingual runs
    (`table`, with a `group` per language pair; `n_models` planned, trained for `steps` updates of about
    `max_tokens` target tokens; `per_run` with `slope_2nd_half`), the seed noise, the gaps to EncDec, LM +
    Wide against LM + Deep, the Eq. 7 exponents, the BLEU of the bilingual `translations` and of the
    multilingual runs (`ml`, `translation_table` rows, trained for `ml_steps`)."""
    finished = table.drop_duplicates("run_id")
    pairs = list(table["group"].unique())
    noise_threshold = difference_noise(seed_std)
    supervised_bleu = ml.loc[ml["kind"] != "zero-shot", "bleu"]
    zero_shot = ml[ml["kind"] == "zero-shot"]
    lines = [
        f"- {len(finished)} bilingual runs on {', '.join(pairs)} ({n_models} models), "
        f"{finished['N'].min():,}-{finished['N'].max():,} non-embedding parameters, {steps} updates of "
        f"~{max_tokens} target tokens; over the second half of training the loss still fell "
        f"{-per_run['slope_2nd_half'].max():.3f}-{-per_run['slope_2nd_half'].min():.3f} nats per doubling of "
        "the steps.",
        f"- Seed noise: {seed_std:.4f} nats standard deviation of the final loss; a difference between two "
        f"runs counts above {noise_threshold:.3f} nats.",
    ]
    for pair in pairs:
        gap_summary = gaps_to_encdec(table[table["group"] == pair])
        lines.append(
            f"- {pair}, mean loss over test sets, gap to EncDec at equal size: "
            + "; ".join(
                f"{v} " + ", ".join(f"{g:+.3f}" for g in group.sort_values("size")["gap"])
                for v, group in gap_summary.groupby("variant")
            )
            + f" (sizes {', '.join(str(int(x)) for x in sorted(gap_summary['size'].unique()))})."
        )
    wide_gaps = wide_minus_deep(table)
    lines += [
        f"- LM + Wide minus LM + Deep: behind in {int((wide_gaps > 0).sum())} of {len(wide_gaps)} "
        f"comparisons, beyond {noise_threshold:.3f} nats in {int((wide_gaps > noise_threshold).sum())}.",
        f"- Eq. 7 exponent alpha over the Fig. 3 settings: {exponents['alpha'].min():.3f}-"
        f"{exponents['alpha'].max():.3f}; median 95% interval width "
        f"{alpha_interval_width(exponents):.3f}.",
        f"- BLEU of the bilingual models ({decode_sentences} sentences per set): "
        f"{translations['bleu'].min():.1f}-{translations['bleu'].max():.1f}.",
        f"- Multilingual ({ml_steps} updates): supervised BLEU {supervised_bleu.min():.1f}-"
        f"{supervised_bleu.max():.1f}, zero-shot BLEU {zero_shot['bleu'].min():.1f}-"
        f"{zero_shot['bleu'].max():.1f}, zero-shot off-target rate {zero_shot['off_target_rate'].min():.2f}-"
        f"{zero_shot['off_target_rate'].max():.2f}.",
    ]
    return "\n".join(lines)


def glue_name(variant: str) -> str:
    """A variant's name in the keys of `headline_numbers`: 'CausalLM + TgtOnly' -> 'causallm_tgtonly'."""
    return "_".join(variant.lower().replace("+", " ").split())


def headline_numbers(
    table: pd.DataFrame,
    seed_std: float,
    compute: pd.DataFrame,
    multilingual: pd.DataFrame,
    gates: Sequence[Gate] = (),
) -> dict[str, float]:
    """The numbers the chapter's opening summary quotes (through myst-nb's glue, so the prose cannot drift
    from the tables): the bilingual models' range of N (`n_min`, `n_max`), the seed std and the difference
    noise, per language model the smallest and largest gap to the EncDec of its size over sizes and pairs
    (`gap_min_<variant>`, `gap_max_<variant>`, `glue_name`) and its gap on the main pair (the table's first
    group) at the smallest and the largest size (`gap_smallest_<variant>`, `gap_largest_<variant>`), the range
    of the language models' measured training speed relative to EncDec's at the same size (`speed_ratio_min`,
    `speed_ratio_max`, from the `compute` table), the best supervised and zero-shot BLEU of the multilingual
    models and, from `scale_gates`' `gates`, the range of the families' size effects in seed std
    (`size_effect_min`, `size_effect_max`), of the budget check's relative changes (`budget_change_min`,
    `budget_change_max`; NaN without a budget check), of the pairs' narrowest N span (`n_span_min`, ...) and
    fewest sizes per family (`family_sizes_min`, ...)."""
    numbers = {
        "n_min": float(table["N"].min()),
        "n_max": float(table["N"].max()),
        "seed_std": seed_std,
        "difference_noise": difference_noise(seed_std),
    }
    gaps = pd.concat([gaps_to_encdec(rows) for _, rows in table.groupby("group")])
    for variant, rows in gaps.groupby("variant"):
        numbers[f"gap_min_{glue_name(variant)}"] = float(rows["gap"].min())
        numbers[f"gap_max_{glue_name(variant)}"] = float(rows["gap"].max())
    numbers |= gap_ends(table)
    numbers |= gate_ranges(gates)
    encdec_speed = compute[compute["variant"] == ENCDEC].set_index("size")["tokens_per_s"]
    lms = compute[compute["variant"] != ENCDEC]
    ratios = lms["tokens_per_s"].to_numpy() / encdec_speed.reindex(lms["size"]).to_numpy()
    numbers["speed_ratio_min"], numbers["speed_ratio_max"] = (
        float(np.nanmin(ratios)),
        float(np.nanmax(ratios)),
    )
    zero_shot = multilingual["kind"] == "zero-shot"
    numbers["supervised_bleu_max"] = float(multilingual.loc[~zero_shot, "bleu"].max())
    numbers["zero_shot_bleu_max"] = float(multilingual.loc[zero_shot, "bleu"].max())
    return numbers


def gap_ends(table: pd.DataFrame, prefix: str = "gap") -> dict[str, float]:
    """Each language model's gap to EncDec (mean loss over test sets) on the main pair (the `run_table`'s
    first group) at its smallest and its largest size: `<prefix>_smallest_<variant>`,
    `<prefix>_largest_<variant>` (`glue_name`)."""
    main_pair = gaps_to_encdec(table[table["group"] == table["group"].iloc[0]])
    numbers = {}
    for variant, rows in main_pair.sort_values("size").groupby("variant"):
        numbers[f"{prefix}_smallest_{glue_name(variant)}"] = float(rows["gap"].iloc[0])
        numbers[f"{prefix}_largest_{glue_name(variant)}"] = float(rows["gap"].iloc[-1])
    return numbers


def other_pairs_text(table: pd.DataFrame) -> str:
    """For the chapter's summary, the pairs after the main one (the `run_table`'s first group): every language
    model's gap to EncDec (mean loss over test sets) at its smallest and its largest size, e.g. 'On
    English→French, the gap to EncDec goes from +0.260 nats at size 1 to +0.304 at size 8 for CausalLM + Deep
    and from +0.071 at size 1 to +0.090 at size 8 for PrefixLM + Deep.', and where an architecture was trained
    both ways, LM + Wide's loss minus LM + Deep's likewise; '' with one pair."""
    sentences = []
    for pair in table["group"].unique()[1:]:
        rows = table[table["group"] == pair]
        gaps = gaps_to_encdec(rows).sort_values("size")
        parts = [
            _from_smallest_to_largest(group.set_index("size")["gap"], variant, nats=not i)
            for i, (variant, group) in enumerate(gaps.groupby("variant"))
        ]
        if parts:
            sentences.append(f"On {pair_name(pair)}, the gap to EncDec goes {listed(parts)}.")
        wide_deep = wide_minus_deep(rows)
        if not wide_deep.empty:
            parts = [
                _from_smallest_to_largest(
                    per.droplevel(["group", "arch"]).sort_index(), ARCH_NAMES[arch_name]
                )
                for arch_name, per in wide_deep.groupby(level="arch")
            ]
            sentences.append(f"LM + Wide's loss minus LM + Deep's goes {listed(parts)}.")
    return " ".join(sentences)


def deep_wide_text(table: pd.DataFrame, pair_seed_std: Mapping[str, float]) -> str:
    """For the chapter's summary, on the main pair (the `run_table`'s first group, judged against its own
    seed std in `pair_seed_std`, as its claims are): at each size, in how many of the architectures trained
    both ways LM + Deep is ahead of LM + Wide by more than the difference noise, and for which Wide's deficit
    grows or shrinks by more than the change noise, or moves within it, from each architecture's smallest to
    its largest size trained both ways, e.g. 'LM + Deep is ahead of LM + Wide by more than the noise (0.028
    nats) in 1 of 2 architectures at size 1 and 2 of 2 at size 2; from size 1 to size 2 Wide's deficit
    grows by more than the change noise (0.040 nats) for PrefixLM and moves within it for CausalLM.'; a
    sentence saying so where no architecture was trained both ways."""
    main_pair = table["group"].iloc[0]
    wide_deep = wide_minus_deep(table[table["group"] == main_pair].drop(columns="group"))
    if wide_deep.empty:
        return "No language model was trained both Deep and Wide at this scale."
    noise, change_noise = (n.nats for n in _noises(pair_seed_std[main_pair]))
    counts = [
        f"{int((per > noise).sum())} of {len(per)}{' architectures' if not i else ''} at size {int(size)}"
        for i, (size, per) in enumerate(wide_deep.groupby(level="size"))
    ]
    by_arch = wide_deep.sort_index().groupby(level="arch")
    change = by_arch.last() - by_arch.first()
    sizes = wide_deep.reset_index("size").groupby(level="arch")["size"].agg(["min", "max"])
    span = (
        f"from size {int(sizes['min'].iloc[0])} to size {int(sizes['max'].iloc[0])}"
        if len(sizes.drop_duplicates()) == 1
        else "from each one's smallest to its largest size"
    )
    trends = [
        f"{words} for {listed([ARCH_NAMES[a] for a in change.index[moved]])}"
        for words, moved in (
            (f"grows by more than the change noise ({change_noise:.3f} nats)", change > change_noise),
            ("shrinks by more than it", change < -change_noise),
            ("moves within it", change.abs() <= change_noise),
        )
        if moved.any()
    ]
    return (
        f"LM + Deep is ahead of LM + Wide by more than the noise ({noise:.3f} nats) in {listed(counts)}; "
        f"{span} Wide's deficit {listed(trends)}."
    )


def _from_smallest_to_largest(by_size: pd.Series, name: str, nats: bool = False) -> str:
    """'from +0.071 nats at size 1 to +0.090 at size 8 for PrefixLM + Deep' from values indexed by size."""
    first, last = by_size.index[0], by_size.index[-1]
    return (
        f"from {by_size.iloc[0]:+.3f}{' nats' if nats else ''} at size {int(first)} "
        f"to {by_size.iloc[-1]:+.3f} at size {int(last)} for {name}"
    )


def lm_sizes_text(table: pd.DataFrame, min_sizes: int = 4) -> dict[str, str]:
    """For the chapter's summary, on the main pair of a `run_table`: the EncDec sizes every language model was
    matched to (`lm_sizes`), the families that reach beyond them (`lm_beyond`: '' or ' (PrefixLM + Deep also
    at size 8)'), while their runs land, and the families with the gates' number of sizes and the narrowest
    range of N among them (`spanning`: 'every family has 4 sizes or more, over 7.98x in N', 'EncDec and
    PrefixLM + Deep have ...' or 'no family has 4 sizes'; `scale_gates`' default)."""
    main = table[table["group"] == table["group"].iloc[0]]
    lms = main[main["variant"] != ENCDEC]
    sizes = lms.groupby("variant")["size"].agg(lambda s: set(s.astype(int)))
    common = set.intersection(*sizes)
    extra = pd.Series({v: tuple(sorted(s - common)) for v, s in sizes.items() if s - common}, dtype=object)
    beyond = [
        f"{listed(list(variants.index))} also at size{'s' if len(more) > 1 else ''} {listed(more)}"
        for more, variants in extra.groupby(extra, sort=False)
    ]
    families = main.groupby("variant", sort=False)["N"].agg(["min", "max", "nunique"])
    full = families[families["nunique"] >= min_sizes]
    span = f"{min_sizes} sizes or more, over {(full['max'] / full['min']).min():.2f}x in N"
    if len(full) == len(families):
        spanning = f"every family has {span}"
    elif len(full):
        spanning = f"{listed(list(full.index))} {'has' if len(full) == 1 else 'have'} {span}"
    else:
        spanning = f"no family has {min_sizes} sizes"
    return {
        "lm_sizes": listed(sorted(common)),
        "lm_beyond": f" ({'; '.join(beyond)})" if beyond else "",
        "spanning": spanning,
    }


def budget_check_text(long_table: pd.DataFrame) -> str:
    """The models the budget check trained again (a `run_table`), for the chapter's prose: 'sizes 1 and 4 of
    EncDec, PrefixLM + Deep and CausalLM + Deep', families checked at other sizes after a semicolon."""
    sizes = long_table.groupby("variant", sort=False)["size"].agg(lambda s: tuple(sorted(set(s.astype(int)))))
    parts = [
        f"size{'s' if len(checked) > 1 else ''} {listed(checked)} of {listed(list(variants.index))}"
        for checked, variants in sizes.groupby(sizes, sort=False)
    ]
    return "; ".join(parts)


def training_text(bilingual: Sequence[pd.DataFrame], multilingual: Sequence[pd.DataFrame]) -> str:
    """What the chapter's runs cost, for its opening summary: worker-minutes and runs per language pair of the
    `bilingual` tables (`run_table`s) and of the `multilingual` ones (`translation_table`s) together."""
    minutes = worker_minutes(*bilingual)
    counts = pd.concat([t[["run_id", "group"]] for t in bilingual]).drop_duplicates("run_id")["group"]
    parts = [
        f"{minutes[g]:,.0f} worker-minutes for the {n} {g} runs" for g, n in counts.value_counts().items()
    ]
    ml_runs = pd.concat([t[["run_id"]] for t in multilingual]).drop_duplicates("run_id")
    parts.append(
        f"{worker_minutes(*multilingual).sum():,.0f} for the {len(ml_runs)} multilingual and transfer runs"
    )
    return listed(parts)


def _compute_claim(compute: pd.DataFrame) -> Claim:
    """Sec. 5.1, Fig. 7, by the paper's own quantity (its calculated FLOPs): every LM needs more training and
    inference FLOPs per token than the EncDec of its size, and that gap narrows at scale (the training-FLOPs
    ratio LM / EncDec of each LM smaller at the largest size than at the smallest)."""
    per_size = compute.set_index(["variant", "size"])
    lm_rows = per_size.drop(index=ENCDEC, level="variant")
    enc_flops = per_size.xs(ENCDEC, level="variant")
    fewer = all(
        row[kind] > enc_flops.loc[size, kind]
        for (_, size), row in lm_rows.iterrows()
        for kind in ("train_flops_per_token", "inference_flops_per_token")
    )
    sizes = lm_rows.index.get_level_values("size")
    ratio = lm_rows["train_flops_per_token"] / enc_flops["train_flops_per_token"].reindex(sizes).to_numpy()
    speed = lm_rows["tokens_per_s"] / enc_flops["tokens_per_s"].reindex(sizes).to_numpy()
    ends = [r.sort_index(level="size").iloc[[0, -1]].to_numpy() for _, r in ratio.groupby(level="variant")]
    narrowing = sum(last < first for first, last in ends)
    verdict = NOT_REPRODUCED if not fewer else REPRODUCED if narrowing == len(ends) else PARTLY
    return Claim(
        "EncDec needs fewer FLOPs per token than the LMs, the gap narrowing at scale (Fig. 7)",
        "EncDec demands less computation than every LM, the gap narrowing at scale (Sec. 5.1, Fig. 7)",
        f"LM / EncDec training FLOPs at equal size: {ratio.min():.2f}-{ratio.max():.2f}x, smaller at the "
        f"largest size than at the smallest for {narrowing} of {len(ends)} LMs; measured training speed "
        f"LM / EncDec {speed.min():.2f}-{speed.max():.2f}x",
        verdict,
        "analytic training and inference FLOPs of every LM above its EncDec's (else not reproduced), and the "
        "training-FLOPs ratio of every LM smaller at the largest size than at the smallest (else partly)",
    )


@dataclass(frozen=True)
class _PairRuns:
    """One language pair's runs as the Sec. 5 claims read them: mean loss over test sets per (variant,
    size), each LM's gap to EncDec, the variants and sizes run, the Deep-Wide differences and the noise."""

    means: pd.Series  # mean loss by (variant, size)
    gap_at: pd.Series  # loss minus EncDec's by (variant, size)
    variants: set[str]  # the LM variants run (EncDec not among them)
    sizes: list[int]
    wide_deep: pd.DataFrame  # `wide_minus_deep`
    noise: Noise
    change_noise: Noise

    @property
    def small(self) -> int:
        return self.sizes[0]

    @property
    def large(self) -> int:
        return self.sizes[-1]

    def sizes_of(self, *variants: str) -> list[int]:
        """The sizes at which every one of `variants` was run (and EncDec, which each LM is matched to):
        families can reach different largest sizes while their runs land."""
        run = set(self.gap_at.index)
        return [s for s in self.sizes if all(v == ENCDEC or (v, s) in run for v in variants)]


def _bilingual_claims(
    table: pd.DataFrame, exponents: pd.DataFrame, settings: pd.DataFrame, noise: Noise, change_noise: Noise
) -> list[Claim]:
    """The claims of Sec. 5 (Fig. 2, 3, 9) on one language pair's runs; see `claims` for the rules."""
    pair = _pair_runs(table, noise, change_noise)
    prefix_close = [_prefix_close_claim(pair)] if PREFIX_DEEP in pair.variants else []
    return [
        _gap_narrows_claim(pair),
        *prefix_close,
        _loss_order_claim(
            pair,
            "CausalLM is behind EncDec",
            "CausalLM retains a clear gap against the others (Fig. 2)",
            ENCDEC,
            CAUSAL_DEEP,
            pair.sizes_of(CAUSAL_DEEP),
        ),
        # causal masking alone: both without a source-side loss, so only the mask differs
        _loss_order_claim(
            pair,
            "CausalLM + TgtOnly is behind PrefixLM (causal masking alone)",
            "full visibility of the source (PrefixLM) beats causal masking (Fig. 2)",
            PREFIX_DEEP,
            TGTONLY_DEEP,
            pair.sizes_of(PREFIX_DEEP, TGTONLY_DEEP),
        ),
        _tgtonly_claim(pair),
        _deep_vs_wide_claim(pair),
        _deep_wide_gap_claim(pair),
        _ordering_claim(pair),
        _loss_order_claim(
            pair,
            "TopOnly is ahead at small sizes",
            "topmost-layer source encodings (TopOnly) help when there are fewer parameters (Fig. 2)",
            TOPONLY_DEEP,
            PREFIX_DEEP,
            [pair.small],
        ),
        _exponent_stability_claim(exponents),
        *_irreducible_claims(exponents),
        *_setting_claims(settings, noise),
        _ranking_claim(settings, noise),
    ]


def _pair_runs(table: pd.DataFrame, noise: Noise, change_noise: Noise) -> _PairRuns:
    """One language pair's `run_table` rows as the Sec. 5 claims read them."""
    gaps = gaps_to_encdec(table)
    return _PairRuns(
        means=mean_loss(table).set_index(["variant", "size"])["loss"],
        gap_at=gaps.set_index(["variant", "size"])["gap"],
        variants=set(gaps["variant"]),
        sizes=[int(s) for s in sorted(gaps["size"].unique())],
        wide_deep=wide_minus_deep(table.drop(columns="group", errors="ignore")),
        noise=noise,
        change_noise=change_noise,
    )


def _gap_narrows_claim(pair: _PairRuns) -> Claim:
    """Fig. 2: the LMs behind EncDec at the smallest size close the gap as they grow."""
    small, gap_at, noise = pair.small, pair.gap_at, pair.noise
    large = {v: pair.sizes_of(v)[-1] for v in pair.variants}
    behind = sorted(v for v in pair.variants if gap_at[(v, small)] > noise.nats)
    shrink = [gap_at[(v, small)] - gap_at[(v, large[v])] for v in behind]
    one_largest = len(set(large.values())) == 1
    return graded(
        "The gap to EncDec narrows as models grow (Fig. 2)",
        "LMs that are poor at small scale gain more from parameters; the gap narrows at scale",
        "; ".join(
            f"{v}: {gap_at[(v, small)]:+.3f} -> {gap_at[(v, large[v])]:+.3f}"
            + ("" if one_largest else f" (size {large[v]})")
            for v in sorted(pair.variants)
        ),
        by_differences(shrink, pair.change_noise.nats)
        if behind
        else (NOT_TESTABLE, f"no LM behind EncDec by more than {noise.nats:.3f} nats at size {small}"),
        f"for the LMs behind EncDec at size {small} by more than the difference noise "
        f"({', '.join(behind) or 'none'}): the gap at "
        + (f"size {pair.large}" if one_largest else "each one's largest size")
        + " smaller by more than the change noise (mean loss over test sets)",
        f"differences {noise.text}; changes {pair.change_noise.text}",
    )


def _prefix_close_claim(pair: _PairRuns) -> Claim:
    """Fig. 2: PrefixLM never falls behind EncDec by more than the noise. An equivalence passes on low power
    too, so it is judged only where the noise lets the comparison see an architecture gap: some LM behind
    EncDec by more than the noise at some size."""
    gap = [pair.gap_at[(PREFIX_DEEP, s)] for s in pair.sizes_of(PREFIX_DEEP)]
    largest = float(pair.gap_at.max())
    claim, paper = (
        "PrefixLM is close to EncDec",
        "PrefixLM and EncDec converge to similar quality bands (Fig. 2)",
    )
    measured = (
        "PrefixLM + Deep - EncDec: "
        + ", ".join(f"{g:+.3f}" for g in gap)
        + f"; largest LM gap {largest:+.3f}"
    )
    rule = "PrefixLM never behind EncDec by more than the noise, where some LM is behind it by more"
    if largest <= pair.noise.nats:
        reason = "no LM is behind EncDec beyond the noise: close and undetected cannot be told apart"
        return untestable(claim, paper, measured, rule, reason, pair.noise.text)
    verdict = REPRODUCED if all(g <= pair.noise.nats for g in gap) else NOT_REPRODUCED
    return Claim(claim, paper, measured, verdict, rule, pair.noise.text)


def _loss_order_claim(
    pair: _PairRuns, claim: str, paper: str, better: str, worse: str, which: Sequence[int]
) -> Claim:
    """`worse` behind `better` by more than the noise at every size in `which`."""
    rule = f"loss({worse}) - loss({better}) above the noise at every size"
    run = pair.variants | {ENCDEC}
    if better not in run or worse not in run:
        return untestable(claim, paper, f"{better} or {worse} not run", rule, "not run at this scale")
    diffs = [pair.means[(worse, s)] - pair.means[(better, s)] for s in which]
    sizes_text = ", ".join(f"size {s}: {d:+.3f}" for s, d in zip(which, diffs, strict=True))
    measured = f"loss({worse}) - loss({better}): {sizes_text}"
    return graded(claim, paper, measured, by_differences(diffs, pair.noise.nats), rule, pair.noise.text)


def _deep_vs_wide_claim(pair: _PairRuns) -> Claim:
    """Zhang: with fewer parameters, LM + Deep beats LM + Wide; judged at the smallest size."""
    claim = "LM + Deep is ahead of LM + Wide at the smallest size"
    paper = "LM + Deep outperforms LM + Wide when there are fewer parameters (Sec. 5.1, Fig. 2)"
    rule = f"loss(Wide) - loss(Deep) above the noise for every architecture at size {pair.small}"
    wide_deep = pair.wide_deep
    if wide_deep.empty:
        return untestable(claim, paper, "no architecture trained both ways", rule, "not run at this scale")
    at_small = wide_deep[wide_deep.index.get_level_values("size") == pair.small]
    measured = "loss(Wide) - loss(Deep): " + "; ".join(
        f"{ARCH_NAMES[arch_name]}: " + ", ".join(f"size {size}: {d:+.3f}" for (_, size), d in per.items())
        for arch_name, per in wide_deep.groupby(level="arch")
    )
    return graded(
        claim, paper, measured, by_differences(list(at_small), pair.noise.nats), rule, pair.noise.text
    )


def _deep_wide_gap_claim(pair: _PairRuns) -> Claim:
    """Zhang: "the difference between LM + Deep and LM + Wide almost disappears at the end"."""
    small, noise, change_noise = pair.small, pair.noise, pair.change_noise
    claim = "The Deep-Wide gap almost disappears at the largest size"
    paper = "the difference between LM + Deep and LM + Wide almost disappears at the end (Sec. 5.1)"
    rule = (
        f"for every architecture where Deep leads Wide at size {small} by more than the noise: at the "
        f"largest size trained both ways the gap within the noise, or smaller than at size {small} by more "
        "than the change noise"
    )
    if pair.wide_deep.empty:
        return untestable(claim, paper, "no architecture trained both ways", rule, "not run at this scale")
    # each architecture's smallest and largest size trained both ways
    ends = pd.DataFrame(
        {
            "small": pair.wide_deep.xs(small, level="size"),
            "large": pair.wide_deep.groupby(level="arch").last(),
            "large_size": pair.wide_deep.reset_index("size").groupby(level="arch")["size"].last(),
        }
    ).dropna(subset=["small"])
    led = ends[ends["small"] > noise.nats]
    measured = "; ".join(
        f"{ARCH_NAMES[arch_name]}: {row['small']:+.3f} -> {row['large']:+.3f} (size {int(row['large_size'])})"
        for arch_name, row in ends.iterrows()
    )
    if led.empty:
        reason = f"Deep leads Wide by more than {noise.nats:.3f} nats at size {small} in no architecture"
        return untestable(claim, paper, measured, rule, reason, noise.text)
    closed = (led["large"].abs() <= noise.nats) | (led["small"] - led["large"] > change_noise.nats)
    return graded(
        claim,
        paper,
        measured,
        by_count(int(closed.sum()), len(led)),
        rule,
        f"differences {noise.text}; changes {change_noise.text}",
    )


def _ordering_claim(pair: _PairRuns) -> Claim:
    """Zhang: "PrefixLM and EncDec converge to a similar quality bands followed by CausalLM + TgtOnly while
    CausalLM still retains a clear gap against the others"."""
    noise = pair.noise
    claim = "At the largest size: EncDec ~ PrefixLM, then CausalLM + TgtOnly, then CausalLM"
    paper = (
        "PrefixLM and EncDec converge to similar quality bands followed by CausalLM + TgtOnly while "
        "CausalLM retains a clear gap (Sec. 5.1, Fig. 2)"
    )
    order = [ENCDEC, PREFIX_DEEP, TGTONLY_DEEP, CAUSAL_DEEP]
    rule = (
        "at the largest size all four were run: |PrefixLM - EncDec| within the noise; CausalLM + TgtOnly "
        "behind both and CausalLM behind CausalLM + TgtOnly, each by more than the noise"
    )
    if any(v not in pair.variants | {ENCDEC} for v in order):
        return untestable(claim, paper, "not every variant was run", rule, "not run at this scale")
    large = pair.sizes_of(*order)[-1]
    loss = {v: pair.means[(v, large)] for v in order}
    measured = f"size {large}: " + ", ".join(f"{v} {loss[v]:.3f}" for v in order)
    holds = [
        abs(loss[PREFIX_DEEP] - loss[ENCDEC]) <= noise.nats,
        loss[TGTONLY_DEEP] - max(loss[PREFIX_DEEP], loss[ENCDEC]) > noise.nats,
        loss[CAUSAL_DEEP] - loss[TGTONLY_DEEP] > noise.nats,
    ]
    return graded(claim, paper, measured, by_count(sum(holds), len(holds)), rule, noise.text)


def _tgtonly_claim(pair: _PairRuns) -> Claim:
    """Zhang: the source-side LM loss brings CausalLM no significant gain; TgtOnly is one of the inductive
    biases that help "when there are fewer parameters"."""
    noise = pair.noise
    claim = "Dropping the source LM loss helps CausalLM at small sizes (TgtOnly ahead)"
    paper = "the source-side LM objective brings no significant gain; TgtOnly helps small models (Sec. 5.1)"
    rule = (
        f"loss(CausalLM) - loss(CausalLM + TgtOnly) above the noise at size {pair.small} and not below minus "
        "the noise at any size"
    )
    if TGTONLY_DEEP not in pair.variants or CAUSAL_DEEP not in pair.variants:
        return untestable(claim, paper, "TgtOnly or CausalLM not run", rule, "not run at this scale")
    sizes = pair.sizes_of(CAUSAL_DEEP, TGTONLY_DEEP)
    diffs = [pair.means[(CAUSAL_DEEP, s)] - pair.means[(TGTONLY_DEEP, s)] for s in sizes]
    measured = "loss(CausalLM) - loss(CausalLM + TgtOnly): " + ", ".join(
        f"size {s}: {d:+.3f}" for s, d in zip(sizes, diffs, strict=True)
    )
    contrary = min(diffs) < -noise.nats
    verdict = (NOT_REPRODUCED, "") if contrary else by_differences([diffs[0]], noise.nats)
    return graded(claim, paper, measured, verdict, rule, noise.text)


def _exponent_stability_claim(exponents: pd.DataFrame) -> Claim:
    """Fig. 3: the fitted exponent changes marginally across evaluation settings. Each variant is judged on
    its own fits' intervals (`exponent_stability`); variants whose intervals cannot tell decide nothing."""
    stability = exponent_stability(exponents)
    width = alpha_interval_width(exponents)
    counts = stability["verdict"].value_counts()
    stable, unstable = int(counts.get("stable", 0)), int(counts.get("unstable", 0))
    claim, paper = (
        "Exponents are stable across evaluation settings (Fig. 3)",
        f"the exponent changes marginally across settings, often less than {EXPONENT_STABILITY}",
    )
    measured = (
        f"alpha range across settings per variant: {stability['range'].min():.3f}-"
        f"{stability['range'].max():.3f}; under {EXPONENT_STABILITY} in {stable}, beyond it with the 95% "
        f"intervals apart in {unstable}, undecided in {len(stability) - stable - unstable} of "
        f"{len(stability)} variants; median 95% interval width {width:.3f}"
    )
    rule = (
        f"range < {EXPONENT_STABILITY} in every variant the intervals decide (a variant whose range exceeds "
        f"{EXPONENT_STABILITY} only within its intervals decides nothing)"
    )
    interval = f"the exponents' 95% intervals (median width {width:.3f})"
    if width > EXPONENT_STABILITY:
        reason = f"the exponents are undetermined: intervals wider than {EXPONENT_STABILITY}"
        return untestable(claim, paper, measured, rule, reason, interval)
    verdict, reason = by_count(stable, stable + unstable, "no variant's intervals decide its range")
    return Claim(claim, paper, measured, verdict, rule, interval, reason)


def exponent_stability(exponents: pd.DataFrame, by: Sequence[str] = ("variant",)) -> pd.DataFrame:
    """Per group `by` of `law_parameters` (over its evaluation settings): the range of the exponent alpha,
    the widest gap between two settings' 95% intervals (one's lower bound minus another's upper), and a
    verdict: "stable" when the range is under `EXPONENT_STABILITY`, "unstable" when two intervals lie further
    apart than that, else "undecided" (the range exceeds it only within the intervals)."""
    rows = []
    for key, fits in exponents.groupby(list(by), sort=False):
        spread = float(fits["alpha"].max() - fits["alpha"].min())
        gap = float(fits["alpha_lower"].max() - fits["alpha_upper"].min())
        verdict = (
            "stable"
            if spread < EXPONENT_STABILITY
            else "unstable"
            if gap > EXPONENT_STABILITY
            else "undecided"
        )
        rows.append(
            {**dict(zip(by, key, strict=True)), "range": spread, "interval_gap": gap, "verdict": verdict}
        )
    return pd.DataFrame(rows)


def _irreducible_claims(exponents: pd.DataFrame) -> list[Claim]:
    """Fig. 3, judged on the paper's quantity, Eq. 7's irreducible loss L_inf per evaluation setting:
    target-original sentences are harder (when both originalities were evaluated), medium-length sources the
    easiest."""
    found = []
    if {"source-original", "target-original"} <= set(exponents["setting"]):
        found.append(
            _irreducible_order_claim(
                exponents,
                "Target-original sentences are harder to model",
                "the irreducible loss of target-original sentences is higher (Fig. 3)",
                above=["target-original"],
                below=["source-original"],
            )
        )
    found.append(
        _irreducible_order_claim(
            exponents,
            "Medium-length sources are the easiest",
            "translating medium-length sequences is much easier: the lowest irreducible loss (Fig. 3)",
            above=[b for b in LENGTH_BUCKETS if b != "medium"],
            below=["medium"],
        )
    )
    return found


def _irreducible_order_claim(
    exponents: pd.DataFrame, claim: str, paper: str, above: Sequence[str], below: Sequence[str]
) -> Claim:
    """L_inf of every setting in `above` over L_inf of every setting in `below`, per architecture variant. A
    variant decides only where the 95% intervals are apart: it agrees when each `above` interval lies wholly
    over each `below` one, disagrees when one lies wholly under; overlapping intervals decide nothing."""
    by_setting = exponents.set_index(["variant", "setting"])
    agree = disagree = 0
    for variant in exponents["variant"].unique():
        rows = by_setting.loc[variant]
        pairs = [(rows.loc[a], rows.loc[b]) for a in above for b in below]
        if all(a["L_inf_lower"] > b["L_inf_upper"] for a, b in pairs):
            agree += 1
        elif any(a["L_inf_upper"] < b["L_inf_lower"] for a, b in pairs):
            disagree += 1
    settings = exponents[exponents["setting"].isin([*above, *below])]
    width = float((settings["L_inf_upper"] - settings["L_inf_lower"]).median())
    at_bound = int((settings["L_inf_upper"] < L_INF_AT_BOUND).sum())
    variants = exponents["variant"].nunique()
    measured = (
        f"L_inf ({' / '.join(above)} over {' / '.join(below)}) ordered as the paper says in {agree} and "
        f"the other way in {disagree} of {variants} variants; the rest overlap (median interval width "
        f"{width:.2f} nats; {at_bound} of {len(settings)} fits' intervals within {L_INF_AT_BOUND} nats of "
        "the bound L_inf = 0)"
    )
    rule = (
        "in every variant whose intervals are apart, the paper's order (overlapping intervals decide nothing)"
    )
    noise = "Eq. 7's 95% perturbation intervals of L_inf"
    verdict, reason = by_count(
        agree,
        agree + disagree,
        f"Eq. 7's irreducible losses are undetermined: their intervals overlap in every variant, {at_bound} "
        f"of {len(settings)} at the bound L_inf = 0 (a loss with no floor in sight over these sizes)",
    )
    return Claim(claim, paper, measured, verdict, rule, noise, reason)


def _setting_claims(settings: pd.DataFrame, noise: Noise) -> list[Claim]:
    """Our checks beside Fig. 3's (not the paper's quantity, which is Eq. 7's L_inf): the raw final losses of
    target- vs source-original test sets (when both were evaluated; they differ in domain too) and of the
    source-length buckets."""
    by_setting = settings.pivot_table(index=["variant", "size"], columns="setting", values="loss")
    found = []
    if {"source-original", "target-original"} <= set(by_setting.columns):
        harder = by_setting["target-original"] - by_setting["source-original"]
        found.append(
            graded(
                "Target-original test sets have the higher final loss (our check: raw loss)",
                "the irreducible loss of target-original sentences is higher (Fig. 3)",
                f"target- minus source-original loss: {harder.min():+.3f} to {harder.max():+.3f} "
                f"over {len(harder)} models",
                by_differences(harder, noise.nats),
                "target-original loss above source-original beyond the noise in every model (the test sets "
                "also differ in domain)",
                noise.text,
            )
        )
    lengths = by_setting[list(LENGTH_BUCKETS)]
    medium_best = int((lengths.idxmin(axis=1) == "medium").sum())
    found.append(
        Claim(
            "Medium-length sources have the lowest final loss (our check: raw loss)",
            "translating medium-length sequences is much easier (Fig. 3)",
            f"medium has the lowest loss in {medium_best} of {len(lengths)} models; lowest bucket counts: "
            + ", ".join(f"{b} {n}" for b, n in lengths.idxmin(axis=1).value_counts().items()),
            REPRODUCED if medium_best > len(lengths) / 2 else NOT_REPRODUCED,
            "medium lowest in most models",
        )
    )
    return found


def _ranking_claim(settings: pd.DataFrame, noise: Noise) -> Claim:
    """Zhang Sec. 5.1: the loss ranking of the architectures changes little over the Fig. 3 settings. At each
    size, a pair of architectures *reverses* when one is ahead by more than the noise in one setting and
    behind by more than the noise in another; an order that changes only within the noise is no change."""
    compared, firm, reversed_pairs = 0, 0, []
    for size, rows in settings.groupby("size"):
        by_setting = rows.pivot_table(index="variant", columns="setting", values="loss")
        for a, b in itertools.combinations(sorted(by_setting.index), 2):
            difference = (by_setting.loc[a] - by_setting.loc[b]).dropna()
            if len(difference) < 2:
                continue
            compared += 1
            firm += bool(
                (difference.abs() > noise.nats).all() and abs(np.sign(difference).sum()) == len(difference)
            )
            if difference.max() > noise.nats and difference.min() < -noise.nats:
                reversed_pairs.append(f"{a} / {b} at size {size}")
    if not compared:
        verdict = (NOT_TESTABLE, "fewer than two settings per model")
    elif not reversed_pairs and not firm:
        # every pair within the noise somewhere: no order to keep or to lose
        verdict = (NOT_TESTABLE, "no pair of architectures is apart beyond the noise in every setting")
    elif not reversed_pairs:
        verdict = (REPRODUCED, "")
    else:
        verdict = (PARTLY if len(reversed_pairs) <= compared / 4 else NOT_REPRODUCED, "")
    settings_seen = ", ".join(sorted(settings["setting"].unique()))
    return graded(
        "The loss ranking of the architectures changes little across evaluation settings (Fig. 3)",
        "the loss ranking of different models changes little over these settings",
        f"{len(reversed_pairs)} of {compared} architecture pairs (per size) reverse their order beyond the "
        f"noise between two of the settings ({settings_seen}); {firm} keep one order beyond the noise in "
        "every setting"
        + (
            f": {'; '.join(reversed_pairs[:4])}{' ...' if len(reversed_pairs) > 4 else ''}"
            if reversed_pairs
            else ""
        ),
        verdict,
        "reproduced if no pair of architectures reverses its order beyond the noise between two settings at "
        "any size, partly if at most a quarter of the pairs do",
        noise.text,
    )


def _multilingual_claims(ml: pd.DataFrame, noise: Noise) -> list[Claim]:
    supervised = ml[ml["kind"] != "zero-shot"].groupby(["variant", "size"])[["loss", "bleu"]].mean()
    zero = (
        ml[ml["kind"] == "zero-shot"].groupby(["variant", "size"])[["loss", "bleu", "off_target_rate"]].mean()
    )
    sizes = [int(s) for s in sorted(ml["size"].unique())]
    others = sorted(set(ml["variant"]) - {ENCDEC})

    def deltas(frame: pd.DataFrame, column: str, variant: str) -> list[float]:
        return [frame.loc[(variant, s), column] - frame.loc[(ENCDEC, s), column] for s in sizes]

    found = [
        _supervised_bleu_claim(
            float(supervised["bleu"].max()), {v: deltas(supervised, "bleu", v) for v in others}
        ),
        graded(
            "Multilingual: EncDec has the lowest supervised loss (our check: loss, not BLEU)",
            "EncDec almost always dominates the quality frontier on supervised directions (Table 3)",
            "; ".join(
                f"{v}: loss {', '.join(f'{d:+.3f}' for d in deltas(supervised, 'loss', v))}" for v in others
            ),
            by_differences([d for v in others for d in deltas(supervised, "loss", v)], noise.nats),
            "mean supervised loss of every LM above EncDec's by more than the noise at every size",
            noise.text,
        ),
    ]
    best_bleu = float(zero["bleu"].max())
    no_translation = (
        f"zero-shot BLEU at most {best_bleu:.2f} < {TRANSLATING_BLEU:g}: no model translates"
        if best_bleu < TRANSLATING_BLEU
        else ""
    )
    translating_rule = f"once some model reaches zero-shot BLEU {TRANSLATING_BLEU:g}"

    def off_target(claim: str, paper: str, variant: str, holds, rule: str, extra: str = "") -> Claim:
        off = deltas(zero, "off_target_rate", variant)
        measured = (
            f"off-target rate {variant} - EncDec: {', '.join(f'{d:+.2f}' for d in off)} (sizes {sizes})"
        )
        if no_translation:
            return untestable(claim, paper, measured + extra, rule, no_translation)
        return Claim(claim, paper, measured + extra, REPRODUCED if holds(off) else NOT_REPRODUCED, rule)

    if PREFIX_DEEP in others:
        found.append(
            off_target(
                "PrefixLM has fewer off-target zero-shot translations than EncDec",
                "PrefixLM drastically reduces off-target translation (Fig. 5)",
                PREFIX_DEEP,
                lambda off: all(d < 0 for d in off),
                f"lower off-target rate at every size, {translating_rule}",
                "; zero-shot BLEU " + ", ".join(f"{d:+.2f}" for d in deltas(zero, "bleu", PREFIX_DEEP)),
            )
        )
        loss = deltas(zero, "loss", PREFIX_DEEP)
        found.append(
            graded(
                "EncDec still fits zero-shot directions best (lower loss than PrefixLM)",
                "PrefixLM usually underperforms EncDec in perplexity on zero-shot pairs (Sec. 6)",
                f"zero-shot loss PrefixLM - EncDec: {', '.join(f'{d:+.3f}' for d in loss)}",
                by_differences(loss, noise.nats),
                "PrefixLM's zero-shot loss above EncDec's by more than the noise at every size",
                noise.text,
            )
        )
    found.append(_zero_shot_scaling_claim(zero, sizes, no_translation, translating_rule))
    if CAUSAL_DEEP in others:
        bleu, off = deltas(zero, "bleu", CAUSAL_DEEP), deltas(zero, "off_target_rate", CAUSAL_DEEP)
        claim = "CausalLM brings no zero-shot benefit"
        paper = "no benefits from CausalLM on zero-shot translation (Sec. 6)"
        measured = (
            f"zero-shot BLEU {CAUSAL_DEEP} - EncDec: {', '.join(f'{d:+.2f}' for d in bleu)}; off-target rate "
            f"{', '.join(f'{d:+.2f}' for d in off)} (sizes {sizes})"
        )
        rule = f"CausalLM's zero-shot BLEU not above EncDec's at any size, {translating_rule}"
        found.append(
            untestable(claim, paper, measured, rule, no_translation)
            if no_translation
            else Claim(
                claim, paper, measured, REPRODUCED if all(d <= 0 for d in bleu) else NOT_REPRODUCED, rule
            )
        )
    return found


def _supervised_bleu_claim(best_bleu: float, deltas: dict[str, list[float]]) -> Claim:
    """Table 3 by the paper's quantity: EncDec's mean supervised BLEU above every LM's at every size
    (`deltas`: LM minus EncDec per size, by LM), testable once some model translates (`best_bleu` >=
    `TRANSLATING_BLEU`)."""
    claim, paper = (
        "Multilingual: EncDec leads on supervised directions (Table 3)",
        "EncDec outperforms the LMs in BLEU on supervised directions",
    )
    measured = f"supervised BLEU (best {best_bleu:.2f}), LM - EncDec: " + "; ".join(
        f"{v} {', '.join(f'{d:+.2f}' for d in ds)}" for v, ds in deltas.items()
    )
    rule = (
        f"every LM's mean supervised BLEU below EncDec's at every size, once some model reaches BLEU "
        f"{TRANSLATING_BLEU:g}"
    )
    if best_bleu < TRANSLATING_BLEU:
        reason = f"supervised BLEU at most {best_bleu:.2f} < {TRANSLATING_BLEU:g}: no model translates"
        return untestable(claim, paper, measured, rule, reason)
    behind = sum(all(d < 0 for d in ds) for ds in deltas.values())
    return Claim(claim, paper, measured, by_count(behind, len(deltas))[0], rule)


def _zero_shot_scaling_claim(
    zero: pd.DataFrame, sizes: list[int], no_translation: str, translating_rule: str
) -> Claim:
    """Zhang et al.'s "scaling improves knowledge transfer for almost all models" (Fig. 5), judged on its own
    quantity, zero-shot BLEU, from the smallest to the largest size of each architecture (`zero`: mean
    zero-shot loss, BLEU, off-target rate per variant and size); the loss is shown beside it."""
    claim = "Scaling improves zero-shot translation for almost every architecture (Fig. 5)"
    paper = "scaling improves knowledge transfer for almost all models (Sec. 6)"
    rule = (
        "zero-shot BLEU higher at the largest size than at the smallest for all architectures but at most "
        f"one, {translating_rule}"
    )
    variants = sorted({v for v, _ in zero.index})
    if len(sizes) < 2:
        return untestable(claim, paper, f"one size ({sizes})", rule, "needs two sizes per architecture")
    smallest, largest = sizes[0], sizes[-1]
    change = {v: zero.loc[(v, largest)] - zero.loc[(v, smallest)] for v in variants}
    measured = f"size {smallest} -> {largest}: " + "; ".join(
        f"{v} BLEU {d['bleu']:+.2f}, loss {d['loss']:+.3f}" for v, d in change.items()
    )
    if no_translation:
        return untestable(claim, paper, measured, rule, no_translation)
    rising = sum(d["bleu"] > 0 for d in change.values())
    return Claim(claim, paper, measured, REPRODUCED if rising >= len(variants) - 1 else NOT_REPRODUCED, rule)


def _transfer_claim(transfer: pd.DataFrame, noise: Noise) -> Claim:
    """Fig. 6: no LM transfers better than the EncDec of its size and helper language (else not reproduced),
    and CausalLM lags behind it beyond the noise in every case (else partly); `translation_table` rows."""
    losses = transfer.groupby(["group", "size", "variant"])["loss"].mean()
    ahead, causal_behind, causal_cases, texts = [], 0, 0, []
    for group, size in sorted({(g, s) for g, s, _ in losses.index}):
        block = losses.loc[(group, size)]
        ahead += [v for v, x in block.items() if x < block[ENCDEC] - noise.nats]
        if CAUSAL_DEEP in block:
            causal_cases += 1
            causal_behind += int(block[CAUSAL_DEEP] > block[ENCDEC] + noise.nats)
        texts.append(
            f"{group}, size {size}: "
            + ", ".join(f"{v} {x - block[ENCDEC]:+.3f}" for v, x in block.items() if v != ENCDEC)
        )
    lags = causal_cases > 0 and causal_behind == causal_cases
    return Claim(
        "Low-resource transfer to De: LMs transfer no better than EncDec, CausalLM lags behind (Fig. 6)",
        "PrefixLM comparable to EncDec, CausalLM far behind; EncDec almost dominates transfer (Fig. 6)",
        "loss on the German direction minus EncDec's: "
        + "; ".join(texts)
        + f"; CausalLM behind beyond the noise in {causal_behind} of {causal_cases}",
        NOT_REPRODUCED if ahead else REPRODUCED if lags else PARTLY,
        "no LM below EncDec's loss by more than the noise with either helper language (else not reproduced), "
        "and CausalLM above it by more than the noise in every case (else partly)",
        noise.text,
    )
