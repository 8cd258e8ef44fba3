"""The one process pool behind sweeps, evaluations and synthetic-data generation.

Workers are spawned, not forked: a forked worker would inherit this process's torch thread pools and locks.
Each runs torch on `threads` threads (two single-thread workers use two cores best for small models) and ends
itself when the process that started it is gone (killed, or ended), instead of working on as an orphan.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import torch


def _start_worker(parent: int, threads: int) -> None:
    torch.set_num_threads(threads)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def spawn_pool(workers: int, threads: int = 1) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes with `threads` torch threads each, watching their parent."""
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(os.getpid(), threads),
    )


def parallel_map(
    function: Callable[..., Any], arguments: Iterable[tuple], workers: int = 1, threads: int = 1
) -> list[Any]:
    """`function(*args)` for every tuple of `arguments`, in order: in this process when `workers` <= 1,
    else in a spawn pool of `workers` processes with `threads` torch threads each."""
    arguments = list(arguments)
    if workers <= 1:
        return [function(*args) for args in arguments]
    with spawn_pool(workers, threads) as pool:
        return [future.result() for future in [pool.submit(function, *args) for args in arguments]]
