"""``dk.odeint`` against ``torchdiffeq.odeint`` on the same calls: agreement, NFE, time.

A torchdiffeq user switching one import gets the same numbers (dopri5, the same defaults) and
the same gradients, for about the same work. Printed: the largest difference of the outputs and the
relative differences of the gradients (autograd and adjoint), each side's NFE, and the time ratio
dynkit / torchdiffeq (paired medians, CPU, one thread).

Goals: outputs within 1e-6 of torchdiffeq's (10x the tolerance rtol = 1e-7), gradients within 1e-5
relative; forward NFE dynkit / torchdiffeq <= 1.5 (measured 50 / 38 here: dynkit's PI step-size
controller grows the step more cautiously than torchdiffeq's I controller, 8 steps against 6, none
rejected); time dynkit / torchdiffeq <= 1.5.

    python -m benchmarks.bench_odeint [--quick]
"""

from __future__ import annotations

import argparse

from benchmarks._goals import check_goal, paired_medians


def main(argv: list[str] | None = None) -> list:
    import torch
    import torchdiffeq
    from torch import nn

    import dynkit as dk

    args = argparse.ArgumentParser(prog="python -m benchmarks.bench_odeint").parse_args(
        [a for a in (argv or []) if a != "--quick"]
    )
    del args
    quick = "--quick" in (argv or [])
    torch.set_num_threads(1)
    torch.manual_seed(0)

    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 4)).double()
            self.calls = 0

        def forward(self, t, y):
            self.calls += 1
            return self.net(y) - 0.1 * y

    func = Field()
    y0 = torch.randn(16, 4, dtype=torch.float64)
    t = torch.linspace(0.0, 2.0, 5, dtype=torch.float64)
    peers = {
        "dynkit": (dk.odeint, dk.odeint_adjoint),
        "torchdiffeq": (torchdiffeq.odeint, torchdiffeq.odeint_adjoint),
    }

    outputs, nfe, grads = {}, {}, {}
    for name, (odeint, odeint_adjoint) in peers.items():
        func.calls = 0
        with torch.no_grad():
            outputs[name] = odeint(func, y0, t)
        nfe[name] = func.calls
        for mode, fn in (("autograd", odeint), ("adjoint", odeint_adjoint)):
            func.zero_grad()
            y = y0.clone().requires_grad_(True)
            fn(func, y, t).pow(2).sum().backward()
            grads[name, mode] = torch.cat(
                [y.grad.reshape(-1)] + [p.grad.reshape(-1) for p in func.parameters()]
            )

    diff = float((outputs["dynkit"] - outputs["torchdiffeq"]).abs().max())
    print(f"outputs: max |dynkit - torchdiffeq| = {diff:.3g} (rtol 1e-7, atol 1e-9, dopri5)")
    goals = [check_goal("odeint outputs, max |dynkit - torchdiffeq|", diff, 1e-6)]
    for mode in ("autograd", "adjoint"):
        a, b = grads["dynkit", mode], grads["torchdiffeq", mode]
        rel = float((a - b).norm() / b.norm())
        print(f"gradients ({mode}): |dynkit - torchdiffeq| / |torchdiffeq| = {rel:.3g}")
        goals.append(check_goal(f"odeint gradients ({mode}), relative difference", rel, 1e-5))
    print(f"forward NFE: dynkit {nfe['dynkit']}, torchdiffeq {nfe['torchdiffeq']}")
    goals.append(
        check_goal(
            "odeint forward NFE dynkit / torchdiffeq", nfe["dynkit"] / nfe["torchdiffeq"], 1.5
        )
    )

    def timed(odeint):
        def run():
            with torch.no_grad():
                odeint(func, y0, t)

        return run

    medians = paired_medians(
        {name: timed(fns[0]) for name, fns in peers.items()}, repeats=3 if quick else 9
    )
    ratio = medians["dynkit"] / medians["torchdiffeq"]
    print(
        f"time: dynkit {medians['dynkit'] * 1e3:.1f} ms, torchdiffeq "
        f"{medians['torchdiffeq'] * 1e3:.1f} ms"
    )
    goals.append(check_goal("odeint time dynkit / torchdiffeq (dopri5, forward)", ratio, 1.5))
    return goals


if __name__ == "__main__":
    main(__import__("sys").argv[1:])
