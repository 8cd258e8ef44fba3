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
# # 1. Bivariate scaling laws for the encoder and the decoder
#
# *Ghorbani et al. (ICLR 2022), Sec. 2 and App. A-E.*
#
# ```{note}
# **Not yet run.** This page describes the experiment this chapter will hold; it shows no results yet. The
# cell below lists the parameters the chapter will run with.
# ```
#
# **The paper's claims this chapter will test**
#
# 1. A univariate law in total parameters, $L(N) = \alpha (\bar N / N)^{p} + L_\infty$ (Eq. 1), cannot fit
#    encoder- and decoder-scaled models together (Fig. 1).
# 2. The bivariate law $L(N_e, N_d) = \alpha (\bar N_e / N_e)^{p_e} (\bar N_d / N_d)^{p_d} + L_\infty$ (Eq.
#    2), fitted jointly on encoder-scaling and decoder-scaling runs, describes both (Fig. 2, 4, 12, 13, 15)
#    ...
# 3. ... and predicts symmetrically scaled models it never saw (Fig. 3, 14).
# 4. The decoder exponent is larger than the encoder exponent, $p_d > p_e$, on every test set (Fig. 5).
# 5. The optimal allocation (Prop. 1) puts $N_e / N_d = p_e / p_d$; symmetric scaling ($N_d / N \approx 0.55$)
#    is nearly optimal, lopsided models pay a multiplicative penalty $\alpha^\# / \alpha^*$ (Fig. 6).
# 6. Seed-to-seed spread of the final loss is small (about 0.003 nats, Table 4).
#
# **Experiments.** English→German and German→English on the project corpus, depth scaling at a fixed width as
# in the paper: encoder scaling (decoder fixed), decoder scaling (encoder fixed) and symmetric scaling around
# a baseline model that defines $\bar N_e, \bar N_d$. Loss on every test set (`l10n`, `story`, `ding`), the
# final loss being the median over the last stretch of training; a subset of sizes repeated with three or more
# seeds. Fits with the paper's recipe (soft-L1 loss over an `f_scale` grid, App. E) next to the robust
# multi-start fit of `nmtscale.fitting` (Appendix A).
#
# **Figures.** Loss against total parameters with the failing univariate fit; the bivariate fit per test set
# and direction, also as log-log reducible loss with seed-based bands; predicted vs measured loss of the
# held-out symmetric models; $p_e, p_d$ with uncertainty per test set; $\alpha^\# / \alpha^*$ and the additive
# penalty across $N_d / N$.
#
# **Scale.** `cpu`: small models (about 0.1M to a few million non-embedding parameters, vocabularies of a few
# thousand pieces), each seeing many tokens per parameter (aim: at least 20) so its loss curve flattens; the
# chapter will report tokens per parameter and the slope over the last 20% of training for every run. `smoke`
# runs the same pipeline on toy models; `gpu` widens the size range.

# %% tags=["parameters"]
# Filled from params/01_bivariate_laws/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
runs_dir = "runs"  # the run store shared by all chapters
