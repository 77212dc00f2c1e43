"""Result files: written atomically (temp file + rename) and stamped with the versions that made
them."""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "versions",
    "TEMP_SUFFIX",
    "TEMP_MARKER",
    "is_temporary",
    "file_kind",
    "check_output_path",
    "DEFAULT_READ_LIMIT",
    "read_regular_bytes",
    "read_regular_text",
    "atomic_write",
    "remove_orphan_temporaries",
    "check_writable_dir",
    "check_own_folder",
    "write_json",
    "save_figure",
    "jsonable",
    "to_pandas",
]


def versions() -> dict:
    """Versions of Python, dynkit and the numerical packages (for the provenance of results)."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("dynkit", "numpy", "scipy", "sympy", "torch", "torchdiffeq"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name)
            except ImportError:
                continue
        out[name] = getattr(module, "__version__", "unknown")
    return out


TEMP_SUFFIX = ".tmp"
TEMP_MARKER = ".dynkit-"
"""In the name of every temporary file of ours, ``.NAME.dynkit-XXXXXXXX.tmp`` (XXXXXXXX: :func:`tempfile.mkstemp`'s
eight random characters): :func:`remove_orphan_temporaries` deletes those and nothing a user named."""  # noqa: E501
_TEMP_NAME = re.compile(r"\..+" + re.escape(TEMP_MARKER) + r"[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))


def _temp_prefix(path: Path) -> str:
    return f".{path.name}{TEMP_MARKER}"


def is_temporary(name: str) -> bool:
    """Whether the file name ``name`` is one of dynkit's temporaries (:data:`TEMP_MARKER`)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a file name (a str), got {type(name).__name__} {name!r:.60}")
    return _TEMP_NAME.fullmatch(name) is not None


def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once (it is process-wide).
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _labelled(path: Path, option: str | None) -> str:
    return f"{option} {str(path)!r}" if option else repr(str(path))


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What an ``st_mode`` is, in words: ``"a regular file"``, ``"a character device"``, ..."""
    if isinstance(mode, bool) or not isinstance(mode, int) or mode < 0:
        raise TypeError(
            f"mode must be an st_mode (an int >= 0, from os.stat), got {type(mode).__name__} "
            f"{mode!r:.40}"
        )
    for test, words in _KINDS:
        if test(mode):
            return words
    return (
        "a regular file" if stat.S_ISREG(mode) else f"a special file (mode {stat.filemode(mode)})"
    )


def check_output_path(path: str | os.PathLike, option: str | None = None) -> Path:
    """``path`` as a :class:`~pathlib.Path` if dynkit may write a file there; a ValueError
    otherwise.

    The one rule of every writer (:func:`atomic_write` and so ``write_json``, ``save_figure``, the
    checkpoints, the shards, the report, ``dynkit ... --json/--plot/--out``): a result is written
    only as a *regular file*, onto a path that is new or already a regular file. Refused, naming
    ``path`` (and ``option``) and what it is: a device node (``/dev/null``, ``/dev/full``), a
    folder, a named pipe, a socket, and a **symbolic link** -- dynkit never writes through a link
    (nor replaces one): give the link's target, or remove the link. Links among the *parent* folders
    are followed as usual. A parent that exists but is not a folder (``/etc/passwd/x.json``) is
    refused too.

    The check is repeated just before the rename, so only a change in between (another process
    replacing the file in that instant) can slip past it.
    """
    label = option or "path"
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise TypeError(f"{label} must be a non-empty str or os.PathLike, got {path!r}")
    path = Path(path)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        mode = None  # a parent is not a folder: named below
    except OSError as err:
        raise type(err)(
            err.errno, f"cannot write {_labelled(path, option)}: {err.strerror or err}"
        ) from err
    if mode is not None and not stat.S_ISREG(mode):
        what = file_kind(mode)
        if stat.S_ISLNK(mode):
            what += (
                f" (to {os.readlink(path)!r}); dynkit does not write through links: give the "
                f"target or "
                "remove the link"
            )
        raise ValueError(
            f"{label} must be a regular file or a new path, got {str(path)!r}, which is {what}"
        )
    if mode is None:
        parent = path.parent
        while True:
            try:
                parent_mode = parent.stat().st_mode  # links among the parents are followed
            except (FileNotFoundError, NotADirectoryError):
                if parent == parent.parent:
                    break
                parent = parent.parent
                continue
            except OSError:
                break  # unreadable: the write itself will say why
            if not stat.S_ISDIR(parent_mode):
                raise ValueError(
                    f"{label} must be a path inside a folder, got {str(path)!r}, but "
                    f"{str(parent)!r} "
                    f"is {file_kind(parent_mode)}, not a folder"
                )
            break
    return path


DEFAULT_READ_LIMIT = 256 * 1024 * 1024  # bytes: no result, plan or shard of ours comes near


def read_regular_bytes(
    path: str | os.PathLike,
    option: str | None = None,
    *,
    max_bytes: int = DEFAULT_READ_LIMIT,
    single_link: bool = False,
    follow_links: bool = True,
) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``; a ValueError
    otherwise.

    The one rule of every reader (results, plans, shards, manifests, checkpoints' indexes), the twin
    of :func:`check_output_path` for writers. The file is opened without blocking and examined
    through its open descriptor, so what is checked is what is read: a device (``/dev/zero``), a
    named pipe, a socket or a folder -- directly or behind a symbolic link -- is refused before a
    byte is read, and so is a file larger than ``max_bytes``. ``single_link=True`` also refuses a
    file with a second name (a hard link, ``st_nlink > 1``): a shard must be the file its folder
    wrote, not a name for a file kept elsewhere. ``follow_links=False`` refuses a symbolic link at
    ``path`` itself (opened with ``O_NOFOLLOW``: a link put there after an earlier check is not
    followed either).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist (naming ``option`` and ``path``).
    ValueError
        ``path`` is not a regular file, is too large, or has a second name; the message names
        ``option``, ``path`` and what it is.
    """
    label = option or "path"
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise TypeError(f"{label} must be a non-empty str or os.PathLike, got {path!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise TypeError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
    path = Path(path)
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(path, flags if follow_links else flags | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError as err:
        raise FileNotFoundError(
            err.errno, f"{_labelled(path, option)} does not exist", str(path)
        ) from None
    except IsADirectoryError:
        raise ValueError(
            f"{label} must be a regular file, got {str(path)!r}, which is a folder"
        ) from None
    except OSError as err:
        if not follow_links and err.errno == errno.ELOOP:
            raise ValueError(
                f"{label} must be a regular file, got {str(path)!r}, which is a symbolic link: "
                "refused, links are not followed here"
            ) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(
                f"{label} must be a regular file, got {str(path)!r}, which is "
                f"{file_kind(info.st_mode)}: refused before reading"
            )
        if info.st_size > max_bytes:
            raise ValueError(
                f"{label} must be a file of at most {max_bytes} bytes, got {str(path)!r} "
                f"of {info.st_size} bytes"
            )
        if single_link and info.st_nlink > 1:
            raise ValueError(
                f"{label} must be a file with one name, got {str(path)!r}, which has "
                f"{info.st_nlink} (a hard link): refused, it may stand for a file kept elsewhere"
            )
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # grew while read
                raise ValueError(
                    f"{label} must be a file of at most {max_bytes} bytes, got {str(path)!r}, "
                    "which grew past that while read"
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(
    path: str | os.PathLike,
    option: str | None = None,
    *,
    max_bytes: int = DEFAULT_READ_LIMIT,
    single_link: bool = False,
    follow_links: bool = True,
) -> str:
    """:func:`read_regular_bytes` decoded as UTF-8 (a ValueError naming ``path`` if it is not)."""
    data = read_regular_bytes(
        path, option, max_bytes=max_bytes, single_link=single_link, follow_links=follow_links
    )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{option or 'path'} must be UTF-8 text, got {str(path)!r} "
            f"(byte {err.start} is not UTF-8)"
        ) from None


def atomic_write(
    path: str | os.PathLike,
    write: Callable[[Any], None],
    mode: str = "w",
    *,
    option: str | None = None,
) -> Path:
    """Write ``path`` through ``write(fileobj)`` into a temporary sibling, then rename it into
    place.

    Only regular files are written (:func:`check_output_path`: a device node, a folder, a pipe or a
    symbolic link at ``path`` is refused before anything is written, and checked again before the
    rename).

    A crash or an exception leaves either the old file or none, never a half-written one (a crash
    can leave the temporary ``.NAME.dynkit-*.tmp`` beside it: :func:`remove_orphan_temporaries`
    removes those). The file gets the permissions of any other new file, ``0o666 & ~umask`` (0644
    under the usual umask 022), or keeps those of the file it replaces.

    Parameters
    ----------
    option : str, optional
        The argument or command-line option the path came from (``"out"``, ``"--json"``): errors
        name it together with ``path``, never the temporary file.

    Raises
    ------
    ValueError
        ``path`` is not a regular file or a new path (:func:`check_output_path`).
    OSError
        (of the original subclass: ``PermissionError``, ...) naming ``path`` and ``option``.
    """
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise TypeError(f"{option or 'path'} must be a non-empty str or os.PathLike, got {path!r}")
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    if not callable(write):
        raise TypeError(f"write must be a callable write(fileobj), got {type(write).__name__}")
    path = check_output_path(path, option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=TEMP_SUFFIX, dir=path.parent)
    except OSError as err:
        raise type(err)(
            err.errno, f"cannot write {_labelled(path, option)}: {err.strerror or err}"
        ) from err
    try:
        try:
            mode_bits = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode_bits = 0o666 & ~_umask()
        os.chmod(tmp, mode_bits)
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        check_output_path(path, option)  # again: the write may have taken long
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and (
            err.filename in (tmp, None) or isinstance(err.filename, int)
        ):
            raise type(err)(
                err.errno, f"cannot write {_labelled(path, option)}: {err.strerror or err}"
            ) from err
        if isinstance(err, Exception) and hasattr(err, "add_note"):
            err.add_note(f"while writing {_labelled(path, option)}")
        raise
    return path


def remove_orphan_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporaries an interrupted :func:`atomic_write` left in ``folder``; return them.

    Only regular files named as :func:`atomic_write` and :func:`check_writable_dir` name theirs
    (``.NAME.dynkit-XXXXXXXX.tmp``, :func:`is_temporary`) are removed, never a user's
    ``.notes.tmp``; call it when no other process writes into ``folder`` (a run folder at the start
    of a run).
    """
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a path (str or os.PathLike), got {type(folder).__name__}")
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed = []
    for tmp in sorted(folder.iterdir()):
        if is_temporary(tmp.name) and stat.S_ISREG(tmp.lstat().st_mode):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def check_writable_dir(folder: str | os.PathLike, option: str = "out") -> Path:
    """Create ``folder`` if needed and check a file can be written in it, before any long work.

    Raises
    ------
    ValueError
        Naming ``option`` and ``folder``: not a folder, cannot be created, or not writable.
    """
    if not isinstance(folder, (str, os.PathLike)) or str(folder) == "":
        raise TypeError(f"{option} must be a path (str or os.PathLike), got {folder!r}")
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(
            prefix=f".write-check{TEMP_MARKER}", suffix=TEMP_SUFFIX, dir=folder
        )
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(
            f"{option} must be a writable folder, got {str(folder)!r} "
            f"({type(err).__name__}: {err.strerror or err})"
        ) from err
    return folder


def check_own_folder(folder: str | os.PathLike, option: str, marks: tuple[str, ...]) -> Path:
    """``folder`` as a folder dynkit may fill with a run's files: new, empty, or already holding one
    of ``marks`` (the names a run of that kind writes there, e.g. ``shards`` and ``results.json``),
    and never a filesystem's root. A ValueError naming ``option`` otherwise, before anything is
    created or written: a run's ``results.json`` and figures would land among another folder's files
    (``/``, a home folder, a project).
    """
    if not isinstance(folder, (str, os.PathLike)) or str(folder) == "":
        raise TypeError(f"{option} must be a path (str or os.PathLike), got {folder!r}")
    path = Path(folder)
    resolved = path.resolve()
    if resolved == Path(resolved.anchor) or os.path.ismount(resolved):
        raise ValueError(
            f"{option} must be a folder for the run's files, got {str(folder)!r}, which is "
            f"the root "
            "of a filesystem: name a folder below it (e.g. runs/NAME)"
        )
    if resolved.is_dir():
        names = {p.name for p in resolved.iterdir()}
        if names and not names & set(marks):
            raise ValueError(
                f"{option} must be a new or empty folder, or one a run wrote (holding "
                f"{' or '.join(marks)}), got {str(folder)!r}, which holds {len(names)} other "
                f"entr{'y' if len(names) == 1 else 'ies'} (e.g. {sorted(names)[0]!r}): the "
                f"run would "
                "write its files among them"
            )
    return path


def write_json(
    path: str | os.PathLike,
    data: dict,
    *,
    config: dict | None = None,
    command: str | None = None,
    option: str | None = None,
) -> Path:
    """Write ``data`` as strict JSON (RFC 8259), adding ``config``, the ``command`` that produced it
    and ``versions()``.

    Values are cleaned by :func:`jsonable` with ``strict=True``: numpy and torch numbers and arrays,
    paths, complex numbers; non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"``
    (JSON has no NaN); any other object is a TypeError before a file is touched. ``option`` names
    the argument ``path`` came from, for error messages (see :func:`atomic_write`).
    """
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict, got {type(data).__name__}")
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise TypeError(f"{option or 'path'} must be a non-empty str or os.PathLike, got {path!r}")
    payload = dict(data)
    if config is not None:
        payload.setdefault("config", config)
    if command is not None:
        payload.setdefault("command", command)
    payload.setdefault("versions", versions())
    text = json.dumps(
        jsonable(payload, strict=True, name="data"), indent=2, allow_nan=False
    )  # before any file
    return atomic_write(path, lambda fh: fh.write(text), option=option)


def save_figure(fig, path: str | os.PathLike, *, option: str | None = None, **kwargs) -> Path:
    """Save a matplotlib figure atomically (format from the suffix: png, svg, pdf, ...)."""
    if not hasattr(fig, "savefig"):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    supported = fig.canvas.get_supported_filetypes()
    if fmt not in supported:
        raise ValueError(
            f"path must end in one of {sorted('.' + k for k in supported)}, got {str(path)!r}"
        )
    return atomic_write(
        path, lambda fh: fig.savefig(fh, format=fmt, **kwargs), mode="wb", option=option
    )


def jsonable(x: Any, *, strict: bool = False, name: str = "x") -> Any:
    """``x`` with every leaf a JSON value (RFC 8259): the one JSON-cleaning rule of the package.

    Dicts (keys as str), lists and tuples are recursed; numpy, mpmath and sympy numbers become
    int/float/bool; arrays and tensors lists; non-finite floats the strings ``"nan"``, ``"inf"``,
    ``"-inf"``; complex numbers ``{"re", "im"}``; paths str. Anything else becomes ``str(x)``, or
    with ``strict=True`` (what :func:`write_json` uses) a TypeError naming ``name``. A container
    that holds itself raises ValueError (JSON has no cycles)."""
    return _clean(x, frozenset(), strict, name)


def _clean(x: Any, ancestors: frozenset, strict: bool = False, name: str = "x") -> Any:
    """:func:`jsonable` of ``x`` inside the containers whose ids are ``ancestors``."""
    if isinstance(x, (dict, list, tuple)):
        if id(x) in ancestors:
            raise ValueError(
                f"{name} must not contain itself (JSON has no cycles), got a {type(x).__name__} "
                f"inside itself"
            )
        inner = ancestors | {id(x)}
        if isinstance(x, dict):
            return {str(k): _clean(v, inner, strict, name) for k, v in x.items()}
        return [_clean(v, inner, strict, name) for v in x]
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if x - x == 0 else str(x)  # x - x is nan for nan and inf
    if type(x).__name__ in ("bool_", "bool"):  # numpy bools
        return bool(x)
    if isinstance(x, complex) or type(x).__name__.startswith("complex"):
        return {"re": _clean(float(x.real), ancestors), "im": _clean(float(x.imag), ancestors)}
    if hasattr(x, "tolist"):  # numpy scalars and arrays, torch tensors
        return _clean(x.tolist(), ancestors, strict, name)
    if isinstance(x, Path):
        return str(x)
    try:
        return _clean(int(x) if type(x).__name__ in ("Integer", "mpz") else float(x), ancestors)
    except (TypeError, ValueError):
        if strict:
            raise TypeError(
                f"{name} must hold only JSON-serialisable values (numbers, strings, lists, dicts, "
                f"arrays), got a {type(x).__name__}: {x!r:.80}"
            ) from None
        return str(x)


def to_pandas(records: list[dict], what: str = "table"):
    """``records`` (one flat dict per row) as a ``pandas.DataFrame``: the ``to_pandas()`` of
    dynkit's tables.

    pandas is not a dependency of dynkit: an ImportError names it when it is not installed.
    """
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise TypeError(
            f"records must be a list of dicts (one per row), got {type(records).__name__} "
            f"{records!r:.60}"
        )
    try:
        import pandas
    except ImportError:
        raise ImportError(
            f"{what}.to_pandas() needs pandas, which is not installed (pip install pandas); "
            f"the same rows are in {what}.to_dict()"
        ) from None
    return pandas.DataFrame.from_records(records)
