"""Full linear attention with trainable read-in and read-out (Bordelon et al. §5.2, App. G.2, Eqs. 123-124).

With the block (aligned) structure of :class:`iclcore.models.attention.LinearAttention` and a
trainable read-in ``w_y = a_y e_D`` and read-out ``w_o = a_o e_D``, the network predicts
``f(x_*) = a_o a_y x_*ᵀ b_L`` with ``b_L = [I - (I - ΓΣ̂/L)^L] b_*`` (noise-free labels), so with
isotropic ``Γ = γ I`` and ``m = a_o a_y`` the loss is

.. math::

    \\mathcal L(m, \\gamma) = \\big\\langle \\mathrm{tr}\\,\\Lambda\\,[I - m\\,q(\\hat\\Sigma)]\\,\\Omega\\,
    [I - m\\,q(\\hat\\Sigma)]\\big\\rangle,

.. math:: q(s) = 1 - (1 - \\gamma s/L)^L ,

Eq. (124) with ``w_o w_y = m`` and ``w_v w_k w_q w_x^2 = γ`` (at ``P = ∞``, ``Σ̂ = Λ``, it is Eq. 124
as printed). Gradient flow on the factors of a product keeps ``d(f_i^2)/dt = -2 n_i X ∂_X 𝓛`` for a
factor entering ``X`` with power ``n_i``, so with the Frobenius-balanced scale ``s`` of
``W_x, W_k, W_q, W_v`` (``γ = c s^5``, ``c = 2/D^2``, :func:`iclcore.models.attention.power_five_constant`):

.. math:: \\dot a_o = -a_y\\,\\partial_m\\mathcal L,\\quad \\dot a_y = -a_o\\,\\partial_m\\mathcal L,\\quad
          \\dot s = -c\\,s^4\\,\\partial_\\gamma\\mathcal L .

From a small start ``m`` overshoots its final value while ``γ`` is still small (the read-out
compensates the not-yet-learned in-context GD) and recovers as ``γ`` grows: the paper's
"transient blowup and recovery in the scale of ``w_y`` and ``w_o``" (§5.2).

Tasks of :func:`iclcore.parallel.map_configs`: one SGD run of the block network of Figure 6
(:func:`full_attention_run`) and of the network with trainable read-in and read-out (:func:`readout_sgd_run`);
one flow at ``L = P = ∞`` on a power-law spectrum, of ``γ = c s^5`` or of ``γ`` (:func:`power_law_flow`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.finite_context import ContextDraws, tied_loss_from_moments, tied_loss_moments
from iclcore.dmft.rrs import rrs_gradient_flow, rrs_loss_grad
from iclcore.models.attention import (
    Contexts,
    LinearAttention,
    TrainResult,
    power_five_flow,
    sample_iso_contexts,
    sample_rrs_contexts,
    train,
)
from iclcore.models.training import TrainConfig, to_device, torch_device, train_loop
from iclcore.validation import nondecreasing_times, positive_float, positive_int, torch_generator

__all__ = [
    "readout_loss",
    "readout_flow",
    "readout_descent_path",
    "readout_peak_standard_error",
    "ReadoutFlow",
    "ReadoutAttention",
    "train_readout",
    "ReadoutRun",
    "FullAttentionRun",
    "full_attention_run",
    "ReadoutSGDRun",
    "readout_sgd_run",
    "PowerLawFlowJob",
    "power_law_flow",
    "PowerFiveTheory",
    "power_five_theory",
]


def readout_loss(m: float, gamma: float, draws: ContextDraws, *, L: int) -> tuple[float, float, float]:
    """Eq. (124) at finite context length and its two partial derivatives (Monte Carlo mean over ``draws``).

    ``𝓛 = tr ΩΛ - 2m g_1(γ) + m² g_2(γ)`` with ``g_1 = ⟨tr Λ q Ω⟩``, ``g_2 = ⟨tr Λ q Ω q⟩``.

    Returns
    -------
    (loss, dL/dm, dL/dgamma) : floats
    """
    L = positive_int(L, "L")
    if not (np.isfinite(m) and np.isfinite(gamma)):
        raise ValueError("m, gamma: expected finite values")
    D = draws.D
    u = 1.0 - gamma * draws.s / L
    q = 1.0 - u**L
    dq = draws.s * u ** (L - 1)
    g1 = float(np.mean(np.sum(q * draws.w_ol, axis=1))) / D
    Wq = (draws.W_lo @ q[..., None])[..., 0]
    g2 = float(np.mean(np.sum(q * Wq, axis=1))) / D
    d1 = float(np.mean(np.sum(dq * draws.w_ol, axis=1))) / D
    d2 = 2.0 * float(np.mean(np.sum(dq * Wq, axis=1))) / D
    return draws.base - 2 * m * g1 + m * m * g2, -2 * g1 + 2 * m * g2, -2 * m * d1 + m * m * d2


@dataclass
class ReadoutFlow:
    """Gradient flow of Eq. (124): arrays ``(n_t,)`` of ``t``, ``a_o``, ``a_y``, ``s``, ``m = a_o a_y``,
    ``gamma = c s^5`` and the loss."""

    t: np.ndarray
    a_o: np.ndarray
    a_y: np.ndarray
    s: np.ndarray
    m: np.ndarray
    gamma: np.ndarray
    loss: np.ndarray


def readout_flow(
    t: np.ndarray, draws: ContextDraws, L: int, *, c: float, a_o0: float, a_y0: float, s0: float
) -> ReadoutFlow:
    """Gradient flow of the read-in/read-out scales and the balanced attention scale (module docstring).

    Parameters
    ----------
    t : non-decreasing times ``>= 0`` (plain SGD with step ``η``: ``t = η · steps``)
    draws : ContextDraws (``P = None`` for Eq. 124 as printed)
    L : int, depth; c : float, ``γ = c s^5``; a_o0, a_y0, s0 : floats, the initial scales

    Returns
    -------
    ReadoutFlow
    """
    from scipy.integrate import solve_ivp

    t = nondecreasing_times(t)
    L = positive_int(L, "L")
    c = positive_float(c, "c")
    s0 = positive_float(s0, "s0")
    if not (np.isfinite(a_o0) and np.isfinite(a_y0)):
        raise ValueError("a_o0, a_y0: expected finite initial read-out/read-in scales")

    def rhs(_t: float, y: np.ndarray) -> list[float]:
        ao, ay, s = y
        _, dm, dg = readout_loss(ao * ay, c * s**5, draws, L=L)
        return [-ay * dm, -ao * dm, -c * s**4 * dg]

    sol = solve_ivp(
        rhs, (0.0, float(t[-1])), [float(a_o0), float(a_y0), s0], t_eval=t, method="LSODA", rtol=1e-9, atol=1e-12
    )
    if not sol.success:
        raise RuntimeError(f"readout_flow: the ODE solver failed ({sol.message})")
    ao, ay, s = sol.y
    m, g = ao * ay, c * s**5
    loss = np.array([readout_loss(mi, gi, draws, L=L)[0] for mi, gi in zip(m, g)])
    return ReadoutFlow(t=t, a_o=ao, a_y=ay, s=s, m=m, gamma=g, loss=loss)


def readout_descent_path(
    draws: ContextDraws, L: int, D: int, *, eta: float, steps: int, a0: float, s0: float
) -> ReadoutFlow:
    """The expected SGD path of :class:`ReadoutAttention` in its own discrete steps (Eq. 124 with step ``η``).

    Full-batch gradient descent on the isotropic block weights ``W_x = x I``, ``W_k = k I``,
    ``W_q = q I``, scalar ``w_v = v`` and ``a_o, a_y``, with ``γ = v x² k q`` (diagonal entries
    ``x = s√(2/D)``, ``k = q = s/√D``, ``v = s`` at the start, as in
    :class:`~iclcore.models.attention.LinearAttention`): each diagonal entry moves by
    ``-η ∂𝓛/∂Γ_ii ∂Γ_ii/∂entry`` with ``∂𝓛/∂Γ_ii = ∂_γ𝓛 / D``, the scalars by their full gradients.
    As ``η → 0`` at ``t = η · steps`` it tends to :func:`readout_flow` (the difference is ``O(η)``);
    it is the theory the SGD follows in expectation before its noise (the discretisation term of the
    error model, as :func:`iclcore.dmft.scaling.scalar_descent_path` for the reduced model).

    Returns
    -------
    ReadoutFlow at ``t = η · (0, 1, ..., steps)`` (``s`` is the Frobenius-balanced scale ``(γ D²/2)^{1/5}``)
    """
    L, D, steps = positive_int(L, "L"), positive_int(D, "D"), positive_int(steps, "steps")
    eta, a0, s0 = positive_float(eta, "eta"), positive_float(a0, "a0"), positive_float(s0, "s0")
    x, k, q, v, ao, ay = s0 * np.sqrt(2.0 / D), s0 / np.sqrt(D), s0 / np.sqrt(D), s0, a0, a0
    rec = np.empty((steps + 1, 4))  # a_o, a_y, gamma, loss
    for n in range(steps + 1):  # an iterated map: each step needs the previous one
        g = v * x * x * k * q
        loss, dm, dg = readout_loss(ao * ay, g, draws, L=L)
        rec[n] = ao, ay, g, loss
        x, k, q, v, ao, ay = (
            x - eta * 2 * v * x * k * q * dg / D,
            k - eta * v * x * x * q * dg / D,
            q - eta * v * x * x * k * dg / D,
            v - eta * x * x * k * q * dg,
            ao - eta * ay * dm,
            ay - eta * ao * dm,
        )
    ao_, ay_, gam, loss = rec.T
    s = np.abs(gam * D**2 / 2) ** 0.2
    return ReadoutFlow(t=eta * np.arange(steps + 1), a_o=ao_, a_y=ay_, s=s, m=ao_ * ay_, gamma=gam, loss=loss)


class ReadoutAttention(LinearAttention):
    """:class:`~iclcore.models.attention.LinearAttention` (block structure, tied layers) with trainable
    read-in ``w_y = a_y e_D`` and read-out ``w_o = a_o e_D`` (Bordelon et al. Eq. 3, §5.2, App. G.2).

    Parameters
    ----------
    D, L : int; s0 : float, initial Frobenius scale of ``W_x, W_k, W_q, W_v`` (``γ(0) = c s0^5``)
    a0 : float, initial ``a_o = a_y``
    """

    def __init__(self, D: int, L: int, s0: float, a0: float, dtype: torch.dtype = torch.float64):
        super().__init__(D, L, s0, "block", dtype=dtype)
        a0 = positive_float(a0, "a0")
        self.a_y = nn.Parameter(torch.tensor(a0, dtype=dtype))
        self.a_o = nn.Parameter(torch.tensor(a0, dtype=dtype))

    def forward(self, X: torch.Tensor, y: torch.Tensor, Xs: torch.Tensor) -> torch.Tensor:
        """Predictions ``a_o e_D · h^{L+1}`` on the ``K`` queries, shape ``(B, K)``.

        In the block structure ``W_k, W_q`` read only the ``x`` channels and ``W_v`` only the label
        channel, so the label channel of every token is linear in the read-in ``a_y y`` and the
        prediction is ``a_o a_y`` times that of :class:`LinearAttention` with unit read-in/read-out.
        """
        return self.a_o * self.a_y * super().forward(X, y, Xs)


@dataclass
class ReadoutRun:
    """Per-step records of :func:`train_readout`: ``loss (steps,)`` (batch loss before each update) and
    ``gamma, a_o, a_y`` of shape ``(steps + 1,)``."""

    loss: np.ndarray
    gamma: np.ndarray
    a_o: np.ndarray
    a_y: np.ndarray


def readout_peak_standard_error(
    draws: ContextDraws, L: int, D: int, *, eta: float, steps: int, a0: float, s0: float, n_blocks: int = 4
) -> float:
    """Monte Carlo standard error of the peak read-out scale ``max_t a_o a_y`` of :func:`readout_descent_path`.

    The same path on ``n_blocks`` independent blocks of the draws (``ContextDraws.split``): the standard
    deviation of their peaks over ``sqrt(n_blocks)`` is the standard error of the full table's peak.

    Parameters
    ----------
    draws : ContextDraws
    L, D, eta, steps, a0, s0 :
        As in :func:`readout_descent_path`.
    n_blocks : int
        ``2 <= n_blocks <= draws.n``.
    """
    n_blocks = positive_int(n_blocks, "n_blocks", minimum=2)
    peaks = [
        readout_descent_path(blk, L, D, eta=eta, steps=steps, a0=a0, s0=s0).m.max() for blk in draws.split(n_blocks)
    ]
    return float(np.std(peaks, ddof=1) / np.sqrt(n_blocks))


def train_readout(
    model: ReadoutAttention,
    sampler,
    steps: int,
    *,
    lr: float,
    gen: torch.Generator,
    device: str | torch.device = "cpu",
) -> ReadoutRun:
    """Plain online SGD ``W ← W - lr ∇`` on the query mean-squared error, fresh prompts every step.

    ``sampler(gen)`` returns a :class:`~iclcore.models.attention.Contexts` (drawn on the CPU, then
    moved to ``device``, where the model trains); the flow of :func:`readout_flow` is the ``lr → 0``
    limit at ``t = lr · steps``.
    """
    if not isinstance(model, ReadoutAttention):
        raise ValueError("model: expected a ReadoutAttention")
    steps = positive_int(steps, "steps")
    lr = positive_float(lr, "lr")
    gen = torch_generator(gen)
    device = torch_device(device)
    model.to(device)
    rec: list[tuple[float, float, float]] = []

    def batch_loss(_k: int) -> torch.Tensor:
        ctx: Contexts = to_device(sampler(gen), device)
        return ((model(ctx.X, ctx.y, ctx.Xs) - ctx.ys) ** 2).mean()

    def record(_k: int) -> None:
        rec.append((model.gamma(), float(model.a_o), float(model.a_y)))

    log = train_loop(
        model.parameters(),
        batch_loss,
        TrainConfig(steps=steps, lr=lr, nonfinite="raise"),
        on_checkpoint=record,
        checkpoints=range(steps + 1),
        count_from=0,
    )
    g, ao, ay = (np.array(v) for v in zip(*rec))
    return ReadoutRun(loss=log.loss, gamma=g, a_o=ao, a_y=ay)


# --------------------------------------------------------------------------------------------
# Inner tasks (iclcore.parallel.map_configs): SGD runs of the full network of Figure 6
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FullAttentionRun:
    """One SGD run of the block :class:`~iclcore.models.attention.LinearAttention` of Figure 6 (float32).

    Attributes
    ----------
    lam, omega : tuples ``(D,)``, the spectra; ``kind="iso"`` draws isotropic contexts (spectra unused),
        ``"rrs"`` randomly rotated ones
    P, K : int, labelled tokens and queries per context; B : int, contexts per step
    L : int, depth; s0 : float, balanced initial scale
    eta : float, initial learning rate; decay : float, step ``k`` uses ``eta / (1 + k / decay)``
    steps : int; seed : int, seed of the torch generator of the batches
    device : str, the torch device it trains on
    """

    kind: str
    lam: tuple[float, ...]
    omega: tuple[float, ...]
    P: int
    K: int
    B: int
    L: int
    s0: float
    eta: float
    decay: float
    steps: int
    seed: int
    device: str = "cpu"


def full_attention_run(run: FullAttentionRun) -> TrainResult:
    """Plain SGD of the Figure-6 network with the decaying step of ``run``; ``loss (steps,)``, ``gamma (steps + 1, 1)``.

    Raises ValueError (naming ``eta``) if the run diverges. A pure function of ``run``: a task of
    :func:`iclcore.parallel.map_configs`.
    """
    if not isinstance(run, FullAttentionRun):
        raise TypeError(f"run: expected a FullAttentionRun, got {type(run).__name__}")
    if run.kind not in ("iso", "rrs"):
        raise ValueError(f"kind: expected 'iso' or 'rrs', got {run.kind!r}")
    D = len(run.lam)
    lam, omega = np.array(run.lam), np.array(run.omega)

    def sampler(g: torch.Generator) -> Contexts:
        if run.kind == "iso":
            return sample_iso_contexts(run.B, run.P, run.K, D=D, gen=g, dtype=torch.float32)
        return sample_rrs_contexts(run.B, run.P, run.K, lam=lam, omega=omega, gen=g, dtype=torch.float32)

    def schedule(k):
        return 1.0 / (1.0 + k / run.decay)

    model = LinearAttention(D, run.L, run.s0, "block", dtype=torch.float32)
    try:
        gen = torch.Generator().manual_seed(run.seed)
        return train(model, sampler, run.steps, lr=run.eta, gen=gen, schedule=schedule, device=run.device)
    except FloatingPointError as exc:  # no stability limit of the full model is known: refuse, never a NaN verdict
        raise ValueError(
            f"eta: SGD of the {run.kind} run at depth L={run.L} diverged with eta={run.eta}, B={run.B} ({exc}); lower eta"
        ) from None


@dataclass(frozen=True)
class ReadoutSGDRun:
    """One SGD run of :class:`ReadoutAttention` on isotropic contexts (float32).

    Attributes
    ----------
    D, P, K, B : int, dimension, labelled tokens and queries per context, contexts per step
    L : int, depth; s0 : float, balanced initial scale; a0 : float, initial ``a_o = a_y``
    eta : float, constant step; steps : int; seed : int, seed of the torch generator of the batches
    device : str, the torch device it trains on
    """

    D: int
    P: int
    K: int
    B: int
    L: int
    s0: float
    a0: float
    eta: float
    steps: int
    seed: int
    device: str = "cpu"


def readout_sgd_run(run: ReadoutSGDRun) -> ReadoutRun:
    """:func:`train_readout` of ``run`` (``loss (steps,)``; ``gamma, a_o, a_y (steps + 1,)``).

    A pure function of ``run``: a task of :func:`iclcore.parallel.map_configs`.
    """
    if not isinstance(run, ReadoutSGDRun):
        raise TypeError(f"run: expected a ReadoutSGDRun, got {type(run).__name__}")
    model = ReadoutAttention(run.D, run.L, run.s0, run.a0, dtype=torch.float32)
    return train_readout(
        model,
        lambda g: sample_iso_contexts(run.B, run.P, run.K, D=run.D, gen=g, dtype=torch.float32),
        run.steps,
        lr=run.eta,
        gen=torch.Generator().manual_seed(run.seed),
        device=run.device,
    )


@dataclass(frozen=True)
class PowerLawFlowJob:
    """One flow at ``L = P = ∞`` on the power-law spectrum of size ``D`` (Figure 6e, Eq. 22).

    Attributes
    ----------
    D : int; nu, beta : float, capacity and source exponents (:func:`iclcore.dmft.data.power_law_spectrum`)
    t : tuple ``(n_t,)``, non-decreasing times
    kind : ``"w5"``, the balanced flow of the full network ``γ = c s^5``
        (:func:`iclcore.models.attention.power_five_flow` from ``s0``), or ``"gamma"``, the flow of ``γ``
        itself (:func:`iclcore.dmft.rrs.rrs_gradient_flow`)
    c, s0 : float, the constant and initial scale of the ``"w5"`` flow
    """

    D: int
    nu: float
    beta: float
    t: tuple[float, ...]
    kind: str
    c: float = 1.0
    s0: float = 0.3


def power_law_flow(job: PowerLawFlowJob) -> tuple[np.ndarray | None, np.ndarray]:
    """``(s, γ)`` of the ``"w5"`` flow or ``(None, γ)`` of the ``"gamma"`` flow at ``job.t``, arrays ``(n_t,)``.

    A pure function of ``job``: a task of :func:`iclcore.parallel.map_configs`.
    """
    if not isinstance(job, PowerLawFlowJob):
        raise TypeError(f"job: expected a PowerLawFlowJob, got {type(job).__name__}")
    if job.kind not in ("w5", "gamma"):
        raise ValueError(f"kind: expected 'w5' or 'gamma', got {job.kind!r}")
    lam, omega = power_law_spectrum(positive_int(job.D, "D"), job.nu, job.beta)
    t = np.array(job.t)
    if job.kind == "gamma":
        return None, rrs_gradient_flow(t, lam, omega, L=np.inf)[0]
    return power_five_flow(t, lambda x: rrs_loss_grad(x, lam, omega, L=np.inf), job.c, s0=job.s0)


@dataclass(frozen=True)
class PowerFiveTheory:
    """The ``γ = c s⁵`` theory of full linear attention on a finite-context landscape (:func:`power_five_theory`).

    Attributes
    ----------
    gamma, loss : ndarray, shape (n_t,)
        ``γ(t)`` of the balanced flow and the loss along it.
    mc_sd : float
        Relative Monte Carlo standard deviation of the late-window mean of ``γ``: the spread of the same
        flow over independent blocks of the draws, over the square root of their number.
    """

    gamma: np.ndarray
    loss: np.ndarray
    mc_sd: float


def power_five_theory(
    draws: ContextDraws, L: int, t: np.ndarray, *, c: float, s0: float, n_tables: int, late_start: int
) -> PowerFiveTheory:
    """Balanced ``γ = c s⁵`` flow on the exact finite-``P`` tied landscape, with its Monte Carlo error (Fig. 6a-b).

    The depth-``L`` landscape is a polynomial of degree ``2L`` in ``γ`` whose coefficients are Monte Carlo
    moments over the draws (:func:`iclcore.dmft.finite_context.tied_loss_moments`); the flow is
    :func:`iclcore.models.attention.power_five_flow` on it. Its Monte Carlo error: the same flow on
    ``n_tables`` independent blocks of the draws (``ContextDraws.split``); the standard deviation of
    their late-window (``t[late_start:]``) mean ``γ``, relative to the blocks' mean, over
    ``sqrt(n_tables)`` is the relative standard error of the full table's late-window mean.

    Parameters
    ----------
    draws : ContextDraws
    L : int
        Depth.
    t : ndarray, shape (n_t,)
        Non-decreasing theory times.
    c, s0 : float
        ``γ = c s⁵`` and the initial scale.
    n_tables : int
        Independent blocks, ``2 <= n_tables <= draws.n``.
    late_start : int
        First index of the late window.

    Returns
    -------
    PowerFiveTheory
    """
    n_tables = positive_int(n_tables, "n_tables", minimum=2)
    M = tied_loss_moments(draws, L)
    _, gam = power_five_flow(t, lambda x: float(tied_loss_from_moments(x, M)[1]), c, s0=s0)
    late_th = []
    for blk in draws.split(n_tables):
        M_b = tied_loss_moments(blk, L)
        late_th.append(
            np.mean(
                power_five_flow(t, lambda x, M=M_b: float(tied_loss_from_moments(x, M)[1]), c, s0=s0)[1][late_start:]
            )
        )
    mc_sd = float(np.std(late_th, ddof=1) / np.mean(late_th) / np.sqrt(n_tables))
    return PowerFiveTheory(gam, tied_loss_from_moments(gam, M)[0], mc_sd)
