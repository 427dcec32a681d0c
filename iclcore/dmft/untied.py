"""Untied layers at ``N = D``, ``P = ∞`` (Bordelon et al. §5.1, Eq. 19/117, App. G.1): the
loss, the Hessian at the balanced point and the global untied optimum. The width-``N`` model, its normalisation ``c = D/N`` and its notation are described in
:mod:`iclcore.dmft`.
"""

from __future__ import annotations

import numpy as np

from iclcore.validation import positive_int, spectrum_pair

__all__ = [
    "untied_loss",
    "untied_balanced_hessian",
    "untied_optimum",
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


def untied_balanced_hessian(gamma: float, lam: np.ndarray, omega: np.ndarray, L: int) -> tuple[float, float]:
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
