"""Population moments of the decoder pair and the oracle preconditioner.

Main paper §3.1: for the decoder ``ẑ = P d`` with risk
``R_dec(P) = (1/K) E‖P d − z⋆‖²`` the population objective depends on the data
only through

.. math::

    \\begin{gathered}
    C = E[d dᵀ], \\qquad B = E[z⋆ dᵀ], \\qquad S = E[z⋆ z⋆ᵀ],\\\\
    P⋆ = B C^†, \\qquad R_dec(P⋆) = \\tfrac1K (\\operatorname{Tr} S - \\operatorname{Tr} B C^† Bᵀ).
    \\end{gathered}

Closed forms for the Gaussian design of main paper §1.2 (``d = c_M``,
``Σ̂ = XᵀX/M``, ``Σ_β = E[ββᵀ]``), from the Wishart fourth moment
``E[Σ̂ A Σ̂] = (1 + 1/M) Σ A Σ + Tr(AΣ) Σ / M`` (``A`` symmetric; Isserlis) and
``E[Σ̂^{-1}] = M Σ^{-1}/(M − K − 1)``:

* target ``z⋆ = β``:
  ``C = (1 + 1/M) Σ Σ_β Σ + (Tr(Σ_β Σ) + σ²) Σ / M``, ``B = Σ_β Σ``, ``S = Σ_β``;
* target ``z⋆ = β^†_M`` with ``λ = 0`` and ``M > K + 1``: ``C`` as above,
  ``B = Σ_β Σ + (σ²/M) I``, ``S = Σ_β + σ² Σ^{-1}/(M − K − 1)``.

For the ridge target with ``λ > 0`` no closed form exists (``E[(Σ̂ + λI)^{-1} …]``
is not a finite Wishart moment); :func:`monte_carlo_moments` is the documented
fallback and ``method="auto"`` selects it only then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.lsq.dynamics import quadratic_minimizer, quadratic_risk
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics, sample_prompts
from iclcore.validation import finite_array, nonnegative_float, positive_int, symmetric_psd

__all__ = [
    "Moments",
    "closed_form_moments",
    "monte_carlo_moments",
    "population_moments",
    "oracle_preconditioner",
    "oracle_risk",
    "decoder_risk",
    "effective_dimension",
    "wishart_sandwich",
]


@dataclass(frozen=True)
class Moments:
    """Second moments of the decoder pair ``(d, z⋆)``.

    Attributes
    ----------
    C : ndarray (K, K)
        ``E[d dᵀ]``.
    B : ndarray (K, K)
        ``E[z⋆ dᵀ]``.
    S : ndarray (K, K)
        ``E[z⋆ z⋆ᵀ]``.
    method : str
        ``"closed"`` or ``"mc"``.
    n_samples : int
        Monte Carlo sample size (0 for closed forms).
    """

    C: np.ndarray
    B: np.ndarray
    S: np.ndarray
    method: str
    n_samples: int = 0

    @property
    def K(self) -> int:
        return self.C.shape[0]


def wishart_sandwich(Sigma: np.ndarray, A: np.ndarray, M: int) -> np.ndarray:
    """``E[Σ̂ A Σ̂]`` for ``Σ̂ = XᵀX/M``, rows of ``X`` i.i.d. ``N(0, Σ)``, ``A`` symmetric.

    ``= (1 + 1/M) Σ A Σ + Tr(AΣ) Σ / M`` (Isserlis' theorem on ``E[x xᵀ A x xᵀ]``).

    Parameters
    ----------
    Sigma : array_like, shape (K, K)
        Covariance ``Σ`` (finite, symmetric, positive semi-definite).
    A : array_like, shape (..., K, K)
        One symmetric matrix or a stack of them; the moment is taken for each.
    M : int, >= 1
        Number of samples in ``Σ̂``.

    Returns
    -------
    ndarray, shape (..., K, K)
        The shape of ``A``.

    Raises
    ------
    ValueError
        Naming ``Sigma`` if it is not a finite symmetric PSD matrix (a covariance), ``A`` if it is
        not finite, symmetric and of trailing shape ``(K, K)``, ``M`` if it is not a positive integer.

    Examples
    --------
    >>> W = wishart_sandwich(np.eye(2), np.eye(2), M=4)
    >>> bool(np.allclose(W, (1 + 1 / 4 + 2 / 4) * np.eye(2)))
    True
    """
    Sigma = symmetric_psd(Sigma, "Sigma")
    A = finite_array(A, "A")
    if A.shape[-2:] != Sigma.shape:
        raise ValueError(f"Sigma, A: expected (K, K) and (..., K, K) matrices, got {Sigma.shape} and {A.shape}")
    At = np.swapaxes(A, -1, -2)
    if not np.allclose(A, At, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(A).max())):
        raise ValueError("A: must be symmetric")
    M = positive_int(M, "M")
    tr = np.einsum("...ij,ji->...", A, Sigma)
    return (1 + 1 / M) * Sigma @ A @ Sigma + tr[..., None, None] / M * Sigma


def closed_form_moments(config: TaskConfig) -> Moments:
    """Exact ``C, B, S`` for the Gaussian design (see module docstring).

    Implements main paper §3.1 (``C = E[ddᵀ]``, ``B = E[z⋆dᵀ]``) for the §1.2 tasks.

    Raises
    ------
    ValueError
        ``lam``: for ``target="ridge"`` with ``λ > 0`` (no closed form; use
        :func:`monte_carlo_moments`), or ``M`` when ``M ≤ K + 1`` for the ridge target.

    Examples
    --------
    >>> m = closed_form_moments(TaskConfig(K=3, M=8))
    >>> m.C.shape, m.method, bool(np.allclose(m.C, m.C.T))
    ((3, 3), 'closed', True)
    """
    S_x, S_b, M, K = config.Sigma_x, config.Sigma_beta, config.M, config.K
    C = wishart_sandwich(S_x, S_b, M) + config.sigma**2 / M * S_x
    if config.target == "beta":
        B = S_b @ S_x
        S = S_b.copy()
    else:
        if config.lam > 0:
            raise ValueError(
                "lam: no closed form for target='ridge' with lam > 0; use monte_carlo_moments (method='mc')"
            )
        if M <= K + 1:
            raise ValueError(f"M: target='ridge' closed form needs M > K + 1 (got M={M}, K={K})")
        B = S_b @ S_x + config.sigma**2 / M * np.eye(K)
        S = S_b + config.sigma**2 / (M - K - 1) * np.linalg.inv(S_x)
    C = 0.5 * (C + C.T)
    return Moments(C=C, B=B, S=S, method="closed")


def monte_carlo_moments(config: TaskConfig, n_samples: int, rng: np.random.Generator, *, chunk: int = 4096) -> Moments:
    """Monte Carlo estimate of ``C, B, S`` from ``n_samples`` prompts (documented fallback).

    Uses the exact sufficient-statistics sampler when ``M ≥ K`` (else explicit
    prompts), in chunks of ``chunk`` prompts. Relative error of each entry is
    ``O(n_samples^{-1/2})``.

    Examples
    --------
    >>> m = monte_carlo_moments(TaskConfig(K=3, M=8), 2000, np.random.default_rng(0))
    >>> m.C.shape, m.n_samples
    ((3, 3), 2000)
    """
    n_samples = positive_int(n_samples, "n_samples", minimum=2)
    chunk = positive_int(chunk, "chunk")
    K = config.K
    C = np.zeros((K, K))
    B = np.zeros((K, K))
    S = np.zeros((K, K))
    sampler = sample_prompt_statistics if config.M >= K else sample_prompts
    done = 0
    while done < n_samples:
        m = min(chunk, n_samples - done)
        p = sampler(config, m, rng)
        C += p.d.T @ p.d
        B += p.z_star.T @ p.d
        S += p.z_star.T @ p.z_star
        done += m
    C /= n_samples
    return Moments(C=0.5 * (C + C.T), B=B / n_samples, S=S / n_samples, method="mc", n_samples=int(n_samples))


def population_moments(
    config: TaskConfig,
    method: str = "auto",
    n_samples: int = 200_000,
    *,
    rng: np.random.Generator | None = None,
) -> Moments:
    """Population moments: closed form where it exists, Monte Carlo otherwise.

    Parameters
    ----------
    method : {"auto", "closed", "mc"}
        ``auto`` = closed form unless ``target="ridge"`` and ``λ > 0``.
    n_samples, rng
        Monte Carlo size and generator (required when Monte Carlo is used).

    Examples
    --------
    >>> population_moments(TaskConfig(K=3, M=8)).method
    'closed'
    """
    if method not in ("auto", "closed", "mc"):
        raise ValueError(f"method: unknown method {method!r}; choose 'auto', 'closed' or 'mc'")
    use_mc = method == "mc" or (method == "auto" and config.target == "ridge" and config.lam > 0)
    if not use_mc:
        return closed_form_moments(config)
    if rng is None:
        raise ValueError("rng: a numpy.random.Generator is required for Monte Carlo moments")
    return monte_carlo_moments(config, n_samples, rng)


def oracle_preconditioner(moments: Moments) -> np.ndarray:
    """``P⋆ = B C^†`` (main paper §3.1), shape (K, K).

    Examples
    --------
    >>> m = closed_form_moments(TaskConfig(K=3, M=8))
    >>> P = oracle_preconditioner(m)
    >>> P.shape, bool(np.allclose(P @ m.C, m.B))
    ((3, 3), True)
    """
    return quadratic_minimizer(moments.B, moments.C)


def decoder_risk(P: np.ndarray, moments: Moments) -> np.ndarray | float:
    """``R_dec(P) = (1/K) E‖P d − z⋆‖² = (1/K)(Tr PCPᵀ − 2 Tr PBᵀ + Tr S)`` (main paper §3.1).

    ``P`` may be (K, K) or a stack (n, K, K).

    Examples
    --------
    >>> m = closed_form_moments(TaskConfig(K=3, M=8))
    >>> bool(np.isclose(decoder_risk(oracle_preconditioner(m), m), oracle_risk(m)))
    True
    >>> bool(np.isclose(decoder_risk(np.zeros((3, 3)), m), np.trace(m.S) / 3))
    True
    """
    return quadratic_risk(P, moments.B, moments.C, S=moments.S, scale=1.0 / moments.K)


def oracle_risk(moments: Moments) -> float:
    """The oracle floor ``R_dec(P⋆) = (1/K)(Tr S − Tr B C^† Bᵀ)``.

    Examples
    --------
    >>> m = closed_form_moments(TaskConfig(K=3, M=8))
    >>> bool(0.0 < oracle_risk(m) < decoder_risk(np.zeros((3, 3)), m))
    True
    """
    P = oracle_preconditioner(moments)
    return float((np.trace(moments.S) - np.trace(P @ moments.B.T)) / moments.K)


def effective_dimension(C: np.ndarray, lam: float) -> float:
    """``d_eff(λ) = Tr{C (C + λI)^{-1}}`` (main paper §3.2); ``λ = 0`` gives ``rank C``.

    Parameters
    ----------
    C : array_like, shape (K, K)
        Symmetric positive semi-definite (a covariance: the decoder's ``C``, or a prompt covariance ``Σ_x``).
    lam : float, >= 0
        Ridge.

    Raises
    ------
    ValueError
        Naming ``C`` if it is not a finite symmetric PSD matrix, ``lam`` if it is negative or not finite.

    Examples
    --------
    >>> effective_dimension(np.eye(3), 0.0)
    3.0
    >>> round(effective_dimension(np.eye(3), 1.0), 6)
    1.5
    """
    C = symmetric_psd(C, "C")
    lam = nonnegative_float(lam, "lam")
    ev = np.clip(np.linalg.eigvalsh(0.5 * (C + C.T)), 0, None)
    if lam == 0:
        return float(np.sum(ev > ev.max() * C.shape[0] * np.finfo(float).eps * 10))
    return float(np.sum(ev / (ev + lam)))
