"""Tests for iclcore.lsq.tasks (seed 000 §1.2)."""

import numpy as np
import pytest

from iclcore.lsq.tasks import (
    TaskConfig,
    design_covariance,
    design_spectrum,
    ridge_solution,
    sample_prompt_statistics,
    sample_prompts,
    task_basis,
)


def test_design_spectrum_condition_and_trace():
    for kind in ("geometric", "linear"):
        lam = design_spectrum(64, 100.0, kind)
        assert lam.shape == (64,)
        assert np.isclose(lam.max() / lam.min(), 100.0, rtol=1e-12)
        assert np.isclose(lam.sum(), 64.0, rtol=1e-12)
        assert np.all(np.diff(lam) < 0)
    S = design_covariance(8, 10.0)
    assert np.allclose(S, np.diag(np.diag(S)))
    assert np.allclose(design_spectrum(5, 1.0, "identity"), 1.0)


def test_geometric_ratio_constant():
    lam = design_spectrum(10, 50.0, "geometric")
    ratios = lam[1:] / lam[:-1]
    assert np.allclose(ratios, ratios[0], rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(K=0), "K"),
        (dict(M=0), "M"),
        (dict(r=20), "r"),
        (dict(sigma=-1.0), "sigma"),
        (dict(lam=-0.1), "lam"),
        (dict(cond=0.5), "cond"),
        (dict(spectrum="bogus"), "kind"),
        (dict(target="bogus"), "target"),
        (dict(task_scale=0.0), "task_scale"),
        (dict(U_star=np.ones((16, 16))), "U_star"),
        (dict(Sigma_x_override=-np.eye(16)), "Sigma_x_override"),
        (dict(Sigma_x_override=np.triu(np.ones((16, 16)))), "Sigma_x_override"),
        (dict(target="ridge", lam=0.0, M=8), "lam"),
    ],
)
def test_config_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TaskConfig(**kwargs)


def test_bad_spectrum_calls():
    with pytest.raises(ValueError, match="kind"):
        design_spectrum(4, 1.0, "nope")
    with pytest.raises(ValueError, match="cond"):
        design_spectrum(4, 2.0, "identity")
    with pytest.raises(ValueError, match="r"):
        task_basis(4, 5)
    with pytest.raises(ValueError, match="n_prompts"):
        sample_prompts(TaskConfig(), 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        sample_prompts(TaskConfig(), 3, "seed")
    with pytest.raises(ValueError, match="M"):
        sample_prompt_statistics(TaskConfig(K=8, M=4), 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="H, c"):
        ridge_solution(np.eye(3), np.ones(3))


def test_prompt_shapes_and_identities():
    cfg = TaskConfig(K=6, M=10, r=3, sigma=0.2, lam=0.05)
    p = sample_prompts(cfg, 7, np.random.default_rng(1))
    assert p.X.shape == (7, 10, 6) and p.y.shape == (7, 10)
    assert p.z.shape == (7, 3) and p.beta.shape == (7, 6)
    assert p.H_M.shape == (7, 6, 6) and p.c_M.shape == (7, 6)
    # beta lies in span U⋆ and equals U⋆ z exactly
    assert np.allclose(p.beta, p.z @ cfg.basis.T, atol=0)
    # H_M, c_M definitions (per prompt, naive) to 1e-12
    for i in range(7):
        X, y = p.X[i], p.y[i]
        assert np.allclose(p.H_M[i], X.T @ X / 10 + 0.05 * np.eye(6), rtol=1e-12, atol=1e-13)
        assert np.allclose(p.c_M[i], X.T @ y / 10, rtol=1e-12, atol=1e-13)
    # decoder pair: d = c_M, H z† = d, z⋆ = β for target="beta"
    assert np.array_equal(p.d, p.c_M)
    assert np.allclose(np.einsum("nij,nj->ni", p.H_M, p.z_dagger), p.d, atol=1e-12)
    assert np.array_equal(p.z_star, p.beta)
    p2 = sample_prompts(cfg.replace(target="ridge"), 7, np.random.default_rng(1))
    assert np.array_equal(p2.z_star, p2.z_dagger)


def test_seeded_reproducibility():
    cfg = TaskConfig(K=4, M=5)
    a = sample_prompts(cfg, 3, np.random.default_rng(3))
    b = sample_prompts(cfg, 3, np.random.default_rng(3))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)


def test_min_norm_solution_when_singular():
    cfg = TaskConfig(K=8, M=4, lam=0.0)
    p = sample_prompts(cfg, 5, np.random.default_rng(2))
    # z† = H^† c is the minimum-norm solution: it lies in the row space of X
    for i in range(5):
        X = p.X[i]
        proj = X.T @ np.linalg.pinv(X.T)
        assert np.allclose(proj @ p.z_dagger[i], p.z_dagger[i], atol=1e-10)
        assert np.allclose(p.H_M[i] @ p.z_dagger[i], p.c_M[i], atol=1e-10)


def test_statistics_sampler_matches_explicit_moments():
    """Bartlett/sufficient-statistics sampler has the law of the explicit sampler.

    Compare E[H], E[c cᵀ] and E[β cᵀ] against the exact values
    Σ + λI, (1+1/M) Σ Σβ Σ + (Tr(Σβ Σ) + σ²) Σ / M, Σβ Σ.
    n = 40000 prompts: entrywise relative Monte Carlo error ~ few/sqrt(n) ~ 2%; we allow 6%
    of the largest entry.
    """
    cfg = TaskConfig(K=4, M=6, sigma=2.0, lam=0.1, cond=5.0)  # noise term is a visible part of C
    S, Sb, M = cfg.Sigma_x, cfg.Sigma_beta, cfg.M
    C_exact = (1 + 1 / M) * S @ Sb @ S + (np.trace(Sb @ S) + cfg.sigma**2) / M * S
    for sampler, seed in ((sample_prompts, 0), (sample_prompt_statistics, 1)):
        p = sampler(cfg, 40000, np.random.default_rng(seed))
        EH = p.H_M.mean(0)
        C = np.einsum("ni,nj->ij", p.c_M, p.c_M) / p.n
        B = np.einsum("ni,nj->ij", p.beta, p.c_M) / p.n
        assert np.abs(EH - (S + 0.1 * np.eye(4))).max() < 0.03 * S.max()
        assert np.abs(C - C_exact).max() < 0.06 * np.abs(C_exact).max()
        assert np.abs(B - Sb @ S).max() < 0.06 * np.abs(Sb @ S).max()


def test_statistics_sampler_wishart_variance():
    """Var of the (0,0) entry of Σ̂: 2 Σ_00² / M (Wishart); 60000 draws, 5% tolerance."""
    cfg = TaskConfig(K=3, M=5, cond=4.0)
    p = sample_prompt_statistics(cfg, 60000, np.random.default_rng(5))
    v = p.H_M[:, 0, 0].var()
    exact = 2 * cfg.Sigma_x[0, 0] ** 2 / 5
    assert abs(v - exact) < 0.05 * exact
    off = p.H_M[:, 0, 1].var()
    exact_off = cfg.Sigma_x[0, 0] * cfg.Sigma_x[1, 1] / 5
    assert abs(off - exact_off) < 0.05 * exact_off


def test_decoder_pair_sampler_moments():
    """The O(nK²) pair sampler reproduces E[d dᵀ] and E[β dᵀ] (closed forms); 40000 draws, 6%."""
    cfg = TaskConfig(K=4, M=6, sigma=2.0, lam=0.1, cond=5.0)  # noise term is a visible part of C
    from iclcore.lsq.tasks import sample_decoder_pairs

    S, Sb, M = cfg.Sigma_x, cfg.Sigma_beta, cfg.M
    C_exact = (1 + 1 / M) * S @ Sb @ S + (np.trace(Sb @ S) + cfg.sigma**2) / M * S
    d, z = sample_decoder_pairs(cfg, 40000, np.random.default_rng(7))
    assert d.shape == (40000, 4) and z.shape == (40000, 4)
    C = d.T @ d / 40000
    B = z.T @ d / 40000
    assert np.abs(C - C_exact).max() < 0.06 * np.abs(C_exact).max()
    assert np.abs(B - Sb @ S).max() < 0.06 * np.abs(Sb @ S).max()
    # fallback path (ridge target) returns z⋆ = z†
    d2, z2 = sample_decoder_pairs(cfg.replace(target="ridge"), 5, np.random.default_rng(0))
    assert d2.shape == z2.shape == (5, 4)


def test_decoder_pair_sampler_fourth_moments():
    """Law check beyond second moments: mean and variance of ‖d‖² and of (βᵀd) agree with the
    explicit sampler (60000 draws each; relative MC error ~1-2%; tolerance 6%)."""
    from iclcore.lsq.tasks import sample_decoder_pairs

    cfg = TaskConfig(K=3, M=4, sigma=1.0, cond=4.0)
    d, z = sample_decoder_pairs(cfg, 60000, np.random.default_rng(8))
    p = sample_prompts(cfg, 60000, np.random.default_rng(9))
    for a, b in ((np.sum(d**2, 1), np.sum(p.d**2, 1)), (np.sum(z * d, 1), np.sum(p.z_star * p.d, 1))):
        assert abs(a.mean() - b.mean()) < 0.06 * abs(b.mean())
        assert abs(a.var() - b.var()) < 0.06 * b.var()


def test_latent_covariance_sigma_z():
    """``Sigma_z``: ``Cov(β) = task_scale² U⋆ Σ_z U⋆ᵀ`` (Monte Carlo, n = 200000: entry std ≈ 0.01,
    tolerance 0.05), the default ``None`` keeps ``z ~ N(0, task_scale² I_r)``, bad ``Sigma_z`` raises."""
    Sz = np.array([[2.0, 0.6], [0.6, 1.0]])
    cfg = TaskConfig(K=4, M=8, r=2, task_scale=1.5, Sigma_z=Sz)
    assert np.allclose(cfg.Sigma_beta, 2.25 * task_basis(4, 2) @ Sz @ task_basis(4, 2).T, rtol=1e-14)
    p = sample_prompts(cfg, 200_000, np.random.default_rng(3))
    assert np.max(np.abs(p.beta.T @ p.beta / p.n - cfg.Sigma_beta)) < 0.05
    iso = TaskConfig(K=4, M=8, r=2)
    a = sample_prompts(iso, 5, np.random.default_rng(0)).z
    b = sample_prompts(iso.replace(Sigma_z=np.eye(2)), 5, np.random.default_rng(0)).z
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="Sigma_z"):
        TaskConfig(K=4, M=8, r=2, Sigma_z=np.eye(3))
    with pytest.raises(ValueError, match="Sigma_z"):
        TaskConfig(K=4, M=8, r=2, Sigma_z=np.diag([1.0, 0.0]))
