"""In-context least squares: the foundation every chapter family builds on.

A prompt is a least-squares problem ``H β = c`` built from ``M`` noisy pairs ``(x_i, y_i)`` of a task
``β`` (main paper §1–§2). This subpackage holds what the families share about it; it imports only the utilities
(:mod:`iclcore.validation`, :mod:`iclcore.linalg`, :mod:`iclcore.stats`).

Public modules:

- :mod:`~iclcore.lsq.dynamics`: Population gradient descent on quadratic objectives, in closed form;
- :mod:`~iclcore.lsq.iterates`: Preconditioned Richardson iteration inside a prompt (inner time ℓ);
- :mod:`~iclcore.lsq.lowrank`: The low-rank task model of the encoder+decoder experiments (main paper §1.2,
  §6; report §5.2): ``x ~ N(0, Σ_x)``, ``β = U⋆ z`` with ``z ~ N(0, Σ_z)``, prompts of ``M`` noisy pairs with
  their ridge systems ``H_M``, ``c_M`` and estimates ``β̂``;
- :mod:`~iclcore.lsq.moments`: Population moments of the decoder pair and the oracle preconditioner;
- :mod:`~iclcore.lsq.tasks`: Least-squares tasks as prompts: the finite reduction of main paper §1.2.

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.lsq import TaskConfig`` is
``from iclcore.lsq.tasks import TaskConfig``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "dynamics": (
        "Spectrum",
        "check_step_size",
        "covariance_from_spectrum",
        "decoder_moments",
        "encoder_moments",
        "excess_risk",
        "gd_iterate",
        "gd_trajectory",
        "modal_energies",
        "modal_entropy",
        "modal_excess_risk",
        "modal_weights",
        "psd_spectrum",
        "quadratic_minimizer",
        "quadratic_risk",
    ),
    "iterates": (
        "Contraction",
        "RichardsonCertificate",
        "contraction_factor",
        "in_context_gd_predict",
        "iteration_matrix",
        "richardson_certificate",
        "richardson_error",
        "richardson_iterates",
        "richardson_sum_form",
        "symmetric_pd_spectral_radius",
    ),
    "lowrank": (
        "LatentPrompts",
        "LowRankModel",
        "latent_systems",
        "make_lowrank_model",
        "sample_lowrank_prompts",
    ),
    "moments": (
        "Moments",
        "closed_form_moments",
        "decoder_risk",
        "effective_dimension",
        "monte_carlo_moments",
        "oracle_preconditioner",
        "oracle_risk",
        "population_moments",
        "wishart_sandwich",
    ),
    "tasks": (
        "Prompts",
        "TaskConfig",
        "design_covariance",
        "design_spectrum",
        "ridge_solution",
        "sample_decoder_pairs",
        "sample_prompt_statistics",
        "sample_prompts",
        "sample_tasks",
        "task_basis",
    ),
}

__all__ = [
    "Contraction",
    "LatentPrompts",
    "LowRankModel",
    "Moments",
    "Prompts",
    "RichardsonCertificate",
    "Spectrum",
    "TaskConfig",
    "check_step_size",
    "closed_form_moments",
    "contraction_factor",
    "covariance_from_spectrum",
    "decoder_moments",
    "decoder_risk",
    "design_covariance",
    "design_spectrum",
    "effective_dimension",
    "encoder_moments",
    "excess_risk",
    "gd_iterate",
    "gd_trajectory",
    "in_context_gd_predict",
    "iteration_matrix",
    "latent_systems",
    "make_lowrank_model",
    "modal_energies",
    "modal_entropy",
    "modal_excess_risk",
    "modal_weights",
    "monte_carlo_moments",
    "oracle_preconditioner",
    "oracle_risk",
    "population_moments",
    "psd_spectrum",
    "quadratic_minimizer",
    "quadratic_risk",
    "richardson_certificate",
    "richardson_error",
    "richardson_iterates",
    "richardson_sum_form",
    "ridge_solution",
    "sample_decoder_pairs",
    "sample_lowrank_prompts",
    "sample_prompt_statistics",
    "sample_prompts",
    "sample_tasks",
    "symmetric_pd_spectral_radius",
    "task_basis",
    "wishart_sandwich",
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
