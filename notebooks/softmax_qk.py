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
import torch

from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner, oracle_risk
from iclcore.lsq.tasks import TaskConfig
from iclcore.models.softmax import (
    AttentionConfig,
    AttentionRun,
    gauge_transform,
    head_kernels,
    kernel_stats,
    linearized_preconditioner,
    local_preconditioner,
    projected_preconditioner,
    projection_fit,
    richardson_states,
    sample_torch_prompts,
    skew_ratio,
    train_attention_run,
)
from iclcore.models.training import TrainConfig
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.stats import standard_error

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
attentions = ("softmax", "linear")
runs = [AttentionRun(AttentionConfig(K=K, n_heads=n_heads, d_k=d_k, attention=attention, init_std=init_std,
                                     qk_init_ratio=qk_init_ratio), task, train_cfg, seed, seed + 1, topk, device=device)
        for attention in attentions]
trained = map_configs(train_attention_run, runs, thread_budget(),
                      cost=lambda r: 2 if r.attention.attention == "softmax" else 1, label="attention models")
models = {a: model for a, (model, _) in zip(attentions, trained)}
hists = {a: hist for a, (_, hist) in zip(attentions, trained)}
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
ax.set_xlabel("training step s")
ax.set_title("training loss")
ax.legend(fontsize=7)

ax = axes[0, 1]
ax.plot(steps_logged, h.series("stable_rank_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.plot(steps_logged, h.series("stable_rank_mean"), color=PALETTE[0], lw=2, label="head-averaged $\\bar G$")
ax.plot([], [], color=PALETTE[5], lw=0.8, label="single heads $G_h$")
ax.axhline(1.0, color="k", ls=":", lw=1)
ax.set_xlabel("training step s")
ax.set_title("stable rank $\\|G\\|_F^2/\\|G\\|_2^2$")
ax.legend(fontsize=7)

ax = axes[0, 2]
ax.plot(steps_logged, h.series("top1_energy_mean"), color=PALETTE[0], lw=2, label="top-1, $\\bar G$")
ax.plot(steps_logged, h.series("topk_energy_mean"), color=PALETTE[2], lw=2, label=f"top-{topk}, $\\bar G$")
ax.plot(steps_logged, h.series("top1_energy_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.set_ylim(0, 1.02)
ax.set_xlabel("training step s")
ax.set_title("top-energy concentration $E_{\\rm top,k}$")
ax.legend(fontsize=7)

ax = axes[1, 0]
ax.plot(steps_logged, h.series("skew_ratio_mean"), color=PALETTE[0], lw=2, label="$\\bar G$")
ax.plot(steps_logged, h.series("skew_ratio_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.axhline(skew_ratio(P_star), color="k", ls=":", lw=1, label="$P_\\star$")
ax.set_xlabel("training step s")
ax.set_title("skew/symmetry ratio $\\|G-G^\\top\\|_F/\\|G+G^\\top\\|_F$")
ax.legend(fontsize=7)

ax = axes[1, 1]
ax.plot(steps_logged, h.series("balance_heads"), color=PALETTE[5], lw=0.8, alpha=0.7)
ax.plot(steps_logged, h.series("balance"), color=PALETTE[0], lw=2, label="all heads")
ax.axhline(1.0, color="k", ls=":", lw=1)
ax.set_xlabel("training step s")
ax.set_title("factor balance $\\|W_Q\\|_F/\\|W_K\\|_F$")
ax2 = ax.twinx()
gap = h.series("conserved_heads").sum(axis=1)
ax2.plot(steps_logged, gap / abs(gap[0]), color=PALETTE[1], ls="--", lw=1.2, label="$\\sum_h(\\|W_Q^h\\|^2-\\|W_K^h\\|^2)$ / initial")
ax2.set_ylim(0, 1.2)
ax2.grid(False)
ax.legend(loc="upper right", fontsize=7)
ax2.legend(loc="lower left", fontsize=7)

ax = axes[1, 2]
G_bar = head_kernels(models["softmax"]).mean(axis=0)
P_lin = linearized_preconditioner(models["softmax"])
vmax = np.abs(G_bar).max()
ax.imshow(G_bar, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
ax.set_title("final $\\bar G$ (head average)")
ax.grid(False)
ax.set_xticks([])
ax.set_yticks([])
fig.tight_layout()
save_figure(fig, "fig10_qk_kernel")

# %% [markdown]
# ## Gauge: raw $W_Q, W_K$ are not identifiable
# A random invertible $A_h$ per head (condition number of order ten) moves the raw matrices by order one;
# the kernels and the outputs stay put to float64 rounding.

# %%
m = models["softmax"]
A = rng.normal(size=(n_heads, d_k, d_k)) + 2.0 * np.eye(d_k)
mg = gauge_transform(m, A)
ev = sample_torch_prompts(task, n_eval, np.random.default_rng(seed + 2))
z_probe = torch.as_tensor(rng.normal(size=(n_eval, K)))
with torch.no_grad():
    out, out_g = m(z_probe, ev["X"], ev["y"]), mg(z_probe, ev["X"], ev["y"])
gauge_out = float((out_g - out).abs().max() / out.abs().max())
gauge_kernel = float(np.abs(head_kernels(mg) - head_kernels(m)).max() / np.abs(head_kernels(m)).max())
gauge_raw = float(((mg.W_Q - m.W_Q).norm() / m.W_Q.norm()).item())
st_m, st_g = kernel_stats(m, topk), kernel_stats(mg, topk)

# %%
print(f"gauge: output change {gauge_out:.1e}, kernel change {gauge_kernel:.1e} (rounding level expected)")

# %% tags=["nbval-check-output"]
print(f"gauge: relative change of the raw W_Q {gauge_raw:.2f}; head balance before {st_m.balance:.3f}, after {st_g.balance:.3f}")

# %% [markdown]
# ## §8: the trained layer as a nonlinear Richardson step
# States $(z,\text{prompt})$ are sampled along the layer's own Richardson trajectory $z_{\ell+1}=z_\ell+\Delta_\theta(z_\ell)$,
# $\ell=0,\dots,L-1$, on held-out prompts. For each prompt $J=-(\partial\Delta/\partial z)H^{-1}$ (autograd); here the
# scores read only the keys $x_i$, so $J$ depends on the prompt but not on $z$.

# %%
jac = {}
for name, model in models.items():
    states = richardson_states(model, ev, L_rich)
    Zs, Ds, Rs = states.z, states.delta, states.r  # (L, n, K)
    J = local_preconditioner(model, torch.zeros(n_eval, K, dtype=torch.float64), ev["X"], ev["y"])
    J_bar = J.mean(axis=0)
    dev = np.linalg.norm(J - J_bar, axis=(1, 2)) / np.linalg.norm(J_bar)
    Dall, Rall = Ds.reshape(-1, K), Rs.reshape(-1, K)
    P_proj = projected_preconditioner(Dall, Rall)
    P_l = linearized_preconditioner(model)
    # Δ is affine in z for a fixed prompt: Δ(z_l) - Δ(z_0) = J (r_l - r_0) exactly. But Δ is not a function
    # of (z, H, d) alone: Δ - J r = W(X)(I - Π_X) y reads the least-squares residual of the labels
    # (zero for linear attention, where W(X) = P Xᵀ/M annihilates it).
    affine = np.einsum("nij,lnj->lni", J, Rs - Rs[:1]) - (Ds - Ds[:1])
    offset = np.linalg.norm(np.einsum("nij,lnj->lni", J, Rs) - Ds, axis=-1) / np.linalg.norm(Ds, axis=-1).mean()
    jac[name] = dict(
        J=J, J_bar=J_bar, dev=dev, P_proj=P_proj, P_lin=P_l,
        fit_proj=projection_fit(Dall, Rall, P_proj), fit_lin=projection_fit(Dall, Rall, P_l),
        fit_Jbar=projection_fit(Dall, Rall, J_bar),
        affine_err=float(np.abs(affine).max() / np.abs(Ds).max()),
        offset=float(offset.mean()),
        proj_vs_Jbar=float(np.linalg.norm(P_proj - J_bar) / np.linalg.norm(J_bar)),
        lin_vs_Jbar=float(np.linalg.norm(P_l - J_bar) / np.linalg.norm(J_bar)),
        lin_vs_Pstar=float(np.linalg.norm(P_l - P_star) / np.linalg.norm(P_star)),
        Ds=Ds, Rs=Rs,
        risk=np.mean(np.sum((Zs[1:] - ev["beta"].numpy()[None]) ** 2, axis=-1), axis=1) / K if L_rich > 1 else np.array([]),
    )

# %%
js = jac["softmax"]
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
ax = axes[0]
ax.hist(js["dev"], bins=40, color=PALETTE[0], alpha=0.8, label="softmax")
ax.axvline(jac["linear"]["dev"].max(), color=PALETTE[1], ls="--", label=f"linear (max {jac['linear']['dev'].max():.0e})")
ax.set_xlabel("$\\|J_n-\\bar J\\|_F/\\|\\bar J\\|_F$ over prompts n")
ax.set_ylabel("prompts")
ax.set_title("spread of the local preconditioner")
ax.legend(fontsize=7)

ax = axes[1]
U, s, Vt = np.linalg.svd(js["J_bar"])
u1, v1 = U[:, 0], Vt[0]
comp = np.einsum("i,nij,j->n", u1, js["J"], v1)
ax.hist(comp / s[0], bins=40, color=PALETTE[2], alpha=0.8)
ax.axvline(1.0, color="k", ls=":", lw=1)
ax.axvline(u1 @ js["P_proj"] @ v1 / s[0], color=PALETTE[1], ls="--", label="$P^{\\rm proj}$")
ax.set_xlabel("$u_1^\\top J_n v_1 / \\sigma_1(\\bar J)$")
ax.set_title("top singular component of $J_n$")
ax.legend(fontsize=7)

ax = axes[2]
D0, R0 = js["Ds"].reshape(-1, K), js["Rs"].reshape(-1, K)
pred = R0 @ js["P_proj"].T
lim = np.abs(D0).max()
ax.scatter(pred.ravel(), D0.ravel(), s=1, alpha=0.2, color=PALETTE[0])
ax.plot([-lim, lim], [-lim, lim], "k:", lw=1)
ax.set_xlabel("$P^{\\rm proj} r$ (component)")
ax.set_ylabel("softmax update $\\Delta_\\theta$ (component)")
ax.set_title(f"projection explains {100 * js['fit_proj']:.2f}% of update energy")
fig.tight_layout()
save_figure(fig, "sec8_jacobian")

# %%
print(f"linear attention: largest |J - P_lin| over prompts {jac['linear']['dev'].max():.1e}, "
      f"|P_lin - mean J| {jac['linear']['lin_vs_Jbar']:.1e}")
print(f"largest |Delta(z) - Delta(0) - J (r - r0)| over prompts: {js['affine_err']:.1e}")

# %% tags=["nbval-check-output"]
print(f"softmax: mean relative spread of J over prompts {js['dev'].mean():.1f}")

# %%
st0, st1 = h.stats[0], h.stats[-1]
gap0, gap1 = gap[0], gap[-1]
runtime = time.perf_counter() - t_start
metrics = {
    "loss_initial": h.loss[0],
    "loss_final": h.loss[-1],
    "loss_floor": loss_floor,
    "stable_rank_initial": st0.stable_rank_mean,
    "stable_rank_final": st1.stable_rank_mean,
    "stable_rank_heads_final_max": float(st1.stable_rank_heads.max()),
    "top1_energy_initial": st0.top1_energy_mean,
    "top1_energy_final": st1.top1_energy_mean,
    "topk_energy_final": st1.topk_energy_mean,
    "skew_ratio_initial": st0.skew_ratio_mean,
    "skew_ratio_final": st1.skew_ratio_mean,
    "balance_initial": st0.balance,
    "balance_final": st1.balance,
    "conserved_gap_rel_drift": float(abs(gap1 - gap0) / abs(gap0)),
    "linear_stable_rank_final": hists["linear"].stats[-1].stable_rank_mean,
    "gauge_output_rel_diff": gauge_out,
    "gauge_kernel_rel_diff": gauge_kernel,
    "gauge_raw_rel_change": gauge_raw,
    "jac_spread_softmax_mean": float(js["dev"].mean()),
    "jac_spread_softmax_se": standard_error(js["dev"]),  # over the n_eval held-out prompts (fixed trained model)
    "jac_spread_softmax_max": float(js["dev"].max()),
    "jac_spread_linear_max": float(jac["linear"]["dev"].max()),
    "jac_top_component_rel_spread": float(comp.std() / s[0]),
    "jac_linear_vs_P_rel": jac["linear"]["lin_vs_Jbar"],
    "jbar_vs_plin_softmax_rel": js["lin_vs_Jbar"],
    "pproj_vs_jbar_softmax_rel": js["proj_vs_Jbar"],
    "pproj_fit_softmax": js["fit_proj"],
    "plin_fit_softmax": js["fit_lin"],
    "jbar_fit_softmax": js["fit_Jbar"],
    "affine_err_softmax": js["affine_err"],
    "offset_softmax": js["offset"],
    "offset_linear": jac["linear"]["offset"],
    "plin_vs_pstar_softmax": js["lin_vs_Pstar"],
    "plin_vs_pstar_linear": jac["linear"]["lin_vs_Pstar"],
    "train_time_s": t_train,
    "runtime_s": runtime,
}
write_metrics(metrics)
print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in metrics.items()})
