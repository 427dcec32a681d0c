"""Spectra: the Marchenko-Pastur law and its quadrature, and the spectra of prompt statistics.

Public modules:

- :mod:`~iclcore.spectra.mp`: Marchenko–Pastur toolkit: density, atom, edges, Stieltjes transform, moments,
  quadrature;
- :mod:`~iclcore.spectra.prompt`: Prompt spectra: whitened prompt covariance, non-asymptotic concentration,
  Hessian perturbation.

This file imports none of them (why: :mod:`iclcore`): import from the modules, e.g.
``from iclcore.spectra.mp import mp_density``.
"""

__all__ = ["mp", "prompt"]
