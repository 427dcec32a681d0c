"""iclcore.stats: standard errors of the ledger's error model, against closed forms and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclcore.stats import (
    batch_means,
    clipped_empirical_bernstein,
    combined_standard_error,
    eb_coverage,
    eb_coverage_from_pool,
    increment_z_scores,
    paired_standard_error,
    ratio_standard_error,
    replica_spread,
    single_run_standard_error,
    standard_error,
)


def test_standard_error_closed_form() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    # sample variance 5/3, n = 4
    assert standard_error(x) == pytest.approx(math.sqrt(5 / 3) / 2, rel=1e-14)
    assert replica_spread(x) == pytest.approx(math.sqrt(5 / 3), rel=1e-14)


def test_standard_error_along_an_axis() -> None:
    x = np.random.default_rng(0).normal(size=(5, 3))
    se = standard_error(x, axis=0)
    assert se.shape == (3,)
    np.testing.assert_allclose(se, x.std(axis=0, ddof=1) / math.sqrt(5), rtol=1e-14)
    np.testing.assert_allclose(standard_error(x.T, axis=1), se, rtol=1e-14)


def test_standard_error_covers_the_mean_at_the_stated_rate() -> None:
    # 2000 repetitions of a mean of 50 exponential draws (mean 1): |mean - 1| <= 2 SE in about 95 %
    rng = np.random.default_rng(1)
    x = rng.exponential(size=(2000, 50))
    z = np.abs(x.mean(axis=1) - 1.0) / standard_error(x, axis=1)
    cover = np.mean(z <= 2.0)
    assert abs(cover - 0.95) < 0.03  # binomial SE ~ 0.005; t and skewness corrections ~ 0.01


def test_paired_standard_error_removes_the_common_noise() -> None:
    rng = np.random.default_rng(2)
    common = rng.normal(scale=10.0, size=4000)
    a = common + rng.normal(scale=0.1, size=4000)
    b = common + rng.normal(scale=0.1, size=4000)
    assert paired_standard_error(a, b) == pytest.approx(math.sqrt(0.02) / math.sqrt(4000), rel=0.05)
    assert paired_standard_error(a, b) < standard_error(a) / 50
    with pytest.raises(ValueError, match="^b:"):
        paired_standard_error(a, b[:-1])


def test_combined_standard_error_is_quadrature() -> None:
    assert combined_standard_error(3.0, 4.0) == pytest.approx(5.0, rel=1e-15)
    assert combined_standard_error(0.2) == 0.2
    with pytest.raises(ValueError, match="^se:"):
        combined_standard_error()
    with pytest.raises(ValueError, match="^se:"):
        combined_standard_error(1.0, -1.0)
    with pytest.raises(ValueError, match="^se:"):
        combined_standard_error(float("nan"))


def test_ratio_standard_error_matches_simulation() -> None:
    # independent means a ~ N(2, 0.05^2), b ~ N(4, 0.1^2): sd of a/b against the delta method
    rng = np.random.default_rng(3)
    a = 2.0 + 0.05 * rng.normal(size=200_000)
    b = 4.0 + 0.1 * rng.normal(size=200_000)
    se = ratio_standard_error(2.0, 0.05, 4.0, se_b=0.1)
    assert se == pytest.approx(0.5 * math.sqrt((0.05 / 2) ** 2 + (0.1 / 4) ** 2), rel=1e-14)
    assert np.std(a / b) == pytest.approx(se, rel=0.02)  # second-order terms ~ (0.025)^2 relative
    # a = 0 allowed; full positive correlation of a = b gives 0
    assert ratio_standard_error(0.0, 0.1, 2.0, se_b=0.3) == pytest.approx(0.05)
    assert ratio_standard_error(1.0, 0.1, 1.0, se_b=0.1, cov=0.01) == pytest.approx(0.0, abs=1e-8)  # sqrt of rounding


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: standard_error([1.0]), "^x:"),
        (lambda: standard_error(1.0), "^x:"),
        (lambda: standard_error([1.0, np.nan]), "^x:"),
        (lambda: replica_spread(np.ones((1, 3))), "^x:"),
        (lambda: ratio_standard_error(1.0, 0.1, 0.0, se_b=0.1), "^b:"),
        (lambda: ratio_standard_error(1.0, -0.1, 1.0, se_b=0.1), "^se_a"),
        (lambda: ratio_standard_error(1.0, 0.1, float("inf"), se_b=0.1), "^a, se_a"),
    ],
)
def test_bad_input_names_the_parameter(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_pooled_ks_distance_is_scipys_statistic() -> None:
    from scipy import stats as sps

    from iclcore.stats import pooled_ks_distance

    x = np.random.default_rng(4).normal(size=(20, 50))
    d, se = pooled_ks_distance(x, sps.norm.cdf)
    assert d == pytest.approx(sps.kstest(x.ravel(), sps.norm.cdf).statistic, abs=1e-15)
    assert se > 0


def test_pooled_ks_standard_error_matches_the_binomial_law_for_iid_draws() -> None:
    # iid uniform values: F_d(x) is binomial(m, x)/m, so the SE at x is sqrt(x (1 - x) / (n m))
    from iclcore.stats import pooled_ks_distance

    rng = np.random.default_rng(5)
    n, m = 400, 25
    x = rng.random((n, m))
    d, se = pooled_ks_distance(x, lambda u: np.clip(u, 0.0, 1.0))
    # the sup is attained where F(1 - F) is large: the SE lies between its values at F = 0.1 and F = 0.5
    assert math.sqrt(0.09 / (n * m)) * 0.8 <= se <= math.sqrt(0.25 / (n * m)) * 1.2
    assert d < 4 * math.sqrt(0.25 / (n * m))  # Kolmogorov: P(sqrt(N) D > 2) < 1e-3


def test_pooled_ks_distance_rejects_bad_input() -> None:
    from iclcore.stats import pooled_ks_distance

    with pytest.raises(ValueError, match="^samples:"):
        pooled_ks_distance(np.ones(5), lambda u: u)
    with pytest.raises(ValueError, match="^samples:"):
        pooled_ks_distance(np.ones((1, 5)), lambda u: u)
    with pytest.raises(ValueError, match="^cdf:"):
        pooled_ks_distance(np.ones((2, 5)), lambda u: np.full(3, 0.5))


def test_increment_z_scores_closed_form_and_bad_input() -> None:
    z = increment_z_scores([3.0, 2.0, 2.0, 1.0, 1.5], [0.3, 0.4, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(z[:2], [-1.0 / 0.5, 0.0 / 0.4], rtol=1e-14)
    assert z[2] == -np.inf and z[3] == np.inf
    with pytest.raises(ValueError, match="values"):
        increment_z_scores([1.0], [0.1])
    with pytest.raises(ValueError, match="se"):
        increment_z_scores([1.0, 2.0], [0.1])
    with pytest.raises(ValueError, match="se"):
        increment_z_scores([1.0, 2.0], [0.1, -0.1])


def test_increment_z_scores_calibrated_under_no_change() -> None:
    """With equal means the z-scores are standard normal: P(z <= -2) = 0.0228 within 4 binomial s.e."""
    rng = np.random.default_rng(11)
    n, reps = 20, 4000
    draws = rng.normal(size=(reps, 2, n))
    z = np.array([increment_z_scores(d.mean(1), d.std(1, ddof=1) / math.sqrt(n))[0] for d in draws])
    p = 0.5 * math.erfc(2 / math.sqrt(2))
    # the t(38)-like tails make P(z <= -2) slightly larger than the normal value; allow 4 s.e. plus 0.005
    assert abs(np.mean(z <= -2) - p) <= 4 * math.sqrt(p * (1 - p) / reps) + 0.005


def test_paired_increment_z_scores_closed_form_and_bad_input() -> None:
    """Shared draws: the common noise cancels (a constant shift per draw leaves the z-scores unchanged)."""
    from iclcore.stats import paired_increment_z_scores

    d = np.array([[1.0, 2.0, 3.0], [0.0, 1.5, 2.0]])  # differences -1, -0.5, -1: mean -5/6, sd sqrt(1/12)
    z = paired_increment_z_scores(d)
    assert z.shape == (1,)
    assert z[0] == pytest.approx((-5 / 6) / (math.sqrt(1 / 12) / math.sqrt(3)), rel=1e-12)
    np.testing.assert_allclose(paired_increment_z_scores(d + np.array([10.0, -4.0, 7.0])), z, rtol=1e-12)
    with pytest.raises(ValueError, match="draws"):
        paired_increment_z_scores(np.ones(3))


@pytest.mark.parametrize("shape, axis", [((7,), 0), ((5, 3), 0), ((5, 3), 1), ((4, 6, 3), 1), ((4, 6, 3), -1)])
def test_standard_error_through_scipy_agrees_with_the_former_formula(shape, axis) -> None:
    """``scipy.stats.sem`` (now behind :func:`standard_error`) against the former
    ``std(ddof=1) / sqrt(n)`` and the notebooks' inline ``std(ddof=1) / np.sqrt(n)``: relative 1e-12."""
    rng = np.random.default_rng(sum(shape) + axis)
    for scale in (1e-8, 1.0, 1e6):
        x = scale * rng.lognormal(size=shape)
        new = np.asarray(standard_error(x, axis=axis))
        old = x.std(axis=axis, ddof=1) / math.sqrt(x.shape[axis])
        np.testing.assert_allclose(new, old, rtol=1e-12, atol=0)
        np.testing.assert_allclose(new, x.std(axis=axis, ddof=1) / np.sqrt(x.shape[axis]), rtol=1e-12, atol=0)
    assert isinstance(standard_error(np.arange(4.0)), float)


# ------------------------------------------------------------ the clipped empirical-Bernstein bound


def test_eb_formula_by_hand() -> None:
    """MMNN report §2: mean + sqrt(2 V log(2/δ) / n) + 7 c log(2/δ) / (3 (n - 1)) of the clipped losses."""
    x = np.array([0.1, 0.5, 2.0, 0.3])  # clip at 1 -> [0.1, 0.5, 1.0, 0.3]
    b = clipped_empirical_bernstein(x, clip=1.0, delta=0.1)
    xc = np.array([0.1, 0.5, 1.0, 0.3])
    m, v, lg = xc.mean(), xc.var(ddof=1), np.log(20.0)
    assert np.isclose(b.mean, m, rtol=1e-14)
    assert np.isclose(b.variance, v, rtol=1e-14)
    assert np.isclose(b.upper, m + np.sqrt(2 * v * lg / 4) + 7 * lg / 9, rtol=1e-14)
    assert (b.n, b.clip, b.delta) == (4, 1.0, 0.1)


def test_eb_batched_equals_rowwise() -> None:
    rng = np.random.default_rng(0)
    x = rng.exponential(size=(5, 30))
    b = clipped_empirical_bernstein(x, 2.0, 0.05)
    for i in range(5):
        assert np.isclose(b.upper[i], clipped_empirical_bernstein(x[i], 2.0, 0.05).upper, rtol=1e-14)


@pytest.mark.parametrize("delta", [0.05, 0.2])
def test_eb_coverage_bernoulli(delta) -> None:
    """Coverage of the true mean over 4000 repetitions is >= 1 − δ − 3 s.e."""
    rng = np.random.default_rng(1)
    p = 0.3

    def draw(reps, n, g):
        return (g.random((reps, n)) < p).astype(float)

    cov = eb_coverage(draw, p, 40, clip=1.0, delta=delta, n_repeats=4000, rng=rng)
    assert cov >= 1 - delta - 3 * np.sqrt(delta * (1 - delta) / 4000)


def test_eb_coverage_heavy_tail_pool_and_clipping() -> None:
    """Pool of lognormal losses clipped at c: coverage >= 1 − δ; the unclipped mean can exceed the bound."""
    rng = np.random.default_rng(2)
    pool = rng.lognormal(0.0, 2.0, size=20000)
    cov, true = eb_coverage_from_pool(pool, 50, 3.0, delta=0.05, n_repeats=4000, rng=rng)
    assert cov >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / 4000)
    assert true < pool.mean()  # clipping lowers the target


def test_eb_bound_is_not_trivially_loose() -> None:
    """Sanity (can fail): with n = 10^5 the bound is within 2% + O(1/n) of the mean for a [0,1] law."""
    rng = np.random.default_rng(3)
    b = clipped_empirical_bernstein(rng.random(100_000), 1.0, 0.05)
    assert b.upper - 0.5 < 0.01


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(losses=np.ones(5), clip=0.0), "^clip:"),
        (dict(losses=np.ones(5), clip=math.inf), "^clip:"),
        (dict(losses=np.ones(5), clip=1.0, delta=1.0), "^delta:"),
        (dict(losses=np.ones(5), clip=1.0, delta=math.nan), "^delta:"),
        (dict(losses=np.ones(1), clip=1.0), "^losses:"),
        (dict(losses=-np.ones(5), clip=1.0), "^losses:"),
        (dict(losses=np.array([1.0, np.nan]), clip=1.0), "^losses:"),
    ],
)
def test_eb_bad_input(kwargs, name) -> None:
    with pytest.raises(ValueError, match=name):
        clipped_empirical_bernstein(**kwargs)


def test_eb_bad_coverage_input() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^pool:"):
        eb_coverage_from_pool(np.ones(1), 5, 1.0, delta=0.1, n_repeats=10, rng=rng)
    with pytest.raises(ValueError, match="^n:"):
        eb_coverage_from_pool(np.ones(10), 1, 1.0, delta=0.1, n_repeats=10, rng=rng)
    with pytest.raises(ValueError, match="^n_repeats:"):
        eb_coverage_from_pool(np.ones(10), 5, 1.0, delta=0.1, n_repeats=0, rng=rng)
    with pytest.raises(ValueError, match="^draw_losses:"):
        eb_coverage(lambda r, n, g: np.ones((2, 2)), 0.5, 5, clip=1.0, delta=0.1, n_repeats=10, rng=rng)


def test_batch_means_of_blocks_and_the_former_formula() -> None:
    """Block means of a series (remainder dropped at the start); SE = std(ddof=1) / sqrt(n_blocks)."""
    y = np.arange(11.0)  # n_blocks = 3, k = 3: drop y[0:2], blocks [2,3,4], [5,6,7], [8,9,10]
    m, se = batch_means(y, 3)
    assert m == 6.0 and se == pytest.approx(3.0 / math.sqrt(3), rel=1e-15)
    rng = np.random.default_rng(8)
    z = np.cumsum(rng.normal(size=5003)) * 1e-3  # correlated
    m, se = batch_means(z, 10)
    blocks = z[3:].reshape(10, 500).mean(axis=1)
    assert m == pytest.approx(blocks.mean(), rel=1e-12)
    assert se == pytest.approx(blocks.std(ddof=1) / np.sqrt(10), rel=1e-12)
    for bad, match in ((([1.0, np.nan], 2), "^y:"), ((np.ones((2, 3)), 2), "^y:"), ((np.ones(5), 6), "^n_blocks:")):
        with pytest.raises(ValueError, match=match):
            batch_means(*bad)


def test_batch_means_se_of_iid_series() -> None:
    """For iid noise the batch-means SE estimates sigma / sqrt(T) (within 40% for 20 blocks), and the
    mean is the plain mean of the series used."""
    rng = np.random.default_rng(3)
    y = 2.0 + rng.standard_normal(4000)
    m, se = batch_means(y, 20)
    assert m == pytest.approx(y.mean(), abs=1e-12)
    assert 0.6 < se * np.sqrt(y.size) < 1.4
    with pytest.raises(ValueError, match="n_blocks"):
        batch_means(y, 1)
    with pytest.raises(ValueError, match="y"):
        batch_means(np.array([1.0, np.nan, 2.0]), 2)


def test_ks_critical_value_closed_form_and_ks_two_sample_is_scipys() -> None:
    from scipy import stats as sps

    from iclcore.stats import ks_critical_value, ks_two_sample

    assert ks_critical_value(50, alpha=0.05) == pytest.approx(math.sqrt(math.log(40.0) / 100), rel=1e-15)
    assert ks_critical_value(50, 50, alpha=0.05) == pytest.approx(math.sqrt(math.log(40.0) / 50), rel=1e-15)
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=(30, 4)), rng.normal(size=70)
    assert ks_two_sample(a, b) == sps.ks_2samp(a.ravel(), b).statistic
    for call, match in (
        (lambda: ks_critical_value(0), "^n:"),
        (lambda: ks_critical_value(5, 0), "^m:"),
        (lambda: ks_critical_value(5, alpha=0.0), "^alpha:"),
        (lambda: ks_two_sample([], [1.0]), "^a, b:"),
    ):
        with pytest.raises(ValueError, match=match):
            call()


def test_agreement_within_se_is_the_ledger_rule() -> None:
    from iclcore.stats import agreement_within_se

    a = agreement_within_se(1.05, 1.0, se=0.02, z=3.0)
    assert a.holds and a.z == pytest.approx(2.5) and a.margin == pytest.approx(0.01)
    assert not agreement_within_se(1.07, 1.0, se=0.02).holds  # 3.5 SE
    assert agreement_within_se(1.07, 1.0, se=0.02, discretisation=0.02).holds  # 0.07 <= 0.06 + 0.02
    assert agreement_within_se(0.9, 1.0, se=0.0).z == -np.inf  # signed, also without an SE
    assert agreement_within_se(1.0, 1.0, se=0.0).z == 0.0 and agreement_within_se(1.0, 1.0, se=0.0).holds


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"se": -1.0}, "se"),
        ({"se": np.nan}, "se"),
        ({"value": np.inf}, "value"),
        ({"z": 0.0}, "z"),
        ({"discretisation": -0.1}, "discretisation"),
    ],
)
def test_agreement_within_se_refuses_bad_input_by_name(kwargs, name) -> None:
    from iclcore.stats import agreement_within_se

    args = {"value": 1.0, "reported": 1.0, "se": 0.1, **kwargs}
    with pytest.raises(ValueError, match=f"^{name}"):
        agreement_within_se(**args)


def test_bootstrap_standard_error_of_a_mean_and_a_median() -> None:
    """The bootstrap SE of a mean is close to s/sqrt(n); the one of a median to the asymptotic
    sqrt(pi/2) sigma/sqrt(n) for a Gaussian; vectorized and one-call-per-resample agree exactly."""
    from iclcore.stats import bootstrap_standard_error

    x = np.random.default_rng(0).standard_normal(400)
    se_mean = bootstrap_standard_error(x, np.mean, np.random.default_rng(1), n_resamples=2000)
    assert se_mean == pytest.approx(x.std(ddof=1) / 20, rel=0.1)
    se_med = bootstrap_standard_error(x, np.median, 2, n_resamples=2000)
    assert se_med == pytest.approx(math.sqrt(math.pi / 2) / 20, rel=0.25)
    both = bootstrap_standard_error(np.c_[x, 2 * x], lambda a: np.median(a, 0), 3, n_resamples=300)
    assert both.shape == (2,) and both[1] == pytest.approx(2 * both[0])
    vec = bootstrap_standard_error(np.c_[x, 2 * x], lambda a: np.median(a, -2), 3, n_resamples=300, vectorized=True)
    np.testing.assert_allclose(vec, both, rtol=1e-12)


@pytest.mark.parametrize(
    "args, name, error",
    [
        ((np.ones(1), np.mean, 0), "x", ValueError),
        ((np.ones(5), "mean", 0), "statistic", TypeError),
        ((np.ones(5), np.mean, 0, 1), "n_resamples", ValueError),
        ((np.ones(5), np.mean, -1), "rng", ValueError),
    ],
)
def test_bootstrap_standard_error_refuses_bad_input_by_name(args, name, error) -> None:
    from iclcore.stats import bootstrap_standard_error

    with pytest.raises(error, match=f"^{name}"):
        bootstrap_standard_error(*args[:3], **({"n_resamples": args[3]} if len(args) > 3 else {}))


def test_single_run_standard_error_adds_replica_spread_and_sampling_error() -> None:
    reps = [1.0, 1.2, 0.8, 1.1]
    assert single_run_standard_error(reps, 0.05) == pytest.approx(math.hypot(np.std(reps, ddof=1), 0.05), rel=1e-14)
    assert single_run_standard_error(reps) == pytest.approx(replica_spread(reps), rel=1e-15)
    with pytest.raises(ValueError, match="se"):
        single_run_standard_error(reps, -0.1)
    with pytest.raises(ValueError, match="2 draws"):
        single_run_standard_error([1.0])
