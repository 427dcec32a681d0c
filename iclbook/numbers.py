"""The book's one number format: how a computed number reads in prose, tables, verdicts and banners.

Every number the build writes (the ``{metric}`` and ``{param}`` roles, the report and its ledger columns, the
notebook pages' verdict tables, the record banners, the Measurements page) goes through these functions, so
that a value reads the same wherever it appears. The style:

- **precision**: a measured value to 3 significant figures (:func:`fmt_value`; a caller that shows a paper's
  value whole asks for more), a standard error to 2 (:func:`fmt_se`), a power to 2 decimals (:func:`fmt_power`);
- **scientific notation** as ``1.23×10⁻⁵``, never ``1.23e-05``, chosen as Python's ``g`` format chooses it
  (exponent below −4, or at least the number of significant figures);
- **minus** is the minus sign ``−`` (U+2212), in mantissas and differences alike: the same glyph as the
  superscript ``⁻`` of an exponent and as MathJax's minus in the chapters' formulas, and as wide as ``+``,
  so signed columns line up; a value that rounds to zero carries no sign (``0.000``, not ``−0.000`` or ``+0.000``);
- **thousands separators** (``,``) once the integer part has five digits or more (``12,345``, but ``4096``);
- **percent** directly after the number (``12.3%``); **not a number** reads ``NaN``, infinity ``∞``/``−∞``.

The roles also accept the Python format specifications the chapters were written with (``.3f``, ``.2e``,
``.1%``, ``.3g``, ``d``, ``,``, an optional ``+``): :func:`format_spec` keeps the precision a spec asks for
and renders it in this style. Code (predicates, rule formulas, commands) keeps Python's notation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "MINUS",
    "NAMED_FORMATS",
    "fmt_count",
    "fmt_fixed",
    "fmt_percent",
    "fmt_power",
    "fmt_sci",
    "fmt_se",
    "fmt_signed",
    "fmt_value",
    "format_spec",
]

MINUS = "\u2212"
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_GROUP_FROM = 10_000  # integer parts from five digits on get thousands separators


def _nonfinite(x: float, sign: str = "") -> str | None:
    """``NaN``, ``∞`` or ``−∞`` (``+∞`` with ``sign='+'``) for a non-finite ``x``; ``None`` for a finite one."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return MINUS + "∞" if x < 0 else sign + "∞"
    return None


def _styled(text: str, sign: str = "") -> str:
    """A Python-formatted finite number (``-1.5e-05``, ``12345.6``, ``-0.000``) in the book's style.

    ``sign='+'`` prefixes a ``+`` to a non-negative result. The exponent becomes ``×10`` with a superscript
    power; a minus becomes ``−`` unless every digit is zero; the integer part is grouped from five digits on.
    """
    negative = text.startswith("-")
    body = text.lstrip("+-")
    suffix = "%" if body.endswith("%") else ""
    body = body.rstrip("%")
    mantissa, _, exponent = body.partition("e")
    whole, dot, frac = mantissa.partition(".")
    if int(whole) >= _GROUP_FROM:
        whole = f"{int(whole):,}"
    out = whole + dot + frac + suffix
    if exponent:
        out += "×10" + str(int(exponent)).translate(_SUPERSCRIPT)
    if not any(c in "123456789" for c in mantissa):
        return out  # rounds to zero: no sign either way
    return (MINUS if negative else sign) + out


def fmt_value(x: float, sig: int = 3, sign: str = "") -> str:
    """A measured value to ``sig`` significant figures (trailing zeros dropped), e.g. ``0.0123``, ``1.23×10⁻⁵``.

    Scientific notation where Python's ``g`` format uses it: a decimal exponent below −4 or at least ``sig``.
    An ``int`` is a count (:func:`fmt_count`); ``sign='+'`` shows the sign of a non-negative value too.
    """
    if isinstance(x, int) and not isinstance(x, bool):
        return sign + fmt_count(x) if x >= 0 else fmt_count(x)
    x = float(x)
    return _nonfinite(x, sign) or _styled(format(x, f".{sig}g"), sign)


def fmt_signed(x: float, sig: int = 3) -> str:
    """A difference with its sign always shown: ``+0.0123``, ``−1.2×10⁻⁵``."""
    return fmt_value(x, sig, sign="+")


def fmt_se(se: float, sig: int = 2) -> str:
    """A standard error to 2 significant figures (its own uncertainty makes a third digit noise)."""
    return fmt_value(se, sig)


def fmt_fixed(x: float, decimals: int, sign: str = "") -> str:
    """``x`` with exactly ``decimals`` digits after the point (``0.500``; ``12,345.0``)."""
    x = float(x)
    return _nonfinite(x, sign) or _styled(format(x, f".{decimals}f"), sign)


def fmt_sci(x: float, sig: int = 3, sign: str = "") -> str:
    """``x`` always in scientific notation with ``sig`` significant figures, trailing zeros kept (``1.20×10⁻⁵``);
    zero reads ``0.00`` (with ``sig - 1`` decimals)."""
    x = float(x)
    if x == 0:
        return fmt_fixed(x, max(sig - 1, 0))  # 0.00, not 0.00×10⁰
    return _nonfinite(x, sign) or _styled(format(x, f".{max(sig - 1, 0)}e"), sign)


def fmt_percent(x: float, decimals: int = 1, sign: str = "") -> str:
    """A fraction as a percentage with ``decimals`` decimals: ``0.1234`` reads ``12.3%``."""
    x = float(x)
    return _nonfinite(x, sign) or _styled(format(x, f".{decimals}%"), sign)


def fmt_power(p: float) -> str:
    """A power (a probability) to two decimals: ``0.93``."""
    return fmt_fixed(p, 2)


def fmt_count(n: int | float) -> str:
    """An integer, with thousands separators from 10,000 on (``4096``, ``12,345``, ``−20,000``).

    A float is accepted only if it is a whole number; anything else is a ``ValueError``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise ValueError(f"count: {n!r} is not a number")
    if isinstance(n, float) and not n.is_integer():
        raise ValueError(f"count: {n!r} is not a whole number")
    return _styled(str(int(n)))


NAMED_FORMATS: dict[str, Callable[[Any], str]] = {
    "value": fmt_value,
    "signed": fmt_signed,
    "se": fmt_se,
    "sci": fmt_sci,
    "percent": fmt_percent,
    "power": fmt_power,
    "count": fmt_count,
}

_SPEC = re.compile(r"(?P<sign>\+?)(?P<group>,?)(?:\.(?P<prec>\d+))?(?P<type>[efg%d]?)")


def format_spec(x: float, spec: str) -> str:
    """``x`` formatted by a named format (:data:`NAMED_FORMATS`) or a Python format specification, in the style.

    A specification keeps the precision it asks for: ``.3f`` three decimals, ``.2e`` scientific with three
    significant figures, ``.3g`` three significant figures, ``.1%`` a percentage, ``d`` and ``,`` a count,
    a leading ``+`` the sign. Any other specification is a ``ValueError`` naming the accepted ones.
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{x!r} is not a number")
    if not spec:
        return fmt_value(x)  # a count as a count, a float to 3 significant figures
    if spec in NAMED_FORMATS:
        return NAMED_FORMATS[spec](x)
    m = _SPEC.fullmatch(spec)
    if m is None or (m["type"] == "d" and m["prec"]) or (m["group"] and m["type"] not in ("", "d")):
        raise ValueError(
            f"format {spec!r} is neither a named format ({', '.join(NAMED_FORMATS)}) nor one of [+].N(e|f|g|%), d, ','"
        )
    sign, kind = m["sign"], m["type"]
    prec = int(m["prec"]) if m["prec"] is not None else 6
    if kind == "d" or (not kind and isinstance(x, int)):
        text = fmt_count(x)
        return sign + text if sign and not text.startswith(MINUS) else text
    if not kind and m["prec"] is None:  # ',' or '+' on a float: every digit, as Python's repr gives them
        return _nonfinite(float(x), sign) or _styled(repr(float(x)), sign)
    if kind == "e":
        return fmt_sci(x, prec + 1, sign)
    if kind == "f":
        return fmt_fixed(x, prec, sign)
    if kind == "%":
        return fmt_percent(x, prec, sign)
    return fmt_value(x, prec or 1, sign)
