"""nmtscale: scaling laws for neural machine translation, reproduced on real data."""

__version__ = "0.1.0"
