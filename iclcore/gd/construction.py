"""The von Oswald et al. (2023) construction as explicit attention weights (Nagy App. A, V1–V3).

Tokens ``z_i = [x_i; y_i]`` (``i = 1..n``) and the query ``z_q = [x_q; 0]``, all in ``R^{d+1}``.
One residual linear self-attention (LSA) layer with key, query, value and projection matrices
``K, Q, V, P`` (each ``(d+1) x (d+1)``) updates *every* token ``j`` by

.. math:: z_j \\leftarrow z_j + \\frac1n \\sum_{i=1}^n (P V z_i)\\,(K z_i)^\\top (Q z_j),

with the context tokens as the only keys and values (the query is masked out as a key). The
prediction is ``yhat = -(y slot of the query)``.

Construction (:func:`von_oswald_layers`): ``K = [[I, 0], [0, 0]]``, ``Q = [[Gamma, 0], [0, 0]]``,
``V = [[0, 0], [0, 1]]``, ``P = [[0, 0], [0, -eta_l]]``. If the y slot of token ``j`` holds the
residual ``s_j = y_j - w_l^T x_j`` (``w_0 = 0``), the layer writes
``s_j - (eta_l/n) sum_i s_i x_i^T Gamma x_j``, which is the residual of

.. math:: w_{l+1} = w_l - \\eta_l\\,\\Gamma^\\top \\nabla_w \\tfrac{1}{2n}\\sum_i (w^\\top x_i - y_i)^2 ,

so ``k`` layers are ``k`` (preconditioned) GD steps on the halved mean squared loss, and the query
slot holds ``-w_k^T x_q``. The composite scalar gain of V1–V3 is ``kappa = eta_l``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclcore.lsq.iterates import richardson_iterates
from iclcore.models.lsa import LSAWeights, TrainedLSA
from iclcore.models.training import TrainConfig, torch_device, train_loop
from iclcore.stats import standard_error
from iclcore.validation import as_generator, finite_array, nonnegative_float, positive_int

__all__ = [
    "LSAWeights",
    "von_oswald_layers",
    "lsa_forward",
    "gd_weights",
    "gd_predict",
    "sample_regression",
    "optimal_single_step",
    "squared_loss_half",
    "train_one_layer_lsa",
    "TrainedRuns",
    "train_lsa_runs",
]


def _check_etas(etas: Sequence[float]) -> list[float]:
    e = finite_array(etas, "etas")
    if e.ndim != 1 or e.size == 0:
        raise ValueError(f"etas: expected a non-empty 1-D sequence of finite steps, got shape {e.shape}")
    return [float(x) for x in e]


def _check_gamma(Gamma: np.ndarray | None, d: int) -> np.ndarray:
    G = np.eye(d) if Gamma is None else finite_array(Gamma, "Gamma")
    if G.shape != (d, d):
        raise ValueError(f"Gamma: expected shape ({d}, {d}), got {G.shape}")
    return G


def von_oswald_layers(d: int, etas: Sequence[float], Gamma: np.ndarray | None = None) -> list[LSAWeights]:
    """Explicit weights of ``len(etas)`` LSA layers equal to GD steps with steps ``etas`` (module docstring).

    Parameters
    ----------
    d : input dimension
    etas : per-layer steps ``eta_l`` on the loss ``(1/2n) sum_i (w^T x_i - y_i)^2``
    Gamma : optional ``(d, d)`` preconditioner (default ``I``); the step is ``-eta_l Gamma^T grad``
    """
    d = positive_int(d, "d")
    etas = _check_etas(etas)
    G = _check_gamma(Gamma, d)
    K = np.zeros((d + 1, d + 1))
    K[:d, :d] = np.eye(d)
    Q = np.zeros((d + 1, d + 1))
    Q[:d, :d] = G
    V = np.zeros((d + 1, d + 1))
    V[d, d] = 1.0
    out = []
    for eta in etas:
        P = np.zeros((d + 1, d + 1))
        P[d, d] = -eta
        out.append(LSAWeights(K.copy(), Q.copy(), V.copy(), P))
    return out


def lsa_forward(
    X: np.ndarray, y: np.ndarray, xq: np.ndarray, *, layers: Sequence[LSAWeights], return_all: bool = False
) -> np.ndarray:
    """Forward pass of residual LSA layers; returns the prediction ``-z_q[d]`` after each layer.

    Shapes: ``X (B, n, d)``, ``y (B, n)``, ``xq (B, d)`` (or ``(B, m, d)`` for ``m`` queries per
    context, which do not interact). Returns ``(B,)`` / ``(B, m)``, or with ``return_all`` the
    predictions after every layer, ``(len(layers) + 1, B[, m])`` (row 0 is the input, 0).
    """
    X, y, xq = np.asarray(X, float), np.asarray(y, float), np.asarray(xq, float)
    single = xq.ndim == 2
    if single:
        xq = xq[:, None, :]
    if X.ndim != 3 or y.shape != X.shape[:2] or xq.ndim != 3 or xq.shape[0] != X.shape[0] or xq.shape[2] != X.shape[2]:
        raise ValueError("X, y, xq: expected shapes (B, n, d), (B, n), (B, d) or (B, m, d)")
    n = X.shape[1]
    Z = np.concatenate(
        [np.concatenate([X, y[..., None]], -1), np.concatenate([xq, np.zeros(xq.shape[:2] + (1,))], -1)], axis=1
    )
    preds = [-Z[:, n:, -1]]
    for lw in layers:
        ctx = Z[:, :n]
        keys = ctx @ lw.K.T  # (B, n, d+1)
        vals = ctx @ (lw.P @ lw.V).T  # (B, n, d+1)
        scores = keys @ (Z @ lw.Q.T).transpose(0, 2, 1)  # (B, n, n+m): (K z_i)^T (Q z_j)
        Z = Z + np.einsum("bij,bik->bjk", scores, vals) / n
        preds.append(-Z[:, n:, -1])
    out = np.stack(preds)
    out = out[..., 0] if single else out
    return out if return_all else out[-1]


def gd_weights(X: np.ndarray, y: np.ndarray, etas: Sequence[float], *, Gamma: np.ndarray | None = None) -> np.ndarray:
    """GD iterates ``w_l`` on ``(1/2n) sum_i (w^T x_i - y_i)^2`` from ``w_0 = 0``: shape ``(L+1, B, d)``.

    The step ``w_{l+1} = w_l - eta_l Gamma^T (H w_l - c)`` with ``H = X^T X / n``, ``c = X^T y / n``
    is a Richardson step with preconditioner ``eta_l Gamma^T``; it is computed by the package's one
    Richardson solver, :func:`iclcore.lsq.iterates.richardson_iterates`, one layer at a time
    (the steps may vary by layer). ``X (B, n, d)``, ``y (B, n)``.
    """
    X, y = finite_array(X, "X"), finite_array(y, "y")
    if X.ndim != 3 or y.shape != X.shape[:2]:
        raise ValueError(f"X, y: expected shapes (B, n, d) and (B, n), got {X.shape} and {y.shape}")
    B, n, d = X.shape
    G = _check_gamma(Gamma, d)
    H = np.einsum("bni,bnj->bij", X, X) / n
    c = np.einsum("bni,bn->bi", X, y) / n
    w = np.zeros((B, d))
    out = [w]
    for eta in _check_etas(etas):
        w = richardson_iterates(eta * G.T, H, c, L=1, z0=w)[:, 1]
        out.append(w)
    return np.stack(out)


def gd_predict(
    X: np.ndarray, y: np.ndarray, xq: np.ndarray, *, etas: Sequence[float], Gamma: np.ndarray | None = None
) -> np.ndarray:
    """Reference prediction ``w_k^T x_q`` of :func:`gd_weights`; ``xq (B, d)`` -> ``(B,)``."""
    return np.einsum("bd,bd->b", gd_weights(X, y, etas, Gamma=Gamma)[-1], np.asarray(xq, float))


def sample_regression(
    B: int, n: int, d: int, *, rng: np.random.Generator | int, x_dist: str = "uniform", noise: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """von Oswald et al. (2023) tasks: ``x ~ U(-1, 1)^d`` (or ``N(0, I)``), ``w ~ N(0, I)``, ``y = w^T x (+ noise)``.

    Returns ``X (B, n, d)``, ``y (B, n)``, ``xq (B, d)``, ``yq (B,)``, ``w (B, d)``.
    """
    B, n, d = positive_int(B, "B"), positive_int(n, "n"), positive_int(d, "d")
    rng = as_generator(rng)
    if x_dist not in ("uniform", "gaussian"):
        raise ValueError(f"x_dist: expected 'uniform' or 'gaussian', got {x_dist!r}")
    noise = nonnegative_float(noise, "noise")
    draw = (lambda s: rng.uniform(-1, 1, s)) if x_dist == "uniform" else (lambda s: rng.standard_normal(s))
    w = rng.standard_normal((B, d))
    Xa = draw((B, n + 1, d))
    ya = np.einsum("bnd,bd->bn", Xa, w) + noise * rng.standard_normal((B, n + 1))
    return Xa[:, :n], ya[:, :n], Xa[:, n], ya[:, n], w


def squared_loss_half(pred: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """Mean of ``(pred - target)^2 / 2`` over prompts and its standard error."""
    r = 0.5 * (np.asarray(pred) - np.asarray(target)) ** 2
    return float(r.mean()), float(standard_error(r.ravel()))


def optimal_single_step(X: np.ndarray, y: np.ndarray, xq: np.ndarray, *, yq: np.ndarray) -> float:
    """Step ``eta*`` minimising the sample mean of ``(eta u - y_q)^2``, ``u = x_q^T X^T y / n`` (one GD step from 0)."""
    u = np.einsum("bd,bnd,bn->b", xq, X, y) / X.shape[1]
    return float(u @ yq / (u @ u))


def train_one_layer_lsa(
    d: int,
    n: int,
    steps: int,
    *,
    batch: int,
    lr: float,
    gen: torch.Generator,
    seed: int,
    init_scale: float = 0.1,
    device: str | torch.device = "cpu",
) -> tuple[TrainedLSA, np.ndarray]:
    """Adam on the halved squared query loss of fresh von Oswald tasks each step.

    Returns the :class:`~iclcore.models.lsa.TrainedLSA` (back on the CPU) and the training-loss curve
    (``steps,``). Tasks come from :func:`sample_regression` with ``np.random.default_rng(seed)`` (on
    the CPU, then moved to ``device``, where the model trains); the initialisation from ``gen``.
    """
    cfg = TrainConfig(steps=positive_int(steps, "steps"), lr=lr, optimizer="adam", batch=batch)
    rng = as_generator(seed, "seed")
    device = torch_device(device)
    model = TrainedLSA(d, gen, init_scale).to(device)
    curve = train_loop(model.parameters(), _query_loss(model, n, d, cfg.batch, rng, device), cfg).loss
    return model.to("cpu"), curve


def _query_loss(
    model: TrainedLSA, n: int, d: int, batch: int, rng: np.random.Generator, device: torch.device
) -> Callable[[int], torch.Tensor]:
    """``k -> ½ mean (ŷ_q - y_q)²`` on ``batch`` fresh tasks of :func:`sample_regression` drawn from ``rng``."""

    def batch_loss(_step: int) -> torch.Tensor:
        X, y, xq, yq = (torch.from_numpy(a).to(device) for a in sample_regression(batch, n, d, rng=rng)[:4])
        return 0.5 * ((model(X, y, xq) - yq) ** 2).mean()

    return batch_loss


@dataclass(frozen=True)
class TrainedRuns:
    """Independent trainings of one LSA layer compared with the single GD step (:func:`train_lsa_runs`).

    ``R`` runs, each checked at the end of each of ``S`` stages of a piecewise-constant step schedule.

    Attributes
    ----------
    stage_ends : (S,) Adam steps taken at the end of each stage
    lr_factors : (S,) each stage's step, as a factor of the base step
    gap : (R, S) the paired test-loss gap ``mean_p [½(ŷ_trained - y)² - ½(ŷ_GD - y)²]`` over the run's own
        test prompts ``p``
    gap_se : (R, S) its standard error over those prompts
    cosine : (R, S) cosine between the trained and the GD predictions on those prompts
    """

    stage_ends: np.ndarray
    lr_factors: np.ndarray
    gap: np.ndarray
    gap_se: np.ndarray
    cosine: np.ndarray

    def max_z(self) -> np.ndarray:
        """``(S,)``: the largest ``|gap| / gap_se`` over the runs (each run against its own prompt error)."""
        return (np.abs(self.gap) / self.gap_se).max(axis=0)

    def mean(self) -> np.ndarray:
        """``(S,)``: the gap averaged over the runs."""
        return self.gap.mean(axis=0)

    def se_over_runs(self) -> np.ndarray:
        """``(S,)``: the standard error of :meth:`mean` over the ``R >= 2`` independent runs (their spread)."""
        return np.atleast_1d(standard_error(self.gap, axis=0))


def train_lsa_runs(
    d: int,
    n: int,
    seeds: Sequence[int],
    *,
    stages: Sequence[tuple[int, float]],
    batch: int,
    lr: float,
    eta: float,
    n_test: int,
    test_rng: np.random.Generator,
    init_scale: float = 0.1,
    device: str | torch.device = "cpu",
) -> TrainedRuns:
    """Train one LSA layer per seed under a staged step schedule; compare it with one GD step at each stage end.

    Run ``r`` is the training of :func:`train_one_layer_lsa` with ``gen = torch.Generator().manual_seed(s)``
    and ``seed = s + 1`` for ``s = seeds[r]``, continued through ``stages``: stage ``j`` takes
    ``stages[j][0]`` Adam steps at the step ``lr * stages[j][1]`` (Adam's moments carry over), so the end of
    a first stage ``(steps, 1.0)`` is that function's layer. Each run draws its own ``n_test`` test prompts
    from ``test_rng`` (before it trains) and is compared on them with the GD prediction
    ``eta x_q^T X^T y / n`` (:func:`gd_predict`); the gap is that of the halved squared query losses.
    """
    d, n, n_test = positive_int(d, "d"), positive_int(n, "n"), positive_int(n_test, "n_test", minimum=2)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds: expected at least one seed")
    if not stages:
        raise ValueError("stages: expected at least one (steps, lr_factor) stage")
    counts = [positive_int(k, "stages: steps") for k, _ in stages]
    factors = np.array([nonnegative_float(f, "stages: lr_factor") for _, f in stages])
    ends = np.cumsum(counts)
    cfg = TrainConfig(steps=int(ends[-1]), lr=lr, optimizer="adam", batch=batch)
    device = torch_device(device)
    rows: list[list[tuple[float, float, float]]] = []
    for s in seeds:
        X, y, xq, yq, _ = sample_regression(n_test, n, d, rng=test_rng)
        ref = gd_predict(X, y, xq, etas=[eta])
        inputs = [torch.from_numpy(a).to(device) for a in (X, y, xq)]
        model = TrainedLSA(d, torch.Generator().manual_seed(s), init_scale).to(device)
        found: list[tuple[float, float, float]] = []

        def check(_k: int) -> None:
            pred = model(*inputs).cpu().numpy()
            diff = 0.5 * (pred - yq) ** 2 - 0.5 * (ref - yq) ** 2
            norms = np.linalg.norm(pred) * np.linalg.norm(ref)
            cos = float(pred @ ref / norms) if norms > 0 else 0.0
            found.append((float(diff.mean()), float(standard_error(diff)), cos))

        train_loop(
            model.parameters(),
            _query_loss(model, n, d, cfg.batch, as_generator(s + 1, "seeds"), device),
            cfg,
            on_checkpoint=check,
            checkpoints=[int(e) for e in ends],
            lr_factor=lambda k: float(factors[np.searchsorted(ends, k, side="right")]),
        )
        rows.append(found)
    out = np.array(rows)  # (R, S, 3)
    return TrainedRuns(ends, factors, out[..., 0], out[..., 1], out[..., 2])
