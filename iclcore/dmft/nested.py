"""Nested deterministic equivalent of the width-``N`` model at finite context length ``P``
(Bordelon et al. §4, Result 7, Eq. 15; App. A Eqs. 33–40; App. F.3–F.4 Eqs. 101–110), the loss
landscape, its gradient flow and the Monte Carlo it is checked against. Notation and the
normalisation ``c = D/N`` are those of :mod:`iclcore.dmft`.

The model. ``M = B Σ̂`` with ``B = (D/N) U Uᵀ`` (``U`` a Haar ``D x N`` frame) and
``Σ̂ = Λ^{1/2} W Λ^{1/2}``, ``W = Zᵀ Z / P`` white Wishart (``Z`` of shape ``(P, D)``). The loss
``tr Ω p(M)ᵀ Λ p(M)``, ``p(x) = (1 - γ x/L)^L`` (Eq. 102), equals ``tr[T p(WK) p(WK)ᵀ]`` with
``K = Λ^{1/2} B Λ^{1/2}`` and ``T = ΩΛ`` (conjugate ``M`` by ``Λ^{1/2}``). Two free averages, nested:

1. over ``W`` at fixed ``K`` (App. A with fixed factor ``A = K``, rotated factor ``B = W``): the
   two-point deterministic equivalent ``tr[T R(z) R(z')ᵀ] ≃ (1 - Ψ_χχ) tr[T H H']`` with
   ``H = (z + ψ K)^{-1}`` and ``ψ = 1 - τ/α_P`` (the Marchenko–Pastur inverse τ-transform);
2. over ``U``: every trace left is ``tr[X f(K)]`` with ``f`` rational (partial fractions in ``K``), and
   ``(u + K)^{-1} ≃ (u + φΛ)^{-1}``, ``φ = (1 - τ/α_N)/(1 - τ)`` (the one-point equivalent of
   :func:`iclcore.dmft.width_de.width_psi`).

Both levels share one ``τ``, so the nested equations close on the effective ridge ``κ = z/(ψφ)``:

.. math::

    \\kappa\\,(1 - \\tau/\\alpha_P)(1 - \\tau/\\alpha_N) = z\\,(1 - \\tau), \\qquad
    \\tau = \\mathrm{tr}\\,\\Lambda(\\kappa + \\Lambda)^{-1},

the product rule of Eq. (110) in the book's normalisation (``α_N - τ`` there is ``α_N(1 - τ/α_N)`` here).
It is solved by a damped Newton iteration vectorised over all contour nodes at once (no loop over the
frequency grid), after a radial continuation from far out where ``κ ≈ z``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.dmft.width_mc import width_landscape_mc
from iclcore.linalg import haar_orthogonal
from iclcore.validation import as_generator, check_depth, nonnegative_grid, positive_float, positive_int, spectrum_pair

__all__ = [
    "NestedConvergenceError",
    "nested_ratios",
    "nested_kappa",
    "NestedKernel",
    "nested_kernel",
    "nested_loss",
    "nested_loss_grad",
    "nested_loss_de",
    "nested_min_loss",
    "nested_flow_loss",
    "nested_spectral_bound",
    "nested_landscape_draws",
    "ChinchillaFit",
    "fit_chinchilla",
    "chinchilla_drift",
    "compute_optimal_frontier",
]


class NestedConvergenceError(RuntimeError):
    """The nested Newton iteration did not reach its tolerance; the message is one line with the residual."""


def nested_ratios(D: int, N: int, P: int | None) -> tuple[float, float]:
    """Validated ``(α_N, 1/α_P) = (N/D, D/P)``; ``P = None`` is the infinite context (``1/α_P = 0``)."""
    D = positive_int(D, "D")
    N = positive_int(N, "N", maximum=D)
    if P is None:
        return N / D, 0.0
    P = positive_int(P, "P")
    return N / D, D / P


def nested_kappa(
    z: np.ndarray,
    lam: np.ndarray,
    alpha_N: float,
    *,
    inv_alpha_P: float,
    tol: float = 1e-11,
    max_iter: int = 100,
    n_cont: int = 5,
    center: complex | np.ndarray = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Effective ridge ``κ(z)`` and ``τ(z)`` of the nested equations (module docstring; Eq. 110).

    Solves ``f(κ) = κ (1 - τ/α_P)(1 - τ/α_N) - z (1 - τ) = 0``, ``τ = mean(λ/(κ + λ))``, for every
    ``z`` at once: a radial continuation ``z_s = center + s (z - center)`` with ``s`` from ``2^{n_cont}``
    down to 1 (``κ ≈ z`` far out selects the physical branch), at most four damped Newton steps per
    stage (to a relative residual ``1e-4``), then Newton to the tolerance at ``s = 1``.

    Parameters
    ----------
    z : complex array ``(n,)``, ``z = iω`` (the resolvent is ``(z + M)^{-1}``), off the negative support
    lam : array ``(D,)``, eigenvalues of ``Λ``
    alpha_N : float in ``(0, 1]``; inv_alpha_P : float ``>= 0`` (``D/P``; 0 for ``P = ∞``)
    tol : float, relative residual ``|f| / (|κ| + |z|)`` required at every node
    center : complex or complex array ``(n,)``, the centre(s) of the radial continuation

    Returns
    -------
    kappa, tau : complex arrays ``(n,)``

    Raises
    ------
    NestedConvergenceError
        One line with the largest residual if the iteration does not converge.
    """
    lam = np.asarray(lam, dtype=float)
    z = np.asarray(z, dtype=complex).ravel()
    if not (0 < alpha_N <= 1):
        raise ValueError(f"alpha_N: width ratio N/D must be in (0, 1], got {alpha_N}")
    inv_alpha_P = float(inv_alpha_P)
    if not (np.isfinite(inv_alpha_P) and inv_alpha_P >= 0):
        raise ValueError(f"inv_alpha_P: expected D/P >= 0 (0 for infinite context), got {inv_alpha_P}")
    tol = positive_float(tol, "tol")
    max_iter = positive_int(max_iter, "max_iter")
    n_cont = positive_int(n_cont, "n_cont", minimum=0)
    iaN = 1.0 / alpha_N

    wl = lam / lam.size

    def f_df(k: np.ndarray, zz: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inv = 1.0 / (k[:, None] + lam[None, :])
        w_inv = inv * wl  # element-wise reductions: a BLAS matrix-vector product here is slower under threads
        tau = w_inv.sum(axis=1)
        dtau = -(w_inv * inv).sum(axis=1)
        a, b = 1.0 - tau * inv_alpha_P, 1.0 - tau * iaN
        f = k * a * b - zz * (1.0 - tau)
        df = a * b - k * dtau * (inv_alpha_P * b + iaN * a) + zz * dtau
        return f, df, tau

    def newton(k: np.ndarray, zz: np.ndarray, steps: int, goal: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        f, df, tau = f_df(k, zz)
        for _ in range(steps):
            res = np.abs(f) / (np.abs(k) + np.abs(zz))
            if res.max() < goal:
                break
            step = f / df
            lam_s = np.ones(k.size)
            for _ in range(8):  # damping, element by element
                kn = k - lam_s * step
                fn, dfn, tn = f_df(kn, zz)
                worse = np.abs(fn) > np.abs(f)
                if not worse.any():
                    break
                lam_s = np.where(worse, 0.5 * lam_s, lam_s)
            k, f, df, tau = kn, fn, dfn, tn
        return k, f, tau

    center = np.broadcast_to(np.asarray(center, dtype=complex), z.shape)
    k = center + 2.0**n_cont * (z - center)  # far out, kappa ~ z
    for j in range(n_cont, -1, -1):
        zz = center + 2.0**j * (z - center)
        k, f, tau = newton(k, zz, 4 if j > 0 else max_iter, 1e-4 if j > 0 else tol)
    res = np.abs(f) / (np.abs(k) + np.abs(z))
    if not np.all(np.isfinite(res)) or res.max() >= tol:
        i = int(np.nanargmax(np.where(np.isfinite(res), res, np.inf)))
        raise NestedConvergenceError(
            f"nested_kappa: no convergence after {max_iter} Newton steps: residual {res[i]:.2e} > tol {tol:.0e} "
            f"at z = {z[i]:.4g} (alpha_N = {alpha_N:g}, D/P = {inv_alpha_P:g})"
        )
    return k, tau


def _circle(center: float, radius: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and ``dζ/(2πi)`` trapezoid weights of a counter-clockwise circle."""
    th = 2 * np.pi * (np.arange(n) + 0.5) / n
    e = np.exp(1j * th)
    return center + radius * e, radius * e / n


@dataclass(frozen=True)
class NestedKernel:
    """The nested two-point function ``F(ζ, ζ')`` on a fixed pair of circles enclosing ``[0, k_max]``.

    The loss is ``L(γ) = Re Σ_ij w_i p(ζ_i) F_ij w'_j p(ζ'_j)`` (Eq. 15 / 103 with ``iω = -ζ``) for
    every ``γ`` and depth ``L`` with ``γ k_max <= 2L`` (:func:`nested_loss`).

    Attributes
    ----------
    zeta1, w1 : complex arrays ``(n1,)``; zeta2, w2 : ``(n2,)``
        Nodes and weights of the two circles (centre ``k_max/2``, radii ``0.55`` and ``0.58 k_max``).
    F : complex array ``(n1, n2)``
    k_max : float
    N, P, D : int (``P`` None for the infinite context)
    total : float
        ``tr ΩΛ`` (the loss at ``γ = 0``).
    """

    zeta1: np.ndarray
    w1: np.ndarray
    zeta2: np.ndarray
    w2: np.ndarray
    F: np.ndarray
    k_max: float
    N: int
    P: int | None
    D: int
    total: float


def nested_kernel(
    lam: np.ndarray,
    omega: np.ndarray,
    N: int,
    *,
    P: int | None,
    k_max: float,
    n_nodes: int = 256,
    tol: float = 1e-11,
    grow: int = 6,
    mass_tol: float = 1e-6,
) -> NestedKernel:
    """Solve the nested equations on two circles and assemble the two-point function (Eqs. 38–40).

    Per node (``z = -ζ``): ``κ, τ`` from :func:`nested_kappa`; ``ψ = 1 - τ/α_P``, ``u = z/ψ``,
    ``φ = u/κ``; one-point traces ``G_X(u) = tr[X (u+K)^{-1}] ≃ mean(X/(κ+λ))/φ``;
    ``S = Σ_vχ = τ/ψ``, ``s = Σ̂_vχ = (1-τ)/S``. Per pair of nodes (partial fractions in ``K``):
    ``tr[T H H'] = (G_T(u) - G_T(u'))/((u' - u) ψψ')``,
    ``𝒜 = tr[K² H H'] = (1 + (u² G_I(u) - u'² G_I(u'))/(u' - u))/(ψψ')``,
    ``ℬ = tr[(s+W)^{-1}(s'+W)^{-1}] = (S - S')/(s' - s)`` (as ``tr (s+W)^{-1} = S``),
    ``Σ_vv = 𝒜/(1 - [1/(SS') - 1/ℬ]𝒜)`` (Eq. 39 with the source ``I``), ``Ψ_χχ = Σ_vv (1/ℬ - 1/(SS'))``
    (the corrected relation after Eq. 39, erratum 'Appendix A'), and ``F = (1 - Ψ_χχ) tr[T H H']`` (Eq. 40).

    Parameters
    ----------
    lam, omega : arrays ``(D,)``
    N : int in ``[1, D]``; P : int ``>= 1`` or None (``P = ∞``)
    k_max : float
        First guess of an upper bound of the spectrum of ``M`` (e.g. :func:`nested_spectral_bound`).
        The deterministic equivalent's support can reach well above the top eigenvalue of a draw at
        small ``N`` (it is the ``N → ∞`` limit at fixed ``N/D``), so the circles are checked: at ``γ = 0``
        the loss must be ``tr ΩΛ`` (all the spectral mass inside), to ``mass_tol`` relative; otherwise
        ``k_max`` grows by 1.25, at most ``grow`` times.
    n_nodes : int ``>= 32``, nodes of the first circle (the second has ``n_nodes + 7``)

    Raises
    ------
    NestedConvergenceError
        One line with the residual if Newton fails, or with the mass error if no circle encloses the support.
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    nested_ratios(D, N, P)
    k_max = positive_float(k_max, "k_max")
    n_nodes = positive_int(n_nodes, "n_nodes", minimum=32)
    grow = positive_int(grow, "grow", minimum=0)
    mass_tol = positive_float(mass_tol, "mass_tol")
    for _ in range(grow + 1):
        ker = _kernel_on_circles(lam, omega, N, P, k_max, n_nodes, tol)
        mass = float(np.real(ker.w1 @ ker.F @ ker.w2))
        err = abs(mass / ker.total - 1.0)
        if err < mass_tol:
            return ker
        k_max *= 1.25
    raise NestedConvergenceError(
        f"nested_kernel: the circles do not enclose the spectrum: relative mass error {err:.1e} > {mass_tol:.0e} "
        f"at k_max = {k_max / 1.25:.4g} (N = {N}, P = {P})"
    )


def _kernel_on_circles(
    lam: np.ndarray, omega: np.ndarray, N: int, P: int | None, k_max: float, n_nodes: int, tol: float
) -> NestedKernel:
    """:func:`nested_kernel` on the circles of one ``k_max`` (no mass check)."""
    D = lam.size
    aN, iaP = nested_ratios(D, N, P)
    c = 0.5 * k_max
    z1, w1 = _circle(c, 0.55 * k_max, n_nodes)
    z2, w2 = _circle(c, 0.58 * k_max, n_nodes + 7)
    zeta = np.concatenate([z1, z2])
    z = -zeta
    kap, tau = nested_kappa(z, lam, aN, inv_alpha_P=iaP, tol=tol, center=-c)
    psi = 1.0 - tau * iaP
    u = z / psi
    phi = u / kap
    T = omega * lam
    inv = 1.0 / (kap[:, None] + lam[None, :])
    GI = inv.mean(axis=1) / phi
    GT = (inv * T[None, :]).mean(axis=1) / phi
    S = tau / psi
    s = (1.0 - tau) / S
    n1 = z1.size
    sl1, sl2 = slice(0, n1), slice(n1, None)
    du = u[None, sl2] - u[sl1, None]
    pp = psi[sl1, None] * psi[None, sl2]
    trTHH = (GT[sl1, None] - GT[None, sl2]) / du / pp
    calA = (1.0 + (u[sl1, None] ** 2 * GI[sl1, None] - u[None, sl2] ** 2 * GI[None, sl2]) / du) / pp
    SS = S[sl1, None] * S[None, sl2]
    if iaP == 0.0:
        Psi = np.zeros_like(trTHH)  # W = I: calB = SS exactly
    else:
        calB = (S[sl1, None] - S[None, sl2]) / (s[None, sl2] - s[sl1, None])
        Svv = calA / (1.0 - (1.0 / SS - 1.0 / calB) * calA)
        Psi = Svv * (1.0 / calB - 1.0 / SS)
    F = (1.0 - Psi) * trTHH
    if not np.all(np.isfinite(F)):
        raise NestedConvergenceError(
            "nested_kernel: non-finite two-point function (coinciding nodes or k_max too small)"
        )
    return NestedKernel(z1, w1, z2, w2, F, float(k_max), int(N), None if P is None else int(P), D, float(np.mean(T)))


def _poly(gam: np.ndarray, zeta: np.ndarray, L: int, deriv: bool) -> np.ndarray:
    """``p(ζ) = (1 - γζ/L)^L`` (or ``∂p/∂γ = -ζ (1 - γζ/L)^{L-1}``) on the grid ``(n_g, n)``."""
    x = 1.0 - gam[:, None] * zeta[None, :] / L
    return -zeta[None, :] * x ** (L - 1) if deriv else x**L


def _gamma_depth(gammas: object, kernel: NestedKernel, L: object) -> tuple[np.ndarray, bool, int]:
    Lf = float(check_depth(L, allow_inf=True))
    if np.isinf(Lf):
        raise ValueError("L: the nested contour formula needs a finite depth")
    g, scalar = nonnegative_grid(gammas, "gammas")
    if np.any(g * kernel.k_max > 2.0 * Lf * (1 + 1e-12)):
        raise ValueError(
            f"gammas: expected gamma <= 2L/k_max = {2 * Lf / kernel.k_max:.4g} (stability window of the top mode)"
        )
    return g, scalar, int(Lf)


def nested_loss(gammas: np.ndarray | float, kernel: NestedKernel, L: int) -> np.ndarray:
    """Deterministic equivalent of the loss ``L(γ; N, L, P)`` (Eq. 15) for ``γ`` in ``[0, 2L/k_max]``.

    Vectorised over ``γ`` and over the nodes: two matrix products. Returns the shape of ``gammas``.
    """
    g, scalar, L = _gamma_depth(gammas, kernel, L)
    q1 = _poly(g, kernel.zeta1, L, False) * kernel.w1
    q2 = _poly(g, kernel.zeta2, L, False) * kernel.w2
    out = np.real(np.sum((q1 @ kernel.F) * q2, axis=1))
    _check_cancellation(out, np.abs(q1) @ np.abs(kernel.F), np.abs(q2), g, L)
    return out[0] if scalar else out


def _check_cancellation(out: np.ndarray, a: np.ndarray, b: np.ndarray, g: np.ndarray, L: int) -> None:
    """Raise if rounding in the double sum (``eps · Σ|q||F||q'|``) exceeds ``10^-6`` of the loss."""
    bound = 1e-15 * np.sum(a * b, axis=1)
    bad = bound > 1e-6 * np.abs(out)
    if np.any(bad):
        i = int(np.argmax(bound / np.abs(out)))
        raise NestedConvergenceError(
            f"nested_loss: rounding bound {bound[i] / abs(out[i]):.1e} of the loss at L = {L}, gamma = {g[i]:.4g} "
            "(the contour polynomial is too large: depth too high for these circles)"
        )


def nested_loss_grad(gammas: np.ndarray | float, kernel: NestedKernel, L: int) -> np.ndarray:
    """``dL/dγ`` of :func:`nested_loss` (the two factors of Eq. 15 are differentiated; ``F`` is symmetric in
    the roles of ``ζ`` and ``ζ'`` only up to the node sets, so both terms are computed)."""
    g, scalar, L = _gamma_depth(gammas, kernel, L)
    q1 = _poly(g, kernel.zeta1, L, False) * kernel.w1
    q2 = _poly(g, kernel.zeta2, L, False) * kernel.w2
    d1 = _poly(g, kernel.zeta1, L, True) * kernel.w1
    d2 = _poly(g, kernel.zeta2, L, True) * kernel.w2
    out = np.real(np.sum((d1 @ kernel.F) * q2, axis=1) + np.sum((q1 @ kernel.F) * d2, axis=1))
    return out[0] if scalar else out


def nested_loss_de(
    gammas: np.ndarray | float,
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    N: int,
    P: int | None,
    L: int,
    k_max: float,
    n_nodes: int = 256,
) -> np.ndarray:
    """:func:`nested_loss` of a freshly solved :func:`nested_kernel` (one call, one ``(N, P)``)."""
    return nested_loss(gammas, nested_kernel(lam, omega, N, P=P, k_max=k_max, n_nodes=n_nodes), L)


def nested_min_loss(kernel: NestedKernel, L: int, n_grid: int = 400) -> tuple[float, float]:
    """``(γ*, L(γ*))``: the first zero of ``dL/dγ`` in ``(0, 2L/k_max]`` (bisection on the grid, then
    20 secant/bisection refinements); the right end if the loss still decreases there."""
    Lf = float(check_depth(L))
    n_grid = positive_int(n_grid, "n_grid", minimum=8)
    g = np.linspace(0.0, 2.0 * Lf / kernel.k_max, n_grid)[1:]
    d = nested_loss_grad(g, kernel, int(Lf))
    pos = np.nonzero(d > 0)[0]
    if pos.size == 0:
        return float(g[-1]), float(nested_loss(g[-1], kernel, int(Lf)))
    j = pos[0]
    lo, hi = (g[j - 1] if j > 0 else 0.0), g[j]
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if nested_loss_grad(mid, kernel, int(Lf)) > 0:
            hi = mid
        else:
            lo = mid
    gs = 0.5 * (lo + hi)
    return float(gs), float(nested_loss(gs, kernel, int(Lf)))


def nested_flow_loss(t: np.ndarray, kernel: NestedKernel, L: int, *, n_grid: int = 300) -> np.ndarray:
    """Loss along the gradient flow ``dγ/dt = -½ dL/dγ`` from ``γ(0) = 0`` (theory time of :mod:`iclcore.dmft`).

    The flow is monotone up to the minimiser ``γ*``, so ``t(γ) = 2 ∫_0^γ dγ'/(-L'(γ'))``. The integral is
    taken by the trapezoid rule in ``y = log γ`` on ``[10^-6 γ*, γ*/2]`` (``n_grid/2`` points; the first
    ``10^-6 γ*`` by its left-end value) and in ``x = -log(1 - γ/γ*)`` on ``[log 2, 15]`` (``n_grid/2``
    points), where both integrands are smooth; ``γ(t)`` is then interpolated in those variables. Beyond the
    last grid time the loss is that at ``γ*(1 - e^{-15})`` (within ``10^-13`` relative of ``L(γ*)``).

    Parameters
    ----------
    t : array ``(n_t,)`` of times ``>= 0``
    """
    t, scalar = nonnegative_grid(t, "t")
    n_grid = positive_int(n_grid, "n_grid", minimum=16)
    gs, _ = nested_min_loss(kernel, L)
    h = n_grid // 2
    y = np.linspace(np.log(1e-6 * gs), np.log(0.5 * gs), h)
    x = np.linspace(np.log(2.0), 15.0, h)[1:]
    gam = np.concatenate([np.exp(y), gs * (1.0 - np.exp(-x))])
    dL = nested_loss_grad(gam, kernel, L)
    if np.any(dL[:-1] >= 0):
        raise NestedConvergenceError(
            f"nested_flow_loss: dL/dgamma >= 0 below the minimiser at L = {L} (landscape not resolved; max {dL[:-1].max():.1e})"
        )
    dL[-1] = min(dL[-1], dL[-2] * np.exp(-(x[-1] - x[-2])))
    fy = 2.0 * gam[:h] / (-dL[:h])  # dt/dy
    fx = 2.0 * (gs - gam[h:]) / (-dL[h:])  # dt/dx
    t0 = 2.0 * gam[0] / (-dL[0])
    ty = t0 + np.concatenate([[0.0], np.cumsum(0.5 * (fy[1:] + fy[:-1]) * np.diff(y))])
    # junction: from gamma*/2 (x = log 2) to the first x node
    xx = np.concatenate([[np.log(2.0)], x])
    fxx = np.concatenate([[2.0 * (gs - gam[h - 1]) / (-dL[h - 1])], fx])
    tx = ty[-1] + np.cumsum(0.5 * (fxx[1:] + fxx[:-1]) * np.diff(xx))
    gg = np.concatenate([[0.0], gam])
    # interpolate gamma(t) in log gamma below gamma*/2 and in x above
    out_g = np.empty_like(t)
    low = t <= ty[-1]
    out_g[low] = np.exp(np.interp(t[low], ty, y, left=-np.inf))
    out_g[low & (t < t0)] = gg[1] * t[low & (t < t0)] / t0
    hi = ~low
    out_g[hi] = gs * (1.0 - np.exp(-np.interp(t[hi], np.concatenate([[ty[-1]], tx]), xx)))
    out = nested_loss(out_g, kernel, L)
    return out[0] if scalar else out


def nested_spectral_bound(
    lam: np.ndarray, N: int, P: int | None, *, rng: np.random.Generator, draws: int = 2, margin: float = 1.25
) -> float:
    """``margin`` times the largest top eigenvalue of ``M = B Σ̂`` over ``draws`` Monte Carlo draws.

    The non-zero spectrum of ``M`` is that of the ``N x N`` matrix ``(D/N) Uᵀ Σ̂ U``, so each draw costs
    ``O(P D N)``. The margin covers the fluctuation of the top eigenvalue between draws.
    """
    lam = np.asarray(lam, dtype=float)
    D = lam.size
    nested_ratios(D, N, P)
    rng = as_generator(rng)
    draws = positive_int(draws, "draws")
    margin = positive_float(margin, "margin")
    if margin <= 1:
        raise ValueError(f"margin: expected a factor > 1, got {margin}")
    top = 0.0
    for _ in range(draws):
        U = np.eye(D) if N == D else haar_orthogonal(D, rng, columns=N)
        if P is None:
            S = (U.T * lam) @ U
        else:
            ZU = (rng.standard_normal((P, D)) * np.sqrt(lam)) @ U
            S = ZU.T @ ZU / P
        top = max(top, float(np.linalg.eigvalsh((D / N) * S)[-1]))
    return margin * top


def nested_landscape_draws(
    gammas: np.ndarray,
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    N: int,
    P: int | None,
    L: int,
    rng: np.random.Generator,
    n_draws: int,
) -> np.ndarray:
    """Monte Carlo of the same loss, one row per independent draw of ``(U, Z)``: shape ``(n_draws, n_g)``.

    Each row is :func:`iclcore.dmft.width_mc.width_landscape_mc` with one draw (exact loss of one
    projection and one context covariance, averaged over the task vector in closed form); the mean over
    rows is the Monte Carlo estimate and their spread its standard error.
    """
    n_draws = positive_int(n_draws, "n_draws", minimum=2)
    rng = as_generator(rng)
    return np.stack(
        [width_landscape_mc(gammas, lam, omega, N=N, L=L, rng=rng, P=P, n_draws=1)[0] for _ in range(n_draws)]
    )


# --------------------------------------------------------------------------------------------
# Result 8: the separable (Chinchilla) form and the compute-optimal frontier
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChinchillaFit:
    """Least-squares fit of ``log L = log Σ_r c_r x_r^{-a_r}`` over resources ``r = (t, N, L, P)`` (Eq. 18).

    Attributes
    ----------
    exponents, exponent_se, coefficients : arrays ``(4,)`` in the order ``(t, N, L, P)``
        ``exponent_se`` from the Gauss–Newton covariance scaled by the residual variance.
    rms_log : float, root-mean-square residual of ``log L`` (how far the loss is from the separable form)
    """

    exponents: np.ndarray
    exponent_se: np.ndarray
    coefficients: np.ndarray
    rms_log: float


def _resource_table(x: object, loss: object) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(loss, dtype=float)
    if x.ndim != 2 or x.shape[1] != 4 or x.shape[0] != y.size or y.ndim != 1:
        raise ValueError(
            f"x: expected shape (n, 4) for the resources (t, N, L, P) of n losses, got {x.shape} and loss {y.shape}"
        )
    if x.shape[0] < 9:
        raise ValueError(f"x: the 8-parameter fit needs at least 9 points, got {x.shape[0]}")
    if not (np.all(np.isfinite(x)) and np.all(x > 0)):
        raise ValueError("x: resources must be finite and positive")
    if not (np.all(np.isfinite(y)) and np.all(y > 0)):
        raise ValueError("loss: expected finite positive losses")
    return x, y


def fit_chinchilla(x: np.ndarray, loss: np.ndarray, a0: float = 0.5) -> ChinchillaFit:
    """Fit Bordelon et al. Eq. (18), ``L ≈ c_t t^{-a_t} + c_N N^{-a_N} + c_L L^{-a_L} + c_P P^{-a_P}``.

    Nonlinear least squares on ``log L`` (``scipy.optimize.least_squares``), started from every exponent
    equal to ``a0`` and every coefficient equal to the median loss / 4 (a start that favours no answer).

    Parameters
    ----------
    x : array ``(n, 4)``, the resources ``(t, N, L, P)`` of each sample (``n >= 9``), positive
    loss : array ``(n,)``, positive
    a0 : float, starting exponent
    """
    from scipy.optimize import least_squares

    x, y = _resource_table(x, loss)
    a0 = positive_float(a0, "a0")
    lx, ly = np.log(x), np.log(y)

    def resid(th: np.ndarray) -> np.ndarray:
        terms = th[None, :4] - th[None, 4:] * lx
        m = terms.max(axis=1)
        return m + np.log(np.exp(terms - m[:, None]).sum(axis=1)) - ly

    th0 = np.concatenate([np.full(4, np.log(np.median(y) / 4.0)), np.full(4, a0)])
    r = least_squares(resid, th0, method="lm", max_nfev=20000)
    if not r.success:
        raise NestedConvergenceError(f"fit_chinchilla: least squares did not converge ({r.message}; cost {r.cost:.2e})")
    dof = max(y.size - 8, 1)
    s2 = float(np.sum(r.fun**2) / dof)
    cov = np.linalg.pinv(r.jac.T @ r.jac) * s2
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return ChinchillaFit(r.x[4:].copy(), se[4:], np.exp(r.x[:4]), float(np.sqrt(np.mean(r.fun**2))))


def chinchilla_drift(x: np.ndarray, loss: np.ndarray, a0: float = 0.5) -> np.ndarray:
    """Pre-asymptotic drift of each fitted exponent of :func:`fit_chinchilla`: shape ``(4,)``.

    For resource ``r``, the grid values of ``x_r`` are split into their lower and upper halves (the middle
    value in both when their number is odd) and the full four-term model is refitted on each half with the
    other resources unchanged; the drift is ``|a_r(lower) - a_r(upper)|`` (the two-halves rule of
    :func:`iclcore.stats.fit_power_law_drift`, applied to a joint fit).
    """
    x, y = _resource_table(x, loss)
    out = np.empty(4)
    for j in range(4):
        u = np.unique(x[:, j])
        if u.size < 3:
            raise ValueError(f"x: resource {j} needs at least 3 distinct values for a drift, got {u.size}")
        h = u.size // 2
        lo = np.isin(x[:, j], u[: h + u.size % 2])
        hi = np.isin(x[:, j], u[h:])
        out[j] = abs(fit_chinchilla(x[lo], y[lo], a0).exponents[j] - fit_chinchilla(x[hi], y[hi], a0).exponents[j])
    return out


def compute_optimal_frontier(
    compute: np.ndarray, widths: np.ndarray, depths: np.ndarray, *, loss: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minimum of the loss over shapes ``(N, L)`` at fixed compute ``C = t N² L`` (Result 8).

    ``loss[c, i, j]`` is the loss at width ``widths[i]``, depth ``depths[j]`` and time ``C_c/(N_i² L_j)``.
    The discrete minimiser is refined by a quadratic fit of ``log loss`` in ``(log N, log L)`` over its
    3 x 3 neighbourhood; compute values whose minimiser lies on the border of the grid (or whose quadratic
    has no interior minimum inside the neighbourhood) are flagged not interior.

    Returns
    -------
    N_opt, L_opt, loss_opt : arrays ``(n_c,)``; interior : bool array ``(n_c,)``
    """
    C = np.asarray(compute, dtype=float)
    Nw = np.asarray(widths, dtype=float)
    Ld = np.asarray(depths, dtype=float)
    y = np.asarray(loss, dtype=float)
    if C.ndim != 1 or not (np.all(np.isfinite(C)) and np.all(C > 0)):
        raise ValueError("compute: expected a 1-D array of positive compute values")
    for name, v in (("widths", Nw), ("depths", Ld)):
        if v.ndim != 1 or v.size < 3 or not np.all(v > 0) or np.any(np.diff(v) <= 0):
            raise ValueError(f"{name}: expected at least 3 increasing positive values")
    if y.shape != (C.size, Nw.size, Ld.size) or not (np.all(np.isfinite(y)) and np.all(y > 0)):
        raise ValueError(f"loss: expected positive values of shape {(C.size, Nw.size, Ld.size)}, got {y.shape}")
    ln, ll = np.log(Nw), np.log(Ld)
    n_opt, l_opt, y_opt = np.empty(C.size), np.empty(C.size), np.empty(C.size)
    interior = np.zeros(C.size, dtype=bool)
    for c in range(C.size):  # loop over compute budgets (a handful), not over a frequency grid
        i, j = np.unravel_index(np.argmin(y[c]), y[c].shape)
        n_opt[c], l_opt[c], y_opt[c] = Nw[i], Ld[j], y[c, i, j]
        if 0 < i < Nw.size - 1 and 0 < j < Ld.size - 1:
            a, b = np.meshgrid(ln[i - 1 : i + 2], ll[j - 1 : j + 2], indexing="ij")
            A = np.stack([np.ones(9), a.ravel(), b.ravel(), a.ravel() ** 2, a.ravel() * b.ravel(), b.ravel() ** 2], 1)
            co = np.linalg.lstsq(A, np.log(y[c, i - 1 : i + 2, j - 1 : j + 2]).ravel(), rcond=None)[0]
            H = np.array([[2 * co[3], co[4]], [co[4], 2 * co[5]]])
            if np.all(np.linalg.eigvalsh(H) > 0):
                xo = np.linalg.solve(H, -co[1:3])
                if ln[i - 1] <= xo[0] <= ln[i + 1] and ll[j - 1] <= xo[1] <= ll[j + 1]:
                    n_opt[c], l_opt[c] = np.exp(xo)
                    y_opt[c] = float(np.exp(co @ [1, xo[0], xo[1], xo[0] ** 2, xo[0] * xo[1], xo[1] ** 2]))
                    interior[c] = True
    return n_opt, l_opt, y_opt, interior
