"""Chapter 2's study: composition bias of test and training sets, and translation quality vs loss.

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

The study is a package whose layers import only from the ones before them: `plan` (teachers and
students), `synthetic` (the teachers' translations), `analysis`, `charts`, `verdicts` (the claims and the
numbers behind them). Everything public is re-exported here.
"""

from nmtscale.studies.composition.analysis import (
    DOMAINS,
    above_chance,
    best_width,
    bleu_fits,
    budget_trend,
    budget_trend_numbers,
    candidate_numbers,
    candidate_scores,
    characters_per_token,
    composition_table,
    copy_baselines,
    decoded_models,
    embedding_similarity,
    equal_loss_comparison,
    final_quality,
    final_translations,
    longer_trained_runs,
    multiplier,
    originality_decomposition,
    quality_points,
    reducible_curves,
    run_overview,
    sentence_encoder,
    size_slopes,
    size_trend,
    student_points,
    student_table,
    teacher_gates,
    teacher_table,
    test_references,
    translation_scores,
    unrelated,
)
from nmtscale.studies.composition.charts import (
    METRIC_TITLES,
    PANEL_WIDTH,
    drawable,
    metric_chart,
    reducible_chart,
    student_chart,
    student_quality_chart,
)
from nmtscale.studies.composition.plan import (
    CANDIDATE_KEYS,
    KINDS,
    MONO_SEED,
    STUDENT_DIRECTION,
    Student,
    SyntheticSet,
    candidate_teachers,
    decoded_plan,
    student_plan,
    teacher_configs,
    width_config,
)
from nmtscale.studies.composition.synthetic import (
    mono_sample,
    synthetic_overview,
    synthetic_pair,
    synthetic_set,
    synthetic_sets,
)
from nmtscale.studies.composition.verdicts import (
    CHANCE_REASON,
    SLOPE_NOISE,
    claims,
    decoding_loss_change,
    part_a_numbers,
    part_a_quoted,
    part_b_numbers,
    part_c_numbers,
    rank_agreement,
    significant,
    value_range,
    value_spans,
)

__all__ = [
    "above_chance",
    "CANDIDATE_KEYS",
    "CHANCE_REASON",
    "DOMAINS",
    "KINDS",
    "METRIC_TITLES",
    "MONO_SEED",
    "PANEL_WIDTH",
    "SLOPE_NOISE",
    "STUDENT_DIRECTION",
    "Student",
    "SyntheticSet",
    "best_width",
    "bleu_fits",
    "budget_trend",
    "budget_trend_numbers",
    "candidate_numbers",
    "candidate_scores",
    "candidate_teachers",
    "characters_per_token",
    "claims",
    "composition_table",
    "copy_baselines",
    "decoded_models",
    "decoded_plan",
    "decoding_loss_change",
    "drawable",
    "embedding_similarity",
    "equal_loss_comparison",
    "final_quality",
    "final_translations",
    "longer_trained_runs",
    "metric_chart",
    "mono_sample",
    "multiplier",
    "originality_decomposition",
    "part_a_numbers",
    "part_a_quoted",
    "part_b_numbers",
    "part_c_numbers",
    "quality_points",
    "rank_agreement",
    "reducible_chart",
    "reducible_curves",
    "run_overview",
    "sentence_encoder",
    "significant",
    "size_slopes",
    "size_trend",
    "student_chart",
    "student_plan",
    "student_points",
    "student_quality_chart",
    "student_table",
    "synthetic_overview",
    "synthetic_pair",
    "synthetic_set",
    "synthetic_sets",
    "teacher_configs",
    "teacher_gates",
    "teacher_table",
    "test_references",
    "translation_scores",
    "unrelated",
    "value_range",
    "value_spans",
    "width_config",
]
