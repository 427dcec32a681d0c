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
# # Finite width and finite context together: the nested Eq. 15, the Chinchilla form and the frontier (Bordelon et al., Results 7–8)
# Result 7 (Eq. 15) gives the loss landscape of the width-$N$ model at finite context length $P$ as a
# two-point deterministic equivalent of the free product $M=B\hat\Sigma$, $B=(D/N)UU^\top$,
# $\hat\Sigma=\Lambda^{1/2}W\Lambda^{1/2}$. Both factors are random, so the equivalent is nested: the
# Appendix-A two-point formula over the Wishart factor $W$ at fixed $K=\Lambda^{1/2}B\Lambda^{1/2}$, then
# the one-point equivalent of $K$ over the projection; both levels share one $\tau$ and close on a scalar
# effective ridge $\kappa(z)$ (`iclcore.dmft.nested`). (a) The solver against Monte Carlo at two $(N,P)$
# pairs. (b) Result 8 / Eq. 18: the loss with $t,N,L,P$ all finite, fitted by the separable four-term
# form. (c) The compute-optimal frontier at $P=\infty$: the minimum over shapes $(N,L)$ at fixed
# $C=tN^2L$, against the printed $L\propto N^\nu$.

# %% tags=["parameters", "hide-input"]
D_mc = 300          # dimension of the Monte Carlo comparison; range: [16, 4000]
mc_draws = 40       # independent draws of (U, Z) per (N, P) pair (at least 4: halves are compared); range: [4, 1000]
L_mc = 4            # depth of the Monte Carlo comparison; range: [1, 32]
D = 512             # dimension of the Chinchilla and frontier computations; range: [128, 8192]
nu = 1.5            # capacity exponent: lambda_k is k^-nu; range: (0, inf)
beta = 0.5          # source exponent (at most 1, where the printed and corrected width exponents agree); range: (0, 1]
n_nodes = 160       # nodes of the first contour circle; range: [32, 2000]
seed = 0            # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"D_mc": 600, "mc_draws": 80, "D": 1024, "n_nodes": 256}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.dmft.data import power_law_spectrum
from iclcore.dmft.nested import (
    chinchilla_drift,
    compute_optimal_frontier,
    fit_chinchilla,
    nested_flow_loss,
    nested_kernel,
    nested_landscape_draws,
    nested_loss,
    nested_min_loss,
    nested_spectral_bound,
)
from iclcore.dmft.scaling import scaling_exponents
from iclcore.dmft.width_de import two_point_loss_de, width_loss_de
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.spectra.mp import mp_quadrature
from iclcore.stats import fit_power_law, fit_power_law_drift, fit_power_law_exponent, monte_carlo_agreement

use_style()
rng = np.random.default_rng(seed)
t_start = time.time()

# %% [markdown]
# ## Eq. 15 at finite N and P against Monte Carlo
# Two pairs, $(N,P)=(D/4,D/2)$ and $(D/2,2D)$ at $D=$ `D_mc`, depth `L_mc`, on the landscape up to the
# minimiser. The Monte Carlo mean is over `mc_draws` independent draws of the projection and the context
# (`iclcore.dmft.width_mc.width_landscape_mc`, one draw each); its standard error is their spread. The
# Monte Carlo is shown converged by comparing the means of the two halves of the draws. The one-resource
# limits are checked against the solvers already in the book: $P=\infty$ against the one-point equivalent
# (`width_loss_de`), $N=D$ against the Appendix-A two-point formula with a Marchenko–Pastur factor.

# %%
lam_m, om_m = power_law_spectrum(D_mc, nu, beta)
pairs = [(D_mc // 4, D_mc // 2), (D_mc // 2, 2 * D_mc)]
mc = {}
agreements, node_change = [], []
for N, P in pairs:
    ker = nested_kernel(lam_m, om_m, N, P=P, k_max=nested_spectral_bound(lam_m, N, P, rng=rng, margin=1.5), n_nodes=n_nodes)
    g_star, _ = nested_min_loss(ker, L_mc)
    gp = np.linspace(0.1, 1.0, 6) * g_star
    de = nested_loss(gp, ker, L_mc)
    de2 = nested_loss(gp, nested_kernel(lam_m, om_m, N, P=P, k_max=ker.k_max, n_nodes=2 * n_nodes), L_mc)
    node_change.append(float(np.max(np.abs(de / de2 - 1))))
    draws = nested_landscape_draws(gp, lam_m, om_m, N=N, P=P, L=L_mc, rng=rng, n_draws=mc_draws)
    agreements.append(monte_carlo_agreement(de, draws, discretisation=1.0 / min(N, P)))  # and the two-halves z
    mean, se = agreements[-1].mean, agreements[-1].se
    gg = np.linspace(0.02, 1.3, 60) * g_star
    mc[(N, P)] = (gp, de, mean, se, gg, nested_loss(gg[gg <= 2 * L_mc / ker.k_max], ker, L_mc))
z_all, rel_all, se_all, half_z = ([getattr(a, k) for a in agreements] for k in ("max_excess_z", "max_rel", "max_rel_se", "halves_z"))

# one-resource limits
N1 = D_mc // 4
ker_w = nested_kernel(lam_m, om_m, N1, P=None, k_max=nested_spectral_bound(lam_m, N1, None, rng=rng, margin=1.5), n_nodes=n_nodes)
gw = np.linspace(0.1, 1.0, 4) * nested_min_loss(ker_w, L_mc)[0]
lim_width = float(np.max(np.abs(nested_loss(gw, ker_w, L_mc) / width_loss_de(gw, lam_m, om_m, N=N1, L=L_mc, k_max=ker_w.k_max, n_nodes=2 * n_nodes) - 1)))
P1 = D_mc // 2
ker_c = nested_kernel(lam_m, om_m, D_mc, P=P1, k_max=nested_spectral_bound(lam_m, D_mc, P1, rng=rng, margin=1.5), n_nodes=n_nodes)
gc = np.linspace(0.1, 1.0, 4) * nested_min_loss(ker_c, L_mc)[0]
bn, bw = mp_quadrature(D_mc / P1, 80)
lim_context = float(np.max(np.abs(nested_loss(gc, ker_c, L_mc) / two_point_loss_de(
    gc, lam_m, bn, b_weights=bw, C=np.ones(D_mc), T=om_m * lam_m, L=L_mc, k_max=ker_c.k_max, n_nodes=n_nodes) - 1)))
t_mc = time.time() - t_start

# %% tags=["nbval-check-output"]
print(f"Eq. 15 (nested) vs Monte Carlo: max |DE/MC - 1| = {max(rel_all):.3f}, max relative SE = {max(se_all):.3f}")
print(f"one-resource limits within 1e-6: P = inf vs one-point {lim_width < 1e-6}; N = D vs two-point {lim_context < 1e-6}")

# %% [markdown]
# ## Result 8 / Eq. 18: the loss with all four resources finite
# The loss along the gradient flow $\dot\gamma=-\tfrac12\mathcal L'(\gamma)$ of the nested landscape, on the
# full grid $N,P\in\{8,16,\dots,D/4\}$, $L\in\{2,4,\dots,32\}$, $t\in[10,10^4]$ (7 log-spaced times), at $D=$ `D`,
# power-law data $(\nu,\beta)=$ (`nu`, `beta`). The separable form
# $c_tt^{-a_t}+c_NN^{-a_N}+c_LL^{-a_L}+c_PP^{-a_P}$ is fitted to $\log\mathcal L$ (8 parameters, all
# exponents started at 0.5). Error model: the drift of each fitted exponent between the joint fits on the
# lower and the upper half of its own resource's grid (the two-halves rule of the exponent rows).

# %%
Ns_c = [n for n in (8, 16, 32, 64, 128, 256, 512) if n <= D // 4]  # widths and contexts up to D/4
Ps_c, Ls_c = Ns_c, [2, 4, 8, 16, 32]
ts_c = np.geomspace(10.0, 1e4, 7)
lam, om = power_law_spectrum(D, nu, beta)
rows, losses = [], []
curves = {}
for N in Ns_c:
    for P in Ps_c:
        ker = nested_kernel(lam, om, N, P=P, k_max=nested_spectral_bound(lam, N, P, rng=rng, margin=1.5), n_nodes=n_nodes)
        for L in Ls_c:
            y = nested_flow_loss(ts_c, ker, L)
            rows += [(t, N, L, P) for t in ts_c]
            losses += list(y)
            curves[(N, L, P)] = y
X_c, Y_c = np.array(rows, dtype=float), np.array(losses)
chin = fit_chinchilla(X_c, Y_c)
chin_drift = chinchilla_drift(X_c, Y_c)
ex = scaling_exponents(nu, beta)
chin_pred = np.array([ex["t_rrs_paper"], ex["N_paper"], ex["L_paper"], ex["P_paper"]])
chin_corr = np.array([ex["t_rrs_corrected"], ex["N_corrected"], ex["L_corrected"], ex["P_corrected"]])
t_chin = time.time() - t_start - t_mc

# %% tags=["nbval-check-output"]
print("| resource | printed | fitted | drift | fit SE |")
print("|---|---|---|---|---|")
for k, name in enumerate(["t", "N", "L", "P"]):
    print(f"| {name} | {chin_pred[k]:.3f} | {chin.exponents[k]:.3f} | {chin_drift[k]:.3f} | {chin.exponent_se[k]:.3f} |")
print(f"rms residual of log loss: {chin.rms_log:.3f}")

# %% [markdown]
# ## The compute-optimal frontier at P = ∞
# At $P=\infty$ the compute is $C=tN^2L$ (the book's clock, normalisation $c=D/N$; see the errata). For
# 16 budgets $C\in[10^3,10^8]$ the loss is evaluated on the shapes $N\in\{4,6,8,12,\dots,D/4\}$,
# $L\in\{1,\dots,32\}$ at $t=C/(N^2L)$, minimised on the grid and refined by a local quadratic in
# $(\log N,\log L)$; the frontier exponent is the slope of $\log L^*$ against $\log N^*$ over the budgets
# with an interior optimum. Error model: the regression standard error of that slope (the scatter of the
# refined optima about the line, which carries the grid's discreteness); the two-halves drift is shown
# too, but at small budgets the optimum sits at L* = 2 and the drift measures the grid, not the slope.

# %%
Ns_f = np.array([n for n in (4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512) if n <= D // 4])
Ls_f = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32])
C_f = np.geomspace(1e3, 1e8, 16)
Y_f = np.empty((C_f.size, Ns_f.size, Ls_f.size))
for i, N in enumerate(Ns_f):
    ker = nested_kernel(lam, om, int(N), P=None, k_max=nested_spectral_bound(lam, int(N), None, rng=rng, margin=1.5), n_nodes=n_nodes)
    for j, L in enumerate(Ls_f):
        Y_f[:, i, j] = nested_flow_loss(C_f / (N**2 * L), ker, int(L))
N_opt, L_opt, loss_opt, interior = compute_optimal_frontier(C_f, Ns_f, Ls_f, loss=Y_f)
front = fit_power_law(N_opt[interior], L_opt[interior])  # L* ~ N*^slope, residual standard error
front_fit, front_se = front.slope, front.slope_se
front_drift = fit_power_law_drift(N_opt[interior], L_opt[interior])
front_loss_exp = fit_power_law_exponent(C_f[interior], loss_opt[interior])

# %% tags=["nbval-check-output"]
print(f"frontier: L* ~ N*^{front_fit:.2f} +- {front_se:.2f} (drift {front_drift:.2f}; printed nu = {nu:g}) over {int(interior.sum())} budgets")

# %%
fig, ax = plt.subplots(1, 3, figsize=(16, 4.2))
for i, (N, P) in enumerate(pairs):
    gp, de, mean, se, gg, curve = mc[(N, P)]
    ax[0].plot(gg[: curve.size], curve, color=PALETTE[i], label=f"Eq. 15 nested, N={N}, P={P}")
    ax[0].errorbar(gp, mean, yerr=2 * se, fmt="o", ms=4, color=PALETTE[i], mfc="none", label=f"Monte Carlo ({mc_draws} draws, 2 SE)")
ax[0].set(xlabel="γ", ylabel="loss", yscale="log", title=f"(a) finite N and P, D={D_mc}, L={L_mc}")
ax[0].legend(fontsize=7)
for k, (N, L, P) in enumerate([(16, 4, 16), (64, 4, 64), (64, 32, 64), (16, 32, 64)]):
    x = np.array([[t, N, L, P] for t in ts_c], dtype=float)
    fitted = np.sum(chin.coefficients * x ** (-chin.exponents), axis=1)
    ax[1].plot(ts_c, curves[(N, L, P)], "o", color=PALETTE[k], label=f"N={N}, L={L}, P={P}")
    ax[1].plot(ts_c, fitted, "-", color=PALETTE[k], lw=1)
ax[1].set(xscale="log", yscale="log", xlabel="t", title="(b) nested loss (dots) and the fitted Eq. 18 (lines)")
ax[1].legend(fontsize=7)
for i in range(0, Ns_f.size, 2):
    ax[2].plot(C_f, Y_f[:, i, :].min(axis=1), color=plt.cm.viridis(i / (Ns_f.size - 1)), lw=1, label=f"N={Ns_f[i]} (best L)")
ax[2].plot(C_f[interior], loss_opt[interior], "k-", lw=2.5, label="frontier")
ax[2].set(xscale="log", yscale="log", xlabel="compute C = t N² L", title=f"(c) P=∞ frontier: L* ∝ N*^{front_fit:.2f} (printed {nu:g})")
ax[2].legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig_nested_scaling")

# %%
metrics = {
    "nested_vs_mc_max_excess_z": max(z_all),
    "nested_vs_mc_max_rel": max(rel_all),
    "nested_mc_rel_se_max": max(se_all),
    "nested_mc_halves_z_max": max(half_z),
    "nested_N_min": min(min(p) for p in pairs),
    "nested_power_rel": 1.0 / min(min(p) for p in pairs) + 3 * max(se_all),
    "nested_nodes_rel_change": max(node_change),
    "nested_limit_P_inf_rel": lim_width,
    "nested_limit_N_D_rel": lim_context,
    "chin_rms_log": chin.rms_log,
    "frontier_exponent_fit": front_fit,
    "frontier_exponent_drift": front_drift,
    "frontier_exponent_se": front_se,
    "frontier_exponent_pred": nu,
    "frontier_loss_exponent": front_loss_exp,
    "frontier_interior_count": int(interior.sum()),
    "seconds_mc": t_mc,
    "seconds_chinchilla": t_chin,
}
chin_columns = {"fit": chin.exponents, "drift": chin_drift, "se": chin.exponent_se, "pred": chin_pred, "corrected": chin_corr}
for k, name in enumerate(["t", "N", "L", "P"]):
    metrics.update({f"chin_a_{name}_{key}": float(v[k]) for key, v in chin_columns.items()})
metrics["runtime_s"] = time.time() - t_start
write_metrics(metrics)
