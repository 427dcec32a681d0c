"""Models trained by backprop with torch: linear and softmax attention stacks
(:mod:`~iclcore.models.attention`, :mod:`~iclcore.models.softmax`), toy transformers
(:mod:`~iclcore.models.toy_transformers`), and probes of trained weights
(:mod:`~iclcore.models.probes`).

This file imports nothing: import from the modules.
"""
