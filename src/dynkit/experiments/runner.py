"""Running an experiment: one shard per (seed, config point), finished shards reused, local or
through Ray.

A shard's record (``shard.json``) is self-describing and verifiable: it carries the shard's
identity (experiment, scale, seed, config point, config and the *code*: the dynkit, Python (minor),
numpy, scipy and torch versions and the digests of every dynkit module the run imports, see
:mod:`~dynkit.experiments.code_closure`) and a SHA-256 of its own content. :func:`finished` reuses
a record only when it is a regular file with one name inside the run folder (a link is never
followed, a hard link never trusted), is well-formed, matches the identity and the hash; anything
else is recomputed, with a one-line notice naming the file (and, for other code, the module that
changed).

What the hashes promise: integrity against *accidents* -- a damaged or hand-edited record, a record
computed by other code or other library versions is not reused. What they do not: an unkeyed SHA-256
is no signature, so a record forged by someone who can write the folder (with its hash recomputed)
is accepted; keep results you rely on where only you can write, and the results of record under
version control. A per-shard claim (an advisory ``flock`` on ``.claim`` in the shard's folder,
released by the kernel if the process dies) keeps concurrent runners on one ``out`` from computing
the same shard twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import shutil
import stat
import time
import warnings
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from .. import _checks
from ..io import (
    check_output_path,
    check_own_folder,
    check_writable_dir,
    jsonable,
    read_regular_bytes,
    read_regular_text,
    remove_orphan_temporaries,
    versions,
    write_json,
)
from .code_closure import describe_change, same_code
from .registry import RUN_SCALES, WORK_DIR, Experiment, get, point_key

__all__ = [
    "SHARD_FILE",
    "RESULTS_FILE",
    "RUN_FOLDER_MARKS",
    "CLAIM_FILE",
    "WORK_IDENTITY",
    "BACKENDS",
    "DEVICES",
    "SEED_RANGE",
    "NON_FINITE",
    "ShardRecomputed",
    "Shard",
    "content_hash",
    "finished",
    "claimed",
    "run_shard",
    "device_name",
    "own_work_folder",
    "shards",
    "check_seeds",
    "run",
    "mean_ci",
    "per_seed_metrics",
    "aggregate",
]

SHARD_FILE = "shard.json"
RESULTS_FILE = "results.json"
RUN_FOLDER_MARKS = (
    "shards",
    RESULTS_FILE,
)  # what a run writes in its folder: a folder without either is not one
CLAIM_FILE = ".claim"
WORK_IDENTITY = "identity.json"  # in WORK_DIR: whose state it holds
BACKENDS = ("local", "ray")
DEVICES = _checks.DEVICE_FORMS
SEED_RANGE = (0, 2**32 - 1)
"""Seeds every generator accepts (``numpy.random.seed`` takes at most 2**32 - 1)."""
NON_FINITE = ("nan", "inf", "-inf")
"""How :func:`dynkit.io.jsonable` stores a non-finite metric."""


class ShardRecomputed(UserWarning):
    """A stored shard could not be reused (damaged, edited, or written by other code) and is
    recomputed."""


@dataclass(frozen=True)
class Shard:
    """One unit of work: an experiment at one scale, one seed and one config point, computed by
    ``code``."""

    experiment: str
    scale: str
    seed: int
    point: dict
    config: Any
    folder: Path
    device: str = "cpu"
    code: dict | None = None

    @property
    def key(self) -> str:
        return point_key(self.seed, self.point)

    @property
    def path(self) -> Path:
        return self.folder / SHARD_FILE

    def identity(self) -> dict:
        """What a finished shard must match to be reused: the config and the code, not the device
        or the folder."""
        return {
            "experiment": self.experiment,
            "scale": self.scale,
            "seed": self.seed,
            "point": jsonable(self.point),
            "config": jsonable(dataclasses.asdict(self.config)),
            "code": self.code,
        }


def content_hash(record: dict) -> str:
    """SHA-256 of ``record`` without its ``"sha256"`` entry, over canonical strict JSON (sorted
    keys)."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    text = json.dumps(
        body, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _is_metric(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or value in NON_FINITE


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON (RFC 8259)")


def _flaw(record: Any, shard: Shard) -> str | None:
    """Why ``record`` (parsed JSON) cannot stand for ``shard``; None if it can."""
    if not isinstance(record, dict):
        return f"not a JSON object (a {type(record).__name__})"
    if "code" not in record and "sha256" not in record:
        return "written before shards recorded their code and content hash"
    missing = [k for k in (*shard.identity(), "metrics", "seconds", "sha256") if k not in record]
    if missing:
        return f"missing {', '.join(map(repr, missing))}"
    metrics, seconds = record["metrics"], record["seconds"]
    if not isinstance(metrics, dict) or not all(
        isinstance(k, str) and _is_metric(v) for k, v in metrics.items()
    ):
        return f"'metrics' must map names to numbers, got {json.dumps(metrics)[:60]}"
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 <= seconds < math.inf
    ):
        return f"'seconds' must be a number >= 0, got {json.dumps(seconds)[:60]}"
    if record["sha256"] != content_hash(record):
        return "its content does not match its sha256 (edited or damaged)"
    return _identity_flaw(record, shard)


def _identity_flaw(record: dict, shard: Shard) -> str | None:
    """Why ``record``'s identity fields are not ``shard``'s (same config, same code); None if
    they are."""
    for key, value in shard.identity().items():
        if key not in record:
            return f"missing {key!r}"
        if key == "code":
            if not isinstance(record[key], dict) or "modules" not in record[key]:
                return (
                    "written by other code (recorded with whole-file hashes, before "
                    "shards carried per-module code digests)"
                )
            if not same_code(record[key], value):
                return f"written by other code ({describe_change(record[key], value)})"
        elif record[key] != value:
            return (
                f"its {key} differs ({json.dumps(record[key])[:60]}, now {json.dumps(value)[:60]})"
            )
    return None


def finished(shard: Shard, notice: Callable[[str], None] | None = None) -> dict | None:
    """The stored record of ``shard`` if it is well-formed and matches the shard's identity and its
    own content hash, else None.

    A file that exists but cannot be reused (not UTF-8, not JSON, not a record, written by other
    code, edited) is reported through ``notice`` in one line naming it, and will be recomputed.
    """
    path = shard.path
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        mode, flaw = None, f"cannot be read ({err.strerror or err})"
    try:
        if mode is not None:
            flaw = _outside_flaw(path, mode, shard.folder.parent.parent)
        if flaw is None:
            flaw, data = _read_single(path)
        if flaw is None:
            record = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
            flaw = _flaw(record, shard)
    except UnicodeDecodeError:
        flaw = "not UTF-8 text"
    except (ValueError, RecursionError) as err:
        flaw = f"not valid JSON ({str(err).splitlines()[0][:120]})"
    except OSError as err:
        flaw = f"cannot be read ({err.strerror or err})"
    if flaw is None:
        return record
    if notice is not None:
        notice(f"recomputing shard {str(path)!r}: {flaw}")
    return None


def _outside_flaw(path: Path, mode: int, root: Path) -> str | None:
    """Why the file at ``path`` (``lstat`` mode ``mode``) is not read as a shard of the run
    folder ``root``: not a regular file (a link, even to a file inside, is never followed), or
    reached through a linked folder that leads out of ``root``."""
    from ..io import file_kind

    if not stat.S_ISREG(mode):
        what = file_kind(mode) + (f" (to {os.readlink(path)!r})" if stat.S_ISLNK(mode) else "")
        return (
            f"{what}, not a regular file: shards are read only as regular files inside out, "
            f"never through a link"
        )
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        return (
            f"it lies outside out ({real!r} through a linked folder): shards are read only "
            f"inside out"
        )
    return None


def _check_inside(shard: Shard, out: Path) -> None:
    """A ValueError naming the shard's file if it cannot be read and written as a regular file
    inside ``out`` (a link there, or a linked folder leading out of ``out``): the run refuses
    rather than replace a link."""
    check_output_path(shard.path, "out")
    real, inside = os.path.realpath(shard.folder), os.path.realpath(out)
    if os.path.commonpath([real, inside]) != inside:
        raise ValueError(
            f"out must hold its shards inside it, got {str(shard.folder)!r}, which leads to "
            f"{real!r} "
            f"through a linked folder; remove the link"
        )


def _read_single(path: Path) -> tuple[str | None, bytes]:
    """(why not, b"") or (None, the bytes of ``path``): a regular file with one name only. A hard
    link is a second name for a file that may be kept, and changed, outside ``out``: nothing proves
    the run wrote it, so it is recomputed (the fresh record replaces the name; the other file is
    left alone)."""
    try:
        return None, read_regular_bytes(path, "shard", single_link=True, follow_links=False)
    except ValueError as err:
        return f"{err}; shards are reused only as files their run wrote", b""


@contextlib.contextmanager
def claimed(shard: Shard, wait: bool) -> Iterator[bool]:
    """Hold the shard's claim (an exclusive ``flock`` on ``folder/.claim``) inside the block;
    yields False at once when another process holds it and ``wait`` is False. The kernel releases
    a dead process's claim, so a crash never leaves a stale one. Without ``fcntl`` (Windows)
    every claim succeeds."""
    try:
        import fcntl
    except (
        ImportError
    ):  # pragma: no cover - no advisory locks: concurrent runners may duplicate work
        yield True
        return
    shard.folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(
        shard.folder / CLAIM_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666
    )
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def run_shard(shard: Shard) -> dict:
    """Run one shard into its folder and store its record atomically (the marker of a finished
    shard).

    Call it holding the shard's claim (:func:`claimed`): it first removes the temporaries that a
    runner killed while writing into the folder left behind."""
    import torch

    from .registry import EXPERIMENTS

    if shard.experiment not in EXPERIMENTS:  # a fresh Ray worker: fill the registry first
        from . import load_all

        load_all()
    exp = EXPERIMENTS[shard.experiment]
    shard.folder.mkdir(parents=True, exist_ok=True)
    remove_orphan_temporaries(shard.folder)  # ours to clean: the claim keeps other writers out
    work = own_work_folder(shard)
    start = time.perf_counter()
    torch.manual_seed(shard.seed)
    with torch.device(
        shard.device
    ):  # tensors the run creates without a device follow the chosen one
        result = exp.run(shard.config, seed=shard.seed, out=shard.folder, device=shard.device)
    metrics = result.get("metrics") if isinstance(result, dict) else None
    if not isinstance(metrics, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) for k, v in metrics.items()
    ):
        raise TypeError(
            f"experiment {shard.experiment!r} must return a dict with 'metrics': {{name: "
            f"float}}, got "
            f"{type(result).__name__}"
        )
    before = result.get("seconds_before", 0.0)  # spent by earlier runs it resumed from
    if (
        isinstance(before, bool)
        or not isinstance(before, (int, float))
        or not 0 <= before < math.inf
    ):
        raise TypeError(
            f"experiment {shard.experiment!r} must give 'seconds_before' as a number >= 0, "
            f"got {before!r}"
        )
    record = jsonable(
        {
            **shard.identity(),
            "device": shard.device,
            "device_name": device_name(shard.device),
            "seconds": time.perf_counter() - start + before,
            "metrics": {k: float(v) for k, v in metrics.items()},
            "result": {k: v for k, v in result.items() if k != "metrics"},
            "versions": versions(),
        }
    )
    record["sha256"] = content_hash(record)
    write_json(shard.path, record)
    # the record stands for the run now: its checkpoints are not needed (gone already if a runner
    # without claims, where advisory locks are missing, finished the same shard first)
    shutil.rmtree(work, ignore_errors=True)
    return record


def device_name(device: str) -> str:
    """What ``device`` is, for a shard's record: the GPU's model for ``cuda[:N]``
    (``torch.cuda.get_device_name``), else (or where torch cannot name it) the device's name."""
    import torch

    if str(device).startswith("cuda"):
        try:
            return torch.cuda.get_device_name(torch.device(device))
        except (AssertionError, RuntimeError):  # a CPU-only build with CUDA faked (the tests)
            pass
    return str(device)


def own_work_folder(shard: Shard) -> Path:
    """``shard.folder / WORK_DIR``, holding only state that this shard's identity wrote.

    State left by an interrupted run of the same config and code is kept (the run resumes from
    it); state of another identity (an edited config, other code), or without a readable
    identity, is removed first, so a run never resumes from checkpoints it cannot verify as its
    own."""
    work = shard.folder / WORK_DIR
    mark = work / WORK_IDENTITY
    if os.path.islink(work) or (os.path.lexists(work) and not os.path.isdir(work)):
        os.unlink(work)  # never state reached through a link: it may belong to anything
    elif os.path.lexists(work):
        try:
            stored = json.loads(read_regular_text(mark, "work identity", follow_links=False))
            flaw = _identity_flaw(stored, shard) if isinstance(stored, dict) else "not a record"
        except (OSError, ValueError) as err:
            flaw = str(err)
        if flaw is not None:
            shutil.rmtree(work)
    for attempt in range(3):  # a runner without claims (no advisory locks) may remove it meanwhile
        try:
            if not os.path.lexists(mark):
                work.mkdir(exist_ok=True)
                write_json(mark, jsonable(shard.identity()))
            break
        except FileNotFoundError:
            if attempt == 2:
                raise
    return work


def _run_claimed(shard: Shard) -> tuple[dict, bool]:
    """(record, computed here): wait for the shard's claim, then reuse what a concurrent runner
    finished or run it."""
    with claimed(shard, wait=True):
        record = finished(shard)
        return (record, False) if record is not None else (run_shard(shard), True)


def shards(
    name: str,
    scale: str = "cpu",
    seeds: Iterable[int] = (0, 1, 2),
    out: str | Path = "runs/experiments",
    device: str = "cpu",
) -> list[Shard]:
    """The shards of a run, seed-major (every config point of seed 0 first)."""
    exp = get(name)
    config = exp.config(scale)
    seeds = check_seeds(seeds)
    root = Path(out)
    code = exp.code()
    return [
        Shard(name, scale, seed, point, cfg, root / "shards" / point_key(seed, point), device, code)
        for seed in seeds
        for point, cfg in exp.config_points(config)
    ]


def check_seeds(seeds: Any, name: str = "seeds") -> list[int]:
    """``seeds`` as a list of distinct ints in :data:`SEED_RANGE`, at least one (bools, floats
    and strings are not seeds: ``"012"`` is not (0, 1, 2))."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise TypeError(
            f"{name} must be a sequence of integers, got {type(seeds).__name__} {seeds!r:.60}"
        )
    seeds = list(seeds)
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, Integral)]
    if bad:
        raise TypeError(
            f"{name} must be integers, got {type(bad[0]).__name__} {bad[0]!r:.60} in {seeds!r:.80}"
        )
    low, high = SEED_RANGE
    if not seeds or len(set(seeds)) != len(seeds) or not all(low <= s <= high for s in seeds):
        raise ValueError(
            f"{name} must be distinct integers in [{low}, {high}], at least one, got {seeds!r:.80}"
        )
    return [int(s) for s in seeds]


def run(
    name: str,
    scale: str = "cpu",
    seeds: Sequence[int] = (0, 1, 2),
    out: str | Path | None = None,
    backend: str = "local",
    device: str = "cpu",
    *,
    address: str | None = None,
    progress: Callable[[str], None] | None = None,
    notice: Callable[[str], None] | None = None,
) -> dict:
    """Run the experiment ``name``: every (seed, config point) shard, then aggregate into
    ``out/results.json``.

    Every argument is checked before any work (``out`` must be a writable folder, ``device``
    present).

    Parameters
    ----------
    name : str
        A key of :data:`EXPERIMENTS`.
    scale : {"smoke", "cpu", "full", "paper"}
        ``"paper"``: the authors' recipe (:func:`dynkit.experiments.recipes.paper_config`); refused,
        before any work, with a :class:`~dynkit.experiments.recipes.RecipeError` naming each piece
        the code still lacks.
    seeds : sequence of int
        Distinct integers in [0, 2**32 - 1].
    out : path, optional
        Default ``runs/experiments/<name>/<scale>``. Shards go to ``out/shards/<seed[-point]>/``; a
        shard whose ``shard.json`` is intact and was made with the same config and code is reused,
        so an interrupted sweep resumes. Several runs may share ``out``: each shard is computed by
        one of them.
    backend : {"local", "ray"}
        ``"ray"`` submits the missing shards as Ray tasks (``ray.init(address=address)``: a local
        cluster by default, or an existing one); needs the ``ray`` extra.
    device : {"cpu", "cuda", "cuda:N", "mps"}
        Where the models train (each run function moves its model and data there); one this machine
        lacks is refused before any work, naming what it has.
    address : str, optional
        A Ray cluster's address (``backend="ray"`` only).
    progress : callable, optional
        Called with one line per shard (reused, done, with its time).
    notice : callable, optional
        Called with one line naming each stored shard that cannot be reused and is recomputed
        (damaged, edited, or from other code); default: a :class:`ShardRecomputed` warning.

    Returns
    -------
    dict
        The aggregate written to ``out/results.json``: config, seeds, per-shard metrics and
        per-metric mean with 95 % confidence interval over the seeds.
    """
    exp = get(name)
    if scale not in RUN_SCALES:
        raise ValueError(f"scale must be one of {RUN_SCALES}, got {scale!r}")
    exp.config(
        scale
    )  # before any work: the paper scale refuses here when the code cannot run the recipe
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if address is not None and backend != "ray":
        raise ValueError(
            f"address is for backend='ray' (a Ray cluster), got address={address!r} with "
            f"backend={backend!r}"
        )
    seeds = check_seeds(seeds)
    device = _checks.device(device)
    out = _checks.path(out, "out") if out is not None else Path("runs/experiments") / name / scale
    check_own_folder(out, "out", RUN_FOLDER_MARKS)
    check_writable_dir(out, "out")
    say = progress or (lambda line: None)
    tell = notice or (lambda line: warnings.warn(line, ShardRecomputed, stacklevel=4))
    todo = shards(name, scale, seeds, out, device)
    check_output_path(out / RESULTS_FILE, "out")
    for shard in todo:  # before any work: nothing is read or written through a link out of `out`
        _check_inside(shard, out)
    records: dict[str, dict] = {}
    missing = []
    for i, shard in enumerate(todo, 1):
        done = finished(shard, tell)
        if done is not None:
            records[shard.key] = done
            say(f"[{i}/{len(todo)}] {name} {shard.key}: reused")
        else:
            missing.append(shard)
    if backend == "ray":
        records.update(_run_ray(missing, address, say, len(todo) - len(missing), len(todo)))
    else:
        records.update(_run_local(missing, say, len(todo) - len(missing), len(todo)))
    ordered = [records[s.key] for s in todo]
    results = aggregate(exp, scale, seeds, ordered)
    write_json(out / RESULTS_FILE, results)
    if exp.render is not None:
        exp.render(results, out)
    return results


def _run_local(missing: list[Shard], say, n_done: int, n_total: int) -> dict[str, dict]:
    """Run the missing shards here; one that another runner has claimed is left to it and waited
    for last."""
    records, later = {}, []
    for shard in missing:
        with claimed(shard, wait=False) as mine:
            if not mine:
                later.append(shard)
                continue
            record = finished(
                shard
            )  # another process working on the same folder may have finished it since
            computed = record is None
            if computed:
                record = run_shard(shard)
        records[shard.key] = record
        n_done += 1
        say(
            f"[{n_done}/{n_total}] {shard.experiment} {shard.key}: "
            + (f"done in {record['seconds']:.1f}s" if computed else "reused (finished meanwhile)")
        )
    for shard in later:
        record, computed = _run_claimed(
            shard
        )  # computed here only if the other runner stopped without it
        records[shard.key] = record
        n_done += 1
        say(
            f"[{n_done}/{n_total}] {shard.experiment} {shard.key}: "
            + (
                f"done in {record['seconds']:.1f}s"
                if computed
                else "reused (finished by a concurrent run)"
            )
        )
    return records


def _run_ray(
    missing: list[Shard], address: str | None, say, n_done: int, n_total: int
) -> dict[str, dict]:
    if not missing:
        return {}
    try:
        import ray
    except ImportError:
        raise ValueError("backend='ray' needs Ray: pip install 'dynkit[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(_run_claimed)
    pending = {remote.remote(shard): shard for shard in missing}
    records = {}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            shard = pending.pop(ref)
            record, computed = ray.get(ref)
            records[shard.key] = record
            n_done += 1
            say(
                f"[{n_done}/{n_total}] {shard.experiment} {shard.key}: "
                + (
                    f"done in {record['seconds']:.1f}s (ray)"
                    if computed
                    else "reused (finished meanwhile)"
                )
            )
    return records


def mean_ci(values: Sequence[float], level: float = 0.95) -> dict:
    """Mean and two-sided Student-t confidence interval of the mean (``ci_low = ci_high = mean``
    for one value)."""
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
    """``{seed: {metric: value}}``, a seed's shards merged, from an aggregated ``results.json``
    (the strings ``"nan"``, ``"inf"``, ``"-inf"`` that stand for non-finite metrics in JSON back
    to floats)."""
    merged: dict[int, dict[str, float]] = {}
    for shard in results["shards"]:
        merged.setdefault(int(shard["seed"]), {}).update(
            {k: float(v) if v in NON_FINITE else v for k, v in shard["metrics"].items()}
        )  # JSON has no NaN
    return merged


def aggregate(exp: Experiment, scale: str, seeds: Sequence[int], records: list[dict]) -> dict:
    """The ``results.json`` of a run: its shards' metrics and each metric's mean ± 95 % CI over
    the seeds."""
    results = {
        "experiment": exp.name,
        "scale": scale,
        "seeds": list(seeds),
        "config": jsonable(dataclasses.asdict(exp.config(scale))),
        "shards": [
            {
                "seed": r["seed"],
                "point": r["point"],
                "metrics": r["metrics"],
                "seconds": r["seconds"],
                "device": r.get("device", "cpu"),
                "device_name": r.get("device_name", r.get("device", "cpu")),
            }
            for r in records
        ],
    }
    by_seed = per_seed_metrics(results)
    names = sorted({m for metrics in by_seed.values() for m in metrics})
    results["metrics"] = jsonable(
        {
            m: {
                **mean_ci([s[m] for s in by_seed.values() if m in s]),
                "values": [s.get(m) for s in by_seed.values()],
            }
            for m in names
        }
    )
    return results
