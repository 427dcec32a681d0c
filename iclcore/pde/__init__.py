"""A Galerkin PDE recast of the encoder–decoder problem (main paper §1.1, §10; MMNN report §5.4).

The elliptic operator and its exactly affine P1 assembly (:mod:`~iclcore.pde.galerkin`),
Matérn Gaussian-process forcing and its covariance-operator spectrum (:mod:`~iclcore.pde.gp`),
and prompts of solution/forcing pairs with the ridge prompt encoder (:mod:`~iclcore.pde.prompts`).

This file imports nothing: import from the modules.
"""
