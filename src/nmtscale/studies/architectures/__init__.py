"""Chapter 3's study: language-model architectures against the encoder-decoder (Zhang et al. 2022).

- `architecture_plan` lays out EncDec models scaled by depth (equal encoder and decoder layers) and, for each,
  the language-model counterparts matched to it: "LM + Deep" (twice the layers, `counting.lm_deep_config`)
  and "LM + Wide" (same depth, wider feed-forward, `counting.lm_wide_config`).
- `run_table` turns their run summaries into one row per run and test set, with the model's size, layers,
  analytic FLOPs per target token for training and inference (`nmtscale.engine.flops`) and measured tokens/s.
- `evaluate_stored` re-evaluates a finished run's final model on test sets split by source length, and
  translates a prefix of each test set for BLEU, chrF and the off-target rate; results are kept beside the
  run's record in the results store, so a re-executed chapter does not decode again.
- `fit_power_laws` fits Zhang Eq. 7, L(N) = beta (N / N0)^-alpha + L_inf, per architecture and evaluation
  setting, with perturbation intervals (`nmtscale.laws.uncertainty`).
- `translation_table` and `table3` summarise multilingual runs as the paper's Table 3: supervised En->XX and
  XX->En BLEU, zero-shot BLEU, loss and translation-language accuracy, as deltas against EncDec.

The study is a package whose layers import only from the ones before them: `plan` (the models and
runs), `evaluation` (decoding and length-bucket losses of stored models), `analysis`, `gates` (whether size
trends can show at the chapter's scale), `charts`, `verdicts` (the claims and the numbers behind them).
Everything public is re-exported here.
"""

from nmtscale.studies.architectures.analysis import (
    ENCDEC,
    RUN_COLUMNS,
    SUPERVISED_BLEU_TARGET,
    LawFit,
    bleu_by_budget,
    budget_for_bleu,
    compute_table,
    direction_kind,
    encdec_gaps,
    fit_power_laws,
    flops_table,
    gaps_to_encdec,
    inference_flops_per_target_token,
    law_curves,
    law_parameters,
    mean_loss,
    piece_shares,
    run_table,
    table3,
    translation_table,
    vocabulary_check,
    wide_minus_deep,
)
from nmtscale.studies.architectures.charts import (
    PANEL_WIDTH,
    exponent_chart,
    flops_charts,
    loss_chart,
    metric_charts,
    zero_shot_chart,
)
from nmtscale.studies.architectures.evaluation import (
    LENGTH_BUCKETS,
    EvalRequest,
    evaluate_runs,
    evaluate_stored,
    evaluation_settings,
    length_bucket,
    length_edges,
    stored_table,
)
from nmtscale.studies.architectures.gates import scale_gates, seed_noise, size_effects
from nmtscale.studies.architectures.plan import (
    ARCH_NAMES,
    PARAMETER_NAMES,
    SCALINGS,
    PlannedModel,
    architecture_plan,
    bilingual_plans,
    budget_check_plan,
    chapter_base,
    matched_model,
    multilingual_base,
    multilingual_budget_plan,
    multilingual_plans,
    non_embedding_params,
    pair_test_sets,
    parse_variant,
)
from nmtscale.studies.architectures.verdicts import (
    CAUSAL_DEEP,
    EXPONENT_STABILITY,
    PREFIX_DEEP,
    PREFIX_WIDE,
    TGTONLY_DEEP,
    TOPONLY_DEEP,
    TRANSLATING_BLEU,
    Noise,
    claims,
    difference_noise,
    glue_name,
    headline_numbers,
    verdict_numbers,
)

__all__ = [
    "ARCH_NAMES",
    "CAUSAL_DEEP",
    "ENCDEC",
    "EXPONENT_STABILITY",
    "EvalRequest",
    "LENGTH_BUCKETS",
    "LawFit",
    "Noise",
    "PANEL_WIDTH",
    "PARAMETER_NAMES",
    "PREFIX_DEEP",
    "PREFIX_WIDE",
    "PlannedModel",
    "RUN_COLUMNS",
    "SCALINGS",
    "SUPERVISED_BLEU_TARGET",
    "TGTONLY_DEEP",
    "TOPONLY_DEEP",
    "TRANSLATING_BLEU",
    "architecture_plan",
    "bilingual_plans",
    "bleu_by_budget",
    "budget_for_bleu",
    "budget_check_plan",
    "chapter_base",
    "claims",
    "compute_table",
    "difference_noise",
    "direction_kind",
    "encdec_gaps",
    "evaluate_runs",
    "evaluate_stored",
    "evaluation_settings",
    "exponent_chart",
    "fit_power_laws",
    "flops_charts",
    "flops_table",
    "gaps_to_encdec",
    "glue_name",
    "headline_numbers",
    "inference_flops_per_target_token",
    "law_curves",
    "law_parameters",
    "length_bucket",
    "length_edges",
    "loss_chart",
    "matched_model",
    "mean_loss",
    "metric_charts",
    "multilingual_base",
    "multilingual_budget_plan",
    "multilingual_plans",
    "non_embedding_params",
    "pair_test_sets",
    "parse_variant",
    "piece_shares",
    "run_table",
    "scale_gates",
    "seed_noise",
    "size_effects",
    "stored_table",
    "table3",
    "translation_table",
    "verdict_numbers",
    "vocabulary_check",
    "wide_minus_deep",
    "zero_shot_chart",
]
