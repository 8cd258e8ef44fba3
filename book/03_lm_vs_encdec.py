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
# # 3. Language-model architectures vs the encoder-decoder
#
# *Zhang et al. (ICML 2022), Sec. 5-6.*
#
# ```{note}
# **Not yet run.** This page describes the experiment this chapter will hold; it shows no results yet. The
# cell below lists the parameters the chapter will run with.
# ```
#
# **The paper's claims this chapter will test**
#
# 1. Architectures scale differently; the gap to the encoder-decoder narrows as models grow (Fig. 2, 9).
# 2. PrefixLM is close to EncDec; CausalLM (causal source mask, source LM loss) is behind; adding the source
#    LM loss brings no gain; LM + Deep beats LM + Wide at equal parameters; TopOnly helps at small sizes.
# 3. Fitted exponents are stable across evaluation settings: source- vs target-original test sets, short,
#    medium and long sources (Fig. 3).
# 4. Multilingual models: EncDec leads on supervised directions, LMs reduce off-target translation and help
#    zero-shot directions (Table 3); transfer to a low-resource pair (Fig. 6).
#
# **Experiments.** EncDec scaled by depth, and PrefixLM, PrefixLM + TopOnly, CausalLM, CausalLM + TgtOnly with
# Deep and Wide variants matched in parameters to each EncDec size, on English→German and a second pair. The
# law $L(N) = \beta (N / N_0)^{-\alpha} + L_\infty$ (Eq. 7, $N_0$ from the 1-layer EncDec) fitted per
# architecture, with uncertainty. Training and inference FLOPs per token from the analytic counts, and
# measured tokens/s. Many-to-many models over English↔{German, French, Chinese} with target-language tags and
# temperature sampling; supervised and zero-shot BLEU, loss and off-target rate (offline language
# identification).
#
# **Figures.** Loss and BLEU against parameters and against layers per architecture with the fitted laws;
# exponents per evaluation setting; FLOPs per token; a table shaped like the paper's Table 3.
#
# **Scale.** `cpu`: small models trained for at most about an hour per chapter on a 2-core CPU; `smoke` runs
# the pipeline on toy models; `gpu` widens the size range.

# %% tags=["parameters"]
# Filled from params/03_lm_vs_encdec/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
runs_dir = "runs"  # the run store shared by all chapters
