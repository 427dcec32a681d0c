"""Marchenko–Pastur toolkit: density, atom, edges, Stieltjes transform, moments, quadrature.

Marchenko-Pastur conventions
----------------------------
For a design ``X`` of shape ``(M, K)`` with i.i.d. standard Gaussian (or any unit-variance) entries,
the eigenvalues of the ``K x K`` matrix ``(1/M) X^T X`` follow, as ``K, M -> inf`` with
``gamma = K / M`` fixed, the Marchenko–Pastur law ``mu_MP,gamma`` (main paper §4 and §9):

.. math::

    \\begin{gathered}
    \\begin{aligned}
    \\mu_{\\mathrm{MP},\\gamma}(dx) ={}& \\max(0, 1 - 1/\\gamma)\\,\\delta_0(dx)\\\\
        &+ \\frac{\\sqrt{(b - x)(x - a)}}{2\\pi\\gamma x}\\,\\mathbf 1_{[a, b]}(x)\\,dx,
    \\end{aligned}\\\\
    a, b = (1 \\mp \\sqrt{\\gamma})^2 .
    \\end{gathered}

The law has mean 1 and variance ``gamma``. For ``gamma > 1`` the matrix has rank ``M < K`` and the
law has an atom of mass ``1 - 1/gamma`` at zero; its absolutely continuous part has total mass
``1/gamma`` and is the law of ``gamma * Y`` (scaled by ``1/gamma``) with ``Y ~ MP(1/gamma)``
(the nonzero spectrum of ``X^T X`` equals that of ``X X^T``).

Implements main paper §4 (edges ``lambda_pm = (1 +- sqrt(gamma))^2``) and §9 (``m_gamma(z)``,
support of ``mu_MP,gamma``). The quadrature is the Gauss rule of the law itself, built from its
Jacobi (three-term recurrence) matrix, which is known in closed form: the monic orthogonal
polynomials of ``mu_MP,gamma`` satisfy ``p_{n+1}(x) = (x - alpha_n) p_n(x) - omega_n p_{n-1}(x)``
with ``alpha_0 = 1``, ``alpha_n = 1 + gamma`` (``n >= 1``) and ``omega_n = gamma`` (``n >= 1``)
(free Poisson law with rate ``1/gamma`` and jump size ``gamma``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.linalg import eigh_tridiagonal

from iclcore.validation import as_generator, positive_int

__all__ = [
    "mp_edges",
    "mp_atom",
    "mp_density",
    "mp_cdf",
    "mp_stieltjes",
    "mp_moment",
    "mp_jacobi_matrix",
    "mp_quadrature",
    "mp_integral",
    "mp_sample_eigenvalues",
]


def _check_gamma(gamma: float) -> float:
    if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, (int, float, np.integer, np.floating)):
        raise TypeError(f"gamma: expected a real number, got {type(gamma).__name__}")
    g = float(gamma)
    if not math.isfinite(g) or g <= 0.0:
        raise ValueError(f"gamma: the aspect ratio K/M must be a finite positive number, got {gamma!r}")
    return g


def mp_edges(gamma: float) -> tuple[float, float]:
    """Edges of the continuous part of the Marchenko–Pastur law.

    Parameters
    ----------
    gamma : float
        Aspect ratio ``K / M > 0``.

    Returns
    -------
    (lo, hi) : tuple of float
        ``((1 - sqrt(gamma))^2, (1 + sqrt(gamma))^2)`` (main paper §4, ``lambda_pm^MP``).
    """
    g = _check_gamma(gamma)
    s = math.sqrt(g)
    return (1.0 - s) ** 2, (1.0 + s) ** 2


def mp_atom(gamma: float) -> float:
    """Mass of the atom at zero, ``max(0, 1 - 1/gamma)`` (nonzero only when ``K > M``)."""
    g = _check_gamma(gamma)
    return max(0.0, 1.0 - 1.0 / g)


def mp_density(x: np.ndarray | float, gamma: float) -> np.ndarray:
    """Density of the absolutely continuous part of ``mu_MP,gamma``.

    ``sqrt((b - x)(x - a)) / (2 pi gamma x)`` on ``[a, b]``, zero elsewhere. It integrates to
    ``1 - mp_atom(gamma)``. For ``gamma == 1`` (``a = 0``) the density diverges like ``x^{-1/2}``
    at the origin and ``+inf`` is returned at ``x == 0``.

    Parameters
    ----------
    x : array_like, any shape
        Evaluation points.
    gamma : float
        Aspect ratio ``K / M``.

    Returns
    -------
    numpy.ndarray, same shape as ``x``
    """
    g = _check_gamma(gamma)
    x = np.asarray(x, dtype=float)
    if np.isnan(x).any():
        raise ValueError("x: contains NaN")
    a, b = mp_edges(g)
    out = np.zeros_like(x)
    inside = (x > a) & (x < b) & (x > 0)
    xi = x[inside]
    out[inside] = np.sqrt((b - xi) * (xi - a)) / (2.0 * math.pi * g * xi)
    if a == 0.0:
        out[x == 0.0] = np.inf
    return out


def mp_cdf(x: np.ndarray | float, gamma: float, n: int = 96) -> np.ndarray:
    """Cumulative distribution function of ``mu_MP,gamma`` (atom included).

    Computed in the angle variable ``x = a + (b - a)(1 - cos theta)/2``, in which the density
    times ``dx`` is ``(b-a)^2 sin^2(theta) / (8 pi gamma x) d theta``, a smooth (analytic)
    integrand even at the square-root edges and for ``gamma = 1``; an ``n``-point
    Gauss–Legendre rule on ``[0, theta(x)]`` is accurate to about 1e-14 for ``gamma`` not
    extremely close to 1.

    Parameters
    ----------
    x : array_like
    gamma : float
    n : int
        Number of Gauss–Legendre nodes per evaluation point.

    Returns
    -------
    numpy.ndarray, same shape as ``x``
    """
    g = _check_gamma(gamma)
    n = _check_n(n)
    x = np.asarray(x, dtype=float)
    if np.isnan(x).any():
        raise ValueError("x: contains NaN")
    a, b = mp_edges(g)
    atom = mp_atom(g)
    u = np.clip((x - a) / (b - a), 0.0, 1.0)
    theta_x = np.arccos(1.0 - 2.0 * u)  # in [0, pi]
    t, w = np.polynomial.legendre.leggauss(n)
    # map [-1, 1] -> [0, theta_x]
    th = 0.5 * theta_x[..., None] * (t + 1.0)
    xx = a + (b - a) * (1.0 - np.cos(th)) / 2.0
    integrand = (b - a) ** 2 * np.sin(th) ** 2 / (8.0 * math.pi * g * np.where(xx > 0, xx, 1.0))
    if a == 0.0:  # gamma == 1: sin^2(theta) / x = 2 (1 + cos theta) / b, smooth; avoids 0/0
        integrand = b * (1.0 + np.cos(th)) / (4.0 * math.pi * g)
    ac = 0.5 * theta_x * (integrand @ w)
    out = ac + np.where(x >= 0.0, atom, 0.0)
    return np.clip(out, 0.0, 1.0)


def mp_stieltjes(z: np.ndarray | complex, gamma: float) -> np.ndarray:
    """Stieltjes transform ``m_gamma(z) = int dmu_MP,gamma(lambda) / (lambda - z)`` (main paper §9).

    Closed form on the physical branch,

    .. math::
        m(z) = \\frac{1 - \\gamma - z + \\sqrt{z - a}\\,\\sqrt{z - b}}{2 \\gamma z},

    with principal square roots, so that ``sqrt(z-a) sqrt(z-b) ~ z - (1 + gamma)`` at infinity,
    the cut is exactly ``[a, b]``, and ``m(z) ~ -1/z``. It solves the functional equation
    ``gamma z m^2 + (z + gamma - 1) m + 1 = 0`` and includes the pole ``-(1 - 1/gamma)/z`` of
    the atom when ``gamma > 1``. ``Im m(z) > 0`` when ``Im z > 0``.

    Parameters
    ----------
    z : array_like of complex, any shape
        Points off the support ``[a, b]`` (and off 0 when ``gamma > 1``). On the real support the
        value is the limit from ``Im z = +0`` if ``z`` carries a ``+0j`` imaginary part.
    gamma : float

    Returns
    -------
    numpy.ndarray of complex, same shape as ``z``
    """
    g = _check_gamma(gamma)
    z = np.asarray(z, dtype=complex)
    if np.isnan(z).any():
        raise ValueError("z: contains NaN")
    if np.any(z == 0):
        raise ValueError("z: m_gamma(z) is not defined at z = 0")
    a, b = mp_edges(g)
    root = np.sqrt(z - a) * np.sqrt(z - b)
    return (1.0 - g - z + root) / (2.0 * g * z)


def mp_moment(k: int, gamma: float) -> float:
    """k-th moment ``int x^k dmu_MP,gamma`` via the Narayana polynomial.

    ``m_0 = 1`` and, for ``k >= 1``,
    ``m_k = sum_{r=0}^{k-1} gamma^r / (r + 1) * C(k, r) * C(k - 1, r)``
    (``m_1 = 1``, ``m_2 = 1 + gamma``, ``m_3 = 1 + 3 gamma + gamma^2``).

    Parameters
    ----------
    k : int, >= 0
    gamma : float
    """
    k = positive_int(k, "k", minimum=0)
    g = _check_gamma(gamma)
    if k == 0:
        return 1.0
    total = 0.0
    for r in range(k):
        # N(k, r+1) = C(k, r) C(k, r+1) / k  ==  C(k, r) C(k-1, r) / (r+1)
        total += math.comb(k, r) * math.comb(k - 1, r) / (r + 1) * g**r
    return total


def mp_jacobi_matrix(gamma: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Jacobi matrix (diagonal, off-diagonal) of ``mu_MP,gamma`` truncated to ``n x n``.

    Diagonal ``(1, 1 + gamma, ..., 1 + gamma)``, off-diagonal ``sqrt(gamma)`` (length ``n - 1``).
    The full law (atom included) is the spectral measure of this Jacobi operator at ``e_1``.
    """
    g = _check_gamma(gamma)
    n = _check_n(n)
    diag = np.full(n, 1.0 + g)
    diag[0] = 1.0
    off = np.full(n - 1, math.sqrt(g))
    return diag, off


def _check_n(n: int) -> int:
    return positive_int(n, "n", maximum=4000)


def _golub_welsch(diag: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if diag.size == 1:
        return diag.copy(), np.ones(1)
    nodes, vecs = eigh_tridiagonal(diag, off)
    weights = vecs[0, :] ** 2
    return nodes, weights / weights.sum()


def mp_quadrature(gamma: float, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Gauss quadrature for ``int f dmu_MP,gamma`` (atom included).

    For ``gamma <= 1`` this is the ``n``-point Gauss rule of ``mu_MP,gamma`` (Golub–Welsch on
    :func:`mp_jacobi_matrix`): nodes in ``(a, b)``, positive weights summing to 1, **exact for
    polynomials of degree <= 2n - 1**. For analytic ``f`` the error decays geometrically in ``n``
    (like ``rho^{-2n}``, ``rho`` the Bernstein ellipse parameter of ``f``'s nearest singularity
    around ``[a, b]``); e.g. ``f = 1/(x + lambda)`` with ``lambda = 0.1``, ``gamma = 0.5`` is
    accurate to 1e-13 with ``n = 64``.

    For ``gamma > 1`` the rule has ``n + 1`` nodes: the atom (node ``0.0`` with weight
    ``1 - 1/gamma``, placed first) plus the ``n``-point Gauss rule of the continuous part
    (obtained from the rule of ``MP(1/gamma)`` scaled by ``gamma`` in the nodes and ``1/gamma``
    in the weights). It is again exact for polynomials of degree ``<= 2n - 1``, and ``f`` is
    evaluated exactly at 0 (so ``f`` must be finite there).

    Parameters
    ----------
    gamma : float
        Aspect ratio ``K/M > 0``.
    n : int
        Number of Gauss nodes for the continuous part (``1 <= n <= 4000``).

    Returns
    -------
    nodes, weights : numpy.ndarray
        Shapes ``(n,)`` (``gamma <= 1``) or ``(n + 1,)`` (``gamma > 1``); weights sum to 1.
    """
    g = _check_gamma(gamma)
    n = _check_n(n)
    if g <= 1.0:
        diag, off = mp_jacobi_matrix(g, n)
        nodes, weights = _golub_welsch(diag, off)
        return np.clip(nodes, 0.0, None), weights
    nodes_c, weights_c = mp_quadrature(1.0 / g, n)
    nodes = np.concatenate([[0.0], g * nodes_c])
    weights = np.concatenate([[1.0 - 1.0 / g], weights_c / g])
    return nodes, weights


def mp_integral(f: Callable[[np.ndarray], np.ndarray], gamma: float, n: int = 64) -> float:
    """``int f dmu_MP,gamma`` by :func:`mp_quadrature` (atom included).

    Parameters
    ----------
    f : callable
        Vectorised function of a 1-D array of nodes returning an array of the same shape.
    gamma : float
    n : int
        Gauss nodes of the continuous part; exact for polynomials of degree ``<= 2n - 1``.
    """
    if not callable(f):
        raise TypeError(f"f: expected a callable, got {type(f).__name__}")
    nodes, weights = mp_quadrature(gamma, n)
    values = np.asarray(f(nodes), dtype=float)
    if values.shape != nodes.shape:
        raise ValueError(f"f: must return an array of shape {nodes.shape}, got {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("f: returned non-finite values at the quadrature nodes")
    return float(values @ weights)


def mp_sample_eigenvalues(K: int, M: int, n_draws: int, *, rng: np.random.Generator) -> np.ndarray:
    """Eigenvalues of ``(1/M) G^T G`` for ``n_draws`` i.i.d. ``G`` of shape ``(M, K)``, N(0,1).

    Returns
    -------
    numpy.ndarray, shape ``(n_draws, K)``, ascending in each row.
    """
    rng = as_generator(rng)
    K, M, n_draws = positive_int(K, "K"), positive_int(M, "M"), positive_int(n_draws, "n_draws")
    G = rng.standard_normal((n_draws, M, K))
    S = np.einsum("nmi,nmj->nij", G, G) / M
    return np.linalg.eigvalsh(S)
