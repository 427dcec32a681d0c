"""Spectra: the Marchenko-Pastur law and its quadrature, and the spectra of prompt statistics.

Public modules:

- :mod:`~iclcore.spectra.mp`: Marchenko–Pastur toolkit: density, atom, edges, Stieltjes transform, moments,
  quadrature;
- :mod:`~iclcore.spectra.prompt`: Prompt spectra: whitened prompt covariance, non-asymptotic concentration,
  Hessian perturbation.

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.spectra import mp_density`` is
``from iclcore.spectra.mp import mp_density``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "mp": (
        "mp_atom",
        "mp_cdf",
        "mp_density",
        "mp_edges",
        "mp_integral",
        "mp_jacobi_matrix",
        "mp_moment",
        "mp_quadrature",
        "mp_sample_eigenvalues",
        "mp_stieltjes",
    ),
    "prompt": (
        "ConcentrationResult",
        "ConcentrationSummary",
        "ConcentrationTable",
        "ExcessRiskExponent",
        "ResolventCheck",
        "ResolventSweep",
        "WhitenedSpectrumSample",
        "concentration_experiment",
        "concentration_failure_bound",
        "concentration_summary",
        "concentration_table",
        "concentration_window",
        "excess_risk_exponent",
        "haar_rotated_covariance",
        "prompt_excess_risk_first_order",
        "prompt_excess_risk_mc",
        "resolvent_perturbation",
        "resolvent_perturbation_sweep",
        "symmetric_inverse_sqrt",
        "whitened_covariance",
        "whitened_spectrum",
        "whitened_spectrum_sample",
        "window_violations",
    ),
}

__all__ = [
    "ConcentrationResult",
    "ConcentrationSummary",
    "ConcentrationTable",
    "ExcessRiskExponent",
    "ResolventCheck",
    "ResolventSweep",
    "WhitenedSpectrumSample",
    "concentration_experiment",
    "concentration_failure_bound",
    "concentration_summary",
    "concentration_table",
    "concentration_window",
    "excess_risk_exponent",
    "haar_rotated_covariance",
    "mp_atom",
    "mp_cdf",
    "mp_density",
    "mp_edges",
    "mp_integral",
    "mp_jacobi_matrix",
    "mp_moment",
    "mp_quadrature",
    "mp_sample_eigenvalues",
    "mp_stieltjes",
    "prompt_excess_risk_first_order",
    "prompt_excess_risk_mc",
    "resolvent_perturbation",
    "resolvent_perturbation_sweep",
    "symmetric_inverse_sqrt",
    "whitened_covariance",
    "whitened_spectrum",
    "whitened_spectrum_sample",
    "window_violations",
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
