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
# # Prompt Marchenko–Pastur spectrum, concentration and Hessian perturbation (the main paper §4, §9, Figure 10)
# This notebook draws Gaussian prompt designs with a structured (rotated, ill-conditioned) covariance
# $\Sigma_x$, whitens them, and compares the spectrum of $\widetilde\Sigma_M=\Sigma_x^{-1/2}\widehat\Sigma_M\Sigma_x^{-1/2}$
# with the Marchenko–Pastur law for several $\gamma=K/M$ (including $\gamma>1$, where the law has an atom at
# zero). It then counts violations of the non-asymptotic window $[(1-\sqrt\gamma-t)^2,(1+\sqrt\gamma+t)^2]$
# over many draws against the bound $2e^{-Mt^2/2}$, checks the second-order resolvent identity and the norm
# bound for $H_M=H_\infty+\Delta_M$, and measures the prompt excess risk against $d_{\rm eff}/M$ and against
# its first-order constant.

# %% tags=["parameters", "hide-input"]
K_hist = 100          # dimension for the histograms; range: [1, 5000]
n_hist_draws = 20     # prompts per gamma for the histograms; range: [1, 200]
cond = 100.0          # condition number of Sigma_x (geometric spectrum, random rotation); range: [1, inf)
K_conc = 40           # dimension for the concentration experiment; range: [1, 1000]
n_conc_draws = 1000   # prompts per gamma for the violation frequencies; range: [1, 50000]
K_pert = 20           # dimension for the perturbation and excess-risk checks; range: [1, 200]
lam = 0.5             # ridge lambda of H_M (Sigma_hat + lambda I); range: [0, inf)
n_pert_draws = 50     # prompts per M for the resolvent identity and bound; range: [1, 2000]
sigma = 0.5           # label noise for the excess risk; range: [0, inf)
task_rank = 5         # rank r of the task covariance for the excess risk; range: [1, 50]
n_risk_prompts = 40000  # prompts per M for the excess risk (paired Monte Carlo; a standard error needs two draws); range: [2, 2000000]
seed = 0              # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"K_hist": 400, "n_hist_draws": 25, "K_conc": 64, "n_conc_draws": 4000, "n_pert_draws": 200, "n_risk_prompts": 200000}}

# %% tags=["hide-input"]
import time
from dataclasses import asdict

import matplotlib.pyplot as plt
import numpy as np

from iclcore.lsq.moments import effective_dimension
from iclcore.lsq.tasks import TaskConfig
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.spectra.mp import mp_atom, mp_density, mp_edges, mp_moment, mp_quadrature, mp_stieltjes
from iclcore.spectra.prompt import (
    concentration_experiment,
    concentration_summary,
    concentration_table,
    excess_risk_exponent,
    haar_rotated_covariance,
    prompt_excess_risk_first_order,
    prompt_excess_risk_mc,
    resolvent_perturbation_sweep,
    whitened_spectrum_sample,
)

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)

# %% [markdown]
# ## 1. Whitened spectra against the Marchenko–Pastur density
# $\Sigma_x = Q\,\mathrm{diag}(\lambda)\,Q^\top$ with a geometric spectrum of condition number `cond` and a
# Haar rotation $Q$. Rows $x_i\sim\mathcal N(0,\Sigma_x)$. For $\gamma>1$ the fraction of (numerically) zero
# eigenvalues is compared with the atom $1-1/\gamma$, and the nonzero ones with the normalised continuous part.

# %%
gammas = [0.25, 0.5, 1.0, 2.0]
Sigma_hist = haar_rotated_covariance(np.geomspace(cond, 1.0, K_hist) / np.geomspace(cond, 1.0, K_hist).mean(), rng)
# per gamma: the whitened spectra of n_hist_draws prompts, the zero fraction (atom) and the KS distance of the
# pooled nonzero eigenvalues, with the SE of the pooled cdf (over draws) at the sup point
samples = {g: whitened_spectrum_sample(Sigma_hist, g, n_hist_draws, rng=rng) for g in gammas}

fig, axes = plt.subplots(1, len(gammas), figsize=(13, 3.2))
for ax, (g, res) in zip(axes, samples.items()):
    lo, hi = mp_edges(g)
    nz = res.nonzero
    # histogram of the nonzero eigenvalues, normalised so that its mass is their fraction (1 - atom)
    w = np.full(nz.size, 1.0 / res.eigenvalues.size)
    ax.hist(nz, bins=40, weights=w / ((hi - lo) / 40), color=PALETTE[5], alpha=0.6, label="whitened $\\widetilde\\Sigma_M$")
    x = np.linspace(max(lo, 1e-4), hi, 400)
    ax.plot(x, mp_density(x, g), color=PALETTE[1], label="MP density")
    ax.axvline(lo, color="k", ls=":", lw=1); ax.axvline(hi, color="k", ls=":", lw=1)
    title = f"$\\gamma$ = {g:g} (K={K_hist}, M={res.M})"
    if g > 1:
        title += f"\natom: {res.zero_fraction:.3f} vs {mp_atom(g):.3f}"
    ax.set(title=title, xlabel="eigenvalue")
    if g == 1.0:
        ax.set_ylim(0, 1.5)
axes[0].set_ylabel("density"); axes[0].legend(loc="upper right")
fig.tight_layout()
save_figure(fig, "fig10_mp_histograms")

# %% [markdown]
# Without whitening the spectrum of $\widehat\Sigma_M$ is the (multiplicative) free convolution of the
# spectrum of $\Sigma_x$ with MP, spread over roughly $[\lambda_{\min}(\Sigma_x)a,\lambda_{\max}(\Sigma_x)b]$: the
# MP window applies to $\widetilde\Sigma_M$ only.

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.2))
g = 0.25
ax.hist(np.log10(samples[g].raw), bins=60, density=True, alpha=0.6, color=PALETTE[4], label="raw $\\widehat\\Sigma_M$")
ax.hist(np.log10(samples[g].eigenvalues.ravel()), bins=60, density=True, alpha=0.6, color=PALETTE[5], label="whitened $\\widetilde\\Sigma_M$")
ax.set(xlabel="log10 eigenvalue", ylabel="density", title=f"$\\gamma$ = {g}: whitening removes $\\Sigma_x$ (cond {cond:g})")
ax.legend()
save_figure(fig, "mp_raw_vs_whitened")

# %% tags=["nbval-check-output"]
for g in gammas:
    print(f"gamma={g:4}: KS distance {samples[g].ks:.2f}, zero fraction {samples[g].zero_fraction:.2f} (atom {mp_atom(g):.2f})")
# resolvent trace: (1/K) Tr (Σ̃_M + λ)^{-1} over the sampled spectra against m_γ(-λ) (atom included)
lam_probe = 0.5
for g in gammas:
    emp = np.mean(1.0 / (samples[g].eigenvalues.ravel() + lam_probe))
    print(f"gamma={g:4}: (1/K) Tr(S+0.5)^-1 / m_gamma(-0.5) = {emp / mp_stieltjes(-lam_probe + 0j, g).real:.2f}")

# %%
x_q, w_q = mp_quadrature(0.5, 8)
quad_err = max(abs(x_q**k @ w_q - mp_moment(k, 0.5)) / mp_moment(k, 0.5) for k in range(16))
print(f"8-node Gauss rule, gamma=0.5: largest relative error of the moments k < 16: {quad_err:.1e}")

# %% [markdown]
# ## 2. Non-asymptotic concentration: violation frequency against the bound
# For each $\gamma$ and $t$ we count the draws with an eigenvalue outside the window. "sharp" is the corrected
# window $[\max(0,|1-\sqrt\gamma|-t)^2,(1+\sqrt\gamma+t)^2]$ on the $\min(K,M)$ nonzero eigenvalues; "paper" is the
# literal $[(1-\sqrt\gamma-t)^2,(1+\sqrt\gamma+t)^2]$ on all $K$ eigenvalues (see the errata). A window is
# *checked* (non-vacuous) when its bound $2e^{-Mt^2/2}$ is at most 0.05.

# %%
conc_gammas = [1 / 16, 0.25, 0.5, 1.0, 2.0]
t_grid = np.array([0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4])
Sigma_conc = haar_rotated_covariance(np.geomspace(cond, 1.0, K_conc), rng)
conc = {g: concentration_experiment(K_conc, int(round(K_conc / g)), t_grid, n_draws=n_conc_draws, rng=rng, Sigma_x=Sigma_conc) for g in conc_gammas}
# binomial slack: a frequency may exceed a bound < 1 only by sampling noise; the excess in binomial SDs of the bound
table = concentration_table(conc_gammas, list(conc.values()))  # rows: gamma, M, t, freq (sharp), freq (paper), bound
conc_summary = concentration_summary(table)

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
for i, (g, res) in enumerate(conc.items()):
    axes[0].plot(res.t, np.maximum(res.frequency, 0.5 / n_conc_draws), "o-", color=PALETTE[i], label=f"$\\gamma$={g:g} (M={res.M})")
    axes[0].plot(res.t, res.bound, "--", color=PALETTE[i], lw=1)
axes[0].set(yscale="log", ylim=(0.3 / n_conc_draws, 1.5), xlabel="t", ylabel="violation frequency (sharp window)")
axes[0].set_title(f"dots: empirical ({n_conc_draws} draws, floor = 0 violations); dashed: $2e^{{-Mt^2/2}}$", fontsize=8)
axes[0].legend(fontsize=7)
ax = axes[1]
for i, (g, res) in enumerate(conc.items()):
    ax.scatter(np.full(res.n_draws, g) * np.exp(0.03 * rng.standard_normal(res.n_draws)), res.lambda_max, s=2, color=PALETTE[i], alpha=0.3)
    ax.scatter(np.full(res.n_draws, g) * np.exp(0.03 * rng.standard_normal(res.n_draws)), res.lambda_min, s=2, color=PALETTE[i], alpha=0.3)
gg = np.geomspace(1 / 20, 2.5, 200)
ax.plot(gg, (1 + np.sqrt(gg)) ** 2, "k-", lw=1, label="MP edges $(1\\pm\\sqrt{\\gamma})^2$")
ax.plot(gg, (1 - np.sqrt(gg)) ** 2, "k-", lw=1)
ax.set(xscale="log", yscale="log", xlabel="$\\gamma = K/M$", ylabel="extreme nonzero eigenvalues",
       title="extreme eigenvalues of $\\widetilde\\Sigma_M$ per draw")
ax.legend()
fig.tight_layout()
save_figure(fig, "fig10_mp_concentration")

# %%
print(f"{'gamma':>7} {'M':>5} {'t':>6} {'freq(sharp)':>11} {'freq(paper)':>11} {'bound':>9}")
for g, M, t, f, fp, b in table.rows:
    print(f"{g:7.4f} {int(M):5d} {t:6.3f} {f:11.4f} {fp:11.4f} {b:9.2e}")

# %% tags=["nbval-check-output"]
print("checked windows:", conc_summary.n_checked_windows, "violations in them:", conc_summary.violations_checked_windows)
print(f"largest (frequency - bound) in Monte Carlo s.d.: {float(np.max(table.excess / np.maximum(table.sd, 1e-12))):.1f}")

# %% [markdown]
# ## 3. Perturbation of the prompt Hessian
# $H_M=\widehat\Sigma_M+\lambda I=H_\infty+\Delta_M$. The residual of the exact second-order identity should be at
# rounding level for every prompt; the first-order term $-H_\infty^{-1}\Delta_MH_\infty^{-1}$ alone leaves an
# $O(\|\Delta_M\|^2)$ residual. The norm bound is only meaningful when $\|H_\infty^{-1}\|_2\|\Delta_M\|_2<1$.

# %%
Sigma_pert = haar_rotated_covariance(np.geomspace(4.0, 0.25, K_pert), rng)
M_grid = np.array([25, 50, 100, 200, 400, 800, 1600, 3200])
pert = resolvent_perturbation_sweep(Sigma_pert, lam, M_grid, n_draws=n_pert_draws, rng=rng)

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 3.6))
ax0.loglog(M_grid, [np.median(p.diff_norm) for p in pert.checks], "o-", label="$\\|H_M^{-1}-H_\\infty^{-1}\\|_2$ (median)")
bmed = [np.median(p.bound[p.applicable]) if p.applicable.any() else np.nan for p in pert.checks]
ax0.loglog(M_grid, bmed, "s--", label="norm bound (median, where applicable)")
ax0.loglog(M_grid, [np.median(p.delta_norm) for p in pert.checks], "^:", label="$\\|\\Delta_M\\|_2$ (median)")
ax0.set(xlabel="M", title=f"K={K_pert}, $\\lambda$={lam}"); ax0.legend(fontsize=7)
ax1.loglog(M_grid, [p.identity_residual.max() for p in pert.checks], "o-", label="second-order identity (max)")
ax1.loglog(M_grid, [np.median(p.first_order_residual) for p in pert.checks], "s--", label="first-order term only (median)")
ax1.set(xlabel="M", ylabel="relative residual"); ax1.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "mp_resolvent_perturbation")

# %%
print(f"identity residual: {pert.identity_residual_max:.1e}; largest norm / bound where the bound applies: {pert.norm_bound_ratio_max:.3f}")

# %% tags=["nbval-check-output"]
print("applicable prompts:", pert.applicable_prompts, "of", n_pert_draws * len(M_grid))

# %% [markdown]
# ## 4. Prompt excess risk against $d_{\rm eff}/M$
# $\mathcal R_{\rm prompt}(M)-\mathcal R_{\rm prompt}(\infty)$ for the ridge estimator $H_M^{-1}c_M$, paired Monte
# Carlo over prompts, against the first-order prediction $C/M$ (`prompt_excess_risk_first_order`) and against
# $d_{\rm eff}/M$ with $d_{\rm eff}=\operatorname{Tr}\Sigma_x(\Sigma_x+\lambda I)^{-1}$.

# %%
task = TaskConfig(K=K_pert, M=K_pert, r=task_rank, sigma=sigma, lam=lam, cond=cond)
C1 = prompt_excess_risk_first_order(task.Sigma_x, task.Sigma_beta, sigma, lam=lam)
d_eff = effective_dimension(task.Sigma_x, lam)
risk_M = np.array([40, 80, 160, 320, 640, 1280])
ex = np.array([prompt_excess_risk_mc(task.replace(M=int(M)), n_risk_prompts, rng) for M in risk_M])
# log-log slope (its SE from the per-M Monte Carlo errors, independent across M), and the asymptotic slope b as
# M -> infinity from the weighted fit of log excess on 1, log M, 1/M; the 1/M^2 term estimates the truncation
expo = excess_risk_exponent(risk_M, ex[:, 0], ex[:, 1])

fig, ax = plt.subplots(figsize=(6.4, 3.8))
ax.errorbar(risk_M, ex[:, 0], yerr=2 * ex[:, 1], fmt="o", label="Monte Carlo (±2 s.e.)")
ax.loglog(risk_M, C1 / risk_M, "-", label=f"first order $C/M$, C = {C1:.2f}")
ax.loglog(risk_M, d_eff / risk_M, "--", label=f"$d_{{\\rm eff}}/M$, $d_{{\\rm eff}}$ = {d_eff:.2f}")
ax.set(xscale="log", yscale="log", xlabel="prompt size M", ylabel="prompt excess risk",
       title=f"K={K_pert}, r={task_rank}, $\\sigma$={sigma}, $\\lambda$={lam}, cond={cond:g}")
ax.legend(fontsize=8)
save_figure(fig, "mp_prompt_excess_risk")

# %% tags=["nbval-check-output"]
print(f"log-log slope of the excess risk in M: {expo.slope:.2f}")

# %%
metrics = {
    "ks_max": max(s.ks for s in samples.values()), "ks_se_max": max(s.ks_se for s in samples.values()),
    "ks_finite_K_term": 1.0 / K_hist, "atom_error_gamma2": abs(samples[2.0].zero_fraction - mp_atom(2.0)),
    **asdict(conc_summary),
    "resolvent_identity_residual_max": float(pert.identity_residual_max), "first_order_residual_min": float(pert.first_order_residual_min),
    "norm_bound_ratio_max": pert.norm_bound_ratio_max, "norm_bound_applicable_prompts": pert.applicable_prompts,
    "norm_bound_tightness_largest_M": float(pert.tightness[-1]), "excess_risk_C": float(C1), "d_eff": float(d_eff),
    "excess_risk_slope": float(expo.slope), "excess_risk_slope_se": expo.slope_se,
    "excess_risk_slope_corrected": expo.corrected, "excess_risk_slope_corrected_se": expo.corrected_se,
    "excess_risk_slope_truncation": expo.truncation,
    "excess_risk_ratio_C_largest_M": float(ex[-1, 0] * risk_M[-1] / C1), "excess_risk_ratio_C_se": float(ex[-1, 1] * risk_M[-1] / C1),
    "excess_risk_over_deff_largest_M": float(ex[-1, 0] * risk_M[-1] / d_eff),
    "runtime_s": time.perf_counter() - t_start,
}
write_metrics(metrics)
print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in metrics.items()})
