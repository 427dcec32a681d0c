"""Reference implementations (loops, one prompt and one step at a time) of vectorised functions.

Private: used only by the tests (equality with the vectorised code) and by ``benchmarks/``
(speed-ups). Each function has the signature and meaning of the public function it mirrors:

- :func:`richardson_iterates_naive` mirrors :func:`iclcore.lsq.iterates.richardson_iterates`;
- :func:`online_decoder_training_naive` mirrors :func:`iclcore.richardson.decoder.online_decoder_training`;
- :func:`online_encoder_run_naive` mirrors :func:`iclcore.richardson.encoder.online_encoder_run`;
- :func:`run_encdec_naive` mirrors :func:`iclcore.richardson.encdec.run_encdec` and
  :func:`risk_decomposition_naive` mirrors :func:`iclcore.richardson.encdec.risk_decomposition`.
"""

from __future__ import annotations

import numpy as np

from iclcore.lsq.lowrank import LatentPrompts
from iclcore.lsq.tasks import TaskConfig, sample_decoder_pairs
from iclcore.richardson.encdec import EncDecConfig, sample_encdec_problem
from iclcore.richardson.encoder import (
    EncoderProblem,
    OnlineEncoderResult,
    heldout_risk,
    sample_encoder_data,
    summarise_encoder_run,
)
from iclcore.validation import positive_int

__all__ = [
    "online_decoder_training_naive",
    "online_encoder_run_naive",
    "richardson_iterates_naive",
    "risk_decomposition_naive",
    "run_encdec_naive",
]


def risk_decomposition_naive(
    U: np.ndarray, P: np.ndarray, prompts: LatentPrompts, *, Sigma_x: np.ndarray, L: int
) -> np.ndarray:
    """Per-prompt, per-step loop reference: ``(e2e, floor, dec)`` at each checkpoint, shape (S, 3)."""
    U = np.asarray(U, float)
    P = np.asarray(P, float)
    Sx = np.asarray(Sigma_x, float)
    out = np.zeros((U.shape[0], 3))
    for s in range(U.shape[0]):
        Us, Ps = U[s], P[s]
        acc = np.zeros(3)
        for i in range(prompts.n):
            A = Us.T @ prompts.H[i] @ Us
            d = Us.T @ prompts.c[i]
            zd = np.linalg.solve(A, d)
            z = np.zeros_like(d)
            for _ in range(L):
                z = z + Ps @ (d - A @ z)
            e1 = Us @ z - prompts.beta[i]
            e2 = Us @ zd - prompts.beta[i]
            e3 = Us @ (z - zd)
            acc += [e1 @ Sx @ e1, e2 @ Sx @ e2, e3 @ Sx @ e3]
        out[s] = acc / prompts.n
    return out


def run_encdec_naive(config: EncDecConfig) -> dict[str, np.ndarray]:
    """Naive reference of :func:`run_encdec`: per-step encoder GD and per-prompt loops.

    Returns the decoder iterates ``P``, the encoder iterates ``G`` and the
    end-to-end / floor / decoder risks at the last step (for tests and the benchmark).
    """
    model, train, test, G0 = sample_encdec_problem(config)
    N = train.n
    Sz = sum(np.outer(z, z) for z in train.z) / N
    Sbz = sum(np.outer(b, z) for b, z in zip(train.beta_hat, train.z)) / N
    eta_e = config.eta_e_rel / float(np.linalg.eigvalsh(Sz)[-1])
    r = config.r
    G = G0.copy()
    P = np.zeros((r, r))
    Gs, Ps, Us, Cs, Bs = [], [], [], [], []
    for _s in range(config.steps + 1):
        W, _, Vt = np.linalg.svd(G, full_matrices=False)
        Uc = W @ Vt
        C = np.zeros((r, r))
        Bm = np.zeros((r, r))
        for i in range(N):
            A = Uc.T @ train.H[i] @ Uc
            d = Uc.T @ train.c[i]
            zd = np.linalg.solve(A, d)
            C += np.outer(d, d) / N
            Bm += np.outer(zd, d) / N
        Gs.append(G.copy())
        Us.append(Uc)
        Cs.append(C)
        Bs.append(Bm)
        G = G - eta_e * (G @ Sz - Sbz)
    eta_d = config.eta_d_rel / max(float(np.linalg.eigvalsh(C)[-1]) for C in Cs)
    for s in range(config.steps + 1):
        Ps.append(P.copy())
        P = P - eta_d * (P @ Cs[s] - Bs[s])
    last = risk_decomposition_naive(np.array(Us[-1:]), np.array(Ps[-1:]), test, Sigma_x=model.Sigma_x, L=config.L)[0]
    return {"G": np.array(Gs), "P": np.array(Ps), "U": np.array(Us), "risks_last": last}


def online_encoder_run_naive(
    problem: EncoderProblem,
    G0: np.ndarray,
    eta: float,
    *,
    batch: int,
    n_steps: int,
    rng: np.random.Generator,
    n_eval: int = 10_000,
) -> OnlineEncoderResult:
    """Reference implementation of :func:`online_encoder_run` with explicit samples.

    Every step draws ``batch`` samples ``(z, b)`` and accumulates the gradient
    one sample at a time; the held-out risk is the explicit mean of
    ``||G z_i - b_i||²``.  Same law as the vectorised run (not the same draws).
    """
    G0 = np.array(G0, dtype=float).reshape(problem.q, problem.r)
    n_steps = positive_int(n_steps, "n_steps")
    B = positive_int(batch, "batch")
    G = G0.copy()
    out = [G.copy()]
    for _ in range(n_steps):
        z, b, _ = sample_encoder_data(problem, B, rng)
        grad = np.zeros_like(G)
        for i in range(B):
            grad += np.outer(G @ z[i] - b[i], z[i])
        G = G - eta * grad / B
        out.append(G.copy())
    Gs = np.array(out)
    z_ev, b_ev, _ = sample_encoder_data(problem, n_eval, rng)
    return summarise_encoder_run(problem, G0, Gs, eta=eta, heldout=np.asarray(heldout_risk(Gs, z_ev, b_ev)))


def online_decoder_training_naive(
    config: TaskConfig, eta: float, n_steps: int, *, batch_size: int, rng: np.random.Generator, P0=None
) -> np.ndarray:
    """Reference: the same SGD with a Python loop over the prompts of each batch.

    Consumes the random stream exactly like :func:`online_decoder_training`
    (same pairs), so the two agree to rounding. Returns ``P_{n_steps}``.
    """
    P = np.zeros((config.K, config.K)) if P0 is None else np.array(P0, dtype=float)
    for _ in range(n_steps):
        d, z = sample_decoder_pairs(config, batch_size, rng)
        G = np.zeros_like(P)
        for n in range(batch_size):
            G += np.outer(P @ d[n] - z[n], d[n])
        P = P - eta * G / batch_size
    return P


def richardson_iterates_naive(
    P: np.ndarray, H: np.ndarray, d: np.ndarray, *, L: int, z0: np.ndarray | None = None
) -> np.ndarray:
    """Reference implementation of :func:`richardson_iterates`: one prompt and one step at a time.

    Same shapes and meaning; Python loops over prompts and steps (for tests and benchmarks only).
    """
    P = np.asarray(P, dtype=float)
    H = np.asarray(H, dtype=float)
    H = H if H.ndim == 3 else H[None]
    n, K = H.shape[0], H.shape[1]
    d = np.broadcast_to(np.asarray(d, dtype=float), (n, K))
    z0 = np.zeros((n, K)) if z0 is None else np.broadcast_to(np.asarray(z0, dtype=float), (n, K))
    out = np.empty((n, L + 1, K))
    for i in range(n):
        Pi = P if P.ndim == 2 else P[i if P.shape[0] > 1 else 0]
        z = np.array(z0[i])
        out[i, 0] = z
        for ell in range(L):
            z = z + Pi @ (d[i] - H[i] @ z)
            out[i, ell + 1] = z
    return out
