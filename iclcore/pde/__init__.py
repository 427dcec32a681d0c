"""A Galerkin PDE recast of the encoder–decoder problem (main paper §1.1, §10; MMNN report §5.4).

Public modules:

- :mod:`~iclcore.pde.decoder`: the query decoder's fits and scores as independent tasks (tasks of
  :func:`iclcore.parallel.map_configs`);
- :mod:`~iclcore.pde.galerkin`: P1 finite elements for ``−(a u′)′ + c₀ u = f`` on (0, 1), ``u(0) = u(1) = 0``,
  with an affine coefficient;
- :mod:`~iclcore.pde.gp`: Matérn Gaussian-process forcing and the spectrum of its covariance operator (main
  paper §1.1, §10);
- :mod:`~iclcore.pde.methods`: The methods of the PDE recast's Table 5 (MMNN report Table 5, Figure 5): fitted,
  trained, scored, compared;
- :mod:`~iclcore.pde.prompts`: Prompts of solution/forcing pairs and the ridge prompt encoder (main paper
  §1.1; MMNN report §5.4).

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.pde.gp import sample_gp``.
"""

__all__ = ["decoder", "galerkin", "gp", "methods", "prompts"]
