"""Exact mode dynamics of in-context logistic regression (Mainali & Teixeira).

Implements Mainali & Teixeira: the model of §2 (Eqs. 1-8), online SGD on a
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

Public modules:

- :mod:`~iclcore.logistic.exact`: Exact expected dynamics of the stated logistic-mode model (``p1 = q2 = 0``)
  at any context length ``N``: expected loss and gradients, mode loss and gradients, fixed point, the
  integrated mode flow, Monte Carlo loss and crossing times;
- :mod:`~iclcore.logistic.model`: The model of Mainali & Teixeira §2 (Eqs. 1-8): problem (covariance
  eigenbasis, tasks), embedding, one-layer linear transformer, read-out blocks, contexts, loss and gradients,
  and the conserved quantity;
- :mod:`~iclcore.logistic.probes`: The curvature probes of the loss and the parameter norm and their extrema, on
  one run and on replica means of growing size (the finite-size check; §4, Fig. 4A-B);
- :mod:`~iclcore.logistic.regimes`: Training regimes compared with the paper's theory and the exact flow: fixed
  point, trajectories and conserved ``C``, end loss, plateaus and cliffs, the probes of §4 with their null and
  finite-size check, the null blocks (Figs. 1-4);
- :mod:`~iclcore.logistic.replicas`: Estimates from independent SGD replicas and their standard errors: the
  fixed point, half-saturation and crossing times, relative RMS deviations (§3, Figs. 1-3);
- :mod:`~iclcore.logistic.sgd`: Online SGD of the logistic-mode model on a fixed set of tasks (Mainali &
  Teixeira §2.3, App. A.8), with mode products of the trained blocks;
- :mod:`~iclcore.logistic.theory`: The paper's theory (Mainali & Teixeira §3, App. A.11-A.13): mode ODE (12),
  logistic solution (13), loss (14), its limit, fixed point, timescales, half and cliff times;
- :mod:`~iclcore.logistic.transformer_probes`: The probes of §4 on trained non-linear stand-in models: marginalized
  effective rank and subspace distance per depth, staggered minima over seeds, grokking (Figs. 3B, 5-7).

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.logistic import make_problem`` is
``from iclcore.logistic.model import make_problem``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "exact": (
        "crossing_times",
        "exact_expected_gradients",
        "exact_expected_loss",
        "exact_fixed_point",
        "exact_fixed_point_loss",
        "exact_mode_gradients",
        "exact_mode_loss",
        "integrate_mode_flow",
        "monte_carlo_loss",
    ),
    "model": (
        "LogisticProblem",
        "blocks_from_weights",
        "conserved_quantity",
        "conserved_quantity_step_ratio",
        "embed",
        "loss_and_gradients",
        "make_problem",
        "mode_blocks",
        "predictor",
        "readout",
        "sample_contexts",
        "task_moments",
        "task_variances",
        "transformer_forward",
    ),
    "probes": (
        "CurvatureProbes",
        "batched_lag_autocorrelation",
        "curvature_probes",
        "replica_sweep_extrema_counts",
    ),
    "regimes": (
        "EndLoss",
        "ExtremaScaling",
        "FixedPointChecks",
        "FixedPointComparison",
        "ModeProbes",
        "NullBlockRun",
        "PlateauAnalysis",
        "RegimeRun",
        "TrajectoryComparison",
        "end_loss_comparison",
        "extrema_count_scaling",
        "fixed_point_checks",
        "fixed_point_comparison",
        "isotropic_fixed_point_deviation",
        "max_relative_deviation",
        "mode_probes",
        "null_block_metrics",
        "null_block_run",
        "plateau_analysis",
        "simulate_regime",
        "trajectory_comparison",
    ),
    "replicas": (
        "FixedPointEstimate",
        "HalfTimeEstimate",
        "crossing_time_standard_error",
        "fixed_point_estimate",
        "half_time_estimate",
        "relative_rms",
        "tail_window",
    ),
    "sgd": (
        "SGDConfig",
        "SGDResult",
        "mode_products",
        "run_sgd",
    ),
    "theory": (
        "cliff_time",
        "half_time",
        "logistic_solution",
        "paper_fixed_point",
        "paper_initial_slope",
        "paper_loss",
        "paper_loss_infinity",
        "paper_mode_rhs",
        "paper_t_star",
        "s_infinity",
        "timescales",
    ),
    "transformer_probes": (
        "DepthProbes",
        "GrokkingProbes",
        "StaggeredMinima",
        "depth_probes",
        "grokking_probes",
        "icl_depth_metrics",
        "staggered_minima",
    ),
}

__all__ = [
    "CurvatureProbes",
    "DepthProbes",
    "EndLoss",
    "ExtremaScaling",
    "FixedPointChecks",
    "FixedPointComparison",
    "FixedPointEstimate",
    "GrokkingProbes",
    "HalfTimeEstimate",
    "LogisticProblem",
    "ModeProbes",
    "NullBlockRun",
    "PlateauAnalysis",
    "RegimeRun",
    "SGDConfig",
    "SGDResult",
    "StaggeredMinima",
    "TrajectoryComparison",
    "batched_lag_autocorrelation",
    "blocks_from_weights",
    "cliff_time",
    "conserved_quantity",
    "conserved_quantity_step_ratio",
    "crossing_time_standard_error",
    "crossing_times",
    "curvature_probes",
    "depth_probes",
    "embed",
    "end_loss_comparison",
    "exact_expected_gradients",
    "exact_expected_loss",
    "exact_fixed_point",
    "exact_fixed_point_loss",
    "exact_mode_gradients",
    "exact_mode_loss",
    "extrema_count_scaling",
    "fixed_point_checks",
    "fixed_point_comparison",
    "fixed_point_estimate",
    "grokking_probes",
    "half_time",
    "half_time_estimate",
    "icl_depth_metrics",
    "integrate_mode_flow",
    "isotropic_fixed_point_deviation",
    "logistic_solution",
    "loss_and_gradients",
    "make_problem",
    "max_relative_deviation",
    "mode_blocks",
    "mode_probes",
    "mode_products",
    "monte_carlo_loss",
    "null_block_metrics",
    "null_block_run",
    "paper_fixed_point",
    "paper_initial_slope",
    "paper_loss",
    "paper_loss_infinity",
    "paper_mode_rhs",
    "paper_t_star",
    "plateau_analysis",
    "predictor",
    "readout",
    "relative_rms",
    "replica_sweep_extrema_counts",
    "run_sgd",
    "s_infinity",
    "sample_contexts",
    "simulate_regime",
    "staggered_minima",
    "tail_window",
    "task_moments",
    "task_variances",
    "timescales",
    "trajectory_comparison",
    "transformer_forward",
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
