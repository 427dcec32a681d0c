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
    Flexformer,
    FlexformerConfig,
    KernelDictionaryPreconditioner,
    PreconditionerJob,
    kernel_dictionary,
    preconditioners_numpy,
    prompt_sampler,
    train_preconditioner_job,
)
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.baselines import (
    LinearSystems,
    compare_baselines,
    depth_error,
    depth_risk_curve,
)
from iclcore.richardson.preconditioner_diagnostics import decoder_diagnostics
from iclcore.stats import paired_standard_error, ratio_standard_error, standard_error

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
test_beta = LinearSystems(H=prompts_test.H_M, d=prompts_test.d, x_star=prompts_test.beta)  # target: the task beta
moments = closed_form_moments(cfg)
P_star = oracle_preconditioner(moments)
comp = compare_baselines(train, test, L, H_inf=cfg.H_infinity, moments=moments)
t_baselines = time.perf_counter() - t_start



# %% [markdown]
# ## Four models trained through the $L$ steps on the same fresh tasks
# All four start from the L-BFGS free linear $P$ of the baselines (`free_lbfgs`, fitted on the $n_{\rm train}$
# fixed training tasks) and see the same number of fresh tasks with the same Adam schedule:
# * `flex`: the Flexformer, static rank-$r_P$ part (truncated warm start), heads on;
# * `flex_heads_off`: the same model with no heads (a rank-$r_P$ linear $P=UV^\top$);
# * `free`: a full-rank linear $P$ (the Flexformer with $r_P=K$ and no heads): the free linear $P$ trained
#   end-to-end on the same tasks as the Flexformer;
# * `flex_static`: the fixed kernel dictionary $\theta_0I+\sum_m\theta_m\Phi_m$ (Matérn and RBF Gram
#   matrices of the index positions), started at the least-squares fit of the free $P$.

# %%
P_free = comp.baselines["free"].P
models = {
    "flex": Flexformer(FlexformerConfig(K=K, rank=rank_P, n_heads=n_heads, d_k=d_k),
                       torch.Generator().manual_seed(seed), P_init=P_free),
    "flex_heads_off": Flexformer(FlexformerConfig(K=K, rank=rank_P, n_heads=0, d_k=d_k),
                                 torch.Generator().manual_seed(seed), P_init=P_free),
    "free": Flexformer(FlexformerConfig(K=K, rank=K, n_heads=0), torch.Generator().manual_seed(seed), P_init=P_free),
    "flex_static": KernelDictionaryPreconditioner(
        kernel_dictionary((np.arange(K) + 0.5) / K, ("identity", "matern52:0.1", "matern52:0.3", "rbf:0.5")),
        P_init=P_free),
}
# the four trainings are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
jobs = [PreconditionerJob(model, prompt_sampler(cfg), L, steps, batch, lr, seed + 1 + i, {"model": (i + 1, len(models))}, device=device)
        for i, model in enumerate(models.values())]
trained = map_configs(train_preconditioner_job, jobs, thread_budget(), label="flexformer models")
models = {name: model for name, (model, _) in zip(models, trained)}
curves = {name: res for name, (_, res) in zip(models, trained)}
t_train = time.perf_counter() - t_start - t_baselines

# %% [markdown]
# ## Every Table 2 quantity, for every method
# Definitions ({py:func}`~iclcore.richardson.preconditioner_diagnostics.decoder_diagnostics`): the per-task loss is
# $\ell=\|x_L-x^\dagger\|^2/K$; $\rho=\|I-PH\|_2$; the EB bound clips at $c$ with confidence $1-\delta$ on all
# $n_{\rm test}$ held-out tasks and, separately, on the first $n_{\rm small}$; distances and stable ranks are
# given both for the task average $\mathbb E_HP(H)$ and per task.

# %%
P_tasks = {name: preconditioners_numpy(m, test.H, test.d) for name, m in models.items()}
for name, b in comp.baselines.items():
    P_tasks[name if name != "free" else "free_lbfgs"] = b.preconditioners(test.H)
# the exact solve has rho = 0 to rounding: its certificate rows compare rounding errors with 0, so it gets
# its risk (the floor) only
methods = ["flex", "flex_heads_off", "flex_static", "free", "free_lbfgs", "oracle", "scalar", "jacobi", "h_inf"]
diag = {m: decoder_diagnostics(P_tasks[m], test, L, P_star, clip=clip, delta=delta, n_small=n_small)
        for m in methods}
risk_curves = {m: depth_risk_curve(P_tasks[m], test, L) for m in methods + ["exact"]}
exact_risk = float(risk_curves["exact"][-1])
# error to the task vector beta (the noise floor of the exact solve is exact_risk_beta)
loss_beta = {m: np.sum(depth_error(P_tasks[m], test_beta, L)[:, -1] ** 2, axis=1) / K for m in methods + ["exact"]}
zero_risk = float(np.mean(np.sum(test.x_dagger**2, axis=1)) / K)
rows = ["risk_dagger", "eb_upper", "eb_upper_small", "violation_rate", "ratio_mean", "ratio_of_means", "rho_mean",
        "frac_rho_lt1", "spectral_radius_mean", "power_norm_mean", "rel_dist_mean_P", "rel_dist_per_task",
        "srank_mean_P", "srank_per_task"]
print(f"{'':22s}" + "".join(f"{m[:12]:>13s}" for m in methods))
for row in rows:
    print(f"{row:22s}" + "".join(f"{getattr(diag[m], row):13.4g}" for m in methods))
print(f"risk of doing nothing (P = 0): {zero_risk:.4g}; exact solve (floor): {exact_risk:.3g}")

# %% [markdown]
# ## Figure 2: generalization and the Richardson certificates

# %%
fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
ax = axes[0]
styles = {"flex": ("-", PALETTE[0]), "flex_heads_off": ("--", PALETTE[0]), "flex_static": (":", PALETTE[0]),
          "free": ("-", PALETTE[1]), "free_lbfgs": ("--", PALETTE[1]), "oracle": ("-", PALETTE[2]),
          "scalar": ("-", PALETTE[3]),
          "jacobi": ("--", PALETTE[3]), "h_inf": (":", "gray")}
for m, (ls, col) in styles.items():
    ax.semilogy(np.arange(L + 1), risk_curves[m], ls, color=col, label=m)
ax.set_ylim(max(1e-8, 0.3 * min(risk_curves[m][-1] for m in styles)), 3 * zero_risk)
ax.set_xlabel(r"depth $\ell$")
ax.set_title(r"held-out $R_\ell=E\|x_\ell-x^\dagger\|^2/K$")
ax.legend(fontsize=7, ncol=2)
ax = axes[1]
from iclcore.lsq.iterates import richardson_certificate  # noqa: E402

cert = richardson_certificate(P_tasks["flex"], test.H, -test.x_dagger, L)
ax.loglog(cert.bounds[:, -1], cert.error_norms[:, -1], ".", ms=2, color=PALETTE[0])
lim = [cert.error_norms[:, -1].min() * 0.5, cert.bounds[:, -1].max() * 2]
ax.plot(lim, lim, "k--", lw=1, label="bound = error")
ax.set_xlabel(r"$\rho^L\|e_0\|$")
ax.set_ylabel(r"$\|e_L\|$")
ax.set_title("Flexformer: error vs certificate, per task")
ax.legend()
ax = axes[2]
for m in ("flex", "free", "oracle", "scalar"):
    T = np.eye(K) - P_tasks[m] @ test.H
    ax.hist(np.linalg.norm(T, 2, axis=(1, 2)), bins=60, histtype="step", density=True, label=m)
ax.axvline(1.0, color="k", lw=1)
ax.set_xlabel(r"$\rho=\|I-PH\|_2$")
ax.set_title("per-task contraction factor")
ax.legend()
ax = axes[3]
for name, res in curves.items():
    ax.semilogy(res.loss, lw=0.8, label=name)
ax.axhline(diag["flex"].risk_dagger, color=PALETTE[0], ls="--", lw=1, label="flex (held-out)")
ax.set_xlabel("Adam step")
ax.set_title(r"training loss (fresh tasks)")
ax.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig2_flexformer_decoder")

# %% [markdown]
# ## Frozen identity for the trained Flexformer
# $x_L-x^\dagger=-(I-P_\Theta(H)H)^Lx^\dagger$ with the extracted per-task matrix, against the unrolled model.

# %%
with torch.no_grad():
    xL_model = models["flex"](torch.as_tensor(test.H), torch.as_tensor(test.d), L)[:, -1].numpy()
T = np.eye(K) - P_tasks["flex"] @ test.H
xL_identity = test.x_dagger - (np.linalg.matrix_power(T, L) @ test.x_dagger[..., None])[..., 0]
identity_gap = float(np.max(np.abs(xL_model - xL_identity)) / np.max(np.abs(test.x_dagger)))
print(f"max relative identity gap: {identity_gap:.2e}")

# %% tags=["nbval-check-output"]
print("violation rate, every method:", max(diag[m].violation_rate for m in methods))
print(f"Flexformer mean rho: {diag['flex'].rho_mean:.2f}")

# %%
elapsed = time.perf_counter() - t_start
metrics = {"runtime_seconds": elapsed, "cpu_seconds": time.process_time() - c_start, "train_seconds": t_train, "baseline_seconds": t_baselines,
           "K": K, "M": M, "r": r, "L": L, "n_test": n_test, "n_train": n_train, "steps": steps, "batch": batch,
           "zero_risk": zero_risk, "identity_gap": identity_gap, "exact_risk": exact_risk,
           "free_lbfgs_train_risk": comp.baselines["free"].train_risk, "scalar_eta": comp.baselines["scalar"].param, "jacobi_omega": comp.baselines["jacobi"].param}
for m in methods:
    metrics.update(diag[m].as_dict(prefix=f"{m}_"))
for m in methods + ["exact"]:
    metrics[f"{m}_risk_beta"] = float(loss_beta[m].mean())
    metrics[f"{m}_risk_beta_se"] = float(standard_error(loss_beta[m]))
learned = methods
risks = {m: diag[m].risk_dagger for m in learned}
best = min(risks, key=risks.get)
metrics["best_index"] = learned.index(best)
metrics["best_risk"] = risks[best]
metrics["free_over_flex"] = risks["free"] / risks["flex"]
metrics["flex_over_free"] = risks["flex"] / risks["free"]
metrics["flex_heads_off_over_flex"] = risks["flex_heads_off"] / risks["flex"]
metrics["scalar_over_flex"] = risks["scalar"] / risks["flex"]
metrics["oracle_over_flex"] = risks["oracle"] / risks["flex"]
metrics["free_lbfgs_over_flex"] = risks["free_lbfgs"] / risks["flex"]
metrics["flex_static_over_flex"] = risks["flex_static"] / risks["flex"]
metrics["jacobi_over_flex"] = risks["jacobi"] / risks["flex"]
metrics["max_violation_rate"] = max(diag[m].violation_rate for m in methods)
Pf = P_tasks["flex"]
# paired comparison on the same held-out tasks: difference of per-task losses and its standard error
loss_dag = {m: np.sum((depth_error(P_tasks[m], test, L)[:, -1]) ** 2, axis=1) / K for m in ("flex", "free")}
diff = loss_dag["flex"] - loss_dag["free"]
metrics["flex_minus_free"] = float(diff.mean())
metrics["flex_minus_free_se"] = float(paired_standard_error(loss_dag["flex"], loss_dag["free"]))
metrics["flex_task_variation"] = float(np.mean(np.linalg.norm(Pf - Pf.mean(0), axis=(1, 2))) / np.linalg.norm(Pf.mean(0)))
metrics["flex_head_weights_abs_max"] = float(models["flex"].c.detach().abs().max())
metrics["flex_risk_over_zero"] = risks["flex"] / zero_risk
# standard errors over the held-out tasks (the trained model fixed: one training run) for the Table 2 signature
rho_flex = np.linalg.norm(np.eye(K) - P_tasks["flex"] @ test.H, ord=2, axis=(-2, -1))
assert np.isclose(rho_flex.mean(), diag["flex"].rho_mean) and np.isclose(cert.ratio_final.mean(), diag["flex"].ratio_mean)
zero_loss = np.sum(test.x_dagger**2, axis=1) / K
metrics["flex_rho_mean_se"] = standard_error(rho_flex)
metrics["flex_ratio_mean_se"] = standard_error(cert.ratio_final)
metrics["flex_risk_over_zero_se"] = ratio_standard_error(
    loss_dag["flex"].mean(), standard_error(loss_dag["flex"]), zero_loss.mean(), standard_error(zero_loss),
    cov=float(np.cov(loss_dag["flex"], zero_loss)[0, 1]) / n_test)
write_metrics(metrics)
print(f"best learned method: {best}; runtime {elapsed:.1f} s (training {t_train:.1f} s)")
