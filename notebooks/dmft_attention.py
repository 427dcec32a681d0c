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
# # Full linear attention and untied layers (Bordelon et al., Figures 6a-b and 8)
# This notebook recomputes Figure 6 (a)-(b) and Figure 8 of Bordelon et al. (§5.1-5.2, Result 9,
# App. G.1-G.2). Figure 6: the deep linear-attention network of Eq. (3) with separate
# $W_x, W_k, W_q, W_v$ (aligned, block-structured, tied across layers, fixed $w_y=w_o$) trained
# with plain SGD from a small balanced initialisation, against the one-dimensional theory
# $\gamma=c\,s^5$, $\dot s=-c\,s^4\mathcal L'(cs^5)$ on the reduced landscape, for isotropic (a) and
# randomly rotated power-law (b) data; panel (e) fits the late-time exponent of the $w^5$ flow at
# large $D$ against Eq. (22). Figure 8: the reduced model with untied layers $\Gamma^\ell$ trained
# with learning rate $\eta_0 L$, against the recurrent gradient flow (Eq. 13), and the balance
# $\gamma^\ell(t)=\gamma(t)$; the same untied model with label noise at finite context against Eq. (122)
# (App. G.1.2); and the block network with trainable read-in and read-out against Eq. (124) (App. G.2).

# %% tags=["parameters", "hide-input"]
D = 8               # input dimension of the full-attention runs (Figure 6); range: [1, 200]
alpha = 2.0         # context length P as a multiple of D; range: (0, inf)
K_frac = 1.0        # query tokens per context K as a multiple of D; range: (0, inf)
B = 64              # contexts per SGD step; range: [1, 1000]
s0 = 1.2            # balanced initial scale; gamma(0) is (2/D^2) s0^5; range: (0, inf)
eta = 0.1           # initial SGD learning rate; step k uses eta / (1 + k / decay); range: (0, inf)
decay = 100.0       # learning-rate decay scale (steps); theory time t is the sum of the step sizes; range: (0, inf)
steps = 500         # SGD steps per depth; range: [1, 20000]
nu = 1.0            # power-law capacity exponent (panel b, Figure 8); range: (0, inf)
beta = 1.0          # power-law source exponent; range: (0, inf)
mc_draws = 100000   # Wishart draws for the finite-D landscape of the Figure-6 theory; range: [2, 1000000]
D_untied = 24       # dimension of the untied-layer runs (Figure 8); range: [1, 1000]
B_untied = 32       # contexts per step (population contexts); range: [1, 500]
eta_untied = 0.5    # theory time step; range: (0, inf)
steps_untied = 200  # SGD steps; range: [1, 5000]
D_exp = 100000      # dimension of the w^5 exponent fit (panel e); range: [1, 5000000]
D_untied_large = 20000  # dimension of the untied-vs-balanced optimum (close to the D -> infinity spectrum); range: [1, 200000]
mc_tables = 10      # independent blocks of the draws for the Monte Carlo error of the Figure-6 theory (at least 2); range: [2, 100]
untied_seeds = 4    # independent SGD runs per batch size in the Figure-8 batch sweep (at least 2); range: [2, 100]
sigma_noise = 1.0   # label-noise standard deviation of the untied runs with noise (Eq. 122); range: [0, 10]
alpha_noise = 4.0   # context length P as a multiple of D_untied in the runs with label noise; range: (0, inf)
L_noise = 2         # depth of the untied runs with label noise; range: [1, 16]
noise_draws = 1000  # context covariances drawn for the Eq. 122 theory (Monte Carlo); range: [2, 100000]
L_readout = 4       # depth of the trainable read-in/read-out runs (Eq. 124); range: [1, 16]
a0_readout = 0.3    # initial read-in and read-out scale a_y and a_o; range: (0, inf)
eta_readout = 0.1   # constant SGD step of the read-in/read-out runs (t is eta_readout times steps); range: (0, inf)
steps_readout = 200 # SGD steps of the read-in/read-out runs; range: [1, 20000]
B_readout = 64      # contexts per step of the read-in/read-out runs; range: [1, 1000]
readout_seeds = 4   # independent read-in/read-out SGD runs (at least 2: their spread is the SE); range: [2, 100]
readout_draws = 2000  # context covariances drawn for the Eq. 124 theory (Monte Carlo); range: [4, 100000]
seed = 0            # random seed; range: [0, 4294967295]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"D": 16, "steps": 1500, "decay": 300.0, "mc_draws": 100000, "D_untied": 64,
                     "steps_untied": 600, "D_exp": 400000, "steps_readout": 600, "B_readout": 256}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.dmft import full_attention as fa
from iclcore.dmft import untied_sgd as us
from iclcore.dmft.data import power_law_spectrum
from iclcore.models.probes import block_average
from iclcore.parallel import thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.stats import standard_error

use_style()
t_start = time.time()
P, K = int(round(alpha * D)), max(1, int(round(K_frac * D)))
depths = [1, 2, 4, 8]
t = fa.decaying_step_times(eta, decay, steps)


# %% [markdown]
# ## Figure 6 (a)-(b): full linear attention against the $\gamma = c\,s^5$ theory
# SGD uses a decaying step $\eta_k=\eta/(1+k/k_0)$ (constant steps make the late phase noisy: a few
# prompts with a large top eigenvalue of $\hat\Sigma$ give very large gradients at large $\gamma$); the
# theory clock is $t_k=\sum_{j<k}\eta_j$. The theory uses the exact finite-$D$ landscape of the reduced model: a
# polynomial of degree $2L$ in $\gamma$ whose coefficients are Monte Carlo moments over `mc_draws` Wishart
# draws at the same $D$ and $P$ (`tied_loss_moments`), so that the comparison isolates the reduction
# itself; its Monte Carlo error (from `mc_tables` independent blocks of the draws) enters the error
# model in quadrature. SGD noise and the finite batch remain.

# %%
# the 8 SGD runs are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`);
# a diverging run raises a ValueError naming eta
spectra6 = {"iso": (np.ones(D), np.ones(D)), "rrs": power_law_spectrum(D, nu, beta)}
f6 = fa.power_five_comparisons(spectra6, P=P, K=K, B=B, depths=depths, s0=s0, eta=eta, decay=decay, steps=steps,
                               mc_draws=mc_draws, mc_tables=mc_tables, seed=seed, device=device, workers=thread_budget())

# %%
fig, axs = plt.subplots(1, 4, figsize=(17, 3.8))
for j, (kind, f) in enumerate(f6.items()):
    ax, axg = axs[2 * j], axs[2 * j + 1]
    for i, L in enumerate(depths):
        ax.plot(t, f.theory[L].loss, color=PALETTE[i], label=f"L={L} theory")
        ax.plot(block_average(t[:-1], 20), block_average(f.runs[L].loss, 20), "o", ms=3, color=PALETTE[i])
        axg.plot(t, f.theory[L].gamma, color=PALETTE[i], label=f"L={L}")
        axg.plot(t[::10], f.runs[L].gamma[::10, 0], "o", ms=3, color=PALETTE[i])
    name = "isotropic" if kind == "iso" else f"RRS power law (ν={nu}, β={beta})"
    ax.set(xlabel="t = Σ η_k", ylabel="loss", yscale="log", title=f"({'ab'[j]}) {name}, D={D}, α={alpha}")
    axg.set(xlabel="t = Σ η_k", ylabel="γ = tr Γ", title="γ(t): SGD (dots) vs c s⁵ theory")
    ax.legend(fontsize=7); axg.legend(fontsize=7)
fig.tight_layout()
save_figure(fig, "fig6ab_full_linear_attention")

# %% [markdown]
# ## Late-time exponent of the $w^5$ flow (Eq. 22)
# With $\gamma=cs^5$ the reduced flow becomes $\dot\gamma=-5c^{2/5}\gamma^{8/5}\mathcal L'(\gamma)$;
# on a power law $\mathcal L\sim\gamma^{-\beta}$ this gives $\mathcal L\sim t^{-5\beta/(5\beta+2)}$,
# against $t^{-\beta/(2+\beta)}$ for gradient flow on $\gamma$ itself. We fit both at $L=\infty$,
# $P=\infty$ and large $D$ over the window $\gamma\in[100, 10^{-2}D^\nu]$ (the fitted slope approaches
# the asymptote slowly from above: the plateau escape time is still a visible offset of $t$).

# %%
# finite-D trend of the w^5 exponent fit (ledger row on Eq. 22): the same fit at D_exp / 8, / 4, / 2 and
# D_exp (the window's upper end 10^-2 D^nu grows with D), fitted as fit(D) = a + b D^-q; the five flows
# (w^5 at four sizes, gamma at D_exp) are independent tasks
ex = fa.power_five_time_exponents(D=D_exp, nu=nu, beta=beta, t=np.geomspace(1e-2, 1e12, 400), workers=thread_budget())
fig_e, ax = plt.subplots(figsize=(5, 3.6))
ax.loglog(ex.t, ex.loss_w5, label=f"γ = s⁵ flow: fit {ex.exponent['w5']:.3f}, Eq. 22 {5 * beta / (5 * beta + 2):.3f}")
ax.loglog(ex.t, ex.loss_gamma, label=f"γ flow: fit {ex.exponent['gamma']:.3f}, Eq. 97 {beta / (2 + beta):.3f}")
ax.set(xlabel="t", ylabel="loss", title=f"(e) time exponents, L = P = ∞, D={D_exp}"); ax.legend(fontsize=7)
save_figure(fig_e, "fig6e_w5_exponent")

# %% tags=["nbval-check-output"]
print("max late relative gamma error (SGD vs c s^5 theory): ISO %.2f, RRS %.2f" % (f6["iso"].max_rel_err, f6["rrs"].max_rel_err))
print("w^5 exponent fit %.3f (5b/(5b+2) = %.3f); gamma-flow exponent %.3f (b/(2+b) = %.3f)"
      % (ex.exponent["w5"], 5 * beta / (5 * beta + 2), ex.exponent["gamma"], beta / (2 + beta)))

# %% [markdown]
# ## Figure 8: untied layers
# $L$ independent $D\times D$ matrices $\Gamma^\ell$ from zero, SGD on population contexts
# ($P=K=\infty$, Haar-rotated power-law covariance) with learning rate $\eta\,DL/2$ (the paper's
# $\eta=\eta_0 L$); theory: the recurrent flow $\dot\gamma=\mathrm{tr}\,\Omega\Lambda^2(I-\gamma\Lambda/L)^{2L-1}$
# at $t=\eta\cdot$steps. Panel (c): the balanced manifold is invariant under gradient flow but
# transversally unstable (Hessian eigenvalue $-2\,\mathrm{tr}[\Omega\Lambda^3(I-\gamma\Lambda/L)^{2L-2}]/L^2$
# across it, `untied_balanced_hessian`), so SGD noise splits the layers once $\gamma$ nears the balanced
# optimum, most visibly at $L=2$; unequal layer scales reach a lower loss (`untied_optimum`).

# %%
lam_u, om_u = power_law_spectrum(D_untied, nu, beta)
u8 = us.untied_comparison(lam_u, om_u, depths=(2, 4, 8), B=B_untied, eta=eta_untied, steps=steps_untied, seed=seed,
                          device=device, workers=thread_budget())
tu, L_show = u8.t, 8
fig8, axs8 = plt.subplots(1, 3, figsize=(16, 3.8))
for i, (L, (_, l_th)) in enumerate(u8.flow.items()):
    axs8[0].plot(tu, l_th, color=PALETTE[i], label=f"L={L} recurrent theory")
    axs8[0].plot(block_average(tu[:-1], 10), block_average(u8.runs[L].loss, 10), "o", ms=3, color=PALETTE[i])
axs8[0].set(xlabel="t = η · steps", ylabel="loss", yscale="log", title=f"(a) untied layers, D={D_untied}, RRS power law")
for l in range(L_show):
    axs8[1].plot(tu, u8.runs[L_show].gamma[:, l], color=plt.cm.viridis(l / L_show), lw=1, label=f"γ^{l + 1}" if l in (0, L_show - 1) else None)
axs8[1].plot(tu, u8.flow[L_show][0], "k--", label="recurrent theory γ(t)")
axs8[1].set(xlabel="t = η · steps", ylabel="γ^ℓ = tr Γ^ℓ", title=f"(b) balance across layers, L={L_show}")
# (c) the balanced manifold is transversally unstable: the two layers of L = 2 split
for l in (0, 1):
    axs8[2].plot(tu, u8.runs[2].gamma[:, l], color=PALETTE[l], label=f"γ{'¹²'[l]} (SGD)")
axs8[2].plot(tu, u8.flow[2][0], "k--", label="balanced theory")
axs8[2].set(xlabel="t = η · steps", ylabel="γ^ℓ", title="(c) L=2: balance is unstable")
for a in axs8:
    a.legend(fontsize=7)
fig8.tight_layout()
save_figure(fig8, "fig8_untied_layers")

# The untied-vs-recurrent bias against the batch size (ledger row on Figure 8a): the flow is the
# eta/B -> 0 limit of SGD. At L = 2 (the largest bias), B in {B/4, B, 4B}, untied_seeds independent
# runs each; the late relative bias of the mean layer trace net of the deterministic discretisation
# bias (the expected dynamics in the same discrete steps, signed), SE over runs
L_sw, B_sw = 2, [max(1, B_untied // 4), B_untied, 4 * B_untied]
sw8 = us.untied_batch_sweep(lam_u, om_u, L=L_sw, eta=eta_untied, batches=B_sw, seeds=untied_seeds,
                            horizon=eta_untied * steps_untied, seed=seed, device=device, workers=thread_budget())
p8 = sw8.power_fit()[1]
fig8s, ax = plt.subplots(figsize=(5, 3.6))
ax.errorbar(B_sw, sw8.bias, yerr=sw8.se, fmt="o", capsize=2, label=f"L={L_sw}, η={eta_untied:g}: fit ∝ B^-{p8:.2f}")
ax.axhline(0.0, color="grey", lw=0.5)
ax.set(xscale="log", xlabel="contexts per step B", ylabel="late bias of mean γ^ℓ − discretisation",
       title=f"(a) untied SGD vs recurrent flow, D={D_untied}"); ax.legend(fontsize=7)
save_figure(fig8s, "fig8a_bias_batch")

# Hessian at the balanced optimum, layer gradients there (equal by symmetry), and the global untied
# optimum against the balanced one: at the SGD size D_untied and at D_untied_large
opt = us.untied_optimum_checks((lam_u, om_u), power_law_spectrum(D_untied_large, nu, beta), (2, 4, 8))

# %% tags=["nbval-check-output"]
print("untied vs recurrent theory: max late rel gamma error %.2f; layer spread (L=8) %.2f; final split (L=2) %.2f"
      % (u8.max_rel_err, u8.layer_spread[8], u8.final_split[2]))
for L, st in opt.stability.items():
    print(f"L={L}: Hessian at balanced optimum {st.longitudinal:.2e} (balanced), {st.transverse:.2e} (transverse); "
          f"balanced min {st.balanced_loss:.4f}, unbalanced min {st.untied_loss:.4f}")

# %% [markdown]
# ## Untied layers with label noise (App. G.1.2, Eq. 122)
# The same untied model at finite context length $P=\alpha D$ with noisy labels
# $y=\beta\cdot x/\sqrt D+\sigma\epsilon$ (training contexts and queries), trained on the query
# mean-squared error. Eq. (122) adds to the noise-free loss the term
# $\frac{\sigma^2}{L^2\alpha}\sum_{\ell\ell'}\gamma^\ell\gamma^{\ell'}\mathrm{tr}\,\Lambda\prod_{k>\ell}A^k\Lambda\prod_{k>\ell'}A^k$;
# the theory is the balanced gradient flow on it (`untied_noisy_flow`, Monte Carlo over
# `noise_draws` context covariances at the same $D$ and $P$). The exact noise term keeps $\hat\Sigma$
# where Eq. (122) writes its mean $\Lambda$ (`decoupled=False`), evaluated along the same $\gamma(t)$;
# their difference is $O(\sigma^2/\alpha^2)$.

# %%
# untied_seeds independent runs on contexts of P = alpha_noise D_untied tokens and D_untied queries (tasks)
ln_kw = dict(P=int(round(alpha_noise * D_untied)), L=L_noise, sigma=sigma_noise, eta=eta_untied, steps=steps_untied,
             seeds=untied_seeds, n_draws=noise_draws, seed=seed, workers=thread_budget())
ln = us.untied_label_noise_comparison(lam_u, om_u, B=B_untied, device=device, **ln_kw)
fig_n, ax = plt.subplots(figsize=(5.5, 3.8))
ax.plot(block_average(tu[:-1], 10), block_average(np.mean(ln.sim_curves, axis=0), 10), "o", ms=3, color=PALETTE[0],
        label=f"SGD, σ={sigma_noise:g} ({untied_seeds} runs)")
ax.plot(tu, ln.loss_eq122, color=PALETTE[0], label="Eq. 122 (balanced flow)")
ax.plot(tu, ln.loss_exact, ":", color="k", label="exact noise term (Σ̂ kept), same γ(t)")
ax.plot(tu, ln.loss_noise_free, "--", color=PALETTE[1], label="Eq. 122 without its noise term, same γ(t)")
ax.set(xlabel="t = η · steps", ylabel="excess loss (query noise σ² removed)", yscale="log",
       title=f"untied L={L_noise}, D={D_untied}, α={alpha_noise:g}, label noise"); ax.legend(fontsize=7)
save_figure(fig_n, "fig8_untied_label_noise")

# %% tags=["nbval-check-output"]
print("untied, label noise: late excess loss SGD %.4f +- %.4f, Eq. 122 %.4f, exact %.4f, noise term %.4f"
      % (ln.sim_late.mean(), standard_error(ln.sim_late), ln.eq122_late, ln.exact_late, ln.noise_term_late))

# %% [markdown]
# ## Trainable read-in and read-out (§5.2, App. G.2, Eq. 124)
# The block model of Figure 6 with trainable scalars $a_y$ (read-in $w_y=a_ye_D$) and $a_o$
# (read-out), from a small start $a_o=a_y=$ `a0_readout`, plain SGD with a constant step, against the
# gradient flow of Eq. (124) on $(a_o, a_y, s)$ (`readout_flow`, Monte Carlo over `readout_draws`
# context covariances at the same $D$, $P$), and the same theory taken in the SGD's own discrete steps
# (`readout_descent_path`, the expected SGD path; the flow is its $\eta\to0$ limit). Isotropic data.
# The blow-up comes at the escape from the small start, whose time grows with $D$ ($c=2/D^2$), so the run
# must outlast it (`steps_readout`); the SGD noise of the finite batch (`B_readout`) lowers the peak at
# $O(\eta/B)$, which the theory leaves out.

# %%
rd = fa.readout_comparison(D=D, P=P, K=K, B=B_readout, L=L_readout, s0=s0, a0=a0_readout, eta=eta_readout, steps=steps_readout,
                           seeds=readout_seeds, n_draws=readout_draws, seed=seed, device=device, workers=thread_budget())
fig_r, axs_r = plt.subplots(1, 2, figsize=(11, 3.8))
for rr, mr in zip(rd.runs, rd.m):
    axs_r[0].plot(rd.t, mr, color=PALETTE[0], alpha=0.5, lw=1)
    axs_r[1].plot(block_average(rd.t[:-1], 10), block_average(rr.loss, 10), color=PALETTE[0], alpha=0.5, lw=1)
axs_r[0].plot(rd.t, rd.flow.m, "k--", label="Eq. 124 flow: a_o a_y")
axs_r[0].plot(rd.t, rd.path.m, ":", color="k", label="Eq. 124 in the SGD's steps")
axs_r[0].plot(rd.t, rd.flow.gamma / rd.flow.gamma[-1], ":", color=PALETTE[1], label="γ / γ(t_end) (theory)")
axs_r[0].plot([], [], color=PALETTE[0], label=f"SGD ({readout_seeds} runs)")
axs_r[0].set(xlabel="t = η · steps", ylabel="a_o a_y", title=f"(a) read-out scale: blow-up and recovery, L={L_readout}")
axs_r[1].plot(rd.t, rd.flow.loss, "k--", label="Eq. 124 flow")
axs_r[1].set(xlabel="t = η · steps", ylabel="loss", yscale="log", title=f"(b) loss, ISO D={D}, α={alpha}")
axs_r[0].legend(fontsize=7); axs_r[1].legend(fontsize=7)
fig_r.tight_layout()
save_figure(fig_r, "fig6_readout_blowup")

# %% tags=["nbval-check-output"]
pk, ov = rd.peak, rd.overshoot
print("read-out scale a_o a_y: SGD peak %.3f +- %.3f (theory in SGD steps %.3f +- %.3f, flow %.3f), final SGD %.3f"
      " (theory %.3f), overshoot %.3f +- %.3f" % (pk.mean(), standard_error(pk), rd.path.m.max(),
      rd.peak_theory_se, rd.flow.m.max(), rd.m[:, -1].mean(), rd.path.m[-1], ov.mean(), standard_error(ov)))

# %% [markdown]
# ## The label-noise gap against the batch size
# Eq. (122) is a gradient flow, the $\eta/B\to0$ limit of SGD; the SGD noise of a finite batch adds
# loss that the flow leaves out, at leading order in $\eta/B$. The label-noise comparison repeated at $2B$
# and $4B$ (everything else equal) gives the gap of the late excess loss over Eq. (122) against $1/B$.

# %%
# the gaps at B, 2B and 4B are the metrics untied_noise_gap_{quick,double,large}_batch (and the own-trace gaps)
ln_B = {k * B_untied: ln if k == 1 else us.untied_label_noise_comparison(lam_u, om_u, B=k * B_untied, device=device, **ln_kw) for k in (1, 2, 4)}

# %%
write_metrics({**f6["iso"].metrics("fig6a_iso", final_depths=(8, 1)), **f6["rrs"].metrics("fig6b_rrs"), **ex.metrics(),
               **us.batch_bias_metrics(sw8, B_sw), **u8.metrics(), **opt.metrics(small_depths=(4, 8)), **ln.metrics(),
               **rd.metrics(), **us.label_noise_batch_metrics(ln_B), "runtime_s": time.time() - t_start})
