"""Linear attention as a Richardson solver (the main paper and its experiment report).

Tasks and prompts (:mod:`~iclcore.richardson.tasks`), population moments and the oracle
preconditioner (:mod:`~iclcore.richardson.moments`), the inner Richardson iterates, their
certificate and the in-context GD predictor (:mod:`~iclcore.richardson.iterates`), closed-form
outer gradient descent (:mod:`~iclcore.richardson.dynamics`), the population encoder/decoder
closure (:mod:`~iclcore.richardson.closure`) on its latent model
(:mod:`~iclcore.richardson.latent_model`) and the §7 counterexample
(:mod:`~iclcore.richardson.counterexample`), empirical-Bernstein certificates
(:mod:`~iclcore.richardson.certificates`), the decoder, encoder and encoder-decoder experiments
(:mod:`~iclcore.richardson.decoder`, :mod:`~iclcore.richardson.encoder`,
:mod:`~iclcore.richardson.lowrank`, :mod:`~iclcore.richardson.encdec`,
:mod:`~iclcore.richardson.subspace`), unlearned baselines (:mod:`~iclcore.richardson.baselines`),
order parameters (:mod:`~iclcore.richardson.order_parameters`) and task diversity
(:mod:`~iclcore.richardson.diversity`).

This file imports nothing: import from the modules.
"""
