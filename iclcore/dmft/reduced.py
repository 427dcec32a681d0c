"""Reduced-Γ model of deep linear attention: landscapes, gradient flows, scaling laws (seed 002).

Seed 002 (Bordelon, Letey, Pehlevan) reduces a depth-``L`` linear-attention model with tied layers to a
single ``D x D`` matrix ``Γ`` acting as the preconditioner of ``L`` steps of in-context gradient
descent (§2.2, Eq. 4; App. B.2, Eqs. 51–59). With ``b_0 = 0``, ``c = Xᵀy / P`` and
``Σ̂ = XᵀX / P`` (rows of ``X`` are the ``P`` context inputs),

.. math::

    b_{\\ell+1} = b_\\ell + L^{-1}\\,\\Gamma\\,(c - \\hat\\Sigma b_\\ell), \\qquad f(x_*) = x_*^\\top b_L ,

and the population ICL loss of one context is ``|Σ^{1/2}(b_L - b_*)|² + σ²`` with ``b_* = β/√D``.

Conventions fixed once for the whole module
-------------------------------------------
* ``tr`` is the normalised trace ``(1/D) Tr``; every loss is ``O(1)`` and equals ``1 + σ²`` at ``Γ = 0``
  for ISO data (``tr ΩΛ + σ²`` in general).
* Context length ``P = αD``; the spectrum of ``Σ̂`` is Marchenko–Pastur with ratio ``D/P = 1/α``,
  i.e. ``iclcore.spectra.mp`` with ``gamma = 1/alpha`` (law of ``(1/M) XᵀX`` for ``X`` of shape
  ``(M, K) = (P, D)``).
* Theory time: gradient flow ``dγ/dt = -½ ∂L/∂γ`` (seed 002 Eqs. 7, 10, 13, 83). The simulation
  takes SGD steps ``Γ ← Γ + η G`` with ``G = -(D/2) ∇_Γ L̂_batch`` (the ``G`` of Eq. 62); since
  ``∇_Γ L(γI) = L'(γ) I / D`` this gives theory time ``t = Σ_steps η`` exactly.
* Power-law data: ``λ_k = k^{-ν}`` and ``ω_k λ_k = k^{-νβ-1} / Z`` with ``Z`` such that
  ``tr ΩΛ = 1`` (source/capacity conditions of Eqs. 17/88).

Functions by setting
--------------------
ISO (§3.1, App. C): :func:`iso_loss`, :func:`iso_loss_grad`, :func:`iso_optimum`,
:func:`iso_optimum_closed_form` (the Catalan formula), :func:`iso_gradient_flow`,
:func:`iso_loss_finite_d_mc`, :func:`shallow_sgd_theory` (Result 10, corrected).
FS (§3.2, App. D): :func:`fs_loss`, :func:`fs_mode_flow`, :func:`fs_loss_curve`,
:func:`fs_mode_flow_paper`, :func:`ood_loss`, :func:`rotated_covariance`, :func:`random_skew`.
RRS (§3.3, App. E–F): :func:`rrs_loss`, :func:`rrs_loss_grad`, :func:`rrs_gradient_flow`,
:func:`rrs_optimum`.
Scaling laws (Result 8, App. F): :func:`width_bottleneck`, :func:`width_bottleneck_mc`,
:func:`context_bottleneck`, :func:`context_bottleneck_mc`, :func:`scaling_exponents`,
:func:`fit_power_law_exponent`.
Simulation: :func:`simulate_reduced_gamma_sgd` with :class:`ReducedGammaSGDConfig`, and the
population loss of a fixed ``Γ`` by Monte Carlo, :func:`reduced_gamma_loss_mc`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from scipy.optimize import brentq, minimize_scalar

from iclcore.linalg import haar_orthogonal
from iclcore.spectra.mp import mp_edges, mp_quadrature
from iclcore.validation import (
    as_generator,
    check_depth,
    finite_array,
    nondecreasing_times,
    nonnegative_float,
    positive_float,
    positive_int,
    spectrum_pair,
    symmetric_psd,
)

__all__ = [
    "power_law_spectrum",
    "mp_rule",
    "iso_loss",
    "iso_loss_grad",
    "iso_optimum",
    "iso_optimum_closed_form",
    "iso_gradient_flow",
    "iso_depth1_flow",
    "iso_loss_finite_d_mc",
    "iso_optimum_finite_d_mc",
    "ShallowSGDTheory",
    "shallow_sgd_theory",
    "fs_loss",
    "fs_mode_flow",
    "fs_mode_flow_paper",
    "fs_loss_curve",
    "random_skew",
    "rotated_covariance",
    "ood_loss",
    "rrs_loss",
    "rrs_loss_grad",
    "rrs_optimum",
    "rrs_gradient_flow",
    "rrs_time_of_gamma",
    "width_bottleneck",
    "width_bottleneck_paper",
    "width_bottleneck_mc",
    "context_bottleneck",
    "context_bottleneck_paper",
    "context_bottleneck_mc",
    "scaling_exponents",
    "fit_power_law_exponent",
    "fit_power_law_drift",
    "ReducedGammaSGDConfig",
    "ReducedGammaSGDResult",
    "simulate_reduced_gamma_sgd",
    "reduced_gamma_loss_mc",
]


# --------------------------------------------------------------------------------------------------
# spectra
# --------------------------------------------------------------------------------------------------


def power_law_spectrum(D: int, nu: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Power-law covariance and task spectra obeying the source/capacity conditions.

    ``λ_k = k^{-ν}`` and ``ω_k λ_k = k^{-νβ-1} / Z`` for ``k = 1..D``, with ``Z = (1/D) Σ_k k^{-νβ-1}``
    so that ``tr ΩΛ = 1`` (the loss at ``Γ = 0``). Then ``Σ_{ℓ>k} λ_ℓ ω_ℓ ~ k^{-νβ}``
    (seed 002 Eq. 17, read with ``ω_ℓ`` inside the sum, and Eq. 88).

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


# --------------------------------------------------------------------------------------------------
# ISO setting (seed 002 §3.1, App. C)
# --------------------------------------------------------------------------------------------------


def _iso_integrands(gamma: np.ndarray, lam: np.ndarray, L: int, alpha: float, sigma: float):
    """Signal part u^{2L}, noise part λ (Σ_{j<L} (γ/L) u^j)^2 and their γ-derivatives at nodes ``lam``."""
    g = gamma[..., None]
    u = 1.0 - g * lam / L
    signal = u ** (2 * L)
    dsignal = -2.0 * lam * u ** (2 * L - 1)
    # (1 - u^L)/λ = (γ/L) Σ_{j<L} u^j ; polynomial, finite at λ = 0 (atom)
    s = np.zeros_like(u)
    ds = np.zeros_like(u)  # d/dγ of Σ_{j<L} u^j
    for j in range(L):
        s = s + u**j
        if j >= 1:
            ds = ds + j * u ** (j - 1) * (-lam / L)
    h = (g / L) * s  # (1-u^L)/λ
    dh = s / L + (g / L) * ds
    noise = (sigma**2 / alpha) * lam * h**2
    dnoise = (sigma**2 / alpha) * lam * 2.0 * h * dh
    return signal, dsignal, noise, dnoise


def _iso_args(
    gamma: np.ndarray | float, alpha: float, L: int, sigma: float
) -> tuple[np.ndarray, float, int, float, np.ndarray, np.ndarray]:
    """Validated ``gamma, alpha, L, sigma`` of the ISO landscape and the MP quadrature nodes and weights."""
    g = finite_array(gamma, "gamma")
    alpha = positive_float(alpha, "alpha")
    Lf = check_depth(L)
    sigma = nonnegative_float(sigma, "sigma")
    lam, w = mp_rule(alpha, Lf)
    return g, alpha, Lf, sigma, lam, w


def iso_loss(gamma: np.ndarray | float, alpha: float, L: int, sigma: float = 0.0) -> np.ndarray:
    """ISO ICL loss of ``Γ = γI`` (seed 002 Eq. 8 for σ = 0, Eq. 83 with label noise), plus ``σ²``.

    .. math::
        \\mathcal L(\\gamma) = \\sigma^2 + \\int \\rho(\\lambda)\\Big[(1-\\tfrac{\\gamma\\lambda}{L})^{2L}
            + \\frac{\\sigma^2}{\\alpha\\lambda}\\big(1-(1-\\tfrac{\\gamma\\lambda}{L})^L\\big)^2\\Big] d\\lambda ,

    ``ρ`` the Marchenko–Pastur law with ratio ``1/α`` (atom at 0 when ``α < 1``). The integrand is a
    polynomial of degree ``2L`` and is integrated exactly by :func:`mp_rule`. The irreducible ``σ²``
    (Eq. 57) is included, so ``iso_loss(0) = 1 + σ²``.

    Parameters
    ----------
    gamma : array_like, any shape
    alpha : float, ``P/D > 0``
    L : int, depth
    sigma : float, label-noise standard deviation

    Returns
    -------
    numpy.ndarray, shape of ``gamma``
    """
    g, alpha, Lf, sigma, lam, w = _iso_args(gamma, alpha, L, sigma)
    signal, _, noise, _ = _iso_integrands(g, lam, Lf, alpha, sigma)
    return sigma**2 + (signal + noise) @ w


def iso_loss_grad(gamma: np.ndarray | float, alpha: float, L: int, sigma: float = 0.0) -> np.ndarray:
    """Derivative ``d iso_loss / dγ`` (exact, same quadrature); the flow is ``dγ/dt = -½`` of it (Eq. 83)."""
    g, alpha, Lf, sigma, lam, w = _iso_args(gamma, alpha, L, sigma)
    _, dsignal, _, dnoise = _iso_integrands(g, lam, Lf, alpha, sigma)
    return (dsignal + dnoise) @ w


def iso_optimum_closed_form(alpha: float, L: int | float) -> tuple[float, float]:
    """Exact ISO optimum at σ = 0: ``γ* = Lα/(1+α)`` and the Catalan formula for ``L*``.

    ``λρ(λ)`` is a semicircle of radius ``2/√α`` centred at ``c = 1 + 1/α``, so every odd moment of
    ``λ - c`` under it vanishes: ``γ = L/c`` zeroes ``∫ρλ(1-γλ/L)^{2L-1}`` (the landscape is convex, so
    this is the global minimum). The differences ``L*_L - L*_{L+1} = Cat(L) α^L (1+α)^{-2L-1}``
    (semicircle even moments) give

    .. math::
        \\mathcal L_*(\\alpha, L) = 1 - \\frac{\\alpha}{1+\\alpha}\\sum_{n=0}^{L-1}
            \\mathrm{Cat}(n)\\Big(\\frac{\\alpha}{(1+\\alpha)^2}\\Big)^n ,

    with ``L*(α, 1) = 1/(1+α)`` (seed 002 Result 1 prints ``(1+α)^{-2}``) and ``L*(α, ∞) = [1-α]_+``.

    Parameters
    ----------
    alpha : float
    L : int or math.inf

    Returns
    -------
    (gamma_star, loss_star) : tuple of float (``gamma_star = inf`` for ``L = inf``)
    """
    alpha = positive_float(alpha, "alpha")
    Lf = float(check_depth(L, allow_inf=True))
    if math.isinf(Lf):
        return math.inf, max(0.0, 1.0 - alpha)
    x = alpha / (1.0 + alpha) ** 2
    total, term = 0.0, 1.0  # term = Cat(n) x^n, updated by the ratio Cat(n+1)/Cat(n) = 2(2n+1)/(n+2)
    for n in range(int(Lf)):
        total += term
        term *= 2.0 * (2 * n + 1) / (n + 2) * x
    return Lf * alpha / (1.0 + alpha), max(0.0, 1.0 - alpha / (1.0 + alpha) * total)


def iso_optimum(alpha: float, L: int, sigma: float = 0.0) -> tuple[float, float]:
    """Numerical minimiser of :func:`iso_loss` over ``γ ∈ [0, 2L/λ_+]`` (any σ).

    A grid of 801 points locates the basin, then bounded Brent refines it. For σ = 0 the result
    agrees with :func:`iso_optimum_closed_form` (tested).

    Returns
    -------
    (gamma_star, loss_star) : tuple of float
    """
    alpha = positive_float(alpha, "alpha")
    Lf = check_depth(L)
    sigma = nonnegative_float(sigma, "sigma")
    hi = 2.0 * Lf / mp_edges(1.0 / alpha)[1]
    grid = np.linspace(0.0, hi, 801)
    vals = iso_loss(grid, alpha, Lf, sigma)
    i = int(np.argmin(vals))
    lo_b, hi_b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda x: float(iso_loss(x, alpha, Lf, sigma)), bounds=(lo_b, hi_b), method="bounded",
        options={"xatol": 1e-12 * max(1.0, hi)},
    )
    return float(res.x), float(res.fun)


def iso_depth1_flow(t: np.ndarray | float, alpha: float, sigma: float = 0.0) -> np.ndarray:
    """Closed-form depth-1 ISO gradient flow ``γ(t) = (1 - e^{-a₀t})/a₀``, ``a₀ = 1 + (1+σ²)/α``.

    At ``L = 1`` Eq. 83 gives ``dγ/dt = 1 - a₀γ``.
    """
    t = np.asarray(t, dtype=float)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("t: times must be finite and non-negative")
    alpha = positive_float(alpha, "alpha")
    sigma = nonnegative_float(sigma, "sigma")
    a0 = 1.0 + (1.0 + sigma**2) / alpha
    return -np.expm1(-a0 * t) / a0


def iso_gradient_flow(
    t: np.ndarray, alpha: float, L: int, sigma: float = 0.0, gamma0: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient flow ``dγ/dt = -½ dL/dγ`` on the ISO landscape (seed 002 Eqs. 7, 83).

    Parameters
    ----------
    t : array_like, shape ``(T,)``, non-decreasing times ``>= 0`` (theory time ``= η × steps``)
    alpha, L, sigma : as in :func:`iso_loss`
    gamma0 : float, initial value (default 0, the paper's initial condition)

    Returns
    -------
    gamma, loss : numpy.ndarray, shape ``(T,)``
    """
    t = nondecreasing_times(t)
    alpha = positive_float(alpha, "alpha")
    Lf = check_depth(L)
    sigma = nonnegative_float(sigma, "sigma")
    lam, w = mp_rule(alpha, Lf)

    def rhs(_t, y):
        _, ds, _, dn = _iso_integrands(np.asarray(y[0]), lam, Lf, alpha, sigma)
        return [-0.5 * float((ds + dn) @ w)]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [float(gamma0)], t_eval=t, method="LSODA", rtol=1e-10, atol=1e-12)
    if not sol.success:  # pragma: no cover - LSODA on a smooth scalar ODE
        raise RuntimeError(sol.message)
    gamma = sol.y[0]
    return gamma, iso_loss(gamma, alpha, Lf, sigma)


def _finite_d_designs(
    alpha: float, L: int, D: int, rng: np.random.Generator, draws: int, sigma: float
) -> tuple[int, float, int, np.ndarray]:
    """Validate the finite-``D`` ISO arguments and draw Gaussian designs with ``P = round(αD)`` rows.

    Returns ``(L, sigma, P, X)`` with ``X`` of shape ``(draws, P, D)``.
    """
    alpha = positive_float(alpha, "alpha")
    Lf = check_depth(L)
    D = positive_int(D, "D")
    draws = positive_int(draws, "draws")
    sigma = nonnegative_float(sigma, "sigma")
    rng = as_generator(rng)
    P = max(1, int(round(alpha * D)))
    return Lf, sigma, P, rng.standard_normal((draws, P, D))


def iso_loss_finite_d_mc(
    gamma: np.ndarray | float, alpha: float, L: int, D: int, rng: np.random.Generator,
    draws: int = 200, sigma: float = 0.0,
) -> np.ndarray:
    """Exact finite-``D`` ISO loss of ``Γ = γI`` by Monte Carlo over Wishart spectra.

    For isotropic ``Γ`` and ``β ~ N(0, I)`` the finite-``D`` loss is the same integrand as
    :func:`iso_loss` averaged over the eigenvalues of ``Σ̂ = XᵀX/P`` with ``P = round(αD)``; only
    the spectral law changes. This separates finite-``D`` effects from SGD noise.

    Returns
    -------
    numpy.ndarray, shape of ``gamma``
    """
    g = finite_array(gamma, "gamma")
    Lf, sigma, P, X = _finite_d_designs(alpha, L, D, rng, draws, sigma)
    ev = np.linalg.eigvalsh(np.einsum("npi,npj->nij", X, X) / P).ravel()
    signal, _, noise, _ = _iso_integrands(g, ev, Lf, P / D, sigma)
    return sigma**2 + (signal + noise).mean(axis=-1)


def iso_optimum_finite_d_mc(
    alpha: float, L: int, D: int, rng: np.random.Generator, draws: int = 200, sigma: float = 0.0,
    n_grid: int = 401,
) -> tuple[float, float]:
    """Optimal isotropic step and loss at finite ``D`` (Monte Carlo Wishart spectra, common draws).

    Minimises the finite-``D`` landscape of :func:`iso_loss_finite_d_mc` (same eigenvalue draws for
    every γ) over a grid on ``[0, 2L/λ_+]`` refined by bounded Brent. Returns ``(gamma_star, loss_star)``.
    """
    Lf, sigma, P, X = _finite_d_designs(alpha, L, D, rng, draws, sigma)
    ev = np.linalg.eigvalsh(np.matmul(X.transpose(0, 2, 1), X) / P).ravel()

    def f(g):
        s_, _, n_, _ = _iso_integrands(np.asarray(g, dtype=float), ev, Lf, P / D, sigma)
        return sigma**2 + (s_ + n_).mean(axis=-1)

    grid = np.linspace(0.0, 2.0 * Lf / ev.max(), n_grid)
    vals = f(grid)
    i = int(np.argmin(vals))
    res = minimize_scalar(lambda g: float(f(g)), bounds=(grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]),
                          method="bounded")
    return float(res.x), float(res.fun)


# --------------------------------------------------------------------------------------------------
# Shallow SGD theory (seed 002 App. C.1, Result 10) with the corrected initial condition
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShallowSGDTheory:
    """Depth-1 online-SGD theory at step counts ``steps`` (seed 002 Eqs. 72–79).

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
    steps: np.ndarray, eta: float, alpha: float, kappa: float, tau: float, sigma: float = 0.0,
    paper_initial_condition: bool = False, D: int | None = None,
) -> ShallowSGDTheory:
    """Depth-1 reduced-Γ online SGD from ``Γ(0) = 0`` (seed 002 Result 10, Eqs. 74–79).

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


# --------------------------------------------------------------------------------------------------
# FS setting (seed 002 §3.2, App. D): α = ∞, Σ = diag(λ), Ω = diag(ω)
# --------------------------------------------------------------------------------------------------


def fs_loss(gamma_k: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float) -> np.ndarray:
    """FS loss of a diagonal ``Γ = diag(γ_k)`` at ``α = ∞`` (seed 002 Eq. 84): ``(1/D) Σ ω_k λ_k u_k^{2L}``.

    ``u_k = 1 - λ_k γ_k / L``; for ``L = inf`` the factor is ``exp(-2λ_kγ_k)``.

    Parameters
    ----------
    gamma_k : array_like, shape ``(..., D)``
    lam, omega : shape ``(D,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    g = np.asarray(gamma_k, dtype=float)
    if g.shape[-1:] != lam.shape:
        raise ValueError(f"gamma_k: last axis must have length {lam.size}, got shape {g.shape}")
    Lf = float(check_depth(L, allow_inf=True))
    fac = np.exp(-2.0 * lam * g) if math.isinf(Lf) else (1.0 - lam * g / Lf) ** (2 * int(Lf))
    return (omega * lam * fac).mean(axis=-1)


def _fs_flow_exponent(
    t: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Validate the FS flow arguments; return ``lam, omega, L`` and ``x_k = ω_k λ_k³ t`` of shape ``(T, D)``."""
    lam, omega = spectrum_pair(lam, omega)
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("t: expected a 1-D array of finite non-negative times")
    Lf = float(check_depth(L, allow_inf=True))
    return lam, omega, Lf, t[:, None] * (omega * lam**3)[None, :]


def fs_mode_flow(t: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float) -> np.ndarray:
    """Closed-form FS eigenvalue dynamics ``γ_k(t)`` from 0 under ``dγ_k/dt = ω_kλ_k²u_k^{2L-1}`` (Eq. 10).

    With ``x_k = ω_k λ_k³ t``:

    * ``L = 1``: ``γ_k = (1 - e^{-x_k}) / λ_k``;
    * ``L >= 2``: ``γ_k = (L/λ_k)(1 - u_k)``, ``u_k = [1 + 2(L-1)x_k/L]^{-1/(2L-2)}``;
    * ``L = inf``: ``γ_k = ln(1 + 2x_k) / (2λ_k)`` (Result 4 prints ``ln(1 + 4x_k)``, the solution of
      the factor-2 flow of Eq. 85; see :func:`fs_mode_flow_paper`).

    Parameters
    ----------
    t : array_like, shape ``(T,)``, times ``>= 0``
    lam, omega : shape ``(D,)``
    L : int or math.inf

    Returns
    -------
    numpy.ndarray, shape ``(T, D)``
    """
    lam, omega, Lf, x = _fs_flow_exponent(t, lam, omega, L)
    if math.isinf(Lf):
        return np.log1p(2.0 * x) / (2.0 * lam)
    if Lf == 1:
        return -np.expm1(-x) / lam
    u = (1.0 + 2.0 * (Lf - 1.0) * x / Lf) ** (-1.0 / (2.0 * Lf - 2.0))
    return Lf / lam * (1.0 - u)


def fs_mode_flow_paper(t: np.ndarray, lam: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Result 4 as printed: ``γ_k(t) = ln(1 + 4ω_kλ_k³t)/(2λ_k)`` (the ``L → ∞`` solution of Eq. 85).

    Equals :func:`fs_mode_flow` at ``L = inf`` evaluated at time ``2t``: Eq. 85 is the flow without
    the ``½`` of Eq. 10. Kept to show the convention mismatch. Shape ``(T, D)``.
    """
    lam, omega = spectrum_pair(lam, omega)
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or np.any(t < 0):
        raise ValueError("t: expected a 1-D array of non-negative times")
    return np.log1p(4.0 * t[:, None] * (omega * lam**3)[None, :]) / (2.0 * lam)


def fs_loss_curve(t: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float) -> np.ndarray:
    """FS loss along the flow, in closed form (shape ``(T,)``).

    Per mode ``ω_kλ_k e^{-2x_k}`` (L = 1), ``ω_kλ_k [1 + 2(L-1)x_k/L]^{-L/(L-1)}`` (L >= 2),
    ``ω_kλ_k / (1 + 2x_k)`` (L = inf), averaged over ``k`` (normalised trace).
    """
    lam, omega, Lf, x = _fs_flow_exponent(t, lam, omega, L)
    if math.isinf(Lf):
        fac = 1.0 / (1.0 + 2.0 * x)
    elif Lf == 1:
        fac = np.exp(-2.0 * x)
    else:
        fac = (1.0 + 2.0 * (Lf - 1.0) * x / Lf) ** (-Lf / (Lf - 1.0))
    return (fac * (omega * lam)[None, :]).mean(axis=1)


def random_skew(D: int, rng: np.random.Generator) -> np.ndarray:
    """Random skew-symmetric ``S = (G - Gᵀ)/√(2D)``, ``G`` i.i.d. N(0,1) (our normalisation; seed 002 leaves it open).

    ``exp(θS)`` is a random rotation whose angles grow linearly with θ (spectral radius of ``S`` ≈ √2).
    """
    D = positive_int(D, "D")
    rng = as_generator(rng)
    G = rng.standard_normal((D, D))
    return (G - G.T) / math.sqrt(2.0 * D)


def rotated_covariance(Sigma: np.ndarray, S: np.ndarray, theta: float) -> np.ndarray:
    """``exp(θS) Σ exp(-θS)`` for skew-symmetric ``S`` (seed 002 Result 5; ``exp(θS)`` is orthogonal)."""
    Sigma = symmetric_psd(Sigma, "Sigma")
    S = np.asarray(S, dtype=float)
    if S.shape != Sigma.shape:
        raise ValueError(f"S: expected shape {Sigma.shape}, got {S.shape}")
    if np.abs(S + S.T).max() > 1e-12 * max(1.0, float(np.abs(S).max())):
        raise ValueError("S: matrix is not skew-symmetric")
    if not math.isfinite(float(theta)):
        raise ValueError("theta: must be finite")
    R = expm(float(theta) * S)
    out = R @ Sigma @ R.T
    return 0.5 * (out + out.T)


def ood_loss(Gamma: np.ndarray, Sigma_test: np.ndarray, Omega_test: np.ndarray, L: int) -> float:
    """Out-of-distribution loss of a trained ``Γ`` at ``α = ∞`` (seed 002 Eq. 11, generalised).

    .. math::
        \\mathcal L_{OOD} = \\mathrm{tr}\\,\\Omega'\\,[(I - L^{-1}\\Gamma\\Sigma')^L]^\\top\\Sigma'(I - L^{-1}\\Gamma\\Sigma')^L .

    With the converged FS solution ``Γ = LΣ^{-1}`` this is Eq. 11, ``(I - Σ^{-1}Σ')^L``.

    Parameters
    ----------
    Gamma : (D, D) ; Sigma_test, Omega_test : (D, D) symmetric PSD ; L : int
    """
    Sigma_test = symmetric_psd(Sigma_test, "Sigma_test")
    Omega_test = symmetric_psd(Omega_test, "Omega_test")
    Gamma = np.asarray(Gamma, dtype=float)
    if Gamma.shape != Sigma_test.shape:
        raise ValueError(f"Gamma: expected shape {Sigma_test.shape}, got {Gamma.shape}")
    Lf = check_depth(L)
    D = Gamma.shape[0]
    A = np.linalg.matrix_power(np.eye(D) - Gamma @ Sigma_test / Lf, Lf)
    return float(np.trace(Omega_test @ A.T @ Sigma_test @ A) / D)


# --------------------------------------------------------------------------------------------------
# RRS setting at P = ∞, N = D (seed 002 §3.3, Result 6, Eqs. 13, 94, 98)
# --------------------------------------------------------------------------------------------------


def rrs_loss(gamma: np.ndarray | float, lam: np.ndarray, omega: np.ndarray, L: int | float) -> np.ndarray:
    """RRS loss of ``Γ = γI`` at ``α = ∞`` (Eq. 98): ``tr ΩΛ (I - γΛ/L)^{2L}`` (``exp(-2γΛ)`` for L = inf).

    Exact at every finite ``D``: the Haar rotation cancels for isotropic ``Γ``.
    Returns an array of the shape of ``gamma``.
    """
    lam, omega = spectrum_pair(lam, omega)
    g = finite_array(gamma, "gamma")[..., None]
    Lf = float(check_depth(L, allow_inf=True))
    fac = np.exp(-2.0 * g * lam) if math.isinf(Lf) else (1.0 - g * lam / Lf) ** (2 * int(Lf))
    return (omega * lam * fac).mean(axis=-1)


def rrs_loss_grad(gamma: np.ndarray | float, lam: np.ndarray, omega: np.ndarray, L: int | float) -> np.ndarray:
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
        lambda x: float(rrs_loss(x, lam, omega, Lf)), bounds=(0.0, hi), method="bounded",
        options={"xatol": 1e-10 * hi},
    )
    return float(res.x), float(res.fun)


def rrs_gradient_flow(
    t: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float
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
        return [-0.5 * float(rrs_loss_grad(y[0], lam, omega, Lf))]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [0.0], t_eval=t, method="LSODA", rtol=1e-9, atol=1e-12)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(sol.message)
    gamma = sol.y[0]
    return gamma, rrs_loss(gamma, lam, omega, Lf)


def rrs_time_of_gamma(gamma: np.ndarray, lam: np.ndarray, omega: np.ndarray, L: int | float) -> np.ndarray:
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
    F = lambda x: -0.5 * rrs_loss_grad(x, lam, omega, Lf)  # noqa: E731
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


# --------------------------------------------------------------------------------------------------
# Scaling-law bottlenecks (seed 002 Result 8, App. F.2, F.4)
# --------------------------------------------------------------------------------------------------


def _solve_kappa(lam: np.ndarray, n_eff: float, name: str) -> float:
    """Root ``κ > 0`` of ``Σ_k λ_k/(κ + λ_k) = n_eff`` (requires ``0 < n_eff < D``)."""
    D = lam.size
    if not 0 < n_eff < D:
        raise ValueError(f"{name}: must lie strictly between 0 and D = {D}, got {n_eff!r}")
    f = lambda logk: float(np.sum(lam / (math.exp(logk) + lam)) - n_eff)  # noqa: E731
    lo, hi = math.log(lam.min()) - 40.0, math.log(lam.max()) + 40.0
    return math.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-14))


def _bottleneck_kappa(
    lam: np.ndarray, omega: np.ndarray, n: int, name: str
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """Validate ``lam, omega`` and the size ``n`` (``N`` or ``P``); return them and κ with ``Σ λ/(κ+λ) = n``."""
    lam, omega = spectrum_pair(lam, omega)
    n = positive_int(n, name)
    return lam, omega, n, _solve_kappa(lam, float(n), name)


def _bottleneck_mc_args(
    lam: np.ndarray, omega: np.ndarray, n: int, name: str, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, int, int, np.random.Generator, int]:
    """Validate the bottleneck Monte Carlo arguments (``n = N`` or ``P``, below ``D``).

    Returns ``lam, omega, n, D, rng, draws``.
    """
    lam, omega = spectrum_pair(lam, omega)
    n = positive_int(n, name)
    D = lam.size
    if n >= D:
        raise ValueError(f"{name}: must be smaller than D = {D}, got {n}")
    return lam, omega, n, D, as_generator(rng), positive_int(draws, "draws")


def width_bottleneck(lam: np.ndarray, omega: np.ndarray, N: int) -> float:
    """Width bottleneck ``lim_{t,L→∞, P=∞} L(N) = tr[ΩΛ κ(κ + Λ)^{-1}]``, ``Σ_k λ_k/(κ+λ_k) = N``.

    The infinite-time, infinite-depth model removes everything the rank-``N`` random projection
    can see; what remains is the bias of projecting onto a random ``N``-dimensional subspace
    weighted by ``Λ^{1/2}``, whose deterministic equivalent is ``κ(κ+Λ)^{-1}`` (linear in κ).
    Seed 002 Eq. 113 prints the squared form ``κ²(κ+Λ)^{-2}``; see :func:`width_bottleneck_paper`.
    """
    lam, omega, N, kap = _bottleneck_kappa(lam, omega, N, "N")
    return float(np.mean(omega * lam * kap / (kap + lam)))


def width_bottleneck_paper(lam: np.ndarray, omega: np.ndarray, N: int) -> float:
    """Eq. 113 as printed: ``tr[ΩΛ κ²(κ+Λ)^{-2}]`` with the same κ (kept for the comparison)."""
    lam, omega, N, kap = _bottleneck_kappa(lam, omega, N, "N")
    return float(np.mean(omega * lam * kap**2 / (kap + lam) ** 2))


def width_bottleneck_mc(
    lam: np.ndarray, omega: np.ndarray, N: int, rng: np.random.Generator, draws: int = 4
) -> float:
    """Monte Carlo of the width bottleneck: ``E tr[ΩΛ (I - Π_N)]``, ``Π_N`` the orthogonal projector onto
    ``range(Λ^{1/2} U)`` for a Haar ``D x N`` frame ``U`` (the null space of ``K = Λ^{1/2}UUᵀΛ^{1/2}``
    is what ``(I - γK/L)^{2L}`` keeps as ``γ, L → ∞``)."""
    lam, omega, N, D, rng, draws = _bottleneck_mc_args(lam, omega, N, "N", rng, draws)
    out = []
    for _ in range(draws):
        U = np.linalg.qr(rng.standard_normal((D, N)))[0]
        Q = np.linalg.qr(np.sqrt(lam)[:, None] * U)[0]  # orthonormal basis of range(Λ^{1/2}U)
        seen = np.sum(omega[:, None] * lam[:, None] * Q**2) / D
        out.append(np.mean(omega * lam) - seen)
    return float(np.mean(out))


def context_bottleneck(lam: np.ndarray, omega: np.ndarray, P: int) -> float:
    """Context bottleneck ``lim_{t,L→∞, N=D} L(P)``: the bias of min-norm interpolation from ``P < D`` points.

    .. math::
        \\mathcal L_\\infty(P) = \\frac{\\kappa^2\\,\\mathrm{tr}[\\Omega\\Lambda(\\kappa+\\Lambda)^{-2}]}
            {1 - P^{-1}\\sum_k \\lambda_k^2(\\kappa+\\lambda_k)^{-2}}, \\qquad \\sum_k \\frac{\\lambda_k}{\\kappa+\\lambda_k} = P .

    Seed 002 Eq. 116 omits the denominator (:func:`context_bottleneck_paper`).
    """
    lam, omega, P, kap = _bottleneck_kappa(lam, omega, P, "P")
    num = kap**2 * np.mean(omega * lam / (kap + lam) ** 2)
    den = 1.0 - np.sum(lam**2 / (kap + lam) ** 2) / P
    return float(num / den)


def context_bottleneck_paper(lam: np.ndarray, omega: np.ndarray, P: int) -> float:
    """Eq. 116 as printed: ``tr[ΩΛ κ²(κ+Λ)^{-2}]`` (no ``1 - df₂/P`` denominator)."""
    lam, omega, P, kap = _bottleneck_kappa(lam, omega, P, "P")
    return float(kap**2 * np.mean(omega * lam / (kap + lam) ** 2))


def context_bottleneck_mc(
    lam: np.ndarray, omega: np.ndarray, P: int, rng: np.random.Generator, draws: int = 4
) -> float:
    """Monte Carlo of the context bottleneck: ``E tr[Ω(I-Π_X)Λ(I-Π_X)]``, ``Π_X`` the projector onto the
    row span of ``X`` (``P x D`` with rows ``~ N(0, Λ)``): the limit of ``(I - γΣ̂/L)^L`` as ``γ, L → ∞``."""
    lam, omega, P, D, rng, draws = _bottleneck_mc_args(lam, omega, P, "P", rng, draws)
    out = []
    for _ in range(draws):
        X = rng.standard_normal((P, D)) * np.sqrt(lam)
        Q = np.linalg.qr(X.T)[0]  # (D, P) basis of the row span
        # tr[Ω (I-Π) Λ (I-Π)] with diagonal Ω, Λ
        QtL = Q.T * lam  # (P, D)
        QtO = Q.T * omega
        t1 = np.sum(omega * lam)
        t2 = 2.0 * np.sum(Q * (Q * (omega * lam)[:, None]))
        t3 = np.sum((QtO @ Q) * (QtL @ Q))
        out.append((t1 - t2 + t3) / D)
    return float(np.mean(out))


def scaling_exponents(nu: float, beta: float) -> dict[str, float]:
    """Printed and corrected scaling exponents of seed 002 (Results 4, 8; Eqs. 89, 97, 100, 113, 116).

    Keys ``*_paper`` hold the printed exponent, ``*_corrected`` ours:

    * ``t_rrs``: ``β/(2+β)`` (Eq. 97; confirmed),
    * ``t_fs``: printed ``β/(ν+νβ+1)``; corrected ``νβ/(νβ+2ν+1)`` (cut-off ``k* = t^{1/(νβ+2ν+1)}``),
    * ``L``: ``β`` (Eq. 100),
    * ``N``: printed ``νβ``; corrected ``ν min(β, 1)``,
    * ``P``: printed ``νβ``; corrected ``ν min(β, 2)``.
    """
    nu = positive_float(nu, "nu")
    beta = positive_float(beta, "beta")
    return {
        "t_rrs_paper": beta / (2.0 + beta),
        "t_rrs_corrected": beta / (2.0 + beta),
        "t_fs_paper": beta / (nu + nu * beta + 1.0),
        "t_fs_corrected": nu * beta / (nu * beta + 2.0 * nu + 1.0),
        "L_paper": beta,
        "L_corrected": beta,
        "N_paper": nu * beta,
        "N_corrected": nu * min(beta, 1.0),
        "P_paper": nu * beta,
        "P_corrected": nu * min(beta, 2.0),
    }


def fit_power_law_exponent(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope ``-d log y / d log x`` (the decay exponent) of positive samples."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError("x, y: expected two 1-D arrays of the same length >= 2")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x, y: power-law fit needs positive values")
    slope = np.polyfit(np.log(x), np.log(y), 1)[0]
    return float(-slope)


def fit_power_law_drift(x: np.ndarray, y: np.ndarray) -> float:
    """Pre-asymptotic error estimate of :func:`fit_power_law_exponent` on a finite window.

    The absolute difference of the fitted exponents on the first and the second half of the samples
    (ordered by ``x``; each half needs two points). A pure power law gives 0; a local slope that
    still moves across the window gives the size of that movement, which is the book's error model
    for exponent fits on theory curves (an agreement rule ``|fit - exponent| <= 3 drift``).

    Parameters
    ----------
    x, y : arrays ``(n,)``, positive, ``n >= 4``
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 4:
        raise ValueError("x, y: expected two 1-D arrays of the same length >= 4")
    order = np.argsort(x)
    x, y = x[order], y[order]
    h = x.size // 2
    return abs(fit_power_law_exponent(x[:h], y[:h]) - fit_power_law_exponent(x[h:], y[h:]))


# --------------------------------------------------------------------------------------------------
# Reduced-Γ SGD simulation (seed 002 §2.2 Eq. 4, App. B.2 Eqs. 54–55, App. C.1 Eq. 62)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReducedGammaSGDConfig:
    """Configuration of the reduced-Γ online SGD simulation.

    Attributes
    ----------
    setting : ``"iso"`` (Eq. 5), ``"fs"`` (fixed Σ = diag(lam), Ω = diag(omega)) or ``"rrs"`` (Eq. 12)
    D : input dimension
    L : depth (tied layers)
    B : contexts per step (``τ = B/D``)
    eta : step size (float) or schedule (1-D array of length ``steps``); theory time ``t = Σ η``
    steps : number of SGD steps
    P : context length (``α = P/D``); ``None`` = population context ``Σ̂ = Σ_c``, ``c = Σ_c b_*``
    K : evaluation points per context (``κ = K/D``); ``None`` = population test loss
    sigma : label noise on the ``P`` context labels
    test_label_noise : add noise ``σ`` to the ``K`` evaluation labels too (Eq. 62 omits it)
    lam, omega : spectra for ``"fs"``/``"rrs"`` (ignored for ``"iso"``)
    record_every : keep ``diag Γ`` every this many steps
    """

    setting: str
    D: int
    L: int
    B: int
    eta: float | np.ndarray
    steps: int
    P: int | None = None
    K: int | None = None
    sigma: float = 0.0
    test_label_noise: bool = False
    lam: np.ndarray | None = field(default=None, repr=False)
    omega: np.ndarray | None = field(default=None, repr=False)
    record_every: int = 1


@dataclass(frozen=True)
class ReducedGammaSGDResult:
    """Output of :func:`simulate_reduced_gamma_sgd`.

    Attributes
    ----------
    t : theory time after each step, ``cumsum(η)``, shape ``(steps,)``
    batch_loss : mean loss of the batch used at each step (fresh contexts, so an unbiased estimate of
        the population loss of the Γ *before* that step's update), shape ``(steps,)``
    t_loss : theory time at which ``batch_loss`` is evaluated, ``t - η`` (shape ``(steps,)``)
    gamma_mean : ``tr Γ`` after each step, shape ``(steps,)``
    gamma_sq_mean : ``tr ΓᵀΓ`` after each step, shape ``(steps,)``; the parameter error is
        ``gamma_sq_mean - 2 gamma_mean + 1`` = ``(1/D)|Γ - I|²``
    record_t : times of the snapshots, shape ``(R,)``
    gamma_diag : ``diag Γ`` snapshots, shape ``(R, D)``
    Gamma : final ``Γ``, shape ``(D, D)``
    """

    t: np.ndarray
    batch_loss: np.ndarray
    t_loss: np.ndarray
    gamma_mean: np.ndarray
    gamma_sq_mean: np.ndarray
    record_t: np.ndarray
    gamma_diag: np.ndarray
    Gamma: np.ndarray


def _check_config(cfg: ReducedGammaSGDConfig) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    if not isinstance(cfg, ReducedGammaSGDConfig):
        raise TypeError("cfg: expected a ReducedGammaSGDConfig")
    if cfg.setting not in ("iso", "fs", "rrs"):
        raise ValueError(f"setting: unknown setting {cfg.setting!r}; expected 'iso', 'fs' or 'rrs'")
    positive_int(cfg.D, "D")
    float(check_depth(cfg.L))
    positive_int(cfg.B, "B")
    positive_int(cfg.steps, "steps")
    positive_int(cfg.record_every, "record_every")
    if cfg.P is not None:
        positive_int(cfg.P, "P")
    if cfg.K is not None:
        positive_int(cfg.K, "K")
    nonnegative_float(cfg.sigma, "sigma")
    eta = np.asarray(cfg.eta, dtype=float)
    if eta.ndim == 0:
        eta = np.full(cfg.steps, float(eta))
    if eta.shape != (cfg.steps,) or not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"eta: expected a positive float or a positive array of length steps = {cfg.steps}")
    lam = omega = None
    if cfg.setting in ("fs", "rrs"):
        if cfg.lam is None or cfg.omega is None:
            raise ValueError(f"lam: setting {cfg.setting!r} needs lam and omega spectra")
        lam, omega = spectrum_pair(cfg.lam, cfg.omega)
        if lam.size != cfg.D:
            raise ValueError(f"lam: expected length D = {cfg.D}, got {lam.size}")
    return eta, lam, omega


def _bmv(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product ``A[b] @ v[b]``: ``(B, m, n), (B, n) -> (B, m)``."""
    return np.matmul(A, v[..., None])[..., 0]


def _sample_batch(cfg: ReducedGammaSGDConfig, lam, omega, rng: np.random.Generator):
    """One batch: Σ̂ (B,D,D), c (B,D), test form S (B,D,D) or None (identity), b_* (B,D), r (B,D), s0 (B,)."""
    B, D = cfg.B, cfg.D
    if cfg.setting == "iso":
        sqrt_lam = np.ones(D)
        sqrt_om = np.ones(D)
    else:
        sqrt_lam = np.sqrt(lam)
        sqrt_om = np.sqrt(omega)
    O = haar_orthogonal(D, rng, size=B) if cfg.setting == "rrs" else None
    g = rng.standard_normal((B, D)) * sqrt_om / math.sqrt(D)
    bstar = _bmv(O, g) if O is not None else g

    def draw_x(n):  # rows x = O Λ^{1/2} z
        Z = rng.standard_normal((B, n, D)) * sqrt_lam
        return np.matmul(Z, O.transpose(0, 2, 1)) if O is not None else Z

    if cfg.P is None:  # population context
        if O is not None:
            Sig = np.matmul(O * lam, O.transpose(0, 2, 1))
        else:
            Sig = np.broadcast_to(np.diag(sqrt_lam**2), (B, D, D))
        Shat = Sig
        c = _bmv(Sig, bstar)
    else:
        X = draw_x(cfg.P)
        y = _bmv(X, bstar) + cfg.sigma * rng.standard_normal((B, cfg.P))
        Shat = np.matmul(X.transpose(0, 2, 1), X) / cfg.P
        c = _bmv(X.transpose(0, 2, 1), y) / cfg.P
        Sig = None
    if cfg.K is None:
        if cfg.setting == "iso":
            S = None
        elif Sig is not None:
            S = Sig
        else:
            S = np.matmul(O * lam, O.transpose(0, 2, 1)) if O is not None else np.broadcast_to(np.diag(lam), (B, D, D))
        r = np.zeros((B, D))
        s0 = np.full(B, cfg.sigma**2 if cfg.test_label_noise else 0.0)
    else:
        Xs = draw_x(cfg.K)
        S = np.matmul(Xs.transpose(0, 2, 1), Xs) / cfg.K
        if cfg.test_label_noise and cfg.sigma > 0:
            eps = cfg.sigma * rng.standard_normal((B, cfg.K))
            r = _bmv(Xs.transpose(0, 2, 1), eps) / cfg.K
            s0 = np.mean(eps**2, axis=1)
        else:
            r = np.zeros((B, D))
            s0 = np.zeros(B)
    return Shat, c, S, bstar, r, s0


def _forward_backward(Gamma, Shat, c, S, bstar, r, s0, L: int):
    """Per-context losses (B,) and the gradient of their mean w.r.t. Γ (manual backprop through Eq. 54)."""
    B, D = c.shape
    b = np.zeros((B, D))
    gs = []
    for _ in range(L):
        g = c - _bmv(Shat, b)
        gs.append(g)
        b = b + g @ Gamma.T / L
    err = b - bstar
    Serr = err if S is None else _bmv(S, err)
    loss = np.einsum("bi,bi->b", err, Serr) - 2.0 * np.einsum("bi,bi->b", r, err) + s0
    adj = 2.0 * (Serr - r)  # ∂loss/∂b_L
    grad = np.zeros_like(Gamma)
    for ell in range(L - 1, -1, -1):
        grad += adj.T @ gs[ell] / L
        if ell > 0:
            adj = adj - _bmv(Shat, adj @ Gamma) / L
    return loss, grad / B


def simulate_reduced_gamma_sgd(cfg: ReducedGammaSGDConfig, rng: np.random.Generator,
                               Gamma0: np.ndarray | None = None) -> ReducedGammaSGDResult:
    """Online SGD on the reduced-Γ model (seed 002 Eq. 4 / Eq. 55), fresh contexts at every step.

    Each step draws ``B`` contexts of the configured setting, runs ``L`` steps of in-context
    preconditioned GD (Eq. 54) and updates ``Γ ← Γ + η G`` with ``G = -(D/2) ∇_Γ`` of the mean batch
    loss (the ``G`` of Eq. 62 for ``L = 1``; its mean is ``I - a₀Γ``). Theory time is ``t = Σ η``,
    to be compared with the flows ``dγ/dt = -½ L'(γ)`` (:func:`iso_gradient_flow`,
    :func:`rrs_gradient_flow`, :func:`fs_mode_flow`).

    Parameters
    ----------
    cfg : ReducedGammaSGDConfig
    rng : numpy.random.Generator
    Gamma0 : optional initial ``Γ`` (default 0), shape ``(D, D)``

    Raises
    ------
    ValueError
        on bad configuration, or if the iterates blow up (step size too large).
    """
    eta, lam, omega = _check_config(cfg)
    rng = as_generator(rng)
    D, L = cfg.D, int(cfg.L)
    Gamma = np.zeros((D, D)) if Gamma0 is None else np.array(Gamma0, dtype=float)
    if Gamma.shape != (D, D):
        raise ValueError(f"Gamma0: expected shape {(D, D)}, got {Gamma.shape}")
    losses = np.empty(cfg.steps)
    gmean = np.empty(cfg.steps)
    gsq = np.empty(cfg.steps)
    rec_t, rec_d = [], []
    t = np.cumsum(eta)
    for s in range(cfg.steps):
        Shat, c, S, bstar, r, s0 = _sample_batch(cfg, lam, omega, rng)
        loss, grad = _forward_backward(Gamma, Shat, c, S, bstar, r, s0, L)
        Gamma = Gamma - eta[s] * (D / 2.0) * grad
        if not np.all(np.isfinite(Gamma)) or np.abs(Gamma).max() > 1e8:
            raise ValueError(f"eta: SGD diverged at step {s} (step size too large for this setting)")
        losses[s] = loss.mean()
        gmean[s] = np.trace(Gamma) / D
        gsq[s] = np.sum(Gamma**2) / D
        if (s + 1) % cfg.record_every == 0:
            rec_t.append(t[s])
            rec_d.append(np.diag(Gamma).copy())
    return ReducedGammaSGDResult(t=t, batch_loss=losses, t_loss=t - eta, gamma_mean=gmean, gamma_sq_mean=gsq, record_t=np.array(rec_t),
                     gamma_diag=np.array(rec_d).reshape(len(rec_t), D), Gamma=Gamma)


def reduced_gamma_loss_mc(Gamma: np.ndarray, cfg: ReducedGammaSGDConfig, rng: np.random.Generator,
                          n_contexts: int = 2000, chunk: int = 250) -> tuple[float, float]:
    """Population ICL loss of a fixed ``Γ`` by Monte Carlo over ``n_contexts`` fresh contexts.

    Uses the setting, ``D``, ``L``, ``P``, ``σ`` of ``cfg`` with a population test loss
    (``K = None``, irreducible ``σ²`` included). Returns ``(mean, standard error)``.
    """
    import dataclasses

    n_contexts = positive_int(n_contexts, "n_contexts")
    chunk = positive_int(chunk, "chunk")
    rng = as_generator(rng)
    ev_cfg = dataclasses.replace(cfg, K=None, test_label_noise=True, B=min(chunk, n_contexts), steps=1, eta=1.0)
    _, lam, omega = _check_config(ev_cfg)
    Gamma = np.asarray(Gamma, dtype=float)
    if Gamma.shape != (cfg.D, cfg.D):
        raise ValueError(f"Gamma: expected shape {(cfg.D, cfg.D)}, got {Gamma.shape}")
    vals = []
    done = 0
    while done < n_contexts:
        Shat, c, S, bstar, r, s0 = _sample_batch(ev_cfg, lam, omega, rng)
        loss, _ = _forward_backward(Gamma, Shat, c, S, bstar, r, s0, int(cfg.L))
        vals.append(loss)
        done += loss.size
    v = np.concatenate(vals)[:n_contexts]
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))
