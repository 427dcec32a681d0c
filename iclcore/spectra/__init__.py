"""Spectra: the Marchenko-Pastur law and its quadrature (:mod:`~iclcore.spectra.mp`), and the
spectra of prompt statistics (:mod:`~iclcore.spectra.prompt`).

This file imports nothing: import from the modules.
"""
