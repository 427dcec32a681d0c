"""Untied layers at ``N = D``, ``P = ∞`` (Bordelon et al. §5.1, Eq. 19/117, App. G.1): the
loss, the Hessian at the balanced point and the global untied optimum; with label noise at finite
context length (App. G.1.2, Eq. 122) by Monte Carlo over the context covariance. The width-``N`` model, its normalisation ``c = D/N`` and its notation are described in
:mod:`iclcore.dmft`.

Task of :func:`iclcore.parallel.map_configs`: one SGD run of the untied reduced model (:func:`untied_sgd_run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iclcore.dmft.finite_context import ContextDraws
from iclcore.dmft.rrs import rrs_optimum
from iclcore.validation import nondecreasing_times, nonnegative_float, positive_int, spectrum_pair

if TYPE_CHECKING:
    from iclcore.models.attention import TrainResult

__all__ = [
    "untied_loss",
    "untied_balanced_hessian",
    "untied_optimum",
    "BalancedStability",
    "balanced_optimum_stability",
    "untied_noisy_loss",
    "untied_noisy_flow",
    "UntiedSGDRun",
    "untied_sgd_run",
]


# --------------------------------------------------------------------------------------------
# Untied layers at N = D, P = infinity (Bordelon et al. §5.1, Eq. 19/117, App. G.1)
# --------------------------------------------------------------------------------------------


def untied_loss(layer_gammas: np.ndarray, lam: np.ndarray, omega: np.ndarray) -> float:
    """Loss of untied isotropic layers ``tr[Omega Lambda prod_l (I - gamma^l Lambda / L)^2]`` (Eq. 117).

    Parameters
    ----------
    layer_gammas : array ``(L,)``, one scale per layer
    lam, omega : arrays ``(D,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    g = np.asarray(layer_gammas, dtype=float)
    if g.ndim != 1 or g.size < 1 or not np.all(np.isfinite(g)):
        raise ValueError("layer_gammas: expected a finite 1-D array with one scale per layer")
    L = g.size
    prod = np.prod((1.0 - g[:, None] * lam[None, :] / L) ** 2, axis=0)
    return float(np.mean(omega * lam * prod))


def untied_balanced_hessian(gamma: float, lam: np.ndarray, omega: np.ndarray, *, L: int) -> tuple[float, float]:
    """Eigenvalues of the Hessian of :func:`untied_loss` at the balanced point ``gamma^l = gamma``.

    With ``u = 1 - gamma Lambda / L`` and ``m = tr[Omega Lambda^3 u^{2L-2}] / L^2`` the Hessian is
    ``2m I + 4m (11^T - I)``: eigenvalue ``(4L - 2) m`` along the balanced direction ``1`` and
    ``-2m`` (multiplicity ``L - 1``) on every direction transverse to it. Since ``m > 0`` the
    balanced manifold, invariant under gradient flow (App. G.1, Eq. 118), is transversally
    *unstable* at every ``gamma``: perturbations of the balance grow.

    Returns
    -------
    (balanced, transverse) : tuple of float
    """
    lam, omega = spectrum_pair(lam, omega)
    L = positive_int(L, "L")
    if not np.isfinite(gamma):
        raise ValueError(f"gamma: expected a finite scale, got {gamma}")
    u = 1.0 - gamma * lam / L
    m = float(np.mean(omega * lam**3 * u ** (2 * L - 2))) / L**2
    return (4 * L - 2) * m, -2.0 * m


def untied_optimum(lam: np.ndarray, omega: np.ndarray, L: int) -> tuple[np.ndarray, float]:
    """Global minimum of :func:`untied_loss` over the ``L`` layer scales (Bordelon et al. §5.1, Eq. 117).

    The untied loss is ``int p(x)^2 dmu(x)`` with ``p(x) = prod_l (1 - gamma^l x / L)`` a polynomial
    of degree ``L`` with ``p(0) = 1`` and ``mu = (1/D) sum_k omega_k lambda_k delta_{lambda_k}``. Over
    all such polynomials the minimum is ``1 / sum_{j<=L} q_j(0)^2`` with ``q_j`` the orthonormal
    polynomials of ``mu``; the minimiser is the kernel polynomial ``K_L(x, 0)``, whose roots are real,
    positive and inside the spectrum, so it is of the product form and the minimum is attained by
    real layer scales ``gamma^l = L / x_l``. The ``q_j`` come from the Lanczos (Stieltjes) recurrence
    on ``diag(lambda)`` with full reorthogonalisation; the roots ``x_l`` are the nonzero nodes of
    the Gauss-Radau rule with a fixed node at 0 (eigenvalues of the modified Jacobi matrix).

    If the measure has ``L`` or fewer atoms (``L >= D`` for distinct ``lambda``) the minimum is 0:
    the layers annihilate every mode. At small ``D`` this discreteness makes the untied optimum far
    smaller than its ``D -> infinity`` limit (each layer can remove one mode exactly).

    Parameters
    ----------
    lam, omega : arrays ``(D,)`` with ``lam > 0``
    L : int, number of layers

    Returns
    -------
    (layer_gammas, loss) : sorted array ``(L,)`` and float
    """
    from scipy.linalg import eigh_tridiagonal

    lam, omega = spectrum_pair(lam, omega)
    L = positive_int(L, "L")
    if np.any(lam <= 0):
        raise ValueError("lam: the untied optimum needs positive eigenvalues")
    w = omega * lam / lam.size
    atoms = np.unique(lam[w > 0])
    if atoms.size <= L:
        g = np.concatenate([L / atoms, np.full(L - atoms.size, L / atoms.max())])
        return np.sort(g), float(untied_loss(g, lam, omega))
    m0 = float(w.sum())
    D = lam.size
    Q = np.zeros((D, L + 1))
    a = np.zeros(L + 1)
    b = np.zeros(L + 1)
    Q[:, 0] = np.sqrt(w / m0)
    for j in range(L + 1):
        v = lam * Q[:, j]
        a[j] = Q[:, j] @ v
        v = v - a[j] * Q[:, j] - (b[j - 1] * Q[:, j - 1] if j > 0 else 0.0)
        v -= Q[:, : j + 1] @ (Q[:, : j + 1].T @ v)  # full reorthogonalisation
        b[j] = float(np.linalg.norm(v))
        if j < L:
            Q[:, j + 1] = v / b[j]
    q0 = np.zeros(L + 1)  # orthonormal polynomials at x = 0: b_j q_{j+1} = (x - a_j) q_j - b_{j-1} q_{j-1}
    q0[0] = 1.0 / np.sqrt(m0)
    for j in range(L):
        q0[j + 1] = (-a[j] * q0[j] - (b[j - 1] * q0[j - 1] if j > 0 else 0.0)) / b[j]
    loss = float(1.0 / np.sum(q0**2))
    radau = a[: L + 1].copy()
    radau[L] = -b[L - 1] * q0[L - 1] / q0[L]  # Gauss-Radau: a node at x = 0
    nodes = eigh_tridiagonal(radau, b[:L], eigvals_only=True)
    roots = nodes[np.argsort(np.abs(nodes))[1:]]  # drop the node at 0
    return np.sort(L / roots), loss


# --------------------------------------------------------------------------------------------
# Untied layers with label noise at finite context length (Bordelon et al. App. G.1.2, Eqs. 119-122)
# --------------------------------------------------------------------------------------------


def _untied_noisy_terms(layer_gammas: np.ndarray, draws: ContextDraws) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-draw signal term and the two noise forms, each of shape ``(..., n)``.

    ``u_ℓ = 1 - γ^ℓ s / L``, ``p = Π_ℓ u_ℓ`` and ``r = Σ_ℓ γ^ℓ Π_{k>ℓ} u_k`` (Horner: ``r ← u_ℓ r + γ^ℓ``).
    """
    g = np.asarray(layer_gammas, dtype=float)
    if g.ndim < 1 or g.shape[-1] < 1 or not np.all(np.isfinite(g)):
        raise ValueError("layer_gammas: expected a finite array (..., L) with one scale per layer")
    L = g.shape[-1]
    s = draws.s
    p = np.ones(g.shape[:-1] + s.shape)
    r = np.zeros_like(p)
    for l in range(L):  # loop over layers only (L is small); draws and modes are array axes
        u = 1.0 - g[..., l, None, None] * s / L
        p = p * u
        r = u * r + g[..., l, None, None]
    D = draws.D
    signal = np.sum(p * (draws.W_lo @ p[..., None])[..., 0], axis=-1) / D  # batched p^T W p
    decoupled = np.sum(r * (draws.W_ll @ r[..., None])[..., 0], axis=-1) / D
    coupled = np.sum(draws.w_l * s * r * r, axis=-1) / D
    return signal, decoupled, coupled


def untied_noisy_loss(
    layer_gammas: np.ndarray, draws: ContextDraws, sigma: float, *, decoupled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Excess loss of untied isotropic layers with label noise at context length ``P`` (App. G.1.2).

    The weight error obeys ``v^ℓ = A^ℓ v^{ℓ-1} - γ^ℓ L^{-1} σ Xᵀε / P`` with ``A^ℓ = I - γ^ℓ Σ̂ / L``
    (Eq. 119), so ``v^L = Π A^ℓ b_* - (σ/L) R Xᵀε/P`` with ``R = Σ_ℓ γ^ℓ Π_{k>ℓ} A^k`` (Eq. 120) and,
    since ``Cov(Xᵀε/P | X) = Σ̂ / P``,

    .. math::

        \\mathcal L = \\Big\\langle \\mathrm{tr}\\,\\Lambda\\, p(\\hat\\Sigma)\\,\\Omega\\, p(\\hat\\Sigma)\\Big\\rangle
        + \\frac{\\sigma^2}{L^2\\alpha}\\Big\\langle \\mathrm{tr}\\,\\Lambda R\\, \\hat\\Sigma\\, R\\Big\\rangle .

    ``decoupled=True`` gives Eq. (122) as printed: ``⟨bbᵀ⟩ = σ² L^{-2} α^{-1} Λ`` replaces the
    ``Σ̂`` between the two ``R`` by its mean ``Λ`` (exact as ``α → ∞`` at fixed ``σ²/α``; the
    difference is ``O(σ²/α²)``); ``decoupled=False`` keeps ``Σ̂`` (exact at every ``α``). Both average
    the ``A^ℓ`` over the same draws. The query label noise ``σ²`` of a mean-squared error on
    noisy queries is not included.

    Parameters
    ----------
    layer_gammas : array ``(..., L)``, layer scales ``γ^ℓ`` (leading axes: several settings at once)
    draws : ContextDraws with finite ``P`` (from :func:`iclcore.dmft.finite_context.context_draws`)
    sigma : float >= 0, label-noise standard deviation
    decoupled : bool, Eq. (122) as printed (True) or the exact noise term (False)

    Returns
    -------
    loss, se : arrays of shape ``(...)``: the Monte Carlo mean over draws and its standard error
    """
    if not isinstance(draws, ContextDraws) or draws.P is None:
        raise ValueError("draws: expected ContextDraws at a finite context length P")
    sigma = nonnegative_float(sigma, "sigma")
    signal, dec, cou = _untied_noisy_terms(layer_gammas, draws)
    L = np.asarray(layer_gammas).shape[-1]
    per_draw = signal + sigma**2 * draws.D / (L**2 * draws.P) * (dec if decoupled else cou)
    return per_draw.mean(-1), per_draw.std(-1, ddof=1) / np.sqrt(draws.n)


def untied_noisy_flow(
    t: np.ndarray, draws: ContextDraws, L: int, *, sigma: float, decoupled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Balanced gradient flow on :func:`untied_noisy_loss`: ``dγ/dt = -½ d𝓛(γ 1_L)/dγ`` from ``γ = 0``.

    With learning rate ``η_0 L`` per layer the untied flow stays balanced (Eq. 118) and follows the
    recurrent clock of :mod:`iclcore.dmft` (``t = η · steps``). The derivative is a central
    difference of the Monte Carlo loss (step ``1e-6 (1 + γ)``), exact for the same draws up to ``~1e-9``.

    Returns
    -------
    gamma, loss : arrays ``(len(t),)``: the flow and :func:`untied_noisy_loss` along it (excess loss)
    """
    from scipy.integrate import solve_ivp

    L = positive_int(L, "L")
    t = nondecreasing_times(t)
    if t[0] < 0:
        raise ValueError("t: times must be >= 0")

    def loss(g: np.ndarray) -> np.ndarray:
        return untied_noisy_loss(
            np.repeat(np.asarray(g, float)[:, None], L, axis=1), draws, sigma, decoupled=decoupled
        )[0]

    def rhs(_t: float, y: np.ndarray) -> list[float]:
        h = 1e-6 * (1.0 + abs(y[0]))
        lp, lm = loss(np.array([y[0] + h, y[0] - h]))
        return [-0.5 * (lp - lm) / (2 * h)]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [0.0], t_eval=t, method="LSODA", rtol=1e-7, atol=1e-9)
    if not sol.success:
        raise RuntimeError(f"untied_noisy_flow: the ODE solver failed ({sol.message})")
    gam = sol.y[0]
    return gam, loss(gam)


# --------------------------------------------------------------------------------------------
# Inner tasks (iclcore.parallel.map_configs): SGD runs of the untied reduced model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UntiedSGDRun:
    """One online-SGD run of the untied reduced model (``L`` matrices ``Γ^ℓ`` from zero) on RRS contexts.

    Attributes
    ----------
    lam, omega : tuples ``(D,)``, the spectra; L : int, depth; B : int, contexts per step
    eta : float, theory time step (learning rate ``η D L / 2``, the paper's ``η = η_0 L``); steps : int
    seed : int, seed of the torch generator of the batches
    P : int or None, context length; None: population contexts (``P = K = ∞``, population loss)
    K : int, queries per context (finite ``P`` only); sigma : float, label noise on the context and
        query labels (finite ``P`` only; drawn from the same generator, also when ``sigma = 0``)
    device : str, the torch device it trains on
    """

    lam: tuple[float, ...]
    omega: tuple[float, ...]
    L: int
    B: int
    eta: float
    steps: int
    seed: int
    P: int | None = None
    K: int = 1
    sigma: float = 0.0
    device: str = "cpu"


def untied_sgd_run(run: UntiedSGDRun) -> TrainResult:
    """Plain SGD of :class:`iclcore.models.attention.ReducedGammaStack` with untied layers (Bordelon et al. §5.1, Fig. 8).

    Population contexts (``run.P`` None): the loss is the population-context loss; else the query
    mean-squared error on contexts of ``P`` labelled tokens and ``K`` queries whose labels carry noise
    ``σ`` (App. G.1.2). Returns the :class:`~iclcore.models.attention.TrainResult` (``loss (steps,)``,
    ``gamma (steps + 1, L)``). A pure function of ``run``: a task of :func:`iclcore.parallel.map_configs`.
    """
    import torch  # here, not at the top: the rest of this module is numpy theory used without torch

    from iclcore.models.attention import ReducedGammaStack, sample_rrs_contexts, train

    if not isinstance(run, UntiedSGDRun):
        raise TypeError(f"run: expected an UntiedSGDRun, got {type(run).__name__}")
    lam, omega = spectrum_pair(np.array(run.lam), np.array(run.omega))
    D = lam.size
    model = ReducedGammaStack(D, run.L, tied=False)
    lr = run.eta * D * run.L / 2
    gen = torch.Generator().manual_seed(run.seed)
    if run.P is None:
        return train(
            model,
            lambda g: sample_rrs_contexts(run.B, 1, 1, lam=lam, omega=omega, gen=g),
            run.steps,
            lr=lr,
            gen=gen,
            population=True,
            device=run.device,
        )

    def noisy(g: torch.Generator):
        ctx = sample_rrs_contexts(run.B, run.P, run.K, lam=lam, omega=omega, gen=g)
        ctx.y = ctx.y + run.sigma * torch.randn(ctx.y.shape, generator=g, dtype=ctx.y.dtype)
        ctx.ys = ctx.ys + run.sigma * torch.randn(ctx.ys.shape, generator=g, dtype=ctx.ys.dtype)
        return ctx

    return train(model, noisy, run.steps, lr=lr, gen=gen, device=run.device)


@dataclass(frozen=True)
class BalancedStability:
    """The balanced (recurrent) optimum as a point of the untied landscape (:func:`balanced_optimum_stability`).

    Attributes
    ----------
    longitudinal, transverse : float
        Hessian eigenvalues of :func:`untied_loss` at the balanced optimum (:func:`untied_balanced_hessian`):
        along ``1_L`` and across it (negative: the balanced manifold is transversally unstable).
    balanced_loss, untied_loss : float
        The balanced minimum (:func:`iclcore.dmft.rrs.rrs_optimum`) and the global untied one
        (:func:`untied_optimum`).
    gradient_spread : float
        ``ptp / |mean|`` of the layer gradients at the balanced point ``0.7 γ*`` (central differences,
        step ``1e-6 γ*``): 0 up to rounding, since the layers are exchangeable there.
    """

    longitudinal: float
    transverse: float
    balanced_loss: float
    untied_loss: float
    gradient_spread: float


def balanced_optimum_stability(lam: np.ndarray, omega: np.ndarray, L: int) -> BalancedStability:
    """Curvature of the untied loss at the balanced optimum, its global optimum and the layer symmetry (§5.1, Fig. 8).

    Parameters
    ----------
    lam, omega : ndarray, shape (D,)
        The spectrum and task variances.
    L : int
        Number of layers, ``>= 2``.

    Returns
    -------
    BalancedStability
    """
    L = positive_int(L, "L", minimum=2)
    g_star, l_bal = rrs_optimum(lam, omega, L)
    lon, tra = untied_balanced_hessian(g_star, lam, omega, L=L)
    _, l_unt = untied_optimum(lam, omega, L)
    h = 1e-6 * g_star
    point = np.full(L, 0.7 * g_star)  # away from the optimum, where the gradient is not small
    grads = np.array(
        [(untied_loss(point + h * e, lam, omega) - untied_loss(point - h * e, lam, omega)) / (2 * h) for e in np.eye(L)]
    )
    return BalancedStability(lon, tra, l_bal, l_unt, float(np.ptp(grads) / abs(grads.mean())))
