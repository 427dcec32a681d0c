"""Coupled encoder/decoder dynamics: exact scalar closure and matrix dynamics.

Implements the top rungs of the proof ladder of seed 000:

* §6.4–§6.5: stop-gradient triangular dynamics and the *commuting scalar
  closure*.  When ``Σ_z``, ``C(G)``, ``B(G)``, ``A(G)`` are diagonal in one fixed
  basis, every mode obeys ``p_i(s+1) = (1 - η_d c_i(s)) p_i(s) + η_d b_i(s)``,
  solved by a product/sum formula, and the depth-``L`` decoder risk is
  ``R_dec(s, L) = Σ_i w_i(s) (1 - p_i(s) a_i(s))^{2L}``.
* §6.6: the *non-commuting* exact matrix dynamics
  ``E_{s+1} = E_s (I - ηC_s) + D_s`` and its ordered product/sum formula, with
  measurable evidence that no fixed-basis scalar closure tracks it.
* §7: the counterexample showing that the scalar risk is not a closed state is in
  :mod:`iclcore.richardson.counterexample`.

The latent model (our concrete choice; the seed fixes only the structure)
-------------------------------------------------------------------------
Seed 000 §6.1 encodes a prompt with a subspace ``U_s`` and solves the latent
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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.richardson.dynamics import check_step_size, gd_trajectory, psd_spectrum
from iclcore.validation import finite_array, nonnegative_int_steps

__all__ = [
    "LatentModel",
    "CommutingModel",
    "ModeCoefficients",
    "EncDecTrajectory",
    "mode_recursion",
    "mode_product_sum",
    "richardson_mode_risk",
    "richardson_matrix_risk",
    "encdec_iterate",
    "tracking_error_iterate",
    "tracking_error_product_sum",
    "commutator_defect",
    "pinched_coefficients",
    "fixed_basis_closure_risk",
    "closure_mismatch",
    "closure_log_ratio",
]


# ----------------------------------------------------------------------------- models


def _square(M: object, name: str, r: int | None = None) -> np.ndarray:
    a = finite_array(M, name)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name}: must be a square matrix, got shape {a.shape}")
    if r is not None and a.shape[0] != r:
        raise ValueError(f"{name}: shape {a.shape} does not match the latent dimension r = {r}")
    return a


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
        H = _square(self.H, "H")
        r = H.shape[0]
        if psd_spectrum(H, "H").lam[0] <= 0:
            raise ValueError("H: must be positive definite")
        _square(self.Gstar, "Gstar", r)
        _square(self.Sigma_z, "Sigma_z", r)
        if psd_spectrum(self.Sigma_z, "Sigma_z").lam[0] <= 0:
            raise ValueError("Sigma_z: must be positive definite")
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

        Evaluated with :func:`iclcore.richardson.dynamics.gd_trajectory` on ``Σ_z = diag(σ)``.

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
        return gd_trajectory(g0, np.asarray(self.gstar, float), np.diag(sigma), eta_e, steps)

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


# ----------------------------------------------------------------------------- scalar closure


def _check_modes(p0: np.ndarray, c: np.ndarray, b: np.ndarray, eta: float, name: str) -> tuple:
    c = finite_array(c, "c")
    b = finite_array(b, "b")
    p0 = finite_array(p0, "p0")
    if c.ndim != 2:
        raise ValueError(f"c: must have shape (n_steps, r), got {c.shape}")
    if b.shape != c.shape:
        raise ValueError(f"b: shape {b.shape} does not match c of shape {c.shape}")
    if p0.shape != (c.shape[1],):
        raise ValueError(f"p0: shape {p0.shape} must be ({c.shape[1]},)")
    if np.any(c < 0):
        raise ValueError("c: mode curvatures c_i(s) must be non-negative (C(G) is PSD)")
    cmax = float(c.max()) if c.size else 0.0
    try:
        e = float(eta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: step size must be a real scalar, got {eta!r}") from exc
    if not np.isfinite(e) or e <= 0 or e * cmax >= 2.0:
        bound = 2.0 / cmax if cmax > 0 else np.inf
        raise ValueError(f"{name}: step size {e!r} outside the stability window (0, 2/max_s c_i(s)) = (0, {bound:.6g})")
    return p0, c, b, e


def mode_recursion(p0: np.ndarray, c: np.ndarray, b: np.ndarray, eta: float) -> np.ndarray:
    """Mode-wise recursion ``p_i(s+1) = (1 - η c_i(s)) p_i(s) + η b_i(s)`` (seed 000 §6.5).

    Parameters
    ----------
    p0 : array_like, shape (r,)
    c, b : array_like, shape (n_steps, r)
        ``c_i(t)``, ``b_i(t)`` for ``t = 0..n_steps-1``.
    eta : float
        Decoder step ``η_d`` in ``(0, 2 / max c)``.

    Returns
    -------
    ndarray, shape (n_steps + 1, r)
    """
    p0, c, b, e = _check_modes(p0, c, b, eta, "eta")
    out = np.empty((c.shape[0] + 1, c.shape[1]))
    out[0] = p0
    for s in range(c.shape[0]):
        out[s + 1] = (1.0 - e * c[s]) * out[s] + e * b[s]
    return out


def mode_product_sum(p0: np.ndarray, c: np.ndarray, b: np.ndarray, eta: float) -> np.ndarray:
    """Closed form of the mode recursion (seed 000 §6.5), evaluated literally.

    ``p_i(s) = p_i(0) Π_{t<s} (1 - η c_i(t)) + Σ_{τ<s} η b_i(τ) Π_{t=τ+1}^{s-1} (1 - η c_i(t))``.

    The products are formed afresh for every ``s`` (suffix cumulative products),
    not by reusing ``p_i(s-1)``: the result is an independent evaluation of the
    formula, ``O(n_steps² r)`` work.

    Parameters
    ----------
    p0 : array_like, shape (r,)
    c, b : array_like, shape (n_steps, r)
    eta : float

    Returns
    -------
    ndarray, shape (n_steps + 1, r)
    """
    p0, c, b, e = _check_modes(p0, c, b, eta, "eta")
    S, r = c.shape
    m = 1.0 - e * c  # (S, r)
    out = np.empty((S + 1, r))
    out[0] = p0
    ones = np.ones((1, r))
    for s in range(1, S + 1):
        # phi[a] = Π_{t=a}^{s-1} m(t) for a = 0..s-1  (suffix products)
        phi = np.cumprod(m[s - 1 :: -1], axis=0)[::-1]
        tail = np.concatenate([phi[1:], ones], axis=0)  # Π_{t=τ+1}^{s-1}, τ = 0..s-1
        out[s] = p0 * phi[0] + np.sum(e * b[:s] * tail, axis=0)
    return out


def _same_shape(x: np.ndarray, name: str, ref: np.ndarray, ref_name: str) -> None:
    if x.shape != ref.shape:
        raise ValueError(f"{name}: shape {x.shape} does not match {ref_name} of shape {ref.shape}")


def _check_depth(L: object) -> int:
    """Validate a Richardson depth ``L >= 0`` and return it as ``int``."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 0:
        raise ValueError(f"L: must be a non-negative integer, got {L!r}")
    return int(L)


def richardson_mode_risk(p: np.ndarray, a: np.ndarray, w: np.ndarray, L: int) -> np.ndarray:
    """``R_dec(s, L) = Σ_i w_i(s) (1 - p_i(s) a_i(s))^{2L}`` (seed 000 §6.5).

    Parameters
    ----------
    p, a, w : array_like, shape (n, r)
    L : int, >= 0
        Richardson depth.

    Returns
    -------
    ndarray, shape (n,)
    """
    p, a, w = (finite_array(x, n) for x, n in ((p, "p"), (a, "a"), (w, "w")))
    _same_shape(a, "a", p, "p")
    _same_shape(w, "w", p, "p")
    L = _check_depth(L)
    return np.sum(w * (1.0 - p * a) ** (2 * L), axis=-1)


def richardson_matrix_risk(P: np.ndarray, A: np.ndarray, Szz: np.ndarray, L: int) -> np.ndarray:
    """Depth-``L`` Richardson risk ``(1/r) tr[M^L S M^{L T}]``, ``M = I - P A`` (seed 000 §6.1, §6.3).

    This is ``(1/r) E||z_L - z^†||²`` for ``z_L - z^† = -(I - PA)^L z^†`` and
    ``S = E[z^† z^{†T}]``, computed from the matrices.

    Parameters
    ----------
    P, A, Szz : array_like, shape (n, r, r)
    L : int, >= 0

    Returns
    -------
    ndarray, shape (n,)
    """
    P, A, Szz = (finite_array(x, n) for x, n in ((P, "P"), (A, "A"), (Szz, "Szz")))
    if P.ndim != 3 or P.shape[1] != P.shape[2]:
        raise ValueError(f"P: must have shape (n, r, r), got {P.shape}")
    _same_shape(A, "A", P, "P")
    _same_shape(Szz, "Szz", P, "P")
    L = _check_depth(L)
    r = P.shape[1]
    M = np.eye(r)[None] - P @ A
    ML = np.linalg.matrix_power(M, L)
    return np.einsum("nij,njk,nik->n", ML, Szz, ML) / r


# ----------------------------------------------------------------------------- matrix dynamics


@dataclass(frozen=True)
class EncDecTrajectory:
    """Full-matrix stop-gradient encoder/decoder trajectory (seed 000 §6.4, discrete time).

    All arrays have a leading axis of length ``n_steps + 1`` (outer time ``s``).

    Attributes
    ----------
    G : encoder iterates ``G_s``, shape (S+1, r, r)
    P : decoder iterates ``P_s``, shape (S+1, r, r)
    A, C, B : ``A(G_s)``, ``C(G_s)``, ``B(G_s)``, each (S+1, r, r)
    oracle : ``P_z^⋆(G_s)``, shape (S+1, r, r)
    Szz : ``E[z_s^† z_s^{†T}]``, shape (S+1, r, r)
    eta_e, eta_d : the step sizes used
    """

    G: np.ndarray
    P: np.ndarray
    A: np.ndarray
    C: np.ndarray
    B: np.ndarray
    oracle: np.ndarray
    Szz: np.ndarray
    eta_e: float
    eta_d: float

    @property
    def tracking_error(self) -> np.ndarray:
        """``E_s = P_s - P_z^⋆(G_s)``, shape (S+1, r, r)."""
        return self.P - self.oracle

    @property
    def drift(self) -> np.ndarray:
        """Oracle drift ``D_s = P_z^⋆(G_s) - P_z^⋆(G_{s+1})``, shape (S, r, r) (§6.6)."""
        return self.oracle[:-1] - self.oracle[1:]


def encdec_iterate(
    model: LatentModel, G0: np.ndarray, P0: np.ndarray, eta_e: float, eta_d: float, n_steps: int
) -> EncDecTrajectory:
    """Iterate the stop-gradient triangular dynamics in full matrices (seed 000 §6.4).

    ``G_{s+1} = G_s - η_e (G_s Σ_z - Σ_bz)`` and
    ``P_{s+1} = P_s - η_d (P_s C(G_s) - B(G_s))``: the encoder drives the
    decoder's data distribution, the decoder does not act on the encoder.

    Parameters
    ----------
    model : LatentModel
    G0, P0 : array_like, shape (r, r)
    eta_e : float, in ``(0, 2/λ_max(Σ_z))``
    eta_d : float, in ``(0, 2/max_s λ_max(C(G_s)))``
    n_steps : int, >= 0

    Returns
    -------
    EncDecTrajectory

    Raises
    ------
    ValueError
        Naming ``eta_e`` / ``eta_d`` for unstable steps, ``G0`` / ``P0`` for wrong
        shapes, ``G`` if ``A(G_s)`` becomes singular.
    """
    r = model.r
    G0 = _square(G0, "G0", r)
    P0 = _square(P0, "P0", r)
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 0:
        raise ValueError(f"n_steps: must be a non-negative integer, got {n_steps!r}")
    Sz = np.asarray(model.Sigma_z, float)
    ee = check_step_size(eta_e, Sz, "eta_e", C_name="Sigma_z")
    Sbz = model.Sigma_bz
    S = int(n_steps)
    G = np.empty((S + 1, r, r))
    G[0] = G0
    for s in range(S):
        G[s + 1] = G[s] - ee * (G[s] @ Sz - Sbz)
    A = model.A(G)
    C = model.C(G)
    Bm = model.B(G)
    lam_max = max(float(np.linalg.eigvalsh(Cs)[-1]) for Cs in C)
    ed = float(eta_d) if np.isscalar(eta_d) else np.nan
    if not np.isfinite(ed) or ed <= 0 or ed * lam_max >= 2.0:
        raise ValueError(
            f"eta_d: step size {eta_d!r} outside the stability window (0, 2/max_s lambda_max(C_s)) "
            f"= (0, {2.0 / lam_max:.6g})"
        )
    P = np.empty((S + 1, r, r))
    P[0] = P0
    for s in range(S):
        P[s + 1] = P[s] - ed * (P[s] @ C[s] - Bm[s])
    return EncDecTrajectory(G=G, P=P, A=A, C=C, B=Bm, oracle=model.oracle(G), Szz=model.zdag_cov(G), eta_e=ee, eta_d=ed)


def _check_seq(E0: np.ndarray, C_seq: np.ndarray, D_seq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    E0 = finite_array(E0, "E0")
    C_seq = finite_array(C_seq, "C_seq")
    D_seq = finite_array(D_seq, "D_seq")
    if E0.ndim != 2:
        raise ValueError(f"E0: must be a matrix (m, r), got shape {E0.shape}")
    r = E0.shape[1]
    if C_seq.ndim != 3 or C_seq.shape[1:] != (r, r):
        raise ValueError(f"C_seq: must have shape (n_steps, {r}, {r}), got {C_seq.shape}")
    if D_seq.shape != (C_seq.shape[0], *E0.shape):
        raise ValueError(f"D_seq: shape {D_seq.shape} must be ({C_seq.shape[0]}, {E0.shape[0]}, {r})")
    return E0, C_seq, D_seq


def _check_seq_eta(
    E0: np.ndarray, C_seq: np.ndarray, D_seq: np.ndarray, eta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``_check_seq`` plus a positive finite step size ``eta`` (returned as float)."""
    E0, C_seq, D_seq = _check_seq(E0, C_seq, D_seq)
    e = float(eta)
    if not np.isfinite(e) or e <= 0:
        raise ValueError(f"eta: step size must be a positive finite number, got {eta!r}")
    return E0, C_seq, D_seq, e


def tracking_error_iterate(E0: np.ndarray, C_seq: np.ndarray, D_seq: np.ndarray, eta: float) -> np.ndarray:
    """Recursion ``E_{s+1} = E_s (I - η C_s) + D_s`` (seed 000 §6.6).

    Parameters
    ----------
    E0 : array_like, shape (m, r)
    C_seq : array_like, shape (n_steps, r, r)
    D_seq : array_like, shape (n_steps, m, r)
    eta : float

    Returns
    -------
    ndarray, shape (n_steps + 1, m, r)
    """
    E0, C_seq, D_seq, e = _check_seq_eta(E0, C_seq, D_seq, eta)
    S = C_seq.shape[0]
    out = np.empty((S + 1, *E0.shape))
    out[0] = E0
    for s in range(S):
        out[s + 1] = out[s] - e * out[s] @ C_seq[s] + D_seq[s]
    return out


def tracking_error_product_sum(
    E0: np.ndarray, C_seq: np.ndarray, D_seq: np.ndarray, eta: float, steps: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Ordered product/sum formula of seed 000 §6.6, evaluated literally at ``steps``.

    ``E_s = E_0 Π_{t=0}^{s-1} (I - ηC_t) + Σ_{τ=0}^{s-1} D_τ Π_{t=τ+1}^{s-1} (I - ηC_t)``
    with ``Π_{t=a}^{b} M_t = M_a M_{a+1} ... M_b``.

    For each ``s`` the suffix products are built by *left* multiplication from
    ``t = s-1`` down to ``0`` (a different association order from the
    recursion, which multiplies on the right), ``O(s)`` products per step.

    Parameters
    ----------
    E0 : array_like, shape (m, r)
    C_seq : array_like, shape (n_steps, r, r)
    D_seq : array_like, shape (n_steps, m, r)
    eta : float
    steps : sequence of int in ``[0, n_steps]``

    Returns
    -------
    ndarray, shape (len(steps), m, r)
    """
    E0, C_seq, D_seq, e = _check_seq_eta(E0, C_seq, D_seq, eta)
    st = nonnegative_int_steps(steps)
    S = C_seq.shape[0]
    if np.any(st > S):
        raise ValueError(f"steps: must be <= n_steps = {S}")
    r = E0.shape[1]
    M = np.eye(r)[None] - e * C_seq
    out = np.empty((st.size, *E0.shape))
    for k, s in enumerate(st):
        s = int(s)
        if s == 0:
            out[k] = E0
            continue
        R = np.eye(r)  # Π_{t=τ+1}^{s-1} M_t, starting with the empty product (τ = s-1)
        total = D_seq[s - 1].copy()
        for tau in range(s - 2, -1, -1):
            R = M[tau + 1] @ R
            total += D_seq[tau] @ R
        R = M[0] @ R  # Π_{t=0}^{s-1}
        out[k] = E0 @ R + total
    return out


def commutator_defect(C_seq: np.ndarray) -> float:
    """``max_{t,t'} ||C_t C_{t'} - C_{t'} C_t||_F / (||C_t||_F ||C_{t'}||_F)``.

    Zero iff the family commutes, i.e. (for symmetric matrices) iff one
    orthonormal basis diagonalises every ``C_t`` — the hypothesis of the scalar
    closure (seed 000 §6.5–§6.6: ``C_t C_{t'} ≠ C_{t'} C_t ⟹`` no fixed scalar
    eigenmode closure).  Pass a subsample of a long sequence: the work is
    quadratic in its length.

    Parameters
    ----------
    C_seq : array_like, shape (n, r, r)

    Returns
    -------
    float
    """
    C = finite_array(C_seq, "C_seq")
    if C.ndim != 3 or C.shape[1] != C.shape[2]:
        raise ValueError(f"C_seq: must have shape (n, r, r), got {C.shape}")
    norms = np.linalg.norm(C, axis=(1, 2))
    if np.any(norms == 0):
        raise ValueError("C_seq: contains a zero matrix")
    prod = np.einsum("aij,bjk->abik", C, C)
    comm = prod - np.swapaxes(prod, 0, 1)
    rel = np.linalg.norm(comm, axis=(2, 3)) / np.outer(norms, norms)
    return float(rel.max())


def pinched_coefficients(Q: np.ndarray, mats: np.ndarray) -> np.ndarray:
    """Diagonals ``q_i^T M_t q_i`` of a stack of matrices in the fixed basis ``Q``.

    Parameters
    ----------
    Q : array_like, shape (r, r), orthogonal
    mats : array_like, shape (n, r, r)

    Returns
    -------
    ndarray, shape (n, r)
    """
    Q = _square(Q, "Q")
    mats = finite_array(mats, "mats")
    if mats.ndim != 3 or mats.shape[1:] != Q.shape:
        raise ValueError(f"mats: shape {mats.shape} must be (n, {Q.shape[0]}, {Q.shape[0]})")
    if not np.allclose(Q.T @ Q, np.eye(Q.shape[0]), atol=1e-10):
        raise ValueError("Q: must be orthogonal")
    return np.einsum("ia,nij,ja->na", Q, mats, Q)


def fixed_basis_closure_risk(traj: EncDecTrajectory, Q: np.ndarray, L: int, p0: np.ndarray | None = None) -> np.ndarray:
    """Risk predicted by the §6.5 scalar closure written in a fixed basis ``Q``.

    Reads the mode scalars ``a_i(s) = q_i^T A_s q_i``, ``c_i(s)``, ``b_i(s)``,
    ``w_i(s) = q_i^T E[z^† z^{†T}] q_i / r`` off the matrices, runs the scalar
    recursion ``p_i(s+1) = (1 - η_d c_i) p_i + η_d b_i`` and returns
    ``Σ_i w_i (1 - p_i a_i)^{2L}``.  Exact when ``Q`` diagonalises every
    ``A_s, B_s, C_s, E[z^†z^{†T}]`` and ``P_0``; otherwise it ignores the mode
    coupling, which is what a fixed-basis scalar closure must do.

    Parameters
    ----------
    traj : EncDecTrajectory
    Q : array_like, shape (r, r), orthogonal
    L : int, Richardson depth
    p0 : array_like, shape (r,), optional
        Initial mode values; default ``q_i^T P_0 q_i``.

    Returns
    -------
    ndarray, shape (n_steps + 1,)
    """
    a = pinched_coefficients(Q, traj.A)
    c = pinched_coefficients(Q, traj.C)
    b = pinched_coefficients(Q, traj.B)
    w = pinched_coefficients(Q, traj.Szz) / traj.A.shape[1]
    if p0 is None:
        p0 = pinched_coefficients(Q, traj.P[:1])[0]
    p = mode_recursion(p0, c[:-1], b[:-1], traj.eta_d)
    return richardson_mode_risk(p, a, w, L)


def _risk_curves(predicted: object, exact: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate two risk curves of the same 1-D shape ``(n,)``."""
    pr = finite_array(predicted, "predicted")
    ex = finite_array(exact, "exact")
    if pr.shape != ex.shape or pr.ndim != 1:
        raise ValueError(f"predicted: shape {pr.shape} must equal exact's shape {ex.shape} (1-D)")
    return pr, ex


def closure_mismatch(predicted: np.ndarray, exact: np.ndarray) -> float:
    """``max_s |R_pred(s) - R_exact(s)| / max_s |R_exact(s)|`` (relative sup error of a risk curve).

    Parameters
    ----------
    predicted, exact : array_like, shape (n,)
    """
    pr, ex = _risk_curves(predicted, exact)
    top = float(np.max(np.abs(ex)))
    if top == 0:
        raise ValueError("exact: identically zero risk curve, relative mismatch undefined")
    return float(np.max(np.abs(pr - ex)) / top)


def closure_log_ratio(predicted: np.ndarray, exact: np.ndarray, floor: float = 1e-250) -> float:
    """``max_s |log10(R_pred(s) / R_exact(s))|``: how many decades a predicted risk curve is off.

    Only times where both curves exceed ``floor`` count (risks that underflow
    carry no information).  Seed 000 §11 compares encoder risks by such a log-ratio.

    Parameters
    ----------
    predicted, exact : array_like, shape (n,), non-negative
    floor : float

    Raises
    ------
    ValueError
        Naming ``exact`` if no time has both risks above ``floor``.
    """
    pr, ex = _risk_curves(predicted, exact)
    ok = (pr > floor) & (ex > floor)
    if not np.any(ok):
        raise ValueError("exact: no time where both risks exceed the floor; log-ratio undefined")
    return float(np.max(np.abs(np.log10(pr[ok] / ex[ok]))))
