"""Discovery of the book's notebooks, their parameters and presets.

A notebook is a jupytext py:percent file ``notebooks/<name>.py`` with

* a cell tagged ``parameters`` holding one literal assignment per line; these
  defaults are the ``quick`` preset (what CI runs), and
* optionally a cell tagged ``presets`` holding ``PRESETS = {"paper": {...}}``,
  a literal dict of named overrides of those parameters.

Both cells are read statically (``ast``), never executed, so listing the
notebooks is instant and safe.

Parameter values are ``int``, ``float``, ``bool``, ``str`` or ``None``, or a flat
``list`` or ``tuple`` of ``int``, ``float``, ``bool`` or ``str`` (one element type; ints
and floats mixed make a float list). A value given on the command line is converted to
the type of the default, exactly: integers of any size (never through ``float``), floats
including ``1e-5``, ``1e300``, ``nan`` and ``inf``; a value of the wrong type (``1.5``
for an integer) is an error naming the parameter. A parameter whose default is ``None``
takes any scalar literal. A list value is a Python literal (``-p warmups "[50, 200]"``,
read with :func:`ast.literal_eval`, never evaluated), of the default's container type
(a list given for a tuple default becomes a tuple); each element is checked like a
scalar against the default's element type.

Ranges
------
A parameter line may declare the values it accepts in its trailing comment::

    K = 8        # decoder dimension; range: [1, 512]
    eta = 0.25   # step as a fraction of 2/lambda_max; range: (0, 1)
    kind = "iso" # choices: ["iso", "aniso"]

``range: <lo>, <hi>`` uses ``[``/``]`` for closed and ``(``/``)`` for open
ends; the bounds are numbers, ``-inf`` or ``inf``. ``choices: [...]`` is a
literal list. For a list or tuple parameter they apply to each element, and
``length: [lo, hi]`` (same brackets, integer bounds) bounds its number of elements::

    warmups = [200]  # warm-up lengths; range: [0, 100000]; length: [1, 16]

A ``bool`` parameter needs no declaration: its domain is ``choices: [False, True]``
(:data:`BOOL_DOMAIN`), which its type already enforces.

The runner checks every resolved value (defaults, presets and
command-line overrides) before a kernel starts; ``nan`` is outside every
range. Size parameters should always declare an upper bound, so that a typo
such as ``-p K 1e9`` is refused instead of allocating gigabytes.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Preset name that means "the defaults of the parameters cell".
QUICK = "quick"

_CELL_RE = re.compile(r"^# %%(?P<rest>.*)$")
_TAGS_RE = re.compile(r"tags\s*=\s*(\[[^\]]*\])")

_INTERVAL = r"\s*(?P<open>[\[(])\s*(?P<lo>[^,\])]+?)\s*,\s*(?P<hi>[^,\])]+?)\s*(?P<close>[\])])"  # [lo, hi), ...
_RANGE_RE = re.compile(r"range:" + _INTERVAL)
_CHOICES_RE = re.compile(r"choices:\s*(?P<list>\[[^\]]*\])")
_LENGTH_RE = re.compile(r"length:" + _INTERVAL)

Scalar = int | float | bool | str | None
ParamValue = Scalar | list | tuple
_PARAM_TYPES = (int, float, bool, str, type(None))
_ELEMENT_TYPES = (int, float, bool, str)
_SEQUENCES = (list, tuple)


class NotebookError(ValueError):
    """A notebook source or a request about it is malformed."""


@dataclass(frozen=True)
class Notebook:
    """A notebook of the book.

    Attributes
    ----------
    name : str
        File stem, e.g. ``"proof_ladder"``; also the output folder name.
    path : Path
        The py:percent source.
    parameters : dict
        Parameter name -> default value (the ``quick`` preset).
    presets : dict
        Preset name -> overrides of ``parameters``.
    ranges, lengths : dict
        Parameter name -> its declared domain (of each element) and number of elements.
    descriptions : dict
        Parameter name -> the words of its line's comment (:func:`parse_description`).
    """

    name: str
    path: Path
    parameters: dict[str, ParamValue]
    presets: dict[str, dict[str, ParamValue]] = field(default_factory=dict)
    ranges: dict[str, Range] = field(default_factory=dict)
    lengths: dict[str, Range] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    @property
    def preset_names(self) -> list[str]:
        return [QUICK, *sorted(self.presets)]

    def element_bound(self, key: str) -> tuple[int, str]:
        """The most elements a value of the list parameter ``key`` may have, and how to allow more."""
        where = f"notebooks/{self.path.name}"
        declared = self.lengths.get(key)
        if declared is not None and math.isfinite(declared.hi):
            return int(declared.hi), f"its length must be in {declared.describe()}, declared in {where}; widen it there"
        return MAX_ELEMENTS, f"declare `length: [lo, hi]` in its comment in {where} to allow more"

    def resolve(self, preset: str = QUICK, overrides: dict[str, Any] | None = None) -> dict[str, ParamValue]:
        """Parameters for ``preset`` with ``overrides`` applied.

        String overrides (from the command line) are converted to the type of
        the default. Unknown preset or parameter names raise
        :class:`NotebookError` listing what is available.
        """
        if preset != QUICK and preset not in self.presets:
            raise NotebookError(
                f"notebook {self.name!r} has no preset {preset!r}; available: {', '.join(self.preset_names)}"
            )
        params = dict(self.parameters)
        for key, value in self.presets.get(preset, {}).items():  # a list preset of a tuple default: a tuple
            params[key] = check_type(value, self.parameters[key], key) if is_sequence(value) else value
        for key, raw in (overrides or {}).items():
            if key not in self.parameters:
                raise NotebookError(
                    f"notebook {self.name!r} has no parameter {key!r}; its parameters are: "
                    + ", ".join(f"{k} (default {v!r})" for k, v in self.parameters.items())
                )
            default = self.parameters[key]
            if isinstance(raw, str) and not isinstance(default, str):
                params[key] = coerce(raw, default, key, *self.element_bound(key))
            else:
                params[key] = check_type(raw, default, key)
        where = f"notebooks/{self.path.name}"
        for key, value in params.items():
            if key in self.lengths and is_sequence(value) and not self.lengths[key].contains(len(value)):
                raise NotebookError(
                    f"parameter {key!r} = {brief(value)} has {len(value)} element(s); "
                    f"its length must be in {self.lengths[key].describe()} (declared in {where})"
                )
            if key in self.ranges:
                self.ranges[key].check(key, value, where)
        from iclbook.devices import device_error  # `domain: device` parameters (iclbook.devices)

        if error := device_error(self.path, params, where):
            raise NotebookError(error)
        return params


@dataclass(frozen=True)
class Range:
    """Accepted values of one parameter, declared in its line's comment (see the module docstring)."""

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[Any, ...] | None = None

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return f"{'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}{')' if self.hi_open else ']'}"

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is accepted (a list or tuple: each of its elements)."""
        if is_sequence(value):
            return all(self.contains(v) for v in value)
        if self.choices is not None:
            return any(type(value) is type(c) and value == c for c in self.choices)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and math.isnan(value))
        ):
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def check(self, name: str, value: Any, where: str) -> None:
        """A NotebookError naming ``name`` unless ``value`` (or each element of a list or tuple) is accepted."""
        if not is_sequence(value):
            if not self.contains(value):
                raise NotebookError(
                    f"parameter {name!r} = {value!r} is outside its range {self.describe()} (declared in {where})"
                )
            return
        for i, item in enumerate(value):
            if not self.contains(item):
                raise NotebookError(
                    f"parameter {name!r} = {brief(value)}: element {i} ({item!r}) is outside its range "
                    f"{self.describe()} (declared in {where})"
                )


def brief(value: Any, width: int = 80) -> str:
    """``repr(value)``, cut to ``width`` characters with ``...`` (a long list in a one-line error)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _num(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(int(x)) if float(x).is_integer() and abs(x) < 1e16 else repr(x)


def _bound(text: str, where: str) -> float:
    t = text.strip().lower()
    if t in {"inf", "+inf", "infinity"}:
        return math.inf
    if t in {"-inf", "-infinity"}:
        return -math.inf
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise NotebookError(f"{where}: range bound {text.strip()!r} is not a number")
    return value


def _bounds(m: re.Match, where: str) -> Range:
    """The numeric :class:`Range` of a ``range:`` or ``length:`` match."""
    lo, hi = _bound(m.group("lo"), where), _bound(m.group("hi"), where)
    if not lo <= hi:
        raise NotebookError(f"{where}: empty range {m.group(0)!r}")
    return Range(lo, hi, m.group("open") == "(", m.group("close") == ")")


#: The domain of a ``bool`` parameter that declares none: ``choices: [False, True]``.
BOOL_DOMAIN = Range(choices=(False, True))

_DECLARATION_RE = re.compile(r"\s*(range|choices|length):")


def parse_description(comment: str) -> str:
    """The words of a parameter line's ``comment``: its ``;``-separated parts that declare no domain."""
    parts = [part.strip() for part in comment.split(";")]
    return "; ".join(part for part in parts if part and not _DECLARATION_RE.match(part))


def parse_length(comment: str, where: str) -> Range | None:
    """The accepted numbers of elements declared by ``length: [lo, hi]`` in ``comment`` (None if none)."""
    m = _LENGTH_RE.search(comment)
    if m:
        return _bounds(m, where)
    if "length:" in comment:
        raise NotebookError(f"{where}: cannot read the length in {comment.strip()!r}; write e.g. `# length: [1, 16]`")
    return None


def parse_range(comment: str, where: str) -> Range | None:
    """The :class:`Range` declared in a parameter line's ``comment`` (None if it declares none)."""
    m = _RANGE_RE.search(comment)
    if m:
        return _bounds(m, where)
    m = _CHOICES_RE.search(comment)
    if m:
        try:
            choices = ast.literal_eval(m.group("list"))
        except (ValueError, SyntaxError):
            raise NotebookError(f"{where}: choices {m.group('list')!r} is not a literal list") from None
        return Range(choices=tuple(choices))
    if "range:" in comment or "choices:" in comment:
        raise NotebookError(f"{where}: cannot read the range in {comment.strip()!r}; write e.g. `# range: [1, 512]`")
    return None


def is_sequence(value: Any) -> bool:
    """Whether ``value`` is a list or tuple parameter value."""
    return isinstance(value, _SEQUENCES)


def element_default(default: list | tuple, name: str) -> int | float | bool | str:
    """A representative of the element type of the list or tuple ``default`` (ints and floats mixed: a float).

    The elements must be ``int``, ``float``, ``bool`` or ``str``, of one type; an empty default is refused
    (its element type would be unknown).
    """
    if not default:
        raise NotebookError(f"parameter {name!r}: an empty {type(default).__name__} default has no element type")
    for item in default:
        if isinstance(item, _SEQUENCES) or not isinstance(item, _ELEMENT_TYPES):
            raise NotebookError(
                f"parameter {name!r}: elements must be int, float, bool or str literals, "
                f"not {type(item).__name__} ({item!r}); lists are flat"
            )
    kinds = {bool if isinstance(x, bool) else str if isinstance(x, str) else "number" for x in default}
    if len(kinds) > 1:
        raise NotebookError(f"parameter {name!r}: the elements of {default!r} mix types; use one type")
    if kinds == {"number"}:
        return 0.0 if any(isinstance(x, float) for x in default) else 0
    return default[0]


def _check_sequence(value: Any, default: list | tuple, name: str) -> list | tuple:
    """``value`` as the container type of ``default``, each element checked against its element type."""
    if not is_sequence(value):
        raise NotebookError(
            f"parameter {name!r}: {value!r} is a {type(value).__name__}, expected a {type(default).__name__} "
            f"(default is {default!r})"
        )
    item_default = element_default(default, name)
    items = []
    for i, item in enumerate(value):
        if is_sequence(item) or not isinstance(item, _ELEMENT_TYPES):
            raise NotebookError(
                f"parameter {name!r}: element {i} ({item!r}) is a {type(item).__name__}; "
                f"expected a flat {type(default).__name__} of {type(item_default).__name__}"
            )
        try:
            items.append(check_type(item, item_default, name))
        except NotebookError:
            raise NotebookError(
                f"parameter {name!r}: element {i} ({item!r}) is a {type(item).__name__}, expected "
                f"{type(item_default).__name__} (default is {default!r})"
            ) from None
    return type(default)(items)


def check_type(value: Any, default: ParamValue, name: str) -> ParamValue:
    """``value`` if it has the type of ``default`` (an int is accepted for a float); else a NotebookError.

    For a list or tuple ``default``, ``value`` must be a flat list or tuple whose elements have the
    default's element type (:func:`element_default`); it is returned as the default's container type.
    """
    if is_sequence(default):
        return _check_sequence(value, default, name)
    if default is None:
        if not isinstance(value, _PARAM_TYPES):
            raise NotebookError(f"parameter {name!r}: {value!r} is not an int, float, bool, str or None")
        return value
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            value = float(value)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise NotebookError(
            f"parameter {name!r}: {value!r} is a {type(value).__name__}, expected {type(default).__name__} (default is {default!r})"
        )
    return value


#: The only spelling of an integer on the command line: optional sign, ASCII decimal digits.
_PLAIN_INT_RE = re.compile(r"[+-]?[0-9]+")
#: What the error for a badly spelled integer says is accepted.
INT_ACCEPTED = "plain decimal digits with an optional sign, such as 16 or -3 (no 16.0, 1e1, 0x10, 1_000)"


def _exact_int(raw: str) -> int:
    """``raw`` (surrounding spaces allowed) as an int if it is ``[+-]?[0-9]+``; else a ValueError."""
    text = raw.strip()
    if not _PLAIN_INT_RE.fullmatch(text):
        raise ValueError(raw)
    return int(text)


#: The most characters a command-line value may have (a list literal of that size parses in well under a second).
MAX_LITERAL_CHARS = 1_000_000
#: The most elements of a list or tuple value whose parameter declares no ``length:`` (declaring one raises it).
MAX_ELEMENTS = 10_000


def _segments(source: str, nodes: list[ast.expr]) -> list[str]:
    """The source text of each node of ``source`` (:func:`ast.get_source_segment` for many nodes, linear in total).

    ``ast`` offsets are UTF-8 byte columns of 1-based lines; the line starts are computed once.
    """
    data = source.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    for node in nodes:
        if node.end_lineno is None or node.end_col_offset is None:
            out.append("")
            continue
        lo = starts[node.lineno - 1] + node.col_offset
        hi = starts[node.end_lineno - 1] + node.end_col_offset
        out.append(data[lo:hi].decode("utf-8", "replace"))
    return out


def _check_plain_ints(tree: ast.expr, source: str, name: str) -> None:
    """Refuse an integer element of the list literal ``tree`` (parsed from ``source``) not spelled ``[+-]?[0-9]+``
    (``0x10``, ``1_000``); linear in the length of ``source``."""
    if not isinstance(tree, (ast.List, ast.Tuple)):
        return
    ints = [
        (i, node)
        for i, node in enumerate(tree.elts)
        if isinstance(v := node.operand if isinstance(node, ast.UnaryOp) else node, ast.Constant)
        and type(v.value) is int
    ]
    for (i, _), text in zip(ints, _segments(source, [node for _, node in ints])):
        if not _PLAIN_INT_RE.fullmatch(text.replace(" ", "")):
            raise NotebookError(
                f"parameter {name!r}: element {i} ({text}) is not a plain decimal integer; use {INT_ACCEPTED}"
            )


def _literal_sequence(raw: str, default: list | tuple, name: str, max_elements: int, raise_hint: str) -> ParamValue:
    """The list or tuple literal ``raw`` checked against ``default``; refused before its elements are read if it
    is longer than :data:`MAX_LITERAL_CHARS` characters or has more than ``max_elements`` elements."""
    text = raw.strip()
    how = raise_hint or "declare `length: [lo, hi]` in the parameter's comment to allow more"
    if len(text) > MAX_LITERAL_CHARS:
        raise NotebookError(
            f"parameter {name!r}: the value has {len(text):,} characters (~{text.count(',') + 1:,} elements), "
            f"more than the {MAX_LITERAL_CHARS:,} a command-line value may have"
        )
    unreadable = NotebookError(
        f"parameter {name!r}: cannot read {brief(raw)} as a "
        f"{type(default).__name__} literal such as {python_literal(default)}"
    )
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise unreadable from None
    if isinstance(tree, (ast.List, ast.Tuple)) and len(tree.elts) > max_elements:
        raise NotebookError(
            f"parameter {name!r}: the value has {len(tree.elts):,} element(s), more than the {max_elements:,} "
            f"allowed ({how})"
        )
    try:
        value = ast.literal_eval(tree)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise unreadable from None
    _check_plain_ints(tree, text, name)
    return check_type(value, default, name)


def coerce(  # noqa: C901 (one branch per parameter type, each with its own exact parsing rule)
    raw: str, default: ParamValue, name: str, max_elements: int = MAX_ELEMENTS, raise_hint: str = ""
) -> ParamValue:
    """Convert the command-line string ``raw`` to the type of ``default``, exactly.

    Integers are read exactly (``"12345678901234567891"``), never through ``float``, and only
    as plain decimal digits with an optional sign (:data:`INT_ACCEPTED`): ``"1.5"``, ``"16.0"``,
    ``"1e1"``, ``"0x10"`` or full-width digits for an integer are an error naming ``name``.
    Floats accept ``1e-5``, ``1e300``, ``nan``, ``inf``. For a ``None``
    default, ``raw`` is read as a Python literal (``None``, a number, a
    quoted string), else kept as a string. For a list or tuple ``default``, ``raw`` must be a
    list or tuple literal (``"[50, 200]"``, :func:`ast.literal_eval`) of the default's element type,
    with at most ``max_elements`` elements (counted before any is read; ``raise_hint`` says how to allow
    more) and at most :data:`MAX_LITERAL_CHARS` characters; the work is linear in its length.
    """
    if is_sequence(default):
        return _literal_sequence(raw, default, name, max_elements, raise_hint)
    if len(raw) > MAX_LITERAL_CHARS:
        raise NotebookError(
            f"parameter {name!r}: the value has {len(raw):,} characters, more than the {MAX_LITERAL_CHARS:,} "
            "a command-line value may have"
        )
    if default is None:
        if raw.strip() in {"None", "none", "null"}:
            return None
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return raw
        return value if isinstance(value, _PARAM_TYPES) else raw
    try:
        if isinstance(default, bool):
            low = raw.strip().lower()
            if low in {"1", "true", "yes", "on"}:
                return True
            if low in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if isinstance(default, int):
            return _exact_int(raw)
        if isinstance(default, float):
            return float(raw.strip())
    except ValueError:
        accepted = f"; use {INT_ACCEPTED}" if type(default) is int else ""
        raise NotebookError(
            f"parameter {name!r}: cannot read {brief(raw)} as {type(default).__name__} (default is {default!r}){accepted}"
        ) from None
    return raw


def python_literal(value: Any) -> str:
    """Python source that evaluates to exactly ``value``.

    ``value``: an int of any size, a float including nan and inf, a bool, a str, None, or a list
    or tuple of those (a tuple of one element keeps its comma).
    """
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**4000 else hex(value)  # hex literals have no digit limit
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(python_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    raise NotebookError(f"cannot pass a {type(value).__name__} as a parameter")


def _cells(source: str) -> list[tuple[list[str], str]]:
    """Split py:percent source into (tags, body) pairs."""
    cells: list[tuple[list[str], list[str]]] = []
    for line in source.splitlines():
        m = _CELL_RE.match(line)
        if m:
            tags: list[str] = []
            t = _TAGS_RE.search(m.group("rest"))
            if t:
                try:
                    tags = list(ast.literal_eval(t.group(1)))
                except (ValueError, SyntaxError):
                    tags = []
            cells.append((tags, []))
        elif cells:
            cells[-1][1].append(line)
    return [(tags, "\n".join(body)) for tags, body in cells]


def _line_comments(body: str) -> dict[int, str]:
    """Line number -> text of the comment on that line (tokenize, so a ``#`` inside a string is not one)."""
    comments: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(body).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.string.lstrip("#")
    except (tokenize.TokenError, SyntaxError):
        pass
    return comments


def _literal_assignments(body: str, where: str, comments: dict[int, str] | None = None) -> dict[str, Any]:
    try:
        tree = ast.parse(body)
    except SyntaxError as exc:
        raise NotebookError(f"{where}: cannot parse: {exc}") from None
    out: dict[str, Any] = {}
    line_comments = _line_comments(body) if comments is not None else {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise NotebookError(f"{where}: line {node.lineno}: only `name = literal` assignments are allowed")
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise NotebookError(
                f"{where}: line {node.lineno}: the value of {node.targets[0].id!r} is not a literal"
            ) from None
        if comments is not None:
            comments[node.targets[0].id] = "".join(
                line_comments.get(n, "") for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
            )
    return out


def read_notebook(path: str | Path) -> Notebook:  # noqa: C901 (the checks of the parameters and presets cells in the order a reader meets them, each error naming its line)
    """Read the parameters and presets of the py:percent notebook at ``path``."""
    path = Path(path)
    cells = _cells(path.read_text())
    param_cells = [body for tags, body in cells if "parameters" in tags]
    if len(param_cells) != 1:
        raise NotebookError(f"{path}: expected exactly one cell tagged 'parameters', found {len(param_cells)}")
    comments: dict[str, str] = {}
    parameters = _literal_assignments(param_cells[0], f"{path} (parameters cell)", comments)
    ranges: dict[str, Range] = {}
    lengths: dict[str, Range] = {}
    for key, value in parameters.items():
        if is_sequence(value):
            try:
                parameters[key] = check_type(value, value, key)  # flat, one element type
            except NotebookError as exc:
                raise NotebookError(f"{path}: {exc}") from None
        elif not isinstance(value, _PARAM_TYPES):
            raise NotebookError(
                f"{path}: parameter {key!r} must be an int, float, bool, str or None, or a list or tuple of "
                f"int, float, bool or str, not {type(value).__name__}"
            )
        declared = parse_range(comments.get(key, ""), f"{path}: parameter {key!r}")
        if declared is None and isinstance(value, bool):
            declared = BOOL_DOMAIN  # a flag's type is its domain
        if declared is not None:
            ranges[key] = declared
        length = parse_length(comments.get(key, ""), f"{path}: parameter {key!r}")
        if length is not None:
            if not is_sequence(value):
                raise NotebookError(f"{path}: parameter {key!r}: `length:` is for a list or tuple parameter")
            lengths[key] = length
    presets: dict[str, dict[str, Any]] = {}
    preset_cells = [body for tags, body in cells if "presets" in tags]
    if len(preset_cells) > 1:
        raise NotebookError(f"{path}: more than one cell tagged 'presets'")
    if preset_cells:
        found = _literal_assignments(preset_cells[0], f"{path} (presets cell)")
        if set(found) != {"PRESETS"} or not isinstance(found["PRESETS"], dict):
            raise NotebookError(f"{path}: the presets cell must hold exactly `PRESETS = {{...}}`")
        presets = found["PRESETS"]
        for pname, overrides in presets.items():
            if pname == QUICK:
                raise NotebookError(f"{path}: preset {QUICK!r} is the parameters cell itself; do not redefine it")
            unknown = sorted(set(overrides) - set(parameters))
            if unknown:
                raise NotebookError(
                    f"{path}: preset {pname!r} sets unknown parameters {unknown}; parameters are {sorted(parameters)}"
                )
            for key, value in overrides.items():
                try:
                    check_type(value, parameters[key], key)
                except NotebookError as exc:
                    raise NotebookError(f"{path}: preset {pname!r}: {exc}") from None
    notebook = Notebook(
        name=path.stem,
        path=path,
        parameters=parameters,
        presets=presets,
        ranges=ranges,
        lengths=lengths,
        descriptions={key: parse_description(comments.get(key, "")) for key in parameters},
    )
    for pname in notebook.preset_names:  # defaults and presets must respect the declared ranges
        notebook.resolve(pname)
    return notebook


def toc_order(toc_path: Path) -> list[str]:
    """Notebook names in the order their executed pages appear in ``_toc.yml``."""
    if not toc_path.exists():
        return []
    names = re.findall(r"book/generated/([A-Za-z0-9_\-]+)/\1\b", toc_path.read_text())
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)


def notebook_name(raw: str) -> str:
    """The notebook name of a command-line argument: ``x``, or a tab-completed ``notebooks/x.py`` or ``x.py``."""
    path = Path(raw)
    if path.suffix == ".py" and path.parent.name in ("", "notebooks"):
        return path.stem
    return raw


def discover_all(root: Path) -> tuple[list[Notebook], dict[str, NotebookError]]:
    """Readable notebooks under ``root/notebooks`` (toc order first, then by name) and the unreadable ones.

    A file that is not a usable notebook (for example a stray script with no
    parameters cell) is returned in the second value, name -> error, so that
    it does not block the others.
    """
    paths = sorted((root / "notebooks").glob("*.py"))
    order = {name: i for i, name in enumerate(toc_order(root / "_toc.yml"))}
    paths.sort(key=lambda p: (order.get(p.stem, len(order)), p.stem))
    good: list[Notebook] = []
    bad: dict[str, NotebookError] = {}
    for p in paths:
        try:
            good.append(read_notebook(p))
        except NotebookError as exc:
            bad[p.stem] = exc
        except (OSError, UnicodeDecodeError) as exc:
            bad[p.stem] = NotebookError(f"{p}: cannot read: {exc}")
    return good, bad


def discover(root: Path) -> list[Notebook]:
    """All notebooks under ``root/notebooks`` in book order; the first unusable one raises :class:`NotebookError`."""
    good, bad = discover_all(root)
    if bad:
        raise next(iter(bad.values()))
    return good
