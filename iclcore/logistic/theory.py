"""The paper's theory (Mainali & Teixeira §3, App. A.11-A.13): mode ODE (12), logistic
solution (13), loss (14), its limit, fixed point, timescales, half and cliff times. Functions
accept the empirical task variances ``c`` (default 1: the paper verbatim). Conventions in
:mod:`iclcore.logistic`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from iclcore.logistic.model import task_variances
from iclcore.validation import positive_float, positive_int, positive_spectrum

Array = NDArray[np.float64]

__all__ = [
    "s_infinity",
    "timescales",
    "paper_fixed_point",
    "paper_mode_rhs",
    "logistic_solution",
    "paper_loss",
    "paper_loss_infinity",
    "paper_initial_slope",
    "half_time",
    "paper_t_star",
    "cliff_time",
]


# --------------------------------------------------------------------------------------
# the paper's theory, §3 and App. A.11-A.13
# --------------------------------------------------------------------------------------


def s_infinity(s: ArrayLike, N: int) -> Array:
    """``s_alpha^inf = ((N + 1) s_alpha + Tr S) / N`` (after Eq. 10). Shape (d,)."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    return ((N + 1) * s + s.sum()) / N


def timescales(s: ArrayLike, eta: float, P: int, *, c: ArrayLike | None = None) -> Array:
    """``tau_alpha = 1 / (eta P c_alpha s_alpha^2)`` in epochs (after Eq. 12; ``c = 1`` is the paper)."""
    s = positive_spectrum(s, "s")
    eta = positive_float(eta, "eta")
    P = positive_float(P, "P")
    return 1.0 / (eta * P * task_variances(c, s.size) * s**2)


def paper_fixed_point(s: ArrayLike, N: int) -> Array:
    """Paper's fixed point ``a_alpha^inf = 1 / s_alpha^inf``, i.e. ``p2 q1 = [s_inf(S)]^{-1}`` (§3)."""
    return 1.0 / s_infinity(s, N)


def paper_mode_rhs(
    p: ArrayLike, q: ArrayLike, s: ArrayLike, *, N: int, eta: float, P: int, c: ArrayLike | None = None
) -> tuple[Array, Array]:
    """Right-hand side of ODEs (9)-(10) / mode form (12): ``tau dp/dt = q (1 - p q s_inf)``,
    ``tau dq/dt = p (1 - p q s_inf)``. Returns ``(dp/dt, dq/dt)``, shape (..., d)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    tau = timescales(s, eta, P, c=c)
    r = 1.0 - p * q * s_infinity(s, N)
    return q * r / tau, p * r / tau


def logistic_solution(
    t: ArrayLike, a0: ArrayLike, s: ArrayLike, *, N: int, eta: float, P: int, c: ArrayLike | None = None
) -> Array:
    """Logistic solution Eq. (13): ``a(t) = a_inf a0 / (a0 + (a_inf - a0) exp(-2t/tau))``.

    ``t`` (T,) in epochs, ``a0`` scalar or (d,); returns (T, d). Valid for ``p(0) = q(0)``."""
    t = np.asarray(t, dtype=float)
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    if np.any(a0 <= 0):
        raise ValueError("a0: the logistic solution needs a_alpha(0) > 0")
    ainf = paper_fixed_point(s, N)
    tau = timescales(s, eta, P, c=c)
    return ainf * a0 / (a0 + (ainf - a0) * np.exp(-2.0 * t[..., None] / tau))


def paper_loss(a: ArrayLike, s: ArrayLike, N: int, *, c: ArrayLike | None = None) -> Array:
    """Expected loss Eq. (14)/(A110): ``1/2 sum_a c_a s_a (s_a a_a^2 / a_inf - 2 s_a a_a + 1)``.

    ``a`` (..., d); ``c = 1`` is the paper verbatim. Returns shape (...)."""
    s = positive_spectrum(s, "s")
    a = np.asarray(a, dtype=float)
    c = task_variances(c, s.size)
    return 0.5 * np.sum(c * s * (s * s_infinity(s, N) * a**2 - 2 * s * a + 1.0), axis=-1)


def paper_loss_infinity(s: ArrayLike, N: int) -> float:
    """Converged loss (A114): ``L(inf) = 1/2 sum_a s_a (s_a + Tr S) / ((N + 1) s_a + Tr S)``."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    return float(0.5 * np.sum(s * (s + s.sum()) / ((N + 1) * s + s.sum())))


def paper_initial_slope(a0: ArrayLike, s: ArrayLike, N: int, *, eta: float, P: int) -> float:
    """Initial slope (A115): ``dL/dt(0) = -2 sum_a P eta s_a^4 a0 ((a0 - a_inf)/a_inf)^2``."""
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    ainf = paper_fixed_point(s, N)
    return float(-2.0 * np.sum(P * eta * s**4 * a0 * ((a0 - ainf) / ainf) ** 2))


def half_time(a0: ArrayLike, s: ArrayLike, N: int, *, eta: float, P: int, c: ArrayLike | None = None) -> Array:
    """Half-saturation time of (13): ``a(t_half) = a_inf / 2``,
    ``t_half = (tau/2) ln((a_inf - a0) / a0)`` (epochs), the inflection of the logistic."""
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    ainf = paper_fixed_point(s, N)
    if np.any(a0 <= 0) or np.any(a0 >= ainf):
        raise ValueError("a0: half_time needs 0 < a0 < a_inf")
    return 0.5 * timescales(s, eta, P, c=c) * np.log((ainf - a0) / a0)


def paper_t_star(a0: ArrayLike, s: ArrayLike, N: int, *, eta: float, P: int) -> Array:
    """Paper's characteristic time (after Eq. 13), ``t* = (tau/2) log(1/(s_inf eps))`` with
    the learning rate for the paper's ``lambda`` and ``eps = a0`` (the initial product)."""
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    if np.any(a0 <= 0):
        raise ValueError("a0: must be > 0")
    return 0.5 * timescales(s, eta, P) * np.log(1.0 / (s_infinity(s, N) * a0))


def cliff_time(a0: ArrayLike, s: ArrayLike, N: int, *, eta: float, P: int, c: ArrayLike | None = None) -> Array:
    """Time of the fastest loss decrease of mode alpha under (12)-(14): ``a = a_inf/3``,
    ``t_cliff = t_half - (tau/2) ln 2``."""
    return half_time(a0, s, N, eta=eta, P=P, c=c) - 0.5 * timescales(s, eta, P, c=c) * np.log(2.0)
