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
# **What the paper claims.**
#
# 1. A univariate law in total parameters, $L(N) = \alpha (\bar N / N)^{p} + L_\infty$ (Eq. 1), cannot fit
#    encoder- and decoder-scaled models together (Fig. 1).
# 2. The bivariate law $L(N_e, N_d) = \alpha (\bar N_e / N_e)^{p_e} (\bar N_d / N_d)^{p_d} + L_\infty$
#    (Eq. 2), fitted jointly on encoder-scaling and decoder-scaling runs, describes both (Fig. 2, 4, 12, 13)
#    ...
# 3. ... and predicts symmetrically scaled models it never saw (Fig. 3, 14).
# 4. The decoder exponent is larger than the encoder exponent, $p_d > p_e$, on every test set (Fig. 5).
# 5. The optimal allocation (Prop. 1) puts $N_e / N_d = p_e / p_d$; symmetric scaling ($N_d / N \approx 0.55$)
#    is nearly optimal, lopsided models pay a multiplicative penalty $\alpha^\# / \alpha^*$ (Fig. 6).
# 6. The seed-to-seed spread of the final loss is small (about 0.003 nats, Table 4).
#
# **What we find.** At the scale a 2-core CPU affords (width 16, 8k-33k non-embedding parameters, 0.8M
# training tokens per model, 24-103 tokens per parameter), the depth of the encoder or of the decoder hardly
# moves the final loss: apart from one outlying run, the fitted En->De models lie within 0.02-0.04 nats of
# each other, against a maximum difference of about 0.02 nats between three seeds of one model. On most
# test sets neither Eq. 1 nor Eq. 2 explains that variation (R² near or below zero; where it is higher, on
# De->En, a four-parameter law meets five models), and the exponents come out near zero with bootstrap
# intervals that include zero on most test sets. The paper's claims are **not reproduced** at this
# budget; the two "partly" verdicts in the table (pd > pe, symmetric scaling near-optimal) rest on
# exponents indistinguishable from zero on most test sets, where every allocation looks alike. Training the
# extreme En->De models four times longer changes the picture in the paper's direction: the deep-decoder
# model pulls ahead by 0.05-0.09 nats while the deep-encoder model stays level with the shallow ones, and
# Eq. 2 fitted to those five models gives a decoder exponent above zero and an encoder exponent that is not.
# That is five models and one seed: suggestive, not a reproduction. The verdict table at the end gives the
# numbers, all computed in this notebook from the runs below; the section before it discusses why.
#
# **The experiment.** English→German and German→English on the project corpus, depth scaling at a fixed
# width as in the paper: encoder scaling (decoder fixed), decoder scaling (encoder fixed) and symmetric
# scaling around a baseline model that defines $\bar N_e, \bar N_d$. Every model is evaluated on the three
# test sets of each direction: `l10n` (software strings) and `story` (Wesnoth campaign text), written in
# English, and `ding` (dictionary example sentences), written in German. The final loss is the median of
# the evaluations over the last stretch of training, as in the paper. A few models are repeated with other
# seeds to measure the noise. The paper trained 95 models of 40M-1.5B parameters on 2.2 billion sentence
# pairs; a 2-core CPU affords models four orders of magnitude smaller, trained on ~140k sentence pairs.

# %% tags=["parameters"]
# Filled from params/01_bivariate_laws/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # processes: runs trained side by side, and the fits' refits shared out
threads_per_run = 1  # torch threads per run
engine = "local"  # where missing runs train: "local" (processes here) or "ray" (the cluster at $RAY_ADDRESS)
runs_dir = "runs"  # the run store shared by all chapters (checkpoints, models: not committed)
results_dir = "results"  # the results store: one committed record per run, read instead of retraining
# The width every model shares (the paper: d_model 1024, d_ff 8192, 16 heads) and the vocabulary.
d_model = 16
d_ff = 64
n_heads = 2
vocab_size = 1000
max_train_pairs = None  # training pairs per direction; None: the whole training split
# Training: the same number of updates for every model, as in the paper.
steps = 800
max_tokens = 1024  # target tokens per update
warmup_steps = 40
# AdamW, not the paper's Adafactor: torch's Adafactor scales each step by the weights' RMS and, measured on
# a width-32 2L-2L model here, was still at 6.77 nats after 50 updates where AdamW was at 5.84.
optimizer = "adamw"
lr = 0.005
eval_points = 5  # evaluations per run, evenly spaced; the last ones give the final loss and the slope
final_fraction = 0.1  # the final loss is the median of the evaluations over this last share of training
# The scaling families: depths per direction; the baseline model is shared by all of them.
baseline_layers = [2, 2]
families = {
    "en-de": {"encoder": [1, 3, 4, 6], "decoder": [1, 3, 4, 6], "symmetric": [1, 3, 4]},
    "de-en": {"encoder": [1, 4], "decoder": [1, 4], "symmetric": [3]},
}
repeated = [[2, 2], [3, 3]]  # models trained with n_seeds seeds (En->De)
n_seeds = 3
n_bootstrap = 200  # bootstrap refits for the uncertainty of pe, pd
# A check on the reason: En->De encoder and decoder scaling at the extremes, trained for long_steps updates.
long_steps = 3200
long_models = {"encoder": [1, 6], "decoder": [1, 6]}

# %%
import time

import altair as alt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from nmtscale import charts, runs
from nmtscale.config import from_dict, override
from nmtscale.studies import bivariate, claims, sweeps

runs.use_stores(runs_dir, results_dir)  # recorded runs are read, missing ones trained and recorded

charts.enable_book_renderer()
pd.set_option("display.width", 200, "display.max_columns", 30, "display.precision", 4)
TEST_SETS = ["l10n", "story", "ding"]
started = time.perf_counter()

# %% [markdown]
# ## The runs
#
# One base configuration fixes width, data and training; `nmtscale.studies.sweeps.depth_scaling_plan` varies
# the depths. Models the chapters share (and every rerun of this notebook) come from the run store at once.

# %%
base = from_dict(
    {
        "model": {"d_model": d_model, "d_ff": d_ff, "n_heads": n_heads},
        "data": {"test_sets": TEST_SETS, "vocab_size": vocab_size, "max_train_pairs": max_train_pairs},
        "train": {
            "steps": steps,
            "max_tokens": max_tokens,
            "warmup_steps": warmup_steps,
            "optimizer": optimizer,
            "lr": lr,
            "checkpoint_interval": steps // eval_points,
            "seed": seed,
        },
        "eval": {"interval": steps // eval_points, "final_fraction": final_fraction},
    },
    source="params/01_bivariate_laws",
)
plan = [
    run
    for direction, depths in families.items()
    for run in sweeps.depth_scaling_plan(
        base,
        direction,
        baseline_layers,
        depths.get("encoder", []),
        depths.get("decoder", []),
        depths.get("symmetric", []),
        repeated=repeated if direction == "en-de" else [],
        n_seeds=n_seeds,
    )
]
print(f"{len(plan)} runs, {workers} at a time with {threads_per_run} thread(s) each")
summaries = runs.sweep([p.config for p in plan], workers, threads_per_run, engine=engine)
table = sweeps.run_table(plan, summaries, fraction=0.2)
failed = runs.failed_runs(table, "model")
print(f"failed runs, left out of every fit: {len(failed) or 'none'}")
if len(failed):
    display(failed)

# %% [markdown]
# ### Run summary
#
# One row per run: its depths, encoder and decoder parameters ($N_e$, $N_d$; embeddings and softmax are not
# counted, as in the paper), target tokens trained on, tokens per parameter, the slope of the test loss over
# the last 20% of training (nats per doubling of the training steps, mean over the test sets: about zero
# when the curve has flattened) and the final loss on each test set.

# %%
per_run = table.pivot_table(
    index=[
        "direction",
        "approach",
        "model",
        "seed",
        "Ne",
        "Nd",
        "N",
        "tokens",
        "tokens_per_param",
        "wall_time_s",
    ],
    columns="test_set",
    values="loss",
)[TEST_SETS]
slopes = table.groupby(["direction", "model", "seed"])["slope"].mean().rename("slope_last20")
run_summary = per_run.reset_index().merge(slopes.reset_index(), on=["direction", "model", "seed"])
run_summary = run_summary.sort_values(["direction", "approach", "N", "seed"]).reset_index(drop=True)
run_summary.round({"tokens_per_param": 1, "wall_time_s": 0, "slope_last20": 4})

# %%
short = run_summary[run_summary["tokens_per_param"] < 20]
steep = run_summary[run_summary["slope_last20"] < -0.02]
print(
    f"non-embedding parameters: {run_summary['N'].min():,}-{run_summary['N'].max():,}; "
    f"tokens per parameter: {run_summary['tokens_per_param'].min():.1f}-"
    f"{run_summary['tokens_per_param'].max():.1f}"
)
print(
    f"runs under 20 tokens per parameter: {len(short)} of {len(run_summary)}: {sorted(set(short['model']))}"
)
print(
    f"last-20% slope: {run_summary['slope_last20'].min():+.4f} to {run_summary['slope_last20'].max():+.4f} "
    f"nats per doubling; still falling faster than 0.02 nats per doubling: {len(steep)} runs "
    f"{sorted(set(steep['model']))}"
)
print(f"training wall time, all runs: {run_summary['wall_time_s'].sum() / 60:.1f} worker-minutes")

# %% [markdown]
# ### Learning curves
#
# Test loss during training of every first-seed model on `l10n`: the final loss is the median of the
# evaluations in the last 20% of training.

# %%
curves = pd.DataFrame(
    [
        {
            "direction": p.direction,
            "model": p.label,
            "approach": p.approach,
            "step": point["step"],
            "loss": point["test_loss"][f"{p.direction}/l10n"],
        }
        for p, s in zip(plan, summaries, strict=True)
        if p.seed == seed
        for point in s.curves
    ]
)
alt.hconcat(
    *[
        alt.Chart(curves[curves["direction"] == direction], title=f"{direction}, l10n")
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", scale=alt.Scale(type="log")),
            y=alt.Y("loss:Q", scale=alt.Scale(type="log", nice=False), title="test loss (nats)"),
            color=alt.Color("model:N"),
            tooltip=["model", "approach", "step", alt.Tooltip("loss:Q", format=".4f")],
        )
        .properties(width=300, height=260)
        for direction in families
    ]
)

# %% [markdown]
# ### Seed-to-seed spread (App. C, Table 4)
#
# The repeated models give the noise level every fit is judged against; the paper's bands are $\pm 2$
# standard deviations of this table.

# %%
spread = sweeps.seed_spread(table)
spread

# %% [markdown]
# ## Fits
#
# For every direction and test set, `nmtscale.studies.bivariate.analyse` fits, on the encoder- and
# decoder-scaling runs (baseline included, first seed only):
# Eq. 1 in $N = N_e + N_d$; Eq. 2 with the robust multi-start fit (Huber loss on log residuals from a grid of
# starts, Appendix A); and Eq. 2 with the paper's soft_l1 recipe (App. E). The symmetric models are held out.
# The exponents' uncertainty is a nonparametric bootstrap over the fitted runs.

# %%
analyses = bivariate.analyse_all(table, seed=seed, n_bootstrap=n_bootstrap, workers=workers)
quality = bivariate.fit_quality(analyses)
quality

# %% [markdown]
# ## Why a law in total parameters fails (Fig. 1)
#
# Eq. 1 (dashed) knows only $N$: it must put encoder- and decoder-scaled models of equal size at the same
# loss. Where the two families separate, no single curve in $N$ can follow both.


# %%
def chart_grid(make_chart):
    """One chart per direction (rows) and test set (columns)."""
    rows = []
    for direction in families:
        row = [make_chart(a) for a in analyses if a.direction == direction]
        rows.append(alt.hconcat(*row))
    return alt.vconcat(*rows)


def eq1_chart(a):
    curve = bivariate.fitted_curves(a)
    curve = curve[(curve["law"] == "Eq. 1") & (curve["approach"] == "encoder")].assign(approach="Eq. 1")
    points = a.fit_points
    return charts.scaling_chart(
        points,
        x="N",
        y="loss",
        series="approach",
        fit=curve,
        tooltip=["model"],
        title=f"{a.direction} {a.test_set}: Eq. 1, R² {a.univariate.diagnostics.r2:.1f}%",
        x_title="non-embedding parameters N",
        y_title="test loss (nats)",
        width=230,
        height=200,
    )


chart_grid(eq1_chart)

# %% [markdown]
# ## The bivariate law (Fig. 2, 12, 13)
#
# Eq. 2 fitted jointly to encoder and decoder scaling, drawn along each family (dashed), with a band of
# $\pm 2$ seed standard deviations of the test set (the paper's Fig. 13 convention). The symmetric models
# (green) were not used in the fit. Below, the same on log-log axes of the reducible loss $L - L_\infty$.


# %%
def seed_std(a):
    match = spread[(spread["direction"] == a.direction) & (spread["test_set"] == a.test_set)]
    fallback = spread[spread["test_set"] == a.test_set]["std"].mean() if len(spread) else 0.0
    return float(match["std"].iloc[0]) if len(match) else float(fallback)


def eq2_chart(a, reducible=False):
    curves = bivariate.fitted_curves(a)
    band = bivariate.reducible_band(a, curves, seed_std(a))
    points = a.points.assign(reducible=a.points["loss"] - a.bivariate.params["L_inf"])
    y = "reducible" if reducible else "loss"
    if reducible:
        points = points[points["reducible"] > 0]
        band = band.assign(lower=band["reducible_lower"].clip(lower=1e-4), upper=band["reducible_upper"])
    return charts.scaling_chart(
        points,
        x="N",
        y=y,
        series="approach",
        fit=curves[curves["law"] == "Eq. 2"],
        band=band,
        tooltip=["model", "Ne", "Nd"],
        title=f"{a.direction} {a.test_set}: Eq. 2, R² {a.bivariate.diagnostics.r2:.1f}%",
        x_title="non-embedding parameters N",
        y_title="reducible loss L - L∞ (nats)" if reducible else "test loss (nats)",
        width=230,
        height=200,
    )


chart_grid(eq2_chart)

# %%
chart_grid(lambda a: eq2_chart(a, reducible=True))

# %% [markdown]
# ## Out-of-sample: the symmetric models (Fig. 3, 14)
#
# Eq. 2, fitted on encoder and decoder scaling only, predicts the symmetric models' loss; points on the
# diagonal are perfect predictions.

# %%
held_out = pd.concat(
    [
        a.held_out_points.assign(
            predicted=a.bivariate.predict(a.held_out_points[["Ne", "Nd"]]),
            series=f"{a.direction} {a.test_set}",
        )
        for a in analyses
        if len(a.held_out_points)
    ],
    ignore_index=True,
)
diagonal_ends = [held_out[["loss", "predicted"]].min().min(), held_out[["loss", "predicted"]].max().max()]
diagonal = pd.DataFrame({"predicted": diagonal_ends, "loss": diagonal_ends, "series": "y = x"})
display(
    charts.scaling_chart(
        held_out,
        x="predicted",
        y="loss",
        series="series",
        fit=diagonal,
        tooltip=["model"],
        log_x=False,
        log_y=False,
        title="Symmetric models: measured vs predicted by Eq. 2",
        x_title="predicted loss (nats)",
        y_title="measured loss (nats)",
    )
)
quality[["direction", "test_set", "held_out_runs", "symmetric_r2", "symmetric_max_error"]]

# %% [markdown]
# ## Encoder and decoder exponents (Fig. 5)
#
# $p_e$ and $p_d$ per direction and test set with 95% bootstrap intervals; `share_pd_gt_pe` is the share of
# bootstrap refits in which the decoder exponent is the larger.

# %%
exps = bivariate.exponents(analyses)
exp_points = pd.concat(
    [
        exps.assign(exponent=name, value=exps[name], lower=exps[f"{name}_lower"], upper=exps[f"{name}_upper"])
        for name in ("pe", "pd")
    ],
    ignore_index=True,
)
exp_points["test set"] = exp_points["direction"] + " " + exp_points["test_set"]
base_chart = alt.Chart(exp_points).encode(
    y=alt.Y("test set:N", title=None),
    color=alt.Color("exponent:N", scale=charts.color_scale(["pe", "pd"])),
    yOffset="exponent:N",
)
display(
    alt.layer(
        base_chart.mark_rule(strokeWidth=2).encode(x=alt.X("lower:Q", title="exponent"), x2="upper:Q"),
        base_chart.mark_point(filled=True, size=70).encode(
            x="value:Q", tooltip=["test set", "exponent", alt.Tooltip("value:Q", format=".3f")]
        ),
    ).properties(title="Fitted exponents with 95% bootstrap intervals", width=480, height=260)
)
exps

# %% [markdown]
# ## Optimal allocation (Prop. 1, Fig. 6)
#
# For a budget of $B$ parameters, Eq. 2 is best with $N_d / N = p_d / (p_e + p_d)$. Scaling encoder and
# decoder in a fixed ratio keeps the exponent $p_e + p_d$ but multiplies the reducible loss by
# $\alpha^\# / \alpha^*$ (left); the additive penalty $L - L_\text{opt}$ at the baseline's size is on the
# right. The dotted line marks the $N_d / N$ of our symmetric models.

# %%
fractions = np.linspace(0.05, 0.95, 91)
alloc = bivariate.allocation(analyses, fractions)
symmetric_fraction = float((table["Nd"] / table["N"])[table["approach"] == "symmetric"].mean())


def allocation_panel(column, title):
    marker = alt.Chart(pd.DataFrame({"decoder_fraction": [symmetric_fraction]})).mark_rule(strokeDash=[2, 2])
    curves = charts.scaling_chart(
        alloc.assign(series=alloc["direction"] + " " + alloc["test_set"]),
        x="decoder_fraction",
        y=column,
        series="series",
        connect=True,
        log_x=False,
        log_y=column == "alpha_ratio",
        x_title="decoder fraction Nd / N",
        y_title=title,
        width=300,
        height=240,
    )
    return alt.layer(curves, marker.encode(x="decoder_fraction:Q"))


if alloc.empty:
    print("no fit has both exponents above zero: Eq. 2 then has no interior optimum to allocate towards")
else:
    display(
        alt.hconcat(
            allocation_panel("alpha_ratio", "α# / α*"),
            allocation_panel("penalty", "L - L_opt at the baseline size (nats)"),
        )
    )
    display(
        alloc.groupby(["direction", "test_set"])[["optimal_fraction"]]
        .first()
        .assign(symmetric_models=symmetric_fraction)
    )

# %% [markdown]
# ## Capacity or training? The extremes trained four times longer
#
# If every model is still limited by its training budget rather than by its size, losses bunch together
# whatever the depths, and the exponents come out small. To test that, the baseline and the shallowest and
# deepest encoder- and decoder-scaled En->De models are trained again for `long_steps` updates (same
# schedule, same data) and Eq. 2 is fitted to these five at both budgets. If training were the limit, the
# spread between the models and the exponents would grow with the budget.

# %%
long_base = override(
    base,
    {
        "train.steps": long_steps,
        "train.checkpoint_interval": long_steps // eval_points,
        "eval.interval": long_steps // eval_points,
    },
)
long_plan = sweeps.depth_scaling_plan(
    long_base, "en-de", baseline_layers, long_models["encoder"], long_models["decoder"]
)
long_summaries = runs.sweep([p.config for p in long_plan], workers, threads_per_run, engine=engine)
long_table = sweeps.run_table(long_plan, long_summaries, fraction=0.2)
short_table = table[
    (table["direction"] == "en-de") & (table["seed"] == seed) & table["model"].isin(long_table["model"])
]
budgets = pd.concat(
    [short_table.assign(steps_trained=steps), long_table.assign(steps_trained=long_steps)], ignore_index=True
)
budget_losses = budgets.pivot_table(index=["steps_trained", "model"], columns="test_set", values="loss")[
    TEST_SETS
]
display(budget_losses)
spread_by_budget = budgets.groupby(["steps_trained", "test_set"])["loss"].agg(lambda s: s.max() - s.min())
print("loss range across the five models (max - min, nats):")
display(spread_by_budget.unstack()[TEST_SETS])
print(
    f"last-20% slope of the long runs: {long_table['slope'].min():+.4f} to {long_table['slope'].max():+.4f} "
    f"nats per doubling; tokens per parameter {long_table['tokens_per_param'].min():.0f}-"
    f"{long_table['tokens_per_param'].max():.0f}"
)

# %%
budget_exponents = pd.concat(
    [
        bivariate.exponents(
            bivariate.analyse_all(frame, seed=seed, n_bootstrap=n_bootstrap, workers=workers)
        ).assign(steps_trained=n)
        for frame, n in ((short_table, steps), (long_table, long_steps))
    ],
    ignore_index=True,
)
budget_exponents[["steps_trained", "test_set", "pe", "pe_lower", "pe_upper", "pd", "pd_lower", "pd_upper"]]

# %%
long_curves = pd.DataFrame(
    [
        {"model": p.label, "step": point["step"], "loss": point["test_loss"]["en-de/l10n"]}
        for p, s in zip(long_plan, long_summaries, strict=True)
        for point in s.curves
    ]
)
alt.Chart(long_curves, title=f"en-de l10n, {long_steps} updates").mark_line(point=True).encode(
    x=alt.X("step:Q", scale=alt.Scale(type="log")),
    y=alt.Y("loss:Q", scale=alt.Scale(type="log", nice=False), title="test loss (nats)"),
    color=alt.Color("model:N"),
    tooltip=["model", "step", alt.Tooltip("loss:Q", format=".4f")],
).properties(width=420, height=260)

# %% [markdown]
# ## The paper's fitting recipe next to the robust fit (App. E)
#
# Ghorbani et al. fit Eq. 2 by `scipy.optimize.least_squares` with a soft-L1 loss, choosing `f_scale` from a
# grid; we choose it by cross-validation (Appendix A). `max_prediction_gap` is the largest difference between
# the two fits' predictions over the fitted runs, to compare with the seed noise.

# %%
recipe = bivariate.recipe_comparison(analyses)
recipe[["direction", "test_set", "fit", "alpha", "pe", "pd", "L_inf", "r2", "max_dev", "max_prediction_gap"]]

# %% [markdown]
# ## Why the paper's picture does not appear here
#
# - **The training budget.** Every learning curve is still falling at the end (the slope column of the run
#   table, 0.10-0.21 nats per doubling of training), although every model sees more than 20 tokens per
#   parameter. At 800 updates the models are limited by training, not by size, and the size effect is
#   smaller than the seed noise; a four-parameter law fitted to it fits noise (negative R², exponents pinned
#   at their bound of zero, and the soft_l1 recipe landing on different corners of parameter space with
#   nearly the same predictions). The longer runs show that the budget matters: with four times the
#   updates the spread across the five models grows three- to fourfold, almost all of it from the
#   deep-decoder model.
# - **Too little to scale.** In the paper each layer adds 20-25M parameters to a 1024-wide model and the
#   loss falls by several tenths of a nat across the depth range (Fig. 2). Here a layer adds 3.3k (encoder)
#   or 4.4k (decoder) parameters to a 16-wide residual stream, and every prediction passes through 16
#   numbers into a 1000-way softmax. Extra depth has little to work with; that the decoder, which carries
#   the target-side language model, is the first to profit fits the paper's $p_d > p_e$, but five models
#   cannot establish it.
# - **One run per model.** At 800 updates the En->De 2L-4L model ends 0.06 nats above the baseline, the
#   largest deviation in the family, while 2L-3L and 2L-6L do not; with a seed standard deviation of
#   about 0.01 nats and a maximum seed difference of about 0.02, single runs like this decide the fits.
#
# What would test the claims: wider models (the `gpu` scale uses width 128, 0.2M-4.5M parameters, 65M
# tokens each), trained until their curves flatten, with several seeds per size.

# %% [markdown]
# ## Claims, our measurements, verdicts
#
# Each verdict follows the rule in its row, applied to the numbers of this run, against the noise level the
# row names; the scorecard at the front of the book counts these rows.

# %%
claims.show(bivariate.claims(analyses, spread))


# %% [markdown]
# ### Our scale next to the paper's
#
# Context for every verdict above, not a claim: the scorecard does not count it.

# %%
claims.scale_table(bivariate.scale(table)).style.hide(axis="index")

# %% [markdown]
# ### The numbers behind the verdicts
#
# Generated from this run's tables, so the text cannot drift from the results.

# %%
fit_rows = table[table["approach"].isin(bivariate.FIT_APPROACHES) & (table["seed"] == seed)]
loss_range = fit_rows.groupby(["direction", "test_set"])["loss"].agg(lambda s: s.max() - s.min())
lines = [
    f"- {len(run_summary)} runs, {run_summary['N'].min():,}-{run_summary['N'].max():,} non-embedding "
    f"parameters, {run_summary['tokens_per_param'].min():.0f}-{run_summary['tokens_per_param'].max():.0f} "
    f"tokens per parameter; loss still falling {-run_summary['slope_last20'].max():.3f}-"
    f"{-run_summary['slope_last20'].min():.3f} nats per doubling of training at the end.",
    f"- Seed noise: {spread['std'].mean():.4f} nats standard deviation (paper: 0.003). The fitted runs' "
    f"final losses span {loss_range.min():.3f}-{loss_range.max():.3f} nats per test set.",
    f"- Eq. 1 R^2 {quality['eq1_r2'].min():.0f}-{quality['eq1_r2'].max():.0f}%, Eq. 2 R^2 "
    f"{quality['eq2_r2'].min():.0f}-{quality['eq2_r2'].max():.0f}%; held-out symmetric models: max error "
    f"{quality['symmetric_max_error'].max():.3f} nats.",
]
for row in exps.itertuples():
    lines.append(
        f"- {row.direction} {row.test_set}: pe = {row.pe:.3f} [{row.pe_lower:.3f}, {row.pe_upper:.3f}], "
        f"pd = {row.pd:.3f} [{row.pd_lower:.3f}, {row.pd_upper:.3f}], pd > pe in "
        f"{row.share_pd_gt_pe:.0%} of bootstrap refits."
    )
for n, group in spread_by_budget.groupby(level="steps_trained"):
    lines.append(
        f"- Five En->De models after {n} updates: loss range across them "
        + ", ".join(f"{t} {v:.3f}" for (_, t), v in group.items())
        + " nats."
    )
display(Markdown("\n".join(lines)))

# %% [markdown]
# ## Re-running this chapter
#
# `make chapter NAME=01_bivariate_laws SCALE=cpu` (or `python -m nmtscale book run --scale cpu --chapter
# 01_bivariate_laws`) re-executes it; finished runs come from `runs/` at once, and an interrupted sweep
# resumes.
# `SCALE=smoke` runs the same pipeline on toy settings in about two minutes; `SCALE=gpu` trains the wider,
# larger family of `params/01_bivariate_laws/gpu.yaml`.

# %%
print(f"this execution took {(time.perf_counter() - started) / 60:.1f} minutes (training included)")
