"""DMFT theory of in-context linear regression by deep linear attention (Bordelon, Letey, Pehlevan):
the reduced-Gamma model in its ISO, FS and RRS settings, scaling-law bottlenecks and SGD, and the
finite-width theory (Monte Carlo, deterministic equivalents, untied layers).

This file imports nothing: import from the modules.
"""
