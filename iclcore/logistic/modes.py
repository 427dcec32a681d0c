"""Exact logistic mode dynamics of a one-layer linear transformer (seed 003).

Implements Mainali & Teixeira, seed 003: the model of §2 (Eqs. 1-8), online SGD on a
fixed set of P tasks that share the eigenbasis ``U`` of the input covariance (§2.3,
App. A.8), the paper's theory of §3 (ODEs (9)-(10), mode ODE (12), logistic solution
(13), loss (14), L(inf), fixed point ``p2 q1 = [s_inf(S)]^{-1}``, conserved ``C``,
timescales), and the *exact* expected dynamics of the stated model at finite context
length ``N``.

Notation and conventions (every choice the paper leaves open is stated here)
----------------------------------------------------------------------------
* ``d`` input/output dimension, ``D = 2d`` embedding dimension, ``N`` context length.
* The read-out blocks are stored as ``pT = p^T = (p1 p2)`` of shape ``(d, D)`` (the
  bottom ``d`` rows of ``W^P``) and ``q = (q1; q2)`` of shape ``(D, d)`` (the first
  ``d`` columns of ``W^Q``), Eqs. (2)-(3). No other entry of ``W^P``, ``W^Q`` enters
  the prediction (they receive exactly zero gradient).
* ``Gamma_hat = Z Z^T / N`` *includes* the query column (Eq. 1 normalises by ``N``
  although ``Z`` has ``N + 1`` columns); the simulation uses the model exactly as
  stated, not the large-N simplification (A11).
* Time ``t`` of the theory is measured in epochs (one epoch = ``P`` SGD steps, one per
  task, tasks visited in the fixed order ``mu = 0..P-1``), so that
  ``tau_alpha = 1 / (eta P s_alpha^2)`` epochs, as in (A63)-(A80).
* Each SGD step draws ``B`` fresh independent contexts (each with its own query) for the
  current task and uses the *mean* of their gradients ("batch ... accumulated", A.8.4).
* Tasks ``W^mu = U diag(lambda_mu) U^T`` with ``lambda_mu ~ N(0, I_d)``; the
  ``antithetic`` option draws ``P/2`` of them and appends their negatives, which makes
  every odd empirical moment of the task set exactly zero.
* ``c_alpha = (1/P) sum_mu lambda_{mu alpha}^2`` is the empirical task variance of mode
  ``alpha``; the paper replaces it by ``E[lambda^2] = 1``. Functions of the paper's
  theory accept an optional ``c`` (default 1: the paper verbatim).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from iclcore.linalg import haar_orthogonal
from iclcore.validation import positive_float, positive_int, positive_spectrum

Array = NDArray[np.float64]

__all__ = [
    "LogisticProblem",
    "SGDConfig",
    "SGDResult",
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
    "run_sgd",
    "mode_products",
    "s_infinity",
    "timescales",
    "paper_mode_rhs",
    "paper_fixed_point",
    "logistic_solution",
    "paper_loss",
    "paper_loss_infinity",
    "paper_initial_slope",
    "half_time",
    "paper_t_star",
    "cliff_time",
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
# validation helpers
# --------------------------------------------------------------------------------------








def _as_c(c: ArrayLike | None, d: int) -> Array:
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
    """A regression problem of seed 003 §2.3: ``Sigma_x = U S U^T``, tasks ``U Lambda U^T``.

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
    rng: np.random.Generator,
    *,
    antithetic: bool = True,
    random_basis: bool = True,
) -> LogisticProblem:
    """Draw the fixed task set of seed 003 §2.3 / App. A.8.2.

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
    if isinstance(P, bool) or not isinstance(P, (int, np.integer)) or P < 1:
        raise ValueError(f"P: number of tasks must be a positive integer, got {P!r}")
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
    problem: LogisticProblem, task: ArrayLike, shape: tuple[int, ...], rng: np.random.Generator
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
    pT: Array, q: Array, x_ctx: Array, y_ctx: Array, x_q: Array, y_q: Array
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
    v = (q @ x_q[..., None])  # q x_q, (..., D, 1)
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


# --------------------------------------------------------------------------------------
# SGD simulation
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SGDConfig:
    """Online SGD of §2.3 / A.8.4 with the choices the paper leaves open.

    Attributes
    ----------
    eta : learning rate.
    B : independent contexts per SGD step (gradient = their mean).
    epochs : number of epochs (``epochs * P`` SGD steps).
    init_scale : ``p2(0) = q1(0) = init_scale * I`` (U-diagonal, ``a_alpha(0) = init_scale^2``).
    null_init_scale : std of the iid Gaussian entries of ``p1(0)``, ``q2(0)``.
    train_null : also train ``p1``, ``q2`` (otherwise they stay at their initial value).
    replicas : independent data streams (same task set and init of p2, q1) run in parallel.
    log_every : SGD steps per log point (losses are averaged over the window).
    """

    eta: float = 0.02
    B: int = 32
    epochs: float = 20.0
    init_scale: float = 0.01
    null_init_scale: float = 0.0
    train_null: bool = False
    replicas: int = 4
    log_every: int = 16

    def __post_init__(self) -> None:
        positive_float(self.eta, "eta")
        positive_float(self.epochs, "epochs")
        if self.init_scale < 0 or self.null_init_scale < 0:
            raise ValueError("init_scale, null_init_scale: must be >= 0")
        for name in ("B", "replicas", "log_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")


@dataclass
class SGDResult:
    """Logged trajectory of :func:`run_sgd`.

    Attributes
    ----------
    t : (T,) time in epochs of each log point (``t = step / P``).
    pT, q : (T, R, d, D), (T, R, D, d) parameters at the log points.
    loss : (T,) replica-mean of the per-step batch-mean loss, averaged over the window
        ending at each log point (``loss[0]`` is the loss at the initial parameters).
    loss_replicas : (T, R) the same per replica.
    """

    t: Array
    pT: Array
    q: Array
    loss: Array
    loss_replicas: Array
    problem: LogisticProblem
    config: SGDConfig
    extra: dict = field(default_factory=dict)

    def blocks_mode_basis(self) -> dict[str, Array]:
        """``p1, p2, q1, q2`` rotated to the U basis (``U^T X U``), each (T, R, d, d)."""
        d = self.problem.d
        U = self.problem.U
        rot = lambda X: np.einsum("ia,...ij,jb->...ab", U, X, U)  # noqa: E731
        return {
            "p1": rot(self.pT[..., :, :d]),
            "p2": rot(self.pT[..., :, d:]),
            "q1": rot(self.q[..., :d, :]),
            "q2": rot(self.q[..., d:, :]),
        }


def run_sgd(problem: LogisticProblem, config: SGDConfig, rng: np.random.Generator) -> SGDResult:
    """Train the exact model of Eq. (1) by online SGD (seed 003 §2.3, A.8.4).

    Each step ``k`` uses task ``mu = k mod P`` (fixed order), ``B`` fresh contexts per
    replica, and the mean gradient. ``p2``, ``q1`` are always trained; ``p1``, ``q2`` only if
    ``config.train_null``. Vectorised over replicas and contexts; one Python loop over steps.
    """
    d, P = problem.d, problem.P
    D = 2 * d
    R, B, eta = config.replicas, config.B, config.eta
    n_steps = int(round(config.epochs * P))
    if n_steps < 1:
        raise ValueError("epochs: fewer than one SGD step")
    pT = np.zeros((R, d, D))
    q = np.zeros((R, D, d))
    pT[:, :, d:] = config.init_scale * np.eye(d)
    q[:, :d, :] = config.init_scale * np.eye(d)
    if config.null_init_scale > 0:
        pT[:, :, :d] = config.null_init_scale * rng.standard_normal((R, d, d))
        q[:, d:, :] = config.null_init_scale * rng.standard_normal((R, d, d))
    mask_p = np.zeros((d, D))
    mask_q = np.zeros((D, d))
    mask_p[:, d:] = 1.0
    mask_q[:d, :] = 1.0
    if config.train_null:
        mask_p[:] = 1.0
        mask_q[:] = 1.0
    L = config.log_every
    n_logs = n_steps // L
    ts = np.zeros(n_logs + 1)
    pTs = np.zeros((n_logs + 1, R, d, D))
    qs = np.zeros((n_logs + 1, R, D, d))
    losses = np.zeros((n_logs + 1, R))
    pTs[0], qs[0] = pT, q
    acc = np.zeros(R)
    for k in range(n_steps):
        mu = k % P
        xc, yc, xq, yq = sample_contexts(problem, mu, (R, B), rng)
        loss, gp, gq = loss_and_gradients(pT[:, None], q[:, None], xc, yc, xq, yq)
        if k == 0:
            losses[0] = loss.mean(1)
        pT = pT - eta * gp.mean(1) * mask_p
        q = q - eta * gq.mean(1) * mask_q
        acc += loss.mean(1)
        if (k + 1) % L == 0:
            j = (k + 1) // L
            ts[j] = (k + 1) / P
            pTs[j], qs[j] = pT, q
            losses[j] = acc / L
            acc[:] = 0.0
    m = n_logs + 1
    return SGDResult(
        t=ts[:m], pT=pTs[:m], q=qs[:m], loss=losses[:m].mean(1), loss_replicas=losses[:m], problem=problem, config=config
    )


def mode_products(result: SGDResult) -> dict[str, Array]:
    """Per-mode quantities of a simulation in the U basis, each (T, R, d):
    ``a = diag(U^T p2 q1 U)`` (the paper's ``a_alpha``), ``b = diag(U^T p1 q2 U)`` (the
    null route), ``p``, ``q`` = diagonals of ``U^T p2 U``, ``U^T q1 U``; and
    ``offdiag`` (T, R): largest absolute off-diagonal entry of ``U^T p2 q1 U``."""
    blk = result.blocks_mode_basis()
    A = blk["p2"] @ blk["q1"]
    Bm = blk["p1"] @ blk["q2"]
    off = np.abs(A - np.einsum("...ii->...i", A)[..., None] * np.eye(result.problem.d))
    return {
        "a": np.einsum("...ii->...i", A),
        "b": np.einsum("...ii->...i", Bm),
        "p": np.einsum("...ii->...i", blk["p2"]),
        "q": np.einsum("...ii->...i", blk["q1"]),
        "offdiag": off.max(axis=(-2, -1)),
    }


# --------------------------------------------------------------------------------------
# the paper's theory, §3 and App. A.11-A.13
# --------------------------------------------------------------------------------------


def s_infinity(s: ArrayLike, N: int) -> Array:
    """``s_alpha^inf = ((N + 1) s_alpha + Tr S) / N`` (after Eq. 10). Shape (d,)."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    return ((N + 1) * s + s.sum()) / N


def timescales(s: ArrayLike, eta: float, P: int, c: ArrayLike | None = None) -> Array:
    """``tau_alpha = 1 / (eta P c_alpha s_alpha^2)`` in epochs (after Eq. 12; ``c = 1`` is the paper)."""
    s = positive_spectrum(s, "s")
    eta = positive_float(eta, "eta")
    P = positive_float(P, "P")
    return 1.0 / (eta * P * _as_c(c, s.size) * s**2)


def paper_fixed_point(s: ArrayLike, N: int) -> Array:
    """Paper's fixed point ``a_alpha^inf = 1 / s_alpha^inf``, i.e. ``p2 q1 = [s_inf(S)]^{-1}`` (§3)."""
    return 1.0 / s_infinity(s, N)


def paper_mode_rhs(
    p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, eta: float, P: int, c: ArrayLike | None = None
) -> tuple[Array, Array]:
    """Right-hand side of ODEs (9)-(10) / mode form (12): ``tau dp/dt = q (1 - p q s_inf)``,
    ``tau dq/dt = p (1 - p q s_inf)``. Returns ``(dp/dt, dq/dt)``, shape (..., d)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    tau = timescales(s, eta, P, c)
    r = 1.0 - p * q * s_infinity(s, N)
    return q * r / tau, p * r / tau


def logistic_solution(
    t: ArrayLike, a0: ArrayLike, s: ArrayLike, N: int, eta: float, P: int, c: ArrayLike | None = None
) -> Array:
    """Logistic solution Eq. (13): ``a(t) = a_inf a0 / (a0 + (a_inf - a0) exp(-2t/tau))``.

    ``t`` (T,) in epochs, ``a0`` scalar or (d,); returns (T, d). Valid for ``p(0) = q(0)``."""
    t = np.asarray(t, dtype=float)
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    if np.any(a0 <= 0):
        raise ValueError("a0: the logistic solution needs a_alpha(0) > 0")
    ainf = paper_fixed_point(s, N)
    tau = timescales(s, eta, P, c)
    return ainf * a0 / (a0 + (ainf - a0) * np.exp(-2.0 * t[..., None] / tau))


def paper_loss(a: ArrayLike, s: ArrayLike, N: int, c: ArrayLike | None = None) -> Array:
    """Expected loss Eq. (14)/(A110): ``1/2 sum_a c_a s_a (s_a a_a^2 / a_inf - 2 s_a a_a + 1)``.

    ``a`` (..., d); ``c = 1`` is the paper verbatim. Returns shape (...)."""
    s = positive_spectrum(s, "s")
    a = np.asarray(a, dtype=float)
    c = _as_c(c, s.size)
    return 0.5 * np.sum(c * s * (s * s_infinity(s, N) * a**2 - 2 * s * a + 1.0), axis=-1)


def paper_loss_infinity(s: ArrayLike, N: int) -> float:
    """Converged loss (A114): ``L(inf) = 1/2 sum_a s_a (s_a + Tr S) / ((N + 1) s_a + Tr S)``."""
    s = positive_spectrum(s, "s")
    N = positive_int(N, "N")
    return float(0.5 * np.sum(s * (s + s.sum()) / ((N + 1) * s + s.sum())))


def paper_initial_slope(a0: ArrayLike, s: ArrayLike, N: int, eta: float, P: int) -> float:
    """Initial slope (A115): ``dL/dt(0) = -2 sum_a P eta s_a^4 a0 ((a0 - a_inf)/a_inf)^2``."""
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    ainf = paper_fixed_point(s, N)
    return float(-2.0 * np.sum(P * eta * s**4 * a0 * ((a0 - ainf) / ainf) ** 2))


def half_time(
    a0: ArrayLike, s: ArrayLike, N: int, eta: float, P: int, c: ArrayLike | None = None
) -> Array:
    """Half-saturation time of (13): ``a(t_half) = a_inf / 2``,
    ``t_half = (tau/2) ln((a_inf - a0) / a0)`` (epochs), the inflection of the logistic."""
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    ainf = paper_fixed_point(s, N)
    if np.any(a0 <= 0) or np.any(a0 >= ainf):
        raise ValueError("a0: half_time needs 0 < a0 < a_inf")
    return 0.5 * timescales(s, eta, P, c) * np.log((ainf - a0) / a0)


def paper_t_star(a0: ArrayLike, s: ArrayLike, N: int, eta: float, P: int) -> Array:
    """Paper's characteristic time (after Eq. 13), ``t* = (tau/2) log(1/(s_inf eps))`` with
    the learning rate for the paper's ``lambda`` and ``eps = a0`` (the initial product)."""
    s = positive_spectrum(s, "s")
    a0 = np.broadcast_to(np.asarray(a0, dtype=float), s.shape)
    if np.any(a0 <= 0):
        raise ValueError("a0: must be > 0")
    return 0.5 * timescales(s, eta, P) * np.log(1.0 / (s_infinity(s, N) * a0))


def cliff_time(a0: ArrayLike, s: ArrayLike, N: int, eta: float, P: int, c: ArrayLike | None = None) -> Array:
    """Time of the fastest loss decrease of mode alpha under (12)-(14): ``a = a_inf/3``,
    ``t_cliff = t_half - (tau/2) ln 2``."""
    return half_time(a0, s, N, eta, P, c) - 0.5 * timescales(s, eta, P, c) * np.log(2.0)


# --------------------------------------------------------------------------------------
# exact expected dynamics of the stated model (p1 = q2 = 0), any N
# --------------------------------------------------------------------------------------


def _wishart_sandwich(sigma: Array, M: Array, N: int) -> Array:
    """``E[Sigma_hat M Sigma_hat] = (N+1)/N Sigma M Sigma + tr(M Sigma) Sigma / N`` for
    symmetric ``M`` and ``Sigma_hat`` the mean of ``N`` outer products of N(0, Sigma) vectors."""
    tr = np.einsum("...ij,ji->...", M, sigma)
    return (N + 1) / N * sigma @ M @ sigma + tr[..., None, None] * sigma / N


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
    E = _wishart_sandwich(S, q1 @ S @ np.swapaxes(q1, -1, -2), N)[..., None, :, :]  # (...,1,d,d)
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
    E = _wishart_sandwich(S, q1 @ S @ q1.T, N)
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
    c = _as_c(c, s.size)
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    return p, q, s, N, c, np.sum(s**2 * q**2, axis=-1, keepdims=True)


def exact_mode_loss(p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, c: ArrayLike | None = None) -> Array:
    """Exact expected loss for U-diagonal ``p2 = U diag(p) U^T``, ``q1 = U diag(q) U^T``,
    ``p1 = q2 = 0`` (reduces :func:`exact_expected_loss`):

    ``L = 1/2 sum_a c_a [ (N+1)/N s_a^3 p_a^2 q_a^2 + s_a p_a^2 B / N - 2 s_a^2 p_a q_a + s_a ]``,
    ``B = sum_b s_b^2 q_b^2``. It differs from (14) by the inter-mode coupling ``B``: (14)
    has ``s_a^2 q_a^2 Tr S`` where the exact loss has ``s_a sum_b s_b^2 q_b^2``."""
    p, q, s, N, c, Bq = _mode_args(p, q, s, N, c)
    return 0.5 * np.sum(
        c * ((N + 1) / N * s**3 * p**2 * q**2 + s * p**2 * Bq / N - 2 * s**2 * p * q + s), axis=-1
    )


def exact_mode_gradients(
    p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, c: ArrayLike | None = None
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
    c = _as_c(c, s.size)
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
    c = _as_c(c, s.size)
    a = exact_fixed_point(s, N, c)
    K = np.sum(np.sqrt(c) * s**1.5 * a)
    return float(0.5 * np.sum(c * ((N + 1) / N * s**3 * a**2 - 2 * s**2 * a + s)) + K**2 / (2 * N))


def integrate_mode_flow(
    t: ArrayLike,
    p0: ArrayLike,
    q0: ArrayLike,
    s: ArrayLike,
    N: int,
    eta: float,
    P: int,
    *,
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
            return np.concatenate(paper_mode_rhs(y[:d], y[d:], s, N, eta, P, c))

    elif theory == "exact":

        def rhs(_: float, y: Array) -> Array:
            gp, gq = exact_mode_gradients(y[:d], y[d:], s, N, c)
            return -eta * P * np.concatenate([gp, gq])

    else:
        raise ValueError(f"theory: expected 'paper' or 'exact', got {theory!r}")
    sol = solve_ivp(rhs, (0.0, float(t[-1])), y0, t_eval=t, method="LSODA", rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - defensive
        raise RuntimeError(f"integrate_mode_flow: solver failed ({sol.message})")
    return sol.y[:d].T, sol.y[d:].T


def monte_carlo_loss(
    pT: ArrayLike, q: ArrayLike, problem: LogisticProblem, n_contexts: int, rng: np.random.Generator, chunk: int = 20000
) -> tuple[float, float]:
    """Monte Carlo estimate of the expected loss of the exact model (Eq. 5 with Eq. 6,
    query included in Gamma_hat), tasks drawn uniformly from the task set.

    Returns ``(mean, standard error)``."""
    pT = np.asarray(pT, dtype=float)
    q = np.asarray(q, dtype=float)
    if n_contexts < 2:
        raise ValueError("n_contexts: need at least 2 samples")
    total, total2, n = 0.0, 0.0, 0
    while n < n_contexts:
        m = min(chunk, n_contexts - n)
        mu = rng.integers(0, problem.P, size=m)
        xc, yc, xq, yq = sample_contexts(problem, mu, (m,), rng)
        loss, _, _ = loss_and_gradients(pT, q, xc, yc, xq, yq)
        total += loss.sum()
        total2 += (loss**2).sum()
        n += m
    mean = total / n
    var = total2 / n - mean**2
    return float(mean), float(np.sqrt(max(var, 0.0) / n))


def crossing_times(t: ArrayLike, a: ArrayLike, level: ArrayLike) -> Array:
    """First time each column of ``a`` (T, d) reaches ``level`` (d,), linearly interpolated
    between samples (``nan`` if never reached). With ``level = a_end / 2`` this is the
    measured half-saturation time, comparable with :func:`half_time`."""
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
