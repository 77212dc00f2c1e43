"""Where numba keeps the compiled kernels on disk, and the key saying what they were compiled from.

**The folder** is ``$DYNKIT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/dynkit`` (an absolute
``XDG_CACHE_HOME``), else ``~/.cache/dynkit``; the kernels go to its ``numba`` subfolder. Both are
created with mode 0700 and used only while each is a real folder (not a symbolic link) owned by the
user running Python, with no permission for group or others: numba unpickles a cache index before it
checks any stamp, so a file that someone else could have written there would run their code in this
process. Otherwise the cache is off for the process (:data:`CACHE_REASON` says why, with a
:class:`~dynkit.solvers.CompileWarning`) and the kernels compile in memory. Never inside the
installed package: a read-only install caches like any other.

**The key** (:func:`kernel_stamp`) hashes what the kernels are compiled from, not whole files: the
syntax tree of every module of this package with docstrings dropped (comments and layout are not in
it), the values of the constants those modules import from the rest of :mod:`dynkit.solvers`
(``from ..jacobian import REFINEMENTS``, ``py.SAFETY`` through ``from .. import radau as py``), and
the numba, numpy and Python versions. A docstring, comment or layout edit, here or in ``engine.py``,
reuses every cached kernel; a change of code or of a constant the kernels read compiles them anew.
Each function's cache file is named by its qualified name and a hash of its own tree (numba's
default, the line number, would change with any edit above it). numba adds the function's own
bytecode to the key of each compiled version, which a docstring of that compiled function itself is
part of: editing one recompiles that function.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import os
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CACHE_ENV",
    "PACKAGE",
    "cache_root",
    "private_folder",
    "kernel_folder",
    "code_tree",
    "imported_constants",
    "kernel_stamp",
    "function_key",
    "install_locator",
]

CACHE_ENV = "DYNKIT_CACHE_DIR"
PACKAGE = __name__.rsplit(".", 1)[0]  # dynkit.solvers.compiled
_PARENT = PACKAGE.rsplit(".", 1)[0]  # dynkit.solvers


def cache_root() -> Path:
    """``$DYNKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/dynkit``, else ``~/.cache/dynkit``."""
    given = os.environ.get(CACHE_ENV, "")
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "dynkit"


def private_folder(path: Path) -> str | None:
    """Create ``path`` (mode 0700) if missing; None if this user's private folder, else why."""
    try:
        if not os.path.lexists(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(path, 0o700)
            except (
                FileExistsError
            ):  # another process made it first: it is checked below all the same
                pass
        info = os.lstat(path)
    except OSError as exc:
        return f"{path} cannot be created or read ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a folder"
    if info.st_uid != os.geteuid():
        return f"{path} is owned by user id {info.st_uid}, not by you ({os.geteuid()})"
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        return f"{path} has mode {mode:04o} (group or others may use it; expected 0700)"
    return None


def kernel_folder() -> tuple[Path | None, str | None]:
    """The kernels' folder, checked (:func:`private_folder`) and the root above; or None, why."""
    root = cache_root()
    for path in (root, root / "numba"):
        reason = private_folder(path)
        if reason is not None:
            return None, reason
    return root / "numba", None


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if (
            isinstance(node, kinds)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def code_tree(source: str) -> str:
    """The syntax tree of ``source`` without docstrings, as text (no lines, comments, layout)."""
    return ast.dump(_without_docstrings(ast.parse(textwrap.dedent(source))))


def _fingerprint(value: Any, depth: int = 0) -> str:
    """A text that changes when a constant's value does (numbers, text, arrays, containers)"""
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        return repr(value)
    if isinstance(value, np.ndarray):
        data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array{value.dtype.str}{value.shape}{data}"
    if isinstance(value, np.generic):
        return repr(value.item())
    if depth > 4:
        return type(value).__qualname__
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_fingerprint(v, depth + 1) for v in value) + ")"
    if isinstance(value, dict):
        items = sorted(value.items(), key=repr)
        return "{" + ",".join(f"{k!r}:{_fingerprint(v, depth + 1)}" for k, v in items) + "}"
    if inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value):
        # code, not data: numba compiles in only this package's functions, whose trees are in the
        # key already
        name = getattr(value, "__qualname__", getattr(value, "__name__", ""))
        return f"{getattr(value, '__module__', '')}.{name}"
    fields = getattr(value, "__dict__", None)
    if fields is not None:
        return type(value).__qualname__ + _fingerprint(dict(fields), depth + 1)
    return type(value).__qualname__


def imported_constants(tree: ast.Module) -> list[tuple[str, Any]]:
    """``(name, value)`` of what a module of this package reads from the rest of
    :mod:`dynkit.solvers`: names it imports at its top (``from ..jacobian import X``) and attributes
    of modules it imports there (``from .. import radau as py`` then ``py.X``)."""
    read, aliases = [], {}
    for node in tree.body:  # the module's own imports (a local import is Python-level code)
        if not (isinstance(node, ast.ImportFrom) and node.level == 2):
            continue
        for alias in node.names:
            local = alias.asname or alias.name
            if node.module is None:  # from .. import radau as py
                aliases[local] = importlib.import_module(f"{_PARENT}.{alias.name}")
            else:
                module = importlib.import_module(f"{_PARENT}.{node.module}")
                read.append((f"{node.module}.{alias.name}", getattr(module, alias.name, None)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            module = aliases[node.value.id]
            read.append((f"{module.__name__}.{node.attr}", getattr(module, node.attr, None)))
    return sorted(read, key=lambda item: item[0])


@functools.cache
def kernel_stamp() -> str:
    """sha256 of what the kernels are compiled from (module docstring): every kernel's cache key."""
    digest = hashlib.sha256()
    import numba

    for part in (numba.__version__, np.__version__, sys.version):
        digest.update(part.encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        digest.update(path.name.encode())
        digest.update(ast.dump(_without_docstrings(tree)).encode())
        for name, value in imported_constants(tree):
            digest.update(f"{name}={_fingerprint(value)}".encode())
    return digest.hexdigest()


def function_key(py_func) -> str:
    """A short hash of one function's tree (its cache file's disambiguator)."""
    try:
        source = inspect.getsource(py_func)
    except (OSError, TypeError):
        return str(py_func.__code__.co_firstlineno)
    return hashlib.sha256(code_tree(source).encode()).hexdigest()[:16]


def install_locator(folder: Path) -> bool:
    """Put a locator for this package's functions first in numba's list: their cache files in
    ``folder``, keyed by :func:`kernel_stamp`. False (cache nothing) if numba's internals differ
    from
    what this expects."""
    try:
        from numba.core import caching

        base, classes = caching._CacheLocator, caching.CacheImpl._locator_classes
    except AttributeError:
        return False

    class KernelCacheLocator(base):
        def __init__(self, py_func, py_file):
            self._py_file, self._key, self._path = py_file, function_key(py_func), str(folder)

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return kernel_stamp()

        def get_disambiguator(self):
            return self._key

        @classmethod
        def from_function(cls, py_func, py_file):
            if not getattr(py_func, "__module__", "").startswith(PACKAGE + "."):
                return None
            return cls(py_func, py_file)

    classes[:] = [c for c in classes if c.__name__ != KernelCacheLocator.__name__]
    classes.insert(0, KernelCacheLocator)
    return True
