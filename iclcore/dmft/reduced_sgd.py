"""Reduced-Γ SGD simulation (Bordelon et al. §2.2 Eq. 4, App. B.2 Eqs. 54–55, App. C.1 Eq. 62)
and the Monte Carlo population loss of a fixed ``Γ``. Conventions (normalised trace, theory time, power-law data) in :mod:`iclcore.dmft`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from iclcore.linalg import haar_orthogonal
from iclcore.models.probes import trailing_average
from iclcore.stats import standard_error
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
    Gamma: np.ndarray, cfg: ReducedGammaSGDConfig, rng: np.random.Generator, n_contexts: int = 2000, chunk: int = 250
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
    D: int, alpha: float, kappa: float, tau: float, eta: float, steps: int, seeds: int, rng: np.random.Generator
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
    seeds: np.ndarray, theory: np.ndarray, theory_finite_d: np.ndarray, start: int = 19
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
