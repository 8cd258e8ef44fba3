"""The trainer: one run from a config and its data to a `RunSummary`, resumable to the bit.

The recipe follows the papers: Adafactor (or AdamW) with linear warm-up then inverse-square-root decay,
label smoothing, optional tanh logit capping, batches measured in target tokens with gradient accumulation,
gradient clipping, and averaging of the last checkpoints (Zhang et al.). Every `eval.interval` steps the exact
per-token cross-entropy of every test set is measured; a run's final loss on a test set is the median of those
evaluations over the last `eval.final_fraction` of training (Ghorbani et al. use the last 10%).

A checkpoint holds the model, optimiser, schedule, every random generator and the data position, so a run
stopped after any checkpoint and resumed reproduces the uninterrupted run exactly on CPU.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm  # the text bar: tqdm.auto warns in notebooks without ipywidgets

from nmtscale.config import RunConfig, TrainConfig, cooldown_start, to_dict
from nmtscale.engine.batching import Batch, BatchStream
from nmtscale.engine.data import ExperimentData, TestSet
from nmtscale.engine.flops import training_flops_per_target_token
from nmtscale.engine.loss import token_loss_sum
from nmtscale.engine.metrics import bleu, chrf, off_target_rate
from nmtscale.engine.model import build_model
from nmtscale.engine.tokenizer import PAD
from nmtscale.errors import DataError
from nmtscale.predict import autocast, evaluate_loss, load_weights, pick_device, translate_ids
from nmtscale.record import CHECKPOINT, METRICS_LOG, MODEL, RunSummary, atomic_write, final_loss

# A loss above this many times ln V nats per token (a uniform guess scores ln V) is a diverged run.
DIVERGENCE_FACTOR = 3
PROGRESS_LINE_S = 60.0  # seconds between progress lines when no progress bar is shown


def test_set_key(test_set: TestSet) -> str:
    """The name a test set has in summaries and logs: 'en-de/dev'."""
    return f"{test_set.direction}/{test_set.name}"


def lr_multiplier(
    update: int,
    warmup_steps: int,
    schedule: str = "inverse_sqrt",
    total_steps: int = 0,
    cooldown_fraction: float = 0.2,
) -> float:
    """Linear warm-up to 1 over `warmup_steps` updates, then `schedule`: "inverse_sqrt" decay from there,
    "cosine" decay that reaches zero at update `total_steps`, or "constant_cooldown": 1 until the last
    `cooldown_fraction` of `total_steps`, then 1 - sqrt(progress) down to zero at `total_steps`."""
    if update <= warmup_steps:
        return update / warmup_steps
    if schedule == "cosine":
        progress = min((update - warmup_steps) / max(total_steps - warmup_steps, 1), 1.0)
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "constant_cooldown":
        start = cooldown_start(total_steps, cooldown_fraction)
        progress = min(max(update - start, 0) / max(total_steps - start, 1), 1.0)
        return 1.0 - math.sqrt(progress)
    return math.sqrt(max(warmup_steps, 1) / update)


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Adafactor or AdamW at the peak learning rate; the schedule scales it."""
    if cfg.optimizer == "adafactor":
        return torch.optim.Adafactor(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.AdamW(
        model.parameters(),
        lr=cfg.lr,
        betas=tuple(cfg.adam_betas),
        weight_decay=cfg.weight_decay,
        fused=True if cfg.optimizer_kernel in ("fused", "auto") else None,
    )


def source_lm_targets(src: torch.Tensor) -> torch.Tensor:
    """Targets of the CausalLM source-side LM loss: source position i predicts source token i+1."""
    return torch.cat([src[:, 1:], torch.full_like(src[:, :1], PAD)], dim=1)


class MetricsLog:
    """Append-only JSONL log of training and evaluation events."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, **record: Any) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def keep_until(self, step: int) -> None:
        """Drop the records after `step` (and a last line cut by a crash): a run resumed from its checkpoint
        at `step` logs the updates after it again, and each update must appear once."""
        if self.path.exists():
            kept = [r for r in read_metrics(self.path) if r.get("step", 0) <= step]
            atomic_write(self.path, lambda tmp: tmp.write_text("".join(json.dumps(r) + "\n" for r in kept)))


def median_tokens_per_second(records: Sequence[dict[str, Any]], skip_fraction: float = 0.1) -> float | None:
    """Median training throughput (target tokens/s) in a metrics log's records, after the first
    `skip_fraction` of the updates (warm-up of caches and allocators); None when there are no updates."""
    speeds = [(r["step"], r["tokens_per_s"]) for r in records if r.get("event") == "train"]
    if not speeds:
        return None
    last = max(step for step, _ in speeds)
    kept = [speed for step, speed in speeds if step > skip_fraction * last] or [s for _, s in speeds]
    return float(statistics.median(kept))


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics log. A last line cut short by a crash is skipped; a malformed line before it
    is a DataError naming the file and line."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            if number == len(lines):
                break
            raise DataError(f"{path}:{number}: not a JSON record ({err.msg})") from None
    return records


@dataclass
class TrainingState:
    """What the loop carries besides model, optimiser, schedule and data stream; saved in every checkpoint."""

    step: int = 0
    target_tokens: int = 0
    wall_time_s: float = 0.0
    curves: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, torch.Tensor]] = field(default_factory=list)
    objective_sum: float = 0.0
    objective_steps: int = 0
    # {"run_id", "step"}: the run whose trunk snapshot this one started from (a "constant_cooldown" run)
    branched_from: dict[str, Any] | None = None


class Trainer:
    """Trains one run in `run_dir`, resuming from its checkpoint when there is one, on `device` (default: CUDA
    when present). The device is not part of the run's identity: the same config names the same run.

    `trunk`, for a "constant_cooldown" run: the folder its trunk snapshots go to, shared by the runs that
    differ from it only in their budget (`runs.trunk_key`). Where its cool-down begins the run saves its state
    there (`step-<update>.pt`), and a run starting afresh begins from the latest snapshot before its own
    cool-down instead of from step 0: the state a checkpoint holds, so the same run as one trained from
    scratch.
    """

    def __init__(
        self,
        cfg: RunConfig,
        run_dir: Path,
        data: ExperimentData,
        progress: bool | None = None,
        device: torch.device | str | None = None,
        trunk: Path | None = None,
    ):
        self.cfg = cfg
        self.trunk = trunk if cfg.train.schedule == "constant_cooldown" else None
        self.trunk_step = cooldown_start(cfg.train.steps, cfg.train.cooldown_fraction)
        self.run_dir = run_dir
        self.data = data
        self.progress = progress
        self.device = pick_device() if device is None else torch.device(device)
        self.log = MetricsLog(run_dir / METRICS_LOG)
        # A loss far above that of a uniform guess over the vocabulary (ln V per token, plus the source LM
        # term) is a run that blew up, not a model that learned: it must fail, never enter a fit.
        self.divergence_limit = (
            DIVERGENCE_FACTOR * math.log(data.tokenizer.vocab_size) * (1 + cfg.train.source_lm_weight)
        )
        self.fresh_start()

    def fresh_start(self) -> None:
        """Model, optimiser, schedule, data stream and loop state at step 0, from the run's seed."""
        cfg, data = self.cfg, self.data
        seed_everything(cfg.train.seed)
        self.model_config = dataclasses.replace(cfg.model, vocab_size=data.tokenizer.vocab_size)
        self.model = build_model(self.model_config).to(self.device)
        self.optimizer = build_optimizer(self.model, cfg.train)
        train = cfg.train
        # LambdaLR calls its function with the number of updates done; the factor applies to the next update.
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda done: lr_multiplier(
                done + 1, train.warmup_steps, train.schedule, train.steps, train.cooldown_fraction
            ),
        )
        self.stream = BatchStream(
            data.tasks,
            cfg.train.max_tokens,
            seed=cfg.train.seed,
            weights=cfg.data.weights,
            temperature=cfg.data.temperature,
        )
        self.state = TrainingState()

    def run(self) -> RunSummary:
        """Train to `train.steps` (or until divergence) and summarise."""
        checkpoint = self.run_dir / CHECKPOINT
        if checkpoint.exists():
            self.resume(checkpoint)
        else:
            self.log.keep_until(0)
            self.branch_from_trunk()
        cfg = self.cfg.train
        self.model.train()
        batches = iter(self.stream)
        bar = tqdm(total=cfg.steps, initial=self.state.step, disable=self._bar_disabled(), unit="step")
        # without a terminal (a log file, a batch job) the bar is off: say how the run goes once in a while
        log_lines = self.progress is None and bar.disable
        last_line = time.perf_counter()
        session_start = time.perf_counter()
        wall_before = self.state.wall_time_s
        while self.state.step < cfg.steps:
            step_start = time.perf_counter()
            micro_batches = [next(batches) for _ in range(cfg.accumulate)]
            objective, grad_norm = self.train_step(micro_batches)
            self.state.step += 1
            tokens = sum(b.n_tgt_tokens for b in micro_batches)
            self.state.target_tokens += tokens
            self.state.wall_time_s = wall_before + time.perf_counter() - session_start
            tokens_per_s = tokens / (time.perf_counter() - step_start)
            self.log.write(
                event="train",
                step=self.state.step,
                objective=objective,
                grad_norm=grad_norm,
                lr=self.scheduler.get_last_lr()[0],
                target_tokens=self.state.target_tokens,
                tokens_per_s=tokens_per_s,
            )
            reason = None
            if not (math.isfinite(objective) and math.isfinite(grad_norm)):
                reason = f"diverged at step {self.state.step}: loss {objective}, gradient norm {grad_norm}"
            elif objective > self.divergence_limit:
                reason = (
                    f"diverged at step {self.state.step}: training loss {objective:.4g} nats per token, "
                    f"above {self.divergence_limit:.3g} ({DIVERGENCE_FACTOR} x that of a uniform guess)"
                )
            self.state.objective_sum += objective
            self.state.objective_steps += 1
            bar.update(1)
            bar.set_postfix(loss=f"{objective:.3f}", tok_s=f"{tokens_per_s:.0f}")
            if log_lines and time.perf_counter() - last_line >= PROGRESS_LINE_S:
                last_line = time.perf_counter()
                print(
                    f"run {self.run_dir.name}: update {self.state.step}/{cfg.steps}, training loss "
                    f"{objective:.3f}, {tokens_per_s:.0f} target tokens/s",
                    file=sys.stderr,
                    flush=True,
                )
            if reason is None and (
                self.state.step % self.cfg.eval.interval == 0 or self.state.step == cfg.steps
            ):
                reason = self.evaluate()
            if reason is not None:
                bar.close()
                self.log.write(event="failed", step=self.state.step, reason=reason)
                return self.summary("failed", reason)
            if self.state.step % cfg.checkpoint_interval == 0 or self.state.step == cfg.steps:
                self.take_snapshot()
                self.save_checkpoint(checkpoint)
            if self.trunk is not None and self.state.step == self.trunk_step:
                self.save_trunk_snapshot()
        bar.close()
        return self.finish()

    def train_step(self, micro_batches: list[Batch]) -> tuple[float, float]:
        """One update from accumulated micro-batches: returns the objective per token and gradient norm."""
        cfg = self.cfg.train
        n_target = sum(b.n_tgt_tokens for b in micro_batches)
        n_source = sum(int((source_lm_targets(b.src) != PAD).sum()) for b in micro_batches)
        objective = 0.0
        for batch in micro_batches:
            batch = batch.to(self.device)
            with autocast(self.device, cfg.cpu_precision):
                output = self.model(batch.src, batch.tgt_in)
            smoothing, kernel = cfg.label_smoothing, cfg.loss_kernel
            loss = (
                token_loss_sum(output.tgt_logits, batch.tgt_out, cfg.logit_cap, smoothing, kernel) / n_target
            )
            if output.src_logits is not None and cfg.source_lm_weight > 0:
                src_loss = token_loss_sum(
                    output.src_logits, source_lm_targets(batch.src), cfg.logit_cap, smoothing, kernel
                )
                loss = loss + cfg.source_lm_weight * src_loss / max(n_source, 1)
            loss.backward()
            objective += loss.item()
        max_norm = cfg.clip_norm if cfg.clip_norm is not None else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))
        if math.isfinite(objective) and math.isfinite(grad_norm):
            self.optimizer.step()
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return objective, grad_norm

    def test_losses(self) -> dict[str, float]:
        """The exact cross-entropy of the current model on every test set."""
        return {
            test_set_key(t): evaluate_loss(
                self.model, t.examples, self.cfg.train.max_tokens, self.cfg.train.logit_cap
            )
            for t in self.data.test_sets
        }

    def evaluate(self) -> str | None:
        """Add a point to the curves: test losses, the mean training objective since the last point, and
        translation scores at every `eval.decode_interval` updates. Returns why the run diverged, if a test
        loss is beyond the divergence limit, else None."""
        mean_objective = self.state.objective_sum / max(self.state.objective_steps, 1)
        self.state.objective_sum, self.state.objective_steps = 0.0, 0
        point = {
            "step": self.state.step,
            "target_tokens": self.state.target_tokens,
            "train_objective": mean_objective,
            "test_loss": self.test_losses(),
        }
        decode_interval = self.cfg.eval.decode_interval
        if decode_interval is not None and self.state.step % decode_interval == 0:
            point["translation"] = self.translation_metrics()
        self.state.curves.append(point)
        self.log.write(event="eval", **point)
        limit = DIVERGENCE_FACTOR * math.log(self.data.tokenizer.vocab_size)
        exploded = {k: v for k, v in point["test_loss"].items() if not v <= limit}
        if exploded:
            return (
                f"diverged by step {self.state.step}: test loss {exploded} nats per token, above {limit:.3g} "
                f"({DIVERGENCE_FACTOR} x that of a uniform guess)"
            )
        return None

    def take_snapshot(self) -> None:
        """Keep the weights of the last `train.average_last` checkpoints for averaging at the end."""
        keep = self.cfg.train.average_last
        if keep == 0:
            return
        snapshot = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}
        self.state.snapshots = [*self.state.snapshots, snapshot][-keep:]

    def finish(self) -> RunSummary:
        """Average the kept checkpoints (if any), save the final model, translate, summarise."""
        averaged_loss = None
        if self.state.snapshots:
            averaged = {
                k: torch.stack([s[k].float() for s in self.state.snapshots]).mean(0).to(v.dtype)
                for k, v in self.state.snapshots[-1].items()
            }
            self.model.load_state_dict(averaged)
            averaged_loss = self.test_losses()
        final = {"model_config": dataclasses.asdict(self.model_config), "state_dict": self.model.state_dict()}
        atomic_write(self.run_dir / MODEL, functools.partial(torch.save, final))
        translation = self.translation_metrics() if self.cfg.eval.decode != "none" else None
        return self.summary("finished", None, averaged_loss, translation)

    def translation_metrics(self) -> dict[str, dict[str, Any]]:
        """BLEU, chrF and off-target rate of the final model on (a prefix of) every test set."""
        cfg = self.cfg.eval
        results = {}
        for test_set in self.data.test_sets:
            n = len(test_set.examples) if cfg.max_decode_sentences is None else cfg.max_decode_sentences
            sources = [e.src for e in test_set.examples[:n]]
            ids = translate_ids(self.model, sources, cfg.decode, cfg.beam_size, cfg.length_penalty)
            hypotheses = self.data.tokenizer.decode(ids)
            references = test_set.references[: len(hypotheses)]
            bleu_score = bleu(hypotheses, references, test_set.target_lang)
            chrf_score = chrf(hypotheses, references)
            results[test_set_key(test_set)] = {
                "sentences": len(hypotheses),
                "bleu": bleu_score.score,
                "bleu_signature": bleu_score.signature,
                "chrf": chrf_score.score,
                "chrf_signature": chrf_score.signature,
                "off_target_rate": off_target_rate(hypotheses, test_set.target_lang),
            }
        return results

    def summary(
        self,
        status: str,
        reason: str | None,
        averaged_loss: dict[str, float] | None = None,
        translation: dict[str, dict[str, Any]] | None = None,
    ) -> RunSummary:
        """The run's RunSummary in its current state."""
        cfg = self.cfg
        keys = [test_set_key(t) for t in self.data.test_sets]
        finals = {}
        if status == "finished":
            finals = {
                k: final_loss(self.state.curves, k, cfg.train.steps, cfg.eval.final_fraction) for k in keys
            }
        examples = [e for task in self.data.tasks for e in task]
        # FLOPs at the mean sentence lengths (the target side counts its EOS)
        mean_src = round(sum(len(e.src) for e in examples) / len(examples))
        mean_tgt = round(sum(len(e.tgt) + 1 for e in examples) / len(examples))
        per_token = training_flops_per_target_token(self.model_config, max(mean_src, 1), mean_tgt)
        return RunSummary(
            run_id=self.run_dir.name,
            status=status,
            reason=reason,
            config=to_dict(cfg),
            steps=self.state.step,
            final_loss=finals,
            averaged_loss=averaged_loss,
            curves=self.state.curves,
            n_params=self.model.get_num_params(non_embedding=False),
            n_params_non_embedding=self.model.get_num_params(non_embedding=True),
            flops_per_target_token=float(per_token),
            training_flops=float(per_token) * self.state.target_tokens,
            tokens_seen=dict(zip(self.data.directions, map(int, self.stream.tokens_seen), strict=True)),
            wall_time_s=self.state.wall_time_s,
            device=str(self.device),
            translation=translation,
            test_set_sizes={test_set_key(t): len(t.examples) for t in self.data.test_sets},
            branched_from=self.state.branched_from,
            tokens_per_s=median_tokens_per_second(
                read_metrics(self.log.path) if self.log.path.exists() else []
            ),
        )

    def checkpoint(self) -> dict[str, Any]:
        """Everything the loop needs to go on from here exactly as it would have."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "stream": self.stream.state_dict(),
            "rng": rng_state(),
            "state": vars(self.state),
        }

    def save_checkpoint(self, path: Path) -> None:
        atomic_write(path, functools.partial(torch.save, self.checkpoint()))

    def save_trunk_snapshot(self) -> None:
        """The run's state where its cool-down begins, with its log so far, for the runs that share its
        constant stretch (`branch_from_trunk`)."""
        self.trunk.mkdir(parents=True, exist_ok=True)
        path = self.trunk / f"step-{self.state.step}.pt"
        if path.exists():
            return
        snapshot = self.checkpoint() | {"run_id": self.run_dir.name, "log": self.log.path.read_text()}
        atomic_write(path, functools.partial(torch.save, snapshot))

    def branch_from_trunk(self) -> None:
        """Start from the latest trunk snapshot saved before this run's cool-down begins, if any: its state
        and its log up to there, and an event naming the run that saved it."""
        if self.trunk is None or not self.trunk.is_dir():
            return
        steps = [int(p.stem.removeprefix("step-")) for p in self.trunk.glob("step-*.pt")]
        usable = [s for s in steps if 0 < s <= self.trunk_step]
        if not usable:
            return
        path = self.trunk / f"step-{max(usable)}.pt"
        snapshot = load_weights(path, self.device)
        self.load_checkpoint(snapshot)
        # the optimiser holds the rate the saving run's schedule set for its next update, which may already
        # be cooling down: set this run's
        for group, base, factor in zip(
            self.optimizer.param_groups, self.scheduler.base_lrs, self.scheduler.lr_lambdas, strict=True
        ):
            group["lr"] = base * factor(self.state.step)
        self.state.branched_from = {"run_id": snapshot["run_id"], "step": self.state.step}
        atomic_write(self.log.path, lambda tmp: tmp.write_text(snapshot["log"]))
        self.log.write(event="branched", **self.state.branched_from)

    def resume(self, path: Path) -> None:
        """Continue from the checkpoint at `path`. One that cannot be read (truncated, empty, not a
        checkpoint of this run) is moved aside, and the run starts again from step 0, saying so."""
        try:
            self.load_checkpoint(load_weights(path, self.device))
        except Exception as err:  # torch.load and load_state_dict raise many kinds
            aside = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(path, aside)
            message = (
                f"{path}: unreadable checkpoint ({type(err).__name__}: {err}); moved to {aside.name}, "
                "training this run again from step 0"
            )
            warnings.warn(message, stacklevel=2)
            self.fresh_start()
            self.log.keep_until(0)
            self.log.write(event="checkpoint_unreadable", step=0, reason=message)
            return
        self.log.keep_until(self.state.step)
        self.log.write(event="resume", step=self.state.step)

    def load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the state of a `checkpoint` (as read by `load_weights`)."""
        self.model.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.scheduler.load_state_dict(checkpoint["scheduler"])
        self.stream.load_state_dict(checkpoint["stream"])
        set_rng_state(checkpoint["rng"])
        self.state = TrainingState(**checkpoint["state"])

    def _bar_disabled(self) -> bool | None:
        # None lets tqdm decide: a bar on a terminal, nothing in a log file or a papermill run.
        return None if self.progress is None else not self.progress


def train(
    cfg: RunConfig,
    run_dir: Path,
    data: ExperimentData,
    progress: bool | None = None,
    trunk: Path | None = None,
) -> RunSummary:
    """Train (or resume) the run described by `cfg` in `run_dir` and return its summary (`Trainer`, whose
    `trunk` this is)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return Trainer(cfg, run_dir, data, progress, trunk=trunk).run()


# What a checkpoint holds besides tensors and plain Python values: NumPy's random state (an array). torch.load
# with weights_only=True refuses every other global, so a pickled object that would run code when loaded (a
# planted or shared `checkpoint.pt` or `model.pt`) is an error, never executed.
def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
