"""Online SGD of the logistic-mode model on a fixed set of tasks (Mainali & Teixeira §2.3,
App. A.8), with mode products of the trained blocks. Conventions in :mod:`iclcore.logistic`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from iclcore.logistic.model import LogisticProblem, loss_and_gradients, sample_contexts
from iclcore.validation import positive_float, positive_int

Array = NDArray[np.float64]

__all__ = [
    "SGDConfig",
    "SGDResult",
    "run_sgd",
    "mode_products",
]


# --------------------------------------------------------------------------------------
# SGD simulation
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SGDConfig:
    """Online SGD of §2.3 / A.8.4 with the choices the paper leaves open.

    Attributes
    ----------
    eta : learning rate.
    B : independent contexts per SGD step (gradient = their mean).
    epochs : number of epochs (``epochs * P`` SGD steps).
    init_scale : ``p2(0) = q1(0) = init_scale * I`` (U-diagonal, ``a_alpha(0) = init_scale^2``).
    null_init_scale : std of the iid Gaussian entries of ``p1(0)``, ``q2(0)``.
    train_null : also train ``p1``, ``q2`` (otherwise they stay at their initial value).
    replicas : independent data streams (same task set and init of p2, q1) run in parallel.
    log_every : SGD steps per log point (losses are averaged over the window).
    """

    eta: float = 0.02
    B: int = 32
    epochs: float = 20.0
    init_scale: float = 0.01
    null_init_scale: float = 0.0
    train_null: bool = False
    replicas: int = 4
    log_every: int = 16

    def __post_init__(self) -> None:
        positive_float(self.eta, "eta")
        positive_float(self.epochs, "epochs")
        if self.init_scale < 0 or self.null_init_scale < 0:
            raise ValueError("init_scale, null_init_scale: must be >= 0")
        for name in ("B", "replicas", "log_every"):
            v = getattr(self, name)
            positive_int(v, name)


@dataclass
class SGDResult:
    """Logged trajectory of :func:`run_sgd`.

    Attributes
    ----------
    t : (T,) time in epochs of each log point (``t = step / P``).
    pT, q : (T, R, d, D), (T, R, D, d) parameters at the log points.
    loss : (T,) replica-mean of the per-step batch-mean loss, averaged over the window
        ending at each log point (``loss[0]`` is the loss at the initial parameters).
    loss_replicas : (T, R) the same per replica.
    """

    t: Array
    pT: Array
    q: Array
    loss: Array
    loss_replicas: Array
    problem: LogisticProblem
    config: SGDConfig
    extra: dict = field(default_factory=dict)

    def blocks_mode_basis(self) -> dict[str, Array]:
        """``p1, p2, q1, q2`` rotated to the U basis (``U^T X U``), each (T, R, d, d)."""
        d = self.problem.d
        U = self.problem.U
        rot = lambda X: np.einsum("ia,...ij,jb->...ab", U, X, U)  # noqa: E731
        return {
            "p1": rot(self.pT[..., :, :d]),
            "p2": rot(self.pT[..., :, d:]),
            "q1": rot(self.q[..., :d, :]),
            "q2": rot(self.q[..., d:, :]),
        }


def run_sgd(problem: LogisticProblem, config: SGDConfig, rng: np.random.Generator) -> SGDResult:
    """Train the exact model of Eq. (1) by online SGD (Mainali & Teixeira §2.3, A.8.4).

    Each step ``k`` uses task ``mu = k mod P`` (fixed order), ``B`` fresh contexts per
    replica, and the mean gradient. ``p2``, ``q1`` are always trained; ``p1``, ``q2`` only if
    ``config.train_null``. Vectorised over replicas and contexts; one Python loop over steps.
    """
    d, P = problem.d, problem.P
    D = 2 * d
    R, B, eta = config.replicas, config.B, config.eta
    n_steps = int(round(config.epochs * P))
    if n_steps < 1:
        raise ValueError("epochs: fewer than one SGD step")
    pT = np.zeros((R, d, D))
    q = np.zeros((R, D, d))
    pT[:, :, d:] = config.init_scale * np.eye(d)
    q[:, :d, :] = config.init_scale * np.eye(d)
    if config.null_init_scale > 0:
        pT[:, :, :d] = config.null_init_scale * rng.standard_normal((R, d, d))
        q[:, d:, :] = config.null_init_scale * rng.standard_normal((R, d, d))
    mask_p = np.zeros((d, D))
    mask_q = np.zeros((D, d))
    mask_p[:, d:] = 1.0
    mask_q[:d, :] = 1.0
    if config.train_null:
        mask_p[:] = 1.0
        mask_q[:] = 1.0
    L = config.log_every
    n_logs = n_steps // L
    ts = np.zeros(n_logs + 1)
    pTs = np.zeros((n_logs + 1, R, d, D))
    qs = np.zeros((n_logs + 1, R, D, d))
    losses = np.zeros((n_logs + 1, R))
    pTs[0], qs[0] = pT, q
    acc = np.zeros(R)
    for k in range(n_steps):
        mu = k % P
        xc, yc, xq, yq = sample_contexts(problem, mu, (R, B), rng=rng)
        loss, gp, gq = loss_and_gradients(pT[:, None], q[:, None], xc, y_ctx=yc, x_q=xq, y_q=yq)
        if k == 0:
            losses[0] = loss.mean(1)
        pT = pT - eta * gp.mean(1) * mask_p
        q = q - eta * gq.mean(1) * mask_q
        acc += loss.mean(1)
        if (k + 1) % L == 0:
            j = (k + 1) // L
            ts[j] = (k + 1) / P
            pTs[j], qs[j] = pT, q
            losses[j] = acc / L
            acc[:] = 0.0
    m = n_logs + 1
    return SGDResult(
        t=ts[:m],
        pT=pTs[:m],
        q=qs[:m],
        loss=losses[:m].mean(1),
        loss_replicas=losses[:m],
        problem=problem,
        config=config,
    )


def mode_products(result: SGDResult) -> dict[str, Array]:
    """Per-mode quantities of a simulation in the U basis, each (T, R, d):
    ``a = diag(U^T p2 q1 U)`` (the paper's ``a_alpha``), ``b = diag(U^T p1 q2 U)`` (the
    null route), ``p``, ``q`` = diagonals of ``U^T p2 U``, ``U^T q1 U``; and
    ``offdiag`` (T, R): largest absolute off-diagonal entry of ``U^T p2 q1 U``."""
    blk = result.blocks_mode_basis()
    A = blk["p2"] @ blk["q1"]
    Bm = blk["p1"] @ blk["q2"]
    off = np.abs(A - np.einsum("...ii->...i", A)[..., None] * np.eye(result.problem.d))
    return {
        "a": np.einsum("...ii->...i", A),
        "b": np.einsum("...ii->...i", Bm),
        "p": np.einsum("...ii->...i", blk["p2"]),
        "q": np.einsum("...ii->...i", blk["q1"]),
        "offdiag": off.max(axis=(-2, -1)),
    }
