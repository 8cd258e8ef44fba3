"""Law definitions and the quantities derived from them, checked against direct computation."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from nmtscale import laws

NE_BAR, ND_BAR = 120e6, 150e6  # Ghorbani's 6L-6L baseline: ~20M per encoder layer, ~25M per decoder layer
BIVARIATE = {"alpha": 0.35, "pe": 0.25, "pd": 0.45, "L_inf": 1.3}


def law_examples():
    """(law, inputs [n, k], params) for every law shape, with inputs in each law's natural range."""
    rng = np.random.default_rng(0)
    n = rng.uniform(1e7, 1e9, 12)
    weights = (0.1, 0.5, 1.0)
    p = rng.choice(weights, 12)
    unseen_p = np.append(rng.uniform(0.05, 1.0, 11), 1.0)  # p = 1 is the single-task edge of f_hat
    return [
        (laws.power_law(), rng.uniform(1, 50, 12), {"alpha": 2.0, "p": 0.5, "L_inf": 1.1}),
        (laws.power_law(n0=1e8), n, {"alpha": 0.8, "p": 0.3, "L_inf": 1.5}),
        (laws.bivariate_law(NE_BAR, ND_BAR), np.column_stack([n, n[::-1]]), BIVARIATE),
        (
            laws.bivariate_learning_curve_law(NE_BAR, ND_BAR, s0=4000),
            np.column_stack([n, n[::-1], rng.uniform(400, 4000, 12)]),
            {**BIVARIATE, "beta": 0.3, "q": 0.6},
        ),
        (
            laws.chinchilla_law(),
            np.column_stack([n, n * 20]),
            {"a": 6.0, "b": 7.5, "e": 0.6, "alpha": 0.35, "beta": 0.37},
        ),
        (
            laws.joint_law(weights, n0=1e8),
            np.column_stack([n, p]),
            {"alpha": 0.3, "L_inf": 1.2, "beta[0.1]": 2.0, "beta[0.5]": 1.2, "beta[1]": 1.0},
        ),
        (
            laws.joint_law(weights, n0=1e8, higher_is_better=True),
            np.column_stack([n, p]),
            {"alpha": 0.3, "L_inf": 60.0, "beta[0.1]": 20.0, "beta[0.5]": 12.0, "beta[1]": 10.0},
        ),
        (
            laws.weighted_law("eq12", n0=1e8),
            np.column_stack([n, unseen_p]),
            {"beta_1": 1.0, "alpha": 0.3, "L_inf": 1.2, "c1": 0.4, "c2": 0.8, "c3": 1.5},
        ),
        (
            laws.weighted_law("linear", n0=1e8, higher_is_better=True),
            np.column_stack([n, unseen_p]),
            {"beta_1": 10.0, "alpha": 0.3, "L_inf": 60.0, "c1": 0.7},
        ),
    ]


@pytest.mark.parametrize("law, x, params", law_examples(), ids=lambda v: getattr(v, "name", ""))
def test_analytic_jacobian_matches_finite_differences(law, x, params):
    matrix = law.inputs_matrix(x)
    theta = law.vector(params)
    numeric = np.empty((len(matrix), len(theta)))
    for j in range(len(theta)):
        step = 1e-6 * max(1.0, abs(theta[j]))
        up, down = theta.copy(), theta.copy()
        up[j] += step
        down[j] -= step
        numeric[:, j] = (law.predict(matrix, up) - law.predict(matrix, down)) / (2 * step)
    np.testing.assert_allclose(law.jacobian(matrix, theta), numeric, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize(
    "law, x, params", [e for e in law_examples() if e[0].batched], ids=lambda v: getattr(v, "name", "")
)
def test_batched_laws_evaluate_a_stack_of_parameter_vectors_row_by_row(law, x, params):
    matrix = law.inputs_matrix(x)
    stack = law.vector(params) * np.array([[1.0], [0.9], [1.1]])  # [S, P]
    np.testing.assert_allclose(
        law.predict(matrix, stack.T[..., None]), [law.predict(matrix, theta) for theta in stack]
    )
    np.testing.assert_allclose(
        law.jacobian(matrix, stack.T[..., None]), [law.jacobian(matrix, theta) for theta in stack]
    )


def test_bivariate_law_is_ghorbani_eq2():
    law = laws.bivariate_law(NE_BAR, ND_BAR)
    got = law({"Ne": [NE_BAR, 2 * NE_BAR], "Nd": [ND_BAR, ND_BAR / 2]}, BIVARIATE)
    a, pe, pd, l_inf = BIVARIATE.values()
    np.testing.assert_allclose(got, [a + l_inf, a * 0.5**pe * 2**pd + l_inf])


def test_the_learning_curve_law_tends_to_the_bivariate_law():
    curve = laws.bivariate_learning_curve_law(NE_BAR, ND_BAR, s0=4000)
    params = {**BIVARIATE, "beta": 0.3, "q": 0.6}
    sizes = {"Ne": [NE_BAR, 2 * NE_BAR], "Nd": [ND_BAR, ND_BAR / 2]}
    at_s0 = curve({**sizes, "S": [4000, 4000]}, params)
    far = curve({**sizes, "S": [4e16, 4e16]}, params)
    np.testing.assert_allclose(at_s0 - 0.3, laws.bivariate_law(NE_BAR, ND_BAR)(sizes, BIVARIATE))
    np.testing.assert_allclose(far, laws.bivariate_law(NE_BAR, ND_BAR)(sizes, BIVARIATE), atol=1e-6)


@pytest.mark.parametrize("pe, pd", [(0.25, 0.45), (0.6, 0.2), (0.3, 0.3)])
def test_prop1_allocation_matches_numeric_optimiser(pe, pd):
    params = {**BIVARIATE, "pe": pe, "pd": pd}
    law = laws.bivariate_law(NE_BAR, ND_BAR)
    budget = 5e8

    def loss_at(decoder_fraction):
        return law(np.array([[(1 - decoder_fraction) * budget, decoder_fraction * budget]]), params)[0]

    numeric = minimize_scalar(loss_at, bounds=(1e-4, 1 - 1e-4), method="bounded", options={"xatol": 1e-10})
    ne_star, nd_star = laws.optimal_allocation(budget, pe, pd)
    assert ne_star + nd_star == pytest.approx(budget)
    assert nd_star / budget == pytest.approx(numeric.x, abs=1e-6)
    # Eq. 4: the optimal loss is alpha* B^-(pe+pd) + L_inf.
    l_opt = laws.alpha_star(params["alpha"], pe, pd, NE_BAR, ND_BAR) * budget ** -(pe + pd) + params["L_inf"]
    assert l_opt == pytest.approx(numeric.fun, rel=1e-10)


def test_alpha_sharp_and_penalty_against_direct_evaluation():
    a, pe, pd, l_inf = BIVARIATE.values()
    law = laws.bivariate_law(NE_BAR, ND_BAR)
    budget = 5e8
    fractions = np.array([0.1, 0.3, pd / (pe + pd), 0.55, 0.9])
    direct = law(np.column_stack([(1 - fractions) * budget, fractions * budget]), BIVARIATE)
    l_opt = laws.alpha_star(a, pe, pd, NE_BAR, ND_BAR) * budget ** -(pe + pd) + l_inf
    penalty = laws.allocation_penalty(a, pe, pd, NE_BAR, ND_BAR, fractions, budget)
    np.testing.assert_allclose(penalty, direct - l_opt, atol=1e-12)
    ratio = laws.alpha_sharp(a, pe, pd, NE_BAR, ND_BAR, fractions) / laws.alpha_star(
        a, pe, pd, NE_BAR, ND_BAR
    )
    assert ratio[2] == pytest.approx(1.0)
    assert np.all(np.delete(ratio, 2) > 1)


def test_scale_factor_brings_reducible_loss_to_threshold():
    a, pe, pd, _ = BIVARIATE.values()
    ne, nd = 60e6, 90e6
    k = laws.scale_factor_for_reducible_loss(a, pe, pd, NE_BAR, ND_BAR, 0.05, ne, nd)
    reducible = a * (NE_BAR / (k * ne)) ** pe * (ND_BAR / (k * nd)) ** pd
    assert reducible == pytest.approx(0.05)
    assert k > 1
    assert laws.scale_factor_for_reducible_loss(a, pe, pd, NE_BAR, ND_BAR, 10.0, ne, nd) < 1


def test_effective_fraction_recovers_the_fraction_that_built_the_betas():
    alpha, f_true = 0.3, {0.1: 0.2, 0.5: 0.6, 1.0: 1.0}
    params = {"alpha": alpha, "L_inf": 1.0, **{f"beta[{p:g}]": 1.7 * f**-alpha for p, f in f_true.items()}}
    fractions = laws.effective_fraction(params)
    np.testing.assert_allclose(fractions["f"], [f_true[p] for p in fractions["p"]])
    # Eq. 8: the single-task law at N_eff gives the multitask loss at N.
    eff = fractions.loc[fractions.index.repeat(2)].assign(N=[1e8, 1e9] * len(fractions))
    eff["N_eff"] = eff["f"] * eff["N"]
    law = laws.joint_law(tuple(f_true))
    multi = law(np.column_stack([eff["N"], eff["p"]]), params)
    single = law(np.column_stack([eff["N_eff"], np.ones(len(eff))]), params)
    np.testing.assert_allclose(multi, single)


def test_f_hat_forms_pass_through_the_single_task_point():
    assert laws.f_hat(1.0, 0.7, 0.5, 2.0) == pytest.approx(1.0)
    assert laws.f_hat(0.0, 0.7, 0.5, 2.0) == pytest.approx(0.0)
    assert laws.f_hat(0.5, 0.4, 1.0, 1.0) == pytest.approx(0.5 + 0.4 * 0.25)
    assert laws.f_hat_linear(1.0, 0.3) == pytest.approx(1.0)
    assert laws.f_hat_linear(0.0, 0.3) == pytest.approx(0.7)


def test_weighted_law_is_eq11_with_f_hat():
    params = {"beta_1": 1.1, "alpha": 0.3, "L_inf": 1.2, "c1": 0.4, "c2": 0.8, "c3": 1.5}
    law = laws.weighted_law("eq12", n0=1e8)
    n, p = np.array([1e8, 5e8]), np.array([0.3, 1.0])
    expected = 1.1 * (laws.f_hat(p, 0.4, 0.8, 1.5) * n / 1e8) ** -0.3 + 1.2
    np.testing.assert_allclose(law(np.column_stack([n, p]), params), expected)


def test_tradeoff_frontier_trades_one_task_against_the_other():
    params = {"beta_1": 1.0, "alpha": 0.3, "L_inf": 1.2, "c1": 0.2, "c2": 1.0, "c3": 1.0}
    law = laws.weighted_law("eq12", n0=1e8)
    frontier = laws.tradeoff_frontier((law, params), (law, {**params, "L_inf": 1.5}), [1e8, 1e9])
    assert list(frontier.columns) == ["N", "p", "first", "second"]
    for _, curve in frontier.groupby("N"):
        assert np.all(np.diff(curve["first"]) < 0) and np.all(np.diff(curve["second"]) > 0)
    small, large = (frontier[frontier["N"] == n] for n in (1e8, 1e9))
    assert np.all(large["first"].to_numpy() < small["first"].to_numpy())


def test_chinchilla_coefficients_are_exponentials():
    got = laws.chinchilla_coefficients(
        {"a": np.log(400.0), "b": 0.0, "e": np.log(1.7), "alpha": 0.3, "beta": 0.2}
    )
    assert got == pytest.approx({"A": 400.0, "B": 1.0, "E": 1.7, "alpha": 0.3, "beta": 0.2})


def test_bad_law_use_is_a_clear_error():
    law = laws.bivariate_law(NE_BAR, ND_BAR)
    with pytest.raises(ValueError, match=r"missing parameters \['L_inf'\]"):
        law.vector({"alpha": 1, "pe": 1, "pd": 1})
    with pytest.raises(ValueError, match="missing \\['Nd'\\]"):
        law({"Ne": [1.0]}, BIVARIATE)
    with pytest.raises(ValueError, match="2 input columns"):
        law(np.ones((3, 3)), BIVARIATE)
    with pytest.raises(ValueError, match="outside its bounds"):
        laws.Parameter("x", 0.0, 1.0, (0.5, 2.0), 0.5)
    with pytest.raises(ValueError, match="rows \\[1\\] have others"):
        laws.joint_law((0.5, 1.0))(
            np.array([[1.0, 0.5], [1.0, 0.3]]), {"alpha": 1, "L_inf": 1, "beta[0.5]": 1, "beta[1]": 1}
        )
    with pytest.raises(ValueError, match="distinct weights"):
        laws.joint_law((0.5, 0.5))
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        laws.alpha_sharp(1.0, 0.2, 0.3, NE_BAR, ND_BAR, [0.5, 1.0])
    with pytest.raises(ValueError, match="positive exponents"):
        laws.optimal_allocation(1e8, 0.0, 0.3)
    with pytest.raises(ValueError, match="need beta\\[1\\]"):
        laws.effective_fraction({"alpha": 0.3, "beta[0.5]": 1.0})
