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
# # The synthetic panel of "ICL implements GD" (Nagy 2026, §8.1, Figure 1)
# (a) scalar GD, $L_k/L_0$ against $(1-\eta a)^{2k}$ for $a\in\{0.3, 0.6, 1, 1.5\}$ at $\eta=1$, on
# realizable data ($L^\star=0$) and on data with $L^\star>0$; (b) GD with $\eta^\star=2/(\lambda_{\min}+\lambda_{\max})$
# on $n=20$, $d=5$ with a spread spectrum, error per eigenchannel against $(1-\eta^\star\lambda_i)^{2k}$;
# (c) $(\rho^2)^k$ against $\rho^2$ for $k\in\{1,2,3,5,10\}$.

# %% tags=["parameters", "hide-input"]
n = 20  # range: [1, 200]
d = 5  # range: [1, 50]
lam_min = 0.9  # smallest eigenvalue of X^T X; range: (0, inf)
lam_max = 108.0  # largest eigenvalue of X^T X; range: (0, inf)
steps = 20  # range: [1, 200]
eta_scalar = 1.0  # scalar GD step (stable below 2 / max a, that is 4/3); range: (0, 1.3333333333333333)
Lstar_nonrealizable = 0.5  # minimum loss of the non-realizable variant of panel (a); range: (0, inf)
seed = 42  # random seed; range: [0, 4294967295]

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {}}

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np

from iclcore.gd.synthetic import compounding, eigenchannel_panel, scalar_loss_ratio, spectrum_design
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics

use_style()
rng = np.random.default_rng(seed)
curv = [0.3, 0.6, 1.0, 1.5]
ks = np.arange(steps + 1)
lam = np.geomspace(lam_min, lam_max, d)
X = spectrum_design(n, lam, rng)
y = X @ rng.standard_normal(d)
panel = eigenchannel_panel(X, y, steps)

fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
err_a, err_a_nr = [], []
for c_, a in zip(PALETTE, curv):
    ratio, pred = scalar_loss_ratio(a, eta_scalar, steps)
    ratio_nr, _ = scalar_loss_ratio(a, eta_scalar, steps, Lstar=Lstar_nonrealizable)
    err_a.append(np.abs(ratio - pred).max())
    err_a_nr.append(np.abs(ratio_nr - pred).max())
    ax[0].semilogy(ks, np.maximum(ratio, 1e-300), "o", color=c_, ms=3, label=f"a = {a}")
    ax[0].semilogy(ks, np.maximum(pred, 1e-300), "-", color=c_, lw=1)
    ax[0].semilogy(ks, ratio_nr, ":", color=c_, lw=1)
ax[0].set_ylim(1e-30, 2)
ax[0].set(xlabel="step k", ylabel="$L_k/L_0$", title="(a) scalar GD, η = 1 (dotted: L* > 0)")
ax[0].legend(fontsize=7)
for i in range(d):
    ax[1].semilogy(
        ks,
        panel.sq_err[:, i] / panel.sq_err[0, i],
        "o",
        ms=3,
        color=PALETTE[i % len(PALETTE)],
        label=f"λ = {panel.lam[i]:.3g}, factor {panel.factors[i]:.4f}",
    )
    ax[1].semilogy(ks, panel.factors[i] ** ks, "-", lw=1, color=PALETTE[i % len(PALETTE)])
ax[1].set(xlabel="step k", ylabel="$(q_i^\\top e_k)^2/(q_i^\\top e_0)^2$", title="(b) eigenchannels at η*")
ax[1].legend(fontsize=6)
r2 = np.linspace(0, 1, 201)
for kk, row in zip((1, 2, 3, 5, 10), compounding(r2)):
    ax[2].plot(r2, row, label=f"k = {kk}")
ax[2].set(xlabel="single-step ρ²", ylabel="(ρ²)^k", title="(c) compounding")
ax[2].legend(fontsize=7)
save_figure(fig, "fig1_synthetic_panel")

# %%
rel_b = np.abs(panel.sq_err - panel.predicted).max() / panel.sq_err[0].max()
mid = np.argmin(panel.factors)
metrics = {
    "a_max_abs_err_realizable": max(err_a),
    "a_max_abs_err_nonrealizable": max(err_a_nr),
    "b_max_rel_err": rel_b,
    "b_eta_star": panel.eta,
    "b_factor_lambda_min": panel.factors[0],
    "b_factor_lambda_max": panel.factors[-1],
    "b_extremes_equal_diff": abs(panel.factors[0] - panel.factors[-1]),
    "b_fastest_lambda": panel.lam[mid],
    "b_fastest_factor": panel.factors[mid],
    "b_largest_is_fastest": bool(mid == d - 1),
    "b_lambda_min": panel.lam[0],
    "b_lambda_max": panel.lam[-1],
    "c_rho2_0p9_k2": 0.9**2,
    "c_rho2_0p9_k5": 0.9**5,
    "c_rho2_0p9_k10": 0.9**10,
    "n": n,
    "d": d,
    "steps": steps,
}
write_metrics(metrics)

# %% tags=["nbval-check-output"]
print(f"(a) max |L_k/L_0 - (1-a)^2k|: realizable {max(err_a):.1e}, L* > 0 {max(err_a_nr):.2f}")
print(
    f"(b) factors at eta*: lambda_min {panel.factors[0]:.4f}, lambda_max {panel.factors[-1]:.4f}, "
    f"fastest lambda {panel.lam[mid]:.2f} ({panel.factors[mid]:.4f})"
)
