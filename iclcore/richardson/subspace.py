"""Subspace recovery: principal angles, Top-r estimates, Davis–Kahan certificates.

Implements main paper §5.2 (subspace recovery from estimated task vectors) and the
subspace certificate of MMNN report §5.2:

.. math::

    \\begin{gathered}
    \\widehat\\Sigma_{β,N} = \\frac1N \\sum_n \\hat β_n \\hat β_n^\\top,\\qquad
    U_N = \\operatorname{Top}_r(\\widehat\\Sigma_{β,N}),\\\\
    \\|\\sin Θ(U_N, U_\\star)\\|_2 \\le \\frac{\\|\\widehat\\Sigma_{β,N} - Σ_β\\|_2}{γ_{enc}},
    \\end{gathered}

with ``γ_enc = λ_r(Σ_β) - λ_{r+1}(Σ_β)``, ``r_eff(Σ) = Tr Σ / ||Σ||_2`` and the
floor risk ``R_floor(U) = E||(I - UU^T) β||²_{Σ_x}``.

Principal angles come from :func:`iclcore.linalg.principal_angles`
(:func:`scipy.linalg.subspace_angles`: sines for angles below π/4, where ``1 - cos²``
would lose all digits, and cosines above; Björck & Golub 1973; Knyazev & Argentati 2002).

The Davis–Kahan inequality as printed (population gap only, constant 1) is *not*
a theorem: see :func:`davis_kahan_bound` and the errata entry
"Davis–Kahan with the population gap".  Two valid variants are provided.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.linalg import principal_angles
from iclcore.validation import positive_int, symmetric_matrix, symmetric_psd

__all__ = [
    "orthonormal_basis",
    "sin_theta",
    "top_r_subspace",
    "empirical_task_covariance",
    "eigengap",
    "effective_rank",
    "davis_kahan_bound",
    "DK_VARIANTS",
    "floor_risk",
    "floor_risk_bound",
    "wedin_sin_bound",
    "SubspaceRecoveryCurve",
    "subspace_recovery_curve",
    "covariance_error_rate",
    "SubspaceRecoveryRatios",
    "subspace_recovery_ratios",
    "davis_kahan_counterexample",
]

DK_VARIANTS = ("paper", "weyl", "mixed")


def _as_matrix(A: object, name: str) -> np.ndarray:
    try:
        a = np.asarray(A, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: expected a real numeric array, got {type(A).__name__}") from exc
    if a.ndim != 2:
        raise ValueError(f"{name}: must be a 2-D matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    return a


def _as_symmetric(S: object, name: str) -> np.ndarray:
    a = symmetric_matrix(S, name)
    return 0.5 * (a + a.T)


def orthonormal_basis(U: np.ndarray, name: str = "U") -> np.ndarray:
    """Orthonormal basis of ``range(U)`` (thin QR), checking full column rank.

    Parameters
    ----------
    U : array_like, shape (K, r), ``r <= K``

    Returns
    -------
    ndarray, shape (K, r), with orthonormal columns spanning ``range(U)``.

    Raises
    ------
    ValueError
        Naming ``name`` if ``U`` is not 2-D, has more columns than rows, or is
        numerically rank deficient (``σ_min/σ_max < 1e-12``).
    """
    U = _as_matrix(U, name)
    K, r = U.shape
    if r == 0 or r > K:
        raise ValueError(f"{name}: need 1 <= columns <= rows, got shape {U.shape}")
    sv = np.linalg.svd(U, compute_uv=False)
    if sv[0] == 0 or sv[-1] < 1e-12 * sv[0]:
        raise ValueError(f"{name}: columns are (numerically) linearly dependent")
    Q, _ = np.linalg.qr(U)
    return Q


def sin_theta(U: np.ndarray, V: np.ndarray, norm: str = "2", *, squared: bool = False) -> float:
    """``||sin Θ(U, V)||`` in the spectral (``"2"``) or Frobenius (``"fro"``) norm.

    Parameters
    ----------
    U, V : array_like, shape (K, r)
        Bases of two r-dimensional subspaces.
    norm : {"2", "fro"}
    squared : bool
        Return the square (the paper's ``sin²Θ``).

    Returns
    -------
    float
    """
    if norm not in ("2", "fro"):
        raise ValueError(f"norm: unknown norm {norm!r}; choose '2' or 'fro'")
    U = _as_matrix(U, "U")
    V = _as_matrix(V, "V")
    if U.shape[1] != V.shape[1]:
        raise ValueError(f"V: subspace dimension {V.shape[1]} differs from U's {U.shape[1]}")
    s = np.sin(principal_angles(orthonormal_basis(U, "U"), orthonormal_basis(V, "V")))
    val = float(s.max()) if norm == "2" else float(np.sqrt(np.sum(s**2)))
    return val**2 if squared else val


def top_r_subspace(S: np.ndarray, r: int) -> np.ndarray:
    """``Top_r(S)``: orthonormal eigenvectors of the ``r`` largest eigenvalues.

    Implements main paper §5.2, ``U_N = Top_r(Σ̂_{β,N})``.

    Parameters
    ----------
    S : array_like, shape (K, K), symmetric
    r : int, ``1 <= r <= K``

    Returns
    -------
    ndarray, shape (K, r), columns ordered by decreasing eigenvalue.
    """
    S = _as_symmetric(S, "S")
    K = S.shape[0]
    r = positive_int(r, "r", maximum=K)
    lam, Q = np.linalg.eigh(S)
    return Q[:, ::-1][:, :r]


def empirical_task_covariance(beta_hat: np.ndarray) -> np.ndarray:
    """``Σ̂_{β,N} = (1/N) Σ_n β̂_n β̂_n^T`` (main paper §5.2).

    Parameters
    ----------
    beta_hat : array_like, shape (N, K)
        Estimated task vectors, one per row.

    Returns
    -------
    ndarray, shape (K, K)
    """
    B = _as_matrix(beta_hat, "beta_hat")
    if B.shape[0] < 1:
        raise ValueError("beta_hat: need at least one task vector")
    return B.T @ B / B.shape[0]


def eigengap(Sigma: np.ndarray, r: int) -> float:
    """``γ = λ_r(Σ) - λ_{r+1}(Σ)`` (eigenvalues descending; ``λ_{K+1} = 0``).

    Implements main paper §5.2, ``γ_enc``.
    """
    S = _as_symmetric(Sigma, "Sigma")
    K = S.shape[0]
    r = positive_int(r, "r", maximum=K)
    lam = np.linalg.eigvalsh(S)[::-1]
    nxt = lam[r] if r < K else 0.0
    return float(lam[r - 1] - nxt)


def effective_rank(Sigma: np.ndarray) -> float:
    """``r_eff(Σ) = Tr Σ / ||Σ||_2`` (main paper §5.2) of a PSD matrix."""
    S = symmetric_psd(_as_symmetric(Sigma, "Sigma"), "Sigma")
    lam = np.linalg.eigvalsh(S)
    if lam[-1] <= 0:
        raise ValueError("Sigma: must be non-zero")
    return float(np.trace(S) / lam[-1])


def davis_kahan_bound(S_hat: np.ndarray, Sigma: np.ndarray, r: int, *, variant: str = "paper") -> float:
    """Davis–Kahan certificate for ``||sin Θ(Top_r(Ŝ), Top_r(Σ))||_2``.

    Parameters
    ----------
    S_hat : array_like, shape (K, K), symmetric
        The estimate (``Σ̂_{β,N}``, or the encoder's ``S_s``).
    Sigma : array_like, shape (K, K), symmetric
        The target (``Σ_β``).
    r : int
    variant : {"paper", "weyl", "mixed"}
        ``"paper"``: ``||Ŝ - Σ||_2 / γ`` with ``γ = λ_r(Σ) - λ_{r+1}(Σ)``, as printed
        in main paper §5.2 and MMNN report §5.2. Not valid in general (a 2×2
        counterexample is in ``tests/richardson/test_subspace.py``); it holds up to the factor
        ``γ/(γ - ||Ŝ-Σ||)``.
        ``"mixed"``: ``||Ŝ - Σ||_2 / δ`` with ``δ = λ_r(Σ) - λ_{r+1}(Ŝ)`` (the
        Davis–Kahan sin Θ theorem; ``inf`` if ``δ <= 0``).
        ``"weyl"``: ``||Ŝ - Σ||_2 / (γ - ||Ŝ - Σ||_2)`` (``mixed`` with Weyl's
        inequality; ``inf`` if ``||Ŝ - Σ|| >= γ``). Both valid variants are capped
        at 1 only by the caller's reading (a sine never exceeds 1).

    Returns
    -------
    float
    """
    if variant not in DK_VARIANTS:
        raise ValueError(f"variant: unknown Davis–Kahan variant {variant!r}; choose one of {DK_VARIANTS}")
    Sh = _as_symmetric(S_hat, "S_hat")
    S = _as_symmetric(Sigma, "Sigma")
    if Sh.shape != S.shape:
        raise ValueError(f"S_hat: shape {Sh.shape} differs from Sigma's {S.shape}")
    gamma = eigengap(S, r)
    if gamma <= 0:
        raise ValueError(f"Sigma: eigengap lambda_r - lambda_(r+1) = {gamma:.3e} must be positive")
    err = float(np.linalg.norm(Sh - S, 2))
    if variant == "paper":
        return err / gamma
    if variant == "weyl":
        return err / (gamma - err) if err < gamma else float("inf")
    lam = np.linalg.eigvalsh(S)[::-1]
    lam_hat = np.linalg.eigvalsh(Sh)[::-1]
    nxt = lam_hat[r] if r < S.shape[0] else -np.inf
    delta = lam[r - 1] - nxt
    return err / delta if delta > 0 else float("inf")


def floor_risk(U: np.ndarray, U_star: np.ndarray, Sigma_z: np.ndarray, *, Sigma_x: np.ndarray) -> float:
    """Exact floor risk ``R_floor(U) = E||(I - UU^T) U⋆ z||²_{Σ_x}`` (main paper §5.2).

    ``= Tr(Σ_z W^T Σ_x W)`` with ``W = (I - UU^T) U⋆`` and ``z ~ (0, Σ_z)``.

    Parameters
    ----------
    U : array_like, shape (K, r)  (orthonormalised internally)
    U_star : array_like, shape (K, r)  (orthonormal columns)
    Sigma_z : array_like, shape (r, r)
    Sigma_x : array_like, shape (K, K)

    Returns
    -------
    float
    """
    Q = orthonormal_basis(U, "U")
    Us = _as_matrix(U_star, "U_star")
    Sz = _as_symmetric(Sigma_z, "Sigma_z")
    Sx = _as_symmetric(Sigma_x, "Sigma_x")
    if Us.shape[0] != Q.shape[0] or Sx.shape[0] != Q.shape[0] or Sz.shape[0] != Us.shape[1]:
        raise ValueError(
            f"U_star, Sigma_z, Sigma_x: shapes {Us.shape}, {Sz.shape}, {Sx.shape} incompatible with U {Q.shape}"
        )
    W = Us - Q @ (Q.T @ Us)
    return float(np.trace(Sz @ W.T @ Sx @ W))


def floor_risk_bound(U: np.ndarray, U_star: np.ndarray, Sigma_z: np.ndarray, *, Sigma_x: np.ndarray) -> float:
    """``||Σ_x||_2 Tr(Σ_z) ||sin Θ(U, U⋆)||_F²`` (main paper §5.2, right side of ``≲``).

    It is a true upper bound of :func:`floor_risk` with constant 1 (even with
    ``||sin Θ||_2²`` in place of the Frobenius norm).
    """
    Sz = _as_symmetric(Sigma_z, "Sigma_z")
    Sx = _as_symmetric(Sigma_x, "Sigma_x")
    return float(np.linalg.norm(Sx, 2) * np.trace(Sz) * sin_theta(U, U_star, "fro", squared=True))


def wedin_sin_bound(G: np.ndarray, G_star: np.ndarray) -> float:
    """``||G - G⋆||_2 / σ_r(G)``, an upper bound of ``||sin Θ(range G, range G⋆)||_2``.

    With ``G = W S V^T`` (thin SVD) the sines are the singular values of
    ``(I - P⋆) W = (I - P⋆)(G - G⋆) V S^{-1}``, hence the bound (a Wedin-type
    inequality with constant 1). It shows that the subspace error of an encoder
    dictionary is at most first order in ``||G - G⋆||``, so ``sin²Θ`` is second order.

    Parameters
    ----------
    G, G_star : array_like, shape (K, r), full column rank

    Returns
    -------
    float
    """
    G = _as_matrix(G, "G")
    Gs = _as_matrix(G_star, "G_star")
    if G.shape != Gs.shape:
        raise ValueError(f"G_star: shape {Gs.shape} differs from G's {G.shape}")
    orthonormal_basis(G, "G")  # rank check
    sv = np.linalg.svd(G, compute_uv=False)
    return float(np.linalg.norm(G - Gs, 2) / sv[-1])


# ---------------------------------------------------------------------------
# Subspace recovery along a growing number of task vectors (main paper §5.2)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SubspaceRecoveryCurve:
    """``U_N = Top_r(Σ̂_{β,N})`` from the first ``N`` task vectors, for each ``N`` of a grid.

    Each attribute is an ndarray of shape (n,), one entry per ``N``.

    Attributes
    ----------
    N : the numbers of task vectors.
    sin : ``||sin Θ(U_N, U⋆)||_2``.
    dk_paper, dk_weyl : :func:`davis_kahan_bound` of ``Σ̂_{β,N}`` against ``Σ_β``, printed and valid forms.
    err : ``||Σ̂_{β,N} - Σ_β||_2``.
    floor, floor_bound : :func:`floor_risk` of ``U_N`` and its bound :func:`floor_risk_bound`.
    """

    N: np.ndarray
    sin: np.ndarray
    dk_paper: np.ndarray
    dk_weyl: np.ndarray
    err: np.ndarray
    floor: np.ndarray
    floor_bound: np.ndarray


def subspace_recovery_curve(
    vectors: np.ndarray,
    Ns: np.ndarray,
    *,
    Sigma_beta: np.ndarray,
    U_star: np.ndarray,
    Sigma_z: np.ndarray,
    Sigma_x: np.ndarray,
) -> SubspaceRecoveryCurve:
    """Top-``r`` subspace of the empirical task covariance of ``vectors[:N]`` for each ``N`` (main paper §5.2).

    Parameters
    ----------
    vectors : array_like, shape (n, K)
        Task vectors (estimated ``β̂_n`` or exact ``β_n``), used in order.
    Ns : array_like of int, shape (m,)
        Numbers of vectors, each in ``[1, n]``.
    Sigma_beta : array_like, shape (K, K)
        The target covariance; ``r`` is the number of columns of ``U_star``.
    U_star : array_like, shape (K, r), orthonormal columns
    Sigma_z : array_like, shape (r, r)
    Sigma_x : array_like, shape (K, K)

    Returns
    -------
    SubspaceRecoveryCurve
    """
    V = _as_matrix(vectors, "vectors")
    Ns = np.asarray(Ns)
    if Ns.ndim != 1 or Ns.size == 0 or Ns.min() < 1 or Ns.max() > V.shape[0]:
        raise ValueError(f"Ns: expected a 1-D grid of counts in [1, {V.shape[0]}], got {Ns!r}")
    r = _as_matrix(U_star, "U_star").shape[1]
    rows = []
    for N in Ns:
        S_hat = empirical_task_covariance(V[:N])
        U_N = top_r_subspace(S_hat, r)
        rows.append(
            (
                sin_theta(U_N, U_star),
                davis_kahan_bound(S_hat, Sigma_beta, r, variant="paper"),
                davis_kahan_bound(S_hat, Sigma_beta, r, variant="weyl"),
                np.linalg.norm(S_hat - Sigma_beta, 2),
                floor_risk(U_N, U_star, Sigma_z, Sigma_x=Sigma_x),
                floor_risk_bound(U_N, U_star, Sigma_z, Sigma_x=Sigma_x),
            )
        )
    cols = [np.array(c) for c in zip(*rows)]
    return SubspaceRecoveryCurve(Ns, *cols)


def covariance_error_rate(Sigma_beta: np.ndarray, Ns: np.ndarray) -> np.ndarray:
    """The §5.2 rate ``||Σ_β||_2 sqrt(r_eff(Σ_β) / N)`` of ``||Σ̂_{β,N} - Σ_β||_2``, shape (m,) like ``Ns``."""
    return np.linalg.norm(Sigma_beta, 2) * np.sqrt(effective_rank(Sigma_beta) / np.asarray(Ns))


@dataclass(frozen=True)
class SubspaceRecoveryRatios:
    """How the §5.2 rate and certificates compare with two recovery curves on one grid of ``N``.

    Attributes
    ----------
    oracle_err_normalised : ndarray, shape (m,)
        ``||Σ̂_{β,N} - Σ_β||_2 / (||Σ_β||_2 sqrt(r_eff/N))`` with exact task vectors: ``O_P(1)`` by §5.2.
    valid_dk_ratio_max : float
        ``max sin Θ / DK_weyl`` over both curves (``<= 1``: the valid Davis–Kahan form holds).
    floor_bound_ratio_max : float
        ``max R_floor / (||Σ_x|| Tr Σ_z ||sin Θ||_F²)`` over both curves (``<= 1``: the floor-risk bound holds).
    """

    oracle_err_normalised: np.ndarray
    valid_dk_ratio_max: float
    floor_bound_ratio_max: float


def subspace_recovery_ratios(
    estimated: SubspaceRecoveryCurve, oracle: SubspaceRecoveryCurve, Sigma_beta: np.ndarray
) -> SubspaceRecoveryRatios:
    """Normalised covariance error of the oracle curve and the largest certificate ratios of both curves.

    ``estimated`` and ``oracle`` are :func:`subspace_recovery_curve` results on the same grid (estimated
    ``β̂_n`` and exact ``β_n``); ``Sigma_beta`` is the target covariance of both.
    """
    if not np.array_equal(estimated.N, oracle.N):
        raise ValueError("oracle: expected the grid of N of the estimated curve")
    return SubspaceRecoveryRatios(
        oracle_err_normalised=oracle.err / covariance_error_rate(Sigma_beta, oracle.N),
        valid_dk_ratio_max=float(max(np.max(oracle.sin / oracle.dk_weyl), np.max(estimated.sin / estimated.dk_weyl))),
        floor_bound_ratio_max=float(
            np.max(np.r_[estimated.floor, oracle.floor] / np.r_[estimated.floor_bound, oracle.floor_bound])
        ),
    )


def davis_kahan_counterexample(delta: float = 1e-3) -> tuple[float, float]:
    """The 2×2 case where the printed Davis–Kahan form fails (errata "Davis–Kahan with the population gap").

    ``Σ = diag(1, 0)`` (gap ``γ = 1``, top eigenvector ``e_1``) and ``Ŝ = [[1/2, δ], [δ, 1/2]]``, whose
    top eigenvector is ``(e_1 + e_2)/√2`` for ``δ > 0``: the true ``sin Θ = 1/√2`` exceeds the printed bound
    ``||Ŝ - Σ||_2 / γ = sqrt(1/4 + δ²)`` for ``δ < 1/2``.

    Returns
    -------
    (float, float)
        ``||sin Θ(Top_1(Ŝ), e_1)||_2`` and the printed bound.
    """
    if not np.isfinite(delta) or not 0 < delta < 0.5:
        raise ValueError(f"delta: expected 0 < delta < 1/2, got {delta!r}")
    S_cx = np.array([[0.5, delta], [delta, 0.5]])
    sin_cx = sin_theta(top_r_subspace(S_cx, 1), np.eye(2)[:, :1])
    return sin_cx, davis_kahan_bound(S_cx, np.diag([1.0, 0.0]), 1, variant="paper")
