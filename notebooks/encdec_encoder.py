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

import matplotlib.pyplot as plt
import numpy as np

from iclcore.lsq.dynamics import gd_iterate
from iclcore.lsq.lowrank import make_lowrank_model, sample_lowrank_prompts
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.encoder import (
    encoder_modal_risk,
    encoder_population_trajectory,
    encoder_risk,
    make_encoder_problem,
    online_encoder_run,
    sgd_multiplicative_excess,
    sgd_stationary_sq_error,
)
from iclcore.richardson.subspace import (
    davis_kahan_bound,
    effective_rank,
    eigengap,
    empirical_task_covariance,
    floor_risk,
    floor_risk_bound,
    sin_theta,
    top_r_subspace,
    wedin_sin_bound,
)
from iclcore.stats import batch_means, replica_spread

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)
mu = np.array([mu_1, mu_2, mu_3, mu_4])

# %% [markdown]
# ## The exact population trajectory and its modal risk (the main paper §5.1)
# The boxed closed form is checked against the literal recursion, and the trace form of the risk
# against the modal sum $\sum_i \mu_i(1-\eta_e\mu_i)^{2s}\|(G_0-G_\star)v_i\|^2$.

# %%
prob_noisy = make_encoder_problem(q, mu, sigma, rng)
G0 = rng.standard_normal((q, mu.size)) / np.sqrt(mu.size)
grid = np.arange(steps + 1)
closed = encoder_population_trajectory(G0, prob_noisy, eta_noisy, grid)
loop = gd_iterate(G0, prob_noisy.Sigma_bz, prob_noisy.Sigma_z, eta_noisy, steps)
max_err_closed_form = float(np.abs(closed - loop).max() / np.abs(prob_noisy.G_star).max())
risk_trace = np.asarray(encoder_risk(closed, prob_noisy))
risk_modal = encoder_modal_risk(G0, prob_noisy, eta_noisy, grid)
max_err_modal_rel = float(np.max(np.abs(risk_trace - risk_modal) / risk_modal))

# %% [markdown]
# ## Noisy online run (the experiment report §3, Table 1, Figure 1)

# %%
res_n = online_encoder_run(prob_noisy, G0, eta_noisy, batch_noisy, steps, np.random.default_rng([seed, 1]), n_eval=n_eval)
ratio_noisy = float(res_n.risk_heldout[-1] / res_n.risk_pred[-1])
se_noisy = float(np.sqrt(2.0 / (q * n_eval)))  # relative s.e. of a mean of sigma^2 chi^2_q / q over n_eval
# the level of the relative G error is set by the stationary SGD noise (first order in 1/B)
rel_err_stationary = float(np.sqrt(sgd_stationary_sq_error(prob_noisy, eta_noisy, batch_noisy))
                           / np.linalg.norm(prob_noisy.G_star))
rel_err_time_avg = float(np.sqrt(np.mean(res_n.rel_err[steps // 2:] ** 2)))
# its standard error: batch means (10 blocks) of the correlated series rel_err^2, then the delta method for sqrt
_, se_sq = batch_means(res_n.rel_err[steps // 2:] ** 2, 10)
rel_err_time_avg_se = se_sq / (2 * rel_err_time_avg)
# the stationary formula drops the multiplicative gradient noise: relative size ~ eta Tr(Sigma_z) / B
rel_err_multiplicative_term = eta_noisy * float(np.trace(prob_noisy.Sigma_z)) / batch_noisy
# subspace error is second order: sin Θ <= ||G - G⋆||_2 / σ_r(G)
wedin_noisy = wedin_sin_bound(res_n.G[-1], prob_noisy.G_star) ** 2
table1 = {
    "held-out encoder risk": res_n.risk_heldout[-1],
    "exact population risk": res_n.risk_pred[-1],
    "observed / predicted": ratio_noisy,
    "relative G error": res_n.rel_err[-1],
    "subspace sin^2 Theta": res_n.sin2[-1],
    "irreducible noise floor": prob_noisy.noise_floor,
}

# %% tags=["nbval-check-output"]
for k, v in table1.items():
    print(f"{k:26s} {v:.4e}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
ax = axes[0]
ax.semilogy(grid, res_n.risk_heldout, color=PALETTE[0], label=r"held-out $\hat R_{enc}(s)$ (online SGD)")
ax.semilogy(grid, res_n.risk_pred, "--", color=PALETTE[1], label=r"exact population curve $R_{enc}(s)$")
ax.axhline(prob_noisy.noise_floor, color="gray", ls=":", label=r"noise floor $\sigma^2$")
ax.set_xlabel("outer step $s$")
ax.set_ylabel("encoder risk")
ax.set_title("Encoder-only risk (report Fig. 1)")
ax.legend()
ax = axes[1]
ax.semilogy(grid, res_n.rel_err, color=PALETTE[0], label=r"$\|G_s-G_\star\|_F/\|G_\star\|_F$ (online)")
ax.semilogy(grid, res_n.rel_err_pred, "--", color=PALETTE[1], label="closed form (population GD)")
ax.semilogy(grid, res_n.sin2, color=PALETTE[2], label=r"$\sin^2\Theta(G_s, G_\star)$ (online)")
ax.set_xlabel("outer step $s$")
ax.set_ylim(1e-12, 10)
ax.set_title("Recovery of $G_\\star$ and of its range")
ax.legend()
save_figure(fig, "seed001_fig1_encoder")

# %% [markdown]
# ## Noise-free online run (the main paper §12.6, Figure 6, and §11)
# With $\sigma=0$ the SGD iterate converges to $G_\star$ exactly; its risk follows the population curve
# up to the multiplicative batch noise of $\widehat\Sigma_{z,s}$.

# %%
rng_c = np.random.default_rng([seed, 2])  # each section has its own stream: presets change only sample sizes
prob_clean = make_encoder_problem(q, mu, 0.0, rng_c)
G0c = rng_c.standard_normal((q, mu.size)) / np.sqrt(mu.size)
res_c = online_encoder_run(prob_clean, G0c, eta_clean, batch_clean, steps, rng_c, n_eval=n_eval)
log_ratio = np.log(res_c.risk_heldout / res_c.risk_pred)
wedin_clean = wedin_sin_bound(res_c.G[-1], prob_clean.G_star) ** 2
# standard errors of the single-run ratios: further runs from the same problem and G_0 (independent streams);
# the spread includes the held-out sampling (each run draws its own held-out set)
reps = [res_c] + [online_encoder_run(prob_clean, G0c, eta_clean, batch_clean, steps, np.random.default_rng([seed, 4, j]),
                                     n_eval=n_eval) for j in range(n_replicas)]
clean_se = {
    "clean_ratio_final_se": replica_spread([r_.risk_heldout[-1] / r_.risk_pred[-1] for r_ in reps]),
    "clean_rel_err_ratio_final_se": replica_spread([r_.rel_err[-1] / r_.rel_err_pred[-1] for r_ in reps]),
    "clean_max_abs_log_ratio_se": replica_spread([np.abs(np.log(r_.risk_heldout / r_.risk_pred)).max() for r_ in reps]),
    "clean_sgd_excess": sgd_multiplicative_excess(prob_clean, eta_clean, batch_clean, steps),
}
clean = {
    "R_enc final observed (held-out)": res_c.risk_heldout[-1],
    "R_enc final observed (exact, iterate)": res_c.risk_iterate[-1],
    "R_enc final predicted": res_c.risk_pred[-1],
    "rel G error final observed": res_c.rel_err[-1],
    "rel G error final predicted": res_c.rel_err_pred[-1],
    "sin^2 final": res_c.sin2[-1],
    "max |log(obs/pred)|": np.abs(log_ratio).max(),
}

# %% tags=["nbval-check-output"]
for k, v in clean.items():
    print(f"{k:38s} {v:.4e}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
ax = axes[0]
ax.semilogy(grid, res_c.risk_heldout, color=PALETTE[0], label="observed (held-out)")
ax.semilogy(grid, res_c.risk_pred, "--", color=PALETTE[1], label="exact population curve")
ax.set_xlabel("outer step $s$")
ax.set_ylabel(r"$R_{enc}(s)$")
ax.set_title("Noise-free online encoder (main paper Fig. 6)")
ax.legend()
ax = axes[1]
ax.plot(grid, log_ratio, color=PALETTE[0], label=r"$\log(\hat R_{enc}/R_{enc})$")
ax.axhline(0, color="gray", lw=0.8)
ax.set_xlabel("outer step $s$")
ax.set_title("Observed / predicted risk (log ratio)")
ax.legend()
ax = axes[2]
ax.semilogy(grid, res_c.rel_err, color=PALETTE[0], label="observed (online)")
ax.semilogy(grid, res_c.rel_err_pred, "--", color=PALETTE[1], label="predicted (closed form)")
ax.semilogy(grid, res_c.sin2, color=PALETTE[2], label=r"$\sin^2\Theta(G_s,G_\star)$ (observed)")
ax.set_xlabel("outer step $s$")
ax.set_title(r"Relative error $\|G_s-G_\star\|_F/\|G_\star\|_F$")
ax.legend()
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
model = make_lowrank_model(K_sub, r_sub, M_sub, sigma_sub, 0.01, 8.0, np.array([0.2, 0.08, 0.03]), rng_s)
pool = sample_lowrank_prompts(model, N_max, rng_s)
Sigma_beta = model.Sigma_beta
gamma = eigengap(Sigma_beta, r_sub)
reff = effective_rank(Sigma_beta)
Ns = np.unique(np.round(np.geomspace(30, N_max, n_N)).astype(int))
rows = []
for N in Ns:
    for label, vecs in (("estimated", pool.beta_hat[:N]), ("oracle", pool.beta[:N])):
        S_hat = empirical_task_covariance(vecs)
        U_N = top_r_subspace(S_hat, r_sub)
        rows.append(dict(
            N=N, kind=label,
            sin=sin_theta(U_N, model.U_star),
            dk_paper=davis_kahan_bound(S_hat, Sigma_beta, r_sub, "paper"),
            dk_weyl=davis_kahan_bound(S_hat, Sigma_beta, r_sub, "weyl"),
            err=np.linalg.norm(S_hat - Sigma_beta, 2),
            floor=floor_risk(U_N, model.U_star, model.Sigma_z, model.Sigma_x),
            floor_bound=floor_risk_bound(U_N, model.U_star, model.Sigma_z, model.Sigma_x),
        ))


def col(kind, key):
    return np.array([r_[key] for r_ in rows if r_["kind"] == kind])


fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
ax = axes[0]
ax.loglog(Ns, col("estimated", "sin"), "o-", color=PALETTE[0], label=r"true $\|\sin\Theta(U_N,U_\star)\|_2$ (estimated $\hat\beta$)")
ax.loglog(Ns, col("estimated", "dk_paper"), "--", color=PALETTE[0], label=r"DK, paper form $\|\widehat\Sigma-\Sigma_\beta\|/\gamma_{enc}$ (estimated)")
ax.loglog(Ns, col("oracle", "dk_paper"), "--", color=PALETTE[2], label=r"DK, paper form (oracle $\beta$; true angle $=0$)")
ax.loglog(Ns, np.linalg.norm(Sigma_beta, 2) * np.sqrt(reff / Ns) / gamma, ":", color="gray",
          label=r"$\|\Sigma_\beta\|\sqrt{r_{\rm eff}/N}/\gamma_{enc}$")
ax.axhline(1.0, color="black", lw=0.6)
ax.set_xlabel("number of task vectors $N$")
ax.set_title(r"Subspace recovery $U_N=\mathrm{Top}_r(\widehat\Sigma_{\beta,N})$")
ax.legend(fontsize=7)
ax = axes[1]
ax.loglog(Ns, col("estimated", "floor"), "o-", color=PALETTE[0], label=r"$R_{floor}(U_N)$ (exact)")
ax.loglog(Ns, col("estimated", "floor_bound"), "--", color=PALETTE[1],
          label=r"$\|\Sigma_x\|\,\mathrm{Tr}\Sigma_z\,\|\sin\Theta\|_F^2$")
ax.set_xlabel("number of task vectors $N$")
ax.set_title("Floor risk of the recovered subspace and its bound")
ax.legend(fontsize=7)
save_figure(fig, "subspace_recovery")

sin_est, dk_est = col("estimated", "sin"), col("estimated", "dk_paper")
sin_or, dk_or, dkw_or = col("oracle", "sin"), col("oracle", "dk_paper"), col("oracle", "dk_weyl")
norm_err_or = col("oracle", "err") / (np.linalg.norm(Sigma_beta, 2) * np.sqrt(reff / Ns))
fl_all = np.r_[col("estimated", "floor"), col("oracle", "floor")]
flb_all = np.r_[col("estimated", "floor_bound"), col("oracle", "floor_bound")]
dkw_est = col("estimated", "dk_weyl")
# the 2x2 counterexample to the printed Davis–Kahan form: Σ = diag(1, 0), Ŝ = [[1/2, δ], [δ, 1/2]]
S_cx = np.array([[0.5, 1e-3], [1e-3, 0.5]])
sin_cx = sin_theta(top_r_subspace(S_cx, 1), np.eye(2)[:, :1])
dk_cx = davis_kahan_bound(S_cx, np.diag([1.0, 0.0]), 1, "paper")
valid_dk_ratio_max = float(max(np.max(sin_or / dkw_or), np.max(sin_est / dkw_est)))

# %% tags=["nbval-check-output"]
print(f"r_eff = {reff:.4f}, gamma_enc = {gamma:.4f}")
print(f"oracle: normalised covariance error in [{norm_err_or.min():.2f}, {norm_err_or.max():.2f}]")
print(f"estimated, N = {Ns[-1]}: sin = {sin_est[-1]:.3e}, DK (paper) = {dk_est[-1]:.3e}")

# %%
elapsed = time.perf_counter() - t_start
write_metrics({
    "max_err_closed_form": max_err_closed_form,
    "max_err_modal_rel": max_err_modal_rel,
    "noisy_risk_heldout_final": res_n.risk_heldout[-1],
    "noisy_risk_pred_final": res_n.risk_pred[-1],
    "noisy_risk_iterate_final": res_n.risk_iterate[-1],
    "noisy_ratio_final": ratio_noisy,
    "noisy_ratio_se": se_noisy,
    "noisy_rel_err_final": res_n.rel_err[-1],
    "noisy_sin2_final": res_n.sin2[-1],
    "noisy_rel_err_stationary_pred": rel_err_stationary,
    "noisy_rel_err_time_avg": rel_err_time_avg,
    "noisy_rel_err_time_avg_se": rel_err_time_avg_se,
    "noisy_rel_err_multiplicative_term": rel_err_multiplicative_term,
    "noisy_sin2_wedin_bound": wedin_noisy,
    "noise_floor": prob_noisy.noise_floor,
    "clean_risk_heldout_final": res_c.risk_heldout[-1],
    "clean_risk_iterate_final": res_c.risk_iterate[-1],
    "clean_risk_pred_final": res_c.risk_pred[-1],
    "clean_ratio_final": res_c.risk_heldout[-1] / res_c.risk_pred[-1],
    "clean_rel_err_final": res_c.rel_err[-1],
    "clean_rel_err_pred_final": res_c.rel_err_pred[-1],
    "clean_rel_err_ratio_final": res_c.rel_err[-1] / res_c.rel_err_pred[-1],
    "clean_sin2_final": res_c.sin2[-1],
    "clean_sin2_wedin_bound": wedin_clean,
    "clean_max_abs_log_ratio": np.abs(log_ratio).max(),
    **clean_se,
    "n_replicas": n_replicas,
    "subspace_reff": reff,
    "subspace_gamma": gamma,
    "subspace_sin_estimated_final": sin_est[-1],
    "subspace_dk_estimated_final": dk_est[-1],
    "subspace_sin_oracle_final": sin_or[-1],
    "subspace_dk_oracle_final": dk_or[-1],
    "subspace_oracle_err_normalised_min": norm_err_or.min(),
    "subspace_oracle_err_normalised_max": norm_err_or.max(),
    "subspace_valid_dk_ratio_max": valid_dk_ratio_max,
    "dk_counterexample_sin": sin_cx,
    "dk_counterexample_paper_bound": dk_cx,
    "subspace_sin_estimated_over_dk": sin_est[-1] / dk_est[-1],
    "subspace_floor_bound_ratio_max": float(np.max(fl_all / flb_all)),
    "elapsed_seconds": elapsed,
})
