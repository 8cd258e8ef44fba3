"""The CUDA path beyond the tests that run on every device (`device` fixture: overfitting, FLOP counts):
CPU and GPU agree on logits, a run trains, resumes and decodes on the GPU under bf16 autocast, and its model
loads on the CPU.

Skipped where torch sees no GPU (CI and the default machines). On a GPU machine:
`python -m pytest -q tests/test_cuda.py tests/test_model.py tests/test_flops.py`.
"""

from __future__ import annotations

import math

import pytest
import torch
from test_model import ALL_VARIANTS, random_batch, tiny_model
from toy import tiny_config, train_whole_and_resumed

from nmtscale import predict
from nmtscale import train as trainer
from nmtscale.engine import search
from nmtscale.engine.batching import Example, collate
from nmtscale.engine.model import Dropout

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CUDA = torch.device("cuda")


def test_the_trainer_picks_cuda_with_bf16_autocast():
    assert predict.pick_device().type == "cuda"
    model = tiny_model("encdec").to(CUDA)
    src, tgt_in = random_batch(2, 6, 5)
    with predict.autocast(CUDA):
        logits = model(src.to(CUDA), tgt_in.to(CUDA)).tgt_logits
    assert logits.dtype == torch.bfloat16


def test_random16_dropout_draws_its_mask_on_the_gpu_under_bf16():
    x = torch.ones(300, 301, device=CUDA, dtype=torch.bfloat16)
    out = Dropout(0.1, "random16").train()(x)
    assert out.device.type == "cuda" and out.dtype == torch.bfloat16
    assert abs((out == 0).float().mean().item() - 0.1) < 0.01


@pytest.mark.parametrize(("arch", "options"), ALL_VARIANTS)
def test_fp32_logits_on_cuda_equal_the_cpu_logits(arch, options):
    """The same weights give the same logits on both devices: masks, positions and caches port to CUDA."""
    model = tiny_model(arch, **options)
    src, tgt_in = random_batch(3, 7, 6)
    src[0, 4:] = 0  # a padded row exercises the padding masks of the CUDA attention kernels
    on_cpu = model(src, tgt_in).tgt_logits
    on_cuda = model.to(CUDA)(src.to(CUDA), tgt_in.to(CUDA)).tgt_logits.cpu()
    torch.testing.assert_close(on_cuda, on_cpu, atol=1e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def cuda_run(toy_data, tmp_path_factory):
    """A toy run trained on the GPU (600 AdamW updates of a width-32 model), and its run directory."""
    run_dir = tmp_path_factory.mktemp("cuda-run")
    cfg = tiny_config(
        model={"d_model": 32, "n_heads": 4, "d_ff": 64},
        train={"steps": 600, "lr": 0.01, "optimizer": "adamw", "max_tokens": 512},
        eval={"interval": 100},
    )
    return trainer.train(cfg, run_dir, toy_data), run_dir


def test_a_run_trains_on_cuda_and_lowers_the_loss(cuda_run, toy_data):
    summary, _ = cuda_run
    assert summary.status == "finished"
    assert summary.device == "cuda"
    uniform = math.log(toy_data.tokenizer.vocab_size)  # the loss of a model that has learnt nothing
    assert summary.final_loss["en-de/toy"] < 0.5 * uniform


def test_a_model_trained_on_cuda_loads_and_evaluates_on_cpu(cuda_run, toy_data):
    summary, run_dir = cuda_run
    model = predict.load_trained_model(run_dir, torch.device("cpu"))
    assert next(model.parameters()).device.type == "cpu"
    loss = predict.evaluate_loss(model, toy_data.test_sets[0].examples, 96, None)
    # the run's own last evaluation was in bf16 on the GPU: the same model to bf16 precision
    assert loss == pytest.approx(summary.curves[-1]["test_loss"]["en-de/toy"], rel=0.02)


def test_decoding_on_cuda_matches_cpu_and_beam_one_equals_greedy(cuda_run, toy_data):
    """In fp32 both devices decode the same words (the key/value cache and masks port to CUDA); under the
    trainer's bf16 autocast, beam search of width 1 is still greedy search."""
    _, run_dir = cuda_run
    sources = [example.src for example in toy_data.test_sets[0].examples]
    src = collate([Example(source, []) for source in sources]).src
    on_cpu = search.greedy(predict.load_trained_model(run_dir, torch.device("cpu")), src)
    model = predict.load_trained_model(run_dir, CUDA)
    on_cuda = search.greedy(model, src.to(CUDA))
    agree = sum(a == b for a, b in zip(on_cuda, on_cpu, strict=True)) / len(sources)
    assert agree >= 0.95  # a rare near-tie may flip; a broken cache or mask changes most sentences
    with predict.autocast(CUDA):
        assert search.beam_search(model, src.to(CUDA), beam_size=1) == search.greedy(model, src.to(CUDA))


def test_a_resumed_cuda_run_follows_the_uninterrupted_one(toy_data, tmp_path, monkeypatch):
    """Model, optimiser, schedule, data position and the CUDA generator survive a restart. GPU kernels may
    sum in another order from one launch to the next, so the curves agree closely rather than to the bit."""
    cfg = tiny_config(train={"optimizer": "adamw", "average_last": 2})
    whole, resumed = train_whole_and_resumed(cfg, toy_data, tmp_path, monkeypatch)
    assert resumed.device == "cuda"
    assert resumed.tokens_seen == whole.tokens_seen
    for a, b in zip(resumed.curves, whole.curves, strict=True):
        assert a["step"] == b["step"]
        assert a["test_loss"]["en-de/toy"] == pytest.approx(b["test_loss"]["en-de/toy"], rel=1e-3)
