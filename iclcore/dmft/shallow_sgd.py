"""Shallow SGD theory of the reduced-Γ model (Bordelon et al. App. C.1, Result 10) with the
corrected initial condition. Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.validation import (
    nonnegative_float,
    positive_float,
    positive_int,
)

__all__ = [
    "ShallowSGDTheory",
    "shallow_sgd_theory",
]


# --------------------------------------------------------------------------------------------------
# Shallow SGD theory (Bordelon et al. App. C.1, Result 10) with the corrected initial condition
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShallowSGDTheory:
    """Depth-1 online-SGD theory at step counts ``steps`` (Bordelon et al. Eqs. 72–79).

    Attributes
    ----------
    steps : numpy.ndarray, shape ``(T,)``
    C : relaxation ``(1/D)|Γ(t) - Γ*|²`` (Eq. 73), shape ``(T,)``
    param_error : ``(1/D)|Γ(t) - I|²`` — the quantity Eq. 64/78 calls "the ICL loss", shape ``(T,)``
    icl_loss : the population ICL loss ``1 + σ² - 2 trΓ + a₀ trΓᵀΓ = a₀ C + 1 + σ² - 1/a₀``, shape ``(T,)``
    a, b : coefficients of ``C(t+1) = a C(t) + b`` (Eq. 75)
    a0 : ``1 + (1+σ²)/α``
    """

    steps: np.ndarray
    C: np.ndarray
    param_error: np.ndarray
    icl_loss: np.ndarray
    a: float
    b: float
    a0: float


def shallow_sgd_theory(
    steps: np.ndarray,
    eta: float,
    alpha: float,
    *,
    kappa: float,
    tau: float,
    sigma: float = 0.0,
    paper_initial_condition: bool = False,
    D: int | None = None,
) -> ShallowSGDTheory:
    """Depth-1 reduced-Γ online SGD from ``Γ(0) = 0`` (Bordelon et al. Result 10, Eqs. 74–79).

    With ``a₀ = 1 + (1+σ²)/α``, ``a = (1-ηa₀)² + (η²/τ)(1+1/κ)a₀²``,
    ``b = (η²/τ)(1+1/κ)(1+σ²)/α``:

    ``C(t) = a^t C(0) + b (1-a^t)/(1-a)`` with ``C(0) = (1/D)|0 - Γ*|² = a₀^{-2}``. Eq. 79 as printed
    has ``C(0) = 1``; pass ``paper_initial_condition=True`` to reproduce it.

    ``param_error(t) = C(t) + 2(a₀-1)a₀^{-2}(1-ηa₀)^t + (a₀-1)²a₀^{-2}`` (Eq. 78) and
    ``icl_loss(t) = a₀ C(t) + 1 + σ² - 1/a₀``.

    ``D`` (optional) applies the exact finite-``D`` second moments of Wishart matrices,
    ``E Σ̂² = (1 + (D+1)/P) I`` and ``E Σ̂_*² = (1 + (D+1)/K) I``, i.e. ``α → αD/(D+1)`` and
    ``κ → κD/(D+1)``. The stationary level ``b/(1-a)`` amplifies such ``O(1/D)`` corrections by
    ``1/(1-a)``, so they matter at small ``τ``.

    Raises
    ------
    ValueError
        if ``a >= 1`` (the mean-square recursion diverges: step size ``eta`` too large for ``tau``).
    """
    steps = np.asarray(steps)
    if steps.ndim != 1 or not np.issubdtype(steps.dtype, np.integer) or np.any(steps < 0):
        raise ValueError("steps: expected a 1-D array of non-negative integers")
    eta = positive_float(eta, "eta")
    alpha = positive_float(alpha, "alpha")
    kappa = positive_float(kappa, "kappa")
    tau = positive_float(tau, "tau")
    sigma = nonnegative_float(sigma, "sigma")
    if D is not None:
        D = positive_int(D, "D")
        alpha, kappa = alpha * D / (D + 1.0), kappa * D / (D + 1.0)
    a0 = 1.0 + (1.0 + sigma**2) / alpha
    noise = eta**2 / tau * (1.0 + 1.0 / kappa)
    a = (1.0 - eta * a0) ** 2 + noise * a0**2
    b = noise * (a0 - 1.0)
    if a >= 1.0:
        raise ValueError(f"eta: step size {eta} gives a = {a:.3f} >= 1 (SGD second moment diverges) at tau = {tau}")
    C0 = 1.0 if paper_initial_condition else a0**-2
    at = a ** steps.astype(float)
    C = at * C0 + b * (1.0 - at) / (1.0 - a)
    mean_decay = (1.0 - eta * a0) ** steps.astype(float)
    param_error = C + 2.0 * (a0 - 1.0) / a0**2 * mean_decay + (a0 - 1.0) ** 2 / a0**2
    icl = a0 * C + 1.0 + sigma**2 - 1.0 / a0
    return ShallowSGDTheory(steps=steps, C=C, param_error=param_error, icl_loss=icl, a=a, b=b, a0=a0)
