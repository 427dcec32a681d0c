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
# # ISO setting: SGD against gradient-flow theory (Bordelon et al., Figures 1, 2 and 7)
# This notebook trains the reduced-Γ model of deep linear attention (Bordelon et al. §2.2, Eq. 4) with
# online SGD on isotropic in-context regression (Eq. 5), and lays the simulations over the theory:
# the Marchenko–Pastur landscape and its gradient flow (Result 1, Eqs. 7–8 and 83), the exact
# optimum at every depth (the Catalan formula), and the depth-1 SGD theory of Appendix C.1
# (Result 10) with its corrected initial condition. Figure 1: training curves and final losses;
# Figure 2: landscapes (depth, context length, noise); Figure 7: depth-1 SGD for varying batch size
# τ = B/D, context length α = P/D and evaluation points κ = K/D.

# %% tags=["parameters", "hide-input"]
D = 16                 # input dimension for Figure 1 (the paper states 32: see the paper preset); range: [1, 500]
steps = 400            # SGD steps per Figure-1 run; range: [1, 10000]
eta0 = 0.3             # step size eta0 / a0 with a0 the depth-1 curvature 1 + 1/alpha; time t is the sum of the steps; range: (0, inf)
anneal_frac = 0.25     # last fraction of steps at eta/10 (reduces the SGD noise floor for Fig. 1c); range: [0, 1]
batch_ratio = 4.0      # batch over dimension, tau is B/D; range: (0, inf)
kappa = 1.0            # K/D evaluation points per context; range: (0, inf)
eval_contexts = 600    # Monte Carlo contexts for the final population loss (a standard error needs two draws); range: [2, 20000]
mc_draws = 100         # Wishart draws for the finite-D optimum; range: [1, 2000]
fig7_D = 32            # dimension for Figure 7 (depth-1 SGD); range: [1, 1000]
fig7_steps = 80        # SGD steps for Figure 7; range: [1, 1000]
fig7_eta = 0.1         # step size for Figure 7; range: (0, inf)
fig7_seeds = 3         # seeds averaged in Figure 7; range: [2, 100]
fig7_size_seeds = 6    # seeds per dimension in the Figure-7 finite-size sweep (D/2, D, 2D at tau 1/2); range: [2, 100]
r10_D = 16             # dimension of the Result-10 eta sweep and kappa test (the D sweep uses r10_D/2, r10_D, 2 r10_D); range: [4, 256]
r10_seeds = 8          # independent SGD seeds per Result-10 setting (all advanced together); range: [3, 200]
r10_tau = 2.0          # batch over dimension B/D in the Result-10 runs; range: (0, inf)
sym_D = 8              # dimension of the Pauli-symmetrised flows (a power of two); range: [2, 64]
seed = 0               # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"D": 32, "steps": 800, "eval_contexts": 2000, "mc_draws": 200, "fig7_D": 64, "fig7_seeds": 5,
                    "r10_D": 32, "r10_seeds": 12, "sym_D": 16}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.dmft import data, figures, iso, isotropy, reduced_sgd, rrs, sgd_noise
from iclcore.lsq.iterates import in_context_gd_predict
from iclcore.plotting import finish_figure, save_figure, use_style, write_metrics

use_style()
t_start, rng = time.time(), np.random.default_rng(seed)
alphas, depths = [0.5, 1.0, 2.0, 4.0], [1, 2, 4, 8]

# %% [markdown]
# ## Exact optimum at every depth
# The optimal step size is γ* = Lα/(1+α) and the optimal loss is given by the Catalan formula.
# We compare it with exact Gauss quadrature of Eq. 8 on a grid of (α, L), and with the printed
# depth-1 value (1+α)⁻².

# %%
opt = iso.iso_optimum_checks()  # Catalan vs quadrature on an (alpha, L) grid; Result 2's gap; the gain of depth (Fig. 1b)

# %% tags=["nbval-check-output"]
print(f"max |Catalan - quadrature| and |L'(gamma*)| over the grid: {opt.catalan_max_abs:.1e}")
print(f"L=1, alpha=1: optimum {opt.optimum_L1_alpha1:.6f}; printed (1+alpha)^-2 = {0.25:.6f}")
print("alpha=1, L=1..6:", [round(iso.iso_optimum_closed_form(1.0, L)[1], 6) for L in range(1, 7)])

# %% [markdown]
# ## Figure 1: SGD on the reduced-Γ model
# Every (α, L) pair is trained once from Γ = 0 with B = τD fresh contexts per step, K = κD
# evaluation points, and the SGD direction G = −(D/2)∇Γ of the batch loss, so that theory time is
# t = Σ η. The step size is η = η₀/a₀ (a₀ = 1 + 1/α, the depth-1 curvature: short contexts have
# heavy-tailed Σ̂ and need smaller steps); the last `anneal_frac` of the steps uses η/10 to lower the
# SGD noise floor. The curves in (a), (b) are the batch losses (fresh contexts: an unbiased estimate
# of the population loss of the Γ they are evaluated at) smoothed over 5 steps; the lines are the gradient flow on the
# asymptotic landscape. In (c) the dots are the population loss of the final Γ (Monte Carlo,
# `eval_contexts` contexts), the lines the Catalan optimum, the crosses the finite-D optimum (exact
# Wishart spectra at the same D) and the open squares the flow theory at the final time: deep models
# at large α approach their optimum only after t ~ 10²–10³, beyond a CPU-sized run.

# %%
fig1 = reduced_sgd.iso_sgd_grid(alphas, depths, D=D, steps=steps, eta0=eta0, anneal_frac=anneal_frac, batch_ratio=batch_ratio,
                                kappa=kappa, eval_contexts=eval_contexts, mc_draws=mc_draws, rng=rng)

# %%
fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
figures.plot_iso_sgd_grid(ax, fig1)
finish_figure(fig, "fig1_iso_sgd")

# %% tags=["nbval-check-output"]
print(f"Fig 1: {fig1.n_converged}/16 runs converged; max rel. dev. loss {fig1.max_rel_dev_loss:.2f}, gamma {fig1.max_rel_dev_gamma:.2f}")
print(f"final vs flow {fig1.max_rel_dev_flow:.2f}; converged runs: vs Catalan {fig1.max_rel_dev_catalan:.2f}, vs finite-D {fig1.max_rel_dev_finite_d:.2f}")

# %% [markdown]
# ## Figure 2: the ISO loss landscape
# (a) Depth at α = 1, plotted against γ/L: the minimiser γ*/L = α/(1+α) does not depend on L.
# (b) Context length at L = 4, with finite-D Monte Carlo dots (D = `D`). (c) Label noise at α = 2,
# L = 4: the optimum moves to smaller γ (early stopping as regularisation).

# %%
fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
x = np.linspace(0, 0.7, 300)  # beyond 2/λ₊ = 1/2 (α = 1) the top modes expand and the loss rises steeply
for i, L in enumerate([1, 2, 4, 8, 16]):
    ax[0].plot(x, iso.iso_loss(x * L, 1.0, L), color=f"C{i}", label=f"L = {L}")
    ax[0].plot(0.5, iso.iso_optimum_closed_form(1.0, L)[1], "o", color=f"C{i}", ms=4)
gam, gdots = np.linspace(0, 8, 300), np.linspace(0.5, 6.5, 7)
for i, a in enumerate(alphas):
    ax[1].plot(gam, iso.iso_loss(gam, a, 4), color=f"C{i}", label=f"α = {a:g}")
    ax[1].plot(gdots, iso.iso_loss_finite_d_mc(gdots, a, 4, D=D, rng=rng, draws=mc_draws), "o", color=f"C{i}", ms=3)
noise = iso.iso_noise_optimum(2.0, 4, (0.0, 0.25, 0.5, 1.0))  # and gamma*(sigma) at L = 1 against Eqs. 66, 73
gam = np.linspace(0, 6.5, 300)
for i, (s, gs, ls) in enumerate(zip(noise.sigmas, noise.gamma_star, noise.loss_star)):
    ax[2].plot(gam, iso.iso_loss(gam, 2.0, 4, sigma=s), color=f"C{i}", label=f"σ = {s:g}")
    ax[2].plot(gs, ls, "o", color=f"C{i}")
ax[0].set(xlabel="γ / L", ylabel="ICL loss", title="(a) α = 1", ylim=(0, 1.05))
ax[1].set(xlabel="γ", title="(b) L = 4 (dots: finite-D Monte Carlo)", yscale="log", ylim=(1e-2, 2))
ax[2].set(xlabel="γ", title="(c) α = 2, L = 4: noise", ylim=(0, 3))
finish_figure(fig, "fig2_iso_landscape")

# %% tags=["nbval-check-output"]
print("alpha=2, L=4: gamma* for sigma in", list(noise.sigmas), "->", [round(g, 4) for g in noise.gamma_star])

# %% [markdown]
# ## Figure 7: depth-1 SGD (Appendix C.1, Result 10)
# Top row: the parameter error (1/D)|Γ(t) − I|², which Eq. 64/78 calls the ICL loss, with the
# printed Eq. 78–79 (dashed; it starts from C(0) = 1) and the corrected C(0) = a₀⁻² (solid).
# Bottom row: the actual ICL loss (batch loss, averaged over seeds) against a₀C(t) + 1 − 1/a₀.
# Dotted: the same theory with the exact finite-D Wishart second moments (α, κ → αD/(D+1), κD/(D+1));
# the stationary level b/(1 − a) amplifies these O(1/D) corrections by 1/(1 − a), most at small τ.

# %%
settings = {name: [dict(alpha=1.0, kappa=1.0, tau=1.0) | {name: v} for v in [0.5, 1.0, 2.0, 4.0]] for name in ("tau", "alpha", "kappa")}
fig7 = reduced_sgd.shallow_sgd_sweep(settings, D=fig7_D, steps=fig7_steps, eta=fig7_eta, seeds=fig7_seeds, rng=rng)
ref7 = fig7.reference  # alpha = kappa = tau = 1
fig, ax = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
# the batch loss of step s is evaluated at Γ(s-1): the theory is shown one step earlier
figures.plot_shallow_sgd_sweep(ax, fig7)
fig.tight_layout()
save_figure(fig, "fig7_shallow_sgd")

# %% tags=["nbval-check-output"]
print(f"Fig 7 (alpha=kappa=tau=1, step 5): sim {ref7.early_sim:.2f}, corrected {ref7.early_corrected:.2f}, printed {ref7.early_printed:.2f}")

# %% [markdown]
# ### Figure 7: the plateau gap against $D$
# The asymptotic theory is the $D\to\infty$ limit at fixed $\alpha,\kappa,\tau$. At the setting with the
# largest gap ($\tau=1/2$, $\alpha=\kappa=1$) we rerun the simulation at $D\in\{D/2, D, 2D\}$
# (`fig7_size_seeds` seeds each; SE over seeds) and fit the relative plateau gap of the parameter error
# to the asymptotic theory as $\propto D^{-q}$ (weighted by the seed SEs).

# %%
size_D = [max(2, fig7_D // 2), fig7_D, 2 * fig7_D]
gap7 = reduced_sgd.plateau_gap_size_scaling(size_D, alpha=1.0, kappa=1.0, tau=0.5, steps=fig7_steps, eta=fig7_eta,
                                            seeds=fig7_size_seeds, rng=rng)
fig7s, ax = plt.subplots(figsize=(4.5, 3.4))
ax.errorbar(size_D, gap7.gap, yerr=gap7.gap_se, fmt="o", capsize=2, label="SGD plateau / theory − 1")
dd = np.geomspace(size_D[0], 4 * size_D[-1], 50)
ax.plot(dd, gap7.gap[1] * (dd / size_D[1]) ** gap7.exponent, "k--", lw=1, label=f"fit ∝ D^{gap7.exponent:.2f}")
ax.set(xscale="log", yscale="log", xlabel="D", ylabel="relative plateau gap", title="Fig. 7, τ = 1/2: gap vs D")
ax.legend(fontsize=7)
save_figure(fig7s, "fig7_gap_vs_D")

# %% tags=["nbval-check-output"]
print("Fig 7 plateau gap vs D:", ", ".join(f"D={d}: {g:.3f} +- {e:.3f}" for d, g, e in zip(size_D, gap7.gap, gap7.gap_se)),
      "; exponent %.2f +- %.2f" % (gap7.exponent, gap7.exponent_se))

# %% [markdown]
# ## Isotropy of the flow and the in-context GD identity (Results 1 and 6; Eqs. 4, 52–58)
# **Statement.** Result 1 (ISO) and Result 6 (RRS): gradient flow from Γ = 0 keeps Γ(t) = γ(t) I. The
# paper's argument (App. C.2, E.1) is a symmetry: the law of a context is invariant under x → Qx,
# β → Qβ, so the population gradient at an isotropic Γ is isotropic. This is exact, not asymptotic, so
# the rows are `theorem`: a finite sample of contexts breaks the symmetry, and we restore it exactly by
# augmenting `4` contexts with the `sym_D²` real Pauli matrices (a finite group acting irreducibly,
# `iclcore.dmft.isotropy`). Gradient descent on the augmented sample, computed by the same manual
# backprop as every SGD run of this chapter, must then (i) keep ‖Γ − tr(Γ) I‖_F/‖Γ‖_F at rounding and
# (ii) move tr Γ exactly as descent on the one-dimensional empirical landscape ℓ(γ). The same descent on
# the un-augmented sample (dashed) shows what Monte Carlo symmetry breaking looks like.
# **Eqs. 4, 52–58.** The masked linear attention of Eq. 3 with the reduced weights, Eq. 4 written with
# the matrix sum, and L steps of in-context GD give the same prediction on random draws (max |Δ| at
# float64 rounding). With the paper's Γ ≡ (w_oᵀW_v w_y) W_xᵀW_kᵀW_qW_x, the attention computes Eq. 4
# with Γᵀ (a transposition of conventions, immaterial for the symmetric Γ of every result).

# %%
sym = {"iso": isotropy.symmetrised_descent("iso", sym_D, 4, n_contexts=4, eta=0.2, steps=60, rng=rng, P=sym_D)}
lam_r, om_r = data.power_law_spectrum(sym_D, 1.0, 1.0)
sym["rrs"] = isotropy.symmetrised_descent("rrs", sym_D, 4, n_contexts=4, eta=0.5, steps=60, rng=rng, lam=lam_r, omega=om_r)
gd_id = isotropy.in_context_gd_identity(in_context_gd_predict, rng)  # Eqs. 3, 4, 52-58 on 20 random draws
fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
flows = [("o", "ISO 1-D descent on ℓ(γ)", iso.iso_gradient_flow(sym["iso"].t, 1.0, 4)[0], "Eq. 7 flow (D → ∞)"),
         ("s", "RRS 1-D descent", rrs.rrs_gradient_flow(sym["rrs"].t, lam_r, om_r, L=4)[0], "Eq. 13 flow")]
for i, ((k, v), (mk, lab_scalar, flow, lab_flow)) in enumerate(zip(sym.items(), flows)):
    ax[0].plot(v.t[1:], np.maximum(v.off_iso[1:], 1e-17), color=f"C{i}", label=f"{k.upper()}, augmented")
    ax[0].plot(v.t[1:], v.off_iso_plain[1:], "--", color=f"C{i}", label=f"{k.upper()}, 4 contexts")
    ax[1].plot(v.t, v.gamma, mk, ms=3, color=f"C{i}", label=f"{k.upper()} tr Γ (matrix)")
    ax[1].plot(v.t, v.gamma_scalar, color=f"C{i}", label=lab_scalar)
    ax[1].plot(v.t, flow, ":", color=f"C{i}", label=lab_flow)
ax[2].plot(gd_id.f_scale, np.maximum(gd_id.attention_dev, 1e-18), "o", color="C2", label="masked attention (Eq. 3) − GD")
ax[2].plot(gd_id.f_scale, np.maximum(gd_id.eq4_dev, 1e-18), "x", color="C3", label="Eq. 4 (matrix sum) − GD")
ff = np.geomspace(min(gd_id.f_scale), max(gd_id.f_scale), 20)
ax[2].plot(ff, 64 * np.finfo(float).eps * ff, "k:", label="64 ε |f|")
ax[0].set(yscale="log", xlabel="t = η k", ylabel="‖Γ − tr(Γ) I‖ / ‖Γ‖", title=f"(a) off-isotropic part, D = {sym_D}")
ax[1].set(xlabel="t", ylabel="γ", title="(b) the scalar of the isotropic Γ")
ax[2].set(xscale="log", yscale="log", xlabel="max |f| of the draw", ylabel="max |Δf|", title="(c) L steps of in-context GD, 20 draws")
finish_figure(fig, "fig_isotropy_identity", legend_fontsize=7)

# %% tags=["nbval-check-output"]
print(f"isotropy: max off-iso ISO {sym['iso'].off_iso_max:.1e}, RRS {sym['rrs'].off_iso_max:.1e}; tr Gamma vs 1-D descent {max(v.gamma_vs_scalar_max_rel for v in sym.values()):.1e}")
print(f"attention / Eq. 4 vs in-context GD: max |diff| {gd_id.max_abs:.1e} (max |f| {gd_id.max_abs_f:.2f})")

# %% [markdown]
# ## Result 10: the SGD noise scales as η/τ, not with D, and is where κ enters
# **Statement** (App. C.1, Result 10): at L = 1 with P = αD, K = κD, B = τD, "deviations from gradient
# flow … come in at a scale of η/τ", so "only O(D²) total tokens are required"; and κ "only alters the
# SGD noise terms … and its effect vanishes in the gradient flow limit".
# **Code.** `iclcore.dmft.sgd_noise` runs `r10_seeds` independent SGD runs together (Eq. 62). The
# seed-mean of Γ_t is exactly γ̄_t I with γ̄_{t+1} = γ̄_t + η(1 − a₀'γ̄_t), a₀' = 1 + (D+1)/P, at every
# D and for every τ, κ (the mean of G is linear in Γ and E S = I). The deviation from gradient flow is
# the SGD noise N_t = (1/D)|Γ_t − γ̄_t I|²; its plateau (mean over t ∈ [2, 3.5] in theory time, after the
# transient has decayed by e⁻⁸) is Result 10's C(∞) = b/(1−a) = (η/τ)(1+1/κ)(a₀−1)/(2a₀) + O(η²).
# **Rules, fixed before the runs** (error model: standard errors over independent seeds):
# (a) η sweep at D = `r10_D`, τ = `r10_tau`, α = κ = 1: the weighted log-log slope of the plateau against
# η/τ agrees with the slope of Result 10's C(∞) on the same grid (1 + an O(η) curvature; exactly 1 as
# η/τ → 0) within 3 SE of the fit plus the finite-D term |slope(finite-D moments) − slope(D = ∞)|.
# (b) D sweep at fixed η = 0.1, τ: the plateau ∝ D^q with q ≤ 3 SE (it does not grow with D; O(D³)
# tokens would mean q = 1 at fixed τ).
# (c) κ ∈ {1/2, 4} at D = `r10_D`: the time-averaged seed-mean of γ_t − γ̄_t is 0 for each κ within the
# Bonferroni t critical value (family-wise 1 %, `r10_seeds` − 1 degrees of freedom), and the noise
# ratio N(κ=1/2)/N(κ=4) agrees with Result 10's (1 + O(η)) within 3 SE plus the finite-D term.

# %%
t_r10 = time.time()
r10 = sgd_noise.noise_scale_sweep([0.025, 0.05, 0.1, 0.2], D=r10_D, tau=r10_tau, seeds=r10_seeds, rng=rng)  # (a), (b)
kap = sgd_noise.kappa_noise_check([0.5, 4.0], D=r10_D, tau=r10_tau, eta=0.1, seeds=r10_seeds, rng=rng)  # (c)
t_r10 = time.time() - t_r10
slope_ext, kap_ext = r10.slope_limit, kap.ratio_limit
fig, ax = plt.subplots(1, 4, figsize=(17, 3.8))
figures.plot_noise_scale_sweep(ax[:2], r10, tau=r10_tau)
figures.plot_kappa_noise_check(ax[2:], kap)
finish_figure(fig, "fig_result10_noise", legend_fontsize=7)

# %% tags=["nbval-check-output"]
print(f"Result 10 ({t_r10:.1f} s): slopes {np.round(r10.slopes, 3)}, at D -> inf {slope_ext.limit:.3f} +- {slope_ext.limit_se:.3f}"
      f" vs {r10.slope_theory:.3f}; D exponent {r10.size_exponent:.3f} +- {r10.size_exponent_se:.3f}; kappa mean z {max(kap.mean_t):.2f}"
      f" (crit {kap.t_critical:.2f}); noise ratio {kap.ratio:.3f} +- {kap.ratio_se:.3f} vs {kap.ratio_theory:.3f} (finite-D"
      f" {kap.ratio_finite_d:.3f}), extrapolated {kap_ext.limit:.3f} +- {kap_ext.limit_se:.3f}")

# %%
write_metrics({
    **opt.metrics(), **noise.metrics(), "fig1_D": D, **fig1.metrics(),
    "fig7_D": fig7_D, **fig7.metrics(), **gap7.metrics(), **sym["iso"].metrics("iso"), **sym["rrs"].metrics("rrs"),
    "iso_flow_offiso_plain_final": float(sym["iso"].off_iso_plain[-1]), **gd_id.metrics(),
    "r10_D": r10_D, **r10.metrics(), **kap.metrics(), "r10_runtime_s": t_r10, "runtime_s": time.time() - t_start,
})
