# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Multilingual scaling laws and effective parameters
#
# *Fernandes et al. (ICML 2023), Sec. 3 and App. A-H.*
#
# **What the paper claims.**
#
# 1. For each language-pair weight $p$, the loss follows $L_i(N; p) = \beta_{p,i} N^{-\alpha_{p,i}} +
#    L_\infty^{(p,i)}$ (Eq. 6), and $\alpha$ and $L_\infty$ hardly move with $p$ (all within two standard
#    deviations of each other) while $\beta$ does (Fig. 2, 4).
# 2. So a joint law with one $\beta$ per weight and a shared $\alpha_i$, $L_\infty^{(i)}$ (Eq. 7) fits nearly
#    as well with far fewer coefficients (Fig. 3, 5), and defines each pair's effective parameter fraction
#    $f_i(p) = (\beta_{1,i} / \beta_{p,i})^{1/\alpha_i}$ (Eq. 10), independent of the model size.
# 3. $f_i(p)$ is about the same on in-domain and out-of-domain test sets and for similar (De, Fr) and distant
#    (De, Zh) pairs, close to $f = p$ for English→XX; into English (XX→En) it lies well above $p$: positive
#    synergy (Fig. 6).
# 4. Fitting $\hat f(p) = p + c_1 p^{c_2} (1-p)^{c_3}$ (Eq. 12) or the linear $c_1 (p - 1) + 1$ (Eq. 13)
#    inside $L_i = \beta_{1,i} (\hat f_i(p) N)^{-\alpha_i} + L_\infty^{(i)}$ (Eq. 11) predicts the loss
#    of unseen weights and the whole trade-off frontier at any size (Fig. 7, 18).
# 5. chrF moves almost linearly with the loss, and the same laws give the chrF frontier (Fig. 8).
# 6. Fits on two-pair models predict three-pair models (App. H, Fig. 20).
#
# **What we find.** At chapter 1's regime ({glue:text}`n_min:,.0f`-{glue:text}`n_max:,.0f` non-embedding
# parameters at one layer, {glue:text}`steps:,.0f` updates of ~1k target tokens with a cosine decay to zero,
# {glue:text}`runs:.0f` runs: so far {glue:text}`cohorts_text`) model size sets the loss: the smallest and the
# largest model of a family differ by {glue:text}`size_effect_min:.1f`-{glue:text}`size_effect_max:.1f` seed
# standard deviations (the gates; the smallest is En→Zh at weight 0.9, below), test losses span
# {glue:text}`loss_min:.2f`-{glue:text}`loss_max:.2f` nats on a 4,000-piece vocabulary, and the per-weight
# laws (Eq. 6) fit each En→{De, Zh} direction's losses over all its weights and sizes at R²
# {glue:text}`first_eq6_r2_min:.1f`-{glue:text}`first_eq6_r2_max:.1f`%. The paper's picture still does not
# appear. With four sizes per weight the per-weight laws leave $\alpha$ or $L_\infty$ free at some weight in
# every direction and test set, so whether they stay flat is not testable yet; the joint law fits worse than
# the per-weight ones (R² {glue:text}`first_eq7_r2_min:.1f`-{glue:text}`first_eq7_r2_max:.1f`%), and the
# effective fraction of English→XX directions lies far *below* $p$ ($f(0.5)$ =
# {glue:text}`f_out_min:.2f`-{glue:text}`f_out_max:.2f`): at this budget a direction that gets half of the
# updates behaves like a much smaller single-direction model that saw the same sentences, as a model short of
# training tokens rather than of parameters does, and measured size by size that fraction shrinks as the model
# grows. Into English the paper's picture does appear: a direction at $p = 0.5$ beside the other language's
# direction into English is worth $f(0.5)$ = {glue:text}`f_into_min:.2f`-{glue:text}`f_into_max:.2f` of a
# single-direction model, well above $p$ and above the same language out of English (in how many comparisons
# beyond the perturbation noise, the verdict table says), as one would expect of two directions that share
# their target language, whose every update trains the English decoder (we have not measured that cause
# apart). Eq. 11's worst held-out error is {glue:text}`held_out_rel_min:.1%`-{glue:text}`held_out_rel_max:.1%`
# of the loss, chrF follows the loss (r between {glue:text}`chrf_r_min:.2f` and {glue:text}`chrf_r_max:.2f`),
# and App. G's correction changes a loss by up to {glue:text}`correction_max:.2f` nats and $f$ by up to
# {glue:text}`correction_f_max:.2f`. At twice the updates (the budget check) the size effects of the $p = 0.5$
# mixture move by {glue:text}`budget_change_min:+.0%` to {glue:text}`budget_change_max:+.0%`, against the
# gates' 15% (the gates show which families pass): the size effects grow as the budget doubles, the larger
# models gaining more from the added updates, most in En→{De, Fr}, while every loss still falls. The
# two-direction fits predict the three-direction models (App. H) within the paper's 1% in
# {glue:text}`three_within_smallest:.0f` of {glue:text}`three_predictions_smallest:.0f` cases at the smallest
# width they trained at and in {glue:text}`three_within_largest:.0f` of
# {glue:text}`three_predictions_largest:.0f` at the largest, where {glue:text}`three_too_low_largest:.0f` of
# them promise too low a loss (worst {glue:text}`three_worst_largest:.1%`): the same side as the held-out
# two-direction weights, whose fits sit where $\hat f$ cannot go lower (below). The verdict table and the
# generated summary at the end give every number.
#
# **The experiment.** Three cohorts of two directions, English→{German, Chinese}, English→{German, French} and
# {German, Chinese}→English (the `cohorts` parameter says which this execution trains: at the cpu scale
# En→{De, Zh} first, the others as their runs land). The corpus is 4-way parallel, so the two directions of a
# cohort would train on translations of the same English sentences, a shared signal that would pass for
# transfer; every English sentence therefore goes to one direction only (`data.disjoint_sources`). The first
# direction is sampled with probability $p$, the second with $1 - p$ (implicit scalarization); English→XX
# sources carry a target-language tag. At $p = 0$ and $p = 1$ the model trains one direction alone, on the
# sentences its direction gets in the cohort's mixtures (`single_direction_share`), so that $f_i(p)$ compares
# models that saw the same text (on all of the direction's pairs it would see more sentences than any mixture
# gives it; the table after the run summary measures what the share costs). All runs share one SentencePiece
# vocabulary trained on all four languages, so losses in nats per token compare across cohorts, and a
# three-direction model (App. H) is measured in the same units as the two-direction fits that predict it.
# Model sizes grow in width alone, one encoder and one decoder layer at each width: the paper's App. A grows
# width and depth together, but at these sizes a depth step moved the loss far less than a width step, and a
# ladder that mixed the two bent the law it was meant to test (the calibration in
# `params/04_multilingual_laws/cpu.yaml`).

# %% tags=["parameters"]
# Filled from params/04_multilingual_laws/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # processes: runs trained side by side, and the fits' refits shared out
threads_per_run = 1  # torch threads per run
engine = "local"  # where missing runs train: "local" (processes here) or "ray" (the cluster at $RAY_ADDRESS)
runs_dir = "runs"  # the run store shared by all chapters (checkpoints, models: not committed)
results_dir = "results"  # the results store: one committed record per run, read instead of retraining
# Cohorts: the first direction gets weight p, the second 1 - p; p = 0 and 1 are single-direction models.
cohorts = [{"directions": ["en-de", "en-zh"], "weights": [0, 0.1, 0.5, 0.9, 1]}]
# Single-direction models on their direction's share of the cohort's English sentences (data.disjoint_with),
# as a mixture's direction trains, or on all of the direction's pairs.
single_direction_share = True
# Directions whose single-direction models also train on all of their pairs, at every size, so that the
# chapter measures what the share costs them ([]: none; needs single_direction_share).
all_pairs_singles = []
# Directions whose single-direction models also train with the target-language tag a mixture's directions
# carry, at every size, so that the chapter measures what the tag costs them ([]: none).
tagged_singles = []
fit_weights = [0.1, 0.9, 1]  # own weights the f_hat laws (Eq. 11-13) are fitted on; the others are held out
sizes = [[64, 1], [96, 1], [144, 1], [208, 1]]  # [d_model, layers], layers per side (encoder, decoder)
head_dim = 16  # width of an attention head; d_model / head_dim heads
ff_ratio = 4  # feed-forward width in multiples of d_model
# App. H: three directions at once, predicted from the two-direction fits.
three_pair_directions = ["en-de", "en-fr", "en-zh"]
three_pair_weights = []  # [] trains none
three_pair_sizes = [[64, 1], [144, 1]]
# Seed noise: {weights, sizes, seeds}: every cohort's models at these first-direction weights and sizes
# trained again with these seeds (an optional `cohorts`, a list of cohorts' directions, limits it to those),
# or a list of such entries; {} trains none, and the gates' seed noise is unknown.
seed_repeats = {}
# Budget check: {weights, sizes, steps}: every cohort's models at these first-direction weights and sizes
# trained for `steps` updates (`cohorts` as above); {} trains none, and budget stability is not measured.
budget_check = {}
# Data: one vocabulary over all four languages; training pairs capped per direction (None: all) before the
# disjoint split.
tokenizer_directions = ["en-de", "en-fr", "en-zh"]
vocab_size = 4000
character_coverage = 0.9995
max_train_pairs = None
max_test_pairs = 500  # a fixed random subset of each test set, so that evaluating stays cheap
test_sets = ["l10n", "story"]
# Training, the same for every model: chapter 1's recipe at this scale (params/01_bivariate_laws: steps,
# tokens per update, warm-up, schedule, optimizer, peak rate, evaluations per run (the learning curve App. G's
# correction extrapolates), final fraction and `numerics`, how each step runs), these keys changed.
chapter1_overrides = {}
dropout = 0.1
decode = "greedy"  # the paper decodes with beam search; greedy keeps the cpu scale affordable
max_decode_sentences = 100
# Analysis.
correct_below = 0.1  # App. G: own weights at or below this are extrapolated ...
correction_factor = 2.5  # ... to this many times the steps, from the learning curve after ...
correction_start = 0.25  # ... this share of training
n_perturbations = 50  # refits on 1%-perturbed losses for the coefficients' uncertainty (footnote 5)

# %%
import time

import altair as alt
import numpy as np
from IPython.display import Markdown, display
from myst_nb import glue

from nmtscale import book, charts, runs
from nmtscale.studies import claims, multilingual

runs.use_stores(runs_dir, results_dir)  # recorded runs are read, missing ones trained and recorded

charts.enable_book_renderer()
book.show_tables_for_readers()
started = time.perf_counter()
chapter1 = book.load_parameters("01_bivariate_laws", scale, chapter1_overrides)
params = {name: value for name, value in globals().items() if name in multilingual.PARAMETER_NAMES}

# %%
book.parameters_table("04_multilingual_laws", globals())

# %% [markdown]
# ## The runs
#
# `nmtscale.studies.multilingual.chapter_plan` lays out every model; `runs.sweep` trains the missing ones (a
# single direction model that two cohorts share is trained once) and reads the others from the run store.

# %%
plan = multilingual.chapter_plan(params)
print(f"{len(plan)} planned models, {len({runs.config_hash(p.config) for p in plan})} distinct runs")
summaries = runs.sweep([p.config for p in plan], workers, threads_per_run, engine=engine)
table = multilingual.run_table(plan, summaries, correct_below, correction_factor, correction_start)
failed = runs.failed_runs(table, "cohort")
print(f"failed runs, left out of every fit: {len(failed) or 'none'}")
if len(failed):
    display(failed)
n0 = float(np.exp(np.log(table["N"].unique()).mean()))  # normalises N in every law: beta of order one
pairs = multilingual.two_pair_rows(table)

# %% [markdown]
# ### Run summary
#
# One row per model: its cohort, the first direction's weight $p$, size, non-embedding parameters $N$ (the
# paper's "corrected" count), the target tokens each trained direction saw, and training time.

# %%
multilingual.run_summary(table)

# %%
trained_runs = table.drop_duplicates("run_id")
print(
    f"{len(trained_runs)} runs, N = {trained_runs['N'].min():,}-{trained_runs['N'].max():,} non-embedding "
    f"parameters, {trained_runs['wall_time_s'].sum() / 60:.1f} worker-minutes of training"
)

# %% [markdown]
# ### What the share and the tag cost a single-direction model
#
# A mixture's direction differs from a single-direction model in more than its weight, and two of the
# differences are measured by training single-direction models again. **The share**: a mixture's direction
# trains on its share of the corpus's English sentences, and so, with `single_direction_share`, does the
# single-direction model it is measured against; `all_pairs_plan` trains the models of `all_pairs_singles`
# again on all of their direction's pairs, and `share_costs` gives the `cost`, the loss on the share minus the
# loss on all pairs (the target tokens each saw are about the same: both take the same updates, and on the
# share the same sentences come round more often). Measured against the models of all pairs, $f_i(p)$ would
# charge the mixture for sentences it was never given. **The tag**: a mixture's sources begin with a tag
# naming the language to produce (`<2zh>`), which a single-direction model, with one language to produce,
# trains without; `tagged_singles_plan` trains the models of `tagged_singles` again with the tag
# (`data.target_tags`) on the same sentences, and `tag_costs` gives the loss with the tag minus the loss
# without. Near zero, the tag cannot be what sets a mixture's direction apart from its single-direction model.

# %%
twin_costs = {}
for name, twin_plan, costs_of, untrained in [
    (
        "share",
        multilingual.all_pairs_plan,
        multilingual.share_costs,
        "all_pairs_singles is empty: none on all pairs",
    ),
    (
        "tag",
        multilingual.tagged_singles_plan,
        multilingual.tag_costs,
        "tagged_singles is empty: none with the tag",
    ),
]:
    twins = twin_plan(params)
    twin_summaries = runs.sweep([p.config for p in twins], workers, threads_per_run, engine=engine)
    twin_costs[name] = costs_of(table, multilingual.run_table(twins, twin_summaries))
    if len(twin_costs[name]):
        display(twin_costs[name].round(3))
    else:
        print(untrained)

# %% [markdown]
# Beside the tag's cost, how far each tagged direction trails its single-direction model where it learns
# slowly, at own weight 0.9 in a mixture (`mixture_gaps`; the limits below): of that gap, the tag can
# explain at most its cost.

# %%
slow_weight = 0.9
slow_gaps = multilingual.mixture_gaps(table, slow_weight)
slow_gaps = slow_gaps[slow_gaps["direction"].isin(tagged_singles)].reset_index(drop=True)
if len(slow_gaps):
    display(slow_gaps.round(3))
else:
    print("tagged_singles is empty: no gap set beside the tag")

# %% [markdown]
# ### Is this a scale where size trends show? The gates
#
# Chapter 1's gates, per family: one direction at one own weight beside one other direction (or trained
# alone), over the model sizes (`multilingual.scale_gates`). The `size effect` is the final loss of a family's
# smallest model minus that of its largest in seed standard deviations, the seed noise that of the models
# `seed_repeats` trains again with other seeds; where none are trained, the noise is unknown and every gate
# that divides by it fails, its detail giving the effect in nats. `N span` and `sizes per family` ask for at
# least 8x in N and four sizes, `repeated sizes` for three sizes trained with three seeds each, and the last
# gate whether any run's held-out loss has begun to rise above its lowest. `budget_check` trains some models
# again for longer, and `budget stability` asks that their size effects move by at most 15%; where it trains
# none, that is not measured. Every law below is fitted on the runs these gates judge.

# %%
repeat_plan = multilingual.seed_repeat_plan(params)
repeat_summaries = runs.sweep([p.config for p in repeat_plan], workers, threads_per_run, engine=engine)
noise_table = multilingual.run_table(repeat_plan, repeat_summaries)
long_plan = multilingual.budget_check_plan(params)
long_summaries = runs.sweep([p.config for p in long_plan], workers, threads_per_run, engine=engine)
long_table = multilingual.run_table(long_plan, long_summaries)
gates = multilingual.scale_gates(table, noise_table, long_table)
claims.show_gates(gates)

# %% [markdown]
# How far the seed alone moves each repeated model's final loss (`seed_spreads`: the lowest and highest loss
# over its seeds, the chapter's own included, and their difference). The gates above pool these models' spread
# per direction and test set, so a weight at which a direction trains less stably raises that direction's
# noise for all of its families.

# %%
spreads = multilingual.seed_spreads(noise_table)
if len(spreads):
    display(spreads.round(3))
else:
    print("seed_repeats is empty: no model trained with another seed")

# %% [markdown]
# ### Learning curves and the convergence correction (App. G)
#
# A direction sampled with weight 0.1 sees a tenth of the updates' tokens, and in the paper its loss is still
# falling at the end. The paper extrapolates such runs (weight $\le 0.05$, their largest models) with a power
# law in the step fitted to the learning curve, to 2.5 times the steps. We do the same for every run whose
# own weight is at most `correct_below`, fitted after the first `correction_start` of training. Under this
# chapter's schedule, a cosine decay to zero, every curve flattens at its end because the rate does, so the
# power law extrapolates a curve whose shape the schedule set. Below: the curves of the first cohort's models
# on `l10n`, and the correction's effect on each corrected final loss.

# %%
curves = multilingual.learning_curves(plan, summaries)
first_cohort = pairs["cohort"].iloc[0]
multilingual.learning_curve_chart(curves, first_cohort, "l10n")

# %%
corrections = multilingual.corrections(pairs)
print(
    f"{len(corrections)} corrected losses; change {corrections['change'].min():+.3f} to "
    f"{corrections['change'].max():+.3f} nats (mean {corrections['change'].mean():+.3f})"
)
corrections

# %% [markdown]
# Does the extrapolation hold? The models `budget_check` trains for longer answer it by measurement: each
# one's learning curve at the chapter's budget, extrapolated by the same power law to the longer budget,
# beside the loss the longer run reached (`multilingual.correction_check`; `error` > 0 where the
# extrapolation promises less than the training gave).

# %%
correction_checks = multilingual.correction_check(table, curves, long_table, correction_start)
if len(correction_checks):
    print(
        f"{len(correction_checks)} extrapolations to {correction_checks['long_steps'].max():,} updates: "
        f"error {correction_checks['error'].min():+.3f} to {correction_checks['error'].max():+.3f} nats"
    )
    display(correction_checks.round(3))
else:
    print("no budget check at this scale: the extrapolation is not checked against training")

# %% [markdown]
# Everything below uses the corrected losses (`loss_corrected`), as the paper does; the section on $f_i(p)$
# shows what the correction changes.

# %% [markdown]
# ## Per-weight laws (Eq. 6, Fig. 2 and 4)
#
# For every direction and own weight, $L(N) = \beta N^{-\alpha} + L_\infty$ fitted to the model sizes (with
# $N$ divided by the geometric mean size, so that $\beta$ is the loss above $L_\infty$ at that size). The
# uncertainty is the paper's: refits on losses perturbed by Gaussian noise of 1% of each loss (footnote 5),
# each refit restarted from a grid of starts.

# %%
y = "loss_corrected"
coefficients, per_weight_curves = multilingual.per_weight_fits(pairs, y, n0, n_perturbations, seed, workers)
points = pairs.assign(y=pairs[y])
alt.vconcat(
    *[multilingual.per_weight_chart(points, per_weight_curves, c, "l10n") for c in pairs["cohort"].unique()]
)

# %% [markdown]
# The coefficients against the weight (Fig. 4), with $\pm 1$ perturbation standard deviation, on both test
# sets. The paper finds $\alpha$ and $L_\infty$ flat and $\beta$ falling as the weight grows.

# %%
multilingual.coefficients_chart(coefficients)

# %%
flat = multilingual.flatness(coefficients)
flat.pivot_table(
    index=multilingual.GROUP, columns="parameter", values=["max_z", "ratio", "undetermined"]
).round(2)

# %% [markdown]
# `max_z` is the largest difference of a coefficient between two weights in units of their combined
# perturbation standard deviation (the paper: $\le 2$ for $\alpha$ and $L_\infty$); `ratio` is its largest
# over its smallest estimate; `undetermined` counts the weights whose points leave the coefficient free (its
# profile is flat against the 1% perturbation noise: held over more than half its span, the law still fits
# within that noise). A coefficient free at some weight is "within two standard deviations" of anything, so
# the flatness claim below is judged only on groups where the data determine $\alpha$ and $L_\infty$ at every
# weight.

# %% [markdown]
# ## The joint law (Eq. 7, Fig. 3 and 5)
#
# One $\beta$ per weight, $\alpha$ and $L_\infty$ shared by all weights of a direction and test set. On
# log-log axes of the reducible loss $L - L_\infty$ its lines are parallel by construction (Fig. 3): the
# question is whether the measured points follow them.

# %%
joints = multilingual.joint_fits(pairs, y, n0, n_perturbations, seed, workers)
joint_lines = multilingual.joint_curves(joints)
comparison = multilingual.joint_vs_per_weight(joints, n0)
comparison.round(3)

# %%
alt.vconcat(
    *[
        multilingual.joint_chart(joints, joint_lines, c, "l10n", reducible=True)
        for c in pairs["cohort"].unique()
    ]
)

# %%
alt.vconcat(
    *[
        multilingual.joint_chart(joints, joint_lines, c, "story", reducible=False)
        for c in pairs["cohort"].unique()
    ]
)

# %% [markdown]
# ## Effective parameter fraction $f_i(p)$ (Eq. 10, Fig. 6)
#
# $f_i(p) = (\beta_{1,i} / \beta_{p,i})^{1/\alpha_i}$ from each joint fit: the share of the model a single-
# direction model would need to match direction $i$ at weight $p$. $f = p$ (dotted) is a model that splits its
# parameters by the sampling weights; above it the directions help each other. Error bars: 95% intervals of
# the perturbed refits.

# %%
fractions = multilingual.effective_fractions(joints)
multilingual.fraction_panels(fractions, first_cohort)

# %% [markdown]
# The comparisons behind the verdicts: the gap in $f$ and its z-score against the combined perturbation
# errors, (a) `l10n` vs `story` for every direction, (b) En→De next to Chinese vs next to French, (c) each
# language into English vs out of English at the same weight.

# %%
domain, similarity, direction_gaps = multilingual.fraction_comparisons(fractions)
display(domain.round(3), similarity.round(3), direction_gaps.round(3))

# %% [markdown]
# Eq. 10 reads one $f_i(p)$ for all sizes off the joint law, which assumes the answer to the paper's claim
# that the fraction does not depend on the model size. Measured instead at each size: the size $N_{eff}$ at
# which the single-direction law (the weight-1 fit of Eq. 6) reaches each mixture model's loss, over that
# model's $N$, with the spread of a 1% perturbation of the loss (groups whose single-direction fit leaves
# $\alpha$ or $L_\infty$ free are left out).

# %%
per_size = multilingual.size_fractions(coefficients, pairs, y, n0)
by_size = per_size.pivot_table(index=[*multilingual.GROUP, "weight"], columns="size", values="f")
by_size[per_size.sort_values("N")["size"].unique()].round(3)  # smallest model first

# %% [markdown]
# What the convergence correction does to $f$: the same joint fits on the uncorrected final losses.

# %%
correction_effects = multilingual.correction_effect(pairs, fractions, n0)
correction_effects.round(3)

# %% [markdown]
# Every fit of this chapter weighs its log residuals quadratically within the 1% loss noise of footnote 5 and
# linearly beyond (a Huber loss bending at `multilingual.HUBER_DELTA`). The project's default bend, Besiroglu
# et al.'s $10^{-3}$, puts every residual here in the linear zone: the fit is then one of least absolute
# deviations, and a $\beta$ fitted to four sizes is free between the median pair of its residuals, so the
# optimiser's path, down to the CPU's rounding, picks $f$. Measured: the largest change of any $f$ when every
# loss changes by $-10^{-13}$, $10^{-13}$ or $3 \times 10^{-13}$ of itself, at each bend.

# %%
sensitivity = multilingual.rounding_sensitivity(pairs, y, n0)
glue("rounding_f_change_default", sensitivity["max_f_change"].iloc[0], display=False)
glue("rounding_f_change", sensitivity["max_f_change"].iloc[-1], display=False)
sensitivity

# %% [markdown]
# ## Predicting unseen weights: $\hat f$ and the trade-off frontier (Eq. 11-13, Fig. 7 and 18)
#
# Eq. 11 with $\hat f$ of Eq. 12 (three coefficients) or the linear Eq. 13 (one), fitted per direction and
# test set on the models whose own weight is in `fit_weights`; the other weights are held out and predicted.
# Two fitted directions of a cohort give the predicted frontier (dashed) at each model size; the measured
# points at the cohort's mixture weights should lie on it, held-out ones included.

# %%
weighted = multilingual.weighted_fits(pairs, fit_weights, y, n0)
held_out = multilingual.held_out_errors(weighted)
print(f"fitted on own weights {fit_weights}; held out: {sorted(set(pairs['weight']) - set(fit_weights))}")
held_out.round(4)

# %% [markdown]
# Eq. 12 with $c_1 = 0$ and Eq. 13 with $c_1 = 1$ are both $\hat f(p) = p$, the floor that $c_1$'s bounds
# set (no negative transfer). A fit at that floor says the direction at weight $p$ is worth $p$
# single-direction models; where the measured $f(p)$ lies below $p$ it cannot follow, and predicts the
# held-out weight's loss too low.

# %%
floors = multilingual.floor_summary(held_out)
for name, value in floors.items():
    glue(f"held_out_{name}", value, display=False)
print(
    f"{floors['floor_fits']} of {floors['fits']} fits at the floor f_hat = p "
    f"({floors['floor_too_low']} of them predicting their held-out weights too low on average), "
    "worst held-out error "
    f"{floors['floor_rel_max']:.1%}; the others' worst {floors['free_rel_max']:.1%}"
)

# %%
predicted_frontier, measured_frontier = multilingual.frontiers(weighted, pairs, y)
frontier = multilingual.frontier_grid(
    predicted_frontier, measured_frontier, pairs, fit_weights, multilingual.F_HAT_FORMS
)
frontier if frontier is not None else print("no cohort has enough weights for f_hat")

# %% [markdown]
# The fitted $\hat f$ next to the $f_i(p)$ of the joint fits (Fig. 7 left):

# %%
f_hat_curves = multilingual.f_hat_curves(weighted)
if len(f_hat_curves):
    display(multilingual.f_hat_chart(f_hat_curves, fractions, "l10n"))

# %% [markdown]
# ## Translation quality: chrF (Fig. 8)
#
# Every model translated the first `max_decode_sentences` sentences of each test subset at the end of
# training, greedily (the paper decodes with beam search; greedy keeps the cpu scale affordable). Left: chrF
# against the loss, one point per model and direction. Then the chrF frontier: Eq. 11 in its quality form
# ($Q_\infty - \beta_1 (\hat f N)^{-\alpha}$) fitted to chrF on the same weights as the loss.

# %%
correlation = multilingual.chrf_loss_correlation(pairs)
display(multilingual.chrf_loss_chart(pairs))
correlation.round(3)

# %%
chrf_rows = pairs[pairs["chrf"] > 0]
chrf_fits = multilingual.weighted_fits(
    chrf_rows, fit_weights, "chrf", n0, forms=["eq12"], higher_is_better=True
)
chrf_errors = multilingual.held_out_errors(chrf_fits)
chrf_predicted, chrf_measured = multilingual.frontiers(chrf_fits, chrf_rows, "chrf")
chrf_errors.round(3)

# %%
chrf_frontier = (
    multilingual.frontier_grid(chrf_predicted, chrf_measured, pairs, fit_weights, ["eq12"], "chrF")
    if len(chrf_predicted)
    else None
)
chrf_frontier if chrf_frontier is not None else print(
    "too few chrF scores above zero to fit the chrF frontier"
)

# %% [markdown]
# ## Three directions (App. H, Fig. 20)
#
# Models trained on En→{De, Fr, Zh} with weights `three_pair_weights`. Each direction's loss is predicted by
# Eq. 11 with $\hat f$ of Eq. 12, from every two-direction cohort that trained that direction (fitted on
# `fit_weights`): $\hat f$ depends only on the direction's own weight, so a two-direction fit says what a
# third direction in the mix should do, if the paper's invariance holds.

# %%
three_pairs = multilingual.three_pair_predictions(table, weighted)
three_pairs.round(4) if len(three_pairs) else print("no three-direction models")

# %% [markdown]
# Per model size: how many predictions fall within the paper's 1%, how many predict too low a loss, the mean
# error (predicted minus measured) and the worst relative error.

# %%
three_pair_sizes_summary = multilingual.three_pair_summary(three_pairs)
by_size = three_pair_sizes_summary.to_dict("records")  # Python numbers, which glue:text can format
for end, row in {"smallest": 0, "largest": -1}.items():
    if by_size:  # the opening summary quotes the smallest and the largest size
        for column in ("predictions", "within", "too_low", "worst"):
            glue(f"three_{column}_{end}", by_size[row][column], display=False)
three_pair_sizes_summary.round(4)

# %%
if len(three_pairs):
    display(multilingual.three_pair_chart(three_pairs))

# %% [markdown]
# ## Why the paper's picture does not appear here
#
# - **The budget still shapes the loss.** The paper trains every model to near convergence (500K-1M steps of
#   500K tokens); here every model gets chapter 1's budget, {glue:text}`steps:,.0f` updates of about 1k target
#   tokens decaying to zero. That is enough for width to set the loss of a model trained on one direction, not
#   for convergence: a direction sampled with weight $p$ sees about $p$ times the tokens of the
#   single-direction model, and its loss tracks those tokens as well as the parameters it could use, which
#   pushes $f_i(p)$ of English→XX directions below $p$ and lets $\beta$, $\alpha$ and $L_\infty$ trade off
#   across weights. The budget check measures it: trained for twice the updates, the $p = 0.5$ mixture's size
#   effects between widths 64 and 208 move by {glue:text}`budget_change_min:+.0%` to
#   {glue:text}`budget_change_max:+.0%` (the gates' budget stability), so the laws fitted here describe this
#   budget as much as the models' capacity. The same runs check App. G's extrapolation: from the learning
#   curve at {glue:text}`steps:,.0f` updates it misses the loss the longer run reached by
#   {glue:text}`check_error_min:+.2f` to {glue:text}`check_error_max:+.2f` nats (positive: it promised a
#   higher loss): under a decay to zero the curve's tail understates what more updates give.
# - **En→Zh at weight 0.9 learns slowly.** In the $p = 0.1$ mixture (En→De 0.1, En→Zh 0.9) at widths 144 and
#   208 the En→Zh loss falls more slowly than in the single-direction model from the first few hundred updates
#   on, and at width 208 it ends above the loss of the $p = 0.5$ mixture (the per-weight laws above): more of
#   a direction's updates give a worse model there, and its size effect is the one below the gates' 10 seed
#   standard deviations. The target-language tag, the one input in which its En→Zh examples differ from the
#   single-direction model's, is not the cause: trained again with the tag on the same sentences, the
#   single-direction model's loss moves by {glue:text}`tag_cost_min:+.3f` to
#   {glue:text}`tag_cost_max:+.3f` nats (the section on the share and the tag), while En→Zh at weight 0.9
#   trails it by {glue:text}`slow_gap_min:.2f` to {glue:text}`slow_gap_max:.2f` nats, more the wider the
#   model. Nor is it the run's luck: the $p = 0.1$ mixture trained again with another seed at widths 144 and
#   208 leaves En→Zh's better seed still {glue:text}`slow_best_gap_min:.2f` to
#   {glue:text}`slow_best_gap_max:.2f` nats behind the single-direction model (the seed spreads below the
#   gates): what sets it apart is the mixture itself, neither the tag nor the seed. Its two seeds differ by up
#   to {glue:text}`slow_spread_max:.3f` nats at weight 0.9, against at most
#   {glue:text}`repeat_spread_max:.3f` between the seeds of any other repeated model, and the gates' En→Zh
#   noise takes that spread in.
# - **$\hat f$ cannot go below $p$.** Eq. 12 and 13 bound $\hat f(p) \ge p$ (no negative transfer, as in
#   every fit of the paper), but at this budget the measured $f(p)$ of English→XX directions lies below $p$.
#   {glue:text}`held_out_floor_fits:.0f` of the {glue:text}`held_out_fits:.0f` weighted fits end at that
#   floor, $\hat f(p) = p$ ({glue:text}`held_out_floor_too_low:.0f` of them predicting their held-out weight
#   too low on average), and their worst held-out error is {glue:text}`held_out_floor_rel_max:.1%`, against
#   {glue:text}`held_out_free_rel_max:.1%` for the fits off the floor (which lie just above it, in the table
#   of the fits: no test of a freer $\hat f$). Eq. 11 misses held-out weights here not for want of points
#   but because its $\hat f$ has no shape for a direction worth less than its weight.
# - **Fits that the last digits decided.** Executed from the same records with the same code, this chapter
#   once gave different numbers on an Intel Xeon and on an AMD EPYC, in the effective fractions and in the
#   verdict on the into-English claim (reproduced on one, partly reproduced on the other). The machines
#   were not the cause; the fits' loss was. At the project's default Huber bend every residual lay in the
#   loss's linear zone, where a $\beta$ fitted to four sizes is free between the median pair of its residuals,
#   and changing every loss by a few $10^{-13}$ of itself moves an $f$ by up to
#   {glue:text}`rounding_f_change_default:.3f`; at this chapter's bend, the 1% noise of footnote 5, by
#   {glue:text}`rounding_f_change:.1e` (the section on $f$ above). The coefficients of Eq. 12 stay free (no
#   refit on perturbed losses determines them), so the claims read from them remain not testable. The chrF
#   frontier of Eq. 11 was another such fit until its ceiling also started at the scores' scale: for chrF of a
#   few points (En→Zh on `story`) every start from the fixed ceilings of 60 and 100 ended tens of points off
#   on the AMD machine.
# - **What is trained, and what is not.** This execution has the En→{De, Zh} cohort at five weights and four
#   widths, with two more seeds at $p = 0.5$ and the three smaller widths, one more at $p = 0.1$ and the two
#   larger widths, and its budget check; the En→{De, Fr} cohort at the same five weights and four widths, with
#   the same seed repeats at $p = 0.5$ and budget check; and the {De, Zh}→En cohort at three weights (0, 0.5,
#   1) and four widths, with the same seed repeats at $p = 0.5$ and budget check, and En→Zh's single-direction
#   models again with the target tag (`tagged_singles`); and the three-direction models at three mixtures
#   (`three_pair_weights`) and widths 64 and 144. Not trained: {De, Zh}→En at more weights (with two weights
#   per direction it gives $f(0.5)$ but no held-out weight for Eq. 11) and any width above 208. The
#   single-direction models train without a language tag (one target language; the tagged twins above measure
#   what that changes), the mixtures with one; all share one vocabulary; translations are greedy, of 100
#   sentences.
#
# What would test the claims: the `gpu` scale (all nine weights, five sizes up to width 256, 20k updates of 8k
# tokens), with models trained until their learning curves flatten.

# %% [markdown]
# ## Claims, our measurements, verdicts
#
# Each verdict follows the rule in its row, applied to the numbers of this run, against the noise level the
# row names; the scorecard at the front of the book counts these rows.

# %%
chapter_claims = multilingual.claims(
    flat, comparison, fractions, domain, similarity, direction_gaps, held_out, correlation, three_pairs
) + multilingual.weight_claims(coefficients, pairs, y, per_size, weighted, held_out, chrf_errors)
claims.show(chapter_claims)

# %% [markdown]
# ### The paper's numbers beside ours
#
# The numbers the paper prints for its claims, as transcribed in its inventory (`data/claims/`, with where it
# prints them), beside this chapter's measurement of each. The values inside the papers' figures (fitted
# exponents, curves) are not in the text we cite, so they are not transcribed.

# %%
claims.paper_beside_book("04_multilingual_laws", chapter_claims).style.hide(axis="index")


# %% [markdown]
# ### Our scale next to the paper's
#
# Context for every verdict above, not a claim: the scorecard does not count it.

# %%
claims.scale_table(multilingual.scale(table)).style.hide(axis="index")

# %% [markdown]
# ### The numbers behind the verdicts
#
# Generated from this run's tables, so the text cannot drift from the results.

# %%
display(
    Markdown(
        multilingual.verdict_numbers(
            table,
            chapter1["steps"],
            chapter1["max_tokens"],
            coefficients,
            comparison,
            corrections,
            fractions,
            held_out,
            three_pairs,
        )
    )
)
headline = multilingual.headline_numbers(
    table,
    flat,
    comparison,
    fractions,
    held_out,
    correlation,
    three_pairs,
    corrections,
    correction_effects,
    gates,
    correction_checks,
    tag_costs=twin_costs["tag"],
    slow_gaps=slow_gaps,
    spreads=spreads,
    slow_weight=slow_weight,
)
for name, value in {**headline, "steps": chapter1["steps"]}.items():
    glue(name, value, display=False)  # the opening summary quotes these
glue("cohorts_text", multilingual.cohorts_text(cohorts), display=False)

# %% [markdown]
# ## Re-running this chapter
#
# `make chapter NAME=04_multilingual_laws SCALE=cpu` re-executes it; finished runs come from `runs/` at
# once. `SCALE=smoke` runs the same pipeline on toy settings; `SCALE=gpu` covers all nine weights of the
# paper for the three cohorts, five larger sizes and three three-direction mixtures
# (`params/04_multilingual_laws/gpu.yaml`).

# %%
print(f"this execution took {(time.perf_counter() - started) / 60:.1f} minutes (training included)")
