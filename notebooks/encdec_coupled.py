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
# # Encoder + decoder: a decoder tracking a moving oracle, and the end-to-end risk split
# This notebook recomputes the low-rank encoder+decoder run of the main paper §6 (Figure 1 bottom panels,
# Figure 2 right, Figure 4, Figure 7 and the §11 numbers at $s=420$) and the experiment report §5.2 (Table 3 and
# Figure 3). The encoder is the dictionary $G_s$ of §5.1 fitted to the prompts' ridge estimates on a
# pool of training prompts, with subspace $U_s=G_s(G_s^\top G_s)^{-1/2}$; the decoder $P_{z,s}$ is trained
# by gradient descent on the moving latent distribution $(A_s,d_s)=(U_s^\top H_MU_s,U_s^\top c_M)$. Every
# exact statement is checked at every step: the boxed tracking identity, the Richardson identity
# $z_L-z^\dagger=-(I-P_{z,s}A_s)^Lz^\dagger$, the risk decomposition, the §6.6 product/sum formula, and the
# §6.4 continuous-time limit.

# %% tags=["parameters", "hide-input"]
K = 16              # ambient dimension of x and beta; range: [1, 200]
r = 3               # task rank (latent dimension; one eigenvalue mu_1..mu_3 each); range: [3, 3]
M = 64              # prompt length; range: [1, 1000]
sigma = 0.3         # label noise; range: [0, inf)
lam = 0.01          # ridge in H_M; range: [0, inf)
cond_x = 8.0        # condition number of Sigma_x (geometric spectrum with trace K); range: [1, inf)
mu_1 = 0.2          # eigenvalues of Sigma_z ...; range: (0, inf)
mu_2 = 0.08         # range: (0, inf)
mu_3 = 0.03         # range: (0, inf)
n_train = 64        # pool of training prompts (encoder and decoder moments); range: [1, 1000]
n_eval = 2048       # held-out prompts for the risks; range: [1, 200000]
L = 7               # Richardson depth of the latent decoder; range: [1, 100]
steps = 420         # outer steps (main paper §11 reports 420); range: [1, 5000]
eta_e_rel = 0.5     # encoder step times lambda_max(Sigma_z hat); range: (0, 2)
eta_d_rel = 0.2     # decoder step times max_s lambda_max(C_s); range: (0, 2)
eval_every = 4      # held-out risks every this many steps (and at the last); range: [1, 50]
refine_max = 4      # continuous-time check: step sizes eta/k for k in 1, 2, ..., refine_max (powers of 2); range: [1, 100]
seed = 0            # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"n_eval": 16384, "eval_every": 1, "refine_max": 8}}

# %% tags=["hide-input"]
import time
from dataclasses import asdict

import matplotlib.pyplot as plt
import numpy as np

from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.encdec import (
    EncDecConfig,
    continuous_time_refinement,
    product_sum_check,
    report_table3,
    run_encdec,
    summarise_encdec_run,
    tracking_spectrum,
)

use_style()
t_start = time.perf_counter()
cfg = EncDecConfig(K=K, r=r, M=M, sigma=sigma, lam=lam, cond_x=cond_x, mu_z=(mu_1, mu_2, mu_3), n_train=n_train,
                   n_eval=n_eval, L=L, steps=steps, eta_e_rel=eta_e_rel, eta_d_rel=eta_d_rel, seed=seed)
run = run_encdec(cfg, eval_every=eval_every)
R, rs, grid = run.risks, run.risk_steps, np.arange(steps + 1)
t_run = time.perf_counter() - t_start
STEP = "outer step $s$"

# %% [markdown]
# ## The run at a glance (the main paper Figure 1, bottom panels)

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8))
ax0.semilogy(grid, run.tracking_rel, color=PALETTE[0], label=r"$\|P_{z,s}-P_z^\star(U_s)\|_F/\|P_z^\star(U_s)\|_F$")
ax0.semilogy(grid, run.sin2, color=PALETTE[1], label=r"$\sin^2\Theta(U_s,U_\star)$")
ax0.set(xlabel=STEP, title="Decoder tracks its moving oracle; encoder reaches its floor"); ax0.legend()
ax1.semilogy(rs, R.e2e, color=PALETTE[0], label=r"$R_{e2e}(s)$")
ax1.semilogy(rs, R.floor, "--", color="gray", label=r"$R_{floor}(s)$ (encoder)")
ax1.semilogy(rs, R.dec, color=PALETTE[2], label=r"$R_{dec}(s)$ (decoder)")
ax1.set(xlabel=STEP, title="End-to-end risk = encoder floor + decoder part"); ax1.legend()
save_figure(fig, "fig1_encdec_panels")

# %% [markdown]
# ## Exact identities at every step (the main paper Figure 2 right)
# "Observed" is the held-out risk of $U_s z_{L,s}$ with $z_{L,s}$ produced by running the latent
# Richardson iteration; "exact" uses $z_{L,s}=z_s^\dagger-(I-P_{z,s}A_s)^Lz_s^\dagger$ (matrix powers). The
# right panel shows the three rounding-level residuals along the run.

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8))
ax0.semilogy(rs, R.e2e, color=PALETTE[0], label="observed (iterated Richardson)")
ax0.semilogy(rs, R.exact, ":", color=PALETTE[1], lw=2.5, label="exact identity risk")
ax0.semilogy(rs, R.dec, color=PALETTE[2], label="decoder component")
ax0.semilogy(rs, R.floor, "--", color="gray", label="encoder floor")
ax0.set(xlabel=STEP, title="Observed vs exact identity risk"); ax0.legend()
tiny = 1e-20  # exact zeros drawn at the bottom of the log axis
for y, x, c, lab in ((R.identity_gap, rs, 0, r"$|R_{obs}-R_{exact}|$"),
                     (R.decomposition_gap, rs, 3, r"$|R_{e2e}-(R_{floor}+R_{dec}+2\,\mathrm{cross})|$"),
                     (run.identity_residual, grid[1:], 4, "tracking identity residual (relative)")):
    ax1.semilogy(x, np.maximum(y, tiny), ".", ms=3, color=PALETTE[c], label=lab)
ax1.axhline(np.finfo(float).eps, color="gray", ls=":", label="machine epsilon")
ax1.set(ylim=(tiny / 2, 1e-12), xlabel=STEP, title="Rounding-level residuals"); ax1.legend(fontsize=7)
save_figure(fig, "fig2_right_identity")

# %% [markdown]
# ## Detailed diagnostics (the main paper Figure 4)
# Spectral-overlap fractions of the tracking error in the eigenbasis $q_{s,i}$ of the moving
# $C_s$: $w_{s,i}=\lambda_i(C_s)\|E_sq_{s,i}\|^2/\sum_j\lambda_j(C_s)\|E_sq_{s,j}\|^2$ with $E_s=P_{z,s}-P_z^\star(U_s)$.

# %%
spec = tracking_spectrum(run.P, run.P_star, run.C)

fig, axes = plt.subplots(2, 2, figsize=(10, 7))
ax = axes[0, 0]
ax.semilogy(rs, R.e2e, color=PALETTE[0], label=r"$R_{e2e}$")
ax.semilogy(rs, R.floor, "--", color="gray", label=r"$R_{floor}$")
ax.semilogy(rs, R.dec, color=PALETTE[2], label=r"$R_{dec}$")
ax.semilogy(rs, 2 * np.abs(R.cross), color=PALETTE[3], lw=1, label=r"$2|\mathrm{cross}|$")
ax.set(xlabel=STEP, title="Risk decomposition"); ax.legend()
ax = axes[0, 1]
ax.plot(rs, R.rho_mean, color=PALETTE[0], label=r"mean $\|I-P_{z,s}A_s\|_2$")
ax.plot(rs, R.rho_max, color=PALETTE[1], lw=1, label=r"max over held-out prompts")
ax.axhline(1.0, color="gray", ls=":")
ax.set(xlabel=STEP, title="Latent contraction"); ax.legend()
ax = axes[1, 0]
ax.semilogy(grid, run.sin2, color=PALETTE[1], label=r"$\sin^2\Theta(U_s,U_\star)$")
ax.semilogy(grid, run.tracking_rel, color=PALETTE[0], label="relative tracking error")
ax.semilogy(grid[:-1], spec.drift_rel, color=PALETTE[4], lw=1, label=r"oracle drift $\|P^\star_{s+1}-P^\star_s\|_F/\|P^\star_s\|_F$")
ax.set(xlabel=STEP, title="Encoder subspace and decoder tracking"); ax.legend(fontsize=7)
ax = axes[1, 1]
names = ["slow (smallest $\\lambda_i$)"] + ["middle"] * (r - 2) + ["fast (largest $\\lambda_i$)"]
ax.stackplot(grid, spec.weights.T[::-1], colors=PALETTE[:r], labels=names[::-1])
ax.set(ylim=(0, 1), xlabel=STEP, title="Spectral overlap of the tracking error")
ax.legend(fontsize=7, loc="center right", frameon=True)
fig.tight_layout()
save_figure(fig, "fig4_encdec_detail")

# %% [markdown]
# ## Online encoder+decoder training and its certificates (the main paper Figure 7, the experiment report Figure 3)
# The decoder certificate is the §6.3 chain $R_{dec}\le\|\Sigma_x\|E\|z_L-z^\dagger\|^2\le\|\Sigma_x\|E[\rho^{2L}\|z^\dagger\|^2]$.
# The subspace certificate is Davis–Kahan with $S_s=G_s\Sigma_zG_s^\top$ (whose top-$r$ eigenspace is
# $U_s$) against $\Sigma_\beta$, in the paper's form $(\|S_s-\Sigma_\beta\|/\gamma)^2$ and in the valid form
# $(\|S_s-\Sigma_\beta\|/(\gamma-\|S_s-\Sigma_\beta\|))^2$ (infinite while $\|S_s-\Sigma_\beta\|\ge\gamma$).

# %%
fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(13, 3.6))
ax0.semilogy(rs, R.e2e, color=PALETTE[0], label="held-out prediction risk")
ax0.semilogy(rs, R.exact, ":", color=PALETTE[1], lw=2.5, label="exact identity risk")
ax0.set(xlabel=STEP, title="Held-out risk (main paper Fig. 7)"); ax0.legend()
ax1.semilogy(rs, R.dec, color=PALETTE[2], label=r"decoder actual $R_{dec}$")
ax1.semilogy(rs, R.dec_mid, color=PALETTE[5], label=r"$\|\Sigma_x\|E\|z_L-z^\dagger\|^2$")
ax1.semilogy(rs, R.dec_bound, "--", color=PALETTE[1], label=r"certified $\|\Sigma_x\|E[\rho^{2L}\|z^\dagger\|^2]$")
ax1.set(xlabel=STEP, title="Decoder risk and its certificate"); ax1.legend(fontsize=7)
finite = np.isfinite(run.dk2_weyl)
ax2.semilogy(grid, run.sin2, color=PALETTE[1], label=r"true $\sin^2\Theta(U_s,U_\star)$")
ax2.semilogy(grid, run.dk2_paper, "--", color=PALETTE[0], label="Davis–Kahan$^2$, paper form")
ax2.semilogy(grid[finite], run.dk2_weyl[finite], ":", color=PALETTE[3], lw=2, label="Davis–Kahan$^2$, valid form")
ax2.set(xlabel=STEP, title="Subspace certificate (report Fig. 3)"); ax2.legend(fontsize=7)
save_figure(fig, "fig7_encdec_online")

# %% [markdown]
# ## §6.6: the product/sum formula reproduces the tracked error of the real run
# $E_s=E_0\prod_{t<s}(I-\eta_dC_t)+\sum_{\tau<s}D_\tau\prod_{t=\tau+1}^{s-1}(I-\eta_dC_t)$, evaluated from
# $E_0$, the moments $C_t$ and the oracle drifts $D_\tau$ only, against $P_{z,s}-P_z^\star(U_s)$ of the run.

# %%
ps = product_sum_check(run)  # from E_0 = P_0 - P*(U_0), the C_t and the drifts D_t = P*(U_t) - P*(U_{t+1}) only

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
ax0.semilogy(grid, np.linalg.norm(spec.E, axis=(-2, -1)), color=PALETTE[0], label=r"$\|E_s\|_F$ tracked in the run")
ax0.semilogy(ps.steps, np.linalg.norm(ps.E_formula, axis=(-2, -1)), "o", ms=4, mfc="none", color=PALETTE[1],
             label="product/sum formula")
ax0.semilogy(grid[:-1], spec.drift, color=PALETTE[4], lw=1, label=r"drift $\|D_s\|_F$")
ax0.set(xlabel=STEP, title="Non-commuting exact matrix dynamics"); ax0.legend()
ax1.semilogy(ps.steps, np.maximum(ps.error, 1e-20), "o", ms=4, color=PALETTE[1])
ax1.axhline(np.finfo(float).eps, color="gray", ls=":", label="machine epsilon")
ax1.set(ylim=(1e-20, 1e-12), xlabel=STEP, title="Formula vs run: max entry error / max|E|"); ax1.legend()
save_figure(fig, "fig_product_sum")

# %% [markdown]
# ## §6.4: the stop-gradient triangular dynamics in continuous time
# $\dot G_t=\eta_e(\Sigma_{bz}-G_t\Sigma_z)$ (closed form) and $\dot P_t=\eta_d(B(G_t)-P_tC(G_t))$ (integrated
# with RK45), time in units of steps. Gradient descent is its forward-Euler discretisation: runs
# with steps $\eta/k$ over $k\cdot s$ steps converge to the ODE at rate $O(\eta/k)$.

# %%
ode = continuous_time_refinement(run, refine_max)  # ode.order: the ODE gap ~ k^order under k-fold refinement
ks = ode.refinements

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
for i in range(r):
    ax0.plot(grid, run.P[:, i, i], color=PALETTE[i], lw=1.2, label=f"GD $P_{{z,s}}[{i},{i}]$")
    ax0.plot(ode.t, ode.P_ode[:, i, i], ":", color="black", lw=1)
ax0.plot([], [], ":", color="black", label="continuous time")
ax0.set(xlabel="time (steps at the base step size)", title="Decoder diagonal: discrete vs continuous"); ax0.legend(fontsize=7)
ax1.loglog(ks, ode.gaps, "o-", color=PALETTE[0], label="max gap to the ODE / max|P|")
ax1.loglog(ks, ode.gaps[0] / ks, ":", color="gray", label="slope $-1$")
ax1.set_xticks(ks, [str(k) for k in ks]); ax1.minorticks_off()
ax1.set(xlabel="refinement $k$ (step sizes $\\eta/k$)", title="First-order convergence to the ODE"); ax1.legend()
save_figure(fig, "fig_continuous_time")

# %% [markdown]
# ## The experiment report Table 3 and the main paper §11 numbers at the last step

# %%
summary = summarise_encdec_run(run)
table3 = report_table3(summary)
for k_, v in table3.items():
    print(f"{k_:34s} {v:.4e}")

print(f"identity gaps (largest): decomposition / e2e {R.identity_gap.max() / R.e2e.min():.1e}, "
      f"product-sum {ps.error.max():.1e}, residual {run.identity_residual.max():.1e}")

# %% tags=["nbval-check-output"]
# deterministic digits only (rounding-level residuals depend on the BLAS, so they are printed above, outside this checked cell)
for k_ in ("held-out prediction risk", "R_floor", "decoder actual risk", "encoder true subspace sin^2",
           "relative tracking error"):
    print(f"{k_:34s} {table3[k_]:.3e}")

# %%
write_metrics({
    "steps": steps, **asdict(summary),
    "product_sum_err_max": ps.error.max(), "commutator_defect": ps.commutator_defect,
    "slow_mode_weight_initial": float(spec.weights[1, 0]), "slow_mode_weight_final": float(spec.weights[-1, 0]),
    "drift_rel_log_slope_second_half": spec.drift_rel_log_slope, "drift_rel_final": float(spec.drift_rel[-1]),
    "ode_gap_base": ode.gaps[0], "ode_gap_finest": ode.gaps[-1], "ode_order": ode.order,
    "run_seconds": t_run, "elapsed_seconds": time.perf_counter() - t_start,
})
