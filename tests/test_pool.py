"""The one process pool: order, thread count, and the in-process path."""

from __future__ import annotations

import os

import torch

from nmtscale import pool


def describe(value: int) -> tuple[int, int, int]:
    return value * value, torch.get_num_threads(), os.getpid()


def test_parallel_map_keeps_the_order_and_gives_each_worker_its_threads():
    results = pool.parallel_map(describe, [(v,) for v in range(6)], workers=2, threads=1)
    assert [square for square, _, _ in results] == [v * v for v in range(6)]
    assert {threads for _, threads, _ in results} == {1}
    assert os.getpid() not in {pid for _, _, pid in results}


def test_one_worker_runs_in_this_process():
    assert pool.parallel_map(describe, [(3,)], workers=1) == [(9, torch.get_num_threads(), os.getpid())]
