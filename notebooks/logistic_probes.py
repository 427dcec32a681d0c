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
# # Probes on non-linear transformers: in-context learning and grokking
# Mainali & Teixeira (§4) apply their theory-inspired probes (effective rank Eq. 15, marginalized
# effective rank, subspace distance Eq. 16) to pretrained attention-only models of 1-4 layers
# and to a grokking model (Figs. 3B, 5-7). Those checkpoints cannot be downloaded here, so
# this notebook trains small stand-ins with `iclcore.models.toy_transformers` (attention-only
# models on a periodic copying task that needs an induction mechanism; a one-layer
# modular-addition transformer with weight decay) and tests each of the paper's qualitative
# statements on them.

# %% tags=["parameters", "hide-input"]
seed = 0  # random seed; range: [0, 4294967295]
max_layers = 4          # attention-only models with 1..max_layers layers; range: [1, 50]
d_model = 32  # range: [1, 1000]
n_heads = 2  # range: [1, 50]
d_head = 16  # range: [1, 200]
seq_len = 32  # range: [1, 500]
vocab = 16  # range: [1, 200]
icl_batch = 32  # range: [1, 1000]
icl_steps = 300  # range: [1, 20000]
icl_log_every = 10  # range: [1, 200]
init_scale = 0.1        # small init of the attention weights (the linear theory's regime); range: (0, inf)
stagger_seeds = 4       # independent training seeds of the 2-layer model for the staggered-minima row; range: [2, 100]
grok_p = 31  # range: [1, 500]
grok_frac = 0.6  # range: (0, 1)
grok_d_model = 32  # range: [1, 1000]
grok_heads = 4  # range: [1, 50]
grok_d_head = 8  # range: [1, 200]
grok_d_mlp = 128  # range: [1, 5000]
grok_lr = 0.003  # range: (0, inf)
grok_steps = 2500  # range: [1, 100000]
grok_log_every = 50  # range: [1, 1000]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"d_model": 64, "n_heads": 4, "d_head": 16, "seq_len": 48, "icl_batch": 64, "icl_steps": 1500,
                     "icl_log_every": 25, "stagger_seeds": 8, "grok_p": 59, "grok_frac": 0.5, "grok_d_model": 64, "grok_heads": 4,
                     "grok_d_head": 16, "grok_d_mlp": 256, "grok_lr": 0.001, "grok_steps": 10000,
                     "grok_log_every": 100}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.logistic import transformer_probes as lp
from iclcore.models import toy_transformers as tt
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import save_figure, use_style, write_metrics
from iclcore.stats import standard_error

use_style()
T0 = time.time()

# %% tags=["nbval-check-output"]
_cfgs = {L: tt.AttnConfig(n_layers=L, d_model=d_model, n_heads=n_heads, d_head=d_head, vocab=vocab, seq_len=seq_len,
                          max_period=min(12, seq_len // 3)) for L in range(1, max_layers + 1)}
_gcfg = tt.GrokConfig(p=grok_p, frac_train=grok_frac)
_xtr, _, _xte, _ = tt.modular_addition_split(_gcfg, seed)
print("attention weights per layer:", 4 * n_heads * d_model * d_head, "| grokking train/test pairs:", len(_xtr), len(_xte))

# %% [markdown]
# ## Attention-only models of 1-4 layers
# Late-position loss (last quarter of the sequence, fixed evaluation batch) per depth; the
# "ICL emergence" window is where it covers 10%-90% of its drop from the plateau.

# %%
# every training of this notebook is an independent task (local processes, or the Dask cluster of
# `icl-book run --scheduler`): one model per depth, the extra seeds of the 2-layer model (staggered
# minima below) and the grokking model
cfgs = {L: tt.AttnConfig(n_layers=L, d_model=d_model, n_heads=n_heads, d_head=d_head, vocab=vocab, seq_len=seq_len,
                         max_period=min(12, seq_len // 3), init_scale=init_scale, batch=icl_batch, steps=icl_steps,
                         log_every=icl_log_every) for L in range(1, max_layers + 1)}
gcfg = tt.GrokConfig(p=grok_p, frac_train=grok_frac, d_model=grok_d_model, n_heads=grok_heads, d_head=grok_d_head,
                     d_mlp=grok_d_mlp, lr=grok_lr, steps=grok_steps, log_every=grok_log_every)
jobs = ([tt.ToyModelJob(cfg, seed, ("depth", (L, max_layers)), device=device) for L, cfg in cfgs.items()]
        + [tt.ToyModelJob(cfgs[min(2, max_layers)], seed + 1000 * j, ("stagger seed", (j + 1, stagger_seeds)), device=device)
           for j in range(1, stagger_seeds)]
        + [tt.ToyModelJob(gcfg, seed, ("grokking", "training"), device=device)])
trained = map_configs(tt.train_toy_model, jobs, thread_budget(), cost=tt.toy_model_cost, label="probe models")
icl = dict(zip(cfgs, trained[:max_layers], strict=True))
stagger_runs = trained[max_layers:-1]  # seeds seed + 1000 j, j = 1..stagger_seeds - 1
grok = trained[-1]
for L, run in icl.items():
    print(f"{L} layer(s): final late loss {run.late_loss[-1]:.3f}, ICL score {run.icl_score[-1]:.3f}, "
          f"{run.seconds:.1f} s")

probe = {L: lp.depth_probes(run, d_head, tt.emergence_window(run.steps, run.late_loss)) for L, run in icl.items()}
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for L, run in icl.items():
    axes[0].plot(run.steps, run.late_loss, label=f"{L} layer(s)")
    axes[1].plot(run.steps, probe[L].sd, label=f"{L} layer(s)")
for ax in axes:
    w = probe[min(2, max_layers)].window
    if np.all(np.isfinite(w)):
        ax.axvspan(*w, color="0.85", zorder=0)
    ax.set_xlabel("training step")
    ax.legend()
axes[0].set_ylabel("late-position loss")
axes[0].set_title("ICL emergence (shaded: 2-layer window)")
axes[1].set_title("Fig. 5: subspace distance (mean of OV, QK)")
save_figure(fig, "fig5_subspace_distance")

# %% [markdown]
# ## Figure 6: marginalized effective rank of OV and QK (k largest singular values removed)

# %%
fig, axes = plt.subplots(2, max_layers, figsize=(3.2 * max_layers, 6), sharex=True)
axes = np.atleast_2d(axes)
for j, (L, run) in enumerate(icl.items()):
    for row, key in enumerate(("mer_ov", "mer_qk")):
        ax = axes[row, j]
        for k in range(4):
            ax.plot(run.steps, getattr(probe[L], key)[:, k], color=f"C{k}", label=f"{k} removed")
        w = probe[L].window
        if np.all(np.isfinite(w)) and L > 1:
            ax.axvspan(*w, color="0.85", zorder=0)
        ax.set_title(f"{L} layer(s): {'OV' if row == 0 else 'QK'}")
        ax.set_xlabel("training step")
axes[0, 0].legend(fontsize=7)
save_figure(fig, "fig6_marginalized_effrank")

# %% [markdown]
# ### Staggered minima (Fig. 6: "multiple minima occurring sequentially")
# The step at which the $k$-th marginalized curve reaches its minimum, $t_k$ ($k$ = 0..3 largest
# singular values removed). Staggered learning reads as $t_0 < t_1 < t_2 < t_3$. Graded on QK (the
# caption's "esp. QK") of the 2-layer model over `stagger_seeds` independent training seeds (the
# main run is the first), which give the standard error of each increment $t_{k+1} - t_k$; the
# single runs of every depth are shown beside them.

# %%
stag = lp.staggered_minima([icl[min(2, max_layers)], *stagger_runs], d_head, probe[min(2, max_layers)])  # (seeds, 4) t_k
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, key in zip(axes, ("qk", "ov"), strict=True):
    ks = np.arange(4)
    ax.errorbar(ks, stag.t_min[key].mean(0), yerr=standard_error(stag.t_min[key]), fmt="o-", color="k",
                label=f"{min(2, max_layers)} layers, mean of {stagger_seeds} seeds")
    for L in icl:
        ax.plot(ks, probe[L].minima_steps(key), ".--", color=f"C{L - 1}", label=f"{L} layer(s), seed {seed}")
    ax.set_xlabel("k (largest singular values removed)")
    ax.set_ylabel("step of the minimum $t_k$")
    ax.set_title(f"{key.upper()}: minima of the marginalized curves")
axes[0].legend(fontsize=7)
save_figure(fig, "fig6_staggered_minima")
print("QK t_k per seed:\n", stag.t_min["qk"], "\nOV t_k per seed:\n", stag.t_min["ov"])

# %% [markdown]
# ## Grokking (Figs. 3B and 7)
# Train and test loss; effective rank and subspace distance of the per-head OV matrices
# (mean over heads, reference = final checkpoint).

# %%
gp = lp.grokking_probes(grok)  # OV effective rank and subspace distance (mean over heads), key steps
t_mem, t_gen, t_stab = gp.t_mem, gp.t_gen, gp.t_stab
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
axes[0].plot(grok.steps, grok.train_loss, label="train")
axes[0].plot(grok.steps, grok.test_loss, label="test")
axes[0].set_yscale("log")
axes[0].set_title("(A) loss")
axes[1].plot(grok.steps, gp.eff_rank)
axes[1].set_title("(B) effective rank of OV (mean over heads)")
axes[2].plot(grok.steps, gp.subspace_distance)
axes[2].set_title("(C) subspace distance of OV")
for ax in axes:
    for x, c in ((t_mem, "C2"), (t_gen, "C3")):
        if np.isfinite(x):
            ax.axvline(x, color=c, lw=0.8, ls="--")
    ax.set_xlabel("training step")
axes[0].legend()
save_figure(fig, "fig7_grokking")
print(f"memorisation step {t_mem}, generalisation step {t_gen}, OV subspace half-distance step {t_stab}, "
      f"{grok.seconds:.1f} s")

# %% [markdown]
# ## Metrics and the paper's qualitative claims

# %%
metrics = {k: v for L, run in icl.items() for k, v in lp.icl_depth_metrics(L, run, probe[L]).items()}
metrics |= gp.metrics(grok) | stag.metrics() | {"stagger_seeds": stagger_seeds, "seconds_total": time.time() - T0}
write_metrics(metrics)
for k in sorted(metrics):
    if "seconds" not in k:
        print(k, round(float(metrics[k]), 3))
