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
# # Appendix A: how the laws are fitted
#
# Every law in this book is fitted by `nmtscale.fitting`. This appendix checks that machinery where the right
# answer is known: on published data whose fit has been reproduced independently, and on synthetic data drawn
# from a law with known coefficients.

# %% tags=["parameters"]
# Filled from params/appendix_fitting/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
runs_dir = "runs"  # the run store shared by all chapters
reference_csv = "../shared/reference/chinchilla_fig4_extracted.csv"  # relative to the repository root

# %%
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import display

from nmtscale import charts

charts.enable_book_renderer()

# %% [markdown]
# ## Published data: Chinchilla's Figure 4

# %%
reference = Path(reference_csv)
if reference.is_file():
    chinchilla = pd.read_csv(reference).rename(columns={"Model Size": "params", "Training FLOP": "flops"})[
        ["params", "flops", "loss"]
    ]
    chinchilla["tokens"] = chinchilla["flops"] / (6 * chinchilla["params"])
    size_edges = [0, 1e8, 3e8, 1e9, 3e9, np.inf]
    size_names = ["< 100M", "100M-300M", "300M-1B", "1B-3B", ">= 3B"]
    chinchilla["size"] = pd.cut(chinchilla["params"], size_edges, labels=size_names).astype(str)
    print(f"{len(chinchilla)} runs read from {reference}")
else:
    chinchilla = None
    print(f"{reference} is missing: the Chinchilla part of this appendix is skipped.")

# %%
if chinchilla is not None:
    display(
        charts.scaling_chart(
            chinchilla,
            x="flops",
            y="loss",
            series="size",
            tooltip=["params", "tokens"],
            title="Chinchilla runs (Hoffmann et al. 2022, Fig. 4; data extracted by Epoch AI)",
            x_title="training FLOP",
            y_title="loss",
        )
    )
