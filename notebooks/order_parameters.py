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
from iclcore.lsq.dynamics import gd_trajectory, modal_weights
from iclcore.lsq.lowrank import latent_systems
from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner
from iclcore.lsq.tasks import TaskConfig, sample_prompt_statistics
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.decoder import DecoderRun, max_stable_step, online_decoder_run
from iclcore.richardson.encdec import EncDecConfig, encdec_dynamics
from iclcore.richardson.order_parameters import (
    condition_number,
    decoder_order_parameters,
    iteration_spectral_radius,
    ks_distance_mp,
    latent_order_parameters,
    latent_population_system,
    mp_condition_number,
    mp_optimal_contraction,
    mp_window,
    preconditioned_spectrum,
    whitened_spectrum,
)
from iclcore.spectra.mp import mp_cdf, mp_density, mp_sample_eigenvalues
from iclcore.stats import ks_critical_value, ks_two_sample
from iclcore.stats import standard_error as se  # along axis 0: the seeds

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)
metrics = {}

# %% [markdown]
# ## Decoder only: order parameters along online runs
# The oracle $P_\star=BC^\dagger$ and $C$ have closed forms (`closed_form_moments`). Each seed is an
# independent online run. The exact population gradient-descent trajectory
# $P_s=P_\star+(P_0-P_\star)(I-\eta C)^s$ from the same $P_0=0$ is the noise-free reference.

# %%
cfg = TaskConfig(K=K, M=M, cond=cond, sigma=sigma)
mom = closed_form_moments(cfg)
P_star = oracle_preconditioner(mom)
H_inf = cfg.H_infinity
eta = max_stable_step(mom.C, eta_frac)
ckpt = np.unique(np.linspace(0, steps, n_checkpoints).round().astype(int))
grid_steps = [steps // 40, 3 * steps // 40, steps // 4, steps]  # checkpoints of the top-spectra grid
gammas = np.geomspace(gamma_min, gamma_max, n_gammas)
t0 = time.perf_counter()
# the n_seeds online runs are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
jobs = [DecoderRun(cfg, eta, steps, batch, (seed, j), tuple(ckpt)) for j in range(n_seeds)]
runs = [r.run for r in map_configs(online_decoder_run, jobs, thread_budget(), label="decoder seeds")]
t_train = time.perf_counter() - t0
ops = [decoder_order_parameters(r_.P, P_star, mom.C, H_inf) for r_ in runs]
# exact GD: its overlap weights in closed form (log space), defined even after P_s reaches P_star to rounding
op_gd = decoder_order_parameters(gd_trajectory(np.zeros((K, K)), P_star, mom.C, eta, ckpt), P_star, mom.C, H_inf,
                                 weights=modal_weights(np.zeros((K, K)), P_star, mom.C, eta, ckpt))
stack = lambda f: np.array([getattr(o, f) for o in ops])  # noqa: E731  (n_seeds, T)
rho, srank, etop, ent = stack("rho_pop"), stack("srank"), stack("top_energy"), stack("entropy")
after = ckpt >= transient_frac * steps
drho = np.diff(rho, axis=1)[:, after[1:]]       # per-seed increments after the transient
z_inc = drho.mean(axis=0) / np.maximum(se(drho), 1e-300)
metrics.update(
    rho_pop_final_mean=rho[:, -1].mean(), rho_pop_final_se=se(rho)[-1], rho_pop_gd_final=op_gd.rho_pop[-1],
    rho_pop_star=op_gd.rho_star, rho_max_increase_z=z_inc.max(), rho_increment_se_max=se(drho).max(),
    rho_gd_max_increment_after_transient=float(np.max(np.diff(op_gd.rho_pop[after]))),
    srank_final_mean=srank[:, -1].mean(), srank_final_se=se(srank)[-1], srank_gd_final=op_gd.srank[-1],
    srank_star=op_gd.srank_star, srank_rel_gap=abs(srank[:, -1].mean() - op_gd.srank_star) / op_gd.srank_star,
    top_energy_final_mean=etop[:, -1].mean(), top_energy_star=op_gd.top_energy_star,
    entropy_gd_final=op_gd.entropy[-1], entropy_final_mean=ent[:, -1].mean(), entropy_final_se=se(ent)[-1], entropy_min_mean=ent.mean(axis=0).min(),
    n_seeds=n_seeds, t_train=t_train, K=K, M=M, batch=batch, steps=steps,
)

# %% tags=["nbval-check-output"]
print(f"rho_pop: final {rho[:, -1].mean():.2f} (GD {op_gd.rho_pop[-1]:.2f}), rho(I - P* H_inf) = {op_gd.rho_star:.2f}")
print(f"srank: final {srank[:, -1].mean():.1f}, srank(P*) = {op_gd.srank_star:.1f}")

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
lop = latent_order_parameters(dyn.U, dyn.P, dyn.P_star, dyn.model.U_star, H_inf_e)
s_e = np.arange(dyn.U.shape[0])
metrics.update(
    sin2_final=lop.sin2[-1], rho_z_final=lop.rho_pop[-1], rho_z_oracle_final=lop.rho_oracle[-1],
    srank_z_final=lop.srank[-1], srank_z_oracle_final=lop.srank_oracle[-1],
    srank_z_rel_gap=abs(lop.srank[-1] - lop.srank_oracle[-1]) / lop.srank_oracle[-1], t_encdec=t_encdec,
)

# %% [markdown]
# ## Gauge invariance on the trained objects
# A random orthogonal change of ambient coordinates acts on the decoder-only objects:
# $P\mapsto QPQ^\top$, $C\mapsto QCQ^\top$, $H_\infty\mapsto QH_\infty Q^\top$. A random latent rotation
# acts on the encoder+decoder objects: $U\mapsto UO$, $P_z\mapsto O^\top P_zO$. We record the largest
# relative change of any order parameter. The raw matrices do change; the macroscopic quantities do
# not.

# %%
Q = haar_orthogonal(K, rng)
rot = lambda A: Q @ A @ Q.T  # noqa: E731
g1 = decoder_order_parameters(rot(runs[0].P), rot(P_star), rot(mom.C), rot(H_inf))
O = haar_orthogonal(ecfg.r, rng)
g2 = latent_order_parameters(dyn.U @ O, O.T @ dyn.P @ O, O.T @ dyn.P_star @ O, dyn.model.U_star, H_inf_e)
rel = lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.maximum(np.abs(np.asarray(b)), 1e-12)))  # noqa: E731
gauge_diffs = [rel(getattr(g1, f), getattr(ops[0], f)) for f in ("rho_pop", "srank", "top_energy", "entropy")]
gauge_diffs += [rel(getattr(g2, f), getattr(lop, f)) for f in lop.__dataclass_fields__]
metrics["gauge_max_rel_diff"] = max(gauge_diffs)
metrics["gauge_raw_change"] = float(np.linalg.norm(rot(runs[0].P[-1]) - runs[0].P[-1]) / np.linalg.norm(runs[0].P[-1]))
print(f"largest relative change of an order parameter under the gauge: {max(gauge_diffs):.1e}")

# %% [markdown]
# ## Figure 11 (a): dynamic order parameters against $s$

# %%
fig, ax = plt.subplots(2, 2, figsize=(10, 7))
a = ax[0, 0]
m_, e_ = rho.mean(axis=0), se(rho)
a.fill_between(ckpt, m_ - 3 * e_, m_ + 3 * e_, color=PALETTE[0], alpha=0.3, lw=0)
a.plot(ckpt, m_, color=PALETTE[0], label=r"online $\rho(I-P_sH_\infty)$ (mean $\pm3$ SE)")
a.plot(ckpt, op_gd.rho_pop, "--", color=PALETTE[1], label="exact population GD")
a.axhline(op_gd.rho_star, color="gray", ls=":", label=r"$\rho(I-P_\star H_\infty)$")
a.set(xlabel="outer step $s$", ylabel=r"$\rho_s^{\rm pop}$", title="decoder only: contraction")
a.legend(fontsize=8)
a = ax[0, 1]
a.plot(ckpt[1:], srank.mean(axis=0)[1:], color=PALETTE[0], label=r"srank$(P_s)$")
a.axhline(op_gd.srank_star, color=PALETTE[0], ls=":", label=r"srank$(P_\star)$")
a.set(xlabel="outer step $s$", ylabel="stable rank", title=r"decoder only: rank and $H(\Omega_s)$")
b = a.twinx()
b.plot(ckpt, ent.mean(axis=0), color=PALETTE[2], label=r"$H(\Omega_s)$")
b.plot(ckpt[1:], etop.mean(axis=0)[1:], color=PALETTE[3], label=r"$E_{\rm top,1}(P_s)$")
b.set(ylim=(0, 1.05), ylabel=r"$H(\Omega_s)$, $E_{\rm top,1}$")
h1, l1 = a.get_legend_handles_labels(); h2, l2 = b.get_legend_handles_labels()
a.legend(h1 + h2, l1 + l2, fontsize=8, loc="center right")
a = ax[1, 0]
a.semilogy(s_e, lop.sin2, color=PALETTE[0], label=r"$\sin^2(U_s,U_\star)$")
a.semilogy(s_e, lop.rho_pop, color=PALETTE[1], label=r"$\rho(I-P_{z,s}A_{\infty,s})$")
a.semilogy(s_e, lop.rho_oracle, ":", color=PALETTE[1], label=r"moving oracle $\rho(I-P_z^\star(U_s)A_{\infty,s})$")
a.set(xlabel="outer step $s$", title="encoder+decoder: subspace and contraction")
a.legend(fontsize=8)
a = ax[1, 1]
a.plot(s_e[1:], lop.srank[1:], color=PALETTE[0], label=r"srank$(P_{z,s})$")
a.plot(s_e, lop.srank_oracle, ":", color=PALETTE[0], label=r"srank$(P_z^\star(U_s))$")
a.plot(s_e[1:], lop.top_energy[1:], color=PALETTE[3], label=r"$E_{\rm top,1}(P_{z,s})$")
a.plot(s_e, lop.top_energy_oracle, ":", color=PALETTE[3], label=r"$E_{\rm top,1}(P_z^\star(U_s))$")
a.set(xlabel="outer step $s$", title="encoder+decoder: latent preconditioner rank")
a.legend(fontsize=8)
fig.tight_layout()
save_figure(fig, "fig11a_dynamic_order_parameters")
plt.show()

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
gidx = [int(np.argmin(np.abs(ckpt - s))) for s in grid_steps]
Sroot = np.linalg.cholesky(cfg.Sigma_x)
Ssym = Sroot.T @ (0.5 * (P_star + P_star.T)) @ Sroot
win_dec = mp_window(Ssym, K / M)
gam_r = ecfg.r / ecfg.M
e_idx = [int(round(f * ecfg.steps)) for f in (0.0, 0.05, 0.25, 1.0)]
Hgram = dyn.test.H - ecfg.lam * np.eye(ecfg.K)  # U^T (Sigma_hat) U is the Gram part of A_s
fig, ax = plt.subplots(2, 4, figsize=(13, 6))
max_imag = 0.0
for j, i in enumerate(gidx):
    evs = np.linalg.eigvals(runs[0].P[i] @ ev_prompts.H_M)
    max_imag = max(max_imag, float(np.max(np.abs(evs.imag)) / max(np.max(np.abs(evs)), 1e-300)))
    spec = preconditioned_spectrum(runs[0].P[i], ev_prompts.H_M, imag_rtol=0.05).ravel()
    a = ax[0, j]
    a.hist(spec, bins=60, density=True, color=PALETTE[0], alpha=0.7)
    for w in win_dec:
        a.axvline(w, color="k", ls="--", lw=1)
    a.set(title=f"$P_sH_M$, $s={ckpt[i]}$", xlabel="eigenvalue")
inside_dec = np.mean((spec >= win_dec[0]) & (spec <= win_dec[1]))
ks_lat = []
for j, s in enumerate(e_idx):
    U = dyn.U[s]
    Sg = U.T @ dyn.model.Sigma_x @ U
    w = whitened_spectrum(U.T @ Hgram @ U, Sg).ravel()
    ks_lat.append(ks_distance_mp(w, gam_r))
    a = ax[1, j]
    a.hist(w, bins=60, density=True, color=PALETTE[1], alpha=0.7)
    x = np.linspace(0.3, 2.0, 400)
    a.plot(x, mp_density(x, gam_r), "k", lw=1)
    a.set(title=f"whitened $A_s$, $s={s}$ (KS {ks_lat[-1]:.3f})", xlabel="eigenvalue")
fig.tight_layout()
save_figure(fig, "fig11b_top_spectra_grid")
plt.show()
metrics.update(frac_PH_in_window_final=inside_dec, max_imag_rel_PH=max_imag, ks_latent_grid_max=max(ks_lat))

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
def aspect_row(gamma, cnd):
    Mg = int(round(K_aspect / gamma))
    c = TaskConfig(K=K_aspect, M=Mg, cond=cnd, spectrum="identity" if cnd == 1 else "geometric", sigma=sigma)
    Pm = oracle_preconditioner(closed_form_moments(c))
    pr = sample_prompt_statistics(c, n_aspect_prompts, rng)
    kap = condition_number(pr.H_M)
    rh = iteration_spectral_radius(Pm, pr.H_M)
    return (kap.mean(), se(kap), rh.mean(), se(rh),
            iteration_spectral_radius(Pm, c.H_infinity), K_aspect / Mg)

rows = {cnd: np.array([aspect_row(g, cnd) for g in gammas]) for cnd in (1.0, cond)}
g_eff = rows[1.0][:, 5]
kap_mp_iso = np.array([mp_condition_number(1.0, g) for g in g_eff])
kap_mp_cond = np.array([mp_condition_number(cond, g) for g in g_eff])
rho_mp = np.array([mp_optimal_contraction(g) for g in g_eff])
fig, ax = plt.subplots(1, 2, figsize=(10, 4))
for cnd, col, mp_ in ((1.0, PALETTE[0], kap_mp_iso), (cond, PALETTE[1], kap_mp_cond)):
    r_ = rows[cnd]
    ax[0].errorbar(g_eff, r_[:, 0], yerr=3 * r_[:, 1], fmt="o", color=col, label=rf"$\kappa(H_M)$, $\kappa(\Sigma)={cnd:g}$")
    ax[0].plot(g_eff, mp_, "-", color=col, label=r"MP $\kappa(\Sigma)((1+\sqrt{\gamma})/(1-\sqrt{\gamma}))^2$, $\kappa(\Sigma)=$" + f"{cnd:g}")
    ax[1].errorbar(g_eff, r_[:, 2], yerr=3 * r_[:, 3], fmt="o", color=col, label=rf"$\rho(I-P_\star H_M)$, $\kappa(\Sigma)={cnd:g}$")
    ax[1].plot(g_eff, r_[:, 4], "x", color=col, label=rf"$\rho(I-P_\star H_\infty)$, $\kappa(\Sigma)={cnd:g}$")
ax[1].plot(g_eff, rho_mp, "k-", label=r"MP: $2\sqrt{\gamma}/(1+\gamma)$")
ax[0].set(xlabel=r"$\gamma=K/M$", ylabel=r"$\kappa$", yscale="log", title="condition number against prompt aspect")
ax[1].set(xlabel=r"$\gamma=K/M$", ylabel=r"$\rho$", title="contraction against prompt aspect")
for a in ax:
    a.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig11c_prompt_aspect")
plt.show()
iso = rows[1.0]
metrics.update(
    kappa_iso_max_rel_dev=float(np.max(np.abs(iso[:, 0] / kap_mp_iso - 1))),
    kappa_cond_below_mp_frac=float(np.mean(rows[cond][:, 0] <= kap_mp_cond)),
    rho_iso_max_rel_dev=float(np.max(np.abs(iso[:, 2] / rho_mp - 1))),
    rho_iso_small_gamma=iso[0, 2], rho_iso_small_gamma_se=iso[0, 3], rho_mp_small_gamma=rho_mp[0],
    rho_iso_large_gamma=iso[-1, 2], rho_mp_large_gamma=rho_mp[-1], gamma_small=g_eff[0], gamma_large=g_eff[-1],
)

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
U = dyn.U[-1]
Sg = U.T @ dyn.model.Sigma_x @ U
A_fin = latent_systems(U, dyn.test)[0][0]
specA = np.linalg.eigvalsh(A_fin).ravel()
winA = mp_window(Sg, gam_r, shift=ecfg.lam)
A_inf = latent_population_system(U, H_inf_e)
lo_inf, hi_inf = np.linalg.eigvalsh(A_inf)[[0, -1]]
w_fin = whitened_spectrum(U.T @ Hgram @ U, Sg).ravel()
n_p = dyn.test.n
ref = mp_sample_eigenvalues(ecfg.r, ecfg.M, n_p, rng).ravel()
ks_lat_mp = ks_distance_mp(w_fin, gam_r)
ks_ref_mp = ks_distance_mp(ref, gam_r)
ks_lat_ref = ks_two_sample(w_fin, ref)
ks_crit = ks_critical_value(n_p, n_p, alpha=ks_alpha)
lo_w, hi_w = mp_window(np.eye(ecfg.r), gam_r)
frac_lat = np.mean((w_fin >= lo_w) & (w_fin <= hi_w))
frac_ref = np.mean((ref >= lo_w) & (ref <= hi_w))
frac_se = np.sqrt(frac_ref * (1 - frac_ref) / n_p) * np.sqrt(2)  # per-prompt (conservative) binomial SE of the difference
fig, ax = plt.subplots(1, 2, figsize=(10, 4))
ax[0].hist(specA, bins=80, density=True, color=PALETTE[1], alpha=0.7, label=r"spec$(A_S)$")
for w in winA:
    ax[0].axvline(w, color="k", ls="--", lw=1)
ax[0].axvline(lo_inf, color="gray", ls=":", lw=1, label=r"spec$(A_{\infty,S})$ edges")
ax[0].axvline(hi_inf, color="gray", ls=":", lw=1)
ax[0].set(xlabel="eigenvalue", title=rf"latent window, $r/M={gam_r:.3f}$")
ax[0].legend(fontsize=8)
xs = np.sort(w_fin)
ax[1].plot(xs, np.arange(1, xs.size + 1) / xs.size, color=PALETTE[1], label="whitened latent spectrum")
xr = np.sort(ref)
ax[1].plot(xr, np.arange(1, xr.size + 1) / xr.size, "--", color=PALETTE[2], label=r"reference Wishart$_r(M)/M$")
xg = np.linspace(min(xs[0], xr[0]), max(xs[-1], xr[-1]), 400)
ax[1].plot(xg, mp_cdf(xg, gam_r), "k:", label=r"$F_{\rm MP,r/M}$")
ax[1].set(xlabel="eigenvalue", ylabel="CDF", title=f"KS to MP {ks_lat_mp:.3f}, to reference {ks_lat_ref:.3f}")
ax[1].legend(fontsize=8)
fig.tight_layout()
save_figure(fig, "fig11d_latent_window")
plt.show()
metrics.update(
    ks_latent_mp=ks_lat_mp, ks_reference_mp=ks_ref_mp, ks_latent_reference=ks_lat_ref, ks_crit=ks_crit,
    frac_latent_in_window=frac_lat, frac_reference_in_window=frac_ref, frac_window_se=frac_se,
    frac_A_in_scaled_window=float(np.mean((specA >= winA[0]) & (specA <= winA[1]))), gamma_latent=gam_r,
    n_latent_prompts=n_p,
)

# %% tags=["nbval-check-output"]
print(f"KS(latent, MP) = {ks_lat_mp:.2f}, KS(reference, MP) = {ks_ref_mp:.2f}")
print(f"fraction of whitened latent eigenvalues in the MP window: {frac_lat:.2f}")

# %%
metrics["time_total"] = time.perf_counter() - t_start
write_metrics(metrics)
print(f"total time {metrics['time_total']:.0f} s (training {t_train:.0f} s)")
