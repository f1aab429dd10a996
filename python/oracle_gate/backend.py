"""Chooses the native core or the pure-Python fallback; the only importer of either.

``ORACLE_GATE_IMPL`` selects: unset or empty means native when importable, else
python; ``native`` raises BackendError when the extension is missing; ``python``
always uses the fallback. The choice is made on first use, not at import, so a
missing extension surfaces as a GateError inside the CLI's error handling.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from oracle_gate.errors import BackendError

if TYPE_CHECKING:
    from oracle_gate._native import NativeEvaluation

__all__ = [
    "extract_units",
    "extract_units_many",
    "hash_files",
    "hash_files_cached",
    "name",
    "parse_tree_listing",
    "split_cat_file_batch",
    "walk_tree",
]

_CHOICES = ("", "native", "python")


@functools.cache
def _load() -> tuple[str, ModuleType]:
    choice = os.environ.get("ORACLE_GATE_IMPL", "")
    if choice not in _CHOICES:
        raise BackendError(
            f"ORACLE_GATE_IMPL={choice!r} is not a backend; "
            "use 'native', 'python' or leave it unset"
        )
    if choice == "python":
        return "python", importlib.import_module("oracle_gate._fallback")
    try:
        return "native", importlib.import_module("oracle_gate._native")
    except ImportError as error:
        if choice == "native":
            raise BackendError(
                f"ORACLE_GATE_IMPL=native but the native core is not importable ({error}); "
                "build it with 'pip install .' (needs a Rust toolchain)"
            ) from error
        return "python", importlib.import_module("oracle_gate._fallback")


def name() -> str:
    """The backend in use, "native" or "python"; printed in every report header.

    Raises:
        BackendError: ORACLE_GATE_IMPL is invalid, or names a missing backend.
    """
    return _load()[0]


def hash_files(paths: Sequence[str]) -> list[str]:
    """BLAKE3 hex digests of files, in input order (see ``_native.pyi``).

    Raises:
        TreeError: a path cannot be read.
        BackendError: the selected backend is unavailable.
    """
    digests: list[str] = _load()[1].hash_files(list(paths))
    return digests


def walk_tree(root: str) -> list[str]:
    """Every file under ``root``: sorted repo-relative POSIX paths (see ``_native.pyi``).

    Raises:
        TreeError: the root is missing, a directory cannot be listed, or a name
            is not UTF-8.
        BackendError: the selected backend is unavailable.
    """
    files: list[str] = _load()[1].walk_tree(root)
    return files


def parse_tree_listing(listing: bytes) -> tuple[dict[str, str], set[str]]:
    """The blobs of ``git ls-tree -r -z`` output: {path: object id}, and the symbolic
    links among them (``_native.pyi``).

    Raises:
        BackendError: the selected backend is unavailable.
    """
    found: tuple[dict[str, str], set[str]] = _load()[1].parse_tree_listing(listing)
    return found


def split_cat_file_batch(output: bytes, count: int) -> list[bytes | None]:
    """The ``count`` objects of ``git cat-file --batch=%(objectsize)`` output, None for a
    missing one (``_native.pyi``).

    Raises:
        ValueError: the output holds fewer objects.
        BackendError: the selected backend is unavailable.
    """
    objects: list[bytes | None] = _load()[1].split_cat_file_batch(output, count)
    return objects


def hash_files_cached(root: str, paths: Sequence[str], cache: str | None = None) -> list[str]:
    """BLAKE3 hex digests of ``paths`` under ``root``, reusing a stat cache (``_native.pyi``).

    Raises:
        TreeError: a path cannot be read; the error names it as given.
        BackendError: the selected backend is unavailable.
    """
    digests: list[str] = _load()[1].hash_files_cached(root, list(paths), cache)
    return digests


def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """Assertion-surface units of one test file: (key, canonical text), sorted by key.

    Both backends return the same bytes (see ``_native.pyi``, ``docs/surface.md``).

    Raises:
        SurfaceError: the file is not UTF-8, does not parse, or nests too deeply.
        BackendError: the selected backend is unavailable.
    """
    units: list[tuple[str, str]] = _load()[1].extract_units(source, path)
    return units


def extract_units_many(items: Sequence[tuple[bytes, str]]) -> list[list[tuple[str, str]]]:
    """``extract_units`` over many ``(source, path)`` pairs; the native core runs them in parallel.

    Raises:
        SurfaceError: a file fails; the smallest failing path is named.
        BackendError: the selected backend is unavailable.
    """
    units: list[list[tuple[str, str]]] = _load()[1].extract_units_many(list(items))
    return units


def evaluate_build_files(
    builds: list[tuple[str, str, str, bytes]],
    bzl: list[tuple[str, bytes]],
    own_names: list[tuple[str, list[str]]],
    files: list[str] | None = None,
    named: list[tuple[str, str]] | None = None,
    unknown: str = "",
    links: list[str] | None = None,
    ignored: list[str] | None = None,
) -> NativeEvaluation:
    """BUILD files evaluated as Starlark (native core only; see ``_native.pyi``).

    Raises:
        BackendError: the backend in use is not the native core.
    """
    name, module = _load()
    if name != "native":
        raise BackendError("evaluating BUILD files as Starlark needs the native core")
    found: NativeEvaluation = module.evaluate_build_files(
        builds,
        bzl,
        own_names,
        files,
        named=named or [],
        unknown=unknown,
        links=links or [],
        ignored=ignored or [],
    )
    return found
