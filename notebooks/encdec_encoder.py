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
# # Encoder-only recovery: online runs against the exact curve, and subspace certificates
# This notebook recomputes the encoder-only experiments: the experiment report §3 (Table 1 and Figure 1: a noisy
# online run whose held-out risk is compared with the exact population curve
# $R_{enc}(s) = \sigma^2 + \frac1q\operatorname{Tr}[(G_s-G_\star)\Sigma_z(G_s-G_\star)^\top]$), the main paper §12.6
# (Figure 6 and the §11 numbers: a noise-free online run ending near $10^{-11}$), and the main paper §5.2
# (subspace recovery from estimated task vectors: $U_N = \mathrm{Top}_r(\widehat\Sigma_{\beta,N})$, the
# Davis–Kahan certificate against the true $\sin\Theta$, $r_{\rm eff}$ and the floor-risk bound).
# Online runs are minibatch SGD with a fresh batch at every step; the prediction is the closed form
# $G_s - G_\star = (G_0-G_\star)(I-\eta_e\Sigma_z)^s$ from the same $G_0$.

# %% tags=["parameters", "hide-input"]
q = 32              # measurements per task (rows of G); range: [1, 500]
mu_1 = 1.0          # eigenvalues of Sigma_z (rank 4), largest ...; range: (0, inf)
mu_2 = 0.6          # range: (0, inf)
mu_3 = 0.35         # range: (0, inf)
mu_4 = 0.2          # ... smallest; range: (0, inf)
steps = 800         # outer steps of both online runs (MMNN report §3.3 and main paper §12.6 report 800); range: [1, 10000]
sigma = 0.02        # noise of the noisy run: floor sigma^2 of 4e-4 (MMNN report Table 1); range: [0, inf)
eta_noisy = 0.5     # step of the noisy run (stability window (0, 2/mu_1)); range: (0, inf)
batch_noisy = 2000  # fresh samples per step, noisy run; range: [1, 20000]
eta_clean = 0.07    # step of the noise-free run (chosen so the final risk is O(1e-11), like main paper §11); range: (0, inf)
batch_clean = 200000  # fresh samples per step, noise-free run (cost independent of the batch); range: [1, 2000000]
n_eval = 50000      # held-out samples (q residuals each); range: [1, 2000000]
K_sub = 16          # subspace recovery (§5.2): ambient dimension; range: [1, 200]
r_sub = 3           # task rank; range: [1, 50]
M_sub = 64          # prompt length of the ridge estimates; range: [1, 1000]
sigma_sub = 0.3     # label noise of the prompts; range: [0, inf)
N_max = 20000       # largest number of estimated task vectors; range: [1, 1000000]
n_N = 9             # number of N values (log-spaced from 30 to N_max); range: [1, 100]
n_replicas = 3      # further noise-free runs (same problem and G_0): standard errors of single-run ratios; range: [1, 50]
seed = 0            # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"n_eval": 200000, "N_max": 100000, "n_N": 12}}

# %% tags=["hide-input"]
import time
from dataclasses import asdict

import matplotlib.pyplot as plt
import numpy as np

from iclcore.lsq.lowrank import make_lowrank_model, sample_lowrank_prompts
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.encoder import (
    closed_form_check,
    make_encoder_problem,
    noise_free_run_statistics,
    noisy_run_statistics,
    online_encoder_run,
)
from iclcore.richardson.subspace import (
    covariance_error_rate,
    davis_kahan_counterexample,
    effective_rank,
    eigengap,
    subspace_recovery_curve,
    subspace_recovery_ratios,
)

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)
mu = np.array([mu_1, mu_2, mu_3, mu_4])
STEP = "outer step $s$"

# %% [markdown]
# ## The exact population trajectory and its modal risk (the main paper §5.1)
# The boxed closed form is checked against the literal recursion, and the trace form of the risk
# against the modal sum $\sum_i \mu_i(1-\eta_e\mu_i)^{2s}\|(G_0-G_\star)v_i\|^2$.

# %%
prob_noisy = make_encoder_problem(q, mu, sigma, rng=rng)
G0 = rng.standard_normal((q, mu.size)) / np.sqrt(mu.size)
grid = np.arange(steps + 1)
closed = closed_form_check(G0, prob_noisy, eta_noisy, n_steps=steps)

# %% [markdown]
# ## Noisy online run (the experiment report §3, Table 1, Figure 1)

# %%
res_n = online_encoder_run(prob_noisy, G0, eta_noisy, batch=batch_noisy, n_steps=steps, rng=np.random.default_rng([seed, 1]), n_eval=n_eval)
# ratio s.e. of a held-out mean at the floor; the stationary SGD error (first order in 1/B) with its batch-means s.e.;
# the multiplicative noise the stationary formula drops; the Wedin bound: sin Θ is second order in the G error
noisy = noisy_run_statistics(prob_noisy, res_n, eta=eta_noisy, batch=batch_noisy, n_eval=n_eval)
table1 = {
    "held-out encoder risk": res_n.risk_heldout[-1],
    "exact population risk": res_n.risk_pred[-1],
    "observed / predicted": noisy.ratio_final,
    "relative G error": res_n.rel_err[-1],
    "subspace sin^2 Theta": res_n.sin2[-1],
    "irreducible noise floor": prob_noisy.noise_floor,
}

# %% tags=["nbval-check-output"]
for k, v in table1.items():
    print(f"{k:26s} {v:.4e}")

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8))
ax0.semilogy(grid, res_n.risk_heldout, color=PALETTE[0], label=r"held-out $\hat R_{enc}(s)$ (online SGD)")
ax0.semilogy(grid, res_n.risk_pred, "--", color=PALETTE[1], label=r"exact population curve $R_{enc}(s)$")
ax0.axhline(prob_noisy.noise_floor, color="gray", ls=":", label=r"noise floor $\sigma^2$")
ax0.set(xlabel=STEP, ylabel="encoder risk", title="Encoder-only risk (report Fig. 1)"); ax0.legend()
ax1.semilogy(grid, res_n.rel_err, color=PALETTE[0], label=r"$\|G_s-G_\star\|_F/\|G_\star\|_F$ (online)")
ax1.semilogy(grid, res_n.rel_err_pred, "--", color=PALETTE[1], label="closed form (population GD)")
ax1.semilogy(grid, res_n.sin2, color=PALETTE[2], label=r"$\sin^2\Theta(G_s, G_\star)$ (online)")
ax1.set(xlabel=STEP, ylim=(1e-12, 10), title="Recovery of $G_\\star$ and of its range"); ax1.legend()
save_figure(fig, "seed001_fig1_encoder")

# %% [markdown]
# ## Noise-free online run (the main paper §12.6, Figure 6, and §11)
# With $\sigma=0$ the SGD iterate converges to $G_\star$ exactly; its risk follows the population curve
# up to the multiplicative batch noise of $\widehat\Sigma_{z,s}$.

# %%
rng_c = np.random.default_rng([seed, 2])  # each section has its own stream: presets change only sample sizes
prob_clean = make_encoder_problem(q, mu, 0.0, rng=rng_c)
G0c = rng_c.standard_normal((q, mu.size)) / np.sqrt(mu.size)
res_c = online_encoder_run(prob_clean, G0c, eta_clean, batch=batch_clean, n_steps=steps, rng=rng_c, n_eval=n_eval)
# standard errors of the single-run ratios: further runs from the same problem and G_0 (independent streams);
# the spread includes the held-out sampling (each run draws its own held-out set)
reps = [res_c] + [online_encoder_run(prob_clean, G0c, eta_clean, batch=batch_clean, n_steps=steps, rng=np.random.default_rng([seed, 4, j]),
                                     n_eval=n_eval) for j in range(n_replicas)]
clean = noise_free_run_statistics(prob_clean, reps, eta=eta_clean, batch=batch_clean)

# %% tags=["nbval-check-output"]
for k, v in {"R_enc final observed (held-out)": res_c.risk_heldout[-1],
             "R_enc final observed (exact, iterate)": res_c.risk_iterate[-1],
             "R_enc final predicted": res_c.risk_pred[-1], "rel G error final observed": res_c.rel_err[-1],
             "rel G error final predicted": res_c.rel_err_pred[-1], "sin^2 final": res_c.sin2[-1],
             "max |log(obs/pred)|": clean.max_abs_log_ratio}.items():
    print(f"{k:38s} {v:.4e}")

# %%
fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(13, 3.6))
ax0.semilogy(grid, res_c.risk_heldout, color=PALETTE[0], label="observed (held-out)")
ax0.semilogy(grid, res_c.risk_pred, "--", color=PALETTE[1], label="exact population curve")
ax0.set(xlabel=STEP, ylabel=r"$R_{enc}(s)$", title="Noise-free online encoder (main paper Fig. 6)"); ax0.legend()
ax1.plot(grid, np.log(res_c.risk_heldout / res_c.risk_pred), color=PALETTE[0], label=r"$\log(\hat R_{enc}/R_{enc})$")
ax1.axhline(0, color="gray", lw=0.8)
ax1.set(xlabel=STEP, title="Observed / predicted risk (log ratio)"); ax1.legend()
ax2.semilogy(grid, res_c.rel_err, color=PALETTE[0], label="observed (online)")
ax2.semilogy(grid, res_c.rel_err_pred, "--", color=PALETTE[1], label="predicted (closed form)")
ax2.semilogy(grid, res_c.sin2, color=PALETTE[2], label=r"$\sin^2\Theta(G_s,G_\star)$ (observed)")
ax2.set(xlabel=STEP, title=r"Relative error $\|G_s-G_\star\|_F/\|G_\star\|_F$"); ax2.legend()
save_figure(fig, "fig6_encoder_online")

# %% [markdown]
# ## Subspace recovery from estimated task vectors (the main paper §5.2)
# Each task vector is estimated from its own prompt by ridge, $\hat\beta_n = H_M^{-1}c_M$; then
# $U_N=\mathrm{Top}_r(\widehat\Sigma_{\beta,N})$. Two reference points: with the exact vectors $\beta_n$
# ("oracle"), $\|\widehat\Sigma_{\beta,N}-\Sigma_\beta\|_2 \approx \|\Sigma_\beta\|_2\sqrt{r_{\rm eff}/N}$, yet the
# recovered subspace is exact as soon as $N\ge r$ (every $\beta_n$ lies in $\mathrm{range}\,U_\star$), so the
# certificate is infinitely pessimistic there. With estimated vectors,
# $\widehat\Sigma_{\beta,N}\to E[\hat\beta\hat\beta^\top]\ne\Sigma_\beta$ (anisotropic estimation noise
# $\approx\sigma^2\Sigma_x^{-1}/M$ and ridge bias), so both the true angle and the bound stop improving.

# %%
rng_s = np.random.default_rng([seed, 3])
model = make_lowrank_model(K_sub, r_sub, M_sub, sigma=sigma_sub, lam=0.01, cond_x=8.0, mu_z=np.array([0.2, 0.08, 0.03]), rng=rng_s)
pool = sample_lowrank_prompts(model, N_max, rng_s)
Sigma_beta = model.Sigma_beta
gamma, reff = eigengap(Sigma_beta, r_sub), effective_rank(Sigma_beta)
Ns = np.unique(np.round(np.geomspace(30, N_max, n_N)).astype(int))
given = dict(Sigma_beta=Sigma_beta, U_star=model.U_star, Sigma_z=model.Sigma_z, Sigma_x=model.Sigma_x)
est, orc = subspace_recovery_curve(pool.beta_hat, Ns, **given), subspace_recovery_curve(pool.beta, Ns, **given)
rate = covariance_error_rate(Sigma_beta, Ns)

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8))
ax0.loglog(Ns, est.sin, "o-", color=PALETTE[0], label=r"true $\|\sin\Theta(U_N,U_\star)\|_2$ (estimated $\hat\beta$)")
ax0.loglog(Ns, est.dk_paper, "--", color=PALETTE[0], label=r"DK, paper form $\|\widehat\Sigma-\Sigma_\beta\|/\gamma_{enc}$ (estimated)")
ax0.loglog(Ns, orc.dk_paper, "--", color=PALETTE[2], label=r"DK, paper form (oracle $\beta$; true angle $=0$)")
ax0.loglog(Ns, rate / gamma, ":", color="gray", label=r"$\|\Sigma_\beta\|\sqrt{r_{\rm eff}/N}/\gamma_{enc}$")
ax0.axhline(1.0, color="black", lw=0.6)
ax0.set(xlabel="number of task vectors $N$", title=r"Subspace recovery $U_N=\mathrm{Top}_r(\widehat\Sigma_{\beta,N})$")
ax0.legend(fontsize=7)
ax1.loglog(Ns, est.floor, "o-", color=PALETTE[0], label=r"$R_{floor}(U_N)$ (exact)")
ax1.loglog(Ns, est.floor_bound, "--", color=PALETTE[1], label=r"$\|\Sigma_x\|\,\mathrm{Tr}\Sigma_z\,\|\sin\Theta\|_F^2$")
ax1.set(xlabel="number of task vectors $N$", title="Floor risk of the recovered subspace and its bound")
ax1.legend(fontsize=7)
save_figure(fig, "subspace_recovery")

ratios = subspace_recovery_ratios(est, orc, Sigma_beta)
norm_err_or = ratios.oracle_err_normalised
# the 2x2 counterexample to the printed Davis–Kahan form: Σ = diag(1, 0), Ŝ = [[1/2, δ], [δ, 1/2]]
sin_cx, dk_cx = davis_kahan_counterexample(1e-3)

# %% tags=["nbval-check-output"]
print(f"r_eff = {reff:.4f}, gamma_enc = {gamma:.4f}")
print(f"oracle: normalised covariance error in [{norm_err_or.min():.2f}, {norm_err_or.max():.2f}]")
print(f"estimated, N = {Ns[-1]}: sin = {est.sin[-1]:.3e}, DK (paper) = {est.dk_paper[-1]:.3e}")

# %%
write_metrics({
    "max_err_closed_form": closed.max_err_closed_form, "max_err_modal_rel": closed.max_err_modal_rel,
    "noisy_risk_heldout_final": res_n.risk_heldout[-1], "noisy_risk_pred_final": res_n.risk_pred[-1],
    "noisy_risk_iterate_final": res_n.risk_iterate[-1], "noisy_rel_err_final": res_n.rel_err[-1],
    "noisy_sin2_final": res_n.sin2[-1], "noise_floor": prob_noisy.noise_floor,
    **{f"noisy_{k}": v for k, v in asdict(noisy).items()},
    "clean_risk_heldout_final": res_c.risk_heldout[-1], "clean_risk_iterate_final": res_c.risk_iterate[-1],
    "clean_risk_pred_final": res_c.risk_pred[-1], "clean_rel_err_final": res_c.rel_err[-1],
    "clean_rel_err_pred_final": res_c.rel_err_pred[-1], "clean_sin2_final": res_c.sin2[-1],
    **{f"clean_{k}": v for k, v in asdict(clean).items()},
    "n_replicas": n_replicas,
    "subspace_reff": reff, "subspace_gamma": gamma,
    "subspace_sin_estimated_final": est.sin[-1], "subspace_dk_estimated_final": est.dk_paper[-1],
    "subspace_sin_oracle_final": orc.sin[-1], "subspace_dk_oracle_final": orc.dk_paper[-1],
    "subspace_oracle_err_normalised_min": norm_err_or.min(), "subspace_oracle_err_normalised_max": norm_err_or.max(),
    "subspace_valid_dk_ratio_max": ratios.valid_dk_ratio_max, "subspace_floor_bound_ratio_max": ratios.floor_bound_ratio_max,
    "dk_counterexample_sin": sin_cx, "dk_counterexample_paper_bound": dk_cx,
    "subspace_sin_estimated_over_dk": est.sin[-1] / est.dk_paper[-1],
    "elapsed_seconds": time.perf_counter() - t_start,
})
