"""Fig. 10 of the Momentum ResNets paper: Learned-ISTA, test Lasso loss vs depth for LISTA, RevNet
and Momentum ResNet (Sect. 5.3, Appendix D).

D is 16 x 32 Gaussian with unit-norm columns, lambda = 0.1, samples y = y~ / ||D^T y~||_inf. One
layer of LISTA is g_n(x) = ST(W1_n x + W2_n y, eta lambda), initialised at ISTA (W1 = I - eta D^T D,
W2 = eta D^T, eta = 1/||D||_2^2) and trained unsupervised on the Lasso loss of the output x_L. With
the residual r_n(x) = g_n(x) - x:

* LISTA: x_{n+1} = x_n + r_n(x_n) (a ResNet: Eq. (2) with gamma = 0);
* Momentum ResNet: Eq. (2) with f_n = r_n / (1 - gamma), gamma = 0.5, v_0 = 0 (so that at
  initialisation it is ISTA with heavy-ball momentum gamma; the parameters are those of LISTA);
  ``--momentum-residual plain`` takes f_n = r_n;
* RevNet: Eq. (4) with phi_n = r_n, psi_n = r'_n (twice the parameters), activations duplicated x_0
  = v_0 = 0.

y is passed to every block as a keyword argument. The options also give the paper's Appendix D
recipe (plain SGD, 10000 iterations, gamma, columns of unit variance; see
:mod:`~dynkit.experiments.momres.recipe`). Reported: mean test Lasso loss minus the optimum
(computed by 3000 FISTA iterations), per depth.

``--checkpoints DIR`` keeps each trained (model, depth)'s result in ``DIR`` as JSON as soon as it is
done; a rerun with the same folder and settings takes them instead of training again (each depth is
trained from its own seeded start, so a resumed run's numbers are those of an uninterrupted one).

    python -m dynkit.experiments.momres.momres_lista --out analysis/results/momres_lista
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import torch
from torch import nn

from ..arg_types import momentum_float, positive_float, positive_int
from ..scripting import experiment_parser, register_script, run_script
from dynkit.io import read_regular_text, save_figure, write_json
from dynkit.models.momentum_resnet import MomentumResNet
from dynkit.models.revnet import RevNet

LAMBDA = 0.1
OPTIMISERS = {"Adam": torch.optim.Adam, "SGD": torch.optim.SGD}  # SGD: plain, no momentum
COLUMNS = ("unit-norm", "unit-variance")
RESIDUALS = ("scaled", "plain")
EXPLODED = 1e30  # a gap beyond it has exploded: left out of the figure, which names how many


def make_problem(n_train: int, n_test: int, generator: torch.Generator, columns: str = "unit-norm"):
    """The dictionary (16 x 32 Gaussian, ``columns`` normalised to unit Euclidean norm or to unit
    variance, i.e. norm sqrt(16)) and the normalised train and test samples."""
    # drawn where the generator lives (the same numbers on every device), then moved to the run's
    # device
    here = torch.get_default_device()
    D = torch.randn(16, 32, generator=generator, dtype=torch.float64, device=generator.device)
    D = (D / D.norm(dim=0, keepdim=True)).to(here)
    if columns == "unit-variance":
        D = D * D.shape[0] ** 0.5

    def samples(n):
        y = torch.randn(n, 16, generator=generator, dtype=torch.float64, device=generator.device)
        y = y.to(here)
        return y / (y @ D).abs().amax(dim=1, keepdim=True)

    return D, samples(n_train), samples(n_test)


def lasso(D, y, x):
    return (0.5 * ((y - x @ D.T) ** 2).sum(dim=1) + LAMBDA * x.abs().sum(dim=1)).mean()


def soft_threshold(z, t):
    return torch.sign(z) * torch.clamp(z.abs() - t, min=0)


def lasso_optimum(D, y, iterations=3000):
    """FISTA on the Lasso: the reference minimum."""
    eta = 1 / torch.linalg.matrix_norm(D, ord=2) ** 2
    x = z = torch.zeros(len(y), D.shape[1], dtype=D.dtype)
    t = 1.0
    for _ in range(iterations):
        x_new = soft_threshold(z - eta * (z @ D.T - y) @ D, eta * LAMBDA)
        t_new = (1 + (1 + 4 * t * t) ** 0.5) / 2
        z, x, t = x_new + (t - 1) / t_new * (x_new - x), x_new, t_new
    return lasso(D, y, x)


class ISTAResidual(nn.Module):
    """r(x; y) = scale * (ST(W1 x + W2 y, eta lambda) - x), initialised at ISTA."""

    def __init__(self, D: torch.Tensor, scale: float = 1.0):
        super().__init__()
        eta = 1 / float(torch.linalg.matrix_norm(D, ord=2) ** 2)
        self.W1 = nn.Parameter(torch.eye(D.shape[1], dtype=D.dtype) - eta * D.T @ D)
        self.W2 = nn.Parameter(eta * D.T.clone())
        self.threshold, self.scale = eta * LAMBDA, scale

    def forward(self, x, y):
        return self.scale * (soft_threshold(x @ self.W1.T + y @ self.W2.T, self.threshold) - x)


def make_model(
    kind: str, D: torch.Tensor, depth: int, gamma: float = 0.5, residual: str = "scaled"
) -> nn.Module:
    options = dict(
        exact=False, preserve_rng_state=False
    )  # gradients equal the exact mode's (tests)
    if kind == "lista":
        return MomentumResNet([ISTAResidual(D) for _ in range(depth)], 0.0, **options)
    if kind == "momentum":
        scale = 1 / (1 - gamma) if residual == "scaled" else 1.0
        return MomentumResNet([ISTAResidual(D, scale) for _ in range(depth)], gamma, **options)
    return RevNet(
        [ISTAResidual(D) for _ in range(depth)], [ISTAResidual(D) for _ in range(depth)], **options
    )


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.momres.recipe`)."""
    args = build_parser().parse_args(argv)
    return {
        "dictionary": (16, 32),
        "columns": args.columns,
        "lasso_lambda": LAMBDA,
        "gamma": args.gamma,
        "momentum_residual": args.momentum_residual,
        "optimiser": args.optimiser,
        "lr": args.lr,
        "n_train": args.n_train,
        "n_test": 1000,
        "depths": tuple(range(1, 21)) if args.full else (1, 2, 4, 6, 8, 12, 16),
        "iterations": args.iterations or (2000 if args.full else 300),
        "checkpoints": args.checkpoints,
    }


def _settings_digest(settings: dict) -> str:
    """What one (model, depth) was trained with, as a digest its checkpoint must carry."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _trained(path: Path | None, digest: str, train) -> tuple[float, float, int | None]:
    """``(test gap, gap at initialisation, diverged at)`` of one (model, depth): read from its
    checkpoint ``path`` when it holds these settings' result, else ``train()`` and kept there."""
    if path is not None and path.exists():
        kept = json.loads(read_regular_text(path, "checkpoint"))
        if kept.get("settings") != digest:
            raise ValueError(
                f"checkpoint {path} was written with other settings (expected settings digest "
                f"{digest[:12]}..., got {str(kept.get('settings'))[:12]}...): remove it or use "
                "another --checkpoints folder"
            )
        return float(kept["gap"]), float(kept["at_initialisation"]), kept["diverged_at"]
    gap, at_init, diverged = train()
    if path is not None:
        write_json(
            path,
            {"settings": digest, "gap": gap, "at_initialisation": at_init, "diverged_at": diverged},
        )
    return gap, at_init, diverged


def run(
    seed: int,
    quiet: bool,
    *,
    dictionary: tuple[int, int],
    columns: str,
    lasso_lambda: float,
    gamma: float,
    momentum_residual: str,
    optimiser: str,
    lr: float,
    n_train: int,
    n_test: int,
    depths: tuple[int, ...],
    iterations: int,
    checkpoints: Path | None = None,
) -> dict:
    if tuple(dictionary) != (16, 32) or lasso_lambda != LAMBDA:
        raise ValueError(
            f"dictionary must be (16, 32) and lasso_lambda {LAMBDA} (the script builds "
            f"nothing else), "
            f"got {dictionary!r}, {lasso_lambda!r}"
        )
    g = torch.Generator().manual_seed(seed)
    D, y_train, y_test = make_problem(n_train, n_test, g, columns)
    depths = list(depths)
    optimum = float(lasso_optimum(D, y_test))
    out = {
        "config": {
            "lambda": LAMBDA,
            "gamma": gamma,
            "depths": depths,
            "iterations": iterations,
            "seed": seed,
            "optimizer": f"{optimiser} lr {lr:g}, full batch of {n_train}",
            "dictionary": f"16 x 32, {columns} columns",
        },
        "test_optimum": optimum,
    }
    if momentum_residual != "scaled":  # recorded where it leaves the default
        out["config"]["momentum_residual"] = momentum_residual
    settings = {
        "seed": seed,
        "columns": columns,
        "gamma": gamma,
        "momentum_residual": momentum_residual,
        "optimiser": optimiser,
        "lr": lr,
        "n_train": n_train,
        "n_test": n_test,
        "iterations": iterations,
    }

    def train(kind: str, depth: int) -> tuple[float, float, int | None]:
        torch.manual_seed(seed)
        model = make_model(kind, D, depth, gamma, momentum_residual)
        x0 = torch.zeros(len(y_train), D.shape[1], dtype=D.dtype)
        with torch.no_grad():
            at_init = float(lasso(D, y_test, model(torch.zeros_like(x0), y=y_test)[0])) - optimum
        opt = OPTIMISERS[optimiser](model.parameters(), lr=lr)
        for step in range(iterations):
            opt.zero_grad()
            loss = lasso(D, y_train, model(x0, y=y_train)[0])
            if not torch.isfinite(loss):  # diverged: no later step can come back
                return math.nan, at_init, step
            loss.backward()
            opt.step()
        with torch.no_grad():
            zero = torch.zeros(len(y_test), 32, dtype=D.dtype)
            test = float(lasso(D, y_test, model(zero, y=y_test)[0]))
        return test - optimum, at_init, None

    for kind in ("lista", "revnet", "momentum"):
        losses, at_init, diverged = [], [], []
        for depth in depths:
            path = None if checkpoints is None else Path(checkpoints) / f"{kind}-depth{depth}.json"
            digest = _settings_digest({**settings, "kind": kind, "depth": depth})
            gap, start, at = _trained(path, digest, lambda: train(kind, depth))
            losses.append(gap)
            at_init.append(start)
            diverged.append(at)
            if not quiet:
                print(
                    f"{kind:9s} depth {depth:3d} test loss - optimum {losses[-1]:.3e} "
                    f"(at init {at_init[-1]:.3e})",
                    file=sys.stderr,
                )
        out[kind] = {
            "test_loss_minus_optimum": losses,  # NaN where the training diverged
            "at_initialisation": at_init,
            "diverged_at_iteration": diverged,  # per depth: the first non-finite loss, or None
        }
    return out


def plot(result: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    depths = result["config"]["depths"]
    for kind, name in (("lista", "LISTA"), ("revnet", "RevNet"), ("momentum", "Momentum ResNet")):
        gaps = result[kind]["test_loss_minus_optimum"]
        # a log axis takes positive values only, and its ticks overflow for gaps near float's range
        shown = [(d, g) for d, g in zip(depths, gaps) if math.isfinite(g) and 0 < g <= EXPLODED]
        lost = len(depths) - len(shown)
        label = name + (
            f" ({lost} depth{'s' * (lost > 1)} not shown: diverged, above {EXPLODED:g} or <= 0)"
            if lost
            else ""
        )
        ax.semilogy(*(zip(*shown) if shown else ([], [])), "-o", ms=3, label=label)
    ax.set_xlabel("depth")
    ax.set_ylabel("test Lasso loss - optimum")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def build_parser():
    parser = experiment_parser(__doc__, "runs/momres_lista")
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="training iterations (default 300, 2000 with --full)",
    )
    parser.add_argument(
        "--optimiser", choices=sorted(OPTIMISERS), default="Adam", help="optimiser (default Adam)"
    )
    parser.add_argument(
        "--lr", type=positive_float, default=1e-3, help="learning rate (default 0.001)"
    )
    parser.add_argument(
        "--gamma",
        type=momentum_float,
        default=0.5,
        help="the Momentum ResNet's gamma (default 0.5)",
    )
    parser.add_argument(
        "--momentum-residual",
        choices=RESIDUALS,
        default="scaled",
        help="the Momentum ResNet's residual: r_n / (1 - gamma) (default) or r_n",
    )
    parser.add_argument(
        "--columns",
        choices=COLUMNS,
        default="unit-norm",
        help="the dictionary's columns: unit Euclidean norm (default) or unit variance",
    )
    parser.add_argument(
        "--n-train",
        type=positive_int,
        default=1000,
        help="training samples, one full batch per iteration (default 1000)",
    )
    parser.add_argument(
        "--checkpoints",
        type=Path,
        default=None,
        help="folder for each trained (model, depth)'s result; a rerun resumes from it",
    )
    return parser


def main(argv: list[str] | None = None) -> dict:
    _, result = run_script(
        "dynkit.experiments.momres.momres_lista", argv, build_parser, options, run, plot, "lista"
    )
    print("depth " + " ".join(f"{d:>9d}" for d in result["config"]["depths"]))
    for kind in ("lista", "revnet", "momentum"):
        print(
            f"{kind:9s} " + " ".join(f"{v:9.2e}" for v in result[kind]["test_loss_minus_optimum"])
        )
    return result


def _metrics(result: dict) -> dict:
    kinds = ("lista", "revnet", "momentum")
    gaps = {f"{k}.deepest_loss_gap": result[k]["test_loss_minus_optimum"][-1] for k in kinds}
    return {
        **gaps,  # NaN (stored "nan") where the deepest model diverged: the ledger says so
        **{
            f"{k}.diverged_depths": sum(
                at is not None for at in result[k].get("diverged_at_iteration", ())
            )
            for k in kinds
        },
    }


register_script(
    "momres_lista",
    main,
    metrics=_metrics,
    smoke=("--iterations", "3"),
    cpu=(),
    full=("--full",),
    checkpoints=True,
    options=options,
)


if __name__ == "__main__":
    main()
