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
# *Fernandes et al. (ICML 2023).*
#
# ```{note}
# **Not yet run.** This page describes the experiment this chapter will hold; it shows no results yet. The
# cell below lists the parameters the chapter will run with.
# ```
#
# **The paper's claims this chapter will test**
#
# 1. For each language-pair weight $p$, the loss follows $L_i(N; p) = \beta_p N^{-\alpha} + L_\infty$ (Eq. 6)
#    with $\alpha$ and $L_\infty$ nearly constant in $p$: only $\beta$ moves (Fig. 2-4).
# 2. A joint law over $N$ and $p$ (Eq. 7) with far fewer coefficients fits as well, and defines each pair's
#    effective parameter fraction $f_i(p)$ (Eq. 10, Fig. 6).
# 3. Language similarity (French vs Chinese next to German) matters little; direction does: many-to-English
#    models give each pair more effective parameters than English-to-many ones.
# 4. The fitted $\hat f$ (Eq. 12 and the linear Eq. 13) predicts the loss trade-off frontier of weights held
#    out from the fit, at any size (Fig. 7, 18), and the chrF frontier follows (Fig. 8); two-pair fits predict
#    three-pair models (App. H).
#
# **Experiments.** Cohorts English→{German, Chinese}, English→{German, French} and {German, Chinese}→English,
# with the two pairs' training sentences drawn from disjoint English sentences of the 4-way parallel corpus
# (shared sources would fake synergy). Weights $p$ from {0, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1} (a stated
# subset at `cpu` scale), at least four model sizes scaled in width and depth together, target-language tags,
# and the convergence correction of App. G for runs that see little of one pair.
#
# **Figures.** Per-weight fits and their coefficients against $p$ with perturbation uncertainty; the log-log
# parallel-lines view; $f_i(p)$ per cohort, in-domain (`l10n`) vs out-of-domain (`story`); predicted vs
# measured frontiers on held-out weights; chrF against loss.
#
# **Scale.** `cpu`: a subset of weights and at least four small model sizes, at most about an hour on a 2-core
# CPU; `smoke` runs the pipeline on toy models; `gpu` covers all weights and larger sizes.

# %% tags=["parameters"]
# Filled from params/04_multilingual_laws/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
runs_dir = "runs"  # the run store shared by all chapters
