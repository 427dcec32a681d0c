"""Seed 004 §8.1 synthetic panel (Figure 1)."""

from __future__ import annotations

import numpy as np
import pytest

from iclcore.gd.synthetic import compounding, eigenchannel_panel, scalar_loss_ratio, spectrum_design


@pytest.mark.parametrize("a", [0.3, 0.6, 1.0, 1.5])
def test_panel_a_realizable_matches_to_rounding_nonrealizable_does_not(a):
    ratio, pred = scalar_loss_ratio(a, 1.0, 20)
    np.testing.assert_allclose(ratio, pred, rtol=1e-12, atol=1e-15)
    ratio_n, _ = scalar_loss_ratio(a, 1.0, 20, Lstar=0.5)
    assert np.abs(ratio_n - pred).max() > 0.1


def test_panel_b_channels_follow_their_factors_and_the_extremes_tie():
    lam = np.geomspace(0.9, 108.0, 5)
    X = spectrum_design(20, lam, 42)
    np.testing.assert_allclose(np.linalg.eigvalsh(X.T @ X), lam, rtol=1e-12)
    y = X @ np.random.default_rng(42).standard_normal(5)
    p = eigenchannel_panel(X, y, 20)
    np.testing.assert_allclose(p.sq_err, p.predicted, rtol=1e-9, atol=1e-12 * p.sq_err[0].max())
    assert p.factors[0] == pytest.approx(p.factors[-1], rel=1e-12)
    assert p.factors[0] == pytest.approx(0.9672, abs=5e-5)
    assert np.all(p.factors[1:-1] < p.factors[0])


def test_panel_c_compounding_values():
    v = compounding(np.array([0.9]), (2, 5, 10))[:, 0]
    np.testing.assert_allclose(v, [0.81, 0.59049, 0.3486784401], rtol=1e-12)
    with pytest.raises(ValueError, match="rho2"):
        compounding(np.array([1.5]))
