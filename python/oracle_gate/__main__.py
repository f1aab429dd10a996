"""``python -m oracle_gate``."""

from __future__ import annotations

from oracle_gate.cli import entry

raise SystemExit(entry())
