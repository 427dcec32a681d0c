"""Diagnostics of a finished encoder+decoder run (iclcore.richardson.encdec): the §6.3 levels and ratios,
the spectral overlap of the tracking error, the §6.6 product/sum check and the §6.4 step refinement."""

import numpy as np
import pytest

from iclcore.richardson.encdec import (
    EncDecConfig,
    continuous_time_refinement,
    product_sum_check,
    report_table3,
    run_encdec,
    summarise_encdec_run,
    tracking_spectrum,
)

SMALL = EncDecConfig(K=8, r=2, M=32, sigma=0.3, mu_z=(0.2, 0.05), n_train=24, n_eval=128, L=5, steps=40)


@pytest.fixture(scope="module")
def run():
    return run_encdec(SMALL, eval_every=4)


def test_summary_shares_add_up_to_the_risk_decomposition(run):
    # §6.3: R_e2e = R_floor + R_dec + 2 cross, so the two shares and the cross share sum to one
    s = summarise_encdec_run(run)
    assert abs(s.floor_share_final + s.dec_share_final + 2 * s.cross_final / s.e2e_final - 1) < 1e-12
    assert s.identity_gap_rel_max < 1e-12 and s.tracking_identity_residual_max < 1e-12


def test_summary_certificate_chain_holds(run):
    # §6.3 chain R_dec <= ||Σ_x|| E||z_L - z†||² <= ||Σ_x|| E[ρ^{2L} ||z†||²] at every checkpoint
    s = summarise_encdec_run(run)
    assert s.dec_mid_ratio_max <= 1 + 1e-12 and s.dec_bound_ratio_max <= 1 + 1e-12
    assert s.dec_bound_conservative_factor >= 1
    assert s.violation_rate_max == 0
    assert s.tracking_rel_quarter == run.tracking_rel[SMALL.steps // 4]


def test_report_table3_reads_the_last_step(run):
    s = summarise_encdec_run(run)
    table = report_table3(s)
    assert len(table) == 10
    assert table["held-out prediction risk"] == run.risks.e2e[-1]
    assert table["R_floor"] == run.risks.floor[-1]
    assert table["encoder true subspace sin^2"] == run.sin2[-1]


def test_spectral_overlap_of_a_known_error():
    # C = diag(1, 2) with E = e_1 e_1^T: all the error energy is in the slow mode (column 0)
    S = 4
    C = np.broadcast_to(np.diag([1.0, 2.0]), (S, 2, 2)).copy()
    P_star = np.array([np.eye(2) * (1 + 0.5**s) for s in range(S)])
    P = P_star + np.array([[1.0, 0.0], [0.0, 0.0]])
    spec = tracking_spectrum(P, P_star, C)
    np.testing.assert_allclose(spec.weights, np.tile([1.0, 0.0], (S, 1)), atol=1e-15)


def test_drift_slope_recovers_a_planted_geometric_rate():
    # x_{s+1} = x_s (1 + e^{-a s}) makes the relative drift of P⋆_s = x_s B exactly e^{-a s}
    a, S = 0.3, 21
    x = np.cumprod(np.r_[1.0, 1 + np.exp(-a * np.arange(S - 1))])
    B = np.array([[1.0, 0.2], [0.2, 0.5]])
    P_star = x[:, None, None] * B
    C = np.broadcast_to(np.eye(2), (S, 2, 2)).copy()
    spec = tracking_spectrum(P_star * 0.9, P_star, C)
    np.testing.assert_allclose(spec.drift_rel, np.exp(-a * np.arange(S - 1)), rtol=1e-12)
    assert abs(spec.drift_rel_log_slope + a) < 1e-12
    np.testing.assert_allclose(spec.weights.sum(axis=1), 1.0, rtol=1e-14)


def test_product_sum_formula_matches_the_run(run):
    ps = product_sum_check(run, n_checks=9)
    assert ps.steps[0] == 0 and ps.steps[-1] == SMALL.steps
    assert ps.error.max() < 1e-12
    assert ps.commutator_defect > 1e-3  # the C_s do not commute: the scalar closure does not apply


def test_refinement_converges_to_the_ode_at_first_order(run):
    ode = continuous_time_refinement(run, 4, t_stride=4)
    assert list(ode.refinements) == [1, 2, 4]
    assert np.all(np.diff(ode.gaps) < 0)
    assert abs(ode.order + 1) < 0.2
    assert ode.P_ode.shape == (SMALL.steps // 4 + 1, 2, 2)


def test_bad_inputs(run):
    with pytest.raises(ValueError, match="P, P_star, C"):
        tracking_spectrum(run.P, run.P_star[:-1], run.C)
    with pytest.raises(ValueError, match="n_checks"):
        product_sum_check(run, n_checks=0)
    with pytest.raises(ValueError, match="refine_max"):
        continuous_time_refinement(run, 0)


def test_drift_slope_leaves_out_steps_where_the_oracle_stands_exactly_still():
    # the planted geometric decay, then the oracle frozen (drift exactly 0) for the last steps
    a, S, frozen = 0.3, 21, 4
    growth = 1 + np.exp(-a * np.arange(S - 1))
    growth[-frozen:] = 1.0
    x = np.cumprod(np.r_[1.0, growth])
    B = np.array([[1.0, 0.2], [0.2, 0.5]])
    P_star = x[:, None, None] * B
    C = np.broadcast_to(np.eye(2), (S, 2, 2)).copy()
    spec = tracking_spectrum(P_star * 0.9, P_star, C)
    assert np.all(spec.drift_rel[-frozen:] == 0.0)
    assert abs(spec.drift_rel_log_slope + a) < 1e-12  # the rate of the steps that still move
    still = np.broadcast_to(B, (S, 2, 2)).copy()  # never moves: nothing to fit, said in one line
    with pytest.raises(ValueError, match="P_star: the oracle drift is exactly 0"):
        tracking_spectrum(still * 0.9, still, C)
