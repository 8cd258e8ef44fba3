"""Chapter 4's study: multilingual scaling laws (Fernandes et al. 2023).

`chapter_plan` lays out the runs: for every cohort of two translation directions, every sampling weight p of
the first direction (the second gets 1 - p) and every model size (width and depth scaled together), plus a
few three-direction models (App. H); `seed_repeat_plan` the models trained again with other seeds, whose
spread is the noise the gates (`scale_gates`) judge size effects against, and `budget_check_plan` some of
them at a longer budget, for the gates' budget stability. `run_table` turns their summaries
into one row per run, trained direction and test set, with the direction's own weight, its final loss, its
chrF and the loss after the convergence correction of App. G. The other functions fit the paper's laws to
that table with `nmtscale.laws` and its `fitting` and `uncertainty`: the per-weight law (Eq. 6) with
perturbation errors, the joint law (Eq. 7), the effective parameter fraction (Eq. 10), the f_hat laws
(Eq. 11-13) with predictions of held-out weights and of the trade-off frontier, and the claims table.

The study is a package whose layers import only from the ones before them: `plan` (the cohorts),
`analysis` (the laws and tables), `gates` (whether size trends can show at the chapter's scale), `charts`,
`verdicts` (the claims and the numbers behind them).
Everything public is re-exported here.
"""

from nmtscale.studies.multilingual.analysis import (
    F_HAT_FORMS,
    GROUP,
    PAPER_NAMES,
    PARAMETER_NAMES,
    SMALL_WEIGHT,
    SMALL_WEIGHT_GAIN,
    JointFit,
    WeightedFit,
    chrf_loss_correlation,
    corrected_loss,
    effective_fractions,
    f_hat_curves,
    flatness,
    fraction_gaps,
    frontiers,
    held_out_errors,
    joint_curves,
    joint_fits,
    joint_vs_per_weight,
    learning_curves,
    max_pairwise_z,
    own_weight_inputs,
    per_weight_fits,
    rows_where,
    run_table,
    size_fractions,
    size_grid,
    three_pair_predictions,
    two_pair_rows,
    weighted_fits,
)
from nmtscale.studies.multilingual.charts import (
    chrf_loss_chart,
    coefficients_chart,
    f_hat_chart,
    fraction_chart,
    frontier_chart,
    joint_chart,
    learning_curve_chart,
    per_weight_chart,
)
from nmtscale.studies.multilingual.gates import family_table, scale_gates
from nmtscale.studies.multilingual.plan import (
    CohortRun,
    base_config,
    budget_check_plan,
    chapter_plan,
    cohort_name,
    cohort_weights,
    mixture_runs,
    seed_repeat_plan,
    sized,
)
from nmtscale.studies.multilingual.verdicts import (
    HELD_OUT_FORMS,
    ONE_PERCENT,
    PERTURBATION_NOISE,
    claims,
    scale,
    verdict_numbers,
    weight_claims,
)

__all__ = [
    "CohortRun",
    "F_HAT_FORMS",
    "GROUP",
    "HELD_OUT_FORMS",
    "JointFit",
    "ONE_PERCENT",
    "PAPER_NAMES",
    "PARAMETER_NAMES",
    "PERTURBATION_NOISE",
    "SMALL_WEIGHT",
    "SMALL_WEIGHT_GAIN",
    "WeightedFit",
    "base_config",
    "budget_check_plan",
    "chapter_plan",
    "cohort_weights",
    "chrf_loss_chart",
    "chrf_loss_correlation",
    "claims",
    "coefficients_chart",
    "cohort_name",
    "corrected_loss",
    "effective_fractions",
    "f_hat_chart",
    "f_hat_curves",
    "family_table",
    "flatness",
    "fraction_chart",
    "fraction_gaps",
    "frontier_chart",
    "frontiers",
    "held_out_errors",
    "joint_chart",
    "joint_curves",
    "joint_fits",
    "joint_vs_per_weight",
    "learning_curve_chart",
    "learning_curves",
    "max_pairwise_z",
    "mixture_runs",
    "seed_repeat_plan",
    "own_weight_inputs",
    "per_weight_chart",
    "per_weight_fits",
    "rows_where",
    "run_table",
    "scale_gates",
    "scale",
    "size_fractions",
    "size_grid",
    "sized",
    "three_pair_predictions",
    "two_pair_rows",
    "verdict_numbers",
    "weight_claims",
    "weighted_fits",
]
