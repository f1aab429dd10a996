"""Report formats: each module turns a Report into a string; only the CLI prints it."""

from __future__ import annotations

from collections.abc import Callable

from oracle_gate.formats import json_format, junit, markdown, sarif, table
from oracle_gate.report import Report

__all__ = ["FORMATS"]

FORMATS: dict[str, Callable[[Report], str]] = {
    "text": table.render,
    "json": json_format.render,
    "junit": junit.render,
    "markdown": markdown.render,
    "sarif": sarif.render,
}
