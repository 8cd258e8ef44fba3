"""The token loss of training and evaluation: the sum of (label-smoothed) cross-entropy over non-pad target
positions, after an optional tanh cap on the logits, and a fused kernel for the smoothed sum."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from nmtscale.engine.tokenizer import PAD


def cap_logits(logits: torch.Tensor, logit_cap: float | None) -> torch.Tensor:
    """Soft-cap logits to (-cap, cap) with tanh, which keeps large logits from running away."""
    if logit_cap is None:
        return logits
    return logit_cap * torch.tanh(logits / logit_cap)


class SmoothedCrossEntropySum(torch.autograd.Function):
    """F.cross_entropy(reduction="sum", ignore_index=PAD, label_smoothing=eps) in one pass each way: the
    backward writes softmax(logits) - q at once, q the smoothed target ((1 - eps) on the target plus eps / V
    everywhere), zero on padding rows, where torch's composite runs three backward passes over the logits."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor, eps: float) -> torch.Tensor:
        log_probs = torch.log_softmax(logits, dim=-1)
        real = targets != PAD
        per_token = (1 - eps) * log_probs.gather(1, targets[:, None]).squeeze(1) + eps * log_probs.mean(1)
        ctx.save_for_backward(log_probs, targets, real)
        ctx.eps = eps
        return -(per_token * real).sum()

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        log_probs, targets, real = ctx.saved_tensors
        eps, vocab = ctx.eps, log_probs.shape[-1]
        grad = log_probs.exp_().sub_(eps / vocab)  # the saved log-probabilities are not needed again
        grad.scatter_add_(1, targets[:, None], grad.new_full((len(targets), 1), eps - 1))
        return grad.mul_((real.to(grad.dtype) * grad_loss)[:, None]), None, None


def token_loss_sum(
    logits: torch.Tensor,
    targets: torch.Tensor,
    logit_cap: float | None,
    label_smoothing: float = 0.0,
    kernel: str = "default",
) -> torch.Tensor:
    """Sum over non-pad positions of the (label-smoothed) cross-entropy, computed in fp32; `kernel`
    (`TrainConfig.loss_kernel`) "fused" gives the same sum through `SmoothedCrossEntropySum`."""
    logits = cap_logits(logits.float(), logit_cap)
    if kernel == "fused":
        return SmoothedCrossEntropySum.apply(
            logits.reshape(-1, logits.size(-1)), targets.reshape(-1), label_smoothing
        )
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)),
        targets.reshape(-1),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
