"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest
import torch
from toy import toy_experiment

from nmtscale.data import ExperimentData


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
