"""iclcore: the mathematics and simulations behind the ICL companion book.

The package is organised by family; each subpackage imports nothing, so import from the module,
for example ``from iclcore.richardson.decoder import online_decoder_training``:

- :mod:`iclcore.richardson`: linear attention as a Richardson solver (tasks, moments, iterates,
  outer dynamics, closure, certificates, decoder, encoder, encoder-decoder, subspaces);
- :mod:`iclcore.spectra`: Marchenko-Pastur law and prompt spectra;
- :mod:`iclcore.dmft`: DMFT scaling-law theory of the reduced-Gamma model and of finite width;
- :mod:`iclcore.logistic`: exact mode dynamics of logistic in-context regression;
- :mod:`iclcore.models`: models trained by backprop with torch, and probes of trained weights;
- :mod:`iclcore.validation`, :mod:`iclcore.linalg`, :mod:`iclcore.plotting`: shared checks and
  randomness, shared linear algebra, figure style and metrics.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iclcore")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
