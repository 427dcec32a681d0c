# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The Flexformer decoder against every baseline (the experiment report Table 2, Figure 2)
# A depth-$L$ Richardson decoder $x_{\ell+1}=x_\ell+P(d-Hx_\ell)$ from $x_0=0$ on least-squares task systems
# $H=H_M$, $d=c_M$, target $x^\dagger=H^{-1}d$ (the experiment report §4). The Flexformer's $P_\Theta(H,d)$ is computed once
# per task by attention over the rows of $[H\,|\,d]$ ({py:mod}`iclcore.models.flexformer`); the baselines
# ({py:mod}`iclcore.richardson.baselines`) are fitted on the same training tasks and every method is scored
# on the same held-out tasks at the same depth $L$.

# %% tags=["parameters", "hide-input"]
K = 8              # system size; range: [1, 200]
M = 32             # prompt size; range: [1, 1000]
r = 3              # task rank (beta is U* z with z in R^r); range: [1, 50]
sigma = 0.1        # label noise; range: [0, inf)
cond = 10.0        # condition number of Sigma_x; range: [1, inf)
L = 8              # depth; range: [1, 200]
n_train = 2048     # training tasks of the baselines; range: [1, 100000]
n_test = 2048      # held-out tasks (a standard error needs two draws); range: [2, 100000]
rank_P = 3         # rank of the Flexformer's static part; range: [1, 50]
n_heads = 2        # kernel-attention heads; range: [1, 20]
d_k = 4            # query/key dimension; range: [1, 50]
steps = 150        # Adam steps (fresh tasks at each); range: [1, 20000]
batch = 128        # tasks per step; range: [1, 5000]
lr = 3e-3          # Adam step size (cosine decay to lr/100); range: (0, inf)
clip = 1.0         # EB clipping level c; range: (0, inf)
delta = 0.05       # EB failure probability; range: (0, 1)
n_small = 64       # small held-out set for the EB bound at the paper's scale; range: [1, 1000]
seed = 0           # random seed; range: [0, 4294967295]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"K": 16, "M": 64, "L": 16, "n_train": 8192, "n_test": 8192, "steps": 2000, "batch": 512}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.models.flexformer import (
    flexformer_variants,
    frozen_identity_gap,
    preconditioners_numpy,
    prompt_sampler,
    train_preconditioners,
)
from iclcore.parallel import thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.baselines import LinearSystems, compare_baselines
from iclcore.richardson.preconditioner_diagnostics import compare_preconditioners

use_style()
torch.set_num_threads(1)
t_start = time.perf_counter()
c_start = time.process_time()

# %% [markdown]
# ## Tasks, baselines and the population oracle
# The tasks are the Gaussian least-squares prompts of the decoder chapter with a rank-$r$ task vector; the
# decoder target is the system's own solution $x^\dagger=H_M^{-1}c_M$ (the experiment report §4.2), so the exact solve
# has risk zero. $P_\star=BC^\dagger$ uses the closed-form population moments.

# %%
cfg = TaskConfig(K=K, M=M, r=r, sigma=sigma, lam=0.0, cond=cond, target="ridge")
rng = np.random.default_rng(seed)
train = LinearSystems.from_prompts(sample_prompt_statistics(cfg, n_train, rng))
prompts_test = sample_prompt_statistics(cfg, n_test, rng)
test = LinearSystems.from_prompts(prompts_test)
moments = closed_form_moments(cfg)
P_star = oracle_preconditioner(moments)
comp = compare_baselines(train, test, L, H_inf=cfg.H_infinity, moments=moments)
t_baselines = time.perf_counter() - t_start

# %% [markdown]
# ## Four models trained through the $L$ steps on the same fresh tasks
# All four start from the L-BFGS free linear $P$ of the baselines (`free_lbfgs`, fitted on the $n_{\rm train}$
# fixed training tasks) and see the same number of fresh tasks with the same Adam schedule
# ({py:func}`~iclcore.models.flexformer.flexformer_variants`):
# * `flex`: the Flexformer, static rank-$r_P$ part (truncated warm start), heads on;
# * `flex_heads_off`: the same model with no heads (a rank-$r_P$ linear $P=UV^\top$);
# * `free`: a full-rank linear $P$ (the Flexformer with $r_P=K$ and no heads): the free linear $P$ trained
#   end-to-end on the same tasks as the Flexformer;
# * `flex_static`: the fixed kernel dictionary $\theta_0I+\sum_m\theta_m\Phi_m$ (Matérn and RBF Gram
#   matrices of the index positions), started at the least-squares fit of the free $P$.
#
# The four trainings are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`).

# %%
models = flexformer_variants(K, comp.baselines["free"].P, rank=rank_P, n_heads=n_heads, d_k=d_k, seed=seed)
models, curves = train_preconditioners(models, prompt_sampler(cfg), L, steps=steps, batch=batch, lr=lr, seed=seed,
                                       device=device, workers=thread_budget(), label="flexformer models")
t_train = time.perf_counter() - t_start - t_baselines

# %% [markdown]
# ## Every Table 2 quantity, for every method
# Definitions ({py:func}`~iclcore.richardson.preconditioner_diagnostics.decoder_diagnostics`): the per-task loss is
# $\ell=\|x_L-x^\dagger\|^2/K$; $\rho=\|I-PH\|_2$; the EB bound clips at $c$ with confidence $1-\delta$ on all
# $n_{\rm test}$ held-out tasks and, separately, on the first $n_{\rm small}$; distances and stable ranks are
# given both for the task average $\mathbb E_HP(H)$ and per task. The exact solve has $\rho=0$ to rounding: its
# certificate rows would compare rounding errors with 0, so it gets its risk (the floor) only
# ({py:func}`~iclcore.richardson.preconditioner_diagnostics.compare_preconditioners`).

# %%
P_tasks = {name: preconditioners_numpy(m, test.H, test.d) for name, m in models.items()}
P_tasks.update({name if name != "free" else "free_lbfgs": b.preconditioners(test.H) for name, b in comp.baselines.items()})
methods = ["flex", "flex_heads_off", "flex_static", "free", "free_lbfgs", "oracle", "scalar", "jacobi", "h_inf"]
table = compare_preconditioners(P_tasks, test, L, P_oracle=P_star, beta=prompts_test.beta, methods=methods, clip=clip, delta=delta,
                                n_small=n_small)
diag = table.diagnostics
rows = ["risk_dagger", "eb_upper", "eb_upper_small", "violation_rate", "ratio_mean", "ratio_of_means", "rho_mean",
        "frac_rho_lt1", "spectral_radius_mean", "power_norm_mean", "rel_dist_mean_P", "rel_dist_per_task",
        "srank_mean_P", "srank_per_task"]
print(f"{'':22s}" + "".join(f"{m[:12]:>13s}" for m in methods))
for row in rows:
    print(f"{row:22s}" + "".join(f"{getattr(diag[m], row):13.4g}" for m in methods))
print(f"risk of doing nothing (P = 0): {table.zero_risk:.4g}; exact solve (floor): {table.risk_curves['exact'][-1]:.3g}")

# %% [markdown]
# ## Figure 2: generalization and the Richardson certificates

# %%
fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
ax = axes[0]
styles = {"flex": ("-", PALETTE[0]), "flex_heads_off": ("--", PALETTE[0]), "flex_static": (":", PALETTE[0]),
          "free": ("-", PALETTE[1]), "free_lbfgs": ("--", PALETTE[1]), "oracle": ("-", PALETTE[2]),
          "scalar": ("-", PALETTE[3]), "jacobi": ("--", PALETTE[3]), "h_inf": (":", "gray")}
for m, (ls, col) in styles.items():
    ax.semilogy(np.arange(L + 1), table.risk_curves[m], ls, color=col, label=m)
ax.set_ylim(max(1e-8, 0.3 * min(table.risk_curves[m][-1] for m in styles)), 3 * table.zero_risk)
ax.set_xlabel(r"depth $\ell$"); ax.set_title(r"held-out $R_\ell=E\|x_\ell-x^\dagger\|^2/K$"); ax.legend(fontsize=7, ncol=2)
ax = axes[1]
cert = table.certificate("flex")
ax.loglog(cert.bounds[:, -1], cert.error_norms[:, -1], ".", ms=2, color=PALETTE[0])
lim = [cert.error_norms[:, -1].min() * 0.5, cert.bounds[:, -1].max() * 2]
ax.plot(lim, lim, "k--", lw=1, label="bound = error")
ax.set_xlabel(r"$\rho^L\|e_0\|$"); ax.set_ylabel(r"$\|e_L\|$"); ax.set_title("Flexformer: error vs certificate, per task")
ax.legend()
ax = axes[2]
for m in ("flex", "free", "oracle", "scalar"):
    ax.hist(table.operator_norms(m), bins=60, histtype="step", density=True, label=m)
ax.axvline(1.0, color="k", lw=1)
ax.set_xlabel(r"$\rho=\|I-PH\|_2$"); ax.set_title("per-task contraction factor"); ax.legend()
ax = axes[3]
for name, res in curves.items():
    ax.semilogy(res.loss, lw=0.8, label=name)
ax.axhline(diag["flex"].risk_dagger, color=PALETTE[0], ls="--", lw=1, label="flex (held-out)")
ax.set_xlabel("Adam step"); ax.set_title(r"training loss (fresh tasks)"); ax.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig2_flexformer_decoder")

# %% [markdown]
# ## Frozen identity for the trained Flexformer
# $x_L-x^\dagger=-(I-P_\Theta(H)H)^Lx^\dagger$ with the extracted per-task matrix, against the unrolled model
# ({py:func}`~iclcore.models.flexformer.frozen_identity_gap`).

# %%
identity_gap = frozen_identity_gap(models["flex"], test.H, test.d, L=L, P=P_tasks["flex"])
print(f"max relative identity gap: {identity_gap:.2e}")

# %% tags=["nbval-check-output"]
print("violation rate, every method:", max(diag[m].violation_rate for m in methods))
print(f"Flexformer mean rho: {diag['flex'].rho_mean:.2f}")

# %%
elapsed = time.perf_counter() - t_start
metrics = {"runtime_seconds": elapsed, "cpu_seconds": time.process_time() - c_start, "train_seconds": t_train, "baseline_seconds": t_baselines,
           "K": K, "M": M, "r": r, "L": L, "n_test": n_test, "n_train": n_train, "steps": steps, "batch": batch,
           "identity_gap": identity_gap, "free_lbfgs_train_risk": comp.baselines["free"].train_risk,
           "scalar_eta": comp.baselines["scalar"].param, "jacobi_omega": comp.baselines["jacobi"].param,
           **table.metrics(reference="flex", rival="free"),
           **{f"{a}_over_{b}": table.risk_ratio(a, b) for a, b in [("flex", "free")] + [
               (m, "flex") for m in ("free", "flex_heads_off", "scalar", "oracle", "free_lbfgs", "flex_static", "jacobi")]},
           "flex_head_weights_abs_max": float(models["flex"].c.detach().abs().max())}
write_metrics(metrics)
print(f"best learned method: {table.best}; runtime {elapsed:.1f} s (training {t_train:.1f} s)")
