"""Published data the fitting machinery is validated on, read from the shared folder beside the repository.

The files are not copied into the repository: `chinchilla_csv()` finds them at `<repo>/../shared/reference/`,
or wherever the environment variable NMTSCALE_CHINCHILLA_CSV points.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from nmtscale.errors import DataError

CHINCHILLA_ENV = "NMTSCALE_CHINCHILLA_CSV"
# Besiroglu et al. 2024 (arXiv 2404.10102): best fit over their start grid, from the README beside the file.
BESIROGLU_GRID_BEST = {"A": 477.8, "B": 2143.9, "E": 1.817, "alpha": 0.3473, "beta": 0.3672}


def chinchilla_csv() -> Path:
    """Where Epoch AI's extraction of Chinchilla Fig. 4 is expected (it may be absent)."""
    default = (
        Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "chinchilla_fig4_extracted.csv"
    )
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
