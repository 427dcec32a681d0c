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

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.lsq.tasks import TaskConfig``.
"""

__all__ = ["dynamics", "iterates", "lowrank", "moments", "tasks"]
