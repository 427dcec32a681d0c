"""Tests of iclcore.models.probes (seed 003 Eqs. 15-16 and the Fig. 4 probes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclcore.logistic import theory as lth
from iclcore.models import probes as pr


def _orth(n, k, rng):
    Q, _ = np.linalg.qr(rng.standard_normal((n, k)))
    return Q


def test_effective_rank_known_values():
    assert pr.entropy_effective_rank(np.eye(5)) == pytest.approx(5.0, rel=1e-12)
    e = np.zeros((4, 3))
    e[0, 0] = 2.0
    assert pr.entropy_effective_rank(e) == pytest.approx(1.0, rel=1e-12)
    # two equal singular values and one zero: rank 2 exactly
    assert pr.entropy_effective_rank(np.diag([3.0, 3.0, 0.0])) == pytest.approx(2.0, rel=1e-12)
    # Eq. (15) uses L1-normalised singular values (not squared): values (2, 1)
    p = np.array([2, 1]) / 3
    assert pr.entropy_effective_rank(np.diag([2.0, 1.0])) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(1e-3, 1e3))
def test_effective_rank_invariances(seed, scale):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((6, 4))
    r = pr.entropy_effective_rank(M)
    assert 1.0 <= r <= 4.0 + 1e-12
    assert pr.entropy_effective_rank(scale * M) == pytest.approx(r, rel=1e-10)
    Q = _orth(6, 6, rng)
    assert pr.entropy_effective_rank(Q @ M) == pytest.approx(r, rel=1e-10)


def test_marginalized_effective_rank_sorted_and_ordered():
    out = pr.marginalized_effective_rank(np.ones(6), 3)
    np.testing.assert_allclose(out, [6, 5, 4, 3], rtol=1e-12)
    v = np.array([0.1, 5.0, 1.0, 1.0])
    sorted_curves = pr.marginalized_effective_rank(v, 1)
    assert sorted_curves[1] == pytest.approx(pr.effective_rank_of_values([1.0, 1.0, 0.1]), rel=1e-12)
    ordered = pr.marginalized_effective_rank(v, 1, drop_order=[0, 1, 2, 3])
    assert ordered[1] == pytest.approx(pr.effective_rank_of_values([5.0, 1.0, 1.0]), rel=1e-12)
    batch = pr.marginalized_effective_rank(np.ones((7, 4)), 2)
    assert batch.shape == (7, 3)


def test_subspace_distance_zero_for_same_row_space_even_rank_deficient():
    rng = np.random.default_rng(0)
    Mt = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 8))  # rank 2
    G = rng.standard_normal((6, 6))  # invertible a.s.
    assert pr.subspace_distance(Mt, G @ Mt) < 1e-10
    # full column rank -> identically zero (documented limitation of Eq. 16)
    assert pr.subspace_distance(rng.standard_normal((8, 5)), rng.standard_normal((3, 5))) < 1e-12


def test_subspace_distance_orthogonal_is_one_and_row_space_angles():
    rng = np.random.default_rng(1)
    Q = _orth(10, 6, rng)
    A = Q[:, :3].T  # rows orthonormal
    B = Q[:, 3:].T
    assert pr.subspace_distance(A, B) == pytest.approx(1.0, rel=1e-12)
    # known angles: rows cos(th_i) e_i + sin(th_i) f_i
    th = np.array([0.2, 0.7, 1.1])
    E, F = Q[:, :3], Q[:, 3:]
    M_inf = (E * np.cos(th) + F * np.sin(th)).T  # orthonormal rows
    M_t = rng.standard_normal((5, 3)) @ E.T  # row space span(E)
    np.testing.assert_allclose(np.sort(pr.row_space_angles(M_t, M_inf, rank1=3)), np.sort(th), atol=1e-12)
    # Eq. (16) squared = mean sin^2 of the principal angles when M_inf has orthonormal rows
    assert pr.subspace_distance(M_t, M_inf, rank=3) ** 2 == pytest.approx(np.mean(np.sin(th) ** 2), rel=1e-12)


def test_subspace_distance_matches_pinv_solution_and_float32_rank():
    rng = np.random.default_rng(2)
    Mt = rng.standard_normal((7, 3)) @ rng.standard_normal((3, 9))
    Minf = rng.standard_normal((4, 9))
    A = Minf @ np.linalg.pinv(Mt, rcond=1e-10)
    ref = np.linalg.norm(A @ Mt - Minf) / np.linalg.norm(Minf)
    assert pr.subspace_distance(Mt, Minf) == pytest.approx(ref, rel=1e-10)
    # float32 rank-3 product with spurious tiny singular values: rank threshold keeps it stable
    Wv = rng.standard_normal((32, 3)).astype(np.float32)
    Wo = rng.standard_normal((3, 32)).astype(np.float32)
    ov = Wv @ Wo
    target = rng.standard_normal((4, 32))
    d_auto = pr.subspace_distance(ov, target)
    d_rank = pr.subspace_distance(ov, target, rank=3)
    assert 0 < d_rank < 1
    assert d_auto == pytest.approx(d_rank, rel=1e-5)
    assert pr.row_space_basis(ov).shape[1] == 3


def test_lag_autocorrelation_and_curvature_of_known_series():
    L = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pr.lag_autocorrelation(L), [14 / 3, 8 / 2, 3.0])
    x = np.linspace(0, 1, 101)
    y = 3 * x**2 - x
    np.testing.assert_allclose(pr.smoothed_derivative(y, x[1] - x[0], order=2), 6.0, rtol=1e-9)
    peaks = pr.find_extrema(np.exp(-((x - 0.3) ** 2) / 0.001) + 0.5 * np.exp(-((x - 0.7) ** 2) / 0.001), x)
    np.testing.assert_allclose(peaks, [0.3, 0.7], atol=1e-12)


def test_probes_locate_mode_times_on_theory_curves():
    """On the paper's a_alpha(t) (Eq. 13) with modes separated by factors of 2 in tau
    (S = diag(2^{-k/2}), N = 64, a0 = 1e-4, eta P = 1):
    * the k-th mode-ordered marginalized effective rank is minimal within tau_{k+1} of t_half;
    * the curvature A''(lag) of the loss autocorrelation has positive peaks within
      0.5 tau_alpha of every t_cliff (the initial plateau dominates the lag average);
    * the norm curvature n''(t), n = sqrt(sum a) = ||p2||_F for p = q, peaks before and has a
      trough after each t_half, both within 1.5 tau_alpha."""
    s, N, eta, P, a0 = 2.0 ** (-np.arange(4) / 2), 64, 1.0, 1, 1e-4
    tau = lth.timescales(s, eta, P)
    th = lth.half_time(a0, s, N, eta=eta, P=P)
    tc = lth.cliff_time(a0, s, N, eta=eta, P=P)
    t = np.linspace(0, 1.6 * th[-1], 4001)
    dt = t[1] - t[0]
    a = lth.logistic_solution(t, a0, s, N=N, eta=eta, P=P)
    mer = pr.marginalized_effective_rank(np.abs(a), 2, drop_order=np.arange(4))
    for k in range(3):
        assert abs(t[np.argmin(mer[:, k])] - th[k]) < tau[k]
    A2 = pr.smoothed_derivative(pr.lag_autocorrelation(lth.paper_loss(a, s, N)), dt, window=31)
    peaks = pr.find_extrema(A2, t, prominence=1e-3)
    for k in range(4):
        assert np.min(np.abs(peaks - tc[k])) < 0.5 * tau[k]
    n2 = pr.smoothed_derivative(np.sqrt(a.sum(1)), dt, window=31)
    up = pr.find_extrema(n2, t, prominence=1e-4)
    down = pr.find_extrema(n2, t, sign=-1, prominence=1e-4)
    for k in range(4):
        before = up[(up < th[k]) & (up > th[k] - 1.5 * tau[k])]
        after = down[(down > th[k]) & (down < th[k] + 1.5 * tau[k])]
        assert before.size == 1 and after.size == 1


def test_moving_average_removes_period():
    t = np.arange(200)
    y = 0.1 * t + np.sin(2 * np.pi * t / 8)
    m = pr.moving_average(y, 8)
    assert m.shape == (193,)
    np.testing.assert_allclose(m, 0.1 * (t[:193] + 3.5), atol=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="k"):
        pr.moving_average(np.ones(5), 6)
    with pytest.raises(ValueError, match="values"):
        pr.effective_rank_of_values([1.0, -1.0])
    with pytest.raises(ValueError, match="values"):
        pr.effective_rank_of_values(np.zeros(3))
    with pytest.raises(ValueError, match="M"):
        pr.entropy_effective_rank(np.ones(3))
    with pytest.raises(ValueError, match="n_drop"):
        pr.marginalized_effective_rank(np.ones(3), 3)
    with pytest.raises(ValueError, match="drop_order"):
        pr.marginalized_effective_rank(np.ones(3), 1, drop_order=[0, 0, 1])
    with pytest.raises(ValueError, match="M_t"):
        pr.subspace_distance(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="M_inf"):
        pr.subspace_distance(np.ones((3, 4)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="rank"):
        pr.subspace_distance(np.ones((3, 4)), np.ones((3, 4)), rank=9)
    with pytest.raises(ValueError, match="window"):
        pr.smoothed_derivative(np.ones(5), 1.0, window=7)
    with pytest.raises(ValueError, match="dx"):
        pr.smoothed_derivative(np.ones(15), 0.0)
    with pytest.raises(ValueError, match="max_lag"):
        pr.lag_autocorrelation(np.ones(5), 9)
    with pytest.raises(ValueError, match="sign"):
        pr.find_extrema(np.ones(5), np.arange(5.0), sign=0)


def test_block_average_means_of_blocks():
    y = np.arange(10.0)
    np.testing.assert_array_equal(pr.block_average(y, 3), [1.0, 4.0, 7.0])
    np.testing.assert_array_equal(pr.block_average(np.stack([y, 2 * y]), 5), [[2.0, 7.0], [4.0, 14.0]])
    with pytest.raises(ValueError, match="k"):
        pr.block_average(y, 11)


def test_trailing_average_matches_explicit_windows():
    rng = np.random.default_rng(0)
    y = rng.normal(size=17)
    got = pr.trailing_average(y, 4)
    want = [y[max(0, j - 3) : j + 1].mean() for j in range(17)]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match="k"):
        pr.trailing_average(y, 0)


def test_uniform_window_null_rate_matches_a_closed_form():
    """One event, one target window of total width 0.2 on [0, 1] (away from the edges): rate 0.2."""
    from iclcore.models.probes import uniform_window_null_rate, window_hits

    assert list(window_hits([0.5, 3.0], [0.45, 2.0], [0.1, 0.5])) == [True, False]
    assert not window_hits([], [1.0], [1.0]).any()
    rate = uniform_window_null_rate(
        1, (0.0, 1.0), [0.5], halfwidths=[0.1], min_hits=1, rng=np.random.default_rng(0), draws=20000
    )
    assert rate == pytest.approx(0.2, abs=0.01)
    with pytest.raises(ValueError, match="span"):
        uniform_window_null_rate(1, (1.0, 1.0), [0.5], halfwidths=[0.1], min_hits=1, rng=np.random.default_rng(0))


def test_uniform_window_null_hits_paired_closed_form_and_offsets():
    """Paired windows: a target counts if a uniform event hits its window and another hits the paired
    window; with one event each and windows of width 0.2 on [0, 1] the rate is 0.2^2 = 0.04
    (binomial s.e. at 20000 draws 0.0014; allowance 4 s.e.). Offsets are in units of the scale."""
    from iclcore.models.probes import nearest_event_offset, uniform_window_null_hits

    hits = uniform_window_null_hits(
        1, (0.0, 1.0), [0.3], halfwidths=[0.1], rng=np.random.default_rng(1), draws=20000, paired=(1, [0.7])
    )
    assert hits.dtype.kind == "i" and set(np.unique(hits)) <= {0, 1}
    assert abs(hits.mean() - 0.04) <= 4 * np.sqrt(0.04 * 0.96 / 20000)
    np.testing.assert_allclose(nearest_event_offset([1.0, 4.0], [2.0, 3.5], [2.0, 0.5]), [0.5, 1.0])
    assert np.isinf(nearest_event_offset([], [1.0], [1.0])).all()
    with pytest.raises(ValueError, match="scales"):
        nearest_event_offset([1.0], [1.0], [0.0])
    with pytest.raises(ValueError, match="draws"):
        uniform_window_null_hits(1, (0.0, 1.0), [0.5], halfwidths=[0.1], rng=np.random.default_rng(0), draws=0)


def test_checkpoint_probes_known_subspaces_and_ranks():
    """sd = 0 at the final checkpoint and for any M(t) = G M(inf) (same row space), sd = 1 for an
    orthogonal row space; two equal singular values give effective rank 2 (k = 0) and 1 (k = 1)."""
    rng = np.random.default_rng(0)
    Q = _orth(6, 4, rng)  # columns: an orthonormal basis; rows of M(inf) span Q[:, :2]
    heads_final = np.stack([np.eye(6)[:, :2] @ Q[:, :2].T for _ in range(3)])  # (3, 6, 6), singular values (1, 1)
    t0 = np.stack([rng.standard_normal((6, 2)) @ Q[:, 2:].T for _ in range(3)])  # orthogonal row space
    t1 = np.stack([rng.standard_normal((6, 6)) @ h for h in heads_final])  # same row space
    mats = np.stack([t0, t1, heads_final])  # (T=3, 3 heads, 6, 6)
    mer, sd = pr.checkpoint_probes(mats, rank=2, n_drop=1)
    np.testing.assert_allclose(sd, [1.0, 0.0, 0.0], atol=1e-12)
    assert mer.shape == (3, 2)
    np.testing.assert_allclose(mer[-1], [2.0, 1.0], rtol=1e-12)
    with pytest.raises(ValueError, match="rank"):
        pr.checkpoint_probes(mats, rank=7)
    with pytest.raises(ValueError, match="mats"):
        pr.checkpoint_probes(np.eye(3), rank=1)


def test_first_step_where():
    steps = np.array([0, 10, 20, 30])
    assert pr.first_step_where(np.array([False, False, True, True]), steps) == 20.0
    assert np.isnan(pr.first_step_where(np.zeros(4, dtype=bool), steps))
    with pytest.raises(ValueError, match="mask"):
        pr.first_step_where(np.array([0.0, 1.0, 1.0, 1.0]), steps)
