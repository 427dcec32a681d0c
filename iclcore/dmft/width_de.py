"""Deterministic equivalents of the width-``N`` model (``N, D → ∞`` at fixed ``N/D``): the
one-point function by contour integration, and the Appendix-A two-point deterministic equivalent
(Eq. 15, 36–40) of a free product ``M = O B Oᵀ A`` with the double contour integral for the loss.
The width-``N`` model, its normalisation ``c = D/N`` and its notation are described in
:mod:`iclcore.dmft`.
"""

from __future__ import annotations

import numpy as np

from iclcore.validation import check_depth, nonnegative_grid, positive_int, spectrum_pair

__all__ = [
    "width_psi",
    "width_loss_de",
    "free_product_psi",
    "two_point_F",
    "two_point_loss_de",
]


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


def width_psi(z: np.ndarray, lam: np.ndarray, alpha_N: float, *, path_start: float | None = None) -> np.ndarray:
    """Subordination function ``psi(z)`` of ``K = (1/alpha_N) Lambda^{1/2} U U^T Lambda^{1/2}``.

    Deterministic equivalent ``(z + K)^{-1} ~ (z + psi(z) Lambda)^{-1}`` with

    .. math:: \\tau = \\mathrm{tr}\\,\\psi\\Lambda(z + \\psi\\Lambda)^{-1},\\qquad
              \\psi = \\frac{1 - \\tau/\\alpha_N}{1 - \\tau},

    which is Bordelon et al. Eq. (36)-(37)/(110) at ``alpha_P = infinity`` in the normalisation
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


def _contour_inputs(gammas: np.ndarray, k_max: float, n_nodes: int) -> tuple[np.ndarray, int]:
    """Validated step sizes ``gammas`` (> 0) and node count (>= 16) of a contour enclosing ``[0, k_max]``."""
    if not (np.isfinite(k_max) and k_max > 0):
        raise ValueError(f"k_max: expected a positive spectral bound, got {k_max}")
    n_nodes = positive_int(n_nodes, "n_nodes", minimum=16)
    g, _ = nonnegative_grid(gammas, "gammas")
    if np.any(g <= 0):
        raise ValueError("gammas: expected values > 0 for the contour representation")
    return g, n_nodes


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
    *,
    N: int,
    L: int,
    k_max: float,
    n_nodes: int = 600,
) -> np.ndarray:
    """Deterministic equivalent of :func:`~iclcore.dmft.width_mc.width_loss` by contour integration.

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
    g, n_nodes = _contour_inputs(gammas, k_max, n_nodes)
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
    z: np.ndarray, a: np.ndarray, b_nodes: np.ndarray, *, b_weights: np.ndarray, start: float | None = None
) -> np.ndarray:
    """``Psi_{v chi}(z)`` of Bordelon et al. App. A for ``M = O B O^T A`` (Eq. 33-37, ``z = i omega``).

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
    *,
    psi2: np.ndarray,
    a: np.ndarray,
    b_nodes: np.ndarray,
    b_weights: np.ndarray,
    C: np.ndarray,
    T: np.ndarray,
    paper_typo: bool = False,
) -> np.ndarray:
    """Two-point deterministic equivalent ``tr[T R(z) C R(z')^T]``, ``R(z) = (z + M)^{-1}``.

    Implements Bordelon et al. App. A Eq. (38)-(40): with ``H = (z + psi A)^{-1}``,
    ``Sigma_{v chi} = tr A H``, ``s = hat Sigma_{v chi} = (1 - tau)/Sigma_{v chi}`` (Eq. 34),
    ``cal A = tr A^2 H H'``, ``cal B = tr (s + B)^{-1} (s' + B)^{-1}``, ``n = tr C A^2 H H'``,

    .. math::

        \\begin{gathered}
        \\Sigma_{vv} = \\frac{n}{1 - [(\\Sigma_{v\\chi}\\Sigma_{v\\chi}')^{-1} - \\mathcal B^{-1}]\\mathcal A},\\\\
        \\Psi_{\\chi\\chi} = \\Sigma_{vv}[\\mathcal B^{-1} - (\\Sigma_{v\\chi}\\Sigma'_{v\\chi})^{-1}],
        \\end{gathered}

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
    *,
    b_weights: np.ndarray,
    C: np.ndarray,
    T: np.ndarray,
    L: int,
    k_max: float,
    n_nodes: int = 240,
    paper_typo: bool = False,
) -> np.ndarray:
    """Loss ``tr[T p(M) C p(M)^T]``, ``p(x) = (1 - gamma x/L)^L``, by the double contour of Eq. (15).

    ``L = oint oint p(zeta) p(zeta') F(-zeta, -zeta') d zeta d zeta' / (2 pi i)^2`` (Bordelon et al.
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
    g, n_nodes = _contour_inputs(gammas, k_max, n_nodes)
    a = np.asarray(a, float)
    out = np.empty(g.size)
    for i, gam in enumerate(g):
        c = L / gam
        r = 1.1 * max(c, k_max - c)
        z1, w1 = _circle(c, r, n_nodes)
        z2, w2 = _circle(c, 1.05 * r, n_nodes + 7)
        st1 = -(c + r + 50.0 * a.max() * max(np.max(b_nodes), 1.0))
        p1 = free_product_psi(-z1, a, b_nodes, b_weights=b_weights, start=st1)
        p2 = free_product_psi(-z2, a, b_nodes, b_weights=b_weights, start=st1)
        F = two_point_F(
            -z1, p1, -z2, psi2=p2, a=a, b_nodes=b_nodes, b_weights=b_weights, C=C, T=T, paper_typo=paper_typo
        )
        q1 = (1.0 - gam * z1 / L) ** L * w1
        q2 = (1.0 - gam * z2 / L) ** L * w2
        out[i] = float(np.real(q1 @ F @ q2))
    return out
