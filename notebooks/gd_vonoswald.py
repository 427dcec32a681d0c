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
# # The von Oswald et al. (2023) construction as matrices (Nagy 2026, App. A, V1–V3)
# The paper mechanises only the scalar gain product $\kappa = v_o q_k$. Here the key, query, value
# and projection matrices are explicit (`iclcore.gd.construction.von_oswald_layers`), the forward
# pass is compared with $k$ GD steps, and in the regression setting of von Oswald et al. (2023)
# ($d = N = 10$, $x\sim U(-1,1)^d$, $w\sim\mathcal N(0,I)$, noise-free) three test losses are
# compared: the optimal single GD step, the constructed LSA layer, and one LSA layer trained by Adam.
# **Loss convention:** every loss below is $\tfrac12\,\mathbb E(\hat y_q - y_q)^2$ (halved), and the GD
# step acts on $\tfrac1{2N}\sum_i (w^\top x_i - y_i)^2$ from $w_0 = 0$.

# %% tags=["parameters", "hide-input"]
d = 10  # range: [1, 100]
N = 10  # context length; range: [1, 100]
n_eta = 20000  # prompts used to choose the optimal single step; range: [1, 1000000]
n_test = 10000  # test prompts (losses and standard errors; a standard error needs two draws); range: [2, 500000]
train_steps = 1500  # Adam steps for the trained LSA layer; range: [1, 100000]
batch = 256  # range: [1, 20000]
lr = 1e-3  # Adam step size; range: (0, inf)
n_runs = 4  # independent trainings (seeds seed, ..., seed + n_runs - 1), each on its own test prompts; range: [2, 100]
long_steps = 6000  # the runs continue at the step lr up to this step count, no further when at most train_steps; range: [1, 1000000]
stage_steps = 1500  # then this many steps at lr/4 and as many at lr/16; range: [1, 100000]
max_layers = 5  # construction check for 1..max_layers layers; range: [1, 50]
seed = 0  # random seed; range: [0, 4294967295]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {
    "paper": {
        "n_eta": 100000,
        "n_test": 50000,
        "train_steps": 10000,
        "batch": 2048,
        "long_steps": 10000,
        "stage_steps": 2000,
    }
}

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np
import torch

from iclcore.gd.construction import (
    gd_predict,
    lsa_forward,
    optimal_single_step,
    sample_regression,
    squared_loss_half,
    train_lsa_runs,
    train_one_layer_lsa,
    von_oswald_layers,
)
from iclcore.plotting import save_figure, use_style, write_metrics
from iclcore.stats import standard_error

use_style()
torch.set_num_threads(1)
rng = np.random.default_rng(seed)

# %% [markdown]
# ## k layers = k GD steps
# Untied steps $\eta_l$ drawn at random; the maximum absolute difference between the LSA prediction
# after each layer and the GD prediction after the same number of steps.

# %%
Xc, yc, xqc, _, _ = sample_regression(500, N, d, rng=rng)
etas = rng.uniform(0.2, 1.5, max_layers)
f_all = lsa_forward(Xc, yc, xqc, layers=von_oswald_layers(d, etas), return_all=True)
construction_err = max(np.abs(f_all[k] - gd_predict(Xc, yc, xqc, etas=etas[:k])).max() for k in range(1, max_layers + 1))
W0 = von_oswald_layers(d, [1.0])[0]
print("K =\n", W0.K.astype(int), "\nP V =\n", (W0.P @ W0.V).astype(int), "(times eta)")

# %% [markdown]
# ## Three losses

# %%
Xt, yt, xqt, yqt, _ = sample_regression(n_eta, N, d, rng=rng)
eta_star = optimal_single_step(Xt, yt, xqt, yq=yqt)
Xe, ye, xqe, yqe, _ = sample_regression(n_test, N, d, rng=rng)
pred_gd = gd_predict(Xe, ye, xqe, etas=[eta_star])
pred_lsa = lsa_forward(Xe, ye, xqe, layers=von_oswald_layers(d, [eta_star]))
model, curve = train_one_layer_lsa(d, N, train_steps, batch=batch, lr=lr, gen=torch.Generator().manual_seed(seed), seed=seed + 1, device=device)
with torch.no_grad():
    pred_tr = model(*(torch.from_numpy(a) for a in (Xe, ye, xqe))).numpy()
L_gd, se_gd = squared_loss_half(pred_gd, yqe)
L_lsa, se_lsa = squared_loss_half(pred_lsa, yqe)
L_tr, se_tr = squared_loss_half(pred_tr, yqe)
L_zero, se_zero = squared_loss_half(np.zeros_like(yqe), yqe)
diff = 0.5 * (pred_tr - yqe) ** 2 - 0.5 * (pred_gd - yqe) ** 2
pred_cos = float(pred_tr @ pred_gd / np.linalg.norm(pred_tr) / np.linalg.norm(pred_gd))

fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
ax[0].plot(np.arange(1, train_steps + 1), curve, lw=0.6, color="0.5", label="trained LSA (batch loss)")
ax[0].axhline(L_gd, color="C0", label="optimal single GD step (test)")
ax[0].axhline(L_zero, color="C3", ls=":", label="predict 0 (test)")
ax[0].set(xlabel="Adam step", ylabel="½ E (ŷ - y)²", yscale="log", title="one LSA layer, d = N = 10")
ax[0].legend(fontsize=7)
sel = slice(0, 2000)
ax[1].plot(pred_gd[sel], pred_tr[sel], ".", ms=1.5)
lim = np.abs(pred_gd[sel]).max()
ax[1].plot([-lim, lim], [-lim, lim], "k-", lw=0.6)
ax[1].set(xlabel="GD prediction (η*)", ylabel="trained LSA prediction", title="test prompts")
save_figure(fig, "fig_vonoswald_losses")

# %% [markdown]
# ## Independent runs
# One training is one draw: the comparison above is repeated on `n_runs` layers trained at the seeds
# `seed, ..., seed + n_runs - 1` (the first is the layer above), each compared with the GD step on its own
# test prompts. Each run is read at `train_steps`, the setting above, then continued at the step `lr` to
# `long_steps` and for `stage_steps` steps each at `lr/4` and `lr/16` (Adam's moments carry over):
# the gap at the three step sizes is the step series of the row's diagnosis. A run that stalls is compared
# with the saddle of one input direction: the best GD step that reads only the first coordinate of x
# (prediction cosine with the full step about $d^{-1/2}$).

# %%
extra = [(long_steps - train_steps, 1.0)] if long_steps > train_steps else []
stages = [(train_steps, 1.0), *extra, (stage_steps, 0.25), (stage_steps, 0.0625)]
runs = train_lsa_runs(
    d, N, seed + np.arange(n_runs), stages=stages, batch=batch, lr=lr, eta=eta_star, n_test=n_test, test_rng=rng, device=device
)
runs_z, runs_mean, runs_se = runs.max_z(), runs.mean(), runs.se_over_runs()
eta_one = optimal_single_step(Xt[..., :1], yt, xqt[:, :1], yq=yqt)
pred_one = gd_predict(Xe[..., :1], ye, xqe[:, :1], etas=[eta_one])
gap_one = float(np.mean(0.5 * (pred_one - yqe) ** 2 - 0.5 * (pred_gd - yqe) ** 2))
print("gap per run (rows) at the end of each stage (columns):", runs.stage_ends, "\n", np.round(runs.gap, 5))
print("max |z| over runs:", np.round(runs_z, 1), "; min cosine with GD:", np.round(runs.cosine.min(axis=0), 4))

# %%
write_metrics(
    {
        "construction_max_abs_err": construction_err,
        "eta_star": eta_star,
        "loss_gd": L_gd,
        "loss_gd_se": se_gd,
        "loss_constructed": L_lsa,
        "loss_constructed_se": se_lsa,
        "loss_trained": L_tr,
        "loss_trained_se": se_tr,
        "loss_zero": L_zero,
        "loss_zero_se": se_zero,
        "trained_minus_gd": float(diff.mean()),
        "trained_minus_gd_se": float(standard_error(diff)),
        "constructed_minus_gd_abs": abs(L_lsa - L_gd),
        "prediction_cosine_trained_gd": pred_cos,
        "d": d,
        "N": N,
        "n_test": n_test,
        "train_steps": train_steps,
        "n_runs": n_runs,
        "lr": lr,
        "trained_minus_gd_runs_max_z": float(runs_z[0]),
        "trained_minus_gd_runs_mean": float(runs_mean[0]),
        "trained_minus_gd_runs_se": float(runs_se[0]),
        "prediction_cosine_runs_min": float(runs.cosine[:, 0].min()),
        "trained_minus_gd_runs_max": float(runs.gap[:, 0].max()),
        "trained_minus_gd_rank_one": gap_one,
        **{f"trained_minus_gd_long{k}": float(runs_mean[j]) for k, j in (("", -3), ("_lr4", -2), ("_lr16", -1))},
        **{f"trained_minus_gd_long{k}_se": float(runs_se[j]) for k, j in (("", -3), ("_lr4", -2), ("_lr16", -1))},
        "trained_minus_gd_long_lr16_max_z": float(runs_z[-1]),
        "prediction_cosine_long_lr16_min": float(runs.cosine[:, -1].min()),
        "long_steps": long_steps,
    }
)

# %% tags=["nbval-check-output"]
print(f"construction error {construction_err:.1e}; eta* = {eta_star:.3f}")
print(
    f"losses (halved): GD {L_gd:.3f} ± {se_gd:.3f}, constructed {L_lsa:.3f}, trained {L_tr:.3f} ± {se_tr:.3f}, zero {L_zero:.3f}"
)
