"""When in-context learning implements gradient descent (Nagy): the identity families and our matrix
lifts, the von Oswald et al. (2023) construction, the §8.1 synthetic panel and an offline miniature
of the depth-contraction probe.

Public modules:

- :mod:`~iclcore.gd.appendix_statements`: The statements of Nagy App. A as
  :class:`~iclcore.gd.statements.Statement` records: the families V (the attention construction), M (the
  matrix ladder) and MN (arbitrary dimension; reconstructed, their printed statements are cut by a lost "<");
- :mod:`~iclcore.gd.construction`: The von Oswald et al. (2023) construction as explicit attention weights
  (Nagy App. A, V1–V3);
- :mod:`~iclcore.gd.depth_probe`: Offline miniature of the depth-contraction probe of Nagy §8.2–§8.5;
- :mod:`~iclcore.gd.identities`: The identity families of Nagy (§1–§7, App. A) as data: statement, hypotheses,
  a sympy certificate and an exact-rational evaluation on points drawn *inside* each domain;
- :mod:`~iclcore.gd.matrix_lifts`: Our matrix lifts of the scalar ladder of Nagy (not in the paper): ``e+ = (I
  - P H) e``, the descent condition, the Newton step and layer-varying steps, with numerical and exact
  helpers;
- :mod:`~iclcore.gd.scalar_statements`: The statements of Nagy §1–§7 as
  :class:`~iclcore.gd.statements.Statement` records: the ring identities (§1.1, §3, §4) and the families A
  (§2–§4), B (§5), C (§6) and D (§7);
- :mod:`~iclcore.gd.statements`: The record of one identity of Nagy (:class:`Statement`), the scalar model of
  Nagy §1, and the helpers that map unit-interval parameters into each statement's domain;
- :mod:`~iclcore.gd.synthetic`: The synthetic convergence panel of Nagy §8.1 (Figure 1).

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.gd import von_oswald_layers`` is
``from iclcore.gd.construction import von_oswald_layers``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "construction": (
        "TrainedRuns",
        "gd_predict",
        "gd_weights",
        "lsa_forward",
        "optimal_single_step",
        "sample_regression",
        "squared_loss_half",
        "train_lsa_runs",
        "train_one_layer_lsa",
        "von_oswald_layers",
    ),
    "depth_probe": (
        "ProbeRun",
        "ProbeSweep",
        "ProbeTasks",
        "ProbeTraining",
        "bos_profile",
        "checkpoint_steps",
        "compiled_gpt_loss",
        "gpt_batch_loss",
        "half_max_step",
        "iid_noise_reference",
        "implicit_weights",
        "late_early_ratio",
        "layer_shuffled",
        "probe_checkpoint",
        "probe_run_metrics",
        "probe_sweep_metrics",
        "probe_train_config",
        "probe_training_run",
        "probe_training_sweep",
        "readout_statistics",
        "resolved_improving_fraction",
        "richardson_fit",
        "robust_readout_statistics",
        "sample_probe_tasks",
        "train_with_checkpoints",
    ),
    "identities": (
        "certify",
        "evaluate",
        "identity_table",
        "statement",
    ),
    "matrix_lifts": (
        "descent_condition_holds",
        "layer_varying_error",
        "matrix_lift_statements",
        "matrix_loss_decrease",
        "rational_orthogonal",
    ),
    "statements": (
        "Statement",
        "expanded",
        "gd_step",
        "gradient",
        "loss",
        "minimizer_point",
        "unit_to_nonnegative",
        "unit_to_real",
    ),
    "synthetic": (
        "ChannelPanel",
        "compounding",
        "eigenchannel_panel",
        "scalar_loss_ratio",
        "spectrum_design",
    ),
}

__all__ = [
    "ChannelPanel",
    "ProbeRun",
    "ProbeSweep",
    "ProbeTasks",
    "ProbeTraining",
    "Statement",
    "TrainedRuns",
    "bos_profile",
    "certify",
    "checkpoint_steps",
    "compiled_gpt_loss",
    "compounding",
    "descent_condition_holds",
    "eigenchannel_panel",
    "evaluate",
    "expanded",
    "gd_predict",
    "gd_step",
    "gd_weights",
    "gpt_batch_loss",
    "gradient",
    "half_max_step",
    "identity_table",
    "iid_noise_reference",
    "implicit_weights",
    "late_early_ratio",
    "layer_shuffled",
    "layer_varying_error",
    "loss",
    "lsa_forward",
    "matrix_lift_statements",
    "matrix_loss_decrease",
    "minimizer_point",
    "optimal_single_step",
    "probe_checkpoint",
    "probe_run_metrics",
    "probe_sweep_metrics",
    "probe_train_config",
    "probe_training_run",
    "probe_training_sweep",
    "rational_orthogonal",
    "readout_statistics",
    "resolved_improving_fraction",
    "richardson_fit",
    "robust_readout_statistics",
    "sample_probe_tasks",
    "sample_regression",
    "scalar_loss_ratio",
    "spectrum_design",
    "squared_loss_half",
    "statement",
    "train_lsa_runs",
    "train_one_layer_lsa",
    "train_with_checkpoints",
    "unit_to_nonnegative",
    "unit_to_real",
    "von_oswald_layers",
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
