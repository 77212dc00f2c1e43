"""The doors of issue 34: output paths, ``dk.odeint``'s arguments and callables, and the other cases
the sweep found.

Every case ends in a clear outcome or is counted against the suite, as in
``tests/test_bad_inputs.py``: *clear* (a ValueError/TypeError/``dk.SolverError`` whose message names
the argument and says what it got, or the right result), *terse* (the right type, a message without
the argument's name), *raw* (another exception), *accepted* (no error), *wrong* (a result, or a file
clobbered), *hang* (no answer within :data:`HANG_SECONDS`). The writer cases also check that the
device node, the named pipe and the symbolic link at the output path are still what they were
afterwards (and the link's target unchanged).

``python tests/test_bad_inputs_doors.py [WORD ...]`` runs every case (or the groups whose name
contains a WORD) and prints the counts (the closing note of issue 34 quotes them); the last five
must be zero.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
import sys
import textwrap
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

import dynkit as dk
import dynkit.io

torch.set_num_threads(1)
LEDGER: Counter = Counter()
PROBLEMS: list[str] = []
STRICT = True  # raise at the first unclear outcome (tests); False: record them all (main())
HANG_SECONDS = 60
OUTCOMES = ("clear", "terse", "raw", "accepted", "wrong", "hang")


class Unclear(AssertionError):
    pass


class Hang(BaseException):  # not an Exception: nothing under test may swallow it
    pass


@contextlib.contextmanager
def deadline(seconds: int | None = None):
    """Raise :class:`Hang` in the main thread after ``seconds`` (default :data:`HANG_SECONDS`;
    SIGALRM)."""
    seconds = seconds or HANG_SECONDS

    def ring(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _count(outcome: str, label: str, detail: str) -> str:
    LEDGER["cases"] += 1
    LEDGER[outcome] += 1
    if outcome != "clear":
        problem = Unclear(f"{label}: {outcome}: {detail[:400]}")
        if STRICT:
            raise problem
        PROBLEMS.append(str(problem))
    return outcome


CALLABLE_FAILED = ("raised", "returned", "must return")
"""What a clear error about a user's callable says instead of "got": what it raised or returned."""


def attempt(
    label: str,
    names: tuple[str, ...],
    thunk,
    errors=(ValueError, TypeError, dk.SolverError),
    after=None,
    says: tuple[str, ...] = ("got",),
) -> str:
    """``thunk()`` must raise one of ``errors`` naming any of ``names`` and saying what it got
    (any of ``says``); ``after()`` (optional) returns a complaint (a clobbered file) or None."""
    try:
        with deadline(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            thunk()
    except Hang as err:
        return _count("hang", label, str(err))
    except errors as err:
        message = str(err)
        outcome = (
            "clear"
            if any(n in message for n in names) and any(w in message for w in says)
            else "terse"
        )
        detail = f"{type(err).__name__}: {message}"
    except Exception as err:  # noqa: BLE001 - exactly what this suite looks for
        outcome, detail = "raw", f"{type(err).__name__}: {err}"
    else:
        outcome, detail = "accepted", "no error"
    complaint = after() if after is not None else None
    if complaint:
        outcome, detail = "wrong", complaint
    return _count(outcome, label, detail)


def checked(label: str, thunk, correct) -> str:
    """A case that must end in a correct result: ``correct(result)`` is a complaint or None."""
    try:
        with deadline():
            result = thunk()
    except Hang as err:
        return _count("hang", label, str(err))
    except Exception as err:  # noqa: BLE001
        return _count("raw", label, f"{type(err).__name__}: {err}")
    complaint = correct(result)
    return _count("wrong" if complaint else "clear", label, complaint or "")


def cli_attempt(
    label: str, argv: list[str], names: tuple[str, ...], code: int = 2, after=None
) -> str:
    """``dynkit argv``: clear = exit ``code`` with a last line ``dynkit CMD: error: ...`` naming
    one of ``names``."""
    from dynkit.cli import main

    err = io.StringIO()
    try:
        with (
            deadline(),
            contextlib.redirect_stderr(err),
            contextlib.redirect_stdout(io.StringIO()),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            got = main([*argv, "--quiet"])
    except Hang as exc:
        return _count("hang", label, str(exc))
    except BaseException as exc:  # noqa: BLE001 - main returns codes; anything escaping it is raw
        return _count("raw", label, f"{type(exc).__name__}: {exc}")
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if got == 0:
        outcome = "accepted"
    elif "Traceback" in err.getvalue():
        outcome = "raw"
    else:
        outcome = (
            "clear"
            if got == code
            and last.startswith(f"dynkit {argv[0]}: error: ")
            and any(n in last for n in names)
            else "terse"
        )
    complaint = after() if after is not None else None
    if complaint:
        outcome, last = "wrong", complaint
    return _count(outcome, label, f"exit {got}: {last}")


# --------------------------------------------------------------------------------------------------
# 1. output paths: only regular files are written; a device node, a pipe, a folder and a link
#    survive

IS_ROOT = os.geteuid() == 0


def plant_targets(folder: Path, name: str) -> dict[str, Path]:
    """Non-regular things at ``folder/<kind>/name``: a character device (``mknod c 1 3``,
    /dev/null's numbers; as root), a named pipe, a folder, a link to a regular file, a link to
    the device (or the pipe)."""
    made = {}
    for kind in ("device", "fifo", "folder", "link-to-file", "dangling-link", "link-to-special"):
        if kind == "device" and not IS_ROOT:
            # mknod needs root; the pipe stands for every special file then (counted, not skipped)
            continue
        path = folder / kind / name
        path.parent.mkdir(parents=True)
        if kind == "device":
            os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        elif kind == "link-to-file":
            (path.parent / "target.txt").write_text("the link's target, untouched\n")
            path.symlink_to("target.txt")
        elif kind == "dangling-link":
            path.symlink_to("nowhere.txt")
        else:
            special = path.parent / "special"
            if IS_ROOT:
                os.mknod(special, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
            else:
                os.mkfifo(special)
            path.symlink_to("special")
        made[kind] = path
    return made


def survived(kind: str, path: Path):
    """A complaint if the planted ``path`` of ``kind`` was replaced or its link's target touched."""

    def check():
        mode = path.lstat().st_mode
        if kind == "device" and not (
            stat.S_ISCHR(mode) and path.lstat().st_rdev == os.makedev(1, 3)
        ):
            return f"the device node {path} was replaced ({stat.filemode(mode)})"
        if kind == "fifo" and not stat.S_ISFIFO(mode):
            return f"the named pipe {path} was replaced ({stat.filemode(mode)})"
        if kind == "folder" and not (stat.S_ISDIR(mode) and not any(path.iterdir())):
            return f"the folder {path} was replaced or written into"
        if "link" in kind:
            if not stat.S_ISLNK(mode):
                return f"the link {path} was replaced by {stat.filemode(mode)}"
            if (
                kind == "link-to-file"
                and (path.parent / "target.txt").read_text() != "the link's target, untouched\n"
            ):
                return f"the target of the link {path} was written"
            if kind == "dangling-link" and (path.parent / "nowhere.txt").exists():
                return f"the dangling link {path} was written through"
            if kind == "link-to-special" and stat.S_ISREG(
                (path.parent / "special").lstat().st_mode
            ):
                return f"the special file behind {path} was replaced"
        return None

    return check


def _figure():
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().plot([0, 1], [0, 1])
    return fig


def _toy_training():
    model = torch.nn.Linear(1, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def library_writers() -> dict:
    """name -> (file name, write(path)) for every library writer of a single file (the folder
    writers below)."""
    from dynkit.experiments.tables import write_table
    from dynkit.tasks.training import CHECKPOINT_NAME, History, fit, save_checkpoint

    def fit_into(path: Path):
        model, optimizer = _toy_training()
        fit(
            model,
            optimizer,
            lambda generator: [(torch.ones(1, 1), torch.ones(1, 1))],
            lambda m, batch: (torch.nn.functional.mse_loss(m(batch[0]), batch[1]), {}),
            1,
            seed=0,
            checkpoint_dir=path.parent,
            progress=False,
        )

    return {
        "dk.io.atomic_write": (
            "out.txt",
            lambda p: dk.io.atomic_write(p, lambda fh: fh.write("x")),
        ),
        "dk.io.write_json": ("out.json", lambda p: dk.io.write_json(p, {"a": 1})),
        "dk.io.save_figure": ("out.png", lambda p: dk.io.save_figure(_figure(), p)),
        "save_checkpoint": (
            "ckpt.pt",
            lambda p: save_checkpoint(p, *_toy_training(), 0, History()),
        ),
        "fit(checkpoint_dir=)": (CHECKPOINT_NAME, fit_into),
        "write_table(out=)": ("table.md", lambda p: write_table(p.parent, "t", ["a"], [["1"]])),
        "build_report(out_dir=)": ("report.json", lambda p: _build_report(p.parent)),
        "experiments.run(out=) results.json": ("results.json", lambda p: _toy_run(p.parent)),
    }


def _build_report(out: Path):
    from dynkit.report import build_report

    build_report(out, quick=True)


def _toy_run(out: Path):
    from dataclasses import dataclass

    import dynkit.experiments as E
    from dynkit.experiments.registry import Experiment

    @dataclass(frozen=True)
    class Config:
        size: int = 1

    E.EXPERIMENTS["doors_toy"] = Experiment(
        "doors_toy",
        lambda c, *, seed, out, device: {"metrics": {"x": 1.0}},
        {s: Config() for s in ("smoke", "cpu", "full")},
    )
    try:
        E.run("doors_toy", scale="smoke", seeds=(0,), out=out)
    finally:
        del E.EXPERIMENTS["doors_toy"]


GOOD_PROBLEM = """
import numpy as np
def f(t, y): return -y
y0 = np.array([1.0])
t = np.linspace(0.0, 1.0, 3)
"""

CLI_WRITERS = {  # name -> (file name, argv(path, problem), the option the error names)
    "solve --json": ("out.json", lambda p, good: ["solve", good, "--json", str(p)], "--json"),
    "solve --plot": ("out.png", lambda p, good: ["solve", good, "--plot", str(p)], "--plot"),
    "stiffness --json": (
        "out.json",
        lambda p, good: ["stiffness", good, "--json", str(p)],
        "--json",
    ),
    "verify --json": ("out.json", lambda p, good: ["verify", "--json", str(p)], "--json"),
    "ledger --json": (
        "out.json",
        lambda p, good: ["ledger", "--json", str(p), "--format", "json"],
        "--json",
    ),
    "nfe-sweep --out": (
        "nfe_sweep.json",
        lambda p, good: ["nfe-sweep", "--out", str(p.parent)],
        "--out",
    ),
    "report --out": (
        "report.md",
        lambda p, good: ["report", "--out", str(p.parent), "--quick"],
        "out",
    ),
    "run --out": (
        "results.json",
        lambda p, good: [
            "run",
            "momres_cubic",
            "--scale",
            "smoke",
            "--seeds",
            "0",
            "--out",
            str(p.parent),
        ],
        "out",
    ),
}


def writer_cases(tmp: Path) -> dict:
    cases = {}
    for name, (file, write) in library_writers().items():

        def run(name=name, file=file, write=write):
            folder = tmp / "lib" / name.replace(" ", "_").replace("/", "_")
            for kind, path in plant_targets(folder, file).items():
                attempt(
                    f"{name} onto a {kind}",
                    ("must be a regular file", str(path)),
                    lambda: write(path),
                    after=survived(kind, path),
                )

        cases[name] = run
    good = tmp / "good.py"
    for name, (file, argv, option) in CLI_WRITERS.items():

        def run(name=name, file=file, argv=argv, option=option):
            good.write_text(GOOD_PROBLEM)
            folder = tmp / "cli" / name.replace(" ", "_").replace("-", "")
            for kind, path in plant_targets(folder, file).items():
                cli_attempt(
                    f"dynkit {name} onto a {kind}",
                    argv(path, str(good)),
                    (option,),
                    after=survived(kind, path),
                )

        cases[f"dynkit {name}"] = run

    def parent_not_a_folder():
        for write_name, write in (
            ("write_json", lambda p: dk.io.write_json(p, {"a": 1})),
            ("atomic_write", lambda p: dk.io.atomic_write(p, lambda fh: None)),
        ):
            attempt(
                f"{write_name}('/etc/passwd/x.json')",
                ("'/etc/passwd' is a regular file, not a folder",),
                lambda: write("/etc/passwd/x.json"),
            )
        good.write_text(GOOD_PROBLEM)
        cli_attempt(
            "solve --json /etc/passwd/x.json",
            ["solve", str(good), "--json", "/etc/passwd/x.json"],
            ("/etc/passwd",),
        )

    cases["a parent that is a file"] = parent_not_a_folder

    def shards_in_out():
        # a shard.json linked to a file outside --out (or a linked shard folder) is never read
        from dataclasses import dataclass

        import dynkit.experiments as E
        from dynkit.experiments.registry import Experiment

        @dataclass(frozen=True)
        class Config:
            size: int = 1

        E.EXPERIMENTS["doors_shards"] = Experiment(
            "doors_shards",
            lambda c, *, seed, out, device: {"metrics": {"x": 1.0}},
            {s: Config() for s in ("smoke", "cpu", "full")},
        )
        try:
            for linked in ("file", "folder"):
                out = tmp / f"shards-{linked}"
                E.run("doors_shards", scale="smoke", seeds=(0,), out=out)
                folder = out / "shards" / "seed0"
                outside = tmp / f"outside-{linked}"
                if linked == "file":
                    (folder / "shard.json").rename(outside)
                    (folder / "shard.json").symlink_to(outside)
                    link = folder / "shard.json"
                else:
                    folder.rename(outside)
                    folder.symlink_to(outside)
                    link = folder
                attempt(
                    f"experiments.run over a shard {linked} linked out of out",
                    ("out",),
                    lambda: E.run("doors_shards", scale="smoke", seeds=(0,), out=out),
                    after=lambda: None if link.is_symlink() else f"the link {link} was replaced",
                )
        finally:
            del E.EXPERIMENTS["doors_shards"]

    cases["shards outside out"] = shards_in_out
    return cases


# --------------------------------------------------------------------------------------------------
# 2. dk.odeint: every argument checked before work, the user's callables wrapped

Y0 = torch.ones(2, dtype=torch.float64)
T = torch.tensor([0.0, 1.0], dtype=torch.float64)


def decay(t, y):
    return -y


def divide_by_zero(*args):
    return 1 / 0


def odeint_cases() -> dict:
    def call(**kw):
        args = {"func": decay, "y0": Y0, "t": T, **kw}
        return lambda: dk.odeint(args.pop("func"), args.pop("y0"), args.pop("t"), **args)

    def options(method, key, values):
        def run():
            for value in values:
                attempt(
                    f"odeint(method={method!r}, options={{{key!r}: {value!r}}})",
                    (key,),
                    call(method=method, options={key: value}),
                )

        return run

    def arguments():
        for value in (None, "abc", 3, [1.0]):
            attempt(f"odeint(func={value!r})", ("func",), call(func=value))
        for value in (
            None,
            "1",
            [1.0, 2.0],
            np.ones(2),
            (),
            (Y0, "x"),
            torch.ones(2, dtype=torch.int64),
        ):
            attempt(f"odeint(y0={value!r:.30})", ("y0",), call(y0=value))
        for value in (
            "0,1",
            b"01",
            None,
            {"a": 1},
            [],
            torch.tensor([0, 1]),
            [[0.0, 1.0]],
            [0.0, float("nan")],
            [1.0, 1.0],
            [0, 1j],
        ):
            attempt(f"odeint(t={value!r:.30})", ("t",), call(t=value))
        for value in (-1.0, 0.0, float("nan"), "x", None, True):
            attempt(f"odeint(rtol={value!r})", ("rtol",), call(rtol=value))
        for value in (-1.0, 0.0, float("inf"), "x", None, (1e-6, 1.0), [1e-6, 1.0], torch.ones(3)):
            attempt(f"odeint(atol={value!r:.30})", ("atol",), call(atol=value))
        for value in ("nosuch", 5, "fehlberg2", None.__class__):
            attempt(f"odeint(method={value!r})", ("method",), call(method=value))
        for value in ("x", 5, [1]):
            attempt(f"odeint(options={value!r})", ("options",), call(options=value))
        attempt("odeint(options={'nosuch': 1})", ("nosuch",), call(options={"nosuch": 1}))

    def event_fn():
        bad_values = {
            "None": lambda t, y: None,
            "a bool": lambda t, y: bool(y[0] > 0.5),
            "a bool tensor": lambda t, y: y[0] > 0.5,
            "a string": lambda t, y: "x",
            "complex": lambda t, y: torch.tensor(1j),
            "a list": lambda t, y: [1.0],
        }
        for what, fn in bad_values.items():
            attempt(f"odeint(event_fn returning {what})", ("event_fn",), call(event_fn=fn))
        for value in (5, "f", [decay]):
            attempt(f"odeint(event_fn={value!r})", ("event_fn",), call(event_fn=value))
        attempt(
            "odeint(event_fn zero at t0)",
            ("event_fn", "t[0]"),
            call(event_fn=lambda t, y: y[0] - 1.0),
        )
        for when, fn in (
            ("at t0", divide_by_zero),
            ("later", lambda t, y: 1 / 0 if t > 0.1 else y[0] - 0.5),
        ):
            attempt(
                f"odeint(event_fn raising {when})",
                ("event_fn raised ZeroDivisionError",),
                call(event_fn=fn),
                errors=(dk.VectorFieldError,),
                says=CALLABLE_FAILED,
            )
        attempt(
            "odeint(event_fn, three times)",
            ("t",),
            call(
                event_fn=lambda t, y: y[0] - 0.5,
                t=torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64),
            ),
        )
        checked(
            "odeint(event_fn returning a float)",
            call(event_fn=lambda t, y: float(y[0]) - 0.5),
            lambda r: None if abs(float(r[0]) - np.log(2)) < 1e-6 else f"event at {r[0]}, not ln 2",
        )

    def grid_constructor():
        for value in (3, "grid", [0.0, 1.0]):
            attempt(
                f"odeint(grid_constructor={value!r})",
                ("grid_constructor",),
                call(method="rk4", options={"grid_constructor": value}),
            )
        for what, fn in (
            ("None", lambda f, y, t: None),
            ("a string", lambda f, y, t: "abc"),
            ("one time", lambda f, y, t: torch.tensor([0.0])),
            ("the wrong end", lambda f, y, t: torch.tensor([0.0, 0.5])),
            ("not monotone", lambda f, y, t: torch.tensor([0.0, 0.7, 0.3, 1.0])),
        ):
            attempt(
                f"odeint(grid_constructor returning {what})",
                ("grid_constructor",),
                call(method="rk4", options={"grid_constructor": fn}),
            )
        attempt(
            "odeint(grid_constructor raising)",
            ("grid_constructor'] raised ZeroDivisionError",),
            call(method="rk4", options={"grid_constructor": divide_by_zero}),
            errors=(dk.VectorFieldError,),
            says=CALLABLE_FAILED,
        )

    def func_results():
        meta = lambda t, y: torch.empty(2, dtype=torch.float64, device="meta")  # noqa: E731
        attempt(
            "odeint(func returning a meta tensor)",
            ("f returned a tensor on meta",),
            call(func=meta),
            errors=(dk.VectorFieldError,),
            says=CALLABLE_FAILED,
        )
        attempt(
            "odeint(func raising)",
            ("f raised ZeroDivisionError",),
            call(func=divide_by_zero),
            errors=(dk.VectorFieldError,),
            says=CALLABLE_FAILED,
        )
        for what, fn in (
            ("None", lambda t, y: None),
            ("a list", lambda t, y: [1.0, 2.0]),
            ("a wrong shape", lambda t, y: torch.ones(3, dtype=torch.float64)),
        ):
            attempt(
                f"odeint(func returning {what})",
                ("f returned", "f must return"),
                call(func=fn),
                errors=(dk.VectorFieldError,),
                says=CALLABLE_FAILED,
            )

    inf, nan = float("inf"), float("nan")
    return {
        "odeint arguments": arguments,
        "odeint options step_size": options(
            "rk4", "step_size", [inf, nan, -0.1, 0.0, "0.1", True, None.__class__]
        ),
        "odeint options first_step": options(
            "dopri5", "first_step", [inf, nan, -0.1, 0.0, "0.1", True]
        ),
        "odeint options max_num_steps": options(
            "dopri5", "max_num_steps", [2.5, "10", True, 0, -3, None.__class__]
        ),
        "odeint options dtype": options("dopri5", "dtype", [5, "float64", torch.int64, np.float64]),
        "odeint options perturb": options("rk4", "perturb", ["yes", 1]),
        "odeint options interp": options("rk4", "interp", ["linear", 3]),
        "odeint event_fn": event_fn,
        "odeint grid_constructor": grid_constructor,
        "odeint func": func_results,
    }


# --------------------------------------------------------------------------------------------------
# 3. the other cases of the sweep

EXITING_PROBLEM = """
import sys
import numpy as np
def f(t, y): sys.exit(0)
y0 = np.array([1.0])
t = np.linspace(0.0, 1.0, 3)
"""

COMPLEX_PROBLEM = """
import numpy as np
def f(t, y): return -1j * y
y0 = np.array([1.0 + 2.0j])
t = np.linspace(0.0, 1.0, 3)
"""


def other_cases(tmp: Path) -> dict:
    def solve_cases():
        y, t = np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 3)
        attempt(
            "dk.solve(y0=np.matrix)",
            ("y0", "numpy.matrix"),
            lambda: dk.solve(decay, np.matrix([[1.0, 2.0]]), t),
        )
        for bad in ([-1], [0, -2], [2], [5]):
            attempt(
                f"dk.solve(nonnegative={bad})",
                ("nonnegative",),
                lambda: dk.solve(decay, y, t, nonnegative=bad),
            )

        def warns(atol):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                sol = dk.solve(decay, y, t, atol=atol)
            return sol, [w for w in caught if issubclass(w.category, dk.ToleranceWarning)]

        for atol in (1e308, 1e10, np.array([1e-6, 1e300])):
            checked(
                f"dk.solve(atol={atol!r:.30}) warns",
                lambda atol=atol: warns(atol),
                lambda r: (
                    None if r[1] and "atol" in str(r[1][0].message) else "no ToleranceWarning"
                ),
            )
        checked(
            "dk.solve(atol=1e-6) does not warn",
            lambda: warns(1e-6),
            lambda r: None if not r[1] else f"a warning for an ordinary atol: {r[1][0].message}",
        )
        sol = dk.solve(decay, y, t, dense=True)
        for value in (None, "0.5", [[0.1]], float("nan"), 2.0):
            attempt(
                f"Solution.evaluate({value!r})", ("t",), lambda value=value: sol.evaluate(value)
            )

    def cli_cases():
        exiting, complex_ = tmp / "exiting.py", tmp / "complex_y0.py"
        exiting.write_text(EXITING_PROBLEM)
        complex_.write_text(COMPLEX_PROBLEM)
        cli_attempt(
            "dynkit solve (f calls sys.exit(0))", ["solve", str(exiting)], ("sys.exit(0)",), code=3
        )
        cli_attempt("dynkit solve (complex y0)", ["solve", str(complex_)], ("y0 must be real",))
        for spec in ("", " ", ":", "x.py:"):
            cli_attempt(f"dynkit solve {spec!r}", ["solve", spec], ("SPEC",))

    return {"dk.solve and Solution": solve_cases, "dynkit solve": cli_cases}


# --------------------------------------------------------------------------------------------------


def cases(tmp: Path) -> dict:
    return {**writer_cases(tmp), **odeint_cases(), **other_cases(tmp)}


CASE_NAMES = list(cases(Path("/nonexistent")))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_every_door_ends_in_a_clear_error(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the CLI's defaults (runs/...) land here
    before = LEDGER["cases"]
    cases(tmp_path)[name]()
    assert LEDGER["cases"] > before


def test_the_classifier_can_fail(tmp_path):
    # planted violations, one per outcome that counts against the suite
    with pytest.raises(Unclear, match="raw"):
        attempt("planted", ("n",), lambda: [][1])
    with pytest.raises(Unclear, match="accepted"):
        attempt("planted", ("n",), lambda: 42)
    with pytest.raises(Unclear, match="terse"):
        attempt("planted", ("n",), lambda: int("x"))
    with pytest.raises(Unclear, match="wrong"):
        checked("planted", lambda: 1 + 1, lambda r: None if r == 3 else "1 + 1 is not 3")
    with pytest.raises(Unclear, match="hang"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sys.modules[__name__], "HANG_SECONDS", 1)
            attempt("planted", ("n",), _spin)
    for key in ("raw", "accepted", "terse", "wrong", "hang"):
        LEDGER[key] -= 1
    LEDGER["cases"] -= 5


def _spin():
    while True:
        pass


def test_a_writer_that_replaces_a_device_node_is_caught(tmp_path, monkeypatch):
    # planted: atomic_write without the regular-file check renames over the special file -- counted
    # as wrong
    monkeypatch.setattr(dynkit.io, "check_output_path", lambda path, option=None: Path(path))
    path = plant_targets(tmp_path, "out.txt")["fifo"]
    with pytest.raises(Unclear, match="wrong: the named pipe .* was replaced"):
        attempt(
            "planted",
            ("path",),
            lambda: dk.io.atomic_write(path, lambda fh: fh.write("x")),
            after=survived("fifo", path),
        )
    LEDGER["wrong"] -= 1
    LEDGER["cases"] -= 1


def test_a_special_file_put_there_during_the_write_survives_too(tmp_path):
    # the check is repeated before the rename: a pipe created while the content was being written is
    # not replaced
    path = tmp_path / "out.json"

    def write_while_a_pipe_appears(fh):
        fh.write("{}")
        os.mkfifo(path)

    with pytest.raises(ValueError, match="got '.*out.json', which is a named pipe"):
        dk.io.atomic_write(path, write_while_a_pipe_appears, option="--json")
    assert stat.S_ISFIFO(path.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left behind


def test_a_regular_file_is_still_replaced_atomically_and_a_new_path_created(tmp_path):
    existing, new = tmp_path / "old.json", tmp_path / "sub" / "new.json"
    existing.write_text("old")
    existing.chmod(0o600)
    dk.io.write_json(existing, {"a": 1})
    dk.io.write_json(new, {"b": 2})
    assert '"a": 1' in existing.read_text() and stat.S_IMODE(existing.stat().st_mode) == 0o600
    assert '"b": 2' in new.read_text()
    linked_parent = tmp_path / "linked"
    linked_parent.symlink_to(
        tmp_path / "sub"
    )  # links among the parents are followed, as documented
    dk.io.write_json(linked_parent / "via_link.json", {"c": 3})
    assert (tmp_path / "sub" / "via_link.json").is_file()


def main(argv: list[str]) -> int:
    """Every group of cases, or those whose name contains one of ``argv``; print the counts."""
    import tempfile

    global STRICT
    STRICT = False
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for name, run in cases(Path(tmp)).items():
            if not argv or any(word in name for word in argv):
                before = Counter(LEDGER)
                run()
                group = Counter(LEDGER)
                group.subtract(before)
                print(
                    f"{name:44s} "
                    + " ".join(f"{k} {group[k]}" for k in ("cases", *OUTCOMES) if group[k])
                )
    print(
        f"issue 34 doors: cases: {LEDGER['cases']}; "
        + "; ".join(f"{k}: {LEDGER[k]}" for k in OUTCOMES)
    )
    for problem in PROBLEMS:
        print("  " + problem)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
