"""Replica and spectral order parameters of main paper §9 (Figure 11, §12.11).

Macroscopic, coordinate-free summaries of a trained linear-attention preconditioner,
computed from the checkpoints of the existing online runs
(:func:`iclcore.richardson.decoder.online_decoder_training` for ``P_s``,
:func:`iclcore.richardson.encdec.encdec_dynamics` for ``U_s`` and ``P_{z,s}``):

.. math::

    \\begin{gathered}
    γ = K/M, \\qquad ρ_s^{pop} = ρ(I - P_s H_∞),\\\\
    ρ_{z,s}^{pop} = ρ(I - P_{z,s} A_{∞,s}),\\quad A_{∞,s} = U_s^⊤ H_∞ U_s,\\\\
    \\operatorname{srank}(P) = \\|P\\|_F^2/\\|P\\|_2^2,\\\\
    E_{top,k}(P) = \\sum_{i≤k} σ_i(P)^2 / \\sum_i σ_i(P)^2,\\\\
    κ(H_M) = λ_{max}(H_M)/λ_{min}(H_M),\\\\
    Ω_{s,i} = \\frac{λ_i \\|(P_s - P_⋆) q_i\\|^2}{\\sum_j λ_j \\|(P_s - P_⋆) q_j\\|^2},\\\\
    H(Ω_s) = -\\frac{1}{\\log K}\\sum_i Ω_{s,i}\\log Ω_{s,i},
    \\end{gathered}

with ``C = Q Λ Qᵀ`` and ``ρ(·)`` the spectral radius; ``srank`` is :func:`iclcore.linalg.stable_rank` and ``E_top,k`` is
:func:`iclcore.linalg.top_energy`. The encoder error is
``sin²(U_s, U⋆) = ‖sin Θ(U_s, U⋆)‖_2²`` (:func:`iclcore.richardson.subspace.sin_theta`).
The Marchenko–Pastur law, its edges and CDF come from :mod:`iclcore.spectra.mp`; this module only
builds the windows that §9 and §12.11 compare spectra with:

* prompt aspect: ``κ(H_M) ≲ κ(Σ)((1+√γ)/(1-√γ))²`` (exact for ``Σ ∝ I`` as ``K, M → ∞``) and the
  best contraction of a scaled inverse, ``min_α ρ(I - α Σ^{-1} H_M) → 2√γ/(1+γ)``;
* latent window: ``spec(A_s) ⊂ [λ_min(S)(1-√(r/M))² + λ, λ_max(S)(1+√(r/M))² + λ]`` with
  ``S = U_sᵀ Σ_x U_s`` (the whitened Gram part ``S^{-1/2} U_sᵀ Σ̂ U_s S^{-1/2}`` is exactly
  ``Wishart_r(M, I)/M`` when ``U_s`` does not depend on the prompt).

Every quantity is invariant under the gauges of the model (orthogonal change of ambient
coordinates; ``U ↦ U O``, ``P_z ↦ Oᵀ P_z O`` in the latent space; ρ and the spectrum of ``P H`` are
even invariant under any invertible change of coordinates). The tests check this with random
gauge transformations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iclcore.linalg import stable_rank, top_energy
from iclcore.lsq.dynamics import modal_entropy, psd_spectrum
from iclcore.richardson.subspace import sin_theta
from iclcore.spectra.mp import mp_cdf, mp_edges

__all__ = [
    "spectral_radius",
    "iteration_spectral_radius",
    "latent_population_system",
    "latent_population_contraction",
    "overlap_weights",
    "overlap_entropy",
    "subspace_error",
    "condition_number",
    "preconditioned_spectrum",
    "whitened_spectrum",
    "mp_condition_number",
    "mp_optimal_contraction",
    "mp_window",
    "ks_distance_mp",
    "DecoderOrderParameters",
    "decoder_order_parameters",
    "LatentOrderParameters",
    "latent_order_parameters",
]


def _stack(A: np.ndarray, name: str, square: bool = True) -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim < 2 or (square and A.shape[-1] != A.shape[-2]):
        raise ValueError(f"{name}: expected shape (..., n, n), got {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name}: contains non-finite entries")
    return A


def spectral_radius(A: np.ndarray) -> np.ndarray | float:
    """``ρ(A) = max_i |λ_i(A)|`` of a square matrix or a stack.

    Parameters
    ----------
    A : ndarray (..., n, n)

    Returns
    -------
    float or ndarray (...)
    """
    A = _stack(A, "A")
    rho = np.abs(np.linalg.eigvals(A)).max(axis=-1)
    return float(rho) if rho.ndim == 0 else rho


def iteration_spectral_radius(P: np.ndarray, H: np.ndarray) -> np.ndarray | float:
    """``ρ(I − P H)`` (main paper §9: ``ρ_s^pop`` with ``H = H_∞``), broadcast over leading axes.

    Parameters
    ----------
    P : ndarray (..., K, K)
    H : ndarray (..., K, K)

    Returns
    -------
    float or ndarray (broadcast leading shape)
    """
    P = _stack(P, "P")
    H = _stack(H, "H")
    if P.shape[-1] != H.shape[-1]:
        raise ValueError(f"H: dimension {H.shape[-1]} differs from P's {P.shape[-1]}")
    return spectral_radius(np.eye(P.shape[-1]) - P @ H)


def latent_population_system(U: np.ndarray, H_inf: np.ndarray) -> np.ndarray:
    """``A_{∞,s} = U_sᵀ H_∞ U_s`` (main paper §9), shape (..., r, r), exactly symmetrised.

    Parameters
    ----------
    U : ndarray (..., K, r), orthonormal columns
    H_inf : ndarray (K, K), symmetric
    """
    U = _stack(U, "U", square=False)
    H = _stack(H_inf, "H_inf")
    if U.shape[-2] != H.shape[-1]:
        raise ValueError(f"U: expected {H.shape[-1]} rows, got shape {U.shape}")
    A = np.swapaxes(U, -1, -2) @ H @ U
    return 0.5 * (A + np.swapaxes(A, -1, -2))


def latent_population_contraction(P_z: np.ndarray, U: np.ndarray, H_inf: np.ndarray) -> np.ndarray | float:
    """``ρ_{z,s}^pop = ρ(I − P_{z,s} A_{∞,s})``, ``A_{∞,s} = U_sᵀ H_∞ U_s`` (main paper §9).

    Parameters
    ----------
    P_z : ndarray (..., r, r)
    U : ndarray (..., K, r)
    H_inf : ndarray (K, K)
    """
    return iteration_spectral_radius(P_z, latent_population_system(U, H_inf))


def overlap_weights(P: np.ndarray, P_star: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Spectral-overlap weights ``Ω_{s,i}`` of an arbitrary ``P_s`` (main paper §9).

    ``Ω_{s,i} = λ_i ‖(P_s − P⋆) q_i‖² / Σ_j λ_j ‖(P_s − P⋆) q_j‖²`` with ``C = Q diag(λ) Qᵀ``
    (eigenvalues ascending). For a gradient-descent trajectory this equals
    :func:`iclcore.lsq.dynamics.modal_weights`; here ``P_s`` may be any checkpoint
    (for example an online SGD iterate).

    Parameters
    ----------
    P : ndarray (..., K, K)
    P_star : ndarray (K, K)
    C : ndarray (K, K), symmetric PSD

    Returns
    -------
    ndarray (..., K), rows summing to 1

    Raises
    ------
    ValueError
        ``P``: when ``P_s = P⋆`` on range(C) (no excess, the weights are undefined).
    """
    P = _stack(P, "P")
    P_star = _stack(P_star, "P_star")
    spec = psd_spectrum(C, "C")
    E = (P - P_star) @ spec.Q  # columns (P − P⋆) q_i
    mass = spec.lam * np.sum(E**2, axis=-2)
    tot = mass.sum(axis=-1, keepdims=True)
    if np.any(tot <= 0):
        raise ValueError("P: equals P_star on range(C); the overlap weights are undefined")
    return mass / tot


def overlap_entropy(P: np.ndarray, P_star: np.ndarray, C: np.ndarray) -> np.ndarray | float:
    """``H(Ω_s) = −(1/log K) Σ_i Ω_{s,i} log Ω_{s,i}`` in [0, 1] (main paper §9)."""
    h = modal_entropy(overlap_weights(P, P_star, C))
    return float(h) if np.ndim(h) == 0 else h


def subspace_error(U: np.ndarray, U_star: np.ndarray) -> np.ndarray | float:
    """``sin²(U_s, U⋆) = ‖sin Θ(U_s, U⋆)‖_2²`` (main paper §5.2, §12.11), stack-aware.

    Parameters
    ----------
    U : ndarray (K, r) or (S, K, r)
    U_star : ndarray (K, r)
    """
    U = _stack(U, "U", square=False)
    if U.ndim == 2:
        return sin_theta(U, U_star, "2", squared=True)
    return np.array([sin_theta(u, U_star, "2", squared=True) for u in U.reshape(-1, *U.shape[-2:])]).reshape(
        U.shape[:-2]
    )


def condition_number(H: np.ndarray) -> np.ndarray | float:
    """``κ(H) = λ_max(H)/λ_min(H)`` of symmetric positive definite matrices (main paper §9).

    Parameters
    ----------
    H : ndarray (..., K, K), symmetric

    Raises
    ------
    ValueError
        ``H``: when some ``λ_min(H) ≤ 0`` (κ is infinite).
    """
    H = _stack(H, "H")
    ev = np.linalg.eigvalsh(0.5 * (H + np.swapaxes(H, -1, -2)))
    if np.any(ev[..., 0] <= 0):
        raise ValueError("H: not positive definite, the condition number is infinite")
    out = ev[..., -1] / ev[..., 0]
    return float(out) if out.ndim == 0 else out


def preconditioned_spectrum(P: np.ndarray, H: np.ndarray, imag_rtol: float = 1e-6) -> np.ndarray:
    """Eigenvalues of ``P H`` (real parts, ascending), broadcast over leading axes.

    For symmetric positive semi-definite ``P`` and ``H`` the spectrum is real (``PH`` is similar
    to ``H^{1/2} P H^{1/2}``); an online ``P_s`` is symmetric only up to SGD noise, so the
    imaginary parts are dropped after a check that they are below ``imag_rtol · ρ(PH)``.

    Parameters
    ----------
    P : ndarray (..., K, K)
    H : ndarray (..., K, K)
    imag_rtol : float
        Largest imaginary part accepted, relative to the spectral radius of ``PH``.

    Returns
    -------
    ndarray (..., K)
    """
    P = _stack(P, "P")
    H = _stack(H, "H")
    ev = np.linalg.eigvals(P @ H)
    scale = np.abs(ev).max(axis=-1, keepdims=True)
    if np.any(np.abs(ev.imag) > imag_rtol * np.maximum(scale, np.finfo(float).tiny)):
        raise ValueError(
            f"P: P H has eigenvalues with imaginary parts above imag_rtol={imag_rtol:g} (P far from symmetric)"
        )
    return np.sort(ev.real, axis=-1)


def whitened_spectrum(A: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Eigenvalues of ``S^{-1/2} A S^{-1/2}`` (generalised problem ``A v = μ S v``), ascending.

    With ``A = U_sᵀ Σ̂ U_s`` and ``S = U_sᵀ Σ_x U_s`` these are the eigenvalues of a
    ``Wishart_r(M, I)/M`` matrix whenever ``U_s`` is independent of the prompt, hence
    asymptotically Marchenko–Pastur with ratio ``r/M`` (main paper §9, §12.11 latent window).

    Parameters
    ----------
    A : ndarray (..., r, r), symmetric
    S : ndarray (r, r) or (..., r, r), symmetric positive definite
    """
    A = _stack(A, "A")
    S = _stack(S, "S")
    lam, Q = np.linalg.eigh(0.5 * (S + np.swapaxes(S, -1, -2)))
    if np.any(lam <= 0):
        raise ValueError("S: must be positive definite")
    W = Q / np.sqrt(lam)[..., None, :]  # S^{-1/2} = W Wᵀ up to rotation
    B = np.swapaxes(W, -1, -2) @ A @ W
    return np.linalg.eigvalsh(0.5 * (B + np.swapaxes(B, -1, -2)))


def _gamma_below_one(gamma: float) -> float:
    g = float(gamma)
    if not math.isfinite(g) or not 0 < g < 1:
        raise ValueError(f"gamma: the prompt aspect K/M must lie in (0, 1), got {gamma!r}")
    return g


def mp_condition_number(kappa_sigma: float, gamma: float) -> float:
    """Marchenko–Pastur prediction ``κ(Σ) ((1 + √γ)/(1 − √γ))²`` for ``κ(Σ̂_M)`` (main paper §9).

    Exact limit for ``Σ ∝ I`` (``K, M → ∞``, ``K/M → γ``); for general ``Σ`` an asymptotic upper
    bound, since ``κ(Σ̂) ≤ κ(Σ) κ(Σ^{-1/2} Σ̂ Σ^{-1/2})``. Uses :func:`iclcore.spectra.mp.mp_edges`.
    """
    if not math.isfinite(kappa_sigma) or kappa_sigma < 1:
        raise ValueError(f"kappa_sigma: a condition number must be >= 1, got {kappa_sigma!r}")
    lo, hi = mp_edges(_gamma_below_one(gamma))
    return float(kappa_sigma * hi / lo)


def mp_optimal_contraction(gamma: float) -> float:
    """``min_α ρ(I − α Σ^{-1} Σ̂_M) → (b − a)/(b + a) = 2√γ/(1 + γ)`` with ``a, b`` the MP edges.

    The best scalar multiple of the population inverse contracts at this rate in the
    proportional limit (the optimum ``α = 2/(a + b) = 1/(1 + γ)``).
    """
    a, b = mp_edges(_gamma_below_one(gamma))
    return float((b - a) / (b + a))


def mp_window(S: np.ndarray, gamma: float, shift: float = 0.0) -> tuple[float, float]:
    """Scaled MP window ``[λ_min(S)(1 − √γ)² + shift, λ_max(S)(1 + √γ)² + shift]``.

    The asymptotic support of ``spec(S^{1/2} W S^{1/2}) + shift`` for ``W`` a whitened sample
    covariance with aspect ``γ`` (main paper §9, §12.11). For the latent window take
    ``S = U_sᵀ Σ_x U_s``, ``γ = r/M``, ``shift = λ``; for the preconditioned prompt system take
    ``S = Σ^{1/2} P Σ^{1/2}`` (``P`` symmetric), ``γ = K/M``.

    Parameters
    ----------
    S : ndarray (n, n), symmetric positive semi-definite
    gamma : float > 0 (for ``γ ≥ 1`` the lower edge is taken as ``shift``: zero eigenvalues appear)
    shift : float
    """
    spec = psd_spectrum(S, "S")
    lo, hi = mp_edges(gamma)
    if gamma >= 1:
        lo = 0.0
    return float(spec.lam[0] * lo + shift), float(spec.lam[-1] * hi + shift)


def ks_distance_mp(eigenvalues: np.ndarray, gamma: float) -> float:
    """Kolmogorov–Smirnov distance ``sup_x |F_n(x) − F_MP,γ(x)|`` of pooled eigenvalues.

    ``F_MP,γ`` is :func:`iclcore.spectra.mp.mp_cdf` (atom included); the supremum is taken over
    the jump points of the empirical CDF (both one-sided limits).
    """
    x = np.sort(np.asarray(eigenvalues, float).ravel())
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("eigenvalues: need a non-empty finite sample")
    F = np.asarray(mp_cdf(x, gamma))
    n = x.size
    upper = np.arange(1, n + 1) / n - F
    lower = F - np.arange(n) / n
    return float(max(upper.max(), lower.max()))


def _stable_rank_and_top_energy(P: np.ndarray, k: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`iclcore.linalg.stable_rank` and :func:`iclcore.linalg.top_energy` of each matrix of a
    stack (T, m, n), both set to 0 for a zero matrix (the ``P_0 = 0`` start of a trajectory)."""
    nz = np.linalg.norm(P, axis=(-2, -1)) > 0
    sr = np.zeros(P.shape[0])
    te = np.zeros(P.shape[0])
    if nz.any():
        sr[nz] = stable_rank(P[nz], name)
        te[nz] = top_energy(P[nz], k)
    return sr, te


@dataclass(frozen=True)
class DecoderOrderParameters:
    """Order parameters along decoder-only checkpoints (leading axis = checkpoint).

    Attributes
    ----------
    rho_pop : ndarray (T,)
        ``ρ(I − P_s H_∞)``.
    srank : ndarray (T,)
    top_energy : ndarray (T,)
        ``E_top,k(P_s)``.
    entropy : ndarray (T,)
        ``H(Ω_s)`` (NaN-free: a checkpoint equal to ``P⋆`` raises).
    rho_star, srank_star, top_energy_star : float
        The same quantities at the oracle ``P⋆``.
    """

    rho_pop: np.ndarray
    srank: np.ndarray
    top_energy: np.ndarray
    entropy: np.ndarray
    rho_star: float
    srank_star: float
    top_energy_star: float


def decoder_order_parameters(
    P: np.ndarray,
    P_star: np.ndarray,
    C: np.ndarray,
    H_inf: np.ndarray,
    k: int = 1,
    weights: np.ndarray | None = None,
) -> DecoderOrderParameters:
    """§9 order parameters of decoder checkpoints ``P_s`` (e.g. ``OnlineRun.P``).

    Parameters
    ----------
    P : ndarray (T, K, K)
        Checkpoints. ``P_0 = 0`` is allowed: srank and ``E_top`` of the zero matrix are undefined,
        and such checkpoints get the value 0 (a flag, never a NaN).
    P_star : ndarray (K, K)
    C : ndarray (K, K)
    H_inf : ndarray (K, K)
    k : int
    weights : ndarray (T, K), optional
        The overlap weights ``Ω_{s,i}`` of the checkpoints when known in closed form, e.g. for the exact
        gradient-descent trajectory :func:`iclcore.lsq.dynamics.modal_weights` (computed in log space).
        Without them they come from ``P`` (:func:`overlap_weights`), which is undefined once ``P_s``
        equals ``P⋆`` to rounding (a well-conditioned ``C`` reaches that within a few hundred GD steps).
    """
    P = _stack(P, "P")
    if P.ndim != 3:
        raise ValueError(f"P: expected a stack (T, K, K), got {P.shape}")
    if weights is None:
        entropy = np.atleast_1d(overlap_entropy(P, P_star, C))
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != P.shape[:2]:
            raise ValueError(f"weights: expected shape {P.shape[:2]} (checkpoints, K), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.allclose(w.sum(axis=-1), 1.0):
            raise ValueError("weights: each row must be finite, non-negative and sum to 1")
        entropy = np.atleast_1d(modal_entropy(w))
    sr, te = _stable_rank_and_top_energy(P, k, "P")
    return DecoderOrderParameters(
        rho_pop=np.atleast_1d(iteration_spectral_radius(P, H_inf)),
        srank=sr,
        top_energy=te,
        entropy=entropy,
        rho_star=float(iteration_spectral_radius(P_star, H_inf)),
        srank_star=float(stable_rank(P_star, "P_star")),
        top_energy_star=float(top_energy(P_star, k)),
    )


@dataclass(frozen=True)
class LatentOrderParameters:
    """Order parameters along encoder+decoder checkpoints (leading axis = step).

    Attributes
    ----------
    sin2 : ndarray (S,)
        ``sin²(U_s, U⋆)``.
    rho_pop : ndarray (S,)
        ``ρ(I − P_{z,s} A_{∞,s})``.
    rho_oracle : ndarray (S,)
        ``ρ(I − P_z⋆(U_s) A_{∞,s})`` of the moving oracle.
    srank, top_energy : ndarray (S,)
        Of ``P_{z,s}`` (0 where ``P_{z,s} = 0``).
    srank_oracle, top_energy_oracle : ndarray (S,)
        Of the moving oracle ``P_z⋆(U_s)``.
    """

    sin2: np.ndarray
    rho_pop: np.ndarray
    rho_oracle: np.ndarray
    srank: np.ndarray
    top_energy: np.ndarray
    srank_oracle: np.ndarray
    top_energy_oracle: np.ndarray


def latent_order_parameters(
    U: np.ndarray, P_z: np.ndarray, P_z_star: np.ndarray, U_star: np.ndarray, H_inf: np.ndarray, k: int = 1
) -> LatentOrderParameters:
    """§9 order parameters of an encoder+decoder run (``EncDecDynamics.U``, ``.P``, ``.P_star``).

    Parameters
    ----------
    U : ndarray (S, K, r)
    P_z, P_z_star : ndarray (S, r, r)
    U_star : ndarray (K, r)
    H_inf : ndarray (K, K)
    """
    U = _stack(U, "U", square=False)
    P_z = _stack(P_z, "P_z")
    P_z_star = _stack(P_z_star, "P_z_star")
    if U.ndim != 3 or P_z.shape != P_z_star.shape or P_z.shape[:1] != U.shape[:1]:
        raise ValueError(
            f"U, P_z, P_z_star: expected (S, K, r), (S, r, r), (S, r, r); got {U.shape}, {P_z.shape}, {P_z_star.shape}"
        )
    A_inf = latent_population_system(U, H_inf)
    sr, te = _stable_rank_and_top_energy(P_z, k, "P_z")
    return LatentOrderParameters(
        sin2=np.atleast_1d(subspace_error(U, U_star)),
        rho_pop=np.atleast_1d(iteration_spectral_radius(P_z, A_inf)),
        rho_oracle=np.atleast_1d(iteration_spectral_radius(P_z_star, A_inf)),
        srank=sr,
        top_energy=te,
        srank_oracle=np.atleast_1d(stable_rank(P_z_star, "P_z_star")),
        top_energy_oracle=np.atleast_1d(top_energy(P_z_star, k)),
    )
