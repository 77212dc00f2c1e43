"""Result objects, the claim registry's types and input validation shared by every check.

A check returns a :class:`CheckResult` (never a bare bool); a claim (:class:`Claim`) draws random
instances, runs its checks in batches and returns a :class:`ClaimRow`; :func:`run_all` collects the
rows into a :class:`ClaimTable`.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Sequence

import numpy as np

from ..io import jsonable


@dataclass(frozen=True)
class CheckResult:
    """Verdict of one check over one instance or a batch of instances.

    Attributes
    ----------
    claim : str
        Short id of the claim checked (a key of :data:`dynkit.theory.CLAIMS`) with the part, e.g.
        ``"eigen_pairing"`` or ``"heavy_ball.rate"``.
    holds : bool
        True when every instance's residual is at most ``tolerance``.
    residual : float
        Worst residual (or worst negative margin) over the batch; compared with ``tolerance``.
    tolerance : float
    instance : dict
        The worst instance (its inputs), so a failure can be replayed.
    message : str
        One line saying what was measured and the verdict.
    residuals : numpy.ndarray
        Per-instance residuals, flattened over the batch dimensions (one per instance:
        ``residuals.size == n_instances``). For a claim of several parts (:func:`combine`) they are
        those of the part reported in ``residual`` and ``tolerance`` (the worst relative to its own
        tolerance); each part's own result, with its residuals, is in ``details["parts"]``.
    passed : numpy.ndarray
        Per instance: did every part hold.
    details : dict
        Further numbers behind the verdict (rates, margins, …).
    """

    claim: str
    holds: bool
    residual: float
    tolerance: float
    instance: dict
    message: str
    residuals: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    passed: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=bool))
    details: dict = field(repr=False, default_factory=dict)
    sides: dict = field(repr=False, default_factory=dict)
    undecided: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def n_instances(self) -> int:
        return int(self.passed.size)

    @property
    def is_undecided(self) -> bool:
        """Not every instance held, but none was violated: the failing ones could not be settled
        (a limit still converging at the end of the budget, say). Neither "holds" nor a
        counterexample."""
        return (
            (not self.holds)
            and self.undecided.size == self.passed.size
            and bool(np.all(self.passed | self.undecided))
        )

    @property
    def n_held(self) -> int:
        return int(np.count_nonzero(self.passed))


def verdict(
    claim: str,
    residuals: np.ndarray,
    tolerance: float,
    instances: dict,
    what: str,
    *,
    sides: dict | None = None,
    undecided: np.ndarray | None = None,
    **details: Any,
) -> CheckResult:
    """Build a :class:`CheckResult` from per-instance residuals (batch axes leading in
    ``instances``).

    ``sides`` maps the names of the two sides of the claimed relation (e.g. ``{"(54)": ..., "autograd":
    ...}``) to per-instance values; the worst instance's values are kept in ``CheckResult.sides`` so a
    counterexample can show both. NaN residuals count as failures (a check that cannot measure must not
    say "holds"). ``undecided`` marks the instances a check could not settle (they do not hold, and are not
    violations either: :attr:`CheckResult.is_undecided`).
    """  # noqa: E501
    res = np.asarray(residuals, dtype=float)
    batch_shape = res.shape
    flat = res.reshape(-1)
    scored = np.where(np.isnan(flat), np.inf, flat)
    worst = int(np.argmax(scored)) if flat.size else 0
    index = np.unravel_index(worst, batch_shape) if batch_shape else ()
    instance = {}
    for name, value in instances.items():
        arr = np.asarray(value)
        instance[name] = (
            arr[index] if batch_shape and arr.shape[: len(batch_shape)] == batch_shape else arr
        )
    kept_sides = {}
    for name, value in (sides or {}).items():
        arr = np.asarray(value)
        kept_sides[name] = (
            arr[index] if batch_shape and arr.shape[: len(batch_shape)] == batch_shape else arr
        )
    passed = scored <= tolerance
    open_ = (
        np.zeros(flat.shape, dtype=bool)
        if undecided is None
        else np.broadcast_to(np.asarray(undecided, dtype=bool), batch_shape).reshape(-1) & ~passed
    )
    holds = bool(flat.size > 0 and np.all(passed))
    worst_value = float(scored[worst]) if flat.size else float("nan")
    outcome = (
        "holds"
        if holds
        else (
            f"undecided ({int(open_.sum())} instance(s) not settled)"
            if np.all(passed | open_)
            else "VIOLATED"
        )
    )
    message = (
        f"{claim}: {what}; worst {worst_value:.3g} {'<=' if holds else '>'} tolerance "
        f"{tolerance:.3g} over {flat.size} instance(s) -> {outcome}"
    )
    return CheckResult(
        claim,
        holds,
        worst_value,
        float(tolerance),
        instance,
        message,
        flat,
        passed,
        details,
        kept_sides,
        open_,
    )


def combine(claim: str, results: Sequence[CheckResult], *, disjoint: bool = False) -> CheckResult:
    """Join sub-checks of one claim: it holds if every part holds. The reported residual and
    tolerance are those of the part that is worst relative to its own tolerance. Parts that saw the
    same instances are joined instance by instance; with ``disjoint=True`` (parts saw different
    instances) their instances are stacked."""

    def ratio(r: CheckResult) -> float:
        if np.isnan(r.residual):
            return np.inf
        return r.residual / r.tolerance if r.tolerance > 0 else (np.inf if r.residual > 0 else 0.0)

    worst = max(results, key=ratio)
    if disjoint:
        passed = np.concatenate([r.passed for r in results])
    else:
        sizes = {r.n_instances for r in results}
        if len(sizes) != 1:
            raise ValueError(
                f"combine: parts of {claim!r} saw different numbers of instances {sizes}; "
                f"pass disjoint=True if they saw different instances"
            )
        passed = np.logical_and.reduce([r.passed for r in results])
    # an instance is undecided when some part could not settle it and no part violated it
    opens = [
        r.undecided if r.undecided.size == r.passed.size else np.zeros(r.passed.size, dtype=bool)
        for r in results
    ]
    if disjoint:
        undecided = np.concatenate(opens)
    else:
        undecided = np.logical_or.reduce(opens) & np.logical_and.reduce(
            [r.passed | o for r, o in zip(results, opens)]
        )
    message = "; ".join(r.message for r in results)
    # per instance, like a single check: the worst part's residuals (comparable with the reported
    # tolerance); parts that saw other instances contribute theirs in their own units (each part:
    # details["parts"])
    residuals = np.concatenate([r.residuals for r in results]) if disjoint else worst.residuals
    return CheckResult(
        claim,
        all(r.holds for r in results),
        worst.residual,
        worst.tolerance,
        worst.instance,
        message,
        residuals,
        passed,
        {"parts": {r.claim: r for r in results}, "worst_part": worst.claim},
        worst.sides,
        undecided & ~passed,
    )


# ---------------------------------------------------------------------------------------------
# claims and the table


VERDICTS = ("holds", "holds with correction", "erratum", "false as stated", "undecided")
"""``holds``: the statement as printed holds on every instance. ``holds with correction``: a
corrected statement (its own row, beside the ``false as stated`` row of the printed one) holds.
``erratum``: the statement as printed fails, but the intended statement is evident from the
paper's own text (quoted in ``intent``: its proof or the surrounding argument) and that corrected
statement (``correction``) is checked in the same row and holds. ``false as stated``: the printed
statement fails and no evident reading rescues it (a counterexample comes with it).
``undecided``: nothing to decide (no instance, or an informal wording: ``reason`` says which)."""


@dataclass(frozen=True)
class ClaimRow:
    """One line of the claim table: a claim's verdict over ``instances`` random instances.

    ``verdict`` is about the paper's statement *as written* (:data:`VERDICTS`); ``expected_verdict``
    is the one recorded in the code for that claim, so a change is a regression. ``counterexample``
    (for ``false as stated`` and ``erratum``) holds the smallest violating instance of the printed
    statement, the two sides and the gap. ``statement`` quotes the paper; ``reading`` is the
    statement as checked (where the quote needs a formal reading). An ``erratum`` row also carries
    ``intent`` (the paper's text that shows what was meant), ``correction`` (the intended statement)
    and ``corrected`` (its check: instances, held, worst residual, tolerance); an ``undecided`` row
    carries its ``reason``.
    """

    claim: str
    paper: str
    equation: str
    instances: int
    held: int
    worst_residual: float
    tolerance: float
    seconds: float
    note: str = ""
    verdict: str = "holds"
    expected_verdict: str = "holds"
    statement: str = ""
    counterexample: dict | None = None
    correction: str | None = None
    error: str | None = None
    reading: str = ""
    intent: str | None = None
    corrected: dict | None = None
    reason: str | None = None

    @property
    def holds(self) -> bool:
        return self.held == self.instances and self.error is None

    @property
    def regression(self) -> bool:
        """The verdict differs from the one recorded in the code (or the check errored)."""
        return self.error is not None or self.verdict != self.expected_verdict

    def to_dict(self) -> dict:
        """JSON-ready, every field in order with ``holds`` after ``held``."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = _ROW_JSON.get(f.name, _unchanged)(value)
            if f.name == "held":
                out["holds"] = self.holds
        return out


def _unchanged(value: Any) -> Any:
    return value


_ROW_JSON: dict[str, Callable[[Any], Any]] = {
    "worst_residual": jsonable,
    "seconds": lambda seconds: round(seconds, 4),
    "counterexample": jsonable,
    "corrected": jsonable,
}
"""How a :class:`ClaimRow` field becomes JSON where it is not already (the others: as they are)."""


def _counterexample(result: CheckResult) -> dict:
    """The smallest violating instance a check reported (``details['smallest_failing']`` when the
    registry stacked several sizes, else the worst), with its two sides and the gap."""
    source = result.details.get("smallest_failing", result)
    return {
        "instance": jsonable(source.instance),
        "sides": jsonable(source.sides),
        "gap": jsonable(source.residual),
        "tolerance": jsonable(source.tolerance),
        "part": source.details.get("worst_part", source.claim),
    }


@dataclass(frozen=True)
class Claim:
    """A statement of one of the papers and the way to check it on random instances.

    ``statement`` is the paper's own text (the claim *as stated*, quoted); ``reading`` the statement
    as checked where the quote needs a formal reading (empty: checked word for word); ``summary``
    says in a line what is measured; ``hypotheses`` the set the instances are drawn from (the
    paper's whole hypothesis set). ``correction`` is None for a claim checked as stated, else the
    corrected statement: with ``intent`` (the paper's text showing that the correction is what was
    meant) and ``corrected_check`` (a check of the corrected statement on the same hypotheses) the
    claim is an *erratum* candidate, without them the row checks the corrected statement itself
    (``holds with correction``). ``informal`` says why a statement's wording sets no threshold to
    decide (its verdict is then ``undecided`` while its precise content holds). ``expected_verdict``
    is the verdict recorded in the code. ``flip(rng)`` returns a :class:`CheckResult` of the same
    check on an instance where the verdict must flip (a planted violation for a true claim, an
    instance inside the corrected hypotheses for a false one); ``corrected_flip(rng)`` plants a
    violation of the corrected statement of an erratum. Tests use both to show the checks can fail.
    ``number`` is the claim's place in :data:`dynkit.theory.CLAIMS` (``run_all`` draws its instances
    with ``seed + number``, so a new claim takes the next number and every other claim keeps its
    instances); None for a claim outside the registry.
    """

    id: str
    paper: str
    equation: str
    statement: str
    hypotheses: str
    check: Callable[[int, np.random.Generator], CheckResult] = field(repr=False)
    summary: str = ""
    expected_verdict: str = "holds"
    correction: str | None = None
    flip: Callable[[np.random.Generator], CheckResult] | None = field(default=None, repr=False)
    reading: str = ""
    intent: str | None = None
    corrected_check: Callable[[int, np.random.Generator], CheckResult] | None = field(
        default=None, repr=False
    )
    corrected_flip: Callable[[np.random.Generator], CheckResult] | None = field(
        default=None, repr=False
    )
    informal: str | None = None
    number: int | None = None

    def __post_init__(self):
        if self.expected_verdict not in VERDICTS:
            raise ValueError(
                f"expected_verdict must be one of {VERDICTS}; got {self.expected_verdict!r}"
            )
        if (self.intent is None) != (self.corrected_check is None):
            raise ValueError(f"claim {self.id!r}: an erratum needs both intent and corrected_check")
        if self.intent is not None and not self.correction:
            raise ValueError(
                f"claim {self.id!r}: an erratum needs the corrected statement (correction)"
            )

    @property
    def is_erratum_candidate(self) -> bool:
        return self.corrected_check is not None

    def sample(self, n_instances: int = 100, seed: int = 0) -> CheckResult:
        """Check ``n_instances`` random instances drawn with ``seed``; the full :class:`CheckResult`
        (worst instance, per-part details), where :meth:`run` gives the table row."""
        n_instances = check_count("n_instances", n_instances)
        seed = check_seed("seed", seed)
        with single_threaded_blas():
            return self.check(n_instances, np.random.default_rng(seed))

    def sample_corrected(self, n_instances: int = 100, seed: int = 0) -> CheckResult | None:
        """The corrected statement's check (an erratum's), on its own stream of instances
        (``seed`` + 10**6)."""
        if self.corrected_check is None:
            return None
        n_instances = check_count("n_instances", n_instances)
        seed = check_seed("seed", seed)
        with single_threaded_blas():
            return self.corrected_check(n_instances, np.random.default_rng(seed + 10**6))

    def verdict_of(self, result: CheckResult, corrected: CheckResult | None = None) -> str:
        """The verdict about the printed statement from its check (and, for an erratum candidate,
        the corrected statement's): see :data:`VERDICTS`."""
        if result.n_instances == 0 or result.is_undecided:
            return "undecided"
        if result.holds:
            if self.informal:
                return "undecided"
            return (
                "holds with correction"
                if self.correction and not self.is_erratum_candidate
                else "holds"
            )
        if corrected is not None and corrected.n_instances and corrected.holds:
            return "erratum"
        return "false as stated"

    def run(self, n_instances: int = 1000, seed: int = 0) -> ClaimRow:
        start = time.perf_counter()
        try:
            result = self.sample(n_instances, seed)
            corrected = None if result.holds else self.sample_corrected(n_instances, seed)
        except (
            Exception
        ) as exc:  # a check that errors is reported (and makes `dynkit verify` exit 1)
            return ClaimRow(
                self.id,
                self.paper,
                self.equation,
                0,
                0,
                float("nan"),
                float("nan"),
                time.perf_counter() - start,
                "",
                "undecided",
                self.expected_verdict,
                self.statement,
                None,
                self.correction,
                f"{type(exc).__name__}: {exc}",
                self.reading,
                self.intent,
            )
        seconds = time.perf_counter() - start
        verdict_ = self.verdict_of(result, corrected)
        summary = (
            None
            if corrected is None
            else {
                "instances": corrected.n_instances,
                "held": corrected.n_held,
                "holds": corrected.holds,
                "worst_residual": jsonable(corrected.residual),
                "tolerance": corrected.tolerance,
            }
        )
        reason = None
        if verdict_ == "undecided":
            reason = (
                self.informal
                if self.informal and result.n_instances
                else (
                    "no instance was checked"
                    if not result.n_instances
                    else f"{int(result.undecided.sum())} instance(s) could not be settled within "
                    f"the check's budget (none "
                    f"violated): {result.message}"
                )
            )
        return ClaimRow(
            self.id,
            self.paper,
            self.equation,
            result.n_instances,
            result.n_held,
            result.residual,
            result.tolerance,
            seconds,
            result.details.get("worst_part", ""),
            verdict_,
            self.expected_verdict,
            self.statement,
            _counterexample(result) if verdict_ in ("false as stated", "erratum") else None,
            self.correction,
            None,
            self.reading,
            self.intent,
            summary,
            reason,
        )


@dataclass
class ClaimTable:
    """Rows of :func:`run_all`; ``str(table)`` is an aligned text table with one summary line per
    verdict."""

    rows: list[ClaimRow]
    n_instances: int
    seed: int

    @property
    def all_hold(self) -> bool:
        """Every row holds on every instance (false-as-stated rows make this False by design)."""
        return all(row.holds for row in self.rows)

    @property
    def regressions(self) -> list[ClaimRow]:
        """Rows whose verdict differs from the one recorded in the code, or whose check errored."""
        return [row for row in self.rows if row.regression]

    def verdict_counts(self) -> dict[str, int]:
        counts = {v: 0 for v in VERDICTS}
        for row in self.rows:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        return counts

    @property
    def seconds(self) -> float:
        return float(sum(row.seconds for row in self.rows))

    def to_dict(self) -> dict:
        return dict(
            n_instances=self.n_instances,
            seed=self.seed,
            all_hold=self.all_hold,
            seconds=round(self.seconds, 4),
            rows=[row.to_dict() for row in self.rows],
            verdict_counts=self.verdict_counts(),
            regressions=[row.claim for row in self.regressions],
        )

    def to_pandas(self):
        """The rows as a ``pandas.DataFrame`` (one row per claim, the fields of
        ``ClaimRow.to_dict``); needs pandas."""
        from ..io import to_pandas

        return to_pandas([row.to_dict() for row in self.rows], "ClaimTable")

    _HEAD = (
        "claim",
        "verdict",
        "paper",
        "equation",
        "instances",
        "held",
        "worst residual",
        "tolerance",
        "seconds",
    )

    def _cells(self) -> list[tuple[str, ...]]:
        def mark(r):
            return (
                ""
                if not r.regression
                else (" (ERROR)" if r.error else f" (expected {r.expected_verdict})")
            )

        return [
            (
                r.claim,
                r.verdict + mark(r),
                r.paper,
                r.equation,
                str(r.instances),
                str(r.held),
                f"{r.worst_residual:.3g}",
                f"{r.tolerance:.3g}",
                f"{r.seconds:.2f}",
            )
            for r in self.rows
        ]

    def summary_lines(self) -> list[str]:
        """One line per verdict that occurs: how many rows and which."""
        out = []
        for v, count in self.verdict_counts().items():
            if count:
                names = ", ".join(r.claim for r in self.rows if r.verdict == v)
                out.append(f"{count} {v}: {names}")
        regress = self.regressions
        counts = sorted(r.instances for r in self.rows)
        # each row ran its own count (some checks draw fewer or more instances by design): say so,
        # not one number
        ran = (
            f"{counts[0]} instances each"
            if counts and counts[0] == counts[-1]
            else f"{self.n_instances} instances asked, {counts[0]}-{counts[-1]} run per row "
            f"(column 'instances')"
            if counts
            else "no rows"
        )
        out.append(
            f"{len(self.rows)} claims ({ran}, seed {self.seed}, {self.seconds:.1f} s); "
            + (
                f"{len(regress)} REGRESSION(S) against the recorded verdicts: "
                f"{', '.join(r.claim for r in regress)}"
                if regress
                else "every verdict is the one recorded in the code"
            )
        )
        return out

    def to_markdown(self) -> str:
        lines = ["| " + " | ".join(self._HEAD) + " |", "|" + "---|" * len(self._HEAD)]
        lines += ["| " + " | ".join(cells) + " |" for cells in self._cells()]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.to_markdown() + "\n\n" + "\n".join(f"- {line}" for line in self.summary_lines())

    def _repr_html_(self) -> str:
        import html

        head = "".join(f"<th>{html.escape(h)}</th>" for h in self._HEAD)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            for cells in self._cells()
        )
        summary = "".join(f"<li>{html.escape(line)}</li>" for line in self.summary_lines())
        return (
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><ul>{summary}</ul>"
        )

    def __str__(self) -> str:
        rows = [self._HEAD, *self._cells()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self._HEAD))]
        numeric = {4, 5, 6, 7, 8}
        fmt = lambda row: "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)  # noqa: E731
            for i, (c, w) in enumerate(zip(row, widths))
        )
        out = [fmt(rows[0]), "  ".join("-" * w for w in widths), *map(fmt, rows[1:])]
        out += self.counterexample_lines()
        out += self.summary_lines()
        return "\n".join(out)

    def counterexample_lines(self, width: int = 240) -> list[str]:
        """One line per row that is not plainly true: an erratum's intended statement and the
        paper's text that shows it; an undecided row's reason; the counterexample (two sides,
        gap, instance) of a printed statement that fails (false as stated, erratum). Lines are
        shortened to ``width``."""

        def short(x) -> str:
            return json.dumps(jsonable(x), separators=(",", ":"))

        out = []
        for r in self.rows:
            if r.verdict == "erratum" and r.corrected:
                c = r.corrected
                out.append(
                    _shorten(
                        f'erratum {r.claim}: intended "{r.correction}" (held {c["held"]}/'
                        f'{c["instances"]}); the paper shows it: "{r.intent}"',
                        width,
                    )
                )
            if r.verdict == "undecided" and r.reason:
                out.append(_shorten(f"undecided {r.claim}: {r.reason}", width))
            if r.counterexample:
                ce = r.counterexample
                line = (
                    f"counterexample {r.claim}: {short(ce['sides'])}; gap {ce['gap']:.3g} > "
                    f"tolerance "
                    f"{ce['tolerance']:.3g}; instance {short(ce['instance'])}"
                    if isinstance(ce["gap"], float)
                    else f"counterexample {r.claim}: {short(ce)}"
                )
                out.append(_shorten(line, width))
        return out


def _shorten(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


@contextlib.contextmanager
def single_threaded_blas():
    """Limit BLAS to one thread while checking: the batches are many tiny matrices, for which
    threaded OpenBLAS only adds contention (measured 15x slower for batched expm on a shared
    2-core machine)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ---------------------------------------------------------------------------------------------
# validation: ValueError naming the argument, the expectation and what was received


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def as_real_array(name: str, x: Any, *, context: str) -> np.ndarray:
    """``x`` as a finite float64 array; ValueError for complex, non-numeric or non-finite input."""
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise ValueError(
            f"{name} must be a real floating or integer array ({context}); got {_describe(arr)}"
        )
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} must be finite ({context}); got {int(np.sum(~np.isfinite(arr)))} "
            f"non-finite entries"
        )
    return arr


def as_square(name: str, x: Any, *, context: str, min_ndim: int = 2) -> np.ndarray:
    """A real finite ``(..., n, n)`` array."""
    arr = as_real_array(name, x, context=context)
    if arr.ndim < min_ndim or arr.shape[-1] != arr.shape[-2] or arr.shape[-1] == 0:
        raise ValueError(
            f"{name} must be a (batch of) square matrix of shape (..., n, n) with n >= 1 "
            f"({context}); got shape {arr.shape}"
        )
    return arr


def as_scalar_batch(
    name: str,
    x: Any,
    *,
    context: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> np.ndarray:
    """A real finite array of parameters with the stated bounds."""
    arr = as_real_array(name, x, context=context)
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= arr <= low if low_open else arr < low
    if high is not None:
        bad |= arr >= high if high_open else arr > high
    if np.any(bad):
        lo = "" if low is None else f"{'>' if low_open else '>='} {low}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high}"
        raise ValueError(
            f"{name} must be {' and '.join(s for s in (lo, hi) if s)} ({context}); got "
            f"{arr[bad].reshape(-1)[0]!r}"
        )
    return arr


def _integer_at_least(name: str, value: Any, minimum: int, kind: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a {kind} integer; got {_describe(value)}")
    return int(value)


def check_count(name: str, n: Any) -> int:
    return _integer_at_least(name, n, 1, "positive")


def check_callable(name: str, f: Any, *, context: str) -> Any:
    if not callable(f):
        raise TypeError(f"{name} must be callable ({context}); got {_describe(f)}")
    return f


def check_last_dim(name: str, x: np.ndarray, n: int, *, context: str, against: str) -> np.ndarray:
    """``x`` with last axis of length ``n`` (matching ``against``)."""
    if x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(
            f"{name} must have shape (..., {n}) to match {against} ({context}); got shape {x.shape}"
        )
    return x


def matching_vectors(n: int, against: str, *, context: str, **vectors: Any) -> list[np.ndarray]:
    """The ``vectors`` (name -> value) as real finite arrays of shape (..., n), ``n`` being the size
    of ``against``; a ValueError naming them all otherwise."""
    arrays = {name: as_real_array(name, v, context=context) for name, v in vectors.items()}
    if any(a.shape[-1:] != (n,) for a in arrays.values()):
        raise ValueError(
            f"{' and '.join(arrays)} must have shape (..., {n}) to match {against} ({context}); "
            "got " + ", ".join(f"{name} {a.shape}" for name, a in arrays.items())
        )
    return list(arrays.values())


def same_size(name: str, M: np.ndarray, n: int, *, context: str, against: str) -> np.ndarray:
    if M.shape[-1] != n:
        raise ValueError(
            f"{name} must be (..., {n}, {n}) like {against} ({context}); got shape {M.shape}"
        )
    return M


def check_seed(name: str, seed: Any) -> int:
    return _integer_at_least(name, seed, 0, "non-negative")


def rng_from(seed: int | np.random.Generator | None) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(None if seed is None else check_seed("seed", seed))


# ---------------------------------------------------------------------------------------------
# random instances, batched by size


def split_by_size(
    n_instances: int, rng: np.random.Generator, sizes: Sequence[int] = range(1, 13)
) -> list[tuple[int, int]]:
    """Draw a size for each of ``n_instances`` instances; return ``[(size, count), ...]`` so that
    each size is checked in one batch."""
    drawn = rng.choice(np.asarray(sizes), size=n_instances)
    return [(int(s), int(np.count_nonzero(drawn == s))) for s in sizes if np.any(drawn == s)]


def random_matrices(
    rng: np.random.Generator, count: int, n: int, *, log10_cond: float = 4.0, scale: float = 1.0
) -> np.ndarray:
    """``count`` real ``n x n`` matrices ``U diag(s) V^T`` with singular values spread
    log-uniformly over a random number of decades in ``[0, log10_cond]`` (so batches mix well-
    and ill-conditioned)."""
    u = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
    v = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
    decades = rng.uniform(0, log10_cond, size=(count, 1))
    s = scale * 10.0 ** (-decades * rng.uniform(0, 1, size=(count, n)))
    return (u * s[:, None, :]) @ np.swapaxes(v, -1, -2)


def worst_sv(matrices: np.ndarray) -> np.ndarray:
    """Smallest singular value of each matrix in a batch."""
    return np.linalg.svd(matrices, compute_uv=False)[..., -1]
