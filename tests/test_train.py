"""The trainer on a tiny model and a tiny synthetic word-for-word task, on CPU."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import torch
from toy import tiny_config, train_whole_and_resumed

from nmtscale import predict, record
from nmtscale import train as trainer
from nmtscale.engine.batching import collate
from nmtscale.engine.loss import cap_logits, token_loss_sum
from nmtscale.engine.model import linear
from nmtscale.engine.tokenizer import PAD
from nmtscale.errors import DataError


def final_weights(run_dir):
    return torch.load(run_dir / trainer.MODEL, weights_only=False)["state_dict"]


def test_lr_schedule_warms_up_linearly_then_decays_as_inverse_square_root():
    assert trainer.lr_multiplier(1, 4) == 0.25
    assert trainer.lr_multiplier(4, 4) == 1.0
    assert trainer.lr_multiplier(16, 4) == pytest.approx(0.5)
    assert trainer.lr_multiplier(9, 0) == pytest.approx(1 / 3)


def test_cosine_schedule_warms_up_then_reaches_zero_at_the_last_update():
    assert trainer.lr_multiplier(2, 4, "cosine", 12) == 0.5
    assert trainer.lr_multiplier(4, 4, "cosine", 12) == 1.0
    assert trainer.lr_multiplier(8, 4, "cosine", 12) == pytest.approx(0.5)
    assert trainer.lr_multiplier(12, 4, "cosine", 12) == pytest.approx(0.0)
    assert trainer.lr_multiplier(13, 4, "cosine", 12) == pytest.approx(0.0)  # past the end: stays at zero


def test_constant_cooldown_schedule_holds_the_peak_then_cools_down_as_one_minus_sqrt():
    # 20 updates, the last 25% (5) cooling down: the peak through update 15, zero at 20
    assert trainer.lr_multiplier(2, 4, "constant_cooldown", 20, 0.25) == 0.5
    assert trainer.lr_multiplier(15, 4, "constant_cooldown", 20, 0.25) == 1.0
    assert trainer.lr_multiplier(16, 4, "constant_cooldown", 20, 0.25) == pytest.approx(1 - 0.2**0.5)
    assert trainer.lr_multiplier(20, 4, "constant_cooldown", 20, 0.25) == pytest.approx(0.0)
    assert trainer.lr_multiplier(21, 4, "constant_cooldown", 20, 0.25) == pytest.approx(0.0)


def _cooldown_config(steps, eval_interval):
    return tiny_config(
        train={"optimizer": "adamw", "schedule": "constant_cooldown", "steps": steps},
        eval={"interval": eval_interval},
    )


def test_a_cooldown_run_starts_from_the_trunk_a_shorter_budget_saved(tmp_path, toy_data):
    """A 40-update run that finds the snapshot a 20-update run saved where its cool-down began (update 16)
    goes on from there, and ends where the same run trained from step 0 ends, though the two budgets
    evaluate on other grids."""
    trunk = tmp_path / "trunk"
    short = trainer.train(_cooldown_config(20, 5), tmp_path / "short", toy_data, trunk=trunk)
    assert sorted(p.name for p in trunk.iterdir()) == ["step-16.pt"]
    assert short.branched_from is None
    long_cfg = _cooldown_config(40, 10)
    branched = trainer.train(long_cfg, tmp_path / "branched", toy_data, trunk=trunk)
    scratch = trainer.train(long_cfg, tmp_path / "scratch", toy_data)
    assert branched.branched_from == {"run_id": "short", "step": 16}
    assert scratch.branched_from is None
    for key, loss in scratch.final_loss.items():
        assert branched.final_loss[key] == pytest.approx(loss, rel=1e-5)
    at = {p["step"]: p["test_loss"] for p in branched.curves}
    assert sorted(at) == [5, 10, 15, 20, 30, 40], "the trunk's evaluations, then its own"
    for point in scratch.curves:
        for key, loss in point["test_loss"].items():
            assert at[point["step"]][key] == pytest.approx(loss, rel=1e-5)
    log = trainer.read_metrics(tmp_path / "branched" / trainer.METRICS_LOG)
    assert [r["step"] for r in log if r["event"] == "train"] == list(range(1, 41)), "each update once"
    branched_events = [r for r in log if r["event"] == "branched"]
    assert branched_events == [{"event": "branched", "run_id": "short", "step": 16}]
    assert sorted(p.name for p in trunk.iterdir()) == ["step-16.pt", "step-32.pt"]


def test_a_cosine_run_anneals_to_zero_and_resumes_bit_identical(tmp_path, toy_data, monkeypatch):
    cfg = tiny_config(train={"optimizer": "adamw", "schedule": "cosine"})
    whole, resumed = train_whole_and_resumed(cfg, toy_data, tmp_path, monkeypatch)
    assert resumed.curves == whole.curves
    rates = [
        r["lr"]
        for r in trainer.read_metrics(tmp_path / "whole" / trainer.METRICS_LOG)
        if r["event"] == "train"
    ]
    assert max(rates) == pytest.approx(cfg.train.lr)
    assert rates[-1] == pytest.approx(0.0, abs=1e-12), "the rate after the last update is zero"
    assert rates[len(rates) // 2 + 2] < rates[len(rates) // 2 - 2], "it decays after the warm-up"


def test_logit_cap_bounds_logits_and_keeps_small_ones():
    logits = torch.tensor([-1000.0, -0.01, 0.0, 0.01, 1000.0])
    capped = cap_logits(logits, 30.0)
    assert capped.abs().max() <= 30.0
    assert torch.allclose(capped[1:4], logits[1:4], atol=1e-6)
    assert cap_logits(logits, None) is logits


def test_final_loss_is_the_median_over_the_last_stretch():
    curves = [
        {"step": s, "test_loss": {"t": loss}} for s, loss in [(10, 9.0), (80, 5.0), (90, 1.0), (100, 4.0)]
    ]
    assert record.final_loss(curves, "t", total_steps=100, final_fraction=0.2) == 4.0  # median of 5, 1, 4
    assert record.final_loss(curves, "t", total_steps=100, final_fraction=0.1) == 2.5  # median of 1, 4
    with pytest.raises(ValueError, match="no evaluation"):
        record.final_loss(curves[:1], "t", total_steps=100, final_fraction=0.1)


def test_evaluation_is_the_exact_per_token_cross_entropy(toy_data):
    torch.manual_seed(0)
    model = trainer.build_model(tiny_config().model.replace(vocab_size=toy_data.tokenizer.vocab_size)).eval()
    examples = toy_data.test_sets[0].examples
    total, count = 0.0, 0
    for example in examples:  # one unpadded sentence at a time
        batch = collate([example])
        log_probs = torch.log_softmax(model(batch.src, batch.tgt_in).tgt_logits[0], dim=-1)
        total -= log_probs.gather(1, batch.tgt_out[0, :, None]).sum().item()
        count += batch.tgt_out.numel()
    assert predict.evaluate_loss(model, examples, max_tokens=64, logit_cap=None) == pytest.approx(
        total / count, rel=1e-5
    )


@pytest.mark.filterwarnings("ignore:Seems like `optimizer.step\\(\\)` has been overridden")
def test_gradient_accumulation_equals_one_big_batch(tmp_path, toy_data):
    no_dropout = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}
    cfg = tiny_config(model=no_dropout, train={"clip_norm": None, "cpu_precision": "fp32"})
    examples = toy_data.tasks[0][:12]

    def gradients(batches):
        run = trainer.Trainer(cfg, tmp_path, toy_data, device="cpu")  # an fp32 identity
        run.optimizer.step = lambda: None  # keep the gradients, do not apply them
        run.optimizer.zero_grad = lambda set_to_none=True: None
        run.train_step(batches)
        return [p.grad for p in run.model.parameters()]

    accumulated = gradients([collate(examples[:5]), collate(examples[5:])])
    for a, b in zip(accumulated, gradients([collate(examples)]), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Seems like `optimizer.step\\(\\)` has been overridden")
def test_causallm_objective_adds_the_weighted_source_lm_loss(tmp_path, toy_data):
    no_dropout = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}
    model = {"arch": "causallm", "enc_layers": 0, **no_dropout}
    batch = collate(toy_data.tasks[0][:6])
    cfg = tiny_config(
        model=model, train={"label_smoothing": 0.0, "source_lm_weight": 0.5, "cpu_precision": "fp32"}
    )
    run = trainer.Trainer(cfg, tmp_path, toy_data, device="cpu")  # an fp32 identity
    run.optimizer.step = lambda: None
    with torch.no_grad():
        output = run.model(batch.src, batch.tgt_in)
        log_probs = torch.log_softmax(output.src_logits[:, :-1], -1)
        real = batch.src[:, 1:] != 0
        source_nll = -log_probs.gather(2, batch.src[:, 1:, None])[..., 0][real].mean()
        target_nll = token_loss_sum(output.tgt_logits, batch.tgt_out, None) / batch.n_tgt_tokens
    objective, _ = run.train_step([batch])
    assert objective == pytest.approx((target_nll + 0.5 * source_nll).item(), rel=1e-5)


def test_training_lowers_the_test_loss_and_summarises(tmp_path, toy_data):
    summary = trainer.train(tiny_config(train={"steps": 40}), tmp_path, toy_data)
    assert summary.status == "finished"
    first, last = summary.curves[0]["test_loss"]["en-de/toy"], summary.curves[-1]["test_loss"]["en-de/toy"]
    assert last < first
    assert [p["step"] for p in summary.curves] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert summary.final_loss["en-de/toy"] == pytest.approx(
        sorted(p["test_loss"]["en-de/toy"] for p in summary.curves[3:])[2]  # median of steps 20..40
    )
    assert summary.tokens_seen["en-de"] == summary.curves[-1]["target_tokens"] > 0
    assert summary.n_params > summary.n_params_non_embedding > 0
    assert summary.training_flops > 0
    lines = (tmp_path / trainer.METRICS_LOG).read_text().splitlines()
    assert len(lines) == 40 + 8


def test_same_seed_same_run_other_seed_other_run(tmp_path, toy_data):
    runs = [
        trainer.train(tiny_config(train={"seed": seed}), tmp_path / str(i), toy_data)
        for i, seed in enumerate([0, 0, 1])
    ]
    assert runs[0].curves == runs[1].curves
    assert runs[0].curves != runs[2].curves


def test_resume_after_interruption_is_bit_identical(tmp_path, toy_data, monkeypatch):
    # dropout, AdamW moments, schedule, data position and averaging window must all survive a restart
    cfg = tiny_config(train={"optimizer": "adamw", "average_last": 2})
    whole, resumed = train_whole_and_resumed(cfg, toy_data, tmp_path, monkeypatch)

    assert resumed.curves == whole.curves
    assert resumed.final_loss == whole.final_loss
    assert resumed.averaged_loss == whole.averaged_loss
    assert resumed.tokens_seen == whole.tokens_seen
    for name, tensor in final_weights(tmp_path / "whole").items():
        assert torch.equal(tensor, final_weights(tmp_path / "split")[name]), name


def test_the_fused_adamw_kernel_trains_like_the_default_and_resumes_bit_identical(
    tmp_path, toy_data, monkeypatch
):
    """`train.optimizer_kernel: fused` is a faster kernel for the same update: after a short run its losses
    and weights differ from the default kernel's by rounding only."""
    fused = tiny_config(train={"optimizer": "adamw", "optimizer_kernel": "fused"})
    whole, resumed = train_whole_and_resumed(fused, toy_data, tmp_path, monkeypatch)
    assert resumed.curves == whole.curves
    default = trainer.train(tiny_config(train={"optimizer": "adamw"}), tmp_path / "default", toy_data)
    assert default.final_loss == pytest.approx(whole.final_loss, abs=1e-4)
    for name, tensor in final_weights(tmp_path / "whole").items():
        assert torch.allclose(tensor, final_weights(tmp_path / "default")[name], atol=1e-4), name


@pytest.mark.parametrize(("smoothing", "cap"), [(0.0, None), (0.1, None), (0.1, 5.0)])
def test_the_fused_loss_gives_torchs_sum_and_gradient(smoothing, cap):
    generator = torch.Generator().manual_seed(0)
    logits = (3 * torch.randn(4, 6, 50, generator=generator)).requires_grad_()
    targets = torch.randint(1, 50, (4, 6), generator=generator)
    targets[0, 2:] = targets[3, 5:] = PAD
    values, grads = [], []
    for kernel in ("default", "fused"):
        loss = token_loss_sum(logits, targets, cap, smoothing, kernel)
        (grad,) = torch.autograd.grad(2.5 * loss, logits)  # an upstream gradient other than 1
        values.append(loss.item())
        grads.append(grad)
    assert values[1] == pytest.approx(values[0], rel=1e-6)
    assert torch.allclose(grads[1], grads[0], atol=1e-6)
    assert torch.all(grads[1][0, 2:] == 0)  # padding positions get no gradient


def test_cpu_bf16_products_run_only_where_the_processor_multiplies_bf16(monkeypatch):
    """On CPU, cpu_precision bf16 means bf16 linear products (`model.bf16_matmuls`), not torch's autocast."""
    cpu, x, weight = torch.device("cpu"), torch.randn(4, 8), torch.randn(6, 8)
    for native, precision, expected in [(True, "bf16", True), (True, "fp32", False), (False, "bf16", False)]:
        monkeypatch.setattr(predict, "cpu_has_native_bf16", lambda native=native: native)
        with predict.autocast(cpu, precision):
            assert not torch.is_autocast_enabled("cpu")
            exact = torch.equal(linear(x, weight), torch.nn.functional.linear(x, weight))
            assert exact is not expected, (native, precision)
    assert isinstance(record.provenance(1)["cpu_native_bf16"], bool)


def test_the_fast_cpu_path_learns_like_the_default_and_resumes_bit_identical(tmp_path, toy_data, monkeypatch):
    """Random16 attention dropout, the fused loss and fused AdamW (plus bf16 where the CPU has it) draw other
    masks and round differently, so the runs differ; the final toy loss must stay within the spread of the
    default path's seeds (three standard deviations, at least 0.05 nats)."""
    fast = tiny_config(
        model={"attention_dropout": 0.1, "attention_dropout_mask": "random16"},
        train={"optimizer": "adamw", "optimizer_kernel": "fused", "loss_kernel": "fused"}
        | {"cpu_precision": "bf16"},
    )
    whole, resumed = train_whole_and_resumed(fast, toy_data, tmp_path, monkeypatch)
    assert resumed.curves == whole.curves
    default = [
        trainer.train(
            tiny_config(model={"attention_dropout": 0.1}, train={"optimizer": "adamw", "seed": seed}),
            tmp_path / f"default{seed}",
            toy_data,
        ).final_loss["en-de/toy"]
        for seed in range(3)
    ]
    spread = max(3 * statistics.stdev(default), 0.05)
    assert abs(whole.final_loss["en-de/toy"] - statistics.mean(default)) < spread, (whole.final_loss, default)


def test_checkpoint_averaging_keeps_the_mean_of_the_last_checkpoints(tmp_path, toy_data):
    summary = trainer.train(tiny_config(train={"average_last": 2}), tmp_path, toy_data)
    model = predict.load_trained_model(tmp_path)
    expected = predict.evaluate_loss(model, toy_data.test_sets[0].examples, 96, None)
    assert summary.averaged_loss["en-de/toy"] == pytest.approx(expected)
    assert summary.averaged_loss["en-de/toy"] != summary.curves[-1]["test_loss"]["en-de/toy"]


def test_a_nan_loss_ends_the_run_as_failed(tmp_path, toy_data, monkeypatch):
    calls = 0
    real_loss = trainer.token_loss_sum

    def poisoned(*args, **kwargs):
        nonlocal calls
        calls += 1
        return real_loss(*args, **kwargs) * (float("nan") if calls == 3 else 1.0)

    monkeypatch.setattr(trainer, "token_loss_sum", poisoned)
    summary = trainer.train(tiny_config(), tmp_path, toy_data)
    assert summary.status == "failed"
    assert "diverged at step 3" in summary.reason
    assert summary.steps == 3
    assert summary.final_loss == {}


def test_greedy_translation_of_a_trained_toy_model(tmp_path, toy_data):
    decoding = {"interval": 20, "decode": "greedy", "decode_interval": 40, "max_decode_sentences": 10}
    summary = trainer.train(tiny_config(train={"steps": 60}, eval=decoding), tmp_path, toy_data)
    assert ["translation" in point for point in summary.curves] == [False, True, False]
    scores = summary.translation["en-de/toy"]
    assert scores["sentences"] == 10
    assert 0 <= scores["bleu"] <= 100 and 0 <= scores["chrf"] <= 100
    assert "tok:13a" in scores["bleu_signature"]


class PlantedCode:
    """A pickled object that would create `marker` when unpickled without restrictions."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_model_or_checkpoint_carrying_code_is_refused_and_never_run(tmp_path, toy_data):
    run_dir = tmp_path / "run"
    trainer.train(tiny_config(train={"steps": 2}), run_dir, toy_data)
    marker = tmp_path / "code-ran"
    torch.save({"model_config": PlantedCode(marker), "state_dict": {}}, run_dir / trainer.MODEL)
    with pytest.raises(DataError, match=r"model.pt: not a readable model .*holds a getattr object.*refused"):
        predict.load_trained_model(run_dir)
    torch.save({"model": PlantedCode(marker)}, run_dir / trainer.CHECKPOINT)
    with pytest.raises(
        DataError, match=r"checkpoint.pt: holds a getattr object, not tensors .*refused unread"
    ):
        predict.load_weights(run_dir / trainer.CHECKPOINT, torch.device("cpu"))
    assert not marker.exists(), "the planted code ran"
