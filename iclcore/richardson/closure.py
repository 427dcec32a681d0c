"""Coupled encoder/decoder dynamics: exact scalar closure and matrix dynamics.

Implements the top rungs of the proof ladder of main paper:

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

The latent model (``A(G) = G^T H G``, ``C(G)``, ``B(G)``, the commuting case) is in
:mod:`iclcore.richardson.latent_model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.lsq.dynamics import check_step_size
from iclcore.richardson.latent_model import LatentModel
from iclcore.validation import check_depth, finite_array, nonnegative_int_steps, positive_int, square_matrix

__all__ = [
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


def mode_recursion(p0: np.ndarray, c: np.ndarray, b: np.ndarray, *, eta: float) -> np.ndarray:
    """Mode-wise recursion ``p_i(s+1) = (1 - η c_i(s)) p_i(s) + η b_i(s)`` (main paper §6.5).

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


def mode_product_sum(p0: np.ndarray, c: np.ndarray, b: np.ndarray, *, eta: float) -> np.ndarray:
    """Closed form of the mode recursion (main paper §6.5), evaluated literally.

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


def richardson_mode_risk(p: np.ndarray, a: np.ndarray, w: np.ndarray, *, L: int) -> np.ndarray:
    """``R_dec(s, L) = Σ_i w_i(s) (1 - p_i(s) a_i(s))^{2L}`` (main paper §6.5).

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
    L = check_depth(L, minimum=0)
    return np.sum(w * (1.0 - p * a) ** (2 * L), axis=-1)


def richardson_matrix_risk(P: np.ndarray, A: np.ndarray, Szz: np.ndarray, *, L: int) -> np.ndarray:
    """Depth-``L`` Richardson risk ``(1/r) tr[M^L S M^{L T}]``, ``M = I - P A`` (main paper §6.1, §6.3).

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
    L = check_depth(L, minimum=0)
    r = P.shape[1]
    M = np.eye(r)[None] - P @ A
    ML = np.linalg.matrix_power(M, L)
    return np.einsum("nij,njk,nik->n", ML, Szz, ML) / r


# ----------------------------------------------------------------------------- matrix dynamics


@dataclass(frozen=True)
class EncDecTrajectory:
    """Full-matrix stop-gradient encoder/decoder trajectory (main paper §6.4, discrete time).

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
    model: LatentModel, G0: np.ndarray, P0: np.ndarray, *, eta_e: float, eta_d: float, n_steps: int
) -> EncDecTrajectory:
    """Iterate the stop-gradient triangular dynamics in full matrices (main paper §6.4).

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
    G0 = square_matrix(G0, "G0", r)
    P0 = square_matrix(P0, "P0", r)
    n_steps = positive_int(n_steps, "n_steps", minimum=0)
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


def tracking_error_iterate(E0: np.ndarray, C_seq: np.ndarray, D_seq: np.ndarray, *, eta: float) -> np.ndarray:
    """Recursion ``E_{s+1} = E_s (I - η C_s) + D_s`` (main paper §6.6).

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
    E0: np.ndarray, C_seq: np.ndarray, D_seq: np.ndarray, *, eta: float, steps: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Ordered product/sum formula of main paper §6.6, evaluated literally at ``steps``.

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
    closure (main paper §6.5–§6.6: ``C_t C_{t'} ≠ C_{t'} C_t ⟹`` no fixed scalar
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
    Q = square_matrix(Q, "Q")
    mats = finite_array(mats, "mats")
    if mats.ndim != 3 or mats.shape[1:] != Q.shape:
        raise ValueError(f"mats: shape {mats.shape} must be (n, {Q.shape[0]}, {Q.shape[0]})")
    if not np.allclose(Q.T @ Q, np.eye(Q.shape[0]), atol=1e-10):
        raise ValueError("Q: must be orthogonal")
    return np.einsum("ia,nij,ja->na", Q, mats, Q)


def fixed_basis_closure_risk(
    traj: EncDecTrajectory, Q: np.ndarray, L: int, *, p0: np.ndarray | None = None
) -> np.ndarray:
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
    p = mode_recursion(p0, c[:-1], b[:-1], eta=traj.eta_d)
    return richardson_mode_risk(p, a, w, L=L)


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
    carry no information).  Main paper §11 compares encoder risks by such a log-ratio.

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
