"""oracle-gate: a merge gate for AI-agent patches. Public Python API."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from oracle_gate.errors import GateError
from oracle_gate.gate import check
from oracle_gate.model import ExitCode, Finding, Lane, Verdict

try:
    __version__ = version("oracle-gate")
except PackageNotFoundError:  # running from a source checkout without installing
    __version__ = "0.0.0+source"

__all__ = ["ExitCode", "Finding", "GateError", "Lane", "Verdict", "__version__", "check"]
