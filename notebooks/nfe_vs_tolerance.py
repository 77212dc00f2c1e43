# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # NFE vs tolerance for the five ODE models
#
# Sect. 3.4 of the review reports that HBNODE and GHBNODE need fewer function evaluations than NODE,
# ANODE and SONODE, forward and backward, and that the gap widens as the solver tolerance tightens.
# `dk.experiments.nfe_vs_tolerance` measures the forward and backward NFE of each model per tolerance
# on a task; here on the offline digits task, at a small size (`DYNKIT_NOTEBOOK_SMALL=1`: two
# tolerances, one batch) or a larger one.

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

import dynkit as dk

torch.set_num_threads(1)
SMALL = os.environ.get("DYNKIT_NOTEBOOK_SMALL") == "1"
MODELS = ("node", "anode", "sonode", "hbnode", "ghbnode")
TOLERANCES = (1e-3, 1e-4) if SMALL else (1e-3, 1e-4, 1e-5, 1e-6)

# %%
out = Path(tempfile.mkdtemp(prefix="nfe_vs_tol_"))
results = dk.experiments.nfe_vs_tolerance(models=MODELS, task="digits", tolerances=TOLERANCES,
                                          n_batches=1 if SMALL else 4, seed=0, out=out, quiet=True)
print(f"{'model':8s} {'tol':>7s} {'forward NFE':>14s} {'backward NFE':>14s}")
for model, per_tol in results.items():
    for tol, r in per_tol.items():
        fw, bw = r["forward_nfe"], r["backward_nfe"]
        print(f"{model:8s} {tol:>7s} {fw['mean']:8.1f} ± {fw['std']:<4.1f} {bw['mean']:8.1f} ± {bw['std']:<4.1f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, key in zip(axes, ("forward_nfe", "backward_nfe")):
    for model, per_tol in results.items():
        tols = [float(t) for t in per_tol]
        ax.semilogx(tols, [per_tol[t][key]["mean"] for t in per_tol], "o-", label=model)
    ax.invert_xaxis()
    ax.set_xlabel("tolerance")
    ax.set_title(key.replace("_", " "))
    ax.grid(alpha=0.3)
axes[0].set_ylabel("NFE (mean over batches)")
axes[1].legend()
plt.show()

# dynkit's own figure of the same results:
dk.experiments.plot_nfe_vs_tolerance(results, out / "nfe_vs_tolerance.png")

# %% [markdown]
# Checks: every model and tolerance is measured, every NFE is positive, and an adaptive solver never
# needs fewer forward evaluations at the tightest tolerance than at the loosest.

# %%
assert set(results) == set(MODELS)
for model, per_tol in results.items():
    assert len(per_tol) == len(TOLERANCES)
    means = [per_tol[t]["forward_nfe"]["mean"] for t in sorted(per_tol, key=float, reverse=True)]
    assert all(m > 0 for m in means) and means[-1] >= means[0], (model, means)
assert (out / "nfe_vs_tolerance.png").exists()
