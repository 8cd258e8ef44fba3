"""How long a multi-start fit of the Chinchilla law takes on Epoch AI's 240 points.

Besiroglu et al.'s protocol: Huber(1e-3) on log residuals, summed, analytic gradients, minimised from every
point of their 4,500-point grid (or an evenly strided subset with --starts): by the batched L-BFGS over all
starts (default) or by scipy's L-BFGS-B one start at a time. Target: 1,000+ starts in < 30 s.

    .venv/bin/python benchmarks/fit_speed.py [--starts 1000] [--optimiser batched|lbfgsb] [--csv PATH]
"""

from __future__ import annotations

import argparse
import time

from nmtscale import laws
from nmtscale.laws import fitting, reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=None, help="number of grid starts (default: all 4,500)")
    parser.add_argument("--optimiser", choices=("batched", "lbfgsb"), default="batched")
    parser.add_argument(
        "--csv", default=None, help=f"data file (default: ${reference.CHINCHILLA_ENV} or shared)"
    )
    args = parser.parse_args()

    x, y = reference.load_chinchilla_points(args.csv)
    law = laws.chinchilla_law()
    grid = law.start_grid()
    stride = 1 if args.starts is None else max(1, len(grid) // args.starts)
    starts = grid[::stride]

    begin = time.perf_counter()
    fit = fitting.fit_multistart(law, x, y, starts=starts, batched=args.optimiser == "batched")
    wall = time.perf_counter() - begin

    per_start = 1e3 * wall / len(starts)
    print(f"optimiser: {fit.method}")
    print(f"points: {len(y)}  starts: {len(starts)}  wall time: {wall:.1f} s  ({per_start:.1f} ms/start)")
    print(f"best objective (sum of Huber): {fit.objective:.6g}  converged: {fit.converged} ({fit.message})")
    table = fit.table
    print(
        f"starts converged: {table['converged'].mean():.1%}, mean iterations {table['iterations'].mean():.0f}"
    )
    print(f"{'':6} {'fitted':>10} {'Besiroglu':>10} {'rel. diff':>10}")
    for name, value in laws.chinchilla_coefficients(fit.params).items():
        published = reference.BESIROGLU_GRID_BEST[name]
        print(f"{name:6} {value:10.4g} {published:10.4g} {value / published - 1:+10.2%}")


if __name__ == "__main__":
    main()
