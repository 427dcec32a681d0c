r"""Diagnostics of a (possibly task-dependent) preconditioner for the depth-``L`` Richardson decoder.

* :func:`decoder_diagnostics` -- the quantities of MMNN report Table 2 (held-out loss, empirical-Bernstein
  certificates, distances to ``P⋆``, contraction and stable rank) on held-out tasks;
* :func:`latent_decomposition` -- every term of the encoder + latent-decoder risk split for a
  task-dependent latent preconditioner (main paper §6.3, MMNN report §5.3 Table 4);
* :func:`compare_preconditioners` and :func:`compare_latent_decoders` -- the same for several methods on
  the same held-out tasks, with the best method and paired comparisons.

Tasks are :class:`iclcore.richardson.baselines.LinearSystems`; the iteration and the risk are those
of :mod:`iclcore.richardson.baselines`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.linalg import stable_rank
from iclcore.lsq.iterates import RichardsonCertificate, richardson_certificate
from iclcore.richardson.baselines import LinearSystems, depth_error, depth_risk_curve
from iclcore.stats import (
    EBBound,
    clipped_empirical_bernstein,
    paired_standard_error,
    ratio_standard_error,
    standard_error,
)
from iclcore.validation import check_depth, positive_int

__all__ = [
    "DecoderDiagnostics",
    "decoder_diagnostics",
    "LatentDecomposition",
    "latent_decomposition",
    "PreconditionerComparison",
    "compare_preconditioners",
    "LatentComparison",
    "compare_latent_decoders",
]


# ---------------------------------------------------------------------------------------------
# the Table 2 quantities of a (possibly task-dependent) preconditioner


def _srank(P: np.ndarray) -> np.ndarray:
    """:func:`iclcore.linalg.stable_rank` of each matrix, with ``srank(0) := 0`` (the ``P = 0`` baseline)."""
    P = np.asarray(P, dtype=float)
    zero = ~np.any(P != 0, axis=(-2, -1))
    out = np.zeros(P.shape[:-2])
    if np.any(~zero):
        out[~zero] = stable_rank(P[~zero], "P")
    return out


@dataclass(frozen=True)
class DecoderDiagnostics:
    """MMNN report Table 2 rows (and more) for per-task preconditioners on held-out tasks.

    The solver error is ``e_ℓ = x_ℓ − x†`` from ``x_0 = 0`` (``e_0 = −x†``), the per-task loss is
    ``ℓ = ‖e_L‖²/K`` and ``ρ = ‖I − PH‖_2`` (MMNN report §4.2).

    Attributes
    ----------
    risk_dagger : float
        ``(1/K) E‖x_L − x†‖²`` (Table 2 "held-out depth risk").
    risk_star : float
        ``(1/K) E‖x_L − x⋆‖²`` (error to the task target).
    risk_dagger_se, risk_star_se : float
        Standard errors of the two means over held-out tasks.
    eb_upper, eb_mean, eb_n, eb_clip, eb_delta
        Clipped empirical-Bernstein bound on the clipped ``ℓ`` (MMNN report §2) and its inputs.
    eb_upper_small : float
        The same bound on the first ``n_small`` held-out tasks only.
    violation_rate : float
        Fraction of (task, ℓ) with ``‖e_ℓ‖ > ρ^ℓ ‖e_0‖`` (0 for every ``P``: submultiplicativity).
    ratio_mean : float
        ``E[‖e_L‖ / (ρ^L ‖e_0‖)]``.
    certified_risk : float
        ``(1/K) E[ρ^{2L} ‖e_0‖²]`` (MMNN report §4.2).
    ratio_of_means : float
        ``risk_dagger / certified_risk``.
    rho_mean, rho_max, frac_rho_lt1 : float
        Mean and max of ``ρ``, fraction of tasks with ``ρ < 1``.
    spectral_radius_mean, frac_spectral_lt1 : float
        Same for the spectral radius of ``I − PH``.
    power_norm_mean : float
        ``E ‖(I − PH)^L‖_2^{1/L}``.
    rel_dist_mean_P, rel_dist_per_task : float
        ``‖E P − P⋆‖_F/‖P⋆‖_F`` and ``E‖P − P⋆‖_F/‖P⋆‖_F``.
    srank_mean_P, srank_per_task : float
        ``srank(E P)`` and ``E srank(P)``.
    """

    risk_dagger: float
    risk_dagger_se: float
    risk_star: float
    risk_star_se: float
    eb_upper: float
    eb_mean: float
    eb_n: int
    eb_clip: float
    eb_delta: float
    eb_upper_small: float
    n_small: int
    violation_rate: float
    ratio_mean: float
    certified_risk: float
    ratio_of_means: float
    rho_mean: float
    rho_max: float
    frac_rho_lt1: float
    spectral_radius_mean: float
    frac_spectral_lt1: float
    power_norm_mean: float
    rel_dist_mean_P: float
    rel_dist_per_task: float
    srank_mean_P: float
    srank_per_task: float

    def as_dict(self, prefix: str = "") -> dict:
        """Flat ``{prefix + field: value}`` for metrics.json."""
        return {prefix + k: v for k, v in self.__dict__.items()}


def decoder_diagnostics(
    P: np.ndarray,
    systems: LinearSystems,
    L: int,
    *,
    P_oracle: np.ndarray,
    clip: float = 1.0,
    delta: float = 0.05,
    n_small: int = 64,
) -> DecoderDiagnostics:
    """All Table 2 quantities of the per-task preconditioners ``P`` (n, K, K) or a shared (K, K).

    Parameters
    ----------
    P : ndarray (K, K) or (n, K, K)
    systems : LinearSystems
        Held-out tasks.
    L : int
        Depth (``≥ 1``).
    P_oracle : ndarray (K, K)
        ``P⋆`` for the distances.
    clip, delta : float
        EB clipping level ``c`` and failure probability ``δ``.
    n_small : int
        Size of the small held-out subset for ``eb_upper_small`` (``2 ≤ n_small ≤ n``).
    """
    from iclcore.lsq.iterates import contraction_factor, iteration_matrix, richardson_certificate
    from iclcore.stats import clipped_empirical_bernstein

    L = check_depth(L)
    n, K = systems.n, systems.K
    n_small = positive_int(n_small, "n_small", minimum=2)
    if n_small > n:
        raise ValueError(f"n_small: must be <= n = {n} held-out tasks, got {n_small}")
    Ps = np.ascontiguousarray(systems.preconditioner_stack(P))
    Po = np.asarray(P_oracle, dtype=float)
    if Po.shape != (K, K):
        raise ValueError(f"P_oracle: expected shape {(K, K)}, got {Po.shape}")
    e = depth_error(Ps, systems, L)[:, -1]
    eL_dag = e + systems.x_star - systems.x_dagger
    loss = np.sum(eL_dag**2, axis=1) / K
    eb = clipped_empirical_bernstein(loss, clip, delta)
    eb_small = clipped_empirical_bernstein(loss[:n_small], clip, delta)
    con = contraction_factor(Ps, systems.H)
    rho, srad = con.operator_norm, con.spectral_radius
    cert = richardson_certificate(Ps, systems.H, -systems.x_dagger, L=L, operator_norm=rho)
    T = iteration_matrix(Ps, systems.H)
    powL = np.linalg.norm(np.linalg.matrix_power(T, L), ord=2, axis=(-2, -1)) ** (1.0 / L)
    e0n2 = np.sum(systems.x_dagger**2, axis=1)
    certified = float(np.mean(rho ** (2 * L) * e0n2) / K)
    Pbar = Ps.mean(axis=0)
    no = np.linalg.norm(Po)
    loss_star = np.sum(e**2, axis=1) / K
    return DecoderDiagnostics(
        risk_dagger=float(loss.mean()),
        risk_dagger_se=float(standard_error(loss)),
        risk_star=float(loss_star.mean()),
        risk_star_se=float(standard_error(loss_star)),
        eb_upper=float(eb.upper),
        eb_mean=float(eb.mean),
        eb_n=int(n),
        eb_clip=float(clip),
        eb_delta=float(delta),
        eb_upper_small=float(eb_small.upper),
        n_small=int(n_small),
        violation_rate=float(cert.violation_rate),
        ratio_mean=float(np.mean(cert.ratio_final)),
        certified_risk=certified,
        ratio_of_means=float(loss.mean() / certified) if certified > 0 else 0.0,
        rho_mean=float(rho.mean()),
        rho_max=float(rho.max()),
        frac_rho_lt1=float(np.mean(rho < 1)),
        spectral_radius_mean=float(srad.mean()),
        frac_spectral_lt1=float(np.mean(srad < 1)),
        power_norm_mean=float(powL.mean()),
        rel_dist_mean_P=float(np.linalg.norm(Pbar - Po) / no),
        rel_dist_per_task=float(np.mean(np.linalg.norm(Ps - Po, axis=(-2, -1))) / no),
        srank_mean_P=float(_srank(Pbar[None])[0]),
        srank_per_task=float(np.mean(_srank(Ps))),
    )


# ---------------------------------------------------------------------------------------------
# encoder + latent decoder: the risk decomposition with a task-dependent latent preconditioner


@dataclass(frozen=True)
class LatentDecomposition:
    """Main paper §6.3 / MMNN report §5.3 (Table 4) for per-prompt latent preconditioners.

    With ``β^† = U z^†``, ``β_L = U z_L`` and ``‖v‖²_Σ = vᵀ Σ_x v``:
    ``R_e2e = E‖β_L − β‖²_Σ = R_floor + R_dec + 2 E⟨β^† − β, β_L − β^†⟩_Σ``.

    Attributes
    ----------
    e2e, floor, dec, cross : float
        ``R_e2e``, ``R_floor = E‖β^† − β‖²_Σ``, ``R_dec = E‖U(z_L − z^†)‖²_Σ`` and the cross
        term ``E⟨β^† − β, U(z_L − z^†)⟩_Σ`` (the identity has ``2 × cross``).
    e2e_se : float
        Standard error of ``e2e``.
    decomposition_gap : float
        ``|R_e2e − (R_floor + R_dec + 2 cross)|``.
    identity_gap : float
        ``max |z_L − (z^† − (I − PA)^L z^†)|`` relative to ``max |z^†|``.
    e2e_losses : ndarray (n,)
        Per-prompt ``‖β_L − β‖²_Σ`` (for the EB bound).
    violation_rate : float
        Fraction of prompts with ``‖z_L − z^†‖ > ρ^L ‖z^†‖`` (``ρ = ‖I − PA‖_2``, rtol 1e-10).
    ratio_mean : float
        ``E[‖z_L − z^†‖ / (ρ^L ‖z^†‖)]``.
    rho_mean, frac_rho_lt1 : float
    dec_bound : float
        ``‖Σ_x‖_2 E[ρ^{2L} ‖z^†‖²]`` (main paper §6.3).
    floor_se, dec_se, ratio_mean_se, rho_mean_se : float
        Standard errors over the ``n`` prompts of ``floor``, ``dec``, ``ratio_mean`` and ``rho_mean``
        (:func:`iclcore.stats.standard_error`).
    """

    e2e: float
    e2e_se: float
    floor: float
    dec: float
    cross: float
    decomposition_gap: float
    identity_gap: float
    e2e_losses: np.ndarray
    violation_rate: float
    ratio_mean: float
    rho_mean: float
    frac_rho_lt1: float
    dec_bound: float
    floor_se: float
    dec_se: float
    ratio_mean_se: float
    rho_mean_se: float


def latent_decomposition(
    U: np.ndarray, P: np.ndarray, A: np.ndarray, *, d: np.ndarray, beta: np.ndarray, Sigma_x: np.ndarray, L: int
) -> LatentDecomposition:
    """Every term of the encoder+decoder risk split for per-prompt latent preconditioners.

    Parameters
    ----------
    U : ndarray (K, r)
        Encoder subspace.
    P : ndarray (r, r) or (n, r, r)
        Latent preconditioners.
    A, d : ndarray (n, r, r), (n, r)
        Latent systems ``A = UᵀH_MU``, ``d = Uᵀc_M``
        (:func:`iclcore.lsq.lowrank.latent_systems`).
    beta : ndarray (n, K)
        Task vectors.
    Sigma_x : ndarray (K, K)
    L : int (``≥ 1``)
    """
    L = check_depth(L)
    U = np.asarray(U, dtype=float)
    sys_ = LinearSystems(H=A, d=d, x_star=np.zeros_like(np.asarray(d, dtype=float)))
    r = sys_.K
    if U.ndim != 2 or U.shape[1] != r:
        raise ValueError(f"U: expected shape (K, {r}), got {U.shape}")
    Ps = np.ascontiguousarray(sys_.preconditioner_stack(P))
    zL = depth_error(Ps, sys_, L)[:, -1]  # x_star = 0, so this is z_L itself
    zd = sys_.x_dagger
    T = np.eye(r) - Ps @ sys_.H
    z_id = zd - (np.linalg.matrix_power(T, L) @ zd[..., None])[..., 0]
    Sx = np.asarray(Sigma_x, dtype=float)
    e_floor = zd @ U.T - beta
    e_dec = (zL - zd) @ U.T

    def q(u, v):
        return np.sum((u @ Sx) * v, axis=-1)

    losses = q(e_floor + e_dec, e_floor + e_dec)
    floor_n, dec_n = q(e_floor, e_floor), q(e_dec, e_dec)
    floor, dec, cross = floor_n.mean(), dec_n.mean(), q(e_floor, e_dec).mean()
    rho = np.linalg.norm(T, ord=2, axis=(-2, -1))
    err = np.linalg.norm(zL - zd, axis=1)
    bound = rho**L * np.linalg.norm(zd, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0), 0.0)
    return LatentDecomposition(
        e2e=float(losses.mean()),
        e2e_se=float(standard_error(losses)),
        floor=float(floor),
        dec=float(dec),
        cross=float(cross),
        decomposition_gap=float(abs(losses.mean() - (floor + dec + 2 * cross))),
        identity_gap=float(np.max(np.abs(zL - z_id)) / np.max(np.abs(zd))),
        e2e_losses=losses,
        violation_rate=float(np.mean(err > (1 + 1e-10) * bound)),
        ratio_mean=float(ratio.mean()),
        rho_mean=float(rho.mean()),
        frac_rho_lt1=float(np.mean(rho < 1)),
        dec_bound=float(np.linalg.norm(Sx, 2) * np.mean(rho ** (2 * L) * np.sum(zd**2, axis=1))),
        floor_se=_prompt_se(floor_n),
        dec_se=_prompt_se(dec_n),
        ratio_mean_se=_prompt_se(ratio),
        rho_mean_se=_prompt_se(rho),
    )


def _prompt_se(x: np.ndarray) -> float:
    """Standard error of a mean over prompts (``nan`` for a single prompt, where it is undefined)."""
    return float(standard_error(x)) if x.shape[0] >= 2 else float("nan")


# ---------------------------------------------------------------------------------------------
# several preconditioners on the same held-out tasks: Table 2 and Table 4 for every method


@dataclass(frozen=True, eq=False)
class PreconditionerComparison:
    """MMNN report Table 2 for several methods on the same held-out tasks (:func:`compare_preconditioners`).

    Attributes
    ----------
    systems : LinearSystems
        The ``n`` held-out tasks, target ``x† = H^{-1} d``.
    preconditioners : dict[str, ndarray]
        Each method's ``P``, (K, K) or (n, K, K).
    L : int
    methods : tuple of str
        The methods with full :class:`DecoderDiagnostics`, in table order.
    floor : str
        The exact solve: its risk (the floor) only.
    diagnostics : dict[str, DecoderDiagnostics]
    risk_curves : dict[str, ndarray (L + 1,)]
        ``R_ℓ = E‖x_ℓ − x†‖²/K`` for the methods and the floor.
    beta_losses : dict[str, ndarray (n,)]
        Per-task ``‖x_L − β‖²/K`` (error to the task vector) for the methods and the floor.
    zero_risk : float
        ``E‖x†‖²/K``, the risk of doing nothing (``P = 0``).
    """

    systems: LinearSystems
    preconditioners: dict[str, np.ndarray]
    L: int
    methods: tuple[str, ...]
    floor: str
    diagnostics: dict[str, DecoderDiagnostics]
    risk_curves: dict[str, np.ndarray]
    beta_losses: dict[str, np.ndarray]
    zero_risk: float

    @property
    def risks(self) -> dict[str, float]:
        """Held-out ``R_L`` (against ``x†``) of every method."""
        return {m: self.diagnostics[m].risk_dagger for m in self.methods}

    @property
    def best(self) -> str:
        """The method with the smallest held-out risk."""
        risks = self.risks
        return min(risks, key=risks.get)

    def operator_norms(self, method: str) -> np.ndarray:
        """``ρ = ‖I − PH‖_2`` per task, shape (n,)."""
        return np.linalg.norm(np.eye(self.systems.K) - self.preconditioners[method] @ self.systems.H, 2, axis=(1, 2))

    def certificate(self, method: str) -> RichardsonCertificate:
        """:func:`iclcore.lsq.iterates.richardson_certificate` of ``method`` from ``e_0 = −x†``."""
        return richardson_certificate(self.preconditioners[method], self.systems.H, -self.systems.x_dagger, L=self.L)

    def losses(self, method: str) -> np.ndarray:
        """Per-task ``‖x_L − x⋆‖²/K`` against the systems' targets, shape (n,)."""
        return (
            np.sum((depth_error(self.preconditioners[method], self.systems, self.L)[:, -1]) ** 2, axis=1)
            / self.systems.K
        )

    def risk_ratio(self, a: str, b: str) -> float:
        """``R_L(a) / R_L(b)``."""
        risks = self.risks
        return risks[a] / risks[b]

    def metrics(self, reference: str, rival: str) -> dict[str, float]:
        """Every method's Table 2 row, its risk against ``β``, the best method, and the paired comparison of
        ``reference`` with ``rival`` (their difference of per-task losses and its standard error, the
        reference's task variation, its risk over the risk of doing nothing, and standard errors)."""
        K, n = self.systems.K, self.systems.n
        out: dict[str, float] = {
            "zero_risk": self.zero_risk,
            f"{self.floor}_risk": float(self.risk_curves[self.floor][-1]),
        }
        for m in self.methods:
            out.update(self.diagnostics[m].as_dict(prefix=f"{m}_"))
        for m, loss in self.beta_losses.items():
            out[f"{m}_risk_beta"] = float(loss.mean())
            out[f"{m}_risk_beta_se"] = float(standard_error(loss))
        risks, best = self.risks, self.best
        out["best_index"] = list(self.methods).index(best)
        out["best_risk"] = risks[best]
        out["max_violation_rate"] = max(self.diagnostics[m].violation_rate for m in self.methods)
        ref_loss, rival_loss = self.losses(reference), self.losses(rival)
        out[f"{reference}_minus_{rival}"] = float((ref_loss - rival_loss).mean())
        out[f"{reference}_minus_{rival}_se"] = float(paired_standard_error(ref_loss, rival_loss))
        P = self.systems.preconditioner_stack(self.preconditioners[reference])
        out[f"{reference}_task_variation"] = float(
            np.mean(np.linalg.norm(P - P.mean(0), axis=(1, 2))) / np.linalg.norm(P.mean(0))
        )
        out[f"{reference}_risk_over_zero"] = risks[reference] / self.zero_risk
        zero_loss = np.sum(self.systems.x_dagger**2, axis=1) / K
        out[f"{reference}_rho_mean_se"] = standard_error(self.operator_norms(reference))
        out[f"{reference}_ratio_mean_se"] = standard_error(self.certificate(reference).ratio_final)
        out[f"{reference}_risk_over_zero_se"] = ratio_standard_error(
            ref_loss.mean(),
            standard_error(ref_loss),
            zero_loss.mean(),
            se_b=standard_error(zero_loss),
            cov=float(np.cov(ref_loss, zero_loss)[0, 1]) / n,
        )
        return out


def compare_preconditioners(
    preconditioners: dict[str, np.ndarray],
    systems: LinearSystems,
    L: int,
    *,
    P_oracle: np.ndarray,
    beta: np.ndarray,
    methods: tuple[str, ...],
    floor: str = "exact",
    clip: float = 1.0,
    delta: float = 0.05,
    n_small: int = 64,
) -> PreconditionerComparison:
    """Every Table 2 quantity (:func:`decoder_diagnostics`) of each method on the same held-out tasks (MMNN report §4.2).

    Parameters
    ----------
    preconditioners : dict[str, ndarray]
        ``P`` of each method, (K, K) or (n, K, K); must hold every one of ``methods`` and ``floor``.
    systems : LinearSystems
        ``n`` held-out tasks whose target is the systems' solution ``x†``.
    L : int
    P_oracle : ndarray (K, K)
        ``P⋆`` for the distances.
    beta : ndarray (n, K)
        The task vectors, for the risk against ``β``.
    methods : tuple of str
        The methods with the full diagnostics; ``floor`` (the exact solve) gets its risk only.
    clip, delta, n_small
        As in :func:`decoder_diagnostics`.
    """
    missing = [m for m in (*methods, floor) if m not in preconditioners]
    if missing:
        raise ValueError(f"preconditioners: no matrix for {missing}")
    targets = LinearSystems(H=systems.H, d=systems.d, x_star=beta)
    P = preconditioners
    return PreconditionerComparison(
        systems=systems,
        preconditioners=P,
        L=L,
        methods=tuple(methods),
        floor=floor,
        diagnostics={
            m: decoder_diagnostics(P[m], systems, L, P_oracle=P_oracle, clip=clip, delta=delta, n_small=n_small)
            for m in methods
        },
        risk_curves={m: depth_risk_curve(P[m], systems, L) for m in (*methods, floor)},
        beta_losses={
            m: np.sum(depth_error(P[m], targets, L)[:, -1] ** 2, axis=1) / systems.K for m in (*methods, floor)
        },
        zero_risk=float(np.mean(np.sum(systems.x_dagger**2, axis=1)) / systems.K),
    )


@dataclass(frozen=True, eq=False)
class LatentComparison:
    """MMNN report Table 4 for several latent decoders behind one encoder (:func:`compare_latent_decoders`).

    Attributes
    ----------
    methods : tuple of str
    decompositions : dict[str, LatentDecomposition]
        The risk split ``R_e2e = R_floor + R_dec + 2 cross`` of each method.
    eb : dict[str, EBBound]
        The clipped empirical-Bernstein bound on each method's per-prompt e2e loss.
    """

    methods: tuple[str, ...]
    decompositions: dict[str, LatentDecomposition]
    eb: dict[str, EBBound]

    def e2e_ratio(self, a: str, b: str) -> float:
        """``R_e2e(a) / R_e2e(b)``."""
        return self.decompositions[a].e2e / self.decompositions[b].e2e

    def dec_ratio(self, a: str, b: str) -> float:
        """``R_dec(a) / R_dec(b)``."""
        return self.decompositions[a].dec / self.decompositions[b].dec

    def metrics(self, reference: str, rival: str) -> dict[str, float]:
        """Every method's Table 4 row (``<method>_<quantity>``), the best methods by ``R_e2e`` and by ``R_dec``,
        the largest violation rate and relative decomposition gap, and the paired e2e difference of
        ``reference`` and ``rival`` with its standard error."""
        dec, out = self.decompositions, {}
        for m in self.methods:
            dm = dec[m]
            out.update(
                {
                    f"{m}_e2e": dm.e2e,
                    f"{m}_e2e_se": dm.e2e_se,
                    f"{m}_floor": dm.floor,
                    f"{m}_dec": dm.dec,
                    f"{m}_cross": dm.cross,
                    f"{m}_decomposition_gap": dm.decomposition_gap,
                    f"{m}_decomposition_gap_rel": dm.decomposition_gap / dm.e2e,
                    f"{m}_identity_gap": dm.identity_gap,
                    f"{m}_violation_rate": dm.violation_rate,
                    f"{m}_ratio_mean": dm.ratio_mean,
                    f"{m}_rho_mean": dm.rho_mean,
                    f"{m}_frac_rho_lt1": dm.frac_rho_lt1,
                    f"{m}_dec_bound": dm.dec_bound,
                    f"{m}_eb_upper": self.eb[m].upper,
                    f"{m}_floor_plus_dec_over_e2e": (dm.floor + dm.dec) / dm.e2e,
                    f"{m}_floor_se": dm.floor_se,
                    f"{m}_dec_se": dm.dec_se,
                    f"{m}_ratio_mean_se": dm.ratio_mean_se,
                    f"{m}_rho_mean_se": dm.rho_mean_se,
                }
            )
        methods = list(self.methods)
        risks = {m: dec[m].e2e for m in methods}
        best = min(risks, key=risks.get)
        decs = {m: dec[m].dec for m in methods}
        ref, riv = dec[reference].e2e_losses, dec[rival].e2e_losses  # paired on the same held-out prompts
        out.update(
            {
                "best_index": methods.index(best),
                "best_e2e": risks[best],
                "best_dec_index": methods.index(min(decs, key=decs.get)),
                "max_violation_rate": max(dec[m].violation_rate for m in methods),
                "max_decomposition_gap_rel": max(dec[m].decomposition_gap / dec[m].e2e for m in methods),
                f"{reference}_dec_over_floor": dec[reference].dec / dec[reference].floor,
                f"{reference}_minus_{rival}_e2e": float((ref - riv).mean()),
                f"{reference}_minus_{rival}_e2e_se": float(paired_standard_error(ref, riv)),
            }
        )
        return out


def compare_latent_decoders(
    U: np.ndarray,
    preconditioners: dict[str, np.ndarray],
    L: int,
    *,
    A: np.ndarray,
    d: np.ndarray,
    beta: np.ndarray,
    Sigma_x: np.ndarray,
    methods: tuple[str, ...],
    clip: float = 1.0,
    delta: float = 0.05,
) -> LatentComparison:
    """:func:`latent_decomposition` and the clipped EB bound on the e2e loss for each method (main paper §6.3; MMNN report §5.3, Table 4).

    Parameters
    ----------
    U : ndarray (K, r)
        Encoder subspace.
    preconditioners : dict[str, ndarray]
        Each method's latent ``P``, (r, r) or (n, r, r); must hold every one of ``methods``.
    A, d : ndarray (n, r, r), (n, r)
        Held-out latent systems.
    beta : ndarray (n, K)
    Sigma_x : ndarray (K, K)
    L : int
    clip, delta : float
        EB clipping level and failure probability (:func:`iclcore.stats.clipped_empirical_bernstein`).
    """
    missing = [m for m in methods if m not in preconditioners]
    if missing:
        raise ValueError(f"preconditioners: no matrix for {missing}")
    dec = {m: latent_decomposition(U, preconditioners[m], A, d=d, beta=beta, Sigma_x=Sigma_x, L=L) for m in methods}
    eb = {m: clipped_empirical_bernstein(dec[m].e2e_losses, clip, delta) for m in methods}
    return LatentComparison(methods=tuple(methods), decompositions=dec, eb=eb)
