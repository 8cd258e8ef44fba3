"""The batched projected L-BFGS: each start finds its own minimum, bounds included."""

import numpy as np
import pytest

from nmtscale.laws.lbfgs import minimize_batched


def rosenbrock(theta):
    """Rosenbrock in the first two coordinates, a shifted quadratic in the third: [S, 3] -> [S], [S, 3]."""
    a, b, c = theta.T
    value = (1 - a) ** 2 + 100 * (b - a**2) ** 2 + (c - 2.0) ** 2
    grad = np.stack([-2 * (1 - a) - 400 * a * (b - a**2), 200 * (b - a**2), 2 * (c - 2.0)], axis=1)
    return value, grad


def test_every_start_reaches_the_minimum():
    starts = np.random.default_rng(0).uniform(-2, 2, (50, 3))
    result = minimize_batched(rosenbrock, starts, np.full(3, -5.0), np.full(3, 5.0))
    assert result.converged.all()
    np.testing.assert_allclose(result.x, np.tile([1.0, 1.0, 2.0], (50, 1)), atol=1e-3)


def test_an_active_bound_is_respected_and_reached():
    starts = np.array([[-1.5, 2.0, 0.0], [0.5, 0.5, 1.0]])
    upper = np.array([5.0, 5.0, 1.5])  # the third coordinate wants 2.0
    result = minimize_batched(rosenbrock, starts, np.full(3, -5.0), upper)
    assert result.converged.all()
    np.testing.assert_allclose(result.x[:, 2], 1.5)
    np.testing.assert_allclose(result.x[:, :2], 1.0, atol=1e-3)
    assert result.fun == pytest.approx(0.25, abs=1e-6)
