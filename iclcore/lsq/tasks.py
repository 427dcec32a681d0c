"""Least-squares tasks as prompts: the finite reduction of main paper §1.2.

One task is one latent vector ``z ~ N(0, I_r)``, lifted to a regression vector
``β = U⋆ z`` (``U⋆ᵀU⋆ = I_r``). One prompt is ``M`` pairs
``x_i ~ N(0, Σ_x)``, ``y_i = x_iᵀβ + ξ_i``, ``ξ_i ~ N(0, σ²)``, summarised by

.. math::

    H_M = \\tfrac1M XᵀX + λ I_K, \\qquad c_M = \\tfrac1M Xᵀ y,
    \\qquad β^†_M = H_M^{-1} c_M .

The *decoder pair* of main paper §3.1 (``ẑ = P d``, ``H z^† = d``) is

* ``d = c_M`` — the prompt summary the linear-attention layer reads
  (a one-layer linear attention with merged key–query matrix ``P`` outputs
  ``P (1/M) Σ_i y_i x_i = P c_M``);
* ``z^† = H_M^{-1} c_M = β^†_M`` — the solution of the prompt's system, the
  fixed point of the Richardson solver ``z ← z + P(d − H z)``;
* ``z⋆`` — the regression target of the risk ``(1/K) E‖P d − z⋆‖²``. The paper
  writes ``z⋆ ∈ R^K`` without fixing it; we take ``z⋆ = β`` (``target="beta"``,
  default: the task itself, for which the population moments have a closed form)
  and offer ``z⋆ = β^†_M`` (``target="ridge"``, MMNN report §1's convention
  ``H z⋆ = c``). See the chapter's errata entry "What are d and z⋆".

Everything is vectorised over prompts: arrays carry a leading prompt axis ``n``.
Randomness only through a passed :class:`numpy.random.Generator`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iclcore.lsq.dynamics import psd_spectrum
from iclcore.validation import as_generator, positive_int, symmetric_psd

__all__ = [
    "TaskConfig",
    "Prompts",
    "design_covariance",
    "design_spectrum",
    "task_basis",
    "sample_tasks",
    "sample_prompts",
    "sample_prompt_statistics",
    "sample_decoder_pairs",
    "ridge_solution",
    "SPECTRUM_KINDS",
    "TARGETS",
]

SPECTRUM_KINDS = ("geometric", "linear", "identity")
TARGETS = ("beta", "ridge")


def design_spectrum(K: int, cond: float, kind: str = "geometric") -> np.ndarray:
    """Eigenvalues of the design covariance ``Σ_x``, decreasing, mean one.

    Parameters
    ----------
    K : int
        Dimension (``K ≥ 1``).
    cond : float
        Condition number ``λ_max/λ_min ≥ 1``.
    kind : {"geometric", "linear", "identity"}
        ``geometric``: ``λ_i ∝ cond^{-(i-1)/(K-1)}``; ``linear``: equally spaced
        from ``1`` to ``1/cond`` (before normalisation); ``identity``: all ones
        (requires ``cond == 1``).

    Returns
    -------
    ndarray, shape (K,)
        Eigenvalues normalised to ``Tr Σ_x = K`` (so ``E‖x‖² = K``).

    Examples
    --------
    >>> lam = design_spectrum(4, cond=10.0)
    >>> lam.shape, bool(np.isclose(lam.mean(), 1.0)), round(float(lam[0] / lam[-1]), 6)
    ((4,), True, 10.0)
    """
    K = positive_int(K, "K")
    if not np.isfinite(cond) or cond < 1:
        raise ValueError(f"cond: condition number must be finite and >= 1, got {cond!r}")
    if kind not in SPECTRUM_KINDS:
        raise ValueError(f"kind: unknown spectrum kind {kind!r}; choose one of {SPECTRUM_KINDS}")
    if kind == "identity":
        if cond != 1:
            raise ValueError(f"cond: kind='identity' needs cond == 1, got {cond!r}")
        return np.ones(K)
    t = np.arange(K) / max(K - 1, 1)
    if kind == "geometric":
        lam = cond ** (-t)
    else:
        lam = 1.0 - t * (1.0 - 1.0 / cond)
    return lam * (K / lam.sum())


def design_covariance(K: int, cond: float, kind: str = "geometric") -> np.ndarray:
    """Diagonal design covariance ``Σ_x`` with the spectrum of :func:`design_spectrum`.

    Returns
    -------
    ndarray, shape (K, K)
        ``diag(λ_1 ≥ … ≥ λ_K)``, ``Tr Σ_x = K``, ``λ_1/λ_K = cond``.

    Examples
    --------
    >>> S = design_covariance(3, cond=4.0)
    >>> S.shape, bool(np.allclose(S, np.diag(np.diag(S)))), round(float(np.trace(S)), 6)
    ((3, 3), True, 3.0)
    """
    return np.diag(design_spectrum(K, cond, kind))


def task_basis(K: int, r: int) -> np.ndarray:
    """Task subspace ``U⋆``: the first ``r`` coordinate axes.

    With a diagonal decreasing ``Σ_x`` these are the ``r`` highest-variance
    design directions. ``U⋆ᵀU⋆ = I_r`` holds exactly.

    Returns
    -------
    ndarray, shape (K, r)

    Examples
    --------
    >>> task_basis(3, 2)
    array([[1., 0.],
           [0., 1.],
           [0., 0.]])
    """
    if not 1 <= r <= K:
        raise ValueError(f"r: task rank must satisfy 1 <= r <= K={K}, got {r!r}")
    return np.eye(K)[:, :r]


@dataclass(frozen=True, eq=False)
class TaskConfig:
    """A distribution over least-squares prompts (main paper §1.2).

    Attributes
    ----------
    K : int
        Ambient dimension of ``x`` and ``β``.
    M : int
        Prompt size (number of examples per prompt).
    r : int or None
        Task rank; ``β = U⋆ z``, ``z ~ N(0, task_scale² Σ_z)`` (``Σ_z = I_r`` by default).
        ``None`` means ``r = K``.
    sigma : float
        Label-noise standard deviation ``σ ≥ 0``.
    lam : float
        Ridge ``λ ≥ 0`` in ``H_M = XᵀX/M + λI``.
    cond : float
        Condition number of ``Σ_x``.
    spectrum : str
        Kind of spectrum of ``Σ_x`` (see :func:`design_spectrum`).
    task_scale : float
        Standard deviation of each latent coordinate.
    target : {"beta", "ridge"}
        The decoder target ``z⋆``: the task ``β`` or the prompt's ridge solution ``β^†_M``.
    U_star : ndarray of shape (K, r) or None
        Task subspace; ``None`` uses :func:`task_basis`.
    Sigma_x_override : ndarray of shape (K, K) or None
        A symmetric positive definite design covariance replacing the spectrum.
    Sigma_z : ndarray of shape (r, r) or None
        A symmetric positive definite latent covariance (main paper §1.2); ``None`` means ``I_r``.
    """

    K: int = 16
    M: int = 64
    r: int | None = None
    sigma: float = 0.1
    lam: float = 0.0
    cond: float = 10.0
    spectrum: str = "geometric"
    task_scale: float = 1.0
    target: str = "beta"
    U_star: np.ndarray | None = field(default=None, repr=False)
    Sigma_x_override: np.ndarray | None = field(default=None, repr=False)
    Sigma_z: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        positive_int(self.K, "K")
        positive_int(self.M, "M")
        r = positive_int(self.K if self.r is None else self.r, "r", maximum=self.K)
        if not np.isfinite(self.sigma) or self.sigma < 0:
            raise ValueError(f"sigma: noise level must be finite and >= 0, got {self.sigma!r}")
        if not np.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"lam: ridge must be finite and >= 0, got {self.lam!r}")
        if not np.isfinite(self.task_scale) or self.task_scale <= 0:
            raise ValueError(f"task_scale: must be finite and > 0, got {self.task_scale!r}")
        if self.target not in TARGETS:
            raise ValueError(f"target: unknown decoder target {self.target!r}; choose one of {TARGETS}")
        if self.Sigma_x_override is None:
            design_spectrum(self.K, self.cond, self.spectrum)  # validates cond/spectrum
        else:
            S = np.asarray(self.Sigma_x_override, dtype=float)
            if S.shape != (self.K, self.K):
                raise ValueError(f"Sigma_x_override: expected shape {(self.K, self.K)}, got {S.shape}")
            symmetric_psd(S, "Sigma_x_override", definite=True)
        if self.U_star is not None:
            U = np.asarray(self.U_star, dtype=float)
            if U.shape != (self.K, r):
                raise ValueError(f"U_star: expected shape {(self.K, r)}, got {U.shape}")
            if not np.allclose(U.T @ U, np.eye(r), atol=1e-10):
                raise ValueError("U_star: columns must be orthonormal (U⋆ᵀU⋆ = I_r)")
        if self.Sigma_z is not None:
            sz = psd_spectrum(self.Sigma_z, "Sigma_z")
            if sz.Q.shape[0] != r or sz.lam[0] <= 0:
                raise ValueError(f"Sigma_z: must be positive definite of shape ({r}, {r})")
        if self.target == "ridge" and self.lam == 0 and self.M < self.K:
            raise ValueError(f"lam: target='ridge' with lam=0 needs M >= K (got M={self.M}, K={self.K})")

    @property
    def rank(self) -> int:
        """Task rank ``r`` (``K`` when ``r`` is None)."""
        return self.K if self.r is None else int(self.r)

    @property
    def Sigma_x(self) -> np.ndarray:
        """Design covariance ``Σ_x``, shape (K, K)."""
        if self.Sigma_x_override is not None:
            return np.asarray(self.Sigma_x_override, dtype=float)
        return design_covariance(self.K, self.cond, self.spectrum)

    @property
    def basis(self) -> np.ndarray:
        """Task subspace ``U⋆``, shape (K, r)."""
        return task_basis(self.K, self.rank) if self.U_star is None else np.asarray(self.U_star, float)

    @property
    def Sigma_beta(self) -> np.ndarray:
        """Task covariance ``Σ_β = task_scale² U⋆ Σ_z U⋆ᵀ``, shape (K, K)."""
        U = self.basis
        if self.Sigma_z is None:
            return self.task_scale**2 * U @ U.T
        return self.task_scale**2 * U @ np.asarray(self.Sigma_z, float) @ U.T

    @property
    def H_infinity(self) -> np.ndarray:
        """Infinite-prompt system matrix ``H_∞ = Σ_x + λI`` (main paper §4), shape (K, K)."""
        return self.Sigma_x + self.lam * np.eye(self.K)

    def replace(self, **changes) -> TaskConfig:
        """A copy with some fields changed (validated again)."""
        from dataclasses import replace as _replace

        return _replace(self, **changes)


@dataclass(frozen=True, eq=False)
class Prompts:
    """A batch of ``n`` prompts and their decoder pairs.

    Attributes
    ----------
    X : ndarray (n, M, K) or None
        Designs (``None`` when sampled through sufficient statistics).
    y : ndarray (n, M) or None
        Labels.
    beta : ndarray (n, K)
        Task vectors ``β = U⋆ z``.
    z : ndarray (n, r)
        Latent task coordinates.
    H_M : ndarray (n, K, K)
        ``XᵀX/M + λI``.
    c_M : ndarray (n, K)
        ``Xᵀy/M``.
    d : ndarray (n, K)
        Decoder input ``d = c_M``.
    z_star : ndarray (n, K)
        Decoder target ``z⋆`` (``β`` or ``β^†_M`` according to ``config.target``).
    z_dagger : ndarray (n, K)
        Solution of the prompt system ``H_M z^† = d``.
    """

    X: np.ndarray | None
    y: np.ndarray | None
    beta: np.ndarray
    z: np.ndarray
    H_M: np.ndarray
    c_M: np.ndarray
    d: np.ndarray
    z_star: np.ndarray
    z_dagger: np.ndarray

    @property
    def n(self) -> int:
        """Number of prompts."""
        return self.beta.shape[0]


def sample_tasks(config: TaskConfig, n_prompts: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw latent tasks and their regression vectors.

    Returns
    -------
    z : ndarray, shape (n, r)
        ``z ~ N(0, task_scale² Σ_z)`` (``Σ_z = I_r`` unless ``config.Sigma_z`` is set).
    beta : ndarray, shape (n, K)
        ``β = U⋆ z``.

    Examples
    --------
    >>> z, beta = sample_tasks(TaskConfig(K=4, M=8, r=2), 5, np.random.default_rng(0))
    >>> z.shape, beta.shape
    ((5, 2), (5, 4))
    """
    n_prompts = positive_int(n_prompts, "n_prompts")
    rng = as_generator(rng)
    z = rng.standard_normal((n_prompts, config.rank))
    if config.Sigma_z is not None:
        z = z @ np.linalg.cholesky(np.asarray(config.Sigma_z, float)).T
    z = config.task_scale * z
    return z, z @ config.basis.T


def ridge_solution(H: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Batched ``H^{-1} c``.

    Parameters
    ----------
    H : ndarray, shape (n, K, K)
    c : ndarray, shape (n, K)

    Returns
    -------
    ndarray, shape (n, K)

    Examples
    --------
    >>> H = np.array([[[2.0, 0.0], [0.0, 4.0]]])
    >>> ridge_solution(H, np.array([[2.0, 2.0]]))
    array([[1. , 0.5]])
    """
    H = np.asarray(H, float)
    c = np.asarray(c, float)
    if H.ndim != 3 or c.ndim != 2 or H.shape[:2] != c.shape or H.shape[1] != H.shape[2]:
        raise ValueError(f"H, c: expected shapes (n, K, K) and (n, K), got {H.shape} and {c.shape}")
    return np.linalg.solve(H, c[..., None])[..., 0]


def _assemble(config: TaskConfig, X, y, z, beta, H, c) -> Prompts:
    if config.lam > 0 or config.M >= config.K:
        z_dag = ridge_solution(H, c)
    else:  # singular H_M: minimum-norm solution
        z_dag = np.einsum("nij,nj->ni", np.linalg.pinv(H, hermitian=True), c)
    z_star = beta if config.target == "beta" else z_dag
    return Prompts(X=X, y=y, beta=beta, z=z, H_M=H, c_M=c, d=c, z_star=z_star, z_dagger=z_dag)


def sample_prompts(config: TaskConfig, n_prompts: int, rng: np.random.Generator) -> Prompts:
    """Draw ``n`` prompts explicitly (designs and labels kept).

    Implements main paper §1.2: ``x_i ~ N(0, Σ_x)``, ``y_i = x_iᵀβ + ξ_i``,
    ``H_M = XᵀX/M + λI``, ``c_M = Xᵀy/M``. Memory is ``O(n M K)``; for large
    prompts use :func:`sample_prompt_statistics` (same law of ``(H_M, c_M, β)``).

    Parameters
    ----------
    config : TaskConfig
    n_prompts : int
    rng : numpy.random.Generator

    Returns
    -------
    Prompts
        With ``X`` of shape (n, M, K) and ``y`` of shape (n, M).
        When ``λ = 0`` and ``M < K`` the system is singular and ``z^†`` is the
        minimum-norm solution ``H_M^† c_M``.

    Examples
    --------
    >>> p = sample_prompts(TaskConfig(K=3, M=5), 4, np.random.default_rng(0))
    >>> p.X.shape, p.H_M.shape, p.d.shape
    ((4, 5, 3), (4, 3, 3), (4, 3))
    """
    n_prompts = positive_int(n_prompts, "n_prompts")
    rng = as_generator(rng)
    K, M = config.K, config.M
    z, beta = sample_tasks(config, n_prompts, rng)
    root = np.sqrt(np.diag(config.Sigma_x)) if config.Sigma_x_override is None else None
    G = rng.standard_normal((n_prompts, M, K))
    if root is not None:
        X = G * root
    else:
        X = G @ np.linalg.cholesky(config.Sigma_x).T
    y = np.einsum("nmk,nk->nm", X, beta) + config.sigma * rng.standard_normal((n_prompts, M))
    H = np.einsum("nmi,nmj->nij", X, X) / M + config.lam * np.eye(K)
    c = np.einsum("nmi,nm->ni", X, y) / M
    return _assemble(config, X, y, z, beta, H, c)


def sample_prompt_statistics(config: TaskConfig, n_prompts: int, rng: np.random.Generator) -> Prompts:
    """Draw ``(H_M, c_M, β)`` with the exact law of :func:`sample_prompts`, without designs.

    Uses sufficient statistics: ``Σ̂ = XᵀX/M = Σ_x^{1/2} (W/M) Σ_x^{1/2}`` with
    ``W ~ Wishart_K(M, I)`` drawn by the Bartlett decomposition (needs ``M ≥ K``),
    and, given ``X`` and ``β``, ``Xᵀξ/M ~ N(0, (σ²/M) Σ̂)``, so
    ``c_M = Σ̂ β + (σ/√M) L g`` with ``L Lᵀ = Σ̂`` and ``g ~ N(0, I_K)``.
    Cost ``O(n K³)`` instead of ``O(n M K²)``.

    Returns
    -------
    Prompts
        With ``X = y = None``.

    Examples
    --------
    >>> p = sample_prompt_statistics(TaskConfig(K=3, M=5), 4, np.random.default_rng(0))
    >>> p.X is None, p.H_M.shape, bool(np.allclose(p.H_M, np.swapaxes(p.H_M, 1, 2)))
    (True, (4, 3, 3), True)
    """
    n_prompts = positive_int(n_prompts, "n_prompts")
    rng = as_generator(rng)
    K, M = config.K, config.M
    if M < K:
        raise ValueError(f"M: the Bartlett sampler needs M >= K (got M={M}, K={K}); use sample_prompts")
    z, beta = sample_tasks(config, n_prompts, rng)
    # Bartlett: W = A Aᵀ, A lower triangular, A_ii = sqrt(chi2(M - i)), i = 0..K-1, A_ij ~ N(0,1), i > j
    A = np.tril(rng.standard_normal((n_prompts, K, K)), -1)
    dof = M - np.arange(K)
    diag = np.sqrt(rng.chisquare(dof, size=(n_prompts, K)))
    A[:, np.arange(K), np.arange(K)] = diag
    S = config.Sigma_x
    R = np.linalg.cholesky(S)  # S = R Rᵀ
    L = np.einsum("ij,njk->nik", R, A) / np.sqrt(M)  # Σ̂ = L Lᵀ
    Sigma_hat = L @ np.swapaxes(L, 1, 2)
    g = rng.standard_normal((n_prompts, K))
    c = np.einsum("nij,nj->ni", Sigma_hat, beta) + (config.sigma / np.sqrt(M)) * np.einsum("nij,nj->ni", L, g)
    H = Sigma_hat + config.lam * np.eye(K)
    return _assemble(config, None, None, z, beta, H, c)


def sample_decoder_pairs(config: TaskConfig, n_prompts: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""Draw only the decoder pairs ``(d, z⋆)`` for training, in ``O(n K)`` random numbers.

    For ``target="beta"`` this uses the exact law of ``d = c_M = R Gᵀ y / M``
    (``X = G Rᵀ``, ``Σ_x = R Rᵀ``, ``G`` standard Gaussian, ``y = G u + ξ``,
    ``u = Rᵀβ``): row by row ``E[g_m | y_m] = u y_m / s²`` with ``s² = ‖u‖² + σ²``
    and ``Cov(g_m | y_m) = I − u uᵀ/s²``, hence

    .. math::

        \begin{gathered}
        Gᵀ y = u\,q + \sqrt{s^2 q}\,\bigl(h - (1 - σ/s)\,\hat u \hat uᵀ h\bigr),\\
        q \sim χ^2_M,\; h \sim N(0, I_K),
        \end{gathered}

    (``‖y‖² = s² q``; ``(I − uuᵀ/s²)^{1/2} = I − (1 − σ/s) û ûᵀ``). Same law as
    ``(sample_prompts(...).d, .z_star)`` without drawing the ``M × K`` design.
    For ``target="ridge"`` (which needs ``H_M``) falls back to
    :func:`sample_prompt_statistics` / :func:`sample_prompts`.

    Returns
    -------
    d : ndarray, shape (n, K)
    z_star : ndarray, shape (n, K)

    Examples
    --------
    >>> d, z = sample_decoder_pairs(TaskConfig(K=3, M=5), 4, np.random.default_rng(0))
    >>> d.shape, z.shape
    ((4, 3), (4, 3))
    """
    n_prompts = positive_int(n_prompts, "n_prompts")
    rng = as_generator(rng)
    K, M = config.K, config.M
    if config.target != "beta":
        p = sample_prompt_statistics(config, n_prompts, rng) if M >= K else sample_prompts(config, n_prompts, rng)
        return p.d, p.z_star
    z, beta = sample_tasks(config, n_prompts, rng)
    R = np.linalg.cholesky(config.Sigma_x)
    u = beta @ R  # rows uᵀ = βᵀ R, i.e. u = Rᵀ β
    unorm2 = np.sum(u**2, axis=1)
    s2 = unorm2 + config.sigma**2
    q = rng.chisquare(M, size=n_prompts)
    h = rng.standard_normal((n_prompts, K))
    with np.errstate(invalid="ignore", divide="ignore"):
        uhat = np.where(unorm2[:, None] > 0, u / np.sqrt(np.where(unorm2 > 0, unorm2, 1.0))[:, None], 0.0)
        shrink = np.where(s2 > 0, 1.0 - config.sigma / np.sqrt(np.where(s2 > 0, s2, 1.0)), 0.0)
    h_perp = h - (shrink * np.sum(uhat * h, axis=1))[:, None] * uhat
    Gty = u * q[:, None] + np.sqrt(s2 * q)[:, None] * h_perp
    return Gty @ R.T / M, beta
