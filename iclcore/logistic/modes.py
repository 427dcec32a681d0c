"""Every public name of :mod:`iclcore.logistic.model`, :mod:`~iclcore.logistic.sgd`,
:mod:`~iclcore.logistic.theory` and :mod:`~iclcore.logistic.exact`, for callers that import the
former single module ``iclcore.logistic.modes`` (``from iclcore.logistic import modes as lm``).
New code imports from those modules.
"""

from iclcore.logistic.exact import *  # noqa: F403
from iclcore.logistic.model import *  # noqa: F403
from iclcore.logistic.sgd import *  # noqa: F403
from iclcore.logistic.theory import *  # noqa: F403
