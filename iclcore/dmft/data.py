"""Data of the reduced-Γ theory (Bordelon, Letey, Pehlevan): power-law covariance and task
spectra under the source/capacity conditions, and the Marchenko–Pastur quadrature rule of
``Σ̂ = XᵀX/P``. Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import numpy as np

from iclcore.spectra.mp import mp_quadrature
from iclcore.validation import (
    check_depth,
    positive_float,
    positive_int,
)

__all__ = [
    "power_law_spectrum",
    "mp_rule",
]


# --------------------------------------------------------------------------------------------------
# spectra
# --------------------------------------------------------------------------------------------------


def power_law_spectrum(D: int, nu: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Power-law covariance and task spectra obeying the source/capacity conditions.

    ``λ_k = k^{-ν}`` and ``ω_k λ_k = k^{-νβ-1} / Z`` for ``k = 1..D``, with ``Z = (1/D) Σ_k k^{-νβ-1}``
    so that ``tr ΩΛ = 1`` (the loss at ``Γ = 0``). Then ``Σ_{ℓ>k} λ_ℓ ω_ℓ ~ k^{-νβ}``
    (Bordelon et al. Eq. 17, read with ``ω_ℓ`` inside the sum, and Eq. 88).

    Returns
    -------
    lam, omega : numpy.ndarray, shape ``(D,)``
    """
    D = positive_int(D, "D")
    nu = positive_float(nu, "nu")
    beta = positive_float(beta, "beta")
    k = np.arange(1, D + 1, dtype=float)
    lam = k**-nu
    src = k ** (-nu * beta - 1.0)
    src /= src.mean()
    return lam, src / lam


def mp_rule(alpha: float, L: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes/weights for the spectrum of ``Σ̂ = XᵀX/P`` at ``P/D = α`` (atom included).

    A thin wrapper around :func:`iclcore.spectra.mp.mp_quadrature` with ``gamma = 1/α``. The rule is the
    Gauss rule of the Marchenko–Pastur law, exact for polynomials of degree ``2n - 1``; all ISO
    integrands of depth ``L`` are polynomials of degree ``<= 2L`` in ``λ``, so ``n = L + 8`` nodes make
    every ISO formula below exact up to rounding.
    """
    alpha = positive_float(alpha, "alpha")
    Lf = float(check_depth(L))
    return mp_quadrature(1.0 / alpha, int(Lf) + 8)
