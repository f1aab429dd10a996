"""Where a package's code is imported from: its directory, and its ``src/`` in the src layout.

A single-package library often keeps its code in ``src/<name>/`` and its tests in
``tests/``: the tests import ``<name>`` because an installation or pytest's
``pythonpath`` puts ``src`` on ``sys.path``. The gate installs nothing and never
imports the repository's packages from outside the checkout, so it puts a
package's ``src/`` on the import path itself, right after the package directory,
whenever ``src/`` holds an import package or a module.
"""

from __future__ import annotations

from collections.abc import Iterable

from oracle_gate.repo.trees import GitTree

__all__ = ["SRC", "import_dirs", "src_dir"]

SRC = "src"


def src_dir(files: Iterable[str], package: str) -> str | None:
    """The package's ``src/`` directory (repo-relative) when it holds importable code
    (``src/<name>/__init__.py`` or ``src/<name>.py``), else None."""
    root = f"{package}/{SRC}" if package else SRC
    prefix = root + "/"
    for path in files:
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        name, _, inner = rest.partition("/")
        if (inner == "__init__.py" and name.isidentifier()) or (
            not inner and rest.endswith(".py") and rest[: -len(".py")].isidentifier()
        ):
            return root
    return None


def import_dirs(tree: GitTree, packages: Iterable[str]) -> tuple[str, ...]:
    """Each package directory followed by its ``src/`` where it has one, in order."""
    found: list[str] = []
    for package in packages:
        found.append(package)
        root = f"{package}/{SRC}" if package else SRC
        src = src_dir(tree.files(), package) if tree.has_directory(root) else None
        if src is not None:
            found.append(src)
    return tuple(found)
