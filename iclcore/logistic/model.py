"""The model of Mainali & Teixeira §2 (Eqs. 1-8): problem (covariance eigenbasis, tasks),
embedding, one-layer linear transformer, read-out blocks, contexts, loss and gradients, and the
conserved quantity. Conventions in :mod:`iclcore.logistic`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from iclcore.linalg import haar_orthogonal
from iclcore.validation import positive_int, positive_spectrum

Array = NDArray[np.float64]

__all__ = [
    "task_variances",
    "LogisticProblem",
    "make_problem",
    "task_moments",
    "embed",
    "transformer_forward",
    "readout",
    "blocks_from_weights",
    "predictor",
    "sample_contexts",
    "loss_and_gradients",
    "conserved_quantity",
    "mode_blocks",
    "conserved_quantity_step_ratio",
]


# --------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------


def task_variances(c: ArrayLike | None, d: int) -> Array:
    """Empirical task variances ``c_alpha`` of the ``d`` modes: ``None`` gives ones (the paper's
    ``E[lambda^2] = 1``); a scalar broadcasts; entries must be finite and ``> 0``."""
    if c is None:
        return np.ones(d)
    c = np.broadcast_to(np.asarray(c, dtype=float), (d,)).copy()
    if not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise ValueError("c: empirical task variances must be finite and > 0")
    return c


# --------------------------------------------------------------------------------------
# problem: covariance, tasks
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogisticProblem:
    """A regression problem of Mainali & Teixeira §2.3: ``Sigma_x = U S U^T``, tasks ``U Lambda U^T``.

    Attributes
    ----------
    U : (d, d) orthogonal basis shared by the input covariance and every task.
    s : (d,) eigenvalues of ``Sigma_x`` (the diagonal of ``S``).
    N : context length.
    lambdas : (P, d) task eigenvalues ``lambda_{mu, alpha}``.
    """

    U: Array
    s: Array
    N: int
    lambdas: Array

    def __post_init__(self) -> None:
        s = positive_spectrum(self.s, "s")
        positive_int(self.N, "N")
        U = np.asarray(self.U, dtype=float)
        d = s.size
        if U.shape != (d, d) or not np.allclose(U.T @ U, np.eye(d), atol=1e-10):
            raise ValueError(f"U: expected an orthogonal ({d}, {d}) matrix")
        lam = np.asarray(self.lambdas, dtype=float)
        if lam.ndim != 2 or lam.shape[1] != d or lam.shape[0] < 1:
            raise ValueError(f"lambdas: expected shape (P, {d}), got {lam.shape}")

    @property
    def d(self) -> int:
        return int(self.s.size)

    @property
    def P(self) -> int:
        return int(self.lambdas.shape[0])

    @property
    def sigma(self) -> Array:
        """Input covariance ``U S U^T``, shape (d, d)."""
        return (self.U * self.s) @ self.U.T

    @property
    def tasks(self) -> Array:
        """Task matrices ``W^mu = U Lambda^mu U^T``, shape (P, d, d)."""
        return np.einsum("ia,ma,ja->mij", self.U, self.lambdas, self.U)

    @property
    def c(self) -> Array:
        """Empirical per-mode task variance ``c_alpha = mean_mu lambda_{mu alpha}^2``, shape (d,)."""
        return np.mean(self.lambdas**2, axis=0)


def make_problem(
    s: ArrayLike,
    N: int,
    P: int,
    *,
    rng: np.random.Generator,
    antithetic: bool = True,
    random_basis: bool = True,
) -> LogisticProblem:
    """Draw the fixed task set of Mainali & Teixeira §2.3 / App. A.8.2.

    Parameters
    ----------
    s : (d,) eigenvalues of ``Sigma_x``.
    N : context length.
    P : number of tasks (even if ``antithetic``).
    rng : random generator (draws ``U`` first, then the task eigenvalues).
    antithetic : draw ``P/2`` eigenvalue vectors and append their negatives.
    random_basis : Haar-random ``U`` (main text); ``False`` gives ``U = I`` (A.8.1).
    """
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    P = positive_int(P, "P")
    if antithetic and P % 2:
        raise ValueError(f"P: must be even for an antithetic task set, got {P}")
    d = s.size
    U = haar_orthogonal(d, rng) if random_basis else np.eye(d)
    if antithetic:
        half = rng.standard_normal((P // 2, d))
        lambdas = np.concatenate([half, -half], axis=0)
    else:
        lambdas = rng.standard_normal((P, d))
    return LogisticProblem(U=U, s=s, N=N, lambdas=lambdas)


def task_moments(problem: LogisticProblem) -> dict[str, Array]:
    """Empirical moments of the task eigenvalues: ``m1 = mean lambda``, ``c = mean lambda^2``,
    ``m3 = mean lambda^3`` (each shape (d,)). ``m1`` and ``m3`` drive the null blocks
    ``p1`` and ``q2`` away from zero (App. A.10 sets them to their population value 0)."""
    lam = problem.lambdas
    return {"m1": lam.mean(0), "c": (lam**2).mean(0), "m3": (lam**3).mean(0)}


# --------------------------------------------------------------------------------------
# the model, Eqs. (1)-(8)
# --------------------------------------------------------------------------------------


def embed(x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> Array:
    """Embedding matrix ``Z`` of Eq. (4).

    Parameters
    ----------
    x_ctx, y_ctx : (..., N, d) context inputs and outputs.
    x_q : (..., d) query input.

    Returns
    -------
    Z : (..., 2d, N + 1), columns ``(x_i; y_i)`` then ``(x_q; 0)``.
    """
    x_ctx = np.asarray(x_ctx, dtype=float)
    y_ctx = np.asarray(y_ctx, dtype=float)
    x_q = np.asarray(x_q, dtype=float)
    if x_ctx.shape != y_ctx.shape or x_ctx.ndim < 2:
        raise ValueError(f"y_ctx: shape {y_ctx.shape} must equal x_ctx shape {x_ctx.shape} (..., N, d)")
    if x_q.shape != x_ctx.shape[:-2] + x_ctx.shape[-1:]:
        raise ValueError(f"x_q: expected shape {x_ctx.shape[:-2] + x_ctx.shape[-1:]}, got {x_q.shape}")
    top = np.concatenate([x_ctx, x_q[..., None, :]], axis=-2)
    bottom = np.concatenate([y_ctx, np.zeros_like(x_q)[..., None, :]], axis=-2)
    return np.swapaxes(np.concatenate([top, bottom], axis=-1), -1, -2)


def transformer_forward(Z: ArrayLike, WP: ArrayLike, WQ: ArrayLike) -> Array:
    """One-layer linear attention with residual, Eq. (1): ``f(Z) = Z + W^P (Z Z^T/N) W^Q Z``.

    ``Z`` has shape (..., D, N + 1); ``N`` is the number of context columns.
    """
    Z = np.asarray(Z, dtype=float)
    WP = np.asarray(WP, dtype=float)
    WQ = np.asarray(WQ, dtype=float)
    D = Z.shape[-2]
    if WP.shape != (D, D) or WQ.shape != (D, D):
        raise ValueError(f"WP, WQ: expected shape ({D}, {D}), got {WP.shape} and {WQ.shape}")
    N = Z.shape[-1] - 1
    if N < 1:
        raise ValueError("Z: needs at least one context column")
    gamma = Z @ np.swapaxes(Z, -1, -2) / N
    return Z + WP @ gamma @ WQ @ Z


def readout(fZ: ArrayLike) -> Array:
    """Prediction: bottom ``d`` entries of the last column of ``f(Z)`` (§3, A.4). Shape (..., d)."""
    fZ = np.asarray(fZ)
    D = fZ.shape[-2]
    if D % 2:
        raise ValueError(f"fZ: embedding dimension must be even, got {D}")
    return fZ[..., D // 2 :, -1]


def blocks_from_weights(WP: ArrayLike, WQ: ArrayLike) -> tuple[Array, Array]:
    """``pT = p^T`` (bottom ``d`` rows of ``W^P``, shape (d, D)) and ``q`` (first ``d`` columns
    of ``W^Q``, shape (D, d)), Eqs. (2)-(3)."""
    WP = np.asarray(WP, dtype=float)
    WQ = np.asarray(WQ, dtype=float)
    D = WP.shape[-1]
    if WP.shape != (D, D) or WQ.shape != (D, D) or D % 2:
        raise ValueError(f"WP, WQ: expected equal square shapes with even size, got {WP.shape}, {WQ.shape}")
    d = D // 2
    return WP[d:, :].copy(), WQ[:, :d].copy()


def predictor(Z: ArrayLike, pT: ArrayLike, q: ArrayLike) -> Array:
    """Predictor identity Eq. (6)/(A18): ``y_hat = (p^T Gamma_hat q) x_q`` with
    ``Gamma_hat = Z Z^T / N`` (query column included). Shapes: Z (..., D, N+1), pT (d, D),
    q (D, d); returns (..., d)."""
    Z = np.asarray(Z, dtype=float)
    D = Z.shape[-2]
    d = D // 2
    pT = np.asarray(pT, dtype=float)
    q = np.asarray(q, dtype=float)
    if pT.shape != (d, D) or q.shape != (D, d):
        raise ValueError(f"pT, q: expected shapes ({d}, {D}) and ({D}, {d}), got {pT.shape}, {q.shape}")
    N = Z.shape[-1] - 1
    x_q = Z[..., :d, -1]
    v = np.einsum("ij,...j->...i", q, x_q)  # q x_q, (..., D)
    g = np.einsum("...in,...jn,...j->...i", Z, Z, v) / N  # Gamma_hat q x_q
    return np.einsum("ij,...j->...i", pT, g)


def sample_contexts(
    problem: LogisticProblem, task: ArrayLike, shape: tuple[int, ...], *, rng: np.random.Generator
) -> tuple[Array, Array, Array, Array]:
    """Fresh contexts for given task indices (§2.3): ``x ~ N(0, U S U^T)``, ``y = W^mu x``.

    Parameters
    ----------
    task : int or integer array broadcastable to ``shape`` (task index per context).
    shape : batch shape of the contexts, e.g. ``(R, B)``.

    Returns
    -------
    x_ctx, y_ctx : ``(*shape, N, d)``;  x_q, y_q : ``(*shape, d)``.
    """
    d, N = problem.d, problem.N
    task = np.broadcast_to(np.asarray(task), shape)
    if np.any(task < 0) or np.any(task >= problem.P):
        raise ValueError(f"task: indices must lie in [0, {problem.P})")
    z = rng.standard_normal((*shape, N + 1, d)) * np.sqrt(problem.s)  # mode coordinates
    lam = problem.lambdas[task][..., None, :]  # (*shape, 1, d)
    UT = problem.U.T
    x = (z.reshape(-1, d) @ UT).reshape(z.shape)
    y = ((z * lam).reshape(-1, d) @ UT).reshape(z.shape)
    return x[..., :N, :], y[..., :N, :], x[..., N, :], y[..., N, :]


def loss_and_gradients(
    pT: Array, q: Array, x_ctx: Array, *, y_ctx: Array, x_q: Array, y_q: Array
) -> tuple[Array, Array, Array]:
    """Per-context loss (Eq. 5/7) and its gradients for the exact model.

    ``pT`` (..., d, D) and ``q`` (..., D, d) broadcast against the context batch
    ``(*batch, N, d)``. With ``g = Gamma_hat q x_q`` and ``e = y_hat - y_q``:
    ``dL/dpT = e g^T``, ``dL/dq = Gamma_hat pT^T e x_q^T``.

    Returns
    -------
    loss : ``(*batch,)``, grad_pT : ``(*batch, d, D)``, grad_q : ``(*batch, D, d)``.
    """
    N = x_ctx.shape[-2]
    xs = np.concatenate([x_ctx, x_q[..., None, :]], axis=-2)  # (..., N+1, d)
    ys = np.concatenate([y_ctx, np.zeros_like(y_q)[..., None, :]], axis=-2)
    Zt = np.concatenate([xs, ys], axis=-1)  # Z^T, (..., N+1, D)
    Z = np.swapaxes(Zt, -1, -2)
    v = q @ x_q[..., None]  # q x_q, (..., D, 1)
    g = (Z @ (Zt @ v))[..., 0] / N  # Gamma_hat q x_q, (..., D)
    y_hat = (pT @ g[..., None])[..., 0]
    e = y_hat - y_q
    loss = 0.5 * np.sum(e * e, axis=-1)
    u = np.swapaxes(pT, -1, -2) @ e[..., None]  # pT^T e, (..., D, 1)
    gu = (Z @ (Zt @ u))[..., 0] / N
    grad_pT = e[..., :, None] * g[..., None, :]
    grad_q = gu[..., :, None] * x_q[..., None, :]
    return loss, grad_pT, grad_q


def conserved_quantity(pT: ArrayLike, q: ArrayLike) -> Array:
    """``C = ||p||_F^2 - ||q||_F^2`` over the blocks given (§3, A84); shape = batch shape.

    For U-diagonal ``p2``, ``q1`` with null blocks zero this is the paper's
    ``||p2_bar||_F^2 - ||q1_bar||_F^2`` (Frobenius norms are basis independent)."""
    pT = np.asarray(pT, dtype=float)
    q = np.asarray(q, dtype=float)
    return np.sum(pT**2, axis=(-2, -1)) - np.sum(q**2, axis=(-2, -1))


def mode_blocks(problem: LogisticProblem, p: ArrayLike) -> tuple[Array, Array]:
    """Read-out blocks with ``p2 = q1 = U diag(p) U^T`` and ``p1 = q2 = 0`` (the reduced model at mode scales ``p``).

    With ``p_alpha = s_inf,alpha^{-1/2}`` these are the blocks at the paper's fixed point
    ``p2 q1 = [s_inf(S)]^{-1}`` (§3).

    Parameters
    ----------
    problem : LogisticProblem
    p : array_like, shape (d,)

    Returns
    -------
    pT : ndarray, shape (d, 2d)
    q : ndarray, shape (2d, d)
    """
    d = problem.d
    p = np.asarray(p, dtype=float)
    if p.shape != (d,):
        raise ValueError(f"p: expected shape ({d},), got {p.shape}")
    pT = np.zeros((d, 2 * d))
    q = np.zeros((2 * d, d))
    pT[:, d:] = problem.U @ np.diag(p) @ problem.U.T
    q[:d] = pT[:, d:]
    return pT, q


def conserved_quantity_step_ratio(
    pT: ArrayLike, q: ArrayLike, problem: LogisticProblem, *, batch: int, etas: ArrayLike, rng: np.random.Generator
) -> tuple[Array, float]:
    """``ΔC / η²`` of one SGD step of size ``η`` and its prediction ``|g_p|² − |g_q|²`` (§3, conserved ``C``).

    Gradient flow conserves ``C = |p2|² − |q1|²`` (:func:`conserved_quantity`); one step of size ``η`` along
    the batch-mean gradient ``(g_p, g_q)`` changes it by exactly ``η² (|g_p|² − |g_q|²)``, so the ratio does
    not depend on ``η``. The batch: ``batch`` fresh contexts of task 0 (:func:`sample_contexts`).

    Parameters
    ----------
    pT, q : array_like
        The blocks (e.g. from :func:`mode_blocks`).
    problem : LogisticProblem
    batch : int
    etas : array_like, shape (m,)
        Step sizes.
    rng : numpy.random.Generator

    Returns
    -------
    ratios : ndarray, shape (m,)
        ``(C(after) − C(before)) / η²`` per step size.
    predicted : float
        ``|g_p|² − |g_q|²``.
    """
    xc, yc, xq, yq = sample_contexts(problem, 0, (batch,), rng=rng)
    _, gp, gq = loss_and_gradients(pT, q, xc, y_ctx=yc, x_q=xq, y_q=yq)
    gp, gq = gp.mean(0), gq.mean(0)
    predicted = np.sum(gp**2) - np.sum(gq**2)
    ratios = [(conserved_quantity(pT - e * gp, q - e * gq) - conserved_quantity(pT, q)) / e**2 for e in etas]
    return np.array(ratios), float(predicted)
