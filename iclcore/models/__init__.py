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

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.models.attention import sample_iso_contexts``.
"""

__all__ = ["attention", "flexformer", "gpt_mini", "lsa", "probes", "softmax", "toy_transformers", "training"]
