"""When in-context learning implements gradient descent (Nagy): the identity families and our matrix
lifts, the von Oswald et al. (2023) construction, the §8.1 synthetic panel and an offline miniature
of the depth-contraction probe.

Public modules:

- :mod:`~iclcore.gd.appendix_statements`: The statements of Nagy App. A as
  :class:`~iclcore.gd.statements.Statement` records: the families V (the attention construction), M (the
  matrix ladder) and MN (arbitrary dimension; reconstructed, their printed statements are cut by a lost "<");
- :mod:`~iclcore.gd.construction`: The von Oswald et al. (2023) construction as explicit attention weights
  (Nagy App. A, V1–V3);
- :mod:`~iclcore.gd.depth_probe`: Offline miniature of the depth-contraction probe of Nagy §8.2–§8.5;
- :mod:`~iclcore.gd.identities`: The identity families of Nagy (§1–§7, App. A) as data: statement, hypotheses,
  a sympy certificate and an exact-rational evaluation on points drawn *inside* each domain;
- :mod:`~iclcore.gd.matrix_lifts`: Our matrix lifts of the scalar ladder of Nagy (not in the paper): ``e+ = (I
  - P H) e``, the descent condition, the Newton step and layer-varying steps, with numerical and exact
  helpers;
- :mod:`~iclcore.gd.scalar_statements`: The statements of Nagy §1–§7 as
  :class:`~iclcore.gd.statements.Statement` records: the ring identities (§1.1, §3, §4) and the families A
  (§2–§4), B (§5), C (§6) and D (§7);
- :mod:`~iclcore.gd.statements`: The record of one identity of Nagy (:class:`Statement`), the scalar model of
  Nagy §1, and the helpers that map unit-interval parameters into each statement's domain;
- :mod:`~iclcore.gd.synthetic`: The synthetic convergence panel of Nagy §8.1 (Figure 1).

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.gd.construction import von_oswald_layers``.
"""

__all__ = [
    "appendix_statements",
    "construction",
    "depth_probe",
    "identities",
    "matrix_lifts",
    "scalar_statements",
    "statements",
    "synthetic",
]
