"""Isotropic-layer losses at finite context length by Monte Carlo over ``Σ̂`` (Bordelon et al. App. G.1.2
and G.2, Eqs. 119-124): untied layers with label noise, and trainable read-in/read-out scales.

With isotropic layers ``Γ^ℓ = γ^ℓ I`` every layer map is a polynomial in the context's empirical
covariance, so the loss of one context depends on the eigen-decomposition
``Σ̂ = Λ^{1/2} Zᵀ Z Λ^{1/2} / P = V diag(s) Vᵀ`` only (``Z`` of shape ``(P, D)`` standard Gaussian; for
RRS data the Haar rotation of the context cancels against the isotropic layers). A
:class:`ContextDraws` stores, for ``n`` independent draws, ``s`` and the weights

* ``w_ol = diag(Vᵀ Ω Λ V)``, ``w_l = diag(Vᵀ Λ V)``,
* ``W_lo = (VᵀΛV) ∘ (VᵀΩV)`` and ``W_ll = (VᵀΛV) ∘ (VᵀΛV)`` (elementwise products),

from which the quadratic forms below are evaluated for any layer scales without a loop over draws.
Conventions (normalised trace, ``b_* = β/√D``, ``P = αD``) as in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.validation import as_generator, positive_int, spectrum_pair

__all__ = ["ContextDraws", "context_draws", "tied_loss_moments", "tied_loss_from_moments"]


@dataclass(frozen=True)
class ContextDraws:
    """Eigen-data of ``n`` independent empirical covariances ``Σ̂`` (see the module docstring).

    Attributes
    ----------
    s : array ``(n, D)``, eigenvalues of each ``Σ̂``
    w_ol, w_l : arrays ``(n, D)``, ``diag(VᵀΩΛV)`` and ``diag(VᵀΛV)``
    W_lo, W_ll : arrays ``(n, D, D)``, ``(VᵀΛV) ∘ (VᵀΩV)`` and ``(VᵀΛV) ∘ (VᵀΛV)``
    base : float, ``tr ΩΛ`` (the loss at ``Γ = 0``)
    P : int or None, context length (None: ``Σ̂ = Λ``, a single exact draw)
    """

    s: np.ndarray
    w_ol: np.ndarray
    w_l: np.ndarray
    W_lo: np.ndarray
    W_ll: np.ndarray
    base: float
    P: int | None

    @property
    def D(self) -> int:
        return self.s.shape[1]

    @property
    def n(self) -> int:
        return self.s.shape[0]

    def split(self, parts: int) -> list[ContextDraws]:
        """The draws cut into ``parts`` independent, equal blocks (for the Monte Carlo error of a theory)."""
        parts = positive_int(parts, "parts", maximum=self.n)
        idx = np.array_split(np.arange(self.n), parts)
        return [
            ContextDraws(self.s[i], self.w_ol[i], self.w_l[i], self.W_lo[i], self.W_ll[i], self.base, self.P)
            for i in idx
        ]


def context_draws(
    lam: np.ndarray, omega: np.ndarray, P: int | None, *, rng: np.random.Generator, n_draws: int = 1000
) -> ContextDraws:
    """Draw ``n_draws`` empirical covariances ``Σ̂ = Λ^{1/2}ZᵀZΛ^{1/2}/P`` and store their eigen-data.

    Parameters
    ----------
    lam, omega : arrays ``(D,)``, data and task spectra
    P : int or None, context length; None gives ``Σ̂ = Λ`` exactly (one draw, ``rng`` unused)
    rng : numpy.random.Generator
    n_draws : int, number of independent contexts

    Returns
    -------
    ContextDraws
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    base = float(np.mean(omega * lam))
    if P is None:
        s = lam[None, :].copy()
        V = np.eye(D)[None]
    else:
        P = positive_int(P, "P")
        n_draws = positive_int(n_draws, "n_draws")
        rng = as_generator(rng)
        Z = rng.standard_normal((n_draws, P, D)) * np.sqrt(lam)
        s, V = np.linalg.eigh(np.swapaxes(Z, 1, 2) @ Z / P)
    Vt = np.swapaxes(V, 1, 2)
    Lp = (Vt * lam) @ V  # Vᵀ Λ V
    Op = (Vt * omega) @ V  # Vᵀ Ω V
    w_ol = np.sum(V * V * (omega * lam)[:, None], axis=1)  # diag(Vᵀ Ω Λ V)
    return ContextDraws(
        s=s, w_ol=w_ol, w_l=np.diagonal(Lp, axis1=1, axis2=2).copy(), W_lo=Lp * Op, W_ll=Lp * Lp, base=base, P=P
    )


def tied_loss_moments(draws: ContextDraws, L: int) -> np.ndarray:
    """Moment matrix of the tied (recurrent) noise-free loss at finite context length, shape ``(L + 1, L + 1)``.

    With ``p(s) = (1 - γ s / L)^L = Σ_j b_j(γ) s^j``, ``b_j = C(L, j) (-γ/L)^j``, the Monte Carlo loss
    ``⟨tr Λ p(Σ̂) Ω p(Σ̂)⟩`` (Bordelon et al. Eq. 4 with ``Γ = γ I``; the reduced landscape of Figure 6)
    is the quadratic form ``b(γ)ᵀ M b(γ)`` with ``M_{jj'} = ⟨(1/D) Σ_{ik} (W_lo)_{ik} s_i^j s_k^{j'}⟩``:
    exact in ``γ`` (no grid), and the draws enter once. Evaluate with :func:`tied_loss_from_moments`.
    """
    L = positive_int(L, "L", maximum=32)
    S = draws.s[..., None] ** np.arange(L + 1)  # (n, D, L+1)
    WS = draws.W_lo @ S
    return np.einsum("nia,nib->ab", S, WS) / (draws.D * draws.n)


def tied_loss_from_moments(gamma: np.ndarray | float, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Loss ``b(γ)ᵀ M b(γ)`` and its derivative in ``γ`` for the moment matrix of :func:`tied_loss_moments`.

    Returns
    -------
    loss, dloss : arrays with the shape of ``gamma``
    """
    from scipy.special import comb

    M = np.asarray(M, float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise ValueError("M: expected a square moment matrix of size L + 1 >= 2")
    L = M.shape[0] - 1
    g = np.asarray(gamma, float)
    j = np.arange(L + 1)
    c = comb(L, j) * (-1.0 / L) ** j
    b = c * g[..., None] ** j
    db = c * j * g[..., None] ** np.maximum(j - 1, 0)
    Mb = b @ M
    return np.sum(Mb * b, axis=-1), 2.0 * np.sum(Mb * db, axis=-1)
