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
# `dk.experiments.nfe_vs_tolerance` measures the forward and backward NFE of each model per
# tolerance on a task. Training the models and sweeping down to 1e-7 takes far too long for a docs
# build, so this page shows the **results of record**: `analysis/results/node_trained` (NODE, HBNODE
# and GHBNODE trained on the digits task, then swept from 1e-3 to 1e-7, over seeds; its `COMMAND`
# file says how it was made). Set `DYNKIT_NOTEBOOK_RUN=1` to measure afresh instead, on untrained
# models (small with `DYNKIT_NOTEBOOK_SMALL=1`: two tolerances, one batch — there every value sits
# at the solver's floor of 20 evaluations, which says nothing about the models).

# %% tags=["hide-input"]
import json
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

import dynkit as dk

torch.set_num_threads(1)
RECORD = Path(dk.__file__).resolve().parents[2] / "analysis" / "results" / "node_trained"


def per_model_per_tolerance(record: dict) -> dict:
    """node_trained's metrics (``<model>.forward_nfe@<tol>``, per-seed values) as model -> tol ->
    mean, std."""
    out: dict = {}
    for name, metric in record["metrics"].items():
        model, _, rest = name.partition(".")
        key, sep, tol = rest.partition("@")
        if sep and key in ("forward_nfe", "backward_nfe"):
            values = np.asarray(metric["values"], dtype=float)
            out.setdefault(model, {}).setdefault(tol, {})[key] = {
                "mean": float(values.mean()),
                "std": float(values.std(ddof=1)),
            }
    return out


if os.environ.get("DYNKIT_NOTEBOOK_RUN") == "1" or not (RECORD / "results.json").exists():
    small = os.environ.get("DYNKIT_NOTEBOOK_SMALL") == "1"
    MODELS = ("node", "anode", "sonode", "hbnode", "ghbnode")
    results = dk.experiments.nfe_vs_tolerance(
        models=MODELS,
        task="digits",
        tolerances=(1e-3, 1e-4) if small else (1e-3, 1e-4, 1e-5, 1e-6),
        n_batches=1 if small else 4,
        seed=0,
        out=Path(tempfile.mkdtemp(prefix="nfe_vs_tol_")),
        quiet=True,
    )
    models = {m: results[m] for m in MODELS}
    of_record = False
    provenance = ["measured now (untrained models)"]
else:
    record = json.loads((RECORD / "results.json").read_text())
    models = per_model_per_tolerance(record)
    MODELS = tuple(m for m in record["config"]["models"] if m in models)
    models = {m: models[m] for m in MODELS}
    of_record = True
    provenance = [
        f"results of record: {RECORD.relative_to(RECORD.parents[2])}, seeds {record['seeds']}",
        f"config: "
        f"{ ({k: v for k, v in record['config'].items() if k not in ('models', 'model')}) }",
    ]
tolerances = sorted(next(iter(models.values())), key=float, reverse=True)  # loose -> tight

# %% tags=["hide-input"]
styles = dict(
    zip(
        ("node", "anode", "sonode", "hbnode", "ghbnode"),
        [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-")],
    )
)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, key in zip(axes, ("forward_nfe", "backward_nfe")):
    for model, per_tol in models.items():
        marker, line = styles[model]
        ax.errorbar(
            [float(t) for t in tolerances],
            [per_tol[t][key]["mean"] for t in tolerances],
            yerr=[per_tol[t][key]["std"] for t in tolerances],
            marker=marker,
            linestyle=line,
            markerfacecolor="none",
            capsize=3,
            label=model.upper(),
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("tolerance (rtol = atol)")
    ax.set_title(key.replace("_", " ").replace("nfe", "NFE"))
    ax.grid(alpha=0.3, which="both")
axes[0].set_ylabel("NFE per batch (mean ± std)")
axes[1].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# Forward and backward NFE per tolerance, loose to tight from left to right (as in the report). Each
# model has its own marker and line style, so curves that coincide stay visible. Below: where the
# numbers come from, and the mean ± std per model and tolerance behind the figure.

# %%
print(*provenance, sep="\n")
print(f"{'model':8s} {'tol':>7s} {'forward NFE':>14s} {'backward NFE':>16s}")
for model, per_tol in models.items():
    for tol in tolerances:
        fw, bw = per_tol[tol]["forward_nfe"], per_tol[tol]["backward_nfe"]
        print(
            f"{model:8s} {tol:>7s} {fw['mean']:8.1f} ± {fw['std']:<4.1f} {bw['mean']:9.1f} ± "
            f"{bw['std']:<5.1f}"
        )

# %% [markdown]
# Checks: every model and tolerance is there, every NFE is positive, an adaptive solver never needs
# fewer forward evaluations at the tightest tolerance than at the loosest, and (results of record
# only) the tightest tolerance is off the solver's floor for every model.

# %%
for model, per_tol in models.items():
    means = [per_tol[t]["forward_nfe"]["mean"] for t in tolerances]
    assert all(m > 0 for m in means) and means[-1] >= means[0], (model, means)
if of_record:
    assert len(tolerances) >= 4
    assert all(
        models[m][tolerances[-1]]["forward_nfe"]["mean"]
        > models[m][tolerances[0]]["forward_nfe"]["mean"]
        for m in MODELS
    )
