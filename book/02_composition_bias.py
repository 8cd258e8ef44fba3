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
# ```{note}
# **Not yet run.** This page describes the experiment this chapter will hold; it shows no results yet. The
# cell below lists the parameters the chapter will run with.
# ```
#
# **The paper's claims this chapter will test**
#
# 1. Test-set composition: reducible loss falls quickly with size on source-original test sets and slowly on
#    target-original ones (paper: scaling the baseline by 2.5x brings source-original reducible loss under
#    0.05 nats, target-original needs 11x; Fig. 5, 7).
# 2. Training-set composition: models trained on back-translated data stop improving on natural test data
#    beyond a size the authors suspected tracks the back-translation model's capacity; forward-translated data
#    lets even small models reach the irreducible loss (Fig. 8, 9). The paper left the capacity hypothesis
#    untested; this chapter tests it with two teacher sizes.
# 3. Generation quality: BLEU follows the loss as a power law, $\mathrm{BLEU} = c L^{-p}$ (Eq. 5), on
#    target-original data, but stalls on source-original data; encoder-scaled models translate better than
#    decoder-scaled ones at equal loss (Fig. 10, 18-22).
#
# **Experiments.** English→German and German→English size series (reusing chapter 1's runs where the configs
# coincide), evaluated on the English-original `l10n` and `story` test sets and the German-original `ding`
# set; `l10n` vs `story` separates domain from originality. Teacher models trained here produce forward- and
# back-translated training sets from the corpus's natural monolingual text, and a size series is trained on
# each. Beam search (beam 4, length normalisation 1.0) on checkpoints across training; BLEU and chrF with
# sacrebleu signatures, and a multilingual sentence-embedding similarity as a second, learned view of quality
# (the paper's BLEURT cannot run offline).
#
# **Figures.** Reducible loss against size for source- and target-original test sets; loss of the back- and
# forward-translation series on natural and synthetic test data; BLEU against loss on log-log axes per test
# set and scaling approach, with the fitted Eq. 5.
#
# **Scale.** `cpu`: the model sizes of chapter 1 and two teacher sizes, each chapter at most about an hour on
# a 2-core CPU; `smoke` runs the pipeline on toy models; `gpu` widens the size range.

# %% tags=["parameters"]
# Filled from params/02_composition_bias/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
runs_dir = "runs"  # the run store shared by all chapters
