"""Population gradient descent on quadratic objectives, in closed form.

Every linear-attention pretraining problem in the seeds reduces to a
quadratic objective of a matrix parameter ``X`` (``P`` for the decoder,
``G`` for the encoder),

.. math::

    \\begin{gathered}
    \\mathcal R(X) = \\text{scale}\\,\\bigl(\\operatorname{tr}(X C X^\\top)
                     - 2 \\operatorname{tr}(X B^\\top) + \\operatorname{tr} S\\bigr),\\\\
    C = \\mathbb E[d d^\\top],\\; B = \\mathbb E[z d^\\top],\\; S = \\mathbb E[z z^\\top],
    \\end{gathered}

whose (rescaled) population gradient-descent iteration is

.. math::

    X_{s+1} = X_s - \\eta (X_s C - B), \\qquad X_\\star = B C^\\dagger .

Main paper §3.1 (decoder, ``X = P``, ``scale = 1/K``) and §5.1 (encoder,
``X = G``, ``C = Σ_z``, ``B = Σ_bz``, ``scale = 1``) are two instances, as is
MMNN report §3.2 (encoder with ``scale = 1/K``).  The module gives the exact
trajectory ``X_s - X_⋆ = (X_0 - X_⋆)(I - ηC)^s`` from one eigendecomposition
of ``C`` (vectorised over the requested steps), the naive loop as a reference,
the modal excess-risk formula and its spectral-overlap weights.

Shapes
------
``C`` is ``(K, K)`` symmetric positive semi-definite.  Parameters ``X`` are
``(m, K)`` matrices (``m`` rows = the output dimension) or 1-D vectors of length
``K`` (treated as one row; this is the form of the §7 counterexample, where the
risk is ``e^T C e`` without normalisation).

Normalisation
-------------
Main paper §3.1 defines ``R_dec(P) = (1/K) E||P d - z_⋆||²`` with ``z_⋆ ∈ R^K``:
the ``1/K`` is one over the number of *rows* of ``P`` (its output dimension).
The default ``scale=None`` therefore means ``1 / X.shape[0]`` for a matrix and
``1`` for a vector.  The encoder risk of main paper §5.1 has no normalisation
(pass ``scale=1.0``); MMNN report §3.2 divides by ``K = dim z`` (the number of
*columns* of ``G``): pass ``scale=1/K`` explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclcore.validation import finite_array, nonnegative_int_steps, positive_int, symmetric_psd_eigh

__all__ = [
    "PSD_RTOL",
    "Spectrum",
    "psd_spectrum",
    "check_step_size",
    "quadratic_minimizer",
    "quadratic_risk",
    "excess_risk",
    "gd_iterate",
    "gd_trajectory",
    "modal_energies",
    "modal_excess_risk",
    "modal_weights",
    "modal_entropy",
    "covariance_from_spectrum",
    "decoder_moments",
    "encoder_moments",
]

#: Relative tolerance of the covariance checks: ``max|C - C^T| <= PSD_RTOL max(1, max|C|)``, and
#: eigenvalues ``>= -PSD_RTOL max(1, max|λ|)`` count as zero (and are clipped to 0).
PSD_RTOL = 1e-10


@dataclass(frozen=True)
class Spectrum:
    """Eigendecomposition ``C = Q diag(lam) Q^T`` of a validated PSD matrix.

    Attributes
    ----------
    lam : ndarray, shape (K,)
        Eigenvalues in ascending order, tiny negative round-off clipped to 0.
    Q : ndarray, shape (K, K)
        Orthonormal eigenvectors as columns (``q_i = Q[:, i]``).
    """

    lam: np.ndarray
    Q: np.ndarray

    @property
    def lam_max(self) -> float:
        """Largest eigenvalue ``λ_max(C)``."""
        return float(self.lam[-1]) if self.lam.size else 0.0


def psd_spectrum(C: np.ndarray, name: str = "C", definite: bool = False) -> Spectrum:
    """Validate a covariance and return its eigendecomposition.

    Parameters
    ----------
    C : array_like, shape (K, K)
        Must be square, finite, symmetric and positive semi-definite, both to ``PSD_RTOL``
        (:func:`iclcore.validation.symmetric_psd_eigh`, the package's one PSD check).
    name : str
        Parameter name used in error messages.
    definite : bool
        Require ``C`` positive definite (smallest eigenvalue ``> 0``).

    Returns
    -------
    Spectrum
        ``lam`` ascending, clipped at 0, and ``Q`` orthonormal.

    Raises
    ------
    ValueError
        Naming ``name`` if ``C`` is not square, not symmetric or not PSD.

    Examples
    --------
    >>> spec = psd_spectrum(np.diag([2.0, 1.0]))
    >>> spec.lam, spec.Q.shape
    (array([1., 2.]), (2, 2))
    """
    lam, Q = symmetric_psd_eigh(C, name, rtol=PSD_RTOL, definite=definite)
    return Spectrum(lam=np.clip(lam, 0.0, None), Q=Q)


def check_step_size(eta: float, C: np.ndarray, name: str = "eta", *, C_name: str = "C") -> float:
    """Check that gradient descent with step ``eta`` on covariance ``C`` is stable.

    The iteration ``E_{s+1} = E_s (I - ηC)`` contracts every mode with
    ``λ_i > 0`` iff ``0 < η < 2/λ_max(C)`` (MMNN report §3.2).

    Parameters
    ----------
    eta : float
        Step size.
    C : array_like, shape (K, K)
        Symmetric PSD covariance.
    name : str
        Name of the step-size parameter in the error message (e.g. ``"eta_d"``).
    C_name : str
        Name of the covariance in the error message.

    Returns
    -------
    float
        ``eta`` as a float.

    Raises
    ------
    ValueError
        Naming ``C_name`` if ``C`` is not symmetric PSD, or naming ``name`` if ``eta``
        is not a finite number in ``(0, 2/λ_max)``.

    Examples
    --------
    >>> check_step_size(0.5, np.diag([2.0, 1.0]))
    0.5
    """
    return _check_eta(eta, psd_spectrum(C, C_name), name)


def _check_eta(eta: float, spec: Spectrum, name: str) -> float:
    if isinstance(eta, bool) or not np.isscalar(eta) and np.ndim(eta) != 0:
        raise ValueError(f"{name}: step size must be a real scalar, got {eta!r}")
    try:
        e = float(eta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: step size must be a real scalar, got {eta!r}") from exc
    lam_max = spec.lam_max
    bound = 2.0 / lam_max if lam_max > 0 else np.inf
    if not np.isfinite(e) or e <= 0 or e * lam_max >= 2.0:
        raise ValueError(f"{name}: step size {e!r} outside the stability window (0, 2/lambda_max) = (0, {bound:.6g})")
    return e


def _as_param(X: object, K: int, name: str) -> tuple[np.ndarray, bool]:
    """Return ``X`` as a 2-D ``(m, K)`` array and whether it was a vector."""
    X = finite_array(X, name)
    if X.ndim == 1:
        X2, vec = X[None, :], True
    elif X.ndim == 2:
        X2, vec = X, False
    else:
        raise ValueError(f"{name}: must be a vector (K,) or a matrix (m, K), got shape {X.shape}")
    if X2.shape[1] != K:
        raise ValueError(f"{name}: last dimension {X2.shape[1]} does not match C of shape ({K}, {K})")
    return X2, vec


def _match(X: np.ndarray, ref: np.ndarray, name: str, ref_name: str) -> None:
    if X.shape != ref.shape:
        raise ValueError(f"{name}: shape {X.shape} does not match {ref_name} of shape {ref.shape}")


def _stack_against(
    X: object, ref: object, C: object, ref_name: str
) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray, bool]:
    """Validate ``C`` and a reference parameter ``ref`` (``B`` or ``Xstar``); bring ``X`` to a stack.

    Returns ``C`` as an array, ``ref`` as ``(m, K)``, whether ``ref`` is a vector,
    ``X`` as a stack ``(n, m, K)`` and whether ``X`` was given as a stack.
    """
    spec = psd_spectrum(C, "C")
    C = finite_array(C, "C")
    ref2, vec = _as_param(ref, spec.Q.shape[0], ref_name)
    Xa = finite_array(X, "X")
    if vec:
        stacked = Xa.ndim == 2
        Xs = Xa[:, None, :] if stacked else Xa[None, None, :]
    else:
        stacked = Xa.ndim == 3
        Xs = Xa if stacked else Xa[None]
    if Xs.shape[1:] != ref2.shape:
        raise ValueError(f"X: shape {Xa.shape} does not match {ref_name} of shape {np.shape(ref)}")
    return C, ref2, vec, Xs, stacked


def _error_pair(X: object, Xstar: object, K: int, name: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """Validate ``X`` (called ``name``) and ``Xstar`` as same-shape parameters.

    Returns their ``(m, K)`` forms and whether ``X`` was a vector.
    """
    X2, vec = _as_param(X, K, name)
    Xs2, _ = _as_param(Xstar, K, "Xstar")
    _match(Xs2, X2, "Xstar", name)
    return X2, Xs2, vec


def _modal_energy(spec: Spectrum, E: np.ndarray) -> np.ndarray:
    """``λ_i ||E q_i||²`` for an error ``E`` of shape ``(m, K)``; shape ``(K,)``."""
    return spec.lam * np.sum((E @ spec.Q) ** 2, axis=0)


def _default_scale(X2: np.ndarray, vec: bool, scale: float | None) -> float:
    if scale is None:
        return 1.0 if vec else 1.0 / X2.shape[0]
    s = float(scale)
    if not np.isfinite(s) or s <= 0:
        raise ValueError(f"scale: must be a positive finite number, got {scale!r}")
    return s


def quadratic_minimizer(B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Minimum-norm minimiser ``X_⋆ = B C^†`` of the quadratic objective.

    Implements main paper §3.1 (``P_⋆ = B C^†``) and §5.1 (``G_⋆ Σ_z = Σ_bz``).
    It solves the normal equation ``X_⋆ C = B`` whenever ``B`` is consistent
    (its rows lie in the range of ``C``, true for any ``B = E[z d^T]``).

    Parameters
    ----------
    B : array_like, shape (m, K) or (K,)
    C : array_like, shape (K, K), symmetric PSD

    Returns
    -------
    ndarray, same shape as ``B``

    Raises
    ------
    ValueError
        If ``C`` is not symmetric PSD, shapes mismatch, or ``B`` is inconsistent
        (``||B (I - C^† C)|| > 1e-8 ||B||``): then the iteration has no fixed point.

    Examples
    --------
    >>> quadratic_minimizer(np.array([[2.0, 0.0]]), np.diag([2.0, 0.0]))
    array([[1., 0.]])
    """
    spec = psd_spectrum(C, "C")
    B2, vec = _as_param(B, spec.Q.shape[0], "B")
    tol = spec.lam_max * spec.Q.shape[0] * np.finfo(float).eps * 10
    keep = spec.lam > tol
    Qk = spec.Q[:, keep]
    BQ = B2 @ Qk
    X = (BQ / spec.lam[keep]) @ Qk.T
    resid = B2 - BQ @ Qk.T
    nb = np.linalg.norm(B2)
    if nb > 0 and np.linalg.norm(resid) > 1e-8 * nb:
        raise ValueError("B: rows are not in the range of C, so X C = B has no solution (no fixed point)")
    return X[0] if vec else X


def quadratic_risk(
    X: np.ndarray, B: np.ndarray, C: np.ndarray, *, S: np.ndarray | float, scale: float | None = None
) -> np.ndarray | float:
    """Population risk ``scale * E||X d - z||²`` from the second moments.

    ``R(X) = scale (tr(X C X^T) - 2 tr(X B^T) + tr S)`` with ``C = E[dd^T]``,
    ``B = E[z d^T]``, ``S = E[z z^T]`` (main paper §3.1, ``R_dec``; §5.1, ``R_enc``).
    This is computed from ``X`` itself, independently of any closed form.

    Parameters
    ----------
    X : array_like, shape (m, K), (K,), or a stack (n, m, K)
    B : array_like, shape (m, K) (or (K,) for vector ``X``)
    C : array_like, shape (K, K), symmetric PSD
    S : array_like, shape (m, m), or a float giving ``tr S`` directly
    scale : float, optional
        Default ``1/m`` for matrices, ``1`` for vectors (see module notes).

    Returns
    -------
    float, or ndarray of shape (n,) for a stack.

    Examples
    --------
    >>> C = B = S = np.eye(2)
    >>> quadratic_risk(np.eye(2), B, C, S=S, scale=1.0), quadratic_risk(np.zeros((2, 2)), B, C, S=S, scale=1.0)
    (0.0, 2.0)
    """
    C, B2, vec, Xs, stacked = _stack_against(X, B, C, "B")
    if np.ndim(S) == 0:
        trS = float(S)
    else:
        S = finite_array(S, "S")
        if S.shape != (B2.shape[0], B2.shape[0]):
            raise ValueError(f"S: shape {S.shape} must be ({B2.shape[0]}, {B2.shape[0]})")
        trS = float(np.trace(S))
    sc = _default_scale(B2, vec, scale)
    quad = np.einsum("nmk,kl,nml->n", Xs, C, Xs)
    lin = np.einsum("nmk,mk->n", Xs, B2)
    r = sc * (quad - 2.0 * lin + trS)
    return r if stacked else float(r[0])


def excess_risk(X: np.ndarray, Xstar: np.ndarray, C: np.ndarray, *, scale: float | None = None) -> np.ndarray | float:
    """Direct quadratic-form excess risk ``scale * tr((X - X_⋆) C (X - X_⋆)^T)``.

    Implements main paper §3.1: ``R_dec(P) - R_dec(P_⋆) = (1/K) Tr{(P-P_⋆) C (P-P_⋆)^T}``
    (and §5.1 with ``scale=1``; §7 for vectors: ``e^T C e``).

    Parameters
    ----------
    X : array_like, shape (m, K), (K,), or a stack (n, m, K) / (n, K)
    Xstar : array_like, shape (m, K) or (K,)
    C : array_like, shape (K, K), symmetric PSD
    scale : float, optional
        Default ``1/m`` for matrices and ``1`` for vectors.

    Returns
    -------
    float, or ndarray of shape (n,) for a stack.

    Examples
    --------
    >>> excess_risk(np.eye(2), np.zeros((2, 2)), np.diag([1.0, 3.0]), scale=1.0)
    4.0
    """
    C, Xs2, vec, Xs, stacked = _stack_against(X, Xstar, C, "Xstar")
    sc = _default_scale(Xs2, vec, scale)
    E = Xs - Xs2[None]
    r = sc * np.einsum("nmk,kl,nml->n", E, C, E)
    return r if stacked else float(r[0])


def gd_iterate(X0: np.ndarray, B: np.ndarray, C: np.ndarray, *, eta: float, n_steps: int) -> np.ndarray:
    """Naive loop ``X_{s+1} = X_s - η (X_s C - B)`` (reference implementation).

    Implements main paper §3.1 (``P_{s+1} = P_s - η(P_s C - B)``) and §5.1
    (``G_{s+1} = G_s - η_e(G_s Σ_z - Σ_bz)``) literally, one matrix product per step.

    Parameters
    ----------
    X0 : array_like, shape (m, K) or (K,)
    B : array_like, same shape as ``X0``
    C : array_like, shape (K, K), symmetric PSD
    eta : float, in ``(0, 2/λ_max(C))``
    n_steps : int, >= 0

    Returns
    -------
    ndarray, shape (n_steps + 1, *X0.shape)
        ``X_0, X_1, ..., X_{n_steps}``.

    Examples
    --------
    >>> X = gd_iterate(np.zeros((1, 1)), np.array([[1.0]]), np.array([[1.0]]), eta=0.5, n_steps=2)
    >>> X[:, 0, 0]
    array([0.  , 0.5 , 0.75])
    """
    spec = psd_spectrum(C, "C")
    K = spec.Q.shape[0]
    e = _check_eta(eta, spec, "eta")
    X2, vec = _as_param(X0, K, "X0")
    B2, _ = _as_param(B, K, "B")
    _match(B2, X2, "B", "X0")
    n_steps = positive_int(n_steps, "n_steps", minimum=0)
    C = finite_array(C, "C")
    out = np.empty((int(n_steps) + 1, *X2.shape))
    X = X2.copy()
    out[0] = X
    for s in range(int(n_steps)):
        X = X - e * (X @ C - B2)
        out[s + 1] = X
    return out[:, 0, :] if vec else out


def gd_trajectory(
    X0: np.ndarray, Xstar: np.ndarray, C: np.ndarray, *, eta: float, steps: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Closed form ``X_s = X_⋆ + (X_0 - X_⋆)(I - ηC)^s`` at the requested steps.

    Implements main paper §3.1, ``P_s - P_⋆ = (P_0 - P_⋆)(I - ηC)^s``, and the boxed
    §5.1 formula ``G_s - G_⋆ = (G_0 - G_⋆)(I - η_e Σ_z)^s``.  One
    eigendecomposition ``C = Q Λ Q^T``, then ``(I - ηC)^s = Q (1 - ηλ)^s Q^T``
    for all steps at once.

    Parameters
    ----------
    X0, Xstar : array_like, shape (m, K) or (K,)
        Initial point and fixed point (``X_⋆ = B C^†``, see :func:`quadratic_minimizer`).
    C : array_like, shape (K, K), symmetric PSD
    eta : float, in ``(0, 2/λ_max(C))``
    steps : sequence of int >= 0

    Returns
    -------
    ndarray, shape (len(steps), *X0.shape)

    Examples
    --------
    >>> C = np.diag([1.0, 2.0])
    >>> X = gd_trajectory(np.zeros((2, 2)), np.eye(2), C, eta=0.25, steps=[0, 3])
    >>> bool(np.allclose(X, gd_iterate(np.zeros((2, 2)), np.eye(2) @ C, C, eta=0.25, n_steps=3)[[0, 3]]))
    True
    """
    spec = psd_spectrum(C, "C")
    K = spec.Q.shape[0]
    e = _check_eta(eta, spec, "eta")
    X2, Xs2, vec = _error_pair(X0, Xstar, K, "X0")
    st = nonnegative_int_steps(steps)
    base = 1.0 - e * spec.lam  # (K,)
    factor = np.power(base[None, :], st[:, None])  # (S, K)
    E0Q = (X2 - Xs2) @ spec.Q  # (m, K)
    traj = Xs2[None] + (E0Q[None, :, :] * factor[:, None, :]) @ spec.Q.T
    return traj[:, 0, :] if vec else traj


def modal_energies(X: np.ndarray, Xstar: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Spectral overlaps ``E_i = λ_i ||(X - X_⋆) q_i||²`` (main paper §3.1, ``𝓔_{s,i}``).

    Parameters
    ----------
    X, Xstar : array_like, shape (m, K) or (K,)
    C : array_like, shape (K, K), symmetric PSD

    Returns
    -------
    ndarray, shape (K,), modes in ascending order of ``λ_i``.

    Examples
    --------
    >>> modal_energies(np.eye(2), np.zeros((2, 2)), np.diag([1.0, 3.0]))
    array([1., 3.])
    """
    spec = psd_spectrum(C, "C")
    K = spec.Q.shape[0]
    X2, Xs2, _ = _error_pair(X, Xstar, K, "X")
    return _modal_energy(spec, X2 - Xs2)


def modal_excess_risk(
    X0: np.ndarray,
    Xstar: np.ndarray,
    C: np.ndarray,
    *,
    eta: float,
    steps: Sequence[int] | np.ndarray,
    scale: float | None = None,
) -> np.ndarray:
    """Modal excess-risk formula along the gradient-descent trajectory.

    Implements main paper §3.1,
    ``R(P_s) - R(P_⋆) = (1/K) Σ_i λ_i (1 - ηλ_i)^{2s} ||(P_0 - P_⋆) q_i||²``,
    and §5.1 (encoder, ``scale=1``).  Uses only ``X0``, ``X_⋆`` and the spectrum of ``C``.

    Parameters
    ----------
    X0, Xstar : array_like, shape (m, K) or (K,)
    C : array_like, shape (K, K), symmetric PSD
    eta : float, in ``(0, 2/λ_max(C))``
    steps : sequence of int >= 0
    scale : float, optional
        Default ``1/m`` (= the paper's ``1/K`` for square ``P``); ``1`` for vectors.

    Returns
    -------
    ndarray, shape (len(steps),)

    Examples
    --------
    >>> C = np.diag([1.0, 3.0])
    >>> r = modal_excess_risk(np.eye(2), np.zeros((2, 2)), C, eta=0.25, steps=[0, 1], scale=1.0)
    >>> bool(np.allclose(r, [excess_risk(np.eye(2), np.zeros((2, 2)), C, scale=1.0), 0.75**2 + 3 * 0.25**2]))
    True
    """
    spec = psd_spectrum(C, "C")
    K = spec.Q.shape[0]
    e = _check_eta(eta, spec, "eta")
    X2, Xs2, vec = _error_pair(X0, Xstar, K, "X0")
    sc = _default_scale(X2, vec, scale)
    st = nonnegative_int_steps(steps)
    energy0 = _modal_energy(spec, X2 - Xs2)  # (K,)
    factor = np.power((1.0 - e * spec.lam)[None, :] ** 2, st[:, None])
    return sc * (factor @ energy0)


def modal_weights(
    X0: np.ndarray, Xstar: np.ndarray, C: np.ndarray, *, eta: float, steps: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Spectral-overlap weights ``w_{s,i}`` of the excess risk along the trajectory.

    Implements main paper §3.1 / §12.3 (``w_{s,i}``) and §9 (``Ω_{s,i}``):
    ``w_{s,i} = λ_i (1-ηλ_i)^{2s} ||E_0 q_i||² / Σ_j λ_j (1-ηλ_j)^{2s} ||E_0 q_j||²``.
    Computed in log space, so the weights stay defined when every mode has
    decayed below the floating-point range.

    Parameters
    ----------
    X0, Xstar : array_like, shape (m, K) or (K,)
    C : array_like, shape (K, K), symmetric PSD
    eta : float, in ``(0, 2/λ_max(C))``
    steps : sequence of int >= 0

    Returns
    -------
    ndarray, shape (len(steps), K)
        Rows sum to 1; columns follow ascending ``λ_i``.

    Raises
    ------
    ValueError
        Naming ``X0`` if the initial error has no energy (``X0 = X_⋆`` on range(C)).

    Examples
    --------
    >>> w = modal_weights(np.eye(2), np.zeros((2, 2)), np.diag([1.0, 3.0]), eta=0.25, steps=[0, 1])
    >>> w.shape, bool(np.allclose(w.sum(axis=-1), 1.0))
    ((2, 2), True)
    """
    spec = psd_spectrum(C, "C")
    K = spec.Q.shape[0]
    e = _check_eta(eta, spec, "eta")
    X2, Xs2, _ = _error_pair(X0, Xstar, K, "X0")
    st = nonnegative_int_steps(steps)
    energy0 = _modal_energy(spec, X2 - Xs2)
    base = np.abs(1.0 - e * spec.lam)
    alive = (energy0 > 0) & (base > 0)
    if not np.any(energy0 > 0):
        raise ValueError("X0: initial error X0 - Xstar has no energy on the range of C; weights undefined")
    with np.errstate(divide="ignore"):
        logw = np.where(
            alive[None, :],
            np.log(np.where(alive, energy0, 1.0))[None, :]
            + 2.0 * st[:, None] * np.log(np.where(alive, base, 1.0))[None, :],
            -np.inf,
        )
    # modes with base == 0 (ηλ_i = 1) are exactly zero for s >= 1 but present at s = 0
    dead_now = (energy0 > 0) & (base == 0)
    if np.any(dead_now):
        logw[:, dead_now] = np.where(st[:, None] == 0, np.log(energy0[dead_now])[None, :], -np.inf)
    top = np.max(logw, axis=1, keepdims=True)
    if np.any(~np.isfinite(top)):
        raise ValueError("X0: every mode of the initial error is annihilated; weights undefined")
    w = np.exp(logw - top)
    return w / w.sum(axis=1, keepdims=True)


def modal_entropy(weights: np.ndarray) -> np.ndarray:
    """Normalised entropy ``H(Ω) = -(1/log K) Σ_i Ω_i log Ω_i`` (main paper §9).

    Parameters
    ----------
    weights : array_like, shape (..., K)
        Probability vectors on the last axis (as from :func:`modal_weights`), ``K >= 2``.

    Returns
    -------
    ndarray, shape (...)
        In ``[0, 1]``: 0 when one mode holds all the error, 1 when it is spread evenly.

    Examples
    --------
    >>> bool(np.allclose(modal_entropy(np.array([[0.5, 0.5], [1.0, 0.0]])), [1.0, 0.0]))
    True
    """
    w = finite_array(weights, "weights")
    if w.ndim < 1 or w.shape[-1] < 2:
        raise ValueError(f"weights: last axis must have length >= 2, got shape {w.shape}")
    if np.any(w < 0) or not np.allclose(w.sum(axis=-1), 1.0, atol=1e-9):
        raise ValueError("weights: must be non-negative and sum to 1 along the last axis")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    return -terms.sum(axis=-1) / np.log(w.shape[-1])


def covariance_from_spectrum(eigenvalues: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``Q diag(eigenvalues) Q^T``, exactly symmetrised.

    Parameters
    ----------
    eigenvalues : array_like, shape (K,), non-negative
    Q : array_like, shape (K, K), orthogonal

    Examples
    --------
    >>> covariance_from_spectrum(np.array([1.0, 2.0]), np.eye(2))
    array([[1., 0.],
           [0., 2.]])
    """
    lam = finite_array(eigenvalues, "eigenvalues")
    Q = finite_array(Q, "Q")
    if lam.ndim != 1 or np.any(lam < 0):
        raise ValueError("eigenvalues: must be a 1-D array of non-negative numbers")
    if Q.shape != (lam.size, lam.size):
        raise ValueError(f"Q: shape {Q.shape} must be ({lam.size}, {lam.size})")
    if not np.allclose(Q.T @ Q, np.eye(lam.size), atol=1e-10):
        raise ValueError("Q: must be orthogonal")
    C = (Q * lam[None, :]) @ Q.T
    return 0.5 * (C + C.T)


def _moment_inputs(M: object, name: str, Sigma_z: object, noise_var: float) -> tuple[np.ndarray, np.ndarray]:
    """Validate a map ``M`` (called ``name``) acting on ``z ~ (0, Σ_z)`` and the noise variance."""
    M = finite_array(M, name)
    psd_spectrum(Sigma_z, "Sigma_z")
    Sigma_z = finite_array(Sigma_z, "Sigma_z")
    if M.ndim != 2 or M.shape[1] != Sigma_z.shape[0]:
        raise ValueError(f"{name}: shape {M.shape} does not match Sigma_z of shape {Sigma_z.shape}")
    if not np.isfinite(noise_var) or noise_var < 0:
        raise ValueError(f"noise_var: must be a finite non-negative number, got {noise_var!r}")
    return M, Sigma_z


def decoder_moments(H: np.ndarray, Sigma_z: np.ndarray, noise_var: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Second moments of the decoder problem ``d = H z_⋆ + ξ`` (main paper §3.1).

    With ``z_⋆ ~ (0, Σ_z)`` and independent ``ξ ~ (0, σ² I)``:
    ``C = E[dd^T] = H Σ_z H^T + σ² I``, ``B = E[z_⋆ d^T] = Σ_z H^T``,
    ``S = E[z_⋆ z_⋆^T] = Σ_z``; the oracle ``P_⋆ = B C^†`` is the Bayes (ridge) map.

    Parameters
    ----------
    H : array_like, shape (K, K)
    Sigma_z : array_like, shape (K, K), symmetric PSD
    noise_var : float, >= 0

    Returns
    -------
    (C, B, S) : tuple of ndarray, each (K, K)

    Examples
    --------
    >>> C, B, S = decoder_moments(np.diag([1.0, 2.0]), np.eye(2), noise_var=0.5)
    >>> np.diag(C), np.diag(B), np.diag(S)
    (array([1.5, 4.5]), array([1., 2.]), array([1., 1.]))
    """
    H, Sigma_z = _moment_inputs(H, "H", Sigma_z, noise_var)
    C = H @ Sigma_z @ H.T + noise_var * np.eye(H.shape[0])
    return 0.5 * (C + C.T), Sigma_z @ H.T, Sigma_z.copy()


def encoder_moments(
    Gstar: np.ndarray, Sigma_z: np.ndarray, noise_var: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Second moments of the encoder problem ``b = G_⋆ z + η_b`` (main paper §5.1).

    With ``z ~ (0, Σ_z)`` and independent noise of covariance ``σ² I``:
    ``C = Σ_z``, ``B = Σ_bz = G_⋆ Σ_z``, ``S = E[bb^T] = G_⋆ Σ_z G_⋆^T + σ² I``.

    Parameters
    ----------
    Gstar : array_like, shape (q, r)
    Sigma_z : array_like, shape (r, r), symmetric PSD
    noise_var : float, >= 0

    Returns
    -------
    (C, B, S) : ndarrays of shapes (r, r), (q, r), (q, q)

    Examples
    --------
    >>> C, B, S = encoder_moments(np.ones((3, 1)), np.eye(1), noise_var=0.1)
    >>> C.shape, B.shape, S.shape
    ((1, 1), (3, 1), (3, 3))
    """
    G, Sigma_z = _moment_inputs(Gstar, "Gstar", Sigma_z, noise_var)
    S = G @ Sigma_z @ G.T + noise_var * np.eye(G.shape[0])
    return Sigma_z.copy(), G @ Sigma_z, 0.5 * (S + S.T)
