"""Peak memory of a gradient through ``dk.solve`` vs the number of steps: adjoint vs
backprop-through-solve.

Issue 13 §5: the continuous adjoint (``adjoint=True``) keeps no graph of the steps, so its memory
should be flat in the number of steps, while backprop through the solve stores every stage.

Method (as :mod:`benchmarks.bench_momres_memory`): each (mode, steps) runs in a fresh subprocess
with glibc's mmap threshold at 64 KiB, so freed state-sized tensors go back to the OS; after one
warm-up gradient the peak-RSS counter is reset and a second gradient (solve, loss, backward) runs;
we report ``VmHWM - VmRSS``, the step's peak resident memory above what was resident before it. The
field is an MLP (batch 256 × 16, width 64, float32), rk4 with a fixed step on [0, 1]; the step count
is set by the step size. Also printed: the gradients' agreement (adjoint vs backprop) and the time
of each.

Goals: flat memory, measured as the adjoint's peak growth from the fewest to the most steps over
backprop's growth on the same range, <= 0.01 (the absolute adjoint peaks are a fraction of a MiB, at
the resolution of the RSS counter, so their own ratio is printed but is not the verdict); and
adjoint / backprop peak at the most steps <= 0.5.

    python -m benchmarks.bench_adjoint [--quick]
    python -m benchmarks.bench_adjoint --checkpoints 0 4 8 16 [--batch 256]

``--accuracy`` (issue 33): the adjoint gradient's error at matched forward error against
torchdiffeq's adjoint (:func:`accuracy`; goal ≤ 1.0×), printed, not recorded. ``--attribution``:
where that gradient error comes from (:func:`attribution`: the backward 1000× tighter, an exact
forward), printed, not recorded. ``--checkpoints N ...``: that ratio with
``adjoint_checkpoints = N`` (:func:`checkpoints`; goal ≤ 1.0 at dim 16, rtol 1e-5), printed, not
recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from benchmarks._goals import check_goal, record
from benchmarks.bench_momres_memory import _status_kib

BATCH, DIM, WIDTH = 256, 16, 64


def _worker(mode: str, steps: int) -> dict:
    import torch

    import dynkit as dk

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(DIM, WIDTH), torch.nn.Tanh(), torch.nn.Linear(WIDTH, DIM)
    )

    field = _TimeField(net)
    y0 = torch.randn(BATCH, DIM)

    def gradient():
        field.zero_grad(set_to_none=True)
        sol = dk.solve(
            field, y0, [0.0, 1.0], method="rk4", step_size=1.0 / steps, adjoint=(mode == "adjoint")
        )
        sol.ys[-1].pow(2).sum().backward()
        return torch.cat([p.grad.reshape(-1) for p in field.parameters()])

    gradient()
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset VmHWM to the current RSS
    start = time.perf_counter()
    grad = gradient()
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    return {
        "mode": mode,
        "steps": steps,
        "peak_mib": (peak - before) / 1024,
        "seconds": seconds,
        "grad": grad[:64].tolist(),
        "state_mib": BATCH * DIM * 4 / 2**20,
    }


def measure(mode: str, steps: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_adjoint", "--worker", mode, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{mode} with {steps} steps failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


ACCURACY_TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
ACCURACY_SPAN, ACCURACY_GAIN = (
    2.0,
    3.0,
)  # forward errors 2e-2 .. 1e-7 over the tolerances (a field of gain 1 on
# [0, 1] was so gentle that dopri5's errors sat at 1e-9 whatever the tolerance)
ACCURACY_LEVELS = (1e-3, 1e-4, 1e-5)
ACCURACY_BATCH, ACCURACY_WIDTH = 1024, 64


def _accuracy_problem(dim: int):
    """An MLP field (dim → 64 → dim, tanh, float64, seeded, last layer ×3), a batch of 1024
    states and seeded output weights."""
    import torch

    torch.manual_seed(dim)
    field = torch.nn.Sequential(
        torch.nn.Linear(dim, ACCURACY_WIDTH), torch.nn.Tanh(), torch.nn.Linear(ACCURACY_WIDTH, dim)
    ).double()
    with torch.no_grad():
        field[2].weight.mul_(ACCURACY_GAIN)
    y0 = torch.randn(ACCURACY_BATCH, dim, dtype=torch.float64)
    weights = torch.randn(ACCURACY_BATCH, dim, dtype=torch.float64)
    return field, y0, weights


def _gradient(odeint, field, y0, weights, rtol: float, **kwargs):
    """``(y(T), dL/dθ)`` with ``L = Σ w · y(T)`` through ``odeint`` (torchdiffeq's calling
    convention)."""
    import torch

    module = _TimeField(field)
    ys = odeint(
        module,
        y0,
        torch.tensor([0.0, ACCURACY_SPAN], dtype=torch.float64),
        rtol=rtol,
        atol=rtol,
        **kwargs,
    )
    grads = torch.autograd.grad((ys[-1] * weights).sum(), tuple(field.parameters()))
    return ys[-1].detach(), torch.cat([g.reshape(-1) for g in grads])


def _TimeField(net):
    """``net`` as an autonomous field ``f(t, y) = net(y)`` (an nn.Module: its parameters are the
    net's)."""
    import torch

    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, t, y):
            return self.net(y)

    return Field()


def accuracy(dims=(2, 16)) -> dict:
    """Issue 33 (5): the adjoint gradient's error at matched forward error, dynkit vs torchdiffeq
    (dopri5, rtol = atol over :data:`ACCURACY_TOLS`). Reference for both: torchdiffeq's
    ``odeint`` differentiated by autograd through a solve at rtol = atol = 1e-12 (neither
    adjoint). Errors are relative 2-norms (final state over the batch; gradient over all
    parameters); each tool's log gradient error is interpolated in its log forward error at
    :data:`ACCURACY_LEVELS`. Goal: dynkit / torchdiffeq ≤ 1.0 at every level both reach."""
    import torch
    import torchdiffeq

    import dynkit as dk

    torch.set_num_threads(1)
    import numpy as np

    out, goals = {}, []
    for dim in dims:
        field, y0, weights = _accuracy_problem(dim)
        ref_y, ref_g = _gradient(torchdiffeq.odeint, field, y0, weights, 1e-12)
        curves = {}
        for name, odeint in (
            ("dynkit", dk.odeint_adjoint),
            ("torchdiffeq", torchdiffeq.odeint_adjoint),
        ):
            points = []
            for tol in ACCURACY_TOLS:
                y, g = _gradient(
                    odeint, field, y0, weights, tol, adjoint_params=tuple(field.parameters())
                )
                points.append(
                    (
                        float((y - ref_y).norm() / ref_y.norm()),
                        float((g - ref_g).norm() / ref_g.norm()),
                    )
                )
            curves[name] = points
            print(
                f"dim {dim:2d} {name:11s} "
                + "  ".join(
                    f"rtol {t:.0e}: fwd {f:.2e} grad {g:.2e}"
                    for t, (f, g) in zip(ACCURACY_TOLS, points)
                ),
                flush=True,
            )
        ratios = {}
        for level in ACCURACY_LEVELS:
            at = {}
            for name, points in curves.items():
                pts = sorted(points)
                fe, ge = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
                if fe[0] <= np.log(level) <= fe[-1]:
                    at[name] = float(np.exp(np.interp(np.log(level), fe, ge)))
            if len(at) == 2:
                ratios[level] = at["dynkit"] / at["torchdiffeq"]
                print(
                    f"dim {dim:2d} forward error {level:.0e}: gradient error dynkit "
                    f"{at['dynkit']:.2e}, torchdiffeq "
                    f"{at['torchdiffeq']:.2e}, ratio {ratios[level]:.2f}",
                    flush=True,
                )
        out[dim] = dict(curves=curves, ratios=ratios)
        if ratios:
            goals.append(
                check_goal(
                    f"adjoint gradient error / torchdiffeq's at matched forward error, dim {dim} "
                    f"(worst level)",
                    max(ratios.values()),
                    1.0,
                )
            )
    return out


CHECKPOINT_TOLS = (1e-4, 1e-5)
CHECKPOINT_PEER_TOLS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


def checkpoints(counts=(0, 4, 8, 16), dims=(4, 16), batch: int = ACCURACY_BATCH) -> dict:
    """The adjoint gradient's error with ``adjoint_checkpoints = N`` over torchdiffeq's, at matched
    forward error.

    :func:`accuracy`'s problems and reference (torchdiffeq's ``odeint`` by autograd at 1e-12,
    neither adjoint); dynkit's adjoint at rtol = atol in :data:`CHECKPOINT_TOLS` with each ``N``
    of ``counts`` (its forward, hence its forward error, is the same for every ``N``);
    torchdiffeq's adjoint over :data:`CHECKPOINT_PEER_TOLS`, whose log gradient error is
    interpolated at dynkit's log forward error. Goal: ratio ≤ 1.0 at dim 16, rtol 1e-5."""
    import numpy as np
    import torch
    import torchdiffeq

    import dynkit as dk

    torch.set_num_threads(1)
    out = {}
    for dim in dims:
        field, y0, weights = _accuracy_problem(dim)
        y0, weights = y0[:batch], weights[:batch]
        params = tuple(field.parameters())
        ref_y, ref_g = _gradient(torchdiffeq.odeint, field, y0, weights, 1e-12)

        def errors(odeint, tol, **kwargs):
            y, g = _gradient(odeint, field, y0, weights, tol, adjoint_params=params, **kwargs)
            return float((y - ref_y).norm() / ref_y.norm()), float(
                (g - ref_g).norm() / ref_g.norm()
            )

        peer = sorted(errors(torchdiffeq.odeint_adjoint, tol) for tol in CHECKPOINT_PEER_TOLS)
        fe, ge = np.log([p[0] for p in peer]), np.log([p[1] for p in peer])
        for tol in CHECKPOINT_TOLS:
            for n in counts:
                fwd, grad = errors(dk.odeint_adjoint, tol, adjoint_checkpoints=n)
                inside = fe[0] <= np.log(fwd) <= fe[-1]
                peer_grad = (
                    float(np.exp(np.interp(np.log(fwd), fe, ge))) if inside else float("nan")
                )
                out[(dim, tol, n)] = ratio = grad / peer_grad
                print(
                    f"dim {dim:2d} rtol {tol:.0e} checkpoints {n:2d}: forward error {fwd:.2e}, "
                    f"gradient error dynkit {grad:.2e}, torchdiffeq at that forward error "
                    f"{peer_grad:.2e}, ratio {ratio:.2f}",
                    flush=True,
                )
    if (16, 1e-5, 8) in out:
        check_goal(
            "adjoint gradient error / torchdiffeq's, dim 16, rtol 1e-5, 8 checkpoints",
            out[(16, 1e-5, 8)],
            1.0,
        )
    return out


ATTRIBUTION_TOLS = (1e-3, 1e-4, 1e-5, 1e-6)


def attribution(dims=(2, 16)) -> dict:
    """Where the adjoint gradient's error comes from (issue 33 (5)), for dynkit and torchdiffeq on
    :func:`accuracy`'s problems: the gradient error at rtol = atol = ``tol`` (a) as :func:`accuracy`
    runs it, (b) with the backward solves 1000× tighter
    (``adjoint_rtol = adjoint_atol = tol / 1000``), (c) with the forward solve at 1e-12 and the
    backward at ``tol`` (the backward's own error: ``y`` reconstructed from an exact final state).
    When
    (b) ≈ (a) and (c) ≪ (a), the gradient error is the forward's final error carried back by the
        reconstruction of
    ``y``, which no choice of the backward's tolerance or norm reduces. Printed as gradient error
    / forward error."""
    import torch
    import torchdiffeq
    import dynkit as dk

    torch.set_num_threads(1)
    out = {}
    for dim in dims:
        field, y0, weights = _accuracy_problem(dim)
        ref_y, ref_g = _gradient(torchdiffeq.odeint, field, y0, weights, 1e-12)
        params = tuple(field.parameters())
        for name, odeint in (
            ("dynkit", dk.odeint_adjoint),
            ("torchdiffeq", torchdiffeq.odeint_adjoint),
        ):
            for tol in ATTRIBUTION_TOLS:
                row = {}
                tight = dict(adjoint_rtol=tol / 1e3, adjoint_atol=tol / 1e3)
                for case, rtol, extra in (
                    ("as run", tol, {}),
                    ("backward tol/1000", tol, tight),
                    ("exact forward", 1e-12, dict(adjoint_rtol=tol, adjoint_atol=tol)),
                ):
                    y, g = _gradient(
                        odeint, field, y0, weights, rtol, adjoint_params=params, **extra
                    )
                    row[case] = (
                        float((y - ref_y).norm() / ref_y.norm()),
                        float((g - ref_g).norm() / ref_g.norm()),
                    )
                fwd = row["as run"][0]
                out[(dim, name, tol)] = row
                print(
                    f"dim {dim:2d} {name:11s} tol {tol:.0e}: forward error {fwd:.2e}; "
                    f"gradient error as run "
                    f"{row['as run'][1]:.2e} ({row['as run'][1] / fwd:.2f}x fwd), backward "
                    f"tol/1000 "
                    f"{row['backward tol/1000'][1]:.2e} "
                    f"({row['backward tol/1000'][1] / fwd:.2f}x), exact forward "
                    f"{row['exact forward'][1]:.2e} ({row['exact forward'][1] / fwd:.2f}x)",
                    flush=True,
                )
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="steps 25, 100, 400 only")
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "STEPS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--accuracy",
        action="store_true",
        help="issue 33: adjoint gradient error at matched forward "
        "error against torchdiffeq's adjoint (MLP field, batch 1024, dims 2 and 16); nothing "
        "recorded",
    )
    parser.add_argument(
        "--attribution",
        action="store_true",
        help="issue 33: the adjoint gradient error as run, "
        "with the backward 1000x tighter and with an exact forward, dynkit and torchdiffeq; "
        "nothing "
        "recorded",
    )
    parser.add_argument(
        "--checkpoints",
        nargs="+",
        type=int,
        metavar="N",
        help="adjoint gradient error with adjoint_checkpoints=N (e.g. 0 4 8 16) over torchdiffeq's "
        "at matched forward error, dims 4 and 16, rtol 1e-4 and 1e-5; nothing recorded",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=ACCURACY_BATCH,
        help=f"states in the batch of --checkpoints (default {ACCURACY_BATCH})",
    )
    args = parser.parse_args(argv)
    if args.checkpoints:
        checkpoints(tuple(args.checkpoints), batch=args.batch)
        return {}
    if args.attribution:
        attribution()
        return {}
    if args.accuracy:
        accuracy()
        return {}
    if args.worker:
        print(json.dumps(_worker(args.worker[0], int(args.worker[1]))))
        return {}
    steps_list = (25, 100, 400) if args.quick else (25, 100, 400, 1600)
    print(
        f"rk4 on [0, 1], MLP field batch {BATCH} x {DIM}, width {WIDTH}, float32 "
        f"(one state = {BATCH * DIM * 4 / 2**20:.3f} MiB); peak RSS of one gradient above its start"
    )
    print(
        f"{'steps':>6} {'adjoint MiB':>12} {'backprop MiB':>13} {'adjoint s':>10} "
        f"{'backprop s':>11} "
        f"{'grad rel. diff':>15}"
    )
    rows = []
    for steps in steps_list:
        adj, bp = measure("adjoint", steps), measure("backprop", steps)
        diff = sum((a - b) ** 2 for a, b in zip(adj["grad"], bp["grad"])) ** 0.5 / max(
            sum(b * b for b in bp["grad"]) ** 0.5, 1e-30
        )
        rows.append(
            dict(
                steps=steps,
                adjoint_peak_mib=adj["peak_mib"],
                backprop_peak_mib=bp["peak_mib"],
                adjoint_seconds=adj["seconds"],
                backprop_seconds=bp["seconds"],
                grad_rel_diff=diff,
            )
        )
        print(
            f"{steps:>6} {adj['peak_mib']:>12.2f} {bp['peak_mib']:>13.2f} {adj['seconds']:>10.3f} "
            f"{bp['seconds']:>11.3f} {diff:>15.2e}",
            flush=True,
        )
    first, last = rows[0], rows[-1]
    growth = (last["adjoint_peak_mib"] - first["adjoint_peak_mib"]) / (
        last["backprop_peak_mib"] - first["backprop_peak_mib"]
    )
    print(
        f"adjoint peak {first['adjoint_peak_mib']:.2f} -> {last['adjoint_peak_mib']:.2f} "
        f"MiB, backprop "
        f"{first['backprop_peak_mib']:.2f} -> {last['backprop_peak_mib']:.2f} MiB from "
        f"{first['steps']} to "
        f"{last['steps']} steps"
    )
    goals = [
        check_goal(
            f"adjoint / backprop peak-memory growth, {first['steps']} -> {last['steps']} steps",
            growth,
            0.01,
            note="flat in the number of steps",
        ),
        check_goal(
            f"adjoint / backprop peak memory at {last['steps']} steps",
            last["adjoint_peak_mib"] / max(last["backprop_peak_mib"], 1e-3),
            0.5,
        ),
    ]
    data = {"rows": rows, "batch": BATCH, "dim": DIM, "width": WIDTH, "quick": args.quick}
    record(
        "bench_adjoint", data, goals, argv=["bench_adjoint", *(["--quick"] if args.quick else [])]
    )
    return data


if __name__ == "__main__":
    main()
