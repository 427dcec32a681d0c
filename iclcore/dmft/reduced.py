"""Every public name of the reduced-Γ modules (:mod:`~iclcore.dmft.data`, :mod:`~iclcore.dmft.iso`,
:mod:`~iclcore.dmft.shallow_sgd`, :mod:`~iclcore.dmft.fs`, :mod:`~iclcore.dmft.rrs`,
:mod:`~iclcore.dmft.scaling`, :mod:`~iclcore.dmft.reduced_sgd`), for callers of the former single
module ``iclcore.dmft.reduced`` (``from iclcore.dmft import reduced as dr``). New code imports from
those modules.
"""

from iclcore.dmft.data import *  # noqa: F403
from iclcore.dmft.fs import *  # noqa: F403
from iclcore.dmft.iso import *  # noqa: F403
from iclcore.dmft.reduced_sgd import *  # noqa: F403
from iclcore.dmft.rrs import *  # noqa: F403
from iclcore.dmft.scaling import *  # noqa: F403
from iclcore.dmft.shallow_sgd import *  # noqa: F403
