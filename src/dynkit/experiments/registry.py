"""The registry of experiments: a name, a config dataclass per scale, the config points and a run
function."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "SCALES",
    "PAPER_SCALE",
    "RUN_SCALES",
    "WORK_DIR",
    "Experiment",
    "code_identity",
    "EXPERIMENTS",
    "register",
    "register_variant",
    "get",
    "point_key",
    "RECIPES",
    "RecipeError",
    "recipe_of",
]

SCALES = ("smoke", "cpu", "full")
"""``smoke``: seconds (the tests); ``cpu``: minutes on 2 cores (results of record); ``full``: the paper's size
(a GPU)."""  # noqa: E501
PAPER_SCALE = "paper"
"""Not a registered config: the authors' recipe, built from the experiment's recipe
(:func:`dynkit.experiments.recipes.paper_config`); it refuses while the code lacks a piece of the recipe."""  # noqa: E501
RUN_SCALES = (*SCALES, PAPER_SCALE)
WORK_DIR = "work"
"""A run function's folder for resumable state (``out / WORK_DIR``: checkpoints): the runner keeps it across
interruptions while the shard's identity (config, code) stays the same, empties it when that changes, and
removes it once the shard's record is stored."""  # noqa: E501
"""The scales ``dynkit run`` accepts."""

RunFunction = Callable[..., dict]
"""``run(config, *, seed: int, out: Path, device: str) -> {"metrics": {name: float}, ...}`` for one shard."""  # noqa: E501


@dataclass(frozen=True)
class Experiment:
    """One registered experiment.

    Parameters
    ----------
    name : str
        The registry key (``dynkit run NAME``).
    run : callable
        ``run(config, *, seed, out, device) -> dict`` runs one shard (one seed, one config point)
        into the folder ``out`` and returns a JSON-able dict whose ``"metrics"`` maps metric names
        to floats. Metric names must be unique across the config points of one seed (put the point
        in the name, e.g. ``"hbnode.forward_nfe@1e-05"``): the ledger merges a seed's shards into
        one dict.
    scales : mapping
        ``{"smoke": config, "cpu": config, "full": config}``, instances of one frozen dataclass.
    points : callable, optional
        ``points(config) -> [dict, ...]``: the config points of a sweep, each a dict of field
        overrides applied with :func:`dataclasses.replace`; default one point, ``{}``.
    summary : str
        One line: what the experiment measures, with the paper's figure.
    render : callable, optional
        ``render(results, out)`` draws the figures across seeds from the aggregated
        ``results.json``.
    module : str, optional
        The module whose code the experiment runs (default ``run.__module__``): the root, beside the
        runner's, of the import closure whose code digests are part of every shard's identity.
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
            raise ValueError(
                f"experiment {self.name!r} needs configs for the scales {SCALES}, missing {missing}"
            )
        kinds = {type(c) for c in self.scales.values()}
        if len(kinds) != 1 or not dataclasses.is_dataclass(next(iter(kinds))):
            raise TypeError(
                f"experiment {self.name!r}: the scales must be instances of one dataclass, got "
                f"{sorted(k.__name__ for k in kinds)}"
            )

    def code(self) -> dict:
        """The code that computes a shard (see :func:`code_identity`)."""
        return code_identity(self.module or self.run.__module__)

    def config(self, scale: str) -> Any:
        """The config dataclass of ``scale``; ``"paper"``: built from the experiment's recipe (a
        :class:`~dynkit.experiments.recipes.RecipeError` names what the code lacks to run it, or
        that there is no recipe)."""
        if scale == PAPER_SCALE:
            return recipe_of(self.name).paper_config(self.scales["full"])
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {RUN_SCALES}, got {scale!r}")
        return self.scales[scale]

    def config_points(self, config: Any) -> list[tuple[dict, Any]]:
        """``[(point, config with the point applied), ...]`` of one scale's config."""
        points = list(self.points(config)) if self.points is not None else [{}]
        return [(dict(p), dataclasses.replace(config, **p)) for p in points]


def code_identity(module: str) -> dict:
    """What a shard of an experiment defined in ``module`` is computed by (its import closure, each
    module's code digests, the library versions): see
    :func:`dynkit.experiments.code_closure.code_identity`."""
    from .code_closure import code_identity as identity

    return identity(module)


EXPERIMENTS: dict[str, Experiment] = {}
"""Every registered experiment by name (filled when :mod:`dynkit.experiments` is imported)."""


def register(
    name: str,
    *,
    smoke: Any,
    cpu: Any,
    full: Any,
    points: Callable[[Any], Sequence[dict]] | None = None,
    summary: str = "",
    render: Callable[[dict, Path], None] | None = None,
    module: str = "",
) -> Callable[[RunFunction], RunFunction]:
    """Decorator: register ``run`` as the experiment ``name`` with its three scales (see
    :class:`Experiment`)."""

    def decorate(run: RunFunction) -> RunFunction:
        if name in EXPERIMENTS and EXPERIMENTS[name].run is not run:
            raise ValueError(f"an experiment named {name!r} is already registered")
        doc = (run.__doc__ or "").strip().splitlines()
        EXPERIMENTS[name] = Experiment(
            name,
            run,
            {"smoke": smoke, "cpu": cpu, "full": full},
            points,
            summary or (doc[0] if doc else ""),
            render,
            module,
        )
        return run

    return decorate


def register_variant(
    base: str, name: str, change: Callable[[Any], Any], summary: str
) -> Experiment:
    """Register ``name``: the experiment ``base`` with ``change(config)`` at every scale.

    The variant shares ``base``'s run function, config points, figures and code identity (its shards
    are stale when ``base``'s module changes); only the configs differ, so its results sit beside
    ``base``'s under their own name (e.g. the same sweep with another ODE solver).
    """
    exp = get(base)
    if name in EXPERIMENTS and EXPERIMENTS[name].run is not exp.run:
        raise ValueError(f"an experiment named {name!r} is already registered")
    variant = dataclasses.replace(
        exp,
        name=name,
        scales={s: change(c) for s, c in exp.scales.items()},
        summary=summary,
        module=exp.module or exp.run.__module__,
    )
    EXPERIMENTS[name] = variant
    return variant


def get(name: str) -> Experiment:
    """The experiment ``name``; a ValueError lists the registered names otherwise."""
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}") from None


class RecipeError(ValueError):
    """A recipe that cannot build the ``paper`` scale (a design piece is missing) or is
    malformed."""


RECIPES: dict[str, Any] = {}
"""Every experiment's recipe (a :class:`~dynkit.experiments.recipes.Recipe`) by experiment name
(filled by :func:`~dynkit.experiments.recipes.add_recipe` when :mod:`dynkit.experiments` is
imported)."""


def recipe_of(name: str) -> Any:
    """The recipe (:class:`~dynkit.experiments.recipes.Recipe`) of the experiment ``name``; a
    :class:`RecipeError` lists those that have one otherwise."""
    try:
        return RECIPES[name]
    except KeyError:
        raise RecipeError(
            f"experiment must be one with a recipe, one of {sorted(RECIPES)}, got {name!r}"
        ) from None


def point_key(seed: int, point: Mapping[str, Any]) -> str:
    """The shard's folder name: ``seed0`` or ``seed0-model=hbnode``."""
    parts = [f"seed{seed}", *(f"{k}={v}" for k, v in sorted(point.items()))]
    return "-".join(str(p).replace("/", "_").replace(" ", "") for p in parts)
