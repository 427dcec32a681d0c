"""Tests for iclcore.dmft.full_attention: full linear attention against the γ = c s⁵ theory (Bordelon et al.
Figure 6, Eq. 22) and the trainable read-in/read-out against Eq. (124)."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.finite_context import context_draws
from iclcore.dmft.full_attention import (
    decaying_step_times,
    power_five_comparisons,
    power_five_time_exponents,
    readout_comparison,
)
from iclcore.dmft.readout import power_five_theory, readout_descent_path
from iclcore.models.attention import power_five_constant
from iclcore.stats import standard_error


def test_decaying_step_times_sum_the_steps() -> None:
    t = decaying_step_times(0.3, 7.0, 50)
    k = np.arange(50)
    np.testing.assert_allclose(np.diff(t), 0.3 / (1 + k / 7.0), rtol=1e-14)
    assert t[0] == 0.0 and t.shape == (51,)
    # no decay in the limit: the clock is eta * k
    np.testing.assert_allclose(decaying_step_times(0.3, 1e300, 5), 0.3 * np.arange(6), rtol=1e-14)
    with pytest.raises(ValueError, match="^eta"):
        decaying_step_times(-0.1, 7.0, 5)


def _tiny_comparisons(**kw):
    D = 3
    spectra = {"iso": (np.ones(D), np.ones(D)), "rrs": power_law_spectrum(D, 1.0, 1.0)}
    args = dict(P=6, K=3, B=4, depths=(1, 2), s0=1.2, eta=0.1, decay=10.0, steps=20, mc_draws=40, mc_tables=2, seed=3)
    return spectra, power_five_comparisons(spectra, **(args | kw)), args


def test_power_five_comparison_is_the_theory_and_the_bias_of_the_runs() -> None:
    spectra, out, a = _tiny_comparisons()
    t = decaying_step_times(a["eta"], a["decay"], a["steps"])
    late = slice(a["steps"] // 2, None)
    for kind, cmp in out.items():
        draws = context_draws(
            *spectra[kind], a["P"], rng=np.random.default_rng(a["seed"] + (kind == "rrs")), n_draws=a["mc_draws"]
        )
        for L in a["depths"]:
            th = power_five_theory(
                draws, L, t, c=power_five_constant(3), s0=a["s0"], n_tables=a["mc_tables"], late_start=a["steps"] // 2
            )
            np.testing.assert_array_equal(cmp.theory[L].gamma, th.gamma)
            r = cmp.runs[L].gamma[late, 0] / th.gamma[late] - 1
            assert cmp.bias[L].max_abs == np.max(np.abs(r))
        assert cmp.max_rel_err == max(cmp.bias[L].max_abs for L in a["depths"])
        assert cmp.theory_mc_sd_max == max(cmp.theory[L].mc_sd for L in a["depths"])
        assert cmp.bias_z_with_theory_max <= cmp.bias_z_max  # the theory's error only widens the band
    m = out["iso"].metrics("fig6a_iso", final_depths=(2,))
    assert m["fig6a_iso_final_loss_L2_sim"] == pytest.approx(np.mean(out["iso"].runs[2].loss[-40:]), rel=1e-15)
    assert len(m) == 7 and len(out["rrs"].metrics("x")) == 5


def test_power_five_comparisons_refuse_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="^spectra"):
        power_five_comparisons({"gauss": (np.ones(2), np.ones(2))}, P=4, K=2, B=2, depths=(1,), s0=1.0, eta=0.1,
                               decay=1.0, steps=2, mc_draws=4, mc_tables=2, seed=0)  # fmt: skip


@pytest.mark.slow
def test_w5_flow_has_the_exponent_of_eq22_and_the_gamma_flow_that_of_eq97() -> None:
    beta = 1.0
    ex = power_five_time_exponents(D=100000, nu=1.0, beta=beta, t=np.geomspace(1e-2, 1e12, 400))
    assert ex.exponent["w5"] == pytest.approx(5 * beta / (5 * beta + 2), abs=0.02)
    assert ex.exponent["gamma"] == pytest.approx(beta / (2 + beta), abs=0.01)
    assert ex.w_growth == pytest.approx(1 / (5 * beta + 2), abs=0.005)  # Eq. 127 corrected
    # the fitted slope approaches the asymptote from above as the window grows with D
    assert np.all(np.diff(ex.exponent_by_size) < 0) and ex.trend[0] < ex.exponent_by_size[-1]
    assert set(ex.metrics()) >= {"w5_time_exponent_fit", "w5_time_exponent_extrapolation_err"}


def test_time_exponents_refuse_a_dimension_without_a_fitting_window() -> None:
    with pytest.raises(ValueError, match="^D: the fitting window"):
        power_five_time_exponents(D=800, nu=1.0, beta=1.0, t=np.geomspace(1e-2, 1e8, 50))


def test_readout_comparison_peaks_and_their_errors() -> None:
    rd = readout_comparison(D=3, P=6, K=3, B=4, L=2, s0=1.2, a0=0.3, eta=0.1, steps=15, seeds=2, n_draws=8, seed=1)
    np.testing.assert_array_equal(rd.m, np.array([r.a_o * r.a_y for r in rd.runs]))
    draws = context_draws(np.ones(3), np.ones(3), 6, rng=np.random.default_rng(1 + 88), n_draws=8)
    np.testing.assert_array_equal(rd.path.m, readout_descent_path(draws, 2, 3, eta=0.1, steps=15, a0=0.3, s0=1.2).m)
    se = np.hypot(standard_error(rd.m.max(axis=1)), rd.peak_theory_se)
    assert rd.peak_se_total == pytest.approx(se, rel=1e-15)
    assert rd.peak_z(rd.path) == pytest.approx(abs(rd.m.max(axis=1).mean() - rd.path.m.max()) / se, rel=1e-14)
    assert np.all(rd.overshoot >= 0)  # the peak is at least the final value
    assert rd.metrics()["readout_m_overshoot_theory"] == pytest.approx(rd.path.m.max() / rd.path.m[-1] - 1)
