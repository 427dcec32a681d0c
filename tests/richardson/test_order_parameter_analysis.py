"""Tests of the Figure 11 analyses of iclcore.richardson.order_parameters: seed statistics, gauge checks,
spectra windows, the prompt-aspect sweep and the latent-window comparison."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.linalg import haar_orthogonal
from iclcore.lsq.dynamics import gd_trajectory
from iclcore.lsq.lowrank import LatentPrompts, make_lowrank_model, sample_lowrank_prompts
from iclcore.richardson.order_parameters import (
    DecoderOrderParameters,
    conjugation_change,
    decoder_gauge_change,
    decoder_order_parameters,
    gd_order_parameters,
    imaginary_part_ratio,
    latent_gauge_change,
    latent_gram_spectrum,
    latent_order_parameters,
    latent_window,
    max_relative_change,
    oracle_mp_window,
    prompt_aspect_sweep,
    seed_statistics,
    top_spectra_grid,
    window_fraction,
)
from iclcore.spectra.mp import mp_edges


def _spd(K, rng, cond=10.0):
    Q = haar_orthogonal(K, rng)
    return (Q * np.geomspace(1.0, cond, K)) @ Q.T


def _order(rho, srank, gd_rho=None) -> DecoderOrderParameters:
    rho = np.asarray(rho, float)
    return DecoderOrderParameters(
        rho_pop=rho,
        srank=np.asarray(srank, float),
        top_energy=0.5 * np.ones_like(rho),
        entropy=np.linspace(0.9, 0.4, rho.size),
        rho_star=0.3,
        srank_star=2.0,
        top_energy_star=0.6,
    )


def test_gd_order_parameters_match_the_trajectory_and_tend_to_the_oracle():
    rng = np.random.default_rng(0)
    K = 5
    C, H_inf = _spd(K, rng), _spd(K, rng)
    P_star = np.linalg.inv(H_inf)
    eta = 1.0 / np.linalg.eigvalsh(C)[-1]
    steps = np.array([0, 1, 5, 20])
    gd = gd_order_parameters(P_star, C, H_inf, eta=eta, steps=steps)
    direct = decoder_order_parameters(
        gd_trajectory(np.zeros((K, K)), P_star, C, eta=eta, steps=steps), P_star, C, H_inf=H_inf
    )
    # closed-form weights and the weights from the iterates agree while P_s is away from P_star
    np.testing.assert_allclose(gd.entropy, direct.entropy, rtol=1e-10)
    np.testing.assert_allclose(gd.rho_pop, direct.rho_pop, rtol=1e-12)
    assert gd.rho_pop[0] == pytest.approx(1.0)  # P_0 = 0: rho(I) = 1
    late = gd_order_parameters(P_star, C, H_inf, eta=eta, steps=np.array([5000]))
    assert late.rho_pop[0] == pytest.approx(late.rho_star, abs=1e-10)  # P_star H_inf = I, so rho_star = 0


def test_seed_statistics_are_the_means_and_standard_errors_across_seeds():
    t = np.arange(5.0)
    runs = [_order(1.0 - 0.1 * t + 0.01 * j, 3.0 + 0.5 * j + 0 * t) for j in range(4)]
    gd = _order(1.0 - 0.1 * t, 2.5 + 0 * t)
    st = seed_statistics(runs, gd, t >= 2)
    last = np.array([r.rho_pop[-1] for r in runs])
    assert st.rho_final_mean == pytest.approx(last.mean(), rel=1e-14)
    assert st.rho_final_se == pytest.approx(last.std(ddof=1) / 2, rel=1e-12)
    srank_last = 3.0 + 0.5 * np.arange(4)
    assert st.srank_final_se == pytest.approx(srank_last.std(ddof=1) / 2, rel=1e-12)
    assert st.srank_rel_gap == pytest.approx(abs(srank_last.mean() - 2.0) / 2.0, rel=1e-14)
    # identical increments across seeds: SE 0, floored, so z is -0.1 / 1e-300 on each of the 2 increments after t = 2
    assert st.rho_increment_z.shape == (3,)
    assert st.rho_increment_se_max == pytest.approx(0.0, abs=1e-15)
    assert st.rho_gd_max_increment_after_transient == pytest.approx(-0.1)
    m = st.metrics()
    assert m["rho_pop_gd_final"] == gd.rho_pop[-1] and m["srank_star"] == 2.0 and len(m) == 18


def test_seed_statistics_reject_a_single_run_and_a_wrong_transient_mask():
    run = _order(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="runs"):
        seed_statistics([run], run, np.ones(3, bool))
    with pytest.raises(ValueError, match="after"):
        seed_statistics([run, run], run, np.ones(4, bool))


def test_max_relative_change_is_relative_to_the_second_argument():
    assert max_relative_change(np.array([2.0, 1.0]), np.array([1.0, 1.0])) == pytest.approx(1.0)
    assert max_relative_change(np.array([1e-13]), np.array([0.0])) == pytest.approx(0.1)  # floor 1e-12
    with pytest.raises(ValueError, match="a: shape"):
        max_relative_change(np.ones(2), np.ones(3))


@pytest.mark.parametrize("seed", range(3))
def test_order_parameters_are_invariant_under_random_gauges_but_the_raw_matrices_move(seed):
    rng = np.random.default_rng(seed)
    K, r, S = 6, 3, 4
    H_inf, C = _spd(K, rng), _spd(K, rng, 30.0)
    P_star = 0.9 * np.linalg.inv(H_inf)
    P = P_star + 0.05 * rng.standard_normal((S, K, K))
    ref = decoder_order_parameters(P, P_star, C, H_inf=H_inf)
    Q = haar_orthogonal(K, rng)
    assert decoder_gauge_change(P, P_star, C, H_inf=H_inf, Q=Q, reference=ref) <= 1e-10
    assert conjugation_change(P[-1], Q) > 0.01
    assert conjugation_change(P[-1], np.eye(K)) == 0.0
    U = np.stack([np.linalg.qr(rng.standard_normal((K, r)))[0] for _ in range(S)])
    P_z = np.stack([_spd(r, rng) for _ in range(S)])
    P_z_star = np.stack([_spd(r, rng) for _ in range(S)])
    U_star = np.linalg.qr(rng.standard_normal((K, r)))[0]
    lref = latent_order_parameters(U, P_z, P_z_star, U_star=U_star, H_inf=H_inf)
    O = haar_orthogonal(r, rng)
    assert latent_gauge_change(U, P_z, P_z_star, U_star=U_star, H_inf=H_inf, O=O, reference=lref) <= 1e-10
    fm = lref.final_metrics()
    assert fm["srank_z_rel_gap"] == pytest.approx(abs(fm["srank_z_final"] / fm["srank_z_oracle_final"] - 1), rel=1e-12)


def test_imaginary_part_ratio_vanishes_for_a_symmetric_preconditioner_only():
    rng = np.random.default_rng(1)
    H = np.stack([_spd(4, rng) for _ in range(3)])
    assert imaginary_part_ratio(_spd(4, rng), H) <= 1e-12
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert imaginary_part_ratio(rotation, np.eye(2)) == pytest.approx(1.0)  # eigenvalues ±i


def test_window_fraction_counts_the_closed_interval():
    assert window_fraction(np.array([1.0, 1.5, 2.0, 2.5]), (1.0, 2.0)) == 0.75


def test_oracle_mp_window_of_a_scaled_identity_is_the_scaled_mp_support():
    lo, hi = mp_edges(0.25)
    window = oracle_mp_window(2.0 * np.eye(3), 1.5 * np.eye(3), 0.25)
    np.testing.assert_allclose(window, (3.0 * lo, 3.0 * hi), rtol=1e-12)


def test_latent_gram_spectrum_is_one_for_the_population_gram_matrix():
    rng = np.random.default_rng(2)
    K, r, lam = 5, 2, 0.3
    Sigma_x = _spd(K, rng)
    H = np.broadcast_to(Sigma_x + lam * np.eye(K), (4, K, K)).copy()
    prompts = LatentPrompts(
        H=H, c=np.zeros((4, K)), beta=np.zeros((4, K)), z=np.zeros((4, r)), beta_hat=np.zeros((4, K))
    )
    U = np.linalg.qr(rng.standard_normal((K, r)))[0]
    np.testing.assert_allclose(latent_gram_spectrum(U, prompts, Sigma_x, lam=lam), 1.0, rtol=1e-12)


def test_top_spectra_grid_shapes_and_metrics():
    rng = np.random.default_rng(3)
    K = 4
    Sigma = _spd(K, rng)
    P_star = np.linalg.inv(Sigma)
    H_M = np.stack([_spd(K, rng) for _ in range(5)])
    model = make_lowrank_model(6, 2, 40, sigma=0.1, lam=0.0, cond_x=2.0, mu_z=np.ones(2), rng=rng)
    prompts = sample_lowrank_prompts(model, 7, rng)
    grid = top_spectra_grid(
        [P_star, 0.5 * P_star],
        H_M,
        [model.U_star, model.U_star],
        prompts=prompts,
        Sigma=Sigma,
        P_star=P_star,
        gamma=0.2,
        Sigma_x=model.Sigma_x,
        lam=model.lam,
        gamma_latent=2 / 40,
    )
    assert [s.shape for s in grid.decoder] == [(5 * K,), (5 * K,)]
    assert [w.shape for w in grid.latent] == [(14,), (14,)]
    assert grid.max_imag_rel <= 1e-10
    assert set(grid.metrics()) == {"frac_PH_in_window_final", "max_imag_rel_PH", "ks_latent_grid_max"}
    assert grid.metrics()["ks_latent_grid_max"] == max(grid.latent_ks)


def test_prompt_aspect_sweep_realised_aspects_and_mp_contraction():
    gammas = np.array([0.1, 0.3])
    asp = prompt_aspect_sweep(np.random.default_rng(4), K=8, gammas=gammas, cond=5.0, sigma=0.1, n_prompts=30)
    np.testing.assert_allclose(asp.iso.gamma, 8 / np.round(8 / gammas))
    g = asp.iso.gamma
    np.testing.assert_allclose(asp.rho_mp, 2 * np.sqrt(g) / (1 + g), rtol=1e-12)
    assert np.all(asp.iso.kappa_mean >= 1) and np.all(asp.conditioned.kappa_mean > asp.iso.kappa_mean)
    assert 0 <= asp.kappa_cond_below_mp_frac <= 1
    again = prompt_aspect_sweep(np.random.default_rng(4), K=8, gammas=gammas, cond=5.0, sigma=0.1, n_prompts=30)
    assert again.metrics() == asp.metrics()
    with pytest.raises(ValueError, match="n_prompts"):
        prompt_aspect_sweep(np.random.default_rng(4), K=8, gammas=gammas, cond=5.0, sigma=0.1, n_prompts=1)


def test_latent_window_of_a_fixed_subspace_matches_the_exact_wishart_law():
    # U independent of the prompts: the whitened Gram spectrum is exactly Wishart_r(M, I)/M
    rng = np.random.default_rng(5)
    model = make_lowrank_model(8, 2, 50, sigma=0.1, lam=0.2, cond_x=3.0, mu_z=np.ones(2), rng=rng)
    prompts = sample_lowrank_prompts(model, 400, rng)
    H_inf = model.Sigma_x + model.lam * np.eye(8)
    lw = latent_window(
        rng, model.U_star, prompts, Sigma_x=model.Sigma_x, lam=model.lam, H_inf=H_inf, M=model.M, alpha=0.01
    )
    assert lw.gamma == 2 / 50 and lw.n_prompts == 400
    assert lw.whitened.shape == lw.reference.shape == lw.spectrum_A.shape == (800,)
    assert lw.ks_latent_reference <= lw.ks_crit
    assert abs(lw.frac_latent - lw.frac_reference) <= 3 * lw.frac_se
    assert lw.population_edges[0] <= lw.population_edges[1]
    assert lw.metrics()["n_latent_prompts"] == 400
    with pytest.raises(ValueError, match="M"):
        latent_window(rng, model.U_star, prompts, Sigma_x=model.Sigma_x, lam=0.2, H_inf=H_inf, M=0, alpha=0.01)
