"""Decoder-only linear attention as a learned preconditioner (main paper §3–4, §12; MMNN report §4).

Outer time ``s``: the preconditioner ``P_s`` is trained on the decoder loss
``(1/2K) E‖P d − z⋆‖²``. Population gradient descent (``iclcore.lsq.dynamics``) gives
``P_s − P⋆ = (P_0 − P⋆)(I − ηC)^s``; here the *online* version draws fresh
prompts at every step (stochastic gradient ``(1/b) Σ (P d_n − z_n) d_nᵀ``, the
gradient of ``K·L_dec`` estimated on a batch of ``b`` prompts). A one-layer
linear-attention read-out with merged key–query matrix ``P`` returns
``P (1/M) Σ_i y_i x_i = P c_M = P d`` (:func:`linear_attention_readout`),
so ``P`` *is* the attention layer's parameter.

Inner time ``ℓ``: the frozen ``P_s`` is used in Richardson's iteration
(``iclcore.lsq.iterates``).

Also: finite-task estimator ``P̂_N = Z Dᵀ (D Dᵀ)^†`` (§3.2) and the
prompt-size contraction ``ρ(I − P⋆(M) H_∞)`` (§4, §12.9); and the study of a trained decoder:
its replicas (:func:`train_decoder_replicas`), its risk against the population prediction
(:func:`risk_trajectory`), its depth-``L`` solver and certificates (:func:`held_out_depth_study`,
:func:`eb_coverage_study`), unlearned baselines (:func:`learned_against_baselines`) and the
standard errors of a single run (:func:`single_run_errors`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from iclcore.linalg import stable_rank
from iclcore.lsq.dynamics import (
    check_step_size,
    excess_risk,
    gd_trajectory,
    modal_entropy,
    modal_excess_risk,
    modal_weights,
)
from iclcore.lsq.iterates import (
    RichardsonCertificate,
    contraction_factor,
    iteration_matrix,
    richardson_certificate,
    richardson_error,
    richardson_iterates,
)
from iclcore.lsq.moments import (
    Moments,
    closed_form_moments,
    decoder_risk,
    effective_dimension,
    oracle_preconditioner,
    oracle_risk,
)
from iclcore.lsq.tasks import Prompts, TaskConfig, sample_decoder_pairs, sample_prompt_statistics
from iclcore.parallel import map_configs
from iclcore.richardson.baselines import (
    BaselineComparison,
    LinearSystems,
    compare_baselines,
    replica_gap_standard_error,
    replica_win_rate,
)
from iclcore.richardson.baselines import depth_risk as system_depth_risk
from iclcore.stats import (
    EBBound,
    clipped_empirical_bernstein,
    eb_coverage_from_pool,
    ratio_standard_error,
    replica_spread,
    single_run_standard_error,
    standard_error,
)
from iclcore.validation import positive_int

__all__ = [
    "linear_attention_readout",
    "OnlineRun",
    "online_decoder_training",
    "DecoderRun",
    "DecoderRunResult",
    "online_decoder_run",
    "empirical_decoder_risk",
    "depth_risk",
    "relative_error",
    "cosine_defect",
    "finite_task_estimator",
    "finite_task_excess_risk",
    "prompt_contraction",
    "PromptContraction",
    "checkpoint_table",
    "max_stable_step",
    "predicted_risk_curve",
    "FiniteTaskResult",
    "finite_task_experiment",
    "ridge_matching_contraction",
    "richardson_identity_residual",
    "DecoderReplicas",
    "train_decoder_replicas",
    "RiskTrajectory",
    "risk_trajectory",
    "DepthStudy",
    "held_out_depth_study",
    "CoverageStudy",
    "eb_coverage_study",
    "LearnedAgainstBaselines",
    "learned_against_baselines",
    "single_run_errors",
]


def linear_attention_readout(X: np.ndarray, y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """One-layer linear attention read-out of the task vector.

    With tokens ``(x_i, y_i)``, values ``y_i`` and merged key–query matrix ``P``,
    the attention output for the task is ``P (1/M) Σ_i x_i y_i = P c_M``.

    Parameters
    ----------
    X : ndarray (n, M, K)
    y : ndarray (n, M)
    P : ndarray (K, K)

    Returns
    -------
    ndarray (n, K)
    """
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    if X.ndim != 3 or y.shape != X.shape[:2]:
        raise ValueError(f"X, y: expected shapes (n, M, K) and (n, M), got {X.shape} and {y.shape}")
    P = np.asarray(P, float)
    if P.shape != (X.shape[2], X.shape[2]):
        raise ValueError(f"P: expected shape {(X.shape[2], X.shape[2])}, got {P.shape}")
    scores = np.einsum("nmk,nm->nk", X, y) / X.shape[1]  # Σ_i value_i · key_i / M
    return scores @ P.T


def max_stable_step(C: np.ndarray, fraction: float = 1.0) -> float:
    """``fraction / λ_max(C)``; ``fraction ∈ (0, 2)`` gives a stable population step."""
    if not 0 < fraction < 2:
        raise ValueError(f"fraction: must lie in (0, 2), got {fraction!r}")
    return float(fraction / np.linalg.eigvalsh(C).max())


@dataclass(frozen=True)
class OnlineRun:
    """Checkpoints of an online decoder run.

    Attributes
    ----------
    steps : ndarray (T,)
        Outer times ``s`` of the checkpoints.
    P : ndarray (T, K, K)
        ``P_s`` at the checkpoints.
    eta : float
    batch_size : int
    """

    steps: np.ndarray
    P: np.ndarray
    eta: float
    batch_size: int


def _check_training_args(config: TaskConfig, eta, n_steps, batch_size, P0, checkpoints):
    positive_int(n_steps, "n_steps", minimum=0)
    positive_int(batch_size, "batch_size")
    K = config.K
    P0 = np.zeros((K, K)) if P0 is None else np.array(P0, dtype=float)
    if P0.shape != (K, K):
        raise ValueError(f"P0: expected shape {(K, K)}, got {P0.shape}")
    C = closed_form_moments(config.replace(target="beta")).C  # C does not depend on the target
    check_step_size(eta, C, "eta")
    cps = np.arange(n_steps + 1) if checkpoints is None else np.unique(np.asarray(checkpoints, dtype=np.int64))
    if cps.size == 0 or cps.min() < 0 or cps.max() > n_steps:
        raise ValueError(f"checkpoints: must lie in [0, n_steps={n_steps}]")
    return P0, cps


def online_decoder_training(
    config: TaskConfig,
    eta: float,
    n_steps: int,
    *,
    batch_size: int,
    rng: np.random.Generator,
    P0: np.ndarray | None = None,
    checkpoints: np.ndarray | None = None,
) -> OnlineRun:
    """Online (fresh prompts every step) SGD on the decoder loss (main paper §3.1, §12.5).

    ``P_{s+1} = P_s − η (1/b) Σ_{n=1}^b (P_s d_n − z⋆_n) d_nᵀ`` with a fresh batch
    of ``b`` prompts at every step; its mean is the population step
    ``P_s − η (P_s C − B)``.

    Parameters
    ----------
    config : TaskConfig
    eta : float
        Step size, must satisfy ``0 < η < 2/λ_max(C)``.
    n_steps : int
    batch_size : int
    rng : numpy.random.Generator
    P0 : ndarray (K, K), optional (default 0)
    checkpoints : array of int, optional (default every step)

    Returns
    -------
    OnlineRun
    """
    P, cps = _check_training_args(config, eta, n_steps, batch_size, P0, checkpoints)
    out = np.empty((cps.size, config.K, config.K))
    j = 0
    if cps[0] == 0:
        out[0] = P
        j = 1
    for s in range(n_steps):
        d, z = sample_decoder_pairs(config, batch_size, rng)
        resid = d @ P.T - z  # (b, K)
        P = P - (eta / batch_size) * (resid.T @ d)
        if j < cps.size and cps[j] == s + 1:
            out[j] = P
            j += 1
    return OnlineRun(steps=cps, P=out, eta=float(eta), batch_size=int(batch_size))


@dataclass(frozen=True, eq=False)
class DecoderRun:
    """One online decoder training of :func:`online_decoder_run` (from ``P_0 = 0``).

    Attributes
    ----------
    config : TaskConfig
    eta : float
        Step size, ``0 < η < 2/λ_max(C)``.
    steps : int
        Outer steps ``s``.
    batch : int
        Fresh prompts per step.
    seed : int or tuple of int
        Seed of ``numpy.random.default_rng`` (an int or a SeedSequence entropy such as ``(seed, j)``),
        the source of every prompt.
    checkpoints : tuple of int, optional
        Outer times kept (default: every step).
    """

    config: TaskConfig
    eta: float
    steps: int
    batch: int
    seed: int | tuple[int, ...]
    checkpoints: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.config, TaskConfig):
            raise TypeError(f"config: expected an iclcore.lsq.tasks.TaskConfig, got {type(self.config).__name__}")
        seeds = self.seed if isinstance(self.seed, tuple) else (self.seed,)
        if not seeds or any(isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0 for v in seeds):
            raise ValueError(f"seed: expected a non-negative int or a tuple of them, got {self.seed!r}")
        if self.checkpoints is not None:
            object.__setattr__(self, "checkpoints", tuple(int(c) for c in self.checkpoints))


@dataclass(frozen=True, eq=False)
class DecoderRunResult:
    """Result of :func:`online_decoder_run`.

    Attributes
    ----------
    run : OnlineRun
        The checkpoints ``P_s``, shape ``(T, K, K)``.
    rng_state : dict
        ``bit_generator.state`` of the prompt generator after the run: a caller that drew the same
        stream from its own ``default_rng(seed)`` continues it with ``rng.bit_generator.state = rng_state``.
    """

    run: OnlineRun
    rng_state: dict


def online_decoder_run(run: DecoderRun) -> DecoderRunResult:
    """:func:`online_decoder_training` of ``run`` with prompts from ``numpy.random.default_rng(run.seed)``.

    ``P_{s+1} = P_s − η (1/b) Σ_n (P_s d_n − z⋆_n) d_nᵀ`` from ``P_0 = 0`` (``K × K``), ``run.steps``
    steps of ``run.batch`` fresh prompts; returns the checkpoints (``(T, K, K)``) and the generator's
    final state. A pure function of ``run`` (a task of :func:`iclcore.parallel.map_configs`): the same
    bits in any process.
    """
    if not isinstance(run, DecoderRun):
        raise TypeError(f"run: expected a DecoderRun, got {type(run).__name__}")
    rng = np.random.default_rng(list(run.seed) if isinstance(run.seed, tuple) else run.seed)
    cps = None if run.checkpoints is None else np.array(run.checkpoints, dtype=np.int64)
    out = online_decoder_training(run.config, run.eta, run.steps, batch_size=run.batch, rng=rng, checkpoints=cps)
    return DecoderRunResult(run=out, rng_state=rng.bit_generator.state)


def empirical_decoder_risk(P: np.ndarray, d: np.ndarray, z_star: np.ndarray) -> np.ndarray | float:
    """Held-out direct risk ``(1/K) mean_n ‖P d_n − z⋆_n‖²`` (main paper §3.1, ``R_1``).

    ``P`` may be (K, K) or a stack (T, K, K); returns a float or (T,).
    """
    P = np.asarray(P, float)
    stacked = P.ndim == 3
    Ps = P if stacked else P[None]
    K = Ps.shape[-1]
    if d.shape != z_star.shape or d.ndim != 2 or d.shape[1] != K:
        raise ValueError(f"d, z_star: expected equal shapes (n, {K}), got {d.shape} and {z_star.shape}")
    pred = np.einsum("tij,nj->tni", Ps, d)
    r = np.mean(np.sum((pred - z_star[None]) ** 2, axis=-1), axis=-1) / K
    return r if stacked else float(r[0])


def depth_risk(P: np.ndarray, prompts: Prompts, L: int, *, reference: str = "target") -> np.ndarray | float:
    """Held-out depth-``L`` Richardson risk ``(1/K) mean ‖z_L − ref‖²``, ``z_0 = 0`` (main paper §3.1).

    Parameters
    ----------
    P : ndarray (K, K) or (T, K, K)
    prompts : Prompts
    L : int
    reference : {"target", "solution"}
        ``target``: ``z⋆`` (the paper's ``R_L(P_s)``); ``solution``: ``z^†``
        (the solver error ``(1/K) E‖(I − PH)^L z^†‖²`` of MMNN report §4.2).
    """
    if reference not in ("target", "solution"):
        raise ValueError(f"reference: choose 'target' or 'solution', got {reference!r}")
    ref = prompts.z_star if reference == "target" else prompts.z_dagger
    P = np.asarray(P, float)
    stacked = P.ndim == 3
    Ps = P if stacked else P[None]
    K = Ps.shape[-1]
    out = np.empty(Ps.shape[0])
    for t, Pt in enumerate(Ps):
        zL = richardson_iterates(Pt, prompts.H_M, prompts.d, L=L)[:, -1]
        out[t] = np.mean(np.sum((zL - ref) ** 2, axis=-1)) / K
    return out if stacked else float(out[0])


def relative_error(P: np.ndarray, P_star: np.ndarray) -> np.ndarray | float:
    """``‖P − P⋆‖_F / ‖P⋆‖_F`` (stack-aware)."""
    P = np.asarray(P, float)
    r = np.linalg.norm(P - P_star, axis=(-2, -1)) / np.linalg.norm(P_star)
    return r if P.ndim == 3 else float(r)


def cosine_defect(P: np.ndarray, P_star: np.ndarray) -> np.ndarray | float:
    """``1 − ⟨P, P⋆⟩_F / (‖P‖_F ‖P⋆‖_F)`` (stack-aware; 1 for ``P = 0``)."""
    P = np.asarray(P, float)
    num = np.einsum("...ij,ij->...", P, P_star)
    den = np.linalg.norm(P, axis=(-2, -1)) * np.linalg.norm(P_star)
    c = 1.0 - np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return c if P.ndim == 3 else float(c)


def finite_task_estimator(d: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Empirical risk minimiser ``P̂_N = Z Dᵀ (D Dᵀ)^†`` (main paper §3.2).

    Parameters
    ----------
    d : ndarray (N, K)
        Rows ``d_n`` (the columns of ``D``).
    z : ndarray (N, K)
        Rows ``z_n`` (the columns of ``Z``).

    Returns
    -------
    ndarray (K, K)
        Minimum-norm solution of ``P̂ Ĉ_N = B̂_N`` (``Ĉ_N = DDᵀ/N``, ``B̂_N = ZDᵀ/N``).
    """
    d = np.asarray(d, float)
    z = np.asarray(z, float)
    if d.ndim != 2 or z.shape != d.shape:
        raise ValueError(f"d, z: expected equal shapes (N, K), got {d.shape} and {z.shape}")
    return (z.T @ d) @ np.linalg.pinv(d.T @ d, hermitian=True)


def finite_task_excess_risk(P_hat: np.ndarray, P_star: np.ndarray, C: np.ndarray) -> float:
    """``(1/K) Tr{(P̂ − P⋆) C (P̂ − P⋆)ᵀ}`` = ``R(P̂) − R(P⋆)`` (main paper §3.2)."""
    return float(excess_risk(P_hat, P_star, C, scale=1.0 / C.shape[0]))


@dataclass(frozen=True)
class PromptContraction:
    """Population contraction of ``I − P H_∞`` over prompt sizes.

    Attributes
    ----------
    M : ndarray (m,)
    spectral_radius : ndarray (m,)
    operator_norm : ndarray (m,)
    """

    M: np.ndarray
    spectral_radius: np.ndarray
    operator_norm: np.ndarray


def prompt_contraction(config: TaskConfig, M_values, P: np.ndarray | None = None) -> PromptContraction:
    """``ρ(I − P H_∞)`` as the prompt size ``M`` grows (main paper §4, §12.9).

    For each ``M``, ``P`` is the population oracle ``P⋆(M) = B C^†`` of the
    task distribution with prompt size ``M`` (closed-form moments, target ``β``),
    unless a fixed ``P`` is given. ``H_∞ = Σ_x + λI``.
    """
    Ms = np.asarray(M_values, dtype=np.int64)
    if Ms.ndim != 1 or Ms.size == 0 or np.any(Ms < 1):
        raise ValueError("M_values: must be a non-empty 1-D sequence of positive integers")
    H = config.H_infinity
    rad = np.empty(Ms.size)
    nrm = np.empty(Ms.size)
    for i, M in enumerate(Ms):
        Pm = P if P is not None else oracle_preconditioner(closed_form_moments(config.replace(M=int(M), target="beta")))
        c = contraction_factor(Pm, H)
        rad[i], nrm[i] = c.spectral_radius[0], c.operator_norm[0]
    return PromptContraction(M=Ms, spectral_radius=rad, operator_norm=nrm)


def checkpoint_table(
    P: np.ndarray, P_star: np.ndarray, prompts: Prompts, *, L: int, clip: float = 1.0, delta: float = 0.05
) -> dict[str, float]:
    """The quantities of MMNN report Table 2 for one preconditioner ``P``.

    Per held-out prompt the loss is the depth-``L`` solver error
    ``ℓ = (1/K) ‖(I − PH)^L z^†‖²`` (MMNN report §4.2, ``z_0 = 0``).

    Returns
    -------
    dict
        ``depth_risk`` (mean ℓ), ``eb_upper`` (clipped EB bound on ``E min(ℓ, clip)``),
        ``violation_rate`` (of ``‖e_ℓ‖ ≤ ρ^ℓ ‖e_0‖`` over all ℓ ≤ L and prompts),
        ``ratio_mean`` / ``ratio_max`` (``‖e_L‖ / (ρ^L ‖e_0‖)``), ``mean_contraction``
        (mean ``‖I − PH‖_2``), ``max_contraction``, ``mean_spectral_radius``,
        ``rel_dist_oracle`` and ``stable_rank``.
    """
    con = contraction_factor(P, prompts.H_M)
    cert = richardson_certificate(P, prompts.H_M, -prompts.z_dagger, L=L, operator_norm=con.operator_norm)
    K = P.shape[0]
    loss = cert.error_norms[:, -1] ** 2 / K
    eb = clipped_empirical_bernstein(loss, clip, delta)
    return {
        "depth_risk": float(loss.mean()),
        "eb_upper": float(eb.upper),
        "violation_rate": float(cert.violation_rate),
        "ratio_mean": float(cert.ratio_final.mean()),
        "ratio_max": float(cert.ratio_final.max()),
        "mean_contraction": float(con.operator_norm.mean()),
        "max_contraction": float(con.operator_norm.max()),
        "mean_spectral_radius": float(con.spectral_radius.mean()),
        "rel_dist_oracle": float(relative_error(P, P_star)),
        "stable_rank": stable_rank(P),
    }


def predicted_risk_curve(P0: np.ndarray, moments: Moments, eta: float, *, steps) -> np.ndarray:
    """Exact population risk along GD: ``R(P⋆) + (1/K) Σ_i λ_i (1 − ηλ_i)^{2s} ‖(P_0 − P⋆) q_i‖²``.

    Main paper §3.1 (modal risk) and §12.2 (the predicted curve). Returns shape (len(steps),).
    """
    P_star = oracle_preconditioner(moments)
    return oracle_risk(moments) + modal_excess_risk(P0, P_star, moments.C, eta=eta, steps=steps, scale=1.0 / moments.K)


@dataclass(frozen=True)
class FiniteTaskResult:
    """Excess risk of ``P̂_N`` over repetitions (main paper §3.2).

    Attributes
    ----------
    N : ndarray (m,)
    excess : ndarray (m, n_repeats)
        ``(1/K) Tr{(P̂_N − P⋆) C (P̂_N − P⋆)ᵀ}`` per draw.
    identity_gap : float
        ``max |R(P̂_N) − R(P⋆) − excess|`` over all draws, with ``R`` from the moments
        (rounding level: the identity is exact).
    d_eff : float
        ``d_eff(0) = rank C``.
    oracle_risk : float
    train_risk : ndarray (m, n_repeats)
        Empirical risk ``(1/KN) ‖P̂_N D − Z‖_F²`` on the ``N`` training tasks.
    """

    N: np.ndarray
    excess: np.ndarray
    train_risk: np.ndarray
    identity_gap: float
    d_eff: float
    oracle_risk: float


def finite_task_experiment(
    config: TaskConfig, moments: Moments, N_values, *, n_repeats: int, rng: np.random.Generator
) -> FiniteTaskResult:
    """Draw ``N`` tasks, fit ``P̂_N = Z Dᵀ(DDᵀ)^†``, record its exact excess risk.

    The reference scaling of main paper §3.2 is ``(σ²_task/K) d_eff/N`` with
    ``σ²_task/K = R(P⋆)`` (the residual variance per coordinate); for Gaussian
    residuals independent of ``d`` the exact mean would be ``R(P⋆) K/(N − K − 1)``.
    """
    from iclcore.lsq.moments import decoder_risk

    Ns = np.asarray(N_values, dtype=np.int64)
    if Ns.ndim != 1 or Ns.size == 0 or np.any(Ns < 1):
        raise ValueError("N_values: must be a non-empty 1-D sequence of positive integers")
    n_repeats = positive_int(n_repeats, "n_repeats")
    P_star = oracle_preconditioner(moments)
    R_star = oracle_risk(moments)
    exc = np.empty((Ns.size, n_repeats))
    train = np.empty((Ns.size, n_repeats))
    gap = 0.0
    for i, N in enumerate(Ns):
        for j in range(n_repeats):
            d, z = sample_decoder_pairs(config, int(N), rng)
            P_hat = finite_task_estimator(d, z)
            exc[i, j] = finite_task_excess_risk(P_hat, P_star, moments.C)
            train[i, j] = np.sum((d @ P_hat.T - z) ** 2) / (config.K * int(N))
            gap = max(gap, abs(decoder_risk(P_hat, moments) - R_star - exc[i, j]))
    return FiniteTaskResult(
        N=Ns,
        excess=exc,
        train_risk=train,
        identity_gap=float(gap),
        d_eff=effective_dimension(moments.C, 0.0),
        oracle_risk=R_star,
    )


def ridge_matching_contraction(config: TaskConfig, M: int, target_radius: float) -> float:
    """The ridge ``λ`` for which ``ρ(I − P⋆(M)(Σ_x + λI)) = target_radius`` (sensitivity check).

    Solves by bisection on ``λ ∈ [0, λ_min(Σ_x)]``. Raises ``ValueError``
    (``target_radius``) when the target is not bracketed.
    """
    from scipy.optimize import brentq

    def f(lam: float) -> float:
        return prompt_contraction(config.replace(lam=lam), [M]).spectral_radius[0] - target_radius

    hi = float(np.linalg.eigvalsh(config.Sigma_x).min())
    if f(0.0) * f(hi) > 0:
        raise ValueError(f"target_radius: {target_radius} is not reached for lam in [0, {hi:.3g}]")
    return float(brentq(f, 0.0, hi, xtol=1e-12))


def richardson_identity_residual(P: np.ndarray, H: np.ndarray, d: np.ndarray, *, z_dagger: np.ndarray, L: int) -> float:
    """Largest violation of the exact Richardson error identity over prompts and depths (main paper §2).

    With ``e_ℓ = z_ℓ − z†`` the error of the iterates ``z_{ℓ+1} = z_ℓ + P(d − H z_ℓ)`` from ``z_0 = 0``
    (``z† = H^{-1} d``), the identity ``e_ℓ = (I − PH)^ℓ e_0``, ``e_0 = −z†``, is checked twice: the
    iterates (:func:`iclcore.lsq.iterates.richardson_iterates`) minus ``z†`` against the error recursion
    (:func:`iclcore.lsq.iterates.richardson_error`) at every ``ℓ``, and the last error against the closed
    form ``−(I − PH)^L z†`` (a matrix power). Zero up to rounding.

    Parameters
    ----------
    P : ndarray, shape (K, K)
    H : ndarray, shape (n, K, K)
    d, z_dagger : ndarray, shape (n, K)
    L : int

    Returns
    -------
    float
        ``max(max|z_ℓ − z† − e_ℓ|, max|e_L + (I − PH)^L z†|)``.

    Examples
    --------
    >>> H = np.stack([np.diag([1.0, 2.0]), np.eye(2)])
    >>> d = np.ones((2, 2))
    >>> z = np.linalg.solve(H, d[..., None])[..., 0]
    >>> richardson_identity_residual(0.4 * np.eye(2), H, d, z_dagger=z, L=5) < 1e-14
    True
    """
    Z = richardson_iterates(P, H, d, L=L)
    E = richardson_error(P, H, -z_dagger, L=L)
    T_L = np.linalg.matrix_power(iteration_matrix(P, H), L)
    return max(
        float(np.abs(Z - z_dagger[:, None, :] - E).max()),
        float(np.abs(E[:, -1] + np.einsum("nij,nj->ni", T_L, z_dagger)).max()),
    )


# ---------------------------------------------------------------------------------------------
# the outer dynamics of a trained decoder against its population prediction, its inner solver,
# certificates, baselines and single-run standard errors (main paper §3.1, §12; MMNN report §2, §4)


@dataclass(frozen=True, eq=False)
class DecoderReplicas:
    """The reported online run and its independent training replicas (:func:`train_decoder_replicas`).

    Attributes
    ----------
    run : OnlineRun
        Checkpoints ``P_s`` of the reported run, shape ``(T, K, K)``.
    final : ndarray (1 + r, K, K)
        The last checkpoint of the reported run, then the final ``P`` of each of the ``r`` replicas.
    rng : numpy.random.Generator
        ``default_rng(seed)`` continued after the reported run's draws: the prompt stream goes on.
    seconds : float
        Wall-clock time of the trainings.
    """

    run: OnlineRun
    final: np.ndarray
    rng: np.random.Generator
    seconds: float


def train_decoder_replicas(
    config: TaskConfig,
    eta: float,
    *,
    steps: int,
    batch: int,
    seed: int,
    n_checkpoints: int,
    n_replicas: int,
    workers: int = 1,
) -> DecoderReplicas:
    """The reported online run and ``n_replicas`` independent ones, as parallel tasks (main paper §3.1).

    Each run is :func:`online_decoder_run` from ``P_0 = 0`` (``K × K``): ``steps`` outer steps of
    ``batch`` fresh prompts. The reported run draws from ``default_rng(seed)`` (continued in the result's
    ``rng``) and keeps
    ``n_checkpoints`` evenly spaced outer times ``0..steps`` (rounded, duplicates dropped); replica ``j``
    draws from ``default_rng([seed, 1, j])`` and keeps its last step. The runs are independent tasks of
    :func:`iclcore.parallel.map_configs` (``workers`` processes).
    """
    positive_int(n_checkpoints, "n_checkpoints")
    positive_int(n_replicas, "n_replicas", minimum=0)
    checkpoints = np.unique(np.linspace(0, steps, n_checkpoints).round().astype(int))
    jobs = [DecoderRun(config, eta, steps, batch, seed, tuple(checkpoints))] + [
        DecoderRun(config, eta, steps, batch, (seed, 1, j), (steps,)) for j in range(n_replicas)
    ]
    t0 = time.perf_counter()
    main, *replicas = map_configs(online_decoder_run, jobs, workers, label="decoder runs")
    seconds = time.perf_counter() - t0
    final = np.stack([main.run.P[-1]] + [r.run.P[-1] for r in replicas])
    rng = np.random.default_rng(seed)
    rng.bit_generator.state = main.rng_state
    return DecoderReplicas(run=main.run, final=final, rng=rng, seconds=seconds)


@dataclass(frozen=True, eq=False)
class RiskTrajectory:
    """The online decoder's risk along outer time against the exact population prediction.

    ``T`` checkpoints ``s`` (``steps``), ``S + 1`` outer times ``0..S`` for the dense curves.

    Attributes
    ----------
    steps : ndarray (T,)
    predicted_dense : ndarray (S + 1,)
        ``R(P_s)`` along population GD from ``P_0 = 0`` (:func:`predicted_risk_curve`).
    predicted, observed, observed_se, population : ndarray (T,)
        The prediction at the checkpoints; the held-out risk of the online ``P_s``
        (:func:`empirical_decoder_risk`) and its standard error over the held-out pairs; the exact
        population risk of the online ``P_s``.
    rel_err, cos_defect, rel_err_gd : ndarray (T,)
        ``‖P_s − P⋆‖_F/‖P⋆‖_F`` and ``1 − cos(P_s, P⋆)`` of the online iterate, and the relative error
        of the population GD iterate.
    oracle_risk : float
        ``R(P⋆)``.
    after_transient : ndarray (T,) of bool
        Checkpoints ``s ≥ s_transient``.
    modal_weights : ndarray (S + 1, K)
        Spectral-overlap weights ``w_{s,i}`` (columns: ascending eigenvalues of ``C``).
    modal_entropy : ndarray (S + 1,)
    """

    steps: np.ndarray
    predicted_dense: np.ndarray
    predicted: np.ndarray
    observed: np.ndarray
    observed_se: np.ndarray
    population: np.ndarray
    rel_err: np.ndarray
    cos_defect: np.ndarray
    rel_err_gd: np.ndarray
    oracle_risk: float
    after_transient: np.ndarray
    modal_weights: np.ndarray
    modal_entropy: np.ndarray

    @property
    def dense_steps(self) -> np.ndarray:
        """Outer times ``0..S`` of :attr:`predicted_dense` and :attr:`modal_weights`, shape (S + 1,)."""
        return np.arange(self.predicted_dense.shape[0])

    @property
    def abs_discrepancy(self) -> np.ndarray:
        """``|R_obs − R_pred|`` at the checkpoints, shape (T,)."""
        return np.abs(self.observed - self.predicted)

    @property
    def rel_discrepancy(self) -> np.ndarray:
        """``|R_obs − R_pred| / R_pred``, shape (T,)."""
        return self.abs_discrepancy / self.predicted

    @property
    def population_rel_discrepancy(self) -> np.ndarray:
        """``|R(P_s) − R_pred| / R_pred`` for the exact risk of the online iterate, shape (T,)."""
        return np.abs(self.population - self.predicted) / self.predicted

    @property
    def mode_groups(self) -> list[np.ndarray]:
        """Indices of the slow, middle and fast thirds of the spectrum of ``C``."""
        return np.array_split(np.arange(self.modal_weights.shape[1]), 3)

    @property
    def group_weights(self) -> np.ndarray:
        """Summed weights of the three :attr:`mode_groups`, shape (S + 1, 3)."""
        return np.stack([self.modal_weights[:, g].sum(1) for g in self.mode_groups], 1)

    def metrics(self) -> dict[str, float]:
        """The trajectory's metrics: discrepancies (all checkpoints and after the transient) and final values."""
        abs_disc, rel_disc, pop, after = (
            self.abs_discrepancy,
            self.rel_discrepancy,
            self.population_rel_discrepancy,
            self.after_transient,
        )
        R_obs, R_pred, slow = self.observed, self.predicted, self.mode_groups[0]
        return {
            "oracle_risk": self.oracle_risk,
            "max_abs_discrepancy": abs_disc.max(),
            "max_rel_discrepancy": rel_disc.max(),
            "max_rel_discrepancy_after_transient": rel_disc[after].max(),
            "max_abs_discrepancy_after_transient": abs_disc[after].max(),
            "max_rel_pop_vs_pred": pop.max(),
            "max_rel_pop_vs_pred_after_transient": pop[after].max(),
            "max_rel_se_eval_after_transient": (self.observed_se / R_pred)[after].max(),
            "max_z_obs_vs_pop_after_transient": (np.abs(R_obs - self.population) / self.observed_se)[after].max(),
            "R_obs_final": R_obs[-1],
            "R_pred_final": R_pred[-1],
            "R_obs_over_pred_final": R_obs[-1] / R_pred[-1],
            "rel_err_final": self.rel_err[-1],
            "cos_defect_final": self.cos_defect[-1],
            "rel_err_gd_final": self.rel_err_gd[-1],
            "R_direct_final": R_obs[-1],
            "entropy_final": self.modal_entropy[-1],
            "slow_third_weight_initial": float(self.modal_weights[0, slow].sum()),
            "slow_third_weight_final": float(self.modal_weights[-1, slow].sum()),
        }


def risk_trajectory(
    run: OnlineRun,
    moments: Moments,
    *,
    n_steps: int,
    d: np.ndarray,
    z_star: np.ndarray,
    s_transient: int,
) -> RiskTrajectory:
    """Online checkpoints ``P_s`` against ``P_s − P⋆ = (P_0 − P⋆)(I − ηC)^s`` from ``P_0 = 0`` (main paper §3.1, §12.2–12.3).

    Parameters
    ----------
    run : OnlineRun
        The online iterates ``P`` (T, K, K) at the checkpoints ``steps`` (T,), trained with step ``eta``.
    moments : Moments
        Population moments ``C``, ``B`` (:func:`iclcore.lsq.moments.closed_form_moments`).
    n_steps : int
        Last outer time ``S`` of the dense prediction.
    d, z_star : ndarray (n, K)
        Held-out decoder pairs for the observed risk ``(1/K) mean ‖P_s d − z⋆‖²``.
    s_transient : int
        First checkpoint counted after the initial transient.
    """
    if not isinstance(run, OnlineRun):
        raise TypeError(f"run: expected an OnlineRun, got {type(run).__name__}")
    P, checkpoints, eta = run.P, run.steps, run.eta
    if int(checkpoints.max()) > n_steps:
        raise ValueError(f"n_steps: must be >= the last checkpoint {int(checkpoints.max())}, got {n_steps}")
    K = moments.K
    P0 = np.zeros((K, K))
    P_star = oracle_preconditioner(moments)
    s_dense = np.arange(n_steps + 1)
    predicted_dense = predicted_risk_curve(P0, moments, eta, steps=s_dense)
    loss = np.sum((np.einsum("tij,nj->tni", P, d) - z_star[None]) ** 2, axis=-1) / K
    W = modal_weights(P0, P_star, moments.C, eta=eta, steps=s_dense)
    return RiskTrajectory(
        steps=checkpoints,
        predicted_dense=predicted_dense,
        predicted=predicted_dense[checkpoints],
        observed=empirical_decoder_risk(P, d, z_star),
        observed_se=standard_error(loss, axis=1),
        population=decoder_risk(P, moments),
        rel_err=relative_error(P, P_star),
        cos_defect=cosine_defect(P, P_star),
        rel_err_gd=relative_error(gd_trajectory(P0, P_star, moments.C, eta=eta, steps=checkpoints), P_star),
        oracle_risk=oracle_risk(moments),
        after_transient=checkpoints >= s_transient,
        modal_weights=W,
        modal_entropy=modal_entropy(W),
    )


@dataclass(frozen=True, eq=False)
class DepthStudy:
    """The learned ``P_s`` in the depth-``L`` Richardson solver on held-out prompts, with its certificates.

    Attributes
    ----------
    target_risk, solution_risk, direct_risk : ndarray (T,)
        ``(1/K) E‖z_L − z⋆‖²`` (main paper ``R_L``), ``(1/K) E‖z_L − z^†‖²`` (MMNN report
        ``R_dec(L)``) and the direct ``(1/K) E‖P_s d − z⋆‖²`` on the same prompts, per checkpoint.
    oracle_target_risk : float
        ``R_L(P⋆)``.
    ridge_floor : float
        ``(1/K) E‖z^† − z⋆‖²``, the ``L → ∞`` limit against ``z⋆``.
    ridge_floor_closed_form : float or None
        Its expectation ``σ² tr(Σ_x^{-1}) / (K(M − K − 1))`` for ``λ = 0``, ``M > K + 1`` (inverse-Wishart
        mean), else None.
    contraction_index : ndarray (c,)
        Checkpoint indices at which the contraction of ``I − P_sH`` is computed.
    contractions : ndarray (4, c)
        Mean and max of ``‖I − P_sH‖_2``, mean and max spectral radius, at those checkpoints.
    final_operator_norm : ndarray (n,)
        ``‖I − PH‖_2`` per prompt for the last checkpoint ``P``.
    violation_rate : float
        Largest violation rate of ``‖e_ℓ‖ ≤ ‖I − P_sH‖^ℓ‖e_0‖`` over the contraction checkpoints.
    identity_error : float
        :func:`richardson_identity_residual` of the last ``P``.
    final_error : ndarray (n, L + 1, K)
        ``e_ℓ = z_ℓ − z^†`` of the last ``P``.
    certificate : RichardsonCertificate
        The certificate of the last ``P``.
    eb_depth, eb_direct : EBBound
        Clipped empirical-Bernstein bounds on the depth-``L`` loss ``‖e_L‖²/K`` and on the direct loss.
    """

    target_risk: np.ndarray
    solution_risk: np.ndarray
    direct_risk: np.ndarray
    oracle_target_risk: float
    ridge_floor: float
    ridge_floor_closed_form: float | None
    contraction_index: np.ndarray
    contractions: np.ndarray
    final_operator_norm: np.ndarray
    violation_rate: float
    identity_error: float
    final_error: np.ndarray
    certificate: RichardsonCertificate
    eb_depth: EBBound
    eb_direct: EBBound

    def metrics(self) -> dict[str, float]:
        """Depth risks, floors, contraction and certificate metrics of the last checkpoint."""
        con_mean, con_max, rad_mean, _ = self.contractions
        closed = {} if self.ridge_floor_closed_form is None else {"R_floor_closed_form": self.ridge_floor_closed_form}
        return {
            "R_direct_final_eval_prompts": self.direct_risk[-1],
            "R_depth_final": self.target_risk[-1],
            "R_depth_solution_final": self.solution_risk[-1],
            "R_depth_oracle": self.oracle_target_risk,
            "R_ridge_floor": self.ridge_floor,
            **closed,
            "mean_contraction_final": con_mean[-1],
            "max_contraction_final": con_max[-1],
            "mean_radius_final": rad_mean[-1],
            "identity_max_error": self.identity_error,
            "violation_rate": self.violation_rate,
            "eb_upper_depth": self.eb_depth.upper,
            "eb_upper_direct": self.eb_direct.upper,
        }


def held_out_depth_study(
    P: np.ndarray,
    P_star: np.ndarray,
    prompts: Prompts,
    *,
    config: TaskConfig,
    L: int,
    n_contraction_checkpoints: int,
    clip: float,
    delta: float,
) -> DepthStudy:
    """Direct estimator ``P_s d`` against depth-``L`` Richardson with the same ``P_s`` (main paper §2–3.1, §12.9; MMNN report §2, §4.2).

    Parameters
    ----------
    P : ndarray (T, K, K)
        Checkpoints ``P_s``; the last one is certified.
    P_star : ndarray (K, K)
    prompts : Prompts
        ``n`` held-out prompts (``H_M``, ``d``, ``z⋆``, ``z^†``) of ``config``.
    L : int
    n_contraction_checkpoints : int
        Checkpoints, evenly spaced over the ``T``, at which the contraction is computed.
    clip, delta : float
        Clipping level and failure probability of the empirical-Bernstein bounds.
    """
    P = np.asarray(P, float)
    if P.ndim != 3:
        raise ValueError(f"P: expected a stack of checkpoints (T, K, K), got shape {P.shape}")
    positive_int(n_contraction_checkpoints, "n_contraction_checkpoints")
    K, M, H, z_dag = config.K, config.M, prompts.H_M, prompts.z_dagger
    closed = None
    if config.lam == 0 and M > K + 1:
        closed = float(config.sigma**2 * np.trace(np.linalg.inv(config.Sigma_x)) / (K * (M - K - 1)))
    idx = np.unique(np.linspace(0, len(P) - 1, n_contraction_checkpoints).round().astype(int))
    cons = {i: contraction_factor(P[i], H) for i in idx}
    summary = np.array(
        [
            (c.operator_norm.mean(), c.operator_norm.max(), c.spectral_radius.mean(), c.spectral_radius.max())
            for c in cons.values()
        ]
    ).T
    P_fin = P[-1]
    viol = [
        richardson_certificate(P[i], H, -z_dag, L=L, operator_norm=cons[i].operator_norm).violation_rate for i in idx
    ]
    cert = richardson_certificate(P_fin, H, -z_dag, L=L)
    loss_direct = np.sum((prompts.d @ P_fin.T - prompts.z_star) ** 2, 1) / K
    return DepthStudy(
        target_risk=depth_risk(P, prompts, L, reference="target"),
        solution_risk=depth_risk(P, prompts, L, reference="solution"),
        direct_risk=empirical_decoder_risk(P, prompts.d, prompts.z_star),
        oracle_target_risk=depth_risk(P_star, prompts, L, reference="target"),
        ridge_floor=float(np.mean(np.sum((z_dag - prompts.z_star) ** 2, 1)) / K),
        ridge_floor_closed_form=closed,
        contraction_index=idx,
        contractions=summary,
        final_operator_norm=contraction_factor(P_fin, H).operator_norm,
        violation_rate=float(np.max(viol)),
        identity_error=richardson_identity_residual(P_fin, H, prompts.d, z_dagger=z_dag, L=L),
        final_error=richardson_error(P_fin, H, -z_dag, L=L),
        certificate=cert,
        eb_depth=clipped_empirical_bernstein(cert.error_norms[:, -1] ** 2 / K, clip, delta),
        eb_direct=clipped_empirical_bernstein(loss_direct, clip, delta),
    )


@dataclass(frozen=True)
class CoverageStudy:
    """Coverage of the clipped empirical-Bernstein bound (MMNN report §2) on laws with a known clipped mean.

    Attributes
    ----------
    coverage : dict[str, float]
        Share of repetitions whose bound covers the law's clipped mean, for the pools ``direct_final``,
        ``depth_final``, ``direct_initial`` (held-out losses of the last and the first ``P``) and
        ``bernoulli`` (a law on ``{0, 1}``, small samples).
    plain_mean_bernoulli : float
        The same share for the plain sample mean used as a "bound" on the Bernoulli law (must fail).
    clipped_fraction_initial : float
        Share of the initial ``P``'s pool above the clipping level.
    """

    coverage: dict[str, float]
    plain_mean_bernoulli: float
    clipped_fraction_initial: float

    def metrics(self) -> dict[str, float]:
        """Coverages, their minimum over the loss pools, and the Bernoulli power check."""
        cov = self.coverage
        return {
            **{f"coverage_{k}": cov[k] for k in ("direct_final", "depth_final", "direct_initial")},
            "coverage_min": min(cov.values()),
            "coverage_bernoulli": cov["bernoulli"],
            "coverage_plain_mean_bernoulli": self.plain_mean_bernoulli,
            "clipped_fraction_initial": self.clipped_fraction_initial,
        }


def eb_coverage_study(
    P_final: np.ndarray,
    P_initial: np.ndarray,
    config: TaskConfig,
    *,
    L: int,
    n_pool: int,
    n_sample: int,
    n_repeats: int,
    clip: float,
    delta: float,
    p_bernoulli: float,
    n_bernoulli: int,
    rng: np.random.Generator,
) -> CoverageStudy:
    """Coverage of the clipped EB bound, redrawing ``n_sample`` losses from pools of fresh held-out losses (MMNN report §2).

    The EB inequality holds for every law on ``[0, c]``; the law of a large pool of ``n_pool`` fresh
    losses has an exactly known clipped mean (:func:`iclcore.stats.eb_coverage_from_pool`). Pools: the
    direct loss ``‖P d − z⋆‖²/K`` of ``P_final`` and ``P_initial`` (``K × K``), and the depth-``L`` loss
    ``‖e_L‖²/K`` of ``P_final``. A Bernoulli(``p_bernoulli``) pool with samples of ``n_bernoulli`` has
    power: there the plain sample mean fails to cover. Draws, in order: the pool prompts, the three
    coverages, the Bernoulli pool, its coverage, the plain-mean resamples.
    """
    if not 0 < p_bernoulli < 1:
        raise ValueError(f"p_bernoulli: must lie in (0, 1), got {p_bernoulli!r}")
    K = config.K
    pool_prompts = sample_prompt_statistics(config, n_pool, rng)
    pool_direct = np.sum((pool_prompts.d @ P_final.T - pool_prompts.z_star) ** 2, 1) / K
    pool_depth = np.sum(richardson_error(P_final, pool_prompts.H_M, -pool_prompts.z_dagger, L=L)[:, -1] ** 2, 1) / K
    pool_init = np.sum((pool_prompts.d @ P_initial.T - pool_prompts.z_star) ** 2, 1) / K
    coverage = {}
    for name, pool in (("direct_final", pool_direct), ("depth_final", pool_depth), ("direct_initial", pool_init)):
        coverage[name], _ = eb_coverage_from_pool(pool, n_sample, clip, delta=delta, n_repeats=n_repeats, rng=rng)
    pool_bern = (rng.random(n_pool) < p_bernoulli).astype(float)
    coverage["bernoulli"], true_bern = eb_coverage_from_pool(
        pool_bern, n_bernoulli, 1.0, delta=delta, n_repeats=n_repeats, rng=rng
    )
    plain = float(np.mean(true_bern <= pool_bern[rng.integers(0, n_pool, (n_repeats, n_bernoulli))].mean(1)))
    return CoverageStudy(
        coverage=coverage, plain_mean_bernoulli=plain, clipped_fraction_initial=float(np.mean(pool_init > clip))
    )


@dataclass(frozen=True, eq=False)
class LearnedAgainstBaselines:
    """A learned ``P`` and unlearned preconditioners at two depths on the same held-out prompts.

    Attributes
    ----------
    depths : tuple of int
        ``(L, L_small)``.
    comparisons : tuple of BaselineComparison
        The baselines at each depth (:func:`iclcore.richardson.baselines.compare_baselines`).
    learned_risk : tuple of float
        ``R_L`` of the learned ``P`` (the reported run) against ``z^†`` at each depth.
    win_rates : dict[str, tuple[float, float]]
        ``baseline_win_<rival>`` (depth ``L``) and ``baseline_small_win_<rival>`` (``L_small``): share of
        prompts on which the learned ``P`` has the lower loss, and its standard error (training replicas
        and binomial).
    gap_se : tuple of float
        Standard error of the risk gap to the rivals at each depth.
    """

    depths: tuple[int, int]
    comparisons: tuple[BaselineComparison, BaselineComparison]
    learned_risk: tuple[float, float]
    win_rates: dict[str, tuple[float, float]]
    gap_se: tuple[float, float]

    def metrics(self) -> dict[str, float]:
        """Risks of every method at both depths, fitted step sizes, win rates and gap standard errors."""
        (cmp_L, cmp_small), (learned_L, learned_small) = self.comparisons, self.learned_risk
        wins = {}
        for key, (rate, se) in self.win_rates.items():
            wins[key], wins[f"{key}_se"] = rate, se
        return {
            **{f"baseline_risk_{m}": v for m, v in cmp_L.test_risk.items()},
            "baseline_risk_learned": learned_L,
            **{f"baseline_risk_small_{m}": v for m, v in cmp_small.test_risk.items()},
            "baseline_risk_small_learned": learned_small,
            "baseline_scalar_eta": cmp_L.baselines["scalar"].param,
            "baseline_jacobi_omega": cmp_L.baselines["jacobi"].param,
            "baseline_gap_se": self.gap_se[0],
            "baseline_small_gap_se": self.gap_se[1],
            **wins,
        }


def learned_against_baselines(
    P_replicas: np.ndarray,
    train: Prompts,
    test: Prompts,
    *,
    H_inf: np.ndarray,
    L: int,
    L_small: int,
    methods: tuple[str, ...] = ("scalar", "jacobi", "h_inf", "exact"),
    rivals: tuple[str, ...] = ("scalar", "h_inf"),
) -> LearnedAgainstBaselines:
    """The learned ``P`` against unlearned preconditioners at depths ``L`` and ``L_small`` (MMNN report §4.1).

    Every system is ``H_M z = d`` with target ``z^†``, from ``z_0 = 0``; the baselines
    (:func:`iclcore.richardson.baselines.compare_baselines`: ``η I``, damped Jacobi with the step fitted
    on ``train``, ``H_∞^{-1}``, the exact solve) are scored on ``test``. The learned ``P`` is compared with
    each of ``rivals`` prompt by prompt (:func:`iclcore.richardson.baselines.replica_win_rate`) and by the
    risk gap (:func:`iclcore.richardson.baselines.replica_gap_standard_error`).

    Parameters
    ----------
    P_replicas : ndarray (1 + r, K, K)
        The reported learned ``P`` first, then its training replicas (``r ≥ 1``).
    train, test : Prompts
    H_inf : ndarray (K, K)
        Population ``H_∞`` for the ``h_inf`` baseline.
    """
    P_replicas = np.asarray(P_replicas, float)
    if P_replicas.ndim != 3 or P_replicas.shape[0] < 2:
        raise ValueError(f"P_replicas: expected (1 + r, K, K) with r >= 1 replicas, got shape {P_replicas.shape}")
    sys_test = LinearSystems(H=test.H_M, d=test.d, x_star=test.z_dagger)
    sys_train = LinearSystems(H=train.H_M, d=train.d, x_star=train.z_dagger)
    comparisons = tuple(
        compare_baselines(sys_train, sys_test, ell, methods=methods, H_inf=H_inf) for ell in (L, L_small)
    )
    learned = tuple(float(system_depth_risk(P_replicas[0], sys_test, ell)) for ell in (L, L_small))
    wins, gaps = {}, []
    for tag, cmp, ell in (("", comparisons[0], L), ("_small", comparisons[1], L_small)):
        rival_P = {m: cmp.baselines[m].preconditioners(sys_test.H) for m in rivals}
        for m, R in rival_P.items():
            wins[f"baseline{tag}_win_{m}"] = replica_win_rate(P_replicas, R, sys_test, L=ell)
        gaps.append(replica_gap_standard_error(P_replicas, list(rival_P.values()), sys_test, L=ell))
    return LearnedAgainstBaselines(
        depths=(L, L_small), comparisons=comparisons, learned_risk=learned, win_rates=wins, gap_se=tuple(gaps)
    )


def single_run_errors(
    P_replicas: np.ndarray,
    P_star: np.ndarray,
    prompts: Prompts,
    *,
    trajectory: RiskTrajectory,
    depth: DepthStudy,
    L: int,
    d: np.ndarray,
    z_star: np.ndarray,
    clip: float,
    delta: float,
) -> dict[str, float]:
    """Standard errors of the quantities of one training run: replica spread and prompt SE in quadrature.

    The reported run ``P_replicas[0]`` and ``r`` independent replicas give the spread of a single run's
    value (:func:`iclcore.stats.replica_spread`); a mean over held-out prompts adds its standard error
    (:func:`iclcore.stats.single_run_standard_error`). Covers the final relative error, the direct risk
    (on the held-out pairs ``d``, ``z_star`` of ``trajectory``), the depth-``L`` risk, their ratio
    (:func:`iclcore.stats.ratio_standard_error`), the mean contraction and the Table 2 rows of
    :func:`checkpoint_table` (main paper §3.1; MMNN report §4.2).

    Parameters
    ----------
    P_replicas : ndarray (1 + r, K, K), ``r ≥ 1``
    P_star : ndarray (K, K)
    prompts : Prompts
        The held-out prompts of ``depth``.

    Returns
    -------
    dict
        ``table_{depth_risk,ratio_mean,stable_rank}_se``, ``rel_err_final_se``, ``R_obs_final_se``,
        ``R_depth_final_se``, ``direct_over_depth`` and its ``_se``, ``mean_contraction_final_se``,
        ``n_replicas``.
    """
    P_rep = np.asarray(P_replicas, float)
    if P_rep.ndim != 3 or P_rep.shape[0] < 2:
        raise ValueError(f"P_replicas: expected (1 + r, K, K) with r >= 1 replicas, got shape {P_rep.shape}")
    K = P_rep.shape[-1]
    E_L = depth.final_error[:, -1]
    loss_target = np.sum((E_L + prompts.z_dagger - prompts.z_star) ** 2, 1) / K  # per-prompt (1/K)||z_L - z*||^2
    loss_solution = np.sum(E_L**2, 1) / K  # per-prompt (1/K)||z_L - z^dagger||^2
    con_rep = np.array([contraction_factor(P, prompts.H_M).operator_norm.mean() for P in P_rep])
    R_obs_se = single_run_standard_error(empirical_decoder_risk(P_rep, d, z_star), trajectory.observed_se[-1])
    R_depth_se = single_run_standard_error(
        depth_risk(P_rep, prompts, L, reference="target"), standard_error(loss_target)
    )
    tables = [checkpoint_table(P, P_star, prompts, L=L, clip=clip, delta=delta) for P in P_rep]
    prompt_se = {
        "depth_risk": standard_error(loss_solution),
        "ratio_mean": standard_error(depth.certificate.ratio_final),
        "stable_rank": 0.0,  # the stable rank of P does not depend on the prompts
    }
    R_obs, R_depth = trajectory.observed[-1], depth.target_risk[-1]
    return {
        **{f"table_{k}_se": single_run_standard_error([tb[k] for tb in tables], v) for k, v in prompt_se.items()},
        "rel_err_final_se": replica_spread(relative_error(P_rep, P_star)),
        "R_obs_final_se": R_obs_se,
        "R_depth_final_se": R_depth_se,
        "direct_over_depth": R_obs / R_depth,
        "direct_over_depth_se": ratio_standard_error(R_obs, R_obs_se, R_depth, se_b=R_depth_se),
        "mean_contraction_final_se": single_run_standard_error(con_rep, standard_error(depth.final_operator_norm)),
        "n_replicas": P_rep.shape[0] - 1,
    }
