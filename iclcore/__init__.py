"""iclcore: the mathematics and simulations behind the ICL companion book."""

__version__ = "0.1.0"
