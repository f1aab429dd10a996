"""Bazel ``glob()`` over a tree's file list, and which files a Bazel package owns."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence, Set

from oracle_gate.bazel.read import Glob
from oracle_gate.errors import ConfigError
from oracle_gate.globs import compile_glob, validate_glob
from oracle_gate.repo.directories import starting_with

__all__ = ["evaluate_glob", "package_files"]


def package_files(
    files: Sequence[str], package: str, build_dirs: Set[str], sorted_dirs: Sequence[str] = ()
) -> list[str]:
    """Package-relative paths of the files of Bazel package ``package``.

    ``files`` is every file of the tree, sorted; a subdirectory holding a BUILD
    file (in ``build_dirs``) is another package, and its files are not ours.
    ``sorted_dirs`` (``build_dirs`` sorted) lets a package with no subpackage
    skip the per-file check.
    """
    prefix = f"{package}/" if package else ""
    below = starting_with(files, prefix)
    if sorted_dirs and not starting_with(sorted_dirs, prefix):
        return [path[len(prefix) :] for path in below]
    owned: list[str] = []
    for path in below:
        directory = posixpath.dirname(path)
        inside_subpackage = False
        while directory != package and len(directory) > len(package):
            if directory in build_dirs:
                inside_subpackage = True
                break
            directory = posixpath.dirname(directory)
        if not inside_subpackage:
            owned.append(path[len(prefix) :])
    return owned


def _directories(files: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for path in files:
        directory = posixpath.dirname(path)
        while directory and directory not in found:
            found.add(directory)
            directory = posixpath.dirname(directory)
    return found


def evaluate_glob(glob: Glob, files: Sequence[str], path: str) -> tuple[str, ...]:
    """The package-relative paths ``glob`` matches among the package's ``files``.

    Bazel semantics: ``*`` never crosses ``/``, ``**`` matches whole directories,
    excludes win, directories match only with ``exclude_directories = 0``, and a
    name starting with ``.`` only as ``compile_glob(bazel=True)`` says.

    Raises:
        ConfigError: a pattern is not a valid glob (names ``path`` and the line).
    """
    for pattern in (*glob.include, *glob.exclude):
        problem = validate_glob(pattern) if not pattern.endswith("/") else "ends with '/'"
        if problem:
            raise ConfigError(f"glob pattern {pattern!r} {problem}", path, glob.line)
    include = [compile_glob(p, bazel=True) for p in glob.include]
    exclude = [compile_glob(p, bazel=True) for p in glob.exclude]
    candidates: Iterable[str] = files
    if not glob.exclude_directories:
        candidates = [*files, *_directories(files)]
    return tuple(
        sorted(
            candidate
            for candidate in candidates
            if any(r.fullmatch(candidate) for r in include)
            and not any(r.fullmatch(candidate) for r in exclude)
        )
    )
