"""oracle-gate: a merge gate for AI-agent patches. Public Python API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle_gate.errors import GateError
from oracle_gate.model import ExitCode, Finding, Lane, Verdict

if TYPE_CHECKING:
    from oracle_gate.gate import check

__all__ = ["ExitCode", "Finding", "GateError", "Lane", "Verdict", "__version__", "check"]


def __getattr__(name: str) -> object:
    # The native core imports oracle_gate.errors to raise its exceptions; that
    # import runs this file, and must not need yaml or blake3. Nor does a
    # command ask for the version: importlib.metadata costs a fresh process 30 ms.
    if name == "check":
        from oracle_gate.gate import check

        return check
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'oracle_gate' has no attribute {name!r}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("oracle-gate")
    except PackageNotFoundError:  # running from a source checkout without installing
        return "0.0.0+source"
