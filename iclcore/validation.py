"""Input validation and randomness shared by every module of :mod:`iclcore`.

Every public function of the package checks its arguments with the helpers below, so a bad
argument raises an error that names the parameter (``"N: expected a positive integer, got 0"``)
instead of producing a silent NaN, a hang or a corrupt result.

Error and randomness conventions
--------------------------------
* A value of the wrong *type* raises :class:`ParameterTypeError`, which is both a
  :class:`TypeError` and a :class:`ValueError` (so either ``except`` clause catches it).
* A value of the right type but outside its domain raises :class:`ValueError`.
* Every message starts with the parameter name followed by a colon.
* Randomness comes in as a :class:`numpy.random.Generator`; :func:`as_generator` also accepts an
  integer seed (through :func:`numpy.random.default_rng`, SPEC 7) but never ``None``, so that
  every random result of the package is reproducible from the caller's seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "ParameterTypeError",
    "as_generator",
    "torch_generator",
    "positive_int",
    "positive_float",
    "nonnegative_float",
    "probability",
    "check_depth",
    "finite_array",
    "square_matrix",
    "nonnegative_int_steps",
    "nondecreasing_times",
    "nonnegative_grid",
    "spectrum_pair",
    "positive_spectrum",
    "symmetric_matrix",
    "symmetric_psd",
    "symmetric_psd_eigh",
]


class ParameterTypeError(TypeError, ValueError):
    """A parameter of the wrong type (a :class:`TypeError` that is also a :class:`ValueError`)."""


_REAL = (int, float, np.integer, np.floating)


def as_generator(rng: object, name: str = "rng") -> np.random.Generator:
    """Return ``rng`` as a :class:`numpy.random.Generator`.

    Parameters
    ----------
    rng : numpy.random.Generator or int or sequence of int
        A generator (returned unchanged, so its state advances as the caller expects) or a
        non-negative integer seed, passed to :func:`numpy.random.default_rng`.
    name : str
        Parameter name used in the error message.

    Raises
    ------
    ParameterTypeError
        Naming ``name`` for ``None``, booleans, floats, strings and anything else
        :func:`numpy.random.default_rng` refuses.

    Examples
    --------
    >>> rng = as_generator(0)
    >>> isinstance(rng, np.random.Generator), as_generator(rng) is rng
    (True, True)
    >>> try:
    ...     as_generator(None)
    ... except ValueError as e:
    ...     print(e)
    rng: expected a numpy.random.Generator or an integer seed, got None
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (bool, np.bool_, float, np.floating, str, bytes)):
        raise ParameterTypeError(f"{name}: expected a numpy.random.Generator or an integer seed, got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(
            f"{name}: expected a numpy.random.Generator or an integer seed, got {type(rng).__name__}"
        ) from exc


def torch_generator(gen: object, name: str = "gen") -> Any:
    """Return ``gen`` after checking it is a :class:`torch.Generator` (the models' randomness).

    torch is imported here, not at module level, so that the numpy-only families never load it.

    Raises
    ------
    ParameterTypeError
        Naming ``name`` for anything else (seeds included: a model's caller owns its generator).

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> torch_generator(g) is g
    True
    >>> try:
    ...     torch_generator(0)
    ... except TypeError as e:
    ...     print(e)
    gen: expected a torch.Generator, got int
    """
    import torch

    if not isinstance(gen, torch.Generator):
        raise ParameterTypeError(f"{name}: expected a torch.Generator, got {type(gen).__name__}")
    return gen


def positive_int(x: object, name: str, minimum: int = 1, *, maximum: int | None = None) -> int:
    """Return ``x`` as ``int`` after checking it is an integer with ``minimum <= x <= maximum``.

    Booleans are refused; ``numpy`` integers are accepted. ``minimum = 0`` checks a non-negative
    integer (a count, a number of steps), ``maximum`` an index or a rank bounded by a dimension
    (``maximum = K - 1`` for an index in ``[0, K)``). Every message names ``name``.

    Examples
    --------
    >>> positive_int(np.int64(3), "N"), positive_int(0, "steps", minimum=0)
    (3, 0)
    >>> try:
    ...     positive_int(0, "N")
    ... except ValueError as e:
    ...     print(e)
    N: expected a positive integer, got 0
    """
    if maximum is not None:
        what = f"an integer in [{minimum}, {maximum}]"
    else:
        what = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ParameterTypeError(f"{name}: expected {what}, got {x!r}")
    if x < minimum or (maximum is not None and x > maximum):
        raise ValueError(f"{name}: expected {what}, got {x!r}")
    return int(x)


def positive_float(x: object, name: str, allow_inf: bool = False, *, allow_zero: bool = False) -> float:
    """Return ``x`` as ``float`` after checking it is a real number ``> 0`` (``>= 0`` with
    ``allow_zero``), finite unless ``allow_inf``.

    Examples
    --------
    >>> positive_float(2, "eta"), positive_float(math.inf, "L", allow_inf=True)
    (2.0, inf)
    >>> try:
    ...     positive_float(-1.0, "eta")
    ... except ValueError as e:
    ...     print(e)
    eta: expected a finite positive number, got -1.0
    """
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, _REAL):
        raise ParameterTypeError(f"{name}: expected a real number, got {type(x).__name__}")
    v = float(x)
    bad_sign = v < 0 or (v == 0 and not allow_zero)
    if math.isnan(v) or bad_sign or (math.isinf(v) and not allow_inf):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name}: expected a {kind if allow_inf else 'finite ' + kind} number, got {x!r}")
    return v


def nonnegative_float(x: object, name: str) -> float:
    """Return ``x`` as ``float`` after checking it is a finite real number ``>= 0``.

    Examples
    --------
    >>> nonnegative_float(0, "sigma")
    0.0
    """
    return positive_float(x, name, allow_zero=True)


def probability(x: object, name: str) -> float:
    """Return ``x`` as ``float`` after checking it is a real number in the open interval ``(0, 1)``
    (a failure probability ``δ``, a confidence level).

    Examples
    --------
    >>> probability(0.05, "delta")
    0.05
    >>> try:
    ...     probability(1.0, "delta")
    ... except ValueError as e:
    ...     print(e)
    delta: expected a probability in (0, 1), got 1.0
    """
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, _REAL):
        raise ParameterTypeError(f"{name}: expected a probability in (0, 1), got {type(x).__name__}")
    v = float(x)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name}: expected a probability in (0, 1), got {x!r}")
    return v


def check_depth(L: object, name: str = "L", minimum: int = 1, *, allow_inf: bool = False) -> int | float:
    """Validate a depth (number of layers or of inner iterations).

    Parameters
    ----------
    L : int or float
        An integer ``>= minimum`` (integral floats are accepted), or ``math.inf`` when
        ``allow_inf`` (the infinite-depth limit).
    minimum : int
        ``1`` for a number of layers, ``0`` where ``L = 0`` (no step) is meaningful.

    Returns
    -------
    int or float
        ``int(L)``, or ``math.inf``.

    Examples
    --------
    >>> check_depth(3.0), check_depth(math.inf, allow_inf=True), check_depth(0, minimum=0)
    (3, inf, 0)
    """
    what = ("a positive integer depth" if minimum == 1 else f"an integer depth >= {minimum}") + (
        " or math.inf" if allow_inf else ""
    )
    if isinstance(L, (bool, np.bool_)) or not isinstance(L, _REAL):
        raise ParameterTypeError(f"{name}: expected {what}, got {L!r}")
    if isinstance(L, (float, np.floating)):
        if math.isinf(L) and L > 0:
            if not allow_inf:
                raise ValueError(f"{name}: the infinite-depth limit is not available here; pass {what}")
            return math.inf
        if not (math.isfinite(L) and float(L).is_integer()):
            raise ValueError(f"{name}: expected {what}, got {L!r}")
    if int(L) < minimum:
        raise ValueError(f"{name}: expected {what}, got {L!r}")
    return int(L)


def finite_array(x: object, name: str) -> np.ndarray:
    """Return ``x`` as a float array after checking every entry is finite.

    Examples
    --------
    >>> finite_array([1, 2], "x")
    array([1., 2.])
    >>> try:
    ...     finite_array([1.0, np.nan], "x")
    ... except ValueError as e:
    ...     print(e)
    x: contains NaN or infinite entries
    """
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"{name}: expected a real numeric array, got {type(x).__name__}") from exc
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    return a


def square_matrix(M: object, name: str, size: int | None = None) -> np.ndarray:
    """Return ``M`` as a finite float square matrix, of shape ``(size, size)`` when ``size`` is given.

    Examples
    --------
    >>> square_matrix([[1, 0], [0, 1]], "S", size=2).shape
    (2, 2)
    """
    a = finite_array(M, name)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name}: must be a square matrix, got shape {a.shape}")
    if size is not None and a.shape[0] != size:
        raise ValueError(f"{name}: shape {a.shape} does not match the dimension {size}")
    return a


def nonnegative_int_steps(steps: Sequence[int] | np.ndarray | int, name: str = "steps") -> np.ndarray:
    """Return step indices as a 1-D ``int64`` array of non-negative integers (a scalar becomes ``(1,)``).

    Examples
    --------
    >>> nonnegative_int_steps([0, 2.0, 5]), nonnegative_int_steps(3)
    (array([0, 2, 5]), array([3]))
    """
    a = np.asarray(steps)
    if a.ndim == 0:
        a = a[None]
    if a.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D sequence of non-negative integers, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        if (
            not np.issubdtype(a.dtype, np.number)
            or not np.all(np.isfinite(a.astype(float)))
            or np.any(a != np.round(a))
        ):
            raise ValueError(f"{name}: must contain non-negative integers")
    a = a.astype(np.int64)
    if np.any(a < 0):
        raise ValueError(f"{name}: must contain non-negative integers")
    return a


def nondecreasing_times(t: object, name: str = "t") -> np.ndarray:
    """Output times of a flow solve: a non-empty 1-D array of finite, non-negative, non-decreasing times.

    Examples
    --------
    >>> nondecreasing_times([0, 1, 1, 2])
    array([0., 1., 1., 2.])
    """
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(np.diff(t) < 0):
        raise ValueError(f"{name}: expected a non-empty 1-D array of non-decreasing, finite, non-negative times")
    return t


def nonnegative_grid(x: object, name: str) -> tuple[np.ndarray, bool]:
    """A scalar or 1-D grid of finite values ``>= 0`` (e.g. the ``gamma`` values of a landscape).

    Returns the grid as a 1-D float array and whether ``x`` was a scalar.

    Examples
    --------
    >>> nonnegative_grid(0.5, "gamma")
    (array([0.5]), True)
    """
    g = np.asarray(x, dtype=float)
    scalar = g.ndim == 0
    g = np.atleast_1d(g)
    if g.ndim != 1 or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f"{name}: expected finite values >= 0 (scalar or 1-D array)")
    return g, scalar


def positive_spectrum(s: object, name: str) -> np.ndarray:
    """Eigenvalues of a positive-definite covariance: a non-empty 1-D array, finite and ``> 0``.

    Examples
    --------
    >>> positive_spectrum([2.0, 1.0], "lam")
    array([2., 1.])
    """
    s = np.asarray(s, dtype=float)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of eigenvalues, got shape {s.shape}")
    if not (np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError(f"{name}: eigenvalues must be finite and > 0 (a positive definite covariance)")
    return s


def spectrum_pair(lam: object, omega: object) -> tuple[np.ndarray, np.ndarray]:
    """Covariance eigenvalues ``lam`` (finite, ``> 0``) and task variances ``omega`` (finite, ``>= 0``)
    of the same 1-D shape, the diagonal data model of the DMFT theory (Σ = diag(λ), Ω = diag(ω)).

    Examples
    --------
    >>> lam, omega = spectrum_pair([1.0, 0.5], [1.0, 0.0])
    >>> lam, omega
    (array([1. , 0.5]), array([1., 0.]))
    """
    lam = np.asarray(lam, dtype=float)
    omega = np.asarray(omega, dtype=float)
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"lam: expected a non-empty 1-D array of covariance eigenvalues, got shape {lam.shape}")
    if omega.shape != lam.shape:
        raise ValueError(f"omega: expected shape {lam.shape} (one task variance per eigenvalue), got {omega.shape}")
    if not (np.all(np.isfinite(lam)) and np.all(lam > 0)):
        raise ValueError("lam: covariance eigenvalues must be finite and positive")
    if not (np.all(np.isfinite(omega)) and np.all(omega >= 0)):
        raise ValueError("omega: task variances must be finite and non-negative")
    return lam, omega


def symmetric_matrix(S: object, name: str, rtol: float = 1e-10) -> np.ndarray:
    """Return ``S`` as a float array after checking it is a finite, non-empty, square matrix,
    symmetric to ``max|S - Sᵀ| <= rtol max(1, max|S|)`` (the symmetry test of :func:`symmetric_psd`).

    Parameters
    ----------
    S : array_like, shape (K, K)
    name : str
        Parameter name used in error messages.

    Examples
    --------
    >>> symmetric_matrix([[2.0, 1.0], [1.0, 2.0]], "S")
    array([[2., 1.],
           [1., 2.]])
    """
    S = finite_array(S, name)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(f"{name}: expected a non-empty square matrix, got shape {S.shape}")
    asym = float(np.abs(S - S.T).max())
    if asym > rtol * max(1.0, float(np.abs(S).max())):
        raise ValueError(f"{name}: matrix is not symmetric (max|{name} - {name}^T| = {asym:.3e})")
    return S


def _psd_eigenvalues(lam: np.ndarray, name: str, rtol: float, definite: bool) -> None:
    """Check ascending eigenvalues ``lam``: ``λ_min >= -rtol max(1, max|λ|)`` (``λ_min > 0`` if ``definite``)."""
    lo = float(lam[0])
    if definite and lo <= 0:
        raise ValueError(f"{name}: matrix is not positive definite (smallest eigenvalue {lo:.3e})")
    if lo < -rtol * max(1.0, float(np.abs(lam).max())):
        raise ValueError(f"{name}: matrix is not positive semi-definite (smallest eigenvalue {lo:.3e})")


def symmetric_psd(S: object, name: str, rtol: float = 1e-10, *, definite: bool = False) -> np.ndarray:
    """Return ``S`` as a float array after checking it is a finite, non-empty, square, symmetric,
    positive semi-definite matrix (positive definite with ``definite``).

    The package's one PSD check (with :func:`symmetric_psd_eigh`, which also returns the
    eigendecomposition). Tolerances: ``max|S - Sᵀ| <= rtol max(1, max|S|)`` and
    ``λ_min(½(S + Sᵀ)) >= -rtol max(1, max|λ|)``; ``definite`` requires ``λ_min > 0``.

    Parameters
    ----------
    S : array_like, shape (K, K)
    name : str
        Parameter name used in error messages.

    Examples
    --------
    >>> symmetric_psd(np.eye(2), "S").shape
    (2, 2)
    >>> try:
    ...     symmetric_psd([[1.0, 2.0], [2.0, 1.0]], "S")
    ... except ValueError as e:
    ...     print(e)
    S: matrix is not positive semi-definite (smallest eigenvalue -1.000e+00)
    """
    S = symmetric_matrix(S, name, rtol)
    _psd_eigenvalues(np.linalg.eigvalsh(0.5 * (S + S.T)), name, rtol, definite)
    return S


def symmetric_psd_eigh(
    S: object, name: str, rtol: float = 1e-10, *, definite: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Check ``S`` as :func:`symmetric_psd` does and return the eigendecomposition of ``½(S + Sᵀ)``.

    Returns
    -------
    lam : ndarray, shape (K,)
        Eigenvalues in ascending order (not clipped: round-off below 0 is the caller's to clip).
    Q : ndarray, shape (K, K)
        Orthonormal eigenvectors as columns, ``½(S + Sᵀ) = Q diag(lam) Qᵀ``.

    Examples
    --------
    >>> lam, Q = symmetric_psd_eigh(np.diag([2.0, 1.0]), "S")
    >>> lam, np.abs(Q)
    (array([1., 2.]), array([[0., 1.],
           [1., 0.]]))
    """
    S = symmetric_matrix(S, name, rtol)
    lam, Q = np.linalg.eigh(0.5 * (S + S.T))
    _psd_eigenvalues(lam, name, rtol, definite)
    return lam, Q
