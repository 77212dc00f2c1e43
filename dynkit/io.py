"""Result files: written atomically (temp file + rename) and stamped with the versions that made them."""
from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable


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


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "w") -> Path:
    """Write ``path`` through ``write(fileobj)`` into a temporary sibling, then rename it into place.

    A crash or an exception leaves either the old file or none, never a half-written one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_json(path: str | os.PathLike, data: dict, *, config: dict | None = None, command: str | None = None) -> Path:
    """Write ``data`` as JSON, adding ``config``, the ``command`` that produced it and ``versions()``."""
    payload = dict(data)
    if config is not None:
        payload.setdefault("config", config)
    if command is not None:
        payload.setdefault("command", command)
    payload.setdefault("versions", versions())
    return atomic_write(path, lambda fh: json.dump(payload, fh, indent=2, sort_keys=False, default=_jsonable))


def save_figure(fig, path: str | os.PathLike, **kwargs) -> Path:
    """Save a matplotlib figure atomically (format from the suffix)."""
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    return atomic_write(path, lambda fh: fig.savefig(fh, format=fmt, **kwargs), mode="wb")


def _jsonable(x):
    try:
        import numpy as np

        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return x.tolist()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"cannot serialise {type(x).__name__} to JSON")
