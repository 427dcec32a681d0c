"""Linear attention as a Richardson solver (the main paper and its experiment report).

Tasks and prompts (:mod:`~iclcore.richardson.tasks`), population moments and the oracle
preconditioner (:mod:`~iclcore.richardson.moments`), the inner Richardson iterates and their
certificate (:mod:`~iclcore.richardson.iterates`), closed-form outer gradient descent
(:mod:`~iclcore.richardson.dynamics`), the population encoder/decoder closure
(:mod:`~iclcore.richardson.closure`), empirical-Bernstein certificates
(:mod:`~iclcore.richardson.certificates`), and the decoder, encoder and encoder-decoder
experiments (:mod:`~iclcore.richardson.decoder`, :mod:`~iclcore.richardson.encoder`,
:mod:`~iclcore.richardson.encdec`, :mod:`~iclcore.richardson.subspace`).

This file imports nothing: import from the modules.
"""
