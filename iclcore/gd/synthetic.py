"""The synthetic convergence panel of Nagy §8.1 (Figure 1).

(a) scalar GD on ``L(w) = a w^2 - 2 b w + c`` with ``g = a w - b`` (the ½-loss gradient): the
    normalised loss ``L_k / L_0`` against ``(1 - eta a)^{2k}``; equal only when ``L* = 0``
    (realizable data), since in general ``(L_k - L*)/(L_0 - L*) = (1 - eta a)^{2k}``.
(b) GD on ``L(w) = ||X w - y||^2`` (``g = H w - X^T y``, ``H = X^T X``) with the step
    ``eta* = 2/(lambda_min + lambda_max)``: the error component along each eigenvector ``q_i`` of
    ``H`` contracts by ``(1 - eta* lambda_i)^2`` per step in squared norm.
(c) the fixed-rate compounding ``(rho^2)^k`` against ``rho^2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.linalg import haar_orthogonal
from iclcore.lsq.iterates import richardson_iterates
from iclcore.validation import (
    as_generator,
    finite_array,
    nonnegative_float,
    positive_float,
    positive_int,
    positive_spectrum,
)

__all__ = ["scalar_loss_ratio", "spectrum_design", "ChannelPanel", "eigenchannel_panel", "compounding"]


def scalar_loss_ratio(
    a: float, eta: float, k: int, *, wstar: float = 1.0, Lstar: float = 0.0, w0: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Iterated ``L_k / L_0`` (k = 0..k) of scalar GD and the prediction ``(1 - eta a)^{2k}``.

    The data have ``a`` (curvature), ``b = a w*`` and ``c = a w*^2 + L*`` so that the minimum is
    ``L*``. Returns ``(ratio, prediction)``, both of shape ``(k+1,)``.
    """
    a, Lstar = positive_float(a, "a"), nonnegative_float(Lstar, "Lstar")
    eta, wstar, w0 = (float(finite_array(v, name)) for v, name in ((eta, "eta"), (wstar, "wstar"), (w0, "w0")))
    k = positive_int(k, "k", minimum=0)
    b, c = a * wstar, a * wstar**2 + Lstar
    w = w0
    L = [a * w**2 - 2 * b * w + c]
    for _ in range(k):
        w = w - eta * (a * w - b)
        L.append(a * w**2 - 2 * b * w + c)
    L = np.array(L)
    return L / L[0], (1 - eta * a) ** (2 * np.arange(k + 1))


def spectrum_design(n: int, lam: np.ndarray, rng: np.random.Generator | int) -> np.ndarray:
    """A design ``X (n, d)`` with ``X^T X = Q diag(lam) Q^T`` exactly (Haar ``Q`` and column frame)."""
    lam = positive_spectrum(lam, "lam")
    d = lam.size
    n = positive_int(n, "n")
    if n < d:
        raise ValueError(f"n: need n >= d = {d} (a design of rank d), got {n}")
    rng = as_generator(rng)
    U = haar_orthogonal(n, rng)[:, :d]  # the first d columns of a Haar matrix: a Haar frame (same draws as before)
    Q = haar_orthogonal(d, rng)
    return U @ np.diag(np.sqrt(lam)) @ Q.T


@dataclass(frozen=True)
class ChannelPanel:
    """Per-eigenchannel squared errors of GD (``sq_err (k+1, d)``), their prediction, ``eta`` and ``lam``."""

    sq_err: np.ndarray
    predicted: np.ndarray
    factors: np.ndarray
    eta: float
    lam: np.ndarray


def eigenchannel_panel(X: np.ndarray, y: np.ndarray, k: int, *, eta: float | None = None) -> ChannelPanel:
    """GD ``w+ = w - eta (H w - X^T y)`` from ``w_0 = 0`` in the eigenbasis of ``H = X^T X`` (§8.1b).

    ``eta`` defaults to ``2/(lambda_min + lambda_max)``. The iterates are the Richardson iterates of
    ``H w = X^T y`` with preconditioner ``eta I`` (:func:`iclcore.lsq.iterates.richardson_iterates`,
    the package's one GD/Richardson solver); ``predicted`` is the closed form
    ``(1 - eta lambda_i)^{2j} (q_i^T e_0)^2``, compared with them in the tests.
    """
    X, y = finite_array(X, "X"), finite_array(y, "y")
    if X.ndim != 2 or y.shape != X.shape[:1]:
        raise ValueError(f"X, y: expected shapes (n, d) and (n,), got {X.shape} and {y.shape}")
    k = positive_int(k, "k", minimum=0)
    H = X.T @ X
    lam, Q = np.linalg.eigh(H)
    eta = 2.0 / (lam[0] + lam[-1]) if eta is None else float(finite_array(eta, "eta"))
    wls = np.linalg.lstsq(X, y, rcond=None)[0]
    E = richardson_iterates(eta * np.eye(H.shape[0]), H, X.T @ y, L=k)[0] - wls
    C = (E @ Q) ** 2
    fac = (1 - eta * lam) ** 2
    pred = C[0] * fac[None] ** np.arange(k + 1)[:, None]
    return ChannelPanel(C, pred, fac, eta, lam)


def compounding(rho2: np.ndarray, ks: tuple[int, ...] = (1, 2, 3, 5, 10)) -> np.ndarray:
    """``(rho^2)^k`` for each ``k`` in ``ks``: shape ``(len(ks), len(rho2))`` (§6, §8.1c)."""
    rho2 = finite_array(rho2, "rho2")
    if np.any((rho2 < 0) | (rho2 > 1)):
        raise ValueError("rho2: expected values in [0, 1]")
    return rho2[None, :] ** np.asarray(ks)[:, None]
