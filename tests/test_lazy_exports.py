"""Lazy re-exports (``dynkit._lazy``): each package's table is truthful and loads only what is
asked for."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

from dynkit import _lazy

LAZY_PACKAGES = ("dynkit", "dynkit.models", "dynkit.tasks")


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_name_of_a_table_is_its_submodule_s_own(name):
    package = importlib.import_module(name)
    for submodule, provided in package._LAZY.items():
        module = importlib.import_module(f"{name}.{submodule}")
        assert getattr(package, submodule) is module
        for attribute in provided:
            assert getattr(package, attribute) is getattr(module, attribute), attribute
    assert set(package.__all__) <= set(dir(package))


def test_import_dynkit_loads_no_submodule_until_one_is_used():
    # a fresh interpreter: this process has imported most of dynkit already
    code = (
        "import sys, dynkit\n"
        "print(sorted(m for m in sys.modules if m.startswith('dynkit')), 'torch' in sys.modules)\n"
        "import dynkit.models as m\nm.MomentumResNet\n"
        "print('dynkit.models.neural_ode' in sys.modules, 'dynkit.solvers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = out.stdout.splitlines()
    assert first == "['dynkit', 'dynkit._lazy'] False"
    assert second == "False False"  # momentum_resnet needs neither the ODE models nor the solvers


def fake_package(monkeypatch, table):
    package = types.ModuleType("fakepkg")
    package.__path__ = []
    sub = types.ModuleType("fakepkg.sub")
    sub.VALUE = 3
    monkeypatch.setitem(sys.modules, "fakepkg", package)
    monkeypatch.setitem(sys.modules, "fakepkg.sub", sub)
    package.__getattr__, package.__dir__ = _lazy.exports("fakepkg", table)
    return package, sub


def test_a_name_loads_its_submodule_and_is_cached(monkeypatch):
    package, sub = fake_package(monkeypatch, {"sub": ("VALUE",)})
    assert package.VALUE == 3 and package.sub is sub
    assert vars(package)["VALUE"] == 3  # cached: __getattr__ is not asked again
    assert {"VALUE", "sub"} <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error_naming_the_package(monkeypatch):
    package, _ = fake_package(monkeypatch, {"sub": ("VALUE",)})
    with pytest.raises(AttributeError, match="module 'fakepkg' has no attribute 'OTHER'"):
        package.OTHER  # noqa: B018


def test_a_name_that_is_also_a_submodule_is_refused():
    with pytest.raises(ValueError, match=r"names \['sub'\] are both submodules"):
        _lazy.exports("fakepkg", {"sub": ("VALUE",), "other": ("sub",)})
