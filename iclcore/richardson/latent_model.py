"""The latent encoder/decoder model of the proof ladder (main paper §6.1–§6.2; our concrete choice).

Used by the commuting scalar closure and the matrix dynamics of :mod:`iclcore.richardson.closure`.

The latent model (our concrete choice; the seed fixes only the structure)
-------------------------------------------------------------------------
Main paper §6.1 encodes a prompt with a subspace ``U_s`` and solves the latent
system ``A_s = U_s^T H U_s``, ``d_s = U_s^T c``.  We replace ``U_s`` by a square
encoder matrix ``G`` (``r × r``) trained as in §5.1, and take

* task ``z ~ (0, Σ_z)``, true parameter ``β = G_⋆ z``, prompt right-hand side
  ``c = H β + ξ`` with ``ξ ~ (0, τ² I)`` and ``H`` symmetric positive definite;
* encoder objective ``½ E||G z - b||²`` with ``b = G_⋆ z + noise``
  (so ``Σ_bz = G_⋆ Σ_z``);
* latent system induced by ``G``: ``A(G) = G^T H G``, ``d = G^T c``,
  ``z^†(G) = A(G)^{-1} d``;
* decoder moments (§6.2): ``C(G) = E[d d^T] = G^T Σ_c G`` with
  ``Σ_c = H G_⋆ Σ_z G_⋆^T H + τ² I``, ``B(G) = E[z^† d^T] = A(G)^{-1} C(G)``,
  hence the moving oracle ``P_z^⋆(G) = B C^{-1} = A(G)^{-1}`` and
  ``E[z^† z^{†T}] = A^{-1} C A^{-1}``.

The decoder risk at depth ``L`` is ``R_dec(s, L) = (1/r) E||z_{L,s} - z_s^†||²``
with ``z_{L,s} - z_s^† = -(I - P_s A_s)^L z_s^†`` (§6.1), i.e.
``(1/r) tr[(I - P_s A_s)^L E[z^† z^{†T}] (I - P_s A_s)^{L T}]``.

Commuting case.  If ``H = V diag(h) V^T``, ``Σ_z = V diag(σ) V^T``,
``G_⋆ = V diag(g_⋆) V^T`` and ``G_0 = V diag(g_0) V^T`` share one orthonormal
basis ``V``, then ``G_s = V diag(g(s)) V^T`` for all ``s`` and, with
``κ_i = h_i² g_{⋆i}² σ_i + τ²``,

``a_i = h_i g_i²``, ``c_i = κ_i g_i²``, ``b_i = κ_i / h_i``,
``w_i = E[(v_i^T z^†)²] / r = κ_i / (r h_i² g_i²)``,

so ``C``, ``A`` and ``w`` depend on ``G`` through ``g_i²`` and ``B`` is constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.lsq.dynamics import gd_trajectory, psd_spectrum
from iclcore.validation import finite_array, square_matrix

__all__ = ["LatentModel", "ModeCoefficients", "CommutingModel"]


def _solve_stack(A: np.ndarray, Bm: np.ndarray, name: str) -> np.ndarray:
    """``A^{-1} Bm`` for stacks, raising a named error for singular ``A``."""
    cond = np.linalg.cond(A)
    if np.any(~np.isfinite(cond)) or np.any(cond > 1e12):
        raise ValueError(f"{name}: the latent matrix A(G) = G^T H G is singular (G not invertible) along the path")
    return np.linalg.solve(A, Bm)


@dataclass(frozen=True)
class LatentModel:
    """Latent encoder/decoder system in full matrices (see the module docstring).

    Attributes
    ----------
    H : ndarray, shape (r, r)
        Symmetric positive definite operator of the prompt system.
    Gstar : ndarray, shape (r, r)
        Encoder target (``β = G_⋆ z``).
    Sigma_z : ndarray, shape (r, r)
        Task covariance, symmetric positive definite.
    noise_var : float
        Variance ``τ²`` of the noise on the prompt right-hand side ``c``.
    """

    H: np.ndarray
    Gstar: np.ndarray
    Sigma_z: np.ndarray
    noise_var: float

    def __post_init__(self) -> None:
        H = square_matrix(self.H, "H")
        r = H.shape[0]
        psd_spectrum(H, "H", definite=True)
        square_matrix(self.Gstar, "Gstar", r)
        square_matrix(self.Sigma_z, "Sigma_z", r)
        psd_spectrum(self.Sigma_z, "Sigma_z", definite=True)
        if not np.isfinite(self.noise_var) or self.noise_var < 0:
            raise ValueError(f"noise_var: must be a finite non-negative number, got {self.noise_var!r}")

    @property
    def r(self) -> int:
        """Latent dimension."""
        return int(np.shape(self.H)[0])

    @property
    def Sigma_bz(self) -> np.ndarray:
        """``Σ_bz = E[b z^T] = G_⋆ Σ_z`` (encoder right-hand side, §5.1)."""
        return np.asarray(self.Gstar) @ np.asarray(self.Sigma_z)

    @property
    def Sigma_c(self) -> np.ndarray:
        """``Σ_c = E[c c^T] = H G_⋆ Σ_z G_⋆^T H + τ² I``."""
        H, G = np.asarray(self.H), np.asarray(self.Gstar)
        S = H @ G @ np.asarray(self.Sigma_z) @ G.T @ H + self.noise_var * np.eye(self.r)
        return 0.5 * (S + S.T)

    def _stack(self, G: np.ndarray) -> tuple[np.ndarray, bool]:
        G = finite_array(G, "G")
        single = G.ndim == 2
        Gs = G[None] if single else G
        if Gs.ndim != 3 or Gs.shape[1:] != (self.r, self.r):
            raise ValueError(f"G: shape {G.shape} must be (r, r) or (n, r, r) with r = {self.r}")
        return Gs, single

    def A(self, G: np.ndarray) -> np.ndarray:
        """``A(G) = G^T H G``; shape (r, r) or (n, r, r) for a stack of ``G``."""
        Gs, single = self._stack(G)
        A = np.swapaxes(Gs, 1, 2) @ np.asarray(self.H) @ Gs
        A = 0.5 * (A + np.swapaxes(A, 1, 2))
        return A[0] if single else A

    def C(self, G: np.ndarray) -> np.ndarray:
        """``C(G) = E[d d^T] = G^T Σ_c G`` (§6.2)."""
        Gs, single = self._stack(G)
        C = np.swapaxes(Gs, 1, 2) @ self.Sigma_c @ Gs
        C = 0.5 * (C + np.swapaxes(C, 1, 2))
        return C[0] if single else C

    def B(self, G: np.ndarray) -> np.ndarray:
        """``B(G) = E[z^† d^T] = A(G)^{-1} C(G)`` (§6.2)."""
        Gs, single = self._stack(G)
        Bm = _solve_stack(self.A(Gs), self.C(Gs), "G")
        return Bm[0] if single else Bm

    def oracle(self, G: np.ndarray) -> np.ndarray:
        """Moving decoder oracle ``P_z^⋆(G) = B(G) C(G)^{-1} = A(G)^{-1}`` (§6.2)."""
        Gs, single = self._stack(G)
        eye = np.broadcast_to(np.eye(self.r), Gs.shape)
        P = _solve_stack(self.A(Gs), eye, "G")
        P = 0.5 * (P + np.swapaxes(P, 1, 2))
        return P[0] if single else P

    def zdag_cov(self, G: np.ndarray) -> np.ndarray:
        """``E[z^† z^{†T}] = A^{-1} C A^{-1}``."""
        Gs, single = self._stack(G)
        Ainv = self.oracle(Gs)
        S = Ainv @ self.C(Gs) @ Ainv
        S = 0.5 * (S + np.swapaxes(S, 1, 2))
        return S[0] if single else S


@dataclass(frozen=True)
class ModeCoefficients:
    """Mode-wise scalars of the commuting closure along the encoder trajectory.

    All arrays have shape ``(n_steps + 1, r)``; row ``s`` holds the values at outer time ``s``.

    Attributes
    ----------
    g : encoder eigenvalues ``g_i(s)``
    a : ``a_i(s)``, eigenvalues of ``A(G_s)``
    c : ``c_i(s)``, eigenvalues of ``C(G_s)``
    b : ``b_i(s)``, eigenvalues of ``B(G_s)``
    w : ``w_i(s) = E[(v_i^T z_s^†)²] / r``, the risk weights of §6.5
    """

    g: np.ndarray
    a: np.ndarray
    c: np.ndarray
    b: np.ndarray
    w: np.ndarray


@dataclass(frozen=True)
class CommutingModel:
    """A :class:`LatentModel` whose matrices are all diagonal in one orthonormal basis ``V``.

    Attributes
    ----------
    h, gstar, sigma : ndarray, shape (r,)
        Eigenvalues of ``H`` (> 0), ``G_⋆`` (≠ 0) and ``Σ_z`` (> 0) in the basis ``V``.
    noise_var : float
        ``τ² >= 0``.
    V : ndarray, shape (r, r)
        The fixed orthonormal basis (columns ``v_i``).
    """

    h: np.ndarray
    gstar: np.ndarray
    sigma: np.ndarray
    noise_var: float
    V: np.ndarray

    def __post_init__(self) -> None:
        h = finite_array(self.h, "h")
        r = h.size
        if h.ndim != 1 or r == 0 or np.any(h <= 0):
            raise ValueError("h: must be a non-empty 1-D array of positive numbers")
        gs = finite_array(self.gstar, "gstar")
        if gs.shape != (r,) or np.any(gs == 0):
            raise ValueError(f"gstar: must have shape ({r},) and non-zero entries")
        sg = finite_array(self.sigma, "sigma")
        if sg.shape != (r,) or np.any(sg <= 0):
            raise ValueError(f"sigma: must have shape ({r},) and positive entries")
        V = finite_array(self.V, "V")
        if V.shape != (r, r) or not np.allclose(V.T @ V, np.eye(r), atol=1e-10):
            raise ValueError(f"V: must be an orthogonal ({r}, {r}) matrix")
        if not np.isfinite(self.noise_var) or self.noise_var < 0:
            raise ValueError(f"noise_var: must be a finite non-negative number, got {self.noise_var!r}")

    @property
    def r(self) -> int:
        """Latent dimension."""
        return int(np.size(self.h))

    @property
    def kappa(self) -> np.ndarray:
        """``κ_i = h_i² g_{⋆i}² σ_i + τ²`` (eigenvalues of ``Σ_c``)."""
        h, gs, sg = (np.asarray(x, float) for x in (self.h, self.gstar, self.sigma))
        return h**2 * gs**2 * sg + self.noise_var

    def _mat(self, diag: np.ndarray) -> np.ndarray:
        V = np.asarray(self.V, float)
        M = (V * np.asarray(diag, float)[None, :]) @ V.T
        return 0.5 * (M + M.T)

    def latent_model(self) -> LatentModel:
        """The same system in full matrices, for the matrix iteration."""
        return LatentModel(
            H=self._mat(self.h), Gstar=self._mat(self.gstar), Sigma_z=self._mat(self.sigma), noise_var=self.noise_var
        )

    def matrix(self, diag: np.ndarray) -> np.ndarray:
        """``V diag(diag) V^T`` (e.g. the initial encoder ``G_0`` or decoder ``P_0``)."""
        d = finite_array(diag, "diag")
        if d.shape != (self.r,):
            raise ValueError(f"diag: must have shape ({self.r},), got {d.shape}")
        return self._mat(d)

    def encoder_modes(self, g0: np.ndarray, eta_e: float, n_steps: int) -> np.ndarray:
        """``g_i(s) = g_i^⋆ + (g_i(0) - g_i^⋆)(1 - η_e σ_i)^s`` for ``s = 0..n_steps`` (§6.5).

        Evaluated with :func:`iclcore.lsq.dynamics.gd_trajectory` on ``Σ_z = diag(σ)``.

        Returns
        -------
        ndarray, shape (n_steps + 1, r)
        """
        g0 = finite_array(g0, "g0")
        if g0.shape != (self.r,):
            raise ValueError(f"g0: must have shape ({self.r},), got {g0.shape}")
        sigma = np.asarray(self.sigma, float)
        steps = np.arange(int(n_steps) + 1)
        # each mode i is a 1x1 quadratic problem; batched as a row vector on diag(σ)
        return gd_trajectory(g0, np.asarray(self.gstar, float), np.diag(sigma), eta=eta_e, steps=steps)

    def coefficients(self, g: np.ndarray) -> ModeCoefficients:
        """Mode scalars ``a, c, b, w`` at encoder eigenvalues ``g`` (shape (n, r)).

        Raises
        ------
        ValueError
            Naming ``g`` if some ``g_i(s) = 0`` (then ``A(G_s)`` is singular).
        """
        g = finite_array(g, "g")
        if g.ndim != 2 or g.shape[1] != self.r:
            raise ValueError(f"g: must have shape (n, {self.r}), got {g.shape}")
        if np.any(g == 0):
            raise ValueError("g: an encoder eigenvalue is zero, A(G) = G^T H G is singular")
        h = np.asarray(self.h, float)[None, :]
        k = self.kappa[None, :]
        g2 = g**2
        a = h * g2
        c = k * g2
        b = np.broadcast_to(k / h, g.shape).copy()
        w = k / (self.r * h**2 * g2)
        return ModeCoefficients(g=g, a=a, c=c, b=b, w=w)
