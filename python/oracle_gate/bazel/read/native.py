"""The gate calls the native core read (``rust/src/starlark/gate.rs``), as the static
reader's values."""

from __future__ import annotations

from typing import cast

from oracle_gate.bazel.read.values import BuildFile, Call, Glob, Value

__all__ = ["gates_from_native"]


def gates_from_native(found: object) -> BuildFile:
    """The gates the native core read (``rust/src/starlark/gate.rs``) as ``parse_build`` gives.

    ``found`` is ``(calls, invariant names)``. In it a Starlark list is a Python
    list, a call ``("c", function, line, args, [(name, value, line)])`` and a
    ``glob()`` ``("g", include, exclude, exclude_directories, line)``.
    Only ``gates`` and ``invariant_names`` are set: the file's rules were evaluated.
    """
    calls, invariant_names = cast("tuple[list[tuple[object, ...]], list[str]]", found)
    gates = tuple(_native_call(call) for call in calls)
    return BuildFile(
        calls=gates, loads=(), deps=(), gates=gates, invariant_names=frozenset(invariant_names)
    )


def _native_call(found: tuple[object, ...]) -> Call:
    _, function, line, args, kwargs = found
    named = cast("list[tuple[str, object, int]]", kwargs)
    return Call(
        function=str(function),
        line=cast(int, line),
        args=tuple(_native_value(arg) for arg in cast("list[object]", args)),
        kwargs=tuple((name, _native_value(value)) for name, value, _ in named),
        kwarg_lines=tuple((name, at) for name, _, at in named),
    )


def _native_value(found: object) -> Value:
    if isinstance(found, list):
        return tuple(_native_value(item) for item in found)
    if isinstance(found, dict):
        return {key: _native_value(item) for key, item in found.items()}
    if isinstance(found, tuple):
        if found[0] == "c":
            return _native_call(found)
        _, include, exclude, directories, line = found
        return Glob(tuple(include), tuple(exclude), bool(directories), line)
    return cast(Value, found)
