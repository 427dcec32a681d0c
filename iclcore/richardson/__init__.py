"""Linear attention as a Richardson solver (the main paper and its experiment report), built on the
least-squares foundation :mod:`iclcore.lsq`: the encoder/decoder closure and its latent model, the §7
counterexample, the decoder, encoder and encoder-decoder experiments, baselines, order
parameters and task diversity.

Public modules:

- :mod:`~iclcore.richardson.baselines`: Baseline preconditioners for the depth-``L`` Richardson decoder,
  compared on the same tasks;
- :mod:`~iclcore.richardson.closure`: Coupled encoder/decoder dynamics: exact scalar closure and matrix
  dynamics;
- :mod:`~iclcore.richardson.counterexample`: The §7 counterexample of the main paper: the scalar risk is not a
  closed state;
- :mod:`~iclcore.richardson.decoder`: Decoder-only linear attention as a learned preconditioner (main paper
  §3–4, §12; MMNN report §4);
- :mod:`~iclcore.richardson.diversity`: Task diversity and difficulty (main paper §10, with §3.2): the
  finite-task preconditioner;
- :mod:`~iclcore.richardson.encdec`: Encoder + decoder: a moving latent system and a decoder that tracks a
  moving oracle;
- :mod:`~iclcore.richardson.encoder`: Encoder-only low-rank recovery: ``b = G⋆ z + ξ`` and its gradient
  dynamics;
- :mod:`~iclcore.richardson.latent_model`: The latent encoder/decoder model of the proof ladder (main paper
  §6.1–§6.2; our concrete choice);
- :mod:`~iclcore.richardson.order_parameters`: Replica and spectral order parameters of main paper §9 (Figure
  11, §12.11);
- :mod:`~iclcore.richardson.preconditioner_diagnostics`: Diagnostics of a (possibly task-dependent)
  preconditioner for the depth-``L`` Richardson decoder;
- :mod:`~iclcore.richardson.proof_ladder`: The exact scalar proof ladder of the main paper (Figure 8, §12.8):
  each rung's closed form against its iteration;
- :mod:`~iclcore.richardson.subspace`: Subspace recovery: principal angles, Top-r estimates, Davis–Kahan
  certificates.

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.richardson.decoder import online_decoder_training``.
"""

__all__ = [
    "baselines",
    "closure",
    "counterexample",
    "decoder",
    "diversity",
    "encdec",
    "encoder",
    "latent_model",
    "order_parameters",
    "preconditioner_diagnostics",
    "proof_ladder",
    "subspace",
]
