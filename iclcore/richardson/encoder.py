"""Encoder-only low-rank recovery: ``b = G⋆ z + ξ`` and its gradient dynamics.

Implements main paper §5.1 and MMNN report §3.  A latent task ``z ~ N(0, Σ_z)``
(``z ∈ R^r``) is observed through ``q`` linear measurements
``b = G⋆ z + ξ`` with ``ξ ~ N(0, σ² I_q)`` independent of ``z``.  The encoder
dictionary ``G ∈ R^{q×r}`` minimises ``½ E||G z - b||²``; population gradient
descent is

.. math::

    \\begin{gathered}
    G_{s+1} = G_s - η_e (G_s Σ_z - Σ_{bz}),\\\\
    G_s - G_\\star = (G_0 - G_\\star)(I - η_e Σ_z)^s ,
    \\end{gathered}

and the risk (MMNN report normalisation ``1/q``, so that the floor is ``σ²``)

.. math::

    \\begin{aligned}
    R_{enc}(G) &= \\frac1q E||G z - b||^2\\\\
    &= σ^2 + \\frac1q \\operatorname{Tr}
    \\{(G - G_\\star) Σ_z (G - G_\\star)^\\top\\}\\\\
    &= σ^2 + \\frac1q \\sum_i μ_i (1 - η_e μ_i)^{2s} ||(G_0 - G_\\star) v_i||^2 .
    \\end{aligned}

The online run replaces ``Σ_z, Σ_bz`` by the moments of a fresh minibatch of
``B`` samples at every step (stochastic gradient descent).  It is vectorised
with sufficient statistics: ``Σ̂_z = (1/B) Z^T Z`` is drawn from its Wishart law
(Bartlett decomposition) and, given ``Z``, ``(1/B) Ξ^T Z`` is exactly Gaussian
with row covariance ``(σ²/B) Σ̂_z``, so a step costs ``O(r³ + q r²)`` whatever
``B``.  ``iclcore._reference.online_encoder_run_naive`` draws the samples explicitly (reference
for tests and the benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.lsq.dynamics import (
    check_step_size,
    excess_risk,
    gd_iterate,
    gd_trajectory,
    modal_excess_risk,
    psd_spectrum,
)
from iclcore.richardson.subspace import sin_theta, wedin_sin_bound
from iclcore.stats import batch_means, replica_spread
from iclcore.validation import as_generator, positive_int

__all__ = [
    "EncoderProblem",
    "make_encoder_problem",
    "sample_encoder_data",
    "encoder_risk",
    "encoder_population_trajectory",
    "encoder_modal_risk",
    "relative_error",
    "batch_moments",
    "OnlineEncoderResult",
    "online_encoder_run",
    "summarise_encoder_run",
    "heldout_risk",
    "sgd_stationary_sq_error",
    "sgd_multiplicative_excess",
    "ClosedFormCheck",
    "closed_form_check",
    "NoisyRunStatistics",
    "noisy_run_statistics",
    "NoiseFreeRunStatistics",
    "noise_free_run_statistics",
]


@dataclass(frozen=True, eq=False)
class EncoderProblem:
    """The encoder-only model ``b = G⋆ z + ξ`` (MMNN report §3.1).

    Attributes
    ----------
    G_star : ndarray, shape (q, r)
        True dictionary.
    Sigma_z : ndarray, shape (r, r)
        Latent covariance (symmetric positive definite).
    sigma : float
        Measurement noise standard deviation (``σ ≥ 0``); the risk floor is ``σ²``.
    """

    G_star: np.ndarray
    Sigma_z: np.ndarray
    sigma: float

    def __post_init__(self) -> None:
        G = np.asarray(self.G_star, dtype=float)
        if G.ndim != 2 or G.shape[1] < 1 or G.shape[0] < G.shape[1]:
            raise ValueError(f"G_star: must be a (q, r) matrix with q >= r >= 1, got shape {G.shape}")
        spec = psd_spectrum(self.Sigma_z, "Sigma_z", definite=True)
        if spec.Q.shape[0] != G.shape[1]:
            raise ValueError(f"Sigma_z: shape {np.shape(self.Sigma_z)} must be ({G.shape[1]}, {G.shape[1]})")
        if not np.isfinite(self.sigma) or self.sigma < 0:
            raise ValueError(f"sigma: noise level must be finite and >= 0, got {self.sigma!r}")

    @property
    def q(self) -> int:
        """Number of measurements (rows of ``G``)."""
        return int(np.shape(self.G_star)[0])

    @property
    def r(self) -> int:
        """Latent dimension (columns of ``G``)."""
        return int(np.shape(self.G_star)[1])

    @property
    def Sigma_bz(self) -> np.ndarray:
        """``Σ_bz = E[b z^T] = G⋆ Σ_z``, shape (q, r)."""
        return np.asarray(self.G_star) @ np.asarray(self.Sigma_z)

    @property
    def noise_floor(self) -> float:
        """``R_enc(G⋆) = σ²``."""
        return float(self.sigma) ** 2


def make_encoder_problem(
    q: int, mu: np.ndarray, sigma: float, *, rng: np.random.Generator, rotate: bool = True
) -> EncoderProblem:
    """A random instance: ``G⋆`` with i.i.d. ``N(0, 1/r)`` entries, ``Σ_z = V diag(μ) V^T``.

    Parameters
    ----------
    q : int
        Number of measurements.
    mu : array_like, shape (r,)
        Positive eigenvalues of ``Σ_z``.
    sigma : float
        Noise level.
    rng : numpy.random.Generator
    rotate : bool
        Use a random orthogonal ``V`` (so ``Σ_z`` is not diagonal); else ``V = I``.

    Returns
    -------
    EncoderProblem
    """
    rng = as_generator(rng)
    q = positive_int(q, "q")
    mu = np.asarray(mu, dtype=float)
    if mu.ndim != 1 or mu.size < 1 or np.any(~np.isfinite(mu)) or np.any(mu <= 0):
        raise ValueError(f"mu: must be a 1-D array of positive eigenvalues, got {mu!r}")
    r = mu.size
    if q < r:
        raise ValueError(f"q: need q >= r = {r}, got {q}")
    G = rng.standard_normal((q, r)) / np.sqrt(r)
    V = np.linalg.qr(rng.standard_normal((r, r)))[0] if rotate else np.eye(r)
    Sz = (V * mu) @ V.T
    return EncoderProblem(G_star=G, Sigma_z=0.5 * (Sz + Sz.T), sigma=float(sigma))


def sample_encoder_data(
    problem: EncoderProblem, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``n`` samples ``(z, b, ξ)`` of ``b = G⋆ z + ξ``.

    Returns
    -------
    z : ndarray, shape (n, r)
    b : ndarray, shape (n, q)
    xi : ndarray, shape (n, q)
        The noise, returned so that tests can form exact residuals.
    """
    rng = as_generator(rng)
    n = positive_int(n, "n")
    L = np.linalg.cholesky(np.asarray(problem.Sigma_z, float))
    z = rng.standard_normal((n, problem.r)) @ L.T
    xi = problem.sigma * rng.standard_normal((n, problem.q))
    return z, z @ np.asarray(problem.G_star).T + xi, xi


def _as_stack(G: np.ndarray, problem: EncoderProblem, name: str = "G") -> tuple[np.ndarray, bool]:
    G = np.asarray(G, dtype=float)
    stacked = G.ndim == 3
    Gs = G if stacked else G[None]
    if Gs.ndim != 3 or Gs.shape[1:] != (problem.q, problem.r):
        raise ValueError(
            f"{name}: expected shape ({problem.q}, {problem.r}) or (n, {problem.q}, {problem.r}), got {G.shape}"
        )
    return Gs, stacked


def encoder_risk(G: np.ndarray, problem: EncoderProblem) -> np.ndarray | float:
    """Exact population risk ``R_enc(G) = σ² + (1/q) Tr{(G-G⋆) Σ_z (G-G⋆)^T}``.

    Implements MMNN report §3.2 (and main paper §5.1 up to the factor ``1/q``).

    Parameters
    ----------
    G : array_like, shape (q, r) or a stack (n, q, r)
    problem : EncoderProblem

    Returns
    -------
    float, or ndarray of shape (n,)
    """
    Gs, stacked = _as_stack(G, problem)
    ex = excess_risk(Gs, problem.G_star, problem.Sigma_z, scale=1.0 / problem.q)
    r = problem.noise_floor + np.asarray(ex)
    return r if stacked else float(r[0])


def encoder_population_trajectory(
    G0: np.ndarray, problem: EncoderProblem, eta: float, *, steps: np.ndarray
) -> np.ndarray:
    """Boxed closed form ``G_s = G⋆ + (G_0 - G⋆)(I - η_e Σ_z)^s`` (main paper §5.1).

    Parameters
    ----------
    G0 : array_like, shape (q, r)
    problem : EncoderProblem
    eta : float, in ``(0, 2/λ_max(Σ_z))``
    steps : sequence of int

    Returns
    -------
    ndarray, shape (len(steps), q, r)
    """
    _as_stack(G0, problem, "G0")
    return gd_trajectory(G0, problem.G_star, problem.Sigma_z, eta=eta, steps=steps)


def encoder_modal_risk(G0: np.ndarray, problem: EncoderProblem, eta: float, *, steps: np.ndarray) -> np.ndarray:
    """Modal form ``σ² + (1/q) Σ_i μ_i (1-η_e μ_i)^{2s} ||(G_0-G⋆) v_i||²`` (main paper §5.1).

    Returns
    -------
    ndarray, shape (len(steps),)
    """
    _as_stack(G0, problem, "G0")
    return problem.noise_floor + modal_excess_risk(
        G0, problem.G_star, problem.Sigma_z, eta=eta, steps=steps, scale=1.0 / problem.q
    )


def relative_error(G: np.ndarray, G_star: np.ndarray) -> np.ndarray | float:
    """``||G - G⋆||_F / ||G⋆||_F`` for one matrix or a stack (n, q, r)."""
    G = np.asarray(G, float)
    Gs = np.asarray(G_star, float)
    if G.shape[-2:] != Gs.shape:
        raise ValueError(f"G: trailing shape {G.shape[-2:]} differs from G_star's {Gs.shape}")
    out = np.linalg.norm(G - Gs, axis=(-2, -1)) / np.linalg.norm(Gs)
    return out if G.ndim == 3 else float(out)


def batch_moments(
    problem: EncoderProblem, batch: int, n_batches: int, *, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Minibatch moments ``(Σ̂_z, Σ̂_bz)`` of ``n_batches`` independent batches, without samples.

    ``Σ̂_z = (1/B) Z^T Z`` with ``Z`` having ``B`` i.i.d. ``N(0, Σ_z)`` rows is
    ``Σ_z^{1/2} W Σ_z^{1/2} / B`` with ``W ~ Wishart_r(B, I)`` (Bartlett: ``W = A A^T``,
    ``A`` lower triangular, ``A_ii² ~ χ²_{B-i}``, ``A_ij ~ N(0,1)``; needs ``B >= r``).
    Given ``Z``, ``(1/B) Ξ^T Z`` has i.i.d. rows ``N(0, (σ²/B) Σ̂_z)``, so
    ``Σ̂_bz = G⋆ Σ̂_z + (σ/√B) N L^T`` with ``L L^T = Σ̂_z`` and ``N`` standard normal.
    This is the exact joint law of the explicit sample moments.

    Returns
    -------
    Sz_hat : ndarray, shape (n_batches, r, r)
    Sbz_hat : ndarray, shape (n_batches, q, r)
    """
    rng = as_generator(rng)
    B = positive_int(batch, "batch")
    n = positive_int(n_batches, "n_batches")
    r, q = problem.r, problem.q
    if B < r:
        raise ValueError(f"batch: the Wishart sampler needs batch >= r = {r}, got {B}")
    A = np.tril(rng.standard_normal((n, r, r)), -1)
    A[:, np.arange(r), np.arange(r)] = np.sqrt(rng.chisquare(B - np.arange(r), size=(n, r)))
    R = np.linalg.cholesky(np.asarray(problem.Sigma_z, float))
    L = np.einsum("ij,njk->nik", R, A) / np.sqrt(B)  # Σ̂_z = L L^T
    Sz = L @ np.swapaxes(L, 1, 2)
    Sbz = np.einsum("qi,nij->nqj", np.asarray(problem.G_star, float), Sz)
    if problem.sigma > 0:
        N = rng.standard_normal((n, q, r))
        Sbz = Sbz + (problem.sigma / np.sqrt(B)) * N @ np.swapaxes(L, 1, 2)
    return Sz, Sbz


def heldout_risk(G: np.ndarray, z: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """Held-out Monte Carlo risk ``(1/(n q)) Σ_i ||G z_i - b_i||²`` from explicit samples.

    Parameters
    ----------
    G : array_like, shape (q, r) or (S, q, r)
    z : array_like, shape (n, r)
    b : array_like, shape (n, q)

    Returns
    -------
    float, or ndarray of shape (S,)
    """
    G = np.asarray(G, float)
    z = np.asarray(z, float)
    b = np.asarray(b, float)
    if z.ndim != 2 or b.ndim != 2 or z.shape[0] != b.shape[0] or G.shape[-2:] != (b.shape[1], z.shape[1]):
        raise ValueError(f"G, z, b: incompatible shapes {G.shape}, {z.shape}, {b.shape}")
    Gs = G if G.ndim == 3 else G[None]
    out = np.array([np.mean((z @ g.T - b) ** 2) for g in Gs])
    return out if G.ndim == 3 else float(out[0])


@dataclass(frozen=True)
class OnlineEncoderResult:
    """Result of an online (minibatch SGD) encoder run.

    Attributes
    ----------
    steps : ndarray (S,)
        Recorded steps ``0..n_steps``.
    G : ndarray (S, q, r)
        Online iterates.
    G_pop : ndarray (S, q, r)
        Population-GD closed form from the same ``G_0``.
    risk_heldout : ndarray (S,)
        Held-out MC risk of the online iterate (fixed held-out set of ``n_eval`` samples).
    risk_iterate : ndarray (S,)
        Exact population risk of the online iterate, ``R_enc(G_s)``.
    risk_pred : ndarray (S,)
        Exact population curve ``R_enc`` along the closed form (modal formula).
    rel_err : ndarray (S,)
        ``||G_s - G⋆||_F/||G⋆||_F`` of the online iterate.
    rel_err_pred : ndarray (S,)
        Same for the closed form.
    sin2 : ndarray (S,)
        ``||sin Θ(range G_s, range G⋆)||_2²``.
    """

    steps: np.ndarray
    G: np.ndarray
    G_pop: np.ndarray
    risk_heldout: np.ndarray
    risk_iterate: np.ndarray
    risk_pred: np.ndarray
    rel_err: np.ndarray
    rel_err_pred: np.ndarray
    sin2: np.ndarray


def _sgd_from_moments(G0: np.ndarray, Sz: np.ndarray, Sbz: np.ndarray, eta: float) -> np.ndarray:
    n = Sz.shape[0]
    out = np.empty((n + 1, *G0.shape))
    G = np.array(G0, dtype=float)
    out[0] = G
    for s in range(n):
        G = G - eta * (G @ Sz[s] - Sbz[s])
        out[s + 1] = G
    return out


def _heldout_moments(problem: EncoderProblem, G: np.ndarray, z: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """``(1/(nq)) Σ||(G-G⋆) z_i - ξ_i||²`` for a stack, from held-out second moments.

    Algebraically equal to :func:`heldout_risk` on ``b = G⋆ z + ξ`` (the residual
    ``G z - b = (G - G⋆) z - ξ`` is formed before squaring, so the σ = 0 case has
    no cancellation).
    """
    n = z.shape[0]
    Szz = z.T @ z / n
    Szx = z.T @ xi / n  # (r, q)
    sxx = float(np.sum(xi * xi) / n)
    E = G - np.asarray(problem.G_star)[None]
    quad = np.einsum("sqi,ij,sqj->s", E, Szz, E)
    cross = np.einsum("sqi,iq->s", E, Szx)
    return (quad - 2.0 * cross + sxx) / problem.q


def _check_run(
    problem: EncoderProblem, G0: np.ndarray, eta: float, n_steps: int, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """Validate the common arguments of the online runs; return ``G0`` (q, r) and ``n_steps``."""
    rng = as_generator(rng)
    G0 = _as_stack(G0, problem, "G0")[0][0]
    check_step_size(eta, problem.Sigma_z, "eta")
    return G0, positive_int(n_steps, "n_steps")


def online_encoder_run(
    problem: EncoderProblem,
    G0: np.ndarray,
    eta: float,
    *,
    batch: int,
    n_steps: int,
    rng: np.random.Generator,
    n_eval: int = 10_000,
) -> OnlineEncoderResult:
    """Online encoder training by minibatch SGD with fresh samples (main paper §12.6, MMNN report §3.3).

    ``G_{s+1} = G_s - η_e (G_s Σ̂_{z,s} - Σ̂_{bz,s})`` with the moments of the
    ``s``-th fresh batch (drawn by :func:`batch_moments`), compared with the
    boxed population trajectory from the same ``G_0``.

    Parameters
    ----------
    problem : EncoderProblem
    G0 : array_like, shape (q, r)
    eta : float, in ``(0, 2/λ_max(Σ_z))``
    batch : int, ``>= r``
    n_steps : int
    rng : numpy.random.Generator
    n_eval : int
        Size of the independent held-out set.

    Returns
    -------
    OnlineEncoderResult
    """
    G0, n_steps = _check_run(problem, G0, eta, n_steps, rng)
    Sz, Sbz = batch_moments(problem, batch, n_steps, rng=rng)
    G = _sgd_from_moments(G0, Sz, Sbz, float(eta))
    z_ev, _, xi_ev = sample_encoder_data(problem, n_eval, rng)
    return summarise_encoder_run(problem, G0, G, eta=eta, heldout=_heldout_moments(problem, G, z_ev, xi_ev))


def summarise_encoder_run(
    problem: EncoderProblem, G0: np.ndarray, G: np.ndarray, *, eta: float, heldout: np.ndarray
) -> OnlineEncoderResult:
    """Collect an encoder run's iterates ``G`` (S, q, r) from ``G0`` with step ``eta`` and its held-out
    risks ``heldout`` (S,) with the population trajectory, risks, errors and subspace angles.
    """
    steps = np.arange(G.shape[0])
    G_pop = encoder_population_trajectory(G0, problem, eta, steps=steps)
    U_star = np.asarray(problem.G_star)
    sin2 = np.array([sin_theta(g, U_star, "2", squared=True) for g in G])
    return OnlineEncoderResult(
        steps=steps,
        G=G,
        G_pop=G_pop,
        risk_heldout=heldout,
        risk_iterate=np.asarray(encoder_risk(G, problem)),
        risk_pred=encoder_modal_risk(G0, problem, eta, steps=steps),
        rel_err=np.asarray(relative_error(G, problem.G_star)),
        rel_err_pred=np.asarray(relative_error(G_pop, problem.G_star)),
        sin2=sin2,
    )


def sgd_stationary_sq_error(problem: EncoderProblem, eta: float, batch: int) -> float:
    """Stationary ``E||G_s - G⋆||_F²`` of constant-step minibatch SGD, to first order in ``1/B``.

    Keeping the additive gradient noise ``(1/B) Ξ^T Z`` (row covariance ``σ² Σ_z / B``) and
    dropping the multiplicative noise ``E_s(Σ̂_z - Σ_z)`` (which vanishes at ``E = 0``), each row
    ``e`` of ``E = G - G⋆`` obeys ``e_{s+1} = e_s (I - ηΣ_z) + η n_s``; its stationary covariance
    in the eigenbasis of ``Σ_z`` is ``η σ² / (B (2 - η μ_i))``, so

    ``E||E||_F² ≈ q Σ_i η σ² / (B (2 - η μ_i))``.

    Returns
    -------
    float
    """
    spec = psd_spectrum(problem.Sigma_z, "Sigma_z")
    check_step_size(eta, problem.Sigma_z, "eta")
    B = positive_int(batch, "batch")
    return float(problem.q * np.sum(eta * problem.sigma**2 / (B * (2.0 - eta * spec.lam))))


def sgd_multiplicative_excess(problem: EncoderProblem, eta: float, batch: int, *, steps: int) -> float:
    """Order of the relative excess ``E[R(G_s)] / R_pop(s) - 1`` of noise-free minibatch SGD (σ = 0).

    With ``σ = 0`` the error ``E = G - G⋆`` obeys ``E_{s+1} = E_s (I - η Σ̂_{z,s})``; for Gaussian rows
    ``E‖e(Σ̂_z - Σ_z)‖² = (e Σ_z² eᵀ + e Σ_z eᵀ Tr Σ_z) / B``, so each step multiplies the mean squared
    error, relative to the population step, by at most ``1 + x`` with
    ``x = η² μ_max (μ_max + Tr Σ_z) / (B (1 - η μ_max)²)``. Over ``s`` steps the estimate is
    ``expm1(s x)``. For ``r = 1`` (``Tr Σ_z = μ``) it is the exact excess ``(1 + x)^s - 1`` up to the
    ``expm1`` rounding up; for ``r > 1`` it is an order-of-magnitude estimate (energy moved between
    modes by the noise is weighted by the slowest mode), used as the stated discretisation term of the
    observed/predicted ratio in the ledger.

    Parameters
    ----------
    problem : EncoderProblem
    eta : float, in ``(0, 1/λ_max(Σ_z))``
    batch : int, ``>= 1``
    steps : int, ``>= 0``

    Returns
    -------
    float
    """
    spec = psd_spectrum(problem.Sigma_z, "Sigma_z")
    check_step_size(eta, problem.Sigma_z, "eta")
    B = positive_int(batch, "batch")
    s = positive_int(steps, "steps", minimum=0)
    mu_max = float(np.max(spec.lam))
    if eta * mu_max >= 1.0:
        raise ValueError(f"eta: the estimate needs eta * lambda_max(Sigma_z) < 1, got {eta * mu_max!r}")
    x = eta**2 * mu_max * (mu_max + float(np.sum(spec.lam))) / (B * (1.0 - eta * mu_max) ** 2)
    return float(np.expm1(s * x))


# ---------------------------------------------------------------------------
# Checks and statistics of the runs (main paper §5.1, §11, §12.6; MMNN report §3.3)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ClosedFormCheck:
    """The boxed closed form and the modal risk against their literal definitions.

    Attributes
    ----------
    max_err_closed_form : float
        ``max_s max |G_s^{closed} - G_s^{loop}| / max |G⋆|``: the closed form
        :func:`encoder_population_trajectory` against the GD recursion run step by step.
    max_err_modal_rel : float
        ``max_s |R^{trace}(s) - R^{modal}(s)| / R^{modal}(s)``: the trace form of the risk
        (:func:`encoder_risk` along the closed form) against the modal sum (:func:`encoder_modal_risk`).
    """

    max_err_closed_form: float
    max_err_modal_rel: float


def closed_form_check(G0: np.ndarray, problem: EncoderProblem, eta: float, *, n_steps: int) -> ClosedFormCheck:
    """Check main paper §5.1 at steps ``0..n_steps``: the closed form of population GD and the modal risk.

    Parameters
    ----------
    G0 : array_like, shape (q, r)
    problem : EncoderProblem
    eta : float, in ``(0, 2/λ_max(Σ_z))``
    n_steps : int, ``>= 1``

    Returns
    -------
    ClosedFormCheck
        Both errors are at rounding level when the identities hold.
    """
    n_steps = positive_int(n_steps, "n_steps")
    grid = np.arange(n_steps + 1)
    closed = encoder_population_trajectory(G0, problem, eta, steps=grid)
    loop = gd_iterate(G0, problem.Sigma_bz, problem.Sigma_z, eta=eta, n_steps=n_steps)
    max_err_closed_form = float(np.abs(closed - loop).max() / np.abs(problem.G_star).max())
    risk_trace = np.asarray(encoder_risk(closed, problem))
    risk_modal = encoder_modal_risk(G0, problem, eta, steps=grid)
    return ClosedFormCheck(max_err_closed_form, float(np.max(np.abs(risk_trace - risk_modal) / risk_modal)))


@dataclass(frozen=True)
class NoisyRunStatistics:
    """Statistics of a noisy online encoder run at its end (MMNN report §3.3, Table 1).

    Attributes
    ----------
    ratio_final : float
        Held-out over exact population risk at the last step.
    ratio_se : float
        ``sqrt(2 / (q n_eval))``: relative standard error of a held-out mean of ``σ² χ²_q / q`` over
        ``n_eval`` samples (the risk at the noise floor), hence of the ratio.
    rel_err_stationary_pred : float
        ``sqrt(E||G - G⋆||_F²) / ||G⋆||_F`` of stationary SGD to first order in ``1/B``
        (:func:`sgd_stationary_sq_error`).
    rel_err_time_avg : float
        Root mean square of the run's relative error over the second half of the steps.
    rel_err_time_avg_se : float
        Its standard error: batch means of the correlated series ``rel_err²``, then the delta method
        for the square root.
    rel_err_multiplicative_term : float
        ``η Tr Σ_z / B``, the relative size of the multiplicative gradient noise that the stationary
        formula drops.
    sin2_wedin_bound : float
        ``(||G - G⋆||_2 / σ_r(G))²`` at the last step (:func:`~iclcore.richardson.subspace.wedin_sin_bound`).
    """

    ratio_final: float
    ratio_se: float
    rel_err_stationary_pred: float
    rel_err_time_avg: float
    rel_err_time_avg_se: float
    rel_err_multiplicative_term: float
    sin2_wedin_bound: float


def noisy_run_statistics(
    problem: EncoderProblem, result: OnlineEncoderResult, *, eta: float, batch: int, n_eval: int, n_blocks: int = 10
) -> NoisyRunStatistics:
    """The end-of-run statistics of :class:`NoisyRunStatistics` for a run of :func:`online_encoder_run`.

    ``eta``, ``batch`` and ``n_eval`` are those of the run; the time average and its batch-means
    standard error (``n_blocks`` blocks) use the steps ``s >= ⌊S/2⌋`` of the ``S`` steps.
    """
    n_eval = positive_int(n_eval, "n_eval")
    half = (result.rel_err.size - 1) // 2
    rel_err_time_avg = float(np.sqrt(np.mean(result.rel_err[half:] ** 2)))
    _, se_sq = batch_means(result.rel_err[half:] ** 2, n_blocks)
    return NoisyRunStatistics(
        ratio_final=float(result.risk_heldout[-1] / result.risk_pred[-1]),
        ratio_se=float(np.sqrt(2.0 / (problem.q * n_eval))),
        rel_err_stationary_pred=float(
            np.sqrt(sgd_stationary_sq_error(problem, eta, batch)) / np.linalg.norm(problem.G_star)
        ),
        rel_err_time_avg=rel_err_time_avg,
        rel_err_time_avg_se=se_sq / (2 * rel_err_time_avg),
        rel_err_multiplicative_term=eta * float(np.trace(problem.Sigma_z)) / batch,
        sin2_wedin_bound=wedin_sin_bound(result.G[-1], problem.G_star) ** 2,
    )


@dataclass(frozen=True)
class NoiseFreeRunStatistics:
    """Observed/predicted ratios of a noise-free online run and their replica standard errors (main paper §11, §12.6).

    Attributes
    ----------
    ratio_final, rel_err_ratio_final : float
        Held-out over predicted risk, and observed over predicted relative error, at the last step.
    max_abs_log_ratio : float
        ``max_s |log(R_heldout(s) / R_pred(s))|``.
    ratio_final_se, rel_err_ratio_final_se, max_abs_log_ratio_se : float
        Spread (sample standard deviation) of the three statistics over the main run and its replicas.
    sgd_excess : float
        :func:`sgd_multiplicative_excess` at the last step, the order of the SGD bias of the ratios.
    sin2_wedin_bound : float
        ``(||G - G⋆||_2 / σ_r(G))²`` at the last step of the main run.
    """

    ratio_final: float
    rel_err_ratio_final: float
    max_abs_log_ratio: float
    ratio_final_se: float
    rel_err_ratio_final_se: float
    max_abs_log_ratio_se: float
    sgd_excess: float
    sin2_wedin_bound: float


def noise_free_run_statistics(
    problem: EncoderProblem, runs: list[OnlineEncoderResult], *, eta: float, batch: int
) -> NoiseFreeRunStatistics:
    """The statistics of :class:`NoiseFreeRunStatistics` from a main run ``runs[0]`` and its replicas.

    The replicas ``runs[1:]`` start from the same problem and ``G_0`` with independent batches and
    held-out sets (at least one replica, so that a spread exists); ``eta`` and ``batch`` are those of
    the runs.
    """
    if len(runs) < 2:
        raise ValueError(f"runs: need the main run and at least one replica, got {len(runs)} run(s)")
    main = runs[0]
    return NoiseFreeRunStatistics(
        ratio_final=main.risk_heldout[-1] / main.risk_pred[-1],
        rel_err_ratio_final=main.rel_err[-1] / main.rel_err_pred[-1],
        max_abs_log_ratio=np.abs(np.log(main.risk_heldout / main.risk_pred)).max(),
        ratio_final_se=replica_spread([r_.risk_heldout[-1] / r_.risk_pred[-1] for r_ in runs]),
        rel_err_ratio_final_se=replica_spread([r_.rel_err[-1] / r_.rel_err_pred[-1] for r_ in runs]),
        max_abs_log_ratio_se=replica_spread([np.abs(np.log(r_.risk_heldout / r_.risk_pred)).max() for r_ in runs]),
        sgd_excess=sgd_multiplicative_excess(problem, eta, batch, steps=int(main.steps[-1])),
        sin2_wedin_bound=wedin_sin_bound(main.G[-1], problem.G_star) ** 2,
    )
