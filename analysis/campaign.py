"""A campaign's cost and state: each shard's time, and what is done, running, stale and left.

    python -m analysis.campaign [EXPERIMENT ...]
    python -m analysis.campaign status NAME [--scale S] [--seeds 0,1,2 | --plan FILE] [--out DIR]

The first form reads ``analysis/results/<experiment>/results.json`` (every shard's ``seconds``, run
with ``OMP_NUM_THREADS=1``: one core per shard) and prints one line per shard and the total in
core-hours.

``status`` looks at the shards a run of ``NAME`` would compute (the seeds of its committed plan,
``analysis/plans/NAME.json``, unless ``--seeds`` or ``--plan`` say otherwise; the scale of its
results of record unless ``--scale``) in ``--out`` (default ``analysis/results/NAME``) and sorts
each into

* **done**: a finished shard the runner would reuse (its record intact and made by today's code and
  config);
* **running**: another process holds the shard's claim now (``dynkit run`` computing it);
* **stale**: a record is there but the runner would recompute it (the reason is printed);
* **resumable**: not finished, but its work folder (``shards/<key>/work/``) holds state written
  by the shard's own identity, which a rerun resumes from (the files kept are counted; a running
  shard's are shown beside it);
* **left**: nothing there yet;

with the core-hours spent on the done shards and an estimate of those left (their mean time per
shard times the shards not done). It only reads: nothing is computed, claimed or written. Run it
with the campaign's code (a pinned worktree first on ``PYTHONPATH``): identities are today's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
PLANS = ROOT / "plans"


def shard_times(experiments: list[str] | None = None) -> list[tuple[str, int, dict, float]]:
    """``(experiment, seed, point, seconds)`` for every shard of the named (default: every)
    results of record."""
    from dynkit.io import read_regular_text

    rows = []
    for path in sorted(RESULTS.glob("*/results.json")):
        if experiments and path.parent.name not in experiments:
            continue
        results = json.loads(read_regular_text(path, "results"))
        for shard in results.get("shards", ()) if isinstance(results, dict) else ():
            rows.append(
                (
                    path.parent.name,
                    int(shard["seed"]),
                    shard.get("point", {}),
                    float(shard["seconds"]),
                )
            )
    return rows


@dataclass
class Status:
    """Where a campaign stands: shard keys per state, the seconds of the done ones, why the stale
    ones are."""

    experiment: str
    scale: str
    out: Path
    done: dict[str, float] = field(default_factory=dict)
    running: list[str] = field(default_factory=list)
    stale: dict[str, str] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)
    kept: dict[str, int] = field(default_factory=dict)
    """Files of resumable state in the work folder of each shard not done that has some."""

    @property
    def resumable(self) -> list[str]:
        return [key for key in self.kept if key not in self.running]

    @property
    def total(self) -> int:
        return (
            len(self.done)
            + len(self.running)
            + len(self.stale)
            + len(self.resumable)
            + len(self.left)
        )

    @property
    def core_hours_done(self) -> float:
        return sum(self.done.values()) / 3600

    @property
    def core_hours_left(self) -> float | None:
        """The done shards' mean time times the shards not done; None before any shard is done."""
        if not self.done:
            return None
        return self.core_hours_done / len(self.done) * (self.total - len(self.done))

    def _stale_by_reason(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for key, why in self.stale.items():
            groups.setdefault(why, []).append(key)
        return groups

    def lines(self) -> list[str]:
        left = self.core_hours_left
        estimate = "unknown (no shard done yet)" if left is None else f"about {left:.2f}"
        out = [
            f"{self.experiment} at scale {self.scale!r} in {self.out}: {self.total} shards",
            f"  done     {len(self.done):4d}   {self.core_hours_done:.2f} core-hours",
            f"  running  {len(self.running):4d}   {self._keys(self.running)}",
            f"  resumable {len(self.resumable):3d}   {self._keys(self.resumable)}",
            f"  stale    {len(self.stale):4d}",
            *(
                f"             {len(keys)} "
                f"({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''}): {why}"
                for why, keys in self._stale_by_reason().items()
            ),
            f"  left     {len(self.left):4d}   {', '.join(self.left)}",
            f"  core-hours left: {estimate}",
        ]
        return [line.rstrip() for line in out]

    def _keys(self, keys: list[str]) -> str:
        return ", ".join(f"{k} ({self.kept[k]} files kept)" if k in self.kept else k for k in keys)


def _held_elsewhere(shard) -> bool:
    """Whether another process holds ``shard``'s claim (probed without waiting, released at
    once)."""
    from dynkit.experiments.runner import CLAIM_FILE, claimed

    if not (shard.folder / CLAIM_FILE).is_file():
        return False
    with claimed(shard, wait=False) as mine:
        return not mine


def _kept_state(shard) -> int | None:
    """How many files of state the shard's work folder holds, when the shard's own identity wrote
    it (what a rerun resumes from); None when there is none or another identity's."""
    from dynkit.experiments.registry import WORK_DIR
    from dynkit.experiments.runner import WORK_IDENTITY, _identity_flaw
    from dynkit.io import read_regular_text

    work = shard.folder / WORK_DIR
    mark = work / WORK_IDENTITY
    if work.is_symlink() or not mark.is_file():
        return None
    try:
        stored = json.loads(read_regular_text(mark, "work identity", follow_links=False))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or _identity_flaw(stored, shard) is not None:
        return None
    return sum(1 for p in work.rglob("*") if p.is_file() and p != mark)


def status(
    name: str,
    scale: str | None = None,
    seeds=None,
    out: str | Path | None = None,
    plan: str | Path | None = None,
) -> Status:
    """The :class:`Status` of ``name``'s campaign (see the module's docstring for the defaults)."""
    from dynkit.experiments import load_all
    from dynkit.experiments.judging.plans import load_plan
    from dynkit.experiments.runner import finished, shards
    from dynkit.io import read_regular_text

    load_all()
    out = Path(out) if out is not None else RESULTS / name
    if seeds is None:
        plan_path = Path(plan) if plan is not None else PLANS / f"{name}.json"
        if not plan_path.is_file():
            raise ValueError(
                f"seeds must be given (--seeds) when {name!r} has no plan, got no --seeds and no "
                f"plan at {str(plan_path)!r}"
            )
        seeds = load_plan(plan_path).seeds
    if scale is None:
        results = out / "results.json"
        scale = (
            json.loads(read_regular_text(results, "results")).get("scale")
            if results.is_file()
            else "cpu"
        )
    result = Status(name, scale, out)
    for shard in shards(name, scale, seeds, out):
        reasons: list[str] = []
        record = finished(shard, notice=reasons.append) if shard.path.exists() else None
        if record is not None:
            result.done[shard.key] = float(record["seconds"])
            continue
        kept = _kept_state(shard)
        if kept is not None:
            result.kept[shard.key] = kept
        if _held_elsewhere(shard):
            result.running.append(shard.key)
        elif kept is not None:
            continue  # resumable (Status.resumable: state kept, not running)
        elif reasons:
            result.stale[shard.key] = reasons[0].split(": ", 1)[-1]
        else:
            result.left.append(shard.key)
    return result


def _seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds must be comma-separated integers, got {text!r}"
        ) from None


def main(argv: list[str] | None = None) -> float:
    import sys

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["status"]:
        p = argparse.ArgumentParser(
            prog="python -m analysis.campaign status",
            description="What a campaign has done, is running and has left.",
        )
        p.add_argument("name", help="the experiment (dynkit run NAME)")
        p.add_argument(
            "--scale", default=None, help="default: the scale of the results of record, else cpu"
        )
        group = p.add_mutually_exclusive_group()
        group.add_argument(
            "--seeds", type=_seeds, default=None, help="default: the seeds of the plan"
        )
        group.add_argument("--plan", default=None, help="default: analysis/plans/NAME.json")
        p.add_argument("--out", default=None, help="default: analysis/results/NAME")
        args = p.parse_args(argv[1:])
        with contextlib.suppress(BrokenPipeError):
            try:
                state = status(args.name, args.scale, args.seeds, args.out, args.plan)
            except (KeyError, ValueError) as err:
                p.error(str(err).strip("'\""))
            print("\n".join(state.lines()))
        return state.core_hours_done
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiments", nargs="*", help="result folders (default: all with shards)")
    args = p.parse_args(argv)
    rows = shard_times(args.experiments or None)
    for exp, seed, point, seconds in rows:
        print(f"{exp:32s} seed {seed:2d} {json.dumps(point):40s} {seconds:9.1f} s")
    total = sum(r[3] for r in rows) / 3600
    print(f"{len(rows)} shards, {total:.2f} core-hours")
    return total


if __name__ == "__main__":
    main()
