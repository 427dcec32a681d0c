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
# # The exact scalar proof ladder (the main paper, Figure 8)
# This notebook recomputes Figure 8 of the main paper (§12.8; statements in §3.1, §5.1, §6.4–§7, numbers in §11).
# Each rung sets a closed form against the matrix iteration it claims to describe:
# (a) decoder-only population gradient descent and its modal risk formula,
# (b) encoder-only gradient descent and its modal risk formula,
# (c) the commuting coupled encoder/decoder system and its mode-wise scalar closure,
# (d) the §7 counterexample (equal risk, different future), and
# (e) the non-commuting coupled system of §6.6: its ordered product/sum formula is exact,
# but no fixed-basis scalar closure tracks it. Panel (f) shows the pointwise errors.

# %% tags=["parameters", "hide-input"]
K = 8               # decoder dimension (panel a): P is K x K; range: [1, 1000]
r = 6               # latent / encoder dimension (panels b, c, e); range: [1, 200]
steps = 200         # outer (pretraining) gradient steps s in 0..steps; range: [1, 10000]
cond = 30.0         # condition number of the decoder operator H (panel a); range: [1, inf)
noise_var = 0.1     # noise variance (sigma^2 in a, b; tau^2 in c, e); range: [0, inf)
eta_d_frac = 0.25   # decoder step as a fraction of the stability bound 2/lambda_max; range: (0, 1)
eta_e_frac = 0.45   # encoder step as a fraction of 2/lambda_max(Sigma_z); < 0.5 keeps g_i(s) monotone; range: (0, 1)
L = 4               # Richardson depth of the decoder risk R_dec(s, L); range: [1, 50]
eta_cx = 0.1        # counterexample step size (panel d); range: (0, inf)
lam_a = 1.8         # counterexample: eigenvalue carrying the error of state A; range: (0, inf)
lam_b = 5.6         # counterexample: eigenvalue carrying the error of state B; range: (0, inf)
R0_cx = 1.0         # counterexample: common initial risk; range: (0, inf)
cx_steps = 6        # counterexample: steps shown; range: [1, 50]
n_check = 40        # number of outer times sampled for the commutator / joint diagonaliser; range: [1, 500]
seed = 0            # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"K": 64, "r": 16, "steps": 800}}

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np

from iclcore.linalg import haar_orthogonal
from iclcore.lsq.dynamics import covariance_from_spectrum
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.counterexample import counterexample
from iclcore.richardson.proof_ladder import (
    check_times,
    commuting_closure_control,
    commuting_rung,
    decoder_rung,
    encoder_rung,
    noncommuting_rung,
)

use_style()
rng = np.random.default_rng(seed)
s_grid = np.arange(steps + 1)
check_idx = check_times(steps, n_check)

# %% [markdown]
# ## (a) Decoder only (the main paper §3.1)
# Prompt statistics $d = H z_\star + \xi$ with $z_\star \sim \mathcal N(0, \Sigma_z)$, $\xi \sim \mathcal N(0, \sigma^2 I)$,
# so $C = H\Sigma_z H^\top + \sigma^2 I$, $B = \Sigma_z H^\top$, $P_\star = BC^\dagger$.
# The iteration $P_{s+1} = P_s - \eta(P_sC - B)$ starts at $P_0 = 0$. "Iteration" below is the population
# risk $\mathcal R_{\rm dec}(P_s) - \mathcal R_{\rm dec}(P_\star)$ computed from the moments at the looped $P_s$;
# "closed form" is $\frac1K\sum_i \lambda_i(1-\eta\lambda_i)^{2s}\|(P_0-P_\star)q_i\|^2$ computed from $P_0$ alone.

# %%
dec = decoder_rung(rng, K=K, cond=cond, noise_var=noise_var, eta_frac=eta_d_frac, steps=steps)
print(f"eta = {dec.eta:.4f}, excess risk {dec.risk_modal[0]:.4f} -> {dec.risk_modal[-1]:.3e}")
print(f"max |modal - iteration| = {dec.max_error:.3e}, trajectory rel. error = {dec.max_error_trajectory_rel:.3e}")

# %% [markdown]
# ## (b) Encoder only (the main paper §5.1)
# $b = G_\star z + \eta_b$, $\Sigma_{bz} = G_\star \Sigma_z$; $G_{s+1} = G_s - \eta_e(G_s\Sigma_z - \Sigma_{bz})$ from $G_0 = 0$.
# The main paper writes the encoder risk without normalisation ($\mathcal R_{\rm enc}(G) = \mathbb E\|Gz-b\|^2$), so the modal
# formula is $\sum_i \mu_i (1-\eta_e\mu_i)^{2s}\|(G_0-G_\star)v_i\|^2$ (scale 1).

# %%
enc = encoder_rung(rng, K=K, r=r, noise_var=noise_var, eta_frac=eta_e_frac, steps=steps)
print(f"eta_e = {enc.eta:.4f}, excess risk {enc.risk_modal[0]:.4f} -> {enc.risk_modal[-1]:.3e}")
print(f"max |modal - iteration| = {enc.max_error:.3e}, trajectory rel. error = {enc.max_error_trajectory_rel:.3e}")

# %% [markdown]
# ## (c) Commuting coupled system (the main paper §6.4–§6.5)
# The latent model of `iclcore.richardson.latent_model`: $A(G) = G^\top H G$, $C(G) = G^\top\Sigma_c G$, $B(G) = A(G)^{-1}C(G)$,
# all diagonal in one random orthonormal basis $V$ together with $\Sigma_z$ and $G_\star$. The scalar side uses
# only $g_i(s) = g_i^\star + (g_i(0)-g_i^\star)(1-\eta_e\sigma_i)^s$, the mode coefficients
# $a_i = h_i g_i^2$, $c_i = \kappa_i g_i^2$, $b_i = \kappa_i/h_i$, $w_i = \kappa_i/(r h_i^2 g_i^2)$ and the product/sum formula
# for $p_i(s)$; the matrix side iterates $G_s$ and $P_s$ as full $r\times r$ matrices and evaluates
# $\frac1r\operatorname{tr}[(I-P_sA_s)^L\,\mathbb E z^\dagger z^{\dagger\top}\,(I-P_sA_s)^{L\top}]$.

# %%
com = commuting_rung(rng, r=r, noise_var=noise_var, eta_e_frac=eta_e_frac, eta_d_frac=eta_d_frac, steps=steps, L=L,
                     check_idx=check_idx)
print(f"eta_e = {com.eta_e:.4f}, eta_d = {com.eta_d:.4f}; R_dec(s, L) {com.risk_matrix[0]:.4f} -> {com.risk_matrix[-1]:.3e}")
print(f"max |closure - matrix| = {com.max_error:.3e}; P_s rel. error = {com.max_error_modes_rel:.3e}")

# %% [markdown]
# ## (d) Counterexample (the main paper §7)
# Two errors with the same risk $R_0 = e_0^\top C e_0$, placed on eigenvectors with different eigenvalues
# ($C = \operatorname{diag}(\lambda_a, \lambda_b)$ in a random basis), evolve by $e_{s+1} = (I-\eta C)e_s$:
# $R_1 = (1-\eta\lambda)^2 R_0$. The paper states neither $\eta$ nor $\lambda$; the defaults
# $\eta = 0.1$, $\lambda = (1.8, 5.6)$ are one choice that yields its reported $R_1$ values.

# %%
C_cx = covariance_from_spectrum(np.array([lam_a, lam_b]), haar_orthogonal(2, rng))
i_a, i_b = (0, 1) if lam_a <= lam_b else (1, 0)
cx = counterexample(C_cx, eta_cx, i_a, j=i_b, R0=R0_cx, n_steps=cx_steps)
print(f"R_0 = {cx.risk_a[0]:.4f}, {cx.risk_b[0]:.4f};  R_1 = {cx.risk_a[1]:.4f}, {cx.risk_b[1]:.4f}")

# %% [markdown]
# ## (e) Non-commuting coupled system (the main paper §6.6)
# The same latent model with $H$, $\Sigma_z$ and $G_\star$ in three unrelated random bases and $G_0 = \frac12 I$.
# The tracking error $E_s = P_s - P_z^\star(G_s)$ obeys $E_{s+1} = E_s(I-\eta_d C_s) + D_s$; we evaluate the ordered
# product/sum formula literally and compare it with the iteration. Then we run the §6.5 scalar closure in several
# fixed bases: the eigenbases of $C_0$, $C_S$, $A_S$, and the basis that jointly diagonalises
# $\{C_t, A_t, \mathbb E z_t^\dagger z_t^{\dagger\top}\}$ best (Jacobi joint diagonalisation); the smallest mismatch
# over these is reported. The commutator defect certifies that no basis can do better than approximately.

# %%
nc = noncommuting_rung(rng, com.model, eta_e_frac=eta_e_frac, eta_d_frac=eta_d_frac, steps=steps, L=L, check_idx=check_idx)
# control: the same closure procedure on the commuting system (joint diagonaliser of its matrices)
control = commuting_closure_control(com, L, check_idx)
for k in nc.mismatches:
    print(f"closure in basis {k:12s}: relative sup mismatch {nc.mismatches[k]:.3f}, max log10 ratio {nc.log_ratios[k]:.2f}")
print(f"commutator defect: non-commuting {nc.commutator:.3f}, commuting {com.commutator:.1e}")

# %%
fig, axes = plt.subplots(2, 3, figsize=(13.5, 7.6))
mk = dict(ls="none", marker="o", ms=3.5, mfc="none")
every = max(1, steps // 25)
sub = s_grid[::every]
for ax, rung, title, name, X in ((axes[0, 0], dec, "(a) decoder only", "dec", "P"), (axes[0, 1], enc, "(b) encoder only", "enc", "G")):
    ax.semilogy(s_grid, rung.risk_modal, color=PALETTE[0], label="modal formula")
    ax.semilogy(sub, rung.risk_iteration[::every], color=PALETTE[1], label="matrix iteration", **mk)
    ax.set(title=title, xlabel="outer step $s$", ylabel=rf"$\mathcal{{R}}_{{\rm {name}}}({X}_s)-\mathcal{{R}}_{{\rm {name}}}({X}_\star)$")
    ax.legend()

ax = axes[0, 2]
for i in range(r):
    ax.semilogy(s_grid, com.mode_terms[:, i], color="0.75", lw=0.8, label="mode terms $w_i(1-p_ia_i)^{2L}$" if i == 0 else None)
ax.semilogy(s_grid, com.risk_closure, color=PALETTE[0], label="scalar closure")
ax.semilogy(sub, com.risk_matrix[::every], color=PALETTE[1], label="matrix iteration", **mk)
ax.set(title=f"(c) commuting coupled system, $L={L}$", xlabel="outer step $s$", ylabel=r"$\mathcal{R}_{\rm dec}(s,L)$")
ax.set_ylim(max(com.risk_matrix.min(), 1e-300) * 1e-3, com.risk_matrix.max() * 10)
ax.legend()

ax = axes[1, 0]
ax.plot(cx.steps, cx.predicted_a, color=PALETTE[0], label=rf"$(1-\eta\lambda_a)^{{2s}}R_0$, $\lambda_a={cx.lam_a:g}$")
ax.plot(cx.steps, cx.predicted_b, color=PALETTE[2], label=rf"$(1-\eta\lambda_b)^{{2s}}R_0$, $\lambda_b={cx.lam_b:g}$")
ax.plot(cx.steps, cx.risk_a, color=PALETTE[1], **mk, label="iteration")
ax.plot(cx.steps, cx.risk_b, color=PALETTE[1], **mk)
ax.annotate(f"$R_1^A={cx.risk_a[1]:.4f}$", (1, cx.risk_a[1]), xytext=(8, 6), textcoords="offset points")
ax.annotate(f"$R_1^B={cx.risk_b[1]:.4f}$", (1, cx.risk_b[1]), xytext=(10, 2), textcoords="offset points")
ax.set(title=rf"(d) counterexample, $\eta={cx.eta:g}$", xlabel="step $s$", ylabel=r"$R_s=e_s^\top C e_s$")
ax.legend()

ax = axes[1, 1]
ax.semilogy(s_grid, nc.risk_matrix, color=PALETTE[1], label="matrix iteration")
ax.semilogy(sub, nc.risk_product_sum[::every], color=PALETTE[0], label="product/sum formula", **mk)
for (k, v), ls, col in zip(nc.closure_risks.items(), ["--", ":", "-.", (0, (5, 1))], PALETTE[2:]):
    ax.semilogy(s_grid, v, ls=ls, color=col, lw=1.2, label=f"scalar closure, {k}")
ax.set(title="(e) non-commuting coupled system", xlabel="outer step $s$", ylabel=r"$\mathcal{R}_{\rm dec}(s,L)$")
ax.legend(fontsize=7)

ax = axes[1, 2]
for y, lab, col in ((dec.error, "(a) decoder risk", PALETTE[0]), (enc.error, "(b) encoder risk", PALETTE[1]), (com.error, "(c) commuting risk", PALETTE[2]),
                    (nc.error, r"(e) $\|E_s^{\rm formula}-E_s\|_F\,/\,\max_s\|E_s\|_F$", PALETTE[3])):
    ax.semilogy(s_grid, np.maximum(y, 1e-20), color=col, lw=1.0, label=lab)
ax.axhline(np.finfo(float).eps, color="k", lw=0.8, ls="--", label="machine epsilon")
ax.set(title="(f) closed form vs iteration: pointwise error", xlabel="outer step $s$", ylabel="error (exact zeros drawn at $10^{-20}$)")
ax.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig8_ladder");

# %% [markdown]
# Spectral-overlap weights of the decoder error (the main paper §3.1, §12.3): the same scalar risk is carried by
# different modes at different times, which is why the risk alone is not a state (panel d).

# %%
fig2, ax = plt.subplots(1, 2, figsize=(10, 3.4))
ax[0].stackplot(s_grid, dec.weights.T, colors=plt.cm.viridis(np.linspace(0, 1, K)))
ax[0].set(xlabel="outer step $s$", ylabel="$w_{s,i}$ (slow modes at the bottom)", title="(a) decoder: error weights by mode", ylim=(0, 1))
ax[1].plot(s_grid, dec.entropy, color=PALETTE[0])
ax[1].set(xlabel="outer step $s$", ylabel=r"$H(\Omega_s)$", title="normalised entropy of the weights", ylim=(0, 1.02))
fig2.tight_layout()
save_figure(fig2, "fig8_weights");

# %%
print(f"closed forms, largest errors: decoder {dec.max_error:.1e}, encoder {enc.max_error:.1e}, "
      f"commuting {com.max_error:.1e}, non-commuting product-sum (relative) {nc.max_error_product_sum_rel:.1e}")
print(f"commuting control closure mismatch: {control.mismatch:.1e}")

# %% tags=["nbval-check-output"]
print("counterexample R_1:", round(float(cx.risk_a[1]), 6), round(float(cx.risk_b[1]), 6))
print(f"non-commuting closure mismatch: {nc.best_mismatch:.2f}")

# %%
write_metrics({
    "max_err_decoder": dec.max_error, "max_err_encoder": enc.max_error, "max_err_commuting": com.max_error,
    "max_err_decoder_population": dec.max_error_population, "max_err_encoder_population": enc.max_error_population,
    "max_err_decoder_traj_rel": dec.max_error_trajectory_rel, "max_err_encoder_traj_rel": enc.max_error_trajectory_rel,
    "max_err_commuting_modes_rel": com.max_error_modes_rel, "max_err_commuting_product_sum_rel": com.max_error_product_sum_rel,
    "max_err_noncommuting_product_sum_rel": nc.max_error_product_sum_rel,
    "decoder_excess_risk_initial": float(dec.risk_modal[0]), "decoder_excess_risk_final": float(dec.risk_modal[-1]),
    "decoder_entropy_initial": float(dec.entropy[0]), "decoder_entropy_final": float(dec.entropy[-1]),
    "encoder_excess_risk_initial": float(enc.risk_modal[0]), "encoder_excess_risk_final": float(enc.risk_modal[-1]),
    "commuting_risk_initial": float(com.risk_matrix[0]), "commuting_risk_final": float(com.risk_matrix[-1]),
    "commuting_commutator": com.commutator, "commuting_closure_mismatch": control.mismatch,
    "noncommuting_commutator": nc.commutator, "noncommuting_closure_mismatch": nc.best_mismatch,
    "noncommuting_closure_decades": nc.best_log_ratio, "commuting_closure_decades": control.log_ratio,
    "noncommuting_closure_mismatch_eigC0": nc.mismatches["eig $C_0$"], "noncommuting_closure_mismatch_joint": nc.mismatches["joint diag."],
    "cx_eta": cx.eta, "cx_lam_a": cx.lam_a, "cx_lam_b": cx.lam_b, "cx_R0_a": float(cx.risk_a[0]), "cx_R0_b": float(cx.risk_b[0]),
    "cx_R1_a": float(cx.risk_a[1]), "cx_R1_b": float(cx.risk_b[1]),
    "eta_decoder": dec.eta, "eta_encoder": enc.eta, "eta_d_commuting": com.eta_d, "eta_d_noncommuting": nc.eta_d,
})
