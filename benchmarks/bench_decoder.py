"""Benchmark: closed forms and batching against naive loops at the paper's sizes.

Plain script (no pytest-benchmark needed)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_decoder.py

K = 64, s = 800 outer steps (seed 000 §11–12), M = 480, L = 20 Richardson steps,
1024 held-out prompts. Prints the best of ``repeats`` wall-clock times and the
speed-up ratio naive / fast, and checks that both give the same numbers.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from iclcore._reference import online_decoder_training_naive, richardson_iterates_naive
from iclcore.lsq.dynamics import excess_risk, gd_iterate, gd_trajectory, modal_excess_risk
from iclcore.lsq.iterates import richardson_iterates
from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_decoder_pairs, sample_prompt_statistics, sample_prompts
from iclcore.richardson.decoder import max_stable_step, online_decoder_training

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def best(fn, repeats=3):
    times = []
    out = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def report(name, t_fast, t_naive, err):
    print(
        f"{name:58s} fast {t_fast * 1e3:9.2f} ms   naive {t_naive * 1e3:9.2f} ms   ratio {t_naive / t_fast:8.1f}x   "
        + (f"max|diff| {err:.1e}" if err == err else "(different draws of the same law)")
    )


def main() -> None:
    K, M, S, L, n = 64, 480, 800, 20, 1024
    cfg = TaskConfig(K=K, M=M, cond=10.0, sigma=0.1)
    mom = closed_form_moments(cfg)
    P_star = oracle_preconditioner(mom)
    eta = max_stable_step(mom.C, 0.5)
    P0 = np.zeros((K, K))
    steps = np.arange(S + 1)
    print(f"K = {K}, M = {M}, s = 0..{S}, L = {L}, n = {n} prompts; single thread\n")

    t_f, traj = best(lambda: gd_trajectory(P0, P_star, mom.C, eta=eta, steps=steps))
    t_loop, loop = best(lambda: gd_iterate(P0, mom.B, mom.C, eta=eta, n_steps=S))
    report("outer trajectory P_s, all s (closed form vs GD loop)", t_f, t_loop, np.abs(traj - loop).max())

    t_f, rf = best(lambda: modal_excess_risk(P0, P_star, mom.C, eta=eta, steps=steps, scale=1 / K))

    def naive_curve():
        P, C, B, out = P0.copy(), mom.C, mom.B, np.empty(S + 1)
        for s in range(S + 1):
            E = P - P_star
            out[s] = np.sum((E @ C) * E) / K
            P = P - eta * (P @ C - B)
        return out

    t_n, rn = best(naive_curve)
    report("excess-risk curve, all s (modal formula vs GD loop + trace)", t_f, t_n, np.abs(rf - rn).max())
    rl = np.array([excess_risk(P, P_star, mom.C, scale=1 / K) for P in loop])
    assert np.abs(rl - rn).max() < 1e-12

    t_f, tf = best(lambda: gd_trajectory(P0, P_star, mom.C, eta=eta, steps=[S]))
    report("single checkpoint P_800 (closed form vs 800-step loop)", t_f, t_loop, np.abs(tf[0] - loop[-1]).max())

    p = sample_prompt_statistics(cfg, n, np.random.default_rng(0))
    t_f, zf = best(lambda: richardson_iterates(P_star, p.H_M, p.d, L=L))
    t_n, zn = best(lambda: richardson_iterates_naive(P_star, p.H_M, p.d, L=L), repeats=1)
    report(f"Richardson, {n} prompts x L={L} (batched vs per-prompt loop)", t_f, t_n, np.abs(zf - zn).max())
    # context: at small K the per-prompt Python overhead dominates and batching pays more
    cfg16 = TaskConfig(K=16, M=120, cond=10.0, sigma=0.1)
    P16 = oracle_preconditioner(closed_form_moments(cfg16))
    p16 = sample_prompt_statistics(cfg16, n, np.random.default_rng(0))
    t_f, zf = best(lambda: richardson_iterates(P16, p16.H_M, p16.d, L=L))
    t_n, zn = best(lambda: richardson_iterates_naive(P16, p16.H_M, p16.d, L=L), repeats=1)
    report("  same at K=16 (context)", t_f, t_n, np.abs(zf - zn).max())

    b, n_steps = 1024, 20
    t_f, rf = best(
        lambda: online_decoder_training(
            cfg, eta, n_steps, batch_size=b, rng=np.random.default_rng(1), checkpoints=[n_steps]
        ).P[-1]
    )
    t_n, rn = best(
        lambda: online_decoder_training_naive(cfg, eta, n_steps, batch_size=b, rng=np.random.default_rng(1)), repeats=1
    )
    report(f"online SGD, {n_steps} steps x {b} prompts (batched vs per-prompt)", t_f, t_n, np.abs(rf - rn).max())

    t_f, _ = best(lambda: sample_decoder_pairs(cfg, 1024, np.random.default_rng(2)))
    t_n, _ = best(lambda: sample_prompts(cfg, 1024, np.random.default_rng(2)), repeats=1)
    report("decoder pairs (d, z*), 1024 prompts (exact O(nK) law vs X)", t_f, t_n, float("nan"))


if __name__ == "__main__":
    main()
