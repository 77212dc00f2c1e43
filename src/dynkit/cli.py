"""The ``dynkit`` command: verify, derive, solve, stiffness, nfe-sweep, train, report.

Every subcommand has ``--help`` (showing each option's default); ``dynkit --version`` prints the
version. Errors print one line, ``dynkit: error: ...``, unless ``--debug`` (then the traceback).
``--quiet`` silences progress output. An output-file option given ``-`` writes to standard output
(``dynkit verify --json -``); the human-readable text then goes to standard error. Output files are
written only as regular files (atomically): a ``--json``, ``--plot`` or ``--out`` file that is a
device node (``/dev/full``), a named pipe, a folder or a symbolic link is refused before any work,
naming it (exit 2), and left as it was; give the link's target instead of the link, or ``-`` for
standard output. A problem whose ``f`` calls ``sys.exit()`` is a failure (exit 3), whatever the
status it passes.

Exit codes (:data:`EXIT_CODES`): 0 success; 1 a check did not hold (``verify``, ``derive``,
``report``); 2 a usage error (bad option, argument, input or output file); 3 the work failed (a
solver failure, an error raised while computing, a component missing from the build); 141 the reader
of standard output closed the pipe (``dynkit derive NAME --latex | head``: no error message).

``dynkit solve FILE.py`` and ``dynkit stiffness FILE.py`` *run* ``FILE.py`` (and ``MODULE`` is
imported) with your privileges, as ``python FILE.py`` would: give them only code you trust.

The ODE of ``dynkit solve`` / ``dynkit stiffness`` (``SPEC``) is ``FILE.py``, ``FILE.py:NAME``,
``MODULE`` or ``MODULE:NAME``, resolved to an object that provides ``f``, ``y0`` and ``t``:

- a module (no ``:NAME``) defining ``f(t, y) -> dy/dt``, ``y0`` (array-like) and ``t`` (1-D
  increasing or decreasing output times, at least two);
- a mapping with keys ``"f"``, ``"y0"``, ``"t"``;
- a callable taking no arguments and returning such a mapping (``def problem(): return {...}``).

Example file ``decay.py``::

    import numpy as np
    def f(t, y): return -2.0 * y
    y0 = np.array([1.0])
    t = np.linspace(0.0, 1.0, 5)

then ``dynkit solve decay.py --method rk4 --step-size 0.01``. ``--param NAME=VALUE`` sets a
parameter: a keyword argument of the function (``def problem(mu=1.0): ...``) or a module global that
``f`` reads (``mu = 1.0`` at the top of the file); ``--t`` and ``--y0`` replace the file's times and
initial state::

    dynkit solve vdp.py:problem --param mu=1000 --t 0,3000 --method dopri5 --plot vdp.png
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

from .report import ComponentUnavailable, claim_holds, jsonable, require
from .report.common import require_any

__all__ = ["main", "load_problem", "CLIError"]


class CLIError(Exception):
    """A user error the CLI reports as one line."""


EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE, EXIT_FAILED, EXIT_BROKEN_PIPE = 0, 1, 2, 3, 141
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_CHECK_FAILED: "a check did not hold",
    EXIT_USAGE: "usage error: a bad option, argument, input or output file",
    EXIT_FAILED: "the work failed: a solver failure, an error while computing, a missing component",
    EXIT_BROKEN_PIPE: "the reader of standard output closed the pipe",
}


# --------------------------------------------------------------------------------------------------
# Loading a user's ODE


def _load_target(target: str) -> ModuleType:
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise CLIError(f"SPEC: file {target!r} does not exist")
        name = f"_dynkit_user_{abs(hash(str(path.resolve())))}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (
            SystemExit
        ) as exc:  # sys.exit() at import would end dynkit silently with the file's status
            raise CLIError(
                f"SPEC: running {target!r} called sys.exit({exc.code!r}); a problem file "
                f"must define "
                "f, y0 and t, not exit"
            ) from None
        except Exception as exc:  # the user's file does not run: say so in one line, naming it
            raise CLIError(f"SPEC: running {target!r} failed: {type(exc).__name__}: {exc}") from exc
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise CLIError(
            f"SPEC: cannot import module {target!r} ({exc}); give FILE.py, FILE.py:NAME, "
            "MODULE or MODULE:NAME"
        ) from None


def parse_param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` -> ``(NAME, value)``; the value is a Python literal (``1000``, ``1e-3``,
    ``[1, 2]``, ``True``) or else the string itself. A value that begins like a number, a
    container or a quoted string must be a valid literal (``1e-3x`` or an integer of 5000 digits
    is an error, not silently a string)."""
    import ast

    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise argparse.ArgumentTypeError(
            f"expected NAME=VALUE with NAME an identifier, got {text!r:.80}"
        )
    value = value.strip()
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        if value[:1] and value[0] in "0123456789+-.([{'\"":
            reason = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
            raise argparse.ArgumentTypeError(
                f"{name.strip()}: expected a Python literal (a number, list, quoted "
                f"string ...) or a bare word, got {_clipped(value)} ({reason})"
            ) from None
        parsed = value
    return name.strip(), parsed


def _clipped(text: str, width: int = 40) -> str:
    return (
        repr(text) if len(text) <= width else repr(text[:width]) + f"... ({len(text)} characters)"
    )


def load_problem(spec: str, params: dict | None = None) -> dict:
    """Resolve ``spec`` to ``{"f": callable, "y0": ndarray, "t": ndarray}`` (see the module
    docstring).

    ``params`` are keyword arguments of a problem function, or module globals that ``f`` reads
    (each must already exist in the module: a misspelt name is an error, not a silent no-op).
    """
    import numpy as np

    params = dict(params or {})
    if not isinstance(spec, str) or not spec.strip():
        raise CLIError(f"SPEC: expected FILE.py, FILE.py:NAME, MODULE or MODULE:NAME, got {spec!r}")
    target, _, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if ":" in spec and not (target and attr):
        raise CLIError(f"SPEC: expected FILE.py[:NAME] or MODULE[:NAME], got {spec!r}")
    obj: Any = _load_target(target)
    where = target
    if attr:
        if not hasattr(obj, attr):
            raise CLIError(f"SPEC: {target!r} has no attribute {attr!r}")
        obj, where = getattr(obj, attr), f"{target}:{attr}"
    if isinstance(obj, ModuleType):
        unknown = [k for k in params if not hasattr(obj, k)]
        if unknown:
            raise CLIError(
                f"--param: module {where!r} has no global {', '.join(map(repr, unknown))} to set "
                "(a parameter must be a module-level name that f reads, or an argument of a "
                "problem "
                "function given as FILE.py:NAME)"
            )
        for k, v in params.items():
            setattr(obj, k, v)
        missing = [k for k in ("f", "y0", "t") if not hasattr(obj, k)]
        if missing:
            raise CLIError(
                f"SPEC: module {where!r} must define f, y0 and t; missing: {', '.join(missing)}"
            )
        problem = {k: getattr(obj, k) for k in ("f", "y0", "t")}
    else:
        if callable(obj) and not isinstance(obj, dict):
            try:
                obj = obj(**params)
            except TypeError as exc:
                raise CLIError(
                    f"--param: {where!r} does not take {sorted(params)}: {exc}"
                ) from None
            except SystemExit as exc:
                raise CLIError(
                    f"SPEC: calling {where!r} called sys.exit({exc.code!r}); it must return a "
                    "mapping with f, y0 and t"
                ) from None
        elif params:
            raise CLIError(
                f"--param: {where!r} is a mapping; parameters need a module or a problem function"
            )
        if not hasattr(obj, "keys"):
            raise CLIError(
                f"SPEC: {where!r} must be (or return) a mapping with keys f, y0, t; "
                f"got {type(obj).__name__}"
            )
        missing = [k for k in ("f", "y0", "t") if k not in obj]
        if missing:
            raise CLIError(
                f"SPEC: {where!r} must provide f, y0 and t; missing: {', '.join(missing)}"
            )
        problem = {k: obj[k] for k in ("f", "y0", "t")}
    if not callable(problem["f"]):
        raise CLIError(f"SPEC: f must be callable f(t, y), got {type(problem['f']).__name__}")
    for key in ("y0", "t"):
        if np.iscomplexobj(
            problem[key]
        ):  # np.asarray(dtype=float) would drop the imaginary parts silently
            raise CLIError(
                f"SPEC: {key} must be real, got complex values {problem[key]!r:.80} "
                f"(dk.solve integrates "
                f"real states: split z into [z.real, z.imag] and f accordingly)"
            )
        try:
            problem[key] = np.asarray(problem[key], dtype=float)
        except (TypeError, ValueError) as exc:
            raise CLIError(
                f"SPEC: {key} must be an array of numbers, got {problem[key]!r:.80} ({exc})"
            ) from None
    if problem["t"].ndim != 1 or problem["t"].size < 2:
        raise CLIError(
            f"SPEC: t must be 1-D with at least two times, got shape {problem['t'].shape}"
        )
    return problem


# --------------------------------------------------------------------------------------------------
# Subcommands. Each takes the parsed namespace and returns an exit code.

STDOUT = "-"
"""An output path that means standard output."""


def _stdout_taken(args) -> bool:
    """Whether an output option writes its data to standard output (then text goes to stderr)."""
    return any(getattr(args, name, None) == STDOUT for name in ("json", "plot"))


def _say(args, *lines: str) -> None:
    stream = sys.stderr if _stdout_taken(args) else sys.stdout
    for line in lines:
        print(line, file=stream)


def _check_status(problems: dict[str, list[str]]) -> int:
    """:data:`EXIT_OK` when every list in ``problems`` (what went wrong -> the names it concerns) is
    empty; else each non-empty one said on standard error and :data:`EXIT_CHECK_FAILED`."""
    for what, names in problems.items():
        if names:
            print(f"dynkit: {what}: {', '.join(names)}", file=sys.stderr)
    return EXIT_CHECK_FAILED if any(problems.values()) else EXIT_OK


def _progress(args, line: str) -> None:
    if not args.quiet:
        print(line, file=sys.stderr, flush=True)


def _write_json(path: str | None, data: dict, args, config: dict) -> None:
    if not path:
        return
    command = "dynkit " + " ".join(args.argv)
    if path == STDOUT:
        from .io import versions

        payload = {
            **jsonable(data),
            "config": jsonable(config),
            "command": command,
            "versions": versions(),
        }
        json.dump(payload, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    from .io import write_json

    write_json(path, jsonable(data), config=jsonable(config), command=command, option="--json")
    _progress(args, f"wrote {path}")


def _write_png(path: str, draw: Callable[[Any], None], args) -> None:
    """Draw with ``draw(figure)`` (matplotlib's object API: no backend is chosen) and write a PNG
    to ``path`` (``-``: standard output)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5))
    draw(fig)
    fig.tight_layout()
    if path == STDOUT:
        fig.savefig(sys.stdout.buffer, format="png", dpi=110)
        sys.stdout.buffer.flush()
        return
    from .io import save_figure

    save_figure(fig, path, dpi=110, option="--plot")
    _progress(args, f"wrote {path}")


def _verdict_of(row) -> str:
    """A row's verdict; tables without one (older builds) give holds / false as stated from
    ``held``."""
    return getattr(row, "verdict", None) or ("holds" if claim_holds(row) else "false as stated")


def cmd_verify(args) -> int:
    """Print the claim table (verdict column, one summary line per verdict). Exit 1 only when a
    check errored or a verdict differs from the one recorded in the code for that claim (a
    regression): a claim that is false as stated, and recorded so, is not a failure."""
    if args.list:
        claims = require("theory.CLAIMS")
        for cid, claim in claims.items():
            expected = getattr(claim, "expected_verdict", None)
            what = getattr(claim, "summary", "") or claim.statement
            _say(
                args,
                f"{cid}: {claim.paper}, "
                f"{claim.equation}{f' [{expected}]' if expected else ''} — {what}",
            )
        return 0
    run_all = require("theory.run_all")
    if args.claims:
        known = require("theory.CLAIMS")
        unknown = [c for c in args.claims if c not in known]
        if unknown:
            raise CLIError(f"unknown claim(s) {', '.join(unknown)}; known: {', '.join(known)}")
    _progress(
        args,
        f"checking {'all claims' if not args.claims else ', '.join(args.claims)} "
        f"on {args.instances} instances (seed {args.seed}) ...",
    )
    table = run_all(
        n_instances=args.instances,
        seed=args.seed,
        claims=args.claims or None,
        progress=not args.quiet,
    )  # a bar on standard error, one step per claim
    _say(args, str(table))
    if not hasattr(
        table, "summary_lines"
    ):  # a table without its own summary: one line per verdict here
        counts: dict = {}
        for row in table.rows:
            counts.setdefault(_verdict_of(row), []).append(row.claim)
        _say(
            args,
            *(f"{len(names)} {verdict}: {', '.join(names)}" for verdict, names in counts.items()),
        )
    _write_json(
        args.json,
        table.to_dict(),
        args,
        {"instances": args.instances, "seed": args.seed, "claims": args.claims or "all"},
    )
    errored = [r.claim for r in table.rows if getattr(r, "error", None)]
    changed = [
        f"{r.claim} ({_verdict_of(r)}, recorded {getattr(r, 'expected_verdict', 'holds')})"
        for r in table.rows
        if not getattr(r, "error", None)
        and _verdict_of(r) != getattr(r, "expected_verdict", "holds")
    ]
    return _check_status(
        {
            "check(s) that errored": errored,
            "verdict(s) that differ from the recorded ones": changed,
        }
    )


def _first_line(fn: Callable) -> str:
    """The first line of a derivation function's docstring ('' without one): what ``derive``
    lists."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def cmd_derive(args) -> int:
    derivations = require("symbolic.DERIVATIONS")
    if not args.names and not args.all:
        width = max(map(len, derivations), default=0)
        _say(
            args,
            *(f"{name:<{width}}  {_first_line(fn)}".rstrip() for name, fn in derivations.items()),
        )
        return 0
    unknown = [n for n in args.names if n not in derivations]
    if unknown:
        raise CLIError(
            f"unknown derivation(s) {', '.join(unknown)}; known: {', '.join(derivations)}"
        )
    if args.all and args.names:
        raise CLIError(
            f"give derivation names or --all, not both; got --all and {' '.join(args.names)}"
        )
    names = list(derivations) if args.all else args.names
    failed = []
    for name in names:
        d = derivations[name]()
        # readable math on a terminal; Markdown into a pipe or a file (as `ledger` does); LaTeX on
        # request
        fmt = (
            "latex"
            if args.latex
            else "markdown"
            if args.markdown
            else "text"
            if args.text
            else "text"
            if sys.stdout.isatty()
            else "markdown"
        )
        _say(
            args,
            d.to_latex()
            if fmt == "latex"
            else d.to_markdown()
            if fmt == "markdown"
            else d.to_text(),
            "",
        )
        if not d.check_passed:
            failed.append(name)
    return _check_status({"derived result differs from the paper's for": failed})


def _solve_options(args) -> dict:
    from .solvers import METHODS

    if args.step_size is not None and getattr(METHODS.get(args.method), "adaptive", False):
        raise CLIError(
            f"--step-size is for the fixed-step methods; {args.method} is adaptive (set "
            f"--rtol/--atol), "
            f"got --method {args.method} --step-size {args.step_size:g}"
        )
    opts = {"method": args.method, "rtol": args.rtol, "atol": args.atol}
    if args.step_size is not None:
        opts["step_size"] = args.step_size
    if args.max_steps is not None:
        opts["max_steps"] = args.max_steps
    return opts


def cmd_solve(args) -> int:
    import numpy as np

    from . import solve

    problem = _problem(args)
    opts = _solve_options(args)
    start = time.perf_counter()
    sol = solve(problem["f"], problem["y0"], problem["t"], dense=bool(args.plot), **opts)
    seconds = time.perf_counter() - start
    st = sol.stats
    with np.printoptions(precision=10, suppress=False):
        _say(
            args,
            f"method     {args.method}"
            + (
                f" (step size {args.step_size:g})"
                if args.step_size
                else f" (rtol {args.rtol:g}, atol {args.atol:g})"
            ),
            f"t          {float(sol.ts[0]):g} -> {float(sol.ts[-1]):g} ({len(sol.ts)} output "
            f"times)",
            f"nfe        {st.nfe}",
            f"steps      {st.n_steps} ({st.n_accepted} accepted, {st.n_rejected} rejected)",
            f"y(t_end)   {np.asarray(sol.ys[-1])}",
            f"seconds    {seconds:.3f}",
        )
    _write_json(
        args.json,
        {
            "stats": st.as_dict(),
            "ts": np.asarray(sol.ts),
            "ys": np.asarray(sol.ys),
            "seconds": seconds,
        },
        args,
        {"spec": args.spec, "params": dict(args.param), **opts},
    )
    if args.plot:
        _write_png(
            args.plot,
            lambda fig: _draw_solution(fig, sol, f"{args.spec} ({args.method}, nfe {st.nfe})"),
            args,
        )
    return 0


PLOT_POINTS = 2000
"""Dense-output samples of ``solve --plot``, on top of the accepted step ends."""


def plot_curve(sol) -> tuple[Any, Any, Any]:
    """``(t, y, t_steps)`` that ``solve --plot`` draws: the dense output on an even grid of
    :data:`PLOT_POINTS` times merged with the accepted step ends ``t_steps`` (as scipy's
    ``t_eval=None`` shows every step), ``y`` shaped ``(len(t), n_components)``."""
    import numpy as np

    t_steps = np.asarray([sol.dense.t0, *sol.dense.ends])
    t = np.union1d(np.linspace(t_steps[0], t_steps[-1], PLOT_POINTS), t_steps)
    if t_steps[-1] < t_steps[0]:
        t = t[::-1]
    return t, np.asarray(sol.evaluate(t)).reshape(len(t), -1), t_steps


def _draw_solution(fig, sol, title: str) -> None:
    import numpy as np

    t, y, t_steps = plot_curve(sol)
    at_steps = np.asarray(sol.evaluate(t_steps)).reshape(len(t_steps), -1)
    ax = fig.subplots()
    for i in range(y.shape[1]):
        (line,) = ax.plot(t, y[:, i], lw=1.2, label=f"y[{i}]")
        if len(t_steps) <= 400:  # the accepted steps, where they can be told apart
            ax.plot(t_steps, at_steps[:, i], ".", ms=3, color=line.get_color())
    ax.set(xlabel="t", ylabel="y", title=f"{title}, {len(t_steps) - 1} steps (dots, when ≤ 400)")
    ax.grid(alpha=0.3)
    if y.shape[1] <= 10:
        ax.legend()


def _problem(args) -> dict:
    """The SPEC's problem with ``--param`` applied and ``--t`` / ``--y0`` overriding its times
    and state."""
    import numpy as np

    problem = load_problem(args.spec, dict(args.param))
    if args.t is not None:
        t = np.asarray(args.t, dtype=float)
        if t.size < 2:
            raise CLIError(f"--t: expected at least two times, got {args.t}")
        problem["t"] = t
    if args.y0 is not None:
        y0 = np.asarray(args.y0, dtype=float)
        if y0.size != problem["y0"].size:
            raise CLIError(
                f"--y0: expected {problem['y0'].size} values (the size of the file's y0), "
                f"got {y0.size}"
            )
        problem["y0"] = y0.reshape(problem["y0"].shape)
    return problem


STIFFNESS_ROUNDS = (250, 2000)
"""Step budgets of the first attempts of ``dynkit stiffness`` (each step of them analysed: at most
``max_jacobians`` = 2000), before the whole ``--max-steps``."""


def cmd_stiffness(args) -> int:
    """Stiffness report, stopping as soon as the verdict is settled: the solve is stiff once
    ``min_run`` consecutive steps were stability-limited (more steps cannot undo that), or it
    reached ``t[-1]``. Solves of :data:`STIFFNESS_ROUNDS` steps come first, then the whole
    ``--max-steps``; ``--to-end`` integrates the whole span (up to ``--max-steps``) at once."""
    stiffness_report = require("diagnostics.stiffness_report")
    problem = _problem(args)
    import inspect

    cap = args.max_steps or inspect.signature(stiffness_report).parameters["max_steps"].default
    budgets = [cap] if args.to_end else [n for n in STIFFNESS_ROUNDS if n < cap] + [cap]
    for budget in budgets:
        _progress(args, f"stiffness: solving with {args.method}, at most {budget} steps ...")
        rep = stiffness_report(
            problem["f"],
            problem["y0"],
            problem["t"],
            method=args.method,
            rtol=args.rtol,
            atol=args.atol,
            max_steps=budget,
        )
        settled = rep.is_stiff or rep.complete
        _progress(
            args,
            f"stiffness: {rep.n_accepted_steps} steps to t = {rep.t_reached:.6g} of "
            f"{rep.t_end:.6g}; "
            f"longest stability-limited run {rep.longest_run} (stiff at {rep.min_run})"
            + ("; verdict settled" if settled else ""),
        )
        if settled:
            break
    _say(args, rep.summary())
    if not rep.complete and rep.is_stiff and budget < cap:
        _say(
            args,
            f"stopped after {budget} steps: the verdict (stiff) is settled; --to-end "
            f"integrates the "
            f"whole span (up to --max-steps {cap})",
        )
    _write_json(
        args.json,
        rep.to_dict(),
        args,
        {
            "spec": args.spec,
            "params": dict(args.param),
            "method": args.method,
            "rtol": args.rtol,
            "atol": args.atol,
            "max_steps": cap,
            "to_end": args.to_end,
            "steps_budget": budget,
        },
    )
    return 0


def cmd_nfe_sweep(args) -> int:
    nfe_vs_tolerance = require_any("experiments.nfe_vs_tolerance", "diagnostics.nfe_vs_tolerance")
    from .experiments.node.nfe_tolerance import (
        UNTRAINED,
        is_untrained,
        sweep_training,
        write_nfe_sweep,
    )
    from .io import check_output_path, check_writable_dir

    out = check_writable_dir(args.out, "--out")  # before the sweep, not after it
    for name in ("nfe_sweep.json", "nfe_sweep.png"):
        check_output_path(out / name, "--out")
    # out=None: the sweep writes nothing itself; write_nfe_sweep writes both files, as the library
    # does.
    kwargs = {
        "models": tuple(args.models),
        "task": args.task,
        "seed": args.seed,
        "out": None,
        "quiet": args.quiet,
    }
    if args.train_epochs:
        kwargs["train_epochs"] = args.train_epochs
    if args.solver is not None:  # unset: the sweep's own default (dk.solve)
        kwargs["solver"] = args.solver
    if args.tolerances:
        kwargs["tolerances"] = tuple(args.tolerances)
    if args.n_batches is not None:
        kwargs["n_batches"] = args.n_batches
    results = nfe_vs_tolerance(**kwargs)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in kwargs.items() if k != "out"}
    config.update(out=str(out), train_epochs=args.train_epochs)
    write_nfe_sweep(
        results, out, "nfe_sweep", config=config, command="dynkit " + " ".join(args.argv)
    )
    training = sweep_training(results, config)
    for model, per_tol in results.items():
        label = f"{model} ({UNTRAINED})" if is_untrained(training.get(model)) else model
        for tol, r in per_tol.items():
            _say(
                args,
                f"{label:20s} tol {tol:>8s}  forward NFE {r['forward_nfe']['mean']:8.1f} ± "
                f"{r['forward_nfe']['std']:.1f}  backward NFE {r['backward_nfe']['mean']:8.1f} ± "
                f"{r['backward_nfe']['std']:.1f}",
            )
    if any(is_untrained(record) for record in training.values()):
        _say(
            args,
            f"{UNTRAINED}: the models are measured as initialised (--train-epochs N trains "
            f"them first)",
        )
    _progress(args, f"wrote {out / 'nfe_sweep.json'} and {out / 'nfe_sweep.png'}")
    return 0


def _device(text: str) -> str:
    """``--device`` checked as every training entry checks it (:func:`dynkit._checks.device`),
    before any work."""
    from ._checks import device

    return device(text, "--device")


def cmd_train(args) -> int:
    run_training = require("tasks.run_training")
    device = _device(args.device)
    kwargs = {
        "epochs": args.epochs,
        "out": args.out,
        "seed": args.seed,
        "resume": args.resume,
        "quiet": args.quiet,
        "method": args.method,
        "full": args.full,
    }
    if args.solver is not None:  # unset: the task's own (dk.solve; a CSAODE model's is its name)
        kwargs["solver"] = args.solver
    kwargs["device"] = device
    if args.resume:
        checkpoint = Path(args.out or ".") / "checkpoint.pt"
        if args.out is not None and checkpoint.exists():
            _progress(args, f"resuming from {checkpoint}")
        else:
            _progress(args, f"no checkpoint at {checkpoint}: starting from epoch 1")
    if args.data_dir is not None:
        kwargs["data_dir"] = args.data_dir
    if args.tol is not None:
        kwargs["tol"] = args.tol
    result = run_training(args.model, args.task, **kwargs)
    # Print the scalars, one level of nesting deep (e.g. final.test_acc); histories stay in the
    # files.
    flat = {}
    for k, v in result.items():
        for k2, v2 in v.items() if isinstance(v, dict) else [(None, v)]:
            if v2 is None or isinstance(v2, (int, float, str, bool)):
                flat[k if k2 is None else f"{k}.{k2}"] = v2
    for k, v in flat.items():
        _say(args, f"{k:24s} {v:.6g}" if isinstance(v, float) else f"{k:24s} {v}")
    return 0


def cmd_build_kernels(args) -> int:
    """``dynkit build-kernels``: the kernels compiled into numba's cache (or loaded from it),
    one line each, so that the first ``compile=True`` solve of a later process does not compile."""
    from .report.common import ComponentUnavailable
    from .solvers.compiled import JIT_HINT, numba_available

    if not numba_available():
        raise ComponentUnavailable(
            f"build-kernels needs numba, which is not installed ({JIT_HINT})"
        )
    from .solvers.compiled.build import build_kernels, where

    _progress(args, f"build-kernels: {where()}")
    for build in build_kernels(args.methods or None):
        _say(args, build.line())
    return 0


def cmd_report(args) -> int:
    from .io import check_writable_dir
    from .report import build_report, statuses

    check_writable_dir(args.out, "--out")
    path = build_report(
        args.out,
        quick=args.quick,
        seed=args.seed,
        quiet=args.quiet,
        debug=args.debug,
        argv=["dynkit", *args.argv],
    )
    status = statuses(path.parent)
    _say(args, f"report: {path}", *(f"  {k:18s} {v}" for k, v in status.items()))
    bad = {k: v for k, v in status.items() if v in ("failed", "error")}
    if args.strict:
        bad.update({k: v for k, v in status.items() if v == "unavailable"})
    return _check_status({"report sections not ok": [f"{k} ({v})" for k, v in bad.items()]})


def cmd_run(args) -> int:
    """``dynkit run NAME``: every (seed, config point) shard of a registered experiment, one line
    per shard."""
    from .io import check_writable_dir

    run = require("experiments.run")
    require("experiments.get")(args.name).config(
        args.scale
    )  # the paper scale refuses before any folder is made
    device = _device(args.device)
    if args.plan is not None and not args.planned:
        raise CLIError(
            f"--plan {args.plan!r} applies only with --planned (without it the seeds are "
            f"--seeds'); "
            "add --planned, or leave --plan out"
        )
    plan = None
    if (
        args.planned and args.plan is not None
    ):  # read (a regular file only) before any folder is made
        from .experiments.judging.plans import load_plan

        plan = load_plan(args.plan, "--plan")
    out = args.out or f"runs/experiments/{args.name}/{args.scale}"
    from .experiments.runner import RUN_FOLDER_MARKS
    from .io import check_own_folder

    check_own_folder(out, "--out", RUN_FOLDER_MARKS)  # not /, nor a folder of other files
    check_writable_dir(out, "--out")
    kwargs = {
        "notice": lambda line: print(
            f"dynkit run: {line}", file=sys.stderr, flush=True
        ),  # even if --quiet
        "scale": args.scale,
        "seeds": tuple(args.seeds),
        "out": out,
        "backend": args.backend,
        "device": device,
        "progress": (lambda line: None)
        if args.quiet
        else (lambda line: print(line, file=sys.stderr, flush=True)),
    }
    if args.address is not None:
        kwargs["address"] = args.address
    if (
        args.planned
    ):  # the looks of NAME's committed plan, until every ledger row of NAME is decided
        from .experiments.judging.planned import run_planned

        del kwargs["seeds"]
        results = run_planned(args.name, plan, **kwargs)
    else:
        results = run(args.name, **kwargs)
    for name, stats in results["metrics"].items():
        lo, hi = stats["ci_low"], stats["ci_high"]
        ci = f" [{lo:.4g}, {hi:.4g}]" if lo is not None and stats["n_seeds"] > 1 else ""
        mean = "no finite value" if stats["mean"] is None else f"{stats['mean']:.4g}"
        _say(args, f"{name:48s} {mean}{ci} (n={stats['n_seeds']})")
    _progress(args, f"wrote {Path(out) / 'results.json'}")
    return 0


def cmd_ledger(args) -> int:
    """``dynkit ledger``: every empirical claim of the papers with our number and its verdict, as
    a table fitted to the terminal (rich), or ``--format json|csv|md``."""
    ledger = require("experiments.ledger")
    _progress(
        args,
        f"ledger: computing every claim's outcome from "
        f"{args.results or 'the results of record'} ...",
    )
    started = time.perf_counter()
    table = ledger(args.results) if args.results else ledger()
    _progress(args, f"ledger: {len(table.rows)} rows in {time.perf_counter() - started:.1f} s")
    if args.json:
        from .io import write_json

        write_json(
            args.json, table.to_dict(), command="dynkit " + " ".join(args.argv), option="--json"
        )
    fmt = args.format or (
        "table" if sys.stdout.isatty() else "md"
    )  # a pipe or a file gets Markdown, as ls does
    if fmt == "json":
        json.dump(jsonable(table.to_dict()), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif fmt == "csv":
        import csv

        records = table.records()
        writer = csv.DictWriter(
            sys.stdout, fieldnames=list(records[0]) if records else [], lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(records)
    elif fmt == "table" and _print_rich_table(table):
        pass
    else:
        print(table.to_markdown())
    return 0


LEDGER_TABLE_COLUMNS = ("question", "evidence", "outcome", "what we measured", "id")


def _print_rich_table(table) -> bool:
    """Print the ledger as a rich table wrapped to the terminal's width, the replications first,
    then the pilots, then the rows not run; False when rich is not installed."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(
            "dynkit ledger: rich is not installed (pip install 'dynkit[cli]'): printing Markdown",
            file=sys.stderr,
        )
        return False
    records = table.records()
    out = Table(expand=True, title=f"{len(table.rows)} empirical claims", caption=table.headline())
    # an id breaks only after its dots, each part on a line of its own in a column as wide as its
    # longest part (a terminal too narrow for that folds the longest parts)
    console = Console(soft_wrap=False)
    longest = max((len(part) + 1 for r in records for part in r["id"].split(".")), default=2)
    widths = {
        "evidence": len("replication"),
        "outcome": len("inconclusive"),
        "id": min(longest, max(12, console.width // 5)),
    }
    for name in LEDGER_TABLE_COLUMNS:  # fixed widths for words and ids, shares of the rest: prose
        out.add_column(
            name,
            overflow="fold",
            no_wrap=False,
            width=widths.get(name),
            ratio={"question": 2, "what we measured": 3}.get(name),
        )
    order = {"replication": 0, "pilot": 1, "not run": 2}
    for record in sorted(records, key=lambda r: order.get(r["evidence"], 3)):
        out.add_row(
            record["question"],
            record["evidence"],
            record["outcome"],
            record["summary"],
            record["id"].replace(".", ".\n"),
        )
    console.print(out)
    return True


# --------------------------------------------------------------------------------------------------
# Parser


def _csv(kind: Callable[[str], Any], what: str) -> Callable[[str], list]:
    """A comma-separated list of at least one item, none empty (``''`` and ``,,`` are errors, not
    the default)."""

    def parse(text: str) -> list:
        items = text.split(",")
        if any(not x.strip() for x in items):
            raise argparse.ArgumentTypeError(
                f"expected comma-separated {what}, none empty, got {text!r:.80}"
            )
        try:
            return [kind(x.strip()) for x in items]
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(
                f"expected comma-separated {what}, got {text!r:.80}"
            ) from None

    return parse


SEED_MAX = 2**32 - 1
"""The largest seed every generator accepts (``numpy.random.seed``)."""


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(
            f"expected an integer in [0, {SEED_MAX}], got {text!r:.40}"
        )
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _method_names() -> list[str]:
    from .solvers import METHODS

    return list(METHODS)


class _HelpFormatter(argparse.HelpFormatter):
    """Shows every option's default in ``--help`` (unless its help already states it, or there is
    none)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        unset = default is None or default is False or default is argparse.SUPPRESS or default == []
        if "default" in text or unset or not action.option_strings:
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {shown})" if text else f"default: {shown}"


USER_CODE_WARNING = (
    "FILE.py is executed (MODULE imported) with your privileges, as `python FILE.py` would run it: "
    "give it only code you trust."
)

TRAIN_METHODS = ("euler", "midpoint", "rk4", "bosh3", "dopri5")
"""The steppers ``dynkit train`` offers: the dynkit names that torchdiffeq also implements, so that
every one runs with both ``--solver dynkit`` (the default) and ``--solver torchdiffeq``."""

TRAIN_SOLVERS = ("dynkit", "torchdiffeq")
"""The ODE engines of ``dynkit train`` and ``dynkit nfe-sweep``
(:class:`dynkit.models.ODEBlock`'s ``solver``)."""


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback on errors",
    )
    common.add_argument(
        "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress output"
    )

    parser = argparse.ArgumentParser(
        prog="dynkit",
        parents=[common],
        formatter_class=_HelpFormatter,
        description="Derive, verify, integrate and train momentum-based neural ODEs.",
        epilog="Run `dynkit COMMAND --help` for a command's options. An output FILE of - means "
        "standard output. "
        "Exit codes: " + "; ".join(f"{code} {what}" for code, what in EXIT_CODES.items()) + ".",
    )
    parser.add_argument("--version", action="version", version=f"dynkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(
        name: str, fn: Callable, help: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            parents=[common],
            help=help,
            description=description or help,
            formatter_class=_HelpFormatter,
        )
        p.set_defaults(func=fn)
        return p

    p = add(
        "verify",
        cmd_verify,
        "run the numerical checks of the papers' propositions",
        "Run the proposition checks of dynkit.theory and print a table (claim, verdict about "
        "the paper's "
        "statement as written, paper/equation, instances, held, worst residual) with one "
        "summary line per "
        "verdict. Exit code 1 only if a check errors or a verdict differs from the one "
        "recorded in the code "
        "(a regression); a claim recorded as false as stated is not a failure.",
    )
    p.add_argument(
        "claims", nargs="*", metavar="CLAIM", help="claim ids to check (default: all; see --list)"
    )
    p.add_argument(
        "--instances",
        type=_positive_int,
        default=1000,
        help="random instances per claim (default 1000)",
    )
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    p.add_argument(
        "--json", metavar="FILE", help="also write the table as JSON (- for standard output)"
    )
    p.add_argument("--list", action="store_true", help="list the claims and exit")

    p = add(
        "derive",
        cmd_derive,
        "list or render the symbolic derivations",
        "Without NAME, list the derivations of dynkit.symbolic, one line each; with NAME(s), "
        "render them: "
        "equations drawn in Unicode on a terminal, Markdown into a pipe or a file, LaTeX "
        "with --latex. "
        "Exit code 1 if a derived result differs from the paper's equation.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="derivations to render")
    p.add_argument("--all", action="store_true", help="render every derivation")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument(
        "--latex", action="store_true", help="render as LaTeX (a fragment for amsmath)"
    )
    fmt.add_argument(
        "--markdown",
        action="store_true",
        help="render as Markdown with $$ math (the default into a pipe or a file)",
    )
    fmt.add_argument(
        "--text",
        action="store_true",
        help="render as plain text, equations drawn in Unicode (the default on a terminal)",
    )

    spec_help = (
        "the ODE: FILE.py, FILE.py:NAME, MODULE or MODULE:NAME providing f(t, y), y0 and t "
        "(a module with those names, a mapping, or a function returning a mapping)"
    )
    methods = _method_names()
    for name, fn, help in (
        ("solve", cmd_solve, "integrate an ODE given in a Python file or module and print stats"),
        ("stiffness", cmd_stiffness, "stiffness report of an ODE given in a Python file or module"),
    ):
        p = add(
            name,
            fn,
            help,
            help + ". " + spec_help[0].upper() + spec_help[1:] + ". " + USER_CODE_WARNING,
        )
        p.add_argument(
            "spec", metavar="SPEC", help=spec_help + "; FILE.py runs with your privileges"
        )
        p.add_argument(
            "--param",
            type=parse_param,
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="set a parameter of the problem (repeatable), e.g. --param mu=1000",
        )
        p.add_argument(
            "--t",
            type=_csv(float, "times"),
            metavar="T0,T1[,...]",
            help="output times, replacing the file's t (e.g. 0,3000)",
        )
        p.add_argument(
            "--y0",
            type=_csv(float, "numbers"),
            metavar="Y1,Y2[,...]",
            help="initial state, replacing the file's y0",
        )
        p.add_argument(
            "--method",
            default="dopri5",
            choices=methods,
            metavar="METHOD",
            help=f"stepper, one of {', '.join(methods)}",
        )
        p.add_argument(
            "--rtol", type=float, default=1e-6, help="relative tolerance (adaptive methods)"
        )
        p.add_argument(
            "--atol",
            type=float,
            default=1e-8 if name == "solve" else 1e-9,
            help="absolute tolerance (adaptive methods)",
        )
        if name == "solve":
            p.add_argument(
                "--step-size", type=float, help="step size (required by fixed-step methods)"
            )
        p.add_argument(
            "--max-steps",
            type=_positive_int,
            help="maximum number of steps (default: the solver's, 100000)",
        )
        p.add_argument(
            "--json", metavar="FILE", help="also write the result as JSON (- for standard output)"
        )
        if name == "solve":
            p.add_argument(
                "--plot",
                metavar="FILE",
                help="also plot y(t) to a PNG (- for standard output): the dense "
                "output between the accepted steps, which are dotted",
            )
        if name == "stiffness":
            p.add_argument(
                "--to-end",
                action="store_true",
                help="integrate the whole span (up to --max-steps) even once the verdict is "
                "settled "
                "(default: stop as soon as the solve is stiff, trying 250, then 2000 steps first)",
            )

    p = add(
        "nfe-sweep",
        cmd_nfe_sweep,
        "NFE vs solver tolerance curves of neural ODE models (JSON + PNG)",
    )
    p.add_argument(
        "--models",
        type=_csv(str, "model names"),
        default=["node", "hbnode"],
        help="comma-separated models, e.g. node,anode,sonode,hbnode,ghbnode (default node,hbnode)",
    )
    p.add_argument("--task", default="digits", help="task (default digits)")
    p.add_argument(
        "--tolerances",
        type=_csv(float, "numbers"),
        help="comma-separated tolerances, e.g. 1e-3,1e-5",
    )
    p.add_argument(
        "--n-batches", type=_positive_int, help="batches per point (default: the sweep's)"
    )
    p.add_argument("--seed", type=_seed, default=0, help="random seed")
    p.add_argument(
        "--out", default="runs/nfe_sweep", help="output folder for nfe_sweep.json and nfe_sweep.png"
    )
    p.add_argument(
        "--solver",
        choices=TRAIN_SOLVERS,
        help="ODE solver of the models: dynkit (dk.solve, the default) or torchdiffeq (the "
        "papers' code)",
    )
    p.add_argument(
        "--train-epochs",
        type=_non_negative_int,
        default=0,
        help="epochs to train each model on the task first; 0: measured as initialised, labelled "
        "UNTRAINED in the table, the JSON and the figure",
    )

    p = add("train", cmd_train, "train a model on a task (progress bar, checkpoints, --resume)")
    p.add_argument(
        "--model",
        required=True,
        help="node, anode, sonode, hbnode, ghbnode (image/point-cloud tasks) or csark, csarkf, "
        "csaark (text)",
    )
    p.add_argument(
        "--task",
        required=True,
        help="point_cloud, digits, fashion_mnist, or a text set: trec, subj, mr, cr, mpqa",
    )
    p.add_argument(
        "--data-dir", default=None, help="folder of the sentence-classification files (text tasks)"
    )
    p.add_argument("--epochs", type=_positive_int, help="epochs (default: the task's)")
    p.add_argument(
        "--out",
        default=None,
        help="run folder (checkpoints, results; default: none, nothing saved)",
    )
    p.add_argument("--seed", type=_seed, default=0, help="random seed")
    p.add_argument(
        "--resume", action="store_true", help="continue from the last checkpoint in --out"
    )
    p.add_argument(
        "--method",
        default="dopri5",
        choices=TRAIN_METHODS,
        metavar="METHOD",
        help=f"ODE stepper of the neural-ODE models, one of {', '.join(TRAIN_METHODS)}",
    )
    p.add_argument(
        "--device",
        default="cpu",
        help="torch device to train on: cpu, cuda, cuda:N or mps, one this machine has",
    )
    p.add_argument("--tol", type=float, help="solver tolerance (default: the task's)")
    p.add_argument(
        "--solver",
        choices=TRAIN_SOLVERS,
        help="ODE solver of the neural-ODE models: dynkit (dk.solve, the default) or torchdiffeq "
        "(the papers' code)",
    )
    p.add_argument(
        "--full", action="store_true", help="the paper-size run instead of the small default"
    )

    p = add(
        "build-kernels",
        cmd_build_kernels,
        "compile the compiled path's kernels into the cache ahead of their first solve",
        "Compile the kernels of dk.solve(..., compile=True) (the explicit loop, radau5, bdf, "
        "the Rosenbrock methods: 10-45 s of CPU each from nothing) into numba's on-disk cache, "
        "or load them where the cache is up to date (about a second), one line per kernel. "
        "`make install` runs it. A kernel whose code or versions changed since is compiled "
        "again on its first solve, as always.",
    )
    p.add_argument(
        "--methods",
        type=_csv(str, "methods"),
        default=None,
        metavar="M[,M...]",
        help="only the kernels of these methods (default: every kernel)",
    )

    p = add(
        "report",
        cmd_report,
        "build the HTML + Markdown report (the job behind `make demo`)",
        "Run the proposition checks, render the derivations, measure the steppers, compare "
        "them with "
        "scipy and run a small NFE-vs-tolerance experiment into OUT/report.html (self-contained), "
        "OUT/report.md and OUT/report.json. Exit code 1 if a section failed or raised.",
    )
    p.add_argument("--out", default="report", help="output folder")
    p.add_argument("--quick", action="store_true", help="smallest sizes (for tests and CI)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed")
    p.add_argument(
        "--strict",
        action="store_true",
        help="also fail when a section's component is not installed",
    )

    p = add(
        "run",
        cmd_run,
        "run a registered experiment: one shard per (seed, config point), resumable",
        "Run the experiment NAME of dk.experiments.EXPERIMENTS at a scale (smoke: seconds, "
        "cpu: minutes, "
        "full: the paper's size) for each seed; finished shards under --out are reused. Writes "
        "OUT/results.json (mean and 95% CI per metric) and the experiment's figures.",
    )
    p.add_argument("name", metavar="NAME", help="experiment name (see dk.experiments.EXPERIMENTS)")
    p.add_argument(
        "--scale",
        default="cpu",
        choices=["smoke", "cpu", "full", "paper"],
        help="size (default cpu); paper: the authors' recipe (dynkit.experiments.recipes), "
        "refused while "
        "the code lacks a piece of it",
    )
    p.add_argument(
        "--seeds",
        type=_csv(_seed, f"integers in [0, {SEED_MAX}]"),
        default=[0, 1, 2],
        help="comma-separated seeds (default 0,1,2)",
    )
    p.add_argument(
        "--backend", default="local", choices=["local", "ray"], help="local (default) or ray"
    )
    p.add_argument(
        "--address",
        default=None,
        help="address of an existing Ray cluster (default: start a local one)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        help="torch device the shards train on: cpu, cuda, cuda:N or mps, one this machine has",
    )
    p.add_argument(
        "--out", default=None, help="output folder (default runs/experiments/NAME/SCALE)"
    )
    p.add_argument(
        "--planned",
        action="store_true",
        help="ignore --seeds: run the looks of NAME's committed plan (analysis/plans/NAME.json: "
        "seeds and "
        "alpha spending fixed before the results), stopping at the first look that decides every "
        "ledger row of NAME (finished shards reused)",
    )
    p.add_argument(
        "--plan", default=None, help="the plan file of --planned (default analysis/plans/NAME.json)"
    )

    p = add(
        "ledger",
        cmd_ledger,
        "print the claims ledger: each paper claim, our number, the verdict",
        "One row per empirical claim of the five papers: the paper's statement and figure, "
        "the experiment, "
        "our mean with 95% CI over seeds, the scale and the verdict computed by the claim's rule.",
    )
    p.add_argument(
        "--results",
        default=None,
        help="folder of <experiment>/results.json (default analysis/results)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the ledger as JSON")
    p.add_argument(
        "--format",
        default=None,
        choices=["table", "json", "csv", "md"],
        help="standard output: a table fitted to the terminal (needs rich: pip install "
        "'dynkit[cli]'; "
        "Markdown without it), JSON, CSV (one flat row per claim) or Markdown (default: table on "
        "a terminal, Markdown into a pipe or file)",
    )
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``dynkit COMMAND``."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[command]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dynkit`` command with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if (
            extra
        ):  # said by the command's own parser, so the usage shown is the command's, not dynkit's
            _subparser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse has printed usage and the error (or --help)
        return int(exc.code or 0)
    args.debug = getattr(args, "debug", False)
    args.quiet = getattr(args, "quiet", False)
    args.argv = argv
    from .solvers import SolverError

    try:
        _check_output_files(args)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except (
        SystemExit
    ) as exc:  # sys.exit() inside the user's f (or anything the work runs): not a success
        if args.debug:
            raise
        print(
            f"dynkit {args.command}: error: the work called sys.exit({exc.code!r}) before it "
            f"finished (an "
            "f, jac or problem file must return, not exit)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except BrokenPipeError:
        return _closed_pipe()
    except (
        SolverError
    ) as exc:  # before ValueError: a VectorFieldShapeError is both, and the solve failed
        if args.debug:
            raise
        print(f"dynkit {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (CLIError, ValueError, TypeError) as exc:
        if args.debug:
            raise
        print(f"dynkit {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (
        OSError
    ) as exc:  # an output path that cannot be written, an input that cannot be read: usage
        if args.debug:
            raise
        print(
            f"dynkit {args.command}: error: {type(exc).__name__}: {exc} (run with --debug "
            f"for the traceback)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dynkit: interrupted", file=sys.stderr)
        return 130
    except (
        Exception
    ) as exc:  # anything else (a missing component, a training error): still one line
        if args.debug:
            raise
        text = (
            str(exc)
            if isinstance(exc, ComponentUnavailable)
            else f"{type(exc).__name__}: {exc} (run with --debug for the traceback)"
        )
        print(f"dynkit {args.command}: error: {text}", file=sys.stderr)
        return EXIT_FAILED


OUTPUT_FILE_OPTIONS = ("json", "plot")
"""The options naming an output file; checked (:func:`dynkit.io.check_output_path`) before any
work."""


def _input_files(args) -> list[tuple[str, str]]:
    """The files the command reads, as ``(option, path)``: SPEC's FILE.py, --plan."""
    found = []
    spec = getattr(args, "spec", None)
    if isinstance(spec, str) and spec:
        target = spec.rpartition(":")[0] if ":" in spec else spec
        found.append(("SPEC", target))
    if getattr(args, "plan", None):
        found.append(("--plan", args.plan))
    return found


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet): not the same file
        return False


def _check_output_files(args) -> None:
    from .io import check_output_path

    outputs = []
    for name in OUTPUT_FILE_OPTIONS:
        value = getattr(args, name, None)
        if value is not None and value != STDOUT:
            check_output_path(value, f"--{name}")
            for option, path in _input_files(
                args
            ):  # by inode: a second name or a link is the same file
                if _same_file(value, path):
                    raise CLIError(
                        f"--{name} must not be a file the command reads, got {value!r}, which is "
                        f"{option} {path!r}: writing it would replace the input"
                    )
            for other, path in outputs:
                if _same_file(value, path) or os.path.abspath(value) == os.path.abspath(path):
                    raise CLIError(
                        f"--{name} must be another file than --{other}, got {value!r} for both"
                    )
            outputs.append((name, value))


def _closed_pipe() -> int:
    """The reader of standard output went away (``| head``): stop quietly, as Unix tools do."""
    import os

    try:  # later writes (and the interpreter's final flush) go nowhere instead of raising again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
