"""Report formats: each module turns a Report into a string; only the CLI prints it."""

from __future__ import annotations

from collections.abc import Callable

from oracle_gate.errors import GateError
from oracle_gate.formats import json_format, junit, markdown, sarif, table
from oracle_gate.report import Report

__all__ = ["ERROR_FORMATS", "FORMATS"]

FORMATS: dict[str, Callable[[Report], str]] = {
    "text": table.render,
    "json": json_format.render,
    "junit": junit.render,
    "markdown": markdown.render,
    "sarif": sarif.render,
}

# What each format writes when the gate could not decide (exit 2): a valid
# document carrying the error, so a CI step reading the file never gets an empty one.
ERROR_FORMATS: dict[str, Callable[[GateError], str]] = {
    "text": table.render_error,
    "json": json_format.render_error,
    "junit": junit.render_error,
    "markdown": markdown.render_error,
    "sarif": sarif.render_error,
}
