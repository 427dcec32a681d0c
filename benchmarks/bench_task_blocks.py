"""Benchmark: the batched Richardson sweeps of pde_galerkin at its paper size, old path against new.

Plain script::

    .venv/bin/python benchmarks/bench_task_blocks.py [--repeats 5]

At n = 2,048 tasks of size K = 63 and depth L = 16 (the pde_galerkin paper preset), on one thread:

* ``free_linear_risk_and_grad`` (one L-BFGS evaluation) and ``depth_error``: the old path streams all
  ``n`` matrices through ``einsum`` at every step; the new one runs the tasks in blocks of 128,
  all ``L`` steps per block, with batched ``matmul``. Outputs are compared to rounding.
* the spectral radius of ``I − PH`` for a symmetric positive definite ``P``: general eigenvalues
  (old) against ``eigvalsh`` of ``CᵀHC`` (new, :func:`iclcore.lsq.iterates.contraction_factor`).

Ratios old / new of the best CPU times (``time.process_time``), measured alternately in this process.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from iclcore.lsq.iterates import iteration_matrix, symmetric_pd_spectral_radius  # noqa: E402
from iclcore.richardson.baselines import LinearSystems, depth_error, free_linear_risk_and_grad  # noqa: E402


def old_risk_and_grad(P, s, L):
    """The code before the task blocks: every step streams all ``n`` matrices through ``einsum``."""
    n, K = s.n, s.K
    x, rs = np.zeros((n, K)), []
    for _ in range(L):
        r = s.d - np.einsum("nij,nj->ni", s.H, x)
        rs.append(r)
        x = x + r @ P.T
    e = x - s.x_star
    g, grad = 2.0 * e / (n * K), np.zeros((K, K))
    for ell in range(L - 1, -1, -1):
        grad += g.T @ rs[ell]
        g = g - np.einsum("nij,nj->ni", s.H, g @ P)
    return float(np.sum(e**2) / (n * K)), grad


def old_depth_error(P, s, L):
    Ps = np.broadcast_to(P, (s.n, s.K, s.K))
    x, out = np.zeros((s.n, s.K)), [-s.x_star]
    for _ in range(L):
        x = x + np.einsum("nij,nj->ni", Ps, s.d - np.einsum("nij,nj->ni", s.H, x))
        out.append(x - s.x_star)
    return np.stack(out, axis=1)


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    n, K, L = 2048, 63, 16
    A = rng.standard_normal((n, K, K)) / np.sqrt(K)
    H = np.eye(K) + 0.1 * (A + np.swapaxes(A, 1, 2))
    s = LinearSystems(H=H, d=rng.standard_normal((n, K)), x_star=rng.standard_normal((n, K)))
    P = 0.5 * np.eye(K) + 0.01 * rng.standard_normal((K, K))
    Psym = 0.5 * (P + P.T)
    cases = [
        (
            "free_linear_risk_and_grad",
            lambda: old_risk_and_grad(P, s, L)[1],
            lambda: free_linear_risk_and_grad(P, s, L)[1],
        ),
        ("depth_error", lambda: old_depth_error(P, s, L), lambda: depth_error(P, s, L)),
        (
            "spectral radius, symmetric P",
            lambda: np.abs(np.linalg.eigvals(iteration_matrix(Psym, H))).max(axis=-1),
            lambda: symmetric_pd_spectral_radius(Psym, H),
        ),
    ]
    print("| case | old s | new s | old / new | max rel. difference |")
    print("|---|---|---|---|---|")
    for name, old, new in cases:
        t_old, r_old = best(old, a.repeats)
        t_new, r_new = best(new, a.repeats)
        diff = float(np.max(np.abs(r_new - r_old)) / np.max(np.abs(r_old)))
        print(f"| {name} | {t_old:.3f} | {t_new:.3f} | {t_old / t_new:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
