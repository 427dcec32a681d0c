"""The §7 counterexample of the main paper: the scalar risk is not a closed state.

Two error states with the same scalar risk ``R_0 = e_0^T C e_0`` but placed on different
eigenvectors of ``C`` reach different risks after one gradient step ``e_1 = (I - ηC) e_0``, so no
recursion in the scalar risk alone can describe the dynamics (main paper §7). Split from
:mod:`iclcore.richardson.closure`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.lsq.dynamics import excess_risk, gd_iterate, modal_excess_risk, psd_spectrum
from iclcore.validation import finite_array, positive_int

__all__ = ["Counterexample", "counterexample", "counterexample_eigenvalues"]


@dataclass(frozen=True)
class Counterexample:
    """Two error states with equal risk and different spectral placement (main paper §7).

    Attributes
    ----------
    steps : ndarray, shape (n,)
    risk_a, risk_b : ndarray, shape (n,)
        ``R_s = e_s^T C e_s`` from the matrix iteration ``e_{s+1} = (I - ηC) e_s``.
    predicted_a, predicted_b : ndarray, shape (n,)
        ``(1 - ηλ)^{2s} R_0`` for the respective eigenvalue.
    lam_a, lam_b : float
        Eigenvalues carrying the two initial errors.
    eta : float
    """

    steps: np.ndarray
    risk_a: np.ndarray
    risk_b: np.ndarray
    predicted_a: np.ndarray
    predicted_b: np.ndarray
    lam_a: float
    lam_b: float
    eta: float


def counterexample(C: np.ndarray, eta: float, i: int, *, j: int, R0: float = 1.0, n_steps: int = 1) -> Counterexample:
    """Equal scalar risk, different future: the §7 counterexample of main paper.

    ``e_0^{(i)} = α_i q_i`` with ``α_i² λ_i = R_0`` (same for ``j``), iterated by
    ``e_{s+1} = (I - ηC) e_s``; then ``R_1 = (1 - ηλ)² R_0`` differs when
    ``λ_i ≠ λ_j``.

    Parameters
    ----------
    C : array_like, shape (K, K), symmetric PSD
    eta : float, in ``(0, 2/λ_max(C))``
    i, j : int
        Indices of eigenpairs in ascending eigenvalue order; ``λ_i, λ_j > 0``.
    R0 : float, > 0
        Common initial risk.
    n_steps : int, >= 1

    Returns
    -------
    Counterexample
    """

    spec = psd_spectrum(C, "C")
    K = spec.Q.shape[0]
    for name, idx in (("i", i), ("j", j)):
        positive_int(idx, name, minimum=0, maximum=K - 1)  # an eigenvalue index
        if spec.lam[idx] <= 0:
            raise ValueError(f"{name}: eigenvalue {spec.lam[idx]} must be positive for R_0 > 0")
    if not np.isfinite(R0) or R0 <= 0:
        raise ValueError(f"R0: must be a positive finite number, got {R0!r}")
    n_steps = positive_int(n_steps, "n_steps")
    Cm = finite_array(C, "C")
    zero = np.zeros(K)
    out = {}
    for key, idx in (("a", i), ("b", j)):
        e0 = np.sqrt(R0 / spec.lam[idx]) * spec.Q[:, idx]
        traj = gd_iterate(e0, zero, Cm, eta=eta, n_steps=int(n_steps))  # B = 0, fixed point 0
        out["risk_" + key] = excess_risk(traj, zero, Cm)
        out["predicted_" + key] = modal_excess_risk(e0, zero, Cm, eta=eta, steps=np.arange(int(n_steps) + 1))
    return Counterexample(
        steps=np.arange(int(n_steps) + 1),
        lam_a=float(spec.lam[i]),
        lam_b=float(spec.lam[j]),
        eta=float(eta),
        **out,
    )


def counterexample_eigenvalues(R1_a: float, R1_b: float, eta: float, *, R0: float = 1.0) -> tuple[float, float]:
    """Eigenvalues that produce given one-step risks: ``λ = (1 - sqrt(R_1/R_0)) / η``.

    Inverts ``R_1 = (1 - ηλ)² R_0`` on the non-overshooting branch
    ``0 < ηλ <= 1`` (the other branch is ``λ' = (1 + sqrt(R_1/R_0))/η``).

    Parameters
    ----------
    R1_a, R1_b : float, in ``[0, R0)``
    eta : float, > 0
    R0 : float, > 0

    Returns
    -------
    (lam_a, lam_b)
    """
    if not np.isfinite(eta) or eta <= 0:
        raise ValueError(f"eta: must be a positive finite number, got {eta!r}")
    if not np.isfinite(R0) or R0 <= 0:
        raise ValueError(f"R0: must be a positive finite number, got {R0!r}")
    lams = []
    for name, R1 in (("R1_a", R1_a), ("R1_b", R1_b)):
        if not np.isfinite(R1) or not 0 <= R1 < R0:
            raise ValueError(f"{name}: must lie in [0, R0) = [0, {R0}), got {R1!r}")
        lams.append((1.0 - np.sqrt(R1 / R0)) / eta)
    return float(lams[0]), float(lams[1])
