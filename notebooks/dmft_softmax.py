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
# # Softmax attention with and without MLP blocks (Bordelon et al., Figures 6c and 9)
# This notebook reruns the experiments of Bordelon et al. §5.3 and App. G.3: untied softmax attention
# (Fig. 6c) and softmax attention alternating with GELU MLP blocks (Fig. 9), each residual branch
# scaled by $1/L$ (CompleteP) and trained with Adam at a depth-independent learning rate, on
# isotropic in-context regression. The paper's claim is qualitative: deeper models reach a lower
# loss. There is no theory for these models; as a yardstick the dashed lines show the loss of the
# best $L$-step in-context gradient descent (the optimum of the reduced linear model at the same
# finite $D$ and $P$).

# %% tags=["parameters", "hide-input"]
D = 8               # input dimension; range: [1, 200]
alpha = 2.0         # context length P as a multiple of D; range: (0, inf)
K_frac = 1.0        # queries per context K as a multiple of D; range: (0, inf)
n = 32              # residual-stream width; range: [1, 1000]
B = 64              # contexts per Adam step; range: [1, 2000]
lr = 2e-3           # Adam learning rate (the same at every depth); range: (0, inf)
steps = 400         # Adam steps; range: [1, 20000]
eval_contexts = 2000  # held-out contexts for the final loss (a standard error needs two draws); range: [2, 50000]
seed = 0            # random seed; range: [0, 4294967295]
deep_threads = 1  # threads of each training of 8 layers or more (at most the budget; on Dask, workers must declare the resource 'threads'); range: [1, 64]
device = "cpu"  # torch device of the trainings ("cpu", "cuda", "cuda:N", "mps"; batches are drawn on the CPU, then moved); domain: device

# %% tags=["presets", "remove-cell"]
PRESETS = {"paper": {"D": 16, "n": 64, "steps": 2000, "B": 128, "eval_contexts": 4000}}

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import numpy as np

from iclcore.dmft.width_mc import width_landscape_mc
from iclcore.models.attention import SoftmaxRun, softmax_run
from iclcore.models.probes import block_average
from iclcore.parallel import map_configs, thread_budget
from iclcore.plotting import PALETTE, save_figure, use_style, write_metrics
from iclcore.stats import standard_error

use_style()
t_start = time.time()
P, K = int(round(alpha * D)), max(1, int(round(K_frac * D)))
depths = [1, 2, 4, 8]


# optimal L-step in-context GD at the same finite D and P (reduced linear model, Monte Carlo)
gd_opt = {}
for L in depths:
    grid = np.linspace(0.0, 2.0 * L / (1 + 1 / np.sqrt(alpha)) ** 2, 400)
    ls, _ = width_landscape_mc(grid, np.ones(D), np.ones(D), N=D, L=L, rng=np.random.default_rng(seed + L), P=P, n_draws=300)
    gd_opt[L] = float(ls.min())

# %%
# the 8 models are independent tasks (local processes, or the Dask cluster of `icl-book run --scheduler`)
keys = [(mlp, L) for mlp in (False, True) for L in depths]
runs = [SoftmaxRun(D, P, K, n, L, mlp, B, lr, steps, eval_contexts, seed, (i + 1, len(keys)), device=device) for i, (mlp, L) in enumerate(keys)]
trained = map_configs(
    softmax_run,
    runs,
    thread_budget(),
    cost=lambda r: r.L * (3 if r.mlp else 1),
    label="softmax models",
    threads=lambda r: deep_threads if r.L >= 8 else 1,
)
results = {}
for key, (loss, per_context) in zip(keys, trained):
    # final loss and its Monte Carlo SE over held-out contexts
    results[key] = (loss, float(per_context.mean()), float(standard_error(per_context)))

# %%
figs = {}
for mlp, stem, title in ((False, "fig6c_softmax", "(6c) softmax attention"),
                         (True, "fig9_softmax_mlp", "(9) softmax attention + MLP blocks")):
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    for i, L in enumerate(depths):
        res, final, _ = results[(mlp, L)]
        ax.plot(block_average(np.arange(steps), 20), block_average(res, 20), color=PALETTE[i], label=f"L={L}: held-out {final:.3f}")
        ax.axhline(gd_opt[L], color=PALETTE[i], ls="--", lw=1)
    ax.set(xlabel="Adam step", ylabel="loss", yscale="log", title=f"{title}, D={D}, α={alpha}")
    ax.legend(fontsize=7, title="dashed: best L-step in-context GD", title_fontsize=7)
    save_figure(fig, stem)

# %% tags=["nbval-check-output"]
for mlp in (False, True):
    print("MLP" if mlp else "attention only", [round(results[(mlp, L)][1], 2) for L in depths])

# %%
fin = {(m, L): results[(m, L)][1] for m in (False, True) for L in depths}
fin_se = {(m, L): results[(m, L)][2] for m in (False, True) for L in depths}
write_metrics({
    **{f"softmax_final_L{L}": fin[(False, L)] for L in depths},
    **{f"softmax_mlp_final_L{L}": fin[(True, L)] for L in depths},
    **{f"gd_optimum_L{L}": gd_opt[L] for L in depths},
    **{f"softmax_final_se_L{L}": fin_se[(False, L)] for L in depths},
    **{f"softmax_mlp_final_se_L{L}": fin_se[(True, L)] for L in depths},
    "runtime_s": time.time() - t_start,
})
