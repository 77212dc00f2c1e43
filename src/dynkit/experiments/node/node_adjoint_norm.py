"""Adjoint norm over a long horizon (Fig. 8 of the review): ODE-RNN vs (G)HBNODE-RNN.

An ODE-RNN hybrid [Rubanova et al.] (:class:`dynkit.models.ode_rnn.ODERNN`) reads an irregularly
sampled sequence: between observations the hidden state evolves by the model's ODE (RK4, one step
per gap), at each observation an RNN cell maps ``[z, x_k]`` to the new state (``m`` of (G)HBNODE
included). The task is
one-step-ahead forecasting of a simulated driven Duffing oscillator (Silverbox-like, 10% of the
samples removed at random). After a short training, ``||dL/dz_t||`` is measured for a loss on the
last output only, ``z = h`` (ODE-RNN) or ``z = [h, m]`` ((G)HBNODE-RNN), and plotted against T - t.

Did the models learn? Each shard records every model's one-step-ahead MSE after training on the
windows it trained on (``<model>.train_mse``) and on the held-out window whose adjoint is measured
(``<model>.test_mse``), and beside them the trivial predictors' on the same stamps
(:func:`trivial_forecasts`): persistence (the next output is the last observed one) and the training
targets' mean, and the better of the two (``baseline.best.<metric>``). The ledger holds every model
of a row to that bar.

    python -m dynkit.experiments.node.node_adjoint_norm --out analysis/results/node_adjoint_norm
"""

from __future__ import annotations

import numpy as np
import torch

from dynkit.io import save_figure, write_json
from dynkit.models.ode_rnn import ODERNN, adjoint_norms
from dynkit.tasks.silverbox import silverbox
from dynkit.tasks.time_series import shrink_parameters

from ..scripting import COLORS, parser, pyplot, register_script, setup

HYBRIDS = ("node", "hbnode", "ghbnode")


CELLS = ("residual", "overwrite")
"""The observation update: ``"residual"``, the authors' ``z + cell([z, x])`` (their Walker2D hybrids of Fig. 8, with
HBNODE-RNN's restoring term, the 0.01 parameter shrink and gradient clipping at 1.0); ``"overwrite"``, the tanh cell
of dynkit 0.1 that replaces the state at every observation (kept as an option: it cuts the adjoint of every model at
each observation, whatever its ODE)."""  # noqa: E501


def hybrid(
    name: str, hidden: int = 16, width: int = 32, n_inputs: int = 2, cell: str = "residual"
) -> ODERNN:
    """An ODE-RNN hybrid with a tanh 3-layer field and one RK4 step per gap; ``cell`` from
    :data:`CELLS`."""
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
    residual = cell == "residual"
    options = {"restoring": "learnable"} if residual and name == "hbnode" else {}
    return ODERNN(
        name,
        n_inputs,
        1,
        hidden,
        field_width=width,
        activation=torch.tanh,
        residual=residual,
        method="rk4",
        step_size=1.0,
        **options,
    )


def make_data(length: int, n_sequences: int, seed: int):
    """Windows of a long simulated Silverbox run, 10% of the samples dropped (irregular times)."""
    n_points = (
        int(length * 1.2) * n_sequences + 1
    )  # 10% are dropped: 1.2 leaves room for n_sequences windows
    t, u, y, _ = silverbox(t_end=0.15 * n_points, n_points=n_points, seed=seed)
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.permutation(len(t))[: int(0.9 * len(t))])
    t, u, y = t[keep], u[keep], y[keep] / np.std(y)
    starts = np.arange(n_sequences) * length
    idx = starts[:, None] + np.arange(length + 1)[None]
    times = torch.tensor(t[idx] - t[idx][:, :1])  # each window starts at 0
    x = torch.tensor(np.stack([u[idx], y[idx]], -1))
    return times, x


def gaps(t: torch.Tensor) -> torch.Tensor:
    """The gaps before each observation of the time grids ``t`` (batch, length); 0 before the
    first."""
    return torch.diff(t, dim=1, prepend=t[:, :1])


N_SEQUENCES = 8
"""Windows of the simulated run: the first ``N_SEQUENCES - 1`` train, the last is held out (its adjoint is measured)."""  # noqa: E501
TRAIN_WINDOWS = slice(0, N_SEQUENCES - 1)
HELD_OUT = N_SEQUENCES - 1


def one_step_mse(model: torch.nn.Module, times: torch.Tensor, x: torch.Tensor) -> float:
    """The model's one-step-ahead MSE over windows ``x`` (batch, length + 1, 2): each output
    after observation ``k`` against the output channel at ``k + 1`` (the loss it trains on, over
    every stamp of the windows)."""
    with torch.no_grad():
        pred, _, _ = model(x[:, :-1], gaps(times[:, :-1]))
    return float((pred[..., 0] - x[:, 1:, 1]).pow(2).mean())


def trivial_forecasts(x: torch.Tensor, split: str) -> dict:
    """The trivial predictors' one-step-ahead MSE on the stamps :func:`one_step_mse` scores
    (``split``: ``"train"``, the training windows, or ``"test"``, the held-out one):
    ``baseline.persistence.<split>_mse`` (the next output is the last observed one),
    ``baseline.mean.<split>_mse`` (every output is the training targets' mean) and
    ``baseline.best.<split>_mse``, the better of the two."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    y = x[..., 1].double()
    windows = y[TRAIN_WINDOWS] if split == "train" else y[HELD_OUT : HELD_OUT + 1]
    truth, last = windows[:, 1:], windows[:, :-1]
    mean = y[TRAIN_WINDOWS, 1:].mean()
    values = {
        "persistence": float((last - truth).pow(2).mean()),
        "mean": float((mean - truth).pow(2).mean()),
    }
    values["best"] = min(values.values())
    return {f"baseline.{k}.{split}_mse": v for k, v in values.items()}


def build_parser():
    p = parser(__doc__.splitlines()[0], "results/node_adjoint_norm")
    p.set_defaults(models=list(HYBRIDS))
    p.add_argument(
        "--length", type=int, default=None, help="sequence length (200; 1000 with --full)"
    )
    p.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="training iterations (300 at every scale: after 30 no model beat persistence)",
    )
    p.add_argument(
        "--cell",
        choices=CELLS,
        default="residual",
        help="observation update (default: the authors')",
    )
    p.add_argument(
        "--shrink",
        type=float,
        default=None,
        help="every parameter times this before training (default 0.01 with the residual cell, as "
        "the "
        "authors' plane-vibration script; 1, none, with the overwrite cell)",
    )
    return p


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.node.recipe`): the command line's, the hybrids' sizes, and the
    safeguards of the residual cell (shrink 0.01, clipping at 1.0)."""
    args = build_parser().parse_args(argv)
    residual = args.cell == "residual"
    return {
        "models": tuple(args.models),
        "length": args.length or (1000 if args.full else 200),
        "iterations": args.iterations or 300,
        "cell": args.cell,
        "hidden": 16,
        "width": 32,
        "lr": 3e-3,
        "batch_windows": 4,
        "shrink": args.shrink if args.shrink is not None else (0.01 if residual else 1.0),
        "clip_norm": 1.0 if residual else None,
    }


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    command = setup(args)
    settings = options(argv)
    out = run(args.seed, args.quiet, **settings)
    results = out["models"]
    summary = {n: {k: r[k] for k in SUMMARY} for n, r in results.items()}
    write_json(
        args.out / "node_adjoint_norm.json",
        {"summary": summary, "baseline": out["baseline"], "models": results},
        config={
            "length": settings["length"],
            "iterations": settings["iterations"],
            "seed": args.seed,
            "hidden": settings["hidden"],
            "width": settings["width"],
            "cell": settings["cell"],
            "method": "rk4, one step per gap",
            "data": "simulated Silverbox, 10% samples dropped",
        },
        command=command,
    )
    plot(results, args.out / "node_adjoint_norm.png")
    return out


def run(
    seed: int,
    quiet: bool,
    *,
    models: tuple[str, ...],
    length: int,
    iterations: int,
    cell: str,
    hidden: int,
    width: int,
    lr: float,
    batch_windows: int,
    shrink: float,
    clip_norm: float | None,
) -> dict:
    """Train each hybrid on the training windows (Adam, ``batch_windows`` consecutive windows a
    step), then measure its one-step MSE and ``||dL/dz_t||`` on the held-out window:
    ``{"models": {...}, "baseline": {...}}``."""
    if not 1 <= batch_windows < N_SEQUENCES:
        raise ValueError(
            f"batch_windows must lie in [1, {N_SEQUENCES - 1}] (the training windows), got "
            f"{batch_windows}"
        )
    times, x = make_data(length, N_SEQUENCES, seed)
    baseline = {**trivial_forecasts(x, "train"), **trivial_forecasts(x, "test")}
    results = {}
    for name in models:
        if name not in HYBRIDS:
            raise ValueError(f"models must be among {HYBRIDS} for this experiment, got {name!r}")
        torch.manual_seed(seed)
        model = hybrid(name, hidden=hidden, width=width, cell=cell).double()
        if (
            shrink != 1.0
        ):  # the authors' safeguards of the residual cell (their misc.py, plane-vibration script)
            shrink_parameters(model, shrink)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        losses = []
        for it in range(iterations):
            # consecutive training windows (the last window is held out), each with its own times
            i = it % (
                N_SEQUENCES - batch_windows
            )  # windows i .. i + batch_windows - 1, all among the first
            b = slice(i, i + batch_windows)  # N_SEQUENCES - 1
            pred, _, _ = model(x[b, :-1], gaps(times[b, :-1]))
            loss = (pred[..., 0] - x[b, 1:, 1]).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            if clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
            opt.step()
            losses.append(float(loss.detach()))
        # what the model learned, on the stamps the trivial predictors are scored on
        train_mse = one_step_mse(model, times[TRAIN_WINDOWS], x[TRAIN_WINDOWS])
        test_mse = one_step_mse(model, times[HELD_OUT : HELD_OUT + 1], x[HELD_OUT : HELD_OUT + 1])
        j = HELD_OUT
        pred, states, _ = model(x[j : j + 1, :-1], gaps(times[j : j + 1, :-1]), keep_states=True)
        final_loss = (pred[:, -1, 0] - x[j : j + 1, -1, 1]).pow(2).sum()
        final_loss.backward()
        norms = adjoint_norms(states)
        t_seq = times[j, :-1].cpu().numpy()
        results[name] = {
            "train_loss": losses,
            "train_mse": train_mse,
            "test_mse": test_mse,
            "T_minus_t": (t_seq[-1] - t_seq).tolist(),
            "adjoint_norm": norms,
            "norm_at_T": norms[-1],
            "norm_at_start": norms[0],
            "decay_orders_of_magnitude": float(np.log10(norms[-1] / max(norms[0], 1e-300))),
        }
        if not quiet:
            print(
                f"{name:8s} loss {losses[0]:.3f} -> {losses[-1]:.3f}; one-step MSE train "
                f"{train_mse:.4g} "
                f"(best trivial {baseline['baseline.best.train_mse']:.4g}), held out "
                f"{test_mse:.4g} (best trivial "
                f"{baseline['baseline.best.test_mse']:.4g}); ||dL/dz|| at T {norms[-1]:.3e}, "
                f"at T-{t_seq[-1]:.0f} {norms[0]:.3e}",
                flush=True,
            )
    return {"models": results, "baseline": baseline}


def plot(results: dict, path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, r in results.items():
        label = "ODE-RNN" if name == "node" else f"{name.upper()}-RNN"
        ax.semilogy(r["T_minus_t"], r["adjoint_norm"], color=COLORS[name], label=label)
    ax.set_xlabel("T - t")
    ax.set_ylabel("||dL/dh_t||  (||[dL/dh_t, dL/dm_t]||)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


SUMMARY = ("norm_at_T", "norm_at_start", "decay_orders_of_magnitude", "train_mse", "test_mse")
"""What a shard records per model (``<model>.<key>``), beside the trivial predictors' ``baseline.*``."""  # noqa: E501


def _metrics(result: dict) -> dict:
    return {
        **{f"{n}.{k}": r[k] for n, r in result["models"].items() for k in SUMMARY},
        **result["baseline"],
    }


register_script(
    "node_adjoint_norm",
    main,
    metrics=_metrics,
    smoke=("--length", "24", "--iterations", "2"),
    cpu=(),
    full=("--full",),
    options=options,
)


if __name__ == "__main__":
    main()
