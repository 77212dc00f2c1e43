"""The repository folder, imported as ``dynkit``, stands in for the package inside it
(``dynkit/dynkit/``).

Python runs this file only when the folder *holding* a clone named ``dynkit/`` is on ``sys.path``
(a script or a shell started next to the clone). Without it, ``import dynkit`` would silently bind
the repository as an empty namespace package, which then fails with "module 'dynkit' has no
attribute 'solve'". Here the package's own ``__init__`` runs with ``__path__`` pointing at the
package folder, so ``import dynkit`` and every ``dynkit.<submodule>`` are the clone's package. It is
not part of the wheel, and from inside the clone (the usual way) ``dynkit/`` is the package itself.

Why not a ``src/`` layout: every worktree, script and doc path names ``dynkit/...`` at the root.

Only when imported *as* ``dynkit``: a tool that imports this file under another name (pytest
collecting the clone's folder as a package, named after the folder, e.g. ``dynkit-ci`` or ``main``)
gets an empty module.
"""

if __name__ == "dynkit":
    import os as _os

    _package = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "dynkit")
    __path__ = [_package]
    __file__ = _os.path.join(_package, "__init__.py")
    if __spec__ is not None:
        __spec__.submodule_search_locations = [_package]
    with open(__file__, encoding="utf-8") as _source:
        exec(compile(_source.read(), __file__, "exec"))
