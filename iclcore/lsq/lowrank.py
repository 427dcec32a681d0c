"""The low-rank task model of the encoder+decoder experiments (main paper §1.2, §6; report §5.2):
``x ~ N(0, Σ_x)``, ``β = U⋆ z`` with ``z ~ N(0, Σ_z)``, prompts of ``M`` noisy pairs with their ridge
systems ``H_M``, ``c_M`` and estimates ``β̂``. Split from :mod:`iclcore.richardson.encdec`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.lsq.dynamics import psd_spectrum
from iclcore.lsq.tasks import TaskConfig, design_spectrum, sample_prompts
from iclcore.validation import as_generator, positive_int

__all__ = [
    "LowRankModel",
    "make_lowrank_model",
    "LatentPrompts",
    "sample_lowrank_prompts",
    "latent_systems",
]


# ---------------------------------------------------------------------------
# Task model and prompts
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LowRankModel:
    """Low-rank regression tasks (main paper §1.2, MMNN report §5.2).

    Attributes
    ----------
    Sigma_x : ndarray (K, K)
        Design covariance (symmetric positive definite).
    U_star : ndarray (K, r)
        Task subspace, orthonormal columns.
    Sigma_z : ndarray (r, r)
        Latent covariance (positive definite).
    M : int
        Prompt length.
    sigma : float
        Label noise standard deviation.
    lam : float
        Ridge ``λ >= 0`` in ``H_M``.
    """

    Sigma_x: np.ndarray
    U_star: np.ndarray
    Sigma_z: np.ndarray
    M: int
    sigma: float
    lam: float

    def __post_init__(self) -> None:
        sx = psd_spectrum(self.Sigma_x, "Sigma_x", definite=True)
        K = sx.Q.shape[0]
        U = np.asarray(self.U_star, float)
        if U.ndim != 2 or U.shape[0] != K or not 1 <= U.shape[1] <= K:
            raise ValueError(f"U_star: expected shape ({K}, r) with 1 <= r <= {K}, got {U.shape}")
        if not np.allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-10):
            raise ValueError("U_star: columns must be orthonormal")
        sz = psd_spectrum(self.Sigma_z, "Sigma_z")
        if sz.Q.shape[0] != U.shape[1] or sz.lam[0] <= 0:
            raise ValueError(f"Sigma_z: must be positive definite of shape ({U.shape[1]}, {U.shape[1]})")
        positive_int(self.M, "M")
        if not np.isfinite(self.sigma) or self.sigma < 0:
            raise ValueError(f"sigma: must be finite and >= 0, got {self.sigma!r}")
        if not np.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"lam: must be finite and >= 0, got {self.lam!r}")
        if self.lam == 0 and self.M < K:
            raise ValueError(f"lam: lam = 0 needs M >= K (got M={self.M}, K={K})")

    @property
    def K(self) -> int:
        """Ambient dimension."""
        return int(np.shape(self.Sigma_x)[0])

    @property
    def r(self) -> int:
        """Latent dimension."""
        return int(np.shape(self.U_star)[1])

    @property
    def Sigma_beta(self) -> np.ndarray:
        """``Σ_β = U⋆ Σ_z U⋆^T`` (main paper §5.2)."""
        U = np.asarray(self.U_star)
        return U @ np.asarray(self.Sigma_z) @ U.T


def make_lowrank_model(
    K: int,
    r: int,
    M: int,
    *,
    sigma: float,
    lam: float,
    cond_x: float,
    mu_z: np.ndarray,
    rng: np.random.Generator,
) -> LowRankModel:
    """Random instance: geometric ``Σ_x`` (Tr = K, condition ``cond_x``), random ``U⋆``, ``Σ_z = diag(μ_z)``.

    ``U⋆`` is Haar-random (not aligned with the eigenvectors of ``Σ_x``), so
    the latent moments ``C_s`` at different times do not commute.

    Examples
    --------
    >>> model = make_lowrank_model(6, 2, 10, sigma=0.1, lam=0.0, cond_x=4.0, mu_z=np.ones(2), rng=np.random.default_rng(0))
    >>> model.U_star.shape, bool(np.allclose(model.U_star.T @ model.U_star, np.eye(2)))
    ((6, 2), True)
    """
    rng = as_generator(rng)
    K = positive_int(K, "K")
    r = positive_int(r, "r")
    if r > K:
        raise ValueError(f"r: need r <= K = {K}, got {r}")
    mu = np.asarray(mu_z, float)
    if mu.shape != (r,) or np.any(~np.isfinite(mu)) or np.any(mu <= 0):
        raise ValueError(f"mu_z: need {r} positive eigenvalues, got {mu_z!r}")
    Sx = np.diag(design_spectrum(K, cond_x, "geometric" if cond_x > 1 else "identity"))
    U = np.linalg.qr(rng.standard_normal((K, r)))[0]
    return LowRankModel(Sigma_x=Sx, U_star=U, Sigma_z=np.diag(mu), M=int(M), sigma=float(sigma), lam=float(lam))


@dataclass(frozen=True)
class LatentPrompts:
    """A batch of prompts reduced to sufficient statistics.

    Attributes
    ----------
    H : ndarray (n, K, K)
        ``H_M``.
    c : ndarray (n, K)
        ``c_M``.
    beta : ndarray (n, K)
        Task vectors.
    z : ndarray (n, r)
        Latent tasks.
    beta_hat : ndarray (n, K)
        Ridge estimates ``H_M^{-1} c_M``.
    """

    H: np.ndarray
    c: np.ndarray
    beta: np.ndarray
    z: np.ndarray
    beta_hat: np.ndarray

    @property
    def n(self) -> int:
        """Number of prompts."""
        return int(self.beta.shape[0])


def sample_lowrank_prompts(model: LowRankModel, n: int, rng: np.random.Generator) -> LatentPrompts:
    """Draw ``n`` prompts explicitly (``x_i ~ N(0, Σ_x)``, ``y = Xβ + ξ``), vectorised over prompts.

    The model's prompts through :func:`iclcore.lsq.tasks.sample_prompts` with a general latent
    covariance ``Σ_z`` (same formulas and draws, main paper §1.2).

    Examples
    --------
    >>> model = make_lowrank_model(6, 2, 10, sigma=0.1, lam=0.0, cond_x=4.0, mu_z=np.ones(2), rng=np.random.default_rng(0))
    >>> prompts = sample_lowrank_prompts(model, 5, np.random.default_rng(1))
    >>> prompts.n, prompts.H.shape, prompts.z.shape
    (5, (5, 6, 6), (5, 2))
    """
    rng = as_generator(rng)
    n = positive_int(n, "n")
    Sx = np.asarray(model.Sigma_x, float)
    config = TaskConfig(
        K=model.K,
        M=int(model.M),
        r=model.r,
        sigma=float(model.sigma),
        lam=float(model.lam),
        U_star=model.U_star,
        # the Cholesky factor reads the lower triangle only: mirror it, so that the exact symmetry
        # check of TaskConfig cannot reject a Sigma_x that LowRankModel accepted (to 1e-10)
        Sigma_x_override=np.tril(Sx) + np.tril(Sx, -1).T,
        Sigma_z=model.Sigma_z,
    )
    p = sample_prompts(config, n, rng)
    return LatentPrompts(H=p.H_M, c=p.c_M, beta=p.beta, z=p.z, beta_hat=p.z_dagger)


def latent_systems(U: np.ndarray, prompts: LatentPrompts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``A = U^T H_M U``, ``d = U^T c_M``, ``z^† = A^{-1} d`` for every subspace and prompt.

    Implements main paper §6.1.

    Parameters
    ----------
    U : ndarray (K, r) or (S, K, r)
    prompts : LatentPrompts with n prompts

    Returns
    -------
    A : ndarray (S, n, r, r)   (S = 1 for a single U)
    d : ndarray (S, n, r)
    z_dag : ndarray (S, n, r)

    Examples
    --------
    >>> model = make_lowrank_model(6, 2, 10, sigma=0.1, lam=0.0, cond_x=4.0, mu_z=np.ones(2), rng=np.random.default_rng(0))
    >>> prompts = sample_lowrank_prompts(model, 5, np.random.default_rng(1))
    >>> A, d, z_dag = latent_systems(model.U_star, prompts)
    >>> A.shape, d.shape, np.allclose(A @ z_dag[..., None], d[..., None])
    ((1, 5, 2, 2), (1, 5, 2), True)
    """
    U = np.asarray(U, float)
    Us = U if U.ndim == 3 else U[None]
    if Us.ndim != 3 or Us.shape[1] != prompts.H.shape[1]:
        raise ValueError(f"U: expected shape (K, r) or (S, K, r) with K={prompts.H.shape[1]}, got {U.shape}")
    HU = prompts.H[None] @ Us[:, None]  # (S, n, K, r), batched matmul (BLAS) rather than einsum
    A = np.swapaxes(Us, -1, -2)[:, None] @ HU
    A = 0.5 * (A + np.swapaxes(A, -1, -2))
    d = prompts.c @ Us  # (S, n, r)
    z_dag = np.linalg.solve(A, d[..., None])[..., 0]
    return A, d, z_dag


# ---------------------------------------------------------------------------
