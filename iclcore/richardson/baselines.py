r"""Baseline preconditioners for the depth-``L`` Richardson decoder, compared on the same tasks.

A *task* is a symmetric positive definite system ``H x = d`` with a target ``x⋆``
(MMNN report §1, §4.1: ``x⋆`` is the regression task ``β`` or the system's own
solution ``x† = H^{-1} d``). A preconditioner ``P`` (shared, or built from ``H``) is run
for ``L`` steps from ``x_0 = 0``,

.. math::

    \begin{gathered}
    x_{ℓ+1} = x_ℓ + P (d − H x_ℓ),\\
    x_L − x⋆ = −(I − PH)^L x† + (x† − x⋆),
    \end{gathered}

and scored by the depth-``L`` risk ``R_L(P) = (1/K) E‖x_L − x⋆‖²`` (main paper §3.1).
Every method below is fitted on *training* tasks and evaluated on *held-out* tasks
at the same depth ``L``:

* ``scalar``   — ``P = η I`` with ``η`` minimising the training ``R_L`` (closed form
  per task through the eigendecomposition of ``H``: no step loop);
* ``jacobi``   — damped Jacobi ``P = ω D^{-1}``, ``D = diag(H)``, ``ω`` minimising
  the training ``R_L`` (closed form through ``D^{-1/2} H D^{-1/2}``);
* ``h_inf``    — ``P = H_∞^{-1}`` (``H_∞ = Σ_x + λI``, main paper §4; by default the
  training mean of ``H``, an unbiased estimate of ``H_∞`` for the §1.2 prompts);
* ``oracle``   — the one-step oracle ``P⋆ = B C^†``, ``B = E[x⋆ dᵀ]``, ``C = E[d dᵀ]``
  (main paper §3.1; :func:`iclcore.lsq.moments.oracle_preconditioner` when
  population moments are passed, the training moments otherwise);
* ``free``     — a free ``K × K`` matrix trained end-to-end on the training ``R_L``
  (L-BFGS with the exact back-propagated gradient, started at ``P⋆``): the depth-``L``
  linear optimum on the training set;
* ``exact``    — ``P = H^{-1}`` per task, so ``x_L = x†`` for every ``L ≥ 1``: the floor
  ``(1/K) E‖x† − x⋆‖²``.

The Table 2 quantities of a preconditioner and the encoder–decoder risk split are in
:mod:`iclcore.richardson.preconditioner_diagnostics`.

Arrays carry a leading task axis ``n``; ``K`` is the system size.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from iclcore.lsq.dynamics import quadratic_minimizer
from iclcore.stats import (
    binomial_standard_error,
    combined_standard_error,
    paired_standard_error,
    replica_spread,
    win_rate,
)
from iclcore.validation import check_depth, positive_int

__all__ = [
    "LinearSystems",
    "Baseline",
    "BaselineComparison",
    "METHODS",
    "depth_error",
    "depth_risk",
    "depth_risk_curve",
    "depth_losses",
    "replica_win_rate",
    "replica_gap_standard_error",
    "scaled_family_risk",
    "best_scaled_parameter",
    "scalar_baseline",
    "jacobi_baseline",
    "h_inf_baseline",
    "oracle_baseline",
    "free_linear_baseline",
    "free_linear_risk_and_grad",
    "exact_baseline",
    "compare_baselines",
]

METHODS = ("scalar", "jacobi", "h_inf", "oracle", "free", "exact")


@dataclass(frozen=True, eq=False)
class LinearSystems:
    """A batch of task systems ``H x† = d`` with targets ``x⋆``.

    Attributes
    ----------
    H : ndarray, shape (n, K, K)
        Symmetric positive definite system matrices.
    d : ndarray, shape (n, K)
        Right-hand sides.
    x_star : ndarray, shape (n, K)
        Targets of the risk (``β`` or ``x†``).
    """

    H: np.ndarray
    d: np.ndarray
    x_star: np.ndarray

    def __post_init__(self) -> None:
        H = np.asarray(self.H, dtype=float)
        d = np.asarray(self.d, dtype=float)
        xs = np.asarray(self.x_star, dtype=float)
        if H.ndim != 3 or H.shape[1] != H.shape[2] or H.shape[0] < 1:
            raise ValueError(f"H: expected shape (n, K, K), got {H.shape}")
        n, K = H.shape[:2]
        if d.shape != (n, K):
            raise ValueError(f"d: expected shape {(n, K)}, got {d.shape}")
        if xs.shape != (n, K):
            raise ValueError(f"x_star: expected shape {(n, K)}, got {xs.shape}")
        for name, a in (("H", H), ("d", d), ("x_star", xs)):
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: must be finite")
        scale = np.max(np.abs(H), axis=(1, 2), keepdims=True)
        if np.any(np.abs(H - np.swapaxes(H, 1, 2)) > 1e-10 * scale):
            raise ValueError("H: system matrices must be symmetric")
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "x_star", xs)

    @cached_property
    def x_dagger(self) -> np.ndarray:
        """The exact solves ``x† = H^{-1} d``, shape (n, K) (computed on first use: training
        samplers never read it)."""
        return np.linalg.solve(self.H, self.d[..., None])[..., 0]

    @property
    def n(self) -> int:
        """Number of tasks."""
        return self.H.shape[0]

    @property
    def K(self) -> int:
        """System size."""
        return self.H.shape[1]

    @classmethod
    def from_prompts(cls, prompts) -> LinearSystems:
        """From :class:`iclcore.lsq.tasks.Prompts` (``H = H_M``, ``d = c_M``, ``x⋆ = z⋆``)."""
        return cls(H=prompts.H_M, d=prompts.d, x_star=prompts.z_star)

    def preconditioner_stack(self, P: np.ndarray) -> np.ndarray:
        """``P`` as one preconditioner per task: a shared (K, K) is broadcast to (n, K, K).

        Raises
        ------
        ValueError
            Naming ``P`` for another shape or non-finite entries.
        """
        P = np.asarray(P, dtype=float)
        n, K = self.n, self.K
        if P.shape not in ((K, K), (n, K, K)):
            raise ValueError(f"P: expected shape {(K, K)} or {(n, K, K)}, got {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ValueError("P: must be finite")
        return np.broadcast_to(P, (n, K, K))

    def subset(self, idx) -> LinearSystems:
        """The tasks ``idx`` (any numpy index)."""
        return LinearSystems(H=self.H[idx], d=self.d[idx], x_star=self.x_star[idx])


def depth_error(P: np.ndarray, systems: LinearSystems, L: int, *, chunk: int = 128) -> np.ndarray:
    """Errors ``x_ℓ − x⋆`` for ``ℓ = 0..L`` from ``x_0 = 0``.

    Parameters
    ----------
    P : ndarray, shape (K, K) or (n, K, K)
    systems : LinearSystems
    L : int
    chunk : int
        Tasks per block: each block runs all ``L`` steps while its matrices are in cache (as in
        :func:`free_linear_risk_and_grad`); changes only the rounding.

    Returns
    -------
    ndarray, shape (n, L + 1, K)
    """
    L = check_depth(L, minimum=0)
    chunk = positive_int(chunk, "chunk")
    stack = systems.preconditioner_stack(P)  # validates shape and finiteness
    shared = np.ndim(P) == 2
    P = stack[0] if shared else stack
    out = np.empty((systems.n, L + 1, systems.K))
    out[:, 0] = -systems.x_star
    for s in range(0, systems.n, chunk):
        H, d, xs = systems.H[s : s + chunk], systems.d[s : s + chunk], systems.x_star[s : s + chunk]
        x = np.zeros_like(d)
        for ell in range(L):
            r = d - _matvec(H, x)
            x = x + _matvec(P if shared else P[s : s + chunk], r)
            out[s : s + chunk, ell + 1] = x - xs
    return out


def _matvec(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``A_n v_n`` for every task: A (n, K, K) or one shared (K, K), v (n, K) -> (n, K).

    Batched ``matmul``, not ``einsum``: on a cache-sized block of tasks it is the faster of the two
    (:func:`free_linear_risk_and_grad`); :mod:`iclcore.lsq.iterates`, which sweeps all tasks at
    once, keeps ``einsum``.
    """
    if A.ndim == 2:
        return v @ A.T
    return (A @ v[..., None])[..., 0]


def depth_risk_curve(P: np.ndarray, systems: LinearSystems, L: int) -> np.ndarray:
    """``R_ℓ(P) = (1/K) mean_n ‖x_ℓ − x⋆‖²`` for ``ℓ = 0..L``, shape (L + 1,)."""
    e = depth_error(P, systems, L)
    return np.mean(np.sum(e**2, axis=-1), axis=0) / systems.K


def depth_risk(P: np.ndarray, systems: LinearSystems, L: int) -> float:
    """``R_L(P) = (1/K) mean_n ‖x_L − x⋆‖²`` (main paper §3.1; MMNN report §4.2)."""
    return float(depth_risk_curve(P, systems, L)[-1])


def depth_losses(P: np.ndarray, systems: LinearSystems, L: int) -> np.ndarray:
    """Per-task losses ``(1/K) ‖x_L − x⋆‖²``, shape ``(n,)``: their mean is :func:`depth_risk`.

    Parameters
    ----------
    P : ndarray, shape (K, K) or (n, K, K)
    systems : LinearSystems
    L : int

    Examples
    --------
    >>> sys = LinearSystems(H=np.stack([np.eye(2), 2 * np.eye(2)]), d=np.ones((2, 2)), x_star=np.zeros((2, 2)))
    >>> depth_losses(np.eye(2), sys, 1)  # x_1 = d
    array([1., 1.])
    """
    return np.sum(depth_error(P, systems, L)[:, -1] ** 2, 1) / systems.K


def replica_win_rate(
    P_replicas: np.ndarray, rival: np.ndarray, systems: LinearSystems, *, L: int
) -> tuple[float, float]:
    """Share of tasks on which a learned ``P`` has a lower depth-``L`` loss than a rival, and its standard error.

    ``P_replicas[0]`` is the reported run, ``P_replicas[1:]`` independent training replicas of it. The
    rate of ``P_replicas[0]`` is a mean of independent indicators over the tasks
    (:func:`iclcore.stats.win_rate`, binomial standard error); the spread of the rate over the
    replicas on the same tasks (:func:`iclcore.stats.replica_spread`) is the training noise of a single
    run's rate. The two are added in quadrature. A win rate is robust to the heavy tails of a rival's
    per-task losses, which can swing a mean risk.

    Parameters
    ----------
    P_replicas : ndarray, shape (r, K, K), ``r >= 2``
    rival : ndarray, shape (K, K) or (n, K, K)
        The comparator (e.g. a baseline's :meth:`Baseline.preconditioners`).
    systems : LinearSystems
        ``n`` held-out tasks.
    L : int

    Returns
    -------
    (rate, se) : floats
    """
    rival_losses = depth_losses(rival, systems, L)
    w = np.array([win_rate(depth_losses(P, systems, L), rival_losses)[0] for P in P_replicas])
    return float(w[0]), combined_standard_error(binomial_standard_error(w[0], rival_losses.size), replica_spread(w))


def replica_gap_standard_error(
    P_replicas: np.ndarray, rivals: list[np.ndarray], systems: LinearSystems, *, L: int
) -> float:
    """Standard error of the depth-``L`` risk gap between a learned ``P`` and its rivals on the same tasks.

    The paired task standard error of ``R_L(P_replicas[0]) − R_L(rival)``
    (:func:`iclcore.stats.paired_standard_error`), the largest over the rivals, added in quadrature to
    the spread of ``R_L`` over the training replicas (:func:`iclcore.stats.replica_spread`).

    Parameters
    ----------
    P_replicas : ndarray, shape (r, K, K), ``r >= 2``
        The reported run first, then independent replicas.
    rivals : list of ndarray, each (K, K) or (n, K, K)
    systems : LinearSystems
    L : int
    """
    learned = depth_losses(P_replicas[0], systems, L)
    paired = max(paired_standard_error(learned, depth_losses(R, systems, L)) for R in rivals)
    return combined_standard_error(paired, replica_spread([depth_risk(P, systems, L) for P in P_replicas]))


# ---------------------------------------------------------------------------------------------
# one-parameter families P = θ Q(H), Q = diag(q) per task (q = 1: scalar; q = 1/diag H: Jacobi)


@dataclass(frozen=True)
class _ScaledFamily:
    """``Q^{1/2} H Q^{1/2} = W diag(μ) Wᵀ`` per task, with the two fixed vectors of the risk."""

    mu: np.ndarray  # (n, K) eigenvalues of Q^{1/2} H Q^{1/2}
    A: np.ndarray  # (n, K, K) = Q^{1/2} W
    a: np.ndarray  # (n, K) = Wᵀ Q^{-1/2} x†
    b: np.ndarray  # (n, K) = x† − x⋆


def _family(systems: LinearSystems, q: np.ndarray) -> _ScaledFamily:
    s = np.sqrt(q)
    Hs = systems.H * s[:, :, None] * s[:, None, :]
    mu, W = np.linalg.eigh(Hs)
    A = s[:, :, None] * W
    a = np.einsum("nji,nj->ni", W, systems.x_dagger / s)
    return _ScaledFamily(mu=mu, A=A, a=a, b=systems.x_dagger - systems.x_star)


def _family_risk(fam: _ScaledFamily, theta: float, L: int) -> float:
    t = (1.0 - theta * fam.mu) ** L
    e = fam.b - np.einsum("nij,nj->ni", fam.A, t * fam.a)
    return float(np.mean(np.sum(e**2, axis=-1)) / fam.a.shape[1])


def _family_vector(systems: LinearSystems, kind: str) -> np.ndarray:
    if kind == "scalar":
        return np.ones((systems.n, systems.K))
    if kind == "jacobi":
        diag = np.diagonal(systems.H, axis1=1, axis2=2)
        if np.any(diag <= 0):
            raise ValueError("H: damped Jacobi needs a positive diagonal")
        return 1.0 / diag
    raise ValueError(f"kind: unknown family {kind!r}; choose 'scalar' or 'jacobi'")


def scaled_family_risk(systems: LinearSystems, kind: str, theta: np.ndarray | float, *, L: int) -> np.ndarray | float:
    """Closed-form ``R_L(θ Q)`` for ``Q = I`` (``kind="scalar"``) or ``Q = D^{-1}`` (``"jacobi"``).

    With ``Q^{1/2} H Q^{1/2} = W diag(μ) Wᵀ``,
    ``x_L − x⋆ = −Q^{1/2} W diag((1 − θμ)^L) Wᵀ Q^{-1/2} x† + (x† − x⋆)``.

    Parameters
    ----------
    theta : float or ndarray of shape (m,)
    L : int

    Returns
    -------
    float, or ndarray of shape (m,)
    """
    L = check_depth(L, minimum=0)
    fam = _family(systems, _family_vector(systems, kind))
    th = np.asarray(theta, dtype=float)
    vals = np.array([_family_risk(fam, float(t), L) for t in th.ravel()])
    return float(vals[0]) if th.ndim == 0 else vals.reshape(th.shape)


def best_scaled_parameter(systems: LinearSystems, kind: str, L: int, *, n_grid: int = 65) -> tuple[float, float]:
    """``θ`` minimising the training ``R_L(θ Q)`` over ``0 < θ < 2 / min_n μ_max,n``.

    The window is the set of ``θ`` for which at least one task contracts; a log grid of
    ``n_grid`` points brackets the minimum, which bounded Brent
    (:func:`scipy.optimize.minimize_scalar`) then refines. Returns ``(θ, R_L(θ))``.
    """
    L = check_depth(L, minimum=0)
    if L == 0:
        raise ValueError("L: the depth-0 risk does not depend on the preconditioner; need L >= 1")
    n_grid = positive_int(n_grid, "n_grid", minimum=3)
    fam = _family(systems, _family_vector(systems, kind))
    hi = 2.0 / float(np.min(fam.mu[:, -1]))
    lo = 1e-4 / float(np.max(fam.mu[:, -1]))
    grid = np.geomspace(lo, hi, n_grid)
    with np.errstate(over="ignore", invalid="ignore"):
        vals = np.array([_family_risk(fam, t, L) for t in grid])
    vals = np.where(np.isfinite(vals), vals, np.inf)
    i = int(np.argmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]
    res = minimize_scalar(
        lambda t: _family_risk(fam, t, L), bounds=(a, b), method="bounded", options={"xatol": 1e-10 * b}
    )
    theta, val = (float(res.x), float(res.fun)) if res.fun <= vals[i] else (float(grid[i]), float(vals[i]))
    return theta, val


# ---------------------------------------------------------------------------------------------
# the baselines


@dataclass(frozen=True, eq=False)
class Baseline:
    """A fitted baseline preconditioner.

    Attributes
    ----------
    name : str
        One of :data:`METHODS`.
    P : ndarray of shape (K, K) or None
        The shared matrix (``None`` for the task-dependent ``scalar``/``jacobi``/``exact``
        rules, whose matrix :meth:`preconditioners` builds from ``H``).
    param : float or None
        ``η`` (scalar) or ``ω`` (Jacobi).
    train_risk : float
        ``R_L`` on the training tasks.
    converged : bool or None
        For an iteratively fitted baseline (``free``): whether the optimiser met its tolerance
        before its iteration budget; ``None`` for the others.
    n_iter : int or None
        Iterations used by the optimiser (``free``); ``None`` for the others.
    """

    name: str
    P: np.ndarray | None
    param: float | None
    train_risk: float
    converged: bool | None = None
    n_iter: int | None = None

    def preconditioners(self, H: np.ndarray) -> np.ndarray:
        """The per-task matrices ``P(H)``, shape (n, K, K), for ``H`` of shape (n, K, K)."""
        H = np.asarray(H, dtype=float)
        n, K = H.shape[:2]
        if self.name == "scalar":
            return np.broadcast_to(self.param * np.eye(K), (n, K, K)).copy()
        if self.name == "jacobi":
            diag = np.diagonal(H, axis1=1, axis2=2)
            return self.param * np.eye(K)[None] / diag[:, None, :]
        if self.name == "exact":
            return np.linalg.inv(H)
        return np.broadcast_to(self.P, (n, K, K)).copy()


def scalar_baseline(train: LinearSystems, L: int) -> Baseline:
    """Best scalar ``η I`` at depth ``L`` on the training tasks."""
    eta, risk = best_scaled_parameter(train, "scalar", L)
    return Baseline("scalar", None, eta, risk)


def jacobi_baseline(train: LinearSystems, L: int) -> Baseline:
    """Damped Jacobi ``ω D^{-1}`` with ``ω`` best at depth ``L`` on the training tasks."""
    omega, risk = best_scaled_parameter(train, "jacobi", L)
    return Baseline("jacobi", None, omega, risk)


def h_inf_baseline(train: LinearSystems, L: int, H_inf: np.ndarray | None = None) -> Baseline:
    """``P = H_∞^{-1}``; ``H_∞`` defaults to the training mean of ``H`` (shape (K, K))."""
    H_inf = train.H.mean(axis=0) if H_inf is None else np.asarray(H_inf, dtype=float)
    if H_inf.shape != (train.K, train.K):
        raise ValueError(f"H_inf: expected shape {(train.K, train.K)}, got {H_inf.shape}")
    P = np.linalg.inv(H_inf)
    return Baseline("h_inf", P, None, depth_risk(P, train, L))


def oracle_baseline(train: LinearSystems, L: int, moments=None) -> Baseline:
    """One-step oracle ``P⋆ = B C^†`` (main paper §3.1).

    ``moments`` (an :class:`iclcore.lsq.moments.Moments`) gives population ``B, C``;
    otherwise the training moments ``B = mean x⋆dᵀ``, ``C = mean ddᵀ`` are used.
    """
    if moments is not None:
        B, C = moments.B, moments.C
    else:
        C = train.d.T @ train.d / train.n
        B = train.x_star.T @ train.d / train.n
    P = quadratic_minimizer(B, 0.5 * (C + C.T))
    return Baseline("oracle", P, None, depth_risk(P, train, L))


def free_linear_risk_and_grad(
    P: np.ndarray, systems: LinearSystems, L: int, *, chunk: int = 128
) -> tuple[float, np.ndarray]:
    """``R_L(P)`` and its exact gradient ``∂R_L/∂P`` (shape (K, K)) by back-propagation.

    Forward ``r_ℓ = d − H x_ℓ``, ``x_{ℓ+1} = x_ℓ + P r_ℓ``; backward
    ``g_L = 2(x_L − x⋆)/(nK)``, ``∂R/∂P = Σ_ℓ Σ_n g_{ℓ+1} r_ℓᵀ``,
    ``g_ℓ = g_{ℓ+1} − H Pᵀ g_{ℓ+1}`` (``H`` symmetric).

    The tasks are processed ``chunk`` at a time, forward and backward through all ``L`` steps
    before the next chunk, so a chunk's matrices ``H_n`` stay in cache for the ``2L`` batched
    matrix-vector products instead of streaming all ``n`` matrices from memory ``2L`` times
    (``benchmarks/bench_task_blocks.py`` measures the gain; ``chunk`` changes only the rounding).
    """
    L = check_depth(L, minimum=0)
    chunk = positive_int(chunk, "chunk")
    P = np.asarray(P, dtype=float)
    n, K = systems.n, systems.K
    sq_err = 0.0
    grad = np.zeros((K, K))
    for s in range(0, n, chunk):
        H, d = systems.H[s : s + chunk], systems.d[s : s + chunk]
        x = np.zeros_like(d)
        rs = np.empty((L, *d.shape))
        for ell in range(L):
            rs[ell] = d - _matvec(H, x)
            x = x + rs[ell] @ P.T
        e = x - systems.x_star[s : s + chunk]
        sq_err += float(np.sum(e**2))
        g = 2.0 * e / (n * K)
        for ell in range(L - 1, -1, -1):
            grad += g.T @ rs[ell]
            g = g - _matvec(H, g @ P)
    return sq_err / (n * K), grad


def free_linear_baseline(
    train: LinearSystems,
    L: int,
    P0: np.ndarray | None = None,
    *,
    max_iter: int = 200,
    gtol: float = 1e-10,
    chunk: int = 128,
) -> Baseline:
    """A free ``K × K`` preconditioner minimising the training ``R_L`` (L-BFGS-B, exact gradient).

    Starts at ``P0`` (default: the training one-step oracle ``P⋆``). Deterministic for a fixed
    machine and thread count. ``converged`` says whether ``gtol``/``ftol`` were met within
    ``max_iter``; when they were not, the end point depends on the optimiser's path, which can be
    sensitive to rounding (at the pde_galerkin paper preset, three task-block sizes of
    :func:`free_linear_risk_and_grad`, which differ only in rounding, left held-out risks
    more than two orders of magnitude apart after 500 iterations). ``chunk``: the task-block size
    of :func:`free_linear_risk_and_grad` (rounding only; a second fit with another ``chunk``
    measures that sensitivity).
    """
    L = check_depth(L, minimum=0)
    if L == 0:
        raise ValueError("L: the depth-0 risk does not depend on P; need L >= 1")
    K = train.K
    P0 = oracle_baseline(train, L).P if P0 is None else np.asarray(P0, dtype=float)
    if P0.shape != (K, K):
        raise ValueError(f"P0: expected shape {(K, K)}, got {P0.shape}")

    def fun(p):
        r, g = free_linear_risk_and_grad(p.reshape(K, K), train, L, chunk=chunk)
        return r, g.ravel()

    res = minimize(
        fun, P0.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": int(max_iter), "gtol": gtol, "ftol": 1e-12}
    )
    P = res.x.reshape(K, K)
    return Baseline("free", P, None, float(res.fun), converged=bool(res.success), n_iter=int(res.nit))


def exact_baseline(train: LinearSystems, L: int) -> Baseline:
    """The exact solve ``P = H^{-1}`` (``x_L = x†`` for ``L ≥ 1``): the floor."""
    L = check_depth(L, minimum=0)
    risk = (
        float(np.mean(np.sum((train.x_dagger - train.x_star) ** 2, axis=-1)) / train.K)
        if L >= 1
        else float(np.mean(np.sum(train.x_star**2, axis=-1)) / train.K)
    )
    return Baseline("exact", None, None, risk)


@dataclass(frozen=True, eq=False)
class BaselineComparison:
    """All baselines fitted on the same training tasks and scored on the same held-out tasks.

    Attributes
    ----------
    L : int
    baselines : dict[str, Baseline]
        Keyed by :data:`METHODS` (those requested).
    test_risk : dict[str, float]
        Held-out ``R_L``.
    test_curves : dict[str, ndarray]
        Held-out ``R_ℓ``, ``ℓ = 0..L``, each of shape (L + 1,).
    """

    L: int
    baselines: dict
    test_risk: dict
    test_curves: dict

    @property
    def best(self) -> str:
        """The non-floor method with the smallest held-out risk."""
        cand = {k: v for k, v in self.test_risk.items() if k != "exact"}
        return min(cand, key=cand.get)


def compare_baselines(
    train: LinearSystems,
    test: LinearSystems,
    L: int,
    *,
    methods: tuple[str, ...] = METHODS,
    H_inf: np.ndarray | None = None,
    moments=None,
    free_max_iter: int = 200,
) -> BaselineComparison:
    """Fit every baseline of ``methods`` on ``train`` and evaluate it on ``test`` at depth ``L``.

    Parameters
    ----------
    train, test : LinearSystems
        Same ``K``; disjoint draws.
    L : int
        Depth (``≥ 1``).
    methods : tuple of str
        Subset of :data:`METHODS`.
    H_inf : ndarray (K, K), optional
        Population ``H_∞`` for ``h_inf`` (default: training mean of ``H``).
    moments : Moments, optional
        Population moments for ``oracle`` (default: training moments).
    free_max_iter : int
        L-BFGS iterations for ``free``.

    Returns
    -------
    BaselineComparison
    """
    L = check_depth(L)
    if train.K != test.K:
        raise ValueError(f"test: system size {test.K} differs from the training size {train.K}")
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"methods: unknown {sorted(unknown)}; choose from {METHODS}")
    fitted: dict[str, Baseline] = {}
    for m in methods:
        if m == "scalar":
            fitted[m] = scalar_baseline(train, L)
        elif m == "jacobi":
            fitted[m] = jacobi_baseline(train, L)
        elif m == "h_inf":
            fitted[m] = h_inf_baseline(train, L, H_inf)
        elif m == "oracle":
            fitted[m] = oracle_baseline(train, L, moments)
        elif m == "free":
            P0 = fitted["oracle"].P if "oracle" in fitted and moments is None else None
            fitted[m] = free_linear_baseline(train, L, P0=P0, max_iter=free_max_iter)
        elif m == "exact":
            fitted[m] = exact_baseline(train, L)
    curves = {
        m: depth_risk_curve(b.preconditioners(test.H) if b.P is None else b.P, test, L) for m, b in fitted.items()
    }
    return BaselineComparison(
        L=L, baselines=fitted, test_risk={m: float(c[-1]) for m, c in curves.items()}, test_curves=curves
    )
