"""The subprocess side of the runtime lanes: ``python -m oracle_gate.runtime.child`` (untrusted).

Reads one JSON request on stdin, runs oracle or production code from a
checkout of one tree, and prints one result line prefixed with the request's
nonce, so whatever the code under test prints cannot be mistaken for a result.
Outputs of production code leave this process only in canonical tagged form
(``canonical.py``); the gate decides nothing here.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from oracle_gate.runtime.canonical import CanonicalError, decode, encode

_MODULE_COUNTER = [0]


def _describe_error(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


def _load_file(package_dir: Path, file: str) -> ModuleType:
    """Import an oracle module by path, under a unique name so two refs never collide."""
    _MODULE_COUNTER[0] += 1
    path = package_dir / file
    name = f"_oracle_gate_oracle_{_MODULE_COUNTER[0]}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _resolve_ref(package_dir: Path, ref: str) -> tuple[ModuleType, Any]:
    file, _, name = ref.partition(":")
    module = _load_file(package_dir, file)
    if not hasattr(module, name):
        raise AttributeError(f"{file} defines no {name}")
    return module, getattr(module, name)


def _subject(spec: str) -> Callable[[Any], Any]:
    module_name, _, attribute = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"SUBJECT {spec} is not callable")
    return target  # type: ignore[no-any-return]


def _call(function: Callable[[Any], Any], value: Any) -> dict[str, Any]:
    try:
        output = function(value)
    except Exception as error:
        return {"raised": _describe_error(error)}
    try:
        return {"ok": encode(output)}
    except CanonicalError as error:
        return {"raised": f"CanonicalError: {error}"}


def role_subject(request: dict[str, Any]) -> dict[str, Any]:
    """SUBJECT applied to each tagged input."""
    function = _subject(request["subject"])
    return {"outputs": [_call(function, decode(tagged)) for tagged in request["inputs"]]}


def _partitions(package_dir: Path, ref: str) -> dict[str, Any]:
    module, rows = _resolve_ref(package_dir, ref)
    described = []
    for row in rows:
        described.append(
            {
                "id": str(row["id"]),
                "cls": str(row.get("cls", "")),
                "kind": str(row.get("kind", "representative")),
                "input": encode(row.get("input")),
                "relation": str(row.get("relation", "")),
                "assumptions": [str(a) for a in row.get("assumptions", ())],
                "has_contract": row.get("contract") is not None,
            }
        )
    return {"subject": getattr(module, "SUBJECT", None), "items": described}


def _relations(package_dir: Path, ref: str) -> dict[str, Any]:
    module, relations = _resolve_ref(package_dir, ref)
    described = []
    for relation in relations:
        transform = relation.get("transform")
        compare = relation.get("compare", "equal")
        inputs = list(relation.get("inputs", ()))
        described.append(
            {
                "id": str(relation["id"]),
                "compare": "equal" if compare == "equal" else "callable",
                "inputs": [encode(x) for x in inputs],
                # transforms run on plain inputs here, never on patched outputs
                "transformed": [
                    encode(transform(copy.deepcopy(x))) if transform else None for x in inputs
                ],
            }
        )
    return {"subject": getattr(module, "SUBJECT", None), "items": described}


def role_describe(request: dict[str, Any]) -> dict[str, Any]:
    """What a partitions or relations table asks: ids, inputs, transformed inputs."""
    package_dir = Path(request["package_dir"])
    if request["kind"] == "partitions":
        return _partitions(package_dir, request["ref"])
    return _relations(package_dir, request["ref"])


def _verdict(function: Callable[..., Any], *args: Any) -> dict[str, Any]:
    try:
        return {"holds": bool(function(*args))}
    except Exception as error:
        return {"holds": False, "error": _describe_error(error)}


def role_evaluate(request: dict[str, Any]) -> dict[str, Any]:
    """Contracts and comparisons, on decoded plain outputs only."""
    _module, table = _resolve_ref(Path(request["package_dir"]), request["ref"])
    by_id = {str(entry["id"]): entry for entry in table}
    results = []
    for item in request["items"]:
        entry = by_id[item["id"]]
        if request["kind"] == "partitions":
            results.append(_verdict(entry["contract"], decode(item["output"])))
        else:
            results.append(
                _verdict(entry["compare"], decode(item["output"]), decode(item["input"]))
            )
    return {"results": results}


def _json_input(value: Any) -> Any:
    """The value as seeds.jsonl can hold it, or None when JSON cannot."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


def _search(prop: Callable[[Any], Any], request: dict[str, Any]) -> dict[str, Any]:
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import seed as fixed_seed

    strategy = getattr(prop, "strategy", None)
    if strategy is None:
        return {"status": "error", "error": "property has no .strategy attribute"}
    deadline = time.monotonic() + float(request["seconds"])
    state: dict[str, Any] = {"examples": 0, "stopped": False, "failing": None}

    def probe(sample: Any) -> None:
        if time.monotonic() > deadline:
            state["stopped"] = True
            assume(False)
        state["examples"] += 1
        kept = copy.deepcopy(sample)
        try:
            prop(sample)
        except Exception:
            state["failing"] = kept  # Hypothesis replays the shrunk example last
            raise

    # given() over an untyped probe is untyped to mypy; the wrapped test takes no arguments.
    wrap: Any = given(strategy)
    run: Callable[[], None] = settings(
        max_examples=int(request["examples"]),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )(fixed_seed(int(request["seed"]))(wrap(probe)))
    try:
        run()
    except Exception as error:
        if state["failing"] is None:
            return {"status": "error", "error": _describe_error(error)}
        return {
            "status": "counterexample",
            "input": _json_input(state["failing"]),
            "error": _describe_error(error),
            "examples": state["examples"],
        }
    status = "budget" if state["stopped"] else "hold"
    return {"status": status, "examples": state["examples"]}


def _run_property(
    package_dir: Path, item: dict[str, Any], request: dict[str, Any]
) -> dict[str, Any]:
    _module, prop = _resolve_ref(package_dir, item["ref"])
    seeds: list[dict[str, str | None]] = []
    for seed in item["seeds"]:
        try:
            prop(copy.deepcopy(seed["input"]))
            seeds.append({"raised": None})
        except Exception as error:
            seeds.append({"raised": _describe_error(error)})
    search = _search(prop, request) if request["examples"] > 0 else {"status": "skipped"}
    return {"seeds": seeds, "search": search}


def role_properties(request: dict[str, Any]) -> dict[str, Any]:
    """For each property of a row: replay its seeds, then search within the budget."""
    package_dir = Path(request["package_dir"])
    return {
        "results": [_run_property(package_dir, item, request) for item in request["properties"]]
    }


ROLES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "subject": role_subject,
    "describe": role_describe,
    "evaluate": role_evaluate,
    "properties": role_properties,
}


def main() -> int:
    request = json.loads(sys.stdin.read())
    result_stream = sys.stdout
    sys.path.insert(0, request["package_dir"])
    try:
        # Whatever the code under test prints goes to stderr, never into the result.
        with contextlib.redirect_stdout(sys.stderr):
            result = ROLES[request["role"]](request)
    except Exception as error:
        result = {"error": _describe_error(error)}
    result_stream.write(f"{request['nonce']} {json.dumps(result)}\n")
    result_stream.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
