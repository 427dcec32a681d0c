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
# # Replica and spectral order parameters (the main paper §9, §12.11, Figure 11)
# The order parameters of §9 are computed from the checkpoints of the existing online runs. The
# decoder-only run is `iclcore.richardson.decoder.online_decoder_training`, repeated over seeds. The
# encoder+decoder run is `iclcore.richardson.encdec.encdec_dynamics`. The panels are the dynamic
# order parameters against $s$, a top-spectra grid against the Marchenko–Pastur (MP) window, the
# prompt aspect $\gamma=K/M$, and the latent window $r/M$. Random quantities come with standard
# errors; the verdicts live in `book/reported/order_parameters.yml`.

# %% tags=["parameters", "hide-input"]
K = 16               # decoder-only: dimension of x, beta, d; range: [1, 1000]
M = 128              # decoder-only: prompt size; range: [1, 5000]
cond = 10.0          # condition number of Sigma_x (geometric, trace K); range: [1, inf)
sigma = 0.1          # label noise; range: [0, inf)
steps = 800          # outer steps s; range: [1, 10000]
batch = 1024         # fresh prompts per outer step; range: [1, 50000]
eta_frac = 0.5       # step size eta_frac / lambda_max(C); range: (0, 2)
n_checkpoints = 41   # checkpoints including step 0; range: [1, 500]
n_seeds = 4          # independent online runs (standard errors across seeds); range: [2, 100]
transient_frac = 0.1 # "after the transient" means s at least transient_frac * steps; range: [0, 1)
n_eval_prompts = 256 # held-out prompts for the spectra of P_s H_M; range: [1, 5000]
encdec_n_eval = 2048 # encoder+decoder held-out prompts (latent spectra); range: [1, 100000]
K_aspect = 32        # prompt-aspect sweep: dimension; range: [1, 1000]
gamma_min = 0.05     # prompt aspects K/M: n_gammas values from gamma_min to gamma_max (geometric); range: (0, 1)
gamma_max = 0.6      # range: (0, 1)
n_gammas = 6  # range: [1, 50]
n_aspect_prompts = 200  # prompts per aspect ratio (a standard error needs two draws); range: [2, 5000]
ks_alpha = 0.01      # level of the DKW band used as the KS error model; range: (0, 1)
seed = 0             # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"K": 64, "M": 480, "batch": 4096, "n_seeds": 8, "n_eval_prompts": 512, "encdec_n_eval": 8192,
                     "K_aspect": 64, "n_aspect_prompts": 400}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.linalg import haar_orthogonal
from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson import order_parameters as op
from iclcore.richardson.decoder import DecoderRun, max_stable_step, online_decoder_run
from iclcore.richardson.encdec import EncDecConfig, encdec_dynamics
from iclcore.spectra.mp import mp_cdf, mp_density

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)

# %% [markdown]
# ## Decoder only: order parameters along online runs
# The oracle $P_\star=BC^\dagger$ and $C$ have closed forms (`closed_form_moments`). Each seed is an
# independent online run. The exact population gradient-descent trajectory
# $P_s=P_\star+(P_0-P_\star)(I-\eta C)^s$ from the same $P_0=0$ is the noise-free reference.

# %%
cfg = TaskConfig(K=K, M=M, cond=cond, sigma=sigma)
mom = closed_form_moments(cfg)
P_star, H_inf, eta = oracle_preconditioner(mom), cfg.H_infinity, max_stable_step(mom.C, eta_frac)
ckpt = np.unique(np.linspace(0, steps, n_checkpoints).round().astype(int))
t0 = time.perf_counter()
# the n_seeds online runs are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
runs = [r.run for r in map_configs(online_decoder_run, [DecoderRun(cfg, eta, steps, batch, (seed, j), tuple(ckpt)) for j in range(n_seeds)],
                                   thread_budget(), label="decoder seeds")]
t_train = time.perf_counter() - t0
ops = [op.decoder_order_parameters(r_.P, P_star, mom.C, H_inf=H_inf) for r_ in runs]
# exact GD: its overlap weights in closed form (log space), defined even after P_s reaches P_star to rounding
st = op.seed_statistics(ops, op.gd_order_parameters(P_star, mom.C, H_inf, eta=eta, steps=ckpt), ckpt >= transient_frac * steps)
metrics = st.metrics() | dict(n_seeds=n_seeds, t_train=t_train, K=K, M=M, batch=batch, steps=steps)

# %% tags=["nbval-check-output"]
print(f"rho_pop: final {st.rho_final_mean:.2f} (GD {st.gd.rho_pop[-1]:.2f}), rho(I - P* H_inf) = {st.gd.rho_star:.2f}")
print(f"srank: final {st.srank_final_mean:.1f}, srank(P*) = {st.gd.srank_star:.1f}")

# %% [markdown]
# ## Encoder + decoder: latent order parameters
# The defaults of `EncDecConfig` are the run of the encoder–decoder chapter. $U_s$ and $P_{z,s}$ are
# given at every step. $A_{\infty,s}=U_s^\top H_\infty U_s$ with $H_\infty=\Sigma_x+\lambda I$.

# %%
ecfg = EncDecConfig(n_eval=encdec_n_eval)
t0 = time.perf_counter()
dyn = encdec_dynamics(ecfg)
t_encdec = time.perf_counter() - t0
H_inf_e = dyn.model.Sigma_x + dyn.model.lam * np.eye(ecfg.K)
lop = op.latent_order_parameters(dyn.U, dyn.P, dyn.P_star, U_star=dyn.model.U_star, H_inf=H_inf_e)
s_e = np.arange(dyn.U.shape[0])
metrics.update(lop.final_metrics(), t_encdec=t_encdec)

# %% [markdown]
# ## Gauge invariance on the trained objects
# A random orthogonal change of ambient coordinates acts on the decoder-only objects:
# $P\mapsto QPQ^\top$, $C\mapsto QCQ^\top$, $H_\infty\mapsto QH_\infty Q^\top$. A random latent rotation
# acts on the encoder+decoder objects: $U\mapsto UO$, $P_z\mapsto O^\top P_zO$. We record the largest
# relative change of any order parameter. The raw matrices do change; the macroscopic quantities do
# not.

# %%
Q, O = haar_orthogonal(K, rng), haar_orthogonal(ecfg.r, rng)
metrics["gauge_max_rel_diff"] = max(op.decoder_gauge_change(runs[0].P, P_star, mom.C, H_inf=H_inf, Q=Q, reference=ops[0]),
                                    op.latent_gauge_change(dyn.U, dyn.P, dyn.P_star, U_star=dyn.model.U_star, H_inf=H_inf_e, O=O, reference=lop))
metrics["gauge_raw_change"] = op.conjugation_change(runs[0].P[-1], Q)
print(f"largest relative change of an order parameter under the gauge: {metrics['gauge_max_rel_diff']:.1e}")

# %% [markdown]
# ## Figure 11 (a): dynamic order parameters against $s$

# %%
fig, ax = plt.subplots(2, 2, figsize=(10, 7))
a, m_, e_ = ax[0, 0], st.rho.mean(axis=0), st.rho_se
a.fill_between(ckpt, m_ - 3 * e_, m_ + 3 * e_, color=PALETTE[0], alpha=0.3, lw=0)
a.plot(ckpt, m_, color=PALETTE[0], label=r"online $\rho(I-P_sH_\infty)$ (mean $\pm3$ SE)")
a.plot(ckpt, st.gd.rho_pop, "--", color=PALETTE[1], label="exact population GD")
a.axhline(st.gd.rho_star, color="gray", ls=":", label=r"$\rho(I-P_\star H_\infty)$")
a.set(xlabel="outer step $s$", ylabel=r"$\rho_s^{\rm pop}$", title="decoder only: contraction")
a = ax[0, 1]
a.plot(ckpt[1:], st.srank.mean(axis=0)[1:], color=PALETTE[0], label=r"srank$(P_s)$")
a.axhline(st.gd.srank_star, color=PALETTE[0], ls=":", label=r"srank$(P_\star)$")
a.set(xlabel="outer step $s$", ylabel="stable rank", title=r"decoder only: rank and $H(\Omega_s)$")
b = a.twinx()
b.plot(ckpt, st.entropy.mean(axis=0), color=PALETTE[2], label=r"$H(\Omega_s)$")
b.plot(ckpt[1:], st.top_energy.mean(axis=0)[1:], color=PALETTE[3], label=r"$E_{\rm top,1}(P_s)$")
b.set(ylim=(0, 1.05), ylabel=r"$H(\Omega_s)$, $E_{\rm top,1}$")
h1, l1 = a.get_legend_handles_labels(); h2, l2 = b.get_legend_handles_labels()
a.legend(h1 + h2, l1 + l2, fontsize=8, loc="center right")
a = ax[1, 0]
a.semilogy(s_e, lop.sin2, color=PALETTE[0], label=r"$\sin^2(U_s,U_\star)$")
a.semilogy(s_e, lop.rho_pop, color=PALETTE[1], label=r"$\rho(I-P_{z,s}A_{\infty,s})$")
a.semilogy(s_e, lop.rho_oracle, ":", color=PALETTE[1], label=r"moving oracle $\rho(I-P_z^\star(U_s)A_{\infty,s})$")
a.set(xlabel="outer step $s$", title="encoder+decoder: subspace and contraction")
a = ax[1, 1]
a.plot(s_e[1:], lop.srank[1:], color=PALETTE[0], label=r"srank$(P_{z,s})$")
a.plot(s_e, lop.srank_oracle, ":", color=PALETTE[0], label=r"srank$(P_z^\star(U_s))$")
a.plot(s_e[1:], lop.top_energy[1:], color=PALETTE[3], label=r"$E_{\rm top,1}(P_{z,s})$")
a.plot(s_e, lop.top_energy_oracle, ":", color=PALETTE[3], label=r"$E_{\rm top,1}(P_z^\star(U_s))$")
a.set(xlabel="outer step $s$", title="encoder+decoder: latent preconditioner rank")
for a in (ax[0, 0], ax[1, 0], ax[1, 1]):
    a.legend(fontsize=8)
fig.tight_layout()
save_figure(fig, "fig11a_dynamic_order_parameters");

# %% [markdown]
# ## Figure 11 (b): top-spectra grid against the MP window
# Top row: eigenvalues of $P_sH_M$ on held-out prompts (seed 0) at four checkpoints. The window is
# $[\lambda_{\min}(S)(1-\sqrt{\gamma})^2,\ \lambda_{\max}(S)(1+\sqrt{\gamma})^2]$ with
# $S=\Sigma^{1/2}P_\star\Sigma^{1/2}$ and $\gamma=K/M$: the asymptotic window of the *oracle*. Bottom
# row: the whitened latent Gram matrix $S_s^{-1/2}U_s^\top\widehat\Sigma_MU_s S_s^{-1/2}$, with
# $S_s=U_s^\top\Sigma_xU_s$, of the encoder+decoder run at four steps. It is drawn against the MP
# density with ratio $r/M$.

# %%
ev_prompts = sample_prompt_statistics(cfg, n_eval_prompts, rng)
gidx = [int(np.argmin(np.abs(ckpt - s))) for s in (steps // 40, 3 * steps // 40, steps // 4, steps)]  # top-spectra grid
e_idx = [int(round(f * ecfg.steps)) for f in (0.0, 0.05, 0.25, 1.0)]
gam_r = ecfg.r / ecfg.M
grid = op.top_spectra_grid([runs[0].P[i] for i in gidx], ev_prompts.H_M, [dyn.U[s] for s in e_idx], prompts=dyn.test, Sigma=cfg.Sigma_x,
                           P_star=P_star, gamma=K / M, Sigma_x=dyn.model.Sigma_x, lam=ecfg.lam, gamma_latent=gam_r)
fig, ax = plt.subplots(2, 4, figsize=(13, 6))
for j, (i, spec, s, w) in enumerate(zip(gidx, grid.decoder, e_idx, grid.latent)):
    ax[0, j].hist(spec, bins=60, density=True, color=PALETTE[0], alpha=0.7)
    for x in grid.decoder_window:
        ax[0, j].axvline(x, color="k", ls="--", lw=1)
    ax[0, j].set(title=f"$P_sH_M$, $s={ckpt[i]}$", xlabel="eigenvalue")
    ax[1, j].hist(w, bins=60, density=True, color=PALETTE[1], alpha=0.7)
    x = np.linspace(0.3, 2.0, 400)
    ax[1, j].plot(x, mp_density(x, gam_r), "k", lw=1)
    ax[1, j].set(title=f"whitened $A_s$, $s={s}$ (KS {grid.latent_ks[j]:.3f})", xlabel="eigenvalue")
fig.tight_layout()
save_figure(fig, "fig11b_top_spectra_grid");
metrics.update(grid.metrics())

# %% [markdown]
# ## Figure 11 (c): prompt aspect $\gamma=K/M$
# For each $\gamma$ we set $M=K/\gamma$ and draw held-out prompts with an isotropic design and with a
# design of condition 10. Left: $\kappa(H_M)$ against the MP prediction
# $\kappa(\Sigma)\bigl((1+\sqrt{\gamma})/(1-\sqrt{\gamma})\bigr)^2$. That prediction is exact for
# $\Sigma\propto I$ in the limit and an upper bound otherwise. Right: the contraction
# $\rho(I-P_\star(M)H_M)$ of the oracle at that $M$, prompt by prompt (mean and SE) and in
# population, against $2\sqrt{\gamma}/(1+\gamma)$. That value is the best contraction of any multiple of
# $\Sigma^{-1}$ in the MP limit.

# %%
asp = op.prompt_aspect_sweep(rng, K=K_aspect, gammas=np.geomspace(gamma_min, gamma_max, n_gammas), cond=cond, sigma=sigma, n_prompts=n_aspect_prompts)
g_eff = asp.iso.gamma
fig, ax = plt.subplots(1, 2, figsize=(10, 4))
for cnd, sw, col, mp_ in ((1.0, asp.iso, PALETTE[0], asp.kappa_mp_iso), (cond, asp.conditioned, PALETTE[1], asp.kappa_mp_cond)):
    ax[0].errorbar(g_eff, sw.kappa_mean, yerr=3 * sw.kappa_se, fmt="o", color=col, label=rf"$\kappa(H_M)$, $\kappa(\Sigma)={cnd:g}$")
    ax[0].plot(g_eff, mp_, "-", color=col, label=r"MP $\kappa(\Sigma)((1+\sqrt{\gamma})/(1-\sqrt{\gamma}))^2$, $\kappa(\Sigma)=$" + f"{cnd:g}")
    ax[1].errorbar(g_eff, sw.rho_mean, yerr=3 * sw.rho_se, fmt="o", color=col, label=rf"$\rho(I-P_\star H_M)$, $\kappa(\Sigma)={cnd:g}$")
    ax[1].plot(g_eff, sw.rho_population, "x", color=col, label=rf"$\rho(I-P_\star H_\infty)$, $\kappa(\Sigma)={cnd:g}$")
ax[1].plot(g_eff, asp.rho_mp, "k-", label=r"MP: $2\sqrt{\gamma}/(1+\gamma)$")
ax[0].set(xlabel=r"$\gamma=K/M$", ylabel=r"$\kappa$", yscale="log", title="condition number against prompt aspect")
ax[1].set(xlabel=r"$\gamma=K/M$", ylabel=r"$\rho$", title="contraction against prompt aspect")
for a in ax:
    a.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig11c_prompt_aspect");
metrics.update(asp.metrics())

# %% [markdown]
# ## Figure 11 (d): latent window $r/M$
# Left: the spectrum of $A_S=U_S^\top H_MU_S$ (final step, held-out prompts) against the scaled window
# $[\lambda_{\min}(S)(1-\sqrt{r/M})^2+\lambda,\ \lambda_{\max}(S)(1+\sqrt{r/M})^2+\lambda]$ with
# $S=U_S^\top\Sigma_xU_S$. Right: the empirical CDF of the whitened latent Gram spectrum against the MP
# law $F_{\rm MP,r/M}$. It is also drawn against an independent reference sample of
# $\mathrm{Wishart}_r(M,I)/M$ eigenvalues (the exact finite-$r$ law). The KS distances come with the
# two-sample DKW level at $\alpha$ = `ks_alpha`. The sizes passed are the numbers of prompts, which is
# conservative.

# %%
lw = op.latent_window(rng, dyn.U[-1], dyn.test, Sigma_x=dyn.model.Sigma_x, lam=ecfg.lam, H_inf=H_inf_e, M=ecfg.M, alpha=ks_alpha)
fig, ax = plt.subplots(1, 2, figsize=(10, 4))
ax[0].hist(lw.spectrum_A, bins=80, density=True, color=PALETTE[1], alpha=0.7, label=r"spec$(A_S)$")
for x, col, ls, lab in zip(lw.window_A + lw.population_edges, ("k", "k", "gray", "gray"), ("--", "--", ":", ":"), (None, None, r"spec$(A_{\infty,S})$ edges", None)):
    ax[0].axvline(x, color=col, ls=ls, lw=1, label=lab)
ax[0].set(xlabel="eigenvalue", title=rf"latent window, $r/M={gam_r:.3f}$")
ax[0].legend(fontsize=8)
for x, fmt, col, lab in ((lw.whitened, "-", PALETTE[1], "whitened latent spectrum"), (lw.reference, "--", PALETTE[2], r"reference Wishart$_r(M)/M$")):
    ax[1].plot(np.sort(x), np.arange(1, x.size + 1) / x.size, fmt, color=col, label=lab)  # empirical CDF
xg = np.linspace(min(lw.whitened.min(), lw.reference.min()), max(lw.whitened.max(), lw.reference.max()), 400)
ax[1].plot(xg, mp_cdf(xg, gam_r), "k:", label=r"$F_{\rm MP,r/M}$")
ax[1].set(xlabel="eigenvalue", ylabel="CDF", title=f"KS to MP {lw.ks_latent_mp:.3f}, to reference {lw.ks_latent_reference:.3f}")
ax[1].legend(fontsize=8)
fig.tight_layout()
save_figure(fig, "fig11d_latent_window");
metrics.update(lw.metrics())

# %% tags=["nbval-check-output"]
print(f"KS(latent, MP) = {lw.ks_latent_mp:.2f}, KS(reference, MP) = {lw.ks_reference_mp:.2f}")
print(f"fraction of whitened latent eigenvalues in the MP window: {lw.frac_latent:.2f}")

# %%
metrics["time_total"] = time.perf_counter() - t_start
write_metrics(metrics)
print(f"total time {metrics['time_total']:.0f} s (training {t_train:.0f} s)")
