"""The tamper rule: production code must not know it is tested.

A production change that adds a reference to test or gate machinery (pytest,
Hypothesis, unittest, oracle_gate; frame inspection; ``os._exit`` and
``atexit``; variables such as ``PYTEST_CURRENT_TEST``; the package's ledgers,
locks or fixtures; a constant equal to a recorded seed input) could behave
one way under the oracles and another in production. Such a change is a
``tamper:`` reject unless a human note covers the file.

Both sides are read from git objects (parent blob, head blob), and only what
the patch added counts: a reference the parent already had is not new.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Iterator

from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    parse_seeds,
)
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.errors import GateError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.globs import matches_any
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import ChangeKind, Finding, Package
from oracle_gate.repo.trees import GitTree

__all__ = ["judge"]

# Modules production has no business importing: the test and gate machinery,
# and ctypes (which reaches anything in the process).
_MODULES = frozenset({"pytest", "_pytest", "hypothesis", "unittest", "oracle_gate", "atexit"})
_MODULES_TOO = frozenset({"ctypes", "doctest", "nose", "faulthandler"})
# Dotted references that look at the caller, the process or the interpreter's tables.
_DOTTED = frozenset(
    {
        "sys._getframe",
        "sys._getframemodulename",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys.modules",
        "inspect.stack",
        "inspect.currentframe",
        "inspect.getouterframes",
        "inspect.getinnerframes",
        "inspect.trace",
        "traceback.extract_stack",
        "traceback.walk_stack",
        "traceback.format_stack",
        "traceback.print_stack",
        "os._exit",
        "gc.get_objects",
        "gc.get_referrers",
        "importlib.import_module",
        "builtins.__import__",
    }
)
# Attributes of frames, generators and tracebacks: walking to a caller's frame.
_FRAME_ATTRIBUTES = frozenset({"f_back", "f_globals", "f_locals", "f_code", "tb_frame", "gi_frame"})
_NAMES = frozenset({"__import__", "__builtins__"})
# getattr(sys, name) and friends hide a dotted reference from a reader.
_REFLECTION = frozenset({"getattr", "setattr", "delattr", "vars"})
_REFLECTED = frozenset({"sys", "os", "inspect", "gc", "builtins", "importlib", "traceback"})
# Words that name the machinery, in any string (case-insensitive).
_WORDS = (
    "pytest",
    "hypothesis",
    "unittest",
    "oracle_gate",
    "oracle-gate",
    "conftest",
    "_getframe",
    SEEDS_FILE,
    FREEZE_FILE,
    ASSUMPTIONS_FILE,
    LOCK_FILE,
    "invariants.yaml",
    "oracle_changelog",
)
# A seed input this short (as JSON text) is too common to count as special-casing it.
_MIN_SEED_TEXT = 5

Mark = tuple[str, str]  # (what kind of reference, its text)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _json_text(value: object) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _literal(node: ast.AST) -> str | None:
    """The JSON text of a literal expression, tuples as lists; None if it is not one."""
    if not isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set)):
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, (set, frozenset)):
        return None
    return _json_text(value)


def _folded(node: ast.AST) -> str | None:
    """``'py' + 'test'``, folded: a concatenation of string constants hides no word."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        if left is not None and right is not None:
            return left + right
    return None


class _Reader:
    """What one side of a production file refers to."""

    def __init__(self, fixtures: frozenset[str], seeds: frozenset[str]) -> None:
        self.fixtures = fixtures
        self.seeds = seeds

    def marks(self, tree: ast.AST) -> Iterator[tuple[Mark, int]]:
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            for mark in self._node_marks(node):
                yield mark, line

    def _node_marks(self, node: ast.AST) -> Iterator[Mark]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from self._module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield from self._module(node.module)
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted in _DOTTED:
                yield "reference", dotted
            if node.attr in _FRAME_ATTRIBUTES:
                yield "frame attribute", node.attr
        elif isinstance(node, ast.Name) and node.id in _NAMES:
            yield "reference", node.id
        elif isinstance(node, ast.Call):
            yield from self._reflection(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            yield from self._string(node.value)
        elif isinstance(node, ast.BinOp):
            folded = _folded(node)
            if folded is not None:
                yield from self._string(folded)
        seed = _literal(node)
        if seed is not None and seed in self.seeds:
            yield "seed input", seed[:60]

    def _module(self, name: str) -> Iterator[Mark]:
        top = name.split(".")[0]
        if top in _MODULES or top in _MODULES_TOO:
            yield "import", top

    def _reflection(self, node: ast.Call) -> Iterator[Mark]:
        function = node.func
        if isinstance(function, ast.Name) and function.id in _REFLECTION and node.args:
            target = node.args[0]
            if isinstance(target, ast.Name) and target.id in _REFLECTED:
                yield "reflection", f"{function.id}({target.id}, ...)"

    def _string(self, value: str | bytes) -> Iterator[Mark]:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        lowered = text.lower()
        for word in _WORDS:
            if word.lower() in lowered:
                yield "name of test machinery", word
        if "PYTEST_" in text or "HYPOTHESIS_" in text:
            yield "test variable", text[:40]
        for fixture in self.fixtures:
            if fixture in text:
                yield "fixture path", fixture


def _fixture_names(tree: GitTree, package: Package) -> frozenset[str]:
    """Package-relative fixture paths, their file names and top directories."""
    globs = [*package.matrix.fixtures, *(g for row in package.matrix.rows for g in row.fixtures)]
    names: set[str] = set()
    prefix = f"{package.path}/" if package.path else ""
    for path in tree.files():
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        if not matches_any(relative, globs):
            continue
        names.add(relative)
        base = relative.rsplit("/", 1)[-1]
        if "." in base and len(base) >= 5:
            names.add(base)
        if "/" in relative:
            names.add(relative.split("/", 1)[0] + "/")
    return frozenset(names)


def _seed_texts(facts: Facts, package: Package) -> frozenset[str]:
    """Recorded seed inputs (parent and head ledgers) as JSON text, long enough to matter."""
    texts: set[str] = set()
    path = package.join(SEEDS_FILE)
    for tree in (facts.parent, facts.head):
        data = tree.read_optional(path)
        if not data:
            continue
        try:
            seeds = parse_seeds(data, path)
        except GateError:
            continue  # the ledger lane reports a broken ledger
        for seed in seeds:
            text = _json_text(seed.data.get("input"))
            if text is not None and len(text) >= _MIN_SEED_TEXT:
                texts.add(text)
    return frozenset(texts)


def _parsed(data: bytes | None) -> ast.AST | None:
    if data is None:
        return None
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError):
        return None


def added_marks(
    parent: bytes | None, head: bytes, fixtures: frozenset[str], seeds: frozenset[str]
) -> list[tuple[Mark, int]]:
    """References in ``head`` beyond those ``parent`` already had, with a head line each."""
    reader = _Reader(fixtures, seeds)
    head_tree = _parsed(head)
    if head_tree is None:
        return []  # not Python (or not valid): the rows' runs judge it
    parent_tree = _parsed(parent)
    before = Counter(mark for mark, _ in reader.marks(parent_tree)) if parent_tree else Counter()
    after = sorted(reader.marks(head_tree), key=lambda pair: pair[1])
    added: list[tuple[Mark, int]] = []
    for mark, line in after:
        if before[mark] > 0:
            before[mark] -= 1
        else:
            added.append((mark, line))
    return added


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    """A ``tamper:`` reject (or ``human_noted``) when the patch added such references."""
    package = laned.package
    if package is None or laned.change.kind is ChangeKind.DELETED or not laned.path.endswith(".py"):
        return []
    head = facts.head.read_optional(laned.path)
    if head is None:
        return []
    parent = facts.parent.read_optional(laned.change.old_path or laned.path)
    fixtures = _fixture_names(facts.parent, package) | _fixture_names(facts.head, package)
    added = added_marks(parent, head, fixtures, _seed_texts(facts, package))
    if not added:
        return []
    shown = summarize([f"{kind} {text!r} (line {line})" for (kind, text), line in added])
    return [
        oracle_move(
            laned,
            facts,
            f"tamper: production code now refers to test or gate machinery: {shown}",
        )
    ]
