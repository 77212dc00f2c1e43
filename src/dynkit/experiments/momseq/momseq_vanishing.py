"""Vanishing gradients, RNN vs MomentumRNN and LSTM vs MomentumLSTM (MomentumRNN Fig. 2, Sect. 2.3;
review Eqs. (13)-(15)), on tasks that run offline on CPU: pixel-by-pixel 8x8 digits (plain and
permuted, T = 64) and the adding task.

For each task and model (same seed, same data order, same number of epochs) we record after every
epoch ``||dL/dh_t||_2`` for every step t on a fixed evaluation batch (L the mean loss of that batch;
the norm over batch and hidden units), the training loss, and the test accuracy (digits) or test MSE
(adding). The figure shows ``log10 ||dL/dh_t||`` over (epoch, t) for each model, as in Fig. 2, and
the test metric per epoch.

    python -m dynkit.experiments.momseq.momseq_vanishing [--out DIR] [--seed S] [--quiet] [--full]
    [--tasks T,...]
        [--models M,...]
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from ..scripting import register_script, command_line, experiment_config, experiment_parser
from dynkit.io import save_figure, write_json
from dynkit.models.momentum_rnn import SequenceClassifier
from dynkit.tasks.sequences import adding_task, digit_sequences
from dynkit.tasks.training import fit

CELL = dict(mu=0.6, s=0.6, beta=0.9, restart_every=16)
"""The momentum cells' settings: momentum mu, step s, the Adam/RMSProp cells' beta, SRLSTM's restart period."""  # noqa: E501


def model_settings(mu: float, s: float, beta: float, restart_every: int) -> dict:
    """Every cell the script trains, as :class:`SequenceClassifier` keywords (the last three only
    with --full)."""
    return {
        "RNN": dict(cell="rnn", rule="none"),
        "MomentumRNN": dict(cell="rnn", rule="momentum", mu=mu, s=s),
        "LSTM": dict(cell="lstm", rule="none"),
        "MomentumLSTM": dict(cell="lstm", rule="momentum", mu=mu, s=s),
        "AdamLSTM": dict(cell="lstm", rule="adam", mu=mu, s=s, beta=beta),
        "RMSPropLSTM": dict(cell="lstm", rule="rmsprop", s=s, beta=beta),
        "SRLSTM": dict(cell="lstm", rule="restart", s=s, restart_every=restart_every),
    }


MODELS = {
    k: v
    for k, v in model_settings(**CELL).items()
    if k in ("RNN", "MomentumRNN", "LSTM", "MomentumLSTM")
}
FULL_EXTRA = {k: v for k, v in model_settings(**CELL).items() if k not in MODELS}
QUICK = dict(
    hidden=32,
    epochs=8,
    batch=64,
    lr=3e-3,
    adding_length=64,
    adding_train=2048,
    adding_test=512,
    eval_batch=128,
    tasks=["digits", "digits_permuted", "adding"],
)
FULL = dict(
    hidden=64,
    epochs=30,
    batch=64,
    lr=2e-3,
    adding_length=128,
    adding_train=4096,
    adding_test=1024,
    eval_batch=256,
    tasks=["digits", "digits_permuted", "adding"],
)


def load_task(task: str, config: dict, seed: int) -> dict:
    if task.startswith("digits"):
        d = digit_sequences(permuted=task.endswith("permuted"), seed=seed)
        return dict(
            x_train=d.x_train,
            y_train=d.y_train,
            x_test=d.x_test,
            y_test=d.y_test,
            inputs=1,
            outputs=10,
            classification=True,
        )
    x_tr, y_tr = adding_task(config["adding_train"], config["adding_length"], seed=seed)
    x_te, y_te = adding_task(config["adding_test"], config["adding_length"], seed=seed + 1)
    return dict(
        x_train=x_tr,
        y_train=y_tr,
        x_test=x_te,
        y_test=y_te,
        inputs=2,
        outputs=1,
        classification=False,
    )


def loss_fn(task: dict, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if task["classification"]:
        return torch.nn.functional.cross_entropy(out, y)
    return torch.nn.functional.mse_loss(out[:, 0], y)


def hidden_gradient_norms(model, task: dict, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """``||dL/dh_t||_2`` for t = 1..T: the total derivative through the whole recurrence (Eq.
    (13)/(15))."""
    return _state_gradient_norms(model, task, y, lambda: model(x, return_states=True))


def _state_gradient_norms(model, task: dict, y: torch.Tensor, forward) -> list[float]:
    """``||dL/dh_t||`` of the states ``hs`` that ``forward() -> (out, hs)`` builds, in that
    graph."""
    with torch.enable_grad():
        out, hs = forward()
        for h in hs:
            h.retain_grad()
        loss_fn(task, out, y).backward()
        norms = [float(h.grad.norm()) for h in hs]
        model.zero_grad(set_to_none=True)
    return norms


def second_order_forward(model, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The MomentumRNN classifier's forward through the second-order form (review Eq. (14)).

    ``h_t = tanh(U (h_{t-1} - mu h_{t-2}) + mu atanh(h_{t-1}) + s W x_t + (1 - mu) b)`` computes the
    same h_t as Eq. (11) (``atanh(h_{t-1}) = U h_{t-2} + v_{t-1} + b``), but in this graph a
    perturbation of h_t also moves the implied velocity, so dL/dh_t picks up the ``mu Sigma_k`` term
    of Eq. (15). In the graph of Eq. (11), v_t does not depend on h and dL/dh_t obeys the RNN's
    product of ``D_k U^T``. The two graphs compute one function of the parameters, so parameter
    gradients agree.
    """
    rnn = model.rnn
    mu, U, b = rnn.mu, rnn.U.weight, rnn.U.bias
    drive = rnn.s * rnn.W(x)
    h_prev2 = h_prev = x.new_zeros(x.shape[0], rnn.hidden_size)
    hs = []
    for t in range(x.shape[1]):
        if t == 0:  # v_1 = s W x_1
            pre = h_prev @ U.T + drive[:, 0] + b
        else:  # the clamp only guards rounding at |h| -> 1
            pre = (
                (h_prev - mu * h_prev2) @ U.T
                + mu * torch.atanh(h_prev.clamp(-1 + 1e-7, 1 - 1e-7))
                + drive[:, t]
                + (1 - mu) * b
            )
        h = torch.tanh(pre)
        hs.append(h)
        h_prev2, h_prev = h_prev, h
    return model.head(hs[-1]), hs


def second_order_gradient_norms(
    model, task: dict, x: torch.Tensor, y: torch.Tensor
) -> list[float] | None:
    """``||dL/dh_t||`` in the graph of Eq. (14) (MomentumRNN with the standard parametrisation
    only)."""
    rnn = model.rnn
    if rnn.cell != "rnn" or rnn.rule.name != "momentum" or rnn.parametrization != "standard":
        return None
    return _state_gradient_norms(model, task, y, lambda: second_order_forward(model, x))


def train_one(
    name: str, rnn_kwargs: dict, task: dict, config: dict, seed: int, progress: bool
) -> dict:
    torch.manual_seed(seed)
    model = SequenceClassifier(task["inputs"], config["hidden"], task["outputs"], **rnn_kwargs)
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    x_eval, y_eval = (
        task["x_train"][: config["eval_batch"]],
        task["y_train"][: config["eval_batch"]],
    )
    grad_norms = [hidden_gradient_norms(model, task, x_eval, y_eval)]  # at initialisation
    second_order = [second_order_gradient_norms(model, task, x_eval, y_eval)]

    def batches(generator):
        order = torch.randperm(len(task["x_train"]), generator=generator, device=generator.device)
        for i in range(0, len(order), config["batch"]):
            idx = order[i : i + config["batch"]]
            yield task["x_train"][idx], task["y_train"][idx]

    def step(model, batch):
        x, y = batch
        return loss_fn(task, model(x), y), {}

    def evaluate(model):
        out = model(task["x_test"])
        record = {"test_loss": float(loss_fn(task, out, task["y_test"]))}
        if task["classification"]:
            record["test_accuracy"] = float((out.argmax(-1) == task["y_test"]).float().mean())
        grad_norms.append(hidden_gradient_norms(model, task, x_eval, y_eval))
        second_order.append(second_order_gradient_norms(model, task, x_eval, y_eval))
        return record

    start = time.perf_counter()
    history = fit(
        model,
        optimizer,
        batches,
        step,
        config["epochs"],
        seed=seed,
        evaluate=evaluate,
        progress=progress,
        description=name,
    )
    norms = np.array(grad_norms)
    result = {
        "history": history.epochs,
        "grad_norms": norms.tolist(),
        "seconds": time.perf_counter() - start,
        # ratio of the gradient reaching the first step to the gradient at the last step (log10)
        "log10_first_over_last": np.log10(norms[:, 0] / norms[:, -1]).tolist(),
    }
    if second_order[0] is not None:
        so = np.array(second_order)
        result["grad_norms_second_order_graph"] = so.tolist()
        result["log10_first_over_last_second_order_graph"] = np.log10(so[:, 0] / so[:, -1]).tolist()
    return result


def plot(results: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    tasks = list(results)
    models = list(results[tasks[0]])
    fig, axes = plt.subplots(
        len(tasks),
        len(models) + 1,
        figsize=(3.1 * (len(models) + 1), 2.6 * len(tasks)),
        squeeze=False,
    )
    for r, task in enumerate(tasks):
        logs = {
            m: np.log10(np.maximum(np.array(results[task][m]["grad_norms"]), 1e-30)) for m in models
        }
        lo = min(v.min() for v in logs.values())
        hi = max(v.max() for v in logs.values())
        for c, m in enumerate(models):
            im = axes[r, c].imshow(
                logs[m], aspect="auto", origin="lower", vmin=lo, vmax=hi, cmap="viridis"
            )
            axes[r, c].set(title=f"{task}: {m}", xlabel="time step t", ylabel="epoch")
        fig.colorbar(im, ax=axes[r, len(models) - 1], label="log10 ||dL/dh_t||")
        key = (
            "test_accuracy"
            if "test_accuracy" in results[task][models[0]]["history"][0]
            else "test_loss"
        )
        for m in models:
            axes[r, -1].plot([e[key] for e in results[task][m]["history"]], label=m)
        axes[r, -1].set(title=f"{task}: {key}", xlabel="epoch")
        axes[r, -1].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)


def build_parser():
    parser = experiment_parser(__doc__, "analysis/results/momseq_vanishing", epochs=True)
    # comma-separated (the registered scales' form) or space-separated (how the recipe's paper scale
    # writes a tuple)
    parser.add_argument(
        "--tasks",
        nargs="+",
        help="comma-separated subset of the tasks (default: all of the scale's)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        help="comma-separated subset of the models (default: all of the scale's)",
    )
    return parser


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.momseq.recipe`); a subset of ``--tasks`` or ``--models`` outside
    the scale's is refused (argparse's exit, status 2)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    config = experiment_config(args, QUICK, FULL)
    models = list({**MODELS, **(FULL_EXTRA if args.full else {})})
    for option, known in (("tasks", config["tasks"]), ("models", models)):
        chosen = None if getattr(args, option) is None else ",".join(getattr(args, option))
        if chosen is not None:
            picked = chosen.split(",")
            unknown = [x for x in picked if x not in known]
            if unknown or not picked:
                parser.error(
                    f"--{option} must be a comma-separated subset of {','.join(known)}, got "
                    f"{chosen!r}"
                )
            if option == "tasks":
                config = {**config, "tasks": picked}
            else:
                models = picked
    return {
        **config,
        "tasks": tuple(config["tasks"]),
        "models": tuple(models),
        "optimiser": "Adam",
        "clip": None,
        **CELL,
    }


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    settings = options(argv)
    torch.set_num_threads(1)
    if settings["optimiser"] != "Adam" or settings["clip"] is not None:
        raise ValueError(
            f"optimiser must be 'Adam' and clip None (the script builds nothing else), got "
            f"{settings['optimiser']!r}, {settings['clip']!r}"
        )
    config = {k: settings[k] for k in QUICK}
    cells = model_settings(**{k: settings[k] for k in CELL})
    models = {name: cells[name] for name in settings["models"]}
    results = {}
    for task_name in config["tasks"]:
        task = load_task(task_name, config, args.seed)
        results[task_name] = {}
        for name, kwargs in models.items():
            res = train_one(name, kwargs, task, config, args.seed, progress=not args.quiet)
            results[task_name][name] = res
            if not args.quiet:
                last = res["history"][-1]
                metric = (
                    f"acc {last['test_accuracy']:.3f}"
                    if "test_accuracy" in last
                    else f"mse {last['test_loss']:.4f}"
                )
                so = res.get("log10_first_over_last_second_order_graph")
                extra = (
                    "" if so is None else f"  [Eq. (14) graph: init {so[0]:+.2f} end {so[-1]:+.2f}]"
                )
                print(
                    f"{task_name:16s} {name:13s} train {last['train_loss']:.4f} test {metric}  "
                    f"log10 |dL/dh_1|/|dL/dh_T| init {res['log10_first_over_last'][0]:+.2f} "
                    f"end {res['log10_first_over_last'][-1]:+.2f}{extra}  ({res['seconds']:.0f} s)",
                    flush=True,
                )
    out = Path(args.out)
    command = command_line("dynkit.experiments.momseq.momseq_vanishing", argv)
    write_json(
        out / "vanishing.json",
        {"models": models, "results": results},
        config={**config, "seed": args.seed},
        command=command,
    )
    plot(results, out / "vanishing.png")
    return results


def _metrics(results: dict) -> dict:
    out = {}
    for task, per_model in results.items():
        for name, r in per_model.items():
            last = r["history"][-1]
            out[f"{task}.{name}.log10_first_over_last"] = r["log10_first_over_last"][-1]
            out[f"{task}.{name}.test_metric"] = last.get("test_accuracy", last["test_loss"])
    return out


# cpu: the two tasks and two models the ledger's rows compare, 60 epochs (at 2 epochs the RNN stayed
# at 25-36 %, below the validity bar of 50 %)
register_script(
    "momseq_vanishing",
    main,
    metrics=_metrics,
    smoke=("--epochs", "1"),
    cpu=("--epochs", "60", "--tasks", "digits,digits_permuted", "--models", "RNN,MomentumRNN"),
    full=("--full",),
    options=options,
)


if __name__ == "__main__":
    main()
