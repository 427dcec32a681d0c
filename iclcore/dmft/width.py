"""Every public name of the width-``N`` modules (:mod:`~iclcore.dmft.width_mc`,
:mod:`~iclcore.dmft.width_de`, :mod:`~iclcore.dmft.untied`), for callers of the former single module
``iclcore.dmft.width``. New code imports from those modules.
"""

from iclcore.dmft.untied import *  # noqa: F403
from iclcore.dmft.width_de import *  # noqa: F403
from iclcore.dmft.width_mc import *  # noqa: F403
