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
# # Full linear attention and untied layers (Bordelon et al., Figures 6a-b and 8)
# This notebook recomputes Figure 6 (a)-(b) and Figure 8 of Bordelon et al. (§5.1-5.2, Result 9,
# App. G.1-G.2). Figure 6: the deep linear-attention network of Eq. (3) with separate
# $W_x, W_k, W_q, W_v$ (aligned, block-structured, tied across layers, fixed $w_y=w_o$) trained
# with plain SGD from a small balanced initialisation, against the one-dimensional theory
# $\gamma=c\,s^5$, $\dot s=-c\,s^4\mathcal L'(cs^5)$ on the reduced landscape, for isotropic (a) and
# randomly rotated power-law (b) data; panel (e) fits the late-time exponent of the $w^5$ flow at
# large $D$ against Eq. (22). Figure 8: the reduced model with untied layers $\Gamma^\ell$ trained
# with learning rate $\eta_0 L$, against the recurrent gradient flow (Eq. 13), and the balance
# $\gamma^\ell(t)=\gamma(t)$; the same untied model with label noise at finite context against Eq. (122)
# (App. G.1.2); and the block network with trainable read-in and read-out against Eq. (124) (App. G.2).

# %% tags=["parameters", "hide-input"]
D = 8               # input dimension of the full-attention runs (Figure 6); range: [1, 200]
alpha = 2.0         # context length P as a multiple of D; range: (0, inf)
K_frac = 1.0        # query tokens per context K as a multiple of D; range: (0, inf)
B = 64              # contexts per SGD step; range: [1, 1000]
s0 = 1.2            # balanced initial scale; gamma(0) is (2/D^2) s0^5; range: (0, inf)
eta = 0.1           # initial SGD learning rate; step k uses eta / (1 + k / decay); range: (0, inf)
decay = 100.0       # learning-rate decay scale (steps); theory time t is the sum of the step sizes; range: (0, inf)
steps = 500         # SGD steps per depth; range: [1, 20000]
nu = 1.0            # power-law capacity exponent (panel b, Figure 8); range: (0, inf)
beta = 1.0          # power-law source exponent; range: (0, inf)
mc_draws = 100000   # Wishart draws for the finite-D landscape of the Figure-6 theory; range: [2, 1000000]
D_untied = 24       # dimension of the untied-layer runs (Figure 8); range: [1, 1000]
B_untied = 32       # contexts per step (population contexts); range: [1, 500]
eta_untied = 0.5    # theory time step; range: (0, inf)
steps_untied = 200  # SGD steps; range: [1, 5000]
D_exp = 100000      # dimension of the w^5 exponent fit (panel e); range: [1, 5000000]
D_untied_large = 20000  # dimension of the untied-vs-balanced optimum (close to the D -> infinity spectrum); range: [1, 200000]
mc_tables = 10      # independent blocks of the draws for the Monte Carlo error of the Figure-6 theory (at least 2); range: [2, 100]
untied_seeds = 4    # independent SGD runs per batch size in the Figure-8 batch sweep (at least 2); range: [2, 100]
sigma_noise = 1.0   # label-noise standard deviation of the untied runs with noise (Eq. 122); range: [0, 10]
alpha_noise = 4.0   # context length P as a multiple of D_untied in the runs with label noise; range: (0, inf)
L_noise = 2         # depth of the untied runs with label noise; range: [1, 16]
noise_draws = 1000  # context covariances drawn for the Eq. 122 theory (Monte Carlo); range: [2, 100000]
L_readout = 4       # depth of the trainable read-in/read-out runs (Eq. 124); range: [1, 16]
a0_readout = 0.3    # initial read-in and read-out scale a_y and a_o; range: (0, inf)
eta_readout = 0.1   # constant SGD step of the read-in/read-out runs (t is eta_readout times steps); range: (0, inf)
steps_readout = 200 # SGD steps of the read-in/read-out runs; range: [1, 20000]
readout_seeds = 4   # independent read-in/read-out SGD runs (at least 2: their spread is the SE); range: [2, 100]
readout_draws = 2000  # context covariances drawn for the Eq. 124 theory (Monte Carlo); range: [4, 100000]
seed = 0            # random seed; range: [0, 4294967295]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"D": 16, "steps": 1500, "decay": 300.0, "mc_draws": 100000, "D_untied": 64,
                     "steps_untied": 600, "D_exp": 400000}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.finite_context import context_draws
from iclcore.dmft.readout import (
    FullAttentionRun,
    PowerLawFlowJob,
    ReadoutSGDRun,
    full_attention_run,
    power_five_theory,
    power_law_flow,
    readout_descent_path,
    readout_flow,
    readout_peak_standard_error,
    readout_sgd_run,
)
from iclcore.dmft.rrs import rrs_gradient_flow, rrs_loss, rrs_loss_grad, rrs_optimum
from iclcore.dmft.sgd_sweep import ReducedSGDTask, late_bias_sweep
from iclcore.dmft.untied import (
    UntiedSGDRun,
    balanced_optimum_stability,
    untied_noisy_flow,
    untied_noisy_loss,
    untied_optimum,
    untied_sgd_run,
)
from iclcore.models.attention import power_five_constant
from iclcore.models.probes import block_average
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.stats import (
    fit_offset_power_law,
    fit_power_law_drift,
    fit_power_law_exponent,
    fit_power_law_weighted,
    relative_bias,
    standard_error,
)

use_style()
t_start = time.time()
P, K = int(round(alpha * D)), max(1, int(round(K_frac * D)))
depths = [1, 2, 4, 8]
schedule = lambda k: 1.0 / (1.0 + k / decay)  # noqa: E731
t = np.concatenate([[0.0], np.cumsum(eta * schedule(np.arange(steps)))])
c = power_five_constant(D)


# %% [markdown]
# ## Figure 6 (a)-(b): full linear attention against the $\gamma = c\,s^5$ theory
# SGD uses a decaying step $\eta_k=\eta/(1+k/k_0)$ (constant steps make the late phase noisy: a few
# prompts with a large top eigenvalue of $\hat\Sigma$ give very large gradients at large $\gamma$); the
# theory clock is $t_k=\sum_{j<k}\eta_j$. The theory uses the exact finite-$D$ landscape of the reduced model: a
# polynomial of degree $2L$ in $\gamma$ whose coefficients are Monte Carlo moments over `mc_draws` Wishart
# draws at the same $D$ and $P$ (`tied_loss_moments`), so that the comparison isolates the reduction
# itself; its Monte Carlo error (from `mc_tables` independent blocks of the draws) enters the error
# model in quadrature. SGD noise and the finite batch remain.

# %%
spectra6 = {"iso": (np.ones(D), np.ones(D)), "rrs": power_law_spectrum(D, nu, beta)}


def theory_fig6(kind: str):
    """The c s^5 flow on the exact finite-P landscape (Monte Carlo moments) and its Monte Carlo error."""
    draws = context_draws(*spectra6[kind], P, np.random.default_rng(seed + (kind == "rrs")), mc_draws)
    out = {L: power_five_theory(draws, L, t, c, s0, mc_tables, steps // 2) for L in depths}
    return {L: dict(gam_th=th.gamma, loss_th=th.loss, th_mc_sd=th.mc_sd) for L, th in out.items()}


fig6 = {k: theory_fig6(k) for k in ("iso", "rrs")}
# the 8 SGD runs are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`);
# a diverging run raises a ValueError naming eta
keys6 = [(kind, L) for kind in ("iso", "rrs") for L in depths]
runs6 = [FullAttentionRun(kind, tuple(spectra6[kind][0]), tuple(spectra6[kind][1]), P, K, B, L, s0, eta, decay, steps,
                          seed + 10 * L + (kind == "rrs"), device=device) for kind, L in keys6]
for (kind, L), res in zip(keys6, map_configs(full_attention_run, runs6, thread_budget(), cost=lambda r: r.L,
                                             label="Figure-6 SGD runs")):
    fig6[kind][L]["res"] = res

# %%
fig, axs = plt.subplots(1, 4, figsize=(17, 3.8))
err6, bias6_z, bias6_se = {}, {}, {}
bias6_zth, th6_sd = {}, {}  # the same z with the theory's Monte Carlo SD in quadrature; that SD
for j, kind in enumerate(("iso", "rrs")):
    ax, axg = axs[2 * j], axs[2 * j + 1]
    errs, zs, ses, zth = [], [], [], []
    for i, L in enumerate(depths):
        d = fig6[kind][L]
        ax.plot(t, d["loss_th"], color=PALETTE[i], label=f"L={L} theory")
        ax.plot(block_average(t[:-1], 20), block_average(d["res"].loss, 20), "o", ms=3, color=PALETTE[i])
        axg.plot(t, d["gam_th"], color=PALETTE[i], label=f"L={L}")
        axg.plot(t[::10], d["res"].gamma[::10, 0], "o", ms=3, color=PALETTE[i])
        late = slice(steps // 2, None)  # relative bias of gamma, SE by batch means
        rb = relative_bias(d["res"].gamma[late, 0], d["gam_th"][late], d["th_mc_sd"], n_blocks=10)
        errs.append(rb.max_abs)
        zs.append(rb.z)
        ses.append(rb.se)
        zth.append(rb.z_with_reference)
    err6[kind], bias6_z[kind], bias6_se[kind] = max(errs), max(zs), max(ses)
    bias6_zth[kind], th6_sd[kind] = max(zth), max(fig6[kind][L]["th_mc_sd"] for L in depths)
    name = "isotropic" if kind == "iso" else f"RRS power law (ν={nu}, β={beta})"
    ax.set(xlabel="t = Σ η_k", ylabel="loss", yscale="log", title=f"({'ab'[j]}) {name}, D={D}, α={alpha}")
    axg.set(xlabel="t = Σ η_k", ylabel="γ = tr Γ", title="γ(t): SGD (dots) vs c s⁵ theory")
    ax.legend(fontsize=7)
    axg.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig6ab_full_linear_attention")

# %% [markdown]
# ## Late-time exponent of the $w^5$ flow (Eq. 22)
# With $\gamma=cs^5$ the reduced flow becomes $\dot\gamma=-5c^{2/5}\gamma^{8/5}\mathcal L'(\gamma)$;
# on a power law $\mathcal L\sim\gamma^{-\beta}$ this gives $\mathcal L\sim t^{-5\beta/(5\beta+2)}$,
# against $t^{-\beta/(2+\beta)}$ for gradient flow on $\gamma$ itself. We fit both at $L=\infty$,
# $P=\infty$ and large $D$ over the window $\gamma\in[100, 10^{-2}D^\nu]$ (the fitted slope approaches
# the asymptote slowly from above: the plateau escape time is still a visible offset of $t$).

# %%
lam_e, om_e = power_law_spectrum(D_exp, nu, beta)
te = np.geomspace(1e-2, 1e12, 400)
# finite-D trend of the w^5 exponent fit (ledger row on Eq. 22): the same fit at D_exp / 8, / 4, / 2 and
# D_exp (the window's upper end 10^-2 D^nu grows with D), fitted as fit(D) = a + b D^-q.
# The five flows (w^5 at four sizes, gamma at D_exp) are independent tasks
D_fs = np.array([D_exp // 8, D_exp // 4, D_exp // 2, D_exp])
flow_jobs = [PowerLawFlowJob(int(D_k), nu, beta, tuple(te), "w5", 1.0, 0.3) for D_k in D_fs]
flow_jobs.append(PowerLawFlowJob(D_exp, nu, beta, tuple(te), "gamma"))
flows_e = map_configs(power_law_flow, flow_jobs, thread_budget(), cost=lambda j: j.D * (1 + (j.kind == "gamma")),
                      label="power-law flows")
s_w5, gam_w5 = flows_e[3]
gam_g = flows_e[4][1]
fits, drifts = {}, {}
for name, gam in (("w5", gam_w5), ("gamma", gam_g)):
    lo = rrs_loss(gam, lam_e, om_e, np.inf)
    sel = (gam > 100) & (gam < 1e-2 * D_exp**nu)
    fits[name] = fit_power_law_exponent(te[sel], lo[sel])
    drifts[name] = fit_power_law_drift(te[sel], lo[sel])
# growth of the weight scale itself (Eq. 127 prints w ~ t^{5/(5 beta + 2)}), same window
sel = (gam_w5 > 100) & (gam_w5 < 1e-2 * D_exp**nu)
w_growth = -fit_power_law_exponent(te[sel], s_w5[sel])
w_growth_drift = fit_power_law_drift(te[sel], s_w5[sel])
fit_fs = []
for D_k, (_, gam_k) in zip(D_fs[:-1], flows_e[:3]):
    lam_k, om_k = power_law_spectrum(int(D_k), nu, beta)
    sel_k = (gam_k > 100) & (gam_k < 1e-2 * D_k**nu)
    fit_fs.append(fit_power_law_exponent(te[sel_k], rrs_loss(gam_k, lam_k, om_k, np.inf)[sel_k]))
fit_fs = np.array(fit_fs + [fits["w5"]])
trend_fs = fit_offset_power_law(D_fs, fit_fs, p0=[fit_fs[-1], fit_fs[0] - fit_fs[-1], 0.5])  # a + b D^-q
# extrapolation error: the same extrapolation from the three smallest sizes (one size fewer)
trend_fs3 = fit_offset_power_law(D_fs[:-1], fit_fs[:-1], p0=trend_fs)
fig_e, ax = plt.subplots(figsize=(5, 3.6))
ax.loglog(te, rrs_loss(gam_w5, lam_e, om_e, np.inf), label=f"γ = s⁵ flow: fit {fits['w5']:.3f}, Eq. 22 {5 * beta / (5 * beta + 2):.3f}")
ax.loglog(te, rrs_loss(gam_g, lam_e, om_e, np.inf), label=f"γ flow: fit {fits['gamma']:.3f}, Eq. 97 {beta / (2 + beta):.3f}")
ax.set(xlabel="t", ylabel="loss", title=f"(e) time exponents, L = P = ∞, D={D_exp}")
ax.legend(fontsize=7)
save_figure(fig_e, "fig6e_w5_exponent")

# %% tags=["nbval-check-output"]
print("max late relative gamma error (SGD vs c s^5 theory): ISO %.2f, RRS %.2f" % (err6["iso"], err6["rrs"]))
print("w^5 exponent fit %.3f (5b/(5b+2) = %.3f); gamma-flow exponent %.3f (b/(2+b) = %.3f)"
      % (fits["w5"], 5 * beta / (5 * beta + 2), fits["gamma"], beta / (2 + beta)))

# %% [markdown]
# ## Figure 8: untied layers
# $L$ independent $D\times D$ matrices $\Gamma^\ell$ from zero, SGD on population contexts
# ($P=K=\infty$, Haar-rotated power-law covariance) with learning rate $\eta\,DL/2$ (the paper's
# $\eta=\eta_0 L$); theory: the recurrent flow $\dot\gamma=\mathrm{tr}\,\Omega\Lambda^2(I-\gamma\Lambda/L)^{2L-1}$
# at $t=\eta\cdot$steps. Panel (c): the balanced manifold is invariant under gradient flow but
# transversally unstable (Hessian eigenvalue $-2\,\mathrm{tr}[\Omega\Lambda^3(I-\gamma\Lambda/L)^{2L-2}]/L^2$
# across it, `untied_balanced_hessian`), so SGD noise splits the layers once $\gamma$ nears the balanced
# optimum, most visibly at $L=2$; unequal layer scales reach a lower loss (`untied_optimum`).

# %%
lam_u, om_u = power_law_spectrum(D_untied, nu, beta)
tu = eta_untied * np.arange(steps_untied + 1)
runs8 = [UntiedSGDRun(tuple(lam_u), tuple(om_u), L, B_untied, eta_untied, steps_untied, seed + 100 + L, device=device) for L in (2, 4, 8)]
untied = {}
for run, res in zip(runs8, map_configs(untied_sgd_run, runs8, thread_budget(), cost=lambda r: r.L, label="Figure-8 SGD runs")):
    g_th, l_th = rrs_gradient_flow(tu, lam_u, om_u, run.L)
    untied[run.L] = (res, g_th, l_th)

fig8, axs8 = plt.subplots(1, 3, figsize=(16, 3.8))
err8, bias8_z, bias8_se = [], [], []
for i, (L, (res, g_th, l_th)) in enumerate(untied.items()):
    axs8[0].plot(tu, l_th, color=PALETTE[i], label=f"L={L} recurrent theory")
    axs8[0].plot(block_average(tu[:-1], 10), block_average(res.loss, 10), "o", ms=3, color=PALETTE[i])
    late = slice(steps_untied // 10, None)
    rb = relative_bias(res.gamma[late].mean(axis=1), g_th[late], n_blocks=10)  # layer-mean gamma vs the recurrent flow
    err8.append(rb.max_abs)
    bias8_z.append(rb.z)
    bias8_se.append(rb.se)
late = slice(steps_untied // 10, None)
gam8 = untied[8][0].gamma[late]
spread8 = float(np.max((gam8.max(axis=1) - gam8.min(axis=1)) / gam8.mean(axis=1)))
gam2 = untied[2][0].gamma
split2 = float(abs(gam2[-1, 0] - gam2[-1, 1]) / gam2[-1].mean())
axs8[0].set(xlabel="t = η · steps", ylabel="loss", yscale="log", title=f"(a) untied layers, D={D_untied}, RRS power law")
axs8[0].legend(fontsize=7)
L_show = 8
res, g_th, _ = untied[L_show]
for l in range(L_show):
    axs8[1].plot(tu, res.gamma[:, l], color=plt.cm.viridis(l / L_show), lw=1, label=f"γ^{l + 1}" if l in (0, L_show - 1) else None)
axs8[1].plot(tu, g_th, "k--", label="recurrent theory γ(t)")
axs8[1].set(xlabel="t = η · steps", ylabel="γ^ℓ = tr Γ^ℓ", title=f"(b) balance across layers, L={L_show}")
axs8[1].legend(fontsize=7)
# (c) the balanced manifold is transversally unstable: the two layers of L = 2 split
res2, g2_th, _ = untied[2]
axs8[2].plot(tu, res2.gamma[:, 0], color=PALETTE[0], label="γ¹ (SGD)")
axs8[2].plot(tu, res2.gamma[:, 1], color=PALETTE[1], label="γ² (SGD)")
axs8[2].plot(tu, g2_th, "k--", label="balanced theory")
axs8[2].set(xlabel="t = η · steps", ylabel="γ^ℓ", title="(c) L=2: balance is unstable")
axs8[2].legend(fontsize=7)
fig8.tight_layout()
save_figure(fig8, "fig8_untied_layers")

# The untied-vs-recurrent bias against the batch size (ledger row on Figure 8a): the flow is the
# eta/B -> 0 limit of SGD. At L = 2 (the largest bias), B in {B/4, B, 4B}, untied_seeds independent
# runs each; the late relative bias of the mean layer trace net of the deterministic discretisation
# bias (the expected dynamics in the same discrete steps, signed), SE over runs
L_sw = 2
B_sw = [max(1, B_untied // 4), B_untied, 4 * B_untied]


def untied_task(eta_k, B_k, n_k, r):
    return ReducedSGDTask(tuple(lam_u), tuple(om_u), L_sw, False, None, eta_k, B_k, n_k,
                          train_seed=seed + 5000 + 100 * r + B_k, device=device)


sw8 = [(pt.bias, pt.se) for pt in late_bias_sweep(
    [(eta_untied, B_k) for B_k in B_sw], untied_task, untied_seeds, eta_untied * steps_untied,
    lambda tt: rrs_gradient_flow(tt, lam_u, om_u, L_sw)[0], lambda g: rrs_loss_grad(g, lam_u, om_u, L_sw),
    workers=thread_budget())]
ex8, se8 = np.array([v[0] for v in sw8]), np.array([v[1] for v in sw8])
_, p8, p8_se = fit_power_law_weighted(1.0 / np.array(B_sw, float), ex8, se8)
fig8s, ax = plt.subplots(figsize=(5, 3.6))
ax.errorbar(B_sw, ex8, yerr=se8, fmt="o", capsize=2, label=f"L={L_sw}, η={eta_untied:g}: fit ∝ B^-{p8:.2f}")
ax.axhline(0.0, color="grey", lw=0.5)
ax.set(xscale="log", xlabel="contexts per step B", ylabel="late bias of mean γ^ℓ − discretisation",
       title=f"(a) untied SGD vs recurrent flow, D={D_untied}")
ax.legend(fontsize=7)
save_figure(fig8s, "fig8a_bias_batch")

# Hessian at the balanced optimum, layer gradients there (equal by symmetry), and the global untied
# optimum against the balanced one: at the SGD size D_untied and at D_untied_large
lam_big, om_big = power_law_spectrum(D_untied_large, nu, beta)
stab = {L: balanced_optimum_stability(lam_u, om_u, L) for L in (2, 4, 8)}
instab = {L: (st.longitudinal, st.transverse, st.balanced_loss, st.untied_loss) for L, st in stab.items()}
grad_spread = max(st.gradient_spread for st in stab.values())
ratio_large = {L: untied_optimum(lam_big, om_big, L)[1] / rrs_optimum(lam_big, om_big, L)[1] for L in (2, 4, 8)}

# %% tags=["nbval-check-output"]
print("untied vs recurrent theory: max late rel gamma error %.2f; layer spread (L=8) %.2f; final split (L=2) %.2f"
      % (max(err8), spread8, split2))
for L, (lon, tra, lb, lu) in instab.items():
    print(f"L={L}: Hessian at balanced optimum {lon:.2e} (balanced), {tra:.2e} (transverse); "
          f"balanced min {lb:.4f}, unbalanced min {lu:.4f}")

# %% [markdown]
# ## Untied layers with label noise (App. G.1.2, Eq. 122)
# The same untied model at finite context length $P=\alpha D$ with noisy labels
# $y=\beta\cdot x/\sqrt D+\sigma\epsilon$ (training contexts and queries), trained on the query
# mean-squared error. Eq. (122) adds to the noise-free loss the term
# $\frac{\sigma^2}{L^2\alpha}\sum_{\ell\ell'}\gamma^\ell\gamma^{\ell'}\mathrm{tr}\,\Lambda\prod_{k>\ell}A^k\Lambda\prod_{k>\ell'}A^k$;
# the theory is the balanced gradient flow on it (`untied_noisy_flow`, Monte Carlo over
# `noise_draws` context covariances at the same $D$ and $P$). The exact noise term keeps $\hat\Sigma$
# where Eq. (122) writes its mean $\Lambda$ (`decoupled=False`), evaluated along the same $\gamma(t)$;
# their difference is $O(\sigma^2/\alpha^2)$.

# %%
P_n = int(round(alpha_noise * D_untied))

draws_n = context_draws(lam_u, om_u, P_n, np.random.default_rng(seed + 77), noise_draws)
g_n122, l_n122 = untied_noisy_flow(tu, draws_n, L_noise, sigma_noise)
lay_n = np.repeat(g_n122[:, None], L_noise, axis=1)
l_nex = untied_noisy_loss(lay_n, draws_n, sigma_noise, decoupled=False)[0]  # exact noise term, same flow
l_n0 = untied_noisy_loss(lay_n, draws_n, 0.0)[0]  # the noise-free part of Eq. 122, same flow
late_n = slice(steps_untied // 2, steps_untied)  # loss before the update of step k sits at t = tu[k]
sim_n, sim_n_curves = [], []
# untied_seeds independent runs on contexts of P_n tokens and D_untied queries, noisy labels (tasks)
runs_n = [UntiedSGDRun(tuple(lam_u), tuple(om_u), L_noise, B_untied, eta_untied, steps_untied, seed + 9000 + r,
                       P=P_n, K=D_untied, sigma=sigma_noise, device=device) for r in range(untied_seeds)]
for res_n in map_configs(untied_sgd_run, runs_n, thread_budget(), label="label-noise SGD runs"):
    sim_n.append(np.mean(res_n.loss[late_n]) - sigma_noise**2)  # excess over the query noise
    sim_n_curves.append(res_n.loss - sigma_noise**2)
sim_n = np.array(sim_n)
th122_late, th_ex_late = float(np.mean(l_n122[late_n])), float(np.mean(l_nex[late_n]))
# Monte Carlo error of the theory: the standard error over draws of the loss at the late balanced scale
g_late = float(np.mean(g_n122[late_n]))
th122_se = float(untied_noisy_loss(np.full(L_noise, g_late), draws_n, sigma_noise)[1])
noise_term_late = float(untied_noisy_loss(np.full(L_noise, g_late), draws_n, sigma_noise)[0]
                        - untied_noisy_loss(np.full(L_noise, g_late), draws_n, 0.0)[0])
se_n = float(np.hypot(standard_error(sim_n), th122_se))

fig_n, ax = plt.subplots(figsize=(5.5, 3.8))
ax.plot(block_average(tu[:-1], 10), block_average(np.mean(sim_n_curves, axis=0), 10), "o", ms=3, color=PALETTE[0],
        label=f"SGD, σ={sigma_noise:g} ({untied_seeds} runs)")
ax.plot(tu, l_n122, color=PALETTE[0], label="Eq. 122 (balanced flow)")
ax.plot(tu, l_nex, ":", color="k", label="exact noise term (Σ̂ kept), same γ(t)")
ax.plot(tu, l_n0, "--", color=PALETTE[1], label="Eq. 122 without its noise term, same γ(t)")
ax.set(xlabel="t = η · steps", ylabel="excess loss (query noise σ² removed)", yscale="log",
       title=f"untied L={L_noise}, D={D_untied}, α={alpha_noise:g}, label noise")
ax.legend(fontsize=7)
save_figure(fig_n, "fig8_untied_label_noise")

# %% tags=["nbval-check-output"]
print("untied, label noise: late excess loss SGD %.4f +- %.4f, Eq. 122 %.4f, exact %.4f, noise term %.4f"
      % (sim_n.mean(), standard_error(sim_n), th122_late, th_ex_late, noise_term_late))

# %% [markdown]
# ## Trainable read-in and read-out (§5.2, App. G.2, Eq. 124)
# The block model of Figure 6 with trainable scalars $a_y$ (read-in $w_y=a_ye_D$) and $a_o$
# (read-out), from a small start $a_o=a_y=$ `a0_readout`, plain SGD with a constant step, against the
# gradient flow of Eq. (124) on $(a_o, a_y, s)$ (`readout_flow`, Monte Carlo over `readout_draws`
# context covariances at the same $D$, $P$), and the same theory taken in the SGD's own discrete steps
# (`readout_descent_path`, the expected SGD path; the flow is its $\eta\to0$ limit). Isotropic data.

# %%
draws_r = context_draws(np.ones(D), np.ones(D), P, np.random.default_rng(seed + 88), readout_draws)
tr_ = eta_readout * np.arange(steps_readout + 1)
flow_r = readout_flow(tr_, draws_r, L_readout, c, a0_readout, a0_readout, s0)
# the same theory in the SGD's own discrete steps (its expected path; the flow is its eta -> 0 limit)
path_r = readout_descent_path(draws_r, L_readout, D, eta_readout, steps_readout, a0_readout, s0)
# Monte Carlo error of the theory's peak: the same path on 4 independent blocks of the draws
m_peak_th_se = readout_peak_standard_error(draws_r, L_readout, D, eta_readout, steps_readout, a0_readout, s0, n_blocks=4)
runs_r = map_configs(readout_sgd_run, [ReadoutSGDRun(D, P, K, B, L_readout, s0, a0_readout, eta_readout, steps_readout,
                                                    seed + 7000 + r, device=device) for r in range(readout_seeds)],
                     thread_budget(), label="read-out SGD runs")
m_runs = np.array([rr.a_o * rr.a_y for rr in runs_r])
m_peak_sim = m_runs.max(axis=1)
overshoot = m_peak_sim / m_runs[:, -1] - 1
fig_r, axs_r = plt.subplots(1, 2, figsize=(11, 3.8))
for rr, mr in zip(runs_r, m_runs):
    axs_r[0].plot(tr_, mr, color=PALETTE[0], alpha=0.5, lw=1)
    axs_r[1].plot(block_average(tr_[:-1], 10), block_average(rr.loss, 10), color=PALETTE[0], alpha=0.5, lw=1)
axs_r[0].plot(tr_, flow_r.m, "k--", label="Eq. 124 flow: a_o a_y")
axs_r[0].plot(tr_, path_r.m, ":", color="k", label="Eq. 124 in the SGD's steps")
axs_r[0].plot(tr_, flow_r.gamma / flow_r.gamma[-1], ":", color=PALETTE[1], label="γ / γ(t_end) (theory)")
axs_r[0].plot([], [], color=PALETTE[0], label=f"SGD ({readout_seeds} runs)")
axs_r[0].set(xlabel="t = η · steps", ylabel="a_o a_y", title=f"(a) read-out scale: blow-up and recovery, L={L_readout}")
axs_r[0].legend(fontsize=7)
axs_r[1].plot(tr_, flow_r.loss, "k--", label="Eq. 124 flow")
axs_r[1].set(xlabel="t = η · steps", ylabel="loss", yscale="log", title=f"(b) loss, ISO D={D}, α={alpha}")
axs_r[1].legend(fontsize=7)
fig_r.tight_layout()
save_figure(fig_r, "fig6_readout_blowup")

# %% tags=["nbval-check-output"]
print("read-out scale a_o a_y: SGD peak %.3f +- %.3f (theory in SGD steps %.3f +- %.3f, flow %.3f), final SGD %.3f"
      " (theory %.3f), overshoot %.3f +- %.3f" % (m_peak_sim.mean(), standard_error(m_peak_sim), path_r.m.max(),
      m_peak_th_se, flow_r.m.max(), m_runs[:, -1].mean(), path_r.m[-1], overshoot.mean(), standard_error(overshoot)))

# %%
write_metrics({
    "fig6a_iso_gamma_max_rel_err": err6["iso"],
    "fig6b_rrs_gamma_max_rel_err": err6["rrs"],
    "fig6a_iso_final_loss_L8_sim": float(np.mean(fig6["iso"][8]["res"].loss[-40:])),
    "fig6a_iso_final_loss_L8_theory": float(fig6["iso"][8]["loss_th"][-1]),
    "fig6a_iso_final_loss_L1_sim": float(np.mean(fig6["iso"][1]["res"].loss[-40:])),
    "fig6a_iso_final_loss_L1_theory": float(fig6["iso"][1]["loss_th"][-1]),
    "w5_time_exponent_fit": fits["w5"],
    "w5_time_exponent_eq22": 5 * beta / (5 * beta + 2),
    "gamma_time_exponent_fit": fits["gamma"],
    "w5_time_exponent_drift": drifts["w5"],
    "gamma_time_exponent_drift": drifts["gamma"],
    "w_growth_exponent_fit": w_growth,
    "w_growth_exponent_drift": w_growth_drift,
    "w_growth_exponent_corrected": 1 / (5 * beta + 2),
    "fig6a_iso_gamma_late_bias_max_z": bias6_z["iso"],
    "fig6a_iso_gamma_late_bias_se_max": bias6_se["iso"],
    "fig6b_rrs_gamma_late_bias_max_z": bias6_z["rrs"],
    "fig6b_rrs_gamma_late_bias_se_max": bias6_se["rrs"],
    "fig6a_iso_gamma_late_bias_max_z_theory_mc": bias6_zth["iso"],
    "fig6a_iso_theory_mc_rel_sd_max": th6_sd["iso"],
    "fig6b_rrs_gamma_late_bias_max_z_theory_mc": bias6_zth["rrs"],
    "fig6b_rrs_theory_mc_rel_sd_max": th6_sd["rrs"],
    "w5_time_exponent_fit_D8th": fit_fs[0],
    "w5_time_exponent_fit_D4th": fit_fs[1],
    "w5_time_exponent_fit_D2nd": fit_fs[2],
    "w5_time_exponent_size_q": trend_fs[2],
    "w5_time_exponent_extrapolated": trend_fs[0],
    "w5_time_exponent_extrapolation_err": abs(trend_fs[0] - trend_fs3[0]),
    "fig8_bias_batch_exponent": p8,
    "fig8_bias_batch_exponent_se": p8_se,
    "fig8_bias_small_batch": ex8[0],
    "fig8_bias_small_batch_se": se8[0],
    "fig8_bias_quick_batch": ex8[1],
    "fig8_bias_quick_batch_se": se8[1],
    "fig8_bias_large_batch": ex8[2],
    "fig8_bias_large_batch_se": se8[2],
    "fig8_bias_large_batch_z": abs(ex8[2]) / se8[2],
    "fig8_bias_large_batch_B": B_sw[2],
    "fig8_gamma_late_bias_max_z": float(max(bias8_z)),
    "fig8_gamma_late_bias_se_max": float(max(bias8_se)),
    "fig8_untied_gamma_max_rel_err": max(err8),
    "fig8_layer_spread_L8": spread8,
    "fig8_layer_split_L2_final": split2,
    "untied_transverse_curvature_max": float(max(v[1] for v in instab.values())),
    "untied_balanced_gradient_max_rel_spread": grad_spread,
    "untied_D_large": D_untied_large,
    "untied_min_over_balanced_min_L2": ratio_large[2],
    "untied_min_over_balanced_min_L4": ratio_large[4],
    "untied_min_over_balanced_min_L8": ratio_large[8],
    "untied_min_over_balanced_min_L4_Dsim": instab[4][3] / instab[4][2],
    "untied_min_over_balanced_min_L8_Dsim": instab[8][3] / instab[8][2],
    "untied_noise_late_excess_sim": float(sim_n.mean()),
    "untied_noise_late_excess_sim_se": float(standard_error(sim_n)),
    "untied_noise_late_excess_eq122": th122_late,
    "untied_noise_late_excess_eq122_se": th122_se,
    "untied_noise_late_excess_exact": th_ex_late,
    "untied_noise_late_excess_se_total": se_n,
    "untied_noise_late_z_eq122": abs(sim_n.mean() - th122_late) / se_n,
    "untied_noise_late_z_exact": abs(sim_n.mean() - th_ex_late) / se_n,
    "untied_noise_term_late": noise_term_late,
    "untied_noise_power_over_noise_term": 3 * se_n / noise_term_late,
    "untied_noise_gamma_late_eq122": g_late,
    "readout_m_peak_sim": float(m_peak_sim.mean()),
    "readout_m_peak_sim_se": float(standard_error(m_peak_sim)),
    "readout_m_peak_theory": float(path_r.m.max()),
    "readout_m_peak_flow": float(flow_r.m.max()),
    "readout_m_peak_theory_se": m_peak_th_se,
    "readout_m_peak_se_total": float(np.hypot(standard_error(m_peak_sim), m_peak_th_se)),
    "readout_m_peak_z": float(abs(m_peak_sim.mean() - path_r.m.max()) / np.hypot(standard_error(m_peak_sim), m_peak_th_se)),
    "readout_m_peak_z_flow": float(abs(m_peak_sim.mean() - flow_r.m.max()) / np.hypot(standard_error(m_peak_sim), m_peak_th_se)),
    "readout_m_final_sim": float(m_runs[:, -1].mean()),
    "readout_m_final_theory": float(path_r.m[-1]),
    "readout_m_overshoot": float(overshoot.mean()),
    "readout_m_overshoot_se": float(standard_error(overshoot)),
    "readout_m_overshoot_theory": float(path_r.m.max() / path_r.m[-1] - 1),
    "readout_final_loss_theory": float(path_r.loss[-1]),
    "readout_final_loss_sim": float(np.mean([rr.loss[-20:].mean() for rr in runs_r])),
    "runtime_s": time.time() - t_start,
})
