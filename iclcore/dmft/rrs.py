"""RRS setting of the reduced-Γ model at ``P = ∞``, ``N = D`` (Bordelon et al. §3.3, Result 6,
Eqs. 13, 94, 98): loss, gradient, optimum and gradient flow. Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar

from iclcore.validation import (
    check_depth,
    finite_array,
    nondecreasing_times,
    spectrum_pair,
)

__all__ = [
    "rrs_loss",
    "rrs_loss_grad",
    "rrs_optimum",
    "rrs_gradient_flow",
    "rrs_time_of_gamma",
]


# --------------------------------------------------------------------------------------------------
# RRS setting at P = ∞, N = D (Bordelon et al. §3.3, Result 6, Eqs. 13, 94, 98)
# --------------------------------------------------------------------------------------------------


def rrs_loss(gamma: np.ndarray | float, lam: np.ndarray, omega: np.ndarray, *, L: int | float) -> np.ndarray:
    """RRS loss of ``Γ = γI`` at ``α = ∞`` (Eq. 98): ``tr ΩΛ (I - γΛ/L)^{2L}`` (``exp(-2γΛ)`` for L = inf).

    Exact at every finite ``D``: the Haar rotation cancels for isotropic ``Γ``.
    Returns an array of the shape of ``gamma``.
    """
    lam, omega = spectrum_pair(lam, omega)
    g = finite_array(gamma, "gamma")[..., None]
    Lf = float(check_depth(L, allow_inf=True))
    fac = np.exp(-2.0 * g * lam) if math.isinf(Lf) else (1.0 - g * lam / Lf) ** (2 * int(Lf))
    return (omega * lam * fac).mean(axis=-1)


def rrs_loss_grad(gamma: np.ndarray | float, lam: np.ndarray, omega: np.ndarray, *, L: int | float) -> np.ndarray:
    """``d rrs_loss / dγ = -2 tr ΩΛ² (I - γΛ/L)^{2L-1}``; the flow of Eq. 13 is ``-½`` of it."""
    lam, omega = spectrum_pair(lam, omega)
    g = finite_array(gamma, "gamma")[..., None]
    Lf = float(check_depth(L, allow_inf=True))
    fac = np.exp(-2.0 * g * lam) if math.isinf(Lf) else (1.0 - g * lam / Lf) ** (2 * int(Lf) - 1)
    return -2.0 * (omega * lam**2 * fac).mean(axis=-1)


def rrs_optimum(lam: np.ndarray, omega: np.ndarray, L: int) -> tuple[float, float]:
    """Minimiser of :func:`rrs_loss` over ``γ ∈ [0, 2L/λ_max]`` (the depth bottleneck, Eqs. 98–100).

    The loss is convex in γ (sum of even powers of affine functions), so bounded Brent finds the
    global minimum. Returns ``(gamma_star, loss_star)``.
    """
    lam, omega = spectrum_pair(lam, omega)
    Lf = check_depth(L)
    hi = 2.0 * Lf / lam.max()
    res = minimize_scalar(
        lambda x: float(rrs_loss(x, lam, omega, L=Lf)),
        bounds=(0.0, hi),
        method="bounded",
        options={"xatol": 1e-10 * hi},
    )
    return float(res.x), float(res.fun)


def rrs_gradient_flow(
    t: np.ndarray, lam: np.ndarray, omega: np.ndarray, *, L: int | float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient flow ``dγ/dt = tr ΛΩ Λ (I - γΛ/L)^{2L-1}`` from ``γ(0) = 0`` (Eq. 13; L = inf allowed).

    Solved in ``log t`` after the first time point for accuracy over many decades.

    Parameters
    ----------
    t : array_like, shape ``(T,)``, non-decreasing times ``>= 0``

    Returns
    -------
    gamma, loss : numpy.ndarray, shape ``(T,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    t = nondecreasing_times(t)
    Lf = float(check_depth(L, allow_inf=True))

    def rhs(_t, y):
        return [-0.5 * float(rrs_loss_grad(y[0], lam, omega, L=Lf))]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [0.0], t_eval=t, method="LSODA", rtol=1e-9, atol=1e-12)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(sol.message)
    gamma = sol.y[0]
    return gamma, rrs_loss(gamma, lam, omega, L=Lf)


def rrs_time_of_gamma(gamma: np.ndarray, lam: np.ndarray, omega: np.ndarray, *, L: int | float) -> np.ndarray:
    """Inverse of the RRS flow: ``t(γ) = ∫_0^γ dg / F(g)``, ``F(g) = tr ΩΛ²(I - gΛ/L)^{2L-1}`` (Eq. 13).

    The flow is one-dimensional and autonomous, so the trajectory is known parametrically:
    ``(t(γ), rrs_loss(γ))``. This avoids stiff ODE solves over many decades of ``t`` at large ``D``.
    Valid for ``γ`` below the first zero of ``F`` (the optimum; ``t → ∞`` there).
    Composite Gauss–Legendre (16 nodes) on geometric panels, accurate to ~1e-10 relative.

    Parameters
    ----------
    gamma : array_like, shape ``(G,)``, increasing, ``>= 0``

    Returns
    -------
    numpy.ndarray, shape ``(G,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    g = np.asarray(gamma, dtype=float)
    if g.ndim != 1 or g.size == 0 or np.any(g < 0) or np.any(np.diff(g) <= 0) or not np.all(np.isfinite(g)):
        raise ValueError("gamma: expected a 1-D increasing array of finite non-negative values")
    Lf = float(check_depth(L, allow_inf=True))
    F = lambda x: -0.5 * rrs_loss_grad(x, lam, omega, L=Lf)  # noqa: E731
    if np.any(F(g) <= 0):
        raise ValueError("gamma: values at or beyond the optimum, where the flow stops (t = inf)")
    x16, w16 = np.polynomial.legendre.leggauss(16)
    edges = np.concatenate([[0.0], g])
    out = np.empty(g.size)
    acc = 0.0
    for i in range(g.size):
        a, b = edges[i], edges[i + 1]
        # split each interval geometrically so that long intervals stay accurate
        n_sub = max(1, int(np.ceil(np.log2((b + 1e-300) / max(a, b * 1e-3, 1e-300)))) + 1)
        sub = np.linspace(a, b, n_sub + 1)
        for lo, hi in zip(sub[:-1], sub[1:]):
            xm, xr = 0.5 * (lo + hi), 0.5 * (hi - lo)
            acc += xr * float(np.sum(w16 / F(xm + xr * x16)))
        out[i] = acc
    return out
