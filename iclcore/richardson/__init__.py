"""Linear attention as a Richardson solver (the main paper and its experiment report).

Built on the least-squares foundation :mod:`iclcore.lsq` (tasks, prompts, moments, Richardson
iterates and the closed-form outer dynamics): the population encoder/decoder
closure (:mod:`~iclcore.richardson.closure`) on its latent model
(:mod:`~iclcore.richardson.latent_model`) and the §7 counterexample
(:mod:`~iclcore.richardson.counterexample`), empirical-Bernstein certificates
(:mod:`~iclcore.richardson.certificates`), the decoder, encoder and encoder-decoder experiments
(:mod:`~iclcore.richardson.decoder`, :mod:`~iclcore.richardson.encoder`,
:mod:`~iclcore.richardson.encdec`,
:mod:`~iclcore.richardson.subspace`), unlearned baselines (:mod:`~iclcore.richardson.baselines`),
order parameters (:mod:`~iclcore.richardson.order_parameters`) and task diversity
(:mod:`~iclcore.richardson.diversity`).

This file imports nothing: import from the modules.
"""
