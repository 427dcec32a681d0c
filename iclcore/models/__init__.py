"""Models trained by backprop with torch (the only family that imports torch): linear and softmax
attention stacks, the Flexformer, toy transformers, their shared training loop, and probes of trained
weights.

Public modules:

- :mod:`~iclcore.models.attention`: Trainable attention models of Bordelon et al. §5 (torch): full linear
  attention, untied reduced-Γ, softmax;
- :mod:`~iclcore.models.flexformer`: The Flexformer: a task-dependent preconditioner for the depth-``L``
  Richardson decoder (torch);
- :mod:`~iclcore.models.gpt_mini`: A small causal softmax transformer for in-context regression (the "GPT
  miniature");
- :mod:`~iclcore.models.lsa`: Linear self-attention (LSA) on von Oswald tokens, trained by backprop;
- :mod:`~iclcore.models.probes`: Macroscopic probes of learning dynamics (Mainali & Teixeira §4, Eqs. 15-16,
  Fig. 4);
- :mod:`~iclcore.models.softmax`: Softmax attention as a nonlinear Richardson step, and its gauge-invariant
  Q/K kernel;
- :mod:`~iclcore.models.toy_transformers`: Small non-linear transformers trained here, for the probes of
  Mainali & Teixeira §4 (Figs. 3B, 5-7);
- :mod:`~iclcore.models.training`: One training configuration and one training loop for every model trained by
  backprop.

The family exports the public functions and classes of these modules (``__all__``), each imported
from its module on first use, so importing the family imports none of them (why: :mod:`iclcore`):
``from iclcore.models import sample_iso_contexts`` is
``from iclcore.models.attention import sample_iso_contexts``;
the modules stay importable by path.
"""

# BEGIN GENERATED EXPORTS: python -m iclbook.package_exports --write
import importlib

_EXPORTS = {
    "attention": (
        "Contexts",
        "LinearAttention",
        "ReducedGammaStack",
        "SoftmaxAttention",
        "SoftmaxRun",
        "TrainResult",
        "haar_orthogonal_torch",
        "power_five_constant",
        "power_five_flow",
        "sample_iso_contexts",
        "sample_rrs_contexts",
        "softmax_run",
        "train",
    ),
    "flexformer": (
        "Flexformer",
        "FlexformerConfig",
        "KernelDictionaryPreconditioner",
        "PreconditionerJob",
        "TrainingResult",
        "depth_loss",
        "flexformer_variants",
        "frozen_identity_gap",
        "index_features",
        "kernel_dictionary",
        "latent_prompt_sampler",
        "preconditioners_numpy",
        "prompt_sampler",
        "richardson_unroll",
        "train_preconditioner",
        "train_preconditioner_job",
        "train_preconditioners",
    ),
    "gpt_mini": (
        "GPTMini",
        "causal_mask",
        "causal_self_attention",
    ),
    "lsa": (
        "LSAWeights",
        "TrainedLSA",
        "UntiedLSA",
        "lsa_layer",
    ),
    "probes": (
        "block_average",
        "checkpoint_probes",
        "effective_rank_of_values",
        "entropy_effective_rank",
        "find_extrema",
        "first_step_where",
        "lag_autocorrelation",
        "marginalized_effective_rank",
        "moving_average",
        "nearest_event_offset",
        "row_space_angles",
        "row_space_basis",
        "smoothed_derivative",
        "subspace_distance",
        "trailing_average",
        "uniform_window_null_hits",
        "uniform_window_null_rate",
        "window_hits",
    ),
    "softmax": (
        "AttentionConfig",
        "AttentionRun",
        "GaugeCheck",
        "JacobianAnalysis",
        "KernelStats",
        "ProbeQueryAttention",
        "RichardsonStates",
        "TrainHistory",
        "conserved_gap",
        "gauge_check",
        "gauge_transform",
        "head_kernels",
        "jacobian_analysis",
        "kernel_stats",
        "kernel_training_summary",
        "linearized_preconditioner",
        "local_preconditioner",
        "projected_preconditioner",
        "projection_fit",
        "richardson_states",
        "sample_torch_prompts",
        "skew_ratio",
        "train_attention",
        "train_attention_run",
        "train_attention_variants",
        "update_jacobian",
    ),
    "toy_transformers": (
        "AttnConfig",
        "AttnOnlyTransformer",
        "GrokConfig",
        "GrokRun",
        "GrokTransformer",
        "ICLRun",
        "ToyModelJob",
        "embed_tokens",
        "emergence_window",
        "head_matrices",
        "modular_addition_split",
        "periodic_batch",
        "toy_model_cost",
        "train_grokking",
        "train_icl",
        "train_toy_model",
    ),
    "training": (
        "TrainConfig",
        "TrainLog",
        "cadence_steps",
        "to_device",
        "torch_device",
        "train_loop",
    ),
}

__all__ = [
    "AttentionConfig",
    "AttentionRun",
    "AttnConfig",
    "AttnOnlyTransformer",
    "Contexts",
    "Flexformer",
    "FlexformerConfig",
    "GPTMini",
    "GaugeCheck",
    "GrokConfig",
    "GrokRun",
    "GrokTransformer",
    "ICLRun",
    "JacobianAnalysis",
    "KernelDictionaryPreconditioner",
    "KernelStats",
    "LSAWeights",
    "LinearAttention",
    "PreconditionerJob",
    "ProbeQueryAttention",
    "ReducedGammaStack",
    "RichardsonStates",
    "SoftmaxAttention",
    "SoftmaxRun",
    "ToyModelJob",
    "TrainConfig",
    "TrainHistory",
    "TrainLog",
    "TrainResult",
    "TrainedLSA",
    "TrainingResult",
    "UntiedLSA",
    "block_average",
    "cadence_steps",
    "causal_mask",
    "causal_self_attention",
    "checkpoint_probes",
    "conserved_gap",
    "depth_loss",
    "effective_rank_of_values",
    "embed_tokens",
    "emergence_window",
    "entropy_effective_rank",
    "find_extrema",
    "first_step_where",
    "flexformer_variants",
    "frozen_identity_gap",
    "gauge_check",
    "gauge_transform",
    "haar_orthogonal_torch",
    "head_kernels",
    "head_matrices",
    "index_features",
    "jacobian_analysis",
    "kernel_dictionary",
    "kernel_stats",
    "kernel_training_summary",
    "lag_autocorrelation",
    "latent_prompt_sampler",
    "linearized_preconditioner",
    "local_preconditioner",
    "lsa_layer",
    "marginalized_effective_rank",
    "modular_addition_split",
    "moving_average",
    "nearest_event_offset",
    "periodic_batch",
    "power_five_constant",
    "power_five_flow",
    "preconditioners_numpy",
    "projected_preconditioner",
    "projection_fit",
    "prompt_sampler",
    "richardson_states",
    "richardson_unroll",
    "row_space_angles",
    "row_space_basis",
    "sample_iso_contexts",
    "sample_rrs_contexts",
    "sample_torch_prompts",
    "skew_ratio",
    "smoothed_derivative",
    "softmax_run",
    "subspace_distance",
    "to_device",
    "torch_device",
    "toy_model_cost",
    "trailing_average",
    "train",
    "train_attention",
    "train_attention_run",
    "train_attention_variants",
    "train_grokking",
    "train_icl",
    "train_loop",
    "train_preconditioner",
    "train_preconditioner_job",
    "train_preconditioners",
    "train_toy_model",
    "uniform_window_null_hits",
    "uniform_window_null_rate",
    "update_jacobian",
    "window_hits",
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
