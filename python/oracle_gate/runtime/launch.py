"""How the code under test sees itself launched: as ``python -m pytest``, or as the
``pytest`` script.

The gate starts each child as ``python -s -S -c BOOTSTRAP``. Left so, the child's
``__main__`` would have no ``__file__`` and would hold the bootstrap's names (the
gate's own ``main``), and ``sys.argv[0]`` would be ``-c``: no plain test run looks
like that, so code could tell the gate apart by it. Before any code of the
checkout runs, the child takes the look of one of the two ways a team runs its
tests instead: ``__main__``'s file, spec, loader and package, ``sys.argv`` and
``sys.orig_argv`` as that launch gives them, the bootstrap's names gone. The
usual environment is ``python -m pytest``, the shifted one the ``pytest`` script
beside the interpreter (``runtime/variants.py``), so code that reads how it was
launched also behaves differently between the two, where the replay sees it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence

__all__ = ["MODULE", "SCRIPT", "look_launched", "pytest_script"]

MODULE = "module"  # python -m pytest
SCRIPT = "script"  # the pytest script pip installs beside the interpreter


def pytest_script() -> str | None:
    """The ``pytest`` script of this interpreter's installation, if it has one."""
    import sysconfig  # not at the top: every child imports this module at start-up

    path = os.path.join(sysconfig.get_path("scripts"), "pytest")
    return path if os.path.isfile(path) else None


def look_launched(form: str, arguments: Sequence[str]) -> None:
    """Make ``__main__`` and ``sys.argv`` those of a test run launched as ``form`` with
    ``arguments``. Without a ``pytest`` script (or pytest) it looks like ``python -m
    pytest``, the form every installation of pytest has."""
    main = sys.modules["__main__"]
    for name in [n for n in vars(main) if not (n.startswith("__") and n.endswith("__"))]:
        delattr(main, name)
    script = pytest_script() if form == SCRIPT else None
    if script is not None:
        main.__file__ = script
        main.__spec__ = None
        main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
        main.__package__ = None
        main.__cached__ = None  # type: ignore[attr-defined]
        sys.argv[:] = [script, *arguments]
        sys.orig_argv[:] = [sys.executable, script, *arguments]
        return
    spec = _pytest_main_spec()
    if spec is None or spec.origin is None:
        return
    main.__file__ = spec.origin
    main.__spec__ = spec
    main.__loader__ = spec.loader
    main.__package__ = "pytest"
    main.__cached__ = spec.cached  # type: ignore[attr-defined]
    sys.argv[:] = [spec.origin, *arguments]
    sys.orig_argv[:] = [sys.executable, "-m", "pytest", *arguments]


def _pytest_main_spec() -> importlib.machinery.ModuleSpec | None:
    """``pytest.__main__``'s spec, found without importing pytest (a child that does not
    run tests need not pay for it)."""
    package = importlib.util.find_spec("pytest")
    if package is None or not package.submodule_search_locations:
        return None
    for directory in package.submodule_search_locations:
        path = os.path.join(directory, "__main__.py")
        if os.path.isfile(path):
            return importlib.util.spec_from_file_location("pytest.__main__", path)
    return None
