"""Candidate assumption rows: the register's schema, and the rule that discards the unfounded.

A candidate is kept only with both a symbol that resolves in the head tree (its
module is a file of a touched package and defines the name at top level) and
evidence that quotes a line the diff removes or adds. The rules' candidates
and an external proposer's (``--proposer``) go through the same check.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from oracle_gate.errors import ConfigError
from oracle_gate.propose.changes import DiffLines

__all__ = ["Candidate", "Symbols", "check_candidate", "parse_proposer_output"]


@dataclass(frozen=True)
class Candidate:
    """One proposed row of a package's assumptions.yaml (its id is given when written)."""

    package: str
    symbol: str
    precondition: str
    evidence: str
    source: str  # the rule's name, or "proposer"

    def item(self, item_id: str) -> dict[str, str]:
        """The register item: always ``status: proposed``; a human accepts or rejects it."""
        return {
            "id": item_id,
            "symbol": self.symbol,
            "precondition": self.precondition,
            "evidence": self.evidence,
            "status": "proposed",
        }


@dataclass(frozen=True)
class Symbols:
    """What the head tree defines: module -> (package, top-level names), for the packages
    the patch touches."""

    modules: Mapping[str, tuple[str, frozenset[str]]]

    def package_of(self, symbol: str) -> str | None:
        """The package whose module defines ``symbol`` (``module.name``), or None."""
        module, _, name = symbol.rpartition(".")
        found = self.modules.get(module)
        return found[0] if found and name in found[1] else None


def top_level_names(tree: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return frozenset(names)


def check_candidate(
    candidate: Candidate, symbols: Symbols, diffs: Mapping[str, DiffLines]
) -> str | None:
    """Why ``candidate`` is discarded, or None when it is kept."""
    if symbols.package_of(candidate.symbol) is None:
        return f"symbol {candidate.symbol!r} does not resolve in the head tree"
    if not candidate.precondition.strip():
        return "it states no precondition"
    quoted = candidate.evidence
    if not any(line in quoted for lines in diffs.values() for line in lines.quotes()):
        return "its evidence quotes no line of the diff"
    return None


def parse_proposer_output(text: str, command: str) -> list[dict[str, Any]]:
    """The items an external proposer printed: a YAML list, or a mapping with ``items``.

    Raises:
        ConfigError: the output is not YAML, or not a list of mappings.
    """
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(
            "printed output that is not YAML", f"--proposer {command}", line
        ) from None
    if isinstance(document, dict):
        document = document.get("items")
    if document is None:
        return []
    if not isinstance(document, list) or not all(isinstance(i, dict) for i in document):
        raise ConfigError(
            "must print a YAML list of items (symbol, precondition, evidence), or a mapping "
            "with such a list under 'items'",
            f"--proposer {command}",
        )
    return document


def proposer_candidate(item: dict[str, Any], symbols: Symbols) -> Candidate:
    """An external proposer's item as a candidate; its id and status are never taken: the
    register numbers it, and only a human sets a status other than proposed."""
    symbol = str(item.get("symbol") or "")
    return Candidate(
        package=symbols.package_of(symbol) or "",
        symbol=symbol,
        precondition=str(item.get("precondition") or ""),
        evidence=str(item.get("evidence") or ""),
        source="proposer",
    )
