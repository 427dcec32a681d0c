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
# # An offline miniature of the depth-contraction probe (Nagy 2026, §8.2–§8.5)
# The paper reads per-layer estimates out of pretrained language models with a logit lens and
# reports statistics of their depth trajectory. Its checkpoints cannot be downloaded here, so this
# notebook runs the same statistics on two small models trained from scratch on in-context linear
# regression, where the target $y^\star = w^\top x_q$ and the curvature $\operatorname{tr}H$ are exact:
#
# * an untied 4-layer linear-attention model (LSA, von Oswald tokens), whose per-layer readout is exact;
# * a small softmax GPT (pre-LayerNorm, learned BOS token, all-position loss), read with the shared
#   final LayerNorm and head (the logit-lens analogue).
#
# Each prompt has its own input scale $s\sim\mathrm{LogU}(s_{lo}, s_{hi})$, so $\operatorname{tr}H$ spans
# $(s_{hi}/s_{lo})^2$ (16× by default) and the curvature law can be tested. Every statistic is defined in
# the docstring of `iclcore.gd.depth_probe`. Nulls: the step-0 model (the first checkpoint), a
# layer-shuffled readout, and the closed-form iid-noise reference.
#
# The LSA's training loss is heavy-tailed, and a rare probe prompt can make its readout explode, so
# the ledger grades the medians over prompts (prefix `med_`, with bootstrap standard errors over the
# probe prompts, `_se`) rather than the means and pooled fits, which one such prompt decides; both are
# recorded. `probe_seed` draws a new probe set without retraining.

# %% tags=["parameters", "hide-input"]
d = 5  # task dimension; range: [1, 64]
n = 20  # context length (pairs per prompt); range: [1, 1024]
s_lo = 0.5  # per-prompt input scale s ~ LogUniform(s_lo, s_hi); range: (0, inf)
s_hi = 2.0  # upper end of the scale (at least s_lo); range: (0, inf)
lsa_layers = 4  # depth of the untied LSA; range: [1, 32]
lsa_steps = 2000  # LSA training steps; range: [1, 100000]
lsa_lr = 2e-4  # LSA Adam learning rate; range: (0, inf)
gpt_layers = 4  # depth of the GPT miniature; range: [1, 32]
gpt_width = 32  # GPT embedding width (a multiple of gpt_heads); range: [1, 1024]
gpt_heads = 2  # GPT attention heads; range: [1, 64]
gpt_steps = 1000  # GPT training steps; range: [1, 100000]
gpt_lr = 1e-3  # GPT Adam learning rate; range: (0, inf)
batch = 64  # LSA training batch; range: [1, 65536]
gpt_batch = 64  # GPT training batch (32 halves its cost but weakens the emergence: ER_rel 0.64 -> 0.28 at step 1000); range: [1, 65536]
warmups = [200]  # linear warm-up lengths (one run per value and seed); range: [0, 100000]; length: [1, 16]
seeds = [0]  # training seeds; range: [0, 4294967295]; length: [1, 16]
checkpoint_base = 4  # checkpoints at 0, 1, base, base^2, ... and the last step; range: [2, 64]
n_probe = 256  # prompts for the readout statistics; range: [1, 100000]
n_rich = 64  # contexts for the implicit weights (Richardson fit); range: [1, 10000]
m_rich = 12  # probe queries per context (GPT; the LSA needs d unit queries); range: [1, 1000]
probe_seed = 0  # seeds the probe and Richardson prompts, the layer shuffles and the bootstrap, independently of training (resample the probe set with it); range: [0, 4294967295]
workers = 0  # threads for the independent training runs; 0: the worker's thread budget (OMP_NUM_THREADS, else 1); range: [0, 256]
gpt_threads = 1  # threads of each GPT training (at most the budget; on Dask, workers must declare the resource 'threads'); range: [1, 64]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device
gpt_compile = False  # each GPT training's batch loss under torch.compile: the paper step ~1.1x faster after ~20 s of compiling per run; losses equal to float32 rounding, not bit for bit

# %% tags=["presets", "remove-cell"]
PRESETS = {
    "paper": {
        "lsa_steps": 8192,
        "gpt_batch": 64,
        "gpt_layers": 6,
        "gpt_width": 64,
        "gpt_heads": 4,
        "gpt_steps": 8192,
        "warmups": [50, 200, 1000],
        "seeds": [0, 1, 2],
        "checkpoint_base": 2,
        "n_probe": 2048,
        "n_rich": 128,
        "m_rich": 15,
    }
}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from iclcore.gd.depth_probe import ProbeSweep, iid_noise_reference, probe_sweep_metrics, probe_training_sweep
from iclcore.parallel import thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics

use_style()
torch.set_num_threads(1)
t_start = time.process_time()
sweep = ProbeSweep.from_parameters(globals())  # the parameters above
kernel_cpu = time.process_time()
runs = probe_training_sweep(sweep, workers or thread_budget(), device=device, gpt_threads=gpt_threads)  # (kind, warm-up, seed) -> ProbeRun
kernel_cpu = time.process_time() - kernel_cpu  # the runs' own CPU when they ran in this process
for (kind, wu, sd), r in runs.items():
    print(f"{kind} warm-up {wu} seed {sd}: {len(r.records)} checkpoints, {r.skipped} skipped steps, {r.cpu:.0f} s CPU")

# %% [markdown]
# ## Statistics across training
# Main run (first warm-up and seed). Each panel shows the statistic for the ordered readout and,
# where it applies, for the layer-shuffled readout (dashed) and the iid-noise reference (dotted).

# %%
iid = iid_noise_reference(0.0)
main = {k: runs[(k, sweep.warmups[0], sweep.seeds[0])].records for k in ("lsa", "gpt")}
panels = [
    ("med_er_rel", "er_rel", None, "error reduction: median (—), mean (--)"),
    ("alpha", "shuffled_alpha", iid["alpha"], "pooled slope α"),
    ("sign_agreement", "shuffled_sign_agreement", iid["sign_agreement"], "sign agreement"),
    ("rel_err_rho", None, None, "|ρ_pred − ρ_obs| / ρ_obs"),
    ("rel_err_rate", None, None, "|ρ_pred − ρ_obs| / (1 − ρ_obs)"),
    ("rich_r2_aware", "rich_r2_blind", None, "Richardson R²: H-aware (—), H-blind (--)"),
    ("curvature_corr", None, None, "corr(per-prompt log-rate, log tr H)"),
    ("geo_r2", "monotone_fraction", None, "geometric-fit R² (—), monotone fraction (--)"),
]
fig, axs = plt.subplots(2, 4, figsize=(15, 7.5), layout="constrained")
for ax, (key, alt, ref, title) in zip(axs.ravel(), panels):
    for c_, kind in zip(PALETTE, ("lsa", "gpt")):
        st = np.array([r["step"] for r in main[kind]]) + 1
        ax.plot(st, [r[key] for r in main[kind]], "o-", color=c_, ms=3, label=kind.upper())
        if alt:
            ax.plot(st, [r[alt] for r in main[kind]], "s--", color=c_, ms=2, lw=0.8)
    if ref is not None:
        ax.axhline(ref, color="k", ls=":", lw=0.8)
    ax.set(xscale="log", title=title)
    ax.title.set_fontsize(9)
    if key.startswith("rel_err"):
        ax.set_yscale("log")
    if key == "med_er_rel":  # the mean can explode (LSA), the median cannot
        ax.set_yscale("symlog", linthresh=1)
axs[0, 0].legend(fontsize=7)
for ax in axs[1]:
    ax.set_xlabel("training step + 1")
save_figure(fig, "fig_probe_statistics")

# %% [markdown]
# ## Error by layer and attention on BOS by depth

# %%
fig, ax = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
for c_, kind, L in zip(PALETTE, ("lsa", "gpt"), (lsa_layers, gpt_layers)):
    sel = np.unique(np.linspace(0, len(main[kind]) - 1, 5).astype(int))
    for i, a_ in zip(sel, np.linspace(0.25, 1, len(sel))):
        r = main[kind][i]
        ax[0 if kind == "lsa" else 1].plot(range(L + 1), [r[f"mae_l{l}"] for l in range(L + 1)], "o-", color=c_,
                                           alpha=a_, ms=3, label=f"step {r['step']}")
for a in ax[:2]:
    a.set(xlabel="layer ℓ", ylabel="MAE_ℓ", yscale="log")
    a.legend(fontsize=6)
ax[0].set_title("LSA: MAE by layer")
ax[1].set_title("GPT: MAE by layer (lens)")
for r, a_ in zip(main["gpt"], np.linspace(0.2, 1, len(main["gpt"]))):
    ax[2].plot(range(1, gpt_layers + 1), [r[f"bos_l{l}"] for l in range(1, gpt_layers + 1)], "o-", color=PALETTE[1],
               alpha=a_, ms=3, label=f"step {r['step']}")
ax[2].legend(fontsize=6)
ax[2].set(xlabel="layer", ylabel="attention on BOS", title="GPT: BOS attention by depth (light = early)")
save_figure(fig, "fig_probe_layers")

# %%
metrics = probe_sweep_metrics(runs, sweep)  # every statistic is defined in iclcore.gd.depth_probe
metrics["cpu_seconds_total"] = time.process_time() - t_start - kernel_cpu + sum(r.cpu for r in runs.values())
write_metrics(metrics)

# %% tags=["nbval-check-output"]
for kind in ("lsa", "gpt"):
    print(
        f"{kind}: ER_rel {metrics[f'{kind}_step0_er_rel']:.2f} -> {metrics[f'{kind}_er_rel']:.1f}; "
        f"alpha {metrics[f'{kind}_alpha']:.1f} (shuffled {metrics[f'{kind}_shuffled_alpha']:.1f}); "
        f"Richardson R2 aware {metrics[f'{kind}_rich_r2_aware']:.1f} / blind {metrics[f'{kind}_rich_r2_blind']:.1f}"
    )
