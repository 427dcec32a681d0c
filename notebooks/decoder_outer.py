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

from iclcore.lsq.dynamics import gd_trajectory, modal_entropy, modal_weights
from iclcore.lsq.iterates import contraction_factor, richardson_certificate, richardson_error
from iclcore.lsq.moments import closed_form_moments, decoder_risk, oracle_preconditioner, oracle_risk
from iclcore.lsq.tasks import TaskConfig, sample_decoder_pairs, sample_prompt_statistics
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.baselines import (
    LinearSystems,
    compare_baselines,
    replica_gap_standard_error,
    replica_win_rate,
)
from iclcore.richardson.baselines import depth_risk as system_depth_risk
from iclcore.richardson.decoder import (
    DecoderRun,
    checkpoint_table,
    cosine_defect,
    depth_risk,
    empirical_decoder_risk,
    max_stable_step,
    online_decoder_run,
    predicted_risk_curve,
    relative_error,
    richardson_identity_residual,
)
from iclcore.stats import (
    binomial_standard_error,
    clipped_empirical_bernstein,
    eb_coverage_from_pool,
    ratio_standard_error,
    replica_spread,
    single_run_standard_error,
    standard_error,
)

use_style()
t_start = time.perf_counter()
rng = np.random.default_rng(seed)

# %% [markdown]
# ## Task distribution, population moments and the oracle
# Closed-form Wishart moments $C=E[dd^\top]$, $B=E[z_\star d^\top]$ with $d=c_M$, $z_\star=\beta$
# (`iclcore.lsq.moments.closed_form_moments`), the oracle $P_\star=BC^\dagger$ and its floor $R(P_\star)$.

# %%
cfg = TaskConfig(K=K, M=M, cond=cond, sigma=sigma, lam=lam)
mom = closed_form_moments(cfg)
P_star = oracle_preconditioner(mom)
R_star = oracle_risk(mom)
eta = max_stable_step(mom.C, eta_frac)
lamC = np.linalg.eigvalsh(mom.C)
print(f"R(P*) = {R_star:.4f}, cond(C) = {lamC[-1] / lamC[0]:.1f}, eta * lambda_min(C) * steps = {eta * lamC[0] * steps:.2f}")

# %% [markdown]
# ## Online training and the exact population prediction

# %%
ckpt = np.unique(np.linspace(0, steps, n_checkpoints).round().astype(int))
# the main run and the n_replicas replicas (further independent streams, used for standard errors below) are
# independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`); the main run draws
# its prompts from default_rng(seed), the stream of `rng`, which continues after it
t0 = time.perf_counter()
jobs = [DecoderRun(cfg, eta, steps, batch, seed, tuple(ckpt))] + [
    DecoderRun(cfg, eta, steps, batch, (seed, 1, j), (steps,)) for j in range(n_replicas)]
main, *replicas = map_configs(online_decoder_run, jobs, thread_budget(), label="decoder runs")
run = main.run
rng.bit_generator.state = main.rng_state
t_train = time.perf_counter() - t0
P0 = np.zeros((K, K))
s_dense = np.arange(steps + 1)
R_pred_dense = predicted_risk_curve(P0, mom, eta, s_dense)
R_pred = R_pred_dense[ckpt]
d_ev, z_ev = sample_decoder_pairs(cfg, n_eval, rng)
R_obs = empirical_decoder_risk(run.P, d_ev, z_ev)          # held-out risk of the online iterate
R_pop = decoder_risk(run.P, mom)                           # exact population risk of the online iterate
P_gd = gd_trajectory(P0, P_star, mom.C, eta, ckpt)         # exact population GD trajectory
rel_err = relative_error(run.P, P_star)
cos_def = cosine_defect(run.P, P_star)
rel_err_gd = relative_error(P_gd, P_star)
abs_disc = np.abs(R_obs - R_pred)
rel_disc = abs_disc / R_pred
# standard error of each held-out risk: std of the per-pair losses / sqrt(n_eval)
loss_ev = np.sum((np.einsum("tij,nj->tni", run.P, d_ev) - z_ev[None]) ** 2, axis=-1) / K
se_obs = standard_error(loss_ev, axis=1)
after = ckpt >= s_transient
print(f"training: {t_train:.1f} s for {1 + n_replicas} runs of {steps} steps x {batch} prompts")

# %% tags=["nbval-check-output"]
print(f"max over s >= {s_transient} of |R_obs - R_pred| / R_pred = {rel_disc[after].max():.1e}")
print(f"R_obs(final) = {R_obs[-1]:.3f}, R_pred(final) = {R_pred[-1]:.3f}, R(P*) = {R_star:.3f}")
print(f"||P_final - P*||_F / ||P*||_F = {rel_err[-1]:.1e}")

# %% [markdown]
# ## Inner solver with the learned $P_s$: direct estimator against depth-$L$ Richardson

# %%
ev = sample_prompt_statistics(cfg, n_eval_prompts, rng)
R_L_target = depth_risk(run.P, ev, L, "target")       # (1/K) E||z_L - z*||^2  (main paper R_L)
R_L_solution = depth_risk(run.P, ev, L, "solution")   # (1/K) E||z_L - z^dagger||^2 (MMNN report R_dec(L))
R_L_star = depth_risk(P_star, ev, L, "target")
R_ridge_floor = float(np.mean(np.sum((ev.z_dagger - ev.z_star) ** 2, 1)) / K)  # L -> infinity limit vs z*
# its expectation for Gaussian design, lam = 0 and M > K + 1 (inverse-Wishart mean): sigma^2 tr(Sigma_x^{-1})/(K(M-K-1))
floor_closed = {"R_floor_closed_form": float(sigma**2 * np.trace(np.linalg.inv(cfg.Sigma_x)) / (K * (M - K - 1)))
                } if lam == 0 and M > K + 1 else {}
R_1_eval = empirical_decoder_risk(run.P, ev.d, ev.z_star)

idx_c = np.unique(np.linspace(0, len(ckpt) - 1, n_contraction_checkpoints).round().astype(int))
contractions = {i: contraction_factor(run.P[i], ev.H_M) for i in idx_c}
con_mean, con_max, rad_mean, rad_max = np.array([(c.operator_norm.mean(), c.operator_norm.max(), c.spectral_radius.mean(),
                                                  c.spectral_radius.max()) for c in contractions.values()]).T

# %% [markdown]
# ## Spectral-overlap weights $w_{s,i}$ of the remaining error (eigenbasis of $C$)

# %%
W = modal_weights(P0, P_star, mom.C, eta, s_dense)      # (steps+1, K), columns: ascending lambda_i(C)
entropy = modal_entropy(W)
thirds = np.array_split(np.arange(K), 3)                 # slow / middle / fast modes of C
W_groups = np.stack([W[:, g].sum(1) for g in thirds], 1)

# %% [markdown]
# ## Certificates: exact error identity, norm bound, clipped empirical-Bernstein bound

# %%
P_fin = run.P[-1]
E = richardson_error(P_fin, ev.H_M, -ev.z_dagger, L)  # (n_eval_prompts, L + 1, K): e_l = z_l - z^dagger
identity_err = richardson_identity_residual(P_fin, ev.H_M, ev.d, ev.z_dagger, L)
viol = [richardson_certificate(run.P[i], ev.H_M, -ev.z_dagger, L, operator_norm=contractions[i].operator_norm).violation_rate
        for i in idx_c]
cert_fin = richardson_certificate(P_fin, ev.H_M, -ev.z_dagger, L)
violation_rate_all = float(np.max(viol))

loss_depth = cert_fin.error_norms[:, -1] ** 2 / K
eb_depth = clipped_empirical_bernstein(loss_depth, clip, delta)
loss_direct = np.sum((ev.d @ P_fin.T - ev.z_star) ** 2, 1) / K
eb_direct = clipped_empirical_bernstein(loss_direct, clip, delta)

# coverage: the EB inequality holds for every law on [0, c]; take the law of a large pool of fresh
# held-out losses (its clipped mean is known exactly) and redraw n_eval_prompts losses many times.
pool_prompts = sample_prompt_statistics(cfg, n_pool, rng)
pool_direct = np.sum((pool_prompts.d @ P_fin.T - pool_prompts.z_star) ** 2, 1) / K
pool_depth = np.sum(richardson_error(P_fin, pool_prompts.H_M, -pool_prompts.z_dagger, L)[:, -1] ** 2, 1) / K
P_init = run.P[0]  # the initial P_0 = 0: loss ||z*||^2/K of order one, clipping at c = 1 active
pool_init = np.sum((pool_prompts.d @ P_init.T - pool_prompts.z_star) ** 2, 1) / K
coverage = {}
for name, pool in (("direct_final", pool_direct), ("depth_final", pool_depth), ("direct_initial", pool_init)):
    coverage[name], _ = eb_coverage_from_pool(pool, n_eval_prompts, clip, delta, n_cov_repeats, rng)
# a law where the check has power: Bernoulli(p_cov) losses, small samples; the empirical mean alone
# (a deliberately wrong "bound") must fail to cover, so a coverage test that always passes would show
pool_bern = (rng.random(n_pool) < p_cov).astype(float)
coverage["bernoulli"], true_bern = eb_coverage_from_pool(pool_bern, n_cov_small, 1.0, delta, n_cov_repeats, rng)
coverage_plain_mean = float(np.mean(true_bern <= pool_bern[rng.integers(0, n_pool, (n_cov_repeats, n_cov_small))].mean(1)))
clipped_fraction_initial = float(np.mean(pool_init > clip))

# %%
print(f"identity error (the ledger's theorem row grades it): {identity_err:.1e}")

# %% tags=["nbval-check-output"]
print(f"certificate violation rate: {violation_rate_all}")
print(f"coverage (target 1 - delta = {1 - delta:g}, binomial s.e. {binomial_standard_error(delta, n_cov_repeats):.3f}):",
      {k: round(float(v), 3) for k, v in coverage.items()})

# %% [markdown]
# ## Table in the form of the experiment report Table 2 (learned linear-attention $P$ vs the oracle $P_\star$)

# %%
tab_learned = checkpoint_table(P_fin, P_star, ev, L, clip, delta)
tab_oracle = checkpoint_table(P_star, P_star, ev, L, clip, delta)
rows = [
    ("held-out depth risk (1/K)E||e_L||^2", "depth_risk", "7.6747e-03"),
    ("clipped EB upper", "eb_upper", "1.7710e-01"),
    ("optimization violation rate", "violation_rate", "0"),
    ("error / bound ratio (mean)", "ratio_mean", "2.2833e-02"),
    ("mean contraction E||I-PH||", "mean_contraction", "1.1031"),
    ("relative distance to oracle P*", "rel_dist_oracle", "2.6788e-01"),
    ("stable rank of P", "stable_rank", "2.9198"),
]
print(f"{'quantity':40s} {'learned P_s':>12s} {'oracle P*':>12s} {'report (Flexformer, reported)':>32s}")
for label, key, rep in rows:
    print(f"{label:40s} {tab_learned[key]:12.4e} {tab_oracle[key]:12.4e} {rep:>32s}")

# %% [markdown]
# ## Figures

# %%
sc = ckpt
fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
ax[0].semilogy(sc, rel_err, "o-", ms=3, label=r"$\|P_s-P_\star\|_F/\|P_\star\|_F$ (online)")
ax[0].semilogy(sc, cos_def, "s-", ms=3, label=r"cosine defect $1-\cos(P_s,P_\star)$")
ax[0].semilogy(sc, rel_err_gd, "--", color=PALETTE[7], lw=1, label="relative error, population GD")
ax[0].set_xlabel("outer step $s$"); ax[0].set_title("learned $P_s$ against the oracle"); ax[0].legend()
ax[1].semilogy(sc, R_obs, "o-", ms=3, label=r"direct $R_1(P_s)$: $P_sd$")
ax[1].semilogy(sc, R_L_target, "s-", ms=3, label=fr"Richardson $R_L(P_s)$, $L={L}$")
ax[1].axhline(R_star, ls=":", color=PALETTE[7], label=r"oracle floor $R(P_\star)$")
ax[1].axhline(R_ridge_floor, ls="-.", color=PALETTE[2], lw=1, label=r"$L\to\infty$ limit $(1/K)E\|z^\dagger-z_\star\|^2$")
ax[1].set_xlabel("outer step $s$"); ax[1].set_title("what $P_s$ buys the solver"); ax[1].legend()
fig.tight_layout()
save_figure(fig, "fig1_decoder");

# %%
fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
ax[0].plot(s_dense, R_pred_dense, color=PALETTE[0], label="predicted (exact population GD)")
ax[0].plot(sc, R_obs, "o", ms=4, color=PALETTE[1], label="observed (online, held out)")
ax[0].axhline(R_star, ls=":", color=PALETTE[7], label=r"oracle floor $R(P_\star)$")
ax[0].set_yscale("log"); ax[0].set_xlabel("outer step $s$"); ax[0].set_ylabel("decoder risk"); ax[0].legend()
ax[0].set_title("observed vs predicted risk")
pos = sc > 0  # at s = 0 both runs start from P_0 = 0 (population discrepancy exactly 0)
ax[1].semilogy(sc[pos], rel_disc[pos], "o-", ms=3, label="held-out vs predicted")
ax[1].semilogy(sc[pos], (np.abs(R_pop - R_pred) / R_pred)[pos], "s-", ms=3, label="exact risk of online $P_s$ vs predicted")
ax[1].set_xlabel("outer step $s$"); ax[1].set_title("relative discrepancy"); ax[1].legend()
save_figure(fig, "fig2_left_risk_overlap");

# %%
fig, ax = plt.subplots(2, 2, figsize=(10, 7))
a = ax[0, 0]
a.semilogy(sc, R_obs, "o-", ms=3, label="direct $P_sd$")
a.semilogy(sc, R_L_target, "s-", ms=3, label=fr"depth $L={L}$, error to $z_\star$")
a.semilogy(sc, R_L_solution, "^-", ms=3, label=fr"depth $L={L}$, error to $z^\dagger$")
a.axhline(R_star, ls=":", color=PALETTE[7]); a.set_xlabel("outer step $s$"); a.set_title("direct vs iterated"); a.legend()
a = ax[0, 1]
a.plot(sc[idx_c], con_mean, "o-", label=r"mean $\|I-P_sH\|_2$")
a.plot(sc[idx_c], con_max, "o--", label=r"max $\|I-P_sH\|_2$")
a.plot(sc[idx_c], rad_mean, "s-", label="mean spectral radius")
a.plot(sc[idx_c], rad_max, "s--", label="max spectral radius")
a.axhline(1.0, color=PALETTE[7], lw=0.8); a.set_xlabel("outer step $s$"); a.set_title(f"contraction over {n_eval_prompts} held-out prompts"); a.legend()
a = ax[1, 0]
a.semilogy(sc, rel_err, "o-", ms=3, label="relative Frobenius error")
a.semilogy(sc, cos_def, "s-", ms=3, label="cosine defect")
a.set_xlabel("outer step $s$"); a.set_title(r"$P_s \to P_\star$"); a.legend()
a = ax[1, 1]
for j, name in enumerate(("slow third", "middle third", "fast third")):
    a.plot(s_dense, W_groups[:, j], label=f"{name} of spec($C$)")
a.plot(s_dense, entropy, "k:", label="normalised entropy")
a.set_xlabel("outer step $s$"); a.set_title(r"spectral-overlap weights $w_{s,i}$"); a.legend()
fig.tight_layout()
save_figure(fig, "fig3_decoder_diagnostics");

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.0))
ax.plot(s_dense, R_pred_dense, label="predicted population curve")
ax.plot(sc, R_obs, "o", ms=4, label="online checkpoints (held out)")
ax.axhline(R_star, ls=":", color=PALETTE[7], label=r"$R(P_\star)$")
ax.set_yscale("log"); ax.set_xlabel("outer step $s$"); ax.set_ylabel("decoder risk")
ax2 = ax.twinx(); ax2.semilogy(sc, rel_err, "--", color=PALETTE[2], label="relative distance to $P_\\star$"); ax2.grid(False)
ax2.set_ylabel(r"$\|P_s-P_\star\|_F/\|P_\star\|_F$")
h1, l1 = ax.get_legend_handles_labels(); h2, l2 = ax2.get_legend_handles_labels(); ax.legend(h1 + h2, l1 + l2)
ax.set_title("online decoder training")
save_figure(fig, "fig5_online_decoder");

# %%
fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
ells = np.arange(L + 1)
for j in range(6):
    ax[0].semilogy(ells, cert_fin.error_norms[j], color=PALETTE[j])
    ax[0].semilogy(ells, cert_fin.bounds[j], "--", color=PALETTE[j], lw=1)
ax[0].set_xlabel(r"inner step $\ell$"); ax[0].set_title(r"$\|e_\ell\|$ (solid) and $\|I-PH\|^\ell\|e_0\|$ (dashed)")
ax[1].hist(np.log10(np.maximum(cert_fin.ratio_final, 1e-300)), bins=40, color=PALETTE[0])
ax[1].set_xlabel(r"$\log_{10}$ error/bound at $\ell=L$"); ax[1].set_title(f"violation rate {violation_rate_all:g}")
names = list(coverage)
ax[2].bar(range(len(names)), [coverage[n] for n in names], color=PALETTE[2])
ax[2].axhline(1 - delta, color="k", ls="--", label=r"$1-\delta$")
ax[2].set_xticks(range(len(names)), names); ax[2].set_ylim(0.9, 1.005); ax[2].set_title("EB coverage"); ax[2].legend()
fig.tight_layout()
save_figure(fig, "fig9_certificates");

# %% [markdown]
# ## What the learned $P$ buys: unlearned preconditioners at the same depth
# The same held-out prompts are solved for $L$ and $L_{\rm small}$ steps from $z_0=0$ with the learned
# $P_{800}$ and with preconditioners that are not learned from tasks: the best scalar step $\eta I$, damped
# Jacobi $\omega\,\mathrm{diag}(H_M)^{-1}$ (both with the step fitted on separate training prompts),
# the population inverse $H_\infty^{-1}$, and the exact solve $H_M^{-1}$ (risk 0 against $z^\dagger$).
# The risk is measured against the system's solution $z^\dagger$ (`iclcore.richardson.baselines`).

# %%
sys_test = LinearSystems(H=ev.H_M, d=ev.d, x_star=ev.z_dagger)
tr = sample_prompt_statistics(cfg, n_baseline_train, rng)
sys_train = LinearSystems(H=tr.H_M, d=tr.d, x_star=tr.z_dagger)
methods = ("scalar", "jacobi", "h_inf", "exact")
cmp_L = compare_baselines(sys_train, sys_test, L, methods=methods, H_inf=cfg.H_infinity)
cmp_small = compare_baselines(sys_train, sys_test, L_small, methods=methods, H_inf=cfg.H_infinity)
R_base_learned = {ell: system_depth_risk(run.P[-1], sys_test, ell) for ell in (L_small, L)}
print(f"{'method':10s} {'R_L (L=' + str(L_small) + ')':>14s} {'R_L (L=' + str(L) + ')':>14s}")
for m in methods:
    print(f"{m:10s} {cmp_small.test_risk[m]:14.2e} {cmp_L.test_risk[m]:14.2e}")
print(f"{'learned P':10s} {R_base_learned[L_small]:14.2e} {R_base_learned[L]:14.2e}")

# %% [markdown]
# ## Standard errors of the single-run quantities
# $P_{800}$ comes from one SGD run. `n_replicas` further runs (independent streams, same setting) give the
# spread of a single run's value (`iclcore.stats.replica_spread` over the main run and the replicas); the
# held-out prompts add the standard error of a prompt mean (`standard_error`, or `paired_standard_error` for
# two preconditioners on the same prompts). Independent sources add in quadrature.

# %%
P_rep = np.stack([P_fin] + [r.run.P[-1] for r in replicas])  # (1 + n_replicas, K, K), trained above
rel_err_rep = relative_error(P_rep, P_star)
R_obs_rep = empirical_decoder_risk(P_rep, d_ev, z_ev)
R_depth_rep = depth_risk(P_rep, ev, L, "target")
con_rep = np.array([contraction_factor(P, ev.H_M).operator_norm.mean() for P in P_rep])
loss_target = np.sum((E[:, -1] + ev.z_dagger - ev.z_star) ** 2, 1) / K   # per-prompt (1/K)||z_L - z*||^2, P_800
assert np.isclose(loss_target.mean(), R_L_target[-1], rtol=1e-10)
con_prompts = contraction_factor(P_fin, ev.H_M).operator_norm
R_obs_final_se = single_run_standard_error(R_obs_rep, se_obs[-1])  # replica spread and prompt SE in quadrature
R_depth_final_se = single_run_standard_error(R_depth_rep, standard_error(loss_target))


# the learned P against the scalar step and H_inf^{-1} on the same prompts: win rates (share of prompts on which P
# has the lower loss: robust to the comparators' heavy-tailed per-prompt losses) and the paired SE of the risk gap
rivals = {(tag, ell): {m: cmp.baselines[m].preconditioners(sys_test.H) for m in ("scalar", "h_inf")}
          for tag, cmp, ell in (("", cmp_L, L), ("_small", cmp_small, L_small))}
win_metrics = {}
for (tag, ell), rv in rivals.items():
    for m, R in rv.items():
        win_metrics[f"baseline{tag}_win_{m}"], win_metrics[f"baseline{tag}_win_{m}_se"] = replica_win_rate(P_rep, R, sys_test, ell)
print({k: f"{v:.3f}" for k, v in win_metrics.items()})

# Table 2 quantities of P_800: SGD spread over the replicas (same prompts) and, for prompt means, the prompt SE
tab_rep = [checkpoint_table(P, P_star, ev, L, clip, delta) for P in P_rep]
loss_solution = np.sum(E[:, -1] ** 2, 1) / K                              # per-prompt (1/K)||z_L - z^dagger||^2
table_prompt_se = {"depth_risk": standard_error(loss_solution), "ratio_mean": standard_error(cert_fin.ratio_final),
                   "stable_rank": 0.0}  # the stable rank of P does not depend on the prompts
se_metrics = {
    **{f"table_{k}_se": single_run_standard_error([tb[k] for tb in tab_rep], v) for k, v in table_prompt_se.items()},
    "rel_err_final_se": replica_spread(rel_err_rep),
    "R_obs_final_se": R_obs_final_se,
    "R_depth_final_se": R_depth_final_se,
    "direct_over_depth_se": ratio_standard_error(R_obs[-1], R_obs_final_se, R_L_target[-1], R_depth_final_se),
    "mean_contraction_final_se": single_run_standard_error(con_rep, standard_error(con_prompts)),
    "baseline_gap_se": replica_gap_standard_error(P_rep, list(rivals["", L].values()), sys_test, L),
    "baseline_small_gap_se": replica_gap_standard_error(P_rep, list(rivals["_small", L_small].values()), sys_test, L_small),
    "n_replicas": n_replicas,
}
print({k: f"{v:.1e}" for k, v in se_metrics.items()})

# %%
runtime = time.perf_counter() - t_start
metrics = {
    "K": K, "M": M, "steps": steps, "batch": batch, "L": L, "eta": eta,
    "oracle_risk": R_star,
    "max_abs_discrepancy": abs_disc.max(),
    "max_rel_discrepancy": rel_disc.max(),
    "max_rel_discrepancy_after_transient": rel_disc[after].max(),
    "max_abs_discrepancy_after_transient": abs_disc[after].max(),
    "max_rel_pop_vs_pred": (np.abs(R_pop - R_pred) / R_pred).max(),
    "max_rel_pop_vs_pred_after_transient": (np.abs(R_pop - R_pred) / R_pred)[after].max(),
    "max_rel_se_eval_after_transient": (se_obs / R_pred)[after].max(),
    "max_z_obs_vs_pop_after_transient": (np.abs(R_obs - R_pop) / se_obs)[after].max(),
    "R_obs_final": R_obs[-1],
    "R_pred_final": R_pred[-1],
    "R_obs_over_pred_final": R_obs[-1] / R_pred[-1],
    "rel_err_final": rel_err[-1],
    "cos_defect_final": cos_def[-1],
    "rel_err_gd_final": rel_err_gd[-1],
    "R_direct_final": R_obs[-1],
    "R_direct_final_eval_prompts": R_1_eval[-1],
    "R_depth_final": R_L_target[-1],
    "R_depth_solution_final": R_L_solution[-1],
    "R_depth_oracle": R_L_star,
    "R_ridge_floor": R_ridge_floor,
    **floor_closed,
    "direct_over_depth": R_obs[-1] / R_L_target[-1],
    "mean_contraction_final": con_mean[-1],
    "max_contraction_final": con_max[-1],
    "mean_radius_final": rad_mean[-1],
    "entropy_final": entropy[-1],
    "slow_third_weight_initial": float(W[0, thirds[0]].sum()),
    "slow_third_weight_final": float(W[-1, thirds[0]].sum()),
    "identity_max_error": identity_err,
    "violation_rate": violation_rate_all,
    "eb_upper_depth": eb_depth.upper,
    "eb_upper_direct": eb_direct.upper,
    **{f"coverage_{k}": coverage[k] for k in ("direct_final", "depth_final", "direct_initial")},
    "coverage_min": min(coverage.values()),
    "coverage_bernoulli": coverage["bernoulli"],
    "coverage_plain_mean_bernoulli": coverage_plain_mean,
    "clipped_fraction_initial": clipped_fraction_initial,
    **{f"table_{k}": tab_learned[k] for k in ("depth_risk", "eb_upper", "violation_rate", "ratio_mean", "ratio_max",
                                              "mean_contraction", "rel_dist_oracle", "stable_rank")},
    **{f"oracle_table_{k}": tab_oracle[k] for k in ("depth_risk", "mean_contraction", "stable_rank")},
    **{f"baseline_risk_{m}": v for m, v in cmp_L.test_risk.items()},
    "baseline_risk_learned": float(R_base_learned[L]),
    **{f"baseline_risk_small_{m}": v for m, v in cmp_small.test_risk.items()},
    "baseline_risk_small_learned": float(R_base_learned[L_small]),
    "baseline_scalar_eta": cmp_L.baselines["scalar"].param,
    "baseline_jacobi_omega": cmp_L.baselines["jacobi"].param,
    **se_metrics,
    **win_metrics,
    "train_seconds": t_train,
    "runtime_seconds": runtime,
}
write_metrics(metrics)
print(f"runtime {runtime:.1f} s")
