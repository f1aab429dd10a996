"""The driver's stages import one way only: cli -> gate (vet, propose) -> judges -> ... -> model.

docs/design.md draws the same picture; this test keeps the code to it, so a
newcomer can trust that a module never reaches up into a later stage.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "oracle_gate"

# Each stage may import only from stages listed after it (and from itself).
# ROOT is the package's __init__: the public API, which imports ``check`` lazily.
ROOT = "oracle_gate"
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("api", (ROOT, "__main__")),
    ("cli", ("cli",)),
    # vet and propose orchestrate a command as gate does (vet runs rows in checkouts with
    # gate's sandbox set-up; gate reads vet results for --require-vetted)
    ("gate", ("gate", "pipeline", "vet", "propose")),
    ("judges", ("select", "lanes", "runtime")),
    ("classify", ("classify", "facts")),
    ("graph", ("graph", "locks")),
    ("config", ("config",)),
    ("bazel", ("bazel",)),
    ("repo", ("repo", "repo.git", "repo.diff", "repo.trees", "repo.merge_queue")),
    ("core", ("backend", "_fallback", "surface", "pysource")),
    ("report", ("report", "formats")),
    # runtime.limits: what a child may use, read by config (settings) and runtime alike
    (
        "base",
        (
            "repo.files",
            "runtime.limits",
            "globs",
            "frozen",
            "model",
            "errors",
            "progress",
            "__version__",
        ),
    ),
)
# Stages that sit beside each other: neither imports the other.
PEERS = (("lanes", "select"), ("runtime", "select"), ("lanes", "runtime"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or ROOT


def _owner(module: str) -> tuple[int, str]:
    """(stage index, the prefix that placed it): the longest prefix listed in STAGES wins."""
    best: tuple[int, str] | None = None
    for index, (_, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and (best is None or len(prefix) > len(best[1])):
                best = (index, prefix)
    assert best is not None, f"{module} belongs to no stage; add it to STAGES"
    return best


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every runtime ``oracle_gate`` import of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []  # type-only imports do not run
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "oracle_gate":
                found += [(node.lineno, alias.name) for alias in node.names]
            elif node.module.startswith("oracle_gate."):
                found.append((node.lineno, node.module.removeprefix("oracle_gate.")))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("oracle_gate."):
                    found.append((node.lineno, alias.name.removeprefix("oracle_gate.")))
    return found


def _violations(path: Path, module: str) -> list[str]:
    """Each import of ``path`` (module ``module``) that reaches an earlier or a peer stage."""
    stage, prefix = _owner(module)
    wrong = []
    for line, name in _imports(path):
        other, other_prefix = _owner(name)
        pair = tuple(sorted({prefix.split(".")[0], other_prefix.split(".")[0]}))
        if other < stage or (other == stage and pair in PEERS):
            wrong.append(f"{path.name}:{line} imports {name} ({STAGES[other][0]} stage)")
    return wrong


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "examples" not in p.relative_to(PACKAGE).parts)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_later_stages(path: Path) -> None:
    module = _module_name(path)
    assert _violations(path, module) == []


def test_every_module_is_placed_in_a_stage() -> None:
    for path in SOURCES:
        _owner(_module_name(path))


def test_an_import_that_reaches_up_or_sideways_is_reported(tmp_path: Path) -> None:
    """The checker can fail: config importing the graph, and lanes importing select."""
    source = tmp_path / "bad.py"
    source.write_text("from oracle_gate.graph import PackageGraph\nimport oracle_gate.select\n")
    assert _violations(source, "config.matrix") == [
        "bad.py:1 imports graph (graph stage)",
        "bad.py:2 imports select (judges stage)",
    ]
    assert _violations(source, "lanes.tests") == ["bad.py:2 imports select (judges stage)"]
    assert _violations(source, "gate") == []
