"""Tests of the deterministic Richardson certificate (:func:`iclcore.lsq.iterates.richardson_certificate`).

The statistical certificate (the clipped empirical-Bernstein bound) is tested with the statistics
module, in ``tests/utils/test_stats.py``.
"""

import numpy as np
import pytest


def test_richardson_certificate_takes_a_precomputed_operator_norm() -> None:
    """Passing ``‖I − PH‖_2`` gives the same certificate; a wrong shape names the parameter."""
    from iclcore.lsq.iterates import contraction_factor, richardson_certificate

    rng = np.random.default_rng(5)
    A = rng.standard_normal((20, 6, 6))
    H = A @ A.transpose(0, 2, 1) / 6 + 0.1 * np.eye(6)
    P = 0.3 * np.eye(6) + 0.02 * rng.standard_normal((6, 6))
    e0 = rng.standard_normal((20, 6))
    own = richardson_certificate(P, H, e0, L=5)
    given = richardson_certificate(P, H, e0, L=5, operator_norm=contraction_factor(P, H).operator_norm)
    np.testing.assert_array_equal(own.bounds, given.bounds)
    assert own.violation_rate == given.violation_rate == 0.0
    with pytest.raises(ValueError, match="operator_norm"):
        richardson_certificate(P, H, e0, L=5, operator_norm=np.ones(3))
