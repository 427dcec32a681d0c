"""Preconditioned Richardson iteration inside a prompt (inner time ℓ).

Main paper §3.1: with a frozen preconditioner ``P`` and the prompt system
``H z^† = d``,

.. math::

    \\begin{gathered}
    z_{ℓ+1} = z_ℓ + P (d - H z_ℓ), \\qquad
    e_ℓ = z_ℓ - z^† = (I - PH)^ℓ e_0,\\\\
    \\|e_ℓ\\|_2 \\le \\|I - PH\\|_2^ℓ \\|e_0\\|_2 .
    \\end{gathered}

With ``z_0 = 0``: ``z_L = Σ_{j<L} (I-PH)^j P d`` and ``e_L = -(I-PH)^L z^†``.
MMNN report §4.2 calls ``ρ(H, P) = ‖I - PH‖_2`` the contraction factor.

All functions are batched over prompts: ``H`` has shape (n, K, K), vectors
(n, K); ``P`` is either one shared (K, K) matrix or a batch (n, K, K).
The inner loop over ℓ is a loop of ``L`` batched matrix–vector products
(``O(L n K²)``), cheaper and better conditioned than diagonalising the
non-normal ``I - PH``; ``iclcore._reference.richardson_iterates_naive`` is the per-prompt
reference used by tests and the benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.validation import check_depth

__all__ = [
    "richardson_iterates",
    "richardson_error",
    "richardson_sum_form",
    "iteration_matrix",
    "contraction_factor",
    "symmetric_pd_spectral_radius",
    "Contraction",
    "RichardsonCertificate",
    "richardson_certificate",
    "in_context_gd_predict",
]


def _as_batch(P: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    P = np.asarray(P, dtype=float)
    H = np.asarray(H, dtype=float)
    if H.ndim == 2:
        H = H[None]
    if H.ndim != 3 or H.shape[1] != H.shape[2]:
        raise ValueError(f"H: expected shape (n, K, K) or (K, K), got {H.shape}")
    K = H.shape[1]
    if P.ndim == 2:
        if P.shape != (K, K):
            raise ValueError(f"P: expected shape ({K}, {K}) to match H, got {P.shape}")
    elif P.ndim == 3:
        if P.shape[1:] != (K, K) or P.shape[0] not in (1, H.shape[0]):
            raise ValueError(f"P: expected shape (n, {K}, {K}) with n={H.shape[0]}, got {P.shape}")
    else:
        raise ValueError(f"P: expected shape (K, K) or (n, K, K), got {P.shape}")
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(H))):
        raise ValueError("P, H: entries must be finite")
    return P, H


def _as_vectors(v: np.ndarray, n: int, K: int, name: str) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    if v.ndim == 1:
        v = v[None]
    if v.ndim != 2 or v.shape[1] != K or v.shape[0] not in (1, n):
        raise ValueError(f"{name}: expected shape ({n}, {K}), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: entries must be finite")
    return np.broadcast_to(v, (n, K))


def _check_L(L: int) -> None:
    check_depth(L, minimum=0)


def _depth_problem(
    P: np.ndarray, H: np.ndarray, L: int, v: np.ndarray, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``P, H`` (as ``_as_batch``), the depth ``L`` and per-prompt vectors ``v`` (called ``name``).

    Returns ``P``, ``H`` (n, K, K) and ``v`` broadcast to (n, K).
    """
    P, H = _as_batch(P, H)
    _check_L(L)
    return P, H, _as_vectors(v, H.shape[0], H.shape[1], name)


def _apply(P: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched ``P v`` for shared (K, K) or batched (n, K, K) ``P``; v (n, K)."""
    if P.ndim == 2:
        return v @ P.T
    return np.einsum("nij,nj->ni", P, v)


def iteration_matrix(P: np.ndarray, H: np.ndarray) -> np.ndarray:
    """``I - P H`` for every prompt.

    Returns
    -------
    ndarray, shape (n, K, K)

    Examples
    --------
    >>> iteration_matrix(0.5 * np.eye(2), np.eye(2))
    array([[[0.5, 0. ],
            [0. , 0.5]]])
    """
    P, H = _as_batch(P, H)
    return np.eye(H.shape[1]) - (P @ H)


def richardson_iterates(
    P: np.ndarray, H: np.ndarray, d: np.ndarray, *, L: int, z0: np.ndarray | None = None
) -> np.ndarray:
    """All iterates ``z_0, …, z_L`` of ``z_{ℓ+1} = z_ℓ + P(d − H z_ℓ)``.

    Implements main paper §3.1 (inner solver at frozen outer time s) and MMNN report §4.1.

    Parameters
    ----------
    P : ndarray, shape (K, K) or (n, K, K)
        Preconditioner (shared or per prompt).
    H : ndarray, shape (n, K, K)
        Prompt system matrices ``H_M``.
    d : ndarray, shape (n, K)
        Right-hand sides ``d = c_M``.
    L : int
        Depth (number of steps, ``L ≥ 0``).
    z0 : ndarray, shape (n, K) or (K,), optional
        Start (default 0).

    Returns
    -------
    ndarray, shape (n, L + 1, K)

    Examples
    --------
    >>> H = np.diag([1.0, 2.0])
    >>> z = richardson_iterates(0.4 * np.eye(2), H, np.array([1.0, 2.0]), L=60)
    >>> z.shape, bool(np.allclose(z[0, -1], [1.0, 1.0]))
    ((1, 61, 2), True)
    """
    P, H, d = _depth_problem(P, H, L, d, "d")
    n, K = d.shape
    z = np.zeros((n, K)) if z0 is None else np.array(_as_vectors(z0, n, K, "z0"))
    out = np.empty((n, L + 1, K))
    out[:, 0] = z
    for ell in range(L):
        r = d - np.einsum("nij,nj->ni", H, z)
        z = z + _apply(P, r)
        out[:, ell + 1] = z
    return out


def richardson_error(P: np.ndarray, H: np.ndarray, e0: np.ndarray, *, L: int) -> np.ndarray:
    """Error trajectory ``e_ℓ = (I − PH)^ℓ e_0``, ``ℓ = 0..L`` (main paper §3.1; MMNN report §4.2).

    Parameters
    ----------
    P : ndarray, shape (K, K) or (n, K, K)
    H : ndarray, shape (n, K, K)
    e0 : ndarray, shape (n, K)
        Initial errors ``z_0 − z^†`` (``−z^†`` for ``z_0 = 0``).
    L : int

    Returns
    -------
    ndarray, shape (n, L + 1, K)

    Examples
    --------
    >>> e = richardson_error(0.5 * np.eye(2), np.eye(2), np.array([1.0, -2.0]), L=2)
    >>> e[0]
    array([[ 1.  , -2.  ],
           [ 0.5 , -1.  ],
           [ 0.25, -0.5 ]])
    """
    P, H, e0 = _depth_problem(P, H, L, e0, "e0")
    n, K = e0.shape
    e = np.array(e0)
    out = np.empty((n, L + 1, K))
    out[:, 0] = e
    for ell in range(L):
        e = e - _apply(P, np.einsum("nij,nj->ni", H, e))
        out[:, ell + 1] = e
    return out


def richardson_sum_form(P: np.ndarray, H: np.ndarray, d: np.ndarray, *, L: int) -> np.ndarray:
    """``z_L = Σ_{j=0}^{L-1} (I − PH)^j P d`` via matrix powers (main paper §3.1).

    An independent route to the depth-``L`` iterate from ``z_0 = 0`` (used by tests).

    Returns
    -------
    ndarray, shape (n, K)

    Examples
    --------
    >>> P, H, d = 0.3 * np.eye(2), np.diag([1.0, 3.0]), np.array([1.0, 1.0])
    >>> bool(np.allclose(richardson_sum_form(P, H, d, L=5), richardson_iterates(P, H, d, L=5)[:, -1]))
    True
    """
    P, H = _as_batch(P, H)
    _check_L(L)
    n, K = H.shape[0], H.shape[1]
    d = _as_vectors(d, n, K, "d")
    T = iteration_matrix(P, H)
    T = np.broadcast_to(T, (n, K, K))
    v = _apply(P, d)
    total = np.zeros((n, K))
    for j in range(L):
        total += np.einsum("nij,nj->ni", np.linalg.matrix_power(T, j), v)
    return total


@dataclass(frozen=True)
class Contraction:
    """Contraction statistics of ``I − PH`` per prompt.

    Attributes
    ----------
    spectral_radius : ndarray (n,)
        ``max |eig(I − PH)|`` (governs the asymptotic rate).
    operator_norm : ndarray (n,)
        ``‖I − PH‖_2`` (the certified per-step factor ``ρ(H, P)`` of MMNN report §4.2).
    """

    spectral_radius: np.ndarray
    operator_norm: np.ndarray


def contraction_factor(P: np.ndarray, H: np.ndarray) -> Contraction:
    """Spectral radius and operator norm of ``I − PH`` for every prompt.

    Implements ``ρ_s(H) = ‖I − P_s H‖_2`` of main paper §3.1 / MMNN report §4.2.

    Parameters
    ----------
    P : ndarray, shape (K, K) or (n, K, K)
    H : ndarray, shape (n, K, K) or (K, K)

    Returns
    -------
    Contraction
        Arrays of shape (n,).

    Examples
    --------
    >>> c = contraction_factor(0.25 * np.eye(2), np.diag([1.0, 2.0]))
    >>> c.spectral_radius.round(6), c.operator_norm.round(6)
    (array([0.75]), array([0.75]))
    """
    P, H = _as_batch(P, H)
    T = np.eye(H.shape[1]) - P @ H
    radius = symmetric_pd_spectral_radius(P, H)
    if radius is None:
        radius = np.abs(np.linalg.eigvals(T)).max(axis=-1)
    opnorm = np.linalg.norm(T, ord=2, axis=(-2, -1))
    return Contraction(spectral_radius=radius, operator_norm=opnorm)


def _nearly_symmetric(A: np.ndarray, rtol: float = 1e-12) -> bool:
    return bool(np.max(np.abs(A - np.swapaxes(A, -1, -2))) <= rtol * np.max(np.abs(A)))


def symmetric_pd_spectral_radius(P: np.ndarray, H: np.ndarray) -> np.ndarray | None:
    """``max |eig(I − PH)|`` per prompt when ``P`` is symmetric positive definite and ``H`` symmetric
    (to ``1e-12`` relative), else ``None``.

    With ``P = C Cᵀ`` (Cholesky of the symmetric part), ``PH = C (Cᵀ H C) C^{-1}`` is similar to the
    symmetric ``Cᵀ H C``, so ``eig(I − PH) = 1 − eigvalsh(Cᵀ H C)``: a symmetric eigenproblem, ~3x
    cheaper than the general one at K = 63, and real by construction. Dropping an antisymmetric part
    of relative size ``ε ≤ 1e-12`` (the rounding of an inverse or a mean of inverses) moves the
    eigenvalues by at most ``√cond(P) ε ‖P‖ ‖H‖`` (Bauer–Fike: the eigenvectors of ``PH`` are the
    columns of ``C^{-T} W``). Scalar, Jacobi, ``A_0^{-1}`` and oracle preconditioners take this path;
    learned ones (not symmetric) do not. ``P``, ``H`` as validated by ``_as_batch``.

    Examples
    --------
    >>> symmetric_pd_spectral_radius(0.25 * np.eye(2)[None], np.diag([1.0, 2.0])[None]).round(6)
    array([0.75])
    >>> symmetric_pd_spectral_radius(np.array([[[0.0, 1.0], [-1.0, 0.0]]]), np.eye(2)[None]) is None
    True
    """
    if not (_nearly_symmetric(P) and _nearly_symmetric(H)):
        return None
    try:
        C = np.linalg.cholesky(0.5 * (P + np.swapaxes(P, -1, -2)))
    except np.linalg.LinAlgError:  # not positive definite: general eigenvalues
        return None
    Hs = 0.5 * (H + np.swapaxes(H, -1, -2))
    mu = np.linalg.eigvalsh(np.swapaxes(C, -1, -2) @ Hs @ C)
    return np.abs(1.0 - mu).max(axis=-1)


@dataclass(frozen=True)
class RichardsonCertificate:
    """The deterministic certificate ``‖e_ℓ‖ ≤ ‖I − PH‖^ℓ ‖e_0‖`` checked on a batch.

    Attributes
    ----------
    error_norms : ndarray (n, L + 1)
        ``‖e_ℓ‖_2``.
    bounds : ndarray (n, L + 1)
        ``‖I − PH‖_2^ℓ ‖e_0‖_2``.
    violation_rate : float
        Fraction of (prompt, ℓ) pairs with ``‖e_ℓ‖ > bound·(1 + rtol)`` (must be 0).
    violation_rate_final : float
        Same at ℓ = L only.
    ratio_final : ndarray (n,)
        ``‖e_L‖ / bound_L`` (0 where the bound is 0).
    """

    error_norms: np.ndarray
    bounds: np.ndarray
    violation_rate: float
    violation_rate_final: float
    ratio_final: np.ndarray


def richardson_certificate(
    P: np.ndarray,
    H: np.ndarray,
    e0: np.ndarray,
    *,
    L: int,
    rtol: float = 1e-10,
    operator_norm: np.ndarray | None = None,
) -> RichardsonCertificate:
    """Check ``‖e_ℓ‖_2 ≤ ‖I − PH‖_2^ℓ ‖e_0‖_2`` for ``ℓ = 0..L`` (main paper §12.9; MMNN report §4.2).

    ``rtol`` absorbs floating-point rounding in the comparison (the inequality
    itself is exact: submultiplicativity of the operator norm). ``operator_norm`` (shape (n,)):
    ``‖I − P H‖_2`` per prompt if the caller has it already; computed otherwise (one SVD per
    prompt; the spectral radius, which the certificate does not use, is not computed).

    Examples
    --------
    >>> cert = richardson_certificate(0.5 * np.eye(2), np.diag([1.0, 1.5]), np.ones(2), L=3)
    >>> cert.error_norms.shape, cert.violation_rate
    ((1, 4), 0.0)
    """
    if not np.isfinite(rtol) or rtol < 0:
        raise ValueError(f"rtol: must be finite and >= 0, got {rtol!r}")
    errs = richardson_error(P, H, e0, L=L)
    err_norm = np.linalg.norm(errs, axis=-1)
    if operator_norm is None:
        rho = np.linalg.norm(iteration_matrix(P, H), ord=2, axis=(-2, -1))
    else:
        rho = np.asarray(operator_norm, dtype=float)
        if rho.shape != err_norm.shape[:1]:
            raise ValueError(f"operator_norm: expected shape {err_norm.shape[:1]}, got {rho.shape}")
    bounds = rho[:, None] ** np.arange(L + 1)[None, :] * err_norm[:, :1]
    slack = rtol * bounds + 1e-300
    viol = err_norm > bounds + slack
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bounds[:, -1] > 0, err_norm[:, -1] / np.where(bounds[:, -1] > 0, bounds[:, -1], 1.0), 0.0)
    return RichardsonCertificate(
        error_norms=err_norm,
        bounds=bounds,
        violation_rate=float(viol.mean()),
        violation_rate_final=float(viol[:, -1].mean()),
        ratio_final=ratio,
    )


def in_context_gd_predict(Gamma: np.ndarray, X: np.ndarray, y: np.ndarray, *, Xq: np.ndarray, L: int) -> np.ndarray:
    """Prediction of ``L`` steps of preconditioned in-context gradient descent.

    ``b_0 = 0``, ``b_{ℓ+1} = b_ℓ + L^{-1} Γ (Xᵀy/P - Σ̂ b_ℓ)`` with ``Σ̂ = XᵀX/P``, prediction
    ``Xq b_L`` (the reduced-Γ model of Bordelon et al., Eqs. 4, 54–55; the linear attention of
    :mod:`iclcore.models.attention` computes the same map). These are the Richardson iterates
    :func:`richardson_iterates` with preconditioner ``Γ/L``, system ``H = Σ̂`` and right-hand side
    ``d = Xᵀy/P`` (tested).

    Parameters
    ----------
    Gamma : ndarray, shape (D, D)
    X : ndarray, shape (P, D)
        Context inputs (rows).
    y : ndarray, shape (P,)
        Context labels.
    Xq : ndarray, shape (Q, D)
        Queries.
    L : int, >= 1
        Number of steps (depth).

    Returns
    -------
    ndarray, shape (Q,)

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([2.0, -2.0])
    >>> in_context_gd_predict(2.0 * np.eye(2), X, y, Xq=np.array([[1.0, 0.0], [1.0, 1.0]]), L=1)
    array([2., 0.])
    """
    Gamma = np.asarray(Gamma, dtype=float)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    Xq = np.asarray(Xq, dtype=float)
    Lf = check_depth(L)
    if X.ndim != 2:
        raise ValueError(f"X: expected shape (P, D), got {X.shape}")
    P, D = X.shape
    if Gamma.shape != (D, D):
        raise ValueError(f"Gamma: expected shape {(D, D)}, got {Gamma.shape}")
    if y.shape != (P,):
        raise ValueError(f"y: expected shape {(P,)}, got {y.shape}")
    if Xq.ndim != 2 or Xq.shape[1] != D:
        raise ValueError(f"Xq: expected shape (Q, {D}), got {Xq.shape}")
    Shat = X.T @ X / P
    c = X.T @ y / P
    b = np.zeros(D)
    for _ in range(Lf):
        b = b + Gamma @ (c - Shat @ b) / Lf
    return Xq @ b
