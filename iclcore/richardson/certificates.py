"""The decoder chapter's statistical certificate: where it lives.

The clipped empirical-Bernstein bound on held-out losses (MMNN report §2) is a confidence bound,
so it is in the package's statistics module: :func:`iclcore.stats.clipped_empirical_bernstein`
(result :class:`iclcore.stats.EBBound`), with its coverage checks
:func:`iclcore.stats.eb_coverage_from_pool` and :func:`iclcore.stats.eb_coverage`. The
deterministic per-prompt optimisation certificate is
:func:`iclcore.lsq.iterates.richardson_certificate`.

This module defines nothing; it remains so that references to it (the family overview of
:mod:`iclcore.richardson`) resolve.
"""

__all__: list[str] = []
