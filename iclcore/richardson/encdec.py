"""Encoder + decoder: a moving latent system and a decoder that tracks a moving oracle.

Implements main paper §6 (latent system, moving decoder oracle, risk decomposition,
stop-gradient triangular dynamics, non-commuting exact matrix dynamics) and
MMNN report §5.2 (low-rank encoder–decoder).

Model (main paper §1.2): ``x ~ N(0, Σ_x)`` in ``R^K``, ``β = U⋆ z`` with
``z ~ N(0, Σ_z)`` in ``R^r``, one prompt = ``M`` pairs ``y_i = x_i^T β + ξ_i``,
``H_M = X^T X/M + λ I``, ``c_M = X^T y/M``, ridge estimate ``β̂ = H_M^{-1} c_M``.

Encoder (our concrete choice, see the errata entry "Which encoder, and which basis of U_s"): the
dictionary ``G ∈ R^{K×r}`` of main paper §5.1 with measurement ``b = β̂`` (the
prompt's own ridge estimate) and latent ``z``, trained by full-batch gradient
descent on a pool of ``N`` training prompts:

.. math::

    \\begin{gathered}
    G_s = \\hat G_\\star + (G_0 - \\hat G_\\star)(I - η_e \\hat Σ_z)^s ,\\\\
    U_s = G_s (G_s^\\top G_s)^{-1/2}\\quad\\text{(polar factor)} .
    \\end{gathered}

Decoder: latent system ``A_s = U_s^T H_M U_s``, ``d_s = U_s^T c_M``,
``z_s^† = A_s^{-1} d_s``; latent Richardson ``z_{ℓ+1} = z_ℓ + P_{z,s}(d_s - A_s z_ℓ)``;
``P_{z,s}`` trained by gradient descent on the moving latent distribution of
the pool, ``P_{z,s+1} = P_{z,s} - η_d (P_{z,s} C_s - B_s)`` with
``C_s = E[d_s d_s^T | U_s]``, ``B_s = E[z_s^† d_s^T | U_s]`` (pool averages) and
moving oracle ``P_z^⋆(U_s) = B_s C_s^{-1}``. The boxed tracking identity

.. math::

    \\begin{aligned}
    P_{z,s+1} - P_z^⋆(U_{s+1}) ={}& (P_{z,s} - P_z^⋆(U_s))(I - η_d C_s)\\\\
    &+ P_z^⋆(U_s) - P_z^⋆(U_{s+1})
    \\end{aligned}

is checked at every step, and the risks (main paper §6.3) are measured on a
held-out set of prompts. The task model and its prompts are in :mod:`iclcore.lsq.lowrank`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from iclcore.lsq.dynamics import check_step_size, gd_trajectory, psd_spectrum, quadratic_minimizer
from iclcore.lsq.iterates import richardson_iterates
from iclcore.lsq.lowrank import (
    LatentPrompts,
    LowRankModel,
    latent_systems,
    make_lowrank_model,
    sample_lowrank_prompts,
)
from iclcore.richardson.closure import commutator_defect, tracking_error_product_sum
from iclcore.richardson.subspace import davis_kahan_bound, sin_theta
from iclcore.stats import fit_line, fit_power_law
from iclcore.validation import positive_int

__all__ = [
    "polar_factor",
    "encoder_pool_fit",
    "encoder_subspaces",
    "LatentMoments",
    "latent_moments",
    "moving_oracle",
    "decoder_gd",
    "tracking_identity_residual",
    "RiskDecomposition",
    "risk_decomposition",
    "EncDecConfig",
    "EncDecRun",
    "EncDecDynamics",
    "sample_encdec_problem",
    "encdec_dynamics",
    "run_encdec",
    "continuous_triangular",
    "EncDecSummary",
    "summarise_encdec_run",
    "report_table3",
    "TrackingSpectrum",
    "tracking_spectrum",
    "ProductSumCheck",
    "product_sum_check",
    "ContinuousTimeLimit",
    "continuous_time_refinement",
]


# Encoder
# ---------------------------------------------------------------------------


def polar_factor(G: np.ndarray) -> np.ndarray:
    """Orthonormal polar factor ``U = G (G^T G)^{-1/2} = W V^T`` (from ``G = W S V^T``).

    The closest matrix with orthonormal columns to ``G``; smooth in ``G``, so
    ``U_s`` moves continuously along the encoder trajectory (a QR basis could
    flip signs). Batched over leading axes.

    Parameters
    ----------
    G : array_like, shape (..., K, r), full column rank

    Returns
    -------
    ndarray, same shape
    """
    G = np.asarray(G, float)
    if G.ndim < 2 or G.shape[-1] > G.shape[-2]:
        raise ValueError(f"G: expected shape (..., K, r) with r <= K, got {G.shape}")
    W, S, Vt = np.linalg.svd(G, full_matrices=False)
    if np.any(S[..., -1] <= 1e-12 * S[..., 0]):
        raise ValueError("G: rank deficient, the encoder subspace range(G) is not r-dimensional")
    return W @ Vt


def encoder_pool_fit(prompts: LatentPrompts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pool moments and least-squares encoder of ``b = β̂ ≈ G z`` (main paper §5.1 on the pool).

    Returns
    -------
    Sz : ndarray (r, r)
        ``Σ̂_z = (1/N) Σ z_n z_n^T``.
    Sbz : ndarray (K, r)
        ``Σ̂_bz = (1/N) Σ β̂_n z_n^T``.
    G_hat : ndarray (K, r)
        ``Ĝ⋆ = Σ̂_bz Σ̂_z^{-1}`` (the fixed point of the pool GD).
    """
    N = prompts.n
    Sz = prompts.z.T @ prompts.z / N
    Sbz = prompts.beta_hat.T @ prompts.z / N
    return Sz, Sbz, quadratic_minimizer(Sbz, Sz)


def encoder_subspaces(
    G0: np.ndarray, G_hat: np.ndarray, Sz: np.ndarray, *, eta_e: float, steps: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Encoder trajectory ``G_s`` (boxed closed form, main paper §5.1) and subspaces ``U_s``.

    Returns
    -------
    G : ndarray (S, K, r)
    U : ndarray (S, K, r)
        Polar factors of ``G_s``.
    """
    G = gd_trajectory(G0, G_hat, Sz, eta=eta_e, steps=steps)
    return G, polar_factor(G)


@dataclass(frozen=True)
class LatentMoments:
    """Moments of the latent decoder pair on the pool, for every encoder step.

    Attributes
    ----------
    C : ndarray (S, r, r)
        ``C_s = E[d_s d_s^T | U_s]``.
    B : ndarray (S, r, r)
        ``B_s = E[z_s^† d_s^T | U_s]``.
    """

    C: np.ndarray
    B: np.ndarray


def latent_moments(U: np.ndarray, prompts: LatentPrompts, chunk: int = 64) -> LatentMoments:
    """``C_s``, ``B_s`` of main paper §6.2 as pool averages, vectorised over steps and prompts.

    Parameters
    ----------
    U : ndarray (S, K, r)
    prompts : LatentPrompts
    chunk : int
        Steps processed at once (bounds memory to ``chunk * n * r²``).
    """
    U = np.asarray(U, float)
    Us = U if U.ndim == 3 else U[None]
    chunk = positive_int(chunk, "chunk")
    Cs, Bs = [], []
    for a in range(0, Us.shape[0], chunk):
        _, d, zd = latent_systems(Us[a : a + chunk], prompts)
        n = d.shape[1]
        Cs.append(np.einsum("sni,snj->sij", d, d) / n)
        Bs.append(np.einsum("sni,snj->sij", zd, d) / n)
    return LatentMoments(C=np.concatenate(Cs), B=np.concatenate(Bs))


def moving_oracle(moments: LatentMoments) -> np.ndarray:
    """``P_z^⋆(U_s) = B_s C_s^{-1}`` for every step (main paper §6.2), shape (S, r, r)."""
    C, B = moments.C, moments.B
    # P C = B  <=>  C^T P^T = B^T ; C symmetric
    return np.swapaxes(np.linalg.solve(C, np.swapaxes(B, -1, -2)), -1, -2)


def decoder_gd(P0: np.ndarray, moments: LatentMoments, eta_d: float) -> np.ndarray:
    """Decoder gradient descent on the moving latent distribution (main paper §6.2).

    ``P_{z,s+1} = P_{z,s} - η_d (P_{z,s} C_s - B_s)``, for ``s = 0..S-2``.

    Parameters
    ----------
    P0 : ndarray (r, r)
    moments : LatentMoments with S steps
    eta_d : float
        Must satisfy ``0 < η_d < 2/λ_max(C_s)`` for every ``s`` (checked).

    Returns
    -------
    ndarray (S, r, r)
        ``P_{z,0..S-1}``.
    """
    C, B = moments.C, moments.B
    P0 = np.asarray(P0, float)
    if P0.shape != C.shape[1:]:
        raise ValueError(f"P0: expected shape {C.shape[1:]}, got {P0.shape}")
    top = np.linalg.eigvalsh(C)[:, -1]
    check_step_size(eta_d, C[int(np.argmax(top))], "eta_d")  # the worst step decides stability
    out = np.empty_like(C)
    P = P0.copy()
    out[0] = P
    for s in range(C.shape[0] - 1):
        P = P - eta_d * (P @ C[s] - B[s])
        out[s + 1] = P
    return out


def tracking_identity_residual(P: np.ndarray, P_star: np.ndarray, C: np.ndarray, *, eta_d: float) -> np.ndarray:
    """Residual of the boxed tracking identity at every step (main paper §6.2).

    ``(P_{s+1} - P⋆_{s+1}) - [(P_s - P⋆_s)(I - η_d C_s) + (P⋆_s - P⋆_{s+1})]``,
    max-abs entry per step, divided by ``max_s ||P⋆_s||_max`` (relative).

    Returns
    -------
    ndarray (S-1,)
    """
    r = C.shape[-1]
    E = P - P_star
    D = P_star[:-1] - P_star[1:]
    rhs = E[:-1] @ (np.eye(r) - eta_d * C[:-1]) + D
    res = E[1:] - rhs
    return np.abs(res).max(axis=(-2, -1)) / np.abs(P_star).max()


# ---------------------------------------------------------------------------
# Risk decomposition
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RiskDecomposition:
    """Main paper §6.3 at one or several checkpoints (arrays of shape (S,)).

    Attributes
    ----------
    e2e : end-to-end risk ``E||U_s z_{L,s} - β||²_{Σ_x}``, z_L by running the iteration.
    exact : the same with ``z_L = z^† - (I - P A)^L z^†`` (closed form, matrix powers).
    floor : ``E||U_s z_s^† - β||²_{Σ_x}``.
    dec : ``E||U_s (z_{L,s} - z_s^†)||²_{Σ_x}``.
    cross : ``E⟨U_s z_s^† - β, U_s(z_{L,s} - z_s^†)⟩_{Σ_x}`` (the boxed identity has ``2 × cross``).
    dec_mid : ``||Σ_x||_2 E||z_L - z^†||²`` (middle of the §6.3 chain).
    dec_bound : ``||Σ_x||_2 E[ρ^{2L} ||z^†||²]``, ``ρ = ||I - P A||_2`` per prompt.
    rho_mean, rho_max : mean and max of ``ρ`` over prompts.
    identity_gap : ``|e2e - exact|``.
    decomposition_gap : ``|e2e - (floor + dec + 2 cross)|``.
    violations : fraction of prompts with ``||z_L - z^†|| > ρ^L ||z^†||`` (times 1 + 1e-10).
    """

    e2e: np.ndarray
    exact: np.ndarray
    floor: np.ndarray
    dec: np.ndarray
    cross: np.ndarray
    dec_mid: np.ndarray
    dec_bound: np.ndarray
    rho_mean: np.ndarray
    rho_max: np.ndarray
    identity_gap: np.ndarray
    decomposition_gap: np.ndarray
    violations: np.ndarray


def risk_decomposition(
    U: np.ndarray, P: np.ndarray, prompts: LatentPrompts, *, Sigma_x: np.ndarray, L: int, chunk: int = 16
) -> RiskDecomposition:
    """Measure every term of main paper §6.3 on a set of prompts, vectorised.

    Parameters
    ----------
    U : ndarray (S, K, r)
        Encoder subspaces at the checkpoints.
    P : ndarray (S, r, r)
        Decoders at the same checkpoints.
    prompts : LatentPrompts (held-out)
    Sigma_x : ndarray (K, K)
    L : int, depth >= 1
    chunk : int
        Checkpoints processed at once.

    Returns
    -------
    RiskDecomposition
    """
    U = np.asarray(U, float)
    P = np.asarray(P, float)
    if U.ndim != 3 or P.ndim != 3 or U.shape[0] != P.shape[0] or P.shape[1:] != (U.shape[2], U.shape[2]):
        raise ValueError(f"U, P: expected shapes (S, K, r) and (S, r, r), got {U.shape} and {P.shape}")
    L = positive_int(L, "L")
    Sx = np.asarray(Sigma_x, float)
    nx = float(np.linalg.norm(Sx, 2))
    fields: dict[str, list[np.ndarray]] = {k: [] for k in RiskDecomposition.__dataclass_fields__}
    r = U.shape[2]
    for a in range(0, U.shape[0], chunk):
        Uc, Pc = U[a : a + chunk], P[a : a + chunk]
        A, d, zd = latent_systems(Uc, prompts)
        S, n = d.shape[0], d.shape[1]
        Pb = np.broadcast_to(Pc[:, None], (S, n, r, r)).reshape(S * n, r, r)
        zL = richardson_iterates(Pb, A.reshape(S * n, r, r), d.reshape(S * n, r), L=L)[:, -1].reshape(S, n, r)
        T = np.eye(r) - Pc[:, None] @ A  # (S, n, r, r)
        zL_exact = zd - (np.linalg.matrix_power(T, L) @ zd[..., None])[..., 0]
        UcT = np.swapaxes(Uc, -1, -2)
        beta_L = zL @ UcT
        beta_L_ex = zL_exact @ UcT
        beta_dag = zd @ UcT
        dz = zL - zd
        e_floor = beta_dag - prompts.beta[None]
        e_dec = dz @ UcT

        def q(u, v):
            return np.sum((u @ Sx) * v, axis=-1).mean(axis=1)

        e2e = q(beta_L - prompts.beta[None], beta_L - prompts.beta[None])
        exact = q(beta_L_ex - prompts.beta[None], beta_L_ex - prompts.beta[None])
        floor, dec, cross = q(e_floor, e_floor), q(e_dec, e_dec), q(e_floor, e_dec)
        rho = np.linalg.norm(T, ord=2, axis=(-2, -1))  # (S, n)
        nz2 = np.sum(zd**2, axis=-1)
        err = np.sqrt(np.sum(dz**2, axis=-1))
        fields["e2e"].append(e2e)
        fields["exact"].append(exact)
        fields["floor"].append(floor)
        fields["dec"].append(dec)
        fields["cross"].append(cross)
        fields["dec_mid"].append(nx * np.mean(dz**2, axis=1).sum(axis=-1))
        fields["dec_bound"].append(nx * np.mean(rho ** (2 * L) * nz2, axis=1))
        fields["rho_mean"].append(rho.mean(axis=1))
        fields["rho_max"].append(rho.max(axis=1))
        fields["identity_gap"].append(np.abs(e2e - exact))
        fields["decomposition_gap"].append(np.abs(e2e - (floor + dec + 2 * cross)))
        fields["violations"].append(np.mean(err > (1 + 1e-10) * rho**L * np.sqrt(nz2), axis=1))
    return RiskDecomposition(**{k: np.concatenate(v) for k, v in fields.items()})


# ---------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EncDecConfig:
    """Sizes and step sizes of an encoder+decoder run (all documented in the chapter).

    ``eta_e = eta_e_rel / λ_max(Σ̂_z)`` and ``eta_d = eta_d_rel / max_s λ_max(C_s)``.
    """

    K: int = 16
    r: int = 3
    M: int = 64
    sigma: float = 0.3
    lam: float = 0.01
    cond_x: float = 8.0
    mu_z: tuple[float, ...] = (0.2, 0.08, 0.03)
    n_train: int = 64
    n_eval: int = 4096
    L: int = 7
    steps: int = 420
    eta_e_rel: float = 0.5
    eta_d_rel: float = 0.2
    g0_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("K", "r", "M", "n_train", "n_eval", "L", "steps"):
            positive_int(getattr(self, name), name)
        if len(self.mu_z) != self.r:
            raise ValueError(f"mu_z: need r = {self.r} eigenvalues, got {len(self.mu_z)}")
        for name in ("eta_e_rel", "eta_d_rel"):
            v = getattr(self, name)
            if not np.isfinite(v) or not 0 < v < 2:
                raise ValueError(f"{name}: relative step size must be in (0, 2), got {v!r}")
        if not np.isfinite(self.g0_scale) or self.g0_scale <= 0:
            raise ValueError(f"g0_scale: must be positive, got {self.g0_scale!r}")


@dataclass(frozen=True)
class EncDecRun:
    """Everything measured along an encoder+decoder run (leading axis = step ``s = 0..steps``).

    Attributes
    ----------
    model, train, test : the task model and the two prompt sets.
    eta_e, eta_d : step sizes used.
    G, U : encoder iterates and subspaces (S, K, r).
    G_hat : pool fixed point Ĝ⋆ (K, r).
    Sz : pool latent covariance (r, r).
    C, B : latent moments (S, r, r).
    P : decoder iterates (S, r, r).
    P_star : moving oracle (S, r, r).
    tracking_rel : ``||P_s - P⋆(U_s)||_F / ||P⋆(U_s)||_F`` (S,).
    identity_residual : boxed tracking identity residual (S-1,).
    sin2 : ``||sin Θ(U_s, U⋆)||_2²`` (S,).
    sin2_fro : ``||sin Θ(U_s, U⋆)||_F²`` (S,).
    dk2_paper, dk2_weyl : squared Davis–Kahan bounds with ``S_s = G_s Σ_z G_s^T`` against Σ_β (S,).
    risk_steps : steps at which the risks were measured (E,).
    risks : RiskDecomposition on the held-out set at ``risk_steps`` (E,).
    """

    config: EncDecConfig
    model: LowRankModel
    train: LatentPrompts
    test: LatentPrompts
    eta_e: float
    eta_d: float
    G: np.ndarray
    U: np.ndarray
    G_hat: np.ndarray
    Sz: np.ndarray
    C: np.ndarray
    B: np.ndarray
    P: np.ndarray
    P_star: np.ndarray
    tracking_rel: np.ndarray
    identity_residual: np.ndarray
    sin2: np.ndarray
    sin2_fro: np.ndarray
    dk2_paper: np.ndarray
    dk2_weyl: np.ndarray
    risk_steps: np.ndarray
    risks: RiskDecomposition


def sample_encdec_problem(config: EncDecConfig) -> tuple[LowRankModel, LatentPrompts, LatentPrompts, np.ndarray]:
    """The task model, the training and held-out prompts and the encoder start ``G0`` of a run.

    All drawn from ``config.seed``: the model, the training prompts, ``G0`` (shape (K, r)), then
    the held-out prompts (last, so that changing ``n_eval`` leaves the training run unchanged).
    """
    rng = np.random.default_rng(config.seed)
    model = make_lowrank_model(
        config.K,
        config.r,
        config.M,
        sigma=config.sigma,
        lam=config.lam,
        cond_x=config.cond_x,
        mu_z=np.array(config.mu_z),
        rng=rng,
    )
    train = sample_lowrank_prompts(model, config.n_train, rng)
    G0 = config.g0_scale * rng.standard_normal((config.K, config.r)) / np.sqrt(config.K)
    # the held-out set is drawn last, so that changing n_eval leaves the training run unchanged
    test = sample_lowrank_prompts(model, config.n_eval, rng)
    return model, train, test, G0


@dataclass(frozen=True)
class EncDecDynamics:
    """Outer-time trajectories of an encoder+decoder run (no risk evaluation).

    Attributes
    ----------
    model, train, test, G0 : the task model, the two prompt sets and the encoder start.
    eta_e, eta_d : step sizes used.
    G, U : ndarray (S, K, r)
    G_hat : ndarray (K, r)
    Sz : ndarray (r, r)
    moments : LatentMoments (S steps)
    P, P_star : ndarray (S, r, r)
    """

    model: LowRankModel
    train: LatentPrompts
    test: LatentPrompts
    G0: np.ndarray
    eta_e: float
    eta_d: float
    G: np.ndarray
    U: np.ndarray
    G_hat: np.ndarray
    Sz: np.ndarray
    moments: LatentMoments
    P: np.ndarray
    P_star: np.ndarray


def encdec_dynamics(
    config: EncDecConfig, steps: int | None = None, eta_e: float | None = None, *, eta_d: float | None = None
) -> EncDecDynamics:
    """Encoder trajectory, subspaces, moving latent moments, oracle and decoder GD.

    The encoder trajectory is closed form (triangular dynamics: it does not
    see the decoder), so all ``U_s``, ``C_s``, ``B_s`` are computed at once,
    vectorised over steps and prompts; the decoder recursion is then a loop
    of ``r × r`` products.

    Parameters
    ----------
    config : EncDecConfig
    steps : int, optional
        Number of outer steps (default ``config.steps``).
    eta_e, eta_d : float, optional
        Step sizes overriding ``config.eta_e_rel / λ_max(Σ̂_z)`` and
        ``config.eta_d_rel / max_s λ_max(C_s)`` (used for step-size refinement).
    """
    model, train, test, G0 = sample_encdec_problem(config)
    n_steps = config.steps if steps is None else positive_int(steps, "steps")
    grid = np.arange(n_steps + 1)
    Sz, Sbz, G_hat = encoder_pool_fit(train)
    if eta_e is None:
        eta_e = config.eta_e_rel / float(np.linalg.eigvalsh(Sz)[-1])
    G, U = encoder_subspaces(G0, G_hat, Sz, eta_e=eta_e, steps=grid)
    mom = latent_moments(U, train)
    if eta_d is None:
        eta_d = config.eta_d_rel / float(np.linalg.eigvalsh(mom.C)[:, -1].max())
    P_star = moving_oracle(mom)
    P = decoder_gd(np.zeros((config.r, config.r)), mom, eta_d)
    return EncDecDynamics(model, train, test, G0, float(eta_e), float(eta_d), G, U, G_hat, Sz, mom, P, P_star)


def run_encdec(config: EncDecConfig, eval_every: int = 1) -> EncDecRun:
    """The online low-rank encoder+decoder run (main paper §6, §12.4, §12.7; MMNN report §5.2).

    :func:`encdec_dynamics`, then every diagnostic: tracking error and the
    boxed identity residual at every step, subspace angles and Davis–Kahan
    bounds at every step, and the §6.3 risk decomposition on the held-out
    prompts every ``eval_every`` steps (and at the last step); ``risk_steps`` lists them.
    """
    dyn = encdec_dynamics(config)
    return _finish(
        config,
        dyn.model,
        dyn.train,
        dyn.test,
        dyn.eta_e,
        dyn.eta_d,
        dyn.G,
        dyn.U,
        dyn.G_hat,
        dyn.Sz,
        dyn.moments,
        dyn.P,
        dyn.P_star,
        eval_every,
    )


def _finish(config, model, train, test, eta_e, eta_d, G, U, G_hat, Sz, mom, P, P_star, eval_every):
    eval_every = positive_int(eval_every, "eval_every")
    S = G.shape[0]
    idx = np.unique(np.r_[np.arange(0, S, eval_every), S - 1])
    tracking = np.linalg.norm(P - P_star, axis=(-2, -1)) / np.linalg.norm(P_star, axis=(-2, -1))
    resid = tracking_identity_residual(P, P_star, mom.C, eta_d=eta_d)
    Ustar = np.asarray(model.U_star)
    sin2 = np.array([sin_theta(u, Ustar, "2", squared=True) for u in U])
    sin2f = np.array([sin_theta(u, Ustar, "fro", squared=True) for u in U])
    Sigma_beta = model.Sigma_beta
    Szp = np.asarray(model.Sigma_z)
    dkp, dkw = [], []
    for g in G:
        S_s = g @ Szp @ g.T
        dkp.append(davis_kahan_bound(S_s, Sigma_beta, config.r, variant="paper") ** 2)
        dkw.append(davis_kahan_bound(S_s, Sigma_beta, config.r, variant="weyl") ** 2)
    risks = risk_decomposition(U[idx], P[idx], test, Sigma_x=model.Sigma_x, L=config.L)
    return EncDecRun(
        config=config,
        model=model,
        train=train,
        test=test,
        eta_e=eta_e,
        eta_d=eta_d,
        G=G,
        U=U,
        G_hat=G_hat,
        Sz=Sz,
        C=mom.C,
        B=mom.B,
        P=P,
        P_star=P_star,
        tracking_rel=tracking,
        identity_residual=resid,
        sin2=sin2,
        sin2_fro=sin2f,
        dk2_paper=np.array(dkp),
        dk2_weyl=np.array(dkw),
        risk_steps=idx,
        risks=risks,
    )


# ---------------------------------------------------------------------------
# §6.4 continuous time
# ---------------------------------------------------------------------------


def continuous_triangular(
    G0: np.ndarray,
    G_hat: np.ndarray,
    Sz: np.ndarray,
    *,
    prompts: LatentPrompts,
    P0: np.ndarray,
    eta_e: float,
    eta_d: float,
    t_eval: np.ndarray,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray]:
    """Stop-gradient triangular dynamics in continuous time (main paper §6.4).

    With time measured in steps,

    .. math::

        \\dot G_t = η_e (Σ_{bz} - G_t Σ_z), \\qquad
        \\dot P_t = η_d (B(G_t) - P_t C(G_t)),

    ``G_t = Ĝ⋆ + (G_0 - Ĝ⋆) e^{-η_e Σ_z t}`` in closed form, ``P_t`` by
    ``scipy.integrate.solve_ivp`` (RK45) with ``B(G), C(G)`` the pool moments at
    ``U = polar(G)``. Gradient descent is the forward-Euler discretisation with
    unit step, so the discrete run differs by ``O(η)``.

    Returns
    -------
    G : ndarray (T, K, r)
    P : ndarray (T, r, r)
    """
    t_eval = np.asarray(t_eval, float)
    if t_eval.ndim != 1 or np.any(np.diff(t_eval) < 0) or t_eval[0] < 0:
        raise ValueError("t_eval: must be a non-decreasing 1-D array of non-negative times")
    spec = psd_spectrum(Sz, "Sz")
    G0 = np.asarray(G0, float)
    G_hat = np.asarray(G_hat, float)
    r = spec.Q.shape[0]

    def G_at(t: float) -> np.ndarray:
        return G_hat + (G0 - G_hat) @ ((spec.Q * np.exp(-eta_e * spec.lam * t)) @ spec.Q.T)

    def rhs(t: float, p: np.ndarray) -> np.ndarray:
        U = polar_factor(G_at(t))
        _, d, zd = latent_systems(U, prompts)
        n = d.shape[1]
        C = d[0].T @ d[0] / n
        B = zd[0].T @ d[0] / n
        Pm = p.reshape(r, r)
        return (eta_d * (B - Pm @ C)).ravel()

    sol = solve_ivp(
        rhs, (0.0, float(t_eval[-1])), np.asarray(P0, float).ravel(), t_eval=t_eval, rtol=rtol, atol=atol, method="RK45"
    )
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    G = np.array([G_at(t) for t in t_eval])
    return G, sol.y.T.reshape(-1, r, r)


# ---------------------------------------------------------------------------
# Diagnostics of a finished run: levels, spectral overlap, §6.6 and §6.4 checks
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EncDecSummary:
    """Last-step levels and run-wide ratios of an encoder+decoder run (main paper §6.2–§6.3, §11).

    ``*_final`` fields are the values at the last step (risks: at the last checkpoint);
    ``*_max`` fields are maxima over the checkpoints (risks) or the steps (subspace, tracking).

    Attributes
    ----------
    e2e_final, exact_final, floor_final, dec_final, cross_final, dec_mid_final, dec_bound_final,
    rho_mean_final, rho_max_final : the §6.3 terms of :class:`RiskDecomposition` at the last checkpoint.
    violation_rate_max : largest fraction of prompts violating ``||z_L - z^†|| <= ρ^L ||z^†||``.
    tracking_rel_final, sin2_final, sin2_fro_final, dk2_paper_final, dk2_weyl_final : run curves at the last step.
    identity_gap_max : ``max |R_obs - R_exact|``; identity_gap_rel_max: the same relative to ``R_e2e``.
    decomposition_gap_max : ``max |R_e2e - (R_floor + R_dec + 2 cross)|``.
    tracking_identity_residual_max : largest relative residual of the boxed §6.2 identity.
    floor_share_final, dec_share_final : ``R_floor / R_e2e`` and ``R_dec / R_e2e`` at the last checkpoint.
    dec_mid_ratio_max : ``max R_dec / (||Σ_x|| E||z_L - z^†||²)`` (≤ 1: first link of the §6.3 chain).
    dec_bound_ratio_max : ``max ||Σ_x|| E||z_L - z^†||² / (||Σ_x|| E[ρ^{2L}||z^†||²])`` (≤ 1: second link).
    dec_bound_conservative_factor : certified over actual decoder risk at the last checkpoint.
    dk_paper_ratio_max, dk_valid_ratio_max : ``max_s sin²Θ_s / DK²_s`` for the printed and the valid
        Davis–Kahan forms (the valid form over the steps where it is finite).
    sin2_plateau_ratio : ``sin²Θ`` at the last step over its value at half the steps.
    tracking_rel_quarter : relative tracking error at a quarter of the steps.
    eta_e, eta_d : the step sizes of the run.
    """

    e2e_final: float
    exact_final: float
    floor_final: float
    dec_final: float
    cross_final: float
    dec_mid_final: float
    dec_bound_final: float
    rho_mean_final: float
    rho_max_final: float
    violation_rate_max: float
    tracking_rel_final: float
    sin2_final: float
    sin2_fro_final: float
    dk2_paper_final: float
    dk2_weyl_final: float
    identity_gap_max: float
    identity_gap_rel_max: float
    decomposition_gap_max: float
    tracking_identity_residual_max: float
    floor_share_final: float
    dec_share_final: float
    dec_mid_ratio_max: float
    dec_bound_ratio_max: float
    dec_bound_conservative_factor: float
    dk_paper_ratio_max: float
    dk_valid_ratio_max: float
    sin2_plateau_ratio: float
    tracking_rel_quarter: float
    eta_e: float
    eta_d: float


def summarise_encdec_run(run: EncDecRun) -> EncDecSummary:
    """The levels and ratios of :class:`EncDecSummary` from a run of :func:`run_encdec`.

    Every field is read off the run's curves (no new computation beyond ratios and maxima);
    with ``S = steps`` the plateau ratio is ``sin²Θ_S / sin²Θ_{⌊S/2⌋}`` and the quarter level is
    the tracking error at ``⌊S/4⌋``.
    """
    R = run.risks
    steps = run.G.shape[0] - 1
    finite = np.isfinite(run.dk2_weyl)
    return EncDecSummary(
        e2e_final=R.e2e[-1],
        exact_final=R.exact[-1],
        floor_final=R.floor[-1],
        dec_final=R.dec[-1],
        cross_final=R.cross[-1],
        dec_mid_final=R.dec_mid[-1],
        dec_bound_final=R.dec_bound[-1],
        rho_mean_final=R.rho_mean[-1],
        rho_max_final=R.rho_max[-1],
        violation_rate_max=R.violations.max(),
        tracking_rel_final=run.tracking_rel[-1],
        sin2_final=run.sin2[-1],
        sin2_fro_final=run.sin2_fro[-1],
        dk2_paper_final=run.dk2_paper[-1],
        dk2_weyl_final=run.dk2_weyl[-1],
        identity_gap_max=R.identity_gap.max(),
        identity_gap_rel_max=float(np.max(R.identity_gap / R.e2e)),
        decomposition_gap_max=R.decomposition_gap.max(),
        tracking_identity_residual_max=run.identity_residual.max(),
        floor_share_final=R.floor[-1] / R.e2e[-1],
        dec_share_final=R.dec[-1] / R.e2e[-1],
        dec_mid_ratio_max=float(np.max(R.dec / R.dec_mid)),
        dec_bound_ratio_max=float(np.max(R.dec_mid / R.dec_bound)),
        dec_bound_conservative_factor=R.dec_bound[-1] / R.dec[-1],
        dk_paper_ratio_max=float(np.max(run.sin2 / run.dk2_paper)),
        dk_valid_ratio_max=float(np.max(run.sin2[finite] / run.dk2_weyl[finite])),
        sin2_plateau_ratio=run.sin2[-1] / run.sin2[steps // 2],
        tracking_rel_quarter=run.tracking_rel[steps // 4],
        eta_e=run.eta_e,
        eta_d=run.eta_d,
    )


def report_table3(summary: EncDecSummary) -> dict[str, float]:
    """The rows of MMNN report §5.2, Table 3 (low-rank encoder–decoder), label -> value, from a summary.

    The held-out and exact identity risks, the largest identity gap, the decoder's actual and
    certified risks, the true ``sin²Θ`` and its two Davis–Kahan bounds, ``R_floor`` and the
    relative tracking error, all at the last step of the run.
    """
    return {
        "held-out prediction risk": summary.e2e_final,
        "exact identity risk": summary.exact_final,
        "max identity absolute gap": summary.identity_gap_max,
        "decoder actual risk": summary.dec_final,
        "decoder certified risk": summary.dec_bound_final,
        "encoder true subspace sin^2": summary.sin2_final,
        "Davis-Kahan sin^2 bound (paper)": summary.dk2_paper_final,
        "Davis-Kahan sin^2 bound (valid)": summary.dk2_weyl_final,
        "R_floor": summary.floor_final,
        "relative tracking error": summary.tracking_rel_final,
    }


@dataclass(frozen=True)
class TrackingSpectrum:
    """The tracking error ``E_s = P_{z,s} - P_z^⋆(U_s)`` in the eigenbasis of ``C_s``, and the oracle drift.

    Attributes
    ----------
    E : ndarray (S, r, r)
        Tracking errors.
    weights : ndarray (S, r)
        Spectral-overlap fractions ``w_{s,i} = λ_i(C_s)||E_s q_{s,i}||² / Σ_j λ_j(C_s)||E_s q_{s,j}||²``,
        ``i`` in ascending order of ``λ_i(C_s)`` (column 0 is the slowest mode).
    drift : ndarray (S-1,)
        ``||P⋆_{s+1} - P⋆_s||_F``.
    drift_rel : ndarray (S-1,)
        ``drift / ||P⋆_s||_F``.
    drift_rel_log_slope : float
        Least-squares slope of ``log drift_rel`` against ``s`` over the second half of the steps
        (``s ≥ ⌊(S-1)/2⌋``): the geometric rate at which the oracle settles. Steps where the drift is
        exactly 0 (the oracle unchanged in float64 once it has settled below rounding) are left out.
    """

    E: np.ndarray
    weights: np.ndarray
    drift: np.ndarray
    drift_rel: np.ndarray
    drift_rel_log_slope: float


def tracking_spectrum(P: np.ndarray, P_star: np.ndarray, C: np.ndarray) -> TrackingSpectrum:
    """Spectral overlap of the tracking error and the drift of the moving oracle (main paper §6.2, Figure 4).

    Parameters
    ----------
    P, P_star : ndarray (S, r, r)
        Decoder iterates and moving oracle ``P_z^⋆(U_s)``, ``S >= 3``.
    C : ndarray (S, r, r)
        Latent moments ``C_s`` (symmetric positive definite).

    Returns
    -------
    TrackingSpectrum
    """
    P, P_star, C = (np.asarray(a, float) for a in (P, P_star, C))
    if P.ndim != 3 or P.shape != P_star.shape or P.shape != C.shape or P.shape[0] < 3:
        raise ValueError(
            f"P, P_star, C: expected three arrays of one shape (S >= 3, r, r), got {P.shape}, {P_star.shape}, {C.shape}"
        )
    E = P - P_star
    lamC, QC = np.linalg.eigh(C)  # ascending
    energy = lamC * np.sum((E @ QC) ** 2, axis=-2)
    weights = energy / energy.sum(axis=1, keepdims=True)
    drift = np.linalg.norm(P_star[1:] - P_star[:-1], axis=(-2, -1))
    drift_rel = drift / np.linalg.norm(P_star[:-1], axis=(-2, -1))
    half = (P.shape[0] - 1) // 2
    steps, tail = np.arange(P.shape[0] - 1)[half:], drift_rel[half:]
    moving = tail > 0  # an exactly stationary step (the oracle unchanged in float64) has no logarithm
    if moving.sum() < 2:
        raise ValueError(
            "P_star: the oracle drift is exactly 0 at all but "
            f"{int(moving.sum())} of the last {tail.size} steps: no decay rate to fit (run fewer steps)"
        )
    slope = fit_line(steps[moving], np.log(tail[moving])).slope
    return TrackingSpectrum(E, weights, drift, drift_rel, slope)


@dataclass(frozen=True)
class ProductSumCheck:
    """The §6.6 product/sum formula against the tracked error of a run.

    Attributes
    ----------
    steps : ndarray (n,)
        Steps at which the formula is evaluated.
    E_formula : ndarray (n, r, r)
        ``E_s`` from ``E_0``, the ``C_t`` and the drifts ``D_t`` only.
    error : ndarray (n,)
        ``max |E_formula - E_s| / max_{s'} |E_{s'}|`` (entrywise).
    commutator_defect : float
        :func:`~iclcore.richardson.closure.commutator_defect` of a subsample of the ``C_s``.
    """

    steps: np.ndarray
    E_formula: np.ndarray
    error: np.ndarray
    commutator_defect: float


def product_sum_check(run: EncDecRun, n_checks: int = 43, n_commutator: int = 40) -> ProductSumCheck:
    """Evaluate the main paper §6.6 product/sum formula at ``n_checks`` steps of a run.

    ``E_s = E_0 Π_{t<s}(I - η_d C_t) + Σ_{τ<s} D_τ Π_{t=τ+1}^{s-1}(I - η_d C_t)`` with
    ``D_τ = P⋆(U_τ) - P⋆(U_{τ+1})`` (:func:`~iclcore.richardson.closure.tracking_error_product_sum`),
    at ``n_checks`` evenly spaced steps (and the last), against ``E_s = P_{z,s} - P⋆(U_s)`` of the
    run; the commutator defect uses every ``⌊S/n_commutator⌋``-th ``C_s``.
    """
    n_checks = positive_int(n_checks, "n_checks")
    n_commutator = positive_int(n_commutator, "n_commutator")
    steps = run.G.shape[0] - 1
    E = run.P - run.P_star
    check_steps = np.unique(np.r_[np.linspace(0, steps, n_checks).astype(int), steps])
    E_formula = tracking_error_product_sum(
        run.P[0] - run.P_star[0], run.C[:-1], run.P_star[:-1] - run.P_star[1:], eta=run.eta_d, steps=check_steps
    )
    error = np.abs(E_formula - E[check_steps]).max(axis=(-2, -1)) / np.abs(E).max()
    return ProductSumCheck(check_steps, E_formula, error, commutator_defect(run.C[:: max(1, steps // n_commutator)]))


@dataclass(frozen=True)
class ContinuousTimeLimit:
    """Gradient descent against the §6.4 ODE under step refinement.

    Attributes
    ----------
    t : ndarray (T,)
        ODE times (in base steps).
    P_ode : ndarray (T, r, r)
        Decoder of the ODE at ``t``.
    refinements : ndarray (k,)
        Refinement factors ``1, 2, 4, ...`` (steps ``η/k`` over ``k·S`` steps).
    gaps : ndarray (k,)
        ``max |P^{GD, η/k}(t) - P_ode(t)| / max |P_ode|`` over ``t``.
    order : float
        Log-log slope of ``gaps`` against ``refinements`` (``-1`` for first-order convergence).
    """

    t: np.ndarray
    P_ode: np.ndarray
    refinements: np.ndarray
    gaps: np.ndarray
    order: float


def continuous_time_refinement(
    run: EncDecRun, refine_max: int, *, t_stride: int = 2, rtol: float = 1e-10, atol: float = 1e-13
) -> ContinuousTimeLimit:
    """Forward-Euler convergence of the encoder+decoder GD to the §6.4 ODE (main paper §6.4).

    The ODE of :func:`continuous_triangular` is integrated from the run's ``G_0`` and ``P = 0`` at
    times ``0, t_stride, 2 t_stride, ...``; the run (``k = 1``) and runs with steps ``η_e/k, η_d/k``
    over ``k·S`` steps (:func:`encdec_dynamics`, same draws), for ``k = 1, 2, 4, ... <= refine_max``,
    are compared with it at the same times. GD is the Euler scheme of the ODE, so the gap is
    ``O(η/k)`` and :attr:`ContinuousTimeLimit.order` is near ``-1``.
    """
    refine_max = positive_int(refine_max, "refine_max")
    t_stride = positive_int(t_stride, "t_stride")
    cfg = run.config
    steps = run.G.shape[0] - 1
    t_ode = np.arange(0, steps + 1, float(t_stride))
    _, P_ode = continuous_triangular(
        run.G[0],
        run.G_hat,
        run.Sz,
        prompts=run.train,
        P0=np.zeros((cfg.r, cfg.r)),
        eta_e=run.eta_e,
        eta_d=run.eta_d,
        t_eval=t_ode,
        rtol=rtol,
        atol=atol,
    )
    ks = [2**j for j in range(int(np.log2(refine_max)) + 1)]
    gaps = []
    for k in ks:
        P = run.P if k == 1 else encdec_dynamics(cfg, steps=steps * k, eta_e=run.eta_e / k, eta_d=run.eta_d / k).P
        gaps.append(float(np.abs(P[:: t_stride * k] - P_ode).max() / np.abs(P_ode).max()))
    gaps = np.array(gaps)
    return ContinuousTimeLimit(t_ode, P_ode, np.array(ks), gaps, fit_power_law(ks, gaps).slope)
