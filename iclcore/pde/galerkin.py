r"""P1 finite elements for ``−(a u′)′ + c₀ u = f`` on (0, 1), ``u(0) = u(1) = 0``, with an affine coefficient.

The coefficient is piecewise constant on ``n_pieces`` equal subintervals,
``a(x; z) = 1 + Σ_k z_k 1_{[(k−1)/n_pieces, k/n_pieces)}(x)``. On a uniform mesh of ``n_el``
elements (``n_el`` a multiple of ``n_pieces``, so that every element lies in one piece) the
Galerkin matrix is *exactly* affine in ``z`` (main paper §1.1, MMNN report §5.4):

.. math::

    \begin{gathered}
    A(z) = A_0 + \sum_{k=1}^{n_{pieces}} z_k A_k,\\
    A_0 = S(1) + c_0 M_h, \qquad A_k = S(1_{\text{piece } k}),
    \end{gathered}

with ``S(a)_{ij} = ∫ a φ_i′ φ_j′`` (stiffness) and ``M_h`` the mass matrix, both over the
``n_h = n_el − 1`` interior hat functions ``φ_i``. The load vector of a forcing given by its
nodal values ``f`` (all ``n_el + 1`` nodes, P1 interpolation) is ``F = M_{int,all} f``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.validation import as_generator, positive_int

__all__ = [
    "AffineOperator",
    "affine_operator",
    "assemble",
    "assemble_direct",
    "load_vector",
    "solve",
    "sample_coefficients",
    "discrete_l2_error",
]


def _element_matrices(n_el: int, a_el: np.ndarray, c0: float) -> tuple[np.ndarray, np.ndarray]:
    """Full (n_el+1)² stiffness with elementwise coefficient ``a_el`` and mass matrix."""
    h = 1.0 / n_el
    N = n_el + 1
    S = np.zeros((N, N))
    Mm = np.zeros((N, N))
    idx = np.arange(n_el)
    ks = np.array([[1.0, -1.0], [-1.0, 1.0]]) / h
    km = np.array([[2.0, 1.0], [1.0, 2.0]]) * h / 6
    for a in range(2):
        for b in range(2):
            np.add.at(S, (idx + a, idx + b), a_el * ks[a, b])
            np.add.at(Mm, (idx + a, idx + b), km[a, b])
    return S, Mm


@dataclass(frozen=True, eq=False)
class AffineOperator:
    """The affine Galerkin family ``A(z) = A_0 + Σ z_k A_k`` on a uniform P1 mesh.

    Attributes
    ----------
    n_el : int
        Number of elements (``h = 1/n_el``).
    c0 : float
        Reaction coefficient ``c₀ ≥ 0``.
    A0 : ndarray (n_h, n_h)
    A : ndarray (n_pieces, n_h, n_h)
    mass : ndarray (n_h, n_h)
        Interior mass matrix ``M_h``.
    mass_full : ndarray (n_h, n_el + 1)
        Interior rows of the full mass matrix (load vectors).
    nodes : ndarray (n_h,)
        Interior node positions ``x_i = i h``.
    """

    n_el: int
    c0: float
    A0: np.ndarray
    A: np.ndarray
    mass: np.ndarray
    mass_full: np.ndarray
    nodes: np.ndarray

    @property
    def n_h(self) -> int:
        """Number of interior nodes ``n_el − 1``."""
        return self.n_el - 1

    @property
    def n_pieces(self) -> int:
        """Number of coefficient pieces ``K``."""
        return self.A.shape[0]

    @property
    def all_nodes(self) -> np.ndarray:
        """All ``n_el + 1`` nodes ``0, h, …, 1``."""
        return np.linspace(0.0, 1.0, self.n_el + 1)


def affine_operator(n_el: int, n_pieces: int = 4, c0: float = 1.0) -> AffineOperator:
    """Assemble ``A_0`` and ``A_1..A_K`` (module docstring). ``n_el`` must be a multiple of ``n_pieces``."""
    n_el = positive_int(n_el, "n_el", 2)
    n_pieces = positive_int(n_pieces, "n_pieces")
    if n_el % n_pieces:
        raise ValueError(f"n_el: must be a multiple of n_pieces={n_pieces} for an exactly affine A(z), got {n_el}")
    if not np.isfinite(c0) or c0 < 0:
        raise ValueError(f"c0: must be finite and >= 0, got {c0!r}")
    per = n_el // n_pieces
    S1, Mm = _element_matrices(n_el, np.ones(n_el), c0)
    inner = slice(1, n_el)
    A0 = S1[inner, inner] + c0 * Mm[inner, inner]
    Ak = []
    for k in range(n_pieces):
        ind = np.zeros(n_el)
        ind[k * per : (k + 1) * per] = 1.0
        Ak.append(_element_matrices(n_el, ind, c0)[0][inner, inner])
    return AffineOperator(
        n_el=n_el,
        c0=float(c0),
        A0=A0,
        A=np.stack(Ak),
        mass=Mm[inner, inner],
        mass_full=Mm[inner, :],
        nodes=np.arange(1, n_el) / n_el,
    )


def assemble(op: AffineOperator, z: np.ndarray) -> np.ndarray:
    """``A(z) = A_0 + Σ_k z_k A_k`` for ``z`` of shape (K,) or (n, K); returns (n_h, n_h) or (n, n_h, n_h)."""
    z = np.asarray(z, dtype=float)
    if z.shape[-1] != op.n_pieces or z.ndim > 2 or not np.all(np.isfinite(z)):
        raise ValueError(f"z: expected finite shape ({op.n_pieces},) or (n, {op.n_pieces}), got {z.shape}")
    return op.A0 + np.tensordot(z, op.A, axes=([-1], [0]))


def assemble_direct(op: AffineOperator, z: np.ndarray) -> np.ndarray:
    """Reference: assemble ``A(z)`` element by element from the coefficient ``a(x; z)`` itself, (n_h, n_h)."""
    z = np.asarray(z, dtype=float)
    per = op.n_el // op.n_pieces
    a_el = 1.0 + np.repeat(z, per)
    S, Mm = _element_matrices(op.n_el, a_el, op.c0)
    inner = slice(1, op.n_el)
    return S[inner, inner] + op.c0 * Mm[inner, inner]


def load_vector(op: AffineOperator, f_nodes: np.ndarray) -> np.ndarray:
    """``F = M_{int,all} f`` for nodal forcing values ``f`` of shape (..., n_el + 1); returns (..., n_h)."""
    f = np.asarray(f_nodes, dtype=float)
    if f.shape[-1] != op.n_el + 1:
        raise ValueError(f"f_nodes: last axis must have n_el + 1 = {op.n_el + 1} nodal values, got {f.shape}")
    return f @ op.mass_full.T


def solve(A: np.ndarray, F: np.ndarray) -> np.ndarray:
    """``u = A^{-1} F`` batched: ``A`` (..., n_h, n_h), ``F`` (..., n_h)."""
    return np.linalg.solve(A, np.asarray(F, dtype=float)[..., None])[..., 0]


def sample_coefficients(n: int, n_pieces: int, scale: float, *, a_min: float, rng: np.random.Generator) -> np.ndarray:
    """``z ~ N(0, scale² I)`` conditioned on ``min_x a(x; z) = 1 + min_k z_k > a_min`` (rejection), (n, K)."""
    n = positive_int(n, "n")
    n_pieces = positive_int(n_pieces, "n_pieces")
    if not np.isfinite(scale) or scale < 0:
        raise ValueError(f"scale: must be finite and >= 0, got {scale!r}")
    if not np.isfinite(a_min) or a_min >= 1:
        raise ValueError(f"a_min: must be < 1 (a = 1 at z = 0), got {a_min!r}")
    rng = as_generator(rng)
    out = np.empty((0, n_pieces))
    while out.shape[0] < n:
        z = scale * rng.standard_normal((n, n_pieces))
        out = np.vstack([out, z[1 + z.min(axis=1) > a_min]])
    return out[:n]


def discrete_l2_error(op: AffineOperator, u_h: np.ndarray, u_exact_nodes: np.ndarray) -> float:
    """``‖u_h − I_h u‖_{L²}`` of the P1 interpolant difference, ``sqrt(eᵀ M_h e)``."""
    e = np.asarray(u_h, float) - np.asarray(u_exact_nodes, float)
    return float(np.sqrt(e @ op.mass @ e))
