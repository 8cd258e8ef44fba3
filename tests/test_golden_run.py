"""The golden run: a tiny fixed run whose loss curve is pinned, so that a change to the model, trainer,
batching or data code that moves training numerics cannot slip by with the engine version unchanged.

Recorded results are only valid for the code that trained them (`nmtscale.record.ENGINE_VERSION` is part of
every run id). When this test fails because you changed training numerics on purpose, bump ENGINE_VERSION and
write the new curve: `.venv/bin/python tests/test_golden_run.py --write`. The tolerance holds across x86 CPUs
and 1-2 threads (float summation order differs between them); a real numerics change moves the curve by far
more. Two curves are pinned: on the numerics every run recorded before issue 37 trained with
(`config.LEGACY_NUMERICS`), and on the engine's default fast path with fp32 products (its random16 masks and
fused kernels); the fast path's bf16 products depend on the processor, and `tests/test_numerics.py` checks
that they learn what the legacy path learns.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from toy import toy_pairs, user_run

from nmtscale import runs
from nmtscale.config import LEGACY_NUMERICS, from_dict, with_numerics
from nmtscale.record import ENGINE_VERSION

# path name -> (its pinned curve, the numerics keys the golden run sets)
PATHS = {
    "legacy": (Path(__file__).parent / "data" / "golden_run.json", LEGACY_NUMERICS),
    "fast-fp32": (
        Path(__file__).parent / "data" / "golden_run_fast_fp32.json",
        {"train.cpu_precision": "fp32"},
    ),
}
STEPS = 40
TOLERANCE = 1e-3  # nats per token; 1 vs 2 threads differ by 1.4e-7 here


def golden_curve(folder: Path, numerics: dict) -> list[dict]:
    """Train the golden run with `numerics` in `folder` (user data written there) and return its curve."""
    for name, pairs in (("train", toy_pairs(300, seed=1)), ("test", toy_pairs(40, seed=2))):
        (folder / f"{name}.tsv").write_text("".join(f"{src}\t{tgt}\n" for src, tgt in pairs))
    summary = runs.run(from_dict(with_numerics(user_run(folder, steps=STEPS, lr=0.03), numerics, "golden")))
    assert summary.finished, summary.reason
    return [
        {"step": p["step"], "train_objective": p["train_objective"], "test_loss": p["test_loss"]["en-de/toy"]}
        for p in summary.curves
    ]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("path", PATHS)
def test_the_golden_run_trains_as_recorded_for_this_engine_version(store, path, threads):
    pinned_file, numerics = PATHS[path]
    golden = json.loads(pinned_file.read_text())
    assert golden["engine_version"] == ENGINE_VERSION, (
        f"ENGINE_VERSION is {ENGINE_VERSION} but {pinned_file} was written by version "
        f"{golden['engine_version']}: "
        "write the curve of the new version (see this module's docstring)"
    )
    torch.set_num_threads(threads)
    curve = golden_curve(store, numerics)
    assert [p["step"] for p in curve] == [p["step"] for p in golden["curve"]]
    for point, pinned in zip(curve, golden["curve"], strict=True):
        for key in ("train_objective", "test_loss"):
            assert point[key] == pytest.approx(pinned[key], abs=TOLERANCE), (
                f"step {point['step']} {key}: {point[key]:.5f}, pinned {pinned[key]:.5f}. Training numerics "
                f"changed: if on purpose, bump nmtscale.record.ENGINE_VERSION and write the new curve "
                f"(`python tests/test_golden_run.py --write`)"
            )


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import os
    import tempfile

    torch.set_num_threads(1)
    for pinned_file, numerics in PATHS.values():
        with tempfile.TemporaryDirectory() as folder:
            os.environ |= {
                key: str(Path(folder) / key)
                for key in ("NMTSCALE_RUNS", "NMTSCALE_RESULTS", "NMTSCALE_CACHE")
            }
            curve = golden_curve(Path(folder), numerics)
        pinned_file.write_text(
            json.dumps({"engine_version": ENGINE_VERSION, "steps": STEPS, "curve": curve}, indent=1) + "\n"
        )
        print(f"wrote {pinned_file}: {len(curve)} points, final test loss {curve[-1]['test_loss']:.4f}")
