"""Run ``analysis.gpu.paper_rows`` as on the lent machine, whose python has torch, numpy, scipy,
sympy and torchdiffeq only: every other package of this environment is made absent first
(``sys.modules[name] = None``: ``import name`` raises ImportError, ``find_spec(name)`` is None).

    python tests/bare_device.py --dry-run --out DIR    (from the repository root, PYTHONPATH=src:.)
"""

import importlib.metadata as metadata
import runpy
import sys

ON_THE_DEVICE = {"torch", "numpy", "scipy", "sympy", "torchdiffeq", "mpmath", "typing-extensions"}
ON_THE_DEVICE |= {"filelock", "fsspec", "jinja2", "markupsafe", "networkx", "setuptools", "triton"}
OURS = {"dynkit", "analysis", "tests"}


def top_level(dist) -> set[str]:
    names = set((dist.read_text("top_level.txt") or "").split())
    for f in dist.files or ():
        first = f.parts[0]
        if not first.endswith((".dist-info", ".egg-info", ".pth")) and first != "..":
            names.add(first.removesuffix(".py"))
    return names


def blocked() -> set[str]:
    out = set()
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name not in ON_THE_DEVICE and not name.startswith("nvidia-"):
            out |= top_level(dist)
    kept = set()
    for dist in metadata.distributions():  # a name a device package also ships stays importable
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in ON_THE_DEVICE or name.startswith("nvidia-"):
            kept |= top_level(dist)
    return {n for n in out - kept - OURS if n.isidentifier()}


if __name__ == "__main__":
    for name in blocked():
        sys.modules[name] = None
    sys.argv = ["paper_rows", *sys.argv[1:]]
    runpy.run_module("analysis.gpu.paper_rows", run_name="__main__")
