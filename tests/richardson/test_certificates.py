"""Tests for iclcore.richardson.certificates (seed 001 §2)."""

import numpy as np
import pytest

from iclcore.richardson.certificates import clipped_empirical_bernstein, eb_coverage, eb_coverage_from_pool


def test_formula_by_hand():
    x = np.array([0.1, 0.5, 2.0, 0.3])  # clip at 1 -> [0.1, 0.5, 1.0, 0.3]
    b = clipped_empirical_bernstein(x, clip=1.0, delta=0.1)
    xc = np.array([0.1, 0.5, 1.0, 0.3])
    m, v, lg = xc.mean(), xc.var(ddof=1), np.log(20.0)
    assert np.isclose(b.mean, m, rtol=1e-14)
    assert np.isclose(b.variance, v, rtol=1e-14)
    assert np.isclose(b.upper, m + np.sqrt(2 * v * lg / 4) + 7 * lg / 9, rtol=1e-14)


def test_batched_equals_rowwise():
    rng = np.random.default_rng(0)
    x = rng.exponential(size=(5, 30))
    b = clipped_empirical_bernstein(x, 2.0, 0.05)
    for i in range(5):
        assert np.isclose(b.upper[i], clipped_empirical_bernstein(x[i], 2.0, 0.05).upper, rtol=1e-14)


@pytest.mark.parametrize("delta", [0.05, 0.2])
def test_coverage_bernoulli(delta):
    """Coverage of the true mean over 4000 repetitions is >= 1 − δ − 3 s.e."""
    rng = np.random.default_rng(1)
    p = 0.3

    def draw(reps, n, g):
        return (g.random((reps, n)) < p).astype(float)

    cov = eb_coverage(draw, p, 40, 1.0, delta, 4000, rng)
    assert cov >= 1 - delta - 3 * np.sqrt(delta * (1 - delta) / 4000)


def test_coverage_heavy_tail_pool_and_clipping():
    """Pool of lognormal losses clipped at c: coverage >= 1 − δ; the unclipped mean can exceed the bound."""
    rng = np.random.default_rng(2)
    pool = rng.lognormal(0.0, 2.0, size=20000)
    cov, true = eb_coverage_from_pool(pool, 50, 3.0, 0.05, 4000, rng)
    assert cov >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / 4000)
    assert true < pool.mean()  # clipping lowers the target


def test_bound_is_not_trivially_loose():
    """Sanity (can fail): with n = 10^5 the bound is within 2% + O(1/n) of the mean for a [0,1] law."""
    rng = np.random.default_rng(3)
    b = clipped_empirical_bernstein(rng.random(100_000), 1.0, 0.05)
    assert b.upper - 0.5 < 0.01


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(losses=np.ones(5), clip=0.0), "clip"),
        (dict(losses=np.ones(5), clip=1.0, delta=1.0), "delta"),
        (dict(losses=np.ones(1), clip=1.0), "losses"),
        (dict(losses=-np.ones(5), clip=1.0), "losses"),
        (dict(losses=np.array([1.0, np.nan]), clip=1.0), "losses"),
    ],
)
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        clipped_empirical_bernstein(**kwargs)


def test_bad_coverage_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="pool"):
        eb_coverage_from_pool(np.ones(1), 5, 1.0, 0.1, 10, rng)
    with pytest.raises(ValueError, match="n"):
        eb_coverage_from_pool(np.ones(10), 1, 1.0, 0.1, 10, rng)
    with pytest.raises(ValueError, match="n_repeats"):
        eb_coverage_from_pool(np.ones(10), 5, 1.0, 0.1, 0, rng)
    with pytest.raises(ValueError, match="draw_losses"):
        eb_coverage(lambda r, n, g: np.ones((2, 2)), 0.5, 5, 1.0, 0.1, 10, rng)


def test_richardson_certificate_takes_a_precomputed_operator_norm() -> None:
    """Passing ``‖I − PH‖_2`` gives the same certificate; a wrong shape names the parameter."""
    from iclcore.lsq.iterates import contraction_factor, richardson_certificate

    rng = np.random.default_rng(5)
    A = rng.standard_normal((20, 6, 6))
    H = A @ A.transpose(0, 2, 1) / 6 + 0.1 * np.eye(6)
    P = 0.3 * np.eye(6) + 0.02 * rng.standard_normal((6, 6))
    e0 = rng.standard_normal((20, 6))
    own = richardson_certificate(P, H, e0, 5)
    given = richardson_certificate(P, H, e0, 5, operator_norm=contraction_factor(P, H).operator_norm)
    np.testing.assert_array_equal(own.bounds, given.bounds)
    assert own.violation_rate == given.violation_rate == 0.0
    with pytest.raises(ValueError, match="operator_norm"):
        richardson_certificate(P, H, e0, 5, operator_norm=np.ones(3))
