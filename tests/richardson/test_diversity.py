"""Tests of iclcore.richardson.diversity (seed 000 §10 and §3.2): excess of the finite-task preconditioner."""

import numpy as np
import pytest

from iclcore.lsq.tasks import TaskConfig
from iclcore.richardson.decoder import finite_task_estimator
from iclcore.richardson.diversity import (
    depth_from_contraction,
    depth_to_target,
    diversity_sweep,
    gaussian_excess,
    geometric_latent_spectrum,
    latent_spectrum_with_effective_rank,
    sandwich_excess,
    spectral_entropy,
)
from iclcore.richardson.subspace import effective_rank


def test_gaussian_excess_is_exact_for_gaussian_inputs_and_independent_residuals():
    # d ~ N(0, C), e independent: E[excess] = R* K / (N - K - 1) (inverse-Wishart mean)
    rng = np.random.default_rng(0)
    K, N, n_rep = 5, 12, 4000
    Lc = np.linalg.cholesky(np.diag(np.geomspace(0.2, 3.0, K)) + 0.1)
    C = Lc @ Lc.T
    P_star = rng.standard_normal((K, K))
    Le = np.diag(np.linspace(0.3, 1.0, K))
    R_star = np.trace(Le @ Le.T) / K
    d = rng.standard_normal((n_rep, N, K)) @ Lc.T
    z = d @ P_star.T + rng.standard_normal((n_rep, N, K)) @ Le.T
    dt = np.swapaxes(d, 1, 2)
    E = np.linalg.solve(dt @ d, dt @ z).swapaxes(1, 2) - P_star  # batched Z D^T (D D^T)^{-1} - P*
    exc = np.einsum("nij,jk,nik->n", E, C, E) / K
    e0 = finite_task_estimator(d[0], z[0]) - P_star  # the library estimator on the first draw
    assert np.trace(e0 @ C @ e0.T) / K == pytest.approx(exc[0], rel=1e-10)
    se = exc.std(ddof=1) / np.sqrt(n_rep)
    assert abs(exc.mean() - gaussian_excess(R_star, K, N)) < 4 * se


def test_sandwich_prediction_at_large_N_for_the_task_model():
    # leading order R* d_sand / N; finite-N correction bounded by (K + 1)/N (chapter derivation)
    rng = np.random.default_rng(1)
    K, N = 4, 400
    cfg = TaskConfig(K=K, M=16, cond=4.0, sigma=0.2)
    pt = diversity_sweep(
        cfg, latent_spectrum_with_effective_rank(K, 1.5), [N], n_repeats=600, n_sandwich=100_000, rng=rng
    )
    pred = sandwich_excess(pt.R_star, pt.d_sand.value, K, N=N, finite_n=False)
    rel_se = pt.excess_se[0] / pt.excess_mean[0] + pt.d_sand.se / pt.d_sand.value
    assert abs(pt.excess_mean[0] / pred - 1) < 3 * rel_se + (K + 1) / N
    # heavy-tailed inputs: the sandwich dimension exceeds K (why R* K/(N-K-1) undershoots)
    assert pt.d_sand.value > K + 3 * pt.d_sand.se


def test_spectra_and_diversity_descriptors():
    r = 6
    flat = geometric_latent_spectrum(r, 1.0)
    assert spectral_entropy(np.diag(flat)) == pytest.approx(np.log(r))
    assert effective_rank(np.diag(flat)) == pytest.approx(r)
    for target in (1.1, 2.5, 5.9, 6.0):
        mu = latent_spectrum_with_effective_rank(r, target)
        assert effective_rank(np.diag(mu)) == pytest.approx(target, rel=1e-10)
        assert mu.sum() == pytest.approx(r)
    with pytest.raises(ValueError, match="r_eff"):
        latent_spectrum_with_effective_rank(r, 1.0)
    with pytest.raises(ValueError, match="N"):
        gaussian_excess(1.0, 5, 6)


def test_depth_to_target_matches_contraction_for_commuting_scalar_systems():
    # H = h I, P = a I: error (1 - a h)^{2L} exactly, so the two depths coincide
    K, n = 3, 4
    h, a = 2.0, 0.3
    rho = abs(1 - a * h)
    H = np.broadcast_to(h * np.eye(K), (n, K, K)).copy()
    z = np.random.default_rng(2).standard_normal((n, K))
    for target in (1e-2, 1e-5):
        assert depth_to_target(a * np.eye(K), H, z, target=target, L_max=200) == depth_from_contraction(rho, target)
    with pytest.raises(ValueError, match="L_max"):
        depth_to_target(a * np.eye(K), H, z, target=1e-12, L_max=3)
    with pytest.raises(ValueError, match="rho"):
        depth_from_contraction(1.2, 0.1)


def _planted_point(N, mean, R_star=0.5, d_sand=9.0, rse=0.01, d_eff=8.0):
    from iclcore.richardson.diversity import DiversityPoint, SandwichDimension

    mean = np.asarray(mean, float)
    return DiversityPoint(
        mu=np.ones(8),
        r_eff=8.0,
        H_z=np.log(8),
        N=N,
        excess_mean=mean,
        excess_se=rse * mean,
        R_star=R_star,
        d_eff=d_eff,
        d_sand=SandwichDimension(d_sand, 0.1, 1000, d_sand / 8),
    )


def test_closed_form_comparison_recovers_a_planted_gaussian_excess_and_a_planted_rate():
    from iclcore.richardson.diversity import closed_form_comparison

    K = 8
    N = np.array([12, 16, 32, 64, 128, 256, 512])
    gauss = [_planted_point(N, gaussian_excess(R, K, N), R_star=R) for R in (0.5, 2.0)]
    c = closed_form_comparison(gauss, N, K, min_ratio_review=4, min_ratio_asymptotic=16)
    m = c.metrics()
    assert m["gauss_maxdev_N4"] < 1e-14 and abs(m["gauss_ratio_min_N4"] - 1) < 1e-14
    rate = [_planted_point(N, R * 7.0 / N, R_star=R) for R in (0.5, 2.0)]  # excess = R* 7/N exactly
    c = closed_form_comparison(rate, N, K, min_ratio_review=4, min_ratio_asymptotic=16)
    m = c.metrics()
    np.testing.assert_allclose(c.slope, -1.0, rtol=1e-12)
    assert m["rate_slope_worst_se"] > 0 and m["order_spread_N16"] == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(c.c_deff, 7.0 / K, rtol=1e-14)  # N excess/(R* K) at the largest N
    assert m["spread_sand_largeN"] == pytest.approx(1.0, rel=1e-14) and m["N_largest"] == 512
    assert m["lead_finite_n_bound"] == (K + 1) / 128
    # the slope's standard error is that of weighted least squares with weights 1/rse^2
    x = np.log(N[N >= 16 * K])
    X = np.c_[np.ones_like(x), x] / 0.01
    assert c.slope_se[0] == pytest.approx(np.sqrt(np.linalg.inv(X.T @ X)[1, 1]), rel=1e-12)


def test_closed_form_comparison_bracket_holds_at_its_ends_and_not_outside():
    from iclcore.richardson.diversity import closed_form_comparison

    K, N = 8, np.array([12, 32, 128, 256])
    for finite_n in (False, True):  # the lower end R* d_sand/N, the upper end R* d_sand/(N - K - 1)
        end = [_planted_point(N, sandwich_excess(0.5, 9.0, K, N=N, finite_n=finite_n))]
        assert (
            closed_form_comparison(end, N, K, min_ratio_review=4, min_ratio_asymptotic=16).metrics()[
                "bracket_max_z_outside"
            ]
            == 0.0
        )
    above = [_planted_point(N, 1.1 * sandwich_excess(0.5, 9.0, K, N=N), rse=0.01)]
    m = closed_form_comparison(above, N, K, min_ratio_review=4, min_ratio_asymptotic=16).metrics()
    # 10 % above the upper end, in units of mean x (relative SE 1 % + that of d_sand, 0.1/9)
    assert m["bracket_max_z_outside"] == pytest.approx(0.1 / (1.1 * (0.01 + 0.1 / 9)), rel=1e-12)


def test_closed_form_comparison_rejects_missing_or_mismatched_sweeps():
    from iclcore.richardson.diversity import closed_form_comparison

    N = np.array([12, 32, 128])
    with pytest.raises(ValueError, match="points"):
        closed_form_comparison([], N, 8, min_ratio_review=4, min_ratio_asymptotic=16)
    with pytest.raises(ValueError, match="points"):
        closed_form_comparison([_planted_point(N[:2], [0.1, 0.05])], N, 8, min_ratio_review=4, min_ratio_asymptotic=16)


def test_difficulty_axis_summary_reads_the_ends_of_the_axis():
    from iclcore.richardson.diversity import DifficultyPoint, difficulty_axis_summary

    pts = [
        DifficultyPoint(10.0 * i, 0.1, 2.0 * i, 0.1, 0.1 * i, 0.01, 0.2, 5 * i, 4 * i, 0.3, 0.05 * i) for i in (1, 2, 3)
    ]
    s = difficulty_axis_summary("M", pts)
    assert s["depth_M_first"] == 5 and s["depth_M_last"] == 15 and s["rho_M_last"] == pytest.approx(0.3)
    assert s["kappa_H_M_first"] == 10.0 and s["kappa_PH_M_last"] == 6.0
    assert s["frac_divergent_M_max"] == pytest.approx(0.15)
    with pytest.raises(ValueError, match="points"):
        difficulty_axis_summary("M", [])
