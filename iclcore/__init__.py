"""iclcore: the mathematics and simulations behind the ICL companion book.

The package is organised in families (subpackages) and utilities (top-level modules), in layers: a
module imports from its own layer and the layers below, never from above, and families do not import
each other in a cycle (``tests/test_architecture.py`` checks it; the table of layers is in
``iclbook/architecture.py`` and the diagram in ``ARCHITECTURE.md``). Top to bottom:

1. the chapters: ``notebooks/`` and ``benchmarks/`` (not in the package);
2. :mod:`iclcore._reference` (naive loop references of vectorised functions, for tests and benchmarks)
   and :mod:`iclcore.pde` (a Galerkin PDE recast of the encoder-decoder problem);
3. the paper families :mod:`iclcore.richardson` (linear attention as a Richardson solver: closure,
   decoder, encoder, encoder-decoder) and :mod:`iclcore.dmft` (DMFT scaling laws of the
   reduced-Gamma model and of finite width);
4. :mod:`iclcore.models` (torch models trained by backprop, and probes), :mod:`iclcore.spectra`
   (Marchenko-Pastur law, prompt spectra), :mod:`iclcore.gd` (Nagy's identities and the von Oswald
   construction), :mod:`iclcore.logistic` (exact mode dynamics of in-context logistic regression);
5. the foundation :mod:`iclcore.lsq` (tasks, prompts, moments, Richardson iterates, closed-form outer
   dynamics) and :mod:`iclcore.linalg` (shared linear algebra);
6. the utilities :mod:`iclcore.stats`, :mod:`iclcore.plotting`, :mod:`iclcore.progress`,
   :mod:`iclcore.validation` and :mod:`iclcore.parallel`.

Every subpackage imports nothing (its ``__all__`` names its public modules): importing a family
eagerly would make every notebook's cache key (the files it imports) depend on the whole family and
slow every import. Import from the module, for example
``from iclcore.richardson.decoder import online_decoder_training``. Every module lists its
public names in ``__all__``; notebooks import only those. ``iclcore`` never imports the book tooling
``iclbook``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iclcore")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
