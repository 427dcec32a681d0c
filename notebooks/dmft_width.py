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
# # Width and depth bottlenecks of deep linear attention (Bordelon et al., Figure 5)
# This notebook recomputes Figure 5 of Bordelon et al. (§4, Result 8, App. F): the gradient-flow loss
# curves of the width-$N$, depth-$L$ reduced model on randomly rotated power-law data at infinite
# context length. Panel (a) scales width at fixed depth and meets the depth bottleneck
# $\min_\gamma \mathrm{tr}\,\Omega\Lambda(I-\gamma\Lambda/L)^{2L}$; panel (b) scales depth at fixed
# width and meets the width bottleneck (the corrected, linear form of Eq. 113); panel (c) plots loss
# against compute $C = tN^2L$. Theory curves use the Monte Carlo one-point reduction at finite $D$;
# panel (d) overlays SGD simulations of the width-$N$ model at small $D$. A second figure checks the
# deterministic equivalents (one-point, and the Appendix-A two-point formula of Eq. 15 by double
# contour integration) against Monte Carlo, and the bottleneck formulas and exponents.

# %% tags=["parameters", "hide-input"]
D = 1024            # dimension of the theory curves (Figure 5 a-c); range: [1, 50000]
nu = 1.0            # capacity exponent: lambda_k is k^-nu; range: (0, inf)
beta = 1.0          # source exponent; range: (0, inf)
L_fixed = 8         # depth of panel (a); range: [1, 100]
N_fixed = 64        # width of panel (b); range: [1, 1000]
n_draws = 4         # Monte Carlo projections pooled per width (at least 2: their spread is the standard error); range: [2, 50]
t_max = 1.0e6       # longest gradient-flow time; range: (0.01, inf)
D_sim = 32          # dimension of the SGD simulations (panel d); range: [1, 1000]
L_sim = 4           # depth of the SGD simulations; range: [1, 50]
B_sim = 32          # contexts per SGD step; range: [1, 500]
eta_sim = 0.5       # SGD time step (theory time t is eta_sim * steps); range: (0, inf)
steps_sim = 160     # SGD steps per width; range: [1, 5000]
N_sweep = 16        # width of the eta / batch sweep of the late SGD bias (panel d); range: [1, 1000]
seeds_sweep = 4     # independent SGD runs per (eta, B) of the sweep (at least 2: their spread is the SE); range: [2, 100]
D_de = 600          # dimension of the deterministic-equivalent checks; range: [1, 20000]
n_nodes = 240       # contour nodes; range: [1, 5000]
D_exp = 100000      # dimension of the bottleneck-exponent fits; range: [1, 5000000]
seed = 0            # random seed; range: [0, 4294967295]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"D": 4096, "n_draws": 4, "D_sim": 64, "steps_sim": 600, "D_de": 2000,
                     "n_nodes": 500, "D_exp": 400000}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.rrs import rrs_optimum
from iclcore.dmft.scaling import width_bottleneck, width_bottleneck_paper
from iclcore.dmft.sgd_sweep import ReducedSGDTask, late_bias_sweep
from iclcore.dmft.width_de import two_point_loss_de, width_loss_de
from iclcore.dmft.width_mc import (
    WidthSGDRun,
    width_gradient_flow,
    width_landscape_job,
    width_landscape_jobs,
    width_loss,
    width_loss_draws,
    width_loss_grad,
    width_loss_se,
    width_min_loss,
    width_sgd_run,
    width_spectrum_job,
    width_spectrum_jobs,
    width_spectrum_mc,
)
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.spectra.mp import mp_quadrature
from iclcore.stats import (
    batch_means,
    fit_power_law_drift,
    fit_power_law_exponent,
    fit_power_law_weighted,
    increment_z_scores,
    paired_increment_z_scores,
    standard_error,
)

use_style()
rng = np.random.default_rng(seed)
t_start = time.time()
lam, omega = power_law_spectrum(D, nu, beta)
t = np.concatenate([[0.0], np.geomspace(1e-2, t_max, 240)])

# %% [markdown]
# ## Figure 5: width, depth and compute
# For each width we draw the projection once (pooled over `n_draws`), which gives the exact
# finite-$D$ spectral weights of $K=(D/N)\Lambda^{1/2}UU^\top\Lambda^{1/2}$; the loss of any
# $\gamma$ and depth is then a sum over $N$ modes, and the flow $\dot\gamma=-\tfrac12\mathcal L'(\gamma)$
# is a scalar ODE.

# %%
N_list = sorted({16, 32, 64, 128, 256, D // 2, D})
L_list = [1, 2, 4, 8, 16, 32, 64]
pairs = [(32, 4), (64, 8), (128, 16), (256, 32), (512, 64)]  # panel (c): N and L together
# the spectra are drawn from one generator in this order; each job starts from its recorded state, so the
# widths are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
spec_N = list(set(N_list) | {N_fixed})
spec_N += [N for N, _ in pairs if N not in spec_N]
spec_jobs = width_spectrum_jobs(lam, omega, spec_N, [1 if N == D else n_draws for N in spec_N], rng)
specs = dict(zip(spec_N, map_configs(width_spectrum_job, spec_jobs, thread_budget(),
                                     cost=lambda j: j.n_draws * j.N**2, label="width spectra")))

curves_a = {N: width_gradient_flow(specs[N], L_fixed, t) for N in N_list}
depth_bn = rrs_optimum(lam, omega, L_fixed)[1]
curves_b = {L: width_gradient_flow(specs[N_fixed], L, t) for L in L_list}
width_bn_mc = specs[N_fixed].null_loss
width_bn_de = width_bottleneck(lam, omega, N_fixed)
width_bn_paper = width_bottleneck_paper(lam, omega, N_fixed)

# panel (c): compute C = t N^2 L along L = N / 8 (L ~ N^nu with nu = 1), and one-resource scalings
curves_c = {(N, L): width_gradient_flow(specs[N], L, t) for N, L in pairs}
curves_w = {(N, 4): width_gradient_flow(specs[N], 4, t) for N, _ in pairs}
curves_d = {(32, L): width_gradient_flow(specs[32], L, t) for _, L in pairs}

# %%
fig, axs = plt.subplots(1, 4, figsize=(17, 3.8))
ax = axs[0]
for i, N in enumerate(N_list):
    ax.loglog(t[1:], curves_a[N].loss[1:], color=plt.cm.viridis(i / (len(N_list) - 1)), label=f"N={N}")
ax.axhline(depth_bn, color="red", ls="--", label=f"depth bottleneck L={L_fixed}")
ax.set(xlabel="t", ylabel="loss", title=f"(a) scaling width, L={L_fixed}")
ax.legend(fontsize=7)
ax = axs[1]
for i, L in enumerate(L_list):
    ax.loglog(t[1:], curves_b[L].loss[1:], color=plt.cm.plasma(i / len(L_list)), label=f"L={L}")
ax.axhline(width_bn_de, color="red", ls="--", label=f"width bottleneck N={N_fixed} (corrected)")
ax.axhline(width_bn_paper, color="red", ls=":", label="Eq. 113 as printed")
ax.set(xlabel="t", title=f"(b) scaling depth, N={N_fixed}")
ax.legend(fontsize=7)
ax = axs[2]
for (N, L), cv in curves_c.items():
    ax.loglog(t[1:] * N**2 * L, cv.loss[1:], color=PALETTE[0], alpha=0.35 + 0.13 * np.log2(N / 16))
for (N, L), cv in curves_w.items():
    ax.loglog(t[1:] * N**2 * L, cv.loss[1:], color=PALETTE[1], alpha=0.35 + 0.13 * np.log2(N / 16), lw=1)
for (N, L), cv in curves_d.items():
    ax.loglog(t[1:] * N**2 * L, cv.loss[1:], color=PALETTE[2], alpha=0.35 + 0.13 * np.log2(L / 2), lw=1)
ax.plot([], [], color=PALETTE[0], label="N and L together (L = N/8)")
ax.plot([], [], color=PALETTE[1], label="width only (L = 4)")
ax.plot([], [], color=PALETTE[2], label="depth only (N = 32)")
ax.set(xlabel="compute C = t N² L", title="(c) loss vs compute")
ax.legend(fontsize=7)

# %% [markdown]
# Panel (d): SGD on the width-$N$ reduced model (`ReducedGammaStack` with a frame $U$), population
# contexts ($P=K=\infty$, Haar-rotated power-law covariance), matrix update
# $\tilde\Gamma\leftarrow\tilde\Gamma-\eta\,(N/2)\nabla\hat{\mathcal L}$, so that theory time is
# $t=\eta\cdot$steps. The theory averages 40 projections at the same $D$.

# %%
torch.manual_seed(seed)  # not used by the models (they take generators); keeps torch's own state fixed
lam_s, om_s = power_law_spectrum(D_sim, nu, beta)
t_sim = eta_sim * np.arange(steps_sim + 1)
# one task per width: the SGD run, the flow of the width model (2000 projections) and the same expected
# dynamics in the SGD's discrete steps, gamma <- gamma - (eta/2) L'(gamma) (the discretisation term of the error model)
sim_N = (4, 8, 16, D_sim)
sim_runs = [WidthSGDRun(tuple(lam_s), tuple(om_s), N, L_sim, B_sim, eta_sim, steps_sim, frame_seed=seed + N,
                        train_seed=seed + 100 + N, theory_seed=seed + 7, device=device) for N in sim_N]
sim = dict(zip(sim_N, map_configs(width_sgd_run, sim_runs, thread_budget(), cost=lambda r: r.N, label="width SGD runs")))

ax = axs[3]
sim_err, sim_bias_z, sim_bias_se = [], [], []
for i, (N, (res, th, g_disc)) in enumerate(sim.items()):
    ax.plot(t_sim, th.loss, color=PALETTE[i], label=f"N={N} theory")
    # SGD loss: mean over windows of 10 steps
    w = 10
    lo = res.loss[: len(res.loss) // w * w].reshape(-1, w).mean(axis=1)
    tw = t_sim[:-1][: len(res.loss) // w * w].reshape(-1, w).mean(axis=1)
    ax.plot(tw, lo, "o", ms=3, color=PALETTE[i], alpha=0.8)
    late = slice(steps_sim // 10, None)  # relative gamma error once gamma is O(1) (t >= t_max / 10)
    sim_err.append(np.max(np.abs(res.gamma[late, 0] - th.gamma[late]) / th.gamma[late]))
    # error model: mean relative residual over the late window, SE by batch means (10 blocks)
    bias, bias_se = batch_means(res.gamma[late, 0] / th.gamma[late] - 1, 10)
    disc = float(np.mean(np.abs(g_disc[late] / th.gamma[late] - 1)))  # discrete steps vs the flow
    sim_bias_z.append((abs(bias) - disc) / bias_se)
    sim_bias_se.append(bias_se)
ax.set(yscale="log", xlabel="t = η · steps", title=f"(d) SGD (dots) vs theory, D={D_sim}, L={L_sim}")
ax.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig5_width_depth")

# %% tags=["nbval-check-output"]
print("depth bottleneck (L=%d): %.4f" % (L_fixed, depth_bn))
print("width bottleneck (N=%d): MC %.4f, corrected DE %.4f, Eq. 113 printed %.4f"
      % (N_fixed, width_bn_mc, width_bn_de, width_bn_paper))
print("max relative gamma error SGD vs theory: %.3f" % max(sim_err))

# %% [markdown]
# ### Panel (d): the late SGD bias against $\eta$ and the batch $B$
# The scalar flow is the $\eta/B\to0$ limit of SGD (App. C.1: "the gradient flow limit can be
# accessed simply by controlling the scale of η/τ"). At width `N_sweep` and the same horizon
# $t_{\max}=\eta\cdot$`steps_sim`, we rerun SGD at $B\in\{B/4, B, 4B\}$ (step $\eta$) and at
# $\eta\in\{\eta/2,\eta/4\}$ (batch $B/4$), `seeds_sweep` independent runs each (the SE is over runs).
# The metric is the late relative bias of $\gamma$ (mean over $t\ge t_{\max}/10$, as in the ledger row)
# net of the deterministic discretisation bias (the expected dynamics in the same discrete steps,
# signed), plotted against $x=\eta/B$ with a weighted fit $\propto x^p$.

# %%
spec_w = width_spectrum_mc(lam_s, om_s, N_sweep, np.random.default_rng(seed + 7), n_draws=2000)
sweep_cfg = [(eta_sim, max(1, B_sim // 4)), (eta_sim, B_sim), (eta_sim, 4 * B_sim),
             (eta_sim / 2, max(1, B_sim // 4)), (eta_sim / 4, max(1, B_sim // 4))]


def sweep_task(eta_k, B_k, n_k, r):
    return ReducedSGDTask(tuple(lam_s), tuple(om_s), L_sim, True, N_sweep, eta_k, B_k, n_k,
                          train_seed=seed + 1000 * (r + 1) + 100 + N_sweep, frame_seed=seed + 1000 * (r + 1) + N_sweep, device=device)


try:
    sweep = [(pt.bias, pt.se, pt.disc) for pt in late_bias_sweep(
        sweep_cfg, sweep_task, seeds_sweep, eta_sim * steps_sim, lambda tt: width_gradient_flow(spec_w, L_sim, tt).gamma,
        lambda g: width_loss_grad(g, spec_w, L_sim), workers=thread_budget())]
except FloatingPointError as exc:  # the smallest batch B_sim // 4 is the noisiest: refuse, never a NaN verdict
    raise ValueError(f"B_sim: SGD of the eta/batch sweep diverged (its smallest batch is B_sim // 4 = "
                     f"{max(1, B_sim // 4)} contexts at eta_sim={eta_sim}: {exc}); raise B_sim or lower eta_sim") from None

x_sw = np.array([e / b for e, b in sweep_cfg])
ex_sw = np.array([v[0] for v in sweep])
se_sw = np.array([v[1] for v in sweep])
_, p_all, p_all_se = fit_power_law_weighted(x_sw, ex_sw, se_sw)
b_idx, e_idx = [0, 1, 2], [0, 3, 4]  # the batch sweep (eta fixed) and the eta sweep (B fixed)
_, p_B, p_B_se = fit_power_law_weighted(x_sw[b_idx], ex_sw[b_idx], se_sw[b_idx])
_, p_eta, p_eta_se = fit_power_law_weighted(x_sw[e_idx], ex_sw[e_idx], se_sw[e_idx])
small = int(np.argmin(x_sw))  # eta_sim with 4 B_sim
fig_sw, ax = plt.subplots(figsize=(5, 3.6))
for idx, lab, mk in ((b_idx, f"B varied (η={eta_sim:g})", "o"), (e_idx[1:], f"η varied (B={max(1, B_sim // 4)})", "s")):
    ax.errorbar(x_sw[idx], ex_sw[idx], yerr=se_sw[idx], fmt=mk, ms=4, capsize=2, label=lab)
xx = np.geomspace(x_sw.min(), x_sw.max(), 50)
a_all = fit_power_law_weighted(x_sw, ex_sw, se_sw)[0]
ax.plot(xx, a_all * xx**p_all, "k--", lw=1, label=f"fit ∝ (η/B)^{p_all:.2f}")
ax.axhline(0.0, color="grey", lw=0.5)
ax.set(xscale="log", xlabel="η / B", ylabel="late bias of γ − discretisation",
       title=f"(d) SGD vs flow: N={N_sweep}, D={D_sim}, L={L_sim}")
ax.legend(fontsize=7)
save_figure(fig_sw, "fig5d_bias_eta_batch")
fig5d_sweep_metrics = {
    "fig5d_bias_noise_exponent": p_all,
    "fig5d_bias_noise_exponent_se": p_all_se,
    "fig5d_bias_batch_exponent": p_B,
    "fig5d_bias_batch_exponent_se": p_B_se,
    "fig5d_bias_eta_exponent": p_eta,
    "fig5d_bias_eta_exponent_se": p_eta_se,
    "fig5d_bias_large_batch": ex_sw[small],
    "fig5d_bias_large_batch_se": se_sw[small],
    "fig5d_bias_large_batch_z": abs(ex_sw[small]) / se_sw[small],
    "fig5d_bias_quick_batch": ex_sw[1],
    "fig5d_bias_quick_batch_se": se_sw[1],
    "fig5d_bias_small_batch": ex_sw[0],
    "fig5d_bias_small_batch_se": se_sw[0],
    "fig5d_bias_large_batch_B": 4 * B_sim,
    "fig5d_bias_sweep_N": N_sweep,
    # x = eta/B at (eta/4, B/4) equals x at (eta, B): the noise drift depends on eta/B only
    "fig5d_bias_collapse_z": abs(ex_sw[4] - ex_sw[1]) / np.hypot(se_sw[4], se_sw[1]),
}

# %% tags=["nbval-check-output"]
for (e, b), (v, se_v, d) in zip(sweep_cfg, sweep):
    print(f"eta={e:g} B={b}: late bias - discretisation = {v:+.4f} +- {se_v:.4f} (discretisation {d:+.4f})")
print("exponent in eta/B: all %.2f +- %.2f; batch %.2f +- %.2f; eta %.2f +- %.2f" % (p_all, p_all_se, p_B, p_B_se, p_eta, p_eta_se))

# %% [markdown]
# ## Deterministic equivalents against Monte Carlo
# (a) Landscape of the width model at $P=\infty$: Monte Carlo (lines), one-point deterministic
# equivalent by a single contour (dots) and the two-point formula of Appendix A by a double
# contour (crosses; it must coincide with the one-point one at $P=\infty$).
# (b) Finite context $\alpha=P/D$ at $N=D$: two-point deterministic equivalent with the corrected
# relation $\hat\Sigma_{\chi\chi}=-\Sigma_{vv}/\mathcal B$ (dots) and with the relation printed after
# Eq. 39, $\hat\Sigma_{\chi\chi}=-\mathcal B\Sigma_{vv}$ (triangles), against Monte Carlo (lines).

# %%
lam_d, om_d = power_law_spectrum(D_de, nu, beta)
L_de = 4
Ns_de, alphas_de = [D_de // 8, D_de // 4, D_de // 2], [0.5, 2.0]
grid_b = np.linspace(0.1, 2.0 * L_de * 0.9, 40)
# the Monte Carlo of (a) and (b) draws from one generator in this order: per width a 6-projection spectrum and 6
# single ones; per alpha 6 landscape draws and one context Z. Each job records where its draws start, so the
# draws are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
spec_jobs_de = width_spectrum_jobs(lam_d, om_d, [N for N in Ns_de for _ in range(7)], [6, 1, 1, 1, 1, 1, 1] * len(Ns_de), rng)
land_jobs, Z_b = [], {}
for alpha in alphas_de:
    land_jobs += width_landscape_jobs(grid_b, lam_d, om_d, D_de, L_de, rng, P=int(alpha * D_de), n_draws=1, repeats=6)
    Z_b[alpha] = rng.standard_normal((int(alpha * D_de), D_de)) * np.sqrt(lam_d)
specs_de = map_configs(width_spectrum_job, spec_jobs_de, thread_budget(), cost=lambda j: j.n_draws * j.N**2,
                       label="deterministic-equivalent spectra")
lands_de = map_configs(width_landscape_job, land_jobs, thread_budget(), cost=lambda j: j.P, label="finite-context landscapes")
fig2, axs2 = plt.subplots(1, 3, figsize=(14, 3.8))
de_err, tp_err, edge_err = [], [], []
de_z, de_se = [], []  # Monte Carlo SE over independent projections and the 1/N finite-size term
ax = axs2[0]
for i, N in enumerate(Ns_de):
    sp = specs_de[7 * i]
    g_star, _ = width_min_loss(sp, L_de)
    grid = np.linspace(0.05, 1.6, 60) * g_star
    ax.plot(grid, width_loss(grid, sp, L_de), color=PALETTE[i], label=f"N/D={N / D_de:.3g} MC")
    gp = np.linspace(0.1, 1.0, 6) * g_star  # up to the minimiser; beyond it the top outlier mode dominates
    kmax = 1.2 * sp.s.max()
    de = width_loss_de(gp, lam_d, om_d, N, L_de, kmax, n_nodes=n_nodes)
    tp = two_point_loss_de(gp[::2], lam_d, np.array([0.0, D_de / N]), np.array([1 - N / D_de, N / D_de]),
                           om_d, lam_d, L_de, kmax, n_nodes=max(n_nodes // 2, 100))
    ax.plot(gp, de, "o", color=PALETTE[i])
    ax.plot(gp[::2], tp, "x", color="k", ms=7)
    de_err.append(np.max(np.abs(de / width_loss(gp, sp, L_de) - 1)))
    draws = np.array([width_loss(gp, specs_de[7 * i + 1 + k], L_de) for k in range(6)])
    mc_mean, mc_rel_se = draws.mean(0), standard_error(draws, axis=0) / draws.mean(0)
    de_z.append(np.max((np.abs(de / mc_mean - 1) - 1.0 / N) / mc_rel_se))
    de_se.append(np.max(mc_rel_se))
    tp_err.append(np.max(np.abs(tp / de[::2] - 1)))
    de_edge = width_loss_de([1.25 * g_star], lam_d, om_d, N, L_de, kmax, n_nodes=n_nodes)[0]
    ax.plot([1.25 * g_star], [de_edge], "s", color=PALETTE[i], mfc="none")
    edge_err.append(abs(de_edge / width_loss(1.25 * g_star, sp, L_de) - 1))
ax.set(xlabel="γ", ylabel="loss", yscale="log", title=f"(a) width model, P=∞, L={L_de}, D={D_de}")
ax.legend(fontsize=7)

ax = axs2[1]
wish_err, typo_ratio = [], []
tp_z, tp_se = [], []
for i, alpha in enumerate(alphas_de):
    P = int(alpha * D_de)
    grid = grid_b
    mc_runs = np.array([lands_de[6 * i + k][0] for k in range(6)])
    mc = mc_runs.mean(0)
    mc_rel_se = (standard_error(mc_runs, axis=0) / mc)[::8]
    Z = Z_b[alpha]
    kmax = 1.3 * np.linalg.eigvalsh(Z.T @ Z / P).max()
    gp = grid[::8]
    bn, bw = mp_quadrature(1 / alpha, 80)
    de = two_point_loss_de(gp, lam_d, bn, bw, np.ones(D_de), om_d * lam_d, L_de, kmax, n_nodes=max(n_nodes // 2, 100))
    ty = two_point_loss_de(gp, lam_d, bn, bw, np.ones(D_de), om_d * lam_d, L_de, kmax,
                           n_nodes=max(n_nodes // 2, 100), paper_typo=True)
    ax.plot(grid, mc, color=PALETTE[i], label=f"α={alpha} MC")
    ax.plot(gp, de, "o", color=PALETTE[i], label="two-point DE (corrected)")
    ax.plot(gp, ty, "^", color=PALETTE[i], mfc="none", label="relation printed after Eq. 39")
    wish_err.append(np.max(np.abs(de / mc[::8] - 1)))
    typo_ratio.append(np.min(ty / mc[::8]))
    tp_z.append(np.max((np.abs(de / mc[::8] - 1) - 1.0 / D_de) / mc_rel_se))
    tp_se.append(np.max(mc_rel_se))
ax.set(xlabel="γ", yscale="log", title=f"(b) finite context, N=D={D_de}, L={L_de}")
ax.legend(fontsize=7)

# (c) bottleneck exponents at large D: corrected width bottleneck vs Eq. 113, and depth bottleneck
ax = axs2[2]
Ns = np.unique(np.geomspace(64, D_exp // 50, 10).astype(int))
Ls = np.array([8, 16, 32, 64, 128])
expo = {}
for i, b in enumerate([0.5, 1.5]):
    la, om = power_law_spectrum(D_exp, nu, b)
    wb = np.array([width_bottleneck(la, om, int(n)) for n in Ns])
    wp = np.array([width_bottleneck_paper(la, om, int(n)) for n in Ns])
    db = np.array([rrs_optimum(la, om, int(L))[1] for L in Ls])
    # finite-D error of the depth fit: the same fit on the first D/4 modes of the same power law
    la4, om4 = power_law_spectrum(D_exp // 4, nu, b)
    db4 = np.array([rrs_optimum(la4, om4, int(L))[1] for L in Ls])
    expo[b] = (fit_power_law_exponent(Ns, wb), fit_power_law_exponent(Ns, wp), fit_power_law_exponent(Ls, db),
               fit_power_law_drift(Ns, wb), fit_power_law_drift(Ls, db) + abs(fit_power_law_exponent(Ls, db)
                                                                                 - fit_power_law_exponent(Ls, db4)))
    ax.loglog(Ns, wb, "-o", ms=3, color=PALETTE[i], label=f"β={b}: corrected, slope {expo[b][0]:.2f}")
    ax.loglog(Ns, wp, ":", color=PALETTE[i], label=f"β={b}: Eq. 113, slope {expo[b][1]:.2f}")
ax.set(xlabel="N", ylabel="width-bottleneck loss", title=f"(c) width bottleneck (t, L = ∞), ν={nu}, D={D_exp}")
ax.legend(fontsize=7)
fig2.tight_layout()
save_figure(fig2, "fig5s_deterministic_equivalents")

# %% tags=["nbval-check-output"]
print("DE vs MC (width, P=inf, gamma <= gamma*): max rel %.3f; at 1.25 gamma*: %.3f; two-point vs one-point: %.1e"
      % (max(de_err), max(edge_err), max(tp_err)))
print("two-point DE vs MC (finite alpha): max rel %.3f; printed relation / MC >= %.2f" % (max(wish_err), min(typo_ratio)))
for b, (e1, e2, e3, _, _) in expo.items():
    print(f"beta={b}: width exponent corrected {e1:.3f} (nu*min(beta,1)={nu * min(b, 1):.3f}), "
          f"Eq.113 {e2:.3f} (paper nu*beta={nu * b:.3f}); depth exponent {e3:.3f} (paper beta={b})")

# %%
final_a = {N: curves_a[N].loss[-1] for N in N_list}
final_b = {L: curves_b[L].loss[-1] for L in L_list}
fa = np.array([final_a[N] for N in N_list])
fb = np.array([width_min_loss(specs[N_fixed], L)[1] for L in L_list])  # t -> infinity loss per depth
fc = np.array([curves_c[p].loss[-1] for p in pairs])
fw = min(cv.loss[-1] for cv in curves_w.values())
fd = min(cv.loss[-1] for cv in curves_d.values())

# Monte Carlo standard errors at the final gamma. Panels (a) and (c): independent projections per width
# (differences in quadrature); panel (b): every depth uses the same projections (paired differences)
fa_se = np.array([width_loss_se(curves_a[N].gamma[-1], specs[N], L_fixed) for N in N_list])
fc_se = np.array([width_loss_se(curves_c[(N, L)].gamma[-1], specs[N], L) for N, L in pairs])
fb_draws = np.array([width_loss_draws(width_min_loss(specs[N_fixed], L)[0], specs[N_fixed], L) for L in L_list])
write_metrics({
    "fig5a_final_max_increment": float(np.max(np.diff(fa))),
    "fig5a_final_over_depth_bn_min": float(np.min(fa) / depth_bn),
    "fig5a_increment_z_max": float(np.max(increment_z_scores(fa, fa_se))),
    "fig5a_final_se_max": float(np.max(fa_se)),
    "fig5b_increment_z_max": float(np.max(paired_increment_z_scores(fb_draws))),
    "fig5b_min_loss_se_max": float(np.max(standard_error(fb_draws, axis=1))),
    "fig5c_increment_z_max": float(np.max(increment_z_scores(fc, fc_se))),
    "fig5c_final_se_max": float(np.max(fc_se)),
    "fig5b_min_loss_max_increment": float(np.max(np.diff(fb))),
    "fig5b_min_loss_over_width_bn_mc_min": float(np.min(fb) / width_bn_mc),
    "fig5b_min_loss_L64_over_width_bn_mc": fb[-1] / width_bn_mc,
    "fig5c_joint_final_max_increment": float(np.max(np.diff(fc))),
    "fig5c_joint_final_last": float(fc[-1]),
    "fig5c_width_only_final_best": float(fw),
    "fig5c_depth_only_final_best": float(fd),
    "depth_bottleneck_L4": rrs_optimum(lam, omega, 4)[1],
    "fig5c_width_bn_N32_mc": specs[32].null_loss,
    "depth_bottleneck_L8": depth_bn,
    "fig5a_full_width_final_over_depth_bn": final_a[D] / depth_bn,
    "fig5b_deep_final_over_width_bn_mc": curves_b[max(L_list)].loss[-1] / width_bn_mc,
    "width_bn_mc": width_bn_mc,
    "width_bn_de": width_bn_de,
    "width_bn_paper": width_bn_paper,
    "width_bn_de_vs_mc_rel": abs(width_bn_de / width_bn_mc - 1),
    "width_bn_paper_vs_mc_ratio": width_bn_paper / width_bn_mc,
    "fig5d_sgd_gamma_max_rel_err": max(sim_err),
    "fig5d_gamma_late_bias_max_z": float(max(sim_bias_z)),
    "fig5d_gamma_late_bias_se_max": float(max(sim_bias_se)),
    **fig5d_sweep_metrics,
    "de_one_point_vs_mc_max_rel": max(de_err),
    "de_one_point_vs_mc_max_excess_z": float(max(de_z)),
    "de_one_point_mc_rel_se_max": float(max(de_se)),
    "de_one_point_vs_mc_edge_rel": max(edge_err),
    "two_point_vs_one_point_max_rel": max(tp_err),
    "two_point_wishart_vs_mc_max_rel": max(wish_err),
    "paper_relation_over_mc_min_ratio": min(typo_ratio),
    "two_point_max_excess_z": float(max(tp_z)),
    "two_point_mc_rel_se_max": float(max(tp_se)),
    "two_point_N_min": D_de,
    "width_exponent_beta05": expo[0.5][0],
    "width_exponent_beta15": expo[1.5][0],
    "width_exponent_paper_formula_beta15": expo[1.5][1],
    "depth_exponent_beta05": expo[0.5][2],
    "depth_exponent_beta15": expo[1.5][2],
    "width_exponent_beta05_drift": expo[0.5][3],
    "width_exponent_beta15_drift": expo[1.5][3],
    "depth_exponent_beta05_drift": expo[0.5][4],
    "depth_exponent_beta15_drift": expo[1.5][4],
    "runtime_s": time.time() - t_start,
})
