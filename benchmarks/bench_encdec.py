"""Benchmark: the online encoder and encoder+decoder runs, vectorised vs naive loops.

Plain script (``.venv/bin/python benchmarks/bench_encdec.py``). Prints wall times and the ratio
naive / vectorised for

1. the online encoder-only run of seed 001 §3 / seed 000 §12.6 at the paper's step count
   (s = 800): sufficient-statistic minibatches (Wishart + conditional Gaussian, O(r³ + q r²)
   per step) vs explicit samples with a per-sample gradient loop;
2. the encoder+decoder run of seed 000 §6 at the paper's step count (s = 420): closed-form
   encoder, moments vectorised over steps and prompts, batched held-out risks vs per-step,
   per-prompt loops (held-out risks at the last step only, for both).

The naive runs are timed at a reduced size (stated in the output) and extrapolated linearly in
the loop counts, so the benchmark stays under a minute on one core.
"""

from __future__ import annotations

import os
import time

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

from iclcore._reference import online_encoder_run_naive, risk_decomposition_naive, run_encdec_naive  # noqa: E402
from iclcore.richardson.encdec import EncDecConfig, encdec_dynamics, risk_decomposition  # noqa: E402
from iclcore.richardson.encoder import make_encoder_problem, online_encoder_run  # noqa: E402


def _time(fn, repeat: int = 1) -> float:
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_encoder(steps: int = 800, batch: int = 2000, naive_steps: int = 20) -> None:
    rng = np.random.default_rng(0)
    p = make_encoder_problem(32, np.array([1.0, 0.6, 0.35, 0.2]), 0.02, rng=rng)
    G0 = rng.standard_normal((32, 4)) / 2
    t_fast = _time(
        lambda: online_encoder_run(p, G0, 0.5, batch=batch, n_steps=steps, rng=np.random.default_rng(1), n_eval=1000), 3
    )
    t_naive = _time(
        lambda: online_encoder_run_naive(
            p, G0, 0.5, batch=batch, n_steps=naive_steps, rng=np.random.default_rng(1), n_eval=1000
        )
    )
    t_naive_full = t_naive * steps / naive_steps
    print(f"encoder-only online run, s = {steps}, batch = {batch}, q = 32, r = 4")
    print(f"  vectorised (Wishart moments)    {t_fast:8.3f} s")
    print(f"  naive (per-sample loop)         {t_naive_full:8.3f} s  (timed {naive_steps} steps, scaled)")
    print(f"  ratio naive / vectorised        {t_naive_full / t_fast:8.1f}")


def bench_encdec(naive_steps: int = 20) -> None:
    cfg = EncDecConfig()  # K=16, r=3, M=64, n_train=64, n_eval=4096, L=7, steps=420

    def fast():
        dyn = encdec_dynamics(cfg)
        risk_decomposition(dyn.U[-1:], dyn.P[-1:], dyn.test, Sigma_x=dyn.model.Sigma_x, L=cfg.L)

    t_fast = _time(fast, 2)
    small = EncDecConfig(steps=naive_steps)
    t = time.perf_counter()
    run_encdec_naive(small)
    t_naive = time.perf_counter() - t
    # split the naive time into the step loop (scales with steps) and the final evaluation

    dyn = encdec_dynamics(small)
    t_eval = _time(
        lambda: risk_decomposition_naive(dyn.U[-1:], dyn.P[-1:], dyn.test, Sigma_x=dyn.model.Sigma_x, L=small.L)
    )
    t_loop = max(t_naive - t_eval, 0.0) * (cfg.steps + 1) / (naive_steps + 1)
    t_naive_full = t_loop + t_eval
    print(
        f"encoder+decoder run, s = {cfg.steps}, K = {cfg.K}, r = {cfg.r}, n_train = {cfg.n_train}, "
        f"n_eval = {cfg.n_eval}, L = {cfg.L}"
    )
    print(f"  vectorised                      {t_fast:8.3f} s")
    print(
        f"  naive (per-step, per-prompt)    {t_naive_full:8.3f} s  (step loop timed over {naive_steps} steps, scaled)"
    )
    print(f"  ratio naive / vectorised        {t_naive_full / t_fast:8.1f}")


if __name__ == "__main__":
    bench_encoder()
    bench_encdec()
