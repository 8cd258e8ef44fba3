"""Chapter 2's runs, as configs built from the chapter's parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nmtscale.config import RunConfig, override
from nmtscale.errors import ConfigurationError
from nmtscale.record import RunSummary
from nmtscale.studies import bivariate, sweeps
from nmtscale.studies.sweeps import PlannedRun

# A student trains on En->De pairs; its teacher translates the monolingual text of one side into the other.
KINDS = {"forward": ("en-de", "en"), "back": ("de-en", "de")}
DIRECTIONS = tuple(direction for direction, _ in KINDS.values())


STUDENT_DIRECTION = "en-de"


# Mono sentences are drawn in a fixed shuffled order, so a larger set contains a smaller one.
MONO_SEED = 0


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
    dropped: int  # sentences whose translation came out empty or off the length ratio


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


def teacher_sources(
    teachers: Mapping[str, Mapping[str, Any]], candidates: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Mapping[str, Any]], dict[str, str]]:
    """Which synthetic set comes from which teacher: an entry of `teachers` is either {kind, width}, a 2L-2L
    teacher trained here (`teacher_configs`), or {candidate: NAME}, the candidate teacher NAME of
    `candidates` (`candidate_teachers`), whose kind it takes. Returns the entries to train (name -> spec) and
    the candidates' names (name -> candidate); a malformed entry or an unknown candidate raises
    ConfigurationError naming it."""
    trained, borrowed = {}, {}
    for name, spec in teachers.items():
        where = f"teachers: {name}"
        if isinstance(spec, Mapping) and set(spec) == {"candidate"}:
            if spec["candidate"] not in candidates:
                raise ConfigurationError(
                    f"{where}: candidate {spec['candidate']!r} is not one of teacher_candidates "
                    f"({sorted(candidates)})"
                )
            borrowed[name] = spec["candidate"]
        elif isinstance(spec, Mapping) and set(spec) == {"kind", "width"} and spec["kind"] in KINDS:
            trained[name] = spec
        else:
            raise ConfigurationError(
                f"{where}: expected {{kind: {' | '.join(KINDS)}, width}} or {{candidate: NAME}}, got {spec!r}"
            )
    return trained, borrowed


def synthetic_requests(
    trained: Mapping[str, Mapping[str, Any]],
    trained_summaries: Mapping[str, RunSummary],
    borrowed: Mapping[str, str],
    candidates: Mapping[str, Mapping[str, Any]],
    candidate_summaries: Mapping[str, RunSummary],
) -> list[tuple[str, str, RunSummary]]:
    """(name, kind, teacher run) of every synthetic set (`synthetic_sets`' requests): the teachers trained
    here (`trained`, their runs by name) and then the candidate teachers `borrowed` names (`candidates`, their
    runs by candidate name), as `teacher_sources` splits them."""
    return [(name, spec["kind"], trained_summaries[name]) for name, spec in trained.items()] + [
        (name, candidates[candidate]["kind"], candidate_summaries[candidate])
        for name, candidate in borrowed.items()
    ]


CANDIDATE_KEYS = ("kind", "model", "steps", "schedule")
CANDIDATE_OPTIONAL_KEYS = ("width",)


def candidate_teachers(
    chapter1: Mapping[str, Any], candidates: Mapping[str, Mapping[str, Any]]
) -> dict[str, PlannedRun]:
    """Issue 42's teachers at chapter 1's scale: for each entry of `candidates` (name -> {kind, model,
    steps, schedule[, width]}) chapter 1's model (`bivariate.model_run` with its parameters `chapter1`,
    '2L-6L') on the kind's direction (`KINDS`) at that budget under that schedule: a run chapter 1 trains or
    checks is read from the store, not trained again. With `width`, the model is trained at that width with
    chapter 1's heads and feed-forward ratio (`sweeps.at_width`; its label names the width), a wider teacher
    than chapter 1 trains. A malformed entry raises ConfigurationError naming it."""
    planned = {}
    for name, spec in candidates.items():
        where = f"teacher_candidates: {name}"
        if (
            not isinstance(spec, Mapping)
            or not set(CANDIDATE_KEYS) <= set(spec)
            or not set(spec) <= set(CANDIDATE_KEYS + CANDIDATE_OPTIONAL_KEYS)
        ):
            raise ConfigurationError(
                f"{where}: expected {{{', '.join(CANDIDATE_KEYS)}[, {', '.join(CANDIDATE_OPTIONAL_KEYS)}]}}, "
                f"got {spec!r}"
            )
        if spec["kind"] not in KINDS:
            raise ConfigurationError(f"{where}: kind {spec['kind']!r} is not one of {sorted(KINDS)}")
        if not isinstance(spec["steps"], int) or spec["steps"] < 1:
            raise ConfigurationError(f"{where}: steps must be a positive integer, not {spec['steps']!r}")
        try:
            run = bivariate.model_run(
                chapter1, spec["model"], spec["steps"], spec["schedule"], KINDS[spec["kind"]][0], where
            )
        except ValueError as err:
            raise ConfigurationError(str(err)) from err
        if "width" in spec:
            try:
                wider = sweeps.at_width(run.config, spec["width"])
            except ValueError as err:
                raise ConfigurationError(f"{where}: {err} (chapter 1's heads)") from err
            run = replace(run, config=wider, off_width=True)
        planned[name] = run
    return planned


@dataclass(frozen=True)
class Student:
    """A student run: which training set ('natural' or a synthetic set's name), its width and config."""

    series: str
    width: int
    config: RunConfig


# How a student's model is made `width` wide, per `student_scale`: chapter 1's earlier width-16 recipe
# gives a head per 8 dimensions; chapter 1 at its own scale keeps its heads and feed-forward ratio.
STUDENT_SCALES = {"recipe": width_config, "chapter1": sweeps.at_width}


def student_recipe(
    student_scale: str, recipe: Mapping[str, Any], chapter1: Mapping[str, Any]
) -> tuple[RunConfig, Callable[[RunConfig, int], RunConfig]]:
    """The students' base config and how it is widened: chapter 1's earlier recipe (`recipe`, chapter 1's
    parameters with chapter 2's `chapter1_overrides`) or chapter 1 at its own scale (`chapter1`). The base
    translates nothing yet: the chapter adds its decoding keys, evaluated every `eval.interval` updates."""
    if student_scale not in STUDENT_SCALES:
        raise ConfigurationError(f"student_scale: {student_scale!r} is not one of {sorted(STUDENT_SCALES)}")
    params = recipe if student_scale == "recipe" else chapter1
    return bivariate.base_config(params), STUDENT_SCALES[student_scale]


def student_plan(
    base: RunConfig,
    sets: Sequence[SyntheticSet],
    widths: Sequence[int],
    n_natural_pairs: int,
    widen: Callable[[RunConfig, int], RunConfig] = width_config,
) -> list[Student]:
    """En->De students of every width (`widen(base, width)`) on natural data (capped at `n_natural_pairs`,
    the size of the synthetic sets) and on each synthetic set. Every student is evaluated on the natural
    test sets of `base`; a synthetic set's students also on that set's held-out part, and on no other set's,
    so that their configs do not depend on the other teachers and they can train before those finish."""
    directions = {"data.directions": [STUDENT_DIRECTION]}
    series = {"natural": natural_config(base, STUDENT_DIRECTION, n_natural_pairs)}
    for s in sets:
        series[s.name] = override(
            base,
            directions
            | {
                "data.train_files": {STUDENT_DIRECTION: str(s.train_path)},
                "data.test_files": {STUDENT_DIRECTION: {s.name: str(s.heldout_path)}},
                "data.max_train_pairs": None,
            },
        )
    return [Student(name, width, widen(cfg, width)) for name, cfg in series.items() for width in widths]


def natural_config(base: RunConfig, direction: str, n_pairs: int) -> RunConfig:
    """`base` trained on the first `n_pairs` natural training pairs of `direction`: the natural students'
    data, as many pairs as the smallest synthetic set."""
    return override(base, {"data.directions": [direction], "data.max_train_pairs": n_pairs})


DECODED_FAMILY_KEYS = ("direction", "width", "encoder", "decoder")


def decoded_families(
    base: RunConfig,
    spec: Mapping[str, Any],
    widths: Sequence[int],
    n_pairs: int,
    widen: Callable[[RunConfig, int], RunConfig],
) -> tuple[list[PlannedRun], list[Student]]:
    """Part C's models, the natural students' recipe (`base`, translating at every evaluation, on `n_pairs`
    natural pairs) in `spec["direction"]`: a depth-scaled family at width `spec["width"]` (`widen`), its
    encoder made `spec["encoder"]` layers deep and its decoder `spec["decoder"]`, the other side at `base`'s
    depth (`sweeps.depth_scaling_plan`, baseline included), and a width-scaled family of `base`'s depths at
    `widths`. Both share one tokenizer, so their per-token losses compare. A malformed `spec` raises
    ConfigurationError naming `decoded_family` and the key."""
    if not isinstance(spec, Mapping) or set(spec) != set(DECODED_FAMILY_KEYS):
        raise ConfigurationError(
            f"decoded_family: expected the keys {{{', '.join(DECODED_FAMILY_KEYS)}}}, got {spec!r}"
        )
    if spec["direction"] not in DIRECTIONS:
        raise ConfigurationError(
            f"decoded_family: direction {spec['direction']!r} is not one of {list(DIRECTIONS)}"
        )
    natural = natural_config(base, spec["direction"], n_pairs)
    try:
        depth = sweeps.depth_scaling_plan(
            widen(natural, spec["width"]),
            spec["direction"],
            (base.model.enc_layers, base.model.dec_layers),
            encoder_depths=spec["encoder"],
            decoder_depths=spec["decoder"],
        )
        width = [Student("natural", w, widen(natural, w)) for w in widths]
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"decoded_family: {err}") from err
    return depth, width
