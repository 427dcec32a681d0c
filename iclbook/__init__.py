"""Book tooling of the ICL companion: the notebook runner and ``icl-book`` CLI, page generators, the Sphinx ``{metric}`` role.

``iclcore`` never imports this package.
"""
