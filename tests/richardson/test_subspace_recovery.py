"""Subspace recovery along a grid of N (iclcore.richardson.subspace, main paper §5.2): the recovery curve,
the covariance-error rate and the 2x2 counterexample to the printed Davis–Kahan form."""

import numpy as np
import pytest

from iclcore.richardson.subspace import (
    covariance_error_rate,
    davis_kahan_bound,
    davis_kahan_counterexample,
    effective_rank,
    subspace_recovery_curve,
    subspace_recovery_ratios,
)


def _model(K=8, r=2, seed=0):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((K, r)))[0]
    Sz = np.diag([1.0, 0.3])
    return rng, U, Sz, (U @ Sz) @ U.T, np.diag(np.geomspace(2.0, 0.5, K))


def test_exact_task_vectors_recover_the_subspace_once_N_reaches_r():
    # every β_n lies in range U⋆, so Top_r of their covariance is U⋆ exactly (angle, floor risk zero)
    rng, U, Sz, Sb, Sx = _model()
    beta = (rng.standard_normal((500, 2)) * np.sqrt(np.diag(Sz))) @ U.T
    Ns = np.array([2, 10, 100, 500])
    c = subspace_recovery_curve(beta, Ns, Sigma_beta=Sb, U_star=U, Sigma_z=Sz, Sigma_x=Sx)
    assert np.array_equal(c.N, Ns)
    assert c.sin.max() < 1e-7 and np.abs(c.floor).max() < 1e-13
    assert np.all(c.floor <= c.floor_bound + 1e-15)
    # the error of the covariance estimate still shrinks with N, and matches the bound's numerator
    assert c.err[-1] < c.err[1]
    gamma = 0.3  # λ_2(Σ_β) - λ_3(Σ_β) = 0.3 - 0
    np.testing.assert_allclose(c.dk_paper, c.err / gamma, rtol=1e-12)


def test_noisy_task_vectors_obey_the_valid_davis_kahan_form():
    rng, U, Sz, Sb, Sx = _model(seed=1)
    beta = (rng.standard_normal((4000, 2)) * np.sqrt(np.diag(Sz))) @ U.T + 0.05 * rng.standard_normal((4000, 8))
    c = subspace_recovery_curve(beta, np.array([50, 400, 4000]), Sigma_beta=Sb, U_star=U, Sigma_z=Sz, Sigma_x=Sx)
    finite = np.isfinite(c.dk_weyl)
    assert finite.any()
    assert np.all(c.sin[finite] <= c.dk_weyl[finite])
    assert np.all(c.floor <= c.floor_bound * (1 + 1e-12))


def test_covariance_error_rate_is_the_sqrt_reff_over_n_scale():
    Sb = np.diag([0.2, 0.08, 0.03])
    rate = covariance_error_rate(Sb, np.array([100, 400]))
    np.testing.assert_allclose(rate, 0.2 * np.sqrt(effective_rank(Sb) / np.array([100, 400])), rtol=1e-15)
    assert rate[0] / rate[1] == pytest.approx(2.0, rel=1e-14)


def test_recovery_ratios_obey_the_valid_certificates():
    # with exact vectors the normalised covariance error is O(1) (§5.2); the valid Davis–Kahan form and the
    # floor-risk bound hold on both curves, so both largest ratios are at most one
    rng, U, Sz, Sb, Sx = _model(seed=2)
    beta = (rng.standard_normal((3000, 2)) * np.sqrt(np.diag(Sz))) @ U.T
    noisy = beta + 0.05 * rng.standard_normal(beta.shape)
    Ns = np.array([100, 300, 1000, 3000])
    given = dict(Sigma_beta=Sb, U_star=U, Sigma_z=Sz, Sigma_x=Sx)
    est, orc = subspace_recovery_curve(noisy, Ns, **given), subspace_recovery_curve(beta, Ns, **given)
    rat = subspace_recovery_ratios(est, orc, Sb)
    np.testing.assert_allclose(rat.oracle_err_normalised, orc.err / covariance_error_rate(Sb, Ns), rtol=1e-15)
    assert 0.1 < rat.oracle_err_normalised.min() and rat.oracle_err_normalised.max() < 5
    assert 0 < rat.valid_dk_ratio_max <= 1 and rat.floor_bound_ratio_max <= 1 + 1e-12
    with pytest.raises(ValueError, match="oracle"):
        subspace_recovery_ratios(est, subspace_recovery_curve(beta, Ns[:2], **given), Sb)


@pytest.mark.parametrize("delta", [1e-3, 0.1, 0.3])
def test_counterexample_breaks_the_printed_davis_kahan_form(delta):
    sin_cx, bound = davis_kahan_counterexample(delta)
    assert sin_cx == pytest.approx(np.sqrt(0.5), rel=1e-12)
    assert bound == pytest.approx(np.sqrt(0.25 + delta**2), rel=1e-12)
    assert sin_cx > bound
    S_cx = np.array([[0.5, delta], [delta, 0.5]])
    assert sin_cx <= davis_kahan_bound(S_cx, np.diag([1.0, 0.0]), 1, variant="weyl")


def test_bad_inputs():
    _, U, Sz, Sb, Sx = _model()
    with pytest.raises(ValueError, match="Ns"):
        subspace_recovery_curve(np.ones((5, 8)), np.array([0, 3]), Sigma_beta=Sb, U_star=U, Sigma_z=Sz, Sigma_x=Sx)
    with pytest.raises(ValueError, match="Ns"):
        subspace_recovery_curve(np.ones((5, 8)), np.array([6]), Sigma_beta=Sb, U_star=U, Sigma_z=Sz, Sigma_x=Sx)
    with pytest.raises(ValueError, match="delta"):
        davis_kahan_counterexample(0.5)
