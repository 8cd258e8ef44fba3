"""Chapter 3's analysis: the tables and fits the chapter reads."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nmtscale import corpus, laws, pool, runs
from nmtscale.config import DataConfig
from nmtscale.engine.data import (
    ExperimentData,
    prepare_data,
    split_direction,
)
from nmtscale.engine.flops import forward_flops, training_flops_per_target_token
from nmtscale.engine.model import ModelConfig
from nmtscale.engine.tokenizer import UNK
from nmtscale.laws import fitting, uncertainty
from nmtscale.record import RunSummary
from nmtscale.studies import sweeps
from nmtscale.studies.architectures.plan import SCALINGS, PlannedModel, non_embedding_params
from nmtscale.studies.sweeps import above_minimum, last_fraction_slope


def inference_flops_per_target_token(cfg: ModelConfig, src_len: int, tgt_len: int) -> float:
    """Forward FLOPs per target token of translating one sentence pair: the source once, then the target.

    Cached decoding does the matmuls of one teacher-forced forward pass (up to the causal half of the
    attention products, which `flops.forward_flops` counts dense, as training kernels do), except that a
    CausalLM predicts no source tokens at inference, so its source logits are not counted.
    """
    if cfg.arch == "causallm":
        cfg = cfg.replace(arch="causallm_tgtonly")
    return forward_flops(cfg, src_len, tgt_len) / tgt_len


def encdec_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """Each language model's final loss minus that of the EncDec it is matched to (same group, size and test
    set): one row per group, variant and test set, a column per size; above 0, the LM is behind."""
    encdec_loss = table[table["variant"] == "EncDec"].set_index(["group", "size", "test_set"])["loss"]
    gaps = table[table["variant"] != "EncDec"].copy()
    matched = list(zip(gaps["group"], gaps["size"], gaps["test_set"], strict=True))
    gaps["gap"] = gaps["loss"].to_numpy() - encdec_loss.reindex(matched).to_numpy()
    return gaps.pivot_table(index=["group", "variant", "test_set"], columns="size", values="gap")


def budget_losses(table: pd.DataFrame, long_table: pd.DataFrame) -> pd.DataFrame:
    """The final losses of the budget check's models (`long_table`) beside those of the same models at the
    chapter's budget (`table`; both `run_table`s): one row per group, variant and size, a column per budget
    (steps) and test set."""
    checked = long_table[["group", "variant", "size"]].drop_duplicates()
    both = pd.concat([table.merge(checked, on=["group", "variant", "size"]), long_table], ignore_index=True)
    return both.pivot_table(index=["group", "variant", "size"], columns=["steps", "test_set"], values="loss")


def compute_table(
    plan: Sequence[PlannedModel],
    summaries: Sequence[RunSummary],
    table: pd.DataFrame,
    translations: pd.DataFrame,
    group: str,
) -> tuple[pd.DataFrame, tuple[int, int]]:
    """The cost of every model of one `group` (a language pair, Zhang Sec. 4.3): `flops_table` at the mean
    source and target lengths of the pair's training text in its runs' vocabulary, beside the measured
    training speed (`table`'s tokens_per_s) and greedy decoding speed (`translations`). Returns the table and
    the (source, target) lengths, target with its EOS."""
    members = [(p, s) for p, s in zip(plan, summaries, strict=True) if p.group == group]
    tokenizer = runs.tokenizer(members[0][1])
    train_pairs = corpus.load_pairs(*group.split("-"), "train")
    src_len = round(np.mean([len(ids) for ids in tokenizer.encode([s for s, _ in train_pairs])]))
    tgt_len = round(np.mean([len(ids) + 1 for ids in tokenizer.encode([t for _, t in train_pairs])]))
    flops = flops_table([p for p, _ in members], tokenizer.vocab_size, src_len, tgt_len)
    speed = table[table["group"] == group].drop_duplicates("run_id")[["variant", "size", "tokens_per_s"]]
    decoded = translations[translations["group"] == group].groupby(["variant", "size"])
    decoded = decoded[["target_tokens", "seconds"]].sum()
    decode_speed = (decoded["target_tokens"] / decoded["seconds"]).rename("decode_tokens_per_s")
    compute = flops.merge(speed, on=["variant", "size"]).merge(
        decode_speed.reset_index(), on=["variant", "size"]
    )
    return compute, (src_len, tgt_len)


def flops_table(plan: Sequence[PlannedModel], vocab_size: int, src_len: int, tgt_len: int) -> pd.DataFrame:
    """Per model: N, layers, and training / inference FLOPs per target token at these sentence lengths, with
    the run's vocabulary (a run config leaves the model's vocabulary size to its tokenizer)."""
    rows = []
    for p in plan:
        model = p.config.model.replace(vocab_size=vocab_size)
        rows.append(
            {
                "variant": p.label,
                "size": p.size,
                "layers": p.layers,
                "N": non_embedding_params(model),
                "train_flops_per_token": training_flops_per_target_token(model, src_len, tgt_len),
                "inference_flops_per_token": inference_flops_per_target_token(model, src_len, tgt_len),
            }
        )
    return pd.DataFrame(rows)


RUN_COLUMNS = (
    "run_id", "group", "variant", "arch", "scaling", "size", "layers", "N", "test_set", "loss", "slope",
    "above_minimum", "steps", "tokens", "wall_time_s", "tokens_per_s", "train_flops_per_token", "status",
    "reason",
)  # fmt: skip


def run_table(
    plan: Sequence[PlannedModel], summaries: Sequence[RunSummary], plain_test_sets: bool = False
) -> pd.DataFrame:
    """One row per run and test set: variant, size, layers, N, test_set (as 'en-de/l10n', or 'l10n' with
    `plain_test_sets`, where each run's group names its one pair), loss (final),
    slope (of the test loss over the second half of training, nats per doubling of the steps: about 0 once
    the curve has flattened), above_minimum (the last evaluation's loss above the run's lowest: > 0 once it
    overfits), steps (the run's budget), tokens, wall_time_s, tokens_per_s (measured), train_flops_per_token
    (analytic, at the run's mean training lengths), status, reason (why a failed run failed). Failed runs keep
    their rows with a NaN loss."""
    rows = []
    for p, s in sweeps.planned_summaries(plan, summaries, lambda p: f"{p.label} size {p.size}"):
        for key in s.test_set_keys():
            rows.append(
                {
                    "run_id": s.run_id,
                    "group": p.group,
                    "variant": p.label,
                    "arch": p.arch,
                    "scaling": p.scaling,
                    "size": p.size,
                    "layers": p.layers,
                    "N": non_embedding_params(p.config.model),
                    "test_set": key.split("/", 1)[1] if plain_test_sets else key,
                    "loss": s.final_loss.get(key, math.nan) if s.finished else math.nan,
                    "slope": last_fraction_slope(s.curves, key, fraction=0.5),
                    "above_minimum": above_minimum(s.curves, key),
                    "steps": p.config.train.steps,
                    "tokens": sum(s.tokens_seen.values()),
                    "wall_time_s": s.wall_time_s,
                    "tokens_per_s": math.nan if s.tokens_per_s is None else s.tokens_per_s,
                    "train_flops_per_token": s.flops_per_target_token,
                    "status": s.status,
                    "reason": s.reason,
                }
            )
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


@dataclass
class LawFit:
    """Eq. 7 fitted to one series: its fit (law parameters alpha=beta, p=alpha, L_inf) and its uncertainty."""

    keys: dict[str, Any]
    fit: fitting.Fit
    spread: uncertainty.Uncertainty | None  # None when fitted without uncertainty


def fit_power_laws(
    points: pd.DataFrame,
    by: Sequence[str],
    n0: float,
    relative_sigma: float | Mapping[Any, float],
    n_samples: int = 0,
    seed: int = 0,
    workers: int = 1,
) -> list[LawFit]:
    """Zhang Eq. 7, L(N) = beta (N / N0)^-alpha + L_inf, fitted to the rows (columns N, loss) of each group of
    `by` by the robust multi-start fit from the law's start grid. With `n_samples` > 1 the uncertainty
    refits on losses perturbed by Gaussian noise of `relative_sigma` x loss, each refit restarted from the
    whole grid: with as few points as parameters a warm-started refit stays in the first fit's valley and
    understates the spread tenfold or more. `relative_sigma` is one for every group, or a mapping from a
    value of the first `by` column (chapter 3: the language pair, each with its own seed noise) to its
    group's. The groups' refits run in `workers` processes. Groups need >= 3 points."""
    groups = list(points.dropna(subset=["loss"]).groupby(list(by), sort=False))
    for values, group in groups:
        if len(group) < 3:
            raise ValueError(f"group {values}: {len(group)} points; Eq. 7 has 3 parameters")
    keys = [
        dict(zip(by, values if isinstance(values, tuple) else (values,), strict=True)) for values, _ in groups
    ]
    law = _eq7(n0)
    fits = [
        fitting.fit_multistart(law, group[["N"]], group["loss"].to_numpy(), HUBER_DELTA)
        for _, group in groups
    ]
    spreads: list[uncertainty.Uncertainty | None] = [None] * len(fits)
    if n_samples > 1:
        spreads = uncertainty.restarted_in_workers(
            fits,
            [(_eq7, (n0,))] * len(fits),
            "perturbation",
            n_samples,
            seed,
            [_group_sigma(relative_sigma, key[by[0]], by[0]) for key in keys],
            workers,
            delta=HUBER_DELTA,
        )
    return [LawFit(key, fit, spread) for key, fit, spread in zip(keys, fits, spreads, strict=True)]


def _group_sigma(relative_sigma: float | Mapping[Any, float], value: Any, column: str) -> float:
    if not isinstance(relative_sigma, Mapping):
        return float(relative_sigma)
    if value not in relative_sigma:
        raise KeyError(f"no relative sigma for {column} {value!r} (given: {sorted(relative_sigma)})")
    return float(relative_sigma[value])


def relative_seed_sigma(table: pd.DataFrame, seed_std: Mapping[str, float]) -> dict[str, float]:
    """Each pair's seed std relative to its mean final loss (`run_table`'s group and loss): the size of the
    perturbations for the uncertainty of that pair's fits. A pair without rows has no fits and gets none."""
    mean_loss = table.groupby("group")["loss"].mean()
    return {pair: float(std / mean_loss[pair]) for pair, std in seed_std.items() if pair in mean_loss}


def _eq7(n0: float) -> laws.Law:
    # scipy's L-BFGS-B per start: on 3-6 points about 4x faster than the batched optimiser
    return dataclasses.replace(laws.power_law(n0), batched=False)


# Where the Huber loss on log residuals bends for Eq. 7's fits: at the seed noise's size (the 1% of Fernandes
# et al.'s footnote 5, as chapter 4's fits). At the project's default (Besiroglu's 1e-3) the objective of four
# sizes was flat enough that a 1e-13 relative change of the losses moved 17 of chapter 3's 77 fits by more
# than one perturbation std.
HUBER_DELTA = uncertainty.PERTURBATION_SIGMA


def law_parameters(fits: Sequence[LawFit], level: float = 0.95) -> pd.DataFrame:
    """One row per fit in the paper's names: alpha (exponent), beta, L_inf, each with an interval, and the
    number of points; `alpha_gt_0` is the share of perturbed refits whose exponent exceeds 0.001. Intervals
    are NaN for fits without uncertainty."""
    rows = []
    for f in fits:
        row = {**f.keys, "points": len(f.fit.y), "r2": f.fit.evaluate(f.fit.x, f.fit.y).r2}
        coefficients = None if f.spread is None else f.spread.coefficients(level).set_index("parameter")
        for name, paper in laws.POWER_LAW_PAPER_NAMES.items():
            row[paper] = f.fit.params[name]
            for side in ("lower", "upper"):
                row[f"{paper}_{side}"] = math.nan if coefficients is None else coefficients.loc[name, side]
        row["alpha_gt_0"] = math.nan if f.spread is None else float((f.spread.samples["p"] > 1e-3).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def rounding_sensitivity(fits: Sequence[LawFit]) -> pd.DataFrame:
    """One row per fit, in the paper's names: how far each coefficient of Eq. 7 moves when every loss changes
    by a few units in its 13th digit, the rounding by which two CPUs' executions differ, and the largest of
    those moves in standard deviations of its coefficient over the fit's perturbed refits
    (`uncertainty.rounding_summary`; nan for fits without them)."""
    return pd.DataFrame([{**f.keys, **uncertainty.rounding_summary(f.fit, f.spread)} for f in fits]).rename(
        columns=laws.POWER_LAW_PAPER_NAMES
    )


def alpha_interval_width(exponents: pd.DataFrame) -> float:
    """The median width of the exponents' intervals over the fits of `law_parameters`: how well the data
    determine alpha."""
    return float((exponents["alpha_upper"] - exponents["alpha_lower"]).median())


def law_curves(fits: Sequence[LawFit], n_points: int = 40) -> pd.DataFrame:
    """Each fitted law on a log grid over its points' range of N: columns of the fit's keys, N, loss."""
    frames = []
    for f in fits:
        n = np.geomspace(f.fit.x[:, 0].min(), f.fit.x[:, 0].max(), n_points)
        frames.append(pd.DataFrame({**f.keys, "N": n, "loss": f.fit.predict(n[:, None])}))
    return pd.concat(frames, ignore_index=True)


def piece_shares(data: ExperimentData, lang: str) -> dict[str, float]:
    """Among the reference tokens of the run's test sets into `lang`: the share of unknown pieces ("unknown")
    and of byte pieces ("byte", a byte-fallback vocabulary spelling a character it lacks)."""
    targets = [token for t in data.test_sets if t.target_lang == lang for e in t.examples for token in e.tgt]
    if not targets:
        raise ValueError(f"no test set translates into {lang!r}")
    return {
        "unknown": sum(token == UNK for token in targets) / len(targets),
        "byte": sum(map(data.tokenizer.is_byte, targets)) / len(targets),
    }


def vocabulary_check(data: DataConfig, cache_dir: Path, lang: str, workers: int = 1) -> pd.DataFrame:
    """`piece_shares` of `lang`'s references under the vocabulary of `data` without and with byte fallback
    (columns byte_fallback, unknown, byte), the two vocabularies trained side by side over `workers`."""
    fallbacks = (False, True)
    jobs = [(dataclasses.replace(data, byte_fallback=fallback), cache_dir, lang) for fallback in fallbacks]
    shares = pool.parallel_map(_prepared_piece_shares, jobs, workers)
    return pd.DataFrame([{"byte_fallback": f} | s for f, s in zip(fallbacks, shares, strict=True)])


def _prepared_piece_shares(data: DataConfig, cache_dir: Path, lang: str) -> dict[str, float]:
    return piece_shares(prepare_data(data, cache_dir), lang)


def dropped_training_pairs(plan: Sequence[PlannedModel], cache_dir: Path) -> pd.DataFrame:
    """Per group of `plan` (runs of a group share their training text) and direction: the training pairs kept
    under the runs' `data.max_train_tokens`, how many were dropped and the longest of those (tokens, longer
    side; 0 when none)."""
    rows = []
    for group, data in {p.group: p.config.data for p in plan}.items():
        prepared = prepare_data(data, cache_dir)
        for direction, examples in zip(prepared.directions, prepared.tasks, strict=True):
            lengths = prepared.dropped[direction]
            rows.append(
                {
                    "group": group,
                    "direction": direction,
                    "pairs kept": len(examples),
                    "dropped": len(lengths),
                    "longest dropped": max(lengths, default=0),
                }
            )
    return pd.DataFrame(rows)


def direction_kind(direction: str, trained: Sequence[str]) -> str:
    """'en-xx' or 'xx-en' for a trained direction, 'zero-shot' for one the run never trained on."""
    if direction not in trained:
        return "zero-shot"
    src_lang, _ = split_direction(direction)
    return "xx-en" if src_lang != "en" else "en-xx"


def translation_table(plan: Sequence[PlannedModel], summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per run and test set of runs that translated at the end of training: run_id, variant, size,
    group, steps (the run's budget), wall_time_s, direction, kind (en-xx, xx-en, zero-shot), test_set, loss,
    bleu, chrf, off_target_rate."""
    rows = []
    for p, s in sweeps.planned_summaries(plan, summaries, lambda p: f"{p.label} size {p.size}"):
        if not s.finished or s.translation is None:
            raise ValueError(
                f"run {s.run_id} ({p.label}): status {s.status}, translation {s.translation is not None}"
            )
        trained = s.config["data"]["directions"]
        for key, scores in s.translation.items():
            direction, test_set = key.split("/")
            rows.append(
                {
                    "run_id": s.run_id,
                    "variant": p.label,
                    "size": p.size,
                    "N": non_embedding_params(p.config.model),
                    "group": p.group,
                    "steps": p.config.train.steps,
                    "wall_time_s": s.wall_time_s,
                    "direction": direction,
                    "kind": direction_kind(direction, trained),
                    "test_set": test_set,
                    "loss": s.final_loss[key],
                    "bleu": scores["bleu"],
                    "chrf": scores["chrf"],
                    "off_target_rate": scores["off_target_rate"],
                }
            )
    return pd.DataFrame(rows)


# Issue 40: the supervised BLEU on `l10n` a multilingual model must reach before its zero-shot translations
# and off-target rates say anything about the architecture (chance is near 0).
SUPERVISED_BLEU_TARGET = 10.0


def bleu_by_budget(translations: pd.DataFrame, longer: pd.DataFrame, test_set: str = "l10n") -> pd.DataFrame:
    """Per variant, size and budget of the models trained again for longer (`longer`, `translation_table`
    rows), their runs at the chapter's budget among `translations` included: the mean and the best BLEU over
    the supervised directions on `test_set`, and the training time of the run."""
    checked = longer.set_index(["variant", "size"]).index.unique()
    both = pd.concat([translations, longer])
    both = both[both.set_index(["variant", "size"]).index.isin(checked)]
    supervised = both[(both["kind"] != "zero-shot") & (both["test_set"] == test_set)]
    grouped = supervised.groupby(["variant", "size", "steps"])
    return pd.DataFrame(
        {
            "mean_bleu": grouped["bleu"].mean(),
            "best_bleu": grouped["bleu"].max(),
            "hours": grouped["wall_time_s"].first() / 3600,
        }
    ).reset_index()


def budget_for_bleu(by_budget: pd.DataFrame, target: float, column: str = "mean_bleu") -> pd.DataFrame:
    """Per variant and size of `bleu_by_budget`: the BLEU (`column`) reached at the largest budget, and the
    budget at which a line through the points in log2 of the steps reaches `target` (NaN where it does not
    rise; the target itself where already reached at a budget), with its training time at the longest run's
    pace. An extrapolation of a few points, stated as such: a curve that bends over would need more."""
    rows = []
    for (variant, size), runs_of in by_budget.groupby(["variant", "size"]):
        runs_of = runs_of.sort_values("steps")
        longest = runs_of.iloc[-1]
        reached = runs_of[runs_of[column] >= target]
        if len(reached):
            steps_needed = float(reached["steps"].iloc[0])
        elif len(runs_of) >= 2:
            slope, intercept = np.polyfit(np.log2(runs_of["steps"]), runs_of[column], 1)
            steps_needed = float(2 ** ((target - intercept) / slope)) if slope > 0 else math.nan
        else:
            steps_needed = math.nan
        rows.append(
            {
                "variant": variant,
                "size": size,
                "largest_budget": int(longest["steps"]),
                "bleu_reached": float(longest[column]),
                "steps_for_target": steps_needed,
                "hours_for_target": steps_needed * longest["hours"] / longest["steps"],
            }
        )
    return pd.DataFrame(rows)


def budget_headline(by_budget: pd.DataFrame | None, for_target: pd.DataFrame | None) -> dict[str, Any]:
    """What the chapter's summary quotes of the multilingual budget check (`bleu_by_budget` and
    `budget_for_bleu`, or None without a check), for its largest EncDec: the longest budget (text), the number
    of budgets, the mean BLEU there, and the hours its line in log steps needs to reach the target."""
    if by_budget is None or for_target is None or not len(by_budget):
        return {"ml_longest_steps": "none", "ml_budget_points": "no"} | dict.fromkeys(
            ("ml_longest_bleu", "ml_target_hours"), math.nan
        )
    encdec = by_budget[by_budget["variant"] == ENCDEC]
    size = encdec["size"].max()
    largest = encdec[encdec["size"] == size].sort_values("steps")
    chosen = (for_target["variant"] == ENCDEC) & (for_target["size"] == size)
    (hours,) = for_target.loc[chosen, "hours_for_target"]
    return {
        "ml_longest_steps": f"{int(largest['steps'].iloc[-1]):,}",
        "ml_budget_points": str(len(largest)),
        "ml_longest_bleu": float(largest["mean_bleu"].iloc[-1]),
        "ml_target_hours": float(hours),
    }


def table3(translations: pd.DataFrame, reference: str = "EncDec") -> pd.DataFrame:
    """The paper's Table 3 from `translation_table` rows: per variant and size, mean BLEU over En->XX,
    XX->En and zero-shot test sets, zero-shot loss and translation-language accuracy (ACC, % on target);
    the reference variant keeps its scores, the others show the difference to it at the same size, except
    the zero-shot columns, which the paper prints as scores for every model."""
    if reference not in set(translations["variant"]):
        raise ValueError(f"no {reference!r} rows to take differences against")
    grouped = translations.groupby(["size", "variant", "kind"], sort=False)
    means = grouped[["bleu", "loss", "off_target_rate"]].mean().reset_index()
    wide = means.pivot_table(
        index=["size", "variant"], columns="kind", values=["bleu", "loss", "off_target_rate"], sort=False
    )
    table = pd.DataFrame(
        {
            "En->XX BLEU": wide[("bleu", "en-xx")],
            "XX->En BLEU": wide[("bleu", "xx-en")],
            "zero-shot BLEU": wide[("bleu", "zero-shot")],
            "zero-shot loss": wide[("loss", "zero-shot")],
            "zero-shot ACC": 100 * (1 - wide[("off_target_rate", "zero-shot")]),
        }
    )
    supervised = ["En->XX BLEU", "XX->En BLEU"]
    rows = []
    for size, block in table.groupby(level="size", sort=False):
        ref = block.xs(reference, level="variant")[supervised].iloc[0]
        for (_, variant), row in block.iterrows():
            out = row.copy()
            if variant != reference:
                out[supervised] = row[supervised] - ref
            rows.append({"size": size, "variant": variant, **out.to_dict()})
    return pd.DataFrame(rows)


ENCDEC = "EncDec"


def worker_minutes(*tables: pd.DataFrame) -> pd.Series:
    """Training time of the runs of `tables` (`run_table` or `translation_table` rows: run_id, group,
    wall_time_s), each run counted once, in minutes of one worker per group."""
    runs_once = pd.concat([t[["run_id", "group", "wall_time_s"]] for t in tables]).drop_duplicates("run_id")
    return runs_once.groupby("group", sort=False)["wall_time_s"].sum() / 60


def mean_loss(table: pd.DataFrame) -> pd.DataFrame:
    """Loss averaged over test sets: one row per variant and size (columns variant, size, loss)."""
    return table.groupby(["variant", "size"], sort=False)["loss"].mean().reset_index()


def gaps_to_encdec(table: pd.DataFrame) -> pd.DataFrame:
    """Per language-model variant and size: mean loss over test sets minus that of the EncDec of the size."""
    means = mean_loss(table)
    encdec = means[means["variant"] == ENCDEC].set_index("size")["loss"]
    lms = means[(means["variant"] != ENCDEC) & means["size"].isin(encdec.index)].copy()
    lms["gap"] = lms["loss"].to_numpy() - encdec.reindex(lms["size"]).to_numpy()
    return lms


def wide_minus_deep(table: pd.DataFrame) -> pd.Series:
    """Mean loss over test sets of LM + Wide minus that of LM + Deep (`run_table` rows), per language pair
    where the table has a `group` column, architecture and size, wherever both were trained (an empty series
    where none was)."""
    keys = [key for key in ("group", "arch", "size") if key in table]
    scaled = table[table["scaling"].isin(SCALINGS)]
    means = scaled.groupby([*keys, "scaling"])["loss"].mean().unstack("scaling")
    if not set(SCALINGS) <= set(means.columns):
        return pd.Series(dtype=float, name="wide_minus_deep")
    both = means.dropna(subset=list(SCALINGS))
    return (both["wide"] - both["deep"]).rename("wide_minus_deep")
