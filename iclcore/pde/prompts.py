r"""Prompts of solution/forcing pairs and the ridge prompt encoder (main paper §1.1; MMNN report §5.4).

One task is one coefficient vector ``z`` (``a(x; z) = 1 + Σ z_k 1_{piece k}``, see
:mod:`iclcore.pde.galerkin`). Its prompt holds ``M`` pairs ``(u_i, F_i)``: Matérn GP forcings
``f_i`` (load vectors ``F_i``) and noisy Galerkin solutions ``u_i = A(z)^{-1}F_i + σ_u ε_i``.
With ``q`` hat test functions ``v_r`` (the interior nodes ``idx_r``), the weak equations

.. math::

    \begin{gathered}
    ⟨v_r, F_i − A_0 u_i⟩ = \sum_k z_k ⟨v_r, A_k u_i⟩
    \quad\Longleftrightarrow\quad G z = b,\\
    G_{(i,r),k} = (A_k u_i)_{idx_r}, \quad b_{(i,r)} = (F_i − A_0 u_i)_{idx_r},
    \end{gathered}

are solved by ridge, ``z_enc = (GᵀG + λ_z I)^{-1} Gᵀ b``. The query is a fresh forcing ``F⋆``
with exact answer ``u⋆ = A(z)^{-1} F⋆``; the decoder solves the *encoded* system
``A(z_enc) u = F⋆`` by Richardson.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from iclcore.pde.galerkin import AffineOperator, affine_operator, assemble, load_vector, sample_coefficients, solve
from iclcore.pde.gp import matern_covariance, sample_gp
from iclcore.stats import standard_error
from iclcore.validation import as_generator, positive_int

__all__ = [
    "PDEConfig",
    "PDEPrompts",
    "test_function_nodes",
    "sample_pde_prompts",
    "ridge_encoder",
    "EncoderQuality",
    "encoder_quality",
    "encoded_query_systems",
    "encoded_query_sampler",
    "population_oracle",
]


@dataclass(frozen=True)
class PDEConfig:
    """The PDE task family (every choice is recorded in the errata: MMNN report states none).

    Attributes
    ----------
    n_el : int
        Elements of the uniform P1 mesh (``n_h = n_el − 1`` unknowns).
    n_pieces : int
        ``K``, the latent dimension.
    c0 : float
        Reaction coefficient.
    z_scale, a_min : float
        ``z ~ N(0, z_scale² I)`` rejected unless ``min a > a_min``.
    ell_f, f_var : float
        Matérn-5/2 length scale and variance of the forcing.
    M : int
        Solution/forcing pairs per prompt.
    q : int
        Hat test functions.
    sigma_u : float
        Standard deviation of the noise added to each nodal value of ``u_i``.
    lam_z : float
        Encoder ridge ``λ_z ≥ 0``.
    """

    n_el: int = 64
    n_pieces: int = 4
    c0: float = 1.0
    z_scale: float = 0.15
    a_min: float = 0.2
    ell_f: float = 0.1
    f_var: float = 1.0
    M: int = 4
    q: int = 8
    sigma_u: float = 1e-6
    lam_z: float = 1e-12

    def __post_init__(self) -> None:
        for name in ("n_el", "n_pieces", "M", "q"):
            v = getattr(self, name)
            positive_int(v, name)
        if self.q > self.n_el - 1:
            raise ValueError(f"q: at most n_el - 1 = {self.n_el - 1} hat test functions, got {self.q}")
        for name in ("sigma_u", "lam_z", "c0", "z_scale"):
            v = getattr(self, name)
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{name}: must be finite and >= 0, got {v!r}")

    def operator(self) -> AffineOperator:
        """The affine Galerkin family of this configuration."""
        return affine_operator(self.n_el, self.n_pieces, self.c0)


def test_function_nodes(n_el: int, q: int) -> np.ndarray:
    """Interior-node indices of ``q`` evenly spread hat test functions, shape (q,)."""
    idx = np.round(np.arange(1, q + 1) * n_el / (q + 1)).astype(int) - 1
    if len(np.unique(idx)) != q:
        raise ValueError(f"q: {q} test functions do not fit on {n_el - 1} interior nodes")
    return idx


@dataclass(frozen=True, eq=False)
class PDEPrompts:
    """A batch of ``n`` PDE prompts with their queries.

    Attributes
    ----------
    z : ndarray (n, K)
    u : ndarray (n, M, n_h)
        Noisy prompt solutions.
    F : ndarray (n, M, n_h)
        Prompt load vectors.
    F_query : ndarray (n, n_h)
    u_query : ndarray (n, n_h)
        Exact query solutions ``A(z)^{-1} F⋆``.
    """

    z: np.ndarray
    u: np.ndarray
    F: np.ndarray
    F_query: np.ndarray
    u_query: np.ndarray

    @property
    def n(self) -> int:
        """Number of prompts."""
        return self.z.shape[0]


def sample_pde_prompts(config: PDEConfig, op: AffineOperator, n: int, *, rng: np.random.Generator) -> PDEPrompts:
    """Draw ``n`` prompts and queries (module docstring), vectorised over prompts."""
    n = positive_int(n, "n")
    rng = as_generator(rng)
    z = sample_coefficients(n, config.n_pieces, config.z_scale, a_min=config.a_min, rng=rng)
    cov = matern_covariance(op.all_nodes, config.ell_f, config.f_var)
    f = sample_gp(cov, n * (config.M + 1), rng).reshape(n, config.M + 1, -1)
    F = load_vector(op, f)
    A = assemble(op, z)
    U = np.swapaxes(np.linalg.solve(A, np.swapaxes(F, 1, 2)), 1, 2)
    u = U[:, :-1] + config.sigma_u * rng.standard_normal(U[:, :-1].shape)
    return PDEPrompts(z=z, u=u, F=F[:, :-1], F_query=F[:, -1], u_query=U[:, -1])


def ridge_encoder(
    config: PDEConfig, op: AffineOperator, prompts: PDEPrompts, *, lam_z: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``G``, ``b`` and ``z_enc = (GᵀG + λ_z I)^{-1} Gᵀ b`` for every prompt.

    Returns
    -------
    z_enc : ndarray (n, K)
    G : ndarray (n, M q, K)
    b : ndarray (n, M q)
    """
    lam = config.lam_z if lam_z is None else float(lam_z)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam_z: must be finite and >= 0, got {lam_z!r}")
    idx = test_function_nodes(op.n_el, config.q)
    n, M = prompts.u.shape[:2]
    Au = np.einsum("kij,nmj->nmki", op.A[:, idx, :], prompts.u)  # (n, M, K, q)
    G = Au.transpose(0, 1, 3, 2).reshape(n, M * config.q, op.n_pieces)
    b = (prompts.F[..., idx] - prompts.u @ op.A0[idx, :].T).reshape(n, M * config.q)
    GtG = np.swapaxes(G, 1, 2) @ G + lam * np.eye(op.n_pieces)
    z_enc = np.linalg.solve(GtG, np.einsum("nmk,nm->nk", G, b)[..., None])[..., 0]
    return z_enc, G, b


@dataclass(frozen=True)
class EncoderQuality:
    """MMNN report Table 5 encoder rows.

    Attributes
    ----------
    z_mse : float
        ``E‖z_enc − z‖²/K``.
    A_rel_err : float
        ``E ‖A(z_enc) − A(z)‖_F / ‖A(z)‖_F``.
    floor : float
        Exact encoded-solve query MSE ``E‖A(z_enc)^{-1}F⋆ − u⋆‖²/n_h``.
    z_mse_se, A_rel_err_se, floor_se : float
        Standard errors of the three means over the prompts.
    """

    z_mse: float
    z_mse_se: float
    A_rel_err: float
    floor: float
    floor_se: float
    A_rel_err_se: float


def encoder_quality(op: AffineOperator, prompts: PDEPrompts, z_enc: np.ndarray) -> EncoderQuality:
    """The encoder rows of Table 5 on a batch of prompts (definitions in :class:`EncoderQuality`)."""
    zl = np.sum((z_enc - prompts.z) ** 2, axis=1) / op.n_pieces
    A_true = assemble(op, prompts.z)
    A_enc = assemble(op, z_enc)
    rel = np.linalg.norm(A_enc - A_true, axis=(1, 2)) / np.linalg.norm(A_true, axis=(1, 2))
    fl = np.sum((solve(A_enc, prompts.F_query) - prompts.u_query) ** 2, axis=1) / op.n_h
    return EncoderQuality(
        z_mse=float(zl.mean()),
        z_mse_se=float(standard_error(zl)),
        A_rel_err=float(rel.mean()),
        floor=float(fl.mean()),
        floor_se=float(standard_error(fl)),
        A_rel_err_se=float(standard_error(rel)),
    )


def encoded_query_systems(config: PDEConfig, op: AffineOperator, prompts: PDEPrompts):
    """The query decoder's systems ``A(z_enc) u = F⋆`` with target ``u⋆ = A(z)^{-1}F⋆``.

    Returns
    -------
    systems : iclcore.richardson.baselines.LinearSystems
        ``H = A(z_enc)`` (n, n_h, n_h), ``d = F⋆``, ``x⋆ = u⋆``; its ``x_dagger`` is the encoded solve.
    z_enc : ndarray (n, K)
    """
    from iclcore.richardson.baselines import LinearSystems

    z_enc, _, _ = ridge_encoder(config, op, prompts)
    return LinearSystems(H=assemble(op, z_enc), d=prompts.F_query, x_star=prompts.u_query), z_enc


def _encoded_query_triples(
    config: PDEConfig, op: AffineOperator, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    systems, _ = encoded_query_systems(config, op, sample_pde_prompts(config, op, n, rng=rng))
    return systems.H, systems.d, systems.x_star


def encoded_query_sampler(config: PDEConfig, op: AffineOperator | None = None):
    """The task sampler ``(n, rng) -> (A(z_enc) (n, n_h, n_h), F⋆ (n, n_h), u⋆ (n, n_h))`` of fresh prompts.

    :func:`sample_pde_prompts` then :func:`encoded_query_systems`, as a picklable callable (a task of
    :func:`iclcore.parallel.map_configs` can carry it, e.g. in an
    :class:`iclcore.models.flexformer.PreconditionerJob`). ``op`` defaults to ``config.operator()``.
    """
    if not isinstance(config, PDEConfig):
        raise TypeError(f"config: expected a PDEConfig, got {type(config).__name__}")
    if op is None:
        op = config.operator()
    elif not isinstance(op, AffineOperator):
        raise TypeError(f"op: expected an AffineOperator, got {type(op).__name__}")
    return partial(_encoded_query_triples, config, op)


def population_oracle(op: AffineOperator, z: np.ndarray) -> np.ndarray:
    """One-step oracle ``P⋆ = B C^{-1} = E_z[A(z)^{-1}]`` of the query decoder ``u ≈ P F⋆``.

    ``F⋆`` is independent of ``z`` with ``C = E[F⋆F⋆ᵀ] = M K_f Mᵀ`` invertible, and
    ``B = E[u⋆F⋆ᵀ] = E_z[A(z)^{-1}] C``; the expectation over ``z`` is a Monte Carlo mean over the
    given draws ``z`` (n, K). Returns (n_h, n_h).
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 2 or z.shape[1] != op.n_pieces or z.shape[0] < 1:
        raise ValueError(f"z: expected shape (n, {op.n_pieces}), got {z.shape}")
    return np.linalg.inv(assemble(op, z)).mean(axis=0)
