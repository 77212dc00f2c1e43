"""Recipes as data: each setting of an experiment that can change its outcome, the paper's value
with its source, and ours at each scale with the reason for every difference.

A :class:`Recipe` is attached to a registered experiment by name (:data:`RECIPES`,
:func:`add_recipe`). Our values are never typed into a recipe: each :class:`Setting` reads them from
the experiment's config of that scale (``field``, a config attribute or ``data.<option>``), or, for
what the config cannot change, states what the code does (``fixed``) and which design piece is
``missing`` to express the paper's value. The ``paper`` scale (:func:`paper_config`,
``dynkit run NAME --scale paper``) is the ``full`` config with every stated paper value written into
its fields; it refuses to exist while any setting names a missing piece, rather than run something
else under the paper's name.

References
----------
The papers in ``shared/papers`` (the review: Wang, Xia, Nguyen, Osher, Sect. 3.4 and Table 4) and the review
authors' public code, github.com/hedixia/HeavyBallNODE at commit cd1065f (read, never copied).
"""  # noqa: E501

from __future__ import annotations

import contextlib
import dataclasses
import io
from dataclasses import dataclass, field as _field
from typing import Any, Mapping

# The tables of experiments and their recipes live in the registry, which builds an experiment's
# ``paper`` config from its recipe; this module only reads them (the dependency runs one way).
from .registry import RECIPES, Experiment, RecipeError, get, recipe_of

NOT_STATED = "not stated"
"""The paper value of a setting neither the paper nor the authors' code fixes (the ``paper`` scale keeps our
``full`` value there, and the recipe says so)."""  # noqa: E501
ALL = "all"
"""The value of a ``data.<option>`` field that is absent from the config (the loader's whole set)."""  # noqa: E501
REPORT_SCALES = ("cpu",)
"""The scales the ledger's and the docs' setup tables show beside the paper."""


def read_field(config: Any, name: str) -> Any:
    """The value of ``name`` in ``config``: an attribute, ``data.<option>`` of its ``data`` pairs
    (:data:`ALL` when the option is absent), or, for a script's config (one with ``options()``,
    see :class:`~dynkit.experiments.scripting.ScriptConfig`), the setting its command line runs
    with."""
    if callable(getattr(config, "options", None)):
        options = config.options()
        if name not in options:
            raise RecipeError(
                f"field must name a setting of the script's options, one of {sorted(options)}, "
                f"got {name!r}"
            )
        return options[name]
    if name.startswith("data."):
        return dict(config.data).get(name[5:], ALL)
    if not hasattr(config, name):
        raise RecipeError(
            f"field must name an attribute of {type(config).__name__} or data.<option>, got "
            f"{name!r}"
        )
    return getattr(config, name)


def write_field(config: Any, name: str, value: Any) -> Any:
    """``config`` with ``name`` set to ``value`` (:data:`ALL` removes a ``data.<option>``; a
    script's config gets ``--name value`` on its command line, refused unless the script then
    runs with ``value``)."""
    if callable(getattr(config, "with_option", None)):
        if _same(
            read_field(config, name), value
        ):  # already so (and a name the script's options know)
            return config
        written = config.with_option(name, value)
        try:
            with contextlib.redirect_stderr(
                io.StringIO()
            ):  # argparse's usage text: the error below says it
                runs_with = read_field(written, name)
        except SystemExit:
            raise RecipeError(
                f"the script has no command-line option for {name} (it is fixed in its code): "
                f"cannot write {_text(value)}"
            ) from None
        if not _same(runs_with, value):
            raise RecipeError(
                f"the script cannot be given {name} = {_text(value)} on its command line: it runs "
                f"with {_text(runs_with)}"
            )
        return written
    if name.startswith("data."):
        key = name[5:]
        pairs = tuple(p for p in config.data if p[0] != key)
        return dataclasses.replace(config, data=pairs if value == ALL else (*pairs, (key, value)))
    return dataclasses.replace(config, **{name: value})


@dataclass(frozen=True)
class Setting:
    """One setting that can change an outcome.

    Parameters
    ----------
    name : str
        What it is (``"solver tolerance"``).
    paper : object
        The paper's value (:data:`NOT_STATED` where neither the paper nor the authors' code fixes
        one).
    source : str
        Where the paper's value is read: a section or table of a paper, or a file of the authors'
        repository.
    field : str, optional
        The config attribute (or ``data.<option>``) that holds our value at every scale; empty when
        the config cannot change it.
    fixed : str
        Without ``field``: what our code does instead (and where), the same at every scale.
    missing : str
        The design piece our code lacks to express the paper's value; non-empty, the ``paper`` scale
        refuses.
    reasons : mapping
        ``{scale: why ours differs from the paper there}``; the recipe's ``default_reasons`` fill
        the rest.
    """

    name: str
    paper: Any
    source: str
    field: str = ""
    fixed: str = ""
    missing: str = ""
    reasons: Mapping[str, str] = _field(default_factory=dict)

    def __post_init__(self):
        if not self.name or not self.source.strip():
            raise RecipeError(f"setting {self.name!r}: name and source must be non-empty")
        if bool(self.field) == bool(self.fixed):
            raise RecipeError(
                f"setting {self.name!r}: give exactly one of field (read from the config) "
                f"and fixed "
                f"(what the code does), got field={self.field!r}, fixed={self.fixed!r}"
            )

    def ours(self, config: Any) -> Any:
        """Our value in ``config`` (read from it; ``fixed`` for what the config cannot change)."""
        return read_field(config, self.field) if self.field else self.fixed

    def as_paper(self, config: Any) -> bool:
        """Whether ``config`` holds the paper's value (never for a fixed setting with a missing
        piece)."""
        if self.paper == NOT_STATED:
            return False
        if self.missing:
            return False
        if not self.field:
            return self.fixed == self.paper
        return _same(self.ours(config), self.paper)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= 1e-12 * max(
            abs(float(a)), abs(float(b)), 1.0
        )  # float round-off only
    return a == b


@dataclass(frozen=True)
class Recipe:
    """The settings of one experiment against the paper (see the module docstring)."""

    experiment: str
    paper: str
    settings: tuple[Setting, ...]
    default_reasons: Mapping[str, str] = _field(default_factory=dict)
    no_paper_run: str = ""
    """Why the authors give no run to reproduce at all (the ``paper`` scale refuses with it)."""

    def __post_init__(self):
        names = [s.name for s in self.settings]
        if len(set(names)) != len(names):
            raise RecipeError(
                f"recipe {self.experiment!r}: setting names must be unique, got {names}"
            )

    def reason(self, setting: Setting, scale: str) -> str:
        return setting.reasons.get(scale) or self.default_reasons.get(scale, "")

    def missing(self) -> list[str]:
        """The design pieces our code lacks to run the paper's recipe (empty: ``paper`` scale
        runs)."""
        return ([self.no_paper_run] if self.no_paper_run else []) + [
            f"{s.name}: {s.missing}" for s in self.settings if s.missing
        ]

    def rows(self, config: Any, scale: str) -> list[dict]:
        """One dict per setting: ``setting``, ``paper``, ``source``, ``ours`` (read from
        ``config``), ``as_paper`` and ``why`` (the reason where ours differs; empty where it is
        as the paper)."""
        out = []
        for s in self.settings:
            same = s.as_paper(config)
            why = "" if same else self.reason(s, scale)
            if not same and s.paper == NOT_STATED and not why:
                why = "the paper states none: ours"
            if not same and s.missing:
                why = (why + "; " if why else "") + f"not built yet: {s.missing}"
            out.append(
                {
                    "setting": s.name,
                    "paper": _text(s.paper),
                    "source": s.source,
                    "ours": _text(s.ours(config)),
                    "as_paper": same,
                    "why": why,
                    "missing": s.missing,
                }
            )
        return out

    def expressible(self) -> list[Setting]:
        """The settings whose paper value the config can hold: a field, a stated value, no
        missing piece."""
        return [s for s in self.settings if s.field and s.paper != NOT_STATED and not s.missing]

    def mismatches(self, config: Any) -> list[str]:
        """The :meth:`expressible` settings whose paper value ``config`` does not hold (empty for
        a faithful ``paper`` config)."""
        return [
            f"{s.name}: paper {_text(s.paper)} ({s.source}), config {_text(s.ours(config))}"
            for s in self.expressible()
            if not s.as_paper(config)
        ]

    def paper_config(self, full: Any, *, strict: bool = True) -> Any:
        """The ``full`` config with every stated paper value written into its field. ``strict``:
        a :class:`RecipeError` naming each missing design piece first (the paper scale refuses to
        run)."""
        if strict and self.missing():
            raise RecipeError(
                f"{self.experiment}: the paper scale cannot run the authors' recipe yet; missing: "
                + "; ".join(self.missing())
            )
        config = full
        for s in self.expressible():
            config = write_field(config, s.field, s.paper)
        return config


PLAN_SEEDS = "the plan's seeds (analysis/plans)"
"""Our seeds in every experiment: those its plan fixes before the results."""
PLAN_SEEDS_WHY = dict.fromkeys(
    ("cpu", "full"), "a decision needs the seeds its plan fixes in advance"
)
"""Why our seeds differ from the paper's runs, at the scales that decide."""


def plan_seeds(
    paper: Any,
    source: str,
    reasons: Mapping[str, str] | None = None,
    ours: str = PLAN_SEEDS,
) -> Setting:
    """The ``seeds`` setting: the paper's runs ``paper`` (read in ``source``) against ours, the
    plan's (``ours`` says how an experiment maps them to its runs, where it does); ``reasons`` as
    :class:`Setting`'s (e.g. :data:`PLAN_SEEDS_WHY`)."""
    return Setting("seeds", paper, source, fixed=ours, reasons=dict(reasons or {}))


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ", ".join(map(_text, value)) or "–"
    return str(value)


def add_recipe(recipe: Recipe) -> Recipe:
    """Attach ``recipe`` to its experiment (registered before or after)."""
    if recipe.experiment in RECIPES and RECIPES[recipe.experiment] != recipe:
        raise RecipeError(f"experiment {recipe.experiment!r} already has a recipe")
    RECIPES[recipe.experiment] = recipe
    return recipe


def paper_config(experiment: Any, *, strict: bool = True) -> Any:
    """The ``paper`` scale's config of a registered
    :class:`~dynkit.experiments.registry.Experiment`."""
    if not isinstance(experiment, Experiment):
        raise TypeError(
            f"experiment must be a registered Experiment (dk.experiments.get(NAME)), got "
            f"{type(experiment).__name__} {experiment!r:.60}"
        )
    return recipe_of(experiment.name).paper_config(experiment.scales["full"], strict=strict)


def setup_table(name: str, scales: tuple[str, ...] = REPORT_SCALES) -> list[dict]:
    """``[{"setting", "paper", "source", <scale>: ours, "why": {scale: reason}}, ...]`` of the
    experiment ``name`` (empty for a registered experiment without a recipe), our values read
    from its registered configs; a name that is no registered experiment is a ValueError listing
    those that are."""
    if not isinstance(name, str):
        raise TypeError(
            f"name must be an experiment's name (a str), got {type(name).__name__} {name!r:.60}"
        )
    get(name)  # a ValueError naming the registered experiments
    recipe = RECIPES.get(name)
    if recipe is None:
        return []
    exp = get(name)
    per_scale = {scale: recipe.rows(exp.config(scale), scale) for scale in scales}
    out = []
    for i, s in enumerate(recipe.settings):
        out.append(
            {
                "setting": s.name,
                "paper": _text(s.paper),
                "source": s.source,
                **{scale: per_scale[scale][i]["ours"] for scale in scales},
                "as_paper": {scale: per_scale[scale][i]["as_paper"] for scale in scales},
                "why": {scale: per_scale[scale][i]["why"] for scale in scales},
                "missing": s.missing,
            }
        )
    return out


def setup_markdown(name: str, scales: tuple[str, ...] = REPORT_SCALES) -> str:
    """The compact "setup against the paper" table of ``name`` (setting | paper (source) |
    <scale> | why)."""
    rows = setup_table(name, scales)
    if not rows:
        return ""
    head = ["setting", "paper (source)", *scales, "why"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        why = "; ".join(
            f"{s}: {r['why'][s]}" if len(scales) > 1 else r["why"][s] for s in scales if r["why"][s]
        )
        cells = [
            r["setting"],
            f"{r['paper']} ({r['source']})",
            *(r[s] for s in scales),
            why or ("as the paper" if all(r["as_paper"].values()) else "–"),
        ]
        lines.append(
            "| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "ALL",
    "NOT_STATED",
    "RECIPES",
    "Recipe",
    "RecipeError",
    "Setting",
    "add_recipe",
    "PLAN_SEEDS",
    "PLAN_SEEDS_WHY",
    "paper_config",
    "plan_seeds",
    "read_field",
    "recipe_of",
    "setup_markdown",
    "setup_table",
    "write_field",
]
