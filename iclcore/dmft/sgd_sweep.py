"""Late SGD bias of the reduced-Γ model against its gradient flow, swept over step ``η`` and batch ``B``
(Bordelon et al. App. C.1: "the gradient flow limit can be accessed simply by controlling the scale of
η/τ"; the width model of §4 / Fig. 5 and the untied layers of §5.1 / Fig. 8).

One task (:class:`ReducedSGDTask`) is one online-SGD run of
:class:`iclcore.models.attention.ReducedGammaStack` on population contexts (``P = K = ∞``, RRS data):
its result is the path of the mean layer trace ``γ(t)``. :func:`late_bias_sweep` runs every
``(η, B) × seed`` task through :func:`iclcore.parallel.map_configs` and returns, per configuration,
the late relative bias of ``γ`` against the flow (mean over ``t ≥ t_max · late_frac``), net of the
signed discretisation bias (the expected dynamics in the same discrete steps,
:func:`iclcore.dmft.scaling.scalar_descent_path` with step ``η/2``), with its standard error over the
independent runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclcore.dmft.scaling import scalar_descent_path
from iclcore.dmft.width_mc import haar_columns
from iclcore.models.attention import ReducedGammaStack, sample_rrs_contexts, train
from iclcore.parallel import map_configs
from iclcore.stats import fit_power_law_weighted, standard_error
from iclcore.validation import positive_float, positive_int, spectrum_pair

__all__ = ["ReducedSGDTask", "reduced_sgd_gamma_path", "SweepPoint", "late_bias_sweep", "NoiseScaling", "noise_scaling"]


@dataclass(frozen=True)
class ReducedSGDTask:
    """One SGD run of the reduced model on population RRS contexts.

    Attributes
    ----------
    lam, omega : tuples ``(D,)``, the spectra
    L : int, depth; tied : bool, recurrent (one ``Γ``) or untied layers
    N : int or None, width (a Haar frame drawn from ``frame_seed``; None: full ``D x D`` matrices)
    eta : float, theory time step (``t = η · steps``); B : int, contexts per step; steps : int
    train_seed : int, seed of the torch generator of the batches; frame_seed : int
    device : str, the torch device the run trains on
    """

    lam: tuple[float, ...]
    omega: tuple[float, ...]
    L: int
    tied: bool
    N: int | None
    eta: float
    B: int
    steps: int
    train_seed: int
    frame_seed: int = 0
    device: str = "cpu"


def reduced_sgd_gamma_path(task: ReducedSGDTask) -> np.ndarray:
    """Mean layer trace ``γ`` of the run before each step and at the end, shape ``(steps + 1,)``.

    The learning rate is ``η m L_u / 2`` with ``m`` the size of the trainable matrices (``N`` or ``D``)
    and ``L_u = L`` for untied layers (the paper's ``η_0 L``), ``1`` for tied ones, so that the
    expected dynamics is ``dγ/dt = -½ L'(γ)`` at ``t = η · steps`` (:mod:`iclcore.dmft`).
    """
    lam, omega = spectrum_pair(np.array(task.lam), np.array(task.omega))
    D = lam.size
    frame = None
    if task.N is not None and task.N < D:
        frame = torch.as_tensor(haar_columns(D, task.N, np.random.default_rng(task.frame_seed)))
    m = D if frame is None else task.N
    model = ReducedGammaStack(D, task.L, tied=task.tied, frame=frame)
    lr = task.eta * m * (1 if task.tied else task.L) / 2
    res = train(
        model,
        lambda g: sample_rrs_contexts(task.B, 1, 1, lam=lam, omega=omega, gen=g),
        task.steps,
        lr=lr,
        gen=torch.Generator().manual_seed(task.train_seed),
        population=True,
        device=task.device,
    )
    return res.gamma.mean(axis=1)


@dataclass(frozen=True)
class SweepPoint:
    """Result for one ``(η, B)``: ``bias`` (late relative bias net of ``disc``), its ``se`` over runs,
    the signed discretisation bias ``disc`` and the per-run late biases ``runs`` (before subtracting ``disc``)."""

    eta: float
    B: int
    bias: float
    se: float
    disc: float
    runs: np.ndarray


def late_bias_sweep(
    configs: Sequence[tuple[float, int]],
    make_task: Callable[[float, int, int, int], ReducedSGDTask],
    seeds: int,
    *,
    horizon: float,
    flow: Callable[[np.ndarray], np.ndarray],
    grad: Callable[[float], float],
    late_frac: float = 0.1,
    workers: int = 1,
) -> list[SweepPoint]:
    """Late SGD bias against the gradient flow for every ``(η, B)`` in ``configs`` (module docstring).

    Parameters
    ----------
    configs : sequence of ``(eta, B)``
    make_task : ``(eta, B, n_steps, r) -> ReducedSGDTask`` for run ``r`` of a configuration (sets the seeds)
    seeds : int >= 2, independent runs per configuration (their spread is the standard error)
    horizon : float, the same ``t_max`` for every configuration (``n_steps = round(horizon / eta)``)
    flow : ``t -> γ(t)`` of the gradient flow (array in, array out)
    grad : ``γ -> L'(γ)`` (the discrete expected dynamics moves ``γ`` by ``(η/2) L'(γ)`` per step)
    late_frac : float in (0, 1), the late window is ``t >= late_frac · t_max``
    workers : int, processes for :func:`iclcore.parallel.map_configs`

    Returns
    -------
    list of SweepPoint, in the order of ``configs``
    """
    seeds = positive_int(seeds, "seeds", minimum=2)
    horizon = positive_float(horizon, "horizon")
    if not 0 < late_frac < 1:
        raise ValueError(f"late_frac: expected a fraction in (0, 1), got {late_frac}")
    if len(configs) == 0:
        raise ValueError("configs: expected at least one (eta, B) pair")
    plan = []
    for eta, B in configs:
        eta, B = positive_float(eta, "eta"), positive_int(B, "B")
        n = positive_int(int(round(horizon / eta)), "horizon / eta")
        if int(n * late_frac + 1e-9) < 1:  # the flow is 0 at t = 0: the relative bias would be a NaN
            raise ValueError(
                f"horizon: {n} steps of eta={eta} leave t = 0 in the late window t >= {late_frac} t_max; "
                f"expected at least {int(np.ceil(1 / late_frac))} steps"
            )
        plan.append((eta, B, n))
    tasks = [make_task(eta, B, n, r) for eta, B, n in plan for r in range(seeds)]
    paths = map_configs(reduced_sgd_gamma_path, tasks, workers, cost=lambda t: t.steps * t.B, label="SGD bias sweep")
    out = []
    for i, (eta, B, n) in enumerate(plan):
        t = eta * np.arange(n + 1)
        th = np.asarray(flow(t), float)
        late = slice(int(n * late_frac + 1e-9), None)
        disc = float(np.mean(scalar_descent_path(grad, 0.5 * eta, n)[late] / th[late] - 1))
        runs = np.array([np.mean(p[late] / th[late] - 1) for p in paths[i * seeds : (i + 1) * seeds]])
        out.append(SweepPoint(eta, B, float(runs.mean()) - disc, float(standard_error(runs)), disc, runs))
    return out


@dataclass(frozen=True)
class NoiseScaling:
    """Late biases of a sweep against a noise scale ``x`` (``η/B``, or ``1/B`` at fixed ``η``) (:func:`noise_scaling`).

    Attributes
    ----------
    x : ndarray, shape (k,)
        The noise scale of each configuration.
    bias, se, disc : ndarray, shape (k,)
        ``SweepPoint.bias``, ``.se`` and ``.disc`` of each configuration.
    """

    x: np.ndarray
    bias: np.ndarray
    se: np.ndarray
    disc: np.ndarray

    def power_fit(self, idx: Sequence[int] | None = None) -> tuple[float, float, float]:
        """Weighted fit ``bias = A x^p`` over the configurations ``idx`` (all if None): ``(A, p, se_p)``.

        :func:`iclcore.stats.fit_power_law_weighted` with the standard errors over runs; needs 3 points.
        """
        sel = slice(None) if idx is None else list(idx)
        return fit_power_law_weighted(self.x[sel], self.bias[sel], self.se[sel])

    def z(self, i: int) -> float:
        """``|bias_i| / se_i``: configuration ``i``'s net bias in units of its standard error."""
        return abs(self.bias[i]) / self.se[i]

    def collapse_z(self, i: int, j: int) -> float:
        """``|bias_i − bias_j| / sqrt(se_i² + se_j²)``: two configurations (e.g. of equal ``η/B``) compared."""
        return abs(self.bias[i] - self.bias[j]) / np.hypot(self.se[i], self.se[j])


def noise_scaling(points: Sequence[SweepPoint], x: Sequence[float] | np.ndarray) -> NoiseScaling:
    """Collect the late biases of :func:`late_bias_sweep` against the noise scale ``x`` of each point.

    The flow is the ``η/B → 0`` limit of SGD (App. C.1), so the net late bias should fall as a power of
    ``x``; :meth:`NoiseScaling.power_fit` fits it.

    Parameters
    ----------
    points : sequence of SweepPoint, length k
    x : array_like, shape (k,)
        Positive noise scales, one per point.

    Returns
    -------
    NoiseScaling
    """
    x = np.asarray(x, dtype=float)
    if x.shape != (len(points),) or np.any(x <= 0):
        raise ValueError(f"x: expected {len(points)} positive noise scales, one per sweep point, got {x!r}")
    return NoiseScaling(
        x,
        np.array([pt.bias for pt in points]),
        np.array([pt.se for pt in points]),
        np.array([pt.disc for pt in points]),
    )
