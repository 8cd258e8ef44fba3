"""A toy translation task shared by the trainer, data, run-store and CUDA tests: a word-for-word language
pair, a tiny run config and the data a trainer needs for it."""

from __future__ import annotations

import contextlib
import random

import pytest

from nmtscale import train as trainer
from nmtscale.config import from_dict
from nmtscale.engine import data
from nmtscale.engine.batching import BatchStream
from nmtscale.engine.data import ExperimentData, encode_pairs
from nmtscale.engine.tokenizer import train_tokenizer
from nmtscale.record import RunSummary
from nmtscale.runs import config_hash

# A toy language pair: each English word has one German word, in the same order.
LEXICON = {
    "the": "der", "a": "ein", "cat": "katze", "dog": "hund", "sees": "sieht", "likes": "mag",
    "small": "klein", "big": "gross", "red": "rot", "house": "haus", "tree": "baum", "man": "mann",
    "woman": "frau", "child": "kind", "eats": "isst", "runs": "rennt", "green": "gruen", "old": "alt",
    "bird": "vogel",
}  # fmt: skip


def toy_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = sorted(LEXICON)
    pairs = []
    for _ in range(n):
        sentence = [rng.choice(words) for _ in range(rng.randint(2, 8))]
        pairs.append((" ".join(sentence), " ".join(LEXICON[w] for w in sentence)))
    return pairs


TINY_RUN = {
    "model": {"d_model": 16, "n_heads": 2, "d_ff": 32, "enc_layers": 1, "dec_layers": 1},
    "data": {"vocab_size": 48},
    "train": {"steps": 20, "max_tokens": 96, "lr": 0.01, "warmup_steps": 4, "checkpoint_interval": 5},
    "eval": {"interval": 5, "final_fraction": 0.5},
}


def user_run(store, **train) -> dict:
    """A tiny run config on the user files of the `store` fixture, as YAML-able data."""
    data = {
        **TINY_RUN["data"],
        "test_sets": [],
        "train_files": {"en-de": str(store / "train.tsv")},
        "test_files": {"en-de": {"toy": str(store / "test.tsv")}},
    }
    return {**TINY_RUN, "data": data, "train": {**TINY_RUN["train"], **train}}


def tiny_config(**sections):
    raw = {
        name: {**TINY_RUN.get(name, {}), **sections.get(name, {})}
        for name in ("model", "data", "train", "eval")
    }
    return from_dict(raw, "<test>")


def toy_experiment(tokenizer_dir) -> ExperimentData:
    """300 training and 40 test pairs of the toy task with a 48-piece tokenizer trained in `tokenizer_dir`."""
    train_pairs, test_pairs = toy_pairs(300, seed=1), toy_pairs(40, seed=2)
    texts = [text for pair in train_pairs for text in pair]
    tokenizer = train_tokenizer(texts, 48, cache_dir=tokenizer_dir)
    test_set = data.TestSet(
        "toy",
        "en-de",
        encode_pairs(tokenizer, test_pairs, "en-de", False),
        *map(list, zip(*test_pairs, strict=True)),
    )
    return ExperimentData(
        tokenizer, ["en-de"], [encode_pairs(tokenizer, train_pairs, "en-de", False)], [test_set], False
    )


@contextlib.contextmanager
def interrupted_at(monkeypatch, batch_number: int):
    """Inside, the trainer's data stream raises KeyboardInterrupt when asked for batch `batch_number`, as if
    the run were stopped there; the block must end by that interruption. The real stream comes back after."""
    served = 0

    class InterruptedStream(BatchStream):
        def __next__(self):
            nonlocal served
            served += 1
            if served == batch_number:
                raise KeyboardInterrupt
            return super().__next__()

    monkeypatch.setattr(trainer, "BatchStream", InterruptedStream)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        monkeypatch.setattr(trainer, "BatchStream", BatchStream)


def train_whole_and_resumed(cfg, experiment: ExperimentData, tmp_path, monkeypatch):
    """The run of `cfg` trained straight through (in tmp_path/whole) and trained with an interruption at
    step 13, after the checkpoint of step 10, then resumed (in tmp_path/split): both summaries."""
    whole = trainer.train(cfg, tmp_path / "whole", experiment)
    with interrupted_at(monkeypatch, 13):
        trainer.train(cfg, tmp_path / "split", experiment)
    return whole, trainer.train(cfg, tmp_path / "split", experiment)


def summary_for(planned, losses: dict[str, float], tokens: int = 4000, status: str = "finished"):
    """A `RunSummary` of a planned run (`nmtscale.studies.sweeps.PlannedRun`) with these final losses per
    test set name, for study tables built without training."""
    keys = [f"{planned.direction}/{name}" for name in losses]
    return RunSummary(
        run_id=config_hash(planned.config),
        status=status,
        reason=None,
        config={},
        steps=40,
        final_loss={k: losses[k.split("/")[1]] for k in keys},
        averaged_loss=None,
        curves=[{"step": s, "test_loss": {k: 5.0 - s / 100 for k in keys}} for s in (10, 20, 30, 40)],
        n_params=123,
        n_params_non_embedding=0,
        flops_per_target_token=0.0,
        training_flops=0.0,
        tokens_seen={planned.direction: tokens},
        wall_time_s=1.5,
        device="cpu",
    )
