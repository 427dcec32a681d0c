"""Width-N deep linear attention on randomly rotated structured (RRS) data: seed 002 §4, App. A, F.

The width-N model of seed 002 (Eq. 14) sees features ``A x`` with ``A`` a rank-``N`` projection.
Its in-context preconditioner in ``D``-space is a rotated projection, and with RRS data the
population loss of the reduced model depends on one scalar ``gamma``:

.. math::

    \\mathcal L(\\gamma) = \\mathrm{tr}\\,\\Big\\langle \\Lambda\\, p(M)\\, \\Omega\\, p(M)^\\top \\Big\\rangle,
    \\qquad M = c\\,U U^\\top \\hat\\Sigma,\\qquad p(x) = (1 - \\gamma x / L)^L,

where ``U`` (``D x N``) has Haar-distributed orthonormal columns, ``hat Sigma`` is the context's
empirical covariance (``Lambda`` when the context length ``P`` is infinite) and ``tr`` is the
normalised trace ``(1/D) Tr``.

Normalisation (a documented choice of the book). We take ``c = D/N`` so that the preconditioner
is ``Gamma_D = gamma (D/N) U U^T``: at ``N = D`` it is ``gamma I`` and the top eigenvalue of ``M``
stays O(1) for every ``N``. The paper's F.4 uses ``c = 1`` (``(A^T A)^2`` a rank-``N`` projection),
i.e. ``gamma_paper = gamma D / N``. Losses at the optimum and the ``t -> infinity`` bottlenecks do
not depend on this choice; the ``gamma`` axis and the gradient-flow clock do.

Contents
--------
* Monte Carlo one-point reduction at ``P = infinity`` (exact in distribution at finite ``D``):
  :func:`width_spectrum_mc`, :func:`width_loss`, :func:`width_gradient_flow`.
* General Monte Carlo at finite ``N`` and finite ``P``: :func:`width_landscape_mc`.
* Deterministic equivalent (``N, D -> infinity`` at fixed ``N/D``) of the one-point function by
  contour integration: :func:`width_psi`, :func:`width_loss_de`.
* The Appendix-A two-point deterministic equivalent (Eq. 15, 36-40) for a free product
  ``M = O B O^T A``: :func:`free_product_psi`, :func:`two_point_F`, and the double contour
  integral for the loss :func:`two_point_loss_de` (width model at ``P = infinity`` and the
  structured Wishart at finite ``alpha = P/D``).
* The ``t, L -> infinity`` width bottleneck is :attr:`WidthSpectrum.null_loss` (Monte Carlo); its
  closed-form deterministic equivalent (the corrected Eq. 113) and the depth and context
  bottlenecks live in :mod:`iclcore.dmft.reduced` (``width_bottleneck``, ``rrs_optimum``,
  ``context_bottleneck``), which the tests check against this module.

* Untied layers (§5.1, App. G.1): :func:`untied_loss` and the Hessian at the balanced point,
  :func:`untied_balanced_hessian`, and the global untied optimum :func:`untied_optimum` (orthogonal polynomials).

Power-law spectra: :func:`iclcore.dmft.reduced.power_law_spectrum`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from iclcore.linalg import haar_orthogonal
from iclcore.validation import as_generator, check_depth, positive_int, spectrum_pair

__all__ = [
    "haar_columns",
    "WidthSpectrum",
    "width_spectrum_mc",
    "width_loss",
    "width_loss_grad",
    "width_min_loss",
    "GradientFlow",
    "width_gradient_flow",
    "width_landscape_mc",
    "width_psi",
    "width_loss_de",
    "free_product_psi",
    "two_point_F",
    "two_point_loss_de",
    "untied_loss",
    "untied_balanced_hessian",
    "untied_optimum",
]


# --------------------------------------------------------------------------------------------
# Haar frames
# --------------------------------------------------------------------------------------------


def haar_columns(D: int, N: int, rng: np.random.Generator | int) -> np.ndarray:
    """``D x N`` Haar frame (orthonormal columns): :func:`iclcore.linalg.haar_orthogonal` with
    ``columns=N``, checking the width ``N <= D``."""
    D = positive_int(D, "D")
    N = positive_int(N, "N")
    if N > D:
        raise ValueError(f"N: width must be <= D={D}, got {N}")
    return haar_orthogonal(D, rng, columns=N)


# --------------------------------------------------------------------------------------------
# Monte Carlo one-point reduction (P = infinity)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WidthSpectrum:
    """Spectral weights of ``K = (D/N) Lambda^{1/2} U U^T Lambda^{1/2}`` against ``Omega Lambda``.

    The loss of the width-N model at ``P = infinity`` is ``tr[Omega Lambda q(K)]`` with
    ``q(x) = (1 - gamma x / L)^{2L}``; with the eigenpairs ``(s_j, w_j)`` of ``K`` this is
    ``total - sum_j c_j + sum_j c_j q(s_j)``, ``c_j = (1/D) w_j^T Omega Lambda w_j``.

    Attributes
    ----------
    s : numpy.ndarray, shape ``(n_draws * N,)``
        Non-zero eigenvalues of ``K`` (all draws pooled).
    c : numpy.ndarray, shape ``(n_draws * N,)``
        Their weights, divided by the number of draws.
    total : float
        ``tr Omega Lambda`` (the loss at ``gamma = 0``).
    N, D : int
        Width and dimension.
    """

    s: np.ndarray
    c: np.ndarray
    total: float
    N: int
    D: int

    @property
    def null_loss(self) -> float:
        """``tr[Omega Lambda P_ker(K)]``: the loss left in the null space of ``K`` (t, L -> inf)."""
        return float(self.total - self.c.sum())


def width_spectrum_mc(
    lam: np.ndarray, omega: np.ndarray, N: int, rng: np.random.Generator, n_draws: int = 1
) -> WidthSpectrum:
    """Monte Carlo one-point reduction of the width-N RRS loss at ``P = infinity``.

    Implements seed 002 Eq. (14), (19) and (102) at ``P = infinity`` through the identity
    ``p(M)^T Lambda p(M) = Lambda^{1/2} p(K)^2 Lambda^{1/2}`` for ``M = B Lambda``,
    ``K = Lambda^{1/2} B Lambda^{1/2}`` (``B = (D/N) U U^T``), which turns the paper's
    "two-point" object (Eq. 15) into a one-point function of ``K``. Exact in distribution at
    finite ``D``; each draw costs one ``D x N`` QR and one ``N x N`` eigendecomposition.

    Parameters
    ----------
    lam, omega : array, shape ``(D,)``
        Eigenvalues of the data covariance ``Lambda`` and task covariance ``Omega``.
    N : int
        Width, ``1 <= N <= D``.
    rng : numpy.random.Generator
    n_draws : int
        Number of independent projections pooled.
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    N = positive_int(N, "N")
    if N > D:
        raise ValueError(f"N: width must be <= D={D}, got {N}")
    n_draws = positive_int(n_draws, "n_draws")
    rng = as_generator(rng)
    cst = D / N
    ss, cs = [], []
    sq = np.sqrt(lam)
    for _ in range(n_draws):
        U = haar_orthogonal(D, rng, columns=N)
        S = cst * (U.T * lam) @ U
        s, V = np.linalg.eigh(S)
        s = np.clip(s, 1e-300, None)
        W = (sq[:, None] * (U @ V)) * np.sqrt(cst / s)  # eigenvectors of K, unit norm
        c = (omega * lam) @ (W**2) / D
        ss.append(s)
        cs.append(c / n_draws)
    return WidthSpectrum(
        s=np.concatenate(ss), c=np.concatenate(cs), total=float(np.mean(omega * lam)), N=N, D=D
    )


def _q_and_dq(gammas: np.ndarray, s: np.ndarray, L: float) -> tuple[np.ndarray, np.ndarray]:
    """``q = (1 - g s / L)^{2L}`` and ``dq/dg`` on the grid ``gammas[:, None] * s[None, :]``."""
    g = gammas[:, None]
    if np.isinf(L):
        q = np.exp(-2.0 * g * s[None, :])
        return q, -2.0 * s[None, :] * q
    Li = int(L)
    u = 1.0 - g * s[None, :] / Li
    return u ** (2 * Li), -2.0 * s[None, :] * u ** (2 * Li - 1)


def _as_gammas(gammas: object) -> tuple[np.ndarray, bool]:
    g = np.asarray(gammas, dtype=float)
    scalar = g.ndim == 0
    g = np.atleast_1d(g)
    if g.ndim != 1 or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError("gammas: expected finite values >= 0 (scalar or 1-D array)")
    return g, scalar


def width_loss(gammas: np.ndarray | float, spec: WidthSpectrum, L: int | float) -> np.ndarray:
    """Population loss ``L(gamma) = tr[Omega Lambda (I - gamma K / L)^{2L}]`` of the width-N model.

    Seed 002 Eq. (15)/(102) at ``P = infinity`` (tied layers, Eq. 19 with ``gamma^l = gamma``).
    ``L = numpy.inf`` gives the infinite-depth limit ``exp(-2 gamma K)``.

    Returns
    -------
    numpy.ndarray of the shape of ``gammas`` (0-d for a scalar).
    """
    Lf = float(check_depth(L, allow_inf=True))
    g, scalar = _as_gammas(gammas)
    q, _ = _q_and_dq(g, spec.s, Lf)
    out = spec.null_loss + q @ spec.c
    return out[0] if scalar else out


def width_loss_grad(gammas: np.ndarray | float, spec: WidthSpectrum, L: int | float) -> np.ndarray:
    """``d L / d gamma`` of :func:`width_loss` (analytic)."""
    Lf = float(check_depth(L, allow_inf=True))
    g, scalar = _as_gammas(gammas)
    _, dq = _q_and_dq(g, spec.s, Lf)
    out = dq @ spec.c
    return out[0] if scalar else out


def width_min_loss(spec: WidthSpectrum, L: int) -> tuple[float, float]:
    """Minimum over ``gamma`` of :func:`width_loss` at finite depth: returns ``(gamma_*, L_*)``.

    The minimiser lies in ``(0, 2L / s_max)`` (stability window of the top mode); the loss is
    minimised by bounded Brent search after bracketing the sign change of the derivative.
    """
    Lf = float(check_depth(L, allow_inf=True))
    if np.isinf(Lf):
        raise ValueError("L: the infinite-depth loss has no finite minimiser (it decreases to null_loss)")
    hi = 2.0 * Lf / spec.s.max()
    grid = np.linspace(0.0, hi, 2001)[1:-1]
    d = width_loss_grad(grid, spec, L)
    idx = np.nonzero(d > 0)[0]
    if idx.size == 0:
        g0 = grid[-1]
    else:
        j = idx[0]
        g0 = brentq(lambda x: float(width_loss_grad(x, spec, L)), grid[max(j - 1, 0)] if j > 0 else 0.0, grid[j])
    return float(g0), float(width_loss(g0, spec, L))


@dataclass(frozen=True)
class GradientFlow:
    """Solution of ``d gamma / dt = -(1/2) dL/dgamma`` from ``gamma(0) = gamma0``.

    Attributes
    ----------
    t, gamma, loss : numpy.ndarray, shape ``(n_t,)``
    """

    t: np.ndarray
    gamma: np.ndarray
    loss: np.ndarray


def width_gradient_flow(
    spec: WidthSpectrum, L: int | float, t: np.ndarray, gamma0: float = 0.0, rtol: float = 1e-9
) -> GradientFlow:
    """Gradient flow of the width-N model on its one-dimensional landscape.

    Implements seed 002 Eq. (13) generalised to width N (Result 7): ``d gamma/dt = -(1/2)
    dL/dgamma`` (the paper's time convention of Eq. 7/13, i.e. ``t = eta * steps`` for SGD with
    the matrix update ``Gamma += -eta (N/2) grad``; see the chapter).

    Parameters
    ----------
    spec : WidthSpectrum
    L : int or numpy.inf
    t : array, shape ``(n_t,)``, non-decreasing, ``t >= 0``
    gamma0 : float
    """
    Lf = float(check_depth(L, allow_inf=True))
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 1 or np.any(t < 0) or np.any(np.diff(t) < 0):
        raise ValueError("t: expected a non-decreasing 1-D array of times >= 0")

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        return np.array([-0.5 * float(width_loss_grad(max(y[0], 0.0), spec, Lf))])

    def jac(_t: float, y: np.ndarray) -> np.ndarray:
        g = max(y[0], 0.0)
        if np.isinf(Lf):
            d2 = 4.0 * spec.s**2 * np.exp(-2.0 * g * spec.s)
        else:
            Li = int(Lf)
            u = 1.0 - g * spec.s / Li
            d2 = 2.0 * (2 * Li - 1) / Li * spec.s**2 * u ** (2 * Li - 2)
        return np.array([[-0.5 * float(d2 @ spec.c)]])

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [float(gamma0)], t_eval=t, method="LSODA",
                    jac=jac, rtol=rtol, atol=1e-12)
    if not sol.success:  # pragma: no cover - defensive
        raise RuntimeError(f"width_gradient_flow: ODE solver failed: {sol.message}")
    gam = sol.y[0]
    return GradientFlow(t=t, gamma=gam, loss=np.asarray(width_loss(gam, spec, Lf)))


# --------------------------------------------------------------------------------------------
# General Monte Carlo: finite width and finite context
# --------------------------------------------------------------------------------------------


def width_landscape_mc(
    gammas: np.ndarray,
    lam: np.ndarray,
    omega: np.ndarray,
    N: int,
    L: int,
    rng: np.random.Generator,
    P: int | None = None,
    n_draws: int = 8,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo of the width-N RRS loss at finite context length ``P`` (general Eq. 15).

    With ``B = (D/N) U U^T`` and ``hat Sigma = Lambda^{1/2} Z^T Z Lambda^{1/2} / P``
    (``Z`` of shape ``(P, D)`` standard Gaussian; ``hat Sigma = Lambda`` if ``P`` is None),
    ``p(M) = I + c G r(S) G^T hat Sigma`` where ``S = c U^T hat Sigma U = V diag(s) V^T``,
    ``G = U V`` and ``r(s) = (p(s) - 1)/s``; the loss ``tr[Lambda p(M) Omega p(M)^T]`` is then a
    quadratic form in ``r`` evaluated for all ``gammas`` at once. Noise-free targets.

    Returns
    -------
    loss, dloss : numpy.ndarray, shape ``(len(gammas),)``
        Mean over draws of the loss and of its derivative in ``gamma``.
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    N = positive_int(N, "N")
    if N > D:
        raise ValueError(f"N: width must be <= D={D}, got {N}")
    Lf = float(check_depth(L, allow_inf=True))
    if np.isinf(Lf):
        raise ValueError("L: width_landscape_mc needs a finite depth")
    L = int(Lf)
    if P is not None:
        P = positive_int(P, "P")
    n_draws = positive_int(n_draws, "n_draws")
    rng = as_generator(rng)
    g, _ = _as_gammas(gammas)
    cst = D / N
    sq = np.sqrt(lam)
    base = float(np.mean(lam * omega))
    loss = np.zeros(g.size)
    dloss = np.zeros(g.size)
    for _ in range(n_draws):
        U = np.eye(D) if N == D else haar_orthogonal(D, rng, columns=N)
        if P is None:
            Sig = np.diag(lam)
        else:
            Z = rng.standard_normal((P, D)) * sq
            Sig = Z.T @ Z / P
        S = cst * U.T @ Sig @ U
        s, V = np.linalg.eigh(S)
        G = U @ V  # (D, N)
        H = G.T @ Sig  # (N, D)
        a = np.sum(G * (lam * omega)[:, None] * H.T, axis=0)  # a_j = (H Omega Lambda G)_jj
        GLG = (G.T * lam) @ G  # (N, N)
        HOH = (H * omega) @ H.T  # (N, N)
        Q = GLG * HOH  # elementwise; symmetric
        u = 1.0 - g[:, None] * s[None, :] / L
        pol = u**L
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(np.abs(s) > 1e-14, (pol - 1.0) / s, -g[:, None] * 1.0)
        dr = -(u ** (L - 1))
        quad = np.einsum("gj,jk,gk->g", r, Q, r)
        loss += base + (2 * cst / D) * (r @ a) + (cst**2 / D) * quad
        dloss += (2 * cst / D) * (dr @ a) + (2 * cst**2 / D) * np.einsum("gj,jk,gk->g", dr, Q, r)
    return loss / n_draws, dloss / n_draws


# --------------------------------------------------------------------------------------------
# Deterministic equivalent, one point (P = infinity)
# --------------------------------------------------------------------------------------------


def _newton(f_df, x0: complex, tol: float = 1e-13, maxiter: int = 60) -> tuple[complex, float]:
    x = complex(x0)
    res = np.inf
    for _ in range(maxiter):
        f, df = f_df(x)
        res = abs(f)
        if res < tol:
            break
        step = f / df
        # damped step keeps the iteration on the continued branch
        lam = 1.0
        while lam > 1e-4:
            xn = x - lam * step
            fn, _ = f_df(xn)
            if abs(fn) < res or lam <= 1e-3:
                break
            lam *= 0.5
        x = xn
    f, _ = f_df(x)
    return x, abs(f)


def _continuation(f_df, z: np.ndarray, start: float, psi0: complex, n_lead: int, name: str) -> np.ndarray:
    """Solve ``f(psi; zz) = 0`` along the ordered path ``z`` by Newton continuation.

    The solution branch is selected far out on the real axis (at ``start``, where ``psi0`` is
    close to it) and followed along a straight lead-in of ``n_lead`` points to ``z[0]``, then
    along ``z``; each solve starts from the previous solution.
    """
    lead = np.linspace(start, z[0].real, n_lead) + 1j * np.linspace(0.0, z[0].imag, n_lead)
    psi = psi0
    for zz in lead:
        psi, _ = _newton(lambda p: f_df(p, zz), psi)
    out = np.empty(z.size, dtype=complex)
    for i, zz in enumerate(z):
        psi, res = _newton(lambda p: f_df(p, zz), psi)
        if res > 1e-9:
            raise RuntimeError(f"{name}: Newton continuation failed at z={zz} (residual {res:.1e})")
        out[i] = psi
    return out


def width_psi(z: np.ndarray, lam: np.ndarray, alpha_N: float, path_start: float | None = None) -> np.ndarray:
    """Subordination function ``psi(z)`` of ``K = (1/alpha_N) Lambda^{1/2} U U^T Lambda^{1/2}``.

    Deterministic equivalent ``(z + K)^{-1} ~ (z + psi(z) Lambda)^{-1}`` with

    .. math:: \\tau = \\mathrm{tr}\\,\\psi\\Lambda(z + \\psi\\Lambda)^{-1},\\qquad
              \\psi = \\frac{1 - \\tau/\\alpha_N}{1 - \\tau},

    which is seed 002 Eq. (36)-(37)/(110) at ``alpha_P = infinity`` in the normalisation
    ``B = (1/alpha_N) x projection`` (the paper's ``B`` = projection gives
    ``psi = (alpha_N - tau)/(1 - tau)``). ``psi = z / (i omega_Lambda)`` is the *unrotated*
    factor's inverse tau-transform (Eq. 16/105 print ``(A^T A)^2`` instead).

    The roots are followed by Newton continuation along the given path of ``z`` values, started
    from a large real ``z`` where ``psi ~ 1``.

    Parameters
    ----------
    z : complex array, shape ``(n,)``, an ordered path (consecutive points close together)
    lam : array ``(D,)``
    alpha_N : float in (0, 1]
    """
    lam = np.asarray(lam, dtype=float)
    if not (0 < alpha_N <= 1):
        raise ValueError(f"alpha_N: width ratio N/D must be in (0, 1], got {alpha_N}")
    z = np.asarray(z, dtype=complex).ravel()

    def f_df(psi: complex, zz: complex):
        den = zz + psi * lam
        tau = np.mean(psi * lam / den)
        dtau = np.mean(zz * lam / den**2)
        # (1 - tau)(psi) - (1 - tau/alpha_N) = 0
        f = (1.0 - tau) * psi - (1.0 - tau / alpha_N)
        df = -dtau * psi + (1.0 - tau) + dtau / alpha_N
        return f, df

    start = abs(z[0]) + 50.0 * lam.max() if path_start is None else path_start
    return _continuation(f_df, z, start, 1.0 + 0j, 40, "width_psi")


def _circle(center: float, radius: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and ``d zeta / (2 pi i)`` trapezoid weights of a counter-clockwise circle."""
    th = 2 * np.pi * (np.arange(n) + 0.5) / n
    zeta = center + radius * np.exp(1j * th)
    w = radius * np.exp(1j * th) / n  # (i r e^{i th} dth) / (2 pi i) with dth = 2 pi / n
    return zeta, w


def width_loss_de(
    gammas: np.ndarray,
    lam: np.ndarray,
    omega: np.ndarray,
    N: int,
    L: int,
    k_max: float,
    n_nodes: int = 600,
) -> np.ndarray:
    """Deterministic equivalent of :func:`width_loss` by contour integration.

    ``L(gamma) = (1/2 pi i) oint q(zeta) tr[Omega Lambda (zeta - K)^{-1}] d zeta`` with
    ``(zeta - K)^{-1} ~ (zeta - psi(-zeta) Lambda)^{-1}`` (:func:`width_psi`), on a circle of
    centre ``L/gamma`` (where ``q = (1 - gamma zeta / L)^{2L}`` vanishes) enclosing ``[0, k_max]``;
    then ``|q| <= 1.1^{2L}`` on the contour whenever ``gamma <= 2L/k_max``.

    Parameters
    ----------
    gammas : array ``(n_g,)``, each in ``(0, 2L/k_max]``
    lam, omega : arrays ``(D,)``
    N : int, width (``alpha_N = N/D``)
    L : int, depth
    k_max : float
        An upper bound of the spectrum of ``K`` (e.g. 1.2 x the top eigenvalue of one sample).
    n_nodes : int
        Trapezoid nodes on the circle (geometric convergence).
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    N = positive_int(N, "N")
    if N > D:
        raise ValueError(f"N: width must be <= D={D}, got {N}")
    Ld = check_depth(L, allow_inf=True)
    L = None if Ld == np.inf else Ld
    if L is None:
        raise ValueError("L: width_loss_de needs a finite depth")
    if not (np.isfinite(k_max) and k_max > 0):
        raise ValueError(f"k_max: expected a positive spectral bound, got {k_max}")
    n_nodes = positive_int(n_nodes, "n_nodes", minimum=16)
    g, _ = _as_gammas(gammas)
    if np.any(g <= 0):
        raise ValueError("gammas: expected values > 0 for the contour representation")
    aN = N / D
    C = omega * lam
    out = np.empty(g.size)
    for i, gam in enumerate(g):
        c = L / gam
        r = 1.1 * max(c, k_max - c)
        zeta, w = _circle(c, r, n_nodes)
        # start the path at the rightmost node and go round
        psi = width_psi(-zeta, lam, aN, path_start=-(c + r + 50.0 * lam.max()))
        G = np.array([np.mean(C / (zt - ps * lam)) for zt, ps in zip(zeta, psi)])
        q = (1.0 - gam * zeta / L) ** (2 * L)
        out[i] = float(np.real(np.sum(w * q * G)))
    return out


# --------------------------------------------------------------------------------------------
# Appendix A: two-point deterministic equivalent of a free product M = O B O^T A
# --------------------------------------------------------------------------------------------


def free_product_psi(
    z: np.ndarray, a: np.ndarray, b_nodes: np.ndarray, b_weights: np.ndarray, start: float | None = None
) -> np.ndarray:
    """``Psi_{v chi}(z)`` of seed 002 App. A for ``M = O B O^T A`` (Eq. 33-37, ``z = i omega``).

    Solves ``tau = tr[psi A (z + psi A)^{-1}] = tau_B(u_B)`` with ``u_B = (1/tau - 1) psi``
    (Eq. 36; equivalently the product rule Eq. 37 ``u_A u_B = (1 - tau) z / tau``), where
    ``tau_B(u) = sum_j w_j b_j / (u + b_j)`` uses a quadrature of the spectrum of ``B`` (atoms
    allowed). Newton continuation along the path ``z`` from a large real value (``psi -> tr B``).

    Parameters
    ----------
    z : complex array ``(n,)``, an ordered path
    a : array ``(D,)``, eigenvalues of the fixed factor ``A``
    b_nodes, b_weights : arrays ``(m,)``, spectral measure of ``B`` (weights sum to 1)
    """
    a = np.asarray(a, dtype=float)
    bn = np.asarray(b_nodes, dtype=float)
    bw = np.asarray(b_weights, dtype=float)
    if bn.shape != bw.shape or bn.ndim != 1:
        raise ValueError("b_weights: expected the same 1-D shape as b_nodes")
    if abs(bw.sum() - 1.0) > 1e-8 or np.any(bw < 0):
        raise ValueError("b_weights: expected non-negative weights summing to 1")
    z = np.asarray(z, dtype=complex).ravel()
    trB = float(bw @ bn)

    def f_df(psi: complex, zz: complex):
        den = zz + psi * a
        tau = np.mean(psi * a / den)
        dtau = np.mean(zz * a / den**2)
        u = (1.0 / tau - 1.0) * psi
        du = (1.0 / tau - 1.0) - psi * dtau / tau**2
        tb = np.sum(bw * bn / (u + bn))
        dtb = -np.sum(bw * bn / (u + bn) ** 2)
        return tb - tau, dtb * du - dtau

    s0 = abs(z[0]) + 50.0 * (a.max() * max(bn.max(), 1.0)) if start is None else start
    return _continuation(f_df, z, s0, trB + 0j, 60, "free_product_psi")


def two_point_F(
    z1: np.ndarray,
    psi1: np.ndarray,
    z2: np.ndarray,
    psi2: np.ndarray,
    a: np.ndarray,
    b_nodes: np.ndarray,
    b_weights: np.ndarray,
    C: np.ndarray,
    T: np.ndarray,
    paper_typo: bool = False,
) -> np.ndarray:
    """Two-point deterministic equivalent ``tr[T R(z) C R(z')^T]``, ``R(z) = (z + M)^{-1}``.

    Implements seed 002 App. A Eq. (38)-(40): with ``H = (z + psi A)^{-1}``,
    ``Sigma_{v chi} = tr A H``, ``s = hat Sigma_{v chi} = (1 - tau)/Sigma_{v chi}`` (Eq. 34),
    ``cal A = tr A^2 H H'``, ``cal B = tr (s + B)^{-1} (s' + B)^{-1}``, ``n = tr C A^2 H H'``,

    .. math:: \\Sigma_{vv} = \\frac{n}{1 - [(\\Sigma_{v\\chi}\\Sigma_{v\\chi}')^{-1} - \\mathcal B^{-1}]\\mathcal A},
              \\quad \\Psi_{\\chi\\chi} = \\Sigma_{vv}[\\mathcal B^{-1} - (\\Sigma_{v\\chi}\\Sigma'_{v\\chi})^{-1}],

    and ``tr[T R C R'^T] ~ tr[T H (C - Psi_chichi) H']`` (Eq. 40). The relation for
    ``Psi_chichi`` follows from Eq. (38) with ``hat Sigma_chichi = -Sigma_vv / cal B`` (line 2 of
    Eq. 38); the text after Eq. (39) prints ``hat Sigma_chichi = -cal B Sigma_vv``, which
    ``paper_typo=True`` reproduces for comparison.

    Parameters
    ----------
    z1, psi1 : complex arrays ``(n1,)``; z2, psi2 : ``(n2,)`` (from :func:`free_product_psi`)
    a : ``(D,)`` eigenvalues of ``A``; b_nodes, b_weights : spectral measure of ``B``
    C, T : ``(D,)`` diagonals of the source covariance and of the test matrix (same basis as A)

    Returns
    -------
    complex array ``(n1, n2)``
    """
    a = np.asarray(a, float)
    C = np.asarray(C, float)
    T = np.asarray(T, float)
    bn = np.asarray(b_nodes, float)
    bw = np.asarray(b_weights, float)
    D = a.size
    H1 = 1.0 / (np.asarray(z1)[:, None] + np.asarray(psi1)[:, None] * a[None, :])  # (n1, D)
    H2 = 1.0 / (np.asarray(z2)[:, None] + np.asarray(psi2)[:, None] * a[None, :])
    S1 = (H1 @ a) / D
    S2 = (H2 @ a) / D
    tau1 = np.asarray(psi1) * S1
    tau2 = np.asarray(psi2) * S2
    s1 = (1.0 - tau1) / S1
    s2 = (1.0 - tau2) / S2
    calA = (H1 * a**2) @ H2.T / D
    nn = (H1 * (C * a**2)) @ H2.T / D
    calB = (bw / (s1[:, None] + bn[None, :])) @ (1.0 / (s2[:, None] + bn[None, :])).T
    SS = S1[:, None] * S2[None, :]
    Svv = nn / (1.0 - (1.0 / SS - 1.0 / calB) * calA)
    if paper_typo:
        Psi = -(-calB * Svv) - Svv / SS
    else:
        Psi = Svv * (1.0 / calB - 1.0 / SS)
    THCH = (H1 * (T * C)) @ H2.T / D
    THH = (H1 * T) @ H2.T / D
    return THCH - Psi * THH


def two_point_loss_de(
    gammas: np.ndarray,
    a: np.ndarray,
    b_nodes: np.ndarray,
    b_weights: np.ndarray,
    C: np.ndarray,
    T: np.ndarray,
    L: int,
    k_max: float,
    n_nodes: int = 240,
    paper_typo: bool = False,
) -> np.ndarray:
    """Loss ``tr[T p(M) C p(M)^T]``, ``p(x) = (1 - gamma x/L)^L``, by the double contour of Eq. (15).

    ``L = oint oint p(zeta) p(zeta') F(-zeta, -zeta') d zeta d zeta' / (2 pi i)^2`` (seed 002
    Eq. 15/101-104 with ``i omega = -zeta``), ``F`` from :func:`two_point_F`. The two circles are
    centred at ``L/gamma`` with radii ``r`` and ``1.05 r`` (so that nodes never coincide) and
    enclose ``[0, k_max]``.

    Specialisations used in the book:

    * width N at ``P = infinity``: ``a = lam``, ``B = (D/N) x`` projection (nodes ``[0, D/N]``,
      weights ``[1 - N/D, N/D]``), ``C = omega``, ``T = lam``;
    * finite ``alpha = P/D`` at ``N = D``: ``a = lam``, ``B`` = white Marchenko-Pastur with ratio
      ``1/alpha`` (:func:`iclcore.spectra.mp.mp_quadrature`), ``C = 1``, ``T = omega * lam``.
    """
    Lf = float(check_depth(L, allow_inf=True))
    if np.isinf(Lf):
        raise ValueError("L: two_point_loss_de needs a finite depth")
    L = int(Lf)
    if not (np.isfinite(k_max) and k_max > 0):
        raise ValueError(f"k_max: expected a positive spectral bound, got {k_max}")
    n_nodes = positive_int(n_nodes, "n_nodes", minimum=16)
    g, _ = _as_gammas(gammas)
    if np.any(g <= 0):
        raise ValueError("gammas: expected values > 0 for the contour representation")
    a = np.asarray(a, float)
    out = np.empty(g.size)
    for i, gam in enumerate(g):
        c = L / gam
        r = 1.1 * max(c, k_max - c)
        z1, w1 = _circle(c, r, n_nodes)
        z2, w2 = _circle(c, 1.05 * r, n_nodes + 7)
        st1 = -(c + r + 50.0 * a.max() * max(np.max(b_nodes), 1.0))
        p1 = free_product_psi(-z1, a, b_nodes, b_weights, start=st1)
        p2 = free_product_psi(-z2, a, b_nodes, b_weights, start=st1)
        F = two_point_F(-z1, p1, -z2, p2, a, b_nodes, b_weights, C, T, paper_typo=paper_typo)
        q1 = (1.0 - gam * z1 / L) ** L * w1
        q2 = (1.0 - gam * z2 / L) ** L * w2
        out[i] = float(np.real(q1 @ F @ q2))
    return out


# --------------------------------------------------------------------------------------------
# Untied layers at N = D, P = infinity (seed 002 §5.1, Eq. 19/117, App. G.1)
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
    """Global minimum of :func:`untied_loss` over the ``L`` layer scales (seed 002 §5.1, Eq. 117).

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
