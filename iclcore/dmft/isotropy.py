"""Identities of the reduced-Γ model checked by code (Bordelon et al. §2.2 Eq. 4, §3.1 Result 1,
§3.3 Result 6, App. B Eqs. 52–58, App. C.2 and E.1): gradient flow from ``Γ = 0`` stays isotropic,
and the masked linear attention of Eq. 3 with the reduced weights computes ``L`` steps of
in-context GD. Conventions (normalised trace, theory time) in :mod:`iclcore.dmft`.

Isotropy (Result 1 / Result 6). The population gradient at ``Γ = γI`` is proportional to ``I``
because the law of a context is invariant under ``x → Qx, β → Qβ`` for every orthogonal ``Q``
(App. C.2, Eq. 81; App. E.1). A Monte Carlo sample of contexts breaks this symmetry, so we restore
it exactly with a finite group: the real Pauli group ``{Z_a X_b}`` (``D = 2^k``; ``X_b`` the XOR
shift ``i → i ⊕ b``, ``Z_a = diag((-1)^{a·i})``, ``D²`` matrices up to sign) acts irreducibly on
``R^D``: averaging ``Q M Qᵀ`` over it gives ``(tr M) I``. The empirical loss of a sample augmented
by the group is invariant under ``Γ → QΓQᵀ``, so gradient descent on it from ``Γ = 0`` stays
isotropic *in exact arithmetic*, and its scalar ``γ_k = tr Γ_k`` follows gradient descent on the
one-dimensional empirical landscape ``ℓ(γ) = n⁻¹ Σ_{n,k} w_{nk} (1 − γλ_{nk}/L)^{2L}`` (eigenvalues
``λ`` of each context's ``Σ̂``, weights from its task vector). Both facts are identities; the
functions below measure them on the full matrix computation (the same manual backprop as the SGD
of :mod:`iclcore.dmft.reduced_sgd`), so only rounding remains.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iclcore.dmft.reduced_sgd import ReducedGammaSGDConfig, _check_config, _forward_backward, _sample_batch
from iclcore.validation import as_generator, check_depth, finite_array, positive_float, positive_int

__all__ = [
    "pauli_group",
    "off_isotropic_fraction",
    "SymmetrisedFlow",
    "symmetrised_descent",
    "masked_linear_attention",
    "reduced_attention_weights",
    "InContextGDIdentity",
    "in_context_gd_identity",
]


def pauli_group(D: int) -> np.ndarray:
    """The real Pauli matrices ``Z_a X_b`` for ``a, b ∈ {0,1}^k``, ``D = 2^k``; shape ``(D², D, D)``.

    ``(X_b)_{ij} = [j = i ⊕ b]``, ``Z_a = diag((-1)^{popcount(a & i)})``. Averaging ``Q M Qᵀ`` over
    the ``D²`` matrices gives ``(tr M) I`` exactly (the sign characters kill the off-diagonal, the
    XOR shifts average the diagonal), so the group acts irreducibly on ``R^D``.

    Raises
    ------
    ValueError
        if ``D`` is not a power of two.
    """
    D = positive_int(D, "D")
    if D & (D - 1):
        raise ValueError(f"D: the real Pauli group needs D a power of two, got {D}")
    idx = np.arange(D)
    # character table (-1)^{popcount(a & i)}, shape (D, D)
    chars = np.ones((D, D))
    bits = int(math.log2(D))
    for k in range(bits):
        chars *= np.where(((idx[:, None] & idx[None, :]) >> k) & 1, -1.0, 1.0)
    X = np.zeros((D, D, D))  # X[b, i, i ^ b] = 1
    X[idx[:, None], idx[None, :], idx[None, :] ^ idx[:, None]] = 1.0
    return (chars[:, None, :, None] * X[None, :, :, :]).reshape(D * D, D, D)


def off_isotropic_fraction(Gamma: np.ndarray) -> np.ndarray:
    """``‖Γ − (tr Γ) I‖_F / ‖Γ‖_F`` (``tr`` the normalised trace) over the last two axes; 0 where ``Γ = 0``.

    Parameters
    ----------
    Gamma : array_like, shape ``(..., D, D)``

    Returns
    -------
    numpy.ndarray, shape ``(...)``
    """
    G = finite_array(Gamma, "Gamma")
    if G.ndim < 2 or G.shape[-1] != G.shape[-2]:
        raise ValueError(f"Gamma: expected shape (..., D, D), got {G.shape}")
    D = G.shape[-1]
    tr = np.trace(G, axis1=-2, axis2=-1) / D
    dev = G - tr[..., None, None] * np.eye(D)
    num = np.sqrt(np.sum(dev**2, axis=(-2, -1)))
    den = np.sqrt(np.sum(G**2, axis=(-2, -1)))
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


@dataclass(frozen=True)
class SymmetrisedFlow:
    """Output of :func:`symmetrised_descent`.

    Attributes
    ----------
    t : theory time ``η k``, shape ``(steps + 1,)``
    gamma : ``tr Γ_k`` of the matrix descent, shape ``(steps + 1,)``
    gamma_scalar : the same descent on the one-dimensional empirical landscape, shape ``(steps + 1,)``
    off_iso : :func:`off_isotropic_fraction` of ``Γ_k``, shape ``(steps + 1,)``
    off_iso_plain : the same for descent on the *un*-augmented sample (Monte Carlo symmetry breaking)
    lam, weight : eigenvalues and weights of the empirical landscape, shape ``(n, D)``
    """

    t: np.ndarray
    gamma: np.ndarray
    gamma_scalar: np.ndarray
    off_iso: np.ndarray
    off_iso_plain: np.ndarray
    lam: np.ndarray
    weight: np.ndarray

    @property
    def off_iso_max(self) -> float:
        """``max_k ‖Γ_k − tr(Γ_k) I‖_F / ‖Γ_k‖_F`` along the augmented descent (0 up to rounding by Results 1, 6)."""
        return float(self.off_iso.max())

    @property
    def gamma_vs_scalar_max_rel(self) -> float:
        """``max_k |tr Γ_k − γ_k| / max(1, max_k |γ_k|)``: matrix descent against the one-dimensional descent."""
        return float(np.max(np.abs(self.gamma - self.gamma_scalar)) / max(1.0, np.abs(self.gamma_scalar).max()))

    def metrics(self, setting: str) -> dict[str, float]:
        """The two summaries under the chapter's metric names (``dmft_iso``), prefixed by ``setting`` (``"iso"``, ``"rrs"``)."""
        return {
            f"{setting}_flow_offiso_max": self.off_iso_max,
            f"{setting}_flow_gamma_vs_scalar_max_rel": self.gamma_vs_scalar_max_rel,
        }


def _augment(batch, group: np.ndarray):
    """Images ``(QΣ̂Qᵀ, Qc, QSQᵀ, Qβ, Qr, s0)`` of every context under every ``Q`` (``|G| n`` contexts)."""
    Shat, c, S, bstar, r, s0 = batch
    n, D = c.shape
    Qs = group[:, None]  # (G, 1, D, D)
    rot = lambda M: np.matmul(np.matmul(Qs, M[None]), np.swapaxes(Qs, -1, -2)).reshape(-1, D, D)  # noqa: E731
    vec = lambda v: np.einsum("gij,nj->gni", group, v).reshape(-1, D)  # noqa: E731
    S_aug = None if S is None else rot(np.asarray(S))
    return rot(np.asarray(Shat)), vec(c), S_aug, vec(bstar), vec(r), np.tile(s0, group.shape[0])


def symmetrised_descent(
    setting: str,
    D: int,
    L: int,
    *,
    n_contexts: int,
    eta: float,
    steps: int,
    rng: np.random.Generator,
    P: int | None = None,
    lam: np.ndarray | None = None,
    omega: np.ndarray | None = None,
) -> SymmetrisedFlow:
    """Gradient descent from ``Γ = 0`` on a Pauli-augmented sample of contexts (Results 1 and 6).

    Draws ``n_contexts`` noise-free contexts of the ``"iso"`` (Eq. 5, context length ``P``) or
    ``"rrs"`` (Eq. 12, ``P = ∞``) setting with a population test loss, augments them by
    :func:`pauli_group` (``D² n`` contexts) and runs ``Γ ← Γ − η (D/2) ∇_Γ ℓ`` (theory time
    ``t = ηk``, the convention of :mod:`iclcore.dmft.reduced_sgd`) for ``steps`` steps, recording the
    off-isotropic fraction of ``Γ``. The same descent on the un-augmented sample is run alongside.
    ``gamma_scalar`` is ``γ ← γ − (η/2) ℓ'(γ)`` with
    ``ℓ(γ) = n⁻¹ Σ_{n,k} w_{nk} (1 − γλ_{nk}/L)^{2L}``: ISO, ``λ`` the eigenvalues of ``Σ̂_n``,
    ``w = (Vᵀβ)²``; RRS, ``λ = Λ``, ``w_k = λ_k (O_nᵀβ)_k²``. Exact arithmetic gives
    ``off_iso = 0`` and ``gamma = gamma_scalar`` at every step.

    Parameters
    ----------
    setting : ``"iso"`` or ``"rrs"``
    D : power of two
    L : depth
    n_contexts : base contexts before augmentation
    eta : step size
    steps : number of steps
    rng : numpy.random.Generator
    P : context length (``"iso"``; required)
    lam, omega : spectra (``"rrs"``; required)
    """
    if setting not in ("iso", "rrs"):
        raise ValueError(f"setting: expected 'iso' or 'rrs', got {setting!r}")
    group = pauli_group(D)
    L = int(check_depth(L))
    n_contexts = positive_int(n_contexts, "n_contexts")
    eta = positive_float(eta, "eta")
    steps = positive_int(steps, "steps")
    rng = as_generator(rng)
    if setting == "iso" and P is None:
        raise ValueError("P: the 'iso' setting needs a context length P")
    cfg = ReducedGammaSGDConfig(
        setting, D=D, L=L, B=n_contexts, eta=eta, steps=steps, P=P if setting == "iso" else None, lam=lam, omega=omega
    )
    _, lam_v, om_v = _check_config(cfg)
    batch = _sample_batch(cfg, lam_v, om_v, rng)
    Shat, c, S, bstar, r, s0 = batch
    if setting == "iso":
        ev, V = np.linalg.eigh(Shat)
        lam_e, w = ev, np.einsum("nij,ni->nj", V, bstar) ** 2
    else:  # Σ_c = O Λ Oᵀ; recover Oᵀβ from the eigenvectors of Σ_c (distinct λ)
        ev, V = np.linalg.eigh(Shat)
        lam_e, w = ev, ev * np.einsum("nij,ni->nj", V, bstar) ** 2
    aug = _augment(batch, group)
    G_sym = np.zeros((D, D))
    G_pl = np.zeros((D, D))
    off, off_pl = np.zeros(steps + 1), np.zeros(steps + 1)
    gam = np.zeros(steps + 1)
    gs = np.zeros(steps + 1)
    for k in range(steps):
        _, g_sym = _forward_backward(G_sym, *aug, L)
        _, g_pl = _forward_backward(G_pl, *batch, L)
        G_sym = G_sym - eta * (D / 2.0) * g_sym
        G_pl = G_pl - eta * (D / 2.0) * g_pl
        u = 1.0 - gs[k] * lam_e / L
        dl = float(np.sum(w * (-2.0 * lam_e) * u ** (2 * L - 1))) / n_contexts
        gs[k + 1] = gs[k] - 0.5 * eta * dl
        gam[k + 1] = np.trace(G_sym) / D
        off[k + 1] = off_isotropic_fraction(G_sym)
        off_pl[k + 1] = off_isotropic_fraction(G_pl)
    return SymmetrisedFlow(
        t=eta * np.arange(steps + 1), gamma=gam, gamma_scalar=gs, off_iso=off, off_iso_plain=off_pl, lam=lam_e, weight=w
    )


# --------------------------------------------------------------------------------------------------
# Masked linear attention (Eq. 3) with the reduced weights computes Eq. 4 (App. B, Eqs. 52-58)
# --------------------------------------------------------------------------------------------------


def reduced_attention_weights(Gamma: np.ndarray) -> dict[str, np.ndarray]:
    """Weights of Eq. 3 in the reduced parametrisation of §2.2 for a given ``Γ`` (``D x D``).

    Tokens live in ``R^{D+1}``: ``W_x = [I; 0]`` (``(D+1) x D``), ``w_y = e_{D+1}``, ``w_o = −w_y``,
    ``W_v = −w_y w_yᵀ`` (so ``w_oᵀ W_v w_y = 1``), ``W_q = W_x W_xᵀ`` and ``W_k`` with ``x``-block
    ``Γ``: the attention score is ``k_ν·q_μ = x_νᵀ Γᵀ x_μ`` and the model computes Eq. 4 with
    preconditioner ``Γ``. With the paper's definition ``Γ_paper = (w_oᵀW_v w_y) W_xᵀW_kᵀW_qW_x = Γᵀ``
    the two agree for symmetric ``Γ`` (every ``Γ`` of Results 1–6 is isotropic).
    """
    G = finite_array(Gamma, "Gamma")
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"Gamma: expected a square matrix, got shape {G.shape}")
    D = G.shape[0]
    Wx = np.vstack([np.eye(D), np.zeros((1, D))])
    wy = np.zeros(D + 1)
    wy[D] = 1.0
    Wk = np.zeros((D + 1, D + 1))
    Wk[:D, :D] = G
    return {"Wx": Wx, "wy": wy, "wo": -wy, "Wq": Wx @ Wx.T, "Wk": Wk, "Wv": -np.outer(wy, wy)}


def masked_linear_attention(
    weights: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray, *, Xq: np.ndarray, L: int
) -> np.ndarray:
    """Depth-``L`` residual linear attention with tied layers and the evaluation mask (Eq. 3).

    ``h¹_μ = W_x x_μ + w_y y_μ`` (``y_μ = 0`` on the ``Q`` evaluation tokens), then ``L`` times
    ``h_μ ← h_μ + (LP)⁻¹ Σ_{ν ≤ P} (k_ν·q_μ) v_ν`` with ``q = W_q h``, ``k = W_k h``, ``v = W_v h``: the
    mask ``M`` of App. B lets only the ``P`` context tokens act as keys and values. Output
    ``f_μ = w_o·h^L_μ`` on the evaluation tokens.

    Parameters
    ----------
    weights : dict with ``Wx (D+1, D)``, ``wy (D+1,)``, ``wo (D+1,)``, ``Wq, Wk, Wv (D+1, D+1)``
    X : shape ``(P, D)``; y : shape ``(P,)``; Xq : shape ``(Q, D)``; L : depth

    Returns
    -------
    numpy.ndarray, shape ``(Q,)``
    """
    X, y, Xq = finite_array(X, "X"), finite_array(y, "y"), finite_array(Xq, "Xq")
    L = int(check_depth(L))
    if X.ndim != 2 or y.shape != (X.shape[0],) or Xq.ndim != 2 or Xq.shape[1] != X.shape[1]:
        raise ValueError(f"X: expected X (P, D), y (P,), Xq (Q, D); got {X.shape}, {y.shape}, {Xq.shape}")
    P = X.shape[0]
    w = weights
    H = np.concatenate([X @ w["Wx"].T + np.outer(y, w["wy"]), Xq @ w["Wx"].T], axis=0)  # (P+Q, D+1)
    for _ in range(L):
        Hc = H[:P]  # keys and values only from the context tokens (the mask)
        scores = (H @ w["Wq"].T) @ (Hc @ w["Wk"].T).T  # (P+Q, P): q_μ · k_ν
        H = H + scores @ (Hc @ w["Wv"].T) / (L * P)
    return H[P:] @ w["wo"]


@dataclass(frozen=True)
class InContextGDIdentity:
    """Random draws of the in-context GD identity (:func:`in_context_gd_identity`).

    Attributes
    ----------
    attention_dev, eq4_dev : ndarray, shape (draws,)
        ``max |f − f_GD|`` of the masked attention (Eq. 3) and of Eq. 4 written with the matrix sum.
    f_scale : ndarray, shape (draws,)
        ``max |f_GD|`` of each draw.
    max_abs, max_abs_f : float
        The largest deviation of either form and the largest ``|f_GD|``.
    """

    attention_dev: np.ndarray
    eq4_dev: np.ndarray
    f_scale: np.ndarray
    max_abs: float
    max_abs_f: float

    def metrics(self) -> dict[str, float]:
        """The scalars under the chapter's metric names (``dmft_iso``)."""
        return {"icl_gd_identity_max_abs": self.max_abs, "icl_gd_identity_max_abs_f": self.max_abs_f}


def in_context_gd_identity(
    gd_predict: Callable[..., np.ndarray],
    rng: np.random.Generator,
    *,
    draws: int = 20,
    n_queries: int = 5,
) -> InContextGDIdentity:
    """Eq. 3 (masked attention, reduced weights), Eq. 4 and ``L`` steps of in-context GD agree (App. B, Eqs. 52–58).

    Each draw: ``D ∈ [2, 8]``, ``P ∈ [2, 19]``, ``L ∈ [1, 6]``, ``Γ`` Gaussian with scale 1/2, Gaussian
    ``X`` (``P x D``) and ``n_queries`` queries, ``y = Xβ/√D``. Compared: ``gd_predict(Γ, X, y, Xq=X_q, L=L)``
    (``L`` steps of preconditioned in-context GD, e.g. :func:`iclcore.lsq.iterates.in_context_gd_predict`),
    :func:`masked_linear_attention` with :func:`reduced_attention_weights` and Eq. 4,
    ``f = X_q Γ Σ_{ℓ<L} (I − Σ̂Γ/L)^ℓ Xᵀy / (LP)`` with ``Σ̂ = XᵀX/P``.

    Returns
    -------
    InContextGDIdentity
    """
    draws = positive_int(draws, "draws")
    rng = as_generator(rng)
    id_att, id_eq4, id_f = [], [], []
    for _ in range(draws):
        Dk, Pk, Lk = int(rng.integers(2, 9)), int(rng.integers(2, 20)), int(rng.integers(1, 7))
        Gk = rng.standard_normal((Dk, Dk)) * 0.5
        Xk, Xqk = rng.standard_normal((Pk, Dk)), rng.standard_normal((n_queries, Dk))
        yk = Xk @ rng.standard_normal(Dk) / np.sqrt(Dk)
        f_gd = gd_predict(Gk, Xk, yk, Xq=Xqk, L=Lk)
        f_att = masked_linear_attention(reduced_attention_weights(Gk), Xk, yk, Xq=Xqk, L=Lk)
        Sk = Xk.T @ Xk / Pk
        f_eq4 = (
            Xqk
            @ Gk
            @ sum(np.linalg.matrix_power(np.eye(Dk) - Sk @ Gk / Lk, ell) for ell in range(Lk))
            @ Xk.T
            @ yk
            / (Lk * Pk)
        )
        id_att.append(float(np.max(np.abs(f_att - f_gd))))
        id_eq4.append(float(np.max(np.abs(f_eq4 - f_gd))))
        id_f.append(float(np.max(np.abs(f_gd))))
    return InContextGDIdentity(
        np.array(id_att), np.array(id_eq4), np.array(id_f), max(max(id_att), max(id_eq4)), max(id_f)
    )
