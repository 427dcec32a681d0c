"""The finite-prompt estimate of the GP prompt diversity d_eff^GP(tau) (main paper §10)."""

import numpy as np
import pytest

from iclcore.pde.gp import (
    covariance_galerkin_spectrum,
    covariance_operator_spectrum,
    empirical_gp_effective_dimension,
    finite_prompt_effective_dimension,
    gp_effective_dimension,
    gp_effective_dimension_bias,
    matern_covariance,
)


def _kernel(n_el: int = 16, ell: float = 0.2) -> np.ndarray:
    return matern_covariance(np.linspace(0.0, 1.0, n_el + 1), ell)


def test_galerkin_spectrum_of_the_kernel_is_the_operator_spectrum() -> None:
    lam = covariance_galerkin_spectrum(_kernel(), 16)
    np.testing.assert_allclose(lam, covariance_operator_spectrum(16, 0.2), rtol=1e-10, atol=1e-14)


def test_estimate_from_the_exact_covariance_is_the_galerkin_value() -> None:
    # samples whose sample covariance is exactly K: F = sqrt(n) K^{1/2} rows
    K = _kernel()
    w, V = np.linalg.eigh(K)
    F = np.sqrt(K.shape[0]) * (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    lam = covariance_operator_spectrum(16, 0.2)
    assert empirical_gp_effective_dimension(F, 16, 1e-3) == pytest.approx(gp_effective_dimension(lam, 1e-3), rel=1e-10)


def test_bias_matches_monte_carlo() -> None:
    # E[d_hat_n] - d = b/n + O(n^-2): at n = 400 the Monte Carlo mean of 400 draws agrees within 4 SE
    n_el, tau, n = 16, 1e-3, 400
    K = _kernel(n_el)
    lam = covariance_galerkin_spectrum(K, n_el)
    d, b = gp_effective_dimension(lam, tau), gp_effective_dimension_bias(lam, tau)
    est = finite_prompt_effective_dimension(
        K, n_el, np.array([n]), tau=np.array([tau]), n_seeds=400, rng=np.random.default_rng(1)
    )[0, :, 0]
    se = est.std(ddof=1) / np.sqrt(est.size)
    assert b < 0
    assert abs(est.mean() - d - b / n) < 4 * se
    assert abs(est.mean() - d) > 10 * se  # the bias is resolved: the test would detect b = 0


def test_bias_of_one_mode_is_the_second_derivative() -> None:
    # one eigenvalue: b = lam^2 g''(lam), g(t) = t/(t+tau)
    lam, tau = 0.3, 0.1
    assert gp_effective_dimension_bias(np.array([lam]), tau) == pytest.approx(lam**2 * (-2 * tau / (lam + tau) ** 3))


def test_bad_input_names_the_parameter() -> None:
    K = _kernel()
    with pytest.raises(ValueError, match="tau"):
        gp_effective_dimension_bias(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="n_forcings"):
        finite_prompt_effective_dimension(
            K, 16, np.array([0]), tau=np.array([1e-3]), n_seeds=4, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="n_seeds"):
        finite_prompt_effective_dimension(
            K, 16, np.array([8]), tau=np.array([1e-3]), n_seeds=1, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="samples"):
        empirical_gp_effective_dimension(np.ones((4, 5)), 16, 1e-3)
    with pytest.raises(ValueError, match="cov"):
        covariance_galerkin_spectrum(np.ones((3, 3)), 16)


def _diversity(n_forcings=(8, 64, 512), seeds=6):
    from iclcore.pde.gp import gp_prompt_diversity

    return gp_prompt_diversity(
        n_el=16,
        ell=0.2,
        variance=1.0,
        n_forcings=np.array(n_forcings),
        tau=np.array([1e-2, 1e-4]),
        n_seeds=seeds,
        rng=np.random.default_rng(3),
    )


def test_prompt_diversity_z_scores_are_the_gaps_over_their_standard_errors() -> None:
    gp = _diversity()
    lam = covariance_operator_spectrum(16, 0.2)
    np.testing.assert_array_equal(gp.eigenvalues, lam)
    np.testing.assert_array_equal(gp.d_eff, gp_effective_dimension(lam, gp.tau))
    np.testing.assert_allclose(gp.mean, gp.estimates.mean(axis=1), rtol=1e-15)
    np.testing.assert_allclose(gp.se, gp.estimates.std(axis=1, ddof=1) / np.sqrt(6), rtol=1e-12)
    np.testing.assert_allclose(
        gp.z * gp.se, gp.mean - gp.d_eff - gp.bias / gp.n_forcings[:, None], rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(gp.z_raw * gp.se, gp.mean - gp.d_eff, rtol=1e-12, atol=1e-12)


def test_prompt_diversity_estimate_is_biased_low_and_the_bias_term_explains_the_gap() -> None:
    gp = _diversity(seeds=40)
    assert np.all(gp.bias < 0)  # g(t) = t/(t + tau) is operator concave
    assert np.all(gp.mean < gp.d_eff)  # biased low at every size
    gap, corrected = np.abs(gp.mean - gp.d_eff), np.abs(gp.mean - gp.d_eff - gp.bias / gp.n_forcings[:, None])
    assert np.all(corrected[-1] < gap[-1])  # the 1/n term removes most of the gap at the largest size
    assert np.all(np.abs(gp.z[-1]) < 4.0)


def test_prompt_diversity_metrics_name_each_tau_by_its_label() -> None:
    gp = _diversity()
    m = gp.metrics(("1e-2", "1e-4"))
    assert m["gp_n_max"] == 512 and m["gp_seeds"] == 6
    assert m["d_eff_gp_1e-4"] == gp_effective_dimension(gp.eigenvalues, 1e-4)
    assert m["gp_z_1e-2"] == gp.z[-1, 0] and m["gp_est_1e-4_se"] == gp.se[-1, 1]
    assert m["gp_z_max_abs"] == np.max(np.abs(gp.z[-1]))
    assert m["gp_trace"] == gp.eigenvalues.sum() and m["gp_lambda_1"] == gp.eigenvalues.max()
    with pytest.raises(ValueError, match="labels"):
        gp.metrics(("1e-2",))
