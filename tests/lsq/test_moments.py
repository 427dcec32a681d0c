"""Tests for iclcore.lsq.moments: Wishart closed forms against Monte Carlo (seed 000 §3.1)."""

import numpy as np
import pytest

from iclcore.lsq.moments import (
    closed_form_moments,
    decoder_risk,
    effective_dimension,
    monte_carlo_moments,
    oracle_preconditioner,
    oracle_risk,
    population_moments,
    wishart_sandwich,
)
from iclcore.lsq.tasks import TaskConfig, sample_prompts


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def test_wishart_sandwich_monte_carlo():
    """E[Σ̂ A Σ̂] closed form vs 100000 explicit draws (K=3, M=4): entrywise error < 3% of max."""
    rng = np.random.default_rng(0)
    Sig = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])
    A = np.array([[1.0, 0.5, 0.0], [0.5, 2.0, -0.3], [0.0, -0.3, 0.7]])
    X = rng.standard_normal((100000, 4, 3)) @ np.linalg.cholesky(Sig).T
    Sh = np.einsum("nmi,nmj->nij", X, X) / 4
    mc = np.einsum("nij,jk,nkl->il", Sh, A, Sh) / 100000
    assert _rel(mc, wishart_sandwich(Sig, A, 4)) < 0.03
    # the (1+1/M) and trace terms matter: dropping them is detectably wrong
    assert _rel(mc, Sig @ A @ Sig) > 0.2


def test_wishart_sandwich_stack_equals_each_matrix_and_the_former_logistic_copy():
    """A stack (2, 3, K, K) of symmetric A gives the moment of each matrix, and equals to rounding
    the private copy that iclcore.logistic.exact used before (``(N+1)/N Σ A Σ + tr(AΣ) Σ / N``)."""
    rng = np.random.default_rng(3)
    K, M = 4, 7
    G = rng.standard_normal((K, K))
    Sig = G @ G.T + 0.1 * np.eye(K)
    B = rng.standard_normal((2, 3, K, K))
    A = B + np.swapaxes(B, -1, -2)
    got = wishart_sandwich(Sig, A, M)
    assert got.shape == A.shape
    old = (M + 1) / M * Sig @ A @ Sig + np.einsum("...ij,ji->...", A, Sig)[..., None, None] * Sig / M
    np.testing.assert_allclose(got, old, rtol=1e-13, atol=1e-13 * np.abs(old).max())
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], wishart_sandwich(Sig, A[i, j], M), rtol=1e-14, atol=1e-14)
    with pytest.raises(ValueError, match="^A:"):
        wishart_sandwich(Sig, B, M)  # one non-symmetric matrix in the stack
    with pytest.raises(ValueError, match="Sigma, A"):
        wishart_sandwich(Sig, A[..., :3, :3], M)


@pytest.mark.parametrize(
    "cfg",
    [
        TaskConfig(K=4, M=6, r=2, sigma=0.7, lam=0.1, cond=5.0),
        TaskConfig(K=4, M=12, sigma=0.7, lam=0.0, cond=5.0, target="ridge"),
    ],
)
def test_closed_form_vs_monte_carlo(cfg):
    """Closed-form C, B, S vs 200000 Monte Carlo prompts: < 4% of the max entry (MC error ~1%)."""
    mc = monte_carlo_moments(cfg, 200_000, np.random.default_rng(1))
    cf = closed_form_moments(cfg)
    assert _rel(mc.C, cf.C) < 0.04
    assert _rel(mc.B, cf.B) < 0.04
    assert _rel(mc.S, cf.S) < 0.04
    assert cf.method == "closed" and mc.method == "mc" and mc.n_samples == 200_000


def test_oracle_normal_equation_and_floor():
    cfg = TaskConfig(K=6, M=10, r=3, sigma=0.3, cond=20.0)
    m = closed_form_moments(cfg)
    P = oracle_preconditioner(m)
    assert np.allclose(P @ m.C, m.B, rtol=1e-10, atol=1e-12)
    R = oracle_risk(m)
    assert np.isclose(decoder_risk(P, m), R, rtol=1e-10)
    # oracle is the minimiser: random perturbations increase the risk by (1/K) Tr(E C Eᵀ)
    rng = np.random.default_rng(2)
    for _ in range(5):
        E = 0.1 * rng.standard_normal((6, 6))
        assert np.isclose(decoder_risk(P + E, m) - R, np.trace(E @ m.C @ E.T) / 6, rtol=1e-9)
    # oracle risk vs empirical risk of P⋆ on 100000 fresh prompts (std error ~0.5%): 3%
    p = sample_prompts(cfg, 100_000, np.random.default_rng(3))
    emp = np.mean(np.sum((p.d @ P.T - p.z_star) ** 2, axis=1)) / 6
    assert abs(emp - R) < 0.03 * R


def test_population_moments_dispatch():
    cfg = TaskConfig(K=3, M=8, lam=0.1, target="ridge")
    with pytest.raises(ValueError, match="lam"):
        closed_form_moments(cfg)
    with pytest.raises(ValueError, match="rng"):
        population_moments(cfg)
    m = population_moments(cfg, n_samples=2000, rng=np.random.default_rng(0))
    assert m.method == "mc"
    assert population_moments(cfg.replace(target="beta")).method == "closed"
    with pytest.raises(ValueError, match="method"):
        population_moments(cfg, method="x")
    with pytest.raises(ValueError, match="M"):
        closed_form_moments(TaskConfig(K=4, M=5, target="ridge"))
    with pytest.raises(ValueError, match="n_samples"):
        monte_carlo_moments(cfg, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="A"):
        wishart_sandwich(np.eye(2), np.array([[0.0, 1.0], [0.0, 0.0]]), 3)
    with pytest.raises(ValueError, match="M"):
        wishart_sandwich(np.eye(2), np.eye(2), 0)


def test_effective_dimension():
    C = np.diag([4.0, 1.0, 0.0])
    assert effective_dimension(C, 0.0) == 2
    assert np.isclose(effective_dimension(C, 1.0), 4 / 5 + 1 / 2)
    with pytest.raises(ValueError, match="lam"):
        effective_dimension(C, -1.0)
    with pytest.raises(ValueError, match="C"):
        effective_dimension(np.ones(3), 1.0)


def test_moments_reject_non_psd_and_nan_input_naming_the_parameter():
    """A non-PSD, NaN or asymmetric covariance is a one-line ValueError naming it, not a garbage moment."""
    bad = np.diag([4.0, 2.0, 1.0, -0.5])
    nan = np.full((4, 4), np.nan)
    asym = np.array([[1.0, 0.5], [0.0, 1.0]])
    for S in (bad, nan):
        with pytest.raises(ValueError, match="^Sigma:"):
            wishart_sandwich(S, np.eye(4), 10)
        with pytest.raises(ValueError, match="^C:"):
            effective_dimension(S, 0.1)
    with pytest.raises(ValueError, match="^Sigma:"):
        wishart_sandwich(asym, np.eye(2), 10)
    with pytest.raises(ValueError, match="^A:"):
        wishart_sandwich(np.eye(4), nan, 10)
    with pytest.raises(ValueError, match="^C:"):
        effective_dimension(asym, 0.1)
    with pytest.raises(ValueError, match="^lam:"):
        effective_dimension(np.eye(2), np.nan)
