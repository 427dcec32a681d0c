"""The book's single figure style, and saving of figures and metrics.

Every notebook calls :func:`use_style` once, builds its figures with matplotlib,
and saves each with :func:`save_figure` (PNG for the HTML book, PDF for print)
and its numbers with :func:`write_metrics`. Files land in the current working
directory, which the runner (``icl-book run``) sets to the notebook's output
folder ``book/generated/<name>/``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np

__all__ = [
    "FORMATS",
    "FORMATS_ENV",
    "MAX_METRIC_STRING",
    "METRICS_CONTRACT",
    "PALETTE",
    "figure_formats",
    "finish_figure",
    "metric_problem",
    "metrics_problem",
    "save_figure",
    "use_style",
    "write_metrics",
]

#: Colour cycle shared by all chapters (colour-blind safe, Okabe–Ito).
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#F0E442",
    "#000000",
)

STYLE: dict[str, Any] = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "axes.prop_cycle": mpl.cycler(color=list(PALETTE)),
    "pdf.fonttype": 42,
    # deterministic PDF/PNG output
    "svg.hashsalt": "icl-companion",
}


def use_style() -> None:
    """Apply the book's matplotlib style (idempotent)."""
    mpl.rcParams.update(STYLE)


#: Environment variable naming the formats :func:`save_figure` writes (default ``"png,pdf"``).
FORMATS_ENV = "ICL_FIGURE_FORMATS"
FORMATS = ("png", "pdf")


def figure_formats(value: str | None = None) -> tuple[str, ...]:
    """The formats to write: ``value`` (or ``$ICL_FIGURE_FORMATS``), comma-separated, else PNG and PDF.

    ``make test`` sets ``ICL_FIGURE_FORMATS=png`` for nbval's re-execution, whose figure files are
    thrown away (it checks numbers): the PDF, the slowest file to write, is made by the runner only.
    """
    raw = os.environ.get(FORMATS_ENV, "") if value is None else value
    if not raw.strip():
        return FORMATS
    formats = tuple(dict.fromkeys(f.strip().lower() for f in raw.split(",") if f.strip()))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"{FORMATS_ENV}: expected a comma-separated subset of {list(FORMATS)}, got {raw!r}")
    return formats


def save_figure(fig: Any, name: str, directory: str | Path = ".", *, formats: str | None = None) -> list[Path]:
    """Save ``fig`` as ``<name>.png`` and ``<name>.pdf`` in ``directory``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to save.
    name : str
        File stem, e.g. ``"fig8_proof_ladder"``; letters, digits, ``_`` and ``-`` only.
    directory : str or Path
        Output folder (default: the working directory set by the runner).
    formats : str, optional
        Comma-separated subset of ``png,pdf``; default ``$ICL_FIGURE_FORMATS``, else both
        (:func:`figure_formats`).

    Returns
    -------
    list of Path
        The written files (PNG first).
    """
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ValueError(f"name: figure name {name!r} must be non-empty and use only letters, digits, '_' or '-'")
    chosen = figure_formats(formats)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        if fmt not in chosen:
            continue
        path = directory / f"{name}.{fmt}"
        if fmt == "pdf":
            fig.savefig(path, metadata={"CreationDate": None, "ModDate": None})
        else:
            fig.savefig(path)
        paths.append(path)
    return paths


def finish_figure(fig: Any, name: str, *, legend_fontsize: float | None = None, directory: str | Path = ".") -> None:
    """The closing lines of a figure: a legend on every axes, ``tight_layout`` and :func:`save_figure`.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Every axes of it should have labelled artists.
    name : str
        File stem (see :func:`save_figure`).
    legend_fontsize : float, optional
        Font size of the legends (default: the style's).
    directory : str or Path
        Output folder.

    Returns nothing, so that a notebook cell ending with it prints nothing.
    """
    kwargs = {} if legend_fontsize is None else {"fontsize": legend_fontsize}
    for ax in fig.axes:
        ax.legend(**kwargs)
    fig.tight_layout()
    save_figure(fig, name, directory)


#: The longest string a metric may be (a label, a repr, a device name: a value, not a log).
MAX_METRIC_STRING = 200
#: What ``metrics.json`` holds: the contract :func:`write_metrics` writes and the book's run store checks
#: (:func:`metrics_problem`) before a run is stored. The report grades numbers and booleans; a string is
#: shown as it is and never passes a numeric rule.
METRICS_CONTRACT = (
    "a flat JSON object; keys are non-empty strings; values are finite numbers (int or float; no NaN or "
    f"Infinity), booleans or strings of at most {MAX_METRIC_STRING} characters (no null, list or object)"
)


def metric_problem(key: Any, value: Any) -> str:
    """'' if ``value`` may be stored under ``key`` in ``metrics.json`` (:data:`METRICS_CONTRACT`); else what is wrong.

    ``value`` is a plain Python value (``bool``, ``int``, ``float``, ``str``; numpy scalars are converted by
    :func:`write_metrics` before they are checked).
    """
    if not isinstance(key, str) or not key:
        return f"metrics key {key!r}: keys must be non-empty strings"
    if isinstance(value, (bool, int)):
        return ""
    if isinstance(value, float):
        return "" if math.isfinite(value) else f"metrics[{key!r}] is {value}: metrics must be finite numbers"
    if isinstance(value, str):
        if len(value) <= MAX_METRIC_STRING:
            return ""
        return f"metrics[{key!r}] is a string of {len(value)} characters: at most {MAX_METRIC_STRING}"
    return f"metrics[{key!r}] has type {type(value).__name__}: metrics must be numbers, booleans or short strings"


def metrics_problem(data: Any) -> str:
    """'' if ``data`` (a parsed ``metrics.json``) follows :data:`METRICS_CONTRACT`; else its first problem."""
    if not isinstance(data, dict):
        return f"not a JSON object but {type(data).__name__}: {METRICS_CONTRACT}"
    return next((p for k, v in data.items() if (p := metric_problem(k, v))), "")


def _plain(value: Any) -> Any:
    """A numpy scalar (or 0-d array) as the Python bool, int, float or str it holds; anything else as it is."""
    if isinstance(value, (str, np.str_)):
        return str(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) or (isinstance(value, np.ndarray) and value.shape == ()):
        return float(value)
    return value


def write_metrics(metrics: Mapping[str, Any], directory: str | Path = ".") -> None:
    """Write ``metrics.json`` (a flat mapping name -> number, boolean or short string) in ``directory``.

    Returns nothing, so that a notebook's last line does not print a path.
    The values follow :data:`METRICS_CONTRACT` (finite numbers, booleans, strings of at most
    :data:`MAX_METRIC_STRING` characters), so that the reproduction report can grade them against the
    papers' reported values; a value that does not raises (a :class:`ValueError` for a non-finite number, a
    long string or an empty key, a :class:`TypeError` for another type), naming the offending key.
    """
    clean = {str(k): _plain(v) for k, v in metrics.items()}
    for k, v in clean.items():
        problem = metric_problem(k, v)
        if problem:
            raise (ValueError if isinstance(v, (bool, int, float, str)) else TypeError)(problem)
    path = Path(directory) / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(clean, indent=2, sort_keys=True) + "\n")
