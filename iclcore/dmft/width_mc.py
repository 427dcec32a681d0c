"""Width-``N`` deep linear attention on RRS data by Monte Carlo (Bordelon et al. §4, Eq. 14,
19, 102): Haar frames, the one-point reduction at ``P = ∞`` (exact in distribution at finite
``D``) with its gradient flow, and the general Monte Carlo at finite width and context. The width-``N`` model, its normalisation ``c = D/N`` and its notation are described in
:mod:`iclcore.dmft`.

Tasks of :func:`iclcore.parallel.map_configs`: spectra and landscapes drawn from one shared generator
(:func:`width_spectrum_jobs`, :func:`width_spectrum_job`, :func:`width_landscape_jobs`,
:func:`width_landscape_job`) and one SGD run of the width model with its
theory (:func:`width_sgd_run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from iclcore.linalg import haar_orthogonal
from iclcore.stats import standard_error
from iclcore.validation import as_generator, check_depth, nonnegative_grid, positive_int, spectrum_pair

if TYPE_CHECKING:
    from iclcore.models.attention import TrainResult

__all__ = [
    "haar_columns",
    "WidthSpectrum",
    "width_spectrum_mc",
    "width_loss",
    "width_loss_draws",
    "width_loss_se",
    "width_loss_grad",
    "width_min_loss",
    "GradientFlow",
    "width_gradient_flow",
    "width_landscape_mc",
    "WidthSpectrumJob",
    "width_spectrum_jobs",
    "width_spectrum_job",
    "WidthLandscapeJob",
    "width_landscape_jobs",
    "width_landscape_job",
    "WidthSGDRun",
    "width_sgd_run",
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
    def n_draws(self) -> int:
        """Number of independent projections pooled (``s`` holds ``n_draws`` blocks of ``N``)."""
        return self.s.size // self.N

    @property
    def null_loss(self) -> float:
        """``tr[Omega Lambda P_ker(K)]``: the loss left in the null space of ``K`` (t, L -> inf)."""
        return float(self.total - self.c.sum())


def width_spectrum_mc(
    lam: np.ndarray, omega: np.ndarray, N: int, *, rng: np.random.Generator, n_draws: int = 1
) -> WidthSpectrum:
    """Monte Carlo one-point reduction of the width-N RRS loss at ``P = infinity``.

    Implements Bordelon et al. Eq. (14), (19) and (102) at ``P = infinity`` through the identity
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
    return WidthSpectrum(s=np.concatenate(ss), c=np.concatenate(cs), total=float(np.mean(omega * lam)), N=N, D=D)


def _q_and_dq(gammas: np.ndarray, s: np.ndarray, L: float) -> tuple[np.ndarray, np.ndarray]:
    """``q = (1 - g s / L)^{2L}`` and ``dq/dg`` on the grid ``gammas[:, None] * s[None, :]``."""
    g = gammas[:, None]
    if np.isinf(L):
        q = np.exp(-2.0 * g * s[None, :])
        return q, -2.0 * s[None, :] * q
    Li = int(L)
    u = 1.0 - g * s[None, :] / Li
    return u ** (2 * Li), -2.0 * s[None, :] * u ** (2 * Li - 1)


def width_loss(gammas: np.ndarray | float, spec: WidthSpectrum, L: int | float) -> np.ndarray:
    """Population loss ``L(gamma) = tr[Omega Lambda (I - gamma K / L)^{2L}]`` of the width-N model.

    Bordelon et al. Eq. (15)/(102) at ``P = infinity`` (tied layers, Eq. 19 with ``gamma^l = gamma``).
    ``L = numpy.inf`` gives the infinite-depth limit ``exp(-2 gamma K)``.

    Returns
    -------
    numpy.ndarray of the shape of ``gammas`` (0-d for a scalar).
    """
    Lf = float(check_depth(L, allow_inf=True))
    g, scalar = nonnegative_grid(gammas, "gammas")
    q, _ = _q_and_dq(g, spec.s, Lf)
    out = spec.null_loss + q @ spec.c
    return out[0] if scalar else out


def width_loss_draws(gammas: np.ndarray | float, spec: WidthSpectrum, L: int | float) -> np.ndarray:
    """:func:`width_loss` of each pooled projection on its own: shape ``(n_draws,) + shape(gammas)``.

    The pooled loss is linear in the spectral weights, so the mean over draws equals
    :func:`width_loss` exactly, and the spread over draws gives its Monte Carlo standard error
    (:func:`iclcore.stats.standard_error` along axis 0) at fixed ``gamma``.
    """
    Lf = float(check_depth(L, allow_inf=True))
    g, scalar = nonnegative_grid(gammas, "gammas")
    k = spec.n_draws
    s, c = spec.s.reshape(k, spec.N), spec.c.reshape(k, spec.N) * k
    out = np.stack([spec.total - c[j].sum() + _q_and_dq(g, s[j], Lf)[0] @ c[j] for j in range(k)])
    return out[:, 0] if scalar else out


def width_loss_se(gamma: float, spec: WidthSpectrum, L: int | float) -> float:
    """Monte Carlo standard error of :func:`width_loss` at a fixed ``gamma``: the spread of the
    per-projection losses (:func:`width_loss_draws`) over ``sqrt(n_draws)``; ``0`` for a single
    projection (``N = D``: ``K = Lambda`` exactly, nothing is random)."""
    if spec.n_draws == 1:
        if spec.N != spec.D:
            raise ValueError("spec: a standard error needs n_draws >= 2 projections (N < D)")
        return 0.0
    return float(standard_error(width_loss_draws(float(gamma), spec, L)))


def width_loss_grad(gammas: np.ndarray | float, spec: WidthSpectrum, L: int | float) -> np.ndarray:
    """``d L / d gamma`` of :func:`width_loss` (analytic)."""
    Lf = float(check_depth(L, allow_inf=True))
    g, scalar = nonnegative_grid(gammas, "gammas")
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
    spec: WidthSpectrum, L: int | float, t: np.ndarray, *, gamma0: float = 0.0, rtol: float = 1e-9
) -> GradientFlow:
    """Gradient flow of the width-N model on its one-dimensional landscape.

    Implements Bordelon et al. Eq. (13) generalised to width N (Result 7): ``d gamma/dt = -(1/2)
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

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [float(gamma0)], t_eval=t, method="LSODA", jac=jac, rtol=rtol, atol=1e-12)
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
    *,
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
    g, _ = nonnegative_grid(gammas, "gammas")
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
# Inner tasks (iclcore.parallel.map_configs): spectra from a shared generator, SGD of the width model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WidthSpectrumJob:
    """One call of :func:`width_spectrum_mc` with the state its generator starts from.

    Attributes
    ----------
    lam, omega : tuples ``(D,)``, the spectra
    N : int, width; n_draws : int, projections pooled
    state : dict, ``numpy.random.Generator.bit_generator.state`` before the call's draws
    """

    lam: tuple[float, ...]
    omega: tuple[float, ...]
    N: int
    n_draws: int
    state: dict


def width_spectrum_jobs(
    lam: np.ndarray, omega: np.ndarray, Ns: list[int], *, n_draws: list[int], rng: np.random.Generator
) -> list[WidthSpectrumJob]:
    """Jobs that compute ``width_spectrum_mc(lam, omega, N, rng=rng, n_draws=k)`` for ``(N, k)`` in turn, one generator shared.

    Each job records the generator's state before its draws; ``rng`` is then advanced past them
    (``k`` Gaussian ``(D, N)`` matrices, the draws of :func:`iclcore.linalg.haar_orthogonal`, without
    the QR and the eigendecomposition). So ``[width_spectrum_job(j) for j in jobs]`` equals the
    sequential calls bit for bit and leaves ``rng`` where they leave it, while the jobs themselves
    are independent.

    Parameters
    ----------
    lam, omega : array, shape ``(D,)``
    Ns : list of int, widths ``1 <= N <= D``, ``(n,)``
    n_draws : list of int, projections pooled per width, ``(n,)``
    rng : numpy.random.Generator, advanced in place

    Returns
    -------
    list of WidthSpectrumJob, ``(n,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    if len(Ns) != len(n_draws):
        raise ValueError(f"n_draws: expected one count per width ({len(Ns)}), got {len(n_draws)}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    jobs = []
    for N, k in zip(Ns, n_draws):
        N, k = positive_int(N, "Ns"), positive_int(k, "n_draws")
        if N > D:
            raise ValueError(f"Ns: width must be <= D={D}, got {N}")
        state = rng.bit_generator.state
        for _ in range(k):
            rng.standard_normal((D, N))
        jobs.append(WidthSpectrumJob(tuple(lam.tolist()), tuple(omega.tolist()), N, k, state))
    return jobs


def width_spectrum_job(job: WidthSpectrumJob) -> WidthSpectrum:
    """:func:`width_spectrum_mc` of ``job`` from its recorded generator state (``n_draws * N`` weights).

    A pure function of ``job``: a task of :func:`iclcore.parallel.map_configs`.
    """
    if not isinstance(job, WidthSpectrumJob):
        raise TypeError(f"job: expected a WidthSpectrumJob, got {type(job).__name__}")
    return width_spectrum_mc(
        np.array(job.lam), np.array(job.omega), job.N, rng=_generator_at(job.state), n_draws=job.n_draws
    )


def _generator_at(state: dict) -> np.random.Generator:
    """A generator whose bit generator (named in ``state``) is at ``state``."""
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    return np.random.Generator(bit_generator)


@dataclass(frozen=True)
class WidthLandscapeJob:
    """One call of :func:`width_landscape_mc` with the state its generator starts from.

    Attributes
    ----------
    gammas : tuple ``(G,)``; lam, omega : tuples ``(D,)``; N : int, width; L : int, depth
    P : int or None, context length; n_draws : int
    state : dict, ``numpy.random.Generator.bit_generator.state`` before the call's draws
    """

    gammas: tuple[float, ...]
    lam: tuple[float, ...]
    omega: tuple[float, ...]
    N: int
    L: int
    P: int | None
    n_draws: int
    state: dict


def width_landscape_jobs(
    gammas: np.ndarray,
    lam: np.ndarray,
    omega: np.ndarray,
    *,
    N: int,
    L: int,
    rng: np.random.Generator,
    P: int | None = None,
    n_draws: int = 8,
    repeats: int = 1,
) -> list[WidthLandscapeJob]:
    """Jobs that compute ``width_landscape_mc(gammas, lam, omega, N=N, L=L, rng=rng, P=P, n_draws=n_draws)`` ``repeats`` times in turn.

    As :func:`width_spectrum_jobs`: each job records the generator's state before its draws and
    ``rng`` is advanced past them (per draw a Gaussian ``(D, N)`` frame if ``N < D``, then a Gaussian
    ``(P, D)`` context if ``P`` is given), so the jobs equal the sequential calls bit for bit and
    leave ``rng`` where they leave it.

    Returns
    -------
    list of WidthLandscapeJob, ``(repeats,)``
    """
    lam, omega = spectrum_pair(lam, omega)
    D = lam.size
    N, n_draws, repeats = positive_int(N, "N"), positive_int(n_draws, "n_draws"), positive_int(repeats, "repeats")
    if N > D:
        raise ValueError(f"N: width must be <= D={D}, got {N}")
    if P is not None:
        P = positive_int(P, "P")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    g, _ = nonnegative_grid(gammas, "gammas")
    jobs = []
    for _ in range(repeats):
        state = rng.bit_generator.state
        for _ in range(n_draws):
            if N < D:
                rng.standard_normal((D, N))
            if P is not None:
                rng.standard_normal((P, D))
        jobs.append(
            WidthLandscapeJob(tuple(g.tolist()), tuple(lam.tolist()), tuple(omega.tolist()), N, L, P, n_draws, state)
        )
    return jobs


def width_landscape_job(job: WidthLandscapeJob) -> tuple[np.ndarray, np.ndarray]:
    """:func:`width_landscape_mc` of ``job`` from its recorded generator state: loss and derivative, ``(G,)`` each.

    A pure function of ``job``: a task of :func:`iclcore.parallel.map_configs`.
    """
    if not isinstance(job, WidthLandscapeJob):
        raise TypeError(f"job: expected a WidthLandscapeJob, got {type(job).__name__}")
    return width_landscape_mc(
        np.array(job.gammas),
        np.array(job.lam),
        np.array(job.omega),
        N=job.N,
        L=job.L,
        rng=_generator_at(job.state),
        P=job.P,
        n_draws=job.n_draws,
    )


@dataclass(frozen=True)
class WidthSGDRun:
    """One online-SGD run of the tied width-``N`` reduced model on population RRS contexts, with its theory.

    Attributes
    ----------
    lam, omega : tuples ``(D,)``, the spectra; N : int, width ``<= D``; L : int, depth
    B : int, contexts per step; eta : float, theory time step (``t = η · steps``); steps : int
    frame_seed : seed of the Haar frame ``U`` (``D x N``, drawn also at ``N = D``)
    train_seed : seed of the torch generator of the batches
    theory_seed, theory_draws : seed and number of projections of the theory's spectrum
    device : str, the torch device the SGD runs on
    """

    lam: tuple[float, ...]
    omega: tuple[float, ...]
    N: int
    L: int
    B: int
    eta: float
    steps: int
    frame_seed: int
    train_seed: int
    theory_seed: int
    theory_draws: int = 2000
    device: str = "cpu"


def width_sgd_run(run: WidthSGDRun) -> tuple[TrainResult, GradientFlow, np.ndarray]:
    """SGD of :class:`iclcore.models.attention.ReducedGammaStack` with frame ``U`` against the width-``N`` flow.

    The matrix update is ``Γ̃ ← Γ̃ - η (N/2) ∇L̂`` (learning rate ``η N / 2``), so that theory time is
    ``t = η · steps`` (Bordelon et al. §4, Fig. 5d). Returns the
    :class:`iclcore.models.attention.TrainResult` (``loss (steps,)``, ``gamma (steps + 1, 1)``), the
    gradient flow of the width model at ``t = η k``, ``k = 0..steps`` (spectrum of ``theory_draws``
    projections) and the same expected dynamics in the SGD's discrete steps, ``γ ← γ - (η/2) L'(γ)``,
    shape ``(steps + 1,)``. A pure function of ``run``: a task of :func:`iclcore.parallel.map_configs`.
    """
    import torch  # here, not at the top: the rest of this module is numpy Monte Carlo used without torch

    from iclcore.dmft.scaling import scalar_descent_path
    from iclcore.models.attention import ReducedGammaStack, sample_rrs_contexts, train

    if not isinstance(run, WidthSGDRun):
        raise TypeError(f"run: expected a WidthSGDRun, got {type(run).__name__}")
    lam, omega = spectrum_pair(np.array(run.lam), np.array(run.omega))
    D = lam.size
    U = haar_columns(D, run.N, np.random.default_rng(run.frame_seed))
    model = ReducedGammaStack(D, run.L, tied=True, frame=torch.as_tensor(U))
    res = train(
        model,
        lambda g: sample_rrs_contexts(run.B, 1, 1, lam=lam, omega=omega, gen=g),
        run.steps,
        lr=run.eta * run.N / 2,
        gen=torch.Generator().manual_seed(run.train_seed),
        population=True,
        device=run.device,
    )
    spec = width_spectrum_mc(lam, omega, run.N, rng=np.random.default_rng(run.theory_seed), n_draws=run.theory_draws)
    th = width_gradient_flow(spec, run.L, run.eta * np.arange(run.steps + 1))
    g_disc = scalar_descent_path(lambda g: width_loss_grad(g, spec, run.L), 0.5 * run.eta, run.steps)
    return res, th, g_disc
