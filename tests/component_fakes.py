"""Small stand-ins for dk.symbolic / dk.theory / dk.diagnostics / dk.tasks, shaped like their
contracts.

The CLI, report, docs and notebook tests inject them with ``install(monkeypatch)`` to check the
wiring (what is called with which arguments, what ends up in the output) independently of the real
components, which are developed on other branches. They stay valid once the real components are
merged: monkeypatch replaces the real names for the duration of a test only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import sympy as sp


# ---- dk.symbolic
# -----------------------------------------------------------------------------------
@dataclass
class Step:
    text: str
    expr: object


@dataclass
class Derivation:
    name: str
    title: str
    paper: str
    equation: str
    steps: list
    result: object
    stated: object
    check_passed: bool

    def to_latex(self) -> str:
        return "\n".join(
            [f"% {self.title}"]
            + [f"{s.text}: {sp.latex(s.expr)}" for s in self.steps]
            + [sp.latex(self.result)]
        )

    def to_markdown(self) -> str:
        return "\n\n".join(
            [f"### {self.title}"]
            + [f"{s.text}\n\n$${sp.latex(s.expr)}$$" for s in self.steps]
            + [f"Result: $${sp.latex(self.result)}$$"]
        )


def _fake_heavy_ball() -> Derivation:
    # A genuine (tiny) derivation, so the rendered LaTeX is real sympy output.
    t, h, beta = sp.symbols("t h beta", positive=True)
    x = sp.Function("x")
    ode = sp.Eq(x(t).diff(t, 2) + beta * x(t).diff(t), -sp.Symbol("g"))
    return Derivation(
        "fake_heavy_ball",
        "FAKE heavy-ball limit",
        "FAKE paper",
        "Eq. (99)",
        [
            Step("Taylor-expand the update", sp.Eq(x(t + h), x(t) + h * x(t).diff(t))),
            Step("Take the limit h -> 0", ode),
        ],
        ode,
        ode,
        True,
    )


def _fake_failing() -> Derivation:
    a = sp.Symbol("a")
    return Derivation(
        "fake_failing",
        "FAKE mismatching derivation",
        "FAKE paper",
        "Eq. (100)",
        [Step("Start", sp.Eq(a, 1))],
        sp.Integer(1),
        sp.Integer(2),
        False,
    )


DERIVATIONS = {"fake_heavy_ball": _fake_heavy_ball, "fake_failing": _fake_failing}


# ---- dk.theory
# -------------------------------------------------------------------------------------
@dataclass
class ClaimRow:
    claim: str
    paper: str
    equation: str
    instances: int
    held: int  # instances on which the claim held (as in dk.theory; a bool is accepted too)
    worst_residual: float
    tolerance: float
    seconds: float


@dataclass
class ClaimTable:
    rows: list

    @property
    def all_hold(self) -> bool:
        return all(r.held == r.instances for r in self.rows)

    def to_dict(self) -> dict:
        return {"rows": [asdict(r) for r in self.rows], "all_hold": self.all_hold}

    def to_markdown(self) -> str:
        return "\n".join(f"| {r.claim} | {r.held} |" for r in self.rows)

    def __str__(self) -> str:
        return "\n".join(
            f"{r.claim:16s} {r.paper} {r.equation} n={r.instances} held={r.held} "
            f"worst={r.worst_residual:.1e}"
            for r in self.rows
        )


@dataclass
class Claim:
    id: str
    paper: str
    equation: str
    statement: str
    hypotheses: list = field(default_factory=list)

    def run(self, n_instances: int, seed: int) -> ClaimRow:
        ok = self.id != "fake_false"
        return ClaimRow(
            self.id,
            self.paper,
            self.equation,
            n_instances,
            n_instances if ok else n_instances - 1,
            1e-14 if ok else 0.5,
            1e-10,
            0.01,
        )


CLAIMS = {
    "fake_true": Claim(
        "fake_true", "FAKE paper", "Prop. 1", "A statement that holds.", ["f is smooth"]
    ),
    "fake_false": Claim("fake_false", "FAKE paper", "Prop. 2", "A statement that fails.", ["none"]),
}

CALLS: list = []  # (function name, kwargs) of every call to a fake, for wiring assertions


def run_all(
    n_instances: int = 1000, seed: int = 0, claims=None, *, progress: bool = False
) -> ClaimTable:
    CALLS.append(
        (
            "run_all",
            {"n_instances": n_instances, "seed": seed, "claims": claims, "progress": progress},
        )
    )
    ids = list(CLAIMS) if claims is None else list(claims)
    return ClaimTable([CLAIMS[c].run(n_instances, seed) for c in ids])


# ---- dk.diagnostics
# --------------------------------------------------------------------------------
@dataclass
class StiffnessReport:
    is_stiff: bool
    stiffness_ratio: float
    times: list
    eigenvalues: list
    stats: dict
    complete: bool = True
    n_accepted_steps: int = 1
    t_reached: float = 0.0
    t_end: float = 0.0
    longest_run: int = 0
    min_run: int = 15

    def summary(self) -> str:
        return f"FAKE stiffness: stiff={self.is_stiff} ratio={self.stiffness_ratio:g}"

    def to_dict(self) -> dict:
        return {
            "is_stiff": self.is_stiff,
            "stiffness_ratio": self.stiffness_ratio,
            "times": self.times,
        }


def stiffness_report(
    f, y0, t, method="dopri5", rtol=1e-6, atol=1e-9, max_steps=100_000
) -> StiffnessReport:
    CALLS.append(
        ("stiffness_report", {"method": method, "rtol": rtol, "atol": atol, "max_steps": max_steps})
    )
    dy = np.asarray(
        f(float(t[0]), np.asarray(y0, float))
    )  # call the user's f once: the wiring is real
    return StiffnessReport(
        False,
        1.0,
        [float(t[0]), float(t[-1])],
        [dy.tolist()],
        {"nfe": 1},
        t_reached=float(t[-1]),
        t_end=float(t[-1]),
    )


def _plot_png(path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2, 3], [3, 1, 2])
    ax.set_title("FAKE figure")
    fig.savefig(path, format="png")
    plt.close(fig)


@dataclass
class WorkPrecisionTable:
    rows: list

    def to_markdown(self) -> str:
        return "\n".join(str(r) for r in self.rows)

    def to_dict(self) -> dict:
        return {"rows": self.rows}

    def plot(self, path) -> Path:
        _plot_png(path)
        return Path(path)


PROBLEMS = {"fake_decay": None}


def work_precision(
    problems=None,
    methods=("dopri5", "rkf45", "bosh3"),
    tolerances=(1e-4, 1e-6, 1e-8, 1e-10),
    include_scipy=True,
) -> WorkPrecisionTable:
    CALLS.append(("work_precision", {"tolerances": tolerances, "include_scipy": include_scipy}))
    solvers = list(methods) + (["scipy:RK45"] if include_scipy else [])
    return WorkPrecisionTable(
        [
            {"problem": "fake_decay", "solver": s, "tol": tol, "error": tol * 3, "nfe": 17}
            for s in solvers
            for tol in tolerances
        ]
    )


def nfe_vs_tolerance(
    models=("node", "hbnode"),
    task="digits",
    tolerances=(1e-3, 1e-5),
    n_batches=2,
    seed=0,
    out=None,
    quiet=False,
    solver="dynkit",
    train_epochs=0,
) -> dict:
    CALLS.append(
        (
            "nfe_vs_tolerance",
            {
                "models": models,
                "task": task,
                "tolerances": tolerances,
                "n_batches": n_batches,
                "seed": seed,
                "out": out,
                "quiet": quiet,
                "solver": solver,
                "train_epochs": train_epochs,
            },
        )
    )
    return {
        m: {
            f"{tol:g}": {
                "forward_nfe": {"mean": 20.0 + i, "std": 1.0},
                "backward_nfe": {"mean": 30.0, "std": 2.0},
            }
            for tol in tolerances
        }
        for i, m in enumerate(models)
    }


def plot_nfe_vs_tolerance(results, path) -> Path:
    CALLS.append(("plot_nfe_vs_tolerance", {"path": str(path)}))
    _plot_png(path)
    return Path(path)


# ---- dk.tasks
# --------------------------------------------------------------------------------------
def run_training(
    model,
    task,
    *,
    epochs=None,
    out=None,
    seed=0,
    resume=False,
    quiet=False,
    method="dopri5",
    tol=1e-3,
    full=False,
    solver=None,
    device="cpu",
) -> dict:
    CALLS.append(
        (
            "run_training",
            {
                "model": model,
                "task": task,
                "epochs": epochs,
                "out": out,
                "seed": seed,
                "resume": resume,
                "method": method,
                "tol": tol,
                "full": full,
                "solver": solver,
                "device": device,
            },
        )
    )
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "result.json").write_text(json.dumps({"model": model}))
    return {
        "model": model,
        "task": task,
        "final": {"test_acc": 0.5, "per_class": [0.4, 0.6]},
        "epochs": epochs or 1,
        "history": [{"epoch": 1}],
    }


# ---- installation
# ----------------------------------------------------------------------------------
NAMES = {
    "symbolic": ["DERIVATIONS"],
    "theory": ["run_all", "CLAIMS"],
    "diagnostics": ["stiffness_report", "work_precision", "PROBLEMS"],
    "experiments": ["nfe_vs_tolerance", "plot_nfe_vs_tolerance"],
    "tasks": ["run_training"],
}


def install(monkeypatch, only=None) -> list:
    """Put the fakes in place of ``dynkit.<module>.<name>`` (all, or the modules in ``only``)."""
    import importlib

    CALLS.clear()
    for module, names in NAMES.items():
        if only is not None and module not in only:
            continue
        mod = importlib.import_module(f"dynkit.{module}")
        for name in names:
            monkeypatch.setattr(mod, name, globals()[name], raising=False)
    return CALLS


def uninstall(monkeypatch, module: str) -> None:
    """Make ``dynkit.<module>`` look absent (none of its contract names), whatever the build
    holds."""
    import importlib

    mod = importlib.import_module(f"dynkit.{module}")
    for name in NAMES[module]:
        monkeypatch.delattr(mod, name, raising=False)
    lazy = getattr(mod, "_NAMES", None)  # a lazy package would load the name on first access
    if isinstance(lazy, dict):
        monkeypatch.setattr(
            mod, "_NAMES", {k: v for k, v in lazy.items() if k not in NAMES[module]}
        )
