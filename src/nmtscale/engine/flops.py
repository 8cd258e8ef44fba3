"""Analytic FLOPs of the five architectures, as Zhang et al. compare them, and model FLOP utilisation.

What is counted: the matrix multiplications of one forward pass, 2 FLOPs per multiply-add: every linear
projection (attention query/key/value/output, feed-forward, output softmax layer) and the two attention
products (scores and weighted values) over the full, dense score matrix, causal or not, as dense kernels do.
Not counted: embeddings lookups, norms, activations, softmax, dropout, masking (a few percent at these sizes).
Training costs 3x the forward pass (the backward pass computes gradients for both inputs and weights of every
matmul, 2x the forward), the usual approximation (Kaplan et al. 2020); the tests check the forward count
against `torch.utils.flop_counter.FlopCounterMode` exactly.
"""

from __future__ import annotations

from nmtscale.engine.model import ModelConfig


def forward_flops(cfg: ModelConfig, src_len: int, tgt_len: int) -> int:
    """Matmul FLOPs of one forward pass over one sentence pair (source and target-input lengths, unpadded)."""
    d, attention_dim, vocab = cfg.d_model, cfg.attention_dim, cfg.vocab_size
    ffn_per_token = 2 * d * cfg.d_ff * (3 if cfg.activation == "gated-gelu" else 2)

    def projections(n_queries: int, n_new_keys: int) -> int:
        # query and output projections for each query, key and value projections for each new key
        return 2 * n_queries * 2 * d * attention_dim + 2 * n_new_keys * 2 * d * attention_dim

    def attention(n_queries: int, n_keys: int) -> int:
        return 2 * 2 * n_queries * n_keys * attention_dim  # scores and weighted values

    def self_attention_layer(n: int) -> int:
        return projections(n, n) + attention(n, n) + n * ffn_per_token

    if cfg.arch == "encdec":
        encoder = cfg.enc_layers * self_attention_layer(src_len)
        cross = projections(tgt_len, src_len) + attention(tgt_len, src_len)
        decoder = cfg.dec_layers * (self_attention_layer(tgt_len) + cross)
        return encoder + decoder + 2 * tgt_len * d * vocab
    if cfg.arch == "prefixlm_toponly":
        source = cfg.dec_layers * self_attention_layer(src_len)
        # each target layer projects the top-layer source states to its own keys and values
        target_layer = (
            projections(tgt_len, src_len + tgt_len)
            + attention(tgt_len, src_len + tgt_len)
            + tgt_len * ffn_per_token
        )
        return source + cfg.dec_layers * target_layer + 2 * tgt_len * d * vocab
    total_len = src_len + tgt_len
    logit_positions = total_len if cfg.arch == "causallm" else tgt_len  # causallm also predicts the source
    return cfg.dec_layers * self_attention_layer(total_len) + 2 * logit_positions * d * vocab


def training_flops_per_target_token(cfg: ModelConfig, src_len: int, tgt_len: int) -> float:
    """Training FLOPs (forward + backward = 3x forward) per target token for sentences of these lengths."""
    return 3 * forward_flops(cfg, src_len, tgt_len) / tgt_len
