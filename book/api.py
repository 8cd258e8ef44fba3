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
# # Appendix B: the `nmtscale` API
#
# The functions a reader can call from their own notebook, each with a short example that this page runs.

# %% tags=["parameters"]
# Filled from params/api/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
runs_dir = "runs"  # the run store shared by all chapters
