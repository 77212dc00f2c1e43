"""The registry of experiments: a name, a config dataclass per scale, the config points and a run function."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

SCALES = ("smoke", "cpu", "full")
"""``smoke``: seconds (the tests); ``cpu``: minutes on 2 cores (results of record); ``full``: the paper's size
(a GPU)."""
PAPER_SCALE = "paper"
"""Not a registered config: the authors' recipe, built from the experiment's recipe
(:func:`dynkit.experiments.recipes.paper_config`); it refuses while the code lacks a piece of the recipe."""
RUN_SCALES = (*SCALES, PAPER_SCALE)
"""The scales ``dynkit run`` accepts."""

RunFunction = Callable[..., dict]
"""``run(config, *, seed: int, out: Path, device: str) -> {"metrics": {name: float}, ...}`` for one shard."""


@dataclass(frozen=True)
class Experiment:
    """One registered experiment.

    Parameters
    ----------
    name : str
        The registry key (``dynkit run NAME``).
    run : callable
        ``run(config, *, seed, out, device) -> dict`` runs one shard (one seed, one config point) into
        the folder ``out`` and returns a JSON-able dict whose ``"metrics"`` maps metric names to floats.
        Metric names must be unique across the config points of one seed (put the point in the name,
        e.g. ``"hbnode.forward_nfe@1e-05"``): the ledger merges a seed's shards into one dict.
    scales : mapping
        ``{"smoke": config, "cpu": config, "full": config}``, instances of one frozen dataclass.
    points : callable, optional
        ``points(config) -> [dict, ...]``: the config points of a sweep, each a dict of field
        overrides applied with :func:`dataclasses.replace`; default one point, ``{}``.
    summary : str
        One line: what the experiment measures, with the paper's figure.
    render : callable, optional
        ``render(results, out)`` draws the figures across seeds from the aggregated ``results.json``.
    module : str, optional
        The module whose source is the experiment's code (default ``run.__module__``): a hash of its
        source is part of every shard's identity, so editing it makes stored shards stale.
    """

    name: str
    run: RunFunction
    scales: Mapping[str, Any]
    points: Callable[[Any], Sequence[dict]] | None = None
    summary: str = ""
    render: Callable[[dict, Path], None] | None = None
    module: str = ""

    def __post_init__(self):
        missing = [s for s in SCALES if s not in self.scales]
        if missing:
            raise ValueError(f"experiment {self.name!r} needs configs for the scales {SCALES}, missing {missing}")
        kinds = {type(c) for c in self.scales.values()}
        if len(kinds) != 1 or not dataclasses.is_dataclass(next(iter(kinds))):
            raise TypeError(f"experiment {self.name!r}: the scales must be instances of one dataclass, got "
                            f"{sorted(k.__name__ for k in kinds)}")

    def code(self) -> dict:
        """The code that computes a shard (see :func:`code_identity`)."""
        return code_identity(self.module or self.run.__module__)

    def config(self, scale: str) -> Any:
        """The config dataclass of ``scale``; ``"paper"``: built from the experiment's recipe (a
        :class:`~dynkit.experiments.recipes.RecipeError` names what the code lacks to run it, or that there is no
        recipe)."""
        if scale == PAPER_SCALE:
            from .recipes import paper_config

            return paper_config(self)
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {RUN_SCALES}, got {scale!r}")
        return self.scales[scale]

    def config_points(self, config: Any) -> list[tuple[dict, Any]]:
        """``[(point, config with the point applied), ...]`` of one scale's config."""
        points = list(self.points(config)) if self.points is not None else [{}]
        return [(dict(p), dataclasses.replace(config, **p)) for p in points]


PACKAGE_ROOT = Path(__file__).resolve().parents[1]
"""The ``dynkit`` package folder whose sources a shard's code identity hashes."""
ABOVE_EXPERIMENTS = ("cli.py", "report")
"""Parts of the package above the experiments layer (the import-linter contract keeps experiments from importing
them), left out of the code identity."""
MACHINERY = ("registry.py", "runner.py")
"""Modules of the experiments layer that run every shard, always in its code identity."""
LIBRARIES = ("numpy", "scipy", "torch")
"""Packages whose versions are part of a shard's code identity."""


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _experiment_imports(path: Path) -> set[str]:
    """The ``dynkit.experiments`` modules ``path`` imports anywhere in it (at the top or inside functions), as
    file names (``"scripting.py"``), read from its syntax tree: absolute and relative imports, and
    ``from . import name`` of a submodule."""
    folder = PACKAGE_ROOT / "experiments"
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return set()
    inside = path.resolve().parent == folder
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            elif inside and node.level == 1:
                base = "dynkit.experiments" + (f".{node.module}" if node.module else "")
            elif inside and node.level == 2:
                base = "dynkit" + (f".{node.module}" if node.module else "")
            else:
                continue
            dotted = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in dotted:
            parts = name.split(".")
            if parts[:2] == ["dynkit", "experiments"] and len(parts) >= 3 and (folder / f"{parts[2]}.py").is_file():
                found.add(f"{parts[2]}.py")
    return found


def code_files(module: str) -> list[Path]:
    """The source files a shard of an experiment defined in ``module`` depends on (sorted).

    Every file of the ``dynkit`` package below the experiments layer (solvers, symbolic, theory,
    diagnostics, models, tasks, ``io``, ``__init__``, ...), whether the experiment imports it or reaches it
    lazily (``dk.models``); of the experiments layer, the machinery (:data:`MACHINERY`) and the experiment's
    own module with every experiments module it imports, transitively (read from their syntax trees, so a
    change to another experiment does not touch this one's shards); never what lies above (``cli``,
    ``report``). A module outside the package (a test's toy experiment) adds its own file.
    """
    root = PACKAGE_ROOT
    files = {p for p in root.rglob("*.py") if p.relative_to(root).parts[0] not in (*ABOVE_EXPERIMENTS, "experiments")}
    experiments = root / "experiments"
    todo = [experiments / name for name in MACHINERY]
    source = getattr(sys.modules.get(module), "__file__", None)
    if source is not None:
        todo.append(Path(source).resolve())
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        todo.extend(experiments / name for name in _experiment_imports(path))
    return sorted(files | seen)


def code_identity(module: str) -> dict:
    """What a shard of an experiment defined in ``module`` is computed by; part of every shard's identity.

    ``{"dynkit": version, "module": module, "source_sha256": SHA-256 of the module's file (None without one),
    "package_sha256": SHA-256 over every file of :func:`code_files` (its path in the package and its bytes),
    "libraries": {"numpy": ..., "scipy": ..., "torch": ...}}``. A change to any of those files (a drive
    amplitude in ``tasks/silverbox.py``, a solver's step control, a comment) or to a library version makes
    the stored shards stale: they are recomputed with a notice.

    What it promises: a record is reused only with the code and libraries that computed it, against
    *accidents* (an edit, an upgrade, a damaged file). What it does not: an unkeyed SHA-256 is no signature
    -- anyone who can write the folder can forge a record with a matching hash; it covers Python sources,
    not the compiled libraries beyond their version numbers, the hardware, or data files read at run time.
    """
    from .. import __version__

    root = PACKAGE_ROOT
    digest = hashlib.sha256()
    for path in code_files(module):
        name = str(path.relative_to(root)) if path.is_relative_to(root) else f"<{module}>"
        digest.update(name.encode() + b"\0" + (_sha256(path) or "unreadable").encode() + b"\n")
    source = getattr(sys.modules.get(module), "__file__", None)
    libraries = {}
    for name in LIBRARIES:
        lib = sys.modules.get(name)
        if lib is None:
            try:
                lib = __import__(name)
            except ImportError:
                lib = None
        libraries[name] = getattr(lib, "__version__", None)
    return {"dynkit": __version__, "module": module,
            "source_sha256": _sha256(Path(source)) if source else None,
            "package_sha256": digest.hexdigest(), "libraries": libraries}


EXPERIMENTS: dict[str, Experiment] = {}
"""Every registered experiment by name (filled when :mod:`dynkit.experiments` is imported)."""


def register(name: str, *, smoke: Any, cpu: Any, full: Any, points: Callable[[Any], Sequence[dict]] | None = None,
             summary: str = "", render: Callable[[dict, Path], None] | None = None,
             module: str = "") -> Callable[[RunFunction], RunFunction]:
    """Decorator: register ``run`` as the experiment ``name`` with its three scales (see :class:`Experiment`)."""
    def decorate(run: RunFunction) -> RunFunction:
        if name in EXPERIMENTS and EXPERIMENTS[name].run is not run:
            raise ValueError(f"an experiment named {name!r} is already registered")
        doc = (run.__doc__ or "").strip().splitlines()
        EXPERIMENTS[name] = Experiment(name, run, {"smoke": smoke, "cpu": cpu, "full": full}, points,
                                       summary or (doc[0] if doc else ""), render, module)
        return run
    return decorate


def register_variant(base: str, name: str, change: Callable[[Any], Any], summary: str) -> Experiment:
    """Register ``name``: the experiment ``base`` with ``change(config)`` at every scale.

    The variant shares ``base``'s run function, config points, figures and code identity (its shards
    are stale when ``base``'s module changes); only the configs differ, so its results sit beside
    ``base``'s under their own name (e.g. the same sweep with another ODE solver).
    """
    exp = get(base)
    if name in EXPERIMENTS and EXPERIMENTS[name].run is not exp.run:
        raise ValueError(f"an experiment named {name!r} is already registered")
    variant = dataclasses.replace(exp, name=name, scales={s: change(c) for s, c in exp.scales.items()},
                                  summary=summary, module=exp.module or exp.run.__module__)
    EXPERIMENTS[name] = variant
    return variant


def get(name: str) -> Experiment:
    """The experiment ``name``; a ValueError lists the registered names otherwise."""
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}") from None


def point_key(seed: int, point: Mapping[str, Any]) -> str:
    """The shard's folder name: ``seed0`` or ``seed0-model=hbnode``."""
    parts = [f"seed{seed}", *(f"{k}={v}" for k, v in sorted(point.items()))]
    return "-".join(str(p).replace("/", "_").replace(" ", "") for p in parts)
