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
prompt-size contraction ``ρ(I − P⋆(M) H_∞)`` (§4, §12.9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.linalg import stable_rank
from iclcore.lsq.dynamics import check_step_size, excess_risk, modal_excess_risk
from iclcore.lsq.iterates import (
    contraction_factor,
    iteration_matrix,
    richardson_certificate,
    richardson_error,
    richardson_iterates,
)
from iclcore.lsq.moments import (
    Moments,
    closed_form_moments,
    effective_dimension,
    oracle_preconditioner,
    oracle_risk,
)
from iclcore.lsq.tasks import Prompts, TaskConfig, sample_decoder_pairs
from iclcore.stats import clipped_empirical_bernstein
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
    out = online_decoder_training(run.config, run.eta, run.steps, run.batch, rng, checkpoints=cps)
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


def depth_risk(P: np.ndarray, prompts: Prompts, L: int, reference: str = "target") -> np.ndarray | float:
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
        zL = richardson_iterates(Pt, prompts.H_M, prompts.d, L)[:, -1]
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
    P: np.ndarray, P_star: np.ndarray, prompts: Prompts, L: int, clip: float = 1.0, delta: float = 0.05
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
    cert = richardson_certificate(P, prompts.H_M, -prompts.z_dagger, L, operator_norm=con.operator_norm)
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


def predicted_risk_curve(P0: np.ndarray, moments: Moments, eta: float, steps) -> np.ndarray:
    """Exact population risk along GD: ``R(P⋆) + (1/K) Σ_i λ_i (1 − ηλ_i)^{2s} ‖(P_0 − P⋆) q_i‖²``.

    Main paper §3.1 (modal risk) and §12.2 (the predicted curve). Returns shape (len(steps),).
    """
    P_star = oracle_preconditioner(moments)
    return oracle_risk(moments) + modal_excess_risk(P0, P_star, moments.C, eta, steps, scale=1.0 / moments.K)


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
    config: TaskConfig, moments: Moments, N_values, n_repeats: int, rng: np.random.Generator
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


def richardson_identity_residual(P: np.ndarray, H: np.ndarray, d: np.ndarray, z_dagger: np.ndarray, L: int) -> float:
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
    >>> richardson_identity_residual(0.4 * np.eye(2), H, d, z, 5) < 1e-14
    True
    """
    Z = richardson_iterates(P, H, d, L)
    E = richardson_error(P, H, -z_dagger, L)
    T_L = np.linalg.matrix_power(iteration_matrix(P, H), L)
    return max(
        float(np.abs(Z - z_dagger[:, None, :] - E).max()),
        float(np.abs(E[:, -1] + np.einsum("nij,nj->ni", T_L, z_dagger)).max()),
    )
