r"""The query decoder's fits and scores as independent tasks (tasks of :func:`iclcore.parallel.map_configs`).

The PDE recast (:mod:`iclcore.pde.prompts`) fits and scores several preconditioners ``P`` of the
query decoder ``u_{ℓ+1} = u_ℓ + P(F⋆ − A(z_enc) u_ℓ)`` independently of one another: free linear
``P`` by L-BFGS from different starts (:func:`free_linear_fit`), and every method's Table 2
diagnostics, per-prompt losses and risk curve on the same held-out prompts (:func:`decoder_scores`).
Each is a pure function of one frozen configuration (no randomness), so a notebook maps it over
its methods with :func:`iclcore.parallel.map_configs` and gets the same bits whichever executor runs
the calls. The learned models are trained by
:func:`iclcore.models.flexformer.train_preconditioner_job` on
:func:`iclcore.pde.prompts.encoded_query_sampler`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclcore.richardson.baselines import Baseline, LinearSystems, depth_error, depth_risk_curve, free_linear_baseline
from iclcore.richardson.preconditioner_diagnostics import DecoderDiagnostics, decoder_diagnostics
from iclcore.validation import positive_int

__all__ = [
    "FreeLinearFit",
    "free_linear_fit",
    "DecoderScoring",
    "DecoderScores",
    "decoder_scores",
]


@dataclass(frozen=True, eq=False)
class FreeLinearFit:
    """Arguments of one :func:`iclcore.richardson.baselines.free_linear_baseline` fit.

    Attributes
    ----------
    train : LinearSystems
        Training systems, ``H`` (n, K, K).
    L : int
        Depth of the fitted risk ``R_L`` (``≥ 1``).
    P0 : ndarray (K, K)
        Start of L-BFGS.
    max_iter : int
        L-BFGS iteration budget.
    chunk : int
        Task-block size of the gradient's sums (changes rounding only).
    """

    train: LinearSystems
    L: int
    P0: np.ndarray
    max_iter: int
    chunk: int = 128

    def __post_init__(self) -> None:
        if not isinstance(self.train, LinearSystems):
            raise TypeError(f"train: expected LinearSystems, got {type(self.train).__name__}")
        positive_int(self.L, "L")
        positive_int(self.max_iter, "max_iter")
        positive_int(self.chunk, "chunk")
        K = self.train.K
        if np.shape(self.P0) != (K, K):
            raise ValueError(f"P0: expected shape {(K, K)}, got {np.shape(self.P0)}")


def free_linear_fit(fit: FreeLinearFit) -> Baseline:
    """The free linear ``P`` (K, K) minimising the training ``R_L`` by L-BFGS from ``fit.P0``.

    :func:`iclcore.richardson.baselines.free_linear_baseline` with the fit's arguments (deterministic
    at a fixed BLAS thread count); a task of :func:`iclcore.parallel.map_configs`.
    """
    return free_linear_baseline(fit.train, fit.L, P0=fit.P0, max_iter=fit.max_iter, chunk=fit.chunk)


@dataclass(frozen=True, eq=False)
class DecoderScoring:
    """One method's preconditioner and the held-out prompts it is scored on.

    Attributes
    ----------
    P : ndarray (K, K) or (n, K, K)
        Shared or per-prompt preconditioner.
    test : LinearSystems
        Held-out systems, ``H`` (n, K, K).
    L : int
        Decoder depth (``≥ 1``).
    P_oracle : ndarray (K, K)
        ``P⋆`` for the distances of :func:`~iclcore.richardson.preconditioner_diagnostics.decoder_diagnostics`.
    clip, delta : float
        EB clipping level and failure probability.
    n_small : int
        Size of the small held-out subset of the second EB bound.
    """

    P: np.ndarray
    test: LinearSystems
    L: int
    P_oracle: np.ndarray
    clip: float = 1.0
    delta: float = 0.05
    n_small: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.test, LinearSystems):
            raise TypeError(f"test: expected LinearSystems, got {type(self.test).__name__}")
        positive_int(self.L, "L")
        n, K = self.test.n, self.test.K
        if np.shape(self.P) not in ((K, K), (n, K, K)):
            raise ValueError(f"P: expected shape {(K, K)} or {(n, K, K)}, got {np.shape(self.P)}")


@dataclass(frozen=True, eq=False)
class DecoderScores:
    """What :func:`decoder_scores` computes for one method.

    Attributes
    ----------
    diagnostics : DecoderDiagnostics
        The Table 2 quantities on the held-out prompts.
    losses : ndarray (n,)
        Per-prompt end-to-end loss ``‖u_L − u⋆‖²/K``.
    risk_curve : ndarray (L + 1,)
        Held-out risk at every depth ``0..L``.
    """

    diagnostics: DecoderDiagnostics
    losses: np.ndarray
    risk_curve: np.ndarray


def decoder_scores(scoring: DecoderScoring) -> DecoderScores:
    """One method's diagnostics, per-prompt end-to-end losses (n,) and risk curve (L + 1,) on ``scoring.test``.

    Implements :func:`~iclcore.richardson.preconditioner_diagnostics.decoder_diagnostics`,
    ``sum(depth_error(P, test, L)[:, -1]**2, axis=1) / K`` and
    :func:`~iclcore.richardson.baselines.depth_risk_curve`, deterministically; a task of
    :func:`iclcore.parallel.map_configs`.
    """
    s = scoring
    diag = decoder_diagnostics(s.P, s.test, s.L, P_oracle=s.P_oracle, clip=s.clip, delta=s.delta, n_small=s.n_small)
    losses = np.sum(depth_error(s.P, s.test, s.L)[:, -1] ** 2, axis=1) / s.test.K
    return DecoderScores(diag, losses, depth_risk_curve(s.P, s.test, s.L))
