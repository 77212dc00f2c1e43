"""What one training epoch of the authors' ODE-RNN hybrids costs on this machine, per solver
tolerance (issue 31 item 2: the tolerance the cpu campaign can afford).

    OMP_NUM_THREADS=1 nice -n 19 python -m analysis.hybrid_epoch_cost [--model hbnode] [--tols
    1e-3,1e-5,1e-7]
        [--epochs 6] [--windows 64] [--batch 64] [--lr 1e-3] [--device cuda]

Each tolerance trains the registered ``cpu`` config of ``ode_rnn_plane_vibration`` (the authors'
design, the adjoint, the measured series) changed only in the model, the tolerance, the epochs, the
windows, the batch and the rate (constant), on ``--device`` (``cuda``: a lent GPU), and prints the
mean seconds of an epoch (its training steps and the test pass), the NFE of the test pass and of the
backward passes, and the test MSE per epoch. Wall time on a shared CPU: compare tolerances within
one run.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
import warnings
from pathlib import Path


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="hbnode")
    p.add_argument("--tols", default="1e-3,1e-5,1e-7")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument(
        "--windows", type=int, default=64, help="the first windows of each part (0: all)"
    )
    p.add_argument("--batch", type=int, default=64)
    p.add_argument(
        "--lr",
        type=float,
        default=1e-3,
        help="Adam's rate, held constant (the authors' first rate)",
    )
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    args = p.parse_args(argv)
    import torch

    import dynkit.experiments as E
    from dynkit.experiments.hybrids.time_series_hybrids import run_hybrid

    warnings.simplefilter(
        "ignore"
    )  # the float32 rtol floor warning at 1e-7, said once per tolerance
    base = E.get("ode_rnn_plane_vibration").config("cpu")
    data = tuple(pair for pair in base.data if pair[0] != "max_windows") + (
        (("max_windows", args.windows),) if args.windows else ()
    )
    rows = []
    for tol in (float(t) for t in args.tols.split(",")):
        config = dataclasses.replace(
            base,
            model=args.model,
            tol=tol,
            epochs=args.epochs,
            data=data,
            batch_size=args.batch,
            lr=args.lr,
            lr_schedule="constant",
            lr_steps=(),
            nfe_tol=None,
        )
        start = time.perf_counter()
        with torch.device(
            args.device
        ):  # as the runner does: tensors made without a device follow the model
            m = run_hybrid(config, seed=0, out=Path(tempfile.mkdtemp()), device=args.device)[
                "metrics"
            ]
        name = args.model
        row = {
            "tol": tol,
            "seconds": time.perf_counter() - start,
            "per_epoch": m[f"{name}.seconds_per_epoch"],
            "test_nfe": m[f"{name}.nfe_test"],
            "backward_nfe_per_epoch": m[f"{name}.nfe_backward_per_epoch"],
            "test_mse": [m[f"{name}.epoch{e}.test_mse"] for e in range(1, args.epochs + 1)],
        }
        rows.append(row)
        print(
            f"{name} on {args.device} tol={tol:g}: {row['per_epoch']:.2f} s an epoch "
            f"({args.windows or 'all'} windows, batch {args.batch}), "
            f"test NFE {row['test_nfe']:.0f}, backward NFE an epoch "
            f"{row['backward_nfe_per_epoch']:.0f}, "
            f"test MSE by epoch {[round(v, 4) for v in row['test_mse']]}",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()
