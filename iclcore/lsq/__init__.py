"""In-context least squares: the foundation every chapter family builds on.

A prompt is a least-squares problem ``H β = c`` built from ``M`` noisy pairs ``(x_i, y_i)`` of a task
``β`` (main paper §1–§2). This subpackage holds what the families share about it:

- :mod:`~iclcore.lsq.tasks`: task and prompt samplers (``TaskConfig``, ``sample_prompts``), design spectra;
- :mod:`~iclcore.lsq.lowrank`: the low-rank task model ``β = U⋆ z`` of the encoder experiments;
- :mod:`~iclcore.lsq.moments`: population moments of the prompt systems and the oracle preconditioner;
- :mod:`~iclcore.lsq.iterates`: inner Richardson iterates ``β_{k+1} = β_k + P (c − H β_k)``, their
  certificate and the in-context GD predictor;
- :mod:`~iclcore.lsq.dynamics`: closed-form outer gradient descent on the preconditioner.

It imports only the utilities (:mod:`iclcore.validation`, :mod:`iclcore.linalg`, :mod:`iclcore.stats`).
This file imports nothing: import from the modules (each lists its public names in ``__all__``).
"""
