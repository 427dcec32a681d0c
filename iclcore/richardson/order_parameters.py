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

The analyses of Figure 11 build on these: :func:`seed_statistics` (means and standard errors over
independent online runs against exact gradient descent, :func:`gd_order_parameters`), the gauge checks
(:func:`decoder_gauge_change`, :func:`latent_gauge_change`), :func:`top_spectra_grid`,
:func:`prompt_aspect_sweep` and :func:`latent_window`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.linalg import stable_rank, top_energy
from iclcore.lsq.dynamics import gd_trajectory, modal_entropy, modal_weights, psd_spectrum
from iclcore.lsq.lowrank import LatentPrompts, latent_systems
from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.richardson.subspace import sin_theta
from iclcore.spectra.mp import mp_cdf, mp_edges, mp_sample_eigenvalues
from iclcore.stats import ks_critical_value, ks_two_sample, standard_error
from iclcore.validation import as_generator, positive_int

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
    "gd_order_parameters",
    "SeedStatistics",
    "seed_statistics",
    "max_relative_change",
    "decoder_gauge_change",
    "latent_gauge_change",
    "conjugation_change",
    "imaginary_part_ratio",
    "window_fraction",
    "oracle_mp_window",
    "latent_gram_spectrum",
    "SpectraGrid",
    "top_spectra_grid",
    "AspectSweep",
    "PromptAspect",
    "prompt_aspect_sweep",
    "LatentWindow",
    "latent_window",
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
    *,
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

    def final_metrics(self) -> dict[str, float]:
        """The order parameters at the last step, by metric name, with the relative stable-rank gap
        ``|srank(P_{z,S}) − srank(P_z⋆(U_S))| / srank(P_z⋆(U_S))``."""
        return {
            "sin2_final": float(self.sin2[-1]),
            "rho_z_final": float(self.rho_pop[-1]),
            "rho_z_oracle_final": float(self.rho_oracle[-1]),
            "srank_z_final": float(self.srank[-1]),
            "srank_z_oracle_final": float(self.srank_oracle[-1]),
            "srank_z_rel_gap": float(abs(self.srank[-1] - self.srank_oracle[-1]) / self.srank_oracle[-1]),
        }


def latent_order_parameters(
    U: np.ndarray, P_z: np.ndarray, P_z_star: np.ndarray, *, U_star: np.ndarray, H_inf: np.ndarray, k: int = 1
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


# ----------------------------------------------------------------------------- analyses of Figure 11


def gd_order_parameters(
    P_star: np.ndarray, C: np.ndarray, H_inf: np.ndarray, *, eta: float, steps: np.ndarray
) -> DecoderOrderParameters:
    """Order parameters of exact population gradient descent ``P_s = P⋆ + (0 − P⋆)(I − ηC)^s`` from ``P_0 = 0``.

    The noise-free reference of §9: the trajectory is :func:`iclcore.lsq.dynamics.gd_trajectory` and its
    overlap weights come in closed form (:func:`iclcore.lsq.dynamics.modal_weights`, log space), so they stay
    defined after ``P_s`` reaches ``P⋆`` to rounding.

    Parameters
    ----------
    P_star, C, H_inf : ndarray (K, K)
    eta : float, in ``(0, 2/λ_max(C))``
    steps : ndarray (T,) of int
        The checkpoints ``s``.
    """
    P0 = np.zeros_like(np.asarray(P_star, dtype=float))
    return decoder_order_parameters(
        gd_trajectory(P0, P_star, C, eta=eta, steps=steps),
        P_star,
        C,
        H_inf=H_inf,
        weights=modal_weights(P0, P_star, C, eta=eta, steps=steps),
    )


@dataclass(frozen=True)
class SeedStatistics:
    """Decoder-only order parameters over independent online runs (seeds) against exact GD (§9, §12.11).

    Attributes
    ----------
    rho, srank, top_energy, entropy : ndarray (n_seeds, T)
        Per seed and checkpoint.
    rho_se : ndarray (T,)
        Standard error of ``rho`` across seeds.
    rho_increment_z : ndarray (T',)
        Mean increment of ``rho`` between consecutive post-transient checkpoints over its standard error
        (``T'`` increments ending after the transient).
    rho_increment_se_max : float
        Largest standard error of those increments.
    rho_gd_max_increment_after_transient : float
        Largest increment of exact GD's ``rho`` between post-transient checkpoints.
    rho_final_mean, rho_final_se, srank_final_mean, srank_final_se : float
        Mean and standard error over seeds at the last checkpoint.
    srank_rel_gap : float
        ``|srank_final_mean − srank(P⋆)| / srank(P⋆)``.
    top_energy_final_mean, entropy_final_mean, entropy_final_se : float
    entropy_min_mean : float
        The smallest seed-mean entropy over checkpoints.
    gd : DecoderOrderParameters
        The exact gradient-descent reference.
    """

    rho: np.ndarray
    srank: np.ndarray
    top_energy: np.ndarray
    entropy: np.ndarray
    rho_se: np.ndarray
    rho_increment_z: np.ndarray
    rho_increment_se_max: float
    rho_gd_max_increment_after_transient: float
    rho_final_mean: float
    rho_final_se: float
    srank_final_mean: float
    srank_final_se: float
    srank_rel_gap: float
    top_energy_final_mean: float
    entropy_final_mean: float
    entropy_final_se: float
    entropy_min_mean: float
    gd: DecoderOrderParameters

    def metrics(self) -> dict[str, float]:
        """The final-checkpoint statistics and their exact-GD and oracle references, by metric name."""
        gd = self.gd
        return {
            "rho_pop_final_mean": self.rho_final_mean,
            "rho_pop_final_se": self.rho_final_se,
            "rho_pop_gd_final": float(gd.rho_pop[-1]),
            "rho_pop_star": gd.rho_star,
            "rho_max_increase_z": float(self.rho_increment_z.max()),
            "rho_increment_se_max": self.rho_increment_se_max,
            "rho_gd_max_increment_after_transient": self.rho_gd_max_increment_after_transient,
            "srank_final_mean": self.srank_final_mean,
            "srank_final_se": self.srank_final_se,
            "srank_gd_final": float(gd.srank[-1]),
            "srank_star": gd.srank_star,
            "srank_rel_gap": self.srank_rel_gap,
            "top_energy_final_mean": self.top_energy_final_mean,
            "top_energy_star": gd.top_energy_star,
            "entropy_gd_final": float(gd.entropy[-1]),
            "entropy_final_mean": self.entropy_final_mean,
            "entropy_final_se": self.entropy_final_se,
            "entropy_min_mean": self.entropy_min_mean,
        }


def seed_statistics(
    runs: Sequence[DecoderOrderParameters], gd: DecoderOrderParameters, after: np.ndarray
) -> SeedStatistics:
    """Aggregate the order parameters of ``n_seeds >= 2`` independent runs at common checkpoints.

    Standard errors are :func:`iclcore.stats.standard_error` across seeds (axis 0). The monotonicity
    statistic is ``z_t = mean_j Δρ_{j,t} / SE_j(Δρ_{j,t})`` for the increments ``Δρ_{j,t} = ρ_{j,t} − ρ_{j,t−1}``
    whose end checkpoint ``t`` is after the transient (the SE floored at ``1e-300``).

    Parameters
    ----------
    runs : sequence of DecoderOrderParameters, each with T checkpoints
    gd : DecoderOrderParameters
        The exact gradient-descent reference at the same checkpoints (:func:`gd_order_parameters`).
    after : ndarray (T,) of bool
        Checkpoints after the transient.
    """
    if len(runs) < 2:
        raise ValueError(f"runs: need at least 2 independent runs for a standard error, got {len(runs)}")
    after = np.asarray(after, dtype=bool)
    if after.shape != np.shape(runs[0].rho_pop):
        raise ValueError(
            f"after: expected shape {np.shape(runs[0].rho_pop)} (one flag per checkpoint), got {after.shape}"
        )

    def stack(field: str) -> np.ndarray:
        return np.array([getattr(o, field) for o in runs])

    rho, srank, etop, ent = stack("rho_pop"), stack("srank"), stack("top_energy"), stack("entropy")
    drho = np.diff(rho, axis=1)[:, after[1:]]
    z_inc = drho.mean(axis=0) / np.maximum(standard_error(drho), 1e-300)
    return SeedStatistics(
        rho=rho,
        srank=srank,
        top_energy=etop,
        entropy=ent,
        rho_se=standard_error(rho),
        rho_increment_z=z_inc,
        rho_increment_se_max=float(standard_error(drho).max()),
        rho_gd_max_increment_after_transient=float(np.max(np.diff(gd.rho_pop[after]))),
        rho_final_mean=float(rho[:, -1].mean()),
        rho_final_se=float(standard_error(rho)[-1]),
        srank_final_mean=float(srank[:, -1].mean()),
        srank_final_se=float(standard_error(srank)[-1]),
        srank_rel_gap=float(abs(srank[:, -1].mean() - gd.srank_star) / gd.srank_star),
        top_energy_final_mean=float(etop[:, -1].mean()),
        entropy_final_mean=float(ent[:, -1].mean()),
        entropy_final_se=float(standard_error(ent)[-1]),
        entropy_min_mean=float(ent.mean(axis=0).min()),
        gd=gd,
    )


def max_relative_change(a: np.ndarray, b: np.ndarray) -> float:
    """``max_i |a_i − b_i| / max(|b_i|, 1e-12)`` of two arrays of the same shape (a relative change of ``b``).

    Examples
    --------
    >>> max_relative_change(np.array([1.0, 2.2]), np.array([1.0, 2.0]))  # doctest: +ELLIPSIS
    0.1000...
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"a: shape {a.shape} differs from b's {b.shape}")
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


_DECODER_FIELDS = ("rho_pop", "srank", "top_energy", "entropy")


def decoder_gauge_change(
    P: np.ndarray,
    P_star: np.ndarray,
    C: np.ndarray,
    *,
    H_inf: np.ndarray,
    Q: np.ndarray,
    reference: DecoderOrderParameters,
) -> float:
    """Largest relative change of the decoder order parameters under ``X ↦ Q X Qᵀ`` (§12.11 gauge invariance).

    Recomputes :func:`decoder_order_parameters` of ``(QPQᵀ, QP⋆Qᵀ, QCQᵀ, QH_∞Qᵀ)`` and compares ``ρ^pop``,
    srank, ``E_top`` and ``H(Ω)`` with ``reference`` (the same checkpoints unrotated) by
    :func:`max_relative_change`; an identity, so the result is rounding.

    Parameters
    ----------
    P : ndarray (T, K, K)
    P_star, C, H_inf : ndarray (K, K)
    Q : ndarray (K, K), orthogonal
    reference : DecoderOrderParameters
    """
    Q = _stack(Q, "Q")

    def rot(A: np.ndarray) -> np.ndarray:
        return Q @ A @ Q.T

    g = decoder_order_parameters(rot(P), rot(P_star), rot(C), H_inf=rot(H_inf))
    return max(max_relative_change(getattr(g, f), getattr(reference, f)) for f in _DECODER_FIELDS)


def latent_gauge_change(
    U: np.ndarray,
    P_z: np.ndarray,
    P_z_star: np.ndarray,
    *,
    U_star: np.ndarray,
    H_inf: np.ndarray,
    O: np.ndarray,
    reference: LatentOrderParameters,
) -> float:
    """Largest relative change of the latent order parameters under ``U ↦ UO``, ``P_z ↦ OᵀP_zO`` (§12.11).

    Parameters
    ----------
    U : ndarray (S, K, r)
    P_z, P_z_star : ndarray (S, r, r)
    U_star : ndarray (K, r)
    H_inf : ndarray (K, K)
    O : ndarray (r, r), orthogonal
    reference : LatentOrderParameters
        :func:`latent_order_parameters` of the unrotated objects.
    """
    O = _stack(O, "O")
    g = latent_order_parameters(U @ O, O.T @ P_z @ O, O.T @ P_z_star @ O, U_star=U_star, H_inf=H_inf)
    return max(max_relative_change(getattr(g, f), getattr(reference, f)) for f in reference.__dataclass_fields__)


def conjugation_change(P: np.ndarray, Q: np.ndarray) -> float:
    """``‖QPQᵀ − P‖_F / ‖P‖_F``: how much a gauge moves the raw matrix (zero only for a trivial gauge)."""
    P = _stack(P, "P")
    return float(np.linalg.norm(Q @ P @ Q.T - P) / np.linalg.norm(P))


def imaginary_part_ratio(P: np.ndarray, H: np.ndarray) -> float:
    """``max |Im λ(PH)| / max(max |λ(PH)|, 1e-300)`` over a stack of systems: how far ``PH`` is from a real
    spectrum (zero for symmetric ``P`` and symmetric positive definite ``H``).

    Parameters
    ----------
    P : ndarray (K, K) or (..., K, K)
    H : ndarray (..., K, K)
    """
    evs = np.linalg.eigvals(_stack(P, "P") @ _stack(H, "H"))
    return float(np.max(np.abs(evs.imag)) / max(np.max(np.abs(evs)), 1e-300))


def window_fraction(x: np.ndarray, window: tuple[float, float]) -> float:
    """Fraction of the entries of ``x`` inside the closed interval ``window = (lo, hi)``.

    Examples
    --------
    >>> window_fraction(np.array([0.5, 1.0, 2.0, 3.0]), (1.0, 2.0))
    0.5
    """
    x = np.asarray(x)
    return float(np.mean((x >= window[0]) & (x <= window[1])))


def oracle_mp_window(Sigma: np.ndarray, P_star: np.ndarray, gamma: float) -> tuple[float, float]:
    """MP window of the preconditioned prompt system ``P⋆ H_M`` (§12.11): :func:`mp_window` of
    ``S = Lᵀ sym(P⋆) L`` with ``Σ = LLᵀ`` (Cholesky; ``S`` has the spectrum of ``Σ^{1/2} P⋆ Σ^{1/2}``) at ``γ = K/M``.

    Parameters
    ----------
    Sigma, P_star : ndarray (K, K)
    gamma : float > 0
    """
    Sroot = np.linalg.cholesky(_stack(Sigma, "Sigma"))
    P_star = _stack(P_star, "P_star")
    return mp_window(Sroot.T @ (0.5 * (P_star + P_star.T)) @ Sroot, gamma)


def latent_gram_spectrum(U: np.ndarray, prompts: LatentPrompts, Sigma_x: np.ndarray, *, lam: float) -> np.ndarray:
    """Whitened latent Gram spectrum ``spec(S^{-1/2} Uᵀ Σ̂_M U S^{-1/2})``, ``S = UᵀΣ_xU``, ``Σ̂_M = H_M − λI``,
    pooled over prompts (§12.11 latent window; ``Wishart_r(M, I)/M`` when ``U`` is independent of the prompts).

    Parameters
    ----------
    U : ndarray (K, r)
    prompts : LatentPrompts with n prompts (``H`` of shape (n, K, K))
    Sigma_x : ndarray (K, K)
    lam : float
        The ridge ``λ`` inside ``H_M``.

    Returns
    -------
    ndarray (n r,)
    """
    U = _stack(U, "U", square=False)
    H_gram = prompts.H - lam * np.eye(prompts.H.shape[-1])
    return whitened_spectrum(U.T @ H_gram @ U, U.T @ Sigma_x @ U).ravel()


@dataclass(frozen=True)
class SpectraGrid:
    """Top spectra at a few checkpoints (§12.11, Figure 11 b).

    Attributes
    ----------
    decoder : list of ndarray (n K,)
        ``spec(P_s H_M)`` pooled over held-out prompts, one array per decoder checkpoint.
    decoder_window : tuple of float
        :func:`oracle_mp_window` at ``γ = K/M``.
    max_imag_rel : float
        The largest :func:`imaginary_part_ratio` over the decoder checkpoints (0 if all spectra are real).
    latent : list of ndarray (n r,)
        :func:`latent_gram_spectrum` at each encoder step.
    latent_ks : list of float
        :func:`ks_distance_mp` of each latent spectrum to ``F_MP,r/M``.
    """

    decoder: list[np.ndarray]
    decoder_window: tuple[float, float]
    max_imag_rel: float
    latent: list[np.ndarray]
    latent_ks: list[float]

    def metrics(self) -> dict[str, float]:
        """Fraction of the last decoder spectrum in its window, the imaginary-part ratio and the largest latent KS
        distance, by metric name."""
        return {
            "frac_PH_in_window_final": window_fraction(self.decoder[-1], self.decoder_window),
            "max_imag_rel_PH": self.max_imag_rel,
            "ks_latent_grid_max": max(self.latent_ks),
        }


def top_spectra_grid(
    P: Sequence[np.ndarray],
    H_M: np.ndarray,
    U: Sequence[np.ndarray],
    *,
    prompts: LatentPrompts,
    Sigma: np.ndarray,
    P_star: np.ndarray,
    gamma: float,
    Sigma_x: np.ndarray,
    lam: float,
    gamma_latent: float,
) -> SpectraGrid:
    """Spectra of decoder checkpoints ``P_s H_M`` and whitened latent Gram spectra at encoder steps (Figure 11 b).

    Parameters
    ----------
    P : sequence of ndarray (K, K)
        Decoder checkpoints (one online run).
    H_M : ndarray (n, K, K)
        Held-out prompt systems of the decoder task.
    U : sequence of ndarray (K_e, r)
        Encoder subspaces.
    prompts : LatentPrompts
        Held-out prompts of the encoder+decoder task.
    Sigma, P_star : ndarray (K, K)
        Design covariance and oracle of the decoder task (for the window).
    gamma : float
        ``K/M`` of the decoder task.
    Sigma_x : ndarray (K_e, K_e)
    lam : float
        Ridge ``λ`` of the encoder+decoder prompts.
    gamma_latent : float
        ``r/M`` of the encoder+decoder task.

    Notes
    -----
    The decoder spectra drop imaginary parts up to 5 % of the spectral radius
    (:func:`preconditioned_spectrum` with ``imag_rtol = 0.05``); the largest ratio is reported.
    """
    latent = [latent_gram_spectrum(u, prompts, Sigma_x, lam=lam) for u in U]
    return SpectraGrid(
        decoder=[preconditioned_spectrum(p, H_M, imag_rtol=0.05).ravel() for p in P],
        decoder_window=oracle_mp_window(Sigma, P_star, gamma),
        max_imag_rel=max([0.0] + [imaginary_part_ratio(p, H_M) for p in P]),
        latent=latent,
        latent_ks=[ks_distance_mp(w, gamma_latent) for w in latent],
    )


@dataclass(frozen=True)
class AspectSweep:
    """Held-out prompt statistics at each prompt aspect ``γ = K/M`` for one design (§9).

    Attributes
    ----------
    gamma : ndarray (n,)
        The realised aspect ``K/M`` with ``M = round(K/γ)``.
    kappa_mean, kappa_se : ndarray (n,)
        ``κ(H_M)`` over prompts: mean and standard error.
    rho_mean, rho_se : ndarray (n,)
        ``ρ(I − P⋆(M) H_M)`` of the oracle at that ``M`` over prompts.
    rho_population : ndarray (n,)
        ``ρ(I − P⋆(M) H_∞)``.
    """

    gamma: np.ndarray
    kappa_mean: np.ndarray
    kappa_se: np.ndarray
    rho_mean: np.ndarray
    rho_se: np.ndarray
    rho_population: np.ndarray


@dataclass(frozen=True)
class PromptAspect:
    """The prompt-aspect comparison of §9 (Figure 11 c): an isotropic design and one of condition ``cond``.

    Attributes
    ----------
    iso, conditioned : AspectSweep
    kappa_mp_iso, kappa_mp_cond : ndarray (n,)
        :func:`mp_condition_number` at the realised aspects, for ``κ(Σ) = 1`` and ``cond``.
    rho_mp : ndarray (n,)
        :func:`mp_optimal_contraction` ``2√γ/(1 + γ)``.
    kappa_iso_max_rel_dev : float
        ``max |κ_iso / κ_MP − 1|`` (the MP value is the isotropic limit).
    kappa_cond_below_mp_frac : float
        Fraction of aspects where the conditioned design's mean ``κ(H_M)`` is at most its MP bound.
    rho_iso_max_rel_dev : float
        ``max |ρ_iso / ρ_MP − 1|``.
    """

    iso: AspectSweep
    conditioned: AspectSweep
    kappa_mp_iso: np.ndarray
    kappa_mp_cond: np.ndarray
    rho_mp: np.ndarray
    kappa_iso_max_rel_dev: float
    kappa_cond_below_mp_frac: float
    rho_iso_max_rel_dev: float

    def metrics(self) -> dict[str, float]:
        """The deviations from the MP predictions and the isotropic values at the extreme aspects, by metric name."""
        iso = self.iso
        return {
            "kappa_iso_max_rel_dev": self.kappa_iso_max_rel_dev,
            "kappa_cond_below_mp_frac": self.kappa_cond_below_mp_frac,
            "rho_iso_max_rel_dev": self.rho_iso_max_rel_dev,
            "rho_iso_small_gamma": float(iso.rho_mean[0]),
            "rho_iso_small_gamma_se": float(iso.rho_se[0]),
            "rho_mp_small_gamma": float(self.rho_mp[0]),
            "rho_iso_large_gamma": float(iso.rho_mean[-1]),
            "rho_mp_large_gamma": float(self.rho_mp[-1]),
            "gamma_small": float(iso.gamma[0]),
            "gamma_large": float(iso.gamma[-1]),
        }


def _aspect_row(
    rng: np.random.Generator, *, K: int, gamma: float, cond: float, sigma: float, n_prompts: int
) -> tuple[float, ...]:
    M = int(round(K / gamma))
    c = TaskConfig(K=K, M=M, cond=cond, spectrum="identity" if cond == 1 else "geometric", sigma=sigma)
    Pm = oracle_preconditioner(closed_form_moments(c))
    pr = sample_prompt_statistics(c, n_prompts, rng)
    kap = condition_number(pr.H_M)
    rh = iteration_spectral_radius(Pm, pr.H_M)
    return (
        kap.mean(),
        standard_error(kap),
        rh.mean(),
        standard_error(rh),
        iteration_spectral_radius(Pm, c.H_infinity),
        K / M,
    )


def prompt_aspect_sweep(
    rng: np.random.Generator, *, K: int, gammas: np.ndarray, cond: float, sigma: float, n_prompts: int
) -> PromptAspect:
    """``κ(H_M)`` and the oracle's contraction against the prompt aspect ``γ = K/M`` (§9, Figure 11 c).

    For each design (isotropic ``Σ = I`` first, then geometric of condition ``cond``) and each ``γ`` in turn,
    ``M = round(K/γ)``; the oracle ``P⋆(M)`` comes from the closed-form moments and ``n_prompts`` held-out prompts
    are drawn from ``rng``. Compared with the MP predictions ``κ(Σ)((1 + √γ)/(1 − √γ))²`` (exact for
    ``Σ ∝ I`` in the limit, an upper bound otherwise) and ``2√γ/(1 + γ)``.

    Parameters
    ----------
    rng : numpy.random.Generator
    K : int
    gammas : ndarray (n,), in (0, 1)
    cond : float, >= 1
    sigma : float
        Label noise of the tasks.
    n_prompts : int, >= 2
    """
    rng = as_generator(rng)
    n_prompts = positive_int(n_prompts, "n_prompts", minimum=2)
    rows = {
        cnd: np.array(
            [_aspect_row(rng, K=K, gamma=g, cond=cnd, sigma=sigma, n_prompts=n_prompts) for g in np.asarray(gammas)]
        )
        for cnd in (1.0, cond)
    }
    sweeps = {
        cnd: AspectSweep(
            gamma=r_[:, 5],
            kappa_mean=r_[:, 0],
            kappa_se=r_[:, 1],
            rho_mean=r_[:, 2],
            rho_se=r_[:, 3],
            rho_population=r_[:, 4],
        )
        for cnd, r_ in rows.items()
    }
    iso, conditioned = sweeps[1.0], sweeps[cond]
    g_eff = iso.gamma
    kap_mp_iso = np.array([mp_condition_number(1.0, g) for g in g_eff])
    kap_mp_cond = np.array([mp_condition_number(cond, g) for g in g_eff])
    rho_mp = np.array([mp_optimal_contraction(g) for g in g_eff])
    return PromptAspect(
        iso=iso,
        conditioned=conditioned,
        kappa_mp_iso=kap_mp_iso,
        kappa_mp_cond=kap_mp_cond,
        rho_mp=rho_mp,
        kappa_iso_max_rel_dev=float(np.max(np.abs(iso.kappa_mean / kap_mp_iso - 1))),
        kappa_cond_below_mp_frac=float(np.mean(conditioned.kappa_mean <= kap_mp_cond)),
        rho_iso_max_rel_dev=float(np.max(np.abs(iso.rho_mean / rho_mp - 1))),
    )


@dataclass(frozen=True)
class LatentWindow:
    """The latent-window comparison of §12.11 (Figure 11 d) at one encoder subspace ``U``.

    Attributes
    ----------
    gamma : float
        ``r/M``.
    n_prompts : int
        Held-out prompts ``n``.
    spectrum_A : ndarray (n r,)
        ``spec(A) = spec(Uᵀ H_M U)`` pooled over prompts.
    window_A : tuple of float
        The scaled window ``[λ_min(S)(1 − √γ)² + λ, λ_max(S)(1 + √γ)² + λ]``, ``S = UᵀΣ_xU``.
    population_edges : tuple of float
        Extreme eigenvalues of ``A_∞ = Uᵀ H_∞ U``.
    whitened : ndarray (n r,)
        :func:`latent_gram_spectrum`.
    reference : ndarray (n r,)
        An independent sample of ``Wishart_r(M, I)/M`` eigenvalues (``n`` matrices).
    ks_latent_mp, ks_reference_mp, ks_latent_reference : float
        KS distances of the whitened and reference samples to ``F_MP,γ`` and to each other.
    ks_crit : float
        The two-sample DKW level at ``alpha`` with sizes ``n, n`` (conservative: eigenvalues of one matrix
        are not independent).
    frac_latent, frac_reference : float
        Fractions of the whitened and reference samples inside the MP window ``[(1 − √γ)², (1 + √γ)²]``.
    frac_se : float
        ``√2 · √(f(1 − f)/n)`` with ``f = frac_reference``: a per-prompt binomial SE of their difference.
    frac_A_in_window : float
        Fraction of ``spectrum_A`` inside ``window_A``.
    """

    gamma: float
    n_prompts: int
    spectrum_A: np.ndarray
    window_A: tuple[float, float]
    population_edges: tuple[float, float]
    whitened: np.ndarray
    reference: np.ndarray
    ks_latent_mp: float
    ks_reference_mp: float
    ks_latent_reference: float
    ks_crit: float
    frac_latent: float
    frac_reference: float
    frac_se: float
    frac_A_in_window: float

    def metrics(self) -> dict[str, float | int]:
        """The KS distances, window fractions and sizes, by metric name."""
        return {
            "ks_latent_mp": self.ks_latent_mp,
            "ks_reference_mp": self.ks_reference_mp,
            "ks_latent_reference": self.ks_latent_reference,
            "ks_crit": self.ks_crit,
            "frac_latent_in_window": self.frac_latent,
            "frac_reference_in_window": self.frac_reference,
            "frac_window_se": self.frac_se,
            "frac_A_in_scaled_window": self.frac_A_in_window,
            "gamma_latent": self.gamma,
            "n_latent_prompts": self.n_prompts,
        }


def latent_window(
    rng: np.random.Generator,
    U: np.ndarray,
    prompts: LatentPrompts,
    *,
    Sigma_x: np.ndarray,
    lam: float,
    H_inf: np.ndarray,
    M: int,
    alpha: float,
) -> LatentWindow:
    """Compare the latent spectra at ``U`` with the MP law of ratio ``r/M`` and with an exact reference sample.

    Draws ``n`` reference ``Wishart_r(M, I)/M`` matrices (:func:`iclcore.spectra.mp.mp_sample_eigenvalues`)
    from ``rng``; KS distances from :func:`ks_distance_mp` and :func:`iclcore.stats.ks_two_sample`, the level from
    :func:`iclcore.stats.ks_critical_value` (§12.11).

    Parameters
    ----------
    rng : numpy.random.Generator
    U : ndarray (K, r)
    prompts : LatentPrompts with n prompts
    Sigma_x, H_inf : ndarray (K, K)
    lam : float
        Ridge ``λ`` of ``H_M``.
    M : int
        Prompt size.
    alpha : float in (0, 1)
    """
    rng = as_generator(rng)
    U = _stack(U, "U", square=False)
    r = U.shape[1]
    gam = r / positive_int(M, "M")
    Sg = U.T @ Sigma_x @ U
    spec_A = np.linalg.eigvalsh(latent_systems(U, prompts)[0][0]).ravel()
    win_A = mp_window(Sg, gam, shift=lam)
    lo_inf, hi_inf = np.linalg.eigvalsh(latent_population_system(U, H_inf))[[0, -1]]
    w = latent_gram_spectrum(U, prompts, Sigma_x, lam=lam)
    n = prompts.n
    ref = mp_sample_eigenvalues(r, M, n, rng=rng).ravel()
    window = mp_window(np.eye(r), gam)
    frac_ref = window_fraction(ref, window)
    return LatentWindow(
        gamma=gam,
        n_prompts=n,
        spectrum_A=spec_A,
        window_A=win_A,
        population_edges=(float(lo_inf), float(hi_inf)),
        whitened=w,
        reference=ref,
        ks_latent_mp=ks_distance_mp(w, gam),
        ks_reference_mp=ks_distance_mp(ref, gam),
        ks_latent_reference=ks_two_sample(w, ref),
        ks_crit=ks_critical_value(n, n, alpha=alpha),
        frac_latent=window_fraction(w, window),
        frac_reference=frac_ref,
        frac_se=float(np.sqrt(frac_ref * (1 - frac_ref) / n) * np.sqrt(2)),
        frac_A_in_window=window_fraction(spec_A, win_A),
    )
