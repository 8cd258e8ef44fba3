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
# # Scorecard: every claim, every verdict
#
# The papers' main claims are inventoried from the papers themselves (`data/claims/<paper>.yaml`: where each
# claim is made, its words, the paper's own criterion) and each names the chapter row that tests it or the
# reason it is not tested here. Each chapter ends with a table of verdict rows: what the paper reports, what
# this book measured, the verdict, the rule that turned the measurement into the verdict and the noise level
# it was judged against. This page counts the inventory against those tables, read back from the executed
# chapters (it is executed after them; nothing here is typed by hand). One vocabulary serves the whole book:
#
# - **reproduced**: the rule holds in every case it names;
# - **partly reproduced**: it holds in some cases and fails in none beyond the noise, or holds without the
#   support the rule asks for;
# - **not reproduced**: the measurement contradicts the claim;
# - **not testable at this scale**: the measurement cannot decide, with the reason (the effect lies within
#   seed noise, the models do not translate yet, a comparison was not run);
# - **not tested here**: a claim of the paper that no chapter tests yet, with the reason.
#
# A claim the chapter judges once per language pair gets one verdict: the pairs' shared verdict, else "partly
# reproduced" when some pair reproduces it, else "not reproduced" when some pair contradicts it.
#
# What a chapter says about its own scale next to the paper's (model sizes, data, convergence) is context,
# shown in the chapter and not counted here.

# %% tags=["parameters"]
scale = "cpu"
seed = 0
workers = 2
threads_per_run = 1
engine = "local"
runs_dir = "runs"
results_dir = "results"

# %%
import html

import pandas as pd
from IPython.display import display

from nmtscale import book, charts
from nmtscale.studies import claims

charts.enable_book_renderer()
found = book.chapter_claims(scale)
inventories = claims.load_inventories(claims.INVENTORIES)
titles = {chapter: book.chapter_title(chapter) for chapter in found}
card = claims.scorecard({titles[chapter]: rows for chapter, rows in found.items()})
counts = claims.counts(card)
missing = [book.chapter_title(c) for c in book.CLAIM_CHAPTERS if c not in found]
print(
    f"scale {scale}: {len(card)} claims in {len(found)} chapters"
    + (f"; not executed: {missing}" if missing else "")
)

# %%
book.parameters_table("scorecard", globals())

# %% [markdown]
# ## The papers' claims
#
# Every inventoried claim once, whatever number of rows its chapter shows for it.

# %%
paper_card = claims.paper_scorecard(inventories, found)
paper_card["paper"] = paper_card["paper"].str.split(",").str[0]  # "Ghorbani et al. 2022"
paper_counts = claims.paper_counts(paper_card)
display(paper_counts)
charts.verdict_bars(paper_counts, [*claims.VERDICTS, claims.NOT_TESTED_HERE])

# %%
paper_card.drop(columns="per_pair").style.hide(axis="index")

# %% [markdown]
# Our own checks: the verdict rows no paper claim names (the fitting code checked against published results in
# Appendix A), never added to the papers' counts.

# %%
own_checks = claims.unclaimed_rows(inventories, found)
own_checks.assign(chapter=own_checks["chapter"].map(titles)).style.hide(axis="index")

# %% [markdown]
# ## Verdict rows per chapter

# %%
display(counts)
charts.verdict_bars(counts, claims.VERDICTS)

# %% [markdown]
# ## Counts per scale
#
# The book's pages show the `cpu` scale; the other scales count wherever their chapters were executed on this
# machine (`python -m nmtscale book run --scale gpu`). The `smoke` scale checks the pipeline, its numbers mean
# nothing, and it is counted only on its own scorecard.

# %%
per_scale = {
    other: claims.scorecard(book.chapter_claims(other))["verdict"].value_counts()
    for other in book.SCALES
    if other != "smoke" or scale == "smoke"
}
counts_per_scale = pd.DataFrame({s: c for s, c in per_scale.items() if c.sum()}).reindex(claims.VERDICTS)
counts_per_scale.fillna(0).astype(int).T.assign(claims=lambda frame: frame.sum(axis=1))

# %% [markdown]
# ## Every claim
#
# Each claim with what its chapter measured and the verdict; the claim links to the table of its chapter
# that also gives the rule and the noise it was judged against.

# %%
anchor = "claims-our-measurements-verdicts"
linked = card.assign(
    claim=[
        f'<a href="{chapter}.html#{anchor}">{html.escape(claim)}</a>'
        for chapter, rows in found.items()
        for claim in (row.claim for row in rows)
    ]
)
linked.style.hide(axis="index")
