"""Running an experiment: one shard per (seed, config point), finished shards reused, local or through Ray."""
from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..io import write_json
from .registry import SCALES, Experiment, get, point_key

SHARD_FILE = "shard.json"
RESULTS_FILE = "results.json"
BACKENDS = ("local", "ray")
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Shard:
    """One unit of work: an experiment at one scale, one seed and one config point."""

    experiment: str
    scale: str
    seed: int
    point: dict
    config: Any
    folder: Path
    device: str = "cpu"

    @property
    def key(self) -> str:
        return point_key(self.seed, self.point)

    def identity(self) -> dict:
        """What a finished shard must match to be reused (the config, not the device or the folder)."""
        return {"experiment": self.experiment, "scale": self.scale, "seed": self.seed, "point": self.point,
                "config": _jsonable(dataclasses.asdict(self.config))}


def _jsonable(x):
    return json.loads(json.dumps(x, default=str))


def finished(shard: Shard) -> dict | None:
    """The stored record of ``shard`` if it finished with the same identity, else None."""
    path = shard.folder / SHARD_FILE
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    same = all(record.get(k) == v for k, v in shard.identity().items())
    return record if same else None


def run_shard(shard: Shard) -> dict:
    """Run one shard into its folder and store its record atomically (the marker of a finished shard)."""
    import torch

    from .registry import EXPERIMENTS

    if shard.experiment not in EXPERIMENTS:  # a fresh Ray worker: fill the registry first
        from . import load_all

        load_all()
    exp = EXPERIMENTS[shard.experiment]
    shard.folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    torch.manual_seed(shard.seed)
    with torch.device(shard.device):  # tensors the run creates without a device follow the chosen one
        result = exp.run(shard.config, seed=shard.seed, out=shard.folder, device=shard.device)
    metrics = result.get("metrics") if isinstance(result, dict) else None
    if not isinstance(metrics, dict) or not all(isinstance(v, (int, float)) for v in metrics.values()):
        raise TypeError(f"experiment {shard.experiment!r} must return a dict with 'metrics': {{name: float}}, got "
                        f"{type(result).__name__}")
    record = {**shard.identity(), "device": shard.device, "seconds": time.perf_counter() - start,
              "metrics": {k: float(v) for k, v in metrics.items()},
              "result": _jsonable({k: v for k, v in result.items() if k != "metrics"})}
    write_json(shard.folder / SHARD_FILE, record)
    return record


def shards(name: str, scale: str = "cpu", seeds: Iterable[int] = (0, 1, 2), out: str | Path = "runs/experiments",
           device: str = "cpu") -> list[Shard]:
    """The shards of a run, seed-major (every config point of seed 0 first)."""
    exp = get(name)
    config = exp.config(scale)
    root = Path(out)
    return [Shard(name, scale, int(seed), point, cfg, root / "shards" / point_key(int(seed), point), device)
            for seed in seeds for point, cfg in exp.config_points(config)]


def run(name: str, scale: str = "cpu", seeds: Sequence[int] = (0, 1, 2), out: str | Path | None = None,
        backend: str = "local", device: str = "cpu", *, address: str | None = None,
        progress: Callable[[str], None] | None = None) -> dict:
    """Run the experiment ``name``: every (seed, config point) shard, then aggregate into ``out/results.json``.

    Parameters
    ----------
    name : str
        A key of :data:`EXPERIMENTS`.
    scale : {"smoke", "cpu", "full"}
    seeds : sequence of int
    out : path, optional
        Default ``runs/experiments/<name>/<scale>``. Shards go to ``out/shards/<seed[-point]>/``; a
        shard whose ``shard.json`` exists with the same config is reused, so an interrupted sweep resumes.
    backend : {"local", "ray"}
        ``"ray"`` submits the missing shards as Ray tasks (``ray.init(address=address)``: a local cluster
        by default, or an existing one); needs the ``ray`` extra.
    device : {"cpu", "cuda"}
        Where the models train (each run function moves its model and data there).
    progress : callable, optional
        Called with one line per shard (reused, done, with its time).

    Returns
    -------
    dict
        The aggregate written to ``out/results.json``: config, seeds, per-shard metrics and per-metric
        mean with 95 % confidence interval over the seeds.
    """
    exp = get(name)
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if device not in DEVICES and not str(device).startswith("cuda:"):
        raise ValueError(f"device must be one of {DEVICES} (or 'cuda:N'), got {device!r}")
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct integers, at least one, got {seeds!r}")
    out = Path(out) if out is not None else Path("runs/experiments") / name / scale
    say = progress or (lambda line: None)
    todo = shards(name, scale, seeds, out, device)
    records: dict[str, dict] = {}
    missing = []
    for i, shard in enumerate(todo, 1):
        done = finished(shard)
        if done is not None:
            records[shard.key] = done
            say(f"[{i}/{len(todo)}] {name} {shard.key}: reused")
        else:
            missing.append(shard)
    if backend == "ray":
        records.update(_run_ray(missing, address, say, len(todo) - len(missing), len(todo)))
    else:
        for j, shard in enumerate(missing, len(todo) - len(missing) + 1):
            record = finished(shard)  # another process working on the same folder may have finished it since
            if record is not None:
                say(f"[{j}/{len(todo)}] {name} {shard.key}: reused (finished meanwhile)")
            else:
                record = run_shard(shard)
                say(f"[{j}/{len(todo)}] {name} {shard.key}: done in {record['seconds']:.1f}s")
            records[shard.key] = record
    ordered = [records[s.key] for s in todo]
    results = aggregate(exp, scale, seeds, ordered)
    write_json(out / RESULTS_FILE, results)
    if exp.render is not None:
        exp.render(results, out)
    return results


def _run_ray(missing: list[Shard], address: str | None, say, n_done: int, n_total: int) -> dict[str, dict]:
    if not missing:
        return {}
    try:
        import ray
    except ImportError:
        raise ValueError("backend='ray' needs Ray: pip install 'dynkit[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(run_shard)
    pending = {remote.remote(shard): shard for shard in missing}
    records = {}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            shard = pending.pop(ref)
            record = ray.get(ref)
            records[shard.key] = record
            n_done += 1
            say(f"[{n_done}/{n_total}] {shard.experiment} {shard.key}: done in {record['seconds']:.1f}s (ray)")
    return records


def mean_ci(values: Sequence[float], level: float = 0.95) -> dict:
    """Mean and two-sided Student-t confidence interval of the mean (``ci_low = ci_high = mean`` for one value)."""
    from scipy import stats

    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(xs)
    if n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n_seeds": 0}
    mean = sum(xs) / n
    if n == 1:
        return {"mean": mean, "ci_low": mean, "ci_high": mean, "n_seeds": 1}
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n_seeds": n}


def per_seed_metrics(results: dict) -> dict[int, dict[str, float]]:
    """``{seed: {metric: value}}``, a seed's shards merged, from an aggregated ``results.json``."""
    merged: dict[int, dict[str, float]] = {}
    for shard in results["shards"]:
        merged.setdefault(int(shard["seed"]), {}).update(shard["metrics"])
    return merged


def aggregate(exp: Experiment, scale: str, seeds: Sequence[int], records: list[dict]) -> dict:
    """The ``results.json`` of a run: its shards' metrics and each metric's mean ± 95 % CI over the seeds."""
    results = {"experiment": exp.name, "scale": scale, "seeds": list(seeds),
               "config": _jsonable(dataclasses.asdict(exp.config(scale))),
               "shards": [{"seed": r["seed"], "point": r["point"], "metrics": r["metrics"], "seconds": r["seconds"],
                           "device": r.get("device", "cpu")} for r in records]}
    by_seed = per_seed_metrics(results)
    names = sorted({m for metrics in by_seed.values() for m in metrics})
    results["metrics"] = {m: {**mean_ci([s[m] for s in by_seed.values() if m in s]),
                              "values": [s.get(m) for s in by_seed.values()]} for m in names}
    return results
