"""Transformer translation models: the encoder-decoder and the language-model variants of Zhang et al. (2022).

One `NMTModel` class covers five architectures (`ModelConfig.arch`):

- `encdec`: encoder and decoder stacks; the decoder cross-attends to the encoder's top layer.
- `prefixlm`: one stack over [source; target]; source tokens see every source token, target tokens see every
  source token and the earlier target tokens (Zhang et al., Eq. 4).
- `prefixlm_toponly`: the same stack runs over the source first; every target layer then attends to the
  top-layer source states (projected by that layer) and the earlier target tokens: an encoder-decoder whose
  encoder and decoder share their weights.
- `causallm`: one stack, causal over the whole concatenation, with next-token logits on the source as well
  (`ModelOutput.src_logits`) for the source-side language-model loss (Zhang et al., Eq. 6).
- `causallm_tgtonly`: the same mask, trained on the target only (no source logits).

Source and target keep separate positions (both count from 0), as in Zhang et al.; padding in the source is
masked out of every attention, so a row's outputs do not depend on how much padding the batch adds to it. The
language models are single stacks ("decoder-only"): their depth is `dec_layers` and `enc_layers` must be 0.

Decoding uses `start_decoding(src)` and `decode_step(state, tokens)`, which keep a key/value cache per layer;
`nmtscale.engine.search` builds greedy and beam search on them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from nmtscale.engine.tokenizer import PAD  # the id every tokenizer reserves for padding

ARCHITECTURES = ("encdec", "prefixlm", "prefixlm_toponly", "causallm", "causallm_tgtonly")
NORM_POSITIONS = ("pre", "post")
NORMS = ("layernorm", "rmsnorm")
ACTIVATIONS = ("relu", "gelu", "gated-gelu")
POSITIONS = ("sinusoidal", "learned", "relative")
DROPOUT_MASKS = ("bernoulli", "random16")
# On CUDA, SDPA may pick cuDNN's attention, which builds an execution plan for every new tensor shape: about
# 15 ms of CPU per call on an H100 with torch 2.11, longer than a small model's whole step. Length-bucketed
# batches and beam search (whose key length grows every step) keep bringing new shapes, so the GPU waits.
CUDA_ATTENTION_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention_kernels(x: Tensor) -> contextlib.AbstractContextManager:
    """The context to run attention on `x` in: CUDA_ATTENTION_BACKENDS on a GPU, SDPA's own choice on CPU."""
    return sdpa_kernel(CUDA_ATTENTION_BACKENDS) if x.is_cuda else contextlib.nullcontext()


# Whether the model's linear layers multiply in bf16 (`bf16_matmuls`); everything else stays fp32.
_BF16_MATMULS = contextvars.ContextVar("bf16_matmuls", default=False)


@contextlib.contextmanager
def bf16_matmuls() -> Iterator[None]:
    """Within this context, every linear layer of the model (projections, feed-forward, softmax layer) casts
    its input and weight to bf16, multiplies, and returns fp32; attention's small batched products, norms,
    softmax and the loss stay fp32. On a CPU with native bf16 (avx512_bf16, AMX) these products run 3-6x
    faster than fp32 at the chapters' sizes; torch.autocast would also run the elementwise operations between
    them in bf16, which this AMD EPYC does 1-3x slower than fp32, and cast at every boundary between them."""
    token = _BF16_MATMULS.set(True)
    try:
        yield
    finally:
        _BF16_MATMULS.reset(token)


class _Bf16Linear(torch.autograd.Function):
    """x @ weight.T + bias with bf16 operands and fp32 output and gradients (fp32 bias, added in fp32); the
    backward multiplies in bf16 too, from the bf16 copies the forward saved (half the memory of fp32 ones)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        x16, weight16 = x.to(torch.bfloat16), weight.to(torch.bfloat16)
        ctx.save_for_backward(x16, weight16)
        out = F.linear(x16, weight16).float()
        return out if bias is None else out.add_(bias)

    @staticmethod
    def backward(ctx, grad_out: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        x16, weight16 = ctx.saved_tensors
        grad16 = grad_out.to(torch.bfloat16)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad16 @ weight16).float()
        if ctx.needs_input_grad[1]:
            grad_weight = (grad16.flatten(0, -2).t() @ x16.flatten(0, -2)).float()
        if ctx.needs_input_grad[2]:  # False without a bias
            grad_bias = grad_out.flatten(0, -2).sum(0)
        return grad_x, grad_weight, grad_bias


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """F.linear, or its bf16 products within `bf16_matmuls()`."""
    if _BF16_MATMULS.get():
        return _Bf16Linear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """nn.Linear whose product follows `bf16_matmuls()` (same parameters and state-dict keys)."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


@dataclass
class ModelConfig:
    """Everything that fixes a model's architecture and parameter count."""

    arch: str = "encdec"
    vocab_size: int = 8000
    d_model: int = 128
    n_heads: int = 4
    head_dim: int | None = None  # None: d_model // n_heads
    d_ff: int = 512
    enc_layers: int = 2
    dec_layers: int = 2  # for the language models: the depth of their single stack
    norm_position: str = "pre"  # "pre" (Xiong et al.; Ghorbani, Fernandes) or "post" (Zhang et al.'s default)
    norm: str = "layernorm"  # or "rmsnorm": scale-only, as in T5
    activation: str = "relu"  # "relu", "gelu" or "gated-gelu" (T5 v1.1)
    position: str = "sinusoidal"  # "sinusoidal", "learned" (absolute) or "relative" (T5 bucketed bias)
    max_positions: int = 512  # length limit of learned positions
    relative_buckets: int = 32
    relative_max_distance: int = 128
    share_embeddings: bool = False  # one embedding table for source and target tokens
    tie_softmax: bool = False  # the output projection reuses the target embedding
    bias: bool = True  # biases in the attention, feed-forward and output projections
    dropout: float = 0.1  # on residual branches and embeddings
    attention_dropout: float = 0.1
    activation_dropout: float = 0.1
    # How residual, embedding and activation dropout draw their masks: "bernoulli" is torch's F.dropout, one
    # draw per element; "random16" cuts four 16-bit numbers out of each 64-bit draw, several times cheaper
    # where torch's Bernoulli generator runs serially (CPUs on which PyTorch does not use MKL's), with p
    # rounded to 2^-16. The default since issue 37; runs recorded before it drew "bernoulli" masks.
    dropout_mask: str = "random16"
    # How attention dropout draws its mask: "bernoulli" inside torch's attention kernel (on CPU that forces
    # SDPA's unfused math path and its serial Bernoulli draws), "random16" in our own attention, which
    # computes the same probabilities and drops them with `Dropout(p, "random16")`. The default since issue
    # 37; on CUDA "bernoulli" lets SDPA use its fused kernels.
    attention_dropout_mask: str = "random16"

    def __post_init__(self):
        for key in ("d_model", "n_heads"):
            if getattr(self, key) < 1:
                raise ValueError(f"ModelConfig.{key}={getattr(self, key)} must be at least 1")
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"ModelConfig: d_model={self.d_model} is not divisible by "
                    f"n_heads={self.n_heads}; set head_dim"
                )
            self.head_dim = self.d_model // self.n_heads
        for key, valid in (
            ("arch", ARCHITECTURES),
            ("norm_position", NORM_POSITIONS),
            ("norm", NORMS),
            ("activation", ACTIVATIONS),
            ("position", POSITIONS),
            ("dropout_mask", DROPOUT_MASKS),
            ("attention_dropout_mask", DROPOUT_MASKS),
        ):
            if getattr(self, key) not in valid:
                raise ValueError(f"ModelConfig.{key}={getattr(self, key)!r}: expected one of {valid}")
        for key in ("vocab_size", "d_model", "n_heads", "head_dim", "d_ff", "dec_layers", "max_positions"):
            if getattr(self, key) < 1:
                raise ValueError(f"ModelConfig.{key}={getattr(self, key)} must be at least 1")
        if self.is_lm and self.enc_layers != 0:
            raise ValueError(
                f"ModelConfig.enc_layers={self.enc_layers}: arch {self.arch!r} is a single stack; "
                "set its depth with dec_layers and enc_layers: 0"
            )
        if not self.is_lm and self.enc_layers < 1:
            raise ValueError(
                f"ModelConfig.enc_layers={self.enc_layers}: encdec needs at least one encoder layer"
            )
        for key in ("dropout", "attention_dropout", "activation_dropout"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise ValueError(f"ModelConfig.{key}={getattr(self, key)} must be in [0, 1)")

    @property
    def is_lm(self) -> bool:
        return self.arch != "encdec"

    @property
    def attention_dim(self) -> int:
        """Width of the concatenated attention heads (n_heads * head_dim)."""
        return self.n_heads * self.head_dim

    def replace(self, **changes) -> ModelConfig:
        return dataclasses.replace(self, **changes)


@dataclass
class ModelOutput:
    tgt_logits: Tensor  # [B, T, V]: tgt_logits[:, t] predicts tgt_out[:, t]
    src_logits: Tensor | None = None  # [B, S, V], causallm only: src_logits[:, s] predicts src[:, s + 1]


def make_norm(cfg: ModelConfig) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return nn.RMSNorm(cfg.d_model, eps=1e-6)
    return nn.LayerNorm(cfg.d_model)


class Dropout(nn.Module):
    """Dropout with rate `p` and the mask generator `mask` (`ModelConfig.dropout_mask`).

    "random16" keeps an element when its 16 random bits, read as a signed number, are at least a threshold
    that leaves a share p16 = round(p * 2^16) / 2^16 below it, and scales the kept ones by 1 / (1 - p16):
    the expectation of torch's dropout, at a rate rounded by less than 1e-5.
    """

    def __init__(self, p: float, mask: str = "bernoulli"):
        super().__init__()
        if mask not in DROPOUT_MASKS:
            raise ValueError(f"Dropout mask {mask!r}: expected one of {DROPOUT_MASKS}")
        self.p, self.mask = p, mask
        dropped = round(p * 2**16)
        self.threshold = dropped - 2**15
        self.scale = 2**16 / (2**16 - dropped)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.mask == "bernoulli":
            return F.dropout(x, self.p, training=True)
        n = x.numel()
        draws = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device).random_(-(2**63), None)
        keep = draws.view(torch.int16)[:n].view(x.shape) >= self.threshold
        return x * keep.to(x.dtype).mul_(self.scale)

    def extra_repr(self) -> str:
        return f"p={self.p}, mask={self.mask}"


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gated = cfg.activation == "gated-gelu"
        # The gated variant's two input projections are fused into one matmul; the count is the same.
        self.w_in = Linear(cfg.d_model, cfg.d_ff * (2 if self.gated else 1), bias=cfg.bias)
        self.w_out = Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.activation = F.relu if cfg.activation == "relu" else F.gelu
        self.dropout = Dropout(cfg.activation_dropout, cfg.dropout_mask)

    def forward(self, x: Tensor) -> Tensor:
        h = self.w_in(x)
        if self.gated:
            gate, value = h.chunk(2, dim=-1)
            h = F.gelu(gate) * value
        else:
            h = self.activation(h)
        return self.w_out(self.dropout(h))


class Attention(nn.Module):
    """Multi-head attention whose keys and values are computed by the caller (so they can be cached)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.head_dim, self.width = cfg.n_heads, cfg.head_dim, cfg.attention_dim
        # Query, key and value projections in one matrix: self-attention makes them in a single matmul.
        self.in_proj = Linear(cfg.d_model, 3 * cfg.attention_dim, bias=cfg.bias)
        self.out = Linear(cfg.attention_dim, cfg.d_model, bias=cfg.bias)
        self.dropout = cfg.attention_dropout
        # random16 masks need the probabilities, which SDPA keeps inside its kernel
        self.own_dropout = (
            Dropout(cfg.attention_dropout, "random16") if cfg.attention_dropout_mask == "random16" else None
        )

    def _split_heads(self, x: Tensor) -> Tensor:
        return x.unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)  # [B, H, L, head_dim]

    def _project(self, x: Tensor, rows: slice) -> Tensor:
        bias = None if self.in_proj.bias is None else self.in_proj.bias[rows]
        return linear(x, self.in_proj.weight[rows], bias)

    def queries(self, x: Tensor) -> Tensor:
        return self._split_heads(self._project(x, slice(0, self.width)))

    def keys_values(self, x: Tensor) -> tuple[Tensor, Tensor]:
        keys, values = self._project(x, slice(self.width, None)).chunk(2, dim=-1)
        return self._split_heads(keys), self._split_heads(values)

    def queries_keys_values(self, x: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        queries, keys, values = (self._split_heads(t) for t in self.in_proj(x).chunk(3, dim=-1))
        return queries, (keys, values)

    def forward(
        self, queries: Tensor, kv: tuple[Tensor, Tensor], mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        """Queries and keys/values [B, H, L, head_dim]; mask: bool (True: may attend) or additive."""
        if mask is not None and mask.is_floating_point():
            mask = mask.to(queries.dtype)  # under autocast the queries are bf16 and SDPA wants matching masks
        if self.training and self.dropout > 0 and self.own_dropout is not None:
            out = self._attend_with_dropout(queries, kv, mask, is_causal)
        else:
            with attention_kernels(queries):
                out = F.scaled_dot_product_attention(
                    queries,
                    *kv,
                    attn_mask=mask,
                    dropout_p=self.dropout if self.training else 0.0,
                    is_causal=is_causal,
                )
        return self.out(out.transpose(1, 2).flatten(2))

    def _attend_with_dropout(
        self, queries: Tensor, kv: tuple[Tensor, Tensor], mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        """SDPA's arithmetic (softmax of scaled scores plus mask, top-left causal), random16 dropout."""
        keys, values = kv
        scores = torch.matmul(queries, keys.transpose(-2, -1)).mul_(self.head_dim**-0.5)
        if is_causal:
            mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
        if mask is not None and mask.dtype == torch.bool:
            scores = scores.masked_fill_(~mask, float("-inf"))
        elif mask is not None:
            scores = scores + mask
        return torch.matmul(self.own_dropout(torch.softmax(scores, dim=-1)), values)


class Block(nn.Module):
    """Self-attention, optional cross-attention and feed-forward, each a residual sublayer (pre/post-norm)."""

    def __init__(self, cfg: ModelConfig, cross_attention: bool):
        super().__init__()
        self.pre_norm = cfg.norm_position == "pre"
        self.self_attn, self.self_attn_norm = Attention(cfg), make_norm(cfg)
        self.cross_attn = Attention(cfg) if cross_attention else None
        self.cross_attn_norm = make_norm(cfg) if cross_attention else None
        self.ffn, self.ffn_norm = FeedForward(cfg), make_norm(cfg)
        self.dropout = Dropout(cfg.dropout, cfg.dropout_mask)

    def _input(self, x: Tensor, norm: nn.Module) -> Tensor:
        return norm(x) if self.pre_norm else x

    def _residual(self, x: Tensor, update: Tensor, norm: nn.Module) -> Tensor:
        x = x + self.dropout(update)
        return x if self.pre_norm else norm(x)

    def self_keys_values(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values this block's self-attention derives from states x (as if x were its input)."""
        return self.self_attn.keys_values(self._input(x, self.self_attn_norm))

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None,
        is_causal: bool = False,
        prefix_kv: tuple[Tensor, Tensor] | None = None,
        memory_kv: tuple[Tensor, Tensor] | None = None,
        memory_mask: Tensor | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Returns the new states and the self-attention keys/values: prefix_kv (cache, source) + x's own."""
        queries, kv = self.self_attn.queries_keys_values(self._input(x, self.self_attn_norm))
        if prefix_kv is not None:
            kv = (torch.cat([prefix_kv[0], kv[0]], dim=2), torch.cat([prefix_kv[1], kv[1]], dim=2))
        x = self._residual(x, self.self_attn(queries, kv, mask, is_causal), self.self_attn_norm)
        if self.cross_attn is not None:
            queries = self.cross_attn.queries(self._input(x, self.cross_attn_norm))
            x = self._residual(x, self.cross_attn(queries, memory_kv, memory_mask), self.cross_attn_norm)
        x = self._residual(x, self.ffn(self._input(x, self.ffn_norm)), self.ffn_norm)
        return x, kv


class RelativePositionBias(nn.Module):
    """T5's bucketed relative position bias: a learned scalar per (bucket, head) per stack."""

    def __init__(self, cfg: ModelConfig, bidirectional: bool):
        super().__init__()
        self.bidirectional = bidirectional
        self.n_buckets, self.max_distance = cfg.relative_buckets, cfg.relative_max_distance
        self.bias = nn.Embedding(cfg.relative_buckets, cfg.n_heads)
        nn.init.zeros_(self.bias.weight)

    def _bucket(self, relative: Tensor) -> Tensor:
        n_buckets, bucket = self.n_buckets, torch.zeros_like(relative)
        if self.bidirectional:
            n_buckets //= 2
            bucket = (relative > 0).long() * n_buckets
            distance = relative.abs()
        else:
            distance = (-relative).clamp(min=0)
        exact = n_buckets // 2  # half the buckets are exact distances, the rest grow logarithmically
        log_bucket = exact + (
            torch.log(distance.float().clamp(min=1) / exact)
            / math.log(self.max_distance / exact)
            * (n_buckets - exact)
        ).long().clamp(max=n_buckets - 1)
        return bucket + torch.where(distance < exact, distance, log_bucket)

    def forward(self, query_positions: Tensor, key_positions: Tensor) -> Tensor:
        """Additive bias [1, H, Lq, Lk] for queries and keys at the given positions."""
        buckets = self._bucket(key_positions[None, :] - query_positions[:, None])
        return self.bias(buckets).permute(2, 0, 1).unsqueeze(0)


class TokenEmbedding(nn.Module):
    """Token embedding scaled by sqrt(d_model) plus an absolute position encoding (none if relative)."""

    def __init__(self, cfg: ModelConfig, tokens: nn.Embedding):
        super().__init__()
        self.tokens, self.scale, self.position = tokens, math.sqrt(cfg.d_model), cfg.position
        self.learned = nn.Embedding(cfg.max_positions, cfg.d_model) if cfg.position == "learned" else None
        inv_freq = torch.exp(torch.arange(0, cfg.d_model, 2).float() * (-math.log(10000.0) / cfg.d_model))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids: Tensor, positions: Tensor) -> Tensor:
        x = self.tokens(ids) * self.scale
        if self.position == "sinusoidal":
            angles = positions.float()[:, None] * self.inv_freq[None, :]
            x = x + torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)[:, : x.shape[-1]]
        elif self.position == "learned":
            x = x + self.learned(positions)
        return x


@dataclass
class DecodingState:
    """Per-layer key/value caches for incremental decoding; every tensor has the batch (or beam) first."""

    self_kv: list[tuple[Tensor, Tensor]]  # what target queries attend to in self-attention, per layer
    key_real: Tensor  # [B, K] bool: False for source padding among the cached keys
    key_positions: Tensor  # [K]: the position of each cached key (for the relative bias)
    memory_kv: list[tuple[Tensor, Tensor]] | None  # encdec: cross-attention keys/values per layer
    memory_mask: Tensor | None  # encdec: [B, 1, 1, S]
    step: int = 0

    def reorder(self, index: Tensor, within_sentences: bool = False) -> None:
        """Keep the rows in `index` (beam search expands and reorders hypotheses with it). With
        within_sentences, rows keep their sources, so the encoder memory (the same for them) is left alone."""
        self.self_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.self_kv]
        self.key_real = self.key_real.index_select(0, index)
        if self.memory_kv is not None and not within_sentences:
            self.memory_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.memory_kv]
            self.memory_mask = self.memory_mask.index_select(0, index)


def _source_keys(src: Tensor) -> Tensor:
    """[B, S] bool: the source positions that may be attended to, i.e. the real tokens. An empty (all-PAD)
    source keeps its first position, so that attention over it has one key instead of none (NaN)."""
    keys = src.ne(PAD)
    keys[:, 0] = True
    return keys


def _causal(n: int, device: torch.device) -> Tensor:
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def _source_mask(src: Tensor, causal: bool) -> Tensor:
    """[B, S, S]: source queries see the real source tokens (only the earlier ones if causal), and always
    themselves, so that no softmax row is empty even for a padding query."""
    n = src.shape[1]
    allowed = _source_keys(src)[:, None, :].expand(-1, n, -1)
    if causal:
        allowed = allowed & _causal(n, src.device)
    return allowed | torch.eye(n, dtype=torch.bool, device=src.device)


def _target_mask(src: Tensor, n_tgt: int) -> Tensor:
    """[B, T, S + T]: target queries see the real source tokens and the targets up to their own position."""
    return torch.cat(
        [
            _source_keys(src)[:, None, :].expand(-1, n_tgt, -1),
            _causal(n_tgt, src.device).expand(len(src), -1, -1),
        ],
        dim=2,
    )


def _masked(allowed: Tensor, bias: Tensor | None) -> Tensor:
    """A boolean mask (True = may attend), or the additive bias with -inf where attention is not allowed."""
    return allowed if bias is None else bias.masked_fill(~allowed, float("-inf"))


class NMTModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        src_tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        tgt_tokens = src_tokens if cfg.share_embeddings else nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.src_embed = TokenEmbedding(cfg, src_tokens)
        self.tgt_embed = TokenEmbedding(cfg, tgt_tokens)
        relative = cfg.position == "relative"
        if cfg.is_lm:
            self.encoder = self.encoder_norm = self.encoder_bias = None
        else:
            self.encoder = nn.ModuleList(Block(cfg, cross_attention=False) for _ in range(cfg.enc_layers))
            self.encoder_norm = make_norm(cfg) if cfg.norm_position == "pre" else nn.Identity()
            self.encoder_bias = RelativePositionBias(cfg, bidirectional=True) if relative else None
        self.decoder = nn.ModuleList(Block(cfg, cross_attention=not cfg.is_lm) for _ in range(cfg.dec_layers))
        self.decoder_norm = make_norm(cfg) if cfg.norm_position == "pre" else nn.Identity()
        # The encdec decoder only looks back; the language models' separate positions need both directions.
        self.decoder_bias = RelativePositionBias(cfg, bidirectional=cfg.is_lm) if relative else None
        self.lm_head = None if cfg.tie_softmax else Linear(cfg.d_model, cfg.vocab_size, bias=cfg.bias)
        self.dropout = Dropout(cfg.dropout, cfg.dropout_mask)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, TokenEmbedding):
            nn.init.normal_(module.tokens.weight, std=self.cfg.d_model**-0.5)  # unit scale after sqrt(d)
            if module.learned is not None:
                nn.init.normal_(module.learned.weight, std=1.0)

    # ----- parameter counts -----

    def parameter_counts(self) -> dict[str, int]:
        """Parameters per component: embedding, softmax, encoder, decoder (shared tensors counted once)."""
        counts, seen = {"embedding": 0, "softmax": 0, "encoder": 0, "decoder": 0}, set()
        for name, param in self.named_parameters(remove_duplicate=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            top = name.split(".")[0]  # encoder, encoder_norm, encoder_bias, decoder..., lm_head, src_embed
            if top == "lm_head":
                component = "softmax"
            elif top.startswith(("encoder", "decoder")):
                component = top.split("_")[0]
            else:
                component = "embedding"
            counts[component] += param.numel()
        return counts

    def get_num_params(self, non_embedding: bool = True) -> int:
        """Total parameters; non_embedding leaves out the embedding and softmax layers (the papers' N)."""
        counts = self.parameter_counts()
        if non_embedding:
            return counts["encoder"] + counts["decoder"]
        return sum(counts.values())

    # ----- shared pieces -----

    def _logits(self, h: Tensor) -> Tensor:
        if self.lm_head is None:
            return linear(h, self.tgt_embed.tokens.weight)
        return self.lm_head(h)

    def _bias(self, stack_bias: RelativePositionBias | None, queries: Tensor, keys: Tensor) -> Tensor | None:
        return None if stack_bias is None else stack_bias(queries, keys)

    def _embed(self, embed: TokenEmbedding, ids: Tensor, first_position: int = 0) -> tuple[Tensor, Tensor]:
        end = first_position + ids.shape[1]
        if self.cfg.position == "learned" and end > self.cfg.max_positions:  # checked here: no device sync
            raise ValueError(
                f"a sequence of {end} positions exceeds ModelConfig.max_positions={self.cfg.max_positions}"
            )
        positions = torch.arange(first_position, end, device=ids.device)
        return self.dropout(embed(ids, positions)), positions

    def _run_source(
        self, src: Tensor, layers: nn.ModuleList, bias: RelativePositionBias | None, causal: bool
    ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """The source alone through a stack: its top states and each layer's self-attention keys/values."""
        x, positions = self._embed(self.src_embed, src)
        mask = _masked(_source_mask(src, causal)[:, None], self._bias(bias, positions, positions))
        layer_kv = []
        for block in layers:
            x, kv = block(x, mask)
            layer_kv.append(kv)
        return x, layer_kv

    def encode(self, src: Tensor) -> Tensor:
        """encdec: the encoder's top states [B, S, D] (after its final norm)."""
        x, _ = self._run_source(src, self.encoder, self.encoder_bias, causal=False)
        return self.encoder_norm(x)

    # ----- training forward -----

    def forward(self, src: Tensor, tgt_in: Tensor) -> ModelOutput:
        """Teacher-forced logits for tgt_in = BOS + target (and for the source, for causallm)."""
        if self.cfg.arch == "encdec":
            return ModelOutput(self._logits(self._forward_encdec(src, tgt_in)))
        if self.cfg.arch == "prefixlm_toponly":
            return ModelOutput(self._logits(self._forward_toponly(src, tgt_in)))
        src_h, tgt_h = self._forward_concatenated(src, tgt_in)
        src_logits = self._logits(src_h) if self.cfg.arch == "causallm" else None
        return ModelOutput(self._logits(tgt_h), src_logits)

    def _forward_encdec(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        memory = self.encode(src)
        memory_mask = _source_keys(src)[:, None, None, :]
        y, positions = self._embed(self.tgt_embed, tgt_in)
        bias = self._bias(self.decoder_bias, positions, positions)
        mask = (
            None if bias is None else _masked(_causal(len(positions), src.device), bias)
        )  # without a bias, SDPA's fast causal path
        for block in self.decoder:
            memory_kv = block.cross_attn.keys_values(memory)
            y, _ = block(y, mask, is_causal=bias is None, memory_kv=memory_kv, memory_mask=memory_mask)
        return self.decoder_norm(y)

    def _forward_concatenated(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        x_src, src_positions = self._embed(self.src_embed, src)
        x_tgt, tgt_positions = self._embed(self.tgt_embed, tgt_in)
        x, positions = torch.cat([x_src, x_tgt], 1), torch.cat([src_positions, tgt_positions])
        n_src, n_tgt = src.shape[1], tgt_in.shape[1]
        sources_see_no_target = torch.zeros(len(src), n_src, n_tgt, dtype=torch.bool, device=src.device)
        source_rows = torch.cat(
            [_source_mask(src, self.cfg.arch.startswith("causallm")), sources_see_no_target], 2
        )
        allowed = torch.cat([source_rows, _target_mask(src, n_tgt)], dim=1)[:, None]
        mask = _masked(allowed, self._bias(self.decoder_bias, positions, positions))
        for block in self.decoder:
            x, _ = block(x, mask)
        x = self.decoder_norm(x)
        return x[:, : src.shape[1]], x[:, src.shape[1] :]

    def _forward_toponly(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        top, _ = self._run_source(src, self.decoder, self.decoder_bias, causal=False)
        y, tgt_positions = self._embed(self.tgt_embed, tgt_in)
        key_positions = torch.cat([torch.arange(src.shape[1], device=src.device), tgt_positions])
        mask = _masked(
            _target_mask(src, tgt_in.shape[1])[:, None],
            self._bias(self.decoder_bias, tgt_positions, key_positions),
        )
        for block in self.decoder:
            y, _ = block(y, mask, prefix_kv=block.self_keys_values(top))
        return self.decoder_norm(y)

    # ----- incremental decoding -----

    @torch.no_grad()
    def start_decoding(self, src: Tensor) -> DecodingState:
        """Encodes the source and fills the caches that target steps attend to."""
        batch, device = len(src), src.device
        if self.cfg.arch == "encdec":
            memory = self.encode(src)
            empty = memory.new_zeros(batch, self.cfg.n_heads, 0, self.cfg.head_dim)
            return DecodingState(
                self_kv=[(empty, empty) for _ in self.decoder],
                key_real=torch.zeros(batch, 0, dtype=torch.bool, device=device),
                key_positions=torch.zeros(0, dtype=torch.long, device=device),
                memory_kv=[block.cross_attn.keys_values(memory) for block in self.decoder],
                memory_mask=_source_keys(src)[:, None, None, :],
            )
        causal = self.cfg.arch.startswith("causallm")
        top, layer_kv = self._run_source(src, self.decoder, self.decoder_bias, causal=causal)
        if self.cfg.arch == "prefixlm_toponly":
            layer_kv = [block.self_keys_values(top) for block in self.decoder]
        return DecodingState(
            self_kv=layer_kv,
            key_real=_source_keys(src),
            key_positions=torch.arange(src.shape[1], device=device),
            memory_kv=None,
            memory_mask=None,
        )

    @torch.no_grad()
    def decode_step(self, state: DecodingState, tokens: Tensor) -> Tensor:
        """Feeds one target token per row ([B]); returns next-token logits [B, V] and extends the caches."""
        y, positions = self._embed(self.tgt_embed, tokens[:, None], state.step)
        state.key_real = torch.cat([state.key_real, state.key_real.new_ones(len(tokens), 1)], 1)
        state.key_positions = torch.cat([state.key_positions, positions])
        bias = self._bias(self.decoder_bias, positions, state.key_positions)
        # The encdec decoder's cache holds target keys only, all real: without a bias it needs no mask.
        mask = (
            None
            if state.memory_kv is not None and bias is None
            else _masked(state.key_real[:, None, None, :], bias)
        )
        for i, block in enumerate(self.decoder):
            memory_kv = None if state.memory_kv is None else state.memory_kv[i]
            y, state.self_kv[i] = block(
                y, mask, prefix_kv=state.self_kv[i], memory_kv=memory_kv, memory_mask=state.memory_mask
            )
        state.step += 1
        return self._logits(self.decoder_norm(y))[:, 0]


def build_model(cfg: ModelConfig) -> NMTModel:
    """The model for a config, freshly initialised (seed torch beforehand for reproducible weights)."""
    return NMTModel(cfg)
