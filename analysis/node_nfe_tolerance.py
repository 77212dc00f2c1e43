"""NFE vs tolerance (Fig. 11 of the review) on trained image models.

Forward and backward (adjoint) NFE per batch of NODE, ANODE, SONODE, HBNODE and GHBNODE at
``rtol = atol`` in {1e-3, ..., 1e-7}, on digits test batches. The models are those trained by
``analysis.node_images --checkpoints DIR`` (``--checkpoints DIR``), or trained here for ``--epochs``.

    python -m analysis.node_images --checkpoints /tmp/node_ckpt ...
    python -m analysis.node_nfe_tolerance --checkpoints /tmp/node_ckpt --out analysis/results/node_nfe_tolerance
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from dynkit.diagnostics import nfe_vs_tolerance
from dynkit.models import from_paper
from dynkit.tasks.node_runs import train_model
from dynkit.tasks.training import load_checkpoint

from .node_common import parser, setup

TOLERANCES = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


def main(argv=None) -> dict:
    p = parser(__doc__.splitlines()[0], "results/node_nfe_tolerance")
    p.add_argument("--task", default="digits", choices=("digits", "fashion_mnist"))
    p.add_argument("--checkpoints", type=Path, default=None, help="folder with <model>/checkpoint.pt")
    p.add_argument("--epochs", type=int, default=3, help="training epochs when no checkpoints are given")
    p.add_argument("--batches", type=int, default=None, help="test batches per tolerance (3; 10 with --full)")
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args(argv)
    setup(args)
    models = {}
    for name in args.models:
        if args.checkpoints is not None:
            torch.manual_seed(args.seed)
            net = from_paper(name, args.task, adjoint=True)
            net.load_state_dict(load_checkpoint(args.checkpoints / name / "checkpoint.pt")["model"])  # never unpickles code
        else:
            net = train_model(name, args.task, epochs=args.epochs, seed=args.seed, quiet=args.quiet)[0]
        models[name] = net
    results = nfe_vs_tolerance(models, task=args.task, tolerances=TOLERANCES, n_batches=args.batches or
                               (10 if args.full else 3), batch_size=args.batch_size, seed=args.seed, out=args.out,
                               quiet=args.quiet)
    if not args.quiet:
        for name, per_tol in results.items():
            row = "  ".join(f"{t}: {e['forward_nfe']['mean']:5.0f}/{e['backward_nfe']['mean']:5.0f}"
                            for t, e in per_tol.items())
            ratio = [e["backward_nfe"]["mean"] / e["forward_nfe"]["mean"] for e in per_tol.values()]
            print(f"{name:8s} fwd/bwd  {row}   bwd/fwd {np.round(ratio, 2).tolist()}")
    return results


if __name__ == "__main__":
    main()
