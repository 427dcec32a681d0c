"""ISO setting of the reduced-Γ model (Bordelon et al. §3.1, App. C): loss, gradient, optimum
(with the Catalan closed form), gradient flow and finite-``D`` Monte Carlo. Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar

from iclcore.dmft.data import mp_rule
from iclcore.spectra.mp import mp_edges
from iclcore.validation import (
    as_generator,
    check_depth,
    finite_array,
    nondecreasing_times,
    nonnegative_float,
    positive_float,
    positive_int,
)

__all__ = [
    "iso_loss",
    "iso_loss_grad",
    "iso_optimum_closed_form",
    "iso_optimum",
    "iso_depth1_flow",
    "iso_gradient_flow",
    "iso_loss_finite_d_mc",
    "iso_optimum_finite_d_mc",
    "IsoOptimumChecks",
    "iso_optimum_checks",
    "IsoNoiseOptimum",
    "iso_noise_optimum",
    "iso_flow_reach_time",
]


# --------------------------------------------------------------------------------------------------
# ISO setting (Bordelon et al. §3.1, App. C)
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


def iso_loss(gamma: np.ndarray | float, alpha: float, L: int, *, sigma: float = 0.0) -> np.ndarray:
    """ISO ICL loss of ``Γ = γI`` (Bordelon et al. Eq. 8 for σ = 0, Eq. 83 with label noise), plus ``σ²``.

    .. math::
        \\begin{aligned}
        \\mathcal L(\\gamma) = \\sigma^2 + \\int \\rho(\\lambda)\\Big[&(1-\\tfrac{\\gamma\\lambda}{L})^{2L}\\\\
            &+ \\frac{\\sigma^2}{\\alpha\\lambda}\\big(1-(1-\\tfrac{\\gamma\\lambda}{L})^L\\big)^2\\Big] d\\lambda ,
        \\end{aligned}

    ``ρ`` the Marchenko–Pastur law with ratio ``1/α`` (atom at 0 when ``α < 1``). The integrand is a
    polynomial of degree ``2L`` and is integrated exactly by :func:`~iclcore.dmft.data.mp_rule`. The irreducible ``σ²``
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


def iso_loss_grad(gamma: np.ndarray | float, alpha: float, L: int, *, sigma: float = 0.0) -> np.ndarray:
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

    with ``L*(α, 1) = 1/(1+α)`` (Bordelon et al. Result 1 prints ``(1+α)^{-2}``) and ``L*(α, ∞) = [1-α]_+``.

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
    vals = iso_loss(grid, alpha, Lf, sigma=sigma)
    i = int(np.argmin(vals))
    lo_b, hi_b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda x: float(iso_loss(x, alpha, Lf, sigma=sigma)),
        bounds=(lo_b, hi_b),
        method="bounded",
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
    t: np.ndarray, alpha: float, L: int, *, sigma: float = 0.0, gamma0: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient flow ``dγ/dt = -½ dL/dγ`` on the ISO landscape (Bordelon et al. Eqs. 7, 83).

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
    return gamma, iso_loss(gamma, alpha, Lf, sigma=sigma)


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
    gamma: np.ndarray | float,
    alpha: float,
    L: int,
    *,
    D: int,
    rng: np.random.Generator,
    draws: int = 200,
    sigma: float = 0.0,
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
    alpha: float,
    L: int,
    D: int,
    *,
    rng: np.random.Generator,
    draws: int = 200,
    sigma: float = 0.0,
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
    res = minimize_scalar(
        lambda g: float(f(g)), bounds=(grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]), method="bounded"
    )
    return float(res.x), float(res.fun)


# --------------------------------------------------------------------------------------------------
# Checks of the ISO optimum: Catalan formula, depth advantage, label noise (Results 1-2, Figs. 1b, 2c)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IsoOptimumChecks:
    """The ISO optimum checked against its closed forms (:func:`iso_optimum_checks`).

    Attributes
    ----------
    catalan_max_abs : float
        ``max |L(γ*) − L*_Catalan|`` and ``max |L'(γ*)|`` over the ``(α, L)`` grid (quadrature of Eq. 8).
    optimum_L1_alpha1, optimum_L1000_alpha05 : float
        ``L*(α=1, L=1)`` (numerical minimiser) and ``L*(α=1/2, L=1000)`` (Catalan).
    gap_alphas, depth_gap : tuple of float, length ``m``
        Result 2's gap ``L*(α, 1) − [1 − α]_+`` at each ``α`` (numerical minimiser).
    depth_gap_max_dev : float
        ``max |gap (1 + α) − 1|``: the theorem ``gap = 1/(1 + α)``.
    gain_alpha, gain : ndarray, shape (n,)
        Grid and the Catalan gain ``L*(α, 1) − L*(α, deep_L)`` (Fig. 1b).
    gain_argmax_alpha, gain_max : float
        Its argmax on the grid and its maximum.
    gain_inf_argmax_alpha : float
        Argmax of the infinite-depth gain ``L*(α, 1) − [1 − α]_+`` by bounded Brent on ``[0.2, 5]``.
    """

    catalan_max_abs: float
    optimum_L1_alpha1: float
    optimum_L1000_alpha05: float
    gap_alphas: tuple[float, ...]
    depth_gap: tuple[float, ...]
    depth_gap_max_dev: float
    gain_alpha: np.ndarray
    gain: np.ndarray
    gain_argmax_alpha: float
    gain_max: float
    gain_inf_argmax_alpha: float

    def metrics(self) -> dict[str, float]:
        """The scalars of the checks under the chapter's metric names (``dmft_iso``)."""
        return {
            "catalan_vs_quadrature_max_abs": self.catalan_max_abs,
            "iso_Lstar_L1_alpha1": self.optimum_L1_alpha1,
            "iso_Lstar_L1000_alpha05": self.optimum_L1000_alpha05,
            f"iso_depth_gap_alpha{self.gap_alphas[-1]:g}": self.depth_gap[-1],
            "iso_depth_gap_times_one_plus_alpha_max_dev": self.depth_gap_max_dev,
            "iso_depth_gain_argmax_alpha": self.gain_argmax_alpha,
            "iso_depth_gain_max": self.gain_max,
            "iso_depth_gain_inf_argmax_alpha": self.gain_inf_argmax_alpha,
        }


def iso_optimum_checks(
    *,
    grid_alpha: np.ndarray | None = None,
    grid_depths: tuple[int, ...] = (1, 2, 3, 5, 8, 16, 32),
    gap_alphas: tuple[float, ...] = (4.0, 16.0, 64.0, 256.0),
    gain_alpha: np.ndarray | None = None,
    deep_L: int = 8,
) -> IsoOptimumChecks:
    """The ISO optimum at every depth against the Catalan formula, and the depth advantage (Results 1–2).

    On the grid ``grid_alpha x grid_depths`` (default ``linspace(0.1, 6, 60)``): the quadrature loss
    (Eq. 8, :func:`iso_loss`) at the closed-form ``γ* = Lα/(1+α)`` against the Catalan ``L*``
    (:func:`iso_optimum_closed_form`), and its derivative there (zero at the minimiser). Result 2: the
    gap to infinite depth ``L*(α, 1) − [1 − α]_+`` equals ``1/(1 + α)`` for ``α ≥ 1``. Fig. 1b: the gain
    of depth ``deep_L`` over depth 1 on ``gain_alpha`` (default ``geomspace(0.05, 20, 400)``).

    Returns
    -------
    IsoOptimumChecks
    """
    grid_alpha = np.linspace(0.1, 6.0, 60) if grid_alpha is None else finite_array(grid_alpha, "grid_alpha")
    gain_alpha = np.geomspace(0.05, 20.0, 400) if gain_alpha is None else finite_array(gain_alpha, "gain_alpha")
    cat_err = 0.0
    for a in grid_alpha:
        for L in grid_depths:
            g_star, l_star = iso_optimum_closed_form(float(a), L)
            cat_err = max(cat_err, abs(float(iso_loss(g_star, float(a), L)) - l_star))
            cat_err = max(cat_err, abs(float(iso_loss_grad(g_star, float(a), L))))
    gap = tuple(iso_optimum(a, 1)[1] - max(0.0, 1.0 - a) for a in gap_alphas)
    gap_dev = max(abs(g * (1 + a) - 1) for g, a in zip(gap, gap_alphas))
    gain = np.array([iso_optimum_closed_form(a, 1)[1] - iso_optimum_closed_form(a, deep_L)[1] for a in gain_alpha])
    gain_inf_argmax = float(
        minimize_scalar(
            lambda a: -(iso_optimum(a, 1)[1] - max(0.0, 1.0 - a)),
            bounds=(0.2, 5.0),
            method="bounded",
            options={"xatol": 1e-10},
        ).x
    )
    return IsoOptimumChecks(
        catalan_max_abs=cat_err,
        optimum_L1_alpha1=iso_optimum(1.0, 1)[1],
        optimum_L1000_alpha05=iso_optimum_closed_form(0.5, 1000)[1],
        gap_alphas=tuple(gap_alphas),
        depth_gap=gap,
        depth_gap_max_dev=gap_dev,
        gain_alpha=gain_alpha,
        gain=gain,
        gain_argmax_alpha=float(gain_alpha[np.argmax(gain)]),
        gain_max=float(gain.max()),
        gain_inf_argmax_alpha=gain_inf_argmax,
    )


@dataclass(frozen=True)
class IsoNoiseOptimum:
    """The ISO optimum under label noise (:func:`iso_noise_optimum`).

    Attributes
    ----------
    alpha, L : float, int
        The setting of ``gamma_star``.
    sigmas : tuple of float, length ``m``
    gamma_star, loss_star : tuple of float, length ``m``
        The optimum ``(γ*, L*)`` at ``(alpha, L)`` for each ``σ``.
    max_increment : float
        Largest step of ``γ*`` between consecutive ``σ`` over the depths checked (``< 0``: ``γ*``
        decreases with the noise at every depth).
    depth1_vs_closed_form_max_abs : float
        ``max_σ |γ*(σ) − (1 + (1 + σ²)/α)^{-1}|`` at ``L = 1`` (App. C.1, Eqs. 66, 73).
    """

    alpha: float
    L: int
    sigmas: tuple[float, ...]
    gamma_star: tuple[float, ...]
    loss_star: tuple[float, ...]
    max_increment: float
    depth1_vs_closed_form_max_abs: float

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``): ``γ*`` at the smallest and largest ``σ``."""
        at = f"iso_gammastar_L{self.L}_alpha{self.alpha:g}_sigma"
        return {
            f"{at}{self.sigmas[0]:g}": self.gamma_star[0],
            f"{at}{self.sigmas[-1]:g}": self.gamma_star[-1],
            "iso_gammastar_noise_max_increment": self.max_increment,
            "iso_gammastar_L1_vs_eq66_max_abs": self.depth1_vs_closed_form_max_abs,
        }


def iso_noise_optimum(
    alpha: float,
    L: int,
    sigmas: tuple[float, ...],
    *,
    depths: tuple[int, ...] = (1, 2, 4, 8),
    depth1_sigmas: np.ndarray | None = None,
) -> IsoNoiseOptimum:
    """Label noise moves the ISO optimum to smaller ``γ`` (Eq. 83; early stopping as regularisation, Fig. 2c).

    ``γ*(σ)`` by :func:`iso_optimum` at ``(alpha, L)`` for each of ``sigmas`` (increasing); the largest
    increment of ``γ*`` along ``sigmas`` at each of ``depths``; and at ``L = 1`` the whole curve on
    ``depth1_sigmas`` (default ``linspace(0, 1.5, 7)``) against the paper's
    ``Γ* = (1 + (1 + σ²)/α)^{-1}`` (App. C.1, Eqs. 66, 73).

    Returns
    -------
    IsoNoiseOptimum
    """
    if len(sigmas) < 2 or np.any(np.diff(sigmas) <= 0):
        raise ValueError(f"sigmas: expected at least two increasing noise levels, got {sigmas!r}")
    sig_fine = np.linspace(0.0, 1.5, 7) if depth1_sigmas is None else finite_array(depth1_sigmas, "depth1_sigmas")
    opt = [iso_optimum(alpha, L, s) for s in sigmas]
    increment = max(float(np.max(np.diff([iso_optimum(alpha, Lk, s)[0] for s in sigmas]))) for Lk in depths)
    dev = max(abs(iso_optimum(alpha, 1, s)[0] - 1.0 / (1.0 + (1.0 + s**2) / alpha)) for s in sig_fine)
    return IsoNoiseOptimum(
        alpha=alpha,
        L=L,
        sigmas=tuple(sigmas),
        gamma_star=tuple(o[0] for o in opt),
        loss_star=tuple(o[1] for o in opt),
        max_increment=increment,
        depth1_vs_closed_form_max_abs=dev,
    )


def iso_flow_reach_time(alpha: float, L: int, t: np.ndarray, *, rel: float = 1.05) -> float:
    """First time on the grid ``t`` at which the gradient flow (Eq. 7) is within ``rel`` of the optimum.

    The first ``t_i`` with ``L(γ(t_i)) < rel · L*`` (:func:`iso_gradient_flow`,
    :func:`iso_optimum_closed_form`); ``t[0]`` if the flow never gets there on the grid.

    Parameters
    ----------
    alpha : float
    L : int
    t : array_like, shape (T,)
        Non-decreasing times ``>= 0``.
    rel : float
        Tolerance factor ``> 1``.

    Returns
    -------
    float
    """
    if not rel > 1:
        raise ValueError(f"rel: expected a factor > 1, got {rel!r}")
    t = nondecreasing_times(t)
    loss = iso_gradient_flow(t, alpha, L)[1]
    return float(t[np.argmax(loss < rel * iso_optimum_closed_form(alpha, L)[1])])
