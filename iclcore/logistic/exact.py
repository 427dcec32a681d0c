"""Exact expected dynamics of the stated logistic-mode model (``p1 = q2 = 0``) at any context
length ``N``: expected loss and gradients, mode loss and gradients, fixed point, the integrated
mode flow, Monte Carlo loss and crossing times. Conventions in :mod:`iclcore.logistic`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from iclcore.logistic.model import LogisticProblem, loss_and_gradients, sample_contexts, task_variances
from iclcore.logistic.theory import paper_mode_rhs
from iclcore.lsq.moments import wishart_sandwich
from iclcore.validation import positive_float, positive_int, positive_spectrum

Array = NDArray[np.float64]

__all__ = [
    "exact_expected_loss",
    "exact_expected_gradients",
    "exact_mode_loss",
    "exact_mode_gradients",
    "exact_fixed_point",
    "exact_fixed_point_loss",
    "integrate_mode_flow",
    "monte_carlo_loss",
    "crossing_times",
]


# --------------------------------------------------------------------------------------
# exact expected dynamics of the stated model (p1 = q2 = 0), any N
# --------------------------------------------------------------------------------------


def exact_expected_loss(p2: ArrayLike, q1: ArrayLike, problem: LogisticProblem) -> Array:
    """Exact expected loss of the stated model with ``p1 = q2 = 0`` (then Eq. 8 is exact for
    every N, the query term is multiplied by p1), averaged over contexts and over the
    problem's fixed task set:

    ``L = mean_mu 1/2 [ tr(p2 W E W^T p2^T) - 2 tr(p2 W Sigma q1 Sigma W^T) + tr(W Sigma W^T) ]``
    with ``E = E[Sigma_hat q1 Sigma q1^T Sigma_hat]`` (Wishart second moment).

    ``p2``, ``q1``: (..., d, d) arbitrary (not necessarily U-diagonal). Returns (...)."""
    p2 = np.asarray(p2, dtype=float)
    q1 = np.asarray(q1, dtype=float)
    S, W, N = problem.sigma, problem.tasks, problem.N
    E = wishart_sandwich(S, q1 @ S @ np.swapaxes(q1, -1, -2), N)[..., None, :, :]  # (...,1,d,d)
    p2b = p2[..., None, :, :]
    q1b = q1[..., None, :, :]
    t1 = np.einsum("...ij,...jk->...ik", p2b @ W @ E, np.swapaxes(W, -1, -2) @ np.swapaxes(p2b, -1, -2))
    t1 = np.einsum("...ii->...", t1)
    t2 = np.einsum("...ii->...", p2b @ W @ S @ q1b @ S @ np.swapaxes(W, -1, -2))
    t3 = np.einsum("...ii->...", W @ S @ np.swapaxes(W, -1, -2))
    return 0.5 * np.mean(t1 - 2 * t2 + t3, axis=-1)


def exact_expected_gradients(p2: ArrayLike, q1: ArrayLike, problem: LogisticProblem) -> tuple[Array, Array]:
    """Gradients of :func:`exact_expected_loss` w.r.t. ``p2`` and ``q1`` (each (d, d)).

    ``dL/dp2 = mean_mu [p2 W E W^T - W Sigma q1^T Sigma W^T]``,
    ``dL/dq1 = mean_mu [(N+1)/N Sigma G Sigma q1 Sigma + tr(G Sigma) Sigma q1 Sigma / N
    - Sigma W^T p2^T W Sigma]`` with ``G = W^T p2^T p2 W``.
    The exact averaged flow is ``d(p2, q1)/dt = -eta P (dL/dp2, dL/dq1)`` (t in epochs)."""
    p2 = np.asarray(p2, dtype=float)
    q1 = np.asarray(q1, dtype=float)
    if p2.shape != (problem.d, problem.d) or q1.shape != (problem.d, problem.d):
        raise ValueError(f"p2, q1: expected shape ({problem.d}, {problem.d})")
    S, W, N = problem.sigma, problem.tasks, problem.N
    WT = np.swapaxes(W, -1, -2)
    E = wishart_sandwich(S, q1 @ S @ q1.T, N)
    gp = np.mean(p2 @ W @ E @ WT - W @ S @ q1.T @ S @ WT, axis=0)
    G = WT @ p2.T @ p2 @ W
    trGS = np.einsum("mij,ji->m", G, S)
    gq = np.mean(
        (N + 1) / N * S @ G @ S @ q1 @ S + trGS[:, None, None] * (S @ q1 @ S) / N - S @ WT @ p2.T @ W @ S, axis=0
    )
    return gp, gq


def _mode_args(
    p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, c: ArrayLike | None
) -> tuple[Array, Array, Array, int, Array, Array]:
    """Validated ``p, q, s, N, c`` of the U-diagonal exact loss and ``B = sum_b s_b^2 q_b^2`` (kept axis)."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    c = task_variances(c, s.size)
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    return p, q, s, N, c, np.sum(s**2 * q**2, axis=-1, keepdims=True)


def exact_mode_loss(p: ArrayLike, q: ArrayLike, s: ArrayLike, *, N: int, c: ArrayLike | None = None) -> Array:
    """Exact expected loss for U-diagonal ``p2 = U diag(p) U^T``, ``q1 = U diag(q) U^T``,
    ``p1 = q2 = 0`` (reduces :func:`exact_expected_loss`):

    ``L = 1/2 sum_a c_a [ (N+1)/N s_a^3 p_a^2 q_a^2 + s_a p_a^2 B / N - 2 s_a^2 p_a q_a + s_a ]``,
    ``B = sum_b s_b^2 q_b^2``. It differs from (14) by the inter-mode coupling ``B``: (14)
    has ``s_a^2 q_a^2 Tr S`` where the exact loss has ``s_a sum_b s_b^2 q_b^2``."""
    p, q, s, N, c, Bq = _mode_args(p, q, s, N, c)
    return 0.5 * np.sum(c * ((N + 1) / N * s**3 * p**2 * q**2 + s * p**2 * Bq / N - 2 * s**2 * p * q + s), axis=-1)


def exact_mode_gradients(
    p: ArrayLike, q: ArrayLike, s: ArrayLike, *, N: int, c: ArrayLike | None = None
) -> tuple[Array, Array]:
    """Gradients of :func:`exact_mode_loss`; the exact averaged flow (t in epochs) is
    ``dp/dt = -eta P dL/dp``, ``dq/dt = -eta P dL/dq`` (compare (9)-(10))."""
    p, q, s, N, c, Bq = _mode_args(p, q, s, N, c)
    Ac = np.sum(c * s * p**2, axis=-1, keepdims=True)
    gp = c * ((N + 1) / N * s**3 * p * q**2 + s * p * Bq / N - s**2 * q)
    gq = c * ((N + 1) / N * s**3 * p**2 * q - s**2 * p) + s**2 * q * Ac / N
    return gp, gq


def exact_fixed_point(s: ArrayLike, N: int, c: ArrayLike | None = None) -> Array:
    """Fixed point of the exact averaged flow on the U-diagonal manifold (products ``a = p q``):

    ``a_a = N / ((N+1) s_a) [1 - sum_b sqrt(c_b s_b) / ((N + 1 + d) sqrt(c_a s_a))]``.

    Equals the paper's ``1/s_inf`` iff ``S`` is isotropic (and ``c`` constant). Raises if
    some ``a_a <= 0`` (then the interior fixed point does not exist)."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    c = task_variances(c, s.size)
    d = s.size
    r = np.sqrt(c * s)
    a = N / ((N + 1) * s) * (1.0 - r.sum() / ((N + 1 + d) * r))
    if np.any(a <= 0):
        raise ValueError("s, N: no interior fixed point (a mode has a_alpha <= 0); increase N")
    return a


def exact_fixed_point_loss(s: ArrayLike, N: int, c: ArrayLike | None = None) -> float:
    """Minimum of the exact expected loss on the U-diagonal manifold:
    ``1/2 sum_a c_a [(N+1)/N s_a^3 a_a^2 - 2 s_a^2 a_a + s_a] + K^2 / (2N)``,
    ``K = sum_b sqrt(c_b) s_b^{3/2} a_b = N sum_b sqrt(c_b s_b) / (N + 1 + d)``."""
    s = positive_spectrum(s, "s")
    c = task_variances(c, s.size)
    a = exact_fixed_point(s, N, c)
    K = np.sum(np.sqrt(c) * s**1.5 * a)
    return float(0.5 * np.sum(c * ((N + 1) / N * s**3 * a**2 - 2 * s**2 * a + s)) + K**2 / (2 * N))


def integrate_mode_flow(
    t: ArrayLike,
    p0: ArrayLike,
    q0: ArrayLike,
    *,
    s: ArrayLike,
    N: int,
    eta: float,
    P: int,
    theory: str = "exact",
    c: ArrayLike | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-13,
) -> tuple[Array, Array]:
    """Integrate a mode flow on ``t`` (epochs, increasing from 0).

    ``theory="paper"``: ODEs (9)-(10); ``theory="exact"``: ``-eta P`` times
    :func:`exact_mode_gradients`. Returns ``p(t), q(t)``, each (T, d)."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    eta = positive_float(eta, "eta")
    d = s.size
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 1 or t[0] < 0 or np.any(np.diff(t) <= 0):
        raise ValueError("t: expected an increasing 1-d array of times >= 0")
    y0 = np.concatenate([np.broadcast_to(p0, (d,)), np.broadcast_to(q0, (d,))]).astype(float)
    if theory == "paper":

        def rhs(_: float, y: Array) -> Array:
            return np.concatenate(paper_mode_rhs(y[:d], y[d:], s, N=N, eta=eta, P=P, c=c))

    elif theory == "exact":

        def rhs(_: float, y: Array) -> Array:
            gp, gq = exact_mode_gradients(y[:d], y[d:], s, N=N, c=c)
            return -eta * P * np.concatenate([gp, gq])

    else:
        raise ValueError(f"theory: expected 'paper' or 'exact', got {theory!r}")
    sol = solve_ivp(rhs, (0.0, float(t[-1])), y0, t_eval=t, method="LSODA", rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - defensive
        raise RuntimeError(f"integrate_mode_flow: solver failed ({sol.message})")
    return sol.y[:d].T, sol.y[d:].T


def monte_carlo_loss(
    pT: ArrayLike,
    q: ArrayLike,
    problem: LogisticProblem,
    *,
    n_contexts: int,
    rng: np.random.Generator,
    chunk: int = 20000,
) -> tuple[float, float]:
    """Monte Carlo estimate of the expected loss of the exact model (Eq. 5 with Eq. 6,
    query included in Gamma_hat), tasks drawn uniformly from the task set.

    Returns ``(mean, standard error)``."""
    pT = np.asarray(pT, dtype=float)
    q = np.asarray(q, dtype=float)
    n_contexts = positive_int(n_contexts, "n_contexts", minimum=2)
    total, total2, n = 0.0, 0.0, 0
    while n < n_contexts:
        m = min(chunk, n_contexts - n)
        mu = rng.integers(0, problem.P, size=m)
        xc, yc, xq, yq = sample_contexts(problem, mu, (m,), rng=rng)
        loss, _, _ = loss_and_gradients(pT, q, xc, y_ctx=yc, x_q=xq, y_q=yq)
        total += loss.sum()
        total2 += (loss**2).sum()
        n += m
    mean = total / n
    var = total2 / n - mean**2
    return float(mean), float(np.sqrt(max(var, 0.0) / n))


def crossing_times(t: ArrayLike, a: ArrayLike, level: ArrayLike) -> Array:
    """First time each column of ``a`` (T, d) reaches ``level`` (d,), linearly interpolated
    between samples (``nan`` if never reached). With ``level = a_end / 2`` this is the
    measured half-saturation time, comparable with :func:`~iclcore.logistic.theory.half_time`."""
    t = np.asarray(t, dtype=float)
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] != t.size:
        raise ValueError(f"a: expected shape ({t.size}, d), got {a.shape}")
    level = np.broadcast_to(np.asarray(level, dtype=float), (a.shape[1],))
    out = np.full(a.shape[1], np.nan)
    for k in range(a.shape[1]):
        idx = np.nonzero(a[:, k] >= level[k])[0]
        if idx.size == 0:
            continue
        j = idx[0]
        if j == 0:
            out[k] = t[0]
        else:
            f = (level[k] - a[j - 1, k]) / (a[j, k] - a[j - 1, k])
            out[k] = t[j - 1] + f * (t[j] - t[j - 1])
    return out
