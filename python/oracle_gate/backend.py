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

from oracle_gate.errors import BackendError

__all__ = ["extract_units", "hash_files", "name"]

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


def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """Assertion-surface units of one test file: (key, canonical text), sorted by key.

    The native core does not extract surfaces yet, so both backends use the
    Python extractor here (docs/design.md, "Deviations").

    Raises:
        SurfaceError: the file does not parse.
    """
    from oracle_gate.surface import extract_units as python_extract_units

    _load()  # an invalid ORACLE_GATE_IMPL fails here too, not only when hashing
    return python_extract_units(source, path)
