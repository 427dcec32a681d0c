"""Reduced-Γ SGD simulation (Bordelon et al. §2.2 Eq. 4, App. B.2 Eqs. 54–55, App. C.1 Eq. 62)
and the Monte Carlo population loss of a fixed ``Γ``. Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from iclcore.dmft.fs import fs_loss_curve, fs_mode_flow
from iclcore.dmft.iso import iso_flow_reach_time, iso_gradient_flow, iso_optimum_closed_form, iso_optimum_finite_d_mc
from iclcore.dmft.rrs import rrs_gradient_flow
from iclcore.dmft.shallow_sgd import ShallowSGDTheory, shallow_sgd_theory
from iclcore.linalg import haar_orthogonal
from iclcore.models.probes import block_average, trailing_average
from iclcore.stats import fit_power_law_weighted, standard_error
from iclcore.validation import (
    as_generator,
    check_depth,
    nonnegative_float,
    positive_int,
    spectrum_pair,
)

__all__ = [
    "ReducedGammaSGDConfig",
    "ReducedGammaSGDResult",
    "simulate_reduced_gamma_sgd",
    "reduced_gamma_loss_mc",
    "ShallowISORuns",
    "shallow_iso_sgd_runs",
    "flow_deviation_at_checkpoints",
    "PlateauComparison",
    "plateau_comparison",
    "IsoSGDRun",
    "IsoSGDGrid",
    "iso_sgd_grid",
    "ShallowSGDComparison",
    "shallow_sgd_comparison",
    "ShallowSGDSweep",
    "shallow_sgd_sweep",
    "PlateauGapScaling",
    "plateau_gap_size_scaling",
    "block_mean_relative_deviation",
    "FSSGDComparison",
    "fs_sgd_comparison",
    "RRSSGDComparison",
    "rrs_sgd_comparison",
]


# --------------------------------------------------------------------------------------------------
# Reduced-Γ SGD simulation (Bordelon et al. §2.2 Eq. 4, App. B.2 Eqs. 54–55, App. C.1 Eq. 62)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReducedGammaSGDConfig:
    """Configuration of the reduced-Γ online SGD simulation.

    Attributes
    ----------
    setting : ``"iso"`` (Eq. 5), ``"fs"`` (fixed Σ = diag(lam), Ω = diag(omega)) or ``"rrs"`` (Eq. 12)
    D : input dimension
    L : depth (tied layers)
    B : contexts per step (``τ = B/D``)
    eta : step size (float) or schedule (1-D array of length ``steps``); theory time ``t = Σ η``
    steps : number of SGD steps
    P : context length (``α = P/D``); ``None`` = population context ``Σ̂ = Σ_c``, ``c = Σ_c b_*``
    K : evaluation points per context (``κ = K/D``); ``None`` = population test loss
    sigma : label noise on the ``P`` context labels
    test_label_noise : add noise ``σ`` to the ``K`` evaluation labels too (Eq. 62 omits it)
    lam, omega : spectra for ``"fs"``/``"rrs"`` (ignored for ``"iso"``)
    record_every : keep ``diag Γ`` every this many steps
    """

    setting: str
    D: int
    L: int
    B: int
    eta: float | np.ndarray
    steps: int
    P: int | None = None
    K: int | None = None
    sigma: float = 0.0
    test_label_noise: bool = False
    lam: np.ndarray | None = field(default=None, repr=False)
    omega: np.ndarray | None = field(default=None, repr=False)
    record_every: int = 1


@dataclass(frozen=True)
class ReducedGammaSGDResult:
    """Output of :func:`simulate_reduced_gamma_sgd`.

    Attributes
    ----------
    t : theory time after each step, ``cumsum(η)``, shape ``(steps,)``
    batch_loss : mean loss of the batch used at each step (fresh contexts, so an unbiased estimate of
        the population loss of the Γ *before* that step's update), shape ``(steps,)``
    t_loss : theory time at which ``batch_loss`` is evaluated, ``t - η`` (shape ``(steps,)``)
    gamma_mean : ``tr Γ`` after each step, shape ``(steps,)``
    gamma_sq_mean : ``tr ΓᵀΓ`` after each step, shape ``(steps,)``; the parameter error is
        ``gamma_sq_mean - 2 gamma_mean + 1`` = ``(1/D)|Γ - I|²``
    record_t : times of the snapshots, shape ``(R,)``
    gamma_diag : ``diag Γ`` snapshots, shape ``(R, D)``
    Gamma : final ``Γ``, shape ``(D, D)``
    """

    t: np.ndarray
    batch_loss: np.ndarray
    t_loss: np.ndarray
    gamma_mean: np.ndarray
    gamma_sq_mean: np.ndarray
    record_t: np.ndarray
    gamma_diag: np.ndarray
    Gamma: np.ndarray


def _check_config(cfg: ReducedGammaSGDConfig) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    if not isinstance(cfg, ReducedGammaSGDConfig):
        raise TypeError("cfg: expected a ReducedGammaSGDConfig")
    if cfg.setting not in ("iso", "fs", "rrs"):
        raise ValueError(f"setting: unknown setting {cfg.setting!r}; expected 'iso', 'fs' or 'rrs'")
    positive_int(cfg.D, "D")
    float(check_depth(cfg.L))
    positive_int(cfg.B, "B")
    positive_int(cfg.steps, "steps")
    positive_int(cfg.record_every, "record_every")
    if cfg.P is not None:
        positive_int(cfg.P, "P")
    if cfg.K is not None:
        positive_int(cfg.K, "K")
    nonnegative_float(cfg.sigma, "sigma")
    eta = np.asarray(cfg.eta, dtype=float)
    if eta.ndim == 0:
        eta = np.full(cfg.steps, float(eta))
    if eta.shape != (cfg.steps,) or not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"eta: expected a positive float or a positive array of length steps = {cfg.steps}")
    lam = omega = None
    if cfg.setting in ("fs", "rrs"):
        if cfg.lam is None or cfg.omega is None:
            raise ValueError(f"lam: setting {cfg.setting!r} needs lam and omega spectra")
        lam, omega = spectrum_pair(cfg.lam, cfg.omega)
        if lam.size != cfg.D:
            raise ValueError(f"lam: expected length D = {cfg.D}, got {lam.size}")
    return eta, lam, omega


def _bmv(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product ``A[b] @ v[b]``: ``(B, m, n), (B, n) -> (B, m)``."""
    return np.matmul(A, v[..., None])[..., 0]


def _sample_batch(cfg: ReducedGammaSGDConfig, lam, omega, rng: np.random.Generator):
    """One batch: Σ̂ (B,D,D), c (B,D), test form S (B,D,D) or None (identity), b_* (B,D), r (B,D), s0 (B,)."""
    B, D = cfg.B, cfg.D
    if cfg.setting == "iso":
        sqrt_lam = np.ones(D)
        sqrt_om = np.ones(D)
    else:
        sqrt_lam = np.sqrt(lam)
        sqrt_om = np.sqrt(omega)
    O = haar_orthogonal(D, rng, size=B) if cfg.setting == "rrs" else None
    g = rng.standard_normal((B, D)) * sqrt_om / math.sqrt(D)
    bstar = _bmv(O, g) if O is not None else g

    def draw_x(n):  # rows x = O Λ^{1/2} z
        Z = rng.standard_normal((B, n, D)) * sqrt_lam
        return np.matmul(Z, O.transpose(0, 2, 1)) if O is not None else Z

    if cfg.P is None:  # population context
        if O is not None:
            Sig = np.matmul(O * lam, O.transpose(0, 2, 1))
        else:
            Sig = np.broadcast_to(np.diag(sqrt_lam**2), (B, D, D))
        Shat = Sig
        c = _bmv(Sig, bstar)
    else:
        X = draw_x(cfg.P)
        y = _bmv(X, bstar) + cfg.sigma * rng.standard_normal((B, cfg.P))
        Shat = np.matmul(X.transpose(0, 2, 1), X) / cfg.P
        c = _bmv(X.transpose(0, 2, 1), y) / cfg.P
        Sig = None
    if cfg.K is None:
        if cfg.setting == "iso":
            S = None
        elif Sig is not None:
            S = Sig
        else:
            S = np.matmul(O * lam, O.transpose(0, 2, 1)) if O is not None else np.broadcast_to(np.diag(lam), (B, D, D))
        r = np.zeros((B, D))
        s0 = np.full(B, cfg.sigma**2 if cfg.test_label_noise else 0.0)
    else:
        Xs = draw_x(cfg.K)
        S = np.matmul(Xs.transpose(0, 2, 1), Xs) / cfg.K
        if cfg.test_label_noise and cfg.sigma > 0:
            eps = cfg.sigma * rng.standard_normal((B, cfg.K))
            r = _bmv(Xs.transpose(0, 2, 1), eps) / cfg.K
            s0 = np.mean(eps**2, axis=1)
        else:
            r = np.zeros((B, D))
            s0 = np.zeros(B)
    return Shat, c, S, bstar, r, s0


def _forward_backward(Gamma, Shat, c, S, bstar, r, s0, L: int):
    """Per-context losses (B,) and the gradient of their mean w.r.t. Γ (manual backprop through Eq. 54)."""
    B, D = c.shape
    b = np.zeros((B, D))
    gs = []
    for _ in range(L):
        g = c - _bmv(Shat, b)
        gs.append(g)
        b = b + g @ Gamma.T / L
    err = b - bstar
    Serr = err if S is None else _bmv(S, err)
    loss = np.einsum("bi,bi->b", err, Serr) - 2.0 * np.einsum("bi,bi->b", r, err) + s0
    adj = 2.0 * (Serr - r)  # ∂loss/∂b_L
    grad = np.zeros_like(Gamma)
    for ell in range(L - 1, -1, -1):
        grad += adj.T @ gs[ell] / L
        if ell > 0:
            adj = adj - _bmv(Shat, adj @ Gamma) / L
    return loss, grad / B


def simulate_reduced_gamma_sgd(
    cfg: ReducedGammaSGDConfig, rng: np.random.Generator, Gamma0: np.ndarray | None = None
) -> ReducedGammaSGDResult:
    """Online SGD on the reduced-Γ model (Bordelon et al. Eq. 4 / Eq. 55), fresh contexts at every step.

    Each step draws ``B`` contexts of the configured setting, runs ``L`` steps of in-context
    preconditioned GD (Eq. 54) and updates ``Γ ← Γ + η G`` with ``G = -(D/2) ∇_Γ`` of the mean batch
    loss (the ``G`` of Eq. 62 for ``L = 1``; its mean is ``I - a₀Γ``). Theory time is ``t = Σ η``,
    to be compared with the flows ``dγ/dt = -½ L'(γ)`` (:func:`~iclcore.dmft.iso.iso_gradient_flow`,
    :func:`~iclcore.dmft.rrs.rrs_gradient_flow`, :func:`~iclcore.dmft.fs.fs_mode_flow`).

    Parameters
    ----------
    cfg : ReducedGammaSGDConfig
    rng : numpy.random.Generator
    Gamma0 : optional initial ``Γ`` (default 0), shape ``(D, D)``

    Raises
    ------
    ValueError
        on bad configuration, or if the iterates blow up (step size too large).
    """
    eta, lam, omega = _check_config(cfg)
    rng = as_generator(rng)
    D, L = cfg.D, int(cfg.L)
    Gamma = np.zeros((D, D)) if Gamma0 is None else np.array(Gamma0, dtype=float)
    if Gamma.shape != (D, D):
        raise ValueError(f"Gamma0: expected shape {(D, D)}, got {Gamma.shape}")
    losses = np.empty(cfg.steps)
    gmean = np.empty(cfg.steps)
    gsq = np.empty(cfg.steps)
    rec_t, rec_d = [], []
    t = np.cumsum(eta)
    for s in range(cfg.steps):
        Shat, c, S, bstar, r, s0 = _sample_batch(cfg, lam, omega, rng)
        loss, grad = _forward_backward(Gamma, Shat, c, S, bstar, r, s0, L)
        Gamma = Gamma - eta[s] * (D / 2.0) * grad
        if not np.all(np.isfinite(Gamma)) or np.abs(Gamma).max() > 1e8:
            raise ValueError(f"eta: SGD diverged at step {s} (step size too large for this setting)")
        losses[s] = loss.mean()
        gmean[s] = np.trace(Gamma) / D
        gsq[s] = np.sum(Gamma**2) / D
        if (s + 1) % cfg.record_every == 0:
            rec_t.append(t[s])
            rec_d.append(np.diag(Gamma).copy())
    return ReducedGammaSGDResult(
        t=t,
        batch_loss=losses,
        t_loss=t - eta,
        gamma_mean=gmean,
        gamma_sq_mean=gsq,
        record_t=np.array(rec_t),
        gamma_diag=np.array(rec_d).reshape(len(rec_t), D),
        Gamma=Gamma,
    )


def reduced_gamma_loss_mc(
    Gamma: np.ndarray, cfg: ReducedGammaSGDConfig, rng: np.random.Generator, *, n_contexts: int = 2000, chunk: int = 250
) -> tuple[float, float]:
    """Population ICL loss of a fixed ``Γ`` by Monte Carlo over ``n_contexts`` fresh contexts.

    Uses the setting, ``D``, ``L``, ``P``, ``σ`` of ``cfg`` with a population test loss
    (``K = None``, irreducible ``σ²`` included). Returns ``(mean, standard error)``.
    """
    import dataclasses

    n_contexts = positive_int(n_contexts, "n_contexts", minimum=2)  # a standard error needs two draws
    chunk = positive_int(chunk, "chunk")
    rng = as_generator(rng)
    ev_cfg = dataclasses.replace(cfg, K=None, test_label_noise=True, B=min(chunk, n_contexts), steps=1, eta=1.0)
    _, lam, omega = _check_config(ev_cfg)
    Gamma = np.asarray(Gamma, dtype=float)
    if Gamma.shape != (cfg.D, cfg.D):
        raise ValueError(f"Gamma: expected shape {(cfg.D, cfg.D)}, got {Gamma.shape}")
    vals = []
    done = 0
    while done < n_contexts:
        Shat, c, S, bstar, r, s0 = _sample_batch(ev_cfg, lam, omega, rng)
        loss, _ = _forward_backward(Gamma, Shat, c, S, bstar, r, s0, int(cfg.L))
        vals.append(loss)
        done += loss.size
    v = np.concatenate(vals)[:n_contexts]
    return float(v.mean()), float(standard_error(v))


@dataclass(frozen=True)
class ShallowISORuns:
    """Independent depth-1 ISO SGD runs (:func:`shallow_iso_sgd_runs`), one row per seed.

    Attributes
    ----------
    param_error : ndarray, shape (seeds, steps)
        ``(1/D)|Γ − I|² = tr ΓᵀΓ − 2 tr Γ + 1`` after each step.
    batch_loss : ndarray, shape (seeds, steps)
        The mean loss of each step's batch (evaluated at the ``Γ`` before the step).
    """

    param_error: np.ndarray
    batch_loss: np.ndarray


def shallow_iso_sgd_runs(
    D: int, alpha: float, kappa: float, *, tau: float, eta: float, steps: int, seeds: int, rng: np.random.Generator
) -> ShallowISORuns:
    """``seeds`` independent depth-1 ISO SGD runs at ``P = αD``, ``K = κD``, ``B = τD`` (Bordelon et al. App. C.1, Fig. 7).

    Each run is :func:`simulate_reduced_gamma_sgd` from ``Γ = 0`` with the sizes rounded to integers
    ``>= 1``; the runs draw from ``rng`` one after the other.

    Parameters
    ----------
    D : int
    alpha, kappa, tau : float
        Context length, evaluation points and batch size per dimension.
    eta : float
    steps, seeds : int

    Returns
    -------
    ShallowISORuns
    """
    P, K, B = (max(1, int(round(v * D))) for v in (alpha, kappa, tau))
    cfg = ReducedGammaSGDConfig("iso", D=D, L=1, B=B, eta=eta, steps=steps, P=P, K=K)
    pe, lo = [], []
    for _ in range(positive_int(seeds, "seeds")):
        res = simulate_reduced_gamma_sgd(cfg, rng)
        pe.append(res.gamma_sq_mean - 2 * res.gamma_mean + 1)
        lo.append(res.batch_loss)
    return ShallowISORuns(np.array(pe), np.array(lo))


def flow_deviation_at_checkpoints(
    batch_loss: np.ndarray,
    loss_theory: np.ndarray,
    gamma: np.ndarray,
    *,
    gamma_theory: np.ndarray,
    checkpoints: list[int],
    window: int = 5,
) -> tuple[float, float]:
    """Largest relative deviations of one SGD run from its gradient flow at checkpoint steps (Fig. 1).

    The loss: the causal running mean of the batch losses over ``window`` steps against the mean of the
    theory loss over the same steps (both at the ``Γ`` the batches were evaluated at); ``γ``: the run's
    ``tr Γ`` against the flow at the same step.

    Parameters
    ----------
    batch_loss, loss_theory : ndarray, shape (steps,)
        The run's batch losses and the flow's loss at the same times (``t_loss``).
    gamma, gamma_theory : ndarray, shape (steps,)
        ``tr Γ`` after each step and the flow at the same times.
    checkpoints : list of int
        Step indices.
    window : int
        Smoothing window.

    Returns
    -------
    (loss_deviation, gamma_deviation) : floats
        ``max_i |smoothed_i − ref_i| / ref_i`` and ``max_i |γ_i − γ_th,i| / γ_th,i`` (0 for no checkpoint).
    """
    window = positive_int(window, "window")
    sm = trailing_average(batch_loss, window)
    dev_loss, dev_gamma = 0.0, 0.0
    for i in checkpoints:
        ref = np.mean(loss_theory[max(0, i - window + 1) : i + 1])
        dev_loss = max(dev_loss, abs(sm[i] - ref) / ref)
        dev_gamma = max(dev_gamma, abs(gamma[i] - gamma_theory[i]) / gamma_theory[i])
    return float(dev_loss), float(dev_gamma)


@dataclass(frozen=True)
class PlateauComparison:
    """The late plateau of a seed-averaged series against a theory (:func:`plateau_comparison`).

    Attributes
    ----------
    deviation, deviation_finite_d : float
        ``|level − theory level| / theory level`` against the asymptotic and the finite-``D`` theory.
    se : float
        Standard error over seeds of the per-seed plateau.
    excess_z : float
        ``(|level − theory| − |finite-D theory − theory|) / se``: the difference beyond the finite-``D``
        correction (the discretisation term of the error model) in standard errors.
    """

    deviation: float
    deviation_finite_d: float
    se: float
    excess_z: float


def plateau_comparison(
    seeds: np.ndarray, theory: np.ndarray, theory_finite_d: np.ndarray, *, start: int = 19
) -> PlateauComparison:
    """Plateau (mean over steps ``>= start``) of independent seeds against the asymptotic and finite-``D`` theory (Fig. 7).

    Parameters
    ----------
    seeds : ndarray, shape (R, T)
        ``R >= 2`` independent runs (e.g. the parameter error ``(1/D)|Γ − I|²`` per step).
    theory, theory_finite_d : ndarray, shape (T,)
        The ``D → ∞`` theory and the same with the exact finite-``D`` moments.
    start : int
        First step of the plateau window.

    Returns
    -------
    PlateauComparison
    """
    start = positive_int(start, "start", minimum=0)
    mean = np.mean(seeds, axis=0)
    lvl = lambda x: float(np.mean(x[start:]))  # noqa: E731
    se = float(standard_error(seeds[:, start:].mean(axis=1)))
    excess = abs(lvl(mean) - lvl(theory)) - abs(lvl(theory_finite_d) - lvl(theory))
    return PlateauComparison(
        abs(lvl(mean) - lvl(theory)) / lvl(theory),
        abs(lvl(mean) - lvl(theory_finite_d)) / lvl(theory_finite_d),
        se,
        excess / se,
    )


# --------------------------------------------------------------------------------------------------
# SGD against gradient-flow theory: the ISO grid of Fig. 1, depth-1 SGD of Fig. 7 (App. C.1)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IsoSGDRun:
    """One ISO SGD run of :func:`iso_sgd_grid` with its theory.

    Attributes
    ----------
    result : ReducedGammaSGDResult
    gamma_theory, loss_theory : ndarray, shape (steps,)
        The gradient flow (Eq. 7) at the times ``result.t`` after each step.
    loss_theory_at_batches : ndarray, shape (steps,)
        The flow's loss at the times ``result.t_loss`` the batch losses refer to.
    final, final_se : float
        Population loss of the final ``Γ`` (Monte Carlo) and its standard error.
    finite_d : float
        The optimal loss at the same finite ``D`` (exact Wishart spectra, Monte Carlo).
    """

    result: ReducedGammaSGDResult
    gamma_theory: np.ndarray
    loss_theory: np.ndarray
    loss_theory_at_batches: np.ndarray
    final: float
    final_se: float
    finite_d: float


@dataclass(frozen=True)
class IsoSGDGrid:
    """ISO SGD on a grid of ``(α, L)`` against the flow and the optimum (:func:`iso_sgd_grid`, Fig. 1).

    Attributes
    ----------
    runs : dict (alpha, L) -> IsoSGDRun
    converged : dict (alpha, L) -> bool
        Whether the flow at the final time is within 5 % of the Catalan optimum.
    n_converged : int
    max_rel_dev_loss, max_rel_dev_gamma : float
        Largest relative deviation of the smoothed batch loss and of ``tr Γ`` from the flow at the
        checkpoints (:func:`flow_deviation_at_checkpoints`), over all runs.
    max_rel_dev_flow : float
        ``max |final − flow(t_end)| / flow(t_end)`` over all runs.
    max_rel_dev_catalan, max_rel_dev_finite_d : float
        ``max |final − L*| / L*`` over the converged runs, against the Catalan and the finite-``D`` optimum.
    max_excess_z : float
        ``max (|final − L*| − |L*_D − L*|) / se`` over the converged runs: the distance to the optimum
        beyond the finite-``D`` correction, in Monte Carlo standard errors.
    final_se_max, t_final : float
        Largest Monte Carlo SE of a final loss and the largest final theory time.
    t_reach_deepest_largest_alpha : float
        When the flow of the deepest model at the largest ``α`` gets within 5 % of its optimum
        (:func:`~iclcore.dmft.iso.iso_flow_reach_time` on ``geomspace(1e-2, 1e5, 400)``): deep models at
        large ``α`` converge late.
    """

    runs: dict[tuple[float, int], IsoSGDRun]
    converged: dict[tuple[float, int], bool]
    n_converged: int
    max_rel_dev_loss: float
    max_rel_dev_gamma: float
    max_rel_dev_flow: float
    max_rel_dev_catalan: float
    max_rel_dev_finite_d: float
    max_excess_z: float
    final_se_max: float
    t_final: float
    t_reach_deepest_largest_alpha: float

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``, Fig. 1 and 1c)."""
        c = (
            "max_rel_dev_catalan",
            "max_rel_dev_flow",
            "n_converged",
            "max_rel_dev_finite_d",
            "max_excess_z",
            "final_se_max",
            "t_reach_deepest_largest_alpha",
        )
        return {f"fig1_{k}": getattr(self, k) for k in ("max_rel_dev_loss", "max_rel_dev_gamma", "t_final")} | {
            f"fig1c_{k}": getattr(self, k) for k in c
        }


def iso_sgd_grid(
    alphas: list[float],
    depths: list[int],
    *,
    D: int,
    steps: int,
    eta0: float,
    anneal_frac: float,
    batch_ratio: float,
    kappa: float,
    eval_contexts: int,
    mc_draws: int,
    rng: np.random.Generator,
) -> IsoSGDGrid:
    """Reduced-Γ SGD on ISO data at every ``(α, L)`` against the gradient flow and the optimum (Fig. 1).

    Each run starts at ``Γ = 0`` with ``B = τD`` contexts of length ``P = αD`` and ``K = κD``
    evaluation points per step (:func:`simulate_reduced_gamma_sgd`), step ``η = η₀/a₀`` with
    ``a₀ = 1 + 1/α`` and ``η/10`` over the last ``anneal_frac`` of the steps; theory time
    ``t = Σ η``. The flow is :func:`~iclcore.dmft.iso.iso_gradient_flow` (Eq. 7), the optimum the
    Catalan formula (:func:`~iclcore.dmft.iso.iso_optimum_closed_form`) and its finite-``D`` version
    (:func:`~iclcore.dmft.iso.iso_optimum_finite_d_mc`, ``mc_draws`` Wishart draws). The final
    population loss is a Monte Carlo over ``eval_contexts`` contexts. The flow is compared at the
    checkpoints 1/4, 1/2 and the end of the constant-step phase. The runs draw from ``rng`` in the
    order ``alphas`` (outer) x ``depths`` (inner); the last of each is taken as the largest.

    Returns
    -------
    IsoSGDGrid
    """
    steps = positive_int(steps, "steps")
    anneal_frac = nonnegative_float(anneal_frac, "anneal_frac")
    if anneal_frac > 1:
        raise ValueError(f"anneal_frac: expected a fraction in [0, 1], got {anneal_frac!r}")
    B = max(1, int(round(batch_ratio * D)))
    K = max(1, int(round(kappa * D)))
    n_anneal = int(round(anneal_frac * steps))
    runs = {}
    for a in alphas:
        eta_sched = np.full(steps, eta0 / (1 + 1 / a))
        eta_sched[steps - n_anneal :] /= 10
        for L in depths:
            cfg = ReducedGammaSGDConfig("iso", D=D, L=L, B=B, eta=eta_sched, steps=steps, P=int(round(a * D)), K=K)
            res = simulate_reduced_gamma_sgd(cfg, rng)
            g_th, l_th = iso_gradient_flow(np.concatenate([[0.0], res.t]), a, L)
            l_th_loss = iso_gradient_flow(res.t_loss, a, L)[1]
            final, final_se = reduced_gamma_loss_mc(res.Gamma, cfg, rng, n_contexts=eval_contexts)
            finite_d = iso_optimum_finite_d_mc(a, L, D, rng=rng, draws=mc_draws)[1]
            runs[(a, L)] = IsoSGDRun(res, g_th[1:], l_th[1:], l_th_loss, final, final_se, finite_d)
    n_const = steps - n_anneal
    checkpoints = [n_const // 4, n_const // 2, n_const - 1]
    devs = [
        flow_deviation_at_checkpoints(
            r.result.batch_loss,
            r.loss_theory_at_batches,
            r.result.gamma_mean,
            gamma_theory=r.gamma_theory,
            checkpoints=checkpoints,
        )
        for r in runs.values()
    ]
    opt = {k: iso_optimum_closed_form(*k)[1] for k in runs}
    converged = {k: r.loss_theory[-1] < 1.05 * opt[k] for k, r in runs.items()}
    conv = [(k, r) for k, r in runs.items() if converged[k]]
    if not conv:
        raise ValueError("steps: no run's flow reaches within 5 % of its optimum; run longer")
    excess_z = [(abs(r.final - opt[k]) - abs(r.finite_d - opt[k])) / r.final_se for k, r in conv]
    return IsoSGDGrid(
        runs=runs,
        converged=converged,
        n_converged=sum(converged.values()),
        max_rel_dev_loss=max(d[0] for d in devs),
        max_rel_dev_gamma=max(d[1] for d in devs),
        max_rel_dev_flow=max(abs(r.final - r.loss_theory[-1]) / r.loss_theory[-1] for r in runs.values()),
        max_rel_dev_catalan=max(abs(r.final - opt[k]) / opt[k] for k, r in conv),
        max_rel_dev_finite_d=max(abs(r.final - r.finite_d) / r.finite_d for k, r in conv),
        max_excess_z=float(max(excess_z)),
        final_se_max=float(max(r.final_se for r in runs.values())),
        t_final=float(max(r.result.t[-1] for r in runs.values())),
        t_reach_deepest_largest_alpha=iso_flow_reach_time(alphas[-1], depths[-1], np.geomspace(1e-2, 1e5, 400)),
    )


@dataclass(frozen=True)
class ShallowSGDComparison:
    """Depth-1 ISO SGD over seeds against the theory of App. C.1 (:func:`shallow_sgd_comparison`).

    Attributes
    ----------
    alpha, kappa, tau : float
        The setting.
    theory, theory_finite_d, theory_printed : ShallowSGDTheory
        The corrected theory (``C(0) = a₀⁻²``), the same with finite-``D`` Wishart moments, and the
        printed Eqs. 78–79 (``C(0) = 1``).
    param_error_seeds : ndarray, shape (R, T)
        ``(1/D)|Γ − I|²`` per seed and step.
    param_error, batch_loss : ndarray, shape (T,)
        Seed means of the parameter error and of the batch loss.
    loss_theory, loss_theory_finite_d : ndarray, shape (T,)
        The theory's ICL loss one step earlier (the batch loss of step ``s`` is evaluated at ``Γ(s−1)``).
    plateau : PlateauComparison
        The plateau of the parameter error against both theories.
    loss_plateau, loss_plateau_deviation : float
        The plateau of the seed-mean batch loss and its relative deviation from the theory's.
    early_dev_corrected, early_dev_printed : float
        Largest relative deviation of the seed-mean parameter error over the first ``early`` steps from
        the corrected and from the printed theory.
    early : int
        The number of early steps checked.
    early_sim, early_corrected, early_printed, early_se : float
        At step ``early``: the seed mean, both theories and the standard error over seeds.
    """

    alpha: float
    kappa: float
    tau: float
    theory: ShallowSGDTheory
    theory_finite_d: ShallowSGDTheory
    theory_printed: ShallowSGDTheory
    param_error_seeds: np.ndarray
    param_error: np.ndarray
    batch_loss: np.ndarray
    loss_theory: np.ndarray
    loss_theory_finite_d: np.ndarray
    plateau: PlateauComparison
    loss_plateau: float
    loss_plateau_deviation: float
    early_dev_corrected: float
    early_dev_printed: float
    early: int
    early_sim: float
    early_corrected: float
    early_printed: float
    early_se: float


def shallow_sgd_comparison(
    alpha: float,
    kappa: float,
    tau: float,
    *,
    D: int,
    steps: int,
    eta: float,
    seeds: int,
    rng: np.random.Generator,
    start: int = 19,
    early: int = 5,
) -> ShallowSGDComparison:
    """Depth-1 SGD at ``P = αD``, ``K = κD``, ``B = τD`` against Result 10's theory (App. C.1, Eqs. 72–79, Fig. 7).

    ``seeds`` runs of :func:`shallow_iso_sgd_runs` (``steps`` steps of size ``eta``) against
    :func:`~iclcore.dmft.shallow_sgd.shallow_sgd_theory` at steps ``1..steps``: the plateau (mean over
    steps ``>= start``) of the parameter error by :func:`plateau_comparison`, the plateau of the loss,
    and the first ``early`` steps, where the printed initial condition ``C(0) = 1`` and the corrected
    ``C(0) = a₀⁻²`` differ.

    Returns
    -------
    ShallowSGDComparison
    """
    early = positive_int(early, "early", maximum=positive_int(steps, "steps"))
    steps_ = np.arange(1, steps + 1)
    th = shallow_sgd_theory(steps_, eta, alpha, kappa=kappa, tau=tau)
    th_fd = shallow_sgd_theory(steps_, eta, alpha, kappa=kappa, tau=tau, D=D)
    th_paper = shallow_sgd_theory(steps_, eta, alpha, kappa=kappa, tau=tau, paper_initial_condition=True)
    runs = shallow_iso_sgd_runs(D, alpha, kappa, tau=tau, eta=eta, steps=steps, seeds=seeds, rng=rng)
    pe_seeds, lo_seeds = runs.param_error, runs.batch_loss
    pe, lo = np.mean(pe_seeds, axis=0), np.mean(lo_seeds, axis=0)
    th_loss_prev = np.concatenate([[1.0], th.icl_loss[:-1]])
    lvl = lambda x: float(np.mean(x[start:]))  # noqa: E731
    k = early - 1
    return ShallowSGDComparison(
        alpha=alpha,
        kappa=kappa,
        tau=tau,
        theory=th,
        theory_finite_d=th_fd,
        theory_printed=th_paper,
        param_error_seeds=pe_seeds,
        param_error=pe,
        batch_loss=lo,
        loss_theory=th_loss_prev,
        loss_theory_finite_d=np.concatenate([[1.0], th_fd.icl_loss[:-1]]),
        plateau=plateau_comparison(pe_seeds, th.param_error, th_fd.param_error, start=start),
        loss_plateau=lvl(lo),
        loss_plateau_deviation=abs(lvl(lo) - lvl(th_loss_prev)) / lvl(th_loss_prev),
        early_dev_corrected=np.max(np.abs(pe[:early] - th.param_error[:early]) / th.param_error[:early]),
        early_dev_printed=np.max(np.abs(pe[:early] - th_paper.param_error[:early]) / th_paper.param_error[:early]),
        early=early,
        early_sim=pe[k],
        early_corrected=th.param_error[k],
        early_printed=th_paper.param_error[k],
        early_se=float(standard_error(pe_seeds[:, k])),
    )


@dataclass(frozen=True)
class ShallowSGDSweep:
    """Depth-1 SGD swept over settings (:func:`shallow_sgd_sweep`, Fig. 7).

    Attributes
    ----------
    comparisons : dict name -> list of ShallowSGDComparison
        One list per swept parameter, in the order of the settings.
    reference : ShallowSGDComparison or None
        The comparison at the reference setting.
    max_rel_dev_param_error, max_rel_dev_param_error_finite_d : float
        Largest plateau deviation of the parameter error from the asymptotic and the finite-``D`` theory.
    max_rel_dev_loss : float
        Largest plateau deviation of the loss.
    early_dev_corrected, early_dev_printed : float
        Largest early-step deviations from the corrected and the printed theory.
    plateau_max_excess_z, plateau_se_max : float
        Largest excess z of the parameter-error plateau (beyond the finite-``D`` term) and largest SE.
    plateau_loss_max_increment : float
        Largest increase of the loss plateau between consecutive values of a swept parameter.
    """

    comparisons: dict[str, list[ShallowSGDComparison]]
    reference: ShallowSGDComparison | None
    max_rel_dev_param_error: float
    max_rel_dev_param_error_finite_d: float
    max_rel_dev_loss: float
    early_dev_corrected: float
    early_dev_printed: float
    plateau_max_excess_z: float
    plateau_se_max: float
    plateau_loss_max_increment: float

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``, Fig. 7); the early steps at the reference."""
        if self.reference is None:
            raise ValueError("reference: the sweep has no comparison at its reference setting")
        r, n = self.reference, self.reference.early
        worst = (
            "max_rel_dev_param_error",
            "max_rel_dev_param_error_finite_d",
            "max_rel_dev_loss",
            "plateau_max_excess_z",
        )
        return {f"fig7_{k}": getattr(self, k) for k in (*worst, "plateau_se_max", "plateau_loss_max_increment")} | {
            f"fig7_first{n}_rel_dev_corrected": self.early_dev_corrected,
            f"fig7_first{n}_rel_dev_printed": self.early_dev_printed,
            f"fig7_param_error_step{n}_sim": r.early_sim,
            f"fig7_param_error_step{n}_corrected": r.early_corrected,
            f"fig7_param_error_step{n}_printed": r.early_printed,
            f"fig7_param_error_step{n}_se": r.early_se,
        }


def shallow_sgd_sweep(
    settings: dict[str, list[dict[str, float]]],
    *,
    D: int,
    steps: int,
    eta: float,
    seeds: int,
    rng: np.random.Generator,
    reference: tuple[str, float] = ("tau", 1.0),
) -> ShallowSGDSweep:
    """:func:`shallow_sgd_comparison` at each setting (dicts with ``alpha``, ``kappa``, ``tau``) and the worst cases (Fig. 7).

    ``settings`` maps a swept parameter's name to its settings, in increasing order of that parameter;
    the runs draw from ``rng`` in this order. ``reference = (name, value)`` picks the comparison whose
    parameter ``name`` equals ``value``.

    Returns
    -------
    ShallowSGDSweep
    """
    comps: dict[str, list[ShallowSGDComparison]] = {}
    ref = None
    for name, lst in settings.items():
        if not lst:
            raise ValueError(f"settings: no setting for {name!r}")
        for st in lst:
            c = shallow_sgd_comparison(
                st["alpha"], st["kappa"], st["tau"], D=D, steps=steps, eta=eta, seeds=seeds, rng=rng
            )
            comps.setdefault(name, []).append(c)
            if name == reference[0] and st[name] == reference[1]:
                ref = c
    every = [c for lst in comps.values() for c in lst]
    dev_param, dev_param_fd, dev_loss, first_corr, first_paper, se_max = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for c in every:
        dev_param, dev_param_fd = max(dev_param, c.plateau.deviation), max(dev_param_fd, c.plateau.deviation_finite_d)
        dev_loss = max(dev_loss, c.loss_plateau_deviation)
        se_max = max(se_max, c.plateau.se)
        first_corr = max(first_corr, c.early_dev_corrected)
        first_paper = max(first_paper, c.early_dev_printed)
    return ShallowSGDSweep(
        comparisons=comps,
        reference=ref,
        max_rel_dev_param_error=dev_param,
        max_rel_dev_param_error_finite_d=dev_param_fd,
        max_rel_dev_loss=dev_loss,
        early_dev_corrected=first_corr,
        early_dev_printed=first_paper,
        plateau_max_excess_z=float(max(c.plateau.excess_z for c in every)),
        plateau_se_max=se_max,
        plateau_loss_max_increment=float(max(np.max(np.diff([c.loss_plateau for c in lst])) for lst in comps.values())),
    )


@dataclass(frozen=True)
class PlateauGapScaling:
    """The relative plateau gap of depth-1 SGD against ``D`` (:func:`plateau_gap_size_scaling`).

    Attributes
    ----------
    sizes : list of int
    gap, gap_se : ndarray, shape (n,)
        ``plateau(D) / plateau_theory − 1`` (seed mean) and its standard error over seeds.
    exponent, exponent_se : float
        ``q`` of the weighted fit ``gap ∝ D^q`` (:func:`iclcore.stats.fit_power_law_weighted`).
    """

    sizes: list[int]
    gap: np.ndarray
    gap_se: np.ndarray
    exponent: float
    exponent_se: float

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``, Fig. 7 against ``D``): three sizes."""
        if len(self.sizes) != 3:
            raise ValueError(f"sizes: the metrics name three sizes (D/2, D, 2D), got {self.sizes!r}")
        return {
            "fig7_gap_size_exponent": self.exponent,
            "fig7_gap_size_exponent_se": self.exponent_se,
            "fig7_gap_half_D": self.gap[0],
            "fig7_gap_double_D": self.gap[2],
            "fig7_gap_double_D_se": self.gap_se[2],
        }


def plateau_gap_size_scaling(
    sizes: list[int],
    *,
    alpha: float,
    kappa: float,
    tau: float,
    steps: int,
    eta: float,
    seeds: int,
    rng: np.random.Generator,
    start: int = 19,
) -> PlateauGapScaling:
    """Finite-size gap of the depth-1 SGD plateau to Result 10's ``D → ∞`` theory (App. C.1, Fig. 7).

    At each ``D`` in ``sizes``: ``seeds`` runs of :func:`shallow_iso_sgd_runs`; per seed the plateau
    (mean parameter error over steps ``>= start``); the relative gap of the seed mean to the plateau of
    :func:`~iclcore.dmft.shallow_sgd.shallow_sgd_theory` and its SE over seeds. The gap is fitted as
    ``∝ D^q`` weighted by the SEs.

    Returns
    -------
    PlateauGapScaling
    """
    th = shallow_sgd_theory(np.arange(1, steps + 1), eta, alpha, kappa=kappa, tau=tau)
    lvl_th = float(np.mean(th.param_error[start:]))
    gap, gap_se = [], []
    for D_k in sizes:
        runs_k = shallow_iso_sgd_runs(D_k, alpha, kappa, tau=tau, eta=eta, steps=steps, seeds=seeds, rng=rng)
        lv = [np.mean(pe_k[start:]) for pe_k in runs_k.param_error]
        gap.append(np.mean(lv) / lvl_th - 1)
        gap_se.append(float(standard_error(np.array(lv))) / lvl_th)
    gap, gap_se = np.array(gap), np.array(gap_se)
    _, q, q_se = fit_power_law_weighted(np.array(sizes, float), gap, gap_se)
    return PlateauGapScaling(list(sizes), gap, gap_se, q, q_se)


def block_mean_relative_deviation(sim: np.ndarray, theory: np.ndarray, window: int) -> float:
    """Largest relative deviation of block means of a simulated series from the theory's (Figs. 3d, 4c).

    Both series are cut to a multiple of ``window`` and averaged over consecutive blocks of ``window``
    steps; the first block (the transient) is left out: ``max_{b >= 1} |sim_b / theory_b − 1|``.

    Parameters
    ----------
    sim, theory : ndarray, shape (T,)
        ``T >= 2 window``.
    window : int

    Returns
    -------
    float
    """
    window = positive_int(window, "window")
    if sim.size // window < 2:
        raise ValueError(f"window: {window} leaves fewer than two blocks of the {sim.size} steps")
    sim_b, th_b = block_average(sim, window), block_average(theory, window)
    return float(np.max(np.abs(sim_b[1:] / th_b[1:] - 1)))


@dataclass(frozen=True)
class FSSGDComparison:
    """Reduced-Γ SGD on FS data against the closed-form flow (:func:`fs_sgd_comparison`, Fig. 3).

    Attributes
    ----------
    runs : dict L -> ReducedGammaSGDResult
    mode_flow : ndarray, shape (R, D)
        Eq. 10's ``γ_k`` at depth ``mode_depth`` at the snapshot times of that run.
    mode_deviation : float
        ``max |γ_k / γ_k^th − 1|`` over the checked modes of the ``mode_depth`` run, once the mode is
        ``learned`` (``λ_k γ_k^th > learned``; before, the relative error is noise-dominated).
    loss_deviation : float
        The largest :func:`block_mean_relative_deviation` of the batch loss from :func:`~iclcore.dmft.fs.fs_loss_curve`.
    """

    runs: dict[int, ReducedGammaSGDResult]
    mode_flow: np.ndarray
    mode_deviation: float
    loss_deviation: float


def fs_sgd_comparison(
    lam: np.ndarray,
    omega: np.ndarray,
    depths: list[int],
    *,
    steps: int,
    eta: float,
    modes: list[int],
    rng: np.random.Generator,
    mode_depth: int = 4,
    learned: float = 0.1,
    window: int = 20,
) -> FSSGDComparison:
    """SGD on the full ``Γ`` with FS data (population contexts, ``B = D``) against Eq. 10 (§3.2, App. D, Fig. 3a, d).

    One run of :func:`simulate_reduced_gamma_sgd` per depth (``steps`` steps of size ``eta``, ``diag Γ``
    kept at about 200 times), drawn from ``rng`` in the order of ``depths``; the modes ``modes``
    (1-based) of the ``mode_depth`` run against :func:`~iclcore.dmft.fs.fs_mode_flow`, and every run's
    batch loss in blocks of ``window`` steps against :func:`~iclcore.dmft.fs.fs_loss_curve`.

    Returns
    -------
    FSSGDComparison
    """
    if mode_depth not in depths:
        raise ValueError(f"mode_depth: {mode_depth!r} is not one of depths {depths!r}")
    D = lam.size
    runs = {}
    for L in depths:
        cfg = ReducedGammaSGDConfig(
            "fs", D=D, L=L, B=D, eta=eta, steps=steps, lam=lam, omega=omega, record_every=max(1, steps // 200)
        )
        runs[L] = simulate_reduced_gamma_sgd(cfg, rng)
    res = runs[mode_depth]
    th = fs_mode_flow(res.record_t, lam, omega, L=mode_depth)
    dev_gamma = 0.0
    for k in modes:
        mask = lam[k - 1] * th[:, k - 1] > learned
        if mask.any():
            dev_gamma = max(dev_gamma, float(np.max(np.abs(res.gamma_diag[mask, k - 1] / th[mask, k - 1] - 1))))
    dev_loss = 0.0
    for L, r in runs.items():
        dev_loss = max(
            dev_loss, block_mean_relative_deviation(r.batch_loss, fs_loss_curve(r.t_loss, lam, omega, L=L), window)
        )
    return FSSGDComparison(runs, th, dev_gamma, dev_loss)


@dataclass(frozen=True)
class RRSSGDComparison:
    """Reduced-Γ SGD on RRS data against the flow of Eq. 13 (:func:`rrs_sgd_comparison`, Fig. 4c).

    Attributes
    ----------
    runs : dict L -> ReducedGammaSGDResult
    loss_theory : dict L -> ndarray, shape (steps,)
        The flow's loss at the times ``t_loss`` the batch losses refer to.
    loss_deviation : float
        The largest :func:`block_mean_relative_deviation` over the depths.
    """

    runs: dict[int, ReducedGammaSGDResult]
    loss_theory: dict[int, np.ndarray]
    loss_deviation: float


def rrs_sgd_comparison(
    lam: np.ndarray,
    omega: np.ndarray,
    depths: list[int],
    *,
    steps: int,
    eta: float,
    rng: np.random.Generator,
    window: int = 20,
) -> RRSSGDComparison:
    """SGD on Haar-rotated population contexts (``B = D``) against :func:`~iclcore.dmft.rrs.rrs_gradient_flow` (§3.3, Fig. 4c).

    At depth ``L`` the step is ``eta · min(1, L/4)``: shallow models reach their plateau quickly and would
    otherwise sit on the SGD noise floor. One run per depth, drawn from ``rng`` in the order of ``depths``;
    the batch loss in blocks of ``window`` steps against the flow.

    Returns
    -------
    RRSSGDComparison
    """
    D = lam.size
    runs, theory, dev = {}, {}, 0.0
    for L in depths:
        cfg = ReducedGammaSGDConfig("rrs", D=D, L=L, B=D, eta=eta * min(1.0, L / 4), steps=steps, lam=lam, omega=omega)
        runs[L] = simulate_reduced_gamma_sgd(cfg, rng)
        theory[L] = rrs_gradient_flow(runs[L].t_loss, lam, omega, L=L)[1]
        dev = max(dev, block_mean_relative_deviation(runs[L].batch_loss, theory[L], window))
    return RRSSGDComparison(runs, theory, dev)
