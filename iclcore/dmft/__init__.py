"""DMFT theory of in-context linear regression by deep linear attention (Bordelon, Letey, Pehlevan).

The reduced-Γ model reduces a depth-``L`` linear-attention model with tied layers to a single
``D x D`` matrix ``Γ`` acting as the preconditioner of ``L`` steps of in-context gradient descent
(§2.2, Eq. 4; App. B.2, Eqs. 51–59; :func:`iclcore.lsq.iterates.in_context_gd_predict`).
With ``b_0 = 0``, ``c = Xᵀy / P`` and ``Σ̂ = XᵀX / P`` (rows of ``X`` are the ``P`` context inputs),

.. math::

    b_{\\ell+1} = b_\\ell + L^{-1}\\,\\Gamma\\,(c - \\hat\\Sigma b_\\ell), \\qquad f(x_*) = x_*^\\top b_L ,

and the population ICL loss of one context is ``|Σ^{1/2}(b_L - b_*)|² + σ²`` with ``b_* = β/√D``.

Conventions fixed once for the reduced-Γ modules
------------------------------------------------
* ``tr`` is the normalised trace ``(1/D) Tr``; every loss is ``O(1)`` and equals ``1 + σ²`` at ``Γ = 0``
  for ISO data (``tr ΩΛ + σ²`` in general).
* Context length ``P = αD``; the spectrum of ``Σ̂`` is Marchenko–Pastur with ratio ``D/P = 1/α``,
  i.e. ``iclcore.spectra.mp`` with ``gamma = 1/alpha`` (law of ``(1/M) XᵀX`` for ``X`` of shape
  ``(M, K) = (P, D)``).
* Theory time: gradient flow ``dγ/dt = -½ ∂L/∂γ`` (Bordelon et al. Eqs. 7, 10, 13, 83). The simulation
  takes SGD steps ``Γ ← Γ + η G`` with ``G = -(D/2) ∇_Γ L̂_batch`` (the ``G`` of Eq. 62); since
  ``∇_Γ L(γI) = L'(γ) I / D`` this gives theory time ``t = Σ_steps η`` exactly.
* Power-law data: ``λ_k = k^{-ν}`` and ``ω_k λ_k = k^{-νβ-1} / Z`` with ``Z`` such that
  ``tr ΩΛ = 1`` (source/capacity conditions of Eqs. 17/88).

The width-``N`` model
---------------------
The width-N model of Bordelon et al. (Eq. 14) sees features ``A x`` with ``A`` a rank-``N`` projection.
Its in-context preconditioner in ``D``-space is a rotated projection, and with RRS data the
population loss of the reduced model depends on one scalar ``gamma``:

.. math::

    \\begin{gathered}
    \\mathcal L(\\gamma) = \\mathrm{tr}\\,\\Big\\langle \\Lambda\\, p(M)\\, \\Omega\\, p(M)^\\top \\Big\\rangle,\\\\
    M = c\\,U U^\\top \\hat\\Sigma,\\qquad p(x) = (1 - \\gamma x / L)^L,
    \\end{gathered}

where ``U`` (``D x N``) has Haar-distributed orthonormal columns, ``hat Sigma`` is the context's
empirical covariance (``Lambda`` when the context length ``P`` is infinite) and ``tr`` is the
normalised trace ``(1/D) Tr``.

Normalisation (a documented choice of the book). We take ``c = D/N`` so that the preconditioner
is ``Gamma_D = gamma (D/N) U U^T``: at ``N = D`` it is ``gamma I`` and the top eigenvalue of ``M``
stays O(1) for every ``N``. The paper's F.4 uses ``c = 1`` (``(A^T A)^2`` a rank-``N`` projection),
i.e. ``gamma_paper = gamma D / N``. Losses at the optimum and the ``t -> infinity`` bottlenecks do
not depend on this choice; the ``gamma`` axis and the gradient-flow clock do.

Public modules:

- :mod:`~iclcore.dmft.data`: Data of the reduced-Γ theory (Bordelon, Letey, Pehlevan): power-law covariance
  and task spectra under the source/capacity conditions, and the Marchenko–Pastur quadrature rule of ``Σ̂ =
  XᵀX/P``;
- :mod:`~iclcore.dmft.figures`: Figures of the reduced-Γ model, SGD against its theory (Figures 1 and 7, Result 10):
  the panels drawn on given matplotlib axes from the result objects of the family;
- :mod:`~iclcore.dmft.finite_context`: Isotropic-layer losses at finite context length by Monte Carlo over
  ``Σ̂``: the eigen-data of drawn empirical covariances shared by the App. G.1.2 and G.2 losses;
- :mod:`~iclcore.dmft.fs`: FS setting of the reduced-Γ model (Bordelon et al. §3.2, App. D): ``α = ∞``, ``Σ =
  diag(λ)``, ``Ω = diag(ω)``; mode flows, loss curves and out-of-distribution loss under rotated covariances;
- :mod:`~iclcore.dmft.full_attention`: Full linear attention against its reduced theory (Bordelon et al. §5.1-5.2,
  Result 9, Figure 6, App. G.2): SGD against the ``γ = c s⁵`` flow, the late-time exponent of Eq. 22 and the
  trainable read-in/read-out against Eq. 124;
- :mod:`~iclcore.dmft.isotropy`: Identities checked by code (Results 1 and 6, Eqs. 3–4, 52–58): gradient descent on a
  Pauli-symmetrised sample stays isotropic, and the masked linear attention computes ``L`` steps of in-context GD;
- :mod:`~iclcore.dmft.iso`: ISO setting of the reduced-Γ model (Bordelon et al. §3.1, App. C): loss, gradient,
  optimum (with the Catalan closed form), gradient flow and finite-``D`` Monte Carlo;
- :mod:`~iclcore.dmft.readout`: Full linear attention with trainable read-in and read-out (Bordelon et al.
  §5.2, App. G.2, Eq. 124): the loss in ``(w_o w_y, γ)``, its gradient flow (transient blow-up and recovery
  of the read-out scale) and the trainable network;
- :mod:`~iclcore.dmft.reduced_sgd`: Reduced-Γ SGD simulation (Bordelon et al. §2.2 Eq. 4, App. B.2 Eqs. 54–55,
  App. C.1 Eq. 62) and the Monte Carlo population loss of a fixed ``Γ``;
- :mod:`~iclcore.dmft.nested`: Nested deterministic equivalent of the width-``N`` model at finite context
  length ``P`` (Bordelon et al. Result 7, Eq. 15; App. A, F.3–F.4), its gradient flow, the Monte Carlo it is
  checked against, the separable (Chinchilla) fit of Eq. 18 and the compute-optimal frontier (Result 8);
- :mod:`~iclcore.dmft.rrs`: RRS setting of the reduced-Γ model at ``P = ∞``, ``N = D`` (Bordelon et al. §3.3,
  Result 6, Eqs. 13, 94, 98): loss, gradient, optimum and gradient flow;
- :mod:`~iclcore.dmft.scaling`: Scaling-law bottlenecks (Bordelon et al. Result 8, App. F.2, F.4): width and
  context bottlenecks (closed form, as printed, Monte Carlo), the predicted exponents and power-law fits;
- :mod:`~iclcore.dmft.sgd_noise`: Depth-1 ISO online SGD vectorised over seeds (App. C.1, Result 10): the exact
  finite-``D`` mean path, the SGD noise around it and its plateau ``b/(1 − a)``;
- :mod:`~iclcore.dmft.sgd_sweep`: Late SGD bias of the reduced-Γ model against its gradient flow swept over
  ``(η, B)`` with independent runs (App. C.1; the width model of §4 and the untied layers of §5.1);
- :mod:`~iclcore.dmft.shallow_sgd`: Shallow SGD theory of the reduced-Γ model (Bordelon et al. App. C.1,
  Result 10) with the corrected initial condition;
- :mod:`~iclcore.dmft.untied`: Untied layers at ``N = D``, ``P = ∞`` (Bordelon et al. §5.1, Eq. 19/117, App.
  G.1): the loss, the Hessian at the balanced point and the global untied optimum; with label noise at finite
  context length (App. G.1.2, Eq. 122);
- :mod:`~iclcore.dmft.untied_sgd`: SGD of untied layers against the recurrent theory (Bordelon et al. §5.1, Figure 8;
  App. G.1.2, Eq. 122): the late bias and its batch scaling, the balanced optimum inside the untied landscape
  and the label-noise comparison;
- :mod:`~iclcore.dmft.width_de`: Deterministic equivalents of the width-``N`` model (``N, D → ∞`` at fixed
  ``N/D``): the one-point function by contour integration, and the Appendix-A two-point deterministic
  equivalent (Eq. 15, 36–40) of a free product ``M = O B Oᵀ A`` with the double contour integral for the loss;
- :mod:`~iclcore.dmft.width_scaling`: Width and depth bottlenecks of deep linear attention, checked (Bordelon et al.
  §4, Result 8, Figure 5, App. A, F): loss curves over width, depth and compute, SGD against the flow and its
  noise scaling, the deterministic equivalents against Monte Carlo and the bottleneck exponents;
- :mod:`~iclcore.dmft.width_mc`: Width-``N`` deep linear attention on RRS data by Monte Carlo (Bordelon et al.
  §4, Eq. 14, 19, 102): Haar frames, the one-point reduction at ``P = ∞`` (exact in distribution at finite
  ``D``) with its gradient flow, and the general Monte Carlo at finite width and context.

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.dmft import iso_loss`` is
``from iclcore.dmft.iso import iso_loss``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "data": (
        "mp_rule",
        "power_law_spectrum",
    ),
    "figures": (
        "plot_iso_sgd_grid",
        "plot_kappa_noise_check",
        "plot_noise_scale_sweep",
        "plot_shallow_sgd_sweep",
    ),
    "finite_context": (
        "ContextDraws",
        "context_draws",
        "tied_loss_from_moments",
        "tied_loss_moments",
    ),
    "fs": (
        "FSDepthComparison",
        "OODBrittleness",
        "fs_depth_comparison",
        "fs_loss",
        "fs_loss_curve",
        "fs_mode_flow",
        "fs_mode_flow_paper",
        "fs_paper_solution_deviation",
        "ood_brittleness",
        "ood_loss",
        "random_skew",
        "rotated_covariance",
    ),
    "full_attention": (
        "LateBiasByDepth",
        "PowerFiveComparison",
        "ReadoutComparison",
        "TimeExponentFits",
        "decaying_step_times",
        "power_five_comparisons",
        "power_five_time_exponents",
        "readout_comparison",
    ),
    "iso": (
        "IsoNoiseOptimum",
        "IsoOptimumChecks",
        "iso_depth1_flow",
        "iso_flow_reach_time",
        "iso_gradient_flow",
        "iso_loss",
        "iso_loss_finite_d_mc",
        "iso_loss_grad",
        "iso_noise_optimum",
        "iso_optimum",
        "iso_optimum_checks",
        "iso_optimum_closed_form",
        "iso_optimum_finite_d_mc",
    ),
    "isotropy": (
        "InContextGDIdentity",
        "SymmetrisedFlow",
        "in_context_gd_identity",
        "masked_linear_attention",
        "off_isotropic_fraction",
        "pauli_group",
        "reduced_attention_weights",
        "symmetrised_descent",
    ),
    "nested": (
        "ChinchillaFit",
        "NestedConvergenceError",
        "NestedKernel",
        "chinchilla_drift",
        "compute_optimal_frontier",
        "fit_chinchilla",
        "nested_flow_loss",
        "nested_kappa",
        "nested_kernel",
        "nested_landscape_draws",
        "nested_loss",
        "nested_loss_de",
        "nested_loss_grad",
        "nested_min_loss",
        "nested_ratios",
        "nested_spectral_bound",
    ),
    "readout": (
        "FullAttentionRun",
        "PowerFiveTheory",
        "PowerLawFlowJob",
        "ReadoutAttention",
        "ReadoutFlow",
        "ReadoutRun",
        "ReadoutSGDRun",
        "full_attention_run",
        "power_five_theory",
        "power_law_flow",
        "readout_descent_path",
        "readout_flow",
        "readout_loss",
        "readout_peak_standard_error",
        "readout_sgd_run",
        "train_readout",
    ),
    "reduced_sgd": (
        "FSSGDComparison",
        "IsoSGDGrid",
        "IsoSGDRun",
        "PlateauComparison",
        "PlateauGapScaling",
        "RRSSGDComparison",
        "ReducedGammaSGDConfig",
        "ReducedGammaSGDResult",
        "ShallowISORuns",
        "ShallowSGDComparison",
        "ShallowSGDSweep",
        "block_mean_relative_deviation",
        "flow_deviation_at_checkpoints",
        "fs_sgd_comparison",
        "iso_sgd_grid",
        "plateau_comparison",
        "plateau_gap_size_scaling",
        "reduced_gamma_loss_mc",
        "rrs_sgd_comparison",
        "shallow_iso_sgd_runs",
        "shallow_sgd_comparison",
        "shallow_sgd_sweep",
        "simulate_reduced_gamma_sgd",
    ),
    "rrs": (
        "rrs_gradient_flow",
        "rrs_loss",
        "rrs_loss_grad",
        "rrs_optimum",
        "rrs_time_of_gamma",
    ),
    "scaling": (
        "ExponentRow",
        "FittedExponent",
        "compute_optimal_shape_exponent",
        "context_bottleneck",
        "context_bottleneck_mc",
        "context_bottleneck_paper",
        "fitted_scaling_exponent",
        "scalar_descent_path",
        "scaling_exponent_table",
        "scaling_exponents",
        "width_bottleneck",
        "width_bottleneck_mc",
        "width_bottleneck_paper",
    ),
    "sgd_noise": (
        "KappaNoiseCheck",
        "NoisePlateau",
        "NoiseScaleSweep",
        "ShallowSGDEnsemble",
        "kappa_noise_check",
        "noise_plateau",
        "noise_plateau_ratio",
        "noise_plateau_slope",
        "noise_plateau_theory",
        "noise_scale_sweep",
        "shallow_mean_path",
        "shallow_sgd_ensemble",
    ),
    "sgd_sweep": (
        "NoiseScaling",
        "ReducedSGDTask",
        "SweepPoint",
        "late_bias_sweep",
        "noise_scaling",
        "reduced_sgd_gamma_path",
    ),
    "shallow_sgd": (
        "ShallowSGDTheory",
        "shallow_sgd_theory",
    ),
    "untied": (
        "BalancedStability",
        "UntiedSGDRun",
        "balanced_optimum_stability",
        "untied_balanced_hessian",
        "untied_loss",
        "untied_noisy_flow",
        "untied_noisy_loss",
        "untied_optimum",
        "untied_sgd_run",
    ),
    "untied_sgd": (
        "LabelNoiseComparison",
        "UntiedComparison",
        "UntiedOptimumChecks",
        "batch_bias_metrics",
        "label_noise_batch_metrics",
        "untied_batch_sweep",
        "untied_comparison",
        "untied_label_noise_comparison",
        "untied_optimum_checks",
        "untied_over_balanced_optimum",
    ),
    "width_de": (
        "free_product_psi",
        "two_point_F",
        "two_point_loss_de",
        "width_loss_de",
        "width_psi",
    ),
    "width_mc": (
        "GradientFlow",
        "WidthLandscapeJob",
        "WidthSGDRun",
        "WidthSpectrum",
        "WidthSpectrumJob",
        "haar_columns",
        "width_gradient_flow",
        "width_landscape_job",
        "width_landscape_jobs",
        "width_landscape_mc",
        "width_loss",
        "width_loss_draws",
        "width_loss_grad",
        "width_loss_se",
        "width_min_loss",
        "width_sgd_run",
        "width_spectrum_job",
        "width_spectrum_jobs",
        "width_spectrum_mc",
    ),
    "width_scaling": (
        "BottleneckExponents",
        "DeterministicEquivalentChecks",
        "OnePointAgainstDraws",
        "OnePointCheck",
        "ResourceSweep",
        "TwoPointCheck",
        "WidthDepthCurves",
        "WidthLateBias",
        "WidthSGDComparison",
        "bottleneck_exponents",
        "deterministic_equivalent_checks",
        "eta_batch_bias_metrics",
        "eta_batch_configs",
        "one_point_against_draws",
        "sgd_gamma_path_or_nan",
        "width_depth_scaling",
        "width_late_bias_runs",
        "width_noise_sweep",
        "width_sgd_comparison",
    ),
}

__all__ = [
    "BalancedStability",
    "BottleneckExponents",
    "ChinchillaFit",
    "ContextDraws",
    "DeterministicEquivalentChecks",
    "ExponentRow",
    "FSDepthComparison",
    "FSSGDComparison",
    "FittedExponent",
    "FullAttentionRun",
    "GradientFlow",
    "InContextGDIdentity",
    "IsoNoiseOptimum",
    "IsoOptimumChecks",
    "IsoSGDGrid",
    "IsoSGDRun",
    "KappaNoiseCheck",
    "LabelNoiseComparison",
    "LateBiasByDepth",
    "NestedConvergenceError",
    "NestedKernel",
    "NoisePlateau",
    "NoiseScaleSweep",
    "NoiseScaling",
    "OODBrittleness",
    "OnePointAgainstDraws",
    "OnePointCheck",
    "PlateauComparison",
    "PlateauGapScaling",
    "PowerFiveComparison",
    "PowerFiveTheory",
    "PowerLawFlowJob",
    "RRSSGDComparison",
    "ReadoutAttention",
    "ReadoutComparison",
    "ReadoutFlow",
    "ReadoutRun",
    "ReadoutSGDRun",
    "ReducedGammaSGDConfig",
    "ReducedGammaSGDResult",
    "ReducedSGDTask",
    "ResourceSweep",
    "ShallowISORuns",
    "ShallowSGDComparison",
    "ShallowSGDEnsemble",
    "ShallowSGDSweep",
    "ShallowSGDTheory",
    "SweepPoint",
    "SymmetrisedFlow",
    "TimeExponentFits",
    "TwoPointCheck",
    "UntiedComparison",
    "UntiedOptimumChecks",
    "UntiedSGDRun",
    "WidthDepthCurves",
    "WidthLandscapeJob",
    "WidthLateBias",
    "WidthSGDComparison",
    "WidthSGDRun",
    "WidthSpectrum",
    "WidthSpectrumJob",
    "balanced_optimum_stability",
    "batch_bias_metrics",
    "block_mean_relative_deviation",
    "bottleneck_exponents",
    "chinchilla_drift",
    "compute_optimal_frontier",
    "compute_optimal_shape_exponent",
    "context_bottleneck",
    "context_bottleneck_mc",
    "context_bottleneck_paper",
    "context_draws",
    "decaying_step_times",
    "deterministic_equivalent_checks",
    "eta_batch_bias_metrics",
    "eta_batch_configs",
    "fit_chinchilla",
    "fitted_scaling_exponent",
    "flow_deviation_at_checkpoints",
    "free_product_psi",
    "fs_depth_comparison",
    "fs_loss",
    "fs_loss_curve",
    "fs_mode_flow",
    "fs_mode_flow_paper",
    "fs_paper_solution_deviation",
    "fs_sgd_comparison",
    "full_attention_run",
    "haar_columns",
    "in_context_gd_identity",
    "iso_depth1_flow",
    "iso_flow_reach_time",
    "iso_gradient_flow",
    "iso_loss",
    "iso_loss_finite_d_mc",
    "iso_loss_grad",
    "iso_noise_optimum",
    "iso_optimum",
    "iso_optimum_checks",
    "iso_optimum_closed_form",
    "iso_optimum_finite_d_mc",
    "iso_sgd_grid",
    "kappa_noise_check",
    "label_noise_batch_metrics",
    "late_bias_sweep",
    "masked_linear_attention",
    "mp_rule",
    "nested_flow_loss",
    "nested_kappa",
    "nested_kernel",
    "nested_landscape_draws",
    "nested_loss",
    "nested_loss_de",
    "nested_loss_grad",
    "nested_min_loss",
    "nested_ratios",
    "nested_spectral_bound",
    "noise_plateau",
    "noise_plateau_ratio",
    "noise_plateau_slope",
    "noise_plateau_theory",
    "noise_scale_sweep",
    "noise_scaling",
    "off_isotropic_fraction",
    "one_point_against_draws",
    "ood_brittleness",
    "ood_loss",
    "pauli_group",
    "plateau_comparison",
    "plateau_gap_size_scaling",
    "plot_iso_sgd_grid",
    "plot_kappa_noise_check",
    "plot_noise_scale_sweep",
    "plot_shallow_sgd_sweep",
    "power_five_comparisons",
    "power_five_theory",
    "power_five_time_exponents",
    "power_law_flow",
    "power_law_spectrum",
    "random_skew",
    "readout_comparison",
    "readout_descent_path",
    "readout_flow",
    "readout_loss",
    "readout_peak_standard_error",
    "readout_sgd_run",
    "reduced_attention_weights",
    "reduced_gamma_loss_mc",
    "reduced_sgd_gamma_path",
    "rotated_covariance",
    "rrs_gradient_flow",
    "rrs_loss",
    "rrs_loss_grad",
    "rrs_optimum",
    "rrs_sgd_comparison",
    "rrs_time_of_gamma",
    "scalar_descent_path",
    "scaling_exponent_table",
    "scaling_exponents",
    "sgd_gamma_path_or_nan",
    "shallow_iso_sgd_runs",
    "shallow_mean_path",
    "shallow_sgd_comparison",
    "shallow_sgd_ensemble",
    "shallow_sgd_sweep",
    "shallow_sgd_theory",
    "simulate_reduced_gamma_sgd",
    "symmetrised_descent",
    "tied_loss_from_moments",
    "tied_loss_moments",
    "train_readout",
    "two_point_F",
    "two_point_loss_de",
    "untied_balanced_hessian",
    "untied_batch_sweep",
    "untied_comparison",
    "untied_label_noise_comparison",
    "untied_loss",
    "untied_noisy_flow",
    "untied_noisy_loss",
    "untied_optimum",
    "untied_optimum_checks",
    "untied_over_balanced_optimum",
    "untied_sgd_run",
    "width_bottleneck",
    "width_bottleneck_mc",
    "width_bottleneck_paper",
    "width_depth_scaling",
    "width_gradient_flow",
    "width_landscape_job",
    "width_landscape_jobs",
    "width_landscape_mc",
    "width_late_bias_runs",
    "width_loss",
    "width_loss_de",
    "width_loss_draws",
    "width_loss_grad",
    "width_loss_se",
    "width_min_loss",
    "width_noise_sweep",
    "width_psi",
    "width_sgd_comparison",
    "width_sgd_run",
    "width_spectrum_job",
    "width_spectrum_jobs",
    "width_spectrum_mc",
]


def __getattr__(name: str) -> object:
    """The public function or class ``name``, imported from its module on first use (PEP 562)."""
    for module, names in _EXPORTS.items():
        if name in names:
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# END GENERATED EXPORTS
