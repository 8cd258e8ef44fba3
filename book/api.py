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
# The functions a reader can call from their own notebook, module by module, each with a short example that
# runs when this page is built (its outputs below are real). Every module's docstrings say more; `python -m
# nmtscale --help` lists the command-line tools.
#
# The package has four layers, each importing only from the ones before it:
#
# - `nmtscale.engine` (`tokenizer`, `batching`, `data`, `model`, `loss`, `search`, `metrics`, `langid`,
#   `flops`, `counting`): how to encode, batch, model, score and decode translation, knowing nothing of the
#   rest;
# - `nmtscale` itself (`config`, `record`, `predict`, `train`, `runs`, `pool`, `results`, `corpus`): run
#   configs, run ids, run-directory files and records, inference with a trained model (its loss and
#   translations, as the trainer and the studies both use them), the trainer, the run store and sweeps, the
#   data;
# - `nmtscale.laws` (the laws at its top; `fitting`, `lbfgs`, `uncertainty`, `reference`): scaling laws and
#   how to fit them, with intervals;
# - `nmtscale.studies` (`bivariate`, `composition`, `architectures`, `multilingual`, `sweeps`, `claims`): one
#   package per chapter, in layers that import only the ones before them (`plan`, `analysis`, `charts`,
#   `verdicts`; composition adds `synthetic`, architectures `evaluation`), each re-exporting its public
#   names, so `bivariate.analyse` is the name to call; and the one Claim type.
#
# `charts` and `book` draw and build the book on top of all four.

# %% tags=["parameters"]
# Filled from params/api/<scale>.yaml by `python -m nmtscale book run --scale <scale>`.
scale = "cpu"  # smoke | cpu | gpu
seed = 0  # base seed of every run in this chapter
workers = 2  # runs trained side by side
threads_per_run = 1  # torch threads per run
engine = "local"  # where missing runs train: "local" (processes here) or "ray" (the cluster at $RAY_ADDRESS)
runs_dir = "runs"  # the run store shared by all chapters (checkpoints, models: not committed)
results_dir = "results"  # the results store: one committed record per run, read instead of retraining

# %%
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

torch.manual_seed(seed)
scratch = Path(tempfile.mkdtemp(prefix="nmtscale-api-"))  # examples that write files write here

# %%
from nmtscale import book

book.parameters_table("api", globals())

# %% [markdown]
# ## The corpus: `nmtscale.corpus`
#
# Real human translation from Debian packages (see `data/README.md`). `load_pairs(src, tgt, split)` gives
# (source, target) sentence pairs for `"train"` or `"dev"` in either direction of en-de, en-fr, en-zh;
# `test_set_names` and `load_test_set` give the test sets, and `originality` says which side was written
# first. `read_parallel` reads your own data (a TSV file, or two aligned files).

# %%
from nmtscale import corpus

dev = corpus.load_pairs("en", "de", "dev")
print(f"{len(dev)} en-de dev pairs; the first: {dev[0]}")
for name in corpus.test_set_names("en", "de"):
    pairs = corpus.load_test_set(name, "en", "de")
    print(f"test set {name}: {len(pairs)} pairs, {corpus.originality(name, 'en', 'de')}")

mine = scratch / "mine.tsv"
mine.write_text("Good morning.\tGuten Morgen.\nThank you!\tDanke!\n")
print(corpus.read_parallel(mine))

# %% [markdown]
# ## Tokens and batches: `nmtscale.engine.tokenizer`, `nmtscale.engine.batching`
#
# `train_tokenizer(texts, vocab_size, user_symbols=...)` trains a SentencePiece model once per (texts,
# settings) and caches it; every tokenizer shares the ids PAD=0, UNK=1, BOS=2, EOS=3. `collate` pads examples
# into a `Batch`; `BatchStream` is the infinite, deterministic training order over one or several tasks.

# %%
from nmtscale.engine.batching import BatchStream, Example, collate
from nmtscale.engine.tokenizer import train_tokenizer

texts = [text for pair in dev[:2000] for text in pair]
tokenizer = train_tokenizer(texts, vocab_size=500, user_symbols=["<2de>"], cache_dir=scratch / "tokenizers")
ids = tokenizer.encode(["Open the file.", "Datei öffnen."])
print(ids, tokenizer.decode(ids), tokenizer.language_tag("de"), tokenizer.token_id("<2de>"))

sources, targets = tokenizer.encode([s for s, _ in dev[:64]]), tokenizer.encode([t for _, t in dev[:64]])
examples = [Example(src=s, tgt=t) for s, t in zip(sources, targets, strict=True)]
batch = collate(examples[:3])
print("src", tuple(batch.src.shape), "tgt_in", tuple(batch.tgt_in.shape), "target tokens", batch.n_tgt_tokens)
stream = BatchStream([examples], max_tokens=256, seed=seed)
print("a training batch of", next(iter(stream)).n_tgt_tokens, "target tokens")

# %% [markdown]
# ## Models and decoding: `engine.model`, `engine.search`, `engine.counting`, `engine.flops`
#
# `ModelConfig` fixes an architecture (`"encdec"`, `"prefixlm"`, `"prefixlm_toponly"`, `"causallm"`,
# `"causallm_tgtonly"`) and its sizes; `build_model` makes the `NMTModel`. `parameter_counts` counts from the
# config alone, `training_flops_per_target_token` gives the analytic training cost. `greedy` and
# `beam_search` decode with a key/value cache. Dropout draws `random16` masks by default, cheaper than
# `dropout_mask="bernoulli"` where torch's Bernoulli generator runs serially (`benchmarks/dropout_cost.py`).

# %%
from nmtscale.engine.counting import parameter_counts
from nmtscale.engine.flops import training_flops_per_target_token
from nmtscale.engine.model import ModelConfig, build_model
from nmtscale.engine.search import beam_search, greedy

config = ModelConfig(arch="encdec", vocab_size=tokenizer.vocab_size, d_model=64, n_heads=2, d_ff=256)
model = build_model(config).eval()
print(f"{model.get_num_params():,} non-embedding parameters")
print("counted from the config alone:", parameter_counts(config))
print(
    f"{training_flops_per_target_token(config, src_len=12, tgt_len=12):,.0f} training FLOPs per target token"
)
output = model(batch.src, batch.tgt_in)
print("logits", tuple(output.tgt_logits.shape))
with torch.no_grad():
    print("greedy (untrained):", greedy(model, batch.src[:1], max_len=5))
    print("beam 4 (untrained):", beam_search(model, batch.src[:1], beam_size=4, max_len=5))

# %% [markdown]
# ## Runs: `nmtscale.config`, `nmtscale.runs`, `nmtscale.results`
#
# A run is a `RunConfig` (data, model, training, evaluation), read from YAML with every key checked;
# `params/example_run.yaml` documents every key. Its run id is a hash of the config, of the data it reads and
# of the engine version. `runs.run(cfg)` returns its summary from its record in the results store
# (`results/<run id>.json`, committed) without training; a run not recorded is trained in `runs/<run id>/`
# (resuming an interrupted one) and recorded. `runs.sweep(cfgs, workers, threads_per_run)` does the same for
# many runs side by side, in a process pool here or, with `engine="ray"`, as tasks on a Ray cluster
# (`nmtscale.cluster`; every chapter's `engine` parameter). Training is what the chapters do; here we only
# load and vary a config, and read the store: `results.table()` is one row per recorded run (the config
# flattened, the final loss per test set, N, tokens, FLOPs, provenance), ready for pandas;
# `python -m nmtscale results table` writes it as CSV.

# %%
from IPython.display import display

from nmtscale import book, results, runs
from nmtscale import config as run_config

book.show_tables_for_readers()  # the chapters' table display: floats for reading, long tables folded
runs.use_stores(runs_dir, results_dir)
cfg = run_config.load_config("params/example_run.yaml")
wider = run_config.override(cfg, {"model.d_model": 2 * cfg.model.d_model})
print("this run's directory:", runs.run_dir(cfg))
print("a wider model's run id:", runs.run_dir(wider).name)
recorded = results.table()
print(f"{len(recorded)} runs recorded in {runs.results_root()}")
if len(recorded):
    columns = ["run_id", "status", "N", "tokens", "config.model.enc_layers", "config.model.dec_layers"]
    en_de = [column for column in results.loss_columns(recorded) if "en-de/" in column]
    display(recorded[columns + en_de].head())

# %% [markdown]
# `nmtscale.studies.sweeps` lays out families of runs: `depth_scaling_plan` gives Ghorbani et al.'s encoder,
# decoder and symmetric depth scaling around a baseline (and seed repeats); `run_table` turns the finished
# runs' summaries into one tidy row per run and test set (sizes, tokens per parameter, final loss,
# end-of-training slope), ready for the fits below.

# %%
from nmtscale.studies import sweeps

plan = sweeps.depth_scaling_plan(
    cfg, "en-de", baseline=(2, 2), encoder_depths=(1, 4), decoder_depths=(1, 4), symmetric_depths=(1, 4)
)
pd.DataFrame([{"approach": run.approach, "model": run.label, "seed": run.seed} for run in plan])

# %% [markdown]
# ## Laws and fits: `nmtscale.laws`, `nmtscale.laws.fitting`, `nmtscale.laws.uncertainty`
#
# A `Law` predicts from named inputs and coefficients (`power_law`, `bivariate_law`, `joint_law`,
# `chinchilla_law`, ...). `fit_multistart` (Huber on log residuals, L-BFGS-B from a start grid) and
# `fit_soft_l1_recipe` (Ghorbani et al. App. E) fit any of them; `uncertainty.perturbation` and `bootstrap`
# refit on perturbed or resampled data. Appendix A checks them on published and synthetic data.

# %%
from nmtscale import laws
from nmtscale.laws import fitting, uncertainty

law = laws.power_law(n0=1e6)
sizes = np.geomspace(1e5, 1e7, 8)
rng = np.random.default_rng(seed)
measured = pd.DataFrame({"N": sizes, "loss": 0.8 * (sizes / 1e6) ** -0.3 + 2.0 + rng.normal(0, 0.01, 8)})
fit = fitting.fit_multistart(law, measured[["N"]], measured["loss"])
print(fit.params, fit.diagnostics.as_dict())
spread = uncertainty.perturbation(fit, n_samples=50, seed=seed)
spread.coefficients()

# %% [markdown]
# `fit_each` fits one law per group of rows, e.g. one power law per language-pair weight (Fernandes et al.
# Eq. 6). A caution from Appendix A: `uncertainty.bootstrap` restarts each refit from the original estimate,
# and for the Huber multi-start fits that start often stops at once, so its spread is too small; refit each
# resample with `fit_multistart` from a grid of starts (as Appendix A does) or use `perturbation`.

# %%
two_weights = pd.concat(
    [measured.assign(p=0.3, loss=measured["loss"] + 0.2), measured.assign(p=0.7)], ignore_index=True
)
fitting.fit_each(law, two_weights, two_weights["loss"], by="p")

# %% [markdown]
# More modules serve particular analyses. `nmtscale.laws.reference` finds and loads published data the fitting
# machinery is checked on (`load_chinchilla_points`, used in Appendix A). Each chapter's study is a package
# in `nmtscale.studies` (its `plan`, `analysis`, `charts` and `verdicts` modules, every public name
# re-exported by the package), whose `claims` grades the paper's claims as a list of
# `nmtscale.studies.claims.Claim` (claim, paper, measured, verdict, rule, noise, and the reason when a claim
# is not testable at this scale); `claims.show` displays them in a chapter and stores them in its notebook,
# where the scorecard page counts them:
#
# - `nmtscale.studies.bivariate` (chapter 1): `base_config`, `chapter_plan` and `long_plan` (the runs, from
#   the chapter's parameters; later chapters build on `base_config`, so shared runs keep their hashes);
#   `scale_gates` (is size above the noise, and stable when the budget doubles?); `analyse(table, direction,
#   test_set)` fits the univariate and bivariate laws to the rows of a `sweeps.run_table`, checks Eq. 2's
#   optimum with a 16x denser start grid and predicts the held-out symmetric models; `exponents` (with
#   whether the data determine each), `fit_quality`, `recipe_comparison`, `allocation`, `run_summary` and
#   `budget_curves` turn the analyses and runs into tables.
# - `nmtscale.studies.composition` (chapter 2): `composition_table` and `reducible_curves` (scaling per test
#   set and the size multiplier under a loss threshold), `synthetic_sets` (forward- and back-translated
#   training sets from stored teacher models), `student_plan` and `student_table`, `decoded_families` (part
#   C's depth- and width-scaled models of the natural students' recipe, translating at every evaluation),
#   `bleu_fits` (Eq. 5 with intervals), `equal_loss_comparison` and `embedding_similarity` (the offline
#   sentence-embedding score).
# - `nmtscale.studies.architectures` (chapter 3): `architecture_plan` (EncDec sizes and the LM + Deep / LM +
#   Wide models matched to them), `run_table`, `evaluate_runs` (stored models by source length, with greedy
#   translations), `fit_power_laws` (Eq. 7 with perturbation intervals), `flops_table`, `translation_table`,
#   `table3` and `piece_shares` (unknown and byte pieces of a vocabulary).
# - `nmtscale.studies.multilingual` (chapter 4): `chapter_plan` (cohorts x weights x sizes), `run_table` with
#   the App. G correction, `per_weight_fits`, `joint_fits`, `effective_fractions`, `weighted_fits`,
#   `frontiers` and `three_pair_predictions`.

# %% [markdown]
# ## Quality: `nmtscale.engine.metrics`, `nmtscale.engine.langid`
#
# BLEU and chrF through sacrebleu, with their signatures; the off-target rate uses an offline language
# identifier restricted to en, de, fr and zh.

# %%
from nmtscale.engine import langid, metrics

hypotheses, references = ["Open the file now."], ["Open the file."]
print(metrics.bleu(hypotheses, references, target_lang="en"))
print(metrics.chrf(hypotheses, references))
print(langid.detect(["Datei öffnen", "Ouvrir le fichier", "Open the file"]))

# %% [markdown]
# ## Charts: `nmtscale.charts`
#
# `scaling_chart` draws measured points with fitted curves dashed over them (log-log by default), optional
# uncertainty bands, tooltips with run details and one colour per series that recurs across chapters.
# `enable_book_renderer()` makes charts draw offline in the built book.

# %%
from nmtscale import charts

charts.enable_book_renderer()
grid = pd.DataFrame({"N": np.geomspace(1e5, 1e7, 50)})
band = spread.band(grid)
charts.scaling_chart(
    measured.assign(series="measured"),
    x="N",
    y="loss",
    series="series",
    fit=band.assign(loss=band["prediction"], series="measured"),
    band=band.assign(series="measured"),
    title="A power law fitted to synthetic points, with its 95% perturbation band",
    x_title="non-embedding parameters",
    y_title="loss (nats)",
)
