"""Blow-up control (Fig. 7 of the review): log ||h(t)|| of the five models on a driven Duffing
oscillator.

As in the review's Silverbox setting: the right-hand side is one dense layer of ``[h, V1(t)]``;
ANODE is augmented by one zero dimension, SONODE/HBNODE/GHBNODE get their initial velocity/momentum
from a dense layer of ``h(0)``; gamma = sigmoid(-3) for (G)HBNODE, and GHBNODE has sigma = hardtanh
on [-5, 5] and xi = ln 2. Each model is integrated over a long horizon from many random
initialisations (untrained), driven by the input voltage V1 of the measured Silverbox
(``--source measured``, the default: its first 1,000 samples, centred and times 100, linear between
samples, time in samples, from ``h(0) = V2(0)``, as the authors' ``silverbox_init.py``;
:func:`dynkit.tasks.silverbox.silverbox_measured_drive`) or of the simulated one
(``--source simulated``, the stand-in of the results recorded before the option, whose config has no
``source``: :func:`dynkit.tasks.silverbox.silverbox`, from ``h(0) = y(0) + 0.1``), and
``log10 ||h(t)||`` is recorded.

    python -m dynkit.experiments.node.node_blowup --out analysis/results/node_blowup
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

import dynkit as dk
from dynkit.io import save_figure, write_json
from dynkit.models import ANODE, GHBNODE, HBNODE, NODE, SONODE
from dynkit.tasks.silverbox import silverbox, silverbox_measured_drive

from ..scripting import COLORS, add_solver_option, parser, pyplot, register_script, setup

BLOW_UP = 1e8  # ||h|| beyond this counts as blown up


class DrivenDense(nn.Module):
    """``f(t, h) = W [h, V1(t)] + b``: one dense layer with the input voltage as an extra input."""

    def __init__(self, in_dim: int, out_dim: int, drive):
        super().__init__()
        self.dense, self.drive = nn.Linear(in_dim + 1, out_dim), drive

    def forward(self, t, h):
        v1 = torch.full((h.shape[0], 1), float(self.drive(float(t))), dtype=h.dtype)
        return self.dense(torch.cat([h, v1], dim=1))


def build(name: str, drive) -> nn.Module:
    hardtanh = lambda m: torch.clamp(m, -5.0, 5.0)  # noqa: E731 - hardtanh with bounds [-5, 5]
    momentum = nn.Linear(1, 1)  # dense initial velocity/momentum from h(0)
    if name == "node":
        return NODE(DrivenDense(1, 1, drive))
    if name == "anode":
        return ANODE(DrivenDense(2, 2, drive), augment_dim=1)
    if name == "sonode":
        return SONODE(DrivenDense(2, 1, drive), initial=momentum)
    if name == "hbnode":
        return HBNODE(DrivenDense(1, 1, drive), initial=momentum, omega=-3.0, learn_gamma=False)
    return GHBNODE(
        DrivenDense(1, 1, drive),
        initial=momentum,
        omega=-3.0,
        learn_gamma=False,
        chi=0.0,
        learn_xi=False,
        activation=hardtanh,
    )


def trajectory_norms(
    model,
    y0: float,
    t: np.ndarray,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    solver: str = "dynkit",
) -> np.ndarray:
    """``||h(t)||`` on ``t`` (NaN after a solver failure), solved by dopri5 at ``rtol``,
    ``atol`` with ``solver``: ``"dynkit"`` (:func:`dynkit.solve`, at most 50,000 steps) or
    ``"torchdiffeq"`` (``torchdiffeq.odeint``, the authors' ``NODEintegrate``; a failure there is
    its step-size underflow)."""
    x = torch.tensor([[y0]], dtype=torch.float64)
    norms = np.full(len(t), np.nan)
    with torch.no_grad():
        z0 = model.initial_state(x)
        if solver == "torchdiffeq":
            import torchdiffeq

            times = torch.as_tensor(t, dtype=torch.float64)
            try:
                ys = torchdiffeq.odeint(
                    model.dynamics, z0, times, rtol=rtol, atol=atol, method="dopri5"
                )
            except AssertionError:  # torchdiffeq's "underflow in dt": the solve failed
                return norms
        else:
            sol = dk.solve(
                model.dynamics, z0, t, rtol=rtol, atol=atol, max_steps=50_000, throw=False
            )
            ys = sol.ys
    width = 1 + model.augment_dim
    ys = ys[:, 0, :width]
    norms[: len(ys)] = torch.linalg.vector_norm(ys, dim=-1).cpu().numpy()
    return norms


def build_parser():
    p = parser(__doc__.splitlines()[0], "results/node_blowup")
    p.add_argument(
        "--inits",
        type=int,
        default=None,
        help="random initialisations per model (20; 100 with --full)",
    )
    p.add_argument("--t-end", type=float, default=None, help="horizon (100; 400 with --full)")
    p.add_argument(
        "--source",
        choices=("measured", "simulated"),
        default="measured",
        help="the drive: the measured Silverbox's V1 (default; folder: $DYNKIT_TIME_SERIES_DIR) "
        "or the "
        "simulated stand-in",
    )
    p.add_argument(
        "--rtol", type=float, default=1e-6, help="relative tolerance of the solves (default 1e-6)"
    )
    p.add_argument(
        "--atol", type=float, default=1e-8, help="absolute tolerance of the solves (default 1e-8)"
    )
    add_solver_option(p)
    return p


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.node.recipe`)."""
    args = build_parser().parse_args(argv)
    return {
        "models": tuple(args.models),
        "inits": args.inits or (100 if args.full else 20),
        "t_end": args.t_end or (400.0 if args.full else 100.0),
        "source": args.source,
        "rtol": args.rtol,
        "atol": args.atol,
        "solver": args.solver,
    }


def drive_of(source: str, t_end: float, seed: int):
    """``(t, y0, drive, data)``: the output times on ``[0, t_end]``, ``h(0)``, the input voltage
    ``V1(t)`` and what the data are (``source``: ``"measured"`` or ``"simulated"``, drawn from
    ``seed``); a ``ValueError`` for a horizon beyond the measured drive."""
    if source == "measured":
        samples, _, v2, drive = silverbox_measured_drive()
        if not 0 < t_end <= samples[-1]:
            raise ValueError(
                f"--t-end must lie in (0, {samples[-1]:g}] (the measured drive's training "
                f"samples), got "
                f"{t_end:g}"
            )
        return (
            np.linspace(0.0, t_end, 201),
            float(v2[0]),
            drive,
            (
                "the measured Silverbox's V1 (silverbox.csv, first 1,000 samples, centred "
                "x100, linear between samples; "
                "the authors' silverbox_init.py), h(0) = V2(0)"
            ),
        )
    t, _, y, drive = silverbox(t_end=t_end, n_points=201, seed=seed)
    return (
        t,
        float(y[0]) + 0.1,
        drive,
        "simulated Duffing oscillator standing in for the measured Silverbox",
    )


def main(argv=None) -> dict:
    p = build_parser()
    args = p.parse_args(argv)
    settings = options(argv)
    try:
        drive_of(settings["source"], settings["t_end"], args.seed)  # refused before any work
    except ValueError as error:
        p.error(str(error))
    command = setup(args)
    t, results, data = run(args.seed, args.quiet, **settings)
    summary = {
        n: {
            k: v
            for k, v in r.items()
            if k not in ("log10_norm", "log10_norm_percentiles", "final_log10_norm")
        }
        for n, r in results.items()
    }
    stored = {
        n: {k: v for k, v in r.items() if k != "log10_norm"} for n, r in results.items()
    }  # keep JSON small
    write_json(
        args.out / "node_blowup.json",
        {"summary": summary, "t": t, "models": stored},
        config={
            "inits": settings["inits"],
            "t_end": settings["t_end"],
            "seed": args.seed,
            "blow_up_threshold": BLOW_UP,
            "gamma": 1 / (1 + math.exp(3)),
            "xi": math.log(2),
            "sigma": "hardtanh[-5,5]",
            "source": settings["source"],
            "data": data,
        },
        command=command,
    )
    plot(t, results, args.out / "node_blowup.png")
    return results


def run(
    seed: int,
    quiet: bool,
    *,
    models: tuple[str, ...],
    inits: int,
    t_end: float,
    source: str,
    rtol: float,
    atol: float,
    solver: str = "dynkit",
) -> tuple[np.ndarray, dict, str]:
    """``(t, results, data)``: each model integrated from ``inits`` random initialisations (init
    ``i`` of seed ``s`` from torch seed ``100,003 s + i``) on the drive of ``source``
    (:func:`drive_of`), with ``log10 ||h(t)||`` and the authors' statistic, ``log10`` of the mean
    norm over the inits (``np.log10(np.mean(odesizelist, axis=0))`` in their
    ``silverbox_init.py``)."""
    t, y0, drive, data = drive_of(source, t_end, seed)
    results = {}
    for name in models:
        curves = []
        for i in range(inits):
            torch.manual_seed(seed * 100_003 + i)
            model = build(name, drive).double()
            curves.append(trajectory_norms(model, y0, t, rtol, atol, solver))
        curves = np.array(curves)
        final = np.where(np.isnan(curves[:, -1]), np.inf, curves[:, -1])
        with np.errstate(divide="ignore"):
            log_final = np.log10(final)
        log_curves = np.log10(curves)
        results[name] = {
            "log10_norm": log_curves,
            "log10_norm_percentiles": {
                q: np.round(np.nanpercentile(log_curves, q, axis=0), 3).tolist()
                for q in (5, 25, 50, 75, 95)
            },
            "final_log10_norm": np.round(log_final, 3).tolist(),
            # the authors' curve (silverbox_init.py: log10 of the mean over the inits; NaN from a
            # failed init on)
            "log10_mean_norm": np.round(np.log10(np.mean(curves, axis=0)), 3).tolist(),
            "median_final_log10_norm": float(np.median(log_final)),
            "max_final_log10_norm": float(np.max(log_final)),
            "blow_up_fraction": float(np.mean(final > BLOW_UP)),
            "growth_fraction": float(np.mean(final > 10.0)),
        }
        if not quiet:
            r = results[name]
            print(
                f"{name:8s} median log10||h(T)|| {r['median_final_log10_norm']:7.2f}  max "
                f"{r['max_final_log10_norm']:7.2f}"
                f"  ||h(T)||>1e8: {r['blow_up_fraction']:.2f}  >10: {r['growth_fraction']:.2f}"
            )
    return t, results, data


def plot(t, results: dict, path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(3.4 * len(results), 3.2), sharey=True)
    for ax, (name, r) in zip(np.atleast_1d(axes), results.items()):
        for curve in r["log10_norm"]:
            ax.plot(t, curve, color=COLORS[name], alpha=0.35, lw=0.8)
        ax.set_title(name.upper())
        ax.set_xlabel("t")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("log10 ||h(t)||")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _metrics(results: dict) -> dict:
    return {
        f"{n}.{k}": r[k]
        for n, r in results.items()
        for k in ("median_final_log10_norm", "blow_up_fraction", "growth_fraction")
    }


def data_label(config) -> str:
    """What the drive of a run was, from the config its results record (the scale's arguments): a
    record without ``--source`` predates the measured drive and ran on the simulated stand-in."""
    args = list(config.get("args", ()))
    source = args[args.index("--source") + 1] if "--source" in args[:-1] else "simulated"
    if source == "measured":
        return (
            "the measured Silverbox's input voltage V1 drives the models (the review authors' "
            "setting)"
        )
    return (
        "a simulated Duffing oscillator's input drives the models (a stand-in for the measured "
        "Silverbox)"
    )


# each scale names its source, so that its record says which drive it ran on
register_script(
    "node_blowup",
    main,
    metrics=_metrics,
    smoke=("--inits", "2", "--t-end", "5", "--models", "hbnode", "ghbnode", "--source", "measured"),
    # the authors' run (silverbox_init.py): 10 inits, 63 samples, torchdiffeq's dopri5 at 1e-7
    cpu=(
        "--inits",
        "10",
        "--source",
        "measured",
        "--t-end",
        "63",
        "--rtol",
        "1e-7",
        "--atol",
        "1e-7",
        "--solver",
        "torchdiffeq",
    ),
    full=("--full", "--source", "measured"),
    options=options,
)


if __name__ == "__main__":
    main()
