"""Linear algebra shared by the families of :mod:`iclcore`.

* :func:`haar_orthogonal` -- the one sampler of Haar-distributed orthogonal matrices and frames
  (QR of a Gaussian matrix with the sign fix of Mezzadri, Notices AMS 54 (2007));
* :func:`joint_diagonalizer` -- the orthonormal basis that best diagonalises a family of
  symmetric matrices (Jacobi rotations, Cardoso & Souloumiac 1996);
* :func:`stable_rank` -- ``‖A‖_F² / ‖A‖_2²``;
* :func:`top_energy` -- ``Σ_{i≤k} σ_i(A)² / Σ_i σ_i(A)²``;
* :func:`principal_angles` -- principal angles between two column spaces, ascending
  (:func:`scipy.linalg.subspace_angles`).
"""

from __future__ import annotations

import numpy as np

from iclcore.validation import as_generator, finite_array, positive_int

__all__ = ["haar_orthogonal", "joint_diagonalizer", "stable_rank", "top_energy", "principal_angles"]


def haar_orthogonal(
    n: int, rng: np.random.Generator | int, columns: int | None = None, *, size: int | None = None
) -> np.ndarray:
    """Haar-distributed orthogonal matrix, or frame of ``columns`` orthonormal columns.

    Draws ``G = rng.standard_normal((size, n, columns))``, takes ``G = QR`` and returns
    ``Q diag(sign(diag R))`` (sign fix, so the law is exactly Haar; a zero diagonal entry,
    an event of probability zero, counts as ``+1``).

    Parameters
    ----------
    n : int, >= 1
        Ambient dimension.
    rng : numpy.random.Generator or int seed
    columns : int, optional
        ``1 <= columns <= n``; default ``n`` (a square orthogonal matrix).
    size : int, optional
        Number of independent draws; default: a single draw without a leading axis.

    Returns
    -------
    ndarray, shape ``(n, columns)`` or ``(size, n, columns)``
    """
    n = positive_int(n, "n")
    k = n if columns is None else positive_int(columns, "columns")
    if k > n:
        raise ValueError(f"columns: a frame has at most n = {n} orthonormal columns, got {k}")
    rng = as_generator(rng)
    shape = (n, k) if size is None else (positive_int(size, "size"), n, k)
    Q, R = np.linalg.qr(rng.standard_normal(shape))
    d = np.diagonal(R, axis1=-2, axis2=-1)
    return Q * np.where(d == 0, 1.0, np.sign(d))[..., None, :]


def joint_diagonalizer(C_seq: np.ndarray, sweeps: int = 100, tol: float = 1e-14) -> np.ndarray:
    """Orthonormal basis that best diagonalises a family of symmetric matrices.

    Jacobi rotations minimising ``Σ_t off(Q^T C_t Q)²`` (Cardoso & Souloumiac,
    SIAM J. Matrix Anal. Appl. 17 (1996), real symmetric case).  For a commuting
    family it returns a common eigenbasis; for a non-commuting family it is the
    best *fixed* basis for a scalar closure in the least-squares sense.

    Parameters
    ----------
    C_seq : array_like, shape (n, r, r), symmetric
    sweeps : int
        Maximum number of sweeps over all pairs.
    tol : float
        Stop when every rotation has ``|sin θ| < tol``.

    Returns
    -------
    ndarray, shape (r, r), orthogonal (columns are the basis vectors)
    """
    M = finite_array(C_seq, "C_seq").copy()
    if M.ndim != 3 or M.shape[1] != M.shape[2]:
        raise ValueError(f"C_seq: must have shape (n, r, r), got {M.shape}")
    r = M.shape[1]
    V = np.eye(r)
    for _ in range(int(sweeps)):
        rotated = False
        for p in range(r - 1):
            for q in range(p + 1, r):
                g = np.stack([M[:, p, p] - M[:, q, q], M[:, p, q] + M[:, q, p]])  # (2, n)
                gg = g @ g.T
                ton = gg[0, 0] - gg[1, 1]
                toff = gg[0, 1] + gg[1, 0]
                theta = 0.5 * np.arctan2(toff, ton + np.hypot(ton, toff))
                c, s = np.cos(theta), np.sin(theta)
                if abs(s) > tol:
                    rotated = True
                    J = np.array([[c, -s], [s, c]])
                    pair = [p, q]
                    V[:, pair] = V[:, pair] @ J
                    M[:, pair, :] = np.einsum("ji,njk->nik", J, M[:, pair, :])
                    M[:, :, pair] = M[:, :, pair] @ J
        if not rotated:
            break
    return V


def _squared_singular_values(A: np.ndarray, name: str, what: str) -> np.ndarray:
    """``σ_i(A)²``, descending along the last axis, of a non-zero matrix or of each matrix of a stack."""
    A = finite_array(A, name)
    if A.ndim < 2:
        raise ValueError(f"{name}: expected a matrix or a stack of matrices, got shape {A.shape}")
    s = np.linalg.svd(A, compute_uv=False)
    if np.any(s[..., 0] == 0):
        raise ValueError(f"{name}: {what} of the zero matrix is undefined")
    return s**2


def stable_rank(A: np.ndarray, name: str = "A") -> float | np.ndarray:
    """Stable rank ``srank(A) = ‖A‖_F² / ‖A‖_2²`` (the main paper, §9).

    Parameters
    ----------
    A : array_like, shape (..., m, n)
        A matrix or a stack of matrices (leading axes).
    name : str
        Parameter name used in error messages.

    Returns
    -------
    float for a single matrix, ndarray of shape ``A.shape[:-2]`` for a stack.

    Raises
    ------
    ValueError
        Naming ``name`` for non-finite entries, fewer than two axes, or a zero matrix.
    """
    s2 = _squared_singular_values(A, name, "stable rank")
    out = np.sum(s2, axis=-1) / s2[..., 0]
    return float(out) if s2.ndim == 1 else out


def top_energy(A: np.ndarray, k: int = 1, name: str = "A") -> float | np.ndarray:
    """Top-``k`` energy ``E_top,k(A) = Σ_{i≤k} σ_i(A)² / Σ_i σ_i(A)²`` (the main paper, §9).

    Parameters
    ----------
    A : array_like, shape (..., m, n)
        A matrix or a stack of matrices (leading axes).
    k : int, ``1 <= k <= min(m, n)``
    name : str
        Parameter name used in error messages.

    Returns
    -------
    float for a single matrix, ndarray of shape ``A.shape[:-2]`` for a stack.

    Raises
    ------
    ValueError
        Naming ``name`` for non-finite entries, fewer than two axes, or a zero matrix; naming
        ``k`` outside ``[1, min(m, n)]``.
    """
    s2 = _squared_singular_values(A, name, "top energy")
    k = positive_int(k, "k", maximum=s2.shape[-1])
    out = s2[..., :k].sum(axis=-1) / s2.sum(axis=-1)
    return float(out) if s2.ndim == 1 else out


def principal_angles(U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Principal angles between ``range(U)`` and ``range(V)``, ascending, in ``[0, π/2]``.

    :func:`scipy.linalg.subspace_angles` (Knyazev & Argentati, SIAM J. Sci. Comput. 23 (2002):
    sines for small angles, cosines for large ones), re-ordered ascending.

    Parameters
    ----------
    U : array_like, shape (K, r)
    V : array_like, shape (K, p)
        Bases (not necessarily orthonormal) of the two subspaces.

    Returns
    -------
    ndarray, shape (min(r, p),)
    """
    U = finite_array(U, "U")
    V = finite_array(V, "V")
    if U.ndim != 2 or V.ndim != 2:
        raise ValueError(f"U, V: expected 2-D bases, got shapes {U.shape} and {V.shape}")
    if U.shape[0] != V.shape[0]:
        raise ValueError(f"V: ambient dimension {V.shape[0]} differs from U's {U.shape[0]}")
    from scipy.linalg import subspace_angles

    return subspace_angles(U, V)[::-1].copy()
