"""The backends under test: the pure-Python fallback and, when built, the native core."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from oracle_gate import _fallback
from oracle_gate.errors import TreeError

try:
    from oracle_gate import _native
except ImportError:  # pragma: no cover - CI always builds it
    _native = None

__all__ = ["BACKENDS", "_native", "backend_id", "needs_native", "outcome", "same_everywhere"]

BACKENDS: list[ModuleType] = [_fallback] if _native is None else [_fallback, _native]
needs_native = pytest.mark.skipif(_native is None, reason="native extension is not built")


def backend_id(module: ModuleType) -> str:
    """``_fallback`` or ``_native``: the test id of a backend."""
    return module.__name__.rsplit(".", 1)[-1]


def outcome(fn: Callable[..., object], *args: object) -> object:
    """``fn(*args)``, or the TreeError it raised as (class name, message, path, line)."""
    try:
        return fn(*args)
    except TreeError as error:
        return (type(error).__name__, error.message, error.path, error.line)


def same_everywhere(name: str, *args: object) -> object:
    """The outcome of ``backend.<name>(*args)``, asserted identical for every backend."""
    outcomes = {module.__name__: outcome(getattr(module, name), *args) for module in BACKENDS}
    assert len(set(map(repr, outcomes.values()))) == 1, outcomes
    return next(iter(outcomes.values()))
