"""Batching: padding and real-token fraction, epochs without loss or repeats, mixtures, exact resume."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
import torch

from nmtscale.engine.batching import BatchStream, Example, collate, eval_batches, mixture_probabilities
from nmtscale.engine.tokenizer import BOS, EOS, PAD


def make_examples(n: int, task: int = 0, seed: int = 0) -> list[Example]:
    """Examples whose first source token is a unique id (>= 4), so batches can be traced back to them."""
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        length = rng.randint(1, 40)
        src = [4 + i] + [rng.randint(4, 99) for _ in range(max(0, length + rng.randint(-3, 3)))]
        examples.append(Example(src=src, tgt=[rng.randint(4, 99) for _ in range(length)], task=task))
    return examples


def example_ids(batch) -> list[int]:
    return [int(first) - 4 for first in batch.src[:, 0]]


def test_collate_pads_and_counts_real_tokens():
    batch = collate([Example([5, 6, 7], [8, 9], task=1), Example([10], [11, 12, 13, 14])])
    assert batch.src.tolist() == [[5, 6, 7], [10, PAD, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 8, 9, PAD, PAD], [BOS, 11, 12, 13, 14]]
    assert batch.tgt_out.tolist() == [[8, 9, EOS, PAD, PAD], [11, 12, 13, 14, EOS]]
    assert batch.task.tolist() == [1, 0]
    assert (batch.n_src_tokens, batch.n_tgt_tokens) == (4, 8)
    assert batch.real_fraction == pytest.approx((4 + 8) / (6 + 10))
    assert batch.to("cpu").tgt_out.dtype == torch.long and len(batch) == 2


def test_eval_batches_cover_every_example_once_in_order():
    examples = make_examples(300)
    batches = list(eval_batches(examples, max_tokens=200))
    assert list(itertools.chain.from_iterable(example_ids(b) for b in batches)) == list(range(300))
    assert all(b.tgt_out.numel() <= 200 for b in batches)


def test_one_task_walks_whole_epochs_without_loss_or_repeats():
    examples = make_examples(1000)
    stream = BatchStream([examples], max_tokens=400, seed=3)
    for _epoch in range(2):
        seen: list[int] = []
        while len(seen) < len(examples):
            batch = next(stream)
            assert batch.tgt_out.numel() <= 400 or len(batch) == 1
            seen += example_ids(batch)
        assert sorted(seen) == list(range(len(examples)))


def test_length_bucketing_gives_mostly_real_tokens():
    stream = BatchStream([make_examples(3000)], max_tokens=1000, seed=0)
    batches = list(itertools.islice(stream, 100))
    real = sum(b.n_src_tokens + b.n_tgt_tokens for b in batches)
    total = sum(b.src.numel() + b.tgt_out.numel() for b in batches)
    assert real / total >= 0.9
    assert sum(b.n_tgt_tokens for b in batches) / len(batches) > 0.85 * 1000


def test_mixture_proportions_follow_the_weights():
    tasks = [make_examples(500, task=t, seed=t) for t in range(3)]
    weights = [0.6, 0.3, 0.1]
    stream = BatchStream(tasks, max_tokens=500, seed=7, weights=weights)
    drawn: Counter[int] = Counter()
    while sum(drawn.values()) < 10_000:
        drawn.update(next(stream).task.tolist())
    total = sum(drawn.values())
    for task, weight in enumerate(weights):
        assert drawn[task] / total == pytest.approx(weight, abs=0.02)
    assert stream.tokens_seen[0] > stream.tokens_seen[1] > stream.tokens_seen[2] > 0


def test_temperature_sampling_flattens_task_sizes():
    sizes = [8000, 2000]
    assert mixture_probabilities(sizes).tolist() == pytest.approx([0.8, 0.2])
    assert mixture_probabilities(sizes, temperature=2.0).tolist() == pytest.approx([2 / 3, 1 / 3])
    assert mixture_probabilities(sizes, temperature=1e6).tolist() == pytest.approx([0.5, 0.5], abs=1e-4)
    tasks = [make_examples(800, task=0), make_examples(200, task=1, seed=1)]
    stream = BatchStream(tasks, max_tokens=500, seed=1, temperature=2.0)
    drawn: Counter[int] = Counter()
    while sum(drawn.values()) < 10_000:
        drawn.update(next(stream).task.tolist())
    assert drawn[1] / sum(drawn.values()) == pytest.approx(1 / 3, abs=0.02)


def test_bad_mixture_settings_are_errors():
    with pytest.raises(ValueError, match="not both"):
        mixture_probabilities([1, 1], weights=[1, 1], temperature=2.0)
    with pytest.raises(ValueError, match="2 mixture weights for 3 tasks"):
        mixture_probabilities([1, 1, 1], weights=[1, 1])
    with pytest.raises(ValueError, match="every task needs examples"):
        BatchStream([make_examples(5), []], max_tokens=100, seed=0)


def test_state_dict_resume_gives_the_identical_continuation():
    tasks = [make_examples(300, task=0), make_examples(100, task=1, seed=1)]
    stream = BatchStream(tasks, max_tokens=300, seed=11, weights=[0.5, 0.5])
    for _ in range(137):  # crosses several pools and epochs of the small task
        next(stream)
    state = stream.state_dict()
    expected = [next(stream) for _ in range(60)]

    resumed = BatchStream(tasks, max_tokens=300, seed=11, weights=[0.5, 0.5])
    resumed.load_state_dict(state)
    for want, got in zip(expected, (next(resumed) for _ in range(60)), strict=True):
        assert torch.equal(want.src, got.src) and torch.equal(want.tgt_out, got.tgt_out)
    assert resumed.tokens_seen == stream.tokens_seen

    with pytest.raises(ValueError, match="seed"):
        BatchStream(tasks, max_tokens=300, seed=12).load_state_dict(state)


def test_same_seed_same_order_different_seed_different_order():
    examples = make_examples(500)

    def first_ids(seed: int) -> list[int]:
        stream = BatchStream([examples], max_tokens=300, seed=seed)
        return list(itertools.chain.from_iterable(example_ids(next(stream)) for _ in range(20)))

    assert first_ids(5) == first_ids(5)
    assert first_ids(5) != first_ids(6)
    assert np.unique(first_ids(5)).size == len(first_ids(5))
