"""A Galerkin PDE recast of the encoder–decoder problem (main paper §1.1, §10; MMNN report §5.4).

Public modules:

- :mod:`~iclcore.pde.decoder`: the query decoder's fits and scores as independent tasks (tasks of
  :func:`iclcore.parallel.map_configs`);
- :mod:`~iclcore.pde.galerkin`: P1 finite elements for ``−(a u′)′ + c₀ u = f`` on (0, 1), ``u(0) = u(1) = 0``,
  with an affine coefficient;
- :mod:`~iclcore.pde.gp`: Matérn Gaussian-process forcing and the spectrum of its covariance operator (main
  paper §1.1, §10);
- :mod:`~iclcore.pde.methods`: The methods of the PDE recast's Table 5 (MMNN report Table 5, Figure 5): fitted,
  trained, scored, compared;
- :mod:`~iclcore.pde.prompts`: Prompts of solution/forcing pairs and the ridge prompt encoder (main paper
  §1.1; MMNN report §5.4).

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.pde import sample_gp`` is
``from iclcore.pde.gp import sample_gp``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "decoder": (
        "DecoderScores",
        "DecoderScoring",
        "FreeLinearFit",
        "decoder_scores",
        "free_linear_fit",
    ),
    "galerkin": (
        "AffineOperator",
        "affine_operator",
        "assemble",
        "assemble_direct",
        "discrete_l2_error",
        "load_vector",
        "sample_coefficients",
        "solve",
    ),
    "gp": (
        "GPPromptDiversity",
        "covariance_galerkin_spectrum",
        "covariance_operator_spectrum",
        "empirical_gp_effective_dimension",
        "finite_prompt_effective_dimension",
        "full_mass_matrix",
        "gp_effective_dimension",
        "gp_effective_dimension_bias",
        "gp_prompt_diversity",
        "matern52",
        "matern_covariance",
        "sample_gp",
    ),
    "methods": (
        "DecoderComparison",
        "DecoderMethods",
        "compare_decoder_methods",
        "fit_decoder_methods",
    ),
    "prompts": (
        "EncoderQuality",
        "PDEConfig",
        "PDEPrompts",
        "encoded_query_sampler",
        "encoded_query_systems",
        "encoder_quality",
        "population_oracle",
        "ridge_encoder",
        "sample_pde_prompts",
        "test_function_nodes",
    ),
}

__all__ = [
    "AffineOperator",
    "DecoderComparison",
    "DecoderMethods",
    "DecoderScores",
    "DecoderScoring",
    "EncoderQuality",
    "FreeLinearFit",
    "GPPromptDiversity",
    "PDEConfig",
    "PDEPrompts",
    "affine_operator",
    "assemble",
    "assemble_direct",
    "compare_decoder_methods",
    "covariance_galerkin_spectrum",
    "covariance_operator_spectrum",
    "decoder_scores",
    "discrete_l2_error",
    "empirical_gp_effective_dimension",
    "encoded_query_sampler",
    "encoded_query_systems",
    "encoder_quality",
    "finite_prompt_effective_dimension",
    "fit_decoder_methods",
    "free_linear_fit",
    "full_mass_matrix",
    "gp_effective_dimension",
    "gp_effective_dimension_bias",
    "gp_prompt_diversity",
    "load_vector",
    "matern52",
    "matern_covariance",
    "population_oracle",
    "ridge_encoder",
    "sample_coefficients",
    "sample_gp",
    "sample_pde_prompts",
    "solve",
    "test_function_nodes",
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
