"""Checks and end-of-run statistics of the encoder-only runs (iclcore.richardson.encoder): the §5.1 closed
form and modal risk, the noisy run against the stationary SGD error, and the noise-free observed/predicted
ratios with replica standard errors."""

import numpy as np
import pytest

from iclcore.richardson.encoder import (
    closed_form_check,
    make_encoder_problem,
    noise_free_run_statistics,
    noisy_run_statistics,
    online_encoder_run,
)

MU = np.array([1.0, 0.6, 0.35, 0.2])


def _problem(sigma, q=12, seed=0):
    return make_encoder_problem(q, MU, sigma, rng=np.random.default_rng(seed))


def _G0(p, seed=1):
    return np.random.default_rng(seed).standard_normal((p.q, p.r)) / 2


def test_closed_form_and_modal_risk_hold_to_rounding():
    p = _problem(0.02)
    check = closed_form_check(_G0(p), p, 0.7, n_steps=80)
    assert check.max_err_closed_form < 1e-12
    assert check.max_err_modal_rel < 1e-12


def test_closed_form_check_detects_a_wrong_step_range():
    # an unstable step (> 2 / λ_max(Σ_z)) is refused, not silently compared
    p = _problem(0.02)
    with pytest.raises(ValueError, match="eta"):
        closed_form_check(_G0(p), p, 2.5, n_steps=10)


def test_noisy_run_sits_at_the_stationary_sgd_error():
    # constant-step SGD: the time-averaged relative error matches the stationary first-order formula
    # within 3 batch-means standard errors plus the dropped multiplicative term
    p = _problem(0.05)
    eta, batch, n_eval, steps = 0.5, 200, 4000, 400
    res = online_encoder_run(p, _G0(p), eta, batch=batch, n_steps=steps, rng=np.random.default_rng(2), n_eval=n_eval)
    st = noisy_run_statistics(p, res, eta=eta, batch=batch, n_eval=n_eval)
    assert st.ratio_se == np.sqrt(2.0 / (p.q * n_eval))
    assert abs(st.ratio_final - 1) < 4 * st.ratio_se
    gap = abs(st.rel_err_time_avg - st.rel_err_stationary_pred)
    assert gap <= 3 * st.rel_err_time_avg_se + st.rel_err_multiplicative_term * st.rel_err_stationary_pred
    assert st.rel_err_multiplicative_term == pytest.approx(eta * MU.sum() / batch, rel=1e-12)
    assert res.sin2[-1] <= st.sin2_wedin_bound  # sin Θ <= ||G - G⋆||_2 / σ_r(G)


def test_noise_free_ratios_are_one_within_replica_spread():
    p = _problem(0.0)
    G0, eta, batch, steps = _G0(p), 0.3, 2000, 150
    runs = [
        online_encoder_run(p, G0, eta, batch=batch, n_steps=steps, rng=np.random.default_rng([5, j]), n_eval=2000)
        for j in range(4)
    ]
    st = noise_free_run_statistics(p, runs, eta=eta, batch=batch)
    assert st.ratio_final == runs[0].risk_heldout[-1] / runs[0].risk_pred[-1]
    assert st.ratio_final_se > 0 and st.rel_err_ratio_final_se > 0 and st.max_abs_log_ratio_se > 0
    assert abs(st.ratio_final - 1) <= 3 * st.ratio_final_se + st.sgd_excess
    assert abs(st.rel_err_ratio_final - 1) <= 3 * st.rel_err_ratio_final_se + st.sgd_excess
    assert runs[0].sin2[-1] <= st.sin2_wedin_bound


def test_bad_inputs():
    p = _problem(0.0)
    run = online_encoder_run(p, _G0(p), 0.3, batch=100, n_steps=5, rng=np.random.default_rng(0), n_eval=50)
    with pytest.raises(ValueError, match="runs"):
        noise_free_run_statistics(p, [run], eta=0.3, batch=100)
    with pytest.raises(ValueError, match="n_eval"):
        noisy_run_statistics(p, run, eta=0.3, batch=100, n_eval=0)
    with pytest.raises(ValueError, match="n_steps"):
        closed_form_check(_G0(p), p, 0.3, n_steps=0)
