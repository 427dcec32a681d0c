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
# # Outer dynamics of the learned preconditioner (the main paper, Figures 1–3 and 5; the experiment report, Table 2)
# This notebook trains the decoder-only linear-attention matrix $P_s$ online (fresh prompts at every
# outer step $s$), and compares it with the exact population trajectory
# $P_s-P_\star=(P_0-P_\star)(I-\eta C)^s$ of the main paper §3.1: held-out risk against the predicted curve
# (Figure 2 left, Figure 5), alignment with the oracle $P_\star=BC^\dagger$ (Figure 1, Figure 3), the
# direct estimator $P_sd$ against depth-$L$ Richardson with the same $P_s$, contraction statistics of
# $I-P_sH$, spectral-overlap weights, the deterministic Richardson certificate, the clipped
# empirical-Bernstein bound of the experiment report §2 with its coverage, and a table in the form of the experiment report Table 2.

# %% tags=["parameters", "hide-input"]
K = 16               # dimension of x, beta, d, z*; range: [1, 1000]
M = 128              # prompt size (examples per prompt); chosen so R(P*) ~ reported plateau 0.163; range: [1, 5000]
cond = 10.0          # condition number of Sigma_x (geometric spectrum, trace K); range: [1, inf)
sigma = 0.1          # label noise standard deviation; range: [0, inf)
lam = 0.0            # ridge in H_M; range: [0, inf)
steps = 800          # outer (pretraining) steps s (paper: 800); range: [1, 10000]
batch = 4096         # fresh prompts per outer step; range: [1, 50000]
eta_frac = 0.5       # step size eta_frac / lambda_max(C); range: (0, 2)
L = 20               # Richardson depth; range: [1, 200]
L_small = 5          # a shallow depth for the baseline comparison; range: [1, 50]
s_transient = 20     # first checkpoint counted after the initial transient (at step 0 R_pred is exactly 1); range: [1, 200]
n_baseline_train = 512  # training prompts on which the unlearned baselines fit their step size; range: [1, 5000]
n_checkpoints = 41   # checkpoints (including step 0); range: [1, 500]
n_eval = 32768       # held-out pairs (d, z*) for the direct risk (a standard error needs two draws); range: [2, 1000000]
n_eval_prompts = 512 # held-out prompts (with H_M) for Richardson, contraction, certificates; range: [1, 10000]
n_contraction_checkpoints = 11  # checkpoints at which contraction statistics are computed; range: [1, 100]
clip = 1.0           # clipping level c of the empirical-Bernstein bound; range: (0, inf)
delta = 0.05         # failure probability of the bound; range: (0, 1)
n_pool = 4096        # pool of held-out losses for the coverage simulation; range: [1, 100000]
n_cov_repeats = 2000 # repetitions of the coverage simulation; range: [1, 20000]
p_cov = 0.3          # Bernoulli law of the coverage check with power; range: (0, 1)
n_cov_small = 40     # sample size of that check; range: [1, 500]
n_replicas = 3      # further independent training runs: standard errors of single-run quantities; range: [1, 50]
seed = 0             # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"K": 64, "M": 480, "steps": 800, "batch": 4096, "n_eval": 65536, "n_eval_prompts": 1024, "n_pool": 8192}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.lsq.moments import closed_form_moments, oracle_preconditioner, oracle_risk
from iclcore.lsq.tasks import TaskConfig, sample_decoder_pairs, sample_prompt_statistics
from iclcore.parallel import thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.decoder import (
    checkpoint_table,
    eb_coverage_study,
    held_out_depth_study,
    learned_against_baselines,
    max_stable_step,
    risk_trajectory,
    single_run_errors,
    train_decoder_replicas,
)
from iclcore.stats import binomial_standard_error

use_style()
t_start = time.perf_counter()

# %% [markdown]
# ## Task distribution, population moments and the oracle
# Closed-form Wishart moments $C=E[dd^\top]$, $B=E[z_\star d^\top]$ with $d=c_M$, $z_\star=\beta$
# (`iclcore.lsq.moments.closed_form_moments`), the oracle $P_\star=BC^\dagger$ and its floor $R(P_\star)$.

# %%
cfg = TaskConfig(K=K, M=M, cond=cond, sigma=sigma, lam=lam)
mom = closed_form_moments(cfg)
P_star = oracle_preconditioner(mom)
eta = max_stable_step(mom.C, eta_frac)
lamC = np.linalg.eigvalsh(mom.C)
print(f"R(P*) = {oracle_risk(mom):.4f}, cond(C) = {lamC[-1] / lamC[0]:.1f}, eta * lambda_min(C) * steps = {eta * lamC[0] * steps:.2f}")

# %% [markdown]
# ## Online training and the exact population prediction

# %%
# the main run and the n_replicas replicas (further independent streams, used for standard errors below) are
# independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`); the main run draws
# its prompts from default_rng(seed), a stream that `rng` (`runs.rng`) continues for the held-out draws below
runs = train_decoder_replicas(cfg, eta, steps=steps, batch=batch, seed=seed, n_checkpoints=n_checkpoints,
                              n_replicas=n_replicas, workers=thread_budget())
run, P_fin, sc, rng = runs.run, runs.final[0], runs.run.steps, runs.rng
d_ev, z_ev = sample_decoder_pairs(cfg, n_eval, rng)
traj = risk_trajectory(run, mom, n_steps=steps, d=d_ev, z_star=z_ev, s_transient=s_transient)
print(f"training: {runs.seconds:.1f} s for {1 + n_replicas} runs of {steps} steps x {batch} prompts")

# %% tags=["nbval-check-output"]
print(f"max over s >= {s_transient} of |R_obs - R_pred| / R_pred = {traj.rel_discrepancy[traj.after_transient].max():.1e}")
print(f"R_obs(final) = {traj.observed[-1]:.3f}, R_pred(final) = {traj.predicted[-1]:.3f}, R(P*) = {traj.oracle_risk:.3f}")
print(f"||P_final - P*||_F / ||P*||_F = {traj.rel_err[-1]:.1e}")

# %% [markdown]
# ## Inner solver with the learned $P_s$: direct estimator against depth-$L$ Richardson
# Risks against $z_\star$ (main paper $R_L$) and against $z^\dagger$ (the MMNN report's $R_{dec}(L)$), the
# $L\to\infty$ floor $(1/K)E\|z^\dagger-z_\star\|^2$ (for Gaussian design, $\lambda=0$, $M>K+1$ its expectation is
# $\sigma^2\operatorname{tr}(\Sigma_x^{-1})/(K(M-K-1))$), the contraction of $I-P_sH$ at evenly spaced checkpoints, and
# the certificates of the last $P_s$: the exact error identity, the norm bound, the clipped empirical-Bernstein bounds
# (`iclcore.richardson.decoder.held_out_depth_study`).

# %%
ev = sample_prompt_statistics(cfg, n_eval_prompts, rng)
depth = held_out_depth_study(run.P, P_star, ev, config=cfg, L=L, n_contraction_checkpoints=n_contraction_checkpoints,
                             clip=clip, delta=delta)
print(f"identity error (the ledger's theorem row grades it): {depth.identity_error:.1e}")

# %% [markdown]
# ## Spectral-overlap weights $w_{s,i}$ of the remaining error (eigenbasis of $C$)
# Part of the trajectory above (`RiskTrajectory.modal_weights`, from the exact population GD), grouped into the slow,
# middle and fast thirds of the spectrum of $C$ (Figure 3, lower right).

# %% [markdown]
# ## Certificates: exact error identity, norm bound, clipped empirical-Bernstein bound
# The coverage check: the EB inequality holds for every law on $[0, c]$; take the law of a large pool of fresh
# held-out losses (its clipped mean is known exactly) and redraw `n_eval_prompts` losses many times. On a law where
# the check has power (Bernoulli($p$) losses, small samples) the empirical mean alone (a deliberately wrong "bound")
# must fail to cover, so a coverage test that always passes would show (`iclcore.richardson.decoder.eb_coverage_study`).

# %%
cover = eb_coverage_study(P_fin, run.P[0], cfg, L=L, n_pool=n_pool, n_sample=n_eval_prompts, n_repeats=n_cov_repeats,
                          clip=clip, delta=delta, p_bernoulli=p_cov, n_bernoulli=n_cov_small, rng=rng)

# %% tags=["nbval-check-output"]
print(f"certificate violation rate: {depth.violation_rate}")
print(f"coverage (target 1 - delta = {1 - delta:g}, binomial s.e. {binomial_standard_error(delta, n_cov_repeats):.3f}):",
      {k: round(float(v), 3) for k, v in cover.coverage.items()})

# %% [markdown]
# ## Table in the form of the experiment report Table 2 (learned linear-attention $P$ vs the oracle $P_\star$)

# %%
tab_learned, tab_oracle = (checkpoint_table(P, P_star, ev, L=L, clip=clip, delta=delta) for P in (P_fin, P_star))
reported = {"depth_risk": "7.6747e-03", "eb_upper": "1.7710e-01", "violation_rate": "0", "ratio_mean": "2.2833e-02",
            "mean_contraction": "1.1031", "rel_dist_oracle": "2.6788e-01", "stable_rank": "2.9198"}
print(f"{'quantity':20s} {'learned P_s':>12s} {'oracle P*':>12s} {'report (Flexformer, reported)':>32s}")
for key, rep in reported.items():
    print(f"{key:20s} {tab_learned[key]:12.4e} {tab_oracle[key]:12.4e} {rep:>32s}")

# %% [markdown]
# ## Figures

# %%
fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
ax[0].semilogy(sc, traj.rel_err, "o-", ms=3, label=r"$\|P_s-P_\star\|_F/\|P_\star\|_F$ (online)")
ax[0].semilogy(sc, traj.cos_defect, "s-", ms=3, label=r"cosine defect $1-\cos(P_s,P_\star)$")
ax[0].semilogy(sc, traj.rel_err_gd, "--", color=PALETTE[7], lw=1, label="relative error, population GD")
ax[0].set_xlabel("outer step $s$"); ax[0].set_title("learned $P_s$ against the oracle"); ax[0].legend()
ax[1].semilogy(sc, traj.observed, "o-", ms=3, label=r"direct $R_1(P_s)$: $P_sd$")
ax[1].semilogy(sc, depth.target_risk, "s-", ms=3, label=fr"Richardson $R_L(P_s)$, $L={L}$")
ax[1].axhline(traj.oracle_risk, ls=":", color=PALETTE[7], label=r"oracle floor $R(P_\star)$")
ax[1].axhline(depth.ridge_floor, ls="-.", color=PALETTE[2], lw=1, label=r"$L\to\infty$ limit $(1/K)E\|z^\dagger-z_\star\|^2$")
ax[1].set_xlabel("outer step $s$"); ax[1].set_title("what $P_s$ buys the solver"); ax[1].legend()
fig.tight_layout(); save_figure(fig, "fig1_decoder");

# %%
fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
ax[0].plot(traj.dense_steps, traj.predicted_dense, color=PALETTE[0], label="predicted (exact population GD)")
ax[0].plot(sc, traj.observed, "o", ms=4, color=PALETTE[1], label="observed (online, held out)")
ax[0].axhline(traj.oracle_risk, ls=":", color=PALETTE[7], label=r"oracle floor $R(P_\star)$")
ax[0].set_yscale("log"); ax[0].set_xlabel("outer step $s$"); ax[0].set_ylabel("decoder risk"); ax[0].legend()
ax[0].set_title("observed vs predicted risk")
pos = sc > 0  # at s = 0 both runs start from P_0 = 0 (population discrepancy exactly 0)
ax[1].semilogy(sc[pos], traj.rel_discrepancy[pos], "o-", ms=3, label="held-out vs predicted")
ax[1].semilogy(sc[pos], traj.population_rel_discrepancy[pos], "s-", ms=3, label="exact risk of online $P_s$ vs predicted")
ax[1].set_xlabel("outer step $s$"); ax[1].set_title("relative discrepancy"); ax[1].legend()
save_figure(fig, "fig2_left_risk_overlap");

# %%
fig, ((a00, a01), (a10, a11)) = plt.subplots(2, 2, figsize=(10, 7))
a00.semilogy(sc, traj.observed, "o-", ms=3, label="direct $P_sd$")
a00.semilogy(sc, depth.target_risk, "s-", ms=3, label=fr"depth $L={L}$, error to $z_\star$")
a00.semilogy(sc, depth.solution_risk, "^-", ms=3, label=fr"depth $L={L}$, error to $z^\dagger$")
a00.axhline(traj.oracle_risk, ls=":", color=PALETTE[7]); a00.set_xlabel("outer step $s$"); a00.set_title("direct vs iterated"); a00.legend()
for y, st, lab in zip(depth.contractions, ("o-", "o--", "s-", "s--"), (r"mean $\|I-P_sH\|_2$", r"max $\|I-P_sH\|_2$",
                                                                       "mean spectral radius", "max spectral radius")):
    a01.plot(sc[depth.contraction_index], y, st, label=lab)
a01.axhline(1.0, color=PALETTE[7], lw=0.8); a01.set_xlabel("outer step $s$"); a01.set_title(f"contraction over {n_eval_prompts} held-out prompts"); a01.legend()
a10.semilogy(sc, traj.rel_err, "o-", ms=3, label="relative Frobenius error")
a10.semilogy(sc, traj.cos_defect, "s-", ms=3, label="cosine defect")
a10.set_xlabel("outer step $s$"); a10.set_title(r"$P_s \to P_\star$"); a10.legend()
for j, name in enumerate(("slow third", "middle third", "fast third")):
    a11.plot(traj.dense_steps, traj.group_weights[:, j], label=f"{name} of spec($C$)")
a11.plot(traj.dense_steps, traj.modal_entropy, "k:", label="normalised entropy")
a11.set_xlabel("outer step $s$"); a11.set_title(r"spectral-overlap weights $w_{s,i}$"); a11.legend()
fig.tight_layout(); save_figure(fig, "fig3_decoder_diagnostics");

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.0))
ax.plot(traj.dense_steps, traj.predicted_dense, label="predicted population curve")
ax.plot(sc, traj.observed, "o", ms=4, label="online checkpoints (held out)")
ax.axhline(traj.oracle_risk, ls=":", color=PALETTE[7], label=r"$R(P_\star)$")
ax.set_yscale("log"); ax.set_xlabel("outer step $s$"); ax.set_ylabel("decoder risk")
ax2 = ax.twinx(); ax2.semilogy(sc, traj.rel_err, "--", color=PALETTE[2], label="relative distance to $P_\\star$"); ax2.grid(False)
ax2.set_ylabel(r"$\|P_s-P_\star\|_F/\|P_\star\|_F$")
h1, l1 = ax.get_legend_handles_labels(); h2, l2 = ax2.get_legend_handles_labels(); ax.legend(h1 + h2, l1 + l2)
ax.set_title("online decoder training"); save_figure(fig, "fig5_online_decoder");

# %%
fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
for j in range(6):
    ax[0].semilogy(np.arange(L + 1), depth.certificate.error_norms[j], color=PALETTE[j])
    ax[0].semilogy(np.arange(L + 1), depth.certificate.bounds[j], "--", color=PALETTE[j], lw=1)
ax[0].set_xlabel(r"inner step $\ell$"); ax[0].set_title(r"$\|e_\ell\|$ (solid) and $\|I-PH\|^\ell\|e_0\|$ (dashed)")
ax[1].hist(np.log10(np.maximum(depth.certificate.ratio_final, 1e-300)), bins=40, color=PALETTE[0])
ax[1].set_xlabel(r"$\log_{10}$ error/bound at $\ell=L$"); ax[1].set_title(f"violation rate {depth.violation_rate:g}")
ax[2].bar(range(len(cover.coverage)), list(cover.coverage.values()), color=PALETTE[2])
ax[2].axhline(1 - delta, color="k", ls="--", label=r"$1-\delta$")
ax[2].set_xticks(range(len(cover.coverage)), list(cover.coverage)); ax[2].set_ylim(0.9, 1.005); ax[2].set_title("EB coverage"); ax[2].legend()
fig.tight_layout(); save_figure(fig, "fig9_certificates");

# %% [markdown]
# ## What the learned $P$ buys: unlearned preconditioners at the same depth
# The same held-out prompts are solved for $L$ and $L_{\rm small}$ steps from $z_0=0$ with the learned
# $P_{800}$ and with preconditioners that are not learned from tasks: the best scalar step $\eta I$, damped
# Jacobi $\omega\,\mathrm{diag}(H_M)^{-1}$ (both with the step fitted on separate training prompts),
# the population inverse $H_\infty^{-1}$, and the exact solve $H_M^{-1}$ (risk 0 against $z^\dagger$).
# The risk is measured against the system's solution $z^\dagger$ (`iclcore.richardson.baselines`).
# The learned $P$ is compared with the scalar step and $H_\infty^{-1}$ on the same prompts by win rates (share
# of prompts on which $P$ has the lower loss: robust to the comparators' heavy-tailed per-prompt losses) and
# by the paired standard error of the risk gap (`iclcore.richardson.decoder.learned_against_baselines`).

# %%
tr = sample_prompt_statistics(cfg, n_baseline_train, rng)
base = learned_against_baselines(runs.final, tr, ev, H_inf=cfg.H_infinity, L=L, L_small=L_small)
for ell, cmp, R_learned in zip(base.depths, base.comparisons, base.learned_risk):
    print(f"R_L at L = {ell}:", {**{m: f"{v:.2e}" for m, v in cmp.test_risk.items()}, "learned P": f"{R_learned:.2e}"})
print({k: f"{v[0]:.3f}" for k, v in base.win_rates.items()})

# %% [markdown]
# ## Standard errors of the single-run quantities
# $P_{800}$ comes from one SGD run. `n_replicas` further runs (independent streams, same setting) give the
# spread of a single run's value (`iclcore.stats.replica_spread` over the main run and the replicas); the
# held-out prompts add the standard error of a prompt mean (`standard_error`, or `paired_standard_error` for
# two preconditioners on the same prompts). Independent sources add in quadrature
# (`iclcore.richardson.decoder.single_run_errors`).

# %%
se_metrics = single_run_errors(runs.final, P_star, ev, trajectory=traj, depth=depth, L=L, d=d_ev, z_star=z_ev, clip=clip, delta=delta)
print({k: f"{v:.1e}" for k, v in se_metrics.items()})

# %%
runtime = time.perf_counter() - t_start
metrics = {"K": K, "M": M, "steps": steps, "batch": batch, "L": L, "eta": eta, "train_seconds": runs.seconds, "runtime_seconds": runtime,
           **traj.metrics(), **depth.metrics(), **cover.metrics(), **base.metrics(), **se_metrics,
           **{f"table_{k}": tab_learned[k] for k in (*reported, "ratio_max")},
           **{f"oracle_table_{k}": tab_oracle[k] for k in ("depth_risk", "mean_contraction", "stable_rank")}}
write_metrics(metrics)
print(f"runtime {runtime:.1f} s")
