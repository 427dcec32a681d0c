r"""The methods of the PDE recast's Table 5 (MMNN report Table 5, Figure 5): fitted, trained, scored, compared.

Every method is a preconditioner ``P`` of the query decoder ``u_{ℓ+1} = u_ℓ + P(F⋆ − A(z_enc) u_ℓ)``
(:mod:`iclcore.pde.prompts`) at one depth ``L``:

* fitted on the training prompts: the best scalar ``ηI``, damped Jacobi, and the free linear ``P``
  by L-BFGS through the ``L`` steps (``free_lbfgs``, started at ``ηI``; a second fit that differs only
  in the order of the gradient's sums, and a third started at ``A_0^{-1}``);
* fixed: ``H_∞^{-1} = A_0^{-1}`` (``E z = 0``) and the one-step oracle ``P⋆ = E_z A(z)^{-1}``;
* learned by Adam on fresh prompts: the Flexformer (warm-started at ``free_lbfgs``), the free linear
  ``P`` trained the same way from the same start, and the kernel-dictionary ablation
  ``θ_0 I + θ_1 G + θ_2 Φ_{0.1} + θ_3 Φ_{0.3}`` started at ``ηI``
  (:func:`fit_decoder_methods`).

All are scored on the same held-out prompts (:func:`compare_decoder_methods`): end-to-end MSE
``E‖u_L − u⋆‖²/n_h``, the clipped empirical-Bernstein bound on the per-prompt loss (MMNN report §2)
on all held-out prompts and on a small subset, and the Table 2 diagnostics; the comparison's summary
(best method, ratios to the encoded-solve floor with delta-method standard errors, paired
differences) is :meth:`DecoderComparison.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclcore.models.flexformer import (
    Flexformer,
    FlexformerConfig,
    KernelDictionaryPreconditioner,
    PreconditionerJob,
    TrainingResult,
    kernel_dictionary,
    preconditioners_numpy,
    train_preconditioner_job,
)
from iclcore.parallel import map_configs, thread_budget
from iclcore.pde.decoder import DecoderScoring, FreeLinearFit, decoder_scores, free_linear_fit
from iclcore.pde.galerkin import AffineOperator
from iclcore.pde.prompts import EncoderQuality, PDEConfig, encoded_query_sampler, population_oracle
from iclcore.richardson.baselines import (
    Baseline,
    LinearSystems,
    depth_error,
    depth_risk,
    exact_baseline,
    jacobi_baseline,
    scalar_baseline,
)
from iclcore.richardson.preconditioner_diagnostics import DecoderDiagnostics
from iclcore.stats import (
    EBBound,
    clipped_empirical_bernstein,
    paired_standard_error,
    ratio_standard_error,
    standard_error,
)

__all__ = [
    "LEARNED_METHODS",
    "DecoderMethods",
    "fit_decoder_methods",
    "DecoderComparison",
    "compare_decoder_methods",
]

#: The methods whose ``P`` is fitted or trained (the others are fixed or closed-form rules).
LEARNED_METHODS = ("flex", "flex_static", "free", "free_lbfgs")


@dataclass(frozen=True, eq=False)
class DecoderMethods:
    """The fitted and trained methods of Table 5 (:func:`fit_decoder_methods`).

    Attributes
    ----------
    scalar, jacobi : Baseline
        Best ``ηI`` and damped Jacobi on the training prompts.
    free_lbfgs, free_lbfgs_alt, free_conv : Baseline
        Free linear ``P`` (n_h, n_h) by L-BFGS: from ``ηI``; the same with the gradient's sums in task
        blocks of 64 (rounding only); from ``A_0^{-1}``.
    P_oracle : ndarray (n_h, n_h)
        ``P⋆ = E_z A(z)^{-1}`` (Monte Carlo over the training ``z``).
    flex, free, static : torch.nn.Module
        The trained Flexformer, free linear ``P`` and kernel dictionary.
    curves : dict[str, TrainingResult]
        Training curves of ``flex``, ``free`` and ``flex_static``.
    P : dict[str, ndarray]
        Every method's preconditioner on the held-out prompts, (n_h, n_h) or (n_test, n_h, n_h), in the
        order ``flex, flex_static, free, free_lbfgs, scalar, jacobi, h_inf, oracle``.
    """

    scalar: Baseline
    jacobi: Baseline
    free_lbfgs: Baseline
    free_lbfgs_alt: Baseline
    free_conv: Baseline
    P_oracle: np.ndarray
    flex: torch.nn.Module
    free: torch.nn.Module
    static: torch.nn.Module
    curves: dict[str, TrainingResult]
    P: dict[str, np.ndarray]


def fit_decoder_methods(
    config: PDEConfig,
    op: AffineOperator,
    train: LinearSystems,
    *,
    test: LinearSystems,
    z_train: np.ndarray,
    L: int,
    free_iter: int,
    n_heads: int,
    d_k: int,
    steps: int,
    batch: int,
    lr: float,
    lr_flex: float,
    seed: int,
    device: str = "cpu",
) -> DecoderMethods:
    """Fit, train and evaluate on ``test`` every method of Table 5 (list in the module docstring).

    ``train``/``test``: encoded query systems (:func:`iclcore.pde.prompts.encoded_query_systems`),
    ``H`` (n, n_h, n_h); ``z_train`` (n_train, K): the training prompts' coefficients (for ``P⋆``).
    The three L-BFGS fits (``free_iter`` iterations each) and the three Adam trainings (``steps`` steps
    of ``batch`` fresh prompts; step ``lr_flex`` for the Flexformer and the free ``P``, which see the
    same prompts (seed ``seed + 1``), ``lr`` for the kernel dictionary (seed ``seed + 2``)) are
    independent tasks of :func:`iclcore.parallel.map_configs`; the models start from
    ``torch.Generator().manual_seed(seed)`` and train on ``device``.
    """
    sc = scalar_baseline(train, L)
    ja = jacobi_baseline(train, L)
    eye = np.eye(op.n_h)
    fits = [
        FreeLinearFit(train, L, sc.param * eye, free_iter),
        FreeLinearFit(train, L, sc.param * eye, free_iter, chunk=64),
        FreeLinearFit(train, L, np.linalg.inv(op.A0), free_iter),
    ]
    free_lbfgs, free_lbfgs_alt, free_conv = map_configs(
        free_linear_fit, fits, thread_budget(), cost=lambda f: f.max_iter * f.train.n, label="free linear fits"
    )
    P_oracle = population_oracle(op, z_train)
    A_scale = 1.0 / np.linalg.norm(op.A0, 2)
    F_scale = 1.0 / float(np.sqrt(np.mean(train.d**2)))
    flex = Flexformer(
        FlexformerConfig(K=op.n_h, rank=op.n_h, n_heads=n_heads, d_k=d_k, h_scale=A_scale, d_scale=F_scale),
        torch.Generator().manual_seed(seed),
        P_init=free_lbfgs.P,
        positions=op.nodes,
    )
    free = Flexformer(
        FlexformerConfig(K=op.n_h, rank=op.n_h, n_heads=0), torch.Generator().manual_seed(seed), P_init=free_lbfgs.P
    )
    static = KernelDictionaryPreconditioner(
        kernel_dictionary(op.nodes, ("identity", "green", "matern52:0.1", "matern52:0.3")), P_init=sc.param * eye
    )
    sampler = encoded_query_sampler(config, op)
    jobs = [
        PreconditionerJob(flex, sampler, L, steps, batch, lr_flex, seed + 1, {"model": (1, 3)}, device=device),
        PreconditionerJob(free, sampler, L, steps, batch, lr_flex, seed + 1, {"model": (2, 3)}, device=device),
        PreconditionerJob(static, sampler, L, steps, batch, lr, seed + 2, {"model": (3, 3)}, device=device),
    ]
    trained = map_configs(
        train_preconditioner_job, jobs, thread_budget(), cost=lambda j: j.steps * j.batch, label="pde decoder models"
    )
    (flex, _), (free, _), (static, _) = trained
    curves = {name: res for name, (_, res) in zip(("flex", "free", "flex_static"), trained, strict=True)}
    P = {
        "flex": preconditioners_numpy(flex, test.H, test.d),
        "flex_static": preconditioners_numpy(static, test.H, test.d),
        "free": preconditioners_numpy(free, test.H, test.d),
        "free_lbfgs": free_lbfgs.P,
        "scalar": sc.param * eye,
        "jacobi": ja.preconditioners(test.H),
        "h_inf": np.linalg.inv(op.A0),
        "oracle": P_oracle,
    }
    return DecoderMethods(sc, ja, free_lbfgs, free_lbfgs_alt, free_conv, P_oracle, flex, free, static, curves, P)


@dataclass(frozen=True, eq=False)
class DecoderComparison:
    """Every method scored on the same held-out prompts (:func:`compare_decoder_methods`).

    Attributes
    ----------
    methods : list[str]
        Method names, in the order of the ``P`` dict scored.
    diagnostics : dict[str, DecoderDiagnostics]
        Table 2 quantities per method.
    losses : dict[str, ndarray (n_test,)]
        Per-prompt end-to-end loss ``‖u_L − u⋆‖²/n_h``.
    risk_curves : dict[str, ndarray (L + 1,)]
        Held-out risk at depths ``0..L``.
    e2e : dict[str, float]
        End-to-end MSE (mean of ``losses``).
    eb, eb_small : dict[str, EBBound]
        Clipped empirical-Bernstein bounds on all losses and on the first ``n_small``.
    best : str
        The method of least ``e2e``.
    L : int
        Decoder depth.
    """

    methods: list[str]
    diagnostics: dict[str, DecoderDiagnostics]
    losses: dict[str, np.ndarray]
    risk_curves: dict[str, np.ndarray]
    e2e: dict[str, float]
    eb: dict[str, EBBound]
    eb_small: dict[str, EBBound]
    best: str
    L: int

    def metrics(
        self, fitted: DecoderMethods, *, encoder: EncoderQuality, train: LinearSystems, test: LinearSystems
    ) -> dict:
        """Table 5's summary: per method ``<m>_e2e`` (``_se``), ``_eb_upper`` (``_small``), ``_violation_rate``,
        ``_rho_mean``, ``_frac_rho_lt1``, ``_risk_dagger``; the best method and the best learned one
        (:data:`LEARNED_METHODS`) against the floor ``encoder.floor`` (delta-method SE, covariance
        neglected); ratios and paired differences (on the same prompts) between ``flex``, ``free``,
        ``flex_static``, ``free_lbfgs``; ``free_lbfgs_rounding_ratio`` (held-out ``R_L`` of the refit that
        differs by rounding over this fit's); the fit parameters; and ``free_conv`` (L-BFGS from
        ``A_0^{-1}``) against the floor and the Flexformer. ``train``/``test``: the systems ``fitted`` was
        fitted on and scored on, ``H`` (n, n_h, n_h).
        """
        e2e, losses, diag, floor, L = self.e2e, self.losses, self.diagnostics, encoder.floor, self.L
        out: dict = {
            "scalar_eta": fitted.scalar.param,
            "jacobi_omega": fitted.jacobi.param,
            "free_lbfgs_train_risk": fitted.free_lbfgs.train_risk,
            "free_lbfgs_converged": fitted.free_lbfgs.converged,
            "free_lbfgs_iterations": fitted.free_lbfgs.n_iter,
            "free_lbfgs_rounding_ratio": self.free_lbfgs_rounding_ratio(fitted, test),
        }
        for m in self.methods:
            out.update(
                {
                    f"{m}_e2e": e2e[m],
                    f"{m}_e2e_se": float(standard_error(losses[m])),
                    f"{m}_eb_upper": self.eb[m].upper,
                    f"{m}_eb_upper_small": self.eb_small[m].upper,
                    f"{m}_violation_rate": diag[m].violation_rate,
                    f"{m}_rho_mean": diag[m].rho_mean,
                    f"{m}_frac_rho_lt1": diag[m].frac_rho_lt1,
                    f"{m}_risk_dagger": diag[m].risk_dagger,
                }
            )
        best = self.best
        out["best_index"] = self.methods.index(best)
        out["best_e2e"] = e2e[best]
        out["best_e2e_se"] = out[f"{best}_e2e_se"]
        out["best_eb_upper"] = self.eb[best].upper
        out["best_eb_upper_small"] = self.eb_small[best].upper
        out["best_over_floor"] = e2e[best] / floor
        out["best_over_floor_se"] = ratio_standard_error(
            e2e[best], float(standard_error(losses[best])), floor, se_b=encoder.floor_se
        )
        out["free_over_floor"] = e2e["free"] / floor
        out["free_over_flex"] = e2e["free"] / e2e["flex"]
        out["flex_static_over_free"] = e2e["flex_static"] / e2e["free"]
        out["free_lbfgs_over_flex"] = e2e["free_lbfgs"] / e2e["flex"]
        out["max_violation_rate"] = max(diag[m].violation_rate for m in self.methods)
        diff = losses["flex"] - losses["free"]
        out["flex_minus_free"] = float(diff.mean())
        out["flex_minus_free_se"] = float(paired_standard_error(losses["flex"], losses["free"]))
        diff = losses["flex_static"] - losses["free"]
        out["flex_static_minus_free"] = float(diff.mean())
        out["flex_static_minus_free_se"] = float(paired_standard_error(losses["flex_static"], losses["free"]))
        out["static_theta_green"] = float(fitted.static.theta.detach()[1])
        out["h_inf_over_floor"] = e2e["h_inf"] / floor
        out["oracle_over_floor"] = e2e["oracle"] / floor
        learned = list(LEARNED_METHODS)
        best_learned = min(learned, key=e2e.get)
        out["best_learned_index"] = learned.index(best_learned)
        out["best_learned_e2e"] = e2e[best_learned]
        out["best_learned_over_floor"] = e2e[best_learned] / floor
        out["best_learned_over_floor_se"] = ratio_standard_error(
            e2e[best_learned], float(standard_error(losses[best_learned])), floor, se_b=encoder.floor_se
        )
        free_conv = fitted.free_conv
        free_conv_losses = np.sum(depth_error(free_conv.P, test, L)[:, -1] ** 2, axis=1) / test.K
        out.update(
            free_conv_converged=free_conv.converged,
            free_conv_iterations=free_conv.n_iter,
            free_conv_train_over_floor=free_conv.train_risk / exact_baseline(train, L).train_risk,
            free_conv_over_floor=float(free_conv_losses.mean()) / floor,
            flex_minus_free_conv=float((losses["flex"] - free_conv_losses).mean()),
            flex_minus_free_conv_se=float(paired_standard_error(losses["flex"], free_conv_losses)),
        )
        return out

    def free_lbfgs_rounding_ratio(self, fitted: DecoderMethods, test: LinearSystems) -> float:
        """Held-out ``R_L`` of ``fitted.free_lbfgs_alt`` over that of ``fitted.free_lbfgs`` (its ``e2e``)."""
        return depth_risk(fitted.free_lbfgs_alt.P, test, self.L) / self.e2e["free_lbfgs"]


def compare_decoder_methods(
    P: dict[str, np.ndarray],
    test: LinearSystems,
    L: int,
    *,
    P_oracle: np.ndarray,
    clip: float,
    delta: float,
    n_small: int,
) -> DecoderComparison:
    """Score every method's ``P`` ((n_h, n_h) or (n_test, n_h, n_h)) on the held-out systems ``test`` at depth ``L``.

    :func:`iclcore.pde.decoder.decoder_scores` per method (independent tasks of
    :func:`iclcore.parallel.map_configs`), then the clipped empirical-Bernstein bounds (MMNN report §2;
    clipping level ``clip``, failure probability ``delta``) on all per-prompt losses and on the first
    ``n_small``. ``P_oracle`` (n_h, n_h): ``P⋆`` of the diagnostics' distances.
    """
    methods = list(P)
    if not methods:
        raise ValueError("P: expected at least one method")
    scorings = [DecoderScoring(P[m], test, L, P_oracle, clip, delta, n_small) for m in methods]
    scores = map_configs(
        decoder_scores, scorings, thread_budget(), cost=lambda c: np.ndim(c.P), label="pde decoder scores"
    )
    losses = {m: r.losses for m, r in zip(methods, scores, strict=True)}
    e2e = {m: float(losses[m].mean()) for m in methods}
    return DecoderComparison(
        methods=methods,
        diagnostics={m: r.diagnostics for m, r in zip(methods, scores, strict=True)},
        losses=losses,
        risk_curves={m: r.risk_curve for m, r in zip(methods, scores, strict=True)},
        e2e=e2e,
        eb={m: clipped_empirical_bernstein(losses[m], clip, delta) for m in methods},
        eb_small={m: clipped_empirical_bernstein(losses[m][:n_small], clip, delta) for m in methods},
        best=min(e2e, key=e2e.get),
        L=L,
    )
