"""Fixtures shared by several test modules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from toy import toy_experiment, toy_pairs

from nmtscale.engine.data import ExperimentData


@pytest.fixture(autouse=True)
def private_results_store(tmp_path_factory, monkeypatch) -> Path:
    """Every test writes run records to a private results store, never to the committed `results/`."""
    root = tmp_path_factory.mktemp("results")
    monkeypatch.setenv("NMTSCALE_RESULTS", str(root))
    return root


@pytest.fixture
def one_thread():
    """Torch on one thread: tiny tensors run faster without thread hand-offs on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory) -> ExperimentData:
    """The toy task of `toy.py`, one per test module (its tokenizer trained in a temporary folder)."""
    torch.set_num_threads(1)
    return toy_experiment(tmp_path_factory.mktemp("tokenizers"))


NEEDS_GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=NEEDS_GPU)])
def device(request) -> torch.device:
    """Each device a test should pass on: the CPU always, CUDA where torch sees a GPU."""
    return torch.device(request.param)


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """A private run store and cache, and a tiny En-De user data set as TSV files."""
    torch.set_num_threads(1)
    monkeypatch.setenv("NMTSCALE_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("NMTSCALE_CACHE", str(tmp_path / "cache"))
    for name, pairs in (("train", toy_pairs(300, seed=1)), ("test", toy_pairs(40, seed=2))):
        (tmp_path / f"{name}.tsv").write_text("".join(f"{src}\t{tgt}\n" for src, tgt in pairs))
    return tmp_path
