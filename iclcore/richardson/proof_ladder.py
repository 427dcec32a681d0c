"""The exact scalar proof ladder of the main paper (Figure 8, §12.8): each rung's closed form against its iteration.

One function per rung draws its model from a ``numpy.random.Generator``, runs the matrix iteration and
evaluates the closed form that claims to describe it, and returns the curves and their largest
pointwise disagreement:

* (a) decoder only, §3.1: ``P_{s+1} = P_s - η(P_s C - B)`` against the modal risk
  ``(1/K) Σ_i λ_i (1 - ηλ_i)^{2s} ‖(P_0 - P⋆) q_i‖²`` (:func:`decoder_rung`);
* (b) encoder only, §5.1: the same with ``Σ_z`` and the unnormalised risk (:func:`encoder_rung`);
* (c) the commuting coupled system, §6.4–§6.5: the mode-wise product/sum formula and the scalar closure
  ``R_dec(s, L) = Σ_i w_i(s)(1 - p_i(s) a_i(s))^{2L}`` against the full-matrix iteration
  (:func:`commuting_rung`);
* (e) the non-commuting coupled system, §6.6: the ordered product/sum formula for
  ``E_{s+1} = E_s(I - η_d C_s) + D_s`` against the iteration, and the §6.5 closure in fixed bases
  (:func:`noncommuting_rung`, :func:`closure_bases`).

Rung (d), the §7 counterexample, is :func:`iclcore.richardson.counterexample.counterexample`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.linalg import haar_orthogonal, joint_diagonalizer
from iclcore.lsq.dynamics import (
    covariance_from_spectrum,
    decoder_moments,
    encoder_moments,
    excess_risk,
    gd_iterate,
    gd_trajectory,
    modal_entropy,
    modal_excess_risk,
    modal_weights,
    quadratic_minimizer,
    quadratic_risk,
)
from iclcore.richardson.closure import (
    EncDecTrajectory,
    closure_log_ratio,
    closure_mismatch,
    commutator_defect,
    encdec_iterate,
    fixed_basis_closure_risk,
    mode_product_sum,
    mode_recursion,
    richardson_matrix_risk,
    richardson_mode_risk,
    tracking_error_product_sum,
)
from iclcore.richardson.latent_model import CommutingModel, LatentModel
from iclcore.validation import as_generator, positive_int

__all__ = [
    "ModalRung",
    "quadratic_gd_rung",
    "decoder_rung",
    "encoder_rung",
    "check_times",
    "CommutingRung",
    "commuting_rung",
    "closure_bases",
    "NonCommutingRung",
    "noncommuting_rung",
    "ClosureControl",
    "commuting_closure_control",
]


@dataclass(frozen=True)
class ModalRung:
    """A quadratic gradient-descent rung (decoder §3.1 or encoder §5.1) against its modal closed form.

    Attributes
    ----------
    eta : float
        Step size.
    risk_iteration : ndarray (S+1,)
        Excess risk ``scale · tr((X_s - X⋆) C (X_s - X⋆)ᵀ)`` at the looped iterates ``X_s``.
    risk_modal : ndarray (S+1,)
        The modal formula ``scale · Σ_i λ_i (1 - ηλ_i)^{2s} ‖(X_0 - X⋆) q_i‖²`` from ``X_0`` alone.
    error : ndarray (S+1,)
        ``|risk_modal - risk_iteration|``.
    max_error : float
        ``max_s error``.
    max_error_population : float
        ``max_s |risk_modal - (R(X_s) - R(X⋆))|`` with ``R`` the population risk from the moments.
    max_error_trajectory_rel : float
        ``max |X_s^loop - X_s^closed| / max |X_s^loop|`` (closed form ``X⋆ + (X_0 - X⋆)(I - ηC)^s``).
    weights, entropy : ndarray (S+1, K) and (S+1,), or None
        Spectral-overlap weights ``Ω_{s,i}`` (§3.1, §12.3) and their normalised entropy, when asked for.
    """

    eta: float
    risk_iteration: np.ndarray
    risk_modal: np.ndarray
    error: np.ndarray
    max_error: float
    max_error_population: float
    max_error_trajectory_rel: float
    weights: np.ndarray | None = None
    entropy: np.ndarray | None = None


def quadratic_gd_rung(
    X0: np.ndarray,
    Xstar: np.ndarray,
    moments: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    eta: float,
    steps: int,
    scale: float | None = None,
    with_weights: bool = False,
) -> ModalRung:
    """Gradient descent ``X_{s+1} = X_s - η(X_s C - B)`` for ``s = 0..steps`` against its modal formulas.

    Parameters
    ----------
    X0, Xstar : ndarray (m, n)
        Start and minimiser.
    moments : tuple (C, B, S)
        ``C`` (n, n), ``B`` (m, n) and the output second moment ``S`` (m, m) of the quadratic risk
        (:func:`iclcore.lsq.dynamics.decoder_moments` or :func:`~iclcore.lsq.dynamics.encoder_moments`).
    eta : float
        Step size in ``(0, 2/λ_max(C))``.
    steps : int, >= 1
    scale : float, optional
        Risk normalisation (default ``1/m``, as :func:`iclcore.lsq.dynamics.excess_risk`).
    with_weights : bool
        Also return the overlap weights and their entropy.
    """
    steps = positive_int(steps, "steps")
    C, B, S = moments
    s_grid = np.arange(steps + 1)
    X_loop = gd_iterate(X0, B, C, eta=eta, n_steps=steps)
    X_closed = gd_trajectory(X0, Xstar, C, eta=eta, steps=s_grid)
    risk_iter = excess_risk(X_loop, Xstar, C, scale=scale)
    risk_pop = quadratic_risk(X_loop, B, C, S=S, scale=scale) - quadratic_risk(Xstar, B, C, S=S, scale=scale)
    risk_modal = modal_excess_risk(X0, Xstar, C, eta=eta, steps=s_grid, scale=scale)
    err = np.abs(risk_modal - risk_iter)
    weights = entropy = None
    if with_weights:
        weights = modal_weights(X0, Xstar, C, eta=eta, steps=s_grid)
        entropy = modal_entropy(weights)
    return ModalRung(
        eta=float(eta),
        risk_iteration=risk_iter,
        risk_modal=risk_modal,
        error=err,
        max_error=float(err.max()),
        max_error_population=float(np.abs(risk_modal - risk_pop).max()),
        max_error_trajectory_rel=float(np.abs(X_loop - X_closed).max() / np.abs(X_loop).max()),
        weights=weights,
        entropy=entropy,
    )


def decoder_rung(
    rng: np.random.Generator, *, K: int, cond: float, noise_var: float, eta_frac: float, steps: int
) -> ModalRung:
    """Rung (a), the decoder only (main paper §3.1), with overlap weights.

    Draws ``H = Q diag(geomspace(1/cond, 1, K)) Qᵀ`` and ``Σ_z = Q' diag(U(0.5, 1.5)^K) Q'ᵀ`` (Haar ``Q, Q'``),
    so ``C = HΣ_zHᵀ + σ²I``, ``B = Σ_zHᵀ``, ``P⋆ = BC^†``; starts at ``P_0 = 0`` with
    ``η = eta_frac · 2/λ_max(C)``; risk normalised by ``1/K``.
    """
    rng = as_generator(rng)
    K = positive_int(K, "K")
    H = covariance_from_spectrum(np.geomspace(1.0 / cond, 1.0, K), haar_orthogonal(K, rng))
    Sigma = covariance_from_spectrum(rng.uniform(0.5, 1.5, K), haar_orthogonal(K, rng))
    C, B, S = decoder_moments(H, Sigma, noise_var)
    P_star = quadratic_minimizer(B, C)
    eta = eta_frac * 2.0 / np.linalg.eigvalsh(C)[-1]
    return quadratic_gd_rung(np.zeros((K, K)), P_star, (C, B, S), eta=eta, steps=steps, with_weights=True)


def encoder_rung(
    rng: np.random.Generator, *, K: int, r: int, noise_var: float, eta_frac: float, steps: int
) -> ModalRung:
    """Rung (b), the encoder only (main paper §5.1), with the unnormalised risk ``E‖Gz - b‖²`` (scale 1).

    Draws ``Σ_z = Q diag(geomspace(0.05, 1, r)) Qᵀ`` (Haar ``Q``) and ``G⋆`` (K, r) with i.i.d.
    ``N(0, 1/(K r))`` entries (so ``‖G⋆‖_F ≈ 1``); starts at ``G_0 = 0`` with ``η_e = eta_frac · 2/λ_max(Σ_z)``.
    """
    rng = as_generator(rng)
    K, r = positive_int(K, "K"), positive_int(r, "r")
    Sigma = covariance_from_spectrum(np.geomspace(0.05, 1.0, r), haar_orthogonal(r, rng))
    G_star = rng.standard_normal((K, r)) / np.sqrt(K * r)
    C, B, S = encoder_moments(G_star, Sigma, noise_var)
    eta = eta_frac * 2.0 / np.linalg.eigvalsh(C)[-1]
    return quadratic_gd_rung(np.zeros((K, r)), G_star, (C, B, S), eta=eta, steps=steps, scale=1.0)


def check_times(steps: int, n_check: int) -> np.ndarray:
    """Outer times ``s`` at which commutators and joint diagonalisers are evaluated: ``n_check`` points of
    ``linspace(0, steps)`` truncated to integers, deduplicated; shape (≤ n_check,)."""
    steps = positive_int(steps, "steps", minimum=0)
    n_check = positive_int(n_check, "n_check")
    return np.unique(np.linspace(0, steps, n_check).astype(int))


@dataclass(frozen=True)
class CommutingRung:
    """Rung (c): the commuting coupled encoder/decoder system (main paper §6.4–§6.5).

    Attributes
    ----------
    model : CommutingModel
    eta_e, eta_d : float
        Encoder and decoder steps.
    p : ndarray (S+1, r)
        Decoder mode values ``p_i(s)`` from the product/sum formula.
    mode_terms : ndarray (S+1, r)
        ``w_i(s)(1 - p_i(s) a_i(s))^{2L}``.
    risk_closure, risk_matrix : ndarray (S+1,)
        The scalar closure ``R_dec(s, L)`` and the same risk from the full-matrix iteration.
    error : ndarray (S+1,)
        ``|risk_closure - risk_matrix|``.
    trajectory : EncDecTrajectory
        The full-matrix iteration.
    max_error, max_error_modes_rel, max_error_product_sum_rel : float
        ``max_s error``; ``max |V diag(p_s) Vᵀ - P_s| / max |P_s|``; product/sum formula against the mode
        recursion, ``max |p^ps - p^rec| / max |p^rec|``.
    commutator : float
        :func:`~iclcore.richardson.closure.commutator_defect` of ``C(G_s)`` at the check times.
    """

    model: CommutingModel
    eta_e: float
    eta_d: float
    p: np.ndarray
    mode_terms: np.ndarray
    risk_closure: np.ndarray
    risk_matrix: np.ndarray
    error: np.ndarray
    trajectory: EncDecTrajectory
    max_error: float
    max_error_modes_rel: float
    max_error_product_sum_rel: float
    commutator: float


def commuting_rung(
    rng: np.random.Generator,
    *,
    r: int,
    noise_var: float,
    eta_e_frac: float,
    eta_d_frac: float,
    steps: int,
    L: int,
    check_idx: np.ndarray,
) -> CommutingRung:
    """Rung (c): the commuting system's scalar closure against its full-matrix iteration (§6.4–§6.5).

    Draws ``h = geomspace(0.3, 2, r)``, ``g⋆ ~ U(0.8, 1.2)^r``, ``σ = geomspace(0.1, 1, r)``, a Haar basis
    ``V`` and ``g(0) ~ U(0.3, 0.6)^r``; ``η_e = eta_e_frac · 2/max σ``, ``η_d = eta_d_frac · 2/max_{s,i} c_i(s)``,
    ``P_0 = 0``. The closure evaluates ``p_i(s)`` by the product/sum formula and
    ``R_dec(s, L) = Σ_i w_i(1 - p_i a_i)^{2L}``; the matrix side iterates ``G_s, P_s`` (r, r) and evaluates
    ``(1/r) tr[(I - P_sA_s)^L E z^†z^{†ᵀ} (I - P_sA_s)^{Lᵀ}]``.
    """
    rng = as_generator(rng)
    r = positive_int(r, "r")
    cm = CommutingModel(
        h=np.geomspace(0.3, 2.0, r),
        gstar=rng.uniform(0.8, 1.2, r),
        sigma=np.geomspace(0.1, 1.0, r),
        noise_var=noise_var,
        V=haar_orthogonal(r, rng),
    )
    g0 = rng.uniform(0.3, 0.6, r)
    eta_e = eta_e_frac * 2.0 / cm.sigma.max()
    coef = cm.coefficients(cm.encoder_modes(g0, eta_e, steps))
    eta_d = eta_d_frac * 2.0 / coef.c.max()
    p0 = np.zeros(r)
    p_ps = mode_product_sum(p0, coef.c[:-1], coef.b[:-1], eta=eta_d)
    p_rec = mode_recursion(p0, coef.c[:-1], coef.b[:-1], eta=eta_d)
    risk_closure = richardson_mode_risk(p_ps, coef.a, coef.w, L=L)
    mode_terms = coef.w * (1.0 - p_ps * coef.a) ** (2 * L)
    traj = encdec_iterate(cm.latent_model(), cm.matrix(g0), cm.matrix(p0), eta_e=eta_e, eta_d=eta_d, n_steps=steps)
    risk_matrix = richardson_matrix_risk(traj.P, traj.A, traj.Szz, L=L)
    err = np.abs(risk_closure - risk_matrix)
    P_from_modes = np.stack([cm.matrix(x) for x in p_ps])
    return CommutingRung(
        model=cm,
        eta_e=float(eta_e),
        eta_d=float(eta_d),
        p=p_ps,
        mode_terms=mode_terms,
        risk_closure=risk_closure,
        risk_matrix=risk_matrix,
        error=err,
        trajectory=traj,
        max_error=float(err.max()),
        max_error_modes_rel=float(np.abs(P_from_modes - traj.P).max() / np.abs(traj.P).max()),
        max_error_product_sum_rel=float(np.abs(p_ps - p_rec).max() / np.abs(p_rec).max()),
        commutator=commutator_defect(traj.C[check_idx]),
    )


def _unit(stack: np.ndarray) -> np.ndarray:
    return stack / np.linalg.norm(stack, axis=(1, 2))[:, None, None]


def _joint_basis(traj: EncDecTrajectory, check_idx: np.ndarray) -> np.ndarray:
    """Jacobi joint diagonaliser of ``{C_t, A_t, E z_t^†z_t^{†ᵀ}}`` at the check times, each scaled to unit
    Frobenius norm; shape (r, r)."""
    family = np.concatenate([_unit(traj.C[check_idx]), _unit(traj.A[check_idx]), _unit(traj.Szz[check_idx])])
    return joint_diagonalizer(family)


def closure_bases(traj: EncDecTrajectory, check_idx: np.ndarray) -> dict[str, np.ndarray]:
    """The fixed bases (r, r) tried for the §6.5 scalar closure of a coupled trajectory: the eigenbases of
    ``C_0``, ``C_S``, ``A_S`` and the joint diagonaliser of ``{C_t, A_t, E z_t^†z_t^{†ᵀ}}`` (labels for plots)."""
    return {
        "eig $C_0$": np.linalg.eigh(traj.C[0])[1],
        "eig $C_S$": np.linalg.eigh(traj.C[-1])[1],
        "eig $A_S$": np.linalg.eigh(traj.A[-1])[1],
        "joint diag.": _joint_basis(traj, check_idx),
    }


@dataclass(frozen=True)
class NonCommutingRung:
    """Rung (e): the non-commuting coupled system (main paper §6.6).

    Attributes
    ----------
    model : LatentModel
    eta_e, eta_d : float
    trajectory : EncDecTrajectory
    tracking_error_formula : ndarray (S+1, r, r)
        ``E_s`` from the ordered product/sum formula.
    error : ndarray (S+1,)
        ``‖E_s^formula - E_s‖_F / max_s ‖E_s‖_F``.
    max_error_product_sum_rel : float
        ``max |E^formula - E| / max |E|`` (entrywise).
    risk_matrix, risk_product_sum : ndarray (S+1,)
        ``R_dec(s, L)`` of the iteration and of ``P_s = E_s^formula + P_z⋆(G_s)``.
    commutator : float
        Commutator defect of ``C(G_s)`` at the check times.
    closure_risks : dict[str, ndarray (S+1,)]
        The §6.5 closure in each basis of :func:`closure_bases`.
    mismatches, log_ratios : dict[str, float]
        :func:`~iclcore.richardson.closure.closure_mismatch` and
        :func:`~iclcore.richardson.closure.closure_log_ratio` of each closure against ``risk_matrix``.
    """

    model: LatentModel
    eta_e: float
    eta_d: float
    trajectory: EncDecTrajectory
    tracking_error_formula: np.ndarray
    error: np.ndarray
    max_error_product_sum_rel: float
    risk_matrix: np.ndarray
    risk_product_sum: np.ndarray
    commutator: float
    closure_risks: dict[str, np.ndarray]
    mismatches: dict[str, float]
    log_ratios: dict[str, float]

    @property
    def best_mismatch(self) -> float:
        """The smallest relative sup mismatch over the bases."""
        return min(self.mismatches.values())

    @property
    def best_log_ratio(self) -> float:
        """The smallest ``max_s |log10(R_closure / R_exact)|`` over the bases (decades)."""
        return min(self.log_ratios.values())


def noncommuting_rung(
    rng: np.random.Generator,
    commuting: CommutingModel,
    *,
    eta_e_frac: float,
    eta_d_frac: float,
    steps: int,
    L: int,
    check_idx: np.ndarray,
) -> NonCommutingRung:
    """Rung (e): the ordered product/sum formula of §6.6 against the iteration, and fixed-basis closures.

    The latent model has the spectra ``h, g⋆, σ`` of ``commuting`` in unrelated Haar bases:
    ``H = Q_1 diag(h) Q_1ᵀ``, ``G⋆ = Q_2 diag(g⋆) Q_3ᵀ``, ``Σ_z = Q_4 diag(σ) Q_4ᵀ``; ``G_0 = I/2``, ``P_0 = 0``,
    ``η_e = eta_e_frac · 2/λ_max(Σ_z)``, ``η_d = eta_d_frac · 2/max_s λ_max(C(G_s))``. The tracking error
    ``E_s = P_s - P_z⋆(G_s)`` obeys ``E_{s+1} = E_s(I - η_d C_s) + D_s``.
    """
    rng = as_generator(rng)
    r = commuting.r
    model = LatentModel(
        H=covariance_from_spectrum(commuting.h, haar_orthogonal(r, rng)),
        Gstar=haar_orthogonal(r, rng) @ np.diag(commuting.gstar) @ haar_orthogonal(r, rng).T,
        Sigma_z=covariance_from_spectrum(commuting.sigma, haar_orthogonal(r, rng)),
        noise_var=commuting.noise_var,
    )
    G0 = 0.5 * np.eye(r)
    eta_e = eta_e_frac * 2.0 / np.linalg.eigvalsh(model.Sigma_z)[-1]
    G_path = gd_iterate(G0, model.Sigma_bz, model.Sigma_z, eta=eta_e, n_steps=steps)
    eta_d = eta_d_frac * 2.0 / max(np.linalg.eigvalsh(Cs)[-1] for Cs in model.C(G_path))
    traj = encdec_iterate(model, G0, np.zeros((r, r)), eta_e=eta_e, eta_d=eta_d, n_steps=steps)
    E_iter = traj.tracking_error
    E_ps = tracking_error_product_sum(E_iter[0], traj.C[:-1], traj.drift, eta=eta_d, steps=np.arange(steps + 1))
    err = np.linalg.norm(E_ps - E_iter, axis=(1, 2)) / np.linalg.norm(E_iter, axis=(1, 2)).max()
    risk_matrix = richardson_matrix_risk(traj.P, traj.A, traj.Szz, L=L)
    closure_risks = {k: fixed_basis_closure_risk(traj, Q, L) for k, Q in closure_bases(traj, check_idx).items()}
    return NonCommutingRung(
        model=model,
        eta_e=float(eta_e),
        eta_d=float(eta_d),
        trajectory=traj,
        tracking_error_formula=E_ps,
        error=err,
        max_error_product_sum_rel=float(np.abs(E_ps - E_iter).max() / np.abs(E_iter).max()),
        risk_matrix=risk_matrix,
        risk_product_sum=richardson_matrix_risk(E_ps + traj.oracle, traj.A, traj.Szz, L=L),
        commutator=commutator_defect(traj.C[check_idx]),
        closure_risks=closure_risks,
        mismatches={k: closure_mismatch(v, risk_matrix) for k, v in closure_risks.items()},
        log_ratios={k: closure_log_ratio(v, risk_matrix) for k, v in closure_risks.items()},
    )


@dataclass(frozen=True)
class ClosureControl:
    """The fixed-basis closure procedure applied to a commuting trajectory (a control for rung (e)).

    Attributes
    ----------
    risk : ndarray (S+1,)
        The closure in the joint diagonaliser's basis.
    mismatch : float
        Relative sup mismatch against the matrix risk.
    log_ratio : float
        ``max_s |log10(R_closure / R_exact)|``.
    """

    risk: np.ndarray
    mismatch: float
    log_ratio: float


def commuting_closure_control(rung: CommutingRung, L: int, check_idx: np.ndarray) -> ClosureControl:
    """The closure of §6.5 in the joint diagonaliser of the commuting rung's ``{C_t, A_t, E z_t^†z_t^{†ᵀ}}``
    (found numerically, as in rung (e)), against its matrix risk: it must agree to rounding."""
    risk = fixed_basis_closure_risk(rung.trajectory, _joint_basis(rung.trajectory, check_idx), L)
    return ClosureControl(
        risk=risk,
        mismatch=closure_mismatch(risk, rung.risk_matrix),
        log_ratio=closure_log_ratio(risk, rung.risk_matrix),
    )
