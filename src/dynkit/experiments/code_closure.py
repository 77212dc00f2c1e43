"""The code a shard is computed by: the dynkit modules its run imports, each digested as syntax.

A shard's identity names the modules of its *import closure*: the experiment's module and the
runner's, every dynkit module they import (at the top or inside functions, absolute or relative,
``from . import name`` of a submodule, a submodule reached as an attribute such as ``dk.models``,
``import_module`` of a literal name), the packages above each of them (Python runs a package's
``__init__`` first), transitively. A package that re-exports lazily declares a literal table
``_LAZY = {"submodule": ("Name", ...)}`` (:mod:`dynkit._lazy`): a name taken from it
(``from dynkit.models import HBNODE``, ``dk.models.HBNODE``, ``dk.solve``) reaches the submodule
that provides it, and only that one. It is read from the syntax trees, so it is known before the
run, is the same in every process, and does not depend on what else a process imported first.

Each module carries two digests of its syntax tree, never of its bytes:

``code``
    the tree without its docstrings, every dynkit module it imports replaced by a placeholder:
    comments, docstrings, formatting and the place of a file in the package do not change it;
``links``
    the same tree with each placeholder replaced by the ``code`` of the module imported there:
    taking the same names from another module is a change.

The identity compares the *multiset* of ``(code, links)`` pairs, not the names: moving or renaming a
file (its importers updated) changes dotted names only, so every shard stays reusable (a module with
no statement but its docstring, such as a new subfolder's empty ``__init__`` or a family's
``__init__``, ``experiments/node/__init__.py``, runs nothing: followed, but left out of the
multiset; a package ``__init__`` with a statement is code like any module). An edit of code that a
run imports changes that module's pair and its importers' ``links``, so exactly the shards whose
closure holds it are recomputed; the names are kept beside the digests to say which module changed.

Left out on purpose: the experiments package's ``__init__``, the catalogue (it imports every
family's experiments by computed name to register them; following it would make every shard depend
on every experiment) and this module (it decides
reuse and computes nothing; a change to how digests are taken changes the digests anyway). A module
importing by a computed name relative to its package (``import_module(f".{name}", __name__)``) is
taken to reach every module of its package; ``dynkit._lazy`` imports the names its callers' tables
give, which are followed where they are used. A module reached only through ``getattr`` with a
computed string is not seen. The closure is of modules, not functions: ``tasks/time_series.py``
imports ``tasks.silverbox``, so every run that imports ``dynkit.tasks.time_series`` runs (and
depends on) silverbox.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "PACKAGE",
    "PACKAGE_ROOT",
    "REGISTRATION_INDEX",
    "IDENTITY",
    "LAZY_TABLE",
    "MACHINERY",
    "LIBRARIES",
    "DIGEST_CHARS",
    "ModuleCode",
    "module_name",
    "read_package",
    "read_modules",
    "closure",
    "library_versions",
    "code_identity",
    "same_code",
    "describe_change",
]

PACKAGE = "dynkit"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
"""The folder of the ``dynkit`` package whose modules the closure is read from."""
REGISTRATION_INDEX = "dynkit.experiments"
"""The package whose ``__init__`` imports every experiment to register them: in no closure."""
IDENTITY = "dynkit.experiments.code_closure"
"""This module: it decides reuse and computes nothing of a shard, so it is in no closure."""
LAZY_TABLE = "_LAZY"
"""The module-level name of a package's lazy re-exports, ``{submodule: names}`` (a literal)."""
MACHINERY = ("dynkit.experiments.registry", "dynkit.experiments.runner")
"""Modules that run every shard, roots of every closure beside the experiment's module."""
LIBRARIES = ("numpy", "scipy", "torch")
"""Packages whose versions are part of a shard's code identity."""
DIGEST_CHARS = 32
"""Hex digits kept of each module's SHA-256 (128 bits, against accidents: :func:`code_identity`)."""
_MARK = "@@import:"  # marks an imported module in a dumped tree (no import statement can spell it)
_IMPORTERS = ("import_module", "__import__")
_OUTSIDE = "@outside"  # where a module outside the package is filed while its closure is read


@dataclass(frozen=True)
class ModuleCode:
    """One module as the identity sees it: its name, its digests and the modules it reaches."""

    name: str
    is_package: bool
    code: str
    links: str
    reaches: frozenset[str]
    computed_import: bool
    empty: bool = False
    """No statement besides its docstring (an empty ``__init__``): it runs nothing."""
    lazy: Mapping[str, str] = field(default_factory=dict)
    """``{name: module providing it}`` of its :data:`LAZY_TABLE` (a package that declares one)."""
    taken: frozenset[tuple[str, str]] = frozenset()
    """``(module, name)`` of each name it takes from a package module that is not a submodule
    (``from dynkit.models import HBNODE``, ``dk.models.HBNODE``): reaches a lazy provider."""


def module_name(relative: str, package: str = PACKAGE) -> str:
    """The dotted name of a file: ``"tasks/silverbox.py"`` is ``"dynkit.tasks.silverbox"``,
    ``"tasks/__init__.py"`` is ``"dynkit.tasks"``."""
    parts = [package, *Path(relative).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_package(root: Path | None = None) -> dict[str, bytes]:
    """``{path relative to root: bytes}`` of every ``.py`` file of the package below ``root``."""
    root = Path(root or PACKAGE_ROOT)
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                keep = [] if isinstance(node, ast.Module) else [ast.Pass()]
                node.body = body[1:] or keep


class _Reader:
    """Resolves one module's imports against the package's modules and marks them in its tree."""

    def __init__(self, name: str, is_package: bool, modules: frozenset[str]):
        self.name, self.modules = name, modules
        self.package = name if is_package else name.rpartition(".")[0]
        self.reaches: set[str] = set()
        self.aliases: dict[str, str] = {}
        self.computed_import = False
        self.taken: set[tuple[str, str]] = set()
        self.lazy: dict[str, str] = {}

    def _absolute(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        parts = self.package.split(".")
        if level - 1 >= len(parts):
            return None
        base = ".".join(parts[: len(parts) - (level - 1)])
        return f"{base}.{module}" if module else base

    def _reach(self, dotted: str) -> str | None:
        """Record every module that importing ``dotted`` runs; return the deepest one."""
        parts, deepest = dotted.split("."), None
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in self.modules:
                self.reaches.add(prefix)
                deepest = prefix
        return deepest

    def read(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE and (target := self._reach(alias.name)):
                        bound = alias.asname or alias.name.split(".")[0]
                        self.aliases[bound] = target if alias.asname else PACKAGE
                        if alias.asname:
                            alias.name = _MARK + target
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(node.module, node.level)
                target = self._reach(base) if base and base.split(".")[0] == PACKAGE else None
                if target is None:
                    continue
                for alias in node.names:
                    dotted = f"{base}.{alias.name}"
                    if dotted in self.modules and (sub := self._reach(dotted)):
                        self.aliases[alias.asname or alias.name] = sub
                        alias.name, alias.asname = _MARK + sub, alias.asname or alias.name
                    elif target == base:
                        self.taken.add((base, alias.name))
                node.module, node.level = _MARK + target, 0
            elif isinstance(node, ast.Call) and _called(node.func) in _IMPORTERS:
                self._computed(node)
        for node in ast.walk(tree):  # dk.models.neural_ode.X: a submodule reached as an attribute
            chain = _chain(node) if isinstance(node, ast.Attribute) else None
            if chain and chain[0] in self.aliases:
                parts = [*self.aliases[chain[0]].split("."), *chain[1:]]
                deepest = self._reach(".".join(parts))
                depth = len(deepest.split(".")) if deepest else 0
                if deepest and depth < len(parts):  # dk.solve, dk.models.HBNODE
                    self.taken.add((deepest, parts[depth]))
        self._read_table(tree)

    def _read_table(self, tree: ast.Module) -> None:
        """The package's :data:`LAZY_TABLE`: ``{"submodule": ("Name", ...)}``, literals only."""
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else ()
            if [getattr(t, "id", None) for t in targets] != [LAZY_TABLE]:
                continue
            try:
                table = ast.literal_eval(node.value)
            except ValueError as error:
                raise ValueError(f"{self.name}.{LAZY_TABLE} must be a literal dict") from error
            for submodule, provided in table.items():
                dotted = f"{self.package}.{submodule}"
                self.lazy.update({name: dotted for name in (submodule, *provided)})

    def _computed(self, call: ast.Call) -> None:
        """``import_module("...")``: the module named. A computed name relative to this package
        (a leading dot, ``__name__``, a package argument) or spelled from ``dynkit``: any module of
        this package. Another computed name (``__import__(name)`` of a library) is not ours."""
        arg = call.args[0] if call.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            text = arg.value
            level = len(text) - len(text.lstrip("."))
            dotted = self._absolute(text[level:] or None, level) if level else text
            if dotted and dotted.split(".")[0] == PACKAGE:
                self._reach(dotted)
            return
        head = arg.values[0] if isinstance(arg, ast.JoinedStr) and arg.values else None
        relative = len(call.args) > 1 or any(k.arg == "package" for k in call.keywords)
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            relative |= head.value.startswith(".") or head.value.split(".")[0] == PACKAGE
        if isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name):
            relative |= head.value.id in ("__name__", "__package__")
        self.computed_import |= relative


def _called(func: ast.AST) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _chain(node: ast.Attribute) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def read_modules(sources: Mapping[str, bytes], package: str = PACKAGE) -> Mapping[str, ModuleCode]:
    """Every module of a package, ``{dotted name: ModuleCode}``, from ``{relative path: bytes}``;
    a module is parsed when it is first looked up (a closure reads about half the package)."""
    return _Modules(sources, package)


class _Modules(Mapping):
    def __init__(self, sources: Mapping[str, bytes], package: str):
        self._sources = sources
        self._paths = {module_name(path, package): path for path in sources}
        self._names = frozenset(self._paths)
        self._codes: dict[str, str] = {REGISTRATION_INDEX: "<registration index>"}
        self._read: dict[str, ModuleCode] = {}

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def _tree(self, name: str):
        path = self._paths[name]
        return _read_one(name, Path(path).name == "__init__.py", self._sources[path], self._names)

    def _code(self, name: str) -> str:
        if name not in self._codes:
            self._codes[name] = _digest(_unmark(self._tree(name)[0], lambda target: "<dynkit>"))
        return self._codes[name]

    def __getitem__(self, name: str) -> ModuleCode:
        if name not in self._read:
            text, reaches, computed, empty, lazy, taken = self._tree(name)
            links = _digest(_unmark(text, lambda target: self._code(target)))
            is_package = Path(self._paths[name]).name == "__init__.py"
            self._read[name] = ModuleCode(
                name, is_package, self._code(name), links, reaches, computed, empty, lazy, taken
            )
        return self._read[name]


@functools.lru_cache(maxsize=4096)
def _read_one(name: str, is_package: bool, source: bytes, modules: frozenset[str]):
    """(the dumped tree with its imports marked, the modules it reaches, whether it imports by a
    computed name, whether it is empty, its lazy table, the names it takes from package modules)
    of one module; cached: a run parses each source once."""
    reader = _Reader(name, is_package, modules)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # a module that cannot run: its bytes stand for it
        return "<unparsable>" + source.hex(), frozenset(), False, False, {}, frozenset()
    _strip_docstrings(tree)
    reader.read(tree)
    return (
        ast.dump(tree),
        frozenset(reader.reaches - {name}),
        reader.computed_import,
        not tree.body,
        reader.lazy,
        frozenset(reader.taken),
    )


def _unmark(text: str, replace) -> str:
    out, rest = [], text
    while (start := rest.find(_MARK)) >= 0:
        end = start + len(_MARK)
        stop = end
        while stop < len(rest) and (rest[stop].isalnum() or rest[stop] in "._"):
            stop += 1
        out.append(rest[:start] + replace(rest[end:stop]))
        rest = rest[stop:]
    return "".join(out) + rest


def closure(roots: Iterable[str], modules: Mapping[str, ModuleCode]) -> list[str]:
    """The dotted names (sorted) that running ``roots`` imports (the rules: the module
    docstring)."""
    seen: set[str] = set()
    todo = [r for r in roots if r in modules]
    while todo:
        name = todo.pop()
        if name in seen or name in (REGISTRATION_INDEX, IDENTITY) or name not in modules:
            continue
        seen.add(name)
        module = modules[name]
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # packages above run first
        todo.extend(module.reaches)
        for owner, attribute in module.taken:  # a lazy re-export: the submodule providing it
            # (the registration index and this module are in no closure: never read as owners)
            if owner not in (REGISTRATION_INDEX, IDENTITY) and attribute in modules[owner].lazy:
                todo.append(modules[owner].lazy[attribute])
        if module.computed_import:
            package = name if module.is_package else name.rpartition(".")[0]
            todo.extend(m for m in modules if m.rpartition(".")[0] == package)
    return sorted(seen)


def library_versions() -> dict[str, str | None]:
    """``{"numpy": ..., "scipy": ..., "torch": ...}`` as installed (None where missing)."""
    versions = {}
    for name in LIBRARIES:
        lib = sys.modules.get(name)
        if lib is None:
            try:
                lib = __import__(name)
            except ImportError:
                lib = None
        versions[name] = getattr(lib, "__version__", None)
    return versions


def code_identity(module: str, sources: Mapping[str, bytes] | None = None) -> dict:
    """What a shard of an experiment defined in ``module`` is computed by (part of its identity).

    Parameters
    ----------
    module : str
        A dotted name in ``sys.modules``: a module whose file lies in the package is read as that
        package module (by name if its file is elsewhere); one outside it (a test's toy experiment)
        adds its own tree under its name.
    sources : mapping, optional
        ``{path relative to the package: bytes}`` (default: read from :data:`PACKAGE_ROOT`).

    Returns
    -------
    dict
        ``{"dynkit": version, "python": "3.11", "libraries": {"numpy": ..., "scipy": ..., "torch":
        ...}, "modules": {dotted name: [code, links], ...}}`` over the closure of ``module`` and
        :data:`MACHINERY` (see the module docstring; the Python minor version is there because
        syntax trees differ between Python versions).

    Notes
    -----
    What it promises: a record is reused only with the code (as syntax, imports resolved) and the
    libraries that computed it, against *accidents* (an edit, an upgrade, a damaged file). What it
    does not: an unkeyed hash is no signature, so anyone who can write the folder can forge a record
    with matching digests; it covers Python sources, not compiled libraries beyond their versions,
    the hardware, or data files read at run time.
    """
    from .. import __version__

    root = Path(PACKAGE_ROOT)
    sources = dict(read_package(root) if sources is None else sources)
    roots = list(MACHINERY)
    source = getattr(sys.modules.get(module), "__file__", None)
    path = Path(source).resolve() if source else None
    shown = {}
    if path is not None and path.is_relative_to(root.resolve()):
        roots.append(module_name(path.relative_to(root.resolve()).as_posix()))
    elif module in {module_name(p) for p in sources} or path is None:
        roots.append(module)
    else:  # a module outside the package: read beside it, so that its imports of dynkit resolve
        sources[f"{_OUTSIDE}/{module}.py"] = path.read_bytes()
        roots.append(module_name(f"{_OUTSIDE}/{module}.py"))
        shown[roots[-1]] = module
    modules = read_modules(sources)
    names = closure(roots, modules)
    return {
        "dynkit": __version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "libraries": library_versions(),
        "modules": {
            shown.get(n, n): [modules[n].code, modules[n].links]
            for n in names
            if not modules[n].empty
        },
    }


def same_code(recorded: dict, now: dict) -> bool:
    """Whether two code identities name the same code: equal versions, equal multisets of module
    digests (names are not compared: a moved module is the same code)."""

    def versions(code: dict) -> dict:
        return {k: v for k, v in code.items() if k != "modules"}

    pairs = _pairs(recorded.get("modules"))
    same_modules = pairs is not None and pairs == _pairs(now.get("modules"))
    return versions(recorded) == versions(now) and same_modules


def _pairs(modules: object) -> Counter | None:
    if not isinstance(modules, dict):
        return None
    if not all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(d, str) for d in v)
        for v in modules.values()
    ):
        return None
    return Counter(tuple(v) for v in modules.values())


def describe_change(recorded: dict, now: dict) -> str:
    """One phrase: what differs between a recorded code identity and the current one (the versions,
    the modules whose code changed, those now or no longer imported)."""
    said = [
        f"{k} {recorded.get(k)} -> {now.get(k)}"
        for k in ("dynkit", "python")
        if recorded.get(k) != now.get(k)
    ]
    old_libs, new_libs = recorded.get("libraries") or {}, now.get("libraries") or {}
    said += [
        f"{k} {old_libs.get(k)} -> {new_libs.get(k)}"
        for k in sorted({*old_libs, *new_libs})
        if old_libs.get(k) != new_libs.get(k)
    ]
    old, new = recorded.get("modules"), now.get("modules")
    if _pairs(old) is None:
        return "; ".join(said + ["no module digests recorded"])
    new = new if isinstance(new, dict) else {}
    old_pairs, new_pairs = _pairs(old), _pairs(new) or Counter()
    both = sorted(set(old) & set(new))
    changed = [n for n in both if old[n][0] != new[n][0]]
    relinked = [n for n in both if old[n][0] == new[n][0] and old[n][1] != new[n][1]]
    added = [n for n in sorted(set(new) - set(old)) if old_pairs[tuple(new[n])] == 0]
    dropped = [n for n in sorted(set(old) - set(new)) if new_pairs[tuple(old[n])] == 0]
    for label, names in (
        ("code changed in", changed),
        ("now imported", added),
        ("no longer imported", dropped),
        ("imports changed in", [] if changed else relinked),
    ):
        if names:
            more = f" and {len(names) - 4} more" if len(names) > 4 else ""
            said.append(f"{label} {', '.join(names[:4])}{more}")
    return "; ".join(said) or "module digests differ"
