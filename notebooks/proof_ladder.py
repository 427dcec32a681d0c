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

from iclcore.linalg import haar_orthogonal, joint_diagonalizer
from iclcore.lsq.dynamics import (
    covariance_from_spectrum,
    decoder_moments,
    encoder_moments,
    excess_risk,
    gd_iterate,
    gd_trajectory,
    modal_entropy,
    modal_excess_risk,
    modal_weights,
    quadratic_minimizer,
    quadratic_risk,
)
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.richardson.closure import (
    closure_log_ratio,
    closure_mismatch,
    commutator_defect,
    encdec_iterate,
    fixed_basis_closure_risk,
    mode_product_sum,
    mode_recursion,
    richardson_matrix_risk,
    richardson_mode_risk,
    tracking_error_product_sum,
)
from iclcore.richardson.counterexample import counterexample
from iclcore.richardson.latent_model import CommutingModel, LatentModel

use_style()
rng = np.random.default_rng(seed)
s_grid = np.arange(steps + 1)

# %% [markdown]
# ## (a) Decoder only (the main paper §3.1)
# Prompt statistics $d = H z_\star + \xi$ with $z_\star \sim \mathcal N(0, \Sigma_z)$, $\xi \sim \mathcal N(0, \sigma^2 I)$,
# so $C = H\Sigma_z H^\top + \sigma^2 I$, $B = \Sigma_z H^\top$, $P_\star = BC^\dagger$.
# The iteration $P_{s+1} = P_s - \eta(P_sC - B)$ starts at $P_0 = 0$. "Iteration" below is the population
# risk $\mathcal R_{\rm dec}(P_s) - \mathcal R_{\rm dec}(P_\star)$ computed from the moments at the looped $P_s$;
# "closed form" is $\frac1K\sum_i \lambda_i(1-\eta\lambda_i)^{2s}\|(P_0-P_\star)q_i\|^2$ computed from $P_0$ alone.

# %%
H_dec = covariance_from_spectrum(np.geomspace(1.0 / cond, 1.0, K), haar_orthogonal(K, rng))
Sigma_dec = covariance_from_spectrum(rng.uniform(0.5, 1.5, K), haar_orthogonal(K, rng))
C_dec, B_dec, S_dec = decoder_moments(H_dec, Sigma_dec, noise_var)
P_star = quadratic_minimizer(B_dec, C_dec)
eta_dec = eta_d_frac * 2.0 / np.linalg.eigvalsh(C_dec)[-1]
P0 = np.zeros((K, K))

P_loop = gd_iterate(P0, B_dec, C_dec, eta_dec, steps)
P_closed = gd_trajectory(P0, P_star, C_dec, eta_dec, s_grid)
risk_dec_iter = excess_risk(P_loop, P_star, C_dec)  # (1/K) tr((P_s - P*) C (P_s - P*)^T) at the looped P_s
risk_dec_pop = quadratic_risk(P_loop, B_dec, C_dec, S_dec) - quadratic_risk(P_star, B_dec, C_dec, S_dec)
risk_dec_modal = modal_excess_risk(P0, P_star, C_dec, eta_dec, s_grid)
err_dec = np.abs(risk_dec_modal - risk_dec_iter)
max_err_decoder = float(err_dec.max())
max_err_decoder_population = float(np.abs(risk_dec_modal - risk_dec_pop).max())
max_err_decoder_traj_rel = float(np.abs(P_loop - P_closed).max() / np.abs(P_loop).max())
w_dec = modal_weights(P0, P_star, C_dec, eta_dec, s_grid)
entropy_dec = modal_entropy(w_dec)
print(f"eta = {eta_dec:.4f}, excess risk {risk_dec_modal[0]:.4f} -> {risk_dec_modal[-1]:.3e}")
print(f"max |modal - iteration| = {max_err_decoder:.3e}, trajectory rel. error = {max_err_decoder_traj_rel:.3e}")

# %% [markdown]
# ## (b) Encoder only (the main paper §5.1)
# $b = G_\star z + \eta_b$, $\Sigma_{bz} = G_\star \Sigma_z$; $G_{s+1} = G_s - \eta_e(G_s\Sigma_z - \Sigma_{bz})$ from $G_0 = 0$.
# The main paper writes the encoder risk without normalisation ($\mathcal R_{\rm enc}(G) = \mathbb E\|Gz-b\|^2$), so the modal
# formula is $\sum_i \mu_i (1-\eta_e\mu_i)^{2s}\|(G_0-G_\star)v_i\|^2$ (scale 1).

# %%
Sigma_enc = covariance_from_spectrum(np.geomspace(0.05, 1.0, r), haar_orthogonal(r, rng))
G_star_enc = rng.standard_normal((K, r)) / np.sqrt(K * r)  # ‖G⋆‖_F ~ 1 keeps the unnormalised risk O(1)
C_enc, B_enc, S_enc = encoder_moments(G_star_enc, Sigma_enc, noise_var)
eta_enc = eta_e_frac * 2.0 / np.linalg.eigvalsh(C_enc)[-1]
G0_enc = np.zeros((K, r))
G_loop = gd_iterate(G0_enc, B_enc, C_enc, eta_enc, steps)
G_closed = gd_trajectory(G0_enc, G_star_enc, C_enc, eta_enc, s_grid)
risk_enc_iter = excess_risk(G_loop, G_star_enc, C_enc, scale=1.0)
risk_enc_pop = quadratic_risk(G_loop, B_enc, C_enc, S_enc, scale=1.0) - quadratic_risk(
    G_star_enc, B_enc, C_enc, S_enc, scale=1.0
)
risk_enc_modal = modal_excess_risk(G0_enc, G_star_enc, C_enc, eta_enc, s_grid, scale=1.0)
err_enc = np.abs(risk_enc_modal - risk_enc_iter)
max_err_encoder = float(err_enc.max())
max_err_encoder_population = float(np.abs(risk_enc_modal - risk_enc_pop).max())
max_err_encoder_traj_rel = float(np.abs(G_loop - G_closed).max() / np.abs(G_loop).max())
print(f"eta_e = {eta_enc:.4f}, excess risk {risk_enc_modal[0]:.4f} -> {risk_enc_modal[-1]:.3e}")
print(f"max |modal - iteration| = {max_err_encoder:.3e}, trajectory rel. error = {max_err_encoder_traj_rel:.3e}")

# %% [markdown]
# ## (c) Commuting coupled system (the main paper §6.4–§6.5)
# The latent model of `iclcore.richardson.latent_model`: $A(G) = G^\top H G$, $C(G) = G^\top\Sigma_c G$, $B(G) = A(G)^{-1}C(G)$,
# all diagonal in one random orthonormal basis $V$ together with $\Sigma_z$ and $G_\star$. The scalar side uses
# only $g_i(s) = g_i^\star + (g_i(0)-g_i^\star)(1-\eta_e\sigma_i)^s$, the mode coefficients
# $a_i = h_i g_i^2$, $c_i = \kappa_i g_i^2$, $b_i = \kappa_i/h_i$, $w_i = \kappa_i/(r h_i^2 g_i^2)$ and the product/sum formula
# for $p_i(s)$; the matrix side iterates $G_s$ and $P_s$ as full $r\times r$ matrices and evaluates
# $\frac1r\operatorname{tr}[(I-P_sA_s)^L\,\mathbb E z^\dagger z^{\dagger\top}\,(I-P_sA_s)^{L\top}]$.

# %%
cm = CommutingModel(
    h=np.geomspace(0.3, 2.0, r),
    gstar=rng.uniform(0.8, 1.2, r),
    sigma=np.geomspace(0.1, 1.0, r),
    noise_var=noise_var,
    V=haar_orthogonal(r, rng),
)
g0 = rng.uniform(0.3, 0.6, r)
eta_e_c = eta_e_frac * 2.0 / cm.sigma.max()
g_modes = cm.encoder_modes(g0, eta_e_c, steps)
coef = cm.coefficients(g_modes)
eta_d_c = eta_d_frac * 2.0 / coef.c.max()
p0 = np.zeros(r)
p_ps = mode_product_sum(p0, coef.c[:-1], coef.b[:-1], eta_d_c)
p_rec = mode_recursion(p0, coef.c[:-1], coef.b[:-1], eta_d_c)
risk_c_closure = richardson_mode_risk(p_ps, coef.a, coef.w, L)
mode_terms_c = coef.w * (1.0 - p_ps * coef.a) ** (2 * L)

traj_c = encdec_iterate(cm.latent_model(), cm.matrix(g0), cm.matrix(p0), eta_e_c, eta_d_c, steps)
risk_c_matrix = richardson_matrix_risk(traj_c.P, traj_c.A, traj_c.Szz, L)
err_c = np.abs(risk_c_closure - risk_c_matrix)
max_err_commuting = float(err_c.max())
P_from_modes = np.stack([cm.matrix(x) for x in p_ps])
max_err_commuting_modes_rel = float(np.abs(P_from_modes - traj_c.P).max() / np.abs(traj_c.P).max())
max_err_commuting_product_sum_rel = float(np.abs(p_ps - p_rec).max() / np.abs(p_rec).max())
check_idx = np.unique(np.linspace(0, steps, n_check).astype(int))
commuting_commutator = commutator_defect(traj_c.C[check_idx])
print(f"eta_e = {eta_e_c:.4f}, eta_d = {eta_d_c:.4f}; R_dec(s, L) {risk_c_matrix[0]:.4f} -> {risk_c_matrix[-1]:.3e}")
print(f"max |closure - matrix| = {max_err_commuting:.3e}; P_s rel. error = {max_err_commuting_modes_rel:.3e}")

# %% [markdown]
# ## (d) Counterexample (the main paper §7)
# Two errors with the same risk $R_0 = e_0^\top C e_0$, placed on eigenvectors with different eigenvalues
# ($C = \operatorname{diag}(\lambda_a, \lambda_b)$ in a random basis), evolve by $e_{s+1} = (I-\eta C)e_s$:
# $R_1 = (1-\eta\lambda)^2 R_0$. The paper states neither $\eta$ nor $\lambda$; the defaults
# $\eta = 0.1$, $\lambda = (1.8, 5.6)$ are one choice that yields its reported $R_1$ values.

# %%
C_cx = covariance_from_spectrum(np.array([lam_a, lam_b]), haar_orthogonal(2, rng))
i_a, i_b = (0, 1) if lam_a <= lam_b else (1, 0)
cx = counterexample(C_cx, eta_cx, i_a, i_b, R0=R0_cx, n_steps=cx_steps)
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
model_nc = LatentModel(
    H=covariance_from_spectrum(cm.h, haar_orthogonal(r, rng)),
    Gstar=haar_orthogonal(r, rng) @ np.diag(cm.gstar) @ haar_orthogonal(r, rng).T,
    Sigma_z=covariance_from_spectrum(cm.sigma, haar_orthogonal(r, rng)),
    noise_var=noise_var,
)
G0_nc = 0.5 * np.eye(r)
eta_e_nc = eta_e_frac * 2.0 / np.linalg.eigvalsh(model_nc.Sigma_z)[-1]
G_path = gd_iterate(G0_nc, model_nc.Sigma_bz, model_nc.Sigma_z, eta_e_nc, steps)
eta_d_nc = eta_d_frac * 2.0 / max(np.linalg.eigvalsh(Cs)[-1] for Cs in model_nc.C(G_path))
traj_nc = encdec_iterate(model_nc, G0_nc, np.zeros((r, r)), eta_e_nc, eta_d_nc, steps)
E_iter = traj_nc.tracking_error
E_ps = tracking_error_product_sum(E_iter[0], traj_nc.C[:-1], traj_nc.drift, eta_d_nc, s_grid)
err_nc = np.linalg.norm(E_ps - E_iter, axis=(1, 2)) / np.linalg.norm(E_iter, axis=(1, 2)).max()
max_err_noncommuting_product_sum_rel = float(np.abs(E_ps - E_iter).max() / np.abs(E_iter).max())
risk_nc_matrix = richardson_matrix_risk(traj_nc.P, traj_nc.A, traj_nc.Szz, L)
risk_nc_ps = richardson_matrix_risk(E_ps + traj_nc.oracle, traj_nc.A, traj_nc.Szz, L)
noncommuting_commutator = commutator_defect(traj_nc.C[check_idx])


def _unit(stack):
    return stack / np.linalg.norm(stack, axis=(1, 2))[:, None, None]


family = np.concatenate([_unit(traj_nc.C[check_idx]), _unit(traj_nc.A[check_idx]), _unit(traj_nc.Szz[check_idx])])
bases = {
    "eig $C_0$": np.linalg.eigh(traj_nc.C[0])[1],
    "eig $C_S$": np.linalg.eigh(traj_nc.C[-1])[1],
    "eig $A_S$": np.linalg.eigh(traj_nc.A[-1])[1],
    "joint diag.": joint_diagonalizer(family),
}
closure_risks = {k: fixed_basis_closure_risk(traj_nc, Q, L) for k, Q in bases.items()}
mismatches = {k: closure_mismatch(v, risk_nc_matrix) for k, v in closure_risks.items()}
best_basis = min(mismatches, key=mismatches.get)
noncommuting_closure_mismatch = mismatches[best_basis]
# the same comparison in decades: max_s |log10(R_closure / R_exact)|, minimised over the bases
logratios = {k: closure_log_ratio(v, risk_nc_matrix) for k, v in closure_risks.items()}
noncommuting_closure_decades = min(logratios.values())
# control: the same closure procedure on the commuting system (joint diagonaliser of its matrices)
family_c = np.concatenate([_unit(traj_c.C[check_idx]), _unit(traj_c.A[check_idx]), _unit(traj_c.Szz[check_idx])])
risk_c_refit = fixed_basis_closure_risk(traj_c, joint_diagonalizer(family_c), L)
commuting_closure_mismatch = closure_mismatch(risk_c_refit, risk_c_matrix)
commuting_closure_decades = closure_log_ratio(risk_c_refit, risk_c_matrix)
for k in mismatches:
    print(f"closure in basis {k:12s}: relative sup mismatch {mismatches[k]:.3f}, max log10 ratio {logratios[k]:.2f}")
print(f"commutator defect: non-commuting {noncommuting_commutator:.3f}, commuting {commuting_commutator:.1e}")

# %%
fig, axes = plt.subplots(2, 3, figsize=(13.5, 7.6))
mk = dict(ls="none", marker="o", ms=3.5, mfc="none")
every = max(1, steps // 25)
sub = s_grid[::every]

ax = axes[0, 0]
ax.semilogy(s_grid, risk_dec_modal, color=PALETTE[0], label="modal formula")
ax.semilogy(sub, risk_dec_iter[::every], color=PALETTE[1], label="matrix iteration", **mk)
ax.set(title="(a) decoder only", xlabel="outer step $s$", ylabel=r"$\mathcal{R}_{\rm dec}(P_s)-\mathcal{R}_{\rm dec}(P_\star)$")
ax.legend()

ax = axes[0, 1]
ax.semilogy(s_grid, risk_enc_modal, color=PALETTE[0], label="modal formula")
ax.semilogy(sub, risk_enc_iter[::every], color=PALETTE[1], label="matrix iteration", **mk)
ax.set(title="(b) encoder only", xlabel="outer step $s$", ylabel=r"$\mathcal{R}_{\rm enc}(G_s)-\mathcal{R}_{\rm enc}(G_\star)$")
ax.legend()

ax = axes[0, 2]
for i in range(r):
    ax.semilogy(s_grid, mode_terms_c[:, i], color="0.75", lw=0.8, label="mode terms $w_i(1-p_ia_i)^{2L}$" if i == 0 else None)
ax.semilogy(s_grid, risk_c_closure, color=PALETTE[0], label="scalar closure")
ax.semilogy(sub, risk_c_matrix[::every], color=PALETTE[1], label="matrix iteration", **mk)
ax.set(title=f"(c) commuting coupled system, $L={L}$", xlabel="outer step $s$", ylabel=r"$\mathcal{R}_{\rm dec}(s,L)$")
ax.set_ylim(max(risk_c_matrix.min(), 1e-300) * 1e-3, risk_c_matrix.max() * 10)
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
ax.semilogy(s_grid, risk_nc_matrix, color=PALETTE[1], label="matrix iteration")
ax.semilogy(sub, risk_nc_ps[::every], color=PALETTE[0], label="product/sum formula", **mk)
styles = ["--", ":", "-.", (0, (5, 1))]
for (k, v), ls, col in zip(closure_risks.items(), styles, PALETTE[2:]):
    ax.semilogy(s_grid, v, ls=ls, color=col, lw=1.2, label=f"scalar closure, {k}")
ax.set(title="(e) non-commuting coupled system", xlabel="outer step $s$", ylabel=r"$\mathcal{R}_{\rm dec}(s,L)$")
ax.legend(fontsize=7)

ax = axes[1, 2]
floor = 1e-20
for y, lab, col in (
    (err_dec, "(a) decoder risk", PALETTE[0]),
    (err_enc, "(b) encoder risk", PALETTE[1]),
    (err_c, "(c) commuting risk", PALETTE[2]),
    (err_nc, r"(e) $\|E_s^{\rm formula}-E_s\|_F\,/\,\max_s\|E_s\|_F$", PALETTE[3]),
):
    ax.semilogy(s_grid, np.maximum(y, floor), color=col, lw=1.0, label=lab)
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
ax[0].stackplot(s_grid, w_dec.T, colors=plt.cm.viridis(np.linspace(0, 1, K)))
ax[0].set(xlabel="outer step $s$", ylabel="$w_{s,i}$ (slow modes at the bottom)", title="(a) decoder: error weights by mode", ylim=(0, 1))
ax[1].plot(s_grid, entropy_dec, color=PALETTE[0])
ax[1].set(xlabel="outer step $s$", ylabel=r"$H(\Omega_s)$", title="normalised entropy of the weights", ylim=(0, 1.02))
fig2.tight_layout()
save_figure(fig2, "fig8_weights");

# %%
print(f"closed forms, largest errors: decoder {max_err_decoder:.1e}, encoder {max_err_encoder:.1e}, "
      f"commuting {max_err_commuting:.1e}, non-commuting product-sum (relative) {max_err_noncommuting_product_sum_rel:.1e}")
print(f"commuting control closure mismatch: {commuting_closure_mismatch:.1e}")

# %% tags=["nbval-check-output"]
print("counterexample R_1:", round(float(cx.risk_a[1]), 6), round(float(cx.risk_b[1]), 6))
print(f"non-commuting closure mismatch: {noncommuting_closure_mismatch:.2f}")

# %%
write_metrics({
    "max_err_decoder": max_err_decoder,
    "max_err_encoder": max_err_encoder,
    "max_err_commuting": max_err_commuting,
    "max_err_decoder_population": max_err_decoder_population,
    "max_err_encoder_population": max_err_encoder_population,
    "max_err_decoder_traj_rel": max_err_decoder_traj_rel,
    "max_err_encoder_traj_rel": max_err_encoder_traj_rel,
    "max_err_commuting_modes_rel": max_err_commuting_modes_rel,
    "max_err_commuting_product_sum_rel": max_err_commuting_product_sum_rel,
    "max_err_noncommuting_product_sum_rel": max_err_noncommuting_product_sum_rel,
    "decoder_excess_risk_initial": float(risk_dec_modal[0]),
    "decoder_excess_risk_final": float(risk_dec_modal[-1]),
    "decoder_entropy_initial": float(entropy_dec[0]),
    "decoder_entropy_final": float(entropy_dec[-1]),
    "encoder_excess_risk_initial": float(risk_enc_modal[0]),
    "encoder_excess_risk_final": float(risk_enc_modal[-1]),
    "commuting_risk_initial": float(risk_c_matrix[0]),
    "commuting_risk_final": float(risk_c_matrix[-1]),
    "commuting_commutator": commuting_commutator,
    "commuting_closure_mismatch": commuting_closure_mismatch,
    "noncommuting_commutator": noncommuting_commutator,
    "noncommuting_closure_mismatch": noncommuting_closure_mismatch,
    "noncommuting_closure_decades": noncommuting_closure_decades,
    "commuting_closure_decades": commuting_closure_decades,
    "noncommuting_closure_mismatch_eigC0": mismatches["eig $C_0$"],
    "noncommuting_closure_mismatch_joint": mismatches["joint diag."],
    "cx_eta": cx.eta,
    "cx_lam_a": cx.lam_a,
    "cx_lam_b": cx.lam_b,
    "cx_R0_a": float(cx.risk_a[0]),
    "cx_R0_b": float(cx.risk_b[0]),
    "cx_R1_a": float(cx.risk_a[1]),
    "cx_R1_b": float(cx.risk_b[1]),
    "eta_decoder": float(eta_dec),
    "eta_encoder": float(eta_enc),
    "eta_d_commuting": float(eta_d_c),
    "eta_d_noncommuting": float(eta_d_nc),
})
