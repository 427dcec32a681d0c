"""Exact mode dynamics of in-context logistic regression (Mainali, Teixeira): the model, its SGD,
the paper's theory and the exact expected dynamics.

This file imports nothing: import from the modules.
"""
