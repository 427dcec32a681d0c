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
# # Softmax attention: the Q/K kernel during training and the local Jacobian preconditioner (the main paper §8, §12.10, Figure 10)
# This notebook trains a multi-head softmax attention layer (probe queries, residual-label values; see
# `iclcore.models.softmax`) online on in-context least-squares prompts with the decoder objective of
# the main paper §3.1, and tracks the gauge-invariant kernels $G_h=W_Q^{h\top}W_K^h$ (per head and averaged over
# heads): stable rank, top-$k$ energy, skew/symmetry ratio and the factor balance $\|W_Q\|_F/\|W_K\|_F$
# (the Q/K panels of Figure 10). It checks that the gauge $W_Q\to AW_Q$, $W_K\to A^{-\top}W_K$ changes the raw
# matrices but neither the kernels nor the outputs. It then reads the trained layer as a nonlinear
# Richardson step $\Delta_\theta(z,H,d)$ (§8): local Jacobian preconditioners $J_\theta=-(\partial\Delta/\partial z)H^{-1}$
# by autograd, their spread across prompts, and the diagnostic projection $P^{\rm proj}=\mathbb E[\Delta r^\top]\mathbb E[rr^\top]^\dagger$.
# The same analysis of a linear-attention layer returns $J\equiv P$ to rounding.

# %% tags=["parameters", "hide-input"]
K = 8                 # dimension of x, beta and the iterate z; range: [1, 200]
M = 32                # prompt size; range: [1, 1000]
task_rank = 1         # rank r of the task subspace (beta is U* z with z ~ N(0, I_r)); range: [1, 10]
cond = 10.0           # condition number of Sigma_x (geometric spectrum, diagonal); range: [1, inf)
sigma = 0.1           # label noise; range: [0, inf)
n_heads = 4           # attention heads; range: [1, 100]
d_k = 8               # query/key dimension per head; range: [1, 200]
init_std = 0.05       # std of W_K entries at initialisation; range: (0, inf)
qk_init_ratio = 2.0   # std(W_Q)/std(W_K) at initialisation (unbalanced start, to watch balancing); range: (0, inf)
lr = 1.0              # SGD step size; range: (0, inf)
steps = 200           # training steps (fresh prompts each step); range: [1, 20000]
batch = 64            # prompts per step; range: [1, 2000]
log_every = 10        # checkpoint period; range: [1, 200]
topk = 2              # k of the top-k energy; range: [1, 20]
n_eval = 256          # held-out prompts for the Jacobian analysis; range: [1, 10000]
L_rich = 8            # Richardson steps used to sample states (z, prompt) for P_proj; range: [1, 100]
seed = 0              # random seed; range: [0, 4294967295]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"K": 16, "M": 64, "n_heads": 8, "d_k": 16, "init_std": 0.03, "steps": 2000, "batch": 128, "log_every": 25, "n_eval": 1024}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner, oracle_risk
from iclcore.lsq.tasks import TaskConfig
from iclcore.models.softmax import (
    AttentionConfig,
    conserved_gap,
    gauge_check,
    head_kernels,
    jacobian_analysis,
    kernel_training_summary,
    sample_torch_prompts,
    skew_ratio,
    train_attention_variants,
)
from iclcore.models.training import TrainConfig
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)
task = TaskConfig(K=K, M=M, r=task_rank, sigma=sigma, lam=0.0, cond=cond)
moments = closed_form_moments(task)
P_star = oracle_preconditioner(moments)
loss_floor = oracle_risk(moments) / 2  # training loss is (1/2K) E||Delta - beta||^2

# %% [markdown]
# ## Training
# Softmax and linear attention with identical initial weights and identical prompt streams. The loss floor is
# half the oracle decoder risk $\frac1K\mathbb E\|P_\star d-\beta\|^2$ with $P_\star=BC^\dagger$ (the best global linear map).

# %%
# the 2 trainings are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
train_cfg = TrainConfig(steps=steps, batch=batch, lr=lr, optimizer="sgd", log_every=log_every)
qk = AttentionConfig(K=K, n_heads=n_heads, d_k=d_k, init_std=init_std, qk_init_ratio=qk_init_ratio)
models, hists = train_attention_variants(qk, task, train_cfg, seed=seed, topk=topk, device=device)  # softmax, linear
t_train = time.perf_counter() - t_start
h = hists["softmax"]
steps_logged = np.array(h.step)

# %% [markdown]
# ## Figure 10 (Q/K panels): the gauge-invariant kernel over training

# %%
fig, axes = plt.subplots(2, 3, figsize=(13, 7))
ax = axes[0, 0]
for i, (name, hh) in enumerate(hists.items()):
    ax.semilogy(hh.step, hh.loss, color=PALETTE[i], label=f"{name} attention")
ax.axhline(loss_floor, color="k", ls=":", lw=1, label="oracle floor $\\mathcal{R}(P_\\star)/2$")
ax.set(xlabel="training step s", title="training loss")
ax.legend(fontsize=7)

ax = axes[0, 1]
ax.plot(steps_logged, h.series("stable_rank_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.plot(steps_logged, h.series("stable_rank_mean"), color=PALETTE[0], lw=2, label="head-averaged $\\bar G$")
ax.plot([], [], color=PALETTE[5], lw=0.8, label="single heads $G_h$")
ax.axhline(1.0, color="k", ls=":", lw=1)
ax.set(xlabel="training step s", title="stable rank $\\|G\\|_F^2/\\|G\\|_2^2$")
ax.legend(fontsize=7)

ax = axes[0, 2]
ax.plot(steps_logged, h.series("top1_energy_mean"), color=PALETTE[0], lw=2, label="top-1, $\\bar G$")
ax.plot(steps_logged, h.series("topk_energy_mean"), color=PALETTE[2], lw=2, label=f"top-{topk}, $\\bar G$")
ax.plot(steps_logged, h.series("top1_energy_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.set(ylim=(0, 1.02), xlabel="training step s", title="top-energy concentration $E_{\\rm top,k}$")
ax.legend(fontsize=7)

ax = axes[1, 0]
ax.plot(steps_logged, h.series("skew_ratio_mean"), color=PALETTE[0], lw=2, label="$\\bar G$")
ax.plot(steps_logged, h.series("skew_ratio_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.axhline(skew_ratio(P_star), color="k", ls=":", lw=1, label="$P_\\star$")
ax.set(xlabel="training step s", title="skew/symmetry ratio $\\|G-G^\\top\\|_F/\\|G+G^\\top\\|_F$")
ax.legend(fontsize=7)

ax = axes[1, 1]
ax.plot(steps_logged, h.series("balance_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.plot(steps_logged, h.series("balance"), color=PALETTE[0], lw=2, label="all heads")
ax.axhline(1.0, color="k", ls=":", lw=1)
ax.set(xlabel="training step s", title="factor balance $\\|W_Q\\|_F/\\|W_K\\|_F$")
ax2 = ax.twinx()
gap = conserved_gap(h)
ax2.plot(steps_logged, gap / abs(gap[0]), color=PALETTE[1], ls="--", lw=1.2, label="$\\sum_h(\\|W_Q^h\\|^2-\\|W_K^h\\|^2)$ / initial")
ax2.set_ylim(0, 1.2)
ax2.grid(False)
ax.legend(loc="upper right", fontsize=7)
ax2.legend(loc="lower left", fontsize=7)

ax = axes[1, 2]
G_bar = head_kernels(models["softmax"]).mean(axis=0)
vmax = np.abs(G_bar).max()
ax.imshow(G_bar, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
ax.set(title="final $\\bar G$ (head average)", xticks=[], yticks=[])
ax.grid(False)
fig.tight_layout()
save_figure(fig, "fig10_qk_kernel")

# %% [markdown]
# ## Gauge: raw $W_Q, W_K$ are not identifiable
# A random invertible $A_h$ per head (condition number of order ten) moves the raw matrices by order one;
# the kernels and the outputs stay put to float64 rounding.

# %%
A = rng.normal(size=(n_heads, d_k, d_k)) + 2.0 * np.eye(d_k)
ev = sample_torch_prompts(task, n_eval, np.random.default_rng(seed + 2))
gauge = gauge_check(models["softmax"], A, ev, z=rng.normal(size=(n_eval, K)), topk=topk)

# %%
print(f"gauge: output change {gauge.output_rel_diff:.1e}, kernel change {gauge.kernel_rel_diff:.1e} (rounding level expected)")

# %% tags=["nbval-check-output"]
print(f"gauge: relative change of the raw W_Q {gauge.raw_rel_change:.2f}; head balance before {gauge.balance_before:.3f}, after {gauge.balance_after:.3f}")

# %% [markdown]
# ## §8: the trained layer as a nonlinear Richardson step
# States $(z,\text{prompt})$ are sampled along the layer's own Richardson trajectory $z_{\ell+1}=z_\ell+\Delta_\theta(z_\ell)$,
# $\ell=0,\dots,L-1$, on held-out prompts. For each prompt $J=-(\partial\Delta/\partial z)H^{-1}$ (autograd); here the
# scores read only the keys $x_i$, so $J$ depends on the prompt but not on $z$.

# %%
# Δ is affine in z for a fixed prompt: Δ(z_l) - Δ(z_0) = J (r_l - r_0) exactly. But Δ is not a function of (z, H, d)
# alone: Δ - J r = W(X)(I - Π_X) y reads the least-squares residual of the labels (zero for linear attention).
jac = {name: jacobian_analysis(model, ev, L_rich, P_star=P_star) for name, model in models.items()}

# %%
js, jl = jac["softmax"], jac["linear"]
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
ax = axes[0]
ax.hist(js.spread, bins=40, color=PALETTE[0], alpha=0.8, label="softmax")
ax.axvline(jl.spread.max(), color=PALETTE[1], ls="--", label=f"linear (max {jl.spread.max():.0e})")
ax.set(xlabel="$\\|J_n-\\bar J\\|_F/\\|\\bar J\\|_F$ over prompts n", ylabel="prompts", title="spread of the local preconditioner")
ax.legend(fontsize=7)

ax = axes[1]
ax.hist(js.top_component / js.sigma1, bins=40, color=PALETTE[2], alpha=0.8)
ax.axvline(1.0, color="k", ls=":", lw=1)
ax.axvline(js.u1 @ js.P_proj @ js.v1 / js.sigma1, color=PALETTE[1], ls="--", label="$P^{\\rm proj}$")
ax.set(xlabel="$u_1^\\top J_n v_1 / \\sigma_1(\\bar J)$", title="top singular component of $J_n$")
ax.legend(fontsize=7)

ax = axes[2]
D0, R0 = js.delta.reshape(-1, K), js.r.reshape(-1, K)
pred = R0 @ js.P_proj.T
lim = np.abs(D0).max()
ax.scatter(pred.ravel(), D0.ravel(), s=1, alpha=0.2, color=PALETTE[0])
ax.plot([-lim, lim], [-lim, lim], "k:", lw=1)
ax.set(xlabel="$P^{\\rm proj} r$ (component)", ylabel="softmax update $\\Delta_\\theta$ (component)", title=f"projection explains {100 * js.fit_proj:.2f}% of update energy")
fig.tight_layout()
save_figure(fig, "sec8_jacobian")

# %%
print(f"linear attention: largest |J - P_lin| over prompts {jl.spread.max():.1e}, |P_lin - mean J| {jl.lin_vs_Jbar:.1e}")
print(f"largest |Delta(z) - Delta(0) - J (r - r0)| over prompts: {js.affine_err:.1e}")

# %% tags=["nbval-check-output"]
print(f"softmax: mean relative spread of J over prompts {js.spread.mean():.1f}")

# %%
runtime = time.perf_counter() - t_start
metrics = {**kernel_training_summary(h), "loss_floor": loss_floor,
           "linear_stable_rank_final": hists["linear"].stats[-1].stable_rank_mean,
           "gauge_output_rel_diff": gauge.output_rel_diff, "gauge_kernel_rel_diff": gauge.kernel_rel_diff,
           "gauge_raw_rel_change": gauge.raw_rel_change,
           # spread over the n_eval held-out prompts, its SE with the trained model fixed
           "jac_spread_softmax_mean": float(js.spread.mean()), "jac_spread_softmax_se": js.spread_se,
           "jac_spread_softmax_max": float(js.spread.max()), "jac_spread_linear_max": float(jl.spread.max()),
           "jac_top_component_rel_spread": float(js.top_component.std() / js.sigma1),
           "jac_linear_vs_P_rel": jl.lin_vs_Jbar, "jbar_vs_plin_softmax_rel": js.lin_vs_Jbar,
           "pproj_vs_jbar_softmax_rel": js.proj_vs_Jbar, "pproj_fit_softmax": js.fit_proj,
           "plin_fit_softmax": js.fit_lin, "jbar_fit_softmax": js.fit_Jbar, "affine_err_softmax": js.affine_err,
           "offset_softmax": js.offset, "offset_linear": jl.offset, "plin_vs_pstar_softmax": js.lin_vs_Pstar,
           "plin_vs_pstar_linear": jl.lin_vs_Pstar, "train_time_s": t_train, "runtime_s": runtime}
write_metrics(metrics)
print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in metrics.items()})
