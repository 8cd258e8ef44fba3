"""Published data the fitting machinery is validated on, committed with the project in `data/reference/`
(its README gives the source, commit, licence and protocol).

`chinchilla_csv()` finds the file in the data folder (`$NMTSCALE_DATA` moves it, as for the corpus), or
wherever the environment variable NMTSCALE_CHINCHILLA_CSV points.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from nmtscale.corpus.store import data_dir
from nmtscale.errors import DataError

CHINCHILLA_ENV = "NMTSCALE_CHINCHILLA_CSV"
# Besiroglu et al. 2024 (arXiv 2404.10102): best fit over their start grid, as data/reference/README.md cites.
BESIROGLU_GRID_BEST = {"A": 477.8, "B": 2143.9, "E": 1.817, "alpha": 0.3473, "beta": 0.3672}


def chinchilla_csv() -> Path:
    """Where Epoch AI's extraction of Chinchilla Fig. 4 is: `data/reference/chinchilla_fig4_extracted.csv`."""
    default = data_dir() / "reference" / "chinchilla_fig4_extracted.csv"
    return Path(os.environ.get(CHINCHILLA_ENV, default))


def load_chinchilla_points(path: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Besiroglu et al.'s data protocol: drop the 5 highest losses (240 points remain), D = C / (6 N).

    Returns inputs [n, 2] (N, D) for `nmtscale.laws.chinchilla_law` and the losses [n].
    """
    path = chinchilla_csv() if path is None else Path(path)
    if not path.is_file():
        raise DataError(f"{path}: Chinchilla reference data not found (set {CHINCHILLA_ENV} to its location)")
    frame = pd.read_csv(path)
    missing = [c for c in ("Model Size", "Training FLOP", "loss") if c not in frame]
    if missing:
        raise DataError(f"{path}: missing columns {missing}")
    frame = frame.sort_values("loss").iloc[:-5]
    n = frame["Model Size"].to_numpy(dtype=float)
    return np.column_stack([n, frame["Training FLOP"].to_numpy(dtype=float) / (6 * n)]), frame[
        "loss"
    ].to_numpy()
